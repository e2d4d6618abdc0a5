/* gridgpu doctor: is everything a session needs in place? Each check says ok,
 * failed (with what to do) or skipped (and why): the credentials, the CA
 * directory, the site's CE and jump hosts, the OpenSSH tools, and inside a
 * session (or wherever NVML answers) the GPU itself, the driver against the
 * CUDA runtime, the container runtime and a tiny allocation on the GPU.
 * Exit 0 when nothing failed, 1 otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ssh/ssh.h"
#include "commands.h"
#include "ctx.h"
#include "gpu/gpu.h"

enum { O_VALID = 256 };

const struct gg_opt cmd_doctor_opts[] = {
	{"valid", 0, OPT_ARG, "DUR", "the proxy must last at least DUR (default 2h)", O_VALID},
	OPT_END,
};

#define DEFAULT_VALID (2 * 3600)
#define CA_SOON       (30 * 86400) /* a CA that ends within 30 days is not current */

enum status { ST_OK, ST_FAIL, ST_SKIP };
static const char *const status_name[] = {"ok", "fail", "skip"};

struct check {
	char *id, *title;
	enum status st;
	char *detail, *fix;
};

struct doctor {
	struct check *c;
	size_t n, cap;
	int oom;
};

/* Add a check; detail and fix are taken (malloc'd, may be NULL). */
static struct check *add(struct doctor *d, const char *id, const char *title, enum status st,
			 char *detail, char *fix)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct check *nc = realloc(d->c, cap * sizeof *nc);
		if (!nc) {
			d->oom = 1;
			free(detail);
			free(fix);
			return NULL;
		}
		d->c = nc;
		d->cap = cap;
	}
	struct check *c = &d->c[d->n++];
	c->id = strdup(id);
	c->title = strdup(title);
	c->st = st;
	c->detail = detail;
	c->fix = fix;
	if (!c->id || !c->title)
		d->oom = 1;
	return c;
}

#define S(...) gg_strdup_printf(__VA_ARGS__)

static void doctor_free(struct doctor *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->c[i].id);
		free(d->c[i].title);
		free(d->c[i].detail);
		free(d->c[i].fix);
	}
	free(d->c);
}

/* ---- helpers ---------------------------------------------------------------- */

/* The file name on $PATH (malloc'd) or NULL. */
static char *which(const char *name)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/bin:/bin";
	char *copy = strdup(path), *save = NULL, *found = NULL;
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *p = S("%s/%s", *dir ? dir : ".", name);
		struct stat sb;
		if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}

/* Run argv (argv[0] a path) with stdin from /dev/null, stdout and stderr
 * captured together (at most 16 KiB), killed with its process group after
 * timeout seconds. Returns the exit status (0-255), 256 + signal, or -1 when
 * it could not be run. */
