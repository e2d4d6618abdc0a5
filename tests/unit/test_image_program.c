/* gg_image_has_program (lib/image/program.c): the lookup of a job's command in its
 * image, as the container makes it: the default PATH, absolute paths, symbolic links
 * (relative, absolute, through "..", in loops), executable regular files only, and the
 * image's environment scripts setting PATH. */
#include "unit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gridgpu/engine.h"
#include "engine/engine_int.h" /* a spec built as the library sees it */
#include "gridgpu/image.h"

UNIT_TMPDIR("gg-unit-program")

static char *at(const char *rel)
{
	static char buf[4][512];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir, rel);
	return buf[i];
}

static void put(const char *rel, const char *data, mode_t mode)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
	assert_int_equal(chmod(at(rel), mode), 0);
}

static void dir(const char *rel)
{
	assert_int_equal(mkdir(at(rel), 0755), 0);
}

static void link_to(const char *target, const char *rel)
{
	assert_int_equal(symlink(target, at(rel)), 0);
}

static void freeze(const char *src, const char *out)
{
	struct gg_freeze_opts o = {.source = at(src), .output = at(out), .jobs = 1};
	struct gg_err err = {0};
	if (gg_image_freeze(&o, NULL, NULL, &err) != 0)
		fail_msg("freeze %s: %s", src, err.msg);
}

static int has(const char *image, const char *name)
{
	struct gg_err err = {0};
	int rc = gg_image_has_program(at(image), name, &err);
	if (rc < 0)
		fail_msg("%s: %s", name, err.msg);
	return rc;
}

/* A merged-/usr root: /bin -> usr/bin, and links of every kind. */
static void make_root(const char *r)
{
	char p[256];
#define R(x) (snprintf(p, sizeof p, "%s/%s", r, x), p)
	dir(R(""));
	dir(R("usr"));
	dir(R("usr/bin"));
	dir(R("usr/sbin"));
	dir(R("usr/lib"));
	dir(R("usr/bin/adir"));
	dir(R("opt"));
	put(R("usr/bin/tool"), "#!/bin/sh\n", 0755);
	put(R("usr/bin/data"), "not a program\n", 0644);
	link_to("usr/bin", R("bin"));
	link_to("../bin/tool", R("usr/sbin/up"));    /* relative, through .. */
	link_to("/usr/bin/tool", R("usr/sbin/abs")); /* absolute, inside the image */
	link_to("loop2", R("usr/sbin/loop1"));       /* a loop */
	link_to("loop1", R("usr/sbin/loop2"));
	link_to("/nowhere/tool", R("usr/sbin/dangling"));
	link_to("../../../../usr/bin/tool", R("opt/far")); /* .. above the root stays there */
#undef R
}

static void test_lookup(void **state)
{
	(void)state;
	make_root("r1");
	freeze("r1", "r1.sif");
	/* names on the default PATH, through /bin -> usr/bin and links */
	assert_int_equal(has("r1.sif", "tool"), 1);
	assert_int_equal(has("r1.sif", "up"), 1);
	assert_int_equal(has("r1.sif", "abs"), 1);
	assert_int_equal(has("r1.sif", "nosuch"), 0);
	assert_int_equal(has("r1.sif", "data"), 0); /* not executable */
	assert_int_equal(has("r1.sif", "adir"), 0); /* a directory */
	assert_int_equal(has("r1.sif", "loop1"), 0);
	assert_int_equal(has("r1.sif", "dangling"), 0);
	/* absolute paths, resolved as the kernel does */
	assert_int_equal(has("r1.sif", "/bin/tool"), 1);
	assert_int_equal(has("r1.sif", "/usr/lib/../bin/./tool"), 1);
	assert_int_equal(has("r1.sif", "/bin/../usr/bin/tool"), 0); /* .. of usr/bin: /usr */
	assert_int_equal(has("r1.sif", "/opt/far"), 1);
	assert_int_equal(has("r1.sif", "/usr/bin/tool/"), 0);
	assert_int_equal(has("r1.sif", "/usr/bin"), 0);
	assert_int_equal(has("r1.sif", "/"), 0);
	assert_int_equal(has("r1.sif", "/cvmfs/sft.cern.ch/run"), 0);
	/* relative to the job's directory: not in the image, cannot be known */
	assert_int_equal(has("r1.sif", "./run.sh"), 1);
	assert_int_equal(has("r1.sif", "bin/tool"), 1);
}

