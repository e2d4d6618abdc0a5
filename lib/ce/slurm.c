/* The slurm+ssh backend: Slurm through a login node over ssh (the site's jump
 * hosts, then the login node, host keys pinned as for every hop). A job is a
 * directory DIR/ID on the shared file system the nodes see, holding what the
 * job description stages (launcher, wrapper, image, inputs), a job script made
 * from the same description an ARC CE gets, and the job's outputs. A submit
 * is one sftp session that makes a fresh directory and puts the job's files in
 * it, then one command: the script written, sbatch --parsable --hold, the
 * directory renamed to the job's id, the job released. Files go both ways
 * over sftp (lib/ssh/sftp.c), one sftp session kept on the connection.
 * Every value in a remote command is quoted for sh; what comes back is parsed
 * (squeue through ce/slurmq.h, sacct in sacct.c) and kept printable. */
#include "ce/backend.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/compat.h"
#include "core/json.h"
#include "ce/slurmq.h"
#include "ce/slurmstage.h"
#include "node/node.h"
#include "ssh/ssh.h"

#define JOB_SCRIPT "gridgpu-job.sh"
#define EXIT_FILE  ".gridgpu-exit"
#define OUTPUTS    ".gridgpu-outputs" /* the names the job declared, one a line */
#define NO_FILE    44                 /* a remote command's exit status: no such file */

struct slurm {
	struct gg_slurm_url url;
	struct gg_ssh_route rt;
	char *identity, *known_hosts;
	char *gpu_mode, *gpu_type; /* the site's slurm_gpu, slurm_gpu_type */
	char *proxy;               /* the user's proxy, for storage URLs; or NULL */
	int stage_login;           /* slurm_stage = login: the login node copies them */
	struct gg_ssh_conn *conn;
	struct gg_ssh_sftp *sftp; /* on conn, once a file went either way */
	const struct gg_log *log;
	int (*cancel)(void *);
	void *cancel_ud;
	char *staged; /* the last job submitted, its files put before sbatch */
	char *sent[GG_JD_MAX];
	int nsent; /* those of its inputs the caller's put_file need not send */
};

int gg_slurm_url_is(const char *url)
{
	return url && !strncmp(url, "slurm+ssh://", 12);
}

static int url_bad(const char *url, const char *why, struct gg_err *err)
{
	char *p = gg_str_printable(url, strnlen(url, 300));
	gg_err_set(err, GG_EUSAGE, "CE URL '%s': %s (slurm+ssh://USER@LOGIN[:PORT][/DIR])",
		   p ? p : "?", why);
	free(p);
	return GG_EUSAGE;
}

/* user and host: letters, digits and ._- only (they reach ssh and messages). */
static int plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return 0;
	return n > 0;
}

static int parse_port(const char *p, size_t n, int *port)
{
	int v = 0;
	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*port = v;
	return v >= 1 && v <= 65535 ? 0 : -1;
}

int gg_slurm_url_parse(const char *url, struct gg_slurm_url *u, struct gg_err *err)
{
	memset(u, 0, sizeof *u);
	if (!gg_slurm_url_is(url))
		return url_bad(url, "not a slurm+ssh:// URL", err);
	const char *p = url + 12, *slash = strchr(p, '/');
	size_t auth = slash ? (size_t)(slash - p) : strlen(p);
	const char *at = memchr(p, '@', auth);
	if (at) {
		if (!plain(p, (size_t)(at - p)) || (size_t)(at - p) >= sizeof u->user)
			return url_bad(url, "a bad user name", err);
		memcpy(u->user, p, (size_t)(at - p));
		u->has_user = 1;
		auth -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	const char *colon = memchr(p, ':', auth);
	size_t hl = colon ? (size_t)(colon - p) : auth;
	if (!plain(p, hl) || hl >= sizeof u->host)
		return url_bad(url, "no login node, or a bad host name", err);
	memcpy(u->host, p, hl);
	if (colon && parse_port(colon + 1, auth - hl - 1, &u->port) < 0)
		return url_bad(url, "a bad port", err);
	if (slash) {
		size_t dl = strlen(slash);
		while (dl > 1 && slash[dl - 1] == '/')
			dl--;
		if (dl >= sizeof u->dir || gg_str_has_control(slash) || strstr(slash, "/../") ||
		    (dl >= 3 && !strncmp(slash + dl - 3, "/..", 3)))
			return url_bad(url, "a bad directory", err);
		if (dl > 1) {
			memcpy(u->dir, slash, dl);
			u->has_dir = 1;
		}
	}
	if (!u->has_dir)
		snprintf(u->dir, sizeof u->dir, "gridgpu-jobs");
	return 0;
}

enum gg_ce_state gg_slurm_state(const char *s)
{
	static const struct {
		const char *name;
		enum gg_ce_state st;
	} map[] = {
		{"PENDING", GG_CE_QUEUED},       {"CONFIGURING", GG_CE_QUEUED},
		{"REQUEUE", GG_CE_QUEUED},       {"RESV_DEL_HOLD", GG_CE_QUEUED},
		{"RUNNING", GG_CE_RUNNING},      {"SUSPENDED", GG_CE_RUNNING},
		{"STOPPED", GG_CE_RUNNING},      {"SIGNALING", GG_CE_RUNNING},
		{"RESIZING", GG_CE_RUNNING},     {"STAGE_OUT", GG_CE_FINISHING},
		{"COMPLETING", GG_CE_FINISHING}, {"COMPLETED", GG_CE_FINISHED},
		{"CANCELLED", GG_CE_KILLED},     {"FAILED", GG_CE_FAILED},
		{"TIMEOUT", GG_CE_FAILED},       {"NODE_FAIL", GG_CE_FAILED},
		{"BOOT_FAIL", GG_CE_FAILED},     {"DEADLINE", GG_CE_FAILED},
		{"OUT_OF_MEMORY", GG_CE_FAILED}, {"PREEMPTED", GG_CE_FAILED},
		{"REVOKED", GG_CE_GONE},         {"SPECIAL_EXIT", GG_CE_FAILED},
	};
	size_t n = strcspn(s, " +");
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strlen(map[i].name) == n && !strncmp(s, map[i].name, n))
			return map[i].st;
	return GG_CE_UNKNOWN;
}

