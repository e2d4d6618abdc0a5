/* lib/node: the node's contract (node.def) against the launcher's source and the
 * session file's schema; what is generated from it (the launcher's arguments, the
 * stream freeze --session reads, the node's GPU record command) run as the node runs
 * it; the session freeze's settings and the node's exit statuses as errors. */
#include "unit.h"

#include <jansson.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gridgpu/engine.h"
#include "gridgpu/node.h"
#include "node/node.h"
#include "image/image.h"
#include "engine/engine_int.h" /* a spec built as the library sees it */
#include "engine/sync.h"

#define LAUNCHER "libexec/gridgpu/session-launcher"
#define SCHEMA   "doc/json/session-file.schema.json"
#define WRAPPER  "libexec/gridgpu/batch-wrapper"

UNIT_TMPDIR("gg-node")

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int c;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* A script's getopts takes exactly the table's options (n of them, info(f) each),
 * with an operand where the table has one, and its usage comment names each with
 * that operand. */
static void flags_match(const char *script, char *opts, int n,
			const struct gg_node_flag_info *(*info)(int))
{
	char *src = slurp(script);
	const char *g = strstr(src, "\nwhile getopts ");
	assert_non_null(g);
	g += strlen("\nwhile getopts ");
	size_t len = strcspn(g, " ");
	if (len != strlen(opts) || memcmp(g, opts, len))
		fail_msg("%s: getopts '%.*s', the table '%s'", script, (int)len, g, opts);
	for (int f = 0; f < n; f++) {
		const struct gg_node_flag_info *fi = info(f);
		char usage[32], branch[8];
		snprintf(usage, sizeof usage, "-%c%s%s", fi->letter, fi->arg ? " " : "",
			 fi->arg ? fi->arg : "");
		snprintf(branch, sizeof branch, "\n\t%c) ", fi->letter);
		if (!strstr(src, usage) || !strstr(src, branch))
			fail_msg("%s has no '%s' in its usage or no branch for it", script, usage);
	}
	free(opts);
	free(src);
}

static const struct gg_node_flag_info *launcher_flag(int f)
{
	return gg_node_flag_info((enum gg_node_flag)f);
}

static const struct gg_node_flag_info *wrapper_flag(int f)
{
	return gg_node_wflag_info((enum gg_node_wflag)f);
}

static void test_flags_match_launcher(void **state)
{
	(void)state;
	flags_match(LAUNCHER, gg_node_optstring(), GG_NF_COUNT, launcher_flag);
}

/* The batch wrapper's options are the table's too (the job description's
 * arguments for a batch job come from its GG_NODE_WFLAG rows). */
static void test_flags_match_wrapper(void **state)
{
	(void)state;
	flags_match(WRAPPER, gg_node_wrapper_optstring(), GG_NW_COUNT, wrapper_flag);
}

/* The wrapper's record of how the command ended is what gg_job_exit_parse
 * reads, under the name the client asks the CE for (GG_JOB_EXIT_NAME), and the
 * wrapper still exits with the command's status (the CE's own failure): run
 * with a stand-in apptainer that runs the command after the image, its stderr
 * a file as the CE's job script makes it. */
