/* Unit tests of lib/core. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "squat.h"

UNIT_TMPDIR("gg-unit")

static int64_t dur(const char *s)
{
	int64_t v = -1;
	struct gg_err err = {0};
	int rc = gg_duration_parse(s, &v, &err);
	return rc < 0 ? -1 : v;
}

static void test_duration_parse(void **state)
{
	(void)state;
	assert_int_equal(dur("90"), 90);
	assert_int_equal(dur("90s"), 90);
	assert_int_equal(dur("90m"), 5400);
	assert_int_equal(dur("12h"), 43200);
	assert_int_equal(dur("2d"), 172800);
	assert_int_equal(dur("1w"), 604800);
	assert_int_equal(dur("1h30m"), 5400);
	assert_int_equal(dur("1d2h3m4s"), 93784);
	assert_int_equal(dur("12:00"), 43200);
	assert_int_equal(dur("01:30:15"), 5415);
	assert_int_equal(dur("0"), 0);
	/* rejected */
	assert_int_equal(dur(""), -1);
	assert_int_equal(dur("h"), -1);
	assert_int_equal(dur("-5m"), -1);
	assert_int_equal(dur("5x"), -1);
	assert_int_equal(dur("5m3"), -1);
	assert_int_equal(dur("30m1h"), -1);
	assert_int_equal(dur("12:60"), -1);
	assert_int_equal(dur("12"
			     ":"),
			 -1);
	assert_int_equal(dur("1:2:3:4"), -1);
	assert_int_equal(dur("99999999999999999999"), -1);
	assert_int_equal(dur("9999999999999999d"), -1);
	struct gg_err err = {0};
	int64_t v;
	assert_int_equal(gg_duration_parse("5q", &v, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "invalid duration '5q'"));
}

static void test_duration_format(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(gg_duration_format(0, b, sizeof b), "0s");
	assert_string_equal(gg_duration_format(59, b, sizeof b), "59s");
	assert_string_equal(gg_duration_format(5400, b, sizeof b), "1h30m");
	assert_string_equal(gg_duration_format(43200, b, sizeof b), "12h");
	assert_string_equal(gg_duration_format(93784, b, sizeof b), "1d2h");
	assert_string_equal(gg_duration_format(-90, b, sizeof b), "-1m30s");
	/* format then parse round-trips when two units suffice */
	assert_int_equal(dur(gg_duration_format(7380, b, sizeof b)), 7380);
	/* the exact form always does (config files are written with it) */
	assert_string_equal(gg_duration_format_exact(93784, b, sizeof b), "1d2h3m4s");
	assert_string_equal(gg_duration_format_exact(0, b, sizeof b), "0s");
	assert_string_equal(gg_duration_format_exact(7200, b, sizeof b), "2h");
	int64_t samples[] = {1, 59, 61, 3599, 3601, 86399, 90061, 9999999, INT64_MAX / 2};
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
		assert_true(dur(gg_duration_format_exact(samples[i], b, sizeof b)) == samples[i]);
}

