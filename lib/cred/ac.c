/* VOMS attribute certificates (RFC 5755 ACs as a VOMS server makes them): their
 * ASN.1 (OpenSSL templates), what they say (VO, FQANs, issuer, validity), their
 * signature, and the proxy extension that carries them (1.3.6.1.4.1.8005.100.100.5,
 * a SEQUENCE of ACs). */
#include "cred/internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1t.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#define OID_VOMS_ATTRS "1.3.6.1.4.1.8005.100.100.4"
#define MAX_ACS        16
#define MAX_FQANS      64

/* IssuerSerial ::= SEQUENCE { issuer GeneralNames, serial INTEGER, issuerUID BIT STRING OPTIONAL }
 */
typedef struct {
	GENERAL_NAMES *issuer;
	ASN1_INTEGER *serial;
	ASN1_BIT_STRING *uid;
} GG_AC_IS;
/* Holder ::= SEQUENCE { baseCertificateID [0] IssuerSerial OPTIONAL,
 *   entityName [1] GeneralNames OPTIONAL, objectDigestInfo [2] ANY OPTIONAL } */
typedef struct {
	GG_AC_IS *base;
	GENERAL_NAMES *name;
	ASN1_STRING *digest;
} GG_AC_HOLDER;
/* V2Form ::= SEQUENCE { issuerName GeneralNames OPTIONAL, baseCertificateID [0]
 *   IssuerSerial OPTIONAL, objectDigestInfo [1] ANY OPTIONAL } */
typedef struct {
	GENERAL_NAMES *names;
	GG_AC_IS *base;
	ASN1_STRING *digest;
} GG_AC_V2FORM;
typedef struct {
	ASN1_GENERALIZEDTIME *not_before, *not_after;
} GG_AC_VAL;
typedef struct {
	ASN1_OBJECT *type;
	STACK_OF(ASN1_TYPE) * values;
} GG_AC_ATTR;
DEFINE_STACK_OF(GG_AC_ATTR)
typedef struct {
	ASN1_INTEGER *version;
	GG_AC_HOLDER *holder;
	GG_AC_V2FORM *issuer;
	X509_ALGOR *alg;
	ASN1_INTEGER *serial;
	GG_AC_VAL *validity;
	STACK_OF(GG_AC_ATTR) * attrs;
	ASN1_BIT_STRING *uid;
	STACK_OF(X509_EXTENSION) * exts;
} GG_AC_INFO;
typedef struct {
	GG_AC_INFO *info;
	X509_ALGOR *alg;
	ASN1_BIT_STRING *sig;
} GG_AC;
/* IetfAttrSyntax ::= SEQUENCE { policyAuthority [0] GeneralNames OPTIONAL,
 *   values SEQUENCE OF CHOICE { OCTET STRING, OBJECT IDENTIFIER, UTF8String } } */
typedef struct {
	GENERAL_NAMES *authority;
	STACK_OF(ASN1_TYPE) * values;
} GG_AC_IETF;

DECLARE_ASN1_ITEM(GG_AC_IS)
DECLARE_ASN1_ITEM(GG_AC_HOLDER)
DECLARE_ASN1_ITEM(GG_AC_V2FORM)
DECLARE_ASN1_ITEM(GG_AC_VAL)
DECLARE_ASN1_ITEM(GG_AC_ATTR)
DECLARE_ASN1_FUNCTIONS(GG_AC)
DECLARE_ASN1_FUNCTIONS(GG_AC_IETF)
DECLARE_ASN1_FUNCTIONS(GG_AC_INFO)

