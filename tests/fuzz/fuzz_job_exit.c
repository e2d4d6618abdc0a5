/* The batch wrapper's file of how a job's command ended (gridgpu-job.exit),
 * written on the worker node and read by status: gg_job_exit_parse. What it
 * accepts has an exit status of 0-255 and a stderr tail of at most
 * GG_JOB_EXIT_LINES bounded lines that are valid UTF-8 without a control
 * character (what the node wrote, escaped). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "engine/sync.h"

static void check_tail(const char *t)
{
	size_t lines = 1, line = 0;
	FUZZ_CHECK(gg_str_utf8_valid(t), "the tail is not valid UTF-8");
	for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
		if (*p == '\n') {
			lines++;
			line = 0;
			continue;
		}
		FUZZ_CHECK(*p >= 0x20 && *p != 0x7f, "byte 0x%02x in the tail", *p);
		line++;
		FUZZ_CHECK(line <= 4 * GG_JOB_EXIT_LINE + 40, "a line of %zu bytes", line);
	}
	FUZZ_CHECK(lines <= GG_JOB_EXIT_LINES, "%zu lines in the tail", lines);
}

FUZZ_TARGET(job_exit)
{
	struct gg_err err = {0};
	struct gg_job_exit x;
	int rc = gg_job_exit_parse((const char *)data, size, &x, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0] && !x.tail, "failure without a message, or with a tail");
	} else {
		FUZZ_CHECK(x.status >= 0 && x.status <= 255, "exit status %lld",
			   (long long)x.status);
		FUZZ_CHECK(x.oom_kills >= 0, "oom kills %lld", (long long)x.oom_kills);
		if (x.tail)
			check_tail(x.tail);
		char *s = gg_job_exit_summary(x.status, x.oom_kills);
		FUZZ_CHECK(s && !strncmp(s, "the command ", 12), "summary: %s", s ? s : "(null)");
		free(s);
	}
	gg_job_exit_clear(&x);
	return 0;
}
