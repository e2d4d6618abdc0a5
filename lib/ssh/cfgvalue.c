/* Values written into the generated ssh config: one check and one quoting for
 * all of them, and the jump host form "[user@]host[:port]". */
#include "ssh/ssh.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 1000 /* ssh reads config lines of 1 KiB and more: stay below */

/* The first byte ssh would read otherwise than written, or NULL. */
static const char *path_problem(const char *v, size_t *at)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		*at = (size_t)((const char *)p - v);
		if (*p == '\n')
			return "a newline";
		if (*p == '\r')
			return "a carriage return";
		if (*p == '\t')
			return "a tab";
		if (*p < 0x20 || *p == 0x7f)
			return "a control character";
		if (*p == '"')
			return "a '\"'";
		if (*p == '\\')
			return "a '\\'"; /* an escape for some ssh versions, not for others */
		if (p[0] == '$' && p[1] == '{')
			return "'${' (ssh would expand an environment variable)";
	}
	return NULL;
}

static int name_char(int c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '-';
}

/* Letters, digits, '.', '_', '-', starting with a letter, digit or '_'. */
static int plain_name(const char *v, size_t max)
{
	if (!isalnum((unsigned char)v[0]) && v[0] != '_')
		return 0;
	size_t n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
	return v[n] == '\0' && n <= max;
}

/* An IPv6 address, with a zone ("fe80::1%eth0") or not. */
static int ipv6_addr(const char *v)
{
	char buf[INET6_ADDRSTRLEN + 1];
	const char *pct = strchr(v, '%');
	size_t n = pct ? (size_t)(pct - v) : strlen(v);
	if (n == 0 || n >= sizeof buf)
		return 0;
	memcpy(buf, v, n);
	buf[n] = '\0';
	unsigned char a[16];
	if (inet_pton(AF_INET6, buf, a) != 1)
		return 0;
	if (!pct)
		return 1;
	for (const char *z = pct + 1; *z; z++)
		if (!name_char((unsigned char)*z))
			return 0;
	return pct[1] != '\0';
}

static int host_ok(const char *v)
{
	return strchr(v, ':') ? ipv6_addr(v) : plain_name(v, 253);
}

/* v with every '%' written "%%", in double quotes when quote. */
static char *escaped(const char *v, int quote)
{
	size_t n = strlen(v), pct = 0;
	for (const char *p = v; *p; p++)
		pct += *p == '%';
	char *out = malloc(n + pct + 3), *o = out;
	if (!out)
		return NULL;
	if (quote)
		*o++ = '"';
	for (const char *p = v; *p; p++) {
		*o++ = *p;
		if (*p == '%')
			*o++ = '%';
	}
	if (quote)
		*o++ = '"';
	*o = '\0';
	return out;
}

static int refuse(struct gg_err *err, const char *field, const char *what, const char *fix)
{
	return gg_err_set(err, GG_EUSAGE, "%s: %s cannot be written to the ssh config: %s", field,
			  what, fix);
}

int gg_ssh_cfg_check(const char *field, const char *v, enum gg_sshv kind, struct gg_err *err)
{
	size_t at = 0;
	const char *bad;
	char what[96];
	int rc;
	if (!v || !*v)
		return refuse(err, field, "an empty value", "give a value");
	switch (kind) {
	case GG_SSHV_PATH:
		if ((bad = path_problem(v, &at))) {
			snprintf(what, sizeof what, "%s (byte %zu)", bad, at + 1);
			return refuse(err, field, what, "use a path without it");
		}
		if (strlen(v) > PATH_MAX_LEN)
			return refuse(err, field, "a path this long", "use a shorter path");
		return 0;
	case GG_SSHV_INCLUDE:
		if ((rc = gg_ssh_cfg_check(field, v, GG_SSHV_PATH, err)) < 0)
			return rc;
		if (v[0] != '/' || strpbrk(v, "%*?["))
			return refuse(err, field, "this Include path",
				      "use an absolute path without '%', '*', '?' or '['");
		return 0;
	case GG_SSHV_HOST:
		if (!host_ok(v))
			return refuse(err, field, "this host",
				      "give a host name (letters, digits, '.', '-', '_') or an IP "
				      "address");
		return 0;
	case GG_SSHV_USER:
		if (!plain_name(v, 64))
			return refuse(err, field, "this user name",
				      "use letters, digits, '.', '_', '-' (a letter, digit or '_' "
				      "first)");
		return 0;
	case GG_SSHV_ALIAS:
		if (!plain_name(v, 200))
			return refuse(err, field, "this name",
				      "use letters, digits, '.', '_', '-'");
		return 0;
	}
	return refuse(err, field, "a value of unknown kind", "report this bug");
}

char *gg_ssh_cfg_value(const char *field, const char *v, enum gg_sshv kind, struct gg_err *err)
{
	if (gg_ssh_cfg_check(field, v, kind, err) < 0)
		return NULL;
	char *out = kind == GG_SSHV_INCLUDE ? gg_strdup_printf("\"%s\"", v)
					    : escaped(v, kind == GG_SSHV_PATH);
	if (!out)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	return out;
}

/* "[::1]:22", "[::1]", "::1" (no port: more than one ':'), "host:22", "host". */
static int split_host_port(const char *h, char *host, size_t hlen, int *port)
{
	const char *end = h + strlen(h), *colon = NULL;
	if (h[0] == '[') {
		const char *rb = strchr(h, ']');
		if (!rb || (rb[1] && rb[1] != ':'))
			return -1;
		colon = rb[1] ? rb + 1 : NULL;
		h++;
		end = rb;
	} else if ((colon = strchr(h, ':')) && strchr(colon + 1, ':')) {
		colon = NULL; /* a bare IPv6 address */
	} else if (colon) {
		end = colon;
	}
	if ((size_t)(end - h) >= hlen)
		return -1;
	snprintf(host, hlen, "%.*s", (int)(end - h), h);
	*port = 0;
	if (colon) {
		char *e;
		long p = strtol(colon + 1, &e, 10);
		if (!isdigit((unsigned char)colon[1]) || *e || p < 1 || p > 65535)
			return -1;
		*port = (int)p;
	}
	return 0;
}

int gg_ssh_jump_parse(const char *j, struct gg_ssh_jump *out, struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	const char *at = strchr(j, '@');
	const char *h = at ? at + 1 : j;
	if (at && (size_t)(at - j) >= sizeof out->user)
		return refuse(err, "jump host", "a user name this long", "use a shorter one");
	if (at)
		snprintf(out->user, sizeof out->user, "%.*s", (int)(at - j), j);
	if (split_host_port(h, out->host, sizeof out->host, &out->port) < 0)
		return gg_err_set(err, GG_EUSAGE,
				  "jump host: expected [USER@]HOST[:PORT] (an IPv6 address as "
				  "[ADDR]:PORT), port 1 to 65535");
	int rc;
	if (at && (rc = gg_ssh_cfg_check("jump host user", out->user, GG_SSHV_USER, err)) < 0)
		return rc;
	return gg_ssh_cfg_check("jump host", out->host, GG_SSHV_HOST, err);
}
