/* The slurm+ssh backend's staging of storage URLs on the node
 * (lib/ce/slurmstage.c): which jobs stage, the URLs checked, and the script's
 * lines run for real by sh against fake xrdcp and curl that log what they
 * were asked (and fail when told): the transfers in order with the job's
 * proxy, davs:// as https://, the proxy gone afterwards, a failure or a
 * missing tool as one printable line and no command run; and the line a
 * failed staging leaves taken by status (sacct.c) as the job's failure. */
#include "unit.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ce/ce.h"
#include "ce/slurmstage.h"

UNIT_TMPDIR("gg-slurmstage")

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(p, mode);
}

static char *slurp(const char *dir, const char *name)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 8192);
	size_t n = fread(buf, 1, 8191, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int exists(const char *dir, const char *name)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

/* A job: a root:// and a davs:// input, a local one, a root:// output and a
 * kept one. */
static void job(struct gg_jobdesc *jd)
{
	struct gg_err err = {0};
	memset(jd, 0, sizeof *jd);
	assert_int_equal(
		gg_jd_input(jd, "in.dat", "root://se.example:1094//store/in.dat", NULL, &err), 0);
	assert_int_equal(gg_jd_input(jd, "b.txt", "davs://se.example:443/store/b.txt", NULL, &err),
			 0);
	assert_int_equal(gg_jd_input(jd, "local.txt", NULL, "/etc/hostname", &err), 0);
	assert_int_equal(
		gg_jd_output_url(jd, "out.txt", "root://se.example//store/u/out.txt", &err), 0);
	assert_int_equal(gg_jd_output(jd, "kept.txt", &err), 0);
}

static void named_and_checked(void **state)
{
	(void)state;
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_jd_input(&jd, "a", NULL, "/etc/hostname", &err), 0);
	assert_int_equal(gg_jd_output(&jd, "o", &err), 0);
	assert_false(gg_slurm_stage_named(&jd));
	assert_int_equal(gg_slurm_stage_check(&jd, &err), 0);
	gg_jd_clear(&jd);
	job(&jd);
	assert_true(gg_slurm_stage_named(&jd));
	assert_int_equal(gg_slurm_stage_check(&jd, &err), 0);
	gg_jd_clear(&jd);
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_jd_output_url(&jd, "o", "root://se.example//store/o", &err), 0);
	assert_true(gg_slurm_stage_named(&jd));
	gg_jd_clear(&jd);
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_jd_input(&jd, "g", "gsiftp://se.example/store/g", NULL, &err), 0);
	assert_int_equal(gg_slurm_stage_check(&jd, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "input 'g'"));
	gg_jd_clear(&jd);
}

/* Run the staging lines for jd in tmpdir/job with PATH path (the fake tools
 * first); gg_rc the command's status. The script's exit status. */
