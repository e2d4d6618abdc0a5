/* The image's writes, done on a thread of their own. The thread that feeds the block
 * processor also writes every finished block, in order; on trees whose blocks cost
 * little to compress (already-compressed files, where the test that skips them is all
 * the work) half of that thread's time went to the kernel copying the blocks into the
 * page cache, while the compressor threads waited for it. Here a write is copied into
 * a ring of fixed size (a few per cent of the kernel's cost) and a writer thread does
 * the pwrite, in the order given. Reads wait for pending writes to the same bytes;
 * errors are kept and returned by the next call. Writes larger than half the ring, or
 * all of them when no thread could be started, are done at once after the queue has
 * drained, so the order is the same either way. */
#include "image/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AW_ENTS         1024u       /* writes in flight */
#define WRITEBACK_CHUNK (32u << 20) /* start writeback of every 32 MiB written */

struct aw_ent {
	uint64_t off; /* in the file */
	size_t pos;   /* in the ring, as a running count: the bytes are at pos % cap */
	size_t len;
};

struct gg_awrite {
	pthread_mutex_t mu;
	pthread_cond_t more; /* a write queued, or stop */
	pthread_cond_t room; /* a write done */
	pthread_t th;
	int started, stop;
	int fd;
	int err; /* errno of the first failed write: every later call returns it */
	unsigned char *buf;
	size_t cap;
	size_t head, tail; /* ring bytes in use: [head, tail), running counts */
	struct aw_ent ent[AW_ENTS];
	unsigned eh, et; /* queued writes: ent[eh..et) modulo AW_ENTS */
	/* written since writeback was last started (writer thread, or the caller when
	 * the queue is empty) */
	uint64_t wb_lo, wb_hi;
};

static int pwrite_all(int fd, const unsigned char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : ENOSPC;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Write, then start writing back each 32 MiB written, so the final fsync finds little
 * left to do. Best effort. */
static int write_out(struct gg_awrite *a, const unsigned char *p, size_t len, uint64_t off)
{
	int rc = pwrite_all(a->fd, p, len, off);
	if (rc || !len)
		return rc;
	if (!a->wb_hi || off < a->wb_lo) /* wb_hi 0: nothing since the last time */
		a->wb_lo = off;
	if (off + len > a->wb_hi)
		a->wb_hi = off + len;
	if (a->wb_hi - a->wb_lo >= WRITEBACK_CHUNK) {
		sync_file_range(a->fd, (off_t)a->wb_lo, (off_t)(a->wb_hi - a->wb_lo),
				SYNC_FILE_RANGE_WRITE);
		a->wb_lo = a->wb_hi = 0;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct gg_awrite *a = arg;
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (a->eh == a->et && !a->stop)
			pthread_cond_wait(&a->more, &a->mu);
		if (a->eh == a->et)
			break;
		struct aw_ent e = a->ent[a->eh % AW_ENTS];
		pthread_mutex_unlock(&a->mu);
		int rc = write_out(a, a->buf + e.pos % a->cap, e.len, e.off);
		pthread_mutex_lock(&a->mu);
		if (rc && !a->err)
			a->err = rc;
		a->eh++;
		a->head = a->eh == a->et ? a->tail : a->ent[a->eh % AW_ENTS].pos;
		pthread_cond_broadcast(&a->room);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

struct gg_awrite *gg_awrite_new(int fd, size_t cap)
{
	struct gg_awrite *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->fd = fd;
	a->cap = cap;
	a->buf = malloc(cap);
	if (!a->buf || pthread_mutex_init(&a->mu, NULL) != 0) {
		free(a->buf);
		free(a);
		return NULL;
	}
	pthread_cond_init(&a->more, NULL);
	pthread_cond_init(&a->room, NULL);
	a->started = pthread_create(&a->th, NULL, writer_main, a) == 0;
	return a;
}

/* Does a queued write touch [off, off + len)? (len 0: is any queued?) */
static int pending(const struct gg_awrite *a, uint64_t off, size_t len)
{
	for (unsigned i = a->eh; i != a->et; i++) {
		const struct aw_ent *e = &a->ent[i % AW_ENTS];
		if (!len || (e->off < off + len && off < e->off + e->len))
			return 1;
	}
	return 0;
}

int gg_awrite_wait(struct gg_awrite *a, uint64_t off, size_t len)
{
	pthread_mutex_lock(&a->mu);
	while (pending(a, off, len))
		pthread_cond_wait(&a->room, &a->mu);
	int rc = a->err;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

/* Where in the ring len bytes go, contiguous (skipping the end of the ring when they
 * would wrap), once there is room for them and for an entry; with the lock held. */
static size_t reserve(struct gg_awrite *a, size_t len)
{
	for (;;) {
		size_t pos = a->tail, r = pos % a->cap;
		if (r + len > a->cap)
			pos += a->cap - r;
		if (a->err || (pos + len - a->head <= a->cap && a->et - a->eh < AW_ENTS))
			return pos;
		pthread_cond_wait(&a->room, &a->mu);
	}
}

int gg_awrite_put(struct gg_awrite *a, const void *data, size_t len, uint64_t off)
{
	if (!a->started || len > a->cap / 2) {
		int rc = gg_awrite_wait(a, 0, 0);
		if (rc)
			return rc;
		/* the queue is empty and only this thread fills it: the writer waits */
		if ((rc = write_out(a, data, len, off)) != 0) {
			pthread_mutex_lock(&a->mu);
			a->err = rc;
			pthread_mutex_unlock(&a->mu);
		}
		return rc;
	}
	pthread_mutex_lock(&a->mu);
	size_t pos = reserve(a, len);
	int rc = a->err;
	pthread_mutex_unlock(&a->mu);
	if (rc)
		return rc;
	/* [pos, pos + len) is past every queued write: the writer does not touch it */
	memcpy(a->buf + pos % a->cap, data, len);
	pthread_mutex_lock(&a->mu);
	a->ent[a->et % AW_ENTS] = (struct aw_ent){off, pos, len};
	a->et++;
	a->tail = pos + len;
	pthread_cond_signal(&a->more);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int gg_awrite_free(struct gg_awrite *a)
{
	if (!a)
		return 0;
	if (a->started) {
		pthread_mutex_lock(&a->mu);
		a->stop = 1;
		pthread_cond_signal(&a->more);
		pthread_mutex_unlock(&a->mu);
		pthread_join(a->th, NULL);
	}
	int rc = a->err;
	pthread_cond_destroy(&a->more);
	pthread_cond_destroy(&a->room);
	pthread_mutex_destroy(&a->mu);
	free(a->buf);
	free(a);
	return rc;
}
