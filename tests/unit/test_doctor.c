/* Unit tests of lib/doctor: the checks that need no test site. The
 * configuration (none, broken, a site it does not have), the proxy and the CA
 * directory (missing, empty), the OpenSSH tools (a fake ssh on a $PATH of the
 * test's, ssh-keygen missing), the jump hosts (the fake ssh refused, denied,
 * with no shell), the GPU checks with the fake NVML and CUDA driver
 * (tests/fakegpu, as test_gpu loads them); the progress callback and the
 * JSON document. */
#include "unit.h"

#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor.h"

#ifndef GG_FAKEGPU_DIR
#define GG_FAKEGPU_DIR "build/tests/fakegpu"
#endif
#ifndef GG_FAKEGPU_SPECS
#define GG_FAKEGPU_SPECS "tests/fakegpu"
#endif

UNIT_TMPDIR("gg-unit-doctor")

static char nvml[600], cuda[600], nosuch[600];

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* A fake ssh: -V gives a version; a login does what $FAKE_SSH says, after
 * noting its arguments and copying the config it was given. */
static const char fake_ssh[] =
	"#!/bin/sh\n"
	"PATH=/usr/bin:/bin\n"
	"[ \"$1\" = -V ] && { echo '  OpenSSH_9.9p1 fake, OpenSSL 3' >&2; exit 0; }\n"
	"echo \"$*\" >>\"$FAKE_LOG\"; cp \"$2\" \"$FAKE_LOG.cfg\"\n"
	"case $FAKE_SSH in\n"
	"ok) exit 0 ;;\n"
	"noshell) echo 'This service allows sftp connections only.'; exit 1 ;;\n"
	"refused) echo 'ssh: connect to host 192.0.2.1 port 22: Connection refused' >&2 ;;\n"
	"denied) echo 'gg@192.0.2.1: Permission denied (publickey).' >&2 ;;\n"
	"esac\n"
	"exit 255\n";

static char *old_path;

static int setup(void **state)
{
	if (setup_tmp(state) < 0)
		return -1;
	old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	const char *d = getenv("GG_FAKEGPU_DIR");
	snprintf(nvml, sizeof nvml, "%s/libnvidia-ml.so.1", d && *d ? d : GG_FAKEGPU_DIR);
	snprintf(cuda, sizeof cuda, "%s/libcuda.so.1", d && *d ? d : GG_FAKEGPU_DIR);
	snprintf(nosuch, sizeof nosuch, "%s/nosuch/libnvidia-ml.so.1", tmpdir);
	char path[300];
	snprintf(path, sizeof path, "%s/bin", tmpdir);
	mkdir(path, 0755);
	setenv("PATH", path, 1);
	snprintf(path, sizeof path, "%s/tmp", tmpdir);
	mkdir(path, 0700);
	setenv("TMPDIR", path, 1);
	snprintf(path, sizeof path, "%s/ssh.log", tmpdir);
	setenv("FAKE_LOG", path, 1);
	snprintf(path, sizeof path, "%s/x509up", tmpdir);
	setenv("X509_USER_PROXY", path, 1);
	setenv("XDG_RUNTIME_DIR", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	snprintf(path, sizeof path, "%s/ca", tmpdir); /* no CA certificates */
	mkdir(path, 0755);
	setenv("X509_CERT_DIR", path, 1);
	const char *unset[] = {"GRIDGPU_SESSION", "CUDA_VISIBLE_DEVICES", "CUDA_VERSION",
			       "CUDA_HOME",       "APPTAINER_CONTAINER",  "SINGULARITY_CONTAINER",
			       "GG_FAKE_CUDA",    "BEARER_TOKEN",         "BEARER_TOKEN_FILE"};
	for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
		unsetenv(unset[i]);
	return 0;
}

static int teardown(void **state)
{
	setenv("PATH", old_path, 1);
	free(old_path);
	return teardown_tmp(state);
}

struct seen {
	size_t calls, last;
	int in_order;
};

static void progress(void *ud, const struct gg_doctor *d, size_t i)
{
	struct seen *s = ud;
	s->in_order &= i == s->calls && i + 1 == gg_doctor_count(d);
	s->last = i;
	s->calls++;
}

/* The doctor on config (a file of tmpdir; NULL: the default path), site. */
static struct gg_doctor *doctor(const char *config, const char *site, struct seen *seen)
{
	struct gg_doctor *d = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_doctor_new(&d, &err), 0);
	char path[300];
	snprintf(path, sizeof path, "%s/%s", tmpdir, config ? config : "");
	assert_int_equal(gg_doctor_set_config(d, config ? path : NULL, &err), 0);
	assert_int_equal(gg_doctor_set_site(d, site, &err), 0);
	if (seen)
		gg_doctor_set_progress(d, progress, seen);
	d->nvml_lib = getenv("GRIDGPU_SESSION") ? nvml : nosuch;
	d->cuda_lib = cuda;
	assert_int_equal(gg_doctor_run(d, &err), 0);
	assert_int_equal(gg_doctor_run(d, &err), GG_EUSAGE); /* once */
	return d;
}

