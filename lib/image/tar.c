/* The tar reader (docker export, tar of a sandbox; plain or compressed, from a file or a
 * pipe): entries are applied to the tree as they come and their data streamed straight
 * into the squashfs, so nothing is unpacked to disk. The stream's SHA-256 goes into the
 * provenance. Entries are converted by archive.c, as for the OCI reader. */
#include "image/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#define TAR_BUF (256u << 10)
/* After the end-of-archive marker a stream may carry padding (tar's blocking factor,
 * at most a few hundred KiB with any tar in use): it is read and hashed up to this
 * much; more is an error, so that endless input (/dev/zero) cannot run forever. */
#define TRAILING_MAX (1u << 20)

/* ---- the stream ------------------------------------------------------------------- */

struct tar_in {
	struct gg_feed *fz;
	int fd;
	EVP_MD_CTX *md;
	unsigned char *buf;
	uint64_t consumed;
};

static la_ssize_t tar_read(struct archive *a, void *ud, const void **out)
{
	struct tar_in *in = ud;
	for (;;) {
		if (gg_image_check_cancel(in->fz, NULL) < 0) {
			archive_set_error(a, EINTR, "interrupted");
			return -1;
		}
		ssize_t n = read(in->fd, in->buf, TAR_BUF);
		if (n < 0 && errno == EINTR) {
			/* a signal: stop here if it asked us to, else read on */
			if (gg_image_check_cancel(in->fz, NULL) < 0) {
				archive_set_error(a, EINTR, "interrupted");
				return -1;
			}
			continue;
		}
		if (n < 0) {
			archive_set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		if (n > 0) {
			EVP_DigestUpdate(in->md, in->buf, (size_t)n);
			in->consumed += (uint64_t)n;
			gg_image_progress_input(in->fz, in->consumed);
		}
		*out = in->buf;
		return n;
	}
}

/* Hash the rest of the stream (padding after the end marker), at most TRAILING_MAX. */
static int hash_trailing(struct tar_in *in, const char *what, struct gg_err *err)
{
	uint64_t trailing = 0;
	for (;;) {
		if (gg_image_check_cancel(in->fz, err) < 0)
			return err->code;
		ssize_t n = read(in->fd, in->buf, TAR_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		trailing += (uint64_t)n;
		if (trailing > TRAILING_MAX)
			return gg_err_set(err, GG_EFAIL,
					  "reading %s: more than %u KiB after the end of the tar "
					  "archive (not one tar stream?)",
					  what, TRAILING_MAX >> 10);
		EVP_DigestUpdate(in->md, in->buf, (size_t)n);
		in->consumed += (uint64_t)n;
		gg_image_progress_input(in->fz, in->consumed);
	}
}

int gg_image_read_tar(struct gg_feed *fz, int fd, const char *name, char **digest,
		      struct gg_err *err)
{
	*digest = NULL;
	char what[512];
	snprintf(what, sizeof what, "'%s'", name);
	struct tar_in in = {.fz = fz, .fd = fd};
	struct gg_entry_buf eb;
	memset(&eb, 0, sizeof eb);
	in.md = EVP_MD_CTX_new();
	in.buf = malloc(TAR_BUF);
	struct archive *a = gg_image_tar_reader();
	int rc = 0;
	if (!in.md || !in.buf || !a || EVP_DigestInit_ex(in.md, EVP_sha256(), NULL) != 1) {
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		goto out;
	}
	if (archive_read_open(a, &in, NULL, tar_read, NULL) != ARCHIVE_OK) {
		const char *m = archive_error_string(a);
		if (in.consumed == 0)
			m = "empty input";
		else if (archive_errno(a) == EILSEQ || !m) /* libarchive's FILE_FORMAT on Linux */
			m = "not a tar archive, plain or compressed (gzip, bzip2, xz, zstd, "
			    "lz4): freeze takes a directory, a tar or an OCI image";
		rc = gg_err_set(err, GG_EFAIL, "reading %s: %s", what, m);
		if (gg_image_check_cancel(fz, err) < 0)
			rc = err->code;
		goto out;
	}
	struct gg_tree *t = gg_image_feed_tree(fz);
	uint64_t entries = 0;
	for (;;) {
		struct archive_entry *ae;
		int r = archive_read_next_header(a, &ae);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_WARN) {
			if (gg_image_archive_warning_matters(archive_error_string(a)))
				gg_image_warn(fz, "%s: %s", what, archive_error_string(a));
		} else if (r != ARCHIVE_OK) {
			const char *m = archive_error_string(a);
			rc = gg_err_set(err, GG_EFAIL, "reading %s: %s", what,
					m ? m : "not a tar archive");
			if (entries == 0 && in.consumed == 0)
				rc = gg_err_set(err, GG_EFAIL, "reading %s: empty input", what);
			if (gg_image_check_cancel(fz, err) < 0)
				rc = err->code;
			goto out;
		}
		entries++;
		if ((rc = gg_image_check_cancel(fz, err)) < 0)
			goto out;
		if ((rc = gg_image_entry_from_archive(fz, ae, &eb, what, err)) < 0)
			goto out;
		struct gg_inode *data;
		if ((rc = gg_image_tree_apply(t, &eb.e, 0, 0, &data, err)) < 0) {
			gg_err_prefix(err, "%s", what);
			goto out;
		}
		if (data &&
		    (rc = gg_image_feed_archive_data(fz, a, data, eb.e.path, what, err)) < 0)
			goto out;
	}
	if ((rc = hash_trailing(&in, what, err)) < 0)
		goto out;
	unsigned char md[32];
	unsigned mdlen = 0;
	EVP_DigestFinal_ex(in.md, md, &mdlen);
	char hex[65];
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	*digest = gg_strdup_printf("sha256:%s", hex);
out:
	gg_image_entry_buf_free(&eb);
	if (a)
		archive_read_free(a);
	EVP_MD_CTX_free(in.md);
	free(in.buf);
	return rc;
}
