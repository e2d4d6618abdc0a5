/* gridgpu request: an interactive GPU session on a site's CE. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"
#include "session/sync.h"
#include "ssh/ssh.h"

enum {
	O_CE = 256,
	O_NAME,
	O_GPUS,
	O_MIG,
	O_CPUS,
	O_MEMORY,
	O_WALLTIME,
	O_IMAGE,
	O_QUEUE,
	O_DEADLINE,
	O_IDLE,
	O_WAIT,
	O_NO_WAIT,
	O_DRY_RUN,
	O_IDENTITY,
	O_TIMEOUT,
	O_TOKEN,
};

const struct gg_opt cmd_request_opts[] = {
	{"ce", 0, OPT_ARG, "URL", "CE endpoint (instead of the site's)", O_CE},
	{"name", 'n', OPT_ARG, "NAME", "name of the session (default SITE-N)", O_NAME},
	{"gpus", 'g', OPT_ARG, "N", "whole GPUs", O_GPUS},
	{"mig", 0, OPT_ARG, "PROFILE", "a MIG slice instead, e.g. 1g.10gb", O_MIG},
	{"cpus", 'c', OPT_ARG, "N", "CPU cores", O_CPUS},
	{"memory", 'm', OPT_ARG, "SIZE", "memory, e.g. 16G", O_MEMORY},
	{"walltime", 't', OPT_ARG, "DUR", "how long the session may last (default 4h)", O_WALLTIME},
	{"image", 'i', OPT_ARG, "IMAGE", "container image the sshd runs in", O_IMAGE},
	{"queue", 0, OPT_ARG, "QUEUE", "queue (default from the site)", O_QUEUE},
	{"connect-deadline", 0, OPT_ARG, "DUR",
	 "end the session if nobody connects within DUR (20m)", O_DEADLINE},
	{"idle-limit", 0, OPT_ARG, "DUR", "end the session when idle for DUR", O_IDLE},
	{"wait", 'w', OPT_NONE, NULL, "wait until the session is ready (the default)", O_WAIT},
	{"no-wait", 0, OPT_NONE, NULL, "return once the job is submitted", O_NO_WAIT},
	{"timeout", 0, OPT_ARG, "DUR", "give up waiting after DUR (default: no limit)", O_TIMEOUT},
	{"identity", 0, OPT_FILE, "FILE", "your own ssh key instead of a per-session one",
	 O_IDENTITY},
	{"token", 0, OPT_NONE, NULL, "authenticate with a bearer token instead of the proxy",
	 O_TOKEN},
	{"dry-run", 0, OPT_NONE, NULL, "print the job description and requests, submit nothing",
	 O_DRY_RUN},
	OPT_END,
};

struct req {
	const char *ce, *name, *mig, *image, *queue, *identity;
	int gpus, cpus, wait, dry_run, token;
	uint64_t memory;
	int64_t walltime, deadline, idle, timeout;
};

static int parse_opts(struct gg_cli *cli, int argc, char **argv, struct req *q)
{
	struct gg_err err = {0};
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_request_opts)) > 0) {
		const char *v = cli->optarg;
		int rc = 0;
		switch (c) {
		case O_CE: q->ce = v; break;
		case O_NAME: q->name = v; break;
		case O_GPUS: rc = cli_opt_int(cli, 0, 64, &q->gpus); break;
		case O_MIG: q->mig = v; break;
		case O_CPUS: rc = cli_opt_int(cli, 1, 4096, &q->cpus); break;
		case O_MEMORY:
			if (gg_size_parse(v, &q->memory, &err) < 0)
				rc = ui_fail(cli, &err, "--memory");
			break;
		case O_WALLTIME:
		case O_DEADLINE:
		case O_IDLE:
		case O_TIMEOUT: {
			int64_t *d = c == O_WALLTIME   ? &q->walltime
				     : c == O_DEADLINE ? &q->deadline
				     : c == O_IDLE     ? &q->idle
						       : &q->timeout;
			if (gg_duration_parse(v, d, &err) < 0)
				rc = ui_fail(cli, &err, "--%s", cli->optname);
			else if (*d == 0 && c != O_IDLE)
				rc = ui_usage(cli, "--%s must be more than 0", cli->optname);
			break;
		}
		case O_IMAGE: q->image = v; break;
		case O_QUEUE: q->queue = v; break;
		case O_WAIT: q->wait = 1; break;
		case O_NO_WAIT: q->wait = 0; break;
		case O_DRY_RUN: q->dry_run = 1; break;
		case O_IDENTITY: q->identity = v; break;
		case O_TOKEN: q->token = 1; break;
		}
		if (rc)
			return rc < 0 ? EXIT_USAGE : rc;
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	if (argc - cli->optind > 0)
		return ui_usage(cli, "request takes no arguments ('%s'?)", argv[cli->optind]);
	if (q->gpus && q->mig)
		return ui_usage(cli, "--gpus and --mig exclude each other");
	if (q->name && !gg_record_name_valid(q->name))
		return ui_usage(cli, "--name: use a letter, then letters, digits, '_', '-'");
	if (q->name && gg_ssh_session_name_ok(q->name, &err) < 0)
		return ui_usage(cli, "--name: %s", err.msg);
	if (q->identity && gg_ssh_cfg_check("--identity", q->identity, GG_SSHV_PATH, &err) < 0)
		return ui_usage(cli, "%s", err.msg);
	return 0;
}

/* The job description of a session. */
static int build_jd(const struct req *q, const struct gg_site *site, const struct gg_record *r,
		    const char *launcher, const char *pubkey, struct gg_jobdesc *jd,
		    struct gg_err *err)
{
	char buf[64];
	int rc = 0;
	char *jobname = gg_strdup_printf("gridgpu-%s", r->uid);
	rc = gg_jd_set(&jd->name, jobname, err);
	free(jobname);
	if (rc == 0)
		rc = gg_jd_set(&jd->executable, "/bin/sh", err);
	if (rc == 0)
		rc = gg_jd_arg(jd, GG_LAUNCHER_NAME, err);
	snprintf(buf, sizeof buf, "%lld", (long long)q->deadline);
	if (rc == 0 && (rc = gg_jd_arg(jd, "-d", err)) == 0)
		rc = gg_jd_arg(jd, buf, err);
	snprintf(buf, sizeof buf, "%lld", (long long)q->idle);
	if (rc == 0 && (rc = gg_jd_arg(jd, "-i", err)) == 0)
		rc = gg_jd_arg(jd, buf, err);
	if (rc == 0 && site && site->worker_address && (rc = gg_jd_arg(jd, "-a", err)) == 0)
		rc = gg_jd_arg(jd, site->worker_address, err);
	if (rc == 0 && q->image && (rc = gg_jd_arg(jd, "-c", err)) == 0)
		rc = gg_jd_arg(jd, q->image, err);
	if (rc == 0 && (q->gpus || q->mig))
		rc = gg_jd_arg(jd, "-g", err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_LAUNCHER_NAME, NULL, launcher, err);
	if (rc == 0)
		rc = gg_jd_input(jd, GG_AUTHKEYS_NAME, NULL, pubkey, err);
	if (rc == 0)
		rc = gg_jd_output(jd, GG_SESSION_FILE, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stderr_name, GG_LAUNCHER_LOG, err);
	if (rc == 0)
		rc = gg_jd_set(&jd->stdout_name, GG_LAUNCHER_LOG, err);
	struct gg_jd_resources res = {.walltime = q->walltime,
				      .cpus = q->cpus,
				      .memory = q->memory,
				      .queue = q->queue,
				      .gpus = q->gpus,
				      .mig = q->mig};
	if (rc == 0)
		rc = gg_jd_resources(jd, &res, site, err);
	if (rc == 0)
		rc = gg_jd_env(jd, "GRIDGPU_SESSION", r->name, err);
	return rc;
}

