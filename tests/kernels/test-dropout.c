/* halo_cpu_dropout: the keep rate, the scale, determinism, and a mask that
 * follows the global row id rather than the local row. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "halo-rng.h"
#include "test-random.h"

enum { ROWS = 1000, COLS = 64 };

/* Y in [0.5, 1.5): never zero, so a zero in the output means "dropped". */
static float *random_rows(uint64_t key) {
  float *y = malloc(ROWS * COLS * sizeof *y);
  cr_assert(y);
  test_fill(y, ROWS * COLS, key, 0.5f, 1.5f);
  return y;
}

/* Global ids: scattered, large and not equal to the local row. */
static void make_ids(int64_t *ids, uint64_t key) {
  for (int64_t i = 0; i < ROWS; i++)
    ids[i] = 1000000007LL * i % 99991 + test_below(key, (uint64_t)i, 7) * 100000;
}

Test(dropout, keep_rate_scale_and_formula) {
  const uint64_t seed = test_seed("dropout.keep_rate_scale_and_formula");
  const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 3, 1);
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  const float ps[] = {0.1f, 0.5f, 0.9f};
  for (int t = 0; t < 3; t++) {
    const float p = ps[t];
    float *y0 = random_rows(test_key(seed, 2));
    float *y = malloc(ROWS * COLS * sizeof *y);
    memcpy(y, y0, ROWS * COLS * sizeof *y);
    halo_cpu_dropout(y, ROWS, COLS, ids, key, p);
    int64_t kept = 0;
    const float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < ROWS; i++) {
      for (int64_t j = 0; j < COLS; j++) {
        const float u = halo_rng_uniform(key, (uint64_t)ids[i], (uint64_t)j);
        const float got = y[i * COLS + j];
        if (got != 0.0f) {
          kept++;
          cr_assert(u >= p, "p %.1f: (%lld, %lld) kept with u = %g", p, (long long)i, (long long)j,
                    u);
          cr_assert_eq(got, y0[i * COLS + j] * scale, "p %.1f: kept value not scaled by 1/(1-p)",
                       p);
        } else {
          cr_assert(u < p, "p %.1f: (%lld, %lld) dropped with u = %g", p, (long long)i,
                    (long long)j, u);
        }
      }
    }
    /* Binomial(n, 1-p): the kept count lies within 5 standard deviations. */
    const double n = ROWS * COLS, mean = n * (1.0 - p), sd = sqrt(n * p * (1.0 - p));
    cr_log_info("p %.1f: kept %lld of %.0f (expected %.0f ± %.0f)", p, (long long)kept, n, mean,
                sd);
    cr_assert(fabs((double)kept - mean) < 5.0 * sd, "p %.1f: kept %lld, expected %.0f ± %.0f", p,
              (long long)kept, mean, sd);
    free(y);
    free(y0);
  }
}

Test(dropout, deterministic_and_keyed) {
  const uint64_t seed = test_seed("dropout.deterministic_and_keyed");
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  float *a = random_rows(test_key(seed, 2));
  float *b = random_rows(test_key(seed, 2));
  float *c = random_rows(test_key(seed, 2));
  halo_cpu_dropout(a, ROWS, COLS, ids, halo_rng_key(seed, HALO_RNG_DROPOUT, 5, 0), 0.5f);
  halo_cpu_dropout(b, ROWS, COLS, ids, halo_rng_key(seed, HALO_RNG_DROPOUT, 5, 0), 0.5f);
  halo_cpu_dropout(c, ROWS, COLS, ids, halo_rng_key(seed, HALO_RNG_DROPOUT, 6, 0), 0.5f);
  cr_expect(memcmp(a, b, ROWS * COLS * sizeof *a) == 0, "the same key gave two masks");
  int64_t differ = 0;
  for (int64_t i = 0; i < ROWS * COLS; i++) differ += (a[i] == 0.0f) != (c[i] == 0.0f);
  cr_expect(differ > ROWS * COLS / 4, "another epoch's key gave nearly the same mask (%lld differ)",
            (long long)differ);

  /* The mask of a gradient is the mask of the activation. */
  float *g = random_rows(test_key(seed, 3));
  halo_cpu_dropout(g, ROWS, COLS, ids, halo_rng_key(seed, HALO_RNG_DROPOUT, 5, 0), 0.5f);
  for (int64_t i = 0; i < ROWS * COLS; i++)
    cr_assert_eq(g[i] == 0.0f, a[i] == 0.0f, "gradient mask differs at %lld", (long long)i);
  free(a);
  free(b);
  free(c);
  free(g);
}

Test(dropout, mask_follows_global_id_not_local_row) {
  const uint64_t seed = test_seed("dropout.mask_follows_global_id_not_local_row");
  const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 1, 0);
  int64_t ids[ROWS], reversed[ROWS];
  make_ids(ids, test_key(seed, 1));
  /* The same rows on "another rank", stored in reverse order. */
  for (int64_t i = 0; i < ROWS; i++) reversed[i] = ids[ROWS - 1 - i];
  float *a = random_rows(test_key(seed, 2));
  float *b = malloc(ROWS * COLS * sizeof *b);
  for (int64_t i = 0; i < ROWS; i++)
    memcpy(b + i * COLS, a + (ROWS - 1 - i) * COLS, COLS * sizeof *b);
  halo_cpu_dropout(a, ROWS, COLS, ids, key, 0.3f);
  halo_cpu_dropout(b, ROWS, COLS, reversed, key, 0.3f);
  for (int64_t i = 0; i < ROWS; i++)
    cr_assert(memcmp(b + i * COLS, a + (ROWS - 1 - i) * COLS, COLS * sizeof *b) == 0,
              "global id %lld: local rows %lld and %lld got different masks",
              (long long)ids[ROWS - 1 - i], (long long)(ROWS - 1 - i), (long long)i);

  /* Two local rows with one global id get the same mask; columns differ. */
  int64_t same[2] = {424242, 424242};
  float pair[2 * COLS];
  for (int j = 0; j < 2 * COLS; j++) pair[j] = 1.0f;
  halo_cpu_dropout(pair, 2, COLS, same, key, 0.5f);
  cr_expect(memcmp(pair, pair + COLS, COLS * sizeof *pair) == 0);
  int64_t kept = 0;
  for (int j = 0; j < COLS; j++) kept += pair[j] != 0.0f;
  cr_expect(kept > 0 && kept < COLS, "all %d columns of a row share one fate", COLS);
  free(a);
  free(b);
}

Test(dropout, extreme_rates) {
  const uint64_t seed = test_seed("dropout.extreme_rates");
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  float *y = random_rows(test_key(seed, 2));
  float *y0 = random_rows(test_key(seed, 2));
  halo_cpu_dropout(y, ROWS, COLS, ids, 1, 0.0f);
  cr_expect(memcmp(y, y0, ROWS * COLS * sizeof *y) == 0, "p = 0 changed Y");
  halo_cpu_dropout(y, ROWS, COLS, ids, 1, 1.0f);
  for (int64_t i = 0; i < ROWS * COLS; i++)
    cr_assert_eq(y[i], 0.0f, "p = 1 kept element %lld", (long long)i);
  free(y);
  free(y0);
}
