/* Unit tests of lib/image/sif.c: byte layout against the format notes, writer/reader
 * round trip, the reader refusing truncated and corrupt files, verify. */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/image.h"
#include "image/internal.h"

UNIT_TMPDIR("gg-unit-sif")

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void test_header_layout(void **state)
{
	(void)state;
	struct gg_sif_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.launch, GG_SIF_LAUNCH, strlen(GG_SIF_LAUNCH));
	memcpy(h.magic, "SIF_MAGIC", 9);
	memcpy(h.version, "01", 2);
	memcpy(h.arch, "02", 2);
	for (int i = 0; i < 16; i++)
		h.id[i] = (uint8_t)(0xA0 + i);
	h.created = GG_SIF_GO_ZERO_TIME;
	h.modified = 1234567890;
	h.descr_free = 45;
	h.descr_total = 48;
	h.descr_offset = 4096;
	h.descr_size = 28080;
	h.data_offset = 32176;
	h.data_size = 0x0102030405060708LL;
	uint8_t b[GG_SIF_HEADER_SIZE];
	gg_sif_header_encode(&h, b);
	/* notes/sif.md 1.2 */
	assert_memory_equal(b + 0, "#!/usr/bin/env run-singularity\n\0", 32);
	assert_memory_equal(b + 32, "SIF_MAGIC\0", 10);
	assert_memory_equal(b + 42, "01\0", 3);
	assert_memory_equal(b + 45, "02\0", 3);
	assert_int_equal(b[48], 0xA0);
	assert_int_equal(b[63], 0xAF);
	assert_int_equal((int64_t)le(b + 64, 8), GG_SIF_GO_ZERO_TIME);
	assert_int_equal(le(b + 72, 8), 1234567890);
	assert_int_equal(le(b + 80, 8), 45);
	assert_int_equal(le(b + 88, 8), 48);
	assert_int_equal(le(b + 96, 8), 4096);
	assert_int_equal(le(b + 104, 8), 28080);
	assert_int_equal(le(b + 112, 8), 32176);
	assert_int_equal(b[120], 0x08);
	assert_int_equal(b[127], 0x01);

	struct gg_sif_header back;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_header_decode(b, &back, &err), 0);
	assert_memory_equal(&back, &h, sizeof h);
	b[33] = 'X';
	assert_true(gg_sif_header_decode(b, &back, &err) < 0);
	assert_non_null(strstr(err.msg, "not a SIF"));
	b[33] = 'I';
	b[43] = '2';
	assert_true(gg_sif_header_decode(b, &back, &err) < 0);
	assert_non_null(strstr(err.msg, "version"));
}

static void test_descriptor_layout(void **state)
{
	(void)state;
	struct gg_sif_descr d;
	memset(&d, 0, sizeof d);
	d.type = GG_SIF_PARTITION;
	d.used = 1;
	d.id = 3;
	d.group = 1 | GG_SIF_GROUP_MASK;
	d.link = 0;
	d.offset = 32768;
	d.size = 5283840;
	d.size_with_padding = 5283840 + 592;
	d.created = d.modified = GG_SIF_GO_ZERO_TIME;
	strcpy(d.name, "part");
	gg_sif_partition_extra(&d, GG_SIF_FS_SQUASHFS, GG_SIF_PART_PRIMSYS, "02");
	uint8_t b[GG_SIF_DESCR_SIZE];
	gg_sif_descr_encode(&d, b);
	/* notes/sif.md 1.3 */
	assert_int_equal(le(b + 0, 4), 0x4004);
	assert_int_equal(b[4], 1);
	assert_int_equal(le(b + 5, 4), 3);
	assert_int_equal(le(b + 9, 4), 0xF0000001u);
	assert_int_equal(le(b + 13, 4), 0);
	assert_int_equal(le(b + 17, 8), 32768);
	assert_int_equal(le(b + 25, 8), 5283840);
	assert_int_equal(le(b + 33, 8), 5283840 + 592);
	assert_int_equal((int64_t)le(b + 41, 8), GG_SIF_GO_ZERO_TIME);
	assert_int_equal((int64_t)le(b + 49, 8), GG_SIF_GO_ZERO_TIME);
	assert_int_equal(le(b + 57, 8), 0);
	assert_int_equal(le(b + 65, 8), 0);
	assert_memory_equal(b + 73, "part\0", 5);
	assert_int_equal(le(b + 201, 4), 1); /* Fstype Squashfs */
	assert_int_equal(le(b + 205, 4), 2); /* Parttype PrimSys */
	assert_memory_equal(b + 209, "02\0", 3);
	assert_int_equal(b[584], 0);

	struct gg_sif_descr back;
	gg_sif_descr_decode(b, &back);
	assert_memory_equal(&back, &d, sizeof d);
	int32_t fs, pt;
	char arch[3];
	assert_int_equal(gg_sif_partition_info(&back, &fs, &pt, arch), 0);
	assert_int_equal(fs, 1);
	assert_int_equal(pt, 2);
	assert_string_equal(arch, "02");
	assert_string_equal(gg_sif_type_name(0x4001), "Def.FILE");
	assert_string_equal(gg_sif_type_name(0x4006), "JSON.Generic");
	assert_string_equal(gg_sif_parttype_name(2), "*System");
}

