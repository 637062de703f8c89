/* K parts on P <= K ranks (docs/train.md, "Any number of ranks"): Cora
 * partitioned once into 4 parts trains at P = 1, 2, 3 and 4 with
 * --deterministic to the same losses and parameters, bit for bit, as a
 * 1-part partition of it (the oracle: no grouping, no halo at all), also
 * across a checkpoint taken on 4 ranks and resumed on 3, and at
 * every P the halo bytes measured equal the prediction for that grouping;
 * a float run at P = 2 from the 4 parts meets its own prediction too, and
 * halo-partition's "by_ranks" prediction of it.  The grouping itself is
 * checked against hand-worked and drawn cases. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo-shard.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"
#define EPOCHS 20

static void expect_bytes_predicted(const metrics *m, const char *what) {
  cr_assert_gt(m->epochs, 0, "%s: no epochs", what);
  for (int e = 0; e < m->epochs; e++)
    cr_assert_eq(m->halo[e], m->predicted[e], "%s: epoch %d moved %.0f halo bytes, predicted %.0f",
                 what, e + 1, m->halo[e], m->predicted[e]);
}

Test(any_p, cora_4_parts_on_1_to_4_ranks, .timeout = 600) {
  char *dir = tr_tmpdir("any-p");
  char one[512], four[512], path[600], what[96], log[600];
  snprintf(one, sizeof one, "%s/cora-1", dir);
  snprintf(four, sizeof four, "%s/cora-4", dir);
  const char *outs[2] = {one, four};
  for (int i = 0; i < 2; i++) {
    snprintf(log, sizeof log, "%s.partition.log", outs[i]);
    int rc =
        tr_run(120, log, "%s --input '%s' --parts %d --out '%s' --dims 1433,16,7 --json '%s.json'",
               PARTITION_BIN, CORA, i ? 4 : 1, outs[i], outs[i]);
    cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
  }
  char extra[800];
  snprintf(extra, sizeof extra, "--deterministic --epochs %d", EPOCHS);
  run_report oracle, r;
  snprintf(path, sizeof path, "%s/one.jsonl", dir);
  train(1, one, extra, path);
  read_report(path, &oracle);
  for (int np = 1; np <= 4; np++) {
    snprintf(path, sizeof path, "%s/four-np%d.jsonl", dir, np);
    train(np, four, extra, path);
    read_report(path, &r);
    cr_assert_eq(r.m.epochs, EPOCHS);
    snprintf(what, sizeof what, "4 parts on %d rank%s against 1 part", np, np > 1 ? "s" : "");
    expect_bit_identical(&oracle, &r, what);
    expect_bytes_predicted(&r.m, what);
  }
  /* A checkpoint of 4 ranks resumed on 3, from the same 4 parts. */
  char ck[600];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(extra, sizeof extra, "--deterministic --epochs %d --checkpoint '%s'", EPOCHS / 2, ck);
  snprintf(path, sizeof path, "%s/first-half.jsonl", dir);
  train(4, four, extra, path);
  snprintf(extra, sizeof extra, "--deterministic --epochs %d --checkpoint '%s' --resume", EPOCHS,
           ck);
  snprintf(path, sizeof path, "%s/second-half.jsonl", dir);
  train(3, four, extra, path);
  read_resumed_report(path, &r);
  cr_assert_eq(r.m.epochs, EPOCHS - EPOCHS / 2);
  for (int e = 0; e < r.m.epochs; e++)
    cr_assert_eq(r.m.loss[e], oracle.m.loss[EPOCHS / 2 + e], "resumed on 3 ranks: epoch %d's loss",
                 EPOCHS / 2 + e + 1);
  cr_assert_str_eq(r.sha, oracle.sha,
                   "4 parts, resumed from 4 ranks on 3: params_sha256 %s, not %s", r.sha,
                   oracle.sha);
  /* Float (no --deterministic): its own grouping's prediction still holds,
   * and it moves less than the 4-rank run, rows inside a group no longer
   * crossing. */
  metrics f2, f4;
  snprintf(extra, sizeof extra, "--epochs 5");
  snprintf(path, sizeof path, "%s/float-np2.jsonl", dir);
  train(2, four, extra, path);
  read_metrics(path, &f2);
  expect_bytes_predicted(&f2, "4 parts on 2 ranks, float");
  snprintf(path, sizeof path, "%s/float-np4.jsonl", dir);
  train(4, four, extra, path);
  read_metrics(path, &f4);
  cr_assert_lt(f2.halo[0], f4.halo[0], "2 ranks moved %.0f bytes, 4 ranks %.0f", f2.halo[0],
               f4.halo[0]);
  /* halo-partition predicted both before any training ("by_ranks"). */
  snprintf(path, sizeof path, "%s.json", four);
  char *json = tr_slurp(path);
  cr_assert(json, "cannot read %s", path);
  const metrics *runs[2] = {&f2, &f4};
  for (int i = 0; i < 2; i++) {
    char key[32];
    snprintf(key, sizeof key, "{\"ranks\": %d,", i ? 4 : 2);
    const char *at = strstr(json, key);
    cr_assert(at, "%s: no by_ranks entry %s", path, key);
    const double predicted = tr_json_num(at, "predicted_halo_bytes_per_epoch");
    cr_assert_eq(runs[i]->halo[0], predicted, "%s: P = %d predicted %.0f bytes, moved %.0f", path,
                 i ? 4 : 2, predicted, runs[i]->halo[0]);
  }
  free(json);
  tr_rmdir(dir);
}

