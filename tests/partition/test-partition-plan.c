/* Halo-plan invariants for every method, P in {1,2,3,4} and both row orders,
 * on Cora and on random graphs, checked against brute-force references;
 * statistics against the plans; the community order on graphs whose
 * expected order is known by construction. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "partition-util.h"

/* Statistics agree with the plans and the brute-force edge cut. */
static void check_stats(const halo_graph *g, const int32_t *part, int32_t parts) {
  halo_partition_stats *s = NULL;
  halo_partition_plan *plan = NULL;
  cr_assert_eq(halo_partition_stats_create(g, part, parts, &s), HALO_OK);
  cr_assert_eq(halo_partition_plan_create(g, part, parts, HALO_ORDER_COMMUNITY, 7, &plan), HALO_OK);
  int64_t volume = 0, sent = 0, max_owned = 0;
  for (int32_t p = 0; p < parts; p++) {
    halo_shard *sh = NULL;
    cr_assert_eq(halo_partition_plan_shard(plan, p, &sh), HALO_OK);
    cr_expect_eq(s->owned[p], sh->n_owned);
    cr_expect_eq(s->halo[p], sh->n_halo);
    cr_expect_eq(s->nnz[p], sh->nnz);
    cr_expect_eq(s->send[p], sh->send_ptr[parts], "part %d sends %lld, plan %lld", p,
                 (long long)s->send[p], (long long)sh->send_ptr[parts]);
    int32_t peers = 0;
    for (int32_t q = 0; q < parts; q++) peers += sh->recv_ptr[q + 1] > sh->recv_ptr[q];
    cr_expect_eq(s->peers[p], peers);
    /* The matrix of halo rows: column p is what p receives from each q. */
    cr_assert_not_null(s->between);
    for (int32_t q = 0; q < parts; q++)
      cr_expect_eq(s->between[(int64_t)q * parts + p], sh->recv_ptr[q + 1] - sh->recv_ptr[q],
                   "rows part %d owns in part %d's halo", q, p);
    volume += sh->n_halo;
    sent += sh->send_ptr[parts];
    if (sh->n_owned > max_owned) max_owned = sh->n_owned;
    halo_shard_destroy(&sh);
  }
  cr_expect_eq(s->comm_volume, volume);
  cr_expect_eq(sent, volume, "rows sent %lld != rows received %lld", (long long)sent,
               (long long)volume);
  cr_expect_eq(s->edge_cut, pt_edge_cut(g, part));
  cr_expect_float_eq(s->replication_factor, (double)(g->n + volume) / (double)g->n, 1e-12);
  cr_expect_float_eq(s->balance, (double)max_owned * parts / (double)g->n, 1e-12);
  halo_partition_plan_destroy(&plan);
  halo_partition_stats_destroy(&s);
}

static void check_all(halo_graph *g, const char *name) {
  const halo_method methods[] = {HALO_METHOD_METIS, HALO_METHOD_SCOTCH, HALO_METHOD_RANDOM,
                                 HALO_METHOD_BLOCK};
  for (int i = 0; i < 4; i++)
    for (int32_t parts = 1; parts <= 4; parts++) {
      fprintf(stderr, "%s: %s P=%d\n", name, halo_method_name(methods[i]), parts);
      int32_t *part = pt_partition(g, methods[i], parts, 3);
      pt_build_and_check(g, part, parts, HALO_ORDER_COMMUNITY);
      pt_build_and_check(g, part, parts, HALO_ORDER_ID);
      check_stats(g, part, parts);
      free(part);
    }
}

Test(plan, cora_all_methods) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  check_all(g, "cora");
  halo_graph_destroy(&g);
}

Test(plan, random_graph_all_methods) {
  uint64_t seed = pt_seed("plan.random_graph_all_methods", 77);
  halo_graph *g = pt_graph_random(600, 2500, seed);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  check_all(g, "random");
  halo_graph_destroy(&g);
}

Test(plan, random_parts_of_arbitrary_shape) {
  /* part[] drawn at random, parts possibly empty: the plan must not care. */
  uint64_t seed = pt_seed("plan.random_parts_of_arbitrary_shape", 5);
  halo_graph *g = pt_graph_random(300, 1200, seed);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  int32_t parts = 7;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  for (int64_t v = 0; v < g->n; v++)
    part[v] = (int32_t)((uint64_t)(v * 2654435761u + seed) % 5); /* parts 5, 6 empty */
  pt_build_and_check(g, part, parts, HALO_ORDER_COMMUNITY);
  pt_build_and_check(g, part, parts, HALO_ORDER_ID);
  check_stats(g, part, parts);
  free(part);
  halo_graph_destroy(&g);
}

