/* lib/http: which version of a remote file some bytes are of. A resumed
 * download appends to PATH.part only when the server describes the file as it
 * described it when the part was started: the size and a validator (a strong
 * ETag, Last-Modified, or a checksum from RFC 3230's Digest header, which
 * XRootD and dCache answer to Want-Digest), kept beside the part in
 * PATH.part.validator. The checksum also checks the finished file. */
#ifndef GG_HTTP_VERSION_H
#define GG_HTTP_VERSION_H

#include <stdint.h>

#include "http/http.h"

/* What a request asks for: the checksums gg_version_check can verify, the strongest
 * preferred. adler32 comes first all the same: XrdHttp 5.5 ignores the q values and
 * labels the checksum it has (adler32) with the first name asked ("SHA-256=" and
 * 4 bytes), which would then validate nothing (a value of the wrong length is no
 * checksum); every WLCG storage has adler32. */
#define GG_WANT_DIGEST "Want-Digest: adler32;q=0.3, sha-256, md5;q=0.6"

struct gg_version {
	int64_t size;   /* bytes of the whole file, -1 when not said */
	char *etag;     /* a strong ETag, or NULL (a weak one cannot validate bytes) */
	char *modified; /* Last-Modified, or NULL */
	char *digest;   /* "ALG=HEX" (adler32, md5, sha-256), or NULL */
};

void gg_version_clear(struct gg_version *v);
/* The validators of an answer's headers (size: set by the caller). 0, or
 * GG_ENOMEM. Values that are not short printable text are not validators. */
int gg_version_of(const struct gg_http_resp *r, struct gg_version *v);
/* 1 when a has a validator at all. */
int gg_version_validated(const struct gg_version *a);
/* 1 when a and b describe the same bytes: the same known size, a validator
 * both have, and no validator they both have that differs. */
int gg_version_same(const struct gg_version *a, const struct gg_version *b);
/* 1 when b says nothing against a: every validator both have is equal. */
int gg_version_agree(const struct gg_version *a, const struct gg_version *b);
/* The validator file of a part of url: written (0600, atomically) or read; a
 * file that is missing, unreadable or of another URL gives an empty v. */
int gg_version_save(const char *file, const char *url, const struct gg_version *v,
		    struct gg_err *err);
void gg_version_load(const char *file, const char *url, struct gg_version *v);
/* The checksum of path against v->digest: 0 equal (or no digest), GG_EPROTO
 * different (err says both), GG_EIO when path cannot be read. */
int gg_version_check(const struct gg_version *v, const char *path, struct gg_err *err);
/* "bytes FIRST-LAST/TOTAL" (Content-Range) naming exactly these, a range that can
 * be (0 <= FIRST <= LAST < TOTAL): 1, else 0. */
int gg_content_range_is(const char *cr, int64_t first, int64_t last, int64_t total);

#endif
