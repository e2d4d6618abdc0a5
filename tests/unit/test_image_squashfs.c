/* Unit tests of lib/image/deflate.c, gate.c, writeback.c, direct.c and squashfs.c: the
 * libdeflate compressor emits zlib streams (and shrink.c stores raw what does not shrink) that
 * zlib's inflate (libsquashfs' gzip decompressor) accepts; a squashfs written by our writer reads
 * back through libsquashfs' own readers: names, types, modes, owners, times, symlinks, devices,
 * hard links, xattrs, data, sparse files. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqfs/compressor.h>
#include <sqfs/data_reader.h>
#include <sqfs/dir_reader.h>
#include <sqfs/error.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/super.h>
#include <sqfs/xattr_reader.h>
#include <libdeflate.h>

#include "image/internal.h"

UNIT_TMPDIR("gg-unit-sqfs")

static sqfs_compressor_t *zlib_inflater(void)
{
	sqfs_compressor_config_t cfg;
	sqfs_compressor_t *c = NULL;
	assert_int_equal(sqfs_compressor_config_init(&cfg, SQFS_COMP_GZIP, 131072,
						     SQFS_COMP_FLAG_UNCOMPRESS),
			 0);
	assert_int_equal(sqfs_compressor_create(&cfg, &c), 0);
	return c;
}

static void fill_text(unsigned char *b, size_t n, unsigned seed)
{
	static const char *const words[] = {"squashfs ", "gridgpu ",   "deflate ", "block ",
					    "image\n",   "apptainer ", "the ",     "GPU "};
	size_t o = 0;
	while (o < n) {
		seed = seed * 1103515245u + 12345u;
		const char *w = words[(seed >> 16) % 8];
		size_t l = strlen(w);
		if (l > n - o)
			l = n - o;
		memcpy(b + o, w, l);
		o += l;
	}
}

static void test_deflate_zlib_compatible(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n), *out = malloc(n), *back = malloc(n);
	fill_text(in, n, 1);
	sqfs_compressor_t *inf = zlib_inflater();
	for (int level = 1; level <= 12; level += (level < 6 ? 5 : 3)) {
		sqfs_compressor_t *c = gg_sqfs_deflate_new(level, (uint32_t)n);
		assert_non_null(c);
		sqfs_compressor_config_t cfg;
		c->get_configuration(c, &cfg);
		assert_int_equal(cfg.id, SQFS_COMP_GZIP);
		assert_int_equal(c->write_options(c, NULL), 0); /* no options block */
		sqfs_s32 clen = c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n);
		assert_true(clen > 0 && (size_t)clen < n / 4);
		assert_int_equal(out[0] & 0x0F, 8); /* zlib header: CM = deflate */
		assert_int_equal(((out[0] << 8) | out[1]) % 31, 0);
		memset(back, 0, n);
		sqfs_s32 dlen = inf->do_block(inf, out, (sqfs_u32)clen, back, (sqfs_u32)n);
		assert_int_equal(dlen, (sqfs_s32)n);
		assert_memory_equal(in, back, n);
		/* a copy is an independent compressor giving the same bytes */
		sqfs_compressor_t *c2 = sqfs_copy(c);
		assert_non_null(c2);
		sqfs_destroy(c);
		assert_int_equal(c2->do_block(c2, in, (sqfs_u32)n, back, (sqfs_u32)n), clen);
		assert_memory_equal(out, back, (size_t)clen);
		sqfs_destroy(c2);
	}
	/* incompressible data: 0, the block is stored raw */
	sqfs_compressor_t *c = gg_sqfs_deflate_new(6, (uint32_t)n);
	unsigned s = 7;
	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		in[i] = (unsigned char)(s >> 23);
	}
	assert_int_equal(c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n), 0);
	sqfs_destroy(c);
	assert_null(gg_sqfs_deflate_new(0, 131072));
	assert_null(gg_sqfs_deflate_new(13, 131072));
	sqfs_destroy(inf);
	free(in);
	free(out);
	free(back);
}

/* ---- a squashfs through the writer, read back through libsquashfs ----------------- */

static struct gg_inode *add(struct gg_tree *t, const char *path, uint32_t mode, uint32_t uid,
			    int64_t mtime)
{
	struct gg_entry e;
	memset(&e, 0, sizeof e);
	e.path = path;
	e.mode = mode;
	e.uid = uid;
	e.gid = uid + 1;
	e.mtime = mtime;
	struct gg_inode *data = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	return gg_image_tree_lookup(t, path)->inode;
}

static void feed(struct gg_sqfs_writer *w, struct gg_inode *ino, const void *d, size_t n)
{
	struct gg_err err = {0};
	assert_int_equal(gg_sqfs_file_begin(w, ino, &err), 0);
	if (n)
		assert_int_equal(gg_sqfs_file_append(w, d, n, &err), 0);
	assert_int_equal(gg_sqfs_file_end(w, &err), 0);
}

static const sqfs_tree_node_t *child(const sqfs_tree_node_t *n, const char *name)
{
	for (const sqfs_tree_node_t *c = n->children; c; c = c->next)
		if (!strcmp((const char *)c->name, name))
			return c;
	fail_msg("no '%s' in the image", name);
	return NULL;
}

static void read_file(sqfs_data_reader_t *dr, const sqfs_tree_node_t *n, unsigned char *buf,
		      size_t len)
{
	sqfs_u64 size = 0;
	assert_int_equal(sqfs_inode_get_file_size(n->inode, &size), 0);
	assert_int_equal(size, len);
	size_t off = 0;
	while (off < len) {
		sqfs_u32 chunk = len - off > 65536 ? 65536 : (sqfs_u32)(len - off);
		assert_int_equal(sqfs_data_reader_read(dr, n->inode, off, buf + off, chunk),
				 (sqfs_s32)chunk);
		off += chunk;
	}
}

