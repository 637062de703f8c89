/* Bias, column sums, ReLU, ELU, row normalisation, halo pack/unpack, LayerNorm
 * and the elementwise product against straightforward double (LayerNorm:
 * long double) references, and LayerNorm's backward against central
 * differences of a double forward.  Sizes straddle the kernels' parallel
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

/* ELU against expm1 in long double, rounded once: halo's expm1 (in double)
 * is the correctly rounded float but within 2^-52 of a midpoint, which
 * 200,003 draws should not meet (at most one is allowed, within 1 ulp).
 * Inputs from -40 to 2, tiny and subnormal ones, -0, -inf and NaN; sizes
 * on both sides of the parallel threshold.  The backward G·(Y + 1) below
 * 0 rounds once, so it is exact against the same product in float. */
Test(elementwise, elu_and_backward) {
  const uint64_t seed = test_seed("elementwise.elu_and_backward");
  static const int64_t sizes[] = {1000, 200003};
  for (int s = 0; s < 2; s++) {
    const int64_t n = sizes[s];
    float *y = random_matrix(test_key(seed, 1 + 2 * s), n, -40.0f, 2.0f);
    float *g = random_matrix(test_key(seed, 2 + 2 * s), n, -3.0f, 3.0f);
    float *x = malloc((size_t)n * sizeof *x), *g0 = malloc((size_t)n * sizeof *g0);
    cr_assert(x && g0);
    for (int64_t i = 0; i < n; i += 5) y[i] *= 1e-3f; /* near 0, where e^x - 1 cancels */
    const float special[] = {-0.0f, 0.0f, -INFINITY, NAN, -1e-30f, -1.4e-45f, -1e-7f, -0.3465f,
                             -0.3466f, -16.7f, -17.4f, -88.0f, -1e30f, INFINITY};
    for (int k = 0; k < (int)(sizeof special / sizeof *special); k++) y[7 * k] = special[k];
    memcpy(x, y, (size_t)n * sizeof *x);
    memcpy(g0, g, (size_t)n * sizeof *g0);
    halo_cpu_elu(y, n);
    halo_cpu_elu_backward(g, y, n);
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
      if (isnan(x[i])) {
        cr_assert(isnan(y[i]), "elu(NaN) = %g", (double)y[i]);
        continue;
      }
      const float want = x[i] < 0.0f ? (float)expm1l((long double)x[i]) : x[i];
      if (memcmp(&want, &y[i], sizeof want) != 0) {
        off++;
        cr_assert(fabsf(y[i] - want) <= fabsf(nextafterf(want, 0.0f) - want),
                  "elu(%.9g) = %.9g, want %.9g", (double)x[i], (double)y[i], (double)want);
      }
      const float dwant = g0[i] * (y[i] > 0.0f ? 1.0f : y[i] + 1.0f);
      cr_assert_eq(g[i], dwant, "elu_backward at %lld", (long long)i);
    }
    cr_expect_leq(off, 1, "%lld of %lld ELU values not correctly rounded", (long long)off,
                  (long long)n);
    cr_assert(signbit(y[0]) && y[0] == 0.0f, "elu(-0) keeps its sign");
    free(y);
    free(x);
    free(g);
    free(g0);
  }
}

/* LeakyReLU against double: the product slope·x rounds once, so the float
 * result is the double one rounded; the backward multiplies G the same way. */
Test(elementwise, leaky_relu_and_backward) {
  const uint64_t seed = test_seed("elementwise.leaky_relu_and_backward");
  const int64_t n = 100003;
  const float slopes[] = {0.01f, 0.2f, 1.0f};
  for (int s = 0; s < 3; s++) {
    const float slope = slopes[s];
    float *y = random_matrix(test_key(seed, 1 + 2 * s), n, -1.0f, 1.0f);
    float *g = random_matrix(test_key(seed, 2 + 2 * s), n, -3.0f, 3.0f);
    float *x = malloc((size_t)n * sizeof *x), *g0 = malloc((size_t)n * sizeof *g0);
    y[0] = 0.0f;
    memcpy(x, y, (size_t)n * sizeof *x);
    memcpy(g0, g, (size_t)n * sizeof *g0);
    halo_cpu_leaky_relu(y, n, slope);
    halo_cpu_leaky_relu_backward(g, y, n, slope);
    for (int64_t i = 0; i < n; i++) {
      const float want = x[i] < 0.0f ? (float)((double)slope * x[i]) : x[i];
      const float dwant = x[i] < 0.0f ? (float)((double)slope * g0[i]) : g0[i];
      cr_assert_eq(y[i], want, "slope %g: leaky_relu at %lld", (double)slope, (long long)i);
      cr_assert_eq(g[i], dwant, "slope %g: leaky_relu_backward at %lld", (double)slope,
                   (long long)i);
    }
    free(y);
    free(x);
    free(g);
    free(g0);
  }
}

