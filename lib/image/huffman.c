/* Deflate without LZ77: a zlib stream of dynamic-Huffman blocks holding literals only.
 *
 * For blocks where LZ77 finds nothing (float32 weights, packed numeric data:
 * gg_deflate_matchless), deflate's whole gain is the Huffman coding of the bytes, and
 * the libraries spend their time looking for matches that are not there: libdeflate at
 * level 1 takes 1.6 s of CPU for the bench's 200 MiB of weights, zlib's Z_HUFFMAN_ONLY
 * as long (its symbol buffer and 16-bit bit writer), ISA-L's igzip is fast but writes
 * different streams on different CPUs. This coder counts the bytes, makes a code and
 * writes them: 0.22 s for the same 200 MiB (bench-freeze, 2026-11-29), and 47 kB smaller
 * than level 1, because it chooses to code the block as 1, 2 or 4 deflate blocks by
 * their exact sizes.
 *
 * The output is a function of the input bytes alone (integer arithmetic, ties broken by
 * symbol), so images stay reproducible on every machine. The format is RFC 1950/1951:
 * every inflater reads it (the tests inflate it with libdeflate and zlib). */
#include "image/image.h"

#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#define LITLEN  257 /* the literal/length alphabet used: 256 bytes and end-of-block */
#define EOB     256
#define MAXBITS 15         /* longest literal/length code */
#define CLCODES 19         /* the code-length alphabet */
#define CLBITS  7          /* its longest code */
#define PARTS   4          /* a block is coded whole, in halves or in quarters */
#define MAX_IN  (4u << 20) /* a count and a symbol share 32 bits: see build_lengths */

struct header {
	uint8_t sym[LITLEN + 2], extra[LITLEN + 2]; /* the code lengths, run-length coded */
	int nsym, hclen;
	uint8_t cl_len[CLCODES];
	uint16_t cl_bits[CLCODES];
	uint64_t nbits; /* the header's size in bits */
};

/* one way of coding a stretch of input as one deflate block */
struct part {
	uint32_t freq[LITLEN];
	uint8_t len[LITLEN];
	uint16_t bits[LITLEN];
	struct header h;
	uint64_t nbits; /* the whole block's size in bits */
};

struct gg_huffman {
	struct part part[2 * PARTS - 1]; /* whole, two halves, four quarters */
};

struct gg_huffman *gg_huffman_new(void)
{
	return malloc(sizeof(struct gg_huffman));
}

void gg_huffman_free(struct gg_huffman *h)
{
	free(h);
}

/* ---- codes ---------------------------------------------------------------------- */

/* a[0..n) in ascending order (n <= LITLEN), where a[] comes in ascending order of its
 * low 9 bits (the symbols) and no two keys are equal: a stable radix sort of the counts
 * above them, 8 bits a pass, as many passes as the largest count has bytes. A merge
 * sort's compares, taken either way at random, were mispredicted so often that making
 * the code lengths (seven parts and their headers a block) took as long as the coding:
 * 0.15 of the 1.3 CPU s freezing 200 MiB of float weights. */
static void sort_keys(uint32_t *a, int n)
{
	uint32_t tmp[LITLEN], *src = a, *dst = tmp, max = 0;
	for (int i = 0; i < n; i++)
		max |= a[i];
	for (int shift = 9; shift < 32 && max >> shift; shift += 8) {
		uint32_t at[256] = {0}, sum = 0;
		for (int i = 0; i < n; i++)
			at[src[i] >> shift & 255]++;
		for (int d = 0; d < 256; d++) {
			uint32_t c = at[d];
			at[d] = sum;
			sum += c;
		}
		for (int i = 0; i < n; i++)
			dst[at[src[i] >> shift & 255]++] = src[i];
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, (size_t)n * sizeof *a);
}

/* The depths of the leaves of a Huffman tree over the m > 1 counts in key[] (count << 9
 * | symbol, ascending), into depth[0..m); the deepest. Two queues: the leaves in order
 * and the inner nodes in the order they are made, which is also ascending. */
