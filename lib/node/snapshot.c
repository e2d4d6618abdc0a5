/* freeze --session of a session that ended: its sandbox as it was at the end, made
 * from the image it was made from (the staged SIF, kept in the job's directory) and the
 * snapshot the launcher wrote (libexec/gridgpu/session-launcher): the list of every
 * entry with its owner, mode and time, and the regular files that changed. The entries
 * are fed in the order the node's tar --sort=name gives a live freeze (stream.c), with
 * the same metadata, exclusions and GPU record: the same image, byte for byte. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <sqfs/compressor.h>
#include <sqfs/data_reader.h>
#include <sqfs/dir_reader.h>
#include <sqfs/inode.h>
#include <sqfs/super.h>

#include "gpu/gpu.h"
#include "image/image.h"
#include "image/internal.h"
#include "image/partfile.h"
#include "node/node.h"
#include "compat/compat.h"
#include "gridgpu/ce.h"

#define CHUNK    (128u << 10)
#define GPUS_MAX (64u << 10)

struct changed {
	char *path; /* clean: "a/b" */
	uint64_t off, size;
};

struct link {
	uint64_t ino;
	const char *path;
};

struct snap {
	const char *const *excl;
	size_t nexcl;
	struct gg_snap_entry *ents;
	size_t n;
	struct changed *chg;
	size_t nchg, capchg;
	int spool;
	uint64_t spooled;
	char *gpus;
	struct link *links;
	size_t nlinks;
	/* the base image */
	struct gg_sif *sif;
	struct gg_part_file pf;
	sqfs_super_t sb;
	sqfs_compressor_t *cmp;
	sqfs_dir_reader_t *rd;
	sqfs_data_reader_t *dr;
	unsigned char *buf;
};

static void snap_clear(struct snap *s)
{
	gg_snap_list_free(s->ents, s->n);
	for (size_t i = 0; i < s->nchg; i++)
		free(s->chg[i].path);
	free(s->chg);
	free(s->links);
	free(s->gpus);
	free(s->buf);
	if (s->spool >= 0)
		close(s->spool);
	if (s->dr)
		sqfs_destroy(s->dr);
	if (s->rd)
		sqfs_destroy(s->rd);
	if (s->cmp)
		sqfs_destroy(s->cmp);
	if (s->sif)
		gg_sif_close(s->sif);
}

/* ---- the snapshot's tar ---------------------------------------------------------- */

/* A member's data into memory, at most max bytes. */
static int read_member(struct archive *a, size_t max, char **out, size_t *len, const char *what,
		       struct gg_err *err)
{
	size_t cap = 0, n = 0;
	char *b = NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = cap <= max + 65536 ? realloc(b, cap + 1) : NULL;
			if (!nb) {
				free(b);
				return gg_err_set(err, cap > max ? GG_EPROTO : GG_ENOMEM,
						  "the snapshot's %s is larger than %zu bytes",
						  what, max);
			}
			b = nb;
		}
		la_ssize_t r = archive_read_data(a, b + n, cap - n);
		if (r < 0) {
			free(b);
			return gg_err_set(err, GG_EPROTO, "the snapshot's %s: %s", what,
					  archive_error_string(a));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(b);
			return gg_err_set(err, GG_EPROTO,
					  "the snapshot's %s is larger than %zu bytes", what, max);
		}
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* A changed file's data, appended to the spool. */
static int spool_member(struct snap *s, struct archive *a, const char *name, struct gg_err *err)
{
	if (s->nchg == s->capchg) {
		s->capchg = s->capchg ? s->capchg * 2 : 256;
		struct changed *nc = realloc(s->chg, s->capchg * sizeof *nc);
		if (!nc)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		s->chg = nc;
	}
	char *clean = malloc(strlen(name) + 1);
	if (!clean)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (gg_image_path_clean(name, clean, err) < 0) {
		free(clean);
		return gg_err_prefix(err, "the snapshot");
	}
	struct changed *c = &s->chg[s->nchg++];
	*c = (struct changed){.path = clean, .off = s->spooled};
	for (; a;) {
		la_ssize_t r = archive_read_data(a, s->buf, CHUNK);
		if (r < 0)
			return gg_err_set(err, GG_EPROTO, "the snapshot's '%s': %s", name,
					  archive_error_string(a));
		if (r == 0)
			break;
		if (write(s->spool, s->buf, (size_t)r) != r)
			return gg_err_sys(err, GG_EIO, errno, "spooling the snapshot");
		c->size += (uint64_t)r;
		s->spooled += (uint64_t)r;
	}
	return 0;
}

