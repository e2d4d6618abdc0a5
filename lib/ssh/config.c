/* The generated SSH configuration and per-session keys. */
#include "ssh/ssh.h"
#include "core/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void gg_ssh_paths_clear(struct gg_ssh_paths *p)
{
	free(p->dir);
	free(p->config);
	free(p->config_win);
	free(p->known_hosts);
	free(p->keys);
	free(p->control);
	free(p->control_note);
	memset(p, 0, sizeof *p);
}

/* A socket path is at most 107 bytes; ssh adds "/" and 40 for %C, then 17 for a
 * temporary name while it binds. */
#define CONTROL_DIR_MAX (107 - 58)

/* $XDG_RUNTIME_DIR/gridgpu-cm, else $TMPDIR (or /tmp)/gridgpu-cm-UID unless
 * someone else made it first (or a symbolic link, or a file: never followed):
 * then $XDG_STATE_HOME/gridgpu/cm, with p->control_note saying why. */
static int control_dir(struct gg_ssh_paths *p, struct gg_err *err)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (rt && rt[0] == '/' && strlen(rt) < 40) {
		p->control = gg_strdup_printf("%s/gridgpu-cm", rt);
		return p->control ? gg_dir_private(p->control, err)
				  : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	const char *t = getenv("TMPDIR");
	if (!t || t[0] != '/' || strlen(t) > 30)
		t = "/tmp";
	char *tmp = gg_strdup_printf("%s/gridgpu-cm-%u", t, (unsigned)geteuid());
	if (!tmp)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct stat st;
	if (mkdir(tmp, 0700) == 0 || errno == EEXIST) {
		if (lstat(tmp, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
			p->control = tmp; /* ours: a mode others may use is an error */
			return gg_dir_private(tmp, err);
		}
	}
	char *state = NULL;
	int rc = gg_xdg_dir(GG_XDG_STATE, &state, err);
	if (rc < 0) {
		free(tmp);
		return rc;
	}
	p->control = gg_strdup_printf("%s/cm", state);
	free(state);
	if (!p->control) {
		free(tmp);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	p->control_note = gg_strdup_printf(
		"'%s' is not a private directory of yours (made by someone else?): ssh's "
		"control sockets are in '%s' instead",
		tmp, p->control);
	free(tmp);
	if (strlen(p->control) > CONTROL_DIR_MAX)
		return gg_err_set(err, GG_EIO,
				  "'%s/gridgpu-cm-%u' is not yours, and '%s' is too long for "
				  "ssh's control sockets: set XDG_RUNTIME_DIR to a short private "
				  "directory",
				  t, (unsigned)geteuid(), p->control);
	return gg_dir_private(p->control, err);
}

int gg_ssh_paths_init(struct gg_ssh_paths *p, struct gg_err *err)
{
	memset(p, 0, sizeof *p);
	char *base;
	int rc = gg_xdg_dir(GG_XDG_CONFIG, &base, err);
	if (rc < 0)
		return rc;
	p->dir = gg_strdup_printf("%s/ssh", base);
	free(base);
	if (!p->dir)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	p->config = gg_strdup_printf("%s/config", p->dir);
	p->config_win = gg_strdup_printf("%s/config.windows", p->dir);
	p->known_hosts = gg_strdup_printf("%s/known_hosts", p->dir);
	p->keys = gg_strdup_printf("%s/keys", p->dir);
	if (!p->config || !p->config_win || !p->known_hosts || !p->keys) {
		gg_ssh_paths_clear(p);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	/* The parent of ssh/ may be shared with other config: only ssh/ and below
	 * must be private. Every path goes into the config: check them here. */
	if ((rc = gg_ssh_cfg_check("the gridgpu config directory", p->known_hosts, GG_SSHV_PATH,
				   err)) < 0 ||
	    (rc = gg_ssh_cfg_check("the gridgpu config directory", p->config, GG_SSHV_INCLUDE,
				   err)) < 0 ||
	    (rc = gg_dir_private(p->dir, err)) < 0 || (rc = gg_dir_private(p->keys, err)) < 0 ||
	    (rc = control_dir(p, err)) < 0 ||
	    (rc = gg_ssh_cfg_check("the control socket directory", p->control, GG_SSHV_PATH, err)) <
		    0) {
		gg_err_prefix(err, "generated SSH configuration");
		gg_ssh_paths_clear(p);
		return rc;
	}
	return 0;
}

char *gg_ssh_host_alias(const struct gg_ssh_target *t)
{
	return gg_strdup_printf("gridgpu-%s", t->uid ? t->uid : t->name);
}

char **gg_ssh_session_argv(const char *config, const char *name, char *const *args, int nargs)
{
	char **av = calloc((size_t)(nargs > 0 ? nargs : 0) + 5, sizeof *av);
	if (!av)
		return NULL;
	int k = 0, i = 0;
	av[k++] = (char *)"ssh";
	av[k++] = (char *)"-F";
	av[k++] = (char *)config;
	/* ssh's options first (with the value of those that take one), then the
	 * host, then the command */
	for (; i < nargs && args[i][0] == '-' && args[i][1]; i++) {
		av[k++] = args[i];
		char last = args[i][strlen(args[i]) - 1];
		if (args[i][1] != '-' && strchr("BbcDEeFIiJLlmOoPpQRSWw", last) && i + 1 < nargs)
			av[k++] = args[++i];
	}
	av[k++] = (char *)name;
	for (; i < nargs; i++)
		av[k++] = args[i];
	av[k] = NULL;
	return av;
}

int gg_ssh_session_name_ok(const char *name, struct gg_err *err)
{
	int rc = gg_ssh_cfg_check("session name", name, GG_SSHV_ALIAS, err);
	if (rc < 0)
		return rc;
	/* The Include comes first in ~/.ssh/config: a session named like a host
	 * (github.com, 10.0.0.1, localhost) would take that host over. */
	if (strchr(name, '.') || strcasecmp(name, "localhost") == 0)
		return gg_err_set(
			err, GG_EUSAGE,
			"session name '%s': a name with '.' (or localhost) could take the "
			"place of a real host in your ssh config: use letters, digits, "
			"'_', '-'",
			name);
	return 0;
}

/* "  KW VALUE\n", VALUE checked and quoted by gg_ssh_cfg_value. */
static int kw(FILE *f, const char *keyword, const char *field, const char *v, enum gg_sshv kind,
	      struct gg_err *err)
{
	char *q = gg_ssh_cfg_value(field, v, kind, err);
	if (!q)
		return err->code;
	fprintf(f, "  %s %s\n", keyword, q);
	free(q);
	return 0;
}

/* A hop that asks for a second factor: ssh, scp, VS Code and the hops after it
 * ride on the master 'gridgpu login' opened (never one of their own: no prompt
 * nobody sees). */
static int master_lines(FILE *f, const struct gg_site *site, int k, struct gg_err *err)
{
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	char *ctl = rc == 0 ? gg_ssh_master_path(p.control, site, k, err) : NULL;
	if (ctl)
		rc = kw(f, "ControlPath", "control socket", ctl, GG_SSHV_PATH, err);
	else if (rc == 0)
		rc = err->code;
	if (rc == 0)
		fprintf(f, "  ControlMaster no\n");
	free(ctl);
	gg_ssh_paths_clear(&p);
	return rc;
}

/* windows: for OpenSSH for Windows, which has no ControlMaster: a second-factor
 * hop there asks for its code at each connection (no BatchMode, no master). */
static int format_hop(FILE *f, const struct gg_site *site, int k, int windows, struct gg_err *err)
{
	struct gg_ssh_jump jp;
	char field[96];
	int rc;
	if ((rc = gg_ssh_cfg_check("a site name", site->name, GG_SSHV_ALIAS, err)) < 0)
		return rc;
	snprintf(field, sizeof field, "jump host %d of site %s", k + 1, site->name);
	if ((rc = gg_ssh_jump_parse(site->jumps[k], &jp, err)) < 0)
		return gg_err_prefix(err, "%s", field);
	fprintf(f, "\nHost gridgpu-hop.%s.%d\n", site->name, k + 1);
	if ((rc = kw(f, "HostName", field, jp.host, GG_SSHV_HOST, err)) < 0)
		return rc;
	if (jp.port)
		fprintf(f, "  Port %d\n", jp.port);
	if (jp.user[0] && (rc = kw(f, "User", field, jp.user, GG_SSHV_USER, err)) < 0)
		return rc;
	if (k > 0)
		fprintf(f, "  ProxyJump gridgpu-hop.%s.%d\n", site->name, k);
	snprintf(field, sizeof field, "identity of site %s", site->name);
	if (site->identity) {
		if ((rc = kw(f, "IdentityFile", field, site->identity, GG_SSHV_PATH, err)) < 0)
			return rc;
		fprintf(f, "  IdentitiesOnly yes\n");
	}
	snprintf(field, sizeof field, "known_hosts of site %s", site->name);
	if (site->known_hosts) {
		rc = kw(f, "UserKnownHostsFile", field, site->known_hosts, GG_SSHV_PATH, err);
		if (rc < 0)
			return rc;
		fprintf(f, "  StrictHostKeyChecking yes\n");
	}
	return gg_site_second_factor(site, k) && !windows ? master_lines(f, site, k, err) : 0;
}

/* Text written to a memory stream, then to f when all of it could be made:
 * a value that cannot be written leaves out the whole block, never half. */
struct block {
	FILE *m;
	char *buf;
	size_t len;
};

static int block_open(struct block *b, struct gg_err *err)
{
	memset(b, 0, sizeof *b);
	b->m = open_memstream(&b->buf, &b->len);
	return b->m ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

static int block_close(struct block *b, FILE *f, int rc, struct gg_err *err)
{
	if (fclose(b->m) != 0 && rc == 0)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0)
		fwrite(b->buf, 1, b->len, f);
	free(b->buf);
	return rc;
}

static int format_hops(FILE *f, const struct gg_site *site, const char *extra, int windows,
		       struct gg_err *err)
{
	struct block b;
	int rc = block_open(&b, err);
	if (rc < 0)
		return rc;
	for (int k = 0; k < site->njumps && rc == 0; k++) {
		rc = format_hop(b.m, site, k, windows, err);
		if (!gg_site_second_factor(site, k) || !windows)
			fprintf(b.m, "  BatchMode yes\n");
		fprintf(b.m, "%s", extra ? extra : "");
	}
	return block_close(&b, f, rc, err);
}

int gg_ssh_format_hops(FILE *f, const struct gg_site *site, const char *extra, struct gg_err *err)
{
	return format_hops(f, site, extra, 0, err);
}

/* One master connection per session, its socket named by the session's id
 * (as its HostKeyAlias): ssh's %C hashes host, port, user and hops only, so a
 * session that got the node and port of an earlier one whose master lingers
 * (a login of it still open) would ride that master into the earlier session. */
static int control_lines(FILE *f, const struct gg_ssh_paths *p, const struct gg_ssh_target *t,
			 struct gg_err *err)
{
	char *q = gg_ssh_cfg_value("control socket directory", p->control, GG_SSHV_PATH, err);
	if (!q)
		return err->code;
	char *alias = t->uid ? gg_ssh_host_alias(t) : NULL;
	/* (no id, or a longer one than %C's 40 characters: %C) */
	const char *name = alias && strlen(alias) <= 40 ? alias : "%C";
	/* the quoted, escaped directory without its closing '"', then the name */
	fprintf(f, "  ControlMaster auto\n  ControlPath %.*s/%s\"\n  ControlPersist 10m\n",
		(int)strlen(q) - 1, q, name);
	free(alias);
	free(q);
	return 0;
}

static int format_session(FILE *f, const struct gg_ssh_paths *p, const struct gg_site *site,
			  const struct gg_ssh_target *t, int windows, struct gg_err *err)
{
	char field[96];
	int rc;
	if ((rc = gg_ssh_session_name_ok(t->name, err)) < 0)
		return rc;
	if (!t->node || t->port <= 0 || !t->host_key)
		return gg_err_set(err, GG_EUSAGE, "session %s has not published its sshd yet",
				  t->name);
	char *alias = gg_ssh_host_alias(t);
	if (!alias)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	rc = gg_ssh_cfg_check("session id", alias, GG_SSHV_ALIAS, err);
	fprintf(f, "\n# session %s\nHost %s\n", t->name, t->name);
	snprintf(field, sizeof field, "node of session %s", t->name);
	if (rc == 0)
		rc = kw(f, "HostName", field, t->node, GG_SSHV_HOST, err);
	fprintf(f, "  Port %d\n", t->port);
	snprintf(field, sizeof field, "user of session %s", t->name);
	if (rc == 0 && t->user)
		rc = kw(f, "User", field, t->user, GG_SSHV_USER, err);
	if (site && site->njumps)
		fprintf(f, "  ProxyJump gridgpu-hop.%s.%d\n", site->name, site->njumps);
	fprintf(f, "  HostKeyAlias %s\n", alias);
	free(alias);
	if (rc == 0)
		rc = kw(f, "UserKnownHostsFile", "generated known_hosts", p->known_hosts,
			GG_SSHV_PATH, err);
	fprintf(f, "  StrictHostKeyChecking yes\n  CheckHostIP no\n");
	snprintf(field, sizeof field, "key of session %s", t->name);
	if (rc == 0 && t->key) {
		rc = kw(f, "IdentityFile", field, t->key, GG_SSHV_PATH, err);
		fprintf(f, "  IdentitiesOnly yes\n");
	}
	fprintf(f, "  ConnectTimeout %d\n  ServerAliveInterval 30\n  ServerAliveCountMax 4\n",
		GG_SSH_CONNECT_TIMEOUT);
	if (rc == 0 && !windows)
		rc = control_lines(f, p, t, err);
	return rc;
}

/* One session's block, or a comment saying why it was left out. */
/* Why something was left out, as a comment. The messages name fields, never
 * values; control characters are replaced all the same. */
static void comment(FILE *f, const char *what, const char *msg)
{
	fprintf(f, "\n# %s: ", what);
	for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
		fputc(*c < 0x20 || *c == 0x7f ? '?' : *c, f);
	fputc('\n', f);
}

static void session_block(FILE *f, const struct gg_ssh_paths *p, const struct gg_config *cfg,
			  const struct gg_ssh_target *t, int windows)
{
	struct gg_err err = {0};
	const struct gg_site *site = t->site ? gg_config_site(cfg, t->site) : NULL;
	struct block b, hops;
	int rc = 0;
	if (site && site->njumps && (rc = block_open(&hops, &err)) == 0) {
		/* the hops were written before; this is a check only */
		rc = gg_ssh_format_hops(hops.m, site, NULL, &err);
		fclose(hops.m);
		free(hops.buf);
		if (rc < 0)
			gg_err_prefix(&err, "its site's jump hosts were left out");
	}
	if (rc == 0 && (rc = block_open(&b, &err)) == 0) {
		rc = format_session(b.m, p, site, t, windows, &err);
		rc = block_close(&b, f, rc, &err);
	}
	if (rc < 0)
		comment(f, "a session was left out", err.msg);
}

/* Does a session use site s? */
static int site_used(const struct gg_site *s, const struct gg_ssh_target *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].site && strcmp(t[i].site, s->name) == 0)
			return 1;
	return 0;
}

char *gg_ssh_format_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			   const struct gg_ssh_target *t, size_t n, int windows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fprintf(f,
		"# Generated by gridgpu: do not edit, it is rewritten on every change.\n"
		"# Use it with 'ssh -F %s NAME', or 'gridgpu ssh-config --install'.\n",
		gg_ssh_cfg_check("", p->config, GG_SSHV_PATH, NULL) == 0 ? p->config : "FILE");
	/* The jump hosts of each site that has a session. A site whose hops
	 * cannot be written leaves out its sessions too. */
	for (size_t s = 0; cfg && s < cfg->nsites; s++) {
		const struct gg_site *site = &cfg->sites[s];
		struct gg_err err = {0};
		/* (a site with a second-factor hop: for gridgpu login and plain ssh) */
		if (!site_used(site, t, n) && !site->nsecond_factor)
			continue;
		char extra[64];
		snprintf(extra, sizeof extra, "  ConnectTimeout %d\n  ServerAliveInterval 30\n",
			 GG_SSH_CONNECT_TIMEOUT);
		if (format_hops(f, site, extra, windows, &err) < 0) {
			comment(f, "jump hosts left out", err.msg);
		}
	}
	for (size_t i = 0; i < n; i++)
		session_block(f, p, cfg, &t[i], windows);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int gg_ssh_write_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
			const struct gg_ssh_target *t, size_t n, struct gg_err *err)
{
	int rc = 0;
	char *text = gg_ssh_format_config(p, cfg, t, n, 0);
	char *win = gg_ssh_format_config(p, cfg, t, n, 1);
	char *kh = NULL;
	size_t khlen = 0;
	FILE *f = open_memstream(&kh, &khlen);
	if (!text || !win || !f) {
		if (f)
			fclose(f);
		free(kh);
		free(text);
		free(win);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (!t[i].host_key)
			continue;
		char *alias = gg_ssh_host_alias(&t[i]);
		fprintf(f, "%s %s\n", alias ? alias : t[i].name, t[i].host_key);
		free(alias);
	}
	fclose(f);
	/* known_hosts first: a config naming a key not yet pinned would fail. */
	/* Each sync writes them: only what changed (a refresh that changed
	 * nothing writes and syncs nothing). */
	if ((rc = gg_file_write_changed(p->known_hosts, kh, khlen, 0600, err)) == 0 &&
	    (rc = gg_file_write_changed(p->config, text, strlen(text), 0600, err)) == 0)
		rc = gg_file_write_changed(p->config_win, win, strlen(win), 0600, err);
	free(kh);
	free(text);
	free(win);
	return rc;
}

