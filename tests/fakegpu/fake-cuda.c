/* A fake libcuda.so.1 for the tests: the CUDA driver API calls of gridgpu's
 * allocation check, with cuda.h's signatures and error codes; "device memory"
 * is host memory.
 *
 *   GG_FAKE_CUDA          ok (default) | init:CODE (cuInit returns CODE, e.g. 100
 *                         CUDA_ERROR_NO_DEVICE) | oom (cuMemAlloc fails) |
 *                         corrupt (what is read back differs) | nodev (0 devices)
 *   GG_FAKE_CUDA_VERSION  cuDriverGetVersion, default 12040
 *   GG_FAKE_CUDA_NAME     cuDeviceGetName, default "NVIDIA Fake GPU"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
};

static int inited;
static char ctx_token; /* the one primary context */

static const char *mode(void)
{
	const char *m = getenv("GG_FAKE_CUDA");
	return m && *m ? m : "ok";
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	switch (r) {
	case 0: *s = "CUDA_SUCCESS"; break;
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case 35: *s = "CUDA_ERROR_INSUFFICIENT_DRIVER"; break;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; break;
	case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	switch (r) {
	case 0: *s = "no error"; break;
	case 1: *s = "invalid argument"; break;
	case 2: *s = "out of memory"; break;
	case 3: *s = "initialization error"; break;
	case 35: *s = "CUDA driver version is insufficient for CUDA runtime version"; break;
	case 100: *s = "no CUDA-capable device is detected"; break;
	case 101: *s = "invalid device ordinal"; break;
	case 201: *s = "invalid device context"; break;
	default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!strncmp(mode(), "init:", 5))
		return atoi(mode() + 5);
	inited = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	const char *e = getenv("GG_FAKE_CUDA_VERSION");
	*v = e && *e ? atoi(e) : 12040;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = strcmp(mode(), "nodev") == 0 ? 0 : 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0 || strcmp(mode(), "nodev") == 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *buf, int len, CUdevice d)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!buf || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	const char *n = getenv("GG_FAKE_CUDA_NAME");
	snprintf(buf, (size_t)len, "%s", n && *n ? n : "NVIDIA Fake GPU");
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*c = (CUcontext)(void *)&ctx_token;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static int pushed;
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	if (c != (CUcontext)(void *)&ctx_token)
		return CUDA_ERROR_INVALID_CONTEXT;
	pushed++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	pushed--;
	if (c)
		*c = (CUcontext)(void *)&ctx_token;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p || !n)
		return CUDA_ERROR_INVALID_VALUE;
	if (!strcmp(mode(), "oom"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *m = malloc(n);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	if (!strcmp(mode(), "corrupt") && n > 100)
		((unsigned char *)dst)[100] ^= 0x40; /* a flipped bit, as bad memory would */
	return CUDA_SUCCESS;
}
