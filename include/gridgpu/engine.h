/* gridgpu/engine.h (lib/engine): the session and job engine: what request, submit, connect, list,
 * status, kill and clean do with records and CEs, in one place. The record is written before
 * anything is sent; a kill at any moment wins; a job whose submission was cut off is found again by
 * its name and adopted; bulk calls go to each CE once per kind of credential. The engine never
 * prints: it reports through the callbacks of struct gg_engine_callbacks. */
#ifndef GRIDGPU_ENGINE_H
#define GRIDGPU_ENGINE_H

#include "gridgpu/ce.h"
#include "gridgpu/cred.h"
#include "gridgpu/image.h"
#include "gridgpu/json.h"
#include "gridgpu/node.h"
#include "gridgpu/session.h"

/* The engine is an opaque handle: what it holds (the store, the sites, the
 * callbacks, what its last probe found) can grow without an ABI change, which
 * a struct the caller allocates would freeze under SONAME 0. Made with
 * gg_engine_new, told how to report with gg_engine_set_callbacks, freed with
 * gg_engine_free. */
struct gg_engine;

/* How the engine reports (it never prints) and what a caller may put in place
 * of its own; every member is optional (NULL: not told, or the default).
 * size is sizeof(struct gg_engine_callbacks) as the caller's header has it
 * (GG_ENGINE_CALLBACKS_INIT sets it): members are only ever added at the end
 * (make abi-check holds that), so a program built against an older, smaller
 * struct keeps working (what it does not know is NULL), and one built against
 * a newer header runs on an older library as long as the members that library
 * does not know are NULL. */
struct gg_engine_callbacks {
	size_t size;
	void *ud; /* given to every callback */
	void (*note)(void *ud, enum gg_note kind, const char *msg);
	/* An error of one part of a bulk operation (one CE of a sync, of a kill):
	 * the operation goes on with the others. what says which part. */
	void (*fail)(void *ud, const struct gg_err *err, const char *what);
	/* non-zero: stop (GG_EINTR). It and log are called from gg_engine_sync's
	 * threads, one per CE, at once. */
	int (*cancel)(void *ud);
	/* A wait's progress: the record as refreshed, seconds waited. */
	void (*waiting)(void *ud, const struct gg_record *r, int64_t waited);
	/* Upload progress: begin gives the ud of progress, end closes it. */
	void *(*upload_begin)(void *ud, const char *label);
	gg_http_progress_fn upload_progress;
	void (*upload_end)(void *progress_ud);
	/* How a CE is opened (default: gg_ce_open with the REST-version cache in
	 * the state directory); tests give a fake backend here. */
	int (*open_ce)(void *ud, const char *endpoint, const struct gg_ce_auth *auth,
		       struct gg_ce **ce, struct gg_err *err);
	/* What it does, for -v/-vv (each HTTP request, each ssh hop): log is
	 * told what is at log_level or below (struct gg_log). */
	void (*log)(void *ud, int level, const char *msg);
	int log_level;
	/* Download progress (gg_engine_fetch), as for uploads. */
	void *(*download_begin)(void *ud, const char *label);
	gg_http_progress_fn download_progress;
	void (*download_end)(void *progress_ud);
	/* A file gg_engine_fetch has written whole: its path. */
	void (*fetched)(void *ud, const char *path);
	/* Carry the CE requests of a proxy through a connection keeper
	 * (gg_keep_serve, gridgpu/ce.h): when none answers on sock, this is asked
	 * to start one for the proxy and CA directory (ca_dir NULL: the default),
	 * once per engine, and the requests of this command connect themselves.
	 * NULL: no keeper (the library never starts one itself). */
	void (*keep_start)(void *ud, const char *sock, const char *proxy_path, const char *ca_dir);
};
#define GG_ENGINE_CALLBACKS_INIT                           \
	{                                                  \
		.size = sizeof(struct gg_engine_callbacks) \
	}

/* An engine on the store st and the sites of cfg (may be NULL: no sites),
 * which both must outlive it; st may be NULL for an engine that only opens
 * CEs (gg_engine_open_ce). No callbacks yet. GG_ENOMEM. */
GG_API int gg_engine_new(struct gg_store *st, const struct gg_config *cfg, struct gg_engine **out,
			 struct gg_err *err);
/* Free the engine (not its store or configuration). NULL is fine. */
GG_API void gg_engine_free(struct gg_engine *e);
/* Report through cb from now on (a copy is kept; NULL: through nothing).
 * GG_EUSAGE, the engine unchanged, when cb->size is not the size of a
 * struct gg_engine_callbacks of this library or an older one, or when it is
 * larger and sets members this library does not know. */
GG_API int gg_engine_set_callbacks(struct gg_engine *e, const struct gg_engine_callbacks *cb,
				   struct gg_err *err);
/* The store and the configuration the engine was made with. */
GG_API struct gg_store *gg_engine_store(const struct gg_engine *e);
GG_API const struct gg_config *gg_engine_config(const struct gg_engine *e);
/* Why the last sshd probe (gg_engine_probe, gg_engine_sync) left a session
 * starting: "" when it did not. */
GG_API const char *gg_engine_probe_why(const struct gg_engine *e);

/* Why the queued record named name waits, in the user's words, as the last
 * gg_engine_sync of it learned: Slurm's reason from the site's login node (the
 * last jump host, where it is a Slurm login node) or the batch system's word
 * the CE passed on: "waiting for free GPUs (Slurm: Resources), 1st in line; it
 * asks gres/gpu:3". NULL when not known. Outside text: escape it to print it.
 * Valid until the next sync or gg_engine_free. */
