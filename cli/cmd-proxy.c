/* gridgpu proxy: make, inspect and destroy X.509 proxy certificates (and show the
 * bearer token found by the WLCG discovery order). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "cred/cred.h"
#include "voms/voms.h"

enum {
	O_CERT = 256,
	O_KEY,
	O_OUT,
	O_PASS_STDIN,
	O_VALID,
	O_BITS,
	O_LIMITED,
	O_INDEPENDENT,
	O_PATH_LENGTH,
	O_VERIFY,
	O_CA_DIR,
	O_FILE,
	O_EXISTS,
	O_LEFT,
	O_VOMS,
	O_ORDER,
	O_VOMS_LIFETIME,
	O_ACEXISTS,
};

#define MAX_VOMS 16

#define OPT_CA_DIR                                                                                     \
	{                                                                                              \
		"ca-dir", 0, OPT_DIR, "DIR",                                                           \
			"CA directory for --verify ($X509_CERT_DIR, /etc/grid-security/certificates)", \
			O_CA_DIR                                                                       \
	}

const struct gg_opt cmd_proxy_init_opts[] = {
	{"cert", 'C', OPT_FILE, "FILE", "user certificate, PEM or PKCS#12 ($X509_USER_CERT)",
	 O_CERT},
	{"key", 'K', OPT_FILE, "FILE", "user key ($X509_USER_KEY, ~/.globus/userkey.pem)", O_KEY},
	{"out", 'o', OPT_FILE, "FILE", "proxy file ($X509_USER_PROXY, /tmp/x509up_u<uid>)", O_OUT},
	{"pass-stdin", 0, OPT_NONE, NULL, "read the passphrase from standard input", O_PASS_STDIN},
	{"valid", 0, OPT_ARG, "DUR", "lifetime, e.g. 12h, 2d, 1h30m or HH:MM (default 12h)",
	 O_VALID},
	{"bits", 'b', OPT_ARG, "N", "RSA key size of the proxy (default 2048)", O_BITS},
	{"limited", 0, OPT_NONE, NULL, "make a limited proxy", O_LIMITED},
	{"independent", 0, OPT_NONE, NULL, "make an independent proxy", O_INDEPENDENT},
	{"path-length", 0, OPT_ARG, "N", "allow at most N proxies below this one", O_PATH_LENGTH},
	{"verify", 0, OPT_NONE, NULL, "verify the new proxy against the CA directory", O_VERIFY},
	OPT_CA_DIR,
	{"voms", 0, OPT_ARG, "VO[:FQAN]",
	 "add the VO's attribute certificate (VO: its name or vomses alias; repeatable)", O_VOMS},
	{"order", 0, OPT_ARG, "FQAN", "ask the VOMS server to put FQAN first", O_ORDER},
	{"voms-lifetime", 0, OPT_ARG, "DUR",
	 "lifetime of the attribute certificates (default: the proxy's)", O_VOMS_LIFETIME},
	OPT_END,
};

const struct gg_opt cmd_proxy_info_opts[] = {
	{"file", 'f', OPT_FILE, "FILE", "proxy file ($X509_USER_PROXY, /tmp/x509up_u<uid>)",
	 O_FILE},
	{"exists", 'e', OPT_NONE, NULL, "exit 0 if a valid proxy exists, 1 if not; print nothing",
	 O_EXISTS},
	{"valid", 0, OPT_ARG, "DUR", "exit 0 if the proxy is valid for at least DUR, 1 if not",
	 O_VALID},
	{"left", 0, OPT_NONE, NULL, "print the seconds the proxy has left", O_LEFT},
	{"acexists", 0, OPT_ARG, "VO",
	 "exit 0 if the proxy has a valid attribute certificate of VO, 1 if not", O_ACEXISTS},
	{"verify", 0, OPT_NONE, NULL, "verify the proxy's chain against the CA directory",
	 O_VERIFY},
	OPT_CA_DIR,
	OPT_END,
};

const struct gg_opt cmd_proxy_destroy_opts[] = {
	{"file", 'f', OPT_FILE, "FILE", "proxy file ($X509_USER_PROXY, /tmp/x509up_u<uid>)",
	 O_FILE},
	OPT_END,
};

/* ---- helpers ------------------------------------------------------------------ */

#define iso_time(t, b, n)   gg_time_iso((int64_t)(t), b, n)
#define human_time(t, b, n) gg_time_local((int64_t)(t), b, n)

/* voms-proxy-info's form: H:MM:SS */
static char *hms(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	snprintf(buf, len, "%" PRId64 ":%02d:%02d", s / 3600, (int)(s / 60 % 60), (int)(s % 60));
	return buf;
}

