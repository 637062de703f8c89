/* Inverted dropout keyed by global row id, dense in place, dense out of
 * place, and through a sparse matrix's non-zeros.
 *
 * The keep test and the scale are halo_dropout_keep and halo_dropout_scale
 * (core/halo-rng.h), which the CUDA twins call too: the mask is a pure
 * function of (key, global id, column), independent of where the row sits
 * locally, of the rank and of the thread, and every device computes the same
 * float operations bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "halo-exact.h" /* halo_cpu_max_abs */
#include "cpu-parallel.h"
#include "halo-kernels.h"
#include "halo-rng.h"

/* One value of dropout: the bits of in · scale, or of +0 where the draw for
 * (row, j) falls below the threshold: halo_dropout_apply's test for (key,
 * node, j), with the row's half of halo_rng_bits (the mix of key ^ node)
 * hoisted into row_key, and the keep test `uniform >= p` as the integer
 * test on the draw's 24 bits that it is (draw · 2^-24 and p · 2^24 are
 * exact in float, so `draw >= ceil(p · 2^24)` holds exactly when it does):
 * the same bits, in loops that vectorise. */
static inline __attribute__((always_inline)) uint32_t dropout_bits(float in, uint64_t row_key,
                                                                    int64_t j, uint64_t threshold,
                                                                    float scale) {
  const uint64_t draw = halo_rng_mix(row_key ^ ((uint64_t)j * HALO_RNG_COL_MUL)) >> 40;
  const float kept = in * scale;
  uint32_t bits;
  memcpy(&bits, &kept, sizeof bits);
  return bits & (0u - (uint32_t)(draw >= threshold));
}

/* The 64-bit products need AVX-512DQ to vectorise in one instruction (AVX2
 * builds them from 32-bit ones): hence the clones. */
#if defined(__x86_64__)
#define HALO__DROPOUT_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HALO__DROPOUT_CLONES
#endif

/* One row of dropout, out[j] for j < cols (in may be out). */
HALO__DROPOUT_CLONES static void dropout_row(float *out, const float *in, int64_t cols,
                                             uint64_t row_key, uint64_t threshold, float scale) {
#pragma omp simd
  for (int64_t j = 0; j < cols; j++) {
    const uint32_t bits = dropout_bits(in[j], row_key, j, threshold, scale);
    memcpy(&out[j], &bits, sizeof bits);
  }
}

static void dropout_rows(float *dst, const float *src, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p) {
  const float scale = halo_dropout_scale(p);
  const uint64_t threshold = halo_dropout_threshold(p);
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t i = 0; i < rows; i++)
    dropout_row(dst + i * cols, src + i * cols, cols, halo_rng_mix(key ^ (uint64_t)global_id[i]),
                threshold, scale);
}

void halo_cpu_dropout_block(float *dst, const float *src, int64_t rows, int64_t cols,
                            const int64_t *global_id, uint64_t key, float p) {
  const float scale = halo_dropout_scale(p);
  const uint64_t threshold = halo_dropout_threshold(p);
  for (int64_t i = 0; i < rows; i++)
    dropout_row(dst + i * cols, src + i * cols, cols, halo_rng_mix(key ^ (uint64_t)global_id[i]),
                threshold, scale);
}

/* max |x| from the largest of its values' sign-cleared bits, as
 * halo_cpu_max_abs reports it: +inf for an inf or a NaN. */
static float max_from_bits(uint32_t m) {
  if (m >= 0x7f800000u) return INFINITY;
  float f;
  memcpy(&f, &m, sizeof f);
  return f;
}

void halo_cpu_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id, uint64_t key,
                      float p) {
  if (p <= 0.0f) return;
  dropout_rows(y, y, rows, cols, global_id, key, p);
}

void halo_cpu_dropout_to(float *restrict dst, const float *restrict src, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p) {
  if (p <= 0.0f) {
    if (rows > 0 && cols > 0) memcpy(dst, src, (size_t)(rows * cols) * sizeof *dst);
    return;
  }
  dropout_rows(dst, src, rows, cols, global_id, key, p);
}