GG_API const char *gg_engine_queue_reason(const struct gg_engine *e, const char *name);

/* The site a record names, in the engine's configuration (NULL when none). */
GG_API const struct gg_site *gg_engine_site(const struct gg_engine *e, const char *name);
/* Open endpoint with credential a (GG_ECRED when it has none). */
GG_API int gg_engine_open_ce(struct gg_engine *e, const char *endpoint, const struct gg_auth *a,
			     struct gg_ce **ce, struct gg_err *err);
/* The CE of a record, with the credential the record was made with; when that
 * one is not at hand (GG_ECRED), with the other kind if it is (the CE decides
 * whether it owns the job). */
GG_API int gg_engine_open_record_ce(struct gg_engine *e, const struct gg_record *r,
				    struct gg_ce **ce, struct gg_err *err);
/* The CE's errors log of a failed job (what status shows), malloc'd in *out;
 * *out = NULL (rc 0) when r has not failed or has no job at a CE. */
GG_API int gg_engine_ce_errors(struct gg_engine *e, const struct gg_record *r, char **out,
			       struct gg_err *err);

/* ---- what the user's sites offer (offer.c) ---- */

/* How long the CE's word is kept ($XDG_CACHE_HOME/gridgpu/sites.json), in
 * seconds; how long a CE is waited for by default, in milliseconds. */
#define GG_SITES_TTL        60
#define GG_SITES_TIMEOUT_MS 10000
/* gg_engine_sites's flags: ask every CE, whatever the cache holds. */
#define GG_SITES_FRESH 1u
/* What the sites named (all of the engine's configuration when n is 0) offer,
 * as the document gridgpu sites --json prints (doc/json/sites.schema.json):
 * per site a summary (reachable and why not, GPU models, memory, capability,
 * free and total slots, waiting jobs, the GPU RTE, when last seen) and its
 * sources, newest first, each with its origin, time and age: the CE's GLUE2
 * information ("ce"), the profile's GPU keys ("profile"), the GPUs an earlier
 * session at the site was given ("session"); the summary's GPU facts are the
 * last session's where there is one, else the profile's. The CEs not in the cache are
 * asked at once, a thread each, and each waited for timeout_ms at most (<= 0:
 * GG_SITES_TIMEOUT_MS); a CE that does not answer is a site with its reason,
 * not an error. GG_ENOTFOUND for a name that is no site. Outside text: escape
 * it to print it. */
GG_API int gg_engine_sites(struct gg_engine *e, const char *const *names, size_t n,
			   int64_t timeout_ms, unsigned flags, json_t **doc, struct gg_err *err);

/* Matchmaking (match.c): the sites named (all when n is 0) against what res
 * asks (GPUs or a MIG profile, min_gpu_memory, min_capability), from what
 * gg_engine_sites says of them. *doc: {"chosen": the best site or null,
 * "why": one line ("chose tb: 8 free slots, 0 waiting (best of 2 sites that
 * fit; 1 dropped)") or null, "ranking": [{site, fits, reason (why it cannot:
 * not reachable, no GPU mapping, too little GPU memory, too low a
 * capability, no such MIG profile), free_slots, waiting, gpu_memory_mb,
 * capability, expected_wait (waiting less free slots)}], the sites that fit
 * first, best first (known queues before unknown ones, then the order given),
 * then those dropped}. A fact a site does not state is no reason to drop it
 * (the batch wrapper checks the GPU on the node). */
GG_API int gg_engine_match(struct gg_engine *e, const char *const *names, size_t n,
			   const struct gg_jd_resources *res, int64_t timeout_ms, json_t **doc,
			   struct gg_err *err);
/* The same for an image of architecture arch ("amd64", "arm64"; NULL: not
 * known): a site whose nodes are another (its profile's arch, else its CE's
 * published platform; x86_64 and amd64 are one) is dropped with the reason. */
GG_API int gg_engine_match_arch(struct gg_engine *e, const char *const *names, size_t n,
				const struct gg_jd_resources *res, const char *arch,
				int64_t timeout_ms, json_t **doc, struct gg_err *err);

/* ---- the descriptions (describe.c) ---- */

/* What a session asks for: its resources, the connect deadline and idle limit
 * (seconds; 0 = the site's or none), the container image its logins run in
 * (or none), the local path of the launcher staged into the job. With an
 * image: enter, the local path of the script that makes the sandbox and
 * enters it (gridgpu-enter, staged), image_file the image's local file when
 * it is staged (a SIF; NULL when the image is a path on the node), the
 * user's --bind SRC[:DST]. An opaque handle, as is struct gg_job_spec: a
 * setter per value, so that a new option is a new function, not a new member
 * that changes the size of a struct the caller allocates. Each setter copies
 * what it is given and returns 0, GG_EUSAGE for a value that cannot be (the
 * spec unchanged) or GG_ENOMEM. */
struct gg_session_spec;
GG_API int gg_session_spec_new(struct gg_session_spec **out, struct gg_err *err);
GG_API void gg_session_spec_free(struct gg_session_spec *q);
/* Walltime, CPUs and GPUs not negative; whole GPUs or a MIG slice. */
GG_API int gg_session_spec_set_resources(struct gg_session_spec *q,
					 const struct gg_jd_resources *res, struct gg_err *err);
/* More than 0. */
GG_API int gg_session_spec_set_deadline(struct gg_session_spec *q, int64_t seconds,
					struct gg_err *err);
