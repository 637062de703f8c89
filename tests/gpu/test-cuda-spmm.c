/* cuSPARSE SpMM plans against the CPU SpMM (spmm/halo-spmm.h).
 *
 * Threshold: 1e-5 relative (‖cuda − cpu‖₂ / ‖cpu‖₂).  Both sum each row in
 * fp32 but in different orders; rows here have at most 60 nonzeros, so the
 * difference stays near 1e-7.
 *
 * The matrices look like shards: more columns than rows (halo columns),
 * skewed degrees, empty rows, and a split into interior rows [0, split) and
 * boundary rows [split, rows).
 */
#include <string.h>

#include "gpu-test.h"
#include "halo-spmm-cuda.h"
#include "halo-spmm.h"

#define SPMM_TOL 1e-5

/* A random CSR: rows × cols, degree 0..max_deg (a tenth of the rows empty),
 * values in [-1, 1) or NULL (all ones). */
static halo_csr random_csr(uint64_t seed, int64_t rows, int64_t cols, int max_deg, int ones) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, (uint64_t)rows, (uint64_t)cols);
  halo_csr a = {.rows = rows, .cols = cols};
  a.indptr = host_alloc((size_t)(rows + 1) * sizeof *a.indptr);
  a.indptr[0] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t deg = rand_below(key, (uint64_t)r, 10) == 0
                            ? 0
                            : rand_below(key, (uint64_t)(rows + r), max_deg + 1);
    a.indptr[r + 1] = a.indptr[r] + deg;
  }
  a.nnz = a.indptr[rows];
  a.indices = host_alloc((size_t)a.nnz * sizeof *a.indices);
  for (int64_t k = 0; k < a.nnz; k++)
    a.indices[k] = (int32_t)rand_below(key, (uint64_t)(3 * rows + k), cols);
  a.values = NULL;
  if (!ones) {
    a.values = host_alloc((size_t)a.nnz * sizeof *a.values);
    fill_uniform(a.values, a.nnz, seed, 99, -1.0f, 1.0f);
  }
  return a;
}

static void free_csr(halo_csr *a) {
  free(a->indptr);
  free(a->indices);
  free(a->values);
}

/* Compares Y from the GPU with Y from the CPU: the first ncols columns of
 * the rows with computed[r] set within SPMM_TOL, and every other float bit
 * for bit (NaN == NaN cannot check that they were left alone). */
static void expect_same_y(const float *got, const float *want, int64_t rows, int64_t ncols,
                          int64_t ldy, const char *computed, const char *what) {
  double num = 0.0, den = 0.0;
  int finite = 1, untouched = 1;
  for (int64_t r = 0; r < rows; r++) {
    const float *gr = got + r * ldy, *wr = want + r * ldy;
    if (!computed[r]) {
      untouched &= memcmp(gr, wr, (size_t)ldy * 4) == 0;
      continue;
    }
    untouched &= memcmp(gr + ncols, wr + ncols, (size_t)(ldy - ncols) * 4) == 0;
    for (int64_t j = 0; j < ncols; j++) {
      finite &= isfinite(gr[j]) != 0;
      num += ((double)gr[j] - wr[j]) * ((double)gr[j] - wr[j]);
      den += (double)wr[j] * wr[j];
    }
  }
  const double err = den > 0 ? sqrt(num / den) : sqrt(num);
  cr_expect(finite, "%s: non-finite output", what);
  cr_expect(untouched, "%s: wrote outside its rows or columns", what);
  cr_expect_leq(err, SPMM_TOL, "%s: rel err %g", what, err);
}