static int tree_depths(const uint32_t *key, int m, int *depth)
{
	uint32_t inner[LITLEN];
	int parent[2 * LITLEN]; /* leaves 0..m-1, inner nodes from m on */
	int li = 0, ii = 0, ni = 0;
	for (; ni < m - 1; ni++) {
		uint32_t f = 0;
		for (int j = 0; j < 2; j++) {
			if (li < m && (ii >= ni || key[li] >> 9 <= inner[ii])) {
				f += key[li] >> 9;
				parent[li++] = m + ni;
			} else {
				f += inner[ii];
				parent[m + ii++] = m + ni;
			}
		}
		inner[ni] = f;
	}
	/* a parent comes after its children: walk down from the root */
	int d[2 * LITLEN], deepest = 0;
	d[m + ni - 1] = 0;
	for (int k = m + ni - 2; k >= 0; k--) {
		d[k] = d[parent[k]] + 1;
		if (d[k] > deepest)
			deepest = d[k];
	}
	memcpy(depth, d, (size_t)m * sizeof *depth);
	return deepest;
}

/* Huffman code lengths for counts[0..n) (n <= LITLEN), none longer than maxbits: when
 * the optimal code is deeper, the counts are halved (rounding up) and it is made again.
 * At least two symbols get a code, so the code is complete, as inflaters want. A count
 * (below 2^23: MAX_IN) and its symbol make one 32-bit key, sorted by count, then symbol,
 * which makes the code a function of the counts alone. */
static void build_lengths(const uint32_t *counts, int n, int maxbits, uint8_t *len)
{
	uint32_t freq[LITLEN], key[LITLEN];
	int depth[LITLEN], used = 0;
	memcpy(freq, counts, (size_t)n * sizeof *freq);
	for (int s = 0; s < n; s++)
		used += freq[s] != 0;
	for (int s = 0; s < n && used < 2; s++)
		if (!freq[s])
			freq[s] = 1, used++;
	for (;;) {
		int m = 0;
		for (int s = 0; s < n; s++)
			if (freq[s])
				key[m++] = freq[s] << 9 | (uint32_t)s;
		sort_keys(key, m);
		if (tree_depths(key, m, depth) <= maxbits) {
			memset(len, 0, (size_t)n);
			for (int k = 0; k < m; k++)
				len[key[k] & 511] = (uint8_t)depth[k];
			return;
		}
		for (int s = 0; s < n; s++)
			freq[s] = (freq[s] + 1) / 2;
	}
}

/* The canonical codes of RFC 1951 3.2.2, bit-reversed: deflate packs bits from the
 * least significant end but sends a code from its first bit. */
static void build_codes(const uint8_t *len, int n, uint16_t *bits)
{
	uint16_t count[MAXBITS + 1] = {0}, next[MAXBITS + 2];
	for (int s = 0; s < n; s++)
		count[len[s]]++;
	count[0] = 0;
	next[1] = 0;
	for (int b = 1; b <= MAXBITS; b++)
		next[b + 1] = (uint16_t)((next[b] + count[b]) << 1);
	for (int s = 0; s < n; s++) {
		uint32_t c = len[s] ? next[len[s]]++ : 0; /* then reversed, without a loop */
		c = (c >> 1 & 0x5555) | (c & 0x5555) << 1;
		c = (c >> 2 & 0x3333) | (c & 0x3333) << 2;
		c = (c >> 4 & 0x0F0F) | (c & 0x0F0F) << 4;
		c = (c >> 8 & 0x00FF) | (c & 0x00FF) << 8;
		bits[s] = (uint16_t)(c >> (16 - len[s]));
	}
}

/* ---- the block header (RFC 1951 3.2.7) ------------------------------------------ */

static const uint8_t cl_order[CLCODES] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
					  11, 4,  12, 3, 13, 2, 14, 1, 15};
static const uint8_t cl_extra[CLCODES] = {[16] = 2, [17] = 3, [18] = 7};

