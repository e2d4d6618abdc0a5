/* The CUDA driver API through dlopen (a tiny allocation that proves the GPU
 * works from this process), and the CUDA runtime version an environment needs.
 * Prototypes and values as documented in cuda.h; no CUDA header is needed. */
#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr; /* 64-bit platforms */
enum { CUDA_SUCCESS = 0 };

struct cuda {
	CUresult (*init)(unsigned int);
	CUresult (*driver_version)(int *);
	CUresult (*device_count)(int *);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_name)(char *, int, CUdevice);
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_release)(CUdevice);
	CUresult (*ctx_push)(CUcontext);
	CUresult (*ctx_pop)(CUcontext *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*error_name)(CUresult, const char **);
	CUresult (*error_string)(CUresult, const char **);
};

static const struct {
	const char *name, *alt; /* alt: the older name of the same call */
	size_t off;
} cuda_syms[] = {
	{"cuInit", NULL, offsetof(struct cuda, init)},
	{"cuDriverGetVersion", NULL, offsetof(struct cuda, driver_version)},
	{"cuDeviceGetCount", NULL, offsetof(struct cuda, device_count)},
	{"cuDeviceGet", NULL, offsetof(struct cuda, device_get)},
	{"cuDeviceGetName", NULL, offsetof(struct cuda, device_name)},
	{"cuDevicePrimaryCtxRetain", NULL, offsetof(struct cuda, ctx_retain)},
	{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease",
	 offsetof(struct cuda, ctx_release)},
	{"cuCtxPushCurrent_v2", NULL, offsetof(struct cuda, ctx_push)},
	{"cuCtxPopCurrent_v2", NULL, offsetof(struct cuda, ctx_pop)},
	{"cuMemAlloc_v2", NULL, offsetof(struct cuda, mem_alloc)},
	{"cuMemFree_v2", NULL, offsetof(struct cuda, mem_free)},
	{"cuMemcpyHtoD_v2", NULL, offsetof(struct cuda, htod)},
	{"cuMemcpyDtoH_v2", NULL, offsetof(struct cuda, dtoh)},
	{"cuGetErrorName", NULL, offsetof(struct cuda, error_name)},
	{"cuGetErrorString", NULL, offsetof(struct cuda, error_string)},
};

static int cuda_fail(const struct cuda *c, struct gg_err *err, const char *call, CUresult r)
{
	const char *name = NULL, *text = NULL;
	if (c->error_name(r, &name) != CUDA_SUCCESS || !name)
		name = NULL;
	if (c->error_string(r, &text) != CUDA_SUCCESS || !text)
		text = NULL;
	if (name)
		return gg_err_set(err, GG_EFAIL, "%s: %s%s%s%s", call, name, text ? " (" : "",
				  text ? text : "", text ? ")" : "");
	return gg_err_set(err, GG_EFAIL, "%s: CUDA error %d", call, r);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* dlopen the driver and find its functions; out->library names the file loaded. */
static int cuda_load(const char *name, struct cuda *c, void **dlp, struct gg_gpu_cuda_probe *out,
		     struct gg_err *err)
{
	dlerror();
	/* RTLD_NODELETE: the CUDA driver keeps threads and exit handlers once
	 * initialised; it must stay mapped after dlclose. */
	void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!dl) {
		const char *why = dlerror();
		if (!why || strstr(why, "No such file"))
			return gg_err_set(err, GG_ENOTFOUND,
					  "the CUDA driver library (%s) is not visible here", name);
		return gg_err_set(err, GG_EFAIL, "loading the CUDA driver: %s", why);
	}
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < sizeof cuda_syms / sizeof cuda_syms[0]; i++) {
		void *f = dlsym(dl, cuda_syms[i].name);
		if (!f && cuda_syms[i].alt)
			f = dlsym(dl, cuda_syms[i].alt);
		if (!f) {
			gg_err_set(err, GG_EFAIL,
				   "%s has no function %s: not the CUDA driver, or "
				   "one too old",
				   name, cuda_syms[i].name);
			dlclose(dl);
			return GG_EFAIL;
		}
		memcpy((char *)c + cuda_syms[i].off, &f, sizeof f);
	}
	Dl_info di;
	snprintf(out->library, sizeof out->library, "%s",
		 dladdr((void *)c->init, &di) && di.dli_fname ? di.dli_fname : name);
	*dlp = dl;
	return 0;
}

