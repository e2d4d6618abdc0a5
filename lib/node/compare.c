/* gridgpu check's comparison of the command's run in the session with its run in the
 * image through the batch wrapper: how it ended, where its first word and the modules
 * the user named resolve, and the environment. */
#include <stdlib.h>
#include <string.h>

#include "node/check.h"
#include "node/node.h"

/* Not compared: the shell's own, the ssh login's, the container runtime's, and what
 * a session has by design and a batch job has not (or the other way round): the
 * session's own variables of the node's contract (node.def), and the job's GPU
 * minimums. */
static const char *const ignored[] = {
	"PWD",           "OLDPWD",        "SHLVL",           "_",
	"PPID",          "IFS",           "OPTIND",          "PS1",
	"PS2",           "PS4",           "LINENO",          "TERM",
	"MAIL",          "MOTD_SHOWN",    "SSH_*",           "APPTAINER_*",
	"SINGULARITY_*", "GRIDGPU_MIN_*", "X509_USER_PROXY",
};

int gg_check_env_ignored(const char *name)
{
	for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) {
		size_t n = strlen(ignored[i]);
		if (ignored[i][n - 1] == '*' ? !strncmp(name, ignored[i], n - 1)
					     : !strcmp(name, ignored[i]))
			return 1;
	}
	for (int e = 0; e < GG_NE_COUNT; e++)
		if (gg_node_env_own((enum gg_node_env)e) &&
		    !strcmp(name, gg_node_env((enum gg_node_env)e)))
			return 1;
	return 0;
}

struct diffs {
	struct gg_check_diff *d;
	size_t n, cap;
	int oom;
};

/* Escaped, and cut to 80 characters with "..." (a value for one line). */
static char *shown(const char *v)
{
	if (!v)
		return NULL;
	size_t n = strlen(v);
	char *p = gg_str_printable(v, n > 80 ? 80 : n);
	char *r = p && n > 80 ? gg_strdup_printf("%s...", p) : NULL;
	if (r) {
		free(p);
		return r;
	}
	return p;
}

static void add(struct diffs *ds, enum gg_check_kind k, const char *name, const char *s,
		const char *j, char *line)
{
	if (ds->n == ds->cap) {
		size_t nc = ds->cap ? 2 * ds->cap : 8;
		struct gg_check_diff *nd = realloc(ds->d, nc * sizeof *nd);
		if (!nd) {
			ds->oom = 1;
			free(line);
			return;
		}
		ds->d = nd;
		ds->cap = nc;
	}
	struct gg_check_diff *d = &ds->d[ds->n++];
	*d = (struct gg_check_diff){k, gg_str_printable(name, strlen(name)), shown(s), shown(j),
				    line};
	if (!d->name || !line || (s && !d->session) || (j && !d->image))
		ds->oom = 1;
}

/* Under dir (a directory, not "/" or empty)? */
static int under(const char *p, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n > 1 && !strncmp(p, dir, n) && (p[n] == '/' || p[n] == '\0');
}

static void cmp_exit(struct diffs *ds, const struct gg_check_report *s,
		     const struct gg_check_report *j)
{
	if (s->exit_status == j->exit_status)
		return;
	char a[16], b[16];
	snprintf(a, sizeof a, "%d", s->exit_status);
	snprintf(b, sizeof b, "%d", j->exit_status);
	add(ds, GG_CHECK_EXIT, "exit", a, b,
	    gg_strdup_printf("the command exits %d in the session, %d in the image%s",
			     s->exit_status, j->exit_status,
			     j->exit_status == 4 ? " (exit 4: the wrapper's GPU check, said above)"
						 : ""));
}

static void cmp_which(struct diffs *ds, const struct gg_check_report *s,
		      const struct gg_check_report *j, const char *cmd0)
{
	char *c = gg_str_printable(cmd0, strlen(cmd0)), *sw = shown(s->which),
	     *jw = shown(j->which);
	int sn = !strcmp(s->which, "-"), jn = !strcmp(j->which, "-");
	char *line = NULL;
	if (!c || !sw || !jw)
		ds->oom = 1;
	else if (sn != jn || (!sn && strcmp(s->which, j->which)))
		line = jn ? gg_strdup_printf("'%s' is %s in the session, not found in the image: "
					     "install it in the session's sandbox and freeze again",
					     c, sw)
			  : gg_strdup_printf("'%s' is %s in the session, %s in the image", c,
					     sn ? "not found" : sw, jw);
	else if (!jn && strchr(j->which, '/') && under(j->which, j->home))
		line = gg_strdup_printf("'%s' is %s, under $HOME: the site's home, not the image "
					"(another site will not have it): install it in the "
					"sandbox, or freeze with --include %s",
					c, jw, jw);
	if (line)
		add(ds, GG_CHECK_COMMAND, cmd0, s->which, j->which, line);
	free(c);
	free(sw);
	free(jw);
}

