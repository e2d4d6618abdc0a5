/* Bearer tokens: WLCG Bearer Token Discovery, RFC 6750 validation, and the JWT
 * claims shown by `gridgpu proxy info` (read, never verified). */
#include "cred/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#define TOKEN_MAX (64 * 1024)

int gg_token_valid(const char *s)
{
	size_t i = 0;
	for (;; i++) {
		char ch = s[i];
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || (ch && strchr("-._~+/", ch)))
			continue;
		break;
	}
	if (i == 0)
		return 0;
	while (s[i] == '=')
		i++;
	return s[i] == '\0';
}

void gg_token_free(struct gg_token *t)
{
	if (!t)
		return;
	if (t->value)
		OPENSSL_clear_free(t->value, strlen(t->value) + 1);
	free(t->source);
	free(t->sub);
	free(t->iss);
	free(t);
}

/* C99 isspace in the C locale. */
static int ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Decode a base64url segment [s, s+n) with OpenSSL; malloc'd, NUL-terminated. */
static unsigned char *b64url_decode(const char *s, size_t n, size_t *outlen)
{
	while (n > 0 && s[n - 1] == '=') /* padding is optional in JWTs: re-add it below */
		n--;
	if (n == 0 || n > TOKEN_MAX || n % 4 == 1)
		return NULL;
	size_t padded = (n + 3) / 4 * 4, pad = padded - n;
	unsigned char *in = malloc(padded + 1), *out = malloc(padded / 4 * 3 + 1);
	if (!in || !out) {
		free(in);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		in[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : (unsigned char)s[i];
	memset(in + n, '=', pad);
	in[padded] = '\0';
	int r = EVP_DecodeBlock(out, in, (int)padded);
	free(in);
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	if (r < 0 || (size_t)r < pad) {
		free(out);
		return NULL;
	}
	*outlen = (size_t)r - pad;
	out[*outlen] = '\0';
	return out;
}

static char *dup_claim(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* header.payload.signature: read the payload's claims. */
static void read_jwt(struct gg_token *t)
{
	const char *v = t->value, *d1 = strchr(v, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d1 || !d2 || strchr(d2 + 1, '.'))
		return;
	size_t n = 0;
	unsigned char *payload = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &n);
	if (!payload)
		return;
	json_t *o = json_loadb((const char *)payload, n, 0, NULL);
	free(payload);
	if (json_is_object(o)) {
		t->jwt = 1;
		json_t *exp = json_object_get(o, "exp");
		if (json_is_integer(exp))
			t->exp = (int64_t)json_integer_value(exp);
		else if (json_is_real(exp) && json_real_value(exp) > 0 &&
			 json_real_value(exp) < 9.2e18) /* else it does not fit: no expiry read */
			t->exp = (int64_t)json_real_value(exp);
		t->sub = dup_claim(o, "sub");
		t->iss = dup_claim(o, "iss");
	}
	json_decref(o);
}

int gg_token_new(const char *value, const char *source, struct gg_token **out, struct gg_err *err)
{
	*out = NULL;
	size_t n = strlen(value), b = 0;
	while (b < n && ws(value[b]))
		b++;
	while (n > b && ws(value[n - 1]))
		n--;
	if (n == b)
		return gg_err_set(err, GG_ECRED, "the token from %s is empty", source);
	struct gg_token *t = calloc(1, sizeof *t);
	if (!t || !(t->value = OPENSSL_malloc(n - b + 1)) || !(t->source = strdup(source))) {
		gg_token_free(t);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	memcpy(t->value, value + b, n - b);
	t->value[n - b] = '\0';
	if (!gg_token_valid(t->value)) {
		gg_token_free(t);
		return gg_err_set(err, GG_ECRED,
				  "the token from %s is not a valid bearer token (RFC 6750 "
				  "b64token)",
				  source);
	}
	read_jwt(t);
	*out = t;
	return 0;
}

/* Whether a candidate is empty after stripping. */
static int blank(const char *s)
{
	while (*s && ws(*s))
		s++;
	return *s == '\0';
}

/* Try one file: 1 found (*out set), 0 absent or empty, < 0 error (refused:
 * not the user's, open to others, a link someone else made). */
static int try_file(const char *path, struct gg_token **out, struct gg_err *err)
{
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = gg_cred_read_own(path, "token file", &data, &len, err);
	if (rc == GG_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	if (strlen((char *)data) != len) {
		gg_cred_secret_free(data, len + 1);
		return gg_err_set(err, GG_ECRED, "the token from '%s' is not a valid bearer token",
				  path);
	}
	if (blank((char *)data)) {
		gg_cred_secret_free(data, len + 1);
		return 0;
	}
	rc = gg_token_new((char *)data, path, out, err);
	gg_cred_secret_free(data, len + 1);
	return rc < 0 ? rc : 1;
}

int gg_token_find(struct gg_token **out, struct gg_err *err)
{
	*out = NULL;
	/* The token is about to be in this process's memory. */
	gg_cred_disable_core_dumps(NULL);
	const char *env = getenv("BEARER_TOKEN");
	if (env && !blank(env)) {
		int rc = gg_token_new(env, "BEARER_TOKEN", out, err);
		return rc;
	}
	const char *file = getenv("BEARER_TOKEN_FILE");
	int rc;
	if (file && *file && (rc = try_file(file, out, err)) != 0)
		return rc < 0 ? rc : 0;
	unsigned uid = (unsigned)geteuid();
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && *xdg) {
		char *p = gg_strdup_printf("%s/bt_u%u", xdg, uid);
		if (!p)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		rc = try_file(p, out, err);
		free(p);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	char tmp[64];
	snprintf(tmp, sizeof tmp, "/tmp/bt_u%u", uid);
	if ((rc = try_file(tmp, out, err)) != 0)
		return rc < 0 ? rc : 0;
	return gg_err_set(err, GG_ENOTFOUND,
			  "no bearer token (BEARER_TOKEN, BEARER_TOKEN_FILE, "
			  "$XDG_RUNTIME_DIR/bt_u%u, /tmp/bt_u%u)",
			  uid, uid);
}
