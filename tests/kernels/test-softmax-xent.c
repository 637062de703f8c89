/* halo_cpu_softmax_xent: a hand-computed example, central finite differences
 * in double, a random double reference, stability and the mask. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"

Test(softmax_xent, hand_computed_2x3) {
  /* Row 0: z = (1, 2, 3), label 2.  lse = 3 + log(1 + e^-1 + e^-2)
   *        = 3.4076059644, so the loss is 0.4076059644 and softmax is
   *        (0.0900305732, 0.2447284711, 0.6652409558); argmax 2 is right.
   * Row 1: z = (1, 1, 1), label 0.  The loss is log 3 = 1.0986122887 and
   *        softmax is 1/3 each; argmax is column 0 (ties go low): right.
   * grad_scale 0.5 halves (softmax - onehot). */
  const float z[6] = {1, 2, 3, 1, 1, 1};
  const int32_t labels[2] = {2, 0}, mask[2] = {0, 1};
  float g[6];
  double loss = 0.0;
  int64_t correct = -1;
  halo_cpu_softmax_xent(z, 2, 3, labels, mask, 2, 0.5f, g, &loss, &correct);
  cr_expect(fabs(loss - (0.4076059644 + 1.0986122887)) < 1e-9, "loss %.12f", loss);
  cr_expect_eq(correct, 2);
  const double want[6] = {0.5 * 0.0900305732,      0.5 * 0.2447284711, 0.5 * (0.6652409558 - 1.0),
                          0.5 * (1.0 / 3.0 - 1.0), 0.5 / 3.0,          0.5 / 3.0};
  for (int i = 0; i < 6; i++)
    cr_expect(fabs(g[i] - want[i]) < 1e-7, "G[%d] = %.9f, want %.9f", i, g[i], want[i]);

  /* Only row 1 in the mask: row 0's gradient is zero and its loss is gone. */
  halo_cpu_softmax_xent(z, 2, 3, labels, mask + 1, 1, 1.0f, g, &loss, &correct);
  cr_expect(fabs(loss - 1.0986122887) < 1e-9);
  cr_expect_eq(correct, 1);
  for (int i = 0; i < 3; i++) cr_expect_eq(g[i], 0.0f);
}

/* The masked loss of z, computed by the kernel (in double). */
static double loss_of(const float *z, int64_t rows, int64_t cols, const int32_t *labels,
                      const int32_t *mask, int64_t nmask) {
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_softmax_xent(z, rows, cols, labels, mask, nmask, 1.0f, NULL, &loss, &correct);
  return loss;
}

Test(softmax_xent, gradient_matches_finite_differences) {
  const uint64_t seed = test_seed("softmax_xent.gradient_matches_finite_differences");
  enum { ROWS = 6, COLS = 5 };
  float z[ROWS * COLS], g[ROWS * COLS];
  int32_t labels[ROWS];
  const int32_t mask[4] = {0, 2, 3, 5};
  test_fill(z, ROWS * COLS, test_key(seed, 1), -3.0f, 3.0f);
  for (int i = 0; i < ROWS; i++)
    labels[i] = (int32_t)test_below(test_key(seed, 2), (uint64_t)i, COLS);
  double loss = 0.0;
  int64_t correct = 0;
  halo_cpu_softmax_xent(z, ROWS, COLS, labels, mask, 4, 1.0f, g, &loss, &correct);

  for (int e = 0; e < ROWS * COLS; e++) {
    const float saved = z[e];
    /* z ± h rounded to float; divide by the step actually taken. */
    const float up = saved + 1e-2f, down = saved - 1e-2f;
    z[e] = up;
    const double lu = loss_of(z, ROWS, COLS, labels, mask, 4);
    z[e] = down;
    const double ld = loss_of(z, ROWS, COLS, labels, mask, 4);
    z[e] = saved;
    const double fd = (lu - ld) / ((double)up - (double)down);
    cr_assert(fabs(fd - g[e]) < 1e-4, "dL/dz[%d]: finite difference %.7f, kernel %.7f", e, fd,
              g[e]);
  }
}

