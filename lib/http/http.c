/* lib/http: libcurl set-up, keep-alive, retries, TLS, auth. */
#include "core/par.h"
#include "http/http.h"
#include "http/version.h"
#include "http/keep.h"
#include "compat/compat.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

struct gg_http {
	CURL *curl;
	struct gg_http_opts o;
	struct gg_log log; /* a copy: o.log points here */
	char *proxy_path, *ca_dir, *auth_header;
	long connections;
	int64_t bytes_sent, bytes_received; /* request and answer bytes, headers included */
	CURLcode last;                      /* of the last transfer */
	int unsent;                /* the last request failed before any byte of it was sent */
	int64_t deadline_ms;       /* CLOCK_MONOTONIC ms no request may go past; 0: none */
	int64_t saved_deadline_ms; /* the caller's, during a clean-up window */
	int cleanup;               /* in a clean-up window: the cancel callback not polled */
	char errbuf[CURL_ERROR_SIZE];
	char *keep_sock; /* the keeper's socket, or NULL (none, or it failed) */
	int keep_fd;     /* the connection to it, or -1 */
	long kept;       /* requests it answered */
	unsigned tag;
};

/* Per-transfer state. */
struct xfer {
	struct gg_http *h;
	const char *method;
	struct gg_http_resp *resp;
	size_t cap;
	FILE *out;        /* body to a file when set (and status is 2xx) */
	long status_line; /* status from the last status line */
	gg_http_progress_fn progress;
	void *ud;
	int cancelled;
	int too_large;
	int write_errno;     /* writing the body to out failed (disk full) */
	int64_t offset;      /* resumed: bytes already there (progress counts them) */
	struct fetch *fetch; /* a resumed download: its first bytes decide (begin_body) */
};

static int begin_body(struct xfer *x);

/* libcurl's buffers hold the bearer token and request headers: it gets an
 * allocator that wipes every block before it is freed or moved. */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;
static void global_init(void)
{
	global_rc = curl_global_init_mem(CURL_GLOBAL_DEFAULT, malloc, gg_wipe_free, gg_wipe_realloc,
					 strdup, calloc);
}

const char *gg_http_default_ca_dir(void)
{
	const char *d = getenv("X509_CERT_DIR");
	return d && *d ? d : "/etc/grid-security/certificates";
}

