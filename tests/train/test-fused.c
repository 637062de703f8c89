/* The fused input dropout (docs/train.md, "Input dropout"): a dense X
 * multiplied by W first is masked block by block as the products read it,
 * its mask recomputed in the backward pass, instead of being copied whole.
 * The float path's products and --deterministic's exact sums read the same
 * keyed blocks, so on a graph whose rows span several blocks (2048
 * features: 512 rows a block; 1500 rows at P=1, 750 a rank at P=2) the
 * float path's losses at P=1 and P=2 agree with the exact path's to float
 * rounding every epoch, and so do the evaluations'.  A mask misplaced by
 * one block on one path only (a wrong row offset into the global ids)
 * would move them by far more.  That the fused exact sums equal the
 * dropped copy's bit for bit is test-backends' "fused input dropout"
 * case (the device-like backend makes the copy). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

/* The float path's flag: --no-deterministic where the float path is not the
 * default, else none. */
static const char *float_flag(const char *dir) {
  char help[600];
  snprintf(help, sizeof help, "%s/help.txt", dir);
  cr_assert_eq(tr_run(60, help, "%s --help", TRAIN_BIN), 0, "halo-train --help failed");
  char *text = tr_slurp(help);
  cr_assert(text, "no %s", help);
  const char *flag = strstr(text, "--no-deterministic") ? "--no-deterministic" : "";
  free(text);
  return flag;
}

Test(input_fused, float_path_matches_exact_path, .timeout = 300) {
  const uint64_t seed = tr_seed("input_fused.blocks", 3);
  char *dir = tr_tmpdir("input-fused");
  char spec[256], shards[2][512], json[600], path[3][600], extra[2][160];
  snprintf(spec, sizeof spec,
           "sbm:nodes=1500,classes=4,avg-degree=6,homophily=0.7,feat=2048,seed=%llu",
           (unsigned long long)seed);
  for (int k = 0; k < 2; k++) {
    snprintf(shards[k], sizeof shards[k], "%s/sbm-%d", dir, k + 1);
    snprintf(json, sizeof json, "%s.json", shards[k]);
    partition(spec, k + 1, "metis", "2048,16,4", shards[k], json);
  }
  const char *common = "--epochs 8 --hidden 16 --dropout 0.5 --input-dropout 0.5 --lr 0.02";
  snprintf(extra[0], sizeof extra[0], "%s %s", common, float_flag(dir));
  snprintf(extra[1], sizeof extra[1], "%s --deterministic", common);
  snprintf(path[0], sizeof path[0], "%s/fused-p1.jsonl", dir);
  snprintf(path[1], sizeof path[1], "%s/fused-p2.jsonl", dir);
  snprintf(path[2], sizeof path[2], "%s/exact-p1.jsonl", dir);
  train(1, shards[0], extra[0], path[0]);
  train(2, shards[1], extra[0], path[1]);
  train(1, shards[0], extra[1], path[2]);
  metrics m[3];
  for (int k = 0; k < 3; k++) read_metrics(path[k], &m[k]);
  for (int k = 0; k < 2; k++) {
    int at = 0;
    const double worst = worst_loss_difference(&m[2], &m[k], 8, &at);
    fprintf(stderr,
            "[input_fused] seed %llu: float path P=%d against the exact path: losses within %.2g "
            "(epoch %d)\n",
            (unsigned long long)seed, k + 1, worst, at);
    cr_expect_eq(m[k].epochs, 8);
    cr_expect_lt(worst, 1e-4, "seed %llu: fused P=%d: epoch %d's loss %.9g, the exact path's %.9g",
                 (unsigned long long)seed, k + 1, at, m[k].loss[at - 1], m[2].loss[at - 1]);
    cr_expect_lt(fabs(m[k].val_acc - m[2].val_acc), 0.01,
                 "seed %llu: fused P=%d: validation %.4f, exact path %.4f", (unsigned long long)seed,
                 k + 1, m[k].val_acc, m[2].val_acc);
  }
  tr_rmdir(dir);
}

/* The evaluation's ÂX (docs/train.md, "The evaluation keeps ÂX"): GCN,
 * GraphSAGE and GIN-0 (X + AX) with input dropout on a dense sbm graph,
 * --deterministic.
 * Cached at P=3 and at P=1: the same bits (training and evaluation).
 * Cached against --no-eval-cache at P=3: the same training bits, the
 * evaluation's losses equal to float rounding ((ÂX)·W rounds otherwise
 * than Â·(X·W)); the set-up exchange of X that halo-partition predicts
 * against none; and the evaluations' own halo bytes lower.  An evaluation
 * that multiplied X instead of ÂX, or lost the aggregation's halo rows,
 * would move its losses by far more than rounding. */
