/* libarchive entries -> struct gg_entry, and an entry's data -> the feed: shared by the
 * tar reader (tar.c) and the OCI reader (oci.c), so that neither reader calls the other. */
#include "image/internal.h"

#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

static uint32_t encode_dev(unsigned maj, unsigned min)
{
	return (min & 0xff) | (maj << 8) | ((min & ~0xffu) << 12);
}

void gg_image_entry_buf_free(struct gg_entry_buf *b)
{
	free(b->path);
	free(b->hardlink);
	gg_image_xattr_free(&b->xattrs);
	memset(b, 0, sizeof *b);
}

static char *clean_dup(const char *in, struct gg_err *err)
{
	char *out = malloc(strlen(in) + 1);
	if (!out) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	if (gg_image_path_clean(in, out, err) < 0) {
		free(out);
		return NULL;
	}
	return out;
}

int gg_image_entry_from_archive(struct gg_feed *fz, struct archive_entry *ae,
				struct gg_entry_buf *b, const char *what, struct gg_err *err)
{
	gg_image_entry_buf_free(b);
	/* UTF-8 names as stored (pax), whatever the locale; raw bytes otherwise */
	const char *name = archive_entry_pathname_utf8(ae);
	if (!name)
		name = archive_entry_pathname(ae);
	if (!name)
		return gg_err_set(err, GG_EFAIL, "%s: an entry without a name", what);
	if (!(b->path = clean_dup(name, err)))
		return gg_err_prefix(err, "%s", what);
	struct gg_entry *e = &b->e;
	memset(e, 0, sizeof *e);
	e->path = b->path;
	const char *hl = archive_entry_hardlink_utf8(ae);
	if (!hl)
		hl = archive_entry_hardlink(ae);
	if (hl) {
		if (!(b->hardlink = clean_dup(hl, err)))
			return gg_err_prefix(err, "%s: entry '%s': hard link", what, name);
		e->hardlink = b->hardlink;
		return 0;
	}
	unsigned type = archive_entry_filetype(ae);
	switch (type) {
	case AE_IFREG:
	case AE_IFDIR:
	case AE_IFLNK:
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFIFO:
	case AE_IFSOCK: break;
	default:
		return gg_err_set(err, GG_EFAIL, "%s: entry '%s': unsupported type (0%o)", what,
				  name, type);
	}
	e->mode = type | (archive_entry_perm(ae) & 07777);
	la_int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	if (uid < 0 || uid > (la_int64_t)UINT32_MAX || gid < 0 || gid > (la_int64_t)UINT32_MAX)
		return gg_err_set(err, GG_EFAIL, "%s: entry '%s': owner %lld:%lld out of range",
				  what, name, (long long)uid, (long long)gid);
	e->uid = (uint32_t)uid;
	e->gid = (uint32_t)gid;
	e->mtime = archive_entry_mtime(ae);
	if (type == AE_IFCHR || type == AE_IFBLK)
		e->rdev = encode_dev((unsigned)archive_entry_rdevmajor(ae),
				     (unsigned)archive_entry_rdevminor(ae));
	if (type == AE_IFLNK) {
		e->symlink = archive_entry_symlink_utf8(ae);
		if (!e->symlink)
			e->symlink = archive_entry_symlink(ae);
		if (!e->symlink)
			return gg_err_set(err, GG_EFAIL,
					  "%s: entry '%s': symbolic link without a target", what,
					  name);
	}
	la_int64_t size = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : 0;
	e->size = size > 0 && type == AE_IFREG ? (uint64_t)size : 0;

	const char *xn;
	const void *xv;
	size_t xl;
	archive_entry_xattr_reset(ae);
	while (archive_entry_xattr_next(ae, &xn, &xv, &xl) == ARCHIVE_OK) {
		if (!gg_image_xattr_supported(xn)) {
			gg_image_warn(fz,
				      "%s: entry '%s': extended attribute '%s' left out (squashfs "
				      "keeps only user., trusted. and security.)",
				      what, name, xn);
			continue;
		}
		if (gg_image_xattr_add(&b->xattrs, xn, xv, xl) < 0)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (gg_image_xattr_sort(&b->xattrs) < 0)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	e->xattrs = b->xattrs.buf;
	e->xattrs_len = b->xattrs.len;
	return 0;
}

int gg_image_feed_archive_data(struct gg_feed *fz, struct archive *a, struct gg_inode *ino,
			       const char *path, const char *what, struct gg_err *err)
{
	if (gg_image_feed_begin(fz, ino, path, err) < 0)
		return err->code;
	uint64_t expect = 0;
	for (;;) {
		if (gg_image_check_cancel(fz, err) < 0)
			return err->code;
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_WARN) {
			if (gg_image_archive_warning_matters(archive_error_string(a)))
				gg_image_warn(fz, "%s: entry '%s': %s", what, path,
					      archive_error_string(a));
		} else if (r != ARCHIVE_OK) {
			if (gg_image_check_cancel(fz, err) < 0)
				return err->code;
			const char *m = archive_error_string(a);
			return gg_err_set(err, GG_EFAIL, "%s: entry '%s': %s", what, path,
					  m ? m : "read error");
		}
		if (off < 0 || (uint64_t)off < expect)
			return gg_err_set(err, GG_EFAIL, "%s: entry '%s': bad sparse map", what,
					  path);
		if ((uint64_t)off > expect &&
		    gg_image_feed_hole(fz, (uint64_t)off - expect, err) < 0)
			return gg_err_prefix(err, "%s: entry '%s'", what, path);
		if (len && gg_image_feed_data(fz, buf, len, err) < 0)
			return err->code;
		expect = (uint64_t)off + len;
	}
	if (expect < ino->size && gg_image_feed_hole(fz, ino->size - expect, err) < 0)
		return gg_err_prefix(err, "%s: entry '%s'", what, path); /* ends in a hole */
	return gg_image_feed_end(fz, err);
}

/* A reader of tar (plain or GNU) in the compressions a tar or layer may come in.
 * Listed rather than "all": libarchive would run external programs (lrzip, grzip,
 * ...) for some others. */
struct archive *gg_image_tar_reader(void)
{
	struct archive *a = archive_read_new();
	if (!a)
		return NULL;
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_lzma(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_lz4(a);
	archive_read_support_filter_compress(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	return a;
}

/* libarchive warns when a UTF-8 name cannot be shown in the current locale; the name
 * is taken as UTF-8 anyway, so that one is not worth a warning. */
int gg_image_archive_warning_matters(const char *msg)
{
	return !msg || !strstr(msg, "can't be converted");
}