static void emit(struct header *h, int sym, int extra)
{
	h->sym[h->nsym] = (uint8_t)sym;
	h->extra[h->nsym++] = (uint8_t)extra;
}

/* len[0..n) as code-length symbols: 16 repeats the last length 3-6 times, 17 and 18
 * give 3-10 and 11-138 zeros */
static void run_lengths(struct header *h, const uint8_t *len, int n)
{
	for (int i = 0; i < n;) {
		int v = len[i], r = 1;
		while (i + r < n && len[i + r] == v)
			r++;
		i += r;
		if (v == 0) {
			for (; r >= 11; r -= r > 138 ? 138 : r)
				emit(h, 18, (r > 138 ? 138 : r) - 11);
			if (r >= 3)
				emit(h, 17, r - 3), r = 0;
		} else {
			emit(h, v, 0);
			for (r--; r >= 3; r -= r > 6 ? 6 : r)
				emit(h, 16, (r > 6 ? 6 : r) - 3);
		}
		for (; r > 0; r--)
			emit(h, v, 0);
	}
}

/* The header of a block with the literal/length code len[] and two distance codes of
 * one bit (none is used; a complete code, as every inflater accepts). */
static void make_header(struct header *h, const uint8_t *len)
{
	static const uint8_t dist[2] = {1, 1};
	uint32_t f[CLCODES] = {0};
	h->nsym = 0;
	run_lengths(h, len, LITLEN);
	run_lengths(h, dist, 2);
	for (int i = 0; i < h->nsym; i++)
		f[h->sym[i]]++;
	build_lengths(f, CLCODES, CLBITS, h->cl_len);
	build_codes(h->cl_len, CLCODES, h->cl_bits);
	for (h->hclen = CLCODES; h->hclen > 4 && !h->cl_len[cl_order[h->hclen - 1]];)
		h->hclen--;
	h->nbits = 3 + 5 + 5 + 4 + 3 * (uint64_t)h->hclen;
	for (int i = 0; i < h->nsym; i++)
		h->nbits += h->cl_len[h->sym[i]] + cl_extra[h->sym[i]];
}

/* ---- writing ---------------------------------------------------------------------- */

struct bitout {
	uint8_t *p;
	uint64_t buf;
	unsigned cnt; /* bits in buf: at most 7 after a flush */
};

static inline void put(struct bitout *o, uint32_t v, unsigned n)
{
	o->buf |= (uint64_t)v << o->cnt;
	o->cnt += n;
}

/* Stores all 8 bytes of buf (the caller leaves room) and moves on by the whole ones. */
static inline void flush(struct bitout *o)
{
	uint64_t le = o->buf;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	le = __builtin_bswap64(le);
#endif
	memcpy(o->p, &le, sizeof le);
	o->p += o->cnt >> 3;
	o->buf >>= o->cnt & ~7u;
	o->cnt &= 7;
}

static void put_header(struct bitout *o, const struct header *h, int last)
{
	put(o, (uint32_t)last | 2u << 1, 3); /* BFINAL, BTYPE 2: dynamic Huffman codes */
	put(o, LITLEN - 257, 5);
	put(o, 2 - 1, 5);
	put(o, (uint32_t)h->hclen - 4, 4);
	flush(o);
	for (int i = 0; i < h->hclen; i++) {
		put(o, h->cl_len[cl_order[i]], 3);
		flush(o);
	}
	for (int i = 0; i < h->nsym; i++) {
		put(o, h->cl_bits[h->sym[i]], h->cl_len[h->sym[i]]);
		put(o, h->extra[i], cl_extra[h->sym[i]]);
		flush(o);
	}
}