/* A SIF with a fake 10000-byte partition (not a squashfs), a deffile and a JSON object,
 * laid out like the freeze does: partition first, IDs in apptainer's order. */
static void write_sample(const char *path, int deterministic)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct gg_sif_writer_opts o = {
		.deterministic = deterministic, .now = 1700000000, .launch_script = 1};
	memset(o.id, 0x11, 16);
	struct gg_sif_writer *w;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_writer_new(fd, path, &o, &w, &err), 0);
	int64_t start = gg_sif_writer_data_start(w);
	assert_int_equal(start, 32768);
	char part[10000];
	memset(part, 'p', sizeof part);
	memcpy(part, "hsqs", 4);
	assert_int_equal(pwrite(fd, part, sizeof part, start), (ssize_t)sizeof part);
	assert_int_equal(gg_sif_writer_add_partition(w, 3, 1, start, sizeof part,
						     GG_SIF_FS_SQUASHFS, GG_SIF_PART_PRIMSYS, "04",
						     &err),
			 0);
	const char *def = "bootstrap: localimage\nfrom: x\n\n";
	assert_int_equal(gg_sif_writer_add(w, 1, GG_SIF_DEFFILE, 1, NULL, def, strlen(def), &err),
			 0);
	assert_int_equal(gg_sif_writer_add(w, 2, GG_SIF_GENERIC_JSON, 1, "inspect-metadata.json",
					   "{}", 2, &err),
			 0);
	/* an id twice and an id out of range are refused */
	assert_true(gg_sif_writer_add(w, 2, GG_SIF_GENERIC, 1, NULL, "x", 1, &err) < 0);
	assert_true(gg_sif_writer_add(w, 49, GG_SIF_GENERIC, 1, NULL, "x", 1, &err) < 0);
	int64_t size = 0;
	assert_int_equal(gg_sif_writer_finish(w, &size, &err), 0);
	assert_int_equal(size, 32768 + 10000 + (int64_t)strlen(def) + 2);
	gg_sif_writer_free(w);
	close(fd);
}

