/* Shared by fuzz_arc_jobs.c and fuzz_arc_info.c: what every parser of a CE's
 * answers promises, whatever it is given. */
#ifndef GG_FUZZ_CE_H
#define GG_FUZZ_CE_H

#include "ce/ce.h"
#include "fuzz.h"

typedef int (*ce_parse_fn)(const char *, size_t, struct gg_ce_result **, size_t *, struct gg_err *);

/* Parse data with fn: a failure leaves no results and says why, a success
 * has its results in an array. The results (*n of them; NULL, 0 after a
 * failure), for the target's own checks and gg_ce_results_free. */
static struct gg_ce_result *ce_parse_checked(ce_parse_fn fn, const uint8_t *data, size_t size,
					     size_t *n)
{
	struct gg_ce_result *res = NULL;
	struct gg_err err = {0};
	*n = 0;
	int rc = fn((const char *)data, size, &res, n, &err);
	if (rc < 0) {
		FUZZ_CHECK(res == NULL && *n == 0, "failure left %zu results", *n);
		FUZZ_CHECK(err.code == rc && err.msg[0], "failure without a message (rc %d)", rc);
		return NULL;
	}
	FUZZ_CHECK(*n == 0 || res != NULL, "%zu results, no array", *n);
	return res;
}

#endif