/* ROWS × cols logits against a double reference; rows in blocks (7, 150
 * columns) and rows wider than the kernel's block of 512 doubles (600). */
static void check_reference(int64_t cols);

Test(softmax_xent, matches_double_reference_and_is_stable) {
  check_reference(7);
  check_reference(150);
  check_reference(600);
}

/* A row's loss and gradient do not depend on the rows beside it: the kernel
 * takes the exponentials of a block of rows at once, so each row alone (a
 * mask of one) must give the bits it gets among the others, and the loss
 * sums, multiples of 2^-30, must add up exactly. */
Test(softmax_xent, rows_alike_in_any_block) {
  const uint64_t seed = test_seed("softmax_xent.rows_alike_in_any_block");
  static const int64_t widths[] = {1, 3, 8, 47, 513};
  enum { ROWS = 300 };
  for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
    const int64_t cols = widths[w];
    float *z = malloc(ROWS * cols * sizeof *z), *g = calloc(ROWS * cols, sizeof *g);
    float *g1 = calloc(ROWS * cols, sizeof *g1);
    int32_t *labels = malloc(ROWS * sizeof *labels), *mask = malloc(ROWS * sizeof *mask);
    cr_assert(z && g && g1 && labels && mask);
    test_fill(z, ROWS * cols, test_key(seed, 10 + w), -30.0f, 30.0f);
    int64_t nmask = 0;
    for (int i = 0; i < ROWS; i++) {
      labels[i] = (int32_t)test_below(test_key(seed, 20 + w), (uint64_t)i, cols);
      if (test_below(test_key(seed, 30 + w), (uint64_t)i, 4) != 0) mask[nmask++] = i;
    }
    double loss = 0.0, sum = 0.0;
    int64_t correct = 0, correct_sum = 0;
    halo_cpu_softmax_xent(z, ROWS, cols, labels, mask, nmask, 0.25f, g, &loss, &correct);
    for (int64_t m = 0; m < nmask; m++) {
      double one = 0.0;
      int64_t c1 = 0;
      halo_cpu_softmax_xent(z + mask[m] * cols, 1, cols, labels + mask[m], &(int32_t){0}, 1, 0.25f,
                            g1 + mask[m] * cols, &one, &c1);
      sum += one;
      correct_sum += c1;
    }
    cr_expect_eq(loss, sum, "cols %lld: loss %.17g, the rows alone %.17g", (long long)cols, loss,
                 sum);
    cr_expect_eq(correct, correct_sum, "cols %lld", (long long)cols);
    cr_expect_eq(memcmp(g, g1, ROWS * cols * sizeof *g), 0, "cols %lld: gradients differ",
                 (long long)cols);
    free(z);
    free(g);
    free(g1);
    free(labels);
    free(mask);
  }
}

