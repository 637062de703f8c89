/* Inverted dropout keyed by global row id.
 *
 * Element (i, j) is kept iff halo_rng_uniform(key, global_id[i], j) >= p and
 * a kept value becomes y · (1.0f / (1.0f - p)), the scale computed once in
 * float.  The mask is a pure function of (key, global id, column): it does
 * not depend on where the row sits locally, on the rank or on the thread, and
 * the CUDA twin computes the same float operations bit for bit.
 */
#include <stdint.h>

#include "halo-kernels.h"
#include "halo-rng.h"

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 14;

void halo_cpu_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id, uint64_t key,
                      float p) {
  if (p <= 0.0f) return;
  /* p >= 1 keeps nothing (uniform draws are < 1), and 1/(1-p) would be inf. */
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
  for (int64_t i = 0; i < rows; i++) {
    const uint64_t row = (uint64_t)global_id[i];
    float *restrict yr = y + i * cols;
    for (int64_t j = 0; j < cols; j++)
      yr[j] = halo_rng_uniform(key, row, (uint64_t)j) >= p ? yr[j] * scale : 0.0f;
  }
}