/* 0 (none) or more. */
GG_API int gg_session_spec_set_idle(struct gg_session_spec *q, int64_t seconds, struct gg_err *err);
/* NULL: none (the site's, by gg_session_spec_defaults). */
GG_API int gg_session_spec_set_image(struct gg_session_spec *q, const char *image,
				     struct gg_err *err);
/* One more --bind (at most GG_JD_MAX). */
GG_API int gg_session_spec_add_bind(struct gg_session_spec *q, const char *bind,
				    struct gg_err *err);
GG_API int gg_session_spec_set_launcher(struct gg_session_spec *q, const char *path,
					struct gg_err *err);
/* The staged enter script and image file (NULL: the image is on the node). */
GG_API int gg_session_spec_set_enter(struct gg_session_spec *q, const char *enter,
				     const char *image_file, struct gg_err *err);
/* The launcher's lead times for its notices, "SECS SECS..." (a test hook: the
 * job's GRIDGPU_WARN_LEADS); NULL: its default, 10 and 1 min. */
GG_API int gg_session_spec_set_warn_leads(struct gg_session_spec *q, const char *leads,
					  struct gg_err *err);
/* request --resume: can the session r be resumed? 0 when it is a session that ended
 * and left a snapshot of its sandbox (its record as the last sync saw it); GG_EUSAGE
 * for a batch job or a session that has not ended (what to do said); GG_ENOTFOUND
 * for one that had no sandbox (no image of this machine's) or left no snapshot (the
 * launcher's reason said). */
GG_API int gg_session_resumable(const struct gg_record *r, struct gg_err *err);
/* The same for the session r as stored, brought up to date first: unless r already
 * knows how it ended (ended, with its snapshot or the launcher's reason for none),
 * r's CE is asked (gg_engine_sync; a CE that cannot say leaves r as it was). e NULL
 * (a dry run): r is checked as it is, nothing asked. */
GG_API int gg_engine_resumable(struct gg_engine *e, struct gg_record *r, struct gg_err *err);
/* The new session resumes from (a copy of r, checked by gg_session_resumable):
 * its image is r's (set as gg_session_spec_set_image does); gg_session_stage
 * stages r's sandbox as it ended (its image and snapshot, fetched from r's CE and
 * frozen into one SIF), and the record made of the spec names r
 * (resumed_from). */
GG_API int gg_session_spec_set_resume(struct gg_session_spec *q, const struct gg_record *from,
				      struct gg_err *err);
/* What was set (the strings are the spec's). */
GG_API const char *gg_session_spec_resumed_from(const struct gg_session_spec *q);
GG_API const struct gg_jd_resources *gg_session_spec_resources(const struct gg_session_spec *q);
GG_API int64_t gg_session_spec_deadline(const struct gg_session_spec *q);
GG_API int64_t gg_session_spec_idle(const struct gg_session_spec *q);
GG_API const char *gg_session_spec_image(const struct gg_session_spec *q);
GG_API const char *const *gg_session_spec_binds(const struct gg_session_spec *q, int *n);
/* Is b a bind as --bind and a site's bind take it: SRC[:DST], both absolute,
 * one line? 0, or GG_EUSAGE saying what is expected (what: "--bind"). */
GG_API int gg_session_bind_check(const char *what, const char *b, struct gg_err *err);
/* The job description of a session whose record is r (its uid names the job;
 * pubkey, the session key's .pub, is staged as the sshd's authorized key). */
GG_API int gg_session_describe(const struct gg_session_spec *q, const struct gg_site *site,
			       const struct gg_record *r, const char *pubkey, struct gg_jobdesc *jd,
			       struct gg_err *err);

/* What is staged with a session that works in an image (request --image):
 * q->image a SIF here (staged as it is), another kind of image here (a
 * directory, tar, docker-archive or OCI: frozen into a SIF first, told as a
 * GG_NOTE_INFO, the engine's cancel stopping it) or GG_IMAGE_NODE_MARK and an
 * absolute path on the node (not staged; the script gets the path without the
 * marking). A path without the marking that is not here is GG_EUSAGE, before
 * anything is made or sent (the node would say so only after the queue wait);
 * so is a relative path on the node, and (unless dry_run) one the site's login
 * host does not have (gg_image_node_check). Then the script
 * that enters the container, made for site's runtime with q's binds (GG_EUSAGE
 * for a bind it cannot take). Sets q's enter script and image file
 * (gg_session_spec_set_enter) to the staged files: free *out (the files are
 * removed) once the session is submitted.
 * With dry_run nothing is frozen or written (e may be NULL). A spec resuming a
 * session (gg_session_spec_set_resume) stages that session's sandbox as it ended
 * instead: its image and snapshot fetched from its CE through e and frozen into one
 * SIF, as freeze --session makes it (told as a GG_NOTE_INFO; GG_ENOTFOUND when
 * the CE no longer has them). */
#define GG_IMAGE_NODE_MARK "node:" /* request --image node:/cvmfs/...: on the node */
struct gg_session_stage;
GG_API int gg_session_stage(struct gg_engine *e, struct gg_session_spec *q,
			    const struct gg_site *site, int dry_run, struct gg_session_stage **out,
			    struct gg_err *err);
/* An image on the node (GG_IMAGE_NODE_MARK and a path, as request --image and
 * submit take it) checked before anything is sent, where the site allows it:
 * with site's image-check login, its last jump host (the login host, which
 * sees the nodes' files) is asked over ssh, through the jump hosts before it,
 * whether the path is there and readable; GG_EUSAGE when it is not, GG_EFAIL
 * when the login host could not say. 0 without a check: another kind of image,
 * no site, or a site that does not allow it. e (may be NULL) gives the -v log. */
