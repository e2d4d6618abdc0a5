/* gridgpu kill and gridgpu clean: end sessions and jobs on the CE, forget
 * ended ones. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

enum { O_ALL = 256, O_KEEP_REMOTE };

const struct gg_opt cmd_kill_opts[] = {
	OPT_END,
};

const struct gg_opt cmd_clean_opts[] = {
	{"all", 'a', OPT_NONE, NULL, "also kill and clean the live ones", O_ALL},
	{"keep-remote", 0, OPT_NONE, NULL, "leave the job directories on the CE", O_KEEP_REMOTE},
	OPT_END,
};

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
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_record *recs;
	size_t n;
	int rc = load_named(cli, gg_engine_store(e), argc, argv, cli->optind, &recs, &n);
	if (rc == 0) {
		cli_catch_interrupt();
		cli->notes_off = cli->json;
		rc = cli_exit_of(gg_engine_kill(e, recs, n));
		if (cli->json) {
			json_t *a = json_array();
			for (size_t i = 0; i < n; i++)
				gg_json_append(a, cli_record_json(&recs[i]));
			ui_json_doc("kill", a);
		}
		gg_records_free(recs, n);
	}
	return rc;
}

/* The named records, or all of them. */
static int load_records(struct gg_cli *cli, struct gg_store *st, int argc, char **argv,
			struct gg_record **recs, size_t *n)
{
	struct gg_err err = {0};
	if (argc - cli->optind > 0)
		return load_named(cli, st, argc, argv, cli->optind, recs, n);
	if (gg_store_list(st, recs, n, NULL, &err) < 0)
		return ui_fail(cli, &err, "clean");
	return 0;
}

/* Named records must have ended (without --all): say which have not. */
static int live_named(struct gg_cli *cli, const struct gg_record *recs, size_t n)
{
	int exit_code = EXIT_OK;
	struct gg_err err = {0};
	for (size_t i = 0; i < n; i++)
		if (!gg_sess_state_ended(recs[i].state)) {
			gg_err_set(&err, GG_EUSAGE,
				   "it %s: end it with 'gridgpu kill %s' first, or use "
				   "--all",
				   gg_sess_state_phrase(recs[i].state), recs[i].name);
			exit_code = ui_fail(cli, &err, "clean %s", recs[i].name);
		}
	return exit_code;
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
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_record *recs = NULL;
	size_t n = 0;
	int named = argc - cli->optind > 0;
	int rc = load_records(cli, gg_engine_store(e), argc, argv, &recs, &n);
	if (rc)
		return rc;
	cli_catch_interrupt();
	cli->notes_off = cli->json;
	int exit_code = all     ? cli_exit_of(gg_engine_kill(e, recs, n))
			: named ? live_named(cli, recs, n)
				: EXIT_OK;
	char *cleaned = calloc(n ? n : 1, 1);
	if ((all || !exit_code) && cleaned) {
		/* The ended records, by CE: one bulk clean each, then forget them. */
		int crc = cli_exit_of(gg_engine_clean(e, recs, n, keep_remote, cleaned));
		exit_code = exit_code ? exit_code : crc;
		json_t *names = json_array();
		for (size_t i = 0; i < n; i++)
			if (cleaned[i])
				gg_json_append(names, gg_json_text(recs[i].name));
		if (cli->json)
			ui_json_doc("clean", gg_json_object("cleaned", names, NULL));
		else
			json_decref(names);
	}
	free(cleaned);
	gg_records_free(recs, n);
	return exit_code;
}
