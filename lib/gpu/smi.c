/* The GPUs a session's node recorded for its job, as an image's provenance records
 * them. The session launcher (libexec/gridgpu/session-launcher) writes, at the start
 * of the job, a "# CUDA_VISIBLE_DEVICES=LIST" line and then what
 *   nvidia-smi --query-gpu=index,uuid,name,memory.total,compute_cap,driver_version
 *              --format=csv,noheader,nounits -i LIST
 * printed: one line per GPU the batch system gave the job, fields separated by ", ".
 * The text comes from the node: every field is checked against what nvidia-smi
 * prints there, and a record that is anything else is refused, not copied. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define SMI_FIELDS   6
#define SMI_MAX_GPUS 64
#define SMI_NA       "[N/A]"

static int all_of(const char *s, const char *set)
{
	return *s && strspn(s, set) == strlen(s);
}

#define DIGITS "0123456789"
#define HEXID  DIGITS "abcdefABCDEF-"
/* a device list: indices, GPU-/MIG- UUIDs (HTCondor sets those), as the launcher keeps it */
#define DEVLIST DIGITS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,:_-"

/* A GPU's name: printable ASCII, as NVML gives it ("NVIDIA A100-SXM4-40GB"). */
static int name_ok(const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return n > 0 && n < 96;
}

/* "8.0": digits, one dot, digits; "[N/A]" from a driver that cannot say. */
static json_t *cc_value(const char *s, int *ok)
{
	const char *dot = strchr(s, '.');
	if (!strcmp(s, SMI_NA))
		return json_null();
	*ok = dot && dot > s && dot - s < 4 && strspn(s, DIGITS) == (size_t)(dot - s) &&
	      all_of(dot + 1, DIGITS) && strlen(dot + 1) < 4;
	return *ok ? gg_json_text(s) : NULL;
}

/* One GPU's line, split in place into f[SMI_FIELDS]; 0 when it is not nvidia-smi's. */
static int split(char *line, char *f[SMI_FIELDS])
{
	int n = 0;
	for (char *p = line; n < SMI_FIELDS; n++) {
		f[n] = p;
		char *sep = strstr(p, ", ");
		if (!sep)
			return n == SMI_FIELDS - 1;
		*sep = '\0';
		p = sep + 2;
	}
	return 0; /* more fields than asked for: a name with ", " in it is not a GPU's */
}

static json_t *gpu_json(char *f[SMI_FIELDS], int *ok)
{
	*ok = all_of(f[0], DIGITS) && strlen(f[0]) < 4 && !strncmp(f[1], "GPU-", 4) &&
	      all_of(f[1] + 4, HEXID) && strlen(f[1]) < 64 && name_ok(f[2]) &&
	      all_of(f[3], DIGITS) && strlen(f[3]) < 10;
	int cc_ok = 1;
	json_t *cc = *ok ? cc_value(f[4], &cc_ok) : NULL;
	json_t *o = cc ? json_object() : NULL;
	*ok = *ok && cc_ok;
	if (!o) {
		json_decref(cc);
		return NULL;
	}
	long long mb = atoll(f[3]);
	gg_json_set(o, "index", json_integer(atoi(f[0])));
	gg_json_set_text(o, "uuid", f[1]);
	gg_json_set_text(o, "name", f[2]);
	gg_json_set(o, "compute_capability", cc);
	gg_json_set(o, "memory_total", json_integer(mb << 20));
	gg_json_set(o, "memory_total_mb", json_integer(mb));
	gg_json_set(o, "mig", json_array());
	gg_json_set(o, "visible", json_true());
	return o;
}

/* The record's lines into the provenance object o; the line that is wrong in *bad
 * (1-based), or 0. */
static int parse_lines(char *text, json_t *o, json_t *devs, int *bad)
{
	int line = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		line++;
		char *f[SMI_FIELDS];
		int ok = 0;
		if (line == 1) {
			const char *h = "# CUDA_VISIBLE_DEVICES=";
			ok = !strncmp(l, h, strlen(h)) && all_of(l + strlen(h), DEVLIST) &&
			     strlen(l) < 512;
			if (ok)
				gg_json_set_text(o, "cuda_visible_devices", l + strlen(h));
		} else if (json_array_size(devs) < SMI_MAX_GPUS && split(l, f)) {
			const char *drv = f[5];
			json_t *g = gpu_json(f, &ok);
			ok = ok && g && (all_of(drv, DIGITS ".") || !strcmp(drv, SMI_NA)) &&
			     strlen(drv) < 32;
			if (ok && line == 2)
				gg_json_set(o, "driver_version",
					    strcmp(drv, SMI_NA) ? gg_json_text(drv) : json_null());
			if (ok)
				gg_json_append(devs, g);
			else
				json_decref(g);
		}
		if (!ok) {
			*bad = line;
			return -1;
		}
	}
	return 0;
}

int gg_gpu_smi_provenance(const char *record, char **json, struct gg_err *err)
{
	*json = NULL;
	if (!record || !*record)
		return 0;
	char *text = strdup(record);
	json_t *o = json_object(), *devs = json_array();
	int bad = 0, rc = 0;
	if (!text || !o || !devs)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	else if (strlen(text) > 64 * 1024 || parse_lines(text, o, devs, &bad) < 0)
		rc = gg_err_set(err, GG_EPROTO,
				"the node's record of the session's GPUs is not nvidia-smi's "
				"(line %d)",
				bad);
	free(text);
	if (rc == 0 && json_array_size(devs)) {
		gg_json_set_text(o, "source", "nvidia-smi on the session's node");
		gg_json_set(o, "visible", json_integer((json_int_t)json_array_size(devs)));
		gg_json_set(o, "gpus", json_incref(devs));
		*json = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		if (!*json)
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	json_decref(devs);
	json_decref(o);
	return rc;
}