/* Runs every part at every planned shape with beta 0 and 1, against the CPU. */
static void check_plan(const halo_csr *a, int64_t split, const halo_spmm_cuda_options *opt,
                       uint64_t seed) {
  const halo_spmm_cuda_shape shapes[] = {{16, 16, 16}, {33, 40, 35}};
  halo_spmm_cuda_plan *plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create(a, split, shapes, 2, opt, NULL, &plan), HALO_OK,
               "plan_create failed");
  cr_assert_not_null(plan);
  fprintf(stderr, "plan: rows %lld nnz %lld split %lld index64 %d alg %d, %lld device bytes\n",
          (long long)a->rows, (long long)a->nnz, (long long)split,
          halo_spmm_cuda_plan_index64(plan), opt ? (int)opt->alg : 0,
          (long long)halo_spmm_cuda_plan_bytes(plan));

  int32_t *boundary_rows = host_alloc((size_t)(a->rows - split + 1) * sizeof(int32_t));
  char *computed = host_alloc((size_t)a->rows);
  for (int64_t r = split; r < a->rows; r++) boundary_rows[r - split] = (int32_t)r;

  for (int s = 0; s < 2; s++) {
    const halo_spmm_cuda_shape sh = shapes[s];
    const size_t xsz = (size_t)(a->cols * sh.ldx) * 4, ysz = (size_t)(a->rows * sh.ldy) * 4;
    float *x = host_alloc(xsz), *y = host_alloc(ysz), *got = host_alloc(ysz);
    fill_uniform(x, a->cols * sh.ldx, seed, 10 + (uint64_t)s, -1.0f, 1.0f);
    float *dx = dev_upload(x, xsz), *dy = dev_alloc(ysz);

    for (int part = HALO_SPMM_ALL; part <= HALO_SPMM_BOUNDARY; part++) {
      for (int b = 0; b <= 1; b++) {
        const float beta = (float)b;
        /* beta 0: Y starts as NaN on both sides, and the rows outside the
         * part must stay NaN, bit for bit. beta 1: Y starts random. */
        if (b == 0) {
          memset(y, 0xff, ysz);
        } else {
          fill_uniform(y, a->rows * sh.ldy, seed, 20 + (uint64_t)(part * 2 + s), -1.0f, 1.0f);
        }
        cr_assert_eq(cudaMemcpy(dy, y, ysz, cudaMemcpyHostToDevice), cudaSuccess);
        cr_assert_eq(halo_spmm_cuda_run(plan, (halo_spmm_part)part, dx, sh.ldx, sh.ncols, beta, dy,
                                        sh.ldy, NULL),
                     HALO_OK, "run part %d", part);
        if (part == HALO_SPMM_ALL)
          halo_spmm_cpu(a, x, sh.ldx, sh.ncols, beta, y, sh.ldy, NULL, a->rows);
        else if (part == HALO_SPMM_INTERIOR)
          halo_spmm_cpu(a, x, sh.ldx, sh.ncols, beta, y, sh.ldy, NULL, split);
        else
          halo_spmm_cpu(a, x, sh.ldx, sh.ncols, beta, y, sh.ldy, boundary_rows, a->rows - split);
        dev_download(got, dy, ysz);

        const int64_t r0 = part == HALO_SPMM_BOUNDARY ? split : 0;
        const int64_t r1 = part == HALO_SPMM_INTERIOR ? split : a->rows;
        for (int64_t r = 0; r < a->rows; r++) computed[r] = r >= r0 && r < r1;
        char what[64];
        snprintf(what, sizeof what, "shape %d part %d beta %d", s, part, b);
        expect_same_y(got, y, a->rows, sh.ncols, sh.ldy, computed, what);
      }
    }
    cudaFree(dx);
    cudaFree(dy);
    free(x);
    free(y);
    free(got);
  }
  free(boundary_rows);
  free(computed);
  halo_spmm_cuda_plan_destroy(&plan);
  cr_expect_null(plan);
}

/* halo_spmm_cuda_run_rows on a shuffled subset of rows (and on all rows,
 * rows == NULL) at widths for a quarter warp (7), a half warp (16), and
 * at and above one warp pass (128). */
