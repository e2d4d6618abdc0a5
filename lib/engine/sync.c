/* The state machine: records refreshed from their CE. */
#include "store/store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ce/ce.h"
#include "engine/sync.h"

static void set_str(char **f, const char *v)
{
	char *n = v ? strdup(v) : NULL;
	free(*f);
	*f = n;
}

/* One line from a CE text: the first non-empty line, trimmed, at most 300 chars. */
static void first_line(const char *text, char *out, size_t len)
{
	out[0] = '\0';
	if (!text)
		return;
	while (*text == '\n' || *text == ' ' || *text == '\r')
		text++;
	size_t n = strcspn(text, "\r\n");
	if (n > 300)
		n = 300;
	snprintf(out, len, "%.*s", (int)n, text);
}

static void last_line(const char *text, char *out, size_t len)
{
	out[0] = '\0';
	if (!text)
		return;
	const char *end = text + strlen(text);
	while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	const char *start = end;
	while (start > text && start[-1] != '\n')
		start--;
	size_t n = (size_t)(end - start);
	snprintf(out, len, "%.*s", (int)(n > 300 ? 300 : n), start);
}

/* A-REX's data staging failed ("Failed in data staging: ..."): which file,
 * where, and the storage's words, from its errors log (the node's last line is
 * beside the point). 1 with *summary set (NULL when out of memory), else 0. */
static int staging_failure(struct gg_ce *ce, const struct gg_record *r, const char *failed,
			   char **summary)
{
	char *errors = NULL;
	char which[1024];
	struct gg_err e = {0};
	if (strncmp(failed, "Failed in data staging", 22))
		return 0;
	int found = gg_ce_diagnose(ce, r->job_id, "errors", &errors, &e) == 0 &&
		    gg_arc_staging_failure(errors, which, sizeof which);
	free(errors);
	if (found)
		*summary = strdup(which);
	return found;
}

/* Why a job failed, in one line; *walltime set when the batch system ended it
 * at its time limit (then the CE's words alone: the node's last line is the
 * signal's echo, "the job was cancelled"). */
static int diagnose(struct gg_ce *ce, const struct gg_record *r, char **summary, int *walltime)
{
	*summary = NULL;
	*walltime = 0;
	if (!r->job_id)
		return -1;
	char *failed = NULL, *launcher = NULL;
	char a[320] = "", b[320] = "";
	struct gg_err e = {0};
	if (gg_ce_diagnose(ce, r->job_id, "failed", &failed, &e) == 0)
		first_line(failed, a, sizeof a);
	int slurm = gg_slurm_failed_walltime(a); /* a slurm+ssh CE: Slurm's word itself */
	if (slurm || gg_arc_failed_walltime(a)) {
		char d[32] = "?";
		if (r->walltime > 0)
			gg_duration_format(r->walltime, d, sizeof d);
		*walltime = 1;
		*summary = gg_strdup_printf("ended by walltime: its walltime (%s) ran out and the "
					    "batch system stopped the job (%s%s)",
					    d, slurm ? "" : "CE: ", a);
		free(failed);
		return *summary ? 0 : -1;
	}
	if (staging_failure(ce, r, a, summary)) {
		free(failed);
		return *summary ? 0 : -1;
	}
	/* A-REX could not hand the job to the batch system ("Job submission to
	 * LRMS failed"): the batch system's refusal, from the CE's errors log
	 * (Slurm refuses a gres the site does not have, such as a MIG profile
	 * its nodes are not split into) */
	char said[320] = "";
	if (strstr(a, "submission to LRMS failed")) {
		char *errors = NULL;
		if (gg_ce_diagnose(ce, r->job_id, "errors", &errors, &e) == 0)
			gg_arc_lrms_refusal(errors, said, sizeof said);
		free(errors);
	}
	if (said[0]) {
		*summary = r->mig ? gg_strdup_printf("%s; the batch system said: %s (the job asked "
						     "for a MIG device of profile %s: the site "
						     "may have none of that profile)",
						     a, said, r->mig)
				  : gg_strdup_printf("%s; the batch system said: %s", a, said);
		free(failed);
		return *summary ? 0 : -1;
	}
	size_t len;
	/* the node's last word: the launcher's log; for a batch job the wrapper's
	 * own last line, when it ended the job itself (a GPU that falls short of
	 * the job's minimums, no container runtime), not the command's stderr */
	if (!(r->kind == GG_REC_JOB && r->exit_read) && /* the command ran: its stderr is not */
	    gg_ce_get(ce, r->job_id, r->kind == GG_REC_JOB ? GG_JOB_ERR_NAME : GG_LAUNCHER_LOG,
		      1 << 20, &launcher, &len, &e) == 0)
		last_line(launcher, b, sizeof b);
	if (r->kind == GG_REC_JOB && strncmp(b, "gridgpu-wrapper: ", 17) != 0)
		b[0] = '\0';
	if (a[0] && b[0])
		*summary = gg_strdup_printf("%s; the node said: %s", a, b);
	else if (a[0] || b[0])
		*summary = strdup(a[0] ? a : b);
	free(failed);
	free(launcher);
	return *summary ? 0 : -1;
}