static void check_reference(int64_t cols) {
  const uint64_t seed = test_seed("softmax_xent.matches_double_reference_and_is_stable");
  enum { ROWS = 4000 };
  float *z = malloc(ROWS * cols * sizeof *z), *g = malloc(ROWS * cols * sizeof *g);
  int32_t *labels = malloc(ROWS * sizeof *labels), *mask = malloc(ROWS * sizeof *mask);
  cr_assert(z && g && labels && mask);
  /* Logits up to ±800: exp of them would overflow without the max shift. */
  test_fill(z, ROWS * cols, test_key(seed, 1), -800.0f, 800.0f);
  for (int i = 0; i < ROWS * cols; i += 3) z[i] *= 1e-3f;
  int64_t nmask = 0;
  for (int i = 0; i < ROWS; i++) {
    labels[i] = (int32_t)test_below(test_key(seed, 2), (uint64_t)i, cols);
    if (test_below(test_key(seed, 3), (uint64_t)i, 3) != 0) mask[nmask++] = i;
  }
  for (int i = 0; i < ROWS * cols; i++) g[i] = NAN;
  double loss = 0.0;
  int64_t correct = 0;
  const float scale = 1.0f / (float)nmask;
  halo_cpu_softmax_xent(z, ROWS, cols, labels, mask, nmask, scale, g, &loss, &correct);

  char *in_mask = calloc(ROWS, 1);
  double ref_loss = 0.0;
  int64_t ref_correct = 0;
  for (int64_t m = 0; m < nmask; m++) {
    const int i = mask[m];
    in_mask[i] = 1;
    double zmax = -INFINITY;
    int best = 0;
    for (int j = 0; j < cols; j++) {
      if (z[i * cols + j] > zmax) {
        zmax = z[i * cols + j];
        best = j;
      }
    }
    double sum = 0.0;
    for (int j = 0; j < cols; j++) sum += exp(z[i * cols + j] - zmax);
    ref_loss += zmax + log(sum) - z[i * cols + labels[i]];
    ref_correct += best == labels[i];
    for (int j = 0; j < cols; j++) {
      const double p = exp(z[i * cols + j] - zmax) / sum;
      const double want = (p - (j == labels[i])) * scale;
      cr_assert(fabs(g[i * cols + j] - want) <= 1e-6 * scale, "G[%d, %d] = %g, want %g", i, j,
                g[i * cols + j], want);
    }
  }
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < cols && !in_mask[i]; j++)
      cr_assert_eq(g[i * cols + j], 0.0f, "unmasked row %d", i);
  cr_assert(isfinite(loss));
  cr_expect(fabs(loss - ref_loss) <= 1e-12 * fabs(ref_loss), "loss %.15g, reference %.15g", loss,
            ref_loss);
  cr_expect_eq(correct, ref_correct);
  cr_log_info("loss %.6f over %lld rows, %lld correct", loss, (long long)nmask, (long long)correct);

  /* Evaluation only (G NULL) gives the same figures. */
  double loss2 = 0.0;
  int64_t correct2 = 0;
  halo_cpu_softmax_xent(z, ROWS, cols, labels, mask, nmask, scale, NULL, &loss2, &correct2);
  cr_expect_eq(loss2, loss);
  cr_expect_eq(correct2, correct);
  free(z);
  free(g);
  free(labels);
  free(mask);
  free(in_mask);
}

Test(softmax_xent, empty_mask_and_bad_label) {
  const float z[3] = {0.5f, -0.5f, 2.0f};
  int32_t labels[1] = {0};
  const int32_t mask[1] = {0};
  float g[3] = {1, 1, 1};
  double loss = 1.0;
  int64_t correct = 1;
  halo_cpu_softmax_xent(z, 1, 3, labels, mask, 0, 1.0f, g, &loss, &correct);
  cr_expect_eq(loss, 0.0);
  cr_expect_eq(correct, 0);
  for (int j = 0; j < 3; j++) cr_expect_eq(g[j], 0.0f);

  /* A label outside [0, cols) makes the loss NaN and adds no gradient. */
  labels[0] = 3;
  halo_cpu_softmax_xent(z, 1, 3, labels, mask, 1, 1.0f, g, &loss, &correct);
  cr_expect(isnan(loss));
  cr_expect_eq(correct, 0);
  for (int j = 0; j < 3; j++) cr_expect_eq(g[j], 0.0f);

  /* No columns: no label fits, so a masked row makes the loss NaN; no mask,
   * no loss; and nothing is read. */
  labels[0] = 0;
  halo_cpu_softmax_xent(z, 1, 0, labels, mask, 1, 1.0f, g, &loss, &correct);
  cr_expect(isnan(loss));
  halo_cpu_softmax_xent(z, 1, 0, labels, mask, 0, 1.0f, NULL, &loss, &correct);
  cr_expect_eq(loss, 0.0);
  cr_expect_eq(correct, 0);
}
