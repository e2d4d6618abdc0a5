/* Unit tests of the session engine (lib/engine/engine.c, submit.c, wait.c,
 * manage.c) against a fake CE backend: the record is written before the
 * submission, a submission whose answer was lost is adopted, a kill during a
 * submission wins, records of one CE made with a token and with a proxy are
 * each killed with their own credential. */
#include "unit.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ce/backend.h"
#include "cred/cred.h"
#include "http/http.h"
#include "https_srv.h"
#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/sync.h"

#define EP "https://ce.example.org:443/arex"

/* ---- the fake CE ---- */

struct fjob {
	char id[32], name[64], killed_with[8];
	enum gg_ce_state state;
	int cleaned;
	int lrms_queued;          /* the batch system holds it (the CE says running);
				     2: the info document lags (SUBMITTING) */
	const char *failed;       /* A-REX's diagnose/failed */
	const char *errors;       /* A-REX's diagnose/errors */
	const char *session_file; /* what the launcher published (NULL: nothing yet) */
	const char *files;        /* its directory's listing, one name a line */
	int files_gone;           /* the listing: 404 (the CE no longer has them) */
	const char *exit_file;    /* the wrapper's gridgpu-job.exit (NULL: none) */
};

/* In shared memory: a child process that dies in the middle of a submission
 * leaves its jobs where the parent's fake CE sees them. */
static struct fake {
	struct fjob jobs[32];
	int njobs;
	int opens;
	enum { M_OK, M_LOST_ANSWER, M_UNSENT, M_REFUSE } submit_mode;
	int refuse_next;    /* so many submissions refused before the mode applies */
	unsigned refuse_at; /* submit_many: bit K refuses the Kth job of a request */
	int many_calls;     /* submit_many's requests */
	char refuse_ep[64]; /* refuse_at only there ("": everywhere) */
	char submitted_to[4][64];
	int unsent;
	void (*on_submit)(void); /* runs while the POST is "on the wire" */
	int delegations;
	int lrms_asked;   /* jobs the batch system's view was asked for */
	int clean_fails;  /* the clean call cannot reach the CE */
	int kill_fails;   /* the kill call cannot reach the CE (slow to answer) */
	int put_eintr;    /* uploads interrupted (Ctrl-C), and so is all else on the handle */
	int files_got;    /* files the CE sent */
	int exit_gets;    /* GETs of a job's gridgpu-job.exit */
	int err_gets;     /* GETs of a job's gridgpu-job.err */
	char hold_ep[64]; /* a CE whose status answer waits for a byte on hold_fd */
	int hold_fd;
	int clonable; /* the CE can be asked twice at once (a second handle) */
	int clones;   /* second handles made */
	int overlap;  /* the batch system's view was asked during a status call */
} * FP;
#define F (*FP)

static int f_open(struct gg_ce *ce, const struct gg_ce_auth *auth, struct gg_err *err)
{
	(void)err;
	F.opens++;
	ce->impl = strdup(auth->token ? "token" : "proxy");
	return 0;
}

static void f_close(struct gg_ce *ce)
{
	free(ce->impl);
}

static int f_clone(struct gg_ce *ce, struct gg_ce *copy, struct gg_err *err)
{
	if (!F.clonable)
		return gg_err_set(err, GG_EUSAGE, "one request at a time");
	F.clones++;
	copy->impl = strdup(ce->impl);
	return 0;
}

static int f_delegate(struct gg_ce *ce, const char *proxy_path, int64_t min_left,
		      const char *cache_path, char **id, struct gg_err *err)
{
	(void)ce, (void)proxy_path, (void)min_left, (void)cache_path, (void)err;
	F.delegations++;
	*id = strdup("deleg-1");
	return 0;
}

static struct fjob *find(const char *id)
{
	for (int i = 0; i < F.njobs; i++)
		if (!strcmp(F.jobs[i].id, id) && !F.jobs[i].cleaned)
			return &F.jobs[i];
	return NULL;
}

static int f_submit(struct gg_ce *ce, const char *xrsl, char **id, struct gg_err *err)
{
	F.unsent = F.submit_mode == M_UNSENT;
	if (F.submit_mode == M_UNSENT)
		return gg_err_set(err, GG_ENET, "connection refused");
	if (F.refuse_next > 0 && F.refuse_next--)
		return gg_err_set(err, GG_EJOB, "the CE refused the job: no GPUs here");
	if (F.submit_mode == M_REFUSE)
		return gg_err_set(err, GG_EJOB, "the CE refused the job: no such queue");
	if (F.njobs < 4)
		snprintf(F.submitted_to[F.njobs], sizeof F.submitted_to[0], "%s", ce->endpoint);
	struct fjob *j = &F.jobs[F.njobs];
	snprintf(j->id, sizeof j->id, "job%d", F.njobs);
	const char *n = strstr(xrsl, "\"gridgpu-");
	assert_non_null(n);
	snprintf(j->name, sizeof j->name, "%.*s", (int)strcspn(n + 1, "\""), n + 1);
	j->state = GG_CE_QUEUED;
	F.njobs++;
	if (F.on_submit)
		F.on_submit();
	if (F.submit_mode == M_LOST_ANSWER)
		return gg_err_set(err, GG_ENET, "the connection broke before the answer");
	*id = strdup(j->id);
	return 0;
}

/* Several jobs in one request, answered per job as A-REX does. */
static int f_submit_many(struct gg_ce *ce, const char *const *descs, size_t n,
			 struct gg_ce_result **results, struct gg_err *err)
{
	F.many_calls++;
	F.unsent = F.submit_mode == M_UNSENT;
	if (F.unsent)
		return gg_err_set(err, GG_ENET, "connection refused");
	struct gg_ce_result *res = calloc(n, sizeof *res);
	for (size_t i = 0; i < n; i++) {
		int here = !F.refuse_ep[0] || !strcmp(F.refuse_ep, ce->endpoint);
		if ((here && F.refuse_at >> (i + 1) & 1) || F.submit_mode == M_REFUSE) {
			res[i].code = 500;
			res[i].reason = strdup("no GPUs\nhere");
			continue;
		}
		struct fjob *j = &F.jobs[F.njobs];
		snprintf(j->id, sizeof j->id, "job%d", F.njobs);
		const char *nm = strstr(descs[i], "\"gridgpu-");
		assert_non_null(nm);
		snprintf(j->name, sizeof j->name, "%.*s", (int)strcspn(nm + 1, "\""), nm + 1);
		j->state = GG_CE_QUEUED;
		if (F.njobs < 4)
			snprintf(F.submitted_to[F.njobs], sizeof F.submitted_to[0], "%s",
				 ce->endpoint);
		F.njobs++;
		res[i].code = 201;
		res[i].id = strdup(j->id);
	}
	if (F.on_submit)
		F.on_submit();
	if (F.submit_mode == M_LOST_ANSWER) {
		gg_ce_results_free(res, n);
		return gg_err_set(err, GG_ENET, "the connection broke before the answer");
	}
	*results = res;
	return 0;
}

static int f_unsent(const struct gg_ce *ce)
{
	(void)ce;
	return F.unsent;
}

static int f_bulk(struct gg_ce *ce, const char *const *ids, size_t n, struct gg_ce_result **results,
		  const char *what)
{
	*results = calloc(n ? n : 1, sizeof **results);
	for (size_t i = 0; i < n; i++) {
		struct fjob *j = find(ids[i]);
		(*results)[i].id = strdup(ids[i]);
		(*results)[i].code = j ? 202 : 404;
		(*results)[i].state = j ? j->state : GG_CE_GONE;
		if (j && !strcmp(what, "kill")) {
			j->state = GG_CE_KILLED;
			snprintf(j->killed_with, sizeof j->killed_with, "%s", (char *)ce->impl);
		}
		if (j && !strcmp(what, "clean"))
			j->cleaned = 1;
	}
	return 0;
}

static int f_status(struct gg_ce *ce, const char *const *ids, size_t n,
		    struct gg_ce_result **results, struct gg_err *err)
{
	(void)err;
	char c;
	if (F.hold_ep[0] && !strcmp(ce->endpoint, F.hold_ep))
		assert_int_equal(read(F.hold_fd, &c, 1), 1);
	/* asked at once, the batch system's view comes while this answer is
	 * awaited: wait for it (a bounded poll: what is observed decides) */
	for (int i = 0; F.clonable && i < 3000 && !__atomic_load_n(&F.lrms_asked, __ATOMIC_SEQ_CST);
	     i++) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	F.overlap = F.clonable && __atomic_load_n(&F.lrms_asked, __ATOMIC_SEQ_CST) > 0;
	return f_bulk(ce, ids, n, results, "status");
}

static int f_lrms_status(struct gg_ce *ce, const char *const *ids, size_t n,
			 struct gg_ce_result **results, struct gg_err *err)
{
	(void)ce, (void)err;
	*results = calloc(n ? n : 1, sizeof **results);
	for (size_t i = 0; i < n; i++) {
		struct fjob *j = find(ids[i]);
		__atomic_add_fetch(&F.lrms_asked, 1, __ATOMIC_SEQ_CST);
		(*results)[i].id = strdup(ids[i]);
		(*results)[i].state = !j                    ? GG_CE_UNKNOWN
				      : j->lrms_queued == 2 ? GG_CE_ACCEPTED
				      : j->lrms_queued      ? GG_CE_QUEUED
							    : GG_CE_RUNNING;
		(*results)[i].raw_state = strdup(!j || !j->lrms_queued ? "INLRMS:R"
						 : j->lrms_queued == 2 ? "SUBMITTING"
								       : "INLRMS:Q");
	}
	return 0;
}

static int f_kill(struct gg_ce *ce, const char *const *ids, size_t n, struct gg_ce_result **results,
		  struct gg_err *err)
{
	if (F.put_eintr)
		return gg_err_set(err, GG_EINTR, "interrupted");
	if (F.kill_fails)
		return gg_err_set(err, GG_ENET, "the CE did not answer in time");
	return f_bulk(ce, ids, n, results, "kill");
}

static int f_clean(struct gg_ce *ce, const char *const *ids, size_t n,
		   struct gg_ce_result **results, struct gg_err *err)
{
	if (F.put_eintr)
		return gg_err_set(err, GG_EINTR, "interrupted");
	if (F.clean_fails)
		return gg_err_set(err, GG_ENET, "cannot connect to the CE");
	return f_bulk(ce, ids, n, results, "clean");
}

static int f_list(struct gg_ce *ce, struct gg_ce_result **results, size_t *n, struct gg_err *err)
{
	(void)ce, (void)err;
	*results = calloc((size_t)F.njobs + 1, sizeof **results);
	*n = 0;
	for (int i = 0; i < F.njobs; i++)
		if (!F.jobs[i].cleaned) {
			(*results)[*n].id = strdup(F.jobs[i].id);
			(*results)[(*n)++].state = F.jobs[i].state;
		}
	return 0;
}

static int f_job_names(struct gg_ce *ce, const char *const *ids, size_t n, char **names,
		       struct gg_err *err)
{
	(void)ce, (void)err;
	for (size_t i = 0; i < n; i++) {
		struct fjob *j = find(ids[i]);
		names[i] = j ? strdup(j->name) : NULL;
	}
	return 0;
}

static int f_put(struct gg_ce *ce, const char *id, const char *name, const void *data, size_t len,
		 struct gg_err *err)
{
	(void)ce, (void)name, (void)data, (void)len;
	return find(id) ? 0 : gg_err_set(err, GG_ENOTFOUND, "no job %s", id);
}

static int f_put_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
		      gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	(void)progress, (void)ud, (void)path;
	if (F.put_eintr)
		return gg_err_set(err, GG_EINTR, "interrupted");
	return f_put(ce, id, name, NULL, 0, err);
}

static int f_get(struct gg_ce *ce, const char *id, const char *name, size_t max, char **data,
		 size_t *len, struct gg_err *err)
{
	(void)ce, (void)max;
	struct fjob *j = find(id);
	F.exit_gets += !strcmp(name, GG_JOB_EXIT_NAME);
	F.err_gets += !strcmp(name, GG_JOB_ERR_NAME);
	if (j && !strcmp(name, GG_JOB_EXIT_NAME) && j->exit_file) {
		*len = strlen(j->exit_file);
		*data = strdup(j->exit_file);
		return 0;
	}
	if (!j || strcmp(name, GG_SESSION_FILE) || !j->session_file)
		return gg_err_set(err, GG_ENOTFOUND, "no %s", name);
	*len = strlen(j->session_file);
	*data = strdup(j->session_file);
	return 0;
}

static int f_diagnose(struct gg_ce *ce, const char *id, const char *item, char **text,
		      struct gg_err *err)
{
	(void)ce;
	struct fjob *j = find(id);
	const char *t = !j                        ? NULL
			: !strcmp(item, "failed") ? j->failed
			: !strcmp(item, "errors") ? j->errors
						  : NULL;
	if (!t)
		return gg_err_set(err, GG_ENOTFOUND, "no %s", item);
	*text = strdup(t);
	return 0;
}

static int f_ls(struct gg_ce *ce, const char *id, char ***names, size_t *n, struct gg_err *err)
{
	(void)ce;
	struct fjob *j = find(id);
	*names = calloc(32, sizeof **names);
	*n = 0;
	if (!j || j->files_gone)
		return gg_err_set(err, GG_ENOTFOUND, "job %s: no session directory", id);
	for (const char *p = j->files ? j->files : ""; *p && *n < 32;) {
		size_t len = strcspn(p, "\n");
		(*names)[(*n)++] = strndup(p, len);
		p += len + (p[len] == '\n');
	}
	return 0;
}

