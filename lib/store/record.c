/* Session and job records: JSON form, states, the launcher's session file. */
#include "store/store.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *state_names[] = {"requested", "queued", "starting", "ready",  "running",
				    "finished",  "failed", "killed",   "unknown"};

const char *gg_sess_state_name(enum gg_sess_state s)
{
	return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s]
									: "unknown";
}

const char *gg_sess_state_phrase(enum gg_sess_state s)
{
	static const char *const phrases[] = {
		"is requested", "is queued",  "is starting",
		"is ready",     "is running", "has finished",
		"has failed",   "was killed", "is in an unknown state"};
	return (unsigned)s < sizeof phrases / sizeof phrases[0] ? phrases[s]
								: "is in an unknown state";
}

int gg_sess_state_parse(const char *name, enum gg_sess_state *out)
{
	for (size_t i = 0; name && i < sizeof state_names / sizeof state_names[0]; i++)
		if (strcmp(state_names[i], name) == 0) {
			*out = (enum gg_sess_state)i;
			return 0;
		}
	return -1;
}

int gg_sess_state_ended(enum gg_sess_state s)
{
	return s == GG_S_FINISHED || s == GG_S_FAILED || s == GG_S_KILLED;
}

/* Where a live state is on the way to ready (or running): -1 for the others. */
static int live_rank(enum gg_sess_state s)
{
	switch (s) {
	case GG_S_REQUESTED: return 0;
	case GG_S_QUEUED: return 1;
	case GG_S_STARTING: return 2;
	case GG_S_READY:
	case GG_S_RUNNING: return 3;
	default: return -1;
	}
}

enum gg_sess_state gg_sess_state_forward(enum gg_sess_state top, enum gg_sess_state now)
{
	int a = live_rank(top), b = live_rank(now);
	return a >= 0 && b >= 0 && b < a ? top : now;
}

/* Logged in: a first login recorded, or activity after the start. */
static int connected_of(int64_t first_login, int64_t last_activity, int64_t started)
{
	return first_login || last_activity > started;
}

/* The deadline rule on what a record and its listing row both hold. */
static int64_t deadline_of(enum gg_sess_state st, int64_t started, int64_t walltime,
			   int64_t deadline_at, int connected, enum gg_deadline *kind)
{
	enum gg_deadline k = GG_DEADLINE_NONE;
	int64_t at = 0;
	if (!gg_sess_state_ended(st) && started) {
		k = !connected && deadline_at ? GG_DEADLINE_CONNECT : GG_DEADLINE_WALLTIME;
		at = k == GG_DEADLINE_CONNECT ? deadline_at : started + walltime;
	}
	if (kind)
		*kind = k;
	return at;
}

int gg_record_connected(const struct gg_record *r)
{
	return connected_of(r->first_login, r->last_activity, r->started);
}

int64_t gg_record_deadline(const struct gg_record *r, enum gg_deadline *kind)
{
	return deadline_of(r->state, r->started, r->walltime, r->deadline_at,
			   gg_record_connected(r), kind);
}

int64_t gg_record_row_deadline(const struct gg_record_row *r, enum gg_deadline *kind)
{
	return deadline_of(r->state, r->started, r->walltime, r->deadline_at,
			   connected_of(r->first_login, r->last_activity, r->started), kind);
}

