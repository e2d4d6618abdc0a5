/* gridgpu/doctor.h (lib/doctor): is everything a session needs in place? The
 * checks of `gridgpu doctor`, for any front end: the configuration and its
 * site, the proxy and its chain, the bearer token, the CA directory, the CE
 * (asked for its REST version and the user's jobs), the OpenSSH tools, each
 * jump host (an ssh login, through the ones before it), and inside a session
 * (or wherever NVML answers) the GPU, the driver against the CUDA runtime,
 * the container runtime and a tiny allocation on the GPU.
 *
 *   struct gg_doctor *d = NULL;
 *   gg_doctor_new(&d, err);
 *   gg_doctor_set_site(d, "mysite", err);      optional: the default site
 *   gg_doctor_run(d, err);                     the checks, in order
 *   for (size_t i = 0; i < gg_doctor_count(d); i++)
 *           ... gg_doctor_title(d, i), gg_doctor_status(d, i), gg_doctor_detail(d, i) ...
 *   gg_doctor_free(d);
 *
 * Each check is ok, failed (with the fix) or skipped (and why, sometimes with
 * a hint). A check's text may hold what a CE or ssh said: escape it before
 * showing it on a terminal. The library prints nothing: a front end that
 * shows the checks as they come gives a progress callback. */
#ifndef GRIDGPU_DOCTOR_H
#define GRIDGPU_DOCTOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gridgpu/engine.h"

enum gg_doctor_status {
	GG_DOCTOR_OK,
	GG_DOCTOR_FAIL,
	GG_DOCTOR_SKIP,
};

/* The checks to run and, after gg_doctor_run, their results. */
struct gg_doctor;

GG_API int gg_doctor_new(struct gg_doctor **out, struct gg_err *err);
GG_API void gg_doctor_free(struct gg_doctor *d);

/* What to check, before gg_doctor_run; all optional. The configuration file
 * (NULL: $XDG_CONFIG_HOME/gridgpu/config) and the site in it (NULL: its
 * default site; with none, the checks of a site are skipped). */
GG_API int gg_doctor_set_config(struct gg_doctor *d, const char *path, struct gg_err *err);
GG_API int gg_doctor_set_site(struct gg_doctor *d, const char *site, struct gg_err *err);
/* The proxy must last at least secs (default 2 hours). */
GG_API void gg_doctor_set_valid(struct gg_doctor *d, int64_t secs);
/* The engine the CE is opened through (its cancel, log and open_ce); NULL:
 * gg_engine_open_ce's defaults. Not owned; it must outlive gg_doctor_run. */
GG_API void gg_doctor_set_engine(struct gg_doctor *d, struct gg_engine *e);
/* Called with check i as soon as it has its result. */
typedef void (*gg_doctor_progress_fn)(void *ud, const struct gg_doctor *d, size_t i);
GG_API void gg_doctor_set_progress(struct gg_doctor *d, gg_doctor_progress_fn fn, void *ud);

/* Run the checks (once per handle). A check that fails is a result, not an
 * error: the error is GG_ENOMEM, or GG_EUSAGE for a second run. */
GG_API int gg_doctor_run(struct gg_doctor *d, struct gg_err *err);

/* The results, in the order the checks ran. */
GG_API size_t gg_doctor_count(const struct gg_doctor *d);
/* "proxy", "ce", "jump-1", ... (stable, for programs) and "proxy", "CE",
 * "jump host 1", ... (for people). */
GG_API const char *gg_doctor_id(const struct gg_doctor *d, size_t i);
GG_API const char *gg_doctor_title(const struct gg_doctor *d, size_t i);
GG_API enum gg_doctor_status gg_doctor_status(const struct gg_doctor *d, size_t i);
/* What was found (NULL when nothing to say), and what to do: the fix of a
 * failed check, the hint of a skipped one (NULL when none). */
GG_API const char *gg_doctor_detail(const struct gg_doctor *d, size_t i);
GG_API const char *gg_doctor_fix(const struct gg_doctor *d, size_t i);
/* How many checks have that status. */
GG_API size_t gg_doctor_tally(const struct gg_doctor *d, enum gg_doctor_status st);
/* "ok", "fail", "skip". */
GG_API const char *gg_doctor_status_name(enum gg_doctor_status st);
/* The site checked (in the configuration the doctor loaded), or NULL. */
GG_API const struct gg_site *gg_doctor_site(const struct gg_doctor *d);
/* The results as `gridgpu doctor --json` prints them: {"site", "checks":
 * [{"id", "name", "status", "detail", "fix"}...], "passed", "failed",
 * "skipped"}. A new reference; NULL when out of memory. */
GG_API json_t *gg_doctor_json(const struct gg_doctor *d);

#endif
