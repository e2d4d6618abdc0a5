/* gridgpu/gpu.h (lib/gpu): NVIDIA GPUs as a job sees them. NVML (libnvidia-ml.so.1) and the CUDA
 * driver (libcuda.so.1) are loaded with dlopen when they are there: nothing is
 * linked, and a machine without them is a normal answer ("no NVIDIA GPU
 * visible"), not an error of the program. Every NVML and CUDA prototype used is
 * declared here from the vendors' documentation: no CUDA headers are needed.
 *
 *   gg_gpu_open(NULL, &g, err);          load NVML, nvmlInit_v2
 *   gg_gpu_query(g, &info, err);         devices, MIG instances, what may be used
 *   gg_gpu_info_json(&info) / gg_gpu_classad(&info, ...)
 *   gg_gpu_info_clear(&info); gg_gpu_close(g);
 *
 * Devices, MIG instances and their properties are read the same way whatever
 * library answers: the tests load a fake libnvidia-ml.so.1 (tests/fakegpu/)
 * through the same dlopen. */
#ifndef GRIDGPU_GPU_H
#define GRIDGPU_GPU_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gridgpu/core.h"

#define GG_GPU_NVML_LIB "libnvidia-ml.so.1"
#define GG_GPU_CUDA_LIB "libcuda.so.1"
#define GG_GPU_STR      96 /* NVML's UUID and name buffers (…_V2_BUFFER_SIZE) */

/* NVML loaded and initialised: the dlopen handle and the functions found in it. */
struct gg_gpu;

/* Load NVML from path (NULL = "libnvidia-ml.so.1" through the dynamic linker's
 * search, LD_LIBRARY_PATH included) and initialise it. GG_ENOTFOUND when the
 * library is not there or reports that no NVIDIA driver is loaded: err says
 * which, and it is the normal answer of a machine without NVIDIA GPUs. GG_EFAIL
 * when a required function is missing (err names it) or nvmlInit_v2 fails. */
GG_API int gg_gpu_open(const char *path, struct gg_gpu **out, struct gg_err *err);
/* nvmlShutdown and dlclose; NULL is fine. */
GG_API void gg_gpu_close(struct gg_gpu *g);
/* The file the library was loaded from (as the dynamic linker found it). */
GG_API const char *gg_gpu_library(const struct gg_gpu *g);

enum { GG_GPU_UNKNOWN = -1, GG_GPU_OFF = 0, GG_GPU_ON = 1 };

/* A MIG device (a compute instance of a GPU instance) of a GPU in MIG mode. */
struct gg_gpu_mig {
	unsigned index;         /* MIG device index on its GPU */
	char uuid[GG_GPU_STR];  /* "MIG-..." (or "MIG-GPU-.../gi/ci" before R470) */
	char name[GG_GPU_STR];  /* "NVIDIA A100-SXM4-40GB MIG 3g.20gb" */
	char profile[32];       /* "3g.20gb", from the name; "" when unknown */
	int gi_id, ci_id;       /* GPU and compute instance ids; -1 unknown */
	int cc_major, cc_minor; /* compute capability; -1 unknown */
	int ecc;                /* GG_GPU_ON / OFF / UNKNOWN */
	int have_mem;
	uint64_t mem_total, mem_free; /* bytes */
	int visible;                  /* this process may use it (CUDA_VISIBLE_DEVICES) */
	char *error;                  /* the first call that failed for it, or NULL */
};

struct gg_gpu_dev {
	unsigned index;        /* NVML index (PCI bus order) */
	char uuid[GG_GPU_STR]; /* "GPU-xxxxxxxx-xxxx-..." */
	char name[GG_GPU_STR];
	int cc_major, cc_minor; /* -1 unknown */
	int have_mem;
	uint64_t mem_total, mem_free; /* bytes */
	int ecc;                 /* current ECC mode: GG_GPU_ON / OFF / UNKNOWN (consumer cards) */
	int mig, mig_pending;    /* MIG mode now and after reset; UNKNOWN = not MIG-capable */
	struct gg_gpu_mig *migs; /* its MIG devices, when in MIG mode */
	size_t nmigs;
	int visible; /* the whole GPU may be used (not in MIG mode, listed) */
	char *error; /* the first call that failed for it, or NULL */
};

struct gg_gpu_info {
	char driver[80]; /* "550.54.15"; "" unknown */
	int cuda_driver; /* CUDA version the driver supports, 12040 = 12.4; 0 unknown */
	char *library;   /* the NVML file that answered */
	char *missing;   /* optional NVML functions not found, ", "-separated, or NULL */
	char *cvd;       /* CUDA_VISIBLE_DEVICES applied, NULL when unset */
	char *cvd_note;  /* why part of CUDA_VISIBLE_DEVICES was ignored, or NULL */
	struct gg_gpu_dev *devs;
	size_t ndevs;
	size_t nvisible; /* usable devices: whole GPUs plus MIG devices */
};

/* Enumerate the devices and their MIG devices, then apply CUDA_VISIBLE_DEVICES
 * from the environment (gg_gpu_set_visible). A call that fails for one device
 * is kept in that device's error and the others are still read; a failure to
 * count the devices is an error (GG_EFAIL, with NVML's message). */
GG_API int gg_gpu_query(struct gg_gpu *g, struct gg_gpu_info *out, struct gg_err *err);
GG_API void gg_gpu_info_clear(struct gg_gpu_info *info);

