/* What a session's node answers freeze --session when asked what the image will not
 * carry (lib/node/unfrozen.c): gg_unfrozen_parse and the line said for each finding.
 * What it accepts: at most GG_UNFROZEN_MAX_LINES findings of known kinds, absolute
 * paths without a control byte, names of shell variables; every line said is
 * printable (no control or bidirectional character, valid UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "node/node.h"

static void check_line(const char *l)
{
	FUZZ_CHECK(l, "no line");
	for (const unsigned char *p = (const unsigned char *)l; *p; p++)
		FUZZ_CHECK(*p >= 0x20 && *p != 0x7f, "byte 0x%02x in a line", *p);
	FUZZ_CHECK(!strstr(l, "\xe2\x80\xae") && !strstr(l, "\xc2\x9b"), "a bidi or C1 control");
}

FUZZ_TARGET(unfrozen)
{
	struct gg_unfrozen *u = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	int rc = gg_unfrozen_parse((const char *)data, size, &u, &n, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0] && !u && !n, "failure without a message, or with a result");
		return 0;
	}
	FUZZ_CHECK(n <= GG_UNFROZEN_MAX_LINES, "%zu findings", n);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(u[i].path[0] == '/', "a relative path");
		FUZZ_CHECK((u[i].kind == GG_UNFROZEN_STARTUP) == !!u[i].name,
			   "a name where none goes");
		char *l = gg_unfrozen_line(&u[i]);
		check_line(l);
		free(l);
	}
	gg_unfrozen_clear(u, n);
	return 0;
}