static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_wrapper_records_end(void **state)
{
	(void)state;
	char dir[128], cmd[1024], path[256], wrapper[PATH_MAX];
	assert_non_null(realpath(WRAPPER, wrapper));
	snprintf(dir, sizeof dir, "%s/w", tmpdir);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/bin'", dir);
	assert_int_equal(system(cmd), 0);
	put_file(dir, "bin/apptainer",
		 "#!/bin/sh\nwhile :; do case $1 in */image.sif) break ;; esac; shift; done\n"
		 "shift\nexec \"$@\"\n",
		 0755);
	put_file(dir, "image.sif", "", 0644);
	/* the container run, as gridgpu submit stages it (gridgpu-enter) */
	struct gg_enter_opts eo = {.runtime = "apptainer", .image = GG_JOB_IMAGE_NAME};
	char *enter = NULL;
	assert_int_equal(gg_session_enter_script(&eo, &enter, NULL), 0);
	put_file(dir, GG_ENTER_NAME, enter, 0644);
	free(enter);
	put_file(dir, "job.err", "the CE wrote this\n", 0644);
	put_file(dir, "cmd.sh", "echo out; printf 'one\\ntwo \\033[31m\\n' >&2; exit 3\n", 0644);
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && PATH=\"$PWD/bin:$PATH\" sh '%s' image.sif -- sh cmd.sh >job.out "
		 "2>>job.err",
		 dir, wrapper);
	int st = system(cmd);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
	snprintf(path, sizeof path, "%s/" GG_JOB_EXIT_NAME, dir);
	char *text = slurp(path);
	struct gg_job_exit x;
	struct gg_err err = {0};
	assert_int_equal(gg_job_exit_parse(text, strlen(text), &x, &err), 0);
	assert_int_equal(x.status, 3);
	assert_int_equal(x.stderr_bytes, 14);
	assert_string_equal(x.tail, "one\ntwo \\x1b[31m");
	gg_job_exit_clear(&x);
	free(text);
}

/* The arguments a session's job description gives the launcher (every option the
 * table has) are what its option handling accepts: run here, each value arrives. */
static void test_launcher_accepts_args(void **state)
{
	(void)state;
	struct gg_session_spec q = {.deadline = 600,
				    .idle = 90,
				    .launcher = LAUNCHER,
				    .image = "x.sif",
				    .enter = LAUNCHER,
				    .res = {.walltime = 3600, .gpus = 1}};
	struct gg_record r = {.uid = (char *)"0123456789ab", .name = (char *)"s1"};
	struct gg_site site = {.name = (char *)"gla",
			       .ce = (char *)"https://ce/arex",
			       .worker_address = (char *)"10.0.0.7",
			       .gpu_rte = (char *)"ENV/GPU"};
	struct gg_err err = {0};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_site_allow_add(&site, "192.0.2.10", &err), 0);
	int drc = gg_session_describe(&q, &site, &r, "/nonexistent/key.pub", &jd, &err);
	if (drc)
		fail_msg("%s", err.msg);
	assert_string_equal(jd.args[0], GG_LAUNCHER_NAME);
	char *cmd = NULL;
	size_t len;
	FILE *m = open_memstream(&cmd, &len);
	fprintf(m, "set -u; deadline=1200 idle=0 addr='' first=22000 enter='' tick=5 walltime=0 "
		   "allow='' allow_set=''; eval \"$(sed -n '/^while getopts/,/^done/p' " LAUNCHER
		   ")\" && echo \"$deadline $idle $addr $enter $walltime $allow\"");
	fclose(m);
	char *argv[GG_JD_MAX + 4] = {"sh", "-c", cmd, "launcher"};
	for (int i = 1; i < jd.nargs; i++)
		argv[3 + i] = jd.args[i];
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execv("/bin/sh", argv);
		_exit(127);
	}
	close(p[1]);
	char out[256] = "";
	ssize_t k = read(p[0], out, sizeof out - 1);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	assert_true(k > 0);
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_string_equal(out, "600 90 10.0.0.7 " GG_ENTER_NAME " 3600 192.0.2.10\n");
	free(cmd);
	gg_jd_clear(&jd);
	free(site.allow_from[0]);
}

/* An option with an operand is given one, one without none. */
static void test_jd_arg_checked(void **state)
{
	(void)state;
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_node_jd_arg(&jd, GG_NF_DEADLINE, NULL, &err), GG_EFAIL);
	assert_int_equal(gg_node_jd_arg(&jd, GG_NF_GPUS, "1", &err), GG_EFAIL);
	assert_int_equal(jd.nargs, 0);
	assert_int_equal(gg_node_jd_arg(&jd, GG_NF_IDLE, "5", &err), 0);
	assert_int_equal(gg_node_jd_arg(&jd, GG_NF_GPUS, NULL, &err), 0);
	assert_int_equal(jd.nargs, 3);
	assert_string_equal(jd.args[0], "-i");
	assert_string_equal(jd.args[2], "-g");
	gg_jd_clear(&jd);
}

