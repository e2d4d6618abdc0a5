/* Many jobs at once (submit --count N): gg_engine_submit's rule for a batch.
 * The records of all the jobs go first, then one request with all their
 * descriptions (A-REX answers each), then each record gets its job id or is
 * dropped with the CE's refusal, then each job's uploads. A kill of any record
 * wins; a request whose answer was lost leaves its records for adoption; a
 * job refused at one site goes to the next in its turn. */
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "engine/engine_int.h"

/* Jobs in one request at most: a request whose answer is lost leaves at most
 * so many records for adoption, and A-REX answers it well within the HTTP
 * timeout (200 took 1.3-7 s at the test site under load). */
#define GG_BATCH_MAX 100

struct bjob {
	int index;
	struct gg_record r;
	struct gg_jobdesc jd;
	char *xrsl, *job_id;
	int rc, created, adopt; /* adopt: the CE may have it, its record is kept */
	struct gg_err err;
};

struct batch {
	struct gg_engine *e;
	const struct gg_job_spec *q;
	const struct gg_site *site;
	int token;
	struct gg_auth auth;
	struct gg_ce *ce;
	char *deleg;
	struct bjob **jobs;
	size_t n;
};

/* A job's failure, once: its first error stays. */
static int job_fail(struct bjob *j, int rc, const struct gg_err *err)
{
	if (j->rc == 0) {
		j->rc = rc ? rc : GG_EFAIL;
		j->err = *err;
		j->err.code = j->rc;
	}
	return j->rc;
}

/* The same failure for every job still going. */
static int fail_all(struct batch *b, int rc, const struct gg_err *err)
{
	for (size_t i = 0; i < b->n; i++)
		job_fail(b->jobs[i], rc, err);
	return rc;
}

/* What every job at the site needs, checked once: the node's image, GPUs the
 * site can give, the credential, storage files. */
static int prepare(struct batch *b, struct gg_err *err)
{
	const struct gg_site *site = b->site;
	int rc = gg_image_node_check(b->e, site, gg_job_spec_image(b->q), err);
	if (rc < 0)
		return rc;
	if (!site->ce)
		return gg_err_set(err, GG_EUSAGE, "site '%s' has no CE URL", site->name);
	if ((rc = gg_jd_gpu_check(&b->q->res, site, err)) < 0)
		return rc;
	const char *want = b->token ? "token" : gg_site_auth_kind(site);
	if ((rc = gg_auth_find(site, want, b->q->res.walltime, &b->auth, err)) < 0)
		return rc;
	if ((rc = gg_storage_auth(b->q, site, b->q->res.walltime, &b->auth, err)) < 0)
		return rc;
	return gg_storage_check(b->e, &b->auth, b->q, site, err);
}

/* Each job's record, written before anything is sent. */
static void create_records(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct bjob *j = b->jobs[i];
		struct gg_err err = {0};
		struct gg_submission s;
		char uid[13];
		gg_job_submission(&s, b->q, b->site, NULL, b->token);
		j->r = s.rec;
		int rc = gg_random_uid(uid, &err);
		if (rc == 0 && !(j->r.uid = strdup(uid)))
			rc = gg_err_set(&err, GG_ENOMEM, "out of memory");
		j->r.state = GG_S_REQUESTED;
		if (rc == 0)
			rc = gg_store_create(b->e->st, &j->r, s.prefix, &err);
		if (rc < 0)
			job_fail(j, rc, &err);
		else
			j->created = 1;
	}
}

/* The CE once, with one delegation for all. */
static int open_ce(struct batch *b, struct gg_err *err)
{
	int rc = gg_engine_open_ce(b->e, b->site->ce, &b->auth, &b->ce, err);
	/* a slurm+ssh site's ("ssh") proxy is for its storage URLs: no delegation */
	if (rc < 0 || !b->auth.proxy_path || !strcmp(b->auth.kind, "ssh"))
		return rc;
	char *state_dir = NULL, *cache = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state_dir, err) == 0)
		cache = gg_strdup_printf("%s/delegations.json", state_dir);
	free(state_dir);
	rc = gg_ce_delegate(b->ce, b->auth.proxy_path, b->q->res.walltime, cache, &b->deleg, err);
	free(cache);
	return rc < 0 ? gg_err_prefix(err, "delegating to %s", b->site->ce) : 0;
}

/* Each job's description; the batch's image from the site's storage when it
 * could be put there once (shared: its URL), else uploaded with each job. */
