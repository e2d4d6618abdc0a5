/* gg_image_freeze: source -> tree + file data streamed into the squashfs written in place
 * at the partition offset of a temp SIF next to the output -> metadata objects ->
 * header and descriptors -> fsync -> rename. Any failure or cancel removes the temp. */
#include "image/internal.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#ifndef GG_VERSION
#define GG_VERSION "unknown"
#endif

/* ---- helpers --------------------------------------------------------------------- */

static unsigned ncpus(void)
{
	return gg_compat_ncpus();
}

struct newest {
	const struct gg_node *top;
	int64_t m;
};

static int newer(struct gg_node *n, void *ud)
{
	struct newest *w = ud;
	if (n != w->top && n->inode->skipped)
		return GG_WALK_SKIP;
	if (n->inode->mtime > w->m)
		w->m = n->inode->mtime;
	return 0;
}

static int64_t newest_mtime(struct gg_node *top)
{
	struct newest w = {top, top->inode->mtime};
	gg_image_tree_walk(top, newer, NULL, &w);
	return w.m;
}

static int install(const char *tmp, const char *out, int force, struct gg_err *err)
{
	if (force) {
		if (rename(tmp, out) < 0)
			return gg_err_sys(err, GG_EIO, errno, "renaming '%s' to '%s'", tmp, out);
		return 0;
	}
	/* renameat2 RENAME_NOREPLACE, else link + unlink: neither replaces (compat.h) */
	if (gg_compat_rename_noreplace(tmp, out) == 0)
		return 0;
	if (errno == EEXIST)
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)", out);
	return gg_err_sys(err, GG_EIO, errno, "renaming '%s' to '%s'", tmp, out);
}

static int check_opts(const struct gg_freeze_opts *o, struct gg_err *err)
{
	if (!o->source || !*o->source)
		return gg_err_set(err, GG_EUSAGE, "no sandbox given");
	if (!o->output || !*o->output)
		return gg_err_set(err, GG_EUSAGE, "no output given (-o IMAGE.sif)");
	int comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP;
	if (strcmp(gg_image_comp_name((enum gg_image_comp)comp), "unknown") == 0)
		return gg_err_set(err, GG_EUSAGE, "unknown compressor id %d", comp);
	if (comp == GG_IMAGE_COMP_GZIP && (o->level < 0 || o->level > 12))
		return gg_err_set(err, GG_EUSAGE, "gzip level %d out of range (1-12)", o->level);
	if (comp == GG_IMAGE_COMP_ZSTD && (o->level < 0 || o->level > 22))
		return gg_err_set(err, GG_EUSAGE, "zstd level %d out of range (1-22)", o->level);
	if (comp == GG_IMAGE_COMP_XZ && (o->level < 0 || o->level > 9))
		return gg_err_set(err, GG_EUSAGE, "xz level %d out of range (1-9)", o->level);
	for (size_t i = 0; i < o->nlabels; i++) {
		const char *eq = strchr(o->labels[i], '=');
		if (!eq || eq == o->labels[i])
			return gg_err_set(err, GG_EUSAGE, "label '%s': expected KEY=VALUE",
					  o->labels[i]);
	}
	if (o->gpus_json && *o->gpus_json) {
		json_error_t je;
		json_t *g = json_loads(o->gpus_json, JSON_DECODE_ANY, &je);
		if (!g)
			return gg_err_set(err, GG_EUSAGE, "GPU description: not valid JSON: %s",
					  je.text);
		json_decref(g);
	}
	if (o->have_source_date_epoch && o->source_date_epoch < 0)
		return gg_err_set(err, GG_EUSAGE, "SOURCE_DATE_EPOCH must not be negative");
	return 0;
}

/* ---- the freeze ------------------------------------------------------------------- */

