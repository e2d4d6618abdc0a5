/* lib/cred: loading, proxies, inspection, verification, delegation, the proxy
 * file. A test CA and user certificates are made at run time in a temp dir. */
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509v3.h>

#include "cred/cred.h"

#define PASS   "correct horse"
#define NOBODY 65534

/* ---- the fixture: CA, users, keys, files ------------------------------------- */

static struct {
	char dir[256];
	char cadir[300], badcadir[300];
	EVP_PKEY *cakey, *badcakey, *ukey, *okey, *pkeys[4];
	X509 *ca, *badca, *user, *expired, *future, *shortlived, *other;
	char cert[300], key[300], enckey[300], otherkey[300], expcert[300], futcert[300], p12[300],
		shortcert[300];
	time_t now;
} F;

static EVP_PKEY *rsa(int bits)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
	assert_non_null(k);
	return k;
}

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

/* /DC=org/DC=example/CN=<cn>, signed by issuer (self-signed when NULL). */
static X509 *mk_cert(X509 *issuer, EVP_PKEY *ikey, EVP_PKEY *key, const char *cn, time_t nb,
		     time_t na, int ca, long serial)
{
	X509 *x = X509_new();
	X509_NAME *n = X509_NAME_new();
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"org", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"example", -1, -1,
				   0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_set_subject_name(x, n);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	ASN1_TIME_set(X509_getm_notBefore(x), nb);
	ASN1_TIME_set(X509_getm_notAfter(x), na);
	X509_set_pubkey(x, key);
	X509 *is = issuer ? issuer : x;
	if (ca) {
		add_ext(x, is, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, is, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, is, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(x, is, NID_key_usage, "critical,digitalSignature,keyEncipherment");
		add_ext(x, is, NID_ext_key_usage, "clientAuth");
	}
	add_ext(x, is, NID_subject_key_identifier, "hash");
	assert_true(X509_sign(x, issuer ? ikey : key, EVP_sha256()) > 0);
	X509_NAME_free(n);
	return x;
}

static void fpath(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", F.dir, name);
}

static void write_certs(const char *path, X509 *a, X509 *b)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	PEM_write_X509(f, a);
	if (b)
		PEM_write_X509(f, b);
	fclose(f);
}

