/* What the user's sites offer (gridgpu sites), from every source gridgpu has,
 * each with its time and origin: the CE's GLUE2 information ("ce": asked of
 * every CE at once, a thread each, each given timeout_ms; kept GG_SITES_TTL
 * seconds in $XDG_CACHE_HOME/gridgpu/sites.json), the site profile's GPU keys
 * ("profile": as old as the configuration file) and what earlier sessions at
 * the site saw ("session": gpu/seen.c), listed newest first. The summary of
 * each site takes the GPU facts from the last session's record where there is
 * one (what nvidia-smi said on a node), else from the profile; the queue's
 * from the CE. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "ce/ce.h"
#include "core/par.h"
#include "cred/cred.h"
#include "engine/engine_int.h"
#include "gpu/gpu.h"

#define SITES_FILE "sites.json"

/* One site's CE, asked in a thread of its own. */
struct probe {
	struct gg_engine *e;
	const struct gg_site *site;
	int64_t deadline_ms, timeout_ms;
	json_t *offer;
	struct gg_err err;
	int rc;
};

/* The deadline, or the caller's own cancel (Ctrl-C). */
static int probe_cancel(void *ud)
{
	struct probe *p = ud;
	return gg_mono_ms() >= p->deadline_ms || (p->e->cancel && p->e->cancel(p->e->ud));
}

static int probe_open(struct probe *p, const struct gg_auth *a, struct gg_ce **ce)
{
	char *state = NULL, *versions = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state, NULL) == 0 && gg_mkdir_p(state, 0700, NULL) == 0)
		versions = gg_strdup_printf("%s/ce.json", state);
	free(state);
	struct gg_ce_auth ca = {.proxy_path = a->proxy_path,
				.cache_path = versions,
				.token = a->token ? a->token->value : NULL,
				.tsource = a->tsource,
				.ca_dir = a->ca_dir,
				.cancel = probe_cancel,
				.cancel_ud = p,
				.log = &p->e->log};
	int rc = p->e->open_ce ? p->e->open_ce(p->e->ud, p->site->ce, &ca, ce, &p->err)
			       : gg_ce_open_site(p->site->ce, &ca, p->site, ce, &p->err);
	free(versions);
	return rc;
}

static void probe_run(void *ud)
{
	struct probe *p = ud;
	if (!p->site) /* the cache's word is fresh */
		return;
	struct gg_auth a;
	struct gg_ce *ce = NULL;
	p->rc = gg_auth_find(p->site, NULL, 0, &a, &p->err);
	if (p->rc == 0)
		p->rc = probe_open(p, &a, &ce);
	if (p->rc == 0)
		p->rc = gg_ce_offer(ce, &p->offer, &p->err);
	if (p->rc < 0 && p->rc != GG_ECRED && gg_mono_ms() >= p->deadline_ms)
		p->rc = gg_err_set(&p->err, GG_ENET, "%s: no answer within %.1f s", p->site->ce,
				   (double)p->timeout_ms / 1000);
	gg_ce_free(ce);
	gg_auth_clear(&a);
}

static char *cache_path(void)
{
	char *dir = NULL, *path = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &dir, NULL) == 0 && gg_mkdir_p(dir, 0700, NULL) == 0)
		path = gg_strdup_printf("%s/%s", dir, SITES_FILE);
	free(dir);
	return path;
}

/* The cache's entry of site when it is fresh and of the same CE, else NULL. */
static json_t *cached(json_t *cache, const struct gg_site *site, int64_t now)
{
	json_t *c = json_object_get(cache, site->name);
	const char *ce = json_string_value(json_object_get(c, "ce"));
	json_int_t t = json_integer_value(json_object_get(c, "time"));
	if (!ce || strcmp(ce, site->ce) || now - t < 0 || now - t >= GG_SITES_TTL)
		return NULL;
	if (!json_is_object(json_object_get(c, "offer")) &&
	    !json_is_string(json_object_get(c, "error")))
		return NULL;
	return c;
}

/* The probe's answer as the cache keeps it; answered: when the CE last answered. */
static json_t *entry(const struct probe *p, int64_t now, json_t *old)
{
	json_t *c =
		gg_json_object("ce", gg_json_text(p->site->ce), "time", json_integer(now), NULL);
	json_t *answered = json_object_get(old, "answered");
	if (p->rc == 0) {
		gg_json_set(c, "offer", json_incref(p->offer));
		gg_json_set(c, "answered", json_integer(now));
	} else {
		gg_json_set_text(c, "error", p->err.msg);
		if (json_is_integer(answered))
			gg_json_set(c, "answered", json_incref(answered));
	}
	return c;
}

