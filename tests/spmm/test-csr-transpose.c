/* halo_csr_transpose against dense matrices, and its refusals. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-spmm.h"
#include "halo-status.h"
#include "kernels/test-random.h"

/* A random CSR with empty rows and repeated columns (see test-spmm.c). */
static halo_csr random_csr(uint64_t key, int64_t rows, int64_t cols, int with_values) {
  halo_csr a = {.rows = rows, .cols = cols};
  a.indptr = calloc((size_t)rows + 1, sizeof *a.indptr);
  cr_assert(a.indptr);
  for (int64_t r = 0; r < rows; r++)
    a.indptr[r + 1] =
        a.indptr[r] +
        (test_below(key, (uint64_t)r, 4) == 0 ? 0 : test_below(key ^ 1, (uint64_t)r, 9));
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

/* The dense rows × cols matrix of a CSR, duplicates summed, in double. */
static double *dense(const halo_csr *a) {
  double *d = calloc((size_t)(a->rows * a->cols) + 1, sizeof *d);
  cr_assert(d);
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t k = a->indptr[r]; k < a->indptr[r + 1]; k++)
      d[r * a->cols + a->indices[k]] += a->values ? a->values[k] : 1.0;
  return d;
}

Test(csr_transpose, matches_dense_transpose) {
  const uint64_t seed = test_seed("csr_transpose.matches_dense_transpose");
  const int64_t shapes[][2] = {{1, 1}, {5, 17}, {40, 3}, {123, 321}};
  for (size_t s = 0; s < 4; s++) {
    for (int with_values = 0; with_values < 2; with_values++) {
      halo_csr a = random_csr(test_key(seed, s * 2 + (size_t)with_values), shapes[s][0],
                              shapes[s][1], with_values);
      halo_csr t, tt;
      cr_assert_eq(halo_csr_transpose(&a, &t), HALO_OK);
      cr_assert_eq(t.rows, a.cols);
      cr_assert_eq(t.cols, a.rows);
      cr_assert_eq(t.nnz, a.nnz);
      cr_assert_eq(t.values == NULL, a.values == NULL);
      /* Column indices come out sorted within each row. */
      for (int64_t r = 0; r < t.rows; r++)
        for (int64_t k = t.indptr[r] + 1; k < t.indptr[r + 1]; k++)
          cr_assert_leq(t.indices[k - 1], t.indices[k], "row %lld of Aᵀ is not sorted",
                        (long long)r);

      double *da = dense(&a), *dt = dense(&t);
      for (int64_t r = 0; r < a.rows; r++)
        for (int64_t c = 0; c < a.cols; c++)
          cr_assert_eq(dt[c * a.rows + r], da[r * a.cols + c], "shape %zu: Aᵀ[%lld, %lld]", s,
                       (long long)c, (long long)r);

      /* Transposing twice gives A back (with sorted rows). */
      cr_assert_eq(halo_csr_transpose(&t, &tt), HALO_OK);
      double *dtt = dense(&tt);
      cr_assert(memcmp(dtt, da, (size_t)(a.rows * a.cols) * sizeof *da) == 0);

      free(da);
      free(dt);
      free(dtt);
      halo_csr_free(&t);
      halo_csr_free(&tt);
      cr_assert_null(t.indptr);
      free(a.indptr);
      free(a.indices);
      free(a.values);
    }
  }
}

/* The permutation: Aᵀ's k-th non-zero is A's perm[k]-th (the same row,
 * column and value), each of A's exactly once; checked against the
 * transpose itself, whose order it must follow. */
Test(csr_transpose, permutation_reads_the_transpose_from_a) {
  const uint64_t seed = test_seed("csr_transpose.permutation");
  const int64_t shapes[][2] = {{1, 1}, {5, 17}, {40, 3}, {123, 321}};
  for (size_t s = 0; s < 4; s++) {
    halo_csr a = random_csr(test_key(seed, s), shapes[s][0], shapes[s][1], 1), t;
    int32_t *perm = malloc((size_t)(a.nnz ? a.nnz : 1) * sizeof *perm);
    int32_t *row_of = malloc((size_t)(a.nnz ? a.nnz : 1) * sizeof *row_of);
    char *seen = calloc((size_t)a.nnz + 1, 1);
    cr_assert(perm && row_of && seen);
    for (int64_t r = 0; r < a.rows; r++)
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++) row_of[k] = (int32_t)r;
    cr_assert_eq(halo_csr_transpose(&a, &t), HALO_OK);
    cr_assert_eq(halo_csr_transpose_perm(&a, perm), HALO_OK);
    for (int64_t c = 0; c < t.rows; c++)
      for (int64_t k = t.indptr[c]; k < t.indptr[c + 1]; k++) {
        const int32_t from = perm[k];
        cr_assert(from >= 0 && from < a.nnz && !seen[from], "shape %zu: perm[%lld] = %d", s,
                  (long long)k, from);
        seen[from] = 1;
        cr_expect_eq(a.indices[from], c, "shape %zu: entry %lld's column", s, (long long)k);
        cr_expect_eq(row_of[from], t.indices[k], "shape %zu: entry %lld's row", s, (long long)k);
        cr_expect(memcmp(&a.values[from], &t.values[k], sizeof *t.values) == 0,
                  "shape %zu: entry %lld's value", s, (long long)k);
      }
    halo_csr_free(&t);
    free(perm);
    free(row_of);
    free(seen);
    free(a.indptr);
    free(a.indices);
    free(a.values);
  }
}

Test(csr_transpose, empty_matrix) {
  int64_t indptr[4] = {0, 0, 0, 0};
  halo_csr a = {.rows = 3, .cols = 2, .nnz = 0, .indptr = indptr};
  halo_csr t;
  cr_assert_eq(halo_csr_transpose(&a, &t), HALO_OK);
  cr_expect_eq(t.rows, 2);
  cr_expect_eq(t.nnz, 0);
  for (int r = 0; r <= 2; r++) cr_expect_eq(t.indptr[r], 0);
  halo_csr_free(&t);
  halo_csr_free(NULL);
}

Test(csr_transpose, refuses_bad_input) {
  int64_t indptr[3] = {0, 2, 3};
  int32_t indices[3] = {0, 1, 1};
  halo_csr a = {.rows = 2, .cols = 2, .nnz = 3, .indptr = indptr, .indices = indices};
  halo_csr t;

  indices[1] = 2; /* out of range */
  cr_expect_eq(halo_csr_transpose(&a, &t), HALO_ERR_RANGE);
  cr_expect_null(t.indptr);
  indices[1] = -1;
  cr_expect_eq(halo_csr_transpose(&a, &t), HALO_ERR_RANGE);
  indices[1] = 1;

  indptr[1] = 4; /* not monotone */
  cr_expect_eq(halo_csr_transpose(&a, &t), HALO_ERR_ARG);
  indptr[1] = 2;

  a.nnz = 2; /* indptr does not end at nnz */
  cr_expect_eq(halo_csr_transpose(&a, &t), HALO_ERR_ARG);
  a.nnz = 3;

  cr_expect_eq(halo_csr_transpose(&a, &t), HALO_OK);
  halo_csr_free(&t);
}
