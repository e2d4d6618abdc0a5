/* lib/voms and lib/cred/ac.c: vomses lines, FQANs as legacy commands, the
 * server's XML answer, and a real VOMS AC (tests/fuzz/corpus/voms/ac, from the
 * test site's server) read, re-wrapped and read back; the same AC with other
 * validity times, re-signed by a test VOMS key, taken as the client takes a
 * server's answer (gg_voms_answer_take): clock skew, and the REST answers. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voms/voms.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

UNIT_TMPDIR("gg-voms")

#ifndef GG_FUZZ_DIR
#define GG_FUZZ_DIR "tests/fuzz"
#endif

static void test_vomses_line(void **state)
{
	(void)state;
	struct gg_voms_server s;
	struct gg_err err = {0};
	assert_int_equal(gg_voms_server_parse("\"atlas\" \"voms.cern.ch\" \"15001\" "
					      "\"/DC=ch/CN=voms.cern.ch\" \"atlas\"\n",
					      &s, &err),
			 0);
	assert_string_equal(s.host, "voms.cern.ch");
	assert_int_equal(s.port, 15001);
	assert_string_equal(s.dn, "/DC=ch/CN=voms.cern.ch");
	assert_string_equal(s.vo, "atlas");
	free(s.alias), free(s.host), free(s.dn), free(s.vo);
	assert_int_equal(gg_voms_server_parse("# comment\n", &s, &err), 1);
	assert_int_equal(gg_voms_server_parse("   \n", &s, &err), 1);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"0\" \"/CN=x\" \"a\"", &s, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"15\" \"/CN=x\" \"a\" junk", &s, &err),
			 GG_EUSAGE);
	assert_int_equal(gg_voms_server_parse("\"a\" \"h\" \"x15\"", &s, &err), GG_EUSAGE);
}

static void test_fqan_command(void **state)
{
	(void)state;
	char *c;
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo"), "G/vo"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/g"), "G/vo/g"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/g/Role=r"), "B/vo/g:r"), free(c);
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/Role=r/Capability=NULL"), "B/vo:r"),
		free(c);
	/* a capability without a role is not part of the group (found by fuzz_voms:
	 * "G/vo/g/Capability=NULL" before) */
	assert_string_equal(c = gg_voms_fqan_command("vo", "/vo/g/Capability=NULL"), "G/vo/g"),
		free(c);
	assert_null(gg_voms_fqan_command("vo", "/other/g"));
	assert_null(gg_voms_fqan_command("vo", "/vox"));
	assert_null(gg_voms_fqan_command("vo", "/vo/g,/vo/h"));
	assert_null(gg_voms_fqan_command("vo", "/vo/</command>"));
	assert_null(gg_voms_fqan_command("vo", "vo/g"));
}

