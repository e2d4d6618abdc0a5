/* The in-memory tree of the image: names (sorted per directory, as squashfs wants them),
 * inodes shared by hard links, archive entries applied with overlay whiteouts. */
#include "image/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqfs/predef.h>

#define MAX_IDS 65536u

/* A node and its name in one allocation, name being namelen bytes (no NUL needed). */
static struct gg_node *node_new(const char *name, size_t namelen)
{
	if (namelen > SIZE_MAX - sizeof(struct gg_node) - 1)
		return NULL;
	struct gg_node *n = calloc(1, sizeof *n + namelen + 1);
	if (!n)
		return NULL;
	n->name = (char *)(n + 1);
	memcpy(n->name, name, namelen);
	return n;
}

struct gg_tree *gg_image_tree_new(void)
{
	struct gg_tree *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	struct gg_inode *ino = gg_image_inode_new(t);
	t->root = node_new("", 0);
	if (!ino || !t->root) {
		gg_image_tree_free(t);
		return NULL;
	}
	ino->mode = S_IFDIR | 0755;
	t->root->inode = ino;
	t->nnodes = 1;
	return t;
}

/* Free n and its subtree: always down to the last child left, freeing on the way up,
 * so that no stack is needed whatever the depth. */
static void node_free(struct gg_node *top)
{
	struct gg_node *n = top;
	while (n) {
		if (n->nkids) {
			n = n->kids[--n->nkids];
			continue;
		}
		struct gg_node *up = n == top ? NULL : n->parent;
		free(n->kids);
		free(n);
		n = up;
	}
}

void gg_image_tree_free(struct gg_tree *t)
{
	if (!t)
		return;
	node_free(t->root);
	struct gg_inode *i = t->all;
	while (i) {
		struct gg_inode *next = i->next_all;
		free(i->target);
		free(i->xattrs);
		free(i->capture);
		if (i->sq)
			sqfs_free(i->sq);
		free(i);
		i = next;
	}
	free(t->ids);
	free(t);
}

struct gg_inode *gg_image_inode_new(struct gg_tree *t)
{
	struct gg_inode *i = calloc(1, sizeof *i);
	if (!i)
		return NULL;
	i->next_all = t->all;
	t->all = i;
	return i;
}

/* Open-addressing set of ids; slot value 0 means empty, so ids are stored + 1 and the
 * id 0xFFFFFFFF (which would wrap to 0) has a flag of its own. */
int gg_image_tree_note_id(struct gg_tree *t, uint32_t id, struct gg_err *err)
{
	if (id == UINT32_MAX) {
		if (t->id_max_seen)
			return 0;
		if (t->nids >= MAX_IDS)
			goto full;
		t->id_max_seen = 1;
		t->nids++;
		return 0;
	}
	if (t->idcap == 0 || (t->nids + 1) * 2 > t->idcap) {
		size_t ncap = t->idcap ? t->idcap * 2 : 64;
		uint32_t *nids = calloc(ncap, sizeof *nids);
		if (!nids)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		for (size_t i = 0; i < t->idcap; i++) {
			uint32_t v = t->ids[i];
			if (!v)
				continue;
			size_t h = (v * 2654435761u) & (ncap - 1);
			while (nids[h])
				h = (h + 1) & (ncap - 1);
			nids[h] = v;
		}
		free(t->ids);
		t->ids = nids;
		t->idcap = ncap;
	}
	uint32_t v = id + 1;
	size_t h = (v * 2654435761u) & (t->idcap - 1);
	while (t->ids[h]) {
		if (t->ids[h] == v)
			return 0;
		h = (h + 1) & (t->idcap - 1);
	}
	if (t->nids >= MAX_IDS)
		goto full;
	t->ids[h] = v;
	t->nids++;
	return 0;
full:
	return gg_err_set(err, GG_EFAIL,
			  "more than %u distinct user and group ids (the squashfs limit)", MAX_IDS);
}

