/* gridgpu request: an interactive GPU session on a site's CE. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "request.h"
#include "resopt.h"
#include "gridgpu/session.h"
#include "gridgpu/ssh.h"

enum {
	O_CE = 256,
	O_NAME,
	O_IMAGE,
	O_DEADLINE,
	O_IDLE,
	O_WAIT,
	O_NO_WAIT,
	O_DRY_RUN,
	O_IDENTITY,
	O_TIMEOUT,
	O_BIND,
	O_RACE,
	O_RESUME,
};

const struct gg_opt cmd_request_opts[] = {
	{"ce", 0, OPT_ARG, "URL", "CE endpoint (instead of the site's)", O_CE},
	{"name", 'n', OPT_ARG, "NAME", "name of the session (default SITE-N)", O_NAME},
	CLI_RES_OPTS("how long the session may last (default 4h)"),
	{"image", 'i', OPT_IMAGE, "IMAGE",
	 "work inside a writable sandbox made from IMAGE (SIF, docker-archive, OCI, tar, "
	 "directory here; node:/PATH for an image on the node)",
	 O_IMAGE},
	{"bind", 0, OPT_ARG, "SRC[:DST]", "a path of the node in the container (repeat for more)",
	 O_BIND},
	{"connect-deadline", 0, OPT_ARG, "DUR",
	 "end the session if nobody connects within DUR (20m)", O_DEADLINE},
	{"idle-limit", 0, OPT_ARG, "DUR", "end the session when idle for DUR", O_IDLE},
	{"wait", 'w', OPT_NONE, NULL, "wait until the session is ready (the default)", O_WAIT},
	{"no-wait", 0, OPT_NONE, NULL, "return once the job is submitted", O_NO_WAIT},
	{"timeout", 0, OPT_ARG, "DUR", "give up waiting after DUR (default: no limit)", O_TIMEOUT},
	{"identity", 0, OPT_FILE, "FILE", "your own ssh key instead of a per-session one",
	 O_IDENTITY},
	{"dry-run", 0, OPT_NONE, NULL, "print the job description and requests, submit nothing",
	 O_DRY_RUN},
	{"race", 0, OPT_ARG, "N", "send it to the N best sites at once: the first ready wins",
	 O_RACE},
	{"resume", 0, OPT_ENDED, "S",
	 "a new session whose sandbox is ended session S's as it ended (S's site, GPUs)", O_RESUME},
	OPT_END,
};

static int add_bind(struct gg_cli *cli, struct req *q)
{
	if (q->nbinds == GG_JD_MAX)
		return ui_usage(cli, "too many --bind paths");
	q->binds[q->nbinds++] = cli->optarg;
	return 0;
}

/* A duration option of request's own. */
static int duration_opt(struct gg_cli *cli, int c, struct req *q)
{
	int64_t *d = c == O_DEADLINE ? &q->deadline : c == O_IDLE ? &q->idle : &q->timeout;
	int rc = cli_opt_duration(cli, d);
	if (rc)
		return rc;
	if (*d == 0 && c != O_IDLE)
		return ui_usage(cli, "--%s must be more than 0", cli->optname);
	return 0;
}

static int apply_opt(struct gg_cli *cli, int c, struct req *q)
{
	int rc = cli_res_opt(cli, c, &q->res, &q->token);
	q->gpus_given |= c == O_RES_GPUS || c == O_RES_MIG;
	if (rc != 1)
		return rc;
	switch (c) {
	case O_CE: q->ce = cli->optarg; break;
	case O_NAME: q->name = cli->optarg; break;
	case O_DEADLINE:
	case O_IDLE:
	case O_TIMEOUT: return duration_opt(cli, c, q);
	case O_IMAGE: q->image = cli->optarg; break;
	case O_WAIT: q->wait = 1; break;
	case O_NO_WAIT: q->wait = 0; break;
	case O_DRY_RUN: q->dry_run = 1; break;
	case O_IDENTITY: q->identity = cli->optarg; break;
	case O_BIND: return add_bind(cli, q);
	case O_RACE: return cli_opt_race(cli, &q->race);
	case O_RESUME: q->resume = cli->optarg; break;
	}
	return 0;
}