GG_API int gg_image_node_check(struct gg_engine *e, const struct gg_site *site, const char *image,
			       struct gg_err *err);
/* The enter script's text (for a dry run to show). */
GG_API const char *gg_session_stage_script(const struct gg_session_stage *s);
GG_API void gg_session_stage_free(struct gg_session_stage *s);

/* A batch job: the SIF image (a local file, or a URL the CE fetches), the
 * offset of its squashfs partition, local inputs staged beside it, output
 * patterns left for 'get', the command, and the wrapper that runs it; storage:
 * inputs the CE fetches (each a URL and its name in the job's directory;
 * root:// ones through the site's cache) and outputs it uploads (each a name
 * and a URL), with the delegated credential. An opaque handle with setters,
 * as struct gg_session_spec. */
struct gg_job_spec;
GG_API int gg_job_spec_new(struct gg_job_spec **out, struct gg_err *err);
GG_API void gg_job_spec_free(struct gg_job_spec *q);
GG_API int gg_job_spec_set_resources(struct gg_job_spec *q, const struct gg_jd_resources *res,
				     struct gg_err *err);
/* submit --gpus 0-1, decided for the site it goes to (gg_engine_match's
 * "gpu_free"): gpu 1, a job of one GPU (the minimums kept); 0, a CPU job: no
 * GPU asked, the GPU minimums dropped, and the job told so in its
 * environment: GRIDGPU_GPUS=0 and CUDA_VISIBLE_DEVICES empty. Call it after
 * gg_job_spec_set_resources. */
GG_API void gg_job_spec_gpu_optional(struct gg_job_spec *q, int gpu);
/* The local SIF (NULL: none, with an image URL). */
GG_API int gg_job_spec_set_image(struct gg_job_spec *q, const char *path, struct gg_err *err);
GG_API int gg_job_spec_set_image_url(struct gg_job_spec *q, const char *url, struct gg_err *err);
/* 0 or more (gg_job_image_check finds it). */
GG_API int gg_job_spec_set_part_offset(struct gg_job_spec *q, int64_t offset, struct gg_err *err);
GG_API int gg_job_spec_set_wrapper(struct gg_job_spec *q, const char *path, struct gg_err *err);
/* One more --bind SRC[:DST] of the job's container, as a session's
 * (gg_session_bind_check; at most GG_JD_MAX): GG_EUSAGE saying what is wrong. */
GG_API int gg_job_spec_add_bind(struct gg_job_spec *q, const char *bind, struct gg_err *err);
/* The command and its arguments: argc 1 or more, none NULL. */
GG_API int gg_job_spec_set_command(struct gg_job_spec *q, const char *const *argv, int argc,
				   struct gg_err *err);
/* One more local input, output pattern, storage input or output (at most
 * GG_JD_MAX - 3 inputs and GG_JD_MAX - 2 outputs of each kind; what they say is
 * checked by gg_job_spec_check). */
GG_API int gg_job_spec_add_input(struct gg_job_spec *q, const char *path, struct gg_err *err);
GG_API int gg_job_spec_add_output(struct gg_job_spec *q, const char *pattern, struct gg_err *err);
GG_API int gg_job_spec_add_data_input(struct gg_job_spec *q, const char *url, const char *name,
				      struct gg_err *err);
GG_API int gg_job_spec_add_data_output(struct gg_job_spec *q, const char *name, const char *url,
				       struct gg_err *err);
/* The storage settings a job or session carries in its environment:
 * GRIDGPU_CACHE (the site's cache, root://HOST:PORT) and GRIDGPU_STORAGE
 * (its output_base, $USER replaced), when the site has them. */
GG_API int gg_jd_storage_env(struct gg_jobdesc *jd, const struct gg_site *site, struct gg_err *err);
/* The site's output_base with $USER (and ${USER}) replaced by the local user
 * name, ending in '/'; NULL when the site has none. malloc'd. */
GG_API char *gg_site_output_base(const struct gg_site *site);
GG_API int gg_job_describe(const struct gg_job_spec *s, const struct gg_site *site,
			   const struct gg_record *r, struct gg_jobdesc *jd, struct gg_err *err);
/* submit --input-list: one job per item, the item that job's own input besides
 * the spec's (a local file uploaded, or a root://, davs://, https:// URL[:NAME]
 * the CE fetches), by its last path element, which the job finds in
 * $GRIDGPU_INPUT; at most GG_JOB_MAX_EACH. gg_engine_submit_many submits
 * gg_job_spec_each_count jobs of such a spec (its count must be that). */
#define GG_JOB_MAX_EACH 1000
GG_API int gg_job_spec_add_each_input(struct gg_job_spec *q, const char *item, struct gg_err *err);
GG_API int gg_job_spec_each_count(const struct gg_job_spec *q);
/* The index'th item (from 0), or NULL. */
GG_API const char *gg_job_spec_each_input(const struct gg_job_spec *q, int index);
/* gg_job_describe of the index'th job (from 0) of a batch: with its own input
 * when the spec has a list (gg_job_spec_add_each_input). */
GG_API int gg_job_describe_nth(const struct gg_job_spec *s, const struct gg_site *site,
			       const struct gg_record *r, int index, struct gg_jobdesc *jd,
			       struct gg_err *err);