static void test_roundtrip(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/rt.sif", tmpdir);
	write_sample(path, 0);
	struct gg_sif *s;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_open(path, &s, &err), 0);
	assert_int_equal(s->hdr.descr_total, 48);
	assert_int_equal(s->hdr.descr_free, 45);
	assert_int_equal(s->hdr.data_offset, 32176);
	assert_int_equal(s->hdr.data_size, (int64_t)s->file_size - 32176);
	assert_int_equal(s->hdr.created, 1700000000);
	assert_memory_equal(s->hdr.arch, "04", 2);
	assert_int_equal(s->hdr.id[0], 0x11);
	const struct gg_sif_descr *p = gg_sif_primary(s);
	assert_non_null(p);
	assert_int_equal(p->id, 3);
	assert_int_equal(p->offset, 32768);
	assert_int_equal(p->size, 10000);
	assert_int_equal(p->size_with_padding, 10000 + 592);
	assert_int_equal(p->group, 0xF0000001u);
	const struct gg_sif_descr *d = gg_sif_find(s, GG_SIF_DEFFILE, NULL);
	assert_non_null(d);
	assert_int_equal(d->id, 1);
	assert_int_equal(d->offset, 32768 + 10000);
	char *buf;
	size_t len;
	assert_int_equal(gg_sif_read_object(s, d, 1024, &buf, &len, &err), 0);
	assert_string_equal(buf, "bootstrap: localimage\nfrom: x\n\n");
	free(buf);
	d = gg_sif_find(s, GG_SIF_GENERIC_JSON, "inspect-metadata.json");
	assert_non_null(d);
	assert_int_equal(gg_sif_read_object(s, d, 1, &buf, &len, &err), GG_EFAIL); /* max */
	assert_null(gg_sif_find(s, GG_SIF_GENERIC_JSON, "nope.json"));
	gg_sif_close(s);

	/* deterministic: nil UUID, Go's zero time everywhere */
	write_sample(path, 1);
	assert_int_equal(gg_sif_open(path, &s, &err), 0);
	uint8_t zero[16] = {0};
	assert_memory_equal(s->hdr.id, zero, 16);
	assert_int_equal(s->hdr.created, GG_SIF_GO_ZERO_TIME);
	assert_int_equal(gg_sif_primary(s)->created, GG_SIF_GO_ZERO_TIME);
	gg_sif_close(s);
}

/* What inspect shows (lib/image/inspect.c): the id, the JSON objects, the labels
 * and the description of header, objects and squashfs. */
static void test_inspect_json(void **state)
{
	(void)state;
	char path[128], id[37];
	snprintf(path, sizeof path, "%s/insp.sif", tmpdir);
	write_sample(path, 0);
	struct gg_sif *s;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_open(path, &s, &err), 0);
	assert_string_equal(gg_sif_id_str(s->hdr.id, id, sizeof id),
			    "11111111-1111-1111-1111-111111111111");
	json_t *meta = gg_sif_read_json(s, "inspect-metadata.json");
	assert_true(json_is_object(meta) && json_object_size(meta) == 0);
	json_decref(meta);
	assert_null(gg_sif_read_json(s, "nope.json"));
	assert_null(gg_sif_labels(s)); /* "{}": no labels */
	json_t *o = gg_sif_json(s, NULL);
	assert_int_equal(json_integer_value(json_object_get(o, "size")), (json_int_t)s->file_size);
	json_t *h = json_object_get(o, "header");
	assert_string_equal(json_string_value(json_object_get(h, "arch")), "arm64");
	assert_string_equal(json_string_value(json_object_get(h, "id")),
			    "11111111-1111-1111-1111-111111111111");
	assert_string_equal(json_string_value(json_object_get(h, "created")),
			    "2023-11-14T22:13:20Z");
	assert_int_equal(json_integer_value(json_object_get(h, "descriptors_free")), 45);
	json_t *objs = json_object_get(o, "objects");
	assert_int_equal(json_array_size(objs), 3);
	json_t *part = NULL, *d;
	size_t i;
	json_array_foreach (objs, i, d)
		if (json_integer_value(json_object_get(d, "id")) == 3)
			part = d;
	assert_string_equal(json_string_value(json_object_get(part, "type")), "FS");
	assert_string_equal(json_string_value(json_object_get(part, "fstype")), "Squashfs");
	assert_string_equal(json_string_value(json_object_get(part, "arch")), "arm64");
	assert_int_equal(json_integer_value(json_object_get(part, "size")), 10000);
	assert_null(json_object_get(o, "squashfs"));
	json_decref(o);
	struct gg_sif_verify_report rep = {.sqfs_inodes = 7, .sqfs_block_size = 131072};
	o = gg_sif_json(s, &rep);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(o, "squashfs"), "inodes")), 7);
	json_decref(o);
	gg_sif_close(s);
	/* a deterministic image: nil UUID, no creation time */
	write_sample(path, 1);
	assert_int_equal(gg_sif_open(path, &s, &err), 0);
	o = gg_sif_json(s, NULL);
	h = json_object_get(o, "header");
	assert_string_equal(json_string_value(json_object_get(h, "id")),
			    "00000000-0000-0000-0000-000000000000");
	assert_true(json_is_null(json_object_get(h, "created")));
	json_decref(o);
	gg_sif_close(s);
	/* a frozen image: its labels and provenance, as inspect shows them */
	char tree[128], file[160], sif[128];
	snprintf(tree, sizeof tree, "%s/tree", tmpdir);
	snprintf(file, sizeof file, "%s/motd", tree);
	snprintf(sif, sizeof sif, "%s/frozen.sif", tmpdir);
	assert_int_equal(mkdir(tree, 0755), 0);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);
	struct gg_freeze_opts fo = {.source = tree, .output = sif, .jobs = 1};
	assert_int_equal(gg_image_freeze(&fo, NULL, NULL, &err), 0);
	assert_int_equal(gg_sif_open(sif, &s, &err), 0);
	json_t *labels = gg_sif_labels(s);
	assert_string_equal(
		json_string_value(json_object_get(labels, "org.label-schema.schema-version")),
		"1.0");
	json_decref(labels);
	json_t *prov = gg_sif_read_json(s, "gridgpu-provenance.json");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(prov, "source"), "path")), tree);
	json_decref(prov);
	gg_sif_close(s);
}

