/* The doctor's checks of the configuration and the credentials: the site,
 * the proxy and its chain, the bearer token, the CA directory. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cred/cred.h"
#include "doctor/doctor.h"

#define S(...) gg_strdup_printf(__VA_ARGS__)

static void fmt_time(time_t t, char *b, size_t n)
{
	gg_time_local((int64_t)t, b, n);
}

void gg_doctor_check_config(struct gg_doctor *d)
{
	struct gg_err err = {0};
	char *path = NULL;
	const char *p = d->config_path;
	if (!p) {
		if (gg_config_default_path(&path, &err) < 0) {
			gg_doctor_add(d, "config", "configuration", GG_DOCTOR_FAIL,
				      S("%s", err.msg), S("set XDG_CONFIG_HOME or HOME"));
			return;
		}
		p = path;
	}
	if (gg_config_load(p, &d->cfg, &err) < 0) {
		gg_doctor_add(
			d, "config", "configuration", GG_DOCTOR_FAIL, S("%s", err.msg),
			S("correct the line named in %s, or remove it and add the site again with "
			  "'gridgpu site add'",
			  p));
		free(path);
		return;
	}
	const char *want = d->site_name ? d->site_name : d->cfg->default_site;
	d->site = want ? gg_config_site(d->cfg, want) : NULL;
	if (want && !d->site)
		gg_doctor_add(d, "config", "configuration", GG_DOCTOR_FAIL,
			      S("%s: no site '%s' (%zu site%s)", p, want, d->cfg->nsites,
				d->cfg->nsites == 1 ? "" : "s"),
			      S("see 'gridgpu site list', or add it: gridgpu site add %s --ce URL",
				want));
	else if (!d->site)
		gg_doctor_add(
			d, "config", "configuration", GG_DOCTOR_SKIP,
			S("%s: no site given and no default site, so no CE or jump host to check",
			  p),
			S("gridgpu site add NAME --ce URL [--jump USER@HOST]..."));
	else
		gg_doctor_add(d, "config", "configuration", GG_DOCTOR_OK,
			      S("%s: site %s%s", p, d->site->name,
				d->cfg->default_site && !strcmp(d->cfg->default_site, d->site->name)
					? " (the default)"
					: ""),
			      NULL);
	free(path);
}

/* Text as it may go on a command line to copy: letters, digits, and seps. */
static int plain(const char *s, const char *seps)
{
	static const char an[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t n = s ? strspn(s, an) : 0;
	while (s && s[n] && strchr(seps, s[n]))
		n += 1 + strspn(s + n + 1, an);
	return s && *s && !s[n];
}

/* " --voms VO" for an AC, " --voms VO:FQAN" when its first FQAN (as VOMS
 * clients ask for it, without the NULL role and capability) is not the VO's
 * root group; appended to buf. */
static void add_voms(char *buf, size_t len, const struct gg_ac *ac)
{
	char fqan[160] = "";
	if (ac->n_fqans && strlen(ac->fqans[0]) < sizeof fqan) {
		strcpy(fqan, ac->fqans[0]);
		const char *tail[] = {"/Capability=NULL", "/Role=NULL"};
		for (int k = 0; k < 2; k++) {
			size_t f = strlen(fqan), t = strlen(tail[k]);
			if (f > t && !strcmp(fqan + f - t, tail[k]))
				fqan[f - t] = '\0';
		}
		if (fqan[0] != '/' || !strcmp(fqan + 1, ac->vo) || !plain(fqan + 1, "/=.-_"))
			fqan[0] = '\0';
	}
	size_t o = strlen(buf);
	snprintf(buf + o, len - o, " --voms %s%s%s", ac->vo, fqan[0] ? ":" : "", fqan);
}

/* The proxy init that makes c again: its lifetime, and a --voms for each VO
 * whose attributes c carries (the user needs them again), each VO once. */
static char *init_fix(const struct gg_cred *c, const char *valid, const char *why)
{
	struct gg_ac *acs = NULL;
	size_t n = 0;
	struct gg_err err = {0};
	char voms[512] = "";
	if (gg_cred_acs(c, 0, &acs, &n, &err) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		int seen = !plain(acs[i].vo, ".-_");
		for (size_t j = 0; j < i && !seen; j++)
			seen = acs[j].vo && !strcmp(acs[j].vo, acs[i].vo);
		if (!seen)
			add_voms(voms, sizeof voms, &acs[i]);
	}
	gg_ac_list_free(acs, n);
	return S("gridgpu proxy init --valid %s%s%s", valid, voms, why ? why : "");
}

/* The proxy's time left against what the doctor asks for; 1 when it has
 * expired (its chain is then not worth verifying). */
static int check_proxy_time(struct gg_doctor *d, const struct gg_cred *c, const char *path,
			    enum gg_doctor_status bad, const char *init)
{
	struct gg_err err = {0};
	struct gg_proxy_info pi;
	char dur[32], have[32], when[64];
	gg_duration_format(d->valid, dur, sizeof dur);
	if (gg_proxy_info_get(c, 0, &pi, &err) < 0) {
		gg_doctor_add(d, "proxy", "proxy", bad, S("%s: %s", path, err.msg),
			      init_fix(c, init, NULL));
		return 0;
	}
	int expired = pi.time_left <= 0;
	fmt_time(pi.end, when, sizeof when);
	gg_duration_format(pi.time_left, have, sizeof have);
	if (expired)
		gg_doctor_add(d, "proxy", "proxy", bad, S("%s expired on %s", path, when),
			      init_fix(c, init, " (the proxy has expired: make a new one)"));
	else if (pi.time_left < d->valid)
		gg_doctor_add(d, "proxy", "proxy", bad,
			      S("%s has %s left (until %s), less than %s", path, have, when, dur),
			      init_fix(c, init, " (a session must end before its proxy does)"));
	else
		gg_doctor_add(
			d, "proxy", "proxy", GG_DOCTOR_OK,
			S("%s: %s left, %s", path, have, pi.identity ? pi.identity : pi.subject),
			NULL);
	gg_proxy_info_clear(&pi);
	return expired;
}

/* The proxy's chain against the CA directory (not an expired proxy's: that it
 * does not verify says nothing about the CAs). */
static void check_proxy_chain(struct gg_doctor *d, const struct gg_cred *c, int expired,
			      enum gg_doctor_status bad)
{
	struct gg_err err = {0};
	struct stat sb;
	if (expired) {
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP,
			      S("not checked: the proxy has expired"), NULL);
	} else if (!d->ca_dir || stat(d->ca_dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP,
			      S("no CA directory to verify against"), NULL);
	} else if (gg_cred_verify(c, d->ca_dir, 0, &err) < 0) {
		gg_doctor_add(
			d, "proxy-chain", "proxy chain", bad, S("%s", err.msg),
			S("the CA that issued your certificate is not in %s: point X509_CERT_DIR (or "
			  "the site's ca_dir) at the grid CA directory, e.g. the IGTF bundle of "
			  "ca-policy-egi-core or osg-ca-certs",
			  d->ca_dir));
	} else {
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_OK,
			      S("verifies against %s", d->ca_dir), NULL);
	}
}