static void write_key(const char *path, EVP_PKEY *k, const char *pass)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (pass)
		assert_true(PEM_write_PKCS8PrivateKey(f, k, EVP_aes_256_cbc(), pass,
						      (int)strlen(pass), NULL, NULL));
	else
		assert_true(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
	fclose(f);
	chmod(path, 0600);
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void ca_dir(const char *dir, X509 *ca)
{
	mkdir(dir, 0755);
	char p[400];
	snprintf(p, sizeof p, "%s/%08lx.0", dir, X509_subject_name_hash(ca));
	write_certs(p, ca, NULL);
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(F.dir, sizeof F.dir, "%s/gg-cred-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(F.dir));
	chmod(F.dir, 0711);
	F.now = time(NULL);
	time_t day = 86400;
	F.cakey = rsa(1024);
	F.badcakey = rsa(1024);
	F.ukey = rsa(1024);
	F.okey = rsa(1024);
	for (int i = 0; i < 4; i++)
		F.pkeys[i] = rsa(1024);
	F.ca = mk_cert(NULL, NULL, F.cakey, "gridgpu Test CA", F.now - day, F.now + 365 * day, 1,
		       1);
	F.badca = mk_cert(NULL, NULL, F.badcakey, "gridgpu Test CA", F.now - day, F.now + 365 * day,
			  1, 1);
	F.user = mk_cert(F.ca, F.cakey, F.ukey, "Test User", F.now - day, F.now + 30 * day, 0, 2);
	F.expired =
		mk_cert(F.ca, F.cakey, F.ukey, "Test User", F.now - 30 * day, F.now - day, 0, 3);
	F.future = mk_cert(F.ca, F.cakey, F.ukey, "Test User", F.now + day, F.now + 30 * day, 0, 4);
	F.shortlived = mk_cert(F.ca, F.cakey, F.ukey, "Test User", F.now - day, F.now + 3600, 0, 5);
	F.other = mk_cert(F.ca, F.cakey, F.okey, "Other User", F.now - day, F.now + 30 * day, 0, 6);

	fpath(F.cadir, sizeof F.cadir, "certificates");
	fpath(F.badcadir, sizeof F.badcadir, "bad-certificates");
	ca_dir(F.cadir, F.ca);
	ca_dir(F.badcadir, F.badca);
	fpath(F.cert, sizeof F.cert, "usercert.pem");
	fpath(F.key, sizeof F.key, "userkey-plain.pem");
	fpath(F.enckey, sizeof F.enckey, "userkey.pem");
	fpath(F.otherkey, sizeof F.otherkey, "otherkey.pem");
	fpath(F.expcert, sizeof F.expcert, "expired.pem");
	fpath(F.futcert, sizeof F.futcert, "future.pem");
	fpath(F.shortcert, sizeof F.shortcert, "short.pem");
	fpath(F.p12, sizeof F.p12, "usercred.p12");
	write_certs(F.cert, F.user, NULL);
	write_certs(F.expcert, F.expired, NULL);
	write_certs(F.futcert, F.future, NULL);
	write_certs(F.shortcert, F.shortlived, NULL);
	write_key(F.key, F.ukey, NULL);
	write_key(F.enckey, F.ukey, PASS);
	write_key(F.otherkey, F.okey, NULL);

	PKCS12 *p12 = PKCS12_create(PASS, "Test User", F.ukey, F.user, NULL, 0, 0, 0, 0, 0);
	assert_non_null(p12);
	FILE *f = fopen(F.p12, "wb");
	assert_non_null(f);
	i2d_PKCS12_fp(f, p12);
	fclose(f);
	chmod(F.p12, 0600);
	PKCS12_free(p12);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(F.cakey);
	EVP_PKEY_free(F.badcakey);
	EVP_PKEY_free(F.ukey);
	EVP_PKEY_free(F.okey);
	for (int i = 0; i < 4; i++)
		EVP_PKEY_free(F.pkeys[i]);
	X509 *xs[] = {F.ca, F.badca, F.user, F.expired, F.future, F.shortlived, F.other};
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
		X509_free(xs[i]);
	if (unit_rmtree(F.dir) != 0)
		fprintf(stderr, "could not remove %s\n", F.dir);
	return 0;
}

/* The user's credential, unlocked (plain key). */
static struct gg_cred *user_cred(void)
{
	struct gg_cred_source src = {F.cert, F.key, 0, "test"};
	struct gg_cred *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_false(gg_cred_needs_passphrase(c));
	return c;
}

static struct gg_cred *proxy_of(const struct gg_cred *issuer, enum gg_proxy_policy pol, int pathlen,
				int64_t lifetime, int key, int *clipped)
{
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.policy = pol;
	o.path_length = pathlen;
	o.lifetime = lifetime;
	o.key = F.pkeys[key];
	o.now = F.now;
	struct gg_cred *p = NULL;
	struct gg_err err = {0};
	int rc = gg_proxy_create(issuer, &o, &p, clipped, &err);
	if (rc < 0)
		fail_msg("gg_proxy_create: %s", err.msg);
	return p;
}

static void assert_err(int rc, const struct gg_err *err, int code, const char *substr)
{
	if (rc != code || !strstr(err->msg, substr))
		fail_msg("want %d '%s', got %d '%s'", code, substr, rc, err->msg);
}

/* ---- locating --------------------------------------------------------------------- */

static void test_locate_order(void **state)
{
	(void)state;
	struct gg_cred_source s;
	struct gg_err err = {0};
	char home[300], globus[320], p[400];
	fpath(home, sizeof home, "home");
	snprintf(globus, sizeof globus, "%s/.globus", home);
	mkdir(home, 0700);
	mkdir(globus, 0700);
	setenv("HOME", home, 1);
	unsetenv("X509_USER_CERT");
	unsetenv("X509_USER_KEY");

	/* nothing anywhere */
	assert_err(gg_cred_locate(NULL, NULL, &s, &err), &err, GG_ECRED, "no user certificate");

	/* ~/.globus/usercred.p12 */
	snprintf(p, sizeof p, "%s/usercred.p12", globus);
	write_text(p, "x", 0600);
	assert_int_equal(gg_cred_locate(NULL, NULL, &s, &err), 0);
	assert_string_equal(s.cert, p);
	assert_null(s.key);
	assert_true(s.pkcs12);
	gg_cred_source_clear(&s);

	/* ~/.globus/usercert.pem + userkey.pem beat the p12 */
	snprintf(p, sizeof p, "%s/usercert.pem", globus);
	write_text(p, "x", 0644);
	snprintf(p, sizeof p, "%s/userkey.pem", globus);
	write_text(p, "x", 0600);
	assert_int_equal(gg_cred_locate(NULL, NULL, &s, &err), 0);
	assert_non_null(strstr(s.cert, ".globus/usercert.pem"));
	assert_non_null(strstr(s.key, ".globus/userkey.pem"));
	assert_false(s.pkcs12);
	gg_cred_source_clear(&s);

	/* the environment beats ~/.globus */
	setenv("X509_USER_CERT", F.cert, 1);
	setenv("X509_USER_KEY", F.key, 1);
	assert_int_equal(gg_cred_locate(NULL, NULL, &s, &err), 0);
	assert_string_equal(s.cert, F.cert);
	assert_string_equal(s.key, F.key);
	assert_string_equal(s.origin, "X509_USER_CERT");
	gg_cred_source_clear(&s);

	/* options beat the environment; a cert alone holds its key (a proxy) */
	assert_int_equal(gg_cred_locate(F.expcert, NULL, &s, &err), 0);
	assert_string_equal(s.cert, F.expcert);
	assert_null(s.key);
	gg_cred_source_clear(&s);
	assert_int_equal(gg_cred_locate(F.p12, NULL, &s, &err), 0);
	assert_true(s.pkcs12);
	gg_cred_source_clear(&s);

	/* a named file (--cert, --key) that does not exist: a usage error, exit 2, as
	 * every missing file named on the command line (gridgpu(1)) */
	assert_err(gg_cred_locate("/nonexistent/cert.pem", NULL, &s, &err), &err, GG_EUSAGE,
		   "No such file");
	assert_err(gg_cred_locate(F.cert, "/nonexistent/key.pem", &s, &err), &err, GG_EUSAGE,
		   "key '/nonexistent/key.pem'");
	/* from the environment: no credential (3) */
	setenv("X509_USER_CERT", "/nonexistent/cert.pem", 1);
	assert_err(gg_cred_locate(NULL, NULL, &s, &err), &err, GG_ECRED, "(from X509_USER_CERT)");
	unsetenv("X509_USER_CERT");
	unsetenv("X509_USER_KEY");
}

/* ---- loading ------------------------------------------------------------------------ */

static void test_load_plain_and_encrypted(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = user_cred();
	assert_non_null(gg_cred_key(c));
	assert_int_equal(X509_cmp(gg_cred_cert(c), F.user), 0);
	assert_int_equal(sk_X509_num(gg_cred_chain(c)), 0);
	assert_int_equal(gg_cred_check_time(c, 0, &err), 0);
	gg_cred_free(c);

	struct gg_cred_source src = {F.cert, F.enckey, 0, "test"};
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_true(gg_cred_needs_passphrase(c));
	assert_null(gg_cred_key(c));
	assert_string_equal(gg_cred_key_path(c), F.enckey);
	/* wrong, then empty, then right */
	assert_err(gg_cred_unlock(c, "wrong", 5, &err), &err, GG_ECRED, "wrong passphrase");
	assert_non_null(strstr(err.msg, "userkey.pem"));
	assert_err(gg_cred_unlock(c, "", 0, &err), &err, GG_ECRED, "wrong passphrase");
	assert_true(gg_cred_needs_passphrase(c));
	/* not NUL-terminated at passlen */
	assert_int_equal(gg_cred_unlock(c, PASS "XYZ", strlen(PASS), &err), 0);
	assert_false(gg_cred_needs_passphrase(c));
	assert_non_null(gg_cred_key(c));
	assert_int_equal(gg_cred_unlock(c, NULL, 0, &err), 0); /* already */
	gg_cred_free(c);
	gg_cred_free(NULL);
}

/* Keys other than RSA (read by OpenSSL's generic reader after the RSA-only
 * decoder found none), the traditional "RSA PRIVATE KEY" block, and a key
 * after its certificate in one file (a proxy's layout). */
static void test_load_key_kinds(void **state)
{
	(void)state;
	struct gg_err err = {0};
	EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	assert_non_null(ec);
	X509 *x = mk_cert(F.ca, F.cakey, ec, "EC User", F.now - 60, F.now + 3600, 0, 40);
	char cert[300], key[300], enc[300], one[300];
	fpath(cert, sizeof cert, "eccert.pem");
	fpath(key, sizeof key, "eckey.pem");
	fpath(enc, sizeof enc, "eckey-enc.pem");
	fpath(one, sizeof one, "rsa-trad.pem");
	write_certs(cert, x, NULL);
	write_key(key, ec, NULL);
	write_key(enc, ec, PASS);
	struct gg_cred *c = NULL;
	struct gg_cred_source src = {cert, key, 0, "test"};
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_int_equal(EVP_PKEY_eq(gg_cred_key(c), ec), 1);
	gg_cred_free(c);
	src.key = enc;
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_true(gg_cred_needs_passphrase(c));
	assert_err(gg_cred_unlock(c, "wrong", 5, &err), &err, GG_ECRED, "wrong passphrase");
	assert_int_equal(gg_cred_unlock(c, PASS, strlen(PASS), &err), 0);
	assert_int_equal(EVP_PKEY_eq(gg_cred_key(c), ec), 1);
	gg_cred_free(c);
	/* certificate, traditional RSA key, the CA after: one file */
	BIO *b = BIO_new_file(one, "w");
	assert_non_null(b);
	PEM_write_bio_X509(b, F.user);
	assert_true(PEM_write_bio_PrivateKey_traditional(b, F.ukey, NULL, NULL, 0, NULL, NULL));
	PEM_write_bio_X509(b, F.ca);
	BIO_free(b);
	chmod(one, 0600);
	struct gg_cred_source both = {one, NULL, 0, "test"};
	assert_int_equal(gg_cred_open(&both, &c, &err), 0);
	assert_int_equal(EVP_PKEY_eq(gg_cred_key(c), F.ukey), 1);
	assert_int_equal(sk_X509_num(gg_cred_chain(c)), 1);
	gg_cred_free(c);
	X509_free(x);
	EVP_PKEY_free(ec);
}

static void test_load_key_mismatch(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = NULL;
	struct gg_cred_source src = {F.cert, F.otherkey, 0, "test"};
	assert_err(gg_cred_open(&src, &c, &err), &err, GG_ECRED, "does not match certificate");
	assert_null(c);
	/* also after a passphrase */
	char enc[300];
	fpath(enc, sizeof enc, "otherkey-enc.pem");
	write_key(enc, F.okey, PASS);
	struct gg_cred_source src2 = {F.cert, enc, 0, "test"};
	assert_int_equal(gg_cred_open(&src2, &c, &err), 0);
	assert_err(gg_cred_unlock(c, PASS, strlen(PASS), &err), &err, GG_ECRED, "does not match");
	gg_cred_free(c);
}

static void test_load_expired_and_future(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = NULL;
	struct gg_cred_source src = {F.expcert, F.key, 0, "test"};
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_err(gg_cred_check_time(c, 0, &err), &err, GG_ECRED, "expired on");
	assert_non_null(strstr(err.msg, "expired.pem"));
	/* and no proxy can be made from it */
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.key = F.pkeys[0];
	struct gg_cred *p = NULL;
	assert_err(gg_proxy_create(c, &o, &p, NULL, &err), &err, GG_ECRED, "expired");
	assert_null(p);
	gg_cred_free(c);

	struct gg_cred_source src2 = {F.futcert, F.key, 0, "test"};
	assert_int_equal(gg_cred_open(&src2, &c, &err), 0);
	assert_err(gg_cred_check_time(c, 0, &err), &err, GG_ECRED, "is not valid before");
	assert_err(gg_proxy_create(c, &o, &p, NULL, &err), &err, GG_ECRED, "not valid before");
	gg_cred_free(c);
}

static void test_load_key_permissions(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = NULL;
	char k[300];
	fpath(k, sizeof k, "loosekey.pem");
	write_key(k, F.ukey, NULL);
	chmod(k, 0640);
	struct gg_cred_source src = {F.cert, k, 0, "test"};
	assert_err(gg_cred_open(&src, &c, &err), &err, GG_ECRED, "accessible by others");
	assert_null(c);
	chmod(k, 0604);
	assert_err(gg_cred_open(&src, &c, &err), &err, GG_ECRED, "chmod 600");
	/* an encrypted key too, before any passphrase is asked */
	fpath(k, sizeof k, "loosekey-enc.pem");
	write_key(k, F.ukey, PASS);
	chmod(k, 0644);
	struct gg_cred_source src2 = {F.cert, k, 0, "test"};
	assert_err(gg_cred_open(&src2, &c, &err), &err, GG_ECRED, "accessible by others");
	/* a PKCS#12 file holds the key */
	char p[300];
	fpath(p, sizeof p, "loose.p12");
	char cmd[700];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", F.p12, p);
	assert_int_equal(system(cmd), 0);
	chmod(p, 0644);
	struct gg_cred_source src3 = {p, NULL, 1, "test"};
	assert_err(gg_cred_open(&src3, &c, &err), &err, GG_ECRED, "accessible by others");
	/* and a proxy */
	assert_err(gg_proxy_load(p, &c, &err), &err, GG_ECRED, "accessible by others");
}

static void test_load_garbage(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = NULL;
	char p[300], k[300];
	const char *full = slurp(F.cert);
	char trunc[4096];
	snprintf(trunc, sizeof trunc, "%.*s", (int)(strlen(full) / 2), full);

	/* truncated certificate */
	fpath(p, sizeof p, "trunc-cert.pem");
	write_text(p, trunc, 0644);
	struct gg_cred_source s1 = {p, F.key, 0, "test"};
	assert_err(gg_cred_open(&s1, &c, &err), &err, GG_ECRED, "truncated or corrupt");
	/* garbage certificate, with and without a key file */
	fpath(p, sizeof p, "garbage.pem");
	write_text(p, "this is not a certificate\n", 0600);
	struct gg_cred_source s2 = {p, F.key, 0, "test"};
	assert_err(gg_cred_open(&s2, &c, &err), &err, GG_ECRED, "no certificate found");
	struct gg_cred_source s3 = {p, NULL, 0, "test"};
	assert_err(gg_cred_open(&s3, &c, &err), &err, GG_ECRED, "neither PEM nor PKCS#12");
	/* a second certificate cut short */
	char two[8192];
	snprintf(two, sizeof two, "%s%.*s", full, 200, full);
	fpath(p, sizeof p, "trunc-chain.pem");
	write_text(p, two, 0644);
	struct gg_cred_source s4 = {p, F.key, 0, "test"};
	assert_err(gg_cred_open(&s4, &c, &err), &err, GG_ECRED, "certificate 2 is truncated");

	/* truncated key, plain and encrypted */
	const char *kfull = slurp(F.key);
	snprintf(trunc, sizeof trunc, "%.*s", (int)(strlen(kfull) / 2), kfull);
	fpath(k, sizeof k, "trunc-key.pem");
	write_text(k, trunc, 0600);
	struct gg_cred_source s5 = {F.cert, k, 0, "test"};
	assert_err(gg_cred_open(&s5, &c, &err), &err, GG_ECRED, "no private key found");
	kfull = slurp(F.enckey);
	snprintf(trunc, sizeof trunc, "%.*s", (int)(strlen(kfull) - 40), kfull);
	write_text(k, trunc, 0600);
	assert_err(gg_cred_open(&s5, &c, &err), &err, GG_ECRED, "no private key found");
	/* a certificate file without a key, used alone */
	struct gg_cred_source s6 = {F.cert, NULL, 0, "test"};
	assert_err(gg_cred_open(&s6, &c, &err), &err, GG_ECRED, "give the key file");
	/* empty file */
	fpath(p, sizeof p, "empty.pem");
	write_text(p, "", 0600);
	struct gg_cred_source s7 = {p, F.key, 0, "test"};
	assert_err(gg_cred_open(&s7, &c, &err), &err, GG_ECRED, "no certificate found");
	assert_null(c);
}

static void test_load_pkcs12(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *c = NULL;
	struct gg_cred_source src = {F.p12, NULL, 0, "test"}; /* detected by content */
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_true(gg_cred_needs_passphrase(c));
	assert_null(gg_cred_cert(c));
	assert_err(gg_cred_unlock(c, "nope", 4, &err), &err, GG_ECRED, "wrong passphrase");
	assert_non_null(strstr(err.msg, "usercred.p12"));
	assert_int_equal(gg_cred_unlock(c, PASS, strlen(PASS), &err), 0);
	assert_int_equal(X509_cmp(gg_cred_cert(c), F.user), 0);
	assert_non_null(gg_cred_key(c));
	assert_int_equal(gg_cred_check_time(c, 0, &err), 0);
	gg_cred_free(c);

	/* an unprotected one opens without a passphrase; its extra certs become the chain */
	STACK_OF(X509) *ca = sk_X509_new_null();
	sk_X509_push(ca, F.ca);
	PKCS12 *p12 = PKCS12_create("", "u", F.ukey, F.user, ca, 0, 0, 0, 0, 0);
	sk_X509_free(ca);
	assert_non_null(p12);
	char p[300];
	fpath(p, sizeof p, "nopass.p12");
	FILE *f = fopen(p, "wb");
	i2d_PKCS12_fp(f, p12);
	fclose(f);
	chmod(p, 0600);
	PKCS12_free(p12);
	struct gg_cred_source s2 = {p, NULL, 1, "test"};
	assert_int_equal(gg_cred_open(&s2, &c, &err), 0);
	assert_false(gg_cred_needs_passphrase(c));
	assert_non_null(gg_cred_key(c));
	assert_int_equal(sk_X509_num(gg_cred_chain(c)), 0); /* the self-signed CA is dropped */
	gg_cred_free(c);

	/* garbage named .p12 */
	fpath(p, sizeof p, "garbage.p12");
	write_text(p, "\x30\x82garbage", 0600);
	struct gg_cred_source s3 = {p, NULL, 1, "test"};
	assert_err(gg_cred_open(&s3, &c, &err), &err, GG_ECRED, "neither PEM nor PKCS#12");
}

/* ---- proxies ------------------------------------------------------------------------ */

static const PROXY_CERT_INFO_EXTENSION *pci_of(X509 *x, int *crit, PROXY_CERT_INFO_EXTENSION **own)
{
	*own = X509_get_ext_d2i(x, NID_proxyCertInfo, crit, NULL);
	return *own;
}

static void test_proxy_create(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	int clipped = -1;
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 12 * 3600, 0, &clipped);
	X509 *x = gg_cred_cert(p);
	assert_int_equal(clipped, 0);
	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	/* subject = issuer + CN=<serial>, the CN being the serial number */
	X509_NAME *subj = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(F.user)), 0);
	assert_int_equal(X509_NAME_entry_count(subj),
			 X509_NAME_entry_count(X509_get_subject_name(F.user)) + 1);
	X509_NAME_ENTRY *last = X509_NAME_get_entry(subj, X509_NAME_entry_count(subj) - 1);
	assert_int_equal(OBJ_obj2nid(X509_NAME_ENTRY_get_object(last)), NID_commonName);
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *dec = BN_bn2dec(bn);
	assert_string_equal((const char *)ASN1_STRING_get0_data(X509_NAME_ENTRY_get_data(last)),
			    dec);
	assert_false(BN_is_zero(bn));
	assert_false(BN_is_negative(bn));
	OPENSSL_free(dec);
	BN_free(bn);
	/* validity: now - 5 min .. now + 12 h; SHA-256 */
	int days, secs;
	ASN1_TIME *t = ASN1_TIME_set(NULL, F.now - 300);
	assert_true(ASN1_TIME_diff(&days, &secs, t, X509_get0_notBefore(x)));
	assert_int_equal(days * 86400 + secs, 0);
	ASN1_TIME_set(t, F.now + 12 * 3600);
	assert_true(ASN1_TIME_diff(&days, &secs, t, X509_get0_notAfter(x)));
	assert_int_equal(days * 86400 + secs, 0);
	ASN1_TIME_free(t);
	assert_int_equal(X509_get_signature_nid(x), NID_sha256WithRSAEncryption);
	/* extensions: proxyCertInfo critical inheritAll, no path length; keyUsage */
	int crit = -1;
	PROXY_CERT_INFO_EXTENSION *own;
	const PROXY_CERT_INFO_EXTENSION *pci = pci_of(x, &crit, &own);
	assert_non_null(pci);
	assert_int_equal(crit, 1);
	assert_int_equal(OBJ_obj2nid(pci->proxyPolicy->policyLanguage), NID_id_ppl_inheritAll);
	assert_null(pci->pcPathLengthConstraint);
	assert_null(pci->proxyPolicy->policy);
	PROXY_CERT_INFO_EXTENSION_free(own);
	assert_true(X509_get_extension_flags(x) & EXFLAG_PROXY);
	uint32_t ku = X509_get_key_usage(x);
	assert_int_equal(ku, KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
	int kucrit = -1;
	ASN1_BIT_STRING *kus = X509_get_ext_d2i(x, NID_key_usage, &kucrit, NULL);
	assert_int_equal(kucrit, 1);
	ASN1_BIT_STRING_free(kus);
	assert_int_equal(X509_get_ext_by_NID(x, NID_basic_constraints, -1), -1);
	/* key and chain */
	assert_true(EVP_PKEY_eq(X509_get0_pubkey(x), F.pkeys[0]) == 1);
	assert_int_equal(X509_check_private_key(x, gg_cred_key(p)), 1);
	assert_int_equal(sk_X509_num(gg_cred_chain(p)), 1);
	assert_int_equal(X509_cmp(sk_X509_value(gg_cred_chain(p), 0), F.user), 0);
	/* signed by the user's key */
	assert_int_equal(X509_verify(x, F.ukey), 1);
	assert_int_equal(gg_cred_verify(p, F.cadir, 0, &err), 0);
	gg_cred_free(p);

	/* a key made here when none is given (1024 bits to keep the test quick) */
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.bits = 1024;
	assert_int_equal(gg_proxy_create(u, &o, &p, NULL, &err), 0);
	assert_int_equal(EVP_PKEY_get_bits(gg_cred_key(p)), 1024);
	assert_int_equal(gg_cred_verify(p, F.cadir, 0, &err), 0);
	gg_cred_free(p);
	/* bad options */
	o.bits = 512;
	assert_err(gg_proxy_create(u, &o, &p, NULL, &err), &err, GG_EUSAGE, "key size");
	o.bits = 1024;
	o.path_length = -5;
	assert_err(gg_proxy_create(u, &o, &p, NULL, &err), &err, GG_EUSAGE, "path length");
	o.path_length = -1;
	o.lifetime = -1;
	assert_err(gg_proxy_create(u, &o, &p, NULL, &err), &err, GG_EUSAGE, "lifetime");
	gg_cred_free(u);
}

