/* The CE backend table: what a kind of compute element must do for gridgpu.
 * ce.c picks the backend for an endpoint and dispatches the gg_ce_* calls to
 * it; a second kind of CE is a new file in lib/ce with its own table, and an
 * entry in ce.c's list. Tests plug a fake in with gg_ce_open_with. */
#ifndef GG_CE_BACKEND_H
#define GG_CE_BACKEND_H

#include "ce/ce.h"

struct gg_ce {
	const struct gg_ce_ops *ops;
	char *endpoint;             /* as given, without trailing '/' */
	void *impl;                 /* the backend's */
	const struct gg_site *site; /* the profile it was opened with, or NULL */
	/* A connection keeper's socket (gg_keep_path) to carry the requests
	 * through, or NULL; borrowed for the open only, as site. */
	const char *keep_sock;
};

typedef int (*gg_ce_bulk_fn)(struct gg_ce *ce, const char *const *ids, size_t n,
			     struct gg_ce_result **results, struct gg_err *err);

struct gg_ce_ops {
	const char *name;
	/* 1 when the endpoint is one of this backend's (by its URL) */
	int (*accepts)(const char *endpoint);
	/* Set ce->impl; no network I/O. */
	int (*open)(struct gg_ce *ce, const struct gg_ce_auth *auth, struct gg_err *err);
	void (*close)(struct gg_ce *ce);
	/* Optional (NULL: the CE has no such notion). */
	int (*version)(struct gg_ce *ce, const char **version, struct gg_err *err);
	int (*info)(struct gg_ce *ce, struct gg_ce_info *info, struct gg_err *err);
	int (*delegate)(struct gg_ce *ce, const char *proxy_path, int64_t min_left,
			const char *cache_path, char **id, struct gg_err *err);
	int (*submit)(struct gg_ce *ce, const char *description, char **id, struct gg_err *err);
	int (*submit_unsent)(const struct gg_ce *ce);
	gg_ce_bulk_fn status, kill, clean;
	/* Optional: the batch system's view of jobs status calls running (queued
	 * or running there); results[i] matches ids[i], GG_CE_UNKNOWN when the CE
	 * does not say. */
	gg_ce_bulk_fn lrms_status;
	int (*list)(struct gg_ce *ce, struct gg_ce_result **results, size_t *n, struct gg_err *err);
	int (*job_names)(struct gg_ce *ce, const char *const *ids, size_t n, char **names,
			 struct gg_err *err);
	int (*put)(struct gg_ce *ce, const char *id, const char *name, const void *data, size_t len,
		   struct gg_err *err);
	int (*put_file)(struct gg_ce *ce, const char *id, const char *name, const char *path,
			gg_http_progress_fn progress, void *ud, struct gg_err *err);
	int (*get)(struct gg_ce *ce, const char *id, const char *name, size_t max, char **data,
		   size_t *len, struct gg_err *err);
	int (*get_file)(struct gg_ce *ce, const char *id, const char *name, const char *path,
			gg_http_progress_fn progress, void *ud, struct gg_err *err);
	int (*ls)(struct gg_ce *ce, const char *id, char ***names, size_t *n, struct gg_err *err);
	int (*diagnose)(struct gg_ce *ce, const char *id, const char *item, char **text,
			struct gg_err *err);
	struct gg_http *(*http)(struct gg_ce *ce);
	/* Optional: what the CE offers (gg_glue2_offer_json's object). */
	int (*offer)(struct gg_ce *ce, json_t **offer, struct gg_err *err);
	/* Optional: several jobs in one request (gg_ce_submit_many). */
	int (*submit_many)(struct gg_ce *ce, const char *const *descs, size_t n,
			   struct gg_ce_result **results, struct gg_err *err);
	/* Optional: set copy->impl to a second handle on ce's CE with the same
	 * credential and a connection of its own; no network I/O. */
	int (*clone)(struct gg_ce *ce, struct gg_ce *copy, struct gg_err *err);
	/* Optional: submit the description itself rather than its xRSL
	 * (gg_ce_submit_jd). */
	int (*submit_jd)(struct gg_ce *ce, const struct gg_jobdesc *jd, char **id,
			 struct gg_err *err);
	/* 1: the CE is reached with the user's ssh key, no proxy or token. */
	int no_credential;
	/* 1: status's reason for a queued job is the batch system's own word. */
	int status_lrms;
};

/* ARC CE, REST interface (arc.c, deleg.c). */
extern const struct gg_ce_ops gg_ce_arc_rest;
/* Slurm through a login node over ssh (slurm.c). */
extern const struct gg_ce_ops gg_ce_slurm_ssh;

#endif
