/* The list a session's snapshot begins with (lib/node/snaplist.c), written by the
 * node's find -printf: gg_snap_list_parse. What it accepts: records of known types
 * with whole numbers in range, paths "." or "./A/B" without an empty, "." or ".."
 * step or a control byte, a target for a link only, the top first. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "node/node.h"

FUZZ_TARGET(snap_list)
{
	struct gg_snap_entry *e = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	int rc = gg_snap_list_parse((const char *)data, size, &e, &n, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0] && !e && !n, "failure without a message, or with a result");
		return 0;
	}
	FUZZ_CHECK(n > 0 && !strcmp(e[0].path, ".") && e[0].type == 'd', "the top not first");
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(strchr("fdlbcps", e[i].type), "type %c", e[i].type);
		FUZZ_CHECK(e[i].mode <= 07777, "mode %o", e[i].mode);
		FUZZ_CHECK(!strstr(e[i].path, "/../") && !strstr(e[i].path, "//"), "path %s",
			   e[i].path);
		FUZZ_CHECK((e[i].type == 'l') == (e[i].target != NULL), "a target off a link");
		FUZZ_CHECK(gg_snap_path_cmp(e[i].path, e[i].path) == 0, "order");
	}
	gg_snap_list_free(e, n);
	return 0;
}
