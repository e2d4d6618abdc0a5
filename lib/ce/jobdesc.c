/* The job description model and its xRSL writer. */
#include "ce/ce.h"
#include "gridgpu/gpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gg_jd_set(char **field, const char *value, struct gg_err *err)
{
	char *v = value ? strdup(value) : NULL;
	if (value && !v)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free(*field);
	*field = v;
	return 0;
}

static int push(char **arr, int *n, const char *v, const char *what, struct gg_err *err)
{
	if (*n >= GG_JD_MAX)
		return gg_err_set(err, GG_EUSAGE, "too many %s (at most %d)", what, GG_JD_MAX);
	if (!(arr[*n] = strdup(v)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*n)++;
	return 0;
}

int gg_jd_arg(struct gg_jobdesc *jd, const char *arg, struct gg_err *err)
{
	return push(jd->args, &jd->nargs, arg, "arguments", err);
}

/* A name in the job's directory with a control character: the CE cannot take it. */
static int check_control(const char *what, const char *name, struct gg_err *err)
{
	if (!gg_str_has_control(name))
		return 0;
	return gg_err_set(err, GG_EUSAGE,
			  "%s file name with a control character: the CE cannot take it (rename "
			  "the file)",
			  what);
}

/* A file name in the job's directory that the CE can take. */
static int check_jd_name(const char *what, const char *name, struct gg_err *err)
{
	if (!name[0] || strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
		return gg_err_set(err, GG_EUSAGE, "%s file name '%s' must be a plain file name",
				  what, name);
	return check_control(what, name, err);
}

int gg_jd_output(struct gg_jobdesc *jd, const char *name, struct gg_err *err)
{
	if (check_control("output", name, err) < 0)
		return err->code;
	for (int i = 0; i < jd->noutputs; i++)
		if (strcmp(jd->outputs[i], name) == 0)
			return 0;
	return push(jd->outputs, &jd->noutputs, name, "output files", err);
}

int gg_jd_output_url(struct gg_jobdesc *jd, const char *name, const char *url, struct gg_err *err)
{
	if (check_jd_name("output", name, err) < 0)
		return err->code;
	for (int i = 0; i < jd->noutputs; i++)
		if (strcmp(jd->outputs[i], name) == 0)
			return gg_err_set(err, GG_EUSAGE, "output '%s' is named twice", name);
	int rc = push(jd->outputs, &jd->noutputs, name, "output files", err);
	if (rc == 0 && !(jd->output_urls[jd->noutputs - 1] = strdup(url)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	return rc;
}

int gg_jd_rte(struct gg_jobdesc *jd, const char *rte, struct gg_err *err)
{
	if (jd->nrtes >= 16)
		return gg_err_set(err, GG_EUSAGE, "too many runtime environments");
	if (!(jd->rtes[jd->nrtes] = strdup(rte)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	jd->nrtes++;
	return 0;
}

/* A shell variable's name: the slurm+ssh backend writes it into the job's script. */
static int env_name_ok(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

int gg_jd_env(struct gg_jobdesc *jd, const char *name, const char *value, struct gg_err *err)
{
	if (!env_name_ok(name))
		return gg_err_set(err, GG_EUSAGE,
				  "an environment variable's name is letters, digits and '_' "
				  "(not first a digit)");
	char *kv = gg_strdup_printf("%s=%s", name, value);
	if (!kv)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = push(jd->env, &jd->nenv, kv, "environment variables", err);
	free(kv);
	return rc;
}

int gg_jd_input(struct gg_jobdesc *jd, const char *name, const char *source, const char *local,
		struct gg_err *err)
{
	if (jd->ninputs >= GG_JD_MAX)
		return gg_err_set(err, GG_EUSAGE, "too many input files (at most %d)", GG_JD_MAX);
	if (check_jd_name("input", name, err) < 0)
		return err->code;
	struct gg_jd_file *f = &jd->inputs[jd->ninputs];
	memset(f, 0, sizeof *f);
	if (gg_jd_set(&f->name, name, err) < 0 || gg_jd_set(&f->source, source, err) < 0 ||
	    gg_jd_set(&f->local, local, err) < 0) {
		free(f->name);
		free(f->source);
		free(f->local);
		memset(f, 0, sizeof *f);
		return GG_ENOMEM;
	}
	jd->ninputs++;
	return 0;
}

void gg_jd_clear(struct gg_jobdesc *jd)
{
	if (!jd)
		return;
	free(jd->name);
	free(jd->executable);
	for (int i = 0; i < jd->nargs; i++)
		free(jd->args[i]);
	for (int i = 0; i < jd->ninputs; i++) {
		free(jd->inputs[i].name);
		free(jd->inputs[i].source);
		free(jd->inputs[i].local);
	}
	for (int i = 0; i < jd->noutputs; i++) {
		free(jd->outputs[i]);
		free(jd->output_urls[i]);
	}
	free(jd->stdout_name);
	free(jd->stderr_name);
	free(jd->queue);
	for (int i = 0; i < jd->nrtes; i++)
		free(jd->rtes[i]);
	free(jd->delegation_id);
	for (int i = 0; i < jd->nenv; i++)
		free(jd->env[i]);
	free(jd->extra);
	memset(jd, 0, sizeof *jd);
}

int gg_jd_gpu_check(const struct gg_jd_resources *res, const struct gg_site *site,
		    struct gg_err *err)
{
	if ((!res->gpus && !res->mig) || res->queue)
		return 0;
	if (site && (site->gpu_queue || site->gpu_rte))
		return 0;
	/* slurm+ssh: the backend asks sbatch for the GPUs (slurm_gpu) */
	if (site && site->ce && !strncmp(site->ce, "slurm+ssh://", 12))
		return 0;
	const char *opt = res->mig ? "--mig" : "--gpus";
	if (!site)
		return gg_err_set(err, GG_EUSAGE,
				  "%s: a CE given by its URL has no GPU mapping, so the job would "
				  "get no GPU: add it as a site with --gpu-queue or --gpu-rte "
				  "(gridgpu site add), or name the queue with --queue",
				  opt);
	return gg_err_set(err, GG_EUSAGE,
			  "%s: site '%s' has no GPU mapping, so the job would get no GPU: "
			  "set the queue or runtime environment its admins publish for GPUs "
			  "(gridgpu site set %s gpu-rte ENV/GPU), or name the queue with --queue",
			  opt, site->name, site->name);
}

/* What the site's GPU RTE is given, as ARC sites publish theirs: the count,
 * or the MIG profile ("ENV/GPU" "2"; "ENV/GPU" "3g.20gb"); then the job's
 * minimums, "cc=X.Y" and "mem=MiB", for an RTE that turns them into the
 * batch system's terms (a node feature, a gres type) or refuses the job
 * before it queues (doc/site-admin.md). An RTE that reads only its first
 * argument ignores them; the batch wrapper checks them on the node anyway. */
static int gpu_rte(struct gg_jobdesc *jd, const struct gg_jd_resources *res, const char *name,
		   struct gg_err *err)
{
	char what[64], cc[48] = "", mem[48] = "";
	if (res->mig)
		snprintf(what, sizeof what, "%s", res->mig);
	else
		snprintf(what, sizeof what, "%d", res->gpus);
	int major, minor;
	if (res->min_capability && gg_gpu_version_parse(res->min_capability, &major, &minor) == 0)
		snprintf(cc, sizeof cc, " cc=%d.%d", major, minor);
	if (res->min_gpu_memory >> 20)
		snprintf(mem, sizeof mem, " mem=%llu",
			 (unsigned long long)(res->min_gpu_memory >> 20));
	char *rte = gg_strdup_printf("%s %s%s%s", name, what, cc, mem);
	int rc = rte ? gg_jd_rte(jd, rte, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(rte);
	return rc;
}

int gg_jd_resources(struct gg_jobdesc *jd, const struct gg_jd_resources *res,
		    const struct gg_site *site, struct gg_err *err)
{
	char buf[32];
	int gpu = res->gpus || res->mig;
	int rc = gg_jd_gpu_check(res, site, err);
	if (rc < 0)
		return rc;
	jd->walltime = res->walltime;
	jd->cpus = res->cpus;
	jd->memory = res->memory;
	const char *queue = res->queue                       ? res->queue
			    : gpu && site && site->gpu_queue ? site->gpu_queue
			    : site && site->queue            ? site->queue
							     : NULL;
	if (queue)
		rc = gg_jd_set(&jd->queue, queue, err);
	if (rc == 0 && gpu && site && site->gpu_rte)
		rc = gpu_rte(jd, res, site->gpu_rte, err);
	if (rc == 0 && res->gpus) {
		snprintf(buf, sizeof buf, "%d", res->gpus);
		rc = gg_jd_env(jd, "GRIDGPU_GPUS", buf, err);
	}
	if (rc == 0 && res->mig)
		rc = gg_jd_env(jd, "GRIDGPU_MIG", res->mig, err);
	if (rc == 0 && res->min_capability)
		rc = gg_jd_env(jd, "GRIDGPU_MIN_CUDA_CAPABILITY", res->min_capability, err);
	if (rc == 0 && res->min_gpu_memory) {
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)(res->min_gpu_memory >> 20));
		rc = gg_jd_env(jd, "GRIDGPU_MIN_GPU_MEMORY_MB", buf, err);
	}
	return rc;
}

/* An xRSL string literal: double quotes, a '"' inside written twice. */
static void q(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A storage URL for A-REX's staging: davs:// written as https:// (the same
 * transfer to its HTTP plugin). A-REX sends absolute-form request targets
 * ("GET davs://host/path"), which XRootD's HTTP door (5.5) refuses with 403;
 * "GET https://host/path" it serves. */
static void q_url(FILE *f, const char *url)
{
	if (!strncasecmp(url, "davs://", 7)) {
		char *https = gg_strdup_printf("https://%s", url + 7);
		q(f, https ? https : url);
		free(https);
		return;
	}
	q(f, url);
}

static void rel(FILE *f, const char *attr, const char *value)
{
	if (!value)
		return;
	fprintf(f, "(%s=", attr);
	q(f, value);
	fputs(")\n", f);
}

/* (runtimeenvironment="NAME" "ARG"...): an RTE entry is its name and its
 * arguments, separated by spaces (ARC's RTE names have none). */
static void xrsl_rte(FILE *f, const char *rte)
{
	fputs("(runtimeenvironment=", f);
	for (const char *p = rte; *p;) {
		size_t n = strcspn(p, " ");
		if (n) {
			char word[256];
			snprintf(word, sizeof word, "%.*s", (int)n, p);
			if (p != rte)
				fputc(' ', f);
			q(f, word);
		}
		p += n;
		p += strspn(p, " ");
	}
	fputs(")\n", f);
}

/* (arguments=...) and (inputfiles=...) */
static void xrsl_args_inputs(FILE *f, const struct gg_jobdesc *jd)
{
	if (jd->nargs) {
		fputs("(arguments=", f);
		for (int i = 0; i < jd->nargs; i++) {
			if (i)
				fputc(' ', f);
			q(f, jd->args[i]);
		}
		fputs(")\n", f);
	}
	rel(f, "jobname", jd->name);
	if (jd->ninputs) {
		fputs("(inputfiles=", f);
		for (int i = 0; i < jd->ninputs; i++) {
			fputc('(', f);
			q(f, jd->inputs[i].name);
			fputc(' ', f);
			q_url(f, jd->inputs[i].source ? jd->inputs[i].source : "");
			fputc(')', f);
		}
		fputs(")\n", f);
	}
}

/* (outputfiles=...): A-REX deletes every session file that is not a declared
 * output when the job ends, stdout and stderr included: declare them. An
 * output with a URL is uploaded there by the CE (and not kept). */
static void xrsl_outputs(FILE *f, const struct gg_jobdesc *jd)
{
	const char *outs[GG_JD_MAX + 2], *dest[GG_JD_MAX + 2] = {0};
	int nouts = 0;
	for (int i = 0; i < jd->noutputs; i++) {
		dest[nouts] = jd->output_urls[i];
		outs[nouts++] = jd->outputs[i];
	}
	const char *std[2] = {jd->stdout_name, jd->stderr_name};
	for (int k = 0; k < 2; k++) {
		if (!std[k])
			continue;
		int dup = 0;
		for (int i = 0; i < nouts; i++)
			dup |= strcmp(outs[i], std[k]) == 0;
		if (!dup)
			outs[nouts++] = std[k];
	}
	if (nouts) {
		fputs("(outputfiles=", f);
		for (int i = 0; i < nouts; i++) {
			fputc('(', f);
			q(f, outs[i]);
			fputc(' ', f);
			q_url(f, dest[i] ? dest[i] : "");
			fputc(')', f);
		}
		fputs(")\n", f);
	}
	rel(f, "stdout", jd->stdout_name);
	rel(f, "stderr", jd->stderr_name);
}

/* walltime, count, memory, queue, runtime environments, environment. */
static void xrsl_resources(FILE *f, const struct gg_jobdesc *jd)
{
	char num[32];
	if (jd->walltime > 0) {
		/* An ISO 8601 duration: a bare number is read as minutes by
		 * xRSL's manual and as seconds by A-REX (its REST interface
		 * takes the GRIDMANAGER dialect: "240" was a 4-minute job). */
		snprintf(num, sizeof num, "PT%" PRId64 "S", jd->walltime);
		rel(f, "walltime", num);
	}
	if (jd->cpus > 0) {
		snprintf(num, sizeof num, "%d", jd->cpus);
		rel(f, "count", num);
	}
	if (jd->memory > 0) {
		/* xRSL memory is MB per process slot. */
		uint64_t per = jd->memory / (uint64_t)(jd->cpus > 0 ? jd->cpus : 1);
		snprintf(num, sizeof num, "%" PRIu64, (per + (1u << 20) - 1) >> 20);
		rel(f, "memory", num);
	}
	rel(f, "queue", jd->queue);
	for (int i = 0; i < jd->nrtes; i++)
		xrsl_rte(f, jd->rtes[i]);
	if (!jd->nenv)
		return;
	fputs("(environment=", f);
	for (int i = 0; i < jd->nenv; i++) {
		const char *eq = strchr(jd->env[i], '=');
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - jd->env[i]), jd->env[i]);
		fputc('(', f);
		q(f, name);
		fputc(' ', f);
		q(f, eq + 1);
		fputc(')', f);
	}
	fputs(")\n", f);
}

int gg_jd_xrsl(const struct gg_jobdesc *jd, char **out, struct gg_err *err)
{
	if (!jd->executable || !jd->executable[0])
		return gg_err_set(err, GG_EUSAGE, "job description: no executable");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	fputs("&\n", f);
	rel(f, "executable", jd->executable);
	xrsl_args_inputs(f, jd);
	xrsl_outputs(f, jd);
	xrsl_resources(f, jd);
	rel(f, "delegationid", jd->delegation_id);
	if (jd->extra && jd->extra[0])
		fprintf(f, "%s\n", jd->extra);
	if (fclose(f) != 0) {
		free(buf);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*out = buf;
	return 0;
}