int gg_record_name_valid(const char *name)
{
	if (!name || !isalpha((unsigned char)name[0]))
		return 0;
	size_t n = 0;
	for (const char *p = name; *p; p++, n++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
			return 0;
	return n <= 63;
}

void gg_record_clear(struct gg_record *r)
{
	if (!r)
		return;
#define X(f) free(r->f);
	GG_RECORD_STR_FIELDS(X)
#undef X
	memset(r, 0, sizeof *r);
}

/* A string member: as it is when valid UTF-8, else escaped (gg_str_printable)
 * and its name added to esc, for the reader to undo: what is written reads back
 * as the same bytes, and an older reader shows the escaped text. */
static void set_field(json_t *o, json_t *esc, const char *key, const char *v)
{
	if (!v)
		return;
	if (!gg_json_text_exact(v))
		gg_json_append(esc, gg_json_text(key));
	gg_json_set_text(o, key, v);
}

json_t *gg_record_to_json(const struct gg_record *r)
{
	size_t lost = gg_json_losses();
	json_t *o = json_object(), *esc = json_array();
	gg_json_set(o, "version", json_integer(1));
	gg_json_set_text(o, "kind", r->kind == GG_REC_JOB ? "job" : "session");
	gg_json_set_text(o, "state", gg_sess_state_name(r->state));
	if (r->state == GG_S_UNKNOWN)
		gg_json_set_text(o, "last_known", gg_sess_state_name(r->last_known));
#define X(f) set_field(o, esc, #f, r->f);
	GG_RECORD_STR_FIELDS(X)
#undef X
#define X(f)      \
	if (r->f) \
		gg_json_set(o, #f, json_integer((json_int_t)r->f));
	GG_RECORD_INT_FIELDS(X)
#undef X
	if (json_array_size(esc))
		gg_json_set(o, "escaped", json_incref(esc));
	json_decref(esc);
	if (gg_json_losses() != lost) { /* a record without a value is not written */
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Does a non-negative JSON integer fit a field of size bytes (int, int64_t, uint64_t)? */
static int fits(json_int_t v, size_t size)
{
	return size >= sizeof(int64_t) || v <= INT_MAX;
}

/* Is name in the record's "escaped" list? */
static int listed(json_t *esc, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach (esc, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), name))
			return 1;
	return 0;
}

/* Undo the escaping of the string fields the writer named in "escaped". */
static int unescape_fields(json_t *j, struct gg_record *r, struct gg_err *err)
{
	json_t *esc = json_object_get(j, "escaped");
	if (!esc)
		return 0;
	if (!json_is_array(esc))
		return gg_err_set(err, GG_EPROTO, "'escaped' is not a list");
	char *u;
#define X(f)                                                   \
	if (r->f && listed(esc, #f)) {                         \
		if (!(u = gg_str_unprintable(r->f, err)))      \
			return gg_err_prefix(err, "'%s'", #f); \
		free(r->f);                                    \
		r->f = u;                                      \
	}
	GG_RECORD_STR_FIELDS(X)
#undef X
	return 0;
}

int gg_record_from_json(json_t *j, struct gg_record *r, struct gg_err *err)
{
	memset(r, 0, sizeof *r);
	if (!json_is_object(j))
		return gg_err_set(err, GG_EPROTO, "not a JSON object");
	json_t *v = json_object_get(j, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return gg_err_set(err, GG_EPROTO, "unknown record version");
	r->version = 1;
	const char *kind = json_string_value(json_object_get(j, "kind"));
	if (!kind || (strcmp(kind, "session") && strcmp(kind, "job")))
		return gg_err_set(err, GG_EPROTO, "bad or missing 'kind'");
	r->kind = strcmp(kind, "job") == 0 ? GG_REC_JOB : GG_REC_SESSION;
	if (gg_sess_state_parse(json_string_value(json_object_get(j, "state")), &r->state) < 0)
		return gg_err_set(err, GG_EPROTO, "bad or missing 'state'");
	if (gg_sess_state_parse(json_string_value(json_object_get(j, "last_known")),
				&r->last_known) < 0)
		r->last_known = r->state;
#define X(f)                                                                   \
	v = json_object_get(j, #f);                                            \
	if (v && !json_is_string(v)) {                                         \
		gg_record_clear(r);                                            \
		return gg_err_set(err, GG_EPROTO, "'%s' is not a string", #f); \
	}                                                                      \
	if (v && !(r->f = strdup(json_string_value(v)))) {                     \
		gg_record_clear(r);                                            \
		return gg_err_set(err, GG_ENOMEM, "out of memory");            \
	}
	GG_RECORD_STR_FIELDS(X)
#undef X
	int rc = unescape_fields(j, r, err);
	if (rc < 0) {
		gg_record_clear(r);
		return rc;
	}
#define X(f)                                                                                     \
	v = json_object_get(j, #f);                                                              \
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||                            \
		  !fits(json_integer_value(v), sizeof r->f))) {                                  \
		gg_record_clear(r);                                                              \
		return gg_err_set(err, GG_EPROTO, "'%s' is not a non-negative integer in range", \
				  #f);                                                           \
	}                                                                                        \
	if (v)                                                                                   \
		r->f = (__typeof__(r->f))json_integer_value(v);
	GG_RECORD_INT_FIELDS(X)
#undef X
	if (!gg_record_name_valid(r->name)) {
		gg_record_clear(r);
		return gg_err_set(err, GG_EPROTO, "bad or missing 'name'");
	}
	if (r->port < 0 || r->port > 65535) {
		gg_record_clear(r);
		return gg_err_set(err, GG_EPROTO, "bad 'port'");
	}
	return 0;
}

int gg_record_copy(struct gg_record *dst, const struct gg_record *src)
{
	*dst = *src;
#define X(f) dst->f = NULL;
	GG_RECORD_STR_FIELDS(X)
#undef X
#define X(f)                                        \
	if (src->f && !(dst->f = strdup(src->f))) { \
		gg_record_clear(dst);               \
		return GG_ENOMEM;                   \
	}
	GG_RECORD_STR_FIELDS(X)
#undef X
	return 0;
}
