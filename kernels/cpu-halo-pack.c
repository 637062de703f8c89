/* Packs send rows into, and unpacks received rows from, the low-bit wire
 * format of the halo exchange (core/halo-quant.h holds the format and the
 * per-row arithmetic, shared with a CUDA twin); threads take rows.  The
 * rounding is keyed per element, so the result does not depend on the
 * thread count. */
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"
#include "halo-quant.h"

/* A gathered row and, below 32 bits, a hash a value for the stochastic
 * rounding: a heavy loop (cpu-parallel.h). */
void halo_cpu_quant_pack(uint8_t *dst, const float *src, int64_t cols, const int32_t *idx,
                         const int64_t *gid, int64_t n, int prec, uint64_t key) {
  const int64_t row_bytes = halo_quant_row_bytes(prec, cols);
#pragma omp parallel for schedule(static) if (n * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t i = 0; i < n; i++)
    halo_quant_pack_row(dst + i * row_bytes, src + (int64_t)idx[i] * cols, cols, prec, key, gid[i]);
}

void halo_cpu_quant_unpack(float *dst, const uint8_t *src, int64_t cols, int64_t n, int prec) {
  const int64_t row_bytes = halo_quant_row_bytes(prec, cols);
#pragma omp parallel for schedule(static) if (n * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) halo_quant_unpack_row(dst + i * cols, src + i * row_bytes, cols, prec);
}
