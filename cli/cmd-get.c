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

/* A name from the CE's listing that is a plain file name: not empty, no '/',
 * not "." or "..", no control character. */
static int plain_name(const char *n)
{
	return n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..") &&
	       !gg_str_has_control(n);
}

/* Keep the names that can be written inside DIR: the others are skipped with a
 * warning, hidden files (A-REX's own) silently. Returns how many are left
 * (files[] compacted; the dropped names freed and the slots after the kept ones
 * set to NULL, so freeing all n entries frees each name once). */
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
	for (size_t i = k; i < n; i++)
		files[i] = NULL;
	return k;
}

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

/* Refuse before downloading anything, so nothing is half replaced. */
static int refuse_existing(const char *target, char **files, size_t n, struct gg_err *err)
{
	for (size_t i = 0; i < n; i++) {
		char *p = gg_strdup_printf("%s/%s", target, files[i]);
		int exists = p && access(p, F_OK) == 0;
		if (exists)
			gg_err_set(err, GG_EFAIL,
				   "'%s' is already there: use --force to replace it", p);
		free(p);
		if (exists)
			return GG_EFAIL;
	}
	return 0;
}

/* Download the files into target; the paths written go to got. */
static int download(struct gg_cli *cli, struct gg_ce *ce, const struct gg_record *r,
		    const char *target, char **files, size_t n, json_t *got, struct gg_err *err)
{
	for (size_t i = 0; i < n; i++) {
		char *p = gg_strdup_printf("%s/%s", target, files[i]);
		char label[160];
		snprintf(label, sizeof label, "%s %s", r->name, files[i]);
		struct ui_progress *pr = ui_progress_new(cli, label);
		int grc = gg_ce_get_file(ce, r->job_id, files[i], p, ui_progress_cb, pr, err);
		ui_progress_end(pr);
		if (grc < 0) {
			free(p);
			return gg_err_prefix(err, "%s", files[i]);
		}
		gg_json_append(got, gg_json_text(p));
		if (!cli->json)
			ui_out("%s\n", p);
		free(p);
	}
	return 0;
}

/* The outputs the CE put at storage, fetched over HTTPS with the user's
 * credential (resuming what a broken get left behind). */
static int from_storage(struct gg_cli *cli, struct gg_engine *e, const struct gg_record *r,
			const char *target, const struct gg_storage_output *so, size_t n,
			json_t *got, struct gg_err *err)
{
	if (!n)
		return 0;
	struct gg_auth a;
	int rc = gg_auth_find(gg_engine_site(e, r->site), r->auth, 0, &a, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char *p = gg_strdup_printf("%s/%s", target, so[i].name);
		char label[160];
		snprintf(label, sizeof label, "%s %s (storage)", r->name, so[i].name);
		struct ui_progress *pr = ui_progress_new(cli, label);
		int64_t resumed = 0;
		rc = gg_storage_fetch(&a, so[i].url, p, ui_progress_cb, pr, &resumed, err);
		ui_progress_end(pr);
		if (rc < 0)
			gg_err_prefix(err, "%s from %s", so[i].name, so[i].url);
		else if (resumed)
			ui_info(cli, "%s: resumed at byte %lld", so[i].name, (long long)resumed);
		if (rc == 0)
			gg_json_append(got, gg_json_text(p));
		if (rc == 0 && !cli->json)
			ui_out("%s\n", p);
		free(p);
	}
	gg_auth_clear(&a);
	return rc;
}

