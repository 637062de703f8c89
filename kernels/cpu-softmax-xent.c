/* Masked losses and their gradients: softmax cross-entropy (one class a
 * node) and binary cross-entropy with logits (multi-label: one binary task
 * per column).
 *
 * Each masked row is computed in double with the maximum subtracted first,
 * so exp never overflows:  lse = max + log Σ_j exp(z_j - max),
 * loss_i = lse - z[label],  softmax_j = exp(z_j - lse).
 * argmax ties go to the lowest column, as in PyTorch.
 *
 * The loss is summed on a fixed-point grid (LOSS_GRID_BITS): each row's loss is
 * rounded once to a multiple of 2^-30 and the integers are added, so the sum
 * does not depend on the thread count, and the sums of several ranks, all
 * multiples of 2^-30, add exactly in double while they stay below 2^23:
 * the reported loss is then the same for any partition
 * (docs/reproducibility.md).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "halo-kernels.h"

/* The loss grid: 2^LOSS_GRID_BITS steps per unit. */
enum { LOSS_GRID_BITS = 30 };

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 14;

void halo_cpu_softmax_xent(const float *z, int64_t rows, int64_t cols, const int32_t *labels,
                           const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                           double *loss_sum, int64_t *correct) {
  /* The loss in grid units, split into high and low 31-bit halves so that
   * neither int64 sum can overflow below 2^32 rows. */
  int64_t loss_hi = 0, loss_lo = 0, bad = 0, hits = 0;

  /* Rows outside the mask get a zero gradient. */
  if (g) {
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++) memset(g + i * cols, 0, (size_t)cols * sizeof *g);
  }

#pragma omp parallel for schedule(static) reduction(+ : loss_hi, loss_lo, bad, hits) \
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
      bad++;
      continue;
    }
    /* A loss that is not finite (non-finite logits) or past 2^32 makes the
     * sum NaN, while the row's gradient is still written (NaN shows there,
     * as on the float path). */
    const double row_loss = lse - (double)zr[label];
    if (row_loss < 0x1p32) {
      const int64_t units = llrint(ldexp(row_loss, LOSS_GRID_BITS)); /* < 2^62 */
      loss_hi += units >> 31;
      loss_lo += units & (((int64_t)1 << 31) - 1);
    } else {
      bad++;
    }
    hits += argmax == label;
    if (g) {
      float *restrict gr = g + i * cols;
      for (int64_t j = 0; j < cols; j++) {
        const double onehot = j == label ? 1.0 : 0.0;
        gr[j] = (float)((exp((double)zr[j] - lse) - onehot) * grad_scale);
      }
    }
  }
  const __int128 units = (__int128)loss_hi * ((__int128)1 << 31) + loss_lo;
  *loss_sum = bad ? NAN : ldexp((double)units, -LOSS_GRID_BITS);
  *correct = hits;
}

/* log(1 + exp(-|z|)) + max(z, 0) - z·y, without overflow for any z. */
static inline double bce_term(double z, double y) {
  return (z > 0.0 ? z : 0.0) - z * y + log1p(exp(-fabs(z)));
}

/* 1 / (1 + exp(-z)), without overflow for any z. */
static inline double sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + exp(-z));
  const double e = exp(z);
  return e / (1.0 + e);
}

void halo_cpu_sigmoid_bce(const float *z, int64_t rows, int64_t cols, const int8_t *targets,
                          const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                          double *loss_sum, int64_t *correct) {
  int64_t loss_hi = 0, loss_lo = 0, bad = 0, hits = 0;
  if (g) {
#pragma omp parallel for schedule(static) if (rows * cols >= PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++) memset(g + i * cols, 0, (size_t)cols * sizeof *g);
  }

#pragma omp parallel for schedule(static) reduction(+ : loss_hi, loss_lo, bad, hits) \
    if (nmask * cols >= PARALLEL_MIN)
  for (int64_t m = 0; m < nmask; m++) {
    const int64_t i = mask[m];
    const float *restrict zr = z + i * cols;
    const int8_t *restrict yr = targets + i * cols;
    float *restrict gr = g ? g + i * cols : NULL;
    double row_loss = 0.0;
    for (int64_t t = 0; t < cols; t++) {
      const int8_t y = yr[t];
      if (y < 0) {
        bad += y != -1; /* only -1 means missing */
        continue;
      }
      if (y > 1) {
        bad++;
        continue;
      }
      const double zt = (double)zr[t];
      row_loss += bce_term(zt, (double)y);
      hits += (zt > 0.0) == (y == 1);
      if (gr) gr[t] = (float)((sigmoid(zt) - (double)y) * grad_scale);
    }
    if (row_loss < 0x1p32) {
      const int64_t units = llrint(ldexp(row_loss, LOSS_GRID_BITS)); /* < 2^62 */
      loss_hi += units >> 31;
      loss_lo += units & (((int64_t)1 << 31) - 1);
    } else {
      bad++;
    }
  }
  const __int128 units = (__int128)loss_hi * ((__int128)1 << 31) + loss_lo;
  *loss_sum = bad ? NAN : ldexp((double)units, -LOSS_GRID_BITS);
  *correct = hits;
}
