/* A fake libnvidia-ml.so.1 for the tests: the NVML functions gridgpu uses, with
 * NVML's documented signatures and return codes, answering from a description
 * of devices instead of hardware. gridgpu loads it exactly as it loads the real
 * library (dlopen("libnvidia-ml.so.1") through LD_LIBRARY_PATH).
 *
 * GG_FAKE_NVML is the description: a file when it starts with '/' or '.',
 * else the text itself, lines separated by newlines or ';':
 *
 *   driver 550.54.15              nvmlSystemGetDriverVersion
 *   cuda 12040                    nvmlSystemGetCudaDriverVersion(_v2)
 *   gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-... cc=8.0 mem=40960 free=40000
 *       ecc=on|off|na mig=on|off|na pending=on|off      (mem, free in MiB)
 *   mig profile=3g.20gb mem=19968 gi=1 ci=0 [uuid=MIG-...] [name=...] [slot=N]
 *                                 a MIG device of the last gpu
 *   load PATH                     nvmlDeviceGetUtilizationRates and
 *                                 nvmlDeviceGetMemoryInfo: read PATH at each
 *                                 call, lines "INDEX PERCENT [USED_MIB]" (a
 *                                 GPU not named is idle; without USED_MIB its
 *                                 memory used is mem - free), so a test can
 *                                 load a GPU and script the memory it holds
 *   fail FUNCTION CODE [dev=N | dev=N/M]
 *                                 FUNCTION returns CODE (for every device, or
 *                                 GPU N, or MIG slot M of GPU N)
 *
 * Unset: an NVML with no device. Built three ways: normal; -DFAKE_OLD (a
 * pre-R450 driver: no MIG functions, no _v2 CUDA version); -DFAKE_BROKEN (no
 * nvmlDeviceGetUUID, which gridgpu requires). The test site's node build adds
 * -DFAKE_NODE_CONF='"/path"': the node's GPUs when GG_FAKE_NVML is unset (the
 * library is "installed" there: jobs and ssh logins find it without any
 * environment). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct fdev *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

#define MAXDEV  16
#define MAXMIG  8
#define MAXFAIL 16
#define MiB     (1024ULL * 1024ULL)

struct fdev {
	char name[96], uuid[96];
	int cc_major, cc_minor;
	unsigned long long mem, free;
	int ecc; /* 1, 0, -1 = not supported */
	int mig; /* 1, 0, -1 = not MIG-capable */
	int pending;
	int gi, ci, slot;
	int index;
	struct fdev *parent;
	struct fdev *migs[MAXMIG]; /* by slot */
	int nmigs;
};

static struct {
	int inited, loaded;
	char driver[80];
	int cuda;
	struct fdev gpus[MAXDEV];
	int ngpus;
	struct fdev migs[MAXDEV * MAXMIG];
	int nmigs;
	struct {
		char fn[64];
		int code, dev, slot; /* -1 = any */
	} fails[MAXFAIL];
	int nfails;
	char loadfile[256];
} S;

/* ---- the description ------------------------------------------------------- */

static const char *value(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = line; (p = strstr(p, key)); p++) {
		if ((p != line && !isspace((unsigned char)p[-1])) || p[kl] != '=')
			continue;
		p += kl + 1;
		size_t n;
		if (*p == '"') {
			p++;
			n = strcspn(p, "\"");
		} else {
			n = strcspn(p, " \t");
		}
		if (n >= len)
			n = len - 1;
		memcpy(buf, p, n);
		buf[n] = '\0';
		return buf;
	}
	return NULL;
}

static int onoff(const char *v, int dflt)
{
	if (!v)
		return dflt;
	if (!strcmp(v, "on") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "off") || !strcmp(v, "0"))
		return 0;
	return -1;
}