/* ---- the connection and remote commands ------------------------------------------------ */

static struct slurm *S(struct gg_ce *ce)
{
	return ce->impl;
}

/* A broken connection is not reused: it and its sftp session go. */
static void drop_conn(struct slurm *s)
{
	gg_ssh_sftp_end(s->sftp);
	s->sftp = NULL;
	gg_ssh_disconnect(s->conn);
	s->conn = NULL;
}

static int connect_login(struct slurm *s, struct gg_err *err)
{
	if (s->conn)
		return 0;
	s->rt.hops[0].log = s->log;
	int rc = gg_ssh_connect(s->rt.hops, s->rt.n, 30000, &s->conn, NULL, err);
	if (rc < 0)
		return gg_err_prefix(err, "reaching the Slurm login node %s", s->url.host);
	if (s->cancel)
		gg_ssh_set_cancel(s->conn, s->cancel, s->cancel_ud);
	return 0;
}

/* The job's directory, quoted: DIR/ID (DIR relative to the login's home when
 * not absolute). */
static void jobdir(FILE *f, const struct slurm *s, const char *id)
{
	char *d = gg_strdup_printf("%s/%s", s->url.dir, id ? id : "");
	gg_slurm_sq(f, d ? d : "/nonexistent");
	free(d);
}

static int close_cmd(FILE *f, char **cmd, size_t *len, struct gg_err *err)
{
	if (fclose(f) != 0 || !*cmd) {
		free(*cmd);
		*cmd = NULL;
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	(void)len;
	return 0;
}

/* Run cmd on the login node; its output in *out (max bytes), its status in
 * *status; what it said on stderr, printable, into the error when it fails
 * with a status not in ok_mask (bit n: status n is an answer). */
static int run(struct slurm *s, const char *what, const char *cmd, size_t max, char **out,
	       int *status, struct gg_err *err)
{
	char *text = NULL, *errtext = NULL;
	size_t len = 0;
	int st = 0, rc = connect_login(s, err);
	if (rc == 0)
		rc = gg_ssh_exec_capture(s->conn, cmd, max, &text, &len, &st, &errtext, err);
	if (rc < 0 && rc != GG_EUSAGE && s->conn)
		drop_conn(s);
	if (rc == 0 && !status && st != 0) {
		size_t n = errtext ? strnlen(errtext, 400) : 0;
		while (n && (errtext[n - 1] == '\n' || errtext[n - 1] == ' '))
			n--; /* what it said, not the line's end */
		char *p = errtext ? gg_str_printable(errtext, n) : NULL;
		rc = gg_err_set(err, GG_EJOB, "%s on %s failed (exit %d)%s%s", what, s->url.host,
				st, p && p[0] ? ": " : "", p ? p : "");
		free(p);
	}
	free(errtext);
	if (status)
		*status = st;
	if (rc == 0 && out)
		*out = text;
	else
		free(text);
	return rc;
}

/* A connection an sftp call broke is not reused. */
static int sftp_done(struct slurm *s, int rc)
{
	if ((rc == GG_ENET || rc == GG_EPROTO) && s->conn)
		drop_conn(s);
	return rc;
}

/* The connection's sftp session, started once. */
static int sftp_on(struct slurm *s, struct gg_err *err)
{
	int rc = connect_login(s, err);
	if (rc == 0 && !s->sftp)
		rc = sftp_done(s, gg_ssh_sftp_start(s->conn, &s->sftp, err));
	return rc;
}

/* ---- submit ----------------------------------------------------------------------------- */

static const char *env_value(const struct gg_jobdesc *jd, const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; i < jd->nenv; i++)
		if (!strncmp(jd->env[i], name, n) && jd->env[i][n] == '=')
			return jd->env[i] + n + 1;
	return NULL;
}

/* The GPU request as the site maps it: --gres=gpu[:TYPE]:N, or
 * --gpus=[TYPE:]N; a MIG device is one GPU of its profile's type. */
static void gpu_option(FILE *f, const struct slurm *s, const struct gg_jobdesc *jd)
{
	const char *gpus = env_value(jd, "GRIDGPU_GPUS"), *mig = env_value(jd, "GRIDGPU_MIG");
	const char *type = mig ? mig : s->gpu_type;
	const char *n = mig ? "1" : gpus;
	if (!n)
		return;
	int gres = !s->gpu_mode || strcmp(s->gpu_mode, "gpus");
	char *v = gres ? gg_strdup_printf("--gres=gpu:%s%s%s", type ? type : "", type ? ":" : "", n)
		       : gg_strdup_printf("--gpus=%s%s%s", type ? type : "", type ? ":" : "", n);
	if (v) {
		fputc(' ', f);
		gg_slurm_sq(f, v);
	}
	free(v);
}

static void opt(FILE *f, const char *fmt, long long v)
{
	char b[64];
	snprintf(b, sizeof b, fmt, v);
	fputc(' ', f);
	gg_slurm_sq(f, b);
}

/* sbatch's options: name, walltime, CPUs, memory, partition, GPUs. */
static void sbatch_options(FILE *f, const struct slurm *s, const struct gg_jobdesc *jd)
{
	if (jd->name) {
		fputs(" --job-name=", f);
		gg_slurm_sq(f, jd->name);
	}
	if (jd->walltime > 0)
		opt(f, "--time=%lld", (long long)((jd->walltime + 59) / 60));
	if (jd->cpus > 0)
		opt(f, "--cpus-per-task=%lld", jd->cpus);
	if (jd->memory > 0)
		opt(f, "--mem=%lldM", (long long)((jd->memory + (1u << 20) - 1) >> 20));
	if (jd->queue) {
		fputs(" --partition=", f);
		gg_slurm_sq(f, jd->queue);
	}
	gpu_option(f, s, jd);
}

/* The job script: into its directory, the description's environment, its
 * inputs from storage, then its executable and arguments with stdout and
 * stderr where it names them, its outputs to storage, and the exit status
 * left in EXIT_FILE. */