int gg_http_new(const struct gg_http_opts *opts, struct gg_http **out, struct gg_err *err)
{
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return gg_err_set(err, GG_EFAIL, "initialising libcurl: %s",
				  curl_easy_strerror(global_rc));
	struct gg_http *h = calloc(1, sizeof *h);
	if (!h)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	h->o = *opts;
	if (opts->log)
		h->log = *opts->log;
	h->o.log = &h->log;
	if (!h->o.connect_timeout_ms)
		h->o.connect_timeout_ms = 10000;
	if (!h->o.timeout_ms)
		h->o.timeout_ms = 120000;
	if (h->o.retries < 0)
		h->o.retries = 0;
	else if (!h->o.retries)
		h->o.retries = 2;
	if (!h->o.retry_base_ms)
		h->o.retry_base_ms = 200;
	if (!h->o.max_body)
		h->o.max_body = 16u << 20;
	h->ca_dir = strdup(opts->ca_dir ? opts->ca_dir : gg_http_default_ca_dir());
	if (opts->proxy_path)
		h->proxy_path = strdup(opts->proxy_path);
	if (opts->token)
		h->auth_header = gg_strdup_printf("Authorization: Bearer %s", opts->token);
	h->o.proxy_path = h->proxy_path;
	h->keep_fd = -1;
	if (opts->keep_sock && opts->proxy_path && !opts->token && !opts->token_fn)
		h->keep_sock = strdup(opts->keep_sock); /* NULL: none, as out of memory */
	h->o.keep_sock = NULL;
	h->o.token = NULL; /* only the header keeps it */
	h->o.ca_dir = h->ca_dir;
	h->curl = curl_easy_init();
	if (!h->curl || !h->ca_dir || (opts->proxy_path && !h->proxy_path) ||
	    (opts->token && !h->auth_header)) {
		gg_http_free(h);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*out = h;
	return 0;
}

int gg_http_clone(const struct gg_http *h, struct gg_http **out, struct gg_err *err)
{
	struct gg_http_opts o = h->o;
	o.token = NULL; /* the header below carries it */
	o.keep_sock = h->keep_sock;
	int rc = gg_http_new(&o, out, err);
	if (rc < 0)
		return rc;
	(*out)->deadline_ms = h->deadline_ms;
	if (h->auth_header && !((*out)->auth_header = strdup(h->auth_header))) {
		gg_http_free(*out);
		*out = NULL;
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}

static void drop_auth_header(struct gg_http *h)
{
	if (h->auth_header) {
		OPENSSL_cleanse(h->auth_header, strlen(h->auth_header));
		free(h->auth_header);
		h->auth_header = NULL;
	}
}

/* The token source's current token in the Authorization header, replaced in
 * place when it was refreshed (a long wait outlives several tokens). */
static int refresh_auth(struct gg_http *h, struct gg_err *err)
{
	if (!h->o.token_fn)
		return 0;
	const char *tok = NULL;
	int rc = h->o.token_fn(h->o.token_ud, &tok, err);
	if (rc < 0)
		return rc;
	static const char pfx[] = "Authorization: Bearer ";
	if (!tok || (h->auth_header && strcmp(h->auth_header + sizeof pfx - 1, tok) == 0))
		return 0;
	drop_auth_header(h);
	if (!(h->auth_header = gg_strdup_printf("%s%s", pfx, tok)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return 0;
}

void gg_http_free(struct gg_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->keep_fd >= 0)
		close(h->keep_fd);
	free(h->keep_sock);
	drop_auth_header(h);
	free(h->proxy_path);
	free(h->ca_dir);
	free(h);
}

void gg_http_bytes(const struct gg_http *h, int64_t *sent, int64_t *received)
{
	*sent = h->bytes_sent;
	*received = h->bytes_received;
}

long gg_http_connections(const struct gg_http *h)
{
	return h->connections;
}

void gg_http_set_limits(struct gg_http *h, long timeout_ms, int retries, int64_t deadline_ms)
{
	h->o.timeout_ms = timeout_ms;
	h->o.retries = retries;
	h->deadline_ms = deadline_ms;
}

void gg_http_set_tag(struct gg_http *h, unsigned tag)
{
	h->tag = tag;
}

unsigned gg_http_tag(const struct gg_http *h)
{
	return h->tag;
}

long gg_http_kept(const struct gg_http *h)
{
	return h->kept;
}

void gg_http_set_deadline(struct gg_http *h, int64_t at_ms)
{
	h->deadline_ms = at_ms;
}

void gg_http_cleanup_window(struct gg_http *h, long ms)
{
	if (ms > 0 && !h->cleanup) {
		h->saved_deadline_ms = h->deadline_ms;
		h->deadline_ms = (int64_t)gg_mono_msf() + ms;
		h->cleanup = 1;
	} else if (ms <= 0 && h->cleanup) {
		h->deadline_ms = h->saved_deadline_ms;
		h->cleanup = 0;
	}
}

int gg_http_unsent(const struct gg_http *h)
{
	return h->unsent;
}

void gg_http_resp_clear(struct gg_http_resp *r)
{
	if (!r)
		return;
	free(r->reason);
	free(r->body);
	free(r->content_type);
	free(r->location);
	free(r->etag);
	free(r->last_modified);
	free(r->digest);
	free(r->content_range);
	memset(r, 0, sizeof *r);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (x->fetch && x->status_line >= 200 && x->status_line < 300 && begin_body(x) < 0)
		return 0; /* aborts the transfer: not the bytes asked */
	if (x->out && x->status_line >= 200 && x->status_line < 300) {
		if (fwrite(p, 1, len, x->out) == len)
			return len;
		x->write_errno = errno ? errno : EIO;
		return 0; /* aborts the transfer */
	}
	struct gg_http_resp *r = x->resp;
	if (r->len + len > x->h->o.max_body) {
		x->too_large = 1;
		return 0; /* aborts the transfer */
	}
	if (r->len + len + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 4096;
		while (cap < r->len + len + 1)
			cap *= 2;
		char *nb = realloc(r->body, cap);
		if (!nb)
			return 0;
		r->body = nb;
		x->cap = cap;
	}
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

static char *dup_trim(const char *p, size_t len)
{
	while (len && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
		len--;
	while (len && *p == ' ') {
		p++;
		len--;
	}
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct gg_http_resp *r = x->resp;
	size_t len = size * n;
	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* A new response (after 100-continue, say): reset what we kept. */
		const char *sp = memchr(p, ' ', len);
		x->status_line = sp ? strtol(sp + 1, NULL, 10) : 0;
		free(r->reason);
		r->reason = NULL;
		free(r->content_type);
		r->content_type = NULL;
		free(r->location);
		r->location = NULL;
		char **v[] = {&r->etag, &r->last_modified, &r->digest, &r->content_range};
		for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
			free(*v[i]);
			*v[i] = NULL;
		}
		if (sp) {
			const char *rs = memchr(sp + 1, ' ', len - (size_t)(sp + 1 - p));
			if (rs)
				r->reason = dup_trim(rs + 1, len - (size_t)(rs + 1 - p));
		}
		return len;
	}
	const char *colon = memchr(p, ':', len);
	if (!colon)
		return len;
	size_t klen = (size_t)(colon - p);
	char **slot = NULL;
	if (klen == 12 && strncasecmp(p, "content-type", 12) == 0)
		slot = &r->content_type;
	else if (klen == 8 && strncasecmp(p, "location", 8) == 0)
		slot = &r->location;
	else if (klen == 4 && strncasecmp(p, "etag", 4) == 0)
		slot = &r->etag;
	else if (klen == 13 && strncasecmp(p, "last-modified", 13) == 0)
		slot = &r->last_modified;
	else if (klen == 6 && strncasecmp(p, "digest", 6) == 0)
		slot = &r->digest;
	else if (klen == 13 && strncasecmp(p, "content-range", 13) == 0)
		slot = &r->content_range;
	if (slot) {
		free(*slot);
		*slot = dup_trim(colon + 1, len - klen - 1);
	}
	return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = ud;
	if (!x->h->cleanup && x->h->o.cancel && x->h->o.cancel(x->h->o.cancel_ud)) {
		x->cancelled = 1;
		return 1;
	}
	if (x->progress) {
		uint64_t done = (uint64_t)(ulnow ? ulnow : dlnow + x->offset);
		uint64_t total = (uint64_t)(ultotal ? ultotal : dltotal ? dltotal + x->offset : 0);
		if (x->progress(x->ud, done, total)) {
			x->cancelled = 1;
			return 1;
		}
	}
	return 0;
}

static int transport_retryable(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE: return 1;
	default: return 0;
	}
}

/* A TLS failure whose cause is a CA directory that is not there: say so
 * (exit 3, a credentials problem), not "certificate not trusted". */
/* OpenSSL's text of an alert by which a server refuses the client's
 * certificate: its CA, the certificate itself, or access. */
static int refused_alert(const char *detail)
{
	static const char *const alerts[] = {
		"alert unknown ca",          "alert bad certificate",
		"alert certificate expired", "alert certificate revoked",
		"alert certificate unknown", "alert access denied",
		"alert certificate required"};
	for (size_t i = 0; i < sizeof alerts / sizeof alerts[0]; i++)
		if (strstr(detail, alerts[i]))
			return 1;
	return 0;
}

static int ca_dir_missing(struct gg_http *h, const char *url, struct gg_err *err)
{
	struct stat st;
	const char *why = stat(h->ca_dir, &st) < 0 ? "does not exist"
			  : !S_ISDIR(st.st_mode)   ? "is not a directory"
						   : NULL;
	if (!why)
		return 0;
	return gg_err_set(err, GG_ECRED,
			  "%s: the CA directory '%s' %s (X509_CERT_DIR or the site's ca_dir): "
			  "point it at the grid CA certificates, usually "
			  "/etc/grid-security/certificates, and run 'gridgpu doctor'",
			  url, h->ca_dir, why);
}

static int map_curl_error(struct gg_http *h, CURLcode c, const char *url, struct gg_err *err)
{
	const char *detail = h->errbuf[0] ? h->errbuf : curl_easy_strerror(c);
	int tls = c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
		  c == CURLE_SSL_CONNECT_ERROR;
	int missing = tls ? ca_dir_missing(h, url, err) : 0;
	if (missing)
		return missing;
	switch (c) {
	case CURLE_ABORTED_BY_CALLBACK: return gg_err_set(err, GG_EINTR, "interrupted");
	case CURLE_PEER_FAILED_VERIFICATION:
		return gg_err_set(err, GG_ENET,
				  "%s: TLS: the server's certificate does not match its name or is "
				  "not trusted (%s)",
				  url, detail);
	case CURLE_SSL_CACERT_BADFILE:
		return gg_err_set(err, GG_ENET, "%s: TLS: cannot use CA directory '%s' (%s)", url,
				  h->ca_dir, detail);
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
		return gg_err_set(err, GG_ECRED,
				  "%s: TLS: cannot use the proxy '%s' as client "
				  "certificate (%s)",
				  url, h->proxy_path ? h->proxy_path : "", detail);
	case CURLE_COULDNT_RESOLVE_HOST:
		return gg_err_set(err, GG_ENET, "%s: cannot resolve the host name (%s)", url,
				  detail);
	case CURLE_COULDNT_CONNECT:
		return gg_err_set(err, GG_ENET,
				  "%s: cannot connect: is the server up and the URL right? (%s)",
				  url, detail);
	case CURLE_OPERATION_TIMEDOUT:
		return gg_err_set(err, GG_ENET, "%s: timed out (%s)", url, detail);
	case CURLE_GOT_NOTHING:
		return gg_err_set(err, GG_ENET,
				  "%s: the server closed the connection without an "
				  "answer (is it an HTTPS endpoint?)",
				  url);
	case CURLE_WEIRD_SERVER_REPLY:
		return gg_err_set(err, GG_EPROTO, "%s: the server's answer is not HTTP (%s)", url,
				  detail);
	case CURLE_UNSUPPORTED_PROTOCOL:
		if (strncmp(url, "https://", 8) == 0) /* e.g. an HTTP/0.9 answer */
			return gg_err_set(err, GG_EPROTO,
					  "%s: the server's answer is not HTTP (%s)", url, detail);
		return gg_err_set(err, GG_EUSAGE, "%s: not a usable URL (%s)", url, detail);
	case CURLE_URL_MALFORMAT:
		return gg_err_set(err, GG_EUSAGE, "%s: not a usable URL (%s)", url, detail);
	default:
		/* The server's TLS alert refusing our certificate (in TLS 1.3 it comes
		 * after the handshake, as a read error): the credential, not the network. */
		if (refused_alert(detail))
			return gg_err_set(err, GG_ECRED,
					  "%s: the server refused your credential (%s): check "
					  "'gridgpu proxy info' and that the site admits you",
					  url, detail);
		/* A connection that dropped is not a certificate problem. */
		if (strstr(detail, "SSL_ERROR_SYSCALL") || strstr(detail, "reset by peer") ||
		    strstr(detail, "Broken pipe") || strstr(detail, "unexpected eof") ||
		    c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR)
			return gg_err_set(err, GG_ENET, "%s: the connection was lost (%s)", url,
					  detail);
		if (strstr(detail, "SSL") || strstr(detail, "TLS") || c == CURLE_SSL_CONNECT_ERROR)
			return gg_err_set(err, GG_ENET,
					  "%s: TLS handshake failed (%s); check the CA directory "
					  "'%s' and your credential",
					  url, detail, h->ca_dir);
		return gg_err_set(err, GG_ENET, "%s: %s", url, detail);
	}
}

static int sleep_ms(struct gg_http *h, long ms)
{
	while (ms > 0) {
		if (!h->cleanup && h->o.cancel && h->o.cancel(h->o.cancel_ud))
			return -1;
		long step = ms > 50 ? 50 : ms;
		struct timespec ts = {0, step * 1000000L};
		nanosleep(&ts, NULL);
		ms -= step;
	}
	return 0;
}

/* -vv: the header lines sent and received, each credential's value masked. */
static int on_debug(CURL *c, curl_infotype type, char *data, size_t size, void *ud)
{
	(void)c;
	struct gg_http *h = ud;
	if (type != CURLINFO_HEADER_OUT && type != CURLINFO_HEADER_IN)
		return 0;
	static const char *const secret[] = {"authorization:", "proxy-authorization:", "cookie:",
					     "set-cookie:", "x-auth-token:"};
	for (size_t i = 0; i < size;) {
		size_t n = 0;
		while (i + n < size && data[i + n] != '\n' && data[i + n] != '\r')
			n++;
		int masked = 0;
		for (size_t k = 0; k < sizeof secret / sizeof secret[0]; k++)
			if (n >= strlen(secret[k]) &&
			    !strncasecmp(data + i, secret[k], strlen(secret[k])))
				masked = (int)strlen(secret[k]);
		if (n && masked)
			gg_logf(h->o.log, 2, "%c %.*s ***", type == CURLINFO_HEADER_OUT ? '>' : '<',
				masked, data + i);
		else if (n)
			gg_logf(h->o.log, 2, "%c %.*s", type == CURLINFO_HEADER_OUT ? '>' : '<',
				(int)n, data + i);
		i += n;
		while (i < size && (data[i] == '\n' || data[i] == '\r'))
			i++;
	}
	return 0;
}

/* The common set-up of one transfer. */
static struct curl_slist *setup(struct gg_http *h, struct xfer *x, const char *method,
				const char *url, const char *content_type, const char *accept,
				const char *const *extra)
{
	CURL *c = h->curl;
	curl_easy_reset(c); /* keeps the connection cache */
	x->method = method;
	if (h->o.log && h->o.log->level >= 2) {
		curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_debug);
		curl_easy_setopt(c, CURLOPT_DEBUGDATA, h);
		curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
	}
	h->errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	if (h->o.follow) {
		curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
		curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
	}
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_CAINFO, NULL); /* only the grid CA dir */
	curl_easy_setopt(c, CURLOPT_CAPATH, h->ca_dir);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->o.connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "gridgpu/" GG_VERSION);
	if (h->proxy_path) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, h->proxy_path);
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(c, CURLOPT_SSLKEY, h->proxy_path);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	else if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	struct curl_slist *hdr = NULL, *t;
	char line[160];
	/* "Expect: 100-continue" costs a round trip on every upload. */
	hdr = curl_slist_append(hdr, "Expect:");
	if (accept) {
		snprintf(line, sizeof line, "Accept: %s", accept);
		if ((t = curl_slist_append(hdr, line)))
			hdr = t;
	}
	if (content_type) {
		snprintf(line, sizeof line, "Content-Type: %s", content_type);
		if ((t = curl_slist_append(hdr, line)))
			hdr = t;
	}
	for (size_t i = 0; extra && extra[i]; i++)
		if ((t = curl_slist_append(hdr, extra[i])))
			hdr = t;
	if (h->auth_header && (t = curl_slist_append(hdr, h->auth_header)))
		hdr = t;
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	return hdr;
}

