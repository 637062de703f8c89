/* BatchNorm's three steps on one rank's rows (halo-kernels.h): the column
 * sums its statistics and its backward reduce over every rank, the
 * normalisation, and the backward.  The reductions across ranks, float or
 * exact, are the caller's (src/gnn-batchnorm.c). */
#include <string.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_bn_sums(const float *x, const float *y, int64_t rows, int64_t cols, double *sx,
                      double *sxy) {
  memset(sx, 0, (size_t)cols * sizeof *sx);
  memset(sxy, 0, (size_t)cols * sizeof *sxy);
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * cols, *yr = (y ? y : x) + i * cols;
    for (int64_t c = 0; c < cols; c++) {
      sx[c] += (double)xr[c];
      sxy[c] += (double)xr[c] * (double)yr[c];
    }
  }
}

void halo_cpu_batchnorm(float *y, int64_t rows, int64_t cols, const double *shift,
                        const double *scale, const float *gamma, const float *beta, float *xhat) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < cols; c++) {
      const double h = ((double)y[i * cols + c] - shift[c]) * scale[c];
      if (xhat) xhat[i * cols + c] = (float)h;
      y[i * cols + c] = (float)((double)gamma[c] * h + (double)beta[c]);
    }
}

void halo_cpu_batchnorm_backward(float *g, const float *xhat, int64_t rows, int64_t cols,
                                 const float *gamma, const double *scale, const double *a,
                                 const double *b) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < cols; c++) {
      const double d = (double)g[i * cols + c] - a[c] - (double)xhat[i * cols + c] * b[c];
      g[i * cols + c] = (float)((double)gamma[c] * scale[c] * d);
    }
}
