/* Matchmaking (submit --site auto, --site A,B): what each site offers
 * (gg_engine_sites) against what the job asks (GPUs or a MIG profile, the least
 * GPU memory, the lowest compute capability): a site that cannot satisfy it is
 * dropped with the reason; the others are ranked by expected wait (free slots of
 * the GPU queue less the jobs waiting, known facts before unknown ones, then the
 * order given), and one line says which was chosen and why. Each site also
 * says whether a GPU job would find a free slot there now ("gpu_free"), what
 * submit --gpus 0-1 decides by. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/engine_int.h"
#include "gridgpu/gpu.h"

struct cand {
	json_t *s; /* the site's summary */
	size_t order;
	int known;    /* free slots and waiting jobs both known */
	int gpu_free; /* a GPU mapping, its RTE not missing, a free slot in its queue */
	long long wait;
	char reason[GG_ERR_MSG_MAX];
};

/* "8.0" → 80; -1 when not X.Y. */
static int cc_value(const char *s)
{
	int major, minor;
	return s && gg_gpu_version_parse(s, &major, &minor) == 0 ? major * 10 + minor : -1;
}

/* Why site cannot take the job, into c->reason; 0 when it can (a fact not
 * known is no reason: the batch wrapper checks on the node). */
static int unfit(const struct gg_site *site, const struct gg_jd_resources *res, struct cand *c)
{
	json_t *s = c->s;
	struct gg_err err = {0};
	int gpu = res->gpus || res->mig;
	json_t *mem = json_object_get(s, "gpu_memory_mb");
	const char *cc = json_string_value(json_object_get(s, "capability"));
	json_t *migs = json_object_get(s, "mig_profiles");
	size_t i;
	json_t *m;
	int has_mig = 0;
	json_array_foreach (migs, i, m)
		has_mig |= res->mig && !strcmp(json_string_value(m), res->mig);
	if (!json_is_true(json_object_get(s, "reachable")))
		snprintf(c->reason, sizeof c->reason, "not reachable: %s",
			 json_is_string(json_object_get(s, "reason"))
				 ? json_string_value(json_object_get(s, "reason"))
				 : "no answer");
	else if (gpu && gg_jd_gpu_check(res, site, &err) < 0)
		snprintf(c->reason, sizeof c->reason, "no GPU mapping (gpu_queue, gpu_rte)");
	else if (gpu && json_is_false(json_object_get(s, "rte_present")))
		snprintf(c->reason, sizeof c->reason, "the CE does not list its GPU RTE %s",
			 json_string_value(json_object_get(s, "rte")));
	else if (res->mig && json_array_size(migs) && !has_mig)
		snprintf(c->reason, sizeof c->reason, "offers no MIG %s", res->mig);
	else if (res->min_gpu_memory && json_is_integer(mem) &&
		 (uint64_t)json_integer_value(mem) * 1048576 < res->min_gpu_memory)
		snprintf(c->reason, sizeof c->reason,
			 "its GPUs have %lld MiB, the job needs %llu MiB",
			 (long long)json_integer_value(mem),
			 (unsigned long long)((res->min_gpu_memory + 1048575) / 1048576));
	else if (res->min_capability && cc_value(cc) >= 0 &&
		 cc_value(cc) < cc_value(res->min_capability))
		snprintf(c->reason, sizeof c->reason,
			 "its GPUs' capability is %s, the job needs %s", cc, res->min_capability);
	return c->reason[0] != 0;
}

/* A GPU job would start there now: it has a GPU mapping, the CE does not
 * leave out its GPU RTE, and its GPU queue has a free slot. */
static int gpu_free(const struct gg_site *site, const json_t *s)
{
	struct gg_jd_resources one = {.gpus = 1};
	struct gg_err err = {0};
	json_t *f = json_object_get(s, "free_slots");
	return site && json_is_true(json_object_get(s, "reachable")) &&
	       gg_jd_gpu_check(&one, site, &err) == 0 &&
	       !json_is_false(json_object_get(s, "rte_present")) && json_is_integer(f) &&
	       json_integer_value(f) > 0;
}

static int by_wait(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->known != y->known)
		return y->known - x->known;
	if (x->known == 1 && x->wait != y->wait)
		return x->wait < y->wait ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

