/* Inverted dropout keyed by global row id, dense in place, dense out of
 * place, and through a sparse matrix's non-zeros.
 *
 * The keep test and the scale are halo_dropout_keep and halo_dropout_scale
 * (core/halo-rng.h), which the CUDA twins call too: the mask is a pure
 * function of (key, global id, column), independent of where the row sits
 * locally, of the rank and of the thread, and every device computes the same
 * float operations bit for bit.
 */
#include <stdint.h>
#include <string.h>

#include "halo-kernels.h"
#include "halo-rng.h"

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 14;

void halo_cpu_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id, uint64_t key,
                      float p) {
  if (p <= 0.0f) return;
  const float scale = halo_dropout_scale(p);
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
  for (int64_t i = 0; i < rows; i++) {
    const uint64_t node = (uint64_t)global_id[i];
    float *restrict yr = y + i * cols;
    for (int64_t j = 0; j < cols; j++)
      yr[j] = halo_dropout_apply(yr[j], key, node, (uint64_t)j, p, scale);
  }
}

void halo_cpu_dropout_to(float *restrict dst, const float *restrict src, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p) {
  if (p <= 0.0f) {
    if (rows > 0 && cols > 0) memcpy(dst, src, (size_t)(rows * cols) * sizeof *dst);
    return;
  }
  const float scale = halo_dropout_scale(p);
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
  for (int64_t i = 0; i < rows; i++) {
    const uint64_t node = (uint64_t)global_id[i];
    const float *restrict in = src + i * cols;
    float *restrict out = dst + i * cols;
    for (int64_t j = 0; j < cols; j++)
      out[j] = halo_dropout_apply(in[j], key, node, (uint64_t)j, p, scale);
  }
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
