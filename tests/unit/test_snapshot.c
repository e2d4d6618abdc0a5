/* lib/node/snaplist.c and snapshot.c: the snapshot's list parsed strictly, paths in
 * tar --sort=name's order, and a freeze of a sandbox from the image it was made from
 * plus the launcher's snapshot (its own snapshot() function, run as the node runs it)
 * byte for byte the freeze of the node's tar of the same sandbox. */
#include "unit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gridgpu/image.h"
#include "image/image.h"
#include "node/node.h"

#define LAUNCHER "libexec/gridgpu/session-launcher"

UNIT_TMPDIR("gg-snap")

static void test_list_parse(void **state)
{
	(void)state;
	static const char good[] = "d 1000 1000 755 1700000000.5 4096 2 3 .\0\0"
				   "f 0 0 4755 1700000001.0 12 3 1 ./usr/bin/x\0\0"
				   "l 1 2 777 -3.25 4 4 1 ./a b\0/x y\0";
	struct gg_snap_entry *e;
	size_t n;
	struct gg_err err = {0};
	assert_int_equal(gg_snap_list_parse(good, sizeof good - 1, &e, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(e[0].type, 'd');
	assert_int_equal(e[0].mtime, 1700000000);
	assert_int_equal(e[1].mode, 04755);
	assert_int_equal(e[1].size, 12);
	assert_string_equal(e[1].path, "./usr/bin/x");
	assert_int_equal(e[2].mtime, -4);
	assert_string_equal(e[2].target, "/x y");
	gg_snap_list_free(e, n);
#define B(x)                    \
	{                       \
		x, sizeof x - 1 \
	}
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		B("f 0 0 644 1 1 1 1 ./x\0\0"), /* not the top first */
		B("d 0 0 755 1 0 1 1 .\0\0f 0 0 644 1 1 1 1 ./../x\0\0"),
		B("d 0 0 755 1 0 1 1 .\0\0f 0 0 999 1 1 1 1 ./x\0\0"), /* not octal */
		B("d 0 0 755 1 0 1 1 .\0\0f 0 0 644 1 1 1 1 ./x/\0\0"),
		B("d 0 0 755 1 0 1 1 .\0\0l 0 0 777 1 1 1 1 ./x\0\0"), /* no target */
		B("d 0 0 755 1 0 1 1 .\0\0f 0 0 644 1 1 1 1 ./x\0"),   /* cut */
		B("d 0 0 755 1 0 1 1 .\0\0q 0 0 644 1 1 1 1 ./x\0\0"),
		B("d 99999999999 0 755 1 0 1 1 .\0\0"),
		B("d 0 0 755 1 0 1 1 .\0\0f 0 0 644 1 1 1 1 ./a\nb\0\0"),
	};
#undef B
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err = (struct gg_err){0};
		assert_int_equal(gg_snap_list_parse(bad[i].s, bad[i].len, &e, &n, &err), GG_EPROTO);
		assert_null(e);
	}
}

static void test_path_order(void **state)
{
	(void)state;
	assert_true(gg_snap_path_cmp(".", "./a") < 0);
	assert_true(gg_snap_path_cmp("./a/x", "./a-c") < 0); /* a's entries before a-c */
	assert_true(gg_snap_path_cmp("./a", "./a/x") < 0);
	assert_true(gg_snap_path_cmp("./B", "./a") < 0);
	assert_int_equal(gg_snap_path_cmp("./a/b", "./a/b"), 0);
}

static void sh(const char *fmt, const char *a)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, fmt, a, a, a, a, a, a);
	assert_int_equal(system(cmd), 0);
}

static int freeze_stream(const char *tarfile, const char *out)
{
	int fd = open(tarfile, O_RDONLY);
	assert_true(fd >= 0);
	struct gg_freeze_opts o = {
		.source = "-", .input_fd = fd, .format = GG_IMAGE_TAR, .output = out};
	struct gg_freeze_feeder fdr = {.no_digest = 1};
	struct gg_err err = {0};
	int rc = gg_image_freeze_fed(&o, NULL, &fdr, NULL, &err);
	close(fd);
	return rc;
}

/* The node: an image, its sandbox (unpacked), changes after the mark, the launcher's
 * snapshot; the live tar of the same sandbox; both frozen: the same bytes. */
