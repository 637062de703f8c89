/* Clean-up against a hand-checked graph and a dense reference. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "halo-rng.h"
#include "partition-util.h"

static void expect_same_structure(const halo_graph *got, const halo_graph *want) {
  cr_assert_eq(got->n, want->n);
  cr_assert_eq(got->m, want->m, "edges: got %lld, want %lld", (long long)got->m,
               (long long)want->m);
  for (int64_t v = 0; v <= got->n; v++)
    cr_assert_eq(got->indptr[v], want->indptr[v], "indptr[%lld]", (long long)v);
  for (int64_t k = 0; k < got->m; k++)
    cr_assert_eq(got->indices[k], want->indices[k], "indices[%lld]", (long long)k);
}

Test(clean, hand_checked_graph) {
  /* 0-1 given twice and reversed once, 2-2 a self-loop, 1->2 and 4->0 given
   * in one direction only, 3-4 both ways in an unsorted row, 5 isolated,
   * 6 has only a self-loop. */
  int64_t src[] = {0, 0, 1, 2, 1, 3, 4, 4, 3, 6, 3};
  int64_t dst[] = {1, 1, 0, 2, 2, 4, 3, 0, 1, 6, 1};
  halo_graph *g = pt_graph_from_edges(7, 11, src, dst);
  halo_clean_report rep;
  cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK);
  /* By hand: 0:{1,4} 1:{0,2,3} 2:{1} 3:{1,4} 4:{0,3} 5:{} 6:{} */
  int64_t want_ptr[] = {0, 2, 5, 6, 8, 10, 10, 10};
  int64_t want_idx[] = {1, 4, 0, 2, 3, 1, 1, 4, 0, 3};
  cr_assert_eq(g->m, 10);
  for (int v = 0; v <= 7; v++) cr_expect_eq(g->indptr[v], want_ptr[v], "indptr[%d]", v);
  for (int k = 0; k < 10; k++) cr_expect_eq(g->indices[k], want_idx[k], "indices[%d]", k);
  cr_expect_eq(rep.input_edges, 11);
  cr_expect_eq(rep.self_loops, 2);
  cr_expect_eq(rep.duplicates, 2);    /* 0->1 once, 3->1 once */
  cr_expect_eq(rep.reverse_added, 3); /* 2->1, 0->4, 1->3 */
  cr_expect_eq(rep.isolated, 2);
  halo_graph_destroy(&g);
}

Test(clean, random_messy_graphs_match_dense_reference) {
  uint64_t seed = pt_seed("clean.random_messy_graphs_match_dense_reference", 20261130);
  for (int trial = 0; trial < 20; trial++) {
    int64_t n = 1 + trial * 7, m = trial * 40;
    halo_graph *g = pt_graph_random(n, m, seed + (uint64_t)trial);
    halo_graph *want = pt_clean_dense(g);
    halo_clean_report rep;
    int64_t input = g->m;
    cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK, "trial %d", trial);
    expect_same_structure(g, want);
    cr_expect_eq(rep.input_edges, input);
    cr_expect_eq(input - rep.self_loops - rep.duplicates + rep.reverse_added, g->m, "trial %d",
                 trial);
    /* Node data is untouched and a second clean-up is a no-op. */
    cr_expect_eq(g->features, 5);
    cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK);
    cr_expect_eq(rep.self_loops + rep.duplicates + rep.reverse_added, 0);
    expect_same_structure(g, want);
    halo_graph_destroy(&want);
    halo_graph_destroy(&g);
  }
}

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
  return (x[1] > y[1]) - (x[1] < y[1]);
}

Test(clean, large_graph_with_hubs_matches_sorted_pairs) {
  /* Hubs give rows far longer than the insertion-sort cut-off, in random
   * order, half of them one-directional: the qsort and merge paths. */
  uint64_t seed = pt_seed("clean.large_graph_with_hubs_matches_sorted_pairs", 31337);
  const int64_t n = 5000, m = 60000;
  int64_t *src = malloc(m * sizeof *src), *dst = malloc(m * sizeof *dst);
  int64_t *pairs = malloc(2 * m * 2 * sizeof *pairs), np = 0;
  uint64_t key = halo_rng_key(seed, 7, 0, 0);
  for (int64_t k = 0; k < m; k++) {
    uint64_t r = halo_rng_bits(key, (uint64_t)k, 0);
    src[k] = r % 4 == 0 ? (int64_t)(r >> 8) % 3 : (int64_t)(halo_rng_bits(key, (uint64_t)k, 1) % n);
    dst[k] = (int64_t)(halo_rng_bits(key, (uint64_t)k, 2) % (r % 7 == 0 ? 50 : n));
    if (src[k] == dst[k]) continue;
    pairs[2 * np] = src[k];
    pairs[2 * np++ + 1] = dst[k];
    pairs[2 * np] = dst[k];
    pairs[2 * np++ + 1] = src[k];
  }
  qsort(pairs, (size_t)np, 2 * sizeof *pairs, cmp_pair);
  int64_t unique = 0;
  for (int64_t i = 0; i < np; i++)
    if (unique == 0 || cmp_pair(pairs + 2 * i, pairs + 2 * (unique - 1)) != 0) {
      pairs[2 * unique] = pairs[2 * i];
      pairs[2 * unique++ + 1] = pairs[2 * i + 1];
    }
  halo_graph *g = pt_graph_from_edges(n, m, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  cr_assert_eq(g->m, unique, "edges: got %lld, want %lld", (long long)g->m, (long long)unique);
  cr_expect_gt(g->indptr[1] - g->indptr[0], 1000, "node 0 should be a hub");
  for (int64_t i = 0; i < unique; i++) {
    int64_t u = pairs[2 * i], v = pairs[2 * i + 1];
    cr_assert(i >= g->indptr[u] && i < g->indptr[u + 1], "edge %lld (%lld, %lld) in the wrong row",
              (long long)i, (long long)u, (long long)v);
    cr_assert_eq(g->indices[i], v, "edge %lld", (long long)i);
  }
  free(pairs);
  free(src);
  free(dst);
  halo_graph_destroy(&g);
}

Test(clean, directed_cycle_is_not_mistaken_for_symmetric) {
  /* Every row has one entry and every node one in-edge, yet no reverse exists. */
  int64_t src[] = {0, 1, 2, 3}, dst[] = {1, 2, 3, 0};
  halo_graph *g = pt_graph_from_edges(4, 4, src, dst);
  halo_clean_report rep;
  cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK);
  int64_t want_ptr[] = {0, 2, 4, 6, 8}, want_idx[] = {1, 3, 0, 2, 1, 3, 0, 2};
  for (int v = 0; v <= 4; v++) cr_expect_eq(g->indptr[v], want_ptr[v]);
  for (int k = 0; k < 8; k++) cr_expect_eq(g->indices[k], want_idx[k]);
  cr_expect_eq(rep.reverse_added, 4);
  halo_graph_destroy(&g);
}

