/* What the user's sites offer (lib/engine/offer.c, lib/ce/glue2.c, lib/gpu/seen.c):
 * the CE's GLUE2 information as gridgpu keeps it (numbers checked, hostile text
 * dropped), every CE asked at once and each given the timeout, the answers kept
 * GG_SITES_TTL seconds, the profile's GPU keys, an earlier session's GPUs, each
 * source with its age, newest first. The CEs are a fake backend (the engine's
 * open_ce). */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "unit.h"

#include "ce/backend.h"
#include "ce/ce.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "gridgpu/site.h"

UNIT_TMPDIR("gg-offer")

static const char glue2[] =
	"{\"Domains\":{\"AdminDomain\":{\"Services\":{\"ComputingService\":{"
	"\"Name\":\"ce1\",\"RunningJobs\":\"5\",\"WaitingJobs\":\"7\",\"PreLRMSWaitingJobs\":\"1\","
	"\"ComputingShare\":[{\"Name\":\"gpu\",\"FreeSlots\":\"2\",\"RunningJobs\":\"3\","
	"\"WaitingJobs\":\"4\"},{\"Name\":\"cpu\",\"FreeSlots\":\"30\"}],"
	"\"ComputingManager\":{\"ProductName\":\"slurm\",\"TotalSlots\":\"40\","
	"\"ExecutionEnvironments\":{\"ExecutionEnvironment\":{\"Platform\":\"amd64\","
	"\"OSName\":\"debian\",\"OSVersion\":\"12\"}},"
	"\"ApplicationEnvironments\":{\"ApplicationEnvironment\":[{\"AppName\":\"ENV/PROXY\"},"
	"{\"AppName\":\"ENV/GPU\"}]}}}}}}}";

/* ---- the fake CEs: "good" answers glue2, "slow" until it is cancelled ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int offers, inflight, most_inflight;

struct fimpl {
	int (*cancel)(void *ud);
	void *cancel_ud;
};

static int f_open(struct gg_ce *ce, const struct gg_ce_auth *auth, struct gg_err *err)
{
	struct fimpl *f = calloc(1, sizeof *f);
	if (!f)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	f->cancel = auth->cancel;
	f->cancel_ud = auth->cancel_ud;
	ce->impl = f;
	return 0;
}

static void f_close(struct gg_ce *ce)
{
	free(ce->impl);
}

static int f_offer(struct gg_ce *ce, json_t **out, struct gg_err *err)
{
	struct fimpl *f = ce->impl;
	pthread_mutex_lock(&mu);
	offers++;
	if (++inflight > most_inflight)
		most_inflight = inflight;
	pthread_mutex_unlock(&mu);
	int rc;
	if (strstr(ce->endpoint, "slow")) {
		while (!f->cancel || !f->cancel(f->cancel_ud))
			usleep(5000);
		rc = gg_err_set(err, GG_EINTR, "interrupted");
	} else if (strstr(ce->endpoint, "busy")) { /* 70 waiting, not 7 */
		char *doc = strdup(glue2);
		char *w = strstr(doc, "\"WaitingJobs\":\"7\"");
		memcpy(w, "\"WaitingJobs\":\"9\"", strlen("\"WaitingJobs\":\"9\""));
		rc = gg_glue2_offer(doc, strlen(doc), out, err);
		free(doc);
	} else {
		rc = gg_glue2_offer(glue2, strlen(glue2), out, err);
	}
	pthread_mutex_lock(&mu);
	inflight--;
	pthread_mutex_unlock(&mu);
	return rc;
}

static const struct gg_ce_ops fake_ops = {
	.name = "fake", .open = f_open, .close = f_close, .offer = f_offer};

static int open_fake(void *ud, const char *endpoint, const struct gg_ce_auth *auth,
		     struct gg_ce **ce, struct gg_err *err)
{
	(void)ud;
	return gg_ce_open_with(&fake_ops, endpoint, auth, ce, err);
}

static struct gg_config *cfg;
static struct gg_engine *E;
static char cfgpath[128];

