/* The INI configuration: [gridgpu] defaults and one [site NAME] section per site.
 * Parsed with inih (Debian libinih). */
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gg_site_name_valid(const char *name)
{
	if (!name || !isalnum((unsigned char)name[0]))
		return 0;
	size_t n = 0;
	for (const char *p = name; *p; p++, n++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
			return 0;
	return n <= 64;
}

const char *gg_site_auth_kind(const struct gg_site *site)
{
	if (site && site->ce && !strncmp(site->ce, "slurm+ssh://", 12))
		return "ssh"; /* the user's ssh key: no grid credential */
	if (site && site->auth)
		return site->auth;
	return site && (site->token_command || site->oidc_account) ? "token" : "proxy";
}

void gg_config_free(struct gg_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->nsites; i++)
		gg_site_clear(&cfg->sites[i]);
	free(cfg->sites);
	free(cfg->path);
	free(cfg->default_site);
	free(cfg);
}

const struct gg_site *gg_config_site(const struct gg_config *cfg, const char *name)
{
	for (size_t i = 0; cfg && i < cfg->nsites; i++)
		if (strcmp(cfg->sites[i].name, name) == 0)
			return &cfg->sites[i];
	return NULL;
}

struct parse_ctx {
	struct gg_config *cfg;
	struct gg_err *err;
	int failed;
	char **sections; /* every section seen, in order; the last is the current one */
	size_t nsections;
	char **keys; /* keys seen in the current section */
	size_t nkeys;
};

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -1;
	(*n)++;
	return 0;
}

/* A section given twice, or a key twice in a section (but a list's: 'jump',
 * 'bind', 'allow_from'), would be merged without a word: refused. */
static int check_dup(struct parse_ctx *c, const char *raw, const char *name)
{
	char section[256]; /* "site NAME", however many blanks were between */
	if (strncmp(raw, "site ", 5) == 0)
		snprintf(section, sizeof section, "site %s", raw + 5 + strspn(raw + 5, " "));
	else
		snprintf(section, sizeof section, "%s", raw);
	if (!c->nsections || strcmp(c->sections[c->nsections - 1], section) != 0) {
		if (strv_has(c->sections, c->nsections, section))
			return gg_err_set(c->err, GG_EUSAGE, "section [%s] given a second time",
					  section);
		strv_free(c->keys, c->nkeys);
		c->keys = NULL;
		c->nkeys = 0;
		if (strv_add(&c->sections, &c->nsections, section) < 0)
			return gg_err_set(c->err, GG_ENOMEM, "out of memory");
	}
	const struct gg_site_key *k = gg_site_key_find(name);
	if (!name || (k && (k->kind == GG_SK_LIST || k->kind == GG_SK_ADDRS)))
		return 0; /* repeatable */
	if (strv_has(c->keys, c->nkeys, name))
		return gg_err_set(c->err, GG_EUSAGE, "[%s]: '%s' given a second time", section,
				  name);
	return strv_add(&c->keys, &c->nkeys, name) < 0
		       ? gg_err_set(c->err, GG_ENOMEM, "out of memory")
		       : 0;
}

static int set_str(char **field, const char *value, struct parse_ctx *c)
{
	char *v = strdup(value);
	if (!v) {
		gg_err_set(c->err, GG_ENOMEM, "out of memory");
		return 0;
	}
	free(*field);
	*field = v;
	return 1;
}

/* What an INI line (inih, 200 bytes a line at most) can hold and give back
 * unchanged: no newline, no leading or trailing blank, nothing inih would read
 * as a comment (';' or '#' first, or ';' after a blank), short enough. */
int gg_config_value_ok(const char *v)
{
	size_t n = strlen(v);
	if (n > GG_CONFIG_VALUE_MAX || v[0] == ';' || v[0] == '#' ||
	    (n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]))))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] == '\n' || v[i] == '\r' || v[i] == '\0')
			return 0;
		if (v[i] == ';' && i && isspace((unsigned char)v[i - 1]))
			return 0;
	}
	return 1;
}

