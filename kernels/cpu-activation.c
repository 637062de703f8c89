/* The activations between layers and their backward passes on the CPU:
 * ReLU, ELU, LeakyReLU and GELU.
 *
 * Every loop is branch-free, so that it vectorises: a select between two
 * values, each computed for every lane.  This file is built with
 * -fno-trapping-math (kernels/CMakeLists.txt), without which the compiler
 * may not compute a product or a sum that the source computes under a
 * condition (it could raise an exception the source does not; halo enables
 * no floating-point traps, so it changes no result), and without
 * contraction, so that every vector width rounds alike.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "halo-kernels.h"

/* Fewer floats than this are processed on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 15;

void halo_cpu_relu(float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

void halo_cpu_relu_backward(float *g, const float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) g[i] = y[i] <= 0.0f ? 0.0f : g[i];
}

/* e^x - 1 for x < 0 in double, within about 1.5 double ulps, so that its
 * float rounding is the correctly rounded expm1 but where the value lies
 * within 2^-52 of a float's midpoint (about one x in 2^28): glibc's expm1f
 * is within 1 float ulp.  x = n·ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two
 * parts, fdlibm's, so that n·ln2_hi and the first subtraction are exact);
 * e^r - 1 = r + r²·p(r), p the Taylor polynomial to r^12/13! (its
 * remainder below 2^-55 of the result); then e^x - 1 = 2^n·(e^r - 1) +
 * (2^n - 1), where 2^n - 1 is exact and n = 0 (|x| < 0.35) leaves e^r - 1
 * alone, with no cancellation near 0.  Below -40, e^x is under 2^-57 and
 * the result -1 in float. */
static inline double neg_expm1(double x) {
  const double xc = x < -40.0 ? -40.0 : x;
  const double shifter = 6755399441055744.0; /* 1.5·2^52: the sum's low bits hold n */
  const double shifted = xc * 1.4426950408889634 + shifter;
  const double n = shifted - shifter;
  const double r = (xc - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0; /* 1/13! ... 1/2! */
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  const double em1 = r + (r * r) * p;
  int64_t bits, base;
  memcpy(&bits, &shifted, sizeof bits);
  memcpy(&base, &shifter, sizeof base);
  const uint64_t scale_bits = (uint64_t)(bits - base + 1023) << 52; /* 2^n, n in [-58, 0] */
  double scale;
  memcpy(&scale, &scale_bits, sizeof scale);
  return scale * em1 + (scale - 1.0);
}

/* ELU over y[0 .. n), on one thread; cloned, so that the double arithmetic
 * uses the widest vectors the CPU has. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void elu_span(float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    const float v = y[i];
    /* -0, NaN and the positives stay as they are */
    y[i] = v < 0.0f ? (float)neg_expm1((double)v) : v;
  }
}

void halo_cpu_elu(float *y, int64_t n) {
#pragma omp parallel if (n >= PARALLEL_MIN)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    elu_span(y + lo, hi - lo);
  }
}

void halo_cpu_elu_backward(float *g, const float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) g[i] *= y[i] > 0.0f ? 1.0f : y[i] + 1.0f;
}

void halo_cpu_leaky_relu(float *y, int64_t n, float slope) {
#pragma omp parallel for simd schedule(static) if (n >= PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0.0f ? slope * y[i] : y[i];
}

void halo_cpu_leaky_relu_backward(float *g, const float *y, int64_t n, float slope) {
#pragma omp parallel for simd schedule(static) if (n >= PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) g[i] = y[i] < 0.0f ? slope * g[i] : g[i];
}

/* 1/√2 and 1/√(2π), as the CUDA twin spells them. */
static const double SQRT1_2 = 0.70710678118654752440, INV_SQRT_2PI = 0.39894228040143267794;

void halo_cpu_gelu_to(float *y, const float *x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN / 8)
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i];
    y[i] = (float)(0.5 * v * erfc(-v * SQRT1_2));
  }
}

void halo_cpu_gelu_backward(float *g, const float *x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN / 8)
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i];
    const double cdf = 0.5 * erfc(-v * SQRT1_2), pdf = exp(-0.5 * v * v) * INV_SQRT_2PI;
    g[i] = (float)(g[i] * (cdf + v * pdf));
  }
}
