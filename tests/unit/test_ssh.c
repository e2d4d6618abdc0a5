/* Unit tests of lib/ssh: key checks, fingerprints, the generated config. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node/sshview.h"
#include "ssh/ssh.h"

static const char KEY[] =
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C";
static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/gg-unit-ssh.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	setenv("XDG_CONFIG_HOME", dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return unit_rmtree(dir);
}

static void test_pubkey(void **state)
{
	(void)state;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_pubkey_check(KEY, &err), 0);
	char withc[200];
	snprintf(withc, sizeof withc, "%s comment here", KEY);
	assert_int_equal(gg_ssh_pubkey_check(withc, &err), 0);
	/* type and blob disagree */
	assert_int_equal(
		gg_ssh_pubkey_check(
			"ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C",
			&err),
		GG_EPROTO);
	assert_int_equal(gg_ssh_pubkey_check("ssh-ed25519 AAAA", &err), GG_EPROTO);
	assert_int_equal(gg_ssh_pubkey_check("ssh-ed25519 !!!!", &err), GG_EPROTO);
	assert_int_equal(gg_ssh_pubkey_check("ssh-dss AAAAB3NzaC1kc3M=", &err), GG_EPROTO);
	assert_int_equal(gg_ssh_pubkey_check("", &err), GG_EPROTO);
	assert_int_equal(gg_ssh_pubkey_check("ssh-ed25519", &err), GG_EPROTO);
	snprintf(withc, sizeof withc, "%s a\nb", KEY);
	assert_int_equal(gg_ssh_pubkey_check(withc, &err), GG_EPROTO); /* a second line */
}

static void test_fingerprint(void **state)
{
	(void)state;
	/* Compare with ssh-keygen -l on the same key. */
	char path[128], cmd[256], want[128] = "", fp[80];
	snprintf(path, sizeof path, "%s/k.pub", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "%s\n", KEY);
	fclose(f);
	snprintf(cmd, sizeof cmd, "ssh-keygen -l -E sha256 -f '%s' | cut -d' ' -f2", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(want, sizeof want, p));
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	assert_int_equal(gg_ssh_fingerprint(KEY, fp, sizeof fp, NULL), 0);
	assert_string_equal(fp, want);
}

static void test_config(void **state)
{
	(void)state;
	struct gg_ssh_paths p;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	struct stat sb;
	assert_int_equal(stat(p.dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	struct gg_site site = {.name = (char *)"gla",
			       .njumps = 2,
			       .identity = (char *)"/home/u/.ssh/id_gla",
			       .known_hosts = (char *)"/home/u/.ssh/gla_hosts"};
	site.jumps[0] = (char *)"alice@gw.example:2222";
	site.jumps[1] = (char *)"bob@login.example";
	struct gg_config cfg = {.sites = &site, .nsites = 1};
	struct gg_record recs[3] = {
		{.kind = GG_REC_SESSION,
		 .state = GG_S_READY,
		 .name = (char *)"gla-1",
		 .uid = (char *)"aaaaaaaaaaaa",
		 .site = (char *)"gla",
		 .node = (char *)"wn1",
		 .port = 22001,
		 .user = (char *)"gguser",
		 .host_key = (char *)KEY,
		 .key = (char *)"/k/aaaa"},
		{.kind = GG_REC_SESSION,
		 .state = GG_S_KILLED,
		 .name = (char *)"gla-2",
		 .uid = (char *)"bbbbbbbbbbbb",
		 .site = (char *)"gla",
		 .node = (char *)"wn2",
		 .port = 22002,
		 .host_key = (char *)KEY},
		{.kind = GG_REC_JOB, .state = GG_S_READY, .name = (char *)"job-1"},
	};
	char *t = gg_session_format_ssh_config(&p, &cfg, recs, 3, 0);
	assert_non_null(t);
	assert_non_null(strstr(
		t, "Host gridgpu-hop.gla.1\n  HostName gw.example\n  Port 2222\n  User alice\n"));
	assert_non_null(strstr(
		t,
		"Host gridgpu-hop.gla.2\n  HostName login.example\n  User bob\n  ProxyJump gridgpu-hop.gla.1\n"));
	assert_non_null(strstr(t, "IdentityFile \"/home/u/.ssh/id_gla\""));
	assert_non_null(strstr(
		t,
		"Host gla-1\n  HostName wn1\n  Port 22001\n  User gguser\n  ProxyJump gridgpu-hop.gla.2\n  HostKeyAlias gridgpu-aaaaaaaaaaaa\n"));
	assert_non_null(strstr(t, "StrictHostKeyChecking yes"));
	assert_non_null(strstr(t, "ControlMaster auto"));
	assert_null(strstr(t, "Host gla-2")); /* ended: no block */
	assert_null(strstr(t, "job-1"));
	free(t);
	t = gg_session_format_ssh_config(&p, &cfg, recs, 3, 1);
	assert_null(strstr(t, "ControlMaster")); /* not on Windows */
	free(t);
	assert_int_equal(gg_session_write_ssh_config(&p, &cfg, recs, 3, &err), 0);
	char *kh;
	assert_int_equal(gg_file_read(p.known_hosts, 4096, &kh, NULL, &err), 0);
	char want[256];
	snprintf(want, sizeof want, "gridgpu-aaaaaaaaaaaa %s\n", KEY);
	assert_string_equal(kh, want);
	free(kh);
	assert_int_equal(stat(p.config, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* a config directory others can read is refused */
	chmod(p.dir, 0755);
	struct gg_ssh_paths q;
	assert_int_equal(gg_ssh_paths_init(&q, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "chmod 700"));
	chmod(p.dir, 0700);
	gg_ssh_paths_clear(&p);
}

static void test_install_include(void **state)
{
	(void)state;
	char cfg[128], inc[] = "/x/gridgpu/ssh/config";
	struct gg_err err = {0};
	int added;
	char *bak;
	snprintf(cfg, sizeof cfg, "%s/home/.ssh/config", dir);
	/* missing file and directory: created, and no backup claimed */
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &bak, &err), 0);
	assert_int_equal(added, 1);
	assert_null(bak);
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &bak, &err), 0);
	assert_int_equal(added, 0); /* once */
	char *t;
	assert_int_equal(gg_file_read(cfg, 4096, &t, NULL, &err), 0);
	assert_non_null(strstr(t, "Include \"/x/gridgpu/ssh/config\""));
	free(t);
	/* an existing config: the Include goes first, a backup is kept */
	gg_file_write_atomic(cfg, "Host a\n  User b\n", 16, 0644, &err);
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &bak, &err), 0);
	assert_int_equal(gg_file_read(cfg, 4096, &t, NULL, &err), 0);
	assert_true(strstr(t, "Include") < strstr(t, "Host a"));
	free(t);
	char want[160];
	snprintf(want, sizeof want, "%s.gridgpu-backup", cfg);
	assert_non_null(bak);
	assert_string_equal(bak, want);
	assert_int_equal(gg_file_read(bak, 4096, &t, NULL, &err), 0);
	assert_string_equal(t, "Host a\n  User b\n");
	free(t);
	free(bak);
	struct stat sb;
	stat(cfg, &sb);
	assert_int_equal(sb.st_mode & 0777, 0644); /* mode kept */
	/* an Include path that ssh would read otherwise is refused */
	assert_int_equal(gg_ssh_install_include(cfg, "/x/a\"b", &added, &bak, &err), GG_EUSAGE);
	assert_int_equal(gg_ssh_install_include(cfg, "/x/*/config", &added, &bak, &err), GG_EUSAGE);
}

