/* The ARC CE backend: A-REX's REST interface (1.0 as A-REX 6 serves it, 1.1 when
 * offered). Quirks handled here (see the notes on A-REX 6.17):
 *  - without an Accept header A-REX answers HTML: always send one;
 *  - action bodies need Content-Type exactly application/json;
 *  - HTTP 201 on bulk calls says nothing about each job: read every status-code;
 *  - errors carry their text in the reason phrase with an empty body;
 *  - one-element lists collapse to objects, empty lists are empty bodies;
 *  - the delegation id is the last path segment of a malformed Location. */
#include "ce/arc.h"
#include "ce/arcinfo.h"
#include "cred/cred.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

static const char JSON[] = "application/json";

enum gg_ce_state gg_arc_state(const char *s)
{
	static const struct {
		const char *name;
		enum gg_ce_state st;
	} tab[] = {
		{"ACCEPTING", GG_CE_ACCEPTED},
		{"ACCEPTED", GG_CE_ACCEPTED},
		{"PREPARING", GG_CE_ACCEPTED},
		{"PREPARED", GG_CE_ACCEPTED},
		{"SUBMITTING", GG_CE_ACCEPTED},
		{"QUEUING", GG_CE_QUEUED},
		{"HELD", GG_CE_QUEUED},
		{"RUNNING", GG_CE_RUNNING},
		{"EXITINGLRMS", GG_CE_RUNNING},
		{"OTHER", GG_CE_RUNNING},
		{"EXECUTED", GG_CE_FINISHING},
		{"FINISHING", GG_CE_FINISHING},
		{"KILLING", GG_CE_FINISHING},
		{"FINISHED", GG_CE_FINISHED},
		{"FAILED", GG_CE_FAILED},
		{"KILLED", GG_CE_KILLED},
		{"WIPED", GG_CE_GONE},
		/* grid-manager states, as diagnose/status gives them */
		{"SUBMIT", GG_CE_ACCEPTED},
		{"INLRMS", GG_CE_RUNNING},
		{"CANCELING", GG_CE_FINISHING},
		{"DELETED", GG_CE_GONE},
	};
	if (!s)
		return GG_CE_UNKNOWN;
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (strcmp(tab[i].name, s) == 0)
			return tab[i].st;
	return GG_CE_UNKNOWN;
}

int gg_arc_failed_walltime(const char *failed)
{
	/* What A-REX's scan scripts write into .lrms_done when the batch system
	 * ended a job at its time limit; A-REX's "failed" says "LRMS error: (CODE)
	 * TEXT". Slurm: "Job timeout" (JobState TIMEOUT); HTCondor and SGE: "job
	 * killed: wall"; LoadLeveler: "Job exceeded time limit." */
	static const char *const said[] = {"Job timeout", "job killed: wall",
					   "Job exceeded time limit"};
	if (!failed)
		return 0;
	const char *lrms = strstr(failed, "LRMS error:");
	if (!lrms)
		return 0;
	size_t n = strcspn(lrms, "\r\n");
	for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
		const char *p = strstr(lrms, said[i]);
		if (p && (size_t)(p - lrms) < n)
			return 1;
	}
	return 0;
}

int gg_arc_lrms_refusal(const char *errors, char *out, size_t len)
{
	/* A-REX's submit-*-job scripts copy the batch system's answer into the
	 * job's errors log ("Output is:" then sbatch's lines); the last line of
	 * the submit command's own complaint is the reason. Slurm: "sbatch:
	 * error: Batch job submission failed: ..."; PBS/Torque: "qsub: ...";
	 * LSF: "bsub: ...". */
	static const char *const who[] = {"sbatch: error: ", "qsub: ", "bsub: "};
	/* A runtime environment that refuses the job at stage 0 (a GPU RTE
	 * whose site has no GPU that meets the job's minimums) says why on the
	 * line before A-REX's "ERROR: Runtime script NAME stage 0 execution
	 * failed": that line is the refusal. */
	static const char rte_fail[] = "ERROR: Runtime script ";
	const char *found = NULL, *prev = NULL;
	size_t flen = 0, plen = 0;
	if (len)
		out[0] = '\0';
	if (!errors || !len)
		return 0;
	for (const char *p = errors; *p;) {
		size_t n = strcspn(p, "\r\n");
		for (size_t i = 0; i < sizeof who / sizeof who[0]; i++)
			if (n > strlen(who[i]) && strncmp(p, who[i], strlen(who[i])) == 0) {
				found = p;
				flen = n;
			}
		if (prev && plen && !strncmp(p, rte_fail, sizeof rte_fail - 1) &&
		    memmem(p, n, " stage 0 execution failed", 25))
			found = prev, flen = plen;
		prev = p;
		plen = n;
		p += n;
		while (*p == '\r' || *p == '\n')
			p++;
	}
	if (!found)
		return 0;
	if (flen > 300) /* cut first, then trimmed: a cut does not end in a blank */
		flen = 300;
	while (flen && (found[flen - 1] == ' ' || found[flen - 1] == '\t'))
		flen--;
	if (!flen) /* a blank line says nothing */
		return 0;
	snprintf(out, len, "%.*s", (int)flen, found);
	return 1;
}

static int arc_accepts(const char *endpoint)
{
	return strncmp(endpoint, "https://", 8) == 0;
}

static void arc_close(struct gg_ce *g)
{
	struct arc *ce = g->impl;
	if (!ce)
		return;
	gg_http_free(ce->http);
	gg_tsource_free(ce->tsource);
	free(ce->cache_path);
	free(ce->proxy_path);
	free(ce->base);
	free(ce);
	g->impl = NULL;
}

