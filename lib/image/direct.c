/* Direct writes: the squashfs goes to the disk with O_DIRECT, from two threads of its
 * own, instead of through the page cache.
 *
 * The writer's thread copied every block into the page cache (pwrite), and on the
 * compressed-files tree that copy was half of its time: each page is new to the page
 * cache, allocated, charged, and (in a VM) often first touched by the guest, about
 * 0.2 - 0.6 s of system time for 487 MB, and the compressors waited on the writer
 * meanwhile. Now the writer copies each block into one of a few aligned buffers it
 * keeps (memory already touched), and the threads hand full buffers to the disk with
 * O_DIRECT: no page cache, no writeback left for the final fsync. On this machine dd
 * writes 2.3 GB/s with O_DIRECT in 1 MiB pieces, 0.41 GB/s through the page cache with
 * an fsync.
 *
 * What is written stays readable: reads (libsquashfs reads blocks back to compare
 * duplicates) come from the buffers for what is not on the disk yet, and from the file
 * once a thread has written it. Writes behind the buffers (the superblock at the end,
 * after a truncate) wait for the threads and go through the page cache, as before.
 * Where O_DIRECT is refused (the file system does not do it, or needs larger
 * alignment), everything goes through the page cache as before, from the first
 * refusal on: the bytes are the same either way. */
#include "image/internal.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIRECT_ALIGN 4096u
#define DIRECT_CHUNK (1u << 20) /* a buffer: what a thread writes in one call */
/* The one being filled and eleven queued: 12 MiB. The disk here takes a 1 MiB write in
 * about 2.5 ms, but now and then much longer (while it flushes for an fdatasync): with
 * 6 the writer's thread then waited for a free buffer and the compressors behind it.
 * Medians of alternated runs: compressed files 1.21 -> 1.03 s (5 runs), three large
 * files 2.12 -> 1.98 s (3); 20 measured as 12; peak RSS 6 MiB more. */
#define DIRECT_BUFS 12
/* Writes in flight. 1 to 4 measured the same here (this VM's disk gives about 1 GB/s
 * while both cores compress); 2 so that a disk with more queues is not left waiting on
 * one call at a time. */
#define DIRECT_THREADS 2
/* Space reserved ahead of the writes (fallocate, the file's size moved with it). ext4
 * writes O_DIRECT past the end of a file, or into blocks not allocated yet, one at a
 * time under the inode's lock: the threads took turns. Into reserved blocks inside the
 * file's size they write side by side. What is left over is cut off at the flush. */
#define DIRECT_RESERVE (64u << 20)

struct chunk {
	unsigned char *buf;
	uint64_t at; /* absolute file offset of buf[0], DIRECT_ALIGN-aligned */
	int taken;   /* queued: a thread is writing it */
};

struct gg_direct {
	int fd;  /* the caller's: reads, and writes behind the buffers */
	int dfd; /* the same file opened O_DIRECT */
	pthread_t th[DIRECT_THREADS];
	unsigned nthreads;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a chunk queued, one written, or stop */
	struct chunk bufs[DIRECT_BUFS];
	struct chunk *queue[DIRECT_BUFS]; /* full chunks, queued or being written */
	size_t nqueued;
	struct chunk *free_[DIRECT_BUFS];
	size_t nfree;
	struct chunk *cur; /* being filled: [cur->at, cur->at + len) */
	size_t len;
	uint64_t end;   /* the file's size as written through us */
	uint64_t alloc; /* reserved (and the size extended) up to here */
	int reserve;    /* 0 once fallocate failed, or where it gains nothing */
	int direct;     /* 0 once O_DIRECT was refused: the threads write buffered */
	int err;        /* errno of the first failed write */
	int stop;
	uint64_t unsynced; /* bytes the threads wrote since the last fdatasync began */
	int syncing;       /* a thread is in fdatasync */
	uint64_t ndirect;  /* chunks written with O_DIRECT, for the tests */
	uint64_t nsyncs;   /* fdatasyncs the threads made, for the tests */
};