static json_t *cand_json(const struct cand *c, int fits)
{
	json_t *o = gg_json_object("site", json_incref(json_object_get(c->s, "site")), "fits",
				   json_boolean(fits), NULL);
	gg_json_set(o, "reason", fits ? json_null() : gg_json_text(c->reason));
	const char *keys[] = {"free_slots", "waiting", "gpu_memory_mb", "capability"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		json_object_set(o, keys[i], json_object_get(c->s, keys[i]));
	gg_json_set(o, "expected_wait", fits && c->known ? json_integer(c->wait) : json_null());
	gg_json_set(o, "gpu_free", json_boolean(c->gpu_free));
	return o;
}

/* "chose tb: 8 free slots, 0 waiting (best of 2 that fit; 1 dropped)". */
static char *why(const struct cand *best, size_t nfit, size_t ndrop)
{
	json_t *f = json_object_get(best->s, "free_slots"),
	       *w = json_object_get(best->s, "waiting");
	char facts[96];
	if (best->known)
		snprintf(facts, sizeof facts, "%lld free slots, %lld waiting",
			 (long long)json_integer_value(f), (long long)json_integer_value(w));
	else
		snprintf(facts, sizeof facts, "its queue is not known");
	const char *site = json_string_value(json_object_get(best->s, "site"));
	if (nfit == 1)
		return gg_strdup_printf("chose %s: %s (the only site that fits; %zu dropped)", site,
					facts, ndrop);
	return gg_strdup_printf("chose %s: %s (the best of %zu sites that fit; %zu dropped)", site,
				facts, nfit, ndrop);
}

/* An architecture by one name: Go's and the SIF's (amd64, arm64) and the
 * kernel's (x86_64, aarch64) are the same machines. */
static const char *arch_canon(const char *a)
{
	static const char *const same[][2] = {{"x86_64", "amd64"}, {"aarch64", "arm64"},
					      {"i386", "386"},     {"i686", "386"},
					      {"armv7l", "arm"},   {"ppc64el", "ppc64le"}};
	for (size_t i = 0; a && i < sizeof same / sizeof *same; i++)
		if (!strcasecmp(a, same[i][0]))
			return same[i][1];
	return a;
}

/* The image's architecture (arch, NULL: not known) against the one the site
 * declares or its CE publishes: why it cannot run there, into c->reason. */
static int arch_unfit(const char *arch, struct cand *c)
{
	const char *site = json_string_value(json_object_get(c->s, "arch"));
	if (!arch || !site || !strcasecmp(arch_canon(arch), arch_canon(site)))
		return 0;
	snprintf(c->reason, sizeof c->reason, "its nodes are %s, the image is %s", site, arch);
	return 1;
}

static void rank(struct gg_engine *e, const struct gg_jd_resources *res, const char *arch,
		 json_t *sites, json_t *out)
{
	size_t n = json_array_size(sites), nfit = 0, ndrop = 0;
	struct cand *c = calloc(n ? n : 1, sizeof *c);
	json_t *ranking = json_array();
	for (size_t i = 0; c && i < n; i++) {
		c[i].s = json_array_get(sites, i);
		c[i].order = i;
		json_t *f = json_object_get(c[i].s, "free_slots");
		json_t *w = json_object_get(c[i].s, "waiting");
		c[i].known = json_is_integer(f) && json_is_integer(w);
		c[i].wait = json_integer_value(w) - json_integer_value(f);
		const char *name = json_string_value(json_object_get(c[i].s, "site"));
		c[i].gpu_free = gpu_free(gg_engine_site(e, name), c[i].s);
		if (unfit(gg_engine_site(e, name), res, &c[i]) || arch_unfit(arch, &c[i]))
			c[i].known = -1, ndrop++;
	}
	if (c)
		qsort(c, n, sizeof *c, by_wait);
	for (size_t i = 0; c && i < n; i++) {
		nfit += c[i].known >= 0;
		gg_json_append(ranking, cand_json(&c[i], c[i].known >= 0));
	}
	char *line = nfit ? why(&c[0], nfit, ndrop) : NULL;
	gg_json_set(out, "chosen",
		    nfit ? json_incref(json_object_get(c[0].s, "site")) : json_null());
	gg_json_set(out, "why", line ? gg_json_text(line) : json_null());
	gg_json_set(out, "ranking", ranking);
	free(line);
	free(c);
}

int gg_engine_match(struct gg_engine *e, const char *const *names, size_t n,
		    const struct gg_jd_resources *res, int64_t timeout_ms, json_t **doc,
		    struct gg_err *err)
{
	return gg_engine_match_arch(e, names, n, res, NULL, timeout_ms, doc, err);
}

int gg_engine_match_arch(struct gg_engine *e, const char *const *names, size_t n,
			 const struct gg_jd_resources *res, const char *arch, int64_t timeout_ms,
			 json_t **doc, struct gg_err *err)
{
	*doc = NULL;
	json_t *offers = NULL;
	int rc = gg_engine_sites(e, names, n, timeout_ms, 0, &offers, err);
	if (rc < 0)
		return rc;
	json_t *out = gg_json_object("schema", gg_json_text("gridgpu.match/1"), NULL);
	if (out)
		rank(e, res, arch, json_object_get(offers, "sites"), out);
	json_decref(offers);
	if (!out)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	*doc = out;
	return 0;
}