static void free_headers(struct curl_slist *hdr)
{
	/* The bearer token is in one of these strings: wipe before freeing. */
	for (struct curl_slist *s = hdr; s; s = s->next)
		OPENSSL_cleanse(s->data, strlen(s->data));
	curl_slist_free_all(hdr);
}

/* Failures that happen before libcurl writes the request: the name does not
 * resolve, the connection is refused, the TLS handshake fails (a server
 * certificate that is refused, a client certificate that cannot be used). */
static int before_request(CURLcode c)
{
	switch (c) {
	case CURLE_URL_MALFORMAT:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR: return 1;
	default: return 0;
	}
}

static int perform(struct gg_http *h, struct xfer *x, const char *url, struct gg_err *err)
{
	double t0 = gg_mono_msf();
	CURLcode c = h->last = curl_easy_perform(h->curl);
	long code = 0;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
	if (c == CURLE_OK)
		gg_logf(h->o.log, 1, "%s %s -> %ld (%.0f ms)", x->method, url, code,
			gg_mono_msf() - t0);
	else
		gg_logf(h->o.log, 1, "%s %s -> failed: %s (%.0f ms)", x->method, url,
			h->errbuf[0] ? h->errbuf : curl_easy_strerror(c), gg_mono_msf() - t0);
	long nc = 0, sent = 0;
	curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &nc);
	h->connections += nc;
	curl_off_t up = 0, down = 0;
	long req = 0, hdr = 0;
	curl_easy_getinfo(h->curl, CURLINFO_SIZE_UPLOAD_T, &up);
	curl_easy_getinfo(h->curl, CURLINFO_SIZE_DOWNLOAD_T, &down);
	curl_easy_getinfo(h->curl, CURLINFO_REQUEST_SIZE, &req);
	curl_easy_getinfo(h->curl, CURLINFO_HEADER_SIZE, &hdr);
	h->bytes_sent += (int64_t)up + req;
	h->bytes_received += (int64_t)down + hdr;
	/* Nothing sent: a failure before the request, and not one byte of it out. */
	if (c == CURLE_OK || !before_request(c) ||
	    curl_easy_getinfo(h->curl, CURLINFO_REQUEST_SIZE, &sent) != CURLE_OK || sent > 0)
		h->unsent = 0;
	if (c != CURLE_OK) {
		if (x->write_errno)
			return gg_err_sys(err, GG_EIO, x->write_errno, "writing the answer of %s",
					  url);
		if (x->cancelled)
			return gg_err_set(err, GG_EINTR, "interrupted");
		if (x->too_large)
			return gg_err_set(err, GG_EPROTO,
					  "%s: the answer is larger than %zu MiB: "
					  "refused",
					  url, h->o.max_body >> 20);
		return map_curl_error(h, c, url, err);
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &x->resp->status);
	curl_off_t cl = -1;
	if (curl_easy_getinfo(h->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK)
		cl = -1;
	x->resp->length = (int64_t)cl;
	if (!x->resp->body) {
		x->resp->body = calloc(1, 1);
		if (!x->resp->body)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}

/* The request through the keeper: 1 and *rc when it answered (or failed in a
 * way that must not be repeated), 0 to send it here (it is not used again). */
static int via_keeper(struct gg_http *h, const char *method, const char *url,
		      const char *content_type, const void *body, size_t len, const char *accept,
		      int idempotent, struct gg_http_resp *resp, int *rc, struct gg_err *err)
{
	int64_t left = h->deadline_ms ? h->deadline_ms - gg_mono_ms() : 0;
	if (h->cleanup || (h->deadline_ms && left <= 0))
		return 0;
	struct gg_keep_call c = {.method = method,
				 .url = url,
				 .content_type = content_type,
				 .accept = accept,
				 .body = body,
				 .len = len,
				 .idempotent = idempotent,
				 .retries = h->o.retries,
				 .timeout_ms = h->o.timeout_ms,
				 .deadline_left_ms = left,
				 .cancel = h->o.cancel,
				 .cancel_ud = h->o.cancel_ud};
	struct gg_keep_counts n = {0};
	double t0 = gg_mono_msf();
	if (!gg_keep_request(&h->keep_fd, h->keep_sock, &c, resp, &n, rc, err)) {
		gg_logf(h->o.log, 1, "no connection keeper answers: connecting directly");
		free(h->keep_sock);
		h->keep_sock = NULL;
		return 0;
	}
	h->kept++;
	h->connections += n.conns;
	h->bytes_sent += n.sent;
	h->bytes_received += n.received;
	h->unsent = n.unsent;
	if (*rc == 0)
		gg_logf(h->o.log, 1, "%s %s -> %ld (%.0f ms, kept connection%s)", method, url,
			resp->status, gg_mono_msf() - t0, n.conns ? ", new" : "");
	else
		gg_logf(h->o.log, 1, "%s %s -> failed: %s (%.0f ms, kept connection)", method, url,
			err ? err->msg : "", gg_mono_msf() - t0);
	return 1;
}

/* gg_http_request with more header lines (NULL-terminated, or NULL). */
static int request(struct gg_http *h, const char *method, const char *url, const char *content_type,
		   const void *body, size_t len, const char *accept, const char *const *extra,
		   int idempotent, struct gg_http_resp *resp, struct gg_err *err)
{
	int tries = 1 + h->o.retries;
	long backoff = h->o.retry_base_ms;
	int rc = 0;
	/* only what may be sent twice goes through the keeper: a submission or
	 * delegation stays this process's, so that killing it stops it */
	if (h->keep_sock && !extra && idempotent &&
	    via_keeper(h, method, url, content_type, body, len, accept, idempotent, resp, &rc, err))
		return rc;
	h->unsent = 1; /* until a try may have sent something */
	for (int i = 0; i < tries; i++) {
		gg_http_resp_clear(resp);
		if ((rc = refresh_auth(h, err)) < 0)
			return rc;
		long timeout = h->o.timeout_ms;
		int64_t left = h->deadline_ms ? h->deadline_ms - (int64_t)gg_mono_msf() : 0;
		if (h->deadline_ms && left <= 0)
			return gg_err_set(err, GG_ENET, "%s: no answer in the time given", url);
		if (h->deadline_ms && (!timeout || left < timeout))
			timeout = (long)left;
		struct xfer x = {.h = h, .resp = resp};
		struct curl_slist *hdr = setup(h, &x, method, url, content_type, accept, extra);
		curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout);
		if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS,
					 body ? (const char *)body : "");
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		}
		rc = perform(h, &x, url, err);
		free_headers(hdr);
		if (rc == GG_EINTR)
			return rc;
		int retry = 0;
		/* A request that never reached the server (no connection, no TLS) can
		 * always be sent again;
		 * anything else only when repeating it is harmless. */
		if (rc == GG_ECRED)
			retry = 0; /* a server refusing the credential refuses it again */
		else if (rc < 0)
			retry = h->last == CURLE_COULDNT_CONNECT ||
				h->last == CURLE_SSL_CONNECT_ERROR || /* nothing was sent */
				(idempotent && transport_retryable(h->last));
		else
			retry = idempotent &&
				(resp->status == 502 || resp->status == 503 || resp->status == 504);
		if (!retry || i + 1 == tries)
			break;
		if (sleep_ms(h, backoff) < 0)
			return gg_err_set(err, GG_EINTR, "interrupted");
		backoff *= 2;
	}
	return rc;
}

