/* The directory reader: scan the sandbox into the tree (lstat, readlink, xattrs, hard
 * links by device and inode), then stream every regular file's data in sorted order,
 * holes of sparse files found with SEEK_DATA/SEEK_HOLE. */
#include "image/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define READ_BUF (1u << 20)

struct hl_slot {
	uint64_t dev, ino;
	struct gg_inode *inode;
};

struct scan {
	struct gg_freeze *fz;
	struct gg_tree *t;
	char *path; /* root + "/" + relative path of the current entry */
	size_t len, cap;
	size_t rootlen;
	struct hl_slot *hl; /* hard links: (dev, ino) -> inode */
	size_t nhl, hlcap;
	uint64_t files, bytes;
	char *xbuf, *vbuf; /* xattr names and values */
	size_t xcap, vcap;
	unsigned char *rbuf;
};

static uint32_t encode_dev(dev_t d)
{
	unsigned maj = major(d), min = minor(d);
	return (min & 0xff) | (maj << 8) | ((min & ~0xffu) << 12);
}

static int path_push(struct scan *s, const char *name, size_t *saved)
{
	size_t nl = strlen(name);
	*saved = s->len;
	if (s->len + 1 + nl + 1 > s->cap) {
		size_t ncap = s->cap * 2;
		while (ncap < s->len + nl + 2)
			ncap *= 2;
		char *np = realloc(s->path, ncap);
		if (!np)
			return -1;
		s->path = np;
		s->cap = ncap;
	}
	s->path[s->len++] = '/';
	memcpy(s->path + s->len, name, nl + 1);
	s->len += nl;
	return 0;
}

static void path_pop(struct scan *s, size_t saved)
{
	s->len = saved;
	s->path[saved] = '\0';
}

/* The path shown to the user: as given + relative part. */
static const char *shown(const struct scan *s)
{
	return s->path;
}

static struct gg_inode **hl_slot(struct scan *s, uint64_t dev, uint64_t ino, int *fresh)
{
	if ((s->nhl + 1) * 2 > s->hlcap) {
		size_t ncap = s->hlcap ? s->hlcap * 2 : 256;
		struct hl_slot *n = calloc(ncap, sizeof *n);
		if (!n)
			return NULL;
		for (size_t i = 0; i < s->hlcap; i++) {
			if (!s->hl[i].inode)
				continue;
			size_t h = (size_t)((s->hl[i].ino * 0x9E3779B97F4A7C15ull) ^ s->hl[i].dev) &
				   (ncap - 1);
			while (n[h].inode)
				h = (h + 1) & (ncap - 1);
			n[h] = s->hl[i];
		}
		free(s->hl);
		s->hl = n;
		s->hlcap = ncap;
	}
	size_t h = (size_t)((ino * 0x9E3779B97F4A7C15ull) ^ dev) & (s->hlcap - 1);
	while (s->hl[h].inode) {
		if (s->hl[h].dev == dev && s->hl[h].ino == ino) {
			*fresh = 0;
			return &s->hl[h].inode;
		}
		h = (h + 1) & (s->hlcap - 1);
	}
	s->hl[h].dev = dev;
	s->hl[h].ino = ino;
	s->nhl++;
	*fresh = 1;
	return &s->hl[h].inode;
}

static int grow(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 1024;
	while (n < need)
		n *= 2;
	char *nb = realloc(*buf, n);
	if (!nb)
		return -1;
	*buf = nb;
	*cap = n;
	return 0;
}