/* Parse --valid: an unreadable duration is a credential-request error (exit 3),
 * as documented in gridgpu-proxy(1). */
static int parse_valid(const char *s, int64_t *out, struct gg_err *err)
{
	int rc = gg_duration_parse_unit(s, out, err);
	if (rc < 0) {
		err->code = GG_ECRED;
		return GG_ECRED;
	}
	return 0;
}

static const char *kind_name(enum gg_cert_kind k)
{
	switch (k) {
	case GG_CERT_EEC: return "eec";
	case GG_CERT_CA: return "ca";
	case GG_CERT_PROXY: return "proxy";
	case GG_CERT_PROXY_LIMITED: return "limited";
	case GG_CERT_PROXY_INDEPENDENT: return "independent";
	default: return "restricted";
	}
}

static json_t *token_json(const struct gg_token *t, time_t now)
{
	if (!t)
		return json_null();
	json_t *o = json_object();
	gg_json_set_text(o, "source", t->source);
	gg_json_set(o, "jwt", json_boolean(t->jwt));
	if (t->exp) {
		char b[40];
		gg_json_set_text(o, "exp", iso_time((time_t)t->exp, b, sizeof b));
		gg_json_set(o, "time_left",
			    json_integer(t->exp > now ? (json_int_t)(t->exp - now) : 0));
	}
	if (t->sub)
		gg_json_set_text(o, "sub", t->sub);
	if (t->iss)
		gg_json_set_text(o, "iss", t->iss);
	return o;
}

/* An AC's state: one that starts more than the clock skew VOMS clients allow
 * from now is not valid yet (its server's clock is ahead). */
static const char *ac_state(const struct gg_ac *ac, time_t now)
{
	if (ac->not_before > now + GG_AC_SKEW)
		return "not valid yet";
	return ac->time_left > 0 ? "valid" : "expired";
}

static json_t *acs_json(const struct gg_ac *acs, size_t n, time_t now)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char b1[40], b2[40];
		json_t *o = json_object(), *f = json_array();
		for (size_t j = 0; j < acs[i].n_fqans; j++)
			gg_json_append(f, gg_json_text(acs[i].fqans[j]));
		gg_json_set_text(o, "vo", acs[i].vo);
		gg_json_set(o, "fqans", f);
		gg_json_set_text(o, "issuer", acs[i].issuer);
		gg_json_set_text(o, "uri", acs[i].uri);
		gg_json_set_text(o, "not_before", iso_time(acs[i].not_before, b1, sizeof b1));
		gg_json_set_text(o, "not_after", iso_time(acs[i].not_after, b2, sizeof b2));
		gg_json_set(o, "time_left", json_integer((json_int_t)acs[i].time_left));
		gg_json_set_text(o, "state", ac_state(&acs[i], now));
		gg_json_append(a, o);
	}
	return a;
}

static json_t *info_json(const struct gg_proxy_info *in, int verified, const struct gg_token *t,
			 time_t now, const struct gg_ac *acs, size_t nacs)
{
	char b1[40], b2[40];
	json_t *o = json_object();
	gg_json_set_text(o, "path", in->path);
	gg_json_set_text(o, "subject", in->subject);
	gg_json_set_text(o, "issuer", in->issuer);
	gg_json_set_text(o, "identity", in->identity);
	gg_json_set_text(o, "type", in->type);
	gg_json_set_text(o, "kind", kind_name(in->kind));
	gg_json_set_text(o, "key_type", in->key_type);
	gg_json_set(o, "bits", json_integer(in->bits));
	gg_json_set_text(o, "signature", in->signature);
	gg_json_set_text(o, "serial", in->serial);
	gg_json_set(o, "path_length",
		    in->path_length >= 0 ? json_integer(in->path_length) : json_null());
	gg_json_set(o, "chain_length", json_integer(in->chain_length));
	gg_json_set_text(o, "not_before", iso_time(in->not_before, b1, sizeof b1));
	gg_json_set_text(o, "not_after", iso_time(in->not_after, b2, sizeof b2));
	gg_json_set(o, "time_left", json_integer((json_int_t)in->time_left));
	if (verified >= 0)
		gg_json_set(o, "verified", json_boolean(verified));
	gg_json_set(o, "token", token_json(t, now));
	gg_json_set(o, "acs", acs_json(acs, nacs, now));
	return o;
}

/* voms-proxy-info --all's shape, one block per AC; an AC that ends before the
 * proxy (its server shortened it) says so. */