static void expect_open_fails(const char *path, const char *msg)
{
	struct gg_sif *s = (struct gg_sif *)1;
	struct gg_err err = {0};
	assert_true(gg_sif_open(path, &s, &err) < 0);
	assert_null(s);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' does not say '%s'", err.msg, msg);
}

static void patch(const char *path, off_t off, const void *b, size_t n)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, n, off), (ssize_t)n);
	close(fd);
}

static void test_reject_bad(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/bad.sif", tmpdir);
	struct stat st;

	write_sample(path, 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 1), 0);
	expect_open_fails(path, "truncated");
	assert_int_equal(truncate(path, 40000), 0);
	expect_open_fails(path, "truncated");
	assert_int_equal(truncate(path, 20000), 0);
	expect_open_fails(path, "descriptor table");
	assert_int_equal(truncate(path, 100), 0);
	expect_open_fails(path, "too short");
	assert_int_equal(truncate(path, 0), 0);
	expect_open_fails(path, "too short");

	write_sample(path, 1);
	patch(path, 32, "NOT_MAGIC", 9);
	expect_open_fails(path, "not a SIF");

	write_sample(path, 1);
	patch(path, 42, "99", 2);
	expect_open_fails(path, "version");

	write_sample(path, 1);
	uint8_t v[8] = {7}; /* descriptors free: 7 */
	patch(path, 80, v, 8);
	expect_open_fails(path, "free");

	write_sample(path, 1);
	uint8_t id[4] = {9};
	patch(path, 4096 + 5, id, 4); /* descriptor 1 claims id 9 */
	expect_open_fails(path, "id 9");

	write_sample(path, 1);
	uint8_t off[8] = {0, 0, 0, 0, 1}; /* object 1 at 4 GiB */
	patch(path, 4096 + 17, off, 8);
	expect_open_fails(path, "outside");

	/* the definition (object 1) moved into the partition (object 3): they overlap */
	write_sample(path, 1);
	uint8_t inside[8] = {0x64, 0x80}; /* 32768 + 100 */
	patch(path, 4096 + 17, inside, 8);
	expect_open_fails(path, "overlap");
	struct gg_sif_verify_report rep;
	struct gg_err verr = {0};
	assert_int_equal(gg_sif_verify(path, &rep, &verr), 0);
	assert_false(rep.ok);
	int saw = 0;
	for (size_t i = 0; i < rep.nchecks; i++)
		saw |= !rep.checks[i].ok && strstr(rep.checks[i].detail, "objects 3") &&
		       strstr(rep.checks[i].detail, "and 1 (at 32868) overlap");
	assert_true(saw);

	expect_open_fails(tmpdir, "directory");
	char missing[160];
	snprintf(missing, sizeof missing, "%s/missing.sif", tmpdir);
	struct gg_sif *s;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_open(missing, &s, &err), GG_ENOTFOUND);
}

