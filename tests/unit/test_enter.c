/* gridgpu-enter (lib/node/enter.c): the script that puts a session's logins
 * in its container. Its "print" mode is run with /bin/sh: the apptainer and
 * bwrap command lines a login would exec, with the binds quoted as given. */
#include "unit.h"

#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"

UNIT_TMPDIR("gg-enter")

/* The script for o, run as "print CMD" in a session dir under tmpdir (HOME
 * unset); its output, malloc'd. */
static char *print_cmd(const struct gg_enter_opts *o, const char *cmd)
{
	char *text = NULL, path[128], line[1024];
	struct gg_err err = {0};
	assert_int_equal(gg_session_enter_script(o, &text, &err), 0);
	snprintf(path, sizeof path, "%s/gridgpu-enter", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	snprintf(line, sizeof line,
		 "cd %s && env -u HOME -u GRIDGPU_SESSION_DIR PATH=/nonexistent:/usr/bin:/bin "
		 "/bin/sh ./gridgpu-enter print %s 2>/dev/null | tr '\\n' ' '",
		 tmpdir, cmd);
	FILE *p = popen(line, "r");
	assert_non_null(p);
	char *out = calloc(1, 8192);
	size_t n = fread(out, 1, 8191, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

/* A node with /cvmfs (a developer's machine at a grid site) has it in every
 * container, after the session directory: "--bind /cvmfs /cvmfs " with the
 * separator sep, or "" where there is none. */
static const char *cvmfs(const char *sep)
{
	struct stat st;
	if (stat("/cvmfs", &st) < 0 || !S_ISDIR(st.st_mode))
		return "";
	return strcmp(sep, ":") ? "--bind /cvmfs /cvmfs " : "--bind /cvmfs:/cvmfs ";
}

static void test_bwrap(void **state)
{
	(void)state;
	char dir[128], want[2048];
	snprintf(dir, sizeof dir, "%s/it's", tmpdir);
	mkdir(dir, 0755);
	char bind[256];
	snprintf(bind, sizeof bind, "%s:/mnt/x", dir);
	const char *binds[] = {bind, "/nonexistent-bind"};
	struct gg_enter_opts o = {.runtime = "bwrap",
				  .image = "gridgpu-image.sif",
				  .offset = 4096,
				  .binds = binds,
				  .nbinds = 2};
	char *out = print_cmd(&o, "id -u");
	/* bwrap from PATH (or its name when the machine has none) */
	const char *rest = strstr(out, " --bind ");
	assert_non_null(rest);
	snprintf(want, sizeof want,
		 " --bind %s/.gridgpu/sandbox / --dev-bind /dev /dev --bind /proc /proc "
		 "--ro-bind /sys /sys --ro-bind %s/.gridgpu/passwd /etc/passwd --ro-bind "
		 "%s/.gridgpu/group /etc/group ",
		 tmpdir, tmpdir, tmpdir);
	assert_memory_equal(rest, want, strlen(want));
	snprintf(want, sizeof want, "--bind %s %s %s--bind %s /mnt/x --chdir / -- id -u ", tmpdir,
		 tmpdir, cvmfs(" "), dir);
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "nonexistent-bind")); /* not on this node: left out */
	free(out);
}

/* The site profile's binds come before --bind's, both in the container. */
static void test_site_binds(void **state)
{
	(void)state;
	char a[160], b[160];
	snprintf(a, sizeof a, "%s/site-a", tmpdir);
	snprintf(b, sizeof b, "%s/user-b", tmpdir);
	mkdir(a, 0755);
	mkdir(b, 0755);
	char sa[200];
	snprintf(sa, sizeof sa, "%s:/site", a);
	char *site[] = {sa};
	const char *user[] = {b};
	struct gg_enter_opts o = {.runtime = "bwrap",
				  .image = "i.sif",
				  .site_binds = site,
				  .nsite_binds = 1,
				  .binds = user,
				  .nbinds = 1};
	char *out = print_cmd(&o, "true");
	char want[512];
	snprintf(want, sizeof want, "--bind %s /site --bind %s %s --chdir", a, b, b);
	assert_non_null(strstr(out, want));
	free(out);
	/* a bad one of the site's is named as the site's */
	char *bad[] = {(char *)"scratch"};
	struct gg_err err = {0};
	char *text = NULL;
	o.site_binds = bad;
	assert_int_equal(gg_session_enter_script(&o, &text, &err), GG_EUSAGE);
	assert_null(text);
	assert_non_null(strstr(err.msg, "the site's bind 'scratch': expected SRC[:DST]"));
}

static void test_apptainer(void **state)
{
	(void)state;
	struct gg_enter_opts o = {.runtime = NULL, .image = "/cvmfs/x/dev.sif", .gpus = 1};
	char *out = print_cmd(&o, "nvidia-smi");
	char want[512];
	snprintf(want, sizeof want,
		 "exec --writable --nv --bind %s:%s %s%s/.gridgpu/sandbox nvidia-smi ", tmpdir,
		 tmpdir, cvmfs(":"), tmpdir);
	assert_non_null(strstr(out, want));
	free(out);
	o.gpus = 0;
	out = print_cmd(&o, "true");
	assert_null(strstr(out, "--nv"));
	free(out);
}

static void test_refused(void **state)
{
	(void)state;
	char *text = (char *)"x";
	struct gg_err err = {0};
	/* what cannot be carried to the node as it is, or is not a plain path:
	 * a line end or another control character, '.' and '..' parts */
	const char *bad[] = {"relative/path", "/a:b",       "/a:/b:/c",     "/a\n/b",
			     "/tmp:/a\033b",  "/tmp:/a\tb", "/tmp:/a/../b", "/tmp/..:/b",
			     "/tmp:/./b",     "/tmp:/b/..", "/a\x7f:/b"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gg_enter_opts o = {
			.runtime = "bwrap", .image = "i", .binds = &bad[i], .nbinds = 1};
		assert_int_equal(gg_session_enter_script(&o, &text, &err), GG_EUSAGE);
		assert_null(text);
		assert_non_null(strstr(err.msg, "--bind"));
	}
	/* apptainer ends a bind at a ',': refused for it, bwrap takes it */
	const char *comma[] = {"/data/a,b:/mnt/x"};
	struct gg_enter_opts oc = {.runtime = NULL, .image = "i", .binds = comma, .nbinds = 1};
	assert_int_equal(gg_session_enter_script(&oc, &text, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "apptainer takes a ','"));
	oc.runtime = "bwrap";
	assert_int_equal(gg_session_enter_script(&oc, &text, &err), 0);
	free(text);
	struct gg_enter_opts o = {.runtime = "docker", .image = "i"};
	assert_int_equal(gg_session_enter_script(&o, &text, &err), GG_EUSAGE);
	o.runtime = "bwrap";
	o.image = "";
	assert_int_equal(gg_session_enter_script(&o, &text, &err), GG_EUSAGE);
	/* values reach the script quoted */
	o.image = "/x/it's.sif";
	assert_int_equal(gg_session_enter_script(&o, &text, &err), 0);
	assert_non_null(strstr(text, "\nIMAGE='/x/it'\\''s.sif'\n"));
	free(text);
}

/* "make" with binds whose paths hold blanks (a directory image, a bwrap that
 * is only a name in PATH: make does not run it): it ends, and the mount points
 * the sandbox gets are listed whole, one a line. The regression: the list was
 * split at blanks and the walk up from "dir" never ended (dirname . is .). */
static void test_make_blanks(void **state)
{
	(void)state;
	char img[160], src[160], b1[200], b2[200], sd[160], cmd[1024];
	snprintf(img, sizeof img, "%s/img", tmpdir);
	snprintf(src, sizeof src, "%s/bind me", tmpdir);
	snprintf(sd, sizeof sd, "%s/sd", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "mkdir -p '%s/bin' '%s/etc' '%s' '%s/.gridgpu' '%s/fakebin' && "
		 "printf '#!/bin/sh\\n' >'%s/fakebin/bwrap' && chmod +x '%s/fakebin/bwrap'",
		 img, img, src, sd, tmpdir, tmpdir, tmpdir);
	assert_int_equal(system(cmd), 0);
	snprintf(b1, sizeof b1, "%s:/my dir/sub", src);
	snprintf(b2, sizeof b2, "%s:/opt/a b", src);
	const char *binds[] = {b1, b2};
	struct gg_enter_opts o = {.runtime = "bwrap", .image = img, .binds = binds, .nbinds = 2};
	char *text = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_session_enter_script(&o, &text, &err), 0);
	char path[200];
	snprintf(path, sizeof path, "%s/gridgpu-enter", sd);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && env -u HOME GRIDGPU_SESSION_DIR='%s' PATH='%s/fakebin:/usr/bin:/bin' "
		 "timeout 60 /bin/sh ./gridgpu-enter make >/dev/null 2>&1",
		 sd, sd, tmpdir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof path, "%s/.gridgpu/sandbox-mounts", sd);
	f = fopen(path, "r");
	assert_non_null(f);
	char list[512] = "";
	size_t n = fread(list, 1, sizeof list - 1, f);
	list[n] = '\0';
	fclose(f);
	/* the image has /etc and /bin, not /my dir nor /opt: those whole */
	assert_non_null(strstr(list, "./my dir\n"));
	assert_non_null(strstr(list, "./opt\n"));
	assert_null(strstr(list, "./my\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bwrap),       cmocka_unit_test(test_site_binds),
		cmocka_unit_test(test_apptainer),   cmocka_unit_test(test_refused),
		cmocka_unit_test(test_make_blanks),
	};
	return cmocka_run_group_tests_name("enter", tests, setup_tmp, teardown_tmp);
}
