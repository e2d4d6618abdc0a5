/* freeze --session: a session's sandbox (or a directory on its node), streamed as a
 * tar over ssh through the site's jump hosts (the session's host key pinned) into
 * gg_image_freeze. */
#include "gridgpu/node.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>

#include <jansson.h>

#include "gpu/gpu.h"
#include "image/image.h"
#include "gridgpu/ce.h"
#include "gridgpu/engine.h"
#include "node/node.h"
#include "store/store.h"
#include "node/sshview.h"
#include "core/run.h"
#include "ssh/ssh.h"

#define SOURCE_LABEL "org.gridgpu.source="

/* What the session's sandbox leaves out by default: its temporary files and package
 * caches (the session's own mount points are added on the node). */
static const char *const default_excludes[] = {"./tmp/*", "./var/tmp/*",
					       "./var/cache/apt/archives/*.deb", "./root/.cache"};
#define NDEFAULT (sizeof default_excludes / sizeof *default_excludes)

struct gg_session_freeze {
	char *path;  /* --path DIR, or NULL: the sandbox */
	char **excl; /* the defaults, then the caller's */
	size_t nexcl;
	char **inc; /* --include: paths of the node taken in */
	size_t ninc;
	int strict;               /* what the image will not carry is an error */
	struct gg_unfrozen *unfz; /* what the node said it will not carry */
	char **unfz_line;         /* and what to do, one line each */
	size_t nunfz;
	enum gg_node_link link;
	void (*info)(void *ud, const char *msg);
	void *info_ud;
	enum gg_session_freeze_step step;
	char *source; /* its label: SOURCE_LABEL "session NAME:sandbox" */
	char *image;  /* the session's image (a --path is read in its container), or NULL */
	char *excl_label, *gpus;
	char *usage; /* what the work used (with GPU figures), the provenance's "usage" */
	const char **labels;
	/* the stream */
	struct gg_ssh_conn *conn;
	struct gg_ssh_stream *stream;
	struct gg_ssh_ostream *ostream; /* the bulk stream by OpenSSH */
	char *ssh_dir;                  /* its config */
	char *ssh_cfg, *ssh_ctl;        /* that config, and its master's socket (up) */
	int ssh_own;                    /* that master is the freeze's own (closed after) */
	const char *ssh_host;           /* the session's Host there (r's name) */
	int fd;
	uint64_t bytes;
	int done, rc; /* the stream's end was read (source_end), its result */
	struct gg_err end_err;
	const struct gg_image_callbacks *cb;
};

