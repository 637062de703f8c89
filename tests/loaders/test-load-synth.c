/* The synthetic generators: sizes, the statistics their parameters promise,
 * features a classifier can learn from, and determinism for a seed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader-test.h"

static halo_graph *generate(const char *spec) {
  halo_graph *g = NULL;
  fprintf(stderr, "spec %s\n", spec);
  halo_status st = halo_load(spec, HALO_FORMAT_AUTO, &g);
  cr_assert_eq(st, HALO_OK, "%s: %s", spec, halo_status_str(st));
  expect_csr_valid(g);
  return g;
}

static int has_edge(const halo_graph *g, int64_t u, int64_t v) {
  int64_t lo = g->indptr[u], hi = g->indptr[u + 1];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (g->indices[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->indptr[u + 1] && g->indices[lo] == v;
}

Test(sbm, statistics) {
  const char *spec = "sbm:nodes=20000,classes=5,avg-degree=7,homophily=0.7,feat=4,seed=2026";
  halo_graph *g = generate(spec);
  cr_assert_eq(g->n, 20000);
  cr_assert_eq(g->classes, 5);
  cr_assert_eq(g->features, 4);
  cr_expect_str_eq(g->source, spec);

  double degree = (double)g->m / (double)g->n;
  cr_expect(fabs(degree - 7) < 0.1, "average stored degree %.3f, expected 7", degree);
  int64_t same = 0;
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
      int64_t v = g->indices[k];
      cr_assert_neq(u, v, "self-loop at %lld", (long long)u);
      cr_assert(has_edge(g, v, u), "edge %lld-%lld has no reverse", (long long)u, (long long)v);
      same += g->labels[u] == g->labels[v];
    }
  double homophily = (double)same / (double)g->m;
  cr_expect(fabs(homophily - 0.7) < 0.01, "homophily %.4f, expected 0.7", homophily);

  int64_t per_class[5] = {0}, per_split[4] = {0};
  for (int64_t u = 0; u < g->n; u++) {
    cr_assert(g->labels[u] >= 0 && g->labels[u] < 5);
    per_class[g->labels[u]]++;
    per_split[g->split[u]]++;
  }
  for (int c = 0; c < 5; c++)
    cr_expect(fabs(per_class[c] / 4000.0 - 1) < 0.08, "class %d has %lld nodes", c,
              (long long)per_class[c]);
  cr_expect_eq(per_split[HALO_SPLIT_NONE], 0);
  cr_expect(fabs(per_split[HALO_SPLIT_TRAIN] / 20000.0 - 0.1) < 0.01, "train %lld",
            (long long)per_split[1]);
  cr_expect(fabs(per_split[HALO_SPLIT_VALID] / 20000.0 - 0.1) < 0.01, "valid %lld",
            (long long)per_split[2]);
  halo_graph_destroy(&g);
}

Test(sbm, homophily_extremes) {
  halo_graph *g = generate("sbm:nodes=3000,classes=4,avg-degree=6,homophily=1,feat=1,seed=5");
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
      cr_assert_eq(g->labels[u], g->labels[g->indices[k]]);
  cr_expect_eq(g->m, 6 * 3000, "an even avg-degree draws exactly avg-degree/2 edges per node");
  halo_graph_destroy(&g);
  g = generate("sbm:nodes=3000,classes=4,avg-degree=6,homophily=0,feat=1,seed=5");
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
      cr_assert_neq(g->labels[u], g->labels[g->indices[k]]);
  halo_graph_destroy(&g);
}

/* Nearest class mean, fitted on the training nodes, classifies test nodes. */
Test(sbm, features_depend_on_the_class) {
  halo_graph *g = generate("sbm:nodes=5000,classes=6,avg-degree=4,homophily=0.5,feat=32,seed=11");
  const int F = 32, C = 6;
  double mean[6][32] = {{0}};
  int64_t count[6] = {0};
  for (int64_t u = 0; u < g->n; u++) {
    if (g->split[u] != HALO_SPLIT_TRAIN) continue;
    count[g->labels[u]]++;
    for (int f = 0; f < F; f++) mean[g->labels[u]][f] += g->x[u * F + f];
  }
  for (int c = 0; c < C; c++) {
    cr_assert_gt(count[c], 0);
    for (int f = 0; f < F; f++) mean[c][f] /= (double)count[c];
  }
  int64_t right = 0, tested = 0;
  for (int64_t u = 0; u < g->n; u++) {
    if (g->split[u] != HALO_SPLIT_TEST) continue;
    int best = 0;
    double best_d = INFINITY;
    for (int c = 0; c < C; c++) {
      double d = 0;
      for (int f = 0; f < F; f++)
        d += (g->x[u * F + f] - mean[c][f]) * (g->x[u * F + f] - mean[c][f]);
      if (d < best_d) best_d = d, best = c;
    }
    right += best == g->labels[u];
    tested++;
  }
  double accuracy = (double)right / (double)tested;
  fprintf(stderr, "nearest-class-mean accuracy %.3f on %lld test nodes\n", accuracy,
          (long long)tested);
  cr_expect_gt(accuracy, 0.9);
  halo_graph_destroy(&g);
}