static void add_site(const char *name, const char *ce)
{
	struct gg_site s = {.name = (char *)name};
	struct gg_err err = {0};
	assert_int_equal(gg_site_add_value(&s, "ce", ce, &err), 0);
	assert_int_equal(gg_site_add_value(&s, "auth", "token", &err), 0);
	s.name = NULL;
	s.name = strdup(name);
	if (!strcmp(name, "good")) {
		assert_int_equal(gg_site_add_value(&s, "gpu-queue", "gpu", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpu-model", "NVIDIA T4", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpu-memory", "16384", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpu-capability", "7.5", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpus-per-node", "4", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "mig-profile", "1g.10gb", &err), 0);
	}
	if (!strcmp(name, "big") || !strcmp(name, "busy")) {
		assert_int_equal(gg_site_add_value(&s, "gpu-rte", "ENV/GPU", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpu-memory", "40960", &err), 0);
		assert_int_equal(gg_site_add_value(&s, "gpu-capability", "8.0", &err), 0);
	}
	assert_int_equal(gg_config_set_site(cfg, &s, &err), 0);
	gg_site_clear(&s);
}

static int setup(void **state)
{
	if (setup_tmp(state) < 0)
		return -1;
	char d[128];
	snprintf(d, sizeof d, "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", d, 1);
	snprintf(d, sizeof d, "%s/state", tmpdir);
	setenv("XDG_STATE_HOME", d, 1);
	snprintf(d, sizeof d, "%s/config", tmpdir);
	setenv("XDG_CONFIG_HOME", d, 1);
	setenv("BEARER_TOKEN", "eyJhbGciOiJub25lIn0.e30.unit-test-token", 1);
	snprintf(cfgpath, sizeof cfgpath, "%s/gridgpu.conf", tmpdir);
	struct gg_err err = {0};
	if (gg_config_load(cfgpath, &cfg, &err) < 0)
		return -1;
	add_site("good", "https://good.example/arex");
	add_site("slow1", "https://slow1.example/arex");
	add_site("slow2", "https://slow2.example/arex");
	add_site("bare", "https://bare.example/arex");
	add_site("busy", "https://busy.example/arex");
	add_site("big", "https://big.example/arex");
	if (gg_config_save(cfg, &err) < 0 || gg_engine_new(NULL, cfg, &E, &err) < 0)
		return -1;
	struct gg_engine_callbacks cb = {.size = sizeof cb, .open_ce = open_fake};
	return gg_engine_set_callbacks(E, &cb, &err);
}

static int teardown(void **state)
{
	gg_engine_free(E);
	gg_config_free(cfg);
	return teardown_tmp(state);
}

static json_t *site_of(json_t *doc, const char *name)
{
	size_t i;
	json_t *s;
	json_array_foreach (json_object_get(doc, "sites"), i, s)
		if (!strcmp(json_string_value(json_object_get(s, "site")), name))
			return s;
	fail_msg("no site %s in the document", name);
	return NULL;
}

static json_int_t num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	assert_non_null(s);
	return s;
}

/* ---- the GLUE2 parser ---- */

static void test_glue2(void **state)
{
	(void)state;
	json_t *o = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_glue2_offer(glue2, strlen(glue2), &o, &err), 0);
	assert_int_equal(num(o, "running"), 5);
	assert_int_equal(num(o, "waiting"), 8); /* in the batch system and before it */
	assert_int_equal(num(o, "total_slots"), 40);
	assert_string_equal(str(o, "batch_system"), "slurm");
	assert_string_equal(str(o, "platform"), "amd64");
	assert_string_equal(str(o, "os"), "debian 12");
	json_t *shares = json_object_get(o, "shares");
	assert_int_equal(json_array_size(shares), 2);
	assert_string_equal(str(json_array_get(shares, 0), "name"), "gpu");
	assert_int_equal(num(json_array_get(shares, 0), "free_slots"), 2);
	assert_int_equal(num(json_array_get(shares, 1), "free_slots"), 30);
	assert_int_equal(json_array_size(json_object_get(o, "rtes")), 2);
	json_decref(o);

	/* what is not a count, or not short printable text, is left out */
	const char *bad = "{\"Domains\":{\"AdminDomain\":{\"Services\":{\"ComputingService\":"
			  "{\"Name\":\"a\\u001b[31m\",\"RunningJobs\":\"-3\",\"WaitingJobs\":"
			  "\"12x\",\"ComputingShare\":{\"Name\":\"q\",\"FreeSlots\":"
			  "\"99999999999\"},\"ComputingManager\":{\"TotalSlots\":7,"
			  "\"ApplicationEnvironments\":{\"ApplicationEnvironment\":{\"AppName\":"
			  "\"ENV/\\u00e9\"}}}}}}}}";
	assert_int_equal(gg_glue2_offer(bad, strlen(bad), &o, &err), 0);
	assert_null(json_object_get(o, "name"));
	assert_null(json_object_get(o, "running"));
	assert_null(json_object_get(o, "waiting"));
	assert_null(json_object_get(json_array_get(json_object_get(o, "shares"), 0), "free_slots"));
	assert_int_equal(num(o, "total_slots"), 7);
	assert_int_equal(json_array_size(json_object_get(o, "rtes")), 0);
	json_decref(o);

	assert_int_equal(gg_glue2_offer("{\"job\":1}", 9, &o, &err), GG_EPROTO);
	assert_null(o);
	assert_int_equal(gg_glue2_offer("<html>", 6, &o, &err), GG_EPROTO);
}

