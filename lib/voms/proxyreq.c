/* The proxy workflow's request and report: the setters and getters of the
 * opaque handles of include/gridgpu/voms.h. */
#include "voms/proxyreq.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gg_proxy_req *gg_proxy_req_new(void)
{
	struct gg_proxy_req *q = calloc(1, sizeof *q);
	if (q) {
		q->bits = GG_PROXY_DEFAULT_BITS;
		q->path_length = -1;
		q->policy = GG_PROXY_IMPERSONATION;
	}
	return q;
}

void gg_proxy_req_free(struct gg_proxy_req *q)
{
	free(q);
}

void gg_proxy_req_set_cred(struct gg_proxy_req *q, const char *cert, const char *key)
{
	q->cert = cert;
	q->key = key;
}

void gg_proxy_req_set_file(struct gg_proxy_req *q, const char *path)
{
	q->file = path;
}

void gg_proxy_req_set_lifetime(struct gg_proxy_req *q, int64_t secs)
{
	q->lifetime = secs;
}

void gg_proxy_req_set_key(struct gg_proxy_req *q, int bits, int threads)
{
	q->bits = bits ? bits : GG_PROXY_DEFAULT_BITS;
	q->threads = threads;
}

void gg_proxy_req_set_policy(struct gg_proxy_req *q, enum gg_proxy_policy policy)
{
	q->policy = policy;
}

void gg_proxy_req_set_path_length(struct gg_proxy_req *q, int path_length)
{
	q->path_length = path_length;
}

void gg_proxy_req_set_verify(struct gg_proxy_req *q, const char *ca_dir)
{
	q->verify = 1;
	q->ca_dir = ca_dir;
}

int gg_proxy_req_add_voms(struct gg_proxy_req *q, const char *vo_fqan, struct gg_err *err)
{
	const char *c = strchr(vo_fqan, ':');
	char vo[256];
	size_t vl = c ? (size_t)(c - vo_fqan) : strlen(vo_fqan);
	if (q->n_voms == GG_PROXY_VOMS_MAX)
		return gg_err_set(err, GG_EUSAGE, "at most %d VOs", GG_PROXY_VOMS_MAX);
	if (vl >= sizeof vo)
		return gg_err_set(err, GG_EUSAGE, "the VO name is longer than %zu bytes",
				  sizeof vo - 1);
	snprintf(vo, sizeof vo, "%.*s", (int)vl, vo_fqan);
	/* the FQAN is of the VO unless VO is an alias: checked once the server is known */
	if (gg_voms_vo_check(vo, err) < 0 || (c && gg_voms_fqan_check(NULL, c + 1, err) < 0))
		return err->code;
	q->voms[q->n_voms++] = vo_fqan;
	return 0;
}

int gg_proxy_req_set_order(struct gg_proxy_req *q, const char *fqan, struct gg_err *err)
{
	if (gg_voms_fqan_check(NULL, fqan, err) < 0)
		return err->code;
	q->order = fqan;
	return 0;
}

void gg_proxy_req_set_voms_lifetime(struct gg_proxy_req *q, int64_t secs)
{
	q->voms_lifetime = secs;
}

void gg_proxy_req_set_show(struct gg_proxy_req *q, unsigned what)
{
	q->show = what;
}

void gg_proxy_req_set_answer(struct gg_proxy_req *q, int64_t need, const char *vo)
{
	q->answer = 1;
	q->need = need;
	q->answer_vo = vo;
}

void gg_proxy_req_on_passphrase(struct gg_proxy_req *q, gg_passphrase_fn fn, void *ud)
{
	q->pass_fn = fn;
	q->pass_ud = ud;
}

void gg_proxy_req_on_note(struct gg_proxy_req *q, gg_note_fn fn, void *ud)
{
	q->note_fn = fn;
	q->note_ud = ud;
}

void gg_proxy_req_set_log(struct gg_proxy_req *q, const struct gg_log *log)
{
	q->log = log;
}

void gg_proxy_note(const struct gg_proxy_req *q, enum gg_note kind, const char *fmt, ...)
{
	if (!q->note_fn)
		return;
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0)
		q->note_fn(q->note_ud, kind, msg);
	free(msg);
}

void gg_proxy_no_core_dumps(const struct gg_proxy_req *q)
{
	struct gg_err err = {0};
	if (gg_cred_disable_core_dumps(&err) < 0)
		gg_proxy_note(q, GG_NOTE_WARN, "%s", err.msg);
}

void gg_proxy_report_find_token(const struct gg_proxy_req *q, struct gg_proxy_report *r)
{
	struct gg_err err = {0};
	if (!(q->show & GG_PROXY_SHOW_TOKEN))
		return;
	int rc = gg_token_find(&r->token, &err);
	if (rc < 0 && rc != GG_ENOTFOUND)
		gg_proxy_note(q, GG_NOTE_WARN, "%s", err.msg);
	if (rc < 0)
		r->token = NULL;
}

/* ---- the report ---- */

const struct gg_proxy_info *gg_proxy_report_info(const struct gg_proxy_report *r)
{
	return &r->info;
}

const struct gg_ac *gg_proxy_report_acs(const struct gg_proxy_report *r, size_t *n)
{
	*n = r->n_acs;
	return r->acs;
}

int gg_proxy_report_verified(const struct gg_proxy_report *r)
{
	return r->verified;
}

const char *gg_proxy_report_ca_dir(const struct gg_proxy_report *r)
{
	return r->ca_dir;
}

const struct gg_token *gg_proxy_report_token(const struct gg_proxy_report *r)
{
	return r->token;
}

time_t gg_proxy_report_time(const struct gg_proxy_report *r)
{
	return r->now;
}

int gg_proxy_report_answer(const struct gg_proxy_report *r, struct gg_err *err)
{
	if (!r->answer.code)
		return 0;
	if (err)
		*err = r->answer;
	return r->answer.code;
}

void gg_proxy_report_free(struct gg_proxy_report *r)
{
	if (!r)
		return;
	gg_proxy_info_clear(&r->info);
	gg_ac_list_free(r->acs, r->n_acs);
	gg_token_free(r->token);
	free(r->ca_dir);
	free(r);
}