static void parse_line(char *line)
{
	char b[128];
	while (isspace((unsigned char)*line))
		line++;
	if (!*line || *line == '#')
		return;
	if (!strncmp(line, "driver ", 7)) {
		snprintf(S.driver, sizeof S.driver, "%s", line + 7);
	} else if (!strncmp(line, "cuda ", 5)) {
		S.cuda = atoi(line + 5);
	} else if (!strncmp(line, "gpu", 3) && S.ngpus < MAXDEV) {
		struct fdev *d = &S.gpus[S.ngpus];
		memset(d, 0, sizeof *d);
		d->index = S.ngpus++;
		snprintf(d->name, sizeof d->name, "%s",
			 value(line, "name", b, sizeof b) ? b : "NVIDIA Fake GPU");
		if (value(line, "uuid", b, sizeof b))
			snprintf(d->uuid, sizeof d->uuid, "%s", b);
		else
			snprintf(d->uuid, sizeof d->uuid, "GPU-%08x-1111-2222-3333-444455556666",
				 0xfa4e0000u + (unsigned)d->index);
		d->cc_major = 8;
		if (value(line, "cc", b, sizeof b))
			sscanf(b, "%d.%d", &d->cc_major, &d->cc_minor);
		d->mem = (value(line, "mem", b, sizeof b) ? strtoull(b, NULL, 10) : 16384) * MiB;
		d->free = value(line, "free", b, sizeof b) ? strtoull(b, NULL, 10) * MiB : d->mem;
		d->ecc = onoff(value(line, "ecc", b, sizeof b), 1);
		d->mig = onoff(value(line, "mig", b, sizeof b), -1);
		d->pending = onoff(value(line, "pending", b, sizeof b), d->mig);
	} else if (!strncmp(line, "mig", 3) && S.ngpus && S.nmigs < MAXDEV * MAXMIG) {
		struct fdev *p = &S.gpus[S.ngpus - 1];
		if (p->nmigs >= MAXMIG)
			return;
		struct fdev *m = &S.migs[S.nmigs++];
		memset(m, 0, sizeof *m);
		m->parent = p;
		m->slot = value(line, "slot", b, sizeof b) ? atoi(b) : p->nmigs;
		if (m->slot < 0 || m->slot >= MAXMIG || p->migs[m->slot])
			return;
		p->migs[m->slot] = m;
		p->nmigs++;
		char profile[32];
		snprintf(profile, sizeof profile, "%s",
			 value(line, "profile", b, sizeof b) ? b : "1g.5gb");
		char pname[81];
		snprintf(pname, sizeof pname, "%s", p->name);
		if (value(line, "name", b, sizeof b))
			snprintf(m->name, sizeof m->name, "%s", b);
		else
			snprintf(m->name, sizeof m->name, "%s MIG %s", pname, profile);
		if (value(line, "uuid", b, sizeof b))
			snprintf(m->uuid, sizeof m->uuid, "%s", b);
		else
			snprintf(m->uuid, sizeof m->uuid, "MIG-%08x-aaaa-5bbb-8ccc-dddd0000%04x",
				 0x3160000u + (unsigned)p->index, (unsigned)m->slot);
		m->gi = value(line, "gi", b, sizeof b) ? atoi(b) : m->slot + 1;
		m->ci = value(line, "ci", b, sizeof b) ? atoi(b) : 0;
		m->mem = (value(line, "mem", b, sizeof b) ? strtoull(b, NULL, 10) : 4864) * MiB;
		m->free = value(line, "free", b, sizeof b) ? strtoull(b, NULL, 10) * MiB : m->mem;
		m->cc_major = p->cc_major;
		m->cc_minor = p->cc_minor;
		m->ecc = p->ecc;
		m->mig = -1;
		m->index = p->index;
	} else if (!strncmp(line, "load ", 5)) {
		snprintf(S.loadfile, sizeof S.loadfile, "%s", line + 5);
	} else if (!strncmp(line, "fail ", 5) && S.nfails < MAXFAIL) {
		char fn[64];
		int code = 999;
		if (sscanf(line + 5, "%63s %d", fn, &code) < 1)
			return;
		snprintf(S.fails[S.nfails].fn, sizeof S.fails[0].fn, "%s", fn);
		S.fails[S.nfails].code = code;
		S.fails[S.nfails].dev = S.fails[S.nfails].slot = -1;
		if (value(line, "dev", b, sizeof b))
			sscanf(b, "%d/%d", &S.fails[S.nfails].dev, &S.fails[S.nfails].slot);
		S.nfails++;
	}
}

