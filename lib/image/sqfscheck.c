/* What verify checks in the directory tree of a squashfs it did not write: every
 * name is one a reader can create (1 to 256 bytes, no '/', no NUL, not "." or
 * ".."), every path fits PATH_MAX (4095 bytes), every symlink target is 1 to 4095
 * bytes, no name is listed twice in a directory and no directory is reached twice
 * (a loop). The walk is iterative: a pending-directory stack, never recursion. */
#include "image/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqfs/dir.h>
#include <sqfs/dir_reader.h>
#include <sqfs/inode.h>
#include <sqfs/super.h>

#define NAME_MAX_SQFS 256
#define PATH_MAX_IMG  4095

struct pending {
	sqfs_inode_generic_t *dir;
	char *path; /* "" for the root, else "a/b" */
};

struct walk {
	sqfs_dir_reader_t *rd;
	struct pending *stack;
	size_t n, cap;
	uint8_t *seen; /* directory inode numbers reached, 1..ninodes */
	uint32_t ninodes;
	char *why;
	size_t whylen;
	uint64_t entries;
};

static int unsound(struct walk *w, const char *fmt, ...) GG_ATTR_PRINTF(2, 3);
static int unsound(struct walk *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->why, w->whylen, fmt, ap);
	va_end(ap);
	return 1;
}

static const char *shown(const char *path)
{
	return path[0] ? path : "/";
}

static int check_name(struct walk *w, const char *dir, const char *name, size_t len)
{
	if (!len || memchr(name, '\0', len))
		return unsound(w, "an empty name or a NUL byte in a name, in '%.160s'", shown(dir));
	if (len > NAME_MAX_SQFS)
		return unsound(w, "a name of %zu bytes (at most %d), in '%.160s'", len,
			       NAME_MAX_SQFS, shown(dir));
	if (memchr(name, '/', len))
		return unsound(w, "the name '%.*s' holds a '/', in '%.160s'", (int)len, name,
			       shown(dir));
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return unsound(w, "an entry named '%.*s', in '%.160s'", (int)len, name, shown(dir));
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's names, sorted: the first one listed twice, or NULL. */
static const char *twice(char **names, size_t n)
{
	if (n < 2)
		return NULL;
	qsort(names, n, sizeof *names, by_name);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(names[i - 1], names[i]))
			return names[i];
	return NULL;
}

static int push(struct walk *w, sqfs_inode_generic_t *dir, char *path)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct pending *s = realloc(w->stack, cap * sizeof *s);
		if (!s)
			return -1;
		w->stack = s;
		w->cap = cap;
	}
	w->stack[w->n++] = (struct pending){dir, path};
	return 0;
}

/* The inode an entry names: a symlink's target, a directory reached once. */
static int check_inode(struct walk *w, sqfs_inode_generic_t *in, char *path, int *pushed)
{
	int t = in->base.type;
	if (t == SQFS_INODE_SLINK || t == SQFS_INODE_EXT_SLINK) {
		sqfs_u32 tl = t == SQFS_INODE_SLINK ? in->data.slink.target_size
						    : in->data.slink_ext.target_size;
		if (tl == 0 || tl > PATH_MAX_IMG)
			return unsound(w, "a symbolic link target of %u bytes (1 to %d): '%.160s'",
				       tl, PATH_MAX_IMG, path);
	}
	if (t != SQFS_INODE_DIR && t != SQFS_INODE_EXT_DIR)
		return 0;
	sqfs_u32 ino = in->base.inode_number;
	if (ino == 0 || ino > w->ninodes)
		return unsound(w, "directory inode number %u out of range: '%.160s'", ino, path);
	if (w->seen[ino / 8] & (1u << (ino % 8)))
		return unsound(w, "a directory listed twice (a loop or a hard link): '%.160s'",
			       path);
	w->seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
	if (push(w, in, path) < 0)
		return -1;
	*pushed = 1;
	return 0;
}

