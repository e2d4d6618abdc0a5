/* The OCI reader: an OCI image layout (a directory, or a tar of one) or a `docker save`
 * archive. Layers are applied in order with whiteouts and opaque directories in a first
 * pass over their headers; a second pass streams only the data that survives into the
 * squashfs, so files replaced or deleted by upper layers cost nothing in the image.
 * Blobs named by digest are checked against it. Also: format detection. */
#include "image/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <openssl/evp.h>

#define JSON_MAX  (16u << 20)
#define RANGE_BUF (256u << 10)

/* ---- the outer container: a directory or an uncompressed tar ----------------------- */

struct member {
	char *name;
	char *link; /* symlink or hard link target (clean, relative to the archive root) */
	uint64_t off, size;
};

struct container {
	const char *path;
	int is_dir;
	int fd; /* tar */
	uint64_t fsize;
	struct member *m;
	size_t nm, cap;
	struct gg_feed *fz; /* for the cancel hook; NULL in format detection */
};

static void container_close(struct container *c)
{
	for (size_t i = 0; i < c->nm; i++) {
		free(c->m[i].name);
		free(c->m[i].link);
	}
	free(c->m);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->m = NULL;
	c->nm = 0;
}

static int parse_num(const unsigned char *f, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (f[0] & 0x80) { /* GNU base-256 */
		if (f[0] != 0x80)
			return -1;
		for (size_t i = 1; i < len; i++) {
			if (v >> 56)
				return -1;
			v = v << 8 | f[i];
		}
		*out = v;
		return 0;
	}
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	*out = v;
	return 0;
}

static int add_member(struct container *c, char *name, char *link, uint64_t off, uint64_t size)
{
	if (c->nm == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 32;
		struct member *nm = realloc(c->m, ncap * sizeof *nm);
		if (!nm)
			return -1;
		c->m = nm;
		c->cap = ncap;
	}
	c->m[c->nm].name = name;
	c->m[c->nm].link = link;
	c->m[c->nm].off = off;
	c->m[c->nm].size = size;
	c->nm++;
	return 0;
}

/* pax "len key=value\n" records: pick path, linkpath and size */
static void pax_parse(const char *buf, size_t len, char **path, char **linkpath, uint64_t *size,
		      int *have_size)
{
	size_t off = 0;
	while (off < len) {
		char *end;
		unsigned long rl = strtoul(buf + off, &end, 10);
		if (rl == 0 || rl > len - off || *end != ' ')
			return;
		const char *kv = end + 1, *rec_end = buf + off + rl - 1; /* at '\n' */
		if (kv >= rec_end || *rec_end != '\n')
			return; /* shorter than its own length field: corrupt */
		const char *eq = memchr(kv, '=', (size_t)(rec_end - kv));
		if (eq) {
			size_t kl = (size_t)(eq - kv), vl = (size_t)(rec_end - eq - 1);
			if (kl == 4 && !memcmp(kv, "path", 4)) {
				free(*path);
				*path = strndup(eq + 1, vl);
			} else if (kl == 8 && !memcmp(kv, "linkpath", 8)) {
				free(*linkpath);
				*linkpath = strndup(eq + 1, vl);
			} else if (kl == 4 && !memcmp(kv, "size", 4)) {
				*size = strtoull(eq + 1, NULL, 10);
				*have_size = 1;
			}
		}
		off += rl;
	}
}

/* Extension headers (GNU long names, pax) waiting for the member they describe. */
struct tar_ext {
	char *long_name, *long_link, *pax_path, *pax_link;
	uint64_t pax_size;
	int have_pax_size;
};

static void tar_ext_clear(struct tar_ext *x)
{
	free(x->long_name);
	free(x->long_link);
	free(x->pax_path);
	free(x->pax_link);
	memset(x, 0, sizeof *x);
}

/* Read and check the header at pos into h: 0 for a header, 1 at the end of the archive
 * (*is_tar says whether it was one), <0 on damage. */
