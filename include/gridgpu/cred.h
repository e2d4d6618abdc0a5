/* gridgpu/cred.h (lib/cred): grid credentials. Load a user certificate and key (PEM or PKCS#12),
 * make RFC 3820 proxy certificates, inspect them, verify chains against a CA
 * directory, sign a delegation request for a CE, and find bearer tokens by the
 * WLCG discovery order. Built on OpenSSL 3; never prints, prompts or exits.
 *
 * What `gridgpu proxy init` and `proxy info` do, in one call each, is
 * gg_proxy_make and gg_proxy_inspect (gridgpu/voms.h); the sequence they run:
 *
 *   gg_cred_locate(cert_opt, key_opt, &src, err);        which files
 *   gg_proxy_check_target(out_path, err);                 may we write there?
 *   gg_cred_open(&src, &user, err);                       read the certificate
 *   gg_cred_check_time(user, 0, err);                     expired?
 *   gg_cred_disable_core_dumps(err);
 *   gg_keygen_start(2048, 0, &kg, err);                   new key, in the background
 *   if (gg_cred_needs_passphrase(user)) ...prompt...
 *   gg_cred_unlock(user, pass, len, err);                 decrypt, match the key
 *   gg_keygen_finish(kg, &key, err);
 *   gg_proxy_create(user, &opts, &proxy, &clipped, err);
 *   gg_proxy_write(proxy, out_path, err);
 */
#ifndef GRIDGPU_CRED_H
#define GRIDGPU_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "gridgpu/core.h"

/* ---- credentials: a certificate, its key, the chain above it ------------- */

/* Opaque. A certificate with (once unlocked) its private key and the
 * certificates above it, nearest first, without the trust anchor. For a proxy:
 * the proxy, its key, then the proxies and the end-entity certificate it was
 * made from. */
struct gg_cred;

/* Where the user's credential comes from. */
struct gg_cred_source {
	char *cert;         /* PEM certificate file, or the PKCS#12 file */
	char *key;          /* PEM key file (may equal cert); NULL for PKCS#12 */
	int pkcs12;         /* cert is a PKCS#12 file (also detected by content) */
	const char *origin; /* "--cert", "X509_USER_CERT", "~/.globus": for messages */
};

/* Find the user's credential: cert/key arguments (either may be NULL; a cert
 * without a key names a file holding both, e.g. a proxy, or a PKCS#12 file),
 * else $X509_USER_CERT/$X509_USER_KEY, else ~/.globus/usercert.pem +
 * userkey.pem, else ~/.globus/usercred.p12. Only checks that the files exist.
 * Fill with gg_cred_source_clear. GG_ECRED when there is none. */
GG_API int gg_cred_locate(const char *cert, const char *key, struct gg_cred_source *out,
			  struct gg_err *err);
GG_API void gg_cred_source_clear(struct gg_cred_source *src);

/* Open a credential: refuse a key (or PKCS#12) file that others can read, read
 * the certificate and chain (PEM), and see whether the key is encrypted. An
 * unencrypted key is loaded (and matched against the certificate) at once. For
 * PKCS#12 the certificate is only readable after gg_cred_unlock. */
GG_API int gg_cred_open(const struct gg_cred_source *src, struct gg_cred **out, struct gg_err *err);
/* Non-zero when gg_cred_unlock needs the passphrase. */
GG_API int gg_cred_needs_passphrase(const struct gg_cred *c);
/* Non-zero when the credential comes from a PKCS#12 file. Old PKCS#12 files
 * (RC2, RC4) need OpenSSL's "legacy" provider, which only the application may
 * load (OSSL_PROVIDER_try_load(NULL, "legacy", 1)) before gg_cred_unlock. */
