/* gridgpu ssh-config: show the generated SSH configuration, or include it in
 * ~/.ssh/config so that plain ssh, scp, rsync and VS Code find the sessions. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/ssh.h"

enum { O_INSTALL = 256, O_WINDOWS, O_PRINT_PATH };

const struct gg_opt cmd_ssh_config_opts[] = {
	{"install", 0, OPT_NONE, NULL, "add one Include line to ~/.ssh/config (with a backup)",
	 O_INSTALL},
	{"windows", 0, OPT_NONE, NULL, "the form OpenSSH for Windows accepts", O_WINDOWS},
	{"path", 0, OPT_NONE, NULL, "print the path of the file only", O_PRINT_PATH},
	OPT_END,
};

int cmd_ssh_config(struct gg_cli *cli, int argc, char **argv)
{
	int c, install = 0, windows = 0, path = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_ssh_config_opts)) > 0) {
		install |= c == O_INSTALL;
		windows |= c == O_WINDOWS;
		path |= c == O_PRINT_PATH;
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind)
		return ui_usage(cli, "ssh-config takes no arguments");
	struct gg_err err = {0};
	struct gg_ssh_paths sp;
	if (gg_ssh_paths_init(&sp, &err) < 0)
		return ui_fail(cli, &err, "ssh-config");
	if (sp.control_note)
		ui_warn(cli, "%s", sp.control_note);
	struct gg_engine *e = cli_engine(cli);
	int rc = EXIT_OK;
	if (!e) {
		gg_ssh_paths_clear(&sp);
		return cli->cfg_exit;
	}
	if (gg_engine_write_ssh_config(e, &err) < 0) {
		rc = ui_fail(cli, &err, "ssh-config");
		goto out;
	}
	const char *file = windows ? sp.config_win : sp.config;
	if (install) {
		const char *home = getenv("HOME");
		char *user_cfg = home ? gg_strdup_printf("%s/.ssh/config", home) : NULL;
		int added = 0;
		char *bak = NULL;
		if (!user_cfg) {
			gg_err_set(&err, GG_EFAIL, "HOME is not set");
			rc = ui_fail(cli, &err, "ssh-config --install");
		} else if (gg_ssh_install_include(user_cfg, sp.config, &added, &bak, &err) < 0) {
			rc = ui_fail(cli, &err, "ssh-config --install");
		} else if (!added) {
			ui_info(cli, "%s is already included by %s", sp.config, user_cfg);
		} else {
			ui_info(cli, "added 'Include %s' to %s%s%s%s", sp.config, user_cfg,
				bak ? " (backup: " : "", bak ? bak : "", bak ? ")" : "");
		}
		char *note = rc == EXIT_OK ? gg_ssh_home_note(home, sp.config) : NULL;
		if (note)
			ui_warn(cli, "%s", note);
		free(note);
		free(bak);
		free(user_cfg);
		goto out;
	}
	if (path) {
		printf("%s\n", file);
		goto out;
	}
	char *text = NULL;
	if (gg_file_read(file, 1 << 22, &text, NULL, &err) < 0) {
		rc = ui_fail(cli, &err, "ssh-config");
		goto out;
	}
	fputs(text, stdout);
	free(text);
out:
	gg_ssh_paths_clear(&sp);
	return rc;
}