/* --urls: where the job's outputs at storage are, for the user's own tools. */
static int print_urls(struct gg_cli *cli, const struct gg_record *r)
{
	struct gg_err err = {0};
	struct gg_storage_output *so = NULL;
	size_t n = 0;
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

/* The names of both kinds of outputs, for refuse_existing. */
static char **all_names(char **files, size_t n, const struct gg_storage_output *so, size_t ns)
{
	char **all = calloc(n + ns + 1, sizeof *all);
	for (size_t i = 0; all && i < n + ns; i++)
		all[i] = i < n ? files[i] : so[i - n].name;
	return all;
}

/* The outputs of an ended job into o->dir (or NAME/): the CE's, then those at
 * storage. */
static int fetch(struct gg_cli *cli, struct gg_engine *e, struct gg_ce *ce,
		 const struct gg_record *r, const struct get_opts *o, struct gg_err *err)
{
	char **files = NULL;
	size_t n = 0, ns = 0;
	struct gg_storage_output *so = NULL;
	if (gg_storage_outputs(r, &so, &ns, err) < 0)
		return err->code;
	int lrc = gg_ce_ls(ce, r->job_id, &files, &n, err);
	if (lrc < 0 && (lrc != GG_ENOTFOUND || !ns)) {
		gg_storage_outputs_free(so, ns);
		return lrc;
	}
	if (lrc < 0) /* cleaned on the CE: the storage still has them */
		ui_warn(cli,
			"the CE no longer has %s's files: fetching its outputs at storage only",
			r->name);
	size_t usable = usable_names(cli, files, n);
	const char *target = o->dir ? o->dir : r->name;
	json_t *got = json_array();
	char **all = all_names(files, usable, so, ns);
	int rc = all ? gg_mkdir_p(target, 0755, err) : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !o->force)
		rc = refuse_existing(target, all, usable + ns, err);
	free(all);
	if (rc == 0)
		rc = download(cli, ce, r, target, files, usable, got, err);
	if (rc == 0 && ns && r->state != GG_S_FINISHED)
		ui_warn(cli, "%s did not finish: its outputs at storage are not fetched (%s)",
			r->name, r->error ? r->error : gg_sess_state_name(r->state));
	else if (rc == 0)
		rc = from_storage(cli, e, r, target, so, ns, got, err);
	gg_storage_outputs_free(so, ns);
	if (rc == 0 && cli->json)
		ui_json_doc("get", gg_json_object("name", gg_json_text(r->name), "state",
						  gg_json_text(gg_sess_state_name(r->state)),
						  "files", json_incref(got), NULL));
	json_decref(got);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return rc;
}

/* Clean the job on the CE and forget it (--clean). */
static int clean_job(struct gg_cli *cli, struct gg_engine *e, struct gg_ce *ce,
		     const struct gg_record *r, struct gg_err *err)
{
	const char *ids[1] = {r->job_id};
	struct gg_ce_result *res = NULL;
	if (gg_ce_clean(ce, ids, 1, &res, err) < 0)
		return gg_err_prefix(err, "cleaning on the CE (the record is kept)");
	gg_ce_results_free(res, 1);
	gg_store_remove(e->st, r->name, NULL);
	ui_info(cli, "cleaned %s", r->name);
	return 0;
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
	return ui_fail(cli, &err, "%s", r->name);
}

/* Where the job is now (waiting for its end when asked), then its outputs. */
static int get(struct gg_cli *cli, struct gg_engine *e, struct gg_record *r,
	       const struct get_opts *o)
{
	struct gg_err err = {0};
	struct gg_ce *ce = NULL;
	cli_catch_interrupt();
	int rc = gg_engine_open_record_ce(e, r, &ce, &err);
	if (rc == 0)
		rc = gg_engine_wait_ended(e, ce, r, o->wait, o->timeout, &err);
	if (rc == GG_EINTR) {
		gg_ce_free(ce);
		return EXIT_INTR;
	}
	if (rc == 0 && !gg_sess_state_ended(r->state))
		rc = gg_err_set(&err, GG_EFAIL,
				"the job is %s: its outputs come when it ends ('gridgpu get "
				"--wait %s')",
				gg_sess_state_name(r->state), r->name);
	if (rc == 0)
		rc = fetch(cli, e, ce, r, o, &err);
	if (rc == 0 && o->clean)
		rc = clean_job(cli, e, ce, r, &err);
	gg_ce_free(ce);
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
	if ((rc = cli_find_record(cli, e->st, argv[cli->optind], &r)))
		return rc;
	if (!r.job_id || !r.ce) {
		struct gg_err err = {0};
		gg_err_set(&err, GG_ENOTFOUND, "was never submitted (%s)",
			   r.error ? r.error : gg_sess_state_name(r.state));
		rc = ui_fail(cli, &err, "get %s", r.name);
	} else {
		rc = o.urls ? print_urls(cli, &r) : get(cli, e, &r, &o);
	}
	gg_record_clear(&r);
	return rc;
}
