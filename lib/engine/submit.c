/* Submitting a session or a job: the record first, then the key, delegation,
 * the submission and the uploads; a kill at any moment wins, and a submission
 * whose answer was lost is left for adoption. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "ssh/ssh.h"

struct run {
	struct gg_engine *e;
	struct gg_submission *s;
	struct gg_record r;
	struct gg_auth auth;
	struct gg_ce *ce;
	struct gg_jobdesc jd;
	char *pub, *job_id, *deleg;
	int created, posted, own_key;
};

static int set_key(struct gg_record *r, void *ud)
{
	if (gg_sess_state_ended(r->state))
		return 1;
	free(r->key);
	r->key = strdup((const char *)ud);
	return 0;
}

int gg_rec_set_submitted(struct gg_record *r, void *ud)
{
	free(r->job_id);
	r->job_id = strdup((const char *)ud);
	/* killed while it was being submitted: stays killed (the caller cancels
	 * the job it just made) */
	if (r->state != GG_S_KILLED)
		r->state = GG_S_QUEUED;
	return 0;
}

int gg_rec_set_failed(struct gg_record *r, void *ud)
{
	if (gg_sess_state_ended(r->state))
		return 1; /* a kill meanwhile wins */
	r->state = GG_S_FAILED;
	free(r->error);
	r->error = strdup((const char *)ud);
	return 0;
}

/* Nothing reached the CE: forget the record, unless a kill has marked it
 * (the user was told "killed": 'clean' removes it). */
int gg_rec_drop_unless_killed(struct gg_record *r, void *ud)
{
	(void)ud;
	return r->state == GG_S_KILLED ? 1 : GG_STORE_DROP;
}

