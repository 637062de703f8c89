/* Masked softmax cross-entropy and its gradient.
 *
 * Each masked row is computed in double with the maximum subtracted first,
 * so exp never overflows:  lse = max + log Σ_j exp(z_j - max),
 * loss_i = lse - z[label],  softmax_j = exp(z_j - lse).
 * argmax ties go to the lowest column, as in PyTorch.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "halo-kernels.h"

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 14;

void halo_cpu_softmax_xent(const float *z, int64_t rows, int64_t cols, const int32_t *labels,
                           const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                           double *loss_sum, int64_t *correct) {
  double loss = 0.0;
  int64_t hits = 0;

  /* Rows outside the mask get a zero gradient. */
  if (g) {
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++) memset(g + i * cols, 0, (size_t)cols * sizeof *g);
  }

#pragma omp parallel for schedule(static) reduction(+ : loss, hits) \
    if (nmask * cols >= PARALLEL_MIN)
  for (int64_t m = 0; m < nmask; m++) {
    const int64_t i = mask[m];
    const float *restrict zr = z + i * cols;
    const int32_t label = labels[i];

    int64_t argmax = 0;
    for (int64_t j = 1; j < cols; j++)
      if (zr[j] > zr[argmax]) argmax = j;
    const double zmax = zr[argmax];
    double sum = 0.0;
    for (int64_t j = 0; j < cols; j++) sum += exp((double)zr[j] - zmax);
    const double lse = zmax + log(sum);

    /* A label outside [0, cols) is a fault of the caller's data: it turns the
     * loss into NaN, so that it cannot pass unnoticed, and adds no gradient. */
    if (label < 0 || label >= cols) {
      loss += NAN;
      continue;
    }
    loss += lse - (double)zr[label];
    hits += argmax == label;
    if (g) {
      float *restrict gr = g + i * cols;
      for (int64_t j = 0; j < cols; j++) {
        const double onehot = j == label ? 1.0 : 0.0;
        gr[j] = (float)((exp((double)zr[j] - lse) - onehot) * grad_scale);
      }
    }
  }
  *loss_sum = loss;
  *correct = hits;
}
