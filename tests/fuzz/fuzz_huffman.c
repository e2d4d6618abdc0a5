/* gg_huffman_zlib, the Huffman-only deflate coder that freeze uses on blocks of file
 * contents. For any bytes: a result fits the room it was given, is smaller than the
 * input, inflates (libdeflate) back to exactly the input, and the same input gives the
 * same stream again. The first byte of the input picks how much room the coder gets
 * (short of its own need, or enough). */
#include <libdeflate.h>

#include "fuzz.h"
#include "image/image.h"

FUZZ_TARGET(huffman)
{
	if (size < 1)
		return 0;
	size_t room = (size_t)data[0] * 4, n = size - 1;
	const uint8_t *in = data + 1;
	struct gg_huffman *h = gg_huffman_new();
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	uint8_t *out = malloc(room + n + 64), *again = malloc(room + n + 64), *back = malloc(n + 1);
	FUZZ_CHECK(h && d && out && again && back, "out of memory");
	size_t len = gg_huffman_zlib(h, in, n, out, room);
	FUZZ_CHECK(len == 0 || (len < n && len + 8 <= room), "%zu bytes of %zu in %zu", len, n,
		   room);
	size_t full = gg_huffman_zlib(h, in, n, again, n + 64);
	FUZZ_CHECK(!len || (full == len && memcmp(out, again, len) == 0), "not the same stream");
	if (full) {
		size_t got = 0;
		int rc = libdeflate_zlib_decompress(d, again, full, back, n, &got);
		FUZZ_CHECK(rc == LIBDEFLATE_SUCCESS && got == n && memcmp(back, in, n) == 0,
			   "the stream does not inflate to the input");
	}
	free(out);
	free(again);
	free(back);
	libdeflate_free_decompressor(d);
	gg_huffman_free(h);
	return 0;
}