static void check_rows(const halo_csr *a, const halo_spmm_cuda_options *opt, uint64_t seed) {
  const int64_t widths[] = {7, 16, 128, 200};
  halo_spmm_cuda_plan *plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create(a, 0, NULL, 0, opt, NULL, &plan), HALO_OK);
  const int64_t nlist = a->rows * 3 / 5;
  int32_t *list = host_alloc((size_t)a->rows * sizeof *list);
  char *computed = host_alloc((size_t)a->rows);
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 5, 0);
  for (int64_t i = 0; i < a->rows; i++) list[i] = (int32_t)i;
  for (int64_t i = a->rows - 1; i > 0; i--) {
    const int64_t j = rand_below(key, (uint64_t)i, i + 1);
    const int32_t t = list[i];
    list[i] = list[j];
    list[j] = t;
  }
  int32_t *dlist = dev_upload(list, (size_t)nlist * sizeof *list);

  for (int w = 0; w < (int)(sizeof widths / sizeof widths[0]); w++) {
    const int64_t ncols = widths[w], ldx = ncols + 1, ldy = ncols + 3;
    const size_t xsz = (size_t)(a->cols * ldx) * 4, ysz = (size_t)(a->rows * ldy) * 4;
    float *x = host_alloc(xsz), *y = host_alloc(ysz), *got = host_alloc(ysz);
    fill_uniform(x, a->cols * ldx, seed, 30 + (uint64_t)w, -1.0f, 1.0f);
    float *dx = dev_upload(x, xsz), *dy = dev_alloc(ysz);
    for (int all = 0; all <= 1; all++) {
      for (int b = 0; b <= 1; b++) {
        if (b == 0)
          memset(y, 0xff, ysz);
        else
          fill_uniform(y, a->rows * ldy, seed, 40 + (uint64_t)w, -1.0f, 1.0f);
        cr_assert_eq(cudaMemcpy(dy, y, ysz, cudaMemcpyHostToDevice), cudaSuccess);
        const int64_t n = all ? a->rows : nlist;
        cr_assert_eq(halo_spmm_cuda_run_rows(plan, dx, ldx, ncols, (float)b, dy, ldy,
                                             all ? NULL : dlist, n, NULL),
                     HALO_OK);
        halo_spmm_cpu(a, x, ldx, ncols, (float)b, y, ldy, all ? NULL : list, n);
        dev_download(got, dy, ysz);
        memset(computed, all, (size_t)a->rows);
        for (int64_t i = 0; i < n && !all; i++) computed[list[i]] = 1;
        char what[80];
        snprintf(what, sizeof what, "rows: ncols %lld, %s, beta %d", (long long)ncols,
                 all ? "all rows" : "a row list", b);
        expect_same_y(got, y, a->rows, ncols, ldy, computed, what);
      }
    }
    cudaFree(dx);
    cudaFree(dy);
    free(x);
    free(y);
    free(got);
  }
  cudaFree(dlist);
  free(list);
  free(computed);
  halo_spmm_cuda_plan_destroy(&plan);
}

Test(cuda_spmm, matches_cpu_for_every_part_and_shape) {
  const uint64_t seed = gpu_test_seed("spmm");
  halo_csr a = random_csr(seed, 1500, 1800, 60, 0);
  check_plan(&a, 700, NULL, seed);
  free_csr(&a);
}

Test(cuda_spmm, implicit_ones_and_64bit_indices) {
  const uint64_t seed = gpu_test_seed("spmm_index64");
  halo_csr a = random_csr(seed, 1200, 1300, 40, 1);
  const halo_spmm_cuda_options opt = {.alg = HALO_SPMM_CUDA_ALG_DEFAULT, .force_index64 = 1};
  check_plan(&a, 400, &opt, seed);
  free_csr(&a);
}

