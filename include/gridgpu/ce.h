/* gridgpu/ce.h (lib/ce): the compute-element interface, its ARC REST backend, and the job
 * description model with its xRSL writer. */
#ifndef GRIDGPU_CE_H
#define GRIDGPU_CE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gridgpu/core.h"

/* ---- job descriptions ---------------------------------------------------- */

#define GG_JD_MAX 64

struct gg_jd_file {
	char *name;   /* name in the session dir */
	char *source; /* URL, or NULL/"" = uploaded by the client after submit */
	char *local;  /* local path to upload (client side only, not in the xRSL) */
};

struct gg_jobdesc {
	char *name;
	char *executable;
	char *args[GG_JD_MAX];
	int nargs;
	struct gg_jd_file inputs[GG_JD_MAX];
	int ninputs;
	char *outputs[GG_JD_MAX];
	char *output_urls[GG_JD_MAX]; /* where the CE puts outputs[i], or NULL: kept */
	int noutputs;
	char *stdout_name, *stderr_name;
	int64_t walltime; /* seconds, 0 = site default */
	int cpus;         /* 0 = default */
	uint64_t memory;  /* bytes per job, 0 = default */
	char *queue;
	char *rtes[16];
	int nrtes;
	char *delegation_id;
	char *env[GG_JD_MAX]; /* NAME=VALUE */
	int nenv;
	char *extra; /* site text appended verbatim (xRSL relations) */
};

/* Builders copy their arguments. Each returns 0 or GG_ENOMEM/GG_EUSAGE. A file name
 * with a control character is GG_EUSAGE: the CE accepts the job, then waits for a file
 * by that name that never arrives. */
GG_API int gg_jd_arg(struct gg_jobdesc *jd, const char *arg, struct gg_err *err);
GG_API int gg_jd_input(struct gg_jobdesc *jd, const char *name, const char *source,
		       const char *local, struct gg_err *err);
GG_API int gg_jd_output(struct gg_jobdesc *jd, const char *name, struct gg_err *err);
/* An output the CE uploads to url (root://, davs://, https://) when the job
 * ends, with the job's delegated credential; GG_EUSAGE when name is already
 * an output. */
GG_API int gg_jd_output_url(struct gg_jobdesc *jd, const char *name, const char *url,
			    struct gg_err *err);
/* rte: a runtime environment's name, then its arguments, separated by spaces
 * ("ENV/GPU 2" is written (runtimeenvironment="ENV/GPU" "2")). */
GG_API int gg_jd_rte(struct gg_jobdesc *jd, const char *rte, struct gg_err *err);
/* name: a shell variable's name ([A-Za-z_][A-Za-z0-9_]*), else GG_EUSAGE. */
GG_API int gg_jd_env(struct gg_jobdesc *jd, const char *name, const char *value,
		     struct gg_err *err);
GG_API int gg_jd_set(char **field, const char *value, struct gg_err *err);
GG_API void gg_jd_clear(struct gg_jobdesc *jd);
/* What a job asks for, and how the site profile maps it. ARC has no GPU
 * attribute: GPU requests go to the site's gpu_queue and gpu_rte, and the
 * count, MIG profile and minimums reach the job (and the site's RTE scripts)
 * as GRIDGPU_GPUS, GRIDGPU_MIG, GRIDGPU_MIN_CUDA_CAPABILITY and
 * GRIDGPU_MIN_GPU_MEMORY_MB. */
struct gg_jd_resources {
	int64_t walltime;
	int cpus;
	uint64_t memory;
	const char *queue; /* explicit queue, else the site's */
	int gpus;
	const char *mig;
	const char *min_capability; /* "8.0" or NULL */
	uint64_t min_gpu_memory;    /* bytes, 0 = none */
};
/* The site's gpu_rte gets the count (or the MIG profile) as its argument.
 * GPUs asked of a site (or a bare CE, site NULL) without a GPU mapping
 * (gpu_queue, gpu_rte) and without an explicit queue: GG_EUSAGE. */
GG_API int gg_jd_resources(struct gg_jobdesc *jd, const struct gg_jd_resources *res,
			   const struct gg_site *site, struct gg_err *err);
