/* lib/voms's proxy workflow: gg_proxy_make (what proxy init does: the pass
 * phrase asked once through the callback, a wrong one, a VOMS server that
 * cannot be reached, nothing written on failure), the VOMS requests of the
 * --voms words, gg_proxy_inspect's report and answers. A test CA and user are
 * made at run time in a temp dir. */
#include "unit.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "voms/proxyreq.h"

#define PASS "correct horse"

UNIT_TMPDIR("gg-vproxy")

static struct {
	char cadir[128], cert[128], key[128], enckey[128], shortcert[128], out[128];
} F;

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* /DC=org/DC=example/CN=<cn> for key, valid for secs from now, signed by
 * issuer (self-signed CA when NULL). */
static X509 *mk_cert(X509 *issuer, EVP_PKEY *ikey, EVP_PKEY *key, const char *cn, long secs)
{
	X509 *x = X509_new();
	X509_NAME *n = X509_NAME_new();
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"org", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"example", -1, -1,
				   0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), secs);
	X509_set_subject_name(x, n);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), secs);
	X509_set_pubkey(x, key);
	X509 *is = issuer ? issuer : x;
	add_ext(x, is, NID_basic_constraints, issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
	add_ext(x, is, NID_key_usage,
		issuer ? "critical,digitalSignature,keyEncipherment" : "critical,keyCertSign");
	add_ext(x, is, NID_subject_key_identifier, "hash");
	assert_true(X509_sign(x, issuer ? ikey : key, EVP_sha256()) > 0);
	X509_NAME_free(n);
	return x;
}

static void write_cert(const char *path, X509 *x)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
}

static void write_key(const char *path, EVP_PKEY *k, const char *pass)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(PEM_write_PKCS8PrivateKey(f, k, pass ? EVP_aes_256_cbc() : NULL, pass,
					      pass ? (int)strlen(pass) : 0, NULL, NULL));
	fclose(f);
	chmod(path, 0600);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
}

static int setup(void **state)
{
	if (setup_tmp(state) < 0)
		return -1;
	EVP_PKEY *cak = EVP_RSA_gen(1024), *uk = EVP_RSA_gen(1024);
	X509 *ca = mk_cert(NULL, NULL, cak, "gridgpu Test CA", 86400L * 365);
	X509 *user = mk_cert(ca, cak, uk, "Test User", 86400L * 30);
	X509 *shortlived = mk_cert(ca, cak, uk, "Test User", 3600);
	char p[200];
	snprintf(F.cadir, sizeof F.cadir, "%s/certificates", tmpdir);
	mkdir(F.cadir, 0755);
	snprintf(p, sizeof p, "%s/%08lx.0", F.cadir, X509_subject_name_hash(ca));
	write_cert(p, ca);
	snprintf(F.cert, sizeof F.cert, "%s/usercert.pem", tmpdir);
	snprintf(F.shortcert, sizeof F.shortcert, "%s/short.pem", tmpdir);
	snprintf(F.key, sizeof F.key, "%s/userkey-plain.pem", tmpdir);
	snprintf(F.enckey, sizeof F.enckey, "%s/userkey.pem", tmpdir);
	snprintf(F.out, sizeof F.out, "%s/out/x509up", tmpdir);
	snprintf(p, sizeof p, "%s/out", tmpdir);
	mkdir(p, 0700);
	write_cert(F.cert, user);
	write_cert(F.shortcert, shortlived);
	write_key(F.key, uk, NULL);
	write_key(F.enckey, uk, PASS);
	X509_free(ca);
	X509_free(user);
	X509_free(shortlived);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(uk);
	unsetenv("BEARER_TOKEN");
	setenv("BEARER_TOKEN_FILE", "/nonexistent", 1);
	return 0;
}

/* ---- the callbacks ---- */

struct seen {
	int asked;      /* pass phrase calls */
	char path[200]; /* the key file they named */
	const char *give;
	int fail; /* the callback's error code instead */
	int warns;
	char last_warn[GG_ERR_MSG_MAX];
};

static int pass_cb(void *ud, const char *key_path, char *buf, size_t size, struct gg_err *err)
{
	struct seen *s = ud;
	s->asked++;
	snprintf(s->path, sizeof s->path, "%s", key_path);
	if (s->fail)
		return gg_err_set(err, s->fail, "interrupted");
	assert_true(size >= strlen(s->give));
	memcpy(buf, s->give, strlen(s->give)); /* not NUL-terminated */
	return (int)strlen(s->give);
}

