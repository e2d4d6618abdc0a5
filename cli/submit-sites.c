/* Where submit sends its jobs: the sites given (--site A --site B: the first
 * that accepts each job), or, with --site auto (all your sites) or --site A,B,
 * the library's matchmaking (gg_engine_match): the sites that cannot satisfy
 * the job dropped with their reason, the others best first, and one line that
 * says which was chosen and why (-v and --dry-run show the whole ranking).
 * Then --count N spread over them. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctx.h"

/* --site auto, or a --site with a comma: the user asks gridgpu to choose;
 * submit --gpus 0-1 too (whether a GPU is free where it goes). */
int cli_site_choice(const struct gg_cli *cli)
{
	if (cli->gpu_optional)
		return 1;
	for (int i = 0; i < cli->nsites; i++)
		if (!strcmp(cli->sites[i], "auto") || strchr(cli->sites[i], ','))
			return 1;
	return 0;
}

/* The names --site gives (auto: none, meaning all), split at commas, in
 * buf; how many. */
static size_t names_of(const struct gg_cli *cli, char *buf, size_t len, const char **names,
		       size_t max)
{
	size_t n = 0, used = 0;
	for (int i = 0; i < cli->nsites; i++) {
		if (!strcmp(cli->sites[i], "auto"))
			return 0;
		snprintf(buf + used, len - used, "%s", cli->sites[i]);
		for (char *save = NULL, *t = strtok_r(buf + used, ",", &save); t && n < max;
		     t = strtok_r(NULL, ",", &save))
			names[n++] = t;
		used += strlen(cli->sites[i]) + 1;
		if (used >= len)
			break;
	}
	return n;
}

static void print_ranking(json_t *doc, FILE *to)
{
	size_t i, k = 0;
	json_t *r;
	json_array_foreach (json_object_get(doc, "ranking"), i, r) {
		const char *site = json_string_value(json_object_get(r, "site"));
		json_t *f = json_object_get(r, "free_slots"), *w = json_object_get(r, "waiting");
		char *line;
		if (json_is_true(json_object_get(r, "fits")) && json_is_integer(f) &&
		    json_is_integer(w))
			line = ui_format("  %zu. %s: %lld free slots, %lld waiting\n", ++k, site,
					 (long long)json_integer_value(f),
					 (long long)json_integer_value(w));
		else if (json_is_true(json_object_get(r, "fits")))
			line = ui_format("  %zu. %s: its queue is not known\n", ++k, site);
		else
			line = ui_format("  -  %s: dropped: %s\n", site,
					 json_string_value(json_object_get(r, "reason")));
		if (line)
			fputs(line, to);
		free(line);
	}
}

/* submit --gpus 0-1: the best site that fits with a free GPU slot (a GPU
 * job), else the best that fits (a CPU job), alone into sites. */
static void gpu_optional(struct gg_cli *cli, struct gg_engine *e, json_t *doc,
			 const struct gg_site **sites, int *nsites)
{
	json_t *ranking = json_object_get(doc, "ranking"), *pick = NULL, *r;
	size_t i;
	json_array_foreach (ranking, i, r)
		if (json_is_true(json_object_get(r, "fits")) &&
		    (!pick || (json_is_true(json_object_get(r, "gpu_free")) &&
			       !json_is_true(json_object_get(pick, "gpu_free")))))
			pick = r;
	if (!pick)
		return;
	const char *name = json_string_value(json_object_get(pick, "site"));
	int gpu = json_is_true(json_object_get(pick, "gpu_free"));
	sites[0] = gg_engine_site(e, name);
	*nsites = 1;
	cli->gpu_optional = gpu ? 2 : 3;
	gg_json_set(doc, "gpu", json_boolean(gpu));
	gg_json_set(doc, "chosen", json_incref(json_object_get(pick, "site")));
	ui_info(cli, "--gpus 0-1: %s as a %s job (%s)", name, gpu ? "GPU" : "CPU",
		gpu ? "a free slot in its GPU queue" : "no site that fits has a free GPU slot");
}

/* The matched sites, best first, into sites; 0, or the exit code. */
static int match(struct gg_cli *cli, const struct gg_jd_resources *res, const char *arch,
		 int dry_run, const struct gg_site **sites, int max, int *nsites)
{
	char buf[1024];
	const char *names[64];
	size_t n = names_of(cli, buf, sizeof buf, names, 64);
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	if (cli->gpu_optional && !cli->nsites) { /* --gpus 0-1 alone: the default site */
		const struct gg_site *d = cli_site(cli, 1);
		if (!d)
			return cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
		names[n++] = d->name;
	}
	struct gg_err err = {0};
	json_t *doc = NULL;
	if (gg_engine_match_arch(e, names, n, res, arch, GG_SITES_TIMEOUT_MS, &doc, &err) < 0)
		return ui_fail(cli, &err, "%s --site", cli->cmd ? cli->cmd->name : "submit");
	if (dry_run || cli->verbose)
		print_ranking(doc, dry_run && !cli->json ? stdout : stderr);
	const char *why = json_string_value(json_object_get(doc, "why"));
	*nsites = 0;
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(doc, "ranking"), i, r)
		if (json_is_true(json_object_get(r, "fits")) && *nsites < max)
			sites[(*nsites)++] =
				gg_engine_site(e, json_string_value(json_object_get(r, "site")));
	/* request --race: its own line names the sites it races (-v: this one too) */
	int racing = max > 1 && cli->cmd && !strcmp(cli->cmd->name, "request");
	if (why && (!racing || cli->verbose))
		ui_info(cli, "%s", why);
	if (cli->gpu_optional)
		gpu_optional(cli, e, doc, sites, nsites);
	if (!*nsites && !dry_run && !cli->verbose)
		print_ranking(doc, stderr);
	if (dry_run && cli->json && *nsites) { /* the dry run's document shows it */
		json_object_del(doc, "schema");
		json_decref(cli->match);
		cli->match = json_incref(doc);
	}
	json_decref(doc);
	if (!*nsites) {
		gg_err_set(&err, GG_EUSAGE, "no site can take the %s (above: why each was dropped)",
			   cli->cmd && !strcmp(cli->cmd->name, "request") ? "session" : "job");
		return ui_fail(cli, &err, "%s --site", cli->cmd ? cli->cmd->name : "submit");
	}
	return 0;
}

