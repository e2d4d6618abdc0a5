/* The job descriptions of gridgpu's two kinds of work: an interactive session
 * (the launcher, its sshd's key, the session file it publishes) and a batch
 * job (the wrapper running a command in the SIF image). */
#include <arpa/inet.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "image/image.h"
#include "engine/engine_int.h"
#include "engine/sync.h"

char *gg_site_output_base(const struct gg_site *site)
{
	if (!site || !site->output_base)
		return NULL;
	const struct passwd *pw = getpwuid(getuid());
	const char *user = pw ? pw->pw_name : getenv("USER");
	char *name = NULL, *url = NULL;
	struct gg_err e = {0};
	/* a name that cannot fail the check, to get the expanded base back */
	if (gg_data_output_parse("x", site->output_base, user, &name, &url, &e) < 0) {
		/* not a storage URL: expanded anyway, the caller's check says why */
		free(name);
		size_t n = strlen(site->output_base); /* "" too: not read before it */
		return gg_strdup_printf("%s%s", site->output_base,
					n && site->output_base[n - 1] == '/' ? "" : "/");
	}
	url[strlen(url) - 1] = '\0'; /* drop the "x" */
	free(name);
	return url;
}

int gg_jd_storage_env(struct gg_jobdesc *jd, const struct gg_site *site, struct gg_err *err)
{
	int rc = 0;
	if (site && site->cache)
		rc = gg_jd_env(jd, gg_node_env(GG_NE_CACHE), site->cache, err);
	char *base = gg_site_output_base(site);
	if (rc == 0 && base)
		rc = gg_jd_env(jd, gg_node_env(GG_NE_STORAGE), base, err);
	free(base);
	return rc;
}

/* -A LIST: the site's allow_from, each entry checked again (a site made by a
 * program, not loaded from a file), for the launcher's sshd configuration. */
static int allow_arg(struct gg_jobdesc *jd, const struct gg_site *site, struct gg_err *err)
{
	if (!site || !site->nallow)
		return 0;
	char list[GG_MAX_ALLOW * (INET6_ADDRSTRLEN + 5)] = "";
	size_t n = 0;
	for (int i = 0; i < site->nallow && i < GG_MAX_ALLOW; i++) {
		if (gg_addr_range_check(site->allow_from[i], err) < 0)
			return gg_err_prefix(err, "site '%s' allow_from", site->name);
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? "," : "",
				      site->allow_from[i]);
	}
	return gg_node_jd_arg(jd, GG_NF_ALLOW, list, err);
}

/* -S SECS -Z BYTES: the snapshot at the session's end, as the site bounds it
 * (snapshot_time, default 20 s; snapshot_max, default 2 GiB). */
static int snapshot_args(struct gg_jobdesc *jd, const struct gg_site *site, struct gg_err *err)
{
	char buf[32];
	int64_t t = site && site->snapshot_time ? site->snapshot_time : GG_SNAPSHOT_TIME;
	uint64_t max = GG_SNAPSHOT_MAX;
	if (site && site->snapshot_max && gg_size_parse(site->snapshot_max, &max, err) < 0)
		return gg_err_prefix(err, "site '%s' snapshot_max", site->name);
	snprintf(buf, sizeof buf, "%lld", (long long)t);
	int rc = gg_node_jd_arg(jd, GG_NF_SNAPTIME, buf, err);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)max);
	return rc < 0 ? rc : gg_node_jd_arg(jd, GG_NF_SNAPMAX, buf, err);
}

/* -u SECS: how often the launcher samples what the work uses (the site's
 * usage_interval; unset: the launcher's 30 s). */
static int usage_arg(struct gg_jobdesc *jd, const struct gg_site *site, struct gg_err *err)
{
	char buf[32];
	if (!site || !site->usage_interval)
		return 0;
	snprintf(buf, sizeof buf, "%lld", (long long)site->usage_interval);
	return gg_node_jd_arg(jd, GG_NF_USAGE, buf, err);
}

