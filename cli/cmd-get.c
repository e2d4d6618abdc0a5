/* gridgpu get: download a batch job's outputs (stdout, stderr, declared
 * outputs), then optionally clean the job on the CE. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "session/sync.h"

enum { O_DIR = 256, O_CLEAN, O_FORCE, O_WAIT, O_TIMEOUT };

const struct gg_opt cmd_get_opts[] = {
	{"dir", 'd', OPT_DIR, "DIR", "where to put the files (default ./NAME)", O_DIR},
	{"force", 'f', OPT_NONE, NULL, "replace files that are already there", O_FORCE},
	{"clean", 0, OPT_NONE, NULL, "clean the job on the CE and forget it afterwards", O_CLEAN},
	{"wait", 'w', OPT_NONE, NULL, "wait until the job has ended", O_WAIT},
	{"timeout", 0, OPT_ARG, "DUR", "give up waiting after DUR", O_TIMEOUT},
	OPT_END,
};

/* A name from the CE's listing that is a plain file name: not empty, no '/',
 * not "." or "..", no control character. */
static int plain_name(const char *n)
{
	if (!n[0] || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, ".."))
		return 0;
	for (const unsigned char *p = (const unsigned char *)n; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* Keep the names that can be written inside DIR: the others are skipped with a
 * warning, hidden files (A-REX's own) silently. Returns how many are left
 * (files[] compacted; the dropped names freed). */
static size_t usable_names(struct gg_cli *cli, char **files, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!plain_name(files[i]))
			ui_warn(cli, "skipping '%s' from the CE's listing: not a plain file name",
				files[i]);
		if (!plain_name(files[i]) || files[i][0] == '.')
			free(files[i]);
		else
			files[k++] = files[i];
	}
	return k;
}

int cmd_get(struct gg_cli *cli, int argc, char **argv)
{
	int c, force = 0, clean = 0, wait = 0;
	int64_t timeout = 0;
	const char *dir = NULL;
	struct gg_err err = {0};
	while ((c = cli_next_opt(cli, argc, argv, cmd_get_opts)) > 0) {
		switch (c) {
		case O_DIR: dir = cli->optarg; break;
		case O_FORCE: force = 1; break;
		case O_CLEAN: clean = 1; break;
		case O_WAIT: wait = 1; break;
		case O_TIMEOUT:
			if (gg_duration_parse(cli->optarg, &timeout, &err) < 0)
				return ui_fail(cli, &err, "--timeout");
			break;
		}
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind != 1)
		return ui_usage(cli, "get: expected one job NAME");
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	const char *name = argv[cli->optind];
	struct gg_record r = {0};
	struct gg_ce *ce = NULL;
	char **files = NULL, *target = NULL;
	size_t nfiles = 0;
	int rc = cli_find_record(cli, e->st, name, &r);
	if (rc)
		goto out;
	if (!r.job_id || !r.ce) {
		gg_err_set(&err, GG_ENOTFOUND, "was never submitted (%s)",
			   r.error ? r.error : gg_sess_state_name(r.state));
		rc = ui_fail(cli, &err, "get %s", name);
		goto out;
	}
	cli_catch_interrupt();
	if (gg_engine_open_record_ce(e, &r, &ce, &err) < 0) {
		rc = ui_fail(cli, &err, "get %s", name);
		goto out;
	}
	/* Where the job is now; wait for its end when asked. */
	time_t start = time(NULL);
	for (;;) {
		struct gg_err e2 = {0};
		if (gg_session_refresh(ce, &r, 1, &e2) < 0) {
			rc = ui_fail(cli, &e2, "get %s", name);
			goto out;
		}
		gg_engine_save(e, &r, &e2);
		if (gg_sess_state_ended(r.state) || !wait)
			break;
		if (cli_interrupted()) {
			rc = EXIT_INTR;
			goto out;
		}
		if (timeout && time(NULL) - start >= timeout) {
			gg_err_set(&err, GG_ENET, "still %s after waiting",
				   gg_sess_state_name(r.state));
			rc = ui_fail(cli, &err, "get %s", name);
			goto out;
		}
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
	if (!gg_sess_state_ended(r.state)) {
		gg_err_set(&err, GG_EFAIL,
			   "the job is %s: its outputs come when it ends ('gridgpu get "
			   "--wait %s')",
			   gg_sess_state_name(r.state), name);
		rc = ui_fail(cli, &err, "get %s", name);
		goto out;
	}
	if (gg_ce_ls(ce, r.job_id, &files, &nfiles, &err) < 0) {
		rc = ui_fail(cli, &err, "get %s", name);
		goto out;
	}
	nfiles = usable_names(cli, files, nfiles);
	target = dir ? strdup(dir) : strdup(name);
	if (gg_mkdir_p(target, 0755, &err) < 0) {
		rc = ui_fail(cli, &err, "get %s", name);
		goto out;
	}
	/* Refuse before downloading anything, so nothing is half replaced. */
	for (size_t i = 0; i < nfiles && !force; i++) {
		char *p = gg_strdup_printf("%s/%s", target, files[i]);
		int exists = p && access(p, F_OK) == 0;
		if (exists) {
			gg_err_set(&err, GG_EFAIL,
				   "'%s' is already there: use --force to replace it", p);
			free(p);
			rc = ui_fail(cli, &err, "get %s", name);
			goto out;
		}
		free(p);
	}
	json_t *got = json_array();
	for (size_t i = 0; i < nfiles; i++) {
		char *p = gg_strdup_printf("%s/%s", target, files[i]);
		char label[160];
		snprintf(label, sizeof label, "%s %s", name, files[i]);
		struct ui_progress *pr = ui_progress_new(cli, label);
		int grc = gg_ce_get_file(ce, r.job_id, files[i], p, ui_progress_cb, pr, &err);
		ui_progress_end(pr);
		if (grc < 0) {
			free(p);
			json_decref(got);
			rc = ui_fail(cli, &err, "get %s: %s", name, files[i]);
			goto out;
		}
		json_array_append_new(got, json_string(p));
		if (!cli->json)
			ui_out("%s\n", p);
		free(p);
	}
	if (cli->json)
		ui_json(json_pack("{s:s,s:s,s:o}", "name", name, "state",
				  gg_sess_state_name(r.state), "files", got));
	else
		json_decref(got);
	if (clean) {
		const char *ids[1] = {r.job_id};
		struct gg_ce_result *res = NULL;
		if (gg_ce_clean(ce, ids, 1, &res, &err) < 0) {
			rc = ui_fail(cli, &err, "get %s: cleaning on the CE (the record is kept)",
				     name);
			goto out;
		}
		gg_ce_results_free(res, 1);
		gg_store_remove(e->st, name, NULL);
		ui_info(cli, "cleaned %s", name);
	}
	if (r.state == GG_S_FAILED) {
		gg_err_set(&err, GG_EJOB, "the job failed: %s",
			   r.error ? r.error : "see its stderr");
		rc = ui_fail(cli, &err, "%s", name);
	} else if (r.state == GG_S_KILLED) {
		gg_err_set(&err, GG_EJOB, "the job was killed");
		rc = ui_fail(cli, &err, "%s", name);
	}
out:
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(target);
	gg_ce_free(ce);
	gg_record_clear(&r);
	return rc;
}
