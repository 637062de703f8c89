/* Huge-page-friendly host allocations; see halo-hostmem.h. */
#define _DEFAULT_SOURCE /* madvise */
#include "halo-hostmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *halo_hostmem_alloc(size_t bytes) {
  const int huge = bytes >= HALO_HOSTMEM_HUGE;
  const size_t align = huge ? HALO_HOSTMEM_HUGE : HALO_HOSTMEM_LINE;
  if (bytes > SIZE_MAX - align) return NULL;
  /* aligned_alloc wants a multiple of the alignment; rounding up also makes
   * the last huge page whole, so that madvise covers all of it. */
  const size_t size = bytes == 0 ? align : (bytes + align - 1) / align * align;
  void *p = aligned_alloc(align, size);
  /* Advice only: a kernel without THP refuses it, and the memory is still
   * good, so the result is not checked. */
  if (p && huge) (void)madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void *halo_hostmem_calloc(size_t bytes) {
  char *p = halo_hostmem_alloc(bytes);
  if (!p || bytes < HALO_HOSTMEM_HUGE) {
    if (p) memset(p, 0, bytes);
    return p;
  }
  /* The zeroing is the first touch of every page.  Done by one thread, its
   * page faults (the kernel clears each page too) ran serially and took a
   * third of halo-train's set-up on a 2M-node graph; split a huge page per
   * iteration over all threads, they run in parallel, and on a multi-socket
   * machine the pages spread over the sockets' memory instead of one. */
  const size_t pages = (bytes + HALO_HOSTMEM_HUGE - 1) / HALO_HOSTMEM_HUGE;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < pages; i++) {
    const size_t at = i * HALO_HOSTMEM_HUGE, left = bytes - at;
    memset(p + at, 0, left < HALO_HOSTMEM_HUGE ? left : HALO_HOSTMEM_HUGE);
  }
  return p;
}

void halo_hostmem_free(void *p) { free(p); }