static void test_proxy_clipping(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred_source src = {F.shortcert, F.key, 0, "test"};
	struct gg_cred *u = NULL;
	assert_int_equal(gg_cred_open(&src, &u, &err), 0);
	int clipped = 0;
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 12 * 3600, 0, &clipped);
	assert_int_equal(clipped, 1);
	assert_int_equal(ASN1_TIME_compare(X509_get0_notAfter(gg_cred_cert(p)),
					   X509_get0_notAfter(F.shortlived)),
			 0);
	/* a proxy of it cannot outlive it either, and the info says how long is left */
	struct gg_cred *pp = proxy_of(p, GG_PROXY_IMPERSONATION, -1, 24 * 3600, 1, &clipped);
	assert_int_equal(clipped, 1);
	struct gg_proxy_info in;
	assert_int_equal(gg_proxy_info_get(pp, F.now, &in, &err), 0);
	assert_int_equal(in.time_left, 3600);
	gg_proxy_info_clear(&in);
	/* inside the limit: not clipped */
	gg_cred_free(pp);
	pp = proxy_of(p, GG_PROXY_IMPERSONATION, -1, 1800, 1, &clipped);
	assert_int_equal(clipped, 0);
	gg_cred_free(pp);
	gg_cred_free(p);
	gg_cred_free(u);
}

