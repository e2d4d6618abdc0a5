/* gridgpu get: download a batch job's outputs (stdout, stderr, declared
 * outputs, those at storage), then optionally clean the job on the CE: one
 * gg_engine_fetch. */
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"

enum { O_DIR = 256, O_CLEAN, O_FORCE, O_WAIT, O_TIMEOUT, O_URLS };

const struct gg_opt cmd_get_opts[] = {
	{"dir", 'd', OPT_DIR, "DIR", "where to put the files (default ./NAME)", O_DIR},
	{"force", 'f', OPT_NONE, NULL, "replace files that are already there", O_FORCE},
	{"clean", 0, OPT_NONE, NULL, "clean the job on the CE and forget it afterwards", O_CLEAN},
	{"wait", 'w', OPT_NONE, NULL, "wait until the job has ended", O_WAIT},
	{"timeout", 0, OPT_ARG, "DUR", "give up waiting after DUR", O_TIMEOUT},
	{"urls", 0, OPT_NONE, NULL, "print where the outputs at storage are, fetch nothing",
	 O_URLS},
	OPT_END,
};

struct get_opts {
	int force, clean, wait, urls;
	int64_t timeout;
	const char *dir;
};

static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct get_opts *o)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_get_opts)) > 0) {
		switch (c) {
		case O_DIR: o->dir = cli->optarg; break;
		case O_FORCE: o->force = 1; break;
		case O_CLEAN: o->clean = 1; break;
		case O_WAIT: o->wait = 1; break;
		case O_URLS: o->urls = 1; break;
		case O_TIMEOUT:
			if (cli_opt_duration(cli, &o->timeout))
				return EXIT_USAGE;
			break;
		}
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind != 1)
		return ui_usage(cli, "get: expected one job NAME");
	if (o->urls && (o->clean || o->wait || o->dir || o->force))
		return ui_usage(cli, "--urls fetches nothing: leave out --dir, --force, --wait "
				     "and --clean");
	return 0;
}

/* --urls: where the job's outputs at storage are, for the user's own tools. */
static int print_urls(struct gg_cli *cli, const struct gg_record *r)
{
	struct gg_err err = {0};
	struct gg_storage_output *so = NULL;
	size_t n = 0;
	if (!r->job_id || !r->ce) {
		gg_err_set(&err, GG_ENOTFOUND, "was never submitted (%s)",
			   r->error ? r->error : gg_sess_state_name(r->state));
		return ui_fail(cli, &err, "get %s", r->name);
	}
	if (gg_storage_outputs(r, &so, &n, &err) < 0)
		return ui_fail(cli, &err, "get %s", r->name);
	if (!n) {
		gg_err_set(&err, GG_ENOTFOUND,
			   "has no outputs at storage (they come back through the CE: 'gridgpu "
			   "get %s')",
			   r->name);
		return ui_fail(cli, &err, "get %s", r->name);
	}
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		gg_json_append(a, gg_json_object("name", gg_json_text(so[i].name), "url",
						 gg_json_text(so[i].url), NULL));
		if (!cli->json)
			ui_out("%s %s\n", so[i].name, so[i].url);
	}
	if (cli->json)
		ui_json_doc("get", gg_json_object("name", gg_json_text(r->name), "state",
						  gg_json_text(gg_sess_state_name(r->state)),
						  "urls", a, NULL));
	else
		json_decref(a);
	gg_storage_outputs_free(so, n);
	return EXIT_OK;
}

/* The job's outcome, once its outputs are fetched: exit 6 when it failed. */
static int outcome(struct gg_cli *cli, const struct gg_record *r)
{
	struct gg_err err = {0};
	if (r->state == GG_S_FAILED)
		gg_err_set(&err, GG_EJOB, "the job failed: %s",
			   r->error ? r->error : "see its stderr");
	else if (r->state == GG_S_KILLED)
		gg_err_set(&err, GG_EJOB, "the job was killed");
	else
		return EXIT_OK;
	/* with --json, the get document printed says the state: one document on
	 * stdout (gridgpu-json(7)), the error line on stderr and the exit code */
	return ui_fail(cli->json ? NULL : cli, &err, "%s", r->name);
}

/* The job's outputs (waiting for its end when asked), then its outcome. */
static int get(struct gg_cli *cli, struct gg_engine *e, struct gg_record *r,
	       const struct get_opts *o)
{
	struct gg_err err = {0};
	char **paths = NULL;
	size_t n = 0;
	unsigned flags = (o->force ? GG_FETCH_FORCE : 0) | (o->wait ? GG_FETCH_WAIT : 0) |
			 (o->clean ? GG_FETCH_CLEAN : 0);
	cli_catch_interrupt();
	int rc = gg_engine_fetch(e, r, o->dir, flags, o->timeout, &paths, &n, &err);
	if (rc == 0 && cli->json) {
		json_t *got = json_array();
		for (size_t i = 0; i < n; i++)
			gg_json_append(got, gg_json_text(paths[i]));
		ui_json_doc("get", gg_json_object("name", gg_json_text(r->name), "state",
						  gg_json_text(gg_sess_state_name(r->state)),
						  "files", got, NULL));
	}
	gg_fetched_free(paths, n);
	if (rc == GG_EINTR && !gg_sess_state_ended(r->state))
		return EXIT_INTR; /* while waiting: nothing fetched, nothing to say */
	return rc < 0 ? ui_fail(cli, &err, "get %s", r->name) : outcome(cli, r);
}

int cmd_get(struct gg_cli *cli, int argc, char **argv)
{
	struct get_opts o = {0};
	int rc = parse_opts(cli, argc, argv, &o);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_record r = {0};
	if ((rc = cli_find_record(cli, gg_engine_store(e), argv[cli->optind], &r)))
		return rc;
	rc = o.urls ? print_urls(cli, &r) : get(cli, e, &r, &o);
	gg_record_clear(&r);
	return rc;
}