static void note_cb(void *ud, enum gg_note kind, const char *msg)
{
	struct seen *s = ud;
	if (kind == GG_NOTE_WARN) {
		s->warns++;
		snprintf(s->last_warn, sizeof s->last_warn, "%s", msg);
	}
}

static struct gg_proxy_req *req(struct seen *s, const char *cert, const char *key)
{
	struct gg_proxy_req *q = gg_proxy_req_new();
	assert_non_null(q);
	gg_proxy_req_set_cred(q, cert, key);
	gg_proxy_req_set_file(q, F.out);
	gg_proxy_req_set_key(q, 1024, 1);
	gg_proxy_req_on_passphrase(q, pass_cb, s);
	gg_proxy_req_on_note(q, note_cb, s);
	return q;
}

/* Files in the proxy's directory (a temporary file left would show). */
static int files_in_out_dir(void)
{
	char d[200];
	snprintf(d, sizeof d, "%s/out", tmpdir);
	DIR *dir = opendir(d);
	int n = 0;
	struct dirent *e;
	while (dir && (e = readdir(dir)))
		n += e->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return n;
}

static void assert_err(int rc, const struct gg_err *err, int code, const char *substr)
{
	if (rc != code || !strstr(err->msg, substr))
		fail_msg("want %d '%s', got %d '%s'", code, substr, rc, err->msg);
}

/* ---- making ---- */

/* An encrypted key: the pass phrase asked once, naming the key file; the
 * proxy written 0600, verified, the report saying so. */