static void print_acs_text(const struct gg_ac *acs, size_t n, time_t now, time_t proxy_end)
{
	for (size_t i = 0; i < n; i++) {
		char b1[40], b2[40];
		ui_out("=== VO %s extension information ===\n", acs[i].vo);
		ui_out("VO        : %s\n", acs[i].vo);
		for (size_t j = 0; j < acs[i].n_fqans; j++)
			ui_out("attribute : %s\n", acs[i].fqans[j]);
		ui_out("issuer    : %s\n", acs[i].issuer);
		if (acs[i].uri)
			ui_out("uri       : %s\n", acs[i].uri);
		if (acs[i].not_before > now + GG_AC_SKEW)
			ui_out("timeleft  : not valid yet: it starts at %s, in %s (is the VOMS "
			       "server's clock ahead?)\n",
			       human_time(acs[i].not_before, b1, sizeof b1),
			       gg_duration_format((int64_t)(acs[i].not_before - now), b2,
						  sizeof b2));
		else
			ui_out("timeleft  : %s (until %s)%s\n",
			       hms(acs[i].time_left, b1, sizeof b1),
			       human_time(acs[i].not_after, b2, sizeof b2),
			       !acs[i].time_left ? " expired"
			       : acs[i].not_after + GG_AC_SKEW < proxy_end
				       ? ", before the proxy's end"
				       : "");
	}
}

static void print_info_text(const struct gg_proxy_info *in, int verified, const char *ca_dir,
			    const struct gg_token *t, time_t now)
{
	char b1[40], b2[40];
	ui_out("subject   : %s\n", in->subject);
	ui_out("issuer    : %s\n", in->issuer);
	ui_out("identity  : %s\n", in->identity);
	ui_out("type      : %s\n", in->type);
	ui_out("strength  : %d bits (%s)\n", in->bits, in->key_type);
	if (in->path_length >= 0)
		ui_out("pathlen   : %d\n", in->path_length);
	if (in->path)
		ui_out("path      : %s\n", in->path);
	if (in->not_yet_valid)
		ui_out("timeleft  : not valid before %s\n",
		       human_time(in->not_before, b1, sizeof b1));
	else
		ui_out("timeleft  : %s (until %s)%s\n", hms(in->time_left, b1, sizeof b1),
		       human_time(in->end, b2, sizeof b2), in->time_left ? "" : " expired");
	if (verified > 0)
		ui_out("verified  : yes (against %s)\n", ca_dir);
	if (t) {
		ui_out("token     : %s%s\n", t->source, t->jwt ? " (JWT)" : "");
		if (t->sub || t->iss)
			ui_out("token sub : %s%s%s\n", t->sub ? t->sub : "?",
			       t->iss ? " from " : "", t->iss ? t->iss : "");
		if (t->exp)
			ui_out("token exp : %s (%s left)\n",
			       human_time((time_t)t->exp, b1, sizeof b1),
			       hms(t->exp > now ? t->exp - now : 0, b2, sizeof b2));
		else
			ui_out("token exp : unknown\n");
	}
}

/* The bearer token for display: NULL when none; a warning when it is invalid. */
static struct gg_token *find_token(struct gg_cli *cli)
{
	struct gg_token *t = NULL;
	struct gg_err err = {0};
	int rc = gg_token_find(&t, &err);
	if (rc < 0 && rc != GG_ENOTFOUND)
		ui_warn(cli, "%s", err.msg);
	return rc < 0 ? NULL : t;
}

/* ---- init ----------------------------------------------------------------------- */

/* Old PKCS#12 files need OpenSSL's legacy provider: loaded for this process, and only
 * for PKCS#12 input. Always "succeeds" (returns 1): without it only such old files
 * fail. */