/* ---- the sites ---- */

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Every CE asked at once; one that does not answer is a site with the reason,
 * within the timeout, and the others are not held up by it. */
static void test_parallel_timeout(void **state)
{
	(void)state;
	const char *names[] = {"slow1", "good", "slow2"};
	json_t *doc = NULL;
	struct gg_err err = {0};
	most_inflight = offers = 0;
	int64_t t0 = now_ms();
	/* long enough for the threads to start under valgrind */
	assert_int_equal(gg_engine_sites(E, names, 3, 1500, GG_SITES_FRESH, &doc, &err), 0);
	int64_t took = now_ms() - t0;
	assert_true(took >= 1500 && took < 10000);
	assert_int_equal(offers, 3);
	assert_true(most_inflight >= 2); /* the slow two at once, not one after another */
	json_t *slow = site_of(doc, "slow1");
	assert_false(json_is_true(json_object_get(slow, "reachable")));
	assert_string_equal(str(slow, "reason"),
			    "https://slow1.example/arex: no answer within 1.5 s");
	assert_true(json_is_null(json_object_get(slow, "last_seen")));
	json_t *good = site_of(doc, "good");
	assert_true(json_is_true(json_object_get(good, "reachable")));
	assert_int_equal(num(good, "free_slots"), 2); /* the gpu queue's share */
	assert_int_equal(num(good, "total_slots"), 40);
	assert_int_equal(num(good, "waiting"), 8);
	assert_string_equal(str(good, "rte"), "ENV/GPU");
	assert_true(json_is_true(json_object_get(good, "rte_present")));
	assert_string_equal(str(good, "arch"), "amd64");
	json_decref(doc);
	/* the order asked is the order given, each site once */
	const char *twice[] = {"good", "good"};
	assert_int_equal(gg_engine_sites(E, twice, 2, 300, 0, &doc, &err), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "sites")), 1);
	json_decref(doc);
	const char *none[] = {"nope"};
	assert_int_equal(gg_engine_sites(E, none, 1, 300, 0, &doc, &err), GG_ENOTFOUND);
	assert_null(doc);
}

static json_t *ce_source(json_t *site)
{
	size_t i;
	json_t *src;
	json_array_foreach (json_object_get(site, "sources"), i, src)
		if (!strcmp(str(src, "origin"), "ce"))
			return src;
	fail_msg("no CE source");
	return NULL;
}

/* The CE's word is kept GG_SITES_TTL seconds: not asked again within it, asked
 * again past it, with --refresh, or when the profile names another CE. */
