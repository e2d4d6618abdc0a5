/* request --race N: the session sent to the N best sites of the matchmaking
 * at once (a record each, named race-SITE-N, marked with the race's id), the
 * first that is ready wins and takes the session's name; the others are
 * killed and cleaned (gg_engine_race_settle). Interrupted, the race is
 * settled as a sync settles one whose client is gone: the furthest along is
 * kept, the others killed and cleaned. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx.h"
#include "interrupt.h"
#include "request.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

int cli_opt_race(struct gg_cli *cli, int *race)
{
	return cli_opt_int(cli, 1, CLI_RACE_MAX, race) ? EXIT_USAGE : 0;
}

int cli_race_check(struct gg_cli *cli, const struct req *q)
{
	if (!q->race)
		return 0;
	if (!q->wait)
		return ui_usage(cli, "--race waits for the first ready site: it does not go "
				     "with --no-wait");
	if (q->ce)
		return ui_usage(cli, "--race sends to sites: it does not go with --ce");
	if (!cli_site_choice(cli))
		return ui_usage(cli, "--race needs sites to choose from: --site auto or "
				     "--site A,B");
	return 0;
}

void cli_request_print_ready(struct gg_cli *cli, const struct gg_record *r, const char *config,
			     json_t *race)
{
	if (cli->json) {
		json_t *doc = cli_record_json(r);
		if (race)
			gg_json_set(doc, "race_outcome", json_incref(race));
		ui_json_doc("request", doc);
		return;
	}
	char fp[80] = "";
	gg_ssh_fingerprint(r->host_key, fp, sizeof fp, NULL);
	ui_out("Session %s is ready: %s@%s port %d, host key %s (pinned)\n", r->name,
	       r->user ? r->user : "?", r->node, r->port, fp);
	ui_out("Connect with:  gridgpu connect %s\n", r->name);
	ui_out("          or:  ssh -F %s %s\n", config, r->name);
}

struct race {
	struct gg_race *race;
	struct gg_record recs[CLI_RACE_MAX];
	struct gg_ce *ces[CLI_RACE_MAX];
	size_t n;
	time_t start;
};

/* One racer sent to site; 0, or the error's code (the racer left out). */
static int send_one(struct gg_cli *cli, const struct req *q, struct race *x,
		    const struct gg_site *site, const char *launcher)
{
	struct gg_err err = {0};
	struct gg_session_spec *spec = cli_request_spec(cli, q, site, launcher);
	struct gg_session_stage *stage = NULL;
	int rc = spec ? 0 : GG_EUSAGE;
	if (rc == 0 && gg_session_spec_image(spec) && cli_request_stage(cli, 0, spec, site, &stage))
		rc = GG_EUSAGE;
	if (rc == 0) {
		struct gg_submission s;
		gg_session_submission(&s, spec, site, site->ce, NULL, q->identity, q->token);
		snprintf(s.prefix, sizeof s.prefix, "race-%s", site->name);
		for (char *d = s.prefix; (d = strchr(d, '.'));)
			*d = '-';
		s.rec.race = strdup(gg_race_id(x->race));
		s.rec.race_name = q->name ? strdup(q->name) : NULL;
		if (!s.rec.race || (q->name && !s.rec.race_name)) /* never sent unmarked */
			rc = gg_err_set(&err, GG_ENOMEM, "out of memory");
		else
			rc = gg_engine_submit(cli_engine(cli), &s, &x->recs[x->n], &x->ces[x->n],
					      &err);
		if (rc == 0)
			x->n++;
		else
			ui_fail(cli, &err, "request --race: %s", site->name);
		gg_record_clear(&x->recs[x->n]); /* a failed one's name */
		gg_record_clear(&s.rec);
	}
	gg_session_stage_free(stage);
	gg_session_spec_free(spec);
	return rc;
}

/* The session's name must be free before anything is sent. */
static int name_free(struct gg_cli *cli, const char *name)
{
	struct gg_record r;
	struct gg_err err = {0};
	if (!name || gg_store_load(gg_engine_store(cli_engine(cli)), name, &r, &err) < 0)
		return 0;
	gg_record_clear(&r);
	return ui_usage(cli, "--name: a session or job named '%s' exists: pick another", name);
}

/* "B won the race: ready first, after 35s (A was queued: killed and cleaned)". */
static json_t *outcome(const struct race *x, size_t w, const struct gg_record *won, char *line,
		       size_t len)
{
	json_t *o = json_object(), *others = json_array();
	size_t used =
		(size_t)snprintf(line, len, "%s won the race: ready first, after %llds",
				 won->site ? won->site : "?", (long long)(time(NULL) - x->start));
	for (size_t i = 0, k = 0; i < x->n; i++) {
		if (i == w)
			continue;
		const struct gg_record *r = &x->recs[i];
		if (used < len)
			used += (size_t)snprintf(line + used, len - used, "%s%s was %s",
						 k++ ? ", " : " (", r->site ? r->site : "?",
						 gg_sess_state_name(r->state));
		json_t *l = json_object();
		gg_json_set_text(l, "site", r->site ? r->site : "?");
		gg_json_set_text(l, "name", r->name);
		gg_json_set_text(l, "state", gg_sess_state_name(r->state));
		gg_json_append(others, l);
	}
	if (used < len && x->n > 1)
		snprintf(line + used, len - used, ": killed and cleaned)");
	gg_json_set_text(o, "id", gg_race_id(x->race));
	gg_json_set_text(o, "won", won->site ? won->site : "?");
	gg_json_set_text(o, "why", line);
	gg_json_set(o, "lost", others);
	return o;
}

