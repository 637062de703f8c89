/* halo_cpu_dropout: the keep rate, the scale, determinism, and a mask that
 * follows the global row id rather than the local row. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-exact.h" /* halo_cpu_max_abs */
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

Test(dropout, rng_helpers_are_the_formula) {
  const uint64_t seed = test_seed("dropout.rng_helpers_are_the_formula");
  const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 2, 7);
  cr_expect_eq(halo_dropout_scale(0.0f), 1.0f);
  cr_expect_eq(halo_dropout_scale(0.5f), 2.0f);
  cr_expect_eq(halo_dropout_scale(0.75f), 4.0f);
  cr_expect_eq(halo_dropout_scale(0.3f), 1.0f / 0.7f, "the scale is 1/(1-p) in float");
  cr_expect_eq(halo_dropout_scale(1.0f), 0.0f, "p = 1 keeps nothing: no inf scale");
  cr_expect_eq(halo_dropout_scale(2.0f), 0.0f, "p > 1 keeps nothing: no negative scale");
  const float ps[] = {0.0f, 0.2f, 0.5f, 0.99f, 1.0f};
  for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
    const float p = ps[t], scale = halo_dropout_scale(p);
    for (uint64_t node = 0; node < 200; node++) {
      const uint64_t gid = halo_rng_bits(key, node, 99) >> 20, col = node % 37;
      /* Negative values too: a dropped one must be +0, bit for bit. */
      const float u = halo_rng_uniform(key, gid, col);
      const float v = (node % 2 ? -1.0f : 1.0f) * (0.5f + (float)node);
      cr_assert_eq(halo_dropout_keep(key, gid, col, p), u >= p, "p %g node %llu", (double)p,
                   (unsigned long long)gid);
      const float got = halo_dropout_apply(v, key, gid, col, p, scale);
      const float want = u >= p ? v * scale : 0.0f;
      cr_assert(memcmp(&got, &want, sizeof got) == 0, "p %g v %g: %a, want %a", (double)p,
                (double)v, (double)got, (double)want);
    }
  }
}

Test(dropout, out_of_place_is_the_in_place_mask) {
  const uint64_t seed = test_seed("dropout.out_of_place_is_the_in_place_mask");
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  const float ps[] = {0.0f, 0.3f, 0.8f, 1.0f};
  for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 4, t);
    float *src = random_rows(test_key(seed, 2));
    float *keep = random_rows(test_key(seed, 2));
    float *want = random_rows(test_key(seed, 2));
    float *dst = random_rows(test_key(seed, 3));
    halo_cpu_dropout(want, ROWS, COLS, ids, key, ps[t]);
    halo_cpu_dropout_to(dst, src, ROWS, COLS, ids, key, ps[t]);
    cr_expect(memcmp(dst, want, ROWS * COLS * sizeof *dst) == 0, "p %g: dropout_to differs",
              (double)ps[t]);
    cr_expect(memcmp(src, keep, ROWS * COLS * sizeof *src) == 0, "p %g: the source changed",
              (double)ps[t]);
    free(src);
    free(keep);
    free(want);
    free(dst);
  }
}

/* halo_cpu_dropout_to_max: the same DST as halo_cpu_dropout_to and, from
 * the same pass, the max of |DST| that halo_cpu_max_abs finds on it:
 * signed values, an inf, a NaN (both +inf), every rate, and widths that
 * fill its 16 lanes of running maxima, and that leave a remainder. */
