/* Unit tests of lib/image/huffman.c: the Huffman-only deflate coder writes zlib streams
 * that both zlib (libsquashfs' gzip decompressor) and libdeflate inflate back to the
 * input, for any distribution of bytes: one value, two, skewed ones whose best code is
 * deeper than deflate's 15 bits, halves that want different codes, odd lengths. It
 * says 0 when the result would not be smaller or would not fit, and is a pure function
 * of the bytes. */
#include "unit.h"

#include <libdeflate.h>
#include <sqfs/compressor.h>

#include "image/image.h"

#define N 131072

struct fixture {
	struct gg_huffman *h;
	sqfs_compressor_t *zlib;
	struct libdeflate_decompressor *ld;
	uint8_t *in, *out, *back;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	sqfs_compressor_config_t cfg;
	if (!f || sqfs_compressor_config_init(&cfg, SQFS_COMP_GZIP, N, SQFS_COMP_FLAG_UNCOMPRESS) ||
	    sqfs_compressor_create(&cfg, &f->zlib))
		return -1;
	f->h = gg_huffman_new();
	f->ld = libdeflate_alloc_decompressor();
	f->in = malloc(N + 16);
	f->out = malloc(2 * N);
	f->back = malloc(N + 16);
	*state = f;
	return f->h && f->ld && f->in && f->out && f->back ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	gg_huffman_free(f->h);
	sqfs_destroy(f->zlib);
	libdeflate_free_decompressor(f->ld);
	free(f->in);
	free(f->out);
	free(f->back);
	free(f);
	return 0;
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/* Codes f->in[0..n), checks both inflaters give it back; the coded length (not 0). */
static size_t round_trip(struct fixture *f, size_t n)
{
	size_t len = gg_huffman_zlib(f->h, f->in, n, f->out, 2 * N);
	assert_true(len > 0 && len < n);
	assert_int_equal(f->out[0], 0x78);
	assert_int_equal((f->out[0] << 8 | f->out[1]) % 31, 0);
	size_t got = 0;
	memset(f->back, 0xAA, n);
	assert_int_equal(libdeflate_zlib_decompress(f->ld, f->out, len, f->back, N, &got),
			 LIBDEFLATE_SUCCESS);
	assert_int_equal(got, n);
	assert_memory_equal(f->back, f->in, n);
	memset(f->back, 0x55, n);
	assert_int_equal(f->zlib->do_block(f->zlib, f->out, (sqfs_u32)len, f->back, N),
			 (sqfs_s32)n);
	assert_memory_equal(f->back, f->in, n);
	return len;
}

/* Bytes of a few values, with counts far apart, code in few bits; one value alone too
 * (a code of two symbols, end-of-block and it); odd lengths leave the 3-at-a-time loop
 * a remainder of 1 and 2. */
static void test_skewed(void **state)
{
	struct fixture *f = *state;
	uint64_t x = 1;
	for (size_t i = 0; i < N; i++) {
		uint64_t r = next(&x) >> 40;
		f->in[i] = (uint8_t)(r % 16 == 0 ? r >> 8 : r % 4);
	}
	size_t len = round_trip(f, N);
	assert_true(len < N / 2); /* about 2.7 bits per byte */
	static const size_t odd[] = {1, 2, 3, 4, 5, 1000, 16385, N - 1};
	for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++)
		if (odd[k] > 20)
			round_trip(f, odd[k]);
		else
			assert_int_equal(gg_huffman_zlib(f->h, f->in, odd[k], f->out, 2 * N), 0);
	memset(f->in, 'a', N);
	len = round_trip(f, N);
	assert_true(len < N / 7); /* one bit per byte */
	for (size_t i = 0; i < N; i++)
		f->in[i] = (uint8_t)(next(&x) >> 63 ? 'a' : 'z');
	round_trip(f, N);
}

/* Counts like the Fibonacci numbers make the optimal code as deep as there are
 * symbols (24 here): the coder must cut it to 15 bits, or the inflaters refuse. */
