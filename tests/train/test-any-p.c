/* K parts on P <= K ranks (docs/train.md, "Any number of ranks"): Cora
 * partitioned once into 4 parts trains at P = 1, 2, 3 and 4 with
 * --deterministic to the same losses and parameters, bit for bit, as a
 * 1-part partition of it (the oracle: no grouping, no halo at all), also
 * across a checkpoint taken on 4 ranks and resumed on 3, and at
 * every P the halo bytes measured equal the prediction for that grouping;
 * a float run at P = 2 from the 4 parts meets its own prediction too.  The
 * grouping itself is checked against hand-worked cases. */
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
    cr_assert_eq(m->halo[e], m->predicted[e],
                 "%s: epoch %d moved %.0f halo bytes, predicted %.0f", what, e + 1, m->halo[e],
                 m->predicted[e]);
}

Test(any_p, cora_4_parts_on_1_to_4_ranks, .timeout = 600) {
  char *dir = tr_tmpdir("any-p");
  char one[512], four[512], path[600], what[96], log[600];
  snprintf(one, sizeof one, "%s/cora-1", dir);
  snprintf(four, sizeof four, "%s/cora-4", dir);
  const char *outs[2] = {one, four};
  for (int i = 0; i < 2; i++) {
    snprintf(log, sizeof log, "%s.partition.log", outs[i]);
    int rc = tr_run(120, log, "%s --input '%s' --parts %d --out '%s'", PARTITION_BIN, CORA,
                    i ? 4 : 1, outs[i]);
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
  cr_assert_str_eq(r.sha, oracle.sha, "4 parts, resumed from 4 ranks on 3: params_sha256 %s, not %s",
                   r.sha, oracle.sha);
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
  tr_rmdir(dir);
}

/* Contiguous groups whose node sums come closest to g/P of the total. */
Test(any_p, grouping_by_hand) {
  int32_t g[8];
  const int64_t even[4] = {10, 10, 10, 10};
  cr_assert_eq(halo_shard_group(even, 4, 2, g), HALO_OK);
  cr_assert(g[0] == 0 && g[1] == 0 && g[2] == 1 && g[3] == 1);
  cr_assert_eq(halo_shard_group(even, 4, 3, g), HALO_OK);
  /* Goals 13 and 26: 10 is nearer 13 than 20 is, 30 nearer 26 than 20. */
  cr_assert(g[0] == 0 && g[1] == 1 && g[2] == 1 && g[3] == 2, "got %d %d %d %d", g[0], g[1],
            g[2], g[3]);
  /* A heavy first part takes a group alone; every group keeps one part. */
  const int64_t heavy[4] = {100, 1, 1, 1};
  cr_assert_eq(halo_shard_group(heavy, 4, 3, g), HALO_OK);
  cr_assert(g[0] == 0 && g[1] == 1 && g[2] == 2 && g[3] == 2);
  cr_assert_eq(halo_shard_group(heavy, 4, 4, g), HALO_OK);
  for (int p = 0; p < 4; p++) cr_assert_eq(g[p], p);
  cr_assert_eq(halo_shard_group(heavy, 4, 1, g), HALO_OK);
  for (int p = 0; p < 4; p++) cr_assert_eq(g[p], 0);
  halo_log_set_quiet(1);
  cr_assert_eq(halo_shard_group(heavy, 4, 5, g), HALO_ERR_ARG);
  halo_log_set_quiet(0);
}
