/* A libsquashfs compressor that reports itself as gzip (squashfs compressor id 1) and
 * deflates with libdeflate: the same zlib-framed blocks every squashfs reader inflates,
 * several times faster than zlib at a smaller or equal size (see notes/sif.md 5.3).
 *
 * Blocks of already-compressed data (archives, images, random bytes) cost deflate as
 * much time as text and come out no smaller, so they are stored raw anyway. A cheap
 * test (about a tenth of deflate's time) recognises them first: a byte histogram that
 * is flat (Huffman coding cannot gain) and no repeated 4-byte strings within deflate's
 * window (LZ77 cannot gain). Blocks where LZ77 finds almost nothing but Huffman coding
 * still gains (float weights, packed numbers) are Huffman coded without looking for
 * matches (huffman.c), as small and about eight times faster than level 1. Both tests are
 * pure functions of the block's bytes, in integer arithmetic, so images stay
 * reproducible on every machine. */
#include "image/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/predef.h>

#define PROBE_MIN   16384u /* smaller blocks (metadata, short tails) just compress */
#define PROBE_MAX   (16u << 20)
#define PROBE_BITS  15
#define PROBE_SLOTS (1u << PROBE_BITS)
#define WINDOW      32768u /* deflate's match distance */
/* A matchless block that Huffman coding cannot shrink (its bytes are nearly uniform)
 * and where fewer than n/FEW_REPEATS even positions (16 in 128 KiB) start a repeat is
 * stored raw without trying level 1: its matches could save a few dozen bytes, less
 * than the Huffman table a deflate block needs. On the bench's five trees level 1 made
 * none of 190 such blocks smaller (it shrank 99 of the 204 with 19 to 121 repeats, by
 * 186 bytes at most), and each took it about a millisecond: 0.1 of the 1.0 CPU s on
 * the tree of compressed files. */
#define FEW_REPEATS 8192u

struct gg_deflate {
	sqfs_compressor_t base;
	struct libdeflate_compressor *c;
	struct gg_huffman *huff;            /* matchless blocks */
	struct libdeflate_compressor *fast; /* level 1, for those huff cannot shrink; NULL at 1 */
	int level;
	uint32_t block_size;
	uint16_t *probe; /* PROBE_SLOTS: low 16 bits of the last position of a hash */
};

/* The chi-square distance of the byte histogram of in[0..n) from uniform bytes is
 * below max: (256 * sum c^2 - n^2) / n < max. Random bytes give 255 +- 23 whatever n. */
