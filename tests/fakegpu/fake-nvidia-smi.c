/* A small nvidia-smi for the test site's node: the one query the batch wrapper
 * makes, answered the way the driver's nvidia-smi answers it, from NVML (the
 * node's libnvidia-ml.so.1, found like the real tool finds it: dlopen).
 *
 *   nvidia-smi --query-gpu=FIELD[,FIELD...] --format=csv[,noheader][,nounits]
 *              [-i ID[,ID...] | --id=ID[,ID...]]
 *
 * FIELD: index, uuid, name, memory.total and memory.used (MiB), compute_cap (X.Y),
 * utilization.gpu (%), driver_version. Like the real tool it lists every GPU of the node,
 * whatever CUDA_VISIBLE_DEVICES says, or those -i names (by index or UUID;
 * none known: "No devices were found", exit 6). Anything else: the real
 * tool's complaint and exit 2. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;
typedef nvmlReturn_t (*uuid_fn)(nvmlDevice_t, char *, unsigned);

/* Is GPU i (its UUID u) one of -i's comma-separated ids? No -i: all are. */
static int selected(const char *ids, unsigned i, const char *u)
{
	if (!ids)
		return 1;
	char list[512], num[16];
	snprintf(list, sizeof list, "%s", ids);
	snprintf(num, sizeof num, "%u", i);
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, num) || !strcmp(t, u))
			return 1;
	return 0;
}

static void *fn(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "nvidia-smi: %s missing from libnvidia-ml.so.1\n", name);
		exit(9);
	}
	return f;
}

int main(int argc, char **argv)
{
	const char *fields = NULL, *ids = NULL;
	int header = 1, units = 1, csv = 0;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--query-gpu=", 12)) {
			fields = argv[i] + 12;
		} else if (!strncmp(argv[i], "--format=", 9)) {
			char f[128];
			snprintf(f, sizeof f, "%s", argv[i] + 9);
			for (char *t = strtok(f, ","); t; t = strtok(NULL, ",")) {
				if (!strcmp(t, "csv"))
					csv = 1;
				else if (!strcmp(t, "noheader"))
					header = 0;
				else if (!strcmp(t, "nounits"))
					units = 0;
			}
		} else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
			ids = argv[++i];
		} else if (!strncmp(argv[i], "--id=", 5)) {
			ids = argv[i] + 5;
		} else {
			fprintf(stderr, "Invalid combination of input arguments. Please run "
					"'nvidia-smi -h' for help.\n");
			return 2;
		}
	}
	if (!fields || !csv) {
		fprintf(stderr, "this nvidia-smi answers only --query-gpu=... --format=csv\n");
		return 2;
	}
	static const char *known[] = {"index",          "uuid",        "name",
				      "memory.total",   "compute_cap", "utilization.gpu",
				      "driver_version", "memory.used"};
	char list[256];
	char *f[16];
	int nf = 0;
	snprintf(list, sizeof list, "%s", fields);
	for (char *t = strtok(list, ","); t && nf < 16; t = strtok(NULL, ",")) {
		int ok = 0;
		for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
			ok |= !strcmp(t, known[k]);
		if (!ok) {
			fprintf(stderr, "Field \"%s\" is not a valid field to query.\n\n", t);
			return 2;
		}
		f[nf++] = t;
	}
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr,
			"NVIDIA-SMI has failed because it couldn't communicate with the "
			"NVIDIA driver. Make sure that the latest NVIDIA driver is installed "
			"and running.\n\n");
		return 9;
	}
	nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))fn(lib, "nvmlInit_v2");
	nvmlReturn_t (*count)(unsigned *) =
		(nvmlReturn_t(*)(unsigned *))fn(lib, "nvmlDeviceGetCount_v2");
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *) =
		(nvmlReturn_t(*)(unsigned, nvmlDevice_t *))fn(lib, "nvmlDeviceGetHandleByIndex_v2");
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned) =
		(nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned))fn(lib, "nvmlDeviceGetName");
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned) =
		(nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned))fn(lib, "nvmlDeviceGetUUID");
	nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *) =
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))fn(lib, "nvmlDeviceGetMemoryInfo");
	nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *) = (nvmlReturn_t(*)(
		nvmlDevice_t, int *, int *))fn(lib, "nvmlDeviceGetCudaComputeCapability");
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *) = (nvmlReturn_t(*)(
		nvmlDevice_t, nvmlUtilization_t *))fn(lib, "nvmlDeviceGetUtilizationRates");
	nvmlReturn_t (*driver)(char *, unsigned) =
		(nvmlReturn_t(*)(char *, unsigned))fn(lib, "nvmlSystemGetDriverVersion");
	unsigned n = 0, shown = 0;
	if (init() != 0 || count(&n) != 0) {
		fprintf(stderr, "Unable to determine the device handle for GPU: Unknown Error\n");
		return 9;
	}
	if (header) {
		for (int k = 0; k < nf; k++)
			printf("%s%s%s", k ? ", " : "", f[k],
			       !units                             ? ""
			       : !strncmp(f[k], "memory.", 7)     ? " [MiB]"
			       : !strcmp(f[k], "utilization.gpu") ? " [%]"
								  : "");
		putchar('\n');
	}
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t d;
		char buf[96], u[96];
		if (handle(i, &d) != 0)
			return 9;
		if (!selected(ids, i, ((uuid_fn)uuid)(d, u, sizeof u) == 0 ? u : ""))
			continue;
		shown++;
		for (int k = 0; k < nf; k++) {
			printf("%s", k ? ", " : "");
			if (!strcmp(f[k], "index")) {
				printf("%u", i);
			} else if (!strcmp(f[k], "uuid")) {
				printf("%s", uuid(d, buf, sizeof buf) == 0 ? buf : "[N/A]");
			} else if (!strcmp(f[k], "name")) {
				printf("%s", name(d, buf, sizeof buf) == 0 ? buf : "[N/A]");
			} else if (!strncmp(f[k], "memory.", 7)) {
				nvmlMemory_t m;
				if (mem(d, &m) == 0)
					printf("%llu%s", (f[k][7] == 't' ? m.total : m.used) >> 20,
					       units ? " MiB" : "");
				else
					printf("[N/A]");
			} else if (!strcmp(f[k], "driver_version")) {
				printf("%s", driver(buf, sizeof buf) == 0 ? buf : "[N/A]");
			} else if (!strcmp(f[k], "utilization.gpu")) {
				nvmlUtilization_t ut;
				if (util(d, &ut) == 0)
					printf("%u%s", ut.gpu, units ? " %" : "");
				else
					printf("[N/A]");
			} else {
				int a, b;
				if (cc(d, &a, &b) == 0)
					printf("%d.%d", a, b);
				else
					printf("[N/A]");
			}
		}
		putchar('\n');
	}
	if (ids && !shown) {
		printf("No devices were found\n");
		return 6;
	}
	return 0;
}
