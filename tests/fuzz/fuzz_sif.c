/* SIF images (`gridgpu inspect`, `gridgpu verify`): gg_sif_open and what inspect
 * reads through it (descriptors, partitions, the JSON objects), then gg_sif_verify
 * with its squashfs superblock and ID table checks. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "image/image.h"

/* An image that opens has no two objects sharing a byte. */
static void sif_no_overlap(const struct gg_sif *s)
{
	for (size_t i = 0; i < s->ndescr; i++) {
		const struct gg_sif_descr *a = &s->descr[i];
		for (size_t j = i + 1; a->used && a->size > 0 && j < s->ndescr; j++) {
			const struct gg_sif_descr *b = &s->descr[j];
			FUZZ_CHECK(!b->used || b->size <= 0 || a->offset + a->size <= b->offset ||
					   b->offset + b->size <= a->offset,
				   "objects %u and %u overlap", a->id, b->id);
		}
	}
}

static void sif_inspect(const struct gg_sif *s)
{
	sif_no_overlap(s);
	for (size_t i = 0; i < s->ndescr; i++) {
		const struct gg_sif_descr *d = &s->descr[i];
		if (!d->used)
			continue;
		FUZZ_CHECK(d->offset >= 0 && d->size >= 0 &&
				   (uint64_t)d->offset + (uint64_t)d->size <= s->file_size,
			   "object %u (%lld bytes at %lld) outside the file (%llu bytes)", d->id,
			   (long long)d->size, (long long)d->offset,
			   (unsigned long long)s->file_size);
		(void)gg_sif_type_name(d->type);
		int32_t fs, pt;
		char arch[3];
		if (gg_sif_partition_info(d, &fs, &pt, arch) == 0) {
			(void)gg_sif_fstype_name(fs);
			(void)gg_sif_parttype_name(pt);
			(void)gg_image_arch_name(arch);
		}
		char *obj = NULL;
		size_t len = 0;
		struct gg_err err = {0};
		if (gg_sif_read_object(s, d, 1 << 20, &obj, &len, &err) == 0) {
			FUZZ_CHECK(len == (size_t)d->size, "read %zu of %lld bytes", len,
				   (long long)d->size);
			if (d->type == GG_SIF_GENERIC_JSON) {
				json_t *j = json_loadb(obj, len, 0, NULL);
				json_decref(j);
			}
			free(obj);
		}
	}
	(void)gg_sif_find(s, GG_SIF_GENERIC_JSON, "inspect-metadata.json");
	(void)gg_sif_find(s, GG_SIF_DEFFILE, NULL);
	(void)gg_sif_primary(s);
	(void)gg_image_arch_name(s->hdr.arch);
}

FUZZ_TARGET(sif)
{
	char path[4096];
	if (fuzz_write_file("sif", data, size, path) < 0)
		return 0;
	struct gg_sif *s = NULL;
	struct gg_err err = {0};
	if (gg_sif_open(path, &s, &err) == 0) {
		FUZZ_CHECK(s && s->file_size == size, "opened, but the size is wrong");
		sif_inspect(s);
		gg_sif_close(s);
	} else {
		FUZZ_CHECK(!s && err.msg[0], "open failed without a message");
	}
	struct gg_sif_verify_report rep;
	struct gg_err e2 = {0};
	if (gg_sif_verify(path, &rep, &e2) == 0) {
		FUZZ_CHECK(rep.nchecks <= sizeof rep.checks / sizeof rep.checks[0], "%zu checks",
			   rep.nchecks);
		int all = 1;
		for (size_t i = 0; i < rep.nchecks; i++)
			all &= rep.checks[i].ok;
		FUZZ_CHECK(!rep.ok || all, "verify passed with a failed check");
	}
	unlink(path);
	return 0;
}
