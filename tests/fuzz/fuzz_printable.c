/* gg_str_printable, the one function that makes outside text safe to print.
 * For any bytes: the result is valid UTF-8 that holds no control character (C0,
 * DEL, C1), no bidirectional control or invisible format character and no
 * backslash that does not start an escape; and unescaping it gives back the
 * input exactly (nothing is lost or made up). Text that is valid UTF-8 without
 * those code points and without a backslash comes back unchanged. */
#include <string.h>

#include "core/core.h"
#include "fuzz.h"

/* The code point at p (n bytes left) and its length, when p starts a valid
 * UTF-8 sequence; 0 otherwise. Written apart from the library on purpose. */
static size_t printable_decode(const unsigned char *p, size_t n, unsigned long *cp)
{
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	size_t k = (p[0] & 0xe0) == 0xc0   ? 2
		   : (p[0] & 0xf0) == 0xe0 ? 3
		   : (p[0] & 0xf8) == 0xf0 ? 4
					   : 0;
	if (!k || k > n)
		return 0;
	unsigned long v = p[0] & (0x7fu >> k);
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3fu);
	}
	static const unsigned long min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < min[k] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return k;
}

static int printable_bad_cp(unsigned long c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x61c || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) ||
	       (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

static int printable_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Undo the escapes (\\, \n, \r, \t, \xHH) into out; the length, or -1 when the
 * text holds a backslash that is not one of them. */
static long printable_unescape(const char *s, unsigned char *out)
{
	size_t o = 0;
	for (size_t i = 0; s[i]; i++) {
		if (s[i] != '\\') {
			out[o++] = (unsigned char)s[i];
			continue;
		}
		char c = s[++i];
		if (c == '\\' || c == 'n' || c == 'r' || c == 't') {
			out[o++] = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : '\\';
		} else if (c == 'x' && printable_hex(s[i + 1]) >= 0 &&
			   printable_hex(s[i + 2]) >= 0) {
			out[o++] = (unsigned char)(printable_hex(s[i + 1]) << 4 |
						   printable_hex(s[i + 2]));
			i += 2;
		} else {
			return -1;
		}
	}
	return (long)o;
}

FUZZ_TARGET(printable)
{
	char *got = gg_str_printable((const char *)data, size);
	FUZZ_CHECK(got, "out of memory for %zu bytes", size);
	size_t n = strlen(got);
	FUZZ_CHECK(n <= 4 * size, "%zu bytes out of %zu", n, size);
	const unsigned char *g = (const unsigned char *)got;
	for (size_t i = 0; i < n;) {
		unsigned long cp;
		size_t k = printable_decode(g + i, n - i, &cp);
		FUZZ_CHECK(k, "invalid UTF-8 in the output at byte %zu", i);
		FUZZ_CHECK(!printable_bad_cp(cp), "U+%04lX reached the output", cp);
		i += k;
	}
	unsigned char *back = malloc(n + 1);
	FUZZ_CHECK(back, "out of memory");
	long m = printable_unescape(got, back);
	FUZZ_CHECK(m == (long)size && memcmp(back, data, size) == 0,
		   "the escapes do not give back the input");
	/* clean text (valid UTF-8, nothing to hide, no backslash) is kept as is */
	int clean = 1;
	for (size_t i = 0; clean && i < size;) {
		unsigned long cp;
		size_t k = printable_decode(data + i, size - i, &cp);
		clean = k && !printable_bad_cp(cp) && cp != '\\';
		i += k ? k : 1;
	}
	FUZZ_CHECK(!clean || (n == size && memcmp(got, data, size) == 0), "clean text changed");
	free(back);
	free(got);
	return 0;
}
