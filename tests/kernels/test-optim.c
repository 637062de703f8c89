/* halo_cpu_adamw, halo_cpu_sgd and halo_cpu_scale against hand-worked steps
 * and a double reference of torch.optim's updates written here from
 * torch's documented algorithms (AdamW: Loshchilov & Hutter's decoupled
 * decay; SGD: momentum buffer and Nesterov), on random parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "halo-kernels.h"
#include "test-random.h"

Test(sgd, hand_computed_steps) {
  /* w = 1, lr 0.1, mu 0.9, wd 0.01, gradients 0.5, -0.2.
   * Plain momentum: t = 1: d = 0.5 + 0.01 = 0.51, buf = 0.51, w = 0.949;
   *   t = 2: d = -0.2 + 0.00949 = -0.19051, buf = 0.459 - 0.19051 = 0.26849,
   *   w = 0.949 - 0.026849 = 0.922151.
   * Nesterov: t = 1: buf = 0.51, d = 0.51 + 0.9·0.51 = 0.969, w = 0.9031;
   *   t = 2: d = -0.2 + 0.009031 = -0.190969, buf = 0.459 - 0.190969 = 0.268031,
   *   d = -0.190969 + 0.2412279 = 0.0502589, w = 0.9031 - 0.00502589 = 0.89807411. */
  const float grads[2] = {0.5f, -0.2f};
  const double want[2][2] = {{0.949, 0.922151}, {0.9031, 0.89807411}};
  const double want_buf[2][2] = {{0.51, 0.26849}, {0.51, 0.268031}};
  for (int nesterov = 0; nesterov <= 1; nesterov++) {
    float w = 1.0f, buf = 0.0f;
    for (int t = 0; t < 2; t++) {
      halo_cpu_sgd(&w, &grads[t], &buf, 1, 0.1f, 0.9f, 0.01f, nesterov);
      cr_expect(fabs(w - want[nesterov][t]) < 1e-6, "nesterov %d t %d: w %.9f, want %.9f", nesterov,
                t + 1, w, want[nesterov][t]);
      cr_expect(fabs(buf - want_buf[nesterov][t]) < 1e-6, "nesterov %d t %d: buf %.9f", nesterov,
                t + 1, buf);
    }
  }
  /* No momentum: w -= lr·(g + wd·w), and the buffer is not read. */
  float w = 1.0f;
  halo_cpu_sgd(&w, &grads[0], NULL, 1, 0.1f, 0.0f, 0.01f, 0);
  cr_expect(fabs(w - 0.949) < 1e-7, "plain SGD: w %.9f, want 0.949", w);
}

Test(adamw, hand_computed_steps) {
  /* w = 1, lr 0.1, wd 0.01, gradient 0.5: w = 1·(1 - 0.001) = 0.999, then
   * Adam without decay: m̂ = 0.5, v̂ = 0.25, w = 0.999 - 0.1·0.5/(0.5 + 1e-8)
   * = 0.8990000020. */
  float w = 1.0f, m = 0.0f, v = 0.0f;
  const float g = 0.5f;
  halo_cpu_adamw(&w, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
  cr_expect(fabs(w - 0.8990000020) < 1e-6, "w %.9f, want 0.8990000020", w);
  /* Coupled decay would make m = 0.1·0.51 = 0.051. */
  cr_expect(fabs(m - 0.05) < 1e-6, "m %.9g: the decay must not enter the moments", m);
}

/* The double reference of n parameters over STEPS steps of optimiser
 * `which` (0 AdamW, 1 SGD, 2 SGD with Nesterov), gradients from the seed. */
enum { N = 70000, STEPS = 6 };

static void run_reference(int which, uint64_t seed, double *worst_out) {
  float *w = malloc(N * sizeof *w), *g = malloc(N * sizeof *g);
  float *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
  double *rw = malloc(N * sizeof *rw), *rm = calloc(N, sizeof *rm), *rv = calloc(N, sizeof *rv);
  cr_assert(w && g && m && v && rw && rm && rv);
  test_fill(w, N, test_key(seed, 1), -1.0f, 1.0f);
  for (int i = 0; i < N; i++) rw[i] = w[i];
  const double lr = which == 0 ? 0.01 : 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05;
  const double mu = 0.9;
  for (int t = 1; t <= STEPS; t++) {
    test_fill(g, N, test_key(seed, 10 + (uint64_t)t), -0.1f, 0.1f);
    if (which == 0)
      halo_cpu_adamw(w, g, m, v, N, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, t);
    else
      halo_cpu_sgd(w, g, m, N, (float)lr, (float)mu, (float)wd, which == 2);
    for (int i = 0; i < N; i++) {
      if (which == 0) {
        rw[i] *= 1.0 - lr * wd;
        rm[i] = b1 * rm[i] + (1 - b1) * g[i];
        rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
        const double mhat = rm[i] / (1 - pow(b1, t)), vhat = rv[i] / (1 - pow(b2, t));
        rw[i] -= lr * mhat / (sqrt(vhat) + eps);
      } else {
        double d = g[i] + wd * rw[i];
        rm[i] = t == 1 ? d : mu * rm[i] + d; /* torch: the first buffer is d itself */
        d = which == 2 ? d + mu * rm[i] : rm[i];
        rw[i] -= lr * d;
      }
    }
  }
  double worst = 0.0;
  for (int i = 0; i < N; i++) {
    const double err = fabs(w[i] - rw[i]);
    cr_assert(err < 1e-5 * lr * STEPS + 2e-6 * fabs(rw[i]), "[%d] w[%d] = %.9g, reference %.9g",
              which, i, w[i], rw[i]);
    if (which > 0) cr_assert(fabs(m[i] - rm[i]) < 1e-5 * (fabs(rm[i]) + 0.1), "buf[%d]", i);
    if (err > worst) worst = err;
  }
  *worst_out = worst;
  free(w);
  free(g);
  free(m);
  free(v);
  free(rw);
  free(rm);
  free(rv);
}

Test(adamw, matches_double_reference) {
  const uint64_t seed = test_seed("adamw.matches_double_reference");
  double worst = 0.0;
  run_reference(0, seed, &worst);
  cr_log_info("adamw: worst |w - reference| after %d steps: %.3g", STEPS, worst);
}

Test(sgd, matches_double_reference) {
  const uint64_t seed = test_seed("sgd.matches_double_reference");
  for (int which = 1; which <= 2; which++) {
    double worst = 0.0;
    run_reference(which, seed, &worst);
    cr_log_info("sgd%s: worst |w - reference| after %d steps: %.3g",
                which == 2 ? " (nesterov)" : "", STEPS, worst);
  }
}

Test(scale, rounds_each_product_once) {
  const uint64_t seed = test_seed("scale.rounds_each_product_once");
  enum { M = 40000 };
  float *x = malloc(M * sizeof *x), *y = malloc(M * sizeof *y);
  cr_assert(x && y);
  test_fill(x, M, test_key(seed, 1), -3.0f, 3.0f);
  for (int i = 0; i < M; i++) y[i] = x[i];
  const float s = 0.3712f;
  halo_cpu_scale(x, M, s);
  for (int i = 0; i < M; i++)
    cr_assert_eq(x[i], (float)((double)y[i] * (double)s), "x[%d]: %.9g", i, x[i]);
  free(x);
  free(y);
}
