/* free and realloc that wipe what a block held before giving it back. */
#include "core/core.h"
#include "compat/compat.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void gg_wipe_free(void *p)
{
	if (p) {
		OPENSSL_cleanse(p, gg_compat_alloc_size(p));
		free(p);
	}
}

void *gg_wipe_realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	if (n == 0) {
		gg_wipe_free(p);
		return NULL;
	}
	size_t old = gg_compat_alloc_size(p);
	if (n <= old)
		return p;
	if (old == 0) /* its size unknown here (compat.h): not wiped */
		return realloc(p, n);
	void *q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old);
	gg_wipe_free(p);
	return q;
}
