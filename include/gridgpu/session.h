/* gridgpu/session.h (lib/store): the local store of sessions and batch jobs (one JSON record
 * each, written atomically, under a lock) and their state machine. */
#ifndef GRIDGPU_SESSION_H
#define GRIDGPU_SESSION_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "gridgpu/core.h"

enum gg_rec_kind { GG_REC_SESSION, GG_REC_JOB };

enum gg_sess_state {
	GG_S_REQUESTED, /* record written, job not (yet) known to be submitted */
	GG_S_QUEUED,    /* the CE has the job, not running */
	GG_S_STARTING,  /* running; the sshd not published, or published (host key
			   pinned) but not yet seen to answer (sessions) */
	GG_S_READY,     /* the sshd answered through the hops with the pinned host
			   key (sessions) */
	GG_S_RUNNING,   /* running (batch jobs) */
	GG_S_FINISHED,
	GG_S_FAILED,
	GG_S_KILLED,
	GG_S_UNKNOWN, /* the CE could not be asked; the record is kept */
};
GG_API const char *gg_sess_state_name(enum gg_sess_state s);
GG_API int gg_sess_state_parse(const char *name, enum gg_sess_state *out);
GG_API int gg_sess_state_ended(enum gg_sess_state s);
/* The state as the end of a sentence about a session or job: "was killed",
 * "has finished", "has failed", "is ready", "is queued"... (static). */
GG_API const char *gg_sess_state_phrase(enum gg_sess_state s);
/* What a progress display shows for a record now in state now, when the
 * furthest live state it showed so far was top: states on screen only move
 * forward (requested, queued, starting, ready or running), whatever the CE
 * reports meanwhile (A-REX's live list says RUNNING before its info document
 * says the batch system still holds the job: starting, then queued); an
 * ended or unknown state is shown as it is. */
GG_API enum gg_sess_state gg_sess_state_forward(enum gg_sess_state top, enum gg_sess_state now);

struct gg_record {
	int version;
	enum gg_rec_kind kind;
	char *name; /* user-facing name, unique in the store */
	char *uid;  /* client-made id, in the CE job name: gridgpu-<uid> */
	char *site;
	char *ce;     /* CE endpoint URL */
	char *job_id; /* the CE's id, once submitted */
	enum gg_sess_state state;
	enum gg_sess_state last_known; /* state before UNKNOWN */
	char *ce_state;                /* the CE's own word */
	char *error;                   /* why it failed, one line */
	int64_t created, updated;
	/* what was asked */
	int64_t walltime;
	int gpus;
	char *mig;
	int cpus;
	uint64_t memory;
	char *image;
	char *queue;
	char *auth;               /* "proxy" or "token" */
	int64_t connect_deadline; /* seconds after start */
	int64_t idle_limit;
	/* sessions: published by the launcher */
	char *node;
	int port;
	char *user;
	char *host_key; /* "ssh-ed25519 AAAA..." */
	char *sessiondir;
	int64_t started, deadline_at, last_activity;
	/* sessions: the launcher's activity, as of activity_at (when it wrote it) */
	int64_t first_login, logins, connections, activity_at;
	/* sessions: what the launcher last saw: idle since (0: active), or why
	 * active ("terminal input", "process NAME", "gpu busy", "login") */
	int64_t idle_since;
	char *active_reason;
	char *key; /* private key file for the session */
	/* jobs */
	char *image_path;
	char *command;
	char *outputs_dir;
	/* jobs: outputs the CE uploads to storage, a line "NAME URL" each; the
	 * number of inputs it fetches from storage; how far its staging got
	 * ("staging in 2/3", as the CE last said) */
	char *storage_outputs;
	int64_t remote_inputs;
	char *staging;
	/* sessions: why the session file the node published cannot be read (what the
	 * parser said), while it cannot: error then says so; NULL once it reads */
	char *launch_error;
	/* jobs: how the command ended, as the batch wrapper recorded it on the node,
	 * read once when the job is seen failed: exit_read when (0: nothing read),
	 * exit_status its exit status (128 + S: killed by signal S), oom_kills the
	 * job's out-of-memory kills, stderr_tail the last lines of its stderr (each
	 * made printable and bounded, a newline between them; NULL: none) */
	int64_t exit_read, exit_status, oom_kills;
	char *stderr_tail;
	/* sessions sent to several sites at once (request --race): race is the
	 * race's id, the same in each of its records (NULL: not racing);
	 * race_name the name the winner takes (NULL: its site's SITE-N);
	 * race_lost 1 once this one lost (it is killed and cleaned) */
	char *race, *race_name;
	int64_t race_lost;
	/* sessions with a sandbox: the snapshot of its changes the launcher wrote as
	 * it ended (freeze --session takes it then): its size in bytes and when (0:
	 * none), or why none was kept (the launcher's words, made printable) */
	int64_t snapshot_size, snapshot_at;
	char *snapshot_error;
	/* sessions started with request --resume: the name of the session whose sandbox
	 * (its image and the snapshot of its changes) this one's was made from */
	char *resumed_from;
};

