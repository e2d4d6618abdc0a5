/* NVML through dlopen: the library, its functions, and the enumeration of GPUs
 * and MIG devices. The prototypes and values are NVML's documented ones
 * (nvml.h of the CUDA toolkit), declared here so that nothing is needed to
 * build: a machine without the NVIDIA driver simply has no library to open. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

/* ---- NVML as documented ----------------------------------------------------- */

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
};
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };     /* nvmlEnableState_t */
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 }; /* MIG modes */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

struct gg_gpu {
	void *dl;
	char *library;
	char missing[512];
	/* required */
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*get_count)(unsigned int *);
	nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*get_name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*driver_version)(char *, unsigned int);
	/* optional: older drivers or consumer cards lack some */
	nvmlReturn_t (*cuda_version_v2)(int *);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*get_cc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*get_ecc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*get_mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*get_max_mig)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*get_mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*get_gi_id)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*get_ci_id)(nvmlDevice_t, unsigned int *);
};

static const struct sym {
	const char *name;
	size_t off;
	int required;
} syms[] = {
	{"nvmlInit_v2", offsetof(struct gg_gpu, init), 1},
	{"nvmlShutdown", offsetof(struct gg_gpu, shutdown), 1},
	{"nvmlErrorString", offsetof(struct gg_gpu, error_string), 1},
	{"nvmlDeviceGetCount_v2", offsetof(struct gg_gpu, get_count), 1},
	{"nvmlDeviceGetHandleByIndex_v2", offsetof(struct gg_gpu, get_handle), 1},
	{"nvmlDeviceGetName", offsetof(struct gg_gpu, get_name), 1},
	{"nvmlDeviceGetUUID", offsetof(struct gg_gpu, get_uuid), 1},
	{"nvmlDeviceGetMemoryInfo", offsetof(struct gg_gpu, get_memory), 1},
	{"nvmlSystemGetDriverVersion", offsetof(struct gg_gpu, driver_version), 1},
	{"nvmlSystemGetCudaDriverVersion_v2", offsetof(struct gg_gpu, cuda_version_v2), 0},
	{"nvmlSystemGetCudaDriverVersion", offsetof(struct gg_gpu, cuda_version), 0},
	{"nvmlDeviceGetCudaComputeCapability", offsetof(struct gg_gpu, get_cc), 0},
	{"nvmlDeviceGetEccMode", offsetof(struct gg_gpu, get_ecc), 0},
	{"nvmlDeviceGetMigMode", offsetof(struct gg_gpu, get_mig_mode), 0},
	{"nvmlDeviceGetMaxMigDeviceCount", offsetof(struct gg_gpu, get_max_mig), 0},
	{"nvmlDeviceGetMigDeviceHandleByIndex", offsetof(struct gg_gpu, get_mig_handle), 0},
	{"nvmlDeviceGetGpuInstanceId", offsetof(struct gg_gpu, get_gi_id), 0},
	{"nvmlDeviceGetComputeInstanceId", offsetof(struct gg_gpu, get_ci_id), 0},
};

/* ---- loading ---------------------------------------------------------------- */

static void add_missing(struct gg_gpu *g, const char *name)
{
	size_t n = strlen(g->missing);
	snprintf(g->missing + n, sizeof g->missing - n, "%s%s", n ? ", " : "", name);
}

int gg_gpu_open(const char *path, struct gg_gpu **out, struct gg_err *err)
{
	*out = NULL;
	const char *name = path && *path ? path : GG_GPU_NVML_LIB;
	dlerror();
	void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		if (!why || strstr(why, "No such file"))
			return gg_err_set(err, GG_ENOTFOUND,
					  "NVML (%s) not found: no NVIDIA driver on this machine",
					  name);
		return gg_err_set(err, GG_EFAIL, "loading NVML: %s", why);
	}
	struct gg_gpu *g = calloc(1, sizeof *g);
	if (!g) {
		dlclose(dl);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	g->dl = dl;
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		dlerror();
		void *f = dlsym(dl, syms[i].name);
		if (!f) {
			if (syms[i].required) {
				gg_err_set(
					err, GG_EFAIL,
					"%s has no function %s: not NVML, or an NVIDIA driver too "
					"old for gridgpu",
					name, syms[i].name);
				dlclose(dl);
				free(g);
				return GG_EFAIL;
			}
			/* The _v2 and the plain CUDA version call are one feature. */
			if (strcmp(syms[i].name, "nvmlSystemGetCudaDriverVersion_v2") != 0)
				add_missing(g, syms[i].name);
			continue;
		}
		/* POSIX guarantees that a data pointer holds a function pointer. */
		memcpy((char *)g + syms[i].off, &f, sizeof f);
	}
	Dl_info info;
	if (dladdr((void *)g->init, &info) && info.dli_fname)
		g->library = strdup(info.dli_fname);
	else
		g->library = strdup(name);
	nvmlReturn_t r = g->init();
	if (r != NVML_SUCCESS) {
		const char *s = g->error_string(r);
		int code = r == NVML_ERROR_DRIVER_NOT_LOADED || r == NVML_ERROR_LIBRARY_NOT_FOUND
				   ? GG_ENOTFOUND
				   : GG_EFAIL;
		gg_err_set(err, code, "nvmlInit_v2: %s%s", s ? s : "unknown error",
			   code == GG_ENOTFOUND ? " (the NVIDIA kernel driver is not loaded)" : "");
		dlclose(dl);
		free(g->library);
		free(g);
		return code;
	}
	if (!g->library) {
		gg_gpu_close(g);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*out = g;
	return 0;
}

