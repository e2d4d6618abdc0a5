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

/* What earlier sessions at a site saw (seen.c): the GPUs of a session's node
 * (prov_json, gg_gpu_smi_provenance's), kept as the site's newest record in
 * $XDG_CACHE_HOME/gridgpu/seen-gpus.json with when and the session's name;
 * nothing for a record without GPUs. The records by site, {SITE: {time,
 * session, gpus: [{name, memory_mb, capability}]}} (an empty object when there
 * are none), from gg_gpu_seen_load. */
int gg_gpu_seen_save(const char *site, const char *session, const char *prov_json, int64_t when,
		     struct gg_err *err);
json_t *gg_gpu_seen_load(void);

#endif
