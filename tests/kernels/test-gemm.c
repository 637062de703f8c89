/* halo_cpu_gemm in all four transpose combinations against a double
 * reference, with padded leading dimensions and beta 0 (C starts as NaN),
 * 1 and a general value. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"

/* Element (i, j) of op(M) for a row-major M with leading dimension ld. */
static double at(const float *m, int64_t ld, int trans, int64_t i, int64_t j) {
  return trans ? m[j * ld + i] : m[i * ld + j];
}

/* Returns C (m × (n + 3) floats, its padding included), which the caller
 * frees, or NULL. */
static float *check_gemm(uint64_t seed, int id, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         float alpha, float beta) {
  const uint64_t key = test_key(seed, (uint64_t)id);
  /* Stored shapes: A is m × k (or k × m), B is k × n (or n × k); pad each ld. */
  const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int64_t lda = a_cols + 2, ldb = b_cols + 1, ldc = n + 3;
  float *a = malloc((size_t)(a_rows * lda + 1) * sizeof *a);
  float *b = malloc((size_t)(b_rows * ldb + 1) * sizeof *b);
  float *c = malloc((size_t)(m * ldc + 1) * sizeof *c);
  float *c0 = malloc((size_t)(m * ldc + 1) * sizeof *c0);
  cr_assert(a && b && c && c0);
  test_fill(a, a_rows * lda, key ^ 1, -1.0f, 1.0f);
  test_fill(b, b_rows * ldb, key ^ 2, -1.0f, 1.0f);
  test_fill(c0, m * ldc, key ^ 3, -1.0f, 1.0f);
  memcpy(c, c0, (size_t)(m * ldc) * sizeof *c);
  if (beta == 0.0f)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = NAN;

  halo_cpu_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);

  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < ldc; j++) {
      if (j >= n) {
        cr_assert_eq(c[i * ldc + j], c0[i * ldc + j], "case %d: padding C[%lld, %lld] changed", id,
                     (long long)i, (long long)j);
        continue;
      }
      double ref = beta == 0.0f ? 0.0 : (double)beta * c0[i * ldc + j];
      double mag = fabs(ref);
      for (int64_t p = 0; p < k; p++) {
        const double term = alpha * at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
        ref += term;
        mag += fabs(term);
      }
      const double bound = (double)(k + 3) * FLT_EPSILON * mag + FLT_MIN;
      cr_assert(fabs(c[i * ldc + j] - ref) <= bound,
                "case %d (ta %d tb %d, %lldx%lldx%lld): C[%lld, %lld] = %.9g, reference %.9g", id,
                ta, tb, (long long)m, (long long)n, (long long)k, (long long)i, (long long)j,
                c[i * ldc + j], ref);
    }
  }
  free(a);
  free(b);
  free(c0);
  return c;
}

Test(gemm, all_transposes_match_double_reference) {
  const uint64_t seed = test_seed("gemm.all_transposes_match_double_reference");
  const int64_t shapes[][3] = {{1, 1, 1},
                               {5, 3, 7},
                               {64, 16, 33},
                               {130, 7, 200},
                               {3, 40, 1},
                               /* Aᵀ·B tall and skinny (halo's own kernel) */
                               {40, 16, 5001},
                               {7, 3, 1030},
                               /* A·op(B) of many rows, narrow: halo_cpu_gemm_rows
                                  where alpha is 1 and beta 0 */
                               {4100, 64, 3},
                               {5000, 16, 40},
                               /* wider: Aᵀ·B in tiles of 16,384 cells with
                                  partial edges (3 × 2 of 128 × 128; 3 of
                                  2340 × 7), and CBLAS split by rows of C over
                                  the team, A or Aᵀ */
                               {300, 130, 1100},
                               {5000, 7, 1030},
                               {600, 200, 500}};
  const float betas[] = {0.0f, 1.0f, -0.5f};
  int id = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 4; t++)
      for (int bi = 0; bi < 3; bi++)
        free(check_gemm(seed, id++, t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2],
                        bi == 2 ? 0.75f : 1.0f, betas[bi]));
}

Test(gemm, tall_skinny_kernel_at_every_vector_width) {
  /* The tall-skinny Aᵀ·B on each of its paths this CPU runs (AVX-512,
   * AVX2, portable; a CPU without one runs the next narrower), each shape
   * against the double reference: full tiles, the columns of A past them
   * (tiles of 4 and 1), B's columns past its last vector, and a block of
   * 16,384 cells.  The AVX-512 and AVX2 paths add each cell's rows in the
   * same order with the same fused multiply-adds: the same bits. */
  const uint64_t seed = test_seed("gemm.tall_skinny_kernel_at_every_vector_width");
  const int64_t shapes[][3] = {
      {128, 64, 1100}, {33, 37, 1500}, {16, 48, 1030}, {7, 3, 1030}, {128, 128, 1024},
      {300, 130, 1100}};
  enum { SHAPES = sizeof shapes / sizeof shapes[0] };
  float *out[3][SHAPES] = {{0}};
  halo_cpu_isa used[3];
  for (int level = HALO_CPU_ISA_PLAIN; level <= HALO_CPU_ISA_AVX512; level++) {
    used[level] = halo_cpu_gemm_limit_isa((halo_cpu_isa)level);
    cr_assert(used[level] <= (halo_cpu_isa)level, "limit %d ran width %d", level, used[level]);
    for (int s = 0; s < SHAPES; s++)
      out[level][s] = check_gemm(seed, 1000 + s, 1, 0, shapes[s][0], shapes[s][1], shapes[s][2],
                                 0.75f, -0.5f); /* the same inputs at every width */
  }
  halo_cpu_gemm_limit_isa(HALO_CPU_ISA_AVX512);
  cr_assert_eq(used[HALO_CPU_ISA_PLAIN], HALO_CPU_ISA_PLAIN);
  if (used[HALO_CPU_ISA_AVX512] == HALO_CPU_ISA_AVX512 && used[HALO_CPU_ISA_AVX2] == HALO_CPU_ISA_AVX2)
    for (int s = 0; s < SHAPES; s++)
      cr_assert(memcmp(out[1][s], out[2][s], (size_t)(shapes[s][0] * (shapes[s][1] + 3)) *
                                                  sizeof(float)) == 0,
                "shape %d: the AVX2 and AVX-512 paths gave other bits", s);
  for (int level = 0; level < 3; level++)
    for (int s = 0; s < SHAPES; s++) free(out[level][s]);
}

Test(gemm, empty_inner_dimension_scales_c) {
  /* k = 0: the product is an empty sum, so C = beta · C. */
  const uint64_t seed = test_seed("gemm.empty_inner_dimension_scales_c");
  float c[6], c0[6];
  test_fill(c0, 6, test_key(seed, 1), 0.5f, 1.0f);
  memcpy(c, c0, sizeof c);
  halo_cpu_gemm(0, 0, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 0.5f, c, 3);
  for (int i = 0; i < 6; i++) cr_expect_eq(c[i], 0.5f * c0[i]);
  for (int i = 0; i < 6; i++) c[i] = NAN;
  halo_cpu_gemm(1, 1, 2, 3, 0, 1.0f, NULL, 2, NULL, 1, 0.0f, c, 3);
  for (int i = 0; i < 6; i++) cr_expect_eq(c[i], 0.0f);
}
