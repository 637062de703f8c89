/* Bias, AXPY, column sums, products and row normalisations on the CPU
 * (the activations are in cpu-activation.c).
 *
 * Each loop is memory-bound, so it runs in parallel only when the array is
 * large enough to amortise waking the OpenMP team, and vectorises along the
 * contiguous dimension.
 */
#include <math.h>
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

/* Columns summed per pass of halo_cpu_colsum: its double accumulators. */
enum { COLSUM_TILE = 64 };

void halo_cpu_bias_add(float *y, int64_t rows, int64_t cols, const float *bias) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict yr = y + i * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) yr[j] += bias[j];
  }
}

void halo_cpu_colsum(const float *g, int64_t rows, int64_t cols, float *grad_bias) {
  /* A tile of columns at a time, so that the per-thread partial sums are a
   * fixed-size array and nothing is allocated. */
  for (int64_t c0 = 0; c0 < cols; c0 += COLSUM_TILE) {
    const int64_t w = cols - c0 < COLSUM_TILE ? cols - c0 : COLSUM_TILE;
    double sum[COLSUM_TILE] = {0};
#pragma omp parallel for schedule(static) reduction(+ : sum[:COLSUM_TILE]) \
    if (rows * w >= HALO_PARALLEL_STREAM)
    for (int64_t i = 0; i < rows; i++) {
      const float *restrict gr = g + i * cols + c0;
#pragma omp simd
      for (int64_t j = 0; j < w; j++) sum[j] += gr[j];
    }
    for (int64_t j = 0; j < w; j++) grad_bias[c0 + j] = (float)sum[j];
  }
}

void halo_cpu_row_normalize(float *x, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict xr = x + i * cols;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; j++) sum += xr[j];
    if (sum == 0.0) continue;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) xr[j] = (float)(xr[j] / sum);
  }
}

void halo_cpu_axpy(float *y, const float *x, int64_t n, float alpha, const float *p) {
  const float a = alpha + (p ? *p : 0.0f);
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* torch's F.normalize eps: the smallest norm a row is divided by. */
static const float L2_EPS = 1e-12f;

void halo_cpu_l2_normalize(float *y, int64_t rows, int64_t cols, float *norm) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict yr = y + i * cols;
    double sq = 0.0; /* ascending, not vectorised: the same bits on every CPU */
    for (int64_t j = 0; j < cols; j++) sq += (double)yr[j] * yr[j];
    const float r = fmaxf((float)sqrt(sq), L2_EPS);
    norm[i] = r;
    for (int64_t j = 0; j < cols; j++) yr[j] /= r;
  }
}

void halo_cpu_l2_normalize_backward(float *g, const float *y, const float *norm, int64_t rows,
                                    int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict gr = g + i * cols;
    const float *restrict yr = y + i * cols;
    double dot = 0.0;
    if (norm[i] > L2_EPS)
      for (int64_t j = 0; j < cols; j++) dot += (double)yr[j] * gr[j];
    const float d = (float)dot;
    for (int64_t j = 0; j < cols; j++) gr[j] = (gr[j] - yr[j] * d) / norm[i];
  }
}

/* torch.nn.LayerNorm's default eps. */
static const double LN_EPS = 1e-5;

void halo_cpu_layernorm(float *y, int64_t rows, int64_t cols, const float *gamma,
                        const float *beta, float *xhat, float *rstd) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict yr = y + i * cols, *restrict xr = xhat + i * cols;
    double sum = 0.0, sq = 0.0;
    for (int64_t j = 0; j < cols; j++) sum += yr[j];
    const double mean = cols ? sum / (double)cols : 0.0;
    for (int64_t j = 0; j < cols; j++) sq += ((double)yr[j] - mean) * ((double)yr[j] - mean);
    const double r = 1.0 / sqrt((cols ? sq / (double)cols : 0.0) + LN_EPS);
    rstd[i] = (float)r;
    for (int64_t j = 0; j < cols; j++) {
      xr[j] = (float)(((double)yr[j] - mean) * r);
      yr[j] = xr[j] * gamma[j] + beta[j];
    }
  }
}

void halo_cpu_layernorm_backward(float *g, const float *xhat, const float *rstd,
                                 const float *gamma, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < rows; i++) {
    float *restrict gr = g + i * cols;
    const float *restrict xr = xhat + i * cols;
    double sd = 0.0, sdx = 0.0;
    for (int64_t j = 0; j < cols; j++) {
      const double d = (double)gr[j] * gamma[j];
      sd += d;
      sdx += d * xr[j];
    }
    const double md = cols ? sd / (double)cols : 0.0, mdx = cols ? sdx / (double)cols : 0.0;
    for (int64_t j = 0; j < cols; j++) {
      const double d = (double)gr[j] * gamma[j];
      gr[j] = (float)((double)rstd[i] * (d - md - (double)xr[j] * mdx));
    }
  }
}

void halo_cpu_mul(float *out, const float *a, const float *b, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}