void gg_doctor_check_proxy(struct gg_doctor *d)
{
	struct gg_err err = {0};
	char *path = NULL;
	int token_site = !strcmp(d->auth_kind, "token");
	char dur[32];
	if (!strcmp(d->auth_kind, "ssh")) { /* slurm+ssh: the user's ssh key */
		gg_doctor_add(d, "proxy", "proxy", GG_DOCTOR_SKIP,
			      S("not needed: site %s is reached with your ssh key", d->site->name),
			      NULL);
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP, S("no proxy"), NULL);
		return;
	}
	gg_duration_format(d->valid, dur, sizeof dur);
	const char *init = d->valid <= 12 * 3600 ? "12h" : dur;
	/* A site that uses tokens does not need the proxy: its faults are notes. */
	enum gg_doctor_status bad = token_site ? GG_DOCTOR_SKIP : GG_DOCTOR_FAIL;
	if (gg_proxy_path(NULL, &path, &err) < 0) {
		gg_doctor_add(d, "proxy", "proxy", bad, S("%s", err.msg), NULL);
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP, S("no proxy"), NULL);
		return;
	}
	if (access(path, F_OK) < 0) {
		if (token_site)
			gg_doctor_add(d, "proxy", "proxy", GG_DOCTOR_SKIP,
				      S("no proxy at %s (not needed: site %s uses a bearer token)",
					path, d->site->name),
				      NULL);
		else
			gg_doctor_add(d, "proxy", "proxy", bad, S("no proxy at %s", path),
				      S("gridgpu proxy init --valid %s", init));
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP, S("no proxy"), NULL);
		free(path);
		return;
	}
	struct gg_cred *c = NULL;
	if (gg_proxy_load(path, &c, &err) < 0) {
		gg_doctor_add(d, "proxy", "proxy", bad, S("%s", err.msg),
			      S("make a new one: gridgpu proxy init --valid %s", init));
		gg_doctor_add(d, "proxy-chain", "proxy chain", GG_DOCTOR_SKIP,
			      S("the proxy cannot be read"), NULL);
		free(path);
		return;
	}
	check_proxy_chain(d, c, check_proxy_time(d, c, path, bad, init), bad);
	gg_cred_free(c);
	free(path);
}