int gg_session_freeze_new(struct gg_session_freeze **out, struct gg_err *err)
{
	struct gg_session_freeze *sf = calloc(1, sizeof *sf);
	*out = sf;
	if (sf)
		sf->fd = -1;
	for (size_t i = 0; sf && i < NDEFAULT; i++)
		if (gg_session_freeze_exclude(sf, default_excludes[i], err) < 0) {
			gg_session_freeze_free(sf);
			*out = sf = NULL;
		}
	return sf ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The OpenSSH master of the freeze closed, its config removed. */
static void openssh_close(struct gg_session_freeze *sf)
{
	if (sf->ssh_ctl && sf->ssh_own)
		gg_ssh_omaster_close(sf->ssh_host, sf->ssh_ctl);
	gg_ssh_temp_config_remove(sf->ssh_dir);
	free(sf->ssh_dir);
	free(sf->ssh_cfg);
	free(sf->ssh_ctl);
	sf->ssh_dir = sf->ssh_cfg = sf->ssh_ctl = NULL;
}

/* The node's tar, given up or waited for: its exit status, what it said. */
static int stream_finish(struct gg_session_freeze *sf, int abort, int *status, char **said,
			 struct gg_err *err)
{
	int rc = 0;
	*status = -1;
	*said = NULL;
	if (sf->fd >= 0)
		close(sf->fd); /* given up before the stream was read: the writer sees EPIPE */
	sf->fd = -1;
	if (sf->stream) {
		sf->bytes = gg_ssh_stream_bytes(sf->stream);
		rc = gg_ssh_stream_finish(sf->stream, abort, status, said, err);
	}
	if (sf->ostream) {
		sf->bytes = gg_ssh_ostream_bytes(sf->ostream);
		rc = gg_ssh_ostream_finish(sf->ostream, abort, status, said, err);
	}
	sf->stream = NULL;
	sf->ostream = NULL;
	openssh_close(sf);
	gg_ssh_disconnect(sf->conn);
	sf->conn = NULL;
	return rc;
}

void gg_session_freeze_free(struct gg_session_freeze *sf)
{
	if (!sf)
		return;
	if (sf->conn || sf->ostream || sf->ssh_dir) {
		int st;
		char *said;
		stream_finish(sf, 1, &st, &said, NULL);
		free(said);
	}
	for (size_t i = 0; i < sf->nexcl; i++)
		free(sf->excl[i]);
	free(sf->excl);
	for (size_t i = 0; i < sf->ninc; i++)
		free(sf->inc[i]);
	free(sf->inc);
	for (size_t i = 0; i < sf->nunfz; i++)
		free(sf->unfz_line[i]);
	free(sf->unfz_line);
	gg_unfrozen_clear(sf->unfz, sf->nunfz);
	free(sf->path);
	free(sf->source);
	free(sf->image);
	free(sf->excl_label);
	free(sf->gpus);
	free(sf->usage);
	free(sf->labels);
	free(sf);
}

int gg_session_freeze_path(struct gg_session_freeze *sf, const char *dir, struct gg_err *err)
{
	char *p = strdup(dir);
	if (!p)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free(sf->path);
	sf->path = p;
	return 0;
}

/* A path in the sandbox, made relative to its top ("./..."). */
int gg_session_freeze_exclude(struct gg_session_freeze *sf, const char *pattern, struct gg_err *err)
{
	const char *pat = pattern;
	while (pat[0] == '.' && pat[1] == '/')
		pat += 2;
	while (*pat == '/')
		pat++;
	if (!*pat || strchr(pat, '\n'))
		return gg_err_set(err, GG_EUSAGE, "--exclude '%s': expected a path in the sandbox",
				  pattern);
	char **nx = realloc(sf->excl, (sf->nexcl + 1) * sizeof *nx);
	if (nx)
		sf->excl = nx;
	char *x = nx ? gg_strdup_printf("./%s", pat) : NULL;
	if (!x)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	sf->excl[sf->nexcl++] = x;
	return 0;
}

/* A path of the node taken into the image at the same place: absolute, not "/", no
 * ".." step, no newline. */
int gg_session_freeze_include(struct gg_session_freeze *sf, const char *path, struct gg_err *err)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	int dots = 0;
	for (const char *p = path; (p = strstr(p, "/..")); p++)
		dots |= p[3] == '/' || p[3] == '\0';
	if (path[0] != '/' || len < 2 || dots || strchr(path, '\n'))
		return gg_err_set(err, GG_EUSAGE,
				  "--include '%s': expected an absolute path on the session's node "
				  "(a path freeze --session reported)",
				  path);
	char **ni = realloc(sf->inc, (sf->ninc + 1) * sizeof *ni);
	if (ni)
		sf->inc = ni;
	char *x = ni ? strndup(path, len) : NULL;
	if (!x)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	sf->inc[sf->ninc++] = x;
	return 0;
}

void gg_session_freeze_strict(struct gg_session_freeze *sf, int strict)
{
	sf->strict = strict;
}

int gg_session_freeze_unfrozen(const struct gg_session_freeze *sf, size_t i, const char **kind,
			       const char **path, const char **name, const char **line)
{
	if (i >= sf->nunfz)
		return -1;
	*kind = gg_unfrozen_kind_name(sf->unfz[i].kind);
	*path = sf->unfz[i].path;
	*name = sf->unfz[i].name;
	*line = sf->unfz_line[i];
	return 0;
}

