/* What several commands need: the site, the credential, the CE, the store, the
 * generated SSH configuration, the session launcher's path, Ctrl-C. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctx.h"
#include "cred/cred.h"
#include "session/sync.h"
#include "ssh/ssh.h"

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

void cli_auth_clear(struct cli_auth *a)
{
	free(a->proxy_path);
	gg_token_free(a->token);
	free(a->ca_dir);
	memset(a, 0, sizeof *a);
}

int cli_auth(struct gg_cli *cli, const struct gg_site *site, const char *want_auth,
	     int64_t need_left, struct cli_auth *a, struct gg_err *err)
{
	memset(a, 0, sizeof *a);
	/* The proxy's key or the token is about to be in this process's memory. */
	gg_cred_disable_core_dumps(NULL);
	const char *kind = want_auth ? want_auth : site && site->auth ? site->auth : "proxy";
	int rc = gg_cred_ca_dir(site ? site->ca_dir : NULL, &a->ca_dir, err);
	if (rc < 0)
		return rc;
	(void)cli;
	char d[32];
	if (strcmp(kind, "token") == 0) {
		if ((rc = gg_token_find(&a->token, err)) < 0) {
			if (rc == GG_ENOTFOUND)
				gg_err_set(err, GG_ECRED,
					   "no bearer token found (BEARER_TOKEN, "
					   "BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>, "
					   "/tmp/bt_u<uid>)");
			if (err)
				err->code = GG_ECRED;
			return GG_ECRED;
		}
		if (a->token->exp) {
			int64_t left = a->token->exp - (int64_t)time(NULL);
			if (left <= 0)
				return gg_err_set(err, GG_ECRED,
						  "the bearer token from %s has expired: "
						  "get a new one",
						  a->token->source);
			if (left < need_left)
				return gg_err_set(
					err, GG_ECRED,
					"the bearer token from %s expires in %s, before the "
					"walltime ends: get a longer one",
					a->token->source, gg_duration_format(left, d, sizeof d));
		}
		a->kind = "token";
		return 0;
	}
	if ((rc = gg_proxy_path(NULL, &a->proxy_path, err)) < 0)
		return rc;
	struct gg_cred *c = NULL;
	rc = gg_proxy_load(a->proxy_path, &c, err);
	if (rc < 0) {
		if (access(a->proxy_path, F_OK) < 0)
			gg_err_set(err, GG_ECRED, "no proxy at '%s': run 'gridgpu proxy init'",
				   a->proxy_path);
		if (err)
			err->code = GG_ECRED;
		return GG_ECRED;
	}
	struct gg_proxy_info pi;
	rc = gg_proxy_info_get(c, 0, &pi, err);
	gg_cred_free(c);
	if (rc < 0)
		return rc;
	int64_t left = pi.time_left;
	gg_proxy_info_clear(&pi);
	if (left <= 0)
		return gg_err_set(err, GG_ECRED,
				  "the proxy '%s' has expired: run 'gridgpu proxy init'",
				  a->proxy_path);
	if (left < need_left) {
		char w[32], v[32];
		/* the walltime plus an hour of margin, rounded up to hours */
		int64_t want = ((need_left + 3600 + 3599) / 3600) * 3600;
		return gg_err_set(err, GG_ECRED,
				  "the proxy has %s left, less than the %s asked for: run 'gridgpu "
				  "proxy init --valid %s'",
				  gg_duration_format(left, d, sizeof d),
				  gg_duration_format(need_left, w, sizeof w),
				  gg_duration_format(want, v, sizeof v));
	}
	a->kind = "proxy";
	return 0;
}

int cli_open_ce(const char *endpoint, const struct cli_auth *a, struct gg_ce **ce,
		struct gg_err *err)
{
	char *state = NULL, *cache = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state, NULL) == 0 && gg_mkdir_p(state, 0700, NULL) == 0)
		cache = gg_strdup_printf("%s/ce.json", state);
	free(state);
	struct gg_ce_auth ca = {.proxy_path = a->proxy_path,
				.token = a->token ? a->token->value : NULL,
				.ca_dir = a->ca_dir,
				.cache_path = cache,
				.cancel = cli_cancel_cb};
	int rc = gg_ce_open(endpoint, &ca, ce, err);
	free(cache);
	return rc;
}