static void test_writer_roundtrip(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/w.sqfs", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	struct gg_sqfs_opts o = {
		.comp = GG_IMAGE_COMP_GZIP, .level = 6, .jobs = 2, .block_size = 131072};
	struct gg_sqfs_writer *w;
	struct gg_err err = {0};
	assert_int_equal(gg_sqfs_writer_new(fd, path, 0, &o, &w, &err), 0);
	struct gg_tree *t = gg_image_tree_new();

	size_t big = 3 * 131072 + 1000;
	unsigned char *data = malloc(big), *back = malloc(big);
	fill_text(data, big, 3);
	struct gg_inode *f = add(t, "dir/big", S_IFREG | 04755, 1000, 1700000000);
	feed(w, f, data, big);
	struct gg_inode *small = add(t, "dir/small", S_IFREG | 0600, 0, 5);
	feed(w, small, "hello\n", 6);
	/* two blocks and a tail in chunks of 1000 bytes: the writer puts the blocks
	 * together; then a small file equal to big's tail: stored once */
	size_t chunky_len = 2 * 131072 + 777;
	struct gg_inode *chunky = add(t, "dir/chunky", S_IFREG | 0644, 0, 5);
	assert_int_equal(gg_sqfs_file_begin(w, chunky, &err), 0);
	for (size_t off = 0; off < chunky_len; off += 1000)
		assert_int_equal(gg_sqfs_file_append(
					 w, data + off,
					 chunky_len - off < 1000 ? chunky_len - off : 1000, &err),
				 0);
	assert_int_equal(gg_sqfs_file_end(w, &err), 0);
	assert_int_equal(gg_sqfs_file_end(w, &err), GG_EFAIL); /* none begun */
	struct gg_inode *tailcopy = add(t, "dir/tailcopy", S_IFREG | 0644, 0, 5);
	feed(w, tailcopy, data + big - 1000, 1000);
	struct gg_inode *empty = add(t, "empty", S_IFREG | 0644, 0, 5);
	feed(w, empty, NULL, 0);
	/* hard link: a second name for dir/small */
	struct gg_entry e;
	memset(&e, 0, sizeof e);
	e.path = "hl";
	e.hardlink = "dir/small";
	struct gg_inode *none;
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &none, &err), 0);
	/* sparse: 1 MiB of zeros then 10 bytes */
	struct gg_inode *sp = add(t, "sparse", S_IFREG | 0644, 0, 5);
	assert_int_equal(gg_sqfs_file_begin(w, sp, &err), 0);
	unsigned char *zero = calloc(1, 1 << 20);
	assert_int_equal(gg_sqfs_file_append(w, zero, 1 << 20, &err), 0);
	assert_int_equal(gg_sqfs_file_append(w, "0123456789", 10, &err), 0);
	assert_int_equal(gg_sqfs_file_end(w, &err), 0);
	struct gg_inode *ln = add(t, "link", S_IFLNK | 0777, 0, 5);
	free(ln->target);
	ln->target = strdup("dir/small");
	struct gg_inode *dev = add(t, "dev/null", S_IFCHR | 0666, 0, 5);
	dev->rdev = (3 & 0xff) | (1 << 8);
	add(t, "fifo", S_IFIFO | 0644, 0, 5);
	add(t, "sock", S_IFSOCK | 0755, 0, 5);
	struct gg_xattr_buf xb = {0};
	gg_image_xattr_add(&xb, "user.k", "v", 1);
	gg_image_xattr_add(&xb, "trusted.t", "", 0);
	gg_image_xattr_sort(&xb);
	gg_image_inode_set_xattrs(small, xb.buf, xb.len);
	gg_image_xattr_free(&xb);
	/* a file with an mtime past SOURCE_DATE_EPOCH gets clamped */
	struct gg_inode *late = add(t, "late", S_IFREG | 0644, 0, 1900000000);
	feed(w, late, "x", 1);

	uint64_t size = 0;
	struct gg_freeze_result res;
	memset(&res, 0, sizeof res);
	assert_int_equal(gg_sqfs_writer_finish(w, t, 1800000000, 1800000000, &size, &res, &err), 0);
	assert_int_equal(size % 4096, 0);
	assert_int_equal(res.files, 7);
	assert_int_equal(res.hardlinks, 1);
	assert_int_equal(res.symlinks, 1);
	assert_int_equal(res.specials, 3);
	assert_int_equal(res.dirs, 3);
	gg_sqfs_writer_free(w);
	gg_image_tree_free(t);
	close(fd);

	/* read it back with libsquashfs */
	sqfs_file_t *file = sqfs_open_file(path, SQFS_FILE_OPEN_READ_ONLY);
	assert_non_null(file);
	sqfs_super_t sb;
	assert_int_equal(sqfs_super_read(&sb, file), 0);
	assert_int_equal(sb.compression_id, SQFS_COMP_GZIP);
	assert_int_equal(sb.modification_time, 1800000000);
	assert_int_equal(sb.inode_count, 14); /* 3 dirs, 7 files (hl shares one), 4 others */
	sqfs_compressor_t *inf = zlib_inflater();
	sqfs_id_table_t *ids = sqfs_id_table_create(0);
	assert_int_equal(sqfs_id_table_read(ids, file, &sb, inf), 0);
	sqfs_dir_reader_t *dr = sqfs_dir_reader_create(&sb, inf, file, 0);
	assert_non_null(dr);
	sqfs_tree_node_t *root;
	assert_int_equal(sqfs_dir_reader_get_full_hierarchy(dr, ids, NULL, 0, &root), 0);
	sqfs_data_reader_t *data_rd = sqfs_data_reader_create(file, sb.block_size, inf, 0);
	assert_int_equal(sqfs_data_reader_load_fragment_table(data_rd, &sb), 0);

	const sqfs_tree_node_t *d = child(root, "dir");
	const sqfs_tree_node_t *n = child(d, "big");
	assert_int_equal(n->inode->base.mode, S_IFREG | 04755);
	assert_int_equal(n->uid, 1000);
	assert_int_equal(n->gid, 1001);
	assert_int_equal(n->inode->base.mod_time, 1700000000);
	read_file(data_rd, n, back, big);
	assert_memory_equal(back, data, big);
	sqfs_u32 fidx, foff, cidx, coff;
	assert_int_equal(sqfs_inode_get_frag_location(n->inode, &fidx, &foff), 0);
	n = child(d, "tailcopy");
	read_file(data_rd, n, back, 1000);
	assert_memory_equal(back, data + big - 1000, 1000);
	assert_int_equal(sqfs_inode_get_frag_location(n->inode, &cidx, &coff), 0);
	assert_int_equal(cidx, fidx); /* big's tail, stored once */
	assert_int_equal(coff, foff);
	n = child(d, "chunky");
	read_file(data_rd, n, back, chunky_len);
	assert_memory_equal(back, data, chunky_len);
	n = child(d, "small");
	read_file(data_rd, n, back, 6);
	assert_memory_equal(back, "hello\n", 6);
	assert_int_equal(n->inode->base.type, SQFS_INODE_EXT_FILE); /* xattrs + 2 links */
	assert_int_equal(n->inode->data.file_ext.nlink, 2);
	sqfs_u32 xidx;
	assert_int_equal(sqfs_inode_get_xattr_index(n->inode, &xidx), 0);
	assert_true(xidx != 0xFFFFFFFF);
	const sqfs_tree_node_t *h = child(root, "hl");
	assert_int_equal(h->inode->base.inode_number, n->inode->base.inode_number);
	n = child(root, "sparse");
	unsigned char *sparse_back = malloc((1 << 20) + 10);
	read_file(data_rd, n, sparse_back, (1 << 20) + 10);
	assert_memory_equal(sparse_back, zero, 1 << 20);
	assert_memory_equal(sparse_back + (1 << 20), "0123456789", 10);
	assert_int_equal(n->inode->base.type, SQFS_INODE_EXT_FILE);
	assert_true(n->inode->data.file_ext.sparse >= (1 << 20)); /* holes are sparse blocks */
	free(sparse_back);
	n = child(root, "empty");
	read_file(data_rd, n, back, 0);
	n = child(root, "link");
	assert_int_equal(n->inode->base.type, SQFS_INODE_SLINK);
	assert_int_equal(n->inode->data.slink.target_size, 9);
	assert_memory_equal(n->inode->extra, "dir/small", 9);
	n = child(child(root, "dev"), "null");
	assert_int_equal(n->inode->base.type, SQFS_INODE_CDEV);
	assert_int_equal(n->inode->data.dev.devno, (1 << 8) | 3);
	assert_int_equal(child(root, "fifo")->inode->base.type, SQFS_INODE_FIFO);
	assert_int_equal(child(root, "sock")->inode->base.mode, S_IFSOCK | 0755);
	assert_int_equal(child(root, "late")->inode->base.mod_time, 1800000000); /* clamped */
	/* directory listing in byte order, nlink = 2 + subdirectories */
	const char *order[] = {"dev",  "dir",  "empty", "fifo",  "hl",
			       "late", "link", "sock",  "sparse"};
	size_t i = 0;
	for (const sqfs_tree_node_t *c = root->children; c; c = c->next, i++)
		assert_string_equal((const char *)c->name, order[i]);
	assert_int_equal(i, 9);
	assert_int_equal(root->inode->data.dir.nlink, 4);

	sqfs_destroy(data_rd);
	sqfs_dir_tree_destroy(root);
	sqfs_destroy(dr);
	sqfs_destroy(ids);
	sqfs_destroy(inf);
	sqfs_destroy(file);
	free(data);
	free(back);
	free(zero);
}

