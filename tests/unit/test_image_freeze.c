/* Unit tests of lib/image/freeze.c and the readers (sandbox.c, tar.c, oci.c): whole
 * freezes of trees made here, reproducibility, tar and OCI inputs with whiteouts, and
 * the bad inputs: traversal in tars, corrupt and truncated archives, existing outputs,
 * cancellation, too many ids, unreadable files. Nothing may be left behind on failure. */
/* builds hostile JSON by hand: jansson's constructors (core/json.h) */
#define GG_JSON_RAW
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "image/internal.h"
#include "squat.h"

static char tmpdir[64];

static int setup_tmp(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/gg-unit-freeze.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return chmod(tmpdir, 0777); /* the unreadable-file test runs as nobody */
}

static int teardown_tmp(void **state)
{
	(void)state;
	return unit_rmtree(tmpdir);
}

static char *P(const char *fmt, const char *a)
{
	static char buf[4][512];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/", tmpdir);
	size_t l = strlen(buf[i]);
	snprintf(buf[i] + l, sizeof buf[i] - l, fmt, a);
	return buf[i];
}

static void put(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
}

static int read_all(const char *path, unsigned char **out, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	struct stat st;
	fstat(fd, &st);
	*out = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, *out, (size_t)st.st_size);
	close(fd);
	return 0;
}

/* No output and no temp file next to it. */
static void assert_clean(const char *dir, const char *out_name)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	size_t ol = strlen(out_name);
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, out_name, ol))
			fail_msg("'%s' left behind in %s", de->d_name, dir);
	}
	closedir(d);
}

static void make_sandbox(const char *where)
{
	char p[600], root[512];
	snprintf(root, sizeof root, "%s", where);
	mkdir(root, 0755);
	snprintf(p, sizeof p, "%s/bin", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/bin/sh", root);
	unsigned char *sh;
	size_t shl;
	assert_int_equal(read_all("/bin/sh", &sh, &shl), 0);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_int_equal(write(fd, sh, shl), (ssize_t)shl);
	close(fd);
	free(sh);
	snprintf(p, sizeof p, "%s/etc", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/etc/hello", root);
	put(p, "hello\n");
	setxattr(p, "user.note", "v", 1, 0);
	char q[600];
	snprintf(q, sizeof q, "%s/etc/hard", root);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof p, "%s/etc/link", root);
	assert_int_equal(symlink("hello", p), 0);
	snprintf(p, sizeof p, "%s/sparse", root);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(pwrite(fd, "end", 3, 5 << 20), 3);
	close(fd);
	snprintf(p, sizeof p, "%s/fifo", root);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof p, "%s/.singularity.d", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/.singularity.d/runscript", root);
	put(p, "#!/bin/sh\necho hi\n");
}

static int freeze(const char *src, const char *out, struct gg_freeze_opts *extra,
		  struct gg_err *err)
{
	struct gg_freeze_opts o = {.source = src, .output = out, .jobs = 2};
	if (extra) {
		o = *extra;
		o.source = src;
		o.output = out;
	}
	struct gg_freeze_result res;
	return gg_image_freeze(&o, NULL, &res, err);
}

/* Two images hold the same squashfs (their other objects may name their sources). */
static void assert_same_partition(const char *x, const char *y)
{
	struct gg_err err = {0};
	struct gg_sif *a, *b;
	assert_int_equal(gg_sif_open(x, &a, &err), 0);
	assert_int_equal(gg_sif_open(y, &b, &err), 0);
	char *pa, *pb;
	size_t la, lb;
	assert_int_equal(gg_sif_read_object(a, gg_sif_primary(a), 1 << 24, &pa, &la, &err), 0);
	assert_int_equal(gg_sif_read_object(b, gg_sif_primary(b), 1 << 24, &pb, &lb, &err), 0);
	assert_int_equal(la, lb);
	assert_memory_equal(pa, pb, la);
	free(pa);
	free(pb);
	gg_sif_close(a);
	gg_sif_close(b);
}

static void assert_same_file(const char *a, const char *b, int same)
{
	unsigned char *x, *y;
	size_t xl, yl;
	assert_int_equal(read_all(a, &x, &xl), 0);
	assert_int_equal(read_all(b, &y, &yl), 0);
	int eq = xl == yl && memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	if (eq != same)
		fail_msg("%s and %s %s", a, b, same ? "differ" : "are the same");
}

static void test_dir_reproducible(void **state)
{
	(void)state;
	make_sandbox(P("%s", "sb"));
	struct gg_err err = {0};
	assert_int_equal(freeze(P("%s", "sb"), P("%s", "a.sif"), NULL, &err), 0);
	struct stat st;
	assert_int_equal(stat(P("%s", "a.sif"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	struct gg_freeze_opts o = {.jobs = 1}; /* thread count must not matter */
	assert_int_equal(freeze(P("%s", "sb"), P("%s", "b.sif"), &o, &err), 0);
	assert_same_file(P("%s", "a.sif"), P("%s", "b.sif"), 1);
	o.no_reproducible = 1;
	assert_int_equal(freeze(P("%s", "sb"), P("%s", "c.sif"), &o, &err), 0);
	assert_same_file(P("%s", "a.sif"), P("%s", "c.sif"), 0);

	/* what was written is a sound SIF with the expected objects */
	struct gg_sif_verify_report rep;
	assert_int_equal(gg_sif_verify(P("%s", "a.sif"), &rep, &err), 0);
	assert_true(rep.ok);
	struct gg_sif *s;
	assert_int_equal(gg_sif_open(P("%s", "a.sif"), &s, &err), 0);
	const struct gg_sif_descr *p = gg_sif_primary(s);
	assert_non_null(p);
	assert_int_equal(p->offset, 32768);
	assert_non_null(gg_sif_find(s, GG_SIF_DEFFILE, NULL));
	assert_int_equal(gg_sif_find(s, GG_SIF_DEFFILE, NULL)->id, 1);
	assert_non_null(gg_sif_find(s, GG_SIF_GENERIC_JSON, "inspect-metadata.json"));
	const struct gg_sif_descr *pv =
		gg_sif_find(s, GG_SIF_GENERIC_JSON, "gridgpu-provenance.json");
	assert_non_null(pv);
	char *buf;
	size_t len;
	assert_int_equal(gg_sif_read_object(s, pv, 1 << 20, &buf, &len, &err), 0);
	assert_non_null(strstr(buf, "\"kind\":\"dir\""));
	free(buf);
	assert_memory_equal(s->hdr.arch, gg_image_host_arch(), 2);
	gg_sif_close(s);

	/* SOURCE_DATE_EPOCH: a different fixed time, still reproducible */
	struct gg_freeze_opts sde = {.have_source_date_epoch = 1, .source_date_epoch = 86400};
	assert_int_equal(freeze(P("%s", "sb"), P("%s", "d.sif"), &sde, &err), 0);
	assert_int_equal(freeze(P("%s", "sb"), P("%s", "e.sif"), &sde, &err), 0);
	assert_same_file(P("%s", "d.sif"), P("%s", "e.sif"), 1);
	assert_same_file(P("%s", "a.sif"), P("%s", "d.sif"), 0);
}

static void test_output_handling(void **state)
{
	(void)state;
	make_sandbox(P("%s", "sb2"));
	struct gg_err err = {0};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "out.sif"), NULL, &err), 0);
	/* exists: refused, untouched; --force replaces */
	put(P("%s", "out.sif"), "old");
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "out.sif"), NULL, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "--force"));
	unsigned char *b;
	size_t l;
	read_all(P("%s", "out.sif"), &b, &l);
	assert_int_equal(l, 3);
	free(b);
	struct gg_freeze_opts o = {.force = 1};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "out.sif"), &o, &err), 0);
	struct stat st;
	assert_int_equal(stat(P("%s", "out.sif"), &st), 0);
	assert_true(st.st_size > 32768);
	/* missing sandbox, bad options */
	assert_true(freeze(P("%s", "missing"), P("%s", "m.sif"), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "No such file"));
	assert_clean(tmpdir, "m.sif");
	o = (struct gg_freeze_opts){.level = 13};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "m.sif"), &o, &err), GG_EUSAGE);
	const char *bad[] = {"nolabel"};
	o = (struct gg_freeze_opts){.labels = bad, .nlabels = 1};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "m.sif"), &o, &err), GG_EUSAGE);
	o = (struct gg_freeze_opts){.gpus_json = "{"};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "m.sif"), &o, &err), GG_EUSAGE);
	o = (struct gg_freeze_opts){.format = GG_IMAGE_TAR};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "m.sif"), &o, &err), GG_EUSAGE);
	assert_clean(tmpdir, "m.sif");
	/* an output inside the sandbox is not frozen into itself */
	o = (struct gg_freeze_opts){.force = 1};
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "sb2/self.sif"), &o, &err), 0);
	assert_int_equal(freeze(P("%s", "sb2"), P("%s", "sb2/self.sif"), &o, &err), 0);
	struct gg_sif *s;
	assert_int_equal(gg_sif_open(P("%s", "sb2/self.sif"), &s, &err), 0);
	assert_true(gg_sif_primary(s)->size < 200000);
	gg_sif_close(s);
}

/* The name the temp file takes to be renamed from is one nobody has: a name that is
 * taken is left alone, another tried; when every try finds one taken, freeze fails
 * naming the output and removes only what it made. */
