/* --balance: a hand-checked graph where balancing non-zeros provably beats
 * balancing nodes, and the JSON's per-part figures summing to the graph's.
 *
 * The graph: a clique of 12 nodes (each of degree 11: 132 non-zeros) and a
 * path of 52 nodes (102 non-zeros); 64 nodes, 234 non-zeros, mean 117 a part
 * at P = 2.  Balanced by nodes (32 a part, ufactor 30 allows 32), a part that
 * keeps the clique whole holds 132 + at least 20 · 2 - 1 = 171 non-zeros
 * (max/mean >= 1.46); splitting the clique instead cuts at least 6 · 6 = 36
 * edges where a whole clique cuts 1, so a cut-minimising partitioner keeps
 * it whole.  Balanced by edges, a part of 32 nodes with k clique nodes holds
 * 11k + 2(32 - k) (about): k = 6 gives 118 and 116, max/mean 1.01. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition-util.h"

#define CLIQUE 12
#define PATH 52

static halo_graph *clique_and_path(void) {
  int64_t src[CLIQUE * CLIQUE + PATH], dst[CLIQUE * CLIQUE + PATH], m = 0;
  for (int64_t u = 0; u < CLIQUE; u++)
    for (int64_t v = u + 1; v < CLIQUE; v++) src[m] = u, dst[m++] = v;
  for (int64_t i = 0; i + 1 < PATH; i++) src[m] = CLIQUE + i, dst[m++] = CLIQUE + i + 1;
  halo_graph *g = pt_graph_from_edges(CLIQUE + PATH, m, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  cr_assert_eq(g->m, CLIQUE * (CLIQUE - 1) + 2 * (PATH - 1));
  return g;
}

/* The statistics of g partitioned by `method` under `balance` into 2 parts. */
static halo_partition_stats *run(halo_method method, halo_balance balance) {
  halo_graph *g = clique_and_path();
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = 2;
  opt.method = method;
  opt.balance = balance;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  cr_assert_eq(halo_partition_lookup(method)(g, &opt, part), HALO_OK);
  halo_partition_stats *s = NULL;
  cr_assert_eq(halo_partition_stats_create(g, part, 2, &s), HALO_OK);
  fprintf(stderr, "%s --balance %s: owned %lld/%lld, nnz %lld/%lld, cut %lld\n",
          halo_method_name(method), halo_balance_name(balance), (long long)s->owned[0],
          (long long)s->owned[1], (long long)s->nnz[0], (long long)s->nnz[1],
          (long long)s->edge_cut);
  free(part);
  halo_graph_destroy(&g);
  return s;
}

Test(balance, metis_edges_beats_nodes_on_clique_and_path) {
  halo_partition_stats *nodes = run(HALO_METHOD_METIS, HALO_BALANCE_NODES);
  halo_partition_stats *edges = run(HALO_METHOD_METIS, HALO_BALANCE_EDGES);
  halo_partition_stats *work = run(HALO_METHOD_METIS, HALO_BALANCE_WORK);
  cr_expect_geq(nodes->balance_nnz, 171.0 / 117.0 - 1e-9);
  cr_expect_leq(nodes->balance, 1.0 + 1e-9);
  cr_expect_leq(edges->balance_nnz, 1.10);
  cr_expect_leq(edges->balance, 1.5);
  cr_expect_leq(work->balance_cost, 1.10);
  halo_partition_stats_destroy(&nodes);
  halo_partition_stats_destroy(&edges);
  halo_partition_stats_destroy(&work);
}

Test(balance, scotch_edges_and_work_beat_nodes_on_clique_and_path) {
  halo_partition_stats *nodes = run(HALO_METHOD_SCOTCH, HALO_BALANCE_NODES);
  halo_partition_stats *edges = run(HALO_METHOD_SCOTCH, HALO_BALANCE_EDGES);
  halo_partition_stats *work = run(HALO_METHOD_SCOTCH, HALO_BALANCE_WORK);
  cr_expect_geq(nodes->balance_nnz, 171.0 / 117.0 - 1e-9);
  /* One combined load (degree + the mean degree, 4, a node): each half
   * holds about half of 234 + 64 · 4 = 490, with 23 and 41 nodes, 153 and
   * 81 non-zeros by hand (12 clique nodes and 11 path nodes: 12 · 15 + 11 ·
   * 6 = 246).  Better than nodes' 171 / 63, not METIS' two constraints. */
  const double combined0 = (double)(edges->nnz[0] + 4 * edges->owned[0]);
  const double combined1 = (double)(edges->nnz[1] + 4 * edges->owned[1]);
  cr_expect_leq(2 * (combined0 > combined1 ? combined0 : combined1) / (combined0 + combined1),
                1.10);
  cr_expect_lt(edges->balance_nnz, nodes->balance_nnz - 0.1);
  cr_expect_leq(edges->balance, 1.5);
  cr_expect_leq(work->balance_cost, 1.10);
  halo_partition_stats_destroy(&nodes);
  halo_partition_stats_destroy(&edges);
  halo_partition_stats_destroy(&work);
}

