/* Many records at once: sync (with adoption of jobs whose submission was cut
 * off), kill and clean, one bulk call per CE and kind of credential. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/par.h"
#include "engine/engine_int.h"
#include "engine/sync.h"
#include "http/http.h"
#include "ssh/ssh.h"

/* ---- adoption ---- */

/* Under the store lock: adopt only a record that is still waiting for its job. */
static int adopt_job(struct gg_record *r, void *ud)
{
	if (r->job_id || r->state != GG_S_REQUESTED)
		return 1; /* changed meanwhile: leave it */
	r->job_id = strdup((const char *)ud);
	r->state = GG_S_QUEUED;
	return 0;
}

static int never_submitted(struct gg_record *r, void *ud)
{
	(void)ud;
	if (r->job_id || r->state != GG_S_REQUESTED)
		return 1;
	r->state = GG_S_FAILED;
	free(r->error);
	r->error = strdup("the submission never reached the CE");
	return 0;
}

static int orphan(const struct gg_record *r)
{
	return !r->job_id && r->state == GG_S_REQUESTED && r->ce && r->uid;
}

/* Replace recs[i] with the stored record after an update that may adopt it. */
static void adopt_one(struct gg_engine *e, struct gg_record *r, const char *job_id)
{
	struct gg_record now;
	if (gg_store_update(e->st, r->name, adopt_job, (void *)job_id, &now, NULL) < 0)
		return;
	if (now.job_id && !strcmp(now.job_id, job_id))
		gg_engine_notef(e, GG_NOTE_INFO,
				"adopted %s: its job %s was submitted but never recorded", r->name,
				now.job_id);
	gg_record_clear(r);
	*r = now;
}

/* The CE's jobs that no record knows, with their names (job_names). */
static size_t unknown_jobs(struct gg_ce *ce, const struct gg_record *recs, size_t n,
			   const struct gg_ce_result *jobs, size_t nj, const char **ids,
			   char **names)
{
	size_t nu = 0;
	for (size_t k = 0; k < nj; k++) {
		int known = !jobs[k].id;
		for (size_t m = 0; m < n && !known; m++)
			known = recs[m].job_id && !strcmp(recs[m].job_id, jobs[k].id);
		if (!known)
			ids[nu++] = jobs[k].id;
	}
	return nu && gg_ce_job_names(ce, ids, nu, names, NULL) == 0 ? nu : 0;
}

/* Records written before a submission whose answer never got saved (gridgpu
 * was killed, the machine crashed): find their jobs on the CE by job name
 * (gridgpu-<uid>) and adopt them, so no job burns a GPU unseen. */
static void adopt_group(struct gg_engine *e, struct gg_record *recs, size_t n,
			const struct gg_rec_group *g)
{
	struct gg_ce *ce = NULL;
	struct gg_ce_result *jobs = NULL;
	size_t nj = 0;
	if (gg_engine_open_record_ce(e, &recs[g->idx[0]], &ce, NULL) < 0 ||
	    gg_ce_list(ce, &jobs, &nj, NULL) < 0) {
		gg_ce_free(ce);
		return; /* try again next time */
	}
	const char **ids = calloc(nj ? nj : 1, sizeof *ids);
	char **names = calloc(nj ? nj : 1, sizeof *names);
	size_t nu = ids && names ? unknown_jobs(ce, recs, n, jobs, nj, ids, names) : 0;
	for (size_t m = 0; m < g->n; m++) {
		struct gg_record *r = &recs[g->idx[m]];
		char want[32];
		snprintf(want, sizeof want, "gridgpu-%s", r->uid);
		for (size_t k = 0; k < nu; k++)
			if (names[k] && !strcmp(names[k], want)) {
				adopt_one(e, r, ids[k]);
				break;
			}
	}
	for (size_t k = 0; k < nu; k++)
		free(names[k]);
	free(names);
	free(ids);
	gg_ce_results_free(jobs, nj);
	gg_ce_free(ce);
}

