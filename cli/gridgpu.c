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
#include "gridgpu/cred.h"
#include "gridgpu/gpu.h"
#include "gridgpu/image.h"

static const struct gg_cmd commands[] = {
#define GG_COMMAND(name, fn, summary, usage, opts, operand, flags) \
	{NULL, name, fn, summary, usage, opts, operand, flags},
#define GG_SUBCOMMAND(parent, name, fn, summary, usage, opts, operand, flags) \
	{parent, name, fn, summary, usage, opts, operand, flags},
#include "commands.def"
#undef GG_COMMAND
#undef GG_SUBCOMMAND
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

const struct gg_cmd *cli_commands(size_t *n)
{
	*n = NCOMMANDS;
	return commands;
}

static int same_parent(const struct gg_cmd *c, const char *parent)
{
	return parent ? c->parent && !strcmp(c->parent, parent) : !c->parent;
}

const struct gg_cmd *cli_find_cmd(const char *parent, const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (same_parent(&commands[i], parent) && !strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int cli_has_subcommands(const struct gg_cmd *cmd)
{
	return cmd && !cmd->parent && cmd->fn == cli_run_subcommand;
}

const char *cli_nearest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t bestd = (size_t)-1, len = strlen(word);
	if (!len)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d = gg_edit_distance(word, cands[i]);
		/* a prefix is a good guess too */
		if (strncmp(cands[i], word, len) == 0 && d > 1)
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	return bestd <= (len <= 3 ? 1u : 2u) ? best : NULL;
}

/* Global options, accepted before the command and after it. */
enum { G_JSON = 1000, G_QUIET, G_VERBOSE, G_SITE, G_CONFIG, G_NO_KEEP, G_HELP, G_VERSION };
static const struct gg_opt global_opts[] = {
	{"json", 0, OPT_NONE, NULL, "machine-readable JSON on stdout", G_JSON},
	{"quiet", 'q', OPT_NONE, NULL, "print only errors and results", G_QUIET},
	{"verbose", 'v', OPT_NONE, NULL, "say more (repeat for more)", G_VERBOSE},
	{"site", 0, OPT_SITE, "NAME", "site profile to use (see gridgpu site)", G_SITE},
	{"config", 0, OPT_FILE, "FILE", "configuration file ($XDG_CONFIG_HOME/gridgpu/config)",
	 G_CONFIG},
	{"no-keep", 0, OPT_NONE, NULL,
	 "no connection keeper: connect to the CE anew (or GRIDGPU_KEEP=0)", G_NO_KEEP},
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
const struct gg_opt *cli_version_opts(void)
{
	return version_opt;
}

static size_t opt_count(const struct gg_opt *o)
{
	size_t n = 0;
	while (o && o[n].name)
		n++;
	return n;
}

enum { MAX_OPTS = 96 };

/* The word of argv that holds the bad short option ch: "-valid" for 'a' (glibc
 * steps optind past a word only at its last letter). */
static const char *short_word(int argc, char **argv, int ch)
{
	for (int k = 0; k < 2; k++) {
		int i = optind - 1 + k;
		if (i < 1 || i >= argc)
			continue;
		const char *w = argv[i];
		if (w[0] != '-' || w[1] == '-' || !w[1])
			continue;
		if (k == 0 ? w[strlen(w) - 1] == ch : strchr(w + 1, ch) != NULL)
			return w;
	}
	return NULL;
}

/* The usage of the running command when what follows "--" is handed on (to
 * ssh by connect, as the job's command by submit), else NULL. */
static const char *passthrough_usage(const struct gg_cli *cli)
{
	const struct gg_cmd *c = cli->sub ? cli->sub : cli->cmd;
	return c && c->usage && strstr(c->usage, "-- ") ? c->usage : NULL;
}

/* "--name=value" or "-name" as "name" in buf. */
static const char *bare_name(const char *w, char *buf, size_t len)
{
	w += w[1] == '-' ? 2 : 1;
	snprintf(buf, len, "%.*s", (int)strcspn(w, "="), w);
	return buf;
}

/* Say what is wrong with an option getopt refused, with the nearest name. */
static void bad_option(struct gg_cli *cli, int c, int argc, char **argv,
		       const struct gg_opt *const tabs[2], const size_t counts[2])
{
	const char *names[MAX_OPTS], *bad = argv[optind - 1 < argc ? optind - 1 : argc - 1];
	size_t n = 0, nprefix = 0;
	char word[64], also[160] = "";
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < counts[t] && n < MAX_OPTS; i++)
			names[n++] = tabs[t][i].name;
	if (c == ':') {
		ui_usage(cli, "option '%s' needs a value", bad);
		return;
	}
	if (optopt && optopt < 256) {
		const char *w = short_word(argc, argv, optopt);
		const char *near = w && strlen(w) > 2
					   ? cli_nearest(bare_name(w, word, sizeof word), names, n)
					   : NULL;
		if (near)
			ui_usage(cli, "single-dash long options are not supported: use --%s", near);
		else if (passthrough_usage(cli))
			ui_usage(
				cli,
				"unknown option '-%c': to hand it on, put it after '--' (gridgpu %s %s)",
				optopt, cli->cmd->name, passthrough_usage(cli));
		else
			ui_usage(cli, "unknown option '-%c'", optopt);
		return;
	}
	bare_name(bad, word, sizeof word);
	for (size_t i = 0; i < n && word[0]; i++)
		if (!strncmp(names[i], word, strlen(word)) && ++nprefix <= 4)
			snprintf(also + strlen(also), sizeof also - strlen(also), "%s--%s",
				 nprefix > 1 ? ", " : "", names[i]);
	const char *near = cli_nearest(word, names, n);
	if (nprefix > 1)
		ui_usage(cli, "option '%s' is ambiguous: %s", bad, also);
	else if (near)
		ui_usage(cli, "unknown option '%s'; did you mean '--%s'?", bad, near);
	else if (passthrough_usage(cli))
		ui_usage(cli,
			 "unknown option '%s': to hand it on, put it after '--' (gridgpu %s %s)",
			 bad, cli->cmd->name, passthrough_usage(cli));
	else
		ui_usage(cli, "unknown option '%s'", bad);
}

/* At the end of a command's options, an unknown --site, or a --config FILE
 * that is not there or not a configuration (doctor checks that itself), is
 * refused (exit 2) before the command does anything, whatever the command; not
 * for gridgpu's own options before it, help or completion. */
static int sites_ok(struct gg_cli *cli)
{
	const struct gg_cmd *c = cli->cmd;
	if (cli->sites_checked || !c || !c->name[0] || c->fn == cmd_help || c->fn == cmd_complete)
		return 1;
	cli->sites_checked = 1;
	struct gg_err err = {0};
	if (cli->config_path && cli_local_file(cli->config_path, &err) < 0) {
		ui_fail(cli, &err, "--config '%s'", cli->config_path); /* exit 2 */
		return 0;
	}
	/* and usable as one, but for doctor, which checks it as one of its checks */
	if (cli->config_path && c->fn != cmd_doctor && !cli_config(cli))
		return 0;
	return cli_check_sites(cli) == 0;
}

static int parse_next(struct gg_cli *cli, int argc, char **argv, const struct gg_opt *cmdopts,
		      int stop_at_operand)
{
	size_t nc = opt_count(cmdopts), ng = opt_count(global_opts);
	const struct gg_opt *tabs[2] = {global_opts, cmdopts};
	size_t counts[2] = {ng, nc};
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
				o->name, o->arg != OPT_NONE ? required_argument : no_argument, NULL,
				o->id};
			if (o->shortopt) {
				so[s++] = (char)o->shortopt;
				if (o->arg != OPT_NONE)
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
			return sites_ok(cli) ? 0 : -1;
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
		case G_NO_KEEP: cli->no_keep = 1; continue;
		case G_HELP: return -2;
		case '?':
		case ':': bad_option(cli, c, argc, argv, tabs, counts); return -1;
		default:
			for (size_t i = 0; i < nc; i++)
				if (cmdopts[i].id == c)
					cli->optname = cmdopts[i].name;
			return c;
		}
	}
}