static void describe_all(struct batch *b, const char *shared)
{
	struct gg_job_spec q = *b->q; /* shallow: only image_url differs */
	if (shared)
		q.image_url = shared;
	for (size_t i = 0; i < b->n; i++) {
		struct bjob *j = b->jobs[i];
		struct gg_err err = {0};
		if (j->rc)
			continue;
		int rc = gg_job_describe_nth(&q, b->site, &j->r, j->index, &j->jd, &err);
		if (rc == 0 && b->deleg)
			rc = gg_jd_set(&j->jd.delegation_id, b->deleg, &err);
		if (rc == 0)
			rc = gg_jd_xrsl(&j->jd, &j->xrsl, &err);
		if (rc < 0)
			job_fail(j, rc, &err);
	}
}

/* One job's answer of the request. */
static void answer(struct bjob *j, struct gg_ce_result *res)
{
	struct gg_err err = {0};
	if (res->code == 201 && res->id) {
		j->job_id = res->id;
		res->id = NULL;
	} else if (res->code == 201 || res->code == 0) {
		j->adopt = 1;
		gg_err_set(&err, GG_EPROTO, "%s",
			   res->code ? "the CE answered a malformed job id"
				     : "the CE did not answer for it");
		job_fail(j, GG_EPROTO, &err);
	} else {
		char reason[512];
		snprintf(reason, sizeof reason, "%s", res->reason ? res->reason : "no reason");
		for (char *p = reason; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		if (res->code < 0)
			gg_err_set(&err, GG_EJOB, "%s", reason);
		else
			gg_err_set(&err, GG_EJOB, "the CE refused the job: %s (code %d)", reason,
				   res->code);
		job_fail(j, GG_EJOB, &err);
	}
}

/* The request with every description: the answer per job, or the whole
 * request's failure (the CE not reached: nothing made; else the answer lost:
 * the records kept for adoption). */
static int post(struct batch *b, struct gg_err *err)
{
	const char **descs = calloc(b->n ? b->n : 1, sizeof *descs);
	struct bjob **sent = calloc(b->n ? b->n : 1, sizeof *sent);
	size_t m = 0;
	int asked = 0, rc = descs && sent ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < b->n; i++)
		if (!b->jobs[i]->rc) {
			sent[m] = b->jobs[i];
			descs[m++] = b->jobs[i]->xrsl;
		}
	if (rc == 0 && m && b->e->cancel && b->e->cancel(b->e->ud))
		rc = gg_err_set(err, GG_EINTR, "interrupted before submitting");
	struct gg_ce_result *res = NULL;
	if (rc == 0 && m) {
		gg_engine_notef(b->e, GG_NOTE_VERBOSE,
				"sending %zu job descriptions to %s in one request", m,
				b->site->ce);
		asked = 1;
		rc = gg_ce_submit_many(b->ce, descs, m, &res, err);
	}
	int adopt = asked && (rc == GG_ENET || rc == GG_EPROTO || rc == GG_EINTR);
	if (asked && rc < 0 && gg_ce_submit_unsent(b->ce)) {
		gg_err_prefix(err, "the CE was not reached, nothing was sent");
		adopt = 0;
	} else if (adopt) {
		gg_err_prefix(err, "the CE may have the job ('gridgpu list --sync' adopts it)");
	}
	for (size_t i = 0; i < m; i++) {
		sent[i]->adopt = adopt;
		if (rc < 0)
			job_fail(sent[i], rc, err);
		else
			answer(sent[i], &res[i]);
	}
	gg_ce_results_free(res, rc == 0 ? m : 0);
	free(descs);
	free(sent);
	return rc;
}

/* The job ids into their records, together; a record killed meanwhile gets
 * its job cancelled. A job made but not recorded fails (settle cancels it). */
