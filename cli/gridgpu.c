/* gridgpu: main, the command table, the shared option parser. */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "cred/cred.h"

static const struct gg_cmd commands[] = {
#define GG_COMMAND(name, fn, summary, usage, opts, subs, flags) \
	{name, fn, summary, usage, opts, subs, flags},
#include "commands.def"
#undef GG_COMMAND
};

const struct gg_cmd *cli_commands(size_t *n)
{
	*n = sizeof commands / sizeof commands[0];
	return commands;
}

/* Global options, accepted before the command and after it. */
enum { G_JSON = 1000, G_QUIET, G_VERBOSE, G_SITE, G_CONFIG, G_HELP, G_VERSION };
static const struct gg_opt global_opts[] = {
	{"json", 0, OPT_NONE, NULL, "machine-readable JSON on stdout", G_JSON},
	{"quiet", 'q', OPT_NONE, NULL, "print only errors and results", G_QUIET},
	{"verbose", 'v', OPT_NONE, NULL, "say more (repeat for more)", G_VERBOSE},
	{"site", 0, OPT_ARG, "NAME", "site profile to use (see gridgpu site)", G_SITE},
	{"config", 0, OPT_ARG, "FILE", "configuration file ($XDG_CONFIG_HOME/gridgpu/config)",
	 G_CONFIG},
	{"help", 'h', OPT_NONE, NULL, "show help and exit", G_HELP},
	OPT_END,
};
const struct gg_opt *cli_global_opts(void)
{
	return global_opts;
}

static const struct gg_opt version_opt[] = {
	{"version", 0, OPT_NONE, NULL, "show the version and exit", G_VERSION},
	OPT_END,
};

static size_t opt_count(const struct gg_opt *o)
{
	size_t n = 0;
	while (o && o[n].name)
		n++;
	return n;
}

static int parse_next(struct gg_cli *cli, int argc, char **argv, const struct gg_opt *cmdopts,
		      int stop_at_operand)
{
	size_t nc = opt_count(cmdopts), ng = opt_count(global_opts);
	const struct gg_opt *tabs[2] = {global_opts, cmdopts};
	size_t counts[2] = {ng, nc};
	enum { MAX_OPTS = 96 };
	struct option lo[MAX_OPTS + 1];
	char so[2 * MAX_OPTS + 3];
	if (ng + nc > MAX_OPTS)
		nc = MAX_OPTS - ng; /* a programming error, caught by the tests */
	size_t k = 0, s = 0;
	if (stop_at_operand)
		so[s++] = '+';
	so[s++] = ':';
	for (int t = 0; t < 2; t++) {
		for (size_t i = 0; i < counts[t]; i++) {
			const struct gg_opt *o = &tabs[t][i];
			lo[k++] = (struct option){
				o->name, o->arg == OPT_ARG ? required_argument : no_argument, NULL,
				o->id};
			if (o->shortopt) {
				so[s++] = (char)o->shortopt;
				if (o->arg == OPT_ARG)
					so[s++] = ':';
			}
		}
	}
	lo[k] = (struct option){NULL, 0, NULL, 0};
	so[s] = '\0';

	if (cli->optind == 0) {
		optind = 0; /* full reset of getopt's state */
		opterr = 0;
	}
	for (;;) {
		int c = getopt_long(argc, argv, so, lo, NULL);
		cli->optind = optind;
		cli->optarg = optarg;
		if (c == -1)
			return 0;
		for (int t = 0; t < 2; t++)
			for (size_t i = 0; i < counts[t]; i++)
				if (tabs[t][i].shortopt && tabs[t][i].shortopt == c)
					c = tabs[t][i].id;
		switch (c) {
		case G_JSON: cli->json = 1; continue;
		case G_QUIET: cli->quiet = 1; continue;
		case G_VERBOSE: cli->verbose++; continue;
		case G_SITE:
			if (!cli->site)
				cli->site = optarg;
			if (cli->nsites < 16)
				cli->sites[cli->nsites++] = optarg;
			continue;
		case G_CONFIG: cli->config_path = optarg; continue;
		case G_HELP: return -2;
		case '?':
		case ':': {
			const char *bad = argv[optind - 1 < argc ? optind - 1 : argc - 1];
			if (c == ':')
				ui_usage(cli, "option '%s' needs a value", bad);
			else if (optopt && optopt < 256)
				ui_usage(cli, "unknown option '-%c'", optopt);
			else
				ui_usage(cli, "unknown option '%s'", bad);
			return -1;
		}
		default:
			for (size_t i = 0; i < nc; i++)
				if (cmdopts[i].id == c)
					cli->optname = cmdopts[i].name;
			return c;
		}
	}
}

int cli_next_opt(struct gg_cli *cli, int argc, char **argv, const struct gg_opt *opts)
{
	int c = parse_next(cli, argc, argv, opts, 0);
	if (c == -2) {
		cli_print_cmd_help(cli, opts, stdout);
		return -2;
	}
	return c;
}

int cli_opt_int(struct gg_cli *cli, int min, int max, int *out)
{
	const char *v = cli->optarg;
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < min || n > max)
		return ui_usage(cli, "--%s '%s': expected a whole number from %d to %d",
				cli->optname, v, min, max);
	*out = (int)n;
	return 0;
}

