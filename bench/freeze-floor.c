/* bench/freeze-floor IMAGE.sif [LEVEL]: the compression floor of a frozen image. Every
 * data block and fragment block of its squashfs is read back, inflated when stored
 * compressed, and deflated again with libdeflate at LEVEL (default 6), timed on one
 * thread (CPU time). Prints one line:
 *   blocks N raw R deflate_all S1 deflate_needed S2 probe S3 codec S4
 * S1: seconds of deflate over every block (what compressing them all costs);
 * S2: over the blocks the image stores compressed only (the work a compressor that
 * recognises incompressible blocks for free must still do); S3: gridgpu's test for
 * incompressible blocks over every block; S4: gridgpu's own compressor at LEVEL over
 * every block, its tests included (hopeless blocks are only tested, matchless ones
 * Huffman coded: lib/image/deflate.c), the pure compression time of freeze's blocks.
 * Then, over the blocks freeze finds matchless, side by side: gridgpu's Huffman coder,
 * libdeflate at level 1 (what freeze used before it) and zlib's Z_HUFFMAN_ONLY:
 *   matchless M huffman S5 Z5 level1 S6 Z6 zlib_huffman S7 Z7   (seconds, bytes)
 * Metadata blocks (a few MB) are left out.
 * A bench helper (bench-freeze.sh builds it), not part of gridgpu. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libdeflate.h>
#include <zlib.h>
#include <sqfs/compressor.h>
#include <sqfs/frag_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_reader.h>
#include <sqfs/super.h>
#include <sqfs/block.h>

#include "image/image.h" /* gridgpu's compressor, its tests and the Huffman coder */

struct at_file {
	sqfs_file_t base;
	int fd;
	sqfs_u64 off, size;
};

struct floor {
	struct at_file f;
	struct libdeflate_compressor *c;
	struct libdeflate_decompressor *d;
	sqfs_compressor_t *ours;
	struct gg_huffman *huff;
	struct libdeflate_compressor *l1;
	z_stream z;
	unsigned long matchless;
	double coder_s[3];
	unsigned long long coder_b[3];
	unsigned char *disk, *plain, *out;
	uint16_t *probe;
	unsigned long blocks, raw;
	double all, needed, probe_s, ours_s;
	sqfs_u64 *seen;
};

static int f_read_at(sqfs_file_t *b, sqfs_u64 o, void *buf, size_t n)
{
	struct at_file *f = (struct at_file *)b;
	return pread(f->fd, buf, n, (off_t)(f->off + o)) == (ssize_t)n ? 0 : -1;
}

