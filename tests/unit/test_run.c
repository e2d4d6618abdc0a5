/* Unit tests of lib/core/run.c: the library's subprocess runner. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/run.h"

UNIT_TMPDIR("gg-unit-run")

static int sh(const char *script, int timeout_ms, size_t cap, struct gg_run *r)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct gg_err err = {0};
	return gg_run_capture(argv, timeout_ms, cap, r, &err);
}

static void test_status(void **state)
{
	(void)state;
	struct gg_run r;
	assert_int_equal(sh("echo out; echo err >&2; exit 3", 5000, 1024, &r), 0);
	assert_int_equal(r.status, 3);
	assert_false(r.timed_out);
	assert_false(r.cut);
	assert_string_equal(r.out, "out\nerr\n");
	assert_int_equal(r.len, 8);
	gg_run_clear(&r);
	assert_null(r.out);
	/* a signal is GG_RUN_SIGNAL + its number, not an exit status */
	assert_int_equal(sh("kill -TERM $$", 5000, 1024, &r), 0);
	assert_int_equal(r.status, GG_RUN_SIGNAL + SIGTERM);
	assert_false(r.timed_out);
	gg_run_clear(&r);
	/* stdin is /dev/null: cat ends at once */
	assert_int_equal(sh("cat; echo done", 0, 1024, &r), 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "done\n");
	gg_run_clear(&r);
	/* ignored by the caller, back to its default for the program */
	signal(SIGTERM, SIG_IGN);
	assert_int_equal(sh("kill -TERM $$; exit 0", 5000, 1024, &r), 0);
	signal(SIGTERM, SIG_DFL);
	assert_int_equal(r.status, GG_RUN_SIGNAL + SIGTERM);
	gg_run_clear(&r);
}

/* Output past the cap is read and dropped: the program is not blocked on a
 * full pipe and ends with its own status. */
static void test_cap(void **state)
{
	(void)state;
	struct gg_run r;
	assert_int_equal(sh("i=0; while [ $i -lt 2000 ]; do echo 0123456789abcdefghijklmnopqrstu;"
			    " i=$((i + 1)); done; exit 7",
			    20000, 1000, &r),
			 0);
	assert_int_equal(r.status, 7);
	assert_false(r.timed_out);
	assert_true(r.cut);
	assert_int_equal(r.len, 1000);
	assert_int_equal(strlen(r.out), 1000);
	assert_memory_equal(r.out, "0123456789abcdefghijklmnopqrstu\n", 32);
	gg_run_clear(&r);
	assert_int_equal(sh("printf 12345", 5000, 5, &r), 0);
	assert_false(r.cut);
	assert_string_equal(r.out, "12345");
	gg_run_clear(&r);
}

/* At the deadline the whole group is killed: the program and what it left
 * running. The background child holds the write end of a pipe of the test:
 * that pipe's end (POLLHUP) is the child's death. */
static void test_timeout_kills_group(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0); /* inherited: not close-on-exec */
	struct gg_run r;
	char script[128];
	snprintf(script, sizeof script, "exec %d>&-; sleep 600 & echo started; wait", p[0]);
	assert_int_equal(sh(script, 300, 1024, &r), 0);
	close(p[1]);
	assert_true(r.timed_out);
	assert_int_equal(r.status, GG_RUN_SIGNAL + SIGKILL);
	assert_string_equal(r.out, "started\n");
	gg_run_clear(&r);
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	int n;
	while ((n = poll(&pf, 1, 10000)) < 0 && errno == EINTR)
		;
	assert_int_equal(n, 1); /* not 0: the sleep would still hold it after 10 s */
	assert_true(pf.revents & POLLHUP);
	close(p[0]);
}

/* A program that ends but leaves a child behind holding the output: the run
 * ends at the deadline, the child killed with the group. */