Test(cuda_spmm, deterministic_algorithm) {
  const uint64_t seed = gpu_test_seed("spmm_alg2");
  halo_csr a = random_csr(seed, 1000, 1000, 30, 0);
  const halo_spmm_cuda_options opt = {.alg = HALO_SPMM_CUDA_ALG_CSR2, .force_index64 = 0};
  check_plan(&a, 1000, &opt, seed); /* every row interior: the boundary is empty */
  free_csr(&a);
}

/* CSR_ALG1 with row-major X and Y (the plan's only layout): cuSPARSE must
 * accept the pair, or plan_create must fail with a status, never a wrong Y. */
Test(cuda_spmm, csr_alg1_with_row_major_dense) {
  const uint64_t seed = gpu_test_seed("spmm_alg1");
  halo_csr a = random_csr(seed, 900, 1100, 25, 0);
  const halo_spmm_cuda_options opt = {.alg = HALO_SPMM_CUDA_ALG_CSR1, .force_index64 = 0};
  check_plan(&a, 450, &opt, seed);
  free_csr(&a);
}

Test(cuda_spmm, parts_without_nonzeros) {
  const uint64_t seed = gpu_test_seed("spmm_empty");
  halo_csr a = random_csr(seed, 800, 900, 20, 0);
  /* Empty the boundary rows [500, 800): their product is zero. */
  for (int64_t r = 500; r <= a.rows; r++) a.indptr[r] = a.indptr[500];
  a.nnz = a.indptr[a.rows];
  check_plan(&a, 500, NULL, seed);
  check_plan(&a, 0, NULL, seed); /* no interior rows at all */
  free_csr(&a);
}

Test(cuda_spmm, row_lists_match_cpu) {
  const uint64_t seed = gpu_test_seed("spmm_rows");
  halo_csr a = random_csr(seed, 1100, 1400, 50, 0);
  check_rows(&a, NULL, seed);
  const halo_spmm_cuda_options opt = {.alg = HALO_SPMM_CUDA_ALG_DEFAULT, .force_index64 = 1};
  check_rows(&a, &opt, seed);
  free_csr(&a);
}

Test(cuda_spmm, shapes_can_be_added_after_planning) {
  const uint64_t seed = gpu_test_seed("spmm_add_shape");
  halo_log_set_quiet(1);
  halo_csr a = random_csr(seed, 600, 700, 30, 0);
  const halo_spmm_cuda_shape first = {16, 16, 16}, later = {48, 50, 48};
  halo_spmm_cuda_plan *plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create(&a, 300, &first, 1, NULL, NULL, &plan), HALO_OK);
  const size_t xsz = (size_t)(a.cols * later.ldx) * 4, ysz = (size_t)(a.rows * later.ldy) * 4;
  float *x = host_alloc(xsz), *y = host_alloc(ysz), *got = host_alloc(ysz);
  char *computed = host_alloc((size_t)a.rows);
  fill_uniform(x, a.cols * later.ldx, seed, 1, -1.0f, 1.0f);
  memset(y, 0xff, ysz);
  float *dx = dev_upload(x, xsz), *dy = dev_upload(y, ysz);

  cr_expect_eq(halo_spmm_cuda_run(plan, HALO_SPMM_BOUNDARY, dx, later.ldx, later.ncols, 0.0f, dy,
                                  later.ldy, NULL),
               HALO_ERR_UNSUPPORTED);
  cr_assert_eq(halo_spmm_cuda_plan_add_shape(plan, &later), HALO_OK);
  cr_assert_eq(halo_spmm_cuda_plan_add_shape(plan, &later), HALO_OK); /* again: no-op */
  cr_assert_eq(halo_spmm_cuda_run(plan, HALO_SPMM_BOUNDARY, dx, later.ldx, later.ncols, 0.0f, dy,
                                  later.ldy, NULL),
               HALO_OK);
  int32_t *rows = host_alloc(300 * sizeof *rows);
  for (int i = 0; i < 300; i++) rows[i] = 300 + i;
  halo_spmm_cpu(&a, x, later.ldx, later.ncols, 0.0f, y, later.ldy, rows, 300);
  dev_download(got, dy, ysz);
  for (int64_t r = 0; r < a.rows; r++) computed[r] = r >= 300;
  expect_same_y(got, y, a.rows, later.ncols, later.ldy, computed, "added shape");

  const halo_spmm_cuda_shape bad = {8, 4, 8};
  cr_expect_eq(halo_spmm_cuda_plan_add_shape(plan, &bad), HALO_ERR_ARG);
  cudaFree(dx);
  cudaFree(dy);
  free(x);
  free(y);
  free(got);
  free(rows);
  free(computed);
  halo_spmm_cuda_plan_destroy(&plan);
  free_csr(&a);
}

