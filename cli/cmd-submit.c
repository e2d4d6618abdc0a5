/* gridgpu submit: an image (a SIF, or one frozen on the fly) and a command as batch
 * work on one site or many. */
#include <stdlib.h>
#include <string.h>

#include "check-ui.h"
#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "freeze-ui.h"
#include "resopt.h"
#include "gridgpu/image.h"
#include "gridgpu/session.h"

enum {
	O_INPUT = 256,
	O_OUTPUT,
	O_NAME,
	O_COUNT,
	O_IMAGE_URL,
	O_DRY_RUN,
	O_MIN_CC,
	O_MIN_MEM,
	O_MATCH_DEV,
	O_BIND,
	O_CHECK,
	O_INPUT_LIST,
};

const struct gg_opt cmd_submit_opts[] = {
	CLI_RES_OPTS("how long the job may run (default 8h)"),
	{"input", 'i', OPT_FILE, "FILE|URL[:NAME]",
	 "a local file uploaded, or a root://, davs://, https:// URL the CE fetches (repeat)",
	 O_INPUT},
	{"output", 'o', OPT_ARG, "PATTERN|NAME=URL",
	 "a file left for 'gridgpu get', or one the CE uploads to storage (repeat)", O_OUTPUT},
	{"name", 'n', OPT_ARG, "NAME", "name of the job (default job-N)", O_NAME},
	{"count", 0, OPT_ARG, "N", "N jobs, spread over the sites given", O_COUNT},
	{"input-list", 0, OPT_FILE, "FILE", "one job per line of FILE, the line its input",
	 O_INPUT_LIST},
	{"image-url", 0, OPT_ARG, "URL", "the image is already at the site: the CE fetches it",
	 O_IMAGE_URL},
	{"min-capability", 0, OPT_ARG, "X.Y", "lowest CUDA compute capability the job accepts",
	 O_MIN_CC},
	{"min-gpu-memory", 0, OPT_ARG, "SIZE", "least GPU memory the job accepts, e.g. 40G",
	 O_MIN_MEM},
	{"match-dev-gpu", 0, OPT_NONE, NULL, "the GPU the image was developed on as the minimum",
	 O_MATCH_DEV},
	{"bind", 0, OPT_ARG, "SRC[:DST]", "a path of the node in the job's container (repeat)",
	 O_BIND},
	{"dry-run", 0, OPT_NONE, NULL, "print the job descriptions and requests, submit nothing",
	 O_DRY_RUN},
	{"check", 0, OPT_NONE, NULL, "first run it in a live session's node as 'gridgpu check'",
	 O_CHECK},
	CLI_CHECK_OPTS("with --check: the session (default: the image's, else the only ready "
		       "one)"),
	OPT_END,
};

struct sub {
	struct gg_job_spec *spec; /* storage URLs as parsed, the rest once all is */
	struct gg_jd_resources res;
	const char *image, *image_url, *input_list;
	char **cmd;
	int ncmd, ninputs, noutputs, ndata_in, ndata_out;
	const char *inputs[GG_JD_MAX], *outputs[GG_JD_MAX];
	const char *name;
	int count, dry_run, token, match_dev, check;
	struct gg_check *chk; /* --check's settings */
	char min_cc[16];
};

/* The development GPU as minimums (what was not given explicitly). */
static void match_dev_gpu(struct gg_cli *cli, const struct gg_dev_gpu *dev, struct sub *s)
{
	struct gg_jd_resources *res = &s->res;
	gg_job_match_dev(res, dev, s->min_cc, sizeof s->min_cc);
	char m[32];
	ui_info(cli, "matching the development GPU%s%s: --min-capability %s --min-gpu-memory %s",
		dev->name[0] ? " " : "", dev->name, s->min_cc[0] ? s->min_cc : "-",
		res->min_gpu_memory ? gg_size_format(res->min_gpu_memory, m, sizeof m) : "-");
}

/* --input and --output: the next of up to GG_JD_MAX - 2. */
static int add_file(struct gg_cli *cli, const char **list, int *n, const char *what)
{
	if (*n == GG_JD_MAX - 2)
		return ui_usage(cli, "too many %s", what);
	list[(*n)++] = cli->optarg;
	return 0;
}

