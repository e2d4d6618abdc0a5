/* The compat layer (compat.h): the Linux fast paths configure found (GG_HAVE_X), each
 * with its POSIX fallback. The one file of the library that may name a Linux-only
 * interface; it asks for the system's extensions itself, since the fallbacks use some
 * that POSIX 2008 lacks but every target has (getentropy, arc4random_buf). */
#define _GNU_SOURCE      1 /* glibc: the Linux calls, getentropy */
#define _DARWIN_C_SOURCE 1 /* macOS: getentropy, arc4random_buf, SO_NOSIGPIPE */
#include "compat/compat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#if GG_HAVE_PIDFD_OPEN || GG_HAVE_OPENAT2
#include <sys/syscall.h>
#endif
#if GG_HAVE_OPENAT2
#include <linux/openat2.h>
#endif
#if GG_HAVE_LINUX_XATTR
#include <sys/xattr.h>
#endif
#if GG_HAVE_MALLOC_USABLE_SIZE
#include <malloc.h>
#elif GG_HAVE_MALLOC_SIZE
#include <malloc/malloc.h>
#endif
#if GG_HAVE_GETRANDOM
#include <sys/random.h>
#endif
#if GG_HAVE_PRCTL
#include <sys/prctl.h>
#endif
#if GG_HAVE_SCHED_GETAFFINITY || GG_HAVE_SCHED_BATCH
#include <sched.h>
#endif
#if GG_HAVE_STATFS_MAGIC
#include <linux/magic.h>
#include <sys/vfs.h>
#endif
#if GG_HAVE_GETENTROPY && !GG_HAVE_GETRANDOM
#include <sys/random.h> /* macOS declares getentropy there; glibc in unistd.h too */
#endif

const char *gg_compat_fastpaths(void)
{
	return ""
#if GG_HAVE_O_TMPFILE
	       " o_tmpfile"
#endif
#if GG_HAVE_RENAMEAT2
	       " renameat2"
#endif
#if GG_HAVE_GETRANDOM
	       " getrandom"
#endif
#if GG_HAVE_SCHED_GETAFFINITY
	       " sched_getaffinity"
#endif
#if GG_HAVE_PRCTL
	       " prctl"
#endif
#if GG_HAVE_O_PATH
	       " o_path"
#endif
#if GG_HAVE_SPLICE
	       " splice"
#endif
#if GG_HAVE_PIPE2
	       " pipe2"
#endif
#if GG_HAVE_SOCK_CLOEXEC
	       " sock_cloexec"
#endif
#if GG_HAVE_MSG_NOSIGNAL
	       " msg_nosignal"
#endif
#if GG_HAVE_MKOSTEMP
	       " mkostemp"
#endif
#if GG_HAVE_SYNCFS
	       " syncfs"
#endif
#if GG_HAVE_O_NOATIME
	       " o_noatime"
#endif
#if GG_HAVE_O_DIRECT
	       " o_direct"
#endif
#if GG_HAVE_FALLOCATE
	       " fallocate"
#endif
#if GG_HAVE_STATFS_MAGIC
	       " statfs_magic"
#endif
#if GG_HAVE_SYNC_FILE_RANGE
	       " sync_file_range"
#endif
#if GG_HAVE_RWF_NOWAIT
	       " rwf_nowait"
#endif
#if GG_HAVE_PROC_SELF_EXE
	       " proc_self_exe"
#endif
#if GG_HAVE_SCHED_BATCH
	       " sched_batch"
#endif
#if GG_HAVE_PIDFD_OPEN
	       " pidfd_open"
#endif
#if GG_HAVE_OPENAT2
	       " openat2"
#endif
#if GG_HAVE_LINUX_XATTR
	       " linux_xattr"
#endif
#if GG_HAVE_GLIBC_HEAP
	       " glibc_heap"
#endif
#if GG_HAVE_MALLOC_USABLE_SIZE
	       " malloc_usable_size"
#endif
		;
}

#if !GG_HAVE_MKOSTEMP || !GG_HAVE_PIPE2 || !GG_HAVE_SOCK_CLOEXEC
static int cloexec(int fd, int nonblock)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -1;
	if (!nonblock)
		return 0;
	fl = fcntl(fd, F_GETFL);
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}
#endif

