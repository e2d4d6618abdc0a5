/* A job's outputs at storage: where they are (the record's "NAME URL" lines)
 * and fetching them over HTTPS with the user's proxy or token (the XRootD,
 * dCache and EOS doors all speak it), resuming a broken transfer. */
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"
#include "cred/cred.h"
#include "http/http.h"
#include "engine/engine_int.h"

void gg_storage_outputs_free(struct gg_storage_output *o, size_t n)
{
	for (size_t i = 0; o && i < n; i++) {
		free(o[i].name);
		free(o[i].url);
	}
	free(o);
}

/* One "NAME URL" line; 0 when it is not one (skipped). */
static int parse_line(const char *line, size_t len, struct gg_storage_output *o)
{
	const char *sp = memchr(line, ' ', len);
	if (!sp || sp == line || sp + 1 == line + len)
		return 0;
	o->name = strndup(line, (size_t)(sp - line));
	o->url = strndup(sp + 1, (size_t)(line + len - sp - 1));
	return 1;
}

int gg_storage_outputs(const struct gg_record *r, struct gg_storage_output **out, size_t *n,
		       struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	const char *s = r->storage_outputs ? r->storage_outputs : "";
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == '\n';
	struct gg_storage_output *o = calloc(cap, sizeof *o);
	if (!o)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	size_t k = 0;
	for (const char *p = s; *p && k < cap;) {
		size_t len = strcspn(p, "\n");
		k += (size_t)parse_line(p, len, &o[k]);
		if (k && (!o[k - 1].name || !o[k - 1].url)) {
			gg_storage_outputs_free(o, k);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
		p += len + (p[len] == '\n');
	}
	*out = o;
	*n = k;
	return 0;
}

/* What an HTTP answer other than 2xx means, in one line. */
static int answer_error(const struct gg_http_resp *resp, const char *url, struct gg_err *err)
{
	const char *reason = resp->reason ? resp->reason : "";
	char *why = gg_str_printable(reason, strnlen(reason, 200));
	int rc;
	if (resp->status == 404)
		rc = gg_err_set(err, GG_ENOTFOUND,
				"%s is not at the storage (404): did the job's stage-out fail? "
				"('gridgpu status' says)",
				url);
	else if (resp->status == 401 || resp->status == 403)
		rc = gg_err_set(
			err, GG_ECRED,
			"the storage refused your credential (%ld %s): check 'gridgpu proxy "
			"info' and that the storage admits your VO",
			resp->status, why ? why : "");
	else
		rc = gg_err_set(err, GG_EFAIL, "the storage answered %ld %s", resp->status,
				why ? why : "");
	free(why);
	return rc;
}

int gg_storage_fetch(const struct gg_auth *a, const char *url, const char *path,
		     gg_http_progress_fn progress, void *ud, int64_t *resumed, struct gg_err *err)
{
	char *https = gg_data_http_url(url);
	if (!https)
		return gg_err_set(err, GG_EUSAGE, "'%s' is not a storage URL", url);
	struct gg_http_opts o = {.proxy_path = a->proxy_path,
				 .token = a->token ? a->token->value : NULL,
				 .ca_dir = a->ca_dir,
				 .token_fn = a->tsource ? gg_tsource_current : NULL,
				 .token_ud = a->tsource,
				 .follow = 1};
	if (!strcmp(a->kind, "token"))
		o.proxy_path = NULL;
	struct gg_http *h = NULL;
	struct gg_http_resp resp = {0};
	int rc = gg_http_new(&o, &h, err);
	if (rc == 0)
		rc = gg_http_get_resume(h, https, path, 0644, progress, ud, resumed, &resp, err);
	if (rc == 0 && (resp.status < 200 || resp.status >= 300))
		rc = answer_error(&resp, https, err);
	gg_http_resp_clear(&resp);
	gg_http_free(h);
	free(https);
	return rc;
}

/* The directory part of a URL, ending in '/'. */
static char *parent_url(const char *url)
{
	const char *slash = strrchr(url, '/');
	return slash ? strndup(url, (size_t)(slash - url + 1)) : NULL;
}

/* HEAD url: 1 present, 0 absent (404), or an error: GG_ECRED when refused,
 * GG_ENET when the door cannot be reached or does not speak HTTPS. */
static int head(struct gg_http *h, const char *url, struct gg_err *err)
{
	struct gg_http_resp resp = {0};
	int rc = gg_http_request(h, "HEAD", url, NULL, NULL, 0, NULL, 1, &resp, err);
	if (rc == 0 && resp.status == 404)
		rc = 0;
	else if (rc == 0 && resp.status >= 200 && resp.status < 300)
		rc = 1;
	else if (rc == 0)
		rc = answer_error(&resp, url, err);
	gg_http_resp_clear(&resp);
	return rc;
}

/* One storage file of a job: an input must be there, an output's directory
 * must exist. 0 when fine or when the storage cannot be asked over HTTPS
 * (the CE will say); else the error. */
static int check_one(struct gg_engine *e, struct gg_http *h, const char *what, const char *url,
		     int output, struct gg_err *err)
{
	char *https = gg_data_http_url(url);
	if (!https) /* not a storage URL: describing the job says why */
		return 0;
	char *ask = output ? parent_url(https) : https;
	struct gg_err e2 = {0};
	char *dir = output ? parent_url(url) : NULL;
	int rc = ask ? head(h, ask, &e2) : gg_err_set(&e2, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = output ? gg_err_set(err, GG_EUSAGE,
					 "%s %s: its directory %s does not exist at the storage: "
					 "make it first (gfal-mkdir -p, xrdfs HOST mkdir -p)",
					 what, url, dir ? dir : ask)
			    : gg_err_set(err, GG_EUSAGE,
					 "%s %s: no such file at the storage (404): check the path",
					 what, url);
	else if (rc == GG_ECRED)
		rc = gg_err_set(err, GG_ECRED, "%s %s: %s", what, url, e2.msg);
	else if (rc < 0 && rc != GG_ENOMEM) {
		gg_engine_notef(e, GG_NOTE_VERBOSE, "%s %s: not checked over HTTPS (%s)", what, url,
				e2.msg);
		rc = 0;
	}
	if (ask != https)
		free(ask);
	free(https);
	free(dir);
	return rc > 0 ? 0 : rc;
}

/* 1 when the job names a storage URL (an input, an output, the site's
 * output base for its outputs). */
static int names_storage(const struct gg_job_spec *q, const struct gg_site *site)
{
	return q->ndata_in || q->ndata_out || (site && site->output_base && q->noutputs);
}

int gg_storage_auth(const struct gg_job_spec *q, const struct gg_site *site, int64_t need_left,
		    struct gg_auth *a, struct gg_err *err)
{
	if (!a->kind || strcmp(a->kind, "ssh") || !names_storage(q, site))
		return 0;
	int rc = gg_auth_add_proxy(a, need_left, err);
	return rc < 0 ? gg_err_prefix(err, "the job's storage URLs are reached with your proxy")
		      : 0;
}

int gg_storage_check(struct gg_engine *e, const struct gg_auth *a, const struct gg_job_spec *q,
		     const struct gg_site *site, struct gg_err *err)
{
	if (!names_storage(q, site))
		return 0;
	struct gg_http_opts o = {.proxy_path = strcmp(a->kind, "token") ? a->proxy_path : NULL,
				 .token = a->token ? a->token->value : NULL,
				 .ca_dir = a->ca_dir,
				 .token_fn = a->tsource ? gg_tsource_current : NULL,
				 .token_ud = a->tsource,
				 .retries = -1, /* a question, not a transfer: once */
				 .connect_timeout_ms = 5000,
				 .timeout_ms = 15000,
				 .follow = 1};
	struct gg_http *h = NULL;
	int rc = gg_http_new(&o, &h, err);
	for (int i = 0; rc == 0 && i < q->ndata_in; i++)
		rc = check_one(e, h, "--input", q->data_in_urls[i], 0, err);
	for (int i = 0; rc == 0 && i < q->ndata_out; i++)
		rc = check_one(e, h, "--output", q->data_out_urls[i], 1, err);
	for (int i = 0; rc == 0 && i < q->noutputs; i++) {
		char *dest = gg_job_output_dest(q, site, i);
		if (dest)
			rc = check_one(e, h, "--output", dest, 1, err);
		free(dest);
	}
	gg_http_free(h);
	return rc;
}
