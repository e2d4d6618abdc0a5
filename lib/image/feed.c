/* The feed: what the sandbox readers (sandbox.c, tar.c, oci.c) hand their entries and
 * file data to. It keeps the tree being built, streams file data into the squashfs
 * writer (capturing the files the metadata needs and the ELF heads for the arch), polls
 * the cancel callback, counts warnings and reports progress. freeze.c makes one and
 * drives the readers with it; the feed calls neither of them. */
#include "image/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAPTURE_MAX        (1u << 20) /* metadata files kept for inspect-metadata.json */
#define MAX_WARNINGS_SHOWN 50
#define PROGRESS_NS        100000000L   /* at most ten progress calls a second */
#define HOLES_FREE         (1ull << 30) /* declared holes allowed whatever the data */
#define HOLES_PER_BYTE     256u         /* and per data byte */

struct gg_feed {
	const struct gg_image_callbacks *cb;
	int skip_unreadable;
	unsigned jobs;
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

void gg_image_warn(struct gg_feed *fz, const char *fmt, ...)
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

int gg_image_check_cancel(struct gg_feed *fz, struct gg_err *err)
{
	if (fz->cb && fz->cb->cancel && fz->cb->cancel(fz->cb->ud))
		return gg_err_set(err, GG_EINTR, "interrupted");
	return 0;
}

static void progress(struct gg_feed *fz, int force)
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

void gg_image_progress_totals(struct gg_feed *fz, uint64_t files, uint64_t bytes)
{
	fz->prog.files_total = files;
	fz->prog.bytes_total = bytes;
	progress(fz, 0);
}

void gg_image_progress_phase(struct gg_feed *fz, enum gg_image_phase phase)
{
	fz->prog.phase = phase;
	progress(fz, 1);
}

void gg_image_progress_input(struct gg_feed *fz, uint64_t bytes_consumed)
{
	fz->input_driven = 1;
	fz->prog.bytes_done = bytes_consumed;
	if (fz->prog.bytes_total && fz->prog.bytes_done > fz->prog.bytes_total)
		fz->prog.bytes_total = fz->prog.bytes_done;
	progress(fz, 0);
}

int gg_image_feed_excluded(const struct gg_feed *fz, dev_t dev, ino_t ino)
{
	for (int i = 0; i < fz->nexcl; i++)
		if (fz->excl_dev[i] == dev && fz->excl_ino[i] == ino)
			return 1;
	return 0;
}

struct gg_tree *gg_image_feed_tree(struct gg_feed *fz)
{
	return fz->tree;
}

int gg_image_feed_skip_unreadable(const struct gg_feed *fz)
{
	return fz->skip_unreadable;
}

unsigned gg_image_feed_jobs(const struct gg_feed *fz)
{
	return fz->jobs;
}

uint32_t gg_image_feed_block_size(const struct gg_feed *fz)
{
	return gg_sqfs_writer_block_size(fz->sq);
}

int gg_image_feed_begin(struct gg_feed *fz, struct gg_inode *ino, const char *path,
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

int gg_image_feed_data(struct gg_feed *fz, const void *data, size_t len, struct gg_err *err)
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

int gg_image_feed_zeros(struct gg_feed *fz, uint64_t n, struct gg_err *err)
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

int gg_image_feed_hole(struct gg_feed *fz, uint64_t n, struct gg_err *err)
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

int gg_image_feed_end(struct gg_feed *fz, struct gg_err *err)
{
	fz->cur = NULL;
	if (gg_sqfs_file_end(fz->sq, err) < 0)
		return err->code;
	fz->prog.files_done++;
	progress(fz, 0);
	return 0;
}

int gg_image_feed_same(struct gg_feed *fz, struct gg_inode *ino, struct gg_inode *same,
		       uint64_t size, struct gg_err *err)
{
	if (gg_image_check_cancel(fz, err) < 0)
		return err->code;
	if (gg_sqfs_file_same(fz->sq, ino, same, err) < 0)
		return err->code;
	ino->fed = 1;
	memcpy(ino->elf, same->elf, sizeof ino->elf);
	fz->data_in += size;
	if (!fz->input_driven)
		fz->prog.bytes_done += size;
	fz->prog.files_done++;
	progress(fz, 0);
	return 0;
}

/* ---- the driver's side (freeze.c) --------------------------------------------------- */

struct gg_feed *gg_image_feed_new(const struct gg_image_callbacks *cb, int skip_unreadable)
{
	struct gg_feed *fz = calloc(1, sizeof *fz);
	if (!fz)
		return NULL;
	fz->cb = cb;
	fz->skip_unreadable = skip_unreadable;
	clock_gettime(CLOCK_MONOTONIC, &fz->last);
	fz->last.tv_sec -= 1;
	fz->prog.phase = GG_IMAGE_PHASE_SCAN;
	return fz;
}

void gg_image_feed_free(struct gg_feed *fz)
{
	free(fz);
}

void gg_image_feed_exclude(struct gg_feed *fz, dev_t dev, ino_t ino)
{
	if (fz->nexcl >= (int)(sizeof fz->excl_dev / sizeof fz->excl_dev[0]))
		return;
	fz->excl_dev[fz->nexcl] = dev;
	fz->excl_ino[fz->nexcl++] = ino;
}

void gg_image_feed_attach(struct gg_feed *fz, struct gg_tree *t, struct gg_sqfs_writer *sq)
{
	fz->tree = t;
	fz->sq = sq;
}

void gg_image_feed_set_jobs(struct gg_feed *fz, unsigned jobs)
{
	fz->jobs = jobs;
}

void gg_image_progress_source_size(struct gg_feed *fz, uint64_t bytes)
{
	fz->prog.bytes_total = bytes;
}

unsigned gg_image_feed_finish(struct gg_feed *fz, uint64_t image_size)
{
	if (fz->warnings > MAX_WARNINGS_SHOWN && fz->cb && fz->cb->warn) {
		char msg[128];
		snprintf(msg, sizeof msg, "%u more warnings not shown",
			 fz->warnings - MAX_WARNINGS_SHOWN);
		fz->cb->warn(fz->cb->ud, msg);
	}
	fz->prog.phase = GG_IMAGE_PHASE_DONE;
	fz->prog.bytes_out = image_size;
	if (fz->cb && fz->cb->progress)
		fz->cb->progress(fz->cb->ud, &fz->prog);
	return fz->warnings;
}
