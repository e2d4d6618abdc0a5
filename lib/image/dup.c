/* Copies of files in a directory source: a file of one block or more whose bytes are
 * those of a file fed before it shares that file's data in the image and is not
 * compressed again.
 *
 * libsquashfs finds such copies as well, but only after compressing them: it compares a
 * file's compressed blocks with those already written and drops the new ones. A sandbox
 * holding the same 1 GB library twice (a CUDA runtime in two Python packages) cost freeze
 * two gigabytes of deflate for one in the image. Here, a file whose size no other file in
 * the tree has is fed as before, at no cost. One that shares its size is compared, byte
 * for byte, with the first DUP_REPS files of that size fed before it (read again from the
 * tree: first and last 4 KiB, then the whole); equal, it takes that file's data, which
 * is what libsquashfs would have made of it, so the image is the same.
 *
 * What was fed of the earlier file is what its bytes are now only if it has not changed
 * since: its identity, size, mtime and ctime (which every write moves) must be the ones
 * its descriptor had when it was fed, else it is not used. Sparse files (whose holes a
 * compare would read as zeros, terabytes of them) and files smaller than a block (whose
 * tails libsquashfs compares before compressing anyway) are left out. */
#include "image/internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DUP_REPS  2            /* files of one size a new one is compared with */
#define DUP_EDGE  4096u        /* first and last bytes compared first */
#define DUP_CHUNK (256u << 10) /* then the whole, this much at a time from each */

struct rep { /* its identity is its inode's: the one the scan found, checked at the open */
	struct gg_node *node;
	struct timespec mtime, ctime;
};

struct cand {
	uint64_t size;
	unsigned n;
	struct rep r[DUP_REPS];
};

struct gg_dups {
	struct cand *c; /* sorted by size: each size at least two files have */
	size_t n;
	uint64_t min;
	unsigned char *a, *b; /* DUP_CHUNK each, made at the first compare */
};

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

struct gg_dups *gg_image_dups_new(struct gg_node *const *nodes, size_t n, uint64_t min)
{
	uint64_t *sz = malloc((n ? n : 1) * sizeof *sz);
	struct gg_dups *d = calloc(1, sizeof *d);
	size_t m = 0;
	if (!sz || !d)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (nodes[i]->inode->size >= min)
			sz[m++] = nodes[i]->inode->size;
	qsort(sz, m, sizeof *sz, u64_cmp);
	size_t groups = 0;
	for (size_t i = 1; i < m; i++)
		groups += sz[i] == sz[i - 1] && (i == 1 || sz[i] != sz[i - 2]);
	if (groups && !(d->c = calloc(groups, sizeof *d->c)))
		goto fail;
	for (size_t i = 1; i < m; i++)
		if (sz[i] == sz[i - 1] && (i == 1 || sz[i] != sz[i - 2]))
			d->c[d->n++].size = sz[i];
	free(sz);
	d->min = min;
	return d;
fail:
	free(sz);
	free(d);
	return NULL;
}

void gg_image_dups_free(struct gg_dups *d)
{
	if (!d)
		return;
	free(d->c);
	free(d->a);
	free(d->b);
	free(d);
}

static struct cand *cand_find(struct gg_dups *d, uint64_t size)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->c[mid].size < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->n && d->c[lo].size == size ? &d->c[lo] : NULL;
}

static int ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* len bytes at off equal in both (a failed or short read: not equal). */
static int range_eq(struct gg_dups *d, int fa, int fb, uint64_t off, size_t len)
{
	return gg_image_pread_all(fa, d->a, len, (int64_t)off) == 0 &&
	       gg_image_pread_all(fb, d->b, len, (int64_t)off) == 0 && memcmp(d->a, d->b, len) == 0;
}

/* 1 when the size bytes of fa and fb are equal, 0 when not, <0 when cancelled. */
static int same_bytes(struct gg_dups *d, int fa, int fb, uint64_t size, struct gg_feed *fz,
		      struct gg_err *err)
{
	if (!d->a && (!(d->a = malloc(DUP_CHUNK)) || !(d->b = malloc(DUP_CHUNK))))
		return 0; /* out of memory: just not deduplicated */
	if (!range_eq(d, fa, fb, 0, DUP_EDGE) || !range_eq(d, fa, fb, size - DUP_EDGE, DUP_EDGE))
		return 0;
	for (uint64_t off = 0; off < size; off += DUP_CHUNK) {
		if (gg_image_check_cancel(fz, err) < 0)
			return err->code;
		size_t len = size - off < DUP_CHUNK ? (size_t)(size - off) : DUP_CHUNK;
		if (!range_eq(d, fa, fb, off, len))
			return 0;
	}
	return 1;
}

/* The representative's file as it was fed, opened again: a descriptor, or -1. */
static int open_rep(const struct rep *r, uint64_t size, int rootfd, int use_openat2)
{
	char *rel = gg_image_node_path(r->node);
	int fd = rel ? gg_image_open_beneath(rootfd, rel, O_RDONLY | O_CLOEXEC, use_openat2) : -1;
	free(rel);
	struct stat st;
	const struct gg_inode *ino = r->node->inode;
	if (fd >= 0 && (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != ino->src_dev ||
			(uint64_t)st.st_ino != ino->src_ino || (uint64_t)st.st_size != size ||
			!ts_eq(st.st_mtim, r->mtime) || !ts_eq(st.st_ctim, r->ctime))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int gg_image_dups_find(struct gg_dups *d, const struct gg_dup_file *f, struct gg_feed *fz,
		       struct gg_inode **same, struct gg_err *err)
{
	*same = NULL;
	const struct stat *st = f->st;
	uint64_t size = (uint64_t)st->st_size;
	struct cand *c = d && size >= d->min && size >= DUP_EDGE ? cand_find(d, size) : NULL;
	if (!c || (uint64_t)st->st_blocks * 512 < size)
		return 0;
	for (unsigned k = 0; k < c->n; k++) {
		int fa = open_rep(&c->r[k], size, f->rootfd, f->use_openat2);
		if (fa < 0)
			continue;
		int rc = same_bytes(d, fa, f->fd, size, fz, err);
		close(fa);
		if (rc < 0)
			return rc;
		if (rc) {
			*same = c->r[k].node->inode;
			return 0;
		}
	}
	if (c->n < DUP_REPS)
		c->r[c->n++] = (struct rep){f->node, st->st_mtim, st->st_ctim};
	return 0;
}
