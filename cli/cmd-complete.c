/* gridgpu __complete: the word lists the bash and zsh completions ask for, taken
 * from the command table itself so the completions can never drift from it. */
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "session/session.h"

static void print_opts(const struct gg_opt *o, int describe)
{
	for (; o && o->name; o++) {
		if (describe)
			printf("--%s:%s\n", o->name, o->help);
		else
			printf("--%s%s\n", o->name, o->arg == OPT_ARG ? "=" : "");
	}
}

static const struct gg_cmd *lookup(const char *name)
{
	size_t n;
	const struct gg_cmd *cmds = cli_commands(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

int cmd_complete(struct gg_cli *cli, int argc, char **argv)
{
	/* No option parsing: the words are the shell's, passed through. */
	if (argc < 2)
		return ui_usage(cli, "__complete: commands|options CMD|subcommands CMD|sites");
	const char *what = argv[1];
	int describe = argc > 2 && strcmp(argv[argc - 1], "--describe") == 0;
	if (describe)
		argc--;
	size_t n;
	const struct gg_cmd *cmds = cli_commands(&n);
	if (!strcmp(what, "commands")) {
		for (size_t i = 0; i < n; i++)
			if (!(cmds[i].flags & CMD_HIDDEN)) {
				if (describe)
					printf("%s:%s\n", cmds[i].name, cmds[i].summary);
				else
					printf("%s\n", cmds[i].name);
			}
		return EXIT_OK;
	}
	if (!strcmp(what, "global-options")) {
		print_opts(cli_global_opts(), describe);
		return EXIT_OK;
	}
	if (!strcmp(what, "options") || !strcmp(what, "subcommands")) {
		const struct gg_cmd *cmd = argc > 2 ? lookup(argv[2]) : NULL;
		if (!cmd)
			return EXIT_USAGE;
		if (!strcmp(what, "options")) {
			print_opts(cmd->opts, describe);
			print_opts(cli_global_opts(), describe);
		} else if (cmd->subcommands) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s", cmd->subcommands);
			for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "))
				printf("%s\n", s);
		}
		return EXIT_OK;
	}
	if (!strcmp(what, "sites")) {
		struct gg_config *cfg = cli_config(cli);
		for (size_t i = 0; cfg && i < cfg->nsites; i++)
			printf("%s\n", cfg->sites[i].name);
		return EXIT_OK;
	}
	if (!strcmp(what, "sessions")) {
		struct gg_store *st = NULL;
		struct gg_record *recs = NULL;
		size_t nr = 0;
		if (gg_store_open(NULL, &st, NULL) == 0 &&
		    gg_store_list(st, &recs, &nr, NULL, NULL) == 0)
			for (size_t i = 0; i < nr; i++)
				printf("%s\n", recs[i].name);
		gg_records_free(recs, nr);
		gg_store_free(st);
		return EXIT_OK;
	}
	return EXIT_USAGE;
}