/* A changed file the tar holds as a hard link to one before it: the same data. */
static int spool_link(struct snap *s, const char *name, const char *target, struct gg_err *err)
{
	char *t = malloc(strlen(target) + 1);
	int rc = t ? gg_image_path_clean(target, t, err)
		   : gg_err_set(err, GG_ENOMEM, "out of memory");
	size_t i = 0;
	while (rc == 0 && i < s->nchg && strcmp(s->chg[i].path, t))
		i++;
	free(t);
	if (rc == 0 && i == s->nchg)
		rc = gg_err_set(err, GG_EPROTO, "the snapshot's '%s' links to no file before it",
				name);
	if (rc < 0)
		return rc;
	struct changed was = s->chg[i];
	rc = spool_member(s, NULL, name, err); /* its name, no data */
	if (rc == 0) {
		s->chg[s->nchg - 1].off = was.off;
		s->chg[s->nchg - 1].size = was.size;
	}
	return rc;
}

static int chg_cmp(const void *a, const void *b)
{
	return strcmp(((const struct changed *)a)->path, ((const struct changed *)b)->path);
}

static int ent_cmp(const void *a, const void *b)
{
	return gg_snap_path_cmp(((const struct gg_snap_entry *)a)->path,
				((const struct gg_snap_entry *)b)->path);
}

/* The list, the GPU record, then the changed files (into the spool). */
static int read_snapshot(struct snap *s, const char *path, const char *spool_dir,
			 struct gg_err *err)
{
	s->spool = gg_compat_scratch(spool_dir);
	if (s->spool < 0)
		return gg_err_sys(err, GG_EIO, errno, "a temporary file in %s", spool_dir);
	struct archive *a = gg_image_tar_reader();
	if (!a)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = 0;
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK)
		rc = gg_err_set(err, GG_EPROTO, "the snapshot '%s': %s", path,
				archive_error_string(a));
	char *list = NULL;
	size_t len = 0, glen = 0;
	for (size_t k = 0; rc == 0; k++) {
		struct archive_entry *ae;
		int r = archive_read_next_header(a, &ae);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = gg_err_set(err, GG_EPROTO, "the snapshot: %s",
					archive_error_string(a));
			break;
		}
		const char *name = archive_entry_pathname(ae);
		const char *hl = archive_entry_hardlink(ae);
		int reg = archive_entry_filetype(ae) == AE_IFREG;
		if (name && hl && k > 1)
			rc = spool_link(s, name, hl, err);
		else if (!name || !reg)
			rc = gg_err_set(err, GG_EPROTO, "the snapshot holds other than files");
		else if (k == 0 && strcmp(name, "snapshot.list"))
			rc = gg_err_set(err, GG_EPROTO,
					"the snapshot does not begin with its list");
		else if (k == 0)
			rc = read_member(a, GG_SNAP_LIST_MAX, &list, &len, "list", err);
		else if (k == 1 && strcmp(name, "snapshot.gpus"))
			rc = gg_err_set(err, GG_EPROTO, "the snapshot has no GPU record");
		else if (k == 1)
			rc = read_member(a, GPUS_MAX, &s->gpus, &glen, "GPU record", err);
		else
			rc = spool_member(s, a, name, err);
	}
	archive_read_free(a);
	if (rc == 0 && !list)
		rc = gg_err_set(err, GG_EPROTO, "the snapshot is empty");
	if (rc == 0)
		rc = gg_snap_list_parse(list, len, &s->ents, &s->n, err);
	free(list);
	if (rc < 0)
		return rc;
	qsort(s->ents, s->n, sizeof *s->ents, ent_cmp);
	qsort(s->chg, s->nchg, sizeof *s->chg, chg_cmp);
	return 0;
}

/* ---- the base image -------------------------------------------------------------- */

