/* The compat layer (lib/compat/compat.h): each call does what its fast path does in
 * this build (configure's GG_HAVE_X, seen here through COMPAT_DEFS), and its POSIX
 * fallback in a --disable-linux-fastpaths build (make portable-check runs these tests
 * there too). */
#include "unit.h"
#include "compat/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

UNIT_TMPDIR("gg-compat")

static void path_in(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void file_with(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void assert_file(const char *path, const char *text)
{
	char buf[64] = {0};
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	assert_int_equal(n, strlen(text));
	assert_string_equal(buf, text);
}

static int has_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);
	return fl >= 0 && (fl & FD_CLOEXEC);
}

static int has_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

static void test_fastpaths_as_configured(void **state)
{
	(void)state;
	const char *f = gg_compat_fastpaths();
#if GG_HAVE_O_TMPFILE
	assert_non_null(strstr(f, " o_tmpfile"));
#else
	assert_null(strstr(f, "o_tmpfile"));
#endif
#if GG_HAVE_PIPE2
	assert_non_null(strstr(f, " pipe2"));
#else
	assert_null(strstr(f, "pipe2"));
#endif
	print_message("compat fast paths:%s\n", *f ? f : " none (POSIX fallbacks)");
}

static void test_tmpfile_named_once_linked(void **state)
{
	(void)state;
	char p[128], q[128];
	path_in(p, sizeof p, "unnamed");
	int fd = gg_compat_tmpfile(tmpdir, 0);
#if GG_HAVE_O_TMPFILE
	assert_true(fd >= 0);
	assert_true(has_cloexec(fd));
	assert_int_equal(write(fd, "hello", 5), 5);
	assert_int_equal(gg_compat_tmpfile_link(fd, p), 0);
	assert_file(p, "hello");
	path_in(q, sizeof q, "unnamed");
	assert_int_equal(gg_compat_tmpfile_link(fd, q), -1);
	assert_int_equal(errno, EEXIST);
	close(fd);
	unlink(p);
#else
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(gg_compat_tmpfile_link(0, p), -1);
	assert_int_equal(access(p, F_OK), -1);
	(void)q;
#endif
}

static void test_scratch_has_no_name(void **state)
{
	(void)state;
	char sub[128];
	path_in(sub, sizeof sub, "scratch");
	assert_int_equal(mkdir(sub, 0700), 0);
	int fd = gg_compat_scratch(sub);
	assert_true(fd >= 0);
	assert_true(has_cloexec(fd));
	assert_int_equal(pwrite(fd, "spool", 5, 0), 5);
	char buf[5];
	assert_int_equal(pread(fd, buf, 5, 0), 5);
	assert_memory_equal(buf, "spool", 5);
	close(fd);
	assert_int_equal(rmdir(sub), 0); /* nothing was left in it */
	assert_int_equal(gg_compat_scratch("/nonexistent-dir"), -1);
}

static void test_mkstemp_cloexec(void **state)
{
	(void)state;
	char t[128];
	path_in(t, sizeof t, "tmp.XXXXXX");
	int fd = gg_compat_mkstemp(t);
	assert_true(fd >= 0);
	assert_true(has_cloexec(fd));
	assert_null(strstr(t, "XXXXXX"));
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(fd);
	assert_int_equal(unlink(t), 0);
}

static void test_rename_noreplace(void **state)
{
	(void)state;
	char a[128], b[128];
	path_in(a, sizeof a, "from");
	path_in(b, sizeof b, "to");
	file_with(a, "new");
	file_with(b, "old");
	assert_int_equal(gg_compat_rename_noreplace(a, b), -1);
	assert_int_equal(errno, EEXIST);
	assert_file(b, "old"); /* neither replaced */
	assert_file(a, "new");
	assert_int_equal(unlink(b), 0);
	assert_int_equal(gg_compat_rename_noreplace(a, b), 0);
	assert_file(b, "new");
	assert_int_equal(access(a, F_OK), -1); /* moved, not copied */
	unlink(b);
}

static void test_syncfs(void **state)
{
	(void)state;
	int fd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	int r = gg_compat_syncfs(fd);
#if GG_HAVE_SYNCFS
	assert_int_equal(r, 0);
#else
	assert_int_equal(r, -1);
	assert_int_equal(errno, EOPNOTSUPP);
#endif
	close(fd);
}