Test(dropout, dropout_to_max_is_dropout_then_max_abs) {
  const uint64_t seed = test_seed("dropout.dropout_to_max_is_dropout_then_max_abs");
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  const float ps[] = {0.0f, 0.5f, 0.9f, 1.0f};
  const int64_t widths[] = {COLS, 37, 7};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
    for (int special = 0; special < 3; special++)
      for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
        const int64_t cols = widths[w];
        const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 5, t);
        float *src = random_rows(test_key(seed, 2));
        for (int64_t i = 0; i < ROWS * cols; i += 3) src[i] = -4.0f * src[i]; /* the max negative */
        if (special) src[777] = special == 1 ? -INFINITY : NAN;
        float *want = random_rows(test_key(seed, 3));
        float *dst = random_rows(test_key(seed, 4));
        halo_cpu_dropout_to(want, src, ROWS, cols, ids, key, ps[t]);
        const float m = halo_cpu_dropout_to_max(dst, src, ROWS, cols, ids, key, ps[t]);
        const float want_m = halo_cpu_max_abs(want, ROWS * cols);
        cr_expect(memcmp(dst, want, (size_t)(ROWS * cols) * sizeof *dst) == 0,
                  "%lld columns, p %g: the rows differ", (long long)cols, (double)ps[t]);
        cr_expect(memcmp(&m, &want_m, sizeof m) == 0,
                  "%lld columns, p %g, case %d: max %a, max_abs says %a", (long long)cols,
                  (double)ps[t], special, (double)m, (double)want_m);
        free(src);
        free(want);
        free(dst);
      }
}

/* A random sparse matrix, stored dense (S, rows × cols, zeros where empty)
 * and as CSR of S (transposed == 0) or of Sᵀ (transposed == 1). */
typedef struct sparse_case {
  int64_t rows, cols, nnz;
  float *dense;
  int64_t *indptr;
  int32_t *indices;
  float *values;
} sparse_case;

static sparse_case sparse_new(uint64_t key, int64_t rows, int64_t cols, int transposed) {
  sparse_case c = {.rows = rows, .cols = cols};
  c.dense = calloc((size_t)(rows * cols), sizeof *c.dense);
  for (int64_t e = 0; e < rows * cols; e++)
    if (halo_rng_uniform(key, (uint64_t)e, 1) < 0.15f)
      c.dense[e] = (e % 3 == 0 ? -1.0f : 1.0f) * (0.5f + halo_rng_uniform(key, (uint64_t)e, 2));
  for (int64_t e = 0; e < rows * cols; e++) c.nnz += c.dense[e] != 0.0f;
  const int64_t outer = transposed ? cols : rows, inner = transposed ? rows : cols;
  c.indptr = calloc((size_t)outer + 1, sizeof *c.indptr);
  c.indices = malloc((size_t)c.nnz * sizeof *c.indices + 1);
  c.values = malloc((size_t)c.nnz * sizeof *c.values + 1);
  for (int64_t o = 0, k = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      const float v = transposed ? c.dense[i * cols + o] : c.dense[o * cols + i];
      if (v == 0.0f) continue;
      c.indices[k] = (int32_t)i;
      c.values[k++] = v;
    }
    c.indptr[o + 1] = k;
  }
  return c;
}

static void sparse_free(sparse_case *c) {
  free(c->dense);
  free(c->indptr);
  free(c->indices);
  free(c->values);
}