static void test_verify_structure(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/v.sif", tmpdir);
	/* the sample's partition is not a real squashfs: verify must say so */
	write_sample(path, 1);
	struct gg_sif_verify_report rep;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_verify(path, &rep, &err), 0);
	assert_false(rep.ok);
	int saw = 0;
	for (size_t i = 0; i < rep.nchecks; i++)
		if (!rep.checks[i].ok && strstr(rep.checks[i].what, "squashfs"))
			saw = 1;
	assert_true(saw);
	/* a header/partition arch mismatch is found too */
	patch(path, 45, "02", 2);
	assert_int_equal(gg_sif_verify(path, &rep, &err), 0);
	assert_false(rep.ok);
	saw = 0;
	for (size_t i = 0; i < rep.nchecks; i++)
		if (!rep.checks[i].ok && !strcmp(rep.checks[i].what, "architecture"))
			saw = 1;
	assert_true(saw);
	/* not a SIF: examined, not ok */
	patch(path, 32, "XXXXXXXXX", 9);
	assert_int_equal(gg_sif_verify(path, &rep, &err), 0);
	assert_false(rep.ok);
	/* missing file: an error */
	char missing[160];
	snprintf(missing, sizeof missing, "%s/none.sif", tmpdir);
	assert_true(gg_sif_verify(missing, &rep, &err) < 0);
}

/* ---- verify walks the squashfs tree of a foreign image --------------------------- */

static struct gg_node *tree_add(struct gg_tree *t, const char *path, uint32_t mode)
{
	struct gg_entry e;
	memset(&e, 0, sizeof e);
	e.path = path;
	e.mode = mode;
	e.mtime = 5;
	struct gg_inode *data = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	return gg_image_tree_lookup(t, path);
}

/* A node's name lives in the node's own allocation: a new one is the test's, kept here
 * until the tree is freed (renamed_free). */
static char *renamed[32];
static size_t nrenamed;

static void rename_node(struct gg_node *n, const char *name)
{
	assert_true(nrenamed < sizeof renamed / sizeof *renamed);
	n->name = renamed[nrenamed++] = strdup(name);
	assert_non_null(n->name);
}