static void test_writer_io_error(void **state)
{
	(void)state;
	/* a read-only descriptor: the first write fails and the error names the file */
	char path[128];
	snprintf(path, sizeof path, "%s/ro.sqfs", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	close(fd);
	fd = open(path, O_RDONLY);
	struct gg_sqfs_opts o = {.comp = GG_IMAGE_COMP_GZIP, .jobs = 1};
	struct gg_sqfs_writer *w = NULL;
	struct gg_err err = {0};
	assert_true(gg_sqfs_writer_new(fd, path, 0, &o, &w, &err) < 0);
	assert_null(w);
	assert_non_null(strstr(err.msg, "ro.sqfs"));
	close(fd);
	/* bad levels are usage errors */
	fd = open(path, O_RDWR);
	o.level = 13;
	assert_int_equal(gg_sqfs_writer_new(fd, path, 0, &o, &w, &err), GG_EUSAGE);
	o.comp = GG_IMAGE_COMP_ZSTD;
	o.level = 3;
	assert_int_equal(gg_sqfs_writer_new(fd, path, 0, &o, &w, &err), 0);
	gg_sqfs_writer_free(w);
	close(fd);
	assert_string_equal(gg_sqfs_strerror(-2), "input/output error");
}

/* A tree 20,000 directories deep written on a 256 KiB stack: numbering and serialising
 * are walks without recursion (recursive ones needed megabytes and crashed). */
struct deep_write {
	struct gg_sqfs_writer *w;
	struct gg_tree *t;
	struct gg_freeze_result res;
	uint64_t size;
	int rc;
	struct gg_err err;
};

static void *deep_write_main(void *arg)
{
	struct deep_write *d = arg;
	d->rc = gg_sqfs_writer_finish(d->w, d->t, 1, 1, &d->size, &d->res, &d->err);
	gg_image_tree_free(d->t);
	return NULL;
}

/* The tables' level: 11 where they are a sizeable part of the image (16 bytes an inode
 * against 1% of the data), the data's level where they are not; a level asked below the
 * default, or 11 and 12, is kept. */
static void test_table_level(void **state)
{
	(void)state;
	assert_int_equal(gg_sqfs_table_level(6, 10000000, 501002), 11); /* 500k tiny files */
	assert_int_equal(gg_sqfs_table_level(6, 177284446, 47284), 6);  /* a Python tree */
	assert_int_equal(gg_sqfs_table_level(6, 1600, 1), 11);          /* at 1% */
	assert_int_equal(gg_sqfs_table_level(6, 1601, 1), 6);           /* under it */
	assert_int_equal(gg_sqfs_table_level(9, 1 << 30, 10), 9);       /* the data's own */
	assert_int_equal(gg_sqfs_table_level(5, 1000, 1000000), 5);     /* asked for speed */
	assert_int_equal(gg_sqfs_table_level(1, 0, 0), 1);
	assert_int_equal(gg_sqfs_table_level(12, 1 << 30, 1), 12); /* asked for size */
	assert_int_equal(gg_sqfs_table_level(6, 0, 0), 11);        /* an empty tree */
	assert_int_equal(gg_sqfs_table_level(9, 1000, 1000000), 11);
	assert_int_equal(gg_sqfs_table_level(11, 1 << 30, 1), 11);
}

static void test_writer_deep(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/deep.sqfs", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	struct gg_sqfs_opts o = {.comp = GG_IMAGE_COMP_GZIP, .level = 1, .jobs = 1};
	struct deep_write d = {.t = gg_image_tree_new()};
	assert_int_equal(gg_sqfs_writer_new(fd, path, 0, &o, &d.w, &d.err), 0);
	struct gg_node *n = d.t->root;
	for (int i = 0; i < 20000; i++) {
		struct gg_inode *ino = gg_image_inode_new(d.t);
		ino->mode = S_IFDIR | 0755;
		n = gg_image_node_add(d.t, n, "d", 1, ino);
		assert_non_null(n);
	}
	struct gg_inode *leaf = gg_image_inode_new(d.t);
	leaf->mode = S_IFREG | 0644;
	assert_non_null(gg_image_node_add(d.t, n, "f", 1, leaf));
	feed(d.w, leaf, "deep\n", 5);
	pthread_attr_t at;
	pthread_attr_init(&at);
	assert_int_equal(pthread_attr_setstacksize(&at, 256 << 10), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, &at, deep_write_main, &d), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&at);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.res.dirs, 20001);
	assert_int_equal(d.res.files, 1);
	gg_sqfs_writer_free(d.w);
	close(fd);
}