int cli_dashdash(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i;
	return argc;
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

int cli_opt_duration(struct gg_cli *cli, int64_t *out)
{
	struct gg_err err = {0};
	if (gg_duration_parse_unit(cli->optarg, out, &err) < 0)
		return ui_fail(cli, &err, "--%s", cli->optname);
	return 0;
}

int cli_opt_size(struct gg_cli *cli, uint64_t *out)
{
	struct gg_err err = {0};
	if (gg_size_parse_unit(cli->optarg, out, &err) < 0)
		return ui_fail(cli, &err, "--%s", cli->optname);
	return 0;
}

int cli_opt_mig(struct gg_cli *cli, const char **out)
{
	struct gg_err err = {0};
	if (gg_mig_profile_check(cli->optarg, &err) < 0)
		return ui_fail(cli, &err, "--%s", cli->optname);
	*out = cli->optarg;
	return 0;
}

static void print_opts(const struct gg_opt *o, const char *indent, FILE *f)
{
	for (; o && o->name; o++) {
		char left[64];
		snprintf(left, sizeof left, "%s%c%s--%s%s%s", o->shortopt ? "-" : "  ",
			 o->shortopt ? o->shortopt : ' ', o->shortopt ? ", " : "  ", o->name,
			 o->argname ? " " : "", o->argname ? o->argname : "");
		fprintf(f, "%s  %-28s %s\n", indent, left, o->help);
	}
}

/* help site: each sub-command with its usage, summary and its own options. */
static void print_subcommands(const struct gg_cmd *cmd, FILE *f)
{
	fprintf(f, "\nSub-commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct gg_cmd *s = &commands[i];
		if (!same_parent(s, cmd->name) || (s->flags & CMD_HIDDEN))
			continue;
		fprintf(f, "  %s %s%s%s\n      %s.\n", cmd->name, s->name, s->usage[0] ? " " : "",
			s->usage, s->summary);
		print_opts(s->opts, "    ", f);
	}
}

void cli_print_cmd_help(const struct gg_cli *cli, const struct gg_opt *opts, FILE *f)
{
	const struct gg_cmd *cmd = cli->cmd, *sub = cli->sub;
	if (sub)
		fprintf(f, "Usage: gridgpu %s %s%s%s\n\n%s.\n", cmd->name, sub->name,
			sub->usage[0] ? " " : "", sub->usage, sub->summary);
	else
		fprintf(f, "Usage: gridgpu %s %s\n\n%s.\n", cmd->name, cmd->usage ? cmd->usage : "",
			cmd->summary);
	if (!sub && cli_has_subcommands(cmd))
		print_subcommands(cmd, f);
	if (opts && opts->name) {
		fprintf(f, "\nOptions:\n");
		print_opts(opts, "", f);
	}
	fprintf(f, "\nGlobal options:\n");
	print_opts(global_opts, "", f);
	fprintf(f, "\nSee gridgpu-%s(1) for details.\n", cmd->name);
}

/* The first steps at a real site, as the README's first block and gridgpu(1)
 * show them (tests/e2e/t-newcomer.sh checks they agree). */
const char cli_getting_started[] =
	"Getting started at a site (its CE URL and jump hosts come from the site):\n"
	"  1. gridgpu proxy init                  a proxy from ~/.globus/usercert.pem\n"
	"  2. gridgpu site add NAME --default --ce URL --jump USER@HOST... --gpu-rte RTE\n"
	"  3. gridgpu doctor                      proxy, CA dir, CE, jump hosts, ssh\n"
	"  4. gridgpu request --gpus 1 --walltime 4h\n"
	"  5. gridgpu connect                     a shell on the GPU node\n";

/* The day's loop, as the README's second block and gridgpu(1) show it
 * (tests/e2e/t-newcomer.sh checks they agree). */
static const char days_work[] =
	"A day's work (your image, then batch work over data at storage):\n"
	"  gridgpu request --gpus 1 --image dev.tar --name dev\n"
	"  gridgpu connect dev                   install your tools into /usr/local\n"
	"  gridgpu freeze --session dev -o work.sif\n"
	"  gridgpu check work.sif -- CMD          runs as the batch job will?\n"
	"  gridgpu kill dev\n"
	"  gridgpu submit work.sif --name ana --input URL --output NAME=URL -- CMD\n"
	"  gridgpu status ana; gridgpu get --wait ana\n";

static void print_main_help(FILE *f)
{
	fprintf(f,
		"Usage: gridgpu [global options] <command> [options] [args]\n\n"
		"Develop on grid GPUs interactively, then run the same environment as batch "
		"work.\n\n%s\n%s\nCommands:\n",
		cli_getting_started, days_work);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!commands[i].parent && !(commands[i].flags & CMD_HIDDEN))
			fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nGlobal options:\n");
	print_opts(global_opts, "", f);
	print_opts(version_opt, "", f);
	fprintf(f, "\nExit codes: 0 ok, 1 failure, 2 usage, 3 credentials, 4 CE or network "
		   "unreachable,\n5 no such session or job, 6 remote job failed, 130 "
		   "interrupted.\n\n'gridgpu help COMMAND' shows a command's options; see "
		   "gridgpu(1).\n");
}