static int close_keep_errno(int fd)
{
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* ---- files ---------------------------------------------------------------------- */

int gg_compat_tmpfile(const char *dir, int rdwr)
{
#if GG_HAVE_O_TMPFILE
	return open(dir, O_TMPFILE | (rdwr ? O_RDWR : O_WRONLY) | O_CLOEXEC, 0600);
#else
	(void)dir, (void)rdwr;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int gg_compat_tmpfile_link(int fd, const char *path)
{
#if GG_HAVE_O_TMPFILE
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
#else
	(void)fd, (void)path;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int gg_compat_scratch(const char *dir)
{
	int fd = gg_compat_tmpfile(dir, 1);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd;
	/* no O_TMPFILE here (or on that file system): a name, removed at once */
	char tmpl[4096];
	int n = snprintf(tmpl, sizeof tmpl, "%s/.gridgpu-scratch.XXXXXX", dir);
	if (n < 0 || (size_t)n >= sizeof tmpl) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = gg_compat_mkstemp(tmpl);
	if (fd >= 0)
		unlink(tmpl);
	return fd;
}

int gg_compat_mkstemp(char *tmpl)
{
#if GG_HAVE_MKOSTEMP
	return mkostemp(tmpl, O_CLOEXEC);
#else
	int fd = mkstemp(tmpl);
	if (fd >= 0 && cloexec(fd, 0) < 0) {
		unlink(tmpl);
		return close_keep_errno(fd);
	}
	return fd;
#endif
}

int gg_compat_rename_noreplace(const char *from, const char *to)
{
#if GG_HAVE_RENAMEAT2
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
		/* a file system without RENAME_NOREPLACE: as below */
#endif
	if (link(from, to) < 0)
		return -1;
	unlink(from);
	return 0;
}

int gg_compat_syncfs(int fd)
{
#if GG_HAVE_SYNCFS
	return syncfs(fd);
#else
	(void)fd;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int gg_compat_o_path(void)
{
#if GG_HAVE_O_PATH
	return O_PATH;
#else
	return O_RDONLY;
#endif
}

int gg_compat_o_noatime(void)
{
#if GG_HAVE_O_NOATIME
	return O_NOATIME;
#else
	return 0;
#endif
}

int gg_compat_open_direct(int fd)
{
#if GG_HAVE_O_DIRECT
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return open(proc, O_WRONLY | O_DIRECT | O_CLOEXEC);
#else
	(void)fd;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int gg_compat_reserve(int fd, off_t off, off_t len)
{
#if GG_HAVE_FALLOCATE
	return fallocate(fd, 0, off, len);
#else
	/* posix_fallocate may write zeros where the file system cannot reserve:
	 * twice the writes, for nothing */
	(void)fd, (void)off, (void)len;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int gg_compat_reserve_useful(int fd)
{
#if GG_HAVE_STATFS_MAGIC
	/* tmpfs has no lock to avoid, and what it reserves is memory */
	struct statfs fs;
	return fstatfs(fd, &fs) == 0 && fs.f_type != TMPFS_MAGIC;
#else
	(void)fd;
#if GG_HAVE_FALLOCATE
	return 1;
#else
	return 0;
#endif
#endif
}

int gg_compat_writeback(int fd, off_t off, off_t len)
{
#if GG_HAVE_SYNC_FILE_RANGE
	return sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE);
#else
	(void)fd, (void)off, (void)len;
	return 0;
#endif
}

ssize_t gg_compat_pread_nowait(int fd, void *buf, size_t len, off_t off)
{
#if GG_HAVE_RWF_NOWAIT
	struct iovec iov = {buf, len};
	return preadv2(fd, &iov, 1, off, RWF_NOWAIT);
#else
	(void)fd, (void)buf, (void)len, (void)off;
	errno = EOPNOTSUPP;
	return -1;
#endif
}

char *gg_compat_self_exe(char *buf, size_t size)
{
#if GG_HAVE_PROC_SELF_EXE
	if (size < 2)
		return NULL;
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return buf;
#else
	(void)buf, (void)size;
	return NULL;
#endif
}

int gg_compat_open_beneath(int rootfd, const char *rel, int flags)
{
#if GG_HAVE_OPENAT2
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)flags;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	return (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
#else
	(void)rootfd, (void)rel, (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

int gg_compat_fd_path(char *buf, size_t size, int dfd, const char *name)
{
#if GG_HAVE_PROC_SELF_EXE
	int n = snprintf(buf, size, "/proc/self/fd/%d/%s", dfd, name);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
#else
	(void)buf, (void)size, (void)dfd, (void)name;
	errno = ENOSYS;
	return -1;
#endif
}

ssize_t gg_compat_listxattr(int fd, const char *path, char *buf, size_t size)
{
#if GG_HAVE_LINUX_XATTR
	return fd >= 0 ? flistxattr(fd, buf, size) : llistxattr(path, buf, size);
#else
	(void)fd, (void)path, (void)buf, (void)size;
	errno = ENOTSUP;
	return -1;
#endif
}

ssize_t gg_compat_getxattr(int fd, const char *path, const char *key, void *buf, size_t size)
{
#if GG_HAVE_LINUX_XATTR
	return fd >= 0 ? fgetxattr(fd, key, buf, size) : lgetxattr(path, key, buf, size);
#else
	(void)fd, (void)path, (void)key, (void)buf, (void)size;
	errno = ENOTSUP;
	return -1;
#endif
}

/* ---- descriptors ---------------------------------------------------------------- */

int gg_compat_pipe(int p[2], int nonblock)
{
#if GG_HAVE_PIPE2
	return pipe2(p, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
#else
	if (pipe(p) < 0)
		return -1;
	if (cloexec(p[0], nonblock) < 0 || cloexec(p[1], nonblock) < 0) {
		close(p[1]);
		return close_keep_errno(p[0]);
	}
	return 0;
#endif
}

int gg_compat_socket(int domain, int type, int protocol, int nonblock)
{
#if GG_HAVE_SOCK_CLOEXEC
	return socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), protocol);
#else
	int fd = socket(domain, type, protocol);
	if (fd >= 0 && cloexec(fd, nonblock) < 0)
		return close_keep_errno(fd);
	return fd;
#endif
}

int gg_compat_socketpair(int domain, int type, int protocol, int sv[2])
{
#if GG_HAVE_SOCK_CLOEXEC
	return socketpair(domain, type | SOCK_CLOEXEC, protocol, sv);
#else
	if (socketpair(domain, type, protocol, sv) < 0)
		return -1;
	if (cloexec(sv[0], 0) < 0 || cloexec(sv[1], 0) < 0) {
		close(sv[1]);
		return close_keep_errno(sv[0]);
	}
	return 0;
#endif
}

ssize_t gg_compat_splice(int in, int out, size_t len)
{
#if GG_HAVE_SPLICE
	return splice(in, NULL, out, NULL, len, SPLICE_F_MOVE);
#else
	(void)in;
	(void)out;
	(void)len;
	errno = EINVAL;
	return -1;
#endif
}

void gg_compat_pipe_size(int fd, int size)
{
#if GG_HAVE_SPLICE && defined(F_SETPIPE_SZ)
	(void)fcntl(fd, F_SETPIPE_SZ, size);
#else
	(void)fd;
	(void)size;
#endif
}

ssize_t gg_compat_send(int fd, const void *buf, size_t len)
{
#if GG_HAVE_MSG_NOSIGNAL
	return send(fd, buf, len, MSG_NOSIGNAL);
#else
#ifdef SO_NOSIGPIPE
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#endif
	/* SIGPIPE blocked in this thread; one raised by this send is taken back */
	sigset_t pipe, old;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	ssize_t n = send(fd, buf, len, 0);
	int e = errno;
	if (n < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
		sigset_t pending;
		struct timespec zero = {0, 0};
		if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
#endif
}

int gg_compat_peer_uid(int fd, uid_t *uid)
{
#if defined(SO_PEERCRED)
	struct ucred c;
	socklen_t l = sizeof c;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l) < 0)
		return -1;
	*uid = c.uid;
	return 0;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
	gid_t g;
	return getpeereid(fd, uid, &g);
#else
	(void)fd;
	(void)uid;
	errno = ENOSYS;
	return -1;
#endif
}

/* ---- process -------------------------------------------------------------------- */

static int urandom(void *buf, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	unsigned char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return close_keep_errno(fd);
		}
		p += n;
		len -= (size_t)n;
	}
	close(fd);
	return 0;
}

int gg_compat_random(void *buf, size_t len)
{
	unsigned char *p = buf;
#if GG_HAVE_GETRANDOM
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ENOSYS ? urandom(p, len) : -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
#elif GG_HAVE_GETENTROPY
	while (len) { /* at most 256 bytes a call */
		size_t k = len < 256 ? len : 256;
		if (getentropy(p, k) < 0)
			return errno == ENOSYS ? urandom(p, len) : -1;
		p += k;
		len -= k;
	}
	return 0;
#elif GG_HAVE_ARC4RANDOM
	arc4random_buf(p, len);
	return 0;
#else
	return urandom(p, len);
#endif
}

unsigned gg_compat_ncpus(void)
{
#if GG_HAVE_SCHED_GETAFFINITY
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
#endif
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 && n < INT_MAX ? (unsigned)n : 1;
}

int gg_compat_no_dump(void)
{
#if GG_HAVE_PRCTL
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#else
	struct rlimit rl = {0, 0};
	return setrlimit(RLIMIT_CORE, &rl);
#endif
}

int gg_compat_pidfd(pid_t pid)
{
#if GG_HAVE_PIDFD_OPEN
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int gg_compat_group_runs(pid_t pg)
{
#if GG_HAVE_PROC_SELF_EXE
	DIR *d = opendir("/proc");
	if (!d)
		return kill(-pg, 0) == 0;
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d))) {
		char path[64], buf[1024];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) state ppid pgrp ...": comm may hold anything */
		char *c = strrchr(buf, ')'), state;
		int ppid, pgrp;
		found = c && sscanf(c + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pg &&
			state != 'Z' && state != 'X';
	}
	closedir(d);
	return found;
#else
	return kill(-pg, 0) == 0;
#endif
}

size_t gg_compat_alloc_size(void *p)
{
#if GG_HAVE_MALLOC_USABLE_SIZE
	return malloc_usable_size(p);
#elif GG_HAVE_MALLOC_SIZE
	return malloc_size(p);
#else
	(void)p;
	return 0;
#endif
}

int gg_compat_sched_batch(void)
{
#if GG_HAVE_SCHED_BATCH
	struct sched_param sp = {.sched_priority = 0};
	return sched_setscheduler(0, SCHED_BATCH, &sp);
#else
	return 0;
#endif
}
