/* RFC 3820 proxy certificates: making them, signing delegation requests, the
 * proxy file. */
#include "cred/internal.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define PROXY_SKEW 300 /* notBefore this far in the past, for clock skew */

void gg_proxy_opts_init(struct gg_proxy_opts *o)
{
	memset(o, 0, sizeof *o);
	o->lifetime = GG_PROXY_DEFAULT_LIFETIME;
	o->bits = GG_PROXY_DEFAULT_BITS;
	o->policy = GG_PROXY_IMPERSONATION;
	o->path_length = -1;
}

/* proxyCertInfo: critical, the policy language, an optional path length. */
static int add_proxy_cert_info(X509 *x, enum gg_proxy_policy policy, int path_length,
			       struct gg_err *err)
{
	PROXY_CERT_INFO_EXTENSION *pci = PROXY_CERT_INFO_EXTENSION_new();
	if (!pci)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ASN1_OBJECT *lang;
	switch (policy) {
	case GG_PROXY_LIMITED: lang = OBJ_txt2obj(GG_OID_GLOBUS_LIMITED, 1); break;
	case GG_PROXY_INDEPENDENT: lang = OBJ_nid2obj(NID_Independent); break;
	default: lang = OBJ_nid2obj(NID_id_ppl_inheritAll); break;
	}
	int rc = 0;
	ASN1_OBJECT_free(pci->proxyPolicy->policyLanguage);
	pci->proxyPolicy->policyLanguage = lang;
	if (!lang) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	} else if (path_length >= 0 &&
		   (!(pci->pcPathLengthConstraint = ASN1_INTEGER_new()) ||
		    !ASN1_INTEGER_set(pci->pcPathLengthConstraint, path_length))) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	} else if (X509_add1_ext_i2d(x, NID_proxyCertInfo, pci, 1, X509V3_ADD_DEFAULT) != 1) {
		rc = gg_cred_ossl_err(err, GG_ECRED, "adding proxyCertInfo");
	}
	PROXY_CERT_INFO_EXTENSION_free(pci);
	return rc;
}

/* The VOMS attribute certificates, non-critical, as voms-proxy-init adds them. */
static int add_acseq(X509 *x, const unsigned char *der, size_t len, struct gg_err *err)
{
	if (!der)
		return 0;
	ASN1_OBJECT *oid = OBJ_txt2obj(GG_OID_VOMS_ACSEQ, 1);
	ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
	X509_EXTENSION *ext = NULL;
	int ok = oid && os && len <= INT_MAX && ASN1_OCTET_STRING_set(os, der, (int)len) &&
		 (ext = X509_EXTENSION_create_by_OBJ(NULL, oid, 0, os)) && X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ASN1_OCTET_STRING_free(os);
	ASN1_OBJECT_free(oid);
	return ok ? 0 : gg_cred_ossl_err(err, GG_ECRED, "adding the VOMS attributes");
}

static int add_key_usage(X509 *x, unsigned usage, struct gg_err *err)
{
	ASN1_BIT_STRING *bs = ASN1_BIT_STRING_new();
	int ok = bs != NULL;
	/* bit 0 digitalSignature, bit 2 keyEncipherment */
	if (ok && (usage & KU_DIGITAL_SIGNATURE))
		ok = ASN1_BIT_STRING_set_bit(bs, 0, 1);
	if (ok && (usage & KU_KEY_ENCIPHERMENT))
		ok = ASN1_BIT_STRING_set_bit(bs, 2, 1);
	if (ok)
		ok = X509_add1_ext_i2d(x, NID_key_usage, bs, 1, X509V3_ADD_DEFAULT) == 1;
	ASN1_BIT_STRING_free(bs);
	return ok ? 0 : gg_cred_ossl_err(err, GG_ECRED, "adding keyUsage");
}

/* A random positive 63-bit serial. */
static int random_serial(uint64_t *out, struct gg_err *err)
{
	unsigned char b[8];
	do {
		if (RAND_bytes(b, sizeof b) != 1)
			return gg_cred_ossl_err(err, GG_EFAIL, "random serial number");
		uint64_t v = 0;
		for (size_t i = 0; i < sizeof b; i++)
			v = v << 8 | b[i];
		*out = v & INT64_MAX;
	} while (*out == 0);
	return 0;
}

static const EVP_MD *sign_md(EVP_PKEY *key)
{
	char name[64];
	/* Ed25519 and friends sign without a separate digest. */
	if (EVP_PKEY_get_default_digest_name(key, name, sizeof name) > 0 &&
	    strcmp(name, "UNDEF") == 0)
		return NULL;
	return EVP_sha256();
}

/* The proxy certificate for pub, signed by issuer. lifetime 0 = until the
 * issuer's end. */
struct extra_ext {
	const unsigned char *acseq;
	size_t acseq_len;
};

