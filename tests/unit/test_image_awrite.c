/* Unit tests of lib/image/awrite.c: writes done on the writer thread land in the order
 * given (overlapping ones too, small ones through the ring and large ones at once), a
 * wait makes the bytes readable, and the first failed write's errno is returned by every
 * later call. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/internal.h"

UNIT_TMPDIR("gg-unit-awrite")

#define FILE_SIZE (4u << 20)
#define RING      (256u << 10)

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void read_back(int fd, uint64_t off, size_t len, const unsigned char *want)
{
	unsigned char *got = malloc(len ? len : 1);
	assert_non_null(got);
	assert_int_equal(pread(fd, got, len, (off_t)off), (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

/* 3000 writes of 1 byte to 200 KiB (the ring is 256 KiB: those over 128 KiB are done at
 * once) at random, overlapping offsets: the file holds what writing them in order
 * gives; every 50th write, a random range is waited for and read back. */
static void test_awrite_order(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/order", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	unsigned char *model = calloc(1, FILE_SIZE), *src = malloc(200u << 10);
	assert_non_null(model);
	assert_non_null(src);
	assert_int_equal(ftruncate(fd, FILE_SIZE), 0);
	struct gg_awrite *a = gg_awrite_new(fd, RING);
	assert_non_null(a);
	uint32_t s = 12345;
	for (int i = 0; i < 3000; i++) {
		size_t len = 1 + rnd(&s) % (i % 10 ? 20000 : 200u << 10);
		uint64_t off = rnd(&s) % (FILE_SIZE - len);
		for (size_t k = 0; k < len; k++)
			src[k] = (unsigned char)(i + k * 7);
		assert_int_equal(gg_awrite_put(a, src, len, off), 0);
		memset(src, 0xEE, len); /* the queue has its own copy */
		for (size_t k = 0; k < len; k++)
			model[off + k] = (unsigned char)(i + k * 7);
		if (i % 50 == 49) {
			uint64_t o = rnd(&s) % (FILE_SIZE - 65536);
			size_t l = 1 + rnd(&s) % 65536;
			assert_int_equal(gg_awrite_wait(a, o, l), 0);
			read_back(fd, o, l, model + o);
		}
	}
	assert_int_equal(gg_awrite_free(a), 0);
	read_back(fd, 0, FILE_SIZE, model);
	close(fd);
	free(model);
	free(src);
}

/* A read-only descriptor: the failure comes back from the wait, and from every call
 * after it, as EBADF; nothing is lost silently. */
static void test_awrite_error(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/ro", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	close(fd);
	fd = open(path, O_RDONLY);
	struct gg_awrite *a = gg_awrite_new(fd, RING);
	assert_non_null(a);
	char buf[4096] = {1};
	int rc = gg_awrite_put(a, buf, sizeof buf, 0);
	assert_true(rc == 0 || rc == EBADF);
	assert_int_equal(gg_awrite_wait(a, 0, 0), EBADF);
	assert_int_equal(gg_awrite_put(a, buf, sizeof buf, 4096), EBADF);
	assert_int_equal(gg_awrite_put(a, buf, 0, 0), EBADF);
	assert_int_equal(gg_awrite_wait(a, 0, 10), EBADF);
	assert_int_equal(gg_awrite_free(a), EBADF);
	close(fd);
	assert_int_equal(gg_awrite_free(NULL), 0);
}

/* A large write (over half the ring) after small ones: done after them, so the small
 * write to the same bytes does not land over it. */
static void test_awrite_large_after_small(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/large", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	struct gg_awrite *a = gg_awrite_new(fd, RING);
	unsigned char *big = malloc(RING);
	memset(big, 'B', RING);
	for (int i = 0; i < 64; i++) {
		unsigned char small[1024];
		memset(small, 'a' + i % 26, sizeof small);
		assert_int_equal(gg_awrite_put(a, small, sizeof small, (uint64_t)i * 1024), 0);
	}
	assert_int_equal(gg_awrite_put(a, big, RING, 0), 0);
	assert_int_equal(gg_awrite_free(a), 0);
	read_back(fd, 0, RING, big);
	close(fd);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_awrite_order),
		cmocka_unit_test(test_awrite_error),
		cmocka_unit_test(test_awrite_large_after_small),
	};
	return cmocka_run_group_tests_name("image_awrite", tests, setup_tmp, teardown_tmp);
}
