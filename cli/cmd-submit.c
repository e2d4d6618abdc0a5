/* gridgpu submit: a SIF image and a command as batch work on one site or many. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "image/image.h"
#include "session/sync.h"

enum {
	O_GPUS = 256,
	O_MIG,
	O_CPUS,
	O_MEMORY,
	O_WALLTIME,
	O_INPUT,
	O_OUTPUT,
	O_NAME,
	O_COUNT,
	O_IMAGE_URL,
	O_QUEUE,
	O_DRY_RUN,
	O_TOKEN,
	O_MIN_CC,
	O_MIN_MEM,
	O_MATCH_DEV,
};

const struct gg_opt cmd_submit_opts[] = {
	{"gpus", 'g', OPT_ARG, "N", "whole GPUs", O_GPUS},
	{"mig", 0, OPT_ARG, "PROFILE", "a MIG slice instead, e.g. 1g.10gb", O_MIG},
	{"cpus", 'c', OPT_ARG, "N", "CPU cores", O_CPUS},
	{"memory", 'm', OPT_ARG, "SIZE", "memory, e.g. 16G", O_MEMORY},
	{"walltime", 't', OPT_ARG, "DUR", "how long the job may run (default 8h)", O_WALLTIME},
	{"input", 'i', OPT_FILE, "FILE", "a local file staged into the job's directory (repeat)",
	 O_INPUT},
	{"output", 'o', OPT_ARG, "PATTERN", "a file the job leaves for 'gridgpu get' (repeat)",
	 O_OUTPUT},
	{"name", 'n', OPT_ARG, "NAME", "name of the job (default job-N)", O_NAME},
	{"count", 0, OPT_ARG, "N", "N jobs, spread over the sites given", O_COUNT},
	{"image-url", 0, OPT_ARG, "URL", "the image is already at the site: the CE fetches it",
	 O_IMAGE_URL},
	{"queue", 0, OPT_ARG, "QUEUE", "queue (default from the site)", O_QUEUE},
	{"min-capability", 0, OPT_ARG, "X.Y", "lowest CUDA compute capability the job accepts",
	 O_MIN_CC},
	{"min-gpu-memory", 0, OPT_ARG, "SIZE", "least GPU memory the job accepts, e.g. 40G",
	 O_MIN_MEM},
	{"match-dev-gpu", 0, OPT_NONE, NULL, "the GPU the image was developed on as the minimum",
	 O_MATCH_DEV},
	{"token", 0, OPT_NONE, NULL, "authenticate with a bearer token instead of the proxy",
	 O_TOKEN},
	{"dry-run", 0, OPT_NONE, NULL, "print the job descriptions and requests, submit nothing",
	 O_DRY_RUN},
	OPT_END,
};

struct sub {
	const char *image, *image_url, *mig, *queue, *name;
	const char *inputs[GG_JD_MAX], *outputs[GG_JD_MAX];
	int ninputs, noutputs, gpus, cpus, count, dry_run, token, match_dev;
	char min_cc[16];
	uint64_t min_mem;
	uint64_t memory;
	int64_t walltime;
	char **cmd;
	int ncmd;
	int64_t part_offset;
};

/* What the job asks for, for its description. */
static struct gg_job_spec spec_of(const struct sub *s, const char *wrapper)
{
	return (struct gg_job_spec){.res = {.walltime = s->walltime,
					    .cpus = s->cpus,
					    .memory = s->memory,
					    .queue = s->queue,
					    .gpus = s->gpus,
					    .mig = s->mig,
					    .min_capability = s->min_cc[0] ? s->min_cc : NULL,
					    .min_gpu_memory = s->min_mem},
				    .image = s->image,
				    .image_url = s->image_url,
				    .wrapper = wrapper,
				    .inputs = s->inputs,
				    .outputs = s->outputs,
				    .ninputs = s->ninputs,
				    .noutputs = s->noutputs,
				    .cmd = s->cmd,
				    .ncmd = s->ncmd,
				    .part_offset = s->part_offset};
}

