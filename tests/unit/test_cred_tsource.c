/* lib/cred: token sources (token_command, oidc_account): when a fresh token
 * is fetched (a fake source and clock), the command run without a shell and
 * its failures, the site keys and how auth uses them; gg_argv_split. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "cred/tsource.h"

static char dir[256];

/* A JWT-shaped token whose payload holds exp (not signed: never verified). */
static char *jwt_exp(int64_t exp, int n)
{
	char payload[128], b[256];
	snprintf(payload, sizeof payload, "{\"sub\":\"u\",\"exp\":%lld,\"n\":%d}", (long long)exp,
		 n);
	int k = EVP_EncodeBlock((unsigned char *)b, (unsigned char *)payload, (int)strlen(payload));
	while (k > 0 && b[k - 1] == '=')
		k--;
	b[k] = '\0';
	for (char *p = b; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	char *out = OPENSSL_malloc(400);
	snprintf(out, 400, "eyJhbGciOiJSUzI1NiJ9.%s.c2ln", b);
	return out;
}

struct fake {
	int64_t now;
	int64_t life; /* of each token fetched */
	int calls;
	int fail;
};

static int64_t fake_now(void *ud)
{
	return ((struct fake *)ud)->now;
}

static int fake_fetch(void *ud, char **value, int64_t *exp, struct gg_err *err)
{
	struct fake *f = ud;
	f->calls++;
	*exp = 0;
	if (f->fail)
		return gg_err_set(err, GG_ECRED, "fake source down");
	*value = jwt_exp(f->now + f->life, f->calls);
	return 0;
}

static struct gg_tsource *fake_source(struct fake *f, int64_t margin)
{
	struct gg_site s = {.name = "t", .token_command = "fake", .token_refresh = margin};
	struct gg_tsource *ts = NULL;
	assert_int_equal(gg_tsource_new(&s, &ts, NULL), 0);
	assert_non_null(ts);
	ts->fetch = fake_fetch;
	ts->fetch_ud = f;
	ts->now = fake_now;
	ts->now_ud = f;
	return ts;
}

/* An hour-long token: kept until 5 minutes are left, then fetched again. */
static void test_refresh_margin(void **state)
{
	(void)state;
	struct fake f = {.now = 1000000, .life = 3600};
	struct gg_tsource *ts = fake_source(&f, 0);
	const struct gg_token *t = NULL;
	assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(t->exp, 1003600);
	f.now += 3600 - 301; /* 301 s left: kept */
	assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
	assert_int_equal(f.calls, 1);
	f.now += 1; /* 300 s left: fetched */
	assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
	assert_int_equal(f.calls, 2);
	assert_int_equal(t->exp, f.now + 3600);
	assert_int_equal(gg_tsource_fetches(ts), 2);
	gg_tsource_free(ts);
}

/* A 40-second test token: renewed with a quarter of its life (10 s) left;
 * across three lifetimes, polled every second, each token is used until then. */
static void test_short_tokens_scaled(void **state)
{
	(void)state;
	struct fake f = {.now = 5000, .life = 40};
	struct gg_tsource *ts = fake_source(&f, 0);
	assert_int_equal(gg_tsource_margin(ts, 40), 10);
	assert_int_equal(gg_tsource_margin(ts, 3600), 300);
	assert_int_equal(gg_tsource_margin(ts, 0), 300);
	const struct gg_token *t = NULL;
	for (int i = 0; i < 120; i++, f.now++) {
		assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
		assert_true(t->exp - f.now > 10); /* never sent with less than the margin */
	}
	assert_int_equal(f.calls, 4); /* at 0, 30, 60, 90 */
	gg_tsource_free(ts);
	/* a configured margin smaller than a quarter is kept */
	f = (struct fake){.now = 5000, .life = 40};
	ts = fake_source(&f, 5);
	assert_int_equal(gg_tsource_margin(ts, 40), 5);
	gg_tsource_free(ts);
}

/* A failed fetch is GG_ECRED; the token held is not replaced, nothing is
 * counted; the next call tries again. */
static void test_fetch_failure(void **state)
{
	(void)state;
	struct fake f = {.now = 100, .life = 40, .fail = 1};
	struct gg_tsource *ts = fake_source(&f, 0);
	const struct gg_token *t = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_tsource_token(ts, &t, &err), GG_ECRED);
	assert_null(t);
	assert_string_equal(err.msg, "fake source down");
	f.fail = 0;
	assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
	assert_int_equal(gg_tsource_fetches(ts), 1);
	/* the HTTP callback gives the value; a reference outlives the first owner */
	const char *v = NULL;
	struct gg_tsource *held = gg_tsource_ref(ts);
	gg_tsource_free(ts);
	assert_int_equal(gg_tsource_current(held, &v, NULL), 0);
	assert_non_null(strstr(v, "eyJhbGciOiJSUzI1NiJ9."));
	gg_tsource_free(held);
}

