/* Unit tests of lib/store and lib/node: records, the store (with concurrent writers), the
 * launcher's session file, the state machine. */
/* builds hostile JSON by hand: jansson's constructors (core/json.h) */
#define GG_JSON_RAW
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gridgpu/engine.h"
#include "gridgpu/image.h"
#include "store/store.h"
#include "node/sshview.h"
#include "engine/sync.h"

static char dir[64];
static const char KEY[] =
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C";

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/gg-unit-store.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return unit_rmtree(dir);
}

static void test_record_json(void **state)
{
	(void)state;
	struct gg_record r = {.kind = GG_REC_SESSION,
			      .state = GG_S_READY,
			      .gpus = 2,
			      .port = 22001,
			      .walltime = 3600,
			      .memory = 1ull << 34};
	r.name = strdup("gla-1");
	r.uid = strdup("0123456789ab");
	r.host_key = strdup(KEY);
	json_t *j = gg_record_to_json(&r);
	struct gg_record b;
	struct gg_err err = {0};
	assert_int_equal(gg_record_from_json(j, &b, &err), 0);
	assert_string_equal(b.name, "gla-1");
	assert_int_equal(b.state, GG_S_READY);
	assert_int_equal(b.gpus, 2);
	assert_int_equal(b.port, 22001);
	assert_true(b.memory == 1ull << 34);
	assert_string_equal(b.host_key, KEY);
	struct gg_record c;
	assert_int_equal(gg_record_copy(&c, &b), 0);
	assert_ptr_not_equal(c.name, b.name);
	assert_string_equal(c.uid, "0123456789ab");
	gg_record_clear(&c);
	gg_record_clear(&b);
	/* corrupt records are refused with a reason */
	json_object_set_new(j, "state", json_string("dancing"));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_object_set_new(j, "state", json_string("ready"));
	json_object_set_new(j, "port", json_string("22"));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_object_set_new(j, "port", json_integer(-1));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_object_set_new(j, "port", json_integer(22));
	json_object_set_new(j, "name", json_string("../x"));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_object_set_new(j, "name", json_string("ok"));
	json_object_set_new(j, "version", json_integer(2));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_decref(j);
	gg_record_clear(&r);
	assert_true(gg_record_name_valid("a"));
	assert_false(gg_record_name_valid("1a"));
	assert_false(gg_record_name_valid("a b"));
}

/* Every string of a record holding bytes that are not UTF-8 and control
 * characters is written, read back as the same bytes, through the JSON and
 * through the store's file: nothing dropped (one '\xff' in an output's URL
 * used to remove every output at storage from the record). */