static int flat_histogram(const uint8_t *in, size_t n, uint64_t max)
{
	uint32_t h[256];
	gg_byte_histogram(in, n, h);
	uint64_t sq = 0;
	for (int b = 0; b < 256; b++)
		sq += (uint64_t)h[b] * h[b];
	return 256 * sq - (uint64_t)n * n < max * n;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint32_t hash4(uint32_t v)
{
	return (v * 2654435761u) >> (32 - PROBE_BITS);
}

/* The distance to an earlier position holding v's 4 bytes, from the slot (the low 16
 * bits of a position that hashed the same, checked against the bytes, so a stale slot
 * can only miss a repeat, never invent one), or 0. Without branches: on data without
 * repeats the candidate distances are random and a branch on them mispredicted half the
 * time, which cost more than the rest of the test. */
static inline size_t candidate(const uint16_t *slot, const uint8_t *in, size_t i, uint32_t v)
{
	size_t d = (i - slot[hash4(v)]) & 0xFFFF;
	size_t ok = (d - 1 < WINDOW) & (d <= i);
	d &= (size_t)0 - ok;
	return d & ((size_t)0 - (size_t)(load32(in + i - d) == v));
}

/* When position i repeats an earlier one, [*a, *b) is the repeat through it, extended
 * both ways but not below from. */
static inline int repeat_at(const uint16_t *slot, const uint8_t *in, size_t n, size_t i,
			    size_t from, size_t *a, size_t *b)
{
	size_t d = candidate(slot, in, i, load32(in + i));
	if (!d)
		return 0;
	*a = i;
	*b = i + 4;
	while (*a > from && *a > d && in[*a - 1] == in[*a - 1 - d])
		--*a;
	while (*b < n && in[*b] == in[*b - d])
		++*b;
	return 1;
}

struct probe {
	uint16_t *slot;
	const uint8_t *in;
	size_t n, found, covered; /* bytes before covered are counted already */
};

static inline void probe_look(struct probe *p, size_t i)
{
	size_t a, b;
	if (i >= p->covered && repeat_at(p->slot, p->in, p->n, i, p->covered, &a, &b)) {
		p->found += b - a;
		p->covered = b;
	}
}

static inline void probe_insert(struct probe *p, size_t i)
{
	p->slot[hash4(load32(p->in + i))] = (uint16_t)i;
}

static size_t repeats(uint16_t *slot, const uint8_t *in, size_t n, size_t limit)
{
	memset(slot, 0, PROBE_SLOTS * sizeof *slot);
	struct probe p = {slot, in, n, 0, 0};
	size_t i = 0;
	for (; i + 16 <= n && p.found < limit; i += 12) { /* unrolled: no modulo per byte */
		probe_look(&p, i);
		probe_insert(&p, i);
		probe_insert(&p, i + 3);
		probe_look(&p, i + 4);
		probe_insert(&p, i + 6);
		probe_look(&p, i + 8);
		probe_insert(&p, i + 9);
	}
	for (; i + 4 <= n && p.found < limit; i++) {
		if (i % 4 == 0)
			probe_look(&p, i);
		if (i % 3 == 0)
			probe_insert(&p, i);
	}
	return p.found;
}

/* Even positions that start a 4-byte string seen within the window (every position
 * goes into the table, so a repeat of 5 bytes or more is seen at any alignment): the
 * matches deflate's LZ77 could use, halved, up to limit, which is checked every 1 KiB.
 * Looking up every position and checking the limit each time took twice as long
 * (0.62 s against 0.32 s on the bench's 200 MiB of float32 weights); checked every
 * 4 KiB, text and code (which reach the limit in their first KiB) took this test a
 * third of its time longer (0.90 against 0.60% of freeze's CPU on the Python tree). */
static size_t matches(uint16_t *slot, const uint8_t *in, size_t n, size_t limit)
{
	memset(slot, 0, PROBE_SLOTS * sizeof *slot);
	size_t found = 0, i = 0;
	while (i + 5 <= n && found < limit) {
		size_t end = i + 1024 < n - 4 ? i + 1024 : n - 4;
		for (; i < end; i += 2) {
			uint32_t v = load32(in + i);
			found += candidate(slot, in, i, v) != 0;
			slot[hash4(v)] = (uint16_t)i;
			slot[hash4(load32(in + i + 1))] = (uint16_t)(i + 1);
		}
	}
	return found;
}

/* 1 when deflate cannot make the block smaller. The first 4 KiB must look random
 * (most compressible blocks stop there, at 1/30 of the cost of the whole test); then
 * the whole block: a chi-square below n/256 (512 for 128 KiB), i.e. an order-0 entropy
 * above about 7.997 bits per byte, where Huffman coding alone saves well under 0.1%
 * (random bytes pass it from about 96 KiB on: shorter blocks are compressed anyway);
 * and fewer than n/8192 bytes (16 in 128 KiB) of repeats. On the bench trees (13,211
 * blocks of 128 KiB, 4,978 of them incompressible) this skipped 4,825 blocks, none of
 * which deflate would have made smaller (measured with the earlier probe, which looked
 * up every 8th position and tabled all; the sparser one made the same images of the
 * compressed-files tree). */
int gg_deflate_hopeless(uint16_t *probe, const uint8_t *in, size_t n)
{
	/* squashfs blocks are at most 1 MiB; past 16 MiB the sums could overflow */
	if (n < PROBE_MIN || n > PROBE_MAX || !flat_histogram(in, 4096, 1024) ||
	    !flat_histogram(in, n, n / 256))
		return 0;
	return repeats(probe, in, n, n / 8192) < n / 8192;
}

/* 1 when LZ77 has almost nothing to find in the block: fewer than n/1024 of its even
 * positions (128 in 128 KiB) start a 4-byte string seen within the window. Deflate's
 * gain there is Huffman coding alone: level 1 did as well as level 6 in three quarters
 * of the time (0.1% smaller even, on the bench's 200 MiB of float32 weights), Huffman
 * coding without LZ77 (huffman.c) as well as level 1 in an eighth of its time. On the
 * bench trees, 2,343 blocks of 128 KiB are matchless: coded so they are 47 kB smaller in
 * all than at level 1; 104 came out larger, by 256 bytes at most. Text, code and
 * binaries have thousands. */
int gg_deflate_matchless(uint16_t *probe, const uint8_t *in, size_t n, size_t *found)
{
	size_t f = n < PROBE_MIN || n > PROBE_MAX ? n : matches(probe, in, n, n / 1024);
	if (found)
		*found = f;
	return f < n / 1024;
}

static void deflate_get_configuration(const sqfs_compressor_t *cmp, sqfs_compressor_config_t *cfg)
{
	const struct gg_deflate *d = (const struct gg_deflate *)cmp;
	memset(cfg, 0, sizeof *cfg);
	cfg->id = SQFS_COMP_GZIP;
	cfg->block_size = d->block_size;
	/* zlib's scale stops at 9; libdeflate's 10..12 are "9, harder" */
	cfg->level = (sqfs_u32)(d->level > 9 ? 9 : d->level);
	cfg->opt.gzip.window_size = SQFS_GZIP_DEFAULT_WINDOW;
}

/* No options block: readers take the defaults (level and window do not matter to an
 * inflater), exactly as for an image made with zlib at level 9. */
static int deflate_write_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	(void)cmp;
	(void)file;
	return 0;
}