static void adopt_orphans(struct gg_engine *e, struct gg_record *recs, size_t n)
{
	struct gg_rec_group *gs = NULL;
	size_t ng = 0;
	if (gg_records_by_endpoint(recs, n, orphan, &gs, &ng, NULL) < 0)
		return;
	for (size_t i = 0; i < ng; i++)
		adopt_group(e, recs, n, &gs[i]);
	gg_rec_groups_free(gs, ng);
	/* One that the CE never got, long after: failed, say why. */
	time_t now = time(NULL);
	for (size_t i = 0; i < n; i++) {
		struct gg_record *r = &recs[i];
		struct gg_record upd;
		if (!r->job_id && r->state == GG_S_REQUESTED && now - r->created > 600 &&
		    gg_store_update(e->st, r->name, never_submitted, NULL, &upd, NULL) == 0) {
			gg_record_clear(r);
			*r = upd;
		}
	}
}

/* ---- sync ---- */

static int first(int *code, int rc)
{
	if (rc < 0 && !*code)
		*code = rc;
	return rc;
}

static int submitted_live(const struct gg_record *r)
{
	return r->ce && r->job_id && !gg_sess_state_ended(r->state);
}

static int submitted(const struct gg_record *r)
{
	return r->ce && r->job_id;
}

/* One CE, one credential: its records refreshed in one call (on a thread of
 * its own when there are several CEs: one slow CE does not hold the others),
 * then probed and saved. */
struct sync_one {
	const struct gg_rec_group *g;
	struct gg_record *sub; /* the group's records, shallow copies */
	struct gg_lrms_seen *seen;
	json_t **before; /* each record as it was read, to tell what the sync changed */
	struct gg_ce *ce;
	struct gg_err err;
	int rc;
};

/* The engine's thread: the records taken, the CE opened, its deadline set. */
static void sync_prepare(struct gg_engine *e, struct gg_record *recs, struct sync_one *s,
			 int64_t deadline)
{
	const struct gg_rec_group *g = s->g;
	s->sub = calloc(g->n, sizeof *s->sub);
	s->seen = calloc(g->n, sizeof *s->seen);
	s->before = calloc(g->n, sizeof *s->before);
	for (size_t k = 0; s->sub && k < g->n; k++)
		s->sub[k] = recs[g->idx[k]]; /* shallow: moved back in sync_finish */
	s->rc = s->sub && s->seen ? gg_engine_open_record_ce(e, &recs[g->idx[0]], &s->ce, &s->err)
				  : gg_err_set(&s->err, GG_ENOMEM, "out of memory");
	struct gg_http *h = s->ce ? gg_ce_http(s->ce) : NULL;
	if (h)
		gg_http_set_deadline(h, deadline);
}

/* The CE's part, on its own thread: the CE and the group's records only
 * (each record as it was read kept first, the CEs' threads side by side). */
static void sync_ask(void *ud)
{
	struct sync_one *s = ud;
	for (size_t k = 0; s->sub && s->before && k < s->g->n; k++)
		s->before[k] = gg_record_to_json(&s->sub[k]);
	if (s->rc == 0)
		s->rc = gg_session_refresh_lrms(s->ce, s->sub, s->g->n, s->seen, &s->err);
}

/* The records the sync changed saved, all at once: they reach the disk
 * together; one it left as it was read is not even read again (whatever
 * another command did to it meanwhile stands). A record removed meanwhile
 * (kill, clean) is not an error; one that cannot be written (a full disk) is. */
static int sync_save(struct gg_engine *e, struct sync_one *s)
{
	size_t n = s->g->n, m = 0;
	struct gg_record *chg = calloc(n, sizeof *chg);
	size_t *at = calloc(n, sizeof *at);
	for (size_t k = 0; chg && at && k < n; k++) {
		json_t *now = s->before && s->before[k] ? gg_record_to_json(&s->sub[k]) : NULL;
		if (!now || !json_equal(now, s->before[k])) {
			at[m] = k;
			chg[m++] = s->sub[k]; /* shallow: moved back below */
		}
		json_decref(now);
	}
	struct gg_err e2 = {0};
	int rc = 0;
	if (!chg || !at)
		rc = gg_err_set(&e2, GG_ENOMEM, "out of memory");
	else if (m && gg_engine_save_many(e, chg, m, &e2) < 0 && e2.code != GG_ENOTFOUND)
		rc = e2.code;
	for (size_t j = 0; j < m; j++)
		s->sub[at[j]] = chg[j];
	free(chg);
	free(at);
	return rc < 0 ? gg_engine_failf(e, &e2, "saving the records of %s", s->g->ce) : 0;
}