GG_API int gg_cred_is_pkcs12(const struct gg_cred *c);
/* The file the passphrase is for (key or PKCS#12 file), for the prompt. */
GG_API const char *gg_cred_key_path(const struct gg_cred *c);
/* Decrypt the key (and for PKCS#12 the certificates) with the passphrase, and
 * check that the key matches the certificate. pass need not be NUL-terminated;
 * the caller keeps and cleanses it. Nothing to do when already unlocked. */
GG_API int gg_cred_unlock(struct gg_cred *c, const char *pass, size_t passlen, struct gg_err *err);
/* Fail (GG_ECRED) when the certificate or any certificate of its chain is
 * expired or not yet valid at now (0 = the current time). */
GG_API int gg_cred_check_time(const struct gg_cred *c, time_t now, struct gg_err *err);

/* Read a proxy (or any PEM file holding certificate, key and chain) for use:
 * refuses a file others can read, needs an unencrypted key that matches. */
GG_API int gg_proxy_load(const char *path, struct gg_cred **out, struct gg_err *err);
/* Read only the certificates of a PEM file (for inspection; no key, no
 * permission check). */
GG_API int gg_cred_load_public(const char *path, struct gg_cred **out, struct gg_err *err);

GG_API void gg_cred_free(struct gg_cred *c);

/* Borrowed pointers, valid while c lives. key is NULL until unlocked. */
GG_API X509 *gg_cred_cert(const struct gg_cred *c);
GG_API EVP_PKEY *gg_cred_key(const struct gg_cred *c);
GG_API STACK_OF(X509) * gg_cred_chain(const struct gg_cred *c);
GG_API const char *gg_cred_path(const struct gg_cred *c); /* NULL when made in memory */

/* PEM text of certificate, key (unencrypted, when with_key and present) and
 * chain, in the order grid tools expect. *out is allocated with OPENSSL_malloc;
 * free it with gg_cred_pem_free (it is cleansed). */
GG_API int gg_cred_to_pem(const struct gg_cred *c, int with_key, char **out, size_t *len,
			  struct gg_err *err);
GG_API void gg_cred_pem_free(char *pem, size_t len);

/* Make the process undumpable and set RLIMIT_CORE to 0: call before a private
 * key is decrypted. */
GG_API int gg_cred_disable_core_dumps(struct gg_err *err);
/* Make OpenSSL wipe every block it frees or moves (keys, primes, DER and PEM
 * buffers it does not clear itself). Call before anything uses OpenSSL;
 * returns -1 when OpenSSL refuses (it has allocated already). */
GG_API int gg_cred_wipe_on_free(void);

/* ---- proxy certificates (RFC 3820) ---------------------------------------- */

#define GG_PROXY_DEFAULT_LIFETIME (12 * 3600)
#define GG_PROXY_DEFAULT_BITS     2048

enum gg_proxy_policy {
	GG_PROXY_IMPERSONATION, /* id-ppl-inheritAll (the default) */
	GG_PROXY_LIMITED,       /* Globus limited proxy, 1.3.6.1.4.1.3536.1.1.1.9 */
	GG_PROXY_INDEPENDENT,   /* id-ppl-independent */
};

struct gg_proxy_opts {
	int64_t lifetime; /* seconds; 0 = GG_PROXY_DEFAULT_LIFETIME */
	int bits;         /* RSA bits of a new key when key is NULL; 0 = 2048 */
	enum gg_proxy_policy policy;
	int path_length; /* pCPathLenConstraint; -1 = none */
	EVP_PKEY *key;   /* key of the new proxy (borrowed), e.g. from
			    gg_keygen_finish; NULL = generate one here */
	time_t now;      /* 0 = the current time */
	/* VOMS: the DER of a SEQUENCE of attribute certificates (gg_ac_seq_encode),
	 * put into the proxy as extension 1.3.6.1.4.1.8005.100.100.5 as
	 * voms-proxy-init does; NULL = none (borrowed) */
	const unsigned char *acseq;
	size_t acseq_len;
};
/* Defaults: 12 h, 2048 bits, impersonation, no path length, new key. */
GG_API void gg_proxy_opts_init(struct gg_proxy_opts *o);

