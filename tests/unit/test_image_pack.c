/* Unit tests of lib/image/pack.c: tails packed into fragment blocks in the order they
 * come, each block queued once full; a tail equal to an earlier one (byte for byte) is
 * stored once, whether the earlier one is in the block being filled, in a block queued
 * and not yet written (kept: no waiting, no reading back), or in a block written long
 * ago (read back from the image and decompressed, or read as stored); two different
 * tails with the same CRC-32 and size are both stored; the fragment table lists the
 * blocks where the image has them; bad calls and a failing queue are errors, and
 * nothing leaks. The queue and the image are a fake: a list of blocks written when the
 * test says, compressed with freeze's own gzip compressor. */
#include "unit.h"

#include <libdeflate.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/block.h>
#include <sqfs/inode.h>

#include "image/image.h"
#include "image/internal.h"

#define BS     8192
#define MAXQ   64
#define IMGMAX (4u << 20)

struct fake {
	sqfs_compressor_t *cmp, *uncmp;
	unsigned char *img;
	uint64_t size;
	struct {
		sqfs_inode_generic_t **holder;
		unsigned char data[BS];
		size_t n;
	} q[MAXQ];
	int nq, auto_write, fail_submit, submits, reads;
	struct gg_pack *p;
};

/* The oldest block queued into the image, as the block processor would write it. */
static int write_one(struct fake *f)
{
	unsigned char out[BS];
	size_t n = f->q[0].n;
	sqfs_s32 c = f->cmp->do_block(f->cmp, f->q[0].data, n, out, sizeof out);
	if (c < 0)
		return c;
	uint32_t word = c > 0 ? (uint32_t)c : (uint32_t)n | (1u << 24);
	size_t len = c > 0 ? (size_t)c : n;
	if (f->size + len > IMGMAX)
		return SQFS_ERROR_OVERFLOW;
	memcpy(f->img + f->size, c > 0 ? out : f->q[0].data, len);
	sqfs_inode_generic_t *in = calloc(1, sizeof *in + sizeof(sqfs_u32));
	if (!in)
		return SQFS_ERROR_ALLOC;
	in->base.type = SQFS_INODE_FILE;
	in->payload_bytes_available = in->payload_bytes_used = sizeof(sqfs_u32);
	in->extra[0] = word;
	sqfs_inode_set_file_block_start(in, f->size);
	free(*f->q[0].holder);
	*f->q[0].holder = in;
	f->size += len;
	memmove(&f->q[0], &f->q[1], (size_t)(f->nq - 1) * sizeof f->q[0]);
	f->nq--;
	return 0;
}

static int write_all(struct fake *f)
{
	int rc = 0;
	while (f->nq && !rc)
		rc = write_one(f);
	return rc;
}

static int fk_submit(void *ud, const void *data, size_t n, sqfs_inode_generic_t **holder)
{
	struct fake *f = ud;
	f->submits++;
	if (f->fail_submit || f->nq == MAXQ || n > BS)
		return SQFS_ERROR_IO;
	*holder = calloc(1, sizeof **holder); /* as begin_file makes it */
	f->q[f->nq].holder = holder;
	memcpy(f->q[f->nq].data, data, n);
	f->q[f->nq++].n = n;
	return f->auto_write ? write_one(f) : 0;
}

static int fk_read(void *ud, uint64_t off, void *buf, size_t n)
{
	struct fake *f = ud;
	f->reads++;
	if (off > f->size || n > f->size - off)
		return SQFS_ERROR_OUT_OF_BOUNDS;
	memcpy(buf, f->img + off, n);
	return 0;
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof *f);
	if (!f || !(f->img = malloc(IMGMAX)) || !(f->cmp = gg_sqfs_deflate_new(6, BS)) ||
	    !(f->uncmp = gg_sqfs_inflate_new(BS)))
		return -1;
	struct gg_pack_io io = {fk_submit, fk_read, f->uncmp, f};
	if (!(f->p = gg_pack_new(BS, &io)))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;
	gg_pack_free(f->p); /* frees the holders' inodes the fake made */
	sqfs_destroy(f->cmp);
	sqfs_destroy(f->uncmp);
	free(f->img);
	free(f);
	return 0;
}

