/* fstatat over the names of one directory on several threads, for the directory scan.
 * On a tree of 500k small files the scan was a second and a half of one thread doing
 * fstatat after fstatat, the compressor threads not started yet; with the page cache
 * cold, each of them waited on the disk in turn. The threads only call fstatat and keep
 * what it gave (a stat or an errno) at the name's index; the scan handles the results in
 * order exactly as it handled its own calls, so the tree, the image and every message are
 * the same with or without them. */
#include "image/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define STAT_THREADS 3 /* besides the caller's */

struct gg_statpool {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* a new batch, or stop */
	pthread_cond_t done_cv; /* the last helper is through the batch */
	pthread_t th[STAT_THREADS];
	unsigned started;
	int stop;
	uint64_t gen; /* batch number */
	unsigned busy;
	/* the batch */
	int dfd;
	char *const *names;
	size_t n;
	struct gg_stat_result *out;
	atomic_size_t next;
};

static void work(struct gg_statpool *p)
{
	size_t i;
	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		struct gg_stat_result *r = &p->out[i];
		r->err = fstatat(p->dfd, p->names[i], &r->st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
	}
}

static void *helper_main(void *arg)
{
	struct gg_statpool *p = arg;
	uint64_t seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		work(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct gg_statpool *gg_image_statpool_start(void)
{
	struct gg_statpool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	atomic_init(&p->next, 0);
	for (; p->started < STAT_THREADS; p->started++)
		if (pthread_create(&p->th[p->started], NULL, helper_main, p) != 0)
			break;
	if (!p->started) {
		gg_image_statpool_stop(p);
		return NULL;
	}
	return p;
}

void gg_image_statpool_run(struct gg_statpool *p, int dfd, char *const *names, size_t n,
			   struct gg_stat_result *out)
{
	pthread_mutex_lock(&p->mu);
	p->dfd = dfd;
	p->names = names;
	p->n = n;
	p->out = out;
	atomic_store(&p->next, 0);
	p->busy = p->started;
	p->gen++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	work(p);
	/* every helper has seen this batch and is out of it before the next one */
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->done_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void gg_image_statpool_stop(struct gg_statpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned k = 0; k < p->started; k++)
		pthread_join(p->th[k], NULL);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