static void fill_random(unsigned char *b, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++) { /* xorshift64* */
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		b[i] = (unsigned char)((x * 2685821657736338717ull) >> 56);
	}
}

/* The incompressible-block test: random bytes are hopeless (and the compressor stores
 * them raw), while anything deflate can shrink is not: text, a skewed histogram,
 * random bytes repeated within the 32 KiB window, a single repeat of 512 bytes. */
static void test_deflate_hopeless(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n), *out = malloc(n);
	uint16_t *probe = malloc(32768 * sizeof *probe);
	fill_random(in, n, 42);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 1);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 1);    /* a pure function */
	assert_int_equal(gg_deflate_hopeless(probe, in, 8192), 0); /* too small to test */
	/* 16 KiB: a random histogram's spread (chi-square 255 +- 23) exceeds what the test
	 * allows there (n/256 = 64), so short blocks are compressed, as before */
	assert_int_equal(gg_deflate_hopeless(probe, in, 16384), 0);
	sqfs_compressor_t *c = gg_sqfs_deflate_new(6, (uint32_t)n);
	assert_int_equal(c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n), 0);
	/* random bytes repeated every 16 KiB: flat histogram, but deflate halves it */
	for (size_t o = 16384; o < n; o += 16384)
		memcpy(in + o, in, 16384);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	sqfs_s32 clen = c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n);
	assert_true(clen > 0 && (size_t)clen < n / 4);
	/* one repeat of 512 bytes in random data, at any distance within the window:
	 * deflate saves a few hundred bytes, so the block is compressed */
	static const size_t dist[] = {1003, 4097, 20001, 32000};
	for (size_t k = 0; k < sizeof dist / sizeof dist[0]; k++) {
		fill_random(in, n, 43 + k);
		memcpy(in + 70000, in + 70000 - dist[k], 512);
		assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
		clen = c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n);
		assert_true(clen > 0 && (size_t)clen < n);
	}
	/* the same repeat just beyond the window gains deflate nothing: stored raw */
	fill_random(in, n, 50);
	memcpy(in + 70000, in + 70000 - 40000, 512);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 1);
	/* random values 0..127: flat over half the byte values, Huffman saves 1/8 */
	for (size_t i = 0; i < n; i++)
		in[i] &= 0x7F;
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	clen = c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n);
	assert_true(clen > 0 && (size_t)clen < n - n / 10);
	fill_text(in, n, 3);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	sqfs_destroy(c);
	free(probe);
	free(in);
	free(out);
}

/* The repeat probe looks up every 4th position and tables every 3rd: a repeat of 16
 * bytes (deflate gains from it) is seen whatever its alignment, so the block is
 * compressed; a repeat of 15 bytes is allowed to pass unseen. */
static void test_deflate_hopeless_alignment(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n);
	uint16_t *probe = malloc(32768 * sizeof *probe);
	for (size_t a = 0; a < 12; a++) {
		fill_random(in, n, 60 + a);
		memcpy(in + 50000 + a, in + 49000, 16);
		assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	}
	free(probe);
	free(in);
}

/* float32 weights (random mantissas, a few exponents): a skewed histogram, so deflate
 * gains, but no repeats: level 1's Huffman coding. Text has repeats everywhere. The
 * block deflated that way inflates back and is no larger than at level 6 by more than
 * a hair. */
static void test_deflate_matchless(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n), *out = malloc(n), *back = malloc(n);
	uint16_t *probe = malloc(32768 * sizeof *probe);
	fill_random(in, n, 77);
	static const unsigned char exps[] = {0x3c, 0x3d, 0x3e, 0xbc, 0xbd, 0xbe};
	for (size_t i = 3; i < n; i += 4)
		in[i] = exps[in[i] % 6];
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 1);
	assert_int_equal(gg_deflate_matchless(probe, in, 8192, NULL), 0); /* too small to test */
	sqfs_compressor_t *c6 = gg_sqfs_deflate_new(6, (uint32_t)n);
	sqfs_compressor_t *c1 = gg_sqfs_deflate_new(1, (uint32_t)n);
	sqfs_s32 l6 = c6->do_block(c6, in, (sqfs_u32)n, out, (sqfs_u32)n);
	sqfs_s32 l1 = c1->do_block(c1, in, (sqfs_u32)n, back, (sqfs_u32)n);
	assert_true(l6 > 0 && (size_t)l6 < n - n / 20);
	assert_int_equal(l6, l1); /* both levels took the Huffman coder's way */
	assert_memory_equal(out, back, (size_t)l6);
	struct gg_huffman *h = gg_huffman_new();
	assert_int_equal(gg_huffman_zlib(h, in, n, back, n), (size_t)l6);
	assert_memory_equal(out, back, (size_t)l6);
	gg_huffman_free(h);
	sqfs_compressor_t *inf = zlib_inflater();
	assert_int_equal(inf->do_block(inf, out, (sqfs_u32)l6, back, (sqfs_u32)n), (sqfs_s32)n);
	assert_memory_equal(in, back, n);
	fill_text(in, n, 5);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 0);
	/* random bytes holding 300 repeated 4-byte strings (1000 bytes back) at even
	 * positions: LZ77 has something to find there, so level 6 (the limit is 128 even
	 * positions in 128 KiB) */
	fill_random(in, n, 78);
	for (size_t k = 0; k < 300; k++)
		memcpy(in + 2000 + k * 400, in + 1000 + k * 400, 4);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 0);
	/* at odd positions only even ones are looked up: 4 bytes are not seen, 5 are */
	fill_random(in, n, 79);
	for (size_t k = 0; k < 300; k++)
		memcpy(in + 2001 + k * 400, in + 1001 + k * 400, 4);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 1);
	for (size_t k = 0; k < 300; k++)
		memcpy(in + 2001 + k * 400, in + 1001 + k * 400, 5);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 0);
	/* the limit: 110 repeats (100 bytes back) are well under it, 150 well over (a
	 * hash table slot taken over in between can hide a repeat: 0.3% each here) */
	fill_random(in, n, 80);
	for (size_t k = 0; k < 110; k++)
		memcpy(in + 2000 + k * 400, in + 1900 + k * 400, 4);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 1);
	for (size_t k = 110; k < 150; k++)
		memcpy(in + 2000 + k * 400, in + 1900 + k * 400, 4);
	assert_int_equal(gg_deflate_matchless(probe, in, n, NULL), 0);
	sqfs_destroy(inf);
	sqfs_destroy(c1);
	sqfs_destroy(c6);
	free(probe);
	free(in);
	free(out);
	free(back);
}

