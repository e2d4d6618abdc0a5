/* What a storage server says identifies a version of a file, and the validator
 * file a resumed download keeps beside its part (lib/http/version.c). The input's
 * first four lines are the headers Digest, ETag, Last-Modified and Content-Range
 * of an answer; the rest is a validator file as found beside a part (written by
 * anyone). Checks: a checksum picked is "ALG=HEX" of the algorithm's length; a
 * version with a size and a validator is the same as itself and survives being
 * written and read back; a validator file read is of the URL asked or empty;
 * Content-Range matches only its own numbers. */
#include "fuzz.h"
#include "http/version.h"

/* The next line of *p (NUL-terminated copy), *p moved past it. */
static char *fuzz_version_line(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	char *s = fuzz_cstr((const uint8_t *)*p, (size_t)(e - *p));
	*p = nl ? nl + 1 : end;
	return s;
}

static void fuzz_version_digest(const char *d)
{
	if (!d)
		return;
	const char *eq = strchr(d, '=');
	FUZZ_CHECK(eq, "a checksum without '=': %s", d);
	size_t n = strlen(eq + 1), want = !strncmp(d, "adler32=", 8)   ? 8
					  : !strncmp(d, "md5=", 4)     ? 32
					  : !strncmp(d, "sha-256=", 8) ? 64
								       : 0;
	FUZZ_CHECK(want && n == want && strspn(eq + 1, "0123456789abcdef") == n,
		   "not ALG=HEX of its length: %s", d);
}

static void fuzz_version_roundtrip(const struct gg_version *v)
{
	char dir[4096], file[4200];
	if (fuzz_mkdir("version", dir) < 0)
		return;
	snprintf(file, sizeof file, "%s/f.part.validator", dir);
	struct gg_err err = {0};
	struct gg_version back = {.size = -1};
	if (gg_version_save(file, "https://se/f", v, &err) == 0) {
		gg_version_load(file, "https://se/f", &back);
		FUZZ_CHECK(gg_version_same(v, &back), "a version read back differs");
		gg_version_clear(&back);
		gg_version_load(file, "https://se/other", &back);
		FUZZ_CHECK(!gg_version_validated(&back) && back.size < 0,
			   "the validator of another URL was taken");
		gg_version_clear(&back);
	}
	unlink(file);
	rmdir(dir);
}

FUZZ_TARGET(http_version)
{
	const char *p = (const char *)data, *end = p + size;
	struct gg_http_resp r = {0};
	r.digest = fuzz_version_line(&p, end);
	r.etag = fuzz_version_line(&p, end);
	r.last_modified = fuzz_version_line(&p, end);
	r.content_range = fuzz_version_line(&p, end);
	struct gg_version v = {.size = -1};
	FUZZ_CHECK(gg_version_of(&r, &v) == 0, "out of memory");
	fuzz_version_digest(v.digest);
	v.size = (int64_t)size;
	if (gg_version_validated(&v)) {
		FUZZ_CHECK(gg_version_same(&v, &v), "a version differs from itself");
		fuzz_version_roundtrip(&v);
	}
	long long a, b, t;
	char tail;
	if (sscanf(r.content_range, "bytes %lld-%lld/%lld%c", &a, &b, &t, &tail) == 3)
		(void)gg_content_range_is(r.content_range, a, b, t);
	FUZZ_CHECK(!gg_content_range_is(r.content_range, 1, 0, -5), "a range from 1 to 0");
	/* the rest: a validator file someone left beside a part */
	char path[4096];
	if (fuzz_write_file("validator", (const uint8_t *)p, (size_t)(end - p), path) == 0) {
		struct gg_version f = {.size = -1};
		gg_version_load(path, "https://se/f", &f);
		FUZZ_CHECK(f.size >= -1, "a negative size read");
		(void)gg_version_same(&f, &v);
		(void)gg_version_agree(&f, &v);
		gg_version_clear(&f);
		unlink(path);
	}
	gg_version_clear(&v);
	gg_http_resp_clear(&r);
	return 0;
}