/* Make a proxy signed by issuer (a user certificate or itself a proxy, unlocked):
 * subject = issuer's subject + CN=<serial>, random 63-bit serial, notBefore now
 * - 5 min, notAfter now + lifetime but never past the end of the issuer or its
 * chain (*clipped, if not NULL, is set to 1 then), SHA-256, keyUsage
 * digitalSignature + keyEncipherment, proxyCertInfo critical. A proxy of a
 * limited proxy is limited; an issuer whose path length is 0 cannot sign. */
GG_API int gg_proxy_create(const struct gg_cred *issuer, const struct gg_proxy_opts *o,
			   struct gg_cred **out, int *clipped, struct gg_err *err);

/* Sign a delegation request (PKCS#10 PEM, as an ARC CE's POST
 * /delegations?action=new returns) with the signer's key, as an impersonation
 * proxy (limited when the signer is), valid until the signer's end or for
 * lifetime seconds (0 = as long as the signer). *chain_pem (malloc'd, free())
 * is the new certificate then the signer's certificate and chain, no key: the
 * body of the PUT /delegations/<id>. */
GG_API int gg_proxy_sign_csr(const struct gg_cred *signer, const char *csr_pem, size_t csr_len,
			     int64_t lifetime, char **chain_pem, size_t *chain_len,
			     struct gg_err *err);

/* The proxy file: path if not NULL, else $X509_USER_PROXY, else
 * /tmp/x509up_u<uid>. malloc'd. */
GG_API int gg_proxy_path(const char *path, char **out, struct gg_err *err);
/* May a proxy be written at path? Refuses an existing file that is not a
 * regular file or is owned by someone else, and a directory we cannot write
 * (GG_ECRED). */
GG_API int gg_proxy_check_target(const char *path, struct gg_err *err);
/* Write certificate, key and chain to path, 0600, atomically (temp file in the
 * same directory, fsync, rename); nothing is written on failure (GG_ECRED). */
GG_API int gg_proxy_write(const struct gg_cred *proxy, const char *path, struct gg_err *err);
/* Overwrite and remove a proxy file; refuses one owned by someone else.
 * GG_ENOTFOUND when there is none. */
GG_API int gg_proxy_destroy(const char *path, struct gg_err *err);
/* The same for the proxy file gg_proxy_path(file) names: *path (malloc'd, NULL
 * when it could not be found out) says which. */
GG_API int gg_proxy_destroy_at(const char *file, char **path, struct gg_err *err);

/* ---- inspection ------------------------------------------------------------ */

enum gg_cert_kind {
	GG_CERT_EEC,               /* end-entity certificate */
	GG_CERT_CA,                /* a CA certificate */
	GG_CERT_PROXY,             /* RFC 3820 impersonation proxy */
	GG_CERT_PROXY_LIMITED,     /* RFC 3820 proxy, Globus limited policy */
	GG_CERT_PROXY_INDEPENDENT, /* RFC 3820 independent proxy */
	GG_CERT_PROXY_OTHER,       /* RFC 3820 proxy with another policy */
};

struct gg_proxy_info {
	char *path;    /* file it was read from, or NULL */
	char *subject; /* "/DC=org/DC=example/CN=Jane Doe/CN=123", as grid tools print */
	char *issuer;
	char *identity; /* subject of the end-entity certificate the proxy stands for */
	enum gg_cert_kind kind;
	const char *type;             /* "RFC 3820 impersonation proxy", ... (static) */
	const char *key_type;         /* "RSA", "EC", ... (static) */
	int bits;                     /* key strength */
	char *signature;              /* "sha256WithRSAEncryption" */
	char *serial;                 /* decimal */
	int path_length;              /* proxy path length constraint; -1 = none */
	int chain_length;             /* certificates above this one in the file */
	time_t not_before, not_after; /* of this certificate */
	time_t end;                   /* earliest notAfter of the certificate and its chain */
	int64_t time_left;            /* end - now, 0 when expired */
	int not_yet_valid;
};
/* Describe c at now (0 = the current time). Clear with gg_proxy_info_clear. */
GG_API int gg_proxy_info_get(const struct gg_cred *c, time_t now, struct gg_proxy_info *out,
			     struct gg_err *err);
