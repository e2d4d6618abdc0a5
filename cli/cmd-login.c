/* gridgpu login [SITE]: open one OpenSSH master connection to each jump host of
 * the site that asks for a second factor; ssh asks for the code on the
 * terminal (gridgpu never sees it). Then plain ssh, scp, VS Code, connect, the
 * readiness probe and freeze --session ride on those masters, for the site's
 * control-persist time unused. --check says whether they are up, --exit closes
 * them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/ssh.h"

enum { O_CHECK = 256, O_EXIT };

const struct gg_opt cmd_login_opts[] = {
	{"check", 0, OPT_NONE, NULL, "say whether the logins are open (exit 4 when one is not)",
	 O_CHECK},
	{"exit", 0, OPT_NONE, NULL, "close the logins", O_EXIT},
	OPT_END,
};

struct said {
	struct gg_cli *cli;
	const char *site;
};

static void said(void *ud, int k, enum gg_ssh_login_state s)
{
	const struct said *w = ud;
	static const char *const what[] = {
		[GG_LOGIN_UP] = "is open",
		[GG_LOGIN_DOWN] = "is not open",
		[GG_LOGIN_ASKING] = "asks for your code:",
		[GG_LOGIN_OPENED] = "is open",
		[GG_LOGIN_CLOSED] = "closed",
	};
	ui_info(w->cli, "site %s, jump host %d: login %s", w->site, k + 1, what[s]);
}

int cmd_login(struct gg_cli *cli, int argc, char **argv)
{
	int c;
	enum gg_ssh_login_op op = GG_LOGIN_OPEN;
	while ((c = cli_next_opt(cli, argc, argv, cmd_login_opts)) > 0)
		op = c == O_CHECK ? GG_LOGIN_CHECK : GG_LOGIN_EXIT;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind > 1)
		return ui_usage(cli, "login: one SITE at most");
	if (argc - cli->optind == 1)
		cli->site = argv[cli->optind];
	const struct gg_site *site = cli_site(cli, 1);
	if (!site)
		return cli->cfg_exit;
	struct gg_err err = {0};
	/* (all open already: nothing to ask, no terminal needed) */
	if (op == GG_LOGIN_OPEN && !isatty(STDIN_FILENO) && gg_ssh_logins_check(site, &err) < 0) {
		gg_err_set(&err, GG_EUSAGE,
			   "needs a terminal: ssh asks for the code there (run it in one)");
		return ui_fail(cli, &err, "login %s", site->name);
	}
	struct gg_ssh_paths sp;
	if (gg_ssh_paths_init(&sp, &err) < 0)
		return ui_fail(cli, &err, "login %s", site->name);
	struct gg_engine *e = cli_engine(cli);
	int rc = EXIT_OK;
	if (!e) {
		gg_ssh_paths_clear(&sp);
		return cli->cfg_exit;
	}
	struct said w = {cli, site->name};
	if (gg_engine_write_ssh_config(e, &err) < 0 ||
	    gg_ssh_login(&sp, site, op, said, &w, &err) < 0)
		rc = ui_fail(cli, &err, "login %s", site->name);
	gg_ssh_paths_clear(&sp);
	return rc;
}
