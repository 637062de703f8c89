/* halo_cpu_gemm_rows runs an AVX clone where the CPU has AVX, and the
 * baseline x86-64 (SSE2) code elsewhere.  The contract promises the same
 * bits on every CPU, so the baseline, built alone here under another name,
 * must match the public function bit for bit. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"
#include "test-sanitized.h"

/* kernels/cpu-gemm-rows.c built with HALO_GEMM_ROWS_BASELINE. */
void halo__cpu_gemm_rows_baseline(int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

Test(gemm_rows_baseline, matches_dispatched_kernel, .timeout = 300) {
  const uint64_t seed = test_seed("gemm_rows_baseline.matches_dispatched_kernel");
  /* The tallest height is Cora's.  Under sanitizers 300 rows still take
   * both threads where m·n·k allows and reach the prefetch of rows ahead, at
   * a ninth of the cost. */
  const int64_t tallest = TEST_SANITIZED ? 300 : 2708;
  const int64_t MS[] = {1, 7, 13, tallest};
  if (TEST_SANITIZED)
    test_sanitized_note("gemm_rows_baseline.matches_dispatched_kernel",
                        "the tallest product has 300 rows, not 2708; every K, N, height class, "
                        "product and thread count still runs");
  static const int64_t KS[] = {1433, 500, 128, 64, 16, 7};
  static const int64_t NS[] = {16, 64, 7, 8, 128, 1, 23};
  int id = 0;
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (int trans_b = 0; trans_b < 2; trans_b++)
      for (size_t mi = 0; mi < sizeof MS / sizeof MS[0]; mi++)
        for (size_t ki = 0; ki < sizeof KS / sizeof KS[0]; ki++)
          for (size_t ni = 0; ni < sizeof NS / sizeof NS[0]; ni++) {
            const int64_t m = MS[mi], k = KS[ki], n = NS[ni];
            const uint64_t key = test_key(seed, (uint64_t)id++);
            float *a = malloc((size_t)(m * k) * sizeof *a);
            float *b = malloc((size_t)(k * n) * sizeof *b);
            float *c_simd = malloc((size_t)(m * n) * sizeof *c_simd);
            float *c_base = malloc((size_t)(m * n) * sizeof *c_base);
            cr_assert(a && b && c_simd && c_base);
            test_fill(a, m * k, key ^ 1, -1.0f, 1.0f);
            test_fill(b, k * n, key ^ 2, -1.0f, 1.0f);
            const int64_t ldb = trans_b ? k : n;
            halo_cpu_gemm_rows(trans_b, m, n, k, a, k, b, ldb, c_simd, n);
            halo__cpu_gemm_rows_baseline(trans_b, m, n, k, a, k, b, ldb, c_base, n);
            for (int64_t i = 0; i < m * n; i++)
              cr_assert(memcmp(&c_simd[i], &c_base[i], sizeof *c_simd) == 0,
                        "%d thread(s), trans_b %d, m %lld k %lld n %lld: C[%lld, %lld] = %a "
                        "dispatched, %a baseline",
                        threads, trans_b, (long long)m, (long long)k, (long long)n,
                        (long long)(i / n), (long long)(i % n), c_simd[i], c_base[i]);
            free(a);
            free(b);
            free(c_simd);
            free(c_base);
          }
  }
  omp_set_num_threads(1);
}