/* Run an OpenSSH tool (ssh-keygen): what it says goes into the error, not
 * onto the user's terminal. */
static int run(char *const argv[], struct gg_err *err)
{
	struct gg_run r;
	int rc = gg_run_capture(argv, 60000, 4096, &r, err);
	if (rc == GG_ENOTFOUND)
		return gg_err_set(err, GG_EFAIL, "%s is not installed (install openssh-client)",
				  argv[0]);
	if (rc < 0)
		return rc;
	char line[300];
	gg_run_last_line(&r, line, sizeof line);
	if (r.status != 0)
		rc = gg_err_set(err, GG_EFAIL, "%s failed (%s %d)%s%s", argv[0],
				r.status < GG_RUN_SIGNAL ? "exit" : "signal",
				r.status < GG_RUN_SIGNAL ? r.status : r.status - GG_RUN_SIGNAL,
				line[0] ? ": " : "", line);
	gg_run_clear(&r);
	return rc;
}

void gg_ssh_key_remove(const char *path)
{
	char *pub = gg_strdup_printf("%s.pub", path);
	gg_file_shred(path, NULL);
	if (pub)
		unlink(pub);
	free(pub);
}

int gg_ssh_keygen(const char *path, const char *comment, struct gg_err *err)
{
	gg_ssh_key_remove(path);
	char *argv[] = {"ssh-keygen",    "-q", "-t",         "ed25519", "-N", "", "-C",
			(char *)comment, "-f", (char *)path, NULL};
	int rc = run(argv, err);
	if (rc < 0)
		return gg_err_prefix(err, "making the session key '%s'", path);
	if (chmod(path, 0600) < 0)
		return gg_err_sys(err, GG_EIO, errno, "'%s'", path);
	return 0;
}

