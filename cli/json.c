/* The --json documents: one object per command, {"schema": "gridgpu.<cmd>/1", ...},
 * described by doc/json/<cmd>.schema.json and gridgpu-json(7). Times are ISO 8601
 * in UTC, durations whole seconds (names ending in _seconds), no internal field
 * of the store (its uid, key path, record version, epoch seconds). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "gridgpu/session.h"
#include "gridgpu/engine.h"

json_t *ui_json_time(int64_t t)
{
	char b[40];
	return t > 0 ? gg_json_text(gg_time_iso(t, b, sizeof b)) : json_null();
}

/* key: the time t as ISO 8601 UTC, left out when there is none. */
static void set_time(json_t *o, const char *key, int64_t t)
{
	char b[40];
	if (t > 0)
		gg_json_set_text(o, key, gg_time_iso(t, b, sizeof b));
}

static void set_str(json_t *o, const char *key, const char *v)
{
	if (v)
		gg_json_set_text(o, key, v);
}

static void set_int(json_t *o, const char *key, int64_t v)
{
	if (v)
		gg_json_set(o, key, json_integer((json_int_t)v));
}

/* Which deadline applies now (gg_record_deadline). */
static void set_deadline(json_t *o, const struct gg_record *r)
{
	enum gg_deadline kind;
	int64_t at = gg_record_deadline(r, &kind);
	if (kind == GG_DEADLINE_NONE)
		return;
	json_t *d = json_object();
	gg_json_set_text(d, "kind", kind == GG_DEADLINE_CONNECT ? "connect" : "walltime");
	set_time(d, "at", at);
	gg_json_set(o, "deadline", d);
}

/* What the session launcher published: its sshd and its activity. */
static void set_session(json_t *o, const struct gg_record *r)
{
	set_str(o, "node", r->node);
	set_int(o, "port", r->port);
	set_str(o, "user", r->user);
	set_str(o, "host_key", r->host_key);
	set_str(o, "session_dir", r->sessiondir);
	set_int(o, "connect_deadline_seconds", r->connect_deadline);
	set_int(o, "idle_limit_seconds", r->idle_limit);
	set_time(o, "started", r->started);
	set_time(o, "connect_by", r->deadline_at);
	set_time(o, "first_login", r->first_login);
	if (r->started)
		gg_json_set(o, "logins", json_integer((json_int_t)r->logins));
	if (r->state == GG_S_READY)
		gg_json_set(o, "connections", json_integer((json_int_t)r->connections));
	set_time(o, "last_activity", r->last_activity);
	set_time(o, "activity_as_of", r->activity_at);
	set_time(o, "idle_since", r->idle_since);
	set_str(o, "active_reason", r->active_reason);
	if (r->snapshot_at)
		gg_json_set(o, "snapshot_bytes", json_integer((json_int_t)r->snapshot_size));
	set_time(o, "snapshot_at", r->snapshot_at);
	set_str(o, "snapshot_error", r->snapshot_error);
	set_str(o, "resumed_from", r->resumed_from);
	set_deadline(o, r);
	set_str(o, "race", r->race);
	set_str(o, "race_name", r->race_name);
	if (r->race)
		gg_json_set(o, "race_lost", json_boolean(r->race_lost != 0));
}

/* The outputs at storage, as [{"name", "url"}]. */
/* The job's command as its words (argv): left out when the line, of a job an
 * older gridgpu recorded, does not split. */
static void set_argv(json_t *o, const struct gg_record *r)
{
	char **w = NULL;
	if (!r->command || gg_argv_split(r->command, &w, NULL) < 0)
		return;
	json_t *a = json_array();
	for (size_t i = 0; w[i]; i++)
		gg_json_append(a, gg_json_text(w[i]));
	gg_json_set(o, "argv", a);
	gg_argv_free(w);
}

static void set_storage(json_t *o, const struct gg_record *r)
{
	struct gg_storage_output *so = NULL;
	size_t n = 0;
	if (!r->storage_outputs || gg_storage_outputs(r, &so, &n, NULL) < 0 || !n)
		return;
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		gg_json_append(a, gg_json_object("name", gg_json_text(so[i].name), "url",
						 gg_json_text(so[i].url), NULL));
	gg_json_set(o, "storage_outputs", a);
	gg_storage_outputs_free(so, n);
}

/* How a failed job's command ended, as its wrapper recorded it: "exit" */
static void set_exit(json_t *o, const struct gg_record *r)
{
	if (!r->exit_read)
		return;
	json_t *x = json_object(), *tail = json_array();
	gg_json_set(x, "status", json_integer((json_int_t)r->exit_status));
	if (r->exit_status > 128 && r->exit_status < 160)
		gg_json_set(x, "signal", json_integer((json_int_t)r->exit_status - 128));
	gg_json_set(x, "oom_kills", json_integer((json_int_t)r->oom_kills));
	for (const char *p = r->stderr_tail; p && *p;) {
		size_t n = strcspn(p, "\n");
		gg_json_append(tail, gg_json_textn(p, n));
		p += n + (p[n] == '\n');
	}
	gg_json_set(x, "stderr_tail", tail);
	gg_json_set(o, "exit", x);
}

json_t *cli_record_json(const struct gg_record *r)
{
	json_t *o = json_object();
	set_str(o, "name", r->name);
	set_str(o, "kind", r->kind == GG_REC_JOB ? "job" : "session");
	set_str(o, "state", gg_sess_state_name(r->state));
	if (r->state == GG_S_UNKNOWN)
		set_str(o, "last_known_state", gg_sess_state_name(r->last_known));
	set_str(o, "reason", r->error);
	set_str(o, "site", r->site);
	set_str(o, "ce", r->ce);
	set_str(o, "job_id", r->job_id);
	set_str(o, "ce_state", r->ce_state);
	set_time(o, "created", r->created);
	set_time(o, "updated", r->updated);
	set_int(o, "walltime_seconds", r->walltime);
	set_int(o, "gpus", r->gpus);
	set_str(o, "mig", r->mig);
	set_int(o, "cpus", r->cpus);
	set_int(o, "memory_bytes", (int64_t)r->memory);
	set_str(o, "image", r->image);
	set_str(o, "queue", r->queue);
	set_str(o, "auth", r->auth);
	if (r->kind == GG_REC_SESSION) {
		set_session(o, r);
	} else {
		set_str(o, "image_path", r->image_path);
		set_str(o, "command", r->command);
		set_argv(o, r);
		set_str(o, "outputs_dir", r->outputs_dir);
		set_str(o, "staging", r->staging);
		set_int(o, "storage_inputs", r->remote_inputs);
		set_storage(o, r);
		set_exit(o, r);
	}
	return o;
}
