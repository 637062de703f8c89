/* halo_cpu_adam against a hand-computed step sequence and a double
 * reference of the header's formula on random parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "halo-kernels.h"
#include "test-random.h"

Test(adam, hand_computed_steps) {
  /* w = 1, lr 0.1, b1 0.9, b2 0.999, eps 1e-8, wd 0.01, gradients 0.5, -0.2, 0.1.
   * t = 1: g' = 0.5 + 0.01·1 = 0.51; m = 0.051; v = 0.001·0.51² = 2.601e-4;
   *        m̂ = 0.51, v̂ = 0.2601, so w = 1 - 0.1·0.51/(0.51 + 1e-8) = 0.9000000020.
   * t = 2: g' = -0.2 + 0.01·0.9 = -0.191; m = 0.0459 - 0.0191 = 0.0268;
   *        v = 0.999·2.601e-4 + 0.001·0.036481 = 2.963209e-4;
   *        m̂ = 0.0268/0.19 = 0.1410526316, v̂ = 2.963209e-4/0.001999 = 0.1482345673;
   *        w = 0.9 - 0.1·0.1410526316/0.3850124248 = 0.8633641381.
   * t = 3: g' = 0.1 + 0.01·0.8633641381 = 0.1086336414, and in the same way
   *        m = 0.0349833641, v = 3.078258e-4, w = 0.8230847218. */
  float w = 1.0f, m = 0.0f, v = 0.0f;
  const float grads[3] = {0.5f, -0.2f, 0.1f};
  const double want_w[3] = {0.9000000020, 0.8633641381, 0.8230847218};
  const double want_m[3] = {0.051, 0.0268, 0.0349833641};
  const double want_v[3] = {2.601e-4, 2.963209e-4, 3.078258e-4};
  for (int t = 1; t <= 3; t++) {
    halo_cpu_adam(&w, &grads[t - 1], &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
    cr_expect(fabs(w - want_w[t - 1]) < 1e-6, "t %d: w = %.9f, want %.9f", t, w, want_w[t - 1]);
    cr_expect(fabs(m - want_m[t - 1]) < 1e-6 * fabs(want_m[t - 1]) + 1e-9, "t %d: m = %.9g", t, m);
    /* 1 - 0.999f is 1.3e-5 away from 0.001 in relative terms, and so is v;
     * the bias correction uses the same rounded b2, so w is not affected. */
    cr_expect(fabs(v - want_v[t - 1]) < 3e-5 * want_v[t - 1], "t %d: v = %.9g", t, v);
  }
}

Test(adam, matches_double_reference) {
  const uint64_t seed = test_seed("adam.matches_double_reference");
  enum { N = 70000, STEPS = 5 };
  float *w = malloc(N * sizeof *w), *g = malloc(N * sizeof *g);
  float *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
  double *rw = malloc(N * sizeof *rw), *rm = calloc(N, sizeof *rm), *rv = calloc(N, sizeof *rv);
  cr_assert(w && g && m && v && rw && rm && rv);
  test_fill(w, N, test_key(seed, 1), -1.0f, 1.0f);
  for (int i = 0; i < N; i++) rw[i] = w[i];
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 5e-4;
  for (int t = 1; t <= STEPS; t++) {
    test_fill(g, N, test_key(seed, 10 + (uint64_t)t), -0.1f, 0.1f);
    halo_cpu_adam(w, g, m, v, N, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd, t);
    for (int i = 0; i < N; i++) {
      const double gi = g[i] + wd * rw[i];
      rm[i] = b1 * rm[i] + (1 - b1) * gi;
      rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
      const double mhat = rm[i] / (1 - pow(b1, t)), vhat = rv[i] / (1 - pow(b2, t));
      rw[i] -= lr * mhat / (sqrt(vhat) + eps);
    }
  }
  double worst = 0.0;
  for (int i = 0; i < N; i++) {
    /* Each step moves w by about lr; float rounding stays far below that. */
    const double err = fabs(w[i] - rw[i]);
    cr_assert(err < 1e-5 * lr * STEPS + 1e-6 * fabs(rw[i]), "w[%d] = %.9g, reference %.9g", i, w[i],
              rw[i]);
    if (err > worst) worst = err;
  }
  cr_log_info("worst |w - reference| after %d steps: %.3g", STEPS, worst);
  free(w);
  free(g);
  free(m);
  free(v);
  free(rw);
  free(rm);
  free(rv);
}