static int open_base(struct snap *s, const char *base, struct gg_err *err)
{
	if (gg_sif_open(base, &s->sif, err) < 0)
		return err->code;
	const struct gg_sif_descr *d = gg_sif_primary(s->sif);
	if (!d)
		return gg_err_set(err, GG_EFAIL, "'%s' has no primary system partition", base);
	gg_part_file_init(&s->pf, s->sif, d);
	sqfs_file_t *f = &s->pf.base;
	sqfs_compressor_config_t cfg;
	if (sqfs_super_read(&s->sb, f) != 0 ||
	    sqfs_compressor_config_init(&cfg, (SQFS_COMPRESSOR)s->sb.compression_id,
					s->sb.block_size, SQFS_COMP_FLAG_UNCOMPRESS) != 0 ||
	    sqfs_compressor_create(&cfg, &s->cmp) != 0 ||
	    ((s->sb.flags & SQFS_FLAG_COMPRESSOR_OPTIONS) &&
	     s->cmp->read_options(s->cmp, f) != 0) ||
	    !(s->rd = sqfs_dir_reader_create(&s->sb, s->cmp, f, 0)) ||
	    !(s->dr = sqfs_data_reader_create(f, s->sb.block_size, s->cmp, 0)) ||
	    sqfs_data_reader_load_fragment_table(s->dr, &s->sb) != 0)
		return gg_err_set(err, GG_EFAIL, "'%s': its squashfs cannot be read", base);
	return 0;
}

/* ---- the feed -------------------------------------------------------------------- */

/* Left out as the node's tar --exclude leaves it out: the pattern matches the name
 * ("./a/b") or what follows any '/' of it; '*' matches '/' too. */
static int excluded(const struct snap *s, const char *name)
{
	for (size_t i = 0; i < s->nexcl; i++)
		for (const char *p = name; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
			if (fnmatch(s->excl[i], p, 0) == 0)
				return 1;
	return 0;
}

static int from_spool(struct snap *s, struct gg_feed *fz, const struct changed *c,
		      struct gg_err *err)
{
	for (uint64_t done = 0; done < c->size;) {
		size_t n = c->size - done < CHUNK ? (size_t)(c->size - done) : CHUNK;
		ssize_t r = pread(s->spool, s->buf, n, (off_t)(c->off + done));
		if (r <= 0)
			return gg_err_sys(err, GG_EIO, r < 0 ? errno : EIO, "reading the spool");
		if (gg_image_feed_data(fz, s->buf, (size_t)r, err) < 0)
			return err->code;
		done += (uint64_t)r;
	}
	return 0;
}

static int from_base(struct snap *s, struct gg_feed *fz, const char *path, uint64_t size,
		     int64_t mtime, struct gg_err *err)
{
	sqfs_inode_generic_t *in = NULL;
	sqfs_u64 have = 0;
	int rc = 0;
	if (sqfs_dir_reader_find_by_path(s->rd, NULL, path, &in) != 0 ||
	    (in->base.type != SQFS_INODE_FILE && in->base.type != SQFS_INODE_EXT_FILE) ||
	    sqfs_inode_get_file_size(in, &have) != 0 || have != size ||
	    (int64_t)in->base.mod_time != mtime)
		rc = gg_err_set(err, GG_EFAIL,
				"'%s' is in neither the snapshot nor (as it was) in the image the "
				"session was made from",
				path);
	for (uint64_t done = 0; rc == 0 && done < size;) {
		sqfs_u32 n = size - done < CHUNK ? (sqfs_u32)(size - done) : CHUNK;
		sqfs_s32 r = sqfs_data_reader_read(s->dr, in, done, s->buf, n);
		if (r <= 0)
			rc = gg_err_set(err, GG_EFAIL, "reading '%s' from the session's image",
					path);
		else if (gg_image_feed_data(fz, s->buf, (size_t)r, err) < 0)
			rc = err->code;
		done += r > 0 ? (uint64_t)r : 0;
	}
	free(in);
	return rc;
}

static int feed_data(struct snap *s, struct gg_feed *fz, struct gg_inode *ino,
		     const struct gg_entry *ge, struct gg_err *err)
{
	struct changed key = {.path = (char *)ge->path};
	const struct changed *c = bsearch(&key, s->chg, s->nchg, sizeof key, chg_cmp);
	if (c && c->size != ge->size)
		return gg_err_set(err, GG_EFAIL,
				  "the snapshot's '%s' is not the size its list says", ge->path);
	if (gg_image_feed_begin(fz, ino, ge->path, err) < 0)
		return err->code;
	int rc = c ? from_spool(s, fz, c, err)
		   : from_base(s, fz, ge->path, ge->size, ge->mtime, err);
	return rc < 0 ? rc : gg_image_feed_end(fz, err);
}

/* The first path the node's tar archived with inode ino (a hard link), or NULL. */
static const char *linked(struct snap *s, const struct gg_snap_entry *e, const char *path)
{
	if (e->type == 'd' || e->nlink < 2)
		return NULL;
	for (size_t i = 0; i < s->nlinks; i++)
		if (s->links[i].ino == e->ino)
			return s->links[i].path;
	struct link *nl = realloc(s->links, (s->nlinks + 1) * sizeof *nl);
	if (nl) {
		s->links = nl;
		s->links[s->nlinks++] = (struct link){.ino = e->ino, .path = path};
	}
	return NULL;
}

static uint32_t type_bits(char t)
{
	return t == 'd' ? S_IFDIR : t == 'l' ? S_IFLNK : t == 'p' ? S_IFIFO : S_IFREG;
}

static int feed_one(struct snap *s, struct gg_feed *fz, struct gg_snap_entry *e, struct gg_err *err)
{
	const char *path = e->path[1] ? e->path + 2 : "";
	if (e->type == 'b' || e->type == 'c')
		return gg_err_set(err, GG_EFAIL,
				  "the snapshot lists a device node ('%s'), which it cannot carry",
				  path);
	struct gg_entry ge = {.path = path,
			      .mode = type_bits(e->type) | e->mode,
			      .uid = e->uid,
			      .gid = e->gid,
			      .mtime = e->mtime,
			      .symlink = e->target,
			      .hardlink = linked(s, e, path),
			      .size = e->type == 'f' ? e->size : 0};
	struct gg_inode *data = NULL;
	if (gg_image_tree_apply(gg_image_feed_tree(fz), &ge, 0, 0, &data, err) < 0)
		return gg_err_prefix(err, "the snapshot");
	return data ? feed_data(s, fz, data, &ge, err) : 0;
}

static int snap_read(struct gg_feed *fz, void *ud, struct gg_err *err)
{
	struct snap *s = ud;
	const char *skip = NULL; /* an excluded directory: its entries follow it */
	size_t skiplen = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct gg_snap_entry *e = &s->ents[i];
		if (skip && !strncmp(e->path, skip, skiplen) && e->path[skiplen] == '/')
			continue;
		skip = NULL;
		if (i && excluded(s, e->path)) {
			if (e->type == 'd')
				skip = e->path, skiplen = strlen(e->path);
			continue;
		}
		if (e->type == 's') /* tar: "socket ignored" */
			continue;
		if (gg_image_check_cancel(fz, err) < 0 || feed_one(s, fz, e, err) < 0)
			return err->code;
	}
	return 0;
}