ASN1_SEQUENCE(GG_AC_IS) =
	{
		ASN1_SEQUENCE_OF(GG_AC_IS, issuer, GENERAL_NAME),
		ASN1_SIMPLE(GG_AC_IS, serial, ASN1_INTEGER),
		ASN1_OPT(GG_AC_IS, uid, ASN1_BIT_STRING),
} ASN1_SEQUENCE_END(GG_AC_IS)

		ASN1_SEQUENCE(GG_AC_HOLDER) =
			{
				ASN1_IMP_OPT(GG_AC_HOLDER, base, GG_AC_IS, 0),
				ASN1_IMP_SEQUENCE_OF_OPT(GG_AC_HOLDER, name, GENERAL_NAME, 1),
				ASN1_IMP_OPT(GG_AC_HOLDER, digest, ASN1_SEQUENCE, 2),
} ASN1_SEQUENCE_END(GG_AC_HOLDER)

				ASN1_SEQUENCE(GG_AC_V2FORM) =
					{
						ASN1_SEQUENCE_OF_OPT(GG_AC_V2FORM, names,
								     GENERAL_NAME),
						ASN1_IMP_OPT(GG_AC_V2FORM, base, GG_AC_IS, 0),
						ASN1_IMP_OPT(GG_AC_V2FORM, digest, ASN1_SEQUENCE,
							     1),
} ASN1_SEQUENCE_END(GG_AC_V2FORM)

						ASN1_SEQUENCE(GG_AC_VAL) =
							{
								ASN1_SIMPLE(GG_AC_VAL, not_before,
									    ASN1_GENERALIZEDTIME),
								ASN1_SIMPLE(GG_AC_VAL, not_after,
									    ASN1_GENERALIZEDTIME),
} ASN1_SEQUENCE_END(GG_AC_VAL)

								ASN1_SEQUENCE(GG_AC_ATTR) =
									{
										ASN1_SIMPLE(
											GG_AC_ATTR,
											type,
											ASN1_OBJECT),
										ASN1_SET_OF(
											GG_AC_ATTR,
											values,
											ASN1_ANY),
} ASN1_SEQUENCE_END(GG_AC_ATTR)

										ASN1_SEQUENCE(
											GG_AC_INFO) =
											{
												ASN1_SIMPLE(
													GG_AC_INFO,
													version,
													ASN1_INTEGER),
												ASN1_SIMPLE(
													GG_AC_INFO,
													holder,
													GG_AC_HOLDER),
												ASN1_IMP(
													GG_AC_INFO,
													issuer,
													GG_AC_V2FORM,
													0),
												ASN1_SIMPLE(
													GG_AC_INFO,
													alg,
													X509_ALGOR),
												ASN1_SIMPLE(
													GG_AC_INFO,
													serial,
													ASN1_INTEGER),
												ASN1_SIMPLE(
													GG_AC_INFO,
													validity,
													GG_AC_VAL),
												ASN1_SEQUENCE_OF(
													GG_AC_INFO,
													attrs,
													GG_AC_ATTR),
												ASN1_OPT(
													GG_AC_INFO,
													uid,
													ASN1_BIT_STRING),
												ASN1_SEQUENCE_OF_OPT(
													GG_AC_INFO,
													exts,
													X509_EXTENSION),
} ASN1_SEQUENCE_END(GG_AC_INFO)

												ASN1_SEQUENCE(
													GG_AC) =
													{
														ASN1_SIMPLE(
															GG_AC,
															info,
															GG_AC_INFO),
														ASN1_SIMPLE(
															GG_AC,
															alg,
															X509_ALGOR),
														ASN1_SIMPLE(
															GG_AC,
															sig,
															ASN1_BIT_STRING),
} ASN1_SEQUENCE_END(GG_AC)

														ASN1_SEQUENCE(
															GG_AC_IETF) =
															{
																ASN1_IMP_SEQUENCE_OF_OPT(
																	GG_AC_IETF,
																	authority,
																	GENERAL_NAME,
																	0),
																ASN1_SEQUENCE_OF(
																	GG_AC_IETF,
																	values,
																	ASN1_ANY),
} ASN1_SEQUENCE_END(GG_AC_IETF)

																IMPLEMENT_ASN1_FUNCTIONS(
																	GG_AC) IMPLEMENT_ASN1_FUNCTIONS(GG_AC_IETF)
																	IMPLEMENT_ASN1_FUNCTIONS(
																		GG_AC_INFO)

																		void gg_ac_clear(
																			struct
																			gg_ac *
																			ac)
{
	if (!ac)
		return;
	free(ac->vo);
	free(ac->uri);
	free(ac->issuer);
	free(ac->holder_issuer);
	free(ac->serial);
	for (size_t i = 0; i < ac->n_fqans; i++)
		free(ac->fqans[i]);
	free(ac->fqans);
	memset(ac, 0, sizeof *ac);
}

const char *gg_ac_state(const struct gg_ac *ac, time_t now)
{
	if (ac->not_before > now + GG_AC_SKEW)
		return "not valid yet";
	return ac->time_left > 0 ? "valid" : "expired";
}

