/* The engine's context: sites, credentials and CEs for records; reporting;
 * records grouped for bulk calls; the SSH configuration of live sessions. */
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "node/sshview.h"
#include "ssh/ssh.h"

int gg_engine_new(struct gg_store *st, const struct gg_config *cfg, struct gg_engine **out,
		  struct gg_err *err)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*out)->st = st;
	(*out)->cfg = cfg;
	return 0;
}

void gg_engine_free(struct gg_engine *e)
{
	if (e)
		json_decref(e->queue_reasons);
	free(e);
}

struct gg_store *gg_engine_store(const struct gg_engine *e)
{
	return e->st;
}

const struct gg_config *gg_engine_config(const struct gg_engine *e)
{
	return e->cfg;
}

const char *gg_engine_probe_why(const struct gg_engine *e)
{
	return e->probe_why;
}

/* Where each member of struct gg_engine_callbacks ends: a caller's size is one
 * of these (its header was this one or an older one), or more. */
#define CB_END(m) \
	(offsetof(struct gg_engine_callbacks, m) + sizeof(((struct gg_engine_callbacks *)0)->m))
static const size_t cb_ends[] = {CB_END(ud),
				 CB_END(note),
				 CB_END(fail),
				 CB_END(cancel),
				 CB_END(waiting),
				 CB_END(upload_begin),
				 CB_END(upload_progress),
				 CB_END(upload_end),
				 CB_END(open_ce),
				 CB_END(log),
				 CB_END(log_level),
				 CB_END(download_begin),
				 CB_END(download_progress),
				 CB_END(download_end),
				 CB_END(fetched),
				 CB_END(keep_start),
				 sizeof(struct gg_engine_callbacks)};

/* cb as this library's struct: what an older caller's lacks is NULL. */
static int callbacks_read(const struct gg_engine_callbacks *cb, struct gg_engine_callbacks *c,
			  struct gg_err *err)
{
	size_t n = cb->size, have = sizeof *c;
	int known = 0;
	for (size_t i = 0; i < sizeof cb_ends / sizeof cb_ends[0]; i++)
		known |= n == cb_ends[i];
	const unsigned char *extra = (const unsigned char *)cb + have;
	for (size_t i = 0; n > have && i < n - have; i++)
		if (extra[i])
			return gg_err_set(err, GG_EUSAGE,
					  "engine callbacks: members this library does not know "
					  "are set (it is older than the program's header)");
	if (!known && n <= have)
		return gg_err_set(err, GG_EUSAGE,
				  "engine callbacks: size %zu is not a struct "
				  "gg_engine_callbacks' (set it to sizeof the struct)",
				  n);
	memset(c, 0, sizeof *c);
	memcpy(c, cb, n < have ? n : have);
	return 0;
}

int gg_engine_set_callbacks(struct gg_engine *e, const struct gg_engine_callbacks *cb,
			    struct gg_err *err)
{
	struct gg_engine_callbacks c = {0};
	int rc = cb ? callbacks_read(cb, &c, err) : 0;
	if (rc < 0)
		return rc;
	e->ud = c.ud;
	e->note = c.note;
	e->fail = c.fail;
	e->cancel = c.cancel;
	e->waiting = c.waiting;
	e->upload_begin = c.upload_begin;
	e->upload_progress = c.upload_progress;
	e->upload_end = c.upload_end;
	e->open_ce = c.open_ce;
	e->download_begin = c.download_begin;
	e->download_progress = c.download_progress;
	e->download_end = c.download_end;
	e->fetched = c.fetched;
	e->keep_start = c.keep_start;
	e->log = (struct gg_log){.fn = c.log, .ud = c.ud, .level = c.log_level};
	return 0;
}