/* One freeze in progress: what the steps below fill and the clean-up frees. */
struct run {
	const struct gg_freeze_opts *o;
	const struct gg_image_callbacks *cb;
	const struct gg_freeze_feeder *fdr;
	struct gg_feed *feed;
	struct gg_tree *tree;
	struct gg_sqfs_writer *sq;
	struct gg_sif_writer *sw;
	struct gg_sqfs_opts qo;
	struct gg_sif_writer_opts so;
	struct gg_oci_info oci;
	struct stat ost;
	enum gg_image_format fmt;
	int from_stdin, reproducible, out_exists, anon, fd;
	int named; /* tmp is a name we made: removed on failure */
	char *source_abs, *tmp, *digest, *deffile, *inspect, *provenance;
	const char *arch;
	int64_t part_off, build_time, clamp;
	uint64_t sqfs_size;
};

/* The source's format and absolute path. */
static int resolve_source(struct run *r, struct gg_err *err)
{
	const struct gg_freeze_opts *o = r->o;
	r->fmt = o->format;
	if (r->from_stdin) {
		if (r->fmt == GG_IMAGE_DIR || r->fmt == GG_IMAGE_OCI)
			return gg_err_set(err, GG_EUSAGE,
					  "standard input can only be a tar stream (save an OCI or "
					  "docker archive to a file first)");
		r->fmt = GG_IMAGE_TAR;
		r->source_abs = strdup("stdin");
		return 0;
	}
	struct stat st;
	if (stat(o->source, &st) < 0) /* a source named that is not there: a usage error */
		return gg_err_sys(err, errno == ENOENT || errno == ENOTDIR ? GG_EUSAGE : GG_EFAIL,
				  errno, "'%s'", o->source);
	if (r->fmt == GG_IMAGE_AUTO && gg_image_detect(o->source, &r->fmt, err) < 0)
		return err->code;
	if (r->fmt == GG_IMAGE_DIR && !S_ISDIR(st.st_mode))
		return gg_err_set(err, GG_EUSAGE, "'%s' is not a directory", o->source);
	if (r->fmt == GG_IMAGE_TAR && S_ISDIR(st.st_mode))
		return gg_err_set(err, GG_EUSAGE, "'%s' is a directory, not a tar archive",
				  o->source);
	if (access(o->source, R_OK) < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "'%s'", o->source);
	r->source_abs = realpath(o->source, NULL);
	/* a pipe named /dev/fd/N or /dev/stdin (bash's <(tar c ...)) resolves to "pipe:[N]",
	 * no path: it is recorded as given */
	if (!r->source_abs && errno == ENOENT && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		r->source_abs = strdup(o->source);
	if (!r->source_abs && errno != ENOMEM)
		return gg_err_sys(err, GG_EFAIL, errno, "'%s'", o->source);
	return 0;
}

static int check_output(struct run *r, struct gg_err *err)
{
	r->out_exists = stat(r->o->output, &r->ost) == 0;
	if (r->out_exists && S_ISDIR(r->ost.st_mode))
		return gg_err_set(err, GG_EUSAGE, "'%s' is a directory", r->o->output);
	if (r->out_exists && !r->o->force)
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)",
				  r->o->output);
	return 0;
}

/* An unnamed file (O_TMPFILE) gets a name only once it is complete, so even a SIGKILL
 * leaves nothing behind; file systems without it get a named temp file, removed on
 * every failure we live through. */
static int open_temp(struct run *r, struct gg_err *err)
{
	r->tmp = gg_strdup_printf("%s.tmp.XXXXXX", r->o->output);
	if (!r->tmp)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	char *dir = strdup(r->o->output);
	r->fd = dir ? gg_compat_tmpfile(dirname(dir), 1) : -1;
	free(dir);
	if (r->fd >= 0) {
		r->anon = 1;
	} else {
		r->fd = gg_compat_mkstemp(r->tmp);
		r->named = r->fd >= 0;
	}
	if (r->fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "writing '%s'", r->o->output);
	return 0;
}

/* The SIF writer on the temp file, the squashfs writer at its partition offset, the
 * empty tree; the temp file and the old output are kept out of a directory source.
 * Their errors name the output: the temp file has no name, or loses it on failure. */
