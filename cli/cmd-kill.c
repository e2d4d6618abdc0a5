/* gridgpu kill and gridgpu clean: end sessions and jobs on the CE, forget
 * ended ones. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "session/sync.h"
#include "ssh/ssh.h"

enum { O_ALL = 256, O_KEEP_REMOTE };

const struct gg_opt cmd_kill_opts[] = {
	OPT_END,
};

const struct gg_opt cmd_clean_opts[] = {
	{"all", 'a', OPT_NONE, NULL, "also kill and clean the live ones", O_ALL},
	{"keep-remote", 0, OPT_NONE, NULL, "leave the job directories on the CE", O_KEEP_REMOTE},
	OPT_END,
};

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
static void cancel_late(struct gg_cli *cli, const struct gg_record *r, const char *job_id)
{
	struct cli_auth auth = {0};
	struct gg_ce *ce = NULL;
	struct gg_err err = {0};
	if (cli_open_record_ce(cli, r, &auth, &ce, &err) == 0) {
		if (r->kind == GG_REC_SESSION)
			gg_ce_put(ce, job_id, "stop", "", 0, &err);
		gg_ce_cancel(ce, job_id);
	} else {
		ui_warn(cli, "%s: its job %s could not be cancelled: %s", r->name, job_id, err.msg);
	}
	gg_ce_free(ce);
	cli_auth_clear(&auth);
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

/* Kill records on their CEs (grouped by CE), mark them, remove keys. Returns an
 * exit code. */
static int kill_records(struct gg_cli *cli, struct gg_store *st, struct gg_record *recs, size_t n)
{
	int exit_code = EXIT_OK;
	char *done = calloc(n ? n : 1, 1);
	for (size_t i = 0; done && i < n; i++) {
		if (done[i])
			continue;
		if (gg_sess_state_ended(recs[i].state)) {
			ui_info(cli, "%s has already %s", recs[i].name,
				gg_sess_state_name(recs[i].state));
			done[i] = 1;
			continue;
		}
		const char **ids = calloc(n, sizeof *ids);
		size_t *grp = calloc(n, sizeof *grp), ng = 0, nid = 0;
		for (size_t k = i; ids && grp && k < n; k++) {
			if (done[k] || gg_sess_state_ended(recs[k].state) ||
			    (recs[k].ce && recs[i].ce && strcmp(recs[k].ce, recs[i].ce)) ||
			    (!recs[k].ce != !recs[i].ce))
				continue;
			done[k] = 1;
			grp[ng++] = k;
			if (recs[k].job_id)
				ids[nid++] = recs[k].job_id;
		}
		struct gg_err err = {0};
		int rc = 0;
		if (nid) {
			struct cli_auth auth = {0};
			struct gg_ce *ce = NULL;
			rc = cli_open_record_ce(cli, &recs[i], &auth, &ce, &err);
			/* A fork back end cannot signal the job's processes: tell the
			 * launcher to stop through its session dir, then cancel. */
			for (size_t k = 0; rc == 0 && k < ng; k++) {
				struct gg_err e2 = {0};
				if (recs[grp[k]].job_id && recs[grp[k]].kind == GG_REC_SESSION)
					gg_ce_put(ce, recs[grp[k]].job_id, "stop", "", 0, &e2);
			}
			struct gg_ce_result *res = NULL;
			if (rc == 0)
				rc = gg_ce_kill(ce, ids, nid, &res, &err);
			if (rc == 0) {
				for (size_t k = 0; k < nid; k++)
					if (res[k].code >= 400 && res[k].code != 404 &&
					    res[k].code != 505)
						ui_warn(cli, "the CE said for job %s: %d %s",
							ids[k], res[k].code,
							res[k].reason ? res[k].reason : "");
				gg_ce_results_free(res, nid);
			}
			gg_ce_free(ce);
			cli_auth_clear(&auth);
		}
		if (rc < 0) {
			/* Not killed: keep the records as they are. */
			int code = ui_fail(cli, &err, "kill");
			if (!exit_code)
				exit_code = code;
		} else {
			for (size_t k = 0; k < ng; k++) {
				struct gg_record *r = &recs[grp[k]];
				struct gg_err e2 = {0};
				struct mark_ud m = {r->job_id, NULL};
				if (gg_store_update(st, r->name, mark_killed, &m, NULL, &e2) < 0 &&
				    e2.code != GG_OK)
					ui_warn(cli, "%s", e2.msg);
				if (m.late)
					cancel_late(cli, r, m.late);
				free(m.late);
				r->state = GG_S_KILLED;
				remove_session_key(r);
				if (!cli->json)
					ui_info(cli, "killed %s", r->name);
			}
		}
		free(ids);
		free(grp);
	}
	free(done);
	struct gg_err e3 = {0};
	cli_write_ssh_config(cli, st, &e3);
	return exit_code;
}

static int load_named(struct gg_cli *cli, struct gg_store *st, int argc, char **argv, int first,
		      struct gg_record **recs, size_t *n)
{
	*n = (size_t)(argc - first);
	*recs = calloc(*n ? *n : 1, sizeof **recs);
	for (size_t i = 0; i < *n; i++) {
		int rc = cli_find_record(cli, st, argv[first + (int)i], &(*recs)[i]);
		if (rc) {
			gg_records_free(*recs, i);
			*recs = NULL;
			return rc;
		}
	}
	return 0;
}