static void write_script(const char *name, const char *body, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0700);
}

static int command_err(const char *cmdline, int timeout_ms, char *msg, size_t n)
{
	struct gg_site s = {.name = "t", .token_command = (char *)cmdline};
	struct gg_tsource *ts = NULL;
	struct gg_err err = {0};
	int rc = gg_tsource_new(&s, &ts, &err);
	if (rc == 0) {
		if (timeout_ms)
			ts->timeout_ms = timeout_ms;
		const struct gg_token *t = NULL;
		rc = gg_tsource_token(ts, &t, &err);
	}
	snprintf(msg, n, "%s", err.msg);
	gg_tsource_free(ts);
	return rc;
}

/* The real command: argv without a shell, stdout the token, failures named. */
static void test_command(void **state)
{
	(void)state;
	char p[400], cmd[600], msg[GG_ERR_MSG_MAX];
	/* arguments reach it as words, quotes removed, no expansion */
	write_script("ok", "[ \"$1\" = 'a b' ] && [ \"$2\" = '$HOME' ] && echo tok.en-1", p,
		     sizeof p);
	snprintf(cmd, sizeof cmd, "%s 'a b' \"$HOME\"", p);
	struct gg_site s = {.name = "t", .token_command = cmd};
	struct gg_tsource *ts = NULL;
	assert_int_equal(gg_tsource_new(&s, &ts, NULL), 0);
	const struct gg_token *t = NULL;
	assert_int_equal(gg_tsource_token(ts, &t, NULL), 0);
	assert_string_equal(t->value, "tok.en-1");
	gg_tsource_free(ts);
	/* missing */
	assert_int_equal(command_err("/nonexistent/htgettoken -a x", 0, msg, sizeof msg), GG_ECRED);
	assert_string_equal(msg, "token_command '/nonexistent/htgettoken' cannot be run: No such "
				 "file or directory");
	/* failing: its stderr, as it was (the CLI escapes what it shows) */
	write_script("fail", "printf 'no \\033[31mluck\\n' >&2; exit 4", p, sizeof p);
	assert_int_equal(command_err(p, 0, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "failed (exit status 4): no \033[31mluck"));
	/* garbage: not a token, and not shown */
	write_script("garbage", "echo 'not a \"token\" secret-ish'", p, sizeof p);
	assert_int_equal(command_err(p, 0, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "printed something that is not a bearer token"));
	assert_null(strstr(msg, "secret-ish"));
	write_script("empty", "true", p, sizeof p);
	assert_int_equal(command_err(p, 0, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "printed no token"));
	/* too slow: killed at the timeout */
	write_script("slow", "exec sleep 30", p, sizeof p);
	assert_int_equal(command_err(p, 200, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "gave no token within 1 s"));
	/* an unclosed quote is a usage error of the site profile */
	assert_int_equal(command_err("htgettoken 'a", 0, msg, sizeof msg), GG_EUSAGE);
	assert_non_null(strstr(msg, "token_command: a single quote is not closed"));
}