static void renamed_free(void)
{
	while (nrenamed)
		free(renamed[--nrenamed]);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* What a hostile builder's tree looks like; each case changes a sound tree
 * after it was built (our readers refuse such names, other builders may not). */
enum hostile {
	H_NONE,
	H_LONG_NAME,
	H_DOT,
	H_DOTDOT,
	H_SLASH,
	H_EMPTY,
	H_LONG_PATH,
	H_EMPTY_TARGET,
	H_LONG_TARGET,
	H_TWICE,
};

static void make_hostile(struct gg_tree *t, enum hostile h)
{
	struct gg_node *f = tree_add(t, "d/f", S_IFREG | 0644);
	tree_add(t, "d/g", S_IFREG | 0644);
	struct gg_node *l = tree_add(t, "d/link", S_IFLNK | 0777);
	free(l->inode->target);
	l->inode->target = strdup("f");
	char *s = NULL;
	switch (h) {
	case H_NONE: break;
	case H_LONG_NAME: rename_node(f, s = repeat('n', 257)); break;
	case H_DOT: rename_node(f, "."); break;
	case H_DOTDOT: rename_node(f, ".."); break;
	case H_SLASH: rename_node(f, "a/b"); break;
	case H_EMPTY: rename_node(f, ""); break;
	case H_LONG_PATH: {
		/* 17 directories of 250-byte names above a file: 4267 bytes */
		char path[64] = "";
		for (int i = 0; i < 17; i++)
			strcat(path, "p/");
		strcat(path, "f");
		struct gg_node *n = tree_add(t, path, S_IFREG | 0644);
		s = repeat('p', 250); /* kept in order: after "d" */
		for (n = n->parent; n->parent; n = n->parent)
			rename_node(n, s);
		break;
	}
	case H_EMPTY_TARGET: l->inode->target[0] = '\0'; break;
	case H_LONG_TARGET:
		free(l->inode->target);
		l->inode->target = repeat('t', 4096);
		break;
	case H_TWICE: rename_node(tree_add(t, "d/h", S_IFREG | 0644), "g"); break;
	}
	free(s);
}

/* A SIF whose squashfs holds the tree made by make_hostile(h), as freeze lays it
 * out; 0, or -1 when our writer cannot write such a tree. */
static int write_hostile(const char *path, enum hostile h)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct gg_sif_writer_opts so = {.deterministic = 1, .now = 1700000000};
	struct gg_sif_writer *sw;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_writer_new(fd, path, &so, &sw, &err), 0);
	int64_t start = gg_sif_writer_data_start(sw);
	struct gg_sqfs_opts qo = {
		.comp = GG_IMAGE_COMP_GZIP, .level = 1, .jobs = 1, .block_size = 131072};
	struct gg_sqfs_writer *w;
	assert_int_equal(gg_sqfs_writer_new(fd, path, (uint64_t)start, &qo, &w, &err), 0);
	struct gg_tree *t = gg_image_tree_new();
	make_hostile(t, h);
	uint64_t size = 0;
	struct gg_freeze_result res;
	memset(&res, 0, sizeof res);
	int rc = gg_sqfs_writer_finish(w, t, 1700000000, -1, &size, &res, &err);
	if (rc == 0)
		rc = gg_sif_writer_add_partition(sw, 1, 1, start, (int64_t)size, GG_SIF_FS_SQUASHFS,
						 GG_SIF_PART_PRIMSYS, "02", &err);
	int64_t total = 0;
	if (rc == 0)
		rc = gg_sif_writer_finish(sw, &total, &err);
	gg_sqfs_writer_free(w);
	gg_sif_writer_free(sw);
	gg_image_tree_free(t);
	renamed_free();
	close(fd);
	if (rc < 0)
		print_message("case %d: our writer refuses it: %s\n", (int)h, err.msg);
	return rc < 0 ? -1 : 0;
}

/* verify's word on the tree: NULL when sound, else the failed check's detail. */
static char *tree_verdict(const char *path)
{
	struct gg_sif_verify_report rep;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_verify(path, &rep, &err), 0);
	for (size_t i = 0; i < rep.nchecks; i++) {
		if (!rep.checks[i].ok) {
			assert_false(rep.ok);
			assert_string_equal(rep.checks[i].what, "squashfs tree");
			return strdup(rep.checks[i].detail);
		}
	}
	assert_true(rep.ok);
	return NULL;
}

/* A squashfs made by mksquashfs with uncompressed metadata from a directory
 * holding "name_g" and "name_h", with the bytes of "name_h" in the directory
 * table replaced by patch (6 bytes), wrapped in a SIF. libsquashfs' writer
 * refuses such listings, so they are made by patching. 0, or -1 when there is no
 * mksquashfs. */