static void test_deep_code(void **state)
{
	struct fixture *f = *state;
	size_t n = 0;
	uint32_t a = 1, b = 1;
	for (int s = 0; s < 25 && n < N; s++) {
		for (uint32_t k = 0; k < a && n < N; k++)
			f->in[n++] = (uint8_t)s;
		uint32_t c = a + b;
		a = b;
		b = c;
	}
	uint64_t x = 7;
	for (size_t i = n; i > 1; i--) { /* shuffled, so a run does not help anything */
		size_t j = (size_t)(next(&x) % i);
		uint8_t t = f->in[i - 1];
		f->in[i - 1] = f->in[j];
		f->in[j] = t;
	}
	size_t len = round_trip(f, n);
	assert_true(len < n * 3 / 8); /* the entropy is 2.71 bits per byte */
}

/* Halves of different bytes want different codes: two blocks (4 bits per byte and a
 * little for end-of-block's code) beat one (5 bits). */
static void test_parts(void **state)
{
	struct fixture *f = *state;
	uint64_t x = 3;
	for (size_t i = 0; i < N; i++)
		f->in[i] = (uint8_t)((i < N / 2 ? 0 : 240) + (next(&x) >> 60));
	size_t len = round_trip(f, N);
	assert_true(len < N / 2 + N / 16);
	assert_true(len > N / 2);
}

/* Random bytes cannot shrink: 0, and nothing is written past outsize - 8. A result
 * that fits with 8 bytes to spare is written; one byte less and the answer is 0. */
static void test_no_gain_no_room(void **state)
{
	struct fixture *f = *state;
	uint64_t x = 5;
	for (size_t i = 0; i < N; i++)
		f->in[i] = (uint8_t)(next(&x) >> 56);
	assert_int_equal(gg_huffman_zlib(f->h, f->in, N, f->out, 2 * N), 0);
	for (size_t i = 0; i < N; i++)
		f->in[i] &= 0x7F; /* 7 bits per byte */
	size_t len = round_trip(f, N);
	memset(f->out, 0xEE, 2 * N);
	assert_int_equal(gg_huffman_zlib(f->h, f->in, N, f->out, len + 7), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(f->out[i], 0xEE);
	assert_int_equal(gg_huffman_zlib(f->h, f->in, N, f->out, len + 8), len);
	for (size_t i = len + 8; i < 2 * N; i++)
		assert_int_equal(f->out[i], 0xEE);
}

/* The same bytes give the same stream, whatever the coder coded before (its scratch
 * is reused), and a change of one byte is seen. Past 4 MiB the answer is 0. */
static void test_pure(void **state)
{
	struct fixture *f = *state;
	uint64_t x = 9;
	for (size_t i = 0; i < N; i++)
		f->in[i] = (uint8_t)(next(&x) >> 58);
	size_t len = round_trip(f, N);
	uint8_t *first = malloc(len);
	assert_non_null(first);
	memcpy(first, f->out, len);
	memset(f->in, 'q', N / 2);
	round_trip(f, N / 2);
	x = 9;
	for (size_t i = 0; i < N; i++)
		f->in[i] = (uint8_t)(next(&x) >> 58);
	assert_int_equal(gg_huffman_zlib(f->h, f->in, N, f->out, 2 * N), len);
	assert_memory_equal(f->out, first, len);
	f->in[N / 3] ^= 1;
	size_t len2 = gg_huffman_zlib(f->h, f->in, N, f->out, 2 * N);
	assert_true(len2 != len || memcmp(f->out, first, len) != 0);
	free(first);
	size_t big = (4u << 20) + 1;
	uint8_t *huge = calloc(1, big), *out = malloc(big);
	assert_non_null(huge);
	assert_non_null(out);
	assert_int_equal(gg_huffman_zlib(f->h, huge, big, out, big), 0);
	assert_true(gg_huffman_zlib(f->h, huge, big - 1, out, big) > 0);
	free(huge);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skewed), cmocka_unit_test(test_deep_code),
		cmocka_unit_test(test_parts),  cmocka_unit_test(test_no_gain_no_room),
		cmocka_unit_test(test_pure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
