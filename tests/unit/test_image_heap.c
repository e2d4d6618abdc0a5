/* Unit tests of lib/image/heap.c: after gg_image_heap_huge_pages, an allocation of a
 * MiB (a block processor's item is 128 KiB, above glibc's default threshold for a
 * mapping of its own) comes from the heap, and within a few MiB the heap is advised for
 * transparent huge pages (VmFlags "hg" in /proc/self/smaps). Whether the kernel then
 * gives it huge pages depends on the machine (THP off, memory fragmented), so that is
 * not asserted. Under a limit on data (ulimit -d) nothing changes: the call says -1 and
 * a MiB is still a mapping of its own. Under valgrind or AddressSanitizer the allocator
 * is not glibc's: the call may only fail there, and no mapping is checked. */
#include "unit.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "image/image.h"

static int replaced_allocator(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return 1;
#endif
#endif
	return RUNNING_ON_VALGRIND ? 1 : 0;
}

/* The mapping of /proc/self/smaps that holds p: its name ("[heap]", a path or "")
 * into name, its VmFlags into flags. 0 when found. */
static int mapping_of(const void *p, char *name, size_t nlen, char *flags, size_t flen)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0, found = -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		int off = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) == 2 && off > 0) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			if (in) {
				snprintf(name, nlen, "%s", line + off);
				name[strcspn(name, "\n")] = '\0';
			}
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(flags, flen, "%s", line + 8);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* In a child (the call changes the process for good): with RLIMIT_DATA set, the call
 * refuses and the allocator is as it was. Runs before test_heap_in_huge_pages. */
static void test_limited_unchanged(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)8 << 30, (rlim_t)8 << 30};
		if (setrlimit(RLIMIT_DATA, &rl) != 0)
			_exit(3);
		if (gg_image_heap_huge_pages() != -1)
			_exit(1);
		if (replaced_allocator())
			_exit(0);
		unsigned char *p = malloc(1u << 20);
		char name[256] = "", flags[256] = "";
		if (!p || mapping_of(p, name, sizeof name, flags, sizeof flags) != 0 ||
		    strcmp(name, "[heap]") == 0)
			_exit(2); /* the threshold was raised all the same */
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_heap_in_huge_pages(void **state)
{
	(void)state;
	int rc = gg_image_heap_huge_pages();
	if (!unit_fast(" glibc_heap")) { /* the allocator as it was */
		assert_int_equal(rc, -1);
		skip();
	}
	if (replaced_allocator()) {
		assert_true(rc == 0 || rc == -1);
		skip();
	}
	assert_int_equal(rc, 0);
	assert_int_equal(gg_image_heap_huge_pages(), 0); /* once is enough, twice harmless */
	/* The reserve starts at the first 2 MiB boundary past the heap's end at the call:
	 * what was left below it is used first. Within a few MiB, allocations are in it. */
	unsigned char *p[8];
	int n = 0, advised = 0;
	while (n < 8 && !advised) {
		p[n] = malloc(1u << 20);
		assert_non_null(p[n]);
		memset(p[n], 0x5a, 1u << 20);
		char name[256] = "", flags[256] = "";
		assert_int_equal(mapping_of(p[n], name, sizeof name, flags, sizeof flags), 0);
		assert_string_equal(name, "[heap]"); /* not a mapping of its own */
		advised = strstr(flags, " hg") != NULL;
		n++;
	}
	assert_true(advised);
	assert_true(n <= 4);
	while (n > 0)
		free(p[--n]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limited_unchanged),
		cmocka_unit_test(test_heap_in_huge_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
