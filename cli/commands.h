/* Entry points of the commands (cli/cmd-<name>.c). */
#ifndef GG_COMMANDS_H
#define GG_COMMANDS_H

struct gg_cli;
int cmd_help(struct gg_cli *cli, int argc, char **argv);
int cmd_site(struct gg_cli *cli, int argc, char **argv);
int cmd_complete(struct gg_cli *cli, int argc, char **argv);

extern const struct gg_opt cmd_site_opts[];

#endif
