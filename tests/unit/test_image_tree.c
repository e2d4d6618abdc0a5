/* Unit tests of lib/image/tree.c: path cleaning (traversal refused), archive entries
 * applied to the tree, overlay whiteouts and opaque directories, hard links, the id
 * limit, symlink resolution, packed xattrs. */
#include "unit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/internal.h"

static const char *clean(const char *in, char *out)
{
	struct gg_err err = {0};
	return gg_image_path_clean(in, out, &err) == 0 ? out : NULL;
}

static void test_path_clean(void **state)
{
	(void)state;
	char b[256];
	assert_string_equal(clean("./a//b/./c/", b), "a/b/c");
	assert_string_equal(clean(".", b), "");
	assert_string_equal(clean("./", b), "");
	assert_string_equal(clean("", b), "");
	assert_string_equal(clean("etc/passwd", b), "etc/passwd");
	assert_string_equal(clean("a/.../b", b), "a/.../b");
	assert_string_equal(clean("..a/b..", b), "..a/b..");
	assert_string_equal(clean("ünï/cødé", b), "ünï/cødé");
	struct gg_err err = {0};
	assert_true(gg_image_path_clean("/etc/passwd", b, &err) < 0);
	assert_non_null(strstr(err.msg, "absolute"));
	assert_true(gg_image_path_clean("../evil", b, &err) < 0);
	assert_non_null(strstr(err.msg, "escape"));
	assert_true(gg_image_path_clean("a/../../evil", b, &err) < 0);
	assert_true(gg_image_path_clean("a/..", b, &err) < 0);
	assert_true(gg_image_path_clean("./..", b, &err) < 0);
}

static struct gg_entry ent(const char *path, uint32_t mode)
{
	struct gg_entry e;
	memset(&e, 0, sizeof e);
	e.path = path;
	e.mode = mode;
	e.mtime = 1000;
	return e;
}

static int apply(struct gg_tree *t, struct gg_entry e, int layer, struct gg_err *err)
{
	struct gg_inode *data;
	return gg_image_tree_apply(t, &e, layer, layer > 0, &data, err);
}

static int exists(struct gg_tree *t, const char *p)
{
	return gg_image_tree_lookup(t, p) != NULL;
}

static void test_apply(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	struct gg_err err = {0};
	struct gg_inode *data = NULL;
	struct gg_entry e = ent("usr/bin/tool", S_IFREG | 0755);
	e.uid = 7;
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	assert_non_null(data); /* a regular file: its bytes follow */
	assert_true(exists(t, "usr"));
	assert_true(S_ISDIR(gg_image_tree_lookup(t, "usr/bin")->inode->mode)); /* implicit */
	assert_int_equal(gg_image_tree_lookup(t, "usr/bin/tool")->inode->uid, 7);

	/* a directory entry over an implicit directory keeps the children */
	e = ent("usr/bin", S_IFDIR | 0700);
	assert_int_equal(apply(t, e, 0, &err), 0);
	assert_int_equal(gg_image_tree_lookup(t, "usr/bin")->inode->mode, S_IFDIR | 0700);
	assert_true(exists(t, "usr/bin/tool"));

	/* the root entry sets the root's attributes */
	e = ent("", S_IFDIR | 0711);
	assert_int_equal(apply(t, e, 0, &err), 0);
	assert_int_equal(t->root->inode->mode, S_IFDIR | 0711);
	assert_true(t->root_set);
	e = ent("", S_IFREG | 0644);
	assert_true(apply(t, e, 0, &err) < 0);

	/* a file replaces a directory (and its children) */
	e = ent("usr/bin", S_IFREG | 0644);
	assert_int_equal(apply(t, e, 0, &err), 0);
	assert_false(exists(t, "usr/bin/tool"));
	assert_true(S_ISREG(gg_image_tree_lookup(t, "usr/bin")->inode->mode));
	/* ... and nothing goes below a file */
	e = ent("usr/bin/x", S_IFREG | 0644);
	assert_true(apply(t, e, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "not a directory"));

	/* symlink escape: an entry through a symlink is refused */
	e = ent("etc", S_IFLNK | 0777);
	e.symlink = "/host/etc";
	assert_int_equal(apply(t, e, 0, &err), 0);
	assert_string_equal(gg_image_tree_lookup(t, "etc")->inode->target, "/host/etc");
	e = ent("etc/passwd", S_IFREG | 0644);
	assert_true(apply(t, e, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "symbolic link"));
	assert_false(exists(t, "etc/passwd"));

	/* hard links share the inode; missing targets and directories are refused */
	e = ent("a", S_IFREG | 0644);
	assert_int_equal(apply(t, e, 0, &err), 0);
	e = ent("b", 0);
	e.hardlink = "a";
	assert_int_equal(apply(t, e, 0, &err), 0);
	assert_ptr_equal(gg_image_tree_lookup(t, "a")->inode, gg_image_tree_lookup(t, "b")->inode);
	e.path = "c";
	e.hardlink = "missing";
	assert_true(apply(t, e, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "not in the archive"));
	e.hardlink = "usr";
	assert_true(apply(t, e, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "directory"));

	/* children are kept sorted by byte value */
	const char *names[] = {"zz", "B", "a0", "Z", "ä"};
	for (size_t i = 0; i < 5; i++) {
		char p[32];
		snprintf(p, sizeof p, "s/%s", names[i]);
		e = ent(p, S_IFREG | 0644);
		assert_int_equal(apply(t, e, 0, &err), 0);
	}
	struct gg_node *s = gg_image_tree_lookup(t, "s");
	assert_int_equal(s->nkids, 5);
	for (size_t i = 1; i < s->nkids; i++)
		assert_true(strcmp(s->kids[i - 1]->name, s->kids[i]->name) < 0);
	char *path = gg_image_node_path(s->kids[0]);
	assert_string_equal(path, "s/B");
	free(path);
	path = gg_image_node_path(t->root);
	assert_string_equal(path, "");
	free(path);
	gg_image_tree_free(t);
}