static int load_legacy(struct gg_cli *cli, struct ossl_provider_st **legacy)
{
	struct gg_err err = {0};
	if (gg_cred_legacy_load(legacy, &err) < 0 && cli->verbose)
		ui_info(cli, "%s", err.msg);
	return 1;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int keygen_threads(void)
{
	/* a test knob: anything but 1 to 64 means "as many as the machine has" */
	const char *s = getenv("GRIDGPU_KEYGEN_THREADS");
	char *end;
	long n = s ? strtol(s, &end, 10) : 0;
	return s && *s && !*end && n >= 1 && n <= 64 ? (int)n : 0;
}

struct init_args {
	const char *cert, *key, *out_opt, *ca_opt;
	int pass_stdin, verify, bits;
	const char *voms[MAX_VOMS], *order;
	size_t n_voms;
	int64_t voms_lifetime;
};

/* One option of proxy init: 0, or the exit code after saying what is wrong. */
static int init_option(struct gg_cli *cli, int c, struct init_args *a, struct gg_proxy_opts *po)
{
	struct gg_err err = {0};
	switch (c) {
	case O_CERT: a->cert = cli->optarg; break;
	case O_KEY: a->key = cli->optarg; break;
	case O_OUT: a->out_opt = cli->optarg; break;
	case O_PASS_STDIN: a->pass_stdin = 1; break;
	case O_LIMITED: po->policy = GG_PROXY_LIMITED; break;
	case O_INDEPENDENT: po->policy = GG_PROXY_INDEPENDENT; break;
	case O_VERIFY: a->verify = 1; break;
	case O_CA_DIR: a->ca_opt = cli->optarg; break;
	case O_VALID:
		if (parse_valid(cli->optarg, &po->lifetime, &err) < 0)
			return ui_fail(cli, &err, "proxy init --valid");
		if (po->lifetime == 0) {
			gg_err_set(&err, GG_ECRED, "the lifetime must be more than 0");
			return ui_fail(cli, &err, "proxy init --valid");
		}
		break;
	case O_VOMS:
		if (a->n_voms == MAX_VOMS)
			return ui_usage(cli, "--voms: at most %d", MAX_VOMS);
		a->voms[a->n_voms++] = cli->optarg;
		break;
	case O_ORDER: a->order = cli->optarg; break;
	case O_VOMS_LIFETIME:
		if (parse_valid(cli->optarg, &a->voms_lifetime, &err) < 0 ||
		    a->voms_lifetime <= 0) {
			gg_err_set(&err, GG_EUSAGE, "'%s': expected a positive duration",
				   cli->optarg);
			return ui_fail(cli, &err, "proxy init --voms-lifetime");
		}
		break;
	case O_BITS: return cli_opt_int(cli, 1024, 16384, &a->bits) ? EXIT_USAGE : 0;
	case O_PATH_LENGTH: return cli_opt_int(cli, 0, 1000000, &po->path_length) ? EXIT_USAGE : 0;
	}
	return 0;
}

#define HELP_SHOWN (-1)

/* --voms VO[:FQAN] and --order FQAN, checked before anything else is done: a
 * VO name and FQANs (of that VO unless it is a vomses alias: checked once the
 * server is known), nothing else reaches a VOMS request. */
static int check_voms_args(struct gg_cli *cli, const struct init_args *a)
{
	struct gg_err err = {0};
	for (size_t i = 0; i < a->n_voms; i++) {
		const char *c = strchr(a->voms[i], ':');
		char vo[256];
		size_t vl = c ? (size_t)(c - a->voms[i]) : strlen(a->voms[i]);
		snprintf(vo, sizeof vo, "%.*s", (int)(vl < sizeof vo ? vl : sizeof vo - 1),
			 a->voms[i]);
		if (vl >= sizeof vo)
			gg_err_set(&err, GG_EUSAGE, "the VO name is longer than %zu bytes",
				   sizeof vo - 1);
		if (err.code || gg_voms_vo_check(vo, &err) < 0 ||
		    (c && gg_voms_fqan_check(NULL, c + 1, &err) < 0))
			return ui_fail(cli, &err, "proxy init --voms '%s'", a->voms[i]);
	}
	if (a->order && gg_voms_fqan_check(NULL, a->order, &err) < 0)
		return ui_fail(cli, &err, "proxy init --order");
	return 0;
}

static int init_args_parse(struct gg_cli *cli, int argc, char **argv, struct init_args *a,
			   struct gg_proxy_opts *po)
{
	int c, rc;
	while ((c = cli_next_opt(cli, argc, argv, cmd_proxy_init_opts)) > 0)
		if ((rc = init_option(cli, c, a, po)))
			return rc;
	if (c < 0)
		return c == -2 ? HELP_SHOWN : EXIT_USAGE;
	if (argc - cli->optind != 0)
		return ui_usage(cli, "proxy init takes no arguments");
	if (a->key && !a->cert)
		return ui_usage(cli, "--key needs --cert");
	return check_voms_args(cli, a);
}

/* Ask for the passphrase of the user's key when it has one, and unlock it. */
static int unlock_user(struct gg_cred *user, int pass_stdin, struct gg_err *err)
{
	if (!gg_cred_needs_passphrase(user))
		return 0;
	char prompt[1200];
	snprintf(prompt, sizeof prompt, "Enter GRID pass phrase for %s: ", gg_cred_key_path(user));
	char *pass = ui_read_passphrase(prompt, pass_stdin, err);
	if (!pass)
		return err->code ? err->code : GG_EFAIL;
	int r = gg_cred_unlock(user, pass, strlen(pass), err);
	ui_secret_free(pass);
	if (r < 0 || gg_cred_check_time(user, 0, err) < 0)
		return err->code;
	return 0;
}

/* What proxy init says once the proxy is written; out is taken. */
static int init_report(struct gg_cli *cli, const struct gg_cred *proxy, char *out, int verify,
		       int clipped, struct gg_err *err)
{
	struct gg_proxy_info in;
	if (gg_proxy_info_get(proxy, 0, &in, err) < 0) {
		free(out);
		return err->code;
	}
	free(in.path);
	in.path = out;
	char b1[40], b2[40];
	if (clipped)
		ui_warn(cli, "the proxy is valid until %s only: its signing certificate ends then",
			human_time(in.end, b1, sizeof b1));
	if (cli->json) {
		struct gg_token *t = find_token(cli);
		struct gg_ac *acs = NULL;
		size_t nacs = 0;
		struct gg_err e2 = {0};
		gg_cred_acs(proxy, 0, &acs, &nacs, &e2);
		ui_json_doc("proxy-init",
			    info_json(&in, verify ? 1 : -1, t, time(NULL), acs, nacs));
		gg_ac_list_free(acs, nacs);
		gg_token_free(t);
	} else {
		ui_info(cli, "proxy '%s' is valid until %s (%s)%s", in.path,
			human_time(in.end, b1, sizeof b1),
			gg_duration_format(in.time_left, b2, sizeof b2),
			verify ? ", verified" : "");
	}
	gg_proxy_info_clear(&in);
	return 0;
}

static void voms_log(void *ud, int level, const char *msg)
{
	(void)ud;
	(void)level;
	ui_err("gridgpu: %s\n", msg);
}

/* What the VOMS server said beside the AC, and an AC that ends well before
 * the lifetime asked (the server's maximum), as voms-proxy-init warns. */
static void warn_got(struct gg_cli *cli, const struct gg_voms_got *g, int64_t asked)
{
	char b1[40], b2[40], b3[40];
	if (g->warning)
		ui_warn(cli, "VOMS server %s: %s", g->who, g->warning);
	if (!g->shortened)
		return;
	time_t now = time(NULL);
	ui_warn(cli,
		"the attribute certificate of VO %s is valid until %s only (%s), not the %s "
		"asked: VOMS server %s shortened it, and the proxy carries no VO attributes "
		"after then",
		g->vo, human_time(g->not_after, b1, sizeof b1),
		gg_duration_format(g->not_after > now ? (int64_t)(g->not_after - now) : 0, b2,
				   sizeof b2),
		gg_duration_format(asked, b3, sizeof b3), g->who);
}

/* One VO's AC: the --voms arguments naming it give its FQANs. */
static int fetch_vo(struct gg_cli *cli, const struct gg_cred *user, const struct init_args *a,
		    const char *vo, size_t vlen, int64_t lifetime, unsigned char **ac, size_t *len,
		    struct gg_err *err)
{
	char name[128];
	const char *fq[MAX_VOMS];
	size_t nf = 0;
	struct gg_log lg = {.fn = voms_log, .ud = cli, .level = cli->verbose};
	snprintf(name, sizeof name, "%.*s", (int)vlen, vo);
	for (size_t i = 0; i < a->n_voms; i++) {
		const char *c = strchr(a->voms[i], ':');
		size_t l = c ? (size_t)(c - a->voms[i]) : strlen(a->voms[i]);
		if (l == vlen && strncmp(a->voms[i], vo, vlen) == 0 && c && c[1])
			fq[nf++] = c + 1;
	}
	struct gg_voms_request r = {.vo = name,
				    .fqans = fq,
				    .n_fqans = nf,
				    .order = a->order,
				    .lifetime = lifetime,
				    .log = &lg};
	struct gg_voms_got got;
	int rc = gg_voms_fetch(user, &r, ac, len, &got, err);
	if (rc == 0)
		warn_got(cli, &got, lifetime);
	gg_voms_got_clear(&got);
	return rc;
}

/* The ACs of every VO named by --voms (in order, each VO once), as the proxy
 * extension's value in *seq. */
static int fetch_acs(struct gg_cli *cli, const struct gg_cred *user, const struct init_args *a,
		     int64_t proxy_life, unsigned char **seq, size_t *seq_len, struct gg_err *err)
{
	unsigned char *acs[MAX_VOMS] = {0};
	size_t lens[MAX_VOMS] = {0}, n = 0;
	int64_t life =
		a->voms_lifetime && a->voms_lifetime < proxy_life ? a->voms_lifetime : proxy_life;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < a->n_voms; i++) {
		const char *c = strchr(a->voms[i], ':');
		size_t vl = c ? (size_t)(c - a->voms[i]) : strlen(a->voms[i]), j;
		for (j = 0; j < i; j++) /* a VO already asked */
			if (strncmp(a->voms[j], a->voms[i], vl) == 0 &&
			    (a->voms[j][vl] == ':' || a->voms[j][vl] == '\0'))
				break;
		if (vl == 0 || vl >= 128)
			rc = gg_err_set(err, GG_EUSAGE, "--voms '%s': expected VO[:FQAN]",
					a->voms[i]);
		else if (j == i)
			rc = fetch_vo(cli, user, a, a->voms[i], vl, life, &acs[n], &lens[n], err);
		if (rc == 0 && j == i)
			n++;
	}
	if (rc == 0)
		rc = gg_ac_seq_encode((const unsigned char *const *)acs, lens, n, seq, seq_len,
				      err);
	for (size_t i = 0; i < n; i++)
		free(acs[i]);
	return rc;
}