/* GELU against long double, and its backward
 * against the derivative Φ(x) + x·φ(x) in long double: both within a
 * float's rounding, over [-6, 6] and the tail [-13, -6]. */
Test(elementwise, gelu_and_backward) {
  const uint64_t seed = test_seed("elementwise.gelu_and_backward");
  const int64_t n = 100003;
  float *x = random_matrix(test_key(seed, 1), n, -6.0f, 6.0f);
  float *g = random_matrix(test_key(seed, 2), n, -3.0f, 3.0f);
  float *y = malloc((size_t)n * sizeof *y), *g0 = malloc((size_t)n * sizeof *g0);
  x[0] = 0.0f;
  x[1] = -30.0f; /* Φ underflows: 0 */
  /* A third in the far tail, down to where v·Φ(v) leaves the floats: the
   * kernel's erfc is a series times e^(-z²) there (scripts/fit-erfcx.py). */
  for (int64_t i = 2; i < n; i += 3) x[i] = -6.0f - 7.0f * (x[i] + 6.0f) / 12.0f;
  memcpy(g0, g, (size_t)n * sizeof *g0);
  halo_cpu_gelu_to(y, x, n);
  halo_cpu_gelu_backward(g, x, n);
  /* inf, -inf and NaN as the formula in double gives them: v, NaN (-inf·0)
   * and NaN; the backward's 1·g, NaN and NaN. */
  const float ends[3] = {INFINITY, -INFINITY, NAN};
  float ye[3], ge[3] = {2.0f, 2.0f, 2.0f};
  halo_cpu_gelu_to(ye, ends, 3);
  halo_cpu_gelu_backward(ge, ends, 3);
  cr_expect(ye[0] == INFINITY && isnan(ye[1]) && isnan(ye[2]), "gelu(inf, -inf, NaN) = %g %g %g",
            (double)ye[0], (double)ye[1], (double)ye[2]);
  cr_expect(isnan(ge[0]) && isnan(ge[1]) && isnan(ge[2]), "gelu_backward(inf, -inf, NaN) = %g %g %g",
            (double)ge[0], (double)ge[1], (double)ge[2]);
  for (int64_t i = 0; i < n; i++) {
    const long double v = x[i], cdf = 0.5L * erfcl(-v / sqrtl(2.0L));
    const long double want = v * cdf;
    const long double d = cdf + v * expl(-0.5L * v * v) / sqrtl(2.0L * 3.14159265358979323846L);
    const long double dwant = g0[i] * d;
    cr_assert(fabsl(y[i] - want) <= 1.2e-7L * fabsl(want) + 3e-45L, /* 2 subnormal steps */
              "gelu(%.9g) = %.9g, reference %.12Lg", (double)x[i], (double)y[i], want);
    cr_assert(fabsl(g[i] - dwant) <= 1.2e-7L * fabsl(dwant) + 3e-45L,
              "gelu_backward at %.9g: %.9g, reference %.12Lg", (double)x[i], (double)g[i], dwant);
  }
  free(x);
  free(y);
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

/* ---- LayerNorm and the elementwise product ------------------------------ */

/* The shapes above, one column alone, two columns. */
static const int64_t LN_SHAPES[][2] = {{1, 1},     {3, 7}, {100, 16}, {2000, 130},
                                       {5000, 17}, {9, 1}, {40, 2}};
enum { LN_NSHAPES = sizeof LN_SHAPES / sizeof LN_SHAPES[0] };

/* Every 37th row from row 1 repeats one value: its variance is 0. */
static int ln_constant(int64_t r) { return r % 37 == 1; }

/* A rows × cols input in [-1, 1] with an offset per row (so that the mean
 * matters) and the constant rows. */
static float *ln_input(uint64_t key, int64_t rows, int64_t cols) {
  float *x = random_matrix(key, rows * cols, -1.0f, 1.0f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++)
      x[r * cols + j] = ln_constant(r) ? x[r * cols] : x[r * cols + j] + 0.5f * (float)(r % 4);
  return x;
}

/* The row's mean and 1/sqrt(biased variance + 1e-5), in long double. */
static void ln_stats_ld(const float *x, int64_t cols, long double *mean, long double *rstd) {
  long double s = 0.0L, q = 0.0L;
  for (int64_t j = 0; j < cols; j++) s += x[j];
  *mean = cols ? s / cols : 0.0L;
  for (int64_t j = 0; j < cols; j++) q += (x[j] - *mean) * (x[j] - *mean);
  *rstd = 1.0L / sqrtl((cols ? q / cols : 0.0L) + 1e-5L);
}

/* Rounding bounds: rstd and XHAT are double results rounded once to float
 * (half an ulp, plus the double sums' error, relative 1e-12 of the row's
 * scale here); Y = XHAT·gamma + beta adds two float roundings. */
Test(elementwise, layernorm_against_long_double) {
  const uint64_t seed = test_seed("elementwise.layernorm");
  for (int s = 0; s < LN_NSHAPES; s++) {
    const int64_t rows = LN_SHAPES[s][0], cols = LN_SHAPES[s][1], n = rows * cols;
    float *y = ln_input(test_key(seed, 50 + (uint64_t)s), rows, cols);
    float *gamma = random_matrix(test_key(seed, 60 + (uint64_t)s), cols, 0.5f, 1.5f);
    float *beta = random_matrix(test_key(seed, 70 + (uint64_t)s), cols, -0.5f, 0.5f);
    float *x0 = malloc((size_t)n * sizeof *x0), *xhat = malloc((size_t)n * sizeof *xhat);
    float *rstd = malloc((size_t)rows * sizeof *rstd);
    memcpy(x0, y, (size_t)n * sizeof *y);
    halo_cpu_layernorm(y, rows, cols, gamma, beta, xhat, rstd);
    for (int64_t i = 0; i < rows; i++) {
      const float *xr = x0 + i * cols;
      long double mean, rs;
      ln_stats_ld(xr, cols, &mean, &rs);
      double mag = 0.0;
      for (int64_t j = 0; j < cols; j++) mag = fmax(mag, fabs((double)xr[j]));
      cr_assert(fabsl(rstd[i] - rs) <= FLT_EPSILON * rs,
                "shape %d: rstd[%lld] = %.9g, reference %.12Lg", s, (long long)i, rstd[i], rs);
      if (ln_constant(i) || cols == 1)
        cr_assert_eq(rstd[i], (float)(1.0 / sqrt(1e-5)), "shape %d: row %lld of variance 0", s,
                     (long long)i);
      for (int64_t j = 0; j < cols; j++) {
        const long double xh = (xr[j] - mean) * rs, ref = xh * gamma[j] + beta[j];
        const double tx = FLT_EPSILON * fabsl(xh) + 1e-12 * (double)rs * (mag + 1.0);
        const float gx = xhat[i * cols + j], gy = y[i * cols + j];
        cr_assert(fabsl(gx - xh) <= tx, "shape %d: XHAT[%lld, %lld] = %.9g, reference %.12Lg", s,
                  (long long)i, (long long)j, gx, xh);
        cr_assert(fabsl(gy - ref) <=
                      2 * FLT_EPSILON * (fabsl(xh * gamma[j]) + fabsf(beta[j])) + gamma[j] * tx,
                  "shape %d: Y[%lld, %lld] = %.9g, reference %.12Lg", s, (long long)i, (long long)j,
                  gy, ref);
        /* A row of one value: XHAT is 0 and Y beta, exactly. */
        if (ln_constant(i) || cols == 1)
          cr_assert(gx == 0.0f && gy == beta[j], "shape %d: row %lld of variance 0: %.9g, %.9g", s,
                    (long long)i, gx, gy);
      }
    }
    free(y);
    free(gamma);
    free(beta);
    free(x0);
    free(xhat);
    free(rstd);
  }
}

/* The backward's formula in long double from the same XHAT, rstd, gamma and
 * G: the float result within half an ulp plus the double sums' error. */
Test(elementwise, layernorm_backward_against_long_double) {
  const uint64_t seed = test_seed("elementwise.layernorm_backward");
  for (int s = 0; s < LN_NSHAPES; s++) {
    const int64_t rows = LN_SHAPES[s][0], cols = LN_SHAPES[s][1], n = rows * cols;
    float *y = ln_input(test_key(seed, 80 + (uint64_t)s), rows, cols);
    float *gamma = random_matrix(test_key(seed, 90 + (uint64_t)s), cols, 0.5f, 1.5f);
    float *beta = random_matrix(test_key(seed, 100 + (uint64_t)s), cols, -0.5f, 0.5f);
    float *g = random_matrix(test_key(seed, 110 + (uint64_t)s), n, -1.0f, 1.0f);
    float *g0 = malloc((size_t)n * sizeof *g0), *xhat = malloc((size_t)n * sizeof *xhat);
    float *rstd = malloc((size_t)rows * sizeof *rstd);
    memcpy(g0, g, (size_t)n * sizeof *g);
    halo_cpu_layernorm(y, rows, cols, gamma, beta, xhat, rstd);
    halo_cpu_layernorm_backward(g, xhat, rstd, gamma, rows, cols);
    for (int64_t i = 0; i < rows; i++) {
      const float *xr = xhat + i * cols, *gr = g0 + i * cols;
      long double sd = 0.0L, sdx = 0.0L, big = 0.0L;
      for (int64_t j = 0; j < cols; j++) {
        const long double d = (long double)gr[j] * gamma[j];
        sd += d;
        sdx += d * xr[j];
        big = fmaxl(big, fabsl(d) * (1.0L + fabsl(xr[j])));
      }
      const long double md = sd / cols, mdx = sdx / cols;
      for (int64_t j = 0; j < cols; j++) {
        const long double ref = rstd[i] * ((long double)gr[j] * gamma[j] - md - xr[j] * mdx);
        const float got = g[i * cols + j];
        cr_assert(fabsl(got - ref) <= FLT_EPSILON * fabsl(ref) + 1e-12L * rstd[i] * big,
                  "shape %d: G[%lld, %lld] = %.9g, reference %.12Lg", s, (long long)i, (long long)j,
                  got, ref);
        if (cols == 1)
          cr_assert_eq(got, 0.0f, "shape %d: one column, G[%lld] = %g", s, (long long)i, got);
      }
    }
    free(y);
    free(gamma);
    free(beta);
    free(g);
    free(g0);
    free(xhat);
    free(rstd);
  }
}

/* sum_j w_j · LN(x)_j of one row, in double. */
static double ln_loss(const double *x, int64_t cols, const float *gamma, const float *beta,
                      const float *w) {
  double s = 0.0, q = 0.0, loss = 0.0;
  for (int64_t j = 0; j < cols; j++) s += x[j];
  const double mean = s / (double)cols;
  for (int64_t j = 0; j < cols; j++) q += (x[j] - mean) * (x[j] - mean);
  const double r = 1.0 / sqrt(q / (double)cols + 1e-5);
  for (int64_t j = 0; j < cols; j++) loss += w[j] * ((x[j] - mean) * r * gamma[j] + beta[j]);
  return loss;
}

/* The backward is the gradient: with G = W on entry it returns
 * d/dX sum(W ⊙ LN(X)), which central differences of a double forward
 * approximate (step 1e-4 of the row's sqrt(var + eps): truncation about
 * 1e-8 relative, the double loss's rounding far below).  Against the
 * float result: 1e-5 of the row's gradient, plus float rounding of the
 * terms that cancel (with two columns the gradient is tiny against them;
 * with one it is exactly 0). */
Test(elementwise, layernorm_backward_is_the_gradient) {
  const uint64_t seed = test_seed("elementwise.layernorm_backward_is_the_gradient");
  static const int64_t shapes[][2] = {{1, 1}, {5, 1}, {6, 2}, {3, 7}, {40, 16}, {10, 130}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
    float *x = ln_input(test_key(seed, 120 + s), rows, cols);
    float *gamma = random_matrix(test_key(seed, 130 + s), cols, 0.5f, 1.5f);
    float *beta = random_matrix(test_key(seed, 140 + s), cols, -0.5f, 0.5f);
    float *w = random_matrix(test_key(seed, 150 + s), n, -1.0f, 1.0f);
    float *y = malloc((size_t)n * sizeof *y), *g = malloc((size_t)n * sizeof *g);
    float *xhat = malloc((size_t)n * sizeof *xhat), *rstd = malloc((size_t)rows * sizeof *rstd);
    double *xd = malloc((size_t)cols * sizeof *xd);
    cr_assert(y && g && xhat && rstd && xd);
    memcpy(y, x, (size_t)n * sizeof *x);
    memcpy(g, w, (size_t)n * sizeof *w);
    halo_cpu_layernorm(y, rows, cols, gamma, beta, xhat, rstd);
    halo_cpu_layernorm_backward(g, xhat, rstd, gamma, rows, cols);
    double worst = 0.0;
    for (int64_t i = 0; i < rows; i++) {
      const float *xr = x + i * cols, *wr = w + i * cols, *gr = g + i * cols;
      long double mean, rs;
      ln_stats_ld(xr, cols, &mean, &rs);
      const double h = 1e-4 / (double)rs;
      double num = 0.0, den = 0.0, dd = 0.0;
      for (int64_t k = 0; k < cols; k++) {
        for (int64_t j = 0; j < cols; j++) xd[j] = xr[j];
        xd[k] = (double)xr[k] + h;
        const double up = ln_loss(xd, cols, gamma, beta, wr);
        xd[k] = (double)xr[k] - h;
        const double down = ln_loss(xd, cols, gamma, beta, wr);
        const double fd = (up - down) / (2.0 * h);
        num += (gr[k] - fd) * (gr[k] - fd);
        den += fd * fd;
        dd += (double)wr[k] * gamma[k] * wr[k] * gamma[k];
      }
      const double err = sqrt(num), tol = 1e-5 * sqrt(den) + 1e-6 * (double)rs * sqrt(dd);
      cr_assert(err <= tol, "shape %zu, row %lld%s: |G - central differences| = %g > %g", s,
                (long long)i, ln_constant(i) ? " (variance 0)" : "", err, tol);
      if (den > 0.0 && sqrt(num / den) > worst) worst = sqrt(num / den);
    }
    fprintf(stderr, "layernorm gradient %lld x %lld: worst row rel err %.3g\n", (long long)rows,
            (long long)cols, worst);
    free(x);
    free(gamma);
    free(beta);
    free(w);
    free(y);
    free(g);
    free(xhat);
    free(rstd);
    free(xd);
  }
}

/* Each product of two floats is exact in double, so rounding it to float is
 * the float product: bit for bit, into another array and over A or B. */
Test(elementwise, mul_exact_and_in_place) {
  const uint64_t seed = test_seed("elementwise.mul");
  const int64_t n = 100003;
  float *a = random_matrix(test_key(seed, 1), n, -3.0f, 3.0f);
  float *b = random_matrix(test_key(seed, 2), n, -3.0f, 3.0f);
  float *out = random_matrix(test_key(seed, 3), n, 7.0f, 8.0f);
  float *a0 = malloc((size_t)n * sizeof *a0), *b0 = malloc((size_t)n * sizeof *b0);
  memcpy(a0, a, (size_t)n * sizeof *a);
  memcpy(b0, b, (size_t)n * sizeof *b);
  halo_cpu_mul(out, a, b, 5); /* below the parallel threshold */
  halo_cpu_mul(out + 5, a + 5, b + 5, n - 5);
  for (int64_t i = 0; i < n; i++)
    cr_assert_eq(out[i], (float)((double)a0[i] * b0[i]), "mul at %lld", (long long)i);
  cr_assert(memcmp(a, a0, (size_t)n * sizeof *a) == 0 && memcmp(b, b0, (size_t)n * sizeof *b) == 0,
            "mul wrote an input");
  halo_cpu_mul(a, a, b, n);
  cr_assert(memcmp(a, out, (size_t)n * sizeof *a) == 0, "mul into A");
  memcpy(a, a0, (size_t)n * sizeof *a);
  halo_cpu_mul(b, a, b, n);
  cr_assert(memcmp(b, out, (size_t)n * sizeof *b) == 0, "mul into B");
  free(a);
  free(b);
  free(out);
  free(a0);
  free(b0);
}