/* A ~/.ssh/config that is a symbolic link (dotfile managers): the link stays,
 * its target gets the Include, the backup is beside the target. */
static void test_install_symlink(void **state)
{
	(void)state;
	char home[128], target[160], link[160], want[200];
	struct gg_err err = {0};
	int added;
	char *bak, *t;
	snprintf(home, sizeof home, "%s/lhome", dir);
	snprintf(target, sizeof target, "%s/dotfiles-ssh-config", dir);
	snprintf(link, sizeof link, "%s/.ssh/config", home);
	assert_int_equal(gg_mkdir_p(home, 0700, &err), 0);
	snprintf(want, sizeof want, "%s/.ssh", home);
	assert_int_equal(gg_mkdir_p(want, 0700, &err), 0);
	assert_int_equal(gg_file_write_atomic(target, "Host mine\n", 10, 0600, &err), 0);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(gg_ssh_install_include(link, "/x/c", &added, &bak, &err), 0);
	assert_int_equal(added, 1);
	struct stat sb;
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	assert_int_equal(gg_file_read(target, 4096, &t, NULL, &err), 0);
	assert_non_null(strstr(t, "Include \"/x/c\""));
	assert_non_null(strstr(t, "Host mine"));
	free(t);
	snprintf(want, sizeof want, "%s.gridgpu-backup", target);
	assert_string_equal(bak, want);
	assert_int_equal(access(bak, R_OK), 0);
	free(bak);
	/* a link to nothing: an error, nothing written */
	unlink(link);
	assert_int_equal(symlink("/nonexistent/gg", link), 0);
	assert_true(gg_ssh_install_include(link, "/x/c", &added, &bak, &err) < 0);
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
}

/* Every class gg_ssh_cfg_value refuses, with the field named. */
static void test_cfg_value_refused(void **state)
{
	(void)state;
	static const char *paths[] = {
		"",
		"/k/a\nProxyCommand touch /tmp/x",
		"/k/a\rb",
		"/k/a\tb",
		"/k/a\x01",
		"/k/a\x7f",
		"/k/a\"b",
		"/k/a\\b",
		"/k/${HOME}/id",
	};
	struct gg_err err = {0};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		gg_err_clear(&err);
		assert_null(gg_ssh_cfg_value("--identity", paths[i], GG_SSHV_PATH, &err));
		assert_int_equal(err.code, GG_EUSAGE);
		assert_non_null(strstr(err.msg, "--identity"));
		assert_null(strchr(err.msg, '\n')); /* one line, the value not echoed */
	}
	char longp[1100];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 1] = '\0';
	assert_int_equal(gg_ssh_cfg_check("f", longp, GG_SSHV_PATH, NULL), GG_EUSAGE);
	static const char *hosts[] = {
		"",    "a b", "-oProxyCommand=x", "h%d",        "h\"", "a,b", "a@b", "[::1]", ":",
		"::g", "h\n", "fe80::1%",         "fe80::1%a b"};
	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
		assert_int_equal(gg_ssh_cfg_check("jump host", hosts[i], GG_SSHV_HOST, &err),
				 GG_EUSAGE);
	static const char *users[] = {"", "-l", ".x", "a b", "a%d", "a@b", "a\"", "root\n"};
	for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
		assert_int_equal(gg_ssh_cfg_check("--user", users[i], GG_SSHV_USER, &err),
				 GG_EUSAGE);
	assert_int_equal(gg_ssh_cfg_check("n", "a*", GG_SSHV_ALIAS, &err), GG_EUSAGE);
	assert_int_equal(gg_ssh_cfg_check("n", "!a", GG_SSHV_ALIAS, &err), GG_EUSAGE);
}