static int arc_open(struct gg_ce *g, const struct gg_ce_auth *auth, struct gg_err *err)
{
	if (!g->endpoint[8])
		return gg_err_set(err, GG_EUSAGE, "CE URL '%s' has no host", g->endpoint);
	struct arc *ce = calloc(1, sizeof *ce);
	if (!ce)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	g->impl = ce;
	ce->endpoint = g->endpoint;
	if (auth->cache_path && !(ce->cache_path = strdup(auth->cache_path)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_http_opts ho = {.proxy_path = auth->token ? NULL : auth->proxy_path,
				  .token = auth->token,
				  .ca_dir = auth->ca_dir,
				  .cancel = auth->cancel,
				  .cancel_ud = auth->cancel_ud,
				  .log = auth->log,
				  .keep_sock = g->keep_sock};
	if (auth->tsource) {
		ce->tsource = gg_tsource_ref(auth->tsource);
		ho.proxy_path = NULL;
		ho.token_fn = gg_tsource_current;
		ho.token_ud = ce->tsource;
	}
	if (ho.proxy_path && !(ce->proxy_path = strdup(ho.proxy_path)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return gg_http_new(&ho, &ce->http, err);
}

static int arc_clone(struct gg_ce *g, struct gg_ce *copy, struct gg_err *err)
{
	const struct arc *ce = g->impl;
	/* a token source refreshes its token in place: one handle at a time */
	if (ce->tsource)
		return gg_err_set(err, GG_EUSAGE, "%s: one request at a time with a token source",
				  g->endpoint);
	struct arc *c = calloc(1, sizeof *c);
	if (!c)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	copy->impl = c;
	c->endpoint = copy->endpoint;
	memcpy(c->version, ce->version, sizeof c->version);
	if ((ce->cache_path && !(c->cache_path = strdup(ce->cache_path))) ||
	    (ce->base && !(c->base = strdup(ce->base))) ||
	    (ce->proxy_path && !(c->proxy_path = strdup(ce->proxy_path))))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return gg_http_clone(ce->http, &c->http, err);
}

static struct gg_http *arc_http(struct gg_ce *g)
{
	return ((struct arc *)g->impl)->http;
}

static int arc_version(struct gg_ce *g, const char **version, struct gg_err *err)
{
	return gg_arc_version(g->impl, version, err);
}

static int arc_submit_unsent(const struct gg_ce *g)
{
	return ((const struct arc *)g->impl)->submit_unsent;
}

/* What the CE's refusal of the user's proxy may be about, appended to buf: the
 * VOMS attributes the proxy carries (sites authorise and map by them), or that
 * it carries none. Nothing for a bearer token or an unreadable proxy. */
static void voms_hint(const struct arc *ce, char *buf, size_t len)
{
	struct gg_cred *c = NULL;
	struct gg_ac *acs = NULL;
	size_t n = 0, o = 0;
	if (!ce->proxy_path || gg_cred_load_public(ce->proxy_path, &c, NULL) < 0 ||
	    gg_cred_acs(c, 0, &acs, &n, NULL) < 0) {
		gg_cred_free(c);
		return;
	}
	if (n == 0)
		o += (size_t)snprintf(buf, len, "; your proxy carries no VOMS attributes");
	for (size_t i = 0; i < n && o < len; i++) {
		o += (size_t)snprintf(buf + o, len - o, "%s",
				      i ? "; and" : "; your proxy's VOMS attributes:");
		for (size_t j = 0; j < acs[i].n_fqans && o < len; j++) {
			/* "/vo/g/Role=NULL/Capability=NULL" as "/vo/g" */
			const char *f = acs[i].fqans[j], *cut = strstr(f, "/Role=NULL");
			if (!cut)
				cut = strstr(f, "/Capability=NULL");
			o += (size_t)snprintf(buf + o, len - o, "%s %.*s", j ? "," : "",
					      (int)(cut ? (size_t)(cut - f) : strlen(f)), f);
		}
		if (o < len && (acs[i].not_yet_valid || acs[i].time_left <= 0))
			o += (size_t)snprintf(buf + o, len - o, " (%s)",
					      acs[i].not_yet_valid ? "not valid yet" : "expired");
	}
	if (o < len)
		snprintf(buf + o, len - o,
			 "; ask for the VO/role the site requires: gridgpu proxy init --voms "
			 "VO[:FQAN]");
	gg_ac_list_free(acs, n);
	gg_cred_free(c);
}

int gg_arc_refused(const struct arc *ce, long status, const char *reason, const char *what,
		   struct gg_err *err)
{
	char hint[1024] = "";
	voms_hint(ce, hint, sizeof hint);
	if (!reason || !reason[0])
		reason = "no reason given";
	if (hint[0])
		return gg_err_set(err, GG_ECRED,
				  "%s: the CE refused the credential (HTTP %ld %s)%s", what, status,
				  reason, hint);
	return gg_err_set(err, GG_ECRED,
			  "%s: the CE refused your credential (HTTP %ld %s); is your identity "
			  "authorised at this site?",
			  what, status, reason);
}

/* An HTTP answer that is not the expected one, as an error: a refused
 * credential is GG_ECRED (exit 3), with what the proxy's VOMS attributes are;
 * anything else the CE's error (GG_EPROTO, exit 4: a redirect, a 400, a 404 on
 * a path every A-REX has). */
static int http_fail(const struct arc *ce, const struct gg_http_resp *r, const char *what,
		     struct gg_err *err)
{
	const char *reason = r->reason && r->reason[0] ? r->reason : "no reason given";
	if (r->status == 401 || r->status == 403)
		return gg_arc_refused(ce, r->status, r->reason, what, err);
	if (r->status == 404)
		return gg_err_set(err, GG_EPROTO,
				  "%s: not found on the CE (HTTP 404 %s): is the CE URL right?",
				  what, reason);
	return gg_err_set(err, GG_EPROTO, "%s: HTTP %ld %s", what, r->status, reason);
}

/* GET url, answered 200 with JSON (*j, for the caller to free); else what
 * failed, as http_fail says it. */
static int get_json(struct arc *ce, const char *url, const char *what, json_t **j,
		    struct gg_err *err)
{
	struct gg_http_resp r = {0};
	int rc = gg_http_request(ce->http, "GET", url, NULL, NULL, 0, JSON, 1, &r, err);
	if (rc == 0 && r.status != 200)
		rc = http_fail(ce, &r, what, err);
	if (rc == 0 && (rc = gg_http_resp_json(&r, j, err)) < 0)
		gg_err_prefix(err, "%s", url);
	gg_http_resp_clear(&r);
	return rc;
}

/* The same for the calls that look up one job or one of its files: there a 404
 * says that the job or the file does not exist (GG_ENOTFOUND). */
static int http_fail_job(const struct arc *ce, const struct gg_http_resp *r, const char *what,
			 struct gg_err *err)
{
	if (r->status == 404)
		return gg_err_set(err, GG_ENOTFOUND, "%s: not found on the CE (HTTP 404 %s)", what,
				  r->reason && r->reason[0] ? r->reason : "no reason given");
	return http_fail(ce, r, what, err);
}

static int use_version(struct arc *ce, const char *v)
{
	snprintf(ce->version, sizeof ce->version, "%s", v);
	ce->base = gg_strdup_printf("%s/rest/%s", ce->endpoint, ce->version);
	return ce->base ? 0 : -1;
}

int gg_arc_version(struct arc *ce, const char **version, struct gg_err *err)
{
	if (ce->base) {
		*version = ce->version;
		return 0;
	}
	/* What this CE said less than a day ago still holds. */
	json_t *cache = ce->cache_path ? gg_ce_cache_load(ce->cache_path) : NULL;
	json_t *known = json_object_get(cache, ce->endpoint);
	const char *kv = json_string_value(json_object_get(known, "rest"));
	json_int_t when = json_integer_value(json_object_get(known, "checked"));
	if (kv && (!strcmp(kv, "1.0") || !strcmp(kv, "1.1")) && time(NULL) - when < 86400 &&
	    use_version(ce, kv) == 0) {
		json_decref(cache);
		*version = ce->version;
		return 0;
	}
	char *url = gg_strdup_printf("%s/rest", ce->endpoint);
	json_t *j = NULL;
	int rc = get_json(ce, url, "asking the CE for its REST versions", &j, err);
	if (rc < 0)
		goto out;
	/* {"version":"1.0"} or {"version":["1.0","1.1"]}: take the newest we speak. */
	json_t *v = json_object_get(j, "version");
	const char *best = NULL;
	if (json_is_string(v)) {
		best = json_string_value(v);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach (v, i, e) {
			const char *s = json_string_value(e);
			if (s && (!strcmp(s, "1.0") || !strcmp(s, "1.1")) &&
			    (!best || strcmp(s, best) > 0))
				best = s;
		}
	}
	if (!best || (strcmp(best, "1.0") && strcmp(best, "1.1"))) {
		rc = gg_err_set(err, GG_EPROTO,
				"%s: the CE offers no REST version gridgpu speaks "
				"(1.0, 1.1)",
				url);
		goto out;
	}
	if (use_version(ce, best) < 0) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto out;
	}
	*version = ce->version;
	if (ce->cache_path && cache) {
		gg_json_set(cache, ce->endpoint,
			    gg_json_object("rest", gg_json_text(ce->version), "checked",
					   json_integer((json_int_t)time(NULL)), NULL));
		gg_ce_cache_save(ce->cache_path, cache);
	}
out:
	json_decref(cache);
	json_decref(j);
	free(url);
	return rc;
}

/* Build a URL under the REST base; asks for the version on first use. */
static char *rest_url(struct arc *ce, const char *path, struct gg_err *err)
{
	const char *v;
	if (gg_arc_version(ce, &v, err) < 0)
		return NULL;
	char *u = gg_strdup_printf("%s/%s", ce->base, path);
	if (!u)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	return u;
}

/* A value that may be a string or an array of strings, as a list. */
static void collect_strings(json_t *v, char ***out, size_t *n)
{
	if (json_is_string(v)) {
		char **nl = realloc(*out, (*n + 1) * sizeof *nl);
		if (nl) {
			*out = nl;
			if ((nl[*n] = strdup(json_string_value(v))))
				(*n)++;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach (v, i, e)
			collect_strings(e, out, n);
	}
}

static json_t *as_array(json_t *v)
{
	/* One element comes as an object, many as an array: iterate both alike. */
	if (json_is_array(v))
		return json_incref(v);
	json_t *a = json_array();
	if (v)
		json_array_append(a, v);
	return a;
}

static int arc_info(struct gg_ce *g, struct gg_ce_info *info, struct gg_err *err)
{
	struct arc *ce = g->impl;
	memset(info, 0, sizeof *info);
	char *url = rest_url(ce, "info?schema=glue2", err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	json_t *j = NULL;
	int rc = get_json(ce, url, "CE info", &j, err);
	if (rc < 0)
		goto out;
	json_t *svc = json_object_get(
		json_object_get(json_object_get(json_object_get(j, "Domains"), "AdminDomain"),
				"Services"),
		"ComputingService");
	json_t *svcs = as_array(svc);
	size_t i;
	json_t *s;
	json_array_foreach (svcs, i, s) {
		if (!info->name && json_is_string(json_object_get(s, "Name")))
			info->name = strdup(json_string_value(json_object_get(s, "Name")));
		json_t *shares = as_array(json_object_get(s, "ComputingShare"));
		size_t k;
		json_t *sh;
		json_array_foreach (shares, k, sh)
			collect_strings(json_object_get(sh, "Name"), &info->queues, &info->nqueues);
		json_decref(shares);
		json_t *mgrs = as_array(json_object_get(s, "ComputingManager"));
		json_t *m;
		json_array_foreach (mgrs, k, m) {
			json_t *aes = as_array(
				json_object_get(json_object_get(m, "ApplicationEnvironments"),
						"ApplicationEnvironment"));
			size_t a;
			json_t *ae;
			json_array_foreach (aes, a, ae)
				collect_strings(json_object_get(ae, "AppName"), &info->rtes,
						&info->nrtes);
			json_decref(aes);
		}
		json_decref(mgrs);
	}
	json_decref(svcs);
	info->rest_version = strdup(ce->version);
out:
	json_decref(j);
	free(url);
	return rc;
}

static int arc_offer(struct gg_ce *g, json_t **out, struct gg_err *err)
{
	struct arc *ce = g->impl;
	char *url = rest_url(ce, "info?schema=glue2", err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	json_t *j = NULL;
	int rc = get_json(ce, url, "CE info", &j, err);
	if (rc == 0 && (rc = gg_glue2_offer_json(j, out, err)) < 0)
		gg_err_prefix(err, "%s", url);
	json_decref(j);
	free(url);
	return rc;
}

/* The start both answers share: the body as a JSON object, its "job" member
 * (one object or an array of them) as *arr, and room for as many results
 * (zeroed) in *res; what: the answer, for the errors. */
struct parsed {
	json_t *j, *arr;
	struct gg_ce_result *res;
	size_t cnt;
};
static int parse_start(const char *body, size_t len, const char *what, struct parsed *p,
		       struct gg_err *err)
{
	*p = (struct parsed){0};
	struct gg_http_resp fake = {.body = (char *)body, .len = len};
	int rc = gg_http_resp_json(&fake, &p->j, err);
	if (rc < 0)
		return rc;
	json_t *jobs = json_object_get(p->j, "job");
	if (!json_is_object(p->j) || (jobs && !json_is_object(jobs) && !json_is_array(jobs))) {
		rc = gg_err_set(err, GG_EPROTO, "the CE's %s is not the expected JSON (%s)", what,
				json_is_object(p->j) ? "a malformed 'job' member"
						     : "not an object");
		json_decref(p->j);
		return rc;
	}
	p->arr = as_array(jobs);
	p->cnt = json_array_size(p->arr);
	if (!(p->res = calloc(p->cnt ? p->cnt : 1, sizeof *p->res))) {
		json_decref(p->arr);
		json_decref(p->j);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}

static void parse_end(struct parsed *p)
{
	json_decref(p->arr);
	json_decref(p->j);
}

/* One job of a jobs answer: its status code (strings in A-REX's JSON; numbers
 * taken too), id, reason and state. */
static void job_result(json_t *e, struct gg_ce_result *r)
{
	json_t *code = json_object_get(e, "status-code");
	long c = 200;
	if (json_is_string(code)) {
		char *end;
		c = strtol(json_string_value(code), &end, 10);
		if (*end || c < 0 || c > 999)
			c = 0; /* not a status code: "the CE did not say" */
	} else if (json_is_integer(code)) {
		json_int_t v = json_integer_value(code);
		c = v >= 0 && v <= 999 ? (long)v : 0;
	}
	r->code = (int)c;
	const char *id = json_string_value(json_object_get(e, "id"));
	const char *reason = json_string_value(json_object_get(e, "reason"));
	const char *state = json_string_value(json_object_get(e, "state"));
	r->id = id ? strdup(id) : NULL;
	r->reason = reason ? strdup(reason) : NULL;
	r->raw_state = state ? strdup(state) : NULL;
	r->state = r->code == 404 ? GG_CE_GONE : gg_arc_state(state);
}

int gg_arc_parse_jobs(const char *body, size_t len, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err)
{
	struct parsed p;
	*results = NULL;
	*n = 0;
	int rc = parse_start(body, len, "answer", &p, err);
	if (rc < 0)
		return rc;
	size_t i;
	json_t *e;
	json_array_foreach (p.arr, i, e) {
		if (!json_is_object(e)) {
			gg_ce_results_free(p.res, p.cnt);
			parse_end(&p);
			return gg_err_set(err, GG_EPROTO,
					  "the CE's answer lists a job that is not an object");
		}
		job_result(e, &p.res[i]);
	}
	parse_end(&p);
	*results = p.res;
	*n = p.cnt;
	return 0;
}

/* The body of a bulk call: {"job":[{"id":ID},...]} (NULL when out of memory:
 * never one without some of the ids). */
static char *bulk_body(const char *const *ids, size_t n)
{
	size_t lost = gg_json_losses();
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		gg_json_append(list, gg_json_object("id", gg_json_text(ids[i]), NULL));
	json_t *body = gg_json_object("job", list, NULL);
	char *text = gg_json_losses() == lost ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	return text;
}

/* POST jobs?action=ACTION with the ids; *r holds the answer of a call that succeeded
 * (200 or 201), what names it in errors. The caller clears *r either way. Status and
 * info are idempotent; kill and clean are harmless to repeat too. */
static int bulk_post(struct arc *ce, const char *action, const char *what, const char *const *ids,
		     size_t n, struct gg_http_resp *r, struct gg_err *err)
{
	char *text = bulk_body(ids, n);
	char *path = gg_strdup_printf("jobs?action=%s", action);
	if (!text || !path) {
		free(text);
		free(path);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	char *url = rest_url(ce, path, err);
	free(path);
	int rc = url ? gg_http_request(ce->http, "POST", url, JSON, text, strlen(text), JSON, 1, r,
				       err)
		     : (err ? err->code : GG_EFAIL);
	if (rc == 0 && r->status != 201 && r->status != 200)
		rc = http_fail(ce, r, what, err);
	free(url);
	free(text);
	return rc;
}

/* Results looked up by job id: pointers to them sorted by id (NULL when out
 * of memory), and a binary search; what is not found is NULL. */
static int by_id(const void *a, const void *b)
{
	const struct gg_ce_result *x = *(struct gg_ce_result *const *)a,
				  *y = *(struct gg_ce_result *const *)b;
	return strcmp(x->id, y->id);
}

static struct gg_ce_result **sorted_by_id(struct gg_ce_result *r, size_t n, size_t *ns)
{
	struct gg_ce_result **s = calloc(n ? n : 1, sizeof *s);
	*ns = 0;
	for (size_t i = 0; s && i < n; i++)
		if (r[i].id)
			s[(*ns)++] = &r[i];
	if (s)
		qsort(s, *ns, sizeof *s, by_id);
	return s;
}

static struct gg_ce_result *find_id(struct gg_ce_result **s, size_t ns, const char *id)
{
	struct gg_ce_result key = {.id = (char *)id}, *k = &key;
	struct gg_ce_result **hit = ns ? bsearch(&k, s, ns, sizeof *s, by_id) : NULL;
	return hit ? *hit : NULL;
}

/* The answers got (ngot, in the CE's order) in the order of ids, each
 * moved out of got (an id asked twice gets it once); an id the CE did not
 * answer for has state GG_CE_UNKNOWN and missing as reason (when not NULL).
 * NULL when out of memory. */
static struct gg_ce_result *in_order(struct gg_ce_result *got, size_t ngot, const char *const *ids,
				     size_t n, const char *missing)
{
	size_t ns;
	struct gg_ce_result **s = sorted_by_id(got, ngot, &ns);
	char *taken = calloc(ngot ? ngot : 1, 1);
	struct gg_ce_result *res = s && taken ? calloc(n ? n : 1, sizeof *res) : NULL;
	int ok = res != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		struct gg_ce_result *k = find_id(s, ns, ids[i]);
		if (k && !taken[k - got]) {
			taken[k - got] = 1;
			res[i] = *k; /* its strings moved here, the id copied */
			k->reason = k->raw_state = NULL;
		} else {
			res[i].state = GG_CE_UNKNOWN;
			ok = !missing || (res[i].reason = strdup(missing));
		}
		ok = ok && (res[i].id = strdup(ids[i]));
	}
	free(s);
	free(taken);
	if (!ok)
		gg_ce_results_free(res, n);
	return ok ? res : NULL;
}

/* POST jobs?action=ACTION with many ids; results in the order of ids. */
static int bulk(struct arc *ce, const char *action, const char *const *ids, size_t n,
		struct gg_ce_result **results, struct gg_err *err)
{
	*results = NULL;
	struct gg_http_resp r = {0};
	struct gg_ce_result *got = NULL;
	size_t ngot = 0;
	int rc = bulk_post(ce, action, action, ids, n, &r, err);
	if (rc == 0)
		rc = gg_arc_parse_jobs(r.body, r.len, &got, &ngot, err);
	if (rc < 0)
		goto out;
	struct gg_ce_result *res =
		in_order(got, ngot, ids, n, "the CE did not answer for this job");
	if (!res) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto out;
	}
	*results = res;
out:
	gg_ce_results_free(got, ngot);
	gg_http_resp_clear(&r);
	return rc;
}

static int arc_list(struct gg_ce *g, struct gg_ce_result **results, size_t *n, struct gg_err *err);

static int arc_status(struct gg_ce *g, const char *const *ids, size_t n,
		      struct gg_ce_result **results, struct gg_err *err)
{
	struct arc *ce = g->impl;
	/* ?action=status reads the info provider's per-job file, which lags by up
	 * to its period; GET jobs?state= is computed live. Use the live list and
	 * keep the bulk answer only for the ids the list does not have. */
	struct gg_ce_result *live = NULL;
	size_t nlive = 0;
	int rc = arc_list(g, &live, &nlive, err);
	if (rc < 0)
		return rc;
	size_t ns;
	struct gg_ce_result **s = sorted_by_id(live, nlive, &ns);
	struct gg_ce_result *res = s ? calloc(n ? n : 1, sizeof *res) : NULL;
	if (!res) {
		free(s);
		gg_ce_results_free(live, nlive);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct gg_ce_result *k = find_id(s, ns, ids[i]);
		res[i].id = strdup(ids[i]);
		res[i].state = k ? k->state : GG_CE_GONE;
		res[i].code = k ? 200 : 404;
		if (k && k->raw_state)
			res[i].raw_state = strdup(k->raw_state);
	}
	free(s);
	gg_ce_results_free(live, nlive);
	/* Ask the bulk status (the per-job record) about two kinds of jobs: those
	 * the live list calls FAILED, since it calls killed jobs FAILED too, and
	 * those it does not list at all, since a job moving between the CE's
	 * state directories can be missing from one listing. Only a 404 from the
	 * bulk status means the job is gone. */
	const char **ask = calloc(n ? n : 1, sizeof *ask);
	size_t *at = calloc(n ? n : 1, sizeof *at), na = 0;
	if (!ask || !at) {
		free(ask);
		free(at);
		gg_ce_results_free(res, n);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		if (res[i].state == GG_CE_FAILED || res[i].state == GG_CE_GONE) {
			at[na] = i;
			ask[na++] = ids[i];
		}
	struct gg_ce_result *b = NULL;
	struct gg_err e2 = {0};
	if (na && bulk(ce, "status", ask, na, &b, &e2) < 0)
		na = 0; /* the live list's word stands */
	for (size_t k = 0; k < na; k++) {
		struct gg_ce_result *r = &res[at[k]]; /* b[k] answers ask[k] */
		if (r->state == GG_CE_FAILED && b[k].state == GG_CE_KILLED) {
			r->state = GG_CE_KILLED;
		} else if (r->state == GG_CE_GONE && b[k].code != 404 &&
			   b[k].state != GG_CE_UNKNOWN) {
			r->state = b[k].state;
			r->code = b[k].code;
			free(r->raw_state);
			r->raw_state = b[k].raw_state;
			b[k].raw_state = NULL;
		}
	}
	gg_ce_results_free(b, na);
	free(ask);
	free(at);
	*results = res;
	return 0;
}

static int arc_kill(struct gg_ce *g, const char *const *ids, size_t n,
		    struct gg_ce_result **results, struct gg_err *err)
{
	struct arc *ce = g->impl;
	return bulk(ce, "kill", ids, n, results, err);
}

static int arc_clean(struct gg_ce *g, const char *const *ids, size_t n,
		     struct gg_ce_result **results, struct gg_err *err)
{
	struct arc *ce = g->impl;
	return bulk(ce, "clean", ids, n, results, err);
}

static int arc_list(struct gg_ce *g, struct gg_ce_result **results, size_t *n, struct gg_err *err)
{
	struct arc *ce = g->impl;
	char *url = rest_url(ce,
			     "jobs?state=ACCEPTING,ACCEPTED,PREPARING,PREPARED,SUBMITTING,"
			     "QUEUING,RUNNING,HELD,EXITINGLRMS,OTHER,EXECUTED,FINISHING,"
			     "FINISHED,FAILED,KILLING,KILLED,WIPED",
			     err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	struct gg_http_resp r = {0};
	int rc = gg_http_request(ce->http, "GET", url, NULL, NULL, 0, JSON, 1, &r, err);
	if (rc == 0 && r.status != 200)
		rc = http_fail(ce, &r, "listing jobs", err);
	if (rc == 0)
		rc = gg_arc_parse_jobs(r.body, r.len, results, n, err);
	gg_http_resp_clear(&r);
	free(url);
	return rc;
}

static int arc_job_names(struct gg_ce *g, const char *const *ids, size_t n, char **names,
			 struct gg_err *err)
{
	struct arc *ce = g->impl;
	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	struct gg_http_resp r = {0};
	json_t *j = NULL;
	int rc = bulk_post(ce, "info", "asking the CE about jobs", ids, n, &r, err);
	if (rc == 0)
		rc = gg_http_resp_json(&r, &j, err);
	if (rc == 0) {
		json_t *arr = as_array(json_object_get(j, "job"));
		size_t i;
		json_t *e;
		json_array_foreach (arr, i, e) {
			const char *id = json_string_value(json_object_get(e, "id"));
			json_t *act = json_object_get(json_object_get(e, "info_document"),
						      "ComputingActivity");
			const char *name = json_string_value(json_object_get(act, "Name"));
			for (size_t k = 0; id && name && k < n; k++)
				if (!names[k] && strcmp(ids[k], id) == 0)
					names[k] = strdup(name);
		}
		json_decref(arr);
	}
	json_decref(j);
	gg_http_resp_clear(&r);
	return rc;
}

/* The batch system's view of a job, from the GLUE2 State list of its info
 * document: ["nordugrid:INLRMS:Q","file:inlrms","bes:Running",
 * "arcrest:QUEUING","emies:processing-queued"] for a job the LRMS holds in its
 * queue, INLRMS:R / arcrest:RUNNING once it runs (A-REX's infoprovider, as
 * ARC1ClusterInfo.pm writes it). The REST live list says RUNNING for both. */
static void info_state(json_t *states, struct gg_ce_result *res)
{
	json_t *arr = as_array(states);
	const char *ng = NULL, *rest = NULL, *emies = NULL;
	size_t i;
	json_t *e;
	json_array_foreach (arr, i, e) {
		const char *s = json_string_value(e);
		if (!s)
			continue;
		if (!ng && !strncmp(s, "nordugrid:", 10))
			ng = s + 10;
		else if (!rest && !strncmp(s, "arcrest:", 8))
			rest = s + 8;
		else if (!emies && !strncmp(s, "emies:", 6))
			emies = s + 6;
	}
	enum gg_ce_state st = gg_arc_state(rest);
	if (st == GG_CE_UNKNOWN && ng) {
		/* nordugrid:INLRMS:Q (queued), :S (suspended), :R/:E (running) */
		if (!strcmp(ng, "INLRMS:Q") || !strcmp(ng, "INLRMS:S"))
			st = GG_CE_QUEUED;
		else if (!strncmp(ng, "INLRMS", 6))
			st = GG_CE_RUNNING;
	}
	if (st == GG_CE_UNKNOWN && emies && !strcmp(emies, "processing-queued"))
		st = GG_CE_QUEUED;
	res->state = st;
	const char *raw = ng ? ng : rest ? rest : emies;
	res->raw_state = raw ? strdup(raw) : NULL;
	json_decref(arr);
}

/* The batch system's id of the job (GLUE2 LocalIDFromManager: Slurm's job id)
 * and, after a newline, what the batch system said of it where A-REX passes
 * that on (an OtherMessages entry "LRMS: ..."; its Slurm module puts the job's
 * name there instead). NULL when neither is known. */
static char *lrms_said(json_t *act)
{
	const char *local = json_string_value(json_object_get(act, "LocalIDFromManager"));
	const char *msg = NULL;
	json_t *arr = as_array(json_object_get(act, "OtherMessages")), *e;
	size_t i;
	json_array_foreach (arr, i, e) {
		const char *s = json_string_value(e);
		if (!msg && s && !strncmp(s, "LRMS:", 5))
			msg = s;
	}
	char *out = local || msg ? gg_strdup_printf("%s%s%s", local ? local : "", msg ? "\n" : "",
						    msg ? msg : "")
				 : NULL;
	json_decref(arr);
	return out;
}

int gg_arc_parse_info(const char *body, size_t len, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err)
{
	struct parsed p;
	*results = NULL;
	*n = 0;
	int rc = parse_start(body, len, "job info", &p, err);
	if (rc < 0)
		return rc;
	size_t i, k = 0;
	json_t *e;
	json_array_foreach (p.arr, i, e) {
		const char *id = json_string_value(json_object_get(e, "id"));
		json_t *act =
			json_object_get(json_object_get(e, "info_document"), "ComputingActivity");
		if (!id || !json_is_object(act))
			continue; /* "Job not found" and the like: nothing to say */
		p.res[k].id = strdup(id);
		p.res[k].code = 200;
		info_state(json_object_get(act, "State"), &p.res[k]);
		p.res[k].reason = lrms_said(act);
		k++;
	}
	parse_end(&p);
	*results = p.res;
	*n = k;
	return 0;
}

static int info_ask(void *ud, const char *const *ids, size_t n, struct gg_ce_result **results,
		    struct gg_err *err);

/* The time of job id's info document (gg_arc_info_ops.run): asked in XML,
 * whose attributes A-REX keeps (its JSON answer blanks them). */
static int info_run(void *ud, const char *id, char **time, struct gg_err *err)
{
	struct arc *ce = ud;
	struct gg_http_resp r = {0};
	char *text = bulk_body(&id, 1), t[GG_ARC_TIME_MAX];
	char *url = text ? rest_url(ce, "jobs?action=info", err) : NULL;
	int rc = !text ? gg_err_set(err, GG_ENOMEM, "out of memory")
		 : url ? gg_http_request(ce->http, "POST", url, JSON, text, strlen(text),
					 "text/xml", 1, &r, err)
		       : err->code;
	if (rc == 0 && r.status != 201 && r.status != 200)
		rc = http_fail(ce, &r, "asking the CE about a job", err);
	*time = rc == 0 && gg_arc_info_time(r.body, r.len, t) ? strdup(t) : NULL;
	gg_http_resp_clear(&r);
	free(url);
	free(text);
	return rc;
}

/* Where the CE's info documents are remembered: beside the REST versions, a
 * file per CE. NULL when nothing is kept. */
static char *info_memory(const struct arc *ce)
{
	char hex[GG_SHA256_HEX];
	const char *slash = ce->cache_path ? strrchr(ce->cache_path, '/') : NULL;
	if (!slash || gg_sha256_hex(ce->endpoint, strlen(ce->endpoint), hex, NULL) < 0)
		return NULL;
	return gg_strdup_printf("%.*s/ce-info-%.16s.json", (int)(slash - ce->cache_path),
				ce->cache_path, hex);
}

/* The LRMS's view of jobs the live list calls RUNNING (INLRMS): queued or
 * running, from their info documents, remembered from one run of A-REX's
 * infoprovider to the next (arcinfo.c). The documents lag by up to the
 * infoprovider's period. */
static int arc_lrms_status(struct gg_ce *g, const char *const *ids, size_t n,
			   struct gg_ce_result **results, struct gg_err *err)
{
	char *mem = info_memory(g->impl);
	struct gg_arc_info_ops ops = {.run = info_run, .ask = info_ask, .ud = g->impl};
	int rc = gg_arc_info_asked(mem, ids, n, &ops, results, err);
	free(mem);
	return rc;
}

/* One POST jobs?action=info (gg_arc_info_ops.ask). */
static int info_ask(void *ud, const char *const *ids, size_t n, struct gg_ce_result **results,
		    struct gg_err *err)
{
	struct arc *ce = ud;
	*results = NULL;
	struct gg_http_resp r = {0};
	struct gg_ce_result *got = NULL, *res = NULL;
	size_t ngot = 0;
	int rc = bulk_post(ce, "info", "asking the CE about jobs", ids, n, &r, err);
	if (rc == 0)
		rc = gg_arc_parse_info(r.body, r.len, &got, &ngot, err);
	if (rc < 0)
		goto out;
	if (!(res = in_order(got, ngot, ids, n, NULL))) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto out;
	}
	*results = res;
out:
	gg_ce_results_free(got, ngot);
	gg_http_resp_clear(&r);
	return rc;
}

static int valid_job_id(const char *id);

static int arc_submit(struct gg_ce *g, const char *description, char **id, struct gg_err *err)
{
	struct arc *ce = g->impl;
	ce->submit_unsent = 1; /* until the POST may have been sent */
	char *url = rest_url(ce, "jobs?action=new", err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	struct gg_http_resp r = {0};
	struct gg_ce_result *res = NULL;
	size_t n = 0;
	/* Not idempotent: a repeated submit makes a second job. */
	int rc = gg_http_request(ce->http, "POST", url, "application/xrsl", description,
				 strlen(description), JSON, 0, &r, err);
	ce->submit_unsent = rc < 0 && gg_http_unsent(ce->http);
	if (rc < 0)
		goto out;
	if (r.status != 201 && r.status != 200) {
		rc = http_fail(ce, &r, "submitting the job", err);
		goto out;
	}
	if ((rc = gg_arc_parse_jobs(r.body, r.len, &res, &n, err)) < 0)
		goto out;
	if (n != 1) {
		rc = gg_err_set(err, GG_EPROTO, "the CE answered the submission with %zu jobs", n);
		goto out;
	}
	if (res[0].code != 201 || !res[0].id || !res[0].id[0]) {
		/* The CE's own words: "nordugrid:xrsl parsing error: ..." */
		char reason[512];
		snprintf(reason, sizeof reason, "%s", res[0].reason ? res[0].reason : "no reason");
		for (char *p = reason; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		rc = gg_err_set(err, GG_EJOB, "the CE refused the job: %s (code %d)", reason,
				res[0].code);
		goto out;
	}
	if (!valid_job_id(res[0].id)) {
		/* The job may exist under that name: the caller keeps what it needs
		 * to adopt it (GG_EPROTO). */
		rc = gg_err_set(err, GG_EPROTO, "the CE answered a malformed job id");
		goto out;
	}
	*id = res[0].id;
	res[0].id = NULL;
out:
	gg_ce_results_free(res, n);
	gg_http_resp_clear(&r);
	free(url);
	return rc;
}

/* The body of several jobs in one request: a multi-xRSL "+(&...)(&...)" (A-REX
 * sniffs the '+'); NULL when out of memory or a description is not xRSL. */
static char *multi_body(const char *const *descs, size_t n, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	int ok = fputc('+', f) != EOF;
	for (size_t i = 0; ok && i < n; i++)
		ok = descs[i] && descs[i][0] == '&' && fprintf(f, "(%s)", descs[i]) > 0;
	if (fclose(f) != 0 || !ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Several jobs in one POST; A-REX answers each in the order given. */
static int arc_submit_many(struct gg_ce *g, const char *const *descs, size_t n,
			   struct gg_ce_result **results, struct gg_err *err)
{
	struct arc *ce = g->impl;
	*results = NULL;
	ce->submit_unsent = 1; /* until the POST may have been sent */
	size_t len = 0;
	char *body = multi_body(descs, n, &len);
	char *url = body ? rest_url(ce, "jobs?action=new", err) : NULL;
	if (!url) {
		free(body);
		return body ? (err ? err->code : GG_EFAIL)
			    : gg_err_set(err, GG_EUSAGE, "the jobs' descriptions are not xRSL");
	}
	struct gg_http_resp r = {0};
	struct gg_ce_result *res = NULL;
	size_t got = 0;
	/* Not idempotent: a repeated submit makes the jobs again. */
	int rc = gg_http_request(ce->http, "POST", url, "application/xrsl", body, len, JSON, 0, &r,
				 err);
	ce->submit_unsent = rc < 0 && gg_http_unsent(ce->http);
	if (rc == 0 && r.status != 201 && r.status != 200)
		rc = http_fail(ce, &r, "submitting the jobs", err);
	if (rc == 0)
		rc = gg_arc_parse_jobs(r.body, r.len, &res, &got, err);
	if (rc == 0 && got != n) {
		gg_ce_results_free(res, got);
		rc = gg_err_set(err, GG_EPROTO, "the CE answered %zu jobs for the %zu sent", got,
				n);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (res[i].id && !valid_job_id(res[i].id)) { /* made, under no usable name */
			free(res[i].id);
			res[i].id = NULL;
		}
	if (rc == 0)
		*results = res;
	gg_http_resp_clear(&r);
	free(url);
	free(body);
	return rc;
}

static int valid_job_id(const char *id)
{
	if (!id || !*id)
		return 0;
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
			return 0;
	return 1;
}

/* Percent-escape each segment of a relative path with libcurl; keep the '/'. */
static char *escape_path(const char *name)
{
	char *out = calloc(1, 1);
	size_t len = 0;
	const char *p = name;
	while (out) {
		size_t seg = strcspn(p, "/");
		char *e = curl_easy_escape(NULL, p, (int)seg);
		if (!e) {
			free(out);
			return NULL;
		}
		size_t el = strlen(e);
		char *no = realloc(out, len + el + 2);
		if (!no) {
			curl_free(e);
			free(out);
			return NULL;
		}
		out = no;
		memcpy(out + len, e, el);
		len += el;
		curl_free(e);
		if (!p[seg])
			break;
		out[len++] = '/';
		p += seg + 1;
	}
	if (out)
		out[len] = '\0';
	return out;
}

static char *session_url(struct arc *ce, const char *id, const char *name, struct gg_err *err)
{
	if (!valid_job_id(id)) {
		gg_err_set(err, GG_EPROTO, "the CE's job id '%s' is malformed", id ? id : "");
		return NULL;
	}
	char *esc = NULL;
	if (name && !(esc = escape_path(name))) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	char *path = gg_strdup_printf("jobs/%s/session/%s", id, esc ? esc : "");
	free(esc);
	char *u = path ? rest_url(ce, path, err) : NULL;
	free(path);
	return u;
}

/* One exchange of a file in a job's session directory. */
struct xfer {
	enum { X_PUT, X_PUT_FILE, X_GET, X_GET_FILE } kind;
	const void *data; /* X_PUT */
	size_t len;
	const char *path; /* X_PUT_FILE, X_GET_FILE */
	gg_http_progress_fn progress;
	void *ud;
};

/* r: the answer, for the caller to clear; NULL: not wanted. */
static int session_xfer(struct gg_ce *g, const char *id, const char *name, const struct xfer *x,
			struct gg_http_resp *r, struct gg_err *err)
{
	struct gg_http_resp own = {0};
	if (!r)
		r = &own;
	struct arc *ce = g->impl;
	char *url = session_url(ce, id, name, err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	int rc, put = x->kind == X_PUT || x->kind == X_PUT_FILE;
	switch (x->kind) {
	case X_PUT: /* PUT of the same bytes is idempotent. */
		rc = gg_http_request(ce->http, "PUT", url, "application/octet-stream", x->data,
				     x->len, NULL, 1, r, err);
		break;
	case X_PUT_FILE:
		rc = gg_http_put_file(ce->http, url, x->path, x->progress, x->ud, r, err);
		break;
	case X_GET:
		rc = gg_http_request(ce->http, "GET", url, NULL, NULL, 0,
				     "application/octet-stream", 1, r, err);
		break;
	default: rc = gg_http_get_file(ce->http, url, x->path, 0644, x->progress, x->ud, r, err);
	}
	if (rc == 0 && (put ? r->status < 200 || r->status >= 300 : r->status != 200))
		rc = http_fail_job(ce, r, name, err);
	gg_http_resp_clear(&own);
	free(url);
	return rc;
}

static int arc_put(struct gg_ce *g, const char *id, const char *name, const void *data, size_t len,
		   struct gg_err *err)
{
	struct xfer x = {.kind = X_PUT, .data = data, .len = len};
	return session_xfer(g, id, name, &x, NULL, err);
}

static int arc_put_file(struct gg_ce *g, const char *id, const char *name, const char *path,
			gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	struct xfer x = {.kind = X_PUT_FILE, .path = path, .progress = progress, .ud = ud};
	return session_xfer(g, id, name, &x, NULL, err);
}

static int arc_get(struct gg_ce *g, const char *id, const char *name, size_t max, char **data,
		   size_t *len, struct gg_err *err)
{
	struct gg_http_resp r = {0};
	struct xfer x = {.kind = X_GET};
	int rc = session_xfer(g, id, name, &x, &r, err);
	if (rc == 0 && r.len > max)
		rc = gg_err_set(err, GG_EPROTO, "%s: larger than %zu bytes", name, max);
	if (rc == 0) {
		*data = r.body;
		if (len)
			*len = r.len;
		r.body = NULL;
	}
	gg_http_resp_clear(&r);
	return rc;
}

static int arc_get_file(struct gg_ce *g, const char *id, const char *name, const char *path,
			gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	struct xfer x = {.kind = X_GET_FILE, .path = path, .progress = progress, .ud = ud};
	return session_xfer(g, id, name, &x, NULL, err);
}

static int arc_ls(struct gg_ce *g, const char *id, char ***names, size_t *n, struct gg_err *err)
{
	struct arc *ce = g->impl;
	*names = NULL;
	*n = 0;
	char *url = session_url(ce, id, NULL, err);
	if (!url)
		return err ? err->code : GG_EFAIL;
	struct gg_http_resp r = {0};
	json_t *j = NULL;
	int rc = gg_http_request(ce->http, "GET", url, NULL, NULL, 0, JSON, 1, &r, err);
	if (rc == 0 && r.status != 200)
		rc = http_fail_job(ce, &r, "listing the session directory", err);
	if (rc == 0)
		rc = gg_http_resp_json(&r, &j, err);
	if (rc == 0)
		collect_strings(json_object_get(j, "file"), names, n);
	json_decref(j);
	gg_http_resp_clear(&r);
	free(url);
	return rc;
}

static int arc_diagnose(struct gg_ce *g, const char *id, const char *item, char **text,
			struct gg_err *err)
{
	struct arc *ce = g->impl;
	if (!valid_job_id(id))
		return gg_err_set(err, GG_EPROTO, "the CE's job id '%s' is malformed",
				  id ? id : "");
	char *path = gg_strdup_printf("jobs/%s/diagnose/%s", id, item);
	char *url = path ? rest_url(ce, path, err) : NULL;
	free(path);
	if (!url)
		return err ? err->code : GG_EFAIL;
	struct gg_http_resp r = {0};
	int rc = gg_http_request(ce->http, "GET", url, NULL, NULL, 0, "text/plain", 1, &r, err);
	if (rc == 0 && r.status != 200)
		rc = http_fail_job(ce, &r, item, err);
	if (rc == 0) {
		*text = r.body;
		r.body = NULL;
	}
	gg_http_resp_clear(&r);
	free(url);
	return rc;
}

const struct gg_ce_ops gg_ce_arc_rest = {
	.name = "arc-rest",
	.accepts = arc_accepts,
	.open = arc_open,
	.close = arc_close,
	.version = arc_version,
	.info = arc_info,
	.offer = arc_offer,
	.delegate = arc_delegate,
	.submit = arc_submit,
	.submit_many = arc_submit_many,
	.submit_unsent = arc_submit_unsent,
	.status = arc_status,
	.lrms_status = arc_lrms_status,
	.kill = arc_kill,
	.clean = arc_clean,
	.list = arc_list,
	.job_names = arc_job_names,
	.put = arc_put,
	.put_file = arc_put_file,
	.get = arc_get,
	.get_file = arc_get_file,
	.ls = arc_ls,
	.diagnose = arc_diagnose,
	.http = arc_http,
	.clone = arc_clone,
};
