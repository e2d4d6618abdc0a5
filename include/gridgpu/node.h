/* gridgpu/node.h (lib/node): what runs on a session's node, seen from the client. Freeze a
 * live session's sandbox (or a directory on its node) into a SIF image: the node writes a
 * tar of it, through ssh and the site's jump hosts (the session's host key pinned), into
 * gg_image_freeze.
 *
 * Nothing here prints, exits or prompts: errors come back in struct gg_err, warnings and
 * progress through the freeze's callbacks (struct gg_image_callbacks), a remark through
 * the info callback. */
#ifndef GRIDGPU_NODE_H
#define GRIDGPU_NODE_H

#include <stdint.h>

#include "gridgpu/core.h"
#include "gridgpu/image.h"
#include "gridgpu/session.h"

/* The files of a session's directory the client stages or reads (what --dry-run
 * shows it would upload; lib/node/node.def has them all): the launcher, the
 * sshd's authorized keys, with an image the script that enters its container and
 * the image, the session file the launcher publishes, and its log. */
#define GG_LAUNCHER_NAME      "gridgpu-launcher"
#define GG_AUTHKEYS_NAME      "gridgpu-authorized_keys"
#define GG_ENTER_NAME         "gridgpu-enter"
#define GG_SESSION_IMAGE_NAME "gridgpu-image.sif"
#define GG_SESSION_FILE       "gridgpu-session.json"
#define GG_SNAPSHOT_NAME      "gridgpu-snapshot.tar"
#define GG_LAUNCHER_LOG       "gridgpu-launcher.log"
#define GG_USAGE_NAME         "gridgpu-usage"

/* How a session is to be frozen: made by gg_session_freeze_new, set up, run once by
 * gg_session_freeze, freed by gg_session_freeze_free. */
struct gg_session_freeze;
GG_API int gg_session_freeze_new(struct gg_session_freeze **out, struct gg_err *err);
GG_API void gg_session_freeze_free(struct gg_session_freeze *sf);
/* Another directory on the node (as the session's login sees it) instead of the
 * sandbox. */
GG_API int gg_session_freeze_path(struct gg_session_freeze *sf, const char *dir,
				  struct gg_err *err);
/* Leave out paths of the sandbox like pattern ("/opt/data", "/home/x/.cache"; tar's
 * wildcards), after the defaults (its temporary files and package caches) and the
 * session's own mount points. GG_EUSAGE for one that names no path in it. */
GG_API int gg_session_freeze_exclude(struct gg_session_freeze *sf, const char *pattern,
				     struct gg_err *err);
/* How the node compresses the stream: "auto" (zstd, else gzip, else none: the
 * default), "zstd", "gzip", "none". GG_EUSAGE for another word. */
GG_API int gg_session_freeze_link(struct gg_session_freeze *sf, const char *link,
				  struct gg_err *err);
/* Take a path of the session's node (absolute, as a login outside the container sees it:
 * what freeze --session reports) into the image at the same place, and report it no more.
 * GG_EUSAGE for one that is not absolute, is "/" or has a ".." step. */
GG_API int gg_session_freeze_include(struct gg_session_freeze *sf, const char *path,
				     struct gg_err *err);
/* Before the stream, the node is asked what the image will not carry (Python's user site,
 * ~/.local/bin, conda and spack roots under $HOME, exports in shell start-up files, search
 * path entries and mounts outside the sandbox the session's processes use): each is a
 * warning of the callbacks, one line saying what to do. strict: any of them (or no answer)
 * is an error (GG_EUSAGE, at GG_SFREEZE_NODE) and nothing is written. */
GG_API void gg_session_freeze_strict(struct gg_session_freeze *sf, int strict);
/* The i-th of them after gg_session_freeze (kind "usersite", "localbin", "conda",
 * "spack", "startup", "path", "pythonpath", "ldpath" or "bind"; name: a startup file's
 * variable, else NULL; line: what was said), valid until freed; -1 past the last. */
GG_API int gg_session_freeze_unfrozen(const struct gg_session_freeze *sf, size_t i,
				      const char **kind, const char **path, const char **name,
				      const char **line);
/* A remark that is neither progress nor a warning (why the image records no GPU). */
GG_API void gg_session_freeze_on_info(struct gg_session_freeze *sf,
				      void (*info)(void *ud, const char *msg), void *ud);

/* Freeze the sandbox of r (a ready session; its site in cfg) into o->output as
 * gg_image_freeze does (o's source, input_fd and format are the stream's; its labels get
 * the source's and the exclusions' besides); the GPUs the image records are the ones the
 * node recorded for the session's job. The image is installed only once the node said
 * the stream was whole. An output that exists (without o->force) is refused before the
 * node is asked. cb->cancel is polled also between the steps on the way to the node. */