static void test_whiteouts(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	struct gg_err err = {0};
	/* layer 1 */
	const char *l1[] = {"a/x", "a/y", "b", "d/keep", "d/sub/deep"};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(apply(t, ent(l1[i], S_IFREG | 0644), 1, &err), 0);
	/* layer 2: .wh.x removes a/x, .wh.b removes b; a file added in this layer and
	 * whited out in the same layer stays (whiteouts only hide lower layers) */
	assert_int_equal(apply(t, ent("a/new", S_IFREG | 0644), 2, &err), 0);
	assert_int_equal(apply(t, ent("a/.wh.x", S_IFREG | 0644), 2, &err), 0);
	assert_int_equal(apply(t, ent("a/.wh.new", S_IFREG | 0644), 2, &err), 0);
	assert_int_equal(apply(t, ent(".wh.b", S_IFREG | 0644), 2, &err), 0);
	assert_int_equal(apply(t, ent("nodir/.wh.z", S_IFREG | 0644), 2, &err), 0);
	assert_false(exists(t, "a/x"));
	assert_true(exists(t, "a/y"));
	assert_true(exists(t, "a/new"));
	assert_false(exists(t, "b"));
	assert_false(exists(t, "a/.wh.x"));
	assert_false(exists(t, "nodir")); /* a whiteout makes no directories */
	/* layer 3: d is opaque; what layer 3 adds to it before or after the marker stays */
	assert_int_equal(apply(t, ent("d/mine", S_IFREG | 0644), 3, &err), 0);
	assert_int_equal(apply(t, ent("d/.wh..wh..opq", S_IFREG | 0644), 3, &err), 0);
	assert_int_equal(apply(t, ent("d/later", S_IFREG | 0644), 3, &err), 0);
	assert_false(exists(t, "d/keep"));
	assert_false(exists(t, "d/sub"));
	assert_true(exists(t, "d/mine"));
	assert_true(exists(t, "d/later"));
	assert_true(exists(t, "d"));
	assert_false(exists(t, "d/.wh..wh..opq"));
	/* aufs bookkeeping is ignored */
	assert_int_equal(apply(t, ent(".wh..wh.plnk", S_IFDIR | 0700), 4, &err), 0);
	assert_false(exists(t, ".wh..wh.plnk"));
	/* without whiteouts (a plain tar) .wh. names are ordinary files */
	struct gg_inode *data;
	struct gg_entry e = ent("a/.wh.y", S_IFREG | 0644);
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	assert_true(exists(t, "a/.wh.y"));
	assert_true(exists(t, "a/y"));
	gg_image_tree_free(t);
}