static int run(char *const argv[], int timeout, char **out)
{
	*out = NULL;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	close(pfd[1]);
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap + 1);
	time_t end = time(NULL) + timeout;
	int killed = 0;
	for (;;) {
		int left = (int)(end - time(NULL));
		if (left <= 0) {
			kill(-pid, SIGKILL);
			killed = 1;
			break;
		}
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int r = poll(&p, 1, left * 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char tmp[4096];
		ssize_t k = read(pfd[0], tmp, sizeof tmp);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (buf && n < cap) {
			size_t take = (size_t)k < cap - n ? (size_t)k : cap - n;
			memcpy(buf + n, tmp, take);
			n += take;
		}
	}
	close(pfd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!killed)
		kill(-pid, SIGKILL); /* leftovers of the group (ProxyJump's ssh) */
	if (buf)
		buf[n] = '\0';
	*out = buf;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 256 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The last non-empty line of text, trimmed, in buf. */
static const char *last_line(const char *text, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!text)
		return buf;
	const char *p = text;
	while (*p) {
		size_t n = strcspn(p, "\r\n");
		const char *s = p;
		while (n && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		if (n)
			snprintf(buf, len, "%.*s", (int)n, s);
		p = s + n;
		while (*p == '\r' || *p == '\n')
			p++;
	}
	return buf;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void fmt_time(time_t t, char *b, size_t n)
{
	gg_time_local((int64_t)t, b, n);
}

/* ---- the checks --------------------------------------------------------------- */

struct ctx {
	struct gg_cli *cli;
	struct gg_config *cfg;
	const struct gg_site *site;
	const char *auth_kind; /* "proxy" or "token" */
	char *ca_dir;
	int64_t valid;
	int ssh_ok;
	char *ssh_path;
};

static void check_config(struct doctor *d, struct ctx *x)
{
	struct gg_err err = {0};
	char *path = NULL;
	const char *p = x->cli->config_path ? x->cli->config_path : getenv("GRIDGPU_CONFIG");
	if (!p) {
		if (gg_config_default_path(&path, &err) < 0) {
			add(d, "config", "configuration", ST_FAIL, S("%s", err.msg),
			    S("set XDG_CONFIG_HOME or HOME"));
			return;
		}
		p = path;
	}
	if (gg_config_load(p, &x->cfg, &err) < 0) {
		add(d, "config", "configuration", ST_FAIL, S("%s", err.msg),
		    S("correct the line named in %s, or remove it and add the site again with "
		      "'gridgpu site add'",
		      p));
		free(path);
		return;
	}
	const char *want = x->cli->site ? x->cli->site : x->cfg->default_site;
	x->site = want ? gg_config_site(x->cfg, want) : NULL;
	if (want && !x->site)
		add(d, "config", "configuration", ST_FAIL,
		    S("%s: no site '%s' (%zu site%s)", p, want, x->cfg->nsites,
		      x->cfg->nsites == 1 ? "" : "s"),
		    S("see 'gridgpu site list', or add it: gridgpu site add %s --ce URL", want));
	else if (!x->site)
		add(d, "config", "configuration", ST_SKIP,
		    S("%s: no site given and no default site, so no CE or jump host to check", p),
		    S("gridgpu site add NAME --ce URL [--jump USER@HOST]..."));
	else
		add(d, "config", "configuration", ST_OK,
		    S("%s: site %s%s", p, x->site->name,
		      x->cfg->default_site && !strcmp(x->cfg->default_site, x->site->name)
			      ? " (the default)"
			      : ""),
		    NULL);
	free(path);
}

static void check_proxy(struct doctor *d, struct ctx *x)
{
	struct gg_err err = {0};
	char *path = NULL;
	int token_site = !strcmp(x->auth_kind, "token");
	char dur[32], have[32];
	gg_duration_format(x->valid, dur, sizeof dur);
	const char *init = x->valid <= 12 * 3600 ? "12h" : dur;
	/* A site that uses tokens does not need the proxy: its faults are notes. */
	enum status bad = token_site ? ST_SKIP : ST_FAIL;
	if (gg_proxy_path(NULL, &path, &err) < 0) {
		add(d, "proxy", "proxy", bad, S("%s", err.msg), NULL);
		add(d, "proxy-chain", "proxy chain", ST_SKIP, S("no proxy"), NULL);
		return;
	}
	if (access(path, F_OK) < 0) {
		if (token_site)
			add(d, "proxy", "proxy", ST_SKIP,
			    S("no proxy at %s (not needed: site %s uses a bearer token)", path,
			      x->site->name),
			    NULL);
		else
			add(d, "proxy", "proxy", bad, S("no proxy at %s", path),
			    S("gridgpu proxy init --valid %s", init));
		add(d, "proxy-chain", "proxy chain", ST_SKIP, S("no proxy"), NULL);
		free(path);
		return;
	}
	struct gg_cred *c = NULL;
	if (gg_proxy_load(path, &c, &err) < 0) {
		add(d, "proxy", "proxy", bad, S("%s", err.msg),
		    S("make a new one: gridgpu proxy init --valid %s", init));
		add(d, "proxy-chain", "proxy chain", ST_SKIP, S("the proxy cannot be read"), NULL);
		free(path);
		return;
	}
	struct gg_proxy_info pi;
	if (gg_proxy_info_get(c, 0, &pi, &err) < 0) {
		add(d, "proxy", "proxy", bad, S("%s: %s", path, err.msg),
		    S("gridgpu proxy init --valid %s", init));
	} else {
		char when[64];
		fmt_time(pi.end, when, sizeof when);
		gg_duration_format(pi.time_left, have, sizeof have);
		if (pi.time_left <= 0)
			add(d, "proxy", "proxy", bad, S("%s expired on %s", path, when),
			    S("gridgpu proxy init --valid %s", init));
		else if (pi.time_left < x->valid)
			add(d, "proxy", "proxy", bad,
			    S("%s has %s left (until %s), less than %s", path, have, when, dur),
			    S("gridgpu proxy init --valid %s (a session must end before its proxy "
			      "does)",
			      init));
		else
			add(d, "proxy", "proxy", ST_OK,
			    S("%s: %s left, %s", path, have,
			      pi.identity ? pi.identity : pi.subject),
			    NULL);
		gg_proxy_info_clear(&pi);
	}
	struct stat sb;
	if (!x->ca_dir || stat(x->ca_dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		add(d, "proxy-chain", "proxy chain", ST_SKIP,
		    S("no CA directory to verify against"), NULL);
	} else if (gg_cred_verify(c, x->ca_dir, 0, &err) < 0) {
		add(d, "proxy-chain", "proxy chain", bad, S("%s", err.msg),
		    S("the CA that issued your certificate is not in %s: point X509_CERT_DIR (or "
		      "the site's ca_dir) at the grid CA directory, e.g. the IGTF bundle of "
		      "ca-policy-egi-core or osg-ca-certs",
		      x->ca_dir));
	} else {
		add(d, "proxy-chain", "proxy chain", ST_OK, S("verifies against %s", x->ca_dir),
		    NULL);
	}
	gg_cred_free(c);
	free(path);
}

static void check_token(struct doctor *d, struct ctx *x)
{
	struct gg_err err = {0};
	struct gg_token *t = NULL;
	int need = !strcmp(x->auth_kind, "token");
	const char *how = "get one from your token issuer (oidc-token, htgettoken) into "
			  "$BEARER_TOKEN_FILE or $XDG_RUNTIME_DIR/bt_u<uid>";
	int rc = gg_token_find(&t, &err);
	if (rc == GG_ENOTFOUND) {
		if (need)
			add(d, "token", "bearer token", ST_FAIL,
			    S("none found (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>, "
			      "/tmp/bt_u<uid>)"),
			    S("%s", how));
		else
			add(d, "token", "bearer token", ST_SKIP,
			    x->site ? S("none found (not needed: site %s uses a proxy)",
					x->site->name)
				    : S("none found (not needed without a site that asks for one)"),
			    NULL);
		return;
	}
	if (rc < 0) {
		add(d, "token", "bearer token", need ? ST_FAIL : ST_SKIP, S("%s", err.msg),
		    need ? S("%s", how) : NULL);
		return;
	}
	char left[32];
	int64_t l = t->exp ? t->exp - (int64_t)time(NULL) : 0;
	if (t->exp && l <= 0)
		add(d, "token", "bearer token", need ? ST_FAIL : ST_SKIP,
		    S("the token from %s has expired", t->source), need ? S("%s", how) : NULL);
	else if (t->exp)
		add(d, "token", "bearer token", ST_OK,
		    S("from %s, expires in %s%s%s", t->source,
		      gg_duration_format(l, left, sizeof left), t->iss ? ", issuer " : "",
		      t->iss ? t->iss : ""),
		    NULL);
	else
		add(d, "token", "bearer token", ST_OK, S("from %s (no expiry readable)", t->source),
		    NULL);
	gg_token_free(t);
}

static void check_ca_dir(struct doctor *d, struct ctx *x)
{
	const char *fix_bundle = "install or update the grid CA bundle (IGTF: ca-policy-egi-core, "
				 "osg-ca-certs) or point X509_CERT_DIR at it";
	if (!x->ca_dir) {
		add(d, "ca-dir", "CA directory", ST_FAIL, S("cannot tell which"),
		    S("%s", fix_bundle));
		return;
	}
	time_t now = time(NULL);
	struct gg_ca_dir_status s;
	struct gg_err err = {0};
	if (gg_ca_dir_check(x->ca_dir, now, now + CA_SOON, &s, &err) < 0) {
		add(d, "ca-dir", "CA directory", ST_FAIL, S("%s", err.msg), S("%s", fix_bundle));
		return;
	}
	char when[64];
	if (s.certs == 0) {
		add(d, "ca-dir", "CA directory", ST_FAIL,
		    S("%s has no hashed CA certificates (<hash>.0)", x->ca_dir),
		    S("%s; a directory of PEM files needs 'openssl rehash %s'", fix_bundle,
		      x->ca_dir));
	} else if (s.expired || s.expiring) {
		fmt_time(s.bad_end, when, sizeof when);
		add(d, "ca-dir", "CA directory", ST_FAIL,
		    S("%s: %zu of %zu CA certificates expired or expire within 30 days (%s %s %s)",
		      x->ca_dir, s.expired + s.expiring, s.certs, s.bad_name ? s.bad_name : "?",
		      s.bad_end < now ? "expired on" : "expires on", when),
		    S("%s", fix_bundle));
	} else if (s.stale) {
		fmt_time(s.stale_next, when, sizeof when);
		add(d, "ca-dir", "CA directory", ST_FAIL,
		    S("%s: %zu of %zu CRLs out of date (%s was due for renewal on %s)", x->ca_dir,
		      s.stale, s.crls, s.stale_name ? s.stale_name : "?", when),
		    S("run fetch-crl (and enable its cron job or timer)"));
	} else {
		add(d, "ca-dir", "CA directory", ST_OK,
		    S("%s: %zu CA certificate%s, %zu CRL%s, all current", x->ca_dir, s.certs,
		      s.certs == 1 ? "" : "s", s.crls, s.crls == 1 ? "" : "s"),
		    NULL);
	}
	gg_ca_dir_status_clear(&s);
}

static void check_ce(struct doctor *d, struct ctx *x)
{
	if (!x->site) {
		add(d, "ce", "CE", ST_SKIP, S("no site"), NULL);
		return;
	}
	if (!x->site->ce) {
		add(d, "ce", "CE", ST_FAIL, S("site %s has no CE URL", x->site->name),
		    S("gridgpu site add %s --ce https://HOST:443/arex ...", x->site->name));
		return;
	}
	struct gg_err err = {0};
	struct gg_auth a;
	if (gg_auth_find(x->site, NULL, 0, &a, &err) < 0) {
		add(d, "ce", "CE", ST_SKIP,
		    S("%s: not asked, no usable %s (see above)", x->site->ce, x->auth_kind), NULL);
		gg_auth_clear(&a);
		return;
	}
	struct gg_ce *ce = NULL;
	const char *version = NULL;
	struct gg_ce_result *res = NULL;
	size_t nres = 0;
	double t0 = now_ms();
	int rc = cli_open_ce(x->cli, x->site->ce, &a, &ce, &err);
	if (rc == 0)
		rc = gg_ce_version(ce, &version, &err);
	if (rc == 0)
		rc = gg_ce_list(ce, &res, &nres, &err);
	double ms = now_ms() - t0;
	if (rc == 0) {
		add(d, "ce", "CE", ST_OK,
		    S("%s: REST %s, accepts your %s (%zu job%s), %.0f ms", x->site->ce, version,
		      a.kind, nres, nres == 1 ? "" : "s", ms),
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
				x->site->name);
		add(d, "ce", "CE", ST_FAIL, S("%s", err.msg), fix);
	}
	gg_ce_results_free(res, nres);
	gg_ce_free(ce);
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

static void check_jumps(struct doctor *d, struct ctx *x)
{
	if (!x->site)
		return;
	const struct gg_site *s = x->site;
	if (s->njumps == 0) {
		add(d, "jump", "jump hosts", ST_SKIP,
		    S("site %s has none (the workers are reached directly)", s->name), NULL);
		return;
	}
	char dir[PATH_MAX];
	char *cfg = x->ssh_path ? hop_config(s, dir, sizeof dir) : NULL;
	int prev_failed = 0;
	for (int k = 0; k < s->njumps; k++) {
		char id[32], title[32], alias[160];
		snprintf(id, sizeof id, "jump-%d", k + 1);
		snprintf(title, sizeof title, "jump host %d", k + 1);
		snprintf(alias, sizeof alias, "gridgpu-hop.%s.%d", s->name, k + 1);
		if (!x->ssh_path) {
			add(d, id, title, ST_SKIP, S("%s: not tried, no ssh", s->jumps[k]), NULL);
			continue;
		}
		if (!cfg) {
			add(d, id, title, ST_FAIL,
			    S("%s: cannot write a temporary ssh config", s->jumps[k]),
			    S("check TMPDIR"));
			continue;
		}
		if (prev_failed) {
			add(d, id, title, ST_SKIP,
			    S("%s: not tried, it is reached through jump host %d", s->jumps[k], k),
			    NULL);
			continue;
		}
		char *argv[] = {x->ssh_path, "-F", cfg, "-T", alias, "true", NULL};
		char *out = NULL, line[512];
		double t0 = now_ms();
		/* ssh gives up by itself first: the hops' waits, then the login */
		int st = run(argv, GG_SSH_CONNECT_TIMEOUT * (k + 1) + 15, &out);
		double ms = now_ms() - t0;
		last_line(out, line, sizeof line);
		if (st == 0) {
			add(d, id, title, ST_OK,
			    S("%s: ssh login works (%.0f ms)", s->jumps[k], ms), NULL);
		} else if (st > 0 && st < 255) {
			/* connected and authenticated; the host just runs no commands */
			add(d, id, title, ST_OK,
			    S("%s: ssh login works, no shell (exit %d: fine for ProxyJump)",
			      s->jumps[k], st),
			    NULL);
		} else {
			add(d, id, title, ST_FAIL,
			    S("%s: %s", s->jumps[k],
			      st < 0      ? "ssh could not be run"
			      : st >= 256 ? "ssh timed out"
			      : line[0]   ? line
					  : "ssh failed"),
			    jump_fix(s, line));
			prev_failed = 1;
		}
		free(out);
	}
	if (cfg) {
		unlink(cfg);
		rmdir(dir);
		free(cfg);
	}
}

static void check_tool(struct doctor *d, struct ctx *x, const char *name)
{
	char *p = which(name);
	if (!p) {
		add(d, name, name, ST_FAIL, S("not found on PATH"),
		    S("install the OpenSSH client (apt install openssh-client, dnf install "
		      "openssh-clients)"));
		return;
	}
	char ver[256] = "";
	if (!strcmp(name, "ssh")) {
		char *argv[] = {p, "-V", NULL}, *out = NULL;
		if (run(argv, 10, &out) == 0)
			last_line(out, ver, sizeof ver);
		free(out);
		x->ssh_path = strdup(p);
	}
	add(d, name, name, ST_OK, S("%s%s%s%s", p, ver[0] ? " (" : "", ver, ver[0] ? ")" : ""),
	    NULL);
	free(p);
}

/* "NVIDIA H100 80GB HBM3 x2, NVIDIA A100-SXM4-40GB MIG 3g.20gb" */
static char *visible_names(const struct gg_gpu_info *info)
{
	const char *names[64];
	int counts[64];
	size_t n = 0;
	for (size_t i = 0; i < info->ndevs; i++) {
		const struct gg_gpu_dev *dv = &info->devs[i];
		for (size_t k = 0; k <= dv->nmigs; k++) {
			const char *nm = k < dv->nmigs ? dv->migs[k].name : dv->name;
			int vis = k < dv->nmigs ? dv->migs[k].visible : dv->visible;
			if (!vis)
				continue;
			size_t j = 0;
			while (j < n && strcmp(names[j], nm))
				j++;
			if (j == n && n < 64) {
				names[n] = nm;
				counts[n++] = 0;
			}
			if (j < n)
				counts[j]++;
		}
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t j = 0; j < n; j++) {
		fprintf(f, "%s%s", j ? ", " : "", names[j][0] ? names[j] : "?");
		if (counts[j] > 1)
			fprintf(f, " x%d", counts[j]);
	}
	fclose(f);
	return buf;
}

/* The first error NVML reports for a visible GPU or MIG device, or NULL. */
static const char *first_gpu_error(const struct gg_gpu_info *info)
{
	const char *bad = NULL;
	for (size_t i = 0; i < info->ndevs && !bad; i++) {
		const struct gg_gpu_dev *dv = &info->devs[i];
		if (dv->visible && dv->error)
			bad = dv->error;
		for (size_t k = 0; k < dv->nmigs && !bad; k++)
			if (dv->migs[k].visible && dv->migs[k].error)
				bad = dv->migs[k].error;
	}
	return bad;
}

/* GPU visible: 1 when this process has a usable one. */
static int check_gpu_visible(struct doctor *d, int nvml, const struct gg_gpu_info *info,
			     const struct gg_err *err)
{
	char cv[16];
	if (nvml < 0) {
		add(d, "gpu", "GPU visible", ST_FAIL, S("%s", err->msg),
		    nvml == GG_ENOTFOUND
			    ? S("this job runs on a node without the NVIDIA driver, or in a container "
				"started without --nv: request GPUs ('gridgpu request --gpus 1') on "
				"a site whose gpu_queue has them")
			    : S("NVML does not answer: tell the site (nvidia-smi on the node shows "
				"the same)"));
		return 0;
	}
	if (info->nvisible == 0) {
		add(d, "gpu", "GPU visible", ST_FAIL,
		    S("%zu NVIDIA device%s on this node, none usable by this process%s%s%s",
		      info->ndevs, info->ndevs == 1 ? "" : "s",
		      info->cvd ? " (CUDA_VISIBLE_DEVICES=" : "", info->cvd ? info->cvd : "",
		      info->cvd ? ")" : ""),
		    info->ndevs
			    ? S("the batch system sets CUDA_VISIBLE_DEVICES to the GPUs it gave "
				"the job: ask for some with 'gridgpu request --gpus N' (or --mig "
				"PROFILE)%s%s",
				info->cvd_note ? "; " : "", info->cvd_note ? info->cvd_note : "")
			    : S("request GPUs ('gridgpu request --gpus 1') on a GPU queue"));
		return 0;
	}
	const char *bad = first_gpu_error(info);
	char *names = visible_names(info);
	if (bad)
		add(d, "gpu", "GPU visible", ST_FAIL,
		    S("%zu usable (%s), but NVML reports %s", info->nvisible, names ? names : "?",
		      bad),
		    S("the GPU reports errors: tell the site (nvidia-smi -q on the node) and "
		      "try another node"));
	else
		add(d, "gpu", "GPU visible", ST_OK,
		    S("%zu usable: %s (driver %s, CUDA %s)", info->nvisible, names ? names : "?",
		      info->driver[0] ? info->driver : "?",
		      gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv)),
		    NULL);
	free(names);
	return 1;
}

/* Driver vs runtime: does the driver support the CUDA the environment needs? */
static void check_cuda_compat(struct doctor *d, int nvml, const struct gg_gpu_info *info)
{
	char cv[16], rt[64];
	/* the hint below shows it too: made before the arguments are evaluated */
	gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv);
	const char *src = NULL;
	struct gg_err e2 = {0};
	int rrc = gg_gpu_cuda_runtime(rt, sizeof rt, &src, &e2);
	int maj, min;
	if (rrc == GG_ENOTFOUND)
		add(d, "cuda-compat", "driver vs CUDA", ST_SKIP, S("%s", e2.msg), NULL);
	else if (rrc < 0)
		add(d, "cuda-compat", "driver vs CUDA", ST_FAIL, S("%s", e2.msg),
		    S("set CUDA_VERSION to the CUDA version of the image (e.g. 12.4.1)"));
	else if (nvml < 0 || !info->cuda_driver)
		add(d, "cuda-compat", "driver vs CUDA", ST_SKIP,
		    S("the environment needs CUDA %s (%s); no driver version to compare", rt, src),
		    NULL);
	else if (gg_gpu_version_parse(rt, &maj, &min) == 0 &&
		 gg_gpu_driver_supports(info->cuda_driver, maj, min))
		add(d, "cuda-compat", "driver vs CUDA", ST_OK,
		    S("driver %s supports CUDA %s, the environment needs %s (%s)", info->driver,
		      gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv), rt, src),
		    NULL);
	else
		add(d, "cuda-compat", "driver vs CUDA", ST_FAIL,
		    S("driver %s supports CUDA up to %s, the environment needs %s (%s)",
		      info->driver, gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv), rt,
		      src),
		    S("use an image built for CUDA %s or older, or a site or queue with a newer "
		      "driver; within one major version CUDA's minor version compatibility may "
		      "still run code that needs no PTX JIT",
		      cv));
}

