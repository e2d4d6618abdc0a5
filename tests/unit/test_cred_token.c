/* lib/cred: bearer tokens (WLCG discovery order, RFC 6750, JWT claims). */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cred/cred.h"

static char dir[256], xdg[300], file[300];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
}

static void xdg_token(const char *text)
{
	char p[400];
	snprintf(p, sizeof p, "%s/bt_u%u", xdg, (unsigned)geteuid());
	if (text)
		write_text(p, text);
	else
		unlink(p);
}

/* base64url without padding, as in JWTs */
static void b64url(const char *in, char *out)
{
	int n = EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)strlen(in));
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
	for (char *c = out; *c; c++)
		*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
}

static char *jwt(const char *payload)
{
	static char buf[4096];
	char h[256], p[2048];
	b64url("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", h);
	b64url(payload, p);
	snprintf(buf, sizeof buf, "%s.%s.c2lnbmF0dXJl", h, p);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s/gg-token-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(xdg, sizeof xdg, "%s/run", dir);
	mkdir(xdg, 0700);
	snprintf(file, sizeof file, "%s/token-file", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return unit_rmtree(dir);
}

static int reset(void **state)
{
	(void)state;
	unsetenv("BEARER_TOKEN");
	unsetenv("BEARER_TOKEN_FILE");
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	xdg_token(NULL);
	unlink(file);
	return 0;
}

static void test_rfc6750(void **state)
{
	(void)state;
	const char *good[] = {"abc", "A-._~+/9", "abc=", "abc==", "eyJ.eyJ.sig", "x"};
	const char *bad[] = {"", "=", "a b", "a=b", "ab\"c", "a,b", "a\tb", "é", "a==b", "abc\n"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_true(gg_token_valid(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (gg_token_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

static void test_discovery_order(void **state)
{
	(void)state;
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	char want[400];

	/* nothing (unless /tmp/bt_u<uid> exists on this machine) */
	char tmp[64];
	snprintf(tmp, sizeof tmp, "/tmp/bt_u%u", (unsigned)geteuid());
	int have_tmp = access(tmp, F_OK) == 0;
	if (!have_tmp) {
		assert_int_equal(gg_token_find(&t, &err), GG_ENOTFOUND);
		assert_non_null(strstr(err.msg, "no bearer token"));
		assert_null(t);
		/* step 4: /tmp/bt_u<uid> (made and removed here) */
		write_text(tmp, "from-tmp\n");
		assert_int_equal(gg_token_find(&t, &err), 0);
		unlink(tmp);
		assert_string_equal(t->value, "from-tmp");
		assert_string_equal(t->source, tmp);
		gg_token_free(t);
	}

	/* step 3: $XDG_RUNTIME_DIR/bt_u<uid> */
	xdg_token("  from-xdg\t\n");
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-xdg");
	snprintf(want, sizeof want, "%s/bt_u%u", xdg, (unsigned)geteuid());
	assert_string_equal(t->source, want);
	assert_false(t->jwt);
	assert_int_equal(t->exp, 0);
	gg_token_free(t);

	/* step 2 beats 3; a missing BEARER_TOKEN_FILE is skipped */
	setenv("BEARER_TOKEN_FILE", "/nonexistent/token", 1);
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-xdg");
	gg_token_free(t);
	write_text(file, "\r\n from-file \v\f\n");
	setenv("BEARER_TOKEN_FILE", file, 1);
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-file");
	assert_string_equal(t->source, file);
	gg_token_free(t);

	/* step 1 beats 2 */
	setenv("BEARER_TOKEN", "\n\tfrom-env  ", 1);
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-env");
	assert_string_equal(t->source, "BEARER_TOKEN");
	gg_token_free(t);

	/* empty ones are skipped */
	setenv("BEARER_TOKEN", " \n ", 1);
	write_text(file, "\n\n");
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-xdg");
	gg_token_free(t);
	setenv("BEARER_TOKEN", "", 1);
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_string_equal(t->value, "from-xdg");
	gg_token_free(t);

	/* without XDG_RUNTIME_DIR its file is not looked at */
	unsetenv("XDG_RUNTIME_DIR");
	if (!have_tmp) {
		assert_int_equal(gg_token_find(&t, &err), GG_ENOTFOUND);
		assert_null(t);
	}
}

static void test_invalid_stops(void **state)
{
	(void)state;
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	xdg_token("valid-later");
	/* an invalid token stops discovery with an error naming where it came from */
	setenv("BEARER_TOKEN", "not a token", 1);
	assert_int_equal(gg_token_find(&t, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "BEARER_TOKEN"));
	assert_non_null(strstr(err.msg, "RFC 6750"));
	assert_null(t);
	unsetenv("BEARER_TOKEN");
	write_text(file, "two\nlines\n");
	setenv("BEARER_TOKEN_FILE", file, 1);
	assert_int_equal(gg_token_find(&t, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, file));
	assert_null(t);
	/* a NUL inside the file */
	FILE *f = fopen(file, "w");
	fwrite("ab\0cd", 1, 5, f);
	fclose(f);
	assert_int_equal(gg_token_find(&t, &err), GG_ECRED);
	/* an unreadable path (a directory) is an error, not a skip */
	setenv("BEARER_TOKEN_FILE", dir, 1);
	assert_int_equal(gg_token_find(&t, &err), GG_ECRED);
	assert_null(t);
	/* gg_token_new */
	assert_int_equal(gg_token_new("  ", "test", &t, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "empty"));
	assert_int_equal(gg_token_new("a\"b", "test", &t, &err), GG_ECRED);
	gg_token_free(NULL);
}

static void test_jwt_claims(void **state)
{
	(void)state;
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	/* payload lengths of every residue mod 3 exercise the padding */
	const char *payloads[] = {
		"{\"exp\":1700000000,\"sub\":\"alice\",\"iss\":\"https://issuer.example\"}",
		"{\"exp\":1700000000,\"sub\":\"alice\",\"iss\":\"https://issuer.example\"} ",
		"{\"exp\":1700000000,\"sub\":\"alice\",\"iss\":\"https://issuer.example\"}  ",
	};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(gg_token_new(jwt(payloads[i]), "test", &t, &err), 0);
		assert_true(t->jwt);
		assert_int_equal(t->exp, 1700000000);
		assert_string_equal(t->sub, "alice");
		assert_string_equal(t->iss, "https://issuer.example");
		gg_token_free(t);
	}
	/* exp as a real number, no sub/iss */
	assert_int_equal(gg_token_new(jwt("{\"exp\":1800000000.5}"), "test", &t, &err), 0);
	assert_int_equal(t->exp, 1800000000);
	assert_null(t->sub);
	gg_token_free(t);
	/* no exp */
	assert_int_equal(gg_token_new(jwt("{\"sub\":\"bob\"}"), "test", &t, &err), 0);
	assert_true(t->jwt);
	assert_int_equal(t->exp, 0);
	gg_token_free(t);
	/* three dots but the payload is not JSON: a valid opaque token */
	assert_int_equal(gg_token_new("abc.def.ghi", "test", &t, &err), 0);
	assert_false(t->jwt);
	assert_int_equal(t->exp, 0);
	gg_token_free(t);
	/* a JSON array payload is not a claim set */
	assert_int_equal(gg_token_new(jwt("[1,2]"), "test", &t, &err), 0);
	assert_false(t->jwt);
	gg_token_free(t);
	/* found through discovery, with whitespace around it */
	char text[4200];
	snprintf(text, sizeof text, "\n  %s  \n", jwt(payloads[0]));
	xdg_token(text);
	assert_int_equal(gg_token_find(&t, &err), 0);
	assert_true(t->jwt);
	assert_int_equal(t->exp, 1700000000);
	gg_token_free(t);
}

/* gg_token_find's answer with BEARER_TOKEN_FILE=path: rc, message in msg. */
static int find_file(const char *path, char *msg, size_t n)
{
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	setenv("BEARER_TOKEN_FILE", path, 1);
	int rc = gg_token_find(&t, &err);
	snprintf(msg, n, "%s", err.msg);
	if (rc == 0) {
		snprintf(msg, n, "%s", t->value);
		gg_token_free(t);
	}
	return rc;
}

#define NOBODY 65534

/* A token file not the user's, or open to others, is refused (as ssh refuses
 * such a key): one line saying why and what to do, the token not used. */
static void test_file_owner_mode(void **state)
{
	(void)state;
	char msg[GG_ERR_MSG_MAX], want[600];
	write_text(file, "the-users-own\n");
	assert_int_equal(find_file(file, msg, sizeof msg), 0);
	assert_string_equal(msg, "the-users-own");
	/* group- or other-writable, or readable: refused, with the chmod to run */
	const mode_t loose[] = {0620, 0602, 0640, 0604, 0660, 0666, 0610};
	for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
		chmod(file, loose[i]);
		assert_int_equal(find_file(file, msg, sizeof msg), GG_ECRED);
		snprintf(want, sizeof want, "token file '%s' is open to others (mode %04o)", file,
			 (unsigned)loose[i]);
		if (!strstr(msg, want) || !strstr(msg, "chmod 600"))
			fail_msg("mode %04o: %s", (unsigned)loose[i], msg);
	}
	chmod(file, 0400);
	assert_int_equal(find_file(file, msg, sizeof msg), 0);
	/* another user's file (root here: nobody's) */
	if (geteuid() != 0)
		skip();
	chmod(file, 0600);
	assert_int_equal(chown(file, NOBODY, NOBODY), 0);
	assert_int_equal(find_file(file, msg, sizeof msg), GG_ECRED);
	snprintf(want, sizeof want, "token file '%s' is owned by uid %u, not by you", file, NOBODY);
	assert_non_null(strstr(msg, want));
	assert_null(strstr(msg, "the-users-own"));
	assert_null(strchr(msg, '\n'));
	/* BEARER_TOKEN still comes first */
	setenv("BEARER_TOKEN", "from-env", 1);
	assert_int_equal(find_file(file, msg, sizeof msg), 0);
	assert_string_equal(msg, "from-env");
}

/* Symbolic links: to another user's file, refused (the file opened is
 * checked); one another user made, refused even to the user's own file; the
 * user's own link to the user's own file, read; a dangling one, absent. */
static void test_file_links(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char msg[GG_ERR_MSG_MAX], want[600], other[400], mine[400], link[400];
	snprintf(other, sizeof other, "%s/others-token", dir);
	snprintf(mine, sizeof mine, "%s/my-token", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	write_text(other, "planted-token\n");
	assert_int_equal(chown(other, NOBODY, NOBODY), 0);
	write_text(mine, "my-token\n");
	assert_int_equal(symlink(other, link), 0);
	assert_int_equal(find_file(link, msg, sizeof msg), GG_ECRED);
	snprintf(want, sizeof want, "token file '%s' is owned by uid %u, not by you", link, NOBODY);
	assert_non_null(strstr(msg, want));
	unlink(link);
	assert_int_equal(symlink(mine, link), 0);
	assert_int_equal(find_file(link, msg, sizeof msg), 0);
	assert_string_equal(msg, "my-token");
	assert_int_equal(lchown(link, NOBODY, NOBODY), 0);
	assert_int_equal(find_file(link, msg, sizeof msg), GG_ECRED);
	snprintf(want, sizeof want, "token file '%s' is a symbolic link made by uid %u", link,
		 NOBODY);
	assert_non_null(strstr(msg, want));
	unlink(link);
	unlink(mine);
	assert_int_equal(symlink(mine, link), 0);
	unsetenv("XDG_RUNTIME_DIR");
	if (access("/tmp/bt_u0", F_OK) != 0)
		assert_int_equal(find_file(link, msg, sizeof msg), GG_ENOTFOUND);
	unlink(link);
	unlink(other);
}

/* A FIFO in the file's place is refused at once, not waited on. */
static void test_file_fifo(void **state)
{
	(void)state;
	char msg[GG_ERR_MSG_MAX];
	assert_int_equal(mkfifo(file, 0600), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		_exit(find_file(file, msg, sizeof msg) == GG_ECRED &&
				      strstr(msg, "not a regular file")
			      ? 0
			      : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* /tmp/bt_u<uid> that another user wrote (the file discovery ends at) is
 * refused, and so is one in $XDG_RUNTIME_DIR: discovery stops there, it does
 * not go on to the next place. */
static void test_tmp_planted(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char tmp[64], msg[GG_ERR_MSG_MAX];
	snprintf(tmp, sizeof tmp, "/tmp/bt_u%u", (unsigned)geteuid());
	if (access(tmp, F_OK) == 0)
		skip();
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	write_text(tmp, "planted-in-tmp\n");
	assert_int_equal(chown(tmp, NOBODY, NOBODY), 0);
	int rc = gg_token_find(&t, &err);
	snprintf(msg, sizeof msg, "%s", err.msg);
	unlink(tmp);
	assert_int_equal(rc, GG_ECRED);
	assert_null(t);
	assert_non_null(strstr(msg, "is owned by uid 65534, not by you"));
	assert_non_null(strstr(msg, tmp));
	/* the file in $XDG_RUNTIME_DIR, refused: /tmp's is not tried */
	char xp[400];
	snprintf(xp, sizeof xp, "%s/bt_u%u", xdg, (unsigned)geteuid());
	xdg_token("xdg-token\n");
	chmod(xp, 0644);
	write_text(tmp, "tmp-token\n");
	rc = gg_token_find(&t, &err);
	unlink(tmp);
	assert_int_equal(rc, GG_ECRED);
	assert_null(t);
	assert_non_null(strstr(err.msg, xp));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rfc6750, reset),
		cmocka_unit_test_setup(test_discovery_order, reset),
		cmocka_unit_test_setup(test_invalid_stops, reset),
		cmocka_unit_test_setup(test_jwt_claims, reset),
		cmocka_unit_test_setup(test_file_owner_mode, reset),
		cmocka_unit_test_setup(test_file_links, reset),
		cmocka_unit_test_setup(test_file_fifo, reset),
		cmocka_unit_test_setup(test_tmp_planted, reset),
	};
	return cmocka_run_group_tests_name("cred-token", tests, setup, teardown);
}
