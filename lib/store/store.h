/* lib/store: the public part is include/gridgpu/session.h (records and the
 * store); here what only the library and the tests use. */
#ifndef GG_LIB_STORE_H
#define GG_LIB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gridgpu/session.h"

/* A random id of 12 lowercase hex digits. */
int gg_random_uid(char out[13], struct gg_err *err);

/* gg_store_update of many records under one lock: fn(record, c->ud) on the
 * record named c->name, for each of the n changes. A record fn leaves as it
 * was (its text the same, but for the time of the last change) is not
 * written; the records that changed are each written to a new file, which
 * reach the disk together (one syncfs, then the renames, then one fsync of
 * the directory) before the call returns. c->rc is each change's result and
 * c->out its record, as gg_store_update's return and *out (cleared when
 * c->rc < 0; the caller clears it otherwise). Returns 0, or the first failure
 * (in err), a failure other than a record not there (GG_ENOTFOUND) first. */
struct gg_store_change {
	const char *name;
	void *ud;
	int rc;
	struct gg_record out;
};
int gg_store_update_many(struct gg_store *st, struct gg_store_change *ch, size_t n,
			 gg_record_update_fn fn, struct gg_err *err);

/* What the store wrote since it was opened: record files written, and the
 * syncs it asked the disk for (fsync, syncfs). For the tests. */
struct gg_store_io {
	unsigned long writes, syncs;
};
void gg_store_io_get(const struct gg_store *st, struct gg_store_io *io);

/* The session file's parser (gg_launch_info_parse) is lib/node's. */

#endif
