/* What A-REX says of a job's data staging, from outside: its job.ID.input
 * (diagnose/input, gg_arc_inputs_pending) and its errors log (diagnose/errors,
 * gg_arc_staging_failure), whatever bytes they hold. The count never exceeds
 * the lines; the failure text is bounded, NUL-terminated and printable (no
 * control character reaches a terminal). Also the storage URL checks, which
 * take the user's text. */
#include <string.h>

#include "ce/ce.h"
#include "fuzz.h"

FUZZ_TARGET(arc_staging)
{
	char *text = malloc(size + 1);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	size_t lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += text[i] == '\n';
	int n = gg_arc_inputs_pending(text);
	FUZZ_CHECK(n >= 0 && (size_t)n <= lines, "%d pending in %zu lines", n, lines);
	char out[512];
	memset(out, 'x', sizeof out);
	if (gg_arc_staging_failure(text, out, sizeof out)) {
		size_t len = strnlen(out, sizeof out);
		FUZZ_CHECK(len < sizeof out, "not terminated");
		for (size_t i = 0; i < len; i++)
			FUZZ_CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f,
				   "control byte 0x%02x at %zu", (unsigned char)out[i], i);
	}
	struct gg_data_url u;
	struct gg_err err = {0};
	if (gg_data_url_parse(text, &u, &err) == 0) {
		FUZZ_CHECK(u.host[0] && u.path[0] == '/', "accepted without host or path");
		char *h = gg_data_http_url(text);
		FUZZ_CHECK(h && !strncmp(h, "https://", 8), "no https form");
		free(h);
	} else {
		FUZZ_CHECK(err.code == GG_EUSAGE && err.msg[0], "refused without a message");
	}
	free(text);
	return 0;
}
