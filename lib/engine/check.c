/* gridgpu check (and submit --check): before a job queues, run its image the way the
 * batch job will, on the node of a live session (no queue wait, the session's GPUs):
 * the real batch wrapper and the job's enter script (lib/node/enter.c), with the
 * job's binds and minimums, in a directory of its own under the session's
 * .gridgpu/check. The same command runs in the session too, and the two runs are
 * compared (lib/node/compare.c): exit status, where the command's first word and
 * the named Python modules resolve, the environment.
 *
 * Over one libssh2 connection to the session's sshd (its host key pinned, through
 * the site's jump hosts): the session's run is a login's command, the image's runs
 * on the node outside the container (GG_NODE_MARK). The image goes to the node once:
 * it is kept there under its SHA-256 until another one is checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "engine/engine_int.h"
#include "gridgpu/image.h"
#include "gridgpu/ssh.h"
#include "node/check.h"
#include "node/node.h"
#include "ssh/ssh.h"

#define CHECK_DIR    "$sd/.gridgpu/check"
#define CHECK_IMAGE  "gridgpu-image.sif"
#define SOURCE_LABEL "org.gridgpu.source"

struct gg_check {
	char *session;
	char *mods[GG_CHECK_MAX_MODULES];
	size_t nmods;
	int64_t timeout;
	/* after the run */
	char *used; /* the session compared with */
	struct gg_check_report rs, rj;
	struct gg_check_diff *d;
	size_t nd;
	char *said[2]; /* the last lines of each run's stderr, escaped */
	uint64_t sent; /* bytes of the image sent (0: the node had it) */
};

int gg_check_new(struct gg_check **out, struct gg_err *err)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*out)->timeout = 600;
	return 0;
}

void gg_check_free(struct gg_check *c)
{
	if (!c)
		return;
	free(c->session);
	for (size_t i = 0; i < c->nmods; i++)
		free(c->mods[i]);
	free(c->used);
	gg_check_report_clear(&c->rs);
	gg_check_report_clear(&c->rj);
	gg_check_diffs_free(c->d, c->nd);
	free(c->said[0]);
	free(c->said[1]);
	free(c);
}

int gg_check_set_session(struct gg_check *c, const char *name, struct gg_err *err)
{
	char *n = name ? strdup(name) : NULL;
	if (name && !n)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free(c->session);
	c->session = n;
	return 0;
}

int gg_check_add_module(struct gg_check *c, const char *name, struct gg_err *err)
{
	if (!gg_check_module_ok(name))
		return gg_err_set(err, GG_EUSAGE,
				  "--module '%s': expected a Python module's name (numpy, "
				  "torch.cuda)",
				  name);
	if (c->nmods == GG_CHECK_MAX_MODULES)
		return gg_err_set(err, GG_EUSAGE, "more than %d --module", GG_CHECK_MAX_MODULES);
	if (!(c->mods[c->nmods] = strdup(name)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	c->nmods++;
	return 0;
}

void gg_check_set_timeout(struct gg_check *c, int64_t seconds)
{
	c->timeout = seconds > 0 ? seconds : 600;
}

/* ---- which session ---- */

/* The session the image was frozen from (its source label), or NULL. */
static char *frozen_from(const char *image)
{
	struct gg_sif *sif = NULL;
	struct gg_err e = {0};
	if (!image || gg_sif_open(image, &sif, &e) < 0)
		return NULL;
	json_t *l = gg_sif_labels(sif);
	const char *v = json_string_value(json_object_get(l, SOURCE_LABEL));
	char *name = NULL;
	if (v && !strncmp(v, "session ", 8)) {
		size_t n = strcspn(v + 8, ":");
		name = gg_strdup_printf("%.*s", (int)n, v + 8);
	}
	json_decref(l);
	gg_sif_close(sif);
	return name;
}

/* Without --session: the image's session when it is ready, else the only ready one. */
static int pick_session(struct gg_check *c, struct gg_record *recs, size_t n, const char *image,
			struct gg_err *err)
{
	char *from = frozen_from(image);
	size_t ready = 0, at = n;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].kind != GG_REC_SESSION || recs[i].state != GG_S_READY)
			continue;
		if (from && !strcmp(recs[i].name, from)) {
			at = i;
			ready = 1;
			break;
		}
		ready++;
		at = i;
	}
	free(from);
	if (ready != 1)
		return gg_err_set(err, GG_EUSAGE,
				  ready ? "%zu sessions are ready: name one with --session NAME"
					: "no session is ready to check in ('gridgpu request' "
					  "starts one, 'gridgpu list' shows them)",
				  ready);
	return (c->used = strdup(recs[at].name)) ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The record of the session to check in (*r to clear). */
