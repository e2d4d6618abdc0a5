/* What the engine's files share (not part of the engine's API). */
#ifndef GG_ENGINE_ENGINE_INT_H
#define GG_ENGINE_ENGINE_INT_H

#include "engine/engine.h"

/* The engine behind the opaque handle of gridgpu/engine.h: the callbacks as
 * gg_engine_set_callbacks left them (a member the caller's struct did not have
 * is NULL), each where the engine's files use it. */
struct gg_engine {
	struct gg_store *st;
	const struct gg_config *cfg; /* may be NULL */
	void *ud;
	void (*note)(void *ud, enum gg_note kind, const char *msg);
	void (*fail)(void *ud, const struct gg_err *err, const char *what);
	int (*cancel)(void *ud);
	void (*waiting)(void *ud, const struct gg_record *r, int64_t waited);
	void *(*upload_begin)(void *ud, const char *label);
	gg_http_progress_fn upload_progress;
	void (*upload_end)(void *progress_ud);
	void *(*download_begin)(void *ud, const char *label);
	gg_http_progress_fn download_progress;
	void (*download_end)(void *progress_ud);
	void (*fetched)(void *ud, const char *path);
	int (*open_ce)(void *ud, const char *endpoint, const struct gg_ce_auth *auth,
		       struct gg_ce **ce, struct gg_err *err);
	void (*keep_start)(void *ud, const char *sock, const char *proxy_path, const char *ca_dir);
	int keep_asked;    /* keep_start was asked in this run */
	struct gg_log log; /* the callbacks' log, ud and log_level */
	/* why the last sshd probe failed ("" when it did not), and a site whose
	 * jump hosts failed in this run (not probed again) */
	char probe_why[GG_ERR_MSG_MAX];
	char probe_down_site[64];
	/* why queued records wait, by name, as the last sync saw it (queue.c) */
	json_t *queue_reasons;
	int64_t queue_asked; /* when a wait last asked the login host */
};

/* What a session asks for (gridgpu/engine.h): every string and list is the
 * spec's own copy, freed by gg_session_spec_free. */
struct gg_session_spec {
	struct gg_jd_resources res;
	int64_t deadline, idle;
	const char *image, *launcher;
	const char *enter, *image_file;
	const char **binds;
	int nbinds;
	const char *warn_leads;
	struct gg_record *resume; /* request --resume: the session resumed (a copy) */
};

/* request --resume (resume.c): does the record r not know yet how it ended (a session not
 * ended, or ended without its snapshot or the reason for none)? Then its CE is
 * asked first (gg_engine_resumable). */
int gg_resume_wants_sync(const struct gg_record *r);

/* request --resume (resume.c): the spec's copy of the session resumed freed; the
 * image of that session's sandbox as it ended made into output (a SIF), from its
 * image and snapshot at its CE (reached through e, whose cancel stops it). */
void gg_session_spec_resume_clear(struct gg_session_spec *q);
int gg_session_resume_image(struct gg_engine *e, const struct gg_record *from, const char *output,
			    struct gg_err *err);

/* What a batch job asks for, the same way. */
struct gg_job_spec {
	struct gg_jd_resources res;
	const char *image, *image_url, *wrapper;
	const char **inputs, **outputs;
	int ninputs, noutputs;
	const char **data_in_urls, **data_in_names;
	int ndata_in;
	const char **data_out_names, **data_out_urls;
	int ndata_out;
	char **cmd;
	int ncmd;
	int64_t part_offset;
	const char **binds; /* submit --bind SRC[:DST] */
	int nbinds;
	int cpu_fallback;  /* --gpus 0-1 sent as a CPU job (gg_job_spec_gpu_optional) */
	const char **each; /* submit --input-list: job i's own input (a file or a URL) */
	int neach;
};

/* A slurm+ssh site's job (auth kind "ssh") that names a storage URL: the
 * user's proxy added to a, checked to last need_left (storage.c); else 0. */
int gg_storage_auth(const struct gg_job_spec *q, const struct gg_site *site, int64_t need_left,
		    struct gg_auth *a, struct gg_err *err);

/* A batch job's enter script (gridgpu-enter: the session's container run,
 * lib/node/enter.c) for s at site, image the image's path on the node (its
 * name in the job's directory): its text (malloc'd), or the cache's file that
 * holds it (jobenter.c). GG_EUSAGE for a bind the site's runtime cannot take. */
