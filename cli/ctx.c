/* What several commands need: the site, the credential, the CE, the store, the
 * generated SSH configuration, the session launcher's path, Ctrl-C. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctx.h"
#include "gridgpu/ce.h"
#include "gridgpu/cred.h"
#include "gridgpu/engine.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

struct gg_config *cli_config(struct gg_cli *cli)
{
	if (cli->cfg)
		return cli->cfg;
	struct gg_err err = {0};
	char *path = NULL;
	const char *p = cli->config_path ? cli->config_path : getenv("GRIDGPU_CONFIG");
	if (!p) {
		if (gg_config_default_path(&path, &err) < 0) {
			cli->cfg_exit = ui_fail(cli, &err, "configuration");
			return NULL;
		}
		p = path;
	} else if (cli->config_path && cli_local_file(p, &err) < 0) {
		/* --config names a file: not there is a usage error (gridgpu(1)) */
		cli->cfg_exit = ui_fail(cli, &err, "--config '%s'", p);
		return NULL;
	}
	if (gg_config_load(p, &cli->cfg, &err) < 0)
		cli->cfg_exit = ui_fail(cli, &err, "configuration");
	free(path);
	return cli->cfg;
}

/* Every --site names a profile: a typo is a usage error (exit 2) naming the
 * nearest profile, whatever the command, before it does anything. 0, or the
 * exit code after saying what is wrong. */
int cli_check_sites(struct gg_cli *cli)
{
	if (!cli->nsites)
		return 0;
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const char *names[64];
	size_t n = 0;
	for (size_t i = 0; i < cfg->nsites && n < 64; i++)
		names[n++] = cfg->sites[i].name;
	/* submit and request choose among sites: --site auto (all), --site A,B (each
	 * checked) */
	int choose = cli->cmd &&
		     (!strcmp(cli->cmd->name, "submit") || !strcmp(cli->cmd->name, "request"));
	for (int i = 0; i < cli->nsites; i++) {
		char one[256];
		const char *p = cli->sites[i];
		if (choose && !strcmp(p, "auto"))
			continue;
		do {
			size_t len = choose ? strcspn(p, ",") : strlen(p);
			snprintf(one, sizeof one, "%.*s", (int)len, p);
			p += len + (p[len] == ',');
			if (gg_config_site(cfg, one))
				continue;
			const char *near = cli_nearest(one, names, n);
			if (near)
				return ui_usage(
					cli,
					"--site '%s': no such site; did you mean '%s'? (see "
					"'gridgpu site list')",
					one, near);
			return ui_usage(cli, "--site '%s': no such site in %s (%s)", one, cfg->path,
					n ? "see 'gridgpu site list'"
					  : "there are none yet: 'gridgpu site add NAME --ce URL'");
		} while (*p);
	}
	return 0;
}

const struct gg_site *cli_site(struct gg_cli *cli, int required)
{
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return NULL;
	const char *name = cli->site ? cli->site : cfg->default_site;
	if (!name) {
		if (required) {
			struct gg_err e;
			gg_err_set(&e, GG_EUSAGE,
				   "no site given and no default site: add one with "
				   "'gridgpu site add NAME --ce URL'");
			cli->cfg_exit = ui_fail(cli, &e, "site");
			if (!cli->json && !cfg->nsites)
				fprintf(stderr, "\n%s", cli_getting_started);
		}
		return NULL;
	}
	const struct gg_site *s = gg_config_site(cfg, name);
	if (!s && (required || cli->site)) {
		struct gg_err e;
		gg_err_set(&e, GG_ENOTFOUND, "no such site in %s (see 'gridgpu site list')",
			   cfg->path);
		cli->cfg_exit = ui_fail(cli, &e, "site '%s'", name);
	}
	return s;
}

/* -v/-vv: what the library does (each HTTP request, each ssh hop). */
static void cli_log(void *ud, int level, const char *msg)
{
	(void)ud;
	(void)level;
	ui_err("gridgpu: %s\n", msg);
}

