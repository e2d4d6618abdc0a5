/* The delegation request a CE answers POST /delegations?action=new with (PKCS#10
 * PEM): gg_proxy_sign_csr signs it with a proxy made here once, in memory. */
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cred/internal.h"
#include "fuzz.h"

static struct gg_cred *csr_signer;

static struct gg_cred *csr_make_user(void)
{
	EVP_PKEY *key = EVP_RSA_gen(1024);
	X509 *x = X509_new();
	FUZZ_CHECK(key && x, "making the user certificate");
	X509_NAME *n = X509_NAME_new();
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"org", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "DC", MBSTRING_ASC, (const unsigned char *)"example", -1, -1,
				   0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"Fuzz User", -1,
				   -1, 0);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4242);
	X509_set_subject_name(x, n);
	X509_set_issuer_name(x, n);
	X509_NAME_free(n);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 86400);
	X509_set_pubkey(x, key);
	FUZZ_CHECK(X509_sign(x, key, EVP_sha256()) > 0, "signing the user certificate");
	struct gg_cred *c = gg_cred_alloc();
	FUZZ_CHECK(c, "out of memory");
	c->cert = x;
	c->key = key;
	return c;
}

FUZZ_INIT(csr)
{
	struct gg_cred *user = csr_make_user();
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.bits = 1024;
	struct gg_err err = {0};
	FUZZ_CHECK(gg_proxy_create(user, &o, &csr_signer, NULL, &err) == 0, "proxy: %s", err.msg);
	gg_cred_free(user);
}

FUZZ_TARGET(csr)
{
	char *chain = NULL;
	size_t len = 0;
	struct gg_err err = {0};
	int rc = gg_proxy_sign_csr(csr_signer, (const char *)data, size, 3600, &chain, &len, &err);
	if (rc < 0) {
		FUZZ_CHECK(!chain && err.msg[0], "failure without a message, or a chain");
		return 0;
	}
	FUZZ_CHECK(chain && strlen(chain) == len, "chain length");
	/* the answer is the new proxy, then the signer and its chain */
	BIO *b = BIO_new_mem_buf(chain, (int)len);
	int n = 0;
	X509 *x;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		n++;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	FUZZ_CHECK(n == 3, "%d certificates in the answer", n);
	free(chain);
	return 0;
}