static size_t find(const struct gg_doctor *d, const char *id)
{
	for (size_t i = 0; i < gg_doctor_count(d); i++)
		if (!strcmp(gg_doctor_id(d, i), id))
			return i;
	fail_msg("no check %s", id);
	return 0;
}

static const char *st(const struct gg_doctor *d, const char *id)
{
	return gg_doctor_status_name(gg_doctor_status(d, find(d, id)));
}

static void expect(const struct gg_doctor *d, const char *id, const char *status,
		   const char *detail, const char *fix)
{
	size_t i = find(d, id);
	const char *dt = gg_doctor_detail(d, i), *fx = gg_doctor_fix(d, i);
	if (strcmp(st(d, id), status) || (detail && (!dt || !strstr(dt, detail))) ||
	    (fix && (!fx || !strstr(fx, fix))))
		fail_msg("%s: %s: %s (fix: %s); want %s: %s (fix: %s)", id, st(d, id),
			 dt ? dt : "-", fx ? fx : "-", status, detail ? detail : "-",
			 fix ? fix : "-");
}

static char *ids(const struct gg_doctor *d)
{
	static char buf[512];
	buf[0] = '\0';
	for (size_t i = 0; i < gg_doctor_count(d); i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "",
			 gg_doctor_id(d, i));
	return buf;
}

/* No configuration and no site: the site's checks skipped, the rest run; no
 * ssh-keygen on PATH; no proxy; the GPU checks skipped outside a session. */
static void test_no_site(void **state)
{
	(void)state;
	write_file("bin/ssh", fake_ssh, 0755);
	struct seen seen = {.in_order = 1};
	struct gg_doctor *d = doctor("none.conf", NULL, &seen);
	assert_string_equal(ids(d), "config proxy proxy-chain token ca-dir ce ssh ssh-keygen gpu "
				    "cuda-compat container gpu-alloc");
	expect(d, "config", "skip", "no site given and no default site", "gridgpu site add NAME");
	expect(d, "proxy", "fail", "no proxy at", "gridgpu proxy init --valid 12h");
	expect(d, "proxy-chain", "skip", "no proxy", NULL);
	expect(d, "token", "skip", "not needed without a site", NULL);
	expect(d, "ce", "skip", "no site", NULL);
	expect(d, "ssh", "ok", "/bin/ssh (OpenSSH_9.9p1 fake, OpenSSL 3)", NULL);
	expect(d, "ssh-keygen", "fail", "not found on PATH", "install the OpenSSH client");
	expect(d, "gpu", "skip", "not inside a session (GRIDGPU_SESSION unset)", NULL);
	expect(d, "gpu-alloc", "skip", "no NVIDIA driver here", NULL);
	assert_null(gg_doctor_site(d));
	assert_int_equal(seen.calls, gg_doctor_count(d));
	assert_true(seen.in_order);
	assert_int_equal(gg_doctor_tally(d, GG_DOCTOR_FAIL), 3); /* proxy, ca-dir, ssh-keygen */
	json_t *j = gg_doctor_json(d);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "site")));
	assert_int_equal(json_integer_value(json_object_get(j, "failed")), 3);
	assert_int_equal(json_integer_value(json_object_get(j, "passed")) +
				 json_integer_value(json_object_get(j, "failed")) +
				 json_integer_value(json_object_get(j, "skipped")),
			 gg_doctor_count(d));
	json_t *c = json_array_get(json_object_get(j, "checks"), 7);
	assert_string_equal(json_string_value(json_object_get(c, "id")), "ssh-keygen");
	assert_string_equal(json_string_value(json_object_get(c, "name")), "ssh-keygen");
	assert_string_equal(json_string_value(json_object_get(c, "status")), "fail");
	assert_non_null(strstr(json_string_value(json_object_get(c, "fix")), "openssh-client"));
	c = json_array_get(json_object_get(j, "checks"), 6);
	assert_true(json_is_null(json_object_get(c, "fix")));
	json_decref(j);
	gg_doctor_free(d);
}