/* Contiguous groups whose node sums come closest to g/P of the total. */
Test(any_p, grouping_by_hand) {
  int32_t g[8];
  const int64_t even[4] = {10, 10, 10, 10};
  cr_assert_eq(halo_shard_group(even, NULL, 4, 2, g), HALO_OK);
  cr_assert(g[0] == 0 && g[1] == 0 && g[2] == 1 && g[3] == 1);
  cr_assert_eq(halo_shard_group(even, NULL, 4, 3, g), HALO_OK);
  /* Goals 13 and 26: 10 is nearer 13 than 20 is, 30 nearer 26 than 20. */
  cr_assert(g[0] == 0 && g[1] == 1 && g[2] == 1 && g[3] == 2, "got %d %d %d %d", g[0], g[1], g[2],
            g[3]);
  /* A heavy first part takes a group alone; every group keeps one part. */
  const int64_t heavy[4] = {100, 1, 1, 1};
  cr_assert_eq(halo_shard_group(heavy, NULL, 4, 3, g), HALO_OK);
  cr_assert(g[0] == 0 && g[1] == 1 && g[2] == 2 && g[3] == 2);
  cr_assert_eq(halo_shard_group(heavy, NULL, 4, 4, g), HALO_OK);
  for (int p = 0; p < 4; p++) cr_assert_eq(g[p], p);
  cr_assert_eq(halo_shard_group(heavy, NULL, 4, 1, g), HALO_OK);
  for (int p = 0; p < 4; p++) cr_assert_eq(g[p], 0);
  halo_log_set_quiet(1);
  cr_assert_eq(halo_shard_group(heavy, NULL, 4, 5, g), HALO_ERR_ARG);
  halo_log_set_quiet(0);
}

/* With the rows between parts, the grouping follows the quotient graph:
 * parts 0 and 2 exchange the most, then 1 and 3, so {0, 2} and {1, 3},
 * not the contiguous {0, 1} and {2, 3}. */
Test(any_p, grouping_follows_the_cut) {
  int32_t g[4];
  const int64_t even[4] = {10, 10, 10, 10};
  const int64_t between[16] = {0,  1,  50, 0,  /* part 0 sends */
                               1,  0,  0,  40, /* part 1 */
                               60, 0,  0,  2,  /* part 2 */
                               0,  30, 2,  0 /* part 3 */};
  cr_assert_eq(halo_shard_group(even, between, 4, 2, g), HALO_OK);
  cr_assert(g[0] == 0 && g[1] == 1 && g[2] == 0 && g[3] == 1, "got %d %d %d %d", g[0], g[1], g[2],
            g[3]);
  cr_assert_eq(halo_shard_group_cut(between, 4, g), 6);
  /* A merge that would make a group larger than the contiguous grouping's
   * largest is not taken: {0, 2} would hold 60 nodes, the contiguous {0, 1}
   * and {2, 3} hold 31 each. */
  const int64_t lopsided[4] = {30, 1, 30, 1};
  cr_assert_eq(halo_shard_group(lopsided, between, 4, 2, g), HALO_OK);
  int32_t contiguous[4];
  cr_assert_eq(halo_shard_group(lopsided, NULL, 4, 2, contiguous), HALO_OK);
  for (int p = 0; p < 4; p++) cr_assert_eq(g[p], contiguous[p], "part %d", p);
}

/* Drawn quotient graphs: every group non-empty and numbered by its lowest
 * part, no group larger and no cut larger than the contiguous grouping's,
 * the same answer twice. */
Test(any_p, grouping_drawn) {
  const unsigned seed = (unsigned)tr_seed("any_p.grouping_drawn", 0x9a0c);
  srand(seed);
  for (int trial = 0; trial < 200; trial++) {
    const int32_t parts = 2 + rand() % 30, groups = 1 + rand() % parts;
    int64_t owned[32], between[32 * 32], size[32], largest = 0, largest_c = 0;
    int32_t g[32], again[32], c[32];
    for (int32_t p = 0; p < parts; p++) owned[p] = 1 + rand() % 100;
    for (int32_t i = 0; i < parts * parts; i++) between[i] = rand() % 4 ? 0 : rand() % 1000;
    for (int32_t p = 0; p < parts; p++) between[p * parts + p] = 0;
    cr_assert_eq(halo_shard_group(owned, between, parts, groups, g), HALO_OK);
    cr_assert_eq(halo_shard_group(owned, between, parts, groups, again), HALO_OK);
    cr_assert_eq(halo_shard_group(owned, NULL, parts, groups, c), HALO_OK);
    int32_t next = 0;
    for (int32_t k = 0; k < groups; k++) size[k] = 0;
    for (int32_t p = 0; p < parts; p++) {
      cr_assert_eq(g[p], again[p], "seed %u trial %d: not deterministic", seed, trial);
      cr_assert(g[p] >= 0 && g[p] < groups && g[p] <= next, "seed %u trial %d: part %d in group %d",
                seed, trial, p, g[p]);
      if (g[p] == next) next++;
      size[g[p]] += owned[p];
    }
    cr_assert_eq(next, groups, "seed %u trial %d: %d of %d groups used", seed, trial, next, groups);
    for (int32_t k = 0; k < groups; k++) largest = size[k] > largest ? size[k] : largest;
    for (int32_t k = 0; k < groups; k++) size[k] = 0;
    for (int32_t p = 0; p < parts; p++) size[c[p]] += owned[p];
    for (int32_t k = 0; k < groups; k++) largest_c = size[k] > largest_c ? size[k] : largest_c;
    cr_assert_leq(largest, largest_c, "seed %u trial %d", seed, trial);
    cr_assert_leq(halo_shard_group_cut(between, parts, g), halo_shard_group_cut(between, parts, c),
                  "seed %u trial %d", seed, trial);
  }
}
