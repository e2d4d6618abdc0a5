/* submit's IMAGE: what request --image takes, as the SIF a job runs. A SIF
 * goes as it is (checked whole); node:/PATH.sif is the node's, not uploaded; a
 * directory, tar, docker-archive or OCI image here is frozen with the
 * library's freezer into the user's cache, $XDG_CACHE_HOME/gridgpu/images,
 * under a name made of what identifies the input (its path, and the metadata
 * of every entry: a change anywhere makes another name), so a second submit of
 * the same unchanged input takes the SIF made the first time. The freezer
 * writes a temporary file and renames it: the cache never holds half an
 * image. An image on the node that is not a SIF, or a source the freezer
 * refuses, is refused before anything is sent, naming the freeze to run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "image/image.h"
#include "engine/engine_int.h"

#define KEY_DEPTH 1024 /* directories deeper than this are not keyed */

static const char *const suffixes[] = {"sif",     "tar",  "tar.gz",  "tgz",  "tar.xz",  "txz",
				       "tar.zst", "tzst", "tar.bz2", "tbz2", "tar.lz4", NULL};

const char *const *gg_image_suffixes(void)
{
	return suffixes;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && s[n - k - 1] == '.' && !strcmp(s + n - k, suffix);
}

static char *sif_name(const char *path);

/* ---- the cache's name for an input ---- */

static void md_add(EVP_MD_CTX *md, const void *p, size_t n)
{
	EVP_DigestUpdate(md, p, n);
}

/* One entry: its path under the input, type, mode, owner, size, times, inode,
 * and a symbolic link's target. */
static void key_entry(EVP_MD_CTX *md, const char *path, const char *rel, const struct stat *st)
{
	long long v[] = {st->st_mode,        st->st_uid,          st->st_gid,
			 st->st_size,        st->st_mtim.tv_sec,  st->st_mtim.tv_nsec,
			 st->st_ctim.tv_sec, st->st_ctim.tv_nsec, (long long)st->st_ino};
	md_add(md, rel, strlen(rel) + 1);
	md_add(md, v, sizeof v);
	char target[PATH_MAX];
	ssize_t n = S_ISLNK(st->st_mode) ? readlink(path, target, sizeof target) : -1;
	if (n > 0)
		md_add(md, target, (size_t)n);
}

/* Every entry under dir, in name order. */
static int key_tree(EVP_MD_CTX *md, const char *dir, const char *rel, int depth, struct gg_err *err)
{
	if (depth > KEY_DEPTH)
		return gg_err_set(err, GG_EUSAGE, "%s: more than %d directories deep", dir,
				  KEY_DEPTH);
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return gg_err_sys(err, GG_EUSAGE, errno, "%s", dir);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char *p = NULL, *r = NULL;
		struct stat st;
		if (rc == 0 && strcmp(name, ".") && strcmp(name, "..")) {
			p = gg_strdup_printf("%s/%s", dir, name);
			r = gg_strdup_printf("%s/%s", rel, name);
			if (!p || !r)
				rc = gg_err_set(err, GG_ENOMEM, "out of memory");
			else if (lstat(p, &st) < 0)
				rc = gg_err_sys(err, GG_EUSAGE, errno, "%s", p);
			else
				key_entry(md, p, r, &st);
			if (rc == 0 && S_ISDIR(st.st_mode))
				rc = key_tree(md, p, r, depth + 1, err);
		}
		free(p);
		free(r);
		free(names[i]);
	}
	free(names);
	return rc;
}

/* "NAME" of a path's last part, kept to letters, digits, '.', '_', '-'. */
static void plain_base(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b && b[1] ? b + 1 : path;
	size_t i = 0;
	for (; *b && i + 1 < len && i < 48; b++)
		out[i++] =
			strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
			       *b)
				? *b
				: '_';
	out[i] = '\0';
}

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* The cache's directory, made (0700) unless dry_run. */
static char *cache_dir(int make, struct gg_err *err)
{
	char *top = NULL;
	if (gg_xdg_dir(GG_XDG_CACHE, &top, err) < 0)
		return NULL;
	char *dir = gg_strdup_printf("%s/images", top);
	free(top);
	if (!dir)
		gg_err_set(err, GG_ENOMEM, "out of memory");
	else if (make && gg_mkdir_p(dir, 0700, err) < 0) {
		free(dir);
		dir = NULL;
	}
	return dir;
}

/* SRC-KEY-NAME.sif: SRC names the input (its real path), KEY what it holds
 * now (this library's version, the metadata of it and of everything under
 * it). */
