/* gg_image_freeze: source -> tree + file data streamed into the squashfs written in place
 * at the partition offset of a temp SIF next to the output -> metadata objects ->
 * header and descriptors -> fsync -> rename. Any failure or cancel removes the temp. */
#include "image/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#ifndef GG_VERSION
#define GG_VERSION "unknown"
#endif

#define CAPTURE_MAX        (1u << 20) /* metadata files kept for inspect-metadata.json */
#define MAX_WARNINGS_SHOWN 50
#define PROGRESS_NS        100000000L   /* at most ten progress calls a second */
#define HOLES_FREE         (1ull << 30) /* declared holes allowed whatever the data */
#define HOLES_PER_BYTE     256u         /* and per data byte */

struct gg_freeze {
	const struct gg_freeze_opts *o;
	const struct gg_image_callbacks *cb;
	struct gg_tree *tree;
	struct gg_sqfs_writer *sq;
	struct gg_image_progress prog;
	int input_driven; /* bytes_done counts source bytes (archives), not file data */
	struct timespec last;
	unsigned warnings;
	/* files the directory reader must not take in: our temp file, the old output */
	dev_t excl_dev[2];
	ino_t excl_ino[2];
	int nexcl;
	/* the file being fed */
	struct gg_inode *cur;
	unsigned char head[20];
	size_t headlen;
	int capturing;
	int zeroing;             /* in gg_image_feed_zeros: not data of the source */
	uint64_t data_in, holes; /* bytes of data and of declared holes fed */
};

void gg_image_warn(struct gg_freeze *fz, const char *fmt, ...)
{
	fz->warnings++;
	if (!fz->cb || !fz->cb->warn || fz->warnings > MAX_WARNINGS_SHOWN)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fz->cb->warn(fz->cb->ud, msg);
}

int gg_image_check_cancel(struct gg_freeze *fz, struct gg_err *err)
{
	if (fz->cb && fz->cb->cancel && fz->cb->cancel(fz->cb->ud))
		return gg_err_set(err, GG_EINTR, "interrupted");
	return 0;
}

static void progress(struct gg_freeze *fz, int force)
{
	if (!fz->cb || !fz->cb->progress)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ns = (now.tv_sec - fz->last.tv_sec) * 1000000000L + (now.tv_nsec - fz->last.tv_nsec);
	if (!force && ns < PROGRESS_NS)
		return;
	fz->last = now;
	if (fz->sq)
		fz->prog.bytes_out = gg_sqfs_writer_size(fz->sq);
	fz->cb->progress(fz->cb->ud, &fz->prog);
}

void gg_image_progress_totals(struct gg_freeze *fz, uint64_t files, uint64_t bytes)
{
	fz->prog.files_total = files;
	fz->prog.bytes_total = bytes;
	progress(fz, 0);
}

void gg_image_progress_phase(struct gg_freeze *fz, enum gg_image_phase phase)
{
	fz->prog.phase = phase;
	progress(fz, 1);
}

void gg_image_progress_input(struct gg_freeze *fz, uint64_t bytes_consumed)
{
	fz->input_driven = 1;
	fz->prog.bytes_done = bytes_consumed;
	if (fz->prog.bytes_total && fz->prog.bytes_done > fz->prog.bytes_total)
		fz->prog.bytes_total = fz->prog.bytes_done;
	progress(fz, 0);
}

int gg_image_freeze_excluded(const struct gg_freeze *fz, dev_t dev, ino_t ino)
{
	for (int i = 0; i < fz->nexcl; i++)
		if (fz->excl_dev[i] == dev && fz->excl_ino[i] == ino)
			return 1;
	return 0;
}

struct gg_tree *gg_image_freeze_tree(struct gg_freeze *fz)
{
	return fz->tree;
}

int gg_image_freeze_skip_unreadable(const struct gg_freeze *fz)
{
	return fz->o->skip_unreadable;
}