static void test_cache(void **state)
{
	(void)state;
	const char *names[] = {"good"};
	json_t *doc = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, GG_SITES_FRESH, &doc, &err), 0);
	assert_false(json_is_true(json_object_get(ce_source(site_of(doc, "good")), "cached")));
	json_decref(doc);
	offers = 0;
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &err), 0);
	assert_int_equal(offers, 0);
	json_t *src = ce_source(site_of(doc, "good"));
	assert_true(json_is_true(json_object_get(src, "cached")));
	assert_int_equal(num(site_of(doc, "good"), "free_slots"), 2);
	json_decref(doc);
	/* older than the TTL: asked again */
	char path[160];
	snprintf(path, sizeof path, "%s/cache/gridgpu/sites.json", tmpdir);
	json_t *c = json_load_file(path, 0, NULL);
	assert_non_null(c);
	gg_json_set(json_object_get(c, "good"), "time",
		    json_integer((json_int_t)time(NULL) - GG_SITES_TTL));
	assert_int_equal(json_dump_file(c, path, 0), 0);
	json_decref(c);
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &err), 0);
	assert_int_equal(offers, 1);
	json_decref(doc);
	/* another CE for the site: what was kept is not its word */
	struct gg_err e2 = {0};
	struct gg_site *s = (struct gg_site *)gg_config_site(cfg, "good");
	char *old = s->ce;
	s->ce = (char *)"https://good2.example/arex";
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &e2), 0);
	assert_int_equal(offers, 2);
	s->ce = old;
	json_decref(doc);
	/* no credential: the site says so, and that is not kept: once there is
	 * one, the CE is asked */
	const char *bare[] = {"bare"};
	char *token = strdup(getenv("BEARER_TOKEN"));
	unsetenv("BEARER_TOKEN");
	offers = 0;
	assert_int_equal(gg_engine_sites(E, bare, 1, 1000, GG_SITES_FRESH, &doc, &e2), 0);
	assert_false(json_is_true(json_object_get(site_of(doc, "bare"), "reachable")));
	assert_non_null(strstr(str(site_of(doc, "bare"), "reason"), "no bearer token"));
	assert_int_equal(offers, 0);
	json_decref(doc);
	setenv("BEARER_TOKEN", token, 1);
	free(token);
	assert_int_equal(gg_engine_sites(E, bare, 1, 1000, 0, &doc, &e2), 0);
	assert_int_equal(offers, 1);
	assert_true(json_is_true(json_object_get(site_of(doc, "bare"), "reachable")));
	json_decref(doc);
}

/* The profile's keys and an earlier session's GPUs, each with its age, newest
 * first; the summary takes each fact from the newest source that has it. */