/* Only that check: 0, or GG_EUSAGE saying what to set. */
GG_API int gg_jd_gpu_check(const struct gg_jd_resources *res, const struct gg_site *site,
			   struct gg_err *err);
/* The description in xRSL (malloc'd). Strings are quoted, '"' doubled. */
GG_API int gg_jd_xrsl(const struct gg_jobdesc *jd, char **out, struct gg_err *err);

/* ---- storage URLs (data.c) ------------------------------------------------ */

/* What a CE's data staging takes from here: XRootD (root://, xroot://) and
 * HTTPS/WebDAV (davs://, https://), each with the job's delegated proxy. */
enum gg_url_scheme { GG_URL_ROOT = 1, GG_URL_DAVS, GG_URL_HTTPS };
struct gg_data_url {
	enum gg_url_scheme scheme;
	char host[256];
	int port;        /* 0: the scheme's default */
	char path[1024]; /* absolute, a file */
};
/* 1 when s is a URL (has "://"), not a local path. */
GG_API int gg_data_url_is_remote(const char *s);
/* Check a storage URL before anything is submitted: GG_EUSAGE saying what is
 * wrong (a scheme the CE cannot stage and why, no host, a bad port, no path,
 * a directory, characters a job description cannot carry). */
GG_API int gg_data_url_parse(const char *url, struct gg_data_url *u, struct gg_err *err);
/* --input URL[:NAME]: the URL and the file's name in the job's directory
 * (default: the URL's last path element). Both malloc'd. */
GG_API int gg_data_input_parse(const char *arg, char **url, char **name, struct gg_err *err);
/* --output NAME=URL, or NAME alone with the site's output_base ($USER and
 * ${USER} replaced by user): the name and the URL, both malloc'd. */
GG_API int gg_data_output_parse(const char *arg, const char *base, const char *user, char **name,
				char **url, struct gg_err *err);
/* url read through the XCache at cache (root://HOST:PORT) in the form a
 * forwarding XCache takes: root://CACHE//root://ORIGIN//PATH. Other URLs (and
 * cache NULL, or the cache itself) come back unchanged. malloc'd or NULL. */
GG_API char *gg_data_cache_url(const char *cache, const char *url);
/* A site's cache setting: root://HOST[:PORT] and nothing more (GG_EUSAGE). */
GG_API int gg_data_cache_check(const char *cache, struct gg_err *err);
/* The https:// URL an HTTP client fetches a storage URL by: davs:// is
 * https://; root://HOST:PORT//PATH is https://HOST:PORT/PATH (an XRootD
 * server's HTTP door shares its port). malloc'd, NULL when not a storage URL. */
GG_API char *gg_data_http_url(const char *url);

/* ---- the CE interface ---------------------------------------------------- */

/* Job states, normalised from the backend's. */
enum gg_ce_state {
	GG_CE_UNKNOWN = 0, /* the CE could not tell (or unreachable) */
	GG_CE_ACCEPTED,    /* accepted, staging in, waiting to be submitted */
	GG_CE_QUEUED,      /* in the batch system, not running */
	GG_CE_RUNNING,
	GG_CE_FINISHING, /* ran, staging out */
	GG_CE_FINISHED,
	GG_CE_FAILED,
	GG_CE_KILLED,
	GG_CE_GONE, /* unknown to the CE (cleaned or never existed) */
};
GG_API const char *gg_ce_state_name(enum gg_ce_state s);
GG_API int gg_ce_state_terminal(enum gg_ce_state s);

/* Per-job result of a bulk call. */
struct gg_ce_result {
	char *id;
	int code;     /* per-job status code from the CE (200, 201, 202, 404, 500...) */
	char *reason; /* its reason text */
	enum gg_ce_state state;
	char *raw_state; /* the CE's own name of the state */
};
GG_API void gg_ce_results_free(struct gg_ce_result *r, size_t n);

