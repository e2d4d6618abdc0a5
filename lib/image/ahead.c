/* Read-ahead for the directory reader: a thread that opens the sandbox's files in the
 * order they will be fed, checks them with fstat and reads the first bytes, a bounded
 * number of files ahead of the thread that feeds them. On trees of many small files the
 * feeding thread spent most of its time in those system calls (500k tiny files: 7 s of
 * system time against half a second of compression), with the compressor threads idle.
 *
 * The thread decides nothing: whatever it finds (a descriptor, an errno, a short read) is
 * handed over as it is, and the feeding thread checks and reports it exactly as it would
 * have done itself, in the same order, so the image and every message are the same with
 * or without it. It touches only the tree's names and parent links, which do not change
 * while the data is fed. */
#include "image/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AHEAD_SLOTS 32
#define AHEAD_BYTES (32u << 10) /* read ahead of each file: most small files whole */

struct slot {
	struct gg_ahead_file f;
	size_t seq;
	int ready;
};

struct gg_ahead {
	int rootfd, use_openat2;
	struct gg_node *const *nodes;
	size_t n;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	/* who sleeps, so that the other wakes it only when needed: the thread sleeps on a
	 * full ring until half of it is free again, the reader on the file it needs */
	int ahead_waits, reader_waits;
	size_t nready;
	struct slot slots[AHEAD_SLOTS];
};

void gg_image_ahead_open(int rootfd, const char *rel, int use_openat2, struct gg_ahead_file *f)
{
	/* O_NONBLOCK: a FIFO put in the file's place must not block the open */
	int fl = O_RDONLY | O_NONBLOCK;
	f->fd = gg_image_open_beneath(rootfd, rel, fl | O_NOATIME, use_openat2);
	if (f->fd < 0 && errno == EPERM) /* O_NOATIME on a file of another user */
		f->fd = gg_image_open_beneath(rootfd, rel, fl, use_openat2);
	f->err_no = f->fd < 0 ? errno : 0;
	f->st_ok = f->fd >= 0 && fstat(f->fd, &f->st) == 0 && S_ISREG(f->st.st_mode);
}

static void fill(struct gg_ahead *a, struct gg_ahead_file *f, size_t i)
{
	f->fd = -1;
	f->err_no = 0;
	f->st_ok = 0;
	f->len = 0;
	f->rel = gg_image_node_path(a->nodes[i]);
	if (!f->rel) {
		f->err_no = ENOMEM;
		return;
	}
	gg_image_ahead_open(a->rootfd, f->rel, a->use_openat2, f);
	/* sparse files are read extent by extent by the feeding thread */
	if (!f->st_ok || f->st.st_size == 0 ||
	    (uint64_t)f->st.st_blocks * 512 < (uint64_t)f->st.st_size)
		return;
	size_t want = (uint64_t)f->st.st_size < AHEAD_BYTES ? (size_t)f->st.st_size : AHEAD_BYTES;
	ssize_t got;
	do
		got = pread(f->fd, f->data, want, 0);
	while (got < 0 && errno == EINTR);
	f->len = got > 0 ? (size_t)got : 0; /* an error is met again by the reader */
}

static void *ahead_main(void *arg)
{
	struct gg_ahead *a = arg;
	/* as the compressor threads (squashfs.c): the feeding thread goes first */
	struct sched_param sp = {.sched_priority = 0};
	sched_setscheduler(0, SCHED_BATCH, &sp); /* this thread only; best effort */
	for (size_t i = 0; i < a->n; i++) {
		struct slot *s = &a->slots[i % AHEAD_SLOTS];
		pthread_mutex_lock(&a->mu);
		while (s->ready && !a->stop) {
			a->ahead_waits = 1;
			pthread_cond_wait(&a->cv, &a->mu);
		}
		a->ahead_waits = 0;
		int stop = a->stop;
		pthread_mutex_unlock(&a->mu);
		if (stop)
			break;
		fill(a, &s->f, i);
		pthread_mutex_lock(&a->mu);
		s->seq = i;
		s->ready = 1;
		a->nready++;
		if (a->reader_waits)
			pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
	}
	return NULL;
}

static void slot_clear(struct gg_ahead_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->rel);
	f->rel = NULL;
}

struct gg_ahead *gg_image_ahead_start(int rootfd, int use_openat2, struct gg_node *const *nodes,
				      size_t n)
{
	struct gg_ahead *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->rootfd = rootfd;
	a->use_openat2 = use_openat2;
	a->nodes = nodes;
	a->n = n;
	size_t i = 0;
	for (; i < AHEAD_SLOTS; i++) {
		a->slots[i].f.fd = -1;
		if (!(a->slots[i].f.data = malloc(AHEAD_BYTES)))
			break;
	}
	if (i < AHEAD_SLOTS || pthread_mutex_init(&a->mu, NULL) != 0) {
		for (size_t k = 0; k < i; k++)
			free(a->slots[k].f.data);
		free(a);
		return NULL;
	}
	if (pthread_cond_init(&a->cv, NULL) != 0 || pthread_create(&a->th, NULL, ahead_main, a)) {
		pthread_mutex_destroy(&a->mu);
		for (size_t k = 0; k < AHEAD_SLOTS; k++)
			free(a->slots[k].f.data);
		free(a);
		return NULL;
	}
	return a;
}

struct gg_ahead_file *gg_image_ahead_get(struct gg_ahead *a, size_t i)
{
	struct slot *s = &a->slots[i % AHEAD_SLOTS];
	pthread_mutex_lock(&a->mu);
	while (!(s->ready && s->seq == i)) {
		a->reader_waits = 1;
		pthread_cond_wait(&a->cv, &a->mu);
	}
	a->reader_waits = 0;
	pthread_mutex_unlock(&a->mu);
	return &s->f;
}

void gg_image_ahead_done(struct gg_ahead *a, struct gg_ahead_file *f)
{
	struct slot *s = (struct slot *)f; /* f is the slot's first member */
	slot_clear(f);
	pthread_mutex_lock(&a->mu);
	s->ready = 0;
	a->nready--;
	if (a->ahead_waits && a->nready <= AHEAD_SLOTS / 2)
		pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

void gg_image_ahead_stop(struct gg_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	for (size_t k = 0; k < AHEAD_SLOTS; k++) {
		if (a->slots[k].ready)
			slot_clear(&a->slots[k].f);
		free(a->slots[k].f.data);
	}
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
