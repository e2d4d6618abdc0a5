/* What the check's probe writes in a session and in an image (lib/node/check.c):
 * gg_check_report_parse, then the report compared with itself and with an empty
 * one (lib/node/compare.c). What it accepts: the header, an exit status 0-255, a
 * place for the command's first word, at most GG_CHECK_MAX_MODULES modules and
 * GG_CHECK_MAX_ENV variables with names of shell variables; a report is the same as
 * itself; every line said is printable (no control or bidirectional character). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "node/check.h"

static void check_report_line(const char *l)
{
	FUZZ_CHECK(l, "no line");
	for (const unsigned char *p = (const unsigned char *)l; *p; p++)
		FUZZ_CHECK(*p >= 0x20 && *p != 0x7f, "byte 0x%02x in a line", *p);
	FUZZ_CHECK(!strstr(l, "\xe2\x80\xae") && !strstr(l, "\xc2\x9b"), "a bidi or C1 control");
}

static void check_report_compare(const struct gg_check_report *a, const struct gg_check_report *b,
				 int same)
{
	struct gg_check_diff *d = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	FUZZ_CHECK(gg_check_compare(a, b, "cmd", &d, &n, &err) == 0, "compare: %s", err.msg);
	for (size_t i = 0; i < n; i++) {
		check_report_line(d[i].line);
		FUZZ_CHECK(!same || d[i].kind == GG_CHECK_COMMAND || d[i].kind == GG_CHECK_MODULE,
			   "a report differs from itself: %s", d[i].line);
	}
	gg_check_diffs_free(d, n);
}

FUZZ_TARGET(check_report)
{
	struct gg_check_report r, empty;
	struct gg_err err = {0};
	int rc = gg_check_report_parse((const char *)data, size, &r, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0], "failure without a message");
		gg_check_report_clear(&r);
		return 0;
	}
	FUZZ_CHECK(r.exit_status >= 0 && r.exit_status <= 255, "exit %d", r.exit_status);
	FUZZ_CHECK(r.which && r.nmods <= GG_CHECK_MAX_MODULES && r.nenv <= GG_CHECK_MAX_ENV,
		   "limits");
	for (size_t i = 0; i < r.nenv; i++)
		FUZZ_CHECK(r.env[i].name[0] && !strpbrk(r.env[i].name, "= \n'\""), "a name: %s",
			   r.env[i].name);
	static const char hdr[] = "gridgpu-check 1\nwhich -\nexit 0\n";
	FUZZ_CHECK(gg_check_report_parse(hdr, sizeof hdr - 1, &empty, &err) == 0, "empty report");
	check_report_compare(&r, &r, 1);
	check_report_compare(&r, &empty, 0);
	check_report_compare(&empty, &r, 0);
	gg_check_report_clear(&empty);
	gg_check_report_clear(&r);
	return 0;
}