/* The engine's thread, once the CE answered: probe, save, give the records back. */
static int sync_finish(struct gg_engine *e, struct gg_record *recs, struct sync_one *s)
{
	const struct gg_rec_group *g = s->g;
	int code = 0;
	if (s->rc < 0)
		first(&code, gg_engine_failf(e, &s->err, "syncing with %s", g->ce));
	else
		gg_engine_queue_reasons(e, s->sub, g->n, s->seen);
	for (size_t k = 0; s->rc == 0 && k < g->n; k++)
		gg_engine_probe(e, &s->sub[k], 10000, NULL);
	if (s->sub)
		first(&code, sync_save(e, s));
	for (size_t k = 0; s->sub && k < g->n; k++)
		recs[g->idx[k]] = s->sub[k];
	for (size_t k = 0; s->before && k < g->n; k++)
		json_decref(s->before[k]);
	free(s->before);
	free(s->sub);
	gg_lrms_seen_clear(s->seen, g->n);
	free(s->seen);
	gg_ce_free(s->ce);
	return code;
}

static int sync_groups(struct gg_engine *e, struct gg_record *recs, const struct gg_rec_group *gs,
		       size_t ng)
{
	struct sync_one *ss = calloc(ng ? ng : 1, sizeof *ss);
	struct gg_err err = {0};
	if (!ss) {
		gg_err_set(&err, GG_ENOMEM, "out of memory");
		return gg_engine_failf(e, &err, "sync");
	}
	int64_t deadline = gg_mono_ms() + GG_SYNC_CE_TIMEOUT_MS;
	for (size_t i = 0; i < ng; i++) {
		ss[i].g = &gs[i];
		sync_prepare(e, recs, &ss[i], deadline);
	}
	int code = 0;
	struct gg_par *par = gg_par_start(ss, ng, sizeof *ss, sync_ask);
	struct sync_one *s;
	for (size_t i = 0; !par && i < ng; i++) { /* no memory for threads: one by one */
		sync_ask(&ss[i]);
		first(&code, sync_finish(e, recs, &ss[i]));
	}
	while (par && (s = gg_par_next(par)))
		first(&code, sync_finish(e, recs, s));
	gg_par_free(par);
	free(ss);
	return code;
}

int gg_engine_sync(struct gg_engine *e, struct gg_record *recs, size_t n, int only_live)
{
	int code = 0;
	struct gg_rec_group *gs = NULL;
	size_t ng = 0;
	struct gg_err err = {0};
	adopt_orphans(e, recs, n);
	if (gg_records_by_endpoint(recs, n, only_live ? submitted_live : submitted, &gs, &ng,
				   &err) < 0)
		return gg_engine_failf(e, &err, "sync");
	first(&code, sync_groups(e, recs, gs, ng));
	gg_rec_groups_free(gs, ng);
	for (size_t i = 0; i < n; i++)
		if (recs[i].race) { /* request --race: races whose client is gone */
			gg_engine_races_settle(e);
			break;
		}
	if (gg_engine_write_ssh_config(e, &err) < 0)
		first(&code, gg_engine_failf(e, &err, "writing the SSH configuration"));
	return code;
}

/* ---- kill ---- */

static int live(const struct gg_record *r)
{
	return !gg_sess_state_ended(r->state);
}

struct mark_ud {
	const char *cancelled; /* the job id this kill cancelled (NULL: none) */
	char *late;            /* a job id the record gained meanwhile, not cancelled */
};

static int mark_killed(struct gg_record *r, void *ud)
{
	struct mark_ud *m = ud;
	if (gg_sess_state_ended(r->state))
		return 1;
	/* A request may have recorded its job between our read and now: that
	 * job must be cancelled too, or it runs on, unseen, with a killed record. */
	if (r->job_id && (!m->cancelled || strcmp(r->job_id, m->cancelled)))
		m->late = strdup(r->job_id);
	r->state = GG_S_KILLED;
	free(r->error);
	r->error = strdup("killed by the user");
	return 0;
}