/* A failed job's wrapper file (how its command ended), read once into the
 * record; 0 when read, -1 when there is none (the command never ran) or it
 * cannot be read. */
static int read_exit(struct gg_ce *ce, struct gg_record *r)
{
	char *text = NULL;
	size_t len;
	struct gg_err e = {0};
	struct gg_job_exit x;
	if (r->kind != GG_REC_JOB || !r->job_id ||
	    gg_ce_get(ce, r->job_id, GG_JOB_EXIT_NAME, GG_JOB_EXIT_MAX, &text, &len, &e) < 0)
		return -1;
	int rc = gg_job_exit_parse(text, len, &x, &e);
	free(text);
	if (rc == 0) {
		r->exit_read = (int64_t)time(NULL);
		r->exit_status = x.status;
		r->oom_kills = x.oom_kills;
		free(r->stderr_tail);
		r->stderr_tail = x.tail;
		x.tail = NULL;
	}
	gg_job_exit_clear(&x);
	return rc;
}

/* Why a failed job failed in the user's words: how its command ended when the
 * wrapper recorded it (its stderr's tail kept beside; the CE's walltime first:
 * the command's end is then the batch system's signal); a command that exited
 * 0 in a failed job: the CE's reason, and that the command had exited 0 (its
 * output staging failed). */
static char *job_reason(struct gg_record *r, char *ce_said, int walltime)
{
	if (walltime)
		return ce_said;
	char *how = gg_job_exit_summary(r->exit_status, r->oom_kills), *out = how;
	if (how && r->exit_status == 0)
		out = gg_strdup_printf("%s (the command exited 0: the job failed after it)",
				       ce_said ? ce_said : "the CE does not say why");
	if (out != how)
		free(how);
	if (!out)
		return ce_said;
	free(ce_said);
	return out;
}

int gg_session_diagnose(struct gg_ce *ce, const struct gg_record *r, char **summary)
{
	int walltime;
	return diagnose(ce, r, summary, &walltime);
}

/* The launcher's activity (it rewrites its file on each login and each change
 * of the connections): what decides which deadline applies. */
static void apply_activity(struct gg_record *r, const struct gg_launch_info *li)
{
	r->last_activity = li->last_activity;
	r->first_login = li->first_login;
	r->logins = li->logins;
	r->connections = li->connections;
	r->activity_at = li->updated;
	r->idle_since = li->idle_since;
	set_str(&r->active_reason, li->active_reason);
}

