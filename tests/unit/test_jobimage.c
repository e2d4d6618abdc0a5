/* submit's image (lib/engine/jobimage.c): a SIF as it is, a corrupt one said
 * so, another image frozen into the cache once and taken from it while it is
 * unchanged (the cache's name follows the input's metadata), node:/PATH.sif
 * the node's, and what cannot be frozen on the fly refused naming the freeze. */
#include "unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "engine/engine_int.h"

UNIT_TMPDIR("gg-jobimage")

static char cachedir[256], rootfs[256], sif[256];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The SIFs in the cache (-1: no cache directory). */
static int cached(void)
{
	DIR *d = opendir(cachedir);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static int setup(void **state)
{
	if (setup_tmp(state))
		return -1;
	char cache[128];
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", cache, 1);
	snprintf(cachedir, sizeof cachedir, "%s/gridgpu/images", cache);
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", tmpdir);
	char p[300];
	mkdir(rootfs, 0755);
	snprintf(p, sizeof p, "%s/bin", rootfs);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/bin/hello", rootfs);
	put(p, "#!/bin/sh\necho hello\n");
	chmod(p, 0755);
	snprintf(sif, sizeof sif, "%s/work.sif", tmpdir);
	struct gg_freeze_opts o = {.source = rootfs, .output = sif, .jobs = 1};
	struct gg_freeze_result res;
	return gg_image_freeze(&o, NULL, &res, NULL) == 0 ? 0 : -1;
}

static __attribute__((noinline)) char *key(const char *image)
{
	char *path = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_job_image_cache_path(image, 0, &path, &err), 0);
	return path;
}

/* The same input, the same name; a change deep in a directory, another; the
 * name says the input ("-rootfs.sif") under the cache directory; two inputs
 * holding the same do not share one. */
