/* What earlier sessions at a site saw: the GPUs nvidia-smi described on their
 * node (the session's .gridgpu/gpus record, read by freeze --session), kept per
 * site in the user's cache, $XDG_CACHE_HOME/gridgpu/seen-gpus.json:
 *   {"version": 1, "sites": {SITE: {"time": EPOCH, "session": NAME,
 *                                   "gpus": [{"name", "memory_mb", "capability"}]}}}
 * The newest record of a site replaces the one before. The file is the user's
 * but read back as outside text: what is not in this shape is dropped. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define SEEN_FILE "seen-gpus.json"
#define SEEN_MAX  (1 << 20)

static char *seen_path(struct gg_err *err)
{
	char *dir = NULL, *path = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &dir, err) == 0 &&
	    !(path = gg_strdup_printf("%s/%s", dir, SEEN_FILE)))
		gg_err_set(err, GG_ENOMEM, "out of memory");
	free(dir);
	return path;
}

json_t *gg_gpu_seen_load(void)
{
	char *path = seen_path(NULL), *text = NULL;
	size_t len = 0;
	json_t *j = NULL;
	if (path && gg_file_read(path, SEEN_MAX, &text, &len, NULL) == 0)
		j = json_loadb(text, len, 0, NULL);
	json_t *sites = json_object_get(j, "sites");
	json_t *out = json_is_object(sites) ? json_incref(sites) : json_object();
	json_decref(j);
	free(text);
	free(path);
	return out;
}

/* The provenance's devices ({"gpus": [{name, memory_total_mb, compute_capability}]}
 * as gg_gpu_smi_provenance made them) in the cache's shape. */
static json_t *seen_gpus(json_t *prov)
{
	json_t *out = json_array();
	size_t i;
	json_t *d;
	json_array_foreach (json_object_get(prov, "gpus"), i, d) {
		json_t *g = json_object();
		gg_json_set_text(g, "name", json_string_value(json_object_get(d, "name")));
		json_t *mb = json_object_get(d, "memory_total_mb");
		if (json_is_integer(mb))
			gg_json_set(g, "memory_mb", json_integer(json_integer_value(mb)));
		gg_json_set_text(g, "capability",
				 json_string_value(json_object_get(d, "compute_capability")));
		gg_json_append(out, g);
	}
	return out;
}

int gg_gpu_seen_save(const char *site, const char *session, const char *prov_json, int64_t when,
		     struct gg_err *err)
{
	if (!site || !prov_json)
		return 0;
	json_t *prov = json_loads(prov_json, 0, NULL);
	json_t *gpus = prov ? seen_gpus(prov) : NULL;
	json_decref(prov);
	if (!json_array_size(gpus)) {
		json_decref(gpus);
		return 0;
	}
	char *path = seen_path(err), *text = NULL;
	int rc = path ? gg_mkdir_parent(path, 0700, err) : (err ? err->code : GG_EFAIL);
	json_t *sites = gg_gpu_seen_load();
	json_t *rec = gg_json_object("time", json_integer(when), "gpus", gpus, NULL);
	gg_json_set_text(rec, "session", session);
	gg_json_set(sites, site, rec);
	json_t *doc = gg_json_object("version", json_integer(1), "sites", sites, NULL);
	if (rc == 0 && !(text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = gg_file_write_atomic(path, text, strlen(text), 0600, err);
	json_decref(doc);
	free(text);
	free(path);
	return rc;
}
