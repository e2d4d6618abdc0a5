/* What a session or a job asks for, behind opaque handles (gridgpu/engine.h):
 * each value copied in by a setter that checks it, freed with the spec. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

/* Replace *field with a copy of v (NULL: unset). What a string says is
 * checked where it is used (gg_job_spec_check, the job's description). */
static int dup_str(const char **field, const char *v, struct gg_err *err)
{
	char *copy = v ? strdup(v) : NULL;
	if (v && !copy)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free((void *)*field);
	*field = copy;
	return 0;
}

/* The job's own inputs are three: the wrapper, the enter script, the image. */
#define GG_JOB_MAX_INPUTS (GG_JD_MAX - 3)

/* Append a copy of v to the list (at most max). What v says is checked where
 * it is used (gg_job_spec_check, the enter script's binds). */
static int list_add(const char ***list, int *n, int max, const char *v, const char *what,
		    struct gg_err *err)
{
	if (!v)
		return gg_err_set(err, GG_EUSAGE, "%s: missing", what);
	if (*n >= max)
		return gg_err_set(err, GG_EUSAGE, "too many %s (at most %d)", what, max);
	const char **l = realloc(*list, (size_t)(*n + 1) * sizeof *l);
	if (!l)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	*list = l;
	if (!(l[*n] = strdup(v)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*n)++;
	return 0;
}

static void list_free(const char **list, int n)
{
	for (int i = 0; list && i < n; i++)
		free((void *)list[i]);
	free(list);
}

/* Two lists that go in pairs (a URL and its name). */
static int pair_add(const char ***a, const char ***b, int *n, int max, const char *va,
		    const char *vb, const char *what, struct gg_err *err)
{
	int na = *n, rc = list_add(a, &na, max, va, what, err);
	if (rc == 0 && (rc = list_add(b, n, max, vb, what, err)) < 0)
		free((void *)(*a)[na - 1]);
	return rc;
}

static void res_clear(struct gg_jd_resources *r)
{
	free((void *)r->queue);
	free((void *)r->mig);
	free((void *)r->min_capability);
	r->queue = r->mig = r->min_capability = NULL;
}

/* Copy res, its strings too, into *to (whose strings are ours). */
static int res_set(struct gg_jd_resources *to, const struct gg_jd_resources *res,
		   struct gg_err *err)
{
	if (res->walltime < 0 || res->cpus < 0 || res->gpus < 0)
		return gg_err_set(err, GG_EUSAGE, "resources: a negative walltime, CPUs or GPUs");
	if (res->gpus && res->mig)
		return gg_err_set(err, GG_EUSAGE, "resources: whole GPUs or a MIG slice, not both");
	struct gg_jd_resources r = *res;
	r.queue = r.mig = r.min_capability = NULL;
	int rc;
	if ((rc = dup_str(&r.queue, res->queue, err)) < 0 ||
	    (rc = dup_str(&r.mig, res->mig, err)) < 0 ||
	    (rc = dup_str(&r.min_capability, res->min_capability, err)) < 0) {
		res_clear(&r);
		return rc;
	}
	res_clear(to);
	*to = r;
	return 0;
}

/* ---- sessions ---- */

int gg_session_spec_new(struct gg_session_spec **out, struct gg_err *err)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

void gg_session_spec_free(struct gg_session_spec *q)
{
	if (!q)
		return;
	res_clear(&q->res);
	const char *strs[] = {q->image, q->launcher, q->enter, q->image_file, q->warn_leads};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		free((void *)strs[i]);
	list_free(q->binds, q->nbinds);
	gg_session_spec_resume_clear(q);
	free(q);
}

int gg_session_spec_set_resources(struct gg_session_spec *q, const struct gg_jd_resources *res,
				  struct gg_err *err)
{
	return res_set(&q->res, res, err);
}

int gg_session_spec_set_deadline(struct gg_session_spec *q, int64_t seconds, struct gg_err *err)
{
	if (seconds <= 0)
		return gg_err_set(err, GG_EUSAGE, "the connect deadline must be more than 0");
	q->deadline = seconds;
	return 0;
}

int gg_session_spec_set_idle(struct gg_session_spec *q, int64_t seconds, struct gg_err *err)
{
	if (seconds < 0)
		return gg_err_set(err, GG_EUSAGE, "the idle limit must be 0 (none) or more");
	q->idle = seconds;
	return 0;
}

int gg_session_spec_set_image(struct gg_session_spec *q, const char *image, struct gg_err *err)
{
	return dup_str(&q->image, image, err);
}

int gg_session_spec_add_bind(struct gg_session_spec *q, const char *bind, struct gg_err *err)
{
	return list_add(&q->binds, &q->nbinds, GG_JD_MAX, bind, "--bind paths", err);
}

int gg_session_spec_set_launcher(struct gg_session_spec *q, const char *path, struct gg_err *err)
{
	return dup_str(&q->launcher, path, err);
}

int gg_session_spec_set_enter(struct gg_session_spec *q, const char *enter, const char *image_file,
			      struct gg_err *err)
{
	int rc = dup_str(&q->enter, enter, err);
	return rc ? rc : dup_str(&q->image_file, image_file, err);
}

int gg_session_spec_set_warn_leads(struct gg_session_spec *q, const char *leads, struct gg_err *err)
{
	return dup_str(&q->warn_leads, leads, err);
}

const struct gg_jd_resources *gg_session_spec_resources(const struct gg_session_spec *q)
{
	return &q->res;
}

int64_t gg_session_spec_deadline(const struct gg_session_spec *q)
{
	return q->deadline;
}

int64_t gg_session_spec_idle(const struct gg_session_spec *q)
{
	return q->idle;
}

const char *gg_session_spec_image(const struct gg_session_spec *q)
{
	return q->image;
}

const char *const *gg_session_spec_binds(const struct gg_session_spec *q, int *n)
{
	*n = q->nbinds;
	return q->binds;
}

/* ---- batch jobs ---- */

int gg_job_spec_new(struct gg_job_spec **out, struct gg_err *err)
{
	*out = calloc(1, sizeof **out);
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

void gg_job_spec_free(struct gg_job_spec *q)
{
	if (!q)
		return;
	res_clear(&q->res);
	free((void *)q->image);
	free((void *)q->image_url);
	free((void *)q->wrapper);
	list_free(q->inputs, q->ninputs);
	list_free(q->outputs, q->noutputs);
	list_free(q->data_in_urls, q->ndata_in);
	list_free(q->data_in_names, q->ndata_in);
	list_free(q->data_out_names, q->ndata_out);
	list_free(q->data_out_urls, q->ndata_out);
	list_free((const char **)q->cmd, q->ncmd);
	list_free(q->binds, q->nbinds);
	list_free(q->each, q->neach);
	free(q);
}

int gg_job_spec_set_resources(struct gg_job_spec *q, const struct gg_jd_resources *res,
			      struct gg_err *err)
{
	return res_set(&q->res, res, err);
}

void gg_job_spec_gpu_optional(struct gg_job_spec *q, int gpu)
{
	q->res.gpus = gpu ? 1 : 0;
	q->cpu_fallback = !gpu;
	if (gpu)
		return;
	free((void *)q->res.min_capability);
	q->res.min_capability = NULL;
	q->res.min_gpu_memory = 0;
}

int gg_job_spec_set_image(struct gg_job_spec *q, const char *path, struct gg_err *err)
{
	return dup_str(&q->image, path, err);
}

int gg_job_spec_set_image_url(struct gg_job_spec *q, const char *url, struct gg_err *err)
{
	return dup_str(&q->image_url, url, err);
}

int gg_job_spec_set_part_offset(struct gg_job_spec *q, int64_t offset, struct gg_err *err)
{
	if (offset < 0)
		return gg_err_set(err, GG_EUSAGE, "the image's partition offset must be 0 or more");
	q->part_offset = offset;
	return 0;
}

int gg_job_spec_add_bind(struct gg_job_spec *q, const char *bind, struct gg_err *err)
{
	int rc = bind ? gg_session_bind_check("--bind", bind, err) : 0;
	return rc < 0 ? rc : list_add(&q->binds, &q->nbinds, GG_JD_MAX, bind, "--bind paths", err);
}

int gg_job_spec_set_wrapper(struct gg_job_spec *q, const char *path, struct gg_err *err)
{
	return dup_str(&q->wrapper, path, err);
}

int gg_job_spec_set_command(struct gg_job_spec *q, const char *const *argv, int argc,
			    struct gg_err *err)
{
	if (argc < 1)
		return gg_err_set(err, GG_EUSAGE, "no command");
	char **cmd = calloc((size_t)argc + 1, sizeof *cmd);
	int rc = cmd ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < argc; i++)
		if (!argv[i])
			rc = gg_err_set(err, GG_EUSAGE, "the command's word %d is missing", i + 1);
		else if (!(cmd[i] = strdup(argv[i])))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc < 0) {
		list_free((const char **)cmd, argc);
		return rc;
	}
	list_free((const char **)q->cmd, q->ncmd);
	q->cmd = cmd;
	q->ncmd = argc;
	return 0;
}

