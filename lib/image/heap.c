/* The heap in huge pages, for a program that freezes (opt-in: it changes how the C
 * library's allocator serves the whole process).
 *
 * freeze touches tens of MiB of fresh memory: the blocks in flight (128 KiB each, one
 * mapping each by default), the image's buffers on their way to the disk, the files read
 * ahead, the tree. Every 4 KiB page costs a fault the first time it is touched. In this
 * project's test VM (a paravirtualised guest) a fault costs about 19 us: 16 MiB touched
 * page by page took 80 ms, the same 16 MiB in 2 MiB pages 1.4 ms; the compressed-files
 * tree took 12,400 faults, about a sixth of its CPU time. On bare metal a fault is
 * cheaper, and huge pages still save the faults and TLB misses.
 *
 * So: allocations below 32 MiB come from the heap (not one mapping each, mapped and
 * unmapped again), the heap is grown once by HEAP_RESERVE (address space only: nothing
 * is touched) and not given back, and that range is advised for transparent huge pages,
 * which the kernel then gives it at the first touch of each 2 MiB. This is what glibc's
 * own tunable (glibc.malloc.hugetlb=1 with a larger mmap_threshold) does, which a
 * program cannot set for itself once it runs. Where the kernel has no transparent huge
 * pages (or they are off) only the advice fails, and the rest still saves the mappings.
 * Heap use beyond the reserve is served as before, in small pages. Under a limit on
 * address space or data nothing is changed. */
#include "image/internal.h"

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

int gg_image_heap_huge_pages(void)
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