int gg_session_freeze_link(struct gg_session_freeze *sf, const char *link, struct gg_err *err)
{
	if (gg_node_link_parse(link, &sf->link) < 0)
		return gg_err_set(err, GG_EUSAGE,
				  "--link-comp '%s': expected auto, zstd, gzip or none", link);
	return 0;
}

void gg_session_freeze_on_info(struct gg_session_freeze *sf,
			       void (*info)(void *ud, const char *msg), void *ud)
{
	sf->info = info;
	sf->info_ud = ud;
}

const char *const *gg_session_freeze_excludes(const struct gg_session_freeze *sf, size_t *n)
{
	*n = sf->nexcl;
	return (const char *const *)sf->excl;
}

enum gg_session_freeze_step gg_session_freeze_step(const struct gg_session_freeze *sf)
{
	return sf->step;
}

const char *gg_session_freeze_source(const struct gg_session_freeze *sf)
{
	return sf->source ? sf->source + strlen(SOURCE_LABEL) : "";
}

uint64_t gg_session_freeze_received(const struct gg_session_freeze *sf)
{
	return sf->bytes;
}

/* A session that has a sandbox to freeze: ready, not a batch job. */
static void say(const struct gg_session_freeze *sf, int warn, const char *msg)
{
	if (warn && sf->cb && sf->cb->warn)
		sf->cb->warn(sf->cb->ud, msg);
	else if (!warn && sf->info)
		sf->info(sf->info_ud, msg);
}

/* A short command on the node, its output captured: over the freeze's OpenSSH
 * master when it has one, else over libssh2. */
static int node_exec(struct gg_session_freeze *sf, const char *cmd, size_t max, char **out,
		     size_t *len, int *st, char **errtext, struct gg_err *err)
{
	if (sf->ssh_ctl)
		return gg_ssh_ocapture(sf->ssh_cfg, sf->ssh_ctl, sf->ssh_host, cmd, max, out, len,
				       st, errtext, err);
	return gg_ssh_exec_capture(sf->conn, cmd, max, out, len, st, errtext, err);
}

/* The session's GPUs as its node recorded them (gg_session_node_gpus). */
static int session_gpus(struct gg_session_freeze *sf, struct gg_err *err)
{
	if (!sf->ssh_ctl)
		return gg_session_node_gpus(sf->conn, &sf->gpus, err);
	char *out = NULL, *errtext = NULL, *cmd = gg_node_gpus_command();
	size_t len = 0;
	int st = -1;
	int rc = cmd ? node_exec(sf, cmd, 64 * 1024, &out, &len, &st, &errtext, err)
		     : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(cmd);
	free(errtext);
	if (rc == 0 && st != 0)
		rc = gg_err_set(err, GG_EPROTO,
				"the node did not say which GPUs the session has (exit %d)", st);
	if (rc == 0 && strlen(out) != len)
		rc = gg_err_set(err, GG_EPROTO,
				"the node's record of the session's GPUs is not text");
	if (rc == 0)
		rc = gg_gpu_smi_provenance(out, &sf->gpus, err);
	free(out);
	return rc;
}

/* What the session's work used, as JSON text into sf->usage, when the launcher's file
 * has GPU figures (without them the image records none: a freeze of the live sandbox
 * and one of its snapshot stay the same bytes for a session without a GPU). */
static void usage_text(struct gg_session_freeze *sf, const struct gg_usage *u)
{
	json_t *j = u->gpu_samples ? gg_usage_json(u) : NULL;
	free(sf->usage);
	sf->usage = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
}

/* The launcher's usage file, read on the node (best effort: none, no usage). */
static void node_usage(struct gg_session_freeze *sf)
{
	char *out = NULL, *errtext = NULL, *cmd = gg_node_read_command(GG_NP_USAGE);
	size_t len = 0;
	int st = -1;
	struct gg_err err = {0};
	struct gg_usage u;
	if (cmd && node_exec(sf, cmd, 8192, &out, &len, &st, &errtext, &err) == 0 && st == 0 &&
	    len && gg_usage_parse(out, len, &u, &err) == 0)
		usage_text(sf, &u);
	free(cmd);
	free(out);
	free(errtext);
}