Test(clean, cora_is_already_clean) {
  halo_graph *g = pt_graph_cora();
  halo_graph *want = pt_clean_dense(g);
  halo_clean_report rep;
  cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK);
  cr_expect_eq(g->m, 10556);
  cr_expect_eq(rep.self_loops + rep.duplicates + rep.reverse_added + rep.isolated, 0);
  expect_same_structure(g, want);
  halo_graph_destroy(&want);
  halo_graph_destroy(&g);
}

Test(clean, edge_out_of_range_is_refused) {
  int64_t src[] = {0, 1}, dst[] = {1, 7};
  halo_graph *g = pt_graph_from_edges(3, 2, src, dst);
  halo_log_set_quiet(1);
  cr_expect_eq(halo_partition_clean(g, NULL), HALO_ERR_RANGE);
  halo_log_set_quiet(0);
  halo_graph_destroy(&g);
}

/* Weighted clean-up (docs/partition.md, "Edge weights") against a dense
 * reference in double: S[u][v] sums the input's (u, v) weights, self-loops
 * dropped; the clean weight of (u, v) is (S[u][v] + S[v][u]) / 2 when both
 * are given, else the one given.  Weights k/16 keep every sum exact, so the
 * comparison is exact; a second clean-up changes nothing. */
Test(clean, weighted_graphs_match_dense_reference) {
  uint64_t seed = pt_seed("clean.weighted_graphs_match_dense_reference", 20261206);
  for (int trial = 0; trial < 12; trial++) {
    const int64_t n = 1 + trial * 5, m = trial * 30;
    halo_graph *g = pt_graph_random(n, m, seed + (uint64_t)trial);
    const uint64_t key = halo_rng_key(seed + (uint64_t)trial, HALO_RNG_GRAPH, 3, 0);
    g->edge_weight = calloc((size_t)(g->m + 1), sizeof *g->edge_weight);
    double *s = calloc((size_t)(n * n), sizeof *s);
    char *given = calloc((size_t)(n * n), 1);
    for (int64_t u = 0; u < n; u++)
      for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
        const int64_t v = g->indices[k];
        g->edge_weight[k] = (float)(halo_rng_bits(key, (uint64_t)k, 0) % 64) / 16.0f;
        if (u == v) continue;
        s[u * n + v] += g->edge_weight[k];
        given[u * n + v] = 1;
      }
    halo_clean_report rep;
    cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK, "trial %d", trial);
    for (int pass = 0; pass < 2; pass++) {
      int64_t k = 0;
      for (int64_t u = 0; u < n; u++) {
        cr_assert_eq(g->indptr[u], k, "trial %d pass %d: row %lld starts at %lld, want %lld",
                     trial, pass, (long long)u, (long long)g->indptr[u], (long long)k);
        for (int64_t v = 0; v < n; v++) {
          const int a = given[u * n + v], b = given[v * n + u];
          if (!a && !b) continue;
          const double want = a && b ? (s[u * n + v] + s[v * n + u]) / 2.0
                                     : a ? s[u * n + v] : s[v * n + u];
          cr_assert_eq(g->indices[k], v, "trial %d pass %d: row %lld", trial, pass, (long long)u);
          cr_expect_eq((double)g->edge_weight[k], want, "trial %d pass %d: w(%lld, %lld) = %g, want %g",
                       trial, pass, (long long)u, (long long)v, (double)g->edge_weight[k], want);
          k++;
        }
      }
      cr_assert_eq(g->m, k, "trial %d pass %d", trial, pass);
      if (pass == 0) {
        cr_assert_eq(halo_partition_clean(g, &rep), HALO_OK);
        cr_expect_eq(rep.self_loops + rep.duplicates + rep.reverse_added, 0, "trial %d", trial);
      }
    }
    free(given);
    free(s);
    halo_graph_destroy(&g);
  }
}
