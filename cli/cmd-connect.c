/* gridgpu connect (reconnect): wait for a session if it is still starting,
 * then exec OpenSSH with the generated configuration, so the user keeps agent
 * forwarding, port forwards and IDE integration (X11: the session's sshd
 * does not forward it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

enum { O_TIMEOUT = 256, O_NO_WAIT };

const struct gg_opt cmd_connect_opts[] = {
	{"timeout", 0, OPT_ARG, "DUR", "give up waiting for a starting session after DUR",
	 O_TIMEOUT},
	{"no-wait", 0, OPT_NONE, NULL, "fail at once if the session is not ready", O_NO_WAIT},
	OPT_END,
};

/* name, appended to the list in buf ("a, b"); past len, "..." once. */
static void add_name(char *buf, size_t len, const char *name)
{
	size_t o = strlen(buf);
	if (o >= 3 && !strcmp(buf + o - 3, "..."))
		return;
	int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", name);
	if (w < 0 || (size_t)w >= len - o)
		snprintf(buf + o, len - o, "%s...", o ? ", " : "");
}

/* The only live session, when the user gives no name; with several, which
 * they are (a usage error: the command needs a NAME). */
static int pick_session(struct gg_cli *cli, struct gg_store *st, char **name)
{
	struct gg_record *recs = NULL;
	size_t n = 0, live = 0;
	char names[512] = "";
	struct gg_err err = {0};
	if (gg_store_list(st, &recs, &n, NULL, &err) < 0)
		return ui_fail(cli, &err, "connect");
	for (size_t i = 0; i < n; i++)
		if (recs[i].kind == GG_REC_SESSION && !gg_sess_state_ended(recs[i].state)) {
			live++;
			free(*name);
			*name = strdup(recs[i].name);
			add_name(names, sizeof names, recs[i].name);
		}
	gg_records_free(recs, n);
	if (live == 1)
		return 0;
	if (live)
		return ui_usage(cli,
				"connect: %zu live sessions: %s: name one (gridgpu connect NAME)",
				live, names);
	gg_err_set(&err, GG_ENOTFOUND, "no live session: start one with 'gridgpu request'");
	return ui_fail(cli, &err, "connect");
}

/* A session not ready yet: wait for it (unless --no-wait). 0, or the exit
 * code after saying why not. */
static int wait_ready(struct gg_cli *cli, struct gg_engine *e, struct gg_record *r, int nowait,
		      int64_t timeout)
{
	struct gg_err err = {0};
	if (nowait) {
		gg_err_set(&err, GG_ENET, "not ready yet (%s)", gg_sess_state_name(r->state));
		return ui_fail(cli, &err, "connect %s", r->name);
	}
	struct gg_ce *ce = NULL;
	cli_catch_interrupt();
	int wrc = gg_engine_open_record_ce(e, r, &ce, &err);
	if (wrc == 0)
		wrc = cli_wait_ready(cli, ce, r, timeout, &err);
	gg_ce_free(ce);
	if (wrc == GG_EINTR) {
		ui_err("gridgpu: connect: interrupted; session %s keeps starting\n", r->name);
		return EXIT_INTR;
	}
	return wrc < 0 ? ui_fail(cli, &err, "connect %s", r->name) : 0;
}

int cmd_connect(struct gg_cli *cli, int argc, char **argv)
{
	int c, nowait = 0;
	int64_t timeout = 0;
	struct gg_err err = {0};
	int dd = cli_dashdash(argc, argv); /* everything after it is ssh's */
	while ((c = cli_next_opt(cli, dd, argv, cmd_connect_opts)) > 0) {
		if (c == O_NO_WAIT)
			nowait = 1;
		else if (c == O_TIMEOUT && cli_opt_duration(cli, &timeout))
			return EXIT_USAGE;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	int nargs = dd - cli->optind;
	if (nargs > 1)
		return ui_usage(cli, "connect: one session NAME (ssh options and a command go "
				     "after '--')");
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_store *st = gg_engine_store(e);
	char *name = nargs ? strdup(argv[cli->optind]) : NULL;
	struct gg_record r = {0};
	int rc = 0;
	if (!name && (rc = pick_session(cli, st, &name)) != 0)
		goto out;
	if ((rc = cli_find_record(cli, st, name, &r)) != 0)
		goto out;
	if (r.kind != GG_REC_SESSION) {
		gg_err_set(&err, GG_EUSAGE, "is a batch job, not a session ('gridgpu get %s')",
			   name);
		rc = ui_fail(cli, &err, "'%s'", name);
		goto out;
	}
	if (r.state != GG_S_READY && !gg_sess_state_ended(r.state) &&
	    (rc = wait_ready(cli, e, &r, nowait, timeout)) != 0)
		goto out;
	if (r.state != GG_S_READY) {
		gg_err_set(&err, gg_sess_state_ended(r.state) ? GG_ENOTFOUND : GG_ENET,
			   "the session %s%s%s", gg_sess_state_phrase(r.state), r.error ? ": " : "",
			   r.error ? r.error : "");
		rc = ui_fail(cli, &err, "connect %s", name);
		goto out;
	}
	/* a name from before gridgpu refused '.' in them has no Host block */
	if (gg_ssh_session_name_ok(name, &err) < 0) {
		gg_err_prefix(&err,
			      "not in the generated ssh config ('gridgpu kill %s', then "
			      "request one with another name)",
			      name);
		rc = ui_fail(cli, &err, "connect %s", name);
		goto out;
	}
	struct gg_ssh_paths sp;
	if (gg_ssh_paths_init(&sp, &err) < 0 || gg_engine_write_ssh_config(e, &err) < 0) {
		rc = ui_fail(cli, &err, "connect %s", name);
		goto out;
	}
	char **av = gg_ssh_session_argv(sp.config, name, argv + dd + 1, argc - dd - 1);
	fflush(stdout);
	cli_engine_free(cli);
	if (av)
		execvp("ssh", av);
	gg_err_sys(&err, GG_EFAIL, av ? errno : ENOMEM, "running ssh (install openssh-client)");
	rc = ui_fail(cli, &err, "connect %s", name);
	free(av);
	gg_ssh_paths_clear(&sp);
out:
	gg_record_clear(&r);
	free(name);
	return rc;
}
