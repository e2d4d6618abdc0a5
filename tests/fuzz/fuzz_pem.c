/* PEM credential files: certificates with chains (gg_cred_load_public, what
 * `proxy info --file` reads), proxies (gg_proxy_load: certificate, unencrypted
 * key, chain), and user certificate + key files (gg_cred_open, then gg_cred_unlock
 * with the passphrase the seeds use), each inspected as `proxy info` does. */
#include <string.h>

#include "cred/cred.h"
#include "fuzz.h"

#define PEM_PASS "fuzzpass"

static void pem_inspect(const struct gg_cred *c)
{
	struct gg_proxy_info info;
	struct gg_err err = {0};
	if (gg_proxy_info_get(c, 1700000000, &info, &err) == 0) {
		FUZZ_CHECK(info.subject && info.issuer && info.identity && info.serial &&
				   info.signature && info.type && info.key_type,
			   "incomplete info");
		FUZZ_CHECK(info.chain_length >= 0, "chain length %d", info.chain_length);
		FUZZ_CHECK(info.time_left >= 0, "time left %lld", (long long)info.time_left);
		gg_proxy_info_clear(&info);
	} else {
		FUZZ_CHECK(err.msg[0], "info failed without a message");
	}
	struct gg_err e2 = {0};
	(void)gg_cred_check_time(c, 1700000000, &e2);
	for (int with_key = 0; with_key < 2; with_key++) {
		char *pem = NULL;
		size_t len = 0;
		struct gg_err e3 = {0};
		if (gg_cred_to_pem(c, with_key, &pem, &len, &e3) == 0) {
			FUZZ_CHECK(pem && strlen(pem) == len, "PEM length");
			gg_cred_pem_free(pem, len);
		}
	}
}

FUZZ_INIT(pem)
{
	umask(077);
}

FUZZ_TARGET(pem)
{
	char path[4096];
	if (fuzz_write_file("pem", data, size, path) < 0)
		return 0;
	struct gg_cred *c = NULL;
	struct gg_err err = {0};

	if (gg_cred_load_public(path, &c, &err) == 0) {
		FUZZ_CHECK(c && gg_cred_cert(c) && !gg_cred_key(c), "public load: cert/key");
		pem_inspect(c);
		gg_cred_free(c);
	} else {
		FUZZ_CHECK(!c && err.msg[0], "public load failed without a message");
	}

	c = NULL;
	memset(&err, 0, sizeof err);
	if (gg_proxy_load(path, &c, &err) == 0) {
		FUZZ_CHECK(c && gg_cred_cert(c) && gg_cred_key(c), "proxy load: cert/key");
		pem_inspect(c);
		gg_cred_free(c);
	} else {
		FUZZ_CHECK(!c && err.msg[0], "proxy load failed without a message");
	}

	c = NULL;
	memset(&err, 0, sizeof err);
	struct gg_cred_source src = {path, path, 0, "--cert"};
	if (gg_cred_open(&src, &c, &err) == 0) {
		FUZZ_CHECK(c && gg_cred_cert(c), "open: no certificate");
		if (gg_cred_needs_passphrase(c)) {
			struct gg_err e2 = {0};
			if (gg_cred_unlock(c, PEM_PASS, strlen(PEM_PASS), &e2) == 0)
				FUZZ_CHECK(gg_cred_key(c) && !gg_cred_needs_passphrase(c),
					   "unlocked without a key");
			else
				FUZZ_CHECK(e2.msg[0], "unlock failed without a message");
		}
		pem_inspect(c);
		gg_cred_free(c);
	} else {
		FUZZ_CHECK(!c && err.msg[0], "open failed without a message");
	}
	unlink(path);
	return 0;
}
