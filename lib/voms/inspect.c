/* gg_proxy_inspect: what `gridgpu proxy info` does, the proxy read, its ACs,
 * its chain verified, and voms-proxy-info's questions answered. */
#include "voms/proxyreq.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --exists, --valid: the proxy itself. unverified: why verification failed,
 * or NULL. */
static int answer_proxy(const struct gg_proxy_report *r, const char *unverified, int64_t need,
			struct gg_err *err)
{
	char b1[40], b2[40];
	const struct gg_proxy_info *in = &r->info;
	const char *why = in->not_yet_valid    ? "is not valid yet"
			  : in->time_left <= 0 ? "has expired"
					       : unverified;
	if (why)
		return gg_err_set(err, GG_ECRED, "proxy '%s' %s", in->path, why);
	if (need && in->time_left < need)
		return gg_err_set(err, GG_ECRED, "proxy '%s' has %s left, less than %s", in->path,
				  gg_duration_format(in->time_left, b1, sizeof b1),
				  gg_duration_format(need, b2, sizeof b2));
	return 0;
}

/* One AC of the answer: valid, for need seconds. */
static int answer_ac(const char *path, const struct gg_ac *ac, int64_t need, time_t now,
		     struct gg_err *err)
{
	char b1[40], b2[40];
	int valid = strcmp(gg_ac_state(ac, now), "valid") == 0;
	if (valid && need && ac->time_left < need)
		return gg_err_set(err, GG_ECRED,
				  "the attribute certificate of VO %s in '%s' has %s left, less "
				  "than %s",
				  ac->vo, path, gg_duration_format(ac->time_left, b1, sizeof b1),
				  gg_duration_format(need, b2, sizeof b2));
	if (valid)
		return 0;
	int ended = ac->time_left <= 0;
	return gg_err_set(
		err, GG_ECRED, "the attribute certificate of VO %s in '%s' %s (%s %s)", ac->vo,
		path, ended ? "has expired" : "is not valid yet",
		ended ? "it ended" : "it starts at",
		gg_time_local((int64_t)(ended ? ac->not_after : ac->not_before), b1, sizeof b1));
}

/* --acexists VO, and --valid for the ACs. */
static int answer_acs(const struct gg_proxy_report *r, const char *vo, int64_t need,
		      struct gg_err *err)
{
	int found = 0;
	for (size_t i = 0; i < r->n_acs; i++) {
		if (vo && strcmp(r->acs[i].vo, vo) != 0)
			continue;
		found = 1;
		if (answer_ac(r->info.path, &r->acs[i], need, r->now, err) < 0)
			return err->code;
	}
	if (vo && !found)
		return gg_err_set(err, GG_ECRED, "proxy '%s' has no attribute certificate of VO %s",
				  r->info.path, vo);
	return 0;
}

/* The proxy file read, described at r->now, verified when asked: when an
 * answer is asked, a chain that does not verify is not an error, *why says
 * what is wrong with it. */
static int read_proxy(const struct gg_proxy_req *q, const char *path, struct gg_proxy_report *r,
		      struct gg_err *why, struct gg_err *err)
{
	struct gg_cred *cred = NULL;
	int rc = gg_cred_load_public(path, &cred, err);
	if (rc == GG_ENOTFOUND)
		rc = gg_err_set(err, GG_ECRED,
				"no proxy at '%s' (make one with 'gridgpu proxy init')", path);
	if (rc == 0)
		rc = gg_proxy_info_get(cred, r->now, &r->info, err);
	if (rc == 0 && gg_cred_acs(cred, r->now, &r->acs, &r->n_acs, err) < 0)
		rc = err->code = GG_ECRED;
	if (rc == 0 && q->verify) {
		r->verified = gg_cred_verify(cred, r->ca_dir, 0, why) == 0;
		if (!r->verified && !q->answer) {
			*err = *why;
			rc = why->code;
		}
	}
	gg_cred_free(cred);
	return rc;
}

int gg_proxy_inspect(const struct gg_proxy_req *q, struct gg_proxy_report **out, struct gg_err *err)
{
	*out = NULL;
	/* The proxy file holds the proxy's key, and a bearer token is read: no
	 * core dumps, as for gg_proxy_make. */
	gg_proxy_no_core_dumps(q);
	struct gg_proxy_report *r = calloc(1, sizeof *r);
	char *path = NULL;
	struct gg_err why = {0}, perm = {0};
	if (!r)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	r->verified = -1;
	r->now = time(NULL);
	int rc = gg_proxy_path(q->file, &path, err);
	if (rc == 0 && q->verify)
		rc = gg_cred_ca_dir(q->ca_dir, &r->ca_dir, err);
	if (rc == 0)
		rc = read_proxy(q, path, r, &why, err);
	if (rc == 0 && !r->info.path) {
		r->info.path = path;
		path = NULL;
	}
	if (rc == 0 && q->answer &&
	    answer_proxy(r, why.code ? why.msg : NULL, q->need, &r->answer) == 0)
		answer_acs(r, q->answer_vo, q->need, &r->answer);
	if (rc == 0 && (q->show & GG_PROXY_SHOW_MODE) &&
	    gg_file_check_private(r->info.path, "proxy", &perm) < 0)
		gg_proxy_note(q, GG_NOTE_WARN, "%s", perm.msg);
	if (rc == 0)
		gg_proxy_report_find_token(q, r);
	free(path);
	if (rc < 0)
		gg_proxy_report_free(r);
	else
		*out = r;
	return rc;
}
