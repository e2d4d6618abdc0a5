/* gridgpu site: site profiles in the configuration file. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ssh/ssh.h"

enum {
	O_CE = 256,
	O_JUMP,
	O_IDENTITY,
	O_KNOWN_HOSTS,
	O_USER,
	O_QUEUE,
	O_GPU_QUEUE,
	O_GPU_RTE,
	O_IMAGE,
	O_CA_DIR,
	O_AUTH,
	O_DEADLINE,
	O_IDLE,
	O_DEFAULT,
	O_WORKER,
	O_RUNTIME,
};

const struct gg_opt cmd_site_opts[] = {
	{"ce", 0, OPT_ARG, "URL", "CE endpoint, e.g. https://ce.example.org:443/arex", O_CE},
	{"jump", 'J', OPT_ARG, "USER@HOST[:PORT]", "a jump host, in order (repeat for more hops)",
	 O_JUMP},
	{"identity", 'i', OPT_ARG, "FILE", "your ssh key for the jump hosts", O_IDENTITY},
	{"known-hosts", 0, OPT_ARG, "FILE", "known_hosts file with the jump hosts' keys",
	 O_KNOWN_HOSTS},
	{"worker-address", 0, OPT_ARG, "ADDR", "address the last jump host reaches workers by",
	 O_WORKER},
	{"user", 0, OPT_ARG, "USER", "account on the worker nodes, if fixed", O_USER},
	{"queue", 0, OPT_ARG, "QUEUE", "default queue", O_QUEUE},
	{"gpu-queue", 0, OPT_ARG, "QUEUE", "queue for GPU jobs", O_GPU_QUEUE},
	{"gpu-rte", 0, OPT_ARG, "RTE", "runtime environment that requests GPUs", O_GPU_RTE},
	{"image", 0, OPT_ARG, "IMAGE", "default container image", O_IMAGE},
	{"ca-dir", 0, OPT_ARG, "DIR", "CA directory for this site", O_CA_DIR},
	{"auth", 0, OPT_ARG, "proxy|token", "credential the CE takes (default proxy)", O_AUTH},
	{"runtime", 0, OPT_ARG, "apptainer|bwrap", "how batch jobs run images (default apptainer)",
	 O_RUNTIME},
	{"connect-deadline", 0, OPT_ARG, "DUR", "end a session nobody connected to after DUR",
	 O_DEADLINE},
	{"idle-limit", 0, OPT_ARG, "DUR", "end a session idle for longer than DUR", O_IDLE},
	{"default", 0, OPT_NONE, NULL, "make this the default site", O_DEFAULT},
	OPT_END,
};

static json_t *site_json(const struct gg_site *s, int is_default)
{
	json_t *o = json_object(), *jumps = json_array();
	json_object_set_new(o, "name", json_string(s->name));
	json_object_set_new(o, "default", json_boolean(is_default));
	if (s->ce)
		json_object_set_new(o, "ce", json_string(s->ce));
	for (int i = 0; i < s->njumps; i++)
		json_array_append_new(jumps, json_string(s->jumps[i]));
	json_object_set_new(o, "jumps", jumps);
	const struct {
		const char *k;
		const char *v;
	} f[] = {{"identity", s->identity},
		 {"known_hosts", s->known_hosts},
		 {"worker_address", s->worker_address},
		 {"user", s->user},
		 {"queue", s->queue},
		 {"gpu_queue", s->gpu_queue},
		 {"gpu_rte", s->gpu_rte},
		 {"image", s->image},
		 {"ca_dir", s->ca_dir},
		 {"auth", s->auth},
		 {"runtime", s->runtime}};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (f[i].v)
			json_object_set_new(o, f[i].k, json_string(f[i].v));
	if (s->connect_deadline)
		json_object_set_new(o, "connect_deadline", json_integer(s->connect_deadline));
	if (s->idle_limit)
		json_object_set_new(o, "idle_limit", json_integer(s->idle_limit));
	return o;
}

static int site_add(struct gg_cli *cli, int argc, char **argv)
{
	struct gg_site s = {0};
	struct gg_err err = {0};
	struct gg_ssh_jump jp;
	int make_default = 0, c, rc = EXIT_OK;
	char **field;
	cli->sub_usage = "add NAME --ce URL [--jump USER@HOST[:PORT]]... [options]";
	while ((c = cli_next_opt(cli, argc, argv, cmd_site_opts)) > 0) {
		field = NULL;
		switch (c) {
		case O_CE:
			if (strncmp(cli->optarg, "https://", 8) != 0) {
				rc = ui_usage(cli, "--ce '%s': the CE URL must start with https://",
					      cli->optarg);
				goto out;
			}
			field = &s.ce;
			break;
		case O_JUMP:
			if (strchr(cli->optarg, '/') || strchr(cli->optarg, ',') ||
			    gg_ssh_jump_parse(cli->optarg, &jp, &err) < 0) {
				rc = ui_usage(cli, "--jump: %s",
					      err.msg[0] ? err.msg : "expected [USER@]HOST[:PORT]");
				goto out;
			}
			if (s.njumps == GG_MAX_JUMPS) {
				rc = ui_usage(cli, "at most %d jump hosts", GG_MAX_JUMPS);
				goto out;
			}
			s.jumps[s.njumps++] = strdup(cli->optarg);
			break;
		case O_IDENTITY:
		case O_KNOWN_HOSTS:
			if (gg_ssh_cfg_check(c == O_IDENTITY ? "--identity" : "--known-hosts",
					     cli->optarg, GG_SSHV_PATH, &err) < 0) {
				rc = ui_usage(cli, "%s", err.msg);
				goto out;
			}
			field = c == O_IDENTITY ? &s.identity : &s.known_hosts;
			break;
		case O_WORKER: field = &s.worker_address; break;
		case O_RUNTIME:
			if (strcmp(cli->optarg, "apptainer") && strcmp(cli->optarg, "bwrap")) {
				rc = ui_usage(cli, "--runtime '%s': expected apptainer or bwrap",
					      cli->optarg);
				goto out;
			}
			field = &s.runtime;
			break;
		case O_USER:
			if (gg_ssh_cfg_check("--user", cli->optarg, GG_SSHV_USER, &err) < 0) {
				rc = ui_usage(cli, "%s", err.msg);
				goto out;
			}
			field = &s.user;
			break;
		case O_QUEUE: field = &s.queue; break;
		case O_GPU_QUEUE: field = &s.gpu_queue; break;
		case O_GPU_RTE: field = &s.gpu_rte; break;
		case O_IMAGE: field = &s.image; break;
		case O_CA_DIR: field = &s.ca_dir; break;
		case O_AUTH:
			if (strcmp(cli->optarg, "proxy") && strcmp(cli->optarg, "token")) {
				rc = ui_usage(cli, "--auth '%s': expected proxy or token",
					      cli->optarg);
				goto out;
			}
			field = &s.auth;
			break;
		case O_DEADLINE:
		case O_IDLE:
			if (gg_duration_parse(cli->optarg,
					      c == O_DEADLINE ? &s.connect_deadline : &s.idle_limit,
					      &err) < 0) {
				rc = ui_fail(cli, &err, "--%s", cli->optname);
				goto out;
			}
			break;
		case O_DEFAULT: make_default = 1; break;
		}
		if (field) {
			free(*field);
			*field = strdup(cli->optarg);
		}
	}
	if (c < 0) {
		rc = c == -2 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	if (argc - cli->optind != 1) {
		rc = ui_usage(cli, "site add: expected one site NAME");
		goto out;
	}
	s.name = strdup(argv[cli->optind]);
	if (!s.ce) {
		rc = ui_usage(cli, "site add %s: --ce URL is required", s.name);
		goto out;
	}
	struct gg_config *cfg = cli_config(cli);
	if (!cfg) {
		rc = cli->cfg_exit;
		goto out;
	}
	if (gg_config_set_site(cfg, &s, &err) < 0) {
		rc = ui_fail(cli, &err, "site add %s", s.name);
		goto out;
	}
	if (make_default || cfg->nsites == 1) {
		free(cfg->default_site);
		cfg->default_site = strdup(s.name);
	}
	if (gg_config_save(cfg, &err) < 0) {
		rc = ui_fail(cli, &err, "site add %s", s.name);
		goto out;
	}
	if (cli->json)
		ui_json(site_json(gg_config_site(cfg, s.name),
				  cfg->default_site && strcmp(cfg->default_site, s.name) == 0));
	else
		ui_info(cli, "site '%s' saved in %s", s.name, cfg->path);
out:
	gg_site_clear(&s);
	return rc;
}

static int site_list(struct gg_cli *cli, int argc, char **argv)
{
	int c;
	cli->sub_usage = "list";
	while ((c = cli_next_opt(cli, argc, argv, NULL)) > 0)
		;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind != 0)
		return ui_usage(cli, "site list takes no arguments");
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	if (cli->json) {
		json_t *a = json_array();
		for (size_t i = 0; i < cfg->nsites; i++)
			json_array_append_new(
				a, site_json(&cfg->sites[i],
					     cfg->default_site && !strcmp(cfg->default_site,
									  cfg->sites[i].name)));
		ui_json(a);
		return EXIT_OK;
	}
	if (cfg->nsites == 0) {
		ui_info(cli, "no sites yet: add one with 'gridgpu site add NAME --ce URL --jump "
			     "USER@HOST'");
		return EXIT_OK;
	}
	ui_out("%-1s %-16s %-40s %s\n", "", "SITE", "CE", "HOPS");
	for (size_t i = 0; i < cfg->nsites; i++) {
		const struct gg_site *s = &cfg->sites[i];
		int def = cfg->default_site && !strcmp(cfg->default_site, s->name);
		ui_out("%-1s %-16s %-40s %d\n", def ? "*" : "", s->name, s->ce ? s->ce : "-",
		       s->njumps);
	}
	return EXIT_OK;
}

static int site_show_or_remove(struct gg_cli *cli, int argc, char **argv, int remove)
{
	int c;
	cli->sub_usage = remove ? "remove NAME" : "show [NAME]";
	while ((c = cli_next_opt(cli, argc, argv, NULL)) > 0)
		;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	int nargs = argc - cli->optind;
	if (nargs > 1 || (remove && nargs != 1))
		return ui_usage(cli, "site %s: expected one site NAME", remove ? "remove" : "show");
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const char *name = nargs ? argv[cli->optind] : cli->site ? cli->site : cfg->default_site;
	if (!name)
		return ui_usage(cli, "site show: no default site: name one");
	const struct gg_site *s = gg_config_site(cfg, name);
	if (!s) {
		struct gg_err err;
		gg_err_set(&err, GG_ENOTFOUND, "no such site in %s (see 'gridgpu site list')",
			   cfg->path);
		return ui_fail(cli, &err, "site '%s'", name);
	}
	int is_def = cfg->default_site && !strcmp(cfg->default_site, name);
	if (remove) {
		struct gg_err err = {0};
		gg_config_remove_site(cfg, name);
		if (is_def) {
			free(cfg->default_site);
			cfg->default_site = NULL;
		}
		if (gg_config_save(cfg, &err) < 0)
			return ui_fail(cli, &err, "site remove %s", name);
		ui_info(cli, "site '%s' removed", name);
		return EXIT_OK;
	}
	if (cli->json) {
		ui_json(site_json(s, is_def));
		return EXIT_OK;
	}
	/* The INI snippet a site admin can hand to users. */
	struct gg_config one = {.path = cfg->path, .sites = (struct gg_site *)s, .nsites = 1};
	char *text = gg_config_format(&one);
	if (!text)
		return EXIT_FAIL;
	fputs(strchr(text, '\n') + 2, stdout); /* drop the header comment line and blank */
	free(text);
	return EXIT_OK;
}

int cmd_site(struct gg_cli *cli, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			cli_print_cmd_help(cli, cmd_site_opts, stdout);
			return EXIT_OK;
		}
		return ui_usage(cli, "site: expected a subcommand: add, list, show or remove");
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "add"))
		return site_add(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "list") || !strcmp(sub, "ls"))
		return site_list(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "show"))
		return site_show_or_remove(cli, argc - 1, argv + 1, 0);
	if (!strcmp(sub, "remove") || !strcmp(sub, "rm"))
		return site_show_or_remove(cli, argc - 1, argv + 1, 1);
	return ui_usage(cli, "site: unknown subcommand '%s' (add, list, show, remove)", sub);
}
