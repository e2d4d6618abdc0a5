/* gridgpu list (ls) and gridgpu status: sessions and jobs in the local store,
 * refreshed from their CEs on request. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "session/sync.h"
#include "ssh/ssh.h"

enum { O_SYNC = 256, O_JOBS, O_SESSIONS, O_NO_SYNC };

const struct gg_opt cmd_list_opts[] = {
	{"sync", 's', OPT_NONE, NULL, "refresh from the CEs first (one bulk call per CE)", O_SYNC},
	{"jobs", 0, OPT_NONE, NULL, "only batch jobs", O_JOBS},
	{"sessions", 0, OPT_NONE, NULL, "only interactive sessions", O_SESSIONS},
	OPT_END,
};

const struct gg_opt cmd_status_opts[] = {
	{"no-sync", 0, OPT_NONE, NULL, "show the stored record, do not ask the CE", O_NO_SYNC},
	OPT_END,
};

static void fmt_dur(int64_t s, char *b, size_t n)
{
	if (s < 0)
		snprintf(b, n, "-");
	else
		gg_duration_format(s, b, n);
}

/* The rows as a table, or as JSON (the records as they are stored); only: a
 * kind of record, or -1 for all. */
static void print_rows(struct gg_cli *cli, const struct gg_record_row *rows, size_t n, int only)
{
	time_t now = time(NULL);
	if (cli->json) {
		/* The records as they are stored: no need to parse them again. */
		fputc('[', stdout);
		int first = 1;
		for (size_t i = 0; i < n; i++) {
			if (only >= 0 && (int)rows[i].kind != only)
				continue;
			if (!first)
				fputc(',', stdout);
			fputs(rows[i].json, stdout);
			first = 0;
		}
		fputs("]\n", stdout);
	} else if (n == 0) {
		ui_info(cli, "no sessions or jobs: 'gridgpu request' starts a session");
	} else {
		int color = ui_color();
		ui_out("%-16s %-10s %-7s %-9s %-8s %-6s %-7s %s\n", "NAME", "SITE", "KIND", "STATE",
		       "GPU", "AGE", "LEFT", "IDLE");
		for (size_t i = 0; i < n; i++) {
			const struct gg_record_row *r = &rows[i];
			if (only >= 0 && (int)r->kind != only)
				continue;
			char gpu[24], age[16], left[16], idle[16];
			if (strcmp(r->mig, "-"))
				snprintf(gpu, sizeof gpu, "%s", r->mig);
			else if (r->gpus)
				snprintf(gpu, sizeof gpu, "%d", r->gpus);
			else
				snprintf(gpu, sizeof gpu, "-");
			fmt_dur((int64_t)now - r->created, age, sizeof age);
			int live = !gg_sess_state_ended(r->state);
			/* Before anyone connects, the connect deadline is what runs out;
			 * after, the walltime. */
			int64_t l = -1;
			if (live && r->started) {
				int connected = r->last_activity > r->started;
				l = connected || !r->deadline_at
					    ? r->started + r->walltime - (int64_t)now
					    : r->deadline_at - (int64_t)now;
				if (l < 0)
					l = 0;
			}
			fmt_dur(l, left, sizeof left);
			fmt_dur(live && r->state == GG_S_READY && r->last_activity
					? (int64_t)now - r->last_activity
					: -1,
				idle, sizeof idle);
			int col = !color                                               ? 0
				  : r->state == GG_S_READY || r->state == GG_S_RUNNING ? 32
				  : r->state == GG_S_FAILED                            ? 31
				  : r->state == GG_S_UNKNOWN                           ? 33
										       : 0;
			ui_out(col ? "%-16s %-10s %-7s \033[%dm%-9s\033[0m %-8s %-6s %-7s %s\n"
				   : "%-16s %-10s %-7s %.0d%-9s %-8s %-6s %-7s %s\n",
			       r->name, r->site, r->kind == GG_REC_JOB ? "job" : "session", col,
			       gg_sess_state_name(r->state), gpu, age, left, idle);
		}
	}
}

int cmd_list(struct gg_cli *cli, int argc, char **argv)
{
	int c, sync = 0, jobs = 0, sessions = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_list_opts)) > 0) {
		if (c == O_SYNC)
			sync = 1;
		else if (c == O_JOBS)
			jobs = 1;
		else if (c == O_SESSIONS)
			sessions = 1;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind)
		return ui_usage(cli, "list takes no arguments");
	if (!strcmp(argv[0], "jobs"))
		jobs = 1;
	struct gg_engine *e = sync ? cli_engine(cli) : NULL;
	struct gg_store *own = sync ? NULL : cli_store(cli), *st = e ? e->st : own;
	if (!st)
		return cli->cfg_exit;
	struct gg_err err = {0};
	int exit_code = EXIT_OK;
	if (sync) {
		struct gg_record *recs = NULL;
		size_t nr = 0;
		if (gg_store_list(st, &recs, &nr, NULL, &err) < 0)
			return ui_fail(cli, &err, "list");
		cli_catch_interrupt();
		exit_code = cli_exit_of(gg_engine_sync(e, recs, nr, 1));
		gg_records_free(recs, nr);
	}
	struct gg_record_row *rows = NULL;
	size_t n = 0, bad = 0;
	if (gg_store_rows(st, &rows, &n, &bad, &err) < 0) {
		gg_store_free(own);
		return ui_fail(cli, &err, "list");
	}
	if (bad)
		ui_warn(cli, "%zu unreadable record(s) in %s skipped", bad, gg_store_dir(st));
	print_rows(cli, rows, n, jobs ? GG_REC_JOB : sessions ? GG_REC_SESSION : -1);
	gg_record_rows_free(rows, n);
	gg_store_free(own);
	return exit_code;
}

