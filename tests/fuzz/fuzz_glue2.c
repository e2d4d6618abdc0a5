/* A CE's GLUE2 information (A-REX REST: GET info?schema=glue2): gg_glue2_offer,
 * what gridgpu sites shows of a site: counts that must be numbers, texts that
 * must be short and printable, one element as an object or many as an array. */
#include <string.h>

#include "fuzz.h"
#include "ce/ce.h"

/* Every count the offer holds is a non-negative integer below 10^9. */
static void glue2_counts(json_t *o)
{
	const char *keys[] = {"running", "waiting", "total_slots", "free_slots"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_t *v = json_object_get(o, keys[i]);
		FUZZ_CHECK(!v || (json_is_integer(v) && json_integer_value(v) >= 0 &&
				  json_integer_value(v) < 2000000000),
			   "%s is not a count", keys[i]);
	}
}

FUZZ_TARGET(glue2)
{
	json_t *o = NULL;
	struct gg_err err = {0};
	int rc = gg_glue2_offer((const char *)data, size, &o, &err);
	if (rc < 0) {
		FUZZ_CHECK(o == NULL && err.code == rc && err.msg[0], "failure without a message");
		return 0;
	}
	FUZZ_CHECK(json_is_object(o), "no offer");
	glue2_counts(o);
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(o, "shares"), i, v)
		glue2_counts(v);
	json_array_foreach (json_object_get(o, "rtes"), i, v) {
		const char *s = json_string_value(v);
		FUZZ_CHECK(s && strlen(s) <= 128, "an RTE that is not short text");
		for (const char *p = s; *p; p++)
			FUZZ_CHECK(*p >= 0x20 && *p < 0x7f, "an RTE that is not printable");
	}
	json_decref(o);
	return 0;
}