/* The file to change: user_config, or the file a symbolic link there names
 * (a dotfile manager's link is kept; its target is written). malloc'd. */
static int resolve_user_config(const char *user_config, char **out, struct gg_err *err)
{
	struct stat st;
	if (lstat(user_config, &st) == 0 && S_ISLNK(st.st_mode)) {
		if (!(*out = realpath(user_config, NULL)))
			return gg_err_sys(err, GG_EIO, errno,
					  "'%s' is a symbolic link to nothing usable: fix the link",
					  user_config);
		return 0;
	}
	*out = strdup(user_config);
	return *out ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

/* A copy of old (len bytes, mode) in target.gridgpu-backup. */
static int backup(const char *target, const char *old, size_t len, mode_t mode, char **bak,
		  struct gg_err *err)
{
	*bak = gg_strdup_printf("%s.gridgpu-backup", target);
	if (!*bak)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = gg_file_write_atomic(*bak, old, len, mode, err);
	if (rc < 0) {
		free(*bak);
		*bak = NULL;
	}
	return rc;
}

static int add_include(const char *target, const char *line, const char *old, size_t len,
		       char **bak, struct gg_err *err)
{
	struct stat st;
	mode_t mode = 0600;
	int rc = gg_mkdir_parent(target, 0700, err);
	if (rc == 0 && stat(target, &st) == 0) {
		mode = st.st_mode & 07777;
		if (access(target, W_OK) < 0)
			return gg_err_sys(err, GG_EIO, errno, "'%s' cannot be changed", target);
		if (len)
			rc = backup(target, old, len, mode, bak, err);
	}
	if (rc < 0)
		return rc;
	/* An Include inside a Host block is conditional: it must come first. */
	char *text = gg_strdup_printf("# Added by gridgpu (gridgpu ssh-config --install)\n"
				      "Include %s\n\n%s",
				      line, old);
	if (!text)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	rc = gg_file_write_atomic(target, text, strlen(text), mode, err);
	free(text);
	return rc;
}

int gg_ssh_install_include(const char *user_config, const char *include_path, int *added,
			   char **bak, struct gg_err *err)
{
	*added = 0;
	*bak = NULL;
	char *target = NULL, *old = NULL, *q = NULL, *line2 = NULL;
	size_t len = 0;
	int rc = resolve_user_config(user_config, &target, err);
	if (rc == 0 && (rc = gg_file_read(target, 1 << 22, &old, &len, err)) == GG_ENOTFOUND) {
		old = strdup("");
		rc = old ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (rc == 0 && !(q = gg_ssh_cfg_value("Include", include_path, GG_SSHV_INCLUDE, err)))
		rc = err->code;
	if (rc == 0 && !(line2 = gg_strdup_printf("Include %s", include_path)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !strstr(old, q) && !strstr(old, line2)) {
		if ((rc = add_include(target, q, old, len, bak, err)) == 0)
			*added = 1;
	}
	free(target);
	free(old);
	free(q);
	free(line2);
	return rc;
}

/* Do two paths name one directory (a symbolic link, a trailing '/')? */
static int same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	if (realpath(a, ra) && realpath(b, rb))
		return strcmp(ra, rb) == 0;
	return strcmp(a, b) == 0;
}

char *gg_ssh_home_note(const char *home, const char *include_path)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (!home || getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) != 0 || !res ||
	    !res->pw_dir || same_dir(home, res->pw_dir))
		return NULL;
	return gg_strdup_printf("ssh reads ~/.ssh/config in %s (your passwd entry), not in $HOME "
				"(%s): for plain ssh to find the sessions, add 'Include %s' to "
				"%s/.ssh/config, or run this with HOME=%s",
				res->pw_dir, home, include_path, res->pw_dir, res->pw_dir);
}