static void test_answer(void **state)
{
	(void)state;
	struct gg_voms_answer a;
	struct gg_err err = {0};
	const char *e = "<?xml version=\"1.0\"?><voms><error><code>NoSuchUser</code><message>not a "
			"member &amp; more</message></error></voms>";
	assert_int_equal(gg_voms_answer_parse(e, strlen(e), &a, &err), 0);
	assert_true(a.code != 0);
	assert_string_equal(a.message, "not a member & more");
	assert_null(a.ac);
	gg_voms_answer_clear(&a);
	const char *l = "<vomsans><version>3</version><error><item><number>1001</number><message>"
			"no</message></item></error><ac>QQ==\n</ac></vomsans>";
	assert_int_equal(gg_voms_answer_parse(l, strlen(l), &a, &err), 0);
	assert_int_equal(a.code, 1001);
	gg_voms_answer_clear(&a);
	const char *ok = "<voms><ac>MIIB\nAA==</ac></voms>";
	assert_int_equal(gg_voms_answer_parse(ok, strlen(ok), &a, &err), 0);
	assert_int_equal(a.ac_len, 4);
	gg_voms_answer_clear(&a);
	const char *bad[] = {"",
			     "<voms>",
			     "<voms><ac>QQ==</ac></vomx>",
			     "<voms a=\"1\"><ac/></voms>",
			     "<!DOCTYPE x><voms><ac>QQ==</ac></voms>",
			     "<voms><ac>&xxe;</ac></voms>",
			     "<voms><ac>QQ==</ac></voms>trailing",
			     "<voms><ac>!!</ac></voms>",
			     "<voms><ac>QQ==</ac><ac>QQ==</ac></voms>",
			     "<html><body>hi</body></html>"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(gg_voms_answer_parse(bad[i], strlen(bad[i]), &a, &err), GG_EPROTO);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char *b = malloc(65536);
	*len = fread(b, 1, 65536, f);
	fclose(f);
	return b;
}

static void test_ac(void **state)
{
	(void)state;
	size_t len, sl, n = 0;
	struct gg_err err = {0};
	unsigned char *der = slurp(GG_FUZZ_DIR "/corpus/voms/ac", &len), *seq = NULL;
	struct gg_ac ac, *acs = NULL;
	assert_int_equal(gg_ac_parse(der, len, 0, &ac, &err), 0);
	assert_string_equal(ac.vo, "testvo");
	assert_string_equal(ac.issuer, "/DC=org/DC=example/CN=localhost");
	assert_int_equal(ac.n_fqans, 2);
	assert_string_equal(ac.fqans[0], "/testvo/analysis/Role=NULL/Capability=NULL");
	assert_true(ac.not_after - ac.not_before == 12 * 3600);
	/* a day after its end it is expired */
	struct gg_ac late;
	assert_int_equal(gg_ac_parse(der, len, ac.not_after + 86400, &late, &err), 0);
	assert_int_equal(late.time_left, 0);
	gg_ac_clear(&late);
	const unsigned char *one[2] = {der, der};
	size_t lens[2] = {len, len};
	assert_int_equal(gg_ac_seq_encode(one, lens, 2, &seq, &sl, &err), 0);
	assert_int_equal(gg_ac_seq_parse(seq, sl, 0, &acs, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(acs[1].fqans[1], ac.fqans[1]);
	gg_ac_list_free(acs, n);
	/* truncated, or one byte changed in the length: refused */
	assert_int_equal(gg_ac_seq_parse(seq, sl - 1, 0, &acs, &n, &err), GG_EPROTO);
	assert_int_equal(gg_ac_parse(der, len - 1, 0, &late, &err), GG_EPROTO);
	lens[0] = len - 1;
	unsigned char *none = NULL;
	assert_int_equal(gg_ac_seq_encode(one, lens, 1, &none, &sl, &err), GG_EPROTO);
	assert_null(none);
	free(seq);
	gg_ac_clear(&ac);
	free(der);
}

/* ---- a test VOMS server's AC: the real one, its validity changed, re-signed ---- */

struct tvoms {
	EVP_PKEY *key;
	X509 *cert; /* the server: its subject is the AC's issuer */
};

static void tvoms_init(struct tvoms *v)
{
	v->key = EVP_RSA_gen(2048); /* the real AC's signature is RSA 2048 */
	assert_non_null(v->key);
	v->cert = X509_new();
	X509_NAME *n = X509_NAME_new();
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"org", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"example", -1, -1,
				   0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
				   -1, 0);
	X509_set_subject_name(v->cert, n);
	X509_set_issuer_name(v->cert, n);
	X509_NAME_free(n);
	X509_set_pubkey(v->cert, v->key);
	X509_gmtime_adj(X509_getm_notBefore(v->cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(v->cert), 86400);
	assert_true(X509_sign(v->cert, v->key, EVP_sha256()) > 0);
}

static void tvoms_free(struct tvoms *v)
{
	EVP_PKEY_free(v->key);
	X509_free(v->cert);
}

static void gentime(time_t t, unsigned char out[15])
{
	struct tm tm;
	char b[16];
	gmtime_r(&t, &tm);
	strftime(b, sizeof b, "%Y%m%d%H%M%SZ", &tm);
	memcpy(out, b, 15);
}

/* The corpus AC valid from nb to na, signed by v (sha256WithRSA as the original). */
static unsigned char *tvoms_ac(const struct tvoms *v, time_t nb, time_t na, size_t *len)
{
	unsigned char *d = slurp(GG_FUZZ_DIR "/corpus/voms/ac", len);
	/* the validity: SEQUENCE (34) { GeneralizedTime (15), GeneralizedTime (15) } */
	unsigned char *val = NULL;
	for (size_t i = 0; i + 36 < *len && !val; i++)
		if (memcmp(d + i, "\x30\x22\x18\x0f", 4) == 0 && d[i + 19] == 0x18 &&
		    d[i + 20] == 0x0f)
			val = d + i;
	assert_non_null(val);
	gentime(nb, val + 4);
	gentime(na, val + 21);
	/* AttributeCertificate ::= SEQUENCE { acinfo, alg, BIT STRING (0 unused + 256) } */
	assert_int_equal(d[0], 0x30);
	assert_int_equal(d[1], 0x82);
	assert_int_equal(d[4], 0x30);
	assert_int_equal(d[5], 0x82);
	size_t info_len = 4 + ((size_t)d[6] << 8 | d[7]);
	assert_memory_equal(d + *len - 261, "\x03\x82\x01\x01\x00", 5);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t sl = 256;
	assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, v->key), 1);
	assert_int_equal(EVP_DigestSign(md, d + *len - 256, &sl, d + 4, info_len), 1);
	assert_int_equal(sl, 256);
	EVP_MD_CTX_free(md);
	return d;
}

static char *b64(const unsigned char *d, size_t n)
{
	char *o = malloc(4 * ((n + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)o, d, (int)n);
	return o;
}

/* The legacy answer (what the test site's server sends) around the AC. */
static char *legacy_answer(const unsigned char *ac, size_t n)
{
	char *b = b64(ac, n), *x = malloc(strlen(b) + 200);
	sprintf(x,
		"<?xml version=\"1.0\" encoding = \"US-ASCII\"?><vomsans><version>3</version>"
		"<ac>%s</ac></vomsans>",
		b);
	free(b);
	return x;
}

/* An AC from a server whose clock is ahead: "not valid yet" with its start,
 * exit 3's GG_ECRED; a small skew (up to 5 min) accepted; an AC that ended
 * before it came refused; the state gg_ac_parse gives. */
static void test_clock_skew(void **state)
{
	(void)state;
	struct tvoms v;
	struct gg_err err = {0};
	unsigned char *ac = NULL;
	size_t n, got_len;
	char b[40];
	time_t now = time(NULL);
	tvoms_init(&v);

	/* the server's clock an hour ahead */
	unsigned char *der = tvoms_ac(&v, now + 3600, now + 3600 + 12 * 3600, &n);
	char *x = legacy_answer(der, n);
	assert_int_equal(gg_voms_answer_take("voms.example:15000", x, strlen(x), 0, v.cert,
					     "testvo", now, &ac, &got_len, 0, NULL, &err),
			 GG_ECRED);
	assert_null(ac);
	assert_non_null(strstr(err.msg, "VOMS server voms.example:15000: the attribute "
					"certificate is not valid yet: it starts at "));
	assert_non_null(strstr(err.msg, gg_time_iso((int64_t)now + 3600, b, sizeof b)));
	assert_non_null(strstr(err.msg, "clock ahead"));
	struct gg_ac info;
	assert_int_equal(gg_ac_parse(der, n, now, &info, &err), 0);
	assert_true(info.not_yet_valid);
	assert_int_equal((int64_t)info.not_before, (int64_t)now + 3600);
	gg_ac_clear(&info);
	free(x);
	free(der);

	/* 5 min 1 s ahead: refused; 4 min ahead, and exactly 5 min: accepted */
	der = tvoms_ac(&v, now + GG_AC_SKEW + 1, now + 12 * 3600, &n);
	x = legacy_answer(der, n);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 0, v.cert, "testvo", now, &ac,
					     &got_len, 0, NULL, &err),
			 GG_ECRED);
	free(x);
	free(der);
	for (int skew = 240; skew <= GG_AC_SKEW; skew += GG_AC_SKEW - 240) {
		der = tvoms_ac(&v, now + skew, now + 12 * 3600, &n);
		x = legacy_answer(der, n);
		assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 0, v.cert, "testvo", now,
						     &ac, &got_len, 0, NULL, &err),
				 0);
		assert_int_equal(got_len, n);
		assert_memory_equal(ac, der, n);
		free(ac);
		ac = NULL;
		free(x);
		free(der);
	}

	/* the server's clock a day behind: the AC ended before it came */
	der = tvoms_ac(&v, now - 86400 - 3600, now - 86400 + 3600, &n);
	x = legacy_answer(der, n);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 0, v.cert, "testvo", now, &ac,
					     &got_len, 0, NULL, &err),
			 GG_ECRED);
	assert_non_null(strstr(err.msg, "had expired when it came"));
	free(x);
	free(der);
	tvoms_free(&v);
}

