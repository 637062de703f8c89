/* GraphSAGE's max aggregator (halo_cpu_sage_max and its backward) against
 * an independent reference:
 *  - random graphs with distinct inputs (no ties): the forward equals the
 *    element-wise max over each row's neighbours, and the backward equals
 *    central differences, in double, of L = Σ R ⊙ max(X) with respect to X;
 *  - a hand-checked tie: equal values give the max's gradient to the
 *    neighbour of the lowest global id, whatever the local numbering.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"

/* A random graph over n local rows (the first `rows` owned), each owned
 * row's columns sorted by global id; gid is a random permutation. */
typedef struct graph {
  int64_t rows, all;
  halo_csr a;
  int64_t *gid;
} graph;

static int64_t *sort_gid; /* qsort's key */
static int by_gid(const void *x, const void *y) {
  const int64_t a = sort_gid[*(const int32_t *)x], b = sort_gid[*(const int32_t *)y];
  return (a > b) - (a < b);
}

static graph graph_new(uint64_t key, int64_t rows, int64_t all, int64_t max_deg) {
  graph g = {.rows = rows, .all = all};
  g.gid = calloc((size_t)all, sizeof *g.gid);
  for (int64_t i = 0; i < all; i++) g.gid[i] = i;
  for (int64_t i = all - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = test_below(key, (uint64_t)i, i + 1), t = g.gid[i];
    g.gid[i] = g.gid[j];
    g.gid[j] = t;
  }
  g.a.rows = rows;
  g.a.cols = all;
  g.a.indptr = calloc((size_t)rows + 1, sizeof *g.a.indptr);
  g.a.indices = calloc((size_t)(rows * max_deg + 1), sizeof *g.a.indices);
  g.a.values = calloc((size_t)(rows * max_deg + 1), sizeof *g.a.values);
  for (int64_t i = 0; i < rows; i++) {
    int64_t deg = test_below(key, (uint64_t)(1000 + i), max_deg + 1), len = 0;
    int32_t *row = g.a.indices + g.a.indptr[i];
    for (int64_t k = 0; k < deg; k++) {
      int32_t j = (int32_t)test_below(key, (uint64_t)(100000 + i * max_deg + k), all);
      int dup = j == i;
      for (int64_t q = 0; q < len && !dup; q++) dup = row[q] == j;
      if (!dup) row[len++] = j;
    }
    sort_gid = g.gid;
    qsort(row, (size_t)len, sizeof *row, by_gid);
    g.a.indptr[i + 1] = g.a.indptr[i] + len;
  }
  g.a.nnz = g.a.indptr[rows];
  return g;
}

static void graph_free(graph *g) {
  free(g->gid);
  free(g->a.indptr);
  free(g->a.indices);
  free(g->a.values);
}

/* L = Σ_i,c r[i, c] · max_j x[j, c] over row i's columns (0 for none). */
static double ref_loss(const graph *g, const double *x, const double *r, int64_t cols) {
  double loss = 0.0;
  for (int64_t i = 0; i < g->rows; i++)
    for (int64_t c = 0; c < cols; c++) {
      if (g->a.indptr[i] == g->a.indptr[i + 1]) continue;
      double m = -INFINITY;
      for (int64_t k = g->a.indptr[i]; k < g->a.indptr[i + 1]; k++)
        m = fmax(m, x[g->a.indices[k] * cols + c]);
      loss += r[i * cols + c] * m;
    }
  return loss;
}

