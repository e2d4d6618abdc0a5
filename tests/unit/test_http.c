/* Unit tests of lib/http: errors, JSON bodies, and resumed downloads against
 * a local HTTPS server made here. The auth and keep-alive paths are tested
 * against the real CE in tests/e2e. */
#include "unit.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "http/http.h"

/* A loopback port with nothing listening. */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	bind(s, (struct sockaddr *)&a, sizeof a);
	getsockname(s, (struct sockaddr *)&a, &l);
	close(s);
	return ntohs(a.sin_port);
}

static void test_unreachable(void **state)
{
	(void)state;
	struct gg_http *h;
	struct gg_err err = {0};
	struct gg_http_opts o = {
		.ca_dir = "/tmp", .retries = 1, .retry_base_ms = 10, .connect_timeout_ms = 2000};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/arex/rest", closed_port());
	struct gg_http_resp r = {0};
	assert_int_equal(
		gg_http_request(h, "GET", url, NULL, NULL, 0, "application/json", 1, &r, &err),
		GG_ENET);
	assert_non_null(strstr(err.msg, "cannot connect"));
	assert_non_null(strstr(err.msg, url));
	/* plain http is refused: TLS verification is never off */
	assert_int_equal(
		gg_http_request(h, "GET", "http://127.0.0.1/x", NULL, NULL, 0, NULL, 1, &r, &err),
		GG_EUSAGE);
	gg_http_resp_clear(&r);
	gg_http_free(h);
	gg_http_free(NULL);
}

/* A loopback server that answers each connection with a line that is not TLS
 * and closes it: the TLS handshake fails before the request is written. */
struct notls {
	int fd, conns;
};

static void *notls_serve(void *ud)
{
	struct notls *n = ud;
	for (int i = 0; i < n->conns; i++) {
		int c = accept(n->fd, NULL, NULL);
		if (c < 0)
			break;
		if (write(c, "SSH-2.0-not-tls\r\n", 17) < 0) {
		}
		close(c);
	}
	return NULL;
}

/* A listening socket on a free loopback port. */
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

static int notls_listen(struct notls *n, int *port)
{
	return listen_loopback(&n->fd, port);
}

/* A request that could not be sent says so: connection refused, TLS handshake
 * failed (the caller may then forget what it would otherwise keep). */
static void test_unsent(void **state)
{
	(void)state;
	struct gg_http *h;
	struct gg_err err = {0};
	struct gg_http_opts o = {
		.ca_dir = "/tmp", .retries = -1, .retry_base_ms = 10, .connect_timeout_ms = 2000};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	char url[64];
	struct gg_http_resp r = {0};
	snprintf(url, sizeof url, "https://127.0.0.1:%d/arex/rest/1.0/jobs?action=new",
		 closed_port());
	assert_int_equal(
		gg_http_request(h, "POST", url, "application/xrsl", "&(x=1)", 6, NULL, 0, &r, &err),
		GG_ENET);
	assert_int_equal(gg_http_unsent(h), 1);

	struct notls n = {.conns = 1};
	int port = 0;
	assert_int_equal(notls_listen(&n, &port), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, notls_serve, &n), 0);
	snprintf(url, sizeof url, "https://127.0.0.1:%d/arex/rest/1.0/jobs?action=new", port);
	assert_int_equal(
		gg_http_request(h, "POST", url, "application/xrsl", "&(x=1)", 6, NULL, 0, &r, &err),
		GG_ENET);
	assert_int_equal(gg_http_unsent(h), 1);
	pthread_join(t, NULL);
	close(n.fd);
	gg_http_resp_clear(&r);
	gg_http_free(h);
}

static int always(void *ud)
{
	(void)ud;
	return 1;
}

static void test_cancel(void **state)
{
	(void)state;
	struct gg_http *h;
	struct gg_err err = {0};
	struct gg_http_opts o = {
		.ca_dir = "/tmp", .retries = 3, .retry_base_ms = 100000, .cancel = always};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/", closed_port());
	struct gg_http_resp r = {0};
	/* the backoff before the retry is cut short by the cancel callback */
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err),
			 GG_EINTR);
	gg_http_resp_clear(&r);
	gg_http_free(h);
}

