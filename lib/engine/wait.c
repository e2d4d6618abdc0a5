/* Following a session: refreshed records saved (a kill elsewhere wins), the
 * published sshd probed through the hops, the wait until it is ready. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_int.h"
#include "node/sshview.h"
#include "engine/sync.h"
#include "ssh/ssh.h"

/* The race's marks (race.c) as stored, whatever the refreshed copy (read
 * before a race was settled, maybe) says: a racer marked lost stays lost. */
static void keep_race_marks(struct gg_record *fresh, struct gg_record *stored)
{
	free(fresh->race);
	free(fresh->race_name);
	fresh->race = stored->race;
	fresh->race_name = stored->race_name;
	fresh->race_lost = stored->race_lost;
	stored->race = stored->race_name = NULL;
}

static int copy_into(struct gg_record *stored, void *ud)
{
	/* Keep what the store has, apply the refreshed fields. */
	const struct gg_record *r = ud;
	if (gg_sess_state_ended(stored->state) && stored->state != r->state)
		return 1; /* someone killed it meanwhile: keep that */
	struct gg_record fresh;
	if (gg_record_copy(&fresh, r) < 0)
		return 1;
	fresh.created = stored->created;
	keep_race_marks(&fresh, stored);
	gg_record_clear(stored);
	*stored = fresh;
	return 0;
}

int gg_engine_save(struct gg_engine *e, struct gg_record *r, struct gg_err *err)
{
	struct gg_record out;
	int rc = gg_store_update(e->st, r->name, copy_into, r, &out, err);
	if (rc == 0) {
		gg_record_clear(r);
		*r = out;
	}
	return rc;
}

int gg_engine_save_many(struct gg_engine *e, struct gg_record *recs, size_t n, struct gg_err *err)
{
	struct gg_store_change *ch = calloc(n ? n : 1, sizeof *ch);
	if (!ch)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		ch[i].name = recs[i].name;
		ch[i].ud = &recs[i];
	}
	int rc = gg_store_update_many(e->st, ch, n, copy_into, err);
	for (size_t i = 0; i < n; i++) {
		if (ch[i].rc < 0)
			continue;
		gg_record_clear(&recs[i]);
		recs[i] = ch[i].out;
	}
	free(ch);
	return rc;
}

int gg_engine_probe(struct gg_engine *e, struct gg_record *r, int timeout_ms, struct gg_err *way)
{
	if (!gg_session_published(r))
		return 0;
	const struct gg_site *site = gg_engine_site(e, r->site);
	/* One probe per run finds a site's jump host down: the next sessions of
	 * that site (list --sync) would each wait for it again. */
	if (site && strcmp(e->probe_down_site, site->name) == 0)
		return 0;
	struct gg_err pe = {0};
	int at_session = 0;
	int rc = gg_session_probe(site, r, timeout_ms, &e->log, &at_session, &pe);
	if (rc == 0) {
		e->probe_why[0] = '\0';
		r->state = GG_S_READY;
		return 0;
	}
	snprintf(e->probe_why, sizeof e->probe_why, "%s", pe.msg);
	if (rc == GG_EHOSTKEY && at_session) {
		/* The key came from the CE's authenticated channel: another key
		 * answering is an attack or a bug, never a reason to trust it. */
		r->state = GG_S_FAILED;
		free(r->error);
		r->error = strdup(pe.msg);
		return 0;
	}
	gg_engine_notef(e, GG_NOTE_VERBOSE, "%s: sshd published, not answering yet: %s", r->name,
			pe.msg);
	if (!at_session && site)
		snprintf(e->probe_down_site, sizeof e->probe_down_site, "%s", site->name);
	if (!at_session && way) {
		/* Not the node: a jump host (down, or its key not the known one). */
		*way = pe;
		return rc;
	}
	return 0;
}

static int cancelled(struct gg_engine *e)
{
	return e->cancel && e->cancel(e->ud);
}