static sqfs_u64 f_get_size(const sqfs_file_t *b)
{
	return ((const struct at_file *)b)->size;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A matchless block coded three ways; each size counts the block raw when not smaller. */
static void coders(struct floor *fl, const unsigned char *p, size_t n)
{
	size_t got[3];
	double t0 = cpu_now();
	got[0] = gg_huffman_zlib(fl->huff, p, n, fl->out, 1 << 20);
	double t1 = cpu_now();
	got[1] = libdeflate_zlib_compress(fl->l1, p, n, fl->out, 1 << 20);
	double t2 = cpu_now();
	deflateReset(&fl->z);
	fl->z.next_in = (unsigned char *)p;
	fl->z.avail_in = (uInt)n;
	fl->z.next_out = fl->out;
	fl->z.avail_out = 1 << 20;
	got[2] = deflate(&fl->z, Z_FINISH) == Z_STREAM_END ? fl->z.total_out : 0;
	double t3 = cpu_now();
	double t[3] = {t1 - t0, t2 - t1, t3 - t2};
	for (int k = 0; k < 3; k++) {
		fl->coder_s[k] += t[k];
		fl->coder_b[k] += got[k] && got[k] < n ? got[k] : n;
	}
	fl->matchless++;
}

/* One block as stored: size field of an inode or the fragment table. */
static int block(struct floor *fl, sqfs_u64 at, sqfs_u32 field)
{
	size_t n = field & ((1u << 24) - 1), plain = n;
	int stored_raw = (field & (1u << 24)) != 0;
	if (n == 0)
		return 0; /* sparse */
	if (fl->f.base.read_at(&fl->f.base, at, fl->disk, n))
		return -1;
	const unsigned char *p = fl->disk;
	if (!stored_raw) {
		if (libdeflate_zlib_decompress(fl->d, fl->disk, n, fl->plain, 1 << 20, &plain))
			return -1;
		p = fl->plain;
	}
	double t0 = cpu_now();
	int hopeless = gg_deflate_hopeless(fl->probe, p, plain);
	double t1 = cpu_now();
	libdeflate_zlib_compress(fl->c, p, plain, fl->out, 1 << 20);
	double t2 = cpu_now();
	fl->ours->do_block(fl->ours, p, (sqfs_u32)plain, fl->out, (sqfs_u32)plain);
	fl->ours_s += cpu_now() - t2;
	if (!hopeless && gg_deflate_matchless(fl->probe, p, plain, NULL))
		coders(fl, p, plain);
	fl->blocks++;
	fl->raw += stored_raw;
	fl->probe_s += t1 - t0;
	fl->all += t2 - t1;
	if (!stored_raw)
		fl->needed += t2 - t1;
	return 0;
}

/* Deduplicated files share their blocks: count each run of blocks once. */
#define SEEN_SLOTS (1u << 21)
static int seen(struct floor *fl, sqfs_u64 start)
{
	if (!fl->seen && !(fl->seen = calloc(SEEN_SLOTS, sizeof *fl->seen)))
		return 0;
	size_t h = (size_t)((start * 0x9E3779B97F4A7C15ull) >> 43);
	while (fl->seen[h] && fl->seen[h] != start + 1)
		h = (h + 1) & (SEEN_SLOTS - 1);
	if (fl->seen[h])
		return 1;
	fl->seen[h] = start + 1;
	return 0;
}

static int file_blocks(struct floor *fl, const sqfs_inode_generic_t *in)
{
	sqfs_u64 at;
	size_t nb = in->payload_bytes_used / sizeof(sqfs_u32);
	if (!nb || sqfs_inode_get_file_block_start(in, &at) || seen(fl, at))
		return 0;
	for (size_t i = 0; i < nb; i++) {
		sqfs_u32 field = in->extra[i];
		if (block(fl, at, field))
			return -1;
		at += field & ((1u << 24) - 1);
	}
	return 0;
}

static int inodes(struct floor *fl, const sqfs_super_t *sb, sqfs_compressor_t *cmp)
{
	sqfs_meta_reader_t *mr =
		sqfs_meta_reader_create(&fl->f.base, cmp, sb->inode_table_start, sb->bytes_used);
	sqfs_u64 blk = 0;
	size_t off = 0;
	for (sqfs_u32 k = 0; mr && k < sb->inode_count; k++) {
		sqfs_inode_generic_t *in;
		if (sqfs_meta_reader_read_inode(mr, sb, blk, off, &in))
			return -1;
		sqfs_meta_reader_get_position(mr, &blk, &off);
		blk -= sb->inode_table_start;
		int t = in->base.type, rc = 0;
		if (t == SQFS_INODE_FILE || t == SQFS_INODE_EXT_FILE)
			rc = file_blocks(fl, in);
		sqfs_free(in);
		if (rc)
			return -1;
	}
	return mr ? 0 : -1;
}

static int fragments(struct floor *fl, const sqfs_super_t *sb, sqfs_compressor_t *cmp)
{
	sqfs_frag_table_t *ft = sqfs_frag_table_create(0);
	if (!ft || sqfs_frag_table_read(ft, &fl->f.base, sb, cmp))
		return -1;
	for (size_t i = 0; i < sqfs_frag_table_get_size(ft); i++) {
		sqfs_fragment_t fr;
		if (sqfs_frag_table_lookup(ft, (sqfs_u32)i, &fr) ||
		    block(fl, fr.start_offset, fr.size))
			return -1;
	}
	return 0;
}

/* The squashfs inside the SIF: the first "hsqs" at a 4 KiB boundary. */
static int find_squashfs(struct floor *fl)
{
	char m[4];
	for (off_t o = 0; pread(fl->f.fd, m, 4, o) == 4; o += 4096)
		if (!memcmp(m, "hsqs", 4)) {
			fl->f.off = (sqfs_u64)o;
			fl->f.size = (sqfs_u64)lseek(fl->f.fd, 0, SEEK_END) - fl->f.off;
			return 0;
		}
	return -1;
}

int main(int argc, char **argv)
{
	static struct floor fl;
	if (argc < 2 || (fl.f.fd = open(argv[1], O_RDONLY)) < 0 || find_squashfs(&fl)) {
		fprintf(stderr, "usage: freeze-floor IMAGE.sif [LEVEL] (a SIF with a squashfs)\n");
		return 2;
	}
	fl.f.base.read_at = f_read_at;
	fl.f.base.get_size = f_get_size;
	int level = argc > 2 ? atoi(argv[2]) : 6;
	fl.c = libdeflate_alloc_compressor(level);
	fl.d = libdeflate_alloc_decompressor();
	fl.disk = malloc(1 << 20);
	fl.plain = malloc(1 << 20);
	fl.out = malloc(1 << 20);
	fl.probe = malloc(32768 * sizeof *fl.probe);
	sqfs_super_t sb;
	sqfs_compressor_config_t cfg;
	sqfs_compressor_t *cmp = NULL;
	fl.huff = gg_huffman_new();
	fl.l1 = libdeflate_alloc_compressor(1);
	if (!fl.huff || !fl.l1 ||
	    deflateInit2(&fl.z, 9, Z_DEFLATED, 15, 9, Z_HUFFMAN_ONLY) != Z_OK) {
		fprintf(stderr, "freeze-floor: out of memory\n");
		return 1;
	}
	if (sqfs_super_read(&sb, &fl.f.base) ||
	    !(fl.ours = gg_sqfs_deflate_new(level, sb.block_size)) ||
	    sqfs_compressor_config_init(&cfg, SQFS_COMP_GZIP, sb.block_size,
					SQFS_COMP_FLAG_UNCOMPRESS) ||
	    sqfs_compressor_create(&cfg, &cmp) || inodes(&fl, &sb, cmp) ||
	    fragments(&fl, &sb, cmp)) {
		fprintf(stderr, "freeze-floor: cannot read the squashfs of '%s'\n", argv[1]);
		return 1;
	}
	printf("blocks %lu raw %lu deflate_all %.3f deflate_needed %.3f probe %.3f codec %.3f",
	       fl.blocks, fl.raw, fl.all, fl.needed, fl.probe_s, fl.ours_s);
	printf(" matchless %lu huffman %.3f %llu level1 %.3f %llu zlib_huffman %.3f %llu\n",
	       fl.matchless, fl.coder_s[0], fl.coder_b[0], fl.coder_s[1], fl.coder_b[1],
	       fl.coder_s[2], fl.coder_b[2]);
	return 0;
}