static void test_record_bytes(void **state)
{
	(void)state;
	static const char hostile[] = "a\xff\x1b[2J\r\n\\x41\\\xc2\x9b\xe2\x80\xae\x7f\xc0z";
	struct gg_record r = {.kind = GG_REC_JOB, .state = GG_S_FINISHED};
#define X(f) r.f = strdup(hostile);
	GG_RECORD_STR_FIELDS(X)
#undef X
	free(r.name);
	r.name = strdup("job-1");
	free(r.storage_outputs);
	r.storage_outputs = strdup("a.out root://se//data/a\xff.out\nb.out root://se//data/b.out");
	json_t *j = gg_record_to_json(&r);
	assert_non_null(j);
	char *text = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	assert_non_null(text);
	j = json_loads(text, 0, NULL);
	free(text);
	struct gg_record b;
	struct gg_err err = {0};
	assert_int_equal(gg_record_from_json(j, &b, &err), 0);
#define X(f) assert_non_null(b.f), assert_string_equal(b.f, r.f);
	GG_RECORD_STR_FIELDS(X)
#undef X
	struct gg_storage_output *so;
	size_t n;
	assert_int_equal(gg_storage_outputs(&b, &so, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(so[0].url, "root://se//data/a\xff.out");
	gg_storage_outputs_free(so, n);
	gg_record_clear(&b);
	/* a bad escape in a value named escaped is an unreadable record, not a guess */
	json_object_set_new(j, "error", json_string("\\q"));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_decref(j);
	/* and through the store's file */
	struct gg_store *st;
	assert_int_equal(gg_store_open(dir, &st, &err), 0);
	assert_int_equal(gg_store_save(st, &r, &err), 0);
	assert_int_equal(gg_store_load(st, "job-1", &b, &err), 0);
#define X(f) assert_non_null(b.f), assert_string_equal(b.f, r.f);
	GG_RECORD_STR_FIELDS(X)
#undef X
	assert_int_equal(gg_store_remove(st, "job-1", &err), 0);
	gg_store_free(st);
	gg_record_clear(&b);
	gg_record_clear(&r);
}

static void test_store(void **state)
{
	(void)state;
	struct gg_store *st;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(dir, &st, &err), 0);
	struct gg_record r = {.kind = GG_REC_SESSION};
	assert_int_equal(gg_store_create(st, &r, "gla", &err), 0);
	assert_string_equal(r.name, "gla-1");
	gg_record_clear(&r);
	r = (struct gg_record){.kind = GG_REC_SESSION};
	assert_int_equal(gg_store_create(st, &r, "gla", &err), 0);
	assert_string_equal(r.name, "gla-2");
	gg_record_clear(&r);
	/* a name in use: a live owner is to be killed and cleaned, an ended one cleaned */
	r = (struct gg_record){.kind = GG_REC_JOB, .name = strdup("gla-1")};
	assert_int_equal(gg_store_create(st, &r, "gla", &err), GG_EUSAGE);
	assert_string_equal(err.msg,
			    "a session named 'gla-1' is requested: pick another --name, or "
			    "end it ('gridgpu kill gla-1') and forget it ('gridgpu clean "
			    "gla-1') first");
	gg_record_clear(&r);
	struct gg_record ended;
	assert_int_equal(gg_store_load(st, "gla-1", &ended, &err), 0);
	ended.state = GG_S_KILLED;
	assert_int_equal(gg_store_save(st, &ended, &err), 0);
	gg_record_clear(&ended);
	r = (struct gg_record){.kind = GG_REC_JOB, .name = strdup("gla-1")};
	assert_int_equal(gg_store_create(st, &r, "gla", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "a session or job named 'gla-1' exists already: pick another "
				     "--name, or 'gridgpu clean gla-1' first");
	gg_record_clear(&r);
	/* records are 0600 */
	char path[128];
	struct stat sb;
	snprintf(path, sizeof path, "%s/gla-1.json", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(gg_store_load(st, "nosuch", &r, &err), GG_ENOTFOUND);
	assert_int_equal(gg_store_load(st, "../etc/passwd", &r, &err), GG_ENOTFOUND);
	/* a corrupt record is reported and skipped by list */
	snprintf(path, sizeof path, "%s/bad.json", dir);
	FILE *f = fopen(path, "w");
	fputs("{\"version\":1,", f);
	fclose(f);
	assert_int_equal(gg_store_load(st, "bad", &r, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "corrupt"));
	struct gg_record *recs;
	size_t n, bad;
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(bad, 1);
	gg_records_free(recs, n);
	unlink(path);
	assert_int_equal(gg_store_remove(st, "gla-2", &err), 0);
	assert_int_equal(gg_store_remove(st, "gla-2", &err), GG_ENOTFOUND);
	gg_store_free(st);
	/* a store others can write to is refused */
	chmod(dir, 0777);
	assert_int_equal(gg_store_open(dir, &st, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "chmod 700"));
	chmod(dir, 0700);
}

static int bump(struct gg_record *r, void *ud)
{
	(void)ud;
	r->cpus++;
	return 0;
}

/* Many processes updating one record and creating records at once: no update
 * is lost, no record is corrupt, every name is unique. */
/* A record found by its CE job id or the job URL arcstat prints (failed
 * before: gg_store_find did not exist, and 'kill ID' said no such session). */
static void test_store_find_job(void **state)
{
	(void)state;
	char sub[128];
	snprintf(sub, sizeof sub, "%s/find", dir);
	struct gg_store *st;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(sub, &st, &err), 0);
	struct gg_record r = {.kind = GG_REC_JOB,
			      .name = strdup("j1"),
			      .ce = strdup("https://CE.example.org:443/arex"),
			      .job_id = strdup("aBc123")};
	assert_int_equal(gg_store_create(st, &r, "j", &err), 0);
	gg_record_clear(&r);
	const char *good[] = {
		"j1", "aBc123", "https://ce.example.org:443/arex/rest/1.0/jobs/aBc123",
		"https://ce.example.org/arex/aBc123/", "gsiftp://ce.example.org:2811/jobs/aBc123"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(gg_store_find(st, good[i], &r, &err), 0);
		assert_string_equal(r.name, "j1");
		gg_record_clear(&r);
	}
	const char *bad[] = {"abc123",
			     "aBc12",
			     "xaBc123",
			     "https://other.example.org/arex/rest/1.0/jobs/aBc123",
			     "https://ce.example.org/arex/rest/1.0/jobs/xaBc123",
			     "https://x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(gg_store_find(st, bad[i], &r, &err), GG_ENOTFOUND);
	/* the same job under two names: both named, none guessed */
	r = (struct gg_record){.kind = GG_REC_JOB,
			       .name = strdup("j2"),
			       .ce = strdup("https://ce.example.org/arex"),
			       .job_id = strdup("aBc123")};
	assert_int_equal(gg_store_create(st, &r, "j", &err), 0);
	gg_record_clear(&r);
	assert_int_equal(gg_store_find(st, "aBc123", &r, &err), GG_EUSAGE);
	assert_string_equal(err.msg, "'aBc123' is the CE job of j1, j2: name one");
	gg_store_free(st);
}

static void test_store_concurrent(void **state)
{
	(void)state;
	struct gg_store *st;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(dir, &st, &err), 0);
	struct gg_record r = {.kind = GG_REC_SESSION, .name = strdup("counter")};
	assert_int_equal(gg_store_create(st, &r, "x", &err), 0);
	gg_record_clear(&r);
	enum { PROCS = 20, ROUNDS = 10 };
	for (int p = 0; p < PROCS; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct gg_store *s2;
			if (gg_store_open(dir, &s2, NULL) < 0)
				_exit(1);
			for (int i = 0; i < ROUNDS; i++) {
				if (gg_store_update(s2, "counter", bump, NULL, NULL, NULL) < 0)
					_exit(2);
				struct gg_record nr = {.kind = GG_REC_JOB};
				if (gg_store_create(s2, &nr, "job", NULL) < 0)
					_exit(3);
				gg_record_clear(&nr);
			}
			gg_store_free(s2);
			_exit(0);
		}
	}
	for (int p = 0; p < PROCS; p++) {
		int status;
		wait(&status);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(gg_store_load(st, "counter", &r, &err), 0);
	assert_int_equal(r.cpus, PROCS * ROUNDS);
	gg_record_clear(&r);
	struct gg_record *recs;
	size_t n, bad;
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	assert_int_equal(bad, 0);
	size_t jobs = 0;
	for (size_t i = 0; i < n; i++)
		jobs += recs[i].kind == GG_REC_JOB;
	assert_int_equal(jobs, PROCS * ROUNDS);
	gg_records_free(recs, n);
	gg_store_free(st);
}

static int set_gpus(struct gg_record *r, void *ud)
{
	r->gpus = *(int *)ud;
	return 0;
}

/* The rows cache: used only while the store is unchanged. */
static void test_rows_cache(void **state)
{
	(void)state;
	char sub[128], cache[140];
	snprintf(sub, sizeof sub, "%s/rows", dir);
	snprintf(cache, sizeof cache, "%s.cache", sub);
	struct gg_store *st;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(sub, &st, &err), 0);
	for (int i = 0; i < 3; i++) {
		struct gg_record r = {.kind = i ? GG_REC_JOB : GG_REC_SESSION, .gpus = i};
		assert_int_equal(gg_store_create(st, &r, "r", &err), 0);
		gg_record_clear(&r);
	}
	/* a store changed within the last second is not cached */
	struct gg_record_row *rows;
	size_t n, bad;
	assert_int_equal(gg_store_rows(st, &rows, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	gg_record_rows_free(rows, n);
	assert_int_equal(access(cache, F_OK), -1);
	/* an old one is */
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, sub, old, 0), 0);
	assert_int_equal(gg_store_rows(st, &rows, &n, &bad, &err), 0);
	gg_record_rows_free(rows, n);
	assert_int_equal(access(cache, F_OK), 0);
	assert_int_equal(gg_store_rows(st, &rows, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].name, "r-1");
	assert_int_equal(rows[0].kind, GG_REC_SESSION);
	assert_int_equal(rows[2].gpus, 2);
	json_t *j = json_loads(rows[1].json, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "r-2");
	json_decref(j);
	gg_record_rows_free(rows, n);
	/* an update changes the directory: the cache is not used */
	int g = 7;
	assert_int_equal(gg_store_update(st, "r-3", set_gpus, &g, NULL, &err), 0);
	assert_int_equal(gg_store_rows(st, &rows, &n, &bad, &err), 0);
	assert_int_equal(rows[2].gpus, 7);
	gg_record_rows_free(rows, n);
	/* a corrupt cache is ignored */
	assert_int_equal(utimensat(AT_FDCWD, sub, old, 0), 0);
	assert_int_equal(gg_file_write_atomic(
				 cache, "gridgpu-records-cache 2 1000000000000000000 0\nbroken\n",
				 50, 0600, &err),
			 0);
	assert_int_equal(gg_store_rows(st, &rows, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	gg_record_rows_free(rows, n);
	gg_store_free(st);
}

/* gg_store_list reads the snapshot while the store is as it was made from
 * (issue 52: 10,000 records in one read), and the files again once anything
 * changed the store: a record rewritten in place (which no command does: the
 * store renames) is not seen while the snapshot holds, an update is at once. */
static void test_list_snapshot(void **state)
{
	(void)state;
	char sub[128], cache[140], file[160];
	snprintf(sub, sizeof sub, "%s/snap", dir);
	snprintf(cache, sizeof cache, "%s.cache", sub);
	snprintf(file, sizeof file, "%s/s-2.json", sub);
	struct gg_store *st;
	struct gg_err err = {0};
	assert_int_equal(gg_store_open(sub, &st, &err), 0);
	for (int i = 0; i < 3; i++) {
		struct gg_record r = {.kind = GG_REC_JOB, .gpus = i};
		assert_int_equal(gg_store_create(st, &r, "s", &err), 0);
		gg_record_clear(&r);
	}
	struct gg_record *recs;
	size_t n, bad;
	/* changed within the last second: read, not kept */
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	gg_records_free(recs, n);
	assert_int_equal(access(cache, F_OK), -1);
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	assert_int_equal(utimensat(AT_FDCWD, sub, old, 0), 0);
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	gg_records_free(recs, n);
	assert_int_equal(access(cache, F_OK), 0);
	/* the file of s-2 changed behind the store's back: the snapshot holds */
	struct gg_record two = {0};
	assert_int_equal(gg_store_load(st, "s-2", &two, &err), 0);
	two.gpus = 5;
	json_t *j = gg_record_to_json(&two);
	assert_int_equal(json_dump_file(j, file, JSON_COMPACT), 0);
	json_decref(j);
	assert_int_equal(utimensat(AT_FDCWD, sub, old, 0), 0);
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(recs[1].name, "s-2");
	assert_int_equal(recs[1].gpus, 1);
	assert_int_equal(recs[2].gpus, 2);
	gg_records_free(recs, n);
	/* an update through the store reads the file, and changes the directory */
	int g = 7;
	assert_int_equal(gg_store_update(st, "s-3", set_gpus, &g, NULL, &err), 0);
	assert_int_equal(gg_store_list(st, &recs, &n, &bad, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(recs[1].gpus, 5);
	assert_int_equal(recs[2].gpus, 7);
	gg_records_free(recs, n);
	gg_record_clear(&two);
	gg_store_free(st);
}

static int parse_li(const char *text, struct gg_launch_info *li)
{
	struct gg_err err = {0};
	return gg_launch_info_parse(text, strlen(text), li, &err);
}

static void test_launch_info(void **state)
{
	(void)state;
	struct gg_launch_info li;
	char buf[1024];
	snprintf(
		buf, sizeof buf,
		"{\"version\":1,\"launcher\":\"0.1.0\",\"state\":\"ready\",\"node\":\"wn01.example\","
		"\"port\":22001,\"user\":\"gguser\",\"host_key\":\"%s\",\"started\":100,"
		"\"connect_deadline\":1300,\"idle_limit\":0,\"last_activity\":100}",
		KEY);
	assert_int_equal(parse_li(buf, &li), 0);
	assert_string_equal(li.node, "wn01.example");
	assert_int_equal(li.port, 22001);
	assert_int_equal(li.deadline_at, 1300);
	assert_int_equal(li.idle_since, 0);
	assert_null(li.active_reason);
	gg_launch_info_clear(&li);
	/* what the launcher last saw: why active, or idle since when */
	assert_int_equal(parse_li("{\"state\":\"starting\",\"idle_since\":0,"
				  "\"active_reason\":\"process python3\"}",
				  &li),
			 0);
	assert_string_equal(li.active_reason, "process python3");
	gg_launch_info_clear(&li);
	assert_int_equal(
		parse_li("{\"state\":\"starting\",\"idle_since\":1700,\"active_reason\":\"\"}",
			 &li),
		0);
	assert_int_equal(li.idle_since, 1700);
	assert_null(li.active_reason);
	gg_launch_info_clear(&li);
	/* a reason that is not a short printable phrase is left out */
	assert_int_equal(
		parse_li("{\"state\":\"starting\",\"active_reason\":\"a\\u001b[2Jb\"}", &li), 0);
	assert_null(li.active_reason);
	gg_launch_info_clear(&li);
	assert_int_equal(parse_li("{\"state\":\"starting\",\"idle_since\":-1}", &li), GG_EPROTO);
	/* starting: no connection details needed */
	assert_int_equal(parse_li("{\"state\":\"starting\"}", &li), 0);
	gg_launch_info_clear(&li);
	/* malformed ones are refused */
	assert_int_equal(parse_li("{\"state\":\"ready\"", &li), GG_EPROTO);
	assert_int_equal(parse_li("[]", &li), GG_EPROTO);
	assert_int_equal(parse_li("{\"state\":\"ready\",\"node\":\"x\",\"port\":0,\"user\":\"u\","
				  "\"host_key\":\"ssh-ed25519 AAAA\"}",
				  &li),
			 GG_EPROTO);
	snprintf(buf, sizeof buf,
		 "{\"state\":\"ready\",\"node\":\"x; rm -rf /\",\"port\":22,\"user\":\"u\","
		 "\"host_key\":\"%s\"}",
		 KEY);
	assert_int_equal(parse_li(buf, &li), GG_EPROTO);
	snprintf(buf, sizeof buf,
		 "{\"state\":\"ready\",\"node\":\"x\",\"port\":22,\"user\":\"-oProxyCommand=x\","
		 "\"host_key\":\"%s\"}",
		 KEY);
	assert_int_equal(parse_li(buf, &li), GG_EPROTO);
	struct gg_err err = {0};
	const char *badkey = "{\"state\":\"ready\",\"node\":\"x\",\"port\":22,\"user\":\"u\","
			     "\"host_key\":\"ssh-ed25519 not-base64!\"}";
	assert_int_equal(gg_launch_info_parse(badkey, strlen(badkey), &li, &err), GG_EPROTO);
	assert_non_null(strstr(err.msg, "host key"));
	assert_int_equal(parse_li("{\"state\":\"ready\",\"started\":-5}", &li), GG_EPROTO);
}

/* A good value of each member of the session file, for
 * test_session_file_schema (NULL: no value here for it). */
static json_t *session_file_value(const char *name)
{
	static const char *const strs[][2] = {
		{"launcher", "0.1.0"},    {"reason", ""},
		{"node", "wn01.example"}, {"user", "gguser"},
		{"host_key", KEY},        {"sessiondir", "/s/d"},
		{"container", "none"},    {"cuda_visible_devices", "0,1"},
		{"batch_job_id", "42"},   {"active_reason", "ssh"},
		{"state", "ready"},       {"snapshot_error", ""},
	};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (!strcmp(strs[i][0], name))
			return json_string(strs[i][1]);
	static const char *const ints[] = {
		"version",       "port",        "started",       "connect_deadline", "idle_limit",
		"last_activity", "first_login", "logins",        "connections",      "updated",
		"walltime",      "idle_since",  "snapshot_size", "snapshot_at",
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if (!strcmp(ints[i], name))
			return json_integer(strcmp(name, "port") ? 1 : 22001);
	return NULL;
}

/* Does the schema require NAME of a file in STATE (its "required", and its
 * allOf's if state is X then required)? */
static int schema_requires(json_t *schema, const char *state, const char *name)
{
	json_t *req = json_object_get(schema, "required"), *v, *cond;
	size_t i, k;
	json_array_foreach (req, i, v)
		if (!strcmp(json_string_value(v), name))
			return 1;
	json_array_foreach (json_object_get(schema, "allOf"), k, cond) {
		json_t *when = json_object_get(
			json_object_get(json_object_get(json_object_get(cond, "if"), "properties"),
					"state"),
			"const");
		assert_non_null(when);
		if (strcmp(json_string_value(when), state))
			continue;
		json_array_foreach (json_object_get(json_object_get(cond, "then"), "required"), i,
				    v)
			if (!strcmp(json_string_value(v), name))
				return 1;
	}
	return 0;
}

/* The schema of the session file (doc/json/session-file.schema.json, which
 * the e2e tests validate the launcher's files against) and the client's parser
 * agree: a file with every member the schema names parses in each state the
 * schema allows; without one member it fails exactly when the schema requires
 * that member in that state; a state outside the schema's list is refused. */
static void test_session_file_schema(void **state)
{
	(void)state;
	json_error_t je;
	json_t *schema = json_load_file("doc/json/session-file.schema.json", 0, &je);
	assert_non_null(schema);
	json_t *props = json_object_get(schema, "properties"), *st, *p;
	json_t *states = json_object_get(json_object_get(props, "state"), "enum");
	assert_true(json_array_size(states) >= 3);
	size_t i, nreq = 0;
	const char *name;
	json_array_foreach (states, i, st) {
		json_t *good = json_object();
		json_object_foreach (props, name, p) {
			json_t *v = session_file_value(name);
			if (!v)
				fail_msg("the schema's member '%s' has no value in this test",
					 name);
			json_object_set_new(good, name, v);
		}
		json_object_set_new(good, "state", json_copy(st));
		const char *sv = json_string_value(st);
		struct gg_launch_info li;
		char *text = json_dumps(good, 0);
		assert_int_equal(parse_li(text, &li), 0);
		assert_string_equal(li.state, sv);
		gg_launch_info_clear(&li);
		free(text);
		json_object_foreach (props, name, p) {
			json_t *less = json_deep_copy(good);
			json_object_del(less, name);
			text = json_dumps(less, 0);
			int req = schema_requires(schema, sv, name), rc = parse_li(text, &li);
			nreq += (size_t)req;
			if (rc != (req ? GG_EPROTO : 0))
				fail_msg("state %s without '%s': the parser says %d, the schema %s",
					 sv, name, rc, req ? "requires it" : "does not");
			gg_launch_info_clear(&li);
			free(text);
			json_decref(less);
		}
		json_object_set_new(good, "state", json_string("paused"));
		text = json_dumps(good, 0);
		assert_int_equal(parse_li(text, &li), GG_EPROTO);
		free(text);
		json_decref(good);
	}
	assert_int_equal(nreq, 3 + 4); /* state in each, node port user host_key when ready */
	json_decref(schema);
}

/* The launcher's own writer of its session file (json_object in
 * libexec/gridgpu/session-launcher, run with /bin/sh and the awk named: a
 * directory whose "awk" it is comes first in PATH), given "s active_reason
 * VALUE n logins NUM"; its output in out (NUL-terminated). */
static void launcher_json(const char *awk, const char *value, const char *num, char *out,
			  size_t size)
{
	char fn[128], bin[128], awkpath[160], path[512];
	snprintf(fn, sizeof fn, "%s/json_object.sh", dir);
	snprintf(bin, sizeof bin, "%s/bin-%s", dir, awk);
	snprintf(awkpath, sizeof awkpath, "%s/awk", bin);
	char *sh = gg_strdup_printf("sed -n '/^json_object() {/,/^}/p' "
				    "libexec/gridgpu/session-launcher >%s && mkdir -p %s && "
				    "ln -sf /usr/bin/%s %s",
				    fn, bin, awk, awkpath);
	assert_int_equal(system(sh), 0);
	free(sh);
	snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		setenv("PATH", path, 1);
		execl("/bin/sh", "sh", "-c",
		      ". \"$0\" && json_object s state starting s active_reason \"$1\" n logins "
		      "\"$2\"",
		      fn, value, num, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < size && (k = read(p[0], out + n, size - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Every value the launcher publishes is escaped: each byte a shell value can
 * hold (control characters, quotes, backslashes, bytes that are not UTF-8)
 * makes a file that parses, with the value as it was (a byte that is not
 * UTF-8 as U+FFFD); a number is its digits or 0. The regression: a process
 * named ad"v made the file invalid JSON and the session failed for good. */
static void test_launcher_escapes(void **state)
{
	(void)state;
	static const char *const awks[] = {"gawk", "mawk", "original-awk"};
	char ascii[128], out[4096];
	for (int i = 1; i < 128; i++)
		ascii[i - 1] = (char)i;
	ascii[127] = '\0';
	for (size_t a = 0; a < sizeof awks / sizeof awks[0]; a++) {
		char exe[64];
		snprintf(exe, sizeof exe, "/usr/bin/%s", awks[a]);
		if (access(exe, X_OK) != 0)
			continue; /* the awks this machine has */
		struct gg_launch_info li;
		launcher_json(awks[a], "process ad\"v", "007", out, sizeof out);
		assert_int_equal(parse_li(out, &li), 0);
		assert_string_equal(li.active_reason, "process ad\"v");
		assert_int_equal(li.logins, 7);
		gg_launch_info_clear(&li);
		/* every ASCII byte, and bytes that are not UTF-8 among UTF-8 */
		const char *mixed = "\xc3\xa9 \xff\xc0\x80\xed\xa0\x80 \xf0\x9f\x98\x80 \xe2\x82";
		const char *want = "\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef"
				   "\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd";
		const char *values[] = {ascii, mixed};
		const char *wants[] = {ascii, want};
		for (int v = 0; v < 2; v++) {
			launcher_json(awks[a], values[v], "x1", out, sizeof out);
			assert_int_equal(parse_li(out, &li), 0);
			assert_int_equal(li.logins, 0);
			gg_launch_info_clear(&li);
			json_t *j = json_loads(out, 0, NULL);
			assert_non_null(j);
			assert_string_equal(json_string_value(json_object_get(j, "active_reason")),
					    wants[v]);
			json_decref(j);
			assert_null(memchr(out, '\n', strlen(out) - 1)); /* one line */
		}
	}
}

/* What freeze --session runs on the node to read the session's GPU record, run
 * here (sh, under timeout 30) in a session dir whose record is `kind`; its exit
 * status and the bytes it printed. */
static int node_gpus_read(const char *sd, char *out, size_t size, size_t *len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		setenv("GRIDGPU_SESSION_DIR", sd, 1);
		execl("/usr/bin/timeout", "timeout", "30", "/bin/sh", "-c", gg_node_gpus_command(),
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t k;
	*len = 0;
	while ((k = read(p[0], out + *len, size - *len)) > 0)
		*len += (size_t)k;
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The node's record of the session's GPUs is read only when it is a regular
 * file: a FIFO (or a link to one) in its place is not opened, nothing blocks.
 * The regression: `cat` of a FIFO there blocked on the node, and freeze with it. */
static void test_node_gpus_cmd(void **state)
{
	(void)state;
	char sd[128], g[160], rec[192], cmd[512];
	static char out[80 * 1024];
	size_t len;
	snprintf(sd, sizeof sd, "%s/node-sd", dir);
	snprintf(g, sizeof g, "%s/.gridgpu", sd);
	snprintf(rec, sizeof rec, "%s/gpus", g);
	snprintf(cmd, sizeof cmd,
		 "mkdir -p '%s' && printf '# CUDA_VISIBLE_DEVICES=0\\n0, x\\n' >'%s'", g, rec);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(node_gpus_read(sd, out, sizeof out, &len), 0);
	assert_int_equal(len, 30);
	assert_memory_equal(out, "# CUDA_VISIBLE_DEVICES=0\n0, x\n", 30);
	/* a FIFO: nothing read, no wait (timeout's 124 if it blocked) */
	assert_int_equal(unlink(rec), 0);
	assert_int_equal(mkfifo(rec, 0600), 0);
	assert_int_equal(node_gpus_read(sd, out, sizeof out, &len), 0);
	assert_int_equal(len, 0);
	/* a link to a FIFO, to a file: not followed */
	char fifo[200];
	snprintf(fifo, sizeof fifo, "%s/fifo", g);
	assert_int_equal(rename(rec, fifo), 0);
	assert_int_equal(symlink(fifo, rec), 0);
	assert_int_equal(node_gpus_read(sd, out, sizeof out, &len), 0);
	assert_int_equal(len, 0);
	/* a record larger than 64 KiB: its first 64 KiB */
	assert_int_equal(unlink(rec), 0);
	snprintf(cmd, sizeof cmd, "head -c 70000 /dev/zero | tr '\\0' a >'%s'", rec);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(node_gpus_read(sd, out, sizeof out, &len), 0);
	assert_int_equal(len, 65536);
}

static int parse_exit(const char *text, size_t len, struct gg_job_exit *x)
{
	struct gg_err err = {0};
	return gg_job_exit_parse(text, len, x, &err);
}

#define EXIT_HEAD "gridgpu-job-exit 1\nexit 3\noom-kills 0\n"

/* The batch wrapper's file of how the command ended: its status and the last
 * lines of its stderr, bounded and made printable whatever the node wrote. */
static void test_job_exit_parse(void **state)
{
	(void)state;
	struct gg_job_exit x;
	static const char ok1[] =
		EXIT_HEAD "stderr-bytes 28\nstderr\nline one\nit went wrong here\n";
	assert_int_equal(parse_exit(ok1, sizeof ok1 - 1, &x), 0);
	assert_int_equal(x.status, 3);
	assert_int_equal(x.stderr_bytes, 28);
	assert_string_equal(x.tail, "line one\nit went wrong here");
	gg_job_exit_clear(&x);
	/* the last GG_JOB_EXIT_LINES lines; a first line the wrapper's bound cut
	 * (it wrote more than it kept) is dropped */
	static const char many[] =
		EXIT_HEAD "stderr-bytes 9000\nstderr\nrt of a line\n1\n2\n3\n4\n5\n6\n\n";
	assert_int_equal(parse_exit(many, sizeof many - 1, &x), 0);
	assert_string_equal(x.tail, "2\n3\n4\n5\n6");
	gg_job_exit_clear(&x);
	static const char cut[] = EXIT_HEAD "stderr-bytes 9000\nstderr\nrt of a line\nlast\n";
	assert_int_equal(parse_exit(cut, sizeof cut - 1, &x), 0);
	assert_string_equal(x.tail, "last");
	gg_job_exit_clear(&x);
	/* hostile bytes: escape sequences, invalid UTF-8, a NUL, a huge line */
	static const char bad[] = EXIT_HEAD "stderr\n\x1b[31mred\nbad \xff\xfe\nnul\0byte\n";
	assert_int_equal(parse_exit(bad, sizeof bad - 1, &x), 0);
	assert_string_equal(x.tail, "\\x1b[31mred\nbad \\xff\\xfe\nnul\\x00byte");
	gg_job_exit_clear(&x);
	char big[GG_JOB_EXIT_TAIL + 200];
	int h = snprintf(big, sizeof big, EXIT_HEAD "stderr-bytes 100000\nstderr\n");
	memset(big + h, 'x', sizeof big - (size_t)h - 1);
	big[sizeof big - 1] = '\n';
	assert_int_equal(parse_exit(big, sizeof big, &x), 0);
	assert_int_equal(strncmp(x.tail, "xxxx", 4), 0);
	assert_non_null(strstr(x.tail, " more bytes]"));
	assert_true(strlen(x.tail) < GG_JOB_EXIT_LINE + 40);
	gg_job_exit_clear(&x);
	/* nothing on stderr */
	static const char none[] = EXIT_HEAD "stderr-bytes 0\nstderr\n";
	assert_int_equal(parse_exit(none, sizeof none - 1, &x), 0);
	assert_null(x.tail);
	gg_job_exit_clear(&x);
	/* not the wrapper's file */
	static const char *const refused[] = {
		"", "gridgpu-job-exit 2\nexit 3\n", "gridgpu-job-exit 1\nstderr\nexit 3\n",
		"gridgpu-job-exit 1\nexit 256\n", "gridgpu-job-exit 1\nexit x\n",
		"gridgpu-job-exit 1\nexit 3\noom-kills -1\n",
		/* 19 digits past INT64_MAX (fuzzed: no overflow) */
		"gridgpu-job-exit 1\nexit 3\nstderr-bytes 9999999999999900000\n",
		"gridgpu-job-exit 1\nexit 3\nstderr-bytes 922337203685477581\n",
		"<html>404</html>"};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		assert_int_equal(parse_exit(refused[i], strlen(refused[i]), &x), GG_EPROTO);
		assert_null(x.tail);
		gg_job_exit_clear(&x);
	}
}

static void test_job_exit_summary(void **state)
{
	(void)state;
	static const struct {
		int64_t status, oom;
		const char *want;
	} cases[] = {
		{3, 0, "the command exited 3"},
		{0, 0, "the command exited 0"},
		{137, 0, "the command was killed by signal 9 (KILL)"},
		{143, 0, "the command was killed by signal 15 (TERM)"},
		{137, 1,
		 "the command ran out of its memory: the batch system killed it (1 "
		 "out-of-memory kill in the job)"},
		{200, 0, "the command exited 200"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = gg_job_exit_summary(cases[i].status, cases[i].oom);
		assert_string_equal(s, cases[i].want);
		free(s);
	}
	/* list's short form makes the same decision (one place: how_ended) */
	static const char *const brief[] = {"exited 3",  "exited 0",      "signal 9",
					    "signal 15", "out of memory", "exited 200"};
	char b[32];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_string_equal(gg_job_exit_brief(cases[i].status, cases[i].oom, b, sizeof b),
				    brief[i]);
}

/* How a failed job's command ended survives the record's save and load. */
static void test_record_exit(void **state)
{
	(void)state;
	struct gg_record r = {.kind = GG_REC_JOB,
			      .state = GG_S_FAILED,
			      .exit_read = 1700000000,
			      .exit_status = 137,
			      .oom_kills = 2};
	r.name = strdup("j3");
	r.stderr_tail = strdup("line one\n\\x1b[31mred");
	json_t *j = gg_record_to_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 137);
	struct gg_record b;
	struct gg_err err = {0};
	assert_int_equal(gg_record_from_json(j, &b, &err), 0);
	assert_int_equal(b.exit_read, 1700000000);
	assert_int_equal(b.exit_status, 137);
	assert_int_equal(b.oom_kills, 2);
	assert_string_equal(b.stderr_tail, r.stderr_tail);
	gg_record_clear(&b);
	json_object_set_new(j, "exit_status", json_integer(-1));
	assert_int_equal(gg_record_from_json(j, &b, &err), GG_EPROTO);
	json_decref(j);
	gg_record_clear(&r);
}

static void test_apply(void **state)
{
	(void)state;
	struct gg_record r = {.kind = GG_REC_SESSION, .state = GG_S_REQUESTED};
	struct gg_ce_result res = {.state = GG_CE_ACCEPTED, .raw_state = (char *)"ACCEPTING"};
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_QUEUED);
	assert_string_equal(r.ce_state, "ACCEPTING");
	res.state = GG_CE_RUNNING;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_STARTING);
	/* the CE cannot be reached: unknown, with what was known before */
	res.state = GG_CE_UNKNOWN;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_UNKNOWN);
	assert_int_equal(r.last_known, GG_S_STARTING);
	res.state = GG_CE_RUNNING;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_STARTING);
	res.state = GG_CE_FINISHED;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_FINISHED);
	/* ended is final */
	res.state = GG_CE_RUNNING;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_FINISHED);
	gg_record_clear(&r);
	r = (struct gg_record){.kind = GG_REC_JOB, .state = GG_S_QUEUED};
	res.state = GG_CE_FAILED;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_FAILED);
	assert_non_null(r.error);
	gg_record_clear(&r);
	r = (struct gg_record){.kind = GG_REC_JOB, .state = GG_S_QUEUED};
	res.state = GG_CE_KILLED;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_KILLED);
	gg_record_clear(&r);
	/* published: a starting session with its sshd's address and pinned key;
	 * "ready" is for the caller to say once the sshd answered */
	r = (struct gg_record){.kind = GG_REC_SESSION, .state = GG_S_STARTING};
	assert_false(gg_session_published(&r));
	r.node = strdup("127.0.0.1");
	r.port = 22000;
	assert_false(gg_session_published(&r));
	r.host_key = strdup(
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C");
	assert_true(gg_session_published(&r));
	/* the CE still saying SUBMITTING does not take it back to queued */
	res.state = GG_CE_QUEUED;
	gg_session_apply(NULL, &r, &res);
	assert_int_equal(r.state, GG_S_STARTING);
	assert_true(gg_session_published(&r));
	r.state = GG_S_READY;
	assert_false(gg_session_published(&r));
	r.state = GG_S_STARTING;
	r.kind = GG_REC_JOB;
	assert_false(gg_session_published(&r));
	gg_record_clear(&r);
	char uid[13];
	assert_int_equal(gg_random_uid(uid, NULL), 0);
	assert_int_equal(strlen(uid), 12);
	assert_int_equal(strspn(uid, "0123456789abcdef"), 12);
}

/* An image frozen with this provenance "gpus"; what --match-dev-gpu takes from it. */
static int dev_of(const char *gpus, struct gg_dev_gpu *dev, struct gg_err *err)
{
	char src[128], out[128];
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(out, sizeof out, "%s/dev.sif", dir);
	mkdir(src, 0755);
	struct gg_freeze_opts o = {
		.source = src, .output = out, .force = 1, .jobs = 1, .gpus_json = gpus};
	struct gg_freeze_result res;
	assert_int_equal(gg_image_freeze(&o, NULL, &res, err), 0);
	int64_t off;
	return gg_job_image_check(out, &off, dev, err);
}

#define A100 "\"name\":\"A100 40GB\",\"compute_capability\":\"8.0\",\"memory_total_mb\":40960"
#define MIG(p, m, v)                                                                         \
	"{\"name\":\"A100 MIG " p "\",\"compute_capability\":\"8.0\",\"memory_total_mb\":" m \
	",\"visible\":" v "}"

/* The device the work ran on: the first visible one; in MIG mode, its MIG device. */
static void test_dev_gpu(void **state)
{
	(void)state;
	struct gg_dev_gpu dev;
	struct gg_err err = {0};
	/* GPU 0 not given to the job, GPU 1 (an H100) given */
	assert_int_equal(dev_of("{\"gpus\":[{" A100 ",\"visible\":false,\"mig\":[]},"
				"{\"name\":\"H100\",\"compute_capability\":\"9.0\","
				"\"memory_total_mb\":81559,\"visible\":true}]}",
				&dev, &err),
			 0);
	assert_string_equal(dev.name, "H100");
	assert_string_equal(dev.cc, "9.0");
	assert_int_equal(dev.memory, 81559ULL << 20);
	/* a GPU in MIG mode: the slice given, with its own memory */
	assert_int_equal(dev_of("{\"gpus\":[{" A100 ",\"visible\":false,\"mig\":[" MIG(
					"3g.20gb", "19968", "false") "," MIG("1g.5gb", "4864",
									     "true") "]}]}",
				&dev, &err),
			 0);
	assert_string_equal(dev.name, "A100 MIG 1g.5gb");
	assert_int_equal(dev.memory, 4864ULL << 20);
	/* an entry without "visible" (an older image) counts as the one used */
	assert_int_equal(dev_of("[{" A100 "}]", &dev, &err), 0);
	assert_int_equal(dev.memory, 40960ULL << 20);
	/* nothing visible, or nothing recorded: said so */
	assert_int_equal(dev_of("{\"gpus\":[{" A100 ",\"visible\":false,\"mig\":[]}]}", &dev, &err),
			 GG_EUSAGE);
	assert_non_null(strstr(err.msg, "records no GPU it was developed on"));
	gg_err_clear(&err);
	assert_int_equal(dev_of(NULL, &dev, &err), GG_EUSAGE);
}

/* A session spec with a deadline and a launcher. */
static struct gg_session_spec *describe_spec(void)
{
	struct gg_session_spec *q = NULL;
	assert_int_equal(gg_session_spec_new(&q, NULL), 0);
	assert_int_equal(gg_session_spec_set_deadline(q, 600, NULL), 0);
	assert_int_equal(gg_session_spec_set_launcher(q, "/nonexistent/launcher", NULL), 0);
	return q;
}

/* The site's allow_from reaches the launcher as -A LIST (its sshd's
 * AllowUsers), checked again; no -A without it (sshd as before). */
static void test_describe_allow(void **state)
{
	(void)state;
	struct gg_session_spec *q = describe_spec();
	struct gg_record r = {.uid = (char *)"0123456789ab", .name = (char *)"s1"};
	struct gg_site site = {.name = (char *)"gla", .ce = (char *)"https://ce/arex"};
	struct gg_err err = {0};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_session_describe(q, &site, &r, "/nonexistent/key.pub", &jd, &err), 0);
	for (int i = 0; i < jd.nargs; i++)
		assert_string_not_equal(jd.args[i], "-A");
	gg_jd_clear(&jd);
	assert_int_equal(gg_site_allow_add(&site, "192.0.2.10,2001:db8::/32", &err), 0);
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_session_describe(q, &site, &r, "/nonexistent/key.pub", &jd, &err), 0);
	int at = -1;
	for (int i = 0; i < jd.nargs; i++)
		if (!strcmp(jd.args[i], "-A"))
			at = i;
	assert_true(at > 0 && at + 1 < jd.nargs);
	assert_string_equal(jd.args[at + 1], "192.0.2.10,2001:db8::/32");
	gg_jd_clear(&jd);
	/* an entry a program put there unchecked: refused, nothing described */
	char *kept = site.allow_from[1];
	site.allow_from[1] = (char *)"2001:db8::/32\nPermitRootLogin yes";
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_session_describe(q, &site, &r, "/nonexistent/key.pub", &jd, &err),
			 GG_EUSAGE);
	assert_non_null(strstr(err.msg, "site 'gla' allow_from"));
	gg_jd_clear(&jd);
	site.allow_from[1] = kept;
	for (int i = 0; i < site.nallow; i++)
		free(site.allow_from[i]);
	gg_session_spec_free(q);
}

/* A record without a uid (a dry run's, say) names no job "gridgpu-(null)":
 * it is refused, with the session named. */
static void test_describe_no_uid(void **state)
{
	(void)state;
	struct gg_session_spec *q = describe_spec();
	struct gg_record r = {.name = (char *)"s1"};
	struct gg_site site = {.name = (char *)"gla", .ce = (char *)"https://ce/arex"};
	struct gg_err err = {0};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_session_describe(q, &site, &r, "/nonexistent/key.pub", &jd, &err),
			 GG_EUSAGE);
	assert_non_null(strstr(err.msg, "'s1' has no uid"));
	assert_null(jd.name);
	gg_jd_clear(&jd);
	gg_session_spec_free(q);
}