static void test_open_flags(void **state)
{
	(void)state;
	char d[128], f[128];
	path_in(d, sizeof d, "dir");
	path_in(f, sizeof f, "dir/file");
	assert_int_equal(mkdir(d, 0700), 0);
	file_with(f, "x");
	/* a directory opened only to walk beneath it */
	int dfd = open(d, gg_compat_o_path() | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	int fd = openat(dfd, "file", O_RDONLY | gg_compat_o_noatime());
	assert_true(fd >= 0);
	char c = 0;
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'x');
	close(fd);
	close(dfd);
#if !GG_HAVE_O_PATH
	assert_int_equal(gg_compat_o_path(), O_RDONLY);
#endif
#if !GG_HAVE_O_NOATIME
	assert_int_equal(gg_compat_o_noatime(), 0);
#endif
	unlink(f);
	rmdir(d);
}

static void test_direct_reserve_writeback(void **state)
{
	(void)state;
	char p[128];
	path_in(p, sizeof p, "image");
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	int dfd = gg_compat_open_direct(fd);
#if GG_HAVE_O_DIRECT
	/* a file system without O_DIRECT (an older tmpfs) refuses it with EINVAL */
	assert_true(dfd >= 0 || errno == EINVAL);
	if (dfd >= 0) {
		assert_true(has_cloexec(dfd));
		close(dfd);
	}
#else
	assert_int_equal(dfd, -1);
	assert_int_equal(errno, EOPNOTSUPP);
#endif
	int r = gg_compat_reserve(fd, 0, 65536);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
#if GG_HAVE_FALLOCATE
	if (r == 0)
		assert_int_equal(st.st_size, 65536);
	else
		assert_true(errno == EOPNOTSUPP);
#else
	assert_int_equal(r, -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(gg_compat_reserve_useful(fd), 0);
#endif
	assert_int_equal(pwrite(fd, "abc", 3, 0), 3);
	assert_int_equal(gg_compat_writeback(fd, 0, 3), 0);
	char buf[3];
	ssize_t n = gg_compat_pread_nowait(fd, buf, 3, 0);
#if GG_HAVE_RWF_NOWAIT
	/* just written: in the page cache (EAGAIN only where it was dropped) */
	assert_true(n == 3 || (n < 0 && (errno == EAGAIN || errno == EOPNOTSUPP)));
	if (n == 3)
		assert_memory_equal(buf, "abc", 3);
#else
	assert_int_equal(n, -1);
	assert_int_equal(errno, EOPNOTSUPP);
#endif
	close(fd);
	unlink(p);
}

static void test_self_exe(void **state)
{
	(void)state;
	char buf[4096];
	char *p = gg_compat_self_exe(buf, sizeof buf);
#if GG_HAVE_PROC_SELF_EXE
	assert_non_null(p);
	const char *slash = strrchr(p, '/');
	assert_non_null(slash);
	assert_string_equal(slash + 1, "test_compat");
#else
	assert_null(p);
#endif
	assert_null(gg_compat_self_exe(buf, 1));
}

static void test_pipe_cloexec(void **state)
{
	(void)state;
	for (int nb = 0; nb < 2; nb++) {
		int p[2];
		assert_int_equal(gg_compat_pipe(p, nb), 0);
		assert_true(has_cloexec(p[0]) && has_cloexec(p[1]));
		assert_int_equal(has_nonblock(p[0]), nb);
		assert_int_equal(has_nonblock(p[1]), nb);
		assert_int_equal(write(p[1], "z", 1), 1);
		char c;
		assert_int_equal(read(p[0], &c, 1), 1);
		assert_int_equal(c, 'z');
		if (nb) {
			assert_int_equal(read(p[0], &c, 1), -1);
			assert_int_equal(errno, EAGAIN);
		}
		close(p[0]);
		close(p[1]);
	}
}

/* splice moves a pipe's bytes to another where the build has it; elsewhere it says
 * EINVAL and moves nothing (the caller copies). The pipe size is a hint either way. */
static void test_splice(void **state)
{
	(void)state;
	int a[2], b[2];
	assert_int_equal(gg_compat_pipe(a, 0), 0);
	assert_int_equal(gg_compat_pipe(b, 0), 0);
	gg_compat_pipe_size(b[1], 1 << 20);
	assert_int_equal(write(a[1], "spliced", 7), 7);
	ssize_t n = gg_compat_splice(a[0], b[1], 1 << 20);
	char buf[16] = {0};
	if (unit_fast("splice")) {
		assert_int_equal(n, 7);
		assert_int_equal(read(b[0], buf, sizeof buf), 7);
		assert_string_equal(buf, "spliced");
	} else {
		assert_int_equal(n, -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(read(a[0], buf, sizeof buf), 7); /* still there */
	}
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

static void test_sockets_cloexec_nosigpipe(void **state)
{
	(void)state;
	int fd = gg_compat_socket(AF_UNIX, SOCK_STREAM, 0, 1);
	assert_true(fd >= 0);
	assert_true(has_cloexec(fd) && has_nonblock(fd));
	close(fd);
	fd = gg_compat_socket(AF_UNIX, SOCK_STREAM, 0, 0);
	assert_true(has_cloexec(fd) && !has_nonblock(fd));
	close(fd);
	int sv[2];
	assert_int_equal(gg_compat_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true(has_cloexec(sv[0]) && has_cloexec(sv[1]));
	assert_int_equal(gg_compat_send(sv[0], "ab", 2), 2);
	char buf[2];
	assert_int_equal(read(sv[1], buf, 2), 2);
	/* a peer gone: EPIPE, and no SIGPIPE (its default action would end this test) */
	close(sv[1]);
	assert_int_equal(gg_compat_send(sv[0], "ab", 2), -1);
	assert_int_equal(errno, EPIPE);
	sigset_t pending;
	assert_int_equal(sigpending(&pending), 0);
	assert_false(sigismember(&pending, SIGPIPE));
	close(sv[0]);
}

static void test_random(void **state)
{
	(void)state;
	unsigned char a[32], b[32], big[1000], zero[1000] = {0};
	assert_int_equal(gg_compat_random(a, sizeof a), 0);
	assert_int_equal(gg_compat_random(b, sizeof b), 0);
	assert_memory_not_equal(a, b, sizeof a);
	/* more than getentropy's 256 bytes a call */
	memset(big, 0, sizeof big);
	assert_int_equal(gg_compat_random(big, sizeof big), 0);
	assert_memory_not_equal(big + 744, zero, 256);
	assert_int_equal(gg_compat_random(a, 0), 0);
}

static void test_ncpus(void **state)
{
	(void)state;
	unsigned n = gg_compat_ncpus();
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	assert_true(n >= 1);
	assert_true(online < 1 || n <= (unsigned)online);
}

static void test_no_dump(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* in a child: the test program keeps its own settings */
		if (gg_compat_no_dump() < 0)
			_exit(1);
#if GG_HAVE_PRCTL
		_exit(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : 2);
#else
		struct rlimit rl;
		_exit(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 0 ? 0 : 2);
#endif
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_pidfd_and_group(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* a group of its own; ends when the pipe is closed */
		setpgid(0, 0);
		char c;
		close(p[1]);
		_exit(read(p[0], &c, 1) < 0);
	}
	setpgid(pid, pid); /* whichever runs first */
	close(p[0]);
	int pfd = gg_compat_pidfd(pid);
#if GG_HAVE_PIDFD_OPEN
	assert_true(pfd >= 0 || errno == ENOSYS);
#else
	assert_int_equal(pfd, -1);
	assert_int_equal(errno, ENOSYS);
#endif
	assert_int_equal(gg_compat_group_runs(pid), 1);
	close(p[1]); /* the child ends, left a zombie until reaped */
	if (pfd >= 0) {
		struct pollfd w = {.fd = pfd, .events = POLLIN};
		assert_int_equal(poll(&w, 1, 10000), 1);
		close(pfd);
	}
#if GG_HAVE_PROC_SELF_EXE
	/* a zombie does not count (bounded: the child may take a moment to end) */
	int runs = 1;
	for (int i = 0; i < 1000 && runs; i++) {
		runs = gg_compat_group_runs(pid);
		if (runs)
			usleep(10000);
	}
	assert_int_equal(runs, 0);
#endif
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(gg_compat_group_runs(pid), 0);
}

static void *batch_thread(void *arg)
{
	*(int *)arg = gg_compat_sched_batch();
	return NULL;
}

static void test_sched_batch(void **state)
{
	(void)state;
	int r = -2;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, batch_thread, &r), 0);
	pthread_join(th, NULL);
	assert_int_equal(r, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fastpaths_as_configured),
		cmocka_unit_test(test_tmpfile_named_once_linked),
		cmocka_unit_test(test_scratch_has_no_name),
		cmocka_unit_test(test_mkstemp_cloexec),
		cmocka_unit_test(test_rename_noreplace),
		cmocka_unit_test(test_syncfs),
		cmocka_unit_test(test_open_flags),
		cmocka_unit_test(test_direct_reserve_writeback),
		cmocka_unit_test(test_self_exe),
		cmocka_unit_test(test_pipe_cloexec),
		cmocka_unit_test(test_splice),
		cmocka_unit_test(test_sockets_cloexec_nosigpipe),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_ncpus),
		cmocka_unit_test(test_no_dump),
		cmocka_unit_test(test_pidfd_and_group),
		cmocka_unit_test(test_sched_batch),
	};
	return cmocka_run_group_tests_name("compat", tests, setup_tmp, teardown_tmp);
}