static int run_stage(const struct gg_jobdesc *jd, const char *path, int gg_rc, const char *env)
{
	char *text = NULL, dir[128], cmd[512];
	size_t len = 0;
	snprintf(dir, sizeof dir, "%s/job", tmpdir);
	unit_rmtree(dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	put(dir, GG_SLURM_PROXY, "a proxy\n", 0600);
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	fprintf(f, "cd '%s' || exit 9\n", dir);
	gg_slurm_stage_in(f, jd);
	fprintf(f, "echo ran >ran\ngg_rc=%d\n", gg_rc);
	gg_slurm_stage_out(f, jd);
	fclose(f);
	put(tmpdir, "script.sh", text, 0600);
	free(text);
	snprintf(cmd, sizeof cmd, "env -u X509_CERT_DIR PATH='%s' %s /bin/sh '%s/script.sh'", path,
		 env, tmpdir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Fake xrdcp and curl in tmpdir/NAME: each logs its name, its proxy, its
 * arguments; FAKE_FAIL=TOOL makes that one fail saying so (with an escape).
 * Without curl: the tools the script takes besides, and nothing else. */
static void fake_tools(const char *name, int with_curl)
{
	char bin[128];
	snprintf(bin, sizeof bin, "%s/%s", tmpdir, name);
	mkdir(bin, 0700);
	static const char body[] =
		"#!/bin/sh\nt=${0##*/}\necho \"$t $X509_USER_PROXY $X509_CERT_DIR $*\" "
		">>\"$LOG\"\nif [ \"$FAKE_FAIL\" = \"$t\" ]; then printf 'progress\\n\\n"
		"[ERROR] \\033[1mServer responded with an error: [3011] No such file\\n' >&2; "
		"exit 54; fi\n";
	put(bin, "xrdcp", body, 0700);
	if (with_curl) {
		put(bin, "curl", body, 0700);
		return;
	}
	static const char *const tools[] = {"tr", "head", "cut", "grep", "rm", "tail"};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		char from[64], to[192];
		snprintf(from, sizeof from, "/usr/bin/%s", tools[i]);
		snprintf(to, sizeof to, "%s/%s", bin, tools[i]);
		if (access(from, X_OK) < 0)
			snprintf(from, sizeof from, "/bin/%s", tools[i]);
		assert_int_equal(symlink(from, to), 0);
	}
}

static void script_transfers(void **state)
{
	(void)state;
	struct gg_jobdesc jd;
	char bin[128], dir[128], env[256];
	job(&jd);
	fake_tools("bin", 1);
	snprintf(bin, sizeof bin, "%s/bin:/usr/bin:/bin", tmpdir);
	snprintf(dir, sizeof dir, "%s/job", tmpdir);
	snprintf(env, sizeof env, "LOG='%s/log'", tmpdir);
	assert_int_equal(run_stage(&jd, bin, 0, env), 0);
	char *log = slurp(tmpdir, "log");
	char want[2048];
	snprintf(want, sizeof want,
		 "xrdcp %s/" GG_SLURM_PROXY " /etc/grid-security/certificates -s -f "
		 "root://se.example:1094//store/in.dat ./in.dat\n"
		 "curl %s/" GG_SLURM_PROXY " /etc/grid-security/certificates -fsS --capath "
		 "/etc/grid-security/certificates --cert %s/" GG_SLURM_PROXY
		 " --key %s/" GG_SLURM_PROXY " -o ./b.txt https://se.example:443/store/b.txt\n"
		 "xrdcp %s/" GG_SLURM_PROXY " /etc/grid-security/certificates -s -f ./out.txt "
		 "root://se.example//store/u/out.txt\n",
		 dir, dir, dir, dir, dir);
	assert_non_null(log);
	assert_string_equal(log, want);
	free(log);
	assert_true(exists(dir, "ran"));
	assert_false(exists(dir, GG_SLURM_PROXY));
	assert_false(exists(dir, GG_SLURM_STAGE_ERR));
	assert_false(exists(dir, GG_SLURM_STAGE_LOG));
	/* the command failed: nothing put, the proxy gone all the same */
	snprintf(want, sizeof want, "%s/log", tmpdir);
	unlink(want);
	assert_int_equal(run_stage(&jd, bin, 3, env), 0);
	log = slurp(tmpdir, "log");
	assert_non_null(log);
	assert_null(strstr(log, "./out.txt"));
	free(log);
	assert_false(exists(dir, GG_SLURM_PROXY));
	gg_jd_clear(&jd);
}

static void script_failures(void **state)
{
	(void)state;
	struct gg_jobdesc jd;
	char bin[128], dir[128], env[256];
	job(&jd);
	fake_tools("bin", 1);
	snprintf(bin, sizeof bin, "%s/bin:/usr/bin:/bin", tmpdir);
	snprintf(dir, sizeof dir, "%s/job", tmpdir);
	/* an input the storage does not have: the job ends before its command */
	snprintf(env, sizeof env, "LOG=/dev/null FAKE_FAIL=xrdcp");
	assert_int_equal(run_stage(&jd, bin, 0, env), 1);
	char *e = slurp(dir, GG_SLURM_STAGE_ERR);
	assert_non_null(e);
	assert_string_equal(e, "stage-in of in.dat from root://se.example:1094//store/in.dat: "
			       "[ERROR]  [1mServer responded with an error: [3011] No such file\n");
	free(e);
	assert_false(exists(dir, "ran"));
	assert_false(exists(dir, GG_SLURM_PROXY));
	/* a put that fails: the job's failure, after its command */
	snprintf(env, sizeof env, "LOG=/dev/null FAKE_FAIL=curl");
	gg_jd_clear(&jd);
	struct gg_err err = {0};
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_jd_output_url(&jd, "r.txt", "https://se.example/store/r.txt", &err), 0);
	assert_int_equal(run_stage(&jd, bin, 0, env), 1);
	assert_true(exists(dir, "ran"));
	e = slurp(dir, GG_SLURM_STAGE_ERR);
	assert_non_null(e);
	assert_non_null(strstr(e, "stage-out of r.txt to https://se.example/store/r.txt: [ERROR]"));
	free(e);
	assert_false(exists(dir, GG_SLURM_PROXY));
	/* a node without curl: one line naming it */
	fake_tools("nocurl", 0);
	snprintf(bin, sizeof bin, "%s/nocurl", tmpdir);
	assert_int_equal(run_stage(&jd, bin, 0, "LOG=/dev/null"), 1);
	e = slurp(dir, GG_SLURM_STAGE_ERR);
	assert_non_null(e);
	assert_non_null(strstr(e, ": curl is not on the node"));
	assert_ptr_equal(strchr(e, '\n'), e + strlen(e) - 1); /* one line */
	free(e);
	gg_jd_clear(&jd);
}

/* The line a failed staging left is the job's failure, and outputs the login
 * node is putting make the job finishing, whatever sacct says. */
static void status_line(void **state)
{
	(void)state;
	static const char out[] =
		"71|COMPLETED|0:0\n"
		"dir|71|0||stage-out of r.txt to root://se//r.txt: [ERROR] a | b\n"
		"72|FAILED|1:0\n"
		"dir|72|||stage-in of a from root://se//a: \033No such file\n"
		"73|COMPLETED|0:0\n"
		"dir|73|0||\n"
		"74|COMPLETED|0:0\n"
		"dir|74|0|out|\n";
	const char *ids[] = {"71", "72", "73", "74"};
	struct gg_ce_result r[4] = {{0}};
	gg_slurm_parse_sacct(out, strlen(out), ids, 4, r);
	assert_int_equal(r[0].state, GG_CE_FAILED);
	assert_string_equal(r[0].reason, "stage-out of r.txt to root://se//r.txt: [ERROR] a | b");
	assert_int_equal(r[1].state, GG_CE_FAILED);
	assert_string_equal(r[1].reason, "stage-in of a from root://se//a: ?No such file");
	assert_int_equal(r[2].state, GG_CE_FINISHED);
	assert_null(r[2].reason);
	/* the login node still putting its outputs: finishing, not finished */
	assert_int_equal(r[3].state, GG_CE_FINISHING);
	assert_non_null(strstr(r[3].reason, "login node"));
	for (int i = 0; i < 4; i++) {
		free(r[i].raw_state);
		free(r[i].reason);
	}
}

/* Login staging: the submit command's part run by sh in the jobs' directory
 * (the inputs into "$t", the outputs' script beside them), then that script as
 * status starts it: the puts, the proxy gone, the mark of its end. */
static void login_staging(void **state)
{
	(void)state;
	struct gg_jobdesc jd;
	char *text = NULL, dir[128], cmd[512];
	size_t len = 0;
	job(&jd);
	fake_tools("bin", 1);
	snprintf(dir, sizeof dir, "%s/job", tmpdir);
	unit_rmtree(dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	put(dir, GG_SLURM_PROXY, "a proxy\n", 0600);
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	fprintf(f, "cd '%s' && t=job", tmpdir);
	assert_int_equal(gg_slurm_stage_login(f, &jd), 0);
	fputs(" && echo submitted >job/ran\n", f);
	fclose(f);
	put(tmpdir, "submit.sh", text, 0600);
	free(text);
	snprintf(
		cmd, sizeof cmd,
		"env -u X509_CERT_DIR PATH='%s/bin:/usr/bin:/bin' LOG='%s/log' /bin/sh '%s/submit.sh'",
		tmpdir, tmpdir, tmpdir);
	char logp[160];
	snprintf(logp, sizeof logp, "%s/log", tmpdir);
	unlink(logp);
	assert_int_equal(system(cmd), 0);
	char *log = slurp(tmpdir, "log");
	assert_non_null(log);
	assert_non_null(strstr(log, "root://se.example:1094//store/in.dat ./in.dat\n"));
	assert_non_null(strstr(log, "-o ./b.txt https://se.example:443/store/b.txt\n"));
	assert_null(strstr(log, "out.txt")); /* not yet */
	free(log);
	assert_true(exists(dir, "ran"));
	assert_true(exists(dir, GG_SLURM_PROXY)); /* the outputs need it */
	assert_true(exists(dir, GG_SLURM_STAGE_OUT));
	snprintf(
		cmd, sizeof cmd,
		"cd '%s' && env PATH='%s/bin:/usr/bin:/bin' LOG='%s/log' /bin/sh " GG_SLURM_STAGE_OUT,
		dir, tmpdir, tmpdir);
	assert_int_equal(system(cmd), 0);
	log = slurp(tmpdir, "log");
	assert_non_null(strstr(log, "-s -f ./out.txt root://se.example//store/u/out.txt\n"));
	free(log);
	assert_true(exists(dir, GG_SLURM_STAGED));
	assert_false(exists(dir, GG_SLURM_PROXY));
	gg_jd_clear(&jd);
	/* no output to storage: the proxy goes once the inputs are in, no script */
	struct gg_err err = {0};
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_jd_input(&jd, "a", "root://se.example//store/a", NULL, &err), 0);
	put(dir, GG_SLURM_PROXY, "a proxy\n", 0600);
	snprintf(cmd, sizeof cmd, "%s/" GG_SLURM_STAGE_OUT, dir);
	unlink(cmd);
	text = NULL;
	f = open_memstream(&text, &len);
	fprintf(f, "cd '%s' && t=job", tmpdir);
	assert_int_equal(gg_slurm_stage_login(f, &jd), 0);
	fputc('\n', f);
	fclose(f);
	put(tmpdir, "submit.sh", text, 0600);
	free(text);
	snprintf(cmd, sizeof cmd,
		 "env PATH='%s/bin:/usr/bin:/bin' LOG=/dev/null /bin/sh '%s/submit.sh'", tmpdir,
		 tmpdir);
	assert_int_equal(system(cmd), 0);
	assert_false(exists(dir, GG_SLURM_PROXY));
	assert_false(exists(dir, GG_SLURM_STAGE_OUT));
	gg_jd_clear(&jd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(named_and_checked), cmocka_unit_test(script_transfers),
		cmocka_unit_test(script_failures),   cmocka_unit_test(status_line),
		cmocka_unit_test(login_staging),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