/* --input URL[:NAME] or --output NAME=URL (the CE's): checked, into the spec. */
static int add_data(struct gg_cli *cli, struct sub *s, int out)
{
	struct gg_err err = {0};
	char *url = NULL, *name = NULL;
	int *n = out ? &s->ndata_out : &s->ndata_in;
	if (*n == GG_JD_MAX - 2)
		return ui_usage(cli, "too many %s URLs", out ? "--output" : "--input");
	int rc = out ? gg_data_output_parse(cli->optarg, NULL, NULL, &name, &url, &err)
		     : gg_data_input_parse(cli->optarg, &url, &name, &err);
	if (rc < 0)
		return ui_usage(cli, "%s%s", out ? "" : "--input ", err.msg);
	rc = out ? gg_job_spec_add_data_output(s->spec, name, url, &err)
		 : gg_job_spec_add_data_input(s->spec, url, name, &err);
	free(url);
	free(name);
	if (rc < 0)
		return ui_fail(cli, &err, "submit");
	(*n)++;
	return 0;
}

/* The spec of what was parsed (resources and the image's partition later). */
static int make_spec(struct gg_cli *cli, struct sub *s)
{
	struct gg_err err = {0};
	int rc = gg_job_spec_set_image_url(s->spec, s->image_url, &err);
	if (rc == 0)
		rc = gg_job_spec_set_command(s->spec, (const char *const *)s->cmd, s->ncmd, &err);
	for (int i = 0; rc == 0 && i < s->ninputs; i++)
		rc = gg_job_spec_add_input(s->spec, s->inputs[i], &err);
	for (int i = 0; rc == 0 && i < s->noutputs; i++)
		rc = gg_job_spec_add_output(s->spec, s->outputs[i], &err);
	return rc < 0 ? ui_fail(cli, &err, "submit") : 0;
}

/* One option into s; 0, or the exit code after saying what is wrong. */
static int apply_opt(struct gg_cli *cli, int c, struct sub *s)
{
	const char *v = cli->optarg;
	struct gg_err err = {0};
	int rc = cli_res_opt(cli, c, &s->res, &s->token);
	if (rc == 1)
		rc = cli_check_opt(cli, c, &s->chk);
	if (rc != 1)
		return rc;
	switch (c) {
	case O_COUNT: return cli_opt_int(cli, 1, 1000, &s->count) ? EXIT_USAGE : 0;
	case O_INPUT:
		return gg_data_url_is_remote(v)
			       ? add_data(cli, s, 0)
			       : add_file(cli, s->inputs, &s->ninputs, "--input files");
	case O_OUTPUT:
		return strchr(v, '=')
			       ? add_data(cli, s, 1)
			       : add_file(cli, s->outputs, &s->noutputs, "--output patterns");
	case O_NAME: s->name = v; break;
	case O_IMAGE_URL: s->image_url = v; break;
	case O_INPUT_LIST: s->input_list = v; break;
	case O_DRY_RUN: s->dry_run = 1; break;
	case O_MATCH_DEV: s->match_dev = 1; break;
	case O_CHECK: s->check = 1; break;
	case O_MIN_CC:
		if (gg_capability_parse(v, s->min_cc, sizeof s->min_cc, &err) < 0)
			return ui_usage(cli, "--min-capability %s", err.msg);
		break;
	case O_MIN_MEM: return cli_opt_size(cli, &s->res.min_gpu_memory);
	case O_BIND:
		return gg_job_spec_add_bind(s->spec, v, &err) ? ui_usage(cli, "%s", err.msg) : 0;
	}
	return 0;
}

/* The image as a SIF, checked (or frozen) before anything is uploaded. */
static int check_image(struct gg_cli *cli, struct sub *s)
{
	struct gg_err err = {0};
	if (s->image_url)
		return gg_job_spec_set_image(s->spec, s->image, &err) ? ui_fail(cli, &err, "submit")
								      : 0;
	struct gg_dev_gpu dev;
	enum gg_job_image_how how;
	int rc =
		cli_job_image(cli, s->spec, s->image, s->dry_run, s->match_dev ? &dev : NULL, &how);
	if (rc)
		return rc;
	if (s->match_dev)
		match_dev_gpu(cli, &dev, s);
	if ((rc = cli_right_size(cli, gg_job_spec_image(s->spec), &s->res, s->match_dev)))
		return rc;
	if (how != GG_JOB_IMAGE_TO_FREEZE && gg_job_program_check(s->spec, &err) < 0)
		ui_warn(cli, "%s", err.msg); /* a warning: the site may bind it in */
	return 0;
}

