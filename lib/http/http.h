/* lib/http: the one place that sets up libcurl. A handle keeps one connection
 * open for all the requests of a command (keep-alive), authenticates with the
 * proxy as TLS client certificate or with a bearer token, always verifies the
 * peer against a CA directory, and retries idempotent requests a bounded
 * number of times with backoff. */
#ifndef GG_HTTP_H
#define GG_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

struct gg_http;

struct gg_http_opts {
	const char *proxy_path;  /* PEM with cert, key, chain; or NULL */
	const char *token;       /* bearer token; or NULL (never logged) */
	const char *ca_dir;      /* hashed CA directory; NULL = X509_CERT_DIR or default */
	long connect_timeout_ms; /* default 10 s */
	long timeout_ms;         /* whole request, default 120 s; 0 for transfers = none */
	int retries;             /* extra tries for idempotent requests, default (0) 2, -1 none */
	long retry_base_ms;      /* first backoff, doubled each time, default 200 ms */
	size_t max_body;         /* largest answer kept in memory, default 16 MiB */
	/* Called between retries and during transfers; non-zero aborts. */
	int (*cancel)(void *ud);
	void *cancel_ud;
	const struct gg_log *log; /* each request (level 1), its headers (2); copied; or NULL */
	/* A token that changes (refreshed before it expires): asked before each
	 * request; the Authorization header is rebuilt when the answer differs
	 * from the token in use. Its error (GG_ECRED) fails the request. */
	int (*token_fn)(void *ud, const char **token, struct gg_err *err);
	void *token_ud;
	/* Follow redirects (to https:// only, at most 5): a storage door that
	 * sends clients to its disk servers. The client certificate goes along;
	 * a bearer token only to the same host and port. */
	int follow;
	/* A connection keeper's socket (keep.h): gg_http_request goes through it
	 * while it answers, else over a connection of its own. NULL: never. */
	const char *keep_sock;
};

struct gg_http_resp {
	long status;  /* HTTP status */
	char *reason; /* reason phrase (A-REX puts its error text there) */
	char *body;   /* NUL-terminated; may be empty */
	size_t len;
	char *content_type; /* or NULL */
	char *location;     /* Location header or NULL */
	int64_t length;     /* Content-Length, -1 when not given */
	/* What says which version of the file the answer is of, and which
	 * bytes of it: those headers, or NULL. */
	char *etag, *last_modified, *digest, *content_range;
};

int gg_http_new(const struct gg_http_opts *opts, struct gg_http **out, struct gg_err *err);
void gg_http_free(struct gg_http *h);
/* A second handle like h (its options, credential and deadline), with a
 * connection of its own: two requests to one server at once. */
int gg_http_clone(const struct gg_http *h, struct gg_http **out, struct gg_err *err);

/* One request. body may be NULL. accept may be NULL. idempotent requests are
 * retried on connection failures and 5xx answers (503, 502, 504). A response is
 * returned for every HTTP status; only transport failures are errors (GG_ENET
 * for unreachable/timeouts/TLS, GG_EINTR when cancelled). */
int gg_http_request(struct gg_http *h, const char *method, const char *url,
		    const char *content_type, const void *body, size_t len, const char *accept,
		    int idempotent, struct gg_http_resp *resp, struct gg_err *err);
/* PUT a local file (streamed, with progress). */
int gg_http_put_file(struct gg_http *h, const char *url, const char *path,
		     gg_http_progress_fn progress, void *ud, struct gg_http_resp *resp,
		     struct gg_err *err);
/* GET into a local file written atomically (mode); the body is not kept. */
int gg_http_get_file(struct gg_http *h, const char *url, const char *path, mode_t mode,
		     gg_http_progress_fn progress, void *ud, struct gg_http_resp *resp,
		     struct gg_err *err);
/* GET into path, resuming: the bytes go to PATH.part (0600), which a broken
 * transfer leaves behind so that the next call asks only for the rest (a
 * Range; *resumed says from which byte), and only when the server still
 * describes the file as it did when the part began: its size and a validator
 * (a strong ETag, Last-Modified or the checksum of a Digest header, asked with
 * Want-Digest), kept in PATH.part.validator and sent back as If-Range. A part
 * without one, or of another version, is started over, never spliced. The
 * size is asked first (HEAD), and the Range names the last byte: XRootD's
 * HTTP door (5.5) answers an open-ended "N-" with nothing. An answer to the
 * Range that is not those bytes of that version (another Content-Range, other
 * validators, the whole file) starts over from byte 0. At the end the size is
 * checked against what the server said, and the checksum when it gave one
 * (a resumed file that fails it is fetched again whole, once); PATH.part
 * becomes path (mode) only then. A short or broken transfer keeps the part
 * (GG_ENET); an error answer or bytes that fail the checksum remove it. */
int gg_http_get_resume(struct gg_http *h, const char *url, const char *path, mode_t mode,
		       gg_http_progress_fn progress, void *ud, int64_t *resumed,
		       struct gg_http_resp *resp, struct gg_err *err);
void gg_http_resp_clear(struct gg_http_resp *resp);
/* Parse resp->body as JSON. An empty body gives an empty object (A-REX sends
 * nothing for empty lists). */
int gg_http_resp_json(const struct gg_http_resp *resp, json_t **out, struct gg_err *err);
/* After a request that failed: 1 when nothing of it can have reached the server
 * (every try failed before one byte of the request was sent: the name did not
 * resolve, the connection was refused, the TLS handshake failed), 0 when the
 * server may have received it (or it did not fail). A request that is not
 * idempotent and failed with 0 may have been acted on. */
/* No request from now on goes past at_ms (CLOCK_MONOTONIC, milliseconds): each
 * is cut at that time, and one asked after it fails at once (GG_ENET); 0: none. */
void gg_http_set_deadline(struct gg_http *h, int64_t at_ms);
/* A clean-up after the user interrupted (a job to cancel at the CE): for ms > 0
 * the cancel callback is not polled and no request goes past ms milliseconds
 * from now; ms = 0 ends the window and gives the caller's deadline back. */
void gg_http_cleanup_window(struct gg_http *h, long ms);
int gg_http_unsent(const struct gg_http *h);
/* Number of TCP connections opened so far (for tests and benchmarks). */
long gg_http_connections(const struct gg_http *h);
/* Bytes sent and received so far (request and answer, headers included; TLS
 * not counted): what a command moved, for -v and the tests. */
void gg_http_bytes(const struct gg_http *h, int64_t *sent, int64_t *received);
/* For the keeper (keepd.c): the next request's time per try, extra tries and
 * deadline (CLOCK_MONOTONIC ms, 0: none); a number it tags the handle with. */
void gg_http_set_limits(struct gg_http *h, long timeout_ms, int retries, int64_t deadline_ms);
void gg_http_set_tag(struct gg_http *h, unsigned tag);
unsigned gg_http_tag(const struct gg_http *h);
/* Requests that went through a keeper so far (for tests and -v). */
long gg_http_kept(const struct gg_http *h);
/* Default CA dir: $X509_CERT_DIR or /etc/grid-security/certificates. */
const char *gg_http_default_ca_dir(void);

#endif