int gg_session_describe(const struct gg_session_spec *q, const struct gg_site *site,
			const struct gg_record *r, const char *pubkey, struct gg_jobdesc *jd,
			struct gg_err *err)
{
	char buf[64];
	int rc = 0;
	if (!r->uid) /* the record names the job: one without is not described */
		return gg_err_set(err, GG_EUSAGE, "session '%s' has no uid to name its job",
				  r->name ? r->name : "");
	char *jobname = gg_strdup_printf("gridgpu-%s", r->uid);
	rc = gg_jd_set(&jd->name, jobname, err);
	free(jobname);
	if (rc == 0)
		rc = gg_jd_set(&jd->executable, "/bin/sh", err);
	if (rc == 0)
		rc = gg_jd_arg(jd, GG_LAUNCHER_NAME, err);
	snprintf(buf, sizeof buf, "%lld", (long long)q->deadline);
	if (rc == 0)
		rc = gg_node_jd_arg(jd, GG_NF_DEADLINE, buf, err);
	snprintf(buf, sizeof buf, "%lld", (long long)q->idle);
	if (rc == 0)
		rc = gg_node_jd_arg(jd, GG_NF_IDLE, buf, err);
	if (rc == 0 && site && site->worker_address)
		rc = gg_node_jd_arg(jd, GG_NF_ADDR, site->worker_address, err);
	if (rc == 0)
		rc = allow_arg(jd, site, err);
	if (rc == 0 && q->image && q->enter)
		rc = gg_node_jd_arg(jd, GG_NF_ENTER, GG_ENTER_NAME, err);
	if (rc == 0 && q->image && q->enter)
		rc = snapshot_args(jd, site, err);
	if (rc == 0)
		rc = usage_arg(jd, site, err);
	/* kept in the job's directory when it ends: what the work used */
	if (rc == 0)
		rc = gg_jd_output(jd, GG_USAGE_NAME, err);
	/* kept in the job's directory when it ends (A-REX deletes the rest): the
	 * snapshot and the image it is the difference to */
	if (rc == 0 && q->image && q->enter && q->image_file)
		rc = gg_jd_output(jd, GG_SNAPSHOT_NAME, err);
	if (rc == 0 && q->image && q->enter && q->image_file)
		rc = gg_jd_output(jd, GG_SESSION_IMAGE_NAME, err);
	snprintf(buf, sizeof buf, "%lld", (long long)q->res.walltime);
	if (rc == 0 && q->res.walltime > 0)
		rc = gg_node_jd_arg(jd, GG_NF_WALLTIME, buf, err);
	if (rc == 0 && (q->res.gpus || q->res.mig))
		rc = gg_node_jd_arg(jd, GG_NF_GPUS, NULL, err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_LAUNCHER_NAME, NULL, q->launcher, err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_AUTHKEYS_NAME, NULL, pubkey, err);
	if (rc == 0 && q->image && q->enter)
		rc = gg_jd_input(jd, GG_ENTER_NAME, NULL, q->enter, err);
	if (rc == 0 && q->image && q->enter && q->image_file)
		rc = gg_jd_input(jd, GG_SESSION_IMAGE_NAME, NULL, q->image_file, err);
	if (rc == 0)
		rc = gg_jd_output(jd, GG_SESSION_FILE, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stderr_name, GG_LAUNCHER_LOG, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stdout_name, GG_LAUNCHER_LOG, err);
	if (rc == 0)
		rc = gg_jd_resources(jd, &q->res, site, err);
	if (rc == 0) /* a racer: the name it will have */
		rc = gg_jd_env(jd, gg_node_env(GG_NE_SESSION),
			       r->race_name ? r->race_name : r->name, err);
	if (rc == 0)
		rc = gg_jd_storage_env(jd, site, err);
	if (rc == 0 && q->warn_leads) {
		const char *w = q->warn_leads;
		if (!*w || w[strspn(w, "0123456789 ")])
			return gg_err_set(
				err, GG_EUSAGE,
				"GRIDGPU_WARN_LEADS '%s': expected seconds, e.g. \"60 10\"", w);
		rc = gg_jd_env(jd, gg_node_env(GG_NE_WARN_LEADS), w, err);
	}
	return rc;
}

char *gg_job_output_dest(const struct gg_job_spec *s, const struct gg_site *site, int i)
{
	const char *name = s->outputs[i];
	if (!site || !site->output_base || name[strcspn(name, "*?[")])
		return NULL;
	char *base = gg_site_output_base(site);
	char *url = base ? gg_strdup_printf("%s%s", base, name) : NULL;
	free(base);
	return url;
}

