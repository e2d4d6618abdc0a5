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

static int build_jd(const struct sub *s, const struct gg_site *site, const struct gg_record *r,
		    const char *wrapper, struct gg_jobdesc *jd, struct gg_err *err)
{
	char buf[64];
	char *jobname = gg_strdup_printf("gridgpu-%s", r->uid);
	int rc = gg_jd_set(&jd->name, jobname, err);
	free(jobname);
	if (rc == 0)
		rc = gg_jd_set(&jd->executable, "/bin/sh", err);
	if (rc == 0)
		rc = gg_jd_arg(jd, "gridgpu-wrapper", err);
	if (rc == 0 && (s->gpus || s->mig))
		rc = gg_jd_arg(jd, "-g", err);
	snprintf(buf, sizeof buf, "%lld", (long long)s->part_offset);
	if (rc == 0 && (rc = gg_jd_arg(jd, "-o", err)) == 0)
		rc = gg_jd_arg(jd, buf, err);
	if (rc == 0 && site && site->runtime && (rc = gg_jd_arg(jd, "-r", err)) == 0)
		rc = gg_jd_arg(jd, site->runtime, err);
	if (rc == 0)
		rc = gg_jd_arg(jd, "image.sif", err);
	if (rc == 0)
		rc = gg_jd_arg(jd, "--", err);
	for (int i = 0; rc == 0 && i < s->ncmd; i++)
		rc = gg_jd_arg(jd, s->cmd[i], err);
	if (rc == 0)
		rc = gg_jd_input(jd, "gridgpu-wrapper", NULL, wrapper, err);
	if (rc == 0)
		rc = gg_jd_input(jd, "image.sif", s->image_url, s->image_url ? NULL : s->image,
				 err);
	for (int i = 0; rc == 0 && i < s->ninputs; i++) {
		const char *base = strrchr(s->inputs[i], '/');
		rc = gg_jd_input(jd, base ? base + 1 : s->inputs[i], NULL, s->inputs[i], err);
	}
	for (int i = 0; rc == 0 && i < s->noutputs; i++)
		rc = gg_jd_output(jd, s->outputs[i], err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stdout_name, "gridgpu-job.out", err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stderr_name, "gridgpu-job.err", err);
	struct gg_jd_resources res = {.walltime = s->walltime,
				      .cpus = s->cpus,
				      .memory = s->memory,
				      .queue = s->queue,
				      .gpus = s->gpus,
				      .mig = s->mig,
				      .min_capability = s->min_cc[0] ? s->min_cc : NULL,
				      .min_gpu_memory = s->min_mem};
	if (rc == 0)
		rc = gg_jd_resources(jd, &res, site, err);
	return rc;
}

/* The development GPU recorded by freeze (the provenance's "gpus"), as
 * minimums. */
static int match_dev_gpu(struct gg_cli *cli, struct gg_sif *sif, struct sub *s, struct gg_err *err)
{
	const struct gg_sif_descr *d =
		gg_sif_find(sif, GG_SIF_GENERIC_JSON, "gridgpu-provenance.json");
	char *text = NULL;
	size_t len;
	if (!d || gg_sif_read_object(sif, d, 1 << 20, &text, &len, err) < 0)
		return gg_err_set(err, GG_EUSAGE,
				  "--match-dev-gpu: the image has no provenance "
				  "(freeze it with gridgpu)");
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	json_t *g = json_object_get(j, "gpus");
	json_t *arr = json_is_array(g) ? g : json_object_get(g, "gpus");
	json_t *dev = json_array_get(arr, 0);
	const char *cc = json_string_value(json_object_get(dev, "compute_capability"));
	json_int_t mb = json_integer_value(json_object_get(dev, "memory_total_mb"));
	const char *name = json_string_value(json_object_get(dev, "name"));
	if (!dev || (!cc && !mb)) {
		json_decref(j);
		return gg_err_set(err, GG_EUSAGE,
				  "--match-dev-gpu: the image was frozen where no "
				  "GPU was visible: give --min-capability or "
				  "--min-gpu-memory instead");
	}
	if (cc && !s->min_cc[0])
		snprintf(s->min_cc, sizeof s->min_cc, "%s", cc);
	if (mb > 0 && !s->min_mem)
		s->min_mem = (uint64_t)mb << 20;
	char m[32];
	ui_info(cli, "matching the development GPU%s%s: --min-capability %s --min-gpu-memory %s",
		name ? " " : "", name ? name : "", s->min_cc[0] ? s->min_cc : "-",
		s->min_mem ? gg_size_format(s->min_mem, m, sizeof m) : "-");
	json_decref(j);
	return 0;
}

