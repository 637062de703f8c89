/* METIS through the library against the reference tool, gpmetis, on the same
 * cleaned graph with the same options; METIS against random partitioning. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition-util.h"

/* Communication volume Σ_v |{part[u] ≠ part[v] : u ~ v}| (METIS' "totalv"). */
static int64_t comm_volume(const halo_graph *g, const int32_t *part, int32_t parts) {
  halo_partition_stats *s = NULL;
  cr_assert_eq(halo_partition_stats_create(g, part, parts, &s), HALO_OK);
  int64_t v = s->comm_volume;
  halo_partition_stats_destroy(&s);
  return v;
}

/* Runs gpmetis on g and returns its part vector. */
static int32_t *gpmetis(const halo_graph *g, const char *dir, int32_t parts, int64_t seed,
                        int32_t ufactor, const char *objtype) {
  char path[512], *out = NULL;
  snprintf(path, sizeof path, "%s/graph.metis", dir);
  cr_assert_eq(halo_partition_write_metis(g, path), HALO_OK);
  int rc = pt_run(&out, "gpmetis -ptype=kway -seed=%lld -ufactor=%d -objtype=%s %s %d",
                  (long long)seed, ufactor, objtype, path, parts);
  cr_assert_eq(rc, 0, "gpmetis failed:\n%s", out);
  free(out);
  char part_path[600];
  snprintf(part_path, sizeof part_path, "%s.part.%d", path, parts);
  FILE *f = fopen(part_path, "r");
  cr_assert_not_null(f, "gpmetis wrote no %s", part_path);
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  for (int64_t v = 0; v < g->n; v++)
    cr_assert_eq(fscanf(f, "%d", &part[v]), 1, "%s: line %lld", part_path, (long long)v + 1);
  fclose(f);
  remove(part_path);
  remove(path);
  return part;
}

static void compare(halo_graph *g, const char *name, int32_t parts, int64_t seed, int32_t ufactor,
                    halo_objective objective) {
  char *dir = pt_temp_dir("metis");
  const char *objtype = halo_objective_name(objective);
  int32_t *ref = gpmetis(g, dir, parts, seed, ufactor, objtype);
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = parts;
  opt.seed = seed;
  opt.ufactor = ufactor;
  opt.objective = objective;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  cr_assert_eq(halo_partition_metis(g, &opt, part), HALO_OK);
  int64_t same = 0;
  for (int64_t v = 0; v < g->n; v++) same += part[v] == ref[v];
  int64_t cut = pt_edge_cut(g, part), ref_cut = pt_edge_cut(g, ref);
  int64_t vol = comm_volume(g, part, parts), ref_vol = comm_volume(g, ref, parts);
  fprintf(stderr,
          "%s P=%d seed=%lld ufactor=%d %s: cut %lld (gpmetis %lld), volume %lld (gpmetis %lld), "
          "%lld of %lld nodes in the same part\n",
          name, parts, (long long)seed, ufactor, objtype, (long long)cut, (long long)ref_cut,
          (long long)vol, (long long)ref_vol, (long long)same, (long long)g->n);
  cr_expect_leq(llabs(cut - ref_cut) * 100, ref_cut, "%s P=%d: edge cut %lld vs gpmetis %lld", name,
                parts, (long long)cut, (long long)ref_cut);
  if (objective == HALO_OBJECTIVE_VOL)
    cr_expect_leq(llabs(vol - ref_vol) * 100, ref_vol, "%s P=%d: volume %lld vs gpmetis %lld", name,
                  parts, (long long)vol, (long long)ref_vol);
  free(part);
  free(ref);
  pt_remove_tree(dir);
  free(dir);
}

Test(metis, cora_matches_gpmetis) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  for (int32_t parts = 2; parts <= 4; parts++) compare(g, "cora", parts, 1, 30, HALO_OBJECTIVE_CUT);
  compare(g, "cora", 8, 17, 100, HALO_OBJECTIVE_CUT);
  compare(g, "cora", 4, 5, 30, HALO_OBJECTIVE_VOL);
  halo_graph_destroy(&g);
}

Test(metis, random_graph_matches_gpmetis) {
  uint64_t seed = pt_seed("metis.random_graph_matches_gpmetis", 4242);
  halo_graph *g = pt_graph_random(3000, 15000, seed);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  compare(g, "random", 3, (int64_t)(seed % 1000), 30, HALO_OBJECTIVE_CUT);
  compare(g, "random", 6, 2, 50, HALO_OBJECTIVE_VOL);
  halo_graph_destroy(&g);
}

Test(metis, beats_random_on_cora_by_3x) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  opt.parts = 4;
  int32_t *metis = calloc((size_t)g->n, sizeof *metis),
          *random = calloc((size_t)g->n, sizeof *random);
  cr_assert_eq(halo_partition_metis(g, &opt, metis), HALO_OK);
  cr_assert_eq(halo_partition_random(g, &opt, random), HALO_OK);
  int64_t vm = comm_volume(g, metis, 4), vr = comm_volume(g, random, 4);
  fprintf(stderr, "cora P=4: comm_volume metis %lld, random %lld (%.2fx)\n", (long long)vm,
          (long long)vr, (double)vr / (double)vm);
  cr_expect_geq(vr, 3 * vm, "METIS volume %lld is not 3x below random's %lld", (long long)vm,
                (long long)vr);
  free(metis);
  free(random);
  halo_graph_destroy(&g);
}

Test(metis, one_part_and_idx_limit) {
  halo_graph *g = pt_graph_cora();
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  halo_partition_options opt = HALO_PARTITION_OPTIONS_INIT;
  int32_t *part = calloc((size_t)g->n, sizeof *part);
  for (int64_t v = 0; v < g->n; v++) part[v] = -1;
  cr_assert_eq(halo_partition_metis(g, &opt, part), HALO_OK);
  for (int64_t v = 0; v < g->n; v++) cr_assert_eq(part[v], 0);
  free(part);
  halo_graph_destroy(&g);

  /* A graph beyond the 32-bit idx_t: refused before any array is touched. */
  halo_graph big = {.n = (int64_t)INT32_MAX + 5, .m = 10};
  snprintf(big.source, sizeof big.source, "big");
  opt.parts = 2;
  halo_log_set_quiet(1);
  cr_expect_eq(halo_partition_metis(&big, &opt, NULL), HALO_ERR_LIMIT);
  big.n = 10;
  big.m = (int64_t)INT32_MAX * 2;
  cr_expect_eq(halo_partition_metis(&big, &opt, NULL), HALO_ERR_LIMIT);
  halo_log_set_quiet(0);
}
