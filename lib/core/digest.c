/* SHA-256 as lower-case hex, of bytes or of a file (OpenSSL's EVP): the names of
 * the caches that hold a thing under what it is. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/core.h"

static void to_hex(const unsigned char *md, unsigned int n, char out[GG_SHA256_HEX])
{
	for (unsigned int i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int gg_sha256_hex(const void *data, size_t len, char out[GG_SHA256_HEX], struct gg_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL))
		return gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	to_hex(md, n, out);
	return 0;
}

int gg_sha256_file(const char *path, char out[GG_SHA256_HEX], struct gg_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gg_err_sys(err, GG_EIO, errno, "'%s'", path);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL)
			 ? 0
			 : gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	char buf[1 << 16];
	ssize_t r;
	while (rc == 0 && ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0 && !EVP_DigestUpdate(md, buf, (size_t)r))
			rc = gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	if (rc == 0 && r < 0)
		rc = gg_err_sys(err, GG_EIO, errno, "reading '%s'", path);
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (rc == 0 && !EVP_DigestFinal_ex(md, d, &n))
		rc = gg_err_set(err, GG_EFAIL, "SHA-256 failed");
	if (rc == 0)
		to_hex(d, n, out);
	EVP_MD_CTX_free(md);
	close(fd);
	return rc;
}
