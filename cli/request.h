/* request's parts shared by cmd-request.c and request-race.c (request --race). */
#ifndef GRIDGPU_CLI_REQUEST_H
#define GRIDGPU_CLI_REQUEST_H

#include "cli.h"
#include "gridgpu/engine.h"

/* What was asked. */
struct req {
	struct gg_jd_resources res;
	int64_t deadline, idle;
	const char *image, *ce, *name, *identity;
	int wait, dry_run, token;
	int race; /* --race N: the N best sites at once (0: one site) */
	int64_t timeout;
	const char *binds[GG_JD_MAX];
	int nbinds;
	const char *resume;    /* --resume S */
	struct gg_record from; /* S's record (cli_request_resume; cleared by the caller) */
	int gpus_given;        /* --gpus or --mig given (else S's) */
};

/* The most sites one race sends the session to. */
#define CLI_RACE_MAX 8

/* What was asked, with the site's defaults, as the library's session spec;
 * NULL after saying what is wrong. */
struct gg_session_spec *cli_request_spec(struct gg_cli *cli, const struct req *q,
					 const struct gg_site *site, const char *launcher);
/* The image and the enter script staged with the session (--image); 0 or the
 * exit code. */
int cli_request_stage(struct gg_cli *cli, int dry, struct gg_session_spec *spec,
		      const struct gg_site *site, struct gg_session_stage **s);
/* "Session NAME is ready..." and how to connect (--json: the record, with
 * race, when not NULL, as its "race_outcome" member). */
void cli_request_print_ready(struct gg_cli *cli, const struct gg_record *r, const char *config,
			     json_t *race);

/* request --resume S: S's record into q->from, brought up to date from its CE,
 * checked before anything is made or sent; S's GPUs and site the defaults; 0 or
 * the exit code after saying what is wrong. */
int cli_request_resume(struct gg_cli *cli, struct req *q);

/* --race N's value; its companions checked once all options are read. */
int cli_opt_race(struct gg_cli *cli, int *race);
int cli_race_check(struct gg_cli *cli, const struct req *q);
/* request --race N: the session to the N best sites, the first ready wins,
 * the others killed and cleaned; the exit code. */
int cli_request_race(struct gg_cli *cli, const struct req *q);

#endif
