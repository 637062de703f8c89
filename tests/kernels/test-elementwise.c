/* Bias, column sums, ReLU, row normalisation and halo pack/unpack against
 * straightforward double references.  Sizes straddle the kernels' parallel
 * thresholds so both the serial and the OpenMP paths run. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"

static const int64_t SHAPES[][2] = {{1, 1}, {3, 7}, {100, 16}, {2000, 130}, {5000, 17}};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

static float *random_matrix(uint64_t key, int64_t n, float lo, float hi) {
  float *m = malloc((size_t)(n ? n : 1) * sizeof *m);
  cr_assert(m);
  test_fill(m, n, key, lo, hi);
  return m;
}

Test(elementwise, bias_add) {
  const uint64_t seed = test_seed("elementwise.bias_add");
  for (int s = 0; s < NSHAPES; s++) {
    const int64_t rows = SHAPES[s][0], cols = SHAPES[s][1];
    float *y = random_matrix(test_key(seed, 10 * (uint64_t)s), rows * cols, -1.0f, 1.0f);
    float *y0 = malloc((size_t)(rows * cols) * sizeof *y0);
    float *bias = random_matrix(test_key(seed, 10 * (uint64_t)s + 1), cols, -1.0f, 1.0f);
    memcpy(y0, y, (size_t)(rows * cols) * sizeof *y);
    halo_cpu_bias_add(y, rows, cols, bias);
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        cr_assert_eq(y[i * cols + j], (float)((double)y0[i * cols + j] + bias[j]),
                     "shape %d: Y[%lld, %lld]", s, (long long)i, (long long)j);
    free(y);
    free(y0);
    free(bias);
  }
}

Test(elementwise, colsum) {
  const uint64_t seed = test_seed("elementwise.colsum");
  for (int s = 0; s < NSHAPES; s++) {
    const int64_t rows = SHAPES[s][0], cols = SHAPES[s][1];
    float *g = random_matrix(test_key(seed, 20 + (uint64_t)s), rows * cols, -1.0f, 1.0f);
    float *sum = random_matrix(test_key(seed, 30 + (uint64_t)s), cols, 5.0f, 6.0f);
    halo_cpu_colsum(g, rows, cols, sum);
    for (int64_t j = 0; j < cols; j++) {
      double ref = 0.0, mag = 0.0;
      for (int64_t i = 0; i < rows; i++) {
        ref += g[i * cols + j];
        mag += fabs(g[i * cols + j]);
      }
      /* Summed in double, then rounded once to float. */
      cr_assert(fabs(sum[j] - ref) <= FLT_EPSILON * fabs(ref) + 1e-12 * mag,
                "shape %d: column %lld sums to %.9g, reference %.9g", s, (long long)j, sum[j], ref);
    }
    free(g);
    free(sum);
  }
}

Test(elementwise, relu_and_backward) {
  const uint64_t seed = test_seed("elementwise.relu_and_backward");
  const int64_t n = 100003;
  float *y = random_matrix(test_key(seed, 1), n, -1.0f, 1.0f);
  float *x = malloc((size_t)n * sizeof *x);
  float *g = random_matrix(test_key(seed, 2), n, -3.0f, 3.0f);
  float *g0 = malloc((size_t)n * sizeof *g0);
  memcpy(x, y, (size_t)n * sizeof *x);
  memcpy(g0, g, (size_t)n * sizeof *g0);
  y[0] = 0.0f;
  x[0] = 0.0f;
  halo_cpu_relu(y, n);
  halo_cpu_relu_backward(g, y, n);
  int64_t negative = 0;
  for (int64_t i = 0; i < n; i++) {
    cr_assert_eq(y[i], x[i] > 0.0f ? x[i] : 0.0f, "relu at %lld", (long long)i);
    cr_assert_eq(g[i], x[i] > 0.0f ? g0[i] : 0.0f, "relu_backward at %lld", (long long)i);
    negative += x[i] < 0.0f;
  }
  cr_expect(negative > n / 3 && negative < 2 * n / 3, "the input should be half negative");
  free(y);
  free(x);
  free(g);
  free(g0);
}

