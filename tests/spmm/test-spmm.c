/* halo_spmm_cpu against a dense double-precision reference on random CSR
 * matrices: shapes with empty rows and a hub row, widths on and off the
 * specialised ones, row subsets, beta 0 and 1, values given or all ones,
 * leading dimensions wider than the matrix, and X starting on a cache line
 * or inside one (the kernel has its own copies for line-aligned X). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-spmm.h"
#include "kernels/test-random.h"

/* A random rows × cols CSR: about a fifth of the rows are empty, the others
 * have 1..2·degree nonzeros, and row `hub` (if >= 0) has `hub_degree`.
 * Columns are random and may repeat within a row, as a multigraph's would. */
static halo_csr random_csr(uint64_t key, int64_t rows, int64_t cols, int64_t degree, int64_t hub,
                           int64_t hub_degree, int with_values) {
  halo_csr a = {.rows = rows, .cols = cols};
  a.indptr = calloc((size_t)rows + 1, sizeof *a.indptr);
  cr_assert(a.indptr);
  for (int64_t r = 0; r < rows; r++) {
    int64_t deg =
        test_below(key, (uint64_t)r, 5) == 0 ? 0 : 1 + test_below(key ^ 1, (uint64_t)r, 2 * degree);
    if (r == hub) deg = hub_degree;
    a.indptr[r + 1] = a.indptr[r] + deg;
  }
  a.nnz = a.indptr[rows];
  a.indices = malloc((size_t)(a.nnz ? a.nnz : 1) * sizeof *a.indices);
  cr_assert(a.indices);
  for (int64_t k = 0; k < a.nnz; k++)
    a.indices[k] = (int32_t)test_below(key ^ 2, (uint64_t)k, cols);
  if (with_values) {
    a.values = malloc((size_t)(a.nnz ? a.nnz : 1) * sizeof *a.values);
    cr_assert(a.values);
    test_fill(a.values, a.nnz, key ^ 3, -1.0f, 1.0f);
  }
  return a;
}

static void free_csr(halo_csr *a) {
  free(a->indptr);
  free(a->indices);
  free(a->values);
}

typedef struct spmm_case {
  int64_t rows, cols, degree, ncols;
  int64_t ldx_pad, ldy_pad; /* ld = ncols + pad */
  int subset;               /* 1: a random subset of the rows, in random order */
  int x_offset;             /* floats between a 64-byte boundary and X's start */
  int with_values;
  float beta;
  int64_t hub, hub_degree;
} spmm_case;

/* Runs one case and compares every element of Y, including those that must
 * not change, with the reference. */
static void check_case(uint64_t seed, int id, spmm_case c) {
  const uint64_t key = test_key(seed, (uint64_t)id);
  halo_csr a = random_csr(key, c.rows, c.cols, c.degree, c.hub, c.hub_degree, c.with_values);
  const int64_t ldx = c.ncols + c.ldx_pad, ldy = c.ncols + c.ldy_pad;
  float *x_block = aligned_alloc(64, ((size_t)(c.cols * ldx) * sizeof(float) + 127) / 64 * 64);
  float *x = x_block ? x_block + c.x_offset : NULL;
  float *y = malloc((size_t)(c.rows * ldy) * sizeof *y);
  float *y0 = malloc((size_t)(c.rows * ldy) * sizeof *y0);
  int32_t *rows = malloc((size_t)c.rows * sizeof *rows);
  char *listed = calloc((size_t)c.rows, 1);
  cr_assert(x && y && y0 && rows && listed);
  test_fill(x, c.cols * ldx, key ^ 4, -2.0f, 2.0f);
  test_fill(y0, c.rows * ldy, key ^ 5, -1.0f, 1.0f);

  /* The row list: all rows (NULL), or a random half in random order. */
  int64_t nrows = c.rows;
  for (int64_t r = 0; r < c.rows; r++) rows[r] = (int32_t)r;
  if (c.subset) {
    for (int64_t r = c.rows - 1; r > 0; r--) {
      const int64_t s = test_below(key ^ 6, (uint64_t)r, r + 1);
      const int32_t t = rows[r];
      rows[r] = rows[s];
      rows[s] = t;
    }
    nrows = c.rows / 2;
  }
  for (int64_t i = 0; i < nrows; i++) listed[rows[i]] = 1;

  /* With beta = 0 the listed rows of Y start as NaN: the kernel must not read them. */
  memcpy(y, y0, (size_t)(c.rows * ldy) * sizeof *y);
  if (c.beta == 0.0f)
    for (int64_t r = 0; r < c.rows; r++)
      for (int64_t j = 0; j < c.ncols && listed[r]; j++) y[r * ldy + j] = NAN;

  halo_spmm_cpu(&a, x, ldx, c.ncols, c.beta, y, ldy, c.subset ? rows : NULL, nrows);

  double worst = 0.0;
  for (int64_t r = 0; r < c.rows; r++) {
    for (int64_t j = 0; j < ldy; j++) {
      const float got = y[r * ldy + j];
      if (!listed[r] || j >= c.ncols) {
        cr_assert(memcmp(&got, &y0[r * ldy + j], sizeof got) == 0,
                  "case %d: Y[%lld, %lld] outside the product changed", id, (long long)r,
                  (long long)j);
        continue;
      }
      double ref = c.beta * (double)y0[r * ldy + j];
      double mag = fabs(ref);
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++) {
        const double term = (a.values ? a.values[k] : 1.0) * x[a.indices[k] * ldx + j];
        ref += term;
        mag += fabs(term);
      }
      /* Float summation of n terms errs by at most about n·eps·Σ|terms|. */
      const double deg = (double)(a.indptr[r + 1] - a.indptr[r]);
      const double bound = (deg + 2.0) * FLT_EPSILON * mag + FLT_MIN;
      const double err = fabs((double)got - ref);
      cr_assert(err <= bound, "case %d: Y[%lld, %lld] = %.9g, reference %.9g (bound %.3g)", id,
                (long long)r, (long long)j, got, ref, bound);
      if (mag > 0 && err / mag > worst) worst = err / mag;
    }
  }
  cr_log_info("case %d: %lld x %lld, nnz %lld, ncols %lld: worst relative error %.3g", id,
              (long long)c.rows, (long long)c.cols, (long long)a.nnz, (long long)c.ncols, worst);
  free_csr(&a);
  free(x_block);
  free(y);
  free(y0);
  free(rows);
  free(listed);
}

