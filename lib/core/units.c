/* Durations ("90m", "12h", "1h30m", "12:00") and sizes ("16G"). */
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int64_t unit_seconds(char u)
{
	switch (u) {
	case 's': return 1;
	case 'm': return 60;
	case 'h': return 3600;
	case 'd': return 86400;
	case 'w': return 7 * 86400;
	default: return 0;
	}
}

static int dur_bad(struct gg_err *err, const char *s, const char *why)
{
	return gg_err_set(err, GG_EUSAGE,
			  "invalid duration '%s': %s (use e.g. 90m, 12h, 2d, 1h30m or HH:MM)", s,
			  why);
}

/* Parse an unsigned decimal at *p; advances *p. */
static int parse_uint(const char **p, int64_t *v)
{
	if (!isdigit((unsigned char)**p))
		return -1;
	int64_t x = 0;
	while (isdigit((unsigned char)**p)) {
		int d = **p - '0';
		if (x > (INT64_MAX - d) / 10)
			return -2;
		x = x * 10 + d;
		(*p)++;
	}
	*v = x;
	return 0;
}

/* The one-letter unit a spelled-out one means ("hours" -> 'h'), or 0. */
static char word_unit(const char *w, size_t n)
{
	static const struct {
		char u;
		const char *names[6];
	} words[] = {
		{'s', {"sec", "secs", "second", "seconds", NULL}},
		{'m', {"min", "mins", "minute", "minutes", NULL}},
		{'h', {"hr", "hrs", "hour", "hours", NULL}},
		{'d', {"day", "days", NULL}},
		{'w', {"wk", "wks", "week", "weeks", NULL}},
	};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		for (size_t j = 0; words[i].names[j]; j++)
			if (strlen(words[i].names[j]) == n && !strncasecmp(w, words[i].names[j], n))
				return words[i].u;
	return 0;
}

/* s spells a unit out ("4hours", "30 min"): s rewritten with one-letter units
 * into buf, "" when a word is not a unit; 0 when s has no word at all. */
static int dur_respell(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	int words = 0;
	buf[0] = '\0';
	for (const char *p = s; *p;) {
		size_t n = 0;
		while (isalpha((unsigned char)p[n]))
			n++;
		char c = *p;
		if (n > 1) {
			words++;
			if (!(c = word_unit(p, n)))
				o = len; /* not a unit: no suggestion */
		} else if (n == 0 && *p == ' ') {
			c = 0;
		}
		p += n ? n : 1;
		if (c && o + 1 < len)
			buf[o++] = c;
		else if (c)
			o = len;
	}
	if (o >= len)
		buf[0] = '\0';
	else
		buf[o] = '\0';
	return words;
}

/* "4hours": say that units are one letter, with the spelling meant. */
static int dur_word(const char *s, struct gg_err *err)
{
	char fix[64];
	int64_t v;
	if (!dur_respell(s, fix, sizeof fix))
		return 0;
	if (*fix && strchr("0123456789", *fix) && gg_duration_parse(fix, &v, NULL) == 0)
		return gg_err_set(err, GG_EUSAGE,
				  "invalid duration '%s': units are one letter: did you mean %s? "
				  "(use e.g. 4h, 30m, 2d or 1h30m)",
				  s, fix);
	return dur_bad(err, s, "use a number with a one-letter unit: s, m, h, d or w");
}

int gg_duration_parse(const char *s, int64_t *out, struct gg_err *err)
{
	if (s && dur_word(s, err))
		return GG_EUSAGE;
	if (!s || !*s)
		return dur_bad(err, s ? s : "", "empty");
	const char *p = s;
	int64_t total = 0, v;
	int r;

	/* HH:MM[:SS], the grid-proxy-init/voms-proxy-init -valid form. */
	if (strchr(s, ':')) {
		int64_t parts[3];
		int n = 0;
		for (;;) {
			if ((r = parse_uint(&p, &v)) < 0)
				return dur_bad(err, s, r == -2 ? "too large" : "expected a number");
			if (n == 3)
				return dur_bad(err, s, "too many fields");
			parts[n++] = v;
			if (*p == '\0')
				break;
			if (*p++ != ':')
				return dur_bad(err, s, "unexpected character");
		}
		if (n < 2)
			return dur_bad(err, s, "expected HH:MM");
		if (parts[1] >= 60 || (n == 3 && parts[2] >= 60))
			return dur_bad(err, s, "minutes and seconds must be below 60");
		if (parts[0] > INT64_MAX / 3600 - 1)
			return dur_bad(err, s, "too large");
		total = parts[0] * 3600 + parts[1] * 60 + (n == 3 ? parts[2] : 0);
		*out = total;
		return 0;
	}

	char last_unit = 0;
	while (*p) {
		if ((r = parse_uint(&p, &v)) < 0)
			return dur_bad(err, s, r == -2 ? "too large" : "expected a number");
		int64_t mult;
		if (*p == '\0') {
			if (last_unit)
				return dur_bad(err, s, "missing unit after the last number");
			mult = 1; /* bare number: seconds */
		} else {
			mult = unit_seconds(*p);
			if (!mult)
				return dur_bad(err, s, "unknown unit (s, m, h, d, w)");
			if (last_unit && unit_seconds(last_unit) <= mult)
				return dur_bad(err, s, "units must go from large to small");
			last_unit = *p++;
		}
		if (v > (INT64_MAX - total) / mult)
			return dur_bad(err, s, "too large");
		total += v * mult;
	}
	*out = total;
	return 0;
}

