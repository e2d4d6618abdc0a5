/* Unit tests of lib/image/sif.c: byte layout against the format notes, writer/reader
 * round trip, the reader refusing truncated and corrupt files, verify. */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),    cmocka_unit_test(test_descriptor_layout),
		cmocka_unit_test(test_roundtrip),        cmocka_unit_test(test_reject_bad),
		cmocka_unit_test(test_verify_structure),
	};
	return cmocka_run_group_tests_name("image_sif", tests, setup_tmp, teardown_tmp);
}