struct gg_engine *cli_ce_engine(struct gg_cli *cli, struct gg_err *err)
{
	struct gg_engine *e = NULL;
	struct gg_engine_callbacks cb = {
		.size = sizeof cb, .ud = cli, .cancel = cli_cancel_cb, .log = cli_log};
	cb.log_level = cli->verbose;
	if (gg_engine_new(NULL, NULL, &e, err) < 0 || gg_engine_set_callbacks(e, &cb, err) < 0) {
		gg_engine_free(e);
		return NULL;
	}
	return e;
}

struct gg_store *cli_store(struct gg_cli *cli)
{
	struct gg_store *st = NULL;
	struct gg_err err = {0};
	if (gg_store_open(NULL, &st, &err) < 0)
		cli->cfg_exit = ui_fail(cli, &err, "session store");
	return st;
}

/* A file of ours in libexec: $GRIDGPU_LIBEXEC_DIR, else beside the binary
 * (installed, or in the build tree), else the configured libexecdir. */
static char *libexec_path(const char *name)
{
	const char *env = getenv("GRIDGPU_LIBEXEC_DIR");
	if (env && *env)
		return gg_strdup_printf("%s/%s", env, name);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); /* portable: else below */
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* installed: PREFIX/bin/../libexec; build tree: build/bin/../../libexec */
			const char *rel[] = {"../libexec/gridgpu", "../../libexec/gridgpu"};
			for (int i = 0; i < 2; i++) {
				char *p = gg_strdup_printf("%s/%s/%s", exe, rel[i], name);
				if (p && access(p, R_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	return gg_strdup_printf("%s/%s", GG_LIBEXECDIR, name);
}

char *cli_libexec(struct gg_cli *cli, const char *name, const char *what, const char *cmd)
{
	char *p = libexec_path(name);
	if (p && access(p, R_OK) == 0)
		return p;
	struct gg_err err = {0};
	gg_err_set(&err, GG_EFAIL, "the %s '%s' is missing: reinstall gridgpu", what, p ? p : name);
	free(p);
	ui_fail(cli, &err, "%s", cmd);
	return NULL;
}

int cli_find_record(struct gg_cli *cli, struct gg_store *st, const char *name, struct gg_record *r)
{
	struct gg_err err = {0};
	int rc = gg_store_find(st, name, r, &err);
	if (rc == 0)
		return 0;
	if (rc == GG_ENOTFOUND) {
		/* Say which names exist. */
		struct gg_record *recs = NULL;
		size_t n = 0;
		char names[512] = "";
		if (gg_store_list(st, &recs, &n, NULL, NULL) == 0) {
			for (size_t i = 0; i < n && strlen(names) < 400; i++) {
				strcat(names, i ? ", " : "");
				strcat(names, recs[i].name);
			}
		}
		gg_records_free(recs, n);
		gg_err_set(&err, GG_ENOTFOUND, "no such session or job (%s%s)",
			   n ? "known: " : "none yet", names);
	}
	return ui_fail(cli, &err, "'%s'", name);
}

void cli_note(void *ud, enum gg_note kind, const char *msg)
{
	struct gg_cli *cli = ud;
	if (kind == GG_NOTE_WARN)
		ui_warn(cli, "%s", msg);
	else if (kind == GG_NOTE_INFO && !cli->notes_off)
		ui_info(cli, "%s", msg);
	else if (kind == GG_NOTE_VERBOSE && cli->verbose)
		ui_info(cli, "%s", msg);
}

static void cli_engine_fail(void *ud, const struct gg_err *err, const char *what)
{
	ui_fail(ud, err, "%s", what);
}

static void *progress_begin(void *ud, const char *label)
{
	return ui_progress_new(ud, label);
}

static void progress_end(void *p)
{
	ui_progress_end(p);
}

/* A file gg_engine_fetch wrote whole: its path on stdout (--json: in get's
 * document). */
static void show_fetched(void *ud, const char *path)
{
	struct gg_cli *cli = ud;
	if (!cli->json)
		ui_out("%s\n", path);
}

/* How long a connection keeper stays up unused, in ms: GRIDGPU_KEEP (a
 * duration; 0, "no" or "off": none), else 10 minutes; 0 with --no-keep. */
static int64_t keep_idle_ms(const struct gg_cli *cli)
{
	const char *v = getenv("GRIDGPU_KEEP");
	int64_t s = GG_KEEP_IDLE_DEFAULT;
	if (cli->no_keep || (v && (!strcmp(v, "no") || !strcmp(v, "off"))))
		return 0;
	if (v && *v && gg_duration_parse(v, &s, NULL) < 0)
		s = GG_KEEP_IDLE_DEFAULT; /* a value it cannot read: the default */
	return s * 1000;
}

/* A keeper for the proxy: this program again as 'gridgpu __keep', detached. */
static void keep_start(void *ud, const char *sock, const char *proxy, const char *ca_dir)
{
	struct gg_keep_opts o = {
		.sock = sock, .proxy_path = proxy, .ca_dir = ca_dir, .idle_ms = keep_idle_ms(ud)};
	if (o.idle_ms > 0)
		gg_keep_start(NULL, &o, NULL); /* none: this command connects itself */
}

void cli_engine_callbacks(struct gg_cli *cli, struct gg_engine_callbacks *cb)
{
	*cb = (struct gg_engine_callbacks){.size = sizeof *cb,
					   .ud = cli,
					   .note = cli_note,
					   .fail = cli_engine_fail,
					   .cancel = cli_cancel_cb,
					   .upload_begin = progress_begin,
					   .upload_progress = ui_progress_cb,
					   .upload_end = progress_end,
					   .download_begin = progress_begin,
					   .download_progress = ui_progress_cb,
					   .download_end = progress_end,
					   .fetched = show_fetched,
					   .log = cli_log,
					   .log_level = cli->verbose,
					   .keep_start = keep_start};
}

struct gg_engine *cli_engine(struct gg_cli *cli)
{
	if (cli->eng)
		return cli->eng;
	struct gg_config *cfg = cli_config(cli);
	struct gg_store *st = cfg ? cli_store(cli) : NULL;
	if (!st)
		return NULL;
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	struct gg_err err = {0};
	if (gg_engine_new(st, cfg, &cli->eng, &err) < 0 ||
	    gg_engine_set_callbacks(cli->eng, &cb, &err) < 0) {
		cli->cfg_exit = ui_fail(cli, &err, "engine");
		gg_engine_free(cli->eng);
		cli->eng = NULL;
		gg_store_free(st);
	}
	return cli->eng;
}

void cli_free(struct gg_cli *cli)
{
	cli_engine_free(cli);
	gg_config_free(cli->cfg);
	cli->cfg = NULL;
	json_decref(cli->match);
	cli->match = NULL;
}

void cli_engine_free(struct gg_cli *cli)
{
	if (!cli->eng)
		return;
	struct gg_store *st = gg_engine_store(cli->eng);
	gg_engine_free(cli->eng);
	gg_store_free(st);
	cli->eng = NULL;
}

int cli_exit_of(int rc)
{
	return rc < 0 ? gg_err_exit_code(rc) : EXIT_OK;
}

/* Why a queued record waits, for the progress line: "; Slurm: Resources" on a
 * terminal (the line is rewritten: it must not wrap), else the words too,
 * ": waiting for free GPUs (Slurm: Resources)"; "" when not known. */
static void wait_why(struct gg_cli *cli, const struct gg_record *r, char *out, size_t len)
{
	const char *why = gg_engine_queue_reason(cli->eng, r->name);
	const char *code = why ? strstr(why, "(Slurm: ") : NULL;
	out[0] = '\0';
	if (!code || r->state != GG_S_QUEUED)
		return;
	int n = (int)strcspn(code + 8, "),");
	if (cli->wait_tty)
		snprintf(out, len, "; Slurm: %.*s", n, code + 8);
	else
		snprintf(out, len, ": %.*s)", (int)(code - why) + 8 + n, why);
}

/* The wait's progress on stderr: a line rewritten in place on a terminal, a
 * line per change elsewhere. */
static void show_wait(void *ud, const struct gg_record *r, int64_t waited)
{
	struct gg_cli *cli = ud;
	const char *ces = r->ce_state ? r->ce_state : "?";
	char why[200], key[sizeof cli->wait_ce];
	wait_why(cli, r, why, sizeof why);
	snprintf(key, sizeof key, "%s%s", ces, why);
	/* on screen the state only moves forward (the record keeps the CE's) */
	enum gg_sess_state st =
		cli->wait_top ? gg_sess_state_forward(cli->wait_top - 1, r->state) : r->state;
	if (cli->quiet ||
	    (!cli->wait_tty && cli->wait_shown == (int)st + 1 && !strcmp(cli->wait_ce, key)))
		return;
	char d[32];
	if (cli->wait_tty)
		fputs("\r\033[K", stderr);
	ui_err("  %s: %s%s%s (CE: %s), waited %s%s", r->name, gg_sess_state_name(st),
	       gg_session_published(r) ? ", sshd not answering yet" : "",
	       gg_launch_unreadable(r) ? ", its session file unreadable (read again)" : "", ces,
	       gg_duration_format(waited, d, sizeof d), st == r->state ? why : "");
	if (!cli->wait_tty) /* ours: a line end is not an argument (it would be escaped) */
		fputc('\n', stderr);
	fflush(stderr);
	cli->wait_shown = (int)st + 1;
	if (gg_sess_state_forward(st, GG_S_REQUESTED) == st)
		cli->wait_top = (int)st + 1; /* a live state: the furthest shown */
	snprintf(cli->wait_ce, sizeof cli->wait_ce, "%s", key);
}

/* The waiting line on (show_wait) for the length of one wait; wait_end puts
 * the callbacks back and ends the line a terminal was redrawing. */
static int wait_begin(struct gg_cli *cli, struct gg_err *err)
{
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	cli->wait_tty = isatty(STDERR_FILENO) && !cli->quiet;
	cli->wait_shown = cli->wait_top = 0;
	cb.waiting = show_wait;
	return gg_engine_set_callbacks(cli_engine(cli), &cb, err);
}

static int wait_end(struct gg_cli *cli, int rc)
{
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	gg_engine_set_callbacks(cli_engine(cli), &cb, NULL);
	if (cli->wait_tty && cli->wait_shown)
		fputc('\n', stderr);
	return rc;
}

int cli_wait_ready(struct gg_cli *cli, struct gg_ce *ce, struct gg_record *r, int64_t timeout,
		   struct gg_err *err)
{
	int rc = wait_begin(cli, err);
	if (rc == 0)
		rc = gg_engine_wait_ready(cli_engine(cli), ce, r, timeout, err);
	return wait_end(cli, rc);
}

int cli_race_wait(struct gg_cli *cli, struct gg_ce **ces, struct gg_record *recs, size_t n,
		  int64_t timeout, size_t *winner, struct gg_err *err)
{
	int rc = wait_begin(cli, err);
	if (rc == 0)
		rc = gg_engine_race_wait(cli_engine(cli), ces, recs, n, timeout, winner, err);
	return wait_end(cli, rc);
}

int cli_local_file(const char *path, struct gg_err *err)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return errno == ENOENT ? gg_err_set(err, GG_EUSAGE, "no such file")
				       : gg_err_sys(err, GG_EIO, errno, "cannot read it");
	if (!S_ISREG(sb.st_mode))
		return gg_err_set(err, GG_EUSAGE, "not a regular file");
	if (access(path, R_OK) < 0)
		return gg_err_sys(err, GG_EIO, errno, "cannot read it");
	return 0;
}

/* The sites: every --site given, in order, else the default one. 0, or the
 * exit code after saying what is wrong. */
int cli_sites(struct gg_cli *cli, const struct gg_site **sites, int max, int *nsites)
{
	struct gg_err err = {0};
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	*nsites = 0;
	if (cli->nsites > max)
		return ui_usage(cli, "at most %d sites at once", max);
	for (int i = 0; i < cli->nsites; i++) {
		if (!(sites[(*nsites)++] = gg_config_site(cfg, cli->sites[i]))) {
			gg_err_set(&err, GG_ENOTFOUND,
				   "no such site in %s (see 'gridgpu site list')", cfg->path);
			return ui_fail(cli, &err, "site '%s'", cli->sites[i]);
		}
	}
	if (!*nsites) {
		const struct gg_site *one = cli_site(cli, 1);
		if (!one)
			return cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
		sites[(*nsites)++] = one;
	}
	return 0;
}
