/* The ARC REST backend's own state, shared by arc.c and deleg.c. */
#ifndef GG_CE_ARC_H
#define GG_CE_ARC_H

#include "ce/backend.h"

struct arc {
	char *cache_path;     /* where REST versions are remembered, or NULL */
	const char *endpoint; /* the gg_ce's: https://host:port/arex */
	char *base;           /* endpoint/rest/<version> */
	char version[8];
	struct gg_http *http;
	int submit_unsent;          /* the last submit failed with nothing sent */
	struct gg_tsource *tsource; /* a reference, or NULL */
	char *proxy_path;           /* the proxy the CE is talked to with, or NULL (a token) */
};

/* The REST version in use ("1.0" or "1.1"), asked once (GET /rest). */
int gg_arc_version(struct arc *ce, const char **version, struct gg_err *err);
/* The CE refused the credential (HTTP 401/403): GG_ECRED, saying which VOMS
 * attributes the proxy carries (or that it carries none) and how to ask for others. */
int gg_arc_refused(const struct arc *ce, long status, const char *reason, const char *what,
		   struct gg_err *err);
int arc_delegate(struct gg_ce *g, const char *proxy_path, int64_t min_left, const char *cache_path,
		 char **id, struct gg_err *err);

#endif