/* What the issuer allows: *path_length, *policy and *usage narrowed to it. */
static int issuer_allows(const struct gg_cred *issuer, const char *ipath, int *path_length,
			 enum gg_proxy_policy *policy, unsigned *usage, struct gg_err *err)
{
	int ipl = -1;
	enum gg_cert_kind ikind = gg_cred_cert_kind(issuer->cert, &ipl);
	if (ikind >= GG_CERT_PROXY) {
		if (ipl == 0)
			return gg_err_set(
				err, GG_ECRED,
				"'%s' is a proxy with path length 0: it cannot sign proxies",
				ipath);
		if (ipl > 0 && (*path_length < 0 || *path_length > ipl - 1))
			*path_length = ipl - 1;
		if (ikind == GG_CERT_PROXY_LIMITED)
			*policy = GG_PROXY_LIMITED; /* limited stays limited */
	}
	uint32_t iku = X509_get_key_usage(issuer->cert);
	*usage = KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT;
	if (iku != UINT32_MAX) {
		if (!(iku & KU_DIGITAL_SIGNATURE))
			return gg_err_set(
				err, GG_ECRED,
				"certificate '%s' cannot sign proxies: its key usage lacks "
				"digitalSignature",
				ipath);
		*usage &= iku;
	}
	return 0;
}

/* Validity: [now - skew, now + lifetime], inside the issuer's. */
static void proxy_validity(const struct gg_cred *issuer, int64_t lifetime, time_t now, time_t *nb,
			   time_t *na, int *clipped)
{
	time_t end = gg_cred_end(issuer), ibegin = 0;
	gg_cred_asn1_time(X509_get0_notBefore(issuer->cert), &ibegin);
	*nb = now - PROXY_SKEW;
	if (*nb < ibegin)
		*nb = ibegin;
	if (lifetime <= 0 || lifetime > (int64_t)(end - now)) {
		if (lifetime > 0 && clipped)
			*clipped = 1;
		*na = end;
	} else {
		*na = now + (time_t)lifetime;
	}
}

/* The certificate's fields: subject = issuer's subject + CN=<serial>. */
static int set_proxy_fields(X509 *x, const struct gg_cred *issuer, EVP_PKEY *pub, uint64_t serial,
			    time_t nb, time_t na, struct gg_err *err)
{
	char cn[32];
	snprintf(cn, sizeof cn, "%llu", (unsigned long long)serial);
	X509_NAME *subj = X509_NAME_dup(X509_get_subject_name(issuer->cert));
	ASN1_INTEGER *sn = ASN1_INTEGER_new();
	int ok = subj && sn;
	ok = ok && X509_NAME_add_entry_by_NID(subj, NID_commonName, MBSTRING_ASC,
					      (const unsigned char *)cn, -1, -1, 0);
	ok = ok && X509_set_version(x, X509_VERSION_3);
	ok = ok && ASN1_INTEGER_set_uint64(sn, serial) && X509_set_serialNumber(x, sn);
	ok = ok && X509_set_issuer_name(x, X509_get_subject_name(issuer->cert));
	ok = ok && X509_set_subject_name(x, subj);
	ok = ok && ASN1_TIME_set(X509_getm_notBefore(x), nb);
	ok = ok && ASN1_TIME_set(X509_getm_notAfter(x), na);
	ok = ok && X509_set_pubkey(x, pub);
	X509_NAME_free(subj);
	ASN1_INTEGER_free(sn);
	return ok ? 0 : gg_cred_ossl_err(err, GG_ECRED, "making the proxy certificate");
}