static void check_container(struct doctor *d, int in_session, int usable)
{
	const char *inside = getenv("APPTAINER_CONTAINER");
	if (!inside || !*inside)
		inside = getenv("SINGULARITY_CONTAINER");
	if (inside && *inside) {
		add(d, "container", "container runtime", ST_OK,
		    S("inside the container %s%s", inside,
		      usable ? " (the GPU came through --nv)" : ""),
		    NULL);
	} else {
		char *rtp = which("apptainer");
		if (!rtp)
			rtp = which("singularity");
		if (rtp) {
			char *argv[] = {rtp, "--version", NULL}, *out = NULL, ver[128];
			ver[0] = '\0';
			if (run(argv, 10, &out) == 0)
				last_line(out, ver, sizeof ver);
			free(out);
			add(d, "container", "container runtime", ST_OK,
			    S("%s%s%s%s: images run with 'exec --nv'", rtp, ver[0] ? " (" : "", ver,
			      ver[0] ? ")" : ""),
			    NULL);
			free(rtp);
		} else if (in_session) {
			add(d, "container", "container runtime", ST_FAIL,
			    S("no apptainer or singularity on PATH"),
			    S("sessions with --image need apptainer on the worker: run without "
			      "--image, or ask the site to install apptainer"));
		} else {
			add(d, "container", "container runtime", ST_SKIP,
			    S("no apptainer or singularity on PATH (needed on the worker, not here)"),
			    NULL);
		}
	}
}