/* The environment was developed on the session's node, with the GPUs its job was
 * given: those are what the image records, not this machine's. Without them the image
 * is still made, and says it records no GPU. */
static void node_gpus(struct gg_session_freeze *sf, const struct gg_record *r)
{
	struct gg_err err = {0};
	char *m = NULL;
	if (session_gpus(sf, &err) < 0)
		m = gg_strdup_printf("the image records no GPUs: %s", err.msg);
	else if (sf->gpus) /* what the site gave, for gridgpu sites: best effort */
		gg_gpu_seen_save(r->site, r->name, sf->gpus, (int64_t)time(NULL), NULL);
	else if (!sf->gpus && r->mig)
		m = gg_strdup_printf("(the image records no GPU: the session's is a MIG device "
				     "(%s), which nvidia-smi on the node does not describe; submit "
				     "takes --min-gpu-memory and --min-capability)",
				     r->mig);
	if (m)
		say(sf, !!err.code, m);
	free(m);
}

static int cancelled(const struct gg_session_freeze *sf, struct gg_err *err)
{
	if (sf->cb && sf->cb->cancel && sf->cb->cancel(sf->cb->ud))
		return gg_err_set(err, GG_EINTR, "interrupted");
	return 0;
}

/* Is p (or a directory above it) taken in with --include? */
static int included(const struct gg_session_freeze *sf, const char *p)
{
	for (size_t i = 0; i < sf->ninc; i++) {
		size_t l = strlen(sf->inc[i]);
		if (!strncmp(p, sf->inc[i], l) && (p[l] == '\0' || p[l] == '/'))
			return 1;
	}
	return 0;
}

/* Keep the findings --include does not take in, each with its line, said as a warning. */
static int keep_unfrozen(struct gg_session_freeze *sf, struct gg_unfrozen *u, size_t n)
{
	sf->unfz = u;
	sf->unfz_line = calloc(n ? n : 1, sizeof *sf->unfz_line);
	if (!sf->unfz_line)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (u[i].kind != GG_UNFROZEN_STARTUP && included(sf, u[i].path)) {
			free(u[i].path);
			free(u[i].name);
			continue;
		}
		sf->unfz[sf->nunfz] = u[i];
		if (!(sf->unfz_line[sf->nunfz] = gg_unfrozen_line(&u[i]))) {
			sf->nunfz++;
			for (size_t j = i + 1; j < n; j++) {
				free(u[j].path);
				free(u[j].name);
			}
			return -1;
		}
		say(sf, 1, sf->unfz_line[sf->nunfz++]);
	}
	return 0;
}

/* Ask the node what the image will not carry; --strict: any of it is an error. */
static int unfrozen_take(struct gg_session_freeze *sf, int rc, char *out, size_t len, int st,
			 char *errtext, struct gg_err e, struct gg_err *err);

static int node_unfrozen(struct gg_session_freeze *sf, struct gg_err *err)
{
	char *out = NULL, *errtext = NULL, *cmd = gg_node_unfrozen_command();
	size_t len = 0;
	int st = -1;
	struct gg_err e = {0};
	int rc = cmd ? node_exec(sf, cmd, GG_UNFROZEN_MAX_TEXT, &out, &len, &st, &errtext, &e)
		     : gg_err_set(&e, GG_ENOMEM, "out of memory");
	free(cmd);
	return unfrozen_take(sf, rc, out, len, st, errtext, e, err);
}

