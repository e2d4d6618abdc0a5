/* vomses files: which VOMS servers serve a VO, read where voms-proxy-init reads
 * them. */
#include "voms/voms.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SERVERS 32

void gg_voms_servers_free(struct gg_voms_server *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].alias);
		free(s[i].host);
		free(s[i].dn);
		free(s[i].vo);
	}
	free(s);
}

/* The next "quoted" field of *p (malloc'd), or NULL. */
static char *field(const char **p)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s != '"')
		return NULL;
	const char *e = strchr(++s, '"');
	if (!e)
		return NULL;
	*p = e + 1;
	return strndup(s, (size_t)(e - s));
}

int gg_voms_server_parse(const char *line, struct gg_voms_server *out, struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	const char *p = line;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#')
		return 1;
	char *f[5] = {0};
	int n = 0;
	while (n < 5 && (f[n] = field(&p)))
		n++;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	char *end = NULL;
	long port = n >= 3 ? strtol(f[2], &end, 10) : 0;
	/* the fifth field (the VO's real name) may be absent in old files */
	if (n < 4 || *p || !end || *end || port < 1 || port > 65535 || !*f[0] || !*f[1]) {
		for (int i = 0; i < 5; i++)
			free(f[i]);
		return gg_err_set(err, GG_EUSAGE,
				  "expected \"alias\" \"host\" \"port\" \"server DN\" \"vo\"");
	}
	*out = (struct gg_voms_server){f[0], f[1], f[3], n == 5 ? f[4] : strdup(f[0]), (int)port};
	free(f[2]);
	if (!out->vo) {
		free(out->alias);
		free(out->host);
		free(out->dn);
		memset(out, 0, sizeof *out);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}

struct found {
	const char *vo;
	struct gg_voms_server *s;
	size_t n;
	struct gg_err *err;
	char near[256]; /* the VO name or alias nearest vo, for "did you mean" */
	size_t near_d;
};

static int name_ok(const char *s, size_t n);

/* name (a VO or alias a vomses file knows) as the nearest to the VO asked for,
 * if it is nearer than any before and near enough to be a typo of it. */
static void consider(struct found *f, const char *name)
{
	size_t len = strlen(f->vo), d = gg_edit_distance(f->vo, name);
	if (d < f->near_d && d <= (len <= 3 ? 1u : 2u) && name_ok(name, strlen(name))) {
		f->near_d = d;
		snprintf(f->near, sizeof f->near, "%s", name);
	}
}

/* One server of the VO found, or the line dropped (its names kept in mind). */
static void keep(struct found *f, struct gg_voms_server *s)
{
	if ((strcmp(s->alias, f->vo) == 0 || strcmp(s->vo, f->vo) == 0) && f->n < MAX_SERVERS) {
		f->s[f->n++] = *s;
		return;
	}
	consider(f, s->vo);
	consider(f, s->alias);
	free(s->alias);
	free(s->host);
	free(s->dn);
	free(s->vo);
}

/* Whole lines (getline): one longer than GG_VOMSES_LINE_MAX, or holding a NUL
 * byte, is refused with its number, never read in pieces (the tail of a long
 * comment would be a line of its own). */
static int read_file(const char *path, struct found *f)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return errno == ENOENT ? 0
				       : gg_err_sys(f->err, GG_EUSAGE, errno, "vomses '%s'", path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0, no = 0;
	while (rc == 0 && (len = getline(&line, &cap, fp)) >= 0) {
		no++;
		struct gg_voms_server s;
		if ((size_t)len > GG_VOMSES_LINE_MAX)
			rc = gg_err_set(f->err, GG_EUSAGE,
					"vomses '%s' line %d: longer than %d bytes (a vomses line "
					"names one server): shorten or remove it",
					path, no, GG_VOMSES_LINE_MAX);
		else if (memchr(line, '\0', (size_t)len))
			rc = gg_err_set(f->err, GG_EUSAGE,
					"vomses '%s' line %d: a NUL byte: remove it", path, no);
		else if ((rc = gg_voms_server_parse(line, &s, f->err)) < 0)
			rc = gg_err_prefix(f->err, "vomses '%s' line %d", path, no);
		else if (rc == 0)
			keep(f, &s);
		rc = rc < 0 ? rc : 0;
	}
	if (rc == 0 && ferror(fp))
		rc = gg_err_sys(f->err, GG_EUSAGE, errno, "vomses '%s' line %d", path, no + 1);
	free(line);
	fclose(fp);
	return rc;
}

static int compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or every regular file of a directory (sorted, hidden ones skipped). */
static int read_place(const char *path, struct found *f)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return read_file(path, f);
	DIR *d = opendir(path);
	if (!d)
		return gg_err_sys(f->err, GG_EUSAGE, errno, "vomses directory '%s'", path);
	char *names[256];
	size_t k = 0;
	struct dirent *e;
	while ((e = readdir(d)) && k < 256)
		if (e->d_name[0] != '.' && (names[k] = strdup(e->d_name)))
			k++;
	closedir(d);
	qsort(names, k, sizeof names[0], compare);
	int rc = 0;
	for (size_t i = 0; i < k; i++) {
		char *p = gg_strdup_printf("%s/%s", path, names[i]);
		if (rc == 0 && p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
			rc = read_file(p, f);
		free(p);
		free(names[i]);
	}
	return rc;
}

int gg_voms_servers_find(const char *vo, struct gg_voms_server **out, size_t *n, struct gg_err *err)
{
	*out = NULL;
	*n = 0;
	struct found f = {vo,        calloc(MAX_SERVERS, sizeof(struct gg_voms_server)), 0, err, "",
			  (size_t)-1};
	if (!f.s)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	const char *conf = getenv("VOMS_USERCONF"), *home = getenv("HOME");
	char *places[3] = {0};
	int rc = 0;
	if (conf && *conf) {
		places[0] = strdup(conf);
	} else {
		places[0] = home ? gg_strdup_printf("%s/.voms/vomses", home) : NULL;
		places[1] = home ? gg_strdup_printf("%s/.glite/vomses", home) : NULL;
		places[2] = strdup("/etc/vomses");
	}
	for (int i = 0; rc == 0 && i < 3; i++)
		if (places[i])
			rc = read_place(places[i], &f);
	for (int i = 0; i < 3; i++)
		free(places[i]);
	if (rc == 0 && f.n == 0)
		rc = gg_err_set(
			err, GG_EUSAGE, "no VOMS server known for VO '%s'%s%s%s (vomses: %s)", vo,
			*f.near ? "; did you mean '" : "", f.near, *f.near ? "'?" : "",
			conf && *conf ? conf : "~/.voms/vomses, ~/.glite/vomses, /etc/vomses");
	if (rc < 0) {
		gg_voms_servers_free(f.s, f.n);
		return rc;
	}
	*out = f.s;
	*n = f.n;
	return 0;
}

/* A name in an FQAN or a VO's name: 1 to 255 ASCII letters, digits, '.', '_', '-'. */
static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* The FQAN's grammar: /vo[/group...][/Role=r][/Capability=c]; 0 or -1. */
static int fqan_grammar(const char *fqan, size_t *vo_len)
{
	if (fqan[0] != '/' || strlen(fqan) > GG_VOMS_FQAN_MAX)
		return -1;
	const char *p = fqan + 1;
	int part = 0; /* 0: the VO, 1: groups, 2: after the role, 3: after the capability */
	while (*p) {
		size_t n = strcspn(p, "/");
		if (part == 0) {
			*vo_len = n;
			part = 1;
		} else if (part == 1 && strncmp(p, "Role=", 5) == 0) {
			p += 5, n -= 5, part = 2;
		} else if (part <= 2 && strncmp(p, "Capability=", 11) == 0) {
			p += 11, n -= 11, part = 3;
		} else if (part != 1) {
			return -1;
		}
		if (!name_ok(p, n) || (p[n] == '/' && !p[n + 1]))
			return -1;
		p += n + (p[n] == '/');
	}
	return part ? 0 : -1;
}

/* (The names are said as given: the CLI prints errors through gg_str_printable.) */
int gg_voms_vo_check(const char *vo, struct gg_err *err)
{
	if (name_ok(vo, strlen(vo)))
		return 0;
	return gg_err_set(err, GG_EUSAGE,
			  "'%s' is not a VO name (letters, digits, '.', '_' and '-')", vo);
}

int gg_voms_fqan_check(const char *vo, const char *fqan, struct gg_err *err)
{
	size_t vl = 0;
	if (fqan_grammar(fqan, &vl) < 0)
		return gg_err_set(
			err, GG_EUSAGE,
			"FQAN '%s': expected /VO[/group...][/Role=role][/Capability=cap], "
			"each name of letters, digits, '.', '_' and '-'",
			fqan);
	if (vo && (strlen(vo) != vl || strncmp(fqan + 1, vo, vl) != 0))
		return gg_err_set(err, GG_EUSAGE,
				  "FQAN '%s' is not of VO %s: expected /%s[/group...]", fqan, vo,
				  vo);
	return 0;
}

char *gg_voms_fqan_command(const char *vo, const char *fqan)
{
	if (gg_voms_fqan_check(vo, fqan, NULL) < 0)
		return NULL;
	/* the group is what comes before the role or, without one, the capability
	 * (which the legacy commands do not carry) */
	const char *role = strstr(fqan, "/Role="), *cap = strstr(fqan, "/Capability=");
	size_t gl = role ? (size_t)(role - fqan) : cap ? (size_t)(cap - fqan) : strlen(fqan);
	if (!role)
		return gg_strdup_printf("G%.*s", (int)gl, fqan);
	size_t rl = cap ? (size_t)(cap - role - 6) : strlen(role + 6);
	return gg_strdup_printf("B%.*s:%.*s", (int)gl, fqan, (int)rl, role + 6);
}
