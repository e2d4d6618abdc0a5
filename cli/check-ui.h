/* gridgpu check and submit --check: the options they share (CLI_CHECK_OPTS), and the
 * check run with its report (the library's gg_check_*). */
#ifndef GG_CLI_CHECK_UI_H
#define GG_CLI_CHECK_UI_H

#include "cli.h"
#include "gridgpu/engine.h"

enum {
	O_CHECK_SESSION = 768,
	O_CHECK_MODULE,
};

#define CLI_CHECK_OPTS(session_help)                                                    \
	{"session", 0, OPT_SESSION, "NAME", session_help, O_CHECK_SESSION},             \
	{                                                                               \
		"module", 0, OPT_ARG, "MODULE",                                         \
			"a Python module the command needs: imported in both (repeat)", \
			O_CHECK_MODULE                                                  \
	}

/* One of CLI_CHECK_OPTS's options into *chk (made on first use): 0 when taken, 1 when
 * c is not one of them, or the exit code after saying what is wrong. */
int cli_check_opt(struct gg_cli *cli, int c, struct gg_check **chk);
/* Run the check of spec (its wrapper set): the differences said, and with json
 * (check --json) the document printed. EXIT_OK when the image runs the command as the
 * session does, 6 when it does not (before_submit: said as the error "nothing
 * submitted"), or the exit code of the error. */
int cli_check_run(struct gg_cli *cli, struct gg_check *chk, struct gg_job_spec *spec,
		  int before_submit);

#endif