static void set_time(json_t *o, const char *key, int64_t t)
{
	char buf[40];
	gg_json_set_text(o, key, gg_time_iso(t, buf, sizeof buf));
}

/* A source: {origin, time, age, ...what}, what stolen. */
static json_t *source(const char *origin, int64_t t, int64_t now, json_t *what)
{
	json_t *s = what ? what : json_object();
	gg_json_set_text(s, "origin", origin);
	set_time(s, "time", t);
	gg_json_set(s, "age_seconds", json_integer(now - t > 0 ? now - t : 0));
	return s;
}

static json_t *ce_source(json_t *c, int cached_now, int64_t now)
{
	json_t *s = json_object();
	json_t *offer = json_object_get(c, "offer");
	gg_json_set(s, "cached", json_boolean(cached_now));
	if (json_is_object(offer))
		gg_json_set(s, "offer", json_incref(offer));
	else
		gg_json_set_text(s, "error", json_string_value(json_object_get(c, "error")));
	return source("ce", json_integer_value(json_object_get(c, "time")), now, s);
}

/* The profile's GPU keys, or NULL when it has none. */
static json_t *profile_source(const struct gg_site *site, int64_t mtime, int64_t now)
{
	if (!site->gpu_model && !site->gpu_memory && !site->gpu_capability &&
	    !site->gpus_per_node && !site->nmig_profiles && !site->arch)
		return NULL;
	json_t *s = json_object(), *mig = json_array();
	gg_json_set_text(s, "gpu_model", site->gpu_model);
	if (site->gpu_memory)
		gg_json_set(s, "gpu_memory_mb", json_integer(atoll(site->gpu_memory)));
	gg_json_set_text(s, "capability", site->gpu_capability);
	if (site->gpus_per_node)
		gg_json_set(s, "gpus_per_node", json_integer(atoll(site->gpus_per_node)));
	for (int i = 0; i < site->nmig_profiles; i++)
		gg_json_append(mig, gg_json_text(site->mig_profiles[i]));
	gg_json_set(s, "mig_profiles", mig);
	gg_json_set_text(s, "arch", site->arch);
	return source("profile", mtime, now, s);
}

/* An earlier session's record (checked: it is read from a file), or NULL. */
static json_t *session_source(json_t *rec, int64_t now)
{
	json_t *gpus = json_array();
	size_t i;
	json_t *g;
	json_array_foreach (json_object_get(rec, "gpus"), i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		json_t *mb = json_object_get(g, "memory_mb");
		if (!name || !json_is_integer(mb))
			continue;
		json_t *o = gg_json_object("name", gg_json_text(name), "memory_mb",
					   json_integer(json_integer_value(mb)), NULL);
		gg_json_set_text(o, "capability",
				 json_string_value(json_object_get(g, "capability")));
		gg_json_append(gpus, o);
	}
	json_t *t = json_object_get(rec, "time");
	if (!json_array_size(gpus) || !json_is_integer(t)) {
		json_decref(gpus);
		return NULL;
	}
	json_t *s = json_object();
	gg_json_set_text(s, "session", json_string_value(json_object_get(rec, "session")));
	gg_json_set(s, "gpus", gpus);
	return source("session", json_integer_value(t), now, s);
}

static int by_age(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "age_seconds"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "age_seconds"));
	return (x > y) - (x < y);
}

/* The GPU facts of one source (a session's first GPU, or the profile's keys)
 * into the summary s, where s does not have them yet. */