float halo_cpu_dropout_to_max(float *restrict dst, const float *restrict src, int64_t rows,
                              int64_t cols, const int64_t *global_id, uint64_t key, float p) {
  if (p <= 0.0f) {
    halo_cpu_dropout_to(dst, src, rows, cols, global_id, key, p);
    return halo_cpu_max_abs(dst, rows * cols);
  }
  if (rows <= 0 || cols <= 0) return 0.0f;
  const float scale = halo_dropout_scale(p);
  const uint64_t threshold = halo_dropout_threshold(p);
  /* The max of a few rows just written, while they are in L1: one
   * reduction every MAX_VALUES values.  (Lanes of maxima kept across rows
   * inside the dropout's loop cost a fifth of the loop: 2026-12-08.) */
  enum { MAX_VALUES = 4096 };
  const int64_t step = cols < MAX_VALUES ? MAX_VALUES / cols : 1;
  uint32_t m = 0;
#pragma omp parallel for schedule(static) reduction(max : m) \
    if (rows * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t i0 = 0; i0 < rows; i0 += step) {
    const int64_t i1 = rows - i0 < step ? rows : i0 + step;
    for (int64_t i = i0; i < i1; i++)
      dropout_row(dst + i * cols, src + i * cols, cols,
                  halo_rng_mix(key ^ (uint64_t)global_id[i]), threshold, scale);
    const uint32_t b = halo_cpu_max_abs_bits(dst + i0 * cols, (i1 - i0) * cols);
    m = b > m ? b : m;
  }
  return max_from_bits(m);
}

/* The non-zeros [k0, k1) of a row of X (transposed 0: node fixed, its half
 * of the hash in row_key, the column in indices) or of a row of Xᵀ
 * (transposed 1: the column fixed, its term col_term = col ·
 * HALO_RNG_COL_MUL, the node gid[indices[k]]), as dropout_bits does for a
 * dense row: halo_dropout_apply's bits, in loops that vectorise (AVX-512's
 * 64-bit products and gathers, as the dense rows' clones). */
HALO__DROPOUT_CLONES static void csr_drop_row(float *restrict out, const int32_t *restrict indices,
                                              const float *restrict values, int64_t k0, int64_t k1,
                                              uint64_t row_key, uint64_t threshold, float scale) {
#pragma omp simd
  for (int64_t k = k0; k < k1; k++) {
    const uint32_t bits =
        dropout_bits(values ? values[k] : 1.0f, row_key, indices[k], threshold, scale);
    memcpy(&out[k], &bits, sizeof bits);
  }
}

HALO__DROPOUT_CLONES static void csr_drop_col(float *restrict out, const int32_t *restrict indices,
                                              const float *restrict values, int64_t k0, int64_t k1,
                                              const int64_t *restrict global_id, uint64_t key,
                                              uint64_t col_term, uint64_t threshold, float scale) {
#pragma omp simd
  for (int64_t k = k0; k < k1; k++) {
    const uint64_t node_key = halo_rng_mix(key ^ (uint64_t)global_id[indices[k]]);
    const uint64_t draw = halo_rng_mix(node_key ^ col_term) >> 40;
    const float kept = (values ? values[k] : 1.0f) * scale;
    uint32_t bits;
    memcpy(&bits, &kept, sizeof bits);
    bits &= 0u - (uint32_t)(draw >= threshold);
    memcpy(&out[k], &bits, sizeof bits);
  }
}

void halo_cpu_csr_dropout(const int64_t *indptr, const int32_t *indices, const float *values,
                          int64_t rows, int transposed, const int64_t *global_id, uint64_t key,
                          float p, float *out) {
  const float scale = halo_dropout_scale(p);
  const uint64_t threshold = halo_dropout_threshold(p);
  /* Rows differ in length: hand them out in small dynamic chunks. */
#pragma omp parallel for schedule(dynamic, 256) if (rows > 0 && indptr[rows] >= HALO_PARALLEL_HEAVY)
  for (int64_t r = 0; r < rows; r++) {
    if (transposed)
      csr_drop_col(out, indices, values, indptr[r], indptr[r + 1], global_id, key,
                   (uint64_t)r * HALO_RNG_COL_MUL, threshold, scale);
    else
      csr_drop_row(out, indices, values, indptr[r], indptr[r + 1],
                   halo_rng_mix(key ^ (uint64_t)global_id[r]), threshold, scale);
  }
}
