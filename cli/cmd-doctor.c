/* gridgpu doctor: is everything a session needs in place? Each check says ok,
 * failed (with what to do) or skipped (and why): the credentials, the CA
 * directory, the site's CE and jump hosts, the OpenSSH tools, and inside a
 * session (or wherever NVML answers) the GPU itself, the driver against the
 * CUDA runtime, the container runtime and a tiny allocation on the GPU. The
 * checks are the library's (gridgpu/doctor.h); here they are printed.
 * Exit 0 when nothing failed, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "gridgpu/doctor.h"

enum { O_VALID = 256 };

const struct gg_opt cmd_doctor_opts[] = {
	{"valid", 0, OPT_ARG, "DUR", "the proxy must last at least DUR (default 2h)", O_VALID},
	OPT_END,
};

static void print(struct gg_cli *cli, const struct gg_doctor *d)
{
	int color = ui_color();
	size_t w = 0, n = gg_doctor_count(d);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(gg_doctor_title(d, i));
		w = l > w ? l : w;
	}
	const struct gg_site *site = gg_doctor_site(d);
	if (!cli->quiet && site)
		ui_out("site %s (%s)\n", site->name, site->ce ? site->ce : "no CE");
	for (size_t i = 0; i < n; i++) {
		enum gg_doctor_status st = gg_doctor_status(d, i);
		const char *detail = gg_doctor_detail(d, i), *fix = gg_doctor_fix(d, i);
		const char *mark = st == GG_DOCTOR_OK     ? "\xe2\x9c\x93"
				   : st == GG_DOCTOR_FAIL ? "\xe2\x9c\x97"
							  : "-";
		const char *col = !color                 ? ""
				  : st == GG_DOCTOR_OK   ? "\033[32m"
				  : st == GG_DOCTOR_FAIL ? "\033[31m"
							 : "\033[2m";
		if (cli->quiet && st != GG_DOCTOR_FAIL)
			continue;
		fputs(col, stdout); /* ours */
		ui_out("%s", mark);
		fputs(color ? "\033[0m" : "", stdout);
		ui_out(" %-*s  %s%s\n", (int)w, gg_doctor_title(d, i),
		       st == GG_DOCTOR_SKIP ? "skipped: " : "", detail ? detail : "");
		if (st != GG_DOCTOR_OK && fix)
			ui_out("  %-*s  %s: %s\n", (int)w, "",
			       st == GG_DOCTOR_FAIL ? "fix" : "hint", fix);
	}
	if (!cli->quiet)
		ui_out("%zu passed, %zu failed, %zu skipped\n", gg_doctor_tally(d, GG_DOCTOR_OK),
		       gg_doctor_tally(d, GG_DOCTOR_FAIL), gg_doctor_tally(d, GG_DOCTOR_SKIP));
}

/* --valid DUR into *valid; 0, or the exit code of a bad command line. */
static int parse_opts(struct gg_cli *cli, int argc, char **argv, int64_t *valid)
{
	struct gg_err err = {0};
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_doctor_opts)) > 0) {
		if (c == O_VALID && gg_duration_parse_unit(cli->optarg, valid, &err) < 0)
			return ui_usage(cli, "--valid: %s", err.msg);
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind)
		return ui_usage(cli, "doctor takes no arguments");
	return 0;
}

/* The doctor's settings: the configuration, the site, the proxy's lifetime,
 * the CE opened as every command opens it (-v's log, Ctrl-C). */
static int setup(struct gg_cli *cli, struct gg_doctor *d, int64_t valid, struct gg_engine **e,
		 struct gg_err *err)
{
	const char *cfg = cli->config_path ? cli->config_path : getenv("GRIDGPU_CONFIG");
	if (!(*e = cli_ce_engine(cli, err)))
		return -1;
	gg_doctor_set_valid(d, valid);
	gg_doctor_set_engine(d, *e);
	if (gg_doctor_set_config(d, cfg, err) < 0 || gg_doctor_set_site(d, cli->site, err) < 0)
		return -1;
	return 0;
}

int cmd_doctor(struct gg_cli *cli, int argc, char **argv)
{
	int64_t valid = 2 * 3600;
	int rc = parse_opts(cli, argc, argv, &valid);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	cli_catch_interrupt();
	struct gg_err err = {0};
	/* The proxy's key and the bearer token are read: no core dumps. */
	if (gg_cred_disable_core_dumps(&err) < 0)
		ui_warn(cli, "%s", err.msg);
	struct gg_doctor *d = NULL;
	struct gg_engine *e = NULL;
	if (gg_doctor_new(&d, &err) < 0 || setup(cli, d, valid, &e, &err) < 0 ||
	    gg_doctor_run(d, &err) < 0) {
		gg_doctor_free(d);
		gg_engine_free(e);
		return ui_fail(cli, &err, "doctor");
	}
	if (cli->json)
		ui_json_doc("doctor", gg_doctor_json(d));
	else
		print(cli, d);
	int failed = gg_doctor_tally(d, GG_DOCTOR_FAIL) > 0;
	gg_doctor_free(d);
	gg_engine_free(e);
	return failed ? EXIT_FAIL : EXIT_OK;
}