static int start_writers(struct run *r, struct gg_err *err)
{
	fchmod(r->fd, 0600);
	struct stat tst;
	if (fstat(r->fd, &tst) == 0)
		gg_image_feed_exclude(r->feed, tst.st_dev, tst.st_ino);
	if (r->out_exists)
		gg_image_feed_exclude(r->feed, r->ost.st_dev, r->ost.st_ino);
	r->so.deterministic = r->reproducible;
	r->so.launch_script = 1;
	r->so.now = (int64_t)time(NULL);
	if (!r->reproducible) {
		if (gg_compat_random(r->so.id, sizeof r->so.id) < 0)
			return gg_err_sys(err, GG_EFAIL, errno,
					  "getting random bytes for the image UUID");
		r->so.id[6] = (uint8_t)((r->so.id[6] & 0x0F) | 0x40);
		r->so.id[8] = (uint8_t)((r->so.id[8] & 0x3F) | 0x80);
	}
	if (gg_sif_writer_new(r->fd, r->o->output, &r->so, &r->sw, err) < 0)
		return err->code;
	r->part_off = gg_sif_writer_data_start(r->sw);
	const struct gg_freeze_opts *o = r->o;
	r->qo = (struct gg_sqfs_opts){
		.comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP,
		.level = o->level,
		.jobs = o->jobs ? o->jobs : ncpus(),
		.block_size = 128 * 1024,
		.cancel = r->cb ? r->cb->cancel : NULL,
		.cancel_ud = r->cb ? r->cb->ud : NULL,
	};
	if (gg_sqfs_writer_new(r->fd, r->o->output, (uint64_t)r->part_off, &r->qo, &r->sq, err) < 0)
		return err->code;
	if (!(r->tree = gg_image_tree_new()))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	gg_image_feed_attach(r->feed, r->tree, r->sq);
	gg_image_feed_set_jobs(r->feed, r->qo.jobs);
	return 0;
}

static int read_tar_file(struct run *r, struct gg_err *err)
{
	const char *source = r->o->source;
	int sfd = open(source, O_RDONLY | O_CLOEXEC); /* a fifo: waits for its writer */
	if (sfd < 0) {
		int e = errno;
		if (e == EINTR && gg_image_check_cancel(r->feed, err) < 0)
			return err->code;
		return gg_err_sys(err, GG_EFAIL, e, "opening '%s'", source);
	}
	struct stat st;
	if (fstat(sfd, &st) == 0 && S_ISREG(st.st_mode))
		gg_image_progress_source_size(r->feed, (uint64_t)st.st_size);
	int rc = gg_image_read_tar(r->feed, sfd, source, &r->digest, err);
	close(sfd);
	return rc;
}

/* Run the reader for the source's format: the tree and the file data. */
static int read_source(struct run *r, struct gg_err *err)
{
	int rc;
	gg_image_progress_phase(r->feed,
				r->fmt == GG_IMAGE_DIR ? GG_IMAGE_PHASE_SCAN : GG_IMAGE_PHASE_DATA);
	if (r->fdr && r->fdr->read)
		return (rc = r->fdr->read(r->feed, r->fdr->ud, err)) < 0
			       ? rc
			       : gg_image_check_cancel(r->feed, err);
	switch (r->fmt) {
	case GG_IMAGE_DIR: rc = gg_image_read_dir(r->feed, r->o->source, err); break;
	case GG_IMAGE_TAR:
		if (r->from_stdin)
			rc = gg_image_read_tar(r->feed, r->o->input_fd, "standard input",
					       &r->digest, err);
		else
			rc = read_tar_file(r, err);
		break;
	case GG_IMAGE_OCI: rc = gg_image_read_oci(r->feed, r->o->source, &r->oci, err); break;
	default: rc = gg_err_set(err, GG_EUSAGE, "unknown source format"); break;
	}
	if (rc < 0)
		return rc;
	return gg_image_check_cancel(r->feed, err);
}

/* Times: reproducible images take SOURCE_DATE_EPOCH (clamping mtimes to it) or the
 * newest mtime of the tree; others take now. Then the squashfs is finished. */
