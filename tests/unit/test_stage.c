/* What request --image stages with a session (lib/engine/stage.c): a SIF as it
 * is, another image frozen into a SIF first, a path on the node not staged;
 * the enter script written beside them; every file removed when the stage is
 * freed, and nothing made by a dry run or a failure. */
#include "unit.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "engine/engine_int.h" /* the spec's enter and image_file, read back */

UNIT_TMPDIR("gg-stage")

static char stagedir[256], rootfs[256], sif[256];
static char notes[1024];
static int cancel_now;

static void note(void *ud, enum gg_note kind, const char *msg)
{
	(void)ud, (void)kind;
	snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "%s\n", msg);
}

static int cancel(void *ud)
{
	(void)ud;
	return cancel_now;
}

static struct gg_engine E = {.note = note, .cancel = cancel};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The files under the stage directory (-1 when it is not there), counted to
 * the depth of two. */
static int staged_files(void)
{
	DIR *d = opendir(stagedir);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[512];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", stagedir, de->d_name);
		DIR *sub = stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(p) : NULL;
		for (struct dirent *e2; sub && (e2 = readdir(sub));)
			n += strcmp(e2->d_name, ".") && strcmp(e2->d_name, "..");
		n += !sub;
		if (sub)
			closedir(sub);
	}
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *b = calloc(1, 65536);
	size_t n = fread(b, 1, 65535, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

static int setup(void **state)
{
	if (setup_tmp(state))
		return -1;
	char cache[128];
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", cache, 1);
	snprintf(stagedir, sizeof stagedir, "%s/gridgpu/stage", cache);
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", tmpdir);
	char p[300];
	mkdir(rootfs, 0755);
	snprintf(p, sizeof p, "%s/bin", rootfs);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/bin/hello", rootfs);
	put(p, "#!/bin/sh\necho hello\n");
	snprintf(sif, sizeof sif, "%s/work.sif", tmpdir);
	struct gg_freeze_opts o = {.source = rootfs, .output = sif, .jobs = 1};
	struct gg_freeze_result res;
	return gg_image_freeze(&o, NULL, &res, NULL) == 0 ? 0 : -1;
}

static int each(void **state)
{
	(void)state;
	notes[0] = '\0';
	cancel_now = 0;
	return 0;
}

/* The squashfs offset of a SIF (0 when it is not one). */
static int64_t sif_part(const char *path)
{
	struct gg_sif *s;
	if (gg_sif_open(path, &s, NULL) < 0)
		return 0;
	const struct gg_sif_descr *d = gg_sif_primary(s);
	int64_t off = d ? d->offset : 0;
	gg_sif_close(s);
	return off;
}

/* A spec as a front end makes one: the image, GPUs, a --bind. */
static struct gg_session_spec *spec(const char *image, int gpus, const char *bind)
{
	struct gg_session_spec *q = NULL;
	struct gg_jd_resources res = {.walltime = 3600, .gpus = gpus};
	assert_int_equal(gg_session_spec_new(&q, NULL), 0);
	assert_int_equal(gg_session_spec_set_image(q, image, NULL), 0);
	assert_int_equal(gg_session_spec_set_resources(q, &res, NULL), 0);
	if (bind)
		assert_int_equal(gg_session_spec_add_bind(q, bind, NULL), 0);
	return q;
}

/* A SIF goes as it is; the enter script names the staged image and its
 * partition, written (0600) where q->enter says, removed with the stage. */
static void test_stage_sif(void **state)
{
	(void)state;
	struct gg_session_spec *q = spec(sif, 0, NULL);
	struct gg_session_stage *s = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), 0);
	assert_string_equal(q->image_file, sif);
	assert_non_null(q->enter);
	assert_int_equal(strncmp(q->enter, stagedir, strlen(stagedir)), 0);
	struct stat st;
	assert_int_equal(stat(q->enter, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char *text = slurp(q->enter);
	assert_non_null(text);
	assert_string_equal(text, gg_session_stage_script(s));
	assert_non_null(strstr(text, "\nIMAGE='gridgpu-image.sif'\n"));
	char off[64];
	snprintf(off, sizeof off, "\nOFFSET='%lld'\n", (long long)sif_part(sif));
	assert_true(sif_part(sif) > 0);
	assert_non_null(strstr(text, off));
	free(text);
	assert_int_equal(staged_files(), 1); /* the script; no SIF made */
	assert_string_equal(notes, "");
	gg_session_stage_free(s);
	assert_int_equal(staged_files(), 0);
	gg_session_spec_free(q);
}

/* A directory is frozen into a SIF first (and says so); both files go with
 * the stage. */
static void test_stage_freeze(void **state)
{
	(void)state;
	struct gg_session_spec *q = spec(rootfs, 1, NULL);
	struct gg_session_stage *s = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), 0);
	char want[512];
	snprintf(want, sizeof want, "making a SIF of %s to stage with the session\n", rootfs);
	assert_string_equal(notes, want);
	assert_non_null(q->image_file);
	assert_int_equal(strncmp(q->image_file, stagedir, strlen(stagedir)), 0);
	assert_true(sif_part(q->image_file) > 0);
	assert_non_null(strstr(gg_session_stage_script(s), "\nGPUS='1'\n"));
	assert_int_equal(staged_files(), 2);
	gg_session_stage_free(s);
	assert_int_equal(staged_files(), 0);
	gg_session_spec_free(q);
}

/* Interrupted while freezing: GG_EINTR, nothing left behind. */
static void test_stage_cancel(void **state)
{
	(void)state;
	struct gg_session_spec *q = spec(rootfs, 0, NULL);
	struct gg_session_stage *s = NULL;
	struct gg_err err = {0};
	cancel_now = 1;
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), GG_EINTR);
	assert_null(s);
	char want[300];
	snprintf(want, sizeof want, "--image %s: ", rootfs);
	assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
	assert_int_equal(staged_files(), 0);
	gg_session_spec_free(q);
}

