/* request --resume S: S's record, brought up to date from its CE, checked before
 * anything is made or sent to any CE; S's GPUs, and its site, are the new
 * session's unless given. The library stages S's sandbox as it ended
 * (gg_session_spec_set_resume, gg_session_stage). */
#include "request.h"
#include "ctx.h"
#include "gridgpu/session.h"

/* S's record, checked (and brought up to date from its CE unless a dry run) by the
 * library; 0 or the exit code after saying what is wrong. */
static int load(struct gg_cli *cli, const struct req *q, struct gg_record *from)
{
	struct gg_engine *e = q->dry_run ? NULL : cli_engine(cli);
	struct gg_store *own = e ? NULL : cli_store(cli), *st = e ? gg_engine_store(e) : own;
	if (!st)
		return cli->cfg_exit ? cli->cfg_exit : EXIT_FAIL;
	int rc = cli_find_record(cli, st, q->resume, from);
	gg_store_free(own);
	if (rc)
		return rc;
	struct gg_err err = {0};
	if (gg_engine_resumable(e, from, &err) < 0)
		return ui_fail(cli, &err, "request --resume %s", q->resume);
	return 0;
}

int cli_request_resume(struct gg_cli *cli, struct req *q)
{
	struct gg_record *from = &q->from;
	if (q->image)
		return ui_usage(cli, "--resume and --image exclude each other (the session "
				     "resumed has its image)");
	if (q->race)
		return ui_usage(cli, "--resume and --race exclude each other");
	int rc = load(cli, q, from);
	if (rc)
		return rc;
	if (!q->gpus_given) {
		q->res.gpus = from->gpus;
		q->res.mig = from->mig;
	}
	if (!cli->site && !q->ce && from->site)
		cli->site = from->site;
	else if (!cli->site && !q->ce)
		q->ce = from->ce;
	return 0;
}