/* Fold the launcher's file into a record; returns 1 when the record changed. */
static int apply_launch(struct gg_record *r, const struct gg_launch_info *li)
{
	r->snapshot_size = li->snapshot_size;
	r->snapshot_at = li->snapshot_at;
	set_str(&r->snapshot_error, li->snapshot_error);
	if (strcmp(li->state, "ready") != 0) {
		if (li->started)
			r->started = li->started;
		if (li->deadline_at)
			r->deadline_at = li->deadline_at;
		if (strcmp(li->state, "ended") == 0 && li->reason && li->reason[0] &&
		    (!r->error || strcmp(r->error, li->reason)))
			set_str(&r->error, li->reason);
		return 0;
	}
	if (r->host_key && strcmp(r->host_key, li->host_key) != 0) {
		/* Pinned once, never replaced: a new key is an attack or a bug. */
		r->state = GG_S_FAILED;
		set_str(&r->error, "the session's host key changed after it was pinned: refusing "
				   "it (possible man-in-the-middle); kill the session");
		return 1;
	}
	set_str(&r->host_key, li->host_key);
	set_str(&r->node, li->node);
	set_str(&r->user, li->user);
	set_str(&r->sessiondir, li->sessiondir);
	r->port = li->port;
	r->started = li->started;
	r->deadline_at = li->deadline_at;
	apply_activity(r, li);
	if (li->idle_limit)
		r->idle_limit = li->idle_limit;
	/* Published, key pinned: "ready" only once the sshd has been seen to
	 * answer with that key through the hops (the caller probes). */
	if (r->state != GG_S_READY)
		r->state = GG_S_STARTING;
	return 1;
}

/* The launcher's file, folded into the record. One that does not parse (a
 * node's hostile text, a launcher of another version) changes nothing but the
 * reason, which says so until a good one is read: the session is not failed,
 * the next refresh reads the file again. */
#define UNREADABLE "the session file the node published cannot be read"
#define KEPT       " (the session is kept; read again at each refresh)"

/* A session that ended while its file could not be read: the reason says so
 * for good ("it ended before ...: why"), no longer as something to retry. */
static void unreadable_ended(struct gg_record *r)
{
	char *t = gg_strdup_printf("it ended while the session file the node published could "
				   "not be read: %s",
				   r->launch_error);
	if (t) {
		free(r->error);
		r->error = t;
	}
	set_str(&r->launch_error, NULL);
}

static void fetch_launch(struct gg_ce *ce, struct gg_record *r)
{
	char *text = NULL;
	size_t len;
	struct gg_err e = {0};
	if (gg_ce_get(ce, r->job_id, GG_SESSION_FILE, 64 * 1024, &text, &len, &e) < 0)
		return; /* not published yet */
	struct gg_launch_info li;
	if (gg_launch_info_parse(text, len, &li, &e) < 0) {
		char *why = gg_strdup_printf("%s: %s%s", UNREADABLE, e.msg, KEPT);
		if (why) {
			free(r->error);
			r->error = why;
			set_str(&r->launch_error, e.msg);
		}
	} else {
		/* the launcher's own word replaces a reason of ours it had */
		if (strcmp(li.state, "ended") != 0 && gg_launch_unreadable(r)) {
			set_str(&r->error, NULL);
			set_str(&r->launch_error, NULL);
		}
		const char *before = r->error;
		apply_launch(r, &li);
		if (r->error != before) /* its reason for the end */
			set_str(&r->launch_error, NULL);
		gg_launch_info_clear(&li);
	}
	free(text);
}

int gg_launch_unreadable(const struct gg_record *r)
{
	return r->launch_error != NULL;
}

int gg_session_published(const struct gg_record *r)
{
	return r->kind == GG_REC_SESSION && r->state == GG_S_STARTING && r->host_key && r->node &&
	       r->port > 0;
}

/* A job's data staging as the CE says it now: "staging in D/N" while it
 * fetches the storage inputs (from what is still to fetch), "staging out"
 * while it uploads outputs; NULL otherwise. */
static void apply_staging(struct gg_ce *ce, struct gg_record *r, const struct gg_ce_result *res)
{
	const char *raw = res->raw_state ? res->raw_state : "";
	char *text = NULL, *input = NULL;
	struct gg_err e = {0};
	if (r->kind != GG_REC_JOB)
		return;
	if (r->remote_inputs > 0 && !strncmp(raw, "PREPAR", 6) && ce &&
	    gg_ce_diagnose(ce, r->job_id, "input", &input, &e) == 0) {
		int64_t pending = gg_arc_inputs_pending(input);
		if (pending > r->remote_inputs)
			pending = r->remote_inputs;
		text = gg_strdup_printf("staging in %lld/%lld",
					(long long)(r->remote_inputs - pending),
					(long long)r->remote_inputs);
	} else if (r->storage_outputs && res->state == GG_CE_FINISHING) {
		text = strdup("staging out");
	}
	free(input);
	free(r->staging);
	r->staging = text;
}