/* A file of the job's directory: "NAME of JOB\n". */
static int f_get_file(struct gg_ce *ce, const char *id, const char *name, const char *path,
		      gg_http_progress_fn progress, void *ud, struct gg_err *err)
{
	(void)ce;
	if (!find(id))
		return gg_err_set(err, GG_ENOTFOUND, "no job %s", id);
	char text[160];
	snprintf(text, sizeof text, "%s of %s\n", name, id);
	if (progress)
		progress(ud, strlen(text), strlen(text));
	F.files_got++;
	return gg_file_write_atomic(path, text, strlen(text), 0644, err);
}

static const struct gg_ce_ops fake_ops = {
	.name = "fake",
	.open = f_open,
	.close = f_close,
	.delegate = f_delegate,
	.submit = f_submit,
	.submit_unsent = f_unsent,
	.submit_many = f_submit_many,
	.status = f_status,
	.lrms_status = f_lrms_status,
	.kill = f_kill,
	.clean = f_clean,
	.list = f_list,
	.job_names = f_job_names,
	.put = f_put,
	.put_file = f_put_file,
	.get = f_get,
	.get_file = f_get_file,
	.ls = f_ls,
	.diagnose = f_diagnose,
	.clone = f_clone,
};

static int open_fake(void *ud, const char *endpoint, const struct gg_ce_auth *auth,
		     struct gg_ce **ce, struct gg_err *err)
{
	(void)ud;
	return gg_ce_open_with(&fake_ops, endpoint, auth, ce, err);
}

/* ---- the engine under test ---- */

static char dir[64], path[256];
static struct gg_engine *E; /* the command under test */
static struct gg_engine *K; /* another gridgpu process: kill, list */
static char notes[4096];

static void note(void *ud, enum gg_note kind, const char *msg)
{
	(void)ud, (void)kind;
	snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "%s\n", msg);
}

static const char *sub(const char *name)
{
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

/* A user certificate (self-signed will do: nothing verifies it here) and a
 * proxy of it where X509_USER_PROXY says. */
static void make_proxy(void)
{
	EVP_PKEY *k = EVP_RSA_gen(1024);
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"Test User", -1,
				   -1, 0);
	X509_set_issuer_name(x, n);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400 * 7);
	X509_set_pubkey(x, k);
	X509_sign(x, k, EVP_sha256());
	char cert[256], key[256];
	snprintf(cert, sizeof cert, "%s/usercert.pem", dir);
	snprintf(key, sizeof key, "%s/userkey.pem", dir);
	FILE *f = fopen(cert, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	chmod(key, 0600);
	struct gg_cred_source src = {cert, key, 0, "test"};
	struct gg_cred *c = NULL, *p = NULL;
	struct gg_err err = {0};
	struct gg_proxy_opts o;
	gg_proxy_opts_init(&o);
	o.lifetime = 86400;
	assert_int_equal(gg_cred_open(&src, &c, &err), 0);
	assert_int_equal(gg_proxy_create(c, &o, &p, NULL, &err), 0);
	assert_int_equal(gg_proxy_write(p, sub("proxy"), &err), 0);
	gg_cred_free(p);
	gg_cred_free(c);
	X509_free(x);
	EVP_PKEY_free(k);
}

static int setup(void **state)
{
	(void)state;
	FP = mmap(NULL, sizeof *FP, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (FP == MAP_FAILED)
		return -1;
	strcpy(dir, "/tmp/gg-unit-engine.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	setenv("XDG_CONFIG_HOME", sub("config"), 1);
	setenv("XDG_STATE_HOME", sub("state"), 1);
	setenv("XDG_CACHE_HOME", sub("cache"), 1);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	mkdir(sub("certificates"), 0755);
	setenv("X509_CERT_DIR", sub("certificates"), 1);
	setenv("X509_USER_PROXY", sub("proxy"), 1);
	setenv("BEARER_TOKEN", "eyJhbGciOiJub25lIn0.e30.unit-test-token", 1);
	make_proxy();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return unit_rmtree(dir);
}

static int each_setup(void **state)
{
	(void)state;
	memset(FP, 0, sizeof *FP);
	notes[0] = '\0';
	struct gg_store *st = NULL, *st2 = NULL;
	static int n;
	char d[64];
	snprintf(d, sizeof d, "records-%d", n++);
	assert_int_equal(gg_store_open(sub(d), &st, NULL), 0);
	assert_int_equal(gg_store_open(path, &st2, NULL), 0);
	struct gg_engine_callbacks cb = {.size = sizeof cb, .note = note, .open_ce = open_fake};
	assert_int_equal(gg_engine_new(st, NULL, &E, NULL), 0);
	assert_int_equal(gg_engine_new(st2, NULL, &K, NULL), 0);
	assert_int_equal(gg_engine_set_callbacks(E, &cb, NULL), 0);
	assert_int_equal(gg_engine_set_callbacks(K, &cb, NULL), 0);
	return 0;
}

static int each_teardown(void **state)
{
	(void)state;
	gg_store_free(gg_engine_store(E));
	gg_store_free(gg_engine_store(K));
	gg_engine_free(E);
	gg_engine_free(K);
	return 0;
}

static int describe(void *ud, const struct gg_record *r, const char *pubkey, struct gg_jobdesc *jd,
		    struct gg_err *err)
{
	(void)ud;
	if (r->kind == GG_REC_SESSION) {
		assert_non_null(pubkey);
		assert_int_equal(access(pubkey, R_OK), 0);
	}
	char *name = gg_strdup_printf("gridgpu-%s", r->uid);
	int rc = gg_jd_set(&jd->name, name, err);
	free(name);
	return rc ? rc : gg_jd_set(&jd->executable, "/bin/true", err);
}

static struct gg_submission job(const char *name, const char *auth)
{
	struct gg_submission s = {.prefix = "job", .describe = describe};
	s.rec.kind = GG_REC_JOB;
	s.rec.walltime = 600;
	s.rec.ce = strdup(EP);
	s.rec.name = name ? strdup(name) : NULL;
	s.rec.auth = strdup(auth);
	return s;
}

static struct gg_record load(const char *name)
{
	struct gg_record r = {0};
	assert_int_equal(gg_store_load(gg_engine_store(E), name, &r, NULL), 0);
	return r;
}

/* ---- the tests ---- */

static char seen_state[32];
static void look_at_store(void)
{
	struct gg_record *recs = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(K), &recs, &n, NULL, NULL), 0);
	assert_int_equal(n, 1);
	snprintf(seen_state, sizeof seen_state, "%s%s", gg_sess_state_name(recs[0].state),
		 recs[0].job_id ? "+job" : "");
	char want[64];
	snprintf(want, sizeof want, "gridgpu-%s", recs[0].uid);
	assert_string_equal(F.jobs[F.njobs - 1].name, want);
	gg_records_free(recs, n);
}

static void test_record_before_submit(void **state)
{
	(void)state;
	struct gg_submission s = job(NULL, "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	F.on_submit = look_at_store;
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	/* while the CE made the job, the store already held the record, without
	 * a job id: the job can be found by its name */
	assert_string_equal(seen_state, "requested");
	assert_string_equal(r.name, "job-1");
	assert_string_equal(r.job_id, "job0");
	assert_int_equal(r.state, GG_S_QUEUED);
	assert_int_equal(F.delegations, 1);
	assert_non_null(strstr(notes, "submitted job-1"));
	gg_record_clear(&r);
}

static void test_lost_answer_adopted(void **state)
{
	(void)state;
	/* The CE made the job, the answer never came (the process was killed, the
	 * connection broke): the record stays, and the next sync adopts the job. */
	struct gg_submission s = job("lost", "token");
	struct gg_record r;
	struct gg_err err = {0};
	F.submit_mode = M_LOST_ANSWER;
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), GG_ENET);
	assert_non_null(strstr(err.msg, "list --sync"));
	assert_string_equal(r.name, "lost");
	gg_record_clear(&r);
	struct gg_record kept = load("lost");
	assert_null(kept.job_id);
	assert_int_equal(kept.state, GG_S_REQUESTED);
	assert_int_equal(gg_engine_sync(K, &kept, 1, 1), 0);
	assert_string_equal(kept.job_id, "job0");
	assert_non_null(strstr(notes, "adopted lost"));
	gg_record_clear(&kept);
	struct gg_record now = load("lost");
	assert_string_equal(now.job_id, "job0");
	assert_int_equal(now.state, GG_S_QUEUED);
	gg_record_clear(&now);
}

static void die(void)
{
	raise(SIGKILL);
}

static void test_sigkill_after_submit_adopted(void **state)
{
	(void)state;
	/* gridgpu is killed (SIGKILL) once the CE has made the job, before the
	 * answer is saved: the record written first is found, and sync adopts the
	 * job by its name. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gg_submission s = job("crashed", "proxy");
		struct gg_record r;
		F.on_submit = die;
		gg_engine_submit(E, &s, &r, NULL, NULL);
		_exit(0); /* not reached */
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(F.njobs, 1);
	struct gg_record r = load("crashed");
	assert_null(r.job_id);
	assert_int_equal(r.state, GG_S_REQUESTED);
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	assert_string_equal(r.job_id, F.jobs[0].id);
	assert_int_equal(r.state, GG_S_QUEUED);
	gg_record_clear(&r);
	struct gg_record now = load("crashed");
	assert_string_equal(now.job_id, F.jobs[0].id);
	gg_record_clear(&now);
}

static void test_unsent_forgotten(void **state)
{
	(void)state;
	struct gg_submission s = job("never", "proxy");
	struct gg_record r, gone;
	struct gg_err err = {0};
	F.submit_mode = M_UNSENT;
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), GG_ENET);
	assert_non_null(strstr(err.msg, "nothing was sent"));
	gg_record_clear(&r);
	assert_int_equal(gg_store_load(gg_engine_store(E), "never", &gone, NULL), GG_ENOTFOUND);
	/* a refusal: the record is forgotten too, the CE's reason is the error */
	s = job("refused", "proxy");
	F.submit_mode = M_REFUSE;
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), GG_EJOB);
	assert_non_null(strstr(err.msg, "no such queue"));
	gg_record_clear(&r);
	assert_int_equal(gg_store_load(gg_engine_store(E), "refused", &gone, NULL), GG_ENOTFOUND);
}

static void kill_it(void)
{
	struct gg_record r = {0};
	assert_int_equal(gg_store_load(gg_engine_store(K), "victim", &r, NULL), 0);
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	assert_int_equal(r.state, GG_S_KILLED);
	gg_record_clear(&r);
}

static void test_kill_during_submit(void **state)
{
	(void)state;
	struct gg_submission s = job("victim", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	F.on_submit = kill_it; /* the kill finds no job id yet: it only marks */
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), GG_EJOB);
	assert_non_null(strstr(err.msg, "killed while it was being submitted"));
	gg_record_clear(&r);
	/* the job it made is cancelled, the record stays killed */
	assert_int_equal(F.jobs[0].state, GG_CE_KILLED);
	struct gg_record now = load("victim");
	assert_int_equal(now.state, GG_S_KILLED);
	assert_string_equal(now.job_id, "job0");
	gg_record_clear(&now);
}

static int kill_then_fail(void *ud, const struct gg_record *r, const char *pubkey,
			  struct gg_jobdesc *jd, struct gg_err *err)
{
	(void)ud, (void)pubkey, (void)jd;
	kill_it();
	assert_string_equal(r->name, "victim");
	return gg_err_set(err, GG_EIO, "cannot read the launcher");
}

static void test_kill_before_submit_not_undone(void **state)
{
	(void)state;
	/* The regression: a request that failed after a kill removed the record
	 * the kill had reported as killed. */
	struct gg_submission s = job("victim", "proxy");
	s.rec.kind = GG_REC_SESSION;
	s.make_key = 1;
	s.describe = kill_then_fail;
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), GG_EIO);
	gg_record_clear(&r);
	assert_int_equal(F.njobs, 0);
	struct gg_record now = load("victim");
	assert_int_equal(now.state, GG_S_KILLED);
	/* the key gridgpu made for it is gone */
	char pub[300];
	snprintf(pub, sizeof pub, "%s.pub", now.key);
	assert_int_equal(access(now.key, F_OK), -1);
	assert_int_equal(access(pub, F_OK), -1);
	gg_record_clear(&now);
}

static void test_session_key_made(void **state)
{
	(void)state;
	struct gg_submission s = job(NULL, "token");
	s.rec.kind = GG_REC_SESSION;
	snprintf(s.prefix, sizeof s.prefix, "tb");
	s.make_key = 1;
	struct gg_record r;
	struct gg_ce *ce = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, &ce, &err), 0);
	assert_non_null(ce);
	assert_string_equal(r.name, "tb-1");
	assert_non_null(strstr(r.key, "/gridgpu/ssh/keys/"));
	assert_int_equal(access(r.key, R_OK), 0);
	assert_int_equal(F.delegations, 0); /* a token: nothing to delegate */
	gg_ce_free(ce);
	/* kill removes the key, clean forgets the record */
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	assert_int_equal(access(r.key, F_OK), -1);
	char cleaned[1] = {0};
	assert_int_equal(gg_engine_clean(K, &r, 1, 0, cleaned), 0);
	assert_int_equal(cleaned[0], 1);
	assert_int_equal(F.jobs[0].cleaned, 1);
	struct gg_record gone;
	assert_int_equal(gg_store_load(gg_engine_store(E), "tb-1", &gone, NULL), GG_ENOTFOUND);
	gg_record_clear(&r);
}

/* ---- the handle and its callbacks ---- */

static char fails[1024];
static void fail_cb(void *ud, const struct gg_err *err, const char *what)
{
	(void)ud;
	snprintf(fails + strlen(fails), sizeof fails - strlen(fails), "%s: %s\n", what, err->msg);
}