/* What the look answered (out, errtext: taken), kept and said. */
static int unfrozen_take(struct gg_session_freeze *sf, int rc, char *out, size_t len, int st,
			 char *errtext, struct gg_err e, struct gg_err *err)
{
	size_t n = 0;
	struct gg_unfrozen *u = NULL;
	if (rc == 0 && st != 0) {
		char *said = gg_str_printable(errtext ? errtext : "",
					      errtext ? strcspn(errtext, "\n") : 0);
		rc = gg_err_set(&e, GG_EPROTO, "the node's look ended with exit %d%s%s", st,
				said && *said ? ": " : "", said ? said : "");
		free(said);
	}
	if (rc == 0)
		rc = gg_unfrozen_parse(out, len, &u, &n, &e);
	free(out);
	free(errtext);
	if (rc == 0 && keep_unfrozen(sf, u, n) < 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc < 0 && !sf->strict) {
		char *m =
			gg_strdup_printf("could not tell what the image will not carry: %s", e.msg);
		if (m)
			say(sf, 1, m);
		free(m);
		return 0;
	}
	if (rc < 0)
		return gg_err_set(err, GG_EFAIL,
				  "could not tell what the image will not carry (--strict): %s",
				  e.msg);
	if (sf->strict && sf->nunfz)
		return gg_err_set(err, GG_EUSAGE,
				  "%zu thing%s the image will not carry (--strict): nothing frozen",
				  sf->nunfz, sf->nunfz == 1 ? "" : "s");
	return 0;
}

/* The user's OpenSSH, when there is one (GRIDGPU_BULK_SSH=libssh2: libssh2, as
 * before): one master for the freeze (the same hops, their masters and the pinned
 * host key, from a config written for this session alone), the node's answers and
 * the bulk stream over it. 1 when there is no ssh. */
static int openssh_open(struct gg_session_freeze *sf, const struct gg_config *cfg,
			const struct gg_record *r, struct gg_err *err)
{
	const char *want = getenv("GRIDGPU_BULK_SSH");
	char *ssh = want && strcmp(want, "libssh2") == 0 ? NULL : gg_which("ssh");
	if (!ssh)
		return 1;
	free(ssh);
	struct gg_ssh_target t;
	gg_record_ssh_target(r, &t);
	sf->ssh_host = r->name;
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	if (rc == 0)
		rc = gg_ssh_temp_config(&p, cfg, &t, &sf->ssh_dir, err);
	/* The session's own master, as the generated config names it (ssh S, connect
	 * and VS Code open it, kept 10 minutes): ridden on when up, else opened as
	 * they would; without an id, one of the freeze's own. */
	char *alias = rc == 0 && t.uid ? gg_ssh_host_alias(&t) : NULL;
	char *ctl =
		alias && strlen(alias) <= 40 ? gg_strdup_printf("%s/%s", p.control, alias) : NULL;
	sf->ssh_own = !ctl;
	free(alias);
	gg_ssh_paths_clear(&p);
	if (rc < 0)
		return rc;
	if (!ctl)
		ctl = gg_strdup_printf("%s/m", sf->ssh_dir);
	sf->ssh_cfg = gg_strdup_printf("%s/config", sf->ssh_dir);
	if (!sf->ssh_cfg || !ctl)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !sf->ssh_own && gg_ssh_master_alive(ctl))
		sf->ssh_ctl = ctl;
	else if (rc == 0 && (rc = gg_ssh_omaster_open(sf->ssh_cfg, sf->ssh_host, ctl,
						      sf->ssh_own ? 3600 : 600, err)) == 0)
		sf->ssh_ctl = ctl;
	else
		free(ctl);
	return rc;
}

