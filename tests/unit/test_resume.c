/* request --resume (lib/engine/resume.c): which sessions can be resumed, each
 * refusal's kind and words; the spec that resumes one takes its image and names it
 * in the record a submission starts with; the CE is asked how a session ended only
 * when its record does not know yet; staging it makes nothing in a dry run
 * nor without a way to its CE. */
#include "unit.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_int.h" /* the spec's image_file, read back */

UNIT_TMPDIR("gg-resume")

static char stagedir[256];

static int setup(void **state)
{
	if (setup_tmp(state))
		return -1;
	char cache[128];
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", cache, 1);
	snprintf(stagedir, sizeof stagedir, "%s/gridgpu/stage", cache);
	return 0;
}

/* The entries of the stage directories (0 when there is none). */
static int staged(void)
{
	DIR *d = opendir(stagedir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* A session that ended by its idle limit and left a snapshot. */
static struct gg_record ended(void)
{
	return (struct gg_record){.name = "dev",
				  .kind = GG_REC_SESSION,
				  .state = GG_S_FINISHED,
				  .job_id = "j1",
				  .site = "tb",
				  .image = "/home/u/rootfs",
				  .gpus = 2,
				  .snapshot_size = 4096,
				  .snapshot_at = 1700000000};
}

static void refused(const struct gg_record *r, int code, const char *words)
{
	struct gg_err err = {0};
	assert_int_equal(gg_session_resumable(r, &err), code);
	assert_int_equal(err.code, code);
	if (!strstr(err.msg, words))
		fail_msg("'%s' does not say '%s'", err.msg, words);
	assert_null(strchr(err.msg, '\n'));
}

static void test_resumable(void **state)
{
	(void)state;
	struct gg_record r = ended();
	struct gg_err err = {0};
	assert_int_equal(gg_session_resumable(&r, &err), 0);
	r.state = GG_S_KILLED;
	assert_int_equal(gg_session_resumable(&r, &err), 0);
	r.state = GG_S_READY;
	refused(&r, GG_EUSAGE, "'gridgpu kill dev' ends it");
	r.state = GG_S_QUEUED;
	refused(&r, GG_EUSAGE, "session 'dev' is queued");
	r = ended();
	r.kind = GG_REC_JOB;
	refused(&r, GG_EUSAGE, "is a batch job");
	r = ended();
	r.image = NULL;
	refused(&r, GG_ENOTFOUND, "had no sandbox to resume");
	r.image = GG_IMAGE_NODE_MARK "/cvmfs/x.sif";
	refused(&r, GG_ENOTFOUND, "had no sandbox to resume");
	r = ended();
	r.snapshot_size = r.snapshot_at = 0;
	r.snapshot_error = "the sandbox's changes are larger than the site's limit";
	refused(&r, GG_ENOTFOUND,
		"ended without a snapshot of its sandbox: the sandbox's changes are larger");
	r.snapshot_error = NULL;
	refused(&r, GG_ENOTFOUND, "ended without a snapshot of its sandbox: nothing to resume");
}

/* Which records its CE is asked about first: a session that has not ended, or
 * ended without its snapshot or the launcher's reason for none; not a batch job. */
static void test_wants_sync(void **state)
{
	(void)state;
	struct gg_record r = ended();
	assert_false(gg_resume_wants_sync(&r));
	r.snapshot_size = r.snapshot_at = 0;
	assert_true(gg_resume_wants_sync(&r));
	r.snapshot_error = "too large";
	assert_false(gg_resume_wants_sync(&r));
	r = ended();
	r.state = GG_S_READY;
	assert_true(gg_resume_wants_sync(&r));
	r.kind = GG_REC_JOB;
	assert_false(gg_resume_wants_sync(&r));
}

/* The CEs the engine was asked to open (each refused: the CE cannot say). */
static int opened;

static int open_refused(void *ud, const char *endpoint, const struct gg_ce_auth *auth,
			struct gg_ce **ce, struct gg_err *err)
{
	(void)ud, (void)endpoint, (void)auth, (void)ce;
	opened++;
	return gg_err_set(err, GG_ENET, "connection refused");
}

static void quiet(void *ud, const struct gg_err *err, const char *what)
{
	(void)ud, (void)err, (void)what;
}

/* gg_engine_resumable asks the CE only when the record does not know how the
 * session ended; a CE that cannot say leaves the record as it was, and it is
 * checked as gg_session_resumable checks it. Without an engine (a dry run),
 * nothing is asked. */
static void test_engine_resumable(void **state)
{
	(void)state;
	char d[128];
	snprintf(d, sizeof d, "%s/records", tmpdir);
	struct gg_store *st = NULL;
	struct gg_engine *e = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(d, &st, NULL), 0);
	assert_int_equal(gg_engine_new(st, NULL, &e, NULL), 0);
	struct gg_engine_callbacks cb = {.size = sizeof cb, .fail = quiet, .open_ce = open_refused};
	assert_int_equal(gg_engine_set_callbacks(e, &cb, NULL), 0);
	setenv("BEARER_TOKEN", "eyJhbGciOiJub25lIn0.e30.unit-test-token", 1);
	struct gg_record r = ended();
	r.ce = "https://ce.example/arex";
	r.auth = "token";
	opened = 0;
	assert_int_equal(gg_engine_resumable(e, &r, &err), 0);
	assert_int_equal(opened, 0);
	r.state = GG_S_READY;
	assert_int_equal(gg_engine_resumable(NULL, &r, &err), GG_EUSAGE);
	assert_int_equal(opened, 0);
	assert_int_equal(gg_engine_resumable(e, &r, &err), GG_EUSAGE);
	assert_true(opened > 0);
	assert_non_null(strstr(err.msg, "'gridgpu kill dev' ends it"));
	assert_int_equal(r.state, GG_S_READY);
	gg_engine_free(e);
	gg_store_free(st);
}

/* A refused session leaves the spec as it was; an accepted one gives it its image,
 * and the record a submission starts with names it. */
static void test_spec_resume(void **state)
{
	(void)state;
	struct gg_session_spec *q = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_spec_new(&q, &err), 0);
	struct gg_record r = ended();
	r.state = GG_S_READY;
	assert_int_equal(gg_session_spec_set_resume(q, &r, &err), GG_EUSAGE);
	assert_null(gg_session_spec_resumed_from(q));
	assert_null(gg_session_spec_image(q));
	r = ended();
	assert_int_equal(gg_session_spec_set_resume(q, &r, &err), 0);
	r.name = "changed after"; /* the spec has its own copy */
	assert_string_equal(gg_session_spec_resumed_from(q), "dev");
	assert_string_equal(gg_session_spec_image(q), "/home/u/rootfs");
	struct gg_record r2 = ended();
	r2.name = "dev2";
	assert_int_equal(gg_session_spec_set_resume(q, &r2, &err), 0); /* the last one */
	assert_string_equal(gg_session_spec_resumed_from(q), "dev2");
	struct gg_submission s;
	gg_session_submission(&s, q, NULL, "https://ce.example/arex", "again", NULL, 0);
	assert_string_equal(s.rec.resumed_from, "dev2");
	assert_string_equal(s.rec.image, "/home/u/rootfs");
	json_t *j = gg_record_to_json(&s.rec);
	struct gg_record back = {0};
	assert_int_equal(gg_record_from_json(j, &back, &err), 0);
	assert_string_equal(back.resumed_from, "dev2");
	json_decref(j);
	gg_record_clear(&back);
	gg_record_clear(&s.rec);
	gg_session_spec_free(q);
}

