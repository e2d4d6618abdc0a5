/* gridgpu check's node side: the probe that runs the user's command the same way in
 * the live session and in the image (through the real batch wrapper, on the session's
 * node), the commands that carry it there, and the strict parser of what the probe
 * says (outside text: the image's shell and the command's environment write it).
 *
 * The probe is POSIX sh that uses only the shell's builtins (an image may have no
 * sed, awk or base64): the environment comes from `export -p`, which every POSIX
 * shell prints as sh words, so the parser reads sh quoting ('...', "...", \x). */
#include <stdlib.h>
#include <string.h>

#include "node/check.h"
#include "node/node.h"

/* $0 gridgpu-check, then MODULE... -- COMMAND...: what it resolves, the environment,
 * then the command (its output on stderr) and how it ended. */
static const char probe[] =
	"m=''; while [ $# -gt 0 ] && [ \"$1\" != -- ]; do m=\"$m $1\"; shift; done; shift; "
	"nl='\n'; p() { printf '%s\\n' \"$*\"; }; p 'gridgpu-check 1'; p home \"${HOME:-}\"; "
	"w=$(command -v \"$1\" 2>/dev/null) || w=-; p which \"$w\"; "
	"for x in $m; do "
	"  if ! command -v python3 >/dev/null 2>&1; then p module \"$x\" nopython -; "
	"  elif o=$(python3 -c 'import importlib,sys; m=importlib.import_module(sys.argv[1]); "
	"print(getattr(m, \"__file__\", None) or \"(built in)\")' \"$x\" 2>&1); "
	"  then p module \"$x\" ok \"${o##*$nl}\"; "
	"  else p module \"$x\" no \"${o##*$nl}\"; fi; done; "
	"p env-begin; export -p; p env-end; "
	"\"$@\" >&2; p exit $?";

char *gg_check_probe_words(const char *const *mods, size_t nmods, char *const *cmd, size_t ncmd)
{
	char *out = gg_node_sh_quote("/bin/sh");
	const char *fixed[] = {"-c", probe, "gridgpu-check"};
	for (size_t i = 0; out && i < 3 + nmods + 1 + ncmd; i++) {
		const char *w = i < 3            ? fixed[i]
				: i < 3 + nmods  ? mods[i - 3]
				: i == 3 + nmods ? "--"
						 : cmd[i - 4 - nmods];
		char *q = gg_node_sh_quote(w);
		char *n = q ? gg_strdup_printf("%s %s", out, q) : NULL;
		free(q);
		free(out);
		out = n;
	}
	return out;
}

int gg_check_module_ok(const char *m)
{
	if (!m || !*m || strlen(m) > 128 || m[0] == '.' || m[strlen(m) - 1] == '.')
		return 0;
	for (const char *p = m; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
		      (p > m && ((*p >= '0' && *p <= '9') || (*p == '.' && p[-1] != '.')))))
			return 0;
	return 1;
}

/* ---- the parser -------------------------------------------------------------------- */

struct rd {
	const char *p, *end;
};

