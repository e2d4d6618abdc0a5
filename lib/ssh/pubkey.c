/* OpenSSH public key lines: checks and fingerprints (OpenSSL for base64/SHA-256). */
#include "ssh/ssh.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

static const char *const key_types[] = {
	"ssh-ed25519",         "ssh-rsa",
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
	"ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
};

/* Decode the base64 field; returns the blob length or -1. */
static int decode_blob(const char *b64, size_t n, unsigned char **out)
{
	if (n == 0 || n % 4 || n > 16384)
		return -1;
	unsigned char *buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -1;
	int len = EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)n);
	if (len < 0) {
		free(buf);
		return -1;
	}
	/* EVP_DecodeBlock counts padding bytes as data: remove them. */
	if (b64[n - 1] == '=')
		len--;
	if (b64[n - 2] == '=')
		len--;
	*out = buf;
	return len;
}

static int split(const char *line, const char **type, size_t *tlen, const char **b64, size_t *blen)
{
	const char *p = line;
	*type = p;
	while (*p && *p != ' ')
		p++;
	*tlen = (size_t)(p - *type);
	if (*p != ' ')
		return -1;
	while (*p == ' ')
		p++;
	*b64 = p;
	while (*p && *p != ' ' && *p != '\n')
		p++;
	*blen = (size_t)(p - *b64);
	/* the rest is a comment: printable, no newline inside */
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 && !(*p == '\n' && p[1] == '\0'))
			return -1;
	return 0;
}

int gg_ssh_pubkey_check(const char *line, struct gg_err *err)
{
	const char *type, *b64;
	size_t tlen, blen;
	if (split(line, &type, &tlen, &b64, &blen) < 0)
		return gg_err_set(err, GG_EPROTO, "not an OpenSSH public key line");
	int known = 0;
	for (size_t i = 0; i < sizeof key_types / sizeof key_types[0]; i++)
		known |= strlen(key_types[i]) == tlen && !strncmp(key_types[i], type, tlen);
	if (!known)
		return gg_err_set(err, GG_EPROTO, "unknown key type '%.*s'",
				  (int)(tlen > 40 ? 40 : tlen), type);
	unsigned char *blob;
	int n = decode_blob(b64, blen, &blob);
	if (n < 0)
		return gg_err_set(err, GG_EPROTO, "the key is not valid base64");
	/* The blob starts with string(type): uint32 length, then the bytes. */
	int ok = n >= 4;
	if (ok) {
		uint32_t l = (uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 |
			     (uint32_t)blob[2] << 8 | blob[3];
		ok = l == tlen && (size_t)n >= 4 + l && !memcmp(blob + 4, type, tlen) &&
		     (size_t)n > 4 + l + 4;
	}
	free(blob);
	if (!ok)
		return gg_err_set(err, GG_EPROTO, "the key blob does not match its type");
	return 0;
}

int gg_ssh_fingerprint(const char *line, char *out, size_t len, struct gg_err *err)
{
	int rc = gg_ssh_pubkey_check(line, err);
	if (rc < 0)
		return rc;
	const char *type, *b64;
	size_t tlen, blen;
	split(line, &type, &tlen, &b64, &blen);
	unsigned char *blob, md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	int n = decode_blob(b64, blen, &blob);
	if (n < 0 || !EVP_Digest(blob, (size_t)n, md, &mdlen, EVP_sha256(), NULL)) {
		if (n >= 0)
			free(blob);
		return gg_err_set(err, GG_EFAIL, "hashing the key failed");
	}
	free(blob);
	unsigned char enc[64];
	int el = EVP_EncodeBlock(enc, md, (int)mdlen);
	while (el > 0 && enc[el - 1] == '=') /* ssh-keygen drops the padding */
		el--;
	snprintf(out, len, "SHA256:%.*s", el, enc);
	return 0;
}

int gg_ssh_identity_check(const char *path, struct gg_err *err)
{
	char *pub = gg_strdup_printf("%s.pub", path);
	if (!pub)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	int rc = access(pub, R_OK) == 0
			 ? 0
			 : gg_err_set(err, GG_EUSAGE, "--identity: no public key '%s' beside it",
				      pub);
	free(pub);
	return rc;
}
