/* freeze --session's report of what the image will not carry (lib/node/unfrozen.c):
 * the strict parser of the node's answer, the lines said to the user, and the node's
 * command run here against a home the test plants. */
#include "unit.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/node.h"

UNIT_TMPDIR("gg-unfrozen")

static int parse(const char *text, struct gg_unfrozen **u, size_t *n, struct gg_err *err)
{
	return gg_unfrozen_parse(text, strlen(text), u, n, err);
}

static void test_parse_findings(void **state)
{
	(void)state;
	struct gg_unfrozen *u;
	size_t n;
	struct gg_err err = {0};
	const char *text = "usersite\t/h/.local/lib/python3.11/site-packages\n"
			   "conda\t/h/miniconda3\n"
			   "startup\t/h/.bashrc\tFOO_1\n"
			   "path\t/h/tools/bin\n"
			   "conda\t/h/miniconda3\n" /* a duplicate: dropped */
			   "bind\t/data\n";
	assert_int_equal(parse(text, &u, &n, &err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(u[0].kind, GG_UNFROZEN_USERSITE);
	assert_string_equal(u[2].path, "/h/.bashrc");
	assert_string_equal(u[2].name, "FOO_1");
	assert_null(u[1].name);
	assert_int_equal(u[4].kind, GG_UNFROZEN_BIND);
	char *l = gg_unfrozen_line(&u[0]);
	assert_string_equal(l, "Python's user site /h/.local/lib/python3.11/site-packages (pip "
			       "install --user) is outside the sandbox: install without --user in "
			       "the session, or take it in with --include "
			       "/h/.local/lib/python3.11/site-packages");
	free(l);
	l = gg_unfrozen_line(&u[2]);
	assert_non_null(strstr(l, "/h/.bashrc exports FOO_1, which a batch job does not read"));
	free(l);
	gg_unfrozen_clear(u, n);
	assert_int_equal(parse("", &u, &n, &err), 0);
	assert_int_equal(n, 0);
	gg_unfrozen_clear(u, n);
}

/* A path with bytes a terminal would act on (not control bytes: those are refused) is
 * printed escaped. */
static void test_line_escapes(void **state)
{
	(void)state;
	struct gg_unfrozen *u;
	size_t n;
	struct gg_err err = {0};
	assert_int_equal(parse("path\t/h/\xe2\x80\xae"
			       "evil\xff\n",
			       &u, &n, &err),
			 0);
	char *l = gg_unfrozen_line(&u[0]);
	assert_non_null(strstr(l, "/h/\\xe2\\x80\\xaeevil\\xff"));
	assert_null(strstr(l, "\xe2\x80\xae"));
	free(l);
	gg_unfrozen_clear(u, n);
}

static void test_parse_refusals(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"usersite\t/h/x",             /* no newline at the end */
		"nonsense\t/h/x\n",           /* not a kind */
		"path\trelative/bin\n",       /* not absolute */
		"path\t/h/../etc\n",          /* a .. step */
		"path\t/h/..\n",              /* at the end */
		"path\t/h/\x1b[2Jx\n",        /* a control byte */
		"path\t/h/x\ty\n",            /* a field too many */
		"startup\t/h/.bashrc\n",      /* no name */
		"startup\t/h/.bashrc\tA-B\n", /* not a variable's name */
		"startup\t/h/.bashrc\t1A\n",
		"path\t\n", /* empty */
		"\n",
		"usersite /h/x\n", /* a space, not a tab */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct gg_unfrozen *u = (void *)1;
		size_t n = 7;
		struct gg_err err = {0};
		assert_int_equal(parse(bad[i], &u, &n, &err), GG_EPROTO);
		assert_null(u);
		assert_int_equal(n, 0);
		assert_non_null(strstr(err.msg, "what the image leaves out"));
	}
	struct gg_unfrozen *u;
	size_t n;
	struct gg_err err = {0};
	assert_int_equal(gg_unfrozen_parse("path\t/a\0b\n", 10, &u, &n, &err), GG_EPROTO);
	/* more lines than the limit */
	size_t max = GG_UNFROZEN_MAX_LINES + 1;
	char *many = malloc(max * 16), *p = many;
	for (size_t i = 0; i < max; i++)
		p += sprintf(p, "path\t/p%zu\n", i);
	assert_int_equal(parse(many, &u, &n, &err), GG_EPROTO);
	free(many);
}

/* The node's command, run here: HOME and the session directory planted by the test. */
static char *run_node_command(const char *home, const char *sd)
{
	char *cmd = gg_node_unfrozen_command();
	assert_non_null(cmd);
	char out[256];
	snprintf(out, sizeof out, "%s/out", tmpdir);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("HOME", home, 1);
		setenv("GRIDGPU_SESSION_DIR", sd, 1);
		if (!freopen(out, "w", stdout))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	free(cmd);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	FILE *f = fopen(out, "r");
	char *text = calloc(1, 65536);
	size_t len = fread(text, 1, 65535, f);
	text[len] = '\0';
	fclose(f);
	return text;
}

static void sh(const char *fmt, const char *a)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, fmt, a, a, a, a, a, a);
	assert_int_equal(system(cmd), 0);
}