/* Random bytes with every 200th one zero: not flat enough to be hopeless, matchless, and
 * Huffman coding cannot shrink them. With fewer than n/8192 repeats (16 in 128 KiB) the
 * block is stored raw without trying level 1, which could not shrink it either; with
 * 40 repeats of 8 bytes (found: about 120, still matchless) level 1 is tried and
 * wins. */
static void few_repeats_block(unsigned char *in, size_t n, size_t reps)
{
	fill_random(in, n, 81);
	for (size_t i = 0; i < n; i += 200)
		in[i] = 0;
	for (size_t k = 0; k < reps; k++)
		memcpy(in + 2000 + k * 600, in + 1900 + k * 600, 8);
}

static void test_deflate_few_repeats(void **state)
{
	(void)state;
	size_t n = 131072, found = 0;
	unsigned char *in = malloc(n), *out = malloc(n);
	uint16_t *probe = malloc(32768 * sizeof *probe);
	struct gg_huffman *h = gg_huffman_new();
	struct libdeflate_compressor *l1 = libdeflate_alloc_compressor(1);
	sqfs_compressor_t *c6 = gg_sqfs_deflate_new(6, (uint32_t)n);
	few_repeats_block(in, n, 4);
	assert_int_equal(gg_deflate_hopeless(probe, in, n), 0);
	assert_int_equal(gg_deflate_matchless(probe, in, n, &found), 1);
	assert_true(found >= 4 && found < n / 8192);
	assert_int_equal(gg_huffman_zlib(h, in, n, out, n), 0);
	size_t z1 = libdeflate_zlib_compress(l1, in, n, out, n);
	assert_true(z1 == 0 || z1 >= n); /* nothing lost by not trying */
	assert_int_equal(c6->do_block(c6, in, (sqfs_u32)n, out, (sqfs_u32)n), 0);
	few_repeats_block(in, n, 40);
	assert_int_equal(gg_deflate_matchless(probe, in, n, &found), 1);
	assert_true(found >= n / 8192 && found < n / 1024);
	assert_int_equal(gg_huffman_zlib(h, in, n, out, n), 0);
	z1 = libdeflate_zlib_compress(l1, in, n, out, n);
	assert_true(z1 > 0 && z1 < n);
	assert_int_equal(c6->do_block(c6, in, (sqfs_u32)n, out, (sqfs_u32)n), (sqfs_s32)z1);
	/* sizes the probe does not test report n found */
	assert_int_equal(gg_deflate_matchless(probe, in, 8192, &found), 0);
	assert_int_equal(found, 8192);
	sqfs_destroy(c6);
	libdeflate_free_compressor(l1);
	gg_huffman_free(h);
	free(probe);
	free(in);
	free(out);
}

/* The libdeflate inflater reads back what the deflater wrote, and says so when the
 * output does not fit or the stream is damaged. */
/* gg_sqfs_shrink_only around libsquashfs's lz4 compressor: a block that does not shrink
 * (the 4 bytes of a one-owner id table) is stored raw (0), where lz4 alone gives a longer
 * one that unsquashfs 4.5 refuses; one that shrinks passes through and inflates back;
 * the same from a copy (the block processor's threads each take one). */
static void test_shrink_only(void **state)
{
	(void)state;
	sqfs_compressor_config_t cfg;
	sqfs_compressor_t *lz4 = NULL, *un = NULL;
	assert_int_equal(sqfs_compressor_config_init(&cfg, SQFS_COMP_LZ4, 131072, 0), 0);
	assert_int_equal(sqfs_compressor_create(&cfg, &lz4), 0);
	sqfs_compressor_t *c = gg_sqfs_shrink_only(lz4);
	assert_non_null(c);
	sqfs_compressor_t *cc = sqfs_copy(c);
	assert_non_null(cc);
	assert_int_equal(
		sqfs_compressor_config_init(&cfg, SQFS_COMP_LZ4, 131072, SQFS_COMP_FLAG_UNCOMPRESS),
		0);
	assert_int_equal(sqfs_compressor_create(&cfg, &un), 0);
	sqfs_compressor_config_t got;
	c->get_configuration(c, &got);
	assert_int_equal(got.id, SQFS_COMP_LZ4);

	static sqfs_u8 in[8192], out[8192], back[8192];
	const sqfs_u8 id[4] = {0, 0, 0, 0};
	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (sqfs_u8)("squashfs "[i % 9]);
	sqfs_compressor_t *each[2] = {c, cc};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(each[k]->do_block(each[k], id, sizeof id, out, sizeof out), 0);
		sqfs_s32 n = each[k]->do_block(each[k], in, sizeof in, out, sizeof out);
		assert_true(n > 0 && n < (sqfs_s32)sizeof in);
		assert_int_equal(un->do_block(un, out, (sqfs_u32)n, back, sizeof back),
				 (sqfs_s32)sizeof in);
		assert_memory_equal(back, in, sizeof in);
	}
	sqfs_destroy(cc);
	sqfs_destroy(c);
	sqfs_destroy(un);
}

static void test_inflate(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n), *out = malloc(n), *back = malloc(n);
	fill_text(in, n, 5);
	sqfs_compressor_t *c = gg_sqfs_deflate_new(6, (uint32_t)n);
	sqfs_compressor_t *z = gg_sqfs_inflate_new((uint32_t)n);
	assert_non_null(z);
	sqfs_compressor_config_t cfg;
	z->get_configuration(z, &cfg);
	assert_int_equal(cfg.id, SQFS_COMP_GZIP);
	assert_true(cfg.flags & SQFS_COMP_FLAG_UNCOMPRESS);
	sqfs_s32 clen = c->do_block(c, in, (sqfs_u32)n, out, (sqfs_u32)n);
	assert_true(clen > 0);
	sqfs_compressor_t *z2 = sqfs_copy(z);
	sqfs_destroy(z);
	assert_int_equal(z2->do_block(z2, out, (sqfs_u32)clen, back, (sqfs_u32)n), (sqfs_s32)n);
	assert_memory_equal(in, back, n);
	assert_int_equal(z2->do_block(z2, out, (sqfs_u32)clen, back, (sqfs_u32)(n - 1)),
			 SQFS_ERROR_OVERFLOW);
	out[clen / 2] ^= 0x55;
	assert_true(z2->do_block(z2, out, (sqfs_u32)clen, back, (sqfs_u32)n) < 0);
	sqfs_destroy(z2);
	sqfs_destroy(c);
	free(in);
	free(out);
	free(back);
}