GG_API int gg_session_freeze(struct gg_session_freeze *sf, const struct gg_config *cfg,
			     const struct gg_record *r, const struct gg_freeze_opts *o,
			     const struct gg_image_callbacks *cb, struct gg_freeze_result *res,
			     struct gg_err *err);

/* The same for a session that has ended (r, its CE reached through e): its sandbox as the
 * launcher's snapshot at the end saw it, made from the image the session was made from and the
 * snapshot (both fetched from the job's directory into the cache, removed after): the
 * image a freeze of the live sandbox at that moment would have made, byte for byte.
 * GG_ENOTFOUND when the session left no snapshot; GG_EUSAGE for --path or --include. */
struct gg_engine;
GG_API int gg_session_freeze_snapshot(struct gg_session_freeze *sf, struct gg_engine *e,
				      const struct gg_record *r, const struct gg_freeze_opts *o,
				      const struct gg_image_callbacks *cb,
				      struct gg_freeze_result *res, struct gg_err *err);

/* Where gg_session_freeze stopped, for the caller's words around its error: at the
 * output, on the way to the node (the session, its route, the stream's start), or in
 * the freeze of the stream (and the node's word on it). */
enum gg_session_freeze_step {
	GG_SFREEZE_OUTPUT,
	GG_SFREEZE_NODE,
	GG_SFREEZE_IMAGE,
};
GG_API enum gg_session_freeze_step gg_session_freeze_step(const struct gg_session_freeze *sf);
/* What was frozen, "session NAME:sandbox" or "session NAME:DIR" (valid until freed;
 * "" before gg_session_freeze). */
GG_API const char *gg_session_freeze_source(const struct gg_session_freeze *sf);
/* The bytes received from the node (compressed, as they came). */
GG_API uint64_t gg_session_freeze_received(const struct gg_session_freeze *sf);

/* ---- what a session's work used (usage.c) ---- */

/* The launcher's samples of a session (GG_USAGE_NAME in the job's directory; the
 * image's provenance "usage" once frozen): peaks and sums, not a log. gpu_samples 0:
 * no GPU figure (no nvidia-smi on the node, no whole GPU, nothing sampled yet). */
struct gg_usage {
	int64_t interval, samples, first, last; /* seconds; times of the first and last */
	int64_t gpu_samples;                    /* samples nvidia-smi answered */
	int64_t gpu_busy_pct;                   /* mean utilisation.gpu, % (the busy fraction) */
	int64_t gpu_util_peak;                  /* % */
	int64_t gpu_mem_peak_mib;               /* the most one GPU of the job held */
	int64_t gpu_mem_total_mib;              /* that GPU's memory */
	int64_t cpu_seconds;                    /* CPU time of the session's processes */
	int64_t rss_peak_kib;                   /* their resident memory at most */
};
/* The launcher's file: "gridgpu-usage 1", then "KEY NUMBER" lines (outside input:
 * known keys, digits only, each once, bounded; GG_EPROTO saying what is wrong). */
GG_API int gg_usage_parse(const char *text, size_t len, struct gg_usage *u, struct gg_err *err);
/* As JSON (status --json "usage", the provenance's "usage"; doc/json/usage.schema.json),
 * and back (GG_EPROTO for an object that is not one). */
GG_API json_t *gg_usage_json(const struct gg_usage *u);
GG_API int gg_usage_from_json(json_t *j, struct gg_usage *u, struct gg_err *err);
/* The smallest GPU that fits the peak GPU memory with a margin (a quarter, at least
 * 1 GiB): the smallest of site's MIG profiles (mig_profile keys) whose memory holds it
 * into mig (""): none fits, or the site offers none: a whole GPU), and one line for
 * the user into line: "peak 3.0 GiB, busy 7%: --mig 1g.10gb would do". GG_ENOTFOUND
 * when u has no GPU figure (the line says so). site may be NULL (no MIG profile). */
GG_API int gg_usage_fit(const struct gg_usage *u, const struct gg_site *site, char *mig,
			size_t miglen, char *line, size_t linelen, struct gg_err *err);
/* What a SIF image's provenance records of the session it was frozen from (freeze
 * --session): GG_ENOTFOUND when it records none. */
GG_API int gg_image_usage(const char *sif, struct gg_usage *u, struct gg_err *err);
/* What the session r's work used so far, from its job's directory at its CE (e's):
 * GG_ENOTFOUND when its node wrote nothing (yet). */
GG_API int gg_engine_usage(struct gg_engine *e, const struct gg_record *r, struct gg_usage *u,
			   struct gg_err *err);

/* The GPUs of this machine for an image's provenance (what changes from one moment
 * to the next, free memory, left out, so that two freezes stay byte-identical):
 * *json = NULL (rc 0) off a GPU machine. malloc'd. */
GG_API int gg_freeze_local_gpus(char **json, struct gg_err *err);

#endif
