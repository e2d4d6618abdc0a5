/* lib/ce: the public part is include/gridgpu/ce.h; here what only the
 * library, the gridgpu command and the tests use. */
#ifndef GG_LIB_CE_H
#define GG_LIB_CE_H

#include <jansson.h>

#include "core/core.h"
#include "gridgpu/ce.h"
#include "http/http.h"

/* gg_ce_open with the site profile the endpoint is one of (borrowed for
 * the open; NULL: none): its jump hosts, identity, known_hosts and GPU
 * mapping, what a slurm+ssh:// CE is reached and asked by. */
int gg_ce_open_site(const char *endpoint, const struct gg_ce_auth *auth, const struct gg_site *site,
		    struct gg_ce **out, struct gg_err *err);
/* gg_ce_open_site whose requests go through the connection keeper at
 * keep_sock while it answers (NULL: none; an https:// CE with a proxy only). */
int gg_ce_open_kept(const char *endpoint, const struct gg_ce_auth *auth, const struct gg_site *site,
		    const char *keep_sock, struct gg_ce **out, struct gg_err *err);
/* The same with a given backend (tests plug in a fake one this way). */
int gg_ce_open_with(const struct gg_ce_ops *ops, const char *endpoint,
		    const struct gg_ce_auth *auth, struct gg_ce **out, struct gg_err *err);
/* A second handle on ce's CE (the same credential and deadline, a connection
 * of its own), for two requests at once; GG_EUSAGE when the backend has none. */
int gg_ce_clone(struct gg_ce *ce, struct gg_ce **out, struct gg_err *err);
/* 1 when status's reason for a queued job is the batch system's word
 * (slurm+ssh: Slurm's pending reason, in the user's words). */
int gg_ce_status_lrms(const struct gg_ce *ce);
/* Submit a description: the backend's own way when it has one (slurm+ssh
 * writes a job script), else its xRSL with gg_ce_submit. */
int gg_ce_submit_jd(struct gg_ce *ce, const struct gg_jobdesc *jd, char **id, struct gg_err *err);
/* A slurm+ssh:// CE URL, its parts (slurm.c): user (NULL: the local user's
 * name), host, port (0: 22), dir (the shared directory jobs go under; NULL:
 * "gridgpu-jobs" in the login's home). GG_EUSAGE naming what is wrong. */
struct gg_slurm_url {
	char user[64], host[256], dir[512];
	int port, has_user, has_dir;
};
int gg_slurm_url_parse(const char *url, struct gg_slurm_url *u, struct gg_err *err);
/* 1 when url is a slurm+ssh:// URL (by its scheme). */
int gg_slurm_url_is(const char *url);
/* Slurm's state name (squeue %T, sacct State: "PENDING", "CANCELLED by 0")
 * as a CE state. */
enum gg_ce_state gg_slurm_state(const char *state);
/* A failed end state of Slurm's (sacct State, squeue %T; exit: sacct's
 * ExitCode "N:S", or NULL) in the user's words, Slurm's word beside them:
 * "out of memory: ... (Slurm: OUT_OF_MEMORY)"; TIMEOUT is "Slurm: TIMEOUT",
 * which gg_slurm_failed_walltime knows. NULL when the state is not a failed
 * one. malloc'd. */
char *gg_slurm_end_phrase(const char *state, const char *exit);
/* 1 when a slurm+ssh CE's "failed" diagnostics say Slurm ended the job at its
 * time limit (TIMEOUT). */
int gg_slurm_failed_walltime(const char *failed);
/* For each results[i] still without a code (ids[i] a job squeue no longer
 * shows), what text says of it (sacct.c): sacct's "ID|STATE|EXITCODE" lines
 * (-n -P -X -o JobIDRaw,State,ExitCode), else the "dir|ID|EXIT[|STAGE|FAILURE]"
 * line of its job directory (EXIT: the status the job script left, or empty;
 * STAGE "out": the login node is putting its outputs, the job finishing;
 * FAILURE: the line a failed staging left, which makes the job failed with it
 * as its reason; both whatever sacct said). Lines that do not parse are skipped;
 * fields are kept printable. */
void gg_slurm_parse_sacct(const char *text, size_t len, const char *const *ids, size_t n,
			  struct gg_ce_result *res);