/* The REST interface's answers (GET /generate-ac), whole HTTP responses as
 * the server sends them, through the function the client uses: the AC in
 * <voms><ac> (with a <warning> beside it, as the server adds when it shortens
 * the lifetime), the refusal in <voms><error><code><message> with an HTTP
 * error status, and what a server without REST answers (not REST: 1). Not
 * exercised against a real server: the test site's voms 2.1 does not answer
 * REST, so the test site exercises the legacy protocol. */
static void test_rest_answers(void **state)
{
	(void)state;
	struct tvoms v, other;
	struct gg_err err = {0};
	unsigned char *ac = NULL;
	size_t n, got_len;
	time_t now = time(NULL);
	tvoms_init(&v);
	unsigned char *der = tvoms_ac(&v, now - 60, now + 12 * 3600, &n);
	char *b = b64(der, n), *x = malloc(strlen(b) + 600);
	const char *body_fmt = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<voms><ac>%s</ac>"
			       "<warning>The validity of this VOMS AC in your proxy is shortened "
			       "to 43200 seconds!</warning></voms>\n";
	char *body = malloc(strlen(b) + 300);
	sprintf(body, body_fmt, b);
	sprintf(x,
		"HTTP/1.1 200 OK\r\nContent-Type: text/xml;charset=UTF-8\r\nContent-Length: "
		"%zu\r\nConnection: close\r\n\r\n%s",
		strlen(body), body);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 0);
	assert_int_equal(got_len, n);
	assert_memory_equal(ac, der, n);
	free(ac);
	ac = NULL;
	/* the same answer from a server whose key did not sign it, or for another VO */
	tvoms_init(&other);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 1, other.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 GG_ECRED);
	assert_non_null(strstr(err.msg, "signature is not the VOMS server's"));
	tvoms_free(&other);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 1, v.cert, "atlas", 0, &ac,
					     &got_len, 0, NULL, &err),
			 GG_EPROTO);
	assert_non_null(strstr(err.msg, "sent an AC for VO testvo"));
	assert_null(ac);

	/* the refusal: an HTTP error status and the VOMS error element */
	const char *no = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/xml;charset=UTF-8\r\n"
			 "\r\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<voms><error><code>NoSuchUser</code><message>User unknown to this VO."
			 "</message></error></voms>\n";
	assert_int_equal(gg_voms_answer_take("h:1", no, strlen(no), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 GG_ECRED);
	assert_string_equal(err.msg, "VOMS server h:1: User unknown to this VO.");
	const char *bad = "HTTP/1.1 400 Bad Request\r\n\r\n<voms><error><code>BadRequest</code>"
			  "<message>Unknown attribute: /testvo/x</message></error></voms>";
	assert_int_equal(gg_voms_answer_take("h:1", bad, strlen(bad), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 GG_ECRED);
	assert_non_null(strstr(err.msg, "Unknown attribute: /testvo/x"));

	/* not REST: an HTTP error that is no VOMS answer, or no HTTP at all (the
	 * legacy server reads the request as XML and closes) */
	const char *html = "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n"
			   "<html><body>no</body></html>";
	assert_int_equal(gg_voms_answer_take("h:1", html, strlen(html), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 1);
	char *leg = legacy_answer(der, n);
	assert_int_equal(gg_voms_answer_take("h:1", leg, strlen(leg), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 1);
	assert_int_equal(gg_voms_answer_take("h:1", "", 0, 1, v.cert, "testvo", 0, &ac, &got_len, 0,
					     NULL, &err),
			 1);
	/* a 200 whose body is not a VOMS answer: garbage, not a fall back */
	const char *junk = "HTTP/1.1 200 OK\r\n\r\n<html>hi</html>";
	assert_int_equal(gg_voms_answer_take("h:1", junk, strlen(junk), 1, v.cert, "testvo", 0, &ac,
					     &got_len, 0, NULL, &err),
			 GG_EPROTO);
	free(leg);
	free(body);
	free(b);
	free(x);
	free(der);
	tvoms_free(&v);
}

/* ---- vomses files, FQANs and the request before anything is sent ---- */

static void write_file(const char *path, const char *a, size_t an, const char *b)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(a, 1, an, f), an);
	fputs(b, f);
	fclose(f);
}

/* A comment line longer than the 4 KiB fgets read: its tail, shaped as a
 * server of the VO, was read as a line of its own (failed before: two servers,
 * evil.example first). Now whole lines: a comment is a comment; a line longer
 * than GG_VOMSES_LINE_MAX, or with a NUL byte, refused with its number. */
static void test_vomses_long_lines(void **state)
{
	(void)state;
	char path[128], *line = malloc(GG_VOMSES_LINE_MAX + 2);
	struct gg_voms_server *sv = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/vomses", tmpdir);
	setenv("VOMS_USERCONF", path, 1);
	const char *evil = "\"testvo\" \"evil.example\" \"15000\" \"/CN=evil\" \"testvo\"\n",
		   *good = "\"testvo\" \"good.example\" \"15000\" \"/CN=good\" \"testvo\"\n";
	line[0] = '#';
	memset(line + 1, 'x', 4094);
	memcpy(line + 4095, evil, strlen(evil) + 1);
	write_file(path, line, strlen(line), good);
	assert_int_equal(gg_voms_servers_find("testvo", &sv, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(sv[0].host, "good.example");
	gg_voms_servers_free(sv, n);

	/* one byte more than the bound: refused, not split */
	memset(line + 1, 'x', GG_VOMSES_LINE_MAX - 1);
	memcpy(line + GG_VOMSES_LINE_MAX - strlen(evil) + 1, evil, strlen(evil) + 1);
	assert_int_equal(strlen(line), GG_VOMSES_LINE_MAX + 1);
	write_file(path, good, strlen(good), line);
	assert_int_equal(gg_voms_servers_find("testvo", &sv, &n, &err), GG_EUSAGE);
	assert_null(sv);
	assert_non_null(strstr(err.msg, "line 2: longer than 16384 bytes"));
	/* exactly the bound: read */
	memmove(line + 1, line + 2, GG_VOMSES_LINE_MAX);
	write_file(path, line, strlen(line), good);
	assert_int_equal(gg_voms_servers_find("testvo", &sv, &n, &err), 0);
	assert_int_equal(n, 1);
	gg_voms_servers_free(sv, n);
	/* a NUL byte hiding the rest of a line */
	write_file(path, "\"testvo\" \"h\" \"1\" \"/CN=x\" \"testvo\"\0junk\n", 40, "");
	assert_int_equal(gg_voms_servers_find("testvo", &sv, &n, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 1: a NUL byte"));
	unsetenv("VOMS_USERCONF");
	free(line);
}

/* --voms testv0: the VO the vomses files know nearest the one asked for is
 * named (failed before: only "no VOMS server known"); none when nothing is
 * near, nor a name no VO could have. */
static void test_vomses_did_you_mean(void **state)
{
	(void)state;
	char path[128];
	struct gg_voms_server *sv = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/vomses", tmpdir);
	setenv("VOMS_USERCONF", path, 1);
	const char *lines = "\"tv\" \"h\" \"15000\" \"/CN=h\" \"testvo\"\n"
			    "\"atlas\" \"h\" \"15000\" \"/CN=h\" \"atlas\"\n"
			    "\"testv\x1b\" \"h\" \"15000\" \"/CN=h\" \"testv\x1b\"\n";
	write_file(path, lines, strlen(lines), "");
	assert_int_equal(gg_voms_servers_find("testv0", &sv, &n, &err), GG_EUSAGE);
	assert_null(sv);
	assert_non_null(strstr(err.msg, "no VOMS server known for VO 'testv0'; did you mean "
					"'testvo'? (vomses: "));
	assert_int_equal(gg_voms_servers_find("atlsa", &sv, &n, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 'atlas'?"));
	assert_int_equal(gg_voms_servers_find("cms", &sv, &n, &err), GG_EUSAGE);
	assert_null(strstr(err.msg, "did you mean"));
	/* only the line with the control character is near "testv": not offered */
	assert_int_equal(gg_voms_servers_find("testv\x1c", &sv, &n, &err), GG_EUSAGE);
	assert_null(strchr(err.msg, '\x1b'));
	unsetenv("VOMS_USERCONF");
}

static void test_fqan_check(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *good[] = {"/vo",
			      "/vo/g",
			      "/vo/g/sub-group_1.x",
			      "/vo/Role=production",
			      "/vo/g/Role=NULL/Capability=NULL",
			      "/vo/Capability=c"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(gg_voms_fqan_check("vo", good[i], &err), 0);
		assert_int_equal(gg_voms_fqan_check(NULL, good[i], &err), 0);
	}
	const char *bad[] = {"",
			     "vo",
			     "/",
			     "/vo/",
			     "/vo//g",
			     "/vo/g\r\nX-Injected: 1",
			     "/vo/g\n",
			     "/vo/g&order=/vo/x",
			     "/vo/g?x",
			     "/vo/</order><command>G/vo/prod</command>",
			     "/vo/g h",
			     "/vo/g,/vo/h",
			     "/vo/Role=",
			     "/vo/Role=r/g",
			     "/vo/Role=r/Role=s",
			     "/vo/Capability=c/Role=r",
			     "/vo/g/\xc3\xa9",
			     "/Role=r"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(gg_voms_fqan_check(NULL, bad[i], &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "expected /VO[/group...][/Role=role]"));
		assert_null(gg_voms_fqan_command("vo", bad[i]));
	}
	char *long_fqan = malloc(GG_VOMS_FQAN_MAX + 2);
	strcpy(long_fqan, "/vo");
	for (size_t o = 3; o + 2 <= GG_VOMS_FQAN_MAX + 1; o += 2)
		strcpy(long_fqan + o, "/g");
	assert_int_equal(gg_voms_fqan_check(NULL, long_fqan, &err), GG_EUSAGE);
	free(long_fqan);
	assert_int_equal(gg_voms_fqan_check("vo", "/other/g", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "FQAN '/other/g' is not of VO vo: expected /vo[/group...]");
	assert_int_equal(gg_voms_vo_check("vo.example-org_1", &err), 0);
	assert_int_equal(gg_voms_vo_check("../etc", &err), GG_EUSAGE);
	assert_int_equal(gg_voms_vo_check("", &err), GG_EUSAGE);
}

/* A user credential for gg_voms_fetch: v's certificate and key. */
static struct gg_cred *tvoms_cred(const struct tvoms *v)
{
	char path[128];
	snprintf(path, sizeof path, "%s/cred.pem", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_int_equal(PEM_write_X509(f, v->cert), 1);
	assert_int_equal(PEM_write_PrivateKey(f, v->key, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	struct gg_cred *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_proxy_load(path, &c, &err), 0);
	return c;
}

/* A listening socket nothing accepts from: a VOMS server that would see any
 * connection made to it. */
static int listener(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 8), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return s;
}

/* gg_voms_fetch with the request r (vo, FQANs, order) against a server that
 * records connections: the error code, and no connection made. */
static int fetch_nothing_sent(struct gg_cred *user, struct gg_voms_request *r,
			      const char *vomses_alias, struct gg_err *err)
{
	char path[128], line[256];
	int port, s = listener(&port);
	snprintf(path, sizeof path, "%s/vomses", tmpdir);
	snprintf(line, sizeof line, "\"%s\" \"127.0.0.1\" \"%d\" \"/CN=x\" \"testvo\"\n",
		 vomses_alias, port);
	write_file(path, "", 0, line);
	setenv("VOMS_USERCONF", path, 1);
	unsigned char *ac = NULL;
	size_t len = 0;
	r->timeout_ms = 300;
	r->ca_dir = tmpdir;
	int rc = gg_voms_fetch(user, r, &ac, &len, NULL, err);
	assert_null(ac);
	int c = accept(s, NULL, NULL);
	assert_int_equal(c, -1); /* nothing connected */
	assert_int_equal(errno, EAGAIN);
	close(s);
	unsetenv("VOMS_USERCONF");
	return rc;
}

/* FQANs and --order with CR/LF, '&' or XML reached the REST request line (and
 * the order the legacy XML) before anything checked them (failed before: a
 * connection was made, GG_ENET/GG_ECRED). Now refused, GG_EUSAGE, before any
 * connection; an FQAN of the VO behind a vomses alias is the VO name's. */
static void test_request_checked(void **state)
{
	(void)state;
	struct tvoms v;
	struct gg_err err = {0};
	tvoms_init(&v);
	struct gg_cred *user = tvoms_cred(&v);
	const char *crlf[] = {"/testvo/g\r\nX-Injected: 1"};
	struct gg_voms_request r = {.vo = "testvo", .fqans = crlf, .n_fqans = 1, .lifetime = 60};
	assert_int_equal(fetch_nothing_sent(user, &r, "testvo", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "FQAN '/testvo/g\r\nX-Injected: 1': expected"));
	struct gg_voms_request o = {
		.vo = "testvo", .order = "/testvo\r\n\r\nGET / HTTP/1.1", .lifetime = 60};
	assert_int_equal(fetch_nothing_sent(user, &o, "testvo", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--order: FQAN '/testvo\r\n"));
	o.order = "/testvo</order><command>G/testvo/prod</command><order>/testvo";
	assert_int_equal(fetch_nothing_sent(user, &o, "testvo", &err), GG_EUSAGE);
	struct gg_voms_request bad_vo = {.vo = "test\nvo", .lifetime = 60};
	assert_int_equal(fetch_nothing_sent(user, &bad_vo, "testvo", &err), GG_EUSAGE);
	/* --voms tv:/tv/g with vomses alias tv of VO testvo: the FQAN names the VO */
	const char *by_alias[] = {"/tv/g"};
	struct gg_voms_request a = {.vo = "tv", .fqans = by_alias, .n_fqans = 1, .lifetime = 60};
	assert_int_equal(fetch_nothing_sent(user, &a, "tv", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "vomses alias tv: FQAN '/tv/g' is not of VO testvo: "
				     "expected /testvo[/group...]");
	gg_cred_free(user);
	tvoms_free(&v);
}

/* The server gave an AC shorter than asked (its maximum, 2 min for 12 h): it
 * was refused on the legacy protocol (its warning, number 2, read as an error:
 * failed before) and taken without a word on REST. Now taken, with the
 * server's warning and "shortened" in got; an AC as long as asked (give or take
 * GG_AC_SKEW) is not shortened. */
static void test_ac_shortened(void **state)
{
	(void)state;
	struct tvoms v;
	struct gg_err err = {0};
	unsigned char *ac = NULL;
	size_t n, got_len;
	time_t now = time(NULL);
	tvoms_init(&v);
	unsigned char *der = tvoms_ac(&v, now, now + 120, &n);
	char *b = b64(der, n), *x = malloc(strlen(b) + 400);
	sprintf(x,
		"<?xml version=\"1.0\" encoding = \"US-ASCII\"?><vomsans><version>3</version>"
		"<error><item><number>2</number><message>h:1: The validity of this VOMS AC in "
		"your proxy is shortened to 120 seconds!</message></item></error><ac>%s</ac>"
		"</vomsans>",
		b);
	struct gg_voms_got got;
	memset(&got, 0, sizeof got);
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 0, v.cert, "testvo", now, &ac,
					     &got_len, 12 * 3600, &got, &err),
			 0);
	assert_int_equal(got_len, n);
	assert_true(got.shortened);
	assert_int_equal((int64_t)got.not_after, (int64_t)now + 120);
	assert_string_equal(got.vo, "testvo");
	assert_string_equal(got.who, "h:1");
	assert_string_equal(got.warning,
			    "h:1: The validity of this VOMS AC in your proxy is shortened to 120 "
			    "seconds!");
	gg_voms_got_clear(&got);
	free(ac);
	ac = NULL;
	/* the same AC for 2 min asked: not shortened */
	assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 0, v.cert, "testvo", now, &ac,
					     &got_len, 120, &got, &err),
			 0);
	assert_false(got.shortened);
	gg_voms_got_clear(&got);
	free(ac);
	ac = NULL;
	free(x);
	free(der);
	/* REST: 12 h less 4 min (the server's clock behind) is not shortened; 1 h is,
	 * with the <warning> */
	for (int hours = 12; hours >= 1; hours -= 11) {
		der = tvoms_ac(&v, now, now + hours * 3600 - (hours == 12 ? 240 : 0), &n);
		free(b);
		b = b64(der, n);
		x = malloc(strlen(b) + 400);
		sprintf(x,
			"HTTP/1.1 200 OK\r\n\r\n<voms><ac>%s</ac><warning>shortened</warning>"
			"</voms>",
			b);
		assert_int_equal(gg_voms_answer_take("h:1", x, strlen(x), 1, v.cert, "testvo", now,
						     &ac, &got_len, 12 * 3600, &got, &err),
				 0);
		assert_int_equal(got.shortened, hours == 1);
		assert_string_equal(got.warning, "shortened");
		gg_voms_got_clear(&got);
		free(ac);
		ac = NULL;
		free(x);
		free(der);
	}
	/* a real error (1001 and up) beside a warning stays an error */
	const char *no = "<vomsans><version>3</version><error><item><number>2</number><message>"
			 "w</message></item><item><number>1001</number><message>not a member"
			 "</message></item></error><ac>QQ==</ac></vomsans>";
	assert_int_equal(gg_voms_answer_take("h:1", no, strlen(no), 0, v.cert, "testvo", now, &ac,
					     &got_len, 60, &got, &err),
			 GG_ECRED);
	assert_string_equal(err.msg, "VOMS server h:1: not a member");
	free(b);
	tvoms_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vomses_line),
		cmocka_unit_test(test_fqan_command),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_ac),
		cmocka_unit_test(test_clock_skew),
		cmocka_unit_test(test_rest_answers),
		cmocka_unit_test(test_vomses_long_lines),
		cmocka_unit_test(test_vomses_did_you_mean),
		cmocka_unit_test(test_fqan_check),
		cmocka_unit_test(test_request_checked),
		cmocka_unit_test(test_ac_shortened),
	};
	return cmocka_run_group_tests_name("voms", tests, setup_tmp, teardown_tmp);
}
