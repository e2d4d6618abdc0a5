/* lib/image: the public part is include/gridgpu/image.h (freeze, SIF reading
 * and verification); here what only the library, the gridgpu command and the
 * tests use: helpers, the squashfs compressor, SIF encoding and the writer. */
#ifndef GG_LIB_IMAGE_H
#define GG_LIB_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gridgpu/image.h"

/* ---- helpers (exposed for the tests) -------------------------------------------- */

/* Normalise an archive member name into a relative path without ".", "" components or
 * a trailing slash ("" is the root). Rejects absolute names and ".." components. out
 * must hold strlen(in) + 1 bytes. Returns 0, or GG_EFAIL with err naming the entry. */
int gg_image_path_clean(const char *in, char *out, struct gg_err *err);

/* SIF architecture code ("02") of an ELF header (at least 20 bytes), or NULL when the
 * buffer is not an ELF header or the machine is not one SIF knows. */
const char *gg_image_elf_arch(const unsigned char *hdr, size_t len);
/* The SIF code of the machine gridgpu was built for. */
const char *gg_image_host_arch(void);

/* ---- squashfs pieces ------------------------------------------------------------- */

struct sqfs_compressor_t;
/* A libsquashfs compressor (id gzip) that deflates with libdeflate at level 1..12 and
 * emits zlib streams, as the gzip compressor of squashfs does. NULL on bad level or
 * allocation failure. Destroy with sqfs_destroy(). */
struct sqfs_compressor_t *gg_sqfs_deflate_new(int level, uint32_t block_size);
/* inner, storing a block raw (0) where inner's result is not smaller than the block:
 * libsquashfs's lz4 compressor returns longer ones, which unsquashfs 4.5 refuses. Takes
 * inner (destroyed with it); NULL on allocation failure (inner is then the caller's). */
struct sqfs_compressor_t *gg_sqfs_shrink_only(struct sqfs_compressor_t *inner);
/* Its counterpart for reading blocks back (SQFS_COMP_FLAG_UNCOMPRESS): inflates zlib
 * streams with libdeflate. NULL on allocation failure. */
struct sqfs_compressor_t *gg_sqfs_inflate_new(uint32_t block_size);
/* How many blocks it gave from its memo of recent ones instead of inflating them. */
uint64_t gg_sqfs_inflate_memo_hits(const struct sqfs_compressor_t *cmp);
/* 1 when deflate cannot make the n bytes at in smaller: their
 * byte histogram is flat and they hold no repeated 4-byte strings within 32 KiB. Such
 * blocks are stored raw without being compressed. probe: scratch of 32768 uint16_t. */
int gg_deflate_hopeless(uint16_t *probe, const uint8_t *in, size_t n);
/* 1 when LZ77 can find almost nothing in the n bytes at in (fewer than n/1024 even
 * positions start a 4-byte string seen within 32 KiB): such blocks are Huffman coded
 * without LZ77 (gg_huffman_zlib), which does as well as deflate's levels there. probe:
 * as above. found (may be NULL): how many such positions, counted up to n/1024 (n
 * for sizes not tested: under 16 KiB or over 16 MiB). */
int gg_deflate_matchless(uint16_t *probe, const uint8_t *in, size_t n, size_t *found);
/* How often each byte value occurs in the n bytes at in (n < 4 GiB). */
void gg_byte_histogram(const uint8_t *in, size_t n, uint32_t freq[256]);
struct gg_huffman;
/* Scratch for gg_huffman_zlib (16.5 KiB); one per thread. NULL when out of memory. */
struct gg_huffman *gg_huffman_new(void);
void gg_huffman_free(struct gg_huffman *h);
/* The n bytes at in as a zlib stream (RFC 1950) of deflate blocks (RFC 1951) that use
 * dynamic Huffman codes and no LZ77 matches: the whole as one block, or as 2 or 4,
 * whichever is smallest. Its length, or 0 when it would not be smaller than n, would
 * not fit in outsize - 8 bytes (the writer stores 8 bytes at a time), or n > 4 MiB.
 * The output depends on the bytes alone. */