int gg_job_enter_text(const struct gg_job_spec *s, const struct gg_site *site, const char *image,
		      char **out, struct gg_err *err);
int gg_job_enter_file(const struct gg_job_spec *s, const struct gg_site *site, const char *image,
		      char **path, struct gg_err *err);

/* Tell e->note, formatted. */
void gg_engine_notef(struct gg_engine *e, enum gg_note kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Tell e->fail (what formatted); returns err->code. */
int gg_engine_failf(struct gg_engine *e, const struct gg_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 1 when the stored record is killed, or gone (killed and cleaned). */
int gg_engine_killed(struct gg_engine *e, const char *name);
/* One turn of a wait for a session (wait.c): refreshed, probed, saved; 1 when
 * it is ready or has ended, 0 while not, or an error. */
int gg_engine_wait_turn(struct gg_engine *e, struct gg_ce *ce, struct gg_record *r,
			struct gg_err *err);
/* A sync's part of request --race (race.c): the races whose client is gone
 * settled; a racer whose winner is already crowned removed. */
void gg_engine_races_settle(struct gg_engine *e);

/* A sync asks each CE (each CE and credential) on a thread of its own and
 * saves its records as soon as it has answered; each CE's part is bounded by
 * this (its requests cut at it, its records then unknown, as for a CE that
 * cannot be reached). gridgpu-list(1) states it. */
#define GG_SYNC_CE_TIMEOUT_MS 120000
/* gg_store_update callbacks of a submission (submit.c; batch.c too): the job id
 * recorded (ud; a kill meanwhile stays), failed with ud's reason (unless ended),
 * dropped unless a kill marked it. */
int gg_rec_set_submitted(struct gg_record *r, void *ud);
int gg_rec_set_failed(struct gg_record *r, void *ud);
int gg_rec_drop_unless_killed(struct gg_record *r, void *ud);
/* The caches' files (the frozen images, the jobs' enter scripts) not used for this
 * long are removed when the cache is next written (gridgpu-submit(1)). */
#define GG_CACHE_MAX_AGE (30 * 86400)

/* gg_engine_save of n records at once (wait.c): those that changed are
 * written together (gg_store_update_many); recs[i] becomes what is stored,
 * but for a record that could not be saved. The first failure in err, a
 * record removed meanwhile (GG_ENOTFOUND) only when no other failed. */
int gg_engine_save_many(struct gg_engine *e, struct gg_record *recs, size_t n, struct gg_err *err);

/* Why the queued ones of recs (n, one CE's) wait: from what the CE said of
 * them (seen[i] for recs[i]) and Slurm on the site's login node, one ssh round
 * trip for all (queue.c); gg_engine_queue_reason gives them. */
struct gg_lrms_seen;
void gg_engine_queue_reasons(struct gg_engine *e, struct gg_record *recs, size_t n,
			     const struct gg_lrms_seen *seen);

/* gg_engine_clean of one ended record, its CE's error in err (not told to
 * e->fail): the record is kept when the CE could not clean the job. */
int gg_engine_clean_one(struct gg_engine *e, struct gg_record *r, struct gg_err *err);

/* Where a job's plain output i (s->outputs[i]) goes at site: under the site's
 * output_base (a name, not a pattern, and the site has one): the URL,
 * malloc'd; NULL when it stays in the CE's session directory. */
char *gg_job_output_dest(const struct gg_job_spec *s, const struct gg_site *site, int i);
/* submit --count: the image of njobs jobs put once at the site's storage
 * (output_base, named by its SHA-256; not again when it is there whole), for
 * the CE to fetch for each job: the URL the jobs name it by (a root:// one
 * through the site's cache), or NULL (each job uploads its own: one job, no
 * output_base, a node: or --image-url image, or the storage would not take
 * it, said in a GG_NOTE_VERBOSE). malloc'd. */
char *gg_batch_share_image(struct gg_engine *e, const struct gg_auth *a,
			   const struct gg_job_spec *q, const struct gg_site *site, size_t njobs);

/* The cache's SIF for a local image as it is now (jobimage.c): the path of
 * $XDG_CACHE_HOME/gridgpu/images/SRC-KEY-NAME.sif (the directory made when
 * make), SRC of the image's real path, KEY of this library's version and the
 * metadata of the image and of every entry under it, NAME its last part. */
int gg_job_image_cache_path(const char *image, int make, char **path, struct gg_err *err);

#endif
