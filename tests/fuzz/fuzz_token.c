/* Bearer tokens ($BEARER_TOKEN, token files): RFC 6750 validation and the JWT
 * claims read for `proxy info` (gg_token_new). An input that starts with '{' is
 * taken as a JWT payload and wrapped as header.base64url(input).signature first,
 * so that the claims themselves get fuzzed (base64 would hide them from the
 * mutations); any other input is the token itself.
 * Also a token_command's stderr as an error shows it (gg_tsource_shown_stderr):
 * the input itself, and the token inside a line of text; nothing that looks
 * like a token is left in what is shown, and a token is never shown. */
#include <string.h>

#include "cred/cred.h"
#include "cred/tsource.h"
#include "fuzz.h"

/* The masking's rule, written apart from the library on purpose. */
static int token_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("-._~+/=", c));
}

static int token_looks(const char *s, size_t n)
{
	int digit = 0, alpha = 0, dot = 0;
	for (size_t i = 0; i < n; i++) {
		digit |= s[i] >= '0' && s[i] <= '9';
		alpha |= (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z');
		dot |= s[i] == '.';
	}
	return (n >= 4 && !memcmp(s, "eyJ", 3) && dot) || (n >= 32 && digit && alpha);
}

/* Shown as an error: bounded, terminated, no run that looks like a token. */
static void token_shown(const char *in, size_t n, int cut)
{
	char out[GG_TS_SHOWN + 5];
	memset(out, 'x', sizeof out);
	size_t len = gg_tsource_shown_stderr(in, n, cut, out);
	FUZZ_CHECK(len <= GG_TS_SHOWN + 4 && out[len] == '\0', "shown: unbounded or unterminated");
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && token_char(out[j]))
			j++;
		FUZZ_CHECK(!token_looks(out + i, j - i), "shown: a token left in the text");
		i = j + 1;
	}
}

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
	token_shown((const char *)data, size, size & 1);
	size_t n = strlen(value);
	char *line = malloc(n + 32);
	if (!line)
		abort();
	int k = snprintf(line, n + 32, "the token %s was refused", value);
	token_shown(line, (size_t)k, 0);
	if (rc == 0 && token_looks(t->value, strlen(t->value)) && strlen(t->value) >= 8) {
		char out[GG_TS_SHOWN + 5];
		gg_tsource_shown_stderr(line, (size_t)k, 0, out);
		FUZZ_CHECK(!strstr(out, t->value), "shown: the token itself");
	}
	free(line);
	gg_token_free(t);
	free(value);
	return 0;
}
