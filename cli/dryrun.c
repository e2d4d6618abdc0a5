/* --dry-run of request and submit: the job descriptions and the requests that
 * would be sent, nothing written, nothing sent. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "ctx.h"
#include "gridgpu/session.h"

/* "PUT /jobs/ID/session/NAME" into the list of uploads. */
static void append_upload(json_t *up, const char *name)
{
	char *s = gg_strdup_printf("PUT /jobs/ID/session/%s", name);
	gg_json_append(up, s ? gg_json_text(s) : NULL);
	free(s);
}

/* The matchmaking that chose the site (--site auto, --site A,B), as "match". */
static void with_match(struct gg_cli *cli, json_t *doc)
{
	if (cli->match && doc)
		gg_json_set(doc, "match", cli->match);
	else
		json_decref(cli->match);
	cli->match = NULL;
}

int cli_dry_run_session(struct gg_cli *cli, const struct gg_session_spec *spec,
			const struct gg_site *site, const struct gg_record *r)
{
	struct gg_jobdesc jd = {0};
	struct gg_err err = {0};
	char *xrsl = NULL;
	if (gg_session_describe(spec, site, r, "SESSION-KEY.pub", &jd, &err) < 0 ||
	    gg_jd_xrsl(&jd, &xrsl, &err) < 0) {
		gg_jd_clear(&jd);
		return ui_fail(cli, &err, "request");
	}
	if (cli->json) {
		static const char *const req[] = {
			"GET /rest",
			"POST /delegations?action=new (proxy auth only), PUT /delegations/ID",
			"POST /jobs?action=new", "PUT /jobs/ID/session/" GG_LAUNCHER_NAME,
			"PUT /jobs/ID/session/" GG_AUTHKEYS_NAME};
		json_t *reqs = json_array();
		for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
			gg_json_append(reqs, gg_json_text(req[i]));
		json_t *doc = gg_json_object("endpoint", gg_json_text(r->ce), "description",
					     gg_json_text(xrsl), "requests", reqs, NULL);
		with_match(cli, doc);
		ui_json_doc("dry-run", doc);
	} else {
		ui_out("# CE: %s\n# requests: GET %s/rest; POST delegations?action=new, "
		       "PUT delegations/ID (proxy auth); POST jobs?action=new; PUT "
		       "jobs/ID/session/%s and %s\n",
		       r->ce, r->ce, GG_LAUNCHER_NAME, GG_AUTHKEYS_NAME);
		ui_out_lines(xrsl); /* its values are the user's, the site's */
	}
	free(xrsl);
	gg_jd_clear(&jd);
	return EXIT_OK;
}

/* One job's description and uploads, shown or added to all (--json). */
static void show_job(struct gg_cli *cli, const struct gg_site *site, const struct gg_jobdesc *jd,
		     const char *xrsl, int i, int count, json_t *all)
{
	if (cli->json) {
		json_t *up = json_array();
		for (int k = 0; k < jd->ninputs; k++)
			if (jd->inputs[k].local)
				append_upload(up, jd->inputs[k].name);
		gg_json_append(all,
			       gg_json_object("site", gg_json_text(site->name), "ce",
					      gg_json_text(site->ce ? site->ce : ""), "description",
					      gg_json_text(xrsl), "uploads", up, NULL));
		return;
	}
	ui_out("# job %d of %d → site %s, CE %s\n# requests: POST delegations?action=new + PUT "
	       "(proxy auth); POST jobs?action=new;",
	       i + 1, count, site->name, site->ce ? site->ce : "?");
	for (int k = 0; k < jd->ninputs; k++)
		if (jd->inputs[k].local)
			ui_out(" PUT jobs/ID/session/%s", jd->inputs[k].name);
	putchar('\n');
	ui_out_lines(xrsl); /* its values are the user's, the site's */
}

int cli_dry_run_jobs(struct gg_cli *cli, const struct gg_job_spec *spec,
		     const struct gg_site *const *sites, int nsites, int count)
{
	json_t *all = json_array();
	for (int i = 0; i < count; i++) {
		const struct gg_site *site = sites[i % nsites];
		struct gg_record r = {.uid = (char *)"UID", .name = (char *)"job-N"};
		struct gg_jobdesc jd = {0};
		struct gg_err err = {0};
		char *x = NULL;
		if (gg_job_describe_nth(spec, site, &r, i, &jd, &err) < 0 ||
		    gg_jd_xrsl(&jd, &x, &err) < 0) {
			gg_jd_clear(&jd);
			json_decref(all);
			return ui_fail(cli, &err, "submit");
		}
		show_job(cli, site, &jd, x, i, count, all);
		free(x);
		gg_jd_clear(&jd);
	}
	if (cli->json) {
		json_t *doc = gg_json_object("items", all, NULL);
		with_match(cli, doc);
		ui_json_doc("dry-run", doc);
	} else {
		json_decref(all);
	}
	return EXIT_OK;
}
