/* A site profile's keys as site add and site set take them: each key's check
 * (the column 'check' of GG_SITE_KEYS, gridgpu/core.h), then its value stored
 * (lib/core/sitekey.c); and a profile as --json and as the lines of a change. */
#include <stdlib.h>
#include <string.h>

#include "ce/ce.h"
#include "gridgpu/site.h"
#include "engine/engine.h"
#include "gridgpu/gpu.h"
#include "ssh/ssh.h"

typedef int (*check_fn)(const struct gg_site_key *k, const char *v, struct gg_err *err);

static int check_none(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	(void)k, (void)v, (void)err;
	return 0;
}

static int check_ce_url(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	if (strncmp(v, "https://", 8) != 0)
		return gg_err_set(err, GG_EUSAGE, "--%s '%s': the CE URL must start with https://",
				  k->option, v);
	return 0;
}

static int check_jump(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	struct gg_ssh_jump jp;
	if (strchr(v, '/') || strchr(v, ','))
		gg_err_set(err, GG_EUSAGE, "expected [USER@]HOST[:PORT]");
	else if (gg_ssh_jump_parse(v, &jp, err) == 0)
		return 0;
	return gg_err_prefix(err, "--%s", k->option);
}

static int check_ssh_path(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	char what[64];
	snprintf(what, sizeof what, "--%s", k->option);
	return gg_ssh_cfg_check(what, v, GG_SSHV_PATH, err);
}

static int check_bind(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	char what[64];
	snprintf(what, sizeof what, "--%s", k->option);
	return gg_session_bind_check(what, v, err);
}

/* One of argname's words ("apptainer|bwrap"): "expected apptainer or bwrap". */
static int check_choice(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	char words[128] = "";
	size_t n = 0;
	for (const char *p = k->argname; *p;) {
		size_t len = strcspn(p, "|");
		if (strlen(v) == len && !strncmp(p, v, len))
			return 0;
		n += (size_t)snprintf(words + n, n < sizeof words ? sizeof words - n : 0, "%s%.*s",
				      !n       ? ""
				      : p[len] ? ", "
					       : " or ",
				      (int)len, p);
		p += len + (p[len] == '|');
	}
	return gg_err_set(err, GG_EUSAGE, "--%s '%s': expected %s", k->option, v, words);
}

/* A command to run, split into words as it will be (no shell). */
static int check_command(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	char **argv = NULL;
	if (gg_argv_split(v, &argv, err) < 0)
		return gg_err_prefix(err, "--%s", k->option);
	gg_argv_free(argv);
	return 0;
}

static int check_cache(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	return gg_data_cache_check(v, err) < 0 ? gg_err_prefix(err, "--%s", k->option) : 0;
}

/* A storage URL the CE can stage to once a name is added (checked as
 * BASE/NAME, $USER replaced). */
static int check_output_base(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	struct gg_site s = {.output_base = (char *)v};
	struct gg_data_url u;
	char *base = gg_site_output_base(&s);
	char *probe = base ? gg_strdup_printf("%sNAME", base) : NULL;
	int rc = probe ? gg_data_url_parse(probe, &u, err)
		       : gg_err_set(err, GG_ENOMEM, "out of memory");
	free(base);
	free(probe);
	return rc < 0 ? gg_err_prefix(err, "--%s '%s'", k->option, v) : 0;
}

/* What nvidia-smi names a GPU: printable ASCII, as NVML gives it. */
static int check_gpu_model(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	size_t n = strlen(v);
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] > 0x7e)
			n = 0;
	if (n == 0 || n > 95)
		return gg_err_set(err, GG_EUSAGE,
				  "--%s: expected the GPU's name as nvidia-smi prints it "
				  "(NVIDIA A100-SXM4-40GB)",
				  k->option);
	return 0;
}

/* digits alone, at most 'max' of them, not 0 */
static int digits(const char *v, size_t max)
{
	size_t n = strspn(v, "0123456789");
	return n && n == strlen(v) && n <= max && strspn(v, "0") < n;
}

static int check_mib(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	if (!digits(v, 9))
		return gg_err_set(err, GG_EUSAGE, "--%s '%s': expected MiB, a number (40960)",
				  k->option, v);
	return 0;
}

static int check_size(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	uint64_t n;
	if (gg_size_parse(v, &n, err) < 0 || n == 0)
		return gg_err_set(err, GG_EUSAGE, "--%s '%s': expected a size (2G, 500M)",
				  k->option, v);
	return 0;
}

static int check_count(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	if (!digits(v, 3))
		return gg_err_set(err, GG_EUSAGE, "--%s '%s': expected a count, 1 to 999",
				  k->option, v);
	return 0;
}

/* "8.0", "7.5", "10.0": what nvidia-smi's compute_cap prints. */
static int check_capability(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	const char *dot = strchr(v, '.');
	size_t n = dot ? (size_t)(dot - v) : 0;
	if (!dot || n < 1 || n > 2 || strspn(v, "0123456789") != n || strlen(dot + 1) != 1 ||
	    !strchr("0123456789", dot[1]) || *v == '0')
		return gg_err_set(err, GG_EUSAGE,
				  "--%s '%s': expected a CUDA compute capability, X.Y (8.0)",
				  k->option, v);
	return 0;
}

static int check_mig(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	return gg_mig_profile_check(v, err) < 0 ? gg_err_prefix(err, "--%s", k->option) : 0;
}

