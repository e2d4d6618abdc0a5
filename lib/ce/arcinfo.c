/* A-REX's info documents remembered between commands (gg_arc_info_asked).
 *
 * Whether a job A-REX calls INLRMS waits in the batch system's queue or runs
 * there is said only by the job's info document (POST jobs?action=info).
 * A-REX's infoprovider writes every job's document again once per period (60 s
 * stock), each with the run's GLUE2 CreationTime, and nothing else changes
 * that view in between; yet asking it for 200 jobs costs A-REX about what the
 * live job list costs. So the answers are kept from one command to the next,
 * in a file per CE beside the REST versions (ce.json), with the run they are
 * of. A command first asks one job's document for its CreationTime (A-REX's
 * JSON answers blank every attribute, so that one is asked in XML): when it is
 * the remembered run, the infoprovider has not written since and the
 * remembered answers stand; else they are asked again. A cache with a check,
 * not a guess: what it answers is what the CE would have answered. Answers
 * asked after the check are labelled with the run it saw, so a label is never
 * newer than its answer (a run in between makes the next check ask again). */
#include "ce/arcinfo.h"
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* A file of 10,000 jobs' answers is about 1.5 MB. */
#define MEM_MAX     (16u << 20)
#define MEM_VERSION 1
/* A CE that gave no time to check by is not asked for one again before this
 * (seconds): a check costs a request, and the answers are then asked anyway.
 * One stock period of the infoprovider: a first job checked right after its
 * submission (its document as A-REX wrote it then, without a time) has one
 * by then. */
#define UNTIMED_FOR 60

struct mem {
	json_t *doc;      /* {"v": 1, "time": T, "jobs": {ID: [STATE, RAW, SAID]}} */
	const char *time; /* the run the answers are of; NULL: none remembered */
	json_t *jobs;
	int changed;
};

static void mem_load(const char *path, struct mem *m)
{
	char *text = NULL;
	size_t len = 0;
	*m = (struct mem){0};
	if (path && gg_file_read(path, MEM_MAX, &text, &len, NULL) == 0)
		m->doc = json_loadb(text, len, 0, NULL);
	free(text);
	if (json_integer_value(json_object_get(m->doc, "v")) != MEM_VERSION ||
	    !json_is_object(json_object_get(m->doc, "jobs"))) {
		json_decref(m->doc);
		m->doc =
			gg_json_object("v", json_integer(MEM_VERSION), "jobs", json_object(), NULL);
	}
	m->jobs = json_object_get(m->doc, "jobs");
	m->time = json_string_value(json_object_get(m->doc, "time"));
}

/* The remembered answer for id into r (1), 0 when there is none. */
static int mem_get(const struct mem *m, const char *id, struct gg_ce_result *r)
{
	json_t *a = json_object_get(m->jobs, id);
	json_int_t st = json_integer_value(json_array_get(a, 0));
	if (!json_is_array(a) || st < 0 || st > GG_CE_GONE)
		return 0;
	const char *raw = json_string_value(json_array_get(a, 1)),
		   *said = json_string_value(json_array_get(a, 2));
	r->code = 200;
	r->state = (enum gg_ce_state)st;
	r->raw_state = raw ? strdup(raw) : NULL;
	r->reason = said ? strdup(said) : NULL;
	return 1;
}

/* The answers of run t from here on (those of another run forgotten). */
static void mem_run(struct mem *m, const char *t)
{
	if (m->time && !strcmp(m->time, t))
		return;
	json_object_clear(m->jobs);
	json_object_del(m->doc, "untimed");
	gg_json_set(m->doc, "time", gg_json_text(t));
	m->time = json_string_value(json_object_get(m->doc, "time"));
	m->changed = 1;
}

/* A check found no time lately and nothing is remembered: not checked again
 * for UNTIMED_FOR seconds. */
static int untimed_lately(const struct mem *m)
{
	json_int_t at = json_integer_value(json_object_get(m->doc, "untimed"));
	return !m->time && at > 0 && (json_int_t)time(NULL) - at < UNTIMED_FOR;
}

static void mem_put(struct mem *m, const struct gg_ce_result *r)
{
	json_t *a = json_array();
	if (gg_json_append(a, json_integer((json_int_t)r->state)) < 0 ||
	    gg_json_append(a, gg_json_text(r->raw_state)) < 0 ||
	    gg_json_append(a, gg_json_text(r->reason)) < 0) {
		json_decref(a);
		return;
	}
	if (json_equal(json_object_get(m->jobs, r->id), a))
		json_decref(a);
	else if (gg_json_set(m->jobs, r->id, a) == 0)
		m->changed = 1;
}