/* A site profile's value is plain text: a control character (C0 with ESC,
 * CR, LF and TAB, DEL, or a C1 such as CSI, U+009B) is refused, naming the key
 * and the character, whether it comes from site add/set or from a file edited
 * by hand: such a value, printed by site show or a dry run or sent in a job
 * description, could clear the screen or fake a line. */
static int value_text_ok(const char *key, const char *v, struct gg_err *err)
{
	const unsigned char *p = (const unsigned char *)v;
	for (size_t i = 0; p[i]; i++) {
		int c1 = p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
		if (c1 || p[i] < 0x20 || p[i] == 0x7f)
			return gg_err_set(err, GG_EUSAGE,
					  "%s: the value has a control character (U+%04X): a site "
					  "profile value is plain text, remove it",
					  key, c1 ? p[i + 1] : p[i]);
	}
	return 0;
}

/* The way on for a value too long to be stored, where there is one. */
static const char *value_advice(const char *key)
{
	return strcmp(key, "token_command")
		       ? ""
		       : "; put a longer command in a script and name the script";
}

/* What a value of key must be to be stored (as the file and gg_config_set_site
 * take it): 0, or GG_EUSAGE naming key. */
static int value_storable(const char *key, const char *value, struct gg_err *err)
{
	if (!gg_config_value_ok(value))
		return gg_err_set(err, GG_EUSAGE,
				  "%s '%s': cannot be stored in the configuration (at most %d "
				  "characters, one line, no leading or trailing blanks, no "
				  "';' after a blank or ';'/'#' first%s)",
				  key, value, GG_CONFIG_VALUE_MAX, value_advice(key));
	return value_text_ok(key, value, err);
}

/* One line of a [site NAME] section. */
static int site_set(struct gg_site *s, const char *key, const char *value, struct gg_err *err)
{
	if (!gg_config_value_ok(value))
		return gg_err_set(
			err, GG_EUSAGE,
			"%s: the value cannot be stored in the configuration (at most %d "
			"characters, no line breaks, no leading or trailing blanks, no ';' "
			"after a blank or ';'/'#' first%s)",
			key, GG_CONFIG_VALUE_MAX, value_advice(key));
	if (value_text_ok(key, value, err) < 0)
		return GG_EUSAGE;
	const struct gg_site_key *k = gg_site_key_find(key);
	/* "user" (the account on the nodes) was stored by older versions and never
	 * used: the launcher publishes the account the job runs as */
	if (!k && strcmp(key, "user") == 0)
		return 0;
	if (!k || strcmp(k->key, key) != 0) /* the file has keys, not options */
		return gg_err_set(err, GG_EUSAGE, "unknown key '%s'", key);
	int rc = gg_site_store(s, k, value, err);
	if (rc < 0 && k->kind != GG_SK_LIST) /* "more than 8 jump hosts" says which */
		gg_err_prefix(err, "%s", key);
	return rc;
}

static struct gg_site *site_get_or_add(struct gg_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nsites; i++)
		if (strcmp(cfg->sites[i].name, name) == 0)
			return &cfg->sites[i];
	struct gg_site *ns = realloc(cfg->sites, (cfg->nsites + 1) * sizeof *ns);
	if (!ns)
		return NULL;
	cfg->sites = ns;
	struct gg_site *s = &ns[cfg->nsites];
	memset(s, 0, sizeof *s);
	if (!(s->name = strdup(name)))
		return NULL;
	cfg->nsites++;
	return s;
}