static void test_proxy_limited_pathlen_and_chain(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	/* limited, path length 2 */
	struct gg_cred *p1 = proxy_of(u, GG_PROXY_LIMITED, 2, 3600, 0, NULL);
	int crit;
	PROXY_CERT_INFO_EXTENSION *own;
	const PROXY_CERT_INFO_EXTENSION *pci = pci_of(gg_cred_cert(p1), &crit, &own);
	char oid[64];
	OBJ_obj2txt(oid, sizeof oid, pci->proxyPolicy->policyLanguage, 1);
	assert_string_equal(oid, "1.3.6.1.4.1.3536.1.1.1.9");
	assert_int_equal(ASN1_INTEGER_get(pci->pcPathLengthConstraint), 2);
	PROXY_CERT_INFO_EXTENSION_free(own);
	assert_int_equal(gg_cert_kind(gg_cred_cert(p1)), GG_CERT_PROXY_LIMITED);

	/* proxy of a proxy: stays limited even if asked otherwise, path length 1 */
	struct gg_cred *p2 = proxy_of(p1, GG_PROXY_IMPERSONATION, -1, 3600, 1, NULL);
	X509 *x2 = gg_cred_cert(p2);
	assert_int_equal(gg_cert_kind(x2), GG_CERT_PROXY_LIMITED);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(x2)),
			 X509_NAME_entry_count(X509_get_subject_name(F.user)) + 2);
	assert_int_equal(
		X509_NAME_cmp(X509_get_issuer_name(x2), X509_get_subject_name(gg_cred_cert(p1))),
		0);
	assert_int_equal(sk_X509_num(gg_cred_chain(p2)), 2);
	assert_int_equal(X509_cmp(sk_X509_value(gg_cred_chain(p2), 0), gg_cred_cert(p1)), 0);
	assert_int_equal(X509_cmp(sk_X509_value(gg_cred_chain(p2), 1), F.user), 0);
	struct gg_proxy_info in;
	assert_int_equal(gg_proxy_info_get(p2, 0, &in, &err), 0);
	assert_int_equal(in.path_length, 1);
	assert_int_equal(in.chain_length, 2);
	assert_non_null(strstr(in.identity, "/CN=Test User"));
	assert_null(strstr(in.identity + strlen("/DC=org/DC=example/CN=Test User"), "/CN="));
	gg_proxy_info_clear(&in);
	assert_int_equal(gg_cred_verify(p2, F.cadir, 0, &err), 0);

	/* asking for more than the issuer allows is cut to what it allows */
	struct gg_cred *p3 = proxy_of(p2, GG_PROXY_LIMITED, 7, 3600, 2, NULL);
	assert_int_equal(gg_proxy_info_get(p3, 0, &in, &err), 0);
	assert_int_equal(in.path_length, 0);
	gg_proxy_info_clear(&in);
	assert_int_equal(gg_cred_verify(p3, F.cadir, 0, &err), 0);
	/* path length 0: cannot sign */
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.key = F.pkeys[3];
	struct gg_cred *p4 = NULL;
	assert_err(gg_proxy_create(p3, &o, &p4, NULL, &err), &err, GG_ECRED, "path length 0");
	assert_null(p4);

	/* independent */
	struct gg_cred *pi = proxy_of(u, GG_PROXY_INDEPENDENT, -1, 3600, 3, NULL);
	assert_int_equal(gg_cert_kind(gg_cred_cert(pi)), GG_CERT_PROXY_INDEPENDENT);
	gg_cred_free(pi);
	gg_cred_free(p3);
	gg_cred_free(p2);
	gg_cred_free(p1);
	gg_cred_free(u);
}