/* The job's storage: inputs the CE fetches (root:// ones through the site's
 * cache), outputs it uploads (given with a URL, or under the site's
 * output_base), and the outputs kept in its session directory. */
static int job_data(const struct gg_job_spec *s, const struct gg_site *site, struct gg_jobdesc *jd,
		    struct gg_err *err)
{
	int rc = site && site->cache ? gg_data_cache_check(site->cache, err) : 0;
	if (rc < 0)
		return gg_err_prefix(err, "site '%s'", site->name);
	for (int i = 0; rc == 0 && i < s->ndata_in; i++) {
		char *src = gg_data_cache_url(site ? site->cache : NULL, s->data_in_urls[i]);
		rc = src ? gg_jd_input(jd, s->data_in_names[i], src, NULL, err)
			 : gg_err_set(err, GG_ENOMEM, "out of memory");
		free(src);
	}
	for (int i = 0; rc == 0 && i < s->ndata_out; i++)
		rc = gg_jd_output_url(jd, s->data_out_names[i], s->data_out_urls[i], err);
	for (int i = 0; rc == 0 && i < s->noutputs; i++) {
		char *dest = gg_job_output_dest(s, site, i);
		struct gg_data_url u;
		if (dest && gg_data_url_parse(dest, &u, err) < 0)
			rc = gg_err_prefix(err, "site '%s' output_base", site->name);
		else
			rc = dest ? gg_jd_output_url(jd, s->outputs[i], dest, err)
				  : gg_jd_output(jd, s->outputs[i], err);
		free(dest);
	}
	return rc;
}

/* Does a word of the command reach the node as it is? CEs put a job's
 * arguments into a generated shell script: A-REX in double quotes, where '$',
 * '`' and '\\' still act (seen at the test site: "a\\nb" came as two lines,
 * "${HOME}" as the node's). Only words made of these characters pass plain. */
static int word_plain(const char *w)
{
	return w[strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			   " _./:=,+@%^~-")] == '\0';
}

static int command_plain(char *const *cmd, int n)
{
	int plain = 1;
	for (int i = 0; i < n; i++)
		plain &= word_plain(cmd[i]);
	return plain;
}

/* The command's words as job arguments, after "--": as they are when all are
 * plain, else each base64-encoded behind a '=' (so an empty word stays one;
 * the wrapper, given -x, decodes them): the command runs with exactly the
 * words given, whatever the CE's quoting does. */
static int command_args(struct gg_jobdesc *jd, char *const *cmd, int n, struct gg_err *err)
{
	int plain = command_plain(cmd, n);
	int rc = gg_jd_arg(jd, "--", err);
	for (int i = 0; rc == 0 && i < n; i++) {
		if (plain) {
			rc = gg_jd_arg(jd, cmd[i], err);
			continue;
		}
		size_t len = strlen(cmd[i]);
		char *b = malloc(4 * ((len + 2) / 3) + 2);
		if (!b)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		b[0] = '=';
		int bn = EVP_EncodeBlock((unsigned char *)b + 1, (const unsigned char *)cmd[i],
					 (int)len);
		b[bn + 1] = '\0';
		rc = gg_jd_arg(jd, b, err);
		free(b);
	}
	return rc;
}

/* The container run (the session's enter script), staged beside the wrapper. */
static int job_enter(const struct gg_job_spec *s, const struct gg_site *site, const char *image,
		     struct gg_jobdesc *jd, struct gg_err *err)
{
	char *path = NULL;
	int rc = gg_job_enter_file(s, site, image, &path, err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_ENTER_NAME, NULL, path, err);
	free(path);
	return rc;
}

