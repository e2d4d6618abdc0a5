/* lib/http: validators of a remote file's version, kept beside a part, and
 * the checksums of RFC 3230's Digest header. */
#include "http/version.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libdeflate.h>
#include <openssl/evp.h>

#define VALUE_MAX  512
#define FILE_MAGIC "gridgpu part validator 1"

/* The checksums we verify, the strongest first (a server naming several). */
static const struct alg {
	const char *name;
	size_t len; /* bytes */
} algs[] = {{"sha-256", 32}, {"md5", 16}, {"adler32", 4}};

void gg_version_clear(struct gg_version *v)
{
	free(v->etag);
	free(v->modified);
	free(v->digest);
	*v = (struct gg_version){.size = -1};
}

static int printable(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e)
			return 0;
	return n > 0 && n <= VALUE_MAX;
}

static char *hex(const unsigned char *b, size_t n)
{
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; s && i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	return s;
}

/* A value of a->len bytes: hex (any algorithm; adler32 is hex by RFC 3230
 * and XRootD may drop its leading zeros) or base64 (md5, sha-256). */
static int decode(const struct alg *a, const char *v, size_t n, unsigned char *out)
{
	size_t nhex = strspn(v, "0123456789abcdefABCDEF");
	if (nhex == n && (n == 2 * a->len || (a->len == 4 && n && n <= 8))) {
		char buf[65] = "00000000";
		memcpy(buf + (n < 8 ? 8 - n : 0), v, n);
		buf[n < 8 ? 8 : n] = '\0';
		for (size_t i = 0; i < a->len; i++) {
			unsigned x;
			sscanf(buf + 2 * i, "%2x", &x);
			out[i] = (unsigned char)x;
		}
		return 0;
	}
	unsigned char b[64];
	if (a->len == 4 || n % 4 || n > 64 || n != 4 * ((a->len + 2) / 3))
		return -1;
	int got = EVP_DecodeBlock(b, (const unsigned char *)v, (int)n);
	if (got != (int)(3 * (n / 4)))
		return -1;
	memcpy(out, b, a->len);
	return 0;
}

/* "ALG=HEX" of the strongest checksum of a Digest header we can verify. */
static char *pick_digest(const char *hdr)
{
	for (size_t k = 0; k < sizeof algs / sizeof algs[0]; k++) {
		size_t nl = strlen(algs[k].name);
		for (const char *p = hdr; *p;) {
			p += strspn(p, " \t,");
			size_t len = strcspn(p, ",");
			const char *eq = memchr(p, '=', len);
			unsigned char bin[32];
			if (eq && (size_t)(eq - p) == nl && !strncasecmp(p, algs[k].name, nl) &&
			    decode(&algs[k], eq + 1, strcspn(eq + 1, " \t,"), bin) == 0) {
				char *h = hex(bin, algs[k].len);
				char *d = h ? gg_strdup_printf("%s=%s", algs[k].name, h) : NULL;
				free(h);
				return d;
			}
			p += len;
		}
	}
	return NULL;
}

int gg_version_of(const struct gg_http_resp *r, struct gg_version *v)
{
	const char *et = r->etag;
	if (et && printable(et) && et[0] == '"' && !(v->etag = strdup(et)))
		return GG_ENOMEM;
	if (r->last_modified && printable(r->last_modified) &&
	    !(v->modified = strdup(r->last_modified)))
		return GG_ENOMEM;
	if (r->digest && printable(r->digest))
		v->digest = pick_digest(r->digest);
	return 0;
}

int gg_version_validated(const struct gg_version *a)
{
	return a->etag || a->modified || a->digest;
}

/* -1 when both have s and it differs, 1 when both have it, 0 else. */
static int cmp(const char *x, const char *y)
{
	return !x || !y ? 0 : strcmp(x, y) ? -1 : 1;
}

int gg_version_agree(const struct gg_version *a, const struct gg_version *b)
{
	return cmp(a->etag, b->etag) >= 0 && cmp(a->modified, b->modified) >= 0 &&
	       cmp(a->digest, b->digest) >= 0 && (a->size < 0 || b->size < 0 || a->size == b->size);
}

int gg_version_same(const struct gg_version *a, const struct gg_version *b)
{
	int both = cmp(a->etag, b->etag) > 0 || cmp(a->modified, b->modified) > 0 ||
		   cmp(a->digest, b->digest) > 0;
	return a->size >= 0 && a->size == b->size && both && gg_version_agree(a, b);
}

