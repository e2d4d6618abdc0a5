/* Fragment blocks packed on the feeding thread: the data of files smaller than a block,
 * and the last, partial block of the others (their tails), go one after another into a
 * block of their own, which is queued for compression like any file's block once full.
 *
 * libsquashfs packs tails too, but hands each one to its worker threads first (to hash
 * it) and takes it back in order: on the Python environment (39,398 files under a
 * block) that was 89,000 futex calls and most of its 36,000 context switches for a few
 * bytes of work each, and freeze 3% slower than with the tails never leaving this
 * thread. Here a tail costs a CRC-32 and a copy.
 *
 * A tail equal to an earlier one is stored once, as libsquashfs does. Equal means
 * byte for byte: the CRC-32 and the size only find candidates, each checked against
 * the earlier tail's bytes: from the block being filled, from a block queued and not
 * yet written (kept as it was), or from one of the PACK_CACHE blocks used last; else
 * read back from the image and decompressed.
 *
 * The blocks are numbered in the order they are opened, which is the order the tails
 * come in: the fragment table and the image are the same however the threads ran. */
#include "image/internal.h"

#include <libdeflate.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/inode.h>
#include <stdlib.h>
#include <string.h>

#define PACK_CACHE 8 /* written blocks kept besides those not yet written: 1 MiB */

struct seen {
	uint32_t crc, len; /* len 0: a free slot */
	uint32_t index, offset;
};

struct cached {
	uint32_t index; /* UINT32_MAX: empty */
	uint32_t len;
	uint64_t used; /* for the least recently used */
	unsigned char *data;
};

struct gg_pack {
	uint32_t block_size;
	struct gg_pack_io io;
	unsigned char *buf; /* the block being filled */
	uint32_t fill;
	uint32_t nblocks;               /* queued; the one being filled is number nblocks */
	sqfs_inode_generic_t ***holder; /* per block queued: where its inode goes */
	uint32_t holdcap;
	struct seen *seen;
	size_t nseen, seencap; /* seencap a power of 2, at most half full */
	struct cached *cache;  /* the blocks queued and not yet written, and others */
	size_t ncache;
	uint64_t clock;
	unsigned char *scratch; /* a block read back, compressed */
};

struct gg_pack *gg_pack_new(uint32_t block_size, const struct gg_pack_io *io)
{
	struct gg_pack *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->block_size = block_size;
	p->io = *io;
	p->buf = malloc(block_size);
	p->scratch = malloc(block_size);
	p->seencap = 1024;
	p->seen = calloc(p->seencap, sizeof *p->seen);
	if (!p->buf || !p->scratch || !p->seen) {
		gg_pack_free(p);
		return NULL;
	}
	return p;
}

void gg_pack_free(struct gg_pack *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nblocks; i++) {
		if (p->holder[i])
			free(*p->holder[i]);
		free(p->holder[i]);
	}
	free(p->holder);
	for (size_t i = 0; i < p->ncache; i++)
		free(p->cache[i].data);
	free(p->cache);
	free(p->seen);
	free(p->scratch);
	free(p->buf);
	free(p);
}

/* Block index is in the image: its inode has its size. */
static int written(const struct gg_pack *p, uint32_t index)
{
	const sqfs_inode_generic_t *in = *p->holder[index];
	return in && in->payload_bytes_used >= sizeof(sqfs_u32);
}

/* A new, empty cache slot; NULL when out of memory. */
static struct cached *add_slot(struct gg_pack *p)
{
	unsigned char *data = malloc(p->block_size);
	struct cached *nc = data ? realloc(p->cache, (p->ncache + 1) * sizeof *nc) : NULL;
	if (!nc) {
		free(data);
		return NULL;
	}
	p->cache = nc;
	nc[p->ncache] = (struct cached){UINT32_MAX, 0, 0, data};
	return &nc[p->ncache++];
}

/* The cache slot to reuse: an empty one, else the least recently used of those holding
 * a written block, as long as PACK_CACHE of them are there; else a new one. A block not
 * yet written is never dropped: reading it back would mean waiting for it (and for
 * every block before it). NULL when out of memory. */
static struct cached *victim(struct gg_pack *p)
{
	struct cached *v = NULL;
	size_t nwritten = 0;
	for (size_t i = 0; i < p->ncache; i++) {
		struct cached *c = &p->cache[i];
		if (c->index == UINT32_MAX)
			return c;
		if (!written(p, c->index))
			continue;
		nwritten++;
		if (!v || c->used < v->used)
			v = c;
	}
	return v && nwritten >= PACK_CACHE ? v : add_slot(p);
}

/* Queue the block being filled. Its buffer goes into the cache as it is; the buffer of
 * the slot it takes is the next block's. */
static int queue_block(struct gg_pack *p)
{
	if (p->nblocks == p->holdcap) {
		uint32_t ncap = p->holdcap ? p->holdcap * 2 : 256;
		sqfs_inode_generic_t ***nh = realloc(p->holder, ncap * sizeof *nh);
		if (!nh)
			return SQFS_ERROR_ALLOC;
		p->holder = nh;
		p->holdcap = ncap;
	}
	struct cached *c = victim(p);
	sqfs_inode_generic_t **h = c ? calloc(1, sizeof *h) : NULL;
	if (!h)
		return SQFS_ERROR_ALLOC;
	/* the block processor may hold h even when this fails: freed with the rest */
	p->holder[p->nblocks++] = h;
	int rc = p->io.submit(p->io.ud, p->buf, p->fill, h);
	if (rc)
		return rc;
	unsigned char *spare = c->data;
	*c = (struct cached){p->nblocks - 1, p->fill, ++p->clock, p->buf};
	p->buf = spare;
	p->fill = 0;
	return 0;
}