/* n bytes of text (compresses) or of noise (stored as it is), from seed. */
static void fill(unsigned char *b, size_t n, uint32_t seed, int text)
{
	uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = 0; i < n; i++) {
		z ^= z >> 29;
		z *= 0xBF58476D1CE4E5B9ull;
		b[i] = text ? (unsigned char)("the quick brown fox "[(z >> 40) % 20])
			    : (unsigned char)(z >> 40);
	}
}

struct placed {
	uint32_t index, offset, n;
	unsigned char data[1000];
};

static void add(struct fake *f, struct placed *t, uint32_t n, uint32_t seed, int text)
{
	t->n = n;
	fill(t->data, n, seed, text);
	assert_int_equal(gg_pack_add(f->p, t->data, n, &t->index, &t->offset), 0);
}

/* Every tail's bytes, as a reader finds them through the fragment table. */
static void check_image(struct fake *f, const struct placed *t, size_t nt)
{
	assert_int_equal(gg_pack_flush(f->p), 0);
	assert_int_equal(write_all(f), 0);
	sqfs_frag_table_t *tbl = sqfs_frag_table_create(0);
	assert_non_null(tbl);
	assert_int_equal(gg_pack_table(f->p, tbl), 0);
	for (size_t i = 0; i < nt; i++) {
		sqfs_fragment_t fr;
		assert_int_equal(sqfs_frag_table_lookup(tbl, t[i].index, &fr), 0);
		unsigned char blk[BS];
		uint32_t size = fr.size & ((1u << 24) - 1);
		assert_true(fr.start_offset + size <= f->size);
		size_t len = size;
		if (!(fr.size & (1u << 24))) {
			sqfs_s32 d = f->uncmp->do_block(f->uncmp, f->img + fr.start_offset, size,
							blk, sizeof blk);
			assert_true(d > 0);
			len = (size_t)d;
		} else {
			memcpy(blk, f->img + fr.start_offset, size);
		}
		assert_true(t[i].offset + t[i].n <= len);
		assert_memory_equal(blk + t[i].offset, t[i].data, t[i].n);
	}
	sqfs_destroy(tbl);
}

static void test_same_block(void **state)
{
	struct fake *f = *state;
	struct placed t[4];
	add(f, &t[0], 300, 1, 1);
	add(f, &t[1], 300, 2, 1); /* same size, other bytes */
	add(f, &t[2], 300, 1, 1); /* a copy of the first */
	add(f, &t[3], 299, 1, 1); /* the first, one byte shorter */
	assert_int_equal(t[2].index, t[0].index);
	assert_int_equal(t[2].offset, t[0].offset);
	assert_int_equal(t[1].offset, 300);
	assert_int_equal(t[3].offset, 600);
	assert_int_equal(f->submits, 0);
	check_image(f, t, 4);
}

/* Blocks queued and not yet written are compared with as they were: no waiting for
 * the queue, no reading back (a block not yet written cannot be read back). */
static void test_unwritten_kept(void **state)
{
	struct fake *f = *state;
	static struct placed t[100];
	struct placed c;
	for (int i = 0; i < 100; i++) /* 12 blocks full (more than the cache), none written */
		add(f, &t[i], 1000, (uint32_t)i + 10, i % 2);
	assert_int_equal(f->submits, 12);
	for (int i = 0; i < 100; i++) {
		add(f, &c, 1000, (uint32_t)i + 10, i % 2);
		assert_int_equal(c.index, t[i].index);
		assert_int_equal(c.offset, t[i].offset);
	}
	assert_int_equal(f->reads, 0);
	assert_int_equal(f->submits, 12);
	check_image(f, t, 100);
}

/* Blocks written long ago (more than the cache keeps) are read back: compressed ones
 * decompressed, stored ones as they are. */
