/* gridgpu check and submit --check: the shared options, the run, the report. */
#include <stdlib.h>
#include <string.h>

#include "check-ui.h"
#include "ctx.h"

int cli_check_opt(struct gg_cli *cli, int c, struct gg_check **chk)
{
	if (c != O_CHECK_SESSION && c != O_CHECK_MODULE)
		return 1;
	struct gg_err err = {0};
	if (!*chk && gg_check_new(chk, &err) < 0)
		return ui_fail(cli, &err, "check");
	int rc = c == O_CHECK_SESSION ? gg_check_set_session(*chk, cli->optarg, &err)
				      : gg_check_add_module(*chk, cli->optarg, &err);
	return rc < 0 ? (err.code == GG_EUSAGE ? ui_usage(cli, "%s", err.msg)
					       : ui_fail(cli, &err, "check"))
		      : 0;
}

static json_t *check_json(const struct gg_check *chk)
{
	json_t *doc = json_object(), *diffs = json_array(), *ex = json_object();
	int s = -1, j = -1;
	gg_check_exits(chk, &s, &j);
	gg_json_set(ex, "session", s >= 0 ? json_integer(s) : json_null());
	gg_json_set(ex, "image", j >= 0 ? json_integer(j) : json_null());
	const char *kind, *name, *sv, *iv, *line;
	for (size_t i = 0; gg_check_difference(chk, i, &kind, &name, &sv, &iv, &line) == 0; i++)
		gg_json_append(diffs, gg_json_object("kind", gg_json_text(kind), "name",
						     gg_json_text(name), "session",
						     sv ? gg_json_text(sv) : json_null(), "image",
						     iv ? gg_json_text(iv) : json_null(), "line",
						     gg_json_text(line), NULL));
	gg_json_set(doc, "session", gg_json_text(gg_check_session(chk)));
	gg_json_set(doc, "same", json_boolean(gg_check_count(chk) == 0));
	gg_json_set(doc, "exit", ex);
	gg_json_set(doc, "image_sent_bytes", json_integer((json_int_t)gg_check_sent(chk)));
	gg_json_set(doc, "differences", diffs);
	return doc;
}

/* The differences on stdout, each one line; what the runs last said when the exit
 * statuses differ (or the image's run ended early). */
static void report(struct gg_cli *cli, const struct gg_check *chk)
{
	size_t n = gg_check_count(chk);
	int s = -1, j = -1, exits = 0;
	gg_check_exits(chk, &s, &j);
	if (!n) {
		ui_out("the image runs it as the session %s does (exit %d)\n",
		       gg_check_session(chk), s);
		return;
	}
	ui_out("the image does not run it as the session %s does (%zu difference%s):\n",
	       gg_check_session(chk), n, n == 1 ? "" : "s");
	const char *kind, *name, *sv, *iv, *line;
	for (size_t i = 0; gg_check_difference(chk, i, &kind, &name, &sv, &iv, &line) == 0; i++) {
		char *l = gg_strdup_printf("  %s", line);
		ui_out_lines(l ? l : "  (out of memory)"); /* the library's lines are escaped */
		free(l);
		exits |= !strcmp(kind, "exit");
	}
	for (int w = 0; exits && w < 2; w++) {
		const char *said = gg_check_said(chk, w);
		if (!said)
			continue;
		ui_info(cli, "what the %s's run wrote last:", w ? "image" : "session");
		ui_info_lines(cli, said);
	}
}

int cli_check_run(struct gg_cli *cli, struct gg_check *chk, struct gg_job_spec *spec,
		  int before_submit)
{
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_err err = {0};
	cli_catch_interrupt();
	if (gg_check_run(chk, e, spec, &err) < 0)
		return ui_fail(cli, &err, "check%s%s", gg_check_session(chk) ? " in " : "",
			       gg_check_session(chk) ? gg_check_session(chk) : "");
	size_t n = gg_check_count(chk);
	if (cli->json && !before_submit)
		ui_json_doc("check", check_json(chk));
	else if (!cli->json)
		report(cli, chk);
	if (!n)
		return EXIT_OK;
	const char *kind, *name, *sv, *iv, *line;
	gg_check_difference(chk, 0, &kind, &name, &sv, &iv, &line);
	gg_err_set(&err, GG_EDIFFER, "%zu difference%s between the session and the image%s%s%s%s",
		   n, n == 1 ? "" : "s", cli->json ? " (" : "", cli->json ? line : "",
		   cli->json ? ")" : "", before_submit ? ": nothing submitted" : "");
	if (cli->json && !before_submit) /* the document says it */
		return gg_err_exit_code(GG_EDIFFER);
	return ui_fail(cli, &err, before_submit ? "submit --check" : "check");
}
