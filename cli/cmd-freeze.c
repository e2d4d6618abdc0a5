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
#include "freeze-ui.h"
#include "interrupt.h"
#include "gridgpu/node.h"
#include "commands.h"
#include "gridgpu/image.h"

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
	O_INCLUDE,
	O_STRICT,
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
	{"include", 0, OPT_ARG, "PATH",
	 "with --session: take PATH of the node into the image (what it reports; repeat)",
	 O_INCLUDE},
	{"strict", 0, OPT_NONE, NULL,
	 "with --session: what the image will not carry is an error (exit 2)", O_STRICT},
	OPT_END,
};

/* ---- the command ------------------------------------------------------------------ */

struct freeze_job {
	struct gg_freeze_opts o;
	const char **labels;
	size_t nlabels;
	const char *session, *rpath;   /* --session NAME [--path DIR] */
	int nexcl, link, ninc, strict; /* --exclude, --link-comp, --include, --strict given */
	struct gg_session_freeze *sf;
	char *gpus;
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

/* A setting of the session's freeze: 0, or the exit code after saying what is wrong. */
static int sf_set(struct gg_cli *cli, int rc, const struct gg_err *err)
{
	if (rc == GG_EUSAGE)
		return ui_usage(cli, "%s", err->msg);
	return rc < 0 ? ui_fail(cli, err, "freeze") : 0;
}

static int parse_session_option(struct gg_cli *cli, int c, struct freeze_job *j)
{
	struct gg_err err = {0};
	if (!j->sf && sf_set(cli, gg_session_freeze_new(&j->sf, &err), &err))
		return EXIT_FAIL;
	switch (c) {
	case O_REMOTE_PATH:
		j->rpath = cli->optarg;
		return sf_set(cli, gg_session_freeze_path(j->sf, cli->optarg, &err), &err);
	case O_EXCLUDE:
		j->nexcl++;
		return sf_set(cli, gg_session_freeze_exclude(j->sf, cli->optarg, &err), &err);
	case O_INCLUDE:
		j->ninc++;
		return sf_set(cli, gg_session_freeze_include(j->sf, cli->optarg, &err), &err);
	case O_STRICT: gg_session_freeze_strict(j->sf, j->strict = 1); return 0;
	default:
		j->link = 1;
		return sf_set(cli, gg_session_freeze_link(j->sf, cli->optarg, &err), &err);
	}
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
	case O_REMOTE_PATH:
	case O_EXCLUDE:
	case O_INCLUDE:
	case O_STRICT:
	case O_LINK_COMP: rc = parse_session_option(cli, c, j); break;
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
	case O_FORMAT:
		o->format = !strcmp(cli->optarg, "dir")   ? GG_IMAGE_DIR
			    : !strcmp(cli->optarg, "tar") ? GG_IMAGE_TAR
			    : !strcmp(cli->optarg, "oci") ? GG_IMAGE_OCI
							  : GG_IMAGE_AUTO;
		if (!o->format)
			rc = ui_usage(cli, "--format '%s': expected dir, tar or oci", cli->optarg);
		break;
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
	if ((j->nexcl || j->ninc || j->strict) && (!j->session || j->rpath))
		return ui_usage(cli, "--%s goes with --session NAME (without --path)",
				j->nexcl  ? "exclude"
				: j->ninc ? "include"
					  : "strict");
	if (j->link && !j->session)
		return ui_usage(cli, "--link-comp goes with --session NAME");
	j->o.source = j->session ? "-" : argv[cli->optind];
	struct gg_err err = {0};
	if (j->session && !j->sf && sf_set(cli, gg_session_freeze_new(&j->sf, &err), &err))
		return EXIT_FAIL;
	return 0;
}

/* The labels, then the settings freeze-ui checks. */
static int check_settings(struct gg_cli *cli, struct freeze_job *j)
{
	j->o.labels = j->labels;
	j->o.nlabels = j->nlabels;
	return freeze_check_settings(cli, &j->o);
}

static const char *source_name(const struct freeze_job *j)
{
	return j->session ? gg_session_freeze_source(j->sf) : j->o.source;
}

/* The freeze: of the session's sandbox, or of a source here with this machine's GPUs. */
static int freeze(struct gg_cli *cli, struct freeze_job *j, const struct gg_record *r,
		  struct freeze_bar *bar, struct gg_freeze_result *res, struct gg_err *err)
{
	struct gg_image_callbacks cb = {.progress = freeze_bar_progress,
					.warn = freeze_bar_warn,
					.cancel = cli_cancel_cb,
					.ud = bar};
	if (j->session && gg_sess_state_ended(r->state)) /* from its snapshot, at its CE */
		return gg_session_freeze_snapshot(j->sf, cli_engine(cli), r, &j->o, &cb, res, err);
	if (j->session) {
		gg_session_freeze_on_info(j->sf, freeze_bar_info, bar);
		return gg_session_freeze(j->sf, cli_config(cli), r, &j->o, &cb, res, err);
	}
	struct gg_err gerr = {0};
	if (gg_freeze_local_gpus(&j->gpus, &gerr) < 0)
		ui_warn(cli, "the image records no GPUs: %s", gerr.msg);
	j->o.gpus_json = j->gpus;
	return gg_image_freeze(&j->o, &cb, res, err);
}

/* Ctrl-C, SIGTERM, SIGHUP: the library stops at the next poll, removes its temp file
 * and returns GG_EINTR. */
static int run_freeze(struct gg_cli *cli, struct freeze_job *j, const struct gg_record *r)
{
	struct freeze_bar bar;
	freeze_bar_init(&bar, cli);
	struct cli_sigsave save;
	cli_interrupt_push(&save);
	struct gg_freeze_result res;
	struct gg_err err = {0};
	int frc = freeze(cli, j, r, &bar, &res, &err);
	freeze_bar_clear(&bar);
	cli_interrupt_pop(&save);
	if (frc < 0 && j->session && gg_session_freeze_step(j->sf) == GG_SFREEZE_OUTPUT)
		return ui_fail(cli, &err, "freeze");
	if (frc < 0 && j->session && gg_session_freeze_step(j->sf) == GG_SFREEZE_NODE)
		return ui_fail(cli, &err, "freeze --session %s", j->session);
	if (frc < 0)
		return ui_fail(cli, &err, "freeze %s", j->session ? j->session : j->o.source);
	freeze_report(cli, &j->o, source_name(j), j->session ? j->sf : NULL, &res,
		      freeze_bar_elapsed(&bar));
	return EXIT_OK;
}

/* The session's record (the names there are said when it is not one). */
static int find_session(struct gg_cli *cli, const char *name, struct gg_record *r)
{
	struct gg_store *st = cli_store(cli);
	if (!st)
		return cli->cfg_exit;
	int rc = cli_find_record(cli, st, name, r);
	gg_store_free(st);
	return rc;
}

int cmd_freeze(struct gg_cli *cli, int argc, char **argv)
{
	struct freeze_job j = {.o = {.input_fd = STDIN_FILENO, .tool_version = GG_VERSION}};
	struct gg_record r = {0};
	int rc = parse_args(cli, argc, argv, &j);
	if (rc == 0)
		rc = check_settings(cli, &j);
	if (rc == 0 && j.session)
		rc = find_session(cli, j.session, &r);
	if (rc == 0)
		rc = run_freeze(cli, &j, &r);
	gg_record_clear(&r);
	gg_session_freeze_free(j.sf);
	free(j.labels);
	free(j.gpus);
	return rc == HELP_SHOWN ? EXIT_OK : rc;
}
