/* lib/cred internals shared by its source files; not part of the public API. */
#ifndef GG_CRED_INTERNAL_H
#define GG_CRED_INTERNAL_H

#include <openssl/pkcs12.h>

#include "cred/cred.h"

struct gg_cred {
	X509 *cert;
	EVP_PKEY *key;
	STACK_OF(X509) * chain; /* never NULL */
	char *path;             /* certificate file, or NULL */
	char *key_path;         /* key or PKCS#12 file, or NULL */
	/* until unlocked: the encrypted key file's bytes, or the PKCS#12 */
	unsigned char *key_data;
	size_t key_len;
	PKCS12 *p12;
	int need_pass;
	int pkcs12;
};

/* Set err to "<fmt>: <OpenSSL's reason>" and clear OpenSSL's error queue. */
int gg_cred_ossl_err(struct gg_err *err, int code, const char *fmt, ...) GG_ATTR_PRINTF(3, 4);
/* notBefore/notAfter as time_t; 0 on success. */
int gg_cred_asn1_time(const ASN1_TIME *t, time_t *out);
/* "2025-01-31 12:00:00 UTC" into buf (>= 32 bytes). */
char *gg_cred_time_str(time_t t, char *buf, size_t len);
/* Read a whole (small) file into an OPENSSL_malloc'd buffer, NUL-terminated;
 * free with gg_cred_secret_free. GG_ECRED on failure, naming what. */
int gg_cred_read_file(const char *path, const char *what, unsigned char **out, size_t *len,
		      struct gg_err *err);
/* The same for a file that holds a secret found where others could write (a
 * bearer token): checked on the opened file, it must be the user's (euid) and
 * closed to group and others (mode 600 or less), and a symbolic link to it
 * the user's or root's. GG_ENOTFOUND when there is none, GG_ECRED with one
 * line saying why and what to do. */
int gg_cred_read_own(const char *path, const char *what, unsigned char **out, size_t *len,
		     struct gg_err *err);
void gg_cred_secret_free(void *p, size_t len);
/* A new, empty credential (chain allocated). */
struct gg_cred *gg_cred_alloc(void);
/* Earliest notAfter of cert and chain. */
time_t gg_cred_end(const struct gg_cred *c);
/* The kind and the path length constraint (-1 when absent) of a certificate. */
enum gg_cert_kind gg_cred_cert_kind(X509 *x, int *path_length);

#define GG_OID_GLOBUS_LIMITED "1.3.6.1.4.1.3536.1.1.1.9"
#define GG_OID_VOMS_ACSEQ     "1.3.6.1.4.1.8005.100.100.5"

#endif