static void test_resp_json(void **state)
{
	(void)state;
	json_t *j;
	struct gg_err err = {0};
	struct gg_http_resp r = {.body = (char *)"", .len = 0};
	assert_int_equal(gg_http_resp_json(&r, &j, &err), 0);
	assert_true(json_is_object(j) && json_object_size(j) == 0);
	json_decref(j);
	r.body = (char *)"{\"a\":1}";
	r.len = strlen(r.body);
	assert_int_equal(gg_http_resp_json(&r, &j, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
	json_decref(j);
	r.body = (char *)"<html><body>403</body></html>";
	r.len = strlen(r.body);
	assert_int_equal(gg_http_resp_json(&r, &j, &err), GG_EPROTO);
	assert_non_null(strstr(err.msg, "not valid JSON"));
}

static void test_default_ca_dir(void **state)
{
	(void)state;
	unsetenv("X509_CERT_DIR");
	assert_string_equal(gg_http_default_ca_dir(), "/etc/grid-security/certificates");
	setenv("X509_CERT_DIR", "/x/certs", 1);
	assert_string_equal(gg_http_default_ca_dir(), "/x/certs");
}

/* ---- resumed downloads against a local HTTPS server ------------------------
 * The server: a key and a self-signed certificate for 127.0.0.1 made at start
 * (the CA directory holds it under its hash; nothing is written elsewhere),
 * one connection at a time, keep-alive, answering HEAD and GET (Range,
 * If-Range) for one file the test sets, and misbehaving as the test says. */
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

/* One get_resume of the server's file into DIR/out on a new handle. */
static int srv_get(struct srv *s, int64_t *resumed, struct gg_err *err)
{
	struct gg_http *h;
	struct gg_http_opts o = {.ca_dir = s->cadir, .retries = -1};
	assert_int_equal(gg_http_new(&o, &h, err), 0);
	char url[64], path[128];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/store/f", s->port);
	snprintf(path, sizeof path, "%s/out", s->dir);
	struct gg_http_resp r = {0};
	int rc = gg_http_get_resume(h, url, path, 0644, NULL, NULL, resumed, &r, err);
	if (rc == 0 && r.status != 200 && r.status != 206)
		rc = -1000 - (int)r.status;
	gg_http_resp_clear(&r);
	gg_http_free(h);
	return rc;
}

/* DIR/NAME's bytes equal len bytes of want: 1, else 0 (missing too). */
static int srv_file_is(struct srv *s, const char *name, const unsigned char *want, size_t len)
{
	char p[160];
	snprintf(p, sizeof p, "%s/%s", s->dir, name);
	FILE *f = fopen(p, "rb");
	if (!f)
		return 0;
	unsigned char *b = malloc(len + 1);
	size_t n = fread(b, 1, len + 1, f);
	fclose(f);
	int same = n == len && memcmp(b, want, len) == 0;
	free(b);
	return same;
}

static int srv_exists(struct srv *s, const char *name)
{
	char p[160];
	snprintf(p, sizeof p, "%s/%s", s->dir, name);
	return access(p, F_OK) == 0;
}

/* Two versions of a 3000-byte file and their adler32 checksums. */
#define FLEN 3000
static unsigned char v1[FLEN], v2[FLEN];
static char v1_sum[64], v2_sum[64];

static void make_versions(void)
{
	for (size_t i = 0; i < FLEN; i++) {
		v1[i] = (unsigned char)(i * 7 + 1);
		v2[i] = (unsigned char)(i * 13 + 5);
	}
	snprintf(v1_sum, sizeof v1_sum, "adler32=%08x", libdeflate_adler32(1, v1, FLEN));
	snprintf(v2_sum, sizeof v2_sum, "adler32=%08x", libdeflate_adler32(1, v2, FLEN));
}

/* A broken fetch of v1 (the connection closed after 1000 bytes): its part. */
static void broken_fetch(struct srv *s)
{
	int64_t resumed = -1;
	struct gg_err err = {0};
	s->cut = 1000;
	assert_int_equal(srv_get(s, &resumed, &err), GG_ENET);
	assert_true(srv_file_is(s, "out.part", v1, 1000));
	assert_false(srv_exists(s, "out"));
	s->cut = 0;
}

/* A broken fetch resumes where it broke, the part's validator sent back. */
static void test_resume(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.etag = "\"v1\"";
	s.digest = v1_sum;
	broken_fetch(&s);
	assert_true(srv_exists(&s, "out.part.validator"));
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 1000);
	assert_string_equal(s.last_range, "bytes=1000-2999");
	assert_string_equal(s.last_if_range, "\"v1\"");
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	assert_false(srv_exists(&s, "out.part"));
	assert_false(srv_exists(&s, "out.part.validator"));
	srv_stop(&s);
}

/* A part of other bytes (none to say what it is a part of), or of a version
 * of the file the storage no longer has, is not completed: started over. */
static void test_stale_part(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.etag = "\"v1\"";
	s.digest = v1_sum;
	char p[160];
	snprintf(p, sizeof p, "%s/out.part", s.dir);
	FILE *f = fopen(p, "wb");
	assert_int_equal(fwrite(v2, 1, 600, f), 600);
	fclose(f);
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 0);
	assert_int_equal(s.ranges, 0);
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	/* a part of v1, and the storage now has v2 (same size) */
	snprintf(p, sizeof p, "%s/out", s.dir);
	assert_int_equal(unlink(p), 0);
	broken_fetch(&s);
	s.body = v2;
	s.etag = "\"v2\"";
	s.digest = v2_sum;
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 0);
	assert_true(srv_file_is(&s, "out", v2, FLEN));
	srv_stop(&s);
}

