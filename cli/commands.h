/* Entry points of the commands (cli/cmd-<name>.c). */
#ifndef GG_COMMANDS_H
#define GG_COMMANDS_H

struct gg_cli;
int cmd_help(struct gg_cli *cli, int argc, char **argv);
int cmd_site_add(struct gg_cli *cli, int argc, char **argv);
int cmd_site_set(struct gg_cli *cli, int argc, char **argv);
int cmd_site_list(struct gg_cli *cli, int argc, char **argv);
int cmd_site_show(struct gg_cli *cli, int argc, char **argv);
int cmd_site_remove(struct gg_cli *cli, int argc, char **argv);
int cmd_freeze(struct gg_cli *cli, int argc, char **argv);
int cmd_inspect(struct gg_cli *cli, int argc, char **argv);
int cmd_verify(struct gg_cli *cli, int argc, char **argv);
int cmd_proxy_init(struct gg_cli *cli, int argc, char **argv);
int cmd_proxy_info(struct gg_cli *cli, int argc, char **argv);
int cmd_proxy_destroy(struct gg_cli *cli, int argc, char **argv);
int cmd_request(struct gg_cli *cli, int argc, char **argv);
int cmd_list(struct gg_cli *cli, int argc, char **argv);
int cmd_status(struct gg_cli *cli, int argc, char **argv);
int cmd_connect(struct gg_cli *cli, int argc, char **argv);
int cmd_kill(struct gg_cli *cli, int argc, char **argv);
int cmd_clean(struct gg_cli *cli, int argc, char **argv);
int cmd_ssh_config(struct gg_cli *cli, int argc, char **argv);
int cmd_login(struct gg_cli *cli, int argc, char **argv);
int cmd_submit(struct gg_cli *cli, int argc, char **argv);
int cmd_check(struct gg_cli *cli, int argc, char **argv);
int cmd_get(struct gg_cli *cli, int argc, char **argv);
int cmd_complete(struct gg_cli *cli, int argc, char **argv);
int cmd_keep(struct gg_cli *cli, int argc, char **argv);
int cmd_gpus(struct gg_cli *cli, int argc, char **argv);
int cmd_doctor(struct gg_cli *cli, int argc, char **argv);
int cmd_sites(struct gg_cli *cli, int argc, char **argv);

/* site add's options, made from the library's site keys by cli_site_opts_init
 * (main calls it first). */
extern struct gg_opt cmd_site_add_opts[];
void cli_site_opts_init(void);
extern const struct gg_opt cmd_freeze_opts[];
extern const struct gg_opt cmd_inspect_opts[];
extern const struct gg_opt cmd_verify_opts[];
extern const struct gg_opt cmd_request_opts[];
extern const struct gg_opt cmd_list_opts[];
extern const struct gg_opt cmd_keep_opts[];
extern const struct gg_opt cmd_status_opts[];
extern const struct gg_opt cmd_connect_opts[];
extern const struct gg_opt cmd_kill_opts[];
extern const struct gg_opt cmd_clean_opts[];
extern const struct gg_opt cmd_ssh_config_opts[];
extern const struct gg_opt cmd_login_opts[];
extern const struct gg_opt cmd_submit_opts[];
extern const struct gg_opt cmd_check_opts[];
extern const struct gg_opt cmd_get_opts[];
extern const struct gg_opt cmd_proxy_init_opts[];
extern const struct gg_opt cmd_proxy_info_opts[];
extern const struct gg_opt cmd_proxy_destroy_opts[];
extern const struct gg_opt cmd_gpus_opts[];
extern const struct gg_opt cmd_sites_opts[];
extern const struct gg_opt cmd_doctor_opts[];

#endif