Test(sbm, deterministic_for_a_seed) {
  const char *spec = "sbm:nodes=4000,classes=3,avg-degree=5,homophily=0.6,feat=3,seed=9";
  halo_graph *a = generate(spec), *b = generate(spec);
  cr_assert_eq(a->m, b->m);
  cr_expect_arr_eq(a->indptr, b->indptr, sizeof(int64_t) * (size_t)(a->n + 1));
  cr_expect_arr_eq(a->indices, b->indices, sizeof(int64_t) * (size_t)a->m);
  cr_expect_arr_eq(a->labels, b->labels, sizeof(int32_t) * (size_t)a->n);
  cr_expect_arr_eq(a->x, b->x, sizeof(float) * 3 * (size_t)a->n);
  cr_expect_arr_eq(a->split, b->split, (size_t)a->n);
  cr_expect_eq(a->source_digest, b->source_digest);
  halo_graph *c = generate("sbm:nodes=4000,classes=3,avg-degree=5,homophily=0.6,feat=3,seed=10");
  cr_expect_neq(
      memcmp(a->indices, c->indices, sizeof(int64_t) * (size_t)(a->m < c->m ? a->m : c->m)), 0);
  cr_expect_neq(a->source_digest, c->source_digest);
  halo_graph_destroy(&a);
  halo_graph_destroy(&b);
  halo_graph_destroy(&c);
}

Test(rmat, sizes_and_quadrants) {
  halo_graph *g = generate("rmat:scale=12,edge-factor=8,seed=3");
  cr_assert_eq(g->n, 4096);
  cr_assert_eq(g->m, 8 * 4096);
  cr_expect_eq(g->features, 0);
  cr_expect_eq(g->classes, 0);
  cr_expect_null(g->x);
  /* The top level picks quadrant (src < n/2, dst < n/2) with probability a, etc. */
  int64_t quadrant[4] = {0}, max_degree = 0;
  for (int64_t u = 0; u < g->n; u++) {
    if (g->indptr[u + 1] - g->indptr[u] > max_degree) max_degree = g->indptr[u + 1] - g->indptr[u];
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
      quadrant[2 * (u >= 2048) + (g->indices[k] >= 2048)]++;
  }
  const double want[4] = {0.57, 0.19, 0.19, 0.05};
  for (int q = 0; q < 4; q++)
    cr_expect(fabs((double)quadrant[q] / (double)g->m - want[q]) < 0.015,
              "quadrant %d: %.4f, expected %.2f", q, (double)quadrant[q] / (double)g->m, want[q]);
  cr_expect_gt(max_degree, 10 * 8, "R-MAT degrees are skewed; max %lld", (long long)max_degree);
  halo_graph_destroy(&g);
}

Test(rmat, corner_and_uniform) {
  /* a = 1: every edge falls in the top-left corner, 0 -> 0. */
  halo_graph *g = generate("rmat:scale=5,edge-factor=2,a=1,b=0,c=0,seed=1");
  cr_assert_eq(g->m, 64);
  cr_expect_eq(g->indptr[1], 64);
  for (int64_t k = 0; k < g->m; k++) cr_expect_eq(g->indices[k], 0);
  halo_graph_destroy(&g);
  /* a = b = c = 1/4: uniform, so the out-degrees stay small. */
  g = generate("rmat:scale=10,edge-factor=16,a=0.25,b=0.25,c=0.25,seed=4");
  int64_t max_degree = 0;
  for (int64_t u = 0; u < g->n; u++)
    if (g->indptr[u + 1] - g->indptr[u] > max_degree) max_degree = g->indptr[u + 1] - g->indptr[u];
  cr_expect_lt(max_degree, 3 * 16, "max degree %lld", (long long)max_degree);
  halo_graph_destroy(&g);
}

Test(rmat, deterministic_for_a_seed) {
  halo_graph *a = generate("rmat:scale=10,edge-factor=4,seed=8"),
             *b = generate("rmat:scale=10,edge-factor=4,seed=8");
  cr_expect_arr_eq(a->indptr, b->indptr, sizeof(int64_t) * (size_t)(a->n + 1));
  cr_expect_arr_eq(a->indices, b->indices, sizeof(int64_t) * (size_t)a->m);
  halo_graph *c = generate("rmat:scale=10,edge-factor=4,seed=9");
  cr_expect_neq(memcmp(a->indices, c->indices, sizeof(int64_t) * (size_t)a->m), 0);
  halo_graph_destroy(&a);
  halo_graph_destroy(&b);
  halo_graph_destroy(&c);
}
