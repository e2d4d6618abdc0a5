/* The doctor's checks of the site: its CE, the OpenSSH tools, each jump host
 * (an ssh login through the ones before it, as connect's config has them). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/par.h"
#include "ce/ce.h"
#include "core/run.h"
#include "cred/cred.h"
#include "doctor/doctor.h"
#include "engine/engine.h"
#include "ssh/ssh.h"

#define S(...) gg_strdup_printf(__VA_ARGS__)

void gg_doctor_check_ce(struct gg_doctor *d)
{
	if (!d->site) {
		gg_doctor_add(d, "ce", "CE", GG_DOCTOR_SKIP, S("no site"), NULL);
		return;
	}
	if (!d->site->ce) {
		gg_doctor_add(
			d, "ce", "CE", GG_DOCTOR_FAIL, S("site %s has no CE URL", d->site->name),
			S("gridgpu site add %s --ce https://HOST:443/arex ...", d->site->name));
		return;
	}
	struct gg_err err = {0};
	struct gg_auth a;
	if (gg_auth_find(d->site, NULL, 0, &a, &err) < 0) {
		gg_doctor_add(
			d, "ce", "CE", GG_DOCTOR_SKIP,
			S("%s: not asked, no usable %s (see above)", d->site->ce, d->auth_kind),
			NULL);
		gg_auth_clear(&a);
		return;
	}
	struct gg_ce *ce = NULL;
	const char *version = NULL;
	struct gg_ce_result *res = NULL;
	size_t nres = 0;
	double t0 = gg_mono_msf();
	struct gg_engine *plain = NULL;
	int rc = d->engine ? 0 : gg_engine_new(NULL, NULL, &plain, &err);
	if (rc == 0)
		rc = gg_engine_open_site_ce(d->engine ? d->engine : plain, d->site, &a, &ce, &err);
	if (rc == 0 && (rc = gg_ce_version(ce, &version, &err)) == GG_EUSAGE) {
		rc = 0; /* a CE without an interface version (slurm+ssh) */
		memset(&err, 0, sizeof err);
	}
	if (rc == 0)
		rc = gg_ce_list(ce, &res, &nres, &err);
	double ms = gg_mono_msf() - t0;
	if (rc == 0 && !version) {
		gg_doctor_add(d, "ce", "CE", GG_DOCTOR_OK,
			      S("%s: %s, reached with your %s key (%zu job%s), %.0f ms",
				d->site->ce, gg_ce_backend(ce), a.kind, nres, nres == 1 ? "" : "s",
				ms),
			      NULL);
	} else if (rc == 0) {
		gg_doctor_add(d, "ce", "CE", GG_DOCTOR_OK,
			      S("%s: REST %s, accepts your %s (%zu job%s), %.0f ms", d->site->ce,
				version, a.kind, nres, nres == 1 ? "" : "s", ms),
			      NULL);
	} else {
		char *fix;
		if (rc == GG_ECRED)
			fix = S("the CE refuses your credential: ask the site whether your identity "
				"(or VO) is authorised, and check 'gridgpu proxy info'");
		else if (strstr(err.msg, "TLS") || strstr(err.msg, "certificate"))
			fix = S("the CE's certificate does not verify against %s: point X509_CERT_DIR "
				"(or the site's ca_dir) at the grid CA directory (IGTF bundle)",
				a.ca_dir ? a.ca_dir : "the CA directory");
		else
			fix = S("check the CE URL ('gridgpu site show %s'), that the CE is up, and "
				"that this network may reach it (firewall, VPN)",
				d->site->name);
		gg_doctor_add(d, "ce", "CE", GG_DOCTOR_FAIL, S("%s", err.msg), fix);
	}
	gg_ce_results_free(res, nres);
	gg_ce_free(ce);
	gg_engine_free(plain); /* after the CE, which logs through it */
	gg_auth_clear(&a);
}

/* "user@host:port" → host and port for the generated config. */
/* A throwaway ssh config with the site's hops, named as in the generated
 * config (gridgpu-hop.SITE.N, each through the one before). */
static char *hop_config(const struct gg_site *s, char *dir, size_t dlen)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, dlen, "%s/gridgpu-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return NULL;
	char *path = S("%s/config", dir);
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f) {
		free(path);
		rmdir(dir);
		return NULL;
	}
	/* Without the site's known_hosts the user's own decides, strictly; the
	 * hops wait as long as connect's would, so doctor agrees with connect. */
	char extra[160];
	snprintf(extra, sizeof extra,
		 "  StrictHostKeyChecking yes\n  ConnectTimeout %d\n"
		 "  ControlMaster no\n  ControlPath none\n",
		 GG_SSH_CONNECT_TIMEOUT);
	int rc = gg_ssh_format_hops(f, s, extra, NULL);
	if (fclose(f) != 0 || rc < 0) {
		unlink(path);
		free(path);
		rmdir(dir);
		return NULL;
	}
	return path;
}

