/* The list a session's snapshot begins with (the launcher's find -printf, one record
 * per entry of the sandbox: "TYPE UID GID MODE MTIME SIZE INODE LINKS ./PATH" NUL
 * "TARGET" NUL), parsed strictly: it comes from the node. */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"

void gg_snap_list_free(struct gg_snap_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		free(e[i].path);
		free(e[i].target);
	}
	free(e);
}

/* A whole number in base 8 or 10 from *p up to a blank, at most max. */
static int number(const char **p, const char *end, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;
	for (; s < end && *s >= '0' && *s < '0' + base; s++) {
		if (v > (max - (uint64_t)(*s - '0')) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)(*s - '0');
	}
	if (s == *p || s >= end || *s != ' ')
		return -1;
	*out = v;
	*p = s + 1;
	return 0;
}

/* find's %T@: [-]SECONDS[.FRACTION], as whole seconds rounded down. */
static int mtime(const char **p, const char *end, int64_t *out)
{
	int neg = *p < end && **p == '-';
	const char *s = *p + neg;
	uint64_t v = 0;
	const char *d = s;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (uint64_t)INT64_MAX / 10 - 1)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (s == d)
		return -1;
	int frac = 0;
	if (s < end && *s == '.')
		for (s++; s < end && *s >= '0' && *s <= '9'; s++)
			frac |= *s != '0';
	if (s >= end || *s != ' ')
		return -1;
	*out = neg ? -(int64_t)v - frac : (int64_t)v;
	*p = s + 1;
	return 0;
}

/* "." or "./A/B": no empty, "." or ".." step after the first, no control byte. */
static int path_ok(const char *s, size_t n)
{
	if (n == 1 && s[0] == '.')
		return 1;
	if (n < 3 || s[0] != '.' || s[1] != '/' || n > GG_SNAP_PATH_MAX)
		return 0;
	for (size_t i = 2; i < n;) {
		size_t k = i;
		while (k < n && s[k] != '/')
			k++;
		size_t l = k - i;
		if (l == 0 || (l == 1 && s[i] == '.') || (l == 2 && s[i] == '.' && s[i + 1] == '.'))
			return 0;
		i = k + 1;
		if (k == n - 1) /* a trailing slash */
			return 0;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			return 0;
	return 1;
}

/* One record from p (end: the text's end); *next past its second NUL. */
static int record(const char *p, const char *end, struct gg_snap_entry *e, const char **next)
{
	static const char types[] = "fdlbcps";
	if (end - p < 2 || !strchr(types, p[0]) || p[1] != ' ')
		return -1;
	e->type = p[0];
	p += 2;
	uint64_t uid, gid, mode, size, ino, links;
	if (number(&p, end, 10, UINT32_MAX, &uid) < 0 ||
	    number(&p, end, 10, UINT32_MAX, &gid) < 0 || number(&p, end, 8, 07777, &mode) < 0 ||
	    mtime(&p, end, &e->mtime) < 0 || number(&p, end, 10, INT64_MAX, &size) < 0 ||
	    number(&p, end, 10, UINT64_MAX, &ino) < 0 ||
	    number(&p, end, 10, UINT32_MAX, &links) < 0)
		return -1;
	const char *z = memchr(p, '\0', (size_t)(end - p));
	if (!z || !path_ok(p, (size_t)(z - p)))
		return -1;
	const char *t = z + 1, *tz = t < end ? memchr(t, '\0', (size_t)(end - t)) : NULL;
	if (!tz || (size_t)(tz - t) > GG_SNAP_PATH_MAX || (e->type == 'l') != (tz > t))
		return -1;
	e->uid = (uint32_t)uid;
	e->gid = (uint32_t)gid;
	e->mode = (uint32_t)mode;
	e->size = size;
	e->ino = ino;
	e->nlink = links;
	e->path = strndup(p, (size_t)(z - p));
	e->target = tz > t ? strndup(t, (size_t)(tz - t)) : NULL;
	*next = tz + 1;
	return 0;
}

int gg_snap_list_parse(const char *text, size_t len, struct gg_snap_entry **out, size_t *n,
		       struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0, count = 0;
	struct gg_snap_entry *v = NULL;
	for (const char *p = text, *end = text + len; p < end;) {
		if (count == GG_SNAP_MAX_ENTRIES) {
			gg_snap_list_free(v, count);
			return gg_err_set(err, GG_EPROTO, "the snapshot lists more than %d entries",
					  GG_SNAP_MAX_ENTRIES);
		}
		if (count == cap) {
			cap = cap ? cap * 2 : 256;
			struct gg_snap_entry *nv = realloc(v, cap * sizeof *v);
			if (!nv) {
				gg_snap_list_free(v, count);
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			}
			v = nv;
		}
		memset(&v[count], 0, sizeof *v);
		if (record(p, end, &v[count], &p) < 0) {
			gg_snap_list_free(v, count + 1);
			return gg_err_set(err, GG_EPROTO,
					  "the snapshot's list is malformed at entry %zu",
					  count + 1);
		}
		if (!v[count].path || (v[count].type == 'l' && !v[count].target)) {
			gg_snap_list_free(v, count + 1);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
		count++;
	}
	if (count == 0 || strcmp(v[0].path, ".") || v[0].type != 'd') {
		gg_snap_list_free(v, count);
		return gg_err_set(err, GG_EPROTO,
				  "the snapshot's list does not begin with the sandbox's top");
	}
	*out = v;
	*n = count;
	return 0;
}

/* Paths in the order GNU tar --sort=name walks a tree: component by component, each
 * compared as strcmp does ('/' before any byte of a name). */
int gg_snap_path_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
		if (x == y) {
			if (!x)
				return 0;
			continue;
		}
		if (!x || !y)
			return x ? 1 : -1;
		if (x == '/' || y == '/')
			return x == '/' ? -1 : 1;
		return x < y ? -1 : 1;
	}
}
