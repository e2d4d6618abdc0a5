/* X.509 delegation to an ARC CE: POST delegations?action=new gives a CSR, which
 * is signed with the user's proxy (lib/cred) and PUT back. A delegation the CE
 * still holds and that lasts long enough is reused; one that is too short is
 * renewed under the same id. Known delegations are remembered in a small JSON
 * cache so that a command needs no extra round trip to find them. */
#include "ce/arc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cred/cred.h"

/* The last path segment of A-REX's Location ("...delegations?action=new/ID"). */
static char *location_id(const char *loc)
{
	if (!loc)
		return NULL;
	const char *slash = strrchr(loc, '/');
	const char *id = slash ? slash + 1 : loc;
	size_t n = strcspn(id, "?# \r\n");
	if (n == 0 || n > 128)
		return NULL;
	char *s = strndup(id, n);
	return s;
}

static int put_signed(struct arc *ce, const struct gg_cred *proxy, const char *id,
		      const struct gg_http_resp *csr, struct gg_err *err)
{
	char *chain = NULL;
	size_t chain_len = 0;
	int rc = gg_proxy_sign_csr(proxy, csr->body, csr->len, 0, &chain, &chain_len, err);
	if (rc < 0)
		return gg_err_prefix(err, "signing the CE's delegation request");
	char *path = gg_strdup_printf("delegations/%s", id);
	const char *v;
	rc = gg_arc_version(ce, &v, err);
	char *url =
		rc == 0 && path ? gg_strdup_printf("%s/rest/%s/%s", ce->endpoint, v, path) : NULL;
	struct gg_http_resp r = {0};
	if (rc == 0 && !url)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = gg_http_request(ce->http, "PUT", url, "application/x-pem-file", chain,
				     chain_len, NULL, 1, &r, err);
	if (rc == 0 && r.status != 200 && r.status != 201 && r.status != 204)
		rc = r.status == 401 || r.status == 403
			     ? gg_arc_refused(ce, r.status, r.reason, "delegating", err)
			     : gg_err_set(err, GG_EPROTO,
					  "the CE refused the delegated credential: HTTP %ld %s",
					  r.status, r.reason ? r.reason : "");
	gg_http_resp_clear(&r);
	free(url);
	free(path);
	free(chain);
	return rc;
}

/* POST a delegation action; the body of the answer is a PEM CSR. */
static int post_csr(struct arc *ce, const char *path, struct gg_http_resp *r, struct gg_err *err)
{
	const char *v;
	int rc = gg_arc_version(ce, &v, err);
	if (rc < 0)
		return rc;
	char *url = gg_strdup_printf("%s/rest/%s/%s", ce->endpoint, v, path);
	if (!url)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	rc = gg_http_request(ce->http, "POST", url, NULL, "", 0, NULL, 0, r, err);
	free(url);
	if (rc < 0)
		return rc;
	if (r->status != 201 && r->status != 200)
		return r->status == 401 || r->status == 403
			       ? gg_arc_refused(ce, r->status, r->reason,
						"asking the CE for a delegation", err)
			       : gg_err_set(err, GG_EPROTO,
					    "asking the CE for a delegation: HTTP %ld %s",
					    r->status, r->reason ? r->reason : "");
	if (!strstr(r->body, "-----BEGIN CERTIFICATE REQUEST-----"))
		return gg_err_set(err, GG_EPROTO,
				  "the CE's delegation answer holds no certificate "
				  "request");
	return 0;
}

/* Ids of the delegations the CE holds for us. */
static int ce_has(struct arc *ce, const char *id, int *has, struct gg_err *err)
{
	*has = 0;
	const char *v;
	int rc = gg_arc_version(ce, &v, err);
	if (rc < 0)
		return rc;
	char *url = gg_strdup_printf("%s/rest/%s/delegations", ce->endpoint, v);
	struct gg_http_resp r = {0};
	json_t *j = NULL;
	rc = url ? gg_http_request(ce->http, "GET", url, NULL, NULL, 0, "application/json", 1, &r,
				   err)
		 : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && r.status == 200 && gg_http_resp_json(&r, &j, err) == 0) {
		json_t *d = json_object_get(j, "delegation");
		json_t *arr = json_is_array(d) ? json_incref(d) : json_array();
		if (json_is_object(d))
			json_array_append(arr, d);
		size_t i;
		json_t *e;
		json_array_foreach (arr, i, e) {
			const char *s = json_string_value(json_object_get(e, "id"));
			if (s && strcmp(s, id) == 0)
				*has = 1;
		}
		json_decref(arr);
	}
	json_decref(j);
	gg_http_resp_clear(&r);
	free(url);
	return rc;
}

int arc_delegate(struct gg_ce *g, const char *proxy_path, int64_t min_left, const char *cache_path,
		 char **id, struct gg_err *err)
{
	struct arc *ce = g->impl;
	struct gg_cred *proxy = NULL;
	struct gg_proxy_info pi = {0};
	int rc = gg_proxy_load(proxy_path, &proxy, err);
	if (rc < 0)
		return rc;
	time_t now = time(NULL);
	if ((rc = gg_proxy_info_get(proxy, now, &pi, err)) < 0)
		goto out;
	char *key = gg_strdup_printf("%s %s", ce->endpoint, pi.identity);
	json_t *cache = gg_ce_cache_load(cache_path);
	json_t *ent = key ? json_object_get(cache, key) : NULL;
	const char *cached = json_string_value(json_object_get(ent, "id"));
	json_int_t end = json_integer_value(json_object_get(ent, "end"));
	struct gg_http_resp r = {0};
	char *newid = NULL;
	int has = 0;
	if (cached && (rc = ce_has(ce, cached, &has, err)) < 0)
		goto done;
	if (cached && has && end - (json_int_t)now >= min_left && end <= (json_int_t)pi.end) {
		newid = strdup(cached); /* reuse */
	} else if (cached && has) {
		/* renew under the same id: the job descriptions that name it keep working */
		char *path = gg_strdup_printf("delegations/%s?action=renew", cached);
		rc = path ? post_csr(ce, path, &r, err)
			  : gg_err_set(err, GG_ENOMEM, "out of memory");
		free(path);
		if (rc == 0 && (rc = put_signed(ce, proxy, cached, &r, err)) == 0)
			newid = strdup(cached);
	} else {
		if ((rc = post_csr(ce, "delegations?action=new", &r, err)) < 0)
			goto done;
		newid = location_id(r.location);
		if (!newid) {
			rc = gg_err_set(err, GG_EPROTO,
					"the CE's delegation answer has no usable "
					"Location header");
			goto done;
		}
		rc = put_signed(ce, proxy, newid, &r, err);
	}
	if (rc == 0 && !newid)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && cache_path && key) {
		gg_json_set(cache, key,
			    gg_json_object("id", gg_json_text(newid), "end",
					   json_integer((json_int_t)pi.end), NULL));
		gg_ce_cache_save(cache_path, cache);
	}
done:
	if (rc == 0)
		*id = newid;
	else
		free(newid);
	gg_http_resp_clear(&r);
	json_decref(cache);
	free(key);
out:
	gg_proxy_info_clear(&pi);
	gg_cred_free(proxy);
	return rc;
}