static int deflate_read_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	(void)cmp;
	(void)file;
	return SQFS_ERROR_UNSUPPORTED; /* compress only */
}

static sqfs_s32 deflate_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
				 sqfs_u8 *out, sqfs_u32 outsize)
{
	struct gg_deflate *d = (struct gg_deflate *)cmp;
	if (size >= 0x7FFFFFFF)
		return SQFS_ERROR_ARG_INVALID;
	if (gg_deflate_hopeless(d->probe, in, size))
		return 0; /* stored raw, as deflate's result would have been */
	struct libdeflate_compressor *c = d->c;
	size_t found;
	if (gg_deflate_matchless(d->probe, in, size, &found)) {
		size_t n = gg_huffman_zlib(d->huff, in, size, out, outsize);
		if (n)
			return (sqfs_s32)n;
		if (found < size / FEW_REPEATS)
			return 0;             /* level 1 would not shrink it either */
		c = d->fast ? d->fast : d->c; /* no smaller, or no room: as before */
	}
	size_t n = libdeflate_zlib_compress(c, in, size, out, outsize);
	/* 0: it did not fit; not smaller than the input: store the block raw */
	if (n == 0 || n >= size)
		return 0;
	return (sqfs_s32)n;
}

static void deflate_destroy(sqfs_object_t *obj)
{
	struct gg_deflate *d = (struct gg_deflate *)obj;
	if (d->c)
		libdeflate_free_compressor(d->c);
	if (d->fast)
		libdeflate_free_compressor(d->fast);
	gg_huffman_free(d->huff);
	free(d->probe);
	free(d);
}

static sqfs_object_t *deflate_copy(const sqfs_object_t *obj)
{
	const struct gg_deflate *d = (const struct gg_deflate *)obj;
	return (sqfs_object_t *)gg_sqfs_deflate_new(d->level, d->block_size);
}

struct sqfs_compressor_t *gg_sqfs_deflate_new(int level, uint32_t block_size)
{
	if (level < 1 || level > 12)
		return NULL;
	struct gg_deflate *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->c = libdeflate_alloc_compressor(level);
	d->fast = level > 1 ? libdeflate_alloc_compressor(1) : NULL;
	d->probe = malloc(PROBE_SLOTS * sizeof *d->probe);
	d->huff = gg_huffman_new();
	if (!d->c || (level > 1 && !d->fast) || !d->probe || !d->huff) {
		deflate_destroy(&d->base.base);
		return NULL;
	}
	d->level = level;
	d->block_size = block_size;
	d->base.base.destroy = deflate_destroy;
	d->base.base.copy = deflate_copy;
	d->base.get_configuration = deflate_get_configuration;
	d->base.write_options = deflate_write_options;
	d->base.read_options = deflate_read_options;
	d->base.do_block = deflate_do_block;
	return &d->base;
}

/* ---- inflating: the block processor reads fragment blocks back to compare candidate
 * duplicates byte for byte, which on trees of many small equal files (hundreds of
 * thousands of look-ups) cost as much as compressing, with zlib's inflate; libdeflate's
 * is about three times faster. The block processor keeps only the last block it read
 * back, and the candidates of small equal files are spread over the early ones: the
 * bench's 500k tiny files made 20,000 inflations of 252 different blocks, a second of
 * the feeding thread's time. So the inflater keeps its last MEMO_SLOTS results, keyed
 * by the stored bytes themselves (inflating is a function of them alone). ------------ */

#define MEMO_SLOTS 16 /* at most 2 * 16 * block size (4 MiB at 128 KiB), made when used */

struct memo {
	uint8_t *in, *out; /* a stored block and what it inflated to */
	uint32_t in_len, out_len;
	uint64_t used; /* when last asked for: the least recent one is replaced */
};