static int config_ini_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *c = user;
	if (c->failed)
		return 0;
	if (check_dup(c, section, name) < 0) {
		c->failed = 1;
		return 0;
	}
	if (strcmp(section, "gridgpu") == 0) {
		if (strcmp(name, "site") == 0) {
			/* a name, as in [site NAME]: anything else would not read back
			 * the same once saved (found by fuzzing) */
			if (!gg_site_name_valid(value)) {
				gg_err_set(c->err, GG_EUSAGE,
					   "[gridgpu] site: invalid site name '%s'", value);
				c->failed = 1;
				return 0;
			}
			return set_str(&c->cfg->default_site, value, c) ? 1 : (c->failed = 1, 0);
		}
		gg_err_set(c->err, GG_EUSAGE, "[gridgpu]: unknown key '%s'", name);
		c->failed = 1;
		return 0;
	}
	if (strncmp(section, "site ", 5) == 0) {
		const char *sname = section + 5;
		while (*sname == ' ')
			sname++;
		if (!gg_site_name_valid(sname)) {
			gg_err_set(c->err, GG_EUSAGE, "invalid site name '%s'", sname);
			c->failed = 1;
			return 0;
		}
		struct gg_site *s = site_get_or_add(c->cfg, sname);
		if (!s) {
			gg_err_set(c->err, GG_ENOMEM, "out of memory");
			c->failed = 1;
			return 0;
		}
		if (!name) /* section start (INI_CALL_HANDLER_ON_NEW_SECTION builds) */
			return 1;
		if (site_set(s, name, value, c->err) < 0) {
			gg_err_prefix(c->err, "[site %s]", sname);
			c->failed = 1;
			return 0;
		}
		return 1;
	}
	gg_err_set(c->err, GG_EUSAGE, "unknown section [%s] (expected [gridgpu] or [site NAME])",
		   section);
	c->failed = 1;
	return 0;
}