static int write_chunk(struct gg_direct *d, const struct chunk *c, int direct)
{
	if (direct) {
		ssize_t n = pwrite(d->dfd, c->buf, DIRECT_CHUNK, (off_t)c->at);
		if (n == (ssize_t)DIRECT_CHUNK)
			return 1;
		if (n > 0) /* short (a limit, or the disk full): the rest says why */
			return gg_image_pwrite_all(d->fd, c->buf + n, DIRECT_CHUNK - (size_t)n,
						   (int64_t)c->at + n) < 0
				       ? -errno
				       : 1;
		if (errno != EINVAL)
			return -errno;
	}
	/* refused (EINVAL: alignment, or not supported here): through the page cache */
	return gg_image_pwrite_all(d->fd, c->buf, DIRECT_CHUNK, (int64_t)c->at) < 0 ? -errno : 0;
}

/* The oldest queued chunk no thread is writing, or NULL. */
static struct chunk *next_chunk(struct gg_direct *d)
{
	struct chunk *c = NULL;
	for (size_t k = 0; k < d->nqueued; k++)
		if (!d->queue[k]->taken && (!c || d->queue[k]->at < c->at))
			c = d->queue[k];
	return c;
}

static void done_chunk(struct gg_direct *d, struct chunk *c)
{
	for (size_t k = 0; k < d->nqueued; k++)
		if (d->queue[k] == c) {
			d->queue[k] = d->queue[--d->nqueued];
			break;
		}
	c->taken = 0;
	d->free_[d->nfree++] = c;
	pthread_cond_broadcast(&d->cv);
}

/* Whether this thread should make an fdatasync now (mu held). Data written with
 * O_DIRECT is on the disk, but the disk (here a virtual one) may hold it in a cache
 * that only a flush empties, and the ext4 extents it went into are marked written only
 * at a journal commit: both happen at the first fsync, and the final fsync of the
 * image, with all of it left to do, took 0.22-0.29 s after 430-500 MB. A thread makes
 * the fdatasync every GG_DIRECT_SYNC bytes, while the other writes on and the compressors
 * compress, so the final fsync finds at most that much left. Best effort: its errors
 * are not lost, since they are recorded against the file and the final fsync, on the
 * caller's own open file, reports them. */
static int sync_due(struct gg_direct *d)
{
	if (d->syncing || d->unsynced < GG_DIRECT_SYNC || !d->direct)
		return 0;
	d->syncing = 1;
	d->unsynced = 0;
	return 1;
}