/* The integers of JSON array `key` summed; *count gets their number. */
static int64_t json_sum(const char *json, const char *key, int *count) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": [", key);
  const char *p = strstr(json, pattern);
  cr_assert_not_null(p, "JSON has no array %s", key);
  p += strlen(pattern);
  int64_t sum = 0;
  *count = 0;
  while (*p != ']') {
    char *end;
    sum += strtoll(p, &end, 10);
    cr_assert(end != p, "bad array %s", key);
    ++*count;
    p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  return sum;
}

Test(balance, json_sums_are_the_graphs_totals) {
  const char *specs[] = {"rmat:scale=11,edge-factor=8,seed=3"};
  /* --balance, --work-row-cost (the default, 4, and a row that weighs
   * more than the hubs' mean degree: its parts must balance the cost it
   * names, and so their nodes more closely than at 4). */
  const struct {
    const char *balance;
    int row_cost;
  } runs[] = {{"nodes", 4}, {"edges", 4}, {"work", 4}, {"work", 64}};
  double node_balance[4];
  char *dir = pt_temp_dir("balance");
  for (size_t b = 0; b < 4; b++) {
    char *out = NULL, path[512];
    snprintf(path, sizeof path, "%s/%s-%d.json", dir, runs[b].balance, runs[b].row_cost);
    int rc = pt_run(&out,
                    "%s --input %s --parts 8 --balance %s --work-row-cost %d --out %s/%s-%d "
                    "--json %s",
                    HALO_PARTITION_EXE, specs[0], runs[b].balance, runs[b].row_cost, dir,
                    runs[b].balance, runs[b].row_cost, path);
    cr_assert_eq(rc, 0, "halo-partition --balance %s failed:\n%s", runs[b].balance, out);
    free(out);
    char *json = pt_read_file(path);
    cr_assert_not_null(json);
    const int64_t nodes = (int64_t)pt_json_number(json, "nodes");
    const int64_t edges = (int64_t)pt_json_number(json, "edges");
    const int64_t volume = (int64_t)pt_json_number(json, "comm_volume");
    const int64_t row_cost = (int64_t)pt_json_number(json, "work_row_cost");
    cr_expect_eq(row_cost, runs[b].row_cost);
    int k = 0;
    cr_expect_eq(json_sum(json, "owned", &k), nodes, "%s", runs[b].balance);
    cr_expect_eq(k, 8);
    cr_expect_eq(json_sum(json, "local_edges", &k), edges, "%s", runs[b].balance);
    cr_expect_eq(json_sum(json, "halo", &k), volume, "%s", runs[b].balance);
    cr_expect_eq(json_sum(json, "send", &k), volume, "%s", runs[b].balance);
    cr_expect_eq(json_sum(json, "cost", &k), edges + row_cost * nodes, "%s", runs[b].balance);
    if (b == 1) cr_expect_leq(pt_json_number(json, "balance_local_edges"), 1.10);
    if (b >= 2)
      cr_expect_leq(pt_json_number(json, "balance_cost"), 1.10, "row cost %d", runs[b].row_cost);
    node_balance[b] = pt_json_number(json, "balance");
    free(json);
  }
  cr_expect_lt(node_balance[3], node_balance[2], "--work-row-cost 64: nodes %.3f, at 4 %.3f",
               node_balance[3], node_balance[2]);
  pt_remove_tree(dir);
  free(dir);
}

Test(balance, bad_balance_is_one_line_naming_the_flag) {
  char *out = NULL;
  int rc = pt_run(&out, "%s --input rmat:scale=8 --parts 2 --balance cores --out /nonexistent/x",
                  HALO_PARTITION_EXE);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(out, "--balance: unknown balance 'cores'") != NULL, "%s", out);
  free(out);
  rc = pt_run(&out, "%s --input rmat:scale=8 --parts 2 --method random --balance edges --out /x",
              HALO_PARTITION_EXE);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(out, "--balance edges: the random method balances nodes only") != NULL, "%s",
            out);
  free(out);
}