Test(plan, balanced_methods_are_balanced_and_seeded) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  for (int32_t parts = 1; parts <= 5; parts++) {
    int32_t *a = pt_partition(g, HALO_METHOD_RANDOM, parts, 11);
    int32_t *b = pt_partition(g, HALO_METHOD_RANDOM, parts, 11);
    int32_t *c = pt_partition(g, HALO_METHOD_RANDOM, parts, 12);
    int32_t *blk = pt_partition(g, HALO_METHOD_BLOCK, parts, 0);
    int64_t size[5] = {0}, bsize[5] = {0}, differ = 0;
    for (int64_t v = 0; v < g->n; v++) {
      cr_assert_eq(a[v], b[v], "random partition depends on more than the seed");
      differ += a[v] != c[v];
      size[a[v]]++;
      bsize[blk[v]]++;
      if (v > 0) cr_assert_geq(blk[v], blk[v - 1], "block parts are not contiguous");
    }
    if (parts > 1) cr_expect_gt(differ, g->n / 4, "seeds 11 and 12 give nearly the same partition");
    for (int32_t p = 0; p < parts; p++) {
      cr_expect(size[p] == g->n / parts || size[p] == g->n / parts + 1, "random part %d has %lld",
                p, (long long)size[p]);
      cr_expect(bsize[p] == g->n / parts || bsize[p] == g->n / parts + 1, "block part %d has %lld",
                p, (long long)bsize[p]);
    }
    free(a);
    free(b);
    free(c);
    free(blk);
  }
  halo_graph_destroy(&g);
}

Test(plan, bad_parts_are_refused) {
  halo_graph *g = pt_graph_cora();
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  halo_log_set_quiet(1);
  const halo_method methods[] = {HALO_METHOD_METIS, HALO_METHOD_SCOTCH, HALO_METHOD_RANDOM,
                                 HALO_METHOD_BLOCK};
  for (int i = 0; i < 4; i++) {
    opt.parts = 0;
    cr_expect_eq(halo_partition_lookup(methods[i])(g, &opt, part), HALO_ERR_ARG);
    opt.parts = (int32_t)g->n + 1;
    cr_expect_eq(halo_partition_lookup(methods[i])(g, &opt, part), HALO_ERR_ARG);
  }
  halo_partition_plan *plan = NULL;
  part[3] = 9;
  cr_expect_eq(halo_partition_plan_create(g, part, 4, HALO_ORDER_COMMUNITY, 0, &plan),
               HALO_ERR_RANGE);
  cr_expect_null(plan);
  part[3] = 0;
  cr_expect_eq(halo_partition_plan_create(g, part, 4, (halo_order)7, 0, &plan), HALO_ERR_ARG);
  cr_expect_null(plan);
  halo_log_set_quiet(0);
  free(part);
  halo_graph_destroy(&g);
}

/* The statistics halo_partition_write reads off the shards equal the ones
 * computed from the graph, and the folder holds the manifest and P parts. */
static void check_write(halo_graph *g, halo_method method, int32_t parts) {
  char *dir = pt_temp_dir("write");
  int32_t *part = pt_partition(g, method, parts, 5);
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = parts;
  opt.method = method;
  opt.seed = 5;
  halo_partition_stats *want = NULL, *got = NULL;
  cr_assert_eq(halo_partition_stats_create(g, part, parts, &want), HALO_OK);
  cr_assert_eq(halo_partition_write(dir, g, part, &opt, 99, NULL, NULL, &got), HALO_OK);
  cr_expect_eq(got->edge_cut, want->edge_cut);
  cr_expect_eq(got->comm_volume, want->comm_volume);
  cr_expect_float_eq(got->balance, want->balance, 1e-12);
  cr_expect_float_eq(got->replication_factor, want->replication_factor, 1e-12);
  for (int32_t p = 0; p < parts; p++) {
    cr_expect_eq(got->owned[p], want->owned[p]);
    cr_expect_eq(got->halo[p], want->halo[p]);
    cr_expect_eq(got->nnz[p], want->nnz[p]);
    cr_expect_eq(got->send[p], want->send[p]);
    cr_expect_eq(got->peers[p], want->peers[p]);
    for (int32_t q = 0; q < parts; q++)
      cr_expect_eq(got->between[(int64_t)q * parts + p], want->between[(int64_t)q * parts + p]);
  }
  char path[512];
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  halo_manifest *m = NULL;
  cr_assert_eq(halo_manifest_read(path, &m), HALO_OK);
  cr_expect_eq(m->run_id, 99);
  cr_expect_eq(m->parts, parts);
  for (int64_t v = 0; v < g->n; v++) cr_assert_eq(m->part[v], part[v]);
  halo_manifest_destroy(&m);
  halo_partition_stats_destroy(&got);
  halo_partition_stats_destroy(&want);
  free(part);
  pt_remove_tree(dir);
  free(dir);
}