Test(cuda_spmm, bad_input_is_refused_with_a_status) {
  const uint64_t seed = gpu_test_seed("spmm_bad");
  halo_log_set_quiet(1);
  halo_csr a = random_csr(seed, 100, 100, 5, 0);
  const halo_spmm_cuda_shape sh = {8, 8, 8};
  halo_spmm_cuda_plan *plan = NULL;

  cr_expect_eq(halo_spmm_cuda_plan_create(&a, 101, &sh, 1, NULL, NULL, &plan), HALO_ERR_ARG);
  cr_expect_null(plan);
  const halo_spmm_cuda_shape narrow = {8, 4, 8};
  cr_expect_eq(halo_spmm_cuda_plan_create(&a, 50, &narrow, 1, NULL, NULL, &plan), HALO_ERR_ARG);
  const int32_t saved = a.indices[a.nnz / 2];
  a.indices[a.nnz / 2] = 100;
  cr_expect_eq(halo_spmm_cuda_plan_create(&a, 50, &sh, 1, NULL, NULL, &plan), HALO_ERR_RANGE);
  a.indices[a.nnz / 2] = saved;

  /* A shape that was not planned is declined, not run with a small buffer. */
  cr_assert_eq(halo_spmm_cuda_plan_create(&a, 50, &sh, 1, NULL, NULL, &plan), HALO_OK);
  float *dx = dev_alloc(100 * 16 * 4), *dy = dev_alloc(100 * 16 * 4);
  cr_expect_eq(halo_spmm_cuda_run(plan, HALO_SPMM_ALL, dx, 16, 16, 0.0f, dy, 16, NULL),
               HALO_ERR_UNSUPPORTED);
  cr_expect_eq(halo_spmm_cuda_run_rows(plan, dx, 8, 16, 0.0f, dy, 16, NULL, 100, NULL),
               HALO_ERR_ARG, "ldx < ncols");
  cr_expect_eq(halo_spmm_cuda_run_rows(plan, dx, 16, 16, 0.0f, dy, 16, NULL, 101, NULL),
               HALO_ERR_ARG, "more rows than A has");
  cudaFree(dx);
  cudaFree(dy);
  halo_spmm_cuda_plan_destroy(&plan);
  halo_spmm_cuda_plan_destroy(&plan); /* twice: a NULL plan is fine */
  free_csr(&a);
}

/* A host CSR's copy on the device in halo_csr's own layout, as the CUDA
 * backend's csr_upload makes it (values always stored). */
static halo_csr device_copy(const halo_csr *a) {
  halo_csr d = {.rows = a->rows, .cols = a->cols, .nnz = a->nnz};
  d.indptr = dev_upload(a->indptr, (size_t)(a->rows + 1) * sizeof *a->indptr);
  d.indices = dev_upload(a->indices, (size_t)a->nnz * sizeof *a->indices);
  d.values = dev_upload(a->values, (size_t)a->nnz * sizeof *a->values);
  return d;
}

static void free_device_copy(halo_csr *d) {
  cudaFree(d->indptr);
  cudaFree(d->indices);
  cudaFree(d->values);
}

/* Rows [first, first + nrows) of `a` as a view: indptr moved forward,
 * indices and values shared (the trainer's boundary block). */