/* The GPU an image was developed on (its provenance, from freeze). */
struct gg_dev_gpu {
	char cc[16];     /* compute capability "8.0", or "" */
	uint64_t memory; /* bytes, or 0 */
	char name[128];  /* or "" */
};
/* A local SIF image for a job, checked before anything is uploaded: whole
 * (else GG_EFAIL "corrupt SIF: ..."), the offset of its partition in
 * *part_offset, and with dev (may be NULL) the development GPU (GG_EUSAGE when
 * the image does not say). */
GG_API int gg_job_image_check(const char *path, int64_t *part_offset, struct gg_dev_gpu *dev,
			      struct gg_err *err);

/* ---- submit's image (jobimage.c) ---- */

/* How a failed job's command ended, in a few words for a table cell, as
 * status says it in full: "exited 3", "signal 9" (an exit status of 128 + N,
 * the shell's), "out of memory" (a signal with the batch system's
 * out-of-memory kills). Written into buf (len bytes); returns buf. */
GG_API const char *gg_job_exit_brief(int64_t status, int64_t oom_kills, char *buf, size_t len);

/* What gg_job_image_prepare made of the image it was given. */
enum gg_job_image_how {
	GG_JOB_IMAGE_SIF = 1,   /* a SIF here, as it is */
	GG_JOB_IMAGE_NODE,      /* node:/PATH.sif: a SIF on the node, not uploaded */
	GG_JOB_IMAGE_FROZEN,    /* another kind of image here, frozen now into the cache */
	GG_JOB_IMAGE_CACHED,    /* the same, unchanged since it was frozen: the cached SIF */
	GG_JOB_IMAGE_TO_FREEZE, /* a dry run's: it would be frozen (nothing made) */
};
/* A job's image as request --image takes it, into q (its SIF and the
 * partition's offset): a local SIF, checked whole (GG_EFAIL "corrupt SIF: ..."
 * when it is not; a file named .sif is one); node:/PATH.sif, a SIF on the node;
 * a directory, tar (compressed or not), docker-archive or OCI layout or
 * archive here, frozen (reproducibly, with cb's progress and cancel) into
 * $XDG_CACHE_HOME/gridgpu/images/SRC-KEY-NAME.sif, SRC naming the input's real
 * path and KEY the metadata of it and of every entry under it: the same
 * unchanged input later takes that SIF without freezing (the earlier SIFs of
 * the same input are removed once a new one is in place; the SIF is written
 * whole or not at all). gg_job_spec_image then says which SIF it is. Refused
 * before anything is made or sent (GG_EUSAGE): a local path that is not here,
 * node:PATH not absolute, an image on the node that is not a SIF and a source
 * the freezer refuses (each naming the 'gridgpu freeze' to run), dev (may be
 * NULL: --match-dev-gpu) for an image not frozen where it was developed.
 * dry_run: nothing is frozen or written (*how GG_JOB_IMAGE_TO_FREEZE, the
 * spec's image the cache's name). res (may be NULL) gets what a freeze made. */
GG_API int gg_job_image_prepare(struct gg_job_spec *q, const char *image, int dry_run,
				const struct gg_image_callbacks *cb, struct gg_dev_gpu *dev,
				enum gg_job_image_how *how, struct gg_freeze_result *res,
				struct gg_err *err);
/* The spec's image: a local SIF's path, node:/PATH.sif, or NULL. */
GG_API const char *gg_job_spec_image(const struct gg_job_spec *q);
/* The architecture of the spec's image when it is a SIF here ("amd64",
 * "arm64", as its header says) into arch; 0 when not known (no image yet, one
 * on the node or at a URL, a SIF that does not read). */
GG_API int gg_job_spec_arch(const struct gg_job_spec *q, char arch[16]);
/* The file name endings of the images submit and request --image take ("sif",
 * "tar", "tar.gz", ...; NULL-terminated): what completion offers. */
GG_API const char *const *gg_image_suffixes(void);

/* ---- a job's outputs at storage (storage.c) ---- */

struct gg_storage_output {
	char *name; /* the file's name in the job's directory */
	char *url;  /* where the CE put it */
};
/* The outputs the CE uploads to storage, from the record (r->storage_outputs). */
GG_API int gg_storage_outputs(const struct gg_record *r, struct gg_storage_output **out, size_t *n,
			      struct gg_err *err);
GG_API void gg_storage_outputs_free(struct gg_storage_output *o, size_t n);
/* Fetch a storage URL (root://, davs://, https://) over HTTPS into path with
 * the credential a (its proxy as client certificate, or its token), resuming
 * what an earlier, broken fetch left (*resumed: from which byte). GG_ENOTFOUND
 * when the file is not there, GG_ECRED when the storage refuses the
 * credential, GG_ENET when it cannot be reached. */
GG_API int gg_storage_fetch(const struct gg_auth *a, const char *url, const char *path,
			    gg_http_progress_fn progress, void *ud, int64_t *resumed,
			    struct gg_err *err);

/* Before a job with storage files is submitted to site: ask the storage, over
 * HTTPS with the credential a (HEAD), that each input is there and readable
 * and that each output's directory exists, so that these mistakes are told
 * now rather than by a failed job. Only the storage's own answers count:
 * GG_EUSAGE for a missing file or directory (like a missing local file named
 * on the command line), GG_ECRED when it refuses the
 * credential; a door that cannot be reached or does not speak HTTPS (a
 * root:// only port) is left to the CE (a verbose note). */
GG_API int gg_storage_check(struct gg_engine *e, const struct gg_auth *a,
			    const struct gg_job_spec *q, const struct gg_site *site,
			    struct gg_err *err);

/* ---- a job's outputs (fetch.c) ---- */