static int cache_name(const char *real, EVP_MD_CTX *md, char **name, struct gg_err *err)
{
	unsigned char src[EVP_MAX_MD_SIZE], key[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char hs[17], hk[33], base[64];
	if (!EVP_Digest(real, strlen(real), src, &n, EVP_sha256(), NULL) ||
	    !EVP_DigestFinal_ex(md, key, &n))
		return gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	hex(src, 8, hs);
	hex(key, 16, hk);
	char *sif = sif_name(real);
	plain_base(sif ? sif : "image.sif", base, sizeof base);
	free(sif);
	*name = gg_strdup_printf("%s-%s-%s", hs, hk, base);
	return *name ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory");
}

int gg_job_image_cache_path(const char *image, int make, char **path, struct gg_err *err)
{
	*path = NULL;
	char *real = realpath(image, NULL);
	if (!real)
		return gg_err_sys(err, GG_EUSAGE, errno, "'%s'", image);
	struct stat st;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL)
			 ? 0
			 : gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	if (rc == 0 && stat(real, &st) < 0)
		rc = gg_err_sys(err, GG_EUSAGE, errno, "'%s'", image);
	if (rc == 0) {
		static const char tag[] = "gridgpu image cache 1 " GG_VERSION;
		md_add(md, tag, sizeof tag);
		md_add(md, real, strlen(real) + 1);
		key_entry(md, real, ".", &st);
		if (S_ISDIR(st.st_mode))
			rc = key_tree(md, real, ".", 0, err);
	}
	char *name = NULL, *dir = NULL;
	if (rc == 0)
		rc = cache_name(real, md, &name, err);
	if (rc == 0 && !(dir = cache_dir(make, err)))
		rc = err->code ? err->code : gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && !(*path = gg_strdup_printf("%s/%s", dir, name)))
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	EVP_MD_CTX_free(md);
	free(real);
	free(name);
	free(dir);
	return rc;
}

/* Once path is in place: the cache's other SIFs of the same input (its
 * earlier states, "SRC-" the same) are removed, and every file not used for
 * GG_CACHE_MAX_AGE (a SIF taken from the cache is touched: used). */
static void prune(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = strndup(path, (size_t)(slash - path));
	DIR *d = dir ? opendir(dir) : NULL;
	for (struct dirent *de; d && (de = readdir(d));) {
		if (strncmp(de->d_name, slash + 1, 17) || !has_suffix(de->d_name, "sif") ||
		    !strcmp(de->d_name, slash + 1))
			continue;
		char *p = gg_strdup_printf("%s/%s", dir, de->d_name);
		if (p)
			unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	if (dir)
		gg_dir_prune(dir, GG_CACHE_MAX_AGE, (int64_t)time(NULL), slash + 1);
	free(dir);
}

/* ---- what the image is ---- */

/* "NAME.sif" for an image path: its last part without the image suffix. */
static char *sif_name(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b && b[1] ? b + 1 : path;
	size_t n = strlen(b);
	while (n && b[n - 1] == '/')
		n--;
	for (size_t i = 1; suffixes[i]; i++)
		if (has_suffix(b, suffixes[i])) {
			n = strlen(b) - strlen(suffixes[i]) - 1;
			break;
		}
	return gg_strdup_printf("%.*s.sif", (int)n, n ? b : "image");
}

/* node:/PATH: a SIF on the node goes by its path; anything else there would
 * have to be frozen, which only a machine that has it can do. */
static int node_image(struct gg_job_spec *q, const char *image, struct gg_err *err)
{
	const char *path = image + strlen(GG_IMAGE_NODE_MARK);
	if (path[0] != '/')
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': a path on the node must be absolute (node:/PATH)", image);
	if (has_suffix(path, "sif"))
		return gg_job_spec_set_image(q, image, err);
	char *sif = sif_name(path);
	const char *b = strrchr(path, '/') + 1;
	int rc = gg_err_set(err, GG_EUSAGE,
			    "'%s': a job runs a SIF, and an image on the node cannot be frozen "
			    "on the fly: copy it here and run 'gridgpu freeze %s -o %s', then "
			    "submit %s (or put a SIF on the node: node:/PATH.sif)",
			    image, *b ? b : path, sif ? sif : "IMAGE.sif", sif ? sif : "IMAGE.sif");
	free(sif);
	return rc;
}

/* A local path that is not here: a typo, or the node's without its mark. */
static int not_here(const char *image, int errnum, struct gg_err *err)
{
	if (errnum != ENOENT)
		return gg_err_sys(err, errnum == EACCES ? GG_EIO : GG_EUSAGE, errnum, "'%s'",
				  image);
	if (image[0] != '/')
		return gg_err_set(err, GG_EUSAGE, "'%s': no such file here", image);
	return gg_err_set(err, GG_EUSAGE, "'%s': no such file here (an image on the node: node:%s)",
			  image, image);
}

/* Whether a regular file says it is a SIF (its magic at byte 32). */
static int sif_magic(const char *path)
{
	char buf[42] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf, 0) : -1;
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof buf && !memcmp(buf + 32, "SIF_MAGIC", 9);
}

/* A SIF image: checked whole (its partition's offset into q). */
static int local_sif(struct gg_job_spec *q, const char *path, struct gg_dev_gpu *dev,
		     struct gg_err *err)
{
	int64_t off = 0;
	int rc = gg_job_image_check(path, &off, dev, err);
	if (rc < 0)
		return gg_err_prefix(err, "'%s'", path);
	rc = gg_job_spec_set_image(q, path, err);
	return rc ? rc : gg_job_spec_set_part_offset(q, off, err);
}

