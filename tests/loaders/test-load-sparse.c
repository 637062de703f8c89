/* Sparse node features (#36): a seeded random bag-of-words CSV read as CSR
 * equals the dense matrix it was written from; data that proves dense is
 * read dense; the density rule on hand-checked sizes; the layout helpers
 * round-trip and refuse a bad CSR. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-csr.h"
#include "halo-rng.h"
#include "loader-test.h"

/* The seed: HALO_TEST_SEED, else a fixed one; printed either way. */
static uint64_t test_seed(void) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 10) : 3636;
  fprintf(stderr, "test-load-sparse: seed %llu (HALO_TEST_SEED)\n", (unsigned long long)seed);
  return seed;
}

/* A ring over n nodes, so that the graph has exactly n nodes. */
static halo_graph *ring(int64_t n) {
  size_t cap = (size_t)n * 24 + 1, len = 0;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  for (int64_t v = 0; v < n; v++)
    len += (size_t)snprintf(text + len, cap - len, "%lld %lld\n", (long long)v,
                            (long long)((v + 1) % n));
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(scratch_write("ring.txt", text), HALO_FORMAT_EDGELIST, &g), HALO_OK);
  cr_assert_eq(g->n, n);
  free(text);
  return g;
}

/* n x F values, each non-zero with probability density[row] (small
 * integers and halves, exact in text and float). */
static float *random_rows(uint64_t seed, int64_t n, int32_t F, const double *density) {
  float *x = calloc((size_t)(n * F), sizeof *x);
  cr_assert_not_null(x);
  const uint64_t key = halo_rng_key(seed, 36, 0, 0);
  for (int64_t v = 0; v < n; v++)
    for (int32_t j = 0; j < F; j++)
      if (halo_rng_uniform_double(key, (uint64_t)v, (uint64_t)j) < density[v])
        x[v * F + j] = 0.5f * (float)(1 + halo_rng_bits(key, (uint64_t)v, (uint64_t)(F + j)) % 7) *
                       ((j & 1) ? -1.0f : 1.0f);
  return x;
}

static const char *write_csv(const char *name, const float *x, int64_t n, int32_t F) {
  size_t cap = (size_t)(n * F) * 8 + 1, len = 0;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  for (int64_t v = 0; v < n; v++)
    for (int32_t j = 0; j < F; j++)
      len += (size_t)snprintf(text + len, cap - len, "%g%c", (double)x[v * F + j],
                              j + 1 < F ? ',' : '\n');
  const char *path = scratch_write(name, text);
  free(text);
  return path;
}

static int64_t nonzeros(const float *x, int64_t count) {
  int64_t nz = 0;
  for (int64_t k = 0; k < count; k++) nz += x[k] != 0.0f;
  return nz;
}

Test(sparse_features, csv_read_as_csr_equals_the_dense_rows) {
  const uint64_t seed = test_seed();
  const int64_t n = 300;
  const int32_t F = 200;
  double density[300];
  for (int v = 0; v < n; v++) density[v] = 0.02;
  float *want = random_rows(seed, n, F, density);
  halo_graph *g = ring(n);
  cr_assert_eq(halo_load_node_data(g, write_csv("bow.csv", want, n, F), NULL), HALO_OK);
  cr_assert_eq(g->features, F);
  cr_assert_not_null(g->x_indptr, "2%% non-zero is kept as CSR");
  cr_assert_null(g->x, "one layout, never both");
  cr_assert_eq(g->x_indptr[n], nonzeros(want, n * F));
  float *got = features_dense(g, 0);
  cr_expect_arr_eq(got, want, (size_t)(n * F) * sizeof *got, "seed %llu", (unsigned long long)seed);
  /* The helpers round-trip: dense and back gives the same CSR. */
  int64_t *indptr = malloc((size_t)(n + 1) * sizeof *indptr);
  memcpy(indptr, g->x_indptr, (size_t)(n + 1) * sizeof *indptr);
  cr_assert_eq(halo_graph_features_to_dense(g), HALO_OK);
  cr_assert_null(g->x_indptr);
  cr_expect_arr_eq(g->x, want, (size_t)(n * F) * sizeof *want);
  cr_assert_eq(halo_graph_features_to_csr(g), HALO_OK);
  cr_assert_null(g->x);
  cr_expect_arr_eq(g->x_indptr, indptr, (size_t)(n + 1) * sizeof *indptr);
  free(indptr);
  free(got);
  free(want);
  halo_graph_destroy(&g);
}

/* Sparse rows first, then rows dense enough that the whole file breaks the
 * rule: the reader switches to dense mid-file, and nothing is lost. */