int cmd_proxy_init(struct gg_cli *cli, int argc, char **argv)
{
	struct init_args a = {.bits = GG_PROXY_DEFAULT_BITS};
	struct gg_proxy_opts po;
	struct gg_err err = {0};
	gg_proxy_opts_init(&po);
	int rc = init_args_parse(cli, argc, argv, &a, &po);
	if (rc)
		return rc == HELP_SHOWN ? EXIT_OK : rc;

	struct gg_cred_source src = {0};
	struct gg_cred *user = NULL, *proxy = NULL;
	struct gg_keygen *kg = NULL;
	struct ossl_provider_st *legacy = NULL;
	char *out = NULL, *ca_dir = NULL;
	unsigned char *acseq = NULL;
	size_t acseq_len = 0;
	int clipped = 0;

	/* The new key is made first, in the background: everything else (reading
	 * the certificate, the passphrase prompt) happens meanwhile. The key is a
	 * secret too, so no core dumps from here on. */
	struct gg_err e2 = {0};
	if (gg_cred_disable_core_dumps(&e2) < 0)
		ui_warn(cli, "%s", e2.msg);
	double t_start = now_ms(), t_key;
	if (gg_keygen_start(a.bits, keygen_threads(), &kg, &err) < 0)
		goto fail;
	/* Everything that can be checked before the passphrase is asked for. */
	if (gg_proxy_path(a.out_opt, &out, &err) < 0 || gg_proxy_check_target(out, &err) < 0 ||
	    (a.verify && gg_cred_ca_dir(a.ca_opt, &ca_dir, &err) < 0) ||
	    gg_cred_locate(a.cert, a.key, &src, &err) < 0 ||
	    (src.pkcs12 && !load_legacy(cli, &legacy)) || gg_cred_open(&src, &user, &err) < 0 ||
	    (gg_cred_cert(user) && gg_cred_check_time(user, 0, &err) < 0))
		goto fail;
	if (gg_cred_is_pkcs12(user))
		load_legacy(cli, &legacy);
	if (unlock_user(user, a.pass_stdin, &err) < 0)
		goto fail;
	/* the attribute certificates while the key is still being made */
	if (a.n_voms && fetch_acs(cli, user, &a, po.lifetime, &acseq, &acseq_len, &err) < 0)
		goto fail;
	po.acseq = acseq;
	po.acseq_len = acseq_len;
	if (gg_keygen_finish(kg, &po.key, &err) < 0) {
		kg = NULL;
		goto fail;
	}
	kg = NULL;
	t_key = now_ms();
	po.bits = a.bits;
	if (gg_proxy_create(user, &po, &proxy, &clipped, &err) < 0 ||
	    (a.verify && gg_cred_verify(proxy, ca_dir, 0, &err) < 0) ||
	    gg_proxy_write(proxy, out, &err) < 0)
		goto fail;
	if (cli->verbose)
		ui_info(cli, "timing: key ready after %.1f ms, the rest took %.1f ms",
			t_key - t_start, now_ms() - t_key);
	rc = init_report(cli, proxy, out, a.verify, clipped, &err);
	out = NULL;
	if (rc == 0)
		goto out;
fail:
	rc = ui_fail(cli, &err, "proxy init");
out:
	gg_keygen_free(kg);
	free(acseq);
	EVP_PKEY_free(po.key);
	gg_cred_free(proxy);
	gg_cred_free(user);
	gg_cred_source_clear(&src);
	free(out);
	free(ca_dir);
	gg_cred_legacy_unload(legacy);
	return rc;
}