#define GG_FETCH_FORCE 1u /* replace files that are already there */
#define GG_FETCH_WAIT  2u /* wait until the job has ended (timeout seconds; 0 = none) */
#define GG_FETCH_CLEAN 4u /* then clean the job on its CE and forget it */
/* Fetch the outputs of r's job into dir (NULL: ./NAME; made when missing).
 * The record is refreshed from its CE first (and saved: r->state then says
 * how the job ended, for the caller to report); a job that has not ended is
 * GG_EFAIL (with GG_FETCH_WAIT it is waited for: GG_EINTR when e->cancel says
 * so, GG_ENET after timeout), one never submitted GG_ENOTFOUND. Then the CE's
 * files (a name that is not a plain file name is skipped with a
 * GG_NOTE_WARN, a hidden one silently), each written whole or not at all, and
 * those the CE put at storage (only when the job finished: else a
 * GG_NOTE_WARN), over HTTPS with the record's credential, resuming what a
 * broken fetch left in PATH.part (a GG_NOTE_INFO says from which byte). When
 * the CE no longer has the job's files, those at storage are still fetched.
 * Without GG_FETCH_FORCE nothing is fetched when one of the files is already
 * there and differs from the job's (GG_EFAIL); one that is the same, byte
 * for byte, is kept (a GG_NOTE_VERBOSE) and not fetched again. Each file
 * written is told through e->fetched, progress through e->download_*.
 * GG_FETCH_CLEAN, once all is fetched, cleans the job as gg_engine_clean
 * does (an error keeps the record). *paths (paths may be NULL) gets the files
 * written, even after an error (those written before it): free with
 * gg_fetched_free. */
GG_API int gg_engine_fetch(struct gg_engine *e, struct gg_record *r, const char *dir,
			   unsigned flags, int64_t timeout, char ***paths, size_t *npaths,
			   struct gg_err *err);
GG_API void gg_fetched_free(char **paths, size_t n);

/* ---- submitting (submit.c) ---- */

/* What the caller writes into the job's description once the record exists
 * (its name and uid are known): pubkey is the session key's .pub (sessions). */
typedef int (*gg_describe_fn)(void *ud, const struct gg_record *r, const char *pubkey,
			      struct gg_jobdesc *jd, struct gg_err *err);

struct gg_submission {
	/* The record to create: kind, site, ce, auth, resources, name (or NULL:
	 * prefix-N), key (sessions: the identity file). state and uid are set
	 * here. Moved into the store: the engine clears it. */
	struct gg_record rec;
	char prefix[64];
	int make_key;      /* make a key pair at rec.key (else rec.key.pub must exist) */
	int retry_uploads; /* one more try of an upload that broke */
	/* How the job is described: describe when set, else from session or job
	 * (with site), as gg_session_submission and gg_job_submission set them. */
	gg_describe_fn describe;
	void *describe_ud;
	const struct gg_session_spec *session;
	const struct gg_job_spec *job;
	const struct gg_site *site;
};

/* What the user asked for, as a submission: the record a request or a submit
 * starts with and how its job is described (q and site must outlive s).
 * name may be NULL (SITE-N for a session, job-N for a job); token: the record
 * is made with a bearer token, else with the site's kind of credential. A
 * session's identity (may be NULL: a per-session key is made) is the user's
 * own key. Free s->rec with gg_record_clear when it was not submitted. */
GG_API void gg_session_submission(struct gg_submission *s, const struct gg_session_spec *q,
				  const struct gg_site *site, const char *endpoint,
				  const char *name, const char *identity, int token);
GG_API void gg_job_submission(struct gg_submission *s, const struct gg_job_spec *q,
			      const struct gg_site *site, const char *name, int token);
/* The site's defaults for what a session did not ask for: the connect deadline
 * (else 20 minutes), the idle limit, the image. site may be NULL. GG_ENOMEM. */
GG_API int gg_session_spec_defaults(struct gg_session_spec *q, const struct gg_site *site,
				    struct gg_err *err);
/* What a job asks that no site could give: inputs named like the job's own
 * files (image.sif, the wrapper, its out and err) or like each other, output
 * patterns that are not a name in the job's directory (GG_EUSAGE). */
GG_API int gg_job_spec_check(const struct gg_job_spec *q, struct gg_err *err);
/* A CUDA compute capability as --min-capability takes it, "X.Y" (each at most
 * 99), written to out as "%u.%u"; GG_EUSAGE ("'8x': expected X.Y, e.g. 8.0"). */
GG_API int gg_capability_parse(const char *s, char *out, size_t len, struct gg_err *err);
/* Does the local image have the program the job runs (q->cmd[0], looked up as the
 * container does: gg_image_has_program)? 0 when it has, or when there is nothing to
 * look in (an --image-url); GG_ENOTFOUND saying the job will fail unless the site
 * binds it in; another error (GG_EIO when it is not there) when the image could not
 * be read. A command missing fails the job only once it has waited in the queue,
 * but the site's container may bind it in (/cvmfs): callers warn, not refuse. */
GG_API int gg_job_program_check(const struct gg_job_spec *q, struct gg_err *err);
/* --match-dev-gpu: the development GPU (gg_job_image_check's dev) as the job's
 * minimums where none was given: its compute capability into min_cc (len bytes)
 * when that is "", its memory into res->min_gpu_memory when that is 0. */
GG_API void gg_job_match_dev(struct gg_jd_resources *res, const struct gg_dev_gpu *dev,
			     char *min_cc, size_t len);
/* count copies of the job: refused (GG_EUSAGE) when its outputs go to storage
 * (--output NAME=URL, or a site's output_base), since every copy would write
 * the same URLs. */
