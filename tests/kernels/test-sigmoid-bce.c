/* halo_cpu_sigmoid_bce (the multi-label loss): a hand-computed example,
 * central finite differences in double, a reference in long double written
 * as the textbook -y·log σ(z) - (1-y)·log(1 - σ(z)), stability at large
 * logits, missing entries, bad targets, and independence of the thread
 * count. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"

Test(sigmoid_bce, hand_computed_2x2) {
  /* Row 0: z = (0, 2), y = (1, 0): log 2 + log(1 + e^2) = 0.6931471806 +
   *        2.1269280110; σ = (0.5, 0.8807970780), so G = σ - y = (-0.5,
   *        0.8807970780); hits: z = 0 predicts 0 (wrong), 2 predicts 1
   *        (wrong): 0.
   * Row 1: z = (-1, 3), y = (missing, 1): log(1 + e^-3) = 0.0485873516;
   *        G = (0, σ(3) - 1 = -0.0474258732); 1 hit.
   * grad_scale 0.5 halves G. */
  const float z[4] = {0, 2, -1, 3};
  const int8_t y[4] = {1, 0, -1, 1};
  const int32_t mask[2] = {0, 1};
  float g[4];
  double loss = 0.0;
  int64_t correct = -1;
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask, 2, 0.5f, g, &loss, &correct);
  cr_expect(fabs(loss - (0.6931471806 + 2.1269280110 + 0.0485873516)) < 1e-9, "loss %.12f", loss);
  cr_expect_eq(correct, 1);
  const double want[4] = {-0.25, 0.5 * 0.8807970780, 0.0, 0.5 * -0.0474258732};
  for (int i = 0; i < 4; i++)
    cr_expect(fabs(g[i] - want[i]) < 1e-7, "G[%d] = %.9f, want %.9f", i, g[i], want[i]);

  /* Row 1 alone: row 0's gradient is zero and its loss gone. */
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask + 1, 1, 1.0f, g, &loss, &correct);
  cr_expect(fabs(loss - 0.0485873516) < 1e-9);
  cr_expect_eq(g[0], 0.0f);
  cr_expect_eq(g[1], 0.0f);
}

/* Random logits in [-lo, hi), targets 0/1 with about a fifth missing. */
static void fill(uint64_t seed, float *z, int8_t *y, int64_t n, float range) {
  test_fill(z, n, test_key(seed, 1), -range, range);
  for (int64_t k = 0; k < n; k++) {
    const int64_t r = test_below(test_key(seed, 2), (uint64_t)k, 10);
    y[k] = r < 2 ? -1 : (int8_t)(r & 1);
  }
}

static double loss_of(const float *z, int64_t rows, int64_t cols, const int8_t *y,
                      const int32_t *mask, int64_t nmask) {
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_sigmoid_bce(z, rows, cols, y, mask, nmask, 1.0f, NULL, &loss, &correct);
  return loss;
}

Test(sigmoid_bce, gradient_matches_finite_differences) {
  const uint64_t seed = test_seed("sigmoid_bce.gradient_matches_finite_differences");
  enum { ROWS = 6, COLS = 7 };
  float z[ROWS * COLS], g[ROWS * COLS];
  int8_t y[ROWS * COLS];
  const int32_t mask[4] = {0, 2, 3, 5};
  fill(seed, z, y, ROWS * COLS, 4.0f);
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_sigmoid_bce(z, ROWS, COLS, y, mask, 4, 1.0f, g, &loss, &correct);
  for (int k = 0; k < ROWS * COLS; k++) {
    /* A step of 2^-8 keeps z ± h exact in float; the loss grid (2^-30) is
     * far below the difference's error. */
    const float h = 0x1p-8f, z0 = z[k];
    z[k] = z0 + h;
    const double up = loss_of(z, ROWS, COLS, y, mask, 4);
    z[k] = z0 - h;
    const double down = loss_of(z, ROWS, COLS, y, mask, 4);
    z[k] = z0;
    const double fd = (up - down) / (2.0 * h);
    cr_expect(fabs(fd - g[k]) < 2e-5, "entry %d (row %d, task %d, y %d): G %.7f, differences %.7f",
              k, k / COLS, k % COLS, y[k], g[k], fd);
  }
}

