/* A-REX job info answers (POST jobs?action=info): gg_arc_parse_info, the GLUE2
 * State lists of each job's info document (queued or running in the batch
 * system), one job as an object or many as an array, "Job not found" entries
 * with an empty document, and whatever else a CE may send instead. */
#include <string.h>

#include "ce.h"

FUZZ_TARGET(arc_info)
{
	size_t n;
	struct gg_ce_result *res = ce_parse_checked(gg_arc_parse_info, data, size, &n);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(res[i].id != NULL, "a result without its job id");
		FUZZ_CHECK((unsigned)res[i].state <= GG_CE_GONE, "state %d", res[i].state);
		FUZZ_CHECK(res[i].state != GG_CE_QUEUED || res[i].raw_state,
			   "queued without the CE's word for it");
	}
	gg_ce_results_free(res, n);
	return 0;
}
