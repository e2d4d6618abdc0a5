/* Finding and loading credentials: PEM certificate + key, PKCS#12, proxy files. */
#include "cred/internal.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509v3.h>

#define CRED_FILE_MAX (1024 * 1024)

/* ---- small helpers shared by lib/cred ------------------------------------- */

int gg_cred_ossl_err(struct gg_err *err, int code, const char *fmt, ...)
{
	char what[GG_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	unsigned long e = ERR_peek_last_error();
	const char *why = e ? ERR_reason_error_string(e) : NULL;
	gg_err_set(err, code, "%s: %s", what, why ? why : "unknown OpenSSL error");
	ERR_clear_error();
	return code;
}

void gg_cred_secret_free(void *p, size_t len)
{
	if (p)
		OPENSSL_clear_free(p, len);
}

/* Read the regular file open on fd (closed here), sized from st. */
static int read_fd(int fd, const struct stat *st, const char *path, const char *what,
		   unsigned char **out, size_t *len, struct gg_err *err)
{
	if (!S_ISREG(st->st_mode) || st->st_size > CRED_FILE_MAX) {
		close(fd);
		return gg_err_set(err, GG_ECRED, "reading %s '%s': %s", what, path,
				  S_ISREG(st->st_mode) ? "file too large" : "not a regular file");
	}
	/* Sized once from fstat, so no stale copies are left by reallocation. */
	size_t cap = (size_t)st->st_size, n = 0;
	unsigned char *buf = OPENSSL_malloc(cap + 1);
	if (!buf) {
		close(fd);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			OPENSSL_clear_free(buf, cap + 1);
			return gg_err_sys(err, GG_ECRED, e, "reading %s '%s'", what, path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* O_NONBLOCK: a FIFO put in the file's place is refused by fstat, not waited on. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK)

int gg_cred_read_file(const char *path, const char *what, unsigned char **out, size_t *len,
		      struct gg_err *err)
{
	int fd = open(path, READ_FLAGS);
	if (fd < 0)
		return gg_err_sys(err, GG_ECRED, errno, "reading %s '%s'", what, path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return gg_err_sys(err, GG_ECRED, e, "reading %s '%s'", what, path);
	}
	return read_fd(fd, &st, path, what, out, len, err);
}

/* Open path, following a symbolic link only when it is the user's (or
 * root's): one that another user made (in /tmp, say) is refused. */
static int open_own(const char *path, const char *what, int *fd, struct gg_err *err)
{
	*fd = open(path, READ_FLAGS | O_NOFOLLOW);
	if (*fd >= 0 || errno != ELOOP)
		return 0;
	struct stat ln;
	if (lstat(path, &ln) == 0 && S_ISLNK(ln.st_mode) && ln.st_uid != geteuid() &&
	    ln.st_uid != 0)
		return gg_err_set(err, GG_ECRED,
				  "%s '%s' is a symbolic link made by uid %u, not by you: not "
				  "used (someone else may have put it there; keep yours in a "
				  "file of your own, mode 600)",
				  what, path, (unsigned)ln.st_uid);
	*fd = open(path, READ_FLAGS);
	return 0;
}

/* Whether the file open on fd is the user's own and closed to others. */
static int check_own(const struct stat *st, const char *path, const char *what, struct gg_err *err)
{
	if (st->st_uid != geteuid())
		return gg_err_set(err, GG_ECRED,
				  "%s '%s' is owned by uid %u, not by you: not used (someone "
				  "else may have put it there; keep yours in a file of your "
				  "own, mode 600)",
				  what, path, (unsigned)st->st_uid);
	if (st->st_mode & 077)
		return gg_err_set(err, GG_ECRED,
				  "%s '%s' is open to others (mode %04o): not used; run chmod "
				  "600 '%s'",
				  what, path, (unsigned)(st->st_mode & 07777), path);
	return 0;
}

int gg_cred_read_own(const char *path, const char *what, unsigned char **out, size_t *len,
		     struct gg_err *err)
{
	int fd = -1, rc = open_own(path, what, &fd, err);
	if (rc < 0)
		return rc;
	if (fd < 0)
		return gg_err_sys(err,
				  errno == ENOENT || errno == ENOTDIR ? GG_ENOTFOUND : GG_ECRED,
				  errno, "reading %s '%s'", what, path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return gg_err_sys(err, GG_ECRED, e, "reading %s '%s'", what, path);
	}
	if (S_ISREG(st.st_mode) && (rc = check_own(&st, path, what, err)) < 0) {
		close(fd);
		return rc;
	}
	return read_fd(fd, &st, path, what, out, len, err);
}

struct gg_cred *gg_cred_alloc(void)
{
	struct gg_cred *c = calloc(1, sizeof *c);
	if (c && !(c->chain = sk_X509_new_null())) {
		free(c);
		return NULL;
	}
	return c;
}

void gg_cred_free(struct gg_cred *c)
{
	if (!c)
		return;
	X509_free(c->cert);
	EVP_PKEY_free(c->key);
	sk_X509_pop_free(c->chain, X509_free);
	PKCS12_free(c->p12);
	gg_cred_secret_free(c->key_data, c->key_len + 1);
	free(c->path);
	free(c->key_path);
	free(c);
}

X509 *gg_cred_cert(const struct gg_cred *c)
{
	return c ? c->cert : NULL;
}
EVP_PKEY *gg_cred_key(const struct gg_cred *c)
{
	return c ? c->key : NULL;
}
STACK_OF(X509) * gg_cred_chain(const struct gg_cred *c)
{
	return c ? c->chain : NULL;
}
const char *gg_cred_path(const struct gg_cred *c)
{
	return c ? c->path : NULL;
}
const char *gg_cred_key_path(const struct gg_cred *c)
{
	return c ? (c->key_path ? c->key_path : c->path) : NULL;
}
int gg_cred_is_pkcs12(const struct gg_cred *c)
{
	return c && c->pkcs12;
}
int gg_cred_needs_passphrase(const struct gg_cred *c)
{
	return c && c->need_pass;
}

static void *ossl_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return gg_wipe_realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	gg_wipe_free(p);
}

int gg_cred_wipe_on_free(void)
{
	return CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free) ? 0 : -1;
}

int gg_cred_disable_core_dumps(struct gg_err *err)
{
	struct rlimit rl = {0, 0};
	if (gg_compat_no_dump() < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "disabling core dumps");
	if (setrlimit(RLIMIT_CORE, &rl) < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "setting the core size limit to 0");
	return 0;
}

/* ---- locating ------------------------------------------------------------- */

void gg_cred_source_clear(struct gg_cred_source *src)
{
	if (!src)
		return;
	free(src->cert);
	free(src->key);
	memset(src, 0, sizeof *src);
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* A file that is not there: named on the command line (--cert, --key), a usage
 * error (a typo, gridgpu(1)); from the environment or ~/.globus, no credential. */
static int missing_code(const char *origin)
{
	return !strcmp(origin, "--cert") && errno == ENOENT ? GG_EUSAGE : GG_ECRED;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int gg_cred_locate(const char *cert, const char *key, struct gg_cred_source *out,
		   struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	const char *ecert = getenv("X509_USER_CERT"), *ekey = getenv("X509_USER_KEY");
	if (ecert && !*ecert)
		ecert = NULL;
	if (ekey && !*ekey)
		ekey = NULL;
	char *dcert = NULL, *dkey = NULL, *dp12 = NULL;
	const char *home = gg_home_dir();
	if (home) {
		dcert = gg_strdup_printf("%s/.globus/usercert.pem", home);
		dkey = gg_strdup_printf("%s/.globus/userkey.pem", home);
		dp12 = gg_strdup_printf("%s/.globus/usercred.p12", home);
		if (!dcert || !dkey || !dp12) {
			free(dcert);
			free(dkey);
			free(dp12);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	const char *c = NULL, *k = NULL;
	if (cert || key) {
		if (!cert) {
			free(dcert);
			free(dkey);
			free(dp12);
			return gg_err_set(err, GG_EUSAGE, "--key needs --cert");
		}
		c = cert;
		k = key;
		out->origin = "--cert";
	} else if (ecert) {
		c = ecert;
		k = ekey;
		out->origin = "X509_USER_CERT";
	} else if (ekey) {
		c = dcert;
		k = ekey;
		out->origin = "X509_USER_KEY";
	} else if (dcert && file_exists(dcert)) {
		c = dcert;
		k = dkey;
		out->origin = "~/.globus";
	} else if (dp12 && file_exists(dp12)) {
		c = dp12;
		out->pkcs12 = 1;
		out->origin = "~/.globus";
	} else {
		free(dcert);
		free(dkey);
		free(dp12);
		return gg_err_set(err, GG_ECRED,
				  "no user certificate: give --cert, set X509_USER_CERT, or put "
				  "usercert.pem and userkey.pem (or usercred.p12) in ~/.globus");
	}
	int rc = 0;
	if (!c) {
		rc = gg_err_set(err, GG_ECRED, "no user certificate: HOME is not set");
	} else if (!file_exists(c)) {
		rc = gg_err_sys(err, missing_code(out->origin), errno, "certificate '%s' (from %s)",
				c, out->origin);
	} else if (k && !file_exists(k)) {
		rc = gg_err_sys(err, missing_code(out->origin), errno, "key '%s' (from %s)", k,
				out->origin);
	} else {
		out->cert = strdup(c);
		out->key = k ? strdup(k) : NULL;
		if (!out->cert || (k && !out->key))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		if (!k && (ends_with(c, ".p12") || ends_with(c, ".pfx")))
			out->pkcs12 = 1;
	}
	free(dcert);
	free(dkey);
	free(dp12);
	if (rc < 0)
		gg_cred_source_clear(out);
	return rc;
}

/* ---- PEM ------------------------------------------------------------------- */

/* Read every certificate of a PEM buffer: the first into *cert, the rest into
 * chain. */
static int pem_certs(const unsigned char *data, size_t len, const char *path, X509 **cert,
		     STACK_OF(X509) * chain, struct gg_err *err)
{
	BIO *bio = BIO_new_mem_buf(data, (int)len);
	if (!bio)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int n = 0, rc = 0;
	ERR_clear_error();
	for (;;) {
		X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		if (!x) {
			unsigned long e = ERR_peek_last_error();
			if (ERR_GET_LIB(e) == ERR_LIB_PEM &&
			    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
				ERR_clear_error();
				break; /* the end */
			}
			rc = gg_cred_ossl_err(
				err, GG_ECRED,
				"reading certificate '%s': certificate %d is truncated "
				"or corrupt",
				path, n + 1);
			break;
		}
		if (n == 0) {
			*cert = x;
		} else if (!sk_X509_push(chain, x)) {
			X509_free(x);
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			break;
		}
		n++;
	}
	BIO_free(bio);
	if (rc == 0 && n == 0)
		rc = gg_err_set(
			err, GG_ECRED,
			"reading certificate '%s': no certificate found (truncated or not PEM)",
			path);
	if (rc < 0 && *cert) {
		X509_free(*cert);
		*cert = NULL;
		while (sk_X509_num(chain) > 0)
			X509_free(sk_X509_pop(chain));
	}
	return rc;
}

struct pw {
	const char *pass;
	size_t len;
	int called;
};

static int pw_cb(char *buf, int size, int rwflag, void *u)
{
	(void)rwflag;
	struct pw *p = u;
	p->called = 1;
	if (!p->pass || p->len > (size_t)size)
		return -1;
	memcpy(buf, p->pass, p->len);
	return (int)p->len;
}

/* The first RSA private key among the PEM blocks of bio (a proxy file holds
 * its certificate first), or NULL. A decoder chain for RSA alone: OpenSSL 3's
 * PEM_read_bio_PrivateKey builds one for every key type each time, 16 M
 * instructions (about 4 ms, a fifth of a `list --sync`'s own work). */
static EVP_PKEY *pem_rsa_key(BIO *bio, struct pw *pw)
{
	EVP_PKEY *k = NULL;
	OSSL_DECODER_CTX *dc =
		OSSL_DECODER_CTX_new_for_pkey(&k, "PEM", NULL, "RSA", EVP_PKEY_KEYPAIR, NULL, NULL);
	if (!dc || !OSSL_DECODER_CTX_set_pem_password_cb(dc, pw_cb, pw)) {
		OSSL_DECODER_CTX_free(dc);
		return NULL;
	}
	long pos = BIO_tell(bio), next;
	while (!OSSL_DECODER_from_bio(dc, bio) || !k) {
		next = BIO_tell(bio);
		if (BIO_eof(bio) || next <= pos)
			break;
		pos = next;
	}
	OSSL_DECODER_CTX_free(dc);
	return k;
}

/* Decode the private key of a PEM buffer with pass (may be NULL: then an
 * encrypted key fails with pw->called set): an RSA key the fast way, any
 * other as OpenSSL's generic reader finds it. */
static EVP_PKEY *pem_key(const unsigned char *data, size_t len, struct pw *pw)
{
	BIO *bio = BIO_new_mem_buf(data, (int)len);
	if (!bio)
		return NULL;
	EVP_PKEY *k = pem_rsa_key(bio, pw);
	if (!k && (!pw->called || pw->pass)) {
		ERR_clear_error();
		BIO_free(bio);
		if (!(bio = BIO_new_mem_buf(data, (int)len)))
			return NULL;
		k = PEM_read_bio_PrivateKey(bio, NULL, pw_cb, pw);
	}
	BIO_free(bio);
	return k;
}

static int has_pem(const unsigned char *data, size_t len)
{
	static const char tag[] = "-----BEGIN ";
	size_t m = sizeof tag - 1;
	for (size_t i = 0; i + m <= len; i++)
		if (memcmp(data + i, tag, m) == 0)
			return 1;
	return 0;
}

static int match_key(struct gg_cred *c, struct gg_err *err)
{
	if (!X509_check_private_key(c->cert, c->key)) {
		ERR_clear_error();
		EVP_PKEY_free(c->key);
		c->key = NULL;
		return gg_err_set(err, GG_ECRED, "key '%s' does not match certificate '%s'",
				  gg_cred_key_path(c), c->path);
	}
	return 0;
}

/* ---- PKCS#12 ---------------------------------------------------------------- */

static int p12_unlock(struct gg_cred *c, const char *pass, size_t passlen, struct gg_err *err)
{
	/* PKCS12_parse wants a C string. */
	char *pw = OPENSSL_malloc(passlen + 1);
	if (!pw)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (passlen)
		memcpy(pw, pass, passlen);
	pw[passlen] = '\0';
	int rc = 0;
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	STACK_OF(X509) *ca = NULL;
	ERR_clear_error();
	if (!PKCS12_mac_present(c->p12) || PKCS12_verify_mac(c->p12, pw, (int)passlen) ||
	    (passlen == 0 && PKCS12_verify_mac(c->p12, NULL, 0))) {
		if (!PKCS12_parse(c->p12, pw, &key, &cert, &ca))
			rc = gg_cred_ossl_err(
				err, GG_ECRED,
				"reading '%s': cannot decrypt (an old cipher such as RC2? "
				"re-export it with a current 'openssl pkcs12 -export')",
				c->key_path);
		else if (!key || !cert)
			rc = gg_err_set(err, GG_ECRED, "reading '%s': no %s in the PKCS#12 file",
					c->key_path, key ? "certificate" : "private key");
	} else {
		ERR_clear_error();
		rc = gg_err_set(err, GG_ECRED, "reading '%s': wrong passphrase", c->key_path);
	}
	OPENSSL_clear_free(pw, passlen + 1);
	if (rc == 0) {
		c->key = key;
		c->cert = cert;
		key = NULL;
		cert = NULL;
		/* Extra certificates: keep those above the user's, not the root. */
		while (ca && sk_X509_num(ca) > 0) {
			X509 *x = sk_X509_shift(ca);
			if (X509_check_issued(x, x) == X509_V_OK || !sk_X509_push(c->chain, x))
				X509_free(x);
		}
		PKCS12_free(c->p12);
		c->p12 = NULL;
		c->need_pass = 0;
	}
	EVP_PKEY_free(key);
	X509_free(cert);
	sk_X509_pop_free(ca, X509_free);
	ERR_clear_error();
	return rc;
}

/* ---- opening ------------------------------------------------------------------ */

/* PKCS#12: the whole file is the secret. */
static int open_p12(struct gg_cred *c, const struct gg_cred_source *src, const unsigned char *data,
		    size_t len, struct gg_err *err)
{
	const unsigned char *p = data;
	c->p12 = d2i_PKCS12(NULL, &p, (long)len);
	ERR_clear_error();
	if (!c->p12)
		return gg_err_set(err, GG_ECRED,
				  "reading '%s': neither PEM nor PKCS#12 (truncated or garbage)",
				  src->cert);
	int rc = gg_file_check_private(src->cert, "PKCS#12 file", err);
	if (rc < 0)
		return rc;
	if (!(c->key_path = strdup(src->cert)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	c->pkcs12 = 1;
	/* Unprotected (empty password) files open at once. */
	if (PKCS12_mac_present(c->p12) && !PKCS12_verify_mac(c->p12, "", 0) &&
	    !PKCS12_verify_mac(c->p12, NULL, 0)) {
		ERR_clear_error();
		c->need_pass = 1;
		return 0;
	}
	return p12_unlock(c, "", 0, err);
}

/* PEM: the certificate (and chain) from *data, the key from it or src->key. A
 * key that needs its pass phrase keeps its bytes in c (*data = NULL then). */
static int open_pem(struct gg_cred *c, const struct gg_cred_source *src, unsigned char **data,
		    size_t *len, struct gg_err *err)
{
	int rc = pem_certs(*data, *len, src->cert, &c->cert, c->chain, err);
	if (rc < 0)
		return rc;
	const char *kpath = src->key ? src->key : src->cert;
	if (!(c->key_path = strdup(kpath)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (src->key && strcmp(src->key, src->cert) != 0) {
		gg_cred_secret_free(*data, *len + 1);
		*data = NULL;
		if ((rc = gg_cred_read_file(kpath, "key", data, len, err)) < 0)
			return rc;
	}
	struct pw pw = {NULL, 0, 0};
	ERR_clear_error();
	c->key = pem_key(*data, *len, &pw);
	ERR_clear_error();
	if (!c->key && !pw.called)
		return gg_err_set(err, GG_ECRED, "reading key '%s': no private key found%s", kpath,
				  src->key ? " (truncated or not PEM)"
					   : ": give the key file with --key or X509_USER_KEY");
	if ((rc = gg_file_check_private(kpath, "key", err)) < 0)
		return rc;
	if (c->key)
		return match_key(c, err);
	c->need_pass = 1;
	c->key_data = *data; /* kept (encrypted) until gg_cred_unlock */
	c->key_len = *len;
	*data = NULL;
	return 0;
}

int gg_cred_open(const struct gg_cred_source *src, struct gg_cred **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_cred *c = gg_cred_alloc();
	if (!c || !(c->path = strdup(src->cert))) {
		gg_cred_free(c);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = gg_cred_read_file(src->cert, src->pkcs12 ? "PKCS#12 file" : "certificate", &data,
				   &len, err);
	if (rc == 0)
		rc = !src->key && !has_pem(data, len) ? open_p12(c, src, data, len, err)
						      : open_pem(c, src, &data, &len, err);
	if (data)
		gg_cred_secret_free(data, len + 1);
	if (rc < 0) {
		gg_cred_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int gg_cred_unlock(struct gg_cred *c, const char *pass, size_t passlen, struct gg_err *err)
{
	if (!c->need_pass)
		return c->key ? 0 : gg_err_set(err, GG_ECRED, "'%s' has no private key", c->path);
	if (c->p12)
		return p12_unlock(c, pass ? pass : "", pass ? passlen : 0, err);
	struct pw pw = {pass ? pass : "", pass ? passlen : 0, 0};
	ERR_clear_error();
	c->key = pem_key(c->key_data, c->key_len, &pw);
	if (!c->key) {
		if (pw.called) {
			ERR_clear_error();
			return gg_err_set(err, GG_ECRED, "reading key '%s': wrong passphrase",
					  c->key_path);
		}
		return gg_cred_ossl_err(err, GG_ECRED, "reading key '%s'", c->key_path);
	}
	ERR_clear_error();
	int rc = match_key(c, err);
	if (rc < 0)
		return rc;
	gg_cred_secret_free(c->key_data, c->key_len + 1);
	c->key_data = NULL;
	c->key_len = 0;
	c->need_pass = 0;
	return 0;
}

int gg_cred_check_time(const struct gg_cred *c, time_t now, struct gg_err *err)
{
	if (!now)
		now = time(NULL);
	for (int i = -1; i < sk_X509_num(c->chain); i++) {
		X509 *x = i < 0 ? c->cert : sk_X509_value(c->chain, i);
		time_t nb, na;
		char when[48], who[GG_ERR_MSG_MAX / 2];
		if (!x)
			return gg_err_set(err, GG_ECRED, "no certificate");
		if (gg_cred_asn1_time(X509_get0_notBefore(x), &nb) < 0 ||
		    gg_cred_asn1_time(X509_get0_notAfter(x), &na) < 0)
			return gg_err_set(err, GG_ECRED,
					  "certificate '%s': unreadable validity dates",
					  c->path ? c->path : "");
		char *subj = gg_cred_name_str(X509_get_subject_name(x));
		if (i < 0)
			snprintf(who, sizeof who, "certificate '%s' (%s)", c->path ? c->path : "",
				 subj ? subj : "?");
		else
			snprintf(who, sizeof who, "certificate '%s' in the chain of '%s'",
				 subj ? subj : "?", c->path ? c->path : "");
		free(subj);
		if (now < nb)
			return gg_err_set(err, GG_ECRED, "%s is not valid before %s", who,
					  gg_cred_time_str(nb, when, sizeof when));
		if (now > na)
			return gg_err_set(err, GG_ECRED, "%s expired on %s", who,
					  gg_cred_time_str(na, when, sizeof when));
	}
	return 0;
}

int gg_proxy_load(const char *path, struct gg_cred **out, struct gg_err *err)
{
	struct gg_cred_source src = {(char *)path, (char *)path, 0, "proxy"};
	*out = NULL;
	struct stat st;
	if (stat(path, &st) < 0)
		return gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_ECRED, errno,
				  "proxy '%s'", path);
	int rc = gg_file_check_private(path, "proxy", err);
	if (rc < 0)
		return rc;
	struct gg_cred *c = NULL;
	if ((rc = gg_cred_open(&src, &c, err)) < 0)
		return rc;
	if (c->need_pass) {
		gg_cred_free(c);
		return gg_err_set(err, GG_ECRED, "proxy '%s': the key is encrypted", path);
	}
	*out = c;
	return 0;
}

int gg_cred_load_public(const char *path, struct gg_cred **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_cred *c = gg_cred_alloc();
	if (!c || !(c->path = strdup(path))) {
		gg_cred_free(c);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	unsigned char *data = NULL;
	size_t len = 0;
	struct stat st;
	int rc;
	if (stat(path, &st) < 0)
		rc = gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_ECRED, errno,
				"reading '%s'", path);
	else if ((rc = gg_cred_read_file(path, "certificate", &data, &len, err)) == 0)
		rc = pem_certs(data, len, path, &c->cert, c->chain, err);
	gg_cred_secret_free(data, len + 1);
	if (rc < 0) {
		gg_cred_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* ---- writing PEM ----------------------------------------------------------------- */

void gg_cred_pem_free(char *pem, size_t len)
{
	gg_cred_secret_free(pem, len + 1);
}

int gg_cred_to_pem(const struct gg_cred *c, int with_key, char **out, size_t *len,
		   struct gg_err *err)
{
	*out = NULL;
	*len = 0;
	/* secmem: grown with clearing reallocations and cleansed on free. */
	BIO *bio = BIO_new(BIO_s_secmem());
	if (!bio)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int ok = PEM_write_bio_X509(bio, c->cert);
	if (ok && with_key && c->key) {
		/* Grid tools expect the traditional "RSA PRIVATE KEY" form for RSA. */
		if (EVP_PKEY_is_a(c->key, "RSA"))
			ok = PEM_write_bio_PrivateKey_traditional(bio, c->key, NULL, NULL, 0, NULL,
								  NULL);
		else
			ok = PEM_write_bio_PrivateKey(bio, c->key, NULL, NULL, 0, NULL, NULL);
	}
	for (int i = 0; ok && i < sk_X509_num(c->chain); i++)
		ok = PEM_write_bio_X509(bio, sk_X509_value(c->chain, i));
	int rc = 0;
	if (!ok) {
		rc = gg_cred_ossl_err(err, GG_ECRED, "encoding PEM");
	} else {
		char *p;
		long n = BIO_get_mem_data(bio, &p);
		char *buf = n >= 0 ? OPENSSL_malloc((size_t)n + 1) : NULL;
		if (!buf) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		} else {
			memcpy(buf, p, (size_t)n);
			buf[n] = '\0';
			*out = buf;
			*len = (size_t)n;
		}
	}
	BIO_free(bio);
	return rc;
}
