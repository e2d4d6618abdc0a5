/* What __complete needs of the command line typed so far (complete-line.c). */
#ifndef GG_CLI_COMPLETE_LINE_H
#define GG_CLI_COMPLETE_LINE_H

#include "cli.h"

/* Where the words before the current one leave the command line. */
struct complete_line {
	const struct gg_cmd *cmd, *sub;
	const char *operands[2]; /* the first two */
	int nops, dashdash, bad;
	const struct gg_opt *want; /* the current word is this option's value */
};

/* The option the word w ("--site", "--site=x", "-J", "-qJ") names, if known. */
const struct gg_opt *complete_find_opt(const struct complete_line *l, const char *w);

/* Walk the words w[0..n-2] (w[n-1] is the one being completed) into l;
 * --config's value goes to cli->config_path, as the command would take it. */
void complete_walk(struct gg_cli *cli, struct complete_line *l, char **w, int n);

#endif