/* ---- info ----------------------------------------------------------------------- */

/* The proxy (and a bearer token found beside it), as text or JSON. */
static void show_info(struct gg_cli *cli, const char *path, const struct gg_proxy_info *in,
		      int verified, const char *ca_dir, time_t now, const struct gg_ac *acs,
		      size_t nacs)
{
	struct gg_err perm = {0};
	if (gg_file_check_private(path, "proxy", &perm) < 0)
		ui_warn(cli, "%s", perm.msg);
	struct gg_token *t = find_token(cli);
	if (cli->json)
		ui_json_doc("proxy-info", info_json(in, verified, t, now, acs, nacs));
	else {
		print_info_text(in, verified, ca_dir, t, now);
		print_acs_text(acs, nacs, now, in->end);
	}
	gg_token_free(t);
}

/* --acexists VO, and --valid for the ACs: 0 or 1 (voms-proxy-info's answers). */
static int check_acs(struct gg_cli *cli, const char *path, const struct gg_ac *acs, size_t n,
		     const char *vo, int64_t need, time_t now)
{
	char b1[40], b2[40];
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		if (vo && strcmp(acs[i].vo, vo) != 0)
			continue;
		found = 1;
		const char *state = ac_state(&acs[i], now);
		const char *why = strcmp(state, "valid") == 0 ? NULL
				  : acs[i].time_left <= 0     ? "has expired"
							      : "is not valid yet";
		if (!why && need && acs[i].time_left < need) {
			if (!cli->quiet)
				ui_err("gridgpu: the attribute certificate of VO %s in '%s' has %s "
				       "left, less than %s\n",
				       acs[i].vo, path,
				       gg_duration_format(acs[i].time_left, b1, sizeof b1),
				       gg_duration_format(need, b2, sizeof b2));
			return EXIT_FAIL;
		}
		if (why) {
			if (!cli->quiet)
				ui_err("gridgpu: the attribute certificate of VO %s in '%s' %s "
				       "(%s %s)\n",
				       acs[i].vo, path, why,
				       acs[i].time_left <= 0 ? "it ended" : "it starts at",
				       human_time(acs[i].time_left <= 0 ? acs[i].not_after
									: acs[i].not_before,
						  b1, sizeof b1));
			return EXIT_FAIL;
		}
	}
	if (vo && !found) {
		if (!cli->quiet)
			ui_err("gridgpu: proxy '%s' has no attribute certificate of VO %s\n", path,
			       vo);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* --exists, --valid: the scripting interface of voms-proxy-info, 0 or 1 and
 * nothing on stdout. unverified: why verification failed, or NULL. */
static int check_answer(struct gg_cli *cli, const char *path, const struct gg_proxy_info *in,
			const char *unverified, int64_t need)
{
	char b1[40], b2[40];
	const char *why = in->not_yet_valid    ? "is not valid yet"
			  : in->time_left <= 0 ? "has expired"
					       : unverified;
	if (why) {
		if (!cli->quiet)
			ui_err("gridgpu: proxy '%s' %s\n", path, why);
		return EXIT_FAIL;
	}
	if (need && in->time_left < need) {
		if (!cli->quiet)
			ui_err("gridgpu: proxy '%s' has %s left, less than %s\n", path,
			       gg_duration_format(in->time_left, b1, sizeof b1),
			       gg_duration_format(need, b2, sizeof b2));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

struct info_opts {
	const char *file, *ca_opt, *acexists;
	int exists, left, verify, has_valid;
	int64_t need;
};

static int info_parse(struct gg_cli *cli, int argc, char **argv, struct info_opts *o)
{
	struct gg_err err = {0};
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_proxy_info_opts)) > 0) {
		switch (c) {
		case O_FILE: o->file = cli->optarg; break;
		case O_EXISTS: o->exists = 1; break;
		case O_LEFT: o->left = 1; break;
		case O_VERIFY: o->verify = 1; break;
		case O_CA_DIR: o->ca_opt = cli->optarg; break;
		case O_ACEXISTS: o->acexists = cli->optarg; break;
		case O_VALID:
			if (parse_valid(cli->optarg, &o->need, &err) < 0)
				return ui_fail(cli, &err, "proxy info --valid");
			o->has_valid = 1;
			break;
		}
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind != 0)
		return ui_usage(cli, "proxy info takes no arguments");
	return 0;
}