void gg_ac_list_free(struct gg_ac *acs, size_t n)
{
	for (size_t i = 0; acs && i < n; i++)
		gg_ac_clear(&acs[i]);
	free(acs);
}

/* The directory name among names, as "/DC=x/CN=y" (malloc'd), or NULL. */
static char *dirname_of(const GENERAL_NAMES *names)
{
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		if (g->type == GEN_DIRNAME)
			return gg_cred_name_str(g->d.directoryName);
	}
	return NULL;
}

static char *asn1_strdup(const ASN1_STRING *s)
{
	int n = ASN1_STRING_length(s);
	const unsigned char *d = ASN1_STRING_get0_data(s);
	if (n < 0 || memchr(d, 0, (size_t)n))
		return NULL;
	char *p = malloc((size_t)n + 1);
	if (p) {
		memcpy(p, d, (size_t)n);
		p[n] = '\0';
	}
	return p;
}

/* The VO and URI from the policy authority "vo://host:port", and the FQANs. */
static int read_fqans(const ASN1_TYPE *t, struct gg_ac *ac)
{
	if (t->type != V_ASN1_SEQUENCE)
		return -1;
	const unsigned char *p = t->value.sequence->data;
	GG_AC_IETF *ietf = d2i_GG_AC_IETF(NULL, &p, t->value.sequence->length);
	if (!ietf)
		return -1;
	int rc = 0;
	for (int i = 0; ietf->authority && i < sk_GENERAL_NAME_num(ietf->authority); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(ietf->authority, i);
		if (g->type == GEN_URI && !ac->uri)
			ac->uri = asn1_strdup(g->d.uniformResourceIdentifier);
	}
	int n = sk_ASN1_TYPE_num(ietf->values);
	if (n <= 0 || n > MAX_FQANS || !(ac->fqans = calloc((size_t)n, sizeof *ac->fqans)))
		rc = -1;
	for (int i = 0; rc == 0 && i < n; i++) {
		const ASN1_TYPE *v = sk_ASN1_TYPE_value(ietf->values, i);
		if (v->type != V_ASN1_OCTET_STRING && v->type != V_ASN1_UTF8STRING)
			rc = -1;
		else if (!(ac->fqans[ac->n_fqans++] = asn1_strdup(v->value.octet_string)))
			rc = -1;
	}
	GG_AC_IETF_free(ietf);
	if (rc == 0 && ac->uri) {
		const char *sep = strstr(ac->uri, "://");
		if (sep && sep > ac->uri) {
			ac->vo = strndup(ac->uri, (size_t)(sep - ac->uri));
			/* "host:port", as voms-proxy-info shows it */
			memmove(ac->uri, sep + 3, strlen(sep + 3) + 1);
		}
	}
	return rc;
}

/* The VOMS attributes of an AC: the first attribute of type OID_VOMS_ATTRS. */
static int read_attrs(const GG_AC_INFO *info, struct gg_ac *ac)
{
	ASN1_OBJECT *want = OBJ_txt2obj(OID_VOMS_ATTRS, 1);
	int rc = -1;
	for (int i = 0; want && i < sk_GG_AC_ATTR_num(info->attrs); i++) {
		const GG_AC_ATTR *a = sk_GG_AC_ATTR_value(info->attrs, i);
		if (OBJ_cmp(a->type, want) == 0 && sk_ASN1_TYPE_num(a->values) == 1) {
			rc = read_fqans(sk_ASN1_TYPE_value(a->values, 0), ac);
			break;
		}
	}
	ASN1_OBJECT_free(want);
	return rc;
}

static int ac_describe(const GG_AC *a, time_t now, struct gg_ac *ac)
{
	memset(ac, 0, sizeof *ac);
	const GG_AC_INFO *info = a->info;
	if (!info->issuer || !(ac->issuer = dirname_of(info->issuer->names)))
		return -1;
	if (info->holder->base) {
		ac->holder_issuer = dirname_of(info->holder->base->issuer);
		BIGNUM *bn = ASN1_INTEGER_to_BN(info->holder->base->serial, NULL);
		char *hex = bn ? BN_bn2hex(bn) : NULL;
		ac->serial = hex ? strdup(hex) : NULL;
		OPENSSL_free(hex);
		BN_free(bn);
	}
	if (gg_cred_asn1_time(info->validity->not_before, &ac->not_before) < 0 ||
	    gg_cred_asn1_time(info->validity->not_after, &ac->not_after) < 0)
		return -1;
	if (read_attrs(info, ac) < 0 || !ac->vo)
		return -1;
	ac->time_left = ac->not_after > now ? (int64_t)(ac->not_after - now) : 0;
	ac->not_yet_valid = now < ac->not_before;
	return 0;
}