/* Cancel one job found late (see mark_killed). */
static void cancel_late(struct gg_engine *e, const struct gg_record *r, const char *job_id)
{
	struct gg_ce *ce = NULL;
	struct gg_err err = {0};
	if (gg_engine_open_record_ce(e, r, &ce, &err) == 0) {
		if (r->kind == GG_REC_SESSION)
			gg_ce_put(ce, job_id, "stop", "", 0, NULL);
		gg_ce_cancel(ce, job_id);
	} else {
		gg_engine_notef(e, GG_NOTE_WARN, "%s: its job %s could not be cancelled: %s",
				r->name, job_id, err.msg);
	}
	gg_ce_free(ce);
}

/* A key gridgpu made (not the user's own --identity): under the keys dir. */
static void remove_session_key(const struct gg_record *r)
{
	struct gg_ssh_paths sp;
	if (!r->key || gg_ssh_paths_init(&sp, NULL) < 0)
		return;
	size_t l = strlen(sp.keys);
	if (strncmp(r->key, sp.keys, l) == 0 && r->key[l] == '/')
		gg_ssh_key_remove(r->key);
	gg_ssh_paths_clear(&sp);
}

/* What the CE said of each job of a bulk call, when it refused. */
static void warn_results(struct gg_engine *e, const char *const *ids, size_t n,
			 const struct gg_ce_result *res, int also_ok)
{
	for (size_t k = 0; k < n; k++)
		if (res[k].code >= 400 && res[k].code != 404 && res[k].code != also_ok)
			gg_engine_notef(e, GG_NOTE_WARN, "the CE said for job %s: %d %s", ids[k],
					res[k].code, res[k].reason ? res[k].reason : "");
}

/* The job ids of a group (NULL where a record has none yet); count in *nid. */
static const char **group_ids(const struct gg_record *recs, const struct gg_rec_group *g,
			      size_t *nid)
{
	const char **ids = calloc(g->n ? g->n : 1, sizeof *ids);
	*nid = 0;
	for (size_t k = 0; ids && k < g->n; k++)
		if (recs[g->idx[k]].job_id)
			ids[(*nid)++] = recs[g->idx[k]].job_id;
	return ids;
}

/* Has the launcher of r said it ended and what of its snapshot? */
static int launcher_done(struct gg_ce *ce, const struct gg_record *r)
{
	char *text = NULL;
	size_t len;
	struct gg_launch_info li;
	int done = 0;
	if (gg_ce_get(ce, r->job_id, GG_SESSION_FILE, 64 * 1024, &text, &len, NULL) == 0 &&
	    gg_launch_info_parse(text, len, &li, NULL) == 0) {
		done = !strcmp(li.state, "ended") && (li.snapshot_at || li.snapshot_error);
		gg_launch_info_clear(&li);
	}
	free(text);
	return done;
}

/* The group's live sessions with a sandbox, asked to stop: waited for (the snapshot's
 * time and 20 s more at most) until each launcher says it ended; those are left out
 * of the kill (ids keeps the rest, its count returned). */
static size_t await_snapshots(struct gg_engine *e, struct gg_ce *ce, const struct gg_record *recs,
			      const struct gg_rec_group *g, const char **ids, size_t nid)
{
	const struct gg_site *site = recs[g->idx[0]].site && e->cfg
					     ? gg_config_site(e->cfg, recs[g->idx[0]].site)
					     : NULL;
	int64_t wait = (site && site->snapshot_time ? site->snapshot_time : GG_SNAPSHOT_TIME) + 20;
	int64_t end = (int64_t)time(NULL) + wait;
	size_t kept = 0;
	for (size_t i = 0; i < nid; i++) {
		const struct gg_record *r = NULL;
		for (size_t k = 0; k < g->n && !r; k++)
			if (recs[g->idx[k]].job_id == ids[i])
				r = &recs[g->idx[k]];
		int saves = r && r->kind == GG_REC_SESSION && r->image && r->state == GG_S_READY &&
			    strncmp(r->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK));
		int done = 0;
		while (saves && !(done = launcher_done(ce, r)) && (int64_t)time(NULL) < end &&
		       !(e->cancel && e->cancel(e->ud)))
			sleep(1);
		if (!done)
			ids[kept++] = ids[i];
	}
	return kept;
}