/* ---- inspection ------------------------------------------------------------------------ */

static void test_info(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	struct gg_proxy_info in;
	assert_int_equal(gg_proxy_info_get(u, F.now, &in, &err), 0);
	assert_int_equal(in.kind, GG_CERT_EEC);
	assert_string_equal(in.subject, "/DC=org/DC=example/CN=Test User");
	assert_string_equal(in.identity, "/DC=org/DC=example/CN=Test User");
	assert_string_equal(in.issuer, "/DC=org/DC=example/CN=gridgpu Test CA");
	assert_string_equal(in.serial, "2");
	assert_string_equal(in.path, F.cert);
	assert_int_equal(in.time_left, 30 * 86400);
	gg_proxy_info_clear(&in);

	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 7200, 0, NULL);
	assert_int_equal(gg_proxy_info_get(p, F.now + 600, &in, &err), 0);
	assert_int_equal(in.kind, GG_CERT_PROXY);
	assert_string_equal(in.type, "RFC 3820 compliant impersonation proxy");
	assert_string_equal(in.issuer, "/DC=org/DC=example/CN=Test User");
	assert_string_equal(in.identity, "/DC=org/DC=example/CN=Test User");
	assert_int_equal(strncmp(in.subject, "/DC=org/DC=example/CN=Test User/CN=", 35), 0);
	assert_string_equal(in.subject + 35, in.serial);
	assert_int_equal(in.bits, 1024);
	assert_string_equal(in.key_type, "RSA");
	assert_string_equal(in.signature, "sha256WithRSAEncryption");
	assert_int_equal(in.path_length, -1);
	assert_int_equal(in.chain_length, 1);
	assert_null(in.path);
	assert_int_equal(in.time_left, 7200 - 600);
	assert_int_equal(in.not_after - in.not_before, 7200 + 300);
	assert_false(in.not_yet_valid);
	gg_proxy_info_clear(&in);
	/* expired: 0 left */
	assert_int_equal(gg_proxy_info_get(p, F.now + 8000, &in, &err), 0);
	assert_int_equal(in.time_left, 0);
	gg_proxy_info_clear(&in);
	gg_proxy_info_clear(NULL);

	/* the public part of a written proxy file reads back the same */
	char path[300];
	fpath(path, sizeof path, "info-proxy.pem");
	assert_int_equal(gg_proxy_write(p, path, &err), 0);
	struct gg_cred *pub = NULL;
	assert_int_equal(gg_cred_load_public(path, &pub, &err), 0);
	assert_null(gg_cred_key(pub));
	assert_int_equal(X509_cmp(gg_cred_cert(pub), gg_cred_cert(p)), 0);
	assert_int_equal(sk_X509_num(gg_cred_chain(pub)), 1);
	gg_cred_free(pub);
	assert_err(gg_cred_load_public("/nonexistent/x", &pub, &err), &err, GG_ENOTFOUND,
		   "reading");
	gg_cred_free(p);
	gg_cred_free(u);
}

/* ---- verification --------------------------------------------------------------------- */

static void test_verify(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	assert_int_equal(gg_cred_verify(u, F.cadir, 0, &err), 0);
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 0, NULL);
	struct gg_cred *pp = proxy_of(p, GG_PROXY_IMPERSONATION, -1, 3600, 1, NULL);
	assert_int_equal(gg_cred_verify(p, F.cadir, 0, &err), 0);
	assert_int_equal(gg_cred_verify(pp, F.cadir, 0, &err), 0);

	/* another CA with the same name */
	assert_err(gg_cred_verify(p, F.badcadir, 0, &err), &err, GG_ECRED, "signature failure");
	/* no CA at all */
	char empty[300];
	fpath(empty, sizeof empty, "empty-ca");
	mkdir(empty, 0755);
	assert_err(gg_cred_verify(p, empty, 0, &err), &err, GG_ECRED,
		   "unable to get local issuer certificate");
	assert_err(gg_cred_verify(p, "/nonexistent/ca", 0, &err), &err, GG_ECRED, "CA directory");
	/* later than the proxy's end */
	assert_err(gg_cred_verify(p, F.cadir, F.now + 7200, &err), &err, GG_ECRED,
		   "certificate has expired");

	/* a proxy signed by a key that is not the user's */
	X509 *fx = X509_dup(gg_cred_cert(p));
	X509_sign(fx, F.okey, EVP_sha256());
	char path[300];
	fpath(path, sizeof path, "forged.pem");
	FILE *f = fopen(path, "w");
	PEM_write_X509(f, fx);
	PEM_write_X509(f, F.user);
	fclose(f);
	X509_free(fx);
	struct gg_cred *fc = NULL;
	assert_int_equal(gg_cred_load_public(path, &fc, &err), 0);
	assert_err(gg_cred_verify(fc, F.cadir, 0, &err), &err, GG_ECRED,
		   "certificate signature failure");
	gg_cred_free(fc);
	/* a proxy whose chain lacks the user certificate */
	fpath(path, sizeof path, "nochain.pem");
	write_certs(path, gg_cred_cert(p), NULL);
	assert_int_equal(gg_cred_load_public(path, &fc, &err), 0);
	assert_err(gg_cred_verify(fc, F.cadir, 0, &err), &err, GG_ECRED, "unable to get");
	gg_cred_free(fc);
	/* a proxy whose subject is not the issuer's + one CN */
	X509 *bad = X509_dup(gg_cred_cert(p));
	X509_NAME *n = X509_NAME_dup(X509_get_subject_name(F.other));
	X509_NAME_add_entry_by_NID(n, NID_commonName, MBSTRING_ASC, (const unsigned char *)"123",
				   -1, -1, 0);
	X509_set_subject_name(bad, n);
	X509_NAME_free(n);
	X509_sign(bad, F.ukey, EVP_sha256());
	fpath(path, sizeof path, "badname.pem");
	write_certs(path, bad, F.user);
	X509_free(bad);
	assert_int_equal(gg_cred_load_public(path, &fc, &err), 0);
	assert_err(gg_cred_verify(fc, F.cadir, 0, &err), &err, GG_ECRED, "proxy");
	gg_cred_free(fc);

	char *dir = NULL;
	setenv("X509_CERT_DIR", "/from/env", 1);
	assert_int_equal(gg_cred_ca_dir(NULL, &dir, &err), 0);
	assert_string_equal(dir, "/from/env");
	free(dir);
	assert_int_equal(gg_cred_ca_dir("/opt", &dir, &err), 0);
	assert_string_equal(dir, "/opt");
	free(dir);
	unsetenv("X509_CERT_DIR");
	assert_int_equal(gg_cred_ca_dir(NULL, &dir, &err), 0);
	assert_string_equal(dir, "/etc/grid-security/certificates");
	free(dir);
	gg_cred_free(pp);
	gg_cred_free(p);
	gg_cred_free(u);
}