Test(sage_max, random_graphs_against_max_and_finite_differences) {
  const uint64_t seed = test_seed("sage_max.random");
  for (int trial = 0; trial < 4; trial++) {
    const uint64_t key = test_key(seed, (uint64_t)trial);
    const int64_t rows = 40 + 23 * trial, all = rows + 17 * trial, cols = 3 + 5 * trial;
    graph g = graph_new(key, rows, all, 2 + 2 * trial);
    float *x = calloc((size_t)(all * cols), sizeof *x), *out = calloc((size_t)(rows * cols), 4),
          *gr = calloc((size_t)(all * cols), sizeof *gr), *dx = calloc((size_t)(rows * cols), 4);
    int32_t *arg = calloc((size_t)(all * cols), sizeof *arg);
    double *xd = calloc((size_t)(all * cols), sizeof *xd), *rd = calloc((size_t)(rows * cols), 8);
    /* Distinct values: a random permutation of k/64 - 8, so no two tie. */
    for (int64_t i = 0; i < all * cols; i++) x[i] = (float)i;
    for (int64_t i = all * cols - 1; i > 0; i--) {
      int64_t j = test_below(key, (uint64_t)(7000000 + i), i + 1);
      float t = x[i];
      x[i] = x[j];
      x[j] = t;
    }
    for (int64_t i = 0; i < all * cols; i++) {
      x[i] = x[i] / 64.0f - 8.0f;
      xd[i] = x[i];
    }
    test_fill(gr, rows * cols, key + 1, -1.0f, 1.0f);
    for (int64_t i = 0; i < rows * cols; i++) rd[i] = gr[i];

    halo_cpu_sage_max(&g.a, g.gid, x, cols, out, arg);
    for (int64_t i = 0; i < rows; i++)
      for (int64_t c = 0; c < cols; c++) {
        double want = 0.0;
        int64_t who = -1;
        for (int64_t k = g.a.indptr[i]; k < g.a.indptr[i + 1]; k++) {
          int64_t j = g.a.indices[k];
          if (who < 0 || xd[j * cols + c] > want) {
            want = xd[j * cols + c];
            who = g.gid[j];
          }
        }
        cr_expect_eq(out[i * cols + c], (float)want, "trial %d row %lld col %lld", trial,
                     (long long)i, (long long)c);
        cr_expect_eq(arg[i * cols + c], (int32_t)who, "trial %d row %lld col %lld: arg", trial,
                     (long long)i, (long long)c);
      }

    /* The backward's halo rows of arg and g are those of the owner; here
     * every column is owned, so the rows >= `rows` are those rows' own. */
    graph t = g; /* A symmetric: the transpose's rows are A's columns */
    halo_csr at = {.rows = all, .cols = all};
    at.indptr = calloc((size_t)all + 1, sizeof *at.indptr);
    at.indices = calloc((size_t)g.a.nnz + 1, sizeof *at.indices);
    at.values = calloc((size_t)g.a.nnz + 1, sizeof *at.values);
    for (int64_t k = 0; k < g.a.nnz; k++) at.indptr[g.a.indices[k] + 1]++;
    for (int64_t j = 0; j < all; j++) at.indptr[j + 1] += at.indptr[j];
    int64_t *fill = calloc((size_t)all, sizeof *fill);
    for (int64_t i = 0; i < rows; i++) /* rows in ascending gid order */
      for (int64_t k = g.a.indptr[i]; k < g.a.indptr[i + 1]; k++) {
        int32_t j = g.a.indices[k];
        at.indices[at.indptr[j] + fill[j]++] = (int32_t)i;
      }
    for (int64_t j = 0; j < all; j++) {
      sort_gid = g.gid;
      qsort(at.indices + at.indptr[j], (size_t)(at.indptr[j + 1] - at.indptr[j]),
            sizeof *at.indices, by_gid);
    }
    at.nnz = g.a.nnz;
    float *dxa = calloc((size_t)(all * cols), sizeof *dxa);
    halo_cpu_sage_max_backward(&at, t.gid, arg, gr, cols, dxa);
    const double h = 1.0 / 1024.0; /* far below the 1/64 gap between values */
    double gmax = 0.0;
    int bad = 0;
    for (int64_t q = 0; q < all * cols; q++) {
      const double keep = xd[q];
      xd[q] = keep + h;
      const double up = ref_loss(&g, xd, rd, cols);
      xd[q] = keep - h;
      const double down = ref_loss(&g, xd, rd, cols);
      xd[q] = keep;
      const double fd = (up - down) / (2.0 * h);
      gmax = fmax(gmax, fabs(fd));
      if (fabs(dxa[q] - fd) > 1e-5 * (1.0 + fabs(fd)) && bad++ < 5)
        cr_expect_fail("trial %d: dL/dx[%lld] = %.7g, finite differences %.7g", trial,
                       (long long)q, dxa[q], fd);
    }
    cr_expect_eq(bad, 0, "trial %d: %d gradients off", trial, bad);
    cr_expect_gt(gmax, 0.0, "trial %d: a zero gradient", trial);

    free(fill);
    free(dxa);
    free(at.indptr);
    free(at.indices);
    free(at.values);
    free(x);
    free(out);
    free(gr);
    free(dx);
    free(arg);
    free(xd);
    free(rd);
    graph_free(&g);
  }
}