void gg_gpu_close(struct gg_gpu *g)
{
	if (!g)
		return;
	g->shutdown();
	dlclose(g->dl);
	free(g->library);
	free(g);
}

const char *gg_gpu_library(const struct gg_gpu *g)
{
	return g ? g->library : NULL;
}

/* ---- enumeration ------------------------------------------------------------- */

static const char *estr(const struct gg_gpu *g, nvmlReturn_t r)
{
	const char *s = g->error_string(r);
	return s ? s : "unknown error";
}

/* Keep the first failure of a device. */
static void note(const struct gg_gpu *g, char **slot, const char *fn, nvmlReturn_t r)
{
	if (!*slot)
		*slot = gg_strdup_printf("%s: %s", fn, estr(g, r));
}

/* Optional properties: "not supported" is an answer (unknown), anything else a
 * failure worth showing. */
static int optional(const struct gg_gpu *g, char **slot, const char *fn, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return 1;
	if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND)
		note(g, slot, fn, r);
	return 0;
}

static void read_mig(const struct gg_gpu *g, nvmlDevice_t h, struct gg_gpu_mig *m)
{
	nvmlReturn_t r;
	m->gi_id = m->ci_id = m->cc_major = m->cc_minor = GG_GPU_UNKNOWN;
	m->ecc = GG_GPU_UNKNOWN;
	if ((r = g->get_uuid(h, m->uuid, sizeof m->uuid)) != NVML_SUCCESS) {
		m->uuid[0] = '\0';
		note(g, &m->error, "nvmlDeviceGetUUID", r);
	}
	if ((r = g->get_name(h, m->name, sizeof m->name)) != NVML_SUCCESS) {
		m->name[0] = '\0';
		note(g, &m->error, "nvmlDeviceGetName", r);
	}
	m->uuid[sizeof m->uuid - 1] = m->name[sizeof m->name - 1] = '\0';
	/* "NVIDIA A100-SXM4-40GB MIG 3g.20gb": the profile is the word after MIG. */
	const char *p = strstr(m->name, " MIG ");
	if (p) {
		p += 5;
		size_t n = strcspn(p, " ");
		snprintf(m->profile, sizeof m->profile, "%.*s", (int)n, p);
	}
	nvmlMemory_t mem;
	if ((r = g->get_memory(h, &mem)) == NVML_SUCCESS) {
		m->have_mem = 1;
		m->mem_total = mem.total;
		m->mem_free = mem.free;
	} else {
		optional(g, &m->error, "nvmlDeviceGetMemoryInfo", r);
	}
	unsigned int id;
	if (g->get_gi_id &&
	    optional(g, &m->error, "nvmlDeviceGetGpuInstanceId", g->get_gi_id(h, &id)))
		m->gi_id = (int)id;
	if (g->get_ci_id &&
	    optional(g, &m->error, "nvmlDeviceGetComputeInstanceId", g->get_ci_id(h, &id)))
		m->ci_id = (int)id;
	int a, b;
	if (g->get_cc &&
	    optional(g, &m->error, "nvmlDeviceGetCudaComputeCapability", g->get_cc(h, &a, &b))) {
		m->cc_major = a;
		m->cc_minor = b;
	}
	if (g->get_ecc && optional(g, &m->error, "nvmlDeviceGetEccMode", g->get_ecc(h, &a, &b)))
		m->ecc = a == NVML_FEATURE_ENABLED ? GG_GPU_ON : GG_GPU_OFF;
}