/* cuInit, the driver version, the device count and device 0 with its name. */
static int cuda_first_device(const struct cuda *c, CUdevice *dev, struct gg_gpu_cuda_probe *out,
			     struct gg_err *err)
{
	CUresult r;
	if ((r = c->init(0)) != CUDA_SUCCESS)
		return cuda_fail(c, err, "cuInit", r);
	if ((r = c->driver_version(&out->driver_version)) != CUDA_SUCCESS)
		return cuda_fail(c, err, "cuDriverGetVersion", r);
	if ((r = c->device_count(&out->devices)) != CUDA_SUCCESS)
		return cuda_fail(c, err, "cuDeviceGetCount", r);
	if (out->devices < 1)
		return gg_err_set(err, GG_EFAIL, "cuDeviceGetCount: no CUDA device visible");
	if ((r = c->device_get(dev, 0)) != CUDA_SUCCESS)
		return cuda_fail(c, err, "cuDeviceGet", r);
	if (c->device_name(out->device, (int)sizeof out->device, *dev) != CUDA_SUCCESS)
		out->device[0] = '\0';
	out->device[sizeof out->device - 1] = '\0';
	return 0;
}

/* Write a pattern to device memory p, read it back and compare. */
static int cuda_roundtrip(const struct cuda *c, CUdeviceptr p, size_t bytes, struct gg_err *err)
{
	CUresult r;
	int rc = 0;
	unsigned char *in = malloc(bytes), *back = malloc(bytes);
	if (!in || !back) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < bytes; i++)
		in[i] = (unsigned char)(i * 31u + 7u);
	memset(back, 0, bytes);
	if ((r = c->htod(p, in, bytes)) != CUDA_SUCCESS) {
		rc = cuda_fail(c, err, "cuMemcpyHtoD_v2", r);
	} else if ((r = c->dtoh(back, p, bytes)) != CUDA_SUCCESS) {
		rc = cuda_fail(c, err, "cuMemcpyDtoH_v2", r);
	} else if (memcmp(in, back, bytes) != 0) {
		size_t at = 0;
		while (at < bytes && in[at] == back[at])
			at++;
		rc = gg_err_set(err, GG_EFAIL,
				"the data read back from the GPU differs from what was written "
				"(first at byte %zu of %zu)",
				at, bytes);
	}
done:
	free(in);
	free(back);
	return rc;
}

int gg_gpu_cuda_probe(const char *path, size_t bytes, struct gg_gpu_cuda_probe *out,
		      struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	const char *name = path && *path ? path : GG_GPU_CUDA_LIB;
	if (!bytes)
		bytes = 1 << 20;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct cuda c;
	memset(&c, 0, sizeof c);
	void *dl = NULL;
	if (cuda_load(name, &c, &dl, out, err) < 0)
		return err->code;
	CUresult r;
	CUdevice dev = 0;
	CUcontext ctx = NULL, popped = NULL;
	CUdeviceptr p = 0;
	int retained = 0, pushed = 0;
	int rc = cuda_first_device(&c, &dev, out, err);
	if (rc == 0 && (r = c.ctx_retain(&ctx, dev)) != CUDA_SUCCESS)
		rc = cuda_fail(&c, err, "cuDevicePrimaryCtxRetain", r);
	retained = rc == 0;
	if (rc == 0 && (r = c.ctx_push(ctx)) != CUDA_SUCCESS)
		rc = cuda_fail(&c, err, "cuCtxPushCurrent_v2", r);
	pushed = rc == 0;
	if (rc == 0 && (r = c.mem_alloc(&p, bytes)) != CUDA_SUCCESS) {
		p = 0;
		rc = cuda_fail(&c, err, "cuMemAlloc_v2", r);
	}
	if (rc == 0 && (rc = cuda_roundtrip(&c, p, bytes, err)) == 0)
		out->bytes = bytes;
	if (p && (r = c.mem_free(p)) != CUDA_SUCCESS && rc == 0)
		rc = cuda_fail(&c, err, "cuMemFree_v2", r);
	if (pushed)
		c.ctx_pop(&popped);
	if (retained)
		c.ctx_release(dev);
	dlclose(dl);
	out->ms = ms_since(&t0);
	return rc;
}

