/* Halo-plan invariants for every method and P in {1,2,3,4}, on Cora and on a
 * random messy graph, checked against brute-force references; statistics
 * against the plans. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "partition-util.h"

static int32_t *run_method(halo_graph *g, halo_method method, int32_t parts, int64_t seed) {
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = parts;
  opt.method = method;
  opt.seed = seed;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  cr_assert_not_null(part);
  cr_assert_eq(halo_partition_lookup(method)(g, &opt, part), HALO_OK, "%s P=%d",
               halo_method_name(method), parts);
  return part;
}

/* Statistics agree with the plans and the brute-force edge cut. */
static void check_stats(const halo_graph *g, const int32_t *part, int32_t parts) {
  halo_partition_stats *s = NULL;
  halo_partition_plan *plan = NULL;
  cr_assert_eq(halo_partition_stats_create(g, part, parts, &s), HALO_OK);
  cr_assert_eq(halo_partition_plan_create(g, part, parts, 7, &plan), HALO_OK);
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
  const halo_method methods[] = {HALO_METHOD_METIS, HALO_METHOD_RANDOM, HALO_METHOD_BLOCK};
  for (int i = 0; i < 3; i++)
    for (int32_t parts = 1; parts <= 4; parts++) {
      fprintf(stderr, "%s: %s P=%d\n", name, halo_method_name(methods[i]), parts);
      int32_t *part = run_method(g, methods[i], parts, 3);
      pt_build_and_check(g, part, parts);
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
  pt_build_and_check(g, part, parts);
  check_stats(g, part, parts);
  free(part);
  halo_graph_destroy(&g);
}

Test(plan, balanced_methods_are_balanced_and_seeded) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  for (int32_t parts = 1; parts <= 5; parts++) {
    int32_t *a = run_method(g, HALO_METHOD_RANDOM, parts, 11);
    int32_t *b = run_method(g, HALO_METHOD_RANDOM, parts, 11);
    int32_t *c = run_method(g, HALO_METHOD_RANDOM, parts, 12);
    int32_t *blk = run_method(g, HALO_METHOD_BLOCK, parts, 0);
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
  const halo_method methods[] = {HALO_METHOD_METIS, HALO_METHOD_RANDOM, HALO_METHOD_BLOCK};
  for (int i = 0; i < 3; i++) {
    opt.parts = 0;
    cr_expect_eq(halo_partition_lookup(methods[i])(g, &opt, part), HALO_ERR_ARG);
    opt.parts = (int32_t)g->n + 1;
    cr_expect_eq(halo_partition_lookup(methods[i])(g, &opt, part), HALO_ERR_ARG);
  }
  halo_partition_plan *plan = NULL;
  part[3] = 9;
  cr_expect_eq(halo_partition_plan_create(g, part, 4, 0, &plan), HALO_ERR_RANGE);
  cr_expect_null(plan);
  halo_log_set_quiet(0);
  free(part);
  halo_graph_destroy(&g);
}

/* The statistics halo_partition_write reads off the shards equal the ones
 * computed from the graph, and the folder holds the manifest and P parts. */
static void check_write(halo_graph *g, halo_method method, int32_t parts) {
  char *dir = pt_temp_dir("write");
  int32_t *part = run_method(g, method, parts, 5);
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
