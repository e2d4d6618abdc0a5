/* lib/http/keep.c: the connection keeper's frames (keep.h) and a command's side
 * of it: a request handed to the keeper, or handed back when it cannot take it. */
#include "core/par.h"
#include "http/keep.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ABSENT 0xffffffffu

static uint32_t get32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void put32(char *p, uint32_t v)
{
	unsigned char *u = (unsigned char *)p;
	u[0] = (unsigned char)(v >> 24);
	u[1] = (unsigned char)(v >> 16);
	u[2] = (unsigned char)(v >> 8);
	u[3] = (unsigned char)v;
}

int gg_keep_parse(char *buf, size_t len, struct gg_keep_frame *f)
{
	size_t o = 0;
	f->n = 0;
	while (o < len) {
		if (f->n == GG_KEEP_MAX_FIELDS || len - o < 4)
			return -1;
		uint32_t l = get32(buf + o);
		o += 4;
		if (l == ABSENT) {
			f->v[f->n] = NULL;
			f->len[f->n++] = 0;
			continue;
		}
		if (l >= len - o || buf[o + l] != '\0')
			return -1;
		f->v[f->n] = buf + o;
		f->len[f->n++] = l;
		o += (size_t)l + 1;
	}
	return 0;
}

char *gg_keep_build(size_t n, const char *const *v, const size_t *len, size_t *outlen)
{
	size_t total = 8;
	for (size_t i = 0; i < n; i++)
		total += 4 + (v[i] ? (len ? len[i] : strlen(v[i])) + 1 : 0);
	if (n > GG_KEEP_MAX_FIELDS || total - 8 > GG_KEEP_MAX_FRAME)
		return NULL;
	char *b = malloc(total), *p = b + 8;
	if (!b)
		return NULL;
	memcpy(b, GG_KEEP_MAGIC, 4);
	put32(b + 4, (uint32_t)(total - 8));
	for (size_t i = 0; i < n; i++) {
		if (!v[i]) {
			put32(p, ABSENT);
			p += 4;
			continue;
		}
		size_t l = len ? len[i] : strlen(v[i]);
		put32(p, (uint32_t)l);
		memcpy(p + 4, v[i], l);
		p[4 + l] = '\0';
		p += 4 + l + 1;
	}
	*outlen = total;
	return b;
}

