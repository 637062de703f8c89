/* C = alpha · op(A) · op(B) + beta · C (row-major): through CBLAS, or,
 * for the tall-skinny Aᵀ·B of a weight gradient and a layer's narrow
 * per-row products, halo's own kernels.
 *
 * halo's OpenMP team is the only pool of threads: OpenBLAS runs on one
 * thread a call (halo-train sets openblas_set_num_threads(1):
 * train/train-run.c), and a product that CBLAS takes is split here, by
 * rows of C, over the team.  OpenBLAS's own pool, beside the team, cost
 * 2-5 ms a call where the product takes 20 µs (Cora's G·Wᵀ, 2708 × 7 × 16)
 * on the 2-vCPU VM with another process on one core (bench/busy-node.sh's
 * case): its threads spin and yield on the cores the team's threads sleep
 * on (docs/benchmarks.md, "Small graphs: the team's wake and the scalar
 * loops").
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
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "halo-kernels.h"

/* Rows of C (or terms of the k sum) per CBLAS call. */
static const int64_t BLOCK = INT_MAX;

/* C = beta · C for an mb × n block (beta = 0 clears C, NaN included). */
static void scale_rows(float *c, int64_t mb, int64_t n, int64_t ldc, float beta) {
  for (int64_t i = 0; i < mb; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

/* The tall-skinny Aᵀ·B of a weight gradient (A: k × m node rows of the
 * input, B: k × n of the output's gradient, k ≫ m·n).  OpenBLAS packs both
 * k-long panels for such a product; on some machines it spends more on the
 * packing than on the flops (a 200000 × 128 by × 16 product ran at 2
 * GFLOP/s against 40 at square shapes on an AVX2 VM, bench/roofline.sh).
 * Here each thread sums its contiguous share of the k rows into an m × n
 * block of its own, and the threads' blocks are added to C in thread
 * order: the same bits on every run with the same thread count, and on the
 * AVX-512 and AVX2 paths alike (each cell adds its rows in order, one
 * fused multiply-add a row); the portable loop, 4 rows at a time, rounds
 * otherwise.
 *
 * The share is walked in chunks of TS_CHUNK rows, which stay in the cache
 * while every register tile of the block reads them: a tile is TP columns
 * of A (rows of the block) × one or two vectors of B's columns, its sums
 * held in registers over the chunk, then added to the block.  Each thread
 * takes at least TS_CHUNK rows, so that the ordered adds of the blocks
 * (m·n each) stay small beside the sums. */
enum {
  TS_MAX_MN = 16384, /* floats of a thread's block: 64 KiB of its stack (the
                        default thread stacks of glibc and libgomp are MiBs) */
  TS_MIN_K = 1024,   /* fewer rows go to CBLAS */
  TS_CHUNK = 256,    /* rows per chunk */
  TS_TILE_N = 128    /* a wider gradient's tiles: at most 128 columns, and
                        TS_MAX_MN / 128 = 128 rows at that width */
};

static int tall_skinny(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k) {
  return trans_a && !trans_b && m * n <= TS_MAX_MN && k >= TS_MIN_K;
}

/* A layer's per-row products H·W and G·Wᵀ (A tall, C narrow), overwritten
 * or added to (beta 1: halo_cpu_gemm_rows_acc):
 * halo_cpu_gemm_rows streams A's rows once through register tiles, where
 * OpenBLAS packs the tall A first.  It ran 1.1-3.0x OpenBLAS's speed for
 * every width up to 64 columns on the AVX-512 VM (100,000 rows of 16 to
 * 512 columns; 2.3x at GIN's 128 → 16; bench/gemm-rows) and 0.9x at 128,
 * so the wider products stay with BLAS.  It takes them at any number of
 * rows: a small graph's products (Cora's 2708 rows) then run on one
 * thread, or on the team, without CBLAS. */
enum { ROWS_MAX_N = 64 };

static int per_row(int trans_a, int64_t n, int64_t k, float alpha, float beta) {
  return !trans_a && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && n <= ROWS_MAX_N && k > 0;
}

/* block (m × n, leading dimension n) += A[0..rows)ᵀ · B[0..rows), 4 rows
 * at a time: the portable path. */
static void ts_plain(int64_t rows, int64_t m, int64_t n, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float *block) {
  int64_t p = 0;
  for (; p + 4 <= rows; p += 4) {
    const float *a0 = a + p * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    const float *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
    for (int64_t i = 0; i < m; i++) {
      const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i];
      float *row = block + i * n;
#pragma omp simd
      for (int64_t j = 0; j < n; j++) row[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j];
    }
  }
  for (; p < rows; p++) {
    const float *ar = a + p * lda, *br = b + p * ldb;
    for (int64_t i = 0; i < m; i++) {
      const float x = ar[i];
      float *row = block + i * n;
#pragma omp simd
      for (int64_t j = 0; j < n; j++) row[j] += x * br[j];
    }
  }
}

#if defined(__x86_64__)
/* The tile loops keep their sums in registers only where every index is a
 * constant, so each tile height is a function of its own, unrolled: the
 * full tiles of TP columns of A, then the columns past them (m mod TP) in
 * tiles of 4 and of 1.  Every cell adds the same terms in the same order
 * whatever tile holds it. */

/* AVX-512: tp columns of A from p × 16 columns of B from q (one vector,
 * `mask` at the block's right edge). */
static inline __attribute__((always_inline, target("avx512f"))) void tile512(
    int tp, int64_t rows, int64_t p, int64_t q, __mmask16 mask, int64_t n, const float *a,
    int64_t lda, const float *b, int64_t ldb, float *block) {
  __m512 s[16];
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) s[t] = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; r++) {
    const __m512 bv = _mm512_maskz_loadu_ps(mask, b + r * ldb + q);
    const float *ar = a + r * lda + p;
#pragma GCC unroll 16
    for (int t = 0; t < tp; t++) s[t] = _mm512_fmadd_ps(_mm512_set1_ps(ar[t]), bv, s[t]);
  }
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) {
    float *row = block + (p + t) * n + q;
    _mm512_mask_storeu_ps(row, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, row), s[t]));
  }
}