/* The names of parent's sub-commands (of the commands when parent is NULL),
 * hidden ones (aliases) too when all; how many. */
static size_t names_of(const char *parent, int all, const char **names, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < NCOMMANDS && n < max; i++)
		if (same_parent(&commands[i], parent) && (all || !(commands[i].flags & CMD_HIDDEN)))
			names[n++] = commands[i].name;
	return n;
}

static int unknown_command(struct gg_cli *cli, const char *name)
{
	const char *names[NCOMMANDS];
	size_t n = names_of(NULL, 1, names, NCOMMANDS);
	const char *best = cli_nearest(name, names, n);
	ui_err("gridgpu: '%s' is not a gridgpu command", name);
	if (best)
		ui_err("\ngridgpu: did you mean '%s'?", best);
	ui_err("\nSee 'gridgpu --help' for the list of commands.\n");
	if (cli->json) {
		char *msg = ui_format("'%s' is not a gridgpu command", name);
		ui_json_error("gridgpu", msg, GG_EUSAGE);
		free(msg);
	}
	return EXIT_USAGE;
}

/* "add, list, show, remove or set" in buf. */
static const char *sub_list(const char *parent, char *buf, size_t len)
{
	const char *names[NCOMMANDS];
	size_t n = names_of(parent, 0, names, NCOMMANDS), o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s",
				      i == 0       ? ""
				      : i + 1 == n ? " or "
						   : ", ",
				      names[i]);
	return buf;
}