static void test_temp_name_taken(void **state)
{
	(void)state;
	if (!squat_unnamed_works(tmpdir))
		skip();
	make_sandbox(P("%s", "sbt"));
	struct gg_err err = {0};
	squat = 2;
	assert_int_equal(freeze(P("%s", "sbt"), P("%s", "t.sif"), NULL, &err), 0);
	assert_int_equal(squat_intact(), 2);
	struct stat st;
	assert_int_equal(stat(P("%s", "t.sif"), &st), 0);
	assert_int_equal(unlink(P("%s", "t.sif")), 0);
	assert_clean(tmpdir, "t.sif");
	squat = 1000;
	assert_int_equal(freeze(P("%s", "sbt"), P("%s", "t.sif"), NULL, &err), GG_EIO);
	assert_non_null(strstr(err.msg, "t.sif': 16 temporary names beside it were taken"));
	assert_non_null(strstr(err.msg, "remove stale"));
	assert_int_equal(squat_intact(), 16);
	assert_clean(tmpdir, "t.sif");
}

/* source_end is called once the image is written and before it is installed: an output
 * another program made meanwhile is not replaced without force (freeze --session relies
 * on it: its stream's end is checked there), and an error from it installs nothing. */
static int made_meanwhile(void *ud, struct gg_err *err)
{
	(void)err;
	put(ud, "theirs");
	return 0;
}

static int source_failed(void *ud, struct gg_err *err)
{
	(void)ud;
	return gg_err_set(err, GG_EFAIL, "the remote tar failed");
}

static void test_source_end(void **state)
{
	(void)state;
	make_sandbox(P("%s", "sbe"));
	char *src = strdup(P("%s", "sbe")), *out = strdup(P("%s", "srcend.sif"));
	struct gg_err err = {0};
	struct gg_image_callbacks cb = {.source_end = made_meanwhile, .ud = out};
	struct gg_freeze_opts o = {.source = src, .output = out, .jobs = 2};
	assert_int_equal(gg_image_freeze(&o, &cb, NULL, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "exists (use --force to replace it)"));
	unsigned char *b;
	size_t l;
	assert_int_equal(read_all(out, &b, &l), 0);
	assert_int_equal(l, 6);
	assert_memory_equal(b, "theirs", 6);
	free(b);
	assert_int_equal(unlink(out), 0);
	assert_clean(tmpdir, "srcend.sif");
	cb.source_end = source_failed;
	assert_int_equal(gg_image_freeze(&o, &cb, NULL, &err), GG_EFAIL);
	assert_string_equal(err.msg, "the remote tar failed");
	assert_clean(tmpdir, "srcend.sif");
	free(src);
	free(out);
}

/* ---- tars ------------------------------------------------------------------------ */

struct tent {
	const char *name;
	unsigned type;    /* AE_IF*, 0 = hard link */
	const char *data; /* contents, or link target */
	int64_t uid;
};

static void write_tar(const char *path, const struct tent *e, size_t n, int gz)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *ae = archive_entry_new();
		archive_entry_set_pathname(ae, e[i].name);
		archive_entry_set_mtime(ae, 1600000000, 0);
		archive_entry_set_uid(ae, e[i].uid);
		archive_entry_set_gid(ae, e[i].uid);
		if (e[i].type == 0) {
			archive_entry_set_hardlink(ae, e[i].data);
		} else {
			archive_entry_set_filetype(ae, e[i].type);
			archive_entry_set_perm(ae, e[i].type == AE_IFDIR ? 0755 : 0644);
			if (e[i].type == AE_IFLNK)
				archive_entry_set_symlink(ae, e[i].data);
			if (e[i].type == AE_IFREG)
				archive_entry_set_size(ae, (la_int64_t)strlen(e[i].data));
		}
		assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
		if (e[i].type == AE_IFREG)
			archive_write_data(a, e[i].data, strlen(e[i].data));
		archive_entry_free(ae);
	}
	archive_write_close(a);
	archive_write_free(a);
}

static void expect_tar_fails(const struct tent *e, size_t n, const char *msg)
{
	write_tar(P("%s", "bad.tar"), e, n, 0);
	struct gg_err err = {0};
	assert_true(freeze(P("%s", "bad.tar"), P("%s", "bad.sif"), NULL, &err) < 0);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' does not say '%s'", err.msg, msg);
	assert_clean(tmpdir, "bad.sif");
}