static void load(void)
{
	if (S.loaded)
		return;
	S.loaded = 1;
	snprintf(S.driver, sizeof S.driver, "550.54.15");
	S.cuda = 12040;
	const char *spec = getenv("GG_FAKE_NVML");
#ifdef FAKE_NODE_CONF
	if (!spec || !*spec)
		spec = FAKE_NODE_CONF;
#endif
	char *text = NULL;
	if (spec && (spec[0] == '/' || spec[0] == '.')) {
		FILE *f = fopen(spec, "r");
		if (!f)
			return;
		size_t cap = 0;
		ssize_t n = getdelim(&text, &cap, '\0', f);
		fclose(f);
		if (n < 0) {
			free(text);
			return;
		}
	} else if (spec) {
		text = strdup(spec);
	}
	if (!text)
		return;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n;", &save); line; line = strtok_r(NULL, "\n;", &save))
		parse_line(line);
	free(text);
}

/* The error the description injects into fn for device d (NULL = system). */
static nvmlReturn_t injected(const char *fn, const struct fdev *d)
{
	load();
	for (int i = 0; i < S.nfails; i++) {
		if (strcmp(S.fails[i].fn, fn) != 0)
			continue;
		if (S.fails[i].dev >= 0 && (!d || d->index != S.fails[i].dev))
			continue;
		if (S.fails[i].slot >= 0 && (!d || !d->parent || d->slot != S.fails[i].slot))
			continue;
		if (S.fails[i].dev >= 0 && S.fails[i].slot < 0 && d && d->parent)
			continue; /* dev=N is the GPU itself */
		return S.fails[i].code;
	}
	return NVML_SUCCESS;
}

#define CHECK(fn, d)                                     \
	do {                                             \
		if (!S.inited)                           \
			return NVML_ERROR_UNINITIALIZED; \
		nvmlReturn_t r_ = injected(fn, d);       \
		if (r_)                                  \
			return r_;                       \
	} while (0)

static nvmlReturn_t copy_str(const char *s, char *buf, unsigned int len)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

/* ---- NVML ------------------------------------------------------------------ */

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	if (!S.inited) { /* read the description afresh: tests change it */
		memset(&S, 0, sizeof S);
		load();
	}
	nvmlReturn_t r = injected("nvmlInit_v2", NULL);
	if (r)
		return r;
	S.inited++;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!S.inited)
		return NVML_ERROR_UNINITIALIZED;
	S.inited--;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case 0: return "Success";
	case 1: return "Uninitialized";
	case 2: return "Invalid Argument";
	case 3: return "Not Supported";
	case 4: return "Insufficient Permissions";
	case 6: return "Not Found";
	case 7: return "Insufficient Size";
	case 9: return "Driver Not Loaded";
	case 12: return "NVML Shared Library Not Found";
	case 15: return "GPU is lost";
	case 18: return "RM has detected an NVML/RM version mismatch.";
	default: return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	CHECK("nvmlSystemGetDriverVersion", NULL);
	return copy_str(S.driver, buf, len);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	CHECK("nvmlSystemGetCudaDriverVersion", NULL);
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = S.cuda;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	CHECK("nvmlSystemGetCudaDriverVersion_v2", NULL);
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = S.cuda;
	return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	CHECK("nvmlDeviceGetCount_v2", NULL);
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = (unsigned int)S.ngpus;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
	CHECK("nvmlDeviceGetHandleByIndex_v2", i < (unsigned)S.ngpus ? &S.gpus[i] : NULL);
	if (!h)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (i >= (unsigned int)S.ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	*h = &S.gpus[i];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len)
{
	CHECK("nvmlDeviceGetName", d);
	return d ? copy_str(d->name, buf, len) : NVML_ERROR_INVALID_ARGUMENT;
}

