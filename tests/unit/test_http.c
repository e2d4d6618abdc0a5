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
#include "https_srv.h"

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

/* A deadline (a sync's bound on one CE): a server that accepts the connection
 * and never answers is cut at it, not at the request's own 120 s; a request
 * asked once it has passed fails at once. */
static void test_deadline(void **state)
{
	(void)state;
	struct gg_http *h;
	struct gg_err err = {0};
	struct gg_http_opts o = {.ca_dir = "/tmp", .retries = -1};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	int fd, port;
	assert_int_equal(listen_loopback(&fd, &port), 0); /* never accepted, never answered */
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/arex/rest/1.0/jobs", port);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gg_http_set_deadline(h, (int64_t)t0.tv_sec * 1000 + t0.tv_nsec / 1000000 + 300);
	struct gg_http_resp r = {0};
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err), GG_ENET);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err), GG_ENET);
	assert_non_null(strstr(err.msg, "no answer in the time given"));
	close(fd);
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

/* ---- resumed downloads against the local HTTPS server (https_srv.h) ---- */

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

/* A clean-up window (gg_ce_cancel after the user's Ctrl-C): the cancel
 * callback that stops every request is not polled inside it, is again after. */
static void test_cleanup_window(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	struct gg_http *h;
	struct gg_err err = {0};
	struct gg_http_opts o = {.ca_dir = s.cadir, .retries = -1, .cancel = always};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/store/f", s.port);
	struct gg_http_resp r = {0};
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err),
			 GG_EINTR);
	gg_http_cleanup_window(h, 10000);
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, FLEN);
	gg_http_cleanup_window(h, 0);
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err),
			 GG_EINTR);
	gg_http_resp_clear(&r);
	gg_http_free(h);
	srv_stop(&s);
}

/* A CA directory that is not there: GG_ECRED saying so, also to a caller
 * that wants no message (err NULL: the sync's request asked ahead; it
 * crashed there once), and the clone of a handle fails the same way. */
static void test_ca_dir_missing(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, v1, FLEN);
	struct gg_http *h, *c;
	struct gg_http_opts o = {.ca_dir = "/nonexistent", .retries = -1};
	assert_int_equal(gg_http_new(&o, &h, NULL), 0);
	assert_int_equal(gg_http_clone(h, &c, NULL), 0);
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/store/f", s.port);
	struct gg_http_resp r = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_http_request(h, "GET", url, NULL, NULL, 0, NULL, 1, &r, &err),
			 GG_ECRED);
	assert_non_null(strstr(err.msg, "the CA directory '/nonexistent' does not exist"));
	gg_http_resp_clear(&r);
	assert_int_equal(gg_http_request(c, "GET", url, NULL, NULL, 0, NULL, 1, &r, NULL),
			 GG_ECRED);
	gg_http_resp_clear(&r);
	gg_http_free(c);
	gg_http_free(h);
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
		cmocka_unit_test(test_unreachable),     cmocka_unit_test(test_unsent),
		cmocka_unit_test(test_cancel),          cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_resp_json),       cmocka_unit_test(test_default_ca_dir),
		cmocka_unit_test(test_resume),          cmocka_unit_test(test_stale_part),
		cmocka_unit_test(test_no_validator),    cmocka_unit_test(test_wrong_range),
		cmocka_unit_test(test_range_ignored),   cmocka_unit_test(test_short_body),
		cmocka_unit_test(test_digest_mismatch), cmocka_unit_test(test_ca_dir_missing),
		cmocka_unit_test(test_cleanup_window),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