static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct req *q)
{
	struct gg_err err = {0};
	int c, rc;
	while ((c = cli_next_opt(cli, argc, argv, cmd_request_opts)) > 0)
		if ((rc = apply_opt(cli, c, q)))
			return rc;
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind > 0)
		return ui_usage(cli, "request takes no arguments ('%s'?)", argv[cli->optind]);
	if ((rc = cli_res_check(cli, &q->res)))
		return rc;
	if (q->nbinds && !q->image)
		return ui_usage(cli, "--bind goes with --image (without one, logins see the node)");
	if (q->name && !gg_record_name_valid(q->name))
		return ui_usage(cli, "--name: use a letter, then letters, digits, '_', '-'");
	if (q->name && gg_ssh_session_name_ok(q->name, &err) < 0)
		return ui_usage(cli, "--name: %s", err.msg);
	if (q->identity && gg_ssh_cfg_check("--identity", q->identity, GG_SSHV_PATH, &err) < 0)
		return ui_usage(cli, "%s", err.msg);
	rc = cli_race_check(cli, q);
	return rc || !q->resume ? rc : cli_request_resume(cli, q);
}

/* Wait for the launcher to publish the sshd, pin its host key, tell how to
 * connect. */
static int wait_ready(struct gg_cli *cli, struct gg_ce *ce, struct gg_record *r, int64_t timeout)
{
	struct gg_err err = {0};
	struct gg_engine *e = cli_engine(cli);
	int wrc = cli_wait_ready(cli, ce, r, timeout, &err);
	if (wrc == GG_EINTR) {
		fprintf(stderr,
			"gridgpu: request: interrupted: session %s keeps starting on the CE; "
			"'gridgpu connect %s' waits for it, 'gridgpu kill %s' ends it\n",
			r->name, r->name, r->name);
		return EXIT_INTR;
	}
	if (wrc < 0)
		return ui_fail(cli, &err, "request %s", r->name);
	if (r->state != GG_S_READY) {
		gg_err_set(&err, GG_EJOB, "session %s: %s", gg_sess_state_name(r->state),
			   r->error ? r->error : "ended before it was ready");
		int code = ui_fail(cli, &err, "request %s", r->name);
		gg_engine_write_ssh_config(e, &err);
		return code;
	}
	struct gg_ssh_paths sp = {0};
	if (gg_engine_write_ssh_config(e, &err) < 0 || gg_ssh_paths_init(&sp, &err) < 0)
		return ui_fail(cli, &err, "writing the SSH configuration");
	cli_request_print_ready(cli, r, sp.config, NULL);
	gg_ssh_paths_clear(&sp);
	return EXIT_OK;
}

/* Submit the session; wait for it unless --no-wait. */
static int submit(struct gg_cli *cli, const struct req *q, struct gg_submission *s)
{
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_err err = {0};
	struct gg_record r = {0};
	struct gg_ce *ce = NULL;
	cli_catch_interrupt();
	struct gg_engine_callbacks cb;
	cli_engine_callbacks(cli, &cb);
	cb.upload_begin = NULL; /* two small files: no progress bars */
	int rc = gg_engine_set_callbacks(e, &cb, &err);
	if (rc == 0)
		rc = gg_engine_submit(e, s, &r, &ce, &err);
	int code = EXIT_OK;
	if (rc < 0)
		code = ui_fail(cli, &err, "request%s%s", r.name ? " " : "", r.name ? r.name : "");
	else if (q->wait)
		code = wait_ready(cli, ce, &r, q->timeout);
	else if (cli->json)
		ui_json_doc("request", cli_record_json(&r));
	else
		ui_out("%s\n", r.name);
	if (rc == 0 && !q->wait)
		ui_info(cli, "'gridgpu connect %s' waits for it and connects", r.name);
	gg_ce_free(ce);
	gg_record_clear(&r);
	return code;
}

/* What was asked, with the site's defaults, as the library's session spec;
 * NULL after saying what is wrong. */