static void test_tar(void **state)
{
	(void)state;
	const struct tent good[] = {
		{"./", AE_IFDIR, NULL, 0},
		{"./etc/", AE_IFDIR, NULL, 0},
		{"./etc/passwd", AE_IFREG, "root:x:0:0::/root:/bin/sh\n", 0},
		{"./etc/pw2", 0, "./etc/passwd", 0},
		{"./usr/lib/x", AE_IFREG, "implicit parents\n", 5},
		{"./link", AE_IFLNK, "/etc/passwd", 0},
		{"./etc/passwd", AE_IFREG, "replaced\n", 0},
		{"./.singularity.d/labels.json", AE_IFREG, "{\"from\":\"tar\"}", 0},
	};
	write_tar(P("%s", "good.tar"), good, sizeof good / sizeof good[0], 0);
	write_tar(P("%s", "good.tar.gz"), good, sizeof good / sizeof good[0], 1);
	struct gg_err err = {0};
	assert_int_equal(freeze(P("%s", "good.tar"), P("%s", "t1.sif"), NULL, &err), 0);
	assert_int_equal(freeze(P("%s", "good.tar.gz"), P("%s", "t2.sif"), NULL, &err), 0);
	/* same entries, same partition; the objects differ (source digest) */
	assert_same_partition(P("%s", "t1.sif"), P("%s", "t2.sif"));
	struct gg_sif *a;
	assert_int_equal(gg_sif_open(P("%s", "t1.sif"), &a, &err), 0);
	char *meta;
	size_t ml;
	assert_int_equal(
		gg_sif_read_object(a, gg_sif_find(a, GG_SIF_GENERIC_JSON, "inspect-metadata.json"),
				   1 << 20, &meta, &ml, &err),
		0);
	assert_non_null(strstr(meta, "\"from\":\"tar\""));
	free(meta);
	assert_int_equal(gg_sif_read_object(
				 a, gg_sif_find(a, GG_SIF_GENERIC_JSON, "gridgpu-provenance.json"),
				 1 << 20, &meta, &ml, &err),
			 0);
	assert_non_null(strstr(meta, "\"digest\":\"sha256:"));
	free(meta);
	gg_sif_close(a);

	/* stdin-like: a pipe through input_fd */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	unsigned char *tb;
	size_t tl;
	read_all(P("%s", "good.tar"), &tb, &tl);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		ssize_t w = write(fds[1], tb, tl);
		_exit(w == (ssize_t)tl ? 0 : 1);
	}
	close(fds[1]);
	struct gg_freeze_opts o = {.input_fd = fds[0]};
	assert_int_equal(freeze("-", P("%s", "t3.sif"), &o, &err), 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);

	/* a pipe by its name, as bash's <(tar c ...) gives it: /dev/fd/N has no real path */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		ssize_t w = write(fds[1], tb, tl);
		_exit(w == (ssize_t)tl ? 0 : 1);
	}
	close(fds[1]);
	char byname[32];
	snprintf(byname, sizeof byname, "/dev/fd/%d", fds[0]);
	if (freeze(byname, P("%s", "t4.sif"), NULL, &err) != 0)
		fail_msg("freeze %s: %s", byname, err.msg);
	close(fds[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_same_partition(P("%s", "t3.sif"), P("%s", "t4.sif"));
	free(tb);

	/* traversal and other bad entries */
	const struct tent up[] = {{"../evil", AE_IFREG, "x", 0}};
	expect_tar_fails(up, 1, "'..'");
	const struct tent up2[] = {{"a/../../evil", AE_IFREG, "x", 0}};
	expect_tar_fails(up2, 1, "'..'");
	const struct tent abs[] = {{"/etc/evil", AE_IFREG, "x", 0}};
	expect_tar_fails(abs, 1, "absolute");
	const struct tent esc[] = {{"etc", AE_IFLNK, "/host-etc", 0},
				   {"etc/passwd", AE_IFREG, "x", 0}};
	expect_tar_fails(esc, 2, "symbolic link");
	const struct tent hl[] = {{"x", 0, "nowhere", 0}};
	expect_tar_fails(hl, 1, "hard link");
	const struct tent hlup[] = {{"a", AE_IFREG, "x", 0}, {"x", 0, "../a", 0}};
	expect_tar_fails(hlup, 2, "'..'");

	/* not a tar, empty, truncated, corrupt */
	put(P("%s", "bad.tar"), "this is not a tar archive at all, just some text\n");
	assert_true(freeze(P("%s", "bad.tar"), P("%s", "bad.sif"), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "not a tar archive"));
	assert_non_null(strstr(err.msg, "freeze takes a directory, a tar or an OCI image"));
	assert_clean(tmpdir, "bad.sif");
	put(P("%s", "bad.tar"), "");
	assert_true(freeze(P("%s", "bad.tar"), P("%s", "bad.sif"), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "empty"));
	assert_clean(tmpdir, "bad.sif");
	char big[20000];
	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	const struct tent one[] = {{"big", AE_IFREG, big, 0}};
	write_tar(P("%s", "trunc.tar"), one, 1, 0);
	assert_int_equal(truncate(P("%s", "trunc.tar"), 5000), 0);
	assert_true(freeze(P("%s", "trunc.tar"), P("%s", "bad.sif"), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "runcated"));
	assert_clean(tmpdir, "bad.sif");
	write_tar(P("%s", "corrupt.tar"), one, 1, 0);
	int fd = open(P("%s", "corrupt.tar"), O_RDWR);
	assert_int_equal(pwrite(fd, "XXXXXXXX", 8, 148), 8); /* header checksum */
	close(fd);
	assert_true(freeze(P("%s", "corrupt.tar"), P("%s", "bad.sif"), NULL, &err) < 0);
	assert_clean(tmpdir, "bad.sif");
	write_tar(P("%s", "trunc.tar.gz"), one, 1, 1);
	assert_int_equal(truncate(P("%s", "trunc.tar.gz"), 40), 0);
	assert_true(freeze(P("%s", "trunc.tar.gz"), P("%s", "bad.sif"), NULL, &err) < 0);
	assert_clean(tmpdir, "bad.sif");
}

/* Names squashfs cannot hold and paths deep enough to overflow a recursive walk are
 * refused with an error naming the entry (a 200,000-level pax path once crashed the
 * freeze; a 257-byte name made an image unsquashfs could not extract). */
static void test_tar_bounds(void **state)
{
	(void)state;
	size_t n = 200000;
	char *deep = malloc(2 * n + 8);
	for (size_t i = 0; i < n; i++)
		memcpy(deep + 2 * i, "a/", 2);
	strcpy(deep + 2 * n, "f");
	const struct tent e1[] = {{deep, AE_IFREG, "x", 0}};
	expect_tar_fails(e1, 1, "a path of 400001 bytes");
	free(deep);

	char name[300];
	memset(name, 'n', 257);
	name[257] = '\0';
	const struct tent e2[] = {{"./", AE_IFDIR, NULL, 0}, {name, AE_IFREG, "x", 0}};
	expect_tar_fails(e2, 2, "a name of 257 bytes");
	name[256] = '\0'; /* 256 is the limit, and fine */
	write_tar(P("%s", "n256.tar"), e2, 2, 0);
	struct gg_err err = {0};
	assert_int_equal(freeze(P("%s", "n256.tar"), P("%s", "n256.sif"), NULL, &err), 0);
}

static void test_too_many_ids(void **state)
{
	(void)state;
	size_t n = 65537;
	struct archive *a = archive_write_new();
	archive_write_set_format_ustar(a);
	assert_int_equal(archive_write_open_filename(a, P("%s", "ids.tar")), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *ae = archive_entry_new();
		char name[32];
		snprintf(name, sizeof name, "f%zu", i);
		archive_entry_set_pathname(ae, name);
		archive_entry_set_filetype(ae, AE_IFREG);
		archive_entry_set_perm(ae, 0644);
		archive_entry_set_uid(ae, (la_int64_t)(i + 100));
		archive_entry_set_gid(ae, 100);
		archive_entry_set_size(ae, 0);
		archive_write_header(a, ae);
		archive_entry_free(ae);
	}
	archive_write_close(a);
	archive_write_free(a);
	struct gg_err err = {0};
	assert_true(freeze(P("%s", "ids.tar"), P("%s", "ids.sif"), NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "65536"));
	assert_clean(tmpdir, "ids.sif");
}

/* ---- OCI layout ------------------------------------------------------------------ */

static char *blob(const char *layout, const void *data, size_t len)
{
	unsigned char md[32];
	unsigned ml;
	EVP_Digest(data, len, md, &ml, EVP_sha256(), NULL);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	char path[600];
	snprintf(path, sizeof path, "%s/blobs/sha256/%s", layout, hex);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return gg_strdup_printf("sha256:%s", hex);
}

static char *tar_blob(const char *layout, const struct tent *e, size_t n, size_t *len)
{
	write_tar(P("%s", "layer.tmp"), e, n, 1);
	unsigned char *b;
	read_all(P("%s", "layer.tmp"), &b, len);
	char *d = blob(layout, b, *len);
	free(b);
	return d;
}

static void make_oci(const char *where)
{
	char p[600], layout[512];
	snprintf(layout, sizeof layout, "%s", where); /* P() buffers rotate */
	mkdir(layout, 0755);
	snprintf(p, sizeof p, "%s/blobs", layout);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/blobs/sha256", layout);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/oci-layout", layout);
	put(p, "{\"imageLayoutVersion\":\"1.0.0\"}");
	const struct tent l1[] = {
		{"etc/", AE_IFDIR, NULL, 0},  {"etc/a", AE_IFREG, "a1", 0},
		{"etc/b", AE_IFREG, "b1", 0}, {"opt/x", AE_IFREG, "x", 0},
		{"opt/y", AE_IFREG, "y", 0},  {"gone/big", AE_IFREG, "big data to be deleted", 0},
	};
	const struct tent l2[] = {
		{"etc/.wh.b", AE_IFREG, "", 0},
		{"etc/a", AE_IFREG, "a2", 0},
		{"opt/.wh..wh..opq", AE_IFREG, "", 0},
		{"opt/z", AE_IFREG, "z", 0},
		{".wh.gone", AE_IFREG, "", 0},
		{"new/f", AE_IFREG, "f", 7},
		{"new/hl", 0, "new/f", 0},
	};
	size_t s1, s2;
	char *d1 = tar_blob(layout, l1, sizeof l1 / sizeof l1[0], &s1);
	char *d2 = tar_blob(layout, l2, sizeof l2 / sizeof l2[0], &s2);
	const char *cfg = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Labels\":"
			  "{\"org.example\":\"oci\"},\"Env\":[\"A=1\"]}}";
	char *dc = blob(layout, cfg, strlen(cfg));
	json_t *man = json_pack(
		"{s:i,s:s,s:{s:s,s:s,s:i},s:[{s:s,s:s,s:i},{s:s,s:s,s:i}]}", "schemaVersion", 2,
		"mediaType", "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
		"application/vnd.oci.image.config.v1+json", "digest", dc, "size", (int)strlen(cfg),
		"layers", "mediaType", "application/vnd.oci.image.layer.v1.tar+gzip", "digest", d1,
		"size", (int)s1, "mediaType", "application/vnd.oci.image.layer.v1.tar+gzip",
		"digest", d2, "size", (int)s2);
	char *ms = json_dumps(man, JSON_COMPACT);
	char *dm = blob(layout, ms, strlen(ms));
	json_t *idx = json_pack("{s:i,s:[{s:s,s:s,s:i}]}", "schemaVersion", 2, "manifests",
				"mediaType", "application/vnd.oci.image.manifest.v1+json", "digest",
				dm, "size", (int)strlen(ms));
	char *is = json_dumps(idx, JSON_COMPACT);
	snprintf(p, sizeof p, "%s/index.json", layout);
	put(p, is);
	free(is);
	free(ms);
	json_decref(idx);
	json_decref(man);
	free(d1);
	free(d2);
	free(dc);
	free(dm);
}

static void test_oci(void **state)
{
	(void)state;
	make_oci(P("%s", "oci"));
	enum gg_image_format f;
	struct gg_err err = {0};
	assert_int_equal(gg_image_detect(P("%s", "oci"), &f, &err), 0);
	assert_int_equal(f, GG_IMAGE_OCI);
	struct gg_freeze_result res;
	struct gg_freeze_opts o = {.source = P("%s", "oci"), .output = P("%s", "oci.sif")};
	assert_int_equal(gg_image_freeze(&o, NULL, &res, &err), 0);
	assert_int_equal(res.format, GG_IMAGE_OCI);
	assert_int_equal(res.files, 3); /* etc/a, opt/z, new/f (new/hl shares it), nothing else */
	assert_int_equal(res.hardlinks, 1);
	assert_int_equal(res.data_bytes, 2 + 1 + 1);
	struct gg_sif *s;
	assert_int_equal(gg_sif_open(P("%s", "oci.sif"), &s, &err), 0);
	assert_non_null(gg_sif_find(s, GG_SIF_GENERIC_JSON, "oci-config.json"));
	char *m;
	size_t ml;
	assert_int_equal(
		gg_sif_read_object(s, gg_sif_find(s, GG_SIF_GENERIC_JSON, "inspect-metadata.json"),
				   1 << 20, &m, &ml, &err),
		0);
	assert_non_null(strstr(m, "\"org.example\":\"oci\""));
	free(m);
	gg_sif_close(s);

	/* a corrupt layer blob fails its digest check */
	char cmd[700];
	snprintf(cmd, sizeof cmd,
		 "cd '%s/oci/blobs/sha256' && f=$(ls -S | head -1) && printf X | dd of=$f bs=1 "
		 "seek=20 conv=notrunc 2>/dev/null",
		 tmpdir);
	assert_int_equal(system(cmd), 0);
	o.output = P("%s", "oci2.sif");
	assert_true(gg_image_freeze(&o, NULL, &res, &err) < 0);
	assert_non_null(strstr(err.msg, "digest"));
	assert_clean(tmpdir, "oci2.sif");
	/* a missing blob */
	snprintf(cmd, sizeof cmd, "cd '%s/oci/blobs/sha256' && rm -f $(ls -S | head -1)", tmpdir);
	assert_int_equal(system(cmd), 0);
	assert_true(gg_image_freeze(&o, NULL, &res, &err) < 0);
	assert_clean(tmpdir, "oci2.sif");
	/* an OCI layout cannot come from standard input */
	o.source = "-";
	o.format = GG_IMAGE_OCI;
	assert_int_equal(gg_image_freeze(&o, NULL, &res, &err), GG_EUSAGE);
}

/* ---- the sandbox changing under the freeze ------------------------------------------ */

/* At the start of the data phase (after the scan), replace one path of the sandbox:
 * what --from was becomes --aside, and --from becomes a symlink to --to (link_to) or a
 * hard link of --to (a different file in the same place). */
struct swap {
	const char *from, *aside, *to;
	int hard, done;
	unsigned jobs; /* 2: with the read-ahead threads */
};

static void swap_at_data(void *ud, const struct gg_image_progress *p)
{
	struct swap *w = ud;
	if (p->phase != GG_IMAGE_PHASE_DATA || w->done)
		return;
	w->done = 1;
	assert_int_equal(rename(w->from, w->aside), 0);
	if (w->hard)
		assert_int_equal(link(w->to, w->from), 0);
	else
		assert_int_equal(symlink(w->to, w->from), 0);
}