int gg_http_request(struct gg_http *h, const char *method, const char *url,
		    const char *content_type, const void *body, size_t len, const char *accept,
		    int idempotent, struct gg_http_resp *resp, struct gg_err *err)
{
	return request(h, method, url, content_type, body, len, accept, NULL, idempotent, resp,
		       err);
}

int gg_http_put_file(struct gg_http *h, const char *url, const char *path,
		     gg_http_progress_fn progress, void *ud, struct gg_http_resp *resp,
		     struct gg_err *err)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_EIO, errno,
				  "reading '%s'", path);
	struct stat st;
	if (fstat(fileno(f), &st) < 0) {
		int e = errno;
		fclose(f);
		return gg_err_sys(err, GG_EIO, e, "reading '%s'", path);
	}
	gg_http_resp_clear(resp);
	h->unsent = 1;
	int arc = refresh_auth(h, err);
	if (arc < 0) {
		fclose(f);
		return arc;
	}
	struct xfer x = {.h = h, .resp = resp, .progress = progress, .ud = ud};
	struct curl_slist *hdr = setup(h, &x, "PUT", url, "application/octet-stream", NULL, NULL);
	curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h->curl, CURLOPT_READDATA, f);
	curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 0L);
	/* A stalled upload is dead: under 1 KiB/s for 60 s. */
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	int rc = perform(h, &x, url, err);
	free_headers(hdr);
	fclose(f);
	return rc;
}