/* A queued job whose CE no backend of the library takes (only the fake). */
static struct gg_record queued_nowhere(const char *name)
{
	struct gg_submission s = job(name, "proxy");
	free(s.rec.ce);
	s.rec.ce = strdup("gsiftp://ce.example.org/jobs");
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	return r;
}

static void test_engine_defaults(void **state)
{
	(void)state;
	struct gg_engine *e = NULL;
	assert_int_equal(gg_engine_new(gg_engine_store(K), NULL, &e, NULL), 0);
	assert_ptr_equal(gg_engine_store(e), gg_engine_store(K));
	assert_null(gg_engine_config(e));
	assert_string_equal(gg_engine_probe_why(e), "");
	assert_null(gg_engine_site(e, "east"));
	/* no callbacks: nothing told, CEs opened by the library's backends */
	struct gg_record r = queued_nowhere("plain");
	notes[0] = '\0';
	assert_int_equal(gg_engine_kill(e, &r, 1), GG_EUSAGE);
	assert_int_equal(r.state, GG_S_QUEUED);
	assert_string_equal(notes, "");
	assert_int_equal(gg_engine_set_callbacks(e, NULL, NULL), 0);
	gg_engine_free(e);
	gg_engine_free(NULL);
	gg_record_clear(&r);
}

static void test_engine_callbacks_older(void **state)
{
	(void)state;
	/* A program built when the struct ended before open_ce: its open_ce
	 * member is not read (here it is set, as if it were the bytes after a
	 * smaller struct), the ones it had are used. */
	struct gg_engine_callbacks cb = {.size = offsetof(struct gg_engine_callbacks, open_ce),
					 .note = note,
					 .fail = fail_cb,
					 .open_ce = open_fake};
	struct gg_record r = queued_nowhere("old");
	fails[0] = '\0';
	assert_int_equal(gg_engine_set_callbacks(K, &cb, NULL), 0);
	assert_int_equal(gg_engine_kill(K, &r, 1), GG_EUSAGE);
	assert_non_null(strstr(fails, "must start with https://"));
	assert_int_equal(r.state, GG_S_QUEUED);
	/* the whole struct: the fake CE opens it and the job is killed */
	cb.size = sizeof cb;
	assert_int_equal(gg_engine_set_callbacks(K, &cb, NULL), 0);
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	assert_int_equal(r.state, GG_S_KILLED);
	gg_record_clear(&r);
}

static void test_engine_callbacks_checked(void **state)
{
	(void)state;
	struct gg_err err = {0};
	struct gg_engine_callbacks cb = {.size = 0, .note = note, .open_ce = open_fake};
	assert_int_equal(gg_engine_set_callbacks(K, &cb, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "size 0"));
	/* a size that ends inside a member */
	cb.size = offsetof(struct gg_engine_callbacks, note) + 4;
	assert_int_equal(gg_engine_set_callbacks(K, &cb, &err), GG_EUSAGE);
	/* a newer program's, larger struct: fine while what it adds is unset */
	struct {
		struct gg_engine_callbacks cb;
		void *newer[2];
	} big = {.cb = {.note = note, .fail = fail_cb}};
	big.cb.size = sizeof big;
	assert_int_equal(gg_engine_set_callbacks(K, &big.cb, &err), 0);
	big.newer[1] = (void *)fail_cb;
	assert_int_equal(gg_engine_set_callbacks(K, &big.cb, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "does not know"));
	/* a refusal leaves the engine as it was: fail_cb still told */
	struct gg_record r = queued_nowhere("kept");
	fails[0] = '\0';
	assert_int_equal(gg_engine_kill(K, &r, 1), GG_EUSAGE);
	assert_non_null(strstr(fails, "must start with https://"));
	gg_record_clear(&r);
}

static void test_kill_own_credential(void **state)
{
	(void)state;
	/* The regression: records on one CE, one made with a token and one with
	 * the proxy, were all killed with the first record's credential. */
	struct gg_record recs[2];
	struct gg_err err = {0};
	struct gg_submission s = job("with-token", "token");
	assert_int_equal(gg_engine_submit(E, &s, &recs[0], NULL, &err), 0);
	s = job("with-proxy", "proxy");
	assert_int_equal(gg_engine_submit(E, &s, &recs[1], NULL, &err), 0);
	F.opens = 0;
	assert_int_equal(gg_engine_kill(K, recs, 2), 0);
	assert_int_equal(F.opens, 2);
	assert_string_equal(F.jobs[0].killed_with, "token");
	assert_string_equal(F.jobs[1].killed_with, "proxy");
	assert_int_equal(recs[0].state, GG_S_KILLED);
	assert_int_equal(recs[1].state, GG_S_KILLED);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

static void test_groups(void **state)
{
	(void)state;
	struct gg_record r[5] = {
		{.name = "a", .ce = EP, .auth = "proxy"},
		{.name = "b", .ce = EP, .auth = "token"},
		{.name = "c", .ce = EP},
		{.name = "d"},
		{.name = "e", .ce = "https://other/arex", .auth = "proxy"},
	};
	struct gg_rec_group *g = NULL;
	size_t ng = 0;
	assert_int_equal(gg_records_by_endpoint(r, 5, NULL, &g, &ng, NULL), 0);
	assert_int_equal(ng, 4);
	/* a and c (no auth: the proxy) together, b alone, d without a CE, e */
	assert_int_equal(g[0].n, 2);
	assert_int_equal(g[0].idx[1], 2);
	assert_string_equal(g[1].auth, "token");
	assert_null(g[2].ce);
	assert_string_equal(g[3].ce, "https://other/arex");
	gg_rec_groups_free(g, ng);
}

static void test_sync_unreachable_keeps(void **state)
{
	(void)state;
	struct gg_submission s = job("kept", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	/* no proxy, and no token to stand in: the CE cannot be asked, the
	 * record stays as it was */
	char away[300];
	snprintf(away, sizeof away, "%s.away", sub("proxy"));
	assert_int_equal(rename(sub("proxy"), away), 0);
	char *token = strdup(getenv("BEARER_TOKEN"));
	unsetenv("BEARER_TOKEN");
	int rc = gg_engine_sync(K, &r, 1, 1);
	struct gg_record kept = load("kept");
	assert_int_equal(kept.state, GG_S_QUEUED);
	gg_record_clear(&kept);
	/* with a token at hand, the token stands in for the missing proxy */
	setenv("BEARER_TOKEN", token, 1);
	free(token);
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	assert_int_equal(rename(away, sub("proxy")), 0);
	assert_int_equal(rc, GG_ECRED);
	assert_string_equal(F.jobs[0].killed_with, "token");
	struct gg_record now = load("kept");
	assert_int_equal(now.state, GG_S_KILLED);
	gg_record_clear(&now);
	gg_record_clear(&r);
}

/* A refresh writes only what changed (issue 52): a sync that finds every
 * record as it was writes no file and asks the disk for no sync; one that
 * finds two of five changed writes those two, on the disk together (one sync
 * of the files, one of the directory), and each is as the CE said. */
static void test_sync_writes_changes_only(void **state)
{
	(void)state;
	struct gg_record r[5];
	struct gg_err err = {0};
	char name[16];
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof name, "many-%d", i);
		struct gg_submission s = job(name, "proxy");
		assert_int_equal(gg_engine_submit(E, &s, &r[i], NULL, &err), 0);
	}
	struct gg_store *st = gg_engine_store(K);
	struct gg_store_io before, after;
	assert_int_equal(gg_engine_sync(K, r, 5, 1), 0); /* the CE's words, once */
	gg_store_io_get(st, &before);
	assert_int_equal(gg_engine_sync(K, r, 5, 1), 0);
	gg_store_io_get(st, &after);
	assert_int_equal(after.writes, before.writes);
	assert_int_equal(after.syncs, before.syncs);
	F.jobs[1].state = GG_CE_FINISHED;
	F.jobs[3].state = GG_CE_KILLED;
	assert_int_equal(gg_engine_sync(K, r, 5, 1), 0);
	gg_store_io_get(st, &after);
	assert_int_equal(after.writes - before.writes, 2);
	assert_int_equal(after.syncs - before.syncs, 2);
	struct gg_record fin = load("many-1"), killed = load("many-3"), same = load("many-2");
	assert_int_equal(fin.state, GG_S_FINISHED);
	assert_int_equal(killed.state, GG_S_KILLED);
	assert_int_equal(same.state, GG_S_QUEUED);
	gg_record_clear(&fin);
	gg_record_clear(&killed);
	gg_record_clear(&same);
	for (int i = 0; i < 5; i++)
		gg_record_clear(&r[i]);
}

/* Several CEs at once (issue 52): a sync asks each CE on its own thread and
 * saves each CE's records as soon as it has answered. The slow CE's status
 * answer is held until the watcher has seen the fast CE's record saved (or has
 * waited 30 s for it): asked one after the other, slow first, the fast record
 * could not be saved before the slow CE answered. */
#define EP_SLOW "https://slow.example.org:443/arex"
static struct {
	struct gg_store *st;
	int release, saw;
} watch;

static void *watch_fast(void *ud)
{
	(void)ud;
	for (int i = 0; i < 3000 && !watch.saw; i++) {
		struct gg_record r = {0};
		if (gg_store_load(watch.st, "fast", &r, NULL) == 0) {
			watch.saw = r.state == GG_S_RUNNING;
			gg_record_clear(&r);
		}
		struct timespec ts = {0, 10000000};
		if (!watch.saw)
			nanosleep(&ts, NULL); /* a bounded poll: what is observed decides */
	}
	if (write(watch.release, "x", 1) != 1) /* the slow CE answers */
		watch.saw = -1;
	return NULL;
}

static void test_sync_ces_in_parallel(void **state)
{
	(void)state;
	struct gg_record r[2];
	struct gg_err err = {0};
	struct gg_submission slow = job("slow", "proxy"), fast = job("fast", "proxy");
	free(slow.rec.ce);
	slow.rec.ce = strdup(EP_SLOW);
	assert_int_equal(gg_engine_submit(E, &slow, &r[0], NULL, &err), 0);
	assert_int_equal(gg_engine_submit(E, &fast, &r[1], NULL, &err), 0);
	F.jobs[0].state = F.jobs[1].state = GG_CE_RUNNING;
	int p[2];
	assert_int_equal(pipe(p), 0);
	F.hold_fd = p[0];
	snprintf(F.hold_ep, sizeof F.hold_ep, "%s", EP_SLOW);
	watch.release = p[1];
	watch.saw = 0;
	assert_int_equal(gg_store_open(gg_store_dir(gg_engine_store(E)), &watch.st, NULL), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, watch_fast, NULL), 0);
	assert_int_equal(gg_engine_sync(K, r, 2, 1), 0);
	pthread_join(th, NULL);
	assert_int_equal(watch.saw, 1);
	struct gg_record s = load("slow");
	assert_int_equal(s.state, GG_S_RUNNING); /* and the slow one once it answered */
	gg_record_clear(&s);
	F.hold_ep[0] = '\0';
	close(p[0]);
	close(p[1]);
	gg_store_free(watch.st);
	gg_record_clear(&r[0]);
	gg_record_clear(&r[1]);
}

/* A-REX says RUNNING while Slurm holds the job PENDING: the batch system's
 * word makes it queued (with the CE's INLRMS:Q), only for records that may
 * still wait, and running once the batch system runs it. */