static const struct gg_check_module *find_mod(const struct gg_check_report *r, const char *n)
{
	for (size_t i = 0; i < r->nmods; i++)
		if (!strcmp(r->mods[i].name, n))
			return &r->mods[i];
	return NULL;
}

static char *mod_line(const struct gg_check_module *sm, const struct gg_check_module *jm,
		      const char *home, const char *n, const char *st, const char *jt)
{
	if (jm->state == GG_CHECK_MOD_NOPYTHON && sm->state != GG_CHECK_MOD_NOPYTHON)
		return gg_strdup_printf("module %s: the image has no python3", n);
	if (jm->state == GG_CHECK_MOD_NO && sm->state == GG_CHECK_MOD_OK)
		return gg_strdup_printf("module %s: imported in the session (%s), not in the "
					"image: %s",
					n, st, jt);
	if (jm->state == GG_CHECK_MOD_OK && sm->state == GG_CHECK_MOD_OK &&
	    strcmp(sm->text, jm->text))
		return gg_strdup_printf("module %s: %s in the session, %s in the image", n, st, jt);
	if (jm->state == GG_CHECK_MOD_OK && under(jm->text, home))
		return gg_strdup_printf(
			"module %s: from %s, under $HOME: the site's home, not "
			"the image (another site will not have it): pip install "
			"it without --user in the session, or freeze with --include",
			n, jt);
	return NULL;
}

static void cmp_modules(struct diffs *ds, const struct gg_check_report *s,
			const struct gg_check_report *j)
{
	for (size_t i = 0; i < s->nmods; i++) {
		const struct gg_check_module *sm = &s->mods[i], *jm = find_mod(j, sm->name);
		if (!jm)
			continue;
		char *n = shown(sm->name), *st = shown(sm->text), *jt = shown(jm->text);
		char *line = n && st && jt ? mod_line(sm, jm, j->home, n, st, jt) : NULL;
		if (!n || !st || !jt)
			ds->oom = 1;
		if (line)
			add(ds, GG_CHECK_MODULE, sm->name,
			    sm->state == GG_CHECK_MOD_OK ? sm->text : NULL,
			    jm->state == GG_CHECK_MOD_OK ? jm->text : NULL, line);
		free(n);
		free(st);
		free(jt);
	}
}

static void env_one(struct diffs *ds, const char *name, const char *sv, const char *jv)
{
	char *n = shown(name), *a = shown(sv), *b = shown(jv), *line = NULL;
	if (!n || (sv && !a) || (jv && !b))
		ds->oom = 1;
	else if (!jv)
		line = gg_strdup_printf("%s='%s' in the session, not set in the image", n, a);
	else if (!sv)
		line = gg_strdup_printf("%s='%s' in the image, not set in the session", n, b);
	else
		line = gg_strdup_printf("%s is '%s' in the session, '%s' in the image", n, a, b);
	if (line)
		add(ds, GG_CHECK_ENV, name, sv, jv, line);
	free(n);
	free(a);
	free(b);
}

static void cmp_env(struct diffs *ds, const struct gg_check_report *s,
		    const struct gg_check_report *j)
{
	for (size_t i = 0; i < s->nenv; i++) {
		const char *name = s->env[i].name, *jv = gg_check_env_get(j, name);
		if (!gg_check_env_ignored(name) && (!jv || strcmp(jv, s->env[i].value)))
			env_one(ds, name, s->env[i].value, jv);
	}
	for (size_t i = 0; i < j->nenv; i++)
		if (!gg_check_env_ignored(j->env[i].name) && !gg_check_env_get(s, j->env[i].name))
			env_one(ds, j->env[i].name, NULL, j->env[i].value);
}

int gg_check_compare(const struct gg_check_report *s, const struct gg_check_report *j,
		     const char *cmd0, struct gg_check_diff **out, size_t *n, struct gg_err *err)
{
	struct diffs ds = {0};
	cmp_exit(&ds, s, j);
	cmp_which(&ds, s, j, cmd0);
	cmp_modules(&ds, s, j);
	cmp_env(&ds, s, j);
	if (ds.oom) {
		gg_check_diffs_free(ds.d, ds.n);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	*out = ds.d;
	*n = ds.n;
	return 0;
}

void gg_check_diffs_free(struct gg_check_diff *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(d[i].name);
		free(d[i].session);
		free(d[i].image);
		free(d[i].line);
	}
	free(d);
}