struct gg_inflate {
	sqfs_compressor_t base;
	struct libdeflate_decompressor *d;
	uint32_t block_size;
	uint64_t clock, hits;
	struct memo memo[MEMO_SLOTS];
};

static struct memo *memo_find(struct gg_inflate *z, const uint8_t *in, uint32_t size)
{
	for (int k = 0; k < MEMO_SLOTS; k++) {
		struct memo *m = &z->memo[k];
		if (m->in && m->in_len == size && memcmp(m->in, in, size) == 0)
			return m;
	}
	return NULL;
}

/* Remember in -> out in the least recently used slot; best effort. */
static void memo_put(struct gg_inflate *z, const uint8_t *in, uint32_t size, const uint8_t *out,
		     size_t n)
{
	if (size > z->block_size || n > z->block_size)
		return;
	struct memo *m = &z->memo[0];
	for (int k = 1; k < MEMO_SLOTS && m->in; k++)
		if (!z->memo[k].in || z->memo[k].used < m->used)
			m = &z->memo[k];
	if (!m->in) {
		m->in = malloc(z->block_size);
		m->out = malloc(z->block_size);
		if (!m->in || !m->out) {
			free(m->in);
			free(m->out);
			m->in = m->out = NULL;
			return;
		}
	}
	memcpy(m->in, in, size);
	memcpy(m->out, out, n);
	m->in_len = size;
	m->out_len = (uint32_t)n;
	m->used = ++z->clock;
}

uint64_t gg_sqfs_inflate_memo_hits(const struct sqfs_compressor_t *cmp)
{
	return ((const struct gg_inflate *)cmp)->hits;
}

static void inflate_get_configuration(const sqfs_compressor_t *cmp, sqfs_compressor_config_t *cfg)
{
	const struct gg_inflate *z = (const struct gg_inflate *)cmp;
	memset(cfg, 0, sizeof *cfg);
	cfg->id = SQFS_COMP_GZIP;
	cfg->flags = SQFS_COMP_FLAG_UNCOMPRESS;
	cfg->block_size = z->block_size;
	cfg->level = SQFS_GZIP_DEFAULT_LEVEL;
	cfg->opt.gzip.window_size = SQFS_GZIP_DEFAULT_WINDOW;
}

static sqfs_s32 inflate_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
				 sqfs_u8 *out, sqfs_u32 outsize)
{
	struct gg_inflate *z = (struct gg_inflate *)cmp;
	size_t n = 0;
	if (size >= 0x7FFFFFFF || outsize >= 0x7FFFFFFF)
		return SQFS_ERROR_ARG_INVALID;
	struct memo *m = memo_find(z, in, size);
	if (m) {
		if (m->out_len > outsize)
			return SQFS_ERROR_OVERFLOW;
		memcpy(out, m->out, m->out_len);
		m->used = ++z->clock;
		z->hits++;
		return (sqfs_s32)m->out_len;
	}
	switch (libdeflate_zlib_decompress(z->d, in, size, out, outsize, &n)) {
	case LIBDEFLATE_SUCCESS: memo_put(z, in, size, out, n); return (sqfs_s32)n;
	case LIBDEFLATE_INSUFFICIENT_SPACE: return SQFS_ERROR_OVERFLOW;
	default: return SQFS_ERROR_COMPRESSOR;
	}
}

static void inflate_destroy(sqfs_object_t *obj)
{
	struct gg_inflate *z = (struct gg_inflate *)obj;
	if (z->d)
		libdeflate_free_decompressor(z->d);
	for (int k = 0; k < MEMO_SLOTS; k++) {
		free(z->memo[k].in);
		free(z->memo[k].out);
	}
	free(z);
}

static sqfs_object_t *inflate_copy(const sqfs_object_t *obj)
{
	return (sqfs_object_t *)gg_sqfs_inflate_new(((const struct gg_inflate *)obj)->block_size);
}

struct sqfs_compressor_t *gg_sqfs_inflate_new(uint32_t block_size)
{
	struct gg_inflate *z = calloc(1, sizeof *z);
	if (!z || !(z->d = libdeflate_alloc_decompressor())) {
		free(z);
		return NULL;
	}
	z->block_size = block_size;
	z->base.base.destroy = inflate_destroy;
	z->base.base.copy = inflate_copy;
	z->base.get_configuration = inflate_get_configuration;
	z->base.write_options = deflate_write_options;
	z->base.read_options = deflate_read_options;
	z->base.do_block = inflate_do_block;
	return &z->base;
}