static void record_ids(struct batch *b)
{
	struct gg_store_change *ch = calloc(b->n ? b->n : 1, sizeof *ch);
	struct bjob **of = calloc(b->n ? b->n : 1, sizeof *of);
	struct gg_err err = {0};
	size_t m = 0;
	for (size_t i = 0; ch && of && i < b->n; i++)
		if (b->jobs[i]->job_id && !b->jobs[i]->rc) {
			of[m] = b->jobs[i];
			ch[m++] = (struct gg_store_change){.name = b->jobs[i]->r.name,
							   .ud = b->jobs[i]->job_id};
		}
	if (!ch || !of)
		fail_all(b, gg_err_set(&err, GG_ENOMEM, "out of memory"), &err);
	else if (m)
		gg_store_update_many(b->e->st, ch, m, gg_rec_set_submitted, &err);
	for (size_t i = 0; i < m; i++) {
		struct bjob *j = of[i];
		struct gg_err e = {0};
		if (ch[i].rc < 0) {
			gg_err_set(&e, ch[i].rc, "recording the job %s: %s", j->job_id, err.msg);
			job_fail(j, ch[i].rc, &e);
			continue;
		}
		gg_record_clear(&j->r);
		j->r = ch[i].out;
		if (j->r.state == GG_S_KILLED) {
			gg_err_set(&e, GG_EJOB,
				   "%s: killed while it was being submitted (job %s cancelled)",
				   j->r.name, j->job_id);
			job_fail(j, GG_EJOB, &e);
		}
	}
	free(ch);
	free(of);
}

static int upload_one(struct batch *b, struct bjob *j, const struct gg_jd_file *f,
		      struct gg_err *err)
{
	struct gg_engine *e = b->e;
	for (int attempt = 0;; attempt++) {
		char label[160];
		snprintf(label, sizeof label, "%s %s", j->r.name, f->name);
		void *p = e->upload_begin ? e->upload_begin(e->ud, label) : NULL;
		int rc = gg_ce_put_file(b->ce, j->job_id, f->name, f->local,
					p ? e->upload_progress : NULL, p, err);
		if (e->upload_end && p)
			e->upload_end(p);
		if (rc == 0 || rc == GG_EINTR || attempt == 1)
			return rc;
		gg_engine_notef(e, GG_NOTE_WARN, "%s: uploading %s failed (%s): trying once more",
				j->r.name, f->name, err->msg);
	}
}

/* A job's inputs; one that cannot get them is removed from the CE. */
static int upload(struct batch *b, struct bjob *j)
{
	struct gg_err err = {0};
	if (b->e->cancel && b->e->cancel(b->e->ud)) {
		gg_err_set(&err, GG_EINTR, "interrupted before its inputs were uploaded");
		return job_fail(j, GG_EINTR, &err);
	}
	for (int i = 0; i < j->jd.ninputs; i++) {
		const struct gg_jd_file *f = &j->jd.inputs[i];
		if (f->local && upload_one(b, j, f, &err) < 0) {
			gg_err_prefix(&err, "uploading %s", f->name);
			return job_fail(j, err.code, &err);
		}
	}
	gg_engine_notef(b->e, GG_NOTE_INFO, "submitted %s to %s (job %s)", j->r.name, j->r.ce,
			j->job_id);
	return 0;
}

/* Many records changed by fn, together (one by one when out of memory). */
static void change(struct batch *b, struct gg_store_change *ch, size_t n, gg_record_update_fn fn)
{
	if (n && gg_store_update_many(b->e->st, ch, n, fn, NULL) == GG_ENOMEM)
		for (size_t i = 0; i < n; i++)
			if (ch[i].rc == GG_ENOMEM)
				gg_store_update(b->e->st, ch[i].name, fn, ch[i].ud, NULL, NULL);
	for (size_t i = 0; i < n; i++)
		if (ch[i].rc == 0)
			gg_record_clear(&ch[i].out);
}

/* After the batch: the failed jobs made at the CE killed and cleaned (in
 * bulk), their records marked failed; the records of jobs that surely did not
 * reach the CE dropped (unless killed); those it may have kept for adoption. */
static void settle(struct batch *b)
{
	struct gg_store_change *fails = calloc(b->n ? b->n : 1, sizeof *fails);
	struct gg_store_change *drops = calloc(b->n ? b->n : 1, sizeof *drops);
	const char **ids = calloc(b->n ? b->n : 1, sizeof *ids);
	size_t nf = 0, nd = 0, ni = 0;
	for (size_t i = 0; fails && drops && ids && i < b->n; i++) {
		struct bjob *j = b->jobs[i];
		if (!j->rc || !j->created || j->adopt)
			continue;
		if (j->job_id) /* made: killed and cleaned (a killed record's too) */
			ids[ni++] = j->job_id;
		if (j->r.job_id)
			fails[nf++] = (struct gg_store_change){.name = j->r.name, .ud = j->err.msg};
		else
			drops[nd++] = (struct gg_store_change){.name = j->r.name};
	}
	struct gg_ce_result *res = NULL;
	if (ni && gg_ce_kill(b->ce, ids, ni, &res, NULL) == 0)
		gg_ce_results_free(res, ni);
	if (ni && gg_ce_clean(b->ce, ids, ni, &res, NULL) == 0)
		gg_ce_results_free(res, ni);
	change(b, fails, nf, gg_rec_set_failed);
	change(b, drops, nd, gg_rec_drop_unless_killed);
	free(fails);
	free(drops);
	free(ids);
}

