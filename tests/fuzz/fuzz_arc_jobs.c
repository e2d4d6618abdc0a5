/* A-REX bulk answers (POST jobs?action=new/status/kill/clean, GET jobs?state=):
 * gg_arc_parse_jobs, one job as an object or many as an array, and whatever else
 * a CE may send instead (XML when the Accept header is lost, HTML, empty). */
#include <string.h>

#include "ce.h"

FUZZ_TARGET(arc_jobs)
{
	size_t n;
	struct gg_ce_result *res = ce_parse_checked(gg_arc_parse_jobs, data, size, &n);
	for (size_t i = 0; i < n; i++) {
		/* what the callers do with each result */
		FUZZ_CHECK((unsigned)res[i].state <= GG_CE_GONE, "state %d", res[i].state);
		const char *name = gg_ce_state_name(res[i].state);
		FUZZ_CHECK(name && *name, "state without a name");
		(void)gg_ce_state_terminal(res[i].state);
		if (res[i].raw_state)
			FUZZ_CHECK(gg_arc_state(res[i].raw_state) == res[i].state ||
					   res[i].code == 404,
				   "state '%s' maps two ways", res[i].raw_state);
		if (res[i].id)
			(void)strlen(res[i].id);
		if (res[i].reason)
			(void)strlen(res[i].reason);
	}
	gg_ce_results_free(res, n);
	return 0;
}
