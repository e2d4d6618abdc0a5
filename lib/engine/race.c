/* request --race: one session sent to several sites at once, each its own
 * record marked with the race's id; the first that is ready wins, takes the
 * session's name, and the others are marked lost, killed and cleaned. The
 * client holds the race's lock (a flock, gone with the process however it
 * ends) while it races; a sync settles a race whose client is gone by the
 * same rule: a ready session wins, else the furthest along (starting, then
 * queued, then requested), else the first; so a race always ends as one
 * session (or one record that says why none started). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_int.h"
#include "store/store.h"

#define GG_ID_CHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

struct gg_race {
	char id[16];
	char *path;
	int fd;
};

static char *lock_path(struct gg_engine *e, const char *id)
{
	return gg_strdup_printf("%s/race-%s.lock", gg_store_dir(e->st), id);
}

/* The race's lock taken (wait: until its holder lets go); -1 when another
 * process holds it (or it cannot be made). */
static int lock_race(const char *path, int wait)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int gg_race_begin(struct gg_engine *e, struct gg_race **out, struct gg_err *err)
{
	char uid[13];
	*out = NULL;
	struct gg_race *r = calloc(1, sizeof *r);
	if (!r)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_random_uid(uid, err);
	if (rc == 0) {
		snprintf(r->id, sizeof r->id, "%s", uid);
		r->path = lock_path(e, r->id);
		r->fd = r->path ? lock_race(r->path, 0) : -1;
		if (r->fd < 0)
			rc = gg_err_set(err, GG_EIO, "cannot lock the race in %s: %s",
					gg_store_dir(e->st), strerror(errno));
	}
	if (rc < 0) {
		free(r->path);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

const char *gg_race_id(const struct gg_race *r)
{
	return r ? r->id : NULL;
}

void gg_race_end(struct gg_race *r)
{
	if (!r)
		return;
	if (r->fd >= 0) {
		unlink(r->path); /* under the lock: a sync that waits finds it gone */
		close(r->fd);
	}
	free(r->path);
	free(r);
}

/* ---- the wait ---- */

/* How far a racer got: the furthest wins a race settled without a winner. */
static int progress(const struct gg_record *r)
{
	if (r->race_lost)
		return -1;
	switch (r->state) {
	case GG_S_READY: return 6;
	case GG_S_STARTING: return gg_session_published(r) ? 5 : 4;
	case GG_S_RUNNING: return 4;
	case GG_S_QUEUED: return 3;
	case GG_S_REQUESTED: return 2;
	case GG_S_UNKNOWN: return 1;
	default: return 0;
	}
}

/* The racer whose state tells most of the race (for the waiting callback). */
static size_t furthest(const struct gg_record *recs, size_t n)
{
	size_t best = 0;
	for (size_t i = 1; i < n; i++)
		if (progress(&recs[i]) > progress(&recs[best]))
			best = i;
	return best;
}

/* Each live racer refreshed, probed and saved once; the first ready in
 * *winner. out[i] set for a racer out of the race (ended, or its way broken:
 * its first error in first). */
static int race_turn(struct gg_engine *e, struct gg_ce **ces, struct gg_record *recs, size_t n,
		     char *out, size_t *winner, struct gg_err *first)
{
	for (size_t i = 0; i < n; i++) {
		if (out[i])
			continue;
		struct gg_err err = {0};
		int rc = gg_engine_wait_turn(e, ces[i], &recs[i], &err);
		if (rc == GG_EINTR)
			return gg_err_set(first, GG_EINTR, "interrupted");
		if (rc < 0 || gg_sess_state_ended(recs[i].state)) {
			out[i] = 1;
			if (rc < 0 && !first->code)
				*first = err;
			continue;
		}
		if (rc == 1 && recs[i].state == GG_S_READY) {
			*winner = i;
			return 1;
		}
	}
	return 0;
}

/* Why no racer won: each site's last word. */
static int none_won(const struct gg_record *recs, size_t n, const struct gg_err *first,
		    struct gg_err *err)
{
	char why[GG_ERR_MSG_MAX] = "";
	size_t used = 0;
	for (size_t i = 0; i < n && used < sizeof why; i++)
		used += (size_t)snprintf(why + used, sizeof why - used, "%s%s: %s", i ? "; " : "",
					 recs[i].site ? recs[i].site : "?",
					 recs[i].error ? recs[i].error
						       : gg_sess_state_name(recs[i].state));
	gg_err_set(err, first->code && first->code != GG_EJOB ? first->code : GG_EJOB,
		   "no site gave a ready session (%s)", why);
	return err->code;
}

int gg_engine_race_wait(struct gg_engine *e, struct gg_ce **ces, struct gg_record *recs, size_t n,
			int64_t timeout, size_t *winner, struct gg_err *err)
{
	time_t start = time(NULL);
	struct timespec tick = {0, 500 * 1000000L};
	struct gg_err first = {0};
	char *out = calloc(n ? n : 1, 1);
	if (!out)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	e->queue_asked = 0;
	int rc = 0;
	for (;;) {
		e->probe_down_site[0] = '\0';
		if (e->cancel && e->cancel(e->ud)) {
			rc = gg_err_set(err, GG_EINTR, "interrupted");
			break;
		}
		rc = race_turn(e, ces, recs, n, out, winner, &first);
		int64_t waited = (int64_t)(time(NULL) - start);
		if (rc >= 0 && e->waiting)
			e->waiting(e->ud, &recs[furthest(recs, n)], waited);
		if (rc != 0) {
			if (rc < 0)
				*err = first;
			break;
		}
		size_t left = 0;
		for (size_t i = 0; i < n; i++)
			left += !out[i];
		if (!left) {
			rc = none_won(recs, n, &first, err);
			break;
		}
		if (timeout > 0 && waited >= timeout) {
			char d[32];
			rc = gg_err_set(err, GG_ENET, "no site ready after %s",
					gg_duration_format(timeout, d, sizeof d));
			break;
		}
		nanosleep(&tick, NULL);
	}
	free(out);
	return rc < 0 ? rc : 0;
}

/* ---- settling ---- */

static int mark_lost(struct gg_record *r, void *ud)
{
	if (!r->race || strcmp(r->race, (const char *)ud))
		return 1; /* settled meanwhile */
	r->race_lost = 1;
	return 0;
}

/* The winner without its race marks, under its own name (the race's name
 * when it has one and it is free, else its site's SITE-N); the racer's record
 * removed after (a sync that finds both removes the racer). */
static int crown(struct gg_engine *e, const char *name, const char *id, struct gg_record *out,
		 struct gg_err *err)
{
	struct gg_record w, c;
	int rc = gg_store_load(e->st, name, &w, err);
	if (rc < 0)
		return rc;
	if (w.race_lost || !w.race || strcmp(w.race, id)) { /* lost, or settled meanwhile */
		rc = gg_err_set(err, GG_EFAIL, "%s is not in the race any more: not crowned", name);
		gg_record_clear(&w);
		return rc;
	}
	if ((rc = gg_record_copy(&c, &w)) < 0) {
		gg_record_clear(&w);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	free(c.race);
	free(c.name);
	c.race = NULL;
	c.name = c.race_name;
	c.race_name = NULL;
	c.race_lost = 0;
	if (c.name && !gg_record_name_valid(c.name)) { /* not ours: a record edited */
		gg_engine_notef(e, GG_NOTE_WARN, "%s: the name it was to take is not valid",
				w.name);
		free(c.name);
		c.name = NULL;
	}
	char prefix[64];
	snprintf(prefix, sizeof prefix, "%s", c.site ? c.site : "session");
	for (char *d = prefix; (d = strchr(d, '.'));)
		*d = '-';
	struct gg_err e2 = {0};
	rc = gg_store_create(e->st, &c, prefix, &e2);
	if (rc < 0 && c.name) { /* the name was taken meanwhile: its site's */
		gg_engine_notef(e, GG_NOTE_WARN, "%s: %s", c.name, e2.msg);
		free(c.name);
		c.name = NULL;
		rc = gg_store_create(e->st, &c, prefix, err);
	} else if (rc < 0) {
		*err = e2;
	}
	if (rc == 0)
		gg_store_remove(e->st, w.name, NULL);
	gg_record_clear(&w);
	if (rc == 0 && out)
		*out = c;
	else
		gg_record_clear(&c);
	return rc;
}

/* A loser whose submission's answer was lost (no job id yet, the CE may have
 * the job): marked lost only; the next sync adopts its job (or, long after,
 * marks it never submitted), then kills and cleans it. */
static int adoptable(const struct gg_record *r)
{
	return !r->job_id && r->state == GG_S_REQUESTED;
}

/* Every racer of the race but the one named win (NULL: none) marked lost on
 * disk first, then the live ones killed and all cleaned, at their CEs and
 * here: one whose CE cannot be asked, or has not finished killing it, stays,
 * marked lost, for the next sync. g: the race's records as stored. */
static void drop_losers(struct gg_engine *e, const struct gg_record *g, size_t n, const char *win)
{
	struct gg_record *l = calloc(n ? n : 1, sizeof *l);
	char *cleaned = calloc(n ? n : 1, 1);
	size_t nl = 0;
	for (size_t i = 0; l && cleaned && i < n; i++) {
		if (win && !strcmp(g[i].name, win))
			continue;
		struct gg_record now;
		if (gg_store_update(e->st, g[i].name, mark_lost, g[i].race, &now, NULL) < 0)
			continue; /* gone */
		if (now.race_lost && !adoptable(&now))
			l[nl++] = now;
		else
			gg_record_clear(&now);
	}
	if (nl) {
		gg_engine_kill(e, l, nl);
		gg_engine_clean(e, l, nl, 0, cleaned);
	}
	gg_records_free(l, nl);
	free(cleaned);
}

/* The winner a race without one gets: ready, else the furthest along, else
 * the first; (size_t)-1 when all lost. */
static size_t pick(const struct gg_record *recs, size_t n)
{
	size_t best = (size_t)-1;
	for (size_t i = 0; i < n; i++)
		if (!recs[i].race_lost &&
		    (best == (size_t)-1 || progress(&recs[i]) > progress(&recs[best])))
			best = i;
	return best;
}

static int same_race(const struct gg_record *r, const char *id)
{
	return r->race && !strcmp(r->race, id);
}

static struct gg_record *members(struct gg_engine *e, const struct gg_record *all, size_t n,
				 const char *id, size_t *m);

/* The race's records as stored now, whoever wrote them: a racer whose
 * submission the client gave up (interrupted, failed after its job was
 * recorded) is one too. NULL (none) when they cannot be listed. */
static struct gg_record *stored_members(struct gg_engine *e, const char *id, size_t *m)
{
	struct gg_record *all = NULL, *g = NULL;
	size_t n = 0;
	*m = 0;
	if (gg_store_list(e->st, &all, &n, NULL, NULL) == 0)
		g = members(e, all, n, id, m);
	gg_records_free(all, n);
	return g;
}

int gg_engine_race_settle(struct gg_engine *e, struct gg_record *recs, size_t n, size_t winner,
			  struct gg_record *out, struct gg_err *err)
{
	if (out)
		memset(out, 0, sizeof *out);
	const char *id = NULL;
	for (size_t i = 0; i < n && !id; i++)
		id = recs[i].race;
	if (!id)
		return 0; /* not racers (settled meanwhile) */
	char *race = strdup(id), *win = NULL;
	size_t m = 0;
	struct gg_record *g = race ? stored_members(e, race, &m) : NULL;
	if (!g) { /* the store cannot be listed: the caller's racers */
		g = recs;
		m = n;
	}
	size_t w = m; /* the caller's winner as stored: never one marked lost */
	for (size_t i = 0; winner < n && i < m && w == m; i++)
		if (!strcmp(g[i].name, recs[winner].name) && !g[i].race_lost)
			w = i;
	if (w == m)
		w = pick(g, m);
	int rc = 0;
	if (!race || (w < m && !(win = strdup(g[w].name))))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory"); /* nobody marked lost */
	if (rc == 0)
		drop_losers(e, g, m, win);
	if (rc == 0 && win) {
		rc = crown(e, win, race, out, err);
		if (rc == 0 && out)
			gg_engine_notef(e, GG_NOTE_VERBOSE, "the race's %s is now %s", win,
					out->name);
	}
	if (g != recs)
		gg_records_free(g, m);
	free(win);
	free(race);
	gg_engine_write_ssh_config(e, NULL);
	return rc;
}

/* ---- a sync's part: races whose client is gone ---- */

/* A racer whose winner's record already exists under its new name (a client
 * stopped between the two steps of crown): only its record goes. */
static int crowned(const struct gg_record *all, size_t n, const struct gg_record *r)
{
	for (size_t i = 0; i < n; i++)
		if (!all[i].race && all[i].uid && r->uid && !strcmp(all[i].uid, r->uid))
			return 1;
	return 0;
}

/* The race's records as stored now (the lock is held): count in *m. */
static struct gg_record *members(struct gg_engine *e, const struct gg_record *all, size_t n,
				 const char *id, size_t *m)
{
	struct gg_record *g = calloc(n ? n : 1, sizeof *g);
	*m = 0;
	for (size_t i = 0; g && i < n; i++)
		if (same_race(&all[i], id) &&
		    gg_store_load(e->st, all[i].name, &g[*m], NULL) == 0) {
			if (same_race(&g[*m], id))
				(*m)++;
			else
				gg_record_clear(&g[*m]);
		}
	return g;
}

/* An id gridgpu makes (gg_random_uid's letters and digits): another (a
 * record edited) names no lock file, and no client can race under it. */
static int id_ok(const char *id)
{
	size_t l = strlen(id);
	return l && l < sizeof((struct gg_race *)0)->id && !id[strspn(id, GG_ID_CHARS)];
}

static void settle_orphan(struct gg_engine *e, const struct gg_record *all, size_t n,
			  const char *id)
{
	char *path = id_ok(id) ? lock_path(e, id) : NULL;
	int fd = path ? lock_race(path, 0) : -1;
	if (path && fd < 0) { /* its client still races */
		free(path);
		return;
	}
	size_t m = 0;
	struct gg_record *g = members(e, all, n, id, &m);
	struct gg_err err = {0};
	struct gg_record w = {0};
	if (m) {
		gg_engine_notef(e, GG_NOTE_INFO, "a race's client is gone: settling it (%s...)",
				g[0].name);
		if (gg_engine_race_settle(e, g, m, (size_t)-1, &w, &err) < 0)
			gg_engine_notef(e, GG_NOTE_WARN, "settling the race of %s: %s", g[0].name,
					err.msg);
		else if (w.name)
			gg_engine_notef(e, GG_NOTE_INFO, "the race is settled: session %s %s",
					w.name, gg_sess_state_phrase(w.state));
	}
	gg_record_clear(&w);
	gg_records_free(g, m);
	if (path)
		unlink(path);
	if (fd >= 0)
		close(fd);
	free(path);
}

void gg_engine_races_settle(struct gg_engine *e)
{
	struct gg_record *all = NULL;
	size_t n = 0;
	if (gg_store_list(e->st, &all, &n, NULL, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (all[i].race && !all[i].race_lost && crowned(all, n, &all[i]) &&
		    gg_store_remove(e->st, all[i].name, NULL) == 0) {
			free(all[i].race);
			all[i].race = NULL;
		}
	for (size_t i = 0; i < n; i++) {
		int seen = !all[i].race;
		for (size_t k = 0; k < i && !seen; k++)
			seen = same_race(&all[k], all[i].race);
		if (!seen)
			settle_orphan(e, all, n, all[i].race);
	}
	gg_records_free(all, n);
}