/* What the options, the image and the command cannot mean together. */
static int check_sub(struct gg_cli *cli, struct sub *s)
{
	int rc;
	if ((rc = cli_res_check(cli, &s->res)))
		return rc;
	if (s->chk && !s->check)
		return ui_usage(cli, "--session and --module go with --check");
	if (s->name && (s->count > 1 || s->input_list))
		return ui_usage(cli, "--name names one job: leave it out with --count");
	if (s->input_list && s->count > 1)
		return ui_usage(cli, "--input-list: its lines count the jobs: leave out --count");
	if (s->input_list && (rc = cli_read_input_list(cli, s->input_list, s->spec)))
		return rc;
	if (s->input_list)
		s->count = gg_job_spec_each_count(s->spec);
	if (s->name && !gg_record_name_valid(s->name))
		return ui_usage(cli,
				"--name '%s': use a letter, then letters, digits, '.', '_', '-'",
				s->name);
	struct gg_err err = {0};
	for (int i = 0; i < s->ninputs; i++) /* each input a readable local file */
		if (cli_local_file(s->inputs[i], &err) < 0)
			return ui_fail(cli, &err, "--input '%s'", s->inputs[i]);
	if (gg_job_spec_check(s->spec, &err) < 0) /* what no site could take */
		return ui_usage(cli, "%s", err.msg);
	return check_image(cli, s);
}

/* The options, the image and the command after "--"; 0, -2 after --help, or
 * the exit code after saying what is wrong. */
static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct sub *s)
{
	int c, rc;
	int dd = cli_dashdash(argc, argv); /* the job's command follows */
	while ((c = cli_next_opt(cli, dd, argv, cmd_submit_opts)) > 0)
		if ((rc = apply_opt(cli, c, s)))
			return rc;
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (dd - cli->optind != 1)
		return ui_usage(cli, "submit: expected IMAGE, then -- COMMAND [ARGS...]");
	s->image = argv[cli->optind];
	s->cmd = argv + dd + 1;
	s->ncmd = dd < argc ? argc - dd - 1 : 0;
	if (s->ncmd == 0)
		return ui_usage(cli,
				"submit: no command: gridgpu submit IMAGE -- COMMAND [ARGS...]");
	if ((rc = make_spec(cli, s)) || (rc = check_sub(cli, s)))
		return rc;
	/* given, or the development GPU's (--match-dev-gpu) */
	if (s->min_cc[0])
		s->res.min_capability = s->min_cc;
	struct gg_err err = {0};
	if (gg_job_spec_set_resources(s->spec, &s->res, &err) < 0)
		return ui_fail(cli, &err, "submit");
	return 0;
}

/* The parsed submission to its sites (or printed with --dry-run). */
static int submit(struct gg_cli *cli, struct sub *s)
{
	int rc;
	const struct gg_site *sites[16];
	int nsites = 0;
	char arch[16]; /* the image's: a site of another is dropped */
	gg_job_spec_arch(s->spec, arch);
	if ((rc = cli_submit_sites(cli, &s->res, arch[0] ? arch : NULL, s->dry_run, sites, 16,
				   &nsites)))
		return rc;
	if (cli->gpu_optional > 1) /* --gpus 0-1, decided where it goes */
		gg_job_spec_gpu_optional(s->spec, cli->gpu_optional == 2);
	struct gg_err err = {0};
	if (gg_job_count_check(s->spec, s->count, sites, nsites, &err) < 0)
		return ui_usage(cli, "%s", err.msg);
	char *wrapper = cli_libexec(cli, "batch-wrapper", "batch wrapper", "submit");
	if (!wrapper)
		return EXIT_FAIL;
	rc = gg_job_spec_set_wrapper(s->spec, wrapper, &err) < 0 ? ui_fail(cli, &err, "submit") : 0;
	free(wrapper);
	if (rc == 0 && s->check && !s->chk && gg_check_new(&s->chk, &err) < 0)
		rc = ui_fail(cli, &err, "submit");
	if (rc == 0 && s->check) /* before anything is sent */
		rc = cli_check_run(cli, s->chk, s->spec, 1);
	if (rc)
		return rc;
	if (s->dry_run)
		return cli_dry_run_jobs(cli, s->spec, sites, nsites, s->count);
	return cli_engine(cli)
		       ? cli_submit_spread(cli, s->spec, s->count, s->name, s->token, sites, nsites)
		       : cli->cfg_exit;
}

int cmd_submit(struct gg_cli *cli, int argc, char **argv)
{
	struct sub s = {.res.walltime = 8 * 3600, .count = 1};
	struct gg_err err = {0};
	if (gg_job_spec_new(&s.spec, &err) < 0)
		return ui_fail(cli, &err, "submit");
	int rc = parse_opts(cli, argc, argv, &s);
	if (!rc)
		rc = submit(cli, &s);
	gg_job_spec_free(s.spec);
	gg_check_free(s.chk);
	return rc == -2 ? EXIT_OK : rc;
}
