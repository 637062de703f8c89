/* Gathers rows into a send buffer and scatters received rows, for the halo
 * exchange.  Rows are contiguous runs of `cols` floats, so each is one
 * vectorised copy; threads take rows. */
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_pack(float *dst, const float *src, int64_t cols, const int32_t *idx, int64_t n) {
#pragma omp parallel for schedule(static) if (n * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) {
    const float *restrict from = src + (int64_t)idx[i] * cols;
    float *restrict to = dst + i * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) to[j] = from[j];
  }
}

void halo_cpu_unpack(float *dst, const float *src, int64_t cols, const int32_t *idx, int64_t n) {
#pragma omp parallel for schedule(static) if (n * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) {
    const float *restrict from = src + i * cols;
    float *restrict to = dst + (int64_t)idx[i] * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) to[j] = from[j];
  }
}