static int job_script(const struct slurm *s, const struct gg_jobdesc *jd, char **out,
		      struct gg_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	fputs("#!/bin/sh\n# a gridgpu job (slurm+ssh)\ncd ", f);
	jobdir(f, s, "");
	fputs("\"$SLURM_JOB_ID\" || exit 1\n", f);
	for (int i = 0; i < jd->nenv; i++) {
		const char *eq = strchr(jd->env[i], '=');
		fprintf(f, "%.*s=", (int)(eq - jd->env[i]), jd->env[i]);
		gg_slurm_sq(f, eq + 1);
		fprintf(f, "; export %.*s\n", (int)(eq - jd->env[i]), jd->env[i]);
	}
	if (!s->stage_login)
		gg_slurm_stage_in(f, jd);
	if (jd->executable[0] != '/')
		fputs("./", f);
	gg_slurm_sq(f, jd->executable);
	for (int i = 0; i < jd->nargs; i++) {
		fputc(' ', f);
		gg_slurm_sq(f, jd->args[i]);
	}
	fputs(" </dev/null >", f);
	gg_slurm_sq(f, jd->stdout_name ? jd->stdout_name : "/dev/null");
	if (jd->stderr_name && jd->stdout_name && !strcmp(jd->stderr_name, jd->stdout_name)) {
		fputs(" 2>&1", f);
	} else {
		fputs(" 2>", f);
		gg_slurm_sq(f, jd->stderr_name ? jd->stderr_name : "/dev/null");
	}
	fputs("\ngg_rc=$?\n", f);
	if (!s->stage_login)
		gg_slurm_stage_out(f, jd);
	fputs("echo \"$gg_rc\" >" EXIT_FILE "\n", f);
	return close_cmd(f, &buf, &len, err) < 0 ? err->code : (*out = buf, 0);
}

static int bad_name(const char *name)
{
	return !name[0] || !strcmp(name, ".") || !strcmp(name, "..") || gg_str_has_control(name) ||
	       name[0] == '/' || strstr(name, "../");
}

/* What the CE cannot do here, refused before anything is sent. */
static int refuse_unsupported(const struct gg_jobdesc *jd, const char *proxy, struct gg_err *err)
{
	if (!jd->executable || !jd->executable[0])
		return gg_err_set(err, GG_EUSAGE, "job description: no executable");
	if (gg_slurm_stage_check(jd, err) < 0)
		return err->code;
	for (int i = 0; i < jd->ninputs; i++)
		if (bad_name(jd->inputs[i].name))
			return gg_err_set(err, GG_EUSAGE,
					  "a bad file name for the job's directory");
	for (int i = 0; i < jd->noutputs; i++)
		if (jd->output_urls[i] && bad_name(jd->outputs[i]))
			return gg_err_set(err, GG_EUSAGE,
					  "a bad file name for the job's directory");
	if (gg_slurm_stage_named(jd) && !proxy)
		return gg_err_set(err, GG_ECRED,
				  "the job's storage URLs are reached with your proxy: run "
				  "'gridgpu proxy init'");
	for (int i = 0; i < jd->nenv; i++)
		if (!strchr(jd->env[i], '=') || jd->env[i][strcspn(jd->env[i], "=")] != '=' ||
		    strspn(jd->env[i],
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
			    strcspn(jd->env[i], "="))
			return gg_err_set(err, GG_EUSAGE,
					  "job description: a bad environment name");
	return 0;
}

/* The outputs the job declares (its outputs, stdout and stderr), one a line:
 * what ls shows of its directory, as an ARC CE keeps only those (not those it
 * puts to storage). */
static void outputs_list(FILE *f, const struct gg_jobdesc *jd)
{
	const char *std[2] = {jd->stdout_name, jd->stderr_name};
	fputs(" && printf '%s\\n'", f);
	for (int i = 0; i < jd->noutputs; i++)
		if (!strchr(jd->outputs[i], '\n') && !jd->output_urls[i]) {
			fputc(' ', f);
			gg_slurm_sq(f, jd->outputs[i]);
		}
	for (int k = 0; k < 2; k++)
		if (std[k] && !strchr(std[k], '\n')) {
			fputc(' ', f);
			gg_slurm_sq(f, std[k]);
		}
	fputs(" >\"$t/" OUTPUTS "\"", f);
}

/* The command: the script and the outputs' list into the directory t the
 * uploads made, the inputs from storage when the login node copies them (a
 * failed copy's line on stderr), sbatch --hold, t renamed to the job's id, the job released;
 * the id on stdout. On failure nothing is left (t removed, a job made
 * cancelled and its directory removed). */
static int submit_command(const struct slurm *s, const struct gg_jobdesc *jd, const char *script,
			  const char *t, char **cmd, struct gg_err *err)
{
	size_t len = 0;
	FILE *f = open_memstream(cmd, &len);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	fputs("umask 077; id=; cd ", f);
	gg_slurm_sq(f, s->url.dir);
	fputs(" && t=", f);
	gg_slurm_sq(f, t);
	fputs(" && printf '%s' ", f);
	gg_slurm_sq(f, script);
	fputs(" >\"$t/" JOB_SCRIPT "\"", f);
	outputs_list(f, jd);
	int oom = s->stage_login && gg_slurm_stage_login(f, jd) < 0;
	fputs(" && id=$(sbatch --parsable --hold --chdir=\"$PWD\" "
	      "--output=\"$PWD/%j/gridgpu-slurm.out\"",
	      f);
	sbatch_options(f, s, jd);
	fputs(" \"$t/" JOB_SCRIPT "\") && id=${id%%;*} && mv \"$t\" \"$id\" && "
	      "scontrol release \"$id\" && echo \"$id\" || { head -n 1 \"$t/" GG_SLURM_STAGE_ERR
	      "\" >&2 2>/dev/null; rm -rf \"$t\"; case $id in '' | *[!0-9_]*) ;; *) scancel "
	      "\"$id\"; rm -rf \"$id\" ;; esac; exit 1; }",
	      f);
	int rc = close_cmd(f, cmd, &len, err);
	if (rc == 0 && oom) {
		free(*cmd);
		*cmd = NULL;
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return rc;
}

static void sent_clear(struct slurm *s)
{
	for (int i = 0; i < s->nsent; i++)
		free(s->sent[i]);
	s->nsent = 0;
	free(s->staged);
	s->staged = NULL;
}

/* 1 when the last job submitted has name already (put before sbatch): the
 * caller's upload of it is done. */
static int already_sent(struct slurm *s, const char *id, const char *name)
{
	if (!s->staged || strcmp(s->staged, id))
		return 0;
	for (int i = 0; i < s->nsent; i++)
		if (!strcmp(s->sent[i], name)) {
			free(s->sent[i]);
			s->sent[i] = s->sent[--s->nsent];
			return 1;
		}
	return 0;
}

/* A fresh directory DIR/.new-HEX for the job's files, over sftp (DIR made
 * first when it is not there yet); *t its name. */
static int make_new_dir(struct slurm *s, char **t, struct gg_err *err)
{
	unsigned char r[8];
	char name[32] = ".new-";
	if (gg_compat_random(r, sizeof r) < 0)
		return gg_err_set(err, GG_EIO, "no random bytes for a directory name");
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(name + 5 + 2 * i, 3, "%02x", r[i]);
	char *path = gg_strdup_printf("%s/%s", s->url.dir, name);
	int rc = path && (*t = strdup(name)) ? sftp_on(s, err)
					     : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = sftp_done(s, gg_ssh_sftp_mkdir(s->sftp, path, err));
	if (rc == GG_ENOTFOUND) { /* the first job under DIR */
		char *cmd = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&cmd, &len);
		rc = f ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
		if (f) {
			fputs("umask 077; mkdir -p ", f);
			gg_slurm_sq(f, s->url.dir);
			rc = close_cmd(f, &cmd, &len, err);
		}
		if (rc == 0)
			rc = run(s, "making the jobs' directory", cmd, 4096, NULL, NULL, err);
		if (rc == 0 && (rc = sftp_on(s, err)) == 0)
			rc = sftp_done(s, gg_ssh_sftp_mkdir(s->sftp, path, err));
		free(cmd);
	}
	free(path);
	return rc < 0 ? gg_err_prefix(err, "making a job directory under %s on %s", s->url.dir,
				      s->url.host)
		      : 0;
}

/* The job's local inputs into DIR/t, on the one sftp session. */
static int put_inputs(struct slurm *s, const struct gg_jobdesc *jd, const char *t,
		      struct gg_err *err)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < jd->ninputs; i++) {
		const struct gg_jd_file *in = &jd->inputs[i];
		if (!in->local)
			continue;
		if (bad_name(in->name))
			return gg_err_set(err, GG_EUSAGE,
					  "a bad file name for the job's directory");
		int fd = open(in->local, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return gg_err_sys(err, GG_EIO, errno, "opening '%s'", in->local);
		char *path = gg_strdup_printf("%s/%s/%s", s->url.dir, t, in->name);
		rc = path ? sftp_done(s, gg_ssh_sftp_put_on(s->sftp, fd, path, NULL, NULL, err))
			  : gg_err_set(err, GG_ENOMEM, "out of memory");
		free(path);
		close(fd);
		if (rc < 0)
			gg_err_prefix(err, "writing %s on %s", in->name, s->url.host);
	}
	return rc;
}