/* A tiny allocation on the first usable GPU. */
static void check_gpu_alloc(struct doctor *d, int usable)
{
	if (!usable) {
		add(d, "gpu-alloc", "GPU allocation", ST_SKIP, S("no usable GPU"), NULL);
		return;
	}
	struct gg_gpu_cuda_probe p;
	struct gg_err e3 = {0};
	int prc = gg_gpu_cuda_probe(NULL, 0, &p, &e3);
	if (prc == 0) {
		char sz[32];
		add(d, "gpu-alloc", "GPU allocation", ST_OK,
		    S("%s written to and read back from %s (CUDA device 0 of %d) in %.0f ms",
		      gg_size_format(p.bytes, sz, sizeof sz), p.device[0] ? p.device : "?",
		      p.devices, p.ms),
		    NULL);
	} else if (prc == GG_ENOTFOUND) {
		add(d, "gpu-alloc", "GPU allocation", ST_FAIL, S("%s", e3.msg),
		    S("the driver's libcuda.so.1 must be visible: inside a container start "
		      "it with --nv (apptainer exec --nv), or add its directory to "
		      "LD_LIBRARY_PATH"));
	} else {
		add(d, "gpu-alloc", "GPU allocation", ST_FAIL, S("%s", e3.msg),
		    S("the GPU does not work from this process: tell the site (the node's "
		      "driver or GPU is at fault) and try another node"));
	}
}