static int mark_failed(struct gg_record *r, void *ud)
{
	if (gg_sess_state_ended(r->state))
		return 1; /* a kill meanwhile wins */
	r->state = GG_S_FAILED;
	free(r->error);
	r->error = strdup((const char *)ud);
	return 0;
}

struct submitted {
	const char *job_id;
};

static int set_submitted(struct gg_record *r, void *ud)
{
	free(r->job_id);
	r->job_id = strdup(((struct submitted *)ud)->job_id);
	/* killed while it was being submitted: stays killed (the caller cancels
	 * the job it just made) */
	if (r->state != GG_S_KILLED)
		r->state = GG_S_QUEUED;
	return 0;
}

/* Submit one job to one site; on success the record holds the job id. Returns
 * 0, or a negative code with err set (the record is then removed when nothing
 * reached the CE, or marked failed). */
static int submit_one(struct gg_cli *cli, struct gg_store *st, const struct sub *s,
		      const struct gg_site *site, const char *wrapper, const char *name,
		      struct gg_record *out, struct gg_err *err)
{
	struct gg_record r = {.kind = GG_REC_JOB,
			      .state = GG_S_REQUESTED,
			      .walltime = s->walltime,
			      .gpus = s->gpus,
			      .cpus = s->cpus,
			      .memory = s->memory};
	char uid[13];
	struct cli_auth auth = {0};
	struct gg_ce *ce = NULL;
	struct gg_jobdesc jd = {0};
	char *xrsl = NULL, *job_id = NULL, *deleg = NULL;
	int posted = 0;
	int rc = gg_random_uid(uid, err);
	if (rc < 0)
		return rc;
	r.uid = strdup(uid);
	r.site = strdup(site->name);
	r.ce = site->ce ? strdup(site->ce) : NULL;
	r.name = name ? strdup(name) : NULL;
	r.mig = s->mig ? strdup(s->mig) : NULL;
	r.image_path = strdup(s->image_url ? s->image_url : s->image);
	r.auth = strdup(s->token ? "token" : site->auth ? site->auth : "proxy");
	char cmdline[1024] = "";
	for (int i = 0; i < s->ncmd; i++)
		snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), "%s%s",
			 i ? " " : "", s->cmd[i]);
	r.command = strdup(cmdline);
	if (!site->ce) {
		rc = gg_err_set(err, GG_EUSAGE, "site '%s' has no CE URL", site->name);
		goto out;
	}
	if ((rc = cli_auth(cli, site, s->token ? "token" : NULL, s->walltime, &auth, err)) < 0)
		goto out;
	if ((rc = gg_store_create(st, &r, "job", err)) < 0)
		goto out;
	if ((rc = build_jd(s, site, &r, wrapper, &jd, err)) < 0 ||
	    (rc = cli_open_ce(site->ce, &auth, &ce, err)) < 0)
		goto fail;
	if (auth.proxy_path) {
		char *state_dir = NULL, *cache = NULL;
		if (gg_xdg_dir(GG_XDG_STATE, &state_dir, err) == 0)
			cache = gg_strdup_printf("%s/delegations.json", state_dir);
		free(state_dir);
		rc = gg_ce_delegate(ce, auth.proxy_path, s->walltime, cache, &deleg, err);
		free(cache);
		if (rc < 0) {
			gg_err_prefix(err, "delegating to %s", site->ce);
			goto fail;
		}
		gg_jd_set(&jd.delegation_id, deleg, NULL);
	}
	if ((rc = gg_jd_xrsl(&jd, &xrsl, err)) < 0)
		goto fail;
	if (cli_interrupted()) {
		rc = gg_err_set(err, GG_EINTR, "interrupted before submitting");
		goto fail;
	}
	posted = 1;
	if ((rc = gg_ce_submit(ce, xrsl, &job_id, err)) < 0)
		goto fail;
	struct submitted sb = {job_id};
	struct gg_record saved;
	if ((rc = gg_store_update(st, r.name, set_submitted, &sb, &saved, err)) < 0)
		goto fail;
	gg_record_clear(&r);
	r = saved;
	if (r.state == GG_S_KILLED) {
		const char *ids[1] = {job_id};
		struct gg_ce_result *res = NULL;
		if (gg_ce_kill(ce, ids, 1, &res, NULL) == 0)
			gg_ce_results_free(res, 1);
		rc = gg_err_set(err, GG_EJOB,
				"%s was killed while it was being submitted (job %s "
				"cancelled)",
				r.name, job_id);
		goto out;
	}
	ui_info(cli, "submitted %s to %s (job %s)", r.name, site->ce, job_id);
	/* Stage the inputs; a broken upload is retried once, then the job is
	 * removed from the CE: no half-staged job is left waiting for inputs. */
	for (int i = 0; i < jd.ninputs; i++) {
		if (!jd.inputs[i].local)
			continue;
		for (int attempt = 0;; attempt++) {
			char label[160];
			snprintf(label, sizeof label, "%s %s", r.name, jd.inputs[i].name);
			struct ui_progress *p = ui_progress_new(cli, label);
			rc = gg_ce_put_file(ce, job_id, jd.inputs[i].name, jd.inputs[i].local,
					    ui_progress_cb, p, err);
			ui_progress_end(p);
			if (rc == 0 || rc == GG_EINTR || attempt == 1)
				break;
			ui_warn(cli, "uploading %s failed (%s): trying once more",
				jd.inputs[i].name, err->msg);
		}
		if (rc < 0) {
			gg_err_prefix(err, "uploading %s", jd.inputs[i].name);
			gg_ce_cancel(ce, job_id);
			goto fail;
		}
	}
	if (cli->verbose)
		ui_info(cli, "%ld TLS connection(s) to the CE",
			gg_http_connections(gg_ce_http(ce)));
	*out = r;
	memset(&r, 0, sizeof r);
	goto out;
