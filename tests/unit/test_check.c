/* gridgpu check's node side: the probe (run here with /bin/sh, as a session's login
 * and the image's run do), the parser of its answer (dash's and bash's export -p),
 * and the comparison of two answers (lib/node/check.c, lib/node/compare.c); the
 * library's options (lib/engine/check.c). */
#include <stdio.h>
#include <sys/wait.h>

#include "unit.h"

#include "gridgpu/engine.h"
#include "node/check.h"

/* Run the probe's words with /bin/sh here (HOME, PATH and GG_X as given): its stdout. */
static char *run_probe(const char *const *mods, size_t nmods, char *const *cmd, size_t ncmd)
{
	char *words = gg_check_probe_words(mods, nmods, cmd, ncmd);
	assert_non_null(words);
	char *sh = gg_strdup_printf("env -i HOME=/home/u PATH=/usr/bin:/bin "
				    "GG_X='it'\\''s \"quoted\"\n$(two) lines' %s 2>/dev/null",
				    words);
	FILE *p = popen(sh, "r");
	assert_non_null(p);
	char *out = calloc(1, 1 << 16);
	size_t n = fread(out, 1, (1 << 16) - 1, p);
	out[n] = '\0';
	assert_true(pclose(p) != -1);
	free(sh);
	free(words);
	return out;
}

static void probe_runs(void **state)
{
	(void)state;
	const char *mods[] = {"json", "no_such_module_gg"};
	char *cmd[] = {"sh", "-c", "exit 3"};
	char *out = run_probe(mods, 2, cmd, 3);
	struct gg_check_report r;
	struct gg_err err = {0};
	assert_int_equal(gg_check_report_parse(out, strlen(out), &r, &err), 0);
	assert_int_equal(r.exit_status, 3);
	assert_string_equal(r.home, "/home/u");
	assert_non_null(strstr(r.which, "/sh"));
	assert_int_equal(r.nmods, 2);
	assert_string_equal(r.mods[0].name, "json");
	if (r.mods[0].state == GG_CHECK_MOD_OK) { /* a machine with python3 */
		assert_non_null(strstr(r.mods[0].text, "json/__init__.py"));
		assert_int_equal(r.mods[1].state, GG_CHECK_MOD_NO);
		assert_non_null(strstr(r.mods[1].text, "No module named"));
	}
	assert_string_equal(gg_check_env_get(&r, "GG_X"), "it's \"quoted\"\n$(two) lines");
	assert_string_equal(gg_check_env_get(&r, "PATH"), "/usr/bin:/bin");
	gg_check_report_clear(&r);
	free(out);
	char *none[] = {"no-such-program-gg"};
	out = run_probe(NULL, 0, none, 1);
	assert_int_equal(gg_check_report_parse(out, strlen(out), &r, &err), 0);
	assert_string_equal(r.which, "-");
	assert_int_equal(r.exit_status, 127);
	gg_check_report_clear(&r);
	free(out);
}

static void parse_bash(void **state)
{
	(void)state;
	static const char t[] = "gridgpu-check 1\nhome /root\nwhich -\nmodule x nopython -\n"
				"env-begin\ndeclare -x A=\"1 \\\"2\\\" \\$3\"\ndeclare -x B\n"
				"declare -rx C=plain\nenv-end\nexit 127\n";
	struct gg_check_report r;
	struct gg_err err = {0};
	assert_int_equal(gg_check_report_parse(t, strlen(t), &r, &err), 0);
	assert_int_equal(r.nenv, 2); /* B has no value */
	assert_string_equal(gg_check_env_get(&r, "A"), "1 \"2\" $3");
	assert_string_equal(gg_check_env_get(&r, "C"), "plain");
	assert_int_equal(r.mods[0].state, GG_CHECK_MOD_NOPYTHON);
	gg_check_report_clear(&r);
}