/* Connect to the session's sshd, read its GPU record, start the node's tar. */
static int open_stream(struct gg_session_freeze *sf, const struct gg_config *cfg,
		       const struct gg_record *r, struct gg_err *err)
{
	int rc = gg_node_session_ready(r, err);
	if (rc < 0)
		return rc;
	free(sf->image);
	sf->image = r->image ? strdup(r->image) : NULL;
	const struct gg_site *site = r->site && cfg ? gg_config_site(cfg, r->site) : NULL;
	char *cmd = gg_node_tar_command_with(sf->path, (const char *const *)sf->excl, sf->nexcl,
					     (const char *const *)sf->inc, sf->ninc, sf->link);
	struct gg_ssh_route rt;
	/* a hop that asks for a second factor: its login first, at once */
	rc = cmd ? gg_ssh_logins_check(site, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = openssh_open(sf, cfg, r, err);
	if (rc == 1 && (rc = gg_session_route(site, r, &rt, err)) == 0) {
		rc = gg_ssh_connect(rt.hops, rt.n, 20000, &sf->conn, NULL, err);
		gg_ssh_route_clear(&rt);
	}
	if (rc == 0 && (rc = cancelled(sf, err)) == 0)
		node_gpus(sf, r);
	if (rc == 0 && !sf->path)
		node_usage(sf);
	if (rc == 0 && !sf->path && (rc = cancelled(sf, err)) == 0)
		rc = node_unfrozen(sf, err);
	if (rc == 0 && (rc = cancelled(sf, err)) == 0)
		rc = sf->ssh_ctl ? gg_ssh_ostream_start(sf->ssh_cfg, sf->ssh_ctl, sf->ssh_host, cmd,
							&sf->fd, &sf->ostream, err)
				 : gg_ssh_stream_start(sf->conn, cmd, &sf->fd, &sf->stream, err);
	free(cmd);
	if (rc < 0) {
		int st;
		char *said = NULL;
		stream_finish(sf, 1, &st, &said, NULL);
		free(said);
	}
	return rc;
}

/* What the node's tar said once its stream was read (abort: given up before; its exit
 * status still says why when it ended by itself). 0 when it sent the whole sandbox. */
static int stream_result(struct gg_session_freeze *sf, int abort, struct gg_err *err)
{
	int st = -1, rc = 0;
	char *said = NULL;
	struct gg_err serr = {0};
	int src_rc = stream_finish(sf, abort, &st, &said, &serr);
	if (!abort && src_rc < 0) {
		*err = serr;
		rc = gg_err_prefix(err, "reading '%s' on the session's node",
				   sf->path ? sf->path : "the sandbox");
	} else if (src_rc == 0 && (abort ? st > 0 : st != 0)) {
		if (said) /* its first complaint: tar's last line is a summary */
			said[strcspn(said, "\r\n")] = '\0';
		rc = gg_node_tar_error(sf->path, sf->image, st, said, err);
	}
	free(said);
	return rc;
}

/* The image's source_end: the image is written, the node's tar is asked how it
 * ended; an error keeps the image from being installed. */
static int source_end(void *ud, struct gg_err *err)
{
	struct gg_session_freeze *sf = ud;
	sf->done = 1;
	sf->rc = stream_result(sf, 0, &sf->end_err);
	if (sf->rc < 0)
		*err = sf->end_err;
	return sf->rc;
}

static void fwd_progress(void *ud, const struct gg_image_progress *p)
{
	const struct gg_session_freeze *sf = ud;
	if (sf->cb->progress)
		sf->cb->progress(sf->cb->ud, p);
}

static void fwd_warn(void *ud, const char *msg)
{
	say(ud, 1, msg);
}

static int fwd_cancel(void *ud)
{
	const struct gg_session_freeze *sf = ud;
	return sf->cb->cancel ? sf->cb->cancel(sf->cb->ud) : 0;
}

/* The source's label and what was left out (a label inspect shows), after o's. */
static int make_labels(struct gg_session_freeze *sf, const struct gg_record *r,
		       const struct gg_freeze_opts *o, struct gg_freeze_opts *out)
{
	char *l = sf->path ? NULL : strdup("org.gridgpu.excluded=");
	for (size_t i = 0; l && i < sf->nexcl; i++) {
		char *nl = gg_strdup_printf("%s%s ", l, sf->excl[i]);
		free(l);
		l = nl;
	}
	sf->excl_label = l ? gg_strdup_printf("%sand the session's mount points", l) : NULL;
	free(l);
	sf->source = gg_strdup_printf(SOURCE_LABEL "session %s:%s", r->name,
				      sf->path ? sf->path : "sandbox");
	sf->labels = calloc(o->nlabels + 2, sizeof *sf->labels);
	if (!sf->source || !sf->labels || (!sf->path && !sf->excl_label))
		return GG_ENOMEM;
	size_t n = o->nlabels;
	if (n)
		memcpy(sf->labels, o->labels, n * sizeof *sf->labels);
	sf->labels[n++] = sf->source;
	if (sf->excl_label)
		sf->labels[n++] = sf->excl_label;
	out->labels = sf->labels;
	out->nlabels = n;
	return 0;
}

/* After the freeze: the node's tar given up when the freeze failed before source_end
 * (then what went wrong on the node says more); its error when it failed the freeze. */
static int end_stream(struct gg_session_freeze *sf, int frc, struct gg_err *err)
{
	if (!sf->done) {
		struct gg_err serr = {0};
		if (stream_result(sf, 1, &serr) < 0 && frc < 0 && frc != GG_EINTR) {
			*err = serr;
			frc = serr.code;
		}
	}
	if (sf->rc < 0 && frc < 0)
		*err = sf->end_err;
	return frc;
}

int gg_session_freeze(struct gg_session_freeze *sf, const struct gg_config *cfg,
		      const struct gg_record *r, const struct gg_freeze_opts *o,
		      const struct gg_image_callbacks *cb, struct gg_freeze_result *res,
		      struct gg_err *err)
{
	static const struct gg_image_callbacks none = {0};
	sf->cb = cb ? cb : &none;
	sf->step = GG_SFREEZE_OUTPUT;
	if (access(o->output, F_OK) == 0 && !o->force)
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)",
				  o->output);
	sf->step = GG_SFREEZE_NODE;
	struct gg_freeze_opts so = *o;
	if (make_labels(sf, r, o, &so))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = open_stream(sf, cfg, r, err);
	if (rc < 0)
		return rc;
	sf->step = GG_SFREEZE_IMAGE;
	so.source = "-";
	so.input_fd = sf->fd;
	so.format = GG_IMAGE_TAR;
	so.gpus_json = sf->gpus;
	struct gg_image_callbacks w = {.progress = fwd_progress,
				       .warn = fwd_warn,
				       .cancel = fwd_cancel,
				       .ud = sf,
				       .source_end = source_end};
	/* the stream's digest is not recorded: no one keeps that stream, and a freeze
	 * of the session's snapshot (snapshot.c) makes the same image without it */
	struct gg_freeze_feeder fdr = {.no_digest = 1, .usage_json = sf->usage};
	rc = gg_image_freeze_fed(&so, &w, &fdr, res, err);
	return end_stream(sf, rc, err);
}

