/* gridgpu freeze: a sandbox directory, tar stream or OCI image into a SIF image. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctx.h"
#include "interrupt.h"
#include "session/sshview.h"
#include "ssh/ssh.h"
#include "commands.h"
#include "gpu/gpu.h"
#include "image/image.h"

enum {
	O_OUTPUT = 'o',
	O_JOBS = 'j',
	O_FORCE = 256,
	O_LEVEL,
	O_COMP,
	O_LABEL,
	O_NO_REPRO,
	O_SKIP,
	O_FORMAT,
	O_SESSION,
	O_REMOTE_PATH,
	O_EXCLUDE,
	O_LINK_COMP,
};

const struct gg_opt cmd_freeze_opts[] = {
	{"output", 'o', OPT_FILE, "IMAGE.sif", "the SIF image to write (required)", O_OUTPUT},
	{"force", 0, OPT_NONE, NULL, "replace IMAGE.sif if it exists (atomically)", O_FORCE},
	{"format", 0, OPT_CHOICE, "dir|tar|oci", "what the source is (detected by default)",
	 O_FORMAT},
	{"comp", 0, OPT_CHOICE, "gzip|zstd|xz|lz4", "squashfs compression (default gzip)", O_COMP},
	{"level", 0, OPT_ARG, "N", "compression level (gzip 1-12, default 6; zstd 1-22; xz 1-9)",
	 O_LEVEL},
	{"jobs", 'j', OPT_ARG, "N", "compression threads (default: all cores)", O_JOBS},
	{"label", 0, OPT_ARG, "KEY=VALUE", "add a label to the image (repeat for more)", O_LABEL},
	{"no-reproducible", 0, OPT_NONE, NULL, "random image UUID and the current time",
	 O_NO_REPRO},
	{"skip-unreadable", 0, OPT_NONE, NULL, "leave out unreadable files with a warning", O_SKIP},
	{"session", 0, OPT_SESSION, "NAME",
	 "freeze a live session's sandbox (its image as it is now), streamed over ssh", O_SESSION},
	{"path", 0, OPT_ARG, "DIR", "another directory on the session's node instead",
	 O_REMOTE_PATH},
	{"exclude", 0, OPT_ARG, "PATTERN",
	 "with --session: leave out paths like PATTERN (/opt/data, /home/*/.cache; repeat)",
	 O_EXCLUDE},
	{"link-comp", 0, OPT_CHOICE, "auto|zstd|gzip|none",
	 "with --session: compress the stream on the node (default auto: zstd, else gzip)",
	 O_LINK_COMP},
	OPT_END,
};

struct freeze_job;

struct ctx {
	struct gg_cli *cli;
	struct freeze_job *job;
	int bar;   /* draw the progress bar */
	int drawn; /* a bar is on the line */
	struct timespec start;
	int cols;
};

static void clear_bar(struct ctx *c)
{
	if (c->drawn) {
		fputs("\r\033[K", stderr);
		c->drawn = 0;
	}
}

static void warn_cb(void *ud, const char *msg)
{
	struct ctx *c = ud;
	clear_bar(c);
	ui_warn(c->cli, "%s", msg);
}

static double elapsed(const struct ctx *c)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - c->start.tv_sec) +
	       (double)(now.tv_nsec - c->start.tv_nsec) / 1e9;
}

static void human(uint64_t b, char *buf, size_t len)
{
	gg_size_format(b, buf, len);
}

/* "147/344 MiB": both in the unit of the total. */
static void pair(uint64_t done, uint64_t total, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	double div = 1;
	while (u < 4 && (double)total / div >= 1024) {
		div *= 1024;
		u++;
	}
	snprintf(buf, len, "%.*f/%.*f %s", u && (double)total / div < 10 ? 1 : 0,
		 (double)done / div, u && (double)total / div < 10 ? 1 : 0, (double)total / div,
		 unit[u]);
}