/* The CE's diagnostics, line by line (each one made printable), each behind
 * "  | " so that no line of the CE's can pass for one of gridgpu's own. */
static void print_diag(const char *diag)
{
	ui_out("CE errors:\n");
	for (const char *p = diag; *p;) {
		size_t n = strcspn(p, "\n");
		ui_out("  | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* status as text: the record, what the sshd answered, the CE's errors. */
static void print_status(const struct gg_record *r, const char *diag, const char *probe_why)
{
	char b[32];
	time_t now = time(NULL);
	ui_out("name:        %s\nkind:        %s\nstate:       %s\n", r->name,
	       r->kind == GG_REC_JOB ? "batch job" : "interactive session",
	       gg_sess_state_name(r->state));
	if (r->error)
		ui_out("reason:      %s\n", r->error);
	ui_out("site:        %s\nCE:          %s\njob:         %s\nCE state:    %s\n",
	       r->site ? r->site : "-", r->ce ? r->ce : "-", r->job_id ? r->job_id : "-",
	       r->ce_state ? r->ce_state : "-");
	ui_out("age:         %s\n", gg_duration_format((int64_t)now - r->created, b, sizeof b));
	ui_out("walltime:    %s\n", gg_duration_format(r->walltime, b, sizeof b));
	if (r->gpus || r->mig)
		ui_out("GPUs:        %s%s\n", r->mig ? "MIG " : "",
		       r->mig ? r->mig : (snprintf(b, sizeof b, "%d", r->gpus), b));
	if (r->image)
		ui_out("image:       %s\n", r->image);
	if (r->kind == GG_REC_SESSION) {
		int connected = r->last_activity > r->started;
		if (r->deadline_at && !connected && !gg_sess_state_ended(r->state)) {
			int64_t left = r->deadline_at - (int64_t)now;
			char when[32];
			time_t t = (time_t)r->deadline_at;
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
			ui_out("connect by:  %s (in %s), or the session ends\n", when,
			       gg_duration_format(left > 0 ? left : 0, b, sizeof b));
		}
		if (r->idle_limit)
			ui_out("idle limit:  %s\n", gg_duration_format(r->idle_limit, b, sizeof b));
		if (r->last_activity && r->state == GG_S_READY)
			ui_out("idle for:    %s\n",
			       gg_duration_format((int64_t)now - r->last_activity, b, sizeof b));
		if (r->node)
			ui_out("sshd:        %s@%s port %d%s\n", r->user ? r->user : "?", r->node,
			       r->port,
			       r->state == GG_S_READY    ? " (answered through the hops)"
			       : gg_session_published(r) ? " (published, not answering yet)"
							 : "");
		if (gg_session_published(r) && probe_why[0])
			ui_out("ssh check:   %s\n", probe_why);
		char fp[80];
		if (r->host_key && gg_ssh_fingerprint(r->host_key, fp, sizeof fp, NULL) == 0)
			ui_out("host key:    %s (pinned)\n", fp);
		if (r->sessiondir)
			ui_out("session dir: %s\n", r->sessiondir);
		if (r->key)
			ui_out("key:         %s\n", r->key);
	}
	if (diag && *diag)
		print_diag(diag);
}

int cmd_status(struct gg_cli *cli, int argc, char **argv)
{
	int c, nosync = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_status_opts)) > 0)
		nosync = c == O_NO_SYNC;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind != 1)
		return ui_usage(cli, "status: expected one NAME");
	struct gg_engine *e = nosync ? NULL : cli_engine(cli);
	struct gg_store *own = nosync ? cli_store(cli) : NULL, *st = e ? e->st : own;
	if (!st)
		return cli->cfg_exit;
	struct gg_record r;
	int rc = cli_find_record(cli, st, argv[cli->optind], &r);
	if (rc) {
		gg_store_free(own);
		return rc;
	}
	const char *probe_why = e ? e->probe_why : "";
	int exit_code = EXIT_OK;
	char *diag = NULL;
	if (!nosync && r.job_id) {
		cli_catch_interrupt();
		exit_code = cli_exit_of(gg_engine_sync(e, &r, 1, 0));
		/* The CE's own diagnostics for a failed job. */
		if (r.state == GG_S_FAILED && r.ce) {
			struct gg_ce *ce = NULL;
			struct gg_err de = {0};
			if (gg_engine_open_record_ce(e, &r, &ce, &de) == 0)
				gg_ce_diagnose(ce, r.job_id, "errors", &diag, &de);
			gg_ce_free(ce);
		}
	}
	if (cli->json) {
		json_t *j = gg_record_to_json(&r);
		if (diag)
			json_object_set_new(j, "ce_errors", ui_json_text(diag));
		if (gg_session_published(&r) && probe_why[0])
			json_object_set_new(j, "ssh_check", json_string(probe_why));
		ui_json(j);
	} else {
		print_status(&r, diag, probe_why);
	}
	if (!exit_code && r.state == GG_S_FAILED)
		exit_code = EXIT_JOB;
	free(diag);
	gg_record_clear(&r);
	gg_store_free(own);
	return exit_code;
}