static int read_dev(const struct gg_gpu *g, unsigned int i, struct gg_gpu_dev *d)
{
	nvmlReturn_t r;
	nvmlDevice_t h;
	d->index = i;
	d->cc_major = d->cc_minor = GG_GPU_UNKNOWN;
	d->ecc = d->mig = d->mig_pending = GG_GPU_UNKNOWN;
	if ((r = g->get_handle(i, &h)) != NVML_SUCCESS) {
		note(g, &d->error, "nvmlDeviceGetHandleByIndex_v2", r);
		return 0;
	}
	if ((r = g->get_uuid(h, d->uuid, sizeof d->uuid)) != NVML_SUCCESS) {
		d->uuid[0] = '\0';
		note(g, &d->error, "nvmlDeviceGetUUID", r);
	}
	if ((r = g->get_name(h, d->name, sizeof d->name)) != NVML_SUCCESS) {
		d->name[0] = '\0';
		note(g, &d->error, "nvmlDeviceGetName", r);
	}
	d->uuid[sizeof d->uuid - 1] = d->name[sizeof d->name - 1] = '\0';
	nvmlMemory_t mem;
	if ((r = g->get_memory(h, &mem)) == NVML_SUCCESS) {
		d->have_mem = 1;
		d->mem_total = mem.total;
		d->mem_free = mem.free;
	} else {
		optional(g, &d->error, "nvmlDeviceGetMemoryInfo", r);
	}
	int a, b;
	if (g->get_cc &&
	    optional(g, &d->error, "nvmlDeviceGetCudaComputeCapability", g->get_cc(h, &a, &b))) {
		d->cc_major = a;
		d->cc_minor = b;
	}
	if (g->get_ecc && optional(g, &d->error, "nvmlDeviceGetEccMode", g->get_ecc(h, &a, &b)))
		d->ecc = a == NVML_FEATURE_ENABLED ? GG_GPU_ON : GG_GPU_OFF;
	unsigned int cur, pend;
	if (g->get_mig_mode &&
	    optional(g, &d->error, "nvmlDeviceGetMigMode", g->get_mig_mode(h, &cur, &pend))) {
		d->mig = cur == NVML_DEVICE_MIG_ENABLE ? GG_GPU_ON : GG_GPU_OFF;
		d->mig_pending = pend == NVML_DEVICE_MIG_ENABLE ? GG_GPU_ON : GG_GPU_OFF;
	}
	if (d->mig != GG_GPU_ON || !g->get_max_mig || !g->get_mig_handle)
		return 0;
	unsigned int max = 0;
	if (!optional(g, &d->error, "nvmlDeviceGetMaxMigDeviceCount", g->get_max_mig(h, &max)))
		return 0;
	if (max > 64)
		max = 64; /* 7 on an A100/H100; bound what a broken library says */
	d->migs = calloc(max ? max : 1, sizeof *d->migs);
	if (!d->migs)
		return GG_ENOMEM;
	for (unsigned int k = 0; k < max; k++) {
		nvmlDevice_t mh;
		r = g->get_mig_handle(h, k, &mh);
		if (r == NVML_ERROR_NOT_FOUND)
			continue; /* no MIG device in this slot */
		if (r != NVML_SUCCESS) {
			note(g, &d->error, "nvmlDeviceGetMigDeviceHandleByIndex", r);
			continue;
		}
		struct gg_gpu_mig *m = &d->migs[d->nmigs++];
		m->index = k;
		read_mig(g, mh, m);
	}
	return 0;
}

int gg_gpu_query(struct gg_gpu *g, struct gg_gpu_info *out, struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	nvmlReturn_t r;
	char drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
	if (g->driver_version(drv, sizeof drv) == NVML_SUCCESS) {
		drv[sizeof drv - 1] = '\0';
		snprintf(out->driver, sizeof out->driver, "%s", drv);
	}
	int cv = 0;
	if ((g->cuda_version_v2 && g->cuda_version_v2(&cv) == NVML_SUCCESS) ||
	    (g->cuda_version && g->cuda_version(&cv) == NVML_SUCCESS))
		out->cuda_driver = cv > 0 ? cv : 0;
	out->library = strdup(g->library);
	if (g->missing[0])
		out->missing = strdup(g->missing);
	if (!out->library || (g->missing[0] && !out->missing)) {
		gg_gpu_info_clear(out);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	unsigned int n = 0;
	if ((r = g->get_count(&n)) != NVML_SUCCESS) {
		gg_gpu_info_clear(out);
		return gg_err_set(err, GG_EFAIL, "nvmlDeviceGetCount_v2: %s", estr(g, r));
	}
	if (n > 256)
		n = 256;
	if (n) {
		out->devs = calloc(n, sizeof *out->devs);
		if (!out->devs) {
			gg_gpu_info_clear(out);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		out->ndevs++;
		if (read_dev(g, i, &out->devs[i]) < 0) {
			gg_gpu_info_clear(out);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	int rc = gg_gpu_set_visible(out, getenv("CUDA_VISIBLE_DEVICES"), err);
	if (rc < 0)
		gg_gpu_info_clear(out);
	return rc;
}

void gg_gpu_info_clear(struct gg_gpu_info *info)
{
	if (!info)
		return;
	for (size_t i = 0; i < info->ndevs; i++) {
		struct gg_gpu_dev *d = &info->devs[i];
		for (size_t k = 0; k < d->nmigs; k++)
			free(d->migs[k].error);
		free(d->migs);
		free(d->error);
	}
	free(info->devs);
	free(info->library);
	free(info->missing);
	free(info->cvd);
	free(info->cvd_note);
	memset(info, 0, sizeof *info);
}

char *gg_gpu_cuda_version_str(int v, char *buf, size_t len)
{
	if (v <= 0)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
	return buf;
}