/* The session file's members: the table's, the schema's and those the launcher's
 * publish() writes are the same, each of the same type. */
static void test_fields_match_schema_and_launcher(void **state)
{
	(void)state;
	json_error_t je;
	json_t *schema = json_load_file(SCHEMA, 0, &je);
	assert_non_null(schema);
	json_t *props = json_object_get(schema, "properties");
	size_t n;
	const struct gg_node_field_info *f = gg_node_fields(&n);
	assert_int_equal(json_object_size(props), n);
	char *src = slurp(LAUNCHER);
	char *pub = strstr(src, "\npublish() {"), *end = pub ? strstr(pub, "\n}\n") : NULL;
	assert_non_null(end);
	*end = '\0';
	for (char *p = pub; *p; p++) /* one line: continuation lines joined */
		if (*p == '\\' && p[1] == '\n')
			p[0] = p[1] = ' ';
	for (char *p = pub; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' ';
	size_t said = 0;
	for (const char *p = pub; (p = strstr(p, " s ")); p++)
		said++;
	for (const char *p = pub; (p = strstr(p, " n ")); p++)
		said++;
	assert_int_equal(said, n);
	for (size_t i = 0; i < n; i++) {
		const char *type = json_string_value(
			json_object_get(json_object_get(props, f[i].name), "type"));
		if (!type || strcmp(type, f[i].type == 'n' ? "integer" : "string"))
			fail_msg("the schema's '%s' is %s", f[i].name, type ? type : "missing");
		char w[64];
		snprintf(w, sizeof w, " %c %s ", f[i].type, f[i].name);
		if (!strstr(pub, w))
			fail_msg("the launcher's publish() does not write '%s'", w);
	}
	free(src);
	json_decref(schema);
}

/* The session directory's files the launcher reads and writes are where the table
 * says ($SD/PATH, or $G/NAME for .gridgpu/NAME). */
static void test_paths_in_launcher(void **state)
{
	(void)state;
	static const enum gg_node_path used[] = {GG_NP_SESSION_FILE, GG_NP_AUTHKEYS, GG_NP_STOP,
						 GG_NP_DIR, GG_NP_GPUS};
	char *src = slurp(LAUNCHER);
	for (size_t i = 0; i < sizeof used / sizeof *used; i++) {
		const char *p = gg_node_path(used[i]);
		char sd[96], g[96];
		snprintf(sd, sizeof sd, "$SD/%s", p);
		snprintf(g, sizeof g, "$G/%s", !strncmp(p, ".gridgpu/", 9) ? p + 9 : "\n");
		if (!strstr(src, sd) && !strstr(src, g))
			fail_msg("the launcher does not spell %s", p);
	}
	free(src);
}

/* name in text as a whole word (not the start of a longer name) */
static int has_word(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p++)
		if (p[n] != '_' && !(p[n] >= 'A' && p[n] <= 'Z'))
			return 1;
	return 0;
}

/* The environment the job description gives the launcher, and the one it gives the
 * logins, are the variables the launcher reads and sets. */
static void test_env_in_launcher(void **state)
{
	(void)state;
	char *src = slurp(LAUNCHER);
	for (int e = 0; e < GG_NE_COUNT; e++)
		if (!has_word(src, gg_node_env((enum gg_node_env)e)))
			fail_msg("the launcher does not know %s", gg_node_env((enum gg_node_env)e));
	free(src);
}

/* cmd run by sh in session directory sd (GRIDGPU_SESSION_DIR), stdout to out,
 * with PATH path (NULL: ours): its exit status. */