static void test_sources(void **state)
{
	(void)state;
	const char *names[] = {"good"};
	json_t *doc = NULL;
	struct gg_err err = {0};
	/* the profile written an hour ago */
	struct utimbuf t = {.actime = time(NULL) - 3600, .modtime = time(NULL) - 3600};
	assert_int_equal(utime(cfgpath, &t), 0);
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &err), 0);
	json_t *s = site_of(doc, "good");
	assert_string_equal(json_string_value(json_array_get(json_object_get(s, "gpu_models"), 0)),
			    "NVIDIA T4");
	assert_string_equal(str(s, "gpus_from"), "profile");
	assert_int_equal(num(s, "gpu_memory_mb"), 16384);
	assert_string_equal(str(s, "capability"), "7.5");
	assert_int_equal(num(s, "gpus_per_node"), 4);
	assert_int_equal(json_array_size(json_object_get(s, "mig_profiles")), 1);
	json_t *srcs = json_object_get(s, "sources");
	assert_int_equal(json_array_size(srcs), 2);
	assert_string_equal(str(json_array_get(srcs, 1), "origin"), "profile");
	assert_true(num(json_array_get(srcs, 1), "age_seconds") >= 3600);
	json_decref(doc);

	/* a session at the site saw an A100 ten minutes ago: newer than the profile */
	char *prov = NULL;
	assert_int_equal(gg_gpu_smi_provenance("# CUDA_VISIBLE_DEVICES=0\n"
					       "0, GPU-5368a050-ed79-fab9-5cba-0d37c5f12c81, "
					       "NVIDIA A100-SXM4-40GB, 40960, 8.0, 550.54.15\n",
					       &prov, &err),
			 0);
	assert_int_equal(gg_gpu_seen_save("good", "dev1", prov, time(NULL) - 600, &err), 0);
	free(prov);
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &err), 0);
	s = site_of(doc, "good");
	srcs = json_object_get(s, "sources");
	assert_int_equal(json_array_size(srcs), 3);
	assert_string_equal(str(json_array_get(srcs, 0), "origin"), "ce");
	assert_string_equal(str(json_array_get(srcs, 1), "origin"), "session");
	assert_string_equal(str(json_array_get(srcs, 1), "session"), "dev1");
	assert_true(num(json_array_get(srcs, 1), "age_seconds") >= 600);
	assert_string_equal(str(json_array_get(srcs, 2), "origin"), "profile");
	assert_string_equal(json_string_value(json_array_get(json_object_get(s, "gpu_models"), 0)),
			    "NVIDIA A100-SXM4-40GB");
	assert_string_equal(str(s, "gpus_from"), "session");
	assert_int_equal(num(s, "gpu_memory_mb"), 40960);
	assert_string_equal(str(s, "capability"), "8.0");
	assert_int_equal(num(s, "gpus_per_node"), 4); /* only the profile says it */
	json_decref(doc);

	/* a site with no GPU key and no session: no GPU facts, only the CE */
	const char *bare[] = {"bare"};
	assert_int_equal(gg_engine_sites(E, bare, 1, 1000, 0, &doc, &err), 0);
	s = site_of(doc, "bare");
	assert_int_equal(json_array_size(json_object_get(s, "gpu_models")), 0);
	assert_true(json_is_null(json_object_get(s, "gpu_memory_mb")));
	assert_int_equal(json_array_size(json_object_get(s, "sources")), 1);
	json_decref(doc);
}

/* What the cache of sessions' GPUs holds is read back as outside text. */
static void test_seen_file(void **state)
{
	(void)state;
	char path[160];
	snprintf(path, sizeof path, "%s/cache/gridgpu/seen-gpus.json", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"sites\":{\"good\":{\"time\":\"x\",\"gpus\":[{\"name\":3}]}}}", f);
	fclose(f);
	const char *names[] = {"good"};
	json_t *doc = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_sites(E, names, 1, 1000, 0, &doc, &err), 0);
	json_t *s = site_of(doc, "good");
	assert_string_equal(str(s, "gpus_from"), "profile");
	json_decref(doc);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not json", f);
	fclose(f);
	json_t *seen = gg_gpu_seen_load();
	assert_true(json_is_object(seen) && json_object_size(seen) == 0);
	json_decref(seen);
}

/* Matchmaking: what cannot satisfy the job is dropped with the reason, the rest
 * ranked by expected wait (waiting less free slots), ties in the order given. */
static const char *match_of(struct gg_jd_resources *res, const char *const *names, size_t n,
			    char *ranking, size_t len)
{
	json_t *doc = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_match(E, names, n, res, 300, &doc, &err), 0);
	size_t i, used = 0;
	json_t *r;
	ranking[0] = '\0';
	json_array_foreach (json_object_get(doc, "ranking"), i, r) {
		const char *why = json_string_value(json_object_get(r, "reason"));
		used += (size_t)snprintf(ranking + used, len - used, "%s%s%s%s", i ? "|" : "",
					 json_string_value(json_object_get(r, "site")),
					 why ? ": " : "", why ? why : "");
	}
	static char line[256];
	snprintf(line, sizeof line, "%s",
		 json_is_string(json_object_get(doc, "why"))
			 ? json_string_value(json_object_get(doc, "why"))
			 : "(none)");
	json_decref(doc);
	return line;
}