Test(eval_cache, matches_the_uncached_evaluation, .timeout = 300) {
  const uint64_t seed = tr_seed("eval_cache.sbm", 7);
  char *dir = tr_tmpdir("eval-cache");
  char spec[256], shards[2][512], json[2][600], path[3][600], extra[200];
  snprintf(spec, sizeof spec,
           "sbm:nodes=3000,classes=4,avg-degree=8,homophily=0.7,feat=48,seed=%llu",
           (unsigned long long)seed);
  const int parts[2] = {1, 3};
  for (int k = 0; k < 2; k++) {
    snprintf(shards[k], sizeof shards[k], "%s/sbm-%d", dir, parts[k]);
    snprintf(json[k], sizeof json[k], "%s/sbm-%d.json", dir, parts[k]);
    partition(spec, parts[k], "metis", "48,16,4", shards[k], json[k]);
  }
  const double want_setup = json_figure(json[1], "predicted_setup_halo_bytes_dropout");
  cr_assert_gt(want_setup, 0.0);
  static const char *models[] = {"gcn", "sage", "gin"};
  for (int k = 0; k < 3; k++) {
    run_report r[3];
    for (int run = 0; run < 3; run++) {
      snprintf(path[run], sizeof path[run], "%s/%s-%d.jsonl", dir, models[k], run);
      snprintf(extra, sizeof extra,
               "--model %s --epochs 6 --hidden 16 --input-dropout 0.5 --seed %llu "
               "--deterministic%s",
               models[k], (unsigned long long)seed, run == 2 ? " --no-eval-cache" : "");
      train(parts[run == 0 ? 0 : 1], shards[run == 0 ? 0 : 1], extra, path[run]);
      read_report(path[run], &r[run]);
    }
    char what[96];
    snprintf(what, sizeof what, "%s with the evaluation's ÂX: P=3 against P=1", models[k]);
    expect_bit_identical(&r[0], &r[1], what);
    for (int e = 0; e < r[0].m.epochs; e++)
      cr_expect(memcmp(&r[0].m.val_loss[e], &r[1].m.val_loss[e], sizeof(double)) == 0,
                "%s: epoch %d's validation loss %.17g at P=3, %.17g at P=1", models[k], e + 1,
                r[1].m.val_loss[e], r[0].m.val_loss[e]);
    cr_expect_str_eq(r[2].sha, r[1].sha, "%s: --no-eval-cache changed the training", models[k]);
    for (int e = 0; e < r[1].m.epochs; e++) {
      const double a = r[1].m.val_loss[e], b = r[2].m.val_loss[e];
      cr_expect(fabs(a - b) <= 1e-5 * fabs(b), "%s: epoch %d's validation loss %.9g, uncached %.9g",
                models[k], e + 1, a, b);
      cr_expect_lt(r[1].m.eval_halo[e], r[2].m.eval_halo[e],
                   "%s: epoch %d's evaluation sent %.0f bytes, uncached %.0f", models[k], e + 1,
                   r[1].m.eval_halo[e], r[2].m.eval_halo[e]);
    }
    cr_expect_eq(r[1].m.setup_bytes, want_setup, "%s: set-up bytes %.0f, predicted %.0f",
                 models[k], r[1].m.setup_bytes, want_setup);
    cr_expect_eq(r[2].m.setup_bytes, 0.0, "%s --no-eval-cache: set-up bytes %.0f", models[k],
                 r[2].m.setup_bytes);
  }
  tr_rmdir(dir);
}

/* Without dropout or BatchNorm a training step reuses the evaluation's
 * forward pass (halo_net_share_forward): every epoch evaluated (each step
 * but the first reuses one) against one evaluation at the end (none
 * reused), --deterministic at P=2 on Cora, for each model: the same
 * parameters bit for bit, the same losses every epoch, and every epoch's
 * halo bytes as predicted (halo-train fails the run otherwise); and the
 * reuse shows in the evaluations' own halo bytes. */
Test(shared_forward, steps_match_their_own_forward, .timeout = 300) {
  char *dir = tr_tmpdir("shared-forward");
  char shards[512], json[600], path[2][600], extra[200];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(HALO_DATASETS_DIR "/cora", 2, "metis", "1433,16,7", shards, json);
  static const char *models[] = {"gcn", "sage", "gin", "gat --attn-dropout 0"};
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    run_report r[2];
    for (int e = 0; e < 2; e++) {
      snprintf(path[e], sizeof path[e], "%s/m%zu-e%d.jsonl", dir, k, e);
      snprintf(extra, sizeof extra,
               "--model %s --epochs 12 --dropout 0 --input-dropout 0 --deterministic "
               "--eval-every %d",
               models[k], e ? 1000 : 1);
      train(2, shards, extra, path[e]);
      read_report(path[e], &r[e]);
    }
    char what[96];
    snprintf(what, sizeof what, "%s: every epoch evaluated against the last alone", models[k]);
    expect_bit_identical(&r[1], &r[0], what);
    /* The reuse happened: an evaluation whose forward pass the next step
     * took reports no halo bytes of its own; the last one, which no step
     * follows, its forward's. */
    char *text = tr_slurp(path[0]);
    cr_assert(text, "no %s", path[0]);
    int epoch = 0;
    for (const char *at = strstr(text, "\"eval_halo_bytes\": "); at;
         at = strstr(at + 1, "\"eval_halo_bytes\": ")) {
      const long long bytes = atoll(at + strlen("\"eval_halo_bytes\": "));
      if (++epoch < 12)
        cr_expect_eq(bytes, 0, "%s: epoch %d's evaluation sent %lld bytes, its forward unshared",
                     models[k], epoch, bytes);
      else
        cr_expect_gt(bytes, 0, "%s: the last evaluation sent nothing", models[k]);
    }
    cr_expect_eq(epoch, 12, "%s: %d evaluations", models[k], epoch);
    free(text);
  }
  tr_rmdir(dir);
}