static int tar_header(struct container *c, unsigned char h[512], uint64_t pos, int *is_tar,
		      struct gg_err *err)
{
	if (gg_image_pread_all(c->fd, h, 512, (int64_t)pos) < 0) {
		if (errno != 0)
			return gg_err_sys(err, GG_EIO, errno, "reading '%s'", c->path);
		/* no end marker: tolerated, as GNU tar does */
		*is_tar = pos > 0;
		return 1;
	}
	int zero = 1;
	for (size_t i = 0; i < 512 && zero; i++)
		zero = h[i] == 0;
	if (zero) {
		*is_tar = pos > 0;
		return 1;
	}
	uint64_t sum = 0, want;
	for (size_t i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	if (parse_num(h + 148, 8, &want) < 0 || want != sum) {
		if (pos == 0)
			return 1;
		return gg_err_set(err, GG_EFAIL, "'%s': corrupt tar header at offset %llu", c->path,
				  (unsigned long long)pos);
	}
	return 0;
}

/* A GNU long name or link ('L', 'K') or a pax header ('x'): kept for the next member. */
static int tar_ext_read(struct container *c, struct tar_ext *x, char type, uint64_t size,
			uint64_t data, struct gg_err *err)
{
	if (size > (1u << 20))
		return gg_err_set(err, GG_EFAIL, "'%s': tar extension header too large", c->path);
	char *buf = malloc((size_t)size + 1);
	if (!buf || gg_image_pread_all(c->fd, buf, (size_t)size, (int64_t)data) < 0) {
		free(buf);
		return gg_err_set(err, GG_EIO, "reading '%s' failed", c->path);
	}
	buf[size] = '\0';
	if (type == 'L') {
		free(x->long_name);
		x->long_name = buf;
	} else if (type == 'K') {
		free(x->long_link);
		x->long_link = buf;
	} else {
		pax_parse(buf, (size_t)size, &x->pax_path, &x->pax_link, &x->pax_size,
			  &x->have_pax_size);
		free(buf);
	}
	return 0;
}

/* The member's name: pax, GNU long name, or ustar prefix + name (raw holds it). */
static const char *tar_name(const struct tar_ext *x, const unsigned char *h, char raw[257])
{
	if (x->pax_path)
		return x->pax_path;
	if (x->long_name)
		return x->long_name;
	size_t pl = strnlen((const char *)h + 345, 155);
	size_t nl = strnlen((const char *)h, 100);
	size_t o = 0;
	if (!memcmp(h + 257, "ustar", 5) && pl) {
		memcpy(raw, h + 345, pl);
		raw[pl] = '/';
		o = pl + 1;
	}
	memcpy(raw + o, h, nl);
	raw[o + nl] = '\0';
	return raw;
}

/* Resolve "." and ".." of a path in place, by hand: clean() refuses "..". */
static void resolve_dots(char *link)
{
	char *parts[256];
	size_t np = 0;
	char *save, *tok, *tmp = strdup(link);
	for (tok = tmp ? strtok_r(tmp, "/", &save) : NULL; tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			if (np)
				np--;
			continue;
		}
		if (np < 256)
			parts[np++] = tok;
	}
	size_t o = 0;
	for (size_t i = 0; i < np; i++) {
		size_t l = strlen(parts[i]);
		if (o)
			link[o++] = '/';
		memmove(link + o, parts[i], l);
		o += l;
	}
	link[o] = '\0';
	free(tmp);
}

/* The target of a hard link ('1') or symlink ('2') as a path from the archive's root
 * (a relative symlink taken from the member's directory); malloc'd, NULL when out of
 * memory. */
static char *tar_link(const struct tar_ext *x, const unsigned char *h, char type, const char *clean)
{
	char lraw[101];
	const char *ln = x->pax_link ? x->pax_link : x->long_link;
	if (!ln) {
		memcpy(lraw, h + 157, 100);
		lraw[100] = '\0';
		ln = lraw;
	}
	char *link;
	if (type == '2' && ln[0] != '/') {
		const char *slash = strrchr(clean, '/');
		size_t dl = slash ? (size_t)(slash - clean) + 1 : 0;
		link = malloc(dl + strlen(ln) + 1);
		if (link) {
			memcpy(link, clean, dl);
			strcpy(link + dl, ln);
		}
	} else {
		link = strdup(ln[0] == '/' ? ln + 1 : ln);
	}
	if (link)
		resolve_dots(link);
	return link;
}

/* A member: files ('0', '\0', '7') and links are indexed, others only consume the
 * extension headers before them. */
