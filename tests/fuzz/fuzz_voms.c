/* The VOMS server's XML answer (gg_voms_answer_parse) and the attribute
 * certificates it carries (gg_ac_seq_parse, gg_ac_parse): an input that starts
 * with '<' is an answer, any other the DER of the proxy extension and of one AC. */
#include <string.h>

#include "fuzz.h"
#include "voms/voms.h"

FUZZ_TARGET(voms)
{
	struct gg_err err = {0};
	if (size && data[0] == '<') {
		struct gg_voms_answer a;
		int rc = gg_voms_answer_parse((const char *)data, size, &a, &err);
		FUZZ_CHECK(rc == 0 || (rc == GG_EPROTO && err.msg[0]), "failure without a message");
		if (rc == 0)
			FUZZ_CHECK(a.code || (a.ac && a.ac_len),
				   "an answer with neither AC nor error");
		gg_voms_answer_clear(&a);
		return 0;
	}
	struct gg_ac *acs = NULL, one;
	size_t n = 0;
	if (gg_ac_seq_parse(data, size, 1700000000, &acs, &n, &err) == 0)
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(acs[i].vo && acs[i].issuer && acs[i].n_fqans,
				   "an AC without VO");
	gg_ac_list_free(acs, n);
	if (gg_ac_parse(data, size, 1700000000, &one, &err) == 0)
		FUZZ_CHECK(one.vo && one.n_fqans > 0, "an AC without FQANs");
	gg_ac_clear(&one);
	return 0;
}
