/* Unit tests of lib/ssh: key checks, fingerprints, the generated config. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	char *t = gg_ssh_format_config(&p, &cfg, recs, 3, 0);
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
	t = gg_ssh_format_config(&p, &cfg, recs, 3, 1);
	assert_null(strstr(t, "ControlMaster")); /* not on Windows */
	free(t);
	assert_int_equal(gg_ssh_write_config(&p, &cfg, recs, 3, &err), 0);
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
	snprintf(cfg, sizeof cfg, "%s/home/.ssh/config", dir);
	/* missing file and directory: created */
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &err), 0);
	assert_int_equal(added, 0); /* once */
	char *t;
	assert_int_equal(gg_file_read(cfg, 4096, &t, NULL, &err), 0);
	assert_non_null(strstr(t, "Include \"/x/gridgpu/ssh/config\""));
	free(t);
	/* an existing config: the Include goes first, a backup is kept */
	gg_file_write_atomic(cfg, "Host a\n  User b\n", 16, 0644, &err);
	assert_int_equal(gg_ssh_install_include(cfg, inc, &added, &err), 0);
	assert_int_equal(gg_file_read(cfg, 4096, &t, NULL, &err), 0);
	assert_true(strstr(t, "Include") < strstr(t, "Host a"));
	free(t);
	char bak[160];
	snprintf(bak, sizeof bak, "%s.gridgpu-backup", cfg);
	assert_int_equal(gg_file_read(bak, 4096, &t, NULL, &err), 0);
	assert_string_equal(t, "Host a\n  User b\n");
	free(t);
	struct stat sb;
	stat(cfg, &sb);
	assert_int_equal(sb.st_mode & 0777, 0644); /* mode kept */
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pubkey), cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_config), cmocka_unit_test(test_install_include),
		cmocka_unit_test(test_keygen),
	};
	return cmocka_run_group_tests_name("ssh", tests, setup, teardown);
}