/* s is digits (and, for sizes, a '.') only, and not zero. */
static int bare_nonzero(const char *s, const char *accept)
{
	if (!s || !*s || s[strspn(s, accept)] != '\0')
		return 0;
	return s[strspn(s, "0.")] != '\0';
}

int gg_duration_parse_unit(const char *s, int64_t *out, struct gg_err *err)
{
	if (bare_nonzero(s, "0123456789"))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s' needs a unit: %sh, %sm or %sd (a bare number would "
				  "be seconds)",
				  s, s, s, s);
	return gg_duration_parse(s, out, err);
}

char *gg_duration_format(int64_t secs, char *buf, size_t len)
{
	static const struct {
		char u;
		int64_t s;
	} units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
	const char *sign = "";
	if (secs < 0) {
		sign = "-";
		secs = secs == INT64_MIN ? INT64_MAX : -secs;
	}
	if (secs == 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	size_t i = 0;
	while (units[i].s > secs)
		i++;
	int64_t a = secs / units[i].s, rest = secs % units[i].s;
	if (i < 3 && rest / units[i + 1].s)
		snprintf(buf, len, "%s%" PRId64 "%c%" PRId64 "%c", sign, a, units[i].u,
			 rest / units[i + 1].s, units[i + 1].u);
	else
		snprintf(buf, len, "%s%" PRId64 "%c", sign, a, units[i].u);
	return buf;
}

char *gg_duration_format_exact(int64_t secs, char *buf, size_t len)
{
	static const struct {
		char u;
		int64_t s;
	} units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
	if (secs <= 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < 4 && off < len; i++) {
		int64_t n = secs / units[i].s;
		secs %= units[i].s;
		if (n)
			off += (size_t)snprintf(buf + off, len - off, "%" PRId64 "%c", n,
						units[i].u);
	}
	return buf;
}

int gg_size_parse(const char *s, uint64_t *out, struct gg_err *err)
{
	if (!s || !*s)
		return gg_err_set(err, GG_EUSAGE, "invalid size '': empty (use e.g. 16G, 512M)");
	const char *p = s;
	if (!isdigit((unsigned char)*p))
		return gg_err_set(err, GG_EUSAGE,
				  "invalid size '%s': expected a number (use e.g. 16G, 512M)", s);
	errno = 0;
	char *end;
	double v = strtod(p, &end);
	if (errno || end == p || !isfinite(v) || v < 0)
		return gg_err_set(err, GG_EUSAGE, "invalid size '%s': not a number", s);
	p = end;
	double mult = 1;
	static const char units[] = "KMGTPE";
	if (*p) {
		const char *u = strchr(units, toupper((unsigned char)*p));
		if (!u)
			return gg_err_set(err, GG_EUSAGE,
					  "invalid size '%s': unknown unit (K, M, G, T, P, E)", s);
		for (const char *q = units; q <= u; q++)
			mult *= 1024;
		p++;
		if (*p == 'i' && p[1] == 'B')
			p += 2;
		else if (*p == 'B' || *p == 'b')
			p++;
	}
	if (*p)
		return gg_err_set(err, GG_EUSAGE, "invalid size '%s': trailing characters", s);
	double bytes = v * mult;
	if (bytes >= 18446744073709551616.0)
		return gg_err_set(err, GG_EUSAGE, "invalid size '%s': too large", s);
	*out = (uint64_t)bytes;
	return 0;
}

int gg_size_parse_unit(const char *s, uint64_t *out, struct gg_err *err)
{
	if (bare_nonzero(s, "0123456789."))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s' needs a unit: %sG or %sM (a bare number would be "
				  "bytes)",
				  s, s, s);
	return gg_size_parse(s, out, err);
}

char *gg_size_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes;
	size_t i = 0;
	while (v >= 1024 && i < 6) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, units[i]);
	return buf;
}

/* strftime of t in UTC (utc) or local time, or "-" for no time. */
static char *time_fmt(int64_t t, int utc, const char *fmt, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !(utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm)) ||
	    !strftime(buf, len, fmt, &tm))
		snprintf(buf, len, "-");
	return buf;
}

char *gg_time_iso(int64_t t, char *buf, size_t len)
{
	return time_fmt(t, 1, "%Y-%m-%dT%H:%M:%SZ", buf, len);
}

char *gg_time_local(int64_t t, char *buf, size_t len)
{
	return time_fmt(t, 0, "%Y-%m-%d %H:%M %Z", buf, len);
}
