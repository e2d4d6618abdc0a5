/* gridgpu __keep --idle MS SOCK PROXY [CA_DIR]: the connection keeper (hidden; a
 * command starts it detached, gg_keep_serve in gridgpu/ce.h says what it does).
 * Prints nothing: its output is /dev/null. */
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "gridgpu/ce.h"
#include "gridgpu/cred.h"

enum { O_IDLE = 256 };

const struct gg_opt cmd_keep_opts[] = {
	{"idle", 0, OPT_ARG, "MS", "end after MS milliseconds without a request", O_IDLE},
	OPT_END,
};

int cmd_keep(struct gg_cli *cli, int argc, char **argv)
{
	int64_t idle = 0;
	int c;
	cli->optind = 0;
	while ((c = cli_next_opt(cli, argc, argv, cmd_keep_opts)) > 0) {
		char *end;
		idle = strtoll(cli->optarg, &end, 10);
		if (*end || idle <= 0)
			return ui_usage(cli, "--idle '%s': expected milliseconds", cli->optarg);
	}
	if (c < 0)
		return c == -2 ? 0 : 2;
	argc -= cli->optind;
	argv += cli->optind;
	if (argc < 2 || argc > 3 || idle <= 0)
		return ui_usage(cli, "usage: gridgpu __keep --idle MS SOCK PROXY [CA_DIR]");
	struct gg_err err = {0};
	/* it holds the proxy's key: no core dump, no ptrace */
	if (gg_cred_disable_core_dumps(&err) < 0)
		return ui_fail(cli, &err, "connection keeper");
	struct gg_keep_opts o = {.sock = argv[0],
				 .proxy_path = argv[1],
				 .ca_dir = argc > 2 ? argv[2] : NULL,
				 .idle_ms = idle};
	int rc = gg_keep_serve(&o, &err);
	return rc < 0 ? ui_fail(cli, &err, "connection keeper") : 0;
}