/* The development GPU as minimums (what was not given explicitly). */
static void match_dev_gpu(struct gg_cli *cli, const struct gg_dev_gpu *dev, struct sub *s)
{
	if (dev->cc[0] && !s->min_cc[0])
		snprintf(s->min_cc, sizeof s->min_cc, "%s", dev->cc);
	if (dev->memory && !s->min_mem)
		s->min_mem = dev->memory;
	char m[32];
	ui_info(cli, "matching the development GPU%s%s: --min-capability %s --min-gpu-memory %s",
		dev->name[0] ? " " : "", dev->name, s->min_cc[0] ? s->min_cc : "-",
		s->min_mem ? gg_size_format(s->min_mem, m, sizeof m) : "-");
}

struct describe_ud {
	const struct sub *s;
	const struct gg_site *site;
	const char *wrapper;
};

static int describe(void *ud, const struct gg_record *r, const char *pubkey, struct gg_jobdesc *jd,
		    struct gg_err *err)
{
	const struct describe_ud *d = ud;
	(void)pubkey;
	struct gg_job_spec spec = spec_of(d->s, d->wrapper);
	return gg_job_describe(&spec, d->site, r, jd, err);
}

/* The record a job starts with (what was asked). */
static void new_record(const struct sub *s, const struct gg_site *site, const char *name,
		       struct gg_record *r)
{
	*r = (struct gg_record){.kind = GG_REC_JOB,
				.walltime = s->walltime,
				.gpus = s->gpus,
				.cpus = s->cpus,
				.memory = s->memory};
	r->site = strdup(site->name);
	r->ce = site->ce ? strdup(site->ce) : NULL;
	r->name = name ? strdup(name) : NULL;
	r->mig = s->mig ? strdup(s->mig) : NULL;
	r->image_path = strdup(s->image_url ? s->image_url : s->image);
	r->auth = strdup(s->token ? "token" : site->auth ? site->auth : "proxy");
	char cmdline[1024] = "";
	for (int i = 0; i < s->ncmd; i++)
		snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), "%s%s",
			 i ? " " : "", s->cmd[i]);
	r->command = strdup(cmdline);
}