static int tar_member(struct container *c, struct tar_ext *x, const unsigned char *h, char type,
		      uint64_t size, uint64_t data, struct gg_err *err)
{
	char raw[257];
	const char *name = tar_name(x, h, raw);
	char *clean = malloc(strlen(name) + 1);
	char *link = NULL;
	if (!clean)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_err perr = {0};
	if (gg_image_path_clean(name, clean, &perr) < 0) {
		free(clean);
		return gg_err_set(err, GG_EFAIL, "'%s': %s", c->path, perr.msg);
	}
	int is_link = type == '1' || type == '2';
	if (is_link)
		link = tar_link(x, h, type, clean);
	int indexed = type == '0' || type == '\0' || type == '7' || is_link;
	if (indexed && add_member(c, clean, link, data, is_link ? 0 : size) < 0) {
		free(clean);
		free(link);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (!indexed) {
		free(clean);
		free(link);
	}
	tar_ext_clear(x);
	return 0;
}

/* Index one member at *pos and move *pos past it: 0, 1 at the end, <0 on damage. */
static int tar_index_one(struct container *c, struct tar_ext *x, uint64_t *pos, int *is_tar,
			 struct gg_err *err)
{
	unsigned char h[512];
	int rc = tar_header(c, h, *pos, is_tar, err);
	if (rc != 0)
		return rc;
	uint64_t size;
	if (parse_num(h + 124, 12, &size) < 0)
		return gg_err_set(err, GG_EFAIL, "'%s': bad size in the tar header at offset %llu",
				  c->path, (unsigned long long)*pos);
	char type = (char)h[156];
	if (x->have_pax_size && type != 'x' && type != 'g')
		size = x->pax_size;
	uint64_t data = *pos + 512; /* <= fsize: the header was read in full */
	if (size > c->fsize - data)
		return gg_err_set(err, GG_EFAIL,
				  "'%s': truncated (member at %llu runs past the end)", c->path,
				  (unsigned long long)*pos);
	if (type == 'L' || type == 'K' || type == 'x')
		rc = tar_ext_read(c, x, type, size, data, err);
	else if (type != 'g')
		rc = tar_member(c, x, h, type, size, data, err);
	if (rc < 0)
		return rc;
	*is_tar = 1;
	*pos = data + (size + 511) / 512 * 512;
	return 0;
}

/* Index the members of an uncompressed tar. *is_tar = 0 (rc 0) when the first header is
 * not a tar header; later damage is an error. */
static int tar_index(struct container *c, int *is_tar, struct gg_err *err)
{
	*is_tar = 0;
	uint64_t pos = 0;
	struct tar_ext x = {0};
	int rc = 0;
	for (;;) {
		if (c->fz && (rc = gg_image_check_cancel(c->fz, err)) < 0)
			break;
		if ((rc = tar_index_one(c, &x, &pos, is_tar, err)) != 0)
			break;
	}
	tar_ext_clear(&x);
	return rc < 0 ? rc : 0;
}

static int container_open(struct container *c, const char *path, struct gg_feed *fz,
			  struct gg_err *err)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->fz = fz;
	c->path = path;
	struct stat st;
	if (stat(path, &st) < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "'%s'", path);
	if (S_ISDIR(st.st_mode)) {
		c->is_dir = 1;
		return 0;
	}
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "opening '%s'", path);
	c->fsize = (uint64_t)st.st_size;
	int is_tar;
	if (tar_index(c, &is_tar, err) < 0) {
		container_close(c);
		return err->code;
	}
	if (!is_tar) {
		container_close(c);
		return gg_err_set(err, GG_EFAIL,
				  "'%s' is not an uncompressed tar (an OCI or docker archive must "
				  "be decompressed first)",
				  path);
	}
	return 0;
}

static const struct member *find_member(const struct container *c, const char *name, int depth)
{
	for (size_t i = c->nm; i-- > 0;) /* the last entry of a name wins, as in tar */
		if (!strcmp(c->m[i].name, name)) {
			if (c->m[i].link && depth < 16)
				return find_member(c, c->m[i].link, depth + 1);
			return c->m[i].link ? NULL : &c->m[i];
		}
	return NULL;
}

/* A blob's bytes: fd (own for directories, close it; shared for tars), offset, size. */
struct range {
	int fd, own;
	uint64_t off, size, pos;
	unsigned char *buf;
	struct gg_feed *fz; /* layers: polled for cancel at each read */
};