/* The record's string and whole-number fields, each as the JSON key of the same
 * name, for X-macros: one list for the reader, the writer and the tests. */
/* clang-format off */
#define GG_RECORD_STR_FIELDS(X) \
	X(name) X(uid) X(site) X(ce) X(job_id) X(ce_state) X(error) X(mig) X(image) \
	X(queue) X(auth) X(node) X(user) X(host_key) X(sessiondir) X(key) X(image_path) \
	X(command) X(outputs_dir) X(active_reason) X(storage_outputs) X(staging) \
	X(launch_error) X(stderr_tail) X(race) X(race_name) X(snapshot_error) \
	X(resumed_from)
#define GG_RECORD_INT_FIELDS(X) \
	X(created) X(updated) X(walltime) X(gpus) X(cpus) X(memory) X(connect_deadline) \
	X(idle_limit) X(port) X(started) X(deadline_at) X(last_activity) X(first_login) \
	X(logins) X(connections) X(activity_at) X(idle_since) X(remote_inputs) \
	X(exit_read) X(exit_status) X(oom_kills) X(race_lost) X(snapshot_size) X(snapshot_at)
/* clang-format on */

GG_API void gg_record_clear(struct gg_record *r);
/* Deep copy; GG_ENOMEM on failure (dst is then cleared). */
GG_API int gg_record_copy(struct gg_record *dst, const struct gg_record *src);
GG_API json_t *gg_record_to_json(const struct gg_record *r);
GG_API int gg_record_from_json(json_t *j, struct gg_record *r, struct gg_err *err);
/* Validate a user-given name: [A-Za-z][A-Za-z0-9._-]{0,62}. */
GG_API int gg_record_name_valid(const char *name);

/* 1 for a live session whose sshd is published (host key pinned) but not yet
 * seen to answer. */
GG_API int gg_session_published(const struct gg_record *r);
/* The reason a record has while the launcher's file cannot be read (a
 * transient state: the record is kept as it was, the file read again at each
 * refresh); gg_launch_unreadable() tells whether r->error is that one. */
#define GG_LAUNCH_UNREADABLE "the session file the node published cannot be read"
GG_API int gg_launch_unreadable(const struct gg_record *r);

struct gg_store;

/* Open (creating with 0700) the store at dir, or at $XDG_STATE_HOME/gridgpu/records
 * when dir is NULL. Refuses a store directory others can write to. */
GG_API int gg_store_open(const char *dir, struct gg_store **out, struct gg_err *err);
GG_API void gg_store_free(struct gg_store *st);
GG_API const char *gg_store_dir(const struct gg_store *st);
/* Write a new record. With r->name NULL, picks "<prefix>-<n>" (n smallest free)
 * and sets r->name. GG_EUSAGE when the name is taken. */
GG_API int gg_store_create(struct gg_store *st, struct gg_record *r, const char *prefix,
			   struct gg_err *err);