/* The user's proxy into DIR/t for the staging (sftp makes it 0600). */
static int put_proxy(struct slurm *s, const char *t, struct gg_err *err)
{
	int fd = open(s->proxy, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gg_err_sys(err, GG_ECRED, errno, "reading your proxy '%s'", s->proxy);
	char *path = gg_strdup_printf("%s/%s/" GG_SLURM_PROXY, s->url.dir, t);
	int rc = path ? sftp_done(s, gg_ssh_sftp_put_on(s->sftp, fd, path, NULL, NULL, err))
		      : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(path);
	close(fd);
	return rc < 0 ? gg_err_prefix(err, "writing your proxy on %s", s->url.host) : 0;
}

/* DIR/t removed after a failed upload, best effort. */
static void remove_new_dir(struct slurm *s, const char *t)
{
	char *cmd = NULL;
	size_t len = 0;
	struct gg_err e = {0};
	FILE *f = open_memstream(&cmd, &len);
	if (!f)
		return;
	fputs("cd ", f);
	gg_slurm_sq(f, s->url.dir);
	fputs(" && rm -rf ", f);
	gg_slurm_sq(f, t);
	if (close_cmd(f, &cmd, &len, &e) == 0)
		run(s, "removing a job directory", cmd, 4096, NULL, NULL, &e);
	free(cmd);
}

/* The job's inputs staged, then the job made: an upload that fails leaves no
 * job and no directory. */
static int stage_and_submit(struct slurm *s, const struct gg_jobdesc *jd, const char *script,
			    char **out, struct gg_err *err)
{
	char *t = NULL, *cmd = NULL;
	int rc = make_new_dir(s, &t, err), made = rc == 0;
	if (rc == 0 && (rc = put_inputs(s, jd, t, err)) == 0 && gg_slurm_stage_named(jd))
		rc = put_proxy(s, t, err);
	if (rc < 0 && made)
		remove_new_dir(s, t);
	if (rc == 0)
		rc = submit_command(s, jd, script, t, &cmd, err);
	const char *what = s->stage_login && gg_slurm_stage_named(jd)
				   ? "staging the inputs from storage or sbatch"
				   : "sbatch";
	if (rc == 0)
		rc = run(s, what, cmd, 4096, out, NULL, err);
	free(cmd);
	free(t);
	return rc;
}

static int slurm_submit_jd(struct gg_ce *ce, const struct gg_jobdesc *jd, char **id,
			   struct gg_err *err)
{
	struct slurm *s = S(ce);
	char *script = NULL, *out = NULL;
	int rc = refuse_unsupported(jd, s->proxy, err);
	if (rc == 0)
		rc = job_script(s, jd, &script, err);
	if (rc == 0)
		rc = stage_and_submit(s, jd, script, &out, err);
	free(script);
	if (rc < 0)
		return rc;
	out[strcspn(out, "\r\n")] = '\0';
	if (!gg_slurmq_id_ok(out)) {
		free(out);
		return gg_err_set(err, GG_EPROTO, "sbatch on %s answered no job id", s->url.host);
	}
	sent_clear(s);
	s->staged = strdup(out);
	for (int i = 0; i < jd->ninputs && s->staged; i++)
		if (jd->inputs[i].local && (s->sent[s->nsent] = strdup(jd->inputs[i].name)))
			s->nsent++;
	*id = out;
	return 0;
}

static int slurm_submit(struct gg_ce *ce, const char *description, char **id, struct gg_err *err)
{
	(void)ce, (void)description, (void)id;
	return gg_err_set(err, GG_EUSAGE, "a slurm+ssh CE takes no xRSL");
}

/* ---- files ------------------------------------------------------------------------------- */

static int check_name(const char *id, const char *name, struct gg_err *err)
{
	if (!gg_slurmq_id_ok(id))
		return gg_err_set(err, GG_ENOTFOUND, "'%s' is not a Slurm job id", id);
	if (name && bad_name(name))
		return gg_err_set(err, GG_EUSAGE, "a bad file name for the job's directory");
	return 0;
}

static char *file_command(const struct slurm *s, const char *id, const char *name,
			  const char *action)
{
	char *cmd = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&cmd, &len);
	if (!f)
		return NULL;
	fputs("cd ", f);
	jobdir(f, s, id);
	fprintf(f, " 2>/dev/null || exit %d; f=", NO_FILE);
	gg_slurm_sq(f, name);
	fprintf(f, "; %s", action);
	if (fclose(f) != 0) {
		free(cmd);
		return NULL;
	}
	return cmd;
}