static int read_xattrs(struct scan *s, struct gg_inode *ino, struct gg_err *err)
{
	ssize_t n;
	/* never pass a size of 0: that asks for the size instead of the data */
	if (grow(&s->xbuf, &s->xcap, 1024) < 0 || grow(&s->vbuf, &s->vcap, 1024) < 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	for (;;) {
		n = llistxattr(s->path, s->xbuf, s->xcap);
		if (n >= 0)
			break;
		if (errno == ERANGE) {
			ssize_t need = llistxattr(s->path, NULL, 0);
			if (need < 0 || grow(&s->xbuf, &s->xcap, (size_t)need + 1) < 0)
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			continue;
		}
		if (errno == ENOTSUP || errno == ENOSYS)
			return 0;
		gg_image_warn(s->fz, "'%s': extended attributes not readable (%s), left out",
			      shown(s), strerror(errno));
		return 0;
	}
	if (n == 0)
		return 0;
	struct gg_xattr_buf xb = {0};
	for (char *k = s->xbuf; k < s->xbuf + n; k += strlen(k) + 1) {
		if (!gg_image_xattr_supported(k)) {
			gg_image_warn(s->fz,
				      "'%s': extended attribute '%s' left out (squashfs keeps only "
				      "user., trusted. and security.)",
				      shown(s), k);
			continue;
		}
		ssize_t vl;
		for (;;) {
			vl = lgetxattr(s->path, k, s->vbuf, s->vcap);
			if (vl >= 0 || errno != ERANGE)
				break;
			ssize_t need = lgetxattr(s->path, k, NULL, 0);
			if (need < 0 || grow(&s->vbuf, &s->vcap, (size_t)need + 1) < 0) {
				gg_image_xattr_free(&xb);
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			}
		}
		if (vl < 0) {
			if (errno != ENODATA)
				gg_image_warn(s->fz,
					      "'%s': extended attribute '%s' not readable (%s), "
					      "left out",
					      shown(s), k, strerror(errno));
			continue;
		}
		if (gg_image_xattr_add(&xb, k, s->vbuf, (size_t)vl) < 0) {
			gg_image_xattr_free(&xb);
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	int rc = gg_image_xattr_sort(&xb);
	if (!rc)
		rc = gg_image_inode_set_xattrs(ino, xb.buf, xb.len);
	gg_image_xattr_free(&xb);
	if (rc)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	return 0;
}

static int fill_inode(struct scan *s, struct gg_inode *ino, const struct stat *st,
		      struct gg_err *err)
{
	ino->mode = st->st_mode;
	ino->uid = st->st_uid;
	ino->gid = st->st_gid;
	ino->mtime = st->st_mtim.tv_sec;
	ino->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
	ino->src_dev = st->st_dev;
	ino->src_ino = st->st_ino;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		ino->rdev = encode_dev(st->st_rdev);
	if (gg_image_tree_note_id(s->t, st->st_uid, err) < 0 ||
	    gg_image_tree_note_id(s->t, st->st_gid, err) < 0)
		return err->code;
	if (S_ISLNK(st->st_mode)) {
		size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
		for (;;) {
			char *buf = malloc(cap);
			if (!buf)
				return gg_err_set(err, GG_ENOMEM, "out of memory");
			ssize_t n = readlink(s->path, buf, cap);
			if (n < 0) {
				int e = errno;
				free(buf);
				return gg_err_sys(err, GG_EIO, e, "reading the link '%s'",
						  shown(s));
			}
			if ((size_t)n < cap) {
				buf[n] = '\0';
				ino->target = buf;
				break;
			}
			free(buf);
			cap *= 2;
		}
	}
	return read_xattrs(s, ino, err);
}

static int namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Scan the directory at s->path into dir. *gone = 1 when it was unreadable and skipped. */
static int scan_dir(struct scan *s, struct gg_node *dir, int *gone, struct gg_err *err)
{
	*gone = 0;
	if (gg_image_check_cancel(s->fz, err) < 0)
		return err->code;
	DIR *d = opendir(s->path);
	if (!d) {
		int e = errno;
		if (dir->parent && gg_image_freeze_skip_unreadable(s->fz) &&
		    (e == EACCES || e == EPERM)) {
			gg_image_warn(s->fz, "'%s': %s, left out", shown(s), strerror(e));
			*gone = 1;
			return 0;
		}
		return gg_err_sys(err, GG_EFAIL, e, "reading the directory '%s'", shown(s));
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn) {
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			break;
		}
		n++;
		errno = 0;
	}
	if (!rc && errno)
		rc = gg_err_sys(err, GG_EFAIL, errno, "reading the directory '%s'", shown(s));
	closedir(d);
	if (!rc && n) /* an empty directory: names is NULL */
		qsort(names, n, sizeof *names, namecmp);

	for (size_t i = 0; !rc && i < n; i++) {
		size_t saved;
		if (path_push(s, names[i], &saved) < 0) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			break;
		}
		struct stat st;
		if (lstat(s->path, &st) < 0) {
			int e = errno;
			if (e == ENOENT) {
				gg_image_warn(s->fz, "'%s' vanished while reading, left out",
					      shown(s));
			} else if (gg_image_freeze_skip_unreadable(s->fz)) {
				gg_image_warn(s->fz, "'%s': %s, left out", shown(s), strerror(e));
			} else {
				rc = gg_err_sys(err, GG_EFAIL, e, "'%s'", shown(s));
			}
			path_pop(s, saved);
			continue;
		}
		if (gg_image_freeze_excluded(s->fz, st.st_dev, st.st_ino)) {
			path_pop(s, saved);
			continue;
		}
		struct gg_inode *ino = NULL;
		int fresh = 1;
		if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
			struct gg_inode **slotp = hl_slot(s, st.st_dev, st.st_ino, &fresh);
			if (!slotp) {
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			if (fresh && !(*slotp = gg_image_inode_new(s->t))) {
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			ino = *slotp;
		} else if (!(ino = gg_image_inode_new(s->t))) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			break;
		}
		if (fresh && (rc = fill_inode(s, ino, &st, err)) < 0)
			break;
		struct gg_node *kid = gg_image_node_add(s->t, dir, names[i], strlen(names[i]), ino);
		if (!kid) {
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int kgone;
			rc = scan_dir(s, kid, &kgone, err);
			if (!rc && kgone)
				gg_image_node_remove(s->t, kid);
		} else if (S_ISREG(st.st_mode) && fresh) {
			s->files++;
			s->bytes += (uint64_t)st.st_size;
			gg_image_progress_totals(s->fz, s->files, s->bytes);
		}
		path_pop(s, saved);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ---- data ------------------------------------------------------------------------- */

static int read_range(struct scan *s, int fd, uint64_t from, uint64_t len, int to_eof,
		      struct gg_err *err)
{
	uint64_t pos = from;
	while (to_eof || pos < from + len) {
		size_t want = READ_BUF;
		if (!to_eof && from + len - pos < want)
			want = (size_t)(from + len - pos);
		ssize_t n = pread(fd, s->rbuf, want, (off_t)pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return gg_err_sys(err, GG_EIO, errno, "reading '%s'", shown(s));
		if (n == 0) {
			if (to_eof)
				break;
			/* the file shrank: keep its announced size with zeros */
			gg_image_warn(s->fz, "'%s' shrank while reading", shown(s));
			return gg_image_feed_zeros(s->fz, from + len - pos, err);
		}
		if (gg_image_feed_data(s->fz, s->rbuf, (size_t)n, err) < 0)
			return err->code;
		pos += (uint64_t)n;
	}
	return 0;
}

static int feed_file(struct scan *s, struct gg_inode *ino, const char *rel, struct gg_err *err)
{
	int fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (gg_image_freeze_skip_unreadable(s->fz) && (e == EACCES || e == EPERM)) {
			gg_image_warn(s->fz, "'%s': %s, left out", shown(s), strerror(e));
			ino->skipped = 1;
			return 0;
		}
		return gg_err_sys(err, GG_EFAIL, e, "reading '%s'", shown(s));
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return gg_err_set(err, GG_EFAIL, "'%s' changed while reading (no longer a file)",
				  shown(s));
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	int rc = gg_image_feed_begin(s->fz, ino, rel, err);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	uint64_t size = (uint64_t)st.st_size;
	if ((uint64_t)st.st_blocks * 512 < size) {
		/* sparse: copy the data extents, holes as zeros (stored as sparse blocks) */
		uint64_t pos = 0;
		while (!rc && pos < size) {
			off_t data = lseek(fd, (off_t)pos, SEEK_DATA);
			if (data < 0 && errno == ENXIO) {
				rc = gg_image_feed_zeros(s->fz, size - pos, err);
				break;
			}
			if (data < 0) {
				/* no SEEK_DATA here: plain copy */
				rc = read_range(s, fd, pos, size - pos, 0, err);
				break;
			}
			if ((uint64_t)data > size)
				data = (off_t)size;
			if ((uint64_t)data > pos &&
			    (rc = gg_image_feed_zeros(s->fz, (uint64_t)data - pos, err)) < 0)
				break;
			off_t hole = lseek(fd, data, SEEK_HOLE);
			if (hole < 0 || (uint64_t)hole > size)
				hole = (off_t)size;
			rc = read_range(s, fd, (uint64_t)data, (uint64_t)(hole - data), 0, err);
			pos = (uint64_t)hole;
		}
	} else {
		rc = read_range(s, fd, 0, 0, 1, err);
	}
	close(fd);
	if (rc < 0)
		return rc;
	return gg_image_feed_end(s->fz, err);
}

static int feed_tree(struct scan *s, struct gg_node *dir, struct gg_err *err)
{
	for (size_t i = 0; i < dir->nkids; i++) {
		struct gg_node *k = dir->kids[i];
		struct gg_inode *ino = k->inode;
		size_t saved;
		if (path_push(s, k->name, &saved) < 0)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		int rc = 0;
		if (S_ISDIR(ino->mode)) {
			rc = feed_tree(s, k, err);
		} else if (S_ISREG(ino->mode) && !ino->fed && !ino->skipped) {
			rc = feed_file(s, ino, s->path + s->rootlen + 1, err);
		}
		path_pop(s, saved);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int gg_image_read_dir(struct gg_freeze *fz, const char *dir, struct gg_err *err)
{
	struct scan s;
	memset(&s, 0, sizeof s);
	s.fz = fz;
	s.t = gg_image_freeze_tree(fz);
	s.len = strlen(dir);
	while (s.len > 1 && dir[s.len - 1] == '/')
		s.len--;
	s.cap = s.len + 256;
	s.path = malloc(s.cap);
	s.rbuf = malloc(READ_BUF);
	int rc;
	if (!s.path || !s.rbuf) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(s.path, dir, s.len);
	s.path[s.len] = '\0';
	if (s.len == 1 && dir[0] == '/') {
		memcpy(s.path, "/.", 3); /* children become "/./name" */
		s.len = 2;
	}
	s.rootlen = s.len;

	struct stat st;
	if (stat(s.path, &st) < 0) { /* the root may be a link to the sandbox */
		rc = gg_err_sys(err, GG_EFAIL, errno, "'%s'", dir);
		goto out;
	}
	struct gg_inode *root = s.t->root->inode;
	if ((rc = fill_inode(&s, root, &st, err)) < 0)
		goto out;
	root->mode = S_IFDIR | (st.st_mode & 07777);
	s.t->root_set = 1;
	int gone;
	if ((rc = scan_dir(&s, s.t->root, &gone, err)) < 0)
		goto out;
	gg_image_progress_phase(fz, GG_IMAGE_PHASE_DATA);
	rc = feed_tree(&s, s.t->root, err);
out:
	free(s.path);
	free(s.rbuf);
	free(s.hl);
	free(s.xbuf);
	free(s.vbuf);
	return rc;
}
