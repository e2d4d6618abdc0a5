/* Unit tests of the connection keeper (lib/http/keep.c, keepd.c): its frames,
 * requests carried over one kept TLS connection from one handle to the next
 * (as from one command to the next), the fall-backs (no keeper, one that does
 * not greet, one that ends), a renewed credential, an expired one, the idle
 * end, one keeper per socket, the private directory. Against the local HTTPS
 * server of https_srv.h. */
#include "unit.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "gridgpu/ce.h"
#include "core/par.h"
#include "http/keep.h"
#include "https_srv.h"

static const unsigned char BODY[] = "{\"job\":[]}";

/* A self-signed certificate and its key in path, valid for secs (< 0: ended). */
static void write_cred(const char *path, long secs)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	assert_non_null(k);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), (long)time(NULL));
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), secs);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"keeper test", -1,
				   -1, 0);
	X509_set_issuer_name(x, n);
	X509_set_pubkey(x, k);
	X509_sign(x, k, EVP_sha256());
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%s.new", path);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	assert_true(PEM_write_X509(f, x) && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
	fclose(f);
	assert_int_equal(rename(tmp, path), 0); /* as proxy init renews it */
	X509_free(x);
	EVP_PKEY_free(k);
}

struct kt {
	struct srv s;
	char proxy[160], url[96], *sock;
	struct gg_keep_opts o;
	pthread_t t;
	int rc, done;
	struct gg_err err;
};