/* ---- delegation ----------------------------------------------------------------------- */

static char *make_csr_version(EVP_PKEY *k, long version)
{
	X509_REQ *req = X509_REQ_new();
	X509_REQ_set_version(req, version);
	X509_REQ_set_pubkey(req, k);
	assert_true(X509_REQ_sign(req, k, EVP_sha256()) > 0);
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509_REQ(b, req);
	char *p;
	long n = BIO_get_mem_data(b, &p);
	char *s = strndup(p, (size_t)n);
	BIO_free(b);
	X509_REQ_free(req);
	return s;
}

static char *make_csr(EVP_PKEY *k)
{
	return make_csr_version(k, 0);
}

/* ARC's CEs write their delegation requests with version 3 (value 2), which OpenSSL 3.4
 * and later refuse to verify (Debian 13's 3.5 did): the signature is still checked,
 * and a tampered one still refused. */
static void test_sign_csr_other_version(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 0, NULL);
	char *csr = make_csr_version(F.pkeys[2], 2);
	char *chain = NULL;
	size_t len = 0;
	assert_int_equal(gg_proxy_sign_csr(p, csr, strlen(csr), 0, &chain, &len, &err), 0);
	assert_non_null(strstr(chain, "BEGIN CERTIFICATE"));
	free(chain);
	chain = NULL;
	size_t tl = strlen(csr);
	char *c = csr + tl - 40; /* inside the signature */
	*c = *c == 'A' ? 'B' : 'A';
	assert_int_equal(gg_proxy_sign_csr(p, csr, tl, 0, &chain, &len, &err), GG_EPROTO);
	assert_null(chain);
	free(csr);
	gg_cred_free(p);
	gg_cred_free(u);
}

static void test_sign_csr(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 0, NULL);
	char *csr = make_csr(F.pkeys[2]);
	char *chain = NULL;
	size_t len = 0;
	assert_int_equal(gg_proxy_sign_csr(p, csr, strlen(csr), 0, &chain, &len, &err), 0);
	assert_int_equal(strlen(chain), len);
	assert_null(strstr(chain, "PRIVATE KEY"));
	/* the PUT body: new cert, the proxy, the user cert; it verifies */
	char path[300];
	fpath(path, sizeof path, "delegated.pem");
	write_text(path, chain, 0600);
	struct gg_cred *d = NULL;
	assert_int_equal(gg_cred_load_public(path, &d, &err), 0);
	X509 *x = gg_cred_cert(d);
	assert_true(EVP_PKEY_eq(X509_get0_pubkey(x), F.pkeys[2]) == 1);
	assert_int_equal(sk_X509_num(gg_cred_chain(d)), 2);
	assert_int_equal(X509_cmp(sk_X509_value(gg_cred_chain(d), 0), gg_cred_cert(p)), 0);
	assert_int_equal(X509_cmp(sk_X509_value(gg_cred_chain(d), 1), F.user), 0);
	assert_int_equal(
		X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(gg_cred_cert(p))), 0);
	assert_int_equal(gg_cert_kind(x), GG_CERT_PROXY);
	assert_int_equal(
		ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(gg_cred_cert(p))), 0);
	assert_int_equal(X509_get_signature_nid(x), NID_sha256WithRSAEncryption);
	assert_int_equal(gg_cred_verify(d, F.cadir, 0, &err), 0);
	gg_cred_free(d);
	free(chain);

	/* a shorter lifetime; a limited signer gives a limited delegation */
	struct gg_cred *lim = proxy_of(u, GG_PROXY_LIMITED, -1, 3600, 1, NULL);
	assert_int_equal(gg_proxy_sign_csr(lim, csr, strlen(csr), 600, &chain, NULL, &err), 0);
	write_text(path, chain, 0600);
	free(chain);
	assert_int_equal(gg_cred_load_public(path, &d, &err), 0);
	assert_int_equal(gg_cert_kind(gg_cred_cert(d)), GG_CERT_PROXY_LIMITED);
	struct gg_proxy_info in;
	assert_int_equal(gg_proxy_info_get(d, 0, &in, &err), 0);
	assert_true(in.time_left <= 600 && in.time_left > 590);
	gg_proxy_info_clear(&in);
	assert_int_equal(gg_cred_verify(d, F.cadir, 0, &err), 0);
	gg_cred_free(d);
	gg_cred_free(lim);

	/* garbage and a tampered request */
	assert_err(gg_proxy_sign_csr(p, "garbage", 7, 0, &chain, &len, &err), &err, GG_EPROTO,
		   "delegation request");
	assert_null(chain);
	char *tampered = make_csr(F.pkeys[3]);
	/* flip one character of the base64 body (inside the signature) */
	size_t tl = strlen(tampered);
	char *c = tampered + tl - 40;
	*c = *c == 'A' ? 'B' : 'A';
	int rc = gg_proxy_sign_csr(p, tampered, tl, 0, &chain, &len, &err);
	assert_int_equal(rc, GG_EPROTO);
	free(tampered);
	/* a weak key */
	EVP_PKEY *weak = rsa(512);
	char *wcsr = make_csr(weak);
	assert_err(gg_proxy_sign_csr(p, wcsr, strlen(wcsr), 0, &chain, &len, &err), &err, GG_EPROTO,
		   "only 512 bits");
	free(wcsr);
	EVP_PKEY_free(weak);
	free(csr);
	gg_cred_free(p);
	gg_cred_free(u);
}

/* ---- the proxy file --------------------------------------------------------------------- */