__attribute__((target("avx512f"))) static void ts_avx512(int64_t rows, int64_t m, int64_t n,
                                                         const float *a, int64_t lda,
                                                         const float *b, int64_t ldb,
                                                         float *block) {
  for (int64_t q = 0; q < n; q += 16) {
    const __mmask16 mask = (__mmask16)(n - q >= 16 ? 0xffffu : (1u << (n - q)) - 1u);
    int64_t p = 0;
    for (; p + 16 <= m; p += 16) tile512(16, rows, p, q, mask, n, a, lda, b, ldb, block);
    for (; p + 4 <= m; p += 4) tile512(4, rows, p, q, mask, n, a, lda, b, ldb, block);
    for (; p < m; p++) tile512(1, rows, p, q, mask, n, a, lda, b, ldb, block);
  }
}

/* AVX2: tp columns of A from p × 16 columns of B from q (two vectors, m0
 * and m1 at the block's right edge). */
static inline __attribute__((always_inline, target("avx2,fma"))) void tile256(
    int tp, int64_t rows, int64_t p, int64_t q, __m256i m0, __m256i m1, int64_t n, const float *a,
    int64_t lda, const float *b, int64_t ldb, float *block) {
  __m256 s0[4], s1[4];
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) s0[t] = s1[t] = _mm256_setzero_ps();
  for (int64_t r = 0; r < rows; r++) {
    const __m256 b0 = _mm256_maskload_ps(b + r * ldb + q, m0);
    const __m256 b1 = _mm256_maskload_ps(b + r * ldb + q + 8, m1);
    const float *ar = a + r * lda + p;
#pragma GCC unroll 16
    for (int t = 0; t < tp; t++) {
      const __m256 x = _mm256_set1_ps(ar[t]);
      s0[t] = _mm256_fmadd_ps(x, b0, s0[t]);
      s1[t] = _mm256_fmadd_ps(x, b1, s1[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) {
    float *row = block + (p + t) * n + q;
    _mm256_maskstore_ps(row, m0, _mm256_add_ps(_mm256_maskload_ps(row, m0), s0[t]));
    _mm256_maskstore_ps(row + 8, m1, _mm256_add_ps(_mm256_maskload_ps(row + 8, m1), s1[t]));
  }
}

__attribute__((target("avx2,fma"))) static void ts_avx2(int64_t rows, int64_t m, int64_t n,
                                                        const float *a, int64_t lda, const float *b,
                                                        int64_t ldb, float *block) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t q = 0; q < n; q += 16) {
    const int left = n - q < 16 ? (int)(n - q) : 16;
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8), lane);
    int64_t p = 0;
    for (; p + 4 <= m; p += 4) tile256(4, rows, p, q, m0, m1, n, a, lda, b, ldb, block);
    for (; p < m; p++) tile256(1, rows, p, q, m0, m1, n, a, lda, b, ldb, block);
  }
}
#endif

typedef void ts_kernel(int64_t rows, int64_t m, int64_t n, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *block);

