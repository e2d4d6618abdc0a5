/* The options request and submit share: what the work asks of a site. One
 * table part (CLI_RES_OPTS) and one handler, so both commands parse, check and
 * document them alike. */
#ifndef GG_CLI_RESOPT_H
#define GG_CLI_RESOPT_H

#include "gridgpu/ce.h"
#include "cli.h"

enum {
	O_RES_GPUS = 512,
	O_RES_MIG,
	O_RES_CPUS,
	O_RES_MEMORY,
	O_RES_WALLTIME,
	O_RES_QUEUE,
	O_RES_TOKEN,
	O_RES_RIGHT_SIZE,
};

/* walltime_help: what --walltime means for this command, with its default. */
#define CLI_RES_OPTS(walltime_help)                                                             \
	{"gpus",                                                                                \
	 'g',                                                                                   \
	 OPT_ARG,                                                                               \
	 "N",                                                                                   \
	 "whole GPUs (submit: 0-1, one when the site has a free GPU slot)",                     \
	 O_RES_GPUS},                                                                           \
		{"mig", 0, OPT_MIG, "PROFILE", "a MIG slice instead, e.g. 1g.10gb", O_RES_MIG}, \
		{"cpus", 'c', OPT_ARG, "N", "CPU cores", O_RES_CPUS},                           \
		{"memory", 'm', OPT_ARG, "SIZE", "memory, e.g. 16G", O_RES_MEMORY},             \
		{"walltime", 't', OPT_ARG, "DUR", walltime_help, O_RES_WALLTIME},               \
		{"queue", 0, OPT_ARG, "QUEUE", "queue (default from the site)", O_RES_QUEUE},   \
		{"right-size",                                                                  \
		 0,                                                                             \
		 OPT_NONE,                                                                      \
		 NULL,                                                                          \
		 "the GPU or MIG slice the image's recorded use suggests, not --gpus/--mig",    \
		 O_RES_RIGHT_SIZE},                                                             \
	{                                                                                       \
		"token", 0, OPT_NONE, NULL,                                                     \
			"authenticate with a bearer token instead of the proxy", O_RES_TOKEN    \
	}

/* One of CLI_RES_OPTS's options (c, with cli->optarg) into res or *token.
 * 0 when taken, 1 when c is not one of them, or the exit code after saying
 * what is wrong. */
int cli_res_opt(struct gg_cli *cli, int c, struct gg_jd_resources *res, int *token);
/* What the options together cannot mean (--gpus with --mig): 0 or the exit code. */
int cli_res_check(struct gg_cli *cli, const struct gg_jd_resources *res);
/* What the image (a SIF here, frozen from a session) records of the work's use: the
 * suggestion's line (said when show, or with --right-size), and with --right-size its
 * GPU or MIG slice into res. 0, or the exit code after saying why not (--right-size
 * without a record of GPU use: EXIT_NOTFOUND). */
int cli_right_size(struct gg_cli *cli, const char *image, struct gg_jd_resources *res, int show);
/* inspect: the provenance's "usage" (freeze --session), one line; nothing without. */
void cli_usage_provenance(json_t *usage);
/* status: what the session's work used so far (text, or into j with --json). */
void cli_usage_status(struct gg_cli *cli, struct gg_engine *e, const struct gg_record *r,
		      json_t *j);

#endif