/* Blocks read back again come from the inflater's memo of the last 16, keyed by their
 * stored bytes: the same output as inflating, a least recently used one replaced, and
 * two stored blocks of the same length but different bytes never taken for each other. */
static void test_inflate_memo(void **state)
{
	(void)state;
	size_t n = 131072;
	enum { NB = 20 };
	unsigned char *in[NB], *st[NB], *back = malloc(n);
	sqfs_s32 len[NB];
	sqfs_compressor_t *c = gg_sqfs_deflate_new(6, (uint32_t)n);
	sqfs_compressor_t *z = gg_sqfs_inflate_new((uint32_t)n);
	for (int i = 0; i < NB; i++) {
		in[i] = malloc(n);
		st[i] = malloc(n);
		fill_text(in[i], n, 100 + i);
		len[i] = c->do_block(c, in[i], (sqfs_u32)n, st[i], (sqfs_u32)n);
		assert_true(len[i] > 0);
	}
	/* 0..19 fills the memo (16 slots: 4..19 stay), 19..0 finds 16 of them */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < NB; k++) {
			int i = pass ? NB - 1 - k : k;
			memset(back, 0, n);
			assert_int_equal(z->do_block(z, st[i], (sqfs_u32)len[i], back, (sqfs_u32)n),
					 (sqfs_s32)n);
			assert_memory_equal(back, in[i], n);
		}
	assert_int_equal(gg_sqfs_inflate_memo_hits(z), 16);
	/* stored (level 0): equal lengths, one byte apart */
	struct libdeflate_compressor *c0 = libdeflate_alloc_compressor(0);
	assert_non_null(c0);
	unsigned char *s1 = malloc(n), *s2 = malloc(n);
	size_t l1 = libdeflate_zlib_compress(c0, in[0], n / 2, s1, n);
	in[0][100] ^= 1;
	size_t l2 = libdeflate_zlib_compress(c0, in[0], n / 2, s2, n);
	assert_true(l1 > 0 && l1 == l2 && memcmp(s1, s2, l1) != 0);
	assert_int_equal(z->do_block(z, s1, (sqfs_u32)l1, back, (sqfs_u32)n), (sqfs_s32)(n / 2));
	assert_int_equal(z->do_block(z, s2, (sqfs_u32)l2, back, (sqfs_u32)n), (sqfs_s32)(n / 2));
	assert_memory_equal(back, in[0], n / 2);
	libdeflate_free_compressor(c0);
	free(s1);
	free(s2);
	for (int i = 0; i < NB; i++) {
		free(in[i]);
		free(st[i]);
	}
	sqfs_destroy(z);
	sqfs_destroy(c);
	free(back);
}

/* The gate's wrapper: its copies give the inner compressor's bytes and count each block
 * as done; the configuration is the inner one's. */
static void test_gate_wrap(void **state)
{
	(void)state;
	size_t n = 131072;
	unsigned char *in = malloc(n), *a = malloc(n), *b = malloc(n);
	fill_text(in, n, 7);
	struct gg_gate *g = gg_gate_new();
	assert_non_null(g);
	sqfs_compressor_t *plain = gg_sqfs_deflate_new(6, (uint32_t)n);
	sqfs_compressor_t *w = gg_gate_wrap(g, gg_sqfs_deflate_new(6, (uint32_t)n));
	assert_non_null(w);
	sqfs_compressor_t *c1 = sqfs_copy(w), *c2 = sqfs_copy(c1);
	assert_non_null(c1);
	assert_non_null(c2);
	sqfs_s32 la = plain->do_block(plain, in, (sqfs_u32)n, a, (sqfs_u32)n);
	assert_true(la > 0);
	assert_int_equal(gg_gate_done(g), 0);
	assert_int_equal(c1->do_block(c1, in, (sqfs_u32)n, b, (sqfs_u32)n), la);
	assert_memory_equal(a, b, (size_t)la);
	assert_int_equal(c2->do_block(c2, in, (sqfs_u32)n, b, (sqfs_u32)n), la);
	assert_int_equal(gg_gate_done(g), 2);
	sqfs_compressor_config_t cp, cw;
	plain->get_configuration(plain, &cp);
	c2->get_configuration(c2, &cw);
	assert_memory_equal(&cp, &cw, sizeof cp);
	gg_gate_wait(g, 1); /* already done: returns at once */
	sqfs_destroy(c2);
	sqfs_destroy(c1);
	sqfs_destroy(w);
	sqfs_destroy(plain);
	gg_gate_free(g);
	free(in);
	free(a);
	free(b);
}

/* A compressor that holds every block until the test releases one. */
struct held {
	sqfs_compressor_t base;
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	int *entered, *released;
};

static sqfs_s32 held_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
			      sqfs_u8 *out, sqfs_u32 outsize)
{
	struct held *h = (struct held *)cmp;
	(void)in, (void)size, (void)out, (void)outsize;
	pthread_mutex_lock(h->mu);
	(*h->entered)++;
	pthread_cond_broadcast(h->cv);
	while (*h->released == 0)
		pthread_cond_wait(h->cv, h->mu);
	(*h->released)--;
	pthread_mutex_unlock(h->mu);
	return 0;
}

static void held_destroy(sqfs_object_t *obj)
{
	free(obj);
}

static sqfs_object_t *held_copy(const sqfs_object_t *obj)
{
	struct held *h = malloc(sizeof *h);
	if (h)
		*h = *(const struct held *)obj;
	return (sqfs_object_t *)h;
}

struct gate_thread {
	pthread_t th;
	sqfs_compressor_t *c;
	unsigned char buf[64];
};

static void *gate_thread_main(void *arg)
{
	struct gate_thread *t = arg;
	t->c->do_block(t->c, t->buf, sizeof t->buf, t->buf, sizeof t->buf);
	return NULL;
}

/* A wait ends when its count of blocks is done, and a wait for more blocks than will
 * come ends when the last busy one is done instead of hanging. */
