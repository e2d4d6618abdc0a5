/* gridgpu proxy init and destroy: make and delete X.509 proxy certificates
 * (gg_proxy_make does the work; proxy info is in cmd-proxy-info.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gridgpu/voms.h"

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
	O_VOMS,
	O_ORDER,
	O_VOMS_LIFETIME,
};

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
	{"ca-dir", 0, OPT_DIR, "DIR",
	 "CA directory for --verify ($X509_CERT_DIR, /etc/grid-security/certificates)", O_CA_DIR},
	{"voms", 0, OPT_ARG, "VO[:FQAN]",
	 "add the VO's attribute certificate (VO: its name or vomses alias; repeatable)", O_VOMS},
	{"order", 0, OPT_ARG, "FQAN", "ask the VOMS server to put FQAN first", O_ORDER},
	{"voms-lifetime", 0, OPT_ARG, "DUR",
	 "lifetime of the attribute certificates (default: the proxy's)", O_VOMS_LIFETIME},
	OPT_END,
};

const struct gg_opt cmd_proxy_destroy_opts[] = {
	{"file", 'f', OPT_FILE, "FILE", "proxy file ($X509_USER_PROXY, /tmp/x509up_u<uid>)",
	 O_FILE},
	OPT_END,
};

/* ---- init ----------------------------------------------------------------------- */

struct init_args {
	struct gg_proxy_req *q;
	const char *cert, *key, *order, *ca_dir;
	const char *voms[GG_PROXY_VOMS_MAX];
	size_t n_voms;
	int pass_stdin, verify, bits, path_length;
	int64_t lifetime, voms_lifetime;
};

/* --valid: a duration that cannot be read (a bare 12: hours or seconds?) is a
 * usage error (exit 2), as --walltime's is, documented in gridgpu-proxy(1). */
static int opt_valid(struct gg_cli *cli, int64_t *out)
{
	struct gg_err err = {0};
	if (gg_duration_parse_unit(cli->optarg, out, &err) < 0)
		err.code = GG_EUSAGE;
	else if (*out == 0)
		gg_err_set(&err, GG_EUSAGE, "the lifetime must be more than 0");
	return err.code ? ui_fail(cli, &err, "proxy init --valid") : 0;
}

static int opt_voms_lifetime(struct gg_cli *cli, int64_t *out)
{
	struct gg_err err = {0};
	if (gg_duration_parse_unit(cli->optarg, out, &err) < 0 || *out <= 0) {
		gg_err_set(&err, GG_EUSAGE, "'%s': expected a positive duration", cli->optarg);
		return ui_fail(cli, &err, "proxy init --voms-lifetime");
	}
	return 0;
}

/* One option of proxy init: 0, or the exit code after saying what is wrong. */
static int init_option(struct gg_cli *cli, int c, struct init_args *a)
{
	switch (c) {
	case O_CERT: a->cert = cli->optarg; break;
	case O_KEY: a->key = cli->optarg; break;
	case O_OUT: gg_proxy_req_set_file(a->q, cli->optarg); break;
	case O_PASS_STDIN: a->pass_stdin = 1; break;
	case O_LIMITED: gg_proxy_req_set_policy(a->q, GG_PROXY_LIMITED); break;
	case O_INDEPENDENT: gg_proxy_req_set_policy(a->q, GG_PROXY_INDEPENDENT); break;
	case O_VERIFY: a->verify = 1; break;
	case O_CA_DIR: a->ca_dir = cli->optarg; break;
	case O_VALID: return opt_valid(cli, &a->lifetime);
	case O_VOMS:
		if (a->n_voms == GG_PROXY_VOMS_MAX)
			return ui_usage(cli, "--voms: at most %d", GG_PROXY_VOMS_MAX);
		a->voms[a->n_voms++] = cli->optarg;
		break;
	case O_ORDER: a->order = cli->optarg; break;
	case O_VOMS_LIFETIME: return opt_voms_lifetime(cli, &a->voms_lifetime);
	case O_BITS: return cli_opt_int(cli, 1024, 16384, &a->bits) ? EXIT_USAGE : 0;
	case O_PATH_LENGTH: return cli_opt_int(cli, 0, 1000000, &a->path_length) ? EXIT_USAGE : 0;
	}
	return 0;
}

#define HELP_SHOWN (-1)

/* The options into the request: --voms VO[:FQAN] and --order FQAN checked
 * before anything else is done, nothing else reaches a VOMS request. */
