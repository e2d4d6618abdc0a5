/* The compat layer: every Linux-only call the library makes, behind one function each
 * (in the spirit of OpenSSH's openbsd-compat). configure finds the Linux fast paths and
 * says so with -DGG_HAVE_X (config.mk's COMPAT_DEFS); `./configure
 * --disable-linux-fastpaths` leaves them all out, and every function here then takes
 * its POSIX fallback. Only lib/compat/compat.c may name a Linux-only interface
 * (scripts/check-portable.sh fails CI otherwise); the files outside the Makefile's
 * PLATFORM_SRC are compiled with a strict POSIX feature set, so a new Linux-only call
 * there does not build.
 *
 * Each function returns what the call it stands for returns (-1 with errno on failure).
 * Where the fallback cannot do what the fast path does, it fails with EOPNOTSUPP and the
 * caller takes its own slower way (a named temp file, a read that waits, writes through
 * the page cache). */
#ifndef GG_COMPAT_H
#define GG_COMPAT_H

#include <stddef.h>
#include <sys/types.h>

/* The fast paths this build has, as a space-separated list of names ("o_tmpfile
 * renameat2 ..."; "" for a forced-fallback build). For the tests and --version. */
const char *gg_compat_fastpaths(void);

/* ---- files ---------------------------------------------------------------------- */
/* An unnamed file in directory dir (O_TMPFILE), mode 0600, O_CLOEXEC, for writing
 * (rdwr: reading too). -1 with EOPNOTSUPP where there is none: use a named one. */
int gg_compat_tmpfile(const char *dir, int rdwr);
/* Give the unnamed file fd the name path (linkat through /proc/self/fd); EEXIST when
 * path exists. Only for a descriptor gg_compat_tmpfile returned. */
int gg_compat_tmpfile_link(int fd, const char *path);
/* A scratch file in dir that has no name at any moment, O_RDWR, close-on-exec:
 * O_TMPFILE, else a mkstemp name removed at once (a crash between the two leaves it). */
int gg_compat_scratch(const char *dir);
/* mkstemp with close-on-exec (mkostemp, else mkstemp + fcntl). */
int gg_compat_mkstemp(char *tmpl);
/* Rename from to to unless to exists (then EEXIST): renameat2(RENAME_NOREPLACE), else
 * link + unlink (link refuses to replace too; a crash between them leaves both names). */
int gg_compat_rename_noreplace(const char *from, const char *to);
/* Flush the whole file system holding fd (syncfs): one call for many files written
 * there. -1 EOPNOTSUPP where there is none: fsync each file instead. */
int gg_compat_syncfs(int fd);
/* The flag that opens a directory only to walk beneath it (O_PATH), else O_RDONLY
 * (a directory without read permission then cannot be walked). */
int gg_compat_o_path(void);
/* O_NOATIME where there is one, else 0 (reading then updates the access time). */
int gg_compat_o_noatime(void);
/* A second descriptor for fd's file that writes past the page cache (O_DIRECT through
 * /proc/self/fd), O_WRONLY|O_CLOEXEC; -1 EOPNOTSUPP where there is none. */
int gg_compat_open_direct(int fd);
/* Reserve blocks [off, off+len) of fd, moving its size (fallocate); -1 EOPNOTSUPP. */
int gg_compat_reserve(int fd, off_t off, off_t len);
/* Whether blocks reserved ahead gain anything on fd's file system (0 on tmpfs). */
int gg_compat_reserve_useful(int fd);
/* Start writing [off, off+len) of fd out to the disk without waiting
 * (sync_file_range WRITE); 0 and nothing done where there is none. */
int gg_compat_writeback(int fd, off_t off, off_t len);
/* pread that does not wait for the disk (preadv2 RWF_NOWAIT): EAGAIN when the data is
 * not in the page cache (the kernel starts reading it); EOPNOTSUPP where there is none. */
ssize_t gg_compat_pread_nowait(int fd, void *buf, size_t len, off_t off);
/* openat of rel beneath rootfd that follows no link and never leaves rootfd
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS); flags as
 * openat's. -1 ENOSYS where there is none: walk one openat(O_NOFOLLOW) at a time. */
