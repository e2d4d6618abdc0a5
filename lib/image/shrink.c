/* A libsquashfs compressor around another that stores a block raw unless compressing it
 * made it smaller. libsquashfs's own compressors are meant to return 0 for such a block,
 * and its writers then store it raw; its lz4 compressor (libsquashfs 1.2) does not: it
 * returns an LZ4 block of 5 bytes for the 4 bytes of a one-owner id table, and the image
 * is one that unsquashfs 4.5 refuses ("read_id_table: failed to read id table block":
 * it takes a compressed block longer than what it inflates to for corruption). The
 * kernel reads such blocks, every squashfs reader reads a raw one. */
#include "image/image.h"

#include <stdlib.h>

#include <sqfs/compressor.h>
#include <sqfs/predef.h>

struct shrink {
	sqfs_compressor_t base;
	sqfs_compressor_t *inner;
};

static void shrink_get_configuration(const sqfs_compressor_t *cmp, sqfs_compressor_config_t *cfg)
{
	const struct shrink *s = (const struct shrink *)cmp;
	s->inner->get_configuration(s->inner, cfg);
}

static int shrink_write_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	struct shrink *s = (struct shrink *)cmp;
	return s->inner->write_options(s->inner, file);
}

static int shrink_read_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
	struct shrink *s = (struct shrink *)cmp;
	return s->inner->read_options(s->inner, file);
}

static sqfs_s32 shrink_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
				sqfs_u8 *out, sqfs_u32 outsize)
{
	struct shrink *s = (struct shrink *)cmp;
	sqfs_s32 n = s->inner->do_block(s->inner, in, size, out, outsize);
	return n > 0 && (sqfs_u32)n >= size ? 0 : n;
}

static void shrink_destroy(sqfs_object_t *obj)
{
	struct shrink *s = (struct shrink *)obj;
	sqfs_destroy(s->inner);
	free(s);
}

static sqfs_object_t *shrink_copy(const sqfs_object_t *obj)
{
	const struct shrink *s = (const struct shrink *)obj;
	sqfs_compressor_t *inner = sqfs_copy(s->inner);
	if (!inner)
		return NULL;
	sqfs_compressor_t *c = gg_sqfs_shrink_only(inner);
	if (!c)
		sqfs_destroy(inner);
	return (sqfs_object_t *)c;
}

sqfs_compressor_t *gg_sqfs_shrink_only(sqfs_compressor_t *inner)
{
	struct shrink *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->inner = inner;
	s->base.base.destroy = shrink_destroy;
	s->base.base.copy = shrink_copy;
	s->base.get_configuration = shrink_get_configuration;
	s->base.write_options = shrink_write_options;
	s->base.read_options = shrink_read_options;
	s->base.do_block = shrink_do_block;
	return &s->base;
}