Test(sparse_features, data_that_proves_dense_is_read_dense) {
  const uint64_t seed = test_seed();
  const int64_t n = 120;
  const int32_t F = 40;
  double density[120];
  for (int v = 0; v < n; v++) density[v] = v < 40 ? 0.01 : 0.9;
  float *want = random_rows(seed, n, F, density);
  cr_assert(!halo_csr_is_smaller(n, F, nonzeros(want, n * F)), "the fixture must be dense");
  halo_graph *g = ring(n);
  cr_assert_eq(halo_load_node_data(g, write_csv("mixed.csv", want, n, F), NULL), HALO_OK);
  cr_assert_not_null(g->x, "dense by the rule");
  cr_assert_null(g->x_indptr);
  cr_expect_arr_eq(g->x, want, (size_t)(n * F) * sizeof *want, "seed %llu",
                   (unsigned long long)seed);
  free(want);
  halo_graph_destroy(&g);
}

/* 10 rows of 4: dense 160 bytes; CSR 8 nnz + 80, smaller below 10 non-zeros. */
Test(sparse_features, density_rule_by_hand) {
  cr_expect(halo_csr_is_smaller(10, 4, 9));
  cr_expect(!halo_csr_is_smaller(10, 4, 10));
  cr_expect(!halo_csr_is_smaller(10, 2, 0), "F = 2: even an empty CSR is not smaller");
  cr_expect(!halo_csr_is_smaller(0, 100, 0), "no rows: dense");
  cr_expect(halo_csr_is_smaller(30000, 30000, 900000), "the bench's 0.1%%");
  cr_expect(halo_csr_is_smaller(2708, 1433, 49216), "Cora");
}

/* halo_graph_set_features_csr takes a CSR triple (an npz's attr_*) and refuses
 * a column out of range, a descending row and a descending indptr. */
Test(sparse_features, set_csr_checks_the_triple) {
  halo_graph *g = ring(3);
  const int64_t ok_ptr[4] = {0, 1, 1, 3}, bad_ptr[4] = {0, 2, 1, 3};
  const int32_t ok_idx[3] = {2, 0, 3}, bad_col[3] = {2, 0, 4}, bad_order[3] = {2, 3, 0};
  const float val[3] = {1, 2, 3};
  struct {
    const int64_t *ptr;
    const int32_t *idx;
    halo_status want;
  } cases[] = {{ok_ptr, ok_idx, HALO_OK},
               {ok_ptr, bad_col, HALO_ERR_RANGE},
               {ok_ptr, bad_order, HALO_ERR_RANGE},
               {bad_ptr, ok_idx, HALO_ERR_RANGE}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t *p = malloc(sizeof ok_ptr);
    int32_t *i = malloc(sizeof ok_idx);
    float *v = malloc(sizeof val);
    memcpy(p, cases[c].ptr, sizeof ok_ptr);
    memcpy(i, cases[c].idx, sizeof ok_idx);
    memcpy(v, val, sizeof val);
    capture_begin();
    halo_status st = halo_graph_set_features_csr(g, 4, p, i, v);
    const char *err = capture_end();
    cr_expect_eq(st, cases[c].want, "case %zu: %s", c, err);
    if (st != HALO_OK) cr_expect(strstr(err, "CSR features"), "case %zu names it: %s", c, err);
  }
  cr_assert_eq(g->features, 4, "the valid triple stays");
  cr_assert_eq(g->x_indptr[3], 3);
  halo_graph_destroy(&g);
}

/* sbm's feat-density: a binary bag of words held as CSR from the start, and
 * each node's row is what halo_node_synth_rows draws for that node alone
 * (the distributed partitioner draws its rows so); its density is about
 * feat-density. */
Test(sparse_features, sbm_feat_density_is_csr_and_per_node) {
  halo_graph *g = NULL;
  const char *spec = "sbm:nodes=400,classes=4,avg-degree=6,feat=500,feat-density=0.01,seed=9";
  cr_assert_eq(halo_load(spec, HALO_FORMAT_SPEC, &g), HALO_OK, "%s", spec);
  cr_assert_not_null(g->x_indptr, "binary features at 1%% are CSR");
  cr_assert_null(g->x);
  const int64_t n = g->n, F = g->features, nnz = g->x_indptr[n];
  cr_expect(nnz > 0.007 * n * F && nnz < 0.013 * n * F, "density %g", (double)nnz / (n * F));
  halo_node_synth s = halo_node_synth_default((int32_t)F, 4, 9);
  s.density = 0.01;
  int64_t ids[3] = {0, 17, 399}, counted = 0;
  float *rows = calloc((size_t)(3 * F), sizeof *rows);
  int32_t labels[3];
  uint8_t split[3];
  cr_assert_eq(halo_node_synth_rows(&s, ids, 3, rows, labels, split), HALO_OK);
  float *got = features_dense(g, 0);
  for (int i = 0; i < 3; i++) {
    cr_expect_arr_eq(got + ids[i] * F, rows + i * F, (size_t)F * sizeof *rows, "node %lld",
                     (long long)ids[i]);
    cr_expect_eq(labels[i], g->labels[ids[i]]);
  }
  cr_assert_eq(halo_node_synth_nnz(&s, 0, n, &counted), HALO_OK);
  cr_expect_eq(counted, nnz, "halo_node_synth_nnz counts what is drawn");
  free(got);
  free(rows);
  halo_graph_destroy(&g);
}