int gg_image_feed_begin(struct gg_freeze *fz, struct gg_inode *ino, const char *path,
			struct gg_err *err)
{
	if (gg_image_check_cancel(fz, err) < 0)
		return err->code;
	if (gg_sqfs_file_begin(fz->sq, ino, err) < 0)
		return gg_err_prefix(err, "'%s'", path);
	fz->cur = ino;
	fz->headlen = 0;
	free(ino->capture);
	ino->capture = NULL;
	ino->capture_len = 0;
	ino->elf[0] = '\0';
	fz->capturing = gg_image_meta_wanted(path);
	if (fz->capturing && !(ino->capture = calloc(1, 1)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ino->fed = 1;
	return 0;
}

int gg_image_feed_data(struct gg_freeze *fz, const void *data, size_t len, struct gg_err *err)
{
	struct gg_inode *ino = fz->cur;
	if (!len)
		return 0;
	if (fz->headlen < sizeof fz->head) {
		size_t n = sizeof fz->head - fz->headlen;
		if (n > len)
			n = len;
		memcpy(fz->head + fz->headlen, data, n);
		fz->headlen += n;
		if (fz->headlen == sizeof fz->head) {
			const char *a = gg_image_elf_arch(fz->head, fz->headlen);
			if (a)
				memcpy(ino->elf, a, 3);
		}
	}
	if (fz->capturing) {
		if (ino->capture_len + len > CAPTURE_MAX) {
			free(ino->capture);
			ino->capture = NULL;
			ino->capture_len = 0;
			fz->capturing = 0;
		} else {
			char *nc = realloc(ino->capture, ino->capture_len + len + 1);
			if (!nc)
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			memcpy(nc + ino->capture_len, data, len);
			ino->capture = nc;
			ino->capture_len += len;
			nc[ino->capture_len] = '\0';
		}
	}
	if (gg_sqfs_file_append(fz->sq, data, len, err) < 0)
		return err->code;
	if (!fz->zeroing)
		fz->data_in += len;
	if (!fz->input_driven)
		fz->prog.bytes_done += len;
	if (gg_image_check_cancel(fz, err) < 0)
		return err->code;
	progress(fz, 0);
	return 0;
}

int gg_image_feed_zeros(struct gg_freeze *fz, uint64_t n, struct gg_err *err)
{
	static const unsigned char zero[65536];
	int rc = 0;
	fz->zeroing = 1;
	while (n && !rc) {
		size_t k = n > sizeof zero ? sizeof zero : (size_t)n;
		rc = gg_image_feed_data(fz, zero, k, err);
		n -= k;
	}
	fz->zeroing = 0;
	return rc;
}

int gg_image_feed_hole(struct gg_freeze *fz, uint64_t n, struct gg_err *err)
{
	uint64_t allowed = HOLES_FREE + HOLES_PER_BYTE * fz->data_in;
	if (n > allowed || fz->holes > allowed - n) {
		char a[32], d[32];
		gg_size_format(fz->holes + n, a, sizeof a);
		gg_size_format(fz->data_in, d, sizeof d);
		return gg_err_set(err, GG_EFAIL,
				  "sparse file holes of %s for %s of data (at most 1 GiB plus %u "
				  "times the data are allowed)",
				  a, d, HOLES_PER_BYTE);
	}
	fz->holes += n;
	return gg_image_feed_zeros(fz, n, err);
}

int gg_image_feed_end(struct gg_freeze *fz, struct gg_err *err)
{
	fz->cur = NULL;
	if (gg_sqfs_file_end(fz->sq, err) < 0)
		return err->code;
	fz->prog.files_done++;
	progress(fz, 0);
	return 0;
}

/* ---- helpers --------------------------------------------------------------------- */

static unsigned ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
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
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST)
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)", out);
	if (errno != EINVAL && errno != ENOSYS)
		return gg_err_sys(err, GG_EIO, errno, "renaming '%s' to '%s'", tmp, out);
	/* a file system without RENAME_NOREPLACE: link() refuses to replace too */
	if (link(tmp, out) < 0) {
		if (errno == EEXIST)
			return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)",
					  out);
		return gg_err_sys(err, GG_EIO, errno, "renaming '%s' to '%s'", tmp, out);
	}
	unlink(tmp);
	return 0;
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