static int make_proxy_cert(const struct gg_cred *issuer, EVP_PKEY *pub, enum gg_proxy_policy policy,
			   int path_length, int64_t lifetime, time_t now,
			   const struct extra_ext *xe, X509 **out, int *clipped, struct gg_err *err)
{
	*out = NULL;
	if (clipped)
		*clipped = 0;
	if (!issuer->cert || !issuer->key)
		return gg_err_set(err, GG_ECRED, "'%s' has no usable private key",
				  issuer->path ? issuer->path : "issuer");
	int rc = gg_cred_check_time(issuer, now, err);
	if (rc < 0)
		return rc;
	const char *ipath = issuer->path ? issuer->path : "issuer";
	unsigned usage;
	if ((rc = issuer_allows(issuer, ipath, &path_length, &policy, &usage, err)) < 0)
		return rc;
	time_t nb, na;
	proxy_validity(issuer, lifetime, now, &nb, &na, clipped);
	uint64_t serial;
	if ((rc = random_serial(&serial, err)) < 0)
		return rc;
	X509 *x = X509_new();
	rc = x ? set_proxy_fields(x, issuer, pub, serial, nb, na, err)
	       : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = add_key_usage(x, usage, err);
	if (rc == 0)
		rc = add_proxy_cert_info(x, policy, path_length, err);
	if (rc == 0 && xe)
		rc = add_acseq(x, xe->acseq, xe->acseq_len, err);
	if (rc == 0 && X509_sign(x, issuer->key, sign_md(issuer->key)) <= 0)
		rc = gg_cred_ossl_err(err, GG_ECRED, "signing the proxy with '%s'", ipath);
	if (rc < 0) {
		X509_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

/* chain = issuer's certificate + issuer's chain */
static int copy_issuer_chain(const struct gg_cred *issuer, STACK_OF(X509) * chain,
			     struct gg_err *err)
{
	for (int i = -1; i < sk_X509_num(issuer->chain); i++) {
		X509 *x = i < 0 ? issuer->cert : sk_X509_value(issuer->chain, i);
		if (!X509_up_ref(x))
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		if (!sk_X509_push(chain, x)) {
			X509_free(x);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	return 0;
}

int gg_proxy_create(const struct gg_cred *issuer, const struct gg_proxy_opts *o,
		    struct gg_cred **out, int *clipped, struct gg_err *err)
{
	*out = NULL;
	struct gg_proxy_opts d;
	gg_proxy_opts_init(&d);
	if (!o)
		o = &d;
	int64_t lifetime = o->lifetime ? o->lifetime : GG_PROXY_DEFAULT_LIFETIME;
	int bits = o->bits ? o->bits : GG_PROXY_DEFAULT_BITS;
	if (lifetime < 0)
		return gg_err_set(err, GG_EUSAGE, "the proxy lifetime must be positive");
	if (!o->key && (bits < 1024 || bits > 16384))
		return gg_err_set(err, GG_EUSAGE, "key size %d: expected 1024 to 16384 bits", bits);
	if (o->path_length < -1)
		return gg_err_set(err, GG_EUSAGE, "path length %d: expected 0 or more",
				  o->path_length);
	time_t now = o->now ? o->now : time(NULL);

	struct gg_cred *c = gg_cred_alloc();
	if (!c)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = 0;
	if (o->key) {
		if (!EVP_PKEY_up_ref(o->key))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		else
			c->key = o->key;
	} else if (!(c->key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits))) {
		rc = gg_cred_ossl_err(err, GG_ECRED, "generating an RSA key of %d bits", bits);
	}
	struct extra_ext xe = {o->acseq, o->acseq_len};
	if (rc == 0)
		rc = make_proxy_cert(issuer, c->key, o->policy, o->path_length, lifetime, now, &xe,
				     &c->cert, clipped, err);
	if (rc == 0)
		rc = copy_issuer_chain(issuer, c->chain, err);
	if (rc < 0) {
		gg_cred_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* The request's signature by pub. OpenSSL 3.4 and later refuse to verify a request
 * whose version is not 1 (value 0), and ARC's CEs write theirs with another: its
 * signature is then checked by hand over the request's signed part, as OpenSSL 3.0
 * does. 1 verified, else 0 (OpenSSL's error queue says why). */
static int csr_verify(X509_REQ *req, EVP_PKEY *pub)
{
	if (X509_REQ_get_version(req) == X509_REQ_VERSION_1)
		return X509_REQ_verify(req, pub) > 0;
	const ASN1_BIT_STRING *sig = NULL;
	const X509_ALGOR *alg = NULL;
	const ASN1_OBJECT *oid = NULL;
	int md_nid = NID_undef, pk_nid = NID_undef;
	X509_REQ_get0_signature(req, &sig, &alg);
	X509_ALGOR_get0(&oid, NULL, NULL, alg);
	const EVP_MD *md = OBJ_find_sigid_algs(OBJ_obj2nid(oid), &md_nid, &pk_nid)
				   ? EVP_get_digestbynid(md_nid)
				   : NULL;
	unsigned char *tbs = NULL;
	int n = md ? i2d_re_X509_REQ_tbs(req, &tbs) : -1;
	EVP_MD_CTX *ctx = n > 0 ? EVP_MD_CTX_new() : NULL;
	int ok = ctx && sig && EVP_DigestVerifyInit(ctx, NULL, md, NULL, pub) == 1 &&
		 EVP_DigestVerify(ctx, sig->data, (size_t)sig->length, tbs, (size_t)n) == 1;
	EVP_MD_CTX_free(ctx);
	OPENSSL_free(tbs);
	return ok;
}

int gg_proxy_sign_csr(const struct gg_cred *signer, const char *csr_pem, size_t csr_len,
		      int64_t lifetime, char **chain_pem, size_t *chain_len, struct gg_err *err)
{
	*chain_pem = NULL;
	if (chain_len)
		*chain_len = 0;
	if (csr_len > INT_MAX)
		return gg_err_set(err, GG_EPROTO, "delegation request too large");
	BIO *bio = BIO_new_mem_buf(csr_pem, (int)csr_len);
	if (!bio)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ERR_clear_error();
	X509_REQ *req = PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!req)
		return gg_cred_ossl_err(err, GG_EPROTO,
					"reading the delegation request (PKCS#10 PEM expected)");
	int rc = 0;
	EVP_PKEY *pub = X509_REQ_get0_pubkey(req);
	if (!pub)
		rc = gg_cred_ossl_err(err, GG_EPROTO, "the delegation request has no public key");
	else if (EVP_PKEY_get_bits(pub) < 1024)
		rc = gg_err_set(err, GG_EPROTO, "the delegation request's key has only %d bits",
				EVP_PKEY_get_bits(pub));
	else if (!csr_verify(req, pub))
		rc = gg_cred_ossl_err(err, GG_EPROTO,
				      "the delegation request's signature does not verify");
	struct gg_cred *d = NULL;
	if (rc == 0 && !(d = gg_cred_alloc()))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		rc = make_proxy_cert(signer, pub, GG_PROXY_IMPERSONATION, -1, lifetime, time(NULL),
				     NULL, &d->cert, NULL, err);
	if (rc == 0)
		rc = copy_issuer_chain(signer, d->chain, err);
	char *pem = NULL;
	size_t len = 0;
	if (rc == 0 && (rc = gg_cred_to_pem(d, 0, &pem, &len, err)) == 0) {
		if (!(*chain_pem = malloc(len + 1))) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		} else {
			memcpy(*chain_pem, pem, len + 1);
			if (chain_len)
				*chain_len = len;
		}
	}
	gg_cred_pem_free(pem, len);
	gg_cred_free(d);
	X509_REQ_free(req);
	return rc;
}

/* ---- the proxy file ------------------------------------------------------------ */

int gg_proxy_path(const char *path, char **out, struct gg_err *err)
{
	const char *env = getenv("X509_USER_PROXY");
	if (path && *path)
		*out = strdup(path);
	else if (env && *env)
		*out = strdup(env);
	else
		*out = gg_strdup_printf("/tmp/x509up_u%u", (unsigned)getuid());
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

int gg_proxy_check_target(const char *path, struct gg_err *err)
{
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return gg_err_set(
				err, GG_ECRED,
				"proxy '%s' exists and is not a regular file: refusing to "
				"replace it",
				path);
		if (st.st_uid != geteuid())
			return gg_err_set(err, GG_ECRED,
					  "proxy '%s' is owned by uid %u, not by you: refusing to "
					  "replace it",
					  path, (unsigned)st.st_uid);
	} else if (errno != ENOENT) {
		return gg_err_sys(err, GG_ECRED, errno, "proxy '%s'", path);
	}
	char *copy = strdup(path);
	if (!copy)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	const char *dir = dirname(copy);
	int rc = 0;
	if (access(dir, W_OK | X_OK) < 0)
		rc = gg_err_sys(err, GG_ECRED, errno, "cannot write proxy '%s': directory '%s'",
				path, dir);
	free(copy);
	return rc;
}

int gg_proxy_write(const struct gg_cred *proxy, const char *path, struct gg_err *err)
{
	if (!proxy->cert || !proxy->key)
		return gg_err_set(err, GG_ECRED, "writing proxy '%s': no certificate or key", path);
	int rc = gg_proxy_check_target(path, err);
	if (rc < 0)
		return rc;
	char *pem = NULL;
	size_t len = 0;
	if ((rc = gg_cred_to_pem(proxy, 1, &pem, &len, err)) < 0)
		return rc;
	rc = gg_file_write_atomic(path, pem, len, 0600, err);
	gg_cred_pem_free(pem, len);
	if (rc < 0 && err)
		err->code = rc = GG_ECRED;
	return rc;
}

int gg_proxy_destroy(const char *path, struct gg_err *err)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return gg_err_set(err, GG_ENOTFOUND, "no proxy at '%s'", path);
		return gg_err_sys(err, GG_ECRED, errno, "proxy '%s'", path);
	}
	if (!S_ISREG(st.st_mode))
		return gg_err_set(err, GG_ECRED, "proxy '%s' is not a regular file", path);
	if (st.st_uid != geteuid())
		return gg_err_set(err, GG_ECRED, "proxy '%s' is owned by uid %u, not by you", path,
				  (unsigned)st.st_uid);
	int rc = gg_file_shred(path, err);
	if (rc < 0 && err)
		err->code = rc = GG_ECRED;
	return rc;
}

int gg_proxy_destroy_at(const char *file, char **path, struct gg_err *err)
{
	*path = NULL;
	if (gg_proxy_path(file, path, err) < 0)
		return err->code;
	return gg_proxy_destroy(*path, err);
}
