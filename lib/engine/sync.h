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
/* How the command ended, as the wrapper records it (libexec/gridgpu/
 * batch-wrapper's record_end): "gridgpu-job-exit 1", then "exit N" (its exit
 * status as the shell gives it: 128 + S when signal S killed it), "oom-kills N"
 * (the job's cgroup's out-of-memory kills while it ran), "stderr-bytes N" (what
 * it wrote to stderr), each on its line, then "stderr" and the last bytes of
 * that stderr (at most GG_JOB_EXIT_TAIL). Absent when the command never ran. */
#define GG_JOB_EXIT_NAME  "gridgpu-job.exit"
#define GG_JOB_EXIT_TAIL  4096 /* the wrapper's bound of the stderr it keeps */
#define GG_JOB_EXIT_MAX   8192 /* what the client reads of the file */
#define GG_JOB_EXIT_LINES 5    /* the lines of stderr status shows */
#define GG_JOB_EXIT_LINE  200  /* the bytes of each line it keeps */

struct gg_job_exit {
	int64_t status;       /* 0-255 */
	int64_t oom_kills;    /* 0 when none or not known */
	int64_t stderr_bytes; /* -1 when not known */
	char *tail;           /* the last lines of stderr, each made printable (gg_str_printable)
			       * and bounded, '\n' between them; NULL when it wrote none */
};
/* Parse the wrapper's file (outside text, any bytes): GG_EPROTO with why when
 * it is not one. Clear *x with gg_job_exit_clear either way. */
int gg_job_exit_parse(const char *text, size_t len, struct gg_job_exit *x, struct gg_err *err);
void gg_job_exit_clear(struct gg_job_exit *x);
/* The user's words for a command's end: "the command exited 3", "the command
 * was killed by signal 9 (KILL)", "the command ran out of its memory: ...".
 * malloc'd; NULL when out of memory. */
char *gg_job_exit_summary(int64_t status, int64_t oom_kills);

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