int gg_ac_parse(const unsigned char *der, size_t len, time_t now, struct gg_ac *out,
		struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	if (len > INT_MAX)
		return gg_err_set(err, GG_EPROTO, "attribute certificate too large");
	const unsigned char *p = der;
	GG_AC *a = d2i_GG_AC(NULL, &p, (long)len);
	ERR_clear_error();
	if (!a || p != der + len) {
		GG_AC_free(a);
		return gg_err_set(err, GG_EPROTO, "not a VOMS attribute certificate (bad DER)");
	}
	int rc = ac_describe(a, now ? now : time(NULL), out);
	GG_AC_free(a);
	if (rc < 0) {
		gg_ac_clear(out);
		return gg_err_set(
			err, GG_EPROTO,
			"not a VOMS attribute certificate (no issuer, validity or FQANs)");
	}
	return 0;
}

int gg_ac_verify(const unsigned char *der, size_t len, X509 *signer, struct gg_err *err)
{
	const unsigned char *p = der;
	GG_AC *a = len <= INT_MAX ? d2i_GG_AC(NULL, &p, (long)len) : NULL;
	int rc = 0;
	if (!a) {
		rc = gg_cred_ossl_err(err, GG_EPROTO, "reading the attribute certificate");
	} else if (ASN1_item_verify(ASN1_ITEM_rptr(GG_AC_INFO), a->alg, a->sig, a->info,
				    X509_get0_pubkey(signer)) != 1) {
		rc = gg_cred_ossl_err(err, GG_ECRED,
				      "the attribute certificate's signature is not the VOMS "
				      "server's");
	} else {
		char *want = gg_cred_name_str(X509_get_subject_name(signer));
		char *got = dirname_of(a->info->issuer ? a->info->issuer->names : NULL);
		if (!want || !got || strcmp(want, got) != 0)
			rc = gg_err_set(err, GG_ECRED,
					"the attribute certificate names issuer '%s', not the "
					"server '%s'",
					got ? got : "?", want ? want : "?");
		free(want);
		free(got);
	}
	GG_AC_free(a);
	return rc;
}

/* ---- the proxy extension ------------------------------------------------------- */

/* Length of one DER element at p (at most left bytes), or 0. */
static size_t der_elem_len(const unsigned char *p, size_t left)
{
	long len;
	int tag, cls;
	const unsigned char *q = p;
	if (left > INT_MAX)
		left = INT_MAX;
	int r = ASN1_get_object(&q, &len, &tag, &cls, (long)left);
	ERR_clear_error();
	if ((r & 0x80) || r != V_ASN1_CONSTRUCTED || tag != V_ASN1_SEQUENCE ||
	    cls != V_ASN1_UNIVERSAL)
		return 0;
	size_t n = (size_t)(q - p) + (size_t)len;
	return n <= left ? n : 0;
}