static void progress_cb(void *ud, const struct gg_image_progress *p)
{
	struct ctx *c = ud;
	if (!c->bar)
		return;
	if (p->phase == GG_IMAGE_PHASE_DONE) {
		clear_bar(c);
		return;
	}
	double t = elapsed(c);
	char done[32], total[32], rate[32], line[256];
	human(p->bytes_done, done, sizeof done);
	human(t > 0.2 ? (uint64_t)((double)p->bytes_done / t) : 0, rate, sizeof rate);
	int n;
	if (p->phase == GG_IMAGE_PHASE_SCAN) {
		human(p->bytes_total, total, sizeof total);
		n = snprintf(line, sizeof line, "scanning  %llu files, %s",
			     (unsigned long long)p->files_total, total);
	} else if (p->phase == GG_IMAGE_PHASE_META) {
		n = snprintf(line, sizeof line, "writing inodes, directories and tables");
	} else if (p->bytes_total) {
		char bytes[48];
		pair(p->bytes_done, p->bytes_total, bytes, sizeof bytes);
		double f = (double)p->bytes_done / (double)p->bytes_total;
		if (f > 1)
			f = 1;
		char eta[32] = "--:--";
		if (f > 0.01 && t > 1) {
			long s = (long)(t / f - t);
			snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
		}
		int width = 16;
		char bar[32];
		int fill = (int)(f * width);
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
		bar[width] = '\0';
		if (p->files_total)
			n = snprintf(line, sizeof line,
				     "[%s] %3d%%  %llu/%llu files  %s  %s/s  ETA %s", bar,
				     (int)(f * 100), (unsigned long long)p->files_done,
				     (unsigned long long)p->files_total, bytes, rate, eta);
		else
			n = snprintf(line, sizeof line, "[%s] %3d%%  %llu files  %s  %s/s  ETA %s",
				     bar, (int)(f * 100), (unsigned long long)p->files_done, bytes,
				     rate, eta);
	} else {
		n = snprintf(line, sizeof line, "%llu files  %s read  %s/s",
			     (unsigned long long)p->files_done, done, rate);
	}
	if (n > c->cols - 1)
		line[c->cols > 1 ? c->cols - 1 : 0] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	c->drawn = 1;
}

/* Drop what changes from one moment to the next (free memory), so that two freezes on
 * the same node stay byte-identical. */
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

/* The GPUs of this node for the image's provenance (gridgpu gpus --json, less the
 * volatile values), or NULL off a GPU node. malloc'd. */