static int write_patched(const char *sif, const char *patch6)
{
	char src[160], img[160], cmd[512];
	snprintf(src, sizeof src, "%s/src", tmpdir);
	snprintf(img, sizeof img, "%s/p.sqfs", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "command -v mksquashfs >/dev/null || exit 3; mkdir -p %s && : >%s/name_g && "
		 ": >%s/name_h && rm -f %s && mksquashfs %s %s -noI -noD -noF -noX -no-xattrs "
		 "-all-root -quiet >/dev/null",
		 src, src, src, img, src, img);
	int rc = system(cmd);
	if (rc != 0) {
		assert_int_equal(WEXITSTATUS(rc), 3);
		print_message("no mksquashfs: the patched listings are not checked\n");
		return -1;
	}
	int fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char *b = malloc((size_t)st.st_size);
	assert_int_equal(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	uint64_t dirs = le((const uint8_t *)b + 72, 8); /* directory_table_start */
	char *at = memmem(b + dirs, (size_t)st.st_size - dirs, "name_h", 6);
	assert_non_null(at);
	memcpy(at, patch6, 6);
	fd = open(sif, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct gg_sif_writer_opts so = {.deterministic = 1, .now = 1700000000};
	struct gg_sif_writer *sw;
	struct gg_err err = {0};
	assert_int_equal(gg_sif_writer_new(fd, sif, &so, &sw, &err), 0);
	int64_t start = gg_sif_writer_data_start(sw), total;
	assert_int_equal(pwrite(fd, b, (size_t)st.st_size, start), st.st_size);
	assert_int_equal(gg_sif_writer_add_partition(sw, 1, 1, start, st.st_size,
						     GG_SIF_FS_SQUASHFS, GG_SIF_PART_PRIMSYS, "02",
						     &err),
			 0);
	assert_int_equal(gg_sif_writer_finish(sw, &total, &err), 0);
	gg_sif_writer_free(sw);
	close(fd);
	free(b);
	return 0;
}

static void test_verify_tree(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/t.sif", tmpdir);
	assert_int_equal(write_hostile(path, H_NONE), 0);
	char *v = tree_verdict(path);
	assert_null(v);
	static const struct {
		enum hostile h;
		const char *says;
	} cases[] = {
		{H_LONG_NAME, "a name of 257 bytes"},
		{H_DOT, "an entry named '.'"},
		{H_DOTDOT, "an entry named '..'"},
		{H_SLASH, "holds a '/'"},
		{H_EMPTY, "empty name"},
		{H_LONG_PATH, "a path longer than 4095 bytes"},
		{H_EMPTY_TARGET, "symbolic link target of 0 bytes"},
		{H_LONG_TARGET, "symbolic link target of 4096 bytes"},
		{H_TWICE, "'g' listed twice"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (write_hostile(path, cases[i].h) < 0)
			continue; /* said why; the report lists such cases */
		v = tree_verdict(path);
		if (!v || !strstr(v, cases[i].says))
			fail_msg("case %d: verify says '%s', want '%s'", (int)cases[i].h,
				 v ? v : "sound", cases[i].says);
		free(v);
	}
	/* listings libsquashfs will not write: patched from mksquashfs' output */
	static const struct {
		const char *patch, *says;
	} patched[] = {
		{"name_h", NULL},
		{"name_g", "'name_g' listed twice"},
		{"\0ame_h", "a NUL byte"},
		{"nam/_h", "holds a '/'"},
	};
	for (size_t i = 0; i < sizeof patched / sizeof patched[0]; i++) {
		if (write_patched(path, patched[i].patch) < 0)
			break;
		v = tree_verdict(path);
		if (patched[i].says ? !v || !strstr(v, patched[i].says) : v != NULL)
			fail_msg("patched '%s': verify says '%s', want '%s'", patched[i].patch,
				 v ? v : "sound", patched[i].says ? patched[i].says : "sound");
		free(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout), cmocka_unit_test(test_descriptor_layout),
		cmocka_unit_test(test_roundtrip),     cmocka_unit_test(test_reject_bad),
		cmocka_unit_test(test_inspect_json),  cmocka_unit_test(test_verify_structure),
		cmocka_unit_test(test_verify_tree),
	};
	return cmocka_run_group_tests_name("image_sif", tests, setup_tmp, teardown_tmp);
}