/* Drop what changes from one moment to the next (free memory). */
static void strip_volatile(json_t *v)
{
	size_t i;
	const char *k;
	json_t *x;
	if (json_is_object(v)) {
		json_object_del(v, "memory_free");
		json_object_foreach (v, k, x)
			strip_volatile(x);
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			strip_volatile(x);
	}
}

int gg_freeze_local_gpus(char **json, struct gg_err *err)
{
	char *raw = NULL;
	*json = NULL;
	int rc = gg_gpu_provenance(&raw, err);
	if (rc < 0)
		return rc;
	json_t *j = raw ? json_loads(raw, 0, NULL) : NULL;
	free(raw);
	if (!j)
		return 0;
	strip_volatile(j);
	*json = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return 0;
}

/* ---- an ended session: from its snapshot (snapshot.c) ---- */

/* The image the session was made from and its snapshot, from the job's directory at
 * the CE into dir. */
static int fetch_snapshot(struct gg_ce *ce, const struct gg_record *r, const char *dir, char **base,
			  char **snap, struct gg_err *err)
{
	*base = gg_strdup_printf("%s/base.sif", dir);
	*snap = gg_strdup_printf("%s/" GG_SNAPSHOT_NAME, dir);
	if (!*base || !*snap)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_ce_get_file(ce, r->job_id, GG_SNAPSHOT_NAME, *snap, NULL, NULL, err);
	if (rc == GG_ENOTFOUND)
		return gg_err_set(err, GG_ENOTFOUND,
				  "session '%s' ended without a snapshot of its sandbox ('gridgpu "
				  "status %s' says why)",
				  r->name, r->name);
	if (rc == 0 && (rc = gg_ce_get_file(ce, r->job_id, GG_SESSION_IMAGE_NAME, *base, NULL, NULL,
					    err)) == GG_ENOTFOUND)
		return gg_err_set(err, GG_ENOTFOUND,
				  "the image session '%s' was made from is no longer in its job's "
				  "directory",
				  r->name);
	return rc;
}