static void test_sync_lrms_queued(void **state)
{
	(void)state;
	struct gg_submission s = job("waits", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_RUNNING;
	F.jobs[0].lrms_queued = 1;
	/* the live list's RUNNING before the info document caught up (it still
	 * says SUBMITTING): not known to run, so queued, not running then queued */
	F.jobs[0].lrms_queued = 2;
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	struct gg_record lag = load("waits");
	assert_int_equal(lag.state, GG_S_QUEUED);
	assert_int_equal(F.lrms_asked, 1);
	gg_record_clear(&lag);
	F.jobs[0].lrms_queued = 1;
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	struct gg_record q = load("waits");
	assert_int_equal(q.state, GG_S_QUEUED);
	assert_string_equal(q.ce_state, "INLRMS:Q");
	assert_int_equal(F.lrms_asked, 2);
	gg_record_clear(&q);
	F.jobs[0].lrms_queued = 0;
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	struct gg_record run = load("waits");
	assert_int_equal(run.state, GG_S_RUNNING);
	assert_int_equal(F.lrms_asked, 3);
	/* running is not asked again: one request less per sync */
	assert_int_equal(gg_engine_sync(K, &run, 1, 1), 0);
	assert_int_equal(F.lrms_asked, 3);
	gg_record_clear(&run);
	gg_record_clear(&r);
}

/* The batch system's view asked ahead (issue 52): with a CE that can be
 * asked twice at once, the info of the records that may still wait goes on a
 * second handle while the status call is awaited (one request's time, not
 * two), once; its word counts only where the status call says running. */
static void test_sync_lrms_ahead(void **state)
{
	(void)state;
	struct gg_record r[2];
	struct gg_err err = {0};
	for (int i = 0; i < 2; i++) {
		struct gg_submission s = job(i ? "ahead-q" : "ahead-r", "proxy");
		assert_int_equal(gg_engine_submit(E, &s, &r[i], NULL, &err), 0);
	}
	F.clonable = 1;
	F.jobs[0].state = GG_CE_RUNNING; /* the CE: running; the batch system: queued */
	F.jobs[0].lrms_queued = 1;
	F.jobs[1].state = GG_CE_QUEUED; /* the CE's own queue: the view is not used */
	assert_int_equal(gg_engine_sync(K, r, 2, 1), 0);
	assert_int_equal(F.clones, 1);
	assert_int_equal(F.overlap, 1);
	assert_int_equal(F.lrms_asked, 2); /* both may wait, asked once each */
	struct gg_record a = load("ahead-r"), b = load("ahead-q");
	assert_int_equal(a.state, GG_S_QUEUED);
	assert_string_equal(a.ce_state, "INLRMS:Q");
	assert_int_equal(b.state, GG_S_QUEUED);
	assert_string_not_equal(b.ce_state ? b.ce_state : "", "INLRMS:R");
	gg_record_clear(&a);
	gg_record_clear(&b);
	/* once the batch system runs it, it is running */
	F.jobs[0].lrms_queued = 0;
	assert_int_equal(gg_engine_sync(K, r, 2, 1), 0);
	struct gg_record run = load("ahead-r");
	assert_int_equal(run.state, GG_S_RUNNING);
	gg_record_clear(&run);
	for (int i = 0; i < 2; i++)
		gg_record_clear(&r[i]);
}

/* The batch system ended the work at its walltime: the reason says so (with
 * the CE's words); a session has ended as planned, a batch job failed. */
static void test_sync_walltime(void **state)
{
	(void)state;
	struct gg_submission s = job("long", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_FAILED;
	F.jobs[0].failed = "LRMS error: (271) Job timeout\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	struct gg_record j = load("long");
	assert_int_equal(j.state, GG_S_FAILED);
	assert_string_equal(j.error, "ended by walltime: its walltime (10m) ran out and the batch "
				     "system stopped the job (CE: LRMS error: (271) Job timeout)");
	gg_record_clear(&j);
	gg_record_clear(&r);
	/* the same for a session: finished, with that reason */
	struct gg_submission s2 = job("sess", "proxy");
	s2.rec.kind = GG_REC_SESSION;
	s2.make_key = 1;
	assert_int_equal(gg_engine_submit(E, &s2, &r, NULL, &err), 0);
	F.jobs[1].state = GG_CE_FAILED;
	F.jobs[1].failed = "LRMS error: (271) Job timeout";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	struct gg_record q = load("sess");
	assert_int_equal(q.state, GG_S_FINISHED);
	assert_non_null(strstr(q.error, "ended by walltime"));
	gg_record_clear(&q);
	gg_record_clear(&r);
	/* any other failure stays one, in the CE's words */
	struct gg_submission s3 = job("bad", "proxy");
	assert_int_equal(gg_engine_submit(E, &s3, &r, NULL, &err), 0);
	F.jobs[2].state = GG_CE_FAILED;
	F.jobs[2].failed = "LRMS error: (1) Job failed";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	struct gg_record b = load("bad");
	assert_int_equal(b.state, GG_S_FAILED);
	assert_string_equal(b.error, "LRMS error: (1) Job failed");
	gg_record_clear(&b);
	gg_record_clear(&r);
	/* a slurm+ssh CE's word for it (Slurm's TIMEOUT): the same sentence */
	struct gg_submission s4 = job("slurm", "proxy");
	assert_int_equal(gg_engine_submit(E, &s4, &r, NULL, &err), 0);
	F.jobs[3].state = GG_CE_FAILED;
	F.jobs[3].failed = "Slurm: TIMEOUT";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	struct gg_record t = load("slurm");
	assert_int_equal(t.state, GG_S_FAILED);
	assert_string_equal(t.error, "ended by walltime: its walltime (10m) ran out and the batch "
				     "system stopped the job (Slurm: TIMEOUT)");
	gg_record_clear(&t);
	gg_record_clear(&r);
}

/* A failed job whose wrapper recorded how its command ended: the reason says
 * it in the user's words and the record keeps the stderr tail, read once (the
 * CE's node log is not fetched then); the CE's walltime still comes first; a
 * command that exited 0 in a failed job keeps the CE's reason and says so. */
static void test_sync_command_exit(void **state)
{
	(void)state;
	struct gg_record r;
	struct gg_err err = {0};
	struct gg_submission s = job("e3", "proxy");
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_FAILED;
	F.jobs[0].failed = "LRMS error: (3) Job failed";
	F.jobs[0].exit_file = "gridgpu-job-exit 1\nexit 3\noom-kills 0\nstderr-bytes 15\nstderr\n"
			      "one\ntwo \x1b[31m!\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	struct gg_record j = load("e3");
	assert_int_equal(j.state, GG_S_FAILED);
	assert_string_equal(j.error, "the command exited 3");
	assert_int_equal(j.exit_status, 3);
	assert_true(j.exit_read > 0);
	assert_string_equal(j.stderr_tail, "one\ntwo \\x1b[31m!");
	assert_int_equal(F.exit_gets, 1);
	assert_int_equal(F.err_gets, 0);
	gg_record_clear(&j);
	/* ended: not asked again */
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	assert_int_equal(F.exit_gets, 1);
	gg_record_clear(&r);
	/* exited 0, failed after it (output staging) */
	struct gg_submission s2 = job("e0", "proxy");
	assert_int_equal(gg_engine_submit(E, &s2, &r, NULL, &err), 0);
	F.jobs[1].state = GG_CE_FAILED;
	F.jobs[1].failed = "Failed in data staging: output file upload failed";
	F.jobs[1].exit_file = "gridgpu-job-exit 1\nexit 0\nstderr-bytes 0\nstderr\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	j = load("e0");
	assert_string_equal(j.error, "Failed in data staging: output file upload failed (the "
				     "command exited 0: the job failed after it)");
	assert_null(j.stderr_tail);
	gg_record_clear(&j);
	gg_record_clear(&r);
	/* the walltime: the CE's words, the stderr tail kept */
	struct gg_submission s3 = job("ew", "proxy");
	assert_int_equal(gg_engine_submit(E, &s3, &r, NULL, &err), 0);
	F.jobs[2].state = GG_CE_FAILED;
	F.jobs[2].failed = "LRMS error: (271) Job timeout";
	F.jobs[2].exit_file = "gridgpu-job-exit 1\nexit 143\nstderr-bytes 6\nstderr\nstep 9\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	j = load("ew");
	assert_non_null(strstr(j.error, "ended by walltime"));
	assert_string_equal(j.stderr_tail, "step 9");
	gg_record_clear(&j);
	gg_record_clear(&r);
	/* killed by a signal; out of memory */
	struct gg_submission s4 = job("ek", "proxy");
	assert_int_equal(gg_engine_submit(E, &s4, &r, NULL, &err), 0);
	F.jobs[3].state = GG_CE_FAILED;
	F.jobs[3].exit_file = "gridgpu-job-exit 1\nexit 137\noom-kills 1\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	j = load("ek");
	assert_int_equal(strncmp(j.error, "the command ran out of its memory", 33), 0);
	gg_record_clear(&j);
	gg_record_clear(&r);
}

/* status's CE diagnostics: the errors log of a failed job, nothing for one
 * that has not failed (the CE is not asked), the CE's error when it has none. */
static void test_ce_errors(void **state)
{
	(void)state;
	struct gg_submission s = job("broken", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	char *text = (char *)"unset";
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	int opens = F.opens;
	assert_int_equal(gg_engine_ce_errors(K, &r, &text, &err), 0);
	assert_null(text);
	assert_int_equal(F.opens, opens);
	F.jobs[0].state = GG_CE_FAILED;
	F.jobs[0].failed = "LRMS error: (1) Job failed";
	assert_int_equal(gg_engine_sync(K, &r, 1, 0), 0);
	assert_int_equal(r.state, GG_S_FAILED);
	assert_int_equal(gg_engine_ce_errors(K, &r, &text, &err), GG_ENOTFOUND);
	assert_null(text);
	F.jobs[0].errors = "DTR 1: staging in of data.h5 failed\nline 2\n";
	assert_int_equal(gg_engine_ce_errors(K, &r, &text, &err), 0);
	assert_string_equal(text, "DTR 1: staging in of data.h5 failed\nline 2\n");
	free(text);
	gg_record_clear(&r);
}

/* A node's reason for the end that reads like the client's own about an unreadable
 * file is the node's word, taken as it is: the session is not marked unreadable and
 * its reason not rewritten. The regression: the reason's words were the mark, so the
 * node's text was taken for the client's and rewritten ("it ended while ..."). */
static void test_session_file_reason_like_ours(void **state)
{
	(void)state;
	struct gg_submission s = job("mimic", "proxy");
	s.rec.kind = GG_REC_SESSION;
	s.make_key = 1;
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_FINISHED;
	F.jobs[0].session_file = "{\"version\":1,\"state\":\"ended\",\"reason\":\"the session "
				 "file the node published cannot be read: x\"}";
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	struct gg_record q = load("mimic");
	assert_int_equal(q.state, GG_S_FINISHED);
	assert_false(gg_launch_unreadable(&q));
	assert_null(q.launch_error);
	assert_string_equal(q.error, "the session file the node published cannot be read: x");
	gg_record_clear(&q);
	gg_record_clear(&r);
}

static int set_state(struct gg_record *r, void *ud)
{
	r->state = *(enum gg_sess_state *)ud;
	return 0;
}

/* A session file that does not parse (what a launcher that did not escape a
 * process named ad"v wrote) is transient: the session keeps its state, the
 * reason says why, and a good file later clears it. The regression: the
 * session was marked failed for good. */
static void test_session_file_unreadable(void **state)
{
	(void)state;
	struct gg_submission s = job("sess", "proxy");
	s.rec.kind = GG_REC_SESSION;
	s.make_key = 1;
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_RUNNING;
	F.jobs[0].session_file = "{\"version\":1,\"state\":\"ready\",\"idle_since\":0,"
				 "\"active_reason\":\"process ad\"v\"}\n";
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	struct gg_record q = load("sess");
	assert_int_equal(q.state, GG_S_STARTING);
	assert_true(gg_launch_unreadable(&q));
	assert_non_null(strstr(q.error, "not valid JSON"));
	assert_non_null(q.launch_error); /* its own field, kept in the store */
	assert_int_equal(strncmp(q.launch_error, "not valid JSON", 14), 0);
	gg_record_clear(&q);
	/* a ready session stays ready (connect goes by its pinned key) */
	enum gg_sess_state ready = GG_S_READY;
	assert_int_equal(gg_store_update(gg_engine_store(E), "sess", set_state, &ready, NULL, &err),
			 0);
	gg_record_clear(&r);
	r = load("sess");
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	q = load("sess");
	assert_int_equal(q.state, GG_S_READY);
	assert_true(gg_launch_unreadable(&q));
	gg_record_clear(&q);
	/* the next good file: the reason is gone, its activity taken */
	F.jobs[0].session_file = "{\"version\":1,\"state\":\"starting\",\"logins\":2}";
	gg_record_clear(&r);
	r = load("sess");
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	q = load("sess");
	assert_int_equal(q.state, GG_S_READY);
	assert_null(q.error);
	gg_record_clear(&q);
	/* the job ends while the file cannot be read: finished, and the reason
	 * says why for good, no longer that it is read again */
	F.jobs[0].session_file = "{not json";
	F.jobs[0].state = GG_CE_FINISHED;
	gg_record_clear(&r);
	r = load("sess");
	assert_int_equal(gg_engine_sync(K, &r, 1, 1), 0);
	q = load("sess");
	assert_int_equal(q.state, GG_S_FINISHED);
	assert_false(gg_launch_unreadable(&q));
	assert_non_null(q.error);
	assert_non_null(strstr(q.error, "it ended while the session file the node published "
					"could not be read: not valid JSON"));
	assert_null(strstr(q.error, "read again"));
	gg_record_clear(&q);
	gg_record_clear(&r);
}

/* kill asks the CE to end the job of a record marked failed or finished here
 * (its job may still run); what the CE says of it is no failure of the kill,
 * and the record keeps its state. The regression: such a job was left to run
 * until its walltime. */
static void test_kill_ended_record(void **state)
{
	(void)state;
	struct gg_submission s = job("gone", "proxy");
	struct gg_record r;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, &err), 0);
	F.jobs[0].state = GG_CE_RUNNING;
	enum gg_sess_state failed = GG_S_FAILED;
	assert_int_equal(
		gg_store_update(gg_engine_store(E), "gone", set_state, &failed, NULL, &err), 0);
	gg_record_clear(&r);
	r = load("gone");
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	assert_int_equal(F.jobs[0].state, GG_CE_KILLED);
	assert_non_null(strstr(notes, "gone has failed already"));
	struct gg_record q = load("gone");
	assert_int_equal(q.state, GG_S_FAILED);
	gg_record_clear(&q);
	/* again, the job now unknown to the CE (404): still no failure */
	F.jobs[0].cleaned = 1;
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	gg_record_clear(&r);
}

/* ---- what the user asked for, as a submission (submission.c) ---- */

static struct gg_site site_named(const char *name, const char *ce)
{
	return (struct gg_site){.name = (char *)name, .ce = (char *)ce};
}

static struct gg_session_spec *session_spec(const struct gg_jd_resources *res, int64_t deadline,
					    const char *image)
{
	struct gg_session_spec *q = NULL;
	assert_int_equal(gg_session_spec_new(&q, NULL), 0);
	assert_int_equal(gg_session_spec_set_resources(q, res, NULL), 0);
	if (deadline)
		assert_int_equal(gg_session_spec_set_deadline(q, deadline, NULL), 0);
	assert_int_equal(gg_session_spec_set_image(q, image, NULL), 0);
	return q;
}

static void test_session_submission(void **state)
{
	(void)state;
	struct gg_site site = site_named("uni.example", EP);
	site.connect_deadline = 600;
	site.image = (char *)"site-image";
	struct gg_jd_resources res = {.walltime = 3600, .gpus = 2};
	struct gg_session_spec *q = session_spec(&res, 0, NULL);
	assert_int_equal(gg_session_spec_defaults(q, &site, NULL), 0);
	assert_int_equal(gg_session_spec_deadline(q), 600);
	assert_string_equal(gg_session_spec_image(q), "site-image");
	struct gg_session_spec *own = session_spec(&(struct gg_jd_resources){0}, 60, "mine");
	assert_int_equal(gg_session_spec_defaults(own, NULL, NULL), 0);
	assert_int_equal(gg_session_spec_deadline(own), 60);
	assert_string_equal(gg_session_spec_image(own), "mine");
	struct gg_session_spec *none = session_spec(&(struct gg_jd_resources){0}, 0, NULL);
	assert_int_equal(gg_session_spec_defaults(none, NULL, NULL), 0);
	assert_int_equal(gg_session_spec_deadline(none), 20 * 60);
	gg_session_spec_free(own);
	gg_session_spec_free(none);

	struct gg_submission s;
	gg_session_submission(&s, q, &site, EP, NULL, NULL, 0);
	/* SITE-N without the '.' a session name may not have */
	assert_string_equal(s.prefix, "uni-example");
	assert_int_equal(s.make_key, 1);
	assert_ptr_equal(s.session, q);
	assert_int_equal(s.rec.kind, GG_REC_SESSION);
	assert_int_equal(s.rec.gpus, 2);
	assert_int_equal(s.rec.connect_deadline, 600);
	assert_string_equal(s.rec.auth, "proxy");
	assert_string_equal(s.rec.image, "site-image");
	gg_record_clear(&s.rec);
	site.auth = (char *)"token";
	gg_session_submission(&s, q, &site, EP, "dev", "/home/u/.ssh/id", 0);
	assert_int_equal(s.make_key, 0);
	assert_string_equal(s.rec.key, "/home/u/.ssh/id");
	assert_string_equal(s.rec.auth, "token");
	assert_string_equal(s.rec.name, "dev");
	gg_record_clear(&s.rec);
	gg_session_spec_free(q);
}

/* A job spec of local inputs and output patterns (n of each). */
static struct gg_job_spec *files_spec(const char *const *in, int nin, const char *const *out,
				      int nout)
{
	struct gg_job_spec *q = NULL;
	assert_int_equal(gg_job_spec_new(&q, NULL), 0);
	for (int i = 0; i < nin; i++)
		assert_int_equal(gg_job_spec_add_input(q, in[i], NULL), 0);
	for (int i = 0; i < nout; i++)
		assert_int_equal(gg_job_spec_add_output(q, out[i], NULL), 0);
	return q;
}

/* gg_job_spec_check of such a spec (or of one with only an image URL). */
static int check_files(const char *const *in, int nin, const char *const *out, int nout,
		       const char *image_url, struct gg_err *err)
{
	struct gg_job_spec *q = files_spec(in, nin, out, nout);
	assert_int_equal(gg_job_spec_set_image_url(q, image_url, NULL), 0);
	int rc = gg_job_spec_check(q, err);
	gg_job_spec_free(q);
	return rc;
}

/* A job spec of an image, a wrapper and a command (walltime 10 min). */
static struct gg_job_spec *command_spec(const char *const *cmd, int n)
{
	struct gg_job_spec *q = files_spec(NULL, 0, NULL, 0);
	assert_int_equal(
		gg_job_spec_set_resources(q, &(struct gg_jd_resources){.walltime = 600}, NULL), 0);
	assert_int_equal(gg_job_spec_set_image(q, "/dev/null", NULL), 0);
	assert_int_equal(gg_job_spec_set_wrapper(q, "/dev/null", NULL), 0);
	assert_int_equal(gg_job_spec_set_command(q, cmd, n, NULL), 0);
	return q;
}

static void test_job_spec_check(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *in[] = {"data/a.root", "b.txt", "other/a.root"};
	const char *out[] = {"result.h5", "../x"};
	assert_int_equal(check_files(in, 2, out, 1, NULL, &err), 0);
	assert_int_equal(check_files(in, 3, out, 1, NULL, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "both would be 'a.root'"));
	const char *own[] = {"x/image.sif"};
	assert_int_equal(check_files(own, 1, out, 1, NULL, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "the job's own file"));
	assert_int_equal(check_files(NULL, 0, out, 2, NULL, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--output '../x'"));
	/* names with control characters (the CE would wait for them forever): refused;
	 * other bytes are names */
	const char *ctl_in[] = {"data/a\nb.root"}, *ctl_out[] = {"r\x1b[2Jx", "r\x7f"};
	const char *fine[] = {"r\xc3\xa9sum\xc3\xa9 1.txt"};
	assert_int_equal(check_files(ctl_in, 1, NULL, 0, NULL, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "control character"));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(check_files(NULL, 0, ctl_out + i, 1, NULL, &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "--output"));
	}
	assert_int_equal(check_files(fine, 1, fine, 1, NULL, &err), 0);
	/* --image-url: only what the CE's data staging fetches */
	const char *bad_url[] = {"file:///tmp/x.sif", "http://se/x.sif", "/tmp/x.sif",
				 "https://se/x\n.sif"};
	for (size_t i = 0; i < sizeof bad_url / sizeof bad_url[0]; i++) {
		assert_int_equal(check_files(NULL, 0, NULL, 0, bad_url[i], &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "--image-url"));
	}
	assert_int_equal(check_files(NULL, 0, NULL, 0, "file:///tmp/x.sif", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "a local file: give its path"));
	const char *good_url[] = {"https://se.example/store/x.sif", "davs://se:2880/x.sif",
				  "root://se.example:1094//store/x.sif"};
	for (size_t i = 0; i < sizeof good_url / sizeof good_url[0]; i++)
		assert_int_equal(check_files(NULL, 0, NULL, 0, good_url[i], &err), 0);
}

/* Copies of a job whose outputs go to storage would all write the same URLs. */
/* --min-capability's X.Y, and --match-dev-gpu filling what was not given. */
static void test_capability_and_dev(void **state)
{
	(void)state;
	char cc[16] = "";
	struct gg_err err = {0};
	assert_int_equal(gg_capability_parse("8.0", cc, sizeof cc, &err), 0);
	assert_string_equal(cc, "8.0");
	assert_int_equal(gg_capability_parse("09.06", cc, sizeof cc, &err), 0);
	assert_string_equal(cc, "9.6");
	const char *bad[] = {"8", "8.", "8.0x", "x.0", "100.0", "8.100", ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(gg_capability_parse(bad[i], cc, sizeof cc, &err), GG_EUSAGE);
		char want[64];
		snprintf(want, sizeof want, "'%s': expected X.Y, e.g. 8.0", bad[i]);
		assert_string_equal(err.msg, want);
	}
	struct gg_dev_gpu dev = {.cc = "8.6", .memory = 24ull << 30, .name = "RTX"};
	struct gg_jd_resources res = {0};
	char min_cc[16] = "";
	gg_job_match_dev(&res, &dev, min_cc, sizeof min_cc);
	assert_string_equal(min_cc, "8.6");
	assert_int_equal(res.min_gpu_memory, 24ull << 30);
	/* what was given explicitly stays */
	strcpy(min_cc, "7.0");
	res.min_gpu_memory = 1ull << 30;
	gg_job_match_dev(&res, &dev, min_cc, sizeof min_cc);
	assert_string_equal(min_cc, "7.0");
	assert_int_equal(res.min_gpu_memory, 1ull << 30);
	/* a development GPU that says nothing changes nothing */
	struct gg_dev_gpu none = {0};
	min_cc[0] = '\0';
	res.min_gpu_memory = 0;
	gg_job_match_dev(&res, &none, min_cc, sizeof min_cc);
	assert_string_equal(min_cc, "");
	assert_int_equal(res.min_gpu_memory, 0);
}

static void test_job_count(void **state)
{
	(void)state;
	struct gg_site plain = site_named("a", "https://a.example/arex");
	struct gg_site based = site_named("b", "https://b.example/arex");
	based.output_base = (char *)"davs://se.example:1094/store/u/";
	const struct gg_site *one[] = {&plain}, *two[] = {&plain, &based};
	const char *outs[] = {"result.root"};
	struct gg_job_spec *q = files_spec(NULL, 0, outs, 1);
	struct gg_err err = {0};
	/* outputs back through the CE: any count */
	assert_int_equal(gg_job_count_check(q, 5, one, 1, &err), 0);
	/* a site with an output base: one copy only */
	assert_int_equal(gg_job_count_check(q, 1, two, 2, &err), 0);
	assert_int_equal(gg_job_count_check(q, 3, two, 2, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--count 3: every job would upload its outputs to the same "
					"storage URL"));
	gg_job_spec_free(q);
	/* --output NAME=URL */
	q = files_spec(NULL, 0, NULL, 0);
	assert_int_equal(gg_job_spec_add_data_output(q, "r.root", "davs://se/r.root", NULL), 0);
	assert_int_equal(gg_job_count_check(q, 2, one, 1, &err), GG_EUSAGE);
	assert_int_equal(gg_job_count_check(q, 1, one, 1, &err), 0);
	gg_job_spec_free(q);
}

static void test_job_spread(void **state)
{
	(void)state;
	struct gg_site a = site_named("a", "https://a.example/arex");
	struct gg_site b = site_named("b", "https://b.example/arex");
	const struct gg_site *sites[] = {&a, &b};
	const char *cmd[] = {"python3", "train.py"};
	struct gg_job_spec *q = command_spec(cmd, 2);
	struct gg_record r;
	struct gg_err err = {0};
	/* a refuses the first job: it goes to b, a warning names a */
	F.refuse_next = 1;
	assert_int_equal(gg_engine_submit_job(E, q, sites, 2, 0, NULL, 0, &r, &err), 0);
	assert_string_equal(r.site, "b");
	assert_string_equal(r.command, "python3 train.py");
	assert_string_equal(F.submitted_to[0], "https://b.example/arex");
	assert_non_null(strstr(notes, "site a: the CE refused the job: no GPUs here"));
	gg_record_clear(&r);
	/* the second job's turn starts at b */
	assert_int_equal(gg_engine_submit_job(E, q, sites, 2, 1, "named", 1, &r, &err), 0);
	assert_string_equal(r.site, "b");
	assert_string_equal(r.auth, "token");
	gg_record_clear(&r);
	/* nobody takes it: the last error, no record left behind */
	F.submit_mode = M_REFUSE;
	assert_int_equal(gg_engine_submit_job(E, q, sites, 2, 0, "nowhere", 0, &r, &err), GG_EJOB);
	assert_non_null(strstr(err.msg, "no such queue"));
	struct gg_record gone = {0};
	assert_int_equal(gg_store_load(gg_engine_store(E), "nowhere", &gone, NULL), GG_ENOTFOUND);
	gg_job_spec_free(q);
}

/* What gg_engine_submit_many told of each job. */
static struct told {
	int n, rc[8], kept[8];
	char names[8][32], msg[8][GG_ERR_MSG_MAX];
} T;

static void told(void *ud, int index, int rc, const struct gg_record *r, const struct gg_err *err)
{
	(void)ud;
	assert_true(index >= 0 && index < 8);
	T.n++;
	T.rc[index] = rc;
	T.kept[index] = r != NULL;
	snprintf(T.names[index], sizeof T.names[0], "%s", r ? r->name : "");
	snprintf(T.msg[index], sizeof T.msg[0], "%s", rc ? err->msg : "");
}

static size_t nrecords(void)
{
	struct gg_record *recs = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(E), &recs, &n, NULL, NULL), 0);
	gg_records_free(recs, n);
	return n;
}