/* Small JSON files where what was learned about CEs is kept (REST versions,
 * delegations): an empty object when missing or unreadable; saved atomically,
 * 0600, best effort. */
json_t *gg_ce_cache_load(const char *path);
void gg_ce_cache_save(const char *path, json_t *cache);
/* The HTTP handle (connections count, for tests and benchmarks); NULL for a
 * backend without one. */
struct gg_http *gg_ce_http(struct gg_ce *ce);
/* Parse helpers, exposed for tests and fuzzing: A-REX JSON bulk answers, one
 * element or an array, into results (in the answer's order). */
int gg_arc_parse_jobs(const char *body, size_t len, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err);
enum gg_ce_state gg_arc_state(const char *rest_state);
/* A-REX's jobs?action=info answer: per job its id, the state its GLUE2 State
 * list says (GG_CE_QUEUED for nordugrid:INLRMS:Q) and that nordugrid state as
 * raw_state ("INLRMS:Q"), and as reason the batch system's id of the job
 * (LocalIDFromManager) followed, when A-REX passes on the batch system's word
 * (an OtherMessages entry "LRMS: ..."), by a newline and that entry; jobs
 * without an info document are left out. */
int gg_arc_parse_info(const char *body, size_t len, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err);
/* 1 when A-REX's "failed" diagnostics (GET jobs/ID/diagnose/failed) say the
 * batch system ended the job at its time limit ("LRMS error: (271) Job
 * timeout" from the Slurm back end, and the other back ends' words). */
int gg_arc_failed_walltime(const char *failed);
/* 1 when A-REX's errors log of a job (GET jobs/ID/diagnose/errors) holds the
 * batch system's refusal of it ("sbatch: error: Batch job submission failed:
 * ..."), or a runtime environment's refusal at stage 0 (the line before
 * A-REX's "ERROR: Runtime script NAME stage 0 execution failed"): the last
 * such line, trimmed to 300 characters, into out. */
int gg_arc_lrms_refusal(const char *errors, char *out, size_t len);
/* The batch system's view of jobs gg_ce_status calls running: queued there or
 * running (results[i] for ids[i]; GG_CE_UNKNOWN when the CE does not say;
 * reason as gg_arc_parse_info gives it, or NULL).
 * An error when the backend cannot tell (callers then keep status's word). */
int gg_ce_lrms_status(struct gg_ce *ce, const char *const *ids, size_t n,
		      struct gg_ce_result **results, struct gg_err *err);

/* How many storage inputs A-REX still has to fetch, from its job.ID.input
 * (GET jobs/ID/diagnose/input: "/NAME URL [CREDENTIAL]" for each one still to
 * fetch, "/NAME" for the client's uploads); lines are dropped as files
 * arrive. */
int gg_arc_inputs_pending(const char *input);
/* Which file A-REX's data staging failed on, and why, from the job's errors
 * log (GET jobs/ID/diagnose/errors: its DTR lines): "staging in of NAME from
 * URL failed: REASON" or "staging out of NAME to URL failed: REASON", the
 * storage's own words where the plug-in logged them (A-REX's summary is often
 * only "Transfer timed out"). 1 when found (out filled, printable), else 0. */
int gg_arc_staging_failure(const char *errors, char *out, size_t len);

/* What a CE offers, from its GLUE2 information (glue2.c): an object with, where
 * the CE says them, name, batch_system, running, waiting (in the batch system
 * and before it), total_slots, platform, os, and the arrays shares (each
 * {name, free_slots, running, waiting}) and rtes (names). Numbers are checked,
 * texts kept only when short printable ASCII. GG_EPROTO for a document that is
 * not GLUE2. gg_glue2_offer parses the text first (fuzzed). */
int gg_glue2_offer_json(json_t *doc, json_t **out, struct gg_err *err);
int gg_glue2_offer(const char *body, size_t len, json_t **out, struct gg_err *err);
/* The CE's offer (gg_glue2_offer_json's object, *out malloc'd); GG_EUSAGE for a
 * backend that cannot say. */
int gg_ce_offer(struct gg_ce *ce, json_t **out, struct gg_err *err);

#endif