/* A failure: with --exists/--valid a missing or unreadable proxy is a "no"
 * (exit 1), not an error. */
static int info_fail(struct gg_cli *cli, int check, const struct gg_err *err)
{
	if (!check || err->code != GG_ECRED)
		return ui_fail(cli, err, "proxy info");
	if (!cli->quiet)
		ui_err("gridgpu: %s\n", err->msg);
	return EXIT_FAIL;
}

/* The proxy at path, read and verified as asked; then the answer, the time
 * left or the info shown. */
static int info_show(struct gg_cli *cli, const struct info_opts *o, const char *path,
		     const char *ca_dir, struct gg_cred *cred)
{
	struct gg_err err = {0};
	struct gg_proxy_info in = {0};
	int check = o->exists || o->has_valid || o->acexists, verified = -1, rc = EXIT_OK;
	time_t now = time(NULL);
	struct gg_ac *acs = NULL;
	size_t nacs = 0;
	if (gg_proxy_info_get(cred, now, &in, &err) < 0)
		return info_fail(cli, check, &err);
	if (gg_cred_acs(cred, now, &acs, &nacs, &err) < 0) {
		gg_proxy_info_clear(&in);
		err.code = GG_ECRED;
		return info_fail(cli, check, &err);
	}
	if (o->verify) {
		verified = gg_cred_verify(cred, ca_dir, 0, &err) == 0;
		if (!verified && !check) {
			gg_proxy_info_clear(&in);
			gg_ac_list_free(acs, nacs);
			return info_fail(cli, check, &err);
		}
	}
	if (o->left)
		ui_out("%" PRId64 "\n", in.not_yet_valid ? 0 : in.time_left);
	if (check)
		rc = check_answer(cli, path, &in, verified == 0 ? err.msg : NULL,
				  o->has_valid ? o->need : 0);
	if (check && rc == EXIT_OK)
		rc = check_acs(cli, path, acs, nacs, o->acexists, o->has_valid ? o->need : 0, now);
	else if (!check && !o->left)
		show_info(cli, path, &in, verified, ca_dir, now, acs, nacs);
	gg_proxy_info_clear(&in);
	gg_ac_list_free(acs, nacs);
	return rc;
}