static void test_submit_many(void **state)
{
	(void)state;
	struct gg_site a = site_named("a", "https://a.example/arex");
	const struct gg_site *sites[] = {&a};
	const char *cmd[] = {"python3", "train.py"};
	struct gg_job_spec *q = command_spec(cmd, 2);
	struct gg_err err = {0};
	memset(&T, 0, sizeof T);
	/* the CE refuses the 2nd and the 4th of 5: one request, one delegation;
	 * three records queued with their job ids, none for the refused */
	F.refuse_at = 1u << 2 | 1u << 4;
	assert_int_equal(gg_engine_submit_many(E, q, sites, 1, 5, 0, told, NULL, &err), 0);
	assert_int_equal(T.n, 5);
	assert_int_equal(F.many_calls, 1);
	assert_int_equal(F.delegations, 1);
	assert_int_equal(F.opens, 1);
	assert_int_equal(T.rc[0] | T.rc[2] | T.rc[4], 0);
	assert_int_equal(T.rc[1], GG_EJOB);
	assert_int_equal(T.rc[3], GG_EJOB);
	assert_false(T.kept[1] || T.kept[3]);
	assert_string_equal(T.msg[1], "the CE refused the job: no GPUs here (code 500)");
	assert_int_equal(nrecords(), 3);
	struct gg_record r = load(T.names[2]);
	assert_int_equal(r.state, GG_S_QUEUED);
	assert_string_equal(r.job_id, "job1");
	gg_record_clear(&r);
	/* the answer lost: every record kept for adoption (no job id yet) */
	memset(&T, 0, sizeof T);
	F.refuse_at = 0;
	F.submit_mode = M_LOST_ANSWER;
	assert_int_equal(gg_engine_submit_many(E, q, sites, 1, 2, 0, told, NULL, &err), 0);
	assert_true(T.kept[0] && T.kept[1]);
	assert_int_equal(T.rc[0], GG_ENET);
	assert_non_null(strstr(T.msg[1], "the CE may have the job"));
	assert_int_equal(nrecords(), 5);
	r = load(T.names[1]);
	assert_int_equal(r.state, GG_S_REQUESTED);
	assert_null(r.job_id);
	gg_record_clear(&r);
	/* the CE not reached: nothing sent, no record left */
	memset(&T, 0, sizeof T);
	F.submit_mode = M_UNSENT;
	assert_int_equal(gg_engine_submit_many(E, q, sites, 1, 3, 0, told, NULL, &err), 0);
	assert_false(T.kept[0] || T.kept[1] || T.kept[2]);
	assert_non_null(strstr(T.msg[2], "the CE was not reached, nothing was sent"));
	assert_int_equal(nrecords(), 5);
	gg_job_spec_free(q);
}