int gg_ac_seq_encode(const unsigned char *const *acs, const size_t *lens, size_t n,
		     unsigned char **out, size_t *out_len, struct gg_err *err)
{
	*out = NULL;
	*out_len = 0;
	size_t body = 0;
	for (size_t i = 0; i < n; i++) {
		if (der_elem_len(acs[i], lens[i]) != lens[i] || lens[i] > INT_MAX / 4)
			return gg_err_set(err, GG_EPROTO, "attribute certificate %zu is not DER",
					  i + 1);
		body += lens[i];
	}
	if (n == 0 || n > MAX_ACS || body > INT_MAX / 2)
		return gg_err_set(err, GG_EUSAGE, "expected 1 to %d attribute certificates",
				  MAX_ACS);
	/* SEQUENCE { SEQUENCE OF AC }: the shape voms-proxy-init writes and the VOMS
	 * library looks for */
	int inner = ASN1_object_size(1, (int)body, V_ASN1_SEQUENCE);
	int hdr = ASN1_object_size(1, inner, V_ASN1_SEQUENCE);
	unsigned char *buf = malloc((size_t)hdr), *p = buf;
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	ASN1_put_object(&p, 1, inner, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
	ASN1_put_object(&p, 1, (int)body, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
	for (size_t i = 0; i < n; i++) {
		memcpy(p, acs[i], lens[i]);
		p += lens[i];
	}
	*out = buf;
	*out_len = (size_t)(p - buf);
	return 0;
}

/* The body of the SEQUENCE at *p (within end): *p moved to it, its end in *bend. */
static int seq_body(const unsigned char **p, const unsigned char *end, const unsigned char **bend)
{
	long body;
	int tag, cls;
	const unsigned char *q = *p;
	int r = ASN1_get_object(&q, &body, &tag, &cls, (long)(end - *p));
	ERR_clear_error();
	if ((r & 0x80) || r != V_ASN1_CONSTRUCTED || tag != V_ASN1_SEQUENCE ||
	    cls != V_ASN1_UNIVERSAL || body > end - q)
		return -1;
	*p = q;
	*bend = q + body;
	return 0;
}

/* The ACs of one SEQUENCE OF AC, appended to acs[*k]. */
static int parse_acs(const unsigned char *p, const unsigned char *end, time_t now,
		     struct gg_ac *acs, size_t *k, struct gg_err *err)
{
	while (p < end) {
		size_t el = der_elem_len(p, (size_t)(end - p));
		if (el == 0 || *k == MAX_ACS)
			return gg_err_set(err, GG_EPROTO, "the VOMS extension holds a bad AC");
		int rc = gg_ac_parse(p, el, now, &acs[*k], err);
		if (rc < 0)
			return rc;
		(*k)++;
		p += el;
	}
	return 0;
}

int gg_ac_seq_parse(const unsigned char *der, size_t len, time_t now, struct gg_ac **out, size_t *n,
		    struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	const unsigned char *p = der, *end = der + len, *oend;
	if (len > INT_MAX || seq_body(&p, end, &oend) < 0 || oend != end)
		return gg_err_set(err, GG_EPROTO, "the VOMS extension is not a SEQUENCE of ACs");
	struct gg_ac *acs = calloc(MAX_ACS, sizeof *acs);
	if (!acs)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	size_t k = 0;
	int rc = 0;
	while (rc == 0 && p < end) {
		const unsigned char *iend;
		if (seq_body(&p, end, &iend) < 0)
			rc = gg_err_set(err, GG_EPROTO,
					"the VOMS extension is not a SEQUENCE of ACs");
		else
			rc = parse_acs(p, iend, now, acs, &k, err);
		p = rc == 0 ? iend : end;
	}
	if (rc < 0) {
		gg_ac_list_free(acs, k);
		return rc;
	}
	*out = acs;
	*n = k;
	return 0;
}

int gg_cert_acs(X509 *x, time_t now, struct gg_ac **out, size_t *n, struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	ASN1_OBJECT *oid = OBJ_txt2obj(GG_OID_VOMS_ACSEQ, 1);
	int at = oid ? X509_get_ext_by_OBJ(x, oid, -1) : -1;
	ASN1_OBJECT_free(oid);
	if (at < 0)
		return 0;
	const ASN1_OCTET_STRING *v = X509_EXTENSION_get_data(X509_get_ext(x, at));
	return gg_ac_seq_parse(ASN1_STRING_get0_data(v), (size_t)ASN1_STRING_length(v), now, out, n,
			       err);
}

int gg_cred_acs(const struct gg_cred *c, time_t now, struct gg_ac **out, size_t *n,
		struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	if (!c || !c->cert)
		return gg_err_set(err, GG_ECRED, "no certificate");
	/* the ACs of the newest proxy that has some */
	for (int i = -1; i < sk_X509_num(c->chain); i++) {
		X509 *x = i < 0 ? c->cert : sk_X509_value(c->chain, i);
		if (gg_cert_kind(x) < GG_CERT_PROXY)
			break;
		int rc = gg_cert_acs(x, now, out, n, err);
		if (rc < 0 || *n)
			return rc;
	}
	return 0;
}