/* n bytes into p; polled in steps of 50 ms for cancel and the deadline */
static int read_full(int fd, char *p, size_t n, int64_t deadline_ms, int (*cancel)(void *),
		     void *ud, int *cancelled)
{
	while (n) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int wait = deadline_ms || cancel ? 50 : -1;
		int r = poll(&pf, 1, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			if (cancel && cancel(ud)) {
				*cancelled = 1;
				return -1;
			}
			if (deadline_ms && gg_mono_ms() > deadline_ms)
				return -1;
			continue;
		}
		ssize_t got = read(fd, p, n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int gg_keep_read(int fd, int64_t deadline_ms, int (*cancel)(void *), void *ud, int *cancelled,
		 char **buf, struct gg_keep_frame *f)
{
	char head[8];
	*buf = NULL;
	if (read_full(fd, head, 8, deadline_ms, cancel, ud, cancelled) < 0 ||
	    memcmp(head, GG_KEEP_MAGIC, 4) != 0)
		return -1;
	uint32_t len = get32(head + 4);
	if (len > GG_KEEP_MAX_FRAME || !(*buf = malloc((size_t)len + 1)))
		return -1;
	if (read_full(fd, *buf, len, deadline_ms, cancel, ud, cancelled) < 0 ||
	    gg_keep_parse(*buf, len, f) < 0) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return 0;
}

int gg_keep_write(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = gg_compat_send(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int gg_keep_num(const char *s, int64_t *v)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || *end || end == s)
		return -1;
	*v = x;
	return 0;
}

/* A connection to the keeper at sock that greeted at once; -1 for none. */
static int keep_connect(const char *sock)
{
	int fd = gg_unix_connect(sock);
	if (fd < 0)
		return -1;
	char *buf = NULL;
	struct gg_keep_frame f;
	int cancelled = 0;
	if (gg_keep_read(fd, gg_mono_ms() + GG_KEEP_GREET_MS, NULL, NULL, &cancelled, &buf, &f) <
		    0 ||
	    f.n != 1 || !f.v[0] || strcmp(f.v[0], "K") != 0) {
		free(buf);
		close(fd);
		return -1;
	}
	free(buf);
	return fd;
}

int gg_keep_alive(const char *sock)
{
	int fd = gg_unix_connect(sock);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static char *dup_field(const struct gg_keep_frame *f, int i)
{
	return f->v[i] ? strdup(f->v[i]) : NULL;
}

/* The answer's fields into resp, err and n; *rc. -1 when it is not one. */
static int take_answer(struct gg_keep_frame *f, char *buf, struct gg_http_resp *resp,
		       struct gg_keep_counts *n, int *rc, struct gg_err *err)
{
	int64_t v[KA_N] = {0};
	static const int nums[] = {KA_RC,    KA_STATUS, KA_LENGTH,  KA_UNSENT,
				   KA_CONNS, KA_SENT,   KA_RECEIVED};
	if (f->n != KA_N || strcmp(f->v[KA_KIND], "A") != 0)
		return -1;
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (gg_keep_num(f->v[nums[i]], &v[nums[i]]) < 0)
			return -1;
	*rc = (int)v[KA_RC];
	n->conns = (long)v[KA_CONNS], n->sent = v[KA_SENT], n->received = v[KA_RECEIVED];
	n->unsent = v[KA_UNSENT] != 0;
	if (*rc < 0) {
		gg_err_set(err, *rc, "%s", f->v[KA_ERRMSG] ? f->v[KA_ERRMSG] : "failed");
		return 0;
	}
	gg_http_resp_clear(resp);
	resp->status = (long)v[KA_STATUS];
	resp->length = v[KA_LENGTH];
	resp->reason = dup_field(f, KA_REASON);
	resp->content_type = dup_field(f, KA_CTYPE);
	resp->location = dup_field(f, KA_LOCATION);
	resp->etag = dup_field(f, KA_ETAG);
	resp->last_modified = dup_field(f, KA_LASTMOD);
	resp->digest = dup_field(f, KA_DIGEST);
	resp->content_range = dup_field(f, KA_RANGE);
	/* the body moved to the front of buf, NUL-terminated: buf becomes it */
	resp->len = f->v[KA_BODY] ? f->len[KA_BODY] : 0;
	if (f->v[KA_BODY])
		memmove(buf, f->v[KA_BODY], resp->len + 1);
	buf[resp->len] = '\0';
	resp->body = buf;
	return 1;
}

static char *build_request(const struct gg_keep_call *c, size_t *len)
{
	char idem[4], tmo[24], ret[24], dl[24];
	snprintf(idem, sizeof idem, "%d", c->idempotent ? 1 : 0);
	snprintf(tmo, sizeof tmo, "%ld", c->timeout_ms);
	snprintf(ret, sizeof ret, "%d", c->retries);
	snprintf(dl, sizeof dl, "%lld", (long long)c->deadline_left_ms);
	const char *v[KQ_N] = {"Q",       c->method,
			       c->url,    c->content_type,
			       c->accept, c->body ? (const char *)c->body : "",
			       idem,      tmo,
			       ret,       dl};
	size_t l[KQ_N];
	for (int i = 0; i < KQ_N; i++)
		l[i] = v[i] ? strlen(v[i]) : 0;
	l[KQ_BODY] = c->body ? c->len : 0;
	return gg_keep_build(KQ_N, v, l, len);
}

int gg_keep_request(int *fd, const char *sock, const struct gg_keep_call *c,
		    struct gg_http_resp *resp, struct gg_keep_counts *n, int *rc,
		    struct gg_err *err)
{
	size_t len = 0;
	char *req = build_request(c, &len), *buf = NULL;
	if (!req)
		return 0;
	if (*fd < 0)
		*fd = keep_connect(sock);
	if (*fd < 0 || gg_keep_write(*fd, req, len) < 0) {
		free(req);
		goto fallback;
	}
	free(req);
	struct gg_keep_frame f;
	int cancelled = 0;
	/* the keeper ends the request at its time; a bound here beyond that */
	int64_t bound = c->timeout_ms > 0 ? c->timeout_ms * (c->retries + 1) + 10000 : 0;
	if (c->deadline_left_ms > 0 && (!bound || c->deadline_left_ms + 10000 < bound))
		bound = c->deadline_left_ms + 10000;
	if (gg_keep_read(*fd, bound ? gg_mono_ms() + bound : 0, c->cancel, c->cancel_ud, &cancelled,
			 &buf, &f) < 0) {
		close(*fd);
		*fd = -1;
		if (cancelled) {
			*rc = gg_err_set(err, GG_EINTR, "interrupted");
			return 1;
		}
		if (c->idempotent)
			return 0;
		*rc = gg_err_set(err, GG_ENET,
				 "%s: the connection keeper ended during the request (it may "
				 "have reached the CE)",
				 c->url);
		return 1;
	}
	if (f.n == 1 && !strcmp(f.v[0], "N")) {
		free(buf);
		goto fallback;
	}
	int took = take_answer(&f, buf, resp, n, rc, err);
	if (took != 1)
		free(buf);
	if (took >= 0)
		return 1;
	*rc = gg_err_set(err, GG_EPROTO, "%s: the connection keeper's answer is not one", c->url);
	close(*fd);
	*fd = -1;
	return 1;
fallback:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return 0;
}