/* An ended session's snapshot, as its launcher's last file says (killed or failed:
 * its reason stays ours). Read until the launcher's word on it is there. */
static void snapshot_word(struct gg_ce *ce, struct gg_record *r)
{
	if (!ce || r->kind != GG_REC_SESSION || !r->image || r->snapshot_at || r->snapshot_error)
		return;
	char *text = NULL;
	size_t len;
	struct gg_err e = {0};
	struct gg_launch_info li;
	if (gg_ce_get(ce, r->job_id, GG_SESSION_FILE, 64 * 1024, &text, &len, &e) == 0 &&
	    gg_launch_info_parse(text, len, &li, &e) == 0) {
		if (!strcmp(li.state, "ended")) {
			r->snapshot_size = li.snapshot_size;
			r->snapshot_at = li.snapshot_at;
			set_str(&r->snapshot_error, li.snapshot_error);
		}
		gg_launch_info_clear(&li);
	}
	free(text);
}

void gg_session_apply(struct gg_ce *ce, struct gg_record *r, const struct gg_ce_result *res)
{
	if (gg_sess_state_ended(r->state) && r->state != GG_S_UNKNOWN) {
		if (res->state == GG_CE_KILLED || res->state == GG_CE_FAILED ||
		    res->state == GG_CE_FINISHED)
			snapshot_word(ce, r);
		return; /* final: a killed session stays killed */
	}
	set_str(&r->ce_state, res->raw_state ? res->raw_state : gg_ce_state_name(res->state));
	apply_staging(ce, r, res);
	switch (res->state) {
	case GG_CE_UNKNOWN:
		if (r->state != GG_S_UNKNOWN)
			r->last_known = r->state;
		r->state = GG_S_UNKNOWN;
		return;
	case GG_CE_ACCEPTED:
	case GG_CE_QUEUED:
	case GG_CE_RUNNING:
		if (r->state == GG_S_UNKNOWN)
			r->state = r->last_known;
		if (r->kind == GG_REC_JOB) {
			r->state = res->state == GG_CE_RUNNING ? GG_S_RUNNING : GG_S_QUEUED;
			return;
		}
		/* Published and pinned: the caller's probe makes it ready (the
		 * CE may still say SUBMITTING meanwhile). Ready: the launcher's
		 * file again, for its activity (one GET: no bulk file read). */
		if (r->state == GG_S_READY && ce)
			fetch_launch(ce, r);
		if (r->state == GG_S_READY || gg_session_published(r))
			return;
		r->state = res->state == GG_CE_RUNNING ? GG_S_STARTING : GG_S_QUEUED;
		/* Session files are often readable before the CE says RUNNING. */
		if (ce)
			fetch_launch(ce, r);
		return;
	case GG_CE_FINISHING:
		if (r->state == GG_S_UNKNOWN)
			r->state = r->last_known;
		return;
	case GG_CE_FINISHED:
	case GG_CE_GONE:
		if (ce && r->kind == GG_REC_SESSION)
			fetch_launch(ce, r); /* why it ended */
		if (gg_launch_unreadable(r))
			unreadable_ended(r); /* nothing more to read: why, for good */
		if (r->state != GG_S_FAILED)
			r->state = GG_S_FINISHED;
		return;
	case GG_CE_FAILED:
		r->state = GG_S_FAILED;
		if (ce) {
			char *sum = NULL;
			int walltime = 0, ran = read_exit(ce, r) == 0;
			if (diagnose(ce, r, &sum, &walltime) < 0)
				sum = NULL;
			if (ran)
				sum = job_reason(r, sum, walltime);
			if (sum) {
				free(r->error);
				r->error = sum;
			}
			/* a session's walltime is its planned end, not a failure; a
			 * batch job stopped before its command ended did fail */
			if (walltime && r->kind == GG_REC_SESSION)
				r->state = GG_S_FINISHED;
		}
		if (!r->error)
			set_str(&r->error, "the job failed on the CE (see 'gridgpu status')");
		return;
	case GG_CE_KILLED:
		r->state = GG_S_KILLED;
		snapshot_word(ce, r);
		return;
	}
}

