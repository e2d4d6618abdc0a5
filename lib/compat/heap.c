/* The heap in huge pages (lib/image/heap.c says why): glibc's allocator tuned with
 * mallopt, the heap's range advised MADV_HUGEPAGE. Elsewhere, or in a build configured
 * --disable-linux-fastpaths: -1, the allocator as it was. */
#if GG_HAVE_GLIBC_HEAP
#define _GNU_SOURCE 1
#endif
#include "compat/compat.h"

#if GG_HAVE_GLIBC_HEAP
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define HEAP_RESERVE (256u << 20)
#define HEAP_MMAP    (32u << 20) /* glibc's largest mmap threshold on 64-bit */
#define HUGE_PAGE    (2u << 20)

/* Under a limit on address space or data (ulimit -v, -d: common on shared login nodes)
 * the reserve would count against it and could starve what freeze allocates later. */
static int limited(void)
{
	struct rlimit rl;
	return (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) ||
	       (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY);
}

int gg_compat_heap_huge_pages(void)
{
	static int done; /* the reserve is made once: a second one would be the same range */
	if (done)
		return done > 0 ? 0 : -1;
	done = -1;
	if (limited())
		return -1; /* the allocator as it was */
	if (!mallopt(M_MMAP_THRESHOLD, (int)HEAP_MMAP) ||
	    !mallopt(M_TRIM_THRESHOLD, (int)(HEAP_RESERVE * 2u)) ||
	    !mallopt(M_TOP_PAD, (int)HEAP_RESERVE))
		return -1;
	uintptr_t from = (uintptr_t)sbrk(0);
	/* larger than what is left on the heap's top: the heap grows by it and the pad
	 * (volatile: a compiler may drop a malloc whose block is only freed) */
	void *volatile p = malloc(HEAP_MMAP - 4096u);
	int grown = p != NULL;
	free(p);
	uintptr_t to = (uintptr_t)sbrk(0);
	mallopt(M_TOP_PAD, (int)HUGE_PAGE); /* growth past the reserve: 2 MiB at a time */
	if (!grown || from == (uintptr_t)-1 || to == (uintptr_t)-1)
		return -1;
	from = (from + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	to &= ~(uintptr_t)(HUGE_PAGE - 1);
	if (to <= from || madvise((void *)from, to - from, MADV_HUGEPAGE) != 0)
		return -1;
	done = 1;
	return 0;
}
#else
int gg_compat_heap_huge_pages(void)
{
	return -1;
}
#endif