/* Submit one job to one site; on success *out is its record. */
static int submit_one(struct gg_cli *cli, const struct sub *s, const struct gg_site *site,
		      const char *wrapper, const char *name, struct gg_record *out,
		      struct gg_err *err)
{
	struct describe_ud d = {s, site, wrapper};
	struct gg_submission sub = {
		.prefix = "job", .retry_uploads = 1, .describe = describe, .describe_ud = &d};
	new_record(s, site, name, &sub.rec);
	int rc = gg_engine_submit(cli_engine(cli), &sub, out, NULL, err);
	if (rc < 0 && out->name && !strncmp(err->msg, "killed", 6))
		gg_err_prefix(err, "%s", out->name);
	if (rc < 0)
		gg_record_clear(out);
	return rc;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* Each input is a readable file whose name in the job's directory is its own:
 * not the job's image or wrapper (it would replace them), not another input's. */
static int check_inputs(struct gg_cli *cli, const struct sub *s)
{
	struct gg_err err = {0};
	for (int i = 0; i < s->ninputs; i++) {
		const char *b = base_name(s->inputs[i]);
		if (cli_local_file(s->inputs[i], &err) < 0)
			return ui_fail(cli, &err, "--input '%s'", s->inputs[i]);
		if (!strcmp(b, "image.sif") || !strcmp(b, "gridgpu-wrapper") ||
		    !strcmp(b, "gridgpu-job.out") || !strcmp(b, "gridgpu-job.err"))
			return ui_usage(cli,
					"--input '%s': '%s' is the job's own file in its "
					"directory: rename the input",
					s->inputs[i], b);
		for (int k = 0; k < i; k++)
			if (!strcmp(b, base_name(s->inputs[k])))
				return ui_usage(cli,
						"--input '%s' and '%s': both would be '%s' in "
						"the job's directory",
						s->inputs[k], s->inputs[i], b);
	}
	return 0;
}

/* One option into s; 0, or the exit code after saying what is wrong. */
static int apply_opt(struct gg_cli *cli, int c, struct sub *s)
{
	struct gg_err err = {0};
	const char *v = cli->optarg;
	int rc = 0;
	switch (c) {
	case O_GPUS: rc = cli_opt_int(cli, 0, 64, &s->gpus); break;
	case O_MIG: s->mig = v; break;
	case O_CPUS: rc = cli_opt_int(cli, 1, 4096, &s->cpus); break;
	case O_COUNT: rc = cli_opt_int(cli, 1, 1000, &s->count); break;
	case O_MEMORY:
		if (gg_size_parse(v, &s->memory, &err) < 0)
			rc = ui_fail(cli, &err, "--memory");
		break;
	case O_WALLTIME:
		if (gg_duration_parse(v, &s->walltime, &err) < 0)
			rc = ui_fail(cli, &err, "--walltime");
		else if (!s->walltime)
			rc = ui_usage(cli, "--walltime must be more than 0");
		break;
	case O_INPUT:
		if (s->ninputs == GG_JD_MAX - 2)
			rc = ui_usage(cli, "too many --input files");
		else
			s->inputs[s->ninputs++] = v;
		break;
	case O_OUTPUT:
		if (s->noutputs == GG_JD_MAX - 2)
			rc = ui_usage(cli, "too many --output patterns");
		else if (strchr(v, '/') || !strcmp(v, "..") || !*v)
			rc = ui_usage(cli,
				      "--output '%s': a file name (or pattern) in the job's "
				      "directory",
				      v);
		else
			s->outputs[s->noutputs++] = v;
		break;
	case O_NAME: s->name = v; break;
	case O_IMAGE_URL: s->image_url = v; break;
	case O_QUEUE: s->queue = v; break;
	case O_DRY_RUN: s->dry_run = 1; break;
	case O_TOKEN: s->token = 1; break;
	case O_MATCH_DEV: s->match_dev = 1; break;
	case O_MIN_CC: {
		unsigned a, b;
		char extra;
		if (sscanf(v, "%u.%u%c", &a, &b, &extra) != 2 || a > 99 || b > 99)
			rc = ui_usage(cli, "--min-capability '%s': expected X.Y, e.g. 8.0", v);
		else
			snprintf(s->min_cc, sizeof s->min_cc, "%u.%u", a, b);
		break;
	}
	case O_MIN_MEM:
		if (gg_size_parse(v, &s->min_mem, &err) < 0)
			rc = ui_fail(cli, &err, "--min-gpu-memory");
		break;
	}
	return rc;
}

/* The options, the image and the command after "--"; 0, -2 after --help, or
 * the exit code after saying what is wrong. */
static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct sub *s)
{
	struct gg_err err = {0};
	int c;
	/* The command after "--" is the job's: getopt must not see it. */
	int dd = argc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = i;
			break;
		}
	while ((c = cli_next_opt(cli, dd, argv, cmd_submit_opts)) > 0) {
		int rc = apply_opt(cli, c, s);
		if (rc)
			return rc;
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (dd - cli->optind != 1)
		return ui_usage(cli, "submit: expected IMAGE.sif, then -- COMMAND [ARGS...]");
	s->image = argv[cli->optind];
	s->cmd = argv + dd + 1;
	s->ncmd = dd < argc ? argc - dd - 1 : 0;
	if (s->ncmd == 0)
		return ui_usage(
			cli, "submit: no command: gridgpu submit IMAGE.sif -- COMMAND [ARGS...]");
	if (s->gpus && s->mig)
		return ui_usage(cli, "--gpus and --mig exclude each other");
	if (s->name && s->count > 1)
		return ui_usage(cli, "--name names one job: leave it out with --count");
	if (s->name && !gg_record_name_valid(s->name))
		return ui_usage(cli,
				"--name '%s': use a letter, then letters, digits, '.', '_', '-'",
				s->name);
	int bad = check_inputs(cli, s);
	if (bad)
		return bad;
	if (!s->image_url && cli_local_file(s->image, &err) < 0)
		return ui_fail(cli, &err, "image '%s'", s->image);
	/* The image is checked before anything is uploaded. */
	struct gg_dev_gpu dev;
	if (!s->image_url &&
	    gg_job_image_check(s->image, &s->part_offset, s->match_dev ? &dev : NULL, &err) < 0)
		return ui_fail(cli, &err, "image '%s'", s->image);
	if (!s->image_url && s->match_dev)
		match_dev_gpu(cli, &dev, s);
	return 0;
}