static halo_csr row_view(const halo_csr *a, int64_t first, int64_t nrows) {
  halo_csr v = *a;
  v.indptr += first;
  v.rows = nrows;
  return v;
}

/* One device-CSR plan over rows [first, first + nrows), every shape, beta 0
 * and 1, against halo_spmm_cpu on the same host view; Y holds the view's
 * rows only (so its pointer is cudaMalloc's). */
static void check_device_view(const halo_csr *host, const halo_csr *dev, int64_t first,
                              int64_t nrows, const halo_spmm_cuda_options *opt, uint64_t seed) {
  const halo_spmm_cuda_shape shapes[] = {{16, 16, 16}, {7, 7, 7}, {33, 40, 35}};
  const halo_csr hv = row_view(host, first, nrows), dv = row_view(dev, first, nrows);
  halo_spmm_cuda_plan *plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create_device(&dv, nrows, shapes, 3, opt, NULL, &plan), HALO_OK,
               "plan_create_device over rows [%lld, +%lld)", (long long)first, (long long)nrows);
  fprintf(stderr, "device plan: rows [%lld, +%lld) index64 %d alg %d, %lld device bytes\n",
          (long long)first, (long long)nrows, halo_spmm_cuda_plan_index64(plan),
          opt ? (int)opt->alg : 0, (long long)halo_spmm_cuda_plan_bytes(plan));
  char *computed = host_alloc((size_t)nrows + 1);
  memset(computed, 1, (size_t)nrows + 1);
  for (int s = 0; s < 3; s++) {
    const halo_spmm_cuda_shape sh = shapes[s];
    cr_expect(halo_spmm_cuda_plan_has_shape(plan, sh.ncols, sh.ldx, sh.ldy));
    const size_t xsz = (size_t)(host->cols * sh.ldx) * 4, ysz = (size_t)(nrows * sh.ldy + 1) * 4;
    float *x = host_alloc(xsz), *y = host_alloc(ysz), *got = host_alloc(ysz);
    fill_uniform(x, host->cols * sh.ldx, seed, 50 + (uint64_t)s, -1.0f, 1.0f);
    float *dx = dev_upload(x, xsz), *dy = dev_alloc(ysz);
    for (int b = 0; b <= 1; b++) {
      if (b == 0)
        memset(y, 0xff, ysz);
      else
        fill_uniform(y, nrows * sh.ldy, seed, 60 + (uint64_t)s, -1.0f, 1.0f);
      cr_assert_eq(cudaMemcpy(dy, y, ysz, cudaMemcpyHostToDevice), cudaSuccess);
      cr_assert_eq(
          halo_spmm_cuda_run(plan, HALO_SPMM_ALL, dx, sh.ldx, sh.ncols, (float)b, dy, sh.ldy, NULL),
          HALO_OK);
      halo_spmm_cpu(&hv, x, sh.ldx, sh.ncols, (float)b, y, sh.ldy, NULL, nrows);
      dev_download(got, dy, ysz);
      char what[96];
      snprintf(what, sizeof what, "device view [%lld, +%lld) shape %d beta %d", (long long)first,
               (long long)nrows, s, b);
      expect_same_y(got, y, nrows, sh.ncols, sh.ldy, computed, what);
    }
    cudaFree(dx);
    cudaFree(dy);
    free(x);
    free(y);
    free(got);
  }
  cr_expect(!halo_spmm_cuda_plan_has_shape(plan, 8, 8, 8), "a shape never planned");
  free(computed);
  halo_spmm_cuda_plan_destroy(&plan);
  cr_expect_null(plan);
}

