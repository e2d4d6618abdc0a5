/* Directory read-ahead for the scan: threads that open, list and stat the directories
 * the scan will read next, and hand their listings over, so the scan's own thread takes
 * in one directory while they read the following ones.
 *
 * The scan walks the sandbox breadth first from a queue; the directories at its head
 * are the next it reads (depth first, the next one was mostly a subdirectory of the one
 * just read, which no thread could have known of, and the scan read most directories
 * itself: on the Python environment its first 0.2 s used 65% of the two cores, breadth
 * first 98%, and freeze went from 2.94 to 2.90 s). Reading one is opening it beneath
 * the root, reading its names, sorting them and an fstatat for each, about two thirds
 * of the scan's time, which ran on one core while the other idled (the compressors
 * start after the scan). A listing is only ever used by the scan, in its order, and it
 * checks and reports everything in it exactly as it did its own reads: the tree, the
 * image and every message are the same with or without these threads.
 *
 * Measured (medians of alternated runs): 500k tiny files in 1,000 directories, the scan
 * 0.67 -> 0.46 s, the freeze 5.36 -> 5.11 s, from a cold page cache 11.75 -> 11.00 s; the
 * Python environment (7,064 directories of 7 entries on average) the same warm (3.17 s:
 * handing a small directory over costs about what reading it on another core saves),
 * 4.2 -> 4.0 s cold (two runs each). Wake-ups are kept to what is needed: on this VM
 * each one is an interrupt on the other core, and waking both threads for every
 * directory made the Python tree's scan slower. */
#include "image/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIRAHEAD_THREADS 2
#define DIRAHEAD_SLOTS   16 /* listings wanted, being read or waiting for the scan */
#define STAT_POOL_MIN    16 /* entries from which a directory is stat-ed on the pool */

enum { SLOT_FREE, SLOT_WANTED, SLOT_BUSY, SLOT_DONE };

struct dslot {
	const struct gg_node *node;
	int state;
	uint64_t prio; /* wanted: the highest is read first */
	struct gg_dir_listing l;
};

struct gg_dirahead {
	int rootfd, openat2;
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot wanted, or stop: for the threads */
	pthread_cond_t done; /* a slot read: for the scan, when it waits */
	int waiting;         /* the scan waits in take */
	pthread_t th[DIRAHEAD_THREADS];
	unsigned nthreads;
	struct dslot slot[DIRAHEAD_SLOTS];
	uint64_t gen; /* want calls so far */
	int stop;
	uint64_t handed; /* listings handed over, for the tests */
};

static int namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in l->dir but "." and "..", sorted; l->read_err on failure. */
static void read_names(struct gg_dir_listing *l)
{
	size_t cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(l->dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (l->n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(l->names, cap * sizeof *nn);
			if (!nn) {
				l->read_err = ENOMEM;
				return;
			}
			l->names = nn;
		}
		if (!(l->names[l->n] = strdup(de->d_name))) {
			l->read_err = ENOMEM;
			return;
		}
		l->n++;
		errno = 0;
	}
	if (errno)
		l->read_err = errno;
	else if (l->n)
		qsort(l->names, l->n, sizeof *l->names, namecmp);
}

static void stat_names(struct gg_dir_listing *l, struct gg_statpool *sp)
{
	if (!l->n || !(l->res = malloc(l->n * sizeof *l->res)))
		return; /* none: the scan calls fstatat itself */
	int dfd = dirfd(l->dir);
	if (sp && l->n >= STAT_POOL_MIN) {
		gg_image_statpool_run(sp, dfd, l->names, l->n, l->res);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		struct gg_stat_result *r = &l->res[i];
		r->err = fstatat(dfd, l->names[i], &r->st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
	}
}

void gg_image_dir_read(int rootfd, const char *rel, int use_openat2, struct gg_statpool *sp,
		       struct gg_dir_listing *l)
{
	memset(l, 0, sizeof *l);
	int fd = gg_image_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY, use_openat2);
	if (fd < 0) {
		l->open_err = errno;
		return;
	}
	if (fstat(fd, &l->st) < 0) {
		l->stat_err = errno ? errno : EIO;
		close(fd);
		return;
	}
	if (!(l->dir = fdopendir(fd))) {
		l->read_err = errno;
		close(fd);
		return;
	}
	read_names(l);
	if (!l->read_err)
		stat_names(l, sp);
}

void gg_image_dir_listing_free(struct gg_dir_listing *l)
{
	if (l->dir)
		closedir(l->dir);
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->res);
	memset(l, 0, sizeof *l);
}

/* The wanted slot to read first, or NULL. */
static struct dslot *next_wanted(struct gg_dirahead *a)
{
	struct dslot *best = NULL;
	for (int k = 0; k < DIRAHEAD_SLOTS; k++)
		if (a->slot[k].state == SLOT_WANTED && (!best || a->slot[k].prio > best->prio))
			best = &a->slot[k];
	return best;
}

