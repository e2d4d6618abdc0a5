/* gridgpu list (ls, jobs): sessions and jobs in the local store, refreshed
 * from their CEs on request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/session.h"

enum { O_SYNC = 256, O_JOBS, O_SESSIONS };

const struct gg_opt cmd_list_opts[] = {
	{"sync", 's', OPT_NONE, NULL, "refresh from the CEs first (one bulk call per CE)", O_SYNC},
	{"jobs", 0, OPT_NONE, NULL, "only batch jobs", O_JOBS},
	{"sessions", 0, OPT_NONE, NULL, "only interactive sessions", O_SESSIONS},
	OPT_END,
};

static void fmt_dur(int64_t s, char *b, size_t n)
{
	if (s < 0)
		snprintf(b, n, "-");
	else
		gg_duration_format(s, b, n);
}

/* A session's time left until the deadline that applies now
 * (gg_record_row_deadline); -1 when it does not run. */
static int64_t time_left(const struct gg_record_row *r, int64_t now)
{
	enum gg_deadline kind;
	int64_t at = gg_record_row_deadline(r, &kind);
	if (kind == GG_DEADLINE_NONE)
		return -1;
	return at > now ? at - now : 0;
}

enum { C_NAME, C_SITE, C_KIND, C_STATE, C_GPU, C_AGE, C_LEFT, C_IDLE, NCOL };
static const char *const col_head[NCOL] = {"NAME", "SITE", "KIND", "STATE",
					   "GPU",  "AGE",  "LEFT", "IDLE"};

struct cells {
	const char *c[NCOL];
	char gpu[24], age[16], left[16], idle[16], state[64];
	int color;
};

/* A failed job whose wrapper said how its command ended: "failed: exited 3",
 * "failed: signal 9", "failed: out of memory". */
static void exit_cell(const struct gg_record_row *r, char *out, size_t len)
{
	json_t *j = json_loads(r->json, 0, NULL);
	json_int_t st = json_integer_value(json_object_get(j, "exit_status"));
	json_int_t oom = json_integer_value(json_object_get(j, "oom_kills"));
	char how[32];
	snprintf(out, len, "failed: %s", gg_job_exit_brief(st, oom, how, sizeof how));
	json_decref(j);
}

/* The state, and for a live job its data staging ("queued: staging in 2/3")
 * from the stored record (read only for live jobs that have the key); for
 * queued work after a sync, the batch system's code for why it waits
 * ("queued (Slurm: Resources)", as status says it in full). */
static void state_cell(const struct gg_record_row *r, const char *why, char *out, size_t len)
{
	const char *st = gg_sess_state_name(r->state);
	const char *code = why && r->state == GG_S_QUEUED ? strstr(why, "(Slurm: ") : NULL;
	snprintf(out, len, "%s", st);
	if (code)
		snprintf(out, len, "%s %.*s)", st, (int)strcspn(code, "),"), code);
	if (r->kind == GG_REC_JOB && r->state == GG_S_FAILED && r->json &&
	    strstr(r->json, "\"exit_read\"")) {
		exit_cell(r, out, len);
		return;
	}
	if (r->kind != GG_REC_JOB || gg_sess_state_ended(r->state) || !r->json ||
	    !strstr(r->json, "\"staging\""))
		return;
	json_t *j = json_loads(r->json, 0, NULL);
	const char *staging = json_string_value(json_object_get(j, "staging"));
	if (staging)
		snprintf(out, len, "%s: %.40s", st, staging);
	json_decref(j);
}

static void row_cells(const struct gg_record_row *r, const char *why, time_t now, struct cells *x)
{
	if (strcmp(r->mig, "-"))
		snprintf(x->gpu, sizeof x->gpu, "%s", r->mig);
	else if (r->gpus)
		snprintf(x->gpu, sizeof x->gpu, "%d", r->gpus);
	else
		snprintf(x->gpu, sizeof x->gpu, "-");
	fmt_dur((int64_t)now - r->created, x->age, sizeof x->age);
	fmt_dur(time_left(r, (int64_t)now), x->left, sizeof x->left);
	int live = !gg_sess_state_ended(r->state);
	fmt_dur(live && r->state == GG_S_READY && r->last_activity ? (int64_t)now - r->last_activity
								   : -1,
		x->idle, sizeof x->idle);
	state_cell(r, why, x->state, sizeof x->state);
	const char *cells[NCOL] = {r->name,  r->site, r->kind == GG_REC_JOB ? "job" : "session",
				   x->state, x->gpu,  x->age,
				   x->left,  x->idle};
	memcpy(x->c, cells, sizeof cells);
	x->color = r->state == GG_S_READY || r->state == GG_S_RUNNING ? 32
		   : r->state == GG_S_FAILED                          ? 31
		   : r->state == GG_S_UNKNOWN                         ? 33
								      : 0;
}

