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
#include <stdint.h>

#include "halo-kernels.h"

/* Rows of C (or terms of the k sum) per CBLAS call. */
static const int64_t BLOCK = INT_MAX;

/* C = beta · C for an mb × n block (beta = 0 clears C, NaN included). */
static void scale_rows(float *c, int64_t mb, int64_t n, int64_t ldc, float beta) {
  for (int64_t i = 0; i < mb; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

void halo_cpu_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  assert(n <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
  if (m <= 0 || n <= 0) return;
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