int gg_job_describe(const struct gg_job_spec *s, const struct gg_site *site,
		    const struct gg_record *r, struct gg_jobdesc *jd, struct gg_err *err)
{
	if (!r->uid) /* the record names the job: one without is not described */
		return gg_err_set(err, GG_EUSAGE, "job '%s' has no uid to name it",
				  r->name ? r->name : "");
	char *jobname = gg_strdup_printf("gridgpu-%s", r->uid);
	int rc = gg_jd_set(&jd->name, jobname, err);
	free(jobname);
	if (rc == 0)
		rc = gg_jd_set(&jd->executable, "/bin/sh", err);
	if (rc == 0)
		rc = gg_jd_arg(jd, GG_WRAPPER_NAME, err);
	if (rc == 0 && site && site->runtime)
		rc = gg_node_jd_warg(jd, GG_NW_RUNTIME, site->runtime, err);
	if (rc == 0 && !command_plain(s->cmd, s->ncmd))
		rc = gg_node_jd_warg(jd, GG_NW_B64, NULL, err);
	/* node:/PATH.sif: the node's, by its path, not uploaded */
	size_t mark = strlen(GG_IMAGE_NODE_MARK);
	const char *node = NULL;
	if (s->image && !s->image_url && !strncmp(s->image, GG_IMAGE_NODE_MARK, mark))
		node = s->image + mark;
	if (rc == 0)
		rc = gg_jd_arg(jd, node ? node : GG_JOB_IMAGE_NAME, err);
	if (rc == 0)
		rc = command_args(jd, s->cmd, s->ncmd, err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_WRAPPER_NAME, NULL, s->wrapper, err);
	if (rc == 0)
		rc = job_enter(s, site, node ? node : GG_JOB_IMAGE_NAME, jd, err);
	if (rc == 0 && !node)
		rc = gg_jd_input(jd, GG_JOB_IMAGE_NAME, s->image_url,
				 s->image_url ? NULL : s->image, err);
	for (int i = 0; rc == 0 && i < s->ninputs; i++) {
		const char *base = strrchr(s->inputs[i], '/');
		rc = gg_jd_input(jd, base ? base + 1 : s->inputs[i], NULL, s->inputs[i], err);
	}
	if (rc == 0)
		rc = job_data(s, site, jd, err);
	if (rc == 0) /* kept by the CE for status (lib/engine/sync.c) */
		rc = gg_jd_output(jd, GG_JOB_EXIT_NAME, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stdout_name, GG_JOB_OUT_NAME, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stderr_name, GG_JOB_ERR_NAME, err);
	if (rc == 0)
		rc = gg_jd_resources(jd, &s->res, site, err);
	/* --gpus 0-1 without a free GPU: the job learns it runs on CPUs alone */
	if (rc == 0 && s->cpu_fallback)
		rc = gg_jd_env(jd, "GRIDGPU_GPUS", "0", err);
	if (rc == 0 && s->cpu_fallback)
		rc = gg_jd_env(jd, "CUDA_VISIBLE_DEVICES", "", err);
	if (rc == 0)
		rc = gg_jd_storage_env(jd, site, err);
	return rc;
}

/* The device the work ran on, of the provenance's "gpus": the first one visible (a
 * whole GPU, or a MIG device of a GPU in MIG mode: the process had that slice's
 * memory, not the GPU's), as CUDA picks its device 0. An entry without "visible"
 * counts as visible. NULL when none is. */
static json_t *dev_used(json_t *g)
{
	size_t i, k;
	json_t *d, *m;
	json_array_foreach (json_is_array(g) ? g : json_object_get(g, "gpus"), i, d) {
		json_t *v = json_object_get(d, "visible");
		if (!v || json_is_true(v))
			return d;
		json_array_foreach (json_object_get(d, "mig"), k, m)
			if (json_is_true(json_object_get(m, "visible")))
				return m;
	}
	return NULL;
}

