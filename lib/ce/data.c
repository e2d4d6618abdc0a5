/* Storage URLs in job descriptions: the forms a CE's data staging takes
 * (root://, davs://, https://), --input URL[:NAME] and --output NAME=URL,
 * reading through the site's XCache, the HTTPS form a client fetches an
 * output by, and what A-REX says of the staging (how far it got, which file
 * failed). */
#include "ce/ce.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *prefix;
	enum gg_url_scheme scheme;
} schemes[] = {
	{"root://", GG_URL_ROOT},
	{"xroot://", GG_URL_ROOT},
	{"davs://", GG_URL_DAVS},
	{"https://", GG_URL_HTTPS},
};

/* Schemes people name that a CE's staging does not take (here), with why. */
static const char *unstageable(const char *url)
{
	static const struct {
		const char *prefix, *why;
	} no[] = {
		{"file:", "a local file: give its path, the client uploads it"},
		{"http://", "plain http sends the credential unencrypted: use https:// or davs://"},
		{"dav://", "plain http sends the credential unencrypted: use davs://"},
		{"gsiftp://", "GridFTP is retired at WLCG sites: use root:// or davs://"},
		{"srm://", "SRM is retired at WLCG sites: use root:// or davs://"},
		{"s3://", "the CE has no S3 credential: use root:// or davs://"},
	};
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		if (!strncasecmp(url, no[i].prefix, strlen(no[i].prefix)))
			return no[i].why;
	return NULL;
}

int gg_data_url_is_remote(const char *s)
{
	return s && strstr(s, "://") != NULL;
}

/* HOST[:PORT] of u (the authority, ending at the first '/'). */
static int parse_authority(const char *url, const char *a, size_t n, struct gg_data_url *u,
			   struct gg_err *err)
{
	const char *colon = memchr(a, ':', n);
	size_t hl = colon ? (size_t)(colon - a) : n;
	if (a[0] == '[' || memchr(a, '@', n))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': user names and IPv6 literals are not supported here", url);
	if (hl == 0 || hl >= sizeof u->host)
		return gg_err_set(err, GG_EUSAGE, "'%s': no host name", url);
	for (size_t i = 0; i < hl; i++)
		if (!isalnum((unsigned char)a[i]) && a[i] != '.' && a[i] != '-')
			return gg_err_set(err, GG_EUSAGE, "'%s': bad host name", url);
	memcpy(u->host, a, hl);
	u->host[hl] = '\0';
	if (!colon)
		return 0;
	long port = 0;
	size_t pl = n - hl - 1;
	for (size_t i = 0; i < pl; i++) {
		if (!isdigit((unsigned char)colon[1 + i]) || port > 65535)
			return gg_err_set(err, GG_EUSAGE, "'%s': bad port", url);
		port = port * 10 + (colon[1 + i] - '0');
	}
	if (pl == 0 || port < 1 || port > 65535)
		return gg_err_set(err, GG_EUSAGE, "'%s': bad port", url);
	u->port = (int)port;
	return 0;
}

/* The path: no white space, control characters, quotes or ';' (A-REX reads
 * ';' as the start of URL options), not a directory. */
static int check_path(const char *url, const char *p, struct gg_err *err)
{
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c <= 0x20 || *c == 0x7f || *c == '"' || *c == '\'' || *c == ';' || *c == '\\')
			return gg_err_set(err, GG_EUSAGE,
					  "'%s': the path has a character a job description "
					  "cannot carry (white space, quote, ';')",
					  url);
	size_t n = strlen(p);
	if (n < 2 || p[n - 1] == '/')
		return gg_err_set(err, GG_EUSAGE, "'%s': names a directory, not a file", url);
	if (strstr(p, "/../") || strstr(p, "/./") || (n >= 3 && !strcmp(p + n - 3, "/..")) ||
	    (n >= 2 && !strcmp(p + n - 2, "/.")))
		return gg_err_set(err, GG_EUSAGE, "'%s': give the path without '.' or '..'", url);
	return 0;
}

