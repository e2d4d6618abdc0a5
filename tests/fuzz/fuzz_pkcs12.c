/* PKCS#12 user credentials (~/.globus/usercred.p12): gg_cred_open, then
 * gg_cred_unlock with the passphrase the seeds use, then inspection. The legacy
 * provider is loaded, as the gridgpu command does, so that old ciphers are
 * reached too. */
#include <string.h>

#include <openssl/provider.h>

#include "cred/cred.h"
#include "fuzz.h"

#define P12_PASS "fuzzpass"

static OSSL_PROVIDER *p12_default, *p12_legacy;

/* Unloaded before OpenSSL's own clean-up at exit (registered after it), so that
 * LeakSanitizer sees nothing of them left. */
static void p12_unload(void)
{
	OSSL_PROVIDER_unload(p12_legacy);
	OSSL_PROVIDER_unload(p12_default);
}

FUZZ_INIT(pkcs12)
{
	umask(077);
	/* default first: loading "legacy" alone would hide the default provider */
	p12_default = OSSL_PROVIDER_try_load(NULL, "default", 1);
	p12_legacy = OSSL_PROVIDER_try_load(NULL, "legacy", 1);
	atexit(p12_unload);
}

FUZZ_TARGET(pkcs12)
{
	char path[4096];
	if (fuzz_write_file("p12", data, size, path) < 0)
		return 0;
	struct gg_cred *c = NULL;
	struct gg_err err = {0};
	struct gg_cred_source src = {path, NULL, 1, "--cert"};
	if (gg_cred_open(&src, &c, &err) == 0) {
		int ok = 1;
		if (gg_cred_needs_passphrase(c)) {
			struct gg_err e2 = {0};
			ok = gg_cred_unlock(c, P12_PASS, strlen(P12_PASS), &e2) == 0;
			FUZZ_CHECK(ok || e2.msg[0], "unlock failed without a message");
			if (!ok) {
				/* a wrong passphrase may be tried again */
				struct gg_err e3 = {0};
				(void)gg_cred_unlock(c, "", 0, &e3);
			}
		}
		if (ok && gg_cred_cert(c)) {
			FUZZ_CHECK(gg_cred_key(c), "unlocked without a key");
			struct gg_proxy_info info;
			struct gg_err e4 = {0};
			if (gg_proxy_info_get(c, 1700000000, &info, &e4) == 0)
				gg_proxy_info_clear(&info);
			(void)gg_cred_check_time(c, 1700000000, &e4);
			char *pem = NULL;
			size_t len = 0;
			if (gg_cred_to_pem(c, 1, &pem, &len, &e4) == 0)
				gg_cred_pem_free(pem, len);
		}
		gg_cred_free(c);
	} else {
		FUZZ_CHECK(!c && err.msg[0], "open failed without a message");
	}
	unlink(path);
	return 0;
}