fail:
	if (job_id && !r.job_id && ce) /* a job that could not be recorded must not run unseen */
		gg_ce_cancel(ce, job_id);
	if (posted && !job_id && ce && gg_ce_submit_unsent(ce)) {
		/* Refused connection, TLS handshake, DNS: the CE has no job. */
		gg_err_prefix(err, "the CE was not reached, nothing was sent");
		posted = 0;
	}
	if (r.name && !r.job_id && posted && !job_id &&
	    (rc == GG_ENET || rc == GG_EPROTO || rc == GG_EINTR)) {
		/* The submission may have reached the CE: keep the record so that
		 * 'list --sync' finds the job by its name. */
		gg_err_prefix(err, "the CE may have the job ('gridgpu list --sync' adopts it)");
	} else if (r.name && !r.job_id) {
		gg_store_remove(st, r.name, NULL);
	} else if (r.name) {
		gg_store_update(st, r.name, mark_failed, err->msg, NULL, NULL);
	}
out:
	gg_record_clear(&r);
	gg_jd_clear(&jd);
	gg_ce_free(ce);
	cli_auth_clear(&auth);
	free(xrsl);
	free(job_id);
	free(deleg);
	return rc;
}

static char *libexec_file(const char *name)
{
	char *launcher = cli_launcher_path();
	if (!launcher)
		return NULL;
	char *slash = strrchr(launcher, '/');
	*slash = '\0';
	char *p = gg_strdup_printf("%s/%s", launcher, name);
	free(launcher);
	return p;
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

int cmd_submit(struct gg_cli *cli, int argc, char **argv)
{
	struct sub s = {.walltime = 8 * 3600, .count = 1};
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
		const char *v = cli->optarg;
		int rc = 0;
		switch (c) {
		case O_GPUS: rc = cli_opt_int(cli, 0, 64, &s.gpus); break;
		case O_MIG: s.mig = v; break;
		case O_CPUS: rc = cli_opt_int(cli, 1, 4096, &s.cpus); break;
		case O_COUNT: rc = cli_opt_int(cli, 1, 1000, &s.count); break;
		case O_MEMORY:
			if (gg_size_parse(v, &s.memory, &err) < 0)
				rc = ui_fail(cli, &err, "--memory");
			break;
		case O_WALLTIME:
			if (gg_duration_parse(v, &s.walltime, &err) < 0)
				rc = ui_fail(cli, &err, "--walltime");
			else if (!s.walltime)
				rc = ui_usage(cli, "--walltime must be more than 0");
			break;
		case O_INPUT:
			if (s.ninputs == GG_JD_MAX - 2)
				rc = ui_usage(cli, "too many --input files");
			else
				s.inputs[s.ninputs++] = v;
			break;
		case O_OUTPUT:
			if (s.noutputs == GG_JD_MAX - 2)
				rc = ui_usage(cli, "too many --output patterns");
			else if (strchr(v, '/') || !strcmp(v, "..") || !*v)
				rc = ui_usage(
					cli,
					"--output '%s': a file name (or pattern) in the job's "
					"directory",
					v);
			else
				s.outputs[s.noutputs++] = v;
			break;
		case O_NAME: s.name = v; break;
		case O_IMAGE_URL: s.image_url = v; break;
		case O_QUEUE: s.queue = v; break;
		case O_DRY_RUN: s.dry_run = 1; break;
		case O_TOKEN: s.token = 1; break;
		case O_MATCH_DEV: s.match_dev = 1; break;
		case O_MIN_CC: {
			unsigned a, b;
			char extra;
			if (sscanf(v, "%u.%u%c", &a, &b, &extra) != 2 || a > 99 || b > 99)
				rc = ui_usage(cli, "--min-capability '%s': expected X.Y, e.g. 8.0",
					      v);
			else
				snprintf(s.min_cc, sizeof s.min_cc, "%u.%u", a, b);
			break;
		}
		case O_MIN_MEM:
			if (gg_size_parse(v, &s.min_mem, &err) < 0)
				rc = ui_fail(cli, &err, "--min-gpu-memory");
			break;
		}
		if (rc)
			return rc;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (dd - cli->optind != 1)
		return ui_usage(cli, "submit: expected IMAGE.sif, then -- COMMAND [ARGS...]");
	s.image = argv[cli->optind];
	s.cmd = argv + dd + 1;
	s.ncmd = dd < argc ? argc - dd - 1 : 0;
	if (s.ncmd == 0)
		return ui_usage(
			cli, "submit: no command: gridgpu submit IMAGE.sif -- COMMAND [ARGS...]");
	if (s.gpus && s.mig)
		return ui_usage(cli, "--gpus and --mig exclude each other");
	if (s.name && s.count > 1)
		return ui_usage(cli, "--name names one job: leave it out with --count");
	if (s.name && !gg_record_name_valid(s.name))
		return ui_usage(cli,
				"--name '%s': use a letter, then letters, digits, '.', '_', '-'",
				s.name);
	int bad = check_inputs(cli, &s);
	if (bad)
		return bad;
	if (!s.image_url && cli_local_file(s.image, &err) < 0)
		return ui_fail(cli, &err, "image '%s'", s.image);

	/* The image is checked before anything is uploaded. */
	if (!s.image_url) {
		struct gg_sif_verify_report rep;
		if (gg_sif_verify(s.image, &rep, &err) < 0)
			return ui_fail(cli, &err, "image '%s'", s.image);
		if (!rep.ok) {
			for (size_t i = 0; i < rep.nchecks; i++)
				if (!rep.checks[i].ok) {
					gg_err_set(&err, GG_EFAIL,
						   "corrupt SIF: %s: %s (run 'gridgpu "
						   "verify %s')",
						   rep.checks[i].what, rep.checks[i].detail,
						   s.image);
					break;
				}
			return ui_fail(cli, &err, "image '%s'", s.image);
		}
		struct gg_sif *sif;
		if (gg_sif_open(s.image, &sif, &err) < 0)
			return ui_fail(cli, &err, "image '%s'", s.image);
		const struct gg_sif_descr *d = gg_sif_primary(sif);
		s.part_offset = d ? d->offset : 0;
		int mrc = s.match_dev ? match_dev_gpu(cli, sif, &s, &err) : 0;
		gg_sif_close(sif);
		if (mrc < 0)
			return ui_fail(cli, &err, "submit");
	}

	/* The sites: every --site given, in order, else the default one. */
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const struct gg_site *sites[16];
	int nsites = 0;
	for (int i = 0; i < cli->nsites; i++) {
		if (!(sites[nsites++] = gg_config_site(cfg, cli->sites[i]))) {
			gg_err_set(&err, GG_ENOTFOUND,
				   "no such site in %s (see 'gridgpu site list')", cfg->path);
			return ui_fail(cli, &err, "site '%s'", cli->sites[i]);
		}
	}
	if (!nsites) {
		const struct gg_site *one = cli_site(cli, 1);
		if (!one)
			return cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
		sites[nsites++] = one;
	}
	char *wrapper = libexec_file("batch-wrapper");
	if (!wrapper || access(wrapper, R_OK) < 0) {
		gg_err_set(&err, GG_EFAIL, "the batch wrapper '%s' is missing: reinstall gridgpu",
			   wrapper ? wrapper : "");
		free(wrapper);
		return ui_fail(cli, &err, "submit");
	}

	if (s.dry_run) {
		json_t *all = json_array();
		for (int i = 0; i < s.count; i++) {
			const struct gg_site *site = sites[i % nsites];
			struct gg_record r = {.uid = (char *)"UID", .name = (char *)"job-N"};
			struct gg_jobdesc jd = {0};
			char *x = NULL;
			if (build_jd(&s, site, &r, wrapper, &jd, &err) < 0 ||
			    gg_jd_xrsl(&jd, &x, &err) < 0) {
				gg_jd_clear(&jd);
				json_decref(all);
				free(wrapper);
				return ui_fail(cli, &err, "submit");
			}
			if (cli->json) {
				json_t *up = json_array();
				for (int k = 0; k < jd.ninputs; k++)
					if (jd.inputs[k].local)
						json_array_append_new(
							up, json_sprintf("PUT /jobs/ID/session/%s",
									 jd.inputs[k].name));
				json_array_append_new(
					all, json_pack("{s:s,s:s,s:s,s:o}", "site", site->name,
						       "ce", site->ce ? site->ce : "",
						       "description", x, "uploads", up));
			} else {
				ui_out("# job %d of %d → site %s, CE %s\n# requests: POST "
				       "delegations?action=new + PUT (proxy auth); POST "
				       "jobs?action=new;",
				       i + 1, s.count, site->name, site->ce ? site->ce : "?");
				for (int k = 0; k < jd.ninputs; k++)
					if (jd.inputs[k].local)
						ui_out(" PUT jobs/ID/session/%s",
						       jd.inputs[k].name);
				putchar('\n');
				fputs(x, stdout); /* ours: the values are quoted */
			}
			free(x);
			gg_jd_clear(&jd);
		}
		if (cli->json)
			ui_json(all);
		else
			json_decref(all);
		free(wrapper);
		return EXIT_OK;
	}

	struct gg_store *st = cli_store(cli);
	if (!st) {
		free(wrapper);
		return cli->cfg_exit;
	}
	cli_catch_interrupt();
	int exit_code = EXIT_OK, nok = 0;
	json_t *done = json_array();
	/* --count N spread round-robin; each job goes to the first site, from its
	 * turn on, that accepts it. */
	for (int i = 0; i < s.count && !cli_interrupted(); i++) {
		int placed = 0;
		struct gg_err last = {0};
		for (int k = 0; k < nsites && !placed; k++) {
			const struct gg_site *site = sites[(i + k) % nsites];
			struct gg_record r = {0};
			int rc = submit_one(cli, st, &s, site, wrapper, s.name, &r, &err);
			if (rc == 0) {
				placed = 1;
				nok++;
				json_array_append_new(done, gg_record_to_json(&r));
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
	if (cli->json)
		ui_json(done);
	else
		json_decref(done);
	if (nok)
		ui_info(cli,
			"'gridgpu jobs --sync' follows them; 'gridgpu get NAME' fetches the outputs");
	gg_store_free(st);
	free(wrapper);
	return exit_code;
}