/* Mark what a process with CUDA_VISIBLE_DEVICES = cvd may use (NULL = unset:
 * every GPU not in MIG mode and every MIG device). Entries, comma-separated:
 * an index (NVML order), "GPU-<uuid or unique prefix>", "MIG-<uuid or unique
 * prefix>" or "MIG-GPU-<uuid>/<gi>/<ci>"; a GPU in MIG mode named by index or
 * UUID gives its MIG devices. As CUDA does, the list ends at the first entry
 * that names no device ("", "-1", "NoDevFiles" name none): info->cvd_note says
 * which. A repeated entry is ignored. Sets info->cvd (a copy) and nvisible. */
GG_API int gg_gpu_set_visible(struct gg_gpu_info *info, const char *cvd, struct gg_err *err);

/* "12.4" for 12040; buf >= 16 bytes. "" for 0. */
GG_API char *gg_gpu_cuda_version_str(int v, char *buf, size_t len);

/* The whole answer as JSON (what `gridgpu gpus --json` prints and `freeze`
 * records). New reference. */
GG_API json_t *gg_gpu_info_json(const struct gg_gpu_info *info);

/* Load NVML, query, and give the JSON text; *json = NULL (rc 0) when there is
 * no NVIDIA GPU. For image provenance. malloc'd. */
GG_API int gg_gpu_provenance(char **json, struct gg_err *err);

/* ---- HTCondor machine attributes (condor_gpu_discovery -properties) ------- */

enum gg_classad_form {
	GG_CLASSAD_NESTED,     /* Common=[ ... ] and GPU_xxxxxxxx=[ id=...; ... ] (default) */
	GG_CLASSAD_NOT_NESTED, /* CUDACapability=..., GPU_xxxxxxxxDeviceUuid=... */
};
/* The ClassAd text of the devices this process may use, one attribute a line:
 * DetectedGPUs="GPU-ddc1c098, MIG-..." (short ids for GPUs, full UUIDs for MIG
 * devices; DetectedGPUs=0 when none), then the properties (Capability,
 * DeviceName, DeviceUuid, DriverVersion, ECCEnabled, GlobalMemoryMb,
 * MaxSupportedVersion, RuntimeVersion when runtime is not NULL): those equal on
 * every device once, the others per device. malloc'd; NULL on allocation
 * failure. */
GG_API char *gg_gpu_classad(const struct gg_gpu_info *info, enum gg_classad_form form,
			    const char *runtime);
/* "GPU-ddc1c098" for a GPU UUID, the UUID itself for a MIG device. buf >= GG_GPU_STR. */
GG_API char *gg_gpu_short_id(const char *uuid, char *buf, size_t len);

/* ---- the CUDA driver and runtime ------------------------------------------ */

/* What a tiny allocation through the CUDA driver API showed. */
struct gg_gpu_cuda_probe {
	char library[256];       /* the libcuda file that answered */
	int driver_version;      /* cuDriverGetVersion, 12040 = 12.4 */
	int devices;             /* cuDeviceGetCount (CUDA_VISIBLE_DEVICES applies) */
	char device[GG_GPU_STR]; /* name of CUDA device 0 */
	size_t bytes;            /* allocated, written and read back */
	double ms;               /* how long it took */
};
/* Load libcuda (path NULL = "libcuda.so.1"), cuInit, make a context on device
 * 0, allocate bytes (0 = 1 MiB), copy a pattern in and back, compare, free.
 * GG_ENOTFOUND when the library is absent; GG_EFAIL naming the CUDA call and
 * its error (CUDA_ERROR_NO_DEVICE, CUDA_ERROR_OUT_OF_MEMORY, ...) otherwise. */
GG_API int gg_gpu_cuda_probe(const char *path, size_t bytes, struct gg_gpu_cuda_probe *out,
			     struct gg_err *err);

/* The CUDA runtime version this environment (an image) needs: $CUDA_VERSION
 * ("12.4.1", as NVIDIA's images set it), else "version" of
 * $CUDA_HOME/version.json, else of /usr/local/cuda/version.json, else
 * /usr/local/cuda/version.txt ("CUDA Version 11.0.228"). *source (static or
 * from the environment) says which. GG_ENOTFOUND when none is there. */
GG_API int gg_gpu_cuda_runtime(char *version, size_t len, const char **source, struct gg_err *err);
/* "12.4.1" → 12, 4. -1 when it does not start with MAJOR.MINOR. */
GG_API int gg_gpu_version_parse(const char *s, int *major, int *minor);
/* Non-zero when a driver supporting CUDA cuda_driver (12040) runs runtime
 * major.minor: driver major.minor >= runtime major.minor. */
GG_API int gg_gpu_driver_supports(int cuda_driver, int major, int minor);

/* Check a MIG profile name against NVIDIA's grammar: [Cc.]Gg.Mgb with 1 to 7
 * slices and an optional "+me", "+me.all", "-me" or "+gfx" (1g.10gb, 3g.40gb,
 * 1c.3g.40gb, 1g.10gb+me). GG_EUSAGE otherwise; for a near miss ("1g10gb",
 * "1G.10GB", "1g.10g") err suggests the right spelling. */
GG_API int gg_mig_profile_check(const char *profile, struct gg_err *err);
/* The MIG profiles NVIDIA's GPUs offer ("1g.10gb", "1g.10gb+me", ...), each
 * one gg_mig_profile_check takes as it is: what completion offers for --mig. *n
 * is their number; the table is static. */
GG_API const char *const *gg_mig_profiles(size_t *n);

#endif