static void test_cfg_value_quoted(void **state)
{
	(void)state;
	struct gg_err err = {0};
	char *q = gg_ssh_cfg_value("f", "/my keys/id %d#1 'x'", GG_SSHV_PATH, &err);
	assert_non_null(q);
	assert_string_equal(q, "\"/my keys/id %%d#1 'x'\"");
	free(q);
	q = gg_ssh_cfg_value("f", "fe80::1%eth0", GG_SSHV_HOST, &err);
	assert_string_equal(q, "fe80::1%%eth0");
	free(q);
	q = gg_ssh_cfg_value("f", "gw.example.org", GG_SSHV_HOST, &err);
	assert_string_equal(q, "gw.example.org");
	free(q);
	q = gg_ssh_cfg_value("f", "/a/b", GG_SSHV_INCLUDE, &err);
	assert_string_equal(q, "\"/a/b\"");
	free(q);
	assert_int_equal(gg_ssh_cfg_check("f", "10.0.0.1", GG_SSHV_HOST, &err), 0);
	assert_int_equal(gg_ssh_cfg_check("f", "alice_1.x-y", GG_SSHV_USER, &err), 0);
}

static void test_jump_parse(void **state)
{
	(void)state;
	struct gg_ssh_jump j;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_jump_parse("alice@gw.example:2222", &j, &err), 0);
	assert_string_equal(j.user, "alice");
	assert_string_equal(j.host, "gw.example");
	assert_int_equal(j.port, 2222);
	assert_int_equal(gg_ssh_jump_parse("u@::1", &j, &err), 0); /* was host ':' port 1 */
	assert_string_equal(j.user, "u");
	assert_string_equal(j.host, "::1");
	assert_int_equal(j.port, 0);
	assert_int_equal(gg_ssh_jump_parse("u@[2001:db8::2]:22", &j, &err), 0);
	assert_string_equal(j.host, "2001:db8::2");
	assert_int_equal(j.port, 22);
	assert_int_equal(gg_ssh_jump_parse("[::1]", &j, &err), 0);
	assert_string_equal(j.host, "::1");
	assert_string_equal(j.user, "");
	assert_int_equal(gg_ssh_jump_parse("::1", &j, &err), 0); /* bare: no port */
	assert_string_equal(j.host, "::1");
	assert_string_equal(j.user, "");
	assert_int_equal(j.port, 0);
	assert_int_equal(gg_ssh_jump_parse("u@[::1]:22", &j, &err), 0);
	assert_string_equal(j.user, "u");
	assert_string_equal(j.host, "::1");
	assert_int_equal(j.port, 22);
	assert_int_equal(gg_ssh_jump_parse("gw", &j, &err), 0);
	static const char *bad[] = {"@gw",
				    "u@",
				    "u@gw:0",
				    "u@gw:65536",
				    "u@gw:x",
				    "u@[::1",
				    "u@[::1]x",
				    "u@gw:22:",
				    "u@%d",
				    "u\"@gw",
				    "u@gw\"",
				    "a@b@c",
				    "u@gw\nProxyCommand x",
				    "u@g w",
				    "u@gw:"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		gg_err_clear(&err);
		assert_int_equal(gg_ssh_jump_parse(bad[i], &j, &err), GG_EUSAGE);
		assert_non_null(strstr(err.msg, "jump host"));
	}
}

static void test_session_names(void **state)
{
	(void)state;
	assert_int_equal(gg_ssh_session_name_ok("gla-1", NULL), 0);
	assert_int_equal(gg_ssh_session_name_ok("github.com", NULL), GG_EUSAGE);
	assert_int_equal(gg_ssh_session_name_ok("10.0.0.1", NULL), GG_EUSAGE);
	assert_int_equal(gg_ssh_session_name_ok("LocalHost", NULL), GG_EUSAGE);
	assert_int_equal(gg_ssh_session_name_ok("a*", NULL), GG_EUSAGE);
}

static void test_keygen(void **state)
{
	(void)state;
	char path[128];
	struct gg_err err = {0};
	snprintf(path, sizeof path, "%s/sk", dir);
	assert_int_equal(gg_ssh_keygen(path, "gridgpu-test", &err), 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	char pub[140], *t;
	snprintf(pub, sizeof pub, "%s.pub", path);
	assert_int_equal(gg_file_read(pub, 4096, &t, NULL, &err), 0);
	t[strcspn(t, "\n")] = '\0';
	assert_int_equal(gg_ssh_pubkey_check(t, &err), 0);
	free(t);
	gg_ssh_key_remove(path);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(pub, F_OK), -1);
	/* ssh-keygen's reason is in the error (not on the terminal) */
	snprintf(path, sizeof path, "%s/nosuch/sk", dir);
	assert_int_equal(gg_ssh_keygen(path, "gridgpu-test", &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "ssh-keygen failed (exit 1): "));
	assert_non_null(strstr(err.msg, "No such file or directory"));
}

/* Without XDG_RUNTIME_DIR: $TMPDIR/gridgpu-cm-UID, unless it is not a private
 * directory of ours; then $XDG_STATE_HOME/gridgpu/cm, and a note says so. */