static int finish_squashfs(struct run *r, struct gg_freeze_result *res, struct gg_err *err)
{
	const struct gg_freeze_opts *o = r->o;
	gg_image_progress_phase(r->feed, GG_IMAGE_PHASE_META);
	r->clamp = -1;
	if (r->reproducible) {
		if (o->have_source_date_epoch) {
			r->build_time = o->source_date_epoch;
			r->clamp = o->source_date_epoch;
		} else {
			r->build_time = newest_mtime(r->tree->root);
		}
	} else {
		r->build_time = r->so.now;
	}
	if (r->build_time < 0)
		r->build_time = 0;
	if (r->build_time > (int64_t)UINT32_MAX)
		r->build_time = UINT32_MAX;
	if (!r->tree->root_set)
		r->tree->root->inode->mtime = r->build_time; /* an archive without "./" */
	if (gg_sqfs_writer_finish(r->sq, r->tree, (uint32_t)r->build_time, r->clamp, &r->sqfs_size,
				  res, err) < 0)
		return err->code;
	return gg_image_check_cancel(r->feed, err);
}

static int default_level(int comp)
{
	return comp == GG_IMAGE_COMP_GZIP   ? 6
	       : comp == GG_IMAGE_COMP_ZSTD ? 15
	       : comp == GG_IMAGE_COMP_XZ   ? 6
					    : 0;
}

static int build_meta(struct run *r, struct gg_err *err)
{
	const struct gg_freeze_opts *o = r->o;
	int oci = r->fmt == GG_IMAGE_OCI;
	r->arch = gg_image_tree_arch(r->tree);
	struct gg_meta_in mi = {
		.tree = r->tree,
		.source = r->from_stdin ? "-" : o->source,
		.source_abs = r->source_abs,
		.format = r->fmt,
		.source_digest = r->fdr && r->fdr->no_digest ? NULL
				 : oci                       ? r->oci.digest
							     : r->digest,
		.oci = oci ? &r->oci : NULL,
		.arch = r->arch,
		.build_time = r->build_time,
		.reproducible = r->reproducible,
		.labels = o->labels,
		.nlabels = o->nlabels,
		.gpus_json = o->gpus_json,
		.usage_json = r->fdr ? r->fdr->usage_json : NULL,
		.tool_version = o->tool_version ? o->tool_version : GG_VERSION,
		.comp = r->qo.comp,
		.level = o->level ? o->level : default_level(r->qo.comp),
		.block_size = r->qo.block_size,
	};
	return gg_image_meta_build(&mi, &r->deffile, &r->inspect, &r->provenance, err);
}

/* IDs in apptainer's order (definition, JSON objects sorted by name, partition), data
 * in file order: the partition is already in place at part_off. */
static int write_sif(struct run *r, int64_t *image_size, struct gg_err *err)
{
	struct gg_sif_writer *sw = r->sw;
	const char *cfg = r->oci.config_json;
	uint32_t id = 1;
	uint32_t nids = 3 + (cfg ? 1 : 0) + 1;
	if (gg_sif_writer_add_partition(sw, nids, 1, r->part_off, (int64_t)r->sqfs_size,
					GG_SIF_FS_SQUASHFS, GG_SIF_PART_PRIMSYS, r->arch,
					err) < 0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_DEFFILE, 1, NULL, r->deffile, strlen(r->deffile),
			      err) < 0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "gridgpu-provenance.json",
			      r->provenance, strlen(r->provenance), err) < 0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "inspect-metadata.json", r->inspect,
			      strlen(r->inspect), err) < 0)
		return err->code;
	if (cfg && gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "oci-config.json", cfg,
				     strlen(cfg), err) < 0)
		return err->code;
	return gg_sif_writer_finish(sw, image_size, err);
}

/* Make the temp file durable and executable, give it a name, close it and put it in
 * place of the output. */