/* A configuration that does not load, a site it does not have. */
static void test_bad_config(void **state)
{
	(void)state;
	write_file("bad.conf", "[site a]\nbogus = 1\n", 0600);
	struct gg_doctor *d = doctor("bad.conf", NULL, NULL);
	expect(d, "config", "fail", "bogus", "correct the line named in");
	expect(d, "ce", "skip", "no site", NULL);
	gg_doctor_free(d);
	write_file("good.conf", "[site a]\nce = https://ce.example/arex\n", 0600);
	d = doctor("good.conf", "nosuch", NULL);
	expect(d, "config", "fail", "no site 'nosuch' (1 site)",
	       "gridgpu site add nosuch --ce URL");
	gg_doctor_free(d);
	/* the default site, named as such */
	write_file("good.conf", "[gridgpu]\nsite = a\n[site a]\nce = https://ce.example/arex\n",
		   0600);
	d = doctor("good.conf", NULL, NULL);
	expect(d, "config", "ok", "site a (the default)", NULL);
	assert_string_equal(gg_doctor_site(d)->name, "a");
	/* no proxy: the CE is not asked */
	expect(d, "ce", "skip", "https://ce.example/arex: not asked, no usable proxy", NULL);
	expect(d, "jump", "skip", "site a has none", NULL);
	json_t *j = gg_doctor_json(d);
	assert_string_equal(json_string_value(json_object_get(j, "site")), "a");
	json_decref(j);
	gg_doctor_free(d);
}

/* --valid: what the proxy must last shows in the fix. A CA directory with
 * no hashed certificates. */
static void test_valid_and_ca_dir(void **state)
{
	(void)state;
	struct gg_doctor *d = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_doctor_new(&d, &err), 0);
	gg_doctor_set_valid(d, 86400);
	d->nvml_lib = nosuch;
	assert_int_equal(gg_doctor_run(d, &err), 0);
	expect(d, "proxy", "fail", "no proxy", "gridgpu proxy init --valid 1d");
	expect(d, "ca-dir", "fail", "has no hashed CA certificates", "openssl rehash");
	expect(d, "proxy-chain", "skip", "no proxy", NULL);
	gg_doctor_free(d);
}

/* Each jump host through the fake ssh: refused (the next not tried), the key
 * refused, a login with no shell (fine). The throwaway config is gone after. */
static void test_jumps(void **state)
{
	(void)state;
	write_file("bin/ssh", fake_ssh, 0755);
	write_file("bin/ssh-keygen", "#!/bin/sh\nexit 0\n", 0755);
	write_file("jumps.conf",
		   "[site s]\nce = https://ce.example/arex\njump = gg@192.0.2.1\n"
		   "jump = gg@192.0.2.2:2222\n",
		   0600);
	setenv("FAKE_SSH", "refused", 1);
	struct gg_doctor *d = doctor("jumps.conf", "s", NULL);
	expect(d, "ssh-keygen", "ok", "/bin/ssh-keygen", NULL);
	expect(d, "jump-1", "fail", "gg@192.0.2.1: ssh: connect to host 192.0.2.1 port 22",
	       "gridgpu site show s");
	expect(d, "jump-2", "skip", "not tried, it is reached through jump host 1", NULL);
	gg_doctor_free(d);
	char log[300], cfg[300];
	snprintf(log, sizeof log, "%s/ssh.log", tmpdir);
	snprintf(cfg, sizeof cfg, "%s/ssh.log.cfg", tmpdir);
	FILE *f = fopen(log, "r");
	assert_non_null(f);
	char line[512] = "";
	assert_non_null(fgets(line, sizeof line, f));
	assert_null(fgets(line + strlen(line), (int)(sizeof line - strlen(line)), f));
	fclose(f);
	assert_non_null(strstr(line, " -T gridgpu-hop.s.1 true"));
	unlink(log);
	setenv("FAKE_SSH", "denied", 1);
	d = doctor("jumps.conf", "s", NULL);
	expect(d, "jump-1", "fail", "Permission denied", "refuses your key");
	gg_doctor_free(d);
	setenv("FAKE_SSH", "noshell", 1);
	d = doctor("jumps.conf", "s", NULL);
	expect(d, "jump-1", "ok", "no shell (exit 1: fine for ProxyJump)", NULL);
	expect(d, "jump-2", "ok", "gg@192.0.2.2:2222: ssh login works, no shell", NULL);
	gg_doctor_free(d);
	/* the second hop's config goes through the first */
	f = fopen(cfg, "r");
	assert_non_null(f);
	char text[4096];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(strstr(text, "Host gridgpu-hop.s.2"));
	assert_non_null(strstr(text, "ProxyJump gridgpu-hop.s.1"));
	assert_non_null(strstr(text, "ConnectTimeout 20"));
	/* the throwaway config and its directory are gone */
	char tmp[300];
	snprintf(tmp, sizeof tmp, "%s/tmp", tmpdir);
	assert_int_equal(rmdir(tmp), 0); /* empty */
	mkdir(tmp, 0700);
	unsetenv("FAKE_SSH");
}