/* DIR/ID/NAME as the login's sftp server takes it (relative to its home when
 * DIR is). malloc'd. */
static char *job_path(const struct slurm *s, const char *id, const char *name)
{
	return gg_strdup_printf("%s/%s/%s", s->url.dir, id, name);
}

static int put_fd(struct slurm *s, const char *id, const char *name, int fd, struct gg_err *err)
{
	char *path = job_path(s, id, name);
	int rc = path ? sftp_on(s, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = sftp_done(s, gg_ssh_sftp_put_on(s->sftp, fd, path, NULL, NULL, err));
	free(path);
	if (rc == GG_ENOTFOUND)
		return gg_err_set(err, GG_ENOTFOUND, "job %s has no directory on %s", id,
				  s->url.host);
	if (rc < 0)
		return gg_err_prefix(err, "writing %s of job %s on %s", name, id, s->url.host);
	return 0;
}

static int slurm_put_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
			  gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	(void)progress, (void)ud;
	int rc = check_name(id, name, err);
	if (rc < 0 || already_sent(S(ce), id, name))
		return rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "opening '%s'", path);
	rc = put_fd(S(ce), id, name, fd, err);
	close(fd);
	return rc;
}

/* Small data through a pipe (the "stop" file). */
static int slurm_put(struct gg_ce *ce, const char *id, const char *name, const void *data,
		     size_t len, struct gg_err *err)
{
	int p[2], rc = check_name(id, name, err);
	if (rc < 0)
		return rc;
	if (len > 60000)
		return gg_err_set(err, GG_EUSAGE, "%s: too large to put in one piece", name);
	if (pipe(p) < 0)
		return gg_err_sys(err, GG_EIO, errno, "pipe");
	ssize_t w = len ? write(p[1], data, len) : 0;
	close(p[1]);
	rc = w == (ssize_t)len ? put_fd(S(ce), id, name, p[0], err)
			       : gg_err_set(err, GG_EIO, "pipe: short write");
	close(p[0]);
	return rc;
}

struct to_mem {
	char *buf;
	size_t len;
};

static int mem_sink(void *ud, const void *buf, size_t len)
{
	struct to_mem *m = ud;
	char *t = realloc(m->buf, m->len + len + 1);
	if (!t)
		return -1;
	memcpy(t + m->len, buf, len);
	m->buf = t;
	m->len += len;
	m->buf[m->len] = '\0';
	return 0;
}

struct to_file {
	int fd;
	gg_http_progress_fn progress;
	void *ud;
	uint64_t n;
};

static int file_sink(void *ud, const void *buf, size_t len)
{
	struct to_file *t = ud;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(t->fd, (const char *)buf + off, len - off);
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	t->n += len;
	if (t->progress)
		t->progress(t->ud, 0, (int64_t)t->n);
	return 0;
}

/* A file of the job's directory into sink, over sftp. */
static int read_job_file(struct slurm *s, const char *id, const char *name, uint64_t max,
			 gg_ssh_sink_fn sink, void *ud, struct gg_err *err)
{
	int rc = check_name(id, name, err);
	char *path = rc == 0 ? job_path(s, id, name) : NULL;
	if (rc == 0 && !path)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = sftp_on(s, err);
	if (rc == 0)
		rc = sftp_done(s, gg_ssh_sftp_get_on(s->sftp, path, max, sink, ud, err));
	free(path);
	if (rc == GG_ENOTFOUND)
		return gg_err_set(err, GG_ENOTFOUND, "job %s has no file %s on %s", id, name,
				  s->url.host);
	return rc < 0 ? gg_err_prefix(err, "reading %s of job %s", name, id) : 0;
}

static int slurm_get(struct gg_ce *ce, const char *id, const char *name, size_t max, char **data,
		     size_t *len, struct gg_err *err)
{
	struct to_mem m = {0};
	*data = NULL;
	*len = 0;
	int rc = read_job_file(S(ce), id, name, max, mem_sink, &m, err);
	if (rc == 0 && !m.buf && !(m.buf = calloc(1, 1)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc < 0) {
		free(m.buf);
		return rc;
	}
	*data = m.buf;
	*len = m.len;
	return 0;
}

static int slurm_get_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
			  gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	struct to_file t = {.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
			    .progress = progress,
			    .ud = ud};
	if (t.fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "creating '%s'", path);
	int rc = read_job_file(S(ce), id, name, 0, file_sink, &t, err);
	if (close(t.fd) < 0 && rc == 0)
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	if (rc < 0)
		unlink(path);
	return rc;
}

static int slurm_status(struct gg_ce *ce, const char *const *ids, size_t n,
			struct gg_ce_result **results, struct gg_err *err);