static void check_session(struct doctor *d, struct ctx *x)
{
	(void)x;
	const char *sess = getenv("GRIDGPU_SESSION");
	int in_session = sess && *sess;
	struct gg_err err = {0};
	struct gg_gpu *g = NULL;
	struct gg_gpu_info info;
	memset(&info, 0, sizeof info);
	int nvml = gg_gpu_open(NULL, &g, &err);
	if (nvml == 0) {
		nvml = gg_gpu_query(g, &info, &err);
		gg_gpu_close(g);
	}
	if (!in_session && nvml == GG_ENOTFOUND) {
		const char *why =
			"not inside a session (GRIDGPU_SESSION unset) and no NVIDIA driver "
			"here";
		add(d, "gpu", "GPU visible", ST_SKIP, S("%s", why), NULL);
		add(d, "cuda-compat", "driver vs CUDA", ST_SKIP, S("%s", why), NULL);
		add(d, "container", "container runtime", ST_SKIP, S("%s", why), NULL);
		add(d, "gpu-alloc", "GPU allocation", ST_SKIP, S("%s", why), NULL);
		return;
	}
	int usable = check_gpu_visible(d, nvml, &info, &err);
	check_cuda_compat(d, nvml, &info);
	check_container(d, in_session, usable);
	check_gpu_alloc(d, usable);
	gg_gpu_info_clear(&info);
}