int gg_job_spec_add_input(struct gg_job_spec *q, const char *path, struct gg_err *err)
{
	return list_add(&q->inputs, &q->ninputs, GG_JOB_MAX_INPUTS, path, "--input files", err);
}

int gg_job_spec_add_each_input(struct gg_job_spec *q, const char *item, struct gg_err *err)
{
	return list_add(&q->each, &q->neach, GG_JOB_MAX_EACH, item, "--input-list lines", err);
}

int gg_job_spec_each_count(const struct gg_job_spec *q)
{
	return q->neach;
}

const char *gg_job_spec_each_input(const struct gg_job_spec *q, int index)
{
	return index >= 0 && index < q->neach ? q->each[index] : NULL;
}

int gg_job_spec_add_output(struct gg_job_spec *q, const char *pattern, struct gg_err *err)
{
	return list_add(&q->outputs, &q->noutputs, GG_JD_MAX - 2, pattern, "--output patterns",
			err);
}

int gg_job_spec_add_data_input(struct gg_job_spec *q, const char *url, const char *name,
			       struct gg_err *err)
{
	return pair_add(&q->data_in_urls, &q->data_in_names, &q->ndata_in, GG_JOB_MAX_INPUTS, url,
			name, "--input URLs", err);
}

int gg_job_spec_add_data_output(struct gg_job_spec *q, const char *name, const char *url,
				struct gg_err *err)
{
	return pair_add(&q->data_out_names, &q->data_out_urls, &q->ndata_out, GG_JD_MAX - 2, name,
			url, "--output URLs", err);
}