/* The record's uid, the credential (lasting the walltime), the key's path. */
static int prepare(struct run *x, struct gg_err *err)
{
	char uid[13];
	const struct gg_site *site = gg_engine_site(x->e, x->r.site);
	int rc = gg_random_uid(uid, err);
	if (rc < 0)
		return rc;
	x->r.uid = strdup(uid);
	x->r.state = GG_S_REQUESTED;
	if (!x->r.ce)
		return gg_err_set(err, GG_EUSAGE, "site '%s' has no CE URL",
				  x->r.site ? x->r.site : "?");
	/* GPUs from a site that cannot give them: refused before anything is
	 * written or sent (the description would make a CPU job of it) */
	const struct gg_jd_resources *res = x->s->session ? &x->s->session->res
					    : x->s->job   ? &x->s->job->res
							  : NULL;
	if (res && (rc = gg_jd_gpu_check(res, x->s->site, err)) < 0)
		return rc;
	/* a session is reached through the jump hosts: one that asks for a second
	 * factor must have its login open, or the wait would end in it */
	if (x->s->session && (rc = gg_ssh_logins_check(site, err)) < 0)
		return rc;
	if ((rc = gg_auth_find(site, x->r.auth, x->r.walltime, &x->auth, err)) < 0)
		return rc;
	/* storage files that cannot work: told before anything is written */
	if (x->s->job &&
	    (rc = gg_storage_auth(x->s->job, x->s->site, x->r.walltime, &x->auth, err)) < 0)
		return rc;
	if (x->s->job && (rc = gg_storage_check(x->e, &x->auth, x->s->job, x->s->site, err)) < 0)
		return rc;
	if (x->s->make_key && !x->r.key) {
		struct gg_ssh_paths sp;
		if ((rc = gg_ssh_paths_init(&sp, err)) < 0)
			return rc;
		x->r.key = gg_strdup_printf("%s/%s", sp.keys, x->r.uid);
		gg_ssh_paths_clear(&sp);
	}
	if (x->r.key)
		x->pub = gg_strdup_printf("%s.pub", x->r.key);
	return x->r.uid && (!x->r.key || x->pub) ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The session key, made once the record names it (a crash meanwhile leaves a
 * record that kill and clean find it by). */
static int make_key(struct run *x, struct gg_err *err)
{
	if (x->s->make_key) {
		char *comment = gg_strdup_printf("gridgpu-session-%s", x->r.name);
		int rc = gg_ssh_keygen(x->r.key, comment, err);
		free(comment);
		x->own_key = 1;
		if (rc < 0) /* a kill may have removed it under our feet */
			return gg_engine_killed(x->e, x->r.name)
				       ? gg_err_set(err, GG_EJOB, "killed before it was submitted")
				       : rc;
	}
	if (!x->r.key)
		return 0;
	/* Only the key: anything else may have changed meanwhile (a kill). */
	struct gg_record now;
	int rc = gg_store_update(x->e->st, x->r.name, set_key, x->r.key, &now, err);
	if (rc < 0)
		return rc;
	enum gg_sess_state st = now.state;
	gg_record_clear(&now);
	return st == GG_S_KILLED ? gg_err_set(err, GG_EJOB, "killed before it was submitted") : 0;
}

/* Delegate the proxy (reusing one the CE holds while it lasts the walltime);
 * a slurm+ssh site's ("ssh") proxy is for its storage URLs, not delegated. */
static int delegate(struct run *x, struct gg_err *err)
{
	if (!x->auth.proxy_path || !strcmp(x->auth.kind, "ssh"))
		return 0;
	char *state_dir = NULL, *cache = NULL;
	if (gg_xdg_dir(GG_XDG_STATE, &state_dir, err) == 0)
		cache = gg_strdup_printf("%s/delegations.json", state_dir);
	free(state_dir);
	int rc = gg_ce_delegate(x->ce, x->auth.proxy_path, x->r.walltime, cache, &x->deleg, err);
	free(cache);
	if (rc < 0)
		return gg_err_prefix(err, "delegating to %s", x->r.ce);
	return gg_jd_set(&x->jd.delegation_id, x->deleg, err);
}

/* The job made while a kill marked the record: stop it at once. */
static int cancel_killed(struct run *x, struct gg_err *err)
{
	const char *ids[1] = {x->job_id};
	struct gg_ce_result *res = NULL;
	if (x->r.kind == GG_REC_SESSION)
		gg_ce_put(x->ce, x->job_id, "stop", "", 0, NULL);
	if (gg_ce_kill(x->ce, ids, 1, &res, NULL) == 0)
		gg_ce_results_free(res, 1);
	return gg_err_set(err, GG_EJOB, "killed while it was being submitted (job %s cancelled)",
			  x->job_id);
}

/* The job's description: the caller's, or from what was asked. */
static int describe(struct run *x, struct gg_err *err)
{
	const struct gg_submission *s = x->s;
	if (s->describe)
		return s->describe(s->describe_ud, &x->r, x->pub, &x->jd, err);
	if (s->session)
		return gg_session_describe(s->session, s->site, &x->r, x->pub, &x->jd, err);
	if (s->job)
		return gg_job_describe(s->job, s->site, &x->r, &x->jd, err);
	return gg_err_set(err, GG_EUSAGE, "nothing describes the job");
}

static int send_job(struct run *x, struct gg_err *err)
{
	int rc = describe(x, err);
	if (rc == 0)
		rc = gg_engine_open_ce(x->e, x->r.ce, &x->auth, &x->ce, err);
	if (rc == 0)
		rc = delegate(x, err);
	if (rc < 0)
		return rc;
	if (x->e->cancel && x->e->cancel(x->e->ud))
		return gg_err_set(err, GG_EINTR, "interrupted before submitting");
	x->posted = 1;
	if ((rc = gg_ce_submit_jd(x->ce, &x->jd, &x->job_id, err)) < 0)
		return rc;
	struct gg_record saved;
	if ((rc = gg_store_update(x->e->st, x->r.name, gg_rec_set_submitted, x->job_id, &saved,
				  err)) < 0)
		return rc;
	gg_record_clear(&x->r);
	x->r = saved;
	if (x->r.state == GG_S_KILLED)
		return cancel_killed(x, err);
	gg_engine_notef(x->e, GG_NOTE_INFO, "submitted %s to %s (job %s)", x->r.name, x->r.ce,
			x->job_id);
	return 0;
}

static int upload_one(struct run *x, const struct gg_jd_file *f, struct gg_err *err)
{
	for (int attempt = 0;; attempt++) {
		char label[160];
		snprintf(label, sizeof label, "%s %s", x->r.name, f->name);
		void *p = x->e->upload_begin ? x->e->upload_begin(x->e->ud, label) : NULL;
		int rc = gg_ce_put_file(x->ce, x->job_id, f->name, f->local,
					p ? x->e->upload_progress : NULL, p, err);
		if (x->e->upload_end && p)
			x->e->upload_end(p);
		if (rc == 0 || rc == GG_EINTR || attempt == 1 || !x->s->retry_uploads)
			return rc;
		gg_engine_notef(x->e, GG_NOTE_WARN, "uploading %s failed (%s): trying once more",
				f->name, err->msg);
	}
}

/* Stage the inputs; a job that cannot get them is removed from the CE: no
 * half-staged job waits for its inputs. */
static int upload(struct run *x, struct gg_err *err)
{
	for (int i = 0; i < x->jd.ninputs; i++) {
		if (!x->jd.inputs[i].local)
			continue;
		if (upload_one(x, &x->jd.inputs[i], err) < 0) {
			gg_err_prefix(err, "uploading %s", x->jd.inputs[i].name);
			gg_ce_cancel(x->ce, x->job_id);
			return err->code;
		}
	}
	struct gg_http *h = gg_ce_http(x->ce);
	if (h) {
		int64_t sent, received;
		gg_http_bytes(h, &sent, &received);
		gg_engine_notef(x->e, GG_NOTE_VERBOSE,
				"%ld TLS connection(s) to the CE so far, %lld bytes sent, %lld "
				"received",
				gg_http_connections(h), (long long)sent, (long long)received);
	}
	return 0;
}

/* After an error: a job made but not recorded is cancelled; a record whose
 * submission may have reached the CE is kept for adoption; one that surely did
 * not is forgotten (with its key); else the record is marked failed. */
static int failed(struct run *x, int rc, struct gg_err *err)
{
	if (x->job_id && !x->r.job_id && x->ce)
		gg_ce_cancel(x->ce, x->job_id);
	if (x->posted && !x->job_id && x->ce && gg_ce_submit_unsent(x->ce)) {
		/* Refused connection, TLS handshake, DNS: the CE has no job. */
		gg_err_prefix(err, "the CE was not reached, nothing was sent");
		x->posted = 0;
	}
	if (!x->created)
		return rc;
	if (!x->r.job_id && x->posted && !x->job_id &&
	    (rc == GG_ENET || rc == GG_EPROTO || rc == GG_EINTR))
		return gg_err_prefix(err, "the CE may have the job ('gridgpu list --sync' "
					  "adopts it)");
	if (!x->r.job_id) {
		if (x->own_key)
			gg_ssh_key_remove(x->r.key);
		gg_store_update(x->e->st, x->r.name, gg_rec_drop_unless_killed, NULL, NULL, NULL);
	} else {
		gg_store_update(x->e->st, x->r.name, gg_rec_set_failed, err->msg, NULL, NULL);
	}
	return rc;
}

static void run_clear(struct run *x)
{
	gg_record_clear(&x->r);
	gg_auth_clear(&x->auth);
	gg_jd_clear(&x->jd);
	gg_ce_free(x->ce);
	free(x->pub);
	free(x->job_id);
	free(x->deleg);
}

int gg_engine_submit(struct gg_engine *e, struct gg_submission *s, struct gg_record *out,
		     struct gg_ce **ce, struct gg_err *err)
{
	struct run x = {.e = e, .s = s, .r = s->rec};
	memset(&s->rec, 0, sizeof s->rec);
	memset(out, 0, sizeof *out);
	if (ce)
		*ce = NULL;
	int rc = prepare(&x, err);
	if (rc == 0 && (rc = gg_store_create(e->st, &x.r, s->prefix, err)) == 0)
		x.created = 1;
	if (rc == 0)
		rc = make_key(&x, err);
	if (rc == 0)
		rc = send_job(&x, err);
	if (rc == 0)
		rc = upload(&x, err);
	if (rc < 0) {
		rc = failed(&x, rc, err);
		/* the name a failed submission had, for the caller's message */
		if (x.created) {
			out->name = x.r.name;
			x.r.name = NULL;
		}
	} else {
		*out = x.r;
		memset(&x.r, 0, sizeof x.r);
		if (ce) {
			*ce = x.ce;
			x.ce = NULL;
		}
	}
	run_clear(&x);
	return rc;
}