static void *dirahead_main(void *arg)
{
	struct gg_dirahead *a = arg;
	pthread_mutex_lock(&a->mu);
	for (;;) {
		struct dslot *s;
		while (!(s = next_wanted(a)) && !a->stop)
			pthread_cond_wait(&a->work, &a->mu);
		if (!s)
			break;
		s->state = SLOT_BUSY;
		const struct gg_node *node = s->node;
		pthread_mutex_unlock(&a->mu);
		/* the node's name and parents never change once it is in the tree */
		char *rel = gg_image_node_path(node);
		int got = rel != NULL;
		struct gg_dir_listing l;
		if (got)
			gg_image_dir_read(a->rootfd, rel, a->openat2, NULL, &l);
		free(rel);
		pthread_mutex_lock(&a->mu);
		if (got) {
			s->l = l;
			s->state = SLOT_DONE;
		} else { /* out of memory: the slot is free again, the scan reads it */
			memset(s, 0, sizeof *s);
		}
		if (a->waiting) /* a wake-up costs the scan more than the check */
			pthread_cond_signal(&a->done);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

struct gg_dirahead *gg_image_dirahead_start(int rootfd, int use_openat2)
{
	struct gg_dirahead *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->rootfd = rootfd;
	a->openat2 = use_openat2;
	/* default attributes: these cannot fail (Linux), as in ahead.c */
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->done, NULL);
	while (a->nthreads < DIRAHEAD_THREADS &&
	       pthread_create(&a->th[a->nthreads], NULL, dirahead_main, a) == 0)
		a->nthreads++;
	if (!a->nthreads) {
		gg_image_dirahead_stop(a);
		return NULL;
	}
	return a;
}

/* The slot of node, or with node NULL a free one; NULL when there is none. */
static struct dslot *find(struct gg_dirahead *a, const struct gg_node *node)
{
	for (int k = 0; k < DIRAHEAD_SLOTS; k++)
		if ((a->slot[k].state != SLOT_FREE) == (node != NULL) && a->slot[k].node == node)
			return &a->slot[k];
	return NULL;
}

void gg_image_dirahead_want(struct gg_dirahead *a, struct gg_node *const *next, size_t n)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->gen++;
	int fresh = 0;
	for (size_t i = 0; i < n && i < DIRAHEAD_SLOTS; i++) {
		/* the latest call's first directory first: the scan reads it next */
		uint64_t prio = (a->gen << 16) - i;
		struct dslot *s = find(a, next[i]);
		if (!s && (s = find(a, NULL)))
			fresh++;
		if (!s)
			break; /* all slots taken: the scan reads the rest itself */
		if (s->state == SLOT_FREE || s->state == SLOT_WANTED) {
			s->node = next[i];
			s->state = SLOT_WANTED;
			s->prio = prio;
		}
	}
	if (fresh > 1)
		pthread_cond_broadcast(&a->work);
	else if (fresh)
		pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
}

int gg_image_dirahead_take(struct gg_dirahead *a, const struct gg_node *dir,
			   struct gg_dir_listing *out)
{
	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	struct dslot *s = find(a, dir);
	a->waiting = 1;
	while (s && s->state == SLOT_BUSY)
		pthread_cond_wait(&a->done, &a->mu);
	a->waiting = 0;
	int got = s && s->state == SLOT_DONE;
	if (got) {
		*out = s->l;
		a->handed++;
	}
	if (s)
		memset(s, 0, sizeof *s); /* SLOT_FREE */
	pthread_mutex_unlock(&a->mu);
	return got;
}

void gg_image_dirahead_drain(struct gg_dirahead *a)
{
	pthread_mutex_lock(&a->mu);
	for (;;) {
		int left = 0;
		for (int k = 0; k < DIRAHEAD_SLOTS; k++)
			left |= a->slot[k].state == SLOT_WANTED || a->slot[k].state == SLOT_BUSY;
		if (!left)
			break;
		a->waiting = 1;
		pthread_cond_wait(&a->done, &a->mu);
		a->waiting = 0;
	}
	pthread_mutex_unlock(&a->mu);
}

uint64_t gg_image_dirahead_stop(struct gg_dirahead *a)
{
	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->mu);
	for (unsigned k = 0; k < a->nthreads; k++)
		pthread_join(a->th[k], NULL);
	for (int k = 0; k < DIRAHEAD_SLOTS; k++)
		if (a->slot[k].state == SLOT_DONE)
			gg_image_dir_listing_free(&a->slot[k].l);
	uint64_t handed = a->handed;
	pthread_cond_destroy(&a->done);
	pthread_cond_destroy(&a->work);
	pthread_mutex_destroy(&a->mu);
	free(a);
	return handed;
}