int gg_config_default_path(char **out, struct gg_err *err)
{
	char *dir;
	int rc = gg_xdg_dir(GG_XDG_CONFIG, &dir, err);
	if (rc < 0)
		return rc;
	*out = gg_strdup_printf("%s/config", dir);
	free(dir);
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* The config file, opened for reading: 0 and *out NULL when it does not exist.
 * Refused unless a regular file (a directory would read as empty, /dev/zero or
 * a FIFO would never end); O_NONBLOCK: opening a FIFO must not wait. */
static int open_config(const char *path, FILE **out, struct gg_err *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT
			       ? 0
			       : gg_err_sys(err, GG_EIO, errno, "reading config '%s'", path);
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = gg_err_sys(err, GG_EIO, errno, "reading config '%s'", path);
	else if (!S_ISREG(st.st_mode))
		rc = gg_err_set(err, GG_EUSAGE, "config '%s' is not a regular file%s", path,
				S_ISDIR(st.st_mode) ? " (a directory)" : "");
	else if (fcntl(fd, F_SETFL, 0) < 0 || !(*out = fdopen(fd, "r")))
		rc = gg_err_sys(err, GG_EIO, errno, "reading config '%s'", path);
	if (rc < 0)
		close(fd);
	return rc;
}

int gg_config_load(const char *path, struct gg_config **out, struct gg_err *err)
{
	char *dflt = NULL;
	int drc = path ? 0 : gg_config_default_path(&dflt, err);
	if (drc < 0)
		return drc;
	struct gg_config *cfg = calloc(1, sizeof *cfg);
	if (!cfg || !(cfg->path = dflt ? dflt : strdup(path))) {
		free(cfg);
		free(dflt);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	path = cfg->path;
	FILE *f;
	int orc = open_config(path, &f, err);
	if (orc < 0 || !f) {
		if (orc < 0)
			gg_config_free(cfg);
		else
			*out = cfg; /* missing: an empty config */
		return orc;
	}
	struct parse_ctx c = {.cfg = cfg, .err = err};
	int line = ini_parse_file(f, config_ini_handler, &c);
	fclose(f);
	strv_free(c.sections, c.nsections);
	strv_free(c.keys, c.nkeys);
	if (line != 0) {
		if (line < 0)
			gg_err_set(err, GG_EIO, "reading config '%s': cannot parse", path);
		else if (c.failed)
			gg_err_prefix(err, "config '%s' line %d", path, line);
		else
			gg_err_set(err, GG_EUSAGE, "config '%s' line %d: syntax error", path, line);
		int code = err ? err->code : GG_EUSAGE;
		gg_config_free(cfg);
		return code;
	}
	/* A site is its CE: one without (all its keys empty or zero) would not
	 * even survive being written back. */
	for (size_t i = 0; i < cfg->nsites; i++) {
		if (!cfg->sites[i].ce || !cfg->sites[i].ce[0]) {
			gg_err_set(err, GG_EUSAGE, "config '%s': [site %s] has no 'ce = URL'", path,
				   cfg->sites[i].name);
			gg_config_free(cfg);
			return GG_EUSAGE;
		}
	}
	*out = cfg;
	return 0;
}

/* Every value of site as the file can hold it, allow_from's addresses too. */
static int site_storable(const struct gg_site *site, struct gg_err *err)
{
	for (size_t i = 0; i < gg_site_key_count(); i++) {
		const struct gg_site_key *k = gg_site_key_at(i);
		int n = 0;
		char *const *v = gg_site_get_list(site, k, &n);
		const char *t = gg_site_get_text(site, k);
		if (t && value_storable(k->key, t, err) < 0)
			return GG_EUSAGE;
		for (int j = 0; j < n; j++) {
			if (value_storable(k->key, v[j], err) < 0)
				return GG_EUSAGE;
			if (k->kind == GG_SK_ADDRS && gg_addr_range_check(v[j], err) < 0)
				return gg_err_prefix(err, "%s", k->key);
		}
	}
	return 0;
}

int gg_config_set_site(struct gg_config *cfg, const struct gg_site *site, struct gg_err *err)
{
	if (!gg_site_name_valid(site->name))
		return gg_err_set(err, GG_EUSAGE,
				  "invalid site name '%s': use letters, digits, '.', '_', '-'",
				  site->name ? site->name : "");
	int rc = site_storable(site, err);
	if (rc < 0)
		return rc;
	if (!site->ce || !site->ce[0])
		return gg_err_set(err, GG_EUSAGE, "site '%s': --ce URL is required", site->name);
	struct gg_site copy;
	rc = gg_site_copy(&copy, site, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < cfg->nsites; i++) {
		if (strcmp(cfg->sites[i].name, site->name) == 0) {
			gg_site_clear(&cfg->sites[i]);
			cfg->sites[i] = copy;
			return 0;
		}
	}
	struct gg_site *ns = realloc(cfg->sites, (cfg->nsites + 1) * sizeof *ns);
	if (!ns) {
		gg_site_clear(&copy);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	cfg->sites = ns;
	cfg->sites[cfg->nsites++] = copy;
	return 0;
}

int gg_config_remove_site(struct gg_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nsites; i++) {
		if (strcmp(cfg->sites[i].name, name) == 0) {
			gg_site_clear(&cfg->sites[i]);
			memmove(&cfg->sites[i], &cfg->sites[i + 1],
				(cfg->nsites - i - 1) * sizeof cfg->sites[0]);
			cfg->nsites--;
			return 1;
		}
	}
	return 0;
}

/* "key = value" lines of k in s, none when unset. */
static void write_key(FILE *f, const struct gg_site *s, const struct gg_site_key *k)
{
	char d[32];
	int n;
	char *const *v = gg_site_get_list(s, k, &n);
	const char *t = gg_site_get_text(s, k);
	int64_t secs = gg_site_get_duration(s, k);
	if (t)
		fprintf(f, "%s = %s\n", k->key, t);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s = %s\n", k->key, v[i]);
	if (secs)
		fprintf(f, "%s = %s\n", k->key, gg_duration_format_exact(secs, d, sizeof d));
}

char *gg_config_format(const struct gg_config *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fprintf(f, "# gridgpu configuration (see gridgpu-site(1))\n");
	if (cfg->default_site)
		fprintf(f, "\n[gridgpu]\nsite = %s\n", cfg->default_site);
	for (size_t i = 0; i < cfg->nsites; i++) {
		const struct gg_site *s = &cfg->sites[i];
		fprintf(f, "\n[site %s]\n", s->name);
		for (size_t k = 0; k < gg_site_key_count(); k++)
			write_key(f, s, gg_site_key_at(k));
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int gg_config_save(const struct gg_config *cfg, struct gg_err *err)
{
	char *text = gg_config_format(cfg);
	if (!text)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_mkdir_parent(cfg->path, 0700, err);
	if (rc == 0)
		rc = gg_file_write_atomic(cfg->path, text, strlen(text), 0600, err);
	free(text);
	return rc;
}