int cli_open_record_ce(struct gg_cli *cli, const struct gg_record *r, struct cli_auth *auth,
		       struct gg_ce **ce, struct gg_err *err)
{
	*ce = NULL;
	if (!r->ce)
		return gg_err_set(err, GG_EUSAGE, "%s has no CE", r->name);
	const struct gg_site *site = r->site ? gg_config_site(cli_config(cli), r->site) : NULL;
	int rc = cli_auth(cli, site, r->auth, 0, auth, err);
	return rc < 0 ? rc : cli_open_ce(r->ce, auth, ce, err);
}

struct gg_store *cli_store(struct gg_cli *cli)
{
	struct gg_store *st = NULL;
	struct gg_err err = {0};
	if (gg_store_open(NULL, &st, &err) < 0)
		cli->cfg_exit = ui_fail(cli, &err, "session store");
	return st;
}

int cli_write_ssh_config(struct gg_cli *cli, struct gg_store *st, struct gg_err *err)
{
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	if (rc < 0)
		return rc;
	/* Only live sessions get a block: find them in the rows (one cached file
	 * even with thousands of records), then read just those. */
	struct gg_record_row *rows = NULL;
	size_t nrows = 0, n = 0;
	struct gg_record *recs = NULL;
	if ((rc = gg_store_rows(st, &rows, &nrows, NULL, err)) == 0) {
		recs = calloc(nrows ? nrows : 1, sizeof *recs);
		for (size_t i = 0; recs && i < nrows; i++) {
			if (rows[i].kind != GG_REC_SESSION || gg_sess_state_ended(rows[i].state))
				continue;
			if (gg_store_load(st, rows[i].name, &recs[n], NULL) == 0)
				n++;
		}
		rc = recs ? gg_ssh_write_config(&p, cli_config(cli), recs, n, err)
			  : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	gg_records_free(recs, n);
	gg_record_rows_free(rows, nrows);
	gg_ssh_paths_clear(&p);
	return rc;
}

char *cli_launcher_path(void)
{
	const char *env = getenv("GRIDGPU_LIBEXEC_DIR");
	if (env && *env)
		return gg_strdup_printf("%s/session-launcher", env);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* installed: PREFIX/bin/../libexec; build tree: build/bin/../../libexec */
			const char *rel[] = {"../libexec/gridgpu", "../../libexec/gridgpu"};
			for (int i = 0; i < 2; i++) {
				char *p = gg_strdup_printf("%s/%s/session-launcher", exe, rel[i]);
				if (p && access(p, R_OK) == 0)
					return p;
				free(p);
			}
		}
	}
	return gg_strdup_printf("%s/session-launcher", GG_LIBEXECDIR);
}