/* Kill the group's jobs on its CE, with the group's own credential. */
static int kill_on_ce(struct gg_engine *e, struct gg_record *recs, const struct gg_rec_group *g,
		      struct gg_err *err)
{
	size_t nid;
	const char **ids = group_ids(recs, g, &nid);
	struct gg_ce *ce = NULL;
	int rc = ids ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && nid)
		rc = gg_engine_open_record_ce(e, &recs[g->idx[0]], &ce, err);
	/* A fork back end cannot signal the job's processes: tell the launcher
	 * to stop through its session dir, then cancel. */
	for (size_t k = 0; rc == 0 && nid && k < g->n; k++) {
		const struct gg_record *r = &recs[g->idx[k]];
		if (r->job_id && r->kind == GG_REC_SESSION)
			gg_ce_put(ce, r->job_id, "stop", "", 0, NULL);
	}
	/* A session with a sandbox: its launcher saves what changed and ends the job
	 * itself; A-REX would empty the job's directory of a job it kills */
	if (rc == 0 && nid)
		nid = await_snapshots(e, ce, recs, g, ids, nid);
	struct gg_ce_result *res = NULL;
	if (rc == 0 && nid && (rc = gg_ce_kill(ce, ids, nid, &res, err)) == 0) {
		/* what the CE says of a job whose record had ended is no failure
		 * of this kill (it has ended there too, mostly) */
		for (size_t k = 0, m = 0; k < g->n; k++) {
			const struct gg_record *r = &recs[g->idx[k]];
			if (r->job_id && m < nid && live(r))
				warn_results(e, &ids[m], 1, &res[m], 505);
			m += r->job_id != NULL;
		}
		gg_ce_results_free(res, nid);
	}
	gg_ce_free(ce);
	free(ids);
	return rc;
}

static void mark_group_killed(struct gg_engine *e, struct gg_record *recs,
			      const struct gg_rec_group *g)
{
	for (size_t k = 0; k < g->n; k++) {
		struct gg_record *r = &recs[g->idx[k]];
		if (!live(r))
			continue; /* ended here: its job was asked to end, the record stays */
		struct gg_err e2 = {0};
		struct mark_ud m = {r->job_id, NULL};
		if (gg_store_update(e->st, r->name, mark_killed, &m, NULL, &e2) < 0 &&
		    e2.code != GG_OK)
			gg_engine_notef(e, GG_NOTE_WARN, "%s", e2.msg);
		if (m.late)
			cancel_late(e, r, m.late);
		free(m.late);
		r->state = GG_S_KILLED;
		remove_session_key(r);
		gg_engine_notef(e, GG_NOTE_INFO, "killed %s", r->name);
	}
}

/* kill asks the CE to end a record's job whatever the record says: one marked
 * failed or finished here (a node's file misread by an older gridgpu, a CE
 * that answered wrongly) may have its job still running, holding a GPU. */
static int to_cancel(const struct gg_record *r)
{
	return live(r) || (r->ce && r->job_id);
}

static int group_live(const struct gg_record *recs, const struct gg_rec_group *g)
{
	for (size_t k = 0; k < g->n; k++)
		if (live(&recs[g->idx[k]]))
			return 1;
	return 0;
}