size_t gg_huffman_zlib(struct gg_huffman *h, const uint8_t *in, size_t n, uint8_t *out,
		       size_t outsize);

/* ---- a freeze fed by its caller ------------------------------------------------ */

struct gg_feed;
/* What gg_image_freeze_fed takes instead of reading opts->source (which then only names
 * the source, "-" as for a tar on standard input): read gives the feed every entry and
 * its data (gg_image_tree_apply, gg_image_feed_begin/data/end), in the order the image
 * is to have them; NULL reads opts->source as gg_image_freeze does. no_digest: the
 * provenance records no digest of the source (a stream nobody keeps: a session's). */
struct gg_freeze_feeder {
	int (*read)(struct gg_feed *fz, void *ud, struct gg_err *err);
	void *ud;
	int no_digest;
	const char *usage_json; /* the provenance's "usage" (freeze --session), or NULL */
};
int gg_image_freeze_fed(const struct gg_freeze_opts *o, const struct gg_image_callbacks *cb,
			const struct gg_freeze_feeder *fdr, struct gg_freeze_result *res,
			struct gg_err *err);

/* ---- SIF encoding and writing ---------------------------------------------- */

/* Encode / decode the packed little-endian layouts. decode returns 0, or GG_EFAIL for a
 * header without the SIF magic or version "01" (err says which). */
void gg_sif_header_encode(const struct gg_sif_header *h, uint8_t out[GG_SIF_HEADER_SIZE]);
int gg_sif_header_decode(const uint8_t in[GG_SIF_HEADER_SIZE], struct gg_sif_header *h,
			 struct gg_err *err);
void gg_sif_descr_encode(const struct gg_sif_descr *d, uint8_t out[GG_SIF_DESCR_SIZE]);
void gg_sif_descr_decode(const uint8_t in[GG_SIF_DESCR_SIZE], struct gg_sif_descr *d);
/* Partition extra: fstype, parttype, arch code (gg_sif_partition_info reads it). */
void gg_sif_partition_extra(struct gg_sif_descr *d, int32_t fstype, int32_t parttype,
			    const char *arch);
/* Writer: lays out a SIF in an open file. Partitions whose bytes the caller wrote itself
 * (in place, at gg_sif_writer_data_start()) are registered with add_existing; other
 * objects are appended after everything registered so far. finish writes the header and
 * the descriptor table. IDs are given by the caller (1..48) so that the table order can
 * differ from the data order. */
struct gg_sif_writer;
struct gg_sif_writer_opts {
	int deterministic; /* nil UUID and Go's zero time, as SOURCE_DATE_EPOCH does in apptainer */
	int64_t now;       /* creation time when not deterministic */
	uint8_t id[16];    /* UUID when not deterministic */
	int launch_script; /* write "#!/usr/bin/env run-singularity" (apptainer does) */
};
int gg_sif_writer_new(int fd, const char *path, const struct gg_sif_writer_opts *o,
		      struct gg_sif_writer **out, struct gg_err *err);
/* Offset of the first object: DataOffset rounded up to 4096 (32768). */
int64_t gg_sif_writer_data_start(const struct gg_sif_writer *w);
int gg_sif_writer_add_partition(struct gg_sif_writer *w, uint32_t id, uint32_t group,
				int64_t offset, int64_t size, int32_t fstype, int32_t parttype,
				const char *arch, struct gg_err *err);
int gg_sif_writer_add(struct gg_sif_writer *w, uint32_t id, int32_t type, uint32_t group,
		      const char *name, const void *data, size_t len, struct gg_err *err);
/* Writes header + descriptors; *size = the file size (end of the last object). */
int gg_sif_writer_finish(struct gg_sif_writer *w, int64_t *size, struct gg_err *err);
void gg_sif_writer_free(struct gg_sif_writer *w);

#endif