/* A record whose CE state "running" may still be a wait in the batch
 * system's queue: a job not yet seen running, a session not yet published. */
static int may_be_queued(const struct gg_record *r)
{
	if (gg_sess_state_ended(r->state))
		return 0;
	if (r->kind == GG_REC_JOB)
		return r->state != GG_S_RUNNING;
	return r->state != GG_S_READY && !gg_session_published(r);
}

/* A-REX says RUNNING (INLRMS) for a job its batch system still holds in the
 * queue: ask the CE what the batch system says, for those records only (one
 * request), and take "queued" from it. Best effort: status's word stands when
 * the CE cannot tell. */
/* The batch system's id of a queued job and its word, as the CE gave them
 * ("ID" or "ID\nLRMS: ..."), into seen. */
static void lrms_seen(struct gg_lrms_seen *seen, const char *said)
{
	if (!seen || !said)
		return;
	size_t n = strcspn(said, "\n");
	free(seen->local_id);
	free(seen->message);
	seen->local_id = n ? strndup(said, n) : NULL;
	seen->message = said[n] ? strdup(said + n + 1) : NULL;
}

void gg_lrms_seen_clear(struct gg_lrms_seen *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].local_id);
		free(s[i].message);
		s[i].local_id = s[i].message = NULL;
	}
}

/* The batch system's view asked ahead, on a second connection while the
 * status call runs: of every record that may still wait in the batch
 * system's queue (a superset of those lrms_refine asks about). */
struct lrms_ahead {
	struct gg_ce *ce; /* the second handle; NULL: not asked ahead */
	const char **ids;
	size_t *at; /* ids[j] is the status call's ids[at[j]] */
	size_t n;
	struct gg_ce_result *res;
	int rc, joined;
	pthread_t th;
};

static void *ahead_ask(void *ud)
{
	struct lrms_ahead *a = ud;
	struct gg_err e = {0}; /* the status call says what is wrong */
	a->rc = gg_ce_lrms_status(a->ce, a->ids, a->n, &a->res, &e);
	return NULL;
}

static void ahead_start(struct gg_ce *ce, const struct gg_record *recs, const char **ids,
			const size_t *idx, size_t k, struct lrms_ahead *a)
{
	memset(a, 0, sizeof *a);
	a->ids = calloc(k ? k : 1, sizeof *a->ids);
	a->at = calloc(k ? k : 1, sizeof *a->at);
	for (size_t i = 0; a->ids && a->at && i < k; i++)
		if (may_be_queued(&recs[idx[i]])) {
			a->at[a->n] = i;
			a->ids[a->n++] = ids[i];
		}
	if (!a->n || gg_ce_clone(ce, &a->ce, NULL) < 0)
		return;
	if (pthread_create(&a->th, NULL, ahead_ask, a) != 0) {
		gg_ce_free(a->ce);
		a->ce = NULL;
	}
}

/* The answer asked ahead, once there; NULL when it was not asked or failed. */
static struct gg_ce_result *ahead_wait(struct lrms_ahead *a)
{
	if (a->ce && !a->joined)
		a->joined = !pthread_join(a->th, NULL);
	return a->ce && a->rc == 0 ? a->res : NULL;
}

static void ahead_clear(struct lrms_ahead *a)
{
	if (a->ce && a->rc == 0)
		gg_ce_results_free(a->res, a->n);
	gg_ce_free(a->ce);
	free(a->ids);
	free(a->at);
}

/* The batch system's word for the ids[i] asked about (at[], na of them):
 * from the answer asked ahead when there is one, else asked now. */
