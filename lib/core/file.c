/* Atomic writes, bounded reads, private-file checks. */
#include "core/core.h"
#include "compat/compat.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gg_fsync_dir(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -1;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0)
		return -1;
	int r = fsync(fd);
	close(fd);
	return r;
}

#define NAME_TRIES 16

int gg_file_name_unnamed(int fd, char *tmp, const char *path, struct gg_err *err)
{
	for (int i = 0; i < NAME_TRIES; i++) {
		uint32_t v;
		if (gg_compat_random(&v, sizeof v) < 0)
			return gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
		snprintf(tmp + strlen(tmp) - 6, 7, "%06lx", (unsigned long)v & 0xffffff);
		if (gg_compat_tmpfile_link(fd, tmp) == 0)
			return 0;
		if (errno != EEXIST)
			return gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	}
	return gg_err_set(err, GG_EIO,
			  "writing '%s': %d temporary names beside it were taken (remove "
			  "stale '%s.tmp.*' files no program is writing)",
			  path, NAME_TRIES, path);
}

int gg_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
			 struct gg_err *err)
{
	char *tmp = gg_strdup_printf("%s.tmp.XXXXXX", path);
	if (!tmp)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	/* An unnamed file (O_TMPFILE) is named only once complete, so a SIGKILL
	 * leaves nothing; otherwise (or without one: compat.h) a named temp file
	 * (mkstemp + rename), removed on failure. */
	char *dir = strdup(path);
	int fd = dir ? gg_compat_tmpfile(dirname(dir), 0) : -1;
	int anon = fd >= 0, named = 0;
	free(dir);
	if (!anon)
		named = (fd = gg_compat_mkstemp(tmp)) >= 0;
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return gg_err_sys(err, GG_EIO, e, "writing '%s'", path);
	}
	int rc = 0;
	if (fchmod(fd, mode) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0)
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	if (rc == 0 && anon)
		named = (rc = gg_file_name_unnamed(fd, tmp, path, err)) == 0;
	if (close(fd) < 0 && rc == 0)
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = gg_err_sys(err, GG_EIO, errno, "writing '%s'", path);
	if (rc < 0 && named)
		unlink(tmp);
	free(tmp);
	if (rc == 0)
		gg_fsync_dir(path); /* best effort: the rename is done */
	return rc;
}

int gg_file_write_changed(const char *path, const void *data, size_t len, mode_t mode,
			  struct gg_err *err)
{
	char *old = NULL;
	size_t n = 0;
	struct stat sb;
	int same = lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 07777) == mode &&
		   sb.st_uid == geteuid() && gg_file_read(path, len, &old, &n, NULL) == 0 &&
		   n == len && memcmp(old, data, len) == 0;
	free(old);
	return same ? 0 : gg_file_write_atomic(path, data, len, mode, err);
}

int gg_file_read(const char *path, size_t max, char **out, size_t *len, struct gg_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_EIO, errno,
				  "reading '%s'", path);
	/* Grow up to max + 1 bytes: reading one byte past max tells "too large". */
	size_t limit = max + 1, cap = limit < 4096 ? limit : 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	for (;;) {
		if (n > max) {
			free(buf);
			close(fd);
			return gg_err_set(err, GG_EIO, "reading '%s': larger than %zu bytes", path,
					  max);
		}
		if (n == cap) {
			cap = cap * 2 > limit ? limit : cap * 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			return gg_err_sys(err, GG_EIO, e, "reading '%s'", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int gg_mkdir_p(const char *path, mode_t mode, struct gg_err *err)
{
	char *p = strdup(path);
	if (!p)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				int e = errno;
				gg_err_sys(err, GG_EIO, e, "creating directory '%s'", p);
				free(p);
				return GG_EIO;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
		gg_err_set(err, GG_EIO, "'%s' is not a directory", p);
		free(p);
		return GG_EIO;
	}
	free(p);
	return 0;
}

int gg_mkdir_parent(const char *path, mode_t mode, struct gg_err *err)
{
	char *dir = strdup(path);
	if (!dir)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	char *slash = strrchr(dir, '/');
	int rc = 0;
	if (slash && slash != dir) {
		*slash = '\0';
		rc = gg_mkdir_p(dir, mode, err);
	}
	free(dir);
	return rc;
}

int gg_file_check_private(const char *path, const char *what, struct gg_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return gg_err_sys(err, GG_ECRED, errno, "%s '%s'", what, path);
	if (!S_ISREG(st.st_mode))
		return gg_err_set(err, GG_ECRED, "%s '%s' is not a regular file", what, path);
	if (st.st_uid != geteuid())
		return gg_err_set(err, GG_ECRED, "%s '%s' is owned by uid %u, not by you", what,
				  path, (unsigned)st.st_uid);
	if (st.st_mode & 077)
		return gg_err_set(err, GG_ECRED,
				  "%s '%s' is accessible by others (mode %04o): run chmod 600 '%s'",
				  what, path, (unsigned)(st.st_mode & 07777), path);
	return 0;
}

int gg_file_shred(const char *path, struct gg_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return gg_err_sys(err, errno == ENOENT ? GG_ENOTFOUND : GG_EIO, errno,
				  "removing '%s'", path);
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		static const char zeros[4096];
		off_t left = st.st_size;
		while (left > 0) {
			size_t n = left > (off_t)sizeof zeros ? sizeof zeros : (size_t)left;
			if (write_all(fd, zeros, n) < 0)
				break;
			left -= (off_t)n;
		}
		fsync(fd);
	}
	close(fd);
	if (unlink(path) < 0)
		return gg_err_sys(err, GG_EIO, errno, "removing '%s'", path);
	return 0;
}

int gg_dir_prune(const char *dir, int64_t max_age, int64_t now, const char *keep)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));) {
		struct stat st;
		if ((keep && !strcmp(de->d_name, keep)) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || now - (int64_t)st.st_mtime <= max_age)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

int gg_dir_private(const char *d, struct gg_err *err)
{
	int rc = gg_mkdir_p(d, 0700, err);
	if (rc < 0)
		return rc;
	struct stat st;
	/* lstat: in /tmp, a symbolic link put there by someone else is refused */
	if (lstat(d, &st) < 0)
		return gg_err_sys(err, GG_EIO, errno, "'%s'", d);
	if (!S_ISDIR(st.st_mode))
		return gg_err_set(err, GG_EIO, "'%s' is not a directory", d);
	if (st.st_uid != geteuid())
		return gg_err_set(err, GG_EIO, "'%s' is owned by uid %u, not by you", d,
				  (unsigned)st.st_uid);
	if (st.st_mode & 077)
		return gg_err_set(err, GG_EIO,
				  "'%s' is accessible by others (mode %04o): run chmod 700 '%s'", d,
				  (unsigned)(st.st_mode & 07777), d);
	return 0;
}

int gg_unix_connect(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (!path || strlen(path) >= sizeof a.sun_path)
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	int fd = gg_compat_socket(AF_UNIX, SOCK_STREAM, 0, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}