int gg_ssh_temp_config(const struct gg_ssh_paths *p, const struct gg_config *cfg,
		       const struct gg_ssh_target *t, char **dir, struct gg_err *err)
{
	*dir = gg_strdup_printf("%s/tmp.XXXXXX", p->dir);
	if (!*dir)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	if (!mkdtemp(*dir)) {
		int rc = gg_err_sys(err, GG_EIO, errno, "'%s'", p->dir);
		free(*dir);
		*dir = NULL;
		return rc;
	}
	struct gg_ssh_paths q = *p;
	q.config = gg_strdup_printf("%s/config", *dir);
	q.known_hosts = gg_strdup_printf("%s/known_hosts", *dir);
	char *alias = gg_ssh_host_alias(t);
	char *kh = alias && t->host_key ? gg_strdup_printf("%s %s\n", alias, t->host_key) : NULL;
	char *text = q.config && q.known_hosts ? gg_ssh_format_config(&q, cfg, t, 1, 0) : NULL;
	int rc = !kh || !text ? gg_err_set(err, GG_ENOMEM, "out of memory") : 0;
	if (rc == 0)
		rc = gg_file_write_atomic(q.known_hosts, kh, strlen(kh), 0600, err);
	if (rc == 0)
		rc = gg_file_write_atomic(q.config, text, strlen(text), 0600, err);
	free(alias);
	free(kh);
	free(text);
	free(q.config);
	free(q.known_hosts);
	if (rc < 0) {
		gg_ssh_temp_config_remove(*dir);
		free(*dir);
		*dir = NULL;
	}
	return rc;
}

void gg_ssh_temp_config_remove(const char *dir)
{
	if (!dir)
		return;
	const char *names[] = {"config", "known_hosts"};
	for (size_t i = 0; i < 2; i++) {
		char *f = gg_strdup_printf("%s/%s", dir, names[i]);
		if (f)
			unlink(f);
		free(f);
	}
	rmdir(dir);
}