static struct gg_ce_result *lrms_ask(struct gg_ce *ce, const char **ask, const size_t *at,
				     size_t na, struct lrms_ahead *a, int *own)
{
	struct gg_ce_result *got = ahead_wait(a), *q = NULL;
	*own = 0;
	if (got) {
		q = calloc(na ? na : 1, sizeof *q);
		for (size_t j = 0, m = 0; q && j < na; j++) {
			while (m < a->n && a->at[m] < at[j])
				m++;
			q[j] = m < a->n && a->at[m] == at[j] ? got[m] : (struct gg_ce_result){0};
		}
		return q; /* shallow: the strings stay a's */
	}
	*own = 1;
	struct gg_err e = {0};
	return gg_ce_lrms_status(ce, ask, na, &q, &e) == 0 ? q : NULL;
}

static void lrms_refine(struct gg_ce *ce, struct gg_record *recs, const char **ids,
			const size_t *idx, size_t k, struct gg_ce_result *res,
			struct gg_lrms_seen *seen, struct lrms_ahead *ahead)
{
	const char **ask = calloc(k ? k : 1, sizeof *ask);
	size_t *at = calloc(k ? k : 1, sizeof *at), na = 0;
	for (size_t i = 0; ask && at && i < k; i++)
		if (res[i].state == GG_CE_RUNNING && may_be_queued(&recs[idx[i]])) {
			at[na] = i;
			ask[na++] = ids[i];
		}
	/* a backend whose status gives the batch system's reason (slurm+ssh) */
	for (size_t i = 0; seen && gg_ce_status_lrms(ce) && i < k; i++)
		if (res[i].state == GG_CE_QUEUED && res[i].reason) {
			char *said = gg_strdup_printf("\nLRMS: %s", res[i].reason);
			lrms_seen(&seen[idx[i]], said);
			free(said);
		}
	int own = 0;
	struct gg_ce_result *q = na ? lrms_ask(ce, ask, at, na, ahead, &own) : NULL;
	for (size_t j = 0; q && j < na; j++) {
		struct gg_ce_result *r = &res[at[j]];
		/* the info document still at an earlier state (SUBMITTING:
		 * it lags the live list by the infoprovider's period) does
		 * not know it runs either: queued until it says INLRMS:R */
		if (q[j].state == GG_CE_ACCEPTED) {
			r->state = GG_CE_QUEUED;
			continue;
		}
		if (q[j].state != GG_CE_QUEUED)
			continue;
		r->state = GG_CE_QUEUED;
		lrms_seen(seen ? &seen[idx[at[j]]] : NULL, q[j].reason);
		if (q[j].raw_state) {
			free(r->raw_state);
			r->raw_state = strdup(q[j].raw_state);
		}
	}
	if (own)
		gg_ce_results_free(q, na);
	else
		free(q);
	free(ask);
	free(at);
}

int gg_session_refresh(struct gg_ce *ce, struct gg_record *recs, size_t n, struct gg_err *err)
{
	return gg_session_refresh_lrms(ce, recs, n, NULL, err);
}

int gg_session_refresh_lrms(struct gg_ce *ce, struct gg_record *recs, size_t n,
			    struct gg_lrms_seen *seen, struct gg_err *err)
{
	const char **ids = calloc(n ? n : 1, sizeof *ids);
	size_t *idx = calloc(n ? n : 1, sizeof *idx);
	size_t k = 0;
	if (!ids || !idx) {
		free(ids);
		free(idx);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		if (recs[i].job_id) {
			ids[k] = recs[i].job_id;
			idx[k++] = i;
		}
	struct gg_ce_result *res = NULL;
	struct lrms_ahead ahead;
	ahead_start(ce, recs, ids, idx, k, &ahead);
	int rc = k ? gg_ce_status(ce, ids, k, &res, err) : 0;
	if (rc < 0) {
		/* Unreachable: every record becomes unknown, none is dropped. */
		struct gg_ce_result unknown = {.state = GG_CE_UNKNOWN};
		for (size_t i = 0; i < k; i++)
			gg_session_apply(NULL, &recs[idx[i]], &unknown);
	} else {
		lrms_refine(ce, recs, ids, idx, k, res, seen, &ahead);
		for (size_t i = 0; i < k; i++)
			gg_session_apply(ce, &recs[idx[i]], &res[i]);
		gg_ce_results_free(res, k);
	}
	ahead_wait(&ahead);
	ahead_clear(&ahead);
	free(ids);
	free(idx);
	return rc;
}