/* A session not resumed has no resumed_from. */
static void test_not_resumed(void **state)
{
	(void)state;
	struct gg_session_spec *q = NULL;
	assert_int_equal(gg_session_spec_new(&q, NULL), 0);
	struct gg_submission s;
	gg_session_submission(&s, q, NULL, "https://ce.example/arex", NULL, NULL, 0);
	assert_null(s.rec.resumed_from);
	gg_record_clear(&s.rec);
	gg_session_spec_free(q);
}

/* A dry run fetches and writes nothing (the description shows what will be
 * staged); without an engine to reach the CE, nothing either, and an error. */
static void test_stage_resume(void **state)
{
	(void)state;
	struct gg_session_spec *q = NULL;
	struct gg_err err = {0};
	struct gg_record r = ended();
	assert_int_equal(gg_session_spec_new(&q, &err), 0);
	assert_int_equal(gg_session_spec_set_resume(q, &r, &err), 0);
	struct gg_session_stage *s = NULL;
	assert_int_equal(gg_session_stage(NULL, q, NULL, 1, &s, &err), 0);
	assert_non_null(strstr(q->image_file, "the sandbox of the session resumed"));
	assert_non_null(strstr(gg_session_stage_script(s), "gridgpu-enter"));
	assert_int_equal(staged(), 0);
	gg_session_stage_free(s);
	s = NULL;
	assert_int_equal(gg_session_stage(NULL, q, NULL, 0, &s, &err), GG_EFAIL);
	assert_null(s);
	assert_non_null(strstr(err.msg, "dev"));
	assert_int_equal(staged(), 0);
	gg_session_spec_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resumable),        cmocka_unit_test(test_wants_sync),
		cmocka_unit_test(test_engine_resumable), cmocka_unit_test(test_spec_resume),
		cmocka_unit_test(test_not_resumed),      cmocka_unit_test(test_stage_resume),
	};
	return cmocka_run_group_tests(tests, setup, teardown_tmp);
}
