/* A local HTTPS server for the unit tests (header-only, like squat.h): a key
 * and a self-signed certificate for 127.0.0.1 made at start (the CA directory
 * holds it under its hash; nothing is written elsewhere), one connection at a
 * time, keep-alive, answering HEAD and GET (Range, If-Range) for one file the
 * test sets, and misbehaving as the test says. Used by test_http (resumed
 * downloads) and test_engine (a job's outputs at storage). */
#ifndef GG_UNIT_HTTPS_SRV_H
#define GG_UNIT_HTTPS_SRV_H

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

static int listen_loopback(int *fd, int *port)
{
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	if (bind(*fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(*fd, 8) < 0)
		return -1;
	getsockname(*fd, (struct sockaddr *)&a, &l);
	*port = ntohs(a.sin_port);
	return 0;
}

/* ---- the server ---- */
enum range_mode { RANGE_OK, RANGE_IGNORED, RANGE_WRONG };

struct srv {
	int fd, port;
	SSL_CTX *ctx;
	pthread_t t;
	char dir[64], cadir[96];
	/* the file served, and how */
	const unsigned char *body;
	size_t len;
	const char *etag;   /* ETag, or NULL */
	const char *digest; /* Digest (to a Want-Digest), or NULL */
	size_t cut;         /* a GET of the whole file: close after this many bytes */
	int no_length;      /* a GET of the whole file: no Content-Length, close */
	enum range_mode range;
	/* what came */
	int gets, ranges;
	char last_range[128], last_if_range[256];
};

static int srv_cert(struct srv *s)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	X509V3_CTX v3;
	if (!k || !x)
		return -1;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1,
				   -1, 0);
	X509_set_issuer_name(x, n);
	X509_set_pubkey(x, k);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "CA:TRUE");
	X509_add_ext(x, san, -1);
	X509_add_ext(x, bc, -1);
	X509_EXTENSION_free(san);
	X509_EXTENSION_free(bc);
	X509_sign(x, k, EVP_sha256());
	char p[160];
	snprintf(p, sizeof p, "%s/%08lx.0", s->cadir, X509_subject_name_hash(x));
	FILE *f = fopen(p, "w");
	int ok = f && PEM_write_X509(f, x);
	if (f)
		fclose(f);
	s->ctx = SSL_CTX_new(TLS_server_method());
	ok = ok && s->ctx && SSL_CTX_use_certificate(s->ctx, x) == 1 &&
	     SSL_CTX_use_PrivateKey(s->ctx, k) == 1;
	X509_free(x);
	EVP_PKEY_free(k);
	return ok ? 0 : -1;
}

/* The value of header name in the request, or "". */
static void req_header(const char *req, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	out[0] = '\0';
	for (const char *p = strstr(req, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n"))
		if (!strncasecmp(p + 2, name, nl) && p[2 + nl] == ':') {
			const char *v = p + 3 + nl + strspn(p + 3 + nl, " ");
			snprintf(out, n, "%.*s", (int)strcspn(v, "\r"), v);
			return;
		}
}

static int ssl_put(SSL *c, const void *b, size_t n)
{
	return n == 0 || SSL_write(c, b, (int)n) == (int)n ? 0 : -1;
}

/* One answer; 1 when the connection is to be closed after it. */
static int srv_answer(struct srv *s, SSL *c, const char *req)
{
	char h[1024], range[128], ifr[256], want[128];
	int head = !strncmp(req, "HEAD ", 5);
	req_header(req, "Range", range, sizeof range);
	req_header(req, "If-Range", ifr, sizeof ifr);
	req_header(req, "Want-Digest", want, sizeof want);
	long long a = -1, b = -1;
	if (!head) {
		s->gets++;
		snprintf(s->last_range, sizeof s->last_range, "%s", range);
		snprintf(s->last_if_range, sizeof s->last_if_range, "%s", ifr);
		s->ranges += range[0] != '\0';
	}
	int ranged = !head && sscanf(range, "bytes=%lld-%lld", &a, &b) == 2 && a >= 0 && b >= a &&
		     (size_t)b < s->len && s->range != RANGE_IGNORED &&
		     !(ifr[0] && (!s->etag || strcmp(ifr, s->etag)));
	char extra[512] = "";
	if (s->etag)
		snprintf(extra, sizeof extra, "ETag: %s\r\n", s->etag);
	if (s->digest && want[0])
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "Digest: %s\r\n",
			 s->digest);
	if (ranged) {
		long long first = s->range == RANGE_WRONG ? 0 : a, last = first + (b - a);
		snprintf(h, sizeof h,
			 "HTTP/1.1 206 Partial Content\r\nContent-Length: %lld\r\n"
			 "Content-Range: bytes %lld-%lld/%zu\r\n%s\r\n",
			 b - a + 1, first, last, s->len, extra);
		return ssl_put(c, h, strlen(h)) < 0 ||
		       ssl_put(c, s->body + first, (size_t)(b - a + 1)) < 0;
	}
	size_t n = !head && s->cut ? s->cut : s->len;
	if (!head && s->no_length)
		snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nConnection: close\r\n%s\r\n", extra);
	else
		snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n", s->len,
			 extra);
	if (ssl_put(c, h, strlen(h)) < 0 || (!head && ssl_put(c, s->body, n) < 0))
		return 1;
	return !head && (s->cut || s->no_length);
}

static void *srv_run(void *ud)
{
	struct srv *s = ud;
	int fd;
	while ((fd = accept(s->fd, NULL, NULL)) >= 0) {
		SSL *c = SSL_new(s->ctx);
		SSL_set_fd(c, fd);
		char req[8192];
		size_t have = 0;
		int r;
		int ok = SSL_accept(c) == 1;
		while (ok && (r = SSL_read(c, req + have, (int)(sizeof req - have - 1))) > 0) {
			have += (size_t)r;
			req[have] = '\0';
			char *end = strstr(req, "\r\n\r\n");
			if (!end)
				continue;
			end[2] = '\0';
			if (srv_answer(s, c, req))
				break;
			have = 0;
		}
		SSL_shutdown(c);
		SSL_free(c);
		close(fd);
	}
	return NULL;
}

static void srv_start(struct srv *s, const unsigned char *body, size_t len)
{
	memset(s, 0, sizeof *s);
	s->body = body;
	s->len = len;
	strcpy(s->dir, "/tmp/gg-http.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->cadir, sizeof s->cadir, "%s/ca", s->dir);
	assert_int_equal(mkdir(s->cadir, 0700), 0);
	assert_int_equal(srv_cert(s), 0);
	assert_int_equal(listen_loopback(&s->fd, &s->port), 0);
	assert_int_equal(pthread_create(&s->t, NULL, srv_run, s), 0);
}

static void srv_stop(struct srv *s)
{
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->t, NULL);
	close(s->fd);
	SSL_CTX_free(s->ctx);
	assert_int_equal(unit_rmtree(s->dir), 0);
}

#endif
