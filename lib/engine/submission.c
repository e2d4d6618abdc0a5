/* What the user asked for, made into a submission: the record a request or a
 * submit starts with, the site's defaults, the checks of a job's files, and a
 * job placed on the first of several sites that accepts it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridgpu/image.h"
#include "engine/engine_int.h"
#include "engine/sync.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static const char *auth_of(int token, const struct gg_site *site)
{
	return token ? "token" : gg_site_auth_kind(site);
}

int gg_session_spec_defaults(struct gg_session_spec *q, const struct gg_site *site,
			     struct gg_err *err)
{
	if (!q->deadline)
		q->deadline = site && site->connect_deadline ? site->connect_deadline : 20 * 60;
	if (!q->idle && site && site->idle_limit)
		q->idle = site->idle_limit;
	if (!q->image && site && site->image && !(q->image = strdup(site->image)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return 0;
}

void gg_session_submission(struct gg_submission *s, const struct gg_session_spec *q,
			   const struct gg_site *site, const char *endpoint, const char *name,
			   const char *identity, int token)
{
	*s = (struct gg_submission){.make_key = !identity, .session = q, .site = site};
	/* default names SITE-N, without the '.' a session name may not have */
	snprintf(s->prefix, sizeof s->prefix, "%s", site ? site->name : "session");
	for (char *d = s->prefix; (d = strchr(d, '.'));)
		*d = '-';
	struct gg_record *r = &s->rec;
	*r = (struct gg_record){.kind = GG_REC_SESSION,
				.walltime = q->res.walltime,
				.gpus = q->res.gpus,
				.cpus = q->res.cpus,
				.memory = q->res.memory,
				.connect_deadline = q->deadline,
				.idle_limit = q->idle,
				.state = GG_S_REQUESTED};
	r->site = site ? strdup(site->name) : NULL;
	r->ce = dup_or_null(endpoint);
	r->mig = dup_or_null(q->res.mig);
	r->image = dup_or_null(q->image);
	r->auth = strdup(auth_of(token, site));
	r->name = dup_or_null(name);
	r->key = dup_or_null(identity);
	r->resumed_from = dup_or_null(q->resume ? q->resume->name : NULL);
}

/* The job's command as one line, for list and status, its words quoted so that
 * gg_argv_split gives them back (JSON's argv). */
static char *command_line(const struct gg_job_spec *q)
{
	return gg_argv_join(q->cmd, q->ncmd > 0 ? (size_t)q->ncmd : 0);
}

/* The outputs the CE uploads to storage, a line "NAME URL" each (get fetches
 * them from there), or NULL. */
static char *storage_outputs(const struct gg_job_spec *q, const struct gg_site *site)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (int i = 0; i < q->ndata_out; i++)
		fprintf(f, "%s %s\n", q->data_out_names[i], q->data_out_urls[i]);
	for (int i = 0; i < q->noutputs; i++) {
		char *dest = gg_job_output_dest(q, site, i);
		if (dest)
			fprintf(f, "%s %s\n", q->outputs[i], dest);
		free(dest);
	}
	if (fclose(f) != 0 || !len) {
		free(buf);
		return NULL;
	}
	return buf;
}

