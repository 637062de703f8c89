/* Host memory for large arrays that kernels read at random.
 *
 * SpMM gathers one row of X per nonzero from anywhere in X; with 4 KiB
 * pages nearly every gather of a large X also misses the TLB (and, in a
 * virtual machine, walks two page tables).  Arrays from halo_hostmem_alloc
 * of at least 2 MiB start on a 2 MiB boundary and ask the kernel for
 * transparent huge pages (madvise(MADV_HUGEPAGE)), which cover 512 times as
 * much memory per TLB entry; smaller ones are only cache-line aligned, so
 * that small buffers waste nothing.  The request is advice: where THP is
 * off the memory is ordinary memory and everything still works.
 */
#ifndef HALO_HOSTMEM_H
#define HALO_HOSTMEM_H

#include <stddef.h>

/* The huge-page size asked for, and the alignment of allocations of at
 * least that size; smaller ones are aligned to HALO_HOSTMEM_LINE. */
enum { HALO_HOSTMEM_HUGE = 2 << 20, HALO_HOSTMEM_LINE = 64 };

/* `bytes` (0 allowed) of uninitialised memory: HALO_HOSTMEM_HUGE-aligned
 * with transparent huge pages requested when bytes >= HALO_HOSTMEM_HUGE,
 * else HALO_HOSTMEM_LINE-aligned; NULL when out of memory.  Release with
 * halo_hostmem_free.  Pages are placed at first touch, so a caller that
 * wants them near its threads writes them first from those threads.
 * Local. */
void *halo_hostmem_alloc(size_t bytes);

/* The same, zero-filled. Local. */
void *halo_hostmem_calloc(size_t bytes);

/* Releases memory from halo_hostmem_alloc/calloc; accepts NULL. Local. */
void halo_hostmem_free(void *p);

#endif /* HALO_HOSTMEM_H */