Test(cuda_spmm, device_csr_plans_over_row_views) {
  const uint64_t seed = gpu_test_seed("spmm_device_views");
  halo_csr a = random_csr(seed, 1300, 1600, 45, 0);
  halo_csr d = device_copy(&a);
  const int64_t split = 555; /* an odd split: the boundary view starts mid-array */
  const halo_spmm_cuda_options alg2 = {.alg = HALO_SPMM_CUDA_ALG_CSR2, .force_index64 = 0};
  const halo_spmm_cuda_options wide = {.alg = HALO_SPMM_CUDA_ALG_CSR2, .force_index64 = 1};
  const halo_spmm_cuda_options *opts[] = {&alg2, &wide, NULL};
  for (int o = 0; o < 3; o++) {
    check_device_view(&a, &d, 0, a.rows, opts[o], seed);             /* the whole matrix */
    check_device_view(&a, &d, 0, split, opts[o], seed);              /* the interior prefix */
    check_device_view(&a, &d, split, a.rows - split, opts[o], seed); /* the boundary view */
  }
  check_device_view(&a, &d, split, 0, &alg2, seed); /* no rows at all */
  free_device_copy(&d);
  free_csr(&a);
}

/* Dropped values through set_values (the trainer's dropout of S): later runs
 * read the new array, the pattern and workspace stay; the original array
 * comes back the same way, and new values written into the array already
 * bound are read too.  Two row views: one whose first nonzero sits at
 * a 16-byte boundary (the plan borrows the values and rebinds them) and one
 * whose does not (the plan keeps an aligned copy and refreshes it).  A
 * device plan has one part, ALL. */
