/* Work on several items at once, taken back in the order it ends (par.h).
 * The engine asks each CE of a sync, and each site of `gridgpu sites`, on a
 * thread of its own so that a slow one holds nobody else; the caller handles
 * each answer on its own thread as soon as it is there. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/par.h"

int64_t gg_mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

double gg_mono_msf(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

enum { RUNNING, ENDED, GIVEN };

struct task {
	struct gg_par *p;
	void *item;
	pthread_t th;
	int threaded, state;
};

struct gg_par {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void (*run)(void *item);
	struct task *t;
	size_t n;
};

static void *task_main(void *ud)
{
	struct task *t = ud;
	t->p->run(t->item);
	pthread_mutex_lock(&t->p->mu);
	t->state = ENDED;
	pthread_cond_broadcast(&t->p->cv);
	pthread_mutex_unlock(&t->p->mu);
	return NULL;
}

struct gg_par *gg_par_start(void *items, size_t n, size_t size, void (*run)(void *item))
{
	struct gg_par *p = calloc(1, sizeof *p);
	if (p)
		p->t = calloc(n ? n : 1, sizeof *p->t);
	if (!p || !p->t) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->run = run;
	p->n = n;
	for (size_t i = 0; i < n; i++) {
		struct task *t = &p->t[i];
		t->p = p;
		t->item = (char *)items + i * size;
		t->threaded = n > 1 && pthread_create(&t->th, NULL, task_main, t) == 0;
		if (!t->threaded) { /* here, then */
			run(t->item);
			t->state = ENDED;
		}
	}
	return p;
}

void *gg_par_next(struct gg_par *p)
{
	struct task *t = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		int left = 0;
		for (size_t i = 0; !t && i < p->n; i++) {
			left |= p->t[i].state != GIVEN;
			if (p->t[i].state == ENDED)
				t = &p->t[i];
		}
		if (t || !left)
			break;
		pthread_cond_wait(&p->cv, &p->mu);
	}
	if (t)
		t->state = GIVEN;
	pthread_mutex_unlock(&p->mu);
	if (t && t->threaded)
		pthread_join(t->th, NULL);
	return t ? t->item : NULL;
}

void gg_par_free(struct gg_par *p)
{
	if (!p)
		return;
	while (gg_par_next(p))
		;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->t);
	free(p);
}