/* The sites: every --site given, in order, else the default one. 0, or the
 * exit code after saying what is wrong. */
static int pick_sites(struct gg_cli *cli, const struct gg_site **sites, int *nsites)
{
	struct gg_err err = {0};
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	*nsites = 0;
	for (int i = 0; i < cli->nsites; i++) {
		if (!(sites[(*nsites)++] = gg_config_site(cfg, cli->sites[i]))) {
			gg_err_set(&err, GG_ENOTFOUND,
				   "no such site in %s (see 'gridgpu site list')", cfg->path);
			return ui_fail(cli, &err, "site '%s'", cli->sites[i]);
		}
	}
	if (!*nsites) {
		const struct gg_site *one = cli_site(cli, 1);
		if (!one)
			return cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
		sites[(*nsites)++] = one;
	}
	return 0;
}

/* --count N spread round-robin; each job goes to the first site, from its
 * turn on, that accepts it. Returns the exit code. */
static int spread(struct gg_cli *cli, const struct sub *s, const struct gg_site *const *sites,
		  int nsites, const char *wrapper)
{
	struct gg_err err = {0};
	cli_catch_interrupt();
	int exit_code = EXIT_OK, nok = 0;
	json_t *done = json_array();
	for (int i = 0; i < s->count && !cli_interrupted(); i++) {
		int placed = 0;
		struct gg_err last = {0};
		for (int k = 0; k < nsites && !placed; k++) {
			const struct gg_site *site = sites[(i + k) % nsites];
			struct gg_record r = {0};
			int rc = submit_one(cli, s, site, wrapper, s->name, &r, &err);
			if (rc == 0) {
				placed = 1;
				nok++;
				json_array_append_new(done, cli_record_json(&r));
				if (!cli->json)
					ui_out("%s\n", r.name);
				gg_record_clear(&r);
			} else {
				last = err;
				if (rc == GG_EINTR)
					break;
				if (nsites > 1)
					ui_warn(cli, "site %s: %s", site->name, err.msg);
				/* usage-level problems are the same everywhere */
				if (rc == GG_EUSAGE)
					break;
			}
		}
		if (!placed) {
			int code = ui_fail(cli, &last, "submit%s",
					   nsites > 1 ? " (no site accepted the job)" : "");
			if (!exit_code)
				exit_code = code;
			if (last.code == GG_EINTR)
				break;
		}
	}
	if (cli->json && (nok || !exit_code)) /* else the error is the document */
		ui_json_doc("submit", done);
	else
		json_decref(done);
	if (nok)
		ui_info(cli,
			"'gridgpu jobs --sync' follows them; 'gridgpu get NAME' fetches the outputs");
	return exit_code;
}

int cmd_submit(struct gg_cli *cli, int argc, char **argv)
{
	struct sub s = {.walltime = 8 * 3600, .count = 1};
	int rc = parse_opts(cli, argc, argv, &s);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	const struct gg_site *sites[16];
	int nsites = 0;
	if ((rc = pick_sites(cli, sites, &nsites)))
		return rc;
	char *wrapper = cli_libexec(cli, "batch-wrapper", "batch wrapper", "submit");
	if (!wrapper)
		return EXIT_FAIL;
	if (s.dry_run) {
		struct gg_job_spec spec = spec_of(&s, wrapper);
		rc = cli_dry_run_jobs(cli, &spec, sites, nsites, s.count);
	} else {
		rc = cli_engine(cli) ? spread(cli, &s, sites, nsites, wrapper) : cli->cfg_exit;
	}
	free(wrapper);
	return rc;
}