static int commit_file(struct run *r, struct gg_err *err)
{
	if (fsync(r->fd) < 0)
		return gg_err_sys(err, GG_EIO, errno, "writing '%s'", r->o->output);
	if (fchmod(r->fd, 0755) < 0)
		return gg_err_sys(err, GG_EIO, errno, "setting the mode of '%s'", r->o->output);
	if (r->cb && r->cb->source_end && r->cb->source_end(r->cb->ud, err) != 0)
		return err->code ? err->code : gg_err_set(err, GG_EFAIL, "the source failed");
	if (r->anon && gg_file_name_unnamed(r->fd, r->tmp, r->o->output, err) < 0)
		return err->code;
	r->named = 1;
	gg_sqfs_writer_free(r->sq);
	r->sq = NULL;
	gg_image_feed_attach(r->feed, r->tree, NULL);
	int fd = r->fd;
	r->fd = -1;
	if (close(fd) < 0)
		return gg_err_sys(err, GG_EIO, errno, "writing '%s'", r->o->output);
	if (gg_image_check_cancel(r->feed, err) < 0)
		return err->code;
	if (install(r->tmp, r->o->output, r->o->force, err) < 0)
		return err->code;
	gg_fsync_dir(r->o->output); /* best effort: the rename is done */
	return 0;
}

/* Everything from the open temp file to the installed output. */
static int write_image(struct run *r, struct gg_freeze_result *res, struct gg_err *err)
{
	int64_t image_size = 0;
	if (start_writers(r, err) < 0 || read_source(r, err) < 0 ||
	    finish_squashfs(r, res, err) < 0 || build_meta(r, err) < 0 ||
	    write_sif(r, &image_size, err) < 0 || commit_file(r, err) < 0)
		return err->code ? err->code : GG_EFAIL;
	res->squashfs_size = r->sqfs_size;
	res->image_size = (uint64_t)image_size;
	snprintf(res->arch, sizeof res->arch, "%s", gg_image_arch_name(r->arch));
	res->build_time = r->build_time;
	res->warnings = gg_image_feed_finish(r->feed, (uint64_t)image_size);
	return 0;
}

static void run_free(struct run *r)
{
	gg_sqfs_writer_free(r->sq);
	gg_sif_writer_free(r->sw);
	gg_image_tree_free(r->tree);
	gg_image_oci_info_clear(&r->oci);
	gg_image_feed_free(r->feed);
	free(r->deffile);
	free(r->inspect);
	free(r->provenance);
	free(r->digest);
	free(r->tmp);
	free(r->source_abs);
}

int gg_image_freeze(const struct gg_freeze_opts *o, const struct gg_image_callbacks *cb,
		    struct gg_freeze_result *res, struct gg_err *err)
{
	return gg_image_freeze_fed(o, cb, NULL, res, err);
}

int gg_image_freeze_fed(const struct gg_freeze_opts *o, const struct gg_image_callbacks *cb,
			const struct gg_freeze_feeder *fdr, struct gg_freeze_result *res,
			struct gg_err *err)
{
	struct gg_freeze_result dummy;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof *res);
	if (check_opts(o, err) < 0)
		return err->code;
	struct run r = {
		.o = o, .cb = cb, .fdr = fdr, .fd = -1, .reproducible = !o->no_reproducible};
	r.from_stdin = strcmp(o->source, "-") == 0;
	int rc = resolve_source(&r, err);
	if (rc == 0) {
		res->format = r.fmt;
		if (!r.source_abs || !(r.feed = gg_image_feed_new(cb, o->skip_unreadable)))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (rc == 0 && (rc = check_output(&r, err)) == 0 && (rc = open_temp(&r, err)) == 0 &&
	    (rc = write_image(&r, res, err)) < 0) {
		/* every failure once the temp file exists removes it; the writer joins
		 * the compressor threads before the unlink */
		gg_sqfs_writer_free(r.sq);
		r.sq = NULL;
		if (r.fd >= 0)
			close(r.fd);
		r.fd = -1;
		if (r.named)
			unlink(r.tmp);
	}
	run_free(&r);
	return rc;
}