Test(elementwise, row_normalize) {
  const uint64_t seed = test_seed("elementwise.row_normalize");
  for (int s = 0; s < NSHAPES; s++) {
    const int64_t rows = SHAPES[s][0], cols = SHAPES[s][1];
    float *x = random_matrix(test_key(seed, 40 + (uint64_t)s), rows * cols, 0.0f, 2.0f);
    /* A row of zeros stays as it is, and so does one that sums to zero. */
    if (rows > 2) {
      memset(x + cols, 0, (size_t)cols * sizeof *x);
      if (cols > 1) {
        x[2 * cols] = 1.5f;
        x[2 * cols + 1] = -1.5f;
        for (int64_t j = 2; j < cols; j++) x[2 * cols + j] = 0.0f;
      }
    }
    float *x0 = malloc((size_t)(rows * cols) * sizeof *x0);
    memcpy(x0, x, (size_t)(rows * cols) * sizeof *x);
    halo_cpu_row_normalize(x, rows, cols);
    for (int64_t i = 0; i < rows; i++) {
      double sum = 0.0;
      for (int64_t j = 0; j < cols; j++) sum += x0[i * cols + j];
      for (int64_t j = 0; j < cols; j++) {
        const double ref = sum == 0.0 ? x0[i * cols + j] : x0[i * cols + j] / sum;
        cr_assert(fabs(x[i * cols + j] - ref) <= FLT_EPSILON * fabs(ref),
                  "shape %d: X[%lld, %lld] = %.9g, reference %.9g", s, (long long)i, (long long)j,
                  x[i * cols + j], ref);
      }
    }
    free(x);
    free(x0);
  }
}

Test(elementwise, pack_then_unpack) {
  const uint64_t seed = test_seed("elementwise.pack_then_unpack");
  const int64_t rows = 3000, cols = 19, n = 1500;
  float *src = random_matrix(test_key(seed, 1), rows * cols, -1.0f, 1.0f);
  float *buf = random_matrix(test_key(seed, 2), n * cols, 7.0f, 8.0f);
  float *dst = random_matrix(test_key(seed, 3), rows * cols, 7.0f, 8.0f);
  float *dst0 = malloc((size_t)(rows * cols) * sizeof *dst0);
  int32_t *perm = malloc((size_t)rows * sizeof *perm);
  memcpy(dst0, dst, (size_t)(rows * cols) * sizeof *dst);
  /* idx: n distinct rows in random order. */
  for (int64_t i = 0; i < rows; i++) perm[i] = (int32_t)i;
  for (int64_t i = rows - 1; i > 0; i--) {
    const int64_t s = test_below(test_key(seed, 4), (uint64_t)i, i + 1);
    const int32_t t = perm[i];
    perm[i] = perm[s];
    perm[s] = t;
  }
  halo_cpu_pack(buf, src, cols, perm, n);
  for (int64_t i = 0; i < n; i++)
    cr_assert(memcmp(buf + i * cols, src + perm[i] * cols, (size_t)cols * sizeof *buf) == 0,
              "packed row %lld", (long long)i);
  halo_cpu_unpack(dst, buf, cols, perm, n);
  char *hit = calloc((size_t)rows, 1);
  for (int64_t i = 0; i < n; i++) hit[perm[i]] = 1;
  for (int64_t r = 0; r < rows; r++)
    cr_assert(
        memcmp(dst + r * cols, (hit[r] ? src : dst0) + r * cols, (size_t)cols * sizeof *dst) == 0,
        "unpacked row %lld", (long long)r);
  free(src);
  free(buf);
  free(dst);
  free(dst0);
  free(perm);
  free(hit);
}
