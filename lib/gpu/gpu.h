/* lib/gpu: what a front end calls is in include/gridgpu/gpu.h; here what only
 * the library and its tests use. */
#ifndef GG_GPU_H
#define GG_GPU_H

#include "core/core.h"
#include "gridgpu/gpu.h"

/* The GPUs a session's node recorded for its job (smi.c: the launcher's
 * "# CUDA_VISIBLE_DEVICES=LIST" line, then nvidia-smi's CSV of index, uuid, name,
 * memory.total, compute_cap, driver_version) as the provenance's "gpus" value, in
 * the shape of gg_gpu_info_json's. *json = NULL (rc 0) for an empty record or one
 * that names no GPU; GG_EPROTO for text that is not such a record. malloc'd. */
int gg_gpu_smi_provenance(const char *record, char **json, struct gg_err *err);

#endif