void gg_engine_notef(struct gg_engine *e, enum gg_note kind, const char *fmt, ...)
{
	if (!e->note)
		return;
	char msg[GG_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	e->note(e->ud, kind, msg);
}

int gg_engine_failf(struct gg_engine *e, const struct gg_err *err, const char *fmt, ...)
{
	if (e->fail) {
		char what[GG_ERR_MSG_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof what, fmt, ap);
		va_end(ap);
		e->fail(e->ud, err, what);
	}
	return err->code ? err->code : GG_EFAIL;
}

int gg_engine_killed(struct gg_engine *e, const char *name)
{
	struct gg_record r;
	int rc = gg_store_load(e->st, name, &r, NULL);
	if (rc == GG_ENOTFOUND)
		return 1;
	int killed = rc == 0 && r.state == GG_S_KILLED;
	if (rc == 0)
		gg_record_clear(&r);
	return killed;
}

const struct gg_site *gg_engine_site(const struct gg_engine *e, const char *name)
{
	return e->cfg && name ? gg_config_site(e->cfg, name) : NULL;
}

/* The socket of the keeper that carries a's requests to an https:// endpoint
 * when one answers there (malloc'd), else NULL after asking the caller to
 * start one (once). Only for a proxy, and only when the caller starts keepers. */
static char *keeper(struct gg_engine *e, const char *endpoint, const struct gg_ce_auth *a)
{
	char *sock = NULL;
	struct gg_err err = {0};
	if (!e->keep_start || !a->proxy_path || a->token || a->tsource ||
	    strncmp(endpoint, "https://", 8) != 0)
		return NULL;
	if (gg_keep_path(a->proxy_path, a->ca_dir, &sock, &err) < 0) {
		gg_logf(&e->log, 1, "no connection keeper: %s", err.msg);
		return NULL;
	}
	if (gg_keep_alive(sock))
		return sock;
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* sync's threads */
	pthread_mutex_lock(&mu);
	int ask = !e->keep_asked;
	e->keep_asked = 1;
	pthread_mutex_unlock(&mu);
	if (ask)
		e->keep_start(e->ud, sock, a->proxy_path, a->ca_dir);
	free(sock);
	return NULL;
}

/* Open endpoint with site's profile (NULL: the configured site whose CE it is). */
static int open_ce_at(struct gg_engine *e, const char *endpoint, const struct gg_site *site,
		      const struct gg_auth *a, struct gg_ce **ce, struct gg_err *err)
{
	char *state = NULL, *cache = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state, NULL) == 0 && gg_mkdir_p(state, 0700, NULL) == 0)
		cache = gg_strdup_printf("%s/ce.json", state);
	free(state);
	for (size_t i = 0; !site && e->cfg && i < e->cfg->nsites; i++)
		if (e->cfg->sites[i].ce && !strcmp(e->cfg->sites[i].ce, endpoint))
			site = &e->cfg->sites[i];
	struct gg_ce_auth ca = {.proxy_path = a->proxy_path,
				.token = a->token ? a->token->value : NULL,
				.tsource = a->tsource,
				.ca_dir = a->ca_dir,
				.cache_path = cache,
				.cancel = e->cancel,
				.cancel_ud = e->ud,
				.log = &e->log};
	char *keep = e->open_ce ? NULL : keeper(e, endpoint, &ca);
	int rc = e->open_ce ? e->open_ce(e->ud, endpoint, &ca, ce, err)
			    : gg_ce_open_kept(endpoint, &ca, site, keep, ce, err);
	free(keep);
	free(cache);
	return rc;
}

int gg_engine_open_site_ce(struct gg_engine *e, const struct gg_site *site, const struct gg_auth *a,
			   struct gg_ce **ce, struct gg_err *err)
{
	return open_ce_at(e, site->ce, site, a, ce, err);
}

int gg_engine_open_ce(struct gg_engine *e, const char *endpoint, const struct gg_auth *a,
		      struct gg_ce **ce, struct gg_err *err)
{
	return open_ce_at(e, endpoint, NULL, a, ce, err);
}
static const char *auth_kind(const struct gg_record *r);