/* ---- a command that does not end as it should ---------------------------------- */

/* Whether a process of group pg still runs (zombies, which init reaps when
 * it can, do not). */
static int group_runs(pid_t pg)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		char path[300], buf[1024], st;
		int ppid, pgrp;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *c = strrchr(buf, ')');
		found = c && sscanf(c + 1, " %c %d %d", &st, &ppid, &pgrp) == 3 && pgrp == pg &&
			st != 'Z' && st != 'X';
	}
	closedir(d);
	return found;
}

static pid_t read_pid(const char *name)
{
	char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	int pid = 0;
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

struct outcome {
	int rc;
	long ms; /* how long gridgpu took */
	char msg[GG_ERR_MSG_MAX];
	char value[256];
};

/* Run a token command with that deadline in a child (a hang fails the test,
 * it does not stop it: the child has 60 s). */
static void run_child(const char *cmdline, int timeout_ms, struct outcome *o)
{
	int p[2]; /* close-on-exec: the command must not hold it */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		alarm(60);
		struct outcome c = {0};
		struct gg_site s = {.name = "t", .token_command = (char *)cmdline};
		struct gg_tsource *ts = NULL;
		struct gg_err err = {0};
		c.rc = gg_tsource_new(&s, &ts, &err);
		const struct gg_token *t = NULL;
		ts->timeout_ms = timeout_ms;
		if ((c.rc = gg_tsource_token(ts, &t, &err)) == 0)
			snprintf(c.value, sizeof c.value, "%s", t->value);
		snprintf(c.msg, sizeof c.msg, "%s", err.msg);
		gg_tsource_free(ts);
		_exit(write(p[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
	}
	close(p[1]);
	int status = 0;
	memset(o, 0, sizeof *o);
	ssize_t n = read(p[0], o, sizeof *o);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	o->ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (!WIFEXITED(status) || n != (ssize_t)sizeof *o)
		fail_msg("the token command hung gridgpu (killed after %ld ms)", o->ms);
}

/* It closes its output and goes on running: gridgpu stops it at the deadline
 * and its whole process group is gone. */
static void test_command_keeps_running(void **state)
{
	(void)state;
	char p[400];
	struct outcome o;
	write_script("closes",
		     "echo $$ >\"$(dirname \"$0\")/closes.pid\"; exec >&- 2>&-; sleep 600", p,
		     sizeof p);
	run_child(p, 300, &o);
	assert_int_equal(o.rc, GG_ECRED);
	assert_non_null(strstr(o.msg, "gave no token within 1 s: stopped"));
	if (o.ms > 15000) /* far from the command's 600 s: stopped, not waited for */
		fail_msg("took %ld ms with a deadline of 300 ms", o.ms);
	pid_t pg = read_pid("closes.pid");
	assert_true(pg > 0);
	assert_false(group_runs(pg));
	/* one that ignores SIGTERM (and so does its child) is killed */
	write_script("stubborn",
		     "echo $$ >\"$(dirname \"$0\")/stubborn.pid\"; trap '' TERM; exec >&- 2>&-; "
		     "sleep 600",
		     p, sizeof p);
	run_child(p, 300, &o);
	assert_int_equal(o.rc, GG_ECRED);
	if (o.ms > 15000)
		fail_msg("took %ld ms with a deadline of 300 ms", o.ms);
	pg = read_pid("stubborn.pid");
	assert_true(pg > 0);
	assert_false(group_runs(pg));
}

/* It prints the token and ends, a child it left behind holding the pipe:
 * the token is taken at once and the child is gone. */
static void test_command_child_holds_pipe(void **state)
{
	(void)state;
	char p[400];
	struct outcome o;
	write_script("leaves",
		     "sleep 600 & echo $! >\"$(dirname \"$0\")/leaves.pid\"; echo tok.en-2", p,
		     sizeof p);
	run_child(p, 30000, &o);
	if (o.rc != 0)
		fail_msg("%s (after %ld ms)", o.msg, o.ms);
	assert_string_equal(o.value, "tok.en-2");
	if (o.ms > 15000) /* half the deadline */
		fail_msg("took %ld ms: waited for the child", o.ms);
	pid_t child = read_pid("leaves.pid");
	assert_true(child > 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)child);
	FILE *f = fopen(path, "r");
	char buf[512] = "", st = 'Z';
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
		char *c = strrchr(buf, ')');
		if (c)
			sscanf(c + 1, " %c", &st);
	}
	if (st != 'Z' && st != 'X')
		fail_msg("the child %d left behind still runs (%c)", (int)child, st);
}

/* A failing command that prints its token to stderr: the error says what it
 * said, the token masked. */
static void test_command_stderr_masked(void **state)
{
	(void)state;
	char p[400], msg[GG_ERR_MSG_MAX];
	const char *jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXNlY3JldA";
	const char *opaque = "hvs.CAESIAbCdEfGh1234567890XyZaBcDeFgHiJkLmNoPq";
	char body[600];
	snprintf(body, sizeof body,
		 "echo 'htgettoken: the token %s was refused' >&2\n"
		 "echo 'Authorization: Bearer %s' >&2\necho 'see /etc/htgettoken.conf' >&2\nexit 2",
		 jwt, opaque);
	write_script("leaks", body, p, sizeof p);
	assert_int_equal(command_err(p, 0, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "failed (exit status 2): htgettoken: the token [token hidden] "
				    "was refused\nAuthorization: Bearer [token hidden]\nsee "
				    "/etc/htgettoken.conf"));
	const char *parts[] = {"eyJhbGci", "eyJzdWIi", "c2lnbmF0", "CAESIA", "XyZaBcDe"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (strstr(msg, parts[i]))
			fail_msg("'%s' in: %s", parts[i], msg);
	/* at the deadline too, what it printed is shown masked */
	snprintf(body, sizeof body, "echo 'waiting with %s' >&2; exec sleep 600", jwt);
	write_script("leaks", body, p, sizeof p);
	assert_int_equal(command_err(p, 200, msg, sizeof msg), GG_ECRED);
	assert_non_null(strstr(msg, "stopped: waiting with [token hidden]"));
	assert_null(strstr(msg, "c2lnbmF0"));
}

static void test_argv_split(void **state)
{
	(void)state;
	char **v = NULL;
	assert_int_equal(gg_argv_split("  a  'b c'\t\"d \\\" e\" f\\ g '' x\"y\"z $V ", &v, NULL),
			 0);
	const char *want[] = {"a", "b c", "d \" e", "f g", "", "xyz", "$V", NULL};
	for (int i = 0; want[i]; i++)
		assert_string_equal(v[i], want[i]);
	assert_null(v[7]);
	gg_argv_free(v);
	struct gg_err err = {0};
	assert_int_equal(gg_argv_split("a \"b", &v, &err), GG_EUSAGE);
	assert_int_equal(gg_argv_split("   ", &v, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "no command");
}

/* gg_argv_join: a job's words as the one line the record keeps, that
 * gg_argv_split (JSON's argv) gives back word for word (failed before: the
 * words were joined by spaces, "sh -c 'echo a b'" came back as four words). */
static void test_argv_join(void **state)
{
	(void)state;
	char *const words[] = {"sh",
			       "-c",
			       "echo a  b > out; cat it's",
			       "",
			       "x\ty\nz",
			       "\"q\" \\ $V *",
			       "a=b,c:/d@e%f+g"};
	size_t n = sizeof words / sizeof words[0];
	char *line = gg_argv_join(words, n), **v = NULL;
	assert_non_null(line);
	assert_string_equal(line, "sh -c 'echo a  b > out; cat it'\\''s' '' 'x\ty\nz' "
				  "'\"q\" \\ $V *' a=b,c:/d@e%f+g");
	assert_int_equal(gg_argv_split(line, &v, NULL), 0);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i], words[i]);
	assert_null(v[n]);
	gg_argv_free(v);
	free(line);
	line = gg_argv_join(words, 0);
	assert_string_equal(line, "");
	free(line);
}

/* Sites: no source, both (refused), an oidc account's fields; auth picks the
 * source over the discovery order. */
static void test_sites_and_auth(void **state)
{
	(void)state;
	struct gg_tsource *ts = NULL;
	struct gg_site none = {.name = "n"};
	assert_int_equal(gg_tsource_new(&none, &ts, NULL), 0);
	assert_null(ts);
	struct gg_site both = {.name = "b", .token_command = "x", .oidc_account = "y"};
	struct gg_err err = {0};
	assert_int_equal(gg_tsource_new(&both, &ts, &err), GG_EUSAGE);
	struct gg_site oa = {.name = "o",
			     .oidc_account = "wlcg",
			     .token_audience = "https://ce.example",
			     .token_scopes = "compute.read compute.create"};
	assert_int_equal(gg_tsource_new(&oa, &ts, NULL), 0);
	assert_string_equal(gg_tsource_describe(ts), "oidc-agent account 'wlcg'");
	assert_string_equal(ts->audience, "https://ce.example");
	assert_string_equal(ts->scopes, "compute.read compute.create");
	gg_tsource_free(ts);
	/* BEARER_TOKEN is set, the site's command wins and is used */
	char p[400];
	write_script("src", "echo from.the.command", p, sizeof p);
	setenv("BEARER_TOKEN", "from.the.environment", 1);
	struct gg_site cmd = {.name = "c", .token_command = p};
	struct gg_auth a;
	assert_int_equal(gg_auth_find(&cmd, NULL, 86400, &a, NULL), 0);
	assert_string_equal(a.kind, "token");
	assert_string_equal(a.token->value, "from.the.command");
	assert_non_null(a.tsource);
	gg_auth_clear(&a);
	/* a failing source is a credential error, not a fall back to discovery */
	write_script("src", "exit 1", p, sizeof p);
	assert_int_equal(gg_auth_find(&cmd, "token", 0, &a, &err), GG_ECRED);
	assert_int_equal(err.code, GG_ECRED);
	gg_auth_clear(&a);
	unsetenv("BEARER_TOKEN");
}

/* Without OIDC_SOCK the agent is not asked: one line saying how to start it. */
static void test_agent_not_running(void **state)
{
	(void)state;
	char *sock = getenv("OIDC_SOCK") ? strdup(getenv("OIDC_SOCK")) : NULL;
	unsetenv("OIDC_SOCK");
	struct gg_site oa = {.name = "o", .oidc_account = "wlcg"};
	struct gg_tsource *ts = NULL;
	assert_int_equal(gg_tsource_new(&oa, &ts, NULL), 0);
	const struct gg_token *t = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_tsource_token(ts, &t, &err), GG_ECRED);
	assert_true(strstr(err.msg, "oidc-agent is not running") ||
		    strstr(err.msg, "liboidc-agent is not installed"));
	gg_tsource_free(ts);
	if (sock)
		setenv("OIDC_SOCK", sock, 1);
	free(sock);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/gg-unit-tsource.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	const char *names[] = {"ok",     "fail",       "garbage",    "empty",    "slow",
			       "src",    "closes",     "closes.pid", "stubborn", "stubborn.pid",
			       "leaves", "leaves.pid", "leaks"};
	char p[400];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refresh_margin),
		cmocka_unit_test(test_short_tokens_scaled),
		cmocka_unit_test(test_fetch_failure),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_command_keeps_running),
		cmocka_unit_test(test_command_child_holds_pipe),
		cmocka_unit_test(test_command_stderr_masked),
		cmocka_unit_test(test_argv_split),
		cmocka_unit_test(test_argv_join),
		cmocka_unit_test(test_sites_and_auth),
		cmocka_unit_test(test_agent_not_running),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