int gg_snapshot_freeze_files(const char *base, const char *snapshot, const char *const *excl,
			     size_t nexcl, const char *usage_json, const struct gg_freeze_opts *o,
			     const struct gg_image_callbacks *cb, struct gg_freeze_result *res,
			     struct gg_err *err)
{
	struct snap s = {.excl = excl, .nexcl = nexcl, .spool = -1};
	char *dir = strdup(o->output), *slash = dir ? strrchr(dir, '/') : NULL;
	const char *spool_dir = !dir ? "." : slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
	int rc = (s.buf = malloc(CHUNK)) ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = read_snapshot(&s, snapshot, spool_dir, err);
	if (rc == 0)
		rc = open_base(&s, base, err);
	char *gpus = NULL;
	if (rc == 0 && s.gpus && *s.gpus && gg_gpu_smi_provenance(s.gpus, &gpus, err) < 0)
		rc = gg_err_prefix(err, "the snapshot's GPU record");
	if (rc == 0) {
		struct gg_freeze_opts so = *o;
		so.source = "-";
		so.input_fd = -1;
		so.format = GG_IMAGE_TAR;
		so.gpus_json = gpus;
		struct gg_freeze_feeder fdr = {
			.read = snap_read, .ud = &s, .no_digest = 1, .usage_json = usage_json};
		rc = gg_image_freeze_fed(&so, cb, &fdr, res, err);
	}
	free(gpus);
	free(dir);
	snap_clear(&s);
	return rc;
}
