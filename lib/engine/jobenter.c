/* A batch job's container run: the enter script a session's logins use
 * (gridgpu-enter, lib/node/enter.c), made for the job's image, site and
 * binds, so that /cvmfs, the site's binds, submit --bind, $HOME, the GPU
 * flags and the environment are the session's. Kept in the cache under the
 * SHA-256 of what it holds: the same script is one file, never half written. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_int.h"
#include "engine/sync.h"

/* $XDG_CACHE_HOME/gridgpu/enter/SHA256 of text, malloc'd (the directory made). */
static char *enter_path(const char *text, struct gg_err *err)
{
	char hex[GG_SHA256_HEX], *top = NULL;
	if (gg_sha256_hex(text, strlen(text), hex, err) < 0)
		return NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &top, err) < 0)
		return NULL;
	char *dir = gg_strdup_printf("%s/enter", top), *path = NULL;
	free(top);
	if (!dir)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	else if (gg_mkdir_p(dir, 0700, err) == 0 && !(path = gg_strdup_printf("%s/%s", dir, hex)))
		gg_err_set(err, GG_ENOMEM, "out of memory");
	free(dir);
	return path;
}

int gg_job_enter_text(const struct gg_job_spec *s, const struct gg_site *site, const char *image,
		      char **out, struct gg_err *err)
{
	struct gg_enter_opts eo = {.runtime = site ? site->runtime : NULL,
				   .image = image,
				   .offset = s->part_offset,
				   .gpus = s->res.gpus || s->res.mig,
				   .site_binds = site ? site->binds : NULL,
				   .nsite_binds = site ? site->nbinds : 0,
				   .binds = s->binds,
				   .nbinds = s->nbinds};
	return gg_session_enter_script(&eo, out, err);
}

int gg_job_enter_file(const struct gg_job_spec *s, const struct gg_site *site, const char *image,
		      char **path, struct gg_err *err)
{
	char *text = NULL;
	*path = NULL;
	int rc = gg_job_enter_text(s, site, image, &text, err);
	if (rc == 0 && !(*path = enter_path(text, err)))
		rc = err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && (rc = gg_file_write_atomic(*path, text, strlen(text), 0600, err)) < 0) {
		free(*path);
		*path = NULL;
	}
	char *slash = rc == 0 ? strrchr(*path, '/') : NULL;
	if (slash) { /* the enter scripts not written for GG_CACHE_MAX_AGE */
		*slash = 0;
		gg_dir_prune(*path, GG_CACHE_MAX_AGE, (int64_t)time(NULL), slash + 1);
		*slash = '/';
	}
	free(text);
	return rc;
}