static int find_session(struct gg_check *c, struct gg_engine *e, const char *image,
			struct gg_record *r, struct gg_err *err)
{
	struct gg_record *recs = NULL;
	size_t n = 0, bad = 0;
	int rc = gg_store_list(e->st, &recs, &n, &bad, err);
	if (rc == 0 && c->session)
		rc = (c->used = strdup(c->session)) ? 0
						    : gg_err_set(err, GG_ENOMEM, "out of memory");
	else if (rc == 0)
		rc = pick_session(c, recs, n, image, err);
	size_t i = 0;
	while (rc == 0 && i < n && strcmp(recs[i].name, c->used))
		i++;
	if (rc == 0 && i == n)
		rc = gg_err_set(err, GG_ENOTFOUND,
				"no session named '%s' ('gridgpu list' shows them)", c->used);
	if (rc == 0) {
		*r = recs[i];
		memset(&recs[i], 0, sizeof recs[i]);
		if ((rc = gg_node_session_ready(r, err)) < 0)
			gg_err_prefix(err, "%s", r->name);
	}
	for (size_t k = 0; k < n; k++)
		gg_record_clear(&recs[k]);
	free(recs);
	return rc;
}

/* ---- the two runs ---- */

/* The last lines of a run's stderr (at most 5), escaped one by one. */
static char *last_lines(const char *t)
{
	if (!t || !*t)
		return NULL;
	size_t n = strlen(t);
	while (n && t[n - 1] == '\n')
		n--;
	size_t start = n;
	for (int k = 0; start && k < 5; k++)
		while (start && t[--start] != '\n')
			;
	if (t[start] == '\n')
		start++;
	char *out = strdup(""), *line;
	for (const char *p = t + start; out && p < t + n;) {
		size_t l = strcspn(p, "\n");
		line = gg_str_printable(p, l > 200 ? 200 : l);
		char *nx = line ? gg_strdup_printf("%s%s%s", out, *out ? "\n" : "", line) : NULL;
		free(line);
		free(out);
		out = nx;
		p += l + (p[l] == '\n');
	}
	return out;
}

/* Run the probe by cmd; which: 0 the session, 1 the image. *status: its exit. */
static int run_probe(struct gg_check *c, struct gg_ssh_conn *conn, char *cmd, int which,
		     int *status, struct gg_err *err)
{
	char *out = NULL, *etext = NULL;
	size_t len = 0;
	int rc = cmd ? gg_ssh_exec_capture(conn, cmd, GG_CHECK_MAX_TEXT, &out, &len, status, &etext,
					   err)
		     : gg_err_set(err, GG_ENOMEM, "out of memory");
	c->said[which] = last_lines(etext);
	struct gg_check_report *rep = which ? &c->rj : &c->rs;
	if (rc == 0 && gg_check_report_parse(out, len, rep, err) < 0) {
		char *first = etext ? gg_str_printable(etext, strcspn(etext, "\n")) : NULL;
		rc = gg_err_set(err, which ? GG_EJOB : GG_EPROTO,
				"the %s run ended with exit %d before the command ran%s%s",
				which ? "image's" : "session's", *status, first ? ": " : "",
				first ? first : "");
		free(first);
	}
	free(cmd);
	free(out);
	free(etext);
	return rc;
}

/* A heredoc of text to path (its end a line no text has). */
static char *heredoc(const char *path, const char *text, const char *mark)
{
	size_t n = strlen(text);
	return gg_strdup_printf("cat >%s <<'%s'\n%s%s%s\n", path, mark, text,
				n && text[n - 1] == '\n' ? "" : "\n", mark);
}

/* The job's variables, as submit's job description gives them (gg_jd_resources: the
 * GPU count, the MIG profile, the minimums the wrapper holds the GPUs against), and
 * the session's own ones unset (node.def): "unset A B; export N='V'; ...; ". */