static void expect_swap_fails(struct swap *w, const char *sb, const char *out, const char *name)
{
	struct gg_image_callbacks cb = {.progress = swap_at_data, .ud = w};
	struct gg_freeze_opts o = {.source = sb, .output = out, .jobs = w->jobs};
	struct gg_err err = {0};
	int rc = gg_image_freeze(&o, &cb, NULL, &err);
	assert_int_equal(w->done, 1);
	/* before the fix: rc 0 and the outside file's bytes in the image */
	assert_true(rc < 0);
	if (!strstr(err.msg, "changed while freezing") || !strstr(err.msg, name))
		fail_msg("'%s' does not say '%s' changed while freezing", err.msg, name);
	assert_clean(tmpdir, "race.sif");
}

static void test_sandbox_race(void **state)
{
	(void)state;
	mkdir(P("%s", "outside"), 0755);
	put(P("%s", "outside/f"), "SECRET-OUTSIDE\n");
	/* a directory replaced by a symlink to a directory outside the sandbox */
	mkdir(P("%s", "race1"), 0755);
	mkdir(P("%s", "race1/d"), 0755);
	put(P("%s", "race1/d/f"), "inside\n");
	char from[512], aside[512], to[512];
	snprintf(from, sizeof from, "%s", P("%s", "race1/d"));
	snprintf(aside, sizeof aside, "%s", P("%s", "race1-d-aside"));
	snprintf(to, sizeof to, "%s", P("%s", "outside"));
	struct swap w = {from, aside, to, 0, 0, 1};
	expect_swap_fails(&w, P("%s", "race1"), P("%s", "race.sif"), "d/f");
	/* a file replaced by another file (a hard link of one outside): the inode differs */
	mkdir(P("%s", "race2"), 0755);
	put(P("%s", "race2/f"), "inside\n");
	snprintf(from, sizeof from, "%s", P("%s", "race2/f"));
	snprintf(aside, sizeof aside, "%s", P("%s", "race2-f-aside"));
	snprintf(to, sizeof to, "%s", P("%s", "outside/f"));
	struct swap w2 = {from, aside, to, 1, 0, 1};
	expect_swap_fails(&w2, P("%s", "race2"), P("%s", "race.sif"), "race2/f");
	/* again with the read-ahead thread: the file it opens is checked the same way */
	assert_int_equal(unlink(from), 0);
	assert_int_equal(rename(aside, from), 0);
	struct swap w3 = {from, aside, to, 1, 0, 2};
	expect_swap_fails(&w3, P("%s", "race2"), P("%s", "race.sif"), "race2/f");
}

/* Opening beneath the root refuses a symlink anywhere on the path, with openat2 and
 * with the per-component fallback alike. */
static void test_open_beneath(void **state)
{
	(void)state;
	mkdir(P("%s", "ob"), 0755);
	mkdir(P("%s", "ob/a"), 0755);
	mkdir(P("%s", "ob/a/b"), 0755);
	put(P("%s", "ob/a/b/f"), "f\n");
	assert_int_equal(symlink("a", P("%s", "ob/l")), 0);
	assert_int_equal(symlink("/etc", P("%s", "ob/a/etc")), 0);
	assert_int_equal(symlink("f", P("%s", "ob/a/b/lf")), 0);
	int root = open(P("%s", "ob"), O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	for (int v2 = 0; v2 <= gg_image_openat2_works(root); v2++) {
		int fd = gg_image_open_beneath(root, "a/b/f", O_RDONLY, v2);
		assert_true(fd >= 0);
		close(fd);
		fd = gg_image_open_beneath(root, "", O_RDONLY | O_DIRECTORY, v2);
		assert_true(fd >= 0);
		close(fd);
		const char *bad[] = {"l/b/f", "a/etc/passwd", "a/b/lf", "l"};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			errno = 0;
			assert_int_equal(gg_image_open_beneath(root, bad[i], O_RDONLY, v2), -1);
			if (errno != ELOOP && errno != ENOTDIR)
				fail_msg("'%s' (openat2 %d): %s", bad[i], v2, strerror(errno));
		}
	}
	close(root);
}

/* A sandbox path longer than 4095 bytes is refused, naming it. */
static void test_sandbox_deep(void **state)
{
	(void)state;
	mkdir(P("%s", "deepsb"), 0755);
	int fd = open(P("%s", "deepsb"), O_RDONLY | O_DIRECTORY);
	char name[201];
	memset(name, 'd', 200);
	name[200] = '\0';
	for (int i = 0; i < 21; i++) { /* 21 * 201 bytes */
		assert_int_equal(mkdirat(fd, name, 0755), 0);
		int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = nfd;
	}
	close(fd);
	struct gg_err err = {0};
	assert_true(freeze(P("%s", "deepsb"), P("%s", "deep.sif"), NULL, &err) < 0);
	if (!strstr(err.msg, "a path of 4220 bytes"))
		fail_msg("%s", err.msg);
	assert_clean(tmpdir, "deep.sif");
	unit_rmtree(P("%s", "deepsb"));
}

/* ---- endless and inflated input ------------------------------------------------------ */

static int cancel_now(void *ud)
{
	(void)ud;
	return 1;
}

/* /dev/zero as a tar stream: an empty archive followed by endless zeros. Before, the
 * loop hashing what follows the end marker read it forever and never polled cancel. */
static void test_tar_endless(void **state)
{
	(void)state;
	int fd = open("/dev/zero", O_RDONLY);
	assert_true(fd >= 0);
	struct gg_freeze_opts o = {.source = "-", .input_fd = fd, .output = P("%s", "z.sif")};
	struct gg_err err = {0};
	assert_int_equal(gg_image_freeze(&o, NULL, NULL, &err), GG_EFAIL);
	if (!strstr(err.msg, "after the end of the tar archive"))
		fail_msg("%s", err.msg);
	assert_clean(tmpdir, "z.sif");
	struct gg_image_callbacks cb = {.cancel = cancel_now};
	assert_int_equal(gg_image_freeze(&o, &cb, NULL, &err), GG_EINTR);
	assert_clean(tmpdir, "z.sif");
	close(fd);
	/* tar padding after the end marker is fine */
	const struct tent e[] = {{"f", AE_IFREG, "x", 0}};
	write_tar(P("%s", "pad.tar"), e, 1, 0);
	int pfd = open(P("%s", "pad.tar"), O_WRONLY | O_APPEND);
	static const char zeros[64 << 10];
	assert_int_equal(write(pfd, zeros, sizeof zeros), (ssize_t)sizeof zeros);
	close(pfd);
	assert_int_equal(freeze(P("%s", "pad.tar"), P("%s", "pad.sif"), NULL, &err), 0);
}

/* A sparse tar: declared size, data at the end. */
static void write_sparse_tar(const char *path, int64_t size)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax(a);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	struct archive_entry *ae = archive_entry_new();
	archive_entry_set_pathname(ae, "sparse");
	archive_entry_set_filetype(ae, AE_IFREG);
	archive_entry_set_perm(ae, 0644);
	archive_entry_set_size(ae, size);
	archive_entry_sparse_add_entry(ae, size - 4, 4);
	assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
	assert_int_equal(archive_write_data(a, "end\n", 4), 4);
	archive_entry_free(ae);
	archive_write_close(a);
	archive_write_free(a);
}

/* 10 KiB declaring 1 TiB: refused at once instead of minutes of zeros. */
static void test_tar_sparse_bound(void **state)
{
	(void)state;
	write_sparse_tar(P("%s", "tib.tar"), (int64_t)1 << 40);
	struct gg_err err = {0};
	assert_int_equal(freeze(P("%s", "tib.tar"), P("%s", "tib.sif"), NULL, &err), GG_EFAIL);
	if (!strstr(err.msg, "entry 'sparse': sparse file holes of 1024 GiB"))
		fail_msg("%s", err.msg);
	assert_clean(tmpdir, "tib.sif");
	/* a reasonable hole still freezes, with its size */
	write_sparse_tar(P("%s", "mib.tar"), 64 << 20);
	struct gg_freeze_result res;
	struct gg_freeze_opts o = {.source = P("%s", "mib.tar"), .output = P("%s", "mib.sif")};
	assert_int_equal(gg_image_freeze(&o, NULL, &res, &err), 0);
	assert_int_equal(res.data_bytes, 64 << 20);
}

/* ---- OCI digests ------------------------------------------------------------------ */

/* A blob stored under blobs/ALG/<hex of ALG>; returns "ALG:<hex>" (malloc'd). With
 * corrupt set, the stored bytes differ from what the digest was taken of. */
static char *blob_alg(const char *layout, const char *alg, const void *data, size_t len,
		      int corrupt)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned ml = 0;
	EVP_Digest(data, len, md, &ml, EVP_get_digestbyname(alg), NULL);
	char hex[2 * EVP_MAX_MD_SIZE + 1], path[700];
	for (unsigned i = 0; i < ml; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(path, sizeof path, "%s/blobs/%s", layout, alg);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/blobs/%s/%s", layout, alg, hex);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	if (corrupt)
		assert_int_equal(pwrite(fd, "X", 1, 20), 1);
	close(fd);
	return gg_strdup_printf("%s:%s", alg, hex);
}

/* An OCI layout with one layer whose digest uses alg. */
static void make_oci_alg(const char *layout, const char *alg, int corrupt)
{
	char p[700];
	mkdir(layout, 0755);
	snprintf(p, sizeof p, "%s/blobs", layout);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/oci-layout", layout);
	put(p, "{\"imageLayoutVersion\":\"1.0.0\"}");
	const struct tent l1[] = {{"etc/a", AE_IFREG, "layer data", 0}};
	write_tar(P("%s", "layer.tmp"), l1, 1, 1);
	unsigned char *b;
	size_t bl;
	read_all(P("%s", "layer.tmp"), &b, &bl);
	char *dl = blob_alg(layout, alg, b, bl, corrupt);
	free(b);
	const char *cfg = "{\"architecture\":\"amd64\",\"os\":\"linux\"}";
	char *dc = blob_alg(layout, "sha256", cfg, strlen(cfg), 0);
	json_t *man = json_pack("{s:i,s:{s:s,s:i},s:[{s:s,s:s,s:i}]}", "schemaVersion", 2, "config",
				"digest", dc, "size", (int)strlen(cfg), "layers", "mediaType",
				"application/vnd.oci.image.layer.v1.tar+gzip", "digest", dl, "size",
				(int)bl);
	char *ms = json_dumps(man, JSON_COMPACT);
	char *dm = blob_alg(layout, "sha256", ms, strlen(ms), 0);
	json_t *idx = json_pack("{s:i,s:[{s:s,s:s}]}", "schemaVersion", 2, "manifests", "mediaType",
				"application/vnd.oci.image.manifest.v1+json", "digest", dm);
	char *is = json_dumps(idx, JSON_COMPACT);
	snprintf(p, sizeof p, "%s/index.json", layout);
	put(p, is);
	free(is);
	free(ms);
	json_decref(idx);
	json_decref(man);
	free(dl);
	free(dc);
	free(dm);
}