static int unknown_subcommand(struct gg_cli *cli, const char *sub)
{
	const char *names[NCOMMANDS];
	size_t n = names_of(cli->cmd->name, 1, names, NCOMMANDS);
	const char *best = cli_nearest(sub, names, n);
	char list[256];
	sub_list(cli->cmd->name, list, sizeof list);
	if (best)
		return ui_usage(cli, "%s: unknown sub-command '%s'; did you mean '%s'? (%s)",
				cli->cmd->name, sub, best, list);
	return ui_usage(cli, "%s: unknown sub-command '%s' (%s)", cli->cmd->name, sub, list);
}

int cli_run_subcommand(struct gg_cli *cli, int argc, char **argv)
{
	const struct gg_cmd *cmd = cli->cmd, *sub = NULL;
	if (argc >= 2 && argv[1][0] != '-') {
		if (!(sub = cli_find_cmd(cmd->name, argv[1])))
			return unknown_subcommand(cli, argv[1]);
		argc--;
		argv++;
	} else if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		cli_print_cmd_help(cli, NULL, stdout);
		return EXIT_OK;
	} else {
		for (size_t i = 0; i < NCOMMANDS && !sub; i++)
			if (same_parent(&commands[i], cmd->name) &&
			    (commands[i].flags & CMD_DEFAULT))
				sub = &commands[i];
		if (!sub) {
			char list[256];
			return ui_usage(cli, "%s: expected a sub-command: %s", cmd->name,
					sub_list(cmd->name, list, sizeof list));
		}
	}
	cli->sub = sub;
	return sub->fn(cli, argc, argv);
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
	const struct gg_cmd *cmd = cli_find_cmd(NULL, argv[cli->optind]);
	if (!cmd)
		return unknown_command(cli, argv[cli->optind]);
	struct gg_cli sub = {.cmd = cmd};
	if (nargs > 1 && cli_has_subcommands(cmd)) {
		if (!(sub.sub = cli_find_cmd(cmd->name, argv[cli->optind + 1])))
			return unknown_subcommand(&sub, argv[cli->optind + 1]);
	} else if (nargs > 1) {
		return ui_usage(cli, "help: '%s' has no sub-commands", cmd->name);
	}
	cli_print_cmd_help(&sub, sub.sub ? sub.sub->opts : cmd->opts, stdout);
	return EXIT_OK;
}