static void test_write_load_destroy(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 0, NULL);
	char dir[300], path[400];
	fpath(dir, sizeof dir, "out");
	mkdir(dir, 0700);
	snprintf(path, sizeof path, "%s/x509up_test", dir);
	assert_int_equal(gg_proxy_write(p, path, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(count_files(dir), 1); /* no temp file left */
	/* cert, key (traditional RSA form), chain, in that order */
	const char *text = slurp(path);
	const char *c1 = strstr(text, "BEGIN CERTIFICATE"),
		   *k = strstr(text, "BEGIN RSA PRIVATE KEY");
	assert_non_null(c1);
	assert_non_null(k);
	assert_true(c1 < k);
	assert_non_null(strstr(k, "BEGIN CERTIFICATE"));
	/* it loads back as a usable issuer */
	struct gg_cred *back = NULL;
	assert_int_equal(gg_proxy_load(path, &back, &err), 0);
	assert_int_equal(X509_cmp(gg_cred_cert(back), gg_cred_cert(p)), 0);
	assert_true(EVP_PKEY_eq(gg_cred_key(back), F.pkeys[0]) == 1);
	assert_int_equal(sk_X509_num(gg_cred_chain(back)), 1);
	assert_string_equal(gg_cred_path(back), path);
	gg_cred_free(back);
	/* to_pem without the key */
	char *pem;
	size_t len;
	assert_int_equal(gg_cred_to_pem(p, 0, &pem, &len, &err), 0);
	assert_null(strstr(pem, "PRIVATE"));
	gg_cred_pem_free(pem, len);
	/* replaced atomically */
	struct gg_cred *p2 = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 1, NULL);
	assert_int_equal(gg_proxy_write(p2, path, &err), 0);
	assert_int_equal(gg_proxy_load(path, &back, &err), 0);
	assert_int_equal(X509_cmp(gg_cred_cert(back), gg_cred_cert(p2)), 0);
	gg_cred_free(back);
	gg_cred_free(p2);
	/* a target that is a directory */
	assert_err(gg_proxy_write(p, dir, &err), &err, GG_ECRED, "not a regular file");
	/* a proxy others can read is refused */
	chmod(path, 0644);
	assert_err(gg_proxy_load(path, &back, &err), &err, GG_ECRED, "accessible by others");
	chmod(path, 0600);
	/* destroy */
	assert_int_equal(gg_proxy_destroy(path, &err), 0);
	assert_int_equal(count_files(dir), 0);
	assert_err(gg_proxy_destroy(path, &err), &err, GG_ENOTFOUND, "no proxy");
	assert_err(gg_proxy_load(path, &back, &err), &err, GG_ENOTFOUND, "No such file");

	/* default paths */
	char *pp = NULL;
	unsetenv("X509_USER_PROXY");
	assert_int_equal(gg_proxy_path(NULL, &pp, &err), 0);
	char want[64];
	snprintf(want, sizeof want, "/tmp/x509up_u%u", (unsigned)getuid());
	assert_string_equal(pp, want);
	free(pp);
	setenv("X509_USER_PROXY", "/env/proxy", 1);
	assert_int_equal(gg_proxy_path(NULL, &pp, &err), 0);
	assert_string_equal(pp, "/env/proxy");
	free(pp);
	assert_int_equal(gg_proxy_path("/opt/p", &pp, &err), 0);
	assert_string_equal(pp, "/opt/p");
	free(pp);
	unsetenv("X509_USER_PROXY");
	gg_cred_free(p);
	gg_cred_free(u);
}

/* Run fn in a child as uid NOBODY (when we are root) and return its exit status. */
static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(NOBODY) < 0 || setuid(NOBODY) < 0))
			_exit(99);
		_exit(fn(arg));
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
}

struct write_try {
	struct gg_cred *proxy;
	const char *path;
	const char *want;
};

static int try_write(void *arg)
{
	struct write_try *w = arg;
	struct gg_err err = {0};
	int rc = gg_proxy_write(w->proxy, w->path, &err);
	if (rc != GG_ECRED || !strstr(err.msg, w->want)) {
		fprintf(stderr, "gg_proxy_write: %d %s\n", rc, err.msg);
		return 1;
	}
	return 0;
}

static void test_write_refusals(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_cred *u = user_cred();
	struct gg_cred *p = proxy_of(u, GG_PROXY_IMPERSONATION, -1, 3600, 0, NULL);
	char ro[300], path[400];

	/* an output directory we cannot write */
	fpath(ro, sizeof ro, "readonly");
	mkdir(ro, 0555);
	snprintf(path, sizeof path, "%s/x509up", ro);
	struct write_try w = {p, path, "Permission denied"};
	if (geteuid() == 0)
		assert_int_equal(as_nobody(try_write, &w), 0);
	else
		assert_int_equal(try_write(&w), 0);
	assert_int_equal(count_files(ro), 0);
	assert_err(gg_proxy_write(p, "/nonexistent-dir/x509up", &err), &err, GG_ECRED,
		   "No such file");

	/* an existing proxy file owned by someone else */
	if (geteuid() == 0) {
		char dir[300];
		fpath(dir, sizeof dir, "shared");
		mkdir(dir, 01777);
		chmod(dir, 01777);
		snprintf(path, sizeof path, "%s/x509up_other", dir);
		write_text(path, "someone else's\n", 0600);
		assert_int_equal(chown(path, NOBODY, NOBODY), 0);
		assert_err(gg_proxy_write(p, path, &err), &err, GG_ECRED, "owned by uid 65534");
		assert_string_equal(slurp(path), "someone else's\n");
		assert_int_equal(count_files(dir), 1);
		assert_err(gg_proxy_destroy(path, &err), &err, GG_ECRED, "owned by uid 65534");
		assert_string_equal(slurp(path), "someone else's\n");
	} else {
		assert_err(gg_proxy_check_target("/etc/passwd", &err), &err, GG_ECRED,
			   "owned by uid");
	}
	gg_cred_free(p);
	gg_cred_free(u);
}

/* ---- key generation and the process --------------------------------------------------------- */

static void test_keygen(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_keygen *kg = NULL;
	EVP_PKEY *k = NULL;
	assert_int_equal(gg_keygen_start(1024, 2, &kg, &err), 0);
	assert_int_equal(gg_keygen_finish(kg, &k, &err), 0);
	assert_non_null(k);
	assert_true(EVP_PKEY_is_a(k, "RSA"));
	assert_int_equal(EVP_PKEY_get_bits(k), 1024);
	/* a valid RSA key by OpenSSL's full check (primes, d, CRT values), e = 65537 */
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new(k, NULL);
	assert_int_equal(EVP_PKEY_check(pc), 1);
	EVP_PKEY_CTX_free(pc);
	BIGNUM *e = NULL;
	assert_true(EVP_PKEY_get_bn_param(k, "e", &e));
	assert_true(BN_is_word(e, 65537));
	BN_free(e);
	/* two keys differ */
	EVP_PKEY *k2 = NULL;
	assert_int_equal(gg_keygen_start(1024, 1, &kg, &err), 0);
	assert_int_equal(gg_keygen_finish(kg, &k2, &err), 0);
	assert_true(EVP_PKEY_eq(k, k2) != 1);
	EVP_PKEY_free(k2);
	/* an odd size goes through OpenSSL's own key generation */
	assert_int_equal(gg_keygen_start(1025, 2, &kg, &err), 0);
	assert_int_equal(gg_keygen_finish(kg, &k2, &err), 0);
	assert_int_equal(EVP_PKEY_get_bits(k2), 1025);
	EVP_PKEY_free(k2);
	/* usable for a proxy */
	struct gg_cred *u = user_cred();
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.key = k;
	struct gg_cred *p = NULL;
	assert_int_equal(gg_proxy_create(u, &o, &p, NULL, &err), 0);
	assert_int_equal(gg_cred_verify(p, F.cadir, 0, &err), 0);
	gg_cred_free(p);
	gg_cred_free(u);
	EVP_PKEY_free(k);
	/* abandoned while running (stops quickly), one thread, default threads */
	assert_int_equal(gg_keygen_start(4096, 1, &kg, &err), 0);
	gg_keygen_free(kg);
	assert_int_equal(gg_keygen_start(0, 0, &kg, &err), 0);
	gg_keygen_free(kg);
	gg_keygen_free(NULL);
	assert_err(gg_keygen_start(100, 1, &kg, &err), &err, GG_EUSAGE, "key size");
}