void gg_doctor_check_token(struct gg_doctor *d)
{
	struct gg_err err = {0};
	struct gg_token *t = NULL;
	int need = !strcmp(d->auth_kind, "token");
	const char *how = "get one from your token issuer (oidc-token, htgettoken) into "
			  "$BEARER_TOKEN_FILE or $XDG_RUNTIME_DIR/bt_u<uid>";
	int rc = gg_token_find(&t, &err);
	if (rc == GG_ENOTFOUND) {
		if (need)
			gg_doctor_add(
				d, "token", "bearer token", GG_DOCTOR_FAIL,
				S("none found (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>, "
				  "/tmp/bt_u<uid>)"),
				S("%s", how));
		else
			gg_doctor_add(
				d, "token", "bearer token", GG_DOCTOR_SKIP,
				d->site ? S("none found (not needed: site %s uses %s)",
					    d->site->name,
					    strcmp(d->auth_kind, "ssh") ? "a proxy"
									: "your ssh key")
					: S("none found (not needed without a site that asks for one)"),
				NULL);
		return;
	}
	if (rc < 0) {
		gg_doctor_add(d, "token", "bearer token", need ? GG_DOCTOR_FAIL : GG_DOCTOR_SKIP,
			      S("%s", err.msg), need ? S("%s", how) : NULL);
		return;
	}
	char left[32];
	int64_t l = t->exp ? t->exp - (int64_t)time(NULL) : 0;
	if (t->exp && l <= 0)
		gg_doctor_add(d, "token", "bearer token", need ? GG_DOCTOR_FAIL : GG_DOCTOR_SKIP,
			      S("the token from %s has expired", t->source),
			      need ? S("%s", how) : NULL);
	else if (t->exp)
		gg_doctor_add(d, "token", "bearer token", GG_DOCTOR_OK,
			      S("from %s, expires in %s%s%s", t->source,
				gg_duration_format(l, left, sizeof left), t->iss ? ", issuer " : "",
				t->iss ? t->iss : ""),
			      NULL);
	else
		gg_doctor_add(d, "token", "bearer token", GG_DOCTOR_OK,
			      S("from %s (no expiry readable)", t->source), NULL);
	gg_token_free(t);
}

void gg_doctor_check_ca_dir(struct gg_doctor *d)
{
	const char *fix_bundle = "install or update the grid CA bundle (IGTF: ca-policy-egi-core, "
				 "osg-ca-certs) or point X509_CERT_DIR at it";
	if (!d->ca_dir) {
		gg_doctor_add(d, "ca-dir", "CA directory", GG_DOCTOR_FAIL, S("cannot tell which"),
			      S("%s", fix_bundle));
		return;
	}
	time_t now = time(NULL);
	struct gg_ca_dir_status s;
	struct gg_err err = {0};
	if (gg_ca_dir_check(d->ca_dir, now, now + GG_DOCTOR_CA_SOON, &s, &err) < 0) {
		gg_doctor_add(d, "ca-dir", "CA directory", GG_DOCTOR_FAIL, S("%s", err.msg),
			      S("%s", fix_bundle));
		return;
	}
	char when[64];
	if (s.certs == 0) {
		gg_doctor_add(d, "ca-dir", "CA directory", GG_DOCTOR_FAIL,
			      S("%s has no hashed CA certificates (<hash>.0)", d->ca_dir),
			      S("%s; a directory of PEM files needs 'openssl rehash %s'",
				fix_bundle, d->ca_dir));
	} else if (s.expired || s.expiring) {
		fmt_time(s.bad_end, when, sizeof when);
		gg_doctor_add(
			d, "ca-dir", "CA directory", GG_DOCTOR_FAIL,
			S("%s: %zu of %zu CA certificates expired or expire within 30 days (%s %s %s)",
			  d->ca_dir, s.expired + s.expiring, s.certs, s.bad_name ? s.bad_name : "?",
			  s.bad_end < now ? "expired on" : "expires on", when),
			S("%s", fix_bundle));
	} else if (s.stale) {
		fmt_time(s.stale_next, when, sizeof when);
		gg_doctor_add(d, "ca-dir", "CA directory", GG_DOCTOR_FAIL,
			      S("%s: %zu of %zu CRLs out of date (%s was due for renewal on %s)",
				d->ca_dir, s.stale, s.crls, s.stale_name ? s.stale_name : "?",
				when),
			      S("run fetch-crl (and enable its cron job or timer)"));
	} else {
		gg_doctor_add(d, "ca-dir", "CA directory", GG_DOCTOR_OK,
			      S("%s: %zu CA certificate%s, %zu CRL%s, all current", d->ca_dir,
				s.certs, s.certs == 1 ? "" : "s", s.crls, s.crls == 1 ? "" : "s"),
			      NULL);
	}
	gg_ca_dir_status_clear(&s);
}