struct gg_ce_auth {
	const char *proxy_path; /* X.509 proxy (client certificate) */
	const char *token;      /* or a bearer token */
	const char *ca_dir;
	const char *cache_path;  /* JSON file remembering each CE's REST version (a
				    day), saving a round trip per command; or NULL */
	int (*cancel)(void *ud); /* polled during requests and waits: non-zero stops */
	void *cancel_ud;
	const struct gg_log *log; /* each request for -v/-vv (copied); or NULL */
	/* Where fresh tokens come from (token_command, oidc_account): asked before
	 * each request, so a long wait outlives the token it started with. The CE
	 * holds a reference (gg_tsource_ref) until it is freed. Or NULL. */
	struct gg_tsource *tsource;
};

struct gg_ce;
struct gg_ce_ops; /* a backend (ce/backend.h): ARC REST is the one built in */

/* Open a CE by endpoint URL (https://host:port/arex; a slurm+ssh:// CE,
 * Slurm through its login node, is opened by the library with its site's
 * profile): the first backend that accepts the URL. No network I/O yet. */
GG_API int gg_ce_open(const char *endpoint, const struct gg_ce_auth *auth, struct gg_ce **out,
		      struct gg_err *err);
GG_API void gg_ce_free(struct gg_ce *ce);
/* The backend's name ("arc-rest", "slurm-ssh"). */
GG_API const char *gg_ce_backend(const struct gg_ce *ce);
/* The interface version in use (ARC REST: "1.0" or "1.1", asked once with GET
 * /rest); GG_EUSAGE for a backend without one. */
GG_API int gg_ce_version(struct gg_ce *ce, const char **version, struct gg_err *err);
/* GLUE2 info document; summary fields extracted for the caller. */
struct gg_ce_info {
	char *name;
	char **queues;
	size_t nqueues;
	char **rtes;
	size_t nrtes;
	char *rest_version;
};
GG_API int gg_ce_info(struct gg_ce *ce, struct gg_ce_info *info, struct gg_err *err);
GG_API void gg_ce_info_clear(struct gg_ce_info *info);

/* Delegation: returns an id the job description can name. Reuses a delegation
 * the CE still holds if it was made from the same proxy and is valid for at
 * least min_left seconds (remembered in cache_path when not NULL); otherwise
 * makes a new one (POST new → sign the CSR with the proxy → PUT). */
GG_API int gg_ce_delegate(struct gg_ce *ce, const char *proxy_path, int64_t min_left,
			  const char *cache_path, char **id, struct gg_err *err);

/* Submit one job; *id is the CE's job id. A CE refusal is GG_EJOB with its
 * reason; a malformed job id in the answer GG_EPROTO. */
GG_API int gg_ce_submit(struct gg_ce *ce, const char *description, char **id, struct gg_err *err);
/* After a failed gg_ce_submit: 1 when the description surely did not reach the
 * CE (it failed before the POST, or the POST failed before one byte was sent:
 * connection refused, TLS handshake, DNS), so no job can exist; 0 when the CE
 * may have made the job. */
GG_API int gg_ce_submit_unsent(const struct gg_ce *ce);
/* Submit n jobs in one request where the CE allows it (else one by one);
 * results[i] answers descs[i]: code 201 and the job's id when it was made (id
 * NULL: made under a malformed id); code 0 when its answer was lost (it may
 * exist); any other code a refusal, reason saying why (code -1: reason is a
 * whole message). A failure of the whole request returns its error with no
 * results (gg_ce_submit_unsent says whether anything can have been made). */
GG_API int gg_ce_submit_many(struct gg_ce *ce, const char *const *descs, size_t n,
			     struct gg_ce_result **results, struct gg_err *err);
/* Kill and clean one job, ignoring what the CE says (for jobs that must not
 * be left behind: half staged, or made when they could not be recorded). The
 * CE's cancel callback does not stop it (the user's interrupt is often why the
 * job is cancelled): it is bounded by its own 15 s instead. */
GG_API void gg_ce_cancel(struct gg_ce *ce, const char *id);
/* Bulk status/kill/clean of many jobs in one request. results[i] matches ids[i]. */
GG_API int gg_ce_status(struct gg_ce *ce, const char *const *ids, size_t n,
			struct gg_ce_result **results, struct gg_err *err);
GG_API int gg_ce_kill(struct gg_ce *ce, const char *const *ids, size_t n,
		      struct gg_ce_result **results, struct gg_err *err);
