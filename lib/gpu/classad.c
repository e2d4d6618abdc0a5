/* HTCondor machine attributes in the form condor_gpu_discovery -properties
 * prints them, so that what a user sees on a node and what a site's
 * matchmaking uses (CUDACapability, CUDADeviceName, CUDAGlobalMemoryMb, ...)
 * are the same words:
 *
 *   DetectedGPUs="GPU-ddc1c098, GPU-9dc7c6d6"
 *   Common=[ Capability=9.0; DeviceName="NVIDIA H100 80GB HBM3"; ... ]
 *   GPU_ddc1c098=[ id="GPU-ddc1c098"; DeviceUuid="GPU-ddc1c098-..."; ]
 *
 * Ids: "GPU-" and the first 8 hex digits of the UUID for a GPU (-short-uuid,
 * HTCondor's default), the whole UUID for a MIG device (never shortened); a GPU
 * in MIG mode is not listed itself, its MIG devices are. Properties equal on
 * every device go to Common (or the CUDA prefix when not nested), the others
 * to the device's ad (or its id prefix, '-' and '/' made '_'). The CUDA driver
 * version is written as condor_gpu_discovery does: major "." (version % 100),
 * 12040 → 12.40, with the integer as MaxSupportedVersion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

char *gg_gpu_short_id(const char *uuid, char *buf, size_t len)
{
	if (strncmp(uuid, "GPU-", 4) == 0 && strlen(uuid) > 12)
		snprintf(buf, len, "%.12s", uuid);
	else
		snprintf(buf, len, "%s", uuid);
	return buf;
}

/* Property names, in the order HTCondor prints them (sorted). */
enum { P_CAP, P_NAME, P_UUID, P_DRIVER, P_ECC, P_MEM, P_MAXVER, P_RUNTIME, NPROPS };
static const char *const prop_names[NPROPS] = {
	"Capability", "DeviceName",     "DeviceUuid",          "DriverVersion",
	"ECCEnabled", "GlobalMemoryMb", "MaxSupportedVersion", "RuntimeVersion",
};

struct unit {
	char id[GG_GPU_STR];
	char *val[NPROPS];
};

/* A ClassAd string literal: quotes and backslashes escaped. */
static char *quoted(const char *s)
{
	size_t n = strlen(s);
	char *q = malloc(2 * n + 3), *o = q;
	if (!q)
		return NULL;
	*o++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			*o++ = '\\';
		*o++ = (char)((unsigned char)*s < 0x20 ? ' ' : *s);
	}
	*o++ = '"';
	*o = '\0';
	return q;
}

/* 12040 → "12.40", as condor_gpu_discovery formats driver versions. */
static char *condor_version(int v)
{
	return gg_strdup_printf("%d.%d", v / 1000, v % 100);
}

static int fill(struct unit *u, const char *uuid, const char *name, int ccmaj, int ccmin, int ecc,
		int have_mem, uint64_t mem, int cuda, int runtime)
{
	gg_gpu_short_id(uuid, u->id, sizeof u->id);
	if (ccmaj >= 0 && ccmin >= 0 && !(u->val[P_CAP] = gg_strdup_printf("%d.%d", ccmaj, ccmin)))
		return -1;
	if (name[0] && !(u->val[P_NAME] = quoted(name)))
		return -1;
	if (!(u->val[P_UUID] = quoted(uuid)))
		return -1;
	if (cuda > 0 && (!(u->val[P_DRIVER] = condor_version(cuda)) ||
			 !(u->val[P_MAXVER] = gg_strdup_printf("%d", cuda))))
		return -1;
	if (ecc != GG_GPU_UNKNOWN && !(u->val[P_ECC] = strdup(ecc == GG_GPU_ON ? "true" : "false")))
		return -1;
	if (have_mem &&
	    !(u->val[P_MEM] = gg_strdup_printf("%.0f", (double)mem / (1024.0 * 1024.0))))
		return -1;
	if (runtime > 0 && !(u->val[P_RUNTIME] = condor_version(runtime)))
		return -1;
	return 0;
}

static void attr_prefix(const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s", id);
	for (char *p = buf; *p; p++)
		if (*p == '-' || *p == '/')
			*p = '_';
}