/* "failed": how Slurm ended the job, in the user's words (its status's
 * reason: "Slurm: TIMEOUT", "out of memory: ..."), "" when it did not fail. */
static int failed_words(struct gg_ce *ce, const char *id, char **text, struct gg_err *err)
{
	struct gg_ce_result *res = NULL;
	int rc = slurm_status(ce, &id, 1, &res, err);
	if (rc < 0)
		return rc;
	*text = strdup(res[0].state == GG_CE_FAILED && res[0].reason ? res[0].reason : "");
	gg_ce_results_free(res, 1);
	return *text ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* "errors": what Slurm itself wrote for the job (its batch script's own
 * output: a job directory it could not enter, a signal), the last 64 KiB;
 * "failed": how Slurm ended it. */
static int slurm_diagnose(struct gg_ce *ce, const char *id, const char *item, char **text,
			  struct gg_err *err)
{
	size_t len = 0;
	*text = NULL;
	if (!strcmp(item, "failed"))
		return failed_words(ce, id, text, err);
	if (strcmp(item, "errors"))
		return gg_err_set(err, GG_EUSAGE, "%s: a slurm-ssh CE has no '%s' diagnostics",
				  ce->endpoint, item);
	return slurm_get(ce, id, "gridgpu-slurm.out", 64 * 1024, text, &len, err);
}

/* The job directory's files, one a line (names with a newline left out). */
static int slurm_ls(struct gg_ce *ce, const char *id, char ***names, size_t *n, struct gg_err *err)
{
	*names = NULL;
	*n = 0;
	char *out = NULL;
	int st = 0, rc = check_name(id, NULL, err);
	char *cmd = rc == 0 ? file_command(S(ce), id, ".",
					   "while IFS= read -r f; do [ -f \"$f\" ] && printf "
					   "'%s\\n' \"$f\"; done <" OUTPUTS "; true")
			    : NULL;
	if (rc == 0 && !cmd)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = run(S(ce), "listing a job", cmd, 1 << 20, &out, &st, err);
	free(cmd);
	if (rc == 0 && st == NO_FILE)
		rc = gg_err_set(err, GG_ENOTFOUND, "job %s has no directory on %s", id,
				S(ce)->url.host);
	size_t cap = 0;
	for (char *p = rc == 0 ? out : NULL, *nl; p && *p; p = nl + 1) {
		if (!(nl = strchr(p, '\n')))
			break;
		*nl = '\0';
		if (!strcmp(p, JOB_SCRIPT) || !strcmp(p, EXIT_FILE) || gg_str_has_control(p))
			continue;
		if (*n == cap) {
			char **t = realloc(*names, (cap = cap ? 2 * cap : 16) * sizeof *t);
			if (!t) {
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			*names = t;
		}
		(*names)[(*n)++] = strdup(p);
	}
	free(out);
	return rc;
}

/* ---- status, kill, clean --------------------------------------------------------------- */

static struct gg_ce_result *results_new(const char *const *ids, size_t n, struct gg_err *err)
{
	struct gg_ce_result *r = calloc(n ? n : 1, sizeof *r);
	if (!r) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		r[i].id = strdup(ids[i]);
	return r;
}

static void set_result(struct gg_ce_result *r, int code, enum gg_ce_state st, const char *raw,
		       char *reason)
{
	r->code = code;
	r->state = st;
	free(r->raw_state);
	r->raw_state = raw ? strdup(raw) : NULL;
	free(r->reason);
	r->reason = reason;
}

/* The ids Slurm may be asked about; the others are answered 404. */
static size_t valid_ids(const char *const *ids, size_t n, const char **ok, struct gg_ce_result *res)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (gg_slurmq_id_ok(ids[i]))
			ok[k++] = ids[i];
		else
			set_result(&res[i], 404, GG_CE_GONE, NULL, strdup("not a Slurm job id"));
	}
	return k;
}

/* squeue's word on the jobs. */
static int from_squeue(struct slurm *s, const char *const *ok, size_t k, const char *const *ids,
		       size_t n, struct gg_ce_result *res, struct gg_err *err)
{
	char *cmd = gg_slurmq_command(ok, k), *out = NULL;
	int st = 0, rc = cmd ? run(s, "squeue", cmd, 1 << 20, &out, &st, err)
			     : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(cmd);
	if (rc == 0 && st == GG_SLURMQ_NO_SQUEUE)
		rc = gg_err_set(err, GG_EPROTO, "%s has no squeue: not a Slurm login node",
				s->url.host);
	struct gg_slurm_job *jobs = NULL;
	size_t nj = 0;
	if (rc == 0)
		rc = gg_slurmq_parse(out, strlen(out), &jobs, &nj, err);
	for (size_t j = 0; rc == 0 && j < nj; j++)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(ids[i], jobs[j].id) && !res[i].code) {
				enum gg_ce_state cs = gg_slurm_state(jobs[j].state);
				char *why = gg_slurmq_phrase(&jobs[j]);
				set_result(&res[i], 200, cs, jobs[j].state,
					   why ? why : gg_slurm_end_phrase(jobs[j].state, NULL));
			}
	free(jobs);
	free(out);
	return rc;
}

/* For an ended job's directory d (its exit status x): a job that ended well
 * with outputs the login node puts has them put (in the background, once),
 * reading as finishing until done (s=out); otherwise its proxy goes. */
#define STAGE_OUT_START                                                                  \
	"if [ \"$x\" = 0 ] && [ -f \"$d/" GG_SLURM_STAGE_OUT                             \
	"\" ] && [ ! -e \"$d/" GG_SLURM_STAGED "\" ] && [ ! -e \"$d/" GG_SLURM_STAGE_ERR \
	"\" ]; then s=out; if mkdir \"$d/" GG_SLURM_STAGING                              \
	"\" 2>/dev/null; then (cd \"$d\" && nohup sh " GG_SLURM_STAGE_OUT " </dev/null " \
	">/dev/null 2>&1 &); fi; else rm -f \"$d/" GG_SLURM_PROXY "\"; fi;"

