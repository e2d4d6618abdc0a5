/* gg_arc_lrms_refusal: a job's errors log as A-REX keeps it (the batch system's
 * answer to the submit script, a runtime environment's stage-0 refusal): for any
 * text, the reason found is one line of it (or that line's first 300 bytes), with
 * no line break and no trailing blank, and the output is always terminated within
 * the room given, a room of 0 or 1 included. */
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"
#include "fuzz.h"

FUZZ_TARGET(lrms_refusal)
{
	char *text = malloc(size + 1);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	static const size_t rooms[] = {0, 1, 8, 512};
	for (size_t r = 0; r < sizeof rooms / sizeof *rooms; r++) {
		char out[512];
		memset(out, 'x', sizeof out);
		int found = gg_arc_lrms_refusal(text, out, rooms[r]);
		FUZZ_CHECK(found == 0 || found == 1, "returned %d", found);
		if (!rooms[r])
			continue;
		size_t n = strnlen(out, rooms[r]);
		FUZZ_CHECK(n < rooms[r], "not terminated within %zu bytes", rooms[r]);
		FUZZ_CHECK(found || n == 0, "nothing found, '%s' said", out);
		if (!found || rooms[r] < 512)
			continue;
		FUZZ_CHECK(n > 0 && n <= 300, "a reason of %zu bytes", n);
		FUZZ_CHECK(!strpbrk(out, "\r\n"), "a line break in the reason");
		FUZZ_CHECK(out[n - 1] != ' ' && out[n - 1] != '\t', "a trailing blank");
		FUZZ_CHECK(strstr(text, out), "the reason is not the input's");
	}
	free(text);
	return 0;
}
