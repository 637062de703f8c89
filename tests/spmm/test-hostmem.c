/* halo_hostmem_alloc: the alignment it promises, whole usable sizes, zeroes
 * from calloc, the huge-page advice where the kernel takes it, and SpMM on
 * its buffers giving bit for bit what it gives on malloc'd ones (and the
 * dense double-precision reference). */
#include <criterion/criterion.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-hostmem.h"
#include "halo-spmm.h"
#include "kernels/test-random.h"

Test(hostmem, alignment_and_size) {
  const size_t huge = HALO_HOSTMEM_HUGE;
  const size_t sizes[] = {0, 1, 63, 64, 4097, huge - 1, huge, huge + 1, 5 * huge + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const size_t n = sizes[i];
    unsigned char *p = halo_hostmem_alloc(n);
    cr_assert(p, "halo_hostmem_alloc(%zu) failed", n);
    const size_t align = n >= huge ? huge : HALO_HOSTMEM_LINE;
    cr_assert((uintptr_t)p % align == 0, "halo_hostmem_alloc(%zu) = %p is not %zu-aligned", n,
              (void *)p, align);
    /* Every byte is ours (an ASan build would catch a short block). */
    memset(p, 0xa5, n);
    halo_hostmem_free(p);

    unsigned char *z = halo_hostmem_calloc(n);
    cr_assert(z, "halo_hostmem_calloc(%zu) failed", n);
    for (size_t k = 0; k < n; k++) cr_assert(z[k] == 0, "calloc(%zu)[%zu] = %u", n, k, z[k]);
    halo_hostmem_free(z);
  }
  halo_hostmem_free(NULL);
  cr_assert_null(halo_hostmem_alloc(SIZE_MAX - 16), "an impossible size must fail, not wrap");
}

/* Whether the kernel honours madvise(MADV_HUGEPAGE): THP "always" or
 * "madvise" (the bracketed word in sysfs). */
static int thp_advisable(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[256] = {0};
  if (!f) return 0;
  const int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  return ok && (strstr(line, "[always]") || strstr(line, "[madvise]"));
}

/* The VmFlags of the mapping that holds p, from /proc/self/smaps; 0 when
 * none was found. */
static int vm_flags_of(const void *p, char *flags, size_t size) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[1024];
  int inside = 0, found = 0;
  if (!f) return 0;
  while (!found && fgets(line, sizeof line, f)) {
    uintptr_t lo = 0, hi = 0;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      const size_t len = strnlen(line + 8, size - 1);
      memcpy(flags, line + 8, len);
      flags[len] = '\0';
      found = 1;
    }
  }
  fclose(f);
  return found;
}

Test(hostmem, large_blocks_are_advised_huge) {
  if (!thp_advisable()) {
    cr_log_info("transparent huge pages are off here: nothing to check");
    return;
  }
  const size_t n = 3 * (size_t)HALO_HOSTMEM_HUGE + 100;
  char *big = halo_hostmem_alloc(n), *small = halo_hostmem_alloc(4096);
  cr_assert(big && small);
  memset(big, 1, n);
  memset(small, 1, 4096);
  char flags[512] = {0};
  cr_assert(vm_flags_of(big, flags, sizeof flags), "no mapping in /proc/self/smaps holds %p",
            (void *)big);
  cr_assert(strstr(flags, " hg") != NULL, "a %zu-byte block lacks MADV_HUGEPAGE: VmFlags:%s", n,
            flags);
  cr_log_info("%zu-byte block: VmFlags:%s", n, flags);
  halo_hostmem_free(small);
  halo_hostmem_free(big);
}

Test(hostmem, spmm_on_hostmem_buffers_is_bit_identical) {
  /* X spans several huge pages; the graph is random, so gathers cross them. */
  const uint64_t seed = test_seed("hostmem.spmm_on_hostmem_buffers_is_bit_identical");
  const int64_t rows = 20000, cols = 20000, ncols = 64, degree = 6;
  const uint64_t key = test_key(seed, 1);
  halo_csr a = {.rows = rows, .cols = cols};
  a.indptr = malloc((size_t)(rows + 1) * sizeof *a.indptr);
  cr_assert(a.indptr);
  a.indptr[0] = 0;
  for (int64_t r = 0; r < rows; r++)
    a.indptr[r + 1] = a.indptr[r] + test_below(key, (uint64_t)r, 2 * degree + 1);
  a.nnz = a.indptr[rows];
  a.indices = malloc((size_t)a.nnz * sizeof *a.indices);
  a.values = malloc((size_t)a.nnz * sizeof *a.values);
  cr_assert(a.indices && a.values);
  for (int64_t k = 0; k < a.nnz; k++)
    a.indices[k] = (int32_t)test_below(key ^ 1, (uint64_t)k, cols);
  test_fill(a.values, a.nnz, key ^ 2, -1.0f, 1.0f);

  const size_t xbytes = (size_t)(cols * ncols) * sizeof(float);
  const size_t ybytes = (size_t)(rows * ncols) * sizeof(float);
  float *x_plain = malloc(xbytes), *y_plain = malloc(ybytes);
  float *x_huge = halo_hostmem_alloc(xbytes), *y_huge = halo_hostmem_alloc(ybytes);
  cr_assert(x_plain && y_plain && x_huge && y_huge);
  test_fill(x_plain, cols * ncols, key ^ 3, -2.0f, 2.0f);
  memcpy(x_huge, x_plain, xbytes);

  halo_spmm_cpu(&a, x_plain, ncols, ncols, 0.0f, y_plain, ncols, NULL, rows);
  halo_spmm_cpu(&a, x_huge, ncols, ncols, 0.0f, y_huge, ncols, NULL, rows);
  cr_assert(memcmp(y_plain, y_huge, ybytes) == 0, "Y differs between malloc and hostmem buffers");

  /* And both are right: every 97th row against a double sum. */
  for (int64_t r = 0; r < rows; r += 97) {
    for (int64_t j = 0; j < ncols; j++) {
      double ref = 0.0, mag = 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++) {
        const double term = (double)a.values[k] * x_plain[a.indices[k] * ncols + j];
        ref += term;
        mag += fabs(term);
      }
      const double deg = (double)(a.indptr[r + 1] - a.indptr[r]);
      const double bound = (deg + 2.0) * FLT_EPSILON * mag + FLT_MIN;
      cr_assert(fabs(y_huge[r * ncols + j] - ref) <= bound, "Y[%lld, %lld] = %.9g, reference %.9g",
                (long long)r, (long long)j, y_huge[r * ncols + j], ref);
    }
  }
  halo_hostmem_free(y_huge);
  halo_hostmem_free(x_huge);
  free(y_plain);
  free(x_plain);
  free(a.values);
  free(a.indices);
  free(a.indptr);
}