/* Jobs squeue no longer shows: sacct's word, else scontrol's (an ended job
 * slurmctld still holds: TIMEOUT, OUT_OF_MEMORY...), else the exit status the
 * job script left, else gone (no directory). */
static int from_sacct_and_dirs(struct slurm *s, const char *const *ids, size_t n,
			       struct gg_ce_result *res, struct gg_err *err)
{
	char *cmd = NULL, *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&cmd, &len);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	fputs("for i in", f);
	for (size_t i = 0; i < n; i++)
		if (!res[i].code && gg_slurmq_id_ok(ids[i]))
			fprintf(f, " %s", ids[i]);
	/* sacct where Slurm keeps accounts; else slurmctld's memory of an ended
	 * job (scontrol, in sacct's form) */
	fputs("; do sacct -n -P -X -j \"$i\" -o JobIDRaw,State,ExitCode 2>/dev/null | head -n 1; "
	      "scontrol -o show job \"$i\" 2>/dev/null | sed -n 's/^JobId=\\([0-9]*\\) .* "
	      "JobState=\\([A-Z_]*\\) .* ExitCode=\\([0-9]*:[0-9]*\\).*/\\1|\\2|\\3/p' | "
	      "head -n 1; d=",
	      f);
	jobdir(f, s, "");
	fputs("\"$i\"; [ -d \"$d\" ] || continue; x=$(head -c 12 \"$d/" EXIT_FILE
	      "\" 2>/dev/null); s=; " STAGE_OUT_START " printf 'dir|%s|%s|%s|%s\\n' \"$i\" \"$x\" "
	      "\"$s\" \"$(head -c 300 \"$d/" GG_SLURM_STAGE_ERR "\" 2>/dev/null | head -n 1)\"; "
	      "done; true",
	      f);
	int rc = close_cmd(f, &cmd, &len, err);
	if (rc == 0)
		rc = run(s, "sacct", cmd, 1 << 20, &out, NULL, err);
	free(cmd);
	if (rc == 0)
		gg_slurm_parse_sacct(out, strlen(out), ids, n, res);
	free(out);
	return rc;
}

static int slurm_status(struct gg_ce *ce, const char *const *ids, size_t n,
			struct gg_ce_result **results, struct gg_err *err)
{
	*results = NULL;
	struct gg_ce_result *res = results_new(ids, n, err);
	const char **ok = calloc(n ? n : 1, sizeof *ok);
	int rc = res && ok ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	size_t k = rc == 0 ? valid_ids(ids, n, ok, res) : 0;
	if (k)
		rc = from_squeue(S(ce), ok, k, ids, n, res, err);
	int left = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		left |= !res[i].code;
	if (rc == 0 && left)
		rc = from_sacct_and_dirs(S(ce), ids, n, res, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!res[i].code)
			set_result(&res[i], 404, GG_CE_GONE, NULL,
				   strdup("Slurm and the shared directory know no such job"));
	free(ok);
	if (rc < 0) {
		gg_ce_results_free(res, n);
		return rc;
	}
	*results = res;
	return 0;
}

/* scancel or rm -rf of each job, one command. */
static int each_job(struct gg_ce *ce, const char *const *ids, size_t n, int clean,
		    struct gg_ce_result **results, struct gg_err *err)
{
	struct slurm *s = S(ce);
	*results = NULL;
	struct gg_ce_result *res = results_new(ids, n, err);
	char *cmd = NULL, *out = NULL;
	size_t len = 0;
	FILE *f = res ? open_memstream(&cmd, &len) : NULL;
	if (!f) {
		gg_ce_results_free(res, n);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	fputs("for i in", f);
	for (size_t i = 0; i < n; i++)
		if (gg_slurmq_id_ok(ids[i]))
			fprintf(f, " %s", ids[i]);
	if (clean) {
		fputs("; do d=", f);
		jobdir(f, s, "");
		fputs("\"$i\"; if [ -d \"$d\" ]; then rm -rf \"$d\" && echo \"$i|ok\"; else echo "
		      "\"$i|none\"; fi; done; true",
		      f);
	} else {
		fputs("; do d=", f);
		jobdir(f, s, "");
		fputs("\"$i\"; rm -f \"$d/" GG_SLURM_PROXY "\"; if scancel \"$i\" 2>/dev/null; "
		      "then echo \"$i|ok\"; else echo \"$i|none\"; fi; done; true",
		      f);
	}
	int rc = close_cmd(f, &cmd, &len, err);
	if (rc == 0)
		rc = run(s, clean ? "removing job directories" : "scancel", cmd, 1 << 16, &out,
			 NULL, err);
	free(cmd);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char want[48];
		snprintf(want, sizeof want, "%s|ok\n", ids[i]);
		int found = gg_slurmq_id_ok(ids[i]) && strstr(out, want);
		set_result(&res[i], found ? 202 : 404, found ? GG_CE_UNKNOWN : GG_CE_GONE, NULL,
			   found ? NULL : strdup("no such job"));
	}
	free(out);
	if (rc < 0) {
		gg_ce_results_free(res, n);
		return rc;
	}
	*results = res;
	return 0;
}

static int slurm_kill(struct gg_ce *ce, const char *const *ids, size_t n,
		      struct gg_ce_result **results, struct gg_err *err)
{
	return each_job(ce, ids, n, 0, results, err);
}

static int slurm_clean(struct gg_ce *ce, const char *const *ids, size_t n,
		       struct gg_ce_result **results, struct gg_err *err)
{
	return each_job(ce, ids, n, 1, results, err);
}