static int find_pos(const struct gg_node *dir, const char *name, size_t len, int *found)
{
	size_t lo = 0, hi = dir->nkids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *k = dir->kids[mid]->name;
		int c = strncmp(k, name, len);
		if (c == 0)
			c = k[len] ? 1 : 0;
		if (c == 0) {
			*found = 1;
			return (int)mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return (int)lo;
}

static struct gg_node *find_n(const struct gg_node *dir, const char *name, size_t len)
{
	int found;
	int pos = find_pos(dir, name, len, &found);
	return found ? dir->kids[pos] : NULL;
}

struct gg_node *gg_image_node_find(const struct gg_node *dir, const char *name)
{
	return find_n(dir, name, strlen(name));
}

struct gg_node *gg_image_node_add(struct gg_tree *t, struct gg_node *dir, const char *name,
				  size_t namelen, struct gg_inode *ino)
{
	int found;
	int pos = find_pos(dir, name, namelen, &found);
	if (found)
		return NULL;
	if (dir->nkids == dir->cap) {
		if (dir->cap > UINT32_MAX / 2)
			return NULL;
		uint32_t ncap = dir->cap ? dir->cap * 2 : 4;
		struct gg_node **nk = realloc(dir->kids, ncap * sizeof *nk);
		if (!nk)
			return NULL;
		dir->kids = nk;
		dir->cap = ncap;
	}
	struct gg_node *n = node_new(name, namelen);
	if (!n)
		return NULL;
	n->parent = dir;
	n->inode = ino;
	memmove(&dir->kids[pos + 1], &dir->kids[pos],
		(dir->nkids - (size_t)pos) * sizeof *dir->kids);
	dir->kids[pos] = n;
	dir->nkids++;
	t->nnodes++;
	return n;
}

static int count_one(struct gg_node *n, void *ud)
{
	(void)n;
	++*(uint64_t *)ud;
	return 0;
}

void gg_image_node_remove(struct gg_tree *t, struct gg_node *n)
{
	struct gg_node *dir = n->parent;
	if (!dir)
		return; /* never the root */
	int found;
	int pos = find_pos(dir, n->name, strlen(n->name), &found);
	if (found && dir->kids[pos] == n) {
		memmove(&dir->kids[pos], &dir->kids[pos + 1],
			(dir->nkids - (size_t)pos - 1) * sizeof *dir->kids);
		dir->nkids--;
	}
	uint64_t count = 0;
	gg_image_tree_walk(n, count_one, NULL, &count);
	t->nnodes -= count;
	node_free(n);
}

char *gg_image_node_path(const struct gg_node *n)
{
	size_t len = 0;
	for (const struct gg_node *p = n; p->parent; p = p->parent)
		len += strlen(p->name) + (p->parent->parent ? 1 : 0);
	char *s = malloc(len + 1);
	if (!s)
		return NULL;
	s[len] = '\0';
	for (const struct gg_node *p = n; p->parent; p = p->parent) {
		size_t l = strlen(p->name);
		len -= l;
		memcpy(s + len, p->name, l);
		if (p->parent->parent)
			s[--len] = '/';
	}
	return s;
}

/* The sibling after n (n is a child of a directory), or NULL when n is the last. */
static struct gg_node *next_sibling(const struct gg_node *n)
{
	const struct gg_node *dir = n->parent;
	int found;
	size_t pos = (size_t)find_pos(dir, n->name, strlen(n->name), &found);
	return found && pos + 1 < dir->nkids ? dir->kids[pos + 1] : NULL;
}

int gg_image_tree_walk(struct gg_node *top, gg_walk_fn pre, gg_walk_fn post, void *ud)
{
	struct gg_node *n = top;
	for (;;) {
		int rc = pre ? pre(n, ud) : 0;
		if (rc && rc != GG_WALK_SKIP)
			return rc;
		if (!rc && n->nkids) {
			n = n->kids[0];
			continue;
		}
		if (!rc && post && (rc = post(n, ud)) != 0)
			return rc;
		/* up until a node has a next sibling, finishing the directories left */
		while (n != top) {
			struct gg_node *sib = next_sibling(n);
			if (sib) {
				n = sib;
				break;
			}
			n = n->parent;
			if (post && (rc = post(n, ud)) != 0)
				return rc;
		}
		if (n == top)
			return 0;
	}
}

struct gg_node *gg_image_tree_lookup(const struct gg_tree *t, const char *path)
{
	struct gg_node *cur = t->root;
	const char *p = path;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len) {
			if (!S_ISDIR(cur->inode->mode))
				return NULL;
			cur = find_n(cur, p, len);
			if (!cur)
				return NULL;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return cur;
}

struct gg_node *gg_image_tree_resolve(const struct gg_tree *t, const char *path)
{
	size_t cap = strlen(path) + 1;
	char *rest = malloc(cap);
	if (!rest)
		return NULL;
	memcpy(rest, path, cap);
	struct gg_node *cur = t->root;
	int hops = 0;
	size_t off = 0;
	for (;;) {
		while (rest[off] == '/')
			off++;
		if (!rest[off])
			break;
		char *comp = rest + off;
		char *slash = strchr(comp, '/');
		size_t len = slash ? (size_t)(slash - comp) : strlen(comp);
		off += len;
		if (len == 1 && comp[0] == '.')
			continue;
		if (len == 2 && comp[0] == '.' && comp[1] == '.') {
			if (cur->parent)
				cur = cur->parent;
			continue;
		}
		if (!S_ISDIR(cur->inode->mode)) {
			cur = NULL;
			break;
		}
		struct gg_node *kid = find_n(cur, comp, len);
		if (!kid) {
			cur = NULL;
			break;
		}
		if (S_ISLNK(kid->inode->mode) && kid->inode->target) {
			if (++hops > 40) {
				cur = NULL;
				break;
			}
			const char *tg = kid->inode->target;
			size_t tl = strlen(tg), rl = strlen(rest + off);
			char *n = malloc(tl + 1 + rl + 1);
			if (!n) {
				cur = NULL;
				break;
			}
			memcpy(n, tg, tl);
			n[tl] = '/';
			memcpy(n + tl + 1, rest + off, rl + 1);
			free(rest);
			rest = n;
			off = 0;
			if (tg[0] == '/')
				cur = t->root;
			continue;
		}
		cur = kid;
	}
	free(rest);
	return cur;
}

int gg_image_inode_set_xattrs(struct gg_inode *ino, const unsigned char *packed, size_t len)
{
	free(ino->xattrs);
	ino->xattrs = NULL;
	ino->xattrs_len = 0;
	if (!len)
		return 0;
	ino->xattrs = malloc(len);
	if (!ino->xattrs)
		return GG_ENOMEM;
	memcpy(ino->xattrs, packed, len);
	ino->xattrs_len = len;
	return 0;
}

/* ---- packed xattrs ------------------------------------------------------------------ */

int gg_image_xattr_supported(const char *key)
{
	return !strncmp(key, "user.", 5) || !strncmp(key, "trusted.", 8) ||
	       !strncmp(key, "security.", 9);
}

int gg_image_xattr_add(struct gg_xattr_buf *b, const char *key, const void *val, size_t vlen)
{
	size_t klen = strlen(key);
	if (klen > 0xFFFF || vlen > 0xFFFFFFFFu)
		return GG_EFAIL;
	size_t need = 2 + klen + 4 + vlen;
	if (b->len + need > b->cap) {
		size_t ncap = b->cap ? b->cap : 256;
		while (ncap < b->len + need)
			ncap *= 2;
		unsigned char *nb = realloc(b->buf, ncap);
		if (!nb)
			return GG_ENOMEM;
		b->buf = nb;
		b->cap = ncap;
	}
	unsigned char *p = b->buf + b->len;
	uint16_t kl = (uint16_t)klen;
	uint32_t vl = (uint32_t)vlen;
	memcpy(p, &kl, 2);
	memcpy(p + 2, key, klen);
	memcpy(p + 2 + klen, &vl, 4);
	if (vlen)
		memcpy(p + 6 + klen, val, vlen);
	b->len += need;
	b->count++;
	return 0;
}

struct xent {
	const unsigned char *p;
	size_t len;
	uint16_t klen;
};

static int xent_cmp(const void *a, const void *b)
{
	const struct xent *x = a, *y = b;
	size_t m = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->p + 2, y->p + 2, m);
	if (c)
		return c;
	return (int)x->klen - (int)y->klen;
}