Test(dropout, csr_mask_is_the_dense_mask) {
  const uint64_t seed = test_seed("dropout.csr_mask_is_the_dense_mask");
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  const int64_t rows = ROWS, cols = COLS;
  /* p 0.4, 1 and 0 (everything kept: the threshold 0, which only this
   * kernel meets); every third value negative, so that a dropped one must
   * be +0, bit for bit. */
  for (int c = 0; c < 12; c++) {
    const int transposed = c & 1, ones = (c >> 1) & 1;
    const float p = c >= 8 ? 0.0f : c >= 4 ? 1.0f : 0.4f;
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, 9, (uint64_t)c);
    sparse_case s = sparse_new(test_key(seed, 10 + (uint64_t)c), rows, cols, transposed);
    cr_assert_gt(s.nnz, 0);
    if (ones)
      for (int64_t e = 0; e < rows * cols; e++) s.dense[e] = s.dense[e] != 0.0f ? 1.0f : 0.0f;
    /* The dense mask of the rows' global ids is the oracle. */
    halo_cpu_dropout(s.dense, rows, cols, ids, key, p);
    float *out = malloc((size_t)s.nnz * sizeof *out);
    for (int64_t k = 0; k < s.nnz; k++) out[k] = NAN;
    halo_cpu_csr_dropout(s.indptr, s.indices, ones ? NULL : s.values, transposed ? cols : rows,
                         transposed, ids, key, p, out);
    int64_t kept = 0;
    for (int64_t o = 0; o < (transposed ? cols : rows); o++)
      for (int64_t k = s.indptr[o]; k < s.indptr[o + 1]; k++) {
        const int64_t i = transposed ? s.indices[k] : o, j = transposed ? o : s.indices[k];
        kept += out[k] != 0.0f;
        cr_assert(memcmp(&out[k], &s.dense[i * cols + j], sizeof out[k]) == 0,
                  "transposed %d ones %d p %g: entry (%lld, %lld) is %a, dense mask %a",
                  transposed, ones, (double)p, (long long)i, (long long)j, (double)out[k],
                  (double)s.dense[i * cols + j]);
      }
    if (p > 0.0f && p < 1.0f)
      cr_expect(kept > 0 && kept < s.nnz, "kept %lld of %lld", (long long)kept, (long long)s.nnz);
    else
      cr_expect_eq(kept, p > 0.0f ? 0 : s.nnz, "p %g: kept %lld of %lld", (double)p,
                   (long long)kept, (long long)s.nnz);
    free(out);
    sparse_free(&s);
  }
}

/* The kernels' vectorised keep test (an integer threshold on the draw's 24
 * bits, the row's half of the hash hoisted) is halo_dropout_apply's, bit
 * for bit: in place and out of place, at rates whose p · 2^24 is and is
 * not an integer, a rate just below one half, one below a single draw's
 * step, and on rows of 37 columns (not a multiple of any vector width),
 * negative values included (a dropped value is +0). */
Test(dropout, kernels_are_the_formula_bit_for_bit) {
  const uint64_t seed = test_seed("dropout.kernels_are_the_formula_bit_for_bit");
  enum { C = 37, R = ROWS };
  int64_t ids[ROWS];
  make_ids(ids, test_key(seed, 1));
  float *x = malloc(R * C * sizeof *x), *in = malloc(R * C * sizeof *in),
        *out = malloc(R * C * sizeof *out);
  cr_assert(x && in && out);
  test_fill(x, R * C, test_key(seed, 2), -1.5f, 1.5f);
  const float ps[] = {0.1f, 1.0f / 3.0f, 0.5f, 0.49999997f, 0.75f, 0.999999f, 1e-8f, 0.2f};
  for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
    const float p = ps[t], scale = halo_dropout_scale(p);
    const uint64_t key = halo_rng_key(seed, HALO_RNG_DROPOUT, t, 3);
    memcpy(in, x, R * C * sizeof *in);
    halo_cpu_dropout(in, R, C, ids, key, p);
    halo_cpu_dropout_to(out, x, R, C, ids, key, p);
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) {
        const float want =
            halo_dropout_apply(x[i * C + j], key, (uint64_t)ids[i], (uint64_t)j, p, scale);
        cr_assert(memcmp(&in[i * C + j], &want, sizeof want) == 0,
                  "seed %llu p %g (%lld, %lld): in place %a, want %a", (unsigned long long)seed,
                  (double)p, (long long)i, (long long)j, (double)in[i * C + j], (double)want);
        cr_assert(memcmp(&out[i * C + j], &want, sizeof want) == 0,
                  "seed %llu p %g (%lld, %lld): out of place %a, want %a", (unsigned long long)seed,
                  (double)p, (long long)i, (long long)j, (double)out[i * C + j], (double)want);
      }
  }
  free(x);
  free(in);
  free(out);
}