/* ---- output ------------------------------------------------------------------- */

static void print(struct gg_cli *cli, const struct doctor *d, const struct ctx *x)
{
	int color = ui_color();
	size_t w = 0, nok = 0, nfail = 0, nskip = 0;
	for (size_t i = 0; i < d->n; i++) {
		size_t l = strlen(d->c[i].title);
		w = l > w ? l : w;
	}
	if (!cli->quiet && x->site)
		ui_out("site %s (%s)\n", x->site->name, x->site->ce ? x->site->ce : "no CE");
	for (size_t i = 0; i < d->n; i++) {
		const struct check *c = &d->c[i];
		const char *mark = c->st == ST_OK     ? "\xe2\x9c\x93"
				   : c->st == ST_FAIL ? "\xe2\x9c\x97"
						      : "-";
		const char *col = !color             ? ""
				  : c->st == ST_OK   ? "\033[32m"
				  : c->st == ST_FAIL ? "\033[31m"
						     : "\033[2m";
		nok += c->st == ST_OK;
		nfail += c->st == ST_FAIL;
		nskip += c->st == ST_SKIP;
		if (cli->quiet && c->st != ST_FAIL)
			continue;
		fputs(col, stdout); /* ours */
		ui_out("%s", mark);
		fputs(color ? "\033[0m" : "", stdout);
		ui_out(" %-*s  %s%s\n", (int)w, c->title, c->st == ST_SKIP ? "skipped: " : "",
		       c->detail ? c->detail : "");
		if (c->st != ST_OK && c->fix)
			ui_out("  %-*s  %s: %s\n", (int)w, "", c->st == ST_FAIL ? "fix" : "hint",
			       c->fix);
	}
	if (!cli->quiet)
		ui_out("%zu passed, %zu failed, %zu skipped\n", nok, nfail, nskip);
}