static int blob_open(const struct container *c, const char *name, struct range *r,
		     struct gg_err *err)
{
	memset(r, 0, sizeof *r);
	r->fd = -1;
	char *clean = malloc(strlen(name) + 1);
	if (!clean)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_err perr = {0};
	if (gg_image_path_clean(name, clean, &perr) < 0 || !*clean) {
		free(clean);
		return gg_err_set(err, GG_EFAIL, "'%s': bad blob name '%s'", c->path, name);
	}
	if (c->is_dir) {
		char *p = gg_strdup_printf("%s/%s", c->path, clean);
		free(clean);
		if (!p)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		r->fd = open(p, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (r->fd < 0 || fstat(r->fd, &st) < 0) {
			int e = errno;
			gg_err_sys(err, GG_EFAIL, e, "'%s'", p);
			free(p);
			if (r->fd >= 0)
				close(r->fd);
			return err->code;
		}
		free(p);
		r->own = 1;
		r->size = (uint64_t)st.st_size;
		return 0;
	}
	const struct member *m = find_member(c, clean, 0);
	if (!m) {
		gg_err_set(err, GG_EFAIL, "'%s': no '%s' in the archive", c->path, clean);
		free(clean);
		return err->code;
	}
	free(clean);
	r->fd = c->fd;
	r->off = m->off;
	r->size = m->size;
	return 0;
}

static void blob_close(struct range *r)
{
	if (r->own && r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->fd = -1;
	r->buf = NULL;
}

static int blob_read_all(const struct container *c, const char *name, char **out, size_t *len,
			 struct gg_err *err)
{
	struct range r;
	if (blob_open(c, name, &r, err) < 0)
		return err->code;
	if (r.size > JSON_MAX) {
		blob_close(&r);
		return gg_err_set(err, GG_EFAIL, "'%s': '%s' is too large", c->path, name);
	}
	char *buf = malloc((size_t)r.size + 1);
	if (!buf || gg_image_pread_all(r.fd, buf, (size_t)r.size, (int64_t)r.off) < 0) {
		free(buf);
		blob_close(&r);
		return gg_err_set(err, GG_EIO, "'%s': reading '%s' failed", c->path, name);
	}
	buf[r.size] = '\0';
	*out = buf;
	*len = (size_t)r.size;
	blob_close(&r);
	return 0;
}

/* ---- digests ----------------------------------------------------------------------- */

/* "sha256:<hex>" -> blob name "blobs/sha256/<hex>"; NULL for a malformed digest. */
static char *digest_blob(const char *digest)
{
	const char *colon = digest ? strchr(digest, ':') : NULL;
	if (!colon || colon == digest || !colon[1] || strchr(colon + 1, '/') ||
	    memchr(digest, '/', (size_t)(colon - digest)) || strstr(digest, ".."))
		return NULL;
	return gg_strdup_printf("blobs/%.*s/%s", (int)(colon - digest), digest, colon + 1);
}

/* The digest a blob name claims: blobs/ALG/<hex> -> "ALG:<hex>", else NULL. */
static char *name_digest(const char *name)
{
	const char *p = name;
	if (!strncmp(p, "./", 2))
		p += 2;
	if (strncmp(p, "blobs/", 6))
		return NULL;
	p += 6;
	const char *slash = strchr(p, '/');
	if (!slash || slash == p || !slash[1] || strchr(slash + 1, '/'))
		return NULL;
	return gg_strdup_printf("%.*s:%s", (int)(slash - p), p, slash + 1);
}

/* The algorithms OCI registers for digests; anything else is refused, not trusted. */
static const EVP_MD *digest_md(const char *digest, size_t *hexlen)
{
	if (!strncmp(digest, "sha256:", 7)) {
		*hexlen = 64;
		return EVP_sha256();
	}
	if (!strncmp(digest, "sha512:", 7)) {
		*hexlen = 128;
		return EVP_sha512();
	}
	return NULL;
}

/* Hash the blob's bytes into hex (2 * EVP_MAX_MD_SIZE + 1). */
static int hash_blob(const struct container *c, const char *name, const EVP_MD *alg, char *hex,
		     struct gg_err *err)
{
	struct range r;
	if (blob_open(c, name, &r, err) < 0)
		return err->code;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char *buf = malloc(RANGE_BUF);
	int rc = 0;
	if (!md || !buf || EVP_DigestInit_ex(md, alg, NULL) != 1)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	for (uint64_t pos = 0; !rc && pos < r.size;) {
		if (c->fz && gg_image_check_cancel(c->fz, err) < 0) {
			rc = err->code;
			break;
		}
		size_t want = r.size - pos < RANGE_BUF ? (size_t)(r.size - pos) : RANGE_BUF;
		ssize_t n = pread(r.fd, buf, want, (off_t)(r.off + pos));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = gg_err_set(err, GG_EFAIL, "'%s': '%s' is truncated", c->path, name);
		else if (EVP_DigestUpdate(md, buf, (size_t)n) != 1)
			rc = gg_err_set(err, GG_EFAIL, "'%s': hashing '%s' failed", c->path, name);
		pos += (uint64_t)(n > 0 ? n : 0);
	}
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	if (!rc && EVP_DigestFinal_ex(md, d, &dl) != 1)
		rc = gg_err_set(err, GG_EFAIL, "'%s': hashing '%s' failed", c->path, name);
	for (unsigned i = 0; !rc && i < dl; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	free(buf);
	EVP_MD_CTX_free(md);
	blob_close(&r);
	return rc;
}

static int check_digest(const struct container *c, const char *name, const char *digest,
			struct gg_err *err)
{
	size_t hexlen;
	const EVP_MD *alg = digest_md(digest, &hexlen);
	const char *colon = strchr(digest, ':');
	if (!alg)
		return gg_err_set(err, GG_EFAIL,
				  "'%s': '%s': digest algorithm '%.*s' is not supported (only "
				  "sha256 and sha512 can be checked)",
				  c->path, name, colon ? (int)(colon - digest) : 16, digest);
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	if (hash_blob(c, name, alg, hex, err) < 0)
		return err->code;
	if (strlen(colon + 1) != hexlen || strcmp(hex, colon + 1) != 0)
		return gg_err_set(err, GG_EFAIL,
				  "'%s': '%s' does not match its digest (corrupt archive)", c->path,
				  name);
	return 0;
}

/* ---- layers through libarchive ----------------------------------------------------- */

static la_ssize_t range_read(struct archive *a, void *ud, const void **out)
{
	struct range *r = ud;
	if (r->fz && gg_image_check_cancel(r->fz, NULL) < 0) {
		archive_set_error(a, EINTR, "interrupted");
		return -1;
	}
	if (r->pos >= r->size)
		return 0;
	size_t want = r->size - r->pos < RANGE_BUF ? (size_t)(r->size - r->pos) : RANGE_BUF;
	for (;;) {
		ssize_t n = pread(r->fd, r->buf, want, (off_t)(r->off + r->pos));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			archive_set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		r->pos += (uint64_t)n;
		*out = r->buf;
		return n;
	}
}

static la_int64_t range_skip(struct archive *a, void *ud, la_int64_t req)
{
	(void)a;
	struct range *r = ud;
	uint64_t left = r->size - r->pos;
	uint64_t n = req < 0 ? 0 : (uint64_t)req > left ? left : (uint64_t)req;
	r->pos += n;
	return (la_int64_t)n;
}

static int layer_open(const struct container *c, const char *name, struct range *r,
		      struct archive **out, struct gg_err *err)
{
	*out = NULL;
	if (blob_open(c, name, r, err) < 0)
		return err->code;
	r->buf = malloc(RANGE_BUF);
	r->fz = c->fz;
	struct archive *a = gg_image_tar_reader();
	if (!r->buf || !a) {
		if (a)
			archive_read_free(a);
		blob_close(r);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	archive_read_support_format_empty(a);
	if (archive_read_open2(a, r, NULL, range_read, range_skip, NULL) != ARCHIVE_OK) {
		gg_err_set(err, GG_EFAIL, "'%s': layer '%s': %s", c->path, name,
			   archive_error_string(a) ? archive_error_string(a) : "not a tar");
		if (c->fz)
			gg_image_check_cancel(c->fz, err);
		archive_read_free(a);
		blob_close(r);
		return err->code;
	}
	*out = a;
	return 0;
}

/* ---- manifests --------------------------------------------------------------------- */

struct image_ref {
	char *config;   /* blob name of the config */
	char **layers;  /* blob names */
	char **digests; /* layer digests ("" when unknown) */
	size_t nlayers;
};

static void image_ref_clear(struct image_ref *r)
{
	for (size_t i = 0; i < r->nlayers; i++) {
		free(r->layers[i]);
		free(r->digests[i]);
	}
	free(r->layers);
	free(r->digests);
	free(r->config);
	memset(r, 0, sizeof *r);
}

static json_t *load_json(const struct container *c, const char *name, const char *digest,
			 struct gg_err *err)
{
	if (digest && check_digest(c, name, digest, err) < 0)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	if (blob_read_all(c, name, &buf, &len, err) < 0)
		return NULL;
	json_error_t je;
	json_t *v = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!v)
		gg_err_set(err, GG_EFAIL, "'%s': '%s': bad JSON (%s, line %d)", c->path, name,
			   je.text, je.line);
	return v;
}

static int add_layer(struct image_ref *r, const char *blob, const char *digest)
{
	char **nl = realloc(r->layers, (r->nlayers + 1) * sizeof *nl);
	if (!nl)
		return -1;
	r->layers = nl;
	char **nd = realloc(r->digests, (r->nlayers + 1) * sizeof *nd);
	if (!nd)
		return -1;
	r->digests = nd;
	r->layers[r->nlayers] = strdup(blob);
	r->digests[r->nlayers] = strdup(digest ? digest : "");
	if (!r->layers[r->nlayers] || !r->digests[r->nlayers]) {
		free(r->layers[r->nlayers]);
		free(r->digests[r->nlayers]);
		return -1;
	}
	r->nlayers++;
	return 0;
}

static const char *host_goarch(void)
{
	return gg_image_arch_name(gg_image_host_arch());
}

/* Choose one manifest descriptor from an index's "manifests". */
static json_t *choose_manifest(const struct container *c, json_t *index, struct gg_err *err)
{
	json_t *ms = json_object_get(index, "manifests");
	size_t n = json_array_size(ms);
	if (!n) {
		gg_err_set(err, GG_EFAIL, "'%s': the image index lists no manifests", c->path);
		return NULL;
	}
	if (n == 1)
		return json_array_get(ms, 0);
	size_t i;
	json_t *d;
	json_array_foreach (ms, i, d) {
		json_t *pf = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(pf, "os"));
		const char *ar = json_string_value(json_object_get(pf, "architecture"));
		if (os && ar && !strcmp(os, "linux") && !strcmp(ar, host_goarch()))
			return d;
	}
	gg_err_set(err, GG_EFAIL, "'%s': the index lists %zu images and none is linux/%s", c->path,
		   n, host_goarch());
	return NULL;
}

static int read_oci_index(const struct container *c, struct image_ref *ref,
			  struct gg_oci_info *info, struct gg_err *err)
{
	json_t *index = load_json(c, "index.json", NULL, err), *sub = NULL, *man = NULL;
	int rc = GG_EFAIL;
	if (!index)
		return err->code;
	json_t *d = choose_manifest(c, index, err);
	if (!d)
		goto out;
	const char *ref_name = json_string_value(json_object_get(
		json_object_get(d, "annotations"), "org.opencontainers.image.ref.name"));
	if (ref_name)
		info->ref = strdup(ref_name);
	const char *mt = json_string_value(json_object_get(d, "mediaType"));
	const char *dg = json_string_value(json_object_get(d, "digest"));
	char *blob = digest_blob(dg);
	if (!blob) {
		gg_err_set(err, GG_EFAIL, "'%s': a manifest without a valid digest", c->path);
		goto out;
	}
	if (mt && (strstr(mt, "image.index") || strstr(mt, "manifest.list"))) {
		sub = load_json(c, blob, dg, err);
		free(blob);
		blob = NULL;
		if (!sub || !(d = choose_manifest(c, sub, err)))
			goto out;
		dg = json_string_value(json_object_get(d, "digest"));
		if (!(blob = digest_blob(dg))) {
			gg_err_set(err, GG_EFAIL, "'%s': a manifest without a valid digest",
				   c->path);
			goto out;
		}
	}
	man = load_json(c, blob, dg, err);
	free(blob);
	if (!man)
		goto out;
	info->digest = strdup(dg);
	const char *cd =
		json_string_value(json_object_get(json_object_get(man, "config"), "digest"));
	if (!(ref->config = digest_blob(cd))) {
		gg_err_set(err, GG_EFAIL, "'%s': the manifest has no config digest", c->path);
		goto out;
	}
	json_t *layers = json_object_get(man, "layers");
	size_t i;
	json_t *l;
	json_array_foreach (layers, i, l) {
		const char *ld = json_string_value(json_object_get(l, "digest"));
		char *lb = digest_blob(ld);
		if (!lb) {
			gg_err_set(err, GG_EFAIL, "'%s': layer %zu has no valid digest", c->path,
				   i + 1);
			goto out;
		}
		int r = add_layer(ref, lb, ld);
		free(lb);
		if (r < 0) {
			gg_err_set(err, GG_ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(index);
	json_decref(sub);
	json_decref(man);
	return rc < 0 ? (err->code ? err->code : rc) : 0;
}

static int read_docker_manifest(const struct container *c, struct image_ref *ref,
				struct gg_oci_info *info, struct gg_err *err)
{
	json_t *m = load_json(c, "manifest.json", NULL, err);
	int rc = GG_EFAIL;
	if (!m)
		return err->code;
	if (!json_is_array(m) || json_array_size(m) != 1) {
		gg_err_set(err, GG_EFAIL, "'%s': the archive holds %zu images (save just one)",
			   c->path, json_array_size(m));
		goto out;
	}
	json_t *img = json_array_get(m, 0);
	const char *cfg = json_string_value(json_object_get(img, "Config"));
	if (!cfg) {
		gg_err_set(err, GG_EFAIL, "'%s': manifest.json has no Config", c->path);
		goto out;
	}
	ref->config = strdup(cfg);
	const char *tag = json_string_value(json_array_get(json_object_get(img, "RepoTags"), 0));
	if (tag)
		info->ref = strdup(tag);
	char *cd = name_digest(cfg);
	if (!cd) {
		/* legacy: "<hex>.json" is the image ID */
		const char *base = strrchr(cfg, '/');
		base = base ? base + 1 : cfg;
		if (strlen(base) == 69 && !strcmp(base + 64, ".json"))
			cd = gg_strdup_printf("sha256:%.64s", base);
	}
	info->digest = cd;
	json_t *layers = json_object_get(img, "Layers");
	size_t i;
	json_t *l;
	json_array_foreach (layers, i, l) {
		const char *name = json_string_value(l);
		if (!name) {
			gg_err_set(err, GG_EFAIL, "'%s': manifest.json: layer %zu is not a name",
				   c->path, i + 1);
			goto out;
		}
		char *dg = name_digest(name);
		int r = add_layer(ref, name, dg);
		free(dg);
		if (r < 0) {
			gg_err_set(err, GG_ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(m);
	return rc < 0 ? (err->code ? err->code : rc) : 0;
}

static int has_blob(const struct container *c, const char *name)
{
	if (c->is_dir) {
		char *p = gg_strdup_printf("%s/%s", c->path, name);
		int ok = p && access(p, F_OK) == 0;
		free(p);
		return ok;
	}
	return find_member(c, name, 0) != NULL;
}

/* ---- the two passes ---------------------------------------------------------------- */

static int cmp_seq(const void *a, const void *b)
{
	uint64_t x = (*(struct gg_inode *const *)a)->src_seq;
	uint64_t y = (*(struct gg_inode *const *)b)->src_seq;
	return x < y ? -1 : x > y;
}

struct winners {
	struct gg_inode **v;
	size_t n, cap;
	uint64_t bytes;
};

static int collect(struct gg_node *n, void *ud)
{
	struct winners *w = ud;
	struct gg_inode *ino = n->inode;
	if (!S_ISREG(ino->mode) || !ino->src_seq || ino->visited)
		return 0;
	ino->visited = 1;
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 256;
		struct gg_inode **nv = realloc(w->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		w->v = nv;
		w->cap = nc;
	}
	w->v[w->n++] = ino;
	w->bytes += ino->size;
	return 0;
}

/* The next header of a layer: 1, 0 at its end, or a negative error (a
 * cancellation wins over a read error). */
static int next_header(struct gg_feed *fz, struct archive *a, struct archive_entry **ae,
		       const char *what, int warn, struct gg_err *err)
{
	int x = archive_read_next_header(a, ae);
	if (x == ARCHIVE_EOF)
		return 0;
	if (x == ARCHIVE_WARN) {
		if (warn && gg_image_archive_warning_matters(archive_error_string(a)))
			gg_image_warn(fz, "%s: %s", what, archive_error_string(a));
	} else if (x != ARCHIVE_OK) {
		const char *m = archive_error_string(a);
		int rc = gg_err_set(err, GG_EFAIL, "%s: %s", what, m ? m : "read error");
		return gg_image_check_cancel(fz, err) < 0 ? err->code : rc;
	}
	int rc = gg_image_check_cancel(fz, err);
	return rc < 0 ? rc : 1;
}

/* Pass 1 for layer L: headers only, whiteouts applied to the tree. */
static int layer_headers(struct gg_feed *fz, const struct container *c, const struct image_ref *ref,
			 size_t L, struct gg_entry_buf *eb, struct gg_err *err)
{
	struct gg_tree *t = gg_image_feed_tree(fz);
	char what[1024];
	snprintf(what, sizeof what, "'%s': layer %zu", c->path, L + 1);
	int rc = 0;
	if (ref->digests[L][0] && (rc = check_digest(c, ref->layers[L], ref->digests[L], err)) < 0)
		return rc;
	struct range r;
	struct archive *a;
	if ((rc = layer_open(c, ref->layers[L], &r, &a, err)) < 0)
		return rc;
	struct archive_entry *ae;
	for (uint64_t idx = 1; (rc = next_header(fz, a, &ae, what, 1, err)) > 0; idx++) {
		struct gg_inode *data;
		if ((rc = gg_image_entry_from_archive(fz, ae, eb, what, err)) < 0)
			break;
		if ((rc = gg_image_tree_apply(t, &eb->e, (int)L + 1, 1, &data, err)) < 0) {
			gg_err_prefix(err, "%s", what);
			break;
		}
		if (data)
			data->src_seq = ((uint64_t)(L + 1) << 40) | idx;
	}
	archive_read_free(a);
	blob_close(&r);
	return rc < 0 ? rc : 0;
}

/* The entries that survived every layer, in archive order (w). */
static int survivors(struct gg_feed *fz, struct winners *w, struct gg_err *err)
{
	struct gg_tree *t = gg_image_feed_tree(fz);
	for (struct gg_inode *i = t->all; i; i = i->next_all)
		i->visited = 0;
	if (gg_image_tree_walk(t->root, collect, NULL, w) != 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; i < w->n; i++)
		w->v[i]->visited = 0;
	if (w->n) /* nothing survived: w->v is NULL, which qsort must not get */
		qsort(w->v, w->n, sizeof *w->v, cmp_seq);
	gg_image_progress_totals(fz, w->n, w->bytes);
	return 0;
}

/* One surviving entry's data, fed from the archive. */
static int feed_one(struct gg_feed *fz, struct archive *a, struct archive_entry *ae,
		    struct gg_inode *ino, const char *what, struct gg_err *err)
{
	const char *nm = archive_entry_pathname_utf8(ae);
	if (!nm)
		nm = archive_entry_pathname(ae);
	char *path = nm ? malloc(strlen(nm) + 1) : NULL;
	if (!path)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_image_path_clean(nm, path, err);
	if (rc == 0)
		rc = gg_image_feed_archive_data(fz, a, ino, path, what, err);
	free(path);
	return rc;
}

#define LAYER_OF(seq) ((seq) & ~((1ull << 40) - 1))

/* Pass 2 for layer L: the data of its entries that survived (from *next on). */
static int layer_data(struct gg_feed *fz, const struct container *c, const struct image_ref *ref,
		      size_t L, const struct winners *w, size_t *next, struct gg_err *err)
{
	uint64_t lay = (uint64_t)(L + 1) << 40;
	if (LAYER_OF(w->v[*next]->src_seq) != lay)
		return 0; /* nothing of this layer survived */
	char what[1024];
	snprintf(what, sizeof what, "'%s': layer %zu", c->path, L + 1);
	struct range r;
	struct archive *a;
	int rc = layer_open(c, ref->layers[L], &r, &a, err);
	if (rc < 0)
		return rc;
	struct archive_entry *ae;
	for (uint64_t idx = 1; *next < w->n && LAYER_OF(w->v[*next]->src_seq) == lay; idx++) {
		if ((rc = next_header(fz, a, &ae, what, 0, err)) <= 0) {
			if (rc == 0)
				rc = gg_err_set(err, GG_EFAIL, "%s changed while reading", what);
			break;
		}
		if ((lay | idx) != w->v[*next]->src_seq)
			continue;
		if ((rc = feed_one(fz, a, ae, w->v[*next], what, err)) < 0)
			break;
		(*next)++;
	}
	archive_read_free(a);
	blob_close(&r);
	return rc < 0 ? rc : 0;
}

static int read_layers(struct gg_feed *fz, const struct container *c, const struct image_ref *ref,
		       struct gg_err *err)
{
	struct gg_entry_buf eb;
	memset(&eb, 0, sizeof eb);
	struct winners w = {0};
	int rc = 0;
	for (size_t L = 0; L < ref->nlayers && !rc; L++)
		rc = layer_headers(fz, c, ref, L, &eb, err);
	if (rc == 0)
		rc = survivors(fz, &w, err);
	size_t next = 0;
	for (size_t L = 0; L < ref->nlayers && next < w.n && !rc; L++)
		rc = layer_data(fz, c, ref, L, &w, &next, err);
	free(w.v);
	gg_image_entry_buf_free(&eb);
	return rc;
}

int gg_image_read_oci(struct gg_feed *fz, const char *path, struct gg_oci_info *info,
		      struct gg_err *err)
{
	struct container c;
	struct image_ref ref;
	memset(&ref, 0, sizeof ref);
	json_t *cfg = NULL;
	if (container_open(&c, path, fz, err) < 0)
		return err->code;
	int rc;
	if (has_blob(&c, "manifest.json")) {
		info->bootstrap = "docker-archive";
		rc = read_docker_manifest(&c, &ref, info, err);
	} else if (has_blob(&c, "index.json")) {
		info->bootstrap = c.is_dir ? "oci" : "oci-archive";
		rc = read_oci_index(&c, &ref, info, err);
	} else {
		rc = gg_err_set(err, GG_EFAIL,
				"'%s': neither an OCI image layout (index.json) nor a docker save "
				"archive (manifest.json)",
				path);
	}
	if (rc < 0)
		goto out;
	char *cd = name_digest(ref.config);
	cfg = load_json(&c, ref.config, cd, err);
	free(cd);
	if (!cfg) {
		rc = err->code;
		goto out;
	}
	json_t *cc = json_object_get(cfg, "config");
	if (json_is_object(cc)) {
		info->config_json = json_dumps(cc, JSON_COMPACT | JSON_SORT_KEYS);
		json_t *labels = json_object_get(cc, "Labels");
		if (json_is_object(labels))
			info->labels_json = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS);
	}
	rc = read_layers(fz, &c, &ref, err);
out:
	json_decref(cfg);
	image_ref_clear(&ref);
	container_close(&c);
	return rc;
}

void gg_image_oci_info_clear(struct gg_oci_info *info)
{
	free(info->digest);
	free(info->config_json);
	free(info->labels_json);
	free(info->ref);
	memset(info, 0, sizeof *info);
}

/* ---- detection --------------------------------------------------------------------- */

static int looks_like_image_archive(const char *name)
{
	while (!strncmp(name, "./", 2))
		name += 2;
	return !strcmp(name, "manifest.json") || !strcmp(name, "oci-layout") ||
	       !strcmp(name, "index.json") || !strcmp(name, "repositories") ||
	       !strncmp(name, "blobs/sha256/", 13);
}

int gg_image_detect(const char *path, enum gg_image_format *out, struct gg_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "'%s'", path);
	if (S_ISDIR(st.st_mode)) {
		char *a = gg_strdup_printf("%s/oci-layout", path);
		char *b = gg_strdup_printf("%s/index.json", path);
		int oci = a && b && access(a, F_OK) == 0 && access(b, F_OK) == 0;
		free(a);
		free(b);
		*out = oci ? GG_IMAGE_OCI : GG_IMAGE_DIR;
		return 0;
	}
	*out = GG_IMAGE_TAR;
	if (!S_ISREG(st.st_mode))
		return 0; /* a pipe or device: a tar stream */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gg_err_sys(err, GG_EFAIL, errno, "opening '%s'", path);
	unsigned char h[512];
	int r = gg_image_pread_all(fd, h, sizeof h, 0);
	int e = errno;
	close(fd);
	if (r < 0 && e != 0)
		return gg_err_sys(err, GG_EFAIL, e, "reading '%s'", path);
	if (r == 0 && !memcmp(h + 257, "ustar", 5)) {
		struct container c;
		struct gg_err ignore = {0};
		if (container_open(&c, path, NULL, &ignore) == 0) {
			int img = 0;
			for (size_t i = 0; i < c.nm && !img; i++)
				img = !strcmp(c.m[i].name, "manifest.json") ||
				      (!strcmp(c.m[i].name, "index.json") &&
				       find_member(&c, "oci-layout", 0));
			container_close(&c);
			if (img)
				*out = GG_IMAGE_OCI;
		}
		return 0;
	}
	/* compressed? peek at the first entries for an image archive's files */
	struct archive *a = gg_image_tar_reader();
	if (!a)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int img = 0, compressed = 0;
	if (archive_read_open_filename(a, path, 64 << 10) == ARCHIVE_OK) {
		struct archive_entry *ae;
		for (int i = 0; i < 64 && !img; i++) {
			if (archive_read_next_header(a, &ae) != ARCHIVE_OK)
				break;
			compressed = archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE;
			const char *nm = archive_entry_pathname(ae);
			img = nm && looks_like_image_archive(nm);
		}
	}
	archive_read_free(a);
	if (img && compressed)
		return gg_err_set(err, GG_EUSAGE,
				  "'%s' looks like a compressed docker or OCI archive: decompress "
				  "it first (or give --format tar to freeze it as a plain tar)",
				  path);
	return 0;
}