/* Every digest OCI allows is checked (sha256, sha512); others are refused rather than
 * trusted (a sha512 or md5 layer was never checked before). */
static void test_oci_digests(void **state)
{
	(void)state;
	struct {
		const char *alg;
		int corrupt;
		const char *msg; /* NULL: freezes */
	} cases[] = {
		{"sha512", 0, NULL},
		{"sha512", 1, "does not match its digest"},
		{"sha256", 1, "does not match its digest"},
		{"md5", 0, "digest algorithm 'md5' is not supported"},
		{"sha1", 1, "digest algorithm 'sha1' is not supported"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char layout[600];
		snprintf(layout, sizeof layout, "%s/ocid%zu", tmpdir, i);
		make_oci_alg(layout, cases[i].alg, cases[i].corrupt);
		struct gg_freeze_opts o = {.source = layout, .output = P("%s", "ocid.sif")};
		struct gg_err err = {0};
		int rc = gg_image_freeze(&o, NULL, NULL, &err);
		if (!cases[i].msg) {
			assert_int_equal(rc, 0);
			unlink(P("%s", "ocid.sif"));
			continue;
		}
		if (rc == 0 || !strstr(err.msg, cases[i].msg))
			fail_msg("%s%s: rc %d, '%s'", cases[i].alg,
				 cases[i].corrupt ? " (corrupt)" : "", rc, err.msg);
		assert_clean(tmpdir, "ocid.sif");
	}
}

/* ---- cancel, unreadable ------------------------------------------------------------ */

static int cancel_after(void *ud)
{
	int *n = ud;
	return --*n <= 0;
}

/* Ctrl-C while freeze waits for a fifo's writer: the open is interrupted, and freeze
 * says so (GG_EINTR: the CLI's 130), not "Interrupted system call". The signal's
 * handler sets the flag the cancel callback reads, as the CLI's does; it is sent once
 * the freezing thread is in the open (its /proc syscall line says openat). */
static atomic_int fifo_cancelled;
static void fifo_on_signal(int sig)
{
	(void)sig;
	atomic_store(&fifo_cancelled, 1);
}
static int fifo_cancel(void *ud)
{
	(void)ud;
	return atomic_load(&fifo_cancelled);
}
struct fifo_poke {
	pthread_t th;
	pid_t tid;
	atomic_int done;
};
static void *fifo_poker(void *arg)
{
	struct fifo_poke *p = arg;
	char path[64], line[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)p->tid);
	const struct timespec ms = {0, 1000000};
	while (!atomic_load(&p->done)) {
		FILE *f = fopen(path, "r");
		int in_open = f && fgets(line, sizeof line, f) && !strncmp(line, "257 ", 4);
		if (f)
			fclose(f);
		if (in_open)
			pthread_kill(p->th, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void test_fifo_interrupted(void **state)
{
	(void)state;
	assert_int_equal(mkfifo(P("%s", "fifo"), 0600), 0);
	struct sigaction sa = {.sa_handler = fifo_on_signal}, old; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	struct fifo_poke p = {.th = pthread_self(), .tid = gettid()};
	pthread_t poker;
	assert_int_equal(pthread_create(&poker, NULL, fifo_poker, &p), 0);
	struct gg_image_callbacks cb = {.cancel = fifo_cancel};
	struct gg_freeze_opts o = {.source = P("%s", "fifo"), .output = P("%s", "fifo.sif")};
	struct gg_err err = {0};
	int rc = gg_image_freeze(&o, &cb, NULL, &err);
	atomic_store(&p.done, 1);
	pthread_join(poker, NULL);
	sigaction(SIGUSR1, &old, NULL);
	if (rc != GG_EINTR)
		fail_msg("rc %d: %s", rc, err.msg);
	assert_clean(tmpdir, "fifo.sif");
	unlink(P("%s", "fifo"));
}

static void test_cancel(void **state)
{
	(void)state;
	make_sandbox(P("%s", "sb3"));
	for (int when = 1; when <= 12; when += 3) {
		int n = when;
		struct gg_image_callbacks cb = {.cancel = cancel_after, .ud = &n};
		struct gg_freeze_opts o = {.source = P("%s", "sb3"), .output = P("%s", "cx.sif")};
		struct gg_err err = {0};
		assert_int_equal(gg_image_freeze(&o, &cb, NULL, &err), GG_EINTR);
		assert_clean(tmpdir, "cx.sif");
	}
}

static void warn_count(void *ud, const char *msg)
{
	(void)msg;
	++*(int *)ud;
}

static void test_unreadable(void **state)
{
	(void)state;
	make_sandbox(P("%s", "sb4"));
	put(P("%s", "sb4/secret"), "no");
	chmod(P("%s", "sb4/secret"), 0);
	mkdir(P("%s", "sb4/closed"), 0);
	int as_root = geteuid() == 0;
	if (as_root)
		assert_int_equal(seteuid(65534), 0); /* root reads everything */
	struct gg_err err = {0};
	struct gg_freeze_opts o = {.source = P("%s", "sb4"), .output = P("%s", "u.sif")};
	int rc = gg_image_freeze(&o, NULL, NULL, &err);
	int warnings = 0;
	struct gg_image_callbacks cb = {.warn = warn_count, .ud = &warnings};
	struct gg_freeze_opts o2 = o;
	o2.skip_unreadable = 1;
	o2.output = P("%s", "u2.sif");
	struct gg_err err2 = {0};
	int rc2 = gg_image_freeze(&o2, &cb, NULL, &err2);
	if (as_root)
		assert_int_equal(seteuid(0), 0);
	assert_true(rc < 0);
	if (!strstr(err.msg, "closed") && !strstr(err.msg, "secret"))
		fail_msg("'%s' does not name the unreadable path", err.msg);
	assert_clean(tmpdir, "u.sif");
	assert_int_equal(rc2, 0);
	/* and one for the extended attributes left out where there is no /proc */
	assert_int_equal(warnings, 2 + !unit_fast(" proc_self_exe"));
	struct gg_sif *s;
	assert_int_equal(gg_sif_open(P("%s", "u2.sif"), &s, &err), 0);
	gg_sif_close(s);
	chmod(P("%s", "sb4/closed"), 0755);
}

/* ---- the same bytes ------------------------------------------------------------------ */

static void put_bytes(const char *path, const unsigned char *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

/* Random bytes (stored raw, untouched by deflate), random bytes that repeat (deflated),
 * and many small files of which most have a twin (the duplicate check reads fragment
 * blocks back): the image is the same whatever the number of compressor threads. */
static void test_reproducible_threads(void **state)
{
	(void)state;
	size_t n = 3 * 131072 + 1000;
	unsigned char *b = malloc(n);
	uint64_t x = 99;
	for (size_t i = 0; i < n; i++) { /* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)(x >> 32);
	}
	mkdir(P("%s", "mix"), 0755);
	put_bytes(P("%s", "mix/random.bin"), b, n);
	for (size_t o = 16384; o + 16384 <= n; o += 16384)
		memcpy(b + o, b, 16384);
	put_bytes(P("%s", "mix/repeats.bin"), b, n);
	free(b);
	char name[64], body[64];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "mix/small%03d", i);
		snprintf(body, sizeof body, "twin %d\n", i % 120);
		put(P("%s", name), body);
	}
	/* what the read-ahead threads (jobs > 1) hand over differently: a hard link, an
	 * empty file, a sparse one, one just over what it reads ahead */
	assert_int_equal(link(P("%s", "mix/small007"), P("%s", "mix/zz-link")), 0);
	put(P("%s", "mix/empty"), "");
	int sfd = open(P("%s", "mix/sparse"), O_WRONLY | O_CREAT, 0644);
	assert_true(sfd >= 0);
	assert_int_equal(pwrite(sfd, "tail", 4, 3 << 20), 4);
	close(sfd);
	unsigned char *big = calloc(1, 32769);
	memset(big, 'x', 32769);
	put_bytes(P("%s", "mix/just-over.txt"), big, 32769);
	free(big);
	struct gg_err err = {0};
	const char *outs[] = {"thr1.sif", "thr2.sif", "thr3.sif"};
	for (unsigned j = 1; j <= 3; j++) {
		struct gg_freeze_opts o = {.jobs = j};
		if (freeze(P("%s", "mix"), P("%s", outs[j - 1]), &o, &err) != 0)
			fail_msg("freeze: %s", err.msg);
	}
	assert_same_file(P("%s", "thr1.sif"), P("%s", "thr2.sif"), 1);
	assert_same_file(P("%s", "thr1.sif"), P("%s", "thr3.sif"), 1);
	struct stat st;
	assert_int_equal(stat(P("%s", "thr1.sif"), &st), 0);
	/* the random file whole, the repeating one much smaller */
	assert_true((size_t)st.st_size > n && (size_t)st.st_size < n + n / 2);
}

/* ---- memory ------------------------------------------------------------------------ */

/* n files of distinct small contents in 100 directories */
/* Small files are fed grouped by extension, tree order within a group: two near-twin
 * sources in different directories, 46 KiB apart in tree order (beyond deflate's 32
 * KiB window), become neighbours in the fragment block and the second costs almost
 * nothing. In tree order the image would hold both whole. */
static void test_grouped_by_extension(void **state)
{
	(void)state;
	size_t src = 16384, other = 30000;
	unsigned char *a = malloc(src), *b = malloc(other);
	uint64_t x = 7;
	for (size_t i = 0; i < src; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = (unsigned char)(x >> 56);
	}
	mkdir(P("%s", "grp"), 0755);
	mkdir(P("%s", "grp/d1"), 0755);
	mkdir(P("%s", "grp/d2"), 0755);
	put_bytes(P("%s", "grp/d1/x.py"), a, src);
	a[src - 1] ^= 1; /* not a duplicate */
	put_bytes(P("%s", "grp/d2/x.py"), a, src);
	const char *bins[] = {"grp/d1/y.bin", "grp/d2/y.bin"};
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < other; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			b[i] = (unsigned char)(x >> 56);
		}
		put_bytes(P("%s", bins[k]), b, other);
	}
	free(a);
	free(b);
	struct gg_err err = {0};
	if (freeze(P("%s", "grp"), P("%s", "grp.sif"), NULL, &err) != 0)
		fail_msg("freeze: %s", err.msg);
	struct stat st;
	assert_int_equal(stat(P("%s", "grp.sif"), &st), 0);
	/* random bytes: 2 * 30000 + 16384 at least; a second 16 KiB only in tree order.
	 * The rest (SIF header, tables, metadata objects) is well under 12 KiB */
	size_t floor = 2 * other + src + 32768;
	assert_true((size_t)st.st_size > floor);
	if ((size_t)st.st_size > floor + src - 4096)
		fail_msg("%zu bytes: the twin .py files were not fed side by side",
			 (size_t)st.st_size);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* A regular file at path in t, as a reader would have added it: its node. */
static struct gg_node *tree_file(struct gg_tree *t, const char *path)
{
	struct gg_entry e = {.path = path, .mode = S_IFREG | 0644};
	struct gg_inode *data;
	struct gg_err err = {0};
	assert_int_equal(gg_image_tree_apply(t, &e, 0, 0, &data, &err), 0);
	return gg_image_tree_lookup(t, path);
}

/* The read-ahead threads hand files over in order with their first bytes and the size of
 * their attribute list, a failed open as its errno; the descriptors given back are closed
 * by them, and stopped early, they close what they opened. */
static void test_read_ahead(void **state)
{
	(void)state;
	mkdir(P("%s", "ra"), 0755);
	struct gg_tree *t = gg_image_tree_new();
	struct gg_node *nodes[80];
	char name[32], body[32];
	for (int i = 0; i < 80; i++) {
		snprintf(name, sizeof name, "ra/f%02d", i);
		snprintf(body, sizeof body, "body %d", i);
		if (i != 5) /* f05 is in the tree but not on disk */
			put(P("%s", name), body);
		if (i == 7) /* where the file system has them (tmpfs may not) */
			setxattr(P("%s", name), "user.k", "v", 1, 0);
		nodes[i] = tree_file(t, name + 3);
	}
	int root = open(P("%s", "ra"), O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	int before = open_fds();
	struct gg_ahead *a = gg_image_ahead_start(root, 0, nodes, 80);
	assert_non_null(a);
	for (int i = 0; i < 40; i++) {
		struct gg_ahead_file *f = gg_image_ahead_get(a, (size_t)i);
		snprintf(name, sizeof name, "f%02d", i);
		assert_string_equal(f->rel, name);
		if (i == 5) {
			assert_int_equal(f->fd, -1);
			assert_int_equal(f->err_no, ENOENT);
		} else {
			snprintf(body, sizeof body, "body %d", i);
			assert_true(f->fd >= 0 && f->st_ok);
			assert_int_equal(f->len, strlen(body));
			assert_memory_equal(f->data, body, f->len);
			char l[64];
			if (unit_fast(" linux_xattr")) {
				assert_int_equal(f->xattrs, flistxattr(f->fd, l, sizeof l));
				assert_true(i == 7 || f->xattrs == 0);
			} else { /* none read where the build has no xattr calls */
				assert_int_equal(f->xattrs, -1);
			}
		}
		gg_image_ahead_done(a, f);
		/* what the threads still hold: at most their slots' descriptors */
		assert_true(open_fds() <= before + (int)gg_image_ahead_slots(a));
	}
	gg_image_ahead_stop(a); /* the files opened ahead are closed */
	assert_int_equal(open_fds(), before);
	close(root);
	gg_image_tree_free(t);
}

/* n files dir/f000... holding "body of I", in a tree *t of their own; the descriptor
 * of dir. */
static int ahead_files(const char *dir, int n, struct gg_tree **t, struct gg_node **nodes)
{
	mkdir(P("%s", dir), 0755);
	*t = gg_image_tree_new();
	assert_non_null(*t);
	char name[64], body[32];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "%s/f%03d", dir, i);
		snprintf(body, sizeof body, "body of %d", i);
		put(P("%s", name), body);
		nodes[i] = tree_file(*t, name + strlen(dir) + 1);
	}
	int root = open(P("%s", dir), O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	return root;
}

/* File i of ahead_files as the threads hand it over: opened, checked, its body read. */
static void check_ahead_file(const struct gg_ahead_file *f, int i)
{
	char name[32], body[32];
	snprintf(name, sizeof name, "f%03d", i);
	snprintf(body, sizeof body, "body of %d", i);
	assert_string_equal(f->rel, name);
	assert_true(f->fd >= 0 && f->st_ok);
	assert_int_equal(f->len, strlen(body));
	assert_memory_equal(f->data, body, f->len);
}

/* Handed over to the end, many times round the slots: every file in its turn with its
 * own bytes, whichever side has to wait for the other. */
static void test_read_ahead_all(void **state)
{
	(void)state;
	enum { N = 700 };
	struct gg_tree *t;
	struct gg_node **nodes = calloc(N, sizeof *nodes);
	assert_non_null(nodes);
	int root = ahead_files("rb", N, &t, nodes);
	int before = open_fds();
	struct gg_ahead *a = gg_image_ahead_start(root, 0, nodes, N);
	assert_non_null(a);
	for (int i = 0; i < N; i++) {
		struct gg_ahead_file *f = gg_image_ahead_get(a, (size_t)i);
		check_ahead_file(f, i);
		if (i % 97 == 0) /* the reader lags: the threads fill every slot and wait */
			for (int k = 0; k < 2000; k++)
				assert_int_equal(access(P("rb/%s", f->rel), F_OK), 0);
		gg_image_ahead_done(a, f);
	}
	gg_image_ahead_stop(a);
	assert_int_equal(open_fds(), before);
	close(root);
	free(nodes);
	gg_image_tree_free(t);
}

/* As many slots as the soft limit on open files leaves room for (64 descriptors kept for
 * the rest), up to 128; none when fewer than 8 would be left, and then no read-ahead: the
 * reader opens each file itself. Under a lowered limit the threads hand every file over
 * and never hold more descriptors than their slots. */
static void test_read_ahead_limit(void **state)
{
	(void)state;
	assert_int_equal(gg_image_ahead_slots_for(UINT64_MAX), 128);
	assert_int_equal(gg_image_ahead_slots_for(1024), 128);
	assert_int_equal(gg_image_ahead_slots_for(192), 128);
	assert_int_equal(gg_image_ahead_slots_for(191), 124);
	assert_int_equal(gg_image_ahead_slots_for(100), 36);
	assert_int_equal(gg_image_ahead_slots_for(72), 8);
	assert_int_equal(gg_image_ahead_slots_for(71), 0);
	assert_int_equal(gg_image_ahead_slots_for(0), 0);

	enum { N = 300 };
	struct gg_tree *t;
	struct gg_node *nodes[N];
	int root = ahead_files("rl", N, &t, nodes);
	int before = open_fds();
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 100) {
		close(root);
		gg_image_tree_free(t);
		skip();
	}
	low = old;
	low.rlim_cur = 100;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	struct gg_ahead *a = gg_image_ahead_start(root, 0, nodes, N);
	assert_non_null(a);
	assert_int_equal(gg_image_ahead_slots(a), 36);
	for (int i = 0; i < N; i++) {
		struct gg_ahead_file *f = gg_image_ahead_get(a, (size_t)i);
		check_ahead_file(f, i);
		gg_image_ahead_done(a, f);
		assert_true(open_fds() <= before + 36);
	}
	gg_image_ahead_stop(a);
	assert_int_equal(open_fds(), before);
	low.rlim_cur = 71;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_null(gg_image_ahead_start(root, 0, nodes, N));
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	close(root);
	gg_image_tree_free(t);
}

/* 1 when the first page of path is out of the page cache (after fsync and
 * POSIX_FADV_DONTNEED); 0 where pages cannot be dropped (tmpfs). */
static int drop_cached(const char *path)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	unsigned char vec = 1;
	assert_int_equal(mincore(m, 4096, &vec), 0);
	munmap(m, 4096);
	close(fd);
	return !(vec & 1);
}

/* Whether reads that do not wait for the disk work on the file system of path (a file
 * of its own, dropped from the page cache): 1 when such a read says EAGAIN, 0 when the
 * file system does not do them (overlayfs, as in fresh-check's container: EOPNOTSUPP),
 * -1 when it cannot tell (the page was back). */
static int nowait_works(const char *path)
{
	if (!unit_fast(" rwf_nowait")) /* a build without them (compat.h) */
		return 0;
	put(path, "probe");
	if (!drop_cached(path))
		return -1;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	char b[8];
	struct iovec iov = {b, sizeof b};
	ssize_t got = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
	int e = errno;
	close(fd);
	if (got < 0 && e == EAGAIN)
		return 1;
	return got < 0 && (e == EOPNOTSUPP || e == EINVAL) ? 0 : -1;
}

/* Files not in the page cache: a thread leaves the disk reading a file's first bytes
 * while it opens its next ones, and still hands every file over in its turn with its
 * own bytes: all files uncached, with the default slots and with 4 a thread (at most 3
 * pending); then every 7th (a pending file must be finished before its thread comes
 * round to its slot again, however few others are pending). Where the file system does
 * not do reads without waiting, the threads read as before: none pending, all handed
 * over. */
static void test_read_ahead_uncached(void **state)
{
	(void)state;
	enum { N = 400 };
	struct gg_tree *t;
	struct gg_node *nodes[N];
	int root = ahead_files("ru", N, &t, nodes);
	int nowait = nowait_works(P("%s", "ru-probe"));
	int before = open_fds();
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	for (int round = 0; round < 3; round++) {
		int dropped = 0, every = round == 2 ? 7 : 1;
		char name[32];
		for (int i = 0; i < N; i += every) {
			snprintf(name, sizeof name, "ru/f%03d", i);
			dropped += drop_cached(P("%s", name));
		}
		if (round == 1) { /* 80 - 64 = 16 slots, 4 a thread */
			low = old;
			low.rlim_cur = 80;
			if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 80)
				continue;
			assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
		}
		struct gg_ahead *a = gg_image_ahead_start(root, 0, nodes, N);
		assert_non_null(a);
		/* 128 under any soft limit of 192 or more */
		size_t slots = round == 1 ? 16 : gg_image_ahead_slots_for((uint64_t)old.rlim_cur);
		assert_int_equal(gg_image_ahead_slots(a), slots);
		for (int i = 0; i < N; i++) {
			struct gg_ahead_file *f = gg_image_ahead_get(a, (size_t)i);
			check_ahead_file(f, i);
			if (i % 97 == 0) /* the reader lags: the threads go round their slots */
				for (int k = 0; k < 2000; k++)
					assert_int_equal(access(P("ru/%s", f->rel), F_OK), 0);
			gg_image_ahead_done(a, f);
		}
		/* the pages were gone for all but a few (another process may read them) */
		if (nowait == 1 && dropped > N / every / 2)
			assert_true(gg_image_ahead_waited(a) > 0);
		if (nowait == 0)
			assert_int_equal(gg_image_ahead_waited(a), 0);
		gg_image_ahead_stop(a);
		assert_int_equal(open_fds(), before);
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	}
	close(root);
	gg_image_tree_free(t);
}

/* The stat pool gives for every name what fstatat gives (a symbolic link itself, a
 * missing name's errno), batch after batch. */
static void test_stat_pool(void **state)
{
	(void)state;
	mkdir(P("%s", "sp"), 0755);
	enum { N = 43 };
	char *names[N];
	for (int i = 0; i < N; i++) {
		char nm[32];
		snprintf(nm, sizeof nm, "n%02d", i);
		names[i] = strdup(nm);
		if (i == 0)
			assert_int_equal(symlink("n01", P("sp/%s", nm)), 0);
		else if (i == 1)
			mkdir(P("sp/%s", nm), 0700);
		else if (i != 7) /* n07 is missing */
			put(P("sp/%s", nm), nm + i % 3);
	}
	int dfd = open(P("%s", "sp"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	struct gg_statpool *sp = gg_image_statpool_start();
	assert_non_null(sp);
	struct gg_stat_result res[N];
	size_t sizes[] = {N, 5, 0, N};
	for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++) {
		memset(res, 0xAB, sizeof res);
		gg_image_statpool_run(sp, dfd, names, sizes[b], res);
		for (size_t i = 0; i < sizes[b]; i++) {
			struct stat st;
			int e = fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
			assert_int_equal(res[i].err, e);
			if (e)
				continue;
			assert_int_equal(res[i].st.st_ino, st.st_ino);
			assert_int_equal(res[i].st.st_mode, st.st_mode);
			assert_int_equal(res[i].st.st_size, st.st_size);
		}
		if (sizes[b] > 7)
			assert_int_equal(res[7].err, ENOENT);
		if (sizes[b])
			assert_true(S_ISLNK(res[0].st.st_mode));
	}
	gg_image_statpool_stop(sp);
	gg_image_statpool_stop(NULL);
	close(dfd);
	for (int i = 0; i < N; i++)
		free(names[i]);
}

/* Two listings of the same directory are the same: names in order, stats. */
static void same_listing(const struct gg_dir_listing *a, const struct gg_dir_listing *b)
{
	assert_int_equal(a->open_err, b->open_err);
	assert_int_equal(a->read_err, b->read_err);
	assert_int_equal(a->st.st_ino, b->st.st_ino);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_string_equal(a->names[i], b->names[i]);
		assert_non_null(a->res);
		assert_non_null(b->res);
		assert_int_equal(a->res[i].err, b->res[i].err);
		assert_int_equal(a->res[i].st.st_ino, b->res[i].st.st_ino);
		assert_int_equal(a->res[i].st.st_mode, b->res[i].st.st_mode);
	}
}

/* ---- copies of files (dup.c) ------------------------------------------------------- */

#define COPY_SIZE (300u << 10)

/* COPY_SIZE bytes of text-like data: the same for the same seed. */
static unsigned char *copy_body(unsigned seed)
{
	unsigned char *b = malloc(COPY_SIZE);
	assert_non_null(b);
	uint64_t x = seed;
	for (size_t i = 0; i < COPY_SIZE; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (unsigned char)('a' + (x >> 60));
	}
	return b;
}

/* Ask dups about the file name (in t, under root): the inode it copies, or NULL. */
static struct gg_inode *copy_of(struct gg_dups *d, struct gg_feed *fz, int root,
				struct gg_node *node, const char *name)
{
	int fd = openat(root, name, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	struct gg_dup_file f = {node, fd, &st, root, gg_image_openat2_works(root)};
	struct gg_inode *same = (struct gg_inode *)1;
	struct gg_err err = {0};
	assert_int_equal(gg_image_dups_find(d, &f, fz, &same, &err), 0);
	close(fd);
	return same;
}

/* Equal bytes make a copy of the first file fed; one byte off anywhere (the middle: the
 * first and last 4 KiB agree) does not; sizes no two files have, files under the block
 * size and sparse files are never compared; a file changed since it was fed is not
 * used; at most two files of one size are compared with. */
static void test_copies(void **state)
{
	(void)state;
	mkdir(P("%s", "cp"), 0755);
	unsigned char *b = copy_body(1);
	const char *same[] = {"a", "b", "g"},
		   *names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "s1", "s2", "t1", "t2"};
	for (int k = 0; k < 3; k++)
		put_bytes(P("cp/%s", same[k]), b, COPY_SIZE);
	b[COPY_SIZE / 2] ^= 1;
	put_bytes(P("%s", "cp/c"), b, COPY_SIZE); /* the middle differs */
	b[COPY_SIZE / 2] ^= 1;
	b[0] ^= 1;
	put_bytes(P("%s", "cp/d"), b, COPY_SIZE); /* the first byte differs */
	b[0] ^= 1;
	put_bytes(P("%s", "cp/e"), b, COPY_SIZE - 1); /* a size of its own */
	put_bytes(P("%s", "cp/t1"), b, 4096);         /* under the block size */
	put_bytes(P("%s", "cp/t2"), b, 4096);
	for (int k = 0; k < 2; k++) { /* equal, but sparse */
		int fd = open(P("cp/%s", k ? "s2" : "s1"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_int_equal(pwrite(fd, "z", 1, 2u << 20), 1);
		close(fd);
	}
	unsigned char *other = copy_body(2);
	put_bytes(P("%s", "cp/f"), other, COPY_SIZE); /* a rep changed after it was fed */
	put_bytes(P("%s", "cp/h"), b, COPY_SIZE);
	struct gg_tree *t = gg_image_tree_new();
	struct gg_node *nodes[12];
	for (int k = 0; k < 12; k++) {
		nodes[k] = tree_file(t, names[k]);
		struct stat st;
		assert_int_equal(stat(P("cp/%s", names[k]), &st), 0);
		nodes[k]->inode->size = (uint64_t)st.st_size; /* as the scan sets them */
		nodes[k]->inode->src_dev = (uint64_t)st.st_dev;
		nodes[k]->inode->src_ino = (uint64_t)st.st_ino;
	}
	struct gg_dups *d = gg_image_dups_new(nodes, 12, 128 << 10);
	assert_non_null(d);
	struct gg_feed *fz = gg_image_feed_new(NULL, 0);
	int root = open(P("%s", "cp"), O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	assert_null(copy_of(d, fz, root, nodes[0], "a"));                       /* first: kept */
	assert_ptr_equal(copy_of(d, fz, root, nodes[1], "b"), nodes[0]->inode); /* a copy */
	assert_null(copy_of(d, fz, root, nodes[2], "c")); /* second of the size: kept */
	assert_null(copy_of(d, fz, root, nodes[3], "d")); /* compared with a and c */
	assert_null(copy_of(d, fz, root, nodes[4], "e"));
	assert_null(copy_of(d, fz, root, nodes[8], "s1"));
	assert_null(copy_of(d, fz, root, nodes[9], "s2"));
	assert_null(copy_of(d, fz, root, nodes[10], "t1"));
	assert_null(copy_of(d, fz, root, nodes[11], "t2"));
	gg_image_dups_free(d);

	/* f is fed, then made equal to h: h is not a copy of f (f's image holds what f held
	 * when fed, not what it holds now), so h is the second file of that size kept, and
	 * a copies h. */
	d = gg_image_dups_new(nodes, 12, 128 << 10);
	assert_null(copy_of(d, fz, root, nodes[5], "f"));
	put_bytes(P("%s", "cp/f"), b, COPY_SIZE);
	struct timespec ts[2] = {{1000, 0}, {1000, 0}}; /* a new mtime, whatever the clock */
	assert_int_equal(utimensat(root, "f", ts, 0), 0);
	assert_null(copy_of(d, fz, root, nodes[7], "h"));
	assert_ptr_equal(copy_of(d, fz, root, nodes[0], "a"), nodes[7]->inode);
	gg_image_dups_free(d);
	gg_image_dups_free(NULL);
	close(root);
	gg_image_feed_free(fz);
	gg_image_tree_free(t);
	free(b);
	free(other);
}

/* A freeze stores copies once without compressing them again: the image verifies, it
 * counts them, and their bytes are the original's (unsquashfs in t-freeze.sh). */
static void test_copies_freeze(void **state)
{
	(void)state;
	mkdir(P("%s", "cpf"), 0755);
	mkdir(P("%s", "cpf/x"), 0755);
	mkdir(P("%s", "cpf/y"), 0755);
	unsigned char *b = copy_body(3);
	put_bytes(P("%s", "cpf/x/lib.so"), b, COPY_SIZE);
	put_bytes(P("%s", "cpf/y/lib.so"), b, COPY_SIZE);
	put_bytes(P("%s", "cpf/y/data"), b, COPY_SIZE);
	assert_int_equal(link(P("%s", "cpf/x/lib.so"), P("%s", "cpf/x/hard.so")), 0);
	free(b);
	struct gg_freeze_opts o = {
		.source = P("%s", "cpf"), .output = P("%s", "cpf.sif"), .jobs = 2};
	struct gg_freeze_result res;
	struct gg_err err = {0};
	if (gg_image_freeze(&o, NULL, &res, &err) != 0)
		fail_msg("freeze: %s", err.msg);
	assert_int_equal(res.duplicates, 2);
	assert_int_equal(res.hardlinks, 1);
	struct gg_sif_verify_report rep;
	assert_int_equal(gg_sif_verify(P("%s", "cpf.sif"), &rep, &err), 0);
}

/* The read-ahead threads read the directories wanted (the slots' worth of them, the
 * latest call's first), and hand over listings equal to the scan's own reads of them, a
 * missing directory's failure included; one not wanted, or past the slots, is the
 * scan's to read (take gives 0); what is never taken is freed at stop (valgrind). */
static void test_dir_read_ahead(void **state)
{
	(void)state;
	enum { N = 24 };
	mkdir(P("%s", "da"), 0755);
	struct gg_tree *t = gg_image_tree_new();
	assert_non_null(t);
	struct gg_node *dirs[N];
	for (int d = 0; d < N; d++) {
		char nm[16];
		snprintf(nm, sizeof nm, "d%02d", d);
		if (d != 5) { /* d05 is missing */
			mkdir(P("da/%s", nm), 0755);
			for (int f = 0; f < d % 7; f++) {
				char fn[32];
				snprintf(fn, sizeof fn, "da/%s/f%d", nm, 6 - f);
				put(P("%s", fn), fn);
			}
			assert_int_equal(symlink("f1", P("da/%s/link", nm)), 0);
		}
		dirs[d] = gg_image_node_add(t, t->root, nm, strlen(nm), gg_image_inode_new(t));
		assert_non_null(dirs[d]);
	}
	int rootfd = open(P("%s", "da"), O_RDONLY | O_DIRECTORY);
	assert_true(rootfd >= 0);
	int o2 = gg_image_openat2_works(rootfd);
	struct gg_dirahead *a = gg_image_dirahead_start(rootfd, o2);
	assert_non_null(a);
	gg_image_dirahead_want(a, dirs + 8, 4); /* read, but not first */
	gg_image_dirahead_want(a, dirs, N);     /* 16 slots: d00 .. d15 */
	gg_image_dirahead_drain(a);
	struct gg_dir_listing got, own;
	assert_int_equal(gg_image_dirahead_take(a, t->root, &got), 0); /* never wanted */
	for (int d = 0; d < N; d++) {
		if (d == 20)
			continue; /* left to stop */
		int taken = gg_image_dirahead_take(a, dirs[d], &got);
		assert_int_equal(taken, d < 16);
		assert_int_equal(gg_image_dirahead_take(a, dirs[d], &own), 0); /* once */
		char *rel = gg_image_node_path(dirs[d]);
		gg_image_dir_read(rootfd, rel, o2, NULL, &own);
		free(rel);
		if (taken) {
			same_listing(&got, &own);
			gg_image_dir_listing_free(&got);
		}
		assert_int_equal(own.open_err, d == 5 ? ENOENT : 0);
		assert_int_equal(own.n, d == 5 ? 0 : (size_t)(d % 7) + 1);
		if (own.n > 1)
			assert_string_equal(own.names[own.n - 1], "link");
		gg_image_dir_listing_free(&own);
	}
	gg_image_dirahead_want(a, dirs + 16, 8); /* d16 .. d23: d20 never taken */
	gg_image_dirahead_drain(a);
	assert_int_equal(gg_image_dirahead_stop(a), 16);
	assert_int_equal(gg_image_dirahead_stop(NULL), 0);
	close(rootfd);
	gg_image_tree_free(t);
}

static void make_many(const char *root, int n)
{
	char p[512], body[64];
	mkdir(root, 0755);
	for (int d = 0; d < 100; d++) {
		snprintf(p, sizeof p, "%s/d%02d", root, d);
		mkdir(p, 0755);
	}
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/d%02d/file-number-%06d.txt", root, i % 100, i);
		snprintf(body, sizeof body, "entry %d of a sandbox of many small files\n", i);
		put(p, body);
	}
}

/* Heap in use, as the allocator counts it: every arena, and the blocks it maps. */
static size_t heap_now(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

struct heap {
	size_t peak; /* the most seen */
	size_t done; /* at the last progress call: the writer is freed, the tree not yet */
};

static void sample_heap(void *ud, const struct gg_image_progress *p)
{
	struct heap *h = ud;
	size_t now = heap_now();
	if (now > h->peak)
		h->peak = now;
	if (p->phase == GG_IMAGE_PHASE_DONE)
		h->done = now;
}

/* The heap of a freeze of the tree at src above what was in use before it: sampled at
 * each progress call, which comes at every phase change (the start of the tables is
 * where the most is held: the tree, every file's inode, the duplicate index, the
 * blocks in flight) and ten times a second. */
static struct heap freeze_heap(const char *src, const char *out)
{
	size_t base = heap_now();
	struct heap h = {base, 0};
	struct gg_image_callbacks cb = {.progress = sample_heap, .ud = &h};
	struct gg_freeze_opts o = {.source = src, .output = out, .jobs = 2};
	struct gg_err err = {0};
	assert_int_equal(gg_image_freeze(&o, &cb, NULL, &err), 0);
	unlink(out);
	assert_true(h.done > base); /* the sampling saw the freeze */
	return (struct heap){h.peak - base, h.done - base};
}

/* The memory budget gg_image_freeze states, for up to 2 compressor threads: 128 data
 * blocks of 128 KiB in flight, 6 MiB of the image on its way to the disk (direct.c),
 * 8 MiB for the threads and the rest, and 512 bytes per entry (names up to 32 bytes). How many
 * blocks are in flight at once depends on how the threads are scheduled, so the tree is also
 * checked apart, once the writer is gone (at the last progress call), for a cost per entry that
 * timing cannot blur. */
static void test_memory_budget(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	skip(); /* ASan's allocator keeps no glibc statistics */
#endif
	if (heap_now() == 0)
		skip(); /* an allocator without them (valgrind's) */
	make_many(P("%s", "many1"), 1000);
	make_many(P("%s", "many2"), 21000);
	struct heap a = freeze_heap(P("%s", "many1"), P("%s", "m.sif"));
	struct heap b = freeze_heap(P("%s", "many2"), P("%s", "m.sif"));
	/* the tree: measured 266 bytes per entry */
	if (b.done < a.done || (b.done - a.done) / 20000 > 300)
		fail_msg("the tree takes %zu bytes per entry (at most 300)",
			 (b.done - a.done) / 20000);
	/* in all: measured 35.5 - 41.0 MB (by the blocks in flight), 42.8 MB allowed */
	size_t budget = (size_t)128 * (128 * 1024 + 4096) + ((size_t)6 << 20) + ((size_t)8 << 20) +
			21101 * 512;
	if (b.peak > budget)
		fail_msg("%zu bytes at the peak (budget %zu)", b.peak, budget);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_reproducible),
		cmocka_unit_test(test_output_handling),
		cmocka_unit_test(test_temp_name_taken),
		cmocka_unit_test(test_source_end),
		cmocka_unit_test(test_tar),
		cmocka_unit_test(test_tar_bounds),
		cmocka_unit_test(test_tar_endless),
		cmocka_unit_test(test_tar_sparse_bound),
		cmocka_unit_test(test_too_many_ids),
		cmocka_unit_test(test_oci),
		cmocka_unit_test(test_oci_digests),
		cmocka_unit_test(test_sandbox_race),
		cmocka_unit_test(test_open_beneath),
		cmocka_unit_test(test_sandbox_deep),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_fifo_interrupted),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_reproducible_threads),
		cmocka_unit_test(test_grouped_by_extension),
		cmocka_unit_test(test_dir_read_ahead),
		cmocka_unit_test(test_copies),
		cmocka_unit_test(test_copies_freeze),
		cmocka_unit_test(test_read_ahead),
		cmocka_unit_test(test_read_ahead_all),
		cmocka_unit_test(test_read_ahead_limit),
		cmocka_unit_test(test_read_ahead_uncached),
		cmocka_unit_test(test_stat_pool),
		cmocka_unit_test(test_memory_budget),
	};
	return cmocka_run_group_tests_name("image_freeze", tests, setup_tmp, teardown_tmp);
}