static void *keeper_main(void *ud)
{
	struct kt *k = ud;
	k->rc = gg_keep_serve(&k->o, &k->err);
	__atomic_store_n(&k->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int keeper_done(struct kt *k, int ms)
{
	for (int i = 0; i < ms / 10 && !__atomic_load_n(&k->done, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	return __atomic_load_n(&k->done, __ATOMIC_SEQ_CST);
}

/* The server, a credential, the keeper's socket; the keeper started when idle_ms > 0. */
static void kt_start(struct kt *k, int64_t idle_ms)
{
	memset(k, 0, sizeof *k);
	srv_start(&k->s, BODY, sizeof BODY - 1);
	setenv("XDG_RUNTIME_DIR", k->s.dir, 1);
	snprintf(k->proxy, sizeof k->proxy, "%s/x509up", k->s.dir);
	snprintf(k->url, sizeof k->url, "https://127.0.0.1:%d/arex/rest/1.0/jobs", k->s.port);
	write_cred(k->proxy, 3600);
	struct gg_err err = {0};
	assert_int_equal(gg_keep_path(k->proxy, k->s.cadir, &k->sock, &err), 0);
	k->o = (struct gg_keep_opts){
		.sock = k->sock, .proxy_path = k->proxy, .ca_dir = k->s.cadir, .idle_ms = idle_ms};
	if (idle_ms <= 0)
		return;
	assert_int_equal(pthread_create(&k->t, NULL, keeper_main, k), 0);
	for (int i = 0; i < 500 && !gg_keep_alive(k->sock); i++)
		usleep(10000);
	assert_true(gg_keep_alive(k->sock));
}

static void kt_stop(struct kt *k)
{
	if (k->o.idle_ms > 0) {
		unlink(k->sock); /* a keeper whose socket is gone ends */
		assert_true(keeper_done(k, 5000));
		pthread_join(k->t, NULL);
	}
	free(k->sock);
	srv_stop(&k->s);
}

/* One handle (a command): n GETs through the keeper at sock (NULL: none). */
static struct gg_http *command(struct kt *k, const char *sock, int n)
{
	struct gg_http_opts o = {.proxy_path = k->proxy, .ca_dir = k->s.cadir, .keep_sock = sock};
	struct gg_http *h;
	struct gg_err err = {0};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	for (int i = 0; i < n; i++) {
		struct gg_http_resp r = {0};
		int rc = gg_http_request(h, "GET", k->url, NULL, NULL, 0, "application/json", 1, &r,
					 &err);
		if (rc < 0)
			fail_msg("request %d: %s", i, err.msg);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.len, sizeof BODY - 1);
		assert_string_equal(r.body, (const char *)BODY);
		gg_http_resp_clear(&r);
	}
	return h;
}

static void test_frames(void **state)
{
	(void)state;
	const char *v[] = {"Q", NULL, "", "a\0b"};
	size_t l[] = {1, 0, 0, 3}, len;
	char *b = gg_keep_build(4, v, l, &len);
	assert_non_null(b);
	assert_memory_equal(b, GG_KEEP_MAGIC, 4);
	struct gg_keep_frame f;
	assert_int_equal(gg_keep_parse(b + 8, len - 8, &f), 0);
	assert_int_equal(f.n, 4);
	assert_string_equal(f.v[0], "Q");
	assert_null(f.v[1]);
	assert_string_equal(f.v[2], "");
	assert_int_equal(f.len[3], 3);
	assert_memory_equal(f.v[3], "a\0b", 3);
	/* cut anywhere, or a field's NUL missing: not a frame */
	for (size_t cut = 1; cut < len - 8; cut++)
		if (gg_keep_parse(b + 8, cut, &f) == 0)
			assert_true(cut == 6 || cut == 10 || cut == 15); /* field ends */
	b[8 + 4 + 1] = 'x';
	assert_int_equal(gg_keep_parse(b + 8, len - 8, &f), -1);
	free(b);
	/* more fields than a frame has room for */
	const char *many[GG_KEEP_MAX_FIELDS + 1] = {0};
	assert_null(gg_keep_build(GG_KEEP_MAX_FIELDS + 1, many, NULL, &len));
	int64_t x;
	assert_int_equal(gg_keep_num("-12", &x), 0);
	assert_int_equal(x, -12);
	assert_int_equal(gg_keep_num("12x", &x), -1);
	assert_int_equal(gg_keep_num("", &x), -1);
	assert_int_equal(gg_keep_num(NULL, &x), -1);
}

/* The second command's requests ride on the connection the keeper opened for
 * the first: no new TCP (TLS) connection. */
static void test_kept_across_commands(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 10000);
	struct gg_http *a = command(&k, k.sock, 2);
	assert_int_equal(gg_http_kept(a), 2);
	assert_int_equal(gg_http_connections(a), 1);
	gg_http_free(a);
	struct gg_http *b = command(&k, k.sock, 3);
	assert_int_equal(gg_http_kept(b), 3);
	assert_int_equal(gg_http_connections(b), 0);
	int64_t sent, recv;
	gg_http_bytes(b, &sent, &recv);
	assert_true(sent > 0 && recv > (int64_t)(3 * (sizeof BODY - 1)));
	gg_http_free(b);
	kt_stop(&k);
	assert_int_equal(k.rc, 0);
}

/* A command that has its answer has given the connection back, even while it
 * is still connected: the next command (here while the first is still open)
 * rides on it and does not wait for the first to end. */
static void test_given_back_with_the_answer(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 10000);
	struct gg_http *a = command(&k, k.sock, 1);
	assert_int_equal(gg_http_connections(a), 1);
	struct gg_http *b = command(&k, k.sock, 2);
	assert_int_equal(gg_http_kept(b), 2);
	assert_int_equal(gg_http_connections(b), 0);
	gg_http_free(b);
	gg_http_free(a);
	kt_stop(&k);
	assert_int_equal(k.rc, 0);
}

/* No keeper there, or one that accepts and never greets: each request
 * connects itself, at once. */
static void test_fallback(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 0);
	struct gg_http *h = command(&k, k.sock, 1); /* nothing at the socket */
	assert_int_equal(gg_http_kept(h), 0);
	assert_int_equal(gg_http_connections(h), 1);
	gg_http_free(h);
	/* a stale keeper: listening, never greeting */
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", k.sock);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(l, 4), 0);
	int64_t t0 = gg_mono_ms();
	h = command(&k, k.sock, 2);
	assert_true(gg_mono_ms() - t0 < GG_KEEP_GREET_MS + 10000); /* not curl's 30 s or more */
	assert_int_equal(gg_http_kept(h), 0);
	gg_http_free(h);
	close(l);
	unlink(k.sock);
	kt_stop(&k);
}

