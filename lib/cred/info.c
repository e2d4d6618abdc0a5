/* Inspecting credentials: what `gridgpu proxy info` shows. */
#include "cred/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

enum gg_cert_kind gg_cred_cert_kind(X509 *x, int *path_length)
{
	if (path_length)
		*path_length = -1;
	uint32_t flags = X509_get_extension_flags(x);
	if (!(flags & EXFLAG_PROXY))
		return (flags & EXFLAG_CA) ? GG_CERT_CA : GG_CERT_EEC;
	PROXY_CERT_INFO_EXTENSION *pci = X509_get_ext_d2i(x, NID_proxyCertInfo, NULL, NULL);
	ERR_clear_error();
	if (!pci)
		return GG_CERT_PROXY_OTHER;
	enum gg_cert_kind k = GG_CERT_PROXY_OTHER;
	const ASN1_OBJECT *lang = pci->proxyPolicy ? pci->proxyPolicy->policyLanguage : NULL;
	if (lang) {
		int nid = OBJ_obj2nid(lang);
		char oid[80];
		if (nid == NID_id_ppl_inheritAll)
			k = GG_CERT_PROXY;
		else if (nid == NID_Independent)
			k = GG_CERT_PROXY_INDEPENDENT;
		else if (OBJ_obj2txt(oid, sizeof oid, lang, 1) > 0 &&
			 strcmp(oid, GG_OID_GLOBUS_LIMITED) == 0)
			k = GG_CERT_PROXY_LIMITED;
	}
	if (path_length && pci->pcPathLengthConstraint) {
		long v = ASN1_INTEGER_get(pci->pcPathLengthConstraint);
		*path_length = v < 0 || v > INT32_MAX ? INT32_MAX : (int)v;
	}
	PROXY_CERT_INFO_EXTENSION_free(pci);
	return k;
}

enum gg_cert_kind gg_cert_kind(X509 *x)
{
	return gg_cred_cert_kind(x, NULL);
}

static const char *kind_str(enum gg_cert_kind k)
{
	switch (k) {
	case GG_CERT_EEC: return "end entity certificate";
	case GG_CERT_CA: return "CA certificate";
	case GG_CERT_PROXY: return "RFC 3820 compliant impersonation proxy";
	case GG_CERT_PROXY_LIMITED: return "RFC 3820 compliant limited proxy";
	case GG_CERT_PROXY_INDEPENDENT: return "RFC 3820 compliant independent proxy";
	default: return "RFC 3820 compliant restricted proxy";
	}
}

void gg_proxy_info_clear(struct gg_proxy_info *info)
{
	if (!info)
		return;
	free(info->path);
	free(info->subject);
	free(info->issuer);
	free(info->identity);
	free(info->signature);
	free(info->serial);
	memset(info, 0, sizeof *info);
}

static const char *key_type(EVP_PKEY *k)
{
	static const char *const names[] = {"RSA", "RSA-PSS", "EC", "ED25519", "ED448", "DSA"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (EVP_PKEY_is_a(k, names[i]))
			return names[i];
	return "unknown";
}

int gg_proxy_info_get(const struct gg_cred *c, time_t now, struct gg_proxy_info *out,
		      struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	if (!c || !c->cert)
		return gg_err_set(err, GG_ECRED, "no certificate");
	if (!now)
		now = time(NULL);
	X509 *x = c->cert;
	out->kind = gg_cred_cert_kind(x, &out->path_length);
	out->type = kind_str(out->kind);
	out->chain_length = sk_X509_num(c->chain);
	out->subject = gg_cred_name_str(X509_get_subject_name(x));
	out->issuer = gg_cred_name_str(X509_get_issuer_name(x));
	if (c->path)
		out->path = strdup(c->path);

	/* The identity: the first certificate that is not a proxy. */
	X509 *eec = out->kind >= GG_CERT_PROXY ? NULL : x;
	for (int i = 0; !eec && i < sk_X509_num(c->chain); i++)
		if (gg_cert_kind(sk_X509_value(c->chain, i)) < GG_CERT_PROXY)
			eec = sk_X509_value(c->chain, i);
	if (eec) {
		out->identity = gg_cred_name_str(X509_get_subject_name(eec));
	} else {
		/* No end-entity certificate in the file: the last proxy's issuer. */
		X509 *last = out->chain_length ? sk_X509_value(c->chain, out->chain_length - 1) : x;
		out->identity = gg_cred_name_str(X509_get_issuer_name(last));
	}

	EVP_PKEY *pk = X509_get0_pubkey(x);
	out->bits = pk ? EVP_PKEY_get_bits(pk) : 0;
	out->key_type = pk ? key_type(pk) : "none";
	int signid = X509_get_signature_nid(x);
	out->signature = strdup(signid != NID_undef ? OBJ_nid2ln(signid) : "unknown");

	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *dec = bn ? BN_bn2dec(bn) : NULL;
	if (dec)
		out->serial = strdup(dec);
	OPENSSL_free(dec);
	BN_free(bn);
	ERR_clear_error();

	if (gg_cred_asn1_time(X509_get0_notBefore(x), &out->not_before) < 0 ||
	    gg_cred_asn1_time(X509_get0_notAfter(x), &out->not_after) < 0) {
		gg_proxy_info_clear(out);
		return gg_err_set(err, GG_ECRED, "'%s': unreadable validity dates",
				  c->path ? c->path : "certificate");
	}
	out->end = gg_cred_end(c);
	out->time_left = out->end > now ? (int64_t)(out->end - now) : 0;
	out->not_yet_valid = now < out->not_before;
	if (!out->subject || !out->issuer || !out->identity || !out->signature || !out->serial ||
	    (c->path && !out->path)) {
		gg_proxy_info_clear(out);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}