/* Without a validator (no ETag, Last-Modified or Digest) a part cannot be
 * told from another file's: the fetch starts over. A checksum of the wrong
 * length for its name (XrdHttp 5.5 labels its adler32 with the first name
 * asked: "SHA-256=" and 4 bytes) is no validator either. */
static void test_no_validator(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.digest = "SHA-256=PibSeg==";
	broken_fetch(&s);
	assert_false(srv_exists(&s, "out.part.validator"));
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 0);
	assert_int_equal(s.ranges, 0);
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	srv_stop(&s);
}

/* A 206 of other bytes than those asked is not appended: the file is
 * fetched again whole. */
static void test_wrong_range(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.etag = "\"v1\"";
	broken_fetch(&s);
	s.range = RANGE_WRONG;
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 0);
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	assert_false(srv_exists(&s, "out.part"));
	srv_stop(&s);
}

/* A 200 to the Range (a server that ignores it, or an If-Range that no
 * longer matches: here a new version) is the whole file, written from 0. */
static void test_range_ignored(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.etag = "\"v1\"";
	broken_fetch(&s);
	s.range = RANGE_IGNORED;
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 0);
	assert_int_equal(s.ranges, 1);
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	srv_stop(&s);
}

/* A body shorter than the file (no Content-Length, the connection closed) is
 * not the file: an error, the part kept; the next call resumes it. */
static void test_short_body(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.digest = v1_sum;
	s.no_length = 1;
	s.cut = 1200;
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), GG_ENET);
	assert_non_null(strstr(err.msg, "1200 of 3000 bytes"));
	assert_false(srv_exists(&s, "out"));
	assert_true(srv_file_is(&s, "out.part", v1, 1200));
	s.no_length = 0;
	s.cut = 0;
	assert_int_equal(srv_get(&s, &resumed, &err), 0);
	assert_int_equal(resumed, 1200);
	assert_true(srv_file_is(&s, "out", v1, FLEN));
	srv_stop(&s);
}

/* Bytes that do not match the storage's checksum are not the file: an error,
 * nothing left. */
static void test_digest_mismatch(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	s.digest = v2_sum;
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(srv_get(&s, &resumed, &err), GG_EPROTO);
	assert_non_null(strstr(err.msg, "checksum"));
	assert_false(srv_exists(&s, "out"));
	assert_false(srv_exists(&s, "out.part"));
	assert_false(srv_exists(&s, "out.part.validator"));
	srv_stop(&s);
}

int main(void)
{
	make_versions();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unreachable),    cmocka_unit_test(test_unsent),
		cmocka_unit_test(test_cancel),         cmocka_unit_test(test_resp_json),
		cmocka_unit_test(test_default_ca_dir), cmocka_unit_test(test_resume),
		cmocka_unit_test(test_stale_part),     cmocka_unit_test(test_no_validator),
		cmocka_unit_test(test_wrong_range),    cmocka_unit_test(test_range_ignored),
		cmocka_unit_test(test_short_body),     cmocka_unit_test(test_digest_mismatch),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
