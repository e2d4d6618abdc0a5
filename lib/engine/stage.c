/* request --image: what is staged with the session. A SIF on this machine goes
 * as it is; a directory, tar, docker-archive or OCI image is frozen into a SIF
 * first (gridgpu's own readers, whiteouts applied: one kind of image reaches
 * the node, compressed); node:/PATH is a path on the node, not staged (checked
 * on the site's login host where the site allows it: nodeimage.c). A local
 * path that is not here is a typo, refused before anything is sent (the node
 * would find out only after the queue wait). Then the script that enters the
 * container (gridgpu-enter), made for the site's runtime. Both are written to
 * files in a directory of the stage's own under the cache dir, removed by
 * gg_session_stage_free once the uploads are done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "engine/engine_int.h"
#include "engine/sync.h"

struct gg_session_stage {
	const char *image_file; /* the local SIF staged (the user's, or sif_tmp) */
	char *dir;              /* the stage's own directory (NULL: none made) */
	char *sif_tmp;          /* a SIF made of another kind of image */
	char *enter_tmp;        /* gridgpu-enter, written for the upload */
	char *enter_text;       /* its text */
	int64_t offset;         /* the staged SIF's squashfs partition */
	const char *node_path;  /* the image's path on the node (in the spec's image) */
};

void gg_session_stage_free(struct gg_session_stage *s)
{
	if (!s)
		return;
	if (s->sif_tmp)
		unlink(s->sif_tmp);
	if (s->enter_tmp)
		unlink(s->enter_tmp);
	if (s->dir)
		rmdir(s->dir);
	free(s->dir);
	free(s->sif_tmp);
	free(s->enter_tmp);
	free(s->enter_text);
	free(s);
}

const char *gg_session_stage_script(const struct gg_session_stage *s)
{
	return s ? s->enter_text : NULL;
}

/* The stage's own directory, $XDG_CACHE_HOME/gridgpu/stage/PID-XXXXXX (0700),
 * made at the first call: two stages of one process never share a file. */
static int stage_dir(struct gg_session_stage *s, struct gg_err *err)
{
	if (s->dir)
		return 0;
	char *cache = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &cache, err) < 0)
		return err->code;
	char *top = gg_strdup_printf("%s/stage", cache);
	free(cache);
	int rc = top ? gg_mkdir_p(top, 0700, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !(s->dir = gg_strdup_printf("%s/%ld-XXXXXX", top, (long)getpid())))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !mkdtemp(s->dir)) {
		rc = gg_err_sys(err, GG_EIO, errno, "making a directory in %s", top);
		free(s->dir);
		s->dir = NULL;
	}
	free(top);
	return rc;
}