int cmd_proxy_info(struct gg_cli *cli, int argc, char **argv)
{
	struct info_opts o = {0};
	int rc = info_parse(cli, argc, argv, &o);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	int check = o.exists || o.has_valid || o.acexists;
	char *path = NULL, *ca_dir = NULL;
	struct gg_cred *cred = NULL;
	struct gg_err err = {0};
	/* The proxy file holds the proxy's key, and a bearer token is read: no
	 * core dumps, as for proxy init. */
	if (gg_cred_disable_core_dumps(&err) < 0)
		ui_warn(cli, "%s", err.msg);
	if (gg_proxy_path(o.file, &path, &err) < 0 ||
	    (o.verify && gg_cred_ca_dir(o.ca_opt, &ca_dir, &err) < 0)) {
		rc = info_fail(cli, check, &err);
	} else if (gg_cred_load_public(path, &cred, &err) < 0) {
		if (err.code == GG_ENOTFOUND)
			gg_err_set(&err, GG_ECRED,
				   "no proxy at '%s' (make one with 'gridgpu proxy init')", path);
		rc = info_fail(cli, check, &err);
	} else {
		rc = info_show(cli, &o, path, ca_dir, cred);
	}
	gg_cred_free(cred);
	free(path);
	free(ca_dir);
	return rc;
}

/* ---- destroy ---------------------------------------------------------------------- */

int cmd_proxy_destroy(struct gg_cli *cli, int argc, char **argv)
{
	const char *file = NULL;
	int c;
	struct gg_err err = {0};
	while ((c = cli_next_opt(cli, argc, argv, cmd_proxy_destroy_opts)) > 0)
		if (c == O_FILE)
			file = cli->optarg;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	if (argc - cli->optind != 0)
		return ui_usage(cli, "proxy destroy takes no arguments");
	char *path = NULL;
	if (gg_proxy_path(file, &path, &err) < 0)
		return ui_fail(cli, &err, "proxy destroy");
	int rc = gg_proxy_destroy(path, &err);
	if (rc == GG_ENOTFOUND) {
		ui_info(cli, "no proxy at '%s'", path);
		rc = EXIT_OK;
	} else if (rc < 0) {
		rc = ui_fail(cli, &err, "proxy destroy");
	} else {
		ui_info(cli, "proxy '%s' destroyed", path);
	}
	free(path);
	return rc;
}