/* Inside a session, the fake NVML and CUDA driver: all pass; no GPU given
 * to the job; a GPU that cannot allocate; no container runtime. */
static void test_gpu(void **state)
{
	(void)state;
	setenv("GRIDGPU_SESSION", "s1", 1);
	setenv("GG_FAKE_NVML", GG_FAKEGPU_SPECS "/h100x2.conf", 1);
	setenv("CUDA_VERSION", "12.2.1", 1);
	setenv("APPTAINER_CONTAINER", "/images/work.sif", 1);
	setenv("GG_FAKE_CUDA_NAME", "NVIDIA H100 80GB HBM3", 1);
	struct gg_doctor *d = doctor("none.conf", NULL, NULL);
	expect(d, "gpu", "ok", "2 usable: NVIDIA H100 80GB HBM3 x2", NULL);
	expect(d, "cuda-compat", "ok", "the environment needs 12.2.1", NULL);
	expect(d, "container", "ok", "inside the container /images/work.sif (the GPU came through",
	       NULL);
	expect(d, "gpu-alloc", "ok", "1.0 MiB written to and read back from NVIDIA H100 80GB HBM3",
	       NULL);
	gg_doctor_free(d);
	setenv("CUDA_VERSION", "13.1", 1);
	d = doctor("none.conf", NULL, NULL);
	expect(d, "cuda-compat", "fail", "the environment needs 13.1", "image built for CUDA");
	gg_doctor_free(d);
	unsetenv("CUDA_VERSION");
	setenv("CUDA_VISIBLE_DEVICES", "NoDevFiles", 1);
	d = doctor("none.conf", NULL, NULL);
	expect(d, "gpu", "fail", "none usable by this process (CUDA_VISIBLE_DEVICES=NoDevFiles)",
	       "gridgpu request --gpus N");
	expect(d, "gpu-alloc", "skip", "no usable GPU", NULL);
	gg_doctor_free(d);
	unsetenv("CUDA_VISIBLE_DEVICES");
	setenv("GG_FAKE_CUDA", "oom", 1);
	unsetenv("APPTAINER_CONTAINER");
	d = doctor("none.conf", NULL, NULL);
	expect(d, "gpu-alloc", "fail", NULL, "try another node");
	expect(d, "container", "fail", "no apptainer or singularity on PATH",
	       "ask the site to install apptainer");
	gg_doctor_free(d);
	/* the runtime's version, through the runner */
	write_file("bin/apptainer", "#!/bin/sh\necho 'apptainer version 1.3.4'\n", 0755);
	d = doctor("none.conf", NULL, NULL);
	expect(d, "container", "ok", "/bin/apptainer (apptainer version 1.3.4): images run with",
	       NULL);
	gg_doctor_free(d);
	unsetenv("GG_FAKE_CUDA");
	unsetenv("GG_FAKE_CUDA_NAME");
	unsetenv("GG_FAKE_NVML");
	unsetenv("GRIDGPU_SESSION");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_site),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_valid_and_ca_dir),
		cmocka_unit_test(test_jumps),
		cmocka_unit_test(test_gpu),
	};
	return cmocka_run_group_tests_name("doctor", tests, setup, teardown);
}