GG_API int gg_job_count_check(const struct gg_job_spec *q, int count,
			      const struct gg_site *const *sites, int nsites, struct gg_err *err);
/* Record first, then the key, delegation (proxy: reused while it lasts),
 * submission and the uploads. On success *out is the record as stored (state
 * queued) and, when ce is not NULL, *ce the open CE (the caller frees it).
 * A kill meanwhile wins: GG_EJOB "killed ..." with any job made cancelled.
 * When the submission may have reached the CE (the connection broke), the
 * record is kept for 'list --sync' to adopt and the error says so; when
 * nothing reached it, the record is removed (unless killed). */
GG_API int gg_engine_submit(struct gg_engine *e, struct gg_submission *s, struct gg_record *out,
			    struct gg_ce **ce, struct gg_err *err);
/* A job on the first of sites[turn], sites[turn + 1], ... (round) that accepts
 * it; each refusal is a GG_NOTE_WARN when there are several sites. An
 * interruption or a usage error stops at once (they are the same everywhere);
 * else the last site's error is returned. On success *out is the record. */
GG_API int gg_engine_submit_job(struct gg_engine *e, const struct gg_job_spec *q,
				const struct gg_site *const *sites, int nsites, int turn,
				const char *name, int token, struct gg_record *out,
				struct gg_err *err);
/* What gg_engine_submit_many says of each job once its fate is known: index
 * (0 .. count - 1), rc 0 (r the record as stored, queued) or its failure in
 * err; r is NULL when no record was kept (the CE refused the job, or surely
 * never had it), else the record kept (for adoption, or marked failed or
 * killed). */
typedef void (*gg_submit_each_fn)(void *ud, int index, int rc, const struct gg_record *r,
				  const struct gg_err *err);
/* count copies of the job, each on sites[index % nsites] or, refused there,
 * the next site that accepts it, as gg_engine_submit_job would, but in bulk:
 * per site and per 100 jobs, the records of all first, one request with every
 * description (A-REX answers each job), the job ids recorded together, then each job's uploads.
 * A kill of any record wins (its job cancelled); when the request's answer was
 * lost, its records are kept for 'list --sync' to adopt. each is told every
 * job's result; returns 0, or GG_EINTR when interrupted (the jobs not yet told
 * were not submitted). */
GG_API int gg_engine_submit_many(struct gg_engine *e, const struct gg_job_spec *q,
				 const struct gg_site *const *sites, int nsites, int count,
				 int token, gg_submit_each_fn each, void *ud, struct gg_err *err);

/* ---- following (wait.c) ---- */

/* Save a refreshed record over the stored one (under the lock); a record
 * ended meanwhile elsewhere (a kill) wins, and r becomes what is stored. */
GG_API int gg_engine_save(struct gg_engine *e, struct gg_record *r, struct gg_err *err);
/* A session whose sshd is published but not yet seen to answer: probe it
 * through the hops. It becomes "ready" when the sshd answers with the pinned
 * key, "failed" when another key answers; else it stays "starting" and the
 * reason is in gg_engine_probe_why(e). When a jump host on the way failed, that error is
 * returned (in way too, when not NULL): waiting will not mend it. */
GG_API int gg_engine_probe(struct gg_engine *e, struct gg_record *r, int timeout_ms,
			   struct gg_err *way);
/* Refresh from ce until the session is ready or ended (the waiting callback
 * told at each turn, 2 Hz); GG_EINTR when the cancel callback says so, GG_ENET after timeout
 * seconds (0 = none). */
GG_API int gg_engine_wait_ready(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r,
				int64_t timeout, struct gg_err *err);

/* Refresh a job from ce (and save it); with wait, until it has ended (1 Hz):
 * GG_EINTR when the cancel callback says so, GG_ENET after timeout seconds (0 = none). */
GG_API int gg_engine_wait_ended(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r,
				int wait, int64_t timeout, struct gg_err *err);

/* ---- many records (manage.c) ---- */

/* Records grouped for bulk calls: same CE and same kind of credential. */
struct gg_rec_group {
	const char *ce;   /* NULL: records without a CE */
	const char *auth; /* "proxy" or "token" */
	size_t *idx;      /* indexes into the records */
	size_t n;
};
/* Group the records that want (may be NULL: all) accepts. */
GG_API int gg_records_by_endpoint(const struct gg_record *recs, size_t n,
				  int (*want)(const struct gg_record *r),
				  struct gg_rec_group **groups, size_t *ngroups,
				  struct gg_err *err);
GG_API void gg_rec_groups_free(struct gg_rec_group *g, size_t n);

/* Refresh records from their CEs (adopting orphans first), probe published
 * sshds, save them, rewrite the SSH configuration. only_live skips ended
 * records. A CE that cannot be asked is reported through the fail callback and its
 * records kept; returns 0 or the first error's code. recs are the records as
 * stored: only what the refresh changes in them is saved (those that changed,
 * together); every CE is asked at once, each within 120 s. */
GG_API int gg_engine_sync(struct gg_engine *e, struct gg_record *recs, size_t n, int only_live);
/* Kill live records on their CEs and mark them killed (a record already ended
 * is told as such); their keys are removed. Records not killed (their CE
 * could not be asked) keep their state. Returns 0 or the first error's code. */
GG_API int gg_engine_kill(struct gg_engine *e, struct gg_record *recs, size_t n);
/* Clean the ended records on their CEs (unless keep_remote) and forget them;
 * cleaned[i] is set for each one forgotten. Returns 0 or the first error. */