static char *append(char *s, char *t)
{
	char *r = s && t ? gg_strdup_printf("%s%s", s, t) : NULL;
	free(s);
	free(t);
	return r;
}

static int job_env(const struct gg_job_spec *s, const struct gg_site *site, char **env,
		   struct gg_err *err)
{
	struct gg_jobdesc jd = {0};
	int rc = gg_jd_resources(&jd, &s->res, site, err);
	char *out = rc == 0 ? strdup("unset") : NULL;
	for (int e = 0; out && e < GG_NE_COUNT; e++)
		if (gg_node_env_own((enum gg_node_env)e))
			out = append(out,
				     gg_strdup_printf(" %s", gg_node_env((enum gg_node_env)e)));
	out = out ? append(out, strdup("; ")) : NULL;
	for (int i = 0; out && i < jd.nenv; i++) {
		const char *eq = strchr(jd.env[i], '=');
		char *v = gg_node_sh_quote(eq + 1);
		out = append(out, v ? gg_strdup_printf("export %.*s=%s; ", (int)(eq - jd.env[i]),
						       jd.env[i], v)
				    : NULL);
		free(v);
	}
	gg_jd_clear(&jd);
	*env = out;
	return out ? 0 : rc < 0 ? rc : gg_err_set(err, GG_ENOMEM, "out of memory");
}

#define HEREDOC_END "GRIDGPU_CHECK_END_OF_FILE"

/* The image's run on the node, outside the container, in a directory of its own
 * (removed when it ends): the wrapper, the job's enter script, the image (a link).
 * The session's own variables are unset (a batch job has none; with
 * GRIDGPU_SESSION_DIR the enter script would work in the session's directory), the
 * job's set (job_env). A run directory a day old is one whose run was cut off (the
 * client gone before its trap ran): removed. */