int gg_compat_open_beneath(int rootfd, const char *rel, int flags);
/* A path that reaches name in the directory open as dfd without following anything
 * (/proc/self/fd/DFD/NAME). -1 ENOSYS without /proc. */
int gg_compat_fd_path(char *buf, size_t size, int dfd, const char *name);
/* Extended attributes (Linux's calls): of fd when fd >= 0, else of path, not followed.
 * -1 ENOTSUP where the build has none (the image then leaves them out). */
ssize_t gg_compat_listxattr(int fd, const char *path, char *buf, size_t size);
ssize_t gg_compat_getxattr(int fd, const char *path, const char *key, void *buf, size_t size);
/* This program's own path (readlink /proc/self/exe) into buf; NULL where unknown. */
char *gg_compat_self_exe(char *buf, size_t size);

/* ---- descriptors ---------------------------------------------------------------- */
/* pipe with close-on-exec on both ends (pipe2 O_CLOEXEC, else pipe + fcntl), nonblock:
 * O_NONBLOCK too. */
int gg_compat_pipe(int p[2], int nonblock);
/* socket with close-on-exec (SOCK_CLOEXEC, else fcntl), nonblock: O_NONBLOCK too. */
int gg_compat_socket(int domain, int type, int protocol, int nonblock);
/* socketpair with close-on-exec on both ends. */
int gg_compat_socketpair(int domain, int type, int protocol, int sv[2]);
/* Up to len bytes from the pipe or socket in to the pipe out without a copy through
 * user space (splice); -1 with errno EINVAL where the system cannot (the caller
 * copies), as splice itself says for descriptors it cannot join. */
ssize_t gg_compat_splice(int in, int out, size_t len);
/* A pipe's buffer made size bytes where the system lets one say it (F_SETPIPE_SZ);
 * a hint: nothing happens elsewhere or when refused. */
void gg_compat_pipe_size(int fd, int size);
/* send that never raises SIGPIPE (MSG_NOSIGNAL, SO_NOSIGPIPE, else SIGPIPE blocked in
 * this thread around the call). */
ssize_t gg_compat_send(int fd, const void *buf, size_t len);

/* The user id of the process at the other end of a Unix socket (SO_PEERCRED,
 * getpeereid); -1 with errno (ENOSYS where the system has neither: the caller
 * refuses the peer). */
int gg_compat_peer_uid(int fd, uid_t *uid);

/* ---- process -------------------------------------------------------------------- */
/* len random bytes from the kernel (getrandom, getentropy, arc4random_buf, else
 * /dev/urandom). 0, or -1 with errno. */
int gg_compat_random(void *buf, size_t len);
/* The CPUs this process may run on (sched_getaffinity), else online (sysconf); >= 1. */
unsigned gg_compat_ncpus(void);
/* No core dump and no ptrace by other processes of the user (prctl
 * PR_SET_DUMPABLE 0), else core dumps off (RLIMIT_CORE 0). */
int gg_compat_no_dump(void);
/* A descriptor that polls readable when child pid ends (pidfd_open); -1 ENOSYS where
 * there is none (then poll waitpid). */
int gg_compat_pidfd(pid_t pid);
/* Whether a process of group pg still runs, zombies not counted (a scan of /proc);
 * without /proc: kill(-pg, 0), which counts a zombie until it is reaped. */
int gg_compat_group_runs(pid_t pg);
/* The heap in huge pages (lib/image/heap.c): 0, or -1 and the allocator as it was
 * (not glibc, no transparent huge pages, a limit on address space). Once a process. */
int gg_compat_heap_huge_pages(void);
/* The usable size of a block malloc returned (malloc_usable_size, macOS malloc_size);
 * 0 where neither exists (the block is then not wiped before it is freed). */
size_t gg_compat_alloc_size(void *p);
/* The calling thread runs as a batch thread (SCHED_BATCH); best effort, 0 and nothing
 * done where there is none. */
int gg_compat_sched_batch(void);

#endif
