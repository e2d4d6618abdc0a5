/* gridgpu proxy info: the proxy (and the bearer token found by the WLCG
 * discovery order), as text or JSON, or voms-proxy-info's answers
 * (gg_proxy_inspect does the work). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "gridgpu/voms.h"

enum {
	O_FILE = 256,
	O_EXISTS,
	O_VALID,
	O_LEFT,
	O_ACEXISTS,
	O_VERIFY,
	O_CA_DIR,
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
	{"ca-dir", 0, OPT_DIR, "DIR",
	 "CA directory for --verify ($X509_CERT_DIR, /etc/grid-security/certificates)", O_CA_DIR},
	OPT_END,
};

/* voms-proxy-info's form: H:MM:SS */
static char *hms(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	snprintf(buf, len, "%" PRId64 ":%02d:%02d", s / 3600, (int)(s / 60 % 60), (int)(s % 60));
	return buf;
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
		gg_json_set_text(o, "exp", gg_time_iso(t->exp, b, sizeof b));
		gg_json_set(o, "time_left",
			    json_integer(t->exp > now ? (json_int_t)(t->exp - now) : 0));
	}
	if (t->sub)
		gg_json_set_text(o, "sub", t->sub);
	if (t->iss)
		gg_json_set_text(o, "iss", t->iss);
	return o;
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
		gg_json_set_text(o, "not_before", gg_time_iso(acs[i].not_before, b1, sizeof b1));
		gg_json_set_text(o, "not_after", gg_time_iso(acs[i].not_after, b2, sizeof b2));
		gg_json_set(o, "time_left", json_integer((json_int_t)acs[i].time_left));
		gg_json_set_text(o, "state", gg_ac_state(&acs[i], now));
		gg_json_append(a, o);
	}
	return a;
}

json_t *cli_proxy_json(const struct gg_proxy_report *r)
{
	const struct gg_proxy_info *in = gg_proxy_report_info(r);
	time_t now = gg_proxy_report_time(r);
	int verified = gg_proxy_report_verified(r);
	size_t nacs;
	const struct gg_ac *acs = gg_proxy_report_acs(r, &nacs);
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
	gg_json_set_text(o, "not_before", gg_time_iso(in->not_before, b1, sizeof b1));
	gg_json_set_text(o, "not_after", gg_time_iso(in->not_after, b2, sizeof b2));
	gg_json_set(o, "time_left", json_integer((json_int_t)in->time_left));
	if (verified >= 0)
		gg_json_set(o, "verified", json_boolean(verified));
	gg_json_set(o, "token", token_json(gg_proxy_report_token(r), now));
	gg_json_set(o, "acs", acs_json(acs, nacs, now));
	return o;
}

/* voms-proxy-info --all's shape, one block per AC; an AC that ends before the
 * proxy (its server shortened it) says so. */
static void print_ac_text(const struct gg_ac *ac, time_t now, time_t proxy_end)
{
	char b1[40], b2[40];
	ui_out("=== VO %s extension information ===\n", ac->vo);
	ui_out("VO        : %s\n", ac->vo);
	for (size_t j = 0; j < ac->n_fqans; j++)
		ui_out("attribute : %s\n", ac->fqans[j]);
	ui_out("issuer    : %s\n", ac->issuer);
	if (ac->uri)
		ui_out("uri       : %s\n", ac->uri);
	if (ac->not_before > now + GG_AC_SKEW)
		ui_out("timeleft  : not valid yet: it starts at %s, in %s (is the VOMS "
		       "server's clock ahead?)\n",
		       gg_time_local(ac->not_before, b1, sizeof b1),
		       gg_duration_format((int64_t)(ac->not_before - now), b2, sizeof b2));
	else
		ui_out("timeleft  : %s (until %s)%s\n", hms(ac->time_left, b1, sizeof b1),
		       gg_time_local(ac->not_after, b2, sizeof b2),
		       !ac->time_left                           ? " expired"
		       : ac->not_after + GG_AC_SKEW < proxy_end ? ", before the proxy's end"
								: "");
}