int gg_http_get_file(struct gg_http *h, const char *url, const char *path, mode_t mode,
		     gg_http_progress_fn progress, void *ud, struct gg_http_resp *resp,
		     struct gg_err *err)
{
	char *tmp = gg_strdup_printf("%s.part.XXXXXX", path);
	if (!tmp)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int arc = refresh_auth(h, err);
	if (arc < 0) {
		free(tmp);
		return arc;
	}
	int fd = gg_compat_mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return gg_err_sys(err, GG_EIO, e, "writing '%s'", path);
	}
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		close(fd);
		unlink(tmp);
		free(tmp);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	gg_http_resp_clear(resp);
	h->unsent = 1;
	struct xfer x = {.h = h, .resp = resp, .out = f, .progress = progress, .ud = ud};
	struct curl_slist *hdr = setup(h, &x, "GET", url, NULL, NULL, NULL);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	int rc = perform(h, &x, url, err);
	free_headers(hdr);
	int e = 0;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fchmod(fileno(f), mode) != 0)
		e = errno;
	if (fclose(f) != 0 && !e)
		e = errno;
	if (rc == 0 && resp->status >= 200 && resp->status < 300) {
		if (e || rename(tmp, path) != 0) {
			rc = gg_err_sys(err, GG_EIO, e ? e : errno, "writing '%s'", path);
			unlink(tmp);
		}
	} else {
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

/* One resumed download: the part, the file beside it that names the version
 * its bytes are of, and what the server says of the file. */
struct fetch {
	const char *url;
	char *part, *vfile;     /* PATH.part, PATH.part.validator */
	FILE *f;                /* the part, appended to */
	int64_t from;           /* bytes of the part kept: the Range starts there */
	struct gg_version want; /* the file as HEAD describes it */
	struct gg_version got;  /* the version the answer's bytes are of */
	int begun;              /* the answer's first bytes were looked at */
	const char *refused;    /* why the answer's bytes were not taken */
	int again;              /* ... and the part is started over */
	int done;               /* the part is named path */
	struct gg_err verr;     /* writing the validator file */
};

/* Nothing of the part is kept: emptied, its validator file removed. */
static int part_restart(struct fetch *fe)
{
	unlink(fe->vfile);
	fe->from = 0;
	if (fflush(fe->f) != 0 || ftruncate(fileno(fe->f), 0) != 0)
		return -1;
	return 0;
}

/* A 206 must be the bytes asked of the version the part is of. */
static int begin_partial(struct xfer *x, struct fetch *fe)
{
	if (!gg_content_range_is(x->resp->content_range, fe->from, fe->want.size - 1,
				 fe->want.size))
		fe->refused = "other bytes than those asked (Content-Range)";
	else if (!gg_version_agree(&fe->want, &fe->got))
		fe->refused = "bytes of another version of the file";
	fe->again = fe->refused != NULL;
	fe->got.size = fe->want.size;
	return fe->refused ? -1 : 0;
}

/* The answer's first bytes: taken (0) or not (-1, the transfer stops). A 200
 * is the whole file: the part starts over, with the validators of this
 * answer written beside it before its first byte. */
static int begin_body(struct xfer *x)
{
	struct fetch *fe = x->fetch;
	if (fe->begun)
		return 0;
	fe->begun = 1;
	if (gg_version_of(x->resp, &fe->got) < 0) {
		x->write_errno = ENOMEM;
		return -1;
	}
	if (x->status_line == 206 && fe->from > 0)
		return begin_partial(x, fe);
	if (x->status_line != 200) {
		fe->refused = x->status_line == 206 ? "a part of the file when all of it was asked"
						    : "an answer without the file";
		return -1;
	}
	curl_off_t cl = -1;
	if (curl_easy_getinfo(x->h->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK)
		cl = -1;
	fe->got.size = cl >= 0                                 ? (int64_t)cl
		       : gg_version_agree(&fe->want, &fe->got) ? fe->want.size
							       : -1;
	if ((fe->from && part_restart(fe) < 0) ||
	    gg_version_save(fe->vfile, fe->url, &fe->got, &fe->verr) < 0) {
		x->write_errno = errno ? errno : EIO;
		return -1;
	}
	x->offset = 0;
	return 0;
}

/* The file as the server describes it (HEAD, with its checksum asked): an
 * empty want when it does not answer. */
static int ask_version(struct gg_http *h, struct fetch *fe, struct gg_err *err)
{
	static const char *const extra[] = {GG_WANT_DIGEST, NULL};
	struct gg_http_resp r = {0};
	struct gg_err e = {0};
	int rc = 0;
	if (request(h, "HEAD", fe->url, NULL, NULL, 0, NULL, extra, 1, &r, &e) == 0 &&
	    r.status >= 200 && r.status < 300) {
		fe->want.size = r.length;
		rc = gg_version_of(&r, &fe->want) < 0 ? gg_err_set(err, GG_ENOMEM, "out of memory")
						      : 0;
	} else if (e.code == GG_EINTR) {
		rc = gg_err_set(err, GG_EINTR, "interrupted");
	}
	gg_http_resp_clear(&r);
	return rc;
}

/* One GET of the file into the part: from fe->from (a Range, If-Range the
 * part's validator) to its end, or all of it. */
static int get_part(struct gg_http *h, struct fetch *fe, gg_http_progress_fn progress, void *ud,
		    struct gg_http_resp *resp, struct gg_err *err)
{
	char range[64], ifr[640]; /* validators are at most 512 bytes */
	const char *extra[3] = {GG_WANT_DIGEST, NULL, NULL};
	const char *v = fe->want.etag ? fe->want.etag : fe->want.modified;
	if (fe->from > 0 && v && snprintf(ifr, sizeof ifr, "If-Range: %s", v) < (int)sizeof ifr)
		extra[1] = ifr;
	gg_http_resp_clear(resp);
	gg_version_clear(&fe->got);
	fe->begun = 0;
	fe->refused = NULL;
	fe->again = 0;
	h->unsent = 1;
	struct xfer x = {.h = h,
			 .resp = resp,
			 .out = fe->f,
			 .progress = progress,
			 .ud = ud,
			 .offset = fe->from,
			 .fetch = fe};
	struct curl_slist *hdr = setup(h, &x, "GET", fe->url, NULL, NULL, extra);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	if (fe->from > 0) {
		snprintf(range, sizeof range, "%lld-%lld", (long long)fe->from,
			 (long long)fe->want.size - 1);
		curl_easy_setopt(h->curl, CURLOPT_RANGE, range);
	}
	int rc = perform(h, &x, fe->url, err);
	free_headers(hdr);
	if (fe->verr.code)
		*err = fe->verr;
	else if (fe->refused && rc < 0 && rc != GG_EINTR)
		rc = 0; /* not an error of the transfer: the caller decides */
	if (rc == 0 && !fe->begun && resp->status == 200) /* no body: an empty file */
		fe->got.size = resp->length;
	return rc;
}

/* The part, whole: the size the server said, the checksum it gave; then
 * named path. An error keeps a short part (to resume), removes a wrong one. */
static int part_finish(struct fetch *fe, const char *path, mode_t mode, struct gg_err *err)
{
	int e = 0;
	if (fflush(fe->f) != 0 || fsync(fileno(fe->f)) != 0 || fchmod(fileno(fe->f), mode) != 0)
		e = errno;
	struct stat st;
	int64_t got = fstat(fileno(fe->f), &st) == 0 ? (int64_t)st.st_size : -1;
	int64_t size = fe->got.size;
	const struct gg_version *sum = fe->got.digest                          ? &fe->got
				       : gg_version_agree(&fe->want, &fe->got) ? &fe->want
									       : &fe->got;
	if (e)
		return gg_err_sys(err, GG_EIO, e, "writing '%s'", fe->part);
	if (size >= 0 && got < size)
		return gg_err_set(err, GG_ENET, "%s: %lld of %lld bytes came (kept to resume)",
				  fe->url, (long long)got, (long long)size);
	int rc = size >= 0 && got > size
			 ? gg_err_set(err, GG_EPROTO,
				      "%s: %lld bytes came of a file of %lld: removed", fe->url,
				      (long long)got, (long long)size)
			 : gg_version_check(sum, fe->part, err);
	if (rc < 0) {
		part_restart(fe);
		return rc == GG_EPROTO ? gg_err_prefix(err, "%s", fe->url) : rc;
	}
	if (rename(fe->part, path) != 0)
		return gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	fe->done = 1;
	unlink(fe->vfile);
	return 0;
}

/* The GET and the checks, and once more from byte 0 when the answer to the
 * Range was not the rest of the part's version or the resumed file fails the
 * checksum. */
static int fetch_file(struct gg_http *h, struct fetch *fe, const char *path, mode_t mode,
		      gg_http_progress_fn progress, void *ud, struct gg_http_resp *resp,
		      struct gg_err *err)
{
	for (int round = 0;; round++) {
		int64_t from = fe->from;
		int rc = from > 0 && from == fe->want.size
				 ? 0 /* all there */
				 : get_part(h, fe, progress, ud, resp, err);
		if (rc == 0 && from > 0 && from == fe->want.size) {
			resp->status = 200;
			fe->got = fe->want;
			fe->want = (struct gg_version){.size = -1};
		}
		int again = rc == 0 && fe->again && round == 0;
		if (rc == 0 && fe->refused && !again)
			rc = gg_err_set(err, GG_EPROTO, "%s: the storage answered %s", fe->url,
					fe->refused);
		else if (rc == 0 && resp->status >= 200 && resp->status < 300 && !again)
			rc = part_finish(fe, path, mode, err);
		else if (rc == 0 && !again)
			part_restart(fe); /* an error answer: nothing of the file to keep */
		again |= rc == GG_EPROTO && from > 0 && round == 0;
		if (!again)
			return rc;
		gg_logf(h->o.log, 1, "%s: %s: starting over from byte 0", fe->url,
			fe->refused ? fe->refused : err->msg);
		if (part_restart(fe) < 0)
			return gg_err_sys(err, GG_EIO, errno, "writing '%s'", fe->part);
		*err = (struct gg_err){0};
	}
}

/* PATH.part opened for appending (made 0600 when new): the bytes of it kept
 * when its validator file names the version HEAD describes, else none. */
static int part_open(struct fetch *fe, const char *path, struct gg_err *err)
{
	fe->part = gg_strdup_printf("%s.part", path);
	fe->vfile = gg_strdup_printf("%s.part.validator", path);
	if (!fe->part || !fe->vfile)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int fd = open(fe->part, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int e = errno ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		return gg_err_sys(err, GG_EIO, e, "writing '%s'", fe->part);
	}
	if (!(fe->f = fdopen(fd, "ab"))) {
		close(fd);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	struct gg_version kept = {.size = -1};
	gg_version_load(fe->vfile, fe->url, &kept);
	int64_t have = (int64_t)st.st_size;
	if (have > 0 && have <= fe->want.size && gg_version_same(&kept, &fe->want))
		fe->from = have;
	gg_version_clear(&kept);
	if (fe->from != have && part_restart(fe) < 0)
		return gg_err_sys(err, GG_EIO, errno, "writing '%s'", fe->part);
	return 0;
}

int gg_http_get_resume(struct gg_http *h, const char *url, const char *path, mode_t mode,
		       gg_http_progress_fn progress, void *ud, int64_t *resumed,
		       struct gg_http_resp *resp, struct gg_err *err)
{
	struct fetch fe = {.url = url, .want.size = -1, .got.size = -1};
	*resumed = 0;
	int rc = refresh_auth(h, err);
	if (rc == 0)
		rc = ask_version(h, &fe, err);
	if (rc == 0)
		rc = part_open(&fe, path, err);
	if (rc == 0 && fe.from > 0)
		gg_logf(h->o.log, 1, "%s: resuming at byte %lld of %lld", url, (long long)fe.from,
			(long long)fe.want.size);
	if (rc == 0)
		rc = fetch_file(h, &fe, path, mode, progress, ud, resp, err);
	*resumed = fe.from;
	struct stat st; /* an empty part has nothing to resume */
	if (fe.f && !fe.done && fflush(fe.f) == 0 && fstat(fileno(fe.f), &st) == 0 &&
	    st.st_size == 0) {
		unlink(fe.part);
		unlink(fe.vfile);
	}
	if (fe.f && fclose(fe.f) != 0 && rc == 0)
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	gg_version_clear(&fe.want);
	gg_version_clear(&fe.got);
	free(fe.part);
	free(fe.vfile);
	return rc;
}

int gg_http_resp_json(const struct gg_http_resp *resp, json_t **out, struct gg_err *err)
{
	size_t i = 0;
	while (i < resp->len &&
	       (resp->body[i] == ' ' || resp->body[i] == '\n' || resp->body[i] == '\r'))
		i++;
	if (i == resp->len) {
		*out = json_object();
		return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	json_error_t je;
	*out = json_loadb(resp->body, resp->len, JSON_REJECT_DUPLICATES, &je);
	if (!*out)
		return gg_err_set(err, GG_EPROTO, "the answer is not valid JSON (%s at byte %d)",
				  je.text, je.position);
	return 0;
}