static int set_failed(struct gg_record *r, void *ud)
{
	if (gg_sess_state_ended(r->state))
		return 1; /* a kill meanwhile wins */
	r->state = GG_S_FAILED;
	free(r->error);
	r->error = strdup((const char *)ud);
	return 0;
}

static int set_key(struct gg_record *r, void *ud)
{
	if (gg_sess_state_ended(r->state))
		return 1;
	free(r->key);
	r->key = strdup((const char *)ud);
	return 0;
}

struct submitted {
	const char *job_id;
	const char *key;
};

static int set_submitted(struct gg_record *r, void *ud)
{
	const struct submitted *s = ud;
	free(r->job_id);
	r->job_id = strdup(s->job_id);
	/* killed while it was being submitted: stays killed (the caller cancels
	 * the job it just made) */
	if (r->state != GG_S_KILLED)
		r->state = GG_S_QUEUED;
	return 0;
}

static void print_ready(struct gg_cli *cli, const struct gg_record *r, const char *config)
{
	if (cli->json) {
		ui_json(gg_record_to_json(r));
		return;
	}
	char fp[80] = "";
	gg_ssh_fingerprint(r->host_key, fp, sizeof fp, NULL);
	ui_out("Session %s is ready: %s@%s port %d, host key %s (pinned)\n", r->name,
	       r->user ? r->user : "?", r->node, r->port, fp);
	ui_out("Connect with:  gridgpu connect %s\n", r->name);
	ui_out("          or:  ssh -F %s %s\n", config, r->name);
}