GG_API void gg_proxy_info_clear(struct gg_proxy_info *info);
/* The kind of one certificate. */
GG_API enum gg_cert_kind gg_cert_kind(X509 *x);
/* "/DC=org/DC=example/CN=x" (malloc'd) of a name; NULL on allocation failure. */
GG_API char *gg_cred_name_str(const X509_NAME *name);

/* ---- VOMS attribute certificates (ac.c) ------------------------------------ */

/* What one VOMS attribute certificate says. Clear with gg_ac_clear. */
/* The clock skew between a VOMS server and its clients that an AC's validity
 * is given, as VOMS clients give it: 5 minutes. */
#define GG_AC_SKEW 300

struct gg_ac {
	char *vo;  /* "testvo", from the policy authority "testvo://host:port" */
	char *uri; /* the server, "localhost:15000" (policy authority "testvo://localhost:15000") */
	char *issuer;        /* the VOMS server's DN */
	char *holder_issuer; /* the DN of the holder certificate's issuer, or NULL */
	char *serial;        /* the holder certificate's serial (hex), or NULL */
	char **fqans;        /* "/testvo/analysis/Role=NULL/Capability=NULL", ... */
	size_t n_fqans;
	time_t not_before, not_after;
	int64_t time_left; /* not_after - now, 0 when expired */
	int not_yet_valid;
};
/* Read one AC (DER) as of now (0 = the current time). GG_EPROTO when it is not
 * one. Nothing is verified. */
GG_API int gg_ac_parse(const unsigned char *der, size_t len, time_t now, struct gg_ac *out,
		       struct gg_err *err);
/* Check that signer (the VOMS server's certificate) signed the AC and is its issuer. */
GG_API int gg_ac_verify(const unsigned char *der, size_t len, X509 *signer, struct gg_err *err);
GG_API void gg_ac_clear(struct gg_ac *ac);
GG_API void gg_ac_list_free(struct gg_ac *acs, size_t n);
/* An AC's state at now: "valid", "expired", or "not valid yet" when it starts
 * more than GG_AC_SKEW after now (its server's clock is ahead). Static text. */
GG_API const char *gg_ac_state(const struct gg_ac *ac, time_t now);
/* The value of the proxy extension: a SEQUENCE of n ACs (DER each). *out malloc'd. */
GG_API int gg_ac_seq_encode(const unsigned char *const *acs, const size_t *lens, size_t n,
			    unsigned char **out, size_t *out_len, struct gg_err *err);
/* The ACs of such a SEQUENCE (at most 16). *out is freed with gg_ac_list_free. */
GG_API int gg_ac_seq_parse(const unsigned char *der, size_t len, time_t now, struct gg_ac **out,
			   size_t *n, struct gg_err *err);
/* The ACs of one certificate's VOMS extension (none: *n = 0). */
GG_API int gg_cert_acs(X509 *x, time_t now, struct gg_ac **out, size_t *n, struct gg_err *err);
/* The ACs of a proxy: those of the newest proxy certificate of its chain that has some. */
GG_API int gg_cred_acs(const struct gg_cred *c, time_t now, struct gg_ac **out, size_t *n,
		       struct gg_err *err);

/* ---- verification ---------------------------------------------------------- */

/* The CA directory: dir if not NULL, else $X509_CERT_DIR, else
 * /etc/grid-security/certificates. malloc'd. */