struct gg_session_spec *cli_request_spec(struct gg_cli *cli, const struct req *q,
					 const struct gg_site *site, const char *launcher)
{
	struct gg_err err = {0};
	struct gg_session_spec *spec = NULL;
	int rc = gg_session_spec_new(&spec, &err);
	if (rc == 0)
		rc = gg_session_spec_set_resources(spec, &q->res, &err);
	if (rc == 0 && q->deadline)
		rc = gg_session_spec_set_deadline(spec, q->deadline, &err);
	if (rc == 0)
		rc = gg_session_spec_set_idle(spec, q->idle, &err);
	if (rc == 0)
		rc = gg_session_spec_set_image(spec, q->image, &err);
	if (rc == 0 && q->resume)
		rc = gg_session_spec_set_resume(spec, &q->from, &err);
	for (int i = 0; rc == 0 && i < q->nbinds; i++)
		rc = gg_session_spec_add_bind(spec, q->binds[i], &err);
	if (rc == 0)
		rc = gg_session_spec_set_launcher(spec, launcher, &err);
	if (rc == 0) /* a test hook */
		rc = gg_session_spec_set_warn_leads(spec, getenv("GRIDGPU_WARN_LEADS"), &err);
	if (rc == 0)
		rc = gg_session_spec_defaults(spec, site, &err);
	if (rc == 0)
		return spec;
	ui_fail(cli, &err, "request");
	gg_session_spec_free(spec);
	return NULL;
}

/* The image and the enter script staged with the session (--image). */
int cli_request_stage(struct gg_cli *cli, int dry, struct gg_session_spec *spec,
		      const struct gg_site *site, struct gg_session_stage **s)
{
	struct gg_err err = {0};
	struct gg_engine *e = dry ? NULL : cli_engine(cli); /* a dry run makes nothing */
	if (!e && !dry)
		return cli->cfg_exit;
	if (gg_session_stage(e, spec, site, dry, s, &err) < 0)
		return ui_fail(cli, &err, "request");
	return 0;
}

/* With --dry-run: the description and the enter script, nothing sent. */
static int dry_run(struct gg_cli *cli, const struct gg_session_spec *spec,
		   const struct gg_site *site, struct gg_submission *s,
		   const struct gg_session_stage *stage)
{
	if (!s->rec.name)
		s->rec.name = gg_strdup_printf("%s-N", s->prefix);
	if (!s->rec.uid) /* given at submission, as submit's dry run shows it */
		s->rec.uid = gg_strdup_printf("UID");
	int rc = cli_dry_run_session(cli, spec, site, &s->rec);
	if (rc == 0 && stage && !cli->json) {
		ui_out("\n# %s, staged beside the launcher:\n", GG_ENTER_NAME);
		ui_out_lines(gg_session_stage_script(stage)); /* the image's and binds' values */
	}
	return rc;
}

/* The session asked for (q), at its site. */
static int request(struct gg_cli *cli, struct req *q)
{
	int rc = cli_right_size(cli, q->image, &q->res, q->image != NULL);
	if (rc || (q->race && !q->dry_run)) /* the N best at once */
		return rc ? rc : cli_request_race(cli, q);
	const struct gg_site *site = NULL; /* --site auto or A,B: where it fits best */
	rc = cli_request_site(cli, &q->res, q->image, q->dry_run, q->ce == NULL, &site);
	if (rc || (!site && (!q->ce || cli->site)))
		return rc ? rc : cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
	const char *endpoint = q->ce ? q->ce : site->ce;
	if (!endpoint)
		return ui_usage(cli, "site '%s' has no CE URL: 'gridgpu site add %s --ce URL'",
				site->name, site->name);
	struct gg_err err = {0};
	if (q->identity && !q->dry_run && gg_ssh_identity_check(q->identity, &err) < 0)
		return ui_fail(cli, &err, "request");
	char *launcher = cli_libexec(cli, "session-launcher", "session launcher", "request");
	if (!launcher)
		return EXIT_FAIL;
	struct gg_session_spec *spec = cli_request_spec(cli, q, site, launcher);
	struct gg_session_stage *stage = NULL;
	if (!spec)
		rc = EXIT_FAIL;
	else if (gg_session_spec_image(spec))
		rc = cli_request_stage(cli, q->dry_run, spec, site, &stage);
	if (rc == 0) {
		struct gg_submission s;
		gg_session_submission(&s, spec, site, endpoint, q->name, q->identity, q->token);
		rc = q->dry_run ? dry_run(cli, spec, site, &s, stage) : submit(cli, q, &s);
		gg_record_clear(&s.rec);
	}
	gg_session_stage_free(stage);
	gg_session_spec_free(spec);
	free(launcher);
	return rc;
}

int cmd_request(struct gg_cli *cli, int argc, char **argv)
{
	struct req q = {.wait = 1, .res.walltime = 4 * 3600};
	int rc = parse_opts(cli, argc, argv, &q);
	if (rc == 0)
		rc = request(cli, &q);
	gg_record_clear(&q.from);
	return rc == -2 ? EXIT_OK : rc;
}