static void print_opts(const struct gg_opt *o, FILE *f)
{
	for (; o && o->name; o++) {
		char left[64];
		snprintf(left, sizeof left, "%s%c%s--%s%s%s", o->shortopt ? "-" : "  ",
			 o->shortopt ? o->shortopt : ' ', o->shortopt ? ", " : "  ", o->name,
			 o->argname ? " " : "", o->argname ? o->argname : "");
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
}

void cli_print_cmd_help(const struct gg_cli *cli, const struct gg_opt *opts, FILE *f)
{
	const struct gg_cmd *cmd = cli->cmd;
	if (cli->sub_usage)
		fprintf(f, "Usage: gridgpu %s %s\n", cmd->name, cli->sub_usage);
	else
		fprintf(f, "Usage: gridgpu %s %s\n\n%s.\n", cmd->name, cmd->usage ? cmd->usage : "",
			cmd->summary);
	if (opts && opts->name) {
		fprintf(f, "\nOptions:\n");
		print_opts(opts, f);
	}
	fprintf(f, "\nGlobal options:\n");
	print_opts(global_opts, f);
	fprintf(f, "\nSee gridgpu-%s(1) for details.\n", cmd->name);
}

static void print_main_help(FILE *f)
{
	fprintf(f, "Usage: gridgpu [global options] <command> [options] [args]\n\n"
		   "Develop on grid GPUs interactively, then run the same environment as batch "
		   "work.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!(commands[i].flags & CMD_HIDDEN))
			fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nGlobal options:\n");
	print_opts(global_opts, f);
	print_opts(version_opt, f);
	fprintf(f, "\nExit codes: 0 ok, 1 failure, 2 usage, 3 credentials, 4 CE or network "
		   "unreachable,\n5 no such session or job, 6 remote job failed, 130 "
		   "interrupted.\n\n'gridgpu help COMMAND' shows a command's options; see "
		   "gridgpu(1).\n");
}

static const struct gg_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int unknown_command(struct gg_cli *cli, const char *name)
{
	ui_err("gridgpu: '%s' is not a gridgpu command", name);
	const char *best = NULL;
	size_t bestd = (size_t)-1;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		size_t d = gg_edit_distance(name, commands[i].name);
		/* a prefix is a good guess too */
		if (strncmp(commands[i].name, name, strlen(name)) == 0)
			d = d < 1 ? d : 1;
		if (d < bestd) {
			bestd = d;
			best = commands[i].name;
		}
	}
	size_t limit = strlen(name) <= 3 ? 1 : 2;
	if (best && bestd <= limit)
		ui_err("\ngridgpu: did you mean '%s'?", best);
	ui_err("\nSee 'gridgpu --help' for the list of commands.\n");
	if (cli->json) {
		char *msg = ui_format("'%s' is not a gridgpu command", name);
		ui_json_error("gridgpu", msg, GG_EUSAGE);
		free(msg);
	}
	return EXIT_USAGE;
}

int cmd_help(struct gg_cli *cli, int argc, char **argv)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, NULL)) > 0)
		;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	int nargs = argc - cli->optind;
	if (nargs == 0) {
		print_main_help(stdout);
		return EXIT_OK;
	}
	const struct gg_cmd *cmd = find_command(argv[cli->optind]);
	if (!cmd)
		return unknown_command(cli, argv[cli->optind]);
	struct gg_cli sub = {.cmd = cmd};
	cli_print_cmd_help(&sub, cmd->opts, stdout);
	return EXIT_OK;
}

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
	}
	if (gg_config_load(p, &cli->cfg, &err) < 0)
		cli->cfg_exit = ui_fail(cli, &err, "configuration");
	free(path);
	return cli->cfg;
}

int main(int argc, char **argv)
{
	/* First, before libcurl or OpenSSL allocate: what OpenSSL frees is wiped. */
	gg_cred_wipe_on_free();
	struct gg_cli cli = {.prog = "gridgpu"};
	/* Global options before the command; stop at the first operand. */
	static const struct gg_cmd top = {"", NULL, "", "", version_opt, NULL, 0};
	cli.cmd = &top;
	int c;
	while ((c = parse_next(&cli, argc, argv, version_opt, 1)) != 0) {
		if (c == -1)
			return EXIT_USAGE;
		if (c == -2) {
			print_main_help(stdout);
			return EXIT_OK;
		}
		if (c == G_VERSION) {
			printf("gridgpu %s\n", GG_VERSION);
			return EXIT_OK;
		}
	}
	if (cli.optind >= argc) {
		print_main_help(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[cli.optind];
	const struct gg_cmd *cmd = find_command(name);
	if (!cmd)
		return unknown_command(&cli, name);
	cli.cmd = cmd;
	int sub_argc = argc - cli.optind;
	char **sub_argv = argv + cli.optind;
	cli.optind = 0;
	/* A closed stdout (gridgpu list | head) must not kill us with SIGPIPE
	 * before records are saved; writes then fail with EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	int rc = cmd->fn(&cli, sub_argc, sub_argv);
	cli_engine_free(&cli);
	gg_config_free(cli.cfg);
	if (fflush(stdout) != 0 && rc == 0)
		rc = EXIT_FAIL;
	return rc;
}
