/* The state of a CA directory (what `gridgpu doctor` reports): its hashed CA certificates
 * and CRLs, the ones expired, about to expire or due for renewal; and OpenSSL's legacy
 * provider, for old PKCS#12 files. */
#include "cred/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/provider.h>

/* "<8 hex>.<digits>" for certificates, "<8 hex>.r<digits>" for CRLs. */
static int is_hashed(const char *name, int crl)
{
	size_t i = 0;
	for (; i < 8; i++)
		if (!strchr("0123456789abcdef", name[i]) || !name[i])
			return 0;
	if (name[8] != '.')
		return 0;
	const char *p = name + 9;
	if (crl && *p++ != 'r')
		return 0;
	if (!*p)
		return 0;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

/* A time of a certificate or CRL, 0 when absent or unreadable. */
static time_t when(const ASN1_TIME *t)
{
	time_t out = 0;
	return gg_cred_asn1_time(t, &out) == 0 ? out : 0;
}

static void note_cert(struct gg_ca_dir_status *s, FILE *f, const char *name)
{
	X509 *c = PEM_read_X509(f, NULL, NULL, NULL);
	if (!c)
		return;
	s->certs++;
	time_t end = when(X509_get0_notAfter(c));
	if (end && end < s->soon) {
		end < s->now ? s->expired++ : s->expiring++;
		if (!s->bad_name) {
			s->bad_name = gg_cred_name_str(X509_get_subject_name(c));
			if (!s->bad_name)
				s->bad_name = strdup(name);
			s->bad_end = end;
		}
	}
	X509_free(c);
}

static void note_crl(struct gg_ca_dir_status *s, FILE *f, const char *name)
{
	X509_CRL *c = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	if (!c)
		return;
	s->crls++;
	time_t next = when(X509_CRL_get0_nextUpdate(c));
	if (next && next < s->now) {
		s->stale++;
		if (!s->stale_name) {
			s->stale_name = strdup(name);
			s->stale_next = next;
		}
	}
	X509_CRL_free(c);
}

/* hash.0 and hash.1 may name the same file (old and new subject hashes): each is read
 * once. 1 when the file was seen before. */
static int seen_before(ino_t *seen, size_t *nseen, size_t max, ino_t ino)
{
	for (size_t i = 0; i < *nseen; i++)
		if (seen[i] == ino)
			return 1;
	if (*nseen < max)
		seen[(*nseen)++] = ino;
	return 0;
}

int gg_ca_dir_check(const char *dir, time_t now, time_t soon, struct gg_ca_dir_status *out,
		    struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	out->now = now ? now : time(NULL);
	out->soon = soon;
	DIR *d = opendir(dir);
	if (!d)
		return gg_err_sys(err, GG_ECRED, errno, "%s", dir);
	ino_t seen[512];
	size_t nseen = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int cert = is_hashed(e->d_name, 0), crl = !cert && is_hashed(e->d_name, 1);
		if (!cert && !crl)
			continue;
		char *p = gg_strdup_printf("%s/%s", dir, e->d_name);
		struct stat sb;
		if (!p || stat(p, &sb) < 0 ||
		    seen_before(seen, &nseen, sizeof seen / sizeof seen[0], sb.st_ino)) {
			free(p);
			continue;
		}
		FILE *f = fopen(p, "r");
		free(p);
		if (!f)
			continue;
		if (cert)
			note_cert(out, f, e->d_name);
		else
			note_crl(out, f, e->d_name);
		fclose(f);
	}
	closedir(d);
	return 0;
}

void gg_ca_dir_status_clear(struct gg_ca_dir_status *s)
{
	if (!s)
		return;
	free(s->bad_name);
	free(s->stale_name);
	memset(s, 0, sizeof *s);
}

/* ---- OpenSSL's legacy provider ------------------------------------------------------ */

int gg_cred_legacy_load(struct ossl_provider_st **prov, struct gg_err *err)
{
	if (*prov)
		return 0;
	if ((*prov = OSSL_PROVIDER_try_load(NULL, "legacy", 1)))
		return 0;
	ERR_clear_error();
	return gg_err_set(err, GG_ECRED,
			  "OpenSSL's legacy provider is not available: PKCS#12 files encrypted "
			  "with RC2 cannot be read");
}

void gg_cred_legacy_unload(struct ossl_provider_st *prov)
{
	if (prov)
		OSSL_PROVIDER_unload(prov);
}