int gg_engine_open_record_ce(struct gg_engine *e, const struct gg_record *r, struct gg_ce **ce,
			     struct gg_err *err)
{
	*ce = NULL;
	if (!r->ce)
		return gg_err_set(err, GG_EUSAGE, "%s has no CE", r->name);
	const struct gg_site *site = gg_engine_site(e, r->site);
	const char *own = auth_kind(r);
	struct gg_auth a;
	struct gg_err other = {0};
	int rc = gg_auth_find(site, own, 0, &a, err);
	if (rc == GG_ECRED) {
		/* Without the credential it was made with, the other kind may do: the
		 * CE decides whether it is the same owner. */
		gg_auth_clear(&a);
		if (gg_auth_find(site, strcmp(own, "token") ? "token" : "proxy", 0, &a, &other) ==
		    0)
			rc = 0;
	}
	if (rc == 0)
		rc = gg_engine_open_ce(e, r->ce, &a, ce, err);
	gg_auth_clear(&a);
	return rc;
}

int gg_engine_ce_errors(struct gg_engine *e, const struct gg_record *r, char **out,
			struct gg_err *err)
{
	*out = NULL;
	if (r->state != GG_S_FAILED || !r->ce || !r->job_id)
		return 0;
	struct gg_ce *ce = NULL;
	int rc = gg_engine_open_record_ce(e, r, &ce, err);
	if (rc == 0)
		rc = gg_ce_diagnose(ce, r->job_id, "errors", out, err);
	gg_ce_free(ce);
	return rc;
}

static const char *auth_kind(const struct gg_record *r)
{
	if (r->ce && !strncmp(r->ce, "slurm+ssh://", 12))
		return "ssh";
	return r->auth && !strcmp(r->auth, "token") ? "token" : "proxy";
}

static int same_group(const struct gg_rec_group *g, const struct gg_record *r)
{
	if (!g->ce != !r->ce || (g->ce && strcmp(g->ce, r->ce)))
		return 0;
	return strcmp(g->auth, auth_kind(r)) == 0;
}

static int group_add(struct gg_rec_group **gs, size_t *ng, const struct gg_record *recs, size_t i,
		     size_t n)
{
	for (size_t k = 0; k < *ng; k++)
		if (same_group(&(*gs)[k], &recs[i])) {
			(*gs)[k].idx[(*gs)[k].n++] = i;
			return 0;
		}
	struct gg_rec_group *g = &(*gs)[(*ng)++];
	g->ce = recs[i].ce;
	g->auth = auth_kind(&recs[i]);
	g->idx = calloc(n, sizeof *g->idx);
	if (!g->idx)
		return -1;
	g->idx[g->n++] = i;
	return 0;
}

int gg_records_by_endpoint(const struct gg_record *recs, size_t n,
			   int (*want)(const struct gg_record *r), struct gg_rec_group **groups,
			   size_t *ngroups, struct gg_err *err)
{
	*groups = calloc(n ? n : 1, sizeof **groups);
	*ngroups = 0;
	if (!*groups)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (want && !want(&recs[i]))
			continue;
		if (group_add(groups, ngroups, recs, i, n) < 0) {
			gg_rec_groups_free(*groups, *ngroups);
			*groups = NULL;
			*ngroups = 0;
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	return 0;
}

void gg_rec_groups_free(struct gg_rec_group *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++)
		free(g[i].idx);
	free(g);
}

int gg_engine_write_ssh_config(struct gg_engine *e, struct gg_err *err)
{
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	if (rc < 0)
		return rc;
	/* Only live sessions get a block: find them in the rows (one cached file
	 * even with thousands of records), then read just those. */
	struct gg_record_row *rows = NULL;
	size_t nrows = 0, n = 0;
	struct gg_record *recs = NULL;
	if ((rc = gg_store_rows(e->st, &rows, &nrows, NULL, err)) == 0) {
		recs = calloc(nrows ? nrows : 1, sizeof *recs);
		for (size_t i = 0; recs && i < nrows; i++) {
			if (rows[i].kind != GG_REC_SESSION || gg_sess_state_ended(rows[i].state))
				continue;
			if (gg_store_load(e->st, rows[i].name, &recs[n], NULL) < 0)
				continue;
			if (recs[n].race) /* racing: a block once it won */
				gg_record_clear(&recs[n]);
			else
				n++;
		}
		rc = recs ? gg_session_write_ssh_config(&p, e->cfg, recs, n, err)
			  : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	gg_records_free(recs, n);
	gg_record_rows_free(rows, nrows);
	gg_ssh_paths_clear(&p);
	return rc;
}