static int run_node_path(const char *cmd, const char *sd, const char *out, const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		FILE *o = freopen(out, "w", stdout);
		if (!o || !freopen("/dev/null", "w", stderr))
			_exit(126);
		setenv(GG_NODE_SD_VAR, sd, 1);
		if (path)
			setenv("PATH", path, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int run_node(const char *cmd, const char *sd, const char *out)
{
	return run_node_path(cmd, sd, out, NULL);
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

/* The sandbox's stream, as the node writes it: the session's mount points and the
 * excluded left out, the rest there; through gzip when asked; the node's statuses for
 * a session without a sandbox and a directory that is not there. */
static void test_tar_command(void **state)
{
	(void)state;
	char sd[128], cmd[1024], out[160], list[160];
	snprintf(sd, sizeof sd, "%s/sd", tmpdir);
	snprintf(out, sizeof out, "%s/out.tar", tmpdir);
	snprintf(list, sizeof list, "%s/list", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "mkdir -p '%s/.gridgpu/sandbox' && cd '%s/.gridgpu/sandbox' && mkdir -p a tmp "
		 "opt/data home/u && touch a/keep tmp/junk opt/data/x opt/y home/u/z && "
		 "echo ./home >../sandbox-mounts",
		 sd, sd);
	assert_int_equal(system(cmd), 0);
	const char *excl[] = {"./tmp/*", "./opt/data"};
	char *tar = gg_node_tar_command(NULL, excl, 2, GG_LINK_NONE);
	assert_non_null(tar);
	assert_int_equal(strncmp(tar, GG_NODE_MARK, strlen(GG_NODE_MARK)), 0);
	assert_int_equal(run_node(tar, sd, out), 0);
	free(tar);
	snprintf(cmd, sizeof cmd, "tar -tf '%s' | sed 's,/$,,' >'%s'", out, list);
	assert_int_equal(system(cmd), 0);
	char *names = slurp(list);
	assert_true(has_line(names, "./a/keep"));
	assert_true(has_line(names, "./opt/y"));
	assert_true(has_line(names, "./tmp"));
	assert_false(has_line(names, "./tmp/junk"));
	assert_false(has_line(names, "./opt/data"));
	assert_false(has_line(names, "./opt/data/x"));
	assert_false(has_line(names, "./home"));
	free(names);
	/* through gzip: a gzip stream of the same */
	tar = gg_node_tar_command(NULL, excl, 2, GG_LINK_GZIP);
	assert_int_equal(run_node(tar, sd, out), 0);
	free(tar);
	snprintf(cmd, sizeof cmd, "gzip -dc '%s' | tar -tf - | grep -qx './a/keep'", out);
	assert_int_equal(system(cmd), 0);
	/* a directory by its path; one that is not there; a session without a sandbox */
	snprintf(cmd, sizeof cmd, "%s/sd/.gridgpu/sandbox/a", tmpdir);
	tar = gg_node_tar_command(cmd, NULL, 0, GG_LINK_NONE);
	assert_int_equal(run_node(tar, sd, out), 0);
	free(tar);
	tar = gg_node_tar_command("/nonexistent/dir", NULL, 0, GG_LINK_AUTO);
	assert_int_equal(run_node(tar, sd, out), GG_NODE_TAR_NO_DIR);
	free(tar);
	/* a login without tar (an image without it): its own status, not sh's 127 */
	snprintf(cmd, sizeof cmd, "%s/sd/.gridgpu/sandbox/a", tmpdir);
	for (int l = GG_LINK_AUTO; l <= GG_LINK_NONE; l++) {
		tar = gg_node_tar_command(cmd, NULL, 0, (enum gg_node_link)l);
		assert_int_equal(run_node_path(tar, sd, out, "/nonexistent"), GG_NODE_TAR_NO_TAR);
		free(tar);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s/.gridgpu/sandbox'", sd);
	assert_int_equal(system(cmd), 0);
	tar = gg_node_tar_command(NULL, excl, 2, GG_LINK_AUTO);
	assert_int_equal(run_node(tar, sd, out), GG_NODE_TAR_NO_SANDBOX);
	free(tar);
}

/* A path with a quote in it reaches tar as it is. */
static void test_tar_command_quoting(void **state)
{
	(void)state;
	char dir[160], cmd[512], out[160];
	snprintf(dir, sizeof dir, "%s/it's $(x)", tmpdir);
	snprintf(out, sizeof out, "%s/q.tar", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(cmd, sizeof cmd, "%s/f", dir);
	FILE *f = fopen(cmd, "w");
	assert_non_null(f);
	fclose(f);
	char *tar = gg_node_tar_command(dir, NULL, 0, GG_LINK_NONE);
	assert_int_equal(run_node(tar, tmpdir, out), 0);
	free(tar);
	snprintf(cmd, sizeof cmd, "tar -tf '%s' | grep -qx './f'", out);
	assert_int_equal(system(cmd), 0);
}

static void test_link_parse(void **state)
{
	(void)state;
	enum gg_node_link l = GG_LINK_NONE;
	assert_int_equal(gg_node_link_parse("auto", &l), 0);
	assert_int_equal(l, GG_LINK_AUTO);
	assert_int_equal(gg_node_link_parse("zstd", &l), 0);
	assert_int_equal(l, GG_LINK_ZSTD);
	assert_int_equal(gg_node_link_parse("none", &l), 0);
	assert_int_equal(l, GG_LINK_NONE);
	assert_int_equal(gg_node_link_parse("bzip2", &l), -1);
	assert_int_equal(gg_node_link_parse("", &l), -1);
}

/* The excluded: the defaults first, then the caller's made relative to the sandbox's
 * top; one that names no path in it refused (GG_EUSAGE, as --exclude's usage error). */
static void test_freeze_excludes(void **state)
{
	(void)state;
	struct gg_session_freeze *sf;
	struct gg_err err = {0};
	assert_int_equal(gg_session_freeze_new(&sf, &err), 0);
	size_t n;
	const char *const *x = gg_session_freeze_excludes(sf, &n);
	assert_int_equal(n, 4);
	assert_string_equal(x[0], "./tmp/*");
	assert_string_equal(x[3], "./root/.cache");
	assert_int_equal(gg_session_freeze_exclude(sf, "/opt/data", &err), 0);
	assert_int_equal(gg_session_freeze_exclude(sf, "././home/*/.cache", &err), 0);
	assert_int_equal(gg_session_freeze_exclude(sf, "//", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "--exclude '//': expected a path in the sandbox");
	assert_int_equal(gg_session_freeze_exclude(sf, "./", &err), GG_EUSAGE);
	assert_int_equal(gg_session_freeze_exclude(sf, "a\nb", &err), GG_EUSAGE);
	x = gg_session_freeze_excludes(sf, &n);
	assert_int_equal(n, 6);
	assert_string_equal(x[4], "./opt/data");
	assert_string_equal(x[5], "./home/*/.cache");
	assert_int_equal(gg_session_freeze_link(sf, "gzip", &err), 0);
	assert_int_equal(gg_session_freeze_link(sf, "fast", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "--link-comp 'fast': expected auto, zstd, gzip or none");
	gg_session_freeze_free(sf);
}

/* The node's exit statuses as the errors the user reads. */
static void test_tar_error(void **state)
{
	(void)state;
	struct gg_err err = {0};
	assert_int_equal(gg_node_tar_error(NULL, NULL, GG_NODE_TAR_NO_SANDBOX, NULL, &err),
			 GG_EFAIL);
	assert_non_null(strstr(err.msg, "the session has no sandbox"));
	assert_non_null(strstr(err.msg, "give --path DIR"));
	gg_node_tar_error("data", NULL, GG_NODE_TAR_NO_DIR, NULL, &err);
	assert_string_equal(err.msg, "no directory 'data' on the session's node");
	gg_node_tar_error("data", NULL, 2, "tar: ./s: Cannot open: Permission denied", &err);
	assert_string_equal(err.msg, "reading 'data' on the session's node failed (tar exit 2: "
				     "tar: ./s: Cannot open: Permission denied)");
	gg_node_tar_error(NULL, NULL, 2, "", &err);
	assert_string_equal(err.msg,
			    "reading 'the sandbox' on the session's node failed (tar exit 2)");
	/* status 3 is tar's own when no path was given: not "no directory" */
	gg_node_tar_error(NULL, NULL, GG_NODE_TAR_NO_DIR, NULL, &err);
	assert_non_null(strstr(err.msg, "tar exit 3"));
	/* no tar: the image's container a --path is read in, else the node */
	gg_node_tar_error("/usr", "dev.tar", GG_NODE_TAR_NO_TAR, NULL, &err);
	assert_string_equal(err.msg, "the session's image (dev.tar) has no 'tar', which reading "
				     "'/usr' needs inside its container: install tar in the "
				     "image, or freeze the sandbox (without --path)");
	gg_node_tar_error(NULL, "dev.tar", GG_NODE_TAR_NO_TAR, NULL, &err);
	assert_string_equal(err.msg, "the session's node has no 'tar' to read 'the sandbox' with");
}

/* Refused before the node is asked: an output that exists (without force), a batch
 * job, a session that ended or is not ready; each says where it stopped. */
static void test_freeze_refusals(void **state)
{
	(void)state;
	struct gg_session_freeze *sf;
	struct gg_err err = {0};
	char out[160];
	snprintf(out, sizeof out, "%s/exists.sif", tmpdir);
	FILE *f = fopen(out, "w");
	assert_non_null(f);
	fclose(f);
	struct gg_record r = {.name = (char *)"dev", .kind = GG_REC_SESSION, .state = GG_S_READY};
	struct gg_freeze_opts o = {.output = out};
	struct gg_freeze_result res;
	assert_int_equal(gg_session_freeze_new(&sf, &err), 0);
	assert_int_equal(gg_session_freeze(sf, NULL, &r, &o, NULL, &res, &err), GG_EFAIL);
	assert_int_equal(gg_session_freeze_step(sf), GG_SFREEZE_OUTPUT);
	assert_non_null(strstr(err.msg, "exists (use --force to replace it)"));
	gg_session_freeze_free(sf);
	snprintf(out, sizeof out, "%s/new.sif", tmpdir);
	static const struct {
		enum gg_rec_kind kind;
		enum gg_sess_state state;
		const char *says;
	} c[] = {{GG_REC_JOB, GG_S_RUNNING, "is a batch job, not a session"},
		 {GG_REC_SESSION, GG_S_KILLED, "its sandbox is gone with it"},
		 {GG_REC_SESSION, GG_S_QUEUED, "'gridgpu connect dev' waits for it"}};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		r.kind = c[i].kind;
		r.state = c[i].state;
		assert_int_equal(gg_session_freeze_new(&sf, &err), 0);
		assert_int_equal(gg_session_freeze(sf, NULL, &r, &o, NULL, &res, &err),
				 GG_ENOTFOUND);
		assert_int_equal(gg_session_freeze_step(sf), GG_SFREEZE_NODE);
		assert_non_null(strstr(err.msg, c[i].says));
		gg_session_freeze_free(sf);
	}
	assert_int_equal(access(out, F_OK), -1);
}

/* The session file's whole numbers are the table's: each refused when negative,
 * walltime and version too (the schema's minimum 0). */
static void test_session_file_numbers(void **state)
{
	(void)state;
	struct gg_launch_info li;
	struct gg_err err = {0};
	size_t n;
	const struct gg_node_field_info *f = gg_node_fields(&n);
	for (size_t i = 0; i < n; i++) {
		if (f[i].type != 'n' || !strcmp(f[i].name, "port"))
			continue;
		char text[128];
		int k = snprintf(text, sizeof text, "{\"state\":\"starting\",\"%s\":-1}",
				 f[i].name);
		assert_int_equal(gg_launch_info_parse(text, (size_t)k, &li, &err), GG_EPROTO);
		assert_non_null(strstr(err.msg, f[i].name));
		k = snprintf(text, sizeof text, "{\"state\":\"starting\",\"%s\":7}", f[i].name);
		assert_int_equal(gg_launch_info_parse(text, (size_t)k, &li, &err), 0);
		gg_launch_info_clear(&li);
	}
}

/* The node's sif_offset: a SIF's primary partition by its descriptors, not the first
 * "hsqs" of the file (here a stray one before it, as a definition file could hold). */
static char *node_sif_offset(const char *path)
{
	char script[128], cmd[PATH_MAX + 256], *out = calloc(1, 64);
	snprintf(script, sizeof script, "%s/sif_offset.sh", tmpdir);
	FILE *f = fopen(script, "w");
	assert_non_null(f);
	fputs(GG_NODE_SIF_OFFSET_SH "sif_offset \"$1\"\n", f);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof cmd, "sh %s %s", script, path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(out, 64, p))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
	return out;
}

static void test_sif_offset_sh(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/stray.sif", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct gg_sif_writer_opts o = {.deterministic = 1, .now = 1700000000};
	struct gg_sif_writer *w;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_writer_new(fd, path, &o, &w, &err), 0);
	int64_t start = gg_sif_writer_data_start(w), at = start + 4096;
	assert_int_equal(pwrite(fd, "..hsqs..", 8, start), 8);
	char part[512] = "hsqs";
	assert_int_equal(pwrite(fd, part, sizeof part, at), (ssize_t)sizeof part);
	assert_int_equal(gg_sif_writer_add_partition(w, 1, 1, at, sizeof part, GG_SIF_FS_SQUASHFS,
						     GG_SIF_PART_PRIMSYS, "01", &err),
			 0);
	int64_t size;
	assert_int_equal(gg_sif_writer_finish(w, &size, &err), 0);
	gg_sif_writer_free(w);
	close(fd);
	struct gg_sif *sif;
	assert_int_equal(gg_sif_open(path, &sif, &err), 0);
	char want[32];
	snprintf(want, sizeof want, "%lld", (long long)gg_sif_primary(sif)->offset);
	gg_sif_close(sif);
	assert_string_equal(want, "36864");
	char *got = node_sif_offset(path);
	assert_string_equal(got, want);
	free(got);
	/* not a SIF, or its descriptors cut off: nothing */
	assert_int_equal(truncate(path, 20000), 0);
	got = node_sif_offset(path);
	assert_string_equal(got, "");
	free(got);
	got = node_sif_offset("/etc/passwd");
	assert_string_equal(got, "");
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags_match_launcher),
		cmocka_unit_test(test_flags_match_wrapper),
		cmocka_unit_test(test_wrapper_records_end),
		cmocka_unit_test(test_launcher_accepts_args),
		cmocka_unit_test(test_jd_arg_checked),
		cmocka_unit_test(test_fields_match_schema_and_launcher),
		cmocka_unit_test(test_paths_in_launcher),
		cmocka_unit_test(test_env_in_launcher),
		cmocka_unit_test(test_tar_command),
		cmocka_unit_test(test_tar_command_quoting),
		cmocka_unit_test(test_link_parse),
		cmocka_unit_test(test_freeze_excludes),
		cmocka_unit_test(test_tar_error),
		cmocka_unit_test(test_freeze_refusals),
		cmocka_unit_test(test_session_file_numbers),
		cmocka_unit_test(test_sif_offset_sh),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
