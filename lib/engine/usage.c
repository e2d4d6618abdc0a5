/* What a session's work used, read from its job's directory at its CE. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "gridgpu/node.h"

int gg_engine_usage(struct gg_engine *e, const struct gg_record *r, struct gg_usage *u,
		    struct gg_err *err)
{
	struct gg_ce *ce = NULL;
	char *text = NULL;
	size_t len = 0;
	struct gg_err ge = {0};
	memset(u, 0, sizeof *u);
	if (r->kind != GG_REC_SESSION || !r->job_id)
		return gg_err_set(err, GG_ENOTFOUND, "'%s' is no session at a CE", r->name);
	int rc = gg_engine_open_record_ce(e, r, &ce, err);
	if (rc == 0 && gg_ce_get(ce, r->job_id, GG_USAGE_NAME, 8192, &text, &len, &ge) < 0)
		rc = ge.code == GG_ENOTFOUND
			     ? gg_err_set(err, GG_ENOTFOUND,
					  "the node of session '%s' sampled nothing (yet)", r->name)
			     : gg_err_set(err, ge.code, "%s", ge.msg);
	if (rc == 0)
		rc = gg_usage_parse(text, len, u, err);
	free(text);
	gg_ce_free(ce);
	return rc;
}