static char *take(const char *s, size_t n)
{
	char *r = malloc(n + 1);
	if (r) {
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

/* The next line (without its end), or NULL at the end of the text. */
static const char *next_line(struct rd *r, size_t *n)
{
	if (r->p >= r->end)
		return NULL;
	const char *s = r->p, *nl = memchr(s, '\n', (size_t)(r->end - s));
	*n = nl ? (size_t)(nl - s) : (size_t)(r->end - s);
	r->p = nl ? nl + 1 : r->end;
	return s;
}

/* One sh word at r->p up to an unquoted blank or line end, unquoted into *out. */
static int sh_word(struct rd *r, char **out, struct gg_err *err)
{
	char *buf = malloc((size_t)(r->end - r->p) + 1);
	size_t n = 0;
	if (!buf)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	while (r->p < r->end && *r->p != '\n' && *r->p != ' ') {
		char c = *r->p++;
		if (c == '\\' && r->p < r->end) {
			buf[n++] = *r->p++;
		} else if (c == '\'') {
			while (r->p < r->end && *r->p != '\'')
				buf[n++] = *r->p++;
			if (r->p++ >= r->end)
				goto open;
		} else if (c == '"') {
			while (r->p < r->end && *r->p != '"') {
				if (*r->p == '\\' && r->p + 1 < r->end && strchr("\\\"$`", r->p[1]))
					r->p++;
				buf[n++] = *r->p++;
			}
			if (r->p++ >= r->end)
				goto open;
		} else {
			buf[n++] = c;
		}
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
open:
	free(buf);
	return gg_err_set(err, GG_EPROTO, "a quoted value of the environment does not end");
}

static int is_name(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

static int add_env(struct gg_check_report *rep, char *name, char *value, struct gg_err *err)
{
	if (rep->nenv == GG_CHECK_MAX_ENV) {
		free(name);
		free(value);
		return gg_err_set(err, GG_EPROTO, "more than %d variables in the environment",
				  GG_CHECK_MAX_ENV);
	}
	if (gg_check_env_get(rep, name)) {
		free(name);
		free(value);
		return gg_err_set(err, GG_EPROTO, "a variable twice in the environment");
	}
	rep->env[rep->nenv].name = name;
	rep->env[rep->nenv++].value = value;
	return 0;
}

/* One statement of export -p: "export NAME[=WORD]" (dash, bash --posix) or
 * "declare -x NAME[=WORD]" (bash); a name without a value is left out. */
static int env_stmt(struct rd *r, struct gg_check_report *rep, struct gg_err *err)
{
	static const char *const heads[] = {"export ", "declare -x ", "declare -rx "};
	size_t h = 0, left = (size_t)(r->end - r->p);
	while (h < 3 && (left < strlen(heads[h]) || memcmp(r->p, heads[h], strlen(heads[h]))))
		h++;
	if (h == 3)
		return gg_err_set(err, GG_EPROTO, "not a line of export -p in the environment");
	r->p += strlen(heads[h]);
	const char *s = r->p;
	while (r->p < r->end && *r->p != '=' && *r->p != '\n')
		r->p++;
	if (!is_name(s, (size_t)(r->p - s)))
		return gg_err_set(err, GG_EPROTO, "not a variable's name in the environment");
	char *name = take(s, (size_t)(r->p - s)), *value = NULL;
	if (!name)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (r->p >= r->end || *r->p == '\n') {
		r->p += r->p < r->end;
		free(name);
		return 0;
	}
	r->p++;
	int rc = sh_word(r, &value, err);
	if (rc == 0 && r->p < r->end && *r->p != '\n')
		rc = gg_err_set(err, GG_EPROTO, "more than a value after %s=", name);
	if (rc < 0) {
		free(name);
		free(value);
		return rc;
	}
	r->p += r->p < r->end;
	return add_env(rep, name, value, err);
}

static int read_env(struct rd *r, struct gg_check_report *rep, struct gg_err *err)
{
	for (;;) {
		if (r->p >= r->end)
			return gg_err_set(err, GG_EPROTO, "the environment does not end");
		if ((size_t)(r->end - r->p) >= 8 && !memcmp(r->p, "env-end", 7) &&
		    (r->p[7] == '\n'))
			return r->p += 8, 0;
		int rc = env_stmt(r, rep, err);
		if (rc < 0)
			return rc;
	}
}

/* "module NAME ok|no|nopython TEXT" */
static int module_line(const char *s, size_t n, struct gg_check_report *rep, struct gg_err *err)
{
	static const char *const states[] = {"ok", "no", "nopython"};
	const char *sp1 = memchr(s, ' ', n);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - s)) : NULL;
	size_t k = 0, wn = sp2 ? (size_t)(sp2 - sp1 - 1) : 0;
	while (k < 3 && (wn != strlen(states[k]) || memcmp(sp1 + 1, states[k], wn)))
		k++;
	if (!sp2 || k == 3 || sp1 == s || rep->nmods == GG_CHECK_MAX_MODULES)
		return gg_err_set(err, GG_EPROTO, "a module line the probe does not write");
	struct gg_check_module *m = &rep->mods[rep->nmods++];
	m->state = (enum gg_check_mod_state)k;
	m->name = take(s, (size_t)(sp1 - s));
	m->text = take(sp2 + 1, (size_t)(s + n - sp2 - 1));
	return m->name && m->text ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

static int key(const char *s, size_t n, const char *k, const char **rest, size_t *rn)
{
	size_t kl = strlen(k);
	if (n < kl + 1 || memcmp(s, k, kl) || s[kl] != ' ')
		return 0;
	*rest = s + kl + 1;
	*rn = n - kl - 1;
	return 1;
}

static int one_line(struct rd *r, const char *s, size_t n, struct gg_check_report *rep,
		    struct gg_err *err)
{
	const char *v;
	size_t vn;
	if (n == 9 && !memcmp(s, "env-begin", 9))
		return read_env(r, rep, err);
	int home = key(s, n, "home", &v, &vn) || (n == 4 && !memcmp(s, "home", 4));
	if (home || key(s, n, "which", &v, &vn)) {
		char **to = home ? &rep->home : &rep->which;
		if (*to)
			return gg_err_set(err, GG_EPROTO, "the %s line twice",
					  home ? "home" : "which");
		*to = take(n == 4 ? "" : v, n == 4 ? 0 : vn);
		return *to ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (key(s, n, "module", &v, &vn))
		return module_line(v, vn, rep, err);
	if (key(s, n, "exit", &v, &vn)) {
		char num[16], *e;
		snprintf(num, sizeof num, "%.*s", (int)(vn < 15 ? vn : 15), v);
		long st = strtol(num, &e, 10);
		if (vn > 3 || e == num || *e || st < 0 || st > 255)
			return gg_err_set(err, GG_EPROTO, "an exit status that is none");
		rep->exit_status = (int)st;
		return 0;
	}
	return gg_err_set(err, GG_EPROTO, "a line the probe does not write");
}

int gg_check_report_parse(const char *text, size_t len, struct gg_check_report *rep,
			  struct gg_err *err)
{
	memset(rep, 0, sizeof *rep);
	rep->exit_status = -1;
	if (!(rep->env = calloc(GG_CHECK_MAX_ENV, sizeof *rep->env)) ||
	    !(rep->mods = calloc(GG_CHECK_MAX_MODULES, sizeof *rep->mods)))
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct rd r = {text, text + len};
	size_t n;
	const char *s = next_line(&r, &n);
	if (!s || n != 15 || memcmp(s, "gridgpu-check 1", 15))
		return gg_err_set(err, GG_EPROTO, "not what gridgpu's check writes (no header)");
	while (rep->exit_status < 0 && (s = next_line(&r, &n)))
		if (one_line(&r, s, n, rep, err) < 0)
			return err->code;
	if (rep->exit_status < 0 || !rep->which)
		return gg_err_set(err, GG_EPROTO, "the check's answer ends early");
	return 0;
}

void gg_check_report_clear(struct gg_check_report *rep)
{
	for (size_t i = 0; rep->env && i < rep->nenv; i++) {
		free(rep->env[i].name);
		free(rep->env[i].value);
	}
	for (size_t i = 0; rep->mods && i < rep->nmods; i++) {
		free(rep->mods[i].name);
		free(rep->mods[i].text);
	}
	free(rep->env);
	free(rep->mods);
	free(rep->home);
	free(rep->which);
	memset(rep, 0, sizeof *rep);
}

const char *gg_check_env_get(const struct gg_check_report *rep, const char *name)
{
	for (size_t i = 0; i < rep->nenv; i++)
		if (!strcmp(rep->env[i].name, name))
			return rep->env[i].value;
	return NULL;
}
