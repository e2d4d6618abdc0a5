/* Bearer tokens ($BEARER_TOKEN, token files): RFC 6750 validation and the JWT
 * claims read for `proxy info` (gg_token_new). An input that starts with '{' is
 * taken as a JWT payload and wrapped as header.base64url(input).signature first,
 * so that the claims themselves get fuzzed (base64 would hide them from the
 * mutations); any other input is the token itself. */
#include <string.h>

#include "cred/cred.h"
#include "fuzz.h"

static char *token_jwt(const uint8_t *data, size_t size)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	static const char head[] = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.", sig[] = ".c2lnbmF0dXJl";
	char *out = malloc(sizeof head + (size + 2) / 3 * 4 + sizeof sig);
	if (!out)
		abort();
	char *p = out + strlen(strcpy(out, head));
	for (size_t i = 0; i < size; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16 |
			     (i + 1 < size ? (uint32_t)data[i + 1] << 8 : 0) |
			     (i + 2 < size ? data[i + 2] : 0);
		*p++ = b64[v >> 18 & 63];
		*p++ = b64[v >> 12 & 63];
		if (i + 1 < size)
			*p++ = b64[v >> 6 & 63];
		if (i + 2 < size)
			*p++ = b64[v & 63];
	}
	strcpy(p, sig);
	return out;
}

FUZZ_TARGET(token)
{
	char *value = size && data[0] == '{' ? token_jwt(data, size) : fuzz_cstr(data, size);
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	int rc = gg_token_new(value, "fuzz", &t, &err);
	if (rc < 0) {
		FUZZ_CHECK(t == NULL && err.msg[0], "failure without a message, or a token");
	} else {
		FUZZ_CHECK(t && t->value && gg_token_valid(t->value), "accepted an invalid token");
		FUZZ_CHECK(strlen(t->value) <= strlen(value), "the token grew");
		FUZZ_CHECK(!strcmp(t->source, "fuzz"), "source");
		if (!t->jwt)
			FUZZ_CHECK(!t->sub && !t->iss && !t->exp, "claims without a JWT");
	}
	gg_token_free(t);
	free(value);
	return 0;
}