static void test_read_back(void **state)
{
	struct fake *f = *state;
	f->auto_write = 1;
	static struct placed t[200];
	for (int i = 0; i < 200; i++) /* 25 blocks, text and noise by turns of 8 */
		add(f, &t[i], 1000, (uint32_t)i + 100, (i / 8) % 2);
	assert_true(f->submits >= 20);
	assert_int_equal(f->reads, 0);
	struct placed c;
	add(f, &c, 1000, 100, 0); /* the first block's: noise, stored */
	assert_int_equal(c.index, t[0].index);
	assert_int_equal(c.offset, t[0].offset);
	int reads = f->reads;
	assert_true(reads >= 1);
	add(f, &c, 1000, 108, 1); /* the second block's: text, compressed */
	assert_int_equal(c.index, t[8].index);
	assert_int_equal(c.offset, t[8].offset);
	assert_true(f->reads > reads);
	reads = f->reads;
	add(f, &c, 1000, 101, 0); /* the first block again: kept since it was read */
	assert_int_equal(c.index, t[1].index);
	assert_int_equal(f->reads, reads);
	struct placed d; /* the copies took no room: a new tail opens block 25 */
	add(f, &d, 1000, 999, 1);
	assert_int_equal(d.index, t[199].index + 1);
	assert_int_equal(d.offset, 0);
	check_image(f, t, 200);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Two different 24-byte strings with the same CRC-32, by the birthday bound: 2^18
 * strings give 8 pairs on average. */
static int crc_pair(unsigned char a[24], unsigned char b[24])
{
	const size_t n = 1u << 18;
	uint64_t *v = malloc(n * sizeof *v);
	if (!v)
		return -1;
	unsigned char s[24];
	for (uint32_t i = 0; i < n; i++) {
		fill(s, 24, i, 0);
		v[i] = (uint64_t)libdeflate_crc32(0, s, 24) << 32 | i;
	}
	qsort(v, n, sizeof *v, cmp_u64);
	int rc = -1;
	for (size_t i = 1; i < n && rc; i++)
		if (v[i] >> 32 == v[i - 1] >> 32) {
			fill(a, 24, (uint32_t)v[i - 1], 0);
			fill(b, 24, (uint32_t)v[i], 0);
			rc = memcmp(a, b, 24) ? 0 : -1;
		}
	free(v);
	return rc;
}

static void test_crc_collision(void **state)
{
	struct fake *f = *state;
	struct placed t[2], c;
	assert_int_equal(crc_pair(t[0].data, t[1].data), 0);
	assert_int_equal(libdeflate_crc32(0, t[0].data, 24), libdeflate_crc32(0, t[1].data, 24));
	for (int i = 0; i < 2; i++) {
		t[i].n = 24;
		assert_int_equal(gg_pack_add(f->p, t[i].data, 24, &t[i].index, &t[i].offset), 0);
	}
	assert_int_not_equal(t[0].offset, t[1].offset);
	for (int i = 1; i >= 0; i--) {
		memcpy(c.data, t[i].data, 24);
		assert_int_equal(gg_pack_add(f->p, c.data, 24, &c.index, &c.offset), 0);
		assert_int_equal(c.offset, t[i].offset);
	}
	check_image(f, t, 2);
}

static void test_bad_calls(void **state)
{
	struct fake *f = *state;
	unsigned char b[BS] = {1};
	uint32_t index, offset;
	assert_int_equal(gg_pack_add(f->p, b, 0, &index, &offset), SQFS_ERROR_ARG_INVALID);
	assert_int_equal(gg_pack_add(f->p, b, BS, &index, &offset), SQFS_ERROR_ARG_INVALID);
	assert_int_equal(gg_pack_add(f->p, b, 10, &index, &offset), 0);
	sqfs_frag_table_t *tbl = sqfs_frag_table_create(0);
	assert_int_equal(gg_pack_table(f->p, tbl), SQFS_ERROR_SEQUENCE); /* not flushed */
	assert_int_equal(gg_pack_flush(f->p), 0);
	assert_int_equal(gg_pack_table(f->p, tbl), SQFS_ERROR_SEQUENCE); /* not written */
	assert_int_equal(write_all(f), 0);
	assert_int_equal(gg_pack_table(f->p, tbl), 0);
	sqfs_destroy(tbl);
}

static void test_submit_fails(void **state)
{
	struct fake *f = *state;
	struct placed t;
	for (int i = 0; i < 8; i++)
		add(f, &t, 1000, (uint32_t)i, 1);
	f->fail_submit = 1;
	fill(t.data, 1000, 99, 1);
	assert_int_equal(gg_pack_add(f->p, t.data, 1000, &t.index, &t.offset), SQFS_ERROR_IO);
	assert_int_equal(gg_pack_flush(f->p), SQFS_ERROR_IO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crc_collision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_fails, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