GG_API int gg_cred_ca_dir(const char *dir, char **out, struct gg_err *err);
/* Verify the chain of c against the trust anchors in ca_dir (OpenSSL hashed
 * directory), proxy certificates allowed, at now (0 = the current time).
 * GG_ECRED with the reason and the failing certificate. */
GG_API int gg_cred_verify(const struct gg_cred *c, const char *ca_dir, time_t now,
			  struct gg_err *err);

/* ---- the CA directory's state ------------------------------------------------ */

/* What gg_ca_dir_check found in a CA directory. Clear with gg_ca_dir_status_clear. */
struct gg_ca_dir_status {
	time_t now, soon;   /* as given (now 0 = the current time) */
	size_t certs, crls; /* hashed CA certificates (<hash>.N) and CRLs (<hash>.rN) */
	size_t expired;     /* certificates past their notAfter */
	size_t expiring;    /* certificates ending before soon, not yet expired */
	size_t stale;       /* CRLs past their nextUpdate */
	char *bad_name;     /* the first expired or expiring certificate's subject */
	time_t bad_end;     /* and its notAfter */
	char *stale_name;   /* the first stale CRL's file name */
	time_t stale_next;  /* and its nextUpdate */
};
/* Read every hashed certificate and CRL of dir once (hash.0 and hash.1 may be one
 * file), counting those expired at now, ending before soon, or due for renewal.
 * Unreadable files are left out; only a directory that cannot be opened fails
 * (GG_ECRED, "<dir>: <why>"). */
GG_API int gg_ca_dir_check(const char *dir, time_t now, time_t soon, struct gg_ca_dir_status *out,
			   struct gg_err *err);
GG_API void gg_ca_dir_status_clear(struct gg_ca_dir_status *s);

/* ---- OpenSSL's legacy provider ------------------------------------------------ */

/* Old PKCS#12 files (browser exports) use RC2, which OpenSSL 3 keeps in its legacy
 * provider. Load it for this process into *prov (nothing to do when *prov is set
 * already); GG_ECRED when it is not available (then only such old files fail to read).
 * Unload with gg_cred_legacy_unload, which accepts NULL. */
struct ossl_provider_st;
GG_API int gg_cred_legacy_load(struct ossl_provider_st **prov, struct gg_err *err);
GG_API void gg_cred_legacy_unload(struct ossl_provider_st *prov);

/* ---- key generation in the background --------------------------------------- */

/* Start making an RSA key of bits (0 = 2048) in threads threads (0 = one per
 * CPU, at most 4; the first to finish wins and stops the others), so that the
 * prime search overlaps with the passphrase prompt. */
struct gg_keygen;
GG_API int gg_keygen_start(int bits, int threads, struct gg_keygen **out, struct gg_err *err);
/* Wait for the key; frees kg in all cases. *out is the caller's
 * (EVP_PKEY_free). */
GG_API int gg_keygen_finish(struct gg_keygen *kg, EVP_PKEY **out, struct gg_err *err);
/* Abandon: stop the threads and free. NULL is fine. */
GG_API void gg_keygen_free(struct gg_keygen *kg);

/* ---- bearer tokens (WLCG Bearer Token Discovery) --------------------------- */

struct gg_token {
	char *value;  /* the token, whitespace stripped (secret: cleansed on free) */
	char *source; /* "BEARER_TOKEN" or the file it was read from */
	int jwt;      /* the payload of a JWT could be read */
	int64_t exp;  /* JWT "exp" claim, seconds since the epoch; 0 when absent */
	char *sub;    /* JWT "sub" and "iss" claims, NULL when absent */
	char *iss;
};