/* The row of the listing holding what the deadline rule reads of r. */
static struct gg_record_row row_of(const struct gg_record *r)
{
	struct gg_record_row w = {.state = r->state,
				  .started = r->started,
				  .walltime = r->walltime,
				  .deadline_at = r->deadline_at,
				  .first_login = r->first_login,
				  .last_activity = r->last_activity};
	return w;
}

/* The deadline that applies now, of a record and of its row alike. */
static void check_deadline(const struct gg_record *r, enum gg_deadline want, int64_t at)
{
	enum gg_deadline kind = (enum gg_deadline) - 1, rkind = (enum gg_deadline) - 1;
	struct gg_record_row w = row_of(r);
	assert_int_equal(gg_record_deadline(r, &kind), at);
	assert_int_equal(kind, want);
	assert_int_equal(gg_record_row_deadline(&w, &rkind), at);
	assert_int_equal(rkind, want);
	assert_int_equal(gg_record_deadline(r, NULL), at);
}

static void test_deadline(void **state)
{
	(void)state;
	struct gg_record r = {.kind = GG_REC_SESSION,
			      .state = GG_S_READY,
			      .started = 1000,
			      .walltime = 3600,
			      .deadline_at = 1600,
			      .last_activity = 1000};
	/* started, nobody logged in yet: log in by the connect deadline */
	assert_int_equal(gg_record_connected(&r), 0);
	check_deadline(&r, GG_DEADLINE_CONNECT, 1600);
	/* logged in: the walltime from the start */
	r.first_login = 1200;
	assert_int_equal(gg_record_connected(&r), 1);
	check_deadline(&r, GG_DEADLINE_WALLTIME, 4600);
	/* activity after the start counts as logged in (an older launcher) */
	r.first_login = 0;
	r.last_activity = 1001;
	assert_int_equal(gg_record_connected(&r), 1);
	check_deadline(&r, GG_DEADLINE_WALLTIME, 4600);
	/* no connect deadline published: the walltime, logged in or not */
	r.last_activity = 1000;
	r.deadline_at = 0;
	check_deadline(&r, GG_DEADLINE_WALLTIME, 4600);
	r.state = GG_S_STARTING;
	check_deadline(&r, GG_DEADLINE_WALLTIME, 4600);
	/* not started yet: none, whatever else the record holds */
	r.deadline_at = 1600;
	r.started = 0;
	r.state = GG_S_QUEUED;
	check_deadline(&r, GG_DEADLINE_NONE, 0);
	/* ended: none, though it had started and had a connect deadline */
	r.started = 1000;
	enum gg_sess_state ended[] = {GG_S_FINISHED, GG_S_FAILED, GG_S_KILLED};
	for (size_t i = 0; i < sizeof ended / sizeof ended[0]; i++) {
		r.state = ended[i];
		check_deadline(&r, GG_DEADLINE_NONE, 0);
	}
	/* an unknown state is not an end: the rule still applies */
	r.state = GG_S_UNKNOWN;
	check_deadline(&r, GG_DEADLINE_CONNECT, 1600);
}