static void test_gate_wait(void **state)
{
	(void)state;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	int entered = 0, released = 0;
	struct held *h = calloc(1, sizeof *h);
	h->mu = &mu;
	h->cv = &cv;
	h->entered = &entered;
	h->released = &released;
	h->base.base.destroy = held_destroy;
	h->base.base.copy = held_copy;
	h->base.do_block = held_do_block;
	struct gg_gate *g = gg_gate_new();
	sqfs_compressor_t *w = gg_gate_wrap(g, &h->base);
	assert_non_null(w);
	struct gate_thread t[3];
	for (int i = 0; i < 3; i++) {
		t[i].c = sqfs_copy(w);
		assert_non_null(t[i].c);
		assert_int_equal(pthread_create(&t[i].th, NULL, gate_thread_main, &t[i]), 0);
	}
	pthread_mutex_lock(&mu);
	while (entered < 3) /* all three blocks are being compressed */
		pthread_cond_wait(&cv, &mu);
	released = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	gg_gate_wait(g, 2);
	assert_true(gg_gate_done(g) >= 2);
	pthread_mutex_lock(&mu);
	released++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	gg_gate_wait(g, 100); /* only 3 blocks: ends when none is busy */
	assert_int_equal(gg_gate_done(g), 3);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i].th, NULL);
		sqfs_destroy(t[i].c);
	}
	sqfs_destroy(w);
	gg_gate_free(g);
}

