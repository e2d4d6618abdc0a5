/* A-REX job info answers (POST jobs?action=info): gg_arc_parse_info, the GLUE2
 * State lists of each job's info document (queued or running in the batch
 * system), one job as an object or many as an array, "Job not found" entries
 * with an empty document, and whatever else a CE may send instead; and the
 * same bytes as the XML answer whose first ComputingActivity's CreationTime
 * gg_arc_info_time reads (the check of the remembered documents, arcinfo.c). */
#include <string.h>

#include "ce.h"
#include "ce/arcinfo.h"

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
	char t[GG_ARC_TIME_MAX];
	memset(t, 'x', sizeof t);
	if (gg_arc_info_time((const char *)data, size, t)) {
		size_t k = strnlen(t, sizeof t);
		FUZZ_CHECK(k >= 10 && k < sizeof t, "a time of %zu characters", k);
		FUZZ_CHECK(strspn(t, "0123456789-:TZ.+") == k, "a time with other characters");
	}
	return 0;
}