/* The progress display: states on screen only move forward. */
static void test_forward_only(void **state)
{
	(void)state;
	/* the bug: the REST list's RUNNING (starting), then the info document's
	 * INLRMS:Q (queued) */
	assert_int_equal(gg_sess_state_forward(GG_S_STARTING, GG_S_QUEUED), GG_S_STARTING);
	assert_int_equal(gg_sess_state_forward(GG_S_QUEUED, GG_S_REQUESTED), GG_S_QUEUED);
	assert_int_equal(gg_sess_state_forward(GG_S_READY, GG_S_STARTING), GG_S_READY);
	assert_int_equal(gg_sess_state_forward(GG_S_RUNNING, GG_S_QUEUED), GG_S_RUNNING);
	/* forward moves and ends show as they are */
	assert_int_equal(gg_sess_state_forward(GG_S_QUEUED, GG_S_STARTING), GG_S_STARTING);
	assert_int_equal(gg_sess_state_forward(GG_S_STARTING, GG_S_FAILED), GG_S_FAILED);
	assert_int_equal(gg_sess_state_forward(GG_S_STARTING, GG_S_UNKNOWN), GG_S_UNKNOWN);
	assert_int_equal(gg_sess_state_forward(GG_S_REQUESTED, GG_S_QUEUED), GG_S_QUEUED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_json),
		cmocka_unit_test(test_record_bytes),
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_dev_gpu),
		cmocka_unit_test(test_store_find_job),
		cmocka_unit_test(test_store_concurrent),
		cmocka_unit_test(test_rows_cache),
		cmocka_unit_test(test_list_snapshot),
		cmocka_unit_test(test_launch_info),
		cmocka_unit_test(test_launcher_escapes),
		cmocka_unit_test(test_session_file_schema),
		cmocka_unit_test(test_node_gpus_cmd),
		cmocka_unit_test(test_job_exit_parse),
		cmocka_unit_test(test_job_exit_summary),
		cmocka_unit_test(test_record_exit),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_describe_allow),
		cmocka_unit_test(test_describe_no_uid),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_forward_only),
	};
	return cmocka_run_group_tests_name("session", tests, setup, teardown);
}