static void test_control_dir(void **state)
{
	(void)state;
	char cm[128], state_home[128], want[160], other[160];
	struct gg_err err = {0};
	struct gg_ssh_paths p;
	struct stat sb;
	unsetenv("XDG_RUNTIME_DIR");
	setenv("TMPDIR", dir, 1);
	snprintf(state_home, sizeof state_home, "%s/st", dir);
	setenv("XDG_STATE_HOME", state_home, 1);
	snprintf(cm, sizeof cm, "%s/gridgpu-cm-%u", dir, (unsigned)geteuid());
	snprintf(want, sizeof want, "%s/gridgpu/cm", state_home);
	/* free: made, private */
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	assert_string_equal(p.control, cm);
	assert_null(p.control_note);
	gg_ssh_paths_clear(&p);
	/* a symbolic link planted there is not followed */
	snprintf(other, sizeof other, "%s/elsewhere", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	rmdir(cm);
	assert_int_equal(symlink(other, cm), 0);
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	assert_string_equal(p.control, want);
	assert_non_null(p.control_note);
	assert_int_equal(lstat(want, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0700);
	gg_ssh_paths_clear(&p);
	/* a file there */
	unlink(cm);
	assert_int_equal(gg_file_write_atomic(cm, "x", 1, 0600, &err), 0);
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	assert_string_equal(p.control, want);
	gg_ssh_paths_clear(&p);
	unlink(cm);
	/* someone else's directory (needs root to make one) */
	if (geteuid() == 0) {
		assert_int_equal(mkdir(cm, 0777), 0);
		assert_int_equal(chown(cm, 65534, 65534), 0);
		assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
		assert_string_equal(p.control, want);
		assert_non_null(strstr(p.control_note, "not a private directory of yours"));
		gg_ssh_paths_clear(&p);
		rmdir(cm);
	}
	unsetenv("TMPDIR");
	unsetenv("XDG_STATE_HOME");
}

/* The real ssh reads the generated config: hostile values are either written
 * so that ssh reads back exactly them, or their block is left out; the file
 * always parses (ssh -G exits 0) and no option is injected. */
static char *ssh_G(const char *cfg, const char *host, int *status)
{
	char cmd[512], *out = NULL;
	size_t len = 0;
	snprintf(cmd, sizeof cmd, "ssh -G -F '%s' '%s' 2>&1", cfg, host);
	FILE *p = popen(cmd, "r"), *m = open_memstream(&out, &len);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		fwrite(buf, 1, n, m);
	fclose(m);
	*status = pclose(p);
	return out;
}

static void test_config_ssh_G(void **state)
{
	(void)state;
	if (system("command -v ssh >/dev/null 2>&1") != 0)
		skip();
	struct gg_ssh_paths p;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	struct gg_site sites[3] = {
		{.name = (char *)"ok",
		 .njumps = 1,
		 .identity = (char *)"/my keys/id %d#1",
		 .known_hosts = (char *)"/kh 'x'"},
		{.name = (char *)"nl",
		 .njumps = 1,
		 .identity = (char *)"/k/id\nProxyCommand touch /tmp/gg-pwned",
		 .known_hosts = (char *)"/k/kh\"x"},
		{.name = (char *)"pct", .njumps = 1},
	};
	sites[0].jumps[0] = (char *)"alice@[::1]:2222";
	sites[1].jumps[0] = (char *)"bob@gw";
	sites[2].jumps[0] = (char *)"carol@gw%d";
	struct gg_config cfg = {.sites = sites, .nsites = 3};
	struct gg_record r[4];
	const char *names[] = {"s-ok", "s-nl", "s-pct", "github.com"};
	const char *site_of[] = {"ok", "nl", "pct", "ok"};
	for (int i = 0; i < 4; i++)
		r[i] = (struct gg_record){.kind = GG_REC_SESSION,
					  .state = GG_S_READY,
					  .name = (char *)names[i],
					  .uid = (char *)"aaaaaaaaaaaa",
					  .site = (char *)site_of[i],
					  .node = (char *)"wn1",
					  .port = 22001,
					  .user = (char *)"gg",
					  .host_key = (char *)KEY,
					  .key = (char *)"/k/sess key %h"};
	assert_int_equal(gg_session_write_ssh_config(&p, &cfg, r, 4, &err), 0);
	int st;
	char *o = ssh_G(p.config, "s-ok", &st);
	assert_int_equal(st, 0);
	assert_non_null(strstr(o, "\nhostname wn1\n"));
	/* ssh -G shows IdentityFile before its %-expansion ("%%" is then "%"),
	 * UserKnownHostsFile after it */
	assert_non_null(strstr(o, "\nidentityfile /k/sess key %%h\n"));
	assert_non_null(strstr(o, "\nproxyjump gridgpu-hop.ok.1\n"));
	free(o);
	o = ssh_G(p.config, "gridgpu-hop.ok.1", &st);
	assert_int_equal(st, 0);
	assert_non_null(strstr(o, "\nhostname ::1\n"));
	assert_non_null(strstr(o, "\nport 2222\n"));
	assert_non_null(strstr(o, "\nidentityfile /my keys/id %%d#1\n"));
	assert_non_null(strstr(o, "\nuserknownhostsfile /kh 'x'\n"));
	free(o);
	/* left out: the names resolve to nothing of ours, nothing injected */
	const char *gone[] = {"s-nl", "s-pct", "github.com", "gridgpu-hop.nl.1",
			      "gridgpu-hop.pct.1"};
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		o = ssh_G(p.config, gone[i], &st);
		assert_int_equal(st, 0);
		assert_null(strstr(o, "\nhostname wn1\n"));
		assert_null(strstr(o, "gg-pwned"));
		assert_null(strstr(o, "\nproxycommand "));
		assert_null(strstr(o, "\nproxyjump "));
		free(o);
	}
	char *t;
	assert_int_equal(gg_file_read(p.config, 1 << 16, &t, NULL, &err), 0);
	assert_null(strstr(t, "gg-pwned"));
	assert_non_null(strstr(t, "# a session was left out"));
	free(t);
	gg_ssh_paths_clear(&p);
}

/* ---- the generated text, byte for byte ---- */

/* Sites and records of every kind the writer meets: two hops, no hops, a hop
 * that cannot be written, a site no session uses; sessions ready, killed,
 * finished, starting with and without a pinned key, queued, unknown, with no
 * site, on a site not configured, named like a host; a batch job. */
static struct gg_site mixed_sites[4];
static struct gg_config mixed_cfg;
static struct gg_record mixed_recs[11];

static void mixed_init(void)
{
	mixed_sites[0] = (struct gg_site){.name = (char *)"gla",
					  .njumps = 2,
					  .identity = (char *)"/home/u/.ssh/id_gla",
					  .known_hosts = (char *)"/home/u/.ssh/gla_hosts"};
	mixed_sites[0].jumps[0] = (char *)"alice@gw.example:2222";
	mixed_sites[0].jumps[1] = (char *)"bob@login.example";
	mixed_sites[1] = (struct gg_site){.name = (char *)"solo"};
	mixed_sites[2] = (struct gg_site){.name = (char *)"bad", .njumps = 1};
	mixed_sites[2].jumps[0] = (char *)"carol@gw%d";
	mixed_sites[3] = (struct gg_site){.name = (char *)"unused", .njumps = 1};
	mixed_sites[3].jumps[0] = (char *)"dave@gw.unused";
	mixed_cfg = (struct gg_config){.sites = mixed_sites, .nsites = 4};
	const struct {
		const char *name, *uid, *site, *user, *key;
		enum gg_rec_kind kind;
		enum gg_sess_state state;
		int nokey;
	} t[11] = {
		{"gla-1", "aaaaaaaaaaaa", "gla", "gguser", "/k/a a%h", GG_REC_SESSION, GG_S_READY,
		 0},
		{"gla-2", "bbbbbbbbbbbb", "gla", NULL, NULL, GG_REC_SESSION, GG_S_KILLED, 0},
		{"solo-1", NULL, "solo", NULL, NULL, GG_REC_SESSION, GG_S_STARTING, 0},
		{"gla-3", "cccccccccccc", "gla", NULL, NULL, GG_REC_SESSION, GG_S_STARTING, 1},
		{"job-1", "dddddddddddd", "gla", NULL, NULL, GG_REC_JOB, GG_S_RUNNING, 0},
		{"bad-1", "eeeeeeeeeeee", "bad", NULL, NULL, GG_REC_SESSION, GG_S_READY, 0},
		{"github.com", "ffffffffffff", "gla", NULL, NULL, GG_REC_SESSION, GG_S_READY, 0},
		{"nosite", "000000000000", NULL, "u", "/k/n", GG_REC_SESSION, GG_S_READY, 0},
		{"lost", "111111111111", "nosuch", NULL, NULL, GG_REC_SESSION, GG_S_UNKNOWN, 0},
		{"done", "222222222222", "gla", NULL, NULL, GG_REC_SESSION, GG_S_FINISHED, 0},
		{"gla-4", "333333333333", "gla", "x", "/k/4", GG_REC_SESSION, GG_S_QUEUED, 0},
	};
	for (int i = 0; i < 11; i++)
		mixed_recs[i] = (struct gg_record){.kind = t[i].kind,
						   .state = t[i].state,
						   .name = (char *)t[i].name,
						   .uid = (char *)t[i].uid,
						   .site = (char *)t[i].site,
						   .node = (char *)"wn1.example",
						   .port = 22000 + i,
						   .user = (char *)t[i].user,
						   .host_key = t[i].nokey ? NULL : (char *)KEY,
						   .key = (char *)t[i].key};
}

/* What the writer made of mixed_recs before the ssh API took plain targets. */
static const char MIXED_CONFIG[] =
	"# Generated by gridgpu: do not edit, it is rewritten on every change.\n"
	"# Use it with 'ssh -F /h/.config/gridgpu/ssh/config NAME', or 'gridgpu ssh-config --install'.\n"
	"\n"
	"Host gridgpu-hop.gla.1\n"
	"  HostName gw.example\n"
	"  Port 2222\n"
	"  User alice\n"
	"  IdentityFile \"/home/u/.ssh/id_gla\"\n"
	"  IdentitiesOnly yes\n"
	"  UserKnownHostsFile \"/home/u/.ssh/gla_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  BatchMode yes\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"\n"
	"Host gridgpu-hop.gla.2\n"
	"  HostName login.example\n"
	"  User bob\n"
	"  ProxyJump gridgpu-hop.gla.1\n"
	"  IdentityFile \"/home/u/.ssh/id_gla\"\n"
	"  IdentitiesOnly yes\n"
	"  UserKnownHostsFile \"/home/u/.ssh/gla_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  BatchMode yes\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"\n"
	"# jump hosts left out: jump host 1 of site bad: jump host: this host cannot be written to the ssh config: give a host name (letters, digits, '.', '-', '_') or an IP address\n"
	"\n"
	"# session gla-1\n"
	"Host gla-1\n"
	"  HostName wn1.example\n"
	"  Port 22000\n"
	"  User gguser\n"
	"  ProxyJump gridgpu-hop.gla.2\n"
	"  HostKeyAlias gridgpu-aaaaaaaaaaaa\n"
	"  UserKnownHostsFile \"/h/.config/gridgpu/ssh/known_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  CheckHostIP no\n"
	"  IdentityFile \"/k/a a%%h\"\n"
	"  IdentitiesOnly yes\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"  ServerAliveCountMax 4\n"
	"  ControlMaster auto\n"
	"  ControlPath \"/run/u/gridgpu-cm/gridgpu-aaaaaaaaaaaa\"\n"
	"  ControlPersist 10m\n"
	"\n"
	"# session solo-1\n"
	"Host solo-1\n"
	"  HostName wn1.example\n"
	"  Port 22002\n"
	"  HostKeyAlias gridgpu-solo-1\n"
	"  UserKnownHostsFile \"/h/.config/gridgpu/ssh/known_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  CheckHostIP no\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"  ServerAliveCountMax 4\n"
	"  ControlMaster auto\n"
	"  ControlPath \"/run/u/gridgpu-cm/%C\"\n"
	"  ControlPersist 10m\n"
	"\n"
	"# a session was left out: its site's jump hosts were left out: jump host 1 of site bad: jump host: this host cannot be written to the ssh config: give a host name (letters, digits, '.', '-', '_') or an IP address\n"
	"\n"
	"# a session was left out: session name 'github.com': a name with '.' (or localhost) could take the place of a real host in your ssh config: use letters, digits, '_', '-'\n"
	"\n"
	"# session nosite\n"
	"Host nosite\n"
	"  HostName wn1.example\n"
	"  Port 22007\n"
	"  User u\n"
	"  HostKeyAlias gridgpu-000000000000\n"
	"  UserKnownHostsFile \"/h/.config/gridgpu/ssh/known_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  CheckHostIP no\n"
	"  IdentityFile \"/k/n\"\n"
	"  IdentitiesOnly yes\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"  ServerAliveCountMax 4\n"
	"  ControlMaster auto\n"
	"  ControlPath \"/run/u/gridgpu-cm/gridgpu-000000000000\"\n"
	"  ControlPersist 10m\n"
	"\n"
	"# session lost\n"
	"Host lost\n"
	"  HostName wn1.example\n"
	"  Port 22008\n"
	"  HostKeyAlias gridgpu-111111111111\n"
	"  UserKnownHostsFile \"/h/.config/gridgpu/ssh/known_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  CheckHostIP no\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"  ServerAliveCountMax 4\n"
	"  ControlMaster auto\n"
	"  ControlPath \"/run/u/gridgpu-cm/gridgpu-111111111111\"\n"
	"  ControlPersist 10m\n"
	"\n"
	"# session gla-4\n"
	"Host gla-4\n"
	"  HostName wn1.example\n"
	"  Port 22010\n"
	"  User x\n"
	"  ProxyJump gridgpu-hop.gla.2\n"
	"  HostKeyAlias gridgpu-333333333333\n"
	"  UserKnownHostsFile \"/h/.config/gridgpu/ssh/known_hosts\"\n"
	"  StrictHostKeyChecking yes\n"
	"  CheckHostIP no\n"
	"  IdentityFile \"/k/4\"\n"
	"  IdentitiesOnly yes\n"
	"  ConnectTimeout 20\n"
	"  ServerAliveInterval 30\n"
	"  ServerAliveCountMax 4\n"
	"  ControlMaster auto\n"
	"  ControlPath \"/run/u/gridgpu-cm/gridgpu-333333333333\"\n"
	"  ControlPersist 10m\n";

/* The text without the lines that start with one of the prefixes. */
static char *without_lines(const char *t, const char *const *prefixes, size_t n)
{
	char *out = malloc(strlen(t) + 1), *o = out;
	assert_non_null(out);
	while (*t) {
		size_t len = strcspn(t, "\n") + (strchr(t, '\n') ? 1 : 0);
		int drop = 0;
		for (size_t i = 0; i < n; i++)
			drop |= strncmp(t, prefixes[i], strlen(prefixes[i])) == 0;
		if (!drop) {
			memcpy(o, t, len);
			o += len;
		}
		t += len;
	}
	*o = '\0';
	return out;
}

static void test_config_bytes(void **state)
{
	(void)state;
	mixed_init();
	struct gg_ssh_paths p = {.dir = (char *)"/h/.config/gridgpu/ssh",
				 .config = (char *)"/h/.config/gridgpu/ssh/config",
				 .known_hosts = (char *)"/h/.config/gridgpu/ssh/known_hosts",
				 .control = (char *)"/run/u/gridgpu-cm"};
	char *t = gg_session_format_ssh_config(&p, &mixed_cfg, mixed_recs, 11, 0);
	assert_non_null(t);
	assert_string_equal(t, MIXED_CONFIG);
	free(t);
	/* the Windows form: the same without connection sharing */
	const char *const control[] = {"  ControlMaster ", "  ControlPath ", "  ControlPersist "};
	char *want = without_lines(MIXED_CONFIG, control, 3);
	t = gg_session_format_ssh_config(&p, &mixed_cfg, mixed_recs, 11, 1);
	assert_non_null(t);
	assert_string_equal(t, want);
	free(t);
	free(want);
	/* known_hosts: every live session's key, its block written or not */
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	assert_int_equal(gg_session_write_ssh_config(&p, &mixed_cfg, mixed_recs, 11, &err), 0);
	char *kh = NULL, wantkh[1024] = "";
	const char *aliases[] = {"aaaaaaaaaaaa", "solo-1",       "eeeeeeeeeeee", "ffffffffffff",
				 "000000000000", "111111111111", "333333333333"};
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		snprintf(wantkh + strlen(wantkh), sizeof wantkh - strlen(wantkh), "gridgpu-%s %s\n",
			 aliases[i], KEY);
	assert_int_equal(gg_file_read(p.known_hosts, 1 << 16, &kh, NULL, &err), 0);
	assert_string_equal(kh, wantkh);
	free(kh);
	gg_ssh_paths_clear(&p);
}

/* A second-factor hop rides on gridgpu login's master in the config; the
 * Windows config (no ControlMaster in OpenSSH for Windows) lets it ask for its
 * code instead: no ControlPath, no BatchMode for that hop. */
static void test_second_factor_windows(void **state)
{
	(void)state;
	struct gg_site site = {.name = (char *)"otp", .njumps = 2, .nsecond_factor = 1};
	site.jumps[0] = (char *)"alice@gw.example";
	site.jumps[1] = (char *)"alice@otp.example";
	site.second_factor[0] = (char *)"2";
	struct gg_config cfg = {.sites = &site, .nsites = 1};
	struct gg_ssh_paths p;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	char *s = gg_ssh_format_config(&p, &cfg, NULL, 0, 0);
	assert_non_null(s);
	const char *h2 = strstr(s, "\nHost gridgpu-hop.otp.2\n");
	assert_non_null(h2);
	assert_non_null(strstr(h2, "  ControlPath "));
	assert_non_null(strstr(h2, "  ControlMaster no\n  BatchMode yes\n"));
	free(s);
	s = gg_ssh_format_config(&p, &cfg, NULL, 0, 1);
	assert_non_null(s);
	h2 = strstr(s, "\nHost gridgpu-hop.otp.2\n");
	assert_non_null(h2);
	assert_null(strstr(s, "Control"));
	assert_null(strstr(h2, "BatchMode"));
	/* the first hop, with no second factor, stays in batch mode */
	const char *h1 = strstr(s, "\nHost gridgpu-hop.otp.1\n");
	assert_non_null(h1);
	assert_true(strstr(h1, "  BatchMode yes\n") < h2);
	free(s);
	gg_ssh_paths_clear(&p);
}

/* lib/ssh with plain targets: a block for every target it is given. */
static void test_target_config(void **state)
{
	(void)state;
	struct gg_site site = {.name = (char *)"gla", .njumps = 1};
	site.jumps[0] = (char *)"alice@gw.example";
	struct gg_config cfg = {.sites = &site, .nsites = 1};
	struct gg_ssh_paths p;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	struct gg_ssh_target t[3] = {
		{.name = "a",
		 .uid = "aaaaaaaaaaaa",
		 .site = "gla",
		 .node = "wn1",
		 .port = 2201,
		 .user = "u",
		 .host_key = KEY,
		 .key = "/k/a"},
		{.name = "b", .node = "wn2", .port = 2202, .host_key = KEY},
		{.name = "c", .site = "gla", .node = "wn3", .port = 2203},
	};
	char *alias = gg_ssh_host_alias(&t[0]);
	assert_string_equal(alias, "gridgpu-aaaaaaaaaaaa");
	free(alias);
	alias = gg_ssh_host_alias(&t[1]); /* no uid: the name */
	assert_string_equal(alias, "gridgpu-b");
	free(alias);
	char *s = gg_ssh_format_config(&p, &cfg, t, 3, 0);
	assert_non_null(s);
	assert_non_null(strstr(s, "\nHost gridgpu-hop.gla.1\n  HostName gw.example\n"));
	assert_non_null(
		strstr(s, "\nHost a\n  HostName wn1\n  Port 2201\n  User u\n"
			  "  ProxyJump gridgpu-hop.gla.1\n  HostKeyAlias gridgpu-aaaaaaaaaaaa\n"));
	assert_non_null(strstr(s, "\nHost b\n  HostName wn2\n  Port 2202\n  HostKeyAlias "
				  "gridgpu-b\n"));
	assert_non_null(strstr(s, "  IdentityFile \"/k/a\"\n"));
	/* no host key: a comment in its place, never a block without a pinned key */
	assert_null(strstr(s, "Host c\n"));
	assert_non_null(strstr(
		s, "\n# a session was left out: session c has not published its sshd yet\n"));
	free(s);
	/* a site no target uses: no hops */
	s = gg_ssh_format_config(&p, &cfg, &t[1], 1, 0);
	assert_non_null(s);
	assert_null(strstr(s, "gridgpu-hop"));
	assert_non_null(strstr(s, "\nHost b\n"));
	free(s);
	/* nothing given, nothing written but the header */
	s = gg_ssh_format_config(&p, &cfg, NULL, 0, 0);
	assert_non_null(s);
	assert_null(strstr(s, "\nHost "));
	free(s);
	assert_int_equal(gg_ssh_write_config(&p, &cfg, t, 3, &err), 0);
	char *kh, want[512];
	snprintf(want, sizeof want, "gridgpu-aaaaaaaaaaaa %s\ngridgpu-b %s\n", KEY, KEY);
	assert_int_equal(gg_file_read(p.known_hosts, 4096, &kh, NULL, &err), 0);
	assert_string_equal(kh, want);
	free(kh);
	/* the same again (each sync writes them): nothing rewritten, every file
	 * the same inode; a change rewrites what it changes */
	const char *files[] = {p.known_hosts, p.config, p.config_win};
	struct stat before[3], after[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(stat(files[i], &before[i]), 0);
	assert_int_equal(gg_ssh_write_config(&p, &cfg, t, 3, &err), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(stat(files[i], &after[i]), 0);
		assert_int_equal(after[i].st_ino, before[i].st_ino);
	}
	assert_int_equal(gg_ssh_write_config(&p, &cfg, t, 1, &err), 0);
	assert_int_equal(stat(p.known_hosts, &after[0]), 0);
	assert_int_not_equal(after[0].st_ino, before[0].st_ino);
	assert_int_equal(gg_file_read(p.known_hosts, 4096, &kh, NULL, &err), 0);
	snprintf(want, sizeof want, "gridgpu-aaaaaaaaaaaa %s\n", KEY);
	assert_string_equal(kh, want);
	free(kh);
	gg_ssh_paths_clear(&p);
}

/* The session layer: which records are live, and what lib/ssh is given. */
static void test_session_live(void **state)
{
	(void)state;
	struct gg_record base = {.kind = GG_REC_SESSION,
				 .state = GG_S_READY,
				 .name = (char *)"s",
				 .uid = (char *)"0123456789ab",
				 .site = (char *)"gla",
				 .node = (char *)"wn1",
				 .port = 2201,
				 .user = (char *)"u",
				 .host_key = (char *)KEY,
				 .key = (char *)"/k/s"};
	struct gg_ssh_target t;
	gg_record_ssh_target(&base, &t);
	assert_string_equal(t.name, "s");
	assert_string_equal(t.uid, "0123456789ab");
	assert_string_equal(t.site, "gla");
	assert_string_equal(t.node, "wn1");
	assert_int_equal(t.port, 2201);
	assert_string_equal(t.user, "u");
	assert_string_equal(t.host_key, KEY);
	assert_string_equal(t.key, "/k/s");
	char *alias = gg_session_host_alias(&base);
	assert_string_equal(alias, "gridgpu-0123456789ab");
	free(alias);

	struct gg_record r[6];
	const char *names[] = {"ready", "killed", "nokey", "starting", "job", "noport"};
	for (int i = 0; i < 6; i++) {
		r[i] = base;
		r[i].name = (char *)names[i];
		r[i].uid = NULL;
	}
	r[1].state = GG_S_KILLED;
	r[2].state = GG_S_STARTING;
	r[2].host_key = NULL;
	r[3].state = GG_S_STARTING;
	r[4].kind = GG_REC_JOB;
	r[4].state = GG_S_RUNNING;
	r[5].port = 0;
	const int live[] = {1, 0, 0, 1, 0, 0};
	for (int i = 0; i < 6; i++)
		assert_int_equal(gg_session_live(&r[i]), live[i]);

	struct gg_ssh_paths p;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_paths_init(&p, &err), 0);
	char *s = gg_session_format_ssh_config(&p, NULL, r, 6, 0);
	assert_non_null(s);
	assert_non_null(strstr(s, "\nHost ready\n"));
	assert_non_null(strstr(s, "\nHost starting\n"));
	/* the others are not given to lib/ssh at all: no block, no comment */
	for (int i = 0; i < 6; i++) {
		char host[64];
		snprintf(host, sizeof host, "\nHost %s\n", names[i]);
		assert_true(!strstr(s, host) == !live[i]);
	}
	assert_null(strstr(s, "left out"));
	free(s);
	assert_int_equal(gg_session_write_ssh_config(&p, NULL, r, 6, &err), 0);
	char *kh, want[512];
	snprintf(want, sizeof want, "gridgpu-ready %s\ngridgpu-starting %s\n", KEY, KEY);
	assert_int_equal(gg_file_read(p.known_hosts, 4096, &kh, NULL, &err), 0);
	assert_string_equal(kh, want);
	free(kh);
	/* none live: an empty known_hosts */
	assert_int_equal(gg_session_write_ssh_config(&p, NULL, &r[1], 2, &err), 0);
	assert_int_equal(gg_file_read(p.known_hosts, 4096, &kh, NULL, &err), 0);
	assert_string_equal(kh, "");
	free(kh);
	gg_ssh_paths_clear(&p);
}

/* request --identity: the key's public half must be beside it. */
static void test_identity_check(void **state)
{
	(void)state;
	char key[128], pub[136];
	struct gg_err err = {0};
	snprintf(key, sizeof key, "%s/id_test", dir);
	snprintf(pub, sizeof pub, "%s.pub", key);
	assert_int_equal(gg_ssh_identity_check(key, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "no public key"));
	assert_non_null(strstr(err.msg, pub));
	FILE *f = fopen(pub, "w");
	assert_non_null(f);
	fputs("ssh-ed25519 AAAA test\n", f);
	fclose(f);
	assert_int_equal(gg_ssh_identity_check(key, &err), 0);
	unlink(pub);
}

/* connect's ssh command line: options (and their values) before the host, the
 * command after it. */
static void expect_argv(char *const *args, int nargs, const char *want)
{
	char **av = gg_ssh_session_argv("/c/config", "s1", args, nargs);
	assert_non_null(av);
	char got[512] = "";
	for (char **p = av; *p; p++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", p == av ? "" : " ",
			 *p);
	assert_string_equal(got, want);
	free(av);
}

static void test_session_argv(void **state)
{
	(void)state;
	expect_argv(NULL, -1, "ssh -F /c/config s1"); /* no "--" at all */
	expect_argv(NULL, 0, "ssh -F /c/config s1");
	char *a1[] = {"-L", "8888:localhost:8888", "-A", "nvidia-smi", "-L"};
	expect_argv(a1, 5, "ssh -F /c/config -L 8888:localhost:8888 -A s1 nvidia-smi -L");
	char *a2[] = {"-oServerAliveInterval=5", "-v", "--", "ls"};
	expect_argv(a2, 4, "ssh -F /c/config -oServerAliveInterval=5 -v -- s1 ls");
	char *a3[] = {"-t", "-o", "BatchMode=yes", "bash", "-l"};
	expect_argv(a3, 5, "ssh -F /c/config -t -o BatchMode=yes s1 bash -l");
	char *a4[] = {"-p"}; /* an option missing its value: kept, ssh says so */
	expect_argv(a4, 1, "ssh -F /c/config -p s1");
	char *a5[] = {"-", "x"}; /* "-" alone is not an option */
	expect_argv(a5, 2, "ssh -F /c/config s1 - x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pubkey),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_install_include),
		cmocka_unit_test(test_keygen),
		cmocka_unit_test(test_install_symlink),
		cmocka_unit_test(test_cfg_value_refused),
		cmocka_unit_test(test_cfg_value_quoted),
		cmocka_unit_test(test_jump_parse),
		cmocka_unit_test(test_session_names),
		cmocka_unit_test(test_control_dir),
		cmocka_unit_test(test_config_ssh_G),
		cmocka_unit_test(test_config_bytes),
		cmocka_unit_test(test_target_config),
		cmocka_unit_test(test_second_factor_windows),
		cmocka_unit_test(test_session_live),
		cmocka_unit_test(test_identity_check),
		cmocka_unit_test(test_session_argv),
	};
	return cmocka_run_group_tests_name("ssh", tests, setup, teardown);
}
