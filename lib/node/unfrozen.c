/* freeze --session's report of what the image will not carry: the command that looks
 * for it on the session's node, and the strict parser of its answer (outside text). */
#include <stdlib.h>
#include <string.h>

#include "node/node.h"

/* The kinds, in the order of enum gg_unfrozen_kind: the word the node writes, the
 * fields after it (p a path, n a variable's name). */
static const struct {
	const char *word, *fields;
} kinds[] = {
	{"usersite", "p"}, {"localbin", "p"},   {"conda", "p"},  {"spack", "p"}, {"startup", "pn"},
	{"path", "p"},     {"pythonpath", "p"}, {"ldpath", "p"}, {"bind", "p"},
};
#define NKINDS (sizeof kinds / sizeof *kinds)

const char *gg_unfrozen_kind_name(enum gg_unfrozen_kind k)
{
	return (size_t)k < NKINDS ? kinds[k].word : "?";
}

/* Run outside the container (GG_NODE_MARK): the site's home is the login's $HOME.
 * What it prints, one finding a line: KIND TAB PATH [TAB NAME]. Bounded: the
 * startup files' first 50 exports each, 256 lines in all, 20 s. */
static const char node_script[] =
	"sd=${" GG_NODE_SD_VAR
	":-/nonexistent}; h=${HOME:-/nonexistent}; export GG_UNFROZEN_SELF=1; "
	"m=$sd/.gridgpu/sandbox-mounts; "
	"o() { printf '%s\\t%s\\n' \"$1\" \"$2\"; }; "
	"full() { [ -d \"$1\" ] && [ ! -h \"$1\" ] && [ -n \"$(ls -A \"$1\" 2>/dev/null)\" ]; }; "
	"out() { case $2 in \"$sd\"|\"$sd\"/*) ;; \"$h\"/*|\"$h\") o \"$1\" \"$2\";; *) "
	"  while IFS= read -r p; do p=${p#.}; [ -n \"$p\" ] || continue; case $2 in \"$p\"|\"$p\"/*) "
	"  o \"$1\" \"$2\"; return;; esac; done <\"$m\" 2>/dev/null;; esac; }; "
	"{ for d in \"$h\"/.local/lib/python*/site-packages; do full \"$d\" && o usersite \"$d\"; done; "
	"full \"$h/.local/bin\" && o localbin \"$h/.local/bin\"; "
	"for d in \"$h\"/*/conda-meta \"$h\"/.[!.]*/conda-meta; do [ -d \"$d\" ] && o conda \"${d%/conda-meta}\"; done; "
	"for d in \"$h\"/*/bin/spack \"$h\"/.[!.]*/bin/spack; do [ -f \"$d\" ] && o spack \"${d%/bin/spack}\"; done; "
	"for f in .bashrc .bash_profile .bash_login .profile; do [ -f \"$h/$f\" ] || continue; "
	"  sed -n 's/^[[:space:]]*export[[:space:]][[:space:]]*\\([A-Za-z_][A-Za-z0-9_]*\\)=\\(.*\\)$/\\1 \\2/p' \"$h/$f\" | head -n 50 | "
	"  while read -r v val; do printf 'startup\\t%s\\t%s\\n' \"$h/$f\" \"$v\"; "
	"    case $v in PATH) k=path;; PYTHONPATH) k=pythonpath;; LD_LIBRARY_PATH) k=ldpath;; *) continue;; esac; "
	"    val=$(printf '%s' \"$val\" | tr -d \"\\\"'\" | sed \"s|\\${HOME}|$h|g; s|\\$HOME|$h|g; s|^~/|$h/|; s|:~/|:$h/|g\"); "
	"    printf '%s\\n' \"$val\" | tr ':' '\\n' | while IFS= read -r e; do case $e in \"$h\"/*) [ -d \"$e\" ] && o $k \"$e\";; esac; done; done; done; "
	"for p in /proc/[0-9]*; do [ -r \"$p/environ\" ] || continue; " /* portable: the node's */
	"  e=$(tr '\\0' '\\n' <\"$p/environ\" 2>/dev/null) || continue; "
	"  printf '%s\\n' \"$e\" | grep -qx \"" GG_NODE_SD_VAR "=$sd\" || continue; "
	"  printf '%s\\n' \"$e\" | grep -qx 'GG_UNFROZEN_SELF=1' && continue; "
	"  printf '%s\\n' \"$e\" | sed -n 's/^PATH=/path /p; s/^PYTHONPATH=/pythonpath /p; s/^LD_LIBRARY_PATH=/ldpath /p' | "
	"  while read -r k v; do printf '%s\\n' \"$v\" | tr ':' '\\n' | while IFS= read -r x; do "
	"    case $x in /*) out $k \"$x\";; esac; done; done; "
	"  for l in \"$p/cwd\" \"$p\"/fd/*; do t=$(readlink \"$l\" 2>/dev/null) || continue; case $t in /*) ;; *) continue;; esac; "
	"    case $t in \"$sd\"|\"$sd\"/*) continue;; \"$h\"|\"$h\"/*) o bind \"$h\"; continue;; esac; "
	"    while IFS= read -r q; do q=${q#.}; case $q in ''|/tmp|\"$sd\") continue;; esac; "
	"      case $t in \"$q\"|\"$q\"/*) o bind \"$q\";; esac; done <\"$m\" 2>/dev/null; done; done; "
	"} 2>/dev/null | awk '!s[$0]++' | head -n 256; exit 0";