static void test_make_asks_once(void **state)
{
	(void)state;
	struct seen s = {.give = PASS};
	struct gg_err err = {0};
	struct gg_proxy_report *r = NULL;
	struct gg_proxy_req *q = req(&s, F.cert, F.enckey);
	gg_proxy_req_set_verify(q, F.cadir);
	gg_proxy_req_set_lifetime(q, 3 * 3600);
	unlink(F.out);
	if (gg_proxy_make(q, &r, &err) < 0)
		fail_msg("gg_proxy_make: %s", err.msg);
	assert_int_equal(s.asked, 1);
	assert_string_equal(s.path, F.enckey);
	assert_int_equal(s.warns, 0);
	const struct gg_proxy_info *in = gg_proxy_report_info(r);
	assert_string_equal(in->path, F.out);
	assert_string_equal(in->identity, "/DC=org/DC=example/CN=Test User");
	assert_int_equal(in->kind, GG_CERT_PROXY);
	assert_true(in->time_left > 3 * 3600 - 60 && in->time_left <= 3 * 3600);
	assert_int_equal(gg_proxy_report_verified(r), 1);
	assert_string_equal(gg_proxy_report_ca_dir(r), F.cadir);
	assert_null(gg_proxy_report_token(r));
	struct stat st;
	assert_int_equal(stat(F.out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(files_in_out_dir(), 1);
	gg_proxy_report_free(r);
	/* an unencrypted key: nothing asked */
	s.asked = 0;
	gg_proxy_req_set_cred(q, F.cert, F.key);
	assert_int_equal(gg_proxy_make(q, &r, &err), 0);
	assert_int_equal(s.asked, 0);
	gg_proxy_report_free(r);
	gg_proxy_req_free(q);
}

/* A wrong pass phrase, the callback's own error, no callback: GG_ECRED (or
 * the callback's code), asked once, and the old proxy left as it was. */
static void test_make_refusals_write_nothing(void **state)
{
	(void)state;
	struct seen s = {.give = "wrong"};
	struct gg_err err = {0};
	struct gg_proxy_report *r = NULL;
	struct gg_proxy_req *q = req(&s, F.cert, F.enckey);
	write_text(F.out, "the old proxy\n");
	assert_err(gg_proxy_make(q, &r, &err), &err, GG_ECRED, "wrong passphrase");
	assert_int_equal(s.asked, 1);
	assert_null(r);
	s.fail = GG_EINTR;
	assert_err(gg_proxy_make(q, &r, &err), &err, GG_EINTR, "interrupted");
	assert_int_equal(s.asked, 2);
	gg_proxy_req_on_passphrase(q, NULL, NULL);
	assert_err(gg_proxy_make(q, &r, &err), &err, GG_ECRED, "needs its pass phrase");
	FILE *f = fopen(F.out, "r");
	char line[64] = "";
	assert_non_null(fgets(line, sizeof line, f));
	fclose(f);
	assert_string_equal(line, "the old proxy\n");
	assert_int_equal(files_in_out_dir(), 1);
	gg_proxy_req_free(q);
}

/* A signer that ends before the lifetime asked: the proxy is clipped, with a
 * warning through the note callback. */
static void test_make_clipped_warns(void **state)
{
	(void)state;
	struct seen s = {0};
	struct gg_err err = {0};
	struct gg_proxy_report *r = NULL;
	struct gg_proxy_req *q = req(&s, F.shortcert, F.key);
	assert_int_equal(gg_proxy_make(q, &r, &err), 0);
	assert_int_equal(s.warns, 1);
	assert_non_null(strstr(s.last_warn, "its signing certificate ends then"));
	assert_true(gg_proxy_report_info(r)->time_left <= 3600);
	gg_proxy_report_free(r);
	gg_proxy_req_free(q);
}

/* A port nothing listens on (connection refused at once). */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	close(s);
	return ntohs(a.sin_port);
}

/* The VO's server cannot be reached: GG_ENET after the pass phrase (asked
 * once), and the old proxy is intact, no temporary file left. */
static void test_make_voms_failure_writes_nothing(void **state)
{
	(void)state;
	struct seen s = {.give = PASS};
	struct gg_err err = {0};
	struct gg_proxy_report *r = NULL;
	char vomses[200], line[200];
	snprintf(vomses, sizeof vomses, "%s/vomses", tmpdir);
	snprintf(line, sizeof line, "\"testvo\" \"127.0.0.1\" \"%d\" \"/CN=x\" \"testvo\"\n",
		 closed_port());
	write_text(vomses, line);
	setenv("VOMS_USERCONF", vomses, 1);
	setenv("X509_CERT_DIR", F.cadir, 1);
	struct gg_proxy_req *q = req(&s, F.cert, F.enckey);
	assert_int_equal(gg_proxy_req_add_voms(q, "testvo:/testvo/analysis", &err), 0);
	write_text(F.out, "the old proxy\n");
	int rc = gg_proxy_make(q, &r, &err);
	if (rc != GG_ENET)
		fail_msg("want GG_ENET, got %d '%s'", rc, err.msg);
	assert_int_equal(s.asked, 1);
	assert_null(r);
	FILE *f = fopen(F.out, "r");
	char got[64] = "";
	assert_non_null(fgets(got, sizeof got, f));
	fclose(f);
	assert_string_equal(got, "the old proxy\n");
	assert_int_equal(files_in_out_dir(), 1);
	unsetenv("VOMS_USERCONF");
	unsetenv("X509_CERT_DIR");
	gg_proxy_req_free(q);
}

/* --voms words: checked as they are added; a vomses alias and its VO's name
 * are one request, asked by the first name given, with every FQAN (before:
 * two requests, two ACs of one VO). */
static void test_voms_words_and_plan(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_proxy_req *q = gg_proxy_req_new();
	assert_err(gg_proxy_req_add_voms(q, "../testvo", &err), &err, GG_EUSAGE, "not a VO name");
	assert_err(gg_proxy_req_add_voms(q, "testvo:/testvo\r\nX: 1", &err), &err, GG_EUSAGE,
		   "FQAN");
	assert_err(gg_proxy_req_set_order(q, "/testvo</order>", &err), &err, GG_EUSAGE, "FQAN");
	char vomses[200];
	snprintf(vomses, sizeof vomses, "%s/vomses-alias", tmpdir);
	write_text(vomses, "\"tv\" \"localhost\" \"15000\" \"/CN=localhost\" \"testvo\"\n"
			   "\"other\" \"localhost\" \"15001\" \"/CN=localhost\" \"other\"\n");
	setenv("VOMS_USERCONF", vomses, 1);
	const char *words[] = {"tv", "testvo:/testvo/g", "other:/other/x", "tv:/testvo/h",
			       "testvo"};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(gg_proxy_req_add_voms(q, words[i], &err), 0);
	struct gg_voms_ask asks[GG_PROXY_VOMS_MAX];
	size_t n = 0;
	assert_int_equal(gg_proxy_voms_plan(q, asks, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(asks[0].vo, "tv");
	assert_int_equal(asks[0].n_fqans, 2);
	assert_string_equal(asks[0].fqans[0], "/testvo/g");
	assert_string_equal(asks[0].fqans[1], "/testvo/h");
	assert_string_equal(asks[1].vo, "other");
	assert_int_equal(asks[1].n_fqans, 1);
	unsetenv("VOMS_USERCONF");
	for (size_t i = 5; i < GG_PROXY_VOMS_MAX; i++)
		assert_int_equal(gg_proxy_req_add_voms(q, "testvo", &err), 0);
	assert_err(gg_proxy_req_add_voms(q, "testvo", &err), &err, GG_EUSAGE, "at most 16");
	gg_proxy_req_free(q);
}

/* ---- inspecting ---- */

static void test_inspect(void **state)
{
	(void)state;
	struct seen s = {0};
	struct gg_err err = {0};
	struct gg_proxy_report *r = NULL;
	struct gg_proxy_req *q = req(&s, F.cert, F.key);
	gg_proxy_req_set_lifetime(q, 2 * 3600);
	assert_int_equal(gg_proxy_make(q, &r, &err), 0);
	gg_proxy_report_free(r);
	gg_proxy_req_free(q);
	/* shown: the token found beside it, a warning for a file others read */
	q = req(&s, NULL, NULL);
	gg_proxy_req_set_show(q, GG_PROXY_SHOW_TOKEN | GG_PROXY_SHOW_MODE);
	setenv("BEARER_TOKEN", "abc.def", 1);
	chmod(F.out, 0644);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_int_equal(s.warns, 1);
	assert_non_null(strstr(s.last_warn, "is accessible by others"));
	assert_string_equal(gg_proxy_report_token(r)->source, "BEARER_TOKEN");
	assert_string_equal(gg_proxy_report_info(r)->path, F.out);
	assert_int_equal(gg_proxy_report_verified(r), -1);
	assert_int_equal(gg_proxy_report_answer(r, &err), 0);
	gg_proxy_report_free(r);
	/* a token that is not one: a warning, no token */
	setenv("BEARER_TOKEN", "not a token", 1);
	chmod(F.out, 0600);
	s.warns = 0;
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_int_equal(s.warns, 1);
	assert_null(gg_proxy_report_token(r));
	gg_proxy_report_free(r);
	unsetenv("BEARER_TOKEN");
	gg_proxy_req_free(q);
	/* answers: long enough, too short, an AC of a VO it has not */
	q = req(&s, NULL, NULL);
	gg_proxy_req_set_answer(q, 3600, NULL);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_int_equal(gg_proxy_report_answer(r, &err), 0);
	gg_proxy_report_free(r);
	gg_proxy_req_set_answer(q, 3 * 3600, NULL);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_err(gg_proxy_report_answer(r, &err), &err, GG_ECRED, "left, less than 3h");
	gg_proxy_report_free(r);
	gg_proxy_req_set_answer(q, 0, "testvo");
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_err(gg_proxy_report_answer(r, &err), &err, GG_ECRED,
		   "has no attribute certificate of VO testvo");
	gg_proxy_report_free(r);
	/* verified against a directory without its CA: an error, or the answer "no" */
	gg_proxy_req_set_verify(q, tmpdir);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_int_equal(gg_proxy_report_verified(r), 0);
	assert_err(gg_proxy_report_answer(r, &err), &err, GG_ECRED, "proxy '");
	gg_proxy_report_free(r);
	gg_proxy_req_free(q);
	q = req(&s, NULL, NULL);
	gg_proxy_req_set_verify(q, tmpdir);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), GG_ECRED);
	assert_null(r);
	gg_proxy_req_set_verify(q, F.cadir);
	assert_int_equal(gg_proxy_inspect(q, &r, &err), 0);
	assert_int_equal(gg_proxy_report_verified(r), 1);
	gg_proxy_report_free(r);
	/* none there, then destroyed */
	char *path = NULL;
	assert_int_equal(gg_proxy_destroy_at(F.out, &path, &err), 0);
	assert_string_equal(path, F.out);
	free(path);
	assert_err(gg_proxy_inspect(q, &r, &err), &err, GG_ECRED, "no proxy at '");
	assert_int_equal(gg_proxy_destroy_at(F.out, &path, &err), GG_ENOTFOUND);
	assert_string_equal(path, F.out);
	free(path);
	gg_proxy_req_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_make_asks_once),
		cmocka_unit_test(test_make_refusals_write_nothing),
		cmocka_unit_test(test_make_clipped_warns),
		cmocka_unit_test(test_make_voms_failure_writes_nothing),
		cmocka_unit_test(test_voms_words_and_plan),
		cmocka_unit_test(test_inspect),
	};
	return cmocka_run_group_tests_name("voms_proxy", tests, setup, teardown_tmp);
}
