/* Small string helpers. */
#include "core/core.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gg_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* Damerau-Levenshtein distance (optimal string alignment): insertion,
 * deletion, substitution and the transposition of two neighbours each count 1,
 * so "lsit" is 1 from "list". Three rows of the matrix are kept. */
size_t gg_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *m = calloc(3 * (lb + 1), sizeof *m);
	if (!m)
		return (size_t)-1;
	size_t *pp = m, *prev = m + lb + 1, *row = m + 2 * (lb + 1);
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			row[j] = best;
		}
		size_t *t = pp;
		pp = prev;
		prev = row;
		row = t;
	}
	size_t d = prev[lb];
	free(m);
	return d;
}

char *gg_strstrip(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	size_t i = 0;
	while (s[i] && isspace((unsigned char)s[i]))
		i++;
	if (i)
		memmove(s, s + i, n - i + 1);
	return s;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes): 2 to 4, or 0 when
 * invalid (overlong, a surrogate, beyond U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	if (!len || p[0] > 0xf4 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return len;
}

static size_t put_escape(char *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	const char *named = c == '\n'   ? "\\n"
			    : c == '\r' ? "\\r"
			    : c == '\t' ? "\\t"
			    : c == '\\' ? "\\\\"
					: NULL;
	if (named) {
		memcpy(o, named, 2);
		return 2;
	}
	o[0] = '\\';
	o[1] = 'x';
	o[2] = hex[c >> 4];
	o[3] = hex[c & 15];
	return 4;
}

int gg_str_has_control(const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return 1;
	return 0;
}

int gg_str_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t n = strlen(s), i = 0, k; i < n; i += k)
		if (!(k = p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i)))
			return 0;
	return 1;
}

/* The code point of the valid sequence of k bytes at p. */
static uint32_t utf8_cp(const unsigned char *p, size_t k)
{
	uint32_t cp = k == 2 ? p[0] & 0x1fu : k == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
	for (size_t i = 1; i < k; i++)
		cp = cp << 6 | (p[i] & 0x3fu);
	return cp;
}

/* Code points that are valid but must not reach a terminal: the C1 controls,
 * the bidirectional controls and the invisible format characters a hostile text
 * can use to reorder or hide what a line shows (Trojan Source), the line and
 * paragraph separators, and the byte order mark. */
static int hidden_cp(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

char *gg_str_printable(const char *s, size_t len)
{
	if (len > (SIZE_MAX - 1) / 4)
		return NULL;
	char *out = malloc(4 * len + 1), *o = out;
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; out && i < len;) {
		size_t k = p[i] >= 0x80 ? utf8_seq(p + i, len - i) : 1;
		int hide = k > 1 && hidden_cp(utf8_cp(p + i, k));
		if (k > 1 && !hide) {
			memcpy(o, p + i, k);
			o += k;
			i += k;
		} else if (k == 1 && p[i] >= 0x20 && p[i] != 0x7f && p[i] != '\\') {
			*o++ = (char)p[i++];
		} else {
			for (size_t e = i + (hide ? k : 1); i < e; i++)
				o += put_escape(o, p[i]);
		}
	}
	if (out)
		*o = '\0';
	return out;
}

/* The value of the hex digit c, or -1. */
static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The byte the escape at p (after its backslash) stands for, and its length
 * in *k; -1 when it is not one gg_str_printable writes. */
static int unescape_one(const char *p, size_t *k)
{
	*k = 1;
	switch (p[0]) {
	case '\\': return '\\';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'x': {
		int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
		*k = 3;
		return hi < 0 || lo < 0 || (hi | lo) == 0 ? -1 : hi << 4 | lo;
	}
	default: return -1;
	}
}

char *gg_str_unprintable(const char *s, struct gg_err *err)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	if (!out) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	for (const char *p = s; *p;) {
		size_t k;
		int c = *p == '\\' ? unescape_one(p + 1, &k) : (unsigned char)*p;
		if (c < 0) {
			free(out);
			gg_err_set(err, GG_EPROTO, "a bad escape at byte %zu", (size_t)(p - s));
			return NULL;
		}
		*o++ = (char)c;
		p += *p == '\\' ? k + 1 : 1;
	}
	*o = '\0';
	return out;
}

void gg_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* One word from *pp into w (room for strlen of the whole line); 0 or a quote
 * left open (its character). */
static int argv_word(const char **pp, char *w)
{
	const char *p = *pp;
	char q = 0;
	for (; *p && (q || (*p != ' ' && *p != '\t')); p++) {
		if (q == '\'') {
			if (*p == '\'')
				q = 0;
			else
				*w++ = *p;
		} else if (q == '"') {
			if (*p == '"')
				q = 0;
			else if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
				*w++ = *++p;
			else
				*w++ = *p;
		} else if (*p == '\'' || *p == '"') {
			q = *p;
		} else if (*p == '\\' && p[1]) {
			*w++ = *++p;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	*pp = p;
	return q;
}

int gg_argv_split(const char *s, char ***argv, struct gg_err *err)
{
	size_t n = 0, len = strlen(s);
	char **v = calloc(len / 2 + 2, sizeof *v), *w = malloc(len + 1);
	if (!v || !w) {
		free(v);
		free(w);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	const char *p = s;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		int q = argv_word(&p, w);
		if (q) {
			free(w);
			gg_argv_free(v);
			return gg_err_set(err, GG_EUSAGE, "a %s quote is not closed",
					  q == '"' ? "double" : "single");
		}
		if (!(v[n++] = strdup(w))) {
			free(w);
			gg_argv_free(v);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	free(w);
	if (!n) {
		free(v);
		return gg_err_set(err, GG_EUSAGE, "no command");
	}
	*argv = v;
	return 0;
}

/* w in the quoting gg_argv_split undoes, onto f. */
static void quote_word(FILE *f, const char *w)
{
	if (*w && w[strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			      "@%+=:,./_-")] == '\0') {
		fputs(w, f);
		return;
	}
	fputc('\'', f);
	for (; *w; w++)
		if (*w == '\'')
			fputs("'\\''", f);
		else
			fputc(*w, f);
	fputc('\'', f);
}

char *gg_argv_join(char *const *argv, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(' ', f);
		quote_word(f, argv[i]);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
