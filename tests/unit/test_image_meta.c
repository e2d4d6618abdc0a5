/* Unit tests of lib/image/meta.c: architecture from ELF headers and from the tree's
 * /bin/sh, the metadata objects (labels, environment, runscript, provenance). */
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "image/internal.h"

static void elf(unsigned char *h, int cls, int data, unsigned mach)
{
	memset(h, 0, 64);
	memcpy(h,
	       "\x7f"
	       "ELF",
	       4);
	h[4] = (unsigned char)cls;
	h[5] = (unsigned char)data;
	h[6] = 1;
	if (data == 1) {
		h[18] = (unsigned char)(mach & 0xff);
		h[19] = (unsigned char)(mach >> 8);
	} else {
		h[19] = (unsigned char)(mach & 0xff);
		h[18] = (unsigned char)(mach >> 8);
	}
}

static void test_elf_arch(void **state)
{
	(void)state;
	unsigned char h[64];
	const struct {
		int cls, data;
		unsigned mach;
		const char *code, *name;
	} cases[] = {
		{2, 1, 62, "02", "amd64"},    {1, 1, 3, "01", "386"},
		{2, 1, 183, "04", "arm64"},   {1, 1, 40, "03", "arm"},
		{2, 1, 21, "06", "ppc64le"},  {2, 2, 21, "05", "ppc64"},
		{2, 2, 22, "11", "s390x"},    {2, 1, 243, "12", "riscv64"},
		{2, 1, 258, "13", "loong64"}, {1, 2, 8, "07", "mips"},
		{1, 1, 8, "08", "mipsle"},    {2, 2, 8, "09", "mips64"},
		{2, 1, 8, "10", "mips64le"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		elf(h, cases[i].cls, cases[i].data, cases[i].mach);
		const char *a = gg_image_elf_arch(h, sizeof h);
		assert_non_null(a);
		assert_string_equal(a, cases[i].code);
		assert_string_equal(gg_image_arch_name(a), cases[i].name);
	}
	elf(h, 1, 1, 62); /* x32: not a SIF arch */
	assert_null(gg_image_elf_arch(h, sizeof h));
	elf(h, 2, 1, 9999);
	assert_null(gg_image_elf_arch(h, sizeof h));
	elf(h, 2, 1, 62);
	assert_null(gg_image_elf_arch(h, 19)); /* too short */
	h[1] = 'X';
	assert_null(gg_image_elf_arch(h, sizeof h));
	assert_null(gg_image_elf_arch((const unsigned char *)"#!/bin/sh\necho hello world", 26));
	assert_string_equal(gg_image_arch_name("99"), "unknown");
	assert_string_equal(gg_image_arch_name(NULL), "unknown");
#if defined(__x86_64__)
	assert_string_equal(gg_image_host_arch(), "02");
#endif
}

static struct gg_inode *add(struct gg_tree *t, const char *path, uint32_t mode)
{
	struct gg_entry e;
	memset(&e, 0, sizeof e);
	e.path = path;
	e.mode = mode;
	struct gg_inode *data;
	struct gg_err err = {0};
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	return gg_image_tree_lookup(t, path)->inode;
}

static void capture(struct gg_inode *ino, const char *s)
{
	ino->capture = strdup(s);
	ino->capture_len = strlen(s);
}

static void test_tree_arch(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	/* nothing: the host's */
	assert_string_equal(gg_image_tree_arch(t), gg_image_host_arch());
	/* the first executable ELF in sorted order */
	struct gg_inode *a = add(t, "opt/a", S_IFREG | 0755);
	memcpy(a->elf, "11", 3);
	struct gg_inode *lib = add(t, "lib/x.so", S_IFREG | 0644); /* not executable */
	memcpy(lib->elf, "06", 3);
	assert_string_equal(gg_image_tree_arch(t), "11");
	/* /bin/sh through symlinks wins */
	struct gg_inode *dash = add(t, "usr/bin/dash", S_IFREG | 0755);
	memcpy(dash->elf, "04", 3);
	struct gg_inode *bin = add(t, "bin", S_IFLNK | 0777);
	free(bin->target);
	bin->target = strdup("usr/bin");
	struct gg_inode *sh = add(t, "usr/bin/sh", S_IFLNK | 0777);
	free(sh->target);
	sh->target = strdup("dash");
	assert_string_equal(gg_image_tree_arch(t), "04");
	gg_image_tree_free(t);
}

static void test_meta_wanted(void **state)
{
	(void)state;
	assert_true(gg_image_meta_wanted(".singularity.d/labels.json"));
	assert_true(gg_image_meta_wanted(".singularity.d/runscript"));
	assert_true(gg_image_meta_wanted(".singularity.d/env/90-environment.sh"));
	assert_true(gg_image_meta_wanted(".singularity.d/env/91-environment.sh"));
	assert_true(gg_image_meta_wanted(".singularity.d/env/10-docker2singularity.sh"));
	assert_false(gg_image_meta_wanted(".singularity.d/env/01-base.sh"));
	assert_false(gg_image_meta_wanted(".singularity.d/env/sub/90-environment.sh"));
	assert_false(gg_image_meta_wanted("etc/passwd"));
}

static void test_meta_build(void **state)
{
	(void)state;
	struct gg_tree *t = gg_image_tree_new();
	capture(add(t, ".singularity.d/labels.json", S_IFREG | 0644),
		"{\"owner\":\"alice\",\"n\":5,\"override\":\"old\"}");
	capture(add(t, ".singularity.d/runscript", S_IFREG | 0755),
		"#!/bin/sh\nexec python3 \"$@\"\n\n");
	capture(add(t, ".singularity.d/env/90-environment.sh", S_IFREG | 0755), "export A=1\n");
	capture(add(t, ".singularity.d/env/01-base.sh", S_IFREG | 0755), "ignored\n");
	const char *labels[] = {"override=new", "team=gpu=yes"};
	struct gg_meta_in in = {
		.tree = t,
		.source = "sb",
		.source_abs = "/work/sb",
		.format = GG_IMAGE_DIR,
		.arch = "02",
		.build_time = 1700000000,
		.reproducible = 1,
		.labels = labels,
		.nlabels = 2,
		.gpus_json = "[{\"name\":\"A100\",\"mem\":40}]",
		.tool_version = "9.9",
		.comp = GG_IMAGE_COMP_GZIP,
		.level = 6,
		.block_size = 131072,
	};
	char *def, *insp, *prov;
	struct gg_err err = {0};
	assert_int_equal(gg_image_meta_build(&in, &def, &insp, &prov, &err), 0);
	assert_string_equal(def, "bootstrap: localimage\nfrom: sb\n\n");

	json_t *m = json_loads(insp, 0, NULL);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")), "container");
	json_t *a = json_object_get(json_object_get(m, "data"), "attributes");
	json_t *l = json_object_get(a, "labels");
	assert_string_equal(json_string_value(json_object_get(l, "owner")), "alice");
	assert_null(json_object_get(l, "n")); /* not a string: dropped, as apptainer does */
	assert_string_equal(json_string_value(json_object_get(l, "override")), "new");
	assert_string_equal(json_string_value(json_object_get(l, "team")), "gpu=yes");
	assert_string_equal(json_string_value(json_object_get(l, "org.label-schema.build-arch")),
			    "amd64");
	assert_string_equal(
		json_string_value(json_object_get(l, "org.opencontainers.image.created")),
		"2023-11-14T22:13:20Z");
	assert_string_equal(json_string_value(json_object_get(l, "org.label-schema.build-date")),
			    "Tuesday_14_November_2023_22:13:20_UTC");
	assert_string_equal(json_string_value(json_object_get(a, "runscript")),
			    "#!/bin/sh\nexec python3 \"$@\"");
	json_t *env = json_object_get(a, "environment");
	assert_int_equal(json_object_size(env), 1);
	assert_string_equal(
		json_string_value(json_object_get(env, "/.singularity.d/env/90-environment.sh")),
		"export A=1");
	assert_string_equal(json_string_value(json_object_get(a, "deffile")),
			    "bootstrap: localimage\nfrom: sb");
	json_decref(m);

	json_t *p = json_loads(prov, 0, NULL);
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(p, "gridgpu_version")), "9.9");
	assert_string_equal(json_string_value(json_object_get(p, "build_time")),
			    "2023-11-14T22:13:20Z");
	assert_true(json_is_true(json_object_get(p, "reproducible")));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(p, "source"), "path")),
		"/work/sb");
	json_t *g = json_array_get(json_object_get(p, "gpus"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "name")), "A100");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(p, "squashfs"), "algorithm")),
		"gzip");
	json_decref(p);
	/* compact and key-sorted: the same input gives the same bytes */
	char *def2, *insp2, *prov2;
	assert_int_equal(gg_image_meta_build(&in, &def2, &insp2, &prov2, &err), 0);
	assert_string_equal(insp, insp2);
	assert_string_equal(prov, prov2);
	free(def);
	free(insp);
	free(prov);
	free(def2);
	free(insp2);
	free(prov2);

	/* no GPUs given: null; bad GPU JSON and bad labels: usage errors */
	in.gpus_json = NULL;
	assert_int_equal(gg_image_meta_build(&in, &def, &insp, &prov, &err), 0);
	p = json_loads(prov, 0, NULL);
	assert_true(json_is_null(json_object_get(p, "gpus")));
	json_decref(p);
	free(def);
	free(insp);
	free(prov);
	in.gpus_json = "[not json";
	assert_int_equal(gg_image_meta_build(&in, &def, &insp, &prov, &err), GG_EUSAGE);
	assert_null(insp);
	in.gpus_json = NULL;
	const char *bad[] = {"=x"};
	in.labels = bad;
	in.nlabels = 1;
	assert_int_equal(gg_image_meta_build(&in, &def, &insp, &prov, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "KEY=VALUE"));
	gg_image_tree_free(t);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(gg_image_comp_parse("gzip"), GG_IMAGE_COMP_GZIP);
	assert_int_equal(gg_image_comp_parse("zstd"), GG_IMAGE_COMP_ZSTD);
	assert_int_equal(gg_image_comp_parse("xz"), GG_IMAGE_COMP_XZ);
	assert_int_equal(gg_image_comp_parse("lz4"), GG_IMAGE_COMP_LZ4);
	assert_int_equal(gg_image_comp_parse("lzo"), 0);
	assert_string_equal(gg_image_format_name(GG_IMAGE_OCI), "oci");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_arch),    cmocka_unit_test(test_tree_arch),
		cmocka_unit_test(test_meta_wanted), cmocka_unit_test(test_meta_build),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("image_meta", tests, NULL, NULL);
}
