/* What inspect shows of a SIF: its header, objects and squashfs as JSON, the JSON
 * objects a freeze stores in it (labels, provenance), its id as a UUID. */
#include "image/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define JSON_OBJ_MAX (16u << 20)

char *gg_sif_id_str(const uint8_t id[16], char *out, size_t len)
{
	static const int dash[] = {4, 6, 8, 10};
	char b[37];
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		for (size_t d = 0; d < 4; d++)
			if (dash[d] == i)
				b[o++] = '-';
		snprintf(b + o, 3, "%02x", id[i]);
		o += 2;
	}
	b[o] = '\0';
	snprintf(out, len, "%s", b);
	return out;
}

json_t *gg_sif_read_json(const struct gg_sif *s, const char *name)
{
	const struct gg_sif_descr *d = gg_sif_find(s, GG_SIF_GENERIC_JSON, name);
	if (!d)
		return NULL;
	char *buf;
	size_t len;
	if (gg_sif_read_object(s, d, JSON_OBJ_MAX, &buf, &len, NULL) < 0)
		return NULL;
	json_t *v = json_loadb(buf, len, 0, NULL);
	free(buf);
	return v;
}

json_t *gg_sif_labels(const struct gg_sif *s)
{
	json_t *meta = gg_sif_read_json(s, "inspect-metadata.json");
	json_t *labels = json_object_get(
		json_object_get(json_object_get(meta, "data"), "attributes"), "labels");
	json_incref(labels);
	json_decref(meta);
	return labels;
}

/* A time as ISO 8601 UTC, null for none. */
static json_t *time_json(int64_t t)
{
	char b[40];
	return t > 0 ? gg_json_text(gg_time_iso(t, b, sizeof b)) : json_null();
}

static json_t *header_json(const struct gg_sif *s)
{
	char id[37];
	json_t *hdr = json_object();
	gg_json_set_text(hdr, "version", "01");
	gg_json_set_text(hdr, "arch", gg_image_arch_name(s->hdr.arch));
	gg_json_set_text(hdr, "id", gg_sif_id_str(s->hdr.id, id, sizeof id));
	gg_json_set(hdr, "created", time_json(s->hdr.created));
	gg_json_set(hdr, "modified", time_json(s->hdr.modified));
	gg_json_set(hdr, "descriptors_total", json_integer(s->hdr.descr_total));
	gg_json_set(hdr, "descriptors_free", json_integer(s->hdr.descr_free));
	gg_json_set(hdr, "data_offset", json_integer(s->hdr.data_offset));
	gg_json_set(hdr, "data_size", json_integer(s->hdr.data_size));
	return hdr;
}

static json_t *descr_json(const struct gg_sif_descr *d)
{
	json_t *j = json_object();
	gg_json_set(j, "id", json_integer(d->id));
	gg_json_set(j, "group", json_integer(d->group & ~GG_SIF_GROUP_MASK));
	gg_json_set(j, "link", json_integer(d->link));
	gg_json_set_text(j, "type", gg_sif_type_name(d->type));
	gg_json_set(j, "name", gg_json_textn(d->name, sizeof d->name));
	gg_json_set(j, "offset", json_integer(d->offset));
	gg_json_set(j, "size", json_integer(d->size));
	int32_t fs, pt;
	char pa[3];
	if (gg_sif_partition_info(d, &fs, &pt, pa) == 0) {
		gg_json_set_text(j, "fstype", gg_sif_fstype_name(fs));
		gg_json_set_text(j, "parttype", gg_sif_parttype_name(pt));
		gg_json_set_text(j, "arch", gg_image_arch_name(pa));
	}
	return j;
}

static json_t *squashfs_json(const struct gg_sif_verify_report *rep)
{
	json_t *q = json_object();
	gg_json_set_text(q, "compression", gg_image_comp_name((enum gg_image_comp)rep->sqfs_comp));
	gg_json_set(q, "inodes", json_integer(rep->sqfs_inodes));
	gg_json_set(q, "block_size", json_integer(rep->sqfs_block_size));
	gg_json_set(q, "bytes_used", json_integer((json_int_t)rep->sqfs_bytes_used));
	gg_json_set(q, "mkfs_time", json_integer(rep->sqfs_mkfs_time));
	return q;
}

json_t *gg_sif_json(const struct gg_sif *s, const struct gg_sif_verify_report *rep)
{
	json_t *o = json_object(), *objs = json_array();
	gg_json_set(o, "size", json_integer((json_int_t)s->file_size));
	gg_json_set(o, "header", header_json(s));
	for (size_t i = 0; i < s->ndescr; i++)
		if (s->descr[i].used)
			gg_json_append(objs, descr_json(&s->descr[i]));
	gg_json_set(o, "objects", objs);
	if (rep)
		gg_json_set(o, "squashfs", squashfs_json(rep));
	return o;
}
