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

#include "cpu-exp.h"
#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_relu(float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

void halo_cpu_relu_backward(float *g, const float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) g[i] = y[i] <= 0.0f ? 0.0f : g[i];
}

/* e^x - 1 for x < 0 in double (cpu-exp.h), within a few double ulps, so
 * that its float rounding is the correctly rounded expm1 but where the value
 * lies within about 2^-50 of a float's midpoint (about one x in 2^26):
 * glibc's expm1f is within 1 float ulp.  e^x - 1 = 2^n·(e^r - 1) + (2^n - 1), where
 * 2^n - 1 is exact and n = 0 (|x| < 0.35) leaves e^r - 1 alone, with no
 * cancellation near 0.  Below -40, e^x is under 2^-57 and the result -1 in
 * float. */
static inline __attribute__((always_inline)) double neg_expm1(double x) {
  double scale, em1;
  halo_exp_split(x < -40.0 ? -40.0 : x, &scale, &em1);
  return scale * em1 + (scale - 1.0);
}

/* e^x for x <= 0 in double (cpu-exp.h), within a few double ulps; 0 below -708
 * (e^x < 2^-1021), NaN for NaN. */
static inline __attribute__((always_inline)) double neg_exp(double x) {
  double scale, em1;
  halo_exp_split(x < -708.0 ? -708.0 : x, &scale, &em1);
  const double e = scale * em1 + scale;
  return x < -708.0 ? 0.0 : e;
}

/* erfcx(u) = e^(u²)·erfc(u) for u >= 0: a Chebyshev series in t = (u - 3) /
 * (u + 3), which maps [0, inf) onto [-1, 1), summed by Clenshaw's
 * recurrence; the coefficients are scripts/fit-erfcx.py's (within 7e-14
 * relative on [0, 27], where e^(-u²)·erfcx(u) is still a double). */
static const double ERFCX_CHEB[22] = {
    0.32986277475303671,     -0.45366152053780201,    0.1603983408215629,
    -0.044908121151122721,   0.0096414286506956229,   -0.0014425080777443644,
    0.00010099436735367396,  1.2085024534566614e-05,  -3.6254206028457637e-06,
    7.1868107526240629e-08,  8.914235835877361e-08,   -7.4215663781185277e-09,
    -2.3893366785099347e-09, 3.0622343272224129e-10,  7.7889533711683617e-11,
    -1.0974079978076646e-11, -3.0915575655043883e-12, 3.5225433681063126e-13,
    1.3992418335107005e-13,  -8.3988371812893099e-15, -6.6002758813965559e-15,
    1.7486012637846217e-16,
};
static inline __attribute__((always_inline)) double erfcx(double u) {
  const double t = (u - 3.0) / (u + 3.0), t2 = 2.0 * t;
  double b1 = 0.0, b2 = 0.0;
#pragma GCC unroll 21
  for (int k = 21; k > 0; k--) {
    const double b = ERFCX_CHEB[k] + t2 * b1 - b2;
    b2 = b1;
    b1 = b;
  }
  return ERFCX_CHEB[0] + t * b1 - b2;
}

/* GELU's two halves at v: Φ(v) = 0.5·erfc(z), z = -v/√2, into *cdf, and
 * e^(-v²/2) into *gauss.  erfc(z) = e^(-z²)·erfcx(|z|) for z >= 0, 2 minus
 * that for z < 0 (in [1, 2]: no cancellation), with relative error near
 * 1e-13 everywhere, the far tail included.  |z| is clamped at 40, where
 * e^(-z²) is 0: Φ(inf) = 1, Φ(-inf) = 0, and NaN stays NaN. */
static inline __attribute__((always_inline)) void gelu_parts(double v, double *cdf, double *gauss) {
  const double z = -v * 0.70710678118654752440;
  const double az = z < 0.0 ? -z : z;
  const double u = az > 40.0 ? 40.0 : az;
  const double e = neg_exp(-(u * u));
  const double tail = e * erfcx(u);
  *cdf = 0.5 * (z < 0.0 ? 2.0 - tail : tail);
  *gauss = e;
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
#pragma omp parallel if (n >= HALO_PARALLEL_HEAVY)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    elu_span(y + lo, hi - lo);
  }
}

void halo_cpu_elu_backward(float *g, const float *y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) g[i] *= y[i] > 0.0f ? 1.0f : y[i] + 1.0f;
}

void halo_cpu_leaky_relu(float *y, int64_t n, float slope) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0.0f ? slope * y[i] : y[i];
}

void halo_cpu_leaky_relu_backward(float *g, const float *y, int64_t n, float slope) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) g[i] = y[i] < 0.0f ? slope * g[i] : g[i];
}

/* 1/√(2π), as the CUDA twin spells it. */
static const double INV_SQRT_2PI = 0.39894228040143267794;

/* GELU over x[0 .. n) into y, on one thread; cloned, as elu_span. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void gelu_span(float *restrict y, const float *restrict x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i];
    double cdf, gauss;
    gelu_parts(v, &cdf, &gauss);
    y[i] = (float)(v * cdf);
  }
}

/* GELU's backward over n elements, on one thread: g *= Φ(x) + x·φ(x). */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void gelu_backward_span(float *restrict g, const float *restrict x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i];
    double cdf, gauss;
    gelu_parts(v, &cdf, &gauss);
    g[i] = (float)(g[i] * (cdf + v * (gauss * INV_SQRT_2PI)));
  }
}

/* GELU's erf series costs about four heavy values' work a value: its
 * threshold is a quarter of HALO_PARALLEL_HEAVY. */
void halo_cpu_gelu_to(float *y, const float *x, int64_t n) {
#pragma omp parallel if (n >= HALO_PARALLEL_HEAVY / 4)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    gelu_span(y + lo, x + lo, hi - lo);
  }
}

void halo_cpu_gelu_backward(float *g, const float *x, int64_t n) {
#pragma omp parallel if (n >= HALO_PARALLEL_HEAVY / 4)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    gelu_backward_span(g + lo, x + lo, hi - lo);
  }
}
