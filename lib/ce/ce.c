/* The CE interface: the backend for an endpoint (backend.h) and the calls
 * dispatched to it; what every backend shares (states, results, caches). */
#include "ce/backend.h"

#include <stdlib.h>
#include <string.h>

static const struct gg_ce_ops *const backends[] = {&gg_ce_arc_rest, &gg_ce_slurm_ssh};

static int open_with(const struct gg_ce_ops *ops, const char *endpoint,
		     const struct gg_ce_auth *auth, const struct gg_site *site, const char *keep,
		     struct gg_ce **out, struct gg_err *err)
{
	*out = NULL;
	if (!ops->no_credential && !auth->proxy_path && !auth->token && !auth->tsource)
		return gg_err_set(err, GG_ECRED,
				  "no credential to talk to the CE: run 'gridgpu "
				  "proxy init' or set BEARER_TOKEN");
	struct gg_ce *ce = calloc(1, sizeof *ce);
	if (!ce || !(ce->endpoint = strdup(endpoint))) {
		free(ce);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	ce->ops = ops;
	ce->site = site;
	ce->keep_sock = keep;
	size_t l = strlen(ce->endpoint);
	while (l > 8 && ce->endpoint[l - 1] == '/')
		ce->endpoint[--l] = '\0';
	int rc = ops->open(ce, auth, err);
	ce->site = NULL; /* borrowed for the open only */
	ce->keep_sock = NULL;
	if (rc < 0) {
		gg_ce_free(ce);
		return rc;
	}
	*out = ce;
	return 0;
}

int gg_ce_open_with(const struct gg_ce_ops *ops, const char *endpoint,
		    const struct gg_ce_auth *auth, struct gg_ce **out, struct gg_err *err)
{
	return open_with(ops, endpoint, auth, NULL, NULL, out, err);
}

int gg_ce_open(const char *endpoint, const struct gg_ce_auth *auth, struct gg_ce **out,
	       struct gg_err *err)
{
	return gg_ce_open_site(endpoint, auth, NULL, out, err);
}

int gg_ce_open_site(const char *endpoint, const struct gg_ce_auth *auth, const struct gg_site *site,
		    struct gg_ce **out, struct gg_err *err)
{
	return gg_ce_open_kept(endpoint, auth, site, NULL, out, err);
}

int gg_ce_open_kept(const char *endpoint, const struct gg_ce_auth *auth, const struct gg_site *site,
		    const char *keep_sock, struct gg_ce **out, struct gg_err *err)
{
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
		if (backends[i]->accepts(endpoint))
			return open_with(backends[i], endpoint, auth, site, keep_sock, out, err);
	*out = NULL;
	return gg_err_set(err, GG_EUSAGE, "CE URL '%s' must start with https:// or slurm+ssh://",
			  endpoint);
}

int gg_ce_clone(struct gg_ce *ce, struct gg_ce **out, struct gg_err *err)
{
	*out = NULL;
	if (!ce->ops->clone)
		return gg_err_set(err, GG_EUSAGE, "%s: a %s CE cannot be asked twice at once",
				  ce->endpoint, ce->ops->name);
	struct gg_ce *c = calloc(1, sizeof *c);
	if (!c || !(c->endpoint = strdup(ce->endpoint))) {
		free(c);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	c->ops = ce->ops;
	int rc = ce->ops->clone(ce, c, err);
	if (rc < 0) {
		gg_ce_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void gg_ce_free(struct gg_ce *ce)
{
	if (!ce)
		return;
	if (ce->ops)
		ce->ops->close(ce);
	free(ce->endpoint);
	free(ce);
}

const char *gg_ce_endpoint(const struct gg_ce *ce)
{
	return ce->endpoint;
}

const char *gg_ce_backend(const struct gg_ce *ce)
{
	return ce->ops->name;
}

struct gg_http *gg_ce_http(struct gg_ce *ce)
{
	return ce->ops->http ? ce->ops->http(ce) : NULL;
}

static int unsupported(const struct gg_ce *ce, const char *what, struct gg_err *err)
{
	return gg_err_set(err, GG_EUSAGE, "%s: a %s CE has no %s", ce->endpoint, ce->ops->name,
			  what);
}

int gg_ce_version(struct gg_ce *ce, const char **version, struct gg_err *err)
{
	return ce->ops->version ? ce->ops->version(ce, version, err)
				: unsupported(ce, "interface version", err);
}

int gg_ce_info(struct gg_ce *ce, struct gg_ce_info *info, struct gg_err *err)
{
	return ce->ops->info(ce, info, err);
}

int gg_ce_offer(struct gg_ce *ce, json_t **out, struct gg_err *err)
{
	*out = NULL;
	return ce->ops->offer ? ce->ops->offer(ce, out, err)
			      : unsupported(ce, "information on what it offers", err);
}

int gg_ce_delegate(struct gg_ce *ce, const char *proxy_path, int64_t min_left,
		   const char *cache_path, char **id, struct gg_err *err)
{
	return ce->ops->delegate ? ce->ops->delegate(ce, proxy_path, min_left, cache_path, id, err)
				 : unsupported(ce, "delegation", err);
}

int gg_ce_submit(struct gg_ce *ce, const char *description, char **id, struct gg_err *err)
{
	return ce->ops->submit(ce, description, id, err);
}

int gg_ce_status_lrms(const struct gg_ce *ce)
{
	return ce->ops->status_lrms;
}

int gg_ce_submit_jd(struct gg_ce *ce, const struct gg_jobdesc *jd, char **id, struct gg_err *err)
{
	*id = NULL;
	if (ce->ops->submit_jd)
		return ce->ops->submit_jd(ce, jd, id, err);
	char *xrsl = NULL;
	int rc = gg_jd_xrsl(jd, &xrsl, err);
	if (rc == 0)
		rc = ce->ops->submit(ce, xrsl, id, err);
	free(xrsl);
	return rc;
}

/* gg_ce_submit_many one job at a time: after a broken request, the job sent
 * may exist (code 0) and those after it were not sent. */
static int submit_each(struct gg_ce *ce, const char *const *descs, size_t n,
		       struct gg_ce_result *res, struct gg_err *err)
{
	for (size_t i = 0; i < n; i++) {
		struct gg_err e = {0};
		int rc = ce->ops->submit(ce, descs[i], &res[i].id, &e);
		res[i].code = rc == 0 ? 201 : rc == GG_EJOB ? -1 : 0;
		if (rc < 0 && i == 0 && rc != GG_EJOB) {
			*err = e;
			return rc;
		}
		if (rc < 0)
			res[i].reason = strdup(e.msg);
		if (rc < 0 && rc != GG_EJOB) {
			if (gg_ce_submit_unsent(ce))
				res[i].code = -1;
			for (size_t k = i + 1; k < n; k++) {
				res[k].code = -1;
				res[k].reason = gg_strdup_printf("not sent: %s", e.msg);
			}
			return 0;
		}
	}
	return 0;
}

int gg_ce_submit_many(struct gg_ce *ce, const char *const *descs, size_t n,
		      struct gg_ce_result **results, struct gg_err *err)
{
	*results = NULL;
	if (ce->ops->submit_many)
		return ce->ops->submit_many(ce, descs, n, results, err);
	struct gg_ce_result *res = calloc(n ? n : 1, sizeof *res);
	if (!res)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = submit_each(ce, descs, n, res, err);
	if (rc < 0)
		gg_ce_results_free(res, n);
	else
		*results = res;
	return rc;
}

int gg_ce_status(struct gg_ce *ce, const char *const *ids, size_t n, struct gg_ce_result **results,
		 struct gg_err *err)
{
	return ce->ops->status(ce, ids, n, results, err);
}

int gg_ce_lrms_status(struct gg_ce *ce, const char *const *ids, size_t n,
		      struct gg_ce_result **results, struct gg_err *err)
{
	*results = NULL;
	return ce->ops->lrms_status ? ce->ops->lrms_status(ce, ids, n, results, err)
				    : unsupported(ce, "batch-system state", err);
}

int gg_ce_kill(struct gg_ce *ce, const char *const *ids, size_t n, struct gg_ce_result **results,
	       struct gg_err *err)
{
	return ce->ops->kill(ce, ids, n, results, err);
}

int gg_ce_clean(struct gg_ce *ce, const char *const *ids, size_t n, struct gg_ce_result **results,
		struct gg_err *err)
{
	return ce->ops->clean(ce, ids, n, results, err);
}

int gg_ce_list(struct gg_ce *ce, struct gg_ce_result **results, size_t *n, struct gg_err *err)
{
	return ce->ops->list(ce, results, n, err);
}

int gg_ce_job_names(struct gg_ce *ce, const char *const *ids, size_t n, char **names,
		    struct gg_err *err)
{
	return ce->ops->job_names(ce, ids, n, names, err);
}

int gg_ce_put(struct gg_ce *ce, const char *id, const char *name, const void *data, size_t len,
	      struct gg_err *err)
{
	return ce->ops->put(ce, id, name, data, len, err);
}

int gg_ce_put_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
		   gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	return ce->ops->put_file(ce, id, name, path, progress, ud, err);
}

int gg_ce_get(struct gg_ce *ce, const char *id, const char *name, size_t max, char **data,
	      size_t *len, struct gg_err *err)
{
	return ce->ops->get(ce, id, name, max, data, len, err);
}

int gg_ce_get_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
		   gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	return ce->ops->get_file(ce, id, name, path, progress, ud, err);
}

int gg_ce_ls(struct gg_ce *ce, const char *id, char ***names, size_t *n, struct gg_err *err)
{
	return ce->ops->ls(ce, id, names, n, err);
}

int gg_ce_diagnose(struct gg_ce *ce, const char *id, const char *item, char **text,
		   struct gg_err *err)
{
	return ce->ops->diagnose ? ce->ops->diagnose(ce, id, item, text, err)
				 : unsupported(ce, "diagnostics", err);
}

const char *gg_ce_state_name(enum gg_ce_state s)
{
	static const char *names[] = {"unknown",  "accepted", "queued", "running", "finishing",
				      "finished", "failed",   "killed", "gone"};
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

int gg_ce_state_terminal(enum gg_ce_state s)
{
	return s == GG_CE_FINISHED || s == GG_CE_FAILED || s == GG_CE_KILLED || s == GG_CE_GONE;
}

void gg_ce_results_free(struct gg_ce_result *r, size_t n)
{
	if (!r)
		return;
	for (size_t i = 0; i < n; i++) {
		free(r[i].id);
		free(r[i].reason);
		free(r[i].raw_state);
	}
	free(r);
}

json_t *gg_ce_cache_load(const char *path)
{
	char *text = NULL;
	size_t len;
	json_t *j = NULL;
	if (path && gg_file_read(path, 1 << 20, &text, &len, NULL) == 0)
		j = json_loadb(text, len, 0, NULL);
	free(text);
	if (!json_is_object(j)) {
		json_decref(j);
		j = json_object();
	}
	return j;
}

void gg_ce_cache_save(const char *path, json_t *cache)
{
	char *text = json_dumps(cache, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (text)
		gg_file_write_atomic(path, text, strlen(text), 0600, NULL);
	free(text);
}

/* How long the kill and clean of gg_ce_cancel may take, the user's interrupt
 * not stopping them (it is often what made the job one to cancel). */
#define CANCEL_WINDOW_MS 15000

void gg_ce_cancel(struct gg_ce *ce, const char *id)
{
	const char *ids[1] = {id};
	struct gg_ce_result *res = NULL;
	struct gg_http *h = gg_ce_http(ce);
	if (h)
		gg_http_cleanup_window(h, CANCEL_WINDOW_MS);
	if (ce->ops->kill(ce, ids, 1, &res, NULL) == 0)
		gg_ce_results_free(res, 1);
	res = NULL;
	if (ce->ops->clean(ce, ids, 1, &res, NULL) == 0)
		gg_ce_results_free(res, 1);
	if (h)
		gg_http_cleanup_window(h, 0);
}

int gg_ce_submit_unsent(const struct gg_ce *ce)
{
	return ce->ops->submit_unsent ? ce->ops->submit_unsent(ce) : 0;
}

void gg_ce_info_clear(struct gg_ce_info *info)
{
	free(info->name);
	for (size_t i = 0; i < info->nqueues; i++)
		free(info->queues[i]);
	free(info->queues);
	for (size_t i = 0; i < info->nrtes; i++)
		free(info->rtes[i]);
	free(info->rtes);
	free(info->rest_version);
	memset(info, 0, sizeof *info);
}
