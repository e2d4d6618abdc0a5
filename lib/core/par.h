/* Work on several items at once (one thread each, as the CEs of a sync or of
 * `gridgpu sites` are asked), taken back in the order they finish; and the
 * monotonic clock the deadlines of such work are counted on. */
#ifndef GG_CORE_PAR_H
#define GG_CORE_PAR_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds (msf: with the fraction, for timings). */
int64_t gg_mono_ms(void);
double gg_mono_msf(void);

struct gg_par;

/* run(item) for each of the n items (items: an array of n of size bytes),
 * each on a thread of its own; one item, or one no thread can be had for,
 * runs here, before gg_par_start returns. NULL: out of memory (nothing run). */
struct gg_par *gg_par_start(void *items, size_t n, size_t size, void (*run)(void *item));
/* The next item whose run has ended (its thread joined), in the order they
 * end; NULL when every item has been given back. */
void *gg_par_next(struct gg_par *p);
/* Waits for the runs not given back yet, then frees p (NULL: nothing). */
void gg_par_free(struct gg_par *p);

#endif
