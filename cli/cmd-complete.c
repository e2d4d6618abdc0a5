/* gridgpu __complete: what the bash and zsh completions offer, worked out from
 * the command table itself (commands.def and the option tables), so the
 * completions can never drift from it.
 *
 *   gridgpu __complete line [--describe] -- WORD... CURRENT
 *
 * reads the command line typed so far (the last word is the one being
 * completed, "--opt=" joined to its value) and prints one line saying what to
 * offer: "words" (the words follow, one a line, "WORD:DESCRIPTION" with
 * --describe), "files", "dirs", "images" (directories and the files whose
 * names end in one of the endings that follow, one a line) or "none". The other forms print plain
 * word lists (the docs check reads them). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "complete-line.h"
#include "gridgpu/engine.h"
#include "gridgpu/gpu.h"
#include "gridgpu/session.h"

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void print_opts(const struct gg_opt *o, const char *cur, int describe)
{
	for (; o && o->name; o++) {
		char full[80];
		snprintf(full, sizeof full, "--%s", o->name);
		if (cur && !starts_with(full, cur))
			continue;
		if (describe)
			printf("--%s:%s\n", o->name, o->help);
		else
			printf("--%s%s\n", o->name, !cur && o->arg != OPT_NONE ? "=" : "");
	}
}

/* Commands (parent NULL) or parent's sub-commands, without the hidden ones. */
static void print_cmds(const char *parent, const char *cur, int describe)
{
	size_t n;
	const struct gg_cmd *cmds = cli_commands(&n);
	for (size_t i = 0; i < n; i++) {
		const struct gg_cmd *c = &cmds[i];
		if ((parent ? !c->parent || strcmp(c->parent, parent) : c->parent != NULL) ||
		    (c->flags & CMD_HIDDEN) || !starts_with(c->name, cur))
			continue;
		if (describe)
			printf("%s:%s\n", c->name, c->summary);
		else
			printf("%s\n", c->name);
	}
}

static void print_sites(struct gg_cli *cli, const char *cur)
{
	struct gg_config *cfg = cli_config(cli);
	for (size_t i = 0; cfg && i < cfg->nsites; i++)
		if (starts_with(cfg->sites[i].name, cur))
			printf("%s\n", cfg->sites[i].name);
}

/* Whether a record is one a command taking kind can act on: connect and
 * freeze --session a live interactive session (they refuse a batch job and
 * an ended session), kill what has not ended, get a batch job, request
 * --resume an ended session; status and clean any. */
static int offered(const struct gg_record *r, enum gg_opt_arg kind)
{
	switch (kind) {
	case OPT_SESSION: return r->kind == GG_REC_SESSION && !gg_sess_state_ended(r->state);
	case OPT_LIVE: return !gg_sess_state_ended(r->state);
	case OPT_JOB: return r->kind == GG_REC_JOB;
	case OPT_ENDED: return r->kind == GG_REC_SESSION && gg_sess_state_ended(r->state);
	default: return 1;
	}
}

/* The stored records' names a command taking kind can act on. */
static void print_records(const char *cur, enum gg_opt_arg kind)
{
	struct gg_store *st = NULL;
	struct gg_record *recs = NULL;
	size_t nr = 0;
	if (gg_store_open(NULL, &st, NULL) == 0 && gg_store_list(st, &recs, &nr, NULL, NULL) == 0)
		for (size_t i = 0; i < nr; i++)
			if (starts_with(recs[i].name, cur) && offered(&recs[i], kind))
				printf("%s\n", recs[i].name);
	gg_records_free(recs, nr);
	gg_store_free(st);
}

/* The MIG profiles NVIDIA's GPUs offer, as the library knows them. */
static void print_migs(const char *cur)
{
	size_t n = 0;
	const char *const *p = gg_mig_profiles(&n);
	for (size_t i = 0; i < n; i++)
		if (starts_with(p[i], cur))
			printf("%s\n", p[i]);
}

/* What a value of this kind can be; choices are argname's words ("a|b"). */
static void print_kind(struct gg_cli *cli, enum gg_opt_arg kind, const char *choices,
		       const char *cur, int describe)
{
	switch (kind) {
	case OPT_FILE: printf("files\n"); return;
	case OPT_DIR: printf("dirs\n"); return;
	case OPT_IMAGE: /* directories, and files with these endings */
		printf("images\n");
		for (const char *const *x = gg_image_suffixes(); *x; x++)
			printf("%s\n", *x);
		return;
	case OPT_NONE:
	case OPT_ARG: printf("none\n"); return;
	default: break;
	}
	printf("words\n");
	if (kind == OPT_SITE)
		print_sites(cli, cur);
	else if (kind == OPT_RECORD || kind == OPT_SESSION || kind == OPT_LIVE || kind == OPT_JOB ||
		 kind == OPT_ENDED)
		print_records(cur, kind);
	else if (kind == OPT_COMMAND)
		print_cmds(NULL, cur, describe);
	else if (kind == OPT_MIG)
		print_migs(cur);
	for (const char *p = kind == OPT_CHOICE ? choices : NULL; p && *p;) {
		size_t len = strcspn(p, "|");
		if (strncmp(p, cur, strlen(cur)) == 0 && len >= strlen(cur))
			printf("%.*s\n", (int)len, p);
		p += len + (p[len] == '|');
	}
}