static void test_leftover_killed(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct gg_run r;
	char script[128];
	snprintf(script, sizeof script, "exec %d>&-; (trap '' TERM; sleep 600) & exit 4", p[0]);
	assert_int_equal(sh(script, 300, 1024, &r), 0);
	close(p[1]);
	assert_true(r.timed_out);
	gg_run_clear(&r);
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	int n;
	while ((n = poll(&pf, 1, 10000)) < 0 && errno == EINTR)
		;
	assert_int_equal(n, 1);
	close(p[0]);
	/* one that closes its output and leaves: its status, at once */
	snprintf(script, sizeof script, "exec >&- 2>&-; exit 5");
	assert_int_equal(sh(script, 5000, 1024, &r), 0);
	assert_false(r.timed_out);
	assert_int_equal(r.status, 5);
	gg_run_clear(&r);
}

static void test_not_run(void **state)
{
	(void)state;
	struct gg_run r;
	struct gg_err err = {0};
	char *missing[] = {"/nonexistent/gridgpu-tool", NULL};
	assert_int_equal(gg_run_capture(missing, 1000, 64, &r, &err), GG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "/nonexistent/gridgpu-tool cannot be run"));
	assert_null(r.out);
	char *onpath[] = {"gridgpu-no-such-tool", NULL};
	assert_int_equal(gg_run_capture(onpath, 1000, 64, &r, &err), GG_ENOTFOUND);
	char path[128];
	snprintf(path, sizeof path, "%s/noexec", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	char *noexec[] = {path, NULL};
	assert_int_equal(gg_run_capture(noexec, 1000, 64, &r, &err), GG_EFAIL);
	char *none[] = {NULL};
	assert_int_equal(gg_run_capture(none, 1000, 64, &r, &err), GG_EUSAGE);
	/* found on $PATH */
	char *echo[] = {"echo", "hello", NULL};
	assert_int_equal(gg_run_capture(echo, 5000, 64, &r, &err), 0);
	assert_string_equal(r.out, "hello\n");
	gg_run_clear(&r);
}

static void test_last_line(void **state)
{
	(void)state;
	char buf[16];
	struct gg_run r = {.out = "first\n  \tlast one \r\n\n  \n"};
	assert_string_equal(gg_run_last_line(&r, buf, sizeof buf), "last one ");
	r.out = "a\nan overly long line";
	assert_string_equal(gg_run_last_line(&r, buf, sizeof buf), "an overly long ");
	r.out = " \n\n";
	assert_string_equal(gg_run_last_line(&r, buf, sizeof buf), "");
	r.out = NULL;
	assert_string_equal(gg_run_last_line(&r, buf, sizeof buf), "");
}

static void test_which(void **state)
{
	(void)state;
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char bin[128], noexec[160], dir[160], tool[160];
	snprintf(bin, sizeof bin, "%s/bin", tmpdir);
	snprintf(noexec, sizeof noexec, "%s/tool", tmpdir); /* not executable */
	snprintf(dir, sizeof dir, "%s/bin/sub", tmpdir);    /* a directory */
	snprintf(tool, sizeof tool, "%s/bin/tool", tmpdir);
	assert_int_equal(mkdir(bin, 0755), 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	int fd = open(noexec, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	fd = open(tool, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(fd >= 0);
	close(fd);
	char path[400];
	snprintf(path, sizeof path, "::%s:%s", tmpdir, bin);
	setenv("PATH", path, 1);
	char *w = gg_which("tool");
	assert_non_null(w);
	assert_string_equal(w, tool); /* the one that is not executable passed over */
	free(w);
	assert_null(gg_which("sub"));
	assert_null(gg_which("gridgpu-no-such-tool"));
	setenv("PATH", "", 1);
	w = gg_which("sh");
	assert_non_null(w); /* /usr/bin:/bin */
	free(w);
	if (old)
		setenv("PATH", old, 1);
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_leftover_killed),
		cmocka_unit_test(test_not_run),
		cmocka_unit_test(test_last_line),
		cmocka_unit_test(test_which),
	};
	return cmocka_run_group_tests_name("run", tests, setup_tmp, teardown_tmp);
}