/* Block index, read back from the image into a cache slot. */
static int read_back(struct gg_pack *p, uint32_t index, struct cached **out)
{
	if (!written(p, index)) /* never: a block not yet written is kept (victim) */
		return SQFS_ERROR_INTERNAL;
	int rc;
	const sqfs_inode_generic_t *in = *p->holder[index];
	sqfs_u64 start;
	sqfs_inode_get_file_block_start(in, &start);
	uint32_t word = in->extra[0], size = word & ((1u << 24) - 1);
	if (size == 0 || size > p->block_size)
		return SQFS_ERROR_CORRUPTED;
	struct cached *c = victim(p);
	if (!c)
		return SQFS_ERROR_ALLOC;
	c->index = UINT32_MAX;
	if (word & (1u << 24)) { /* stored as it was */
		if ((rc = p->io.read(p->io.ud, start, c->data, size)))
			return rc;
		c->len = size;
	} else {
		if ((rc = p->io.read(p->io.ud, start, p->scratch, size)))
			return rc;
		sqfs_s32 n = p->io.uncmp->do_block(p->io.uncmp, p->scratch, size, c->data,
						   p->block_size);
		if (n <= 0)
			return n < 0 ? n : SQFS_ERROR_CORRUPTED;
		c->len = (uint32_t)n;
	}
	c->index = index;
	c->used = ++p->clock;
	*out = c;
	return 0;
}

/* The bytes of block index, len of them (0: never filled so far). */
static int block_bytes(struct gg_pack *p, uint32_t index, const unsigned char **data, uint32_t *len)
{
	if (index == p->nblocks) {
		*data = p->buf;
		*len = p->fill;
		return 0;
	}
	for (size_t i = 0; i < p->ncache; i++) {
		struct cached *c = &p->cache[i];
		if (c->index == index) {
			c->used = ++p->clock;
			*data = c->data;
			*len = c->len;
			return 0;
		}
	}
	struct cached *c;
	int rc = read_back(p, index, &c);
	if (rc)
		return rc;
	*data = c->data;
	*len = c->len;
	return 0;
}

static int grow_seen(struct gg_pack *p)
{
	size_t ncap = p->seencap * 2;
	struct seen *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return SQFS_ERROR_ALLOC;
	for (size_t i = 0; i < p->seencap; i++) {
		struct seen *s = &p->seen[i];
		if (!s->len)
			continue;
		size_t k = s->crc & (ncap - 1);
		while (ns[k].len)
			k = (k + 1) & (ncap - 1);
		ns[k] = *s;
	}
	free(p->seen);
	p->seen = ns;
	p->seencap = ncap;
	return 0;
}

/* An earlier tail equal to data[0..n): its slot, or the free slot to note it in. */
static int find_seen(struct gg_pack *p, const void *data, uint32_t n, uint32_t crc,
		     struct seen **slot)
{
	size_t k = crc & (p->seencap - 1);
	for (;; k = (k + 1) & (p->seencap - 1)) {
		struct seen *s = &p->seen[k];
		*slot = s;
		if (!s->len)
			return 0;
		if (s->crc != crc || s->len != n)
			continue;
		const unsigned char *b;
		uint32_t blen;
		int rc = block_bytes(p, s->index, &b, &blen);
		if (rc)
			return rc;
		if (s->offset <= blen && n <= blen - s->offset && !memcmp(b + s->offset, data, n))
			return 0;
	}
}

int gg_pack_add(struct gg_pack *p, const void *data, uint32_t n, sqfs_u32 *index, sqfs_u32 *offset)
{
	if (n == 0 || n >= p->block_size)
		return SQFS_ERROR_ARG_INVALID;
	if ((p->nseen + 1) * 2 > p->seencap && grow_seen(p))
		return SQFS_ERROR_ALLOC;
	uint32_t crc = libdeflate_crc32(0, data, n);
	struct seen *s;
	int rc = find_seen(p, data, n, crc, &s);
	if (rc)
		return rc;
	if (s->len) {
		*index = s->index;
		*offset = s->offset;
		return 0;
	}
	if (p->fill + n > p->block_size && (rc = queue_block(p)))
		return rc;
	memcpy(p->buf + p->fill, data, n);
	*s = (struct seen){crc, n, p->nblocks, p->fill};
	p->nseen++;
	*index = p->nblocks;
	*offset = p->fill;
	p->fill += n;
	return 0;
}

int gg_pack_flush(struct gg_pack *p)
{
	return p->fill ? queue_block(p) : 0;
}

int gg_pack_table(struct gg_pack *p, sqfs_frag_table_t *tbl)
{
	if (p->fill)
		return SQFS_ERROR_SEQUENCE;
	for (uint32_t i = 0; i < p->nblocks; i++) {
		const sqfs_inode_generic_t *in = *p->holder[i];
		if (!in || in->payload_bytes_used < sizeof(sqfs_u32))
			return SQFS_ERROR_SEQUENCE;
		sqfs_u64 start;
		sqfs_inode_get_file_block_start(in, &start);
		sqfs_u32 at;
		int rc = sqfs_frag_table_append(tbl, start, in->extra[0], &at);
		if (rc)
			return rc;
		if (at != i)
			return SQFS_ERROR_INTERNAL;
	}
	return 0;
}
