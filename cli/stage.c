/* request --image: what is staged with the session. A SIF on this machine goes
 * as it is; a directory, tar, docker-archive or OCI image is frozen into a SIF
 * first (gridgpu's own readers, whiteouts applied: one kind of image reaches
 * the node, compressed); an absolute path that is not here is a path on the
 * node. Then the script that enters the container (gridgpu-enter), made for
 * the site's runtime. Both are written to files under the cache dir, removed
 * by stage_clear once the uploads are done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctx.h"
#include "image/image.h"
#include "session/engine.h"
#include "session/sync.h"
#include "stage.h"

void stage_clear(struct stage *s)
{
	if (s->sif_tmp)
		unlink(s->sif_tmp);
	if (s->enter_tmp)
		unlink(s->enter_tmp);
	free(s->sif_tmp);
	free(s->enter_tmp);
	free(s->enter_text);
	memset(s, 0, sizeof *s);
}

/* A temp file's name in $XDG_CACHE_HOME/gridgpu/stage (0700). */
static char *stage_path(const char *what, struct gg_err *err)
{
	char *cache = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &cache, err) < 0)
		return NULL;
	char *dir = gg_strdup_printf("%s/stage", cache);
	free(cache);
	if (!dir || gg_mkdir_p(dir, 0700, err) < 0) {
		free(dir);
		return NULL;
	}
	char *p = gg_strdup_printf("%s/%ld-%s", dir, (long)getpid(), what);
	free(dir);
	return p;
}

/* The image's squashfs offset when path is a SIF (1), 0 when it is not one. */
static int sif_offset(const char *path, int64_t *off)
{
	struct gg_sif *sif;
	struct gg_err e = {0};
	if (gg_sif_open(path, &sif, &e) < 0)
		return 0;
	const struct gg_sif_descr *d = gg_sif_primary(sif);
	*off = d ? d->offset : 0;
	gg_sif_close(sif);
	return 1;
}

/* Any other image, frozen into a SIF to stage. */
static int freeze_to_sif(struct gg_cli *cli, const char *src, struct stage *s, struct gg_err *err)
{
	s->sif_tmp = stage_path("image.sif", err);
	if (!s->sif_tmp)
		return err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_freeze_opts o = {
		.source = src, .output = s->sif_tmp, .force = 1, .tool_version = GG_VERSION};
	struct gg_image_callbacks cb = {.cancel = cli_cancel_cb};
	struct gg_freeze_result res;
	ui_info(cli, "making a SIF of %s to stage with the session", src);
	int rc = gg_image_freeze(&o, &cb, &res, err);
	if (rc < 0) {
		gg_err_prefix(err, "--image %s", src);
		return rc;
	}
	if (!sif_offset(s->sif_tmp, &s->offset))
		return gg_err_set(err, GG_EFAIL, "--image %s: the SIF made of it does not read",
				  src);
	s->image_file = s->sif_tmp;
	return 0;
}

static int pick_image(struct gg_cli *cli, const char *image, int dry_run, struct stage *s,
		      struct gg_err *err)
{
	struct stat st;
	if (stat(image, &st) < 0) {
		if (errno == ENOENT && image[0] == '/') {
			s->node_path = 1; /* pre-placed at the site */
			return 0;
		}
		return gg_err_sys(err, GG_EUSAGE, errno,
				  "--image '%s' (a path on the node must be absolute)", image);
	}
	if (S_ISREG(st.st_mode) && sif_offset(image, &s->offset)) {
		s->image_file = image;
		return 0;
	}
	if (dry_run) { /* what would be frozen and staged */
		s->image_file = image;
		return 0;
	}
	return freeze_to_sif(cli, image, s, err);
}

int stage_image(struct gg_cli *cli, struct gg_session_spec *q, const struct gg_site *site,
		int dry_run, struct stage *s)
{
	struct gg_err err = {0};
	int rc = pick_image(cli, q->image, dry_run, s, &err);
	struct gg_enter_opts eo = {.runtime = site ? site->runtime : NULL,
				   .image = s->node_path ? q->image : GG_SESSION_IMAGE_NAME,
				   .offset = s->offset,
				   .gpus = q->res.gpus || q->res.mig,
				   .site_binds = site ? site->binds : NULL,
				   .nsite_binds = site ? site->nbinds : 0,
				   .binds = q->binds,
				   .nbinds = q->nbinds};
	if (rc == 0)
		rc = gg_session_enter_script(&eo, &s->enter_text, &err);
	if (rc == 0 && !dry_run) {
		s->enter_tmp = stage_path("enter", &err);
		rc = s->enter_tmp ? gg_file_write_atomic(s->enter_tmp, s->enter_text,
							 strlen(s->enter_text), 0600, &err)
		     : err.code   ? err.code
				  : gg_err_set(&err, GG_ENOMEM, "out of memory");
	}
	if (rc < 0)
		return ui_fail(cli, &err, "request");
	q->enter = dry_run ? "(gridgpu-enter, below)" : s->enter_tmp;
	q->image_file = s->image_file;
	return 0;
}