int gg_image_freeze(const struct gg_freeze_opts *o, const struct gg_image_callbacks *cb,
		    struct gg_freeze_result *res, struct gg_err *err)
{
	struct gg_freeze_result dummy;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof *res);
	if (check_opts(o, err) < 0)
		return err->code;

	struct gg_freeze fz;
	memset(&fz, 0, sizeof fz);
	fz.o = o;
	fz.cb = cb;
	clock_gettime(CLOCK_MONOTONIC, &fz.last);
	fz.last.tv_sec -= 1;
	fz.prog.phase = GG_IMAGE_PHASE_SCAN;

	int from_stdin = strcmp(o->source, "-") == 0;
	enum gg_image_format fmt = o->format;
	char *source_abs = NULL, *tmp = NULL, *digest = NULL;
	char *deffile = NULL, *inspect = NULL, *provenance = NULL;
	struct gg_oci_info oci;
	memset(&oci, 0, sizeof oci);
	struct gg_sif_writer *sw = NULL;
	int fd = -1, rc;

	if (from_stdin) {
		if (fmt == GG_IMAGE_DIR || fmt == GG_IMAGE_OCI)
			return gg_err_set(err, GG_EUSAGE,
					  "standard input can only be a tar stream (save an OCI or "
					  "docker archive to a file first)");
		fmt = GG_IMAGE_TAR;
		source_abs = strdup("stdin");
	} else {
		struct stat st;
		if (stat(o->source, &st) < 0)
			return gg_err_sys(err, GG_EFAIL, errno, "'%s'", o->source);
		if (fmt == GG_IMAGE_AUTO && gg_image_detect(o->source, &fmt, err) < 0)
			return err->code;
		if (fmt == GG_IMAGE_DIR && !S_ISDIR(st.st_mode))
			return gg_err_set(err, GG_EUSAGE, "'%s' is not a directory", o->source);
		if (fmt == GG_IMAGE_TAR && S_ISDIR(st.st_mode))
			return gg_err_set(err, GG_EUSAGE, "'%s' is a directory, not a tar archive",
					  o->source);
		if (access(o->source, R_OK) < 0)
			return gg_err_sys(err, GG_EFAIL, errno, "'%s'", o->source);
		source_abs = realpath(o->source, NULL);
	}
	res->format = fmt;
	if (!source_abs)
		return gg_err_set(err, GG_ENOMEM, "out of memory");

	struct stat ost;
	int out_exists = stat(o->output, &ost) == 0;
	if (out_exists && S_ISDIR(ost.st_mode)) {
		free(source_abs);
		return gg_err_set(err, GG_EUSAGE, "'%s' is a directory", o->output);
	}
	if (out_exists && !o->force) {
		free(source_abs);
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)",
				  o->output);
	}

	tmp = gg_strdup_printf("%s.tmp.XXXXXX", o->output);
	if (!tmp) {
		free(source_abs);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	/* An unnamed file (O_TMPFILE) gets a name only once it is complete, so even
	 * a SIGKILL leaves nothing behind; file systems without it get a named temp
	 * file, removed on every failure we live through. */
	int anon = 0;
	{
		char *dir = strdup(o->output);
		fd = dir ? open(dirname(dir), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
		free(dir);
		if (fd >= 0) {
			anon = 1;
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			snprintf(tmp + strlen(tmp) - 6, 7, "%06lx",
				 (unsigned long)(now.tv_nsec ^ getpid()) & 0xffffff);
		} else {
			fd = mkostemp(tmp, O_CLOEXEC);
		}
	}
	if (fd < 0) {
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", o->output);
		free(tmp);
		free(source_abs);
		return rc;
	}
	/* from here on every failure goes through "fail", which removes tmp */
	fchmod(fd, 0600);
	struct stat tst;
	if (fstat(fd, &tst) == 0) {
		fz.excl_dev[fz.nexcl] = tst.st_dev;
		fz.excl_ino[fz.nexcl++] = tst.st_ino;
	}
	if (out_exists) {
		fz.excl_dev[fz.nexcl] = ost.st_dev;
		fz.excl_ino[fz.nexcl++] = ost.st_ino;
	}

	int reproducible = !o->no_reproducible;
	struct gg_sif_writer_opts so;
	memset(&so, 0, sizeof so);
	so.deterministic = reproducible;
	so.launch_script = 1;
	so.now = (int64_t)time(NULL);
	if (!reproducible) {
		if (getrandom(so.id, sizeof so.id, 0) != (ssize_t)sizeof so.id) {
			gg_err_sys(err, GG_EFAIL, errno, "getting random bytes for the image UUID");
			goto fail;
		}
		so.id[6] = (uint8_t)((so.id[6] & 0x0F) | 0x40);
		so.id[8] = (uint8_t)((so.id[8] & 0x3F) | 0x80);
	}
	if (gg_sif_writer_new(fd, tmp, &so, &sw, err) < 0)
		goto fail;
	int64_t part_off = gg_sif_writer_data_start(sw);

	struct gg_sqfs_opts qo = {
		.comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP,
		.level = o->level,
		.jobs = o->jobs ? o->jobs : ncpus(),
		.block_size = 128 * 1024,
		.cancel = cb ? cb->cancel : NULL,
		.cancel_ud = cb ? cb->ud : NULL,
	};
	if (gg_sqfs_writer_new(fd, tmp, (uint64_t)part_off, &qo, &fz.sq, err) < 0)
		goto fail;
	if (!(fz.tree = gg_image_tree_new())) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		goto fail;
	}

	fz.prog.phase = fmt == GG_IMAGE_DIR ? GG_IMAGE_PHASE_SCAN : GG_IMAGE_PHASE_DATA;
	progress(&fz, 1);
	switch (fmt) {
	case GG_IMAGE_DIR: rc = gg_image_read_dir(&fz, o->source, err); break;
	case GG_IMAGE_TAR:
		if (from_stdin) {
			rc = gg_image_read_tar(&fz, o->input_fd, "standard input", &digest, err);
		} else {
			int sfd = open(o->source, O_RDONLY | O_CLOEXEC);
			if (sfd < 0) {
				rc = gg_err_sys(err, GG_EFAIL, errno, "opening '%s'", o->source);
				break;
			}
			struct stat st;
			if (fstat(sfd, &st) == 0 && S_ISREG(st.st_mode))
				fz.prog.bytes_total = (uint64_t)st.st_size;
			rc = gg_image_read_tar(&fz, sfd, o->source, &digest, err);
			close(sfd);
		}
		break;
	case GG_IMAGE_OCI: rc = gg_image_read_oci(&fz, o->source, &oci, err); break;
	default: rc = gg_err_set(err, GG_EUSAGE, "unknown source format"); break;
	}
	if (rc < 0)
		goto fail;
	if (gg_image_check_cancel(&fz, err) < 0)
		goto fail;

	/* times: reproducible images take SOURCE_DATE_EPOCH (clamping mtimes to it) or the
	 * newest mtime of the tree; others take now */
	fz.prog.phase = GG_IMAGE_PHASE_META;
	progress(&fz, 1);
	int64_t build_time, clamp = -1;
	if (reproducible) {
		if (o->have_source_date_epoch) {
			build_time = o->source_date_epoch;
			clamp = o->source_date_epoch;
		} else {
			build_time = newest_mtime(fz.tree->root);
		}
	} else {
		build_time = so.now;
	}
	if (build_time < 0)
		build_time = 0;
	if (build_time > (int64_t)UINT32_MAX)
		build_time = UINT32_MAX;
	if (!fz.tree->root_set)
		fz.tree->root->inode->mtime = build_time; /* an archive without a "./" entry */
	uint64_t sqfs_size = 0;
	if (gg_sqfs_writer_finish(fz.sq, fz.tree, (uint32_t)build_time, clamp, &sqfs_size, res,
				  err) < 0)
		goto fail;
	if (gg_image_check_cancel(&fz, err) < 0)
		goto fail;

	const char *arch = gg_image_tree_arch(fz.tree);
	struct gg_meta_in mi = {
		.tree = fz.tree,
		.source = from_stdin ? "-" : o->source,
		.source_abs = source_abs,
		.format = fmt,
		.source_digest = fmt == GG_IMAGE_OCI ? oci.digest : digest,
		.oci = fmt == GG_IMAGE_OCI ? &oci : NULL,
		.arch = arch,
		.build_time = build_time,
		.reproducible = reproducible,
		.labels = o->labels,
		.nlabels = o->nlabels,
		.gpus_json = o->gpus_json,
		.tool_version = o->tool_version ? o->tool_version : GG_VERSION,
		.comp = qo.comp,
		.level = o->level                        ? o->level
			 : qo.comp == GG_IMAGE_COMP_GZIP ? 6
			 : qo.comp == GG_IMAGE_COMP_ZSTD ? 15
			 : qo.comp == GG_IMAGE_COMP_XZ   ? 6
							 : 0,
		.block_size = qo.block_size,
	};
	if (gg_image_meta_build(&mi, &deffile, &inspect, &provenance, err) < 0)
		goto fail;

	/* IDs in apptainer's order (definition, JSON objects sorted by name, partition),
	 * data in file order: the partition is already in place at part_off */
	uint32_t id = 1;
	uint32_t nids = 3 + (oci.config_json ? 1 : 0) + 1;
	if (gg_sif_writer_add_partition(sw, nids, 1, part_off, (int64_t)sqfs_size,
					GG_SIF_FS_SQUASHFS, GG_SIF_PART_PRIMSYS, arch, err) < 0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_DEFFILE, 1, NULL, deffile, strlen(deffile), err) <
		    0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "gridgpu-provenance.json",
			      provenance, strlen(provenance), err) < 0 ||
	    gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "inspect-metadata.json", inspect,
			      strlen(inspect), err) < 0)
		goto fail;
	if (oci.config_json &&
	    gg_sif_writer_add(sw, id++, GG_SIF_GENERIC_JSON, 1, "oci-config.json", oci.config_json,
			      strlen(oci.config_json), err) < 0)
		goto fail;
	int64_t image_size = 0;
	if (gg_sif_writer_finish(sw, &image_size, err) < 0)
		goto fail;
	if (fsync(fd) < 0) {
		gg_err_sys(err, GG_EIO, errno, "writing '%s'", tmp);
		goto fail;
	}
	if (fchmod(fd, 0755) < 0) {
		gg_err_sys(err, GG_EIO, errno, "setting the mode of '%s'", tmp);
		goto fail;
	}
	if (anon) {
		char proc[64];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0) {
			gg_err_sys(err, GG_EIO, errno, "writing '%s'", tmp);
			goto fail;
		}
	}
	gg_sqfs_writer_free(fz.sq);
	fz.sq = NULL;
	if (close(fd) < 0) {
		fd = -1;
		gg_err_sys(err, GG_EIO, errno, "writing '%s'", tmp);
		goto fail;
	}
	fd = -1;
	if (gg_image_check_cancel(&fz, err) < 0)
		goto fail;
	if (install(tmp, o->output, o->force, err) < 0)
		goto fail;
	gg_fsync_dir(o->output); /* best effort: the rename is done */

	res->squashfs_size = sqfs_size;
	res->image_size = (uint64_t)image_size;
	snprintf(res->arch, sizeof res->arch, "%s", gg_image_arch_name(arch));
	res->build_time = build_time;
	res->warnings = fz.warnings;
	if (fz.warnings > MAX_WARNINGS_SHOWN && cb && cb->warn) {
		char msg[128];
		snprintf(msg, sizeof msg, "%u more warnings not shown",
			 fz.warnings - MAX_WARNINGS_SHOWN);
		cb->warn(cb->ud, msg);
	}
	fz.prog.phase = GG_IMAGE_PHASE_DONE;
	fz.prog.bytes_out = (uint64_t)image_size;
	if (cb && cb->progress)
		cb->progress(cb->ud, &fz.prog);
	rc = 0;
	goto out;
fail:
	rc = err->code ? err->code : GG_EFAIL;
	gg_sqfs_writer_free(fz.sq); /* joins the compressor threads before the unlink */
	fz.sq = NULL;
	if (fd >= 0)
		close(fd);
	fd = -1;
	unlink(tmp);
out:
	gg_sqfs_writer_free(fz.sq);
	gg_sif_writer_free(sw);
	gg_image_tree_free(fz.tree);
	gg_image_oci_info_clear(&oci);
	free(deffile);
	free(inspect);
	free(provenance);
	free(digest);
	free(tmp);
	free(source_abs);
	return rc;
}