static void test_same_bytes(void **state)
{
	(void)state;
	const char *t = tmpdir;
	sh("cd %s && mkdir -p root/usr/bin root/etc root/tmp root/opt/gone root/var && "
	   "echo hi >root/etc/motd && echo keep >root/usr/bin/tool && chmod 755 root/usr/bin/tool && "
	   "echo x >root/opt/gone/f && ln -s motd root/etc/link && "
	   "head -c 300000 /dev/urandom >root/var/big && touch -d @1600000000 root/etc/motd",
	   t);
	char base[256], sd[256], cmd[2048];
	snprintf(base, sizeof base, "%s/base.sif", t);
	snprintf(sd, sizeof sd, "%s/sd", t);
	struct gg_freeze_opts bo = {.source = "", .output = base};
	char src[256];
	snprintf(src, sizeof src, "%s/root", t);
	bo.source = src;
	struct gg_err err = {0};
	assert_int_equal(gg_image_freeze(&bo, NULL, NULL, &err), 0);
	/* the node's sandbox: the image as unpacked, owned by whoever unpacked it */
	sh("mkdir -p %s/sd/.gridgpu && cp -pR %s/root %s/sd/.gridgpu/sandbox && "
	   ": >%s/sd/.gridgpu/sandbox-mounts && touch %s/sd/.gridgpu/snapshot.mark",
	   t);
	sleep(1); /* a ctime after the mark's */
	sh("cd %s/sd/.gridgpu/sandbox && mkdir -p usr/local/lib/pkg && echo new >usr/local/lib/pkg/m.py "
	   "&& ln usr/local/lib/pkg/m.py usr/local/lib/pkg/hard && echo more >>etc/motd && "
	   "rm -rf opt/gone && chmod 700 usr/bin/tool && head -c 200000 /dev/urandom >var/big2 && "
	   "echo junk >tmp/junk && mkfifo var/fifo",
	   t);
	/* the launcher's snapshot(), as it runs on the node */
	snprintf(cmd, sizeof cmd,
		 "cd %s && { echo 'SD=%s G=%s/.gridgpu enter=x snap_time=20 snap_max=100000000 "
		 "TIMEOUT=$(command -v timeout) snap_error= snap_size=0 snap_at=0'; "
		 "echo 'publish() { :; }; log() { :; }'; "
		 "sed -n '/^SB=\\$G\\/sandbox$/,/^}$/p' %s/" LAUNCHER "; echo 'snapshot test; "
		 "echo \"$snap_error\"; [ -z \"$snap_error\" ]'; } >snap.sh && sh snap.sh",
		 t, sd, sd, getenv("PWD") ? getenv("PWD") : ".");
	assert_int_equal(system(cmd), 0);
	char snap[300], live[300], a[300], b[300];
	snprintf(snap, sizeof snap, "%s/" GG_SNAPSHOT_NAME, sd);
	snprintf(live, sizeof live, "%s/live.tar", t);
	snprintf(a, sizeof a, "%s/live.sif", t);
	snprintf(b, sizeof b, "%s/snap.sif", t);
	const char *excl[] = {"./tmp/*", "./var/tmp/*"};
	char *tar = gg_node_tar_command(NULL, excl, 2, GG_LINK_NONE);
	snprintf(cmd, sizeof cmd, "GRIDGPU_SESSION_DIR=%s sh -c '%s' >%s", sd, "eval \"$T\"", live);
	setenv("T", tar, 1);
	assert_int_equal(system(cmd), 0);
	free(tar);
	assert_int_equal(freeze_stream(live, a), 0);
	struct gg_freeze_opts so = {.source = "-", .output = b};
	int frc = gg_snapshot_freeze_files(base, snap, excl, 2, NULL, &so, NULL, NULL, &err);
	if (frc)
		print_message("%s\n", err.msg);
	assert_int_equal(frc, 0);
	snprintf(cmd, sizeof cmd, "cmp %s %s", a, b);
	assert_int_equal(system(cmd), 0);
	/* an image that is not the one the sandbox was made from: refused, nothing left */
	char other[300];
	snprintf(other, sizeof other, "%s/other.sif", t);
	sh("rm -f %s/snap.sif && echo more >>%s/root/var/big", t);
	bo.output = other;
	assert_int_equal(gg_image_freeze(&bo, NULL, NULL, &err), 0);
	err = (struct gg_err){0};
	assert_int_equal(
		gg_snapshot_freeze_files(other, snap, excl, 2, NULL, &so, NULL, NULL, &err),
		GG_EFAIL);
	assert_non_null(strstr(err.msg, "var/big"));
	assert_int_equal(access(b, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_parse),
		cmocka_unit_test(test_path_order),
		cmocka_unit_test(test_same_bytes),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