/* While the record is queued, why (gg_engine_queue_reason): the login host is
 * asked once its batch system's id is known, then every QUEUE_ASK_EVERY
 * seconds, not at each turn. */
#define QUEUE_ASK_EVERY 30
static void wait_queue_reason(struct gg_engine *e, struct gg_record *r,
			      const struct gg_lrms_seen *seen)
{
	int64_t now = (int64_t)time(NULL);
	if (r->state == GG_S_QUEUED && (!seen->local_id || now - e->queue_asked < QUEUE_ASK_EVERY))
		return;
	if (r->state == GG_S_QUEUED)
		e->queue_asked = now;
	gg_engine_queue_reasons(e, r, 1, seen); /* not queued: forgets it */
}

/* One turn of the wait: refresh, probe, save. 1 when the wait is over. */
int gg_engine_wait_turn(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r,
			struct gg_err *err)
{
	struct gg_err ignored = {0}, way = {0};
	struct gg_lrms_seen seen = {0};
	int frc = gg_session_refresh_lrms(ce, r, 1, &seen, &ignored);
	if (frc == 0 && !cancelled(e))
		wait_queue_reason(e, r, &seen);
	gg_lrms_seen_clear(&seen, 1);
	if (frc == GG_EINTR || cancelled(e))
		return gg_err_set(err, GG_EINTR, "interrupted");
	int prc = gg_engine_probe(e, r, 5000, &way);
	int rc = gg_engine_save(e, r, err);
	if (rc < 0)
		return rc;
	if (prc < 0) {
		/* Waiting does not mend a jump host: say so now. */
		*err = way;
		return gg_err_prefix(err, "the session's sshd is up (the session is kept), "
					  "but the way to it is not");
	}
	return r->state == GG_S_READY || gg_sess_state_ended(r->state);
}

int gg_engine_wait_ready(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r,
			 int64_t timeout, struct gg_err *err)
{
	time_t start = time(NULL);
	struct timespec tick = {0, 500 * 1000000L};
	e->probe_down_site[0] = '\0'; /* probe every time: a jump host ends the wait */
	e->queue_asked = 0;
	for (;;) {
		if (cancelled(e))
			return gg_err_set(err, GG_EINTR, "interrupted");
		int rc = gg_engine_wait_turn(e, ce, r, err);
		int64_t waited = (int64_t)(time(NULL) - start);
		if (rc >= 0 && e->waiting)
			e->waiting(e->ud, r, waited);
		if (rc != 0)
			return rc < 0 ? rc : 0;
		if (timeout > 0 && waited >= timeout) {
			char d[32];
			return gg_err_set(err, GG_ENET, "not ready after %s (state %s, CE: %s)%s%s",
					  gg_duration_format(timeout, d, sizeof d),
					  gg_sess_state_name(r->state),
					  r->ce_state ? r->ce_state : "?",
					  gg_launch_unreadable(r) ? ": " : "",
					  gg_launch_unreadable(r) ? r->error : "");
		}
		/* Waiting on the CE: poll at 2 Hz; a signal cuts the sleep short. */
		nanosleep(&tick, NULL);
	}
}

int gg_engine_wait_ended(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r, int wait,
			 int64_t timeout, struct gg_err *err)
{
	time_t start = time(NULL);
	struct timespec tick = {1, 0};
	for (;;) {
		struct gg_err ignored = {0};
		int rc = gg_session_refresh(ce, r, 1, err);
		if (rc < 0)
			return rc;
		gg_engine_save(e, r, &ignored);
		if (gg_sess_state_ended(r->state) || !wait)
			return 0;
		if (cancelled(e))
			return gg_err_set(err, GG_EINTR, "interrupted");
		if (timeout && time(NULL) - start >= timeout)
			return gg_err_set(err, GG_ENET, "still %s after waiting",
					  gg_sess_state_name(r->state));
		nanosleep(&tick, NULL);
	}
}