static void gpu_facts(json_t *s, json_t *src)
{
	json_t *gpus = json_object_get(src, "gpus");
	if (json_array_size(gpus) && !json_array_size(json_object_get(s, "gpu_models"))) {
		json_t *models = json_array(), *g0 = json_array_get(gpus, 0);
		size_t i;
		json_t *g;
		json_array_foreach (gpus, i, g) {
			json_t *name = json_object_get(g, "name");
			int dup = 0;
			for (size_t k = 0; k < json_array_size(models); k++)
				dup |= json_equal(json_array_get(models, k), name);
			if (!dup)
				gg_json_append(models, json_incref(name));
		}
		gg_json_set(s, "gpu_models", models);
		json_object_set(s, "gpu_memory_mb", json_object_get(g0, "memory_mb"));
		if (json_object_get(g0, "capability"))
			json_object_set(s, "capability", json_object_get(g0, "capability"));
		gg_json_set_text(s, "gpus_from", "session");
		return;
	}
	json_t *model = json_object_get(src, "gpu_model");
	if (model && !json_array_size(json_object_get(s, "gpu_models"))) {
		json_t *models = json_array();
		gg_json_append(models, json_incref(model));
		gg_json_set(s, "gpu_models", models);
		gg_json_set_text(s, "gpus_from", "profile");
	}
	const char *keys[] = {"gpu_memory_mb", "capability", "gpus_per_node", "arch"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (json_is_null(json_object_get(s, keys[i])) && json_object_get(src, keys[i]))
			json_object_set(s, keys[i], json_object_get(src, keys[i]));
	if (json_array_size(json_object_get(src, "mig_profiles")) &&
	    !json_array_size(json_object_get(s, "mig_profiles")))
		json_object_set(s, "mig_profiles", json_object_get(src, "mig_profiles"));
}

/* The share the site's GPU jobs go to (gpu_queue, else queue), else the one
 * with the most free slots. */
static json_t *pick_share(const struct gg_site *site, json_t *offer)
{
	const char *want = site->gpu_queue ? site->gpu_queue : site->queue;
	json_t *best = NULL;
	size_t i;
	json_t *sh;
	json_array_foreach (json_object_get(offer, "shares"), i, sh) {
		const char *name = json_string_value(json_object_get(sh, "name"));
		if (want && name && !strcmp(name, want))
			return sh;
		if (!best || json_integer_value(json_object_get(sh, "free_slots")) >
				     json_integer_value(json_object_get(best, "free_slots")))
			best = sh;
	}
	return want ? NULL : best;
}

/* The site's GPU RTE (gpu_rte, else the first of the CE's naming GPU) and
 * whether the CE lists it (null: the CE did not say). */
static void rte_facts(json_t *s, const struct gg_site *site, json_t *offer)
{
	json_t *rtes = json_object_get(offer, "rtes");
	const char *rte = site->gpu_rte;
	size_t i;
	json_t *r;
	json_array_foreach (rtes, i, r)
		if (!rte && strcasestr(json_string_value(r), "GPU"))
			rte = json_string_value(r);
	gg_json_set(s, "rte", rte ? gg_json_text(rte) : json_null());
	int present = 0;
	json_array_foreach (rtes, i, r)
		present |= rte && !strcmp(json_string_value(r), rte);
	gg_json_set(s, "rte_present", offer && rte ? json_boolean(present) : json_null());
}

static void ce_facts(json_t *s, const struct gg_site *site, json_t *ce)
{
	json_t *offer = json_object_get(ce, "offer");
	json_t *sh = pick_share(site, offer);
	const char *err = json_string_value(json_object_get(ce, "error"));
	gg_json_set(s, "reachable", json_boolean(offer != NULL));
	gg_json_set(s, "reason", err ? gg_json_text(err) : json_null());
	gg_json_set(s, "queue", sh ? json_incref(json_object_get(sh, "name")) : json_null());
	const char *keys[] = {"free_slots", "total_slots", "running", "waiting"};
	json_t *from[] = {sh, offer, offer, offer};
	for (size_t i = 0; i < 4; i++) {
		json_t *v = json_object_get(from[i], keys[i]);
		gg_json_set(s, keys[i], v ? json_incref(v) : json_null());
	}
	if (json_is_null(json_object_get(s, "arch")) && json_object_get(offer, "platform"))
		json_object_set(s, "arch", json_object_get(offer, "platform"));
	rte_facts(s, site, offer);
}

/* One site's object: the summary, then its sources, newest first. c: the
 * CE's entry as the cache keeps it (cached_now: it came from the cache). */
static json_t *site_doc(const struct gg_site *site, json_t *c, int cached_now, json_t *seen,
			int64_t mtime, int64_t now)
{
	json_t *srcs[3], *ce = ce_source(c, cached_now, now);
	size_t n = 0;
	srcs[n++] = ce;
	json_t *rec = json_object_get(seen, site->name);
	json_t *prof = profile_source(site, mtime, now), *sess = session_source(rec, now);
	if (prof)
		srcs[n++] = prof;
	if (sess)
		srcs[n++] = sess;
	qsort(srcs, n, sizeof srcs[0], by_age);
	json_t *s = gg_json_object("site", gg_json_text(site->name), "ce", gg_json_text(site->ce),
				   "gpu_models", json_array(), "gpu_memory_mb", json_null(),
				   "capability", json_null(), "gpus_per_node", json_null(),
				   "mig_profiles", json_array(), "arch", json_null(), "gpus_from",
				   json_null(), NULL);
	json_t *list = json_array();
	/* what a node's nvidia-smi said before what the profile declares: the
	 * profile's age is the configuration file's, which any edit renews */
	if (sess)
		gpu_facts(s, sess);
	if (prof)
		gpu_facts(s, prof);
	for (size_t i = 0; i < n; i++)
		gg_json_append(list, srcs[i]);
	ce_facts(s, site, ce);
	int64_t last = json_integer_value(json_object_get(c, "answered"));
	int64_t seen_t = sess ? json_integer_value(json_object_get(rec, "time")) : 0;
	if (seen_t > last)
		last = seen_t;
	if (last > 0) {
		set_time(s, "last_seen", last);
		gg_json_set(s, "last_seen_age_seconds",
			    json_integer(now - last > 0 ? now - last : 0));
	} else {
		gg_json_set(s, "last_seen", json_null());
		gg_json_set(s, "last_seen_age_seconds", json_null());
	}
	gg_json_set(s, "sources", list);
	return s;
}

/* The sites asked for (names, or all of cfg's), each once, in *out. */
static int chosen(const struct gg_config *cfg, const char *const *names, size_t n,
		  const struct gg_site ***out, size_t *nout, struct gg_err *err)
{
	size_t cnt = n ? n : (cfg ? cfg->nsites : 0);
	const struct gg_site **v = calloc(cnt ? cnt : 1, sizeof *v);
	if (!v)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	*nout = 0;
	for (size_t i = 0; i < cnt; i++) {
		const struct gg_site *site = n ? gg_config_site(cfg, names[i]) : &cfg->sites[i];
		if (!site) {
			free(v);
			return gg_err_set(err, GG_ENOTFOUND,
					  "no site '%s' (gridgpu site list shows yours)", names[i]);
		}
		int dup = 0;
		for (size_t k = 0; k < *nout; k++)
			dup |= v[k] == site;
		if (!dup)
			v[(*nout)++] = site;
	}
	*out = v;
	return 0;
}

/* Ask, in parallel, the CEs the cache has no fresh word of. */
static void ask(struct gg_engine *e, struct probe *p, size_t n, int64_t timeout_ms)
{
	int64_t deadline = gg_mono_ms() + timeout_ms;
	for (size_t i = 0; i < n; i++) {
		p[i].e = e;
		p[i].deadline_ms = deadline;
		p[i].timeout_ms = timeout_ms;
	}
	struct gg_par *par = gg_par_start(p, n, sizeof *p, probe_run);
	for (size_t i = 0; !par && i < n; i++) /* no memory for threads: one by one */
		probe_run(&p[i]);
	gg_par_free(par);
}

static int64_t config_mtime(const struct gg_config *cfg, int64_t now)
{
	struct stat st;
	return cfg && cfg->path && stat(cfg->path, &st) == 0 ? (int64_t)st.st_mtime : now;
}

int gg_engine_sites(struct gg_engine *e, const char *const *names, size_t n, int64_t timeout_ms,
		    unsigned flags, json_t **doc, struct gg_err *err)
{
	*doc = NULL;
	const struct gg_site **sites = NULL;
	size_t ns = 0;
	if (timeout_ms <= 0)
		timeout_ms = GG_SITES_TIMEOUT_MS;
	int rc = chosen(e->cfg, names, n, &sites, &ns, err);
	if (rc < 0)
		return rc;
	struct probe *p = calloc(ns ? ns : 1, sizeof *p);
	char *path = cache_path();
	json_t *cache = path ? gg_ce_cache_load(path) : json_object();
	json_t *seen = gg_gpu_seen_load(), *list = json_array();
	int64_t now = (int64_t)time(NULL);
	size_t asked = 0;
	for (size_t i = 0; p && i < ns; i++)
		if ((flags & GG_SITES_FRESH) || !cached(cache, sites[i], now))
			p[i].site = sites[i], asked++;
	if (p)
		ask(e, p, ns, timeout_ms);
	now = (int64_t)time(NULL);
	int64_t mtime = config_mtime(e->cfg, now);
	for (size_t i = 0; p && i < ns; i++) {
		json_t *c = json_incref(cached(cache, sites[i], now));
		if (p[i].site) {
			json_decref(c);
			c = entry(&p[i], now, json_object_get(cache, sites[i]->name));
			/* not a missing credential: the next run after proxy init asks */
			if (p[i].rc != GG_ECRED)
				json_object_set(cache, sites[i]->name, c);
		}
		gg_json_append(list, site_doc(sites[i], c, !p[i].site, seen, mtime, now));
		json_decref(c);
		json_decref(p[i].offer);
	}
	if (asked && path)
		gg_ce_cache_save(path, cache);
	*doc = gg_json_object("schema", gg_json_text("gridgpu.sites/1"), "ttl_seconds",
			      json_integer(GG_SITES_TTL), "timeout_seconds",
			      json_real((double)timeout_ms / 1000), "sites", list, NULL);
	if (!p || !*doc)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	json_decref(cache);
	json_decref(seen);
	free(path);
	free(p);
	free(sites);
	return rc;
}