static void test_cache_key(void **state)
{
	(void)state;
	char *a = key(rootfs), *b = key(rootfs);
	assert_string_equal(a, b);
	assert_int_equal(strncmp(a, cachedir, strlen(cachedir)), 0);
	size_t n = strlen(a);
	assert_true(n > 11 && !strcmp(a + n - 11, "-rootfs.sif"));
	char p[300];
	snprintf(p, sizeof p, "%s/bin/hello", rootfs);
	struct timespec t[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	assert_int_equal(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
	char *c = key(rootfs);
	assert_string_not_equal(a, c);
	/* its source part (before the second '-') stays: the input is the same */
	const char *sa = strrchr(a, '/') + 1, *sc = strrchr(c, '/') + 1;
	assert_int_equal(strncmp(sa, sc, 17), 0);
	char copy[300];
	snprintf(copy, sizeof copy, "%s/copy.sif", tmpdir);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "cp -p '%s' '%s'", sif, copy);
	assert_int_equal(system(cmd), 0);
	char *k1 = key(sif), *k2 = key(copy);
	assert_string_not_equal(k1, k2);
	assert_int_equal(cached(), -1); /* make 0: no directory made */
	free(a), free(b), free(c), free(k1), free(k2);
}

static struct gg_job_spec *new_spec(void)
{
	struct gg_job_spec *q = NULL;
	assert_int_equal(gg_job_spec_new(&q, NULL), 0);
	return q;
}

/* A SIF goes as it is, with its partition's offset. */
static void test_prepare_sif(void **state)
{
	(void)state;
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	struct gg_err err = {0};
	assert_int_equal(gg_job_image_prepare(q, sif, 0, NULL, NULL, &how, NULL, &err), 0);
	assert_int_equal(how, GG_JOB_IMAGE_SIF);
	assert_string_equal(gg_job_spec_image(q), sif);
	assert_true(q->part_offset > 0);
	gg_job_spec_free(q);
}

/* A directory is frozen into the cache once; while it is unchanged, the next
 * takes the same SIF; once changed it is frozen again and the earlier SIF of
 * it goes. A dry run makes nothing. */
static void test_prepare_freeze_once(void **state)
{
	(void)state;
	char p[300];
	snprintf(p, sizeof p, "%s/bin/more", rootfs);
	put(p, "more\n");
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	struct gg_err err = {0};
	assert_int_equal(gg_job_image_prepare(q, rootfs, 1, NULL, NULL, &how, NULL, &err), 0);
	assert_int_equal(how, GG_JOB_IMAGE_TO_FREEZE);
	assert_true(cached() <= 0);
	struct gg_freeze_result res;
	assert_int_equal(gg_job_image_prepare(q, rootfs, 0, NULL, NULL, &how, &res, &err), 0);
	assert_int_equal(how, GG_JOB_IMAGE_FROZEN);
	assert_int_equal(res.files, 2);
	char *first = strdup(gg_job_spec_image(q));
	assert_int_equal(strncmp(first, cachedir, strlen(cachedir)), 0);
	assert_true(q->part_offset > 0);
	assert_int_equal(cached(), 1);
	struct stat st1, st2;
	assert_int_equal(stat(first, &st1), 0);
	assert_int_equal(gg_job_image_prepare(q, rootfs, 0, NULL, NULL, &how, &res, &err), 0);
	assert_int_equal(how, GG_JOB_IMAGE_CACHED);
	assert_string_equal(gg_job_spec_image(q), first);
	assert_int_equal(stat(first, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino); /* not made again */
	put(p, "changed\n");
	assert_int_equal(gg_job_image_prepare(q, rootfs, 0, NULL, NULL, &how, &res, &err), 0);
	assert_int_equal(how, GG_JOB_IMAGE_FROZEN);
	assert_string_not_equal(gg_job_spec_image(q), first);
	assert_int_equal(cached(), 1); /* the earlier one removed */
	assert_int_equal(access(first, F_OK), -1);
	free(first);
	gg_job_spec_free(q);
}

/* A SIF that is corrupt says so (and a .sif that is no SIF at all); nothing
 * is frozen of it. */
static void test_prepare_corrupt(void **state)
{
	(void)state;
	char bad[300];
	snprintf(bad, sizeof bad, "%s/bad.sif", tmpdir);
	put(bad, "this is not a SIF image, but its name says it is one...........\n");
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	struct gg_err err = {0};
	int before = cached();
	assert_int_equal(gg_job_image_prepare(q, bad, 0, NULL, NULL, &how, NULL, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "corrupt SIF"));
	assert_non_null(strstr(err.msg, "gridgpu verify"));
	assert_int_equal(cached(), before);
	assert_null(gg_job_spec_image(q));
	gg_job_spec_free(q);
}

/* node:/PATH.sif is the node's; any other image there, or a relative path,
 * is refused, naming the freeze to run; a local path that is not here too. */
static void test_prepare_node_and_refusals(void **state)
{
	(void)state;
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	struct gg_err err = {0};
	assert_int_equal(
		gg_job_image_prepare(q, "node:/cvmfs/x/dev.sif", 0, NULL, NULL, &how, NULL, &err),
		0);
	assert_int_equal(how, GG_JOB_IMAGE_NODE);
	assert_string_equal(gg_job_spec_image(q), "node:/cvmfs/x/dev.sif");
	gg_job_spec_free(q);
	q = new_spec();
	assert_int_equal(
		gg_job_image_prepare(q, "node:/data/dev.tar.gz", 0, NULL, NULL, &how, NULL, &err),
		GG_EUSAGE);
	assert_string_equal(err.msg,
			    "'node:/data/dev.tar.gz': a job runs a SIF, and an image on the node "
			    "cannot be frozen on the fly: copy it here and run 'gridgpu freeze "
			    "dev.tar.gz -o dev.sif', then submit dev.sif (or put a SIF on the "
			    "node: node:/PATH.sif)");
	assert_int_equal(
		gg_job_image_prepare(q, "node:data/x.sif", 0, NULL, NULL, &how, NULL, &err),
		GG_EUSAGE);
	assert_string_equal(err.msg,
			    "'node:data/x.sif': a path on the node must be absolute (node:/PATH)");
	assert_int_equal(gg_job_image_prepare(q, "/no/such.tar", 0, NULL, NULL, &how, NULL, &err),
			 GG_EUSAGE);
	assert_string_equal(err.msg, "'/no/such.tar': no such file here (an image on the "
				     "node: node:/no/such.tar)");
	char txt[300];
	snprintf(txt, sizeof txt, "%s/notes.txt", tmpdir);
	put(txt, "not an image\n");
	int before = cached();
	assert_int_equal(gg_job_image_prepare(q, txt, 0, NULL, NULL, &how, NULL, &err), GG_EUSAGE);
	char want[600];
	snprintf(want, sizeof want, "run 'gridgpu freeze %s -o notes.txt.sif'", txt);
	assert_non_null(strstr(err.msg, want));
	assert_int_equal(cached(), before);
	assert_null(gg_job_spec_image(q));
	/* without an error to fill (err NULL), the same refusal */
	assert_int_equal(gg_job_image_prepare(q, txt, 0, NULL, NULL, &how, NULL, NULL), GG_EUSAGE);
	struct gg_dev_gpu dev;
	assert_int_equal(gg_job_image_prepare(q, rootfs, 0, NULL, &dev, &how, NULL, &err),
			 GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--match-dev-gpu"));
	gg_job_spec_free(q);
}

/* A job on the node's SIF names it to the wrapper and uploads no image. */
static void test_describe_node_image(void **state)
{
	(void)state;
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	const char *cmd[] = {"true"};
	assert_int_equal(
		gg_job_image_prepare(q, "node:/cvmfs/x/dev.sif", 0, NULL, NULL, &how, NULL, NULL),
		0);
	assert_int_equal(gg_job_spec_set_command(q, cmd, 1, NULL), 0);
	assert_int_equal(gg_job_spec_set_wrapper(q, "/usr/libexec/gridgpu/batch-wrapper", NULL), 0);
	struct gg_record r = {.uid = (char *)"u1", .name = (char *)"j"};
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_job_describe(q, NULL, &r, &jd, &err), 0);
	char *x = NULL;
	assert_int_equal(gg_jd_xrsl(&jd, &x, &err), 0);
	assert_non_null(strstr(x, "\"/cvmfs/x/dev.sif\" \"--\" \"true\""));
	assert_null(strstr(x, "image.sif"));
	free(x);
	gg_jd_clear(&jd);
	gg_job_spec_free(q);
}

/* The cache that cannot be written (a full disk: here a file size limit)
 * is the local failure it is (kind io, exit 1), not a usage error telling
 * the user to freeze by hand; nothing is left in the cache. */
static void test_prepare_cache_write_fails(void **state)
{
	(void)state;
	char p[300];
	snprintf(p, sizeof p, "%s/bin/big", rootfs);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "%08d random-ish line %d\n", i * 7919 % 100003, i);
	fclose(f);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 8192;
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	struct gg_job_spec *q = new_spec();
	enum gg_job_image_how how;
	struct gg_err err = {0};
	struct gg_freeze_result res;
	int before = cached();
	int rc = gg_job_image_prepare(q, rootfs, 0, NULL, NULL, &how, &res, &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	assert_int_equal(rc, GG_EIO);
	assert_non_null(strstr(err.msg, "freezing"));
	assert_null(strstr(err.msg, "cannot be frozen on the fly"));
	assert_int_equal(cached(), before);
	gg_job_spec_free(q);
	unlink(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_key),
		cmocka_unit_test(test_prepare_sif),
		cmocka_unit_test(test_prepare_freeze_once),
		cmocka_unit_test(test_prepare_corrupt),
		cmocka_unit_test(test_prepare_node_and_refusals),
		cmocka_unit_test(test_describe_node_image),
		cmocka_unit_test(test_prepare_cache_write_fails),
	};
	return cmocka_run_group_tests(tests, setup, teardown_tmp);
}