int gg_engine_kill(struct gg_engine *e, struct gg_record *recs, size_t n)
{
	int code = 0;
	struct gg_rec_group *gs = NULL;
	size_t ng = 0;
	struct gg_err err = {0};
	for (size_t i = 0; i < n; i++)
		if (!live(&recs[i]))
			gg_engine_notef(
				e, GG_NOTE_INFO, "%s %s already%s", recs[i].name,
				gg_sess_state_phrase(recs[i].state),
				to_cancel(&recs[i]) && recs[i].state != GG_S_KILLED
					? " (its job is asked to end on the CE all the same)"
					: "");
	if (gg_records_by_endpoint(recs, n, to_cancel, &gs, &ng, &err) < 0)
		return gg_engine_failf(e, &err, "kill");
	for (size_t i = 0; i < ng; i++) {
		if (kill_on_ce(e, recs, &gs[i], &err) == 0)
			mark_group_killed(e, recs, &gs[i]);
		else if (group_live(recs, &gs[i]))
			first(&code, gg_engine_failf(e, &err, "kill")); /* records kept */
		else /* records that had ended here: not a failure of the kill */
			gg_engine_notef(e, GG_NOTE_WARN,
					"the CE could not be asked to end %s's job: %s",
					recs[gs[i].idx[0]].name, err.msg);
	}
	gg_rec_groups_free(gs, ng);
	gg_engine_write_ssh_config(e, NULL);
	return code;
}

/* ---- clean ---- */

static int clean_on_ce(struct gg_engine *e, struct gg_record *recs, const struct gg_rec_group *g,
		       struct gg_err *err)
{
	size_t nid;
	const char **ids = group_ids(recs, g, &nid);
	struct gg_ce *ce = NULL;
	struct gg_ce_result *res = NULL;
	int rc = ids ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && nid)
		rc = gg_engine_open_record_ce(e, &recs[g->idx[0]], &ce, err);
	/* A-REX queues a clean of a job that is still staging or running and
	 * leaves the job going: cancel it first (harmless when it has ended). */
	if (rc == 0 && nid && gg_ce_kill(ce, ids, nid, &res, NULL) == 0)
		gg_ce_results_free(res, nid);
	res = NULL;
	if (rc == 0 && nid && (rc = gg_ce_clean(ce, ids, nid, &res, err)) == 0) {
		warn_results(e, ids, nid, res, 0);
		gg_ce_results_free(res, nid);
	}
	gg_ce_free(ce);
	free(ids);
	return rc;
}

static int ended(const struct gg_record *r)
{
	return gg_sess_state_ended(r->state);
}

/* gg_engine_clean's work. An error of a CE goes to e->fail, or with out (not
 * NULL) into out instead; the first error's code is returned. */
static int clean_records(struct gg_engine *e, struct gg_record *recs, size_t n, int keep_remote,
			 char *cleaned, struct gg_err *out)
{
	int code = 0;
	struct gg_rec_group *gs = NULL;
	size_t ng = 0;
	struct gg_err err = {0};
	if (gg_records_by_endpoint(recs, n, ended, &gs, &ng, out ? out : &err) < 0)
		return out ? out->code : gg_engine_failf(e, &err, "clean");
	for (size_t i = 0; i < ng; i++) {
		if (!keep_remote && clean_on_ce(e, recs, &gs[i], out ? out : &err) < 0) {
			/* Never forget a record because the CE could not be reached. */
			first(&code, out ? out->code
					 : gg_engine_failf(e, &err,
							   "cleaning on %s (records kept; "
							   "--keep-remote forgets them anyway)",
							   gs[i].ce));
			continue;
		}
		for (size_t k = 0; k < gs[i].n; k++) {
			const struct gg_record *r = &recs[gs[i].idx[k]];
			remove_session_key(r);
			if (gg_store_remove(e->st, r->name, NULL) == 0) {
				cleaned[gs[i].idx[k]] = 1;
				gg_engine_notef(e, GG_NOTE_INFO, "cleaned %s", r->name);
			}
		}
	}
	gg_rec_groups_free(gs, ng);
	gg_engine_write_ssh_config(e, NULL);
	return code;
}

int gg_engine_clean(struct gg_engine *e, struct gg_record *recs, size_t n, int keep_remote,
		    char *cleaned)
{
	return clean_records(e, recs, n, keep_remote, cleaned, NULL);
}

int gg_engine_clean_one(struct gg_engine *e, struct gg_record *r, struct gg_err *err)
{
	char cleaned = 0;
	return clean_records(e, r, 1, 0, &cleaned, err);
}