/* An image whose environment sets PATH may have a name elsewhere: not called missing;
 * an absolute path still is. One that sets only PYTHONPATH and the like: missing. */
static void test_env_path(void **state)
{
	(void)state;
	make_root("r2");
	dir("r2/.singularity.d");
	dir("r2/.singularity.d/env");
	put("r2/.singularity.d/env/90-environment.sh", "export PATH=/opt/conda/bin:$PATH\n", 0644);
	freeze("r2", "r2.sif");
	assert_int_equal(has("r2.sif", "python"), 1);
	assert_int_equal(has("r2.sif", "/opt/conda/bin/python"), 0);
	assert_int_equal(has("r2.sif", "tool"), 1);
	/* variables whose names end in PATH leave the search alone: still missing */
	make_root("r3");
	dir("r3/.singularity.d");
	dir("r3/.singularity.d/env");
	put("r3/.singularity.d/env/90-environment.sh",
	    "export PYTHONPATH=/opt/lib\nLD_LIBRARY_PATH=/opt/lib64; export LD_LIBRARY_PATH\n",
	    0644);
	freeze("r3", "r3.sif");
	assert_int_equal(has("r3.sif", "python"), 0);
	assert_int_equal(has("r3.sif", "tool"), 1);
}

static void test_errors(void **state)
{
	(void)state;
	struct gg_err err = {0};
	assert_true(gg_image_has_program(at("nothere.sif"), "sh", &err) < 0);
	assert_non_null(strstr(err.msg, "nothere.sif"));
	put("junk.sif", "not a SIF at all", 0644);
	assert_true(gg_image_has_program(at("junk.sif"), "sh", &err) < 0);
}

/* gg_job_program_check: submit's warning about a command the image lacks. */
static void test_job_program(void **state)
{
	(void)state;
	make_root("r4");
	freeze("r4", "r4.sif");
	char *cmd[] = {(char *)"tool", NULL};
	struct gg_job_spec q = {.image = at("r4.sif"), .cmd = cmd, .ncmd = 1};
	struct gg_err err = {0};
	assert_int_equal(gg_job_program_check(&q, &err), 0);
	cmd[0] = (char *)"nosuch";
	assert_int_equal(gg_job_program_check(&q, &err), GG_ENOTFOUND);
	assert_string_equal(err.msg, "the image has no 'nosuch' on its PATH (" GG_IMAGE_DEFAULT_PATH
				     "): the job will fail unless the site binds it in");
	cmd[0] = (char *)"/cvmfs/sft.cern.ch/run";
	assert_int_equal(gg_job_program_check(&q, &err), GG_ENOTFOUND);
	assert_string_equal(err.msg, "the image has no program '/cvmfs/sft.cern.ch/run': the job "
				     "will fail unless the site binds it in (as it may /cvmfs)");
	/* an image at the site (--image-url): nothing to look in */
	q.image_url = "root://se.example.org//images/r4.sif";
	assert_int_equal(gg_job_program_check(&q, &err), 0);
	/* an image that cannot be read: said, with why */
	q.image_url = NULL;
	q.image = at("nothere.sif");
	assert_true(gg_job_program_check(&q, &err) < 0);
	assert_int_not_equal(err.code, GG_ENOTFOUND);
	assert_non_null(
		strstr(err.msg, "could not look for '/cvmfs/sft.cern.ch/run' in the image: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_env_path),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_job_program),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
