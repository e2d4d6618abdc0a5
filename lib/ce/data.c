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

static const struct {
	const char *prefix;
	enum gg_url_scheme scheme;
} schemes[] = {
	{"root://", GG_URL_ROOT},   {"xroot://", GG_URL_ROOT}, {"davs://", GG_URL_DAVS},
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
		if (*c <= 0x20 || *c == 0x7f || *c == '"' || *c == '\'' || *c == ';' ||
		    *c == '\\')
			return gg_err_set(err, GG_EUSAGE,
					  "'%s': the path has a character a job description "
					  "cannot carry (white space, quote, ';')",
					  url);
	size_t n = strlen(p);
	if (n < 2 || p[n - 1] == '/')
		return gg_err_set(err, GG_EUSAGE, "'%s': names a directory, not a file", url);
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
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': the CE cannot stage this URL (%s)", url,
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
	/* URL:NAME: the ':' after the path began (a port's ':' comes before) */
	const char *sep = strstr(arg, "://");
	const char *path = sep ? strchr(sep + 3, '/') : NULL;
	const char *colon = path ? strrchr(path, ':') : NULL;
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
	char *t = gg_strdup_printf("%s%s/x", cache, cache[0] && cache[strlen(cache) - 1] == '/' ? "" : "/");
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