/* What a user types: a bare number needs a unit, a bare 0 does not. */
static void test_parse_unit(void **state)
{
	(void)state;
	int64_t d = -1;
	uint64_t z = 1;
	struct gg_err err = {0};
	assert_int_equal(gg_duration_parse_unit("4", &d, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "'4' needs a unit: 4h, 4m or 4d (a bare number would be "
				     "seconds)");
	assert_true(d == -1);
	assert_int_equal(gg_duration_parse_unit("90", &d, &err), GG_EUSAGE);
	assert_int_equal(gg_duration_parse_unit("4h", &d, &err), 0);
	assert_true(d == 4 * 3600);
	assert_int_equal(gg_duration_parse_unit("12:00", &d, &err), 0);
	assert_true(d == 12 * 3600);
	assert_int_equal(gg_duration_parse_unit("0", &d, &err), 0);
	assert_true(d == 0);
	assert_int_equal(gg_duration_parse_unit("00", &d, &err), 0);
	assert_int_equal(gg_duration_parse_unit("4x", &d, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "unknown unit"));
	/* A spelled-out unit says units are one letter, with the spelling meant. */
	d = -1;
	assert_int_equal(gg_duration_parse_unit("4hours", &d, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "invalid duration '4hours': units are one letter: did you "
				     "mean 4h? (use e.g. 4h, 30m, 2d or 1h30m)");
	assert_true(d == -1);
	assert_int_equal(gg_duration_parse("1hour30mins", &d, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 1h30m?"));
	assert_int_equal(gg_duration_parse("2 Days", &d, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 2d?"));
	assert_int_equal(gg_duration_parse("3months", &d, &err), GG_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid duration '3months': use a number with a one-letter "
			    "unit: s, m, h, d or w (use e.g. 90m, 12h, 2d, 1h30m or HH:MM)");
	assert_int_equal(gg_duration_parse("hours", &d, &err), GG_EUSAGE);
	assert_null(strstr(err.msg, "did you mean"));
	assert_true(d == -1);
	assert_int_equal(gg_duration_parse_unit("", &d, &err), GG_EUSAGE);
	assert_int_equal(gg_size_parse_unit("16", &z, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "'16' needs a unit: 16G or 16M (a bare number would be "
				     "bytes)");
	assert_int_equal(gg_size_parse_unit("1.5", &z, &err), GG_EUSAGE);
	assert_true(z == 1);
	assert_int_equal(gg_size_parse_unit("16G", &z, &err), 0);
	assert_true(z == 16ull << 30);
	assert_int_equal(gg_size_parse_unit("0", &z, &err), 0);
	assert_true(z == 0);
	assert_int_equal(gg_size_parse_unit("0.0", &z, &err), 0);
	assert_int_equal(gg_size_parse_unit("G", &z, &err), GG_EUSAGE);
}

static void test_time_format(void **state)
{
	(void)state;
	char b[40];
	assert_string_equal(gg_time_iso(1795688449, b, sizeof b), "2026-11-26T10:20:49Z");
	assert_string_equal(gg_time_iso(0, b, sizeof b), "-");
	setenv("TZ", "Europe/Zurich", 1);
	tzset();
	assert_string_equal(gg_time_local(1795688449, b, sizeof b), "2026-11-26 11:20 CET");
	setenv("TZ", "UTC", 1);
	tzset();
	assert_string_equal(gg_time_local(1795688449, b, sizeof b), "2026-11-26 10:20 UTC");
	assert_string_equal(gg_time_local(-5, b, sizeof b), "-");
}

static void test_size(void **state)
{
	(void)state;
	uint64_t v;
	struct gg_err err = {0};
	assert_int_equal(gg_size_parse("16G", &v, &err), 0);
	assert_true(v == 16ull << 30);
	assert_int_equal(gg_size_parse("512M", &v, &err), 0);
	assert_true(v == 512ull << 20);
	assert_int_equal(gg_size_parse("2GiB", &v, &err), 0);
	assert_true(v == 2ull << 30);
	assert_int_equal(gg_size_parse("1.5T", &v, &err), 0);
	assert_true(v == 3ull << 39);
	assert_int_equal(gg_size_parse("4096", &v, &err), 0);
	assert_true(v == 4096);
	assert_int_equal(gg_size_parse("16Q", &v, &err), GG_EUSAGE);
	assert_int_equal(gg_size_parse("", &v, &err), GG_EUSAGE);
	assert_int_equal(gg_size_parse("-1G", &v, &err), GG_EUSAGE);
	assert_int_equal(gg_size_parse("1Gx", &v, &err), GG_EUSAGE);
	assert_int_equal(gg_size_parse("99999999E", &v, &err), GG_EUSAGE);
	char b[32];
	assert_string_equal(gg_size_format(12, b, sizeof b), "12 B");
	assert_string_equal(gg_size_format(1536ull << 20, b, sizeof b), "1.5 GiB");
	assert_string_equal(gg_size_format(512ull << 20, b, sizeof b), "512 MiB");
}

static void test_err(void **state)
{
	(void)state;
	struct gg_err err = {0};
	assert_int_equal(gg_err_set(&err, GG_ECRED, "reading key '%s': %s", "k.pem", "bad"),
			 GG_ECRED);
	assert_int_equal(gg_err_prefix(&err, "proxy init"), GG_ECRED);
	assert_string_equal(err.msg, "proxy init: reading key 'k.pem': bad");
	assert_int_equal(gg_err_exit_code(GG_ECRED), 3);
	assert_int_equal(gg_err_exit_code(GG_ENET), 4);
	assert_int_equal(gg_err_exit_code(GG_EPROTO), 4);
	assert_int_equal(gg_err_exit_code(GG_EHOSTKEY), 4);
	assert_int_equal(gg_err_exit_code(GG_ENOTFOUND), 5);
	assert_int_equal(gg_err_exit_code(GG_EJOB), 6);
	assert_int_equal(gg_err_exit_code(GG_EINTR), 130);
	assert_int_equal(gg_err_exit_code(GG_EIO), 1);
	assert_int_equal(gg_err_exit_code(GG_OK), 0);
	assert_string_equal(gg_err_kind(GG_ECRED), "credentials");
	/* NULL err is allowed */
	assert_int_equal(gg_err_set(NULL, GG_EIO, "x"), GG_EIO);
	/* long messages are truncated, never overflow */
	char big[3000];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	gg_err_set(&err, GG_EFAIL, "%s", big);
	assert_int_equal(strlen(err.msg), GG_ERR_MSG_MAX - 1);
	gg_err_clear(&err);
	assert_int_equal(err.code, 0);
}

/* Every kind maps to the documented exit code, and each kind is in the table once. */
static void test_err_table(void **state)
{
	(void)state;
	static const struct {
		int code;
		const char *kind;
		int exit_code;
	} want[] = {
		{GG_OK, "ok", 0},
		{GG_EFAIL, "failure", 1},
		{GG_EUSAGE, "usage", 2},
		{GG_ECRED, "credentials", 3},
		{GG_ENET, "network", 4},
		{GG_ENOTFOUND, "not-found", 5},
		{GG_EJOB, "job-failed", 6},
		{GG_EIO, "io", 1},
		{GG_ENOMEM, "memory", 1},
		{GG_EPROTO, "protocol", 4},
		{GG_EINTR, "interrupted", 130},
		{GG_EHOSTKEY, "host-key", 4},
		{GG_EDIFFER, "differs", 6},
		{-999, "failure", 1}, /* unknown codes are failures */
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		assert_int_equal(gg_err_exit_code(want[i].code), want[i].exit_code);
		assert_string_equal(gg_err_kind(want[i].code), want[i].kind);
	}
	size_t n;
	const struct gg_err_kind_row *t = gg_err_kinds(&n);
	assert_int_equal(n, sizeof want / sizeof want[0] - 1);
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++) {
			assert_int_not_equal(t[i].code, t[k].code);
			assert_string_not_equal(t[i].kind, t[k].kind);
		}
}

/* The kinds gridgpu(1) lists under each exit status of EXIT STATUS ("(kinds
 * network, protocol, host-key)"): the exit status of kind, or -1. */
static int man_exit_of(const char *man, const char *kind)
{
	const char *p = strstr(man, ".SH EXIT STATUS");
	const char *end = p ? strstr(p + 1, "\n.SH ") : NULL;
	int status = -1;
	for (; p && p < end; p = strchr(p, '\n')) {
		p++;
		if (strncmp(p, ".B ", 3) == 0 && p[3] >= '0' && p[3] <= '9')
			status = atoi(p + 3);
		const char *eol = strchr(p, '\n');
		const char *k = strstr(p, "(kind");
		if (!k || k > eol)
			k = strstr(p, "; kind");
		if (!k || k > eol || status < 0)
			continue;
		k = strchr(k + 1, ' ');
		size_t len = strlen(kind);
		for (; k && k < eol && *k != ')'; k += strcspn(k, " ,)"), k += strspn(k, " ,"))
			if (strncmp(k, kind, len) == 0 && strchr(" ,)", k[len]))
				return status;
	}
	return -1;
}

static void test_err_table_man(void **state)
{
	(void)state;
	char *man = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_file_read("man/gridgpu.1", 1 << 20, &man, NULL, &err), 0);
	size_t n;
	const struct gg_err_kind_row *t = gg_err_kinds(&n);
	for (size_t i = 0; i < n; i++) {
		if (man_exit_of(man, t[i].kind) != t[i].exit_code)
			fail_msg(
				"gridgpu(1) EXIT STATUS: kind %s documented with exit %d, table says %d",
				t[i].kind, man_exit_of(man, t[i].kind), t[i].exit_code);
	}
	free(man);
}

static void check_printable(const char *in, size_t len, const char *want)
{
	char *got = gg_str_printable(in, len);
	assert_non_null(got);
	assert_string_equal(got, want);
	for (const unsigned char *p = (const unsigned char *)got; *p; p++)
		assert_true(*p >= 0x20 && *p != 0x7f);
	free(got);
}
#define PRINTABLE(lit, want) check_printable(lit, sizeof lit - 1, want)

/* gg_str_unprintable(gg_str_printable(s)) is s, for every byte 1..255 in
 * every neighbourhood, and for what a hostile value holds. */
static void roundtrip(const char *s)
{
	struct gg_err err = {0};
	char *p = gg_str_printable(s, strlen(s));
	assert_non_null(p);
	char *u = gg_str_unprintable(p, &err);
	assert_non_null(u);
	assert_string_equal(u, s);
	free(u);
	free(p);
}

static void test_unprintable(void **state)
{
	(void)state;
	char b[4] = {0};
	for (int c = 1; c < 256; c++) {
		b[0] = 'a', b[1] = (char)c, b[2] = '\\';
		roundtrip(b);
	}
	roundtrip("root://h//x\xff\nb root://h//\x1b[2J\\x41\\\\\r\t\xc2\x9b\xe2\x80\xae");
	roundtrip("");
	assert_true(gg_str_utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80 \x1b"));
	assert_false(gg_str_utf8_valid("a\xff"));
	assert_false(gg_str_utf8_valid("\xc0\xaf"));
	/* a control character: C0 and DEL, not UTF-8 text nor a byte that is not UTF-8 */
	assert_false(gg_str_has_control("plain name.root caf\xc3\xa9 \xff"));
	assert_true(gg_str_has_control("a\nb"));
	assert_true(gg_str_has_control("\x1b[2J"));
	assert_true(gg_str_has_control("x\x7f"));
	assert_true(gg_str_has_control("tab\t"));
	assert_false(gg_str_has_control(""));
	assert_false(gg_str_utf8_valid("\xe2\x82"));
	/* what gg_str_printable never writes is refused, not guessed at */
	const char *bad[] = {"\\", "a\\q", "\\x", "\\x4", "\\xg0", "\\x00", "\\X41"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gg_err err = {0};
		assert_null(gg_str_unprintable(bad[i], &err));
		assert_int_equal(err.code, GG_EPROTO);
	}
}

/* gg_json_text keeps valid UTF-8 (controls and all: jansson escapes them),
 * escapes the rest; a NULL member is counted, never skipped in silence. */
static void test_json_text(void **state)
{
	(void)state;
	json_t *j = gg_json_text("caf\xc3\xa9 \x1b[2J\n");
	assert_string_equal(json_string_value(j), "caf\xc3\xa9 \x1b[2J\n");
	json_decref(j);
	j = gg_json_text("url\xff/\x1b\\");
	assert_string_equal(json_string_value(j), "url\\xff/\\x1b\\\\");
	json_decref(j);
	j = gg_json_textn("a\0b\xfe", 4);
	assert_string_equal(json_string_value(j), "a\\x00b\\xfe");
	json_decref(j);
	j = gg_json_text(NULL);
	assert_true(json_is_null(j));
	assert_true(gg_json_text_exact("\x1b"));
	assert_false(gg_json_text_exact("\xff"));
	/* members: set, or counted as lost */
	size_t lost = gg_json_losses();
	json_t *o = gg_json_object("a", gg_json_text("x\xff"), "n", json_integer(1), NULL);
	assert_int_equal(gg_json_losses(), lost);
	assert_string_equal(json_string_value(json_object_get(o, "a")), "x\\xff");
	assert_int_equal(gg_json_set(o, "b", NULL), GG_ENOMEM);
	assert_int_equal(gg_json_losses(), lost + 1);
	assert_int_equal(gg_json_set(o, "bad\xff", json_integer(1)), GG_ENOMEM);
	assert_int_equal(gg_json_append(o, json_integer(1)), GG_ENOMEM);
	assert_int_equal(gg_json_losses(), lost + 3);
	assert_int_equal(gg_json_set_text(o, "c", NULL), 0);
	assert_null(json_object_get(o, "c"));
	assert_int_equal(json_object_size(o), 2);
	json_decref(o);
}

static void test_printable(void **state)
{
	(void)state;
	/* kept: ASCII text, valid UTF-8 of 2, 3 and 4 bytes */
	PRINTABLE("session ready", "session ready");
	PRINTABLE("", "");
	PRINTABLE("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
	/* C0 controls, named and not */
	PRINTABLE("a\nb\rc\td", "a\\nb\\rc\\td");
	PRINTABLE("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07");
	PRINTABLE("\x01\x08\x0b\x0c\x1f", "\\x01\\x08\\x0b\\x0c\\x1f");
	PRINTABLE("nul\0byte", "nul\\x00byte");
	/* DEL, and the backslash itself (so an escape cannot be faked) */
	PRINTABLE("\x7f", "\\x7f");
	PRINTABLE("a\\x1b", "a\\\\x1b");
	/* C1 controls U+0080-U+009F (CSI is U+009B), encoded and raw */
	PRINTABLE("\xc2\x80\xc2\x9b\xc2\x9f", "\\xc2\\x80\\xc2\\x9b\\xc2\\x9f");
	PRINTABLE("\x9b"
		  "2J",
		  "\\x9b2J");
	/* invalid UTF-8: stray continuation, overlong, surrogate, > U+10FFFF,
	 * truncated, bytes that never occur */
	PRINTABLE("\x80", "\\x80");
	PRINTABLE("\xc0\xaf", "\\xc0\\xaf");
	PRINTABLE("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	PRINTABLE("\xed\xa0\x80", "\\xed\\xa0\\x80");
	PRINTABLE("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	PRINTABLE("\xe2\x82", "\\xe2\\x82");
	PRINTABLE("\xe2\x82x", "\\xe2\\x82x");
	PRINTABLE("\xfe\xff", "\\xfe\\xff");
	/* bidi controls and invisible format characters (Trojan Source): ALM,
	 * ZWSP..RLM, LS, PS, LRE..RLO, WJ..invisible plus, LRI..PDI, BOM; their
	 * neighbours are kept */
	PRINTABLE("\xd8\x9c", "\\xd8\\x9c");
	PRINTABLE("a\xe2\x80\x8b\xe2\x80\x8f"
		  "b",
		  "a\\xe2\\x80\\x8b\\xe2\\x80\\x8fb");
	PRINTABLE("\xe2\x80\xa8\xe2\x80\xa9", "\\xe2\\x80\\xa8\\xe2\\x80\\xa9");
	PRINTABLE("ok \xe2\x80\xaeSHA256:AAAA\xe2\x80\xac",
		  "ok \\xe2\\x80\\xaeSHA256:AAAA\\xe2\\x80\\xac");
	PRINTABLE("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xad",
		  "\\xe2\\x80\\xaa\\xe2\\x80\\xab\\xe2\\x80\\xad");
	PRINTABLE("\xe2\x81\xa0\xe2\x81\xa4", "\\xe2\\x81\\xa0\\xe2\\x81\\xa4");
	PRINTABLE("\xe2\x81\xa6\xe2\x81\xa9", "\\xe2\\x81\\xa6\\xe2\\x81\\xa9");
	PRINTABLE("\xef\xbb\xbfx", "\\xef\\xbb\\xbfx");
	PRINTABLE(
		"\xd8\x9b\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xef\xbb\xbe",
		"\xd8\x9b\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xef\xbb\xbe");
	/* a fake line of ours after a newline stays on the same line */
	PRINTABLE("x\r\ngridgpu: session ready, host key SHA256:AAAA (pinned)",
		  "x\\r\\ngridgpu: session ready, host key SHA256:AAAA (pinned)");
}

static void test_strings(void **state)
{
	(void)state;
	assert_int_equal(gg_edit_distance("site", "sitte"), 1);
	assert_int_equal(gg_edit_distance("", "abc"), 3);
	assert_int_equal(gg_edit_distance("kitten", "sitting"), 3);
	/* a transposition of neighbours is one edit */
	assert_int_equal(gg_edit_distance("lsit", "list"), 1);
	assert_int_equal(gg_edit_distance("lsit", "site"), 2);
	assert_int_equal(gg_edit_distance("ab", "ba"), 1);
	assert_int_equal(gg_edit_distance("ca", "abc"), 3); /* OSA, not unrestricted */
	assert_int_equal(gg_edit_distance("abc", ""), 3);
	assert_int_equal(gg_edit_distance("same", "same"), 0);
	char s[] = " \t hello world\n ";
	assert_string_equal(gg_strstrip(s), "hello world");
	char e[] = "   ";
	assert_string_equal(gg_strstrip(e), "");
	char *p = gg_strdup_printf("%s-%d", "a", 7);
	assert_string_equal(p, "a-7");
	free(p);
}

static void test_atomic_write(void **state)
{
	(void)state;
	char path[128], *data = NULL;
	size_t len;
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/f", tmpdir);
	assert_int_equal(gg_file_write_atomic(path, "one", 3, 0600, &err), 0);
	assert_int_equal(gg_file_write_atomic(path, "second", 6, 0640, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(gg_file_read(path, 1 << 20, &data, &len, &err), 0);
	assert_int_equal(len, 6);
	assert_string_equal(data, "second");
	free(data);
	/* too large */
	assert_int_equal(gg_file_read(path, 3, &data, &len, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "larger than"));
	/* missing */
	snprintf(path, sizeof path, "%s/nosuch", tmpdir);
	assert_int_equal(gg_file_read(path, 10, &data, &len, &err), GG_ENOTFOUND);
	/* a directory that cannot be written: nothing is left behind */
	char ro[128];
	snprintf(ro, sizeof ro, "%s/ro", tmpdir);
	assert_int_equal(mkdir(ro, 0500), 0);
	snprintf(path, sizeof path, "%s/f", ro);
	if (geteuid() != 0) { /* root ignores the mode */
		assert_int_equal(gg_file_write_atomic(path, "x", 1, 0600, &err), GG_EIO);
		assert_non_null(strstr(err.msg, "writing '"));
	}
	/* a path whose directory does not exist */
	snprintf(path, sizeof path, "%s/no/such/f", tmpdir);
	assert_int_equal(gg_file_write_atomic(path, "x", 1, 0600, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "No such file"));
	/* the temp file's name taken by another program: that file is left alone */
	if (!squat_unnamed_works(tmpdir))
		return;
	snprintf(path, sizeof path, "%s/g", tmpdir);
	squat = 3;
	assert_int_equal(gg_file_write_atomic(path, "mine", 4, 0600, &err), 0);
	assert_int_equal(squat_intact(), 3);
	assert_int_equal(gg_file_read(path, 10, &data, &len, &err), 0);
	assert_string_equal(data, "mine");
	free(data);
	squat = 1000;
	assert_int_equal(gg_file_write_atomic(path, "next", 4, 0600, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "/g': 16 temporary names beside it were taken"));
	assert_int_equal(squat_intact(), 16);
	assert_int_equal(gg_file_read(path, 10, &data, &len, &err), 0);
	assert_string_equal(data, "mine"); /* untouched */
	free(data);
}

static void test_private_and_shred(void **state)
{
	(void)state;
	char path[128];
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/key", tmpdir);
	assert_int_equal(gg_file_write_atomic(path, "secret", 6, 0644, &err), 0);
	assert_int_equal(gg_file_check_private(path, "key", &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "chmod 600"));
	chmod(path, 0600);
	assert_int_equal(gg_file_check_private(path, "key", &err), 0);
	assert_int_equal(gg_file_check_private(tmpdir, "key", &err), GG_ECRED);
	assert_int_equal(gg_file_shred(path, &err), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(gg_file_shred(path, &err), GG_ENOTFOUND);
}

static void test_mkdir_p(void **state)
{
	(void)state;
	char path[128];
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/a/b/c", tmpdir);
	assert_int_equal(gg_mkdir_p(path, 0700, &err), 0);
	assert_int_equal(gg_mkdir_p(path, 0700, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	char file[140];
	snprintf(file, sizeof file, "%s/file", tmpdir);
	gg_file_write_atomic(file, "", 0, 0600, &err);
	snprintf(path, sizeof path, "%s/file/x", tmpdir);
	assert_int_equal(gg_mkdir_p(path, 0700, &err), GG_EIO);
}

/* A cache's clean-up: files older than the age go, except the one kept; newer ones,
 * a subdirectory and what is under it stay. */
static void test_dir_prune(void **state)
{
	(void)state;
	char dir[128], path[200];
	struct gg_err err = {0};
	snprintf(dir, sizeof dir, "%s/cache", tmpdir);
	snprintf(path, sizeof path, "%s/sub", dir);
	assert_int_equal(gg_mkdir_p(path, 0700, &err), 0);
	const char *names[] = {"old", "kept", "new", "sub/old"};
	int64_t now = 2000000000;
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		assert_int_equal(gg_file_write_atomic(path, "x", 1, 0600, &err), 0);
		int64_t age = strcmp(names[i], "new") ? 100 : 10;
		struct timespec ts[2] = {{.tv_sec = (time_t)(now - age)},
					 {.tv_sec = (time_t)(now - age)}};
		assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	}
	snprintf(path, sizeof path, "%s/sub", dir);
	struct timespec ts[2] = {{.tv_sec = (time_t)(now - 100)}, {.tv_sec = (time_t)(now - 100)}};
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(gg_dir_prune(dir, 50, now, "kept"), 1);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		assert_int_equal(access(path, F_OK) == 0, strcmp(names[i], "old") != 0);
	}
	assert_int_equal(gg_dir_prune(dir, 5, now, NULL), 2); /* kept, new */
	assert_int_equal(gg_dir_prune("/nonexistent/dir", 5, now, NULL), 0);
}

static void test_xdg(void **state)
{
	(void)state;
	char *p;
	struct gg_err err = {0};
	setenv("XDG_CONFIG_HOME", "/x/conf", 1);
	assert_int_equal(gg_xdg_dir(GG_XDG_CONFIG, &p, &err), 0);
	assert_string_equal(p, "/x/conf/gridgpu");
	free(p);
	setenv("XDG_CONFIG_HOME", "relative", 1); /* ignored, per the spec */
	setenv("HOME", "/home/u", 1);
	assert_int_equal(gg_xdg_dir(GG_XDG_CONFIG, &p, &err), 0);
	assert_string_equal(p, "/home/u/.config/gridgpu");
	free(p);
	unsetenv("XDG_STATE_HOME");
	assert_int_equal(gg_xdg_dir(GG_XDG_STATE, &p, &err), 0);
	assert_string_equal(p, "/home/u/.local/state/gridgpu");
	free(p);
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(gg_xdg_dir(GG_XDG_RUNTIME, &p, &err), 0);
	assert_string_equal(p, "/home/u/.local/state/gridgpu");
	free(p);
}

static void write_file(const char *path, const char *text)
{
	struct gg_err err = {0};
	assert_int_equal(gg_file_write_atomic(path, text, strlen(text), 0600, &err), 0);
}

/* allow_from entries: what sshd takes as an address or a CIDR range, in its
 * plain form; nothing that could carry other sshd_config syntax. */
static void test_allow_from(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *good[] = {"192.0.2.10",    "192.0.2.0/24", "0.0.0.0/0", "10.0.0.0/8",
			      "2001:db8::/32", "2001:db8::1",  "::1",       "::/0",
			      "fd00::/128",    "127.0.0.1/32"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_int_equal(gg_addr_range_check(good[i], &err), 0);
	const char *bad[] = {"",
			     "/24",
			     "192.0.2.0/",
			     "192.0.2.0/33",
			     "::/129",
			     "192.0.2.0/024",
			     "192.0.2.0/+8",
			     "192.0.2.0/8/8",
			     "gw.example",
			     "192.0.2.*",
			     "!192.0.2.1",
			     "192.0.2.1 ",
			     " 192.0.2.1",
			     "192.0.2.1\nMatch all",
			     "192.0.2.1,10.0.0.1",
			     "fe80::1%eth0",
			     "::ffff:192.0.2.1",
			     "010.0.0.1",
			     "192.0.2",
			     "1.2.3.4.5",
			     "2001:db8::/32\"",
			     "2001:db8:::1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err.msg[0] = '\0';
		assert_int_equal(gg_addr_range_check(bad[i], &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, bad[i])); /* the entry is named */
	}
	/* bits past the mask: sshd would not start; the network is suggested */
	assert_int_equal(gg_addr_range_check("10.1.2.3/8", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 10.0.0.0/8?"));
	assert_int_equal(gg_addr_range_check("2001:db8::1/32", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 2001:db8::/32?"));
	assert_int_equal(gg_addr_range_check("192.0.2.129/25", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "did you mean 192.0.2.128/25?"));

	/* a list: all or nothing */
	struct gg_site s = {0};
	assert_int_equal(gg_site_allow_add(&s, "192.0.2.10,2001:db8::/32", &err), 0);
	assert_int_equal(s.nallow, 2);
	assert_string_equal(s.allow_from[1], "2001:db8::/32");
	const char *badlists[] = {"",
				  ",",
				  "192.0.2.1,",
				  ",192.0.2.1",
				  "192.0.2.1,,192.0.2.2",
				  "192.0.2.1, 192.0.2.2",
				  "192.0.2.1,x"};
	for (size_t i = 0; i < sizeof badlists / sizeof badlists[0]; i++)
		assert_int_equal(gg_site_allow_add(&s, badlists[i], &err), GG_EUSAGE);
	assert_int_equal(s.nallow, 2);
	char many[GG_MAX_ALLOW * 16] = "";
	size_t n = 0;
	for (int i = 0; i < GG_MAX_ALLOW - 1; i++)
		n += (size_t)snprintf(many + n, sizeof many - n, "%s10.0.0.%d", i ? "," : "", i);
	assert_int_equal(gg_site_allow_add(&s, many, &err), GG_EUSAGE); /* 2 + 31 */
	assert_non_null(strstr(err.msg, "more than 32"));
	assert_int_equal(s.nallow, 2);
	assert_int_equal(gg_site_allow_add(&s, many + strlen("10.0.0.0,"), &err), 0);
	assert_int_equal(s.nallow, GG_MAX_ALLOW);
	gg_site_clear(&s);
}

static void test_config_allow_from(void **state)
{
	(void)state;
	char path[128];
	struct gg_err err = {0};
	struct gg_config *cfg;
	snprintf(path, sizeof path, "%s/config-allow", tmpdir);
	/* repeatable, and a line may hold a list */
	write_file(path, "[site a]\nce = https://a/arex\nallow_from = 192.0.2.10\n"
			 "jump = u@gw\nallow_from = 198.51.100.0/24,2001:db8::/32\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), 0);
	const struct gg_site *s = gg_config_site(cfg, "a");
	assert_int_equal(s->nallow, 3);
	assert_string_equal(s->allow_from[2], "2001:db8::/32");
	/* saved one a line, read back the same; copied with the site */
	char *text = gg_config_format(cfg);
	assert_non_null(strstr(text, "allow_from = 192.0.2.10\nallow_from = 198.51.100.0/24\n"
				     "allow_from = 2001:db8::/32\n"));
	write_file(path, text);
	free(text);
	struct gg_site copy;
	assert_int_equal(gg_site_copy(&copy, s, &err), 0);
	assert_int_equal(copy.nallow, 3);
	assert_string_equal(copy.allow_from[0], "192.0.2.10");
	/* a site made by a program: checked before it is kept */
	char *evil = copy.allow_from[1];
	copy.allow_from[1] = (char *)"10.0.0.1\nMatch all";
	assert_int_equal(gg_config_set_site(cfg, &copy, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "allow_from"));
	copy.allow_from[1] = evil;
	gg_site_clear(&copy);
	gg_config_free(cfg);
	assert_int_equal(gg_config_load(path, &cfg, &err), 0);
	assert_int_equal(gg_config_site(cfg, "a")->nallow, 3);
	gg_config_free(cfg);
	/* a bad entry fails the load, naming the line and the entry */
	write_file(path, "[site a]\nce = https://a/arex\nallow_from = 192.0.2.10 192.0.2.11\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 3"));
	assert_non_null(strstr(err.msg, "allow_from: '192.0.2.10 192.0.2.11'"));
	write_file(path, "[site a]\nce = https://a/arex\nallow_from = *\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
}

/* NULL: the user's configuration ($XDG_CONFIG_HOME/gridgpu/config), as
 * gg_store_open(NULL) is the user's store. The regression: NULL crashed. */
static void test_config_default(void **state)
{
	(void)state;
	char home[128], path[160];
	struct gg_err err = {0};
	struct gg_config *cfg = NULL;
	snprintf(home, sizeof home, "%s/xdg-config", tmpdir);
	snprintf(path, sizeof path, "%s/gridgpu", home);
	assert_int_equal(mkdir(home, 0700) == 0 || errno == EEXIST, 1);
	assert_int_equal(mkdir(path, 0700) == 0 || errno == EEXIST, 1);
	strcat(path, "/config");
	write_file(path, "[site d]\nce = https://d/arex\n");
	char *old = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
	setenv("XDG_CONFIG_HOME", home, 1);
	int rc = gg_config_load(NULL, &cfg, &err);
	old ? setenv("XDG_CONFIG_HOME", old, 1) : unsetenv("XDG_CONFIG_HOME");
	free(old);
	assert_int_equal(rc, 0);
	assert_string_equal(cfg->path, path);
	assert_non_null(gg_config_site(cfg, "d"));
	gg_config_free(cfg);
}

static void test_config(void **state)
{
	(void)state;
	char path[128];
	struct gg_err err = {0};
	struct gg_config *cfg;
	snprintf(path, sizeof path, "%s/config", tmpdir);
	/* missing file: empty config */
	assert_int_equal(gg_config_load(path, &cfg, &err), 0);
	assert_int_equal(cfg->nsites, 0);
	gg_config_free(cfg);

	write_file(path, "# comment\n[gridgpu]\nsite = gla\n\n[site gla]\n"
			 "ce = https://ce.gla.example/arex\njump = u@gw1\njump = u@gw2:2222\n"
			 "gpu_queue = gpu\nidle_limit = 2h\nconnect_deadline = 20m\n"
			 "bind = /scratch\nbind = /data/atlas:/atlas\n"
			 "[site lan]\nce = https://lan/arex\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), 0);
	assert_int_equal(cfg->nsites, 2);
	assert_string_equal(cfg->default_site, "gla");
	const struct gg_site *s = gg_config_site(cfg, "gla");
	assert_non_null(s);
	assert_int_equal(s->njumps, 2);
	assert_string_equal(s->jumps[1], "u@gw2:2222");
	assert_string_equal(s->gpu_queue, "gpu");
	assert_int_equal(s->idle_limit, 7200);
	assert_int_equal(s->connect_deadline, 1200);
	assert_null(gg_config_site(cfg, "nosuch"));

	/* format → load round trip */
	char *text = gg_config_format(cfg);
	assert_non_null(text);
	char path2[140];
	snprintf(path2, sizeof path2, "%s/config2", tmpdir);
	write_file(path2, text);
	free(text);
	struct gg_config *cfg2;
	assert_int_equal(gg_config_load(path2, &cfg2, &err), 0);
	assert_int_equal(cfg2->nsites, 2);
	assert_int_equal(gg_config_site(cfg2, "gla")->idle_limit, 7200);
	assert_string_equal(gg_config_site(cfg2, "gla")->jumps[0], "u@gw1");
	/* bind is a list too, kept in order */
	assert_int_equal(gg_config_site(cfg2, "gla")->nbinds, 2);
	assert_string_equal(gg_config_site(cfg2, "gla")->binds[0], "/scratch");
	assert_string_equal(gg_config_site(cfg2, "gla")->binds[1], "/data/atlas:/atlas");
	assert_int_equal(gg_config_site(cfg2, "lan")->nbinds, 0);

	/* set, replace, remove, save */
	struct gg_site ns = {.name = (char *)"new", .ce = (char *)"https://new/arex"};
	assert_int_equal(gg_config_set_site(cfg2, &ns, &err), 0);
	ns.ce = (char *)"https://new2/arex";
	assert_int_equal(gg_config_set_site(cfg2, &ns, &err), 0);
	assert_int_equal(cfg2->nsites, 3);
	assert_string_equal(gg_config_site(cfg2, "new")->ce, "https://new2/arex");
	assert_int_equal(gg_config_remove_site(cfg2, "lan"), 1);
	assert_int_equal(gg_config_remove_site(cfg2, "lan"), 0);
	assert_int_equal(gg_config_save(cfg2, &err), 0);
	gg_config_free(cfg2);
	assert_int_equal(gg_config_load(path2, &cfg2, &err), 0);
	assert_int_equal(cfg2->nsites, 2);
	assert_null(gg_config_site(cfg2, "lan"));
	gg_config_free(cfg2);
	ns.name = (char *)"../bad";
	assert_int_equal(gg_config_set_site(cfg, &ns, &err), GG_EUSAGE);
	gg_config_free(cfg);

	/* errors name the line */
	write_file(path, "[site a]\nce = x\nnope = 1\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 3"));
	assert_non_null(strstr(err.msg, "unknown key 'nope'"));
	/* a default site that is not a site name (it would not read back the same) */
	write_file(path, "[gridgpu]\nsite =;;; gla\n[site gla]\nce = x\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 2"));
	assert_non_null(strstr(err.msg, "invalid site name"));
	write_file(path, "[other]\nx = 1\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "unknown section"));
	write_file(path, "[site a]\nidle_limit = forever\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "invalid duration"));
	/* a bare number is refused, naming the key, not read as seconds */
	write_file(path, "[site a]\nce = x\nidle_limit = 7200\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "idle_limit: '7200' needs a unit"));
	write_file(path, "[site a\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 1"));
	write_file(path, "[site a]\nuser = x\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "no 'ce = URL'"));
	/* "user" of older versions: read and dropped (never used), not written back */
	write_file(path, "[site a]\nce = https://ce/arex\nuser = x\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), 0);
	char *fmt = gg_config_format(cfg);
	assert_non_null(fmt);
	assert_null(strstr(fmt, "user"));
	assert_non_null(strstr(fmt, "ce = https://ce/arex"));
	free(fmt);
	gg_config_free(cfg);
	cfg = NULL;
	write_file(path, "[site ../x]\nce = y\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	char jumps[512] = "[site a]\n";
	for (int i = 0; i <= GG_MAX_JUMPS; i++)
		strcat(jumps, "jump = u@h\n");
	write_file(path, jumps);
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "jump hosts"));
	char binds[1024] = "[site a]\nce = x\n";
	for (int i = 0; i <= GG_MAX_BINDS; i++)
		strcat(binds, "bind = /b\n");
	write_file(path, binds);
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "more than 16 bind paths"));
	/* a section or a key given twice is refused, with its line ('jump' is a list) */
	write_file(path, "[site a]\nce = x\njump = u@h\njump = u@i\n[site b]\nce = y\n"
			 "[site  a]\nuser = z\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 8"));
	assert_non_null(strstr(err.msg, "section [site a] given a second time"));
	write_file(path, "[site a]\nce = x\nqueue = q\nce = y\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 4"));
	assert_non_null(strstr(err.msg, "'ce' given a second time"));
	write_file(path, "[gridgpu]\nsite = a\nsite = b\n[site a]\nce = x\n");
	assert_int_equal(gg_config_load(path, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "line 3"));
	/* not a regular file: refused, not read as empty or forever */
	assert_int_equal(gg_config_load(tmpdir, &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "not a regular file (a directory)"));
	assert_int_equal(gg_config_load("/dev/zero", &cfg, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "not a regular file"));
	char fifo[160];
	snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(gg_config_load(fifo, &cfg, &err), GG_EUSAGE);
	unlink(fifo);
}

static void test_config_values(void **state)
{
	(void)state;
	assert_true(gg_config_value_ok("/home/u/.ssh/id_ed25519"));
	assert_true(gg_config_value_ok("a;b"));
	assert_false(gg_config_value_ok(";x"));
	assert_false(gg_config_value_ok("#x"));
	assert_false(gg_config_value_ok("a ;b"));
	assert_false(gg_config_value_ok(" a"));
	assert_false(gg_config_value_ok("a "));
	assert_false(gg_config_value_ok("a\nb"));
	char big[GG_CONFIG_VALUE_MAX + 2];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_false(gg_config_value_ok(big));
	big[GG_CONFIG_VALUE_MAX] = '\0';
	assert_true(gg_config_value_ok(big));
	/* what is accepted survives a save and a load */
	struct gg_config cfg = {.path = NULL};
	struct gg_err err = {0};
	struct gg_site s = {.name = (char *)"a", .ce = (char *)"https://x/arex", .identity = big};
	assert_int_equal(gg_config_set_site(&cfg, &s, &err), 0);
	s.identity = (char *)";oops";
	assert_int_equal(gg_config_set_site(&cfg, &s, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "cannot be stored"));
	assert_null(strstr(err.msg, "script"));
	/* a command too long for a line: the way on is a script */
	char longer[GG_CONFIG_VALUE_MAX + 2];
	memset(longer, 'x', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	s.identity = big;
	s.token_command = longer;
	assert_int_equal(gg_config_set_site(&cfg, &s, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "token_command"));
	assert_non_null(strstr(err.msg, "put a longer command in a script"));
	s.token_command = NULL;
	char path[128];
	snprintf(path, sizeof path, "%s/values.conf", tmpdir);
	cfg.path = path;
	assert_int_equal(gg_config_save(&cfg, &err), 0);
	struct gg_config *back;
	assert_int_equal(gg_config_load(path, &back, &err), 0);
	assert_string_equal(gg_config_site(back, "a")->identity, big);
	gg_config_free(back);
	for (size_t i = 0; i < cfg.nsites; i++)
		gg_site_clear(&cfg.sites[i]);
	free(cfg.sites);
}

/* A site profile's values are plain text: ESC (a terminal escape), another C0
 * control, DEL and a C1 control (CSI as UTF-8) are refused, by site add/set
 * (gg_config_set_site) and in a file edited by hand (gg_config_load), with
 * an error naming the key; other text, UTF-8 or not, is taken. */
static void test_config_controls(void **state)
{
	(void)state;
	static const char *const bad[] = {"https://x/\x1b[2J", "q\x07", "a\tb", "a\x7f",
					  "a\xc2\x9b[2J"};
	struct gg_config cfg = {.path = NULL};
	struct gg_err err = {0};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gg_site s = {.name = (char *)"a", .ce = (char *)"https://x/arex"};
		s.queue = (char *)bad[i];
		assert_int_equal(gg_config_set_site(&cfg, &s, &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "queue: the value has a control character (U+00"));
		assert_null(strchr(err.msg, 0x1b));
		s = (struct gg_site){.name = (char *)"a", .jumps = {(char *)bad[i]}, .njumps = 1};
		assert_int_equal(gg_config_set_site(&cfg, &s, &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "jump: the value has a control character"));
		/* the same value in a file */
		char path[128], text[256];
		snprintf(path, sizeof path, "%s/controls.conf", tmpdir);
		snprintf(text, sizeof text, "[site a]\nce = https://x/arex\nimage = %s\n", bad[i]);
		write_file(path, text);
		struct gg_config *back = NULL;
		assert_int_equal(gg_config_load(path, &back, &err), GG_EUSAGE);
		assert_null(back);
		assert_non_null(strstr(err.msg, "image: the value has a control character"));
	}
	assert_int_equal(cfg.nsites, 0);
	struct gg_site s = {.name = (char *)"a", .ce = (char *)"https://x/caf\xc3\xa9\xff"};
	assert_int_equal(gg_config_set_site(&cfg, &s, &err), 0);
	gg_site_clear(&cfg.sites[0]);
	free(cfg.sites);
}

/* gg_unix_connect: a listening socket answers; a path with none, a plain file
 * or a name too long for a socket does not. */
static void test_unix_connect(void **state)
{
	(void)state;
	char path[128], file[128], longp[200];
	snprintf(path, sizeof path, "%s/sock", tmpdir);
	snprintf(file, sizeof file, "%s/plain", tmpdir);
	memset(longp, 'x', sizeof longp - 1);
	longp[sizeof longp - 1] = 0;
	assert_int_equal(gg_unix_connect(path), -1);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(l, 1), 0);
	int fd = gg_unix_connect(path);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(l);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(gg_unix_connect(file), -1);
	assert_int_equal(gg_unix_connect(longp), -1);
	assert_int_equal(gg_unix_connect(NULL), -1);
}

static void test_wipe(void **state)
{
	(void)state;
	char *p = malloc(16);
	assert_non_null(p);
	memcpy(p, "secret-secret-1", 16);
	char *q = gg_wipe_realloc(p, 8); /* smaller: the same block */
	assert_ptr_equal(q, p);
	q = gg_wipe_realloc(q, 1 << 20); /* larger: moved, contents kept */
	assert_non_null(q);
	assert_memory_equal(q, "secret-secret-1", 16);
	assert_null(gg_wipe_realloc(q, 0)); /* 0: freed */
	char *n = gg_wipe_realloc(NULL, 32);
	assert_non_null(n);
	gg_wipe_free(n);
	gg_wipe_free(NULL);
}

static void test_site_name(void **state)
{
	(void)state;
	assert_true(gg_site_name_valid("glasgow"));
	assert_true(gg_site_name_valid("uk.gla-01_x"));
	assert_false(gg_site_name_valid(""));
	assert_false(gg_site_name_valid("-x"));
	assert_false(gg_site_name_valid("a b"));
	assert_false(gg_site_name_valid("a/b"));
	assert_false(gg_site_name_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_parse),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_err),
		cmocka_unit_test(test_parse_unit),
		cmocka_unit_test(test_err_table),
		cmocka_unit_test(test_err_table_man),
		cmocka_unit_test(test_printable),
		cmocka_unit_test(test_unprintable),
		cmocka_unit_test(test_json_text),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_private_and_shred),
		cmocka_unit_test(test_mkdir_p),
		cmocka_unit_test(test_dir_prune),
		cmocka_unit_test(test_xdg),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_allow_from),
		cmocka_unit_test(test_config_allow_from),
		cmocka_unit_test(test_config_default),
		cmocka_unit_test(test_config_values),
		cmocka_unit_test(test_config_controls),
		cmocka_unit_test(test_site_name),
		cmocka_unit_test(test_wipe),
		cmocka_unit_test(test_unix_connect),
	};
	return cmocka_run_group_tests_name("core", tests, setup_tmp, teardown_tmp);
}