#ifndef FAKE_BROKEN
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	CHECK("nvmlDeviceGetUUID", d);
	return d ? copy_str(d->uuid, buf, len) : NVML_ERROR_INVALID_ARGUMENT;
}
#endif

/* The load a test put on GPU index: its percent (0 when it named none) and,
 * when the line has it, the MiB it holds (*used_mib, else left as it is). */
static unsigned int load_of(int index, unsigned long long *used_mib)
{
	FILE *f = S.loadfile[0] ? fopen(S.loadfile, "r") : NULL;
	char line[128];
	int i, n;
	unsigned int pct, got = 0;
	unsigned long long mib;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if ((n = sscanf(line, "%d %u %llu", &i, &pct, &mib)) >= 2 && i == index) {
			got = pct > 100 ? 100 : pct;
			if (n == 3 && used_mib)
				*used_mib = mib;
		}
	fclose(f);
	return got;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	CHECK("nvmlDeviceGetMemoryInfo", d);
	if (!d || !m)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned long long used = (d->mem - d->free) / MiB;
	if (!d->parent)
		load_of(d->index, &used);
	m->total = d->mem;
	m->used = used * MiB > d->mem ? d->mem : used * MiB;
	m->free = d->mem - m->used;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	CHECK("nvmlDeviceGetUtilizationRates", d);
	if (!d || !u)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->parent)
		return NVML_ERROR_NOT_SUPPORTED; /* as on MIG devices */
	u->gpu = load_of(d->index, NULL);
	u->memory = u->gpu / 2;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *maj, int *min)
{
	CHECK("nvmlDeviceGetCudaComputeCapability", d);
	if (!d || !maj || !min)
		return NVML_ERROR_INVALID_ARGUMENT;
	*maj = d->cc_major;
	*min = d->cc_minor;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *cur, int *pend)
{
	CHECK("nvmlDeviceGetEccMode", d);
	if (!d || !cur || !pend)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->ecc < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*cur = *pend = d->ecc;
	return NVML_SUCCESS;
}

#ifndef FAKE_OLD
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend)
{
	CHECK("nvmlDeviceGetMigMode", d);
	if (!d || !cur || !pend)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->mig < 0 || d->parent)
		return NVML_ERROR_NOT_SUPPORTED;
	*cur = (unsigned int)d->mig;
	*pend = (unsigned int)(d->pending < 0 ? 0 : d->pending);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n)
{
	CHECK("nvmlDeviceGetMaxMigDeviceCount", d);
	if (!d || !n)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->mig < 0 || d->parent)
		return NVML_ERROR_NOT_SUPPORTED;
	*n = d->mig == 1 ? 7 : 0; /* an A100/H100 has room for 7 */
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i,
							nvmlDevice_t *h)
{
	CHECK("nvmlDeviceGetMigDeviceHandleByIndex", d);
	if (!d || !h || d->parent)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->mig != 1)
		return NVML_ERROR_NOT_SUPPORTED;
	if (i >= MAXMIG || !d->migs[i])
		return NVML_ERROR_NOT_FOUND;
	nvmlReturn_t r = injected("nvmlDeviceGetMigDeviceHandleByIndex", d->migs[i]);
	if (r)
		return r;
	*h = d->migs[i];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
	CHECK("nvmlDeviceGetGpuInstanceId", d);
	if (!d || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!d->parent)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = (unsigned int)d->gi;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
	CHECK("nvmlDeviceGetComputeInstanceId", d);
	if (!d || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!d->parent)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = (unsigned int)d->ci;
	return NVML_SUCCESS;
}
#endif
