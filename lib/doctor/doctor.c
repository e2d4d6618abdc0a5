/* The doctor's handle: what to check, the run, the results and their JSON. */
#include <stdlib.h>
#include <string.h>

#include "core/run.h"
#include "cred/cred.h"
#include "doctor/doctor.h"

static const char *const status_name[] = {"ok", "fail", "skip"};

int gg_doctor_new(struct gg_doctor **out, struct gg_err *err)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	(*out)->valid = GG_DOCTOR_VALID;
	(*out)->version_ms = 10000;
	return 0;
}

void gg_doctor_free(struct gg_doctor *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->c[i].id);
		free(d->c[i].title);
		free(d->c[i].detail);
		free(d->c[i].fix);
	}
	free(d->c);
	free(d->config_path);
	free(d->site_name);
	free(d->ca_dir);
	free(d->ssh_path);
	gg_config_free(d->cfg);
	free(d);
}

static int set_text(char **field, const char *value, struct gg_err *err)
{
	char *v = value ? strdup(value) : NULL;
	if (value && !v)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	free(*field);
	*field = v;
	return 0;
}

int gg_doctor_set_config(struct gg_doctor *d, const char *path, struct gg_err *err)
{
	return set_text(&d->config_path, path, err);
}

int gg_doctor_set_site(struct gg_doctor *d, const char *site, struct gg_err *err)
{
	return set_text(&d->site_name, site, err);
}

void gg_doctor_set_valid(struct gg_doctor *d, int64_t secs)
{
	d->valid = secs;
}

void gg_doctor_set_engine(struct gg_doctor *d, struct gg_engine *e)
{
	d->engine = e;
}

void gg_doctor_set_progress(struct gg_doctor *d, gg_doctor_progress_fn fn, void *ud)
{
	d->progress = fn;
	d->progress_ud = ud;
}

void gg_doctor_add(struct gg_doctor *d, const char *id, const char *title, enum gg_doctor_status st,
		   char *detail, char *fix)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct gg_doctor_check *nc = realloc(d->c, cap * sizeof *nc);
		if (!nc) {
			d->oom = 1;
			free(detail);
			free(fix);
			return;
		}
		d->c = nc;
		d->cap = cap;
	}
	struct gg_doctor_check *c = &d->c[d->n++];
	c->id = strdup(id);
	c->title = strdup(title);
	c->st = st;
	c->detail = detail;
	c->fix = fix;
	if (!c->id || !c->title)
		d->oom = 1;
	else if (d->progress)
		d->progress(d->progress_ud, d, d->n - 1);
}

int gg_doctor_exec(char *const argv[], int ms, char *line, size_t len)
{
	struct gg_run r;
	line[0] = '\0';
	if (gg_run_capture(argv, ms, 16384, &r, NULL) < 0)
		return -1;
	gg_run_last_line(&r, line, len);
	int st = r.status;
	gg_run_clear(&r);
	return st;
}

int gg_doctor_run(struct gg_doctor *d, struct gg_err *err)
{
	if (d->ran)
		return gg_err_set(err, GG_EUSAGE, "the doctor's checks have run already");
	d->ran = 1;
	gg_doctor_check_config(d);
	d->auth_kind = d->site && d->site->auth ? d->site->auth : "proxy";
	if (d->site && !strcmp(gg_site_auth_kind(d->site), "ssh"))
		d->auth_kind = "ssh"; /* slurm+ssh: the user's ssh key */
	struct gg_err e2 = {0};
	if (gg_cred_ca_dir(d->site ? d->site->ca_dir : NULL, &d->ca_dir, &e2) < 0)
		d->ca_dir = NULL;
	gg_doctor_check_proxy(d);
	gg_doctor_check_token(d);
	gg_doctor_check_ca_dir(d);
	gg_doctor_check_ce(d);
	gg_doctor_check_tool(d, "ssh");
	gg_doctor_check_tool(d, "ssh-keygen");
	gg_doctor_check_jumps(d);
	gg_doctor_check_session(d);
	if (d->oom)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return 0;
}

size_t gg_doctor_count(const struct gg_doctor *d)
{
	return d->n;
}

const char *gg_doctor_id(const struct gg_doctor *d, size_t i)
{
	return i < d->n ? d->c[i].id : NULL;
}

const char *gg_doctor_title(const struct gg_doctor *d, size_t i)
{
	return i < d->n ? d->c[i].title : NULL;
}

enum gg_doctor_status gg_doctor_status(const struct gg_doctor *d, size_t i)
{
	return i < d->n ? d->c[i].st : GG_DOCTOR_SKIP;
}

const char *gg_doctor_detail(const struct gg_doctor *d, size_t i)
{
	return i < d->n ? d->c[i].detail : NULL;
}

const char *gg_doctor_fix(const struct gg_doctor *d, size_t i)
{
	return i < d->n ? d->c[i].fix : NULL;
}

size_t gg_doctor_tally(const struct gg_doctor *d, enum gg_doctor_status st)
{
	size_t n = 0;
	for (size_t i = 0; i < d->n; i++)
		n += d->c[i].st == st;
	return n;
}

const char *gg_doctor_status_name(enum gg_doctor_status st)
{
	return (unsigned)st < 3 ? status_name[st] : "?";
}

const struct gg_site *gg_doctor_site(const struct gg_doctor *d)
{
	return d->site;
}

json_t *gg_doctor_json(const struct gg_doctor *d)
{
	json_t *a = json_array();
	for (size_t i = 0; i < d->n; i++) {
		const struct gg_doctor_check *c = &d->c[i];
		gg_json_append(a, gg_json_object("id", gg_json_text(c->id), "name",
						 gg_json_text(c->title), "status",
						 gg_json_text(status_name[c->st]), "detail",
						 gg_json_text(c->detail), "fix",
						 gg_json_text(c->fix), NULL));
	}
	return gg_json_object(
		"site", gg_json_text(d->site ? d->site->name : NULL), "checks", a, "passed",
		json_integer((json_int_t)gg_doctor_tally(d, GG_DOCTOR_OK)), "failed",
		json_integer((json_int_t)gg_doctor_tally(d, GG_DOCTOR_FAIL)), "skipped",
		json_integer((json_int_t)gg_doctor_tally(d, GG_DOCTOR_SKIP)), NULL);
}