Test(plan, write_reports_the_same_statistics) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  check_write(g, HALO_METHOD_METIS, 3);
  check_write(g, HALO_METHOD_RANDOM, 4);
  halo_graph_destroy(&g);
  uint64_t seed = pt_seed("plan.write_reports_the_same_statistics", 8);
  g = pt_graph_random(400, 2000, seed);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  check_write(g, HALO_METHOD_BLOCK, 2);
  halo_graph_destroy(&g);
}

/* ---- the community order ---------------------------------------------- */

static halo_shard *plan_one(const halo_graph *g, const int32_t *part, int32_t parts,
                            halo_order order, int32_t p) {
  halo_partition_plan *plan = NULL;
  halo_shard *s = NULL;
  cr_assert_eq(halo_partition_plan_create(g, part, parts, order, 1, &plan), HALO_OK);
  cr_assert_eq(halo_partition_plan_shard(plan, p, &s), HALO_OK);
  halo_partition_plan_destroy(&plan);
  return s;
}

static void expect_i64(const int64_t *got, const int64_t *want, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    cr_expect_eq(got[i], want[i], "%s[%lld] = %lld, expected %lld", what, (long long)i,
                 (long long)got[i], (long long)want[i]);
}

static void expect_i32(const int32_t *got, const int32_t *want, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    cr_expect_eq(got[i], want[i], "%s[%d] = %d, expected %d", what, (int)i, got[i], want[i]);
}

/* Two 4-cycles, evens in part 0 and odds in part 1, joined by 2-3 and 6-7:
 *
 *   0 - 2 - 4 - 6 - 0      1 - 3 - 5 - 7      1 - 5
 *       |       |              |       |
 *       3       7              2       6
 *
 * Part 0: interior 0, 4 then boundary 2, 6 (one block: ascending id), halo
 * 3, 7 from part 1.  Part 1: interior 1, 5 then boundary 3, 7, halo 2, 6.
 * Worked out by hand below, local CSR included. */
