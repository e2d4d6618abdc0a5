/* gridgpu __complete's reading of the command line typed so far: which
 * command and sub-command, which operands, whether "--" was passed, and
 * whether the word being completed is an option's value (complete-line.h). */
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "complete-line.h"

static const struct gg_opt *opt_in(const struct gg_opt *o, const char *w)
{
	for (; o && o->name; o++) {
		if (w[1] == '-' && !strncmp(w + 2, o->name, strcspn(w + 2, "=")) &&
		    strlen(o->name) == strcspn(w + 2, "="))
			return o;
		if (w[1] != '-' && !w[2] && o->shortopt == w[1])
			return o;
	}
	return NULL;
}

/* The option the word w ("--site", "--site=x", "-J", "-qJ") names, if known. */
const struct gg_opt *complete_find_opt(const struct complete_line *l, const char *w)
{
	const struct gg_opt *o = opt_in(cli_global_opts(), w);
	if (!o && !l->cmd)
		o = opt_in(cli_version_opts(), w);
	if (!o && l->cmd)
		o = opt_in(l->sub ? l->sub->opts : l->cmd->opts, w);
	return o;
}

void complete_walk(struct gg_cli *cli, struct complete_line *l, char **w, int n)
{
	for (int i = 0; i < n - 1 && !l->bad; i++) {
		if (l->dashdash) {
			l->nops++;
		} else if (!strcmp(w[i], "--") && l->cmd) {
			l->dashdash = 1;
		} else if (w[i][0] == '-' && w[i][1]) {
			const struct gg_opt *o = complete_find_opt(l, w[i]);
			if (o && o->arg != OPT_NONE && !strchr(w[i], '=')) {
				if (++i == n - 1)
					l->want = o;
				else if (!strcmp(o->name, "config"))
					cli->config_path = w[i];
			} else if (o && !strcmp(o->name, "config") && strchr(w[i], '=')) {
				cli->config_path = strchr(w[i], '=') + 1;
			}
		} else if (!l->cmd) {
			l->bad = !(l->cmd = cli_find_cmd(NULL, w[i]));
		} else if (cli_has_subcommands(l->cmd) && !l->sub) {
			l->bad = !(l->sub = cli_find_cmd(l->cmd->name, w[i]));
		} else if (l->nops < 2) {
			l->operands[l->nops++] = w[i];
		} else {
			l->nops++;
		}
	}
}