/* The freezer's refusal, as what to run instead (a usage error: nothing
 * was sent). An interruption, no memory and a write that failed (a full
 * disk under the cache) stay what they are: the input is not at fault. */
static int freeze_refused(const char *image, int rc, struct gg_err *err)
{
	if (rc == GG_EINTR || rc == GG_ENOMEM || rc == GG_EIO)
		return gg_err_prefix(err, "freezing '%s'", image);
	char *sif = sif_name(image);
	char msg[sizeof err->msg];
	snprintf(msg, sizeof msg, "%s", err->msg);
	rc = gg_err_set(err, GG_EUSAGE,
			"'%s' cannot be frozen on the fly (%s): run 'gridgpu freeze %s -o %s' "
			"(see gridgpu-freeze(1) for --format, --skip-unreadable), then submit %s",
			image, msg, image, sif ? sif : "IMAGE.sif", sif ? sif : "IMAGE.sif");
	free(sif);
	return rc;
}

/* Any other image here: the cached SIF of it as it is now, frozen first
 * unless the cache has it whole (a dry run freezes nothing). */
static int frozen(struct gg_job_spec *q, const char *image, int dry_run,
		  const struct gg_image_callbacks *cb, enum gg_job_image_how *how,
		  struct gg_freeze_result *res, struct gg_err *err)
{
	char *path = NULL;
	int rc = gg_job_image_cache_path(image, !dry_run, &path, err);
	struct gg_err e = {0};
	int64_t off = 0;
	if (rc == 0 && access(path, R_OK) == 0 && gg_job_image_check(path, &off, NULL, &e) == 0) {
		*how = GG_JOB_IMAGE_CACHED;
		if (!dry_run && utimensat(AT_FDCWD, path, NULL, 0) == 0)
			prune(path);
	} else if (rc == 0 && dry_run)
		*how = GG_JOB_IMAGE_TO_FREEZE;
	else if (rc == 0) {
		struct gg_freeze_opts o = {
			.source = image, .output = path, .force = 1, .tool_version = GG_VERSION};
		if ((rc = gg_image_freeze(&o, cb, res, err)) < 0)
			rc = freeze_refused(image, rc, err);
		else if ((rc = gg_job_image_check(path, &off, NULL, err)) == 0) {
			*how = GG_JOB_IMAGE_FROZEN;
			prune(path);
		}
	}
	if (rc == 0)
		rc = gg_job_spec_set_image(q, path, err);
	if (rc == 0)
		rc = gg_job_spec_set_part_offset(q, off, err);
	free(path);
	return rc;
}

int gg_job_image_prepare(struct gg_job_spec *q, const char *image, int dry_run,
			 const struct gg_image_callbacks *cb, struct gg_dev_gpu *dev,
			 enum gg_job_image_how *how, struct gg_freeze_result *res,
			 struct gg_err *err)
{
	struct gg_freeze_result ignored;
	struct gg_err own = {0};
	if (!res)
		res = &ignored;
	if (!err) /* the messages are read here (err->msg): one of our own */
		err = &own;
	memset(res, 0, sizeof *res);
	*how = 0;
	if (!strncmp(image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK))) {
		if (dev)
			return gg_err_set(err, GG_EUSAGE,
					  "--match-dev-gpu: '%s' is on the node: its provenance "
					  "cannot be read here (give --min-capability or "
					  "--min-gpu-memory)",
					  image);
		int rc = node_image(q, image, err);
		*how = rc ? 0 : GG_JOB_IMAGE_NODE;
		return rc ? rc : gg_job_spec_set_part_offset(q, 0, err);
	}
	struct stat st;
	if (stat(image, &st) < 0)
		return not_here(image, errno, err);
	if (access(image, R_OK) < 0)
		return gg_err_sys(err, GG_EIO, errno, "'%s'", image);
	if (S_ISREG(st.st_mode) && (has_suffix(image, "sif") || sif_magic(image))) {
		int rc = local_sif(q, image, dev, err);
		*how = rc ? 0 : GG_JOB_IMAGE_SIF;
		return rc;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return gg_err_set(err, GG_EUSAGE, "'%s': not a file or a directory", image);
	if (dev)
		return gg_err_set(err, GG_EUSAGE,
				  "--match-dev-gpu: '%s' is not a SIF frozen where it was "
				  "developed: it records no GPU (give --min-capability or "
				  "--min-gpu-memory)",
				  image);
	return frozen(q, image, dry_run, cb, how, res, err);
}

const char *gg_job_spec_image(const struct gg_job_spec *q)
{
	return q->image;
}

int gg_job_spec_arch(const struct gg_job_spec *q, char arch[16])
{
	arch[0] = '\0';
	if (!q->image || !strncmp(q->image, GG_IMAGE_NODE_MARK, strlen(GG_IMAGE_NODE_MARK)))
		return 0;
	return gg_image_sif_arch(q->image, arch);
}