/* The units of info's visible devices and MIG instances; -1: out of memory. */
static int fill_units(const struct gg_gpu_info *info, int rt, struct unit *units, size_t *nunits)
{
	for (size_t i = 0; i < info->ndevs; i++) {
		const struct gg_gpu_dev *d = &info->devs[i];
		if (d->visible && *nunits < info->nvisible &&
		    fill(&units[(*nunits)++], d->uuid, d->name, d->cc_major, d->cc_minor, d->ecc,
			 d->have_mem, d->mem_total, info->cuda_driver, rt) < 0)
			return -1;
		for (size_t k = 0; k < d->nmigs; k++) {
			const struct gg_gpu_mig *m = &d->migs[k];
			if (m->visible && *nunits < info->nvisible &&
			    fill(&units[(*nunits)++], m->uuid, m->name, m->cc_major, m->cc_minor,
				 m->ecc, m->have_mem, m->mem_total, info->cuda_driver, rt) < 0)
				return -1;
		}
	}
	return 0;
}

/* common[p]: every unit has the first unit's value of property p. */
static void find_common(const struct unit *units, size_t nunits, int common[NPROPS])
{
	for (int p = 0; p < NPROPS; p++) {
		common[p] = units[0].val[p] != NULL;
		for (size_t u = 1; u < nunits && common[p]; u++)
			common[p] = units[u].val[p] && !strcmp(units[u].val[p], units[0].val[p]);
	}
}

static void print_nested(FILE *f, const struct unit *units, size_t nunits, const int common[NPROPS])
{
	int ncommon = 0;
	for (int p = 0; p < NPROPS; p++)
		ncommon += common[p];
	if (ncommon) {
		fprintf(f, "Common=[ ");
		for (int p = 0; p < NPROPS; p++)
			if (common[p])
				fprintf(f, "%s=%s; ", prop_names[p], units[0].val[p]);
		fprintf(f, "]\n");
	}
	for (size_t u = 0; u < nunits; u++) {
		char pre[GG_GPU_STR];
		attr_prefix(units[u].id, pre, sizeof pre);
		fprintf(f, "%s=[ id=\"%s\"; ", pre, units[u].id);
		for (int p = 0; p < NPROPS; p++)
			if (!common[p] && units[u].val[p])
				fprintf(f, "%s=%s; ", prop_names[p], units[u].val[p]);
		fprintf(f, "]\n");
	}
}

static void print_flat(FILE *f, const struct unit *units, size_t nunits, const int common[NPROPS])
{
	for (int p = 0; p < NPROPS; p++)
		if (common[p])
			fprintf(f, "CUDA%s=%s\n", prop_names[p], units[0].val[p]);
	for (size_t u = 0; u < nunits; u++) {
		char pre[GG_GPU_STR];
		attr_prefix(units[u].id, pre, sizeof pre);
		for (int p = 0; p < NPROPS; p++)
			if (!common[p] && units[u].val[p])
				fprintf(f, "%s%s=%s\n", pre, prop_names[p], units[u].val[p]);
	}
}

static void print_units(FILE *f, const struct unit *units, size_t nunits, enum gg_classad_form form)
{
	if (nunits == 0) {
		fprintf(f, "DetectedGPUs=0\n");
		return;
	}
	fprintf(f, "DetectedGPUs=\"");
	for (size_t u = 0; u < nunits; u++)
		fprintf(f, "%s%s", u ? ", " : "", units[u].id);
	fprintf(f, "\"\n");
	int common[NPROPS];
	find_common(units, nunits, common);
	if (form == GG_CLASSAD_NESTED)
		print_nested(f, units, nunits, common);
	else
		print_flat(f, units, nunits, common);
}

char *gg_gpu_classad(const struct gg_gpu_info *info, enum gg_classad_form form, const char *runtime)
{
	int rt = 0, rmaj, rmin;
	if (runtime && gg_gpu_version_parse(runtime, &rmaj, &rmin) == 0)
		rt = rmaj * 1000 + rmin * 10;
	size_t nunits = 0, len = 0;
	struct unit *units = calloc(info->nvisible ? info->nvisible : 1, sizeof *units);
	char *buf = NULL;
	FILE *f = NULL;
	int ok = units && fill_units(info, rt, units, &nunits) == 0 &&
		 (f = open_memstream(&buf, &len)) != NULL;
	if (ok)
		print_units(f, units, nunits, form);
	if (f && fclose(f) != 0)
		ok = 0;
	for (size_t u = 0; units && u < nunits; u++)
		for (int p = 0; p < NPROPS; p++)
			free(units[u].val[p]);
	free(units);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}