char *gg_node_unfrozen_command(void)
{
	char *q = gg_node_sh_quote(node_script);
	char *cmd =
		q ? gg_strdup_printf(GG_NODE_MARK
				     " t=$(command -v timeout) || t=''; "
				     "exec env GG_UNFROZEN_SELF=1 ${t:+\"$t\" 20} /bin/sh -c %s",
				     q)
		  : NULL;
	free(q);
	return cmd;
}

void gg_unfrozen_clear(struct gg_unfrozen *u, size_t n)
{
	for (size_t i = 0; u && i < n; i++) {
		free(u[i].path);
		free(u[i].name);
	}
	free(u);
}

/* A path: absolute, printable ASCII or UTF-8 (no control byte), no ".." step. */
static int good_path(const char *s, size_t len)
{
	if (!len || s[0] != '/' || len > GG_UNFROZEN_MAX_FIELD)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	for (size_t i = 0; i + 2 < len; i++) /* not NUL-terminated: within len */
		if (s[i] == '/' && s[i + 1] == '.' && s[i + 2] == '.' &&
		    (i + 3 == len || s[i + 3] == '/'))
			return 0;
	return 1;
}

static int good_name(const char *s, size_t len)
{
	if (!len || len > 128 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static int kind_of(const char *s, size_t len)
{
	for (size_t k = 0; k < NKINDS; k++)
		if (strlen(kinds[k].word) == len && !memcmp(kinds[k].word, s, len))
			return (int)k;
	return -1;
}

/* One line (without its newline) into u: 0, or -1 when it is not a finding. */
static int parse_line(const char *s, size_t len, struct gg_unfrozen *u)
{
	const char *tab = memchr(s, '\t', len);
	int k = tab ? kind_of(s, (size_t)(tab - s)) : -1;
	if (k < 0)
		return -1;
	const char *f = tab + 1, *end = s + len;
	const char *t2 = memchr(f, '\t', (size_t)(end - f));
	int two = kinds[k].fields[1] == 'n';
	if (two != !!t2)
		return -1;
	const char *pend = t2 ? t2 : end;
	if (!good_path(f, (size_t)(pend - f)) ||
	    (two && !good_name(t2 + 1, (size_t)(end - t2 - 1))))
		return -1;
	*u = (struct gg_unfrozen){.kind = (enum gg_unfrozen_kind)k};
	u->path = strndup(f, (size_t)(pend - f));
	u->name = two ? strndup(t2 + 1, (size_t)(end - t2 - 1)) : NULL;
	return u->path && (!two || u->name) ? 0 : -2;
}

static int same(const struct gg_unfrozen *a, const struct gg_unfrozen *b)
{
	return a->kind == b->kind && !strcmp(a->path, b->path) &&
	       !strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

int gg_unfrozen_parse(const char *text, size_t len, struct gg_unfrozen **out, size_t *n,
		      struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	if (len > GG_UNFROZEN_MAX_TEXT || memchr(text, '\0', len) || (len && text[len - 1] != '\n'))
		return gg_err_set(err, GG_EPROTO,
				  "the node's report of what the image leaves out "
				  "is not whole lines of text");
	struct gg_unfrozen *u = calloc(GG_UNFROZEN_MAX_LINES, sizeof *u);
	size_t line = 0;
	int rc = u ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	for (const char *p = text, *end = text + len; rc == 0 && p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		int lr = *n >= GG_UNFROZEN_MAX_LINES ? -1 : parse_line(p, (size_t)(nl - p), &u[*n]);
		if (lr == -2) {
			(*n)++;
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		} else if (lr < 0) {
			rc = gg_err_set(err, GG_EPROTO,
					"the node's report of what the image leaves out: line %zu "
					"is not one of its findings",
					line + 1);
		} else {
			int dup = 0;
			for (size_t i = 0; i < *n && !dup; i++)
				dup = same(&u[i], &u[*n]);
			if (dup) {
				free(u[*n].path);
				free(u[*n].name);
			} else {
				(*n)++;
			}
		}
		p = nl + 1;
	}
	if (rc < 0) {
		gg_unfrozen_clear(u, *n);
		*n = 0;
		return rc;
	}
	*out = u;
	return 0;
}

/* What to do, by kind ("%s": the path; the startup kind has the variable's name first). */
static const char *const advice[] = {
	"Python's user site %s (pip install --user) is outside the sandbox: install without "
	"--user in the session, or take it in with --include %s",
	"%s (~/.local/bin) is outside the sandbox: install its programs in the sandbox, or take "
	"it in with --include %s",
	"the conda root %s is under $HOME, outside the sandbox: install it in the sandbox (under "
	"/opt), or take it in with --include %s",
	"the spack root %s is under $HOME, outside the sandbox: install it in the sandbox, or take "
	"it in with --include %s",
	NULL,
	"PATH has %s, outside the sandbox: install what it holds in the sandbox, or take it in "
	"with --include %s",
	"PYTHONPATH has %s, outside the sandbox: install what it holds in the sandbox, or take it "
	"in with --include %s",
	"LD_LIBRARY_PATH has %s, outside the sandbox: install what it holds in the sandbox, or "
	"take it in with --include %s",
	"the session's processes use files under %s, a mount the image does not hold: take them "
	"in with --include %s, or stage them with the job",
};

char *gg_unfrozen_line(const struct gg_unfrozen *u)
{
	char *p = gg_str_printable(u->path, strlen(u->path));
	char *line = NULL;
	if (p && u->kind == GG_UNFROZEN_STARTUP)
		line = gg_strdup_printf("%s exports %s, which a batch job does not read: set it in "
					"the image (/.singularity.d/env/) or in the job's command",
					p, u->name);
	else if (p && (size_t)u->kind < NKINDS)
		line = gg_strdup_printf(advice[u->kind], p, p);
	free(p);
	return line;
}