/* One line of the table: each column as wide as its widest cell (the last one
 * not padded), the state in colour when asked. Names and sites are ASCII
 * (gg_record_name_valid, site names): bytes are columns. Each cell made
 * printable as ui_out would, but written straight to stdout: a listing of
 * 10,000 records spent most of its time in ui_out's formatting. */
static void print_line(const char *const *c, const int *w, int ncol, int color)
{
	for (int i = 0; i < ncol; i++) {
		char *safe = gg_str_printable(c[i], strlen(c[i]));
		const char *s = safe ? safe : "?";
		int last = i == ncol - 1;
		if (i == C_STATE && color)
			printf("\033[%dm%-*s\033[0m%s", color, w[i], s, last ? "" : " ");
		else if (last)
			fputs(s, stdout);
		else
			printf("%-*s ", w[i], s);
		free(safe);
	}
	putchar('\n');
}

/* The rows as a table; only: a kind of record, or -1 for all (batch jobs
 * alone have no IDLE column). */
static void print_table(const struct gg_engine *e, const struct gg_record_row *rows, size_t n,
			int only)
{
	time_t now = time(NULL);
	struct cells *x = calloc(n ? n : 1, sizeof *x);
	if (!x)
		return;
	int w[NCOL], ncol = only == GG_REC_JOB ? C_IDLE : NCOL, color = ui_color();
	for (int i = 0; i < NCOL; i++)
		w[i] = (int)strlen(col_head[i]);
	for (size_t i = 0; i < n; i++) {
		if (only >= 0 && (int)rows[i].kind != only)
			continue;
		row_cells(&rows[i], gg_engine_queue_reason(e, rows[i].name), now, &x[i]);
		for (int k = 0; k < NCOL; k++)
			if ((int)strlen(x[i].c[k]) > w[k])
				w[k] = (int)strlen(x[i].c[k]);
	}
	print_line(col_head, w, ncol, 0);
	for (size_t i = 0; i < n; i++)
		if (only < 0 || (int)rows[i].kind == only)
			print_line(x[i].c, w, ncol, color ? x[i].color : 0);
	free(x);
}

/* The rows as the --json items (each record read back from its stored JSON). */
static json_t *rows_json(const struct gg_engine *e, const struct gg_record_row *rows, size_t n,
			 int only)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		if (only >= 0 && (int)rows[i].kind != only)
			continue;
		json_t *j = json_loads(rows[i].json, 0, NULL);
		struct gg_record r;
		if (j && gg_record_from_json(j, &r, NULL) == 0) {
			json_t *o = cli_record_json(&r);
			const char *why = gg_engine_queue_reason(e, r.name);
			if (why && r.state == GG_S_QUEUED)
				gg_json_set_text(o, "queue_reason", why);
			gg_json_append(a, o);
			gg_record_clear(&r);
		}
		json_decref(j);
	}
	return a;
}

/* What an empty listing says, with the command that makes what it lists. */
static const char *none_yet(int only)
{
	if (only == GG_REC_JOB)
		return "no batch jobs: 'gridgpu submit IMAGE.sif -- COMMAND' runs one";
	if (only == GG_REC_SESSION)
		return "no sessions: 'gridgpu request' starts one";
	return "no sessions or jobs: 'gridgpu request' starts a session";
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
	struct gg_store *own = sync ? NULL : cli_store(cli), *st = e ? gg_engine_store(e) : own;
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
	int only = jobs ? GG_REC_JOB : sessions ? GG_REC_SESSION : -1;
	size_t shown = 0;
	for (size_t i = 0; i < n; i++)
		shown += only < 0 || (int)rows[i].kind == only;
	if (cli->json)
		ui_json_doc(!strcmp(argv[0], "jobs") ? "jobs" : "list",
			    rows_json(e, rows, n, only));
	else if (shown == 0)
		ui_info(cli, "%s", none_yet(only));
	else
		print_table(e, rows, n, only);
	gg_record_rows_free(rows, n);
	gg_store_free(own);
	return exit_code;
}