int cli_submit_sites(struct gg_cli *cli, const struct gg_jd_resources *res, const char *arch,
		     int dry_run, const struct gg_site **sites, int max, int *nsites)
{
	return cli_site_choice(cli) ? match(cli, res, arch, dry_run, sites, max, nsites)
				    : cli_sites(cli, sites, max, nsites);
}

int cli_request_site(struct gg_cli *cli, const struct gg_jd_resources *res, const char *image,
		     int dry_run, int need, const struct gg_site **site)
{
	int n = 0;
	char arch[16];
	if (need && cli_site_choice(cli))
		return cli_submit_sites(cli, res, gg_image_sif_arch(image, arch) ? arch : NULL,
					dry_run, site, 1, &n);
	*site = cli_site(cli, need);
	return 0;
}

/* --count N > 1: the jobs in bulk, each told as its fate is known. */
struct many {
	struct gg_cli *cli;
	json_t *done, *failed;
	int count, nok, ntold, exit_code;
	struct gg_err first;
};

static void each_job(void *ud, int index, int rc, const struct gg_record *r,
		     const struct gg_err *err)
{
	struct many *m = ud;
	m->ntold++;
	if (rc == 0) {
		m->nok++;
		gg_json_append(m->done, cli_record_json(r));
		if (!m->cli->json)
			ui_out("%s\n", r->name);
		return;
	}
	/* the text on standard error; with --json, the document's "failed" */
	int code = ui_fail(NULL, err, "submit: job %d of %d%s%s%s", index + 1, m->count,
			   r ? " (" : "", r ? r->name : "", r ? ")" : "");
	if (!m->exit_code) {
		m->exit_code = code;
		m->first = *err; /* the document when none is submitted */
	}
	char *msg = gg_str_printable(err->msg, strlen(err->msg));
	json_t *o = gg_json_object("index", json_integer(index + 1), "error",
				   gg_json_object("what", gg_json_text("submit"), "message",
						  gg_json_text(msg ? msg : ""), "kind",
						  gg_json_text(gg_err_kind(err->code)), "exit",
						  json_integer(code), NULL),
				   NULL);
	free(msg);
	if (r)
		gg_json_set(o, "name", gg_json_text(r->name));
	gg_json_append(m->failed, o);
}

static int submit_many(struct gg_cli *cli, const struct gg_job_spec *spec, int count, int token,
		       const struct gg_site *const *sites, int nsites)
{
	struct many m = {.cli = cli, .done = json_array(), .failed = json_array(), .count = count};
	struct gg_err err = {0};
	if (gg_engine_submit_many(cli_engine(cli), spec, sites, nsites, count, token, each_job, &m,
				  &err) < 0 &&
	    m.ntold < count) {
		int code = ui_fail(NULL, &err, "submit: %d of %d jobs not submitted",
				   count - m.ntold, count);
		if (!m.exit_code)
			m.exit_code = code;
	}
	json_t *doc = gg_json_object("items", m.done, NULL);
	if (json_array_size(m.failed))
		gg_json_set(doc, "failed", m.failed);
	else
		json_decref(m.failed);
	if (cli->json && (m.nok || !m.exit_code))
		ui_json_doc("submit", doc);
	else
		json_decref(doc);
	if (cli->json && !m.nok && m.exit_code) {
		const struct gg_err *e = m.first.code ? &m.first : &err;
		char *msg = gg_str_printable(e->msg, strlen(e->msg));
		ui_json_error("submit", msg, e->code);
		free(msg);
	}
	if (m.nok)
		ui_info(cli,
			"%d of %d jobs submitted; 'gridgpu jobs --sync' follows them; 'gridgpu "
			"get NAME' fetches the outputs",
			m.nok, count);
	return m.exit_code;
}

/* --count N round-robin, each to the first site from its turn that takes it. */
int cli_submit_spread(struct gg_cli *cli, const struct gg_job_spec *spec, int count,
		      const char *name, int token, const struct gg_site *const *sites, int nsites)
{
	cli_catch_interrupt();
	if (count > 1 && !name)
		return submit_many(cli, spec, count, token, sites, nsites);
	int exit_code = EXIT_OK, nok = 0;
	json_t *done = json_array();
	for (int i = 0; i < count && !cli_interrupted(); i++) {
		struct gg_err err = {0};
		struct gg_record r;
		int rc = gg_engine_submit_job(cli_engine(cli), spec, sites, nsites, i, name, token,
					      &r, &err);
		if (rc == 0) {
			nok++;
			gg_json_append(done, cli_record_json(&r));
			if (!cli->json)
				ui_out("%s\n", r.name);
			gg_record_clear(&r);
			continue;
		}
		int code = ui_fail(cli, &err, "submit%s",
				   nsites > 1 ? " (no site accepted the job)" : "");
		if (!exit_code)
			exit_code = code;
		if (rc == GG_EINTR)
			break;
	}
	if (cli->json && (nok || !exit_code)) /* else the error is the document */
		ui_json_doc("submit", done);
	else
		json_decref(done);
	if (nok)
		ui_info(cli,
			"'gridgpu jobs --sync' follows them; 'gridgpu get NAME' fetches the outputs");
	return exit_code;
}
