/* Verifying a credential's chain against a CA directory, proxies allowed. */
#include "cred/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

int gg_cred_ca_dir(const char *dir, char **out, struct gg_err *err)
{
	const char *env = getenv("X509_CERT_DIR");
	if (dir && *dir)
		*out = strdup(dir);
	else if (env && *env)
		*out = strdup(env);
	else
		*out = strdup("/etc/grid-security/certificates");
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

int gg_cred_verify(const struct gg_cred *c, const char *ca_dir, time_t now, struct gg_err *err)
{
	const char *what = c->path ? c->path : "certificate";
	struct stat st;
	if (stat(ca_dir, &st) < 0)
		return gg_err_sys(err, GG_ECRED, errno, "CA directory '%s'", ca_dir);
	if (!S_ISDIR(st.st_mode))
		return gg_err_set(err, GG_ECRED, "CA directory '%s' is not a directory", ca_dir);

	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_LOOKUP *lookup = store ? X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir()) : NULL;
	int rc = 0;
	ERR_clear_error();
	if (!ctx || !lookup || !X509_LOOKUP_add_dir(lookup, ca_dir, X509_FILETYPE_PEM) ||
	    !X509_STORE_CTX_init(ctx, store, c->cert, c->chain)) {
		rc = gg_cred_ossl_err(err, GG_ECRED, "verifying '%s'", what);
		goto out;
	}
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_ALLOW_PROXY_CERTS);
	if (now)
		X509_STORE_CTX_set_time(ctx, 0, now);
	if (X509_verify_cert(ctx) != 1) {
		int e = X509_STORE_CTX_get_error(ctx);
		X509 *cur = X509_STORE_CTX_get_current_cert(ctx);
		char *who = cur ? gg_cred_name_str(X509_get_subject_name(cur)) : NULL;
		rc = gg_err_set(err, GG_ECRED, "verifying '%s' against '%s': %s%s%s%s", what,
				ca_dir, X509_verify_cert_error_string(e), who ? " (at '" : "",
				who ? who : "", who ? "')" : "");
		free(who);
		ERR_clear_error();
	}
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return rc;
}