static void test_ids(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	struct gg_err err = {0};
	for (uint32_t i = 0; i < 65535; i++)
		assert_int_equal(gg_image_tree_note_id(t, i * 7, &err), 0);
	assert_int_equal(gg_image_tree_note_id(t, 0, &err), 0);          /* seen */
	assert_int_equal(gg_image_tree_note_id(t, UINT32_MAX, &err), 0); /* 65536th */
	assert_int_equal(gg_image_tree_note_id(t, UINT32_MAX, &err), 0);
	assert_int_equal(gg_image_tree_note_id(t, 7, &err), 0);
	assert_true(gg_image_tree_note_id(t, 3, &err) < 0);
	assert_non_null(strstr(err.msg, "65536"));
	gg_image_tree_free(t);
}

static void test_resolve(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	struct gg_err err = {0};
	struct gg_entry e = ent("usr/bin/dash", S_IFREG | 0755);
	assert_int_equal(apply(t, e, 0, &err), 0);
	e = ent("bin", S_IFLNK | 0777);
	e.symlink = "usr/bin";
	assert_int_equal(apply(t, e, 0, &err), 0);
	e = ent("usr/bin/sh", S_IFLNK | 0777);
	e.symlink = "/usr/bin/../bin/./dash";
	assert_int_equal(apply(t, e, 0, &err), 0);
	e = ent("loop", S_IFLNK | 0777);
	e.symlink = "loop";
	assert_int_equal(apply(t, e, 0, &err), 0);
	e = ent("up", S_IFLNK | 0777);
	e.symlink = "../../../usr/bin/dash"; /* ".." stops at the root */
	assert_int_equal(apply(t, e, 0, &err), 0);
	struct gg_node *dash = gg_image_tree_lookup(t, "usr/bin/dash");
	assert_ptr_equal(gg_image_tree_resolve(t, "bin/sh"), dash);
	assert_ptr_equal(gg_image_tree_resolve(t, "/bin/sh"), dash);
	assert_ptr_equal(gg_image_tree_resolve(t, "up"), dash);
	assert_null(gg_image_tree_resolve(t, "loop"));
	assert_null(gg_image_tree_resolve(t, "bin/nope"));
	assert_null(gg_image_tree_lookup(t, "bin/sh")); /* lookup does not follow */
	gg_image_tree_free(t);
}

static void test_xattrs(void **state)
{
	(void)state;
	assert_true(gg_image_xattr_supported("user.x"));
	assert_true(gg_image_xattr_supported("trusted.overlay.opaque"));
	assert_true(gg_image_xattr_supported("security.capability"));
	assert_false(gg_image_xattr_supported("system.posix_acl_access"));
	assert_false(gg_image_xattr_supported("userx"));
	struct gg_xattr_buf b = {0};
	assert_int_equal(gg_image_xattr_add(&b, "user.b", "2", 1), 0);
	assert_int_equal(gg_image_xattr_add(&b, "security.s", "", 0), 0);
	assert_int_equal(gg_image_xattr_add(&b, "user.a", "11", 2), 0);
	assert_int_equal(gg_image_xattr_sort(&b), 0);
	/* first key after sorting: security.s */
	uint16_t kl;
	memcpy(&kl, b.buf, 2);
	assert_int_equal(kl, 10);
	assert_memory_equal(b.buf + 2, "security.s", 10);
	size_t second = 2 + 10 + 4;
	memcpy(&kl, b.buf + second, 2);
	assert_memory_equal(b.buf + second + 2, "user.a", 6);
	assert_int_equal(b.count, 3);
	gg_image_xattr_free(&b);
}

/* ---- bounds and depth ---------------------------------------------------------------- */