/* node:/PATH is the node's: not staged, named in the script without the
 * marking; node: with a relative path is refused. */
static void test_stage_node_path(void **state)
{
	(void)state;
	struct gg_session_spec *q = spec("node:/cvmfs/unpacked.example/img.sif", 1, NULL);
	struct gg_session_stage *s = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), 0);
	assert_null(q->image_file);
	assert_non_null(strstr(gg_session_stage_script(s),
			       "\nIMAGE='/cvmfs/unpacked.example/img.sif'\nOFFSET='0'\n"));
	assert_int_equal(staged_files(), 1); /* the script only */
	gg_session_stage_free(s);
	gg_session_spec_free(q);
	q = spec("node:cvmfs/img.sif", 0, NULL);
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), GG_EUSAGE);
	assert_null(s);
	assert_string_equal(err.msg, "--image 'node:cvmfs/img.sif': a path on the node must be "
				     "absolute (node:/PATH)");
	assert_int_equal(staged_files(), 0);
	gg_session_spec_free(q);
}

/* A path that is not here (a typo, or the node's without the marking) is
 * refused before anything is made, saying how to name the node's; so is a
 * site's default image, the fix being the site's. A dry run likewise. */
static void test_stage_missing_refused(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_session_stage *s = NULL;
	struct gg_session_spec *q = spec("/no/such.tar", 1, NULL);
	for (int dry = 0; dry < 2; dry++) {
		err = (struct gg_err){0};
		assert_int_equal(gg_session_stage(dry ? NULL : &E, q, NULL, dry, &s, &err),
				 GG_EUSAGE);
		assert_null(s);
		assert_null(q->enter);
		assert_string_equal(err.msg, "--image '/no/such.tar': no such file here (an "
					     "image on the node: --image node:/no/such.tar)");
		assert_int_equal(staged_files() <= 0, 1);
	}
	gg_session_spec_free(q);
	q = spec("no-such.sif", 0, NULL);
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), GG_EUSAGE);
	assert_null(s);
	assert_string_equal(err.msg, "--image 'no-such.sif': no such file here");
	gg_session_spec_free(q);
	struct gg_site site = {.name = (char *)"tb", .image = (char *)"/cvmfs/x.sif"};
	q = spec("/cvmfs/x.sif", 0, NULL);
	assert_int_equal(gg_session_stage(&E, q, &site, 0, &s, &err), GG_EUSAGE);
	assert_null(s);
	assert_string_equal(err.msg,
			    "site 'tb': image '/cvmfs/x.sif' is not on this machine "
			    "(on the node? 'gridgpu site set tb image node:/cvmfs/x.sif')");
	assert_int_equal(staged_files() <= 0, 1);
	assert_string_equal(notes, "");
	gg_session_spec_free(q);
}

/* A dry run freezes and writes nothing; the script is there to show. A bind
 * the script cannot take is refused, nothing left either. */
static void test_stage_dry_run_and_bad_bind(void **state)
{
	(void)state;
	struct gg_session_spec *q = spec(rootfs, 0, NULL);
	struct gg_session_stage *s = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_stage(NULL, q, NULL, 1, &s, &err), 0);
	assert_string_equal(q->enter, "(gridgpu-enter, below)");
	assert_string_equal(q->image_file, rootfs);
	assert_non_null(strstr(gg_session_stage_script(s), "gridgpu-enter"));
	assert_int_equal(staged_files() <= 0, 1);
	gg_session_stage_free(s);
	gg_session_spec_free(q);
	q = spec(sif, 0, "relative/path");
	assert_int_equal(gg_session_stage(&E, q, NULL, 0, &s, &err), GG_EUSAGE);
	assert_null(s);
	assert_int_equal(staged_files() <= 0, 1);
	gg_session_spec_free(q);
}

/* Two stages at once (a front end that stages sessions before it submits
 * them): each has its own files, and freeing one leaves the other's. */
static void test_stage_two_at_once(void **state)
{
	(void)state;
	struct gg_session_spec *q1 = spec(rootfs, 0, NULL), *q2 = spec(rootfs, 0, "/data");
	struct gg_session_stage *s1 = NULL, *s2 = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_stage(&E, q1, NULL, 0, &s1, &err), 0);
	assert_int_equal(gg_session_stage(&E, q2, NULL, 0, &s2, &err), 0);
	assert_string_not_equal(q1->enter, q2->enter);
	assert_string_not_equal(q1->image_file, q2->image_file);
	char *t1 = slurp(q1->enter);
	assert_non_null(t1);
	assert_string_equal(t1, gg_session_stage_script(s1));
	free(t1);
	gg_session_stage_free(s1);
	char *t2 = slurp(q2->enter);
	assert_non_null(t2);
	assert_string_equal(t2, gg_session_stage_script(s2));
	free(t2);
	assert_true(sif_part(q2->image_file) > 0);
	gg_session_stage_free(s2);
	assert_int_equal(staged_files(), 0);
	gg_session_spec_free(q1);
	gg_session_spec_free(q2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_stage_sif, each),
		cmocka_unit_test_setup(test_stage_freeze, each),
		cmocka_unit_test_setup(test_stage_cancel, each),
		cmocka_unit_test_setup(test_stage_node_path, each),
		cmocka_unit_test_setup(test_stage_missing_refused, each),
		cmocka_unit_test_setup(test_stage_dry_run_and_bad_bind, each),
		cmocka_unit_test_setup(test_stage_two_at_once, each),
	};
	return cmocka_run_group_tests(tests, setup, teardown_tmp);
}