GG_API int gg_ce_clean(struct gg_ce *ce, const char *const *ids, size_t n,
		       struct gg_ce_result **results, struct gg_err *err);
/* All the caller's jobs with their states (fresh, not the info provider's). */
GG_API int gg_ce_list(struct gg_ce *ce, struct gg_ce_result **results, size_t *n,
		      struct gg_err *err);
/* The job names (xRSL jobname) of many jobs in one request: names[i] is
 * malloc'd or NULL when the CE does not say. */
GG_API int gg_ce_job_names(struct gg_ce *ce, const char *const *ids, size_t n, char **names,
			   struct gg_err *err);
/* Files in the job's session dir. get: GG_ENOTFOUND when absent. */
GG_API int gg_ce_put(struct gg_ce *ce, const char *id, const char *name, const void *data,
		     size_t len, struct gg_err *err);
GG_API int gg_ce_put_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
			  gg_http_progress_fn progress, void *ud, struct gg_err *err);
GG_API int gg_ce_get(struct gg_ce *ce, const char *id, const char *name, size_t max, char **data,
		     size_t *len, struct gg_err *err);
GG_API int gg_ce_get_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
			  gg_http_progress_fn progress, void *ud, struct gg_err *err);
GG_API int gg_ce_ls(struct gg_ce *ce, const char *id, char ***names, size_t *n, struct gg_err *err);
/* Control-dir diagnostics: "errors", "failed", "status", "local", ... */
GG_API int gg_ce_diagnose(struct gg_ce *ce, const char *id, const char *item, char **text,
			  struct gg_err *err);
GG_API const char *gg_ce_endpoint(const struct gg_ce *ce);

/* ---- the connection keeper (lib/http/keepd.c) --------------------------------------
 * A process of the user that keeps TLS connections to the CEs open between commands,
 * as OpenSSH's ControlPersist keeps a master: commands hand it their idempotent requests
 * (what may be sent twice: job lists, info, kill, clean) over a
 * Unix socket in a private directory (the runtime directory's gridgpu/keep, 0700),
 * and it sends them over its kept-alive connections with the same credential, CA
 * directory and checks a command's own connection has. It is bound to one proxy file
 * and CA directory: a proxy renewed in place is read again (its connections closed),
 * an expired one ends it; so does idle_ms without a request, or its socket removed. */
/* How long a keeper stays up unused unless told otherwise: 10 minutes (s). */
#define GG_KEEP_IDLE_DEFAULT 600
struct gg_keep_opts {
	const char *sock;       /* gg_keep_path's */
	const char *proxy_path; /* the credential it is bound to */
	const char *ca_dir;     /* NULL: X509_CERT_DIR, else /etc/grid-security/certificates */
	int64_t idle_ms;        /* exit after this long without a request (> 0) */
};
/* The socket of the keeper of proxy_path and ca_dir (NULL: the default), in the
 * private directory (made when missing; GG_EIO when it is not private). malloc'd. */
GG_API int gg_keep_path(const char *proxy_path, const char *ca_dir, char **out, struct gg_err *err);
/* 1 when a keeper listens on sock (a connection accepted), else 0. No wait. */
GG_API int gg_keep_alive(const char *sock);
/* Start a keeper for o, detached, when asked (the library never starts one by
 * itself): exe (NULL: this program) run as "EXE __keep --idle MS SOCK PROXY
 * [CA_DIR]" (what the gridgpu command does with it: gg_keep_serve), in a session
 * of its own, its output /dev/null, no descriptor of the caller's carried over.
 * Not waited for; GG_EFAIL when it cannot be started. */
GG_API int gg_keep_start(const char *exe, const struct gg_keep_opts *o, struct gg_err *err);
/* Serve on o->sock until idle (SOCK.lock, held while it runs, holds its pid), the credential's end
 * or the socket's removal: 0. 1 at once when another keeper holds it; GG_ECRED for a proxy that is
 * unreadable or expired, GG_EIO/GG_EUSAGE for a socket that cannot be made. The caller detaches
 * (the library never forks); nothing is printed. */
GG_API int gg_keep_serve(const struct gg_keep_opts *o, struct gg_err *err);

#endif