/* Discover a token: $BEARER_TOKEN, else the file $BEARER_TOKEN_FILE, else
 * $XDG_RUNTIME_DIR/bt_u<euid>, else /tmp/bt_u<euid>; an empty or missing one
 * is skipped. GG_ENOTFOUND when there is none; GG_ECRED when the first one
 * found is not a valid RFC 6750 token (discovery stops there, as the
 * specification says), and when a token file is refused as ssh refuses a key:
 * not owned by the user (euid), open to group or others (mode above 600), or
 * a symbolic link another user made; checked on the opened file. The process
 * is made undumpable first (gg_cred_disable_core_dumps). The JWT claims are
 * read without verifying anything. */
GG_API int gg_token_find(struct gg_token **out, struct gg_err *err);
/* Make a token from a value (stripped and validated) and read its JWT claims. */
GG_API int gg_token_new(const char *value, const char *source, struct gg_token **out,
			struct gg_err *err);
GG_API void gg_token_free(struct gg_token *t);
/* Non-zero when s is an RFC 6750 section 2.1 b64token:
 * 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
GG_API int gg_token_valid(const char *s);

/* ---- tokens obtained: a site's token source (tsource.c) ---- */

/* Where a site's tokens come from when the user does not manage them: a
 * command (token_command, run without a shell, its stdout the token) or an
 * oidc-agent account (oidc_account, through liboidc-agent loaded at run time,
 * with the site's token_audience and token_scopes). A token is fetched when
 * the one held has less than the refresh margin left: token_refresh (default
 * 5 minutes), at most a quarter of the token's lifetime. Reference counted:
 * a CE handle keeps one. Not thread-safe (one per context). */
struct gg_tsource;
/* The site's source, or *out NULL (rc 0) when it names none. Nothing is run
 * yet. GG_EUSAGE for a token_command that cannot be split into words. */
GG_API int gg_tsource_new(const struct gg_site *site, struct gg_tsource **out, struct gg_err *err);
GG_API struct gg_tsource *gg_tsource_ref(struct gg_tsource *ts);
/* Drops a reference; frees (the token wiped) with the last. NULL is fine. */
GG_API void gg_tsource_free(struct gg_tsource *ts);
/* The token to send now, fetched when the one held is missing or has less
 * than the margin left (*tok stays valid until the next call). GG_ECRED with
 * one line naming the source when it cannot be had (the command missing,
 * failing or past its 60 s - its stderr, anything that looks like a token
 * masked, escaped by whoever shows it -, printing no token; the agent not
 * running, the account unknown); never the token itself. A command runs in a
 * process group of its own, stopped as a whole when the run ends. */
GG_API int gg_tsource_token(struct gg_tsource *ts, const struct gg_token **tok, struct gg_err *err);
/* gg_tsource_token's value, in the shape of an HTTP token callback. */
GG_API int gg_tsource_current(void *ts, const char **token, struct gg_err *err);
/* Tokens fetched so far; the source in words ("token_command 'htgettoken'",
 * "oidc-agent account 'wlcg'"). */
GG_API unsigned gg_tsource_fetches(const struct gg_tsource *ts);
GG_API const char *gg_tsource_describe(const struct gg_tsource *ts);

/* ---- the credential of a CE call (auth.c) ---- */

struct gg_auth {
	const char *kind; /* "proxy" or "token" */
	char *proxy_path;
	struct gg_token *token;     /* found, or the first one from tsource */
	struct gg_tsource *tsource; /* the site's token source (a reference), or NULL */
	char *ca_dir;
};
/* Find the credential a site (want: "proxy" or "token", else the site's auth,
 * else "token" when the site names a token source, else the proxy) is talked
 * to with, and check that it lasts need_left seconds: GG_ECRED with how to get
 * one when it does not. A token comes from the site's source when it has one
 * (the first token fetched now, and fresh ones later, so need_left does not
 * apply), else from the WLCG discovery order. The CA directory is the site's,
 * else the usual one. */
GG_API int gg_auth_find(const struct gg_site *site, const char *want, int64_t need_left,
			struct gg_auth *a, struct gg_err *err);
GG_API void gg_auth_clear(struct gg_auth *a);

#endif