static int check_no_dumps(void *arg)
{
	(void)arg;
	struct gg_err err = {0};
	if (gg_cred_disable_core_dumps(&err) < 0)
		return 1;
	struct rlimit rl;
	if ((unit_fast(" prctl") && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) ||
	    getrlimit(RLIMIT_CORE, &rl) < 0 || rl.rlim_cur != 0 || rl.rlim_max != 0)
		return 2;
	return 0;
}

static void test_core_dumps(void **state)
{
	(void)state;
	pid_t pid = fork();
	if (pid == 0)
		_exit(check_no_dumps(NULL));
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The --valid value of the CLI goes through gg_duration_parse; it must refuse
 * what cannot be parsed (the CLI turns that into a credentials error). */
static void test_bad_duration(void **state)
{
	(void)state;
	int64_t v;
	struct gg_err err = {0};
	const char *bad[] = {"garbage", "12x", "", "-1h", "1h 30m", "99:99"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_true(gg_duration_parse(bad[i], &v, &err) < 0);
	assert_int_equal(gg_duration_parse("12:00", &v, &err), 0);
	assert_int_equal(v, 12 * 3600);
}

/* ---- the CA directory's state, the legacy provider ---------------------------------- */

static void write_crl(const char *path, time_t last, time_t next)
{
	X509_CRL *crl = X509_CRL_new();
	assert_non_null(crl);
	X509_CRL_set_version(crl, 1);
	X509_CRL_set_issuer_name(crl, X509_get_subject_name(F.ca));
	ASN1_TIME *t = ASN1_TIME_set(NULL, last);
	X509_CRL_set1_lastUpdate(crl, t);
	ASN1_TIME_set(t, next);
	X509_CRL_set1_nextUpdate(crl, t);
	ASN1_TIME_free(t);
	assert_true(X509_CRL_sign(crl, F.cakey, EVP_sha256()) > 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	PEM_write_X509_CRL(f, crl);
	fclose(f);
	X509_CRL_free(crl);
}

static void test_ca_dir_check(void **state)
{
	(void)state;
	time_t day = 86400, soon = F.now + 30 * day;
	struct gg_ca_dir_status s;
	struct gg_err err = {0};

	/* the fixture's directory: one current CA, no CRL */
	assert_int_equal(gg_ca_dir_check(F.cadir, F.now, soon, &s, &err), 0);
	assert_int_equal(s.certs, 1);
	assert_int_equal(s.crls, 0);
	assert_int_equal(s.expired + s.expiring + s.stale, 0);
	assert_null(s.bad_name);
	gg_ca_dir_status_clear(&s);

	/* one CA under two hashes, an expired and an expiring CA, a stale CRL, files
	 * that are not hashed names or not PEM */
	char dir[400], p[500], q[500];
	snprintf(dir, sizeof dir, "%s/cadir-check", F.dir);
	ca_dir(dir, F.ca);
	snprintf(p, sizeof p, "%s/%08lx.0", dir, X509_subject_name_hash(F.ca));
	snprintf(q, sizeof q, "%s/%08lx.1", dir, X509_subject_name_hash(F.ca));
	assert_int_equal(link(p, q), 0);
	X509 *old = mk_cert(NULL, NULL, F.cakey, "Old CA", F.now - 9 * day, F.now - day, 1, 7);
	X509 *ending = mk_cert(NULL, NULL, F.cakey, "Ending CA", F.now - day, F.now + day, 1, 8);
	snprintf(p, sizeof p, "%s/0000000a.0", dir);
	write_certs(p, old, NULL);
	snprintf(p, sizeof p, "%s/0000000b.0", dir);
	write_certs(p, ending, NULL);
	X509_free(old);
	X509_free(ending);
	snprintf(p, sizeof p, "%s/0000000c.r0", dir);
	write_crl(p, F.now - 9 * day, F.now - day);
	snprintf(p, sizeof p, "%s/0000000d.0", dir);
	write_text(p, "not a certificate\n", 0644);
	snprintf(p, sizeof p, "%s/ca.pem", dir);
	write_certs(p, F.ca, NULL);
	assert_int_equal(gg_ca_dir_check(dir, F.now, soon, &s, &err), 0);
	assert_int_equal(s.certs, 3);
	assert_int_equal(s.expired, 1);
	assert_int_equal(s.expiring, 1);
	assert_int_equal(s.crls, 1);
	assert_int_equal(s.stale, 1);
	assert_non_null(s.bad_name);
	assert_true(strstr(s.bad_name, "CN=Old CA") || strstr(s.bad_name, "CN=Ending CA"));
	assert_true(s.bad_end == F.now - day || s.bad_end == F.now + day);
	assert_string_equal(s.stale_name, "0000000c.r0");
	assert_int_equal(s.stale_next, F.now - day);
	gg_ca_dir_status_clear(&s);
	gg_ca_dir_status_clear(NULL);

	/* a directory that is not there */
	snprintf(dir, sizeof dir, "%s/no-such-dir", F.dir);
	assert_err(gg_ca_dir_check(dir, F.now, soon, &s, &err), &err, GG_ECRED,
		   "no-such-dir: No such file or directory");
}

static void test_legacy_provider(void **state)
{
	(void)state;
	struct ossl_provider_st *prov = NULL, *first;
	struct gg_err err = {0};
	/* where no provider modules are, it is not available, and says so */
	char *saved = getenv("OPENSSL_MODULES") ? strdup(getenv("OPENSSL_MODULES")) : NULL;
	setenv("OPENSSL_MODULES", F.dir, 1);
	assert_err(gg_cred_legacy_load(&prov, &err), &err, GG_ECRED,
		   "legacy provider is not available");
	assert_null(prov);
	if (saved)
		setenv("OPENSSL_MODULES", saved, 1);
	else
		unsetenv("OPENSSL_MODULES");
	free(saved);
	/* OpenSSL 3 as shipped has it; loading twice keeps the first */
	assert_int_equal(gg_cred_legacy_load(&prov, &err), 0);
	assert_non_null(prov);
	first = prov;
	assert_int_equal(gg_cred_legacy_load(&prov, &err), 0);
	assert_ptr_equal(prov, first);
	gg_cred_legacy_unload(prov);
	gg_cred_legacy_unload(NULL);
}

int main(void)
{
	/* as gridgpu does first: every test below runs with OpenSSL wiping what
	 * it frees */
	if (gg_cred_wipe_on_free() != 0) {
		fprintf(stderr, "gg_cred_wipe_on_free refused before any OpenSSL use\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locate_order),
		cmocka_unit_test(test_load_plain_and_encrypted),
		cmocka_unit_test(test_load_key_kinds),
		cmocka_unit_test(test_load_key_mismatch),
		cmocka_unit_test(test_load_expired_and_future),
		cmocka_unit_test(test_load_key_permissions),
		cmocka_unit_test(test_load_garbage),
		cmocka_unit_test(test_load_pkcs12),
		cmocka_unit_test(test_proxy_create),
		cmocka_unit_test(test_proxy_clipping),
		cmocka_unit_test(test_proxy_limited_pathlen_and_chain),
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_sign_csr),
		cmocka_unit_test(test_sign_csr_other_version),
		cmocka_unit_test(test_write_load_destroy),
		cmocka_unit_test(test_write_refusals),
		cmocka_unit_test(test_keygen),
		cmocka_unit_test(test_core_dumps),
		cmocka_unit_test(test_bad_duration),
		cmocka_unit_test(test_ca_dir_check),
		cmocka_unit_test(test_legacy_provider),
	};
	return cmocka_run_group_tests_name("cred", tests, setup, teardown);
}