static void parse_refuses(void **state)
{
	(void)state;
	static const struct {
		const char *text, *says;
	} c[] = {
		{"", "no header"},
		{"gridgpu-check 2\nwhich -\nexit 0\n", "no header"},
		{"gridgpu-check 1\nwhich -\n", "ends early"},
		{"gridgpu-check 1\nexit 0\n", "ends early"},
		{"gridgpu-check 1\nwhich -\nexit 256\n", "exit status"},
		{"gridgpu-check 1\nwhich -\nexit -1\n", "exit status"},
		{"gridgpu-check 1\nwhich -\nexit\n", "does not write"},
		{"gridgpu-check 1\nwhat now\nexit 0\n", "does not write"},
		{"gridgpu-check 1\nmodule x maybe y\nwhich -\nexit 0\n", "module line"},
		{"gridgpu-check 1\nenv-begin\nexport A='x\nenv-end\nexit 0\n", "does not end"},
		{"gridgpu-check 1\nenv-begin\nexport A=1\n", "does not end"},
		{"gridgpu-check 1\nenv-begin\nexport 1A=1\nenv-end\n", "name"},
		{"gridgpu-check 1\nenv-begin\nexport A=1 B=2\nenv-end\n", "more than a value"},
		{"gridgpu-check 1\nenv-begin\nexport A=1\nexport A=2\nenv-end\n", "twice"},
		{"gridgpu-check 1\nenv-begin\nset A=1\nenv-end\n", "export -p"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		struct gg_check_report r;
		struct gg_err err = {0};
		assert_int_equal(gg_check_report_parse(c[i].text, strlen(c[i].text), &r, &err),
				 GG_EPROTO);
		if (!strstr(err.msg, c[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, c[i].says);
		gg_check_report_clear(&r);
	}
}

static void parse_or_fail(const char *t, struct gg_check_report *r)
{
	struct gg_err err = {0};
	if (gg_check_report_parse(t, strlen(t), r, &err) < 0)
		fail_msg("%s", err.msg);
}

/* The session's report and the image's: the lines compare says. */
static char *diffs(const char *s, const char *j)
{
	struct gg_check_report a, b;
	parse_or_fail(s, &a);
	parse_or_fail(j, &b);
	struct gg_check_diff *d = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_check_compare(&a, &b, "python3", &d, &n, &err), 0);
	char *out = strdup("");
	for (size_t i = 0; i < n; i++) {
		char *nx = gg_strdup_printf("%s%s|", out, d[i].line);
		free(out);
		out = nx;
	}
	gg_check_diffs_free(d, n);
	gg_check_report_clear(&a);
	gg_check_report_clear(&b);
	return out;
}

#define HEAD "gridgpu-check 1\nhome /home/u\n"

static void compare_says(void **state)
{
	(void)state;
	static const struct {
		const char *s, *j, *want;
	} c[] = {
		{HEAD "which /usr/bin/python3\nexit 0\n", HEAD "which /usr/bin/python3\nexit 0\n",
		 ""},
		{HEAD "which /usr/bin/python3\nexit 0\n", HEAD "which -\nexit 127\n",
		 "the command exits 0 in the session, 127 in the image|'python3' is "
		 "/usr/bin/python3 in the session, not found in the image: install it in the "
		 "session's sandbox and freeze again|"},
		{HEAD "which /home/u/.local/bin/python3\nexit 0\n",
		 HEAD "which /home/u/.local/bin/python3\nexit 0\n",
		 "'python3' is /home/u/.local/bin/python3, under $HOME: the site's home, not the "
		 "image (another site will not have it): install it in the sandbox, or freeze with "
		 "--include /home/u/.local/bin/python3|"},
		{HEAD "which -\nmodule g ok /home/u/.local/lib/g.py\nexit 0\n",
		 HEAD "which -\nmodule g ok /home/u/.local/lib/g.py\nexit 0\n",
		 "module g: from /home/u/.local/lib/g.py, under $HOME: the site's home, not the "
		 "image (another site will not have it): pip install it without --user in the "
		 "session, or freeze with --include|"},
		{HEAD "which -\nmodule g ok /usr/lib/g.py\nexit 0\n",
		 HEAD "which -\nmodule g no ModuleNotFoundError: No module named 'g'\nexit 1\n",
		 "the command exits 0 in the session, 1 in the image|module g: imported in the "
		 "session (/usr/lib/g.py), not in the image: ModuleNotFoundError: No module named "
		 "'g'|"},
		{HEAD "which -\nmodule g ok /usr/lib/g.py\nexit 0\n",
		 HEAD "which -\nmodule g nopython -\nexit 0\n",
		 "module g: the image has no python3|"},
		{HEAD "which -\nenv-begin\nexport A=1\nexport B=2\nexport PWD=/x\nexport "
		      "GRIDGPU_SESSION_DIR=/sd\nexport SSH_CLIENT=a\nenv-end\nexit 0\n",
		 HEAD
		 "which -\nenv-begin\nexport A=1\nexport B=3\nexport C=4\nexport PWD=/srv\nexport "
		 "GRIDGPU_MIN_GPU_MEMORY_MB=9\nenv-end\nexit 0\n",
		 "B is '2' in the session, '3' in the image|C='4' in the image, not set in the "
		 "session|"},
		/* the session's own variables (node.def) are not compared; the site's are */
		{HEAD
		 "which -\nenv-begin\nexport GRIDGPU_SCRATCH=/sd\nexport GRIDGPU_SFTP=/s\nexport "
		 "GRIDGPU_WARN_LEADS=9\nexport GRIDGPU_CACHE=root://c\nenv-end\nexit 0\n",
		 HEAD "which -\nenv-begin\nexport GRIDGPU_SESSION=x\nenv-end\nexit 0\n",
		 "GRIDGPU_CACHE='root://c' in the session, not set in the image|"},
		{HEAD "which -\nenv-begin\nexport A='\x1b[31m'\nenv-end\nexit 0\n",
		 HEAD "which -\nexit 0\n", "A='\\x1b[31m' in the session, not set in the image|"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		char *got = diffs(c[i].s, c[i].j);
		if (strcmp(got, c[i].want))
			fail_msg("case %zu:\n got '%s'\nwant '%s'", i, got, c[i].want);
		free(got);
	}
}

static void module_names(void **state)
{
	(void)state;
	assert_true(gg_check_module_ok("numpy"));
	assert_true(gg_check_module_ok("torch.cuda"));
	assert_true(gg_check_module_ok("_x9"));
	const char *bad[] = {"", "a b", "9x", ".a", "a.", "a..b", "a;rm", "a-b", "$(x)"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_false(gg_check_module_ok(bad[i]));
	struct gg_check *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_check_new(&c, &err), 0);
	assert_int_equal(gg_check_add_module(c, "a b", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--module 'a b': expected a Python module's name"));
	for (int i = 0; i < GG_CHECK_MAX_MODULES; i++)
		assert_int_equal(gg_check_add_module(c, "m", &err), 0);
	assert_int_equal(gg_check_add_module(c, "m", &err), GG_EUSAGE);
	assert_int_equal(gg_check_count(c), 0);
	assert_null(gg_check_session(c));
	gg_check_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(probe_runs),    cmocka_unit_test(parse_bash),
		cmocka_unit_test(parse_refuses), cmocka_unit_test(compare_says),
		cmocka_unit_test(module_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