static void *direct_main(void *arg)
{
	struct gg_direct *d = arg;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct chunk *c;
		while (!(c = next_chunk(d)) && !d->stop)
			pthread_cond_wait(&d->cv, &d->mu);
		if (!c)
			break;
		c->taken = 1;
		int direct = d->direct, failed_ = d->err != 0;
		pthread_mutex_unlock(&d->mu);
		int rc = failed_ ? 0 : write_chunk(d, c, direct);
		pthread_mutex_lock(&d->mu);
		if (rc < 0 && !d->err)
			d->err = -rc;
		if (rc == 0 && direct)
			d->direct = 0;
		d->ndirect += rc == 1;
		d->unsynced += rc == 1 ? DIRECT_CHUNK : 0;
		done_chunk(d, c);
		if (sync_due(d)) {
			pthread_mutex_unlock(&d->mu);
			fdatasync(d->dfd);
			pthread_mutex_lock(&d->mu);
			d->syncing = 0;
			d->nsyncs++;
			pthread_cond_broadcast(&d->cv);
		}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

struct gg_direct *gg_direct_new(int fd, uint64_t at)
{
	int fl = fcntl(fd, F_GETFL);
	/* a second descriptor never writes where the caller's could not */
	if (at % DIRECT_ALIGN || fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
		return NULL;
	struct gg_direct *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	/* default attributes: these cannot fail (Linux), as in ahead.c */
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->fd = fd;
	d->direct = 1;
	d->dfd = gg_compat_open_direct(fd); /* -1 without O_DIRECT: the caller writes buffered */
	for (int k = 0; d->dfd >= 0 && k < DIRECT_BUFS; k++) {
		void *p = NULL;
		if (posix_memalign(&p, DIRECT_ALIGN, DIRECT_CHUNK) != 0)
			break;
		d->bufs[k].buf = p;
		d->free_[d->nfree++] = &d->bufs[k];
	}
	while (d->nfree == DIRECT_BUFS && d->nthreads < DIRECT_THREADS &&
	       pthread_create(&d->th[d->nthreads], NULL, direct_main, d) == 0)
		d->nthreads++;
	if (!d->nthreads) {
		gg_direct_free(d);
		return NULL;
	}
	d->cur = d->free_[--d->nfree];
	d->cur->at = at;
	struct stat st;
	d->end = fstat(fd, &st) == 0 && (uint64_t)st.st_size > at ? (uint64_t)st.st_size : at;
	d->alloc = d->end;
	/* tmpfs has no such lock, and what it reserves is memory */
	d->reserve = gg_compat_reserve_useful(fd);
	return d;
}

/* A queued chunk starts below to. */
static int queued_below(const struct gg_direct *d, uint64_t to)
{
	for (size_t k = 0; k < d->nqueued; k++)
		if (d->queue[k]->at < to)
			return 1;
	return 0;
}

/* Wait (mu held) until everything below to is on the disk. */
static void wait_disk(struct gg_direct *d, uint64_t to)
{
	while (queued_below(d, to))
		pthread_cond_wait(&d->cv, &d->mu);
}

/* Blocks reserved up to to at least, when that works. A failure only ends reserving
 * (a full disk is reported by the writes themselves); a reservation that failed
 * halfway can have moved the size, which the flush then cuts back. */
static void reserve(struct gg_direct *d, uint64_t to)
{
	if (!d->reserve || to <= d->alloc)
		return;
	uint64_t len = (to - d->alloc + DIRECT_RESERVE - 1) / DIRECT_RESERVE * DIRECT_RESERVE;
	if (gg_compat_reserve(d->fd, (off_t)d->alloc, (off_t)len) == 0) {
		d->alloc += len;
		return;
	}
	d->reserve = 0;
	struct stat st;
	if (fstat(d->fd, &st) == 0 && (uint64_t)st.st_size > d->alloc)
		d->alloc = (uint64_t)st.st_size;
}

/* The full current chunk to the threads; a free one (waiting for it) becomes current. */
static void submit(struct gg_direct *d)
{
	uint64_t at = d->cur->at + DIRECT_CHUNK;
	reserve(d, at);
	pthread_mutex_lock(&d->mu);
	d->queue[d->nqueued++] = d->cur;
	pthread_cond_broadcast(&d->cv);
	while (!d->nfree)
		pthread_cond_wait(&d->cv, &d->mu);
	d->cur = d->free_[--d->nfree];
	pthread_mutex_unlock(&d->mu);
	d->cur->at = at;
	d->len = 0;
}

static int failed(struct gg_direct *d)
{
	pthread_mutex_lock(&d->mu);
	int e = d->err;
	pthread_mutex_unlock(&d->mu);
	return e;
}

/* [off, off + n) of the buffers' range (off >= cur->at); a gap before it is zeros. */
static void stage(struct gg_direct *d, uint64_t off, const unsigned char *p, size_t n)
{
	while (n) {
		size_t pos = (size_t)(off - d->cur->at);
		if (pos >= DIRECT_CHUNK) { /* past this chunk: zeros to its end, on */
			memset(d->cur->buf + d->len, 0, DIRECT_CHUNK - d->len);
			d->len = DIRECT_CHUNK;
			submit(d);
			continue;
		}
		if (pos > d->len)
			memset(d->cur->buf + d->len, 0, pos - d->len);
		size_t k = n < DIRECT_CHUNK - pos ? n : DIRECT_CHUNK - pos;
		memcpy(d->cur->buf + pos, p, k);
		if (pos + k > d->len)
			d->len = pos + k;
		off += k;
		p += k;
		n -= k;
		if (d->len == DIRECT_CHUNK && n)
			submit(d);
	}
	if (d->len == DIRECT_CHUNK)
		submit(d);
}

/* How many of the n bytes at off lie behind the buffers (in the file, not in them),
 * once the threads have written everything there. */
static size_t behind(struct gg_direct *d, uint64_t off, size_t n)
{
	if (off >= d->cur->at)
		return 0;
	size_t k = off + n <= d->cur->at ? n : (size_t)(d->cur->at - off);
	pthread_mutex_lock(&d->mu);
	wait_disk(d, off + k);
	pthread_mutex_unlock(&d->mu);
	return k;
}

int gg_direct_write(struct gg_direct *d, uint64_t off, const void *buf, size_t n)
{
	int e = failed(d);
	if (e) {
		errno = e;
		return -1;
	}
	const unsigned char *p = buf;
	size_t k = behind(d, off, n);
	if (k && gg_image_pwrite_all(d->fd, p, k, (int64_t)off) < 0)
		return -1;
	if (off + n > d->end)
		d->end = off + n;
	if (n > k)
		stage(d, off + k, p + k, n - k);
	return 0;
}

int gg_direct_read(struct gg_direct *d, uint64_t off, void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t k = behind(d, off, n);
	if (k && gg_image_pread_all(d->fd, p, k, (int64_t)off) < 0)
		return -1;
	if (n > k) {
		size_t pos = (size_t)(off + k - d->cur->at);
		if (pos > d->len || n - k > d->len - pos) {
			errno = EIO; /* past what was written: the caller checks the size */
			return -1;
		}
		memcpy(p + k, d->cur->buf + pos, n - k);
	}
	return 0;
}

/* The file ends at size: the buffers drop what lies past it; when size is behind them,
 * the threads' writes are waited for, the file cut, and the buffers restart at size's
 * block with its first bytes read back. */
int gg_direct_truncate(struct gg_direct *d, uint64_t size)
{
	d->end = size;
	if (size >= d->cur->at) {
		uint64_t end = d->cur->at + d->len;
		if (size > end) { /* longer: zeros, as ftruncate gives */
			static const unsigned char zero;
			stage(d, size - 1, &zero, 1);
		}
		if (size - d->cur->at < d->len)
			d->len = (size_t)(size - d->cur->at);
		return 0;
	}
	pthread_mutex_lock(&d->mu);
	wait_disk(d, UINT64_MAX);
	pthread_mutex_unlock(&d->mu);
	uint64_t at = size / DIRECT_ALIGN * DIRECT_ALIGN;
	size_t keep = (size_t)(size - at);
	if (ftruncate(d->fd, (off_t)size) < 0 ||
	    (keep && gg_image_pread_all(d->fd, d->cur->buf, keep, (int64_t)at) < 0))
		return -1;
	if (d->alloc > size)
		d->alloc = size;
	d->cur->at = at;
	d->len = keep;
	return 0;
}

/* Everything on the disk or in the page cache: the threads' chunks, then the part of the
 * current one written so far through the page cache. -1 with errno on a failed write. */
int gg_direct_flush(struct gg_direct *d)
{
	pthread_mutex_lock(&d->mu);
	wait_disk(d, UINT64_MAX);
	int e = d->err;
	pthread_mutex_unlock(&d->mu);
	if (e) {
		errno = e;
		return -1;
	}
	/* the current chunk stays as it is: a later write goes on filling it */
	if (d->len && gg_image_pwrite_all(d->fd, d->cur->buf, d->len, (int64_t)d->cur->at) < 0)
		return -1;
	if (d->alloc > d->end) { /* what was reserved and not written */
		if (ftruncate(d->fd, (off_t)d->end) < 0)
			return -1;
		d->alloc = d->end;
	}
	return 0;
}

uint64_t gg_direct_syncs(struct gg_direct *d)
{
	pthread_mutex_lock(&d->mu);
	while (d->syncing)
		pthread_cond_wait(&d->cv, &d->mu);
	uint64_t n = d->nsyncs;
	pthread_mutex_unlock(&d->mu);
	return n;
}

uint64_t gg_direct_free(struct gg_direct *d)
{
	if (!d)
		return 0;
	pthread_mutex_lock(&d->mu);
	d->stop = 1;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	for (unsigned k = 0; k < d->nthreads; k++)
		pthread_join(d->th[k], NULL);
	uint64_t n = d->ndirect;
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	if (d->dfd >= 0)
		close(d->dfd);
	for (int k = 0; k < DIRECT_BUFS; k++)
		free(d->bufs[k].buf);
	free(d);
	return n;
}