/* The user's Slurm jobs named as gridgpu names its jobs. */
static int slurm_list(struct gg_ce *ce, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err)
{
	char *out = NULL;
	*results = NULL;
	*n = 0;
	int rc = run(S(ce), "squeue", "squeue -h --me -o '%i|%T|%j' 2>/dev/null; true", 1 << 20,
		     &out, NULL, err);
	size_t cap = 0;
	for (char *p = rc == 0 ? out : NULL, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		*nl = '\0';
		char *b1 = strchr(p, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
		if (!b2 || strncmp(b2 + 1, "gridgpu-", 8))
			continue;
		*b1 = *b2 = '\0';
		if (!gg_slurmq_id_ok(p))
			continue;
		if (*n == cap) {
			struct gg_ce_result *t =
				realloc(*results, (cap = cap ? 2 * cap : 8) * sizeof *t);
			if (!t) {
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			*results = t;
		}
		struct gg_ce_result *r = &(*results)[(*n)++];
		memset(r, 0, sizeof *r);
		r->id = strdup(p);
		r->code = 200;
		r->state = gg_slurm_state(b1 + 1);
	}
	free(out);
	return rc;
}

static int slurm_job_names(struct gg_ce *ce, const char *const *ids, size_t n, char **names,
			   struct gg_err *err)
{
	char *out = NULL;
	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	int rc = run(S(ce), "squeue", "squeue -h --me -t all -o '%i|%j' 2>/dev/null; true", 1 << 20,
		     &out, NULL, err);
	for (char *p = rc == 0 ? out : NULL, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		*nl = '\0';
		char *bar = strchr(p, '|');
		if (!bar)
			continue;
		*bar = '\0';
		for (size_t i = 0; i < n; i++)
			if (!names[i] && !strcmp(ids[i], p) && !gg_str_has_control(bar + 1))
				names[i] = strdup(bar + 1);
	}
	free(out);
	return rc;
}

/* What the site offers as gg_glue2_offer_json's object says it: the login
 * node's name, the batch system, its running and waiting jobs (squeue). */
static int slurm_offer(struct gg_ce *ce, json_t **offer, struct gg_err *err)
{
	char *out = NULL;
	*offer = NULL;
	int rc = run(S(ce), "squeue", "squeue -h -t R,PD -o '%T' 2>/dev/null; true", 1 << 22, &out,
		     NULL, err);
	if (rc < 0)
		return rc;
	long running = 0, waiting = 0;
	for (char *p = out, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
		running += !strncmp(p, "RUNNING\n", 8);
		waiting += !strncmp(p, "PENDING\n", 8);
	}
	free(out);
	json_t *o = json_object();
	if (!o || gg_json_set_text(o, "name", S(ce)->url.host) < 0 ||
	    gg_json_set_text(o, "batch_system", "SLURM") < 0 ||
	    gg_json_set(o, "running", json_integer(running)) < 0 ||
	    gg_json_set(o, "waiting", json_integer(waiting)) < 0) {
		json_decref(o);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*offer = o;
	return 0;
}

static int slurm_info(struct gg_ce *ce, struct gg_ce_info *info, struct gg_err *err)
{
	memset(info, 0, sizeof *info);
	info->name = strdup(S(ce)->url.host);
	return info->name ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* ---- open, close ------------------------------------------------------------------------- */

static int route(struct slurm *s, const struct gg_site *site, struct gg_err *err)
{
	struct gg_ssh_target t = {.name = "login",
				  .node = s->url.host,
				  .port = s->url.port ? s->url.port : 22,
				  .user = s->url.has_user ? s->url.user : NULL,
				  .host_key = "-"};
	int rc = gg_ssh_session_route(site, &t, &s->rt, err);
	if (rc < 0)
		return rc;
	/* the login node is a host like the jump hosts: the site's key and
	 * known_hosts, not a session's pinned key */
	struct gg_ssh_hop *h = &s->rt.hops[s->rt.n - 1];
	h->pinned_key = NULL;
	h->identity = s->identity;
	h->known_hosts = s->known_hosts;
	free(s->rt.bufs[s->rt.n - 1].name);
	s->rt.bufs[s->rt.n - 1].name = gg_strdup_printf("the Slurm login node %s", s->url.host);
	h->name = s->rt.bufs[s->rt.n - 1].name;
	for (size_t i = 0; i + 1 < s->rt.n; i++) {
		s->rt.hops[i].identity = s->identity;
		s->rt.hops[i].known_hosts = s->known_hosts;
	}
	return 0;
}

static char *dup_or_null(const char *v)
{
	return v ? strdup(v) : NULL;
}

static void slurm_close(struct gg_ce *ce)
{
	struct slurm *s = S(ce);
	if (!s)
		return;
	drop_conn(s);
	gg_ssh_route_clear(&s->rt);
	sent_clear(s);
	free(s->identity);
	free(s->known_hosts);
	free(s->gpu_mode);
	free(s->gpu_type);
	free(s->proxy);
	free(s);
	ce->impl = NULL;
}

static int slurm_open(struct gg_ce *ce, const struct gg_ce_auth *auth, struct gg_err *err)
{
	const struct gg_site *site = ce->site;
	struct slurm *s = calloc(1, sizeof *s);
	if (!s)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ce->impl = s;
	int rc = gg_slurm_url_parse(ce->endpoint, &s->url, err);
	if (rc < 0)
		return rc;
	s->log = auth->log;
	s->cancel = auth->cancel;
	s->cancel_ud = auth->cancel_ud;
	if (auth->proxy_path && !(s->proxy = strdup(auth->proxy_path)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (site) {
		s->identity = dup_or_null(site->identity);
		s->known_hosts = dup_or_null(site->known_hosts);
		s->gpu_mode = dup_or_null(site->slurm_gpu);
		s->gpu_type = dup_or_null(site->slurm_gpu_type);
		s->stage_login = site->slurm_stage && !strcmp(site->slurm_stage, "login");
	}
	return route(s, site, err);
}

static int slurm_accepts(const char *endpoint)
{
	return gg_slurm_url_is(endpoint);
}

const struct gg_ce_ops gg_ce_slurm_ssh = {
	.name = "slurm-ssh",
	.accepts = slurm_accepts,
	.open = slurm_open,
	.close = slurm_close,
	.info = slurm_info,
	.submit = slurm_submit,
	.submit_jd = slurm_submit_jd,
	.status = slurm_status,
	.kill = slurm_kill,
	.clean = slurm_clean,
	.list = slurm_list,
	.job_names = slurm_job_names,
	.put = slurm_put,
	.put_file = slurm_put_file,
	.get = slurm_get,
	.get_file = slurm_get_file,
	.ls = slurm_ls,
	.diagnose = slurm_diagnose,
	.offer = slurm_offer,
	.no_credential = 1,
	.status_lrms = 1,
};
