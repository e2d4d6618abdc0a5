/* The gate: lets the thread that feeds the block processor sleep until the compressors
 * have done a batch of blocks, instead of once per block.
 *
 * Once libsquashfs 1.2's queue is full, its append puts the feeding thread to sleep
 * until the oldest item is done, and every compressor thread that finishes any item
 * wakes it: on a tree of large files that was about 4,000 wake-ups per 600 MiB, each
 * a futex call, a reschedule interrupt on a compressor's CPU and two context switches.
 * The compressor handed to the block processor is wrapped here: the wrapper's copies
 * (one per compressor thread) count the blocks they finish and the ones they are
 * compressing, and the writer (squashfs.c) waits on that count when its estimate of the
 * queue says it is nearly full; the block processor then finds the finished blocks and
 * refills without sleeping. A wait also ends as soon as no compressor is busy, so a
 * wrong estimate or a stopped pool costs a short bubble, never a hang. The bytes do not
 * change: the inner compressor does every block. */
#include "image/internal.h"

#include <pthread.h>
#include <stdlib.h>

#include <sqfs/compressor.h>

struct gg_gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t done;   /* blocks compressed */
	unsigned busy;   /* blocks being compressed */
	uint64_t target; /* the waiter's: wake when done reaches it */
	int waiting;
};

struct gated {
	sqfs_compressor_t base;
	sqfs_compressor_t *inner;
	struct gg_gate *gate; /* shared by every copy, owned by none */
};

struct gg_gate *gg_gate_new(void)
{
	struct gg_gate *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
		free(g);
		return NULL;
	}
	if (pthread_cond_init(&g->cv, NULL) != 0) {
		pthread_mutex_destroy(&g->mu);
		free(g);
		return NULL;
	}
	return g;
}

void gg_gate_free(struct gg_gate *g)
{
	if (!g)
		return;
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

uint64_t gg_gate_done(struct gg_gate *g)
{
	pthread_mutex_lock(&g->mu);
	uint64_t d = g->done;
	pthread_mutex_unlock(&g->mu);
	return d;
}

void gg_gate_wait(struct gg_gate *g, uint64_t done)
{
	pthread_mutex_lock(&g->mu);
	g->target = done;
	g->waiting = 1;
	while (g->done < g->target && g->busy > 0)
		pthread_cond_wait(&g->cv, &g->mu);
	g->waiting = 0;
	pthread_mutex_unlock(&g->mu);
}

static sqfs_s32 gated_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
			       sqfs_u8 *out, sqfs_u32 outsize)
{
	struct gated *x = (struct gated *)cmp;
	struct gg_gate *g = x->gate;
	pthread_mutex_lock(&g->mu);
	g->busy++;
	pthread_mutex_unlock(&g->mu);
	sqfs_s32 r = x->inner->do_block(x->inner, in, size, out, outsize);
	pthread_mutex_lock(&g->mu);
	g->busy--;
	g->done++;
	if (g->waiting && (g->done >= g->target || g->busy == 0))
		pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return r;
}

static void gated_get_configuration(const sqfs_compressor_t *cmp, sqfs_compressor_config_t *cfg)
{
	const struct gated *x = (const struct gated *)cmp;
	x->inner->get_configuration(x->inner, cfg);
}

static int gated_write_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	struct gated *x = (struct gated *)cmp;
	return x->inner->write_options(x->inner, file);
}

static int gated_read_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	struct gated *x = (struct gated *)cmp;
	return x->inner->read_options(x->inner, file);
}

static void gated_destroy(sqfs_object_t *obj)
{
	struct gated *x = (struct gated *)obj;
	sqfs_destroy(x->inner);
	free(x);
}

static sqfs_object_t *gated_copy(const sqfs_object_t *obj);

struct sqfs_compressor_t *gg_gate_wrap(struct gg_gate *g, struct sqfs_compressor_t *inner)
{
	struct gated *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->inner = inner;
	x->gate = g;
	x->base.base.destroy = gated_destroy;
	x->base.base.copy = gated_copy; /* copies share the gate */
	x->base.get_configuration = gated_get_configuration;
	x->base.write_options = gated_write_options;
	x->base.read_options = gated_read_options;
	x->base.do_block = gated_do_block;
	return &x->base;
}

static sqfs_object_t *gated_copy(const sqfs_object_t *obj)
{
	const struct gated *x = (const struct gated *)obj;
	sqfs_compressor_t *inner = sqfs_copy(x->inner);
	if (!inner)
		return NULL;
	sqfs_compressor_t *c = gg_gate_wrap(x->gate, inner);
	if (!c)
		sqfs_destroy(inner);
	return (sqfs_object_t *)c;
}