static halo_cpu_isa isa_limit = HALO_CPU_ISA_AVX512; /* halo_cpu_gemm_limit_isa */

/* The widest tile kernel this CPU runs, up to the limit, and its width. */
static ts_kernel *ts_pick(halo_cpu_isa *isa) {
#if defined(__x86_64__)
  if (isa_limit >= HALO_CPU_ISA_AVX512 && __builtin_cpu_supports("avx512f")) {
    *isa = HALO_CPU_ISA_AVX512;
    return ts_avx512;
  }
  if (isa_limit >= HALO_CPU_ISA_AVX2 && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma")) {
    *isa = HALO_CPU_ISA_AVX2;
    return ts_avx2;
  }
#endif
  *isa = HALO_CPU_ISA_PLAIN;
  return ts_plain;
}

halo_cpu_isa halo_cpu_gemm_limit_isa(halo_cpu_isa limit) {
  isa_limit = limit;
  halo_cpu_isa isa;
  ts_pick(&isa);
  return isa;
}

/* Multiply-adds per thread below which a product stays on fewer threads
 * (2^20: about 50 µs of one core, above the team's wake). */
static const int64_t BLAS_THREAD_WORK = 1 << 20;

static void gemm_tn_tall(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  scale_rows(c, m, n, ldc, beta);
  halo_cpu_isa isa;
  ts_kernel *kernel = ts_pick(&isa);
  /* At least TS_CHUNK rows (k >= TS_MIN_K: at least 4 threads' worth) and
   * BLAS_THREAD_WORK multiply-adds a thread. */
  int64_t most = k / TS_CHUNK;
  if (most > m * n * k / BLAS_THREAD_WORK) most = m * n * k / BLAS_THREAD_WORK;
  if (most < 1) most = 1;
  const int threads = omp_get_max_threads() < most ? omp_get_max_threads() : (int)most;
#pragma omp parallel for ordered schedule(static, 1) num_threads(threads)
  for (int t = 0; t < threads; t++) {
    float block[TS_MAX_MN];
    for (int64_t i = 0; i < m * n; i++) block[i] = 0.0f;
    const int64_t p0 = k * t / threads, p1 = k * (t + 1) / threads;
    for (int64_t p = p0; p < p1; p += TS_CHUNK) {
      const int64_t rows = p1 - p < TS_CHUNK ? p1 - p : TS_CHUNK;
      kernel(rows, m, n, a + p * lda, lda, b + p * ldb, ldb, block);
    }
#pragma omp ordered
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] += alpha * block[i * n + j];
  }
}

/* C = alpha · op(A) · op(B) + beta · C through CBLAS, on the calling
 * thread, in blocks of the node dimension that fit CBLAS's ints. */
static void blas_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc) {
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

void halo_cpu_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  assert(n <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
  if (m <= 0 || n <= 0) return;
  if (tall_skinny(trans_a, trans_b, m, n, k)) {
    gemm_tn_tall(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (trans_a && !trans_b && k >= TS_MIN_K) {
    /* A wider weight gradient: C in tiles of at most TS_MAX_MN cells,
     * each a tall-skinny product (the tile's columns of A and of B). */
    const int64_t nb = n < TS_TILE_N ? n : TS_TILE_N, mb = TS_MAX_MN / nb;
    for (int64_t i0 = 0; i0 < m; i0 += mb)
      for (int64_t j0 = 0; j0 < n; j0 += nb)
        gemm_tn_tall(m - i0 < mb ? m - i0 : mb, n - j0 < nb ? n - j0 : nb, k, alpha, a + i0, lda,
                     b + j0, ldb, beta, c + i0 * ldc + j0, ldc);
    return;
  }
  if (per_row(trans_a, n, k, alpha, beta)) {
    if (beta == 0.0f)
      halo_cpu_gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    else
      halo_cpu_gemm_rows_acc(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  /* The rest goes to CBLAS, in blocks of C's rows (op(A)'s rows: rows of
   * A, or columns of Aᵀ) over the team. */
  int64_t threads = k > 0 ? omp_get_max_threads() : 1;
  if (threads > m * n * k / BLAS_THREAD_WORK) threads = m * n * k / BLAS_THREAD_WORK;
  if (threads > m) threads = m;
  if (threads <= 1) {
    blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#pragma omp parallel num_threads((int)threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t i0 = m * t / nt, i1 = m * (t + 1) / nt;
    blas_gemm(trans_a, trans_b, i1 - i0, n, k, alpha, trans_a ? a + i0 : a + i0 * lda, lda, b, ldb,
              beta, c + i0 * ldc, ldc);
  }
}
