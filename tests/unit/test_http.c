/* Unit tests of lib/http that need no server: errors, JSON bodies. The TLS,
 * auth and keep-alive paths are tested against the real CE in tests/e2e. */
#include "unit.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

static int notls_listen(struct notls *n, int *port)
{
	n->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	if (bind(n->fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(n->fd, 8) < 0)
		return -1;
	getsockname(n->fd, (struct sockaddr *)&a, &l);
	*port = ntohs(a.sin_port);
	return 0;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unreachable),    cmocka_unit_test(test_unsent),
		cmocka_unit_test(test_cancel),         cmocka_unit_test(test_resp_json),
		cmocka_unit_test(test_default_ca_dir),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
