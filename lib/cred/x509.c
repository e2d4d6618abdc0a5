/* X.509 names and times as lib/cred shows them, and a credential's end: the helpers
 * both loading (load.c) and inspecting (info.c) use, so that neither needs the other. */
#include "cred/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gg_cred_name_str(const X509_NAME *name)
{
	char *s = X509_NAME_oneline(name, NULL, 0);
	if (!s)
		return NULL;
	char *r = strdup(s);
	OPENSSL_free(s);
	return r;
}

int gg_cred_asn1_time(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;
	if (!t || !ASN1_TIME_to_tm(t, &tm))
		return -1;
	*out = timegm(&tm);
	return 0;
}

char *gg_cred_time_str(time_t t, char *buf, size_t len)
{
	return gg_time_local((int64_t)t, buf, len);
}

time_t gg_cred_end(const struct gg_cred *c)
{
	time_t end = 0, t;
	if (c->cert && gg_cred_asn1_time(X509_get0_notAfter(c->cert), &t) == 0)
		end = t;
	for (int i = 0; i < sk_X509_num(c->chain); i++)
		if (gg_cred_asn1_time(X509_get0_notAfter(sk_X509_value(c->chain, i)), &t) == 0 &&
		    (end == 0 || t < end))
			end = t;
	return end;
}