static char *gpu_provenance(struct gg_cli *cli)
{
	char *raw = NULL;
	struct gg_err err = {0};
	if (gg_gpu_provenance(&raw, &err) < 0) {
		ui_warn(cli, "the image records no GPUs: %s", err.msg);
		return NULL;
	}
	json_t *j = raw ? json_loads(raw, 0, NULL) : NULL;
	free(raw);
	if (!j)
		return NULL;
	strip_volatile(j);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

/* The sandbox on a session's node, as a tar stream: libssh2 through the site's
 * jump hosts (the session's host key pinned, its own key) runs "tar -cf - ."
 * there, and its output is read from a pipe. */
#define SOURCE_LABEL "org.gridgpu.source="

struct session_src {
	struct gg_ssh_conn *conn;
	struct gg_ssh_stream *stream;
	uint64_t bytes; /* received from the node */
	char *gpus;     /* the session's GPUs for the provenance, or NULL */
};

/* 'text' for the remote shell. malloc'd. */
static char *sh_quote(const char *s)
{
	char *q = malloc(4 * strlen(s) + 3), *o = q;
	if (!q)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

/* What the session's sandbox leaves out by default: its temporary files and
 * package caches (the session's own mount points are added on the node). */
static const char *const default_excludes[] = {"./tmp/*", "./var/tmp/*",
					       "./var/cache/apt/archives/*.deb", "./root/.cache"};
#define NDEFAULT_EXCLUDES (sizeof default_excludes / sizeof *default_excludes)

/* The tar command through the compressor the node has (link: auto, zstd, gzip,
 * none): the link to the laptop is the slow part, the node has idle cores.
 * The exit status is tar's (a truncated stream fails to decompress).  */
static char *through_link(const char *pre, const char *tar, const char *link)
{
	if (!strcmp(link, "none"))
		return gg_strdup_printf("%sexec %s", pre, tar);
	const char *pick =
		!strcmp(link, "zstd")
			? "command -v zstd >/dev/null || { echo 'no zstd on the node' >&2; exit 5; }; "
			  "Z='zstd -q -1 -T0 -c'; "
		: !strcmp(link, "gzip")
			? "command -v gzip >/dev/null || { echo 'no gzip on the node' >&2; exit 5; }; "
			  "Z='gzip -1 -c'; "
			: "Z=cat; command -v gzip >/dev/null && Z='gzip -1 -c'; "
			  "command -v zstd >/dev/null && Z='zstd -q -1 -T0 -c'; ";
	return gg_strdup_printf(
		"%s%sif [ \"$Z\" = cat ]; then exec %s; fi; "
		"{ r=$( { { %s; echo $? >&3; } | $Z >&4; } 3>&1 ); exit ${r:-1}; } 4>&1",
		pre, pick, tar, tar);
}

/* The remote command: tar of path (as the login sees it), or with path NULL of
 * the session's sandbox, on the node (": gridgpu-node;" runs outside the
 * container), less the excluded and the session's mount points, through the
 * link's compressor. malloc'd. */
static char *tar_command(const char *path, const char *const *excl, size_t nexcl, const char *link)
{
	if (path) {
		char *q = sh_quote(path);
		char *pre = q ? gg_strdup_printf("test -d %s || exit 3; ", q) : NULL;
		char *tar = q ? gg_strdup_printf("tar -C %s --numeric-owner -cf - .", q) : NULL;
		char *cmd = pre && tar ? through_link(pre, tar, link) : NULL;
		free(q);
		free(pre);
		free(tar);
		return cmd;
	}
	char *x = strdup("");
	for (size_t i = 0; x && i < nexcl; i++) {
		char *q = sh_quote(excl[i]);
		char *nx = q ? gg_strdup_printf("%s --exclude=%s", x, q) : NULL;
		free(q);
		free(x);
		x = nx;
	}
	char *tar = x ? gg_strdup_printf("tar -C \"$g/sandbox\" --numeric-owner "
					 "-X \"$g/sandbox-mounts\"%s -cf - .",
					 x)
		      : NULL;
	char *cmd = tar ? through_link(": gridgpu-node; g=${GRIDGPU_SESSION_DIR:-/nonexistent}/"
				       ".gridgpu; test -d \"$g/sandbox\" || exit 4; "
				       "touch \"$g/sandbox-mounts\"; ",
				       tar, link)
			: NULL;
	free(x);
	free(tar);
	return cmd;
}

/* The environment was developed on the session's node, with the GPUs its job was
 * given: those are what the image records, not this machine's. Without them the
 * image is still made, and says it records no GPU. */
static void node_gpus(struct gg_cli *cli, const struct gg_record *r, struct session_src *src)
{
	struct gg_err err = {0};
	if (gg_session_node_gpus(src->conn, &src->gpus, &err) < 0)
		ui_warn(cli, "the image records no GPUs: %s", err.msg);
	else if (!src->gpus && r->mig)
		ui_info(cli,
			"(the image records no GPU: the session's is a MIG device (%s), which "
			"nvidia-smi on the node does not describe; submit takes --min-gpu-memory "
			"and --min-capability)",
			r->mig);
}

static int start_session_tar(struct gg_cli *cli, const char *name, const char *path,
			     const char *const *excl, size_t nexcl, const char *link, int *fd,
			     struct session_src *src)
{
	struct gg_err err = {0};
	struct gg_store *st = cli_store(cli);
	if (!st)
		return cli->cfg_exit;
	struct gg_record r = {0};
	int rc = cli_find_record(cli, st, name, &r);
	if (rc) {
		gg_store_free(st);
		return rc;
	}
	gg_store_free(st);
	if (r.kind != GG_REC_SESSION)
		gg_err_set(&err, GG_ENOTFOUND, "is a batch job, not a session");
	else if (gg_sess_state_ended(r.state))
		gg_err_set(&err, GG_ENOTFOUND,
			   "the session %s: its sandbox is gone with it (freeze a live "
			   "session; 'gridgpu request' starts one)",
			   gg_sess_state_phrase(r.state));
	else if (r.state != GG_S_READY)
		gg_err_set(&err, GG_ENOTFOUND,
			   "the session %s, not ready yet: 'gridgpu connect %s' waits for it",
			   gg_sess_state_phrase(r.state), name);
	if (err.code) {
		gg_record_clear(&r);
		return ui_fail(cli, &err, "freeze --session %s", name);
	}
	char *cmd = tar_command(path, excl, nexcl, link);
	const struct gg_site *site = r.site ? gg_config_site(cli_config(cli), r.site) : NULL;
	struct gg_ssh_route rt;
	rc = cmd ? gg_session_route(site, &r, &rt, &err)
		 : gg_err_set(&err, GG_ENOMEM, "out of memory");
	if (rc == 0) {
		rc = gg_ssh_connect(rt.hops, rt.n, 20000, &src->conn, NULL, &err);
		gg_ssh_route_clear(&rt);
	}
	if (rc == 0)
		node_gpus(cli, &r, src);
	if (rc == 0)
		rc = gg_ssh_stream_start(src->conn, cmd, fd, &src->stream, &err);
	free(cmd);
	gg_record_clear(&r);
	if (rc < 0) {
		gg_ssh_disconnect(src->conn);
		src->conn = NULL;
		return ui_fail(cli, &err, "freeze --session %s", name);
	}
	return 0;
}

/* Wait for the remote tar; its exit status, what it said, or why the stream
 * broke. abort gives it up. */
static int finish_session_tar(struct session_src *src, int abort, int *status, char **errtext,
			      struct gg_err *err)
{
	int rc = 0;
	*status = -1;
	*errtext = NULL;
	src->bytes = gg_ssh_stream_bytes(src->stream);
	if (src->stream)
		rc = gg_ssh_stream_finish(src->stream, abort, status, errtext, err);
	src->stream = NULL;
	gg_ssh_disconnect(src->conn);
	src->conn = NULL;
	return rc;
}

/* ---- the command ------------------------------------------------------------------ */

struct freeze_job {
	struct gg_freeze_opts o;
	const char **labels;
	size_t nlabels;
	const char *session, *rpath; /* --session NAME [--path DIR] */
	const char *link;            /* --link-comp */
	const char **excl;           /* the defaults, then --exclude */
	size_t nexcl;
	char *excl_label;
	char *session_label, *gpus;
	int src_done; /* with --session: the remote tar was waited for */
	int src_rc;   /* ... its result (an error in src_err) */
	struct gg_err src_err;
	struct session_src src;
};

static int add_label(struct freeze_job *j, const char *label)
{
	const char **nl = realloc(j->labels, (j->nlabels + 1) * sizeof *nl);
	if (!nl)
		return -1;
	j->labels = nl;
	j->labels[j->nlabels++] = label;
	return 0;
}

static int parse_format(struct gg_cli *cli, struct gg_freeze_opts *o)
{
	if (!strcmp(cli->optarg, "dir"))
		o->format = GG_IMAGE_DIR;
	else if (!strcmp(cli->optarg, "tar"))
		o->format = GG_IMAGE_TAR;
	else if (!strcmp(cli->optarg, "oci"))
		o->format = GG_IMAGE_OCI;
	else
		return ui_usage(cli, "--format '%s': expected dir, tar or oci", cli->optarg);
	return 0;
}

/* --exclude PATTERN: a path in the sandbox, made relative to its top ("./..."). */
static int add_exclude(struct gg_cli *cli, struct freeze_job *j, const char *pat)
{
	while (pat[0] == '.' && pat[1] == '/')
		pat += 2;
	while (*pat == '/')
		pat++;
	if (!*pat || strchr(pat, '\n'))
		return ui_usage(cli, "--exclude '%s': expected a path in the sandbox", cli->optarg);
	const char **nx = realloc(j->excl, (j->nexcl + 1) * sizeof *nx);
	if (!nx)
		return EXIT_FAIL;
	j->excl = nx;
	j->excl[j->nexcl] = gg_strdup_printf("./%s", pat);
	return j->excl[j->nexcl++] ? 0 : EXIT_FAIL;
}

/* One option: 0, or the exit code after saying what is wrong. */
static int parse_option(struct gg_cli *cli, int c, struct freeze_job *j)
{
	struct gg_freeze_opts *o = &j->o;
	int v, rc = 0;
	switch (c) {
	case O_OUTPUT: o->output = cli->optarg; break;
	case O_FORCE: o->force = 1; break;
	case O_SESSION: j->session = cli->optarg; break;
	case O_REMOTE_PATH: j->rpath = cli->optarg; break;
	case O_EXCLUDE: rc = add_exclude(cli, j, cli->optarg); break;
	case O_LINK_COMP:
		j->link = cli->optarg;
		if (strcmp(j->link, "auto") && strcmp(j->link, "zstd") && strcmp(j->link, "gzip") &&
		    strcmp(j->link, "none"))
			rc = ui_usage(cli, "--link-comp '%s': expected auto, zstd, gzip or none",
				      j->link);
		break;
	case O_NO_REPRO: o->no_reproducible = 1; break;
	case O_SKIP: o->skip_unreadable = 1; break;
	case O_LEVEL:
		if (!(rc = cli_opt_int(cli, 1, 22, &v)))
			o->level = v;
		break;
	case O_JOBS:
		if (!(rc = cli_opt_int(cli, 1, 1024, &v)))
			o->jobs = (unsigned)v;
		break;
	case O_COMP:
		if (!(o->comp = gg_image_comp_parse(cli->optarg)))
			rc = ui_usage(cli, "--comp '%s': expected gzip, zstd, xz or lz4",
				      cli->optarg);
		break;
	case O_FORMAT: rc = parse_format(cli, o); break;
	case O_LABEL:
		if (!strchr(cli->optarg, '=') || cli->optarg[0] == '=')
			rc = ui_usage(cli, "--label '%s': expected KEY=VALUE", cli->optarg);
		else if (add_label(j, cli->optarg) < 0)
			rc = EXIT_FAIL;
		break;
	}
	return rc;
}

#define HELP_SHOWN (-1)

/* Options and operands: 0, HELP_SHOWN, or the exit code after saying what is wrong. */
static int parse_args(struct gg_cli *cli, int argc, char **argv, struct freeze_job *j)
{
	int c, rc;
	while ((c = cli_next_opt(cli, argc, argv, cmd_freeze_opts)) > 0)
		if ((rc = parse_option(cli, c, j)))
			return rc;
	if (c < 0)
		return c == -2 ? HELP_SHOWN : EXIT_USAGE;
	if (argc - cli->optind != (j->session ? 0 : 1))
		return ui_usage(cli,
				j->session ? "freeze --session NAME takes no SANDBOX"
					   : "freeze: expected one SANDBOX (a directory, a tar, an "
					     "OCI image or - for a tar on standard input)");
	if (!j->o.output)
		return ui_usage(cli, "freeze: -o IMAGE.sif is required");
	if (j->rpath && !j->session)
		return ui_usage(cli, "--path DIR goes with --session NAME");
	if (j->nexcl && (!j->session || j->rpath))
		return ui_usage(cli, "--exclude goes with --session NAME (without --path)");
	if (j->link && !j->session)
		return ui_usage(cli, "--link-comp goes with --session NAME");
	j->o.source = j->session ? "-" : argv[cli->optind];
	return 0;
}

/* The session's sandbox: the default excludes before the user's, and what was
 * left out as a label inspect shows. */
static int session_excludes(struct freeze_job *j)
{
	if (j->rpath)
		return 0;
	const char **nx = realloc(j->excl, (j->nexcl + NDEFAULT_EXCLUDES) * sizeof *nx);
	if (!nx)
		return EXIT_FAIL;
	j->excl = nx;
	memmove(j->excl + NDEFAULT_EXCLUDES, j->excl, j->nexcl * sizeof *nx);
	for (size_t i = 0; i < NDEFAULT_EXCLUDES; i++)
		j->excl[i] = strdup(default_excludes[i]);
	j->nexcl += NDEFAULT_EXCLUDES;
	char *l = strdup("org.gridgpu.excluded=");
	for (size_t i = 0; l && i < j->nexcl; i++) {
		char *nl = j->excl[i] ? gg_strdup_printf("%s%s ", l, j->excl[i]) : NULL;
		free(l);
		l = nl;
	}
	j->excl_label = l ? gg_strdup_printf("%sand the session's mount points", l) : NULL;
	free(l);
	return j->excl_label ? 0 : EXIT_FAIL;
}

/* The sandbox stays on the node: stream it as a tar over ssh (through the jump hosts,
 * host key pinned) into the same pipeline. The image is installed as plain freeze's is
 * (an unnamed temp file, an existing output replaced only with --force), and only once
 * ssh and tar said the stream was whole (session_end). An output that exists is refused
 * before the node is asked, as the library would. */
static int open_session_source(struct gg_cli *cli, struct freeze_job *j)
{
	struct gg_freeze_opts *o = &j->o;
	if (access(o->output, F_OK) == 0 && !o->force) {
		struct gg_err e = {0};
		gg_err_set(&e, GG_EFAIL, "'%s' exists (use --force to replace it)", o->output);
		return ui_fail(cli, &e, "freeze");
	}
	int fd = -1;
	int rc = session_excludes(j);
	if (rc == 0)
		rc = start_session_tar(cli, j->session, j->rpath, j->excl, j->nexcl,
				       j->link ? j->link : "auto", &fd, &j->src);
	if (rc)
		return rc;
	o->input_fd = fd;
	o->format = GG_IMAGE_TAR;
	j->session_label = gg_strdup_printf(SOURCE_LABEL "session %s:%s", j->session,
					    j->rpath ? j->rpath : "sandbox");
	if (!j->session_label || add_label(j, j->session_label) < 0 ||
	    (j->excl_label && add_label(j, j->excl_label) < 0))
		return EXIT_FAIL;
	return 0;
}

/* The level against the compressor, SOURCE_DATE_EPOCH, a word on compressors that
 * not every installation reads. */
static int check_settings(struct gg_cli *cli, struct freeze_job *j)
{
	struct gg_freeze_opts *o = &j->o;
	o->labels = j->labels;
	o->nlabels = j->nlabels;
	enum gg_image_comp comp = o->comp ? o->comp : GG_IMAGE_COMP_GZIP;
	/* lz4 has no levels: any selects its high compression (gridgpu-freeze(1)) */
	int max_level = comp == GG_IMAGE_COMP_GZIP ? 12 : comp == GG_IMAGE_COMP_XZ ? 9 : 22;
	if (o->level > max_level)
		return ui_usage(cli, "--level %d: %s levels are 1-%d", o->level,
				gg_image_comp_name(comp), max_level);
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		char *end;
		errno = 0;
		long long t = strtoll(sde, &end, 10);
		if (errno || *end || t < 0)
			return ui_usage(cli, "SOURCE_DATE_EPOCH '%s': expected seconds since 1970",
					sde);
		o->have_source_date_epoch = 1;
		o->source_date_epoch = t;
	}
	if (o->comp && o->comp != GG_IMAGE_COMP_GZIP)
		ui_warn(cli,
			"%s squashfs compression might not work with some installations (apptainer "
			"needs kernel or squashfuse support for it; gzip works everywhere)",
			gg_image_comp_name(o->comp));
	return 0;
}

/* What the remote tar said once its stream was read (abort: given up before; its exit
 * status still says why when it ended by itself). 0 when it sent the whole sandbox,
 * else the error. */
static int session_tar_result(struct freeze_job *j, int abort, struct gg_err *err)
{
	close(j->o.input_fd);
	int st = -1, frc = 0;
	char *said = NULL;
	struct gg_err serr = {0};
	int src_rc = finish_session_tar(&j->src, abort, &st, &said, &serr);
	if (!abort && src_rc < 0) {
		*err = serr;
		gg_err_prefix(err, "reading '%s' on the session's node",
			      j->rpath ? j->rpath : "the sandbox");
		frc = src_rc;
	} else if (src_rc == 0 && (abort ? st > 0 : st != 0)) {
		/* What went wrong on the node says more than an empty stream. */
		if (said) /* its first complaint: tar's last line is a summary */
			said[strcspn(said, "\r\n")] = '\0';
		if (st == 4 && !j->rpath)
			gg_err_set(err, GG_EFAIL,
				   "the session has no sandbox (it was requested without --image): "
				   "give --path DIR, a directory on its node");
		else if (st == 3)
			gg_err_set(err, GG_EFAIL, "no directory '%s' on the session's node",
				   j->rpath);
		else
			gg_err_set(err, GG_EFAIL,
				   "reading '%s' on the session's node failed (tar exit %d%s%s)",
				   j->rpath ? j->rpath : "the sandbox", st,
				   said && *said ? ": " : "", said ? said : "");
		frc = err->code;
	}
	free(said);
	return frc;
}

/* The library's source_end: the image is written, the remote tar is asked how it
 * ended; an error keeps the image from being installed. */
static int session_end(void *ud, struct gg_err *err)
{
	struct freeze_job *j = ((struct ctx *)ud)->job;
	clear_bar(ud);
	j->src_done = 1;
	j->src_rc = session_tar_result(j, 0, &j->src_err);
	if (j->src_rc < 0)
		*err = j->src_err;
	return j->src_rc;
}

/* After the freeze of a session's sandbox: the remote tar given up when the freeze
 * failed before session_end; its error when it failed the freeze. */
static int end_session_source(struct freeze_job *j, int frc, struct gg_err *err)
{
	if (!j->src_done) { /* the freeze failed first: what went wrong on the node says more */
		struct gg_err serr = {0};
		if (session_tar_result(j, 1, &serr) < 0 && frc < 0 && frc != GG_EINTR) {
			*err = serr;
			frc = serr.code;
		}
	}
	if (j->src_rc < 0 && frc < 0)
		*err = j->src_err;
	return frc;
}

static const char *source_name(const struct freeze_job *j)
{
	return j->session ? j->session_label + strlen(SOURCE_LABEL) : j->o.source;
}

static void report_json(const struct freeze_job *j, const struct gg_freeze_result *res, double secs)
{
	const struct gg_freeze_opts *o = &j->o;
	json_t *r = json_object();
	gg_json_set_text(r, "output", o->output);
	gg_json_set_text(r, "source", source_name(j));
	gg_json_set_text(r, "format", gg_image_format_name(res->format));
	gg_json_set(r, "size", json_integer((json_int_t)res->image_size));
	gg_json_set(r, "squashfs_size", json_integer((json_int_t)res->squashfs_size));
	gg_json_set(r, "data_bytes", json_integer((json_int_t)res->data_bytes));
	gg_json_set(r, "files", json_integer((json_int_t)res->files));
	gg_json_set(r, "dirs", json_integer((json_int_t)res->dirs));
	gg_json_set(r, "symlinks", json_integer((json_int_t)res->symlinks));
	gg_json_set(r, "specials", json_integer((json_int_t)res->specials));
	gg_json_set(r, "hardlinks", json_integer((json_int_t)res->hardlinks));
	gg_json_set(r, "duplicates", json_integer((json_int_t)res->duplicates));
	gg_json_set_text(r, "arch", res->arch);
	gg_json_set(r, "compression",
		    gg_json_text(gg_image_comp_name(o->comp ? o->comp : GG_IMAGE_COMP_GZIP)));
	gg_json_set(r, "reproducible", json_boolean(!o->no_reproducible));
	gg_json_set(r, "build_time", ui_json_time(res->build_time));
	gg_json_set(r, "warnings", json_integer(res->warnings));
	gg_json_set(r, "seconds", json_real(secs));
	if (j->session)
		gg_json_set(r, "received_bytes", json_integer((json_int_t)j->src.bytes));
	ui_json_doc("freeze", r);
}

static void report(struct gg_cli *cli, const struct freeze_job *j,
		   const struct gg_freeze_result *res, double secs)
{
	if (cli->json) {
		report_json(j, res, secs);
		return;
	}
	char in[32], outsz[32], got[64] = "";
	gg_size_format(res->data_bytes, in, sizeof in);
	gg_size_format(res->image_size, outsz, sizeof outsz);
	if (j->session) {
		char b[32];
		snprintf(got, sizeof got, " (%s from the node)",
			 gg_size_format(j->src.bytes, b, sizeof b));
	}
	ui_info(cli,
		"froze %s (%s%s, %llu file%s, %llu director%s, %llu symlink%s, %llu other) "
		"into %s: %s, %s, %.1f s%s",
		source_name(j), in, got, (unsigned long long)res->files, res->files == 1 ? "" : "s",
		(unsigned long long)res->dirs, res->dirs == 1 ? "y" : "ies",
		(unsigned long long)res->symlinks, res->symlinks == 1 ? "" : "s",
		(unsigned long long)res->specials, j->o.output, outsz, res->arch, secs,
		res->warnings ? " (with warnings)" : "");
}

static void bar_init(struct ctx *c, struct gg_cli *cli)
{
	*c = (struct ctx){.cli = cli, .cols = 80};
	c->bar = !cli->quiet && isatty(STDERR_FILENO);
	struct winsize ws;
	if (c->bar && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		c->cols = ws.ws_col;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
}

/* Ctrl-C, SIGTERM, SIGHUP: the library stops at the next poll, removes its temp file
 * and returns GG_EINTR. */
static int run_freeze(struct gg_cli *cli, struct freeze_job *j)
{
	struct ctx ctx;
	bar_init(&ctx, cli);
	ctx.job = j;
	struct gg_image_callbacks cb = {.progress = progress_cb,
					.warn = warn_cb,
					.cancel = cli_cancel_cb,
					.ud = &ctx,
					.source_end = j->session ? session_end : NULL};
	struct cli_sigsave save;
	cli_interrupt_push(&save);
	struct gg_freeze_result res;
	struct gg_err err = {0};
	j->gpus = j->session ? j->src.gpus : gpu_provenance(cli);
	j->src.gpus = NULL;
	j->o.gpus_json = j->gpus;
	int frc = gg_image_freeze(&j->o, &cb, &res, &err);
	clear_bar(&ctx);
	if (j->session)
		frc = end_session_source(j, frc, &err);
	cli_interrupt_pop(&save);
	if (frc < 0)
		return ui_fail(cli, &err, "freeze %s", j->session ? j->session : j->o.source);
	report(cli, j, &res, elapsed(&ctx));
	return EXIT_OK;
}

static void job_clear(struct freeze_job *j)
{
	if (j->src.conn) {
		/* given up before the stream was read: the writer sees EPIPE */
		close(j->o.input_fd);
		int st;
		char *said;
		finish_session_tar(&j->src, 1, &st, &said, NULL);
		free(said);
	}
	free(j->session_label);
	free(j->excl_label);
	for (size_t i = 0; i < j->nexcl; i++)
		free((char *)j->excl[i]);
	free(j->excl);
	free(j->labels);
	free(j->gpus);
	free(j->src.gpus);
}

int cmd_freeze(struct gg_cli *cli, int argc, char **argv)
{
	struct freeze_job j = {.o = {.input_fd = STDIN_FILENO, .tool_version = GG_VERSION}};
	int rc = parse_args(cli, argc, argv, &j);
	if (rc == 0 && j.session)
		rc = open_session_source(cli, &j);
	if (rc == 0)
		rc = check_settings(cli, &j);
	if (rc == 0)
		rc = run_freeze(cli, &j);
	job_clear(&j);
	return rc == HELP_SHOWN ? EXIT_OK : rc;
}