Test(spmm, matches_dense_reference) {
  const uint64_t seed = test_seed("spmm.matches_dense_reference");
  const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 3}, {300, 200, 8}, {1000, 700, 6}};
  const int64_t widths[] = {1, 7, 16, 32, 64, 130};
  int id = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
      for (int variant = 0; variant < 32; variant++) {
        spmm_case c = {
            .rows = shapes[s][0],
            .cols = shapes[s][1],
            .degree = shapes[s][2],
            .ncols = widths[w],
            .subset = variant & 1,
            .with_values = (variant >> 1) & 1,
            .beta = (variant >> 2) & 1 ? 1.0f : 0.0f,
            .hub = -1,
            /* X on a line or off it, by its start or by its leading
             * dimension (a pad of 16 floats keeps every row on a line). */
            .x_offset = (variant >> 3) & 1,
            .ldx_pad = (variant >> 4) & 1 ? ((int)w + (int)s) % 2 ? 3 : 16 : 0,
            .ldy_pad = (variant + (int)s) % 2 ? 5 : 0,
        };
        check_case(seed, id++, c);
      }
}

Test(spmm, every_width_up_to_70) {
  /* The kernel has a code path for each width below 32 and for each tile
   * count; every one of them is hit here. */
  const uint64_t seed = test_seed("spmm.every_width_up_to_70");
  for (int64_t w = 1; w <= 70; w++) {
    spmm_case c = {.rows = 60,
                   .cols = 45,
                   .degree = 5,
                   .ncols = w,
                   .with_values = (int)(w & 1),
                   .beta = w % 3 == 0 ? 1.0f : 0.0f,
                   .subset = w % 4 == 0,
                   .hub = -1,
                   .ldx_pad = w % 5 == 0 ? 1 : 0,
                   .ldy_pad = w % 7 == 0 ? 2 : 0,
                   .x_offset = w % 2 == 0 ? 0 : 3};
    check_case(seed, 1000 + (int)w, c);
  }
}

Test(spmm, skewed_degrees_with_a_hub) {
  /* One row holds a third of the nonzeros: long rows, prefetching across
   * row boundaries and dynamic scheduling all meet here. */
  const uint64_t seed = test_seed("spmm.skewed_degrees_with_a_hub");
  const int64_t widths[] = {16, 64, 40};
  for (size_t w = 0; w < 3; w++) {
    spmm_case c = {.rows = 3000,
                   .cols = 3000,
                   .degree = 2,
                   .ncols = widths[w],
                   .with_values = 1,
                   .beta = 1.0f,
                   .hub = 1234,
                   .hub_degree = 5000,
                   .subset = (int)(w & 1)};
    check_case(seed, 2000 + (int)w, c);
  }
}

Test(spmm, no_rows_or_no_columns_changes_nothing) {
  const uint64_t seed = test_seed("spmm.no_rows_or_no_columns_changes_nothing");
  halo_csr a = random_csr(test_key(seed, 1), 10, 10, 3, -1, 0, 1);
  float x[10 * 4], y[10 * 4], y0[10 * 4];
  test_fill(x, 40, test_key(seed, 2), -1.0f, 1.0f);
  test_fill(y0, 40, test_key(seed, 3), -1.0f, 1.0f);
  memcpy(y, y0, sizeof y);
  halo_spmm_cpu(&a, x, 4, 4, 0.0f, y, 4, NULL, 0);
  halo_spmm_cpu(&a, x, 4, 0, 0.0f, y, 4, NULL, 10);
  cr_expect(memcmp(y, y0, sizeof y) == 0);
  free_csr(&a);
}

Test(spmm, same_bits_for_any_thread_count) {
  /* Each row is summed by one thread in index order, so the result cannot
   * depend on how many threads there are or which one took the row. */
  const uint64_t seed = test_seed("spmm.same_bits_for_any_thread_count");
  const int64_t rows = 2000, ncols = 24;
  halo_csr a = random_csr(test_key(seed, 1), rows, rows, 10, 17, 3000, 1);
  float *x = malloc((size_t)(rows * ncols) * sizeof *x);
  float *y1 = malloc((size_t)(rows * ncols) * sizeof *y1);
  float *y3 = malloc((size_t)(rows * ncols) * sizeof *y3);
  cr_assert(x && y1 && y3);
  test_fill(x, rows * ncols, test_key(seed, 2), -1.0f, 1.0f);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  halo_spmm_cpu(&a, x, ncols, ncols, 0.0f, y1, ncols, NULL, rows);
  omp_set_num_threads(3);
  halo_spmm_cpu(&a, x, ncols, ncols, 0.0f, y3, ncols, NULL, rows);
  omp_set_num_threads(saved);
  cr_expect(memcmp(y1, y3, (size_t)(rows * ncols) * sizeof *y1) == 0);
  free_csr(&a);
  free(x);
  free(y1);
  free(y3);
}