/* A keeper that ends between two requests of one command: the idempotent
 * request is sent directly. */
static void test_keeper_ends(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 10000);
	struct gg_http *h = command(&k, k.sock, 1);
	assert_int_equal(gg_http_kept(h), 1);
	gg_http_free(h);
	unlink(k.sock);
	assert_true(keeper_done(&k, 5000));
	pthread_join(k.t, NULL);
	k.o.idle_ms = 0; /* ended already */
	h = command(&k, k.sock, 1);
	assert_int_equal(gg_http_kept(h), 0);
	gg_http_free(h);
	kt_stop(&k);
}

/* A credential renewed in place: the kept connection (made with the old one)
 * is not used again; an expired one ends the keeper and is not served. */
static void test_credential(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 10000);
	gg_http_free(command(&k, k.sock, 1));
	sleep(1); /* the file's times in whole seconds may not differ otherwise */
	write_cred(k.proxy, 7200);
	struct gg_http *h = command(&k, k.sock, 1);
	assert_int_equal(gg_http_kept(h), 1);
	assert_int_equal(gg_http_connections(h), 1);
	gg_http_free(h);
	write_cred(k.proxy, -60);
	h = command(&k, k.sock, 1); /* not served by the keeper: sent directly */
	assert_int_equal(gg_http_kept(h), 0);
	gg_http_free(h);
	assert_true(keeper_done(&k, 5000));
	pthread_join(k.t, NULL);
	k.o.idle_ms = 0;
	/* and one does not start on an expired proxy */
	struct gg_err err = {0};
	struct gg_keep_opts o = k.o;
	o.idle_ms = 1000;
	assert_int_equal(gg_keep_serve(&o, &err), GG_ECRED);
	kt_stop(&k);
}

/* Idle: the keeper ends by itself, its socket removed; one keeper per socket. */
static void test_idle_and_one(void **state)
{
	(void)state;
	struct kt k;
	kt_start(&k, 400);
	struct gg_err err = {0};
	assert_int_equal(gg_keep_serve(&k.o, &err), 1); /* another holds it */
	gg_http_free(command(&k, k.sock, 1));
	assert_true(keeper_done(&k, 5000));
	pthread_join(k.t, NULL);
	assert_int_equal(k.rc, 0);
	assert_int_equal(access(k.sock, F_OK), -1);
	k.o.idle_ms = 0;
	kt_stop(&k);
}

/* The socket's directory is private, and one that is not is refused. */
static void test_private_dir(void **state)
{
	(void)state;
	char dir[] = "/tmp/gg-keep.XXXXXX", keep[64];
	assert_non_null(mkdtemp(dir));
	setenv("XDG_RUNTIME_DIR", dir, 1);
	char *sock = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_keep_path("/p", NULL, &sock, &err), 0);
	snprintf(keep, sizeof keep, "%s/gridgpu/keep", dir);
	assert_int_equal(strncmp(sock, keep, strlen(keep)), 0);
	struct stat st;
	assert_int_equal(stat(keep, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	char *other = NULL;
	assert_int_equal(gg_keep_path("/q", NULL, &other, &err), 0);
	assert_string_not_equal(sock, other); /* another credential, another keeper */
	free(other);
	free(sock);
	chmod(keep, 0755);
	assert_int_equal(gg_keep_path("/p", NULL, &sock, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "chmod 700"));
	assert_int_equal(unit_rmtree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_kept_across_commands),
		cmocka_unit_test(test_given_back_with_the_answer),
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_keeper_ends),
		cmocka_unit_test(test_credential),
		cmocka_unit_test(test_idle_and_one),
		cmocka_unit_test(test_private_dir),
	};
	return cmocka_run_group_tests_name("keep", tests, NULL, NULL);
}