/* The ids with from_mem[i] == 0 asked (one request, when there are any);
 * results[i] for ids[i]: asked, else remembered. The answers with a document
 * are remembered as of run t (NULL: not remembered). */
static int ask_rest(struct mem *m, const char *const *ids, size_t n, const char *from_mem,
		    const struct gg_arc_info_ops *ops, const char *t, struct gg_ce_result **results,
		    struct gg_err *err)
{
	const char **some = calloc(n ? n : 1, sizeof *some);
	size_t *at = calloc(n ? n : 1, sizeof *at), k = 0;
	struct gg_ce_result *res = calloc(n ? n : 1, sizeof *res), *got = NULL;
	int rc = some && at && res ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!from_mem[i] || !mem_get(m, ids[i], &res[i])) {
			at[k] = i;
			some[k++] = ids[i];
		}
		if (!(res[i].id = strdup(ids[i])))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (rc == 0 && k)
		rc = ops->ask(ops->ud, some, k, &got, err);
	for (size_t j = 0; rc == 0 && j < k; j++) {
		struct gg_ce_result *r = &res[at[j]];
		r->code = got[j].code;
		r->state = got[j].state;
		r->raw_state = got[j].raw_state;
		r->reason = got[j].reason;
		got[j].raw_state = got[j].reason = NULL;
		if (t && r->state != GG_CE_UNKNOWN)
			mem_put(m, r);
	}
	if (rc == 0)
		*results = res;
	else
		gg_ce_results_free(res, n);
	gg_ce_results_free(got, k);
	free(some);
	free(at);
	return rc;
}

int gg_arc_info_asked(const char *path, const char *const *ids, size_t n,
		      const struct gg_arc_info_ops *ops, struct gg_ce_result **results,
		      struct gg_err *err)
{
	struct mem m;
	char *from_mem = calloc(n ? n : 1, 1), *t = NULL;
	*results = NULL;
	if (!from_mem)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	mem_load(path, &m);
	/* the check: a remembered job's document, else any one's */
	const char *probe = n && path && !untimed_lately(&m) ? ids[0] : NULL;
	for (size_t i = 0; probe && m.time && i < n; i++)
		if (json_object_get(m.jobs, ids[i])) {
			probe = ids[i];
			break;
		}
	struct gg_err ignored = {0}; /* no time: nothing remembered, all asked */
	if (probe && ops->run(ops->ud, probe, &t, &ignored) == 0 && t) {
		for (size_t i = 0; m.time && !strcmp(t, m.time) && i < n; i++)
			from_mem[i] = json_object_get(m.jobs, ids[i]) != NULL;
		mem_run(&m, t);
	} else if (probe && !m.time) {
		/* a CE whose documents carry no time (or the first job's does
		 * not yet): not checked again for a while, all asked meanwhile */
		gg_json_set(m.doc, "untimed", json_integer((json_int_t)time(NULL)));
		m.changed = 1;
	}
	int rc = ask_rest(&m, ids, n, from_mem, ops, t, results, err);
	if (rc == 0 && m.changed)
		gg_ce_cache_save(path, m.doc);
	json_decref(m.doc);
	free(from_mem);
	free(t);
	return rc;
}

/* The first s in [p, end), or NULL (memmem is not POSIX). */
static const char *find(const char *p, const char *end, const char *s)
{
	size_t k = strlen(s);
	for (; p && end - p >= (ptrdiff_t)k; p++)
		if (!memcmp(p, s, k))
			return p;
	return NULL;
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The first ComputingActivity's CreationTime in A-REX's XML answer to
 * jobs?action=info: a strict scan for that one attribute of that one start
 * tag (nothing else of the document is read), its value checked to be a time
 * as GLUE2 writes one ("2026-12-03T05:33:02Z"). */
int gg_arc_info_time(const char *xml, size_t len, char out[GG_ARC_TIME_MAX])
{
	static const char tag[] = "<ComputingActivity", attr[] = "CreationTime=\"";
	const char *end = xml ? xml + len : NULL, *p = find(xml, end, tag), *close = NULL, *a;
	if (p && end - p > (ptrdiff_t)strlen(tag) && blank(p[strlen(tag)]))
		close = memchr(p, '>', (size_t)(end - p));
	if (!close || !(a = find(p, close, attr)) || !blank(a[-1]))
		return 0;
	a += strlen(attr);
	size_t k = 0;
	while (a + k < close && a[k] && strchr("0123456789-:TZ.+", a[k]))
		k++;
	if (k < 10 || k >= GG_ARC_TIME_MAX || a + k >= close || a[k] != '"')
		return 0;
	memcpy(out, a, k);
	out[k] = '\0';
	return 1;
}