static int job_command(const struct gg_check *c, const struct gg_job_spec *s,
		       const struct gg_site *site, const char *img, const char *wrapper,
		       const char *enter, char **out, struct gg_err *err)
{
	char *env = NULL;
	*out = NULL;
	if (strstr(wrapper, HEREDOC_END) || strstr(enter, HEREDOC_END))
		return gg_err_set(err, GG_EUSAGE,
				  "the wrapper or the enter script holds the mark " HEREDOC_END);
	if (job_env(s, site, &env, err) < 0)
		return err->code;
	char *probe = gg_check_probe_words((const char *const *)c->mods, c->nmods, s->cmd,
					   (size_t)s->ncmd);
	char *rt = gg_node_sh_quote(site->runtime ? site->runtime : "apptainer");
	char *w = heredoc("\"$r/gridgpu-wrapper\"", wrapper, HEREDOC_END);
	char *en = heredoc("\"$r/" GG_ENTER_NAME "\"", enter, HEREDOC_END);
	char *cmd = NULL;
	if (probe && env && rt && w && en)
		cmd = gg_strdup_printf(
			GG_NODE_MARK
			" sd=${" GG_NODE_SD_VAR ":?}; c=" CHECK_DIR
			"; %smkdir -p \"$c\" && { find \"$c\" -maxdepth 1 -name "
			"'run.*' -mmin +1440 -exec rm -rf {} + 2>/dev/null; "
			"r=$(mktemp -d \"$c/run.XXXXXX\"); } "
			"|| exit 125\ntrap 'cd /; rm -rf \"$r\"' EXIT; trap 'exit 129' HUP INT "
			"TERM\n%s%sln -s %s \"$r/" CHECK_IMAGE "\" && cd \"$r\" && sh "
			"gridgpu-wrapper -r %s " CHECK_IMAGE " -- %s\n",
			env, w, en, img, rt, probe);
	free(probe);
	free(env);
	free(rt);
	free(w);
	free(en);
	*out = cmd;
	return cmd ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The image's run: its report in c->rj. */
static int image_run(struct gg_check *c, struct gg_ssh_conn *conn, const struct gg_job_spec *s,
		     const struct gg_site *site, const char *img, struct gg_err *err)
{
	char *wrapper = NULL, *enter = NULL;
	size_t len;
	int st = -1;
	int rc = gg_file_read(s->wrapper, 1 << 20, &wrapper, &len, err);
	if (rc == 0)
		rc = gg_job_enter_text(s, site, CHECK_IMAGE, &enter, err);
	char *cmd = NULL;
	if (rc == 0)
		rc = job_command(c, s, site, img, wrapper, enter, &cmd, err);
	if (rc == 0)
		rc = run_probe(c, conn, cmd, 1, &st, err);
	free(wrapper);
	free(enter);
	return rc;
}

/* ---- the image on the node ---- */

struct feed {
	struct gg_engine *e;
	void *p;
	uint64_t done, total;
	struct gg_check *c;
};

static void fed(void *ud, uint64_t bytes)
{
	struct feed *f = ud;
	f->done += bytes;
	f->c->sent = f->done;
	if (f->p && f->e->upload_progress)
		f->e->upload_progress(f->p, f->done, f->total);
}

/* Send the image to the node's check directory (the one kept there before goes). */
static int send_image(struct gg_check *c, struct gg_engine *e, struct gg_ssh_conn *conn,
		      const char *path, const char *sha, struct gg_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int rc = gg_err_sys(err, GG_EUSAGE, errno, "'%s'", path);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	struct feed f = {.e = e, .total = (uint64_t)st.st_size, .c = c};
	f.p = e->upload_begin ? e->upload_begin(e->ud, "the image to the session's node") : NULL;
	struct gg_ssh_input in = {.fd = fd, .fed = fed, .ud = &f};
	char *cmd = gg_strdup_printf(
		GG_NODE_MARK
		" sd=${" GG_NODE_SD_VAR ":?}; c=" CHECK_DIR "; mkdir -p \"$c\" && "
		"cd \"$c\" && rm -f image-*.sif image-*.part && umask 077 && cat >image-%s.part "
		"&& mv -f image-%s.part image-%s.sif",
		sha, sha, sha);
	int status = -1;
	char *etext = NULL;
	int rc = cmd ? gg_ssh_exec_input(conn, cmd, &in, &status, &etext, err)
		     : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (f.p && e->upload_end)
		e->upload_end(f.p);
	if (rc == 0 && status != 0) {
		char *said = etext ? gg_str_printable(etext, strcspn(etext, "\n")) : NULL;
		rc = gg_err_set(err, GG_EFAIL,
				"sending the image to the session's node failed "
				"(exit %d)%s%s",
				status, said ? ": " : "", said ? said : "");
		free(said);
	}
	free(etext);
	free(cmd);
	close(fd);
	return rc;
}

/* Where the image is on the node, for sh (*img): a node: path as it is, else the
 * check directory's copy, sent when the node does not have it yet. */
static int image_on_node(struct gg_check *c, struct gg_engine *e, struct gg_ssh_conn *conn,
			 const struct gg_job_spec *s, char **img, struct gg_err *err)
{
	size_t mark = strlen(GG_IMAGE_NODE_MARK);
	if (!strncmp(s->image, GG_IMAGE_NODE_MARK, mark))
		return (*img = gg_node_sh_quote(s->image + mark))
			       ? 0
			       : gg_err_set(err, GG_ENOMEM, "out of memory");
	char sha[GG_SHA256_HEX], *out = NULL, *etext = NULL;
	size_t len;
	int st = -1;
	int rc = gg_sha256_file(s->image, sha, err);
	char *cmd = rc == 0 ? gg_strdup_printf(GG_NODE_MARK " sd=${" GG_NODE_SD_VAR
							    ":?}; [ -s \"" CHECK_DIR
							    "/image-%s.sif\" ] "
							    "&& echo have; exit 0",
					       sha)
			    : NULL;
	if (rc == 0)
		rc = cmd ? gg_ssh_exec_capture(conn, cmd, 64, &out, &len, &st, &etext, err)
			 : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !(out && !strncmp(out, "have", 4)))
		rc = send_image(c, e, conn, s->image, sha, err);
	if (rc == 0 && !(*img = gg_strdup_printf("\"" CHECK_DIR "/image-%s.sif\"", sha)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	free(cmd);
	free(out);
	free(etext);
	return rc;
}

/* ---- the check ---- */

/* The image's run ended before the command (the wrapper's GPU check, an image
 * without /bin/sh...): that is the one difference. */
static int broken_image(struct gg_check *c, const struct gg_err *why, struct gg_err *err)
{
	if (!(c->d = calloc(1, sizeof *c->d)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	c->nd = 1;
	c->d->kind = GG_CHECK_EXIT;
	c->d->name = strdup("exit");
	c->d->line = strdup(why->msg);
	return c->d->name && c->d->line ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* Over one connection to the session: its run, the image to the node, the image's
 * run (its spec's GPUs the session's when it asks for none). */
static int both_runs(struct gg_check *c, struct gg_engine *e, const struct gg_job_spec *s,
		     const struct gg_record *r, const struct gg_site *site, struct gg_err *err)
{
	struct gg_ssh_route rt;
	struct gg_ssh_conn *conn = NULL;
	int rc = gg_session_route(site, r, &rt, err), st = -1;
	if (rc == 0) {
		rc = gg_ssh_connect(rt.hops, rt.n, 20000, &conn, NULL, err);
		gg_ssh_route_clear(&rt);
	}
	if (rc < 0)
		return rc;
	gg_ssh_set_cancel(conn, e->cancel, e->ud);
	gg_ssh_set_timeout(conn, (int)(c->timeout > 86400 ? 86400000 : c->timeout * 1000));
	gg_engine_notef(e, GG_NOTE_INFO, "running the command in the session %s", r->name);
	rc = run_probe(c, conn,
		       gg_check_probe_words((const char *const *)c->mods, c->nmods, s->cmd,
					    (size_t)s->ncmd),
		       0, &st, err);
	char *img = NULL;
	if (rc == 0)
		rc = image_on_node(c, e, conn, s, &img, err);
	struct gg_job_spec js = *s;
	if (!js.res.gpus && !js.res.mig) {
		js.res.gpus = r->gpus;
		js.res.mig = r->mig;
	}
	if (rc == 0)
		gg_engine_notef(e, GG_NOTE_INFO,
				"running the image through the batch wrapper on %s's node",
				r->name);
	if (rc == 0)
		rc = image_run(c, conn, &js, site, img, err);
	free(img);
	gg_ssh_disconnect(conn);
	return rc;
}

int gg_check_run(struct gg_check *c, struct gg_engine *e, const struct gg_job_spec *s,
		 struct gg_err *err)
{
	if (!s->image || !s->wrapper || s->ncmd < 1)
		return gg_err_set(err, GG_EUSAGE,
				  "the check needs an image, the wrapper and a "
				  "command");
	if (c->used)
		return gg_err_set(err, GG_EUSAGE, "a check runs once");
	struct gg_record r = {0};
	int rc = find_session(c, e, s->image, &r, err);
	const struct gg_site *site = rc == 0 ? gg_engine_site(e, r.site) : NULL;
	if (rc == 0 && !site)
		rc = gg_err_set(err, GG_EUSAGE, "the session's site '%s' has no profile", r.site);
	if (rc == 0)
		rc = both_runs(c, e, s, &r, site, err);
	if (rc == GG_EJOB) {
		struct gg_err why = *err;
		gg_err_clear(err);
		rc = broken_image(c, &why, err);
	} else if (rc == 0) {
		rc = gg_check_compare(&c->rs, &c->rj, s->cmd[0], &c->d, &c->nd, err);
	}
	gg_record_clear(&r);
	return rc;
}

const char *gg_check_session(const struct gg_check *c)
{
	return c->used;
}

size_t gg_check_count(const struct gg_check *c)
{
	return c->nd;
}

static const char *const kind_names[] = {"exit", "command", "module", "environment"};

int gg_check_difference(const struct gg_check *c, size_t i, const char **kind, const char **name,
			const char **session, const char **image, const char **line)
{
	if (i >= c->nd)
		return -1;
	const struct gg_check_diff *d = &c->d[i];
	*kind = kind_names[d->kind];
	*name = d->name;
	*session = d->session;
	*image = d->image;
	*line = d->line;
	return 0;
}

int gg_check_exits(const struct gg_check *c, int *session, int *image)
{
	*session = c->rs.exit_status;
	*image = c->rj.exit_status;
	return c->used && c->rs.which && c->rj.which ? 0 : -1;
}

const char *gg_check_said(const struct gg_check *c, int image)
{
	return c->said[image ? 1 : 0];
}

uint64_t gg_check_sent(const struct gg_check *c)
{
	return c->sent;
}