int gg_image_xattr_sort(struct gg_xattr_buf *b)
{
	if (b->count < 2)
		return 0;
	struct xent *v = malloc(b->count * sizeof *v);
	unsigned char *nb = malloc(b->len);
	if (!v || !nb) {
		free(v);
		free(nb);
		return GG_ENOMEM;
	}
	size_t off = 0, n = 0;
	while (off < b->len && n < b->count) {
		uint16_t kl;
		uint32_t vl;
		memcpy(&kl, b->buf + off, 2);
		memcpy(&vl, b->buf + off + 2 + kl, 4);
		v[n].p = b->buf + off;
		v[n].klen = kl;
		v[n].len = 2 + (size_t)kl + 4 + vl;
		off += v[n].len;
		n++;
	}
	qsort(v, n, sizeof *v, xent_cmp);
	off = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(nb + off, v[i].p, v[i].len);
		off += v[i].len;
	}
	free(b->buf);
	b->buf = nb;
	b->cap = b->len;
	free(v);
	return 0;
}

void gg_image_xattr_free(struct gg_xattr_buf *b)
{
	free(b->buf);
	memset(b, 0, sizeof *b);
}

/* ---- paths ----------------------------------------------------------------------- */

int gg_image_path_clean(const char *in, char *out, struct gg_err *err)
{
	if (in[0] == '/')
		return gg_err_set(err, GG_EFAIL, "entry '%s': absolute names are not allowed", in);
	size_t o = 0;
	const char *p = in;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return gg_err_set(err, GG_EFAIL,
					  "entry '%s': '..' in a name would escape the image", in);
		if (len && !(len == 1 && p[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
		while (*p == '/')
			p++;
	}
	out[o] = '\0';
	return 0;
}

/* The path as shown in a message: at most 200 bytes of it. */
#define SHOWN(path) \
	(strlen(path) > 200 ? 200 : (int)strlen(path)), (path), (strlen(path) > 200 ? "..." : "")

int gg_image_path_check(const char *path, int whiteouts, struct gg_err *err)
{
	size_t len = strlen(path);
	if (len > GG_IMAGE_PATH_MAX)
		return gg_err_set(err, GG_EFAIL,
				  "entry '%.*s%s': a path of %zu bytes (at most %d are allowed)",
				  SHOWN(path), len, GG_IMAGE_PATH_MAX);
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		size_t max = GG_IMAGE_NAME_MAX;
		if (whiteouts && !p[n] && !strncmp(p, ".wh.", 4))
			max += 4;
		if (n > max)
			return gg_err_set(err, GG_EFAIL,
					  "entry '%.*s%s': a name of %zu bytes (squashfs allows at "
					  "most %d)",
					  SHOWN(path), n, GG_IMAGE_NAME_MAX);
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

/* ---- applying archive entries ------------------------------------------------------- */

static void set_attrs(struct gg_inode *ino, const struct gg_entry *e)
{
	ino->mode = e->mode;
	ino->uid = e->uid;
	ino->gid = e->gid;
	ino->mtime = e->mtime;
	ino->rdev = e->rdev;
	ino->size = e->size;
}

static int whiteout(struct gg_tree *t, struct gg_node *dir, const char *base, int layer)
{
	if (!strcmp(base, ".wh..wh..opq")) {
		/* opaque directory: hide everything the lower layers put there */
		for (size_t i = dir->nkids; i-- > 0;)
			if (dir->kids[i]->layer < layer)
				gg_image_node_remove(t, dir->kids[i]);
		return 0;
	}
	if (!strncmp(base, ".wh..wh.", 8))
		return 0; /* aufs bookkeeping (.wh..wh.plnk, .wh..wh.aufs) */
	struct gg_node *victim = gg_image_node_find(dir, base + 4);
	if (victim && victim->layer < layer)
		gg_image_node_remove(t, victim);
	return 0;
}

/* The root itself ("./" in a tar made with -C dir .). */
static int apply_root(struct gg_tree *t, const struct gg_entry *e, struct gg_err *err)
{
	if (!S_ISDIR(e->mode))
		return gg_err_set(err, GG_EFAIL, "entry '.': the root is not a directory");
	if (e->hardlink)
		return gg_err_set(err, GG_EFAIL, "entry '.': a hard link as the root");
	set_attrs(t->root->inode, e);
	t->root_set = 1;
	if (gg_image_tree_note_id(t, e->uid, err) < 0 || gg_image_tree_note_id(t, e->gid, err) < 0)
		return err->code;
	if (gg_image_inode_set_xattrs(t->root->inode, e->xattrs, e->xattrs_len) < 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return 0;
}

/* Walk (and make) the parents of path, whose last name starts at base: *dir
 * is the one that holds it, or NULL for a whiteout below a directory that is
 * not there (nothing to do). */
static int apply_parents(struct gg_tree *t, const struct gg_entry *e, const char *base, int layer,
			 int whiteouts, struct gg_node **dir, struct gg_err *err)
{
	const char *path = e->path, *p = path;
	*dir = t->root;
	while (p < base) {
		const char *slash = strchr(p, '/');
		size_t len = (size_t)(slash - p);
		struct gg_node *kid = find_n(*dir, p, len);
		if (!kid) {
			if (whiteouts && !strncmp(base, ".wh.", 4)) {
				*dir = NULL;
				return 0;
			}
			struct gg_inode *ino = gg_image_inode_new(t);
			if (!ino || !(kid = gg_image_node_add(t, *dir, p, len, ino)))
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			ino->mode = S_IFDIR | 0755;
			ino->mtime = e->mtime;
			kid->layer = layer;
			if (gg_image_tree_note_id(t, 0, err) < 0)
				return err->code;
		} else if (S_ISLNK(kid->inode->mode)) {
			return gg_err_set(err, GG_EFAIL,
					  "entry '%s': goes through the symbolic link '%.*s' "
					  "(it could point outside the image)",
					  path, (int)(slash - path), path);
		} else if (!S_ISDIR(kid->inode->mode)) {
			return gg_err_set(err, GG_EFAIL, "entry '%s': '%.*s' is not a directory",
					  path, (int)(slash - path), path);
		}
		*dir = kid;
		p = slash + 1;
	}
	return 0;
}

/* A hard link named base in dir, to an entry the archive had before. */
static int apply_hardlink(struct gg_tree *t, const struct gg_entry *e, struct gg_node *dir,
			  const char *base, struct gg_node *existing, int layer, struct gg_err *err)
{
	struct gg_node *tg = gg_image_tree_lookup(t, e->hardlink);
	if (!tg)
		return gg_err_set(err, GG_EFAIL,
				  "entry '%s': hard link to '%s', which is not in the archive "
				  "before it",
				  e->path, e->hardlink);
	if (S_ISDIR(tg->inode->mode))
		return gg_err_set(err, GG_EFAIL, "entry '%s': hard link to the directory '%s'",
				  e->path, e->hardlink);
	if (existing == tg)
		return 0;
	if (existing)
		gg_image_node_remove(t, existing);
	struct gg_node *n = gg_image_node_add(t, dir, base, strlen(base), tg->inode);
	if (!n)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	n->layer = layer;
	return 0;
}

/* A new inode for e, named base in dir (replacing what was there). */
static int apply_new(struct gg_tree *t, const struct gg_entry *e, struct gg_node *dir,
		     const char *base, int layer, struct gg_inode **data, struct gg_err *err)
{
	struct gg_inode *ino = gg_image_inode_new(t);
	if (!ino)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	set_attrs(ino, e);
	if (S_ISLNK(e->mode) && !(ino->target = strdup(e->symlink ? e->symlink : "")))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (gg_image_inode_set_xattrs(ino, e->xattrs, e->xattrs_len) < 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_node *n = gg_image_node_add(t, dir, base, strlen(base), ino);
	if (!n)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	n->layer = layer;
	if (S_ISREG(e->mode))
		*data = ino;
	return 0;
}

int gg_image_tree_apply(struct gg_tree *t, const struct gg_entry *e, int layer, int whiteouts,
			struct gg_inode **data, struct gg_err *err)
{
	*data = NULL;
	const char *path = e->path;
	if (gg_image_path_check(path, whiteouts, err) < 0)
		return err->code;
	if (!*path)
		return apply_root(t, e, err);
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	struct gg_node *dir;
	if (apply_parents(t, e, base, layer, whiteouts, &dir, err) < 0)
		return err->code;
	if (!dir)
		return 0;
	if (whiteouts && !strncmp(base, ".wh.", 4))
		return whiteout(t, dir, base, layer);
	struct gg_node *existing = gg_image_node_find(dir, base);
	if (e->hardlink)
		return apply_hardlink(t, e, dir, base, existing, layer, err);
	if (gg_image_tree_note_id(t, e->uid, err) < 0 || gg_image_tree_note_id(t, e->gid, err) < 0)
		return err->code;
	if (existing && S_ISDIR(existing->inode->mode) && S_ISDIR(e->mode)) {
		set_attrs(existing->inode, e);
		existing->layer = layer;
		if (gg_image_inode_set_xattrs(existing->inode, e->xattrs, e->xattrs_len) < 0)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		return 0;
	}
	if (existing)
		gg_image_node_remove(t, existing);
	return apply_new(t, e, dir, base, layer, data, err);
}