static void put_block(struct bitout *o, const struct part *p, int last, const uint8_t *in, size_t n)
{
	put_header(o, &p->h, last);
	size_t i = 0;
	for (; i + 3 <= n; i += 3) { /* 7 + 3 * 15 bits fit in 64 */
		put(o, p->bits[in[i]], p->len[in[i]]);
		put(o, p->bits[in[i + 1]], p->len[in[i + 1]]);
		put(o, p->bits[in[i + 2]], p->len[in[i + 2]]);
		flush(o);
	}
	for (; i < n; i++) {
		put(o, p->bits[in[i]], p->len[in[i]]);
		flush(o);
	}
	put(o, p->bits[EOB], p->len[EOB]);
	flush(o);
}

/* ---- choosing ----------------------------------------------------------------------- */

void gg_byte_histogram(const uint8_t *in, size_t n, uint32_t freq[256])
{
	uint32_t h[4][256] = {{0}}; /* four tables: runs of one byte do not stall */
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		h[0][in[i]]++;
		h[1][in[i + 1]]++;
		h[2][in[i + 2]]++;
		h[3][in[i + 3]]++;
	}
	for (; i < n; i++)
		h[0][in[i]]++;
	for (int b = 0; b < 256; b++)
		freq[b] = h[0][b] + h[1][b] + h[2][b] + h[3][b];
}

static void plan(struct part *p)
{
	p->freq[EOB] = 1;
	build_lengths(p->freq, LITLEN, MAXBITS, p->len);
	build_codes(p->len, LITLEN, p->bits);
	make_header(&p->h, p->len);
	p->nbits = p->h.nbits;
	for (int s = 0; s < LITLEN; s++)
		p->nbits += (uint64_t)p->freq[s] * p->len[s];
}

/* Plans every way; how many blocks the smallest uses (1, 2 or 4) and its size in bits. */
static int choose(struct gg_huffman *h, const uint8_t *in, const size_t *q, uint64_t *bits)
{
	struct part *p = h->part;
	for (int k = 0; k < PARTS; k++)
		gg_byte_histogram(in + q[k], q[k + 1] - q[k], p[3 + k].freq);
	for (int s = 0; s < 256; s++) {
		p[1].freq[s] = p[3].freq[s] + p[4].freq[s];
		p[2].freq[s] = p[5].freq[s] + p[6].freq[s];
		p[0].freq[s] = p[1].freq[s] + p[2].freq[s];
	}
	for (int k = 0; k < 2 * PARTS - 1; k++)
		plan(&p[k]);
	uint64_t size[3] = {p[0].nbits, p[1].nbits + p[2].nbits,
			    p[3].nbits + p[4].nbits + p[5].nbits + p[6].nbits};
	int best = 0;
	for (int k = 1; k < 3; k++)
		if (size[k] < size[best])
			best = k;
	*bits = size[best];
	return 1 << best;
}

size_t gg_huffman_zlib(struct gg_huffman *h, const uint8_t *in, size_t n, uint8_t *out,
		       size_t outsize)
{
	if (n > MAX_IN)
		return 0;
	size_t q[PARTS + 1];
	for (int k = 0; k <= PARTS; k++)
		q[k] = n * (size_t)k / PARTS;
	uint64_t bits;
	int count = choose(h, in, q, &bits);
	size_t total = 2 + (size_t)((bits + 7) / 8) + 4;
	if (total >= n || outsize < 8 || total > outsize - 8) /* flush stores 8 bytes */
		return 0;
	struct bitout o = {out + 2, 0, 0};
	/* the zlib header: deflate with a 32 KiB window, "fastest", and its check bits */
	out[0] = 0x78;
	out[1] = 0x01;
	/* the plans of 1, 2 and 4 blocks start at 0, 1 and 3 */
	const struct part *p = &h->part[count - 1];
	for (int k = 0; k < count; k++) {
		size_t a = q[k * (PARTS / count)], b = q[(k + 1) * (PARTS / count)];
		put_block(&o, &p[k], k == count - 1, in + a, b - a);
	}
	o.p += o.cnt != 0;
	uint32_t adler = libdeflate_adler32(1, in, n);
	for (int k = 0; k < 4; k++)
		*o.p++ = (uint8_t)(adler >> (24 - 8 * k));
	return (size_t)(o.p - out);
}
