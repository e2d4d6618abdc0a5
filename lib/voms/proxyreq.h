/* lib/voms internals of the proxy workflow (proxyreq.c, make.c, inspect.c);
 * the public side is in include/gridgpu/voms.h. */
#ifndef GG_VOMS_PROXYREQ_H
#define GG_VOMS_PROXYREQ_H

#include "voms/voms.h"

struct gg_proxy_req {
	const char *cert, *key, *file, *ca_dir, *order, *answer_vo;
	const char *voms[GG_PROXY_VOMS_MAX];
	size_t n_voms;
	int verify, bits, threads, path_length, answer;
	enum gg_proxy_policy policy;
	int64_t lifetime, voms_lifetime, need;
	unsigned show;
	gg_passphrase_fn pass_fn;
	void *pass_ud;
	gg_note_fn note_fn;
	void *note_ud;
	const struct gg_log *log;
};

struct gg_proxy_report {
	struct gg_proxy_info info;
	struct gg_ac *acs;
	size_t n_acs;
	int verified; /* 1, 0, -1 not asked */
	char *ca_dir;
	struct gg_token *token;
	time_t now;
	struct gg_err answer; /* code 0: yes */
};

/* Tell q's note callback (if any). */
void gg_proxy_note(const struct gg_proxy_req *q, enum gg_note kind, const char *fmt, ...)
	GG_ATTR_PRINTF(3, 4);
/* Turn core dumps off; a warning when that fails. */
void gg_proxy_no_core_dumps(const struct gg_proxy_req *q);
/* The bearer token into r when q asks for it; a warning when it is not valid. */
void gg_proxy_report_find_token(const struct gg_proxy_req *q, struct gg_proxy_report *r);

/* One VOMS request of a proxy: a VO as its first --voms names it, and the
 * FQANs of every --voms naming that VO (by its name or an alias). */
struct gg_voms_ask {
	char vo[128];
	const char *fqans[GG_PROXY_VOMS_MAX];
	size_t n_fqans;
};
/* The requests q's --voms words make, in order, each VO once: words naming
 * the same VO (the vomses' fifth field, found by gg_voms_servers_find; a word
 * no vomses names is its own VO) are one request. GG_EUSAGE for a word whose
 * VO is empty or longer than 127 bytes. */
int gg_proxy_voms_plan(const struct gg_proxy_req *q, struct gg_voms_ask *asks, size_t *n,
		       struct gg_err *err);

#endif