/* An architecture as uname -m names it: x86_64, aarch64, ppc64le. */
static int check_arch(const struct gg_site_key *k, const char *v, struct gg_err *err)
{
	const char *ok = "abcdefghijklmnopqrstuvwxyz0123456789_";
	if (!*v || strspn(v, ok) != strlen(v) || strlen(v) > 16)
		return gg_err_set(err, GG_EUSAGE,
				  "--%s '%s': expected an architecture as uname -m names it "
				  "(x86_64, aarch64)",
				  k->option, v);
	return 0;
}

#define CHECK_S(kind, field, option, shortopt, argname, dflt, flags, check, help) check_##check,
#define CHECK_L(kind, field, count, max, noun, key, option, shortopt, argname, check, help) \
	check_##check,
#define CHECK_D(field, option, dflt, help) check_none,
static const check_fn checks[] = {GG_SITE_KEYS(CHECK_S, CHECK_L, CHECK_D)};
_Static_assert(sizeof checks / sizeof checks[0] == GG_SITE_NKEYS, "a check for every key");

/* The key name stands for, or GG_EUSAGE. */
static const struct gg_site_key *find(const char *name, struct gg_err *err)
{
	const struct gg_site_key *k = gg_site_key_find(name);
	if (!k)
		gg_err_set(err, GG_EUSAGE, "unknown key '%s'", name ? name : "");
	return k;
}

/* value checked and stored in s as k's (a list's: one more). */
static int add(struct gg_site *s, const struct gg_site_key *k, const char *value,
	       struct gg_err *err)
{
	int rc = checks[gg_site_key_index(k)](k, value, err);
	if (rc < 0)
		return rc;
	if ((rc = gg_site_store(s, k, value, err)) < 0 && k->kind == GG_SK_DURATION)
		gg_err_prefix(err, "--%s", k->option);
	if (rc < 0 && k->kind == GG_SK_ADDRS && err) { /* "--allow-from '10.1.2.3/8': ..." */
		char msg[GG_ERR_MSG_MAX];
		memcpy(msg, err->msg, sizeof msg);
		gg_err_set(err, rc, "--%s %s", k->option, msg);
	}
	return rc;
}

int gg_site_add_value(struct gg_site *s, const char *name, const char *value, struct gg_err *err)
{
	const struct gg_site_key *k = find(name, err);
	if (!k)
		return GG_EUSAGE;
	/* a failure leaves s as it was: a list's value is appended, or not (all
	 * of an ADDRS value or none); other values are replaced once parsed */
	return add(s, k, value, err);
}

/* k of s, unset, set to value (a LIST's values separated by ','). */
static int set(struct gg_site *s, const struct gg_site_key *k, const char *value,
	       struct gg_err *err)
{
	if (!value[0])
		return 0;
	if (k->kind != GG_SK_LIST)
		return add(s, k, value, err);
	char *list = strdup(value), *save = NULL;
	int rc = list ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	for (char *v = list ? strtok_r(list, ",", &save) : NULL; v && !rc;
	     v = strtok_r(NULL, ",", &save))
		rc = add(s, k, v, err);
	free(list);
	return rc;
}

int gg_site_set_key(struct gg_site *s, const char *name, const char *value, struct gg_err *err)
{
	const struct gg_site_key *k = find(name, err);
	if (!k)
		return GG_EUSAGE;
	if (!value[0] && (k->flags & GG_SKF_REQUIRED))
		return gg_err_set(err, GG_EUSAGE, "site set: %s cannot be empty", k->option);
	/* set apart, then moved into s (what it had freed): s is unchanged on
	 * failure */
	struct gg_site tmp = {0};
	int rc = set(&tmp, k, value, err);
	if (rc == 0)
		gg_site_move_key(s, &tmp, k);
	gg_site_clear(&tmp);
	return rc;
}

int gg_site_check(const struct gg_site *s, struct gg_err *err)
{
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		const char *t = gg_site_get_text(s, k);
		int n = 0;
		gg_site_get_list(s, k, &n);
		if ((k->flags & GG_SKF_REQUIRED) && !(t && t[0]) && !n &&
		    !gg_site_get_duration(s, k))
			return gg_err_set(err, GG_EUSAGE, "--%s %s is required", k->option,
					  k->argname);
	}
	return 0;
}

json_t *gg_site_to_json(const struct gg_site *s)
{
	json_t *o = json_object();
	int rc = o ? gg_json_set_text(o, "name", s->name) : GG_ENOMEM;
	for (size_t i = 0; i < gg_site_key_count() && rc == 0; i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		int n;
		char *const *v = gg_site_get_list(s, k, &n);
		if (v) {
			json_t *a = json_array();
			for (int j = 0; a && j < n; j++)
				gg_json_append(a, gg_json_text(v[j]));
			rc = gg_json_set(o, k->field, a);
		} else if (gg_site_get_duration(s, k)) {
			rc = gg_json_set(o, k->field, json_integer(gg_site_get_duration(s, k)));
		} else {
			rc = gg_json_set_text(o, k->field, gg_site_get_text(s, k));
		}
	}
	if (rc < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int gg_site_changes(const struct gg_site *a, const struct gg_site *b, gg_site_change_fn fn,
		    void *ud)
{
	int changed = 0;
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		int oom_a, oom_b;
		char *va = gg_site_value_text(a, k, &oom_a), *vb = gg_site_value_text(b, k, &oom_b);
		int differ = (va || vb) && (!va || !vb || strcmp(va, vb));
		if (differ && !oom_a && !oom_b) {
			fn(ud, k, va, vb);
			changed++;
		}
		free(va);
		free(vb);
		if (oom_a || oom_b)
			return GG_ENOMEM;
	}
	return changed;
}