GG_API int gg_engine_clean(struct gg_engine *e, struct gg_record *recs, size_t n, int keep_remote,
			   char *cleaned);
/* ---- request --race: one session sent to several sites, the first ready wins ---- */

/* A race: its id (set it as rec.race of each racer's submission) and its lock,
 * held until gg_race_end. While it is held a sync leaves the race's records
 * alone; once its holder is gone (killed), a sync settles the race as
 * gg_engine_race_settle does without a winner. */
struct gg_race;
GG_API int gg_race_begin(struct gg_engine *e, struct gg_race **out, struct gg_err *err);
GG_API const char *gg_race_id(const struct gg_race *r);
/* Let the lock go (and free r; NULL is fine). */
GG_API void gg_race_end(struct gg_race *r);
/* Follow the racers recs[0..n) (ces[i] each one's CE, from gg_engine_submit)
 * until one is ready: its index in *winner. Each turn refreshes, probes and
 * saves every racer still in the race; one that ends (or whose way to the node
 * breaks) leaves it. GG_EJOB (or the first racer's error) when none is left,
 * with each site's reason; GG_ENET after timeout seconds (0: none); GG_EINTR
 * when the cancel callback says so. The waiting callback is given the racer
 * furthest along. */
GG_API int gg_engine_race_wait(struct gg_engine *e, struct gg_ce **ces, struct gg_record *recs,
			       size_t n, int64_t timeout, size_t *winner, struct gg_err *err);
/* End a race (recs[i].race's): every record of the race in the store but
 * recs[winner] (one the caller gave up mid-submission too) marked lost there
 * first, then killed and cleaned (at its CE and here; one whose CE cannot be
 * asked, or has not finished killing it, stays, marked lost, for the next
 * sync; one whose submission's answer was lost waits for the sync's adoption);
 * the winner renamed to its race_name (taken: its site's SITE-N) without its
 * race marks, into *out (may be NULL); the SSH configuration rewritten. A
 * record marked lost is never the winner; a refresh saved later keeps its
 * marks. winner >= n (or marked lost): the rule of a race without winner, over
 * the stored records: a ready racer, else the furthest along (starting,
 * queued, requested), else the first. */
GG_API int gg_engine_race_settle(struct gg_engine *e, struct gg_record *recs, size_t n,
				 size_t winner, struct gg_record *out, struct gg_err *err);

/* Regenerate the SSH configuration from the store's live sessions. */
GG_API int gg_engine_write_ssh_config(struct gg_engine *e, struct gg_err *err);

/* ---- check: an image run as its batch job will run, beside a live session ---- */

/* Before a job queues, its image is run the way the batch job will run it (the
 * batch wrapper and the job's container run: binds, $HOME, GPU flags, minimums) on
 * the node of a live session, with the session's GPUs and no queue wait; the same
 * command runs in the session, and the two are compared: the exit status, where the
 * command's first word and the named Python modules resolve (one under the site's
 * $HOME is not in the image), the environment (gridgpu-check(1) lists what is not
 * compared). Made by gg_check_new, set up, run once by gg_check_run, freed by
 * gg_check_free. */
struct gg_check;
GG_API int gg_check_new(struct gg_check **out, struct gg_err *err);
GG_API void gg_check_free(struct gg_check *c);
/* The session to run in; NULL (the default): the one the image was frozen from when
 * it is ready, else the only ready session (GG_EUSAGE when there are several). */
GG_API int gg_check_set_session(struct gg_check *c, const char *name, struct gg_err *err);
/* A Python module the command needs (numpy, torch.cuda): imported in both places.
 * GG_EUSAGE for a name that is not a module's; at most 64. */
GG_API int gg_check_add_module(struct gg_check *c, const char *name, struct gg_err *err);
/* How long each run may stay silent, in seconds (default 600). */
GG_API void gg_check_set_timeout(struct gg_check *c, int64_t seconds);
/* Run q's command (q's image, a SIF here or node:/PATH, its wrapper set, its binds
 * and minimums) in the session and in the image. 0 when both ran: the differences
 * (none: the image runs it as the session does) are then gg_check_difference's; an
 * image whose run ended before the command is one difference. The image is sent to
 * the node (the engine's upload callbacks) unless the node has it from an earlier
 * check. Errors: GG_ENOTFOUND (no such session, not ready), GG_EUSAGE, GG_ENET and
 * GG_EHOSTKEY (the way to it), GG_EINTR (the engine's cancel). */
GG_API int gg_check_run(struct gg_check *c, struct gg_engine *e, const struct gg_job_spec *q,
			struct gg_err *err);
/* After gg_check_run: the session it ran in; how many differences; the i-th (kind
 * "exit", "command", "module" or "environment"; name; the session's and the image's
 * value, escaped, NULL when not there; line: one line saying it and what to do),
 * valid until freed, -1 past the last; the exit statuses (-1 when a run did not
 * tell); the last lines the session's or the image's run wrote on stderr (escaped,
 * NULL when none); the bytes of the image sent (0: the node had it). */
GG_API const char *gg_check_session(const struct gg_check *c);
GG_API size_t gg_check_count(const struct gg_check *c);
GG_API int gg_check_difference(const struct gg_check *c, size_t i, const char **kind,
			       const char **name, const char **session, const char **image,
			       const char **line);
GG_API int gg_check_exits(const struct gg_check *c, int *session, int *image);
GG_API const char *gg_check_said(const struct gg_check *c, int image);
GG_API uint64_t gg_check_sent(const struct gg_check *c);

#endif