Test(order, hand_checked_two_parts) {
  const int64_t src[] = {0, 2, 4, 6, 6, 2, 1, 3, 5, 1};
  const int64_t dst[] = {2, 4, 6, 0, 7, 3, 3, 5, 7, 5};
  halo_graph *g = pt_graph_from_edges(8, 10, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  const int32_t part[8] = {0, 1, 0, 1, 0, 1, 0, 1};

  halo_shard *s = plan_one(g, part, 2, HALO_ORDER_COMMUNITY, 0);
  cr_assert_eq(s->n_owned, 4);
  cr_assert_eq(s->n_halo, 2);
  cr_expect_eq(s->n_interior, 2);
  expect_i64(s->global_id, (const int64_t[]){0, 4, 2, 6, 3, 7}, 6, "part 0 global_id");
  expect_i64(s->indptr, (const int64_t[]){0, 2, 4, 7, 10}, 5, "part 0 indptr");
  expect_i32(s->indices, (const int32_t[]){2, 3, 2, 3, 0, 1, 4, 0, 1, 5}, 10, "part 0 indices");
  expect_i64(s->send_ptr, (const int64_t[]){0, 0, 2}, 3, "part 0 send_ptr");
  expect_i32(s->send_idx, (const int32_t[]){2, 3}, 2, "part 0 send_idx");
  halo_shard_destroy(&s);

  s = plan_one(g, part, 2, HALO_ORDER_COMMUNITY, 1);
  cr_expect_eq(s->n_interior, 2);
  expect_i64(s->global_id, (const int64_t[]){1, 5, 3, 7, 2, 6}, 6, "part 1 global_id");
  expect_i64(s->indptr, (const int64_t[]){0, 2, 5, 8, 10}, 5, "part 1 indptr");
  expect_i32(s->indices, (const int32_t[]){1, 2, 0, 2, 3, 0, 1, 4, 1, 5}, 10, "part 1 indices");
  expect_i64(s->send_ptr, (const int64_t[]){0, 2, 2}, 3, "part 1 send_ptr");
  expect_i32(s->send_idx, (const int32_t[]){2, 3}, 2, "part 1 send_idx");
  halo_shard_destroy(&s);

  /* --order id: ascending ids; only 0 leads as an interior row. */
  s = plan_one(g, part, 2, HALO_ORDER_ID, 0);
  cr_expect_eq(s->n_interior, 1);
  expect_i64(s->global_id, (const int64_t[]){0, 2, 4, 6, 3, 7}, 6, "id order global_id");
  expect_i32(s->send_idx, (const int32_t[]){1, 3}, 2, "id order send_idx");
  halo_shard_destroy(&s);
  halo_graph_destroy(&g);
}

/* K communities of HALO_PARTITION_BLOCK_ROWS nodes each, node v in
 * community v % K (so ids interleave), random edges inside a community only,
 * plus `bridges` random edges from community 0 to community 2. */
static halo_graph *communities(int K, int64_t bridges, uint64_t seed) {
  const int64_t size = HALO_PARTITION_BLOCK_ROWS, n = K * size, inner = n * 5;
  int64_t *src = calloc((size_t)(inner + bridges), sizeof *src);
  int64_t *dst = calloc((size_t)(inner + bridges), sizeof *dst);
  cr_assert(src && dst);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t e = 0; e < inner + bridges; e++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int64_t c = e < inner ? e % K : 0, other = e < inner ? c : 2;
    src[e] = (int64_t)((x >> 8) % (uint64_t)size) * K + c;
    dst[e] = (int64_t)((x >> 32) % (uint64_t)size) * K + other;
  }
  halo_graph *g = pt_graph_from_edges(n, inner + bridges, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  free(src);
  free(dst);
  return g;
}

/* Rows [begin, end): each community one contiguous run, ascending id. */
static void expect_community_runs(const halo_shard *s, int K, int64_t begin, int64_t end,
                                  const char *what) {
  int seen[8] = {0};
  for (int64_t r = begin; r < end; r++) {
    int c = (int)(s->global_id[r] % K);
    int same = r > begin && s->global_id[r - 1] % K == c;
    if (same)
      cr_expect_gt(s->global_id[r], s->global_id[r - 1], "%s: row %lld: ids do not ascend", what,
                   (long long)r);
    else
      cr_expect_eq(seen[c]++, 0, "%s: community %d is split (row %lld)", what, c, (long long)r);
  }
}

Test(order, blocks_follow_communities) {
  uint64_t seed = pt_seed("order.blocks_follow_communities", 3);
  halo_graph *g = communities(4, 0, seed);
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  halo_shard *s = plan_one(g, part, 1, HALO_ORDER_COMMUNITY, 0);
  cr_expect_eq(s->n_interior, g->n, "P = 1: every row is interior");
  expect_community_runs(s, 4, 0, s->n_owned, "P=1");
  halo_shard_destroy(&s);

  /* Two parts along the communities, bridges 0-2 make boundary rows: the
   * interior rows lead, and in each group a community is one run. */
  halo_graph_destroy(&g);
  g = communities(4, 40, seed);
  for (int64_t v = 0; v < g->n; v++) part[v] = v % 4 == 0 || v % 4 == 1 ? 0 : 1;
  s = plan_one(g, part, 2, HALO_ORDER_COMMUNITY, 0);
  cr_assert_gt(s->n_interior, 0);
  cr_assert_lt(s->n_interior, s->n_owned);
  expect_community_runs(s, 4, 0, s->n_interior, "part 0 interior");
  expect_community_runs(s, 4, s->n_interior, s->n_owned, "part 0 boundary");
  for (int64_t r = 0; r < s->n_owned; r++) {
    int remote = s->indptr[r + 1] > s->indptr[r] && s->indices[s->indptr[r + 1] - 1] >= s->n_owned;
    cr_expect_eq(remote, r >= s->n_interior, "row %lld (global %lld)", (long long)r,
                 (long long)s->global_id[r]);
  }
  halo_shard_destroy(&s);
  free(part);
  halo_graph_destroy(&g);
}

/* K communities of exactly HALO_PARTITION_BLOCK_ROWS nodes on ids shuffled
 * by a seeded permutation, each a ring (so it is connected) plus random
 * chords, and no edge between communities: through the whole plan, every
 * run of HALO_PARTITION_BLOCK_ROWS rows is one community in ascending id. */
Test(order, shuffled_communities_of_block_rows_are_row_blocks) {
  uint64_t seed = pt_seed("order.shuffled_communities_of_block_rows_are_row_blocks", 4);
  const int K = 3;
  const int64_t size = HALO_PARTITION_BLOCK_ROWS, n = K * size, m = n * 6;
  int64_t *perm = calloc((size_t)n, sizeof *perm);
  int64_t *src = calloc((size_t)m, sizeof *src), *dst = calloc((size_t)m, sizeof *dst);
  int *community = calloc((size_t)n, sizeof *community);
  cr_assert(perm && src && dst && community);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int64_t j = (int64_t)(x % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t e = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t base = i / size * size;
    community[perm[i]] = (int)(i / size);
    src[e] = perm[i], dst[e++] = perm[base + (i - base + 1) % size];
    for (int c = 0; c < 2; c++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      src[e] = perm[i], dst[e++] = perm[base + (int64_t)(x % (uint64_t)size)];
    }
  }
  halo_graph *g = pt_graph_from_edges(n, e, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);

  /* P = 1, and P = 2 with communities 0 and 2 in part 0 (no boundary). */
  int32_t *part = calloc((size_t)n, sizeof *part);
  cr_assert_not_null(part);
  for (int32_t parts = 1; parts <= 2; parts++) {
    for (int64_t v = 0; v < n; v++) part[v] = parts == 2 && community[v] == 1;
    halo_shard *s = plan_one(g, part, parts, HALO_ORDER_COMMUNITY, 0);
    cr_assert_eq(s->n_owned, parts == 1 ? n : 2 * size);
    cr_expect_eq(s->n_interior, s->n_owned);
    for (int64_t r = 0; r < s->n_owned; r++) {
      const int64_t first = r / size * size;
      cr_expect_eq(community[s->global_id[r]], community[s->global_id[first]],
                   "P=%d: row %lld (node %lld) is in community %d, row %lld in %d", parts,
                   (long long)r, (long long)s->global_id[r], community[s->global_id[r]],
                   (long long)first, community[s->global_id[first]]);
      if (r > first)
        cr_expect_gt(s->global_id[r], s->global_id[r - 1], "P=%d: row %lld: ids do not ascend",
                     parts, (long long)r);
    }
    halo_shard_destroy(&s);
  }
  free(part);
  halo_graph_destroy(&g);
  free(community);
  free(dst);
  free(src);
  free(perm);
}

/* Random graphs large enough for several blocks per part: every invariant
 * in both orders, and the same input gives the same shards. */
Test(order, random_graphs_both_orders_deterministic) {
  uint64_t seed = pt_seed("order.random_graphs_both_orders_deterministic", 21);
  for (int round = 0; round < 3; round++) {
    halo_graph *g = pt_graph_random(3000 + 700 * round, 15000 + 4000 * round, seed + round);
    cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
    for (int32_t parts = 1; parts <= 3; parts++) {
      halo_method method = round == 1 ? HALO_METHOD_RANDOM : HALO_METHOD_METIS;
      int32_t *part = pt_partition(g, method, parts, (int64_t)(seed % 1000) + round);
      fprintf(stderr, "order: round %d, %s P=%d\n", round, halo_method_name(method), parts);
      pt_build_and_check(g, part, parts, HALO_ORDER_COMMUNITY);
      pt_build_and_check(g, part, parts, HALO_ORDER_ID);
      for (int32_t p = 0; p < parts; p++) {
        halo_shard *a = plan_one(g, part, parts, HALO_ORDER_COMMUNITY, p);
        halo_shard *b = plan_one(g, part, parts, HALO_ORDER_COMMUNITY, p);
        cr_expect_eq(halo_shard_digest(a), halo_shard_digest(b),
                     "P=%d part %d differs between runs", parts, p);
        halo_shard_destroy(&a);
        halo_shard_destroy(&b);
      }
      free(part);
    }
    halo_graph_destroy(&g);
  }
}
