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

#include "halo-kernels.h"
#include "halo-rng.h"

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 14;

/* One row of dropout: out[j] = in[j] after halo_dropout_apply's test for
 * (key, node, j), with the row's half of halo_rng_bits (the mix of key ^
 * node) hoisted, and the keep test `uniform >= p` as the integer test on
 * the draw's 24 bits that it is (draw · 2^-24 and p · 2^24 are exact in
 * float, so `draw >= ceil(p · 2^24)` holds exactly when it does): the same
 * bits, in a loop that vectorises.  The 64-bit products need AVX-512DQ to
 * vectorise in one instruction (AVX2 builds them from 32-bit ones): hence
 * the clones.  in may be out. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void
dropout_row(float *out, const float *in, int64_t cols, uint64_t row_key, uint64_t threshold,
            float scale) {
#pragma omp simd
  for (int64_t j = 0; j < cols; j++) {
    const uint64_t draw = halo_rng_mix(row_key ^ ((uint64_t)j * HALO_RNG_COL_MUL)) >> 40;
    const float kept = in[j] * scale;
    uint32_t bits;
    memcpy(&bits, &kept, sizeof bits);
    bits &= 0u - (uint32_t)(draw >= threshold);
    memcpy(&out[j], &bits, sizeof bits);
  }
}

static void dropout_rows(float *dst, const float *src, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p) {
  const float scale = halo_dropout_scale(p);
  const uint64_t threshold = halo_dropout_threshold(p);
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
  for (int64_t i = 0; i < rows; i++)
    dropout_row(dst + i * cols, src + i * cols, cols, halo_rng_mix(key ^ (uint64_t)global_id[i]),
                threshold, scale);
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

void halo_cpu_csr_dropout(const int64_t *indptr, const int32_t *indices, const float *values,
                          int64_t rows, int transposed, const int64_t *global_id, uint64_t key,
                          float p, float *out) {
  const float scale = halo_dropout_scale(p);
  /* Rows differ in length: hand them out in small dynamic chunks. */
#pragma omp parallel for schedule(dynamic, 256) if (rows > 0 && indptr[rows] >= PARALLEL_MIN)
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t k = indptr[r]; k < indptr[r + 1]; k++) {
      const uint64_t node = transposed ? (uint64_t)global_id[indices[k]] : (uint64_t)global_id[r];
      const uint64_t col = transposed ? (uint64_t)r : (uint64_t)indices[k];
      out[k] = halo_dropout_apply(values ? values[k] : 1.0f, key, node, col, p, scale);
    }
  }
}