/* One entry of dir: its name, its path, its inode. The entry's name goes to names. */
static int check_entry(struct walk *w, const char *dir, const sqfs_dir_entry_t *e, char **name)
{
	size_t len = (size_t)e->size + 1, dl = strlen(dir);
	int rc = check_name(w, dir, (const char *)e->name, len);
	if (rc)
		return rc;
	if (dl + !!dl + len > PATH_MAX_IMG)
		return unsound(w, "a path longer than %d bytes, in '%.160s'", PATH_MAX_IMG,
			       shown(dir));
	char *path = malloc(dl + len + 2);
	if (!path || !(*name = strndup((const char *)e->name, len))) {
		free(path);
		return -1;
	}
	snprintf(path, dl + len + 2, "%s%s%.*s", dir, dl ? "/" : "", (int)len,
		 (const char *)e->name);
	sqfs_inode_generic_t *in = NULL;
	int pushed = 0;
	int src = sqfs_dir_reader_get_inode(w->rd, &in);
	rc = src ? unsound(w, "inode unreadable (%s): '%.160s'", gg_sqfs_strerror(src), path)
		 : check_inode(w, in, path, &pushed);
	if (!pushed) {
		sqfs_free(in);
		free(path);
	}
	return rc;
}

/* Every entry of one directory; pushes its subdirectories. */
static int check_dir(struct walk *w, struct pending *p)
{
	int rc = sqfs_dir_reader_open_dir(w->rd, p->dir, 0);
	if (rc)
		return unsound(w, "directory unreadable (%s): '%.160s'", gg_sqfs_strerror(rc),
			       shown(p->path));
	char **names = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		sqfs_dir_entry_t *e = NULL;
		int r = sqfs_dir_reader_read(w->rd, &e);
		if (r > 0)
			break;
		if (r == 0 && n == cap) {
			char **nn = realloc(names, (cap ? 2 * cap : 16) * sizeof *nn);
			if (!nn) {
				sqfs_free(e);
				rc = -1;
				break;
			}
			names = nn;
			cap = cap ? 2 * cap : 16;
		}
		if (r == 0)
			names[n] = NULL;
		rc = r < 0 ? unsound(w, "directory unreadable (%s): '%.160s'", gg_sqfs_strerror(r),
				     shown(p->path))
			   : check_entry(w, p->path, e, &names[n]);
		sqfs_free(e);
		if (r == 0 && names[n])
			n++; /* kept for freeing, even when the entry was unsound */
		if (rc)
			break;
		w->entries++;
	}
	const char *dup = rc ? NULL : twice(names, n);
	if (dup)
		rc = unsound(w, "the name '%.60s' listed twice, in '%.160s'", dup, shown(p->path));
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int gg_sqfs_check_tree(sqfs_file_t *file, const sqfs_super_t *sb, sqfs_compressor_t *cmp, char *why,
		       size_t whylen, uint64_t *entries)
{
	struct walk w = {.ninodes = sb->inode_count, .why = why, .whylen = whylen};
	why[0] = '\0';
	w.rd = sqfs_dir_reader_create(sb, cmp, file, 0);
	w.seen = calloc((size_t)sb->inode_count / 8 + 1, 1);
	sqfs_inode_generic_t *root = NULL;
	int rc = w.rd && w.seen ? 0 : -1, pushed = 0;
	if (rc == 0) {
		int r = sqfs_dir_reader_get_root_inode(w.rd, &root);
		char *p = r ? NULL : strdup("");
		rc = r    ? unsound(&w, "the root inode is unreadable: %s", gg_sqfs_strerror(r))
		     : !p ? -1
			  : check_inode(&w, root, p, &pushed);
		if (!pushed) {
			sqfs_free(root);
			free(p);
		}
		if (rc == 0 && !pushed)
			rc = unsound(&w, "the root is not a directory");
	}
	while (rc == 0 && w.n) {
		struct pending p = w.stack[--w.n];
		rc = check_dir(&w, &p);
		sqfs_free(p.dir);
		free(p.path);
	}
	while (w.n) {
		w.n--;
		sqfs_free(w.stack[w.n].dir);
		free(w.stack[w.n].path);
	}
	free(w.stack);
	free(w.seen);
	sqfs_destroy(w.rd);
	if (entries)
		*entries = w.entries;
	if (rc < 0)
		snprintf(why, whylen, "out of memory");
	return rc;
}