static int thread_count(void)
{
	int n = -1;
	FILE *f = fopen("/proc/self/stat", "r");
	/* field 20 is num_threads; field 2 (comm) has no spaces here */
	if (f && fscanf(f,
			"%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			"%*d %*d %d",
			&n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

/* The thread count once it is want, or what it is after 5 s. A joined thread
 * is counted until the kernel has released it, which is after pthread_join
 * returns (the join waits for the thread's tid to be cleared, the count drops
 * later in its exit): a count read at once may still hold it, and a thread of
 * an earlier test of this program too. Nothing tells when that is done, so it
 * is asked until it is so: a bound on a state, not a sleep that orders. */
static int threads_become(int want)
{
	int n = thread_count();
	for (int i = 0; i < 5000 && n != want; i++) {
		nanosleep(&(struct timespec){0, 1000000}, NULL);
		n = thread_count();
	}
	return n;
}

/* The writeback thread starts every range asked for before it stops (requests merged:
 * the end is the furthest asked for), and is gone after free; a bad descriptor changes
 * nothing (best effort). */
static void test_writeback(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/wb.bin", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	static unsigned char buf[1 << 16];
	memset(buf, 'x', sizeof buf);
	for (int i = 0; i < 16; i++)
		assert_int_equal(write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
	int before = threads_become(1); /* the threads of earlier tests gone */
	assert_true(before >= 1);
	struct gg_writeback *wb = gg_writeback_new(fd);
	assert_non_null(wb);
	assert_int_equal(threads_become(before + 1), before + 1);
	gg_writeback_start(wb, 0, 4096);
	gg_writeback_start(wb, 4096, 65536);
	gg_writeback_start(wb, 65536, 65536); /* empty: nothing */
	gg_writeback_start(wb, 0, 8192);      /* behind: merged */
	gg_writeback_start(wb, 65536, 1 << 20);
	assert_int_equal(gg_writeback_free(wb), 1 << 20);
	assert_int_equal(threads_become(before), before);
	wb = gg_writeback_new(-1);
	assert_non_null(wb);
	gg_writeback_start(wb, 0, 100);
	assert_int_equal(gg_writeback_free(wb), 100);
	wb = gg_writeback_new(fd); /* never asked: nothing started */
	assert_int_equal(gg_writeback_free(wb), 0);
	assert_int_equal(gg_writeback_free(NULL), 0);
	assert_int_equal(threads_become(before), before);
	close(fd);
	unlink(path);
}

/* ---- direct.c ---------------------------------------------------------------------- */

static uint32_t xs_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* 1 when this file system takes an aligned O_DIRECT write (else freeze writes through
 * the page cache, and so do these tests). */
static int direct_works(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/probe.direct", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	void *p = NULL;
	int ok = fd >= 0 && unit_fast(" o_direct") && posix_memalign(&p, 4096, 4096) == 0 &&
		 (memset(p, 0, 4096), pwrite(fd, p, 4096, 0) == 4096);
	free(p);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return ok;
}

#define MIRROR_MAX (10u << 20)

/* What the squashfs writer does through the direct writer (appends of any size, rewrites
 * behind and inside the buffers, truncates back into either, reads of what was written
 * anywhere, a flush halfway) matches the same done to a plain buffer: every read, and
 * the file after each flush, byte for byte, its size exact, the bytes before the start
 * untouched. */
static void test_direct_mirror(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/direct.bin", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	static unsigned char head[8192], ref[MIRROR_MAX], got[MIRROR_MAX], data[300000];
	memset(head, 'P', sizeof head);
	assert_int_equal(gg_image_pwrite_all(fd, head, sizeof head, 0), 0);
	int works = direct_works(tmpdir);
	int before = threads_become(1); /* the threads of earlier tests gone */
	struct gg_direct *d = gg_direct_new(fd, sizeof head);
	if (!d) { /* only where O_DIRECT cannot be opened at all */
		assert_false(works);
		close(fd);
		unlink(path);
		return;
	}
	assert_true(thread_count() > before);
	assert_null(gg_direct_new(fd, 100)); /* not aligned */
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_null(gg_direct_new(ro, 0)); /* no writing through a read-only descriptor */
	close(ro);
	uint32_t x = 12345;
	size_t end = 0;
	for (int op = 0; op < 600; op++) {
		uint32_t r = xs_next(&x), k = r % 10;
		if (op == 300) { /* a flush on the way: the file has it all, writes go on */
			assert_int_equal(gg_direct_flush(d), 0);
			struct stat mid;
			assert_int_equal(fstat(fd, &mid), 0); /* nothing reserved is left over */
			assert_int_equal((uint64_t)mid.st_size, sizeof head + end);
			assert_int_equal(gg_image_pread_all(fd, got, end, sizeof head), 0);
			assert_memory_equal(got, ref, end);
		}
		if (k <= 5 || end == 0) { /* append */
			size_t n = 1 + xs_next(&x) % sizeof data;
			if (end + n > MIRROR_MAX)
				n = MIRROR_MAX - end;
			for (size_t i = 0; i < n; i++)
				data[i] = (unsigned char)(xs_next(&x) >> 7);
			assert_int_equal(gg_direct_write(d, sizeof head + end, data, n), 0);
			memcpy(ref + end, data, n);
			end += n;
		} else if (k == 6) { /* rewrite: anywhere, the start included */
			size_t off = r % 3 ? xs_next(&x) % end : 0, n = 1 + xs_next(&x) % 4096;
			if (n > end - off)
				n = end - off;
			memset(data, (int)(op & 0xFF), n);
			assert_int_equal(gg_direct_write(d, sizeof head + off, data, n), 0);
			memcpy(ref + off, data, n);
		} else if (k == 7 || end == MIRROR_MAX) { /* truncate back */
			size_t back = xs_next(&x) % (r % 2 ? 4096 : 3u << 20);
			end = back < end ? end - back : 0;
			assert_int_equal(gg_direct_truncate(d, sizeof head + end), 0);
		} else { /* read back */
			size_t off = xs_next(&x) % end, n = 1 + xs_next(&x) % 200000;
			if (n > end - off)
				n = end - off;
			assert_int_equal(gg_direct_read(d, sizeof head + off, got, n), 0);
			assert_memory_equal(got, ref + off, n);
		}
	}
	assert_int_equal(gg_direct_flush(d), 0);
	uint64_t direct = gg_direct_free(d);
	assert_int_equal(threads_become(before), before); /* its thread ended */
	if (works)
		assert_true(direct > 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((uint64_t)st.st_size, sizeof head + end);
	assert_int_equal(gg_image_pread_all(fd, got, sizeof head, 0), 0);
	assert_memory_equal(got, head, sizeof head);
	assert_int_equal(gg_image_pread_all(fd, got, end, sizeof head), 0);
	assert_memory_equal(got, ref, end);
	close(fd);
	unlink(path);
}

/* Written with O_DIRECT, the data is made durable on the way: an fdatasync after every
 * GG_DIRECT_SYNC bytes, so the final fsync is short. Two and a half of those make at
 * least one (the second can still be due when the last chunk is written); the file
 * holds every byte. Through the page cache (no O_DIRECT here) none is made. */
static void test_direct_syncs(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/direct-sync.bin", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	struct gg_direct *d = gg_direct_new(fd, 0);
	if (!d) {
		assert_false(direct_works(tmpdir));
		close(fd);
		unlink(path);
		return;
	}
	static unsigned char data[1u << 20], got[1u << 20];
	size_t total = GG_DIRECT_SYNC * 5 / 2, off = 0;
	for (uint32_t x = 99; off < total; off += sizeof data) {
		for (size_t i = 0; i < sizeof data; i += 4) {
			uint32_t v = xs_next(&x);
			memcpy(data + i, &v, 4);
		}
		assert_int_equal(gg_direct_write(d, off, data, sizeof data), 0);
	}
	assert_int_equal(gg_direct_flush(d), 0);
	uint64_t syncs = gg_direct_syncs(d);
	uint64_t direct = gg_direct_free(d);
	if (direct)
		assert_true(syncs >= 1 && syncs <= total / GG_DIRECT_SYNC);
	else
		assert_int_equal(syncs, 0);
	assert_int_equal(gg_image_pread_all(fd, got, sizeof got, (int64_t)(total - sizeof got)), 0);
	assert_memory_equal(got, data, sizeof got);
	close(fd);
	unlink(path);
}

/* A write the file system refuses (here the file size limit: EFBIG) comes back from a
 * later write or the flush with its errno, whichever thread made it. */
static void test_direct_write_error(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/direct-limit.bin", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	struct gg_direct *d = gg_direct_new(fd, 0);
	if (!d) {
		close(fd);
		unlink(path);
		return;
	}
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 2u << 20;
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	static unsigned char buf[128 << 10];
	memset(buf, 'z', sizeof buf);
	int rc = 0, e = 0;
	for (uint64_t off = 0; !rc && off < (6u << 20); off += sizeof buf)
		if ((rc = gg_direct_write(d, off, buf, sizeof buf)) < 0)
			e = errno;
	if (!rc && (rc = gg_direct_flush(d)) < 0)
		e = errno;
	gg_direct_free(d);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	assert_int_equal(rc, -1);
	assert_int_equal(e, EFBIG);
	close(fd);
	unlink(path);
}

/* The gate's marks: no sleep while at most three quarters of the queue are blocks not
 * compressed yet; past that, a sleep until only a quarter are left (so the feeder then
 * queues half a queue without sleeping, not one block per wake-up). */
static void test_gate_marks(void **state)
{
	(void)state;
	uint64_t until = 7;
	assert_int_equal(gg_sqfs_gate_due(96, 0, 128, &until), 0);
	assert_int_equal(gg_sqfs_gate_due(1000, 904, 128, &until), 0);
	assert_int_equal(until, 7); /* untouched when there is nothing to wait for */
	assert_int_equal(gg_sqfs_gate_due(1000, 903, 128, &until), 1);
	assert_int_equal(until, 968);
	assert_int_equal(gg_sqfs_gate_due(97, 0, 128, &until), 1);
	assert_int_equal(until, 65);
	/* a longer queue (more compressor threads) scales both marks */
	assert_int_equal(gg_sqfs_gate_due(1000, 616, 512, &until), 0);
	assert_int_equal(gg_sqfs_gate_due(1000, 615, 512, &until), 1);
	assert_int_equal(until, 872);
	/* done can run ahead of what the writer counted as queued: no sleep */
	assert_int_equal(gg_sqfs_gate_due(10, 12, 128, &until), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deflate_zlib_compatible),
		cmocka_unit_test(test_deflate_hopeless),
		cmocka_unit_test(test_deflate_hopeless_alignment),
		cmocka_unit_test(test_deflate_matchless),
		cmocka_unit_test(test_deflate_few_repeats),
		cmocka_unit_test(test_shrink_only),
		cmocka_unit_test(test_inflate),
		cmocka_unit_test(test_inflate_memo),
		cmocka_unit_test(test_gate_wrap),
		cmocka_unit_test(test_gate_wait),
		cmocka_unit_test(test_writeback),
		cmocka_unit_test(test_gate_marks),
		cmocka_unit_test(test_direct_mirror),
		cmocka_unit_test(test_direct_syncs),
		cmocka_unit_test(test_direct_write_error),
		cmocka_unit_test(test_writer_roundtrip),
		cmocka_unit_test(test_writer_io_error),
		cmocka_unit_test(test_table_level),
		cmocka_unit_test(test_writer_deep),
	};
	return cmocka_run_group_tests_name("image_squashfs", tests, setup_tmp, teardown_tmp);
}
