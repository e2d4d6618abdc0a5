/* lib/cred: token sources (token_command, oidc_account): when a fresh token
 * is fetched (a fake source and clock), the command run without a shell and
 * its failures, the site keys and how auth uses them; gg_argv_split. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	const char *names[] = {"ok", "fail", "garbage", "empty", "slow", "src"};
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
		cmocka_unit_test(test_argv_split),
		cmocka_unit_test(test_sites_and_auth),
		cmocka_unit_test(test_agent_not_running),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