void gg_job_submission(struct gg_submission *s, const struct gg_job_spec *q,
		       const struct gg_site *site, const char *name, int token)
{
	*s = (struct gg_submission){.prefix = "job", .retry_uploads = 1, .job = q, .site = site};
	struct gg_record *r = &s->rec;
	*r = (struct gg_record){.kind = GG_REC_JOB,
				.walltime = q->res.walltime,
				.gpus = q->res.gpus,
				.cpus = q->res.cpus,
				.memory = q->res.memory};
	r->site = strdup(site->name);
	r->ce = dup_or_null(site->ce);
	r->name = dup_or_null(name);
	r->mig = dup_or_null(q->res.mig);
	r->image_path = dup_or_null(q->image_url ? q->image_url : q->image);
	r->auth = strdup(auth_of(token, site));
	r->command = command_line(q);
	r->storage_outputs = storage_outputs(q, site);
	r->remote_inputs = q->ndata_in;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* The names the job's own files have in its directory. */
static int own_file(const char *b)
{
	static const char *const own[] = {GG_JOB_IMAGE_NAME, GG_WRAPPER_NAME,  GG_JOB_OUT_NAME,
					  GG_JOB_ERR_NAME,   GG_JOB_EXIT_NAME, GG_ENTER_NAME};
	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (!strcmp(b, own[i]))
			return 1;
	return 0;
}

/* Storage inputs named like the job's own files, like a local input or like
 * each other; storage outputs named twice or like a kept output. */
static int check_data_names(const struct gg_job_spec *q, struct gg_err *err)
{
	for (int i = 0; i < q->ndata_in; i++) {
		const char *b = q->data_in_names[i];
		int clash = own_file(b);
		for (int k = 0; !clash && k < q->ninputs; k++)
			clash = !strcmp(b, base_name(q->inputs[k]));
		for (int k = 0; !clash && k < i; k++)
			clash = !strcmp(b, q->data_in_names[k]);
		if (clash)
			return gg_err_set(err, GG_EUSAGE,
					  "--input '%s': another input or the job's own file is "
					  "'%s' in the job's directory: name it (URL:NAME)",
					  q->data_in_urls[i], b);
	}
	for (int i = 0; i < q->ndata_out; i++) {
		const char *b = q->data_out_names[i];
		int clash = own_file(b);
		for (int k = 0; !clash && k < q->noutputs; k++)
			clash = !strcmp(b, q->outputs[k]);
		for (int k = 0; !clash && k < i; k++)
			clash = !strcmp(b, q->data_out_names[k]);
		if (clash)
			return gg_err_set(err, GG_EUSAGE,
					  "--output '%s': named twice, or the job's own file", b);
	}
	return 0;
}

/* A name in the job's directory with a control character: the CE takes the
 * job and then waits for a file by a name that never comes. Refused (the
 * message is escaped where it is printed). */
static int control_in_name(const char *what, const char *arg, const char *name, struct gg_err *err)
{
	if (!gg_str_has_control(name))
		return 0;
	return gg_err_set(err, GG_EUSAGE,
			  "%s '%s': a control character in the name, which the CE cannot take: "
			  "rename it",
			  what, arg);
}

/* --image-url: a URL the CE's data staging fetches (root://, davs://, https://). */
static int check_image_url(const char *url, struct gg_err *err)
{
	struct gg_data_url u;
	if (!url || gg_data_url_parse(url, &u, err) == 0)
		return 0;
	return gg_err_prefix(err, "--image-url");
}

int gg_capability_parse(const char *s, char *out, size_t len, struct gg_err *err)
{
	unsigned a, b;
	char extra;
	if (!s || sscanf(s, "%u.%u%c", &a, &b, &extra) != 2 || a > 99 || b > 99)
		return gg_err_set(err, GG_EUSAGE, "'%s': expected X.Y, e.g. 8.0", s ? s : "");
	snprintf(out, len, "%u.%u", a, b);
	return 0;
}

void gg_job_match_dev(struct gg_jd_resources *res, const struct gg_dev_gpu *dev, char *min_cc,
		      size_t len)
{
	if (dev->cc[0] && !min_cc[0])
		snprintf(min_cc, len, "%s", dev->cc);
	if (dev->memory && !res->min_gpu_memory)
		res->min_gpu_memory = dev->memory;
}

int gg_job_program_check(const struct gg_job_spec *q, struct gg_err *err)
{
	if (q->image_url || !q->image || q->ncmd < 1 ||
	    !strncmp(q->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK)))
		return 0;
	const char *cmd = q->cmd[0];
	struct gg_err e = {0};
	int rc = gg_image_has_program(q->image, cmd, &e);
	if (rc < 0)
		return gg_err_set(err, e.code == GG_ENOTFOUND ? GG_EIO : e.code,
				  "could not look for '%s' in the image: %s", cmd, e.msg);
	if (rc == 0 && cmd[0] == '/')
		return gg_err_set(err, GG_ENOTFOUND,
				  "the image has no program '%s': the job will fail unless the "
				  "site binds it in (as it may /cvmfs)",
				  cmd);
	if (rc == 0)
		return gg_err_set(err, GG_ENOTFOUND,
				  "the image has no '%s' on its PATH (" GG_IMAGE_DEFAULT_PATH
				  "): the job will fail unless the site binds it in",
				  cmd);
	return 0;
}

