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
#include "compat/compat.h"

int gg_image_heap_huge_pages(void)
{
	return gg_compat_heap_huge_pages(); /* lib/compat/heap.c */
}