static void test_path_bounds(void **state)
{
	(void)state;
	struct gg_err err = {0};
	char name[300], path[5000];
	memset(name, 'n', sizeof name);
	name[256] = '\0';
	assert_int_equal(gg_image_path_check(name, 0, &err), 0);
	name[256] = 'n';
	name[257] = '\0';
	assert_int_equal(gg_image_path_check(name, 0, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "a name of 257 bytes"));
	assert_non_null(strstr(err.msg, "nnnn"));
	/* a whiteout names what it hides: ".wh." + 256 bytes is fine in a layer only */
	snprintf(path, sizeof path, "d/.wh.%.256s", name);
	assert_int_equal(gg_image_path_check(path, 1, &err), 0);
	assert_int_equal(gg_image_path_check(path, 0, &err), GG_EFAIL);
	/* 4095 bytes of path, not one more */
	memset(path, 0, sizeof path);
	for (size_t i = 0; i < 4095; i++)
		path[i] = i % 2 ? '/' : 'a';
	assert_int_equal(gg_image_path_check(path, 0, &err), 0);
	strcat(path, "b");
	assert_int_equal(gg_image_path_check(path, 0, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "a path of 4096 bytes"));
	assert_true(strlen(err.msg) < 400); /* the path is shortened */
	/* an entry that deep never reaches the tree */
	struct gg_tree *t = gg_image_tree_new();
	struct gg_entry e = {.path = path, .mode = S_IFREG | 0644};
	struct gg_inode *data = NULL;
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), GG_EFAIL);
	assert_int_equal(t->nnodes, 1);
	gg_image_tree_free(t);
}

#define DEEP 200000

struct deep {
	struct gg_tree *t;
	struct gg_node *leaf;
	uint64_t pre, post;
	size_t pathlen;
	uint64_t left;
};

static int deep_pre(struct gg_node *n, void *ud)
{
	(void)n;
	((struct deep *)ud)->pre++;
	return 0;
}

static int deep_post(struct gg_node *n, void *ud)
{
	(void)n;
	((struct deep *)ud)->post++;
	return 0;
}

static void *deep_main(void *arg)
{
	struct deep *d = arg;
	gg_image_tree_walk(d->t->root, deep_pre, deep_post, d);
	char *p = gg_image_node_path(d->leaf);
	d->pathlen = p ? strlen(p) : 0;
	free(p);
	gg_image_node_remove(d->t, d->t->root->kids[0]);
	d->left = d->t->nnodes;
	gg_image_tree_free(d->t);
	return NULL;
}

/* Every walk over a tree 200,000 directories deep, on a 64 KiB stack: a recursive walk
 * would need megabytes of it and crash. */
static void test_deep_tree(void **state)
{
	(void)state;
	struct deep d = {.t = gg_image_tree_new()};
	assert_non_null(d.t);
	struct gg_node *n = d.t->root;
	for (int i = 0; i < DEEP; i++) {
		struct gg_inode *ino = gg_image_inode_new(d.t);
		assert_non_null(ino);
		ino->mode = S_IFDIR | 0755;
		n = gg_image_node_add(d.t, n, i % 2 ? "b" : "a", 1, ino);
		assert_non_null(n);
	}
	d.leaf = n;
	pthread_attr_t at;
	pthread_attr_init(&at);
	assert_int_equal(pthread_attr_setstacksize(&at, 64 << 10), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, &at, deep_main, &d), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&at);
	assert_int_equal(d.pre, DEEP + 1);
	assert_int_equal(d.post, DEEP + 1);
	assert_int_equal(d.pathlen, 2 * DEEP - 1);
	assert_int_equal(d.left, 1);
}

/* The walk's order: pre-order down, post-order up, siblings by name; SKIP prunes. */
static int order_pre(struct gg_node *n, void *ud)
{
	strcat(ud, "+");
	strcat(ud, n->name);
	return !strcmp(n->name, "skip") ? GG_WALK_SKIP : 0;
}

static int order_post(struct gg_node *n, void *ud)
{
	strcat(ud, "-");
	strcat(ud, n->name);
	return 0;
}

static void test_walk_order(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	const char *paths[] = {"b/y", "a", "b/x/deep", "skip/hidden", "c"};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct gg_entry e = {.path = paths[i], .mode = S_IFREG | 0644};
		struct gg_inode *data;
		struct gg_err err = {0};
		assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	}
	char out[256] = "";
	assert_int_equal(gg_image_tree_walk(t->root, order_pre, order_post, out), 0);
	assert_string_equal(out, "++a-a+b+x+deep-deep-x+y-y-b+c-c+skip-");
	gg_image_tree_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_clean),  cmocka_unit_test(test_apply),
		cmocka_unit_test(test_whiteouts),   cmocka_unit_test(test_ids),
		cmocka_unit_test(test_resolve),     cmocka_unit_test(test_xattrs),
		cmocka_unit_test(test_path_bounds), cmocka_unit_test(test_deep_tree),
		cmocka_unit_test(test_walk_order),
	};
	return cmocka_run_group_tests_name("image_tree", tests, NULL, NULL);
}