static void kill_job2(void)
{
	struct gg_record r = {0};
	assert_int_equal(gg_store_load(gg_engine_store(K), "job-2", &r, NULL), 0);
	assert_int_equal(gg_engine_kill(K, &r, 1), 0);
	gg_record_clear(&r);
}

static void test_submit_many_kill_wins(void **state)
{
	(void)state;
	struct gg_site a = site_named("a", "https://a.example/arex");
	struct gg_site b = site_named("b", "https://b.example/arex");
	const struct gg_site *sites[] = {&a, &b};
	const char *cmd[] = {"true"};
	struct gg_job_spec *q = command_spec(cmd, 1);
	struct gg_err err = {0};
	memset(&T, 0, sizeof T);
	/* job-2 is killed while the request is on the wire: its job is
	 * cancelled, its record stays killed; the others are queued */
	F.on_submit = kill_job2;
	assert_int_equal(gg_engine_submit_many(E, q, sites, 1, 3, 0, told, NULL, &err), 0);
	assert_int_equal(T.rc[1], GG_EJOB);
	assert_non_null(strstr(T.msg[1], "killed while it was being submitted"));
	assert_int_equal(F.jobs[1].state, GG_CE_KILLED);
	assert_int_equal(F.jobs[0].state, GG_CE_QUEUED);
	struct gg_record r = load("job-2");
	assert_int_equal(r.state, GG_S_KILLED);
	gg_record_clear(&r);
	/* spread over two sites: a refuses its jobs, which go to b */
	memset(&T, 0, sizeof T);
	F.on_submit = NULL;
	F.refuse_at = 1u << 1 | 1u << 2;
	snprintf(F.refuse_ep, sizeof F.refuse_ep, "%s", a.ce);
	assert_int_equal(gg_engine_submit_many(E, q, sites, 2, 3, 0, told, NULL, &err), 0);
	assert_int_equal(F.many_calls, 4); /* a, b, then b again for a's two */
	assert_int_equal(T.rc[0] | T.rc[1] | T.rc[2], 0);
	assert_non_null(strstr(notes, "site a: the CE refused the job"));
	gg_job_spec_free(q);
}

/* The arguments gg_job_describe gives the wrapper: from "--" on. */
static int words_at(const struct gg_jobdesc *jd)
{
	for (int i = 0; i < jd->nargs; i++)
		if (!strcmp(jd->args[i], "--"))
			return i + 1;
	fail_msg("no -- in the job's arguments");
	return -1;
}

static int has_arg(const struct gg_jobdesc *jd, const char *a, int before)
{
	for (int i = 0; i < before; i++)
		if (!strcmp(jd->args[i], a))
			return 1;
	return 0;
}

/* A command's words reach the node as given: plain words as they are; when a
 * word holds what the CE's job script could change ('$', '\\', quotes, a
 * newline), every word base64-encoded behind '=', and -x for the wrapper
 * before the image. */
static void test_job_words(void **state)
{
	(void)state;
	const char *plain[] = {"python3", "train.py", "--lr=0.1", "a b"};
	const char *odd[] = {"sh", "-c", "echo \"${HOME}\\n\"`id`'x'\n", ""};
	struct gg_job_spec *q = command_spec(plain, 4);
	struct gg_record r = {.uid = (char *)"u1"};
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	assert_int_equal(gg_job_describe(q, NULL, &r, &jd, &err), 0);
	int w = words_at(&jd);
	assert_false(has_arg(&jd, "-x", w));
	assert_int_equal(jd.nargs - w, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(jd.args[w + i], plain[i]);
	gg_jd_clear(&jd);

	assert_int_equal(gg_job_spec_set_command(q, odd, 4, NULL), 0);
	assert_int_equal(gg_job_describe(q, NULL, &r, &jd, &err), 0);
	w = words_at(&jd);
	assert_true(has_arg(&jd, "-x", w));
	assert_string_equal(jd.args[w - 2], GG_JOB_IMAGE_NAME); /* -x before the image */
	assert_int_equal(jd.nargs - w, 4);
	for (int i = 0; i < 4; i++) {
		const char *a = jd.args[w + i];
		assert_int_equal(a[0], '=');
		assert_null(strpbrk(a, "$`\\\"' \n"));
		unsigned char dec[256];
		int n = EVP_DecodeBlock(dec, (const unsigned char *)a + 1, (int)strlen(a + 1));
		assert_true(n >= 0);
		size_t len = strlen(odd[i]); /* DecodeBlock keeps the padding's zero bytes */
		assert_true((size_t)n >= len && (size_t)n <= len + 2);
		assert_memory_equal(dec, odd[i], len);
	}
	gg_jd_clear(&jd);
	gg_job_spec_free(q);
}

/* A new session spec asks for nothing; setters copy, and refuse what cannot
 * be with the spec unchanged. */
static void test_session_spec_setters(void **state)
{
	(void)state;
	struct gg_session_spec *q = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_spec_new(&q, &err), 0);
	const struct gg_jd_resources *res = gg_session_spec_resources(q);
	assert_int_equal(res->walltime, 0);
	assert_int_equal(res->gpus, 0);
	assert_null(res->mig);
	assert_int_equal(gg_session_spec_deadline(q), 0);
	assert_int_equal(gg_session_spec_idle(q), 0);
	assert_null(gg_session_spec_image(q));
	int n = -1;
	gg_session_spec_binds(q, &n);
	assert_int_equal(n, 0);
	/* copies, not the caller's memory */
	char image[] = "docker://a", mig[] = "1g.10gb";
	struct gg_jd_resources want = {.walltime = 60, .mig = mig};
	assert_int_equal(gg_session_spec_set_image(q, image, &err), 0);
	assert_int_equal(gg_session_spec_set_resources(q, &want, &err), 0);
	image[0] = mig[0] = 'X';
	assert_string_equal(gg_session_spec_image(q), "docker://a");
	assert_string_equal(gg_session_spec_resources(q)->mig, "1g.10gb");
	/* refused: the spec keeps what it had */
	assert_int_equal(gg_session_spec_set_deadline(q, 0, &err), GG_EUSAGE);
	assert_int_equal(gg_session_spec_set_deadline(q, 90, &err), 0);
	assert_int_equal(gg_session_spec_set_deadline(q, -5, &err), GG_EUSAGE);
	assert_int_equal(gg_session_spec_deadline(q), 90);
	assert_int_equal(gg_session_spec_set_idle(q, -1, &err), GG_EUSAGE);
	struct gg_jd_resources both = {.gpus = 1, .mig = "1g.10gb"}, neg = {.walltime = -1};
	assert_int_equal(gg_session_spec_set_resources(q, &both, &err), GG_EUSAGE);
	assert_int_equal(gg_session_spec_set_resources(q, &neg, &err), GG_EUSAGE);
	assert_int_equal(gg_session_spec_resources(q)->walltime, 60);
	for (int i = 0; i < GG_JD_MAX; i++)
		assert_int_equal(gg_session_spec_add_bind(q, "/data", &err), 0);
	assert_int_equal(gg_session_spec_add_bind(q, "/data", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "too many --bind"));
	assert_int_equal(gg_session_spec_add_bind(q, NULL, &err), GG_EUSAGE);
	assert_string_equal(gg_session_spec_binds(q, &n)[GG_JD_MAX - 1], "/data");
	assert_int_equal(n, GG_JD_MAX);
	assert_int_equal(gg_session_spec_set_image(q, NULL, &err), 0);
	assert_null(gg_session_spec_image(q));
	gg_session_spec_free(q);
	gg_session_spec_free(NULL);
}

static void test_job_spec_setters(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *cmd[] = {"python3", "train.py"}, *holed[] = {"sh", NULL};
	struct gg_job_spec *q = command_spec(cmd, 2);
	assert_int_equal(gg_job_spec_set_command(q, cmd, 0, &err), GG_EUSAGE);
	assert_int_equal(gg_job_spec_set_command(q, holed, 2, &err), GG_EUSAGE);
	assert_int_equal(gg_job_spec_set_part_offset(q, -1, &err), GG_EUSAGE);
	assert_int_equal(gg_job_spec_set_part_offset(q, 4096, &err), 0);
	for (int i = 0; i < GG_JD_MAX - 3; i++) /* the wrapper, enter script, image */
		assert_int_equal(gg_job_spec_add_data_input(q, "root://se//a", "a", &err), 0);
	assert_int_equal(gg_job_spec_add_data_input(q, "root://se//a", "a", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "too many --input URLs"));
	assert_int_equal(gg_job_spec_add_input(q, NULL, &err), GG_EUSAGE);
	/* what was refused left the command and the offset as they were */
	struct gg_record r = {.uid = (char *)"u1"};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_job_describe(q, NULL, &r, &jd, &err), 0);
	int w = words_at(&jd);
	assert_int_equal(jd.nargs - w, 2);
	assert_string_equal(jd.args[w + 1], "train.py");
	gg_jd_clear(&jd);
	char *enter = NULL; /* the offset is the enter script's, not the wrapper's */
	assert_int_equal(gg_job_enter_text(q, NULL, "image.sif", &enter, &err), 0);
	assert_non_null(strstr(enter, "\nOFFSET='4096'\n"));
	free(enter);
	gg_job_spec_free(q);
	gg_job_spec_free(NULL);
}

/* The job's local file named name (NULL: none). */
static const char *jd_local(const struct gg_jobdesc *jd, const char *name)
{
	for (int i = 0; i < jd->ninputs; i++)
		if (!strcmp(jd->inputs[i].name, name))
			return jd->inputs[i].local;
	return NULL;
}

/* submit --input-list: job i gets item i (a local file uploaded, or a URL the
 * CE fetches) and its name in GRIDGPU_INPUT; the spec's own inputs stay. */
static void test_job_describe_nth(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *cmd[] = {"sh", "run.sh"};
	struct gg_job_spec *q = command_spec(cmd, 2);
	struct gg_record r = {.uid = (char *)"u1"};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_job_spec_each_count(q), 0);
	assert_null(gg_job_spec_each_input(q, 0));
	assert_int_equal(gg_job_describe_nth(q, NULL, &r, 5, &jd, &err), 0); /* no list */
	gg_jd_clear(&jd);
	assert_int_equal(gg_job_spec_add_input(q, "/data/common.txt", &err), 0);
	assert_int_equal(gg_job_spec_add_each_input(q, "/data/in/a.root", &err), 0);
	assert_int_equal(gg_job_spec_add_each_input(q, "root://se:1094//store/b.root", &err), 0);
	assert_int_equal(gg_job_spec_each_count(q), 2);
	assert_string_equal(gg_job_spec_each_input(q, 1), "root://se:1094//store/b.root");
	assert_null(gg_job_spec_each_input(q, 2));
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_job_describe_nth(q, NULL, &r, 0, &jd, &err), 0);
	assert_string_equal(jd_local(&jd, "a.root"), "/data/in/a.root");
	assert_string_equal(jd_local(&jd, "common.txt"), "/data/common.txt");
	assert_null(jd_local(&jd, "b.root"));
	int env = 0;
	for (int i = 0; i < jd.nenv; i++)
		env += !strcmp(jd.env[i], "GRIDGPU_INPUT=a.root");
	assert_int_equal(env, 1);
	gg_jd_clear(&jd);
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_job_describe_nth(q, NULL, &r, 1, &jd, &err), 0);
	int url = 0;
	for (int i = 0; i < jd.ninputs; i++)
		url += !strcmp(jd.inputs[i].name, "b.root") && jd.inputs[i].source &&
		       !strcmp(jd.inputs[i].source, "root://se:1094//store/b.root");
	assert_int_equal(url, 1);
	assert_null(jd_local(&jd, "a.root"));
	gg_jd_clear(&jd);
	memset(&jd, 0, sizeof jd);
	assert_int_equal(gg_job_describe_nth(q, NULL, &r, 2, &jd, &err), GG_EUSAGE);
	gg_jd_clear(&jd);
	for (int i = 2; i < GG_JOB_MAX_EACH; i++)
		assert_int_equal(gg_job_spec_add_each_input(q, "/x", &err), 0);
	assert_int_equal(gg_job_spec_add_each_input(q, "/x", &err), GG_EUSAGE);
	gg_job_spec_free(q);
}

/* A batch job's container is the session's: the enter script made for the
 * job's image, the site's runtime and binds and submit --bind, staged beside
 * the wrapper; a bind --bind cannot take is refused. */