static json_t *to_json(const struct doctor *d, const struct ctx *x)
{
	json_t *a = json_array();
	size_t n[3] = {0};
	for (size_t i = 0; i < d->n; i++) {
		const struct check *c = &d->c[i];
		n[c->st]++;
		gg_json_append(a, gg_json_object("id", gg_json_text(c->id), "name",
						 gg_json_text(c->title), "status",
						 gg_json_text(status_name[c->st]), "detail",
						 gg_json_text(c->detail), "fix",
						 gg_json_text(c->fix), NULL));
	}
	return gg_json_object("site", gg_json_text(x->site ? x->site->name : NULL), "checks", a,
			      "passed", json_integer((json_int_t)n[ST_OK]), "failed",
			      json_integer((json_int_t)n[ST_FAIL]), "skipped",
			      json_integer((json_int_t)n[ST_SKIP]), NULL);
}

int cmd_doctor(struct gg_cli *cli, int argc, char **argv)
{
	int c;
	struct ctx x = {.cli = cli, .valid = DEFAULT_VALID};
	struct gg_err err = {0};
	while ((c = cli_next_opt(cli, argc, argv, cmd_doctor_opts)) > 0) {
		if (c == O_VALID && gg_duration_parse_unit(cli->optarg, &x.valid, &err) < 0)
			return ui_usage(cli, "--valid: %s", err.msg);
	}
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind)
		return ui_usage(cli, "doctor takes no arguments");
	cli_catch_interrupt();
	/* The proxy's key and the bearer token are read below: no core dumps. */
	if (gg_cred_disable_core_dumps(&err) < 0)
		ui_warn(cli, "%s", err.msg);

	struct doctor d = {0};
	check_config(&d, &x);
	x.auth_kind = x.site && x.site->auth ? x.site->auth : "proxy";
	if (gg_cred_ca_dir(x.site ? x.site->ca_dir : NULL, &x.ca_dir, &err) < 0)
		x.ca_dir = NULL;
	check_proxy(&d, &x);
	check_token(&d, &x);
	check_ca_dir(&d, &x);
	check_ce(&d, &x);
	check_tool(&d, &x, "ssh");
	check_tool(&d, &x, "ssh-keygen");
	check_jumps(&d, &x);
	check_session(&d, &x);

	int failed = 0;
	for (size_t i = 0; i < d.n; i++)
		failed += d.c[i].st == ST_FAIL;
	if (d.oom) {
		gg_err_set(&err, GG_ENOMEM, "out of memory");
		doctor_free(&d);
		return ui_fail(cli, &err, "doctor");
	}
	if (cli->json)
		ui_json_doc("doctor", to_json(&d, &x));
	else
		print(cli, &d, &x);
	doctor_free(&d);
	free(x.ca_dir);
	free(x.ssh_path);
	gg_config_free(x.cfg);
	return failed ? EXIT_FAIL : EXIT_OK;
}
