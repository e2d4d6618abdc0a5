/* What a CE says it offers, from its GLUE2 information (A-REX REST: GET
 * info?schema=glue2, as JSON): the service's running and waiting jobs, each
 * share's (queue's) free slots and jobs, the batch system's total slots, the
 * runtime environments, the nodes' platform and OS. The document comes from
 * outside: every number is checked (GLUE2 JSON gives them as strings of
 * digits), every text kept only when it is short printable ASCII; what is not
 * there, or not as expected, is left out, never guessed. */
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"

#define G2_MAX_SHARES 64
#define G2_MAX_RTES   256
#define G2_MAX_TEXT   128

/* One element comes as an object, many as an array: iterate both alike. */
static json_t *as_array(json_t *v)
{
	if (json_is_array(v))
		return json_incref(v);
	json_t *a = json_array();
	if (v && a)
		json_array_append(a, v);
	return a;
}

/* A count: a JSON integer or a string of 1 to 9 digits; -1 when neither. */
static json_int_t count(json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 && json_integer_value(v) < 1000000000
			       ? json_integer_value(v)
			       : -1;
	const char *s = json_string_value(v);
	size_t n = s ? strspn(s, "0123456789") : 0;
	return n && n == strlen(s) && n < 10 ? (json_int_t)strtoll(s, NULL, 10) : -1;
}

/* A text that is printable ASCII and short, else NULL. */
static const char *text(json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (!n || n > G2_MAX_TEXT)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return NULL;
	return s;
}

static void set_count(json_t *o, const char *key, json_t *v)
{
	json_int_t n = count(v);
	if (n >= 0)
		gg_json_set(o, key, json_integer(n));
}

static void set_text(json_t *o, const char *key, json_t *v)
{
	const char *s = text(v);
	if (s)
		gg_json_set_text(o, key, s);
}

static json_t *share(json_t *sh)
{
	json_t *o = json_object();
	set_text(o, "name", json_object_get(sh, "Name"));
	set_count(o, "free_slots", json_object_get(sh, "FreeSlots"));
	set_count(o, "running", json_object_get(sh, "RunningJobs"));
	set_count(o, "waiting", json_object_get(sh, "WaitingJobs"));
	return o;
}

/* The manager's total slots, RTEs, and its first execution environment's
 * platform and OS, into o. */
static void manager(json_t *m, json_t *o, json_t *rtes)
{
	if (!json_object_get(o, "total_slots"))
		set_count(o, "total_slots", json_object_get(m, "TotalSlots"));
	if (!json_object_get(o, "batch_system"))
		set_text(o, "batch_system", json_object_get(m, "ProductName"));
	json_t *aes = as_array(json_object_get(json_object_get(m, "ApplicationEnvironments"),
					       "ApplicationEnvironment"));
	size_t i;
	json_t *ae;
	json_array_foreach (aes, i, ae) {
		const char *name = text(json_object_get(ae, "AppName"));
		if (name && json_array_size(rtes) < G2_MAX_RTES)
			gg_json_append(rtes, gg_json_text(name));
	}
	json_decref(aes);
	json_t *envs = as_array(json_object_get(json_object_get(m, "ExecutionEnvironments"),
						"ExecutionEnvironment"));
	json_t *env = json_array_get(envs, 0);
	if (env && !json_object_get(o, "platform")) {
		set_text(o, "platform", json_object_get(env, "Platform"));
		const char *os = text(json_object_get(env, "OSName"));
		const char *ver = text(json_object_get(env, "OSVersion"));
		if (os) {
			char buf[2 * G2_MAX_TEXT + 2];
			snprintf(buf, sizeof buf, "%s%s%s", os, ver ? " " : "", ver ? ver : "");
			gg_json_set_text(o, "os", buf);
		}
	}
	json_decref(envs);
}

static void service(json_t *s, json_t *o, json_t *shares, json_t *rtes)
{
	if (!json_object_get(o, "name"))
		set_text(o, "name", json_object_get(s, "Name"));
	if (!json_object_get(o, "running"))
		set_count(o, "running", json_object_get(s, "RunningJobs"));
	if (!json_object_get(o, "waiting")) {
		json_int_t w = count(json_object_get(s, "WaitingJobs"));
		json_int_t pre = count(json_object_get(s, "PreLRMSWaitingJobs"));
		if (w >= 0)
			gg_json_set(o, "waiting", json_integer(w + (pre > 0 ? pre : 0)));
	}
	json_t *list = as_array(json_object_get(s, "ComputingShare"));
	size_t i;
	json_t *sh;
	json_array_foreach (list, i, sh)
		if (json_is_object(sh) && json_array_size(shares) < G2_MAX_SHARES)
			gg_json_append(shares, share(sh));
	json_decref(list);
	json_t *mgrs = as_array(json_object_get(s, "ComputingManager"));
	json_t *m;
	json_array_foreach (mgrs, i, m)
		if (json_is_object(m))
			manager(m, o, rtes);
	json_decref(mgrs);
}

int gg_glue2_offer_json(json_t *doc, json_t **out, struct gg_err *err)
{
	*out = NULL;
	json_t *svc = json_object_get(
		json_object_get(json_object_get(json_object_get(doc, "Domains"), "AdminDomain"),
				"Services"),
		"ComputingService");
	if (!json_is_object(svc) && !json_is_array(svc))
		return gg_err_set(err, GG_EPROTO,
				  "the CE's information is not GLUE2 (no ComputingService)");
	json_t *o = json_object(), *shares = json_array(), *rtes = json_array();
	json_t *svcs = as_array(svc);
	size_t i;
	json_t *s;
	json_array_foreach (svcs, i, s)
		if (json_is_object(s))
			service(s, o, shares, rtes);
	json_decref(svcs);
	gg_json_set(o, "shares", shares);
	gg_json_set(o, "rtes", rtes);
	if (!o || !shares || !rtes) {
		json_decref(o);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*out = o;
	return 0;
}

int gg_glue2_offer(const char *body, size_t len, json_t **out, struct gg_err *err)
{
	*out = NULL;
	struct gg_http_resp fake = {.body = (char *)body, .len = len};
	json_t *j = NULL;
	int rc = gg_http_resp_json(&fake, &j, err);
	if (rc == 0)
		rc = gg_glue2_offer_json(j, out, err);
	json_decref(j);
	return rc;
}
