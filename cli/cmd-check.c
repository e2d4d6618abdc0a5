/* gridgpu check: run an image the way its batch job will, on a live session's node,
 * beside the session, and say where the two differ (gg_check_*). */
#include <stdlib.h>
#include <string.h>

#include "check-ui.h"
#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "freeze-ui.h"

enum {
	O_BIND = 256,
	O_TIMEOUT,
};

const struct gg_opt cmd_check_opts[] = {
	CLI_CHECK_OPTS("the session to compare with (default: the image's, else the only "
		       "ready one)"),
	{"bind", 0, OPT_ARG, "SRC[:DST]", "a path of the node in the job's container (repeat)",
	 O_BIND},
	{"timeout", 0, OPT_ARG, "DUR", "give a run up after DUR without output (default 10m)",
	 O_TIMEOUT},
	OPT_END,
};

struct chk {
	struct gg_check *chk;
	struct gg_job_spec *spec;
	const char *image;
};

static int apply_opt(struct gg_cli *cli, int c, struct chk *k)
{
	struct gg_err err = {0};
	int rc = cli_check_opt(cli, c, &k->chk);
	if (rc != 1)
		return rc;
	if (c == O_BIND)
		return gg_job_spec_add_bind(k->spec, cli->optarg, &err)
			       ? ui_usage(cli, "%s", err.msg)
			       : 0;
	int64_t t = 0;
	if ((rc = cli_opt_duration(cli, &t)))
		return rc;
	if (t <= 0)
		return ui_usage(cli, "--timeout must be more than 0");
	if (!k->chk && gg_check_new(&k->chk, &err) < 0)
		return ui_fail(cli, &err, "check");
	gg_check_set_timeout(k->chk, t);
	return 0;
}

/* The options, IMAGE, and the command after "--": 0, -2 after --help, or the exit
 * code after saying what is wrong. */
static int parse(struct gg_cli *cli, int argc, char **argv, struct chk *k)
{
	int c, rc, dd = cli_dashdash(argc, argv);
	while ((c = cli_next_opt(cli, dd, argv, cmd_check_opts)) > 0)
		if ((rc = apply_opt(cli, c, k)))
			return rc;
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (dd - cli->optind != 1 || dd >= argc - 1)
		return ui_usage(cli, "check: expected IMAGE, then -- COMMAND [ARGS...]");
	k->image = argv[cli->optind];
	struct gg_err err = {0};
	if (!k->chk && gg_check_new(&k->chk, &err) < 0)
		return ui_fail(cli, &err, "check");
	if (gg_job_spec_set_command(k->spec, (const char *const *)argv + dd + 1, argc - dd - 1,
				    &err) < 0)
		return ui_usage(cli, "%s", err.msg);
	return 0;
}

/* The image as a SIF (frozen on the fly as submit does) and the batch wrapper. */
static int prepare(struct gg_cli *cli, struct chk *k)
{
	enum gg_job_image_how how;
	int rc = cli_job_image(cli, k->spec, k->image, 0, NULL, &how);
	if (rc)
		return rc;
	char *wrapper = cli_libexec(cli, "batch-wrapper", "batch wrapper", "check");
	if (!wrapper)
		return EXIT_FAIL;
	struct gg_err err = {0};
	rc = gg_job_spec_set_wrapper(k->spec, wrapper, &err) < 0 ? ui_fail(cli, &err, "check") : 0;
	free(wrapper);
	return rc;
}

int cmd_check(struct gg_cli *cli, int argc, char **argv)
{
	struct chk k = {0};
	struct gg_err err = {0};
	if (gg_job_spec_new(&k.spec, &err) < 0)
		return ui_fail(cli, &err, "check");
	int rc = parse(cli, argc, argv, &k);
	if (!rc)
		rc = prepare(cli, &k);
	if (!rc)
		rc = cli_check_run(cli, k.chk, k.spec, 0);
	gg_check_free(k.chk);
	gg_job_spec_free(k.spec);
	return rc == -2 ? EXIT_OK : rc;
}
