/* The connection keeper's frames (lib/http/keep.c): what a command and the
 * keeper send each other over the keeper's socket. Both are the user's own
 * processes, but the keeper is a parser that lives long and reads any local
 * connection of its user: a frame is split into at most GG_KEEP_MAX_FIELDS
 * fields, each inside the buffer and NUL-terminated, and one it takes is built
 * again to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http/keep.h"

FUZZ_TARGET(keep)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct gg_keep_frame f;
	if (gg_keep_parse(buf, size, &f) == 0) {
		FUZZ_CHECK(f.n <= GG_KEEP_MAX_FIELDS, "%zu fields", f.n);
		for (size_t i = 0; i < f.n; i++)
			if (f.v[i]) {
				FUZZ_CHECK(f.v[i] >= buf && f.v[i] + f.len[i] < buf + size,
					   "field %zu outside the buffer", i);
				FUZZ_CHECK(f.v[i][f.len[i]] == '\0', "field %zu not terminated", i);
			}
		size_t len = 0;
		char *again = gg_keep_build(f.n, f.v, f.len, &len);
		FUZZ_CHECK(again && len == size + 8 && !memcmp(again + 8, data, size),
			   "a frame taken is not built again to its bytes");
		free(again);
	}
	int64_t v;
	if (size && !memchr(data, 0, size) && size < 64) {
		char s[64];
		memcpy(s, data, size);
		s[size] = '\0';
		gg_keep_num(s, &v);
	}
	free(buf);
	return 0;
}