/* A process of the session: PYTHONPATH under $HOME, its working directory there. */
static pid_t session_process(const char *home, const char *sd)
{
	char env1[300], env2[300], env3[300];
	snprintf(env1, sizeof env1, "GRIDGPU_SESSION_DIR=%s", sd);
	snprintf(env2, sizeof env2, "PYTHONPATH=/usr/lib/py:%s/pylib", home);
	/* the session directory's own is the job's too: not said */
	snprintf(env3, sizeof env3, "PATH=/usr/bin:/bin:%s/bin", sd);
	int fds[2];
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char *envp[] = {env1, env2, env3, "LD_LIBRARY_PATH=/gg-unfrozen-site/lib", NULL};
		if (chdir(home) < 0)
			_exit(126);
		execle("/bin/sleep", "sleep", "60", (char *)NULL, envp);
		_exit(127);
	}
	close(fds[1]);
	char c;
	assert_int_equal(read(fds[0], &c, 1), 0); /* closed by the child's exec */
	close(fds[0]);
	return pid;
}

static void test_node_command(void **state)
{
	(void)state;
	char home[128], sd[128];
	snprintf(home, sizeof home, "%s/home", tmpdir);
	snprintf(sd, sizeof sd, "%s/sd", tmpdir);
	sh("mkdir -p %s && echo '# export NO=1' >%s/.bashrc", home);
	/* the session's mounts: a site area, and the session directory's own */
	sh("mkdir -p %s/.gridgpu/sandbox && printf './gg-unfrozen-site\\n./tmp\\n' "
	   ">%s/.gridgpu/sandbox-mounts",
	   sd);
	char *text = run_node_command(home, sd);
	assert_string_equal(text, ""); /* a clean home: nothing */
	free(text);
	sh("mkdir -p %s/.local/lib/python3.11/site-packages/m %s/.local/bin %s/mc/conda-meta "
	   "%s/tools/bin %s/pylib %s/sp/bin",
	   home);
	sh("touch %s/.local/bin/t %s/.local/lib/python3.11/site-packages/m/x.py %s/sp/bin/spack "
	   "&& echo 'export FOO=1' >>%s/.bashrc",
	   home);
	sh("printf '  export PATH=\"$HOME/tools/bin:/nowhere:$PATH\"\\n' >%s/.profile", home);
	pid_t p = session_process(home, sd);
	text = run_node_command(home, sd);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	struct gg_unfrozen *u;
	size_t n;
	struct gg_err err = {0};
	assert_int_equal(gg_unfrozen_parse(text, strlen(text), &u, &n, &err), 0);
	char want[9][256];
	snprintf(want[0], 256, "usersite %s/.local/lib/python3.11/site-packages", home);
	snprintf(want[1], 256, "localbin %s/.local/bin", home);
	snprintf(want[2], 256, "conda %s/mc", home);
	snprintf(want[3], 256, "spack %s/sp", home);
	snprintf(want[4], 256, "startup %s/.bashrc", home);
	snprintf(want[5], 256, "path %s/tools/bin", home);
	snprintf(want[6], 256, "pythonpath %s/pylib", home);
	snprintf(want[7], 256, "bind %s", home);
	snprintf(want[8], 256, "ldpath /gg-unfrozen-site/lib");
	for (size_t w = 0; w < 9; w++) {
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			char got[256];
			snprintf(got, sizeof got, "%s %s", gg_unfrozen_kind_name(u[i].kind),
				 u[i].path);
			found |= !strcmp(got, want[w]);
		}
		if (!found)
			fail_msg("'%s' not in the node's answer:\n%s", want[w], text);
	}
	if (n != 10) /* and .profile's export of PATH; nothing of the session directory */
		fail_msg("%zu findings:\n%s", n, text);
	gg_unfrozen_clear(u, n);
	free(text);
}

static void test_tar_include(void **state)
{
	(void)state;
	const char *inc[] = {"/home/u/.local", "/home/u/it's"};
	char *cmd = gg_node_tar_command_with(NULL, NULL, 0, inc, 2, GG_LINK_NONE);
	assert_non_null(strstr(cmd, "-cf - . -C / 'home/u/.local' 'home/u/it'\\''s'"));
	free(cmd);
	cmd = gg_node_tar_command_with(NULL, NULL, 0, NULL, 0, GG_LINK_NONE);
	assert_null(strstr(cmd, "-C /"));
	free(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_findings), cmocka_unit_test(test_line_escapes),
		cmocka_unit_test(test_parse_refusals), cmocka_unit_test(test_node_command),
		cmocka_unit_test(test_tar_include),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