/* Every job of the batch at its site, each job's result in it. */
static void batch_at(struct batch *b)
{
	struct gg_err err = {0};
	if (prepare(b, &err) < 0) {
		fail_all(b, err.code, &err);
		return;
	}
	create_records(b);
	if (open_ce(b, &err) < 0)
		fail_all(b, err.code, &err);
	char *shared = err.code ? NULL : gg_batch_share_image(b->e, &b->auth, b->q, b->site, b->n);
	describe_all(b, shared);
	free(shared);
	if (post(b, &err) == 0)
		record_ids(b);
	for (size_t i = 0; i < b->n; i++)
		if (!b->jobs[i]->rc)
			upload(b, b->jobs[i]);
	settle(b);
	struct gg_http *h = b->ce ? gg_ce_http(b->ce) : NULL;
	int64_t sent, received;
	if (h) {
		gg_http_bytes(h, &sent, &received);
		gg_engine_notef(
			b->e, GG_NOTE_VERBOSE,
			"%ld TLS connection(s) to the CE for %zu jobs, %lld bytes sent, %lld "
			"received",
			gg_http_connections(h), b->n, (long long)sent, (long long)received);
	}
}

static void bjob_clear(struct bjob *j)
{
	gg_record_clear(&j->r);
	gg_jd_clear(&j->jd);
	free(j->xrsl);
	free(j->job_id);
	*j = (struct bjob){.index = j->index};
}

/* The jobs whose turn is this site in this round, submitted; those that
 * failed and may go on have their record and answer cleared for the next. */
static void round_at(struct gg_engine *e, const struct gg_job_spec *q, const struct gg_site *site,
		     int token, struct bjob **jobs, size_t n)
{
	struct batch b = {.e = e, .q = q, .site = site, .token = token, .jobs = jobs, .n = n};
	batch_at(&b);
	gg_auth_clear(&b.auth);
	gg_ce_free(b.ce);
	free(b.deleg);
}

int gg_engine_submit_many(struct gg_engine *e, const struct gg_job_spec *q,
			  const struct gg_site *const *sites, int nsites, int count, int token,
			  gg_submit_each_fn each, void *ud, struct gg_err *err)
{
	if (nsites < 1 || count < 1)
		return gg_err_set(err, GG_EUSAGE, "no site to submit to");
	struct bjob *all = calloc((size_t)count, sizeof *all);
	struct bjob **turn = calloc((size_t)count, sizeof *turn);
	char *done = calloc((size_t)count, 1);
	if (!all || !turn || !done) {
		free(all);
		free(turn);
		free(done);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	int stop = 0;
	for (int k = 0; k < nsites && !stop; k++)
		for (int s = 0; s < nsites && !stop; s++) {
			size_t n = 0;
			for (int i = 0; i < count; i++)
				if (!done[i] && (i + k) % nsites == s) {
					all[i].index = i;
					turn[n++] = &all[i];
				}
			if (!n)
				continue;
			for (size_t c = 0; c < n; c += GG_BATCH_MAX)
				round_at(e, q, sites[s], token, turn + c,
					 n - c < GG_BATCH_MAX ? n - c : GG_BATCH_MAX);
			for (size_t t = 0; t < n; t++) {
				struct bjob *j = turn[t];
				int last = k == nsites - 1 || j->rc == 0 || j->adopt ||
					   j->rc == GG_EINTR || j->rc == GG_EUSAGE;
				if (!last && nsites > 1) {
					gg_engine_notef(e, GG_NOTE_WARN, "site %s: %s",
							sites[s]->name, j->err.msg);
				} else {
					int kept =
						j->created && (!j->rc || j->adopt || j->r.job_id);
					done[j->index] = 1;
					each(ud, j->index, j->rc, kept ? &j->r : NULL, &j->err);
				}
				stop |= j->rc == GG_EINTR;
				bjob_clear(j);
			}
		}
	int rc = stop ? gg_err_set(err, GG_EINTR, "interrupted") : 0;
	free(all);
	free(turn);
	free(done);
	return rc;
}