/* gridgpu --version: the version, then each library's (--json: an object). */
static int print_version(const struct gg_cli *cli)
{
	struct gg_libversion v[16];
	size_t n = gg_library_versions(v, 16);
	if (cli->json) {
		json_t *libs = json_object();
		for (size_t i = 0; i < n; i++)
			gg_json_set_text(libs, v[i].name, v[i].version);
		return ui_json_doc("version", gg_json_object("version", gg_json_text(GG_VERSION),
							     "libraries", libs, NULL));
	}
	printf("gridgpu %s\n", GG_VERSION);
	for (size_t i = 0; i < n; i++)
		printf("  %-12s %s\n", v[i].name, v[i].version);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	/* First, before libcurl or OpenSSL allocate: what OpenSSL frees is wiped. */
	gg_cred_wipe_on_free();
	struct gg_cli cli = {.prog = "gridgpu"};
	cli_site_opts_init();
	/* Global options before the command; stop at the first operand. */
	static const struct gg_cmd top = {NULL, "", NULL, "", "", version_opt, OPT_NONE, 0};
	cli.cmd = &top;
	int c, version = 0;
	while ((c = parse_next(&cli, argc, argv, version_opt, 1)) != 0) {
		if (c == -1)
			return EXIT_USAGE;
		if (c == -2) {
			print_main_help(stdout);
			return EXIT_OK;
		}
		version |= c == G_VERSION;
	}
	if (version) /* after every global option: --version --json is JSON too */
		return print_version(&cli);
	if (cli.optind >= argc) {
		print_main_help(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[cli.optind];
	const struct gg_cmd *cmd = cli_find_cmd(NULL, name);
	if (!cmd)
		return unknown_command(&cli, name);
	cli.cmd = cmd;
	/* Freezing touches tens of MiB of fresh memory: in 2 MiB pages, not 4 KiB ones. */
	if (cmd->flags & CMD_FREEZES)
		(void)gg_image_heap_huge_pages();
	int sub_argc = argc - cli.optind;
	char **sub_argv = argv + cli.optind;
	cli.optind = 0;
	/* A closed stdout (gridgpu list | head) must not kill us with SIGPIPE
	 * before records are saved; writes then fail with EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	int rc = cmd->fn(&cli, sub_argc, sub_argv);
	cli_free(&cli);
	if (fflush(stdout) != 0 && rc == 0)
		rc = EXIT_FAIL;
	if (gg_json_losses() && rc == 0) /* ui_json_doc printed the error instead */
		rc = EXIT_FAIL;
	return rc;
}