int gg_job_spec_check(const struct gg_job_spec *q, struct gg_err *err)
{
	if (check_image_url(q->image_url, err) < 0)
		return err->code;
	for (int i = 0; i < q->ninputs; i++) {
		const char *b = base_name(q->inputs[i]);
		if (control_in_name("--input", q->inputs[i], b, err) < 0)
			return err->code;
		if (own_file(b))
			return gg_err_set(err, GG_EUSAGE,
					  "--input '%s': '%s' is the job's own file in its "
					  "directory: rename the input",
					  q->inputs[i], b);
		for (int k = 0; k < i; k++)
			if (!strcmp(b, base_name(q->inputs[k])))
				return gg_err_set(err, GG_EUSAGE,
						  "--input '%s' and '%s': both would be '%s' in "
						  "the job's directory",
						  q->inputs[k], q->inputs[i], b);
	}
	int rc = check_data_names(q, err);
	if (rc < 0)
		return rc;
	for (int i = 0; i < q->noutputs; i++) {
		const char *v = q->outputs[i];
		if (control_in_name("--output", v, v, err) < 0)
			return err->code;
		if (strchr(v, '/') || !strcmp(v, "..") || !strcmp(v, ".") || !*v)
			return gg_err_set(err, GG_EUSAGE,
					  "--output '%s': a file name (or pattern) in the job's "
					  "directory",
					  v);
	}
	return 0;
}

int gg_job_count_check(const struct gg_job_spec *q, int count, const struct gg_site *const *sites,
		       int nsites, struct gg_err *err)
{
	int shared = q->ndata_out > 0;
	for (int i = 0; !shared && q->noutputs && i < nsites; i++)
		shared = sites[i]->output_base != NULL;
	if (count > 1 && shared)
		return gg_err_set(err, GG_EUSAGE,
				  "--count %d: every job would upload its outputs to the same "
				  "storage URL: submit them one by one with their own --output "
				  "NAME=URL",
				  count);
	return 0;
}

static int submit_at(struct gg_engine *e, const struct gg_job_spec *q, const struct gg_site *site,
		     const char *name, int token, struct gg_record *out, struct gg_err *err)
{
	/* node:/PATH.sif looked for on the site's login host first, where the
	 * site allows it: a typo costs no queue wait */
	int rc = gg_image_node_check(e, site, gg_job_spec_image(q), err);
	if (rc < 0)
		return rc;
	struct gg_submission s;
	gg_job_submission(&s, q, site, name, token);
	rc = gg_engine_submit(e, &s, out, NULL, err);
	if (rc < 0 && out->name && !strncmp(err->msg, "killed", 6))
		gg_err_prefix(err, "%s", out->name);
	if (rc < 0)
		gg_record_clear(out);
	return rc;
}

int gg_engine_submit_job(struct gg_engine *e, const struct gg_job_spec *q,
			 const struct gg_site *const *sites, int nsites, int turn, const char *name,
			 int token, struct gg_record *out, struct gg_err *err)
{
	int rc = gg_err_set(err, GG_EUSAGE, "no site to submit to");
	for (int k = 0; k < nsites; k++) {
		const struct gg_site *site = sites[(turn + k) % nsites];
		memset(out, 0, sizeof *out);
		if ((rc = submit_at(e, q, site, name, token, out, err)) == 0)
			return 0;
		if (rc == GG_EINTR || rc == GG_EUSAGE)
			return rc;
		if (nsites > 1)
			gg_engine_notef(e, GG_NOTE_WARN, "site %s: %s", site->name, err->msg);
	}
	return rc;
}