int cli_find_record(struct gg_cli *cli, struct gg_store *st, const char *name, struct gg_record *r)
{
	struct gg_err err = {0};
	int rc = gg_store_load(st, name, r, &err);
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

struct wait_ud {
	const struct gg_record *now;
};

static int copy_into(struct gg_record *stored, void *ud)
{
	/* Keep what the store has, apply the refreshed fields. */
	const struct gg_record *r = ((struct wait_ud *)ud)->now;
	if (gg_sess_state_ended(stored->state) && stored->state != r->state)
		return 1; /* someone killed it meanwhile: keep that */
	struct gg_record fresh;
	if (gg_record_copy(&fresh, r) < 0)
		return 1;
	fresh.created = stored->created;
	gg_record_clear(stored);
	*stored = fresh;
	return 0;
}

int cli_save_refreshed(struct gg_store *st, struct gg_record *r, struct gg_err *err)
{
	struct wait_ud ud = {r};
	struct gg_record out;
	int rc = gg_store_update(st, r->name, copy_into, &ud, &out, err);
	if (rc == 0) {
		gg_record_clear(r);
		*r = out;
	}
	return rc;
}

int cli_probe_published(struct gg_cli *cli, struct gg_record *r, int timeout_ms, struct gg_err *way)
{
	if (!gg_session_published(r))
		return 0;
	const struct gg_site *site = r->site ? gg_config_site(cli_config(cli), r->site) : NULL;
	/* One probe per run finds a site's jump host down: the next sessions of
	 * that site (list --sync) would each wait for it again. */
	if (site && strcmp(cli->probe_down_site, site->name) == 0)
		return 0;
	struct gg_err e = {0};
	int at_session = 0;
	int rc = gg_ssh_probe(site, r, timeout_ms, &at_session, &e);
	if (rc == 0) {
		cli->probe_why[0] = '\0';
		r->state = GG_S_READY;
		return 0;
	}
	snprintf(cli->probe_why, sizeof cli->probe_why, "%s", e.msg);
	if (rc == GG_EHOSTKEY && at_session) {
		/* The key came from the CE's authenticated channel: another key
		 * answering is an attack or a bug, never a reason to trust it. */
		r->state = GG_S_FAILED;
		free(r->error);
		r->error = strdup(e.msg);
		return 0;
	}
	if (cli->verbose)
		ui_info(cli, "%s: sshd published, not answering yet: %s", r->name, e.msg);
	if (!at_session && site)
		snprintf(cli->probe_down_site, sizeof cli->probe_down_site, "%s", site->name);
	if (!at_session && way) {
		/* Not the node: a jump host (down, or its key not the known one). */
		*way = e;
		return rc;
	}
	return 0;
}

int cli_wait_ready(struct gg_cli *cli, struct gg_store *st, struct gg_ce *ce, struct gg_record *r,
		   int64_t timeout, struct gg_err *err)
{
	time_t start = time(NULL);
	int tty = isatty(STDERR_FILENO) && !cli->quiet;
	enum gg_sess_state shown = (enum gg_sess_state) - 1;
	char last_ce[64] = "";
	struct timespec tick = {0, 500 * 1000000L};
	cli->probe_down_site[0] = '\0'; /* probe every time: a jump host ends the wait */
	for (;;) {
		if (cli_interrupted()) {
			if (tty)
				fputc('\n', stderr);
			return gg_err_set(err, GG_EINTR, "interrupted");
		}
		struct gg_err e2 = {0};
		int rc = gg_session_refresh(ce, r, 1, &e2);
		if (rc == GG_EINTR)
			return gg_err_set(err, GG_EINTR, "interrupted");
		struct gg_err way = {0};
		int prc = cli_probe_published(cli, r, 5000, &way);
		if ((rc = cli_save_refreshed(st, r, err)) < 0)
			return rc;
		if (prc < 0) {
			/* Waiting does not mend a jump host: say so now. */
			if (tty)
				fputc('\n', stderr);
			*err = way;
			return gg_err_prefix(err, "the session's sshd is up (the session is kept), "
						  "but the way to it is not");
		}
		int64_t waited = (int64_t)(time(NULL) - start);
		const char *ces = r->ce_state ? r->ce_state : "?";
		if (!cli->quiet && (tty || shown != r->state || strcmp(last_ce, ces))) {
			char d[32];
			if (tty)
				fputs("\r\033[K", stderr);
			ui_err("  %s: %s%s (CE: %s), waited %s", r->name,
			       gg_sess_state_name(r->state),
			       gg_session_published(r) ? ", sshd not answering yet" : "", ces,
			       gg_duration_format(waited, d, sizeof d));
			if (!tty) /* ours: a line end is not an argument (it would be escaped) */
				fputc('\n', stderr);
			fflush(stderr);
			shown = r->state;
			snprintf(last_ce, sizeof last_ce, "%s", ces);
		}
		if (r->state == GG_S_READY || gg_sess_state_ended(r->state)) {
			if (tty)
				fputc('\n', stderr);
			return 0;
		}
		if (timeout > 0 && waited >= timeout) {
			if (tty)
				fputc('\n', stderr);
			char d[32];
			return gg_err_set(err, GG_ENET, "not ready after %s (state %s, CE: %s)",
					  gg_duration_format(timeout, d, sizeof d),
					  gg_sess_state_name(r->state), ces);
		}
		/* Waiting on the CE: poll at 2 Hz; a signal cuts the sleep short. */
		nanosleep(&tick, NULL);
	}
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