static int init_args_parse(struct gg_cli *cli, int argc, char **argv, struct init_args *a)
{
	struct gg_err err = {0};
	int c, rc;
	while ((c = cli_next_opt(cli, argc, argv, cmd_proxy_init_opts)) > 0)
		if ((rc = init_option(cli, c, a)))
			return rc;
	if (c < 0)
		return c == -2 ? HELP_SHOWN : EXIT_USAGE;
	if (argc - cli->optind != 0)
		return ui_usage(cli, "proxy init takes no arguments");
	if (a->key && !a->cert)
		return ui_usage(cli, "--key needs --cert");
	for (size_t i = 0; i < a->n_voms; i++)
		if (gg_proxy_req_add_voms(a->q, a->voms[i], &err) < 0)
			return ui_fail(cli, &err, "proxy init --voms '%s'", a->voms[i]);
	if (a->order && gg_proxy_req_set_order(a->q, a->order, &err) < 0)
		return ui_fail(cli, &err, "proxy init --order");
	gg_proxy_req_set_cred(a->q, a->cert, a->key);
	gg_proxy_req_set_lifetime(a->q, a->lifetime);
	gg_proxy_req_set_voms_lifetime(a->q, a->voms_lifetime);
	gg_proxy_req_set_path_length(a->q, a->path_length);
	if (a->verify)
		gg_proxy_req_set_verify(a->q, a->ca_dir);
	return 0;
}

/* The pass phrase of the user's key, from the terminal or --pass-stdin. */
static int ask_pass(void *ud, const char *key_path, char *buf, size_t size, struct gg_err *err)
{
	const struct init_args *a = ud;
	char prompt[1200];
	snprintf(prompt, sizeof prompt, "Enter GRID pass phrase for %s: ", key_path);
	char *pass = ui_read_passphrase(prompt, a->pass_stdin, err);
	if (!pass)
		return err->code ? err->code : GG_EFAIL;
	size_t n = strlen(pass);
	int rc = n < size ? (int)n
			  : gg_err_set(err, GG_ECRED, "the pass phrase is longer than %zu bytes",
				       size - 1);
	if (rc >= 0)
		memcpy(buf, pass, n);
	ui_secret_free(pass);
	return rc;
}

static void voms_log(void *ud, int level, const char *msg)
{
	(void)ud;
	(void)level;
	ui_err("gridgpu: %s\n", msg);
}

static int keygen_threads(void)
{
	/* a test knob: anything but 1 to 64 means "as many as the machine has" */
	const char *s = getenv("GRIDGPU_KEYGEN_THREADS");
	char *end;
	long n = s ? strtol(s, &end, 10) : 0;
	return s && *s && !*end && n >= 1 && n <= 64 ? (int)n : 0;
}

/* The attributes each VO's server put in the proxy, one line a VO: the FQANs
 * are the server's text, escaped as every %s of ui_info is. (An AC shorter
 * than asked is warned about as it is made.) */
static void print_fqans(struct gg_cli *cli, const struct gg_proxy_report *r)
{
	size_t n = 0;
	const struct gg_ac *acs = gg_proxy_report_acs(r, &n);
	for (size_t i = 0; i < n; i++) {
		char *line = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&line, &len);
		for (size_t k = 0; f && k < acs[i].n_fqans; k++)
			fprintf(f, "%s%s", k ? ", " : "", acs[i].fqans[k]);
		if (f && fclose(f) == 0)
			ui_info(cli, "attributes of VO %s: %s", acs[i].vo ? acs[i].vo : "?",
				len ? line : "(none)");
		free(line);
	}
}

/* What proxy init says once the proxy is written. */
static void init_print(struct gg_cli *cli, const struct gg_proxy_report *r)
{
	const struct gg_proxy_info *in = gg_proxy_report_info(r);
	char b1[40], b2[40];
	if (cli->json) {
		ui_json_doc("proxy-init", cli_proxy_json(r));
		return;
	}
	ui_info(cli, "proxy '%s' is valid until %s (%s)%s", in->path,
		gg_time_local((int64_t)in->end, b1, sizeof b1),
		gg_duration_format(in->time_left, b2, sizeof b2),
		gg_proxy_report_verified(r) > 0 ? ", verified" : "");
	print_fqans(cli, r);
}

int cmd_proxy_init(struct gg_cli *cli, int argc, char **argv)
{
	struct init_args a = {.bits = GG_PROXY_DEFAULT_BITS, .path_length = -1};
	struct gg_log lg = {.fn = voms_log, .ud = cli, .level = cli->verbose};
	struct gg_proxy_report *r = NULL;
	struct gg_err err = {0};
	if (!(a.q = gg_proxy_req_new())) {
		gg_err_set(&err, GG_ENOMEM, "out of memory");
		return ui_fail(cli, &err, "proxy init");
	}
	int rc = init_args_parse(cli, argc, argv, &a);
	if (rc == 0) {
		gg_proxy_req_set_key(a.q, a.bits, keygen_threads());
		gg_proxy_req_set_show(a.q, cli->json ? GG_PROXY_SHOW_TOKEN : 0);
		gg_proxy_req_on_passphrase(a.q, ask_pass, &a);
		gg_proxy_req_on_note(a.q, cli_note, cli);
		gg_proxy_req_set_log(a.q, &lg);
		if (gg_proxy_make(a.q, &r, &err) < 0)
			rc = ui_fail(cli, &err, "proxy init");
		else
			init_print(cli, r);
	}
	gg_proxy_report_free(r);
	gg_proxy_req_free(a.q);
	return rc == HELP_SHOWN ? EXIT_OK : rc;
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
	int rc = gg_proxy_destroy_at(file, &path, &err);
	if (rc == GG_ENOTFOUND && path) {
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