int cmd_request(struct gg_cli *cli, int argc, char **argv)
{
	struct req q = {.wait = 1, .walltime = 4 * 3600};
	int rc = parse_opts(cli, argc, argv, &q);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	struct gg_err err = {0};
	const struct gg_site *site = cli_site(cli, q.ce == NULL);
	if (!site && (!q.ce || cli->site))
		return cli->cfg_exit ? cli->cfg_exit : EXIT_USAGE;
	const char *endpoint = q.ce ? q.ce : site->ce;
	if (!endpoint)
		return ui_usage(cli, "site '%s' has no CE URL: 'gridgpu site add %s --ce URL'",
				site->name, site->name);
	if (!q.deadline)
		q.deadline = site && site->connect_deadline ? site->connect_deadline : 20 * 60;
	if (!q.idle && site && site->idle_limit)
		q.idle = site->idle_limit;
	if (!q.image && site && site->image)
		q.image = site->image;

	/* The credential must outlast the walltime. */
	struct cli_auth auth = {0};
	if (!q.dry_run &&
	    cli_auth(cli, site, q.token ? "token" : NULL, q.walltime, &auth, &err) < 0)
		return ui_fail(cli, &err, "request");

	char *launcher = cli_launcher_path();
	if (!launcher || access(launcher, R_OK) < 0) {
		gg_err_set(&err, GG_EFAIL,
			   "the session launcher '%s' is missing: reinstall gridgpu",
			   launcher ? launcher : "");
		free(launcher);
		cli_auth_clear(&auth);
		return ui_fail(cli, &err, "request");
	}

	struct gg_record r = {.kind = GG_REC_SESSION,
			      .walltime = q.walltime,
			      .gpus = q.gpus,
			      .cpus = q.cpus,
			      .memory = q.memory,
			      .connect_deadline = q.deadline,
			      .idle_limit = q.idle,
			      .state = GG_S_REQUESTED};
	char uid[13];
	struct gg_store *st = NULL;
	struct gg_ce *ce = NULL;
	struct gg_jobdesc jd = {0};
	struct gg_ssh_paths sp = {0};
	char *xrsl = NULL, *job_id = NULL, *pub = NULL, *deleg = NULL;
	int exit_code = EXIT_OK, posted = 0;
	if (gg_random_uid(uid, &err) < 0) {
		exit_code = ui_fail(cli, &err, "request");
		goto out;
	}
	r.uid = strdup(uid);
	r.site = site ? strdup(site->name) : NULL;
	r.ce = strdup(endpoint);
	r.mig = q.mig ? strdup(q.mig) : NULL;
	r.image = q.image ? strdup(q.image) : NULL;
	r.auth = strdup(q.token ? "token" : site && site->auth ? site->auth : "proxy");
	r.name = q.name ? strdup(q.name) : NULL;
	/* default names SITE-N, without the '.' a session name may not have */
	char prefix[80];
	snprintf(prefix, sizeof prefix, "%s", site ? site->name : "session");
	for (char *d = prefix; (d = strchr(d, '.'));)
		*d = '-';

	if (q.dry_run) {
		/* Nothing is written: show what would be sent. */
		if (!r.name)
			r.name = gg_strdup_printf("%s-N", prefix);
		if (build_jd(&q, site, &r, launcher, "SESSION-KEY.pub", &jd, &err) < 0 ||
		    gg_jd_xrsl(&jd, &xrsl, &err) < 0) {
			exit_code = ui_fail(cli, &err, "request");
			goto out;
		}
		if (cli->json) {
			ui_json(json_pack(
				"{s:s,s:s,s:[s,s,s,s,s]}", "endpoint", endpoint, "description",
				xrsl, "requests", "GET /rest",
				"POST /delegations?action=new (proxy auth only), PUT /delegations/ID",
				"POST /jobs?action=new", "PUT /jobs/ID/session/" GG_LAUNCHER_NAME,
				"PUT /jobs/ID/session/" GG_AUTHKEYS_NAME));
		} else {
			ui_out("# CE: %s\n# requests: GET %s/rest; POST delegations?action=new, "
			       "PUT delegations/ID (proxy auth); POST jobs?action=new; PUT "
			       "jobs/ID/session/%s and %s\n",
			       endpoint, endpoint, GG_LAUNCHER_NAME, GG_AUTHKEYS_NAME);
			fputs(xrsl, stdout); /* ours: the values are quoted */
		}
		goto out;
	}

	/* 1. The record first: a crash after submit leaves a job that the next
	 * 'list --sync' can adopt by its job name. */
	if (!(st = cli_store(cli))) {
		exit_code = cli->cfg_exit;
		goto out;
	}
	/* The key's path is in the record from the start: a crash while the key
	 * is made still leaves a record that kill/clean can remove it by. */
	if (gg_ssh_paths_init(&sp, &err) < 0) {
		exit_code = ui_fail(cli, &err, "request");
		goto out;
	}
	if (q.identity) {
		pub = gg_strdup_printf("%s.pub", q.identity);
		if (access(pub, R_OK) < 0) {
			gg_err_set(&err, GG_EUSAGE, "--identity: no public key '%s' beside it",
				   pub);
			exit_code = ui_fail(cli, &err, "request");
			goto out;
		}
	}
	r.key = q.identity ? strdup(q.identity) : gg_strdup_printf("%s/%s", sp.keys, r.uid);
	if (gg_store_create(st, &r, prefix, &err) < 0) {
		exit_code = ui_fail(cli, &err, "request");
		goto out;
	}
	cli_catch_interrupt();

	/* 2. The session key. */
	if (!q.identity) {
		char *comment = gg_strdup_printf("gridgpu-session-%s", r.name);
		int krc = gg_ssh_keygen(r.key, comment, &err);
		free(comment);
		if (krc < 0)
			goto fail;
		pub = gg_strdup_printf("%s.pub", r.key);
	}
	/* Only the key: anything else may have changed meanwhile (a kill). */
	struct gg_record now;
	if (gg_store_update(st, r.name, set_key, r.key, &now, &err) < 0)
		goto fail;
	enum gg_sess_state st_now = now.state;
	gg_record_clear(&now);
	if (st_now == GG_S_KILLED) {
		gg_err_set(&err, GG_EJOB, "killed before it was submitted");
		exit_code = ui_fail(cli, &err, "request %s", r.name);
		if (!q.identity)
			gg_ssh_key_remove(r.key);
		goto out;
	}

	/* 3. Delegate (proxy), submit, stage the launcher and the key. */
	if (build_jd(&q, site, &r, launcher, pub, &jd, &err) < 0)
		goto fail;
	if (cli_open_ce(endpoint, &auth, &ce, &err) < 0)
		goto fail;
	if (auth.proxy_path) {
		char *state_dir = NULL, *cache = NULL;
		if (gg_xdg_dir(GG_XDG_STATE, &state_dir, &err) == 0)
			cache = gg_strdup_printf("%s/delegations.json", state_dir);
		free(state_dir);
		int drc = gg_ce_delegate(ce, auth.proxy_path, q.walltime, cache, &deleg, &err);
		free(cache);
		if (drc < 0) {
			gg_err_prefix(&err, "delegating to %s", endpoint);
			goto fail;
		}
		gg_jd_set(&jd.delegation_id, deleg, NULL);
	}
	if (gg_jd_xrsl(&jd, &xrsl, &err) < 0)
		goto fail;
	if (cli_interrupted()) {
		gg_err_set(&err, GG_EINTR, "interrupted before submitting");
		goto fail;
	}
	posted = 1;
	if (gg_ce_submit(ce, xrsl, &job_id, &err) < 0)
		goto fail;
	struct submitted sub = {job_id, r.key};
	struct gg_record saved;
	if (gg_store_update(st, r.name, set_submitted, &sub, &saved, &err) < 0)
		goto fail;
	gg_record_clear(&r);
	r = saved;
	if (r.state == GG_S_KILLED) {
		const char *ids[1] = {job_id};
		struct gg_ce_result *res = NULL;
		gg_ce_put(ce, job_id, "stop", "", 0, NULL);
		if (gg_ce_kill(ce, ids, 1, &res, NULL) == 0)
			gg_ce_results_free(res, 1);
		gg_err_set(&err, GG_EJOB, "killed while it was being submitted (job %s cancelled)",
			   job_id);
		exit_code = ui_fail(cli, &err, "request %s", r.name);
		goto out;
	}
	ui_info(cli, "submitted %s to %s (job %s)", r.name, endpoint, job_id);
	for (int i = 0; i < jd.ninputs; i++) {
		if (gg_ce_put_file(ce, job_id, jd.inputs[i].name, jd.inputs[i].local, NULL, NULL,
				   &err) < 0) {
			gg_err_prefix(&err, "uploading %s", jd.inputs[i].name);
			/* A half-staged job waits forever for its inputs: remove it. */
			gg_ce_cancel(ce, job_id);
			goto fail;
		}
	}
	if (cli->verbose)
		ui_info(cli, "%ld TLS connection(s) to the CE so far",
			gg_http_connections(gg_ce_http(ce)));
	if (!q.wait) {
		if (cli->json)
			ui_json(gg_record_to_json(&r));
		else
			ui_out("%s\n", r.name);
		ui_info(cli, "'gridgpu connect %s' waits for it and connects", r.name);
		goto out;
	}

	/* 4. Wait for the launcher to publish the sshd; pin its host key. */
	int wrc = cli_wait_ready(cli, st, ce, &r, q.timeout, &err);
	if (wrc == GG_EINTR) {
		fprintf(stderr,
			"gridgpu: request: interrupted: session %s keeps starting on the CE; "
			"'gridgpu connect %s' waits for it, 'gridgpu kill %s' ends it\n",
			r.name, r.name, r.name);
		exit_code = EXIT_INTR;
		goto out;
	}
	if (wrc < 0) {
		exit_code = ui_fail(cli, &err, "request %s", r.name);
		goto out;
	}
	if (r.state != GG_S_READY) {
		gg_err_set(&err, GG_EJOB, "session %s: %s", gg_sess_state_name(r.state),
			   r.error ? r.error : "ended before it was ready");
		exit_code = ui_fail(cli, &err, "request %s", r.name);
		cli_write_ssh_config(cli, st, &err);
		goto out;
	}
	if (cli_write_ssh_config(cli, st, &err) < 0) {
		exit_code = ui_fail(cli, &err, "writing the SSH configuration");
		goto out;
	}
	print_ready(cli, &r, sp.config);
	goto out;

fail:
	if (job_id && !r.job_id && ce) /* a job that could not be recorded (the record
					  was killed and cleaned meanwhile) must not run unseen */
		gg_ce_cancel(ce, job_id);
	if (posted && !job_id && ce && gg_ce_submit_unsent(ce)) {
		/* Refused connection, TLS handshake, DNS: the CE has no job. */
		gg_err_prefix(&err, "the CE was not reached, nothing was sent");
		posted = 0;
	}
	if (st && r.name && !r.job_id && posted && !job_id &&
	    (err.code == GG_ENET || err.code == GG_EPROTO || err.code == GG_EINTR)) {
		/* The submission may have reached the CE: keep the record (and the
		 * key) so that 'list --sync' finds the job by its name. */
		gg_err_prefix(&err, "the CE may have the job ('gridgpu list --sync' adopts it)");
		exit_code = ui_fail(cli, &err, "request %s", r.name);
		goto out;
	}
	exit_code = ui_fail(cli, &err, "request%s%s", r.name ? " " : "", r.name ? r.name : "");
	if (st && r.name && !r.job_id) {
		/* Nothing reached the CE: nothing to adopt, nothing to keep. */
		if (r.key && !q.identity)
			gg_ssh_key_remove(r.key);
		gg_store_remove(st, r.name, NULL);
	} else if (st && r.name) {
		gg_store_update(st, r.name, set_failed, err.msg, NULL, NULL);
	}
out:
	free(launcher);
	free(xrsl);
	free(job_id);
	free(pub);
	free(deleg);
	gg_jd_clear(&jd);
	gg_ce_free(ce);
	gg_store_free(st);
	gg_ssh_paths_clear(&sp);
	gg_record_clear(&r);
	cli_auth_clear(&auth);
	return exit_code;
}