int cmd_kill(struct gg_cli *cli, int argc, char **argv)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_kill_opts)) > 0)
		;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind < 1)
		return ui_usage(cli, "kill: name the sessions or jobs to end");
	struct gg_store *st = cli_store(cli);
	if (!st)
		return cli->cfg_exit;
	struct gg_record *recs;
	size_t n;
	int rc = load_named(cli, st, argc, argv, cli->optind, &recs, &n);
	if (rc == 0) {
		cli_catch_interrupt();
		rc = kill_records(cli, st, recs, n);
		if (cli->json) {
			json_t *a = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(
					a, json_pack("{s:s,s:s}", "name", recs[i].name, "state",
						     gg_sess_state_name(recs[i].state)));
			ui_json(a);
		}
		gg_records_free(recs, n);
	}
	gg_store_free(st);
	return rc;
}

int cmd_clean(struct gg_cli *cli, int argc, char **argv)
{
	int c, all = 0, keep_remote = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_clean_opts)) > 0) {
		if (c == O_ALL)
			all = 1;
		else if (c == O_KEEP_REMOTE)
			keep_remote = 1;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	struct gg_store *st = cli_store(cli);
	if (!st)
		return cli->cfg_exit;
	struct gg_record *recs = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	int rc;
	int named = argc - cli->optind > 0;
	if (named)
		rc = load_named(cli, st, argc, argv, cli->optind, &recs, &n);
	else if ((rc = gg_store_list(st, &recs, &n, NULL, &err)) < 0)
		rc = ui_fail(cli, &err, "clean");
	if (rc) {
		gg_store_free(st);
		return rc;
	}
	cli_catch_interrupt();
	int exit_code = EXIT_OK;
	if (all) {
		exit_code = kill_records(cli, st, recs, n);
	} else if (named) {
		for (size_t i = 0; i < n; i++)
			if (!gg_sess_state_ended(recs[i].state)) {
				gg_err_set(&err, GG_EUSAGE,
					   "is %s: 'gridgpu kill %s' first, or use "
					   "--all",
					   gg_sess_state_name(recs[i].state), recs[i].name);
				exit_code = ui_fail(cli, &err, "clean %s", recs[i].name);
			}
		if (exit_code) {
			gg_records_free(recs, n);
			gg_store_free(st);
			return exit_code;
		}
	}
	/* The ended records, by CE: one bulk clean each, then forget them. */
	json_t *cleaned = json_array();
	char *done = calloc(n ? n : 1, 1);
	for (size_t i = 0; done && i < n; i++) {
		if (done[i] || !gg_sess_state_ended(recs[i].state)) {
			done[i] = 1;
			continue;
		}
		const char **ids = calloc(n, sizeof *ids);
		size_t *grp = calloc(n, sizeof *grp), ng = 0, nid = 0;
		for (size_t k = i; ids && grp && k < n; k++) {
			if (done[k] || !gg_sess_state_ended(recs[k].state) ||
			    (!recs[k].ce != !recs[i].ce) ||
			    (recs[k].ce && strcmp(recs[k].ce, recs[i].ce)))
				continue;
			done[k] = 1;
			grp[ng++] = k;
			if (recs[k].job_id)
				ids[nid++] = recs[k].job_id;
		}
		int crc = 0;
		if (nid && !keep_remote) {
			struct cli_auth auth = {0};
			struct gg_ce *ce = NULL;
			struct gg_ce_result *res = NULL;
			crc = cli_open_record_ce(cli, &recs[i], &auth, &ce, &err);
			/* A-REX queues a clean of a job that is still staging or running
			 * and leaves the job going: cancel it first (harmless when it
			 * has ended). */
			if (crc == 0 && gg_ce_kill(ce, ids, nid, &res, NULL) == 0)
				gg_ce_results_free(res, nid);
			res = NULL;
			if (crc == 0 && (crc = gg_ce_clean(ce, ids, nid, &res, &err)) == 0) {
				for (size_t k = 0; k < nid; k++)
					if (res[k].code >= 400 && res[k].code != 404)
						ui_warn(cli, "the CE said for job %s: %d %s",
							ids[k], res[k].code,
							res[k].reason ? res[k].reason : "");
				gg_ce_results_free(res, nid);
			}
			gg_ce_free(ce);
			cli_auth_clear(&auth);
		}
		if (crc < 0) {
			/* Never forget a record because the CE could not be reached. */
			int code = ui_fail(cli, &err,
					   "cleaning on %s (records kept; --keep-remote "
					   "forgets them anyway)",
					   recs[i].ce);
			if (!exit_code)
				exit_code = code;
		} else {
			for (size_t k = 0; k < ng; k++) {
				struct gg_err e2 = {0};
				remove_session_key(&recs[grp[k]]);
				if (gg_store_remove(st, recs[grp[k]].name, &e2) == 0) {
					json_array_append_new(cleaned,
							      json_string(recs[grp[k]].name));
					if (!cli->json)
						ui_info(cli, "cleaned %s", recs[grp[k]].name);
				}
			}
		}
		free(ids);
		free(grp);
	}
	free(done);
	if (cli->json)
		ui_json(cleaned);
	else
		json_decref(cleaned);
	cli_write_ssh_config(cli, st, &err);
	gg_records_free(recs, n);
	gg_store_free(st);
	return exit_code;
}
