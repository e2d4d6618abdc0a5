/* Helpers shared by the commands that talk to sites and sessions. */
#ifndef GG_CLI_CTX_H
#define GG_CLI_CTX_H

#include "cli.h"
#include "gridgpu/ce.h"
#include "gridgpu/cred.h"
#include "gridgpu/engine.h"
#include "gridgpu/session.h"
#include "interrupt.h"

/* The site from --site or the default one; NULL (error printed when required,
 * or when --site names no site; cli->cfg_exit set) when none. */
const struct gg_site *cli_site(struct gg_cli *cli, int required);
/* The sites: every --site given, in order (at most max), else the default
 * one. 0, or the exit code after saying what is wrong. */
int cli_sites(struct gg_cli *cli, const struct gg_site **sites, int max, int *nsites);

/* An engine without store or configuration, for opening CEs
 * (gg_engine_open_ce): Ctrl-C stops its calls, -v/-vv show each request. */
struct gg_engine *cli_ce_engine(struct gg_cli *cli, struct gg_err *err);

/* The session engine of this run: the store and the configuration, messages
 * through ui_*, Ctrl-C as its cancel. NULL after an error was printed
 * (cli->cfg_exit set). Freed by cli_engine_free at the end of the run. */
struct gg_engine *cli_engine(struct gg_cli *cli);
/* Those callbacks, for a command that changes one of them for a while. */
void cli_engine_callbacks(struct gg_cli *cli, struct gg_engine_callbacks *cb);
void cli_engine_free(struct gg_cli *cli);
/* At the end of the run: the engine, the configuration. */
void cli_free(struct gg_cli *cli);
/* The exit code of an engine call's result (0, or a negative GG_E* code). */
int cli_exit_of(int rc);
/* gg_engine_wait_ready, showing its progress on stderr. */
int cli_wait_ready(struct gg_cli *cli, struct gg_ce *ce, struct gg_record *r, int64_t timeout,
		   struct gg_err *err);
/* gg_engine_race_wait (request --race), showing its progress the same way. */
int cli_race_wait(struct gg_cli *cli, struct gg_ce **ces, struct gg_record *recs, size_t n,
		  int64_t timeout, size_t *winner, struct gg_err *err);

/* --dry-run (dryrun.c): show the descriptions and requests, send nothing. */
int cli_dry_run_session(struct gg_cli *cli, const struct gg_session_spec *spec,
			const struct gg_site *site, const struct gg_record *r);
int cli_dry_run_jobs(struct gg_cli *cli, const struct gg_job_spec *spec,
		     const struct gg_site *const *sites, int nsites, int count);

/* submit's sites (submit-sites.c): those --site names, or with --site auto or
 * --site A,B the matchmaking's, best first (the ranking shown with -v and
 * --dry-run, the choice in one line); 0, or the exit code. request takes the
 * first of them when the user asks it to choose (cli_site_choice). */
int cli_site_choice(const struct gg_cli *cli);
/* request's site: cli_site's (need: without --ce), or with --site auto or A,B
 * the matchmaking's best for the session's image (a SIF here: its architecture,
 * NULL: none); 0, or the exit code. */
int cli_request_site(struct gg_cli *cli, const struct gg_jd_resources *res, const char *image,
		     int dry_run, int need, const struct gg_site **site);
/* submit's sites, best first (arch: the image's, or NULL), at most max. */
int cli_submit_sites(struct gg_cli *cli, const struct gg_jd_resources *res, const char *arch,
		     int dry_run, const struct gg_site **sites, int max, int *nsites);
/* --count N jobs round-robin over sites, each to the first from its turn
 * that takes it; the exit code. */
int cli_submit_spread(struct gg_cli *cli, const struct gg_job_spec *spec, int count,
		      const char *name, int token, const struct gg_site *const *sites, int nsites);

/* submit --input-list FILE into spec (gg_job_spec_add_each_input), each line
 * checked; 0 or the exit code after saying what is wrong. */
int cli_read_input_list(struct gg_cli *cli, const char *path, struct gg_job_spec *spec);

struct gg_store *cli_store(struct gg_cli *cli);
/* A file of ours in libexec to stage (malloc'd): the session launcher, the
 * batch wrapper. NULL after saying that the (what) is missing (cmd: the
 * command that needed it). */
char *cli_libexec(struct gg_cli *cli, const char *name, const char *what, const char *cmd);
/* Load a record by name; prints "no such session or job (known: ...)", exit 5. */
int cli_find_record(struct gg_cli *cli, struct gg_store *st, const char *name, struct gg_record *r);

/* A local file named on the command line (an image, an input): a readable
 * regular file, else GG_EUSAGE (missing, not a regular file: exit 2) or GG_EIO
 * (unreadable), with why in err. */
int cli_local_file(const char *path, struct gg_err *err);

#endif