/* GG_ENOTFOUND when absent. */
GG_API int gg_store_load(struct gg_store *st, const char *name, struct gg_record *r,
			 struct gg_err *err);
/* The record named name, else the one whose job name is: its CE job id or the
 * job's URL as arcstat prints it (on the host of the record's CE, ending in the
 * id). GG_ENOTFOUND when none, GG_EUSAGE when several records have that job. */
GG_API int gg_store_find(struct gg_store *st, const char *name, struct gg_record *r,
			 struct gg_err *err);
/* Read-modify-write under the store lock: fn changes the record; returning
 * non-zero from fn cancels the write, GG_STORE_DROP removes the record instead.
 * The record as written (or as read, when fn cancelled or dropped it) is left
 * in *out when out is not NULL. */
#define GG_STORE_DROP 2
typedef int (*gg_record_update_fn)(struct gg_record *r, void *ud);
GG_API int gg_store_update(struct gg_store *st, const char *name, gg_record_update_fn fn, void *ud,
			   struct gg_record *out, struct gg_err *err);
/* Save a whole record (under the lock), replacing what is there. */
GG_API int gg_store_save(struct gg_store *st, const struct gg_record *r, struct gg_err *err);
GG_API int gg_store_remove(struct gg_store *st, const char *name, struct gg_err *err);
/* All records, sorted by creation time. Unreadable records are skipped and
 * counted in *bad (may be NULL). Read from the same cache file as
 * gg_store_rows while the store has not changed since it was written (every
 * file otherwise, which writes the cache again when the store has been still
 * for a second): a sync of 10,000 records reads one file. */
GG_API int gg_store_list(struct gg_store *st, struct gg_record **recs, size_t *n, size_t *bad,
			 struct gg_err *err);
GG_API void gg_records_free(struct gg_record *recs, size_t n);

/* What 'list' shows of a record, and the record itself as compact JSON text. */
struct gg_record_row {
	char *name, *site, *mig;
	enum gg_rec_kind kind;
	enum gg_sess_state state;
	int gpus;
	int64_t created, started, walltime, deadline_at, last_activity, first_login;
	char *json; /* the whole record, compact JSON, one line */
};
/* Rows of every record, sorted by creation time, from one cache file when the
 * store has not changed since it was written (a full scan otherwise, which
 * rewrites the cache): listing 10,000 records reads one file. */
GG_API int gg_store_rows(struct gg_store *st, struct gg_record_row **rows, size_t *n, size_t *bad,
			 struct gg_err *err);
GG_API void gg_record_rows_free(struct gg_record_row *rows, size_t n);

/* ---- the deadline rule ---- */

/* A session may end at the first of two deadlines the launcher enforces: until
 * the user first logs in, the connect deadline (when the launcher published
 * one); from then on, the walltime counted from its start (the idle limit runs
 * beside it). */
enum gg_deadline {
	GG_DEADLINE_NONE,     /* not started yet, or ended */
	GG_DEADLINE_CONNECT,  /* log in by then, or the session ends */
	GG_DEADLINE_WALLTIME, /* started + walltime */
};
/* 1 once the user has logged in: a first login recorded, or activity seen
 * after the start. */
GG_API int gg_record_connected(const struct gg_record *r);
/* The deadline that applies now: its kind in *kind (may be NULL) and when it
 * falls, seconds since the epoch (0 for GG_DEADLINE_NONE). Of a record, and of
 * a row of the listing (the same rule on the same fields). */
GG_API int64_t gg_record_deadline(const struct gg_record *r, enum gg_deadline *kind);
GG_API int64_t gg_record_row_deadline(const struct gg_record_row *r, enum gg_deadline *kind);

/* A library libgridgpu uses and its version (static strings). */
struct gg_libversion {
	const char *name, *version;
};
/* Fill out with up to max entries: OpenSSL, libcurl, jansson, libarchive,
 * libssh2 (as they report themselves at run time), libdeflate, libsquashfs,
 * inih. Returns how many. */
GG_API size_t gg_library_versions(struct gg_libversion *out, size_t max);

#endif
