/* free and realloc that wipe what a block held before giving it back. */
#include "core/core.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

void gg_wipe_free(void *p)
{
	if (p) {
		explicit_bzero(p, malloc_usable_size(p));
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
	size_t old = malloc_usable_size(p);
	if (n <= old)
		return p;
	void *q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old);
	gg_wipe_free(p);
	return q;
}
