/* The GPUs as JSON: `gridgpu gpus --json`, and the "gpus" field of an image's
 * provenance. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

static json_t *tristate(int v)
{
	return v == GG_GPU_UNKNOWN ? json_null() : json_boolean(v == GG_GPU_ON);
}

static json_t *cc_json(int maj, int min)
{
	if (maj < 0 || min < 0)
		return json_null();
	char b[32];
	snprintf(b, sizeof b, "%d.%d", maj, min);
	return gg_json_text(b);
}

static void set_mem(json_t *o, int have, uint64_t total, uint64_t free_)
{
	gg_json_set(o, "memory_total", have ? json_integer((json_int_t)total) : json_null());
	gg_json_set(o, "memory_free", have ? json_integer((json_int_t)free_) : json_null());
	gg_json_set(o, "memory_total_mb",
		    have ? json_integer((json_int_t)(total / (1024 * 1024))) : json_null());
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? gg_json_text(s) : json_null();
}

static json_t *mig_json(const struct gg_gpu_mig *m)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	gg_json_set(o, "index", json_integer(m->index));
	gg_json_set(o, "uuid", str_or_null(m->uuid));
	gg_json_set(o, "name", str_or_null(m->name));
	gg_json_set(o, "profile", str_or_null(m->profile));
	gg_json_set(o, "gpu_instance", m->gi_id >= 0 ? json_integer(m->gi_id) : json_null());
	gg_json_set(o, "compute_instance", m->ci_id >= 0 ? json_integer(m->ci_id) : json_null());
	gg_json_set(o, "compute_capability", cc_json(m->cc_major, m->cc_minor));
	gg_json_set(o, "ecc", tristate(m->ecc));
	set_mem(o, m->have_mem, m->mem_total, m->mem_free);
	gg_json_set(o, "visible", json_boolean(m->visible));
	if (m->error)
		gg_json_set_text(o, "error", m->error);
	return o;
}

static json_t *dev_json(const struct gg_gpu_dev *d)
{
	json_t *o = json_object(), *migs = json_array();
	if (!o || !migs) {
		json_decref(o);
		json_decref(migs);
		return NULL;
	}
	gg_json_set(o, "index", json_integer(d->index));
	gg_json_set(o, "uuid", str_or_null(d->uuid));
	gg_json_set(o, "name", str_or_null(d->name));
	gg_json_set(o, "compute_capability", cc_json(d->cc_major, d->cc_minor));
	set_mem(o, d->have_mem, d->mem_total, d->mem_free);
	gg_json_set(o, "ecc", tristate(d->ecc));
	gg_json_set(o, "mig_mode",
		    d->mig == GG_GPU_UNKNOWN
			    ? json_null()
			    : gg_json_text(d->mig == GG_GPU_ON ? "enabled" : "disabled"));
	gg_json_set(o, "mig_mode_pending",
		    d->mig_pending == GG_GPU_UNKNOWN
			    ? json_null()
			    : gg_json_text(d->mig_pending == GG_GPU_ON ? "enabled" : "disabled"));
	for (size_t k = 0; k < d->nmigs; k++)
		gg_json_append(migs, mig_json(&d->migs[k]));
	gg_json_set(o, "mig", migs);
	gg_json_set(o, "visible", json_boolean(d->visible));
	if (d->error)
		gg_json_set_text(o, "error", d->error);
	return o;
}

json_t *gg_gpu_info_json(const struct gg_gpu_info *info)
{
	json_t *o = json_object(), *devs = json_array();
	if (!o || !devs) {
		json_decref(o);
		json_decref(devs);
		return NULL;
	}
	char cv[16];
	gg_json_set(o, "nvml", str_or_null(info->library));
	gg_json_set(o, "driver_version", str_or_null(info->driver));
	gg_json_set(o, "cuda_driver_version",
		    str_or_null(gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv)));
	gg_json_set(o, "cuda_driver_version_int",
		    info->cuda_driver ? json_integer(info->cuda_driver) : json_null());
	gg_json_set(o, "cuda_visible_devices", info->cvd ? gg_json_text(info->cvd) : json_null());
	if (info->cvd_note)
		gg_json_set_text(o, "cuda_visible_devices_note", info->cvd_note);
	if (info->missing) {
		json_t *m = json_array();
		char *copy = strdup(info->missing), *save = NULL;
		for (char *t = copy ? strtok_r(copy, ", ", &save) : NULL; t;
		     t = strtok_r(NULL, ", ", &save))
			gg_json_append(m, gg_json_text(t));
		free(copy);
		gg_json_set(o, "nvml_missing", m);
	}
	gg_json_set(o, "visible", json_integer((json_int_t)info->nvisible));
	for (size_t i = 0; i < info->ndevs; i++)
		gg_json_append(devs, dev_json(&info->devs[i]));
	gg_json_set(o, "gpus", devs);
	return o;
}

int gg_gpu_provenance(char **json, struct gg_err *err)
{
	*json = NULL;
	struct gg_gpu *g = NULL;
	struct gg_gpu_info info;
	int rc = gg_gpu_open(NULL, &g, err);
	if (rc == GG_ENOTFOUND) {
		gg_err_clear(err);
		return 0;
	}
	if (rc < 0)
		return rc;
	rc = gg_gpu_query(g, &info, err);
	gg_gpu_close(g);
	if (rc < 0)
		return rc;
	if (info.ndevs) {
		json_t *j = gg_gpu_info_json(&info);
		*json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(j);
		if (!*json)
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	gg_gpu_info_clear(&info);
	return rc;
}