int gg_data_url_parse(const char *url, struct gg_data_url *u, struct gg_err *err)
{
	memset(u, 0, sizeof *u);
	size_t k = 0, nk = sizeof schemes / sizeof schemes[0];
	while (k < nk && strncasecmp(url, schemes[k].prefix, strlen(schemes[k].prefix)))
		k++;
	if (k == nk) {
		const char *why = unstageable(url);
		return gg_err_set(err, GG_EUSAGE, "'%s': the CE cannot stage this URL (%s)", url,
				  why ? why : "use root://, davs:// or https://");
	}
	u->scheme = schemes[k].scheme;
	const char *a = url + strlen(schemes[k].prefix);
	size_t n = strcspn(a, "/?#");
	if (a[n] != '/')
		return gg_err_set(err, GG_EUSAGE, "'%s': no path after the host", url);
	int rc = parse_authority(url, a, n, u, err);
	if (rc < 0)
		return rc;
	const char *p = a + n;
	if (u->scheme == GG_URL_ROOT) /* root://host//abs/path: the second '/' is the path's */
		p += p[1] == '/';
	if (strlen(p) >= sizeof u->path)
		return gg_err_set(err, GG_EUSAGE, "'%s': the path is too long", url);
	if ((rc = check_path(url, p, err)) < 0)
		return rc;
	/* a URL is sent, recorded and fetched exactly as given: bytes that are
	 * not UTF-8 could not be (a record keeps them escaped, xRSL and HTTP
	 * would carry them raw); percent-encode them */
	if (!gg_str_utf8_valid(url))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': not valid UTF-8 (percent-encode such bytes: %%FF)", url);
	snprintf(u->path, sizeof u->path, "%s", p);
	return 0;
}

/* The URL of u, in its canonical form (root://h:p//path, davs://h:p/path). */
static char *url_text(const struct gg_data_url *u, enum gg_url_scheme as)
{
	static const char *const name[] = {"", "root", "davs", "https"};
	char port[16] = "";
	if (u->port)
		snprintf(port, sizeof port, ":%d", u->port);
	return gg_strdup_printf("%s://%s%s%s%s", name[as], u->host, port,
				as == GG_URL_ROOT ? "/" : "", u->path);
}