/* Node u (local 0, global 7) has neighbours of global ids 5, 3 and 9 at
 * local rows 1, 2 and 3; its column 0 sees 2.0 at all three, column 1 sees
 * 1, 4, 4 (ids 5, 3, 9), column 2 sees -1, -2, -1.  The max is 2, 4, -1,
 * from ids 3, 3 and 5: the lowest global id among equal values, not the
 * lowest local row.  Row 1 (global 5) has the single neighbour u. */
Test(sage_max, ties_go_to_the_lowest_global_id) {
  int64_t gid[4] = {7, 5, 3, 9};
  int64_t indptr[3] = {0, 3, 4};
  int32_t indices[4] = {2, 1, 3, 0}; /* row 0 by global id: 3, 5, 9 */
  float values[4] = {1, 1, 1, 1};
  const halo_csr a = {.rows = 2, .cols = 4, .nnz = 4, .indptr = indptr, .indices = indices,
                      .values = values};
  const float x[12] = {0.5f, 0.5f, 0.5f,  2.0f, 1.0f, -1.0f,
                       2.0f, 4.0f, -2.0f, 2.0f, 4.0f, -1.0f};
  float out[6];
  int32_t arg[12];
  halo_cpu_sage_max(&a, gid, x, 3, out, arg);
  const float want[6] = {2.0f, 4.0f, -1.0f, 0.5f, 0.5f, 0.5f};
  const int32_t want_arg[6] = {3, 3, 5, 7, 7, 7};
  for (int k = 0; k < 6; k++) {
    cr_expect_eq(out[k], want[k], "out[%d] = %g, want %g", k, out[k], want[k]);
    cr_expect_eq(arg[k], want_arg[k], "arg[%d] = %d, want %d", k, arg[k], want_arg[k]);
  }

  /* Backward over every row's neighbours (the graph is symmetric): the
   * transpose's rows, by global id: 0 (7): {3, 5, 9} = local {2, 1, 3};
   * 1 (5): {7}; 2 (3): {7}; 3 (9): {7}.  Rows 2 and 3 aggregate nothing
   * here, so their arg rows hold ids of no-one (-1). */
  int64_t tptr[5] = {0, 3, 4, 5, 6};
  int32_t tind[6] = {2, 1, 3, 0, 0, 0};
  float tval[6] = {1, 1, 1, 1, 1, 1};
  const halo_csr at = {.rows = 4, .cols = 4, .nnz = 6, .indptr = tptr, .indices = tind,
                       .values = tval};
  for (int k = 6; k < 12; k++) arg[k] = -1;
  const float g[12] = {1.0f, 10.0f, 100.0f, 0.25f, 0.5f, 0.75f, 9, 9, 9, 9, 9, 9};
  float dx[12];
  halo_cpu_sage_max_backward(&at, gid, arg, g, 3, dx);
  /* Node 7 (local 0) got row 1's max in every column: 0.25, 0.5, 0.75;
   * node 5 (local 1) gets column 2 of row 0 (100); node 3 (local 2)
   * columns 0 and 1 (1, 10); node 9 (local 3) nothing. */
  const float want_dx[12] = {0.25f, 0.5f, 0.75f, 0, 0, 100.0f, 1.0f, 10.0f, 0, 0, 0, 0};
  for (int k = 0; k < 12; k++)
    cr_expect_eq(dx[k], want_dx[k], "dx[%d] = %g, want %g", k, dx[k], want_dx[k]);
}
