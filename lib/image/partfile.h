/* A read-only sqfs_file_t over a SIF's partition (sif.c), for libsquashfs's readers:
 * verify's checks and the image's program lookup (program.c). */
#ifndef GG_IMAGE_PARTFILE_H
#define GG_IMAGE_PARTFILE_H

#include <stdint.h>

#include <sqfs/io.h>

#include "gridgpu/image.h"

struct gg_part_file {
	sqfs_file_t base;
	int fd;
	uint64_t off, size;
};

/* pf reads partition d of s; it holds no resource and is good while s stays open. */
void gg_part_file_init(struct gg_part_file *pf, const struct gg_sif *s,
		       const struct gg_sif_descr *d);

#endif