/* site set NAME KEY VALUE: KEY is one of site add's options that take a value
 * (named without "--"), VALUE what that option takes. */
static void complete_site_set(struct gg_cli *cli, const struct complete_line *l, const char *cur,
			      int describe)
{
	const struct gg_opt *o = cmd_site_add_opts;
	if (l->nops == 0) {
		print_kind(cli, OPT_SITE, NULL, cur, describe);
	} else if (l->nops == 1) {
		printf("words\n");
		for (; o->name; o++)
			if (o->arg != OPT_NONE && starts_with(o->name, cur))
				printf(describe ? "%s:%s\n" : "%s\n", o->name, o->help);
	} else {
		const char *key = l->operands[1];
		key += starts_with(key, "--") ? 2 : 0;
		while (o->name && strcmp(o->name, key))
			o++;
		if (l->nops == 2 && o->name)
			print_kind(cli, o->arg, o->argname, cur, describe);
		else
			printf("none\n");
	}
}

static int complete_line(struct gg_cli *cli, char **w, int n, int describe)
{
	struct complete_line l = {0};
	const char *cur = n > 0 ? w[n - 1] : "";
	complete_walk(cli, &l, w + 1, n - 1); /* w[0] is the program */
	const struct gg_opt *o;
	if (l.bad || n < 2)
		printf("none\n");
	else if (l.want)
		print_kind(cli, l.want->arg, l.want->argname, cur, describe);
	else if (!l.dashdash && starts_with(cur, "--") && strchr(cur, '=') &&
		 (o = complete_find_opt(&l, cur)) != NULL)
		print_kind(cli, o->arg, o->argname, strchr(cur, '=') + 1, describe);
	else if (!l.dashdash && cur[0] == '-') {
		printf("words\n");
		print_opts(cli_global_opts(), cur, describe);
		print_opts(!l.cmd  ? cli_version_opts()
			   : l.sub ? l.sub->opts
				   : l.cmd->opts,
			   cur, describe);
	} else if (l.dashdash)
		printf("files\n");
	else if (!l.cmd)
		print_kind(cli, OPT_COMMAND, NULL, cur, describe);
	else if (cli_has_subcommands(l.cmd) && !l.sub)
		printf("words\n"), print_cmds(l.cmd->name, cur, describe);
	else if (l.cmd->operand == OPT_COMMAND && l.nops == 1) {
		const struct gg_cmd *c = cli_find_cmd(NULL, l.operands[0]);
		printf("words\n");
		if (cli_has_subcommands(c))
			print_cmds(c->name, cur, describe);
	} else if (l.cmd->operand == OPT_COMMAND && l.nops > 1)
		printf("none\n");
	else if (l.sub && l.sub->fn == cmd_site_set)
		complete_site_set(cli, &l, cur, describe);
	else
		print_kind(cli, (l.sub ? l.sub : l.cmd)->operand, NULL, cur, describe);
	return EXIT_OK;
}

/* The lists: commands, global-options, options CMD [SUB], subcommands CMD,
 * sites, sessions. */
static int complete_list(struct gg_cli *cli, const char *what, int argc, char **argv, int describe)
{
	const struct gg_cmd *cmd = argc > 2 ? cli_find_cmd(NULL, argv[2]) : NULL;
	if (!strcmp(what, "commands"))
		print_cmds(NULL, "", describe);
	else if (!strcmp(what, "global-options"))
		print_opts(cli_global_opts(), NULL, describe);
	else if (!strcmp(what, "subcommands") && cmd)
		print_cmds(cmd->name, "", describe);
	else if (!strcmp(what, "options") && cmd) {
		const struct gg_cmd *sub = argc > 3 ? cli_find_cmd(cmd->name, argv[3]) : NULL;
		if (argc > 3 && !sub)
			return EXIT_USAGE;
		print_opts(sub ? sub->opts : cmd->opts, NULL, describe);
		print_opts(cli_global_opts(), NULL, describe);
	} else if (!strcmp(what, "sites"))
		print_sites(cli, "");
	else if (!strcmp(what, "sessions"))
		print_records("", OPT_RECORD);
	else
		return EXIT_USAGE;
	return EXIT_OK;
}

int cmd_complete(struct gg_cli *cli, int argc, char **argv)
{
	/* No option parsing: the words are the shell's, passed through. */
	if (argc < 2)
		return ui_usage(cli, "__complete: line [--describe] -- WORD...|commands|options "
				     "CMD [SUB]|subcommands CMD|sites|sessions");
	const char *what = argv[1];
	if (!strcmp(what, "line")) {
		int i = 2, describe = 0;
		if (i < argc && !strcmp(argv[i], "--describe"))
			describe = 1, i++;
		if (i >= argc || strcmp(argv[i], "--"))
			return ui_usage(cli, "__complete line: expected '--' before the words");
		return complete_line(cli, argv + i + 1, argc - i - 1, describe);
	}
	int describe = argc > 2 && strcmp(argv[argc - 1], "--describe") == 0;
	return complete_list(cli, what, argc - describe, argv, describe);
}
