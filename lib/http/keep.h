/* lib/http/keep.c and keepd.c: the connection keeper (gridgpu/ce.h says what it
 * is). Its frames, the same both ways: "GGK1", the length of what follows (4
 * bytes, big-endian), then fields, each its length (4 bytes; 0xffffffff: absent,
 * no bytes) then its bytes and a NUL. The keeper greets a connection with the
 * frame "K"; a request is "Q" and its fields (enum keep_q), the answer "A" and
 * its fields (enum keep_a), or "N": not served here (the credential changed or
 * ended), send it yourself. */
#ifndef GG_HTTP_KEEP_H
#define GG_HTTP_KEEP_H

#include "http/http.h"
#include "gridgpu/ce.h"

#define GG_KEEP_MAGIC      "GGK1"
#define GG_KEEP_MAX_FIELDS 20
/* the largest answer body (16 MiB, as max_body) and a request's, with headers */
#define GG_KEEP_MAX_FRAME ((size_t)64 << 20)
/* how long a keeper has to greet a new connection before it counts as stale */
#define GG_KEEP_GREET_MS 500

enum keep_q {
	KQ_KIND,
	KQ_METHOD,
	KQ_URL,
	KQ_CTYPE,
	KQ_ACCEPT,
	KQ_BODY,
	KQ_IDEMPOTENT,
	KQ_TIMEOUT, /* ms per try */
	KQ_RETRIES,
	KQ_DEADLINE, /* ms left of the caller's deadline; 0: none */
	KQ_N
};
enum keep_a {
	KA_KIND,
	KA_RC,
	KA_ERRMSG,
	KA_STATUS,
	KA_REASON,
	KA_BODY,
	KA_CTYPE,
	KA_LOCATION,
	KA_LENGTH,
	KA_ETAG,
	KA_LASTMOD,
	KA_DIGEST,
	KA_RANGE,
	KA_UNSENT,
	KA_CONNS, /* TCP connections the keeper opened for it */
	KA_SENT,
	KA_RECEIVED,
	KA_N
};

struct gg_keep_frame {
	size_t n;
	const char *v[GG_KEEP_MAX_FIELDS]; /* NUL-terminated, in the buffer; NULL: absent */
	size_t len[GG_KEEP_MAX_FIELDS];
};

/* A frame's payload (what follows its 8 bytes) split into fields, in place:
 * 0, or -1 when it is not one (a length past the end, a missing NUL, too many). */
int gg_keep_parse(char *buf, size_t len, struct gg_keep_frame *f);
/* The bytes of a whole frame of n fields (v[i] NULL: absent; len NULL: strlen).
 * malloc'd; NULL when out of memory or too large. */
char *gg_keep_build(size_t n, const char *const *v, const size_t *len, size_t *outlen);
/* Read one frame from fd: 0, or -1 (the end, an error, a malformed frame, past
 * deadline_ms (CLOCK_MONOTONIC; 0: none) or cancel said so: *cancelled set).
 * *buf (malloc'd) holds the fields. */
int gg_keep_read(int fd, int64_t deadline_ms, int (*cancel)(void *), void *ud, int *cancelled,
		 char **buf, struct gg_keep_frame *f);
/* Write all of buf: 0, or -1 (never SIGPIPE). */
int gg_keep_write(int fd, const char *buf, size_t len);
/* A decimal number of a field: 0, or -1 when it is not one. */
int gg_keep_num(const char *s, int64_t *v);

/* One gg_http_request through the keeper at sock over *fd (connected and greeted
 * first when -1). 1: it answered (*rc, resp, err and what the keeper counted in
 * *conns, *sent, *received, *unsent); 0: send it yourself (no keeper, a stale one,
 * or it ended before it can have acted on the request: *fd closed, -1). */
struct gg_keep_call {
	const char *method, *url, *content_type, *accept;
	const void *body;
	size_t len;
	int idempotent, retries;
	long timeout_ms;
	int64_t deadline_left_ms;
	int (*cancel)(void *ud);
	void *cancel_ud;
};
struct gg_keep_counts {
	long conns;
	int64_t sent, received;
	int unsent;
};
int gg_keep_request(int *fd, const char *sock, const struct gg_keep_call *c,
		    struct gg_http_resp *resp, struct gg_keep_counts *n, int *rc,
		    struct gg_err *err);

#endif
