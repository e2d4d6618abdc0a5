/* The credential a CE call is made with: the user's proxy or a bearer token,
 * found where the grid tools look, and checked to last long enough. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cred/cred.h"

void gg_auth_clear(struct gg_auth *a)
{
	free(a->proxy_path);
	gg_token_free(a->token);
	gg_tsource_free(a->tsource);
	free(a->ca_dir);
	memset(a, 0, sizeof *a);
}

/* The site's token source: the first token now (what is wrong with the
 * source shows before anything is submitted), fresh ones before each call. */
static int source_auth(struct gg_auth *a, struct gg_err *err)
{
	const struct gg_token *t = NULL;
	int rc = gg_tsource_token(a->tsource, &t, err);
	if (rc < 0) {
		if (err)
			err->code = GG_ECRED;
		return GG_ECRED;
	}
	if (gg_token_new(t->value, t->source, &a->token, err) < 0)
		return GG_ECRED;
	a->kind = "token";
	return 0;
}

static int token_auth(const struct gg_site *site, struct gg_auth *a, int64_t need_left,
		      struct gg_err *err)
{
	char d[32];
	int rc = gg_tsource_new(site, &a->tsource, err);
	if (rc < 0)
		return rc;
	if (a->tsource)
		return source_auth(a, err);
	rc = gg_token_find(&a->token, err);
	if (rc < 0) {
		if (rc == GG_ENOTFOUND)
			gg_err_set(err, GG_ECRED,
				   "no bearer token found (BEARER_TOKEN, BEARER_TOKEN_FILE, "
				   "$XDG_RUNTIME_DIR/bt_u<uid>, /tmp/bt_u<uid>)");
		if (err)
			err->code = GG_ECRED;
		return GG_ECRED;
	}
	if (a->token->exp) {
		int64_t left = a->token->exp - (int64_t)time(NULL);
		if (left <= 0)
			return gg_err_set(err, GG_ECRED,
					  "the bearer token from %s has expired: get a new one",
					  a->token->source);
		if (left < need_left)
			return gg_err_set(err, GG_ECRED,
					  "the bearer token from %s expires in %s, before the "
					  "walltime ends: get a longer one",
					  a->token->source, gg_duration_format(left, d, sizeof d));
	}
	a->kind = "token";
	return 0;
}

/* The proxy's time left, or a negative error (GG_ECRED: none, unreadable). */
static int proxy_left(const char *path, int64_t *left, struct gg_err *err)
{
	struct gg_cred *c = NULL;
	if (gg_proxy_load(path, &c, err) < 0) {
		if (access(path, F_OK) < 0)
			gg_err_set(err, GG_ECRED, "no proxy at '%s': run 'gridgpu proxy init'",
				   path);
		if (err)
			err->code = GG_ECRED;
		return GG_ECRED;
	}
	struct gg_proxy_info pi;
	int rc = gg_proxy_info_get(c, 0, &pi, err);
	gg_cred_free(c);
	if (rc < 0)
		return rc;
	*left = pi.time_left;
	gg_proxy_info_clear(&pi);
	return 0;
}

static int proxy_auth(struct gg_auth *a, int64_t need_left, struct gg_err *err)
{
	int64_t left = 0;
	int rc = gg_proxy_path(NULL, &a->proxy_path, err);
	if (rc < 0 || (rc = proxy_left(a->proxy_path, &left, err)) < 0)
		return rc;
	if (left <= 0)
		return gg_err_set(err, GG_ECRED,
				  "the proxy '%s' has expired: run 'gridgpu proxy init'",
				  a->proxy_path);
	if (left < need_left) {
		char d[32], w[32], v[32];
		/* the walltime plus an hour of margin, rounded up to hours */
		int64_t want = ((need_left + 3600 + 3599) / 3600) * 3600;
		return gg_err_set(err, GG_ECRED,
				  "the proxy has %s left, less than the %s asked for: run 'gridgpu "
				  "proxy init --valid %s'",
				  gg_duration_format(left, d, sizeof d),
				  gg_duration_format(need_left, w, sizeof w),
				  gg_duration_format(want, v, sizeof v));
	}
	a->kind = "proxy";
	return 0;
}

int gg_auth_add_proxy(struct gg_auth *a, int64_t need_left, struct gg_err *err)
{
	if (a->proxy_path)
		return 0;
	const char *kind = a->kind;
	int rc = proxy_auth(a, need_left, err);
	a->kind = kind;
	if (rc < 0) {
		free(a->proxy_path);
		a->proxy_path = NULL;
	}
	return rc;
}

int gg_auth_find(const struct gg_site *site, const char *want, int64_t need_left, struct gg_auth *a,
		 struct gg_err *err)
{
	memset(a, 0, sizeof *a);
	/* The proxy's key or the token is about to be in this process's memory. */
	gg_cred_disable_core_dumps(NULL);
	const char *kind = want ? want : gg_site_auth_kind(site);
	int rc = gg_cred_ca_dir(site ? site->ca_dir : NULL, &a->ca_dir, err);
	if (rc < 0)
		return rc;
	/* a slurm+ssh site: the user's ssh key reaches its login node */
	if (!strcmp(gg_site_auth_kind(site), "ssh")) {
		a->kind = "ssh";
		return 0;
	}
	return strcmp(kind, "token") == 0 ? token_auth(site, a, need_left, err)
					  : proxy_auth(a, need_left, err);
}
