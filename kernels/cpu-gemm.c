/* C = alpha · op(A) · op(B) + beta · C through CBLAS (row-major).
 *
 * CBLAS takes int dimensions.  The two dimensions that count graph nodes (m
 * in H·W, k in Hᵀ·G) may exceed INT_MAX on a large rank, so they are split
 * into blocks that fit; the feature widths n and the leading dimensions never
 * come near it.
 */
#include <assert.h>
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <stdint.h>

#include "halo-kernels.h"

/* Rows of C (or terms of the k sum) per CBLAS call. */
static const int64_t BLOCK = INT_MAX;

/* C = beta · C for an mb × n block (beta = 0 clears C, NaN included). */
static void scale_rows(float *c, int64_t mb, int64_t n, int64_t ldc, float beta) {
  for (int64_t i = 0; i < mb; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

/* The tall-skinny Aᵀ·B of a weight gradient (A: k × m node rows of the
 * input, B: k × n of the output's gradient, k ≫ m·n): OpenBLAS packs both
 * k-long panels for such a product and spends more on the packing than on
 * the flops (a 200000 × 128 by × 16 product ran at 2 GFLOP/s against 40 at
 * square shapes, bench/roofline.sh).  Here each thread sums its contiguous
 * share of the k rows as rank-1 updates into an m × n block of its own
 * (4 rows at a time, so that the block is read and written once per 4
 * rows), and the threads' blocks are added to C in thread order: the same
 * bits on every run with the same thread count. */
enum { TS_MAX_MN = 8192 }; /* floats of a thread's block: 32 KiB of its stack */

static int tall_skinny(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k) {
  return trans_a && !trans_b && m * n <= TS_MAX_MN && k >= 1024 && k >= 8 * m * n / 16;
}

static void gemm_tn_tall(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  scale_rows(c, m, n, ldc, beta);
  const int threads = omp_get_max_threads();
#pragma omp parallel for ordered schedule(static, 1) num_threads(threads)
  for (int t = 0; t < threads; t++) {
    float acc[TS_MAX_MN];
    for (int64_t i = 0; i < m * n; i++) acc[i] = 0.0f;
    const int64_t p0 = k * t / threads, p1 = k * (t + 1) / threads;
    int64_t p = p0;
    for (; p + 4 <= p1; p += 4) {
      const float *a0 = a + p * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
      const float *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
      for (int64_t i = 0; i < m; i++) {
        const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i];
        float *row = acc + i * n;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) row[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j];
      }
    }
    for (; p < p1; p++) {
      const float *ar = a + p * lda, *br = b + p * ldb;
      for (int64_t i = 0; i < m; i++) {
        const float x = ar[i];
        float *row = acc + i * n;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) row[j] += x * br[j];
      }
    }
#pragma omp ordered
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] += alpha * acc[i * n + j];
  }
}

void halo_cpu_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  assert(n <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
  if (m <= 0 || n <= 0) return;
  if (tall_skinny(trans_a, trans_b, m, n, k)) {
    gemm_tn_tall(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;

  for (int64_t i0 = 0; i0 < m; i0 += BLOCK) {
    const int64_t mb = m - i0 < BLOCK ? m - i0 : BLOCK;
    /* Rows i0.. of op(A): rows of A, or columns of Aᵀ. */
    const float *a_rows = trans_a ? a + i0 : a + i0 * lda;
    float *c_rows = c + i0 * ldc;
    if (k <= 0) {
      /* An empty sum: C = beta · C, without asking CBLAS about lda = 0. */
      scale_rows(c_rows, mb, n, ldc, beta);
      continue;
    }
    for (int64_t p0 = 0; p0 < k; p0 += BLOCK) {
      const int64_t kb = k - p0 < BLOCK ? k - p0 : BLOCK;
      const float *a_blk = trans_a ? a_rows + p0 * lda : a_rows + p0;
      const float *b_blk = trans_b ? b + p0 : b + p0 * ldb;
      /* Later blocks of the k sum add to what the first one wrote. */
      const float beta_blk = p0 == 0 ? beta : 1.0f;
      cblas_sgemm(CblasRowMajor, ta, tb, (int)mb, (int)n, (int)kb, alpha, a_blk, (int)lda, b_blk,
                  (int)ldb, beta_blk, c_rows, (int)ldc);
    }
  }
}