Test(sigmoid_bce, matches_long_double_reference_and_is_stable) {
  const uint64_t seed = test_seed("sigmoid_bce.matches_long_double_reference_and_is_stable");
  enum { ROWS = 40, COLS = 13 };
  static float z[ROWS * COLS], g[ROWS * COLS];
  static int8_t y[ROWS * COLS];
  int32_t mask[ROWS];
  int64_t nmask = 0;
  fill(seed, z, y, ROWS * COLS, 30.0f);
  z[0] = 80.0f; /* σ(80) is 1 to double precision: the textbook form loses it */
  y[0] = 0;
  z[1] = -80.0f;
  y[1] = 1;
  for (int i = 0; i < ROWS; i++)
    if (i % 3 != 1) mask[nmask++] = i;
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_sigmoid_bce(z, ROWS, COLS, y, mask, nmask, 0.25f, g, &loss, &correct);

  long double want = 0.0L;
  int64_t hits = 0;
  for (int64_t m = 0; m < nmask; m++)
    for (int t = 0; t < COLS; t++) {
      const int64_t k = (int64_t)mask[m] * COLS + t;
      if (y[k] < 0) continue;
      /* log σ(z) = -log(1 + e^-z), log(1 - σ(z)) = -log(1 + e^z) */
      const long double zl = z[k];
      const long double log_p = -log1pl(expl(-zl)), log_q = -log1pl(expl(zl));
      want += y[k] ? -log_p : -log_q;
      hits += (z[k] > 0.0f) == (y[k] == 1);
      const long double sig = 1.0L / (1.0L + expl(-zl));
      const double gw = (double)((sig - (long double)y[k]) * 0.25L);
      cr_expect(fabs(g[k] - gw) < 1e-7, "G[%lld] = %.9g, want %.9g", (long long)k, g[k], gw);
    }
  cr_expect(isfinite(loss));
  cr_expect(fabs(loss - (double)want) < 1e-9 * (double)want + (double)nmask * 0x1p-30,
            "loss %.12f, long double %.12Lf", loss, want);
  cr_expect_eq(correct, hits);
  /* Rows outside the mask: zero. */
  for (int t = 0; t < COLS; t++) cr_expect_eq(g[1 * COLS + t], 0.0f);
}

Test(sigmoid_bce, same_bits_for_any_thread_count) {
  const uint64_t seed = test_seed("sigmoid_bce.same_bits_for_any_thread_count");
  enum { ROWS = 3000, COLS = 16 };
  float *z = malloc(ROWS * COLS * sizeof *z), *g1 = malloc(ROWS * COLS * sizeof *g1),
        *g4 = malloc(ROWS * COLS * sizeof *g4);
  int8_t *y = malloc(ROWS * COLS);
  int32_t *mask = malloc(ROWS * sizeof *mask);
  cr_assert(z && g1 && g4 && y && mask);
  fill(seed, z, y, ROWS * COLS, 6.0f);
  for (int i = 0; i < ROWS; i++) mask[i] = i;
  double l1 = 0, l4 = 0, split = 0;
  int64_t c1 = 0, c4 = 0, cs = 0;
  omp_set_num_threads(1);
  halo_cpu_sigmoid_bce(z, ROWS, COLS, y, mask, ROWS, 1e-3f, g1, &l1, &c1);
  omp_set_num_threads(4);
  halo_cpu_sigmoid_bce(z, ROWS, COLS, y, mask, ROWS, 1e-3f, g4, &l4, &c4);
  cr_expect_eq(l1, l4, "loss %.17g with 1 thread, %.17g with 4", l1, l4);
  cr_expect_eq(c1, c4);
  cr_expect(memcmp(g1, g4, ROWS * COLS * sizeof *g1) == 0, "G differs between 1 and 4 threads");
  /* Two ranks' halves of the rows add to the same bits. */
  for (int h = 0; h < 2; h++) {
    double l = 0;
    int64_t c = 0;
    halo_cpu_sigmoid_bce(z, ROWS, COLS, y, mask + h * (ROWS / 2), ROWS / 2, 1e-3f, NULL, &l, &c);
    split += l;
    cs += c;
  }
  cr_expect_eq(split, l1, "halves sum to %.17g, whole %.17g", split, l1);
  cr_expect_eq(cs, c1);
  free(z);
  free(g1);
  free(g4);
  free(y);
  free(mask);
}

Test(sigmoid_bce, bad_target_and_non_finite_logit_make_nan) {
  const float z[4] = {1, -1, 2, NAN};
  int8_t y[4] = {1, 0, 2, 1};
  const int32_t mask[2] = {0, 1};
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask, 1, 1.0f, NULL, &loss, &correct);
  cr_expect(isfinite(loss), "row 0 alone is good");
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask + 1, 1, 1.0f, NULL, &loss, &correct);
  cr_expect(isnan(loss), "target 2 passed unnoticed: loss %g", loss);
  y[2] = 0;
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask + 1, 1, 1.0f, NULL, &loss, &correct);
  cr_expect(isnan(loss), "a NaN logit passed unnoticed: loss %g", loss);
  /* An empty mask: zero loss, no hits, G all zero. */
  float g[4] = {1, 1, 1, 1};
  halo_cpu_sigmoid_bce(z, 2, 2, y, mask, 0, 1.0f, g, &loss, &correct);
  cr_expect_eq(loss, 0.0);
  cr_expect_eq(correct, 0);
  for (int i = 0; i < 4; i++) cr_expect_eq(g[i], 0.0f);
}