/* ---- the runtime version an environment needs ---------------------------- */

int gg_gpu_version_parse(const char *s, int *major, int *minor)
{
	if (!s)
		return -1;
	while (*s == ' ' || *s == 'v' || *s == 'V')
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	char *end;
	long a = strtol(s, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]) || a > 1000)
		return -1;
	long b = strtol(end + 1, &end, 10);
	if (b > 1000 || (*end && *end != '.' && *end != ' ' && *end != '\n' && *end != '-'))
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

int gg_gpu_driver_supports(int cuda_driver, int major, int minor)
{
	int dmaj = cuda_driver / 1000, dmin = (cuda_driver % 1000) / 10;
	return dmaj > major || (dmaj == major && dmin >= minor);
}

static int from_json_file(const char *path, char *version, size_t len)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j)
		return -1;
	const char *v = json_string_value(json_object_get(json_object_get(j, "cuda"), "version"));
	int maj, min, rc = -1;
	if (v && gg_gpu_version_parse(v, &maj, &min) == 0) {
		snprintf(version, len, "%s", v);
		rc = 0;
	}
	json_decref(j);
	return rc;
}

static int from_txt_file(const char *path, char *version, size_t len)
{
	char *text = NULL;
	if (gg_file_read(path, 4096, &text, NULL, NULL) < 0)
		return -1;
	const char *v = strstr(text, "CUDA Version ");
	int maj, min, rc = -1;
	if (v && gg_gpu_version_parse(v + 13, &maj, &min) == 0) {
		v += 13;
		snprintf(version, len, "%.*s", (int)strcspn(v, " \r\n"), v);
		rc = 0;
	}
	free(text);
	return rc;
}

int gg_gpu_cuda_runtime(char *version, size_t len, const char **source, struct gg_err *err)
{
	int maj, min;
	const char *env = getenv("CUDA_VERSION");
	*source = NULL;
	if (env && *env) {
		if (gg_gpu_version_parse(env, &maj, &min) < 0)
			return gg_err_set(
				err, GG_EUSAGE,
				"CUDA_VERSION '%s' is not a version (MAJOR.MINOR[.PATCH])", env);
		snprintf(version, len, "%s", env);
		*source = "CUDA_VERSION";
		return 0;
	}
	const char *home = getenv("CUDA_HOME");
	if (home && *home) {
		char *p = gg_strdup_printf("%s/version.json", home);
		int rc = p ? from_json_file(p, version, len) : -1;
		free(p);
		if (rc == 0) {
			*source = "$CUDA_HOME/version.json";
			return 0;
		}
	}
	if (from_json_file("/usr/local/cuda/version.json", version, len) == 0) {
		*source = "/usr/local/cuda/version.json";
		return 0;
	}
	if (from_txt_file("/usr/local/cuda/version.txt", version, len) == 0) {
		*source = "/usr/local/cuda/version.txt";
		return 0;
	}
	return gg_err_set(err, GG_ENOTFOUND,
			  "no CUDA runtime here (CUDA_VERSION unset, no "
			  "/usr/local/cuda/version.json)");
}