static void remove_fetched(char *dir, char *base, char *snap)
{
	if (base)
		unlink(base);
	if (snap)
		unlink(snap);
	if (dir)
		rmdir(dir);
	free(base);
	free(snap);
	free(dir);
}

/* A directory of its own under the cache for the fetched files. */
static char *fetch_dir(struct gg_err *err)
{
	char *top = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &top, err) < 0)
		return NULL;
	char *d = gg_strdup_printf("%s/snapshot-XXXXXX", top);
	int made = d && gg_mkdir_p(top, 0700, err) == 0;
	free(top);
	if (made && !mkdtemp(d))
		made = 0, gg_err_sys(err, GG_EIO, errno, "making a directory for the snapshot");
	if (!d)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	if (!made) {
		free(d);
		return NULL;
	}
	return d;
}

int gg_session_freeze_snapshot(struct gg_session_freeze *sf, struct gg_engine *e,
			       const struct gg_record *r, const struct gg_freeze_opts *o,
			       const struct gg_image_callbacks *cb, struct gg_freeze_result *res,
			       struct gg_err *err)
{
	sf->step = GG_SFREEZE_OUTPUT;
	if (access(o->output, F_OK) == 0 && !o->force)
		return gg_err_set(err, GG_EFAIL, "'%s' exists (use --force to replace it)",
				  o->output);
	sf->step = GG_SFREEZE_NODE;
	if (r->kind != GG_REC_SESSION)
		return gg_node_session_ready(r, err);
	if (!r->job_id || !r->image ||
	    !strncmp(r->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK)))
		return gg_err_set(err, GG_ENOTFOUND,
				  "the session %s: its sandbox is gone with it (only a session "
				  "requested with --image of this machine's keeps a snapshot; "
				  "'gridgpu request' starts one)",
				  gg_sess_state_phrase(r->state));
	if (sf->path || sf->ninc)
		return gg_err_set(
			err, GG_EUSAGE,
			"session '%s' has ended: only its sandbox can be frozen (from its "
			"snapshot), without --path or --include",
			r->name);
	struct gg_freeze_opts so = *o;
	if (make_labels(sf, r, o, &so))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_ce *ce = NULL;
	if (!e)
		return gg_err_set(err, GG_EFAIL,
				  "no connection to the session's CE could be set up");
	int rc = gg_engine_open_record_ce(e, r, &ce, err);
	struct gg_usage u;
	if (rc == 0 && gg_engine_usage(e, r, &u, NULL) == 0)
		usage_text(sf, &u);
	char *dir = rc == 0 ? fetch_dir(err) : NULL, *base = NULL, *snap = NULL;
	if (rc == 0)
		rc = dir ? fetch_snapshot(ce, r, dir, &base, &snap, err) : err->code;
	gg_ce_free(ce);
	if (rc == 0) {
		sf->step = GG_SFREEZE_IMAGE;
		struct stat st;
		sf->bytes = stat(snap, &st) == 0 ? (uint64_t)st.st_size : 0;
		rc = gg_snapshot_freeze_files(base, snap, (const char *const *)sf->excl, sf->nexcl,
					      sf->usage, &so, cb, res, err);
	}
	remove_fetched(dir, base, snap);
	return rc;
}