/* A file's name in the stage's directory. */
static char *stage_path(struct gg_session_stage *s, const char *what, struct gg_err *err)
{
	if (stage_dir(s, err) < 0)
		return NULL;
	char *p = gg_strdup_printf("%s/%s", s->dir, what);
	if (!p)
		gg_err_set(err, GG_ENOMEM, "out of memory");
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

static int stage_cancel(void *ud)
{
	struct gg_engine *e = ud;
	return e && e->cancel && e->cancel(e->ud);
}

/* Any other image, frozen into a SIF to stage. */
static int freeze_to_sif(struct gg_engine *e, const char *src, struct gg_session_stage *s,
			 struct gg_err *err)
{
	s->sif_tmp = stage_path(s, "image.sif", err);
	if (!s->sif_tmp)
		return err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_freeze_opts o = {
		.source = src, .output = s->sif_tmp, .force = 1, .tool_version = GG_VERSION};
	struct gg_image_callbacks cb = {.cancel = stage_cancel, .ud = e};
	struct gg_freeze_result res;
	if (e)
		gg_engine_notef(e, GG_NOTE_INFO, "making a SIF of %s to stage with the session",
				src);
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

/* An image on the node: node:/PATH, as scp and apptainer's docker:// name
 * where a file is. PATH goes into the enter script without the marking. */
static int node_image(const char *image, struct gg_session_stage *s, struct gg_err *err)
{
	const char *path = image + strlen(GG_IMAGE_NODE_MARK);
	if (path[0] != '/')
		return gg_err_set(err, GG_EUSAGE,
				  "--image '%s': a path on the node must be absolute "
				  "(node:/PATH)",
				  image);
	s->node_path = path;
	return 0;
}

/* A local image that is not here: a typo until the user says it is on the
 * node (whose check would come only after the queue wait). */
static int no_such_image(const char *image, const struct gg_site *site, int errnum,
			 struct gg_err *err)
{
	if (errnum != ENOENT)
		return gg_err_sys(err, GG_EUSAGE, errnum, "--image '%s'", image);
	if (site && site->image && !strcmp(site->image, image))
		return gg_err_set(err, GG_EUSAGE,
				  "site '%s': image '%s' is not on this machine (on the node? "
				  "'gridgpu site set %s image node:%s')",
				  site->name, image, site->name, image);
	if (image[0] != '/')
		return gg_err_set(err, GG_EUSAGE, "--image '%s': no such file here", image);
	return gg_err_set(err, GG_EUSAGE,
			  "--image '%s': no such file here (an image on the node: --image "
			  "node:%s)",
			  image, image);
}

static int pick_image(struct gg_engine *e, const char *image, const struct gg_site *site,
		      int dry_run, struct gg_session_stage *s, struct gg_err *err)
{
	if (!strncmp(image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK))) {
		int rc = node_image(image, s, err);
		return rc < 0 || dry_run ? rc : gg_image_node_check(e, site, image, err);
	}
	struct stat st;
	if (stat(image, &st) < 0)
		return no_such_image(image, site, errno, err);
	if (S_ISREG(st.st_mode) && sif_offset(image, &s->offset)) {
		s->image_file = image;
		return 0;
	}
	if (dry_run) { /* what would be frozen and staged */
		s->image_file = image;
		return 0;
	}
	return freeze_to_sif(e, image, s, err);
}

/* request --resume: the resumed session's sandbox as it ended, made into a SIF to
 * stage (resume.c); with dry_run nothing is fetched or made. */
static int resume_image(struct gg_engine *e, const struct gg_session_spec *q, int dry_run,
			struct gg_session_stage *s, struct gg_err *err)
{
	if (dry_run) {
		s->image_file = "(the sandbox of the session resumed, made at submission)";
		return 0;
	}
	s->sif_tmp = stage_path(s, "image.sif", err);
	if (!s->sif_tmp)
		return err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_session_resume_image(e, q->resume, s->sif_tmp, err);
	if (rc < 0)
		return rc;
	if (!sif_offset(s->sif_tmp, &s->offset))
		return gg_err_set(err, GG_EFAIL, "--resume %s: the SIF made of it does not read",
				  q->resume->name);
	s->image_file = s->sif_tmp;
	return 0;
}

/* The enter script for q at site, its text in s (and, unless dry_run, in a
 * file of the stage's directory). */
static int enter_script(const struct gg_session_spec *q, const struct gg_site *site, int dry_run,
			struct gg_session_stage *s, struct gg_err *err)
{
	struct gg_enter_opts eo = {.runtime = site ? site->runtime : NULL,
				   .image = s->node_path ? s->node_path : GG_SESSION_IMAGE_NAME,
				   .offset = s->offset,
				   .gpus = q->res.gpus || q->res.mig,
				   .site_binds = site ? site->binds : NULL,
				   .nsite_binds = site ? site->nbinds : 0,
				   .binds = q->binds,
				   .nbinds = q->nbinds};
	int rc = gg_session_enter_script(&eo, &s->enter_text, err);
	if (rc < 0 || dry_run)
		return rc;
	s->enter_tmp = stage_path(s, "enter", err);
	if (!s->enter_tmp)
		return err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	return gg_file_write_atomic(s->enter_tmp, s->enter_text, strlen(s->enter_text), 0600, err);
}

int gg_session_stage(struct gg_engine *e, struct gg_session_spec *q, const struct gg_site *site,
		     int dry_run, struct gg_session_stage **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_session_stage *s = calloc(1, sizeof *s);
	if (!s)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = q->resume  ? resume_image(e, q, dry_run, s, err)
		 : q->image ? pick_image(e, q->image, site, dry_run, s, err)
			    : gg_err_set(err, GG_EUSAGE, "no image to stage");
	if (rc == 0)
		rc = enter_script(q, site, dry_run, s, err);
	if (rc == 0) /* the spec keeps copies: it is freed on its own */
		rc = gg_session_spec_set_enter(q, dry_run ? "(gridgpu-enter, below)" : s->enter_tmp,
					       s->image_file, err);
	if (rc < 0) {
		gg_session_stage_free(s);
		return rc;
	}
	*out = s;
	return 0;
}