/* After the wait: the winner (w < n) crowned, the others dropped; or, with
 * no winner, the race settled by the sync's rule. */
static int settle(struct gg_cli *cli, struct race *x, size_t w, int wrc, struct gg_err *werr)
{
	struct gg_engine *e = cli_engine(cli);
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	cb.cancel = NULL; /* interrupted: the clean-up still runs */
	gg_engine_set_callbacks(e, &cb, NULL);
	struct gg_record won = {0};
	struct gg_err err = {0};
	int rc = gg_engine_race_settle(e, x->recs, x->n, wrc < 0 ? (size_t)-1 : w, &won, &err);
	if (rc < 0)
		return ui_fail(cli, &err, "request --race");
	int code = EXIT_OK;
	if (wrc == GG_EINTR && won.name) {
		ui_err("gridgpu: request: interrupted: the race is settled: session %s at %s keeps "
		       "starting ('gridgpu connect %s' waits for it, 'gridgpu kill %s' ends it); "
		       "the others are killed and cleaned (what a CE has not finished, by the next "
		       "'gridgpu list --sync')\n",
		       won.name, won.site ? won.site : "?", won.name, won.name);
		code = EXIT_INTR;
	} else if (wrc < 0) {
		code = ui_fail(cli, werr, "request --race%s%s%s", won.name ? " (kept: " : "",
			       won.name ? won.name : "", won.name ? ")" : "");
	} else {
		char line[GG_ERR_MSG_MAX];
		json_t *o = outcome(x, w, &won, line, sizeof line);
		if (!cli->json)
			ui_out_lines(line);
		struct gg_ssh_paths sp = {0};
		if (gg_ssh_paths_init(&sp, &err) < 0)
			code = ui_fail(cli, &err, "request --race");
		else
			cli_request_print_ready(cli, &won, sp.config, o);
		gg_ssh_paths_clear(&sp);
		json_decref(o);
	}
	gg_record_clear(&won);
	return code;
}

static int run(struct gg_cli *cli, const struct req *q, struct race *x,
	       const struct gg_site **sites, int nsites, const char *launcher)
{
	struct gg_engine *e = cli_engine(cli);
	struct gg_err err = {0};
	cli_catch_interrupt();
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	cb.upload_begin = NULL; /* small files: no progress bars */
	int rc = gg_engine_set_callbacks(e, &cb, &err);
	if (rc == 0)
		rc = gg_race_begin(e, &x->race, &err);
	if (rc < 0)
		return ui_fail(cli, &err, "request --race");
	x->start = time(NULL);
	char names[256] = "";
	for (int i = 0, used = 0; i < nsites && used < (int)sizeof names; i++)
		used += snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
				 sites[i]->name);
	ui_info(cli, "racing %s for the session (best ranked first): the first ready wins", names);
	for (int i = 0; i < nsites && !cli_interrupted(); i++)
		if (send_one(cli, q, x, sites[i], launcher) == GG_EINTR)
			break;
	if (!x->n)
		return cli_interrupted() ? EXIT_INTR : EXIT_FAIL; /* each said why */
	size_t w = 0;
	int wrc = cli_interrupted()
			  ? gg_err_set(&err, GG_EINTR, "interrupted")
			  : cli_race_wait(cli, x->ces, x->recs, x->n, q->timeout, &w, &err);
	return settle(cli, x, w, wrc, &err);
}

int cli_request_race(struct gg_cli *cli, const struct req *q)
{
	const struct gg_site *sites[CLI_RACE_MAX];
	int nsites = 0;
	char arch[16]; /* the session image's, when a SIF here */
	int rc = cli_submit_sites(cli, &q->res, gg_image_sif_arch(q->image, arch) ? arch : NULL, 0,
				  sites, q->race, &nsites);
	if (rc == 0)
		rc = name_free(cli, q->name);
	if (rc)
		return rc;
	char *launcher = cli_libexec(cli, "session-launcher", "session launcher", "request");
	if (!launcher)
		return EXIT_FAIL;
	struct race x = {0};
	rc = run(cli, q, &x, sites, nsites, launcher);
	gg_race_end(x.race);
	for (size_t i = 0; i < x.n; i++) {
		gg_record_clear(&x.recs[i]);
		gg_ce_free(x.ces[i]);
	}
	free(launcher);
	return rc;
}
