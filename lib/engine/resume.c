/* request --resume S: a new session whose sandbox is S's as it ended. The image
 * staged with it is made here, as freeze --session S makes one after S ended: from
 * the image S was made from and the snapshot of its changes the launcher wrote
 * (both fetched from S's job directory at its CE, removed after; lib/node/snapshot.c),
 * so the new session's sandbox holds S's files, edits, deletions and installed
 * packages, at S's site or another. What a freeze leaves out (/tmp, package caches)
 * is not carried. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "gridgpu/node.h"
#include "image/image.h"

int gg_session_resumable(const struct gg_record *r, struct gg_err *err)
{
	if (r->kind != GG_REC_SESSION)
		return gg_err_set(err, GG_EUSAGE,
				  "'%s' is a batch job: only a session can be resumed", r->name);
	if (!gg_sess_state_ended(r->state))
		return gg_err_set(err, GG_EUSAGE,
				  "session '%s' %s: 'gridgpu kill %s' ends it and saves its "
				  "sandbox, then resume it",
				  r->name, gg_sess_state_phrase(r->state), r->name);
	if (!r->job_id || !r->image ||
	    !strncmp(r->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK)))
		return gg_err_set(err, GG_ENOTFOUND,
				  "session '%s' had no sandbox to resume (only a session requested "
				  "with --image of this machine's keeps one)",
				  r->name);
	if (r->snapshot_size <= 0 || !r->snapshot_at)
		return gg_err_set(
			err, GG_ENOTFOUND,
			"session '%s' ended without a snapshot of its sandbox: %s", r->name,
			r->snapshot_error ? r->snapshot_error : "nothing to resume it from");
	return 0;
}

int gg_resume_wants_sync(const struct gg_record *r)
{
	return r->kind == GG_REC_SESSION &&
	       (!gg_sess_state_ended(r->state) || (!r->snapshot_at && !r->snapshot_error));
}

int gg_engine_resumable(struct gg_engine *e, struct gg_record *r, struct gg_err *err)
{
	if (e && gg_resume_wants_sync(r))
		gg_engine_sync(e, r, 1, 0); /* a CE that cannot say: the record as it was */
	return gg_session_resumable(r, err);
}

int gg_session_spec_set_resume(struct gg_session_spec *q, const struct gg_record *from,
			       struct gg_err *err)
{
	int rc = gg_session_resumable(from, err);
	if (rc < 0)
		return rc;
	struct gg_record *copy = calloc(1, sizeof *copy);
	if (!copy || gg_record_copy(copy, from) < 0) {
		free(copy);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if ((rc = gg_session_spec_set_image(q, from->image, err)) < 0) {
		gg_record_clear(copy);
		free(copy);
		return rc;
	}
	gg_session_spec_resume_clear(q);
	q->resume = copy;
	return 0;
}

void gg_session_spec_resume_clear(struct gg_session_spec *q)
{
	if (q->resume)
		gg_record_clear(q->resume);
	free(q->resume);
	q->resume = NULL;
}

const char *gg_session_spec_resumed_from(const struct gg_session_spec *q)
{
	return q->resume ? q->resume->name : NULL;
}

static int resume_cancel(void *ud)
{
	struct gg_engine *e = ud;
	return e->cancel && e->cancel(e->ud);
}

int gg_session_resume_image(struct gg_engine *e, const struct gg_record *from, const char *output,
			    struct gg_err *err)
{
	if (!e)
		return gg_err_set(err, GG_EFAIL, "no engine to reach session '%s''s CE",
				  from->name);
	struct gg_session_freeze *sf = NULL;
	int rc = gg_session_freeze_new(&sf, err);
	struct gg_freeze_opts o = {.output = output, .force = 1, .tool_version = GG_VERSION};
	struct gg_image_callbacks cb = {.cancel = resume_cancel, .ud = e};
	struct gg_freeze_result res;
	if (rc == 0) {
		gg_engine_notef(e, GG_NOTE_INFO,
				"making the sandbox of session %s (its image and snapshot, from "
				"its CE) to stage with the session",
				from->name);
		rc = gg_session_freeze_snapshot(sf, e, from, &o, &cb, &res, err);
	}
	if (rc < 0)
		gg_err_prefix(err, "--resume %s", from->name);
	gg_session_freeze_free(sf);
	return rc;
}