static void print_token_text(const struct gg_token *t, time_t now)
{
	char b1[40], b2[40];
	ui_out("token     : %s%s\n", t->source, t->jwt ? " (JWT)" : "");
	if (t->sub || t->iss)
		ui_out("token sub : %s%s%s\n", t->sub ? t->sub : "?", t->iss ? " from " : "",
		       t->iss ? t->iss : "");
	if (t->exp)
		ui_out("token exp : %s (%s left)\n", gg_time_local(t->exp, b1, sizeof b1),
		       hms(t->exp > now ? t->exp - now : 0, b2, sizeof b2));
	else
		ui_out("token exp : unknown\n");
}

static void print_info_text(const struct gg_proxy_report *r)
{
	const struct gg_proxy_info *in = gg_proxy_report_info(r);
	time_t now = gg_proxy_report_time(r);
	char b1[40], b2[40];
	size_t nacs;
	const struct gg_ac *acs = gg_proxy_report_acs(r, &nacs);
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
		       gg_time_local(in->not_before, b1, sizeof b1));
	else
		ui_out("timeleft  : %s (until %s)%s\n", hms(in->time_left, b1, sizeof b1),
		       gg_time_local(in->end, b2, sizeof b2), in->time_left ? "" : " expired");
	if (gg_proxy_report_verified(r) > 0)
		ui_out("verified  : yes (against %s)\n", gg_proxy_report_ca_dir(r));
	if (gg_proxy_report_token(r))
		print_token_text(gg_proxy_report_token(r), now);
	for (size_t i = 0; i < nacs; i++)
		print_ac_text(&acs[i], now, in->end);
}

struct info_opts {
	const char *file, *ca_dir, *acexists;
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
		case O_CA_DIR: o->ca_dir = cli->optarg; break;
		case O_ACEXISTS: o->acexists = cli->optarg; break;
		case O_VALID:
			/* unreadable: a usage error (exit 2), gridgpu-proxy(1) */
			if (gg_duration_parse_unit(cli->optarg, &o->need, &err) < 0) {
				err.code = GG_EUSAGE;
				return ui_fail(cli, &err, "proxy info --valid");
			}
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

/* A failure: with --exists/--valid/--acexists a missing or unreadable proxy,
 * and the answer "no", are exit 1 (said unless -q), not an error. */
static int info_fail(struct gg_cli *cli, int check, const struct gg_err *err)
{
	if (!check || err->code != GG_ECRED)
		return ui_fail(cli, err, "proxy info");
	if (!cli->quiet)
		ui_err("gridgpu: %s\n", err->msg);
	return EXIT_FAIL;
}

/* The answer, the time left, or the proxy shown. */
static int info_print(struct gg_cli *cli, const struct info_opts *o, int check,
		      const struct gg_proxy_report *r)
{
	const struct gg_proxy_info *in = gg_proxy_report_info(r);
	struct gg_err err = {0};
	if (o->left)
		ui_out("%" PRId64 "\n", in->not_yet_valid ? 0 : in->time_left);
	if (check)
		return gg_proxy_report_answer(r, &err) < 0 ? info_fail(cli, 1, &err) : EXIT_OK;
	if (o->left)
		return EXIT_OK;
	if (cli->json)
		ui_json_doc("proxy-info", cli_proxy_json(r));
	else
		print_info_text(r);
	return EXIT_OK;
}

int cmd_proxy_info(struct gg_cli *cli, int argc, char **argv)
{
	struct info_opts o = {0};
	int rc = info_parse(cli, argc, argv, &o);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	int check = o.exists || o.has_valid || o.acexists;
	struct gg_proxy_req *q = gg_proxy_req_new();
	struct gg_proxy_report *r = NULL;
	struct gg_err err = {0};
	if (!q) {
		gg_err_set(&err, GG_ENOMEM, "out of memory");
		return ui_fail(cli, &err, "proxy info");
	}
	gg_proxy_req_set_file(q, o.file);
	if (o.verify)
		gg_proxy_req_set_verify(q, o.ca_dir);
	if (check)
		gg_proxy_req_set_answer(q, o.has_valid ? o.need : 0, o.acexists);
	else if (!o.left)
		gg_proxy_req_set_show(q, GG_PROXY_SHOW_TOKEN | GG_PROXY_SHOW_MODE);
	gg_proxy_req_on_note(q, cli_note, cli);
	if (gg_proxy_inspect(q, &r, &err) < 0)
		rc = info_fail(cli, check, &err);
	else
		rc = info_print(cli, &o, check, r);
	gg_proxy_report_free(r);
	gg_proxy_req_free(q);
	return rc;
}