static const char *last_element(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* A name in the job's directory: plain, no characters xRSL or the shell
 * would trip over. */
static int check_name(const char *what, const char *name, struct gg_err *err)
{
	int ok = name[0] && strcmp(name, ".") && strcmp(name, "..") && name[0] != '-';
	for (const char *c = name; ok && *c; c++)
		ok = isalnum((unsigned char)*c) || strchr("._-+", *c);
	return ok ? 0
		  : gg_err_set(err, GG_EUSAGE,
			       "%s: '%s' is not a plain file name (letters, digits, '.', "
			       "'_', '-', '+')",
			       what, name);
}

int gg_data_input_parse(const char *arg, char **url, char **name, struct gg_err *err)
{
	*url = *name = NULL;
	/* URL:NAME: a ':' in the path's last element (a port's ':' comes
	 * before it, and so do those of a URL inside the path, as the cache's
	 * root://CACHE//root://ORIGIN//PATH has) */
	const char *sep = strstr(arg, "://");
	const char *last = sep ? strrchr(sep + 3, '/') : NULL;
	const char *colon = last ? strrchr(last, ':') : NULL;
	char *u = colon ? strndup(arg, (size_t)(colon - arg)) : strdup(arg);
	if (!u)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_data_url parsed;
	int rc = gg_data_url_parse(u, &parsed, err);
	const char *n = colon ? colon + 1 : last_element(parsed.path);
	if (rc == 0)
		rc = check_name("--input", n, err);
	if (rc == 0 && !(*name = strdup(n)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc < 0) {
		free(u);
		return rc;
	}
	*url = u;
	return 0;
}

/* BASE with $USER (or ${USER}) replaced, ending in '/'. */
static char *expand_base(const char *base, const char *user)
{
	char buf[2048];
	size_t n = 0;
	for (const char *p = base; *p && n < sizeof buf - 1;) {
		size_t skip = !strncmp(p, "${USER}", 7) ? 7 : !strncmp(p, "$USER", 5) ? 5 : 0;
		if (skip) {
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", user ? user : "");
			p += skip;
		} else {
			buf[n++] = *p++;
		}
	}
	if (n >= sizeof buf - 1)
		return NULL;
	buf[n] = '\0';
	return gg_strdup_printf("%s%s", buf, n && buf[n - 1] == '/' ? "" : "/");
}

int gg_data_output_parse(const char *arg, const char *base, const char *user, char **name,
			 char **url, struct gg_err *err)
{
	*name = *url = NULL;
	const char *eq = strchr(arg, '=');
	if (!eq && !base)
		return gg_err_set(err, GG_EUSAGE,
				  "--output '%s': no URL, and the site has no output_base: give "
				  "NAME=URL",
				  arg);
	char *n = eq ? strndup(arg, (size_t)(eq - arg)) : strdup(arg);
	char *b = eq ? NULL : expand_base(base, user);
	char *u = eq ? strdup(eq + 1) : b ? gg_strdup_printf("%s%s", b, n ? n : "") : NULL;
	free(b);
	struct gg_data_url parsed;
	int rc = !n || !u ? gg_err_set(err, GG_ENOMEM, "out of memory")
			  : check_name("--output", n, err);
	if (rc == 0 && (rc = gg_data_url_parse(u, &parsed, err)) < 0)
		gg_err_prefix(err, "--output %s", n);
	if (rc < 0) {
		free(n);
		free(u);
		return rc;
	}
	*name = n;
	*url = u;
	return 0;
}

char *gg_data_cache_url(const char *cache, const char *url)
{
	struct gg_data_url c, u;
	struct gg_err e = {0};
	if (!cache || gg_data_url_parse(url, &u, &e) < 0 || u.scheme != GG_URL_ROOT)
		return strdup(url);
	/* the cache's own root://host:port, with or without a trailing '/' */
	char *ctext = gg_strdup_printf("%s%s/x", cache, cache[strlen(cache) - 1] == '/' ? "" : "/");
	int ok = ctext && gg_data_url_parse(ctext, &c, &e) == 0 && c.scheme == GG_URL_ROOT;
	free(ctext);
	if (!ok || (!strcmp(c.host, u.host) && c.port == u.port))
		return strdup(url);
	char port[16] = "";
	if (c.port)
		snprintf(port, sizeof port, ":%d", c.port);
	char *origin = url_text(&u, GG_URL_ROOT);
	char *out = origin ? gg_strdup_printf("root://%s%s//%s", c.host, port, origin) : NULL;
	free(origin);
	return out;
}

int gg_data_cache_check(const char *cache, struct gg_err *err)
{
	struct gg_data_url c;
	char *t = gg_strdup_printf("%s%s/x", cache,
				   cache[0] && cache[strlen(cache) - 1] == '/' ? "" : "/");
	if (!t)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_data_url_parse(t, &c, err);
	free(t);
	if (rc == 0 && c.scheme != GG_URL_ROOT)
		rc = gg_err_set(err, GG_EUSAGE, "an XCache is reached by root://HOST:PORT");
	if (rc == 0 && strcmp(c.path, "/x"))
		rc = gg_err_set(err, GG_EUSAGE, "give the cache as root://HOST:PORT, with no path");
	return rc < 0 ? gg_err_prefix(err, "cache '%s'", cache) : 0;
}

char *gg_data_http_url(const char *url)
{
	struct gg_data_url u;
	struct gg_err e = {0};
	if (gg_data_url_parse(url, &u, &e) < 0)
		return NULL;
	/* davs is https with WebDAV; an XRootD server's HTTP door answers on
	 * the port its root:// one does (XrdHttp shares the port) */
	return url_text(&u, GG_URL_HTTPS);
}

int gg_arc_inputs_pending(const char *input)
{
	int n = 0;
	for (const char *p = input ? input : ""; *p;) {
		size_t len = strcspn(p, "\n");
		const char *sp = memchr(p, ' ', len);
		/* "/NAME URL [CREDENTIAL]": a URL still to fetch; "/NAME" alone is
		 * one the client uploads */
		if (sp) {
			size_t rest = len - (size_t)(sp + 1 - p);
			const char *end = memchr(sp + 1, ' ', rest);
			size_t ul = end ? (size_t)(end - sp - 1) : rest;
			for (size_t i = 0; i + 3 <= ul; i++)
				if (!memcmp(sp + 1 + i, "://", 3)) {
					n++;
					break;
				}
		}
		p += len + (p[len] == '\n');
	}
	return n;
}

/* A line's text after needle, up to the line's end (at most n bytes). */
static size_t after(const char *line, size_t len, const char *needle, const char **at)
{
	*at = NULL;
	size_t nl = strlen(needle);
	for (size_t i = 0; i + nl <= len; i++)
		if (!memcmp(line + i, needle, nl)) {
			*at = line + i + nl;
			return len - i - nl;
		}
	return 0;
}

/* The DTR's short id a log line names ("DTR 34d8...22a4:"), into id. */
static int dtr_short(const char *line, size_t len, char *id, size_t idlen)
{
	const char *p;
	size_t n = after(line, len, "] DTR ", &p);
	size_t k = n ? strcspn(p, ": ") : 0;
	if (!k || k >= idlen || k > n)
		return 0;
	memcpy(id, p, k);
	id[k] = '\0';
	return 1;
}

/* Does the full DTR id (uuid) match the short form "abcd...wxyz"? */
static int dtr_match(const char *full, size_t flen, const char *shortid)
{
	const char *dots = strstr(shortid, "...");
	if (!dots)
		return flen == strlen(shortid) && !memcmp(full, shortid, flen);
	size_t a = (size_t)(dots - shortid), b = strlen(dots + 3);
	return flen >= a + b && !memcmp(full, shortid, a) && !memcmp(full + flen - b, dots + 3, b);
}

struct failure {
	int fixed; /* id is the last failed DTR's: collect its words */
	char id[64];
	char why[320], copy[320], src[512], dst[512];
};

/* Keep text as the storage's words for the failure when it says more than
 * what is kept (the plug-in's lines are sometimes cut where a pipe split them). */
static void keep_longer(struct failure *f, const char *text, size_t n)
{
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\r'))
		n--;
	if (n > strlen(f->copy))
		snprintf(f->copy, sizeof f->copy, "%.*s", (int)n, text);
}

/* What a DTR line says failed: a transfer ("Transfer failed: REASON"), or a
 * file that failed the check before it ("Failed checking source replica URL:
 * REASON", kept whole). */
static size_t failure_text(const char *p, size_t len, const char **t)
{
	static const char chk[] = "Failed checking ";
	size_t n = after(p, len, "Transfer failed: ", t);
	if (!n && (n = after(p, len, ": Failed checking ", t))) {
		*t -= sizeof chk - 1;
		n += sizeof chk - 1;
	}
	return n;
}

/* The failed transfer's reason: the last "Transfer failed:", made more
 * precise by the plug-in's own words for that DTR ("Failed to copy PATH:
 * REASON", or the XRootD client's "Server responded with an error: ..."). */
static void scan_reason(const char *p, size_t len, struct failure *f)
{
	const char *t = NULL, *r = NULL;
	size_t n, m;
	char id[64];
	if (!dtr_short(p, len, id, sizeof id))
		return;
	if ((n = failure_text(p, len, &t))) {
		if (f->fixed && strcmp(id, f->id))
			return;
		snprintf(f->id, sizeof f->id, "%s", id);
		snprintf(f->why, sizeof f->why, "%.*s", (int)n, t);
	} else if (!f->fixed || strcmp(id, f->id)) {
		return;
	} else if ((n = after(p, len, "] Failed to copy ", &t)) && (m = after(t, n, ": ", &r))) {
		keep_longer(f, r, m);
	} else if ((n = after(p, len, "Server responded with an error: ", &t))) {
		keep_longer(f, t, n);
	}
}

/* Source and destination of the DTR f->id ("Scheduler received new DTR ID
 * with source: S, destination: D, ..."). */
static void scan_ends(const char *p, size_t len, struct failure *f)
{
	const char *t = NULL, *s = NULL, *d = NULL;
	size_t n = after(p, len, "Scheduler received new DTR ", &t);
	size_t il = n ? strcspn(t, " ") : 0;
	if (!il || !dtr_match(t, il, f->id))
		return;
	size_t sn = after(t, n, " with source: ", &s), dn = after(t, n, ", destination: ", &d);
	if (!sn || !dn)
		return;
	snprintf(f->src, sizeof f->src, "%.*s", (int)strcspn(s, ","), s);
	snprintf(f->dst, sizeof f->dst, "%.*s", (int)strcspn(d, ","), d);
}

static void each_line(const char *text, void (*fn)(const char *, size_t, struct failure *),
		      struct failure *f)
{
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		fn(p, len, f);
		p += len + (p[len] == '\n');
	}
}

int gg_arc_staging_failure(const char *errors, char *out, size_t len)
{
	struct failure f = {0};
	out[0] = '\0';
	if (!errors)
		return 0;
	each_line(errors, scan_reason, &f);
	if (!f.id[0])
		return 0;
	/* again, now that the DTR is known: its own words come before its
	 * "Transfer failed" */
	f.fixed = 1;
	each_line(errors, scan_reason, &f);
	each_line(errors, scan_ends, &f);
	char text[1400];
	const char *why = f.copy[0] ? f.copy : f.why;
	if (!strncmp(f.src, "file:", 5))
		snprintf(text, sizeof text, "staging out of %s to %s failed: %s",
			 last_element(f.src), f.dst, why);
	else if (f.src[0])
		snprintf(text, sizeof text, "staging in of %s from %s failed: %s",
			 last_element(f.dst), f.src, why);
	else
		snprintf(text, sizeof text, "data staging failed: %s", why);
	char *clean = gg_str_printable(text, strlen(text));
	snprintf(out, len, "%s", clean ? clean : text);
	free(clean);
	return 1;
}