/* The fix for a jump host ssh could not log in to, from ssh's last line. */
static char *jump_fix(const struct gg_site *s, const char *line)
{
	if (strstr(line, "Permission denied"))
		return S("the jump host refuses your key: register the public key of %s with "
			 "the site, or set it with 'gridgpu site add %s --identity KEY ...'",
			 s->identity ? s->identity : "~/.ssh/id_*", s->name);
	if (strstr(line, "Host key verification failed") || strstr(line, "No ED25519 host key") ||
	    strstr(line, "host key"))
		return S("the jump host's key is not in %s: add it after comparing its "
			 "fingerprint with the one the site publishes",
			 s->known_hosts ? s->known_hosts : "~/.ssh/known_hosts");
	return S("check the address in the site profile ('gridgpu site show %s') and that "
		 "this network may reach it (firewall, VPN)",
		 s->name);
}

void gg_doctor_check_jumps(struct gg_doctor *d)
{
	if (!d->site)
		return;
	const struct gg_site *s = d->site;
	if (s->njumps == 0) {
		gg_doctor_add(d, "jump", "jump hosts", GG_DOCTOR_SKIP,
			      S("site %s has none (the workers are reached directly)", s->name),
			      NULL);
		return;
	}
	char dir[PATH_MAX];
	char *cfg = d->ssh_path ? hop_config(s, dir, sizeof dir) : NULL;
	int prev_failed = 0;
	for (int k = 0; k < s->njumps; k++) {
		char id[32], title[32], alias[160];
		snprintf(id, sizeof id, "jump-%d", k + 1);
		snprintf(title, sizeof title, "jump host %d", k + 1);
		snprintf(alias, sizeof alias, "gridgpu-hop.%s.%d", s->name, k + 1);
		if (!d->ssh_path) {
			gg_doctor_add(d, id, title, GG_DOCTOR_SKIP,
				      S("%s: not tried, no ssh", s->jumps[k]), NULL);
			continue;
		}
		if (!cfg) {
			gg_doctor_add(d, id, title, GG_DOCTOR_FAIL,
				      S("%s: cannot write a temporary ssh config", s->jumps[k]),
				      S("check TMPDIR"));
			continue;
		}
		if (prev_failed) {
			gg_doctor_add(d, id, title, GG_DOCTOR_SKIP,
				      S("%s: not tried, it is reached through jump host %d",
					s->jumps[k], k),
				      NULL);
			continue;
		}
		char *argv[] = {d->ssh_path, "-F", cfg, "-T", alias, "true", NULL};
		char line[512];
		double t0 = gg_mono_msf();
		/* ssh gives up by itself first: the hops' waits, then the login */
		int st = gg_doctor_exec(argv, (GG_SSH_CONNECT_TIMEOUT * (k + 1) + 15) * 1000, line,
					sizeof line);
		double ms = gg_mono_msf() - t0;
		if (st == 0) {
			gg_doctor_add(d, id, title, GG_DOCTOR_OK,
				      S("%s: ssh login works (%.0f ms)", s->jumps[k], ms), NULL);
		} else if (st > 0 && st < 255) {
			/* connected and authenticated; the host just runs no commands */
			gg_doctor_add(
				d, id, title, GG_DOCTOR_OK,
				S("%s: ssh login works, no shell (exit %d: fine for ProxyJump)",
				  s->jumps[k], st),
				NULL);
		} else {
			gg_doctor_add(d, id, title, GG_DOCTOR_FAIL,
				      S("%s: %s", s->jumps[k],
					st < 0      ? "ssh could not be run"
					: st >= 256 ? "ssh timed out"
					: line[0]   ? line
						    : "ssh failed"),
				      jump_fix(s, line));
			prev_failed = 1;
		}
	}
	if (cfg) {
		unlink(cfg);
		rmdir(dir);
		free(cfg);
	}
}

void gg_doctor_check_tool(struct gg_doctor *d, const char *name)
{
	char *p = gg_which(name);
	if (!p) {
		gg_doctor_add(
			d, name, name, GG_DOCTOR_FAIL, S("not found on PATH"),
			S("install the OpenSSH client (apt install openssh-client, dnf install "
			  "openssh-clients)"));
		return;
	}
	char ver[256] = "";
	if (!strcmp(name, "ssh")) {
		char *argv[] = {p, "-V", NULL}, line[256];
		if (gg_doctor_exec(argv, d->version_ms, line, sizeof line) == 0)
			snprintf(ver, sizeof ver, "%s", line);
		d->ssh_path = strdup(p);
	}
	gg_doctor_add(d, name, name, GG_DOCTOR_OK,
		      S("%s%s%s%s", p, ver[0] ? " (" : "", ver, ver[0] ? ")" : ""), NULL);
	free(p);
}

/* "NVIDIA H100 80GB HBM3 x2, NVIDIA A100-SXM4-40GB MIG 3g.20gb" */