/* The development GPU recorded by freeze (the provenance's "gpus"). */
static int dev_gpu(struct gg_sif *sif, struct gg_dev_gpu *out, struct gg_err *err)
{
	const struct gg_sif_descr *d =
		gg_sif_find(sif, GG_SIF_GENERIC_JSON, "gridgpu-provenance.json");
	char *text = NULL;
	size_t len;
	memset(out, 0, sizeof *out);
	if (!d || gg_sif_read_object(sif, d, 1 << 20, &text, &len, err) < 0)
		return gg_err_set(
			err, GG_EUSAGE,
			"--match-dev-gpu: the image has no provenance (freeze it with gridgpu)");
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	json_t *dev = dev_used(json_object_get(j, "gpus"));
	const char *cc = json_string_value(json_object_get(dev, "compute_capability"));
	json_int_t mb = json_integer_value(json_object_get(dev, "memory_total_mb"));
	const char *name = json_string_value(json_object_get(dev, "name"));
	snprintf(out->cc, sizeof out->cc, "%s", cc ? cc : "");
	snprintf(out->name, sizeof out->name, "%s", name ? name : "");
	out->memory = mb > 0 ? (uint64_t)mb << 20 : 0;
	json_decref(j);
	if (!out->cc[0] && !out->memory)
		return gg_err_set(
			err, GG_EUSAGE,
			"--match-dev-gpu: the image records no GPU it was developed on (none was "
			"visible where it was frozen, or the session's was a MIG device): give "
			"--min-capability or --min-gpu-memory instead");
	return 0;
}

int gg_job_image_check(const char *path, int64_t *part_offset, struct gg_dev_gpu *dev,
		       struct gg_err *err)
{
	struct gg_sif_verify_report rep;
	if (gg_sif_verify(path, &rep, err) < 0)
		return err->code;
	for (size_t i = 0; !rep.ok && i < rep.nchecks; i++)
		if (!rep.checks[i].ok)
			return gg_err_set(err, GG_EFAIL,
					  "corrupt SIF: %s: %s (run 'gridgpu verify %s')",
					  rep.checks[i].what, rep.checks[i].detail, path);
	struct gg_sif *sif;
	if (gg_sif_open(path, &sif, err) < 0)
		return err->code;
	const struct gg_sif_descr *d = gg_sif_primary(sif);
	*part_offset = d ? d->offset : 0;
	int rc = dev ? dev_gpu(sif, dev, err) : 0;
	gg_sif_close(sif);
	return rc;
}

/* The spec of job index of an --input-list batch: the spec's own inputs and
 * the item (a shallow copy; the arrays malloc'd, into *free1 and *free2). */
static int nth_spec(const struct gg_job_spec *s, const char *item, struct gg_job_spec *q,
		    const char ***free1, const char ***free2, char **url, char **name,
		    struct gg_err *err)
{
	*q = *s;
	if (!gg_data_url_is_remote(item)) {
		const char *base = strrchr(item, '/');
		if (!(*name = strdup(base ? base + 1 : item)) ||
		    !(*free1 = calloc((size_t)s->ninputs + 1, sizeof **free1)))
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		for (int i = 0; i < s->ninputs; i++)
			(*free1)[i] = s->inputs[i];
		(*free1)[s->ninputs] = item;
		q->inputs = *free1;
		q->ninputs++;
		return 0;
	}
	if (gg_data_input_parse(item, url, name, err) < 0)
		return gg_err_prefix(err, "--input-list");
	size_t n = (size_t)s->ndata_in + 1;
	if (!(*free1 = calloc(n, sizeof **free1)) || !(*free2 = calloc(n, sizeof **free2)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; i + 1 < n; i++) {
		(*free1)[i] = s->data_in_urls[i];
		(*free2)[i] = s->data_in_names[i];
	}
	(*free1)[n - 1] = *url;
	(*free2)[n - 1] = *name;
	q->data_in_urls = *free1;
	q->data_in_names = *free2;
	q->ndata_in++;
	return 0;
}

int gg_job_describe_nth(const struct gg_job_spec *s, const struct gg_site *site,
			const struct gg_record *r, int index, struct gg_jobdesc *jd,
			struct gg_err *err)
{
	if (!s->neach)
		return gg_job_describe(s, site, r, jd, err);
	if (index < 0 || index >= s->neach)
		return gg_err_set(err, GG_EUSAGE, "job %d of an input list of %d", index + 1,
				  s->neach);
	struct gg_job_spec q;
	const char **a = NULL, **b = NULL;
	char *url = NULL, *name = NULL;
	int rc = nth_spec(s, s->each[index], &q, &a, &b, &url, &name, err);
	if (rc == 0)
		rc = gg_job_describe(&q, site, r, jd, err);
	if (rc == 0)
		rc = gg_jd_env(jd, "GRIDGPU_INPUT", name, err);
	free(a);
	free(b);
	free(url);
	free(name);
	return rc;
}