static void check_set_values(const halo_csr *a, const halo_csr *d, int64_t first, uint64_t seed) {
  float *dropped = host_alloc((size_t)a->nnz * sizeof *dropped);
  fill_uniform(dropped, a->nnz, seed, 3, -2.0f, 2.0f);
  float *ddropped = dev_upload(dropped, (size_t)a->nnz * sizeof *dropped);
  const int64_t nrows = a->rows - first, ncols = 24;
  const halo_spmm_cuda_shape sh = {ncols, ncols, ncols};
  const halo_spmm_cuda_options opt = {.alg = HALO_SPMM_CUDA_ALG_CSR2, .force_index64 = 0};
  const halo_csr dv = row_view(d, first, nrows);
  halo_spmm_cuda_plan *plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create_device(&dv, nrows, &sh, 1, &opt, NULL, &plan), HALO_OK);
  fprintf(stderr, "set_values: view from row %lld (nonzero %lld), %lld device bytes\n",
          (long long)first, (long long)a->indptr[first],
          (long long)halo_spmm_cuda_plan_bytes(plan));
  const size_t xsz = (size_t)(a->cols * ncols) * 4, ysz = (size_t)(nrows * ncols) * 4;
  float *x = host_alloc(xsz), *y = host_alloc(ysz), *got = host_alloc(ysz);
  char *computed = host_alloc((size_t)nrows);
  memset(computed, 1, (size_t)nrows);
  fill_uniform(x, a->cols * ncols, seed, 4, -1.0f, 1.0f);
  float *dx = dev_upload(x, xsz), *dy = dev_alloc(ysz);
  for (int round = 0; round < 4; round++) {
    const int use_dropped = round == 1 || round == 2;
    if (round == 2) {
      /* New values in the same array, as the trainer's dropout buffer gets
       * every epoch: an aligned copy must not keep the old ones. */
      fill_uniform(dropped, a->nnz, seed, 5, -3.0f, 3.0f);
      cr_assert_eq(
          cudaMemcpy(ddropped, dropped, (size_t)a->nnz * sizeof *dropped, cudaMemcpyHostToDevice),
          cudaSuccess);
    }
    halo_csr hv = row_view(a, first, nrows);
    if (use_dropped) hv.values = dropped;
    cr_assert_eq(halo_spmm_cuda_plan_set_values(plan, use_dropped ? ddropped : d->values, NULL),
                 HALO_OK);
    cr_assert_eq(halo_spmm_cuda_run(plan, HALO_SPMM_ALL, dx, ncols, ncols, 0.0f, dy, ncols, NULL),
                 HALO_OK);
    halo_spmm_cpu(&hv, x, ncols, ncols, 0.0f, y, ncols, NULL, nrows);
    dev_download(got, dy, ysz);
    expect_same_y(got, y, nrows, ncols, ncols, computed, use_dropped ? "dropped values" : "values");
    /* The row kernel over the plan reads the same arrays. */
    cr_assert_eq(cudaMemset(dy, 0xff, ysz), cudaSuccess);
    cr_assert_eq(
        halo_spmm_cuda_run_rows(plan, dx, ncols, ncols, 0.0f, dy, ncols, NULL, nrows, NULL),
        HALO_OK);
    dev_download(got, dy, ysz);
    expect_same_y(got, y, nrows, ncols, ncols, computed, "run_rows on a device plan");
  }
  if (a->indptr[first] % 4 == 0) {
    /* A plan that borrows declines values it would hand cuSPARSE
     * misaligned, and keeps the array it had (the matrix's own). */
    cr_expect_eq(halo_spmm_cuda_plan_set_values(plan, ddropped + 1, NULL), HALO_ERR_UNSUPPORTED);
    const halo_csr hv = row_view(a, first, nrows);
    cr_assert_eq(halo_spmm_cuda_run(plan, HALO_SPMM_ALL, dx, ncols, ncols, 0.0f, dy, ncols, NULL),
                 HALO_OK);
    halo_spmm_cpu(&hv, x, ncols, ncols, 0.0f, y, ncols, NULL, nrows);
    dev_download(got, dy, ysz);
    expect_same_y(got, y, nrows, ncols, ncols, computed, "values kept after a decline");
  }
  cr_expect_eq(
      halo_spmm_cuda_run(plan, HALO_SPMM_INTERIOR, dx, ncols, ncols, 0.0f, dy, ncols, NULL),
      HALO_ERR_ARG, "a device plan has no interior part");
  cr_expect_eq(halo_spmm_cuda_plan_set_values(plan, NULL, NULL), HALO_ERR_ARG);
  halo_spmm_cuda_plan *host_plan = NULL;
  cr_assert_eq(halo_spmm_cuda_plan_create(a, 0, &sh, 1, &opt, NULL, &host_plan), HALO_OK);
  cr_expect_eq(halo_spmm_cuda_plan_set_values(host_plan, ddropped, NULL), HALO_ERR_ARG,
               "a plan that owns its values does not take others");
  halo_spmm_cuda_plan_destroy(&host_plan);
  halo_spmm_cuda_plan_destroy(&plan);
  cr_expect_eq(halo_spmm_cuda_plan_create_device(&dv, nrows + 1, &sh, 1, &opt, NULL, &plan),
               HALO_ERR_ARG, "more rows than the view has");
  cr_expect_null(plan);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(ddropped);
  free(x);
  free(y);
  free(got);
  free(dropped);
  free(computed);
}

Test(cuda_spmm, device_csr_plan_takes_other_values) {
  const uint64_t seed = gpu_test_seed("spmm_set_values");
  halo_log_set_quiet(1);
  halo_csr a = random_csr(seed, 900, 700, 30, 0);
  halo_csr d = device_copy(&a);
  int64_t aligned = -1, misaligned = -1; /* first rows >= 300 of each kind */
  for (int64_t r = 300; r < a.rows && (aligned < 0 || misaligned < 0); r++) {
    if (a.indptr[r] % 4 == 0 && aligned < 0) aligned = r;
    if (a.indptr[r] % 4 != 0 && misaligned < 0) misaligned = r;
  }
  cr_assert(aligned >= 0 && misaligned >= 0, "seed %llu: no view of each kind",
            (unsigned long long)seed);
  check_set_values(&a, &d, aligned, seed);
  check_set_values(&a, &d, misaligned, seed);
  free_device_copy(&d);
  free_csr(&a);
}