static void test_job_enter(void **state)
{
	(void)state;
	struct gg_err err = {0};
	const char *cmd[] = {"cat", "/cvmfs/x"};
	struct gg_job_spec *q = command_spec(cmd, 2);
	assert_int_equal(gg_job_spec_add_bind(q, "data", &err), GG_EUSAGE);
	assert_string_equal(err.msg, "--bind 'data': expected SRC[:DST], absolute paths");
	assert_int_equal(gg_job_spec_add_bind(q, "/a/../b", &err), GG_EUSAGE);
	assert_int_equal(gg_job_spec_add_bind(q, "/work,x:/w", &err), 0);
	struct gg_site site = {.name = (char *)"tb", .runtime = (char *)"bwrap", .nbinds = 1};
	site.binds[0] = (char *)"/site/data:/data";
	struct gg_record r = {.uid = (char *)"u1"};
	struct gg_jobdesc jd = {0};
	assert_int_equal(gg_job_describe(q, &site, &r, &jd, &err), 0);
	const char *file = jd_local(&jd, GG_ENTER_NAME);
	assert_non_null(file);
	char *text = NULL, *want = NULL;
	size_t n = 0;
	assert_int_equal(gg_file_read(file, 1 << 20, &text, &n, &err), 0);
	assert_int_equal(gg_job_enter_text(q, &site, GG_JOB_IMAGE_NAME, &want, &err), 0);
	assert_string_equal(text, want); /* the generator's text, as it is */
	assert_non_null(strstr(text, "RUNTIME='bwrap'\nIMAGE='" GG_JOB_IMAGE_NAME "'\n"));
	assert_non_null(strstr(text, "\tbind '/site/data' '/data'\n\tbind '/work,x' '/w'\n"));
	assert_non_null(strstr(text, "\njob) shift; do_job"));
	assert_non_null(strstr(file, "/cache/gridgpu/enter/"));
	free(text);
	free(want);
	gg_jd_clear(&jd);
	/* apptainer cannot bind a path with a ',': nothing described */
	site.runtime = (char *)"apptainer";
	assert_int_equal(gg_job_describe(q, &site, &r, &jd, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "--bind '/work,x:/w': apptainer takes a ','"));
	gg_jd_clear(&jd);
	gg_job_spec_free(q);
}

/* ---- fetching a job's outputs (fetch.c) ---- */

static char fetched[1024]; /* what e->fetched was told, one path a line */

static void on_fetched(void *ud, const char *p)
{
	(void)ud;
	snprintf(fetched + strlen(fetched), sizeof fetched - strlen(fetched), "%s\n", p);
}

/* A job submitted to the fake CE, ended in state, its directory listing files;
 * its outputs at storage (may be NULL: none) as the record's "NAME URL" lines.
 * Made with a token (BEARER_TOKEN): the test's proxy has a key too small for
 * the storage's TLS, which the fake CE never sees. */
static struct gg_record ended_job(const char *name, enum gg_ce_state state, const char *files,
				  const char *storage)
{
	struct gg_submission s = job(name, "token");
	s.rec.storage_outputs = storage ? strdup(storage) : NULL;
	struct gg_record r;
	assert_int_equal(gg_engine_submit(E, &s, &r, NULL, NULL), 0);
	F.jobs[F.njobs - 1].state = state;
	F.jobs[F.njobs - 1].files = files;
	fetched[0] = '\0';
	struct gg_engine_callbacks cb = {
		.size = sizeof cb, .note = note, .open_ce = open_fake, .fetched = on_fetched};
	assert_int_equal(gg_engine_set_callbacks(E, &cb, NULL), 0);
	return r;
}

/* The text of file name in directory d ("" when it cannot be read). */
static const char *file_text(const char *d, const char *name)
{
	static char text[4096];
	char p[512];
	snprintf(p, sizeof p, "%s/%s", d, name);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	return text;
}

static int entries(const char *d)
{
	DIR *dh = opendir(d);
	int n = 0;
	for (struct dirent *de; dh && (de = readdir(dh));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (dh)
		closedir(dh);
	return dh ? n : -1;
}

/* The storage's file: 3000 bytes served by a local HTTPS server whose
 * certificate is the only CA (X509_CERT_DIR) while it runs. */
#define SLEN 3000
static unsigned char sbody[SLEN];
static char storage_line[128], cert_dir[256];

static void storage_start(struct srv *sv)
{
	for (size_t i = 0; i < SLEN; i++)
		sbody[i] = (unsigned char)(i * 7 + 1);
	srv_start(sv, sbody, SLEN);
	sv->etag = "\"v1\"";
	snprintf(storage_line, sizeof storage_line, "res.txt https://127.0.0.1:%d/store/res.txt",
		 sv->port);
	snprintf(cert_dir, sizeof cert_dir, "%s", getenv("X509_CERT_DIR"));
	setenv("X509_CERT_DIR", sv->cadir, 1);
}

static void storage_stop(struct srv *sv)
{
	setenv("X509_CERT_DIR", cert_dir, 1);
	srv_stop(sv);
}

static int storage_file_whole(const char *d)
{
	char p[512];
	snprintf(p, sizeof p, "%s/res.txt", d);
	unsigned char b[SLEN + 1];
	FILE *f = fopen(p, "rb");
	size_t n = f ? fread(b, 1, sizeof b, f) : 0;
	if (f)
		fclose(f);
	return n == SLEN && memcmp(b, sbody, SLEN) == 0;
}

/* The CE's files and the storage's into one directory: names from the CE's
 * listing that are not plain file names (a control character, a '/', "..")
 * skipped with a warning and nothing made of them, hidden ones silently. */
static void test_fetch_ce_and_storage(void **state)
{
	(void)state;
	struct srv sv;
	storage_start(&sv);
	struct gg_record r = ended_job("fa", GG_CE_FINISHED,
				       "gridgpu-job.out\nresult.txt\n.arex\n..\na/b\nred\x1b[31m\n",
				       storage_line);
	char out[256], want[1024];
	snprintf(out, sizeof out, "%s", sub("fa-out"));
	char **paths = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_fetch(E, &r, out, 0, 0, &paths, &n, &err), 0);
	assert_int_equal(n, 3);
	snprintf(want, sizeof want, "%s/gridgpu-job.out\n%s/result.txt\n%s/res.txt\n", out, out,
		 out);
	assert_string_equal(fetched, want);
	for (size_t i = 0; i < n; i++)
		assert_non_null(strstr(want, paths[i]));
	gg_fetched_free(paths, n);
	assert_string_equal(file_text(out, "result.txt"), "result.txt of job0\n");
	assert_true(storage_file_whole(out));
	assert_int_equal(entries(out), 3); /* nothing of ".arex", "..", "a/b", "red\e[31m" */
	assert_non_null(strstr(notes, "skipping '..' from the CE's listing"));
	assert_non_null(strstr(notes, "skipping 'a/b' from the CE's listing"));
	assert_non_null(strstr(notes, "skipping 'red\x1b[31m' from the CE's listing"));
	assert_null(strstr(notes, ".arex"));
	assert_int_equal(r.state, GG_S_FINISHED);
	gg_record_clear(&r);
	r = load("fa"); /* kept: no clean asked */
	assert_int_equal(r.state, GG_S_FINISHED);
	gg_record_clear(&r);
	storage_stop(&sv);
}

/* A file already there that differs stops the fetch before anything is
 * written (the job's is fetched beside it to compare, then removed); with
 * GG_FETCH_FORCE it is replaced; fetched again, the files there are the job's,
 * byte for byte: kept, not an error (failed before: GG_EFAIL 'use --force'). */
static void test_fetch_existing(void **state)
{
	(void)state;
	struct gg_record r = ended_job("fb", GG_CE_FINISHED, "gridgpu-job.out\nresult.txt\n", NULL);
	char out[256];
	snprintf(out, sizeof out, "%s", sub("fb-out"));
	mkdir(out, 0755);
	assert_int_equal(
		gg_file_write_atomic(sub("fb-out/result.txt"), "local edit", 10, 0644, NULL), 0);
	char **paths = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	assert_int_equal(gg_engine_fetch(E, &r, out, 0, 0, &paths, &n, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "result.txt' is already there and differs from the "
					"job's: use --force to replace it"));
	assert_int_equal(n, 0);
	assert_int_equal(F.files_got, 1); /* the job's, to compare */
	assert_int_equal(entries(out), 1);
	assert_string_equal(file_text(out, "result.txt"), "local edit");
	gg_fetched_free(paths, n);
	assert_int_equal(gg_engine_fetch(E, &r, out, GG_FETCH_FORCE, 0, NULL, NULL, &err), 0);
	assert_string_equal(file_text(out, "result.txt"), "result.txt of job0\n");
	assert_int_equal(entries(out), 2);
	assert_int_equal(gg_engine_fetch(E, &r, out, 0, 0, &paths, &n, &err), 0);
	assert_int_equal(n, 0); /* nothing written: both kept */
	assert_int_equal(entries(out), 2);
	assert_string_equal(file_text(out, "result.txt"), "result.txt of job0\n");
	gg_fetched_free(paths, n);
	gg_record_clear(&r);
}

/* A fetch from storage that broke leaves PATH.part and its validator: the
 * next fetch asks only for the rest and says from which byte it resumed. */
static void test_fetch_resume(void **state)
{
	(void)state;
	struct srv sv;
	storage_start(&sv);
	struct gg_record r = ended_job("fc", GG_CE_FINISHED, "gridgpu-job.out\n", storage_line);
	char out[256], part[300], url[128];
	snprintf(out, sizeof out, "%s", sub("fc-out"));
	mkdir(out, 0755);
	snprintf(part, sizeof part, "%s/res.txt", out);
	snprintf(url, sizeof url, "https://127.0.0.1:%d/store/res.txt", sv.port);
	struct gg_http *h;
	struct gg_http_opts o = {.ca_dir = sv.cadir, .retries = -1};
	struct gg_http_resp hr = {0};
	int64_t resumed = -1;
	struct gg_err err = {0};
	assert_int_equal(gg_http_new(&o, &h, &err), 0);
	sv.cut = 1000;
	assert_int_equal(gg_http_get_resume(h, url, part, 0644, NULL, NULL, &resumed, &hr, &err),
			 GG_ENET);
	gg_http_resp_clear(&hr);
	gg_http_free(h);
	sv.cut = 0;
	assert_int_equal(access(sub("fc-out/res.txt.part"), F_OK), 0);
	char **paths = NULL;
	size_t n = 0;
	assert_int_equal(gg_engine_fetch(E, &r, out, 0, 0, &paths, &n, &err), 0);
	assert_int_equal(n, 2);
	gg_fetched_free(paths, n);
	assert_non_null(strstr(notes, "res.txt: resumed at byte 1000\n"));
	assert_string_equal(sv.last_range, "bytes=1000-2999");
	assert_true(storage_file_whole(out));
	assert_int_equal(entries(out), 2); /* no part, no validator left */
	gg_record_clear(&r);
	storage_stop(&sv);
}

/* GG_FETCH_CLEAN: once fetched, the job is cleaned on its CE and the record
 * forgotten; when the CE cannot clean it, the files stay and so does the
 * record, and the error says so. */
static void test_fetch_clean(void **state)
{
	(void)state;
	struct gg_record r = ended_job("fd", GG_CE_FINISHED, "gridgpu-job.out\n", NULL);
	struct gg_err err = {0};
	F.clean_fails = 1;
	assert_int_equal(gg_engine_fetch(E, &r, sub("fd-1"), GG_FETCH_CLEAN, 0, NULL, NULL, &err),
			 GG_ENET);
	assert_string_equal(err.msg, "cleaning on the CE (the record is kept): cannot connect to "
				     "the CE");
	assert_int_equal(access(sub("fd-1/gridgpu-job.out"), F_OK), 0);
	gg_record_clear(&r);
	r = load("fd");
	F.clean_fails = 0;
	/* no directory given: ./NAME */
	char cwd[512];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	int rc = gg_engine_fetch(E, &r, NULL, GG_FETCH_CLEAN, 0, NULL, NULL, &err);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(F.jobs[0].cleaned, 1);
	assert_non_null(strstr(notes, "cleaned fd\n"));
	gg_record_clear(&r);
	assert_int_equal(gg_store_load(gg_engine_store(E), "fd", &r, NULL), GG_ENOTFOUND);
	assert_string_equal(file_text(sub("fd"), "gridgpu-job.out"), "gridgpu-job.out of job0\n");
}

/* A job that has not ended: nothing fetched, no directory made; one never
 * submitted: not found. */
static void test_fetch_not_ended(void **state)
{
	(void)state;
	struct gg_record r = ended_job("fe", GG_CE_RUNNING, "gridgpu-job.out\n", NULL);
	struct gg_err err = {0};
	assert_int_equal(gg_engine_fetch(E, &r, sub("fe-out"), 0, 0, NULL, NULL, &err), GG_EFAIL);
	assert_string_equal(err.msg, "the job is running: its outputs come when it ends "
				     "('gridgpu get --wait fe')");
	assert_int_equal(access(sub("fe-out"), F_OK), -1);
	gg_record_clear(&r);
	struct gg_record never = {.name = "ff", .state = GG_S_FAILED, .error = "no such queue"};
	assert_int_equal(gg_engine_fetch(E, &never, NULL, 0, 0, NULL, NULL, &err), GG_ENOTFOUND);
	assert_string_equal(err.msg, "was never submitted (no such queue)");
}

/* The CE no longer has the job's files: those at storage still come; a job
 * that failed has its CE files fetched but not those at storage. */
static void test_fetch_storage_only(void **state)
{
	(void)state;
	struct srv sv;
	storage_start(&sv);
	struct gg_record r = ended_job("fg", GG_CE_FINISHED, "gridgpu-job.out\n", storage_line);
	F.jobs[0].files_gone = 1;
	struct gg_err err = {0};
	char **paths = NULL;
	size_t n = 0;
	assert_int_equal(gg_engine_fetch(E, &r, sub("fg-out"), 0, 0, &paths, &n, &err), 0);
	assert_int_equal(n, 1);
	gg_fetched_free(paths, n);
	assert_non_null(strstr(notes, "the CE no longer has fg's files: fetching its outputs at "
				      "storage only"));
	assert_true(storage_file_whole(sub("fg-out")));
	gg_record_clear(&r);
	r = ended_job("fh", GG_CE_FAILED, "gridgpu-job.err\n", storage_line);
	assert_int_equal(gg_engine_fetch(E, &r, sub("fh-out"), 0, 0, &paths, &n, &err), 0);
	assert_int_equal(n, 1);
	gg_fetched_free(paths, n);
	assert_int_equal(r.state, GG_S_FAILED);
	assert_non_null(strstr(notes, "fh did not finish: its outputs at storage are not fetched"));
	assert_int_equal(entries(sub("fh-out")), 1);
	gg_record_clear(&r);
	storage_stop(&sv);
}