static void test_match(void **state)
{
	(void)state;
	const char *names[] = {"good", "busy", "big", "slow1", "bare"};
	char ranking[2048];
	struct gg_jd_resources res = {.gpus = 1, .min_gpu_memory = 24ull << 30};
	assert_string_equal(match_of(&res, names, 5, ranking, sizeof ranking),
			    "chose big: 30 free slots, 8 waiting (the best of 2 sites that fit; 3 "
			    "dropped)");
	assert_string_equal(ranking,
			    "big|busy|good: its GPUs have 16384 MiB, the job needs 24576 MiB|"
			    "slow1: not reachable: https://slow1.example/arex: no answer within "
			    "1.5 s|bare: no GPU mapping (gpu_queue, gpu_rte)"); /* slow1: kept */
	/* the capability */
	struct gg_jd_resources cc = {.gpus = 1, .min_capability = "8.0"};
	const char *two[] = {"good", "busy"};
	assert_string_equal(match_of(&cc, two, 2, ranking, sizeof ranking),
			    "chose busy: 30 free slots, 10 waiting (the only site that fits; 1 "
			    "dropped)");
	assert_string_equal(ranking, "busy|good: its GPUs' capability is 7.5, the job needs 8.0");
	/* a MIG profile: a site that lists its profiles must list it */
	struct gg_jd_resources mig = {.mig = "2g.20gb"};
	assert_string_equal(match_of(&mig, two, 2, ranking, sizeof ranking),
			    "chose busy: 30 free slots, 10 waiting (the only site that fits; 1 "
			    "dropped)");
	assert_string_equal(ranking, "busy|good: offers no MIG 2g.20gb");
	mig.mig = "1g.10gb";
	match_of(&mig, two, 2, ranking, sizeof ranking);
	assert_string_equal(
		ranking,
		"busy|good"); /* both fit: busy has more free slots than good's gpu queue */
	/* no GPU asked: a site without GPU mapping fits too; none fits: no choice */
	struct gg_jd_resources cpu = {.cpus = 1};
	const char *bare[] = {"bare"};
	match_of(&cpu, bare, 1, ranking, sizeof ranking);
	assert_string_equal(ranking, "bare");
	struct gg_jd_resources gpu = {.gpus = 1};
	assert_string_equal(match_of(&gpu, bare, 1, ranking, sizeof ranking), "(none)");
	/* whether a GPU job finds a free slot now (submit --gpus 0-1): a GPU
	 * mapping, its RTE listed, a free slot in its GPU queue */
	const char *three[] = {"busy", "bare", "slow1"};
	json_t *doc = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_match(E, three, 3, &cpu, 300, &doc, &err), 0);
	size_t i;
	json_t *r;
	char got[256] = "";
	json_array_foreach (json_object_get(doc, "ranking"), i, r)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s=%d", i ? " " : "",
			 json_string_value(json_object_get(r, "site")),
			 json_is_true(json_object_get(r, "gpu_free")));
	assert_string_equal(got, "bare=0 busy=1 slow1=0");
	json_decref(doc);
	/* the image's architecture against the CE's published platform (amd64):
	 * another is dropped, x86_64 is amd64 */
	const char *arches[] = {"arm64", "x86_64", "AMD64"};
	const char *want[] = {"(null) good: its nodes are amd64, the image is arm64", "good good:-",
			      "good good:-"};
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(gg_engine_match_arch(E, two, 1, &cpu, arches[k], 300, &doc, &err),
				 0);
		r = json_array_get(json_object_get(doc, "ranking"), 0);
		const char *why = json_string_value(json_object_get(r, "reason"));
		snprintf(got, sizeof got, "%s %s%s%s",
			 json_is_string(json_object_get(doc, "chosen"))
				 ? json_string_value(json_object_get(doc, "chosen"))
				 : "(null)",
			 json_string_value(json_object_get(r, "site")), why ? ": " : ":-",
			 why ? why : "");
		assert_string_equal(got, want[k]);
		json_decref(doc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glue2),     cmocka_unit_test(test_parallel_timeout),
		cmocka_unit_test(test_cache),     cmocka_unit_test(test_sources),
		cmocka_unit_test(test_seen_file), cmocka_unit_test(test_match),
	};
	return cmocka_run_group_tests_name("offer", tests, setup, teardown);
}