int gg_version_save(const char *file, const char *url, const struct gg_version *v,
		    struct gg_err *err)
{
	if (!gg_version_validated(v) || v->size < 0 || !printable(url)) {
		unlink(file); /* nothing that could validate these bytes later */
		return 0;
	}
	char *text = gg_strdup_printf("%s\nurl %s\nsize %lld\netag %s\nmodified %s\ndigest %s\n",
				      FILE_MAGIC, url, (long long)v->size, v->etag ? v->etag : "",
				      v->modified ? v->modified : "", v->digest ? v->digest : "");
	if (!text)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_file_write_atomic(file, text, strlen(text), 0600, err);
	free(text);
	return rc;
}

/* The value of "KEY VALUE" in text, or NULL (empty values too). */
static char *field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; *p; p += strcspn(p, "\n"), p += *p == '\n') {
		size_t len = strcspn(p, "\n");
		if (len > kl + 1 && !strncmp(p, key, kl) && p[kl] == ' ')
			return strndup(p + kl + 1, len - kl - 1);
	}
	return NULL;
}

void gg_version_load(const char *file, const char *url, struct gg_version *v)
{
	gg_version_clear(v);
	char *text = NULL, *u = NULL, *size = NULL, *end = NULL;
	struct gg_err e = {0};
	if (gg_file_read(file, 4 * VALUE_MAX, &text, NULL, &e) < 0)
		return;
	u = strncmp(text, FILE_MAGIC "\n", sizeof FILE_MAGIC) ? NULL : field(text, "url");
	size = u && !strcmp(u, url) ? field(text, "size") : NULL;
	long long n = size ? strtoll(size, &end, 10) : -1;
	if (size && !*end && n >= 0) {
		v->size = n;
		v->etag = field(text, "etag");
		v->modified = field(text, "modified");
		v->digest = field(text, "digest");
	}
	free(u);
	free(size);
	free(text);
}

/* The checksum of fd's bytes as hex, by algorithm a. NULL on a read error. */
static char *sum_file(const struct alg *a, int fd)
{
	unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *c = a->len == 4 ? NULL : EVP_MD_CTX_new();
	uint32_t adler = 1;
	int ok = a->len == 4 ||
		 (c && EVP_DigestInit_ex(c, a->len == 16 ? EVP_md5() : EVP_sha256(), NULL));
	ssize_t n;
	while (ok && (n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ok = 0;
		else if (a->len == 4)
			adler = libdeflate_adler32(adler, buf, (size_t)n);
		else
			ok = EVP_DigestUpdate(c, buf, (size_t)n);
	}
	unsigned mdlen = 0;
	if (ok && c)
		ok = EVP_DigestFinal_ex(c, md, &mdlen);
	EVP_MD_CTX_free(c);
	if (!ok)
		return NULL;
	if (a->len == 4) {
		unsigned char b[4] = {adler >> 24, adler >> 16 & 0xff, adler >> 8 & 0xff,
				      adler & 0xff};
		return hex(b, 4);
	}
	return hex(md, mdlen);
}

int gg_version_check(const struct gg_version *v, const char *path, struct gg_err *err)
{
	if (!v->digest)
		return 0;
	const struct alg *a = NULL;
	for (size_t k = 0; k < sizeof algs / sizeof algs[0]; k++)
		if (!strncmp(v->digest, algs[k].name, strlen(algs[k].name)) &&
		    v->digest[strlen(algs[k].name)] == '=')
			a = &algs[k];
	int fd = a ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (!a)
		return 0;
	if (fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "reading '%s'", path);
	char *sum = sum_file(a, fd);
	int e = errno;
	close(fd);
	if (!sum)
		return gg_err_sys(err, GG_EIO, e, "reading '%s'", path);
	const char *want = v->digest + strlen(a->name) + 1;
	int rc = strcmp(sum, want) == 0
			 ? 0
			 : gg_err_set(err, GG_EPROTO,
				      "the bytes that came do not match the storage's checksum "
				      "(%s %s, the file's %s)",
				      a->name, want, sum);
	free(sum);
	return rc;
}

int gg_content_range_is(const char *cr, int64_t first, int64_t last, int64_t total)
{
	char want[96];
	if (first < 0 || last < first || total <= last)
		return 0; /* no such range: nothing names it */
	snprintf(want, sizeof want, "bytes %lld-%lld/%lld", (long long)first, (long long)last,
		 (long long)total);
	return cr && !strcasecmp(cr, want);
}