/* ---- request --race (race.c) ---- */

/* n racers of race id sent (queued at the fake CE), in recs. */
static void racers(struct gg_engine *e, const char *id, const char *name, struct gg_record *recs,
		   int n)
{
	for (int i = 0; i < n; i++) {
		struct gg_submission s = job(NULL, "proxy");
		snprintf(s.prefix, sizeof s.prefix, "race-s%d", i);
		s.rec.site = gg_strdup_printf("s%d", i);
		s.rec.race = strdup(id);
		s.rec.race_name = name ? strdup(name) : NULL;
		struct gg_err err = {0};
		assert_int_equal(gg_engine_submit(e, &s, &recs[i], NULL, &err), 0);
	}
}

static size_t stored(void)
{
	struct gg_record *recs = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(K), &recs, &n, NULL, NULL), 0);
	gg_records_free(recs, n);
	return n;
}

/* The winner takes the race's name without its marks; the loser's job is
 * killed and cleaned at the CE and its record forgotten. */
static void test_race_settle_winner(void **state)
{
	(void)state;
	struct gg_record recs[2], won;
	struct gg_err err = {0};
	racers(E, "r1", "fast", recs, 2);
	assert_string_equal(recs[0].name, "race-s0-1");
	assert_string_equal(recs[0].race, "r1");
	enum gg_sess_state ready = GG_S_READY;
	assert_int_equal(
		gg_store_update(gg_engine_store(E), recs[1].name, set_state, &ready, NULL, &err),
		0);
	assert_int_equal(gg_engine_race_settle(E, recs, 2, 1, &won, &err), 0);
	assert_string_equal(won.name, "fast");
	assert_null(won.race);
	assert_null(won.race_name);
	assert_string_equal(won.job_id, F.jobs[1].id);
	assert_int_equal(F.jobs[0].state, GG_CE_KILLED);
	assert_true(F.jobs[0].cleaned);
	assert_false(F.jobs[1].cleaned);
	assert_int_equal(F.jobs[1].state, GG_CE_QUEUED);
	assert_int_equal(stored(), 1);
	struct gg_record now = load("fast");
	assert_int_equal(now.state, GG_S_READY);
	gg_record_clear(&now);
	gg_record_clear(&won);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

/* The name taken meanwhile: the winner takes its site's SITE-N. */
static void test_race_name_taken(void **state)
{
	(void)state;
	struct gg_record recs[2], won, other;
	struct gg_err err = {0};
	racers(E, "r2", "fast", recs, 2);
	struct gg_submission s = job("fast", "proxy");
	assert_int_equal(gg_engine_submit(E, &s, &other, NULL, &err), 0);
	assert_int_equal(gg_engine_race_settle(E, recs, 2, 0, &won, &err), 0);
	assert_string_equal(won.name, "s0-1");
	assert_int_equal(stored(), 2);
	assert_non_null(strstr(notes, "fast"));
	gg_record_clear(&won);
	gg_record_clear(&other);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

/* The client SIGKILLed once both racers are submitted: while it lived, a
 * sync left the race alone (its lock held); once it is gone, a sync keeps
 * the one furthest along under the race's name and kills and cleans the
 * other. */
static void test_race_sigkill_sync(void **state)
{
	(void)state;
	struct gg_race *race = NULL;
	struct gg_record recs[2];
	assert_int_equal(gg_race_begin(E, &race, NULL), 0);
	racers(E, gg_race_id(race), "hard", recs, 2);
	struct gg_record *all = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(K), &all, &n, NULL, NULL), 0);
	assert_int_equal(gg_engine_sync(K, all, n, 1), 0);
	gg_records_free(all, n);
	assert_int_equal(stored(), 2); /* racing: left alone */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the client: holds the lock, then is killed */
		struct gg_race *r2 = NULL;
		gg_race_end(race);
		if (gg_race_begin(E, &r2, NULL) == 0)
			raise(SIGKILL);
		_exit(1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	gg_race_end(race); /* this race's client is gone too */
	F.jobs[1].state = GG_CE_RUNNING;
	F.jobs[0].lrms_queued = 1; /* Slurm holds it */
	assert_int_equal(gg_store_list(gg_engine_store(K), &all, &n, NULL, NULL), 0);
	assert_int_equal(gg_engine_sync(K, all, n, 1), 0);
	gg_records_free(all, n);
	assert_int_equal(stored(), 1);
	struct gg_record now = load("hard");
	assert_string_equal(now.job_id, F.jobs[1].id); /* running beats queued */
	assert_null(now.race);
	assert_int_equal(F.jobs[0].state, GG_CE_KILLED);
	assert_true(F.jobs[0].cleaned);
	assert_non_null(strstr(notes, "a race's client is gone"));
	gg_record_clear(&now);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

/* A client stopped between the winner's new record and the racer's removal:
 * the sync removes the racer's record only (its job is the winner's). */
static void test_race_crowned_twice(void **state)
{
	(void)state;
	struct gg_record recs[1], copy;
	struct gg_err err = {0};
	racers(E, "r3", "w", recs, 1);
	assert_int_equal(gg_record_copy(&copy, &recs[0]), 0);
	free(copy.name);
	free(copy.race);
	copy.name = strdup("w");
	copy.race = NULL;
	assert_int_equal(gg_store_create(gg_engine_store(E), &copy, "x", &err), 0);
	struct gg_record *all = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(K), &all, &n, NULL, NULL), 0);
	assert_int_equal(gg_engine_sync(K, all, n, 1), 0);
	gg_records_free(all, n);
	assert_int_equal(stored(), 1);
	assert_int_equal(F.jobs[0].state, GG_CE_QUEUED);
	assert_false(F.jobs[0].cleaned);
	gg_record_clear(&copy);
	gg_record_clear(&recs[0]);
}

/* describe, and a file to upload after the submission (a session's launcher). */
static int describe_upload(void *ud, const struct gg_record *r, const char *pubkey,
			   struct gg_jobdesc *jd, struct gg_err *err)
{
	int rc = describe(ud, r, pubkey, jd, err);
	return rc ? rc : gg_jd_input(jd, "launcher", NULL, "/bin/sh", err);
}

static void sync_all(struct gg_engine *e)
{
	struct gg_record *all = NULL;
	size_t n = 0;
	assert_int_equal(gg_store_list(gg_engine_store(e), &all, &n, NULL, NULL), 0);
	gg_engine_sync(e, all, n, 1);
	gg_records_free(all, n);
}

/* Ctrl-C while the second racer's launcher was on its way to its CE (its job
 * recorded, the cancel of it cut short by the same Ctrl-C): the client's race
 * holds the first racer only, but the settled race is the store's. The
 * regression: the second racer stayed in the race unmarked and the next sync
 * crowned it as a second session (s1-1 beside soft), its job left running. */
static void test_race_interrupted_submission(void **state)
{
	(void)state;
	struct gg_race *race = NULL;
	struct gg_record recs[2], won;
	struct gg_err err = {0};
	assert_int_equal(gg_race_begin(E, &race, NULL), 0);
	racers(E, gg_race_id(race), "soft", recs, 1);
	struct gg_submission s = job(NULL, "proxy");
	s.describe = describe_upload;
	snprintf(s.prefix, sizeof s.prefix, "race-s1");
	s.rec.site = strdup("s1");
	s.rec.race = strdup(gg_race_id(race));
	s.rec.race_name = strdup("soft");
	F.put_eintr = 1;
	assert_true(gg_engine_submit(E, &s, &recs[1], NULL, &err) < 0);
	F.put_eintr = 0;
	assert_int_equal(F.jobs[1].state, GG_CE_QUEUED); /* its cancel never got there */
	assert_false(F.jobs[1].cleaned);
	assert_int_equal(gg_engine_race_settle(E, recs, 1, (size_t)-1, &won, &err), 0);
	gg_race_end(race);
	assert_string_equal(won.name, "soft");
	assert_int_equal(F.jobs[1].state, GG_CE_KILLED);
	assert_true(F.jobs[1].cleaned);
	sync_all(K);
	assert_int_equal(stored(), 1);
	struct gg_record now = load("soft");
	assert_string_equal(now.job_id, F.jobs[0].id);
	gg_record_clear(&now);
	gg_record_clear(&won);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

/* The loser's CE slow to kill it when the race is decided: it stays, marked
 * lost, whatever a sync that read it before writes back; the next sync never
 * crowns it: it kills and cleans it there and forgets it here, its key too.
 * The regression: a refresh's copy, read before, wrote race_lost 0 back and
 * the next sync crowned the loser beside the winner. */
static void test_race_lost_stays_lost(void **state)
{
	(void)state;
	struct gg_record recs[2], won, stale, now;
	struct gg_err err = {0};
	for (int i = 0; i < 2; i++) {
		struct gg_submission s = job(NULL, "proxy");
		s.rec.kind = GG_REC_SESSION;
		s.make_key = 1;
		snprintf(s.prefix, sizeof s.prefix, "race-s%d", i);
		s.rec.site = gg_strdup_printf("s%d", i);
		s.rec.race = strdup("r5");
		s.rec.race_name = strdup("w");
		assert_int_equal(gg_engine_submit(E, &s, &recs[i], NULL, &err), 0);
	}
	assert_int_equal(gg_record_copy(&stale, &recs[1]), 0); /* a sync's, read before */
	F.kill_fails = 1;
	assert_int_equal(gg_engine_race_settle(E, recs, 2, 0, &won, &err), 0);
	assert_string_equal(won.name, "w");
	now = load(recs[1].name);
	assert_int_equal(now.race_lost, 1);
	gg_record_clear(&now);
	F.jobs[1].state = GG_CE_RUNNING; /* still running there */
	assert_int_equal(gg_engine_save(K, &stale, &err), 0);
	now = load(recs[1].name);
	assert_int_equal(now.race_lost, 1);
	gg_record_clear(&now);
	sync_all(K); /* still slow: kept, lost */
	assert_int_equal(stored(), 2);
	now = load(recs[1].name);
	assert_int_equal(now.race_lost, 1);
	gg_record_clear(&now);
	F.kill_fails = 0;
	sync_all(K);
	assert_int_equal(stored(), 1);
	assert_int_equal(F.jobs[1].state, GG_CE_KILLED);
	assert_true(F.jobs[1].cleaned);
	assert_int_equal(access(recs[1].key, F_OK), -1);
	assert_int_equal(access(recs[0].key, R_OK), 0);
	now = load("w");
	assert_string_equal(now.job_id, F.jobs[0].id);
	gg_record_clear(&now);
	gg_record_clear(&stale);
	gg_record_clear(&won);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

static int set_lost(struct gg_record *r, void *ud)
{
	(void)ud;
	r->race_lost = 1;
	return 0;
}

/* A winner the caller names that is marked lost on disk is never crowned:
 * the race is settled by the rule without a winner. */
static void test_race_lost_never_crowned(void **state)
{
	(void)state;
	struct gg_record recs[2], won;
	struct gg_err err = {0};
	racers(E, "r6", "w", recs, 2);
	assert_int_equal(
		gg_store_update(gg_engine_store(E), recs[1].name, set_lost, NULL, NULL, &err), 0);
	assert_int_equal(gg_engine_race_settle(E, recs, 2, 1, &won, &err), 0);
	assert_string_equal(won.name, "w");
	assert_string_equal(won.job_id, F.jobs[0].id);
	assert_int_equal(F.jobs[1].state, GG_CE_KILLED);
	assert_true(F.jobs[1].cleaned);
	assert_int_equal(stored(), 1);
	gg_record_clear(&won);
	gg_record_clear(&recs[0]);
	gg_record_clear(&recs[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_words),
		cmocka_unit_test(test_job_count),
		cmocka_unit_test(test_capability_and_dev),
		cmocka_unit_test_setup_teardown(test_record_before_submit, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_lost_answer_adopted, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_sigkill_after_submit_adopted, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_unsent_forgotten, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_kill_during_submit, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_kill_before_submit_not_undone, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_session_key_made, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_session_file_reason_like_ours, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_session_file_unreadable, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_kill_ended_record, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_kill_own_credential, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_engine_defaults, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_engine_callbacks_older, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_engine_callbacks_checked, each_setup,
						each_teardown),
		cmocka_unit_test(test_groups),
		cmocka_unit_test_setup_teardown(test_sync_unreachable_keeps, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_writes_changes_only, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_ces_in_parallel, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_lrms_ahead, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_lrms_queued, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_walltime, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_sync_command_exit, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_ce_errors, each_setup, each_teardown),
		cmocka_unit_test(test_session_submission),
		cmocka_unit_test(test_job_spec_check),
		cmocka_unit_test(test_session_spec_setters),
		cmocka_unit_test(test_job_spec_setters),
		cmocka_unit_test(test_job_describe_nth),
		cmocka_unit_test(test_job_enter),
		cmocka_unit_test_setup_teardown(test_job_spread, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_submit_many, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_submit_many_kill_wins, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_ce_and_storage, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_existing, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_resume, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_clean, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_not_ended, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_fetch_storage_only, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_race_settle_winner, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_race_name_taken, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_race_sigkill_sync, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_race_crowned_twice, each_setup, each_teardown),
		cmocka_unit_test_setup_teardown(test_race_interrupted_submission, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_race_lost_stays_lost, each_setup,
						each_teardown),
		cmocka_unit_test_setup_teardown(test_race_lost_never_crowned, each_setup,
						each_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
