/* Records refreshed from their CE (the part of the engine that talks to a CE). */
#ifndef GG_ENGINE_SYNC_H
#define GG_ENGINE_SYNC_H

#include "ce/ce.h"
#include "node/node.h"
#include "store/store.h"

/* The files of a session's directory are lib/node's (node/node.h). */
/* Names of a batch job's own files in its directory. */
#define GG_JOB_IMAGE_NAME "image.sif"
#define GG_WRAPPER_NAME   "gridgpu-wrapper"
#define GG_JOB_OUT_NAME   "gridgpu-job.out"
#define GG_JOB_ERR_NAME   "gridgpu-job.err"

/* Apply one CE answer to a record (and, for running sessions, read the
 * launcher's file through ce when not NULL). A session whose launcher has
 * published its sshd stays "starting" with node, port and host key filled in:
 * gg_session_published() tells, and the caller makes it "ready" once the sshd
 * has answered (gg_session_probe). */
void gg_session_apply(struct gg_ce *ce, struct gg_record *r, const struct gg_ce_result *res);
/* Refresh records that all live on ce with one bulk status call. When the CE
 * cannot be reached the records become "unknown" (kept) and the error is
 * returned. */
int gg_session_refresh(struct gg_ce *ce, struct gg_record *recs, size_t n, struct gg_err *err);
/* What the CE said of the batch system's view of a record it holds queued:
 * the batch system's id of the job, and its own word ("LRMS: ...") where the
 * CE passes it on; each NULL when not known. */
struct gg_lrms_seen {
	char *local_id;
	char *message;
};
/* gg_session_refresh, filling seen[i] (n of them, zeroed by the caller) for
 * recs[i]; seen may be NULL. */
int gg_session_refresh_lrms(struct gg_ce *ce, struct gg_record *recs, size_t n,
			    struct gg_lrms_seen *seen, struct gg_err *err);
void gg_lrms_seen_clear(struct gg_lrms_seen *s, size_t n);
/* A one-line summary of why a job failed, from the CE's diagnostics and the
 * launcher's log. malloc'd in *summary; -1 when nothing could be read. */
int gg_session_diagnose(struct gg_ce *ce, const struct gg_record *r, char **summary);

#endif
