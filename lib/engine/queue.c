/* Why queued work waits, in the user's words: the batch system's word the CE
 * passed on, or Slurm's own reason from the site's login node (the last jump
 * host), asked over ssh once per refresh for all the queued jobs of a site.
 * Best effort: a site whose login host has no squeue, or cannot be reached,
 * shows the CE's state as before. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ce/ce.h"
#include "engine/engine_int.h"
#include "ce/slurmq.h"
#include "engine/sync.h"
#include "ssh/ssh.h"

/* A login host must answer quickly: a refresh does not wait on it. */
#define LOGIN_TIMEOUT_MS 4000
/* A site found without squeue is not asked again for a day. */
#define NO_SLURM_FOR (24 * 3600)

static char *memory_path(void)
{
	char *state = NULL, *path = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state, NULL) == 0 && gg_mkdir_p(state, 0700, NULL) == 0)
		path = gg_strdup_printf("%s/slurm-login.json", state);
	free(state);
	return path;
}

/* 1 when the site's login host was found not to be a Slurm login node lately. */
static int known_no_slurm(const char *site)
{
	char *path = memory_path();
	json_t *m = path ? gg_ce_cache_load(path) : NULL;
	json_int_t at = json_integer_value(json_object_get(m, site));
	json_decref(m);
	free(path);
	return at > 0 && (int64_t)time(NULL) - at < NO_SLURM_FOR;
}

static void remember_no_slurm(const char *site)
{
	char *path = memory_path();
	json_t *m = path ? gg_ce_cache_load(path) : NULL;
	if (m && gg_json_set(m, site, json_integer((json_int_t)time(NULL))) == 0)
		gg_ce_cache_save(path, m);
	json_decref(m);
	free(path);
}

/* The site's jump hosts as hops (the last one logged in to). */
static int login_hops(const struct gg_site *site, struct gg_ssh_jump *jp, struct gg_ssh_hop *h,
		      struct gg_err *err)
{
	for (int k = 0; k < site->njumps; k++) {
		int rc = gg_ssh_jump_parse(site->jumps[k], &jp[k], err);
		if (rc < 0)
			return rc;
		h[k] = (struct gg_ssh_hop){.host = jp[k].host,
					   .port = jp[k].port,
					   .user = jp[k].user[0] ? jp[k].user : NULL,
					   .name = k + 1 == site->njumps ? "the login host"
									 : "a jump host",
					   .identity = site->identity,
					   .known_hosts = site->known_hosts};
	}
	return 0;
}

/* squeue on the site's login host: its output in *out (malloc'd). 1 when the
 * host has no squeue. */
static int ask_login(struct gg_engine *e, const struct gg_site *site, const char *cmd, char **out,
		     size_t *len, struct gg_err *err)
{
	struct gg_ssh_jump jp[GG_MAX_JUMPS];
	struct gg_ssh_hop h[GG_MAX_JUMPS];
	struct gg_ssh_conn *c = NULL;
	int status = 0;
	char *errtext = NULL;
	struct gg_ssh_masters ms;
	int rc = login_hops(site, jp, h, err);
	if (rc == 0)
		rc = gg_ssh_hops_masters(site, h, &ms, err);
	if (rc == 0)
		h[0].log = &e->log;
	if (rc == 0)
		rc = gg_ssh_connect(h, (size_t)site->njumps, LOGIN_TIMEOUT_MS, &c, NULL, err);
	if (rc == 0)
		rc = gg_ssh_exec_capture(c, cmd, 1 << 20, out, len, &status, &errtext, err);
	gg_ssh_disconnect(c);
	free(errtext);
	if (rc == 0 && status == GG_SLURMQ_NO_SQUEUE)
		return 1;
	return rc;
}

static void set_reason(struct gg_engine *e, const char *name, char *text)
{
	if (!e->queue_reasons)
		e->queue_reasons = json_object();
	if (text && e->queue_reasons)
		gg_json_set_text(e->queue_reasons, name, text);
	free(text);
}

/* Slurm's reasons for the queued records of site (the ones with a Slurm id). */
static void slurm_reasons(struct gg_engine *e, const struct gg_site *site, struct gg_record *recs,
			  const struct gg_lrms_seen *seen, const size_t *at, size_t k)
{
	const char **ids = calloc(k, sizeof *ids);
	for (size_t i = 0; ids && i < k; i++)
		ids[i] = seen[at[i]].local_id;
	char *cmd = ids ? gg_slurmq_command(ids, k) : NULL, *out = NULL;
	size_t len = 0, nj = 0;
	struct gg_slurm_job *jobs = NULL;
	struct gg_err err = {0};
	int rc = cmd ? ask_login(e, site, cmd, &out, &len, &err) : -1;
	if (rc == 1) {
		gg_engine_notef(e, GG_NOTE_VERBOSE,
				"site %s: the last jump host has no squeue (not a Slurm login "
				"node): not asked again for a day",
				site->name);
		remember_no_slurm(site->name);
	} else if (rc < 0 && cmd) {
		gg_engine_notef(e, GG_NOTE_VERBOSE, "site %s: Slurm's reasons not read: %s",
				site->name, err.msg);
	}
	if (rc == 0 && gg_slurmq_parse(out, len, &jobs, &nj, &err) == 0)
		for (size_t j = 0; j < nj; j++)
			for (size_t i = 0; i < k; i++)
				if (!strcmp(jobs[j].id, ids[i]))
					set_reason(e, recs[at[i]].name, gg_slurmq_phrase(&jobs[j]));
	free(jobs);
	free(out);
	free(cmd);
	free(ids);
}

void gg_engine_queue_reasons(struct gg_engine *e, struct gg_record *recs, size_t n,
			     const struct gg_lrms_seen *seen)
{
	size_t *at = calloc(n ? n : 1, sizeof *at), k = 0;
	const struct gg_site *site = NULL;
	for (size_t i = 0; at && i < n; i++) {
		if (e->queue_reasons)
			json_object_del(e->queue_reasons, recs[i].name);
		if (recs[i].state != GG_S_QUEUED)
			continue;
		set_reason(e, recs[i].name, gg_lrms_message_phrase(seen[i].message));
		const struct gg_site *s = gg_engine_site(e, recs[i].site);
		if (!s || !s->njumps || !seen[i].local_id || !gg_slurmq_id_ok(seen[i].local_id) ||
		    (site && s != site))
			continue;
		site = s;
		at[k++] = i;
	}
	if (k && strcmp(e->probe_down_site, site->name) && !known_no_slurm(site->name))
		slurm_reasons(e, site, recs, seen, at, k);
	free(at);
}

const char *gg_engine_queue_reason(const struct gg_engine *e, const char *name)
{
	return e && name ? json_string_value(json_object_get(e->queue_reasons, name)) : NULL;
}
