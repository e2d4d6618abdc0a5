/* gridgpu status: one session or job in full, refreshed from its CE, with the
 * CE's diagnostics of a failed job. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "resopt.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

enum { O_NO_SYNC = 256, O_ALL_ERRORS };

const struct gg_opt cmd_status_opts[] = {
	{"no-sync", 0, OPT_NONE, NULL, "show the stored record, do not ask the CE", O_NO_SYNC},
	{"all-errors", 0, OPT_NONE, NULL,
	 "a failed job: the CE's and the batch system's logs too (all of its errors file)",
	 O_ALL_ERRORS},
	OPT_END,
};

/* The CE's logs (status --all-errors), line by line (each one made printable),
 * each behind "  | " so that no line of the CE's can pass for one of
 * gridgpu's own. */
static void print_diag(const char *diag)
{
	ui_out("CE errors:\n");
	for (const char *p = diag; *p;) {
		size_t n = strcspn(p, "\n");
		ui_out("  | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* The last lines of a failed job's stderr, as the wrapper kept them (made
 * printable already: shown as they are), each behind "  | ". */
static void print_tail(const struct gg_record *r)
{
	const char *t = r->stderr_tail;
	if (!r->exit_read)
		return;
	if (!t || !*t) {
		ui_out("stderr:      (the command wrote nothing to it)\n");
		return;
	}
	ui_out("stderr:      (its last lines)\n");
	size_t n = 1;
	for (const char *p = t; *p; p++)
		n += *p == '\n';
	char *buf = malloc(strlen(t) + 5 * n + 1), *o = buf; /* "  | " and "\n" a line */
	for (const char *p = t; buf && *p;) {
		size_t len = strcspn(p, "\n");
		o += sprintf(o, "  | %.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
	if (buf)
		ui_out_lines(buf);
	free(buf);
}

/* A time on screen with how far it is: "2026-11-26 11:20 CET (in 3h)". */
static const char *when(int64_t t, int64_t now, char *b, size_t n)
{
	char at[48], d[32];
	gg_time_local(t, at, sizeof at);
	gg_duration_format(t > now ? t - now : now - t, d, sizeof d);
	snprintf(b, n, "%s (%s%s%s)", at, t > now ? "in " : "", d, t > now ? "" : " ago");
	return b;
}

/* What the launcher last saw: "active: python3 running", "idle since 11:20
 * CET (4m ago)"; a launcher that does not say (older ones): idle for how long
 * since its last activity. */
static void print_activity(const struct gg_record *r, int64_t now)
{
	char b[96], d[32];
	const char *why = r->active_reason;
	if (why && !strncmp(why, "process ", 8))
		ui_out("activity:    active: %s running\n", why + 8);
	else if (why && !strcmp(why, "gpu busy"))
		ui_out("activity:    active: a GPU of the job is busy\n");
	else if (why)
		ui_out("activity:    active: %s\n", why);
	else if (r->idle_since)
		ui_out("activity:    idle since %s\n", when(r->idle_since, now, b, sizeof b));
	else if (r->last_activity)
		ui_out("idle for:    %s\n",
		       gg_duration_format(now - r->last_activity, d, sizeof d));
}

/* Which deadline applies now, and the launcher's activity as of when it last
 * wrote its file. */
static void print_deadlines(const struct gg_record *r, int64_t now)
{
	char b[96], d[32];
	enum gg_deadline kind;
	int64_t at = gg_record_deadline(r, &kind);
	int live = kind != GG_DEADLINE_NONE, connected = gg_record_connected(r);
	if (kind == GG_DEADLINE_CONNECT)
		ui_out("connect by:  %s, or the session ends\n", when(at, now, b, sizeof b));
	else if (kind == GG_DEADLINE_WALLTIME && r->walltime)
		ui_out("ends by:     %s (walltime)\n", when(at, now, b, sizeof b));
	if (r->idle_limit)
		ui_out("idle limit:  %s%s\n", gg_duration_format(r->idle_limit, d, sizeof d),
		       live && !connected ? " (after the first login)" : "");
	if (r->logins || r->first_login)
		ui_out("logins:      %lld (the first %s)\n", (long long)r->logins,
		       when(r->first_login, now, b, sizeof b));
	if (live && r->state == GG_S_READY && connected)
		ui_out("connections: %lld open\n", (long long)r->connections);
	if (r->state == GG_S_READY)
		print_activity(r, now);
	if (r->activity_at && live)
		ui_out("as of:       %s (the node's session file)\n",
		       when(r->activity_at, now, b, sizeof b));
}

/* The snapshot of the sandbox's changes the launcher wrote as the session ended. */
static void print_snapshot(const struct gg_record *r, int64_t now)
{
	char b[96], sz[32];
	if (r->snapshot_at)
		ui_out("snapshot:    %s, written %s (freeze --session %s takes it)\n",
		       gg_size_format((uint64_t)r->snapshot_size, sz, sizeof sz),
		       when(r->snapshot_at, now, b, sizeof b), r->name);
	else if (r->snapshot_error)
		ui_out("snapshot:    none: %s\n", r->snapshot_error);
}

/* A job's storage outputs, where the CE puts them. */
static void print_storage(const struct gg_record *r)
{
	struct gg_storage_output *so = NULL;
	size_t n = 0;
	if (!r->storage_outputs || gg_storage_outputs(r, &so, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		ui_out("%s %s -> %s\n", i ? "            " : "to storage: ", so[i].name, so[i].url);
	gg_storage_outputs_free(so, n);
}

/* status as text: the record, what the sshd answered, the CE's errors. */
static void print_status(const struct gg_record *r, const char *diag, const char *probe_why,
			 const char *waits, int all_errors)
{
	char b[32];
	int64_t now = (int64_t)time(NULL);
	ui_out("name:        %s\nkind:        %s\nstate:       %s\n", r->name,
	       r->kind == GG_REC_JOB ? "batch job" : "interactive session",
	       gg_sess_state_name(r->state));
	if (waits && r->state == GG_S_QUEUED)
		ui_out("waiting:     %s\n", waits);
	if (r->error)
		ui_out("reason:      %s\n", r->error);
	print_tail(r);
	if (r->staging)
		ui_out("staging:     %s\n", r->staging);
	print_storage(r);
	ui_out("site:        %s\nCE:          %s\njob:         %s\nCE state:    %s\n",
	       r->site ? r->site : "-", r->ce ? r->ce : "-", r->job_id ? r->job_id : "-",
	       r->ce_state ? r->ce_state : "-");
	ui_out("age:         %s\n", gg_duration_format(now - r->created, b, sizeof b));
	ui_out("walltime:    %s\n", gg_duration_format(r->walltime, b, sizeof b));
	if (r->gpus || r->mig)
		ui_out("GPUs:        %s%s\n", r->mig ? "MIG " : "",
		       r->mig ? r->mig : (snprintf(b, sizeof b, "%d", r->gpus), b));
	if (r->memory)
		ui_out("memory:      %s\n", gg_size_format(r->memory, b, sizeof b));
	if (r->image)
		ui_out("image:       %s\n", r->image);
	if (r->resumed_from)
		ui_out("resumed:     from session %s (its sandbox as it ended)\n", r->resumed_from);
	if (r->command)
		ui_out("command:     %s\n", r->command);
	if (r->kind == GG_REC_SESSION) {
		print_deadlines(r, now);
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
		print_snapshot(r, now);
		if (r->key)
			ui_out("key:         %s\n", r->key);
	}
	if (diag && *diag)
		print_diag(diag);
	else if (r->state == GG_S_FAILED && !all_errors)
		ui_out("CE logs:     'gridgpu status --all-errors %s' shows them\n", r->name);
}

int cmd_status(struct gg_cli *cli, int argc, char **argv)
{
	int c, nosync = 0, all_errors = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_status_opts)) > 0) {
		if (c == O_NO_SYNC)
			nosync = 1;
		else if (c == O_ALL_ERRORS)
			all_errors = 1;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind != 1)
		return ui_usage(cli, "status: expected one NAME");
	struct gg_engine *e = nosync ? NULL : cli_engine(cli);
	struct gg_store *own = nosync ? cli_store(cli) : NULL, *st = e ? gg_engine_store(e) : own;
	if (!st)
		return cli->cfg_exit;
	struct gg_record r;
	int rc = cli_find_record(cli, st, argv[cli->optind], &r);
	if (rc) {
		gg_store_free(own);
		return rc;
	}
	const char *probe_why = e ? gg_engine_probe_why(e) : "";
	int exit_code = EXIT_OK;
	char *diag = NULL;
	if (!nosync && r.job_id) {
		cli_catch_interrupt();
		exit_code = cli_exit_of(gg_engine_sync(e, &r, 1, 0));
		struct gg_err de = {0}; /* the CE's own logs of a failed job, if asked */
		if (all_errors)
			gg_engine_ce_errors(e, &r, &diag, &de);
	}
	const char *waits = e && r.state == GG_S_QUEUED ? gg_engine_queue_reason(e, r.name) : NULL;
	if (cli->json) {
		json_t *j = cli_record_json(&r);
		if (waits)
			gg_json_set_text(j, "queue_reason", waits);
		if (diag)
			gg_json_set_text(j, "ce_errors", diag);
		if (gg_session_published(&r) && probe_why[0])
			gg_json_set_text(j, "ssh_check", probe_why);
		cli_usage_status(cli, e, &r, j);
		ui_json_doc("status", j);
	} else {
		print_status(&r, diag, probe_why, waits, all_errors);
		cli_usage_status(cli, e, &r, NULL);
	}
	if (!exit_code && r.state == GG_S_FAILED)
		exit_code = EXIT_JOB;
	free(diag);
	gg_record_clear(&r);
	gg_store_free(own);
	return exit_code;
}
