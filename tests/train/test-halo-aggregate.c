/* --halo-aggregate auto end to end (docs/train.md, "Pre- and
 * post-aggregation"): the real halo-partition and halo-train on the bundled
 * Cora at P = 2 and P = 4.  Each pair's cut crosses as a minimum vertex
 * cover, rows and partial sums: the losses equal post's to float rounding
 * (1e-5 relative), the bytes measured equal the bytes predicted every epoch
 * and layer, they are never more than post's, the plain fp32 bytes are
 * reported beside them, and halo-partition predicts the same figure from
 * the whole graph (its own count of each pair's maximum matching).  The
 * refusals are one line each.  With int8 rows and stale slots (alone and
 * together) the covers still cross with the bytes predicted every epoch.
 * (The cover itself against an exhaustive search: tests/core/test-cover.c;
 * a stale slot holding a cover's rows, epoch by epoch:
 * tests/train/test-halo-stale.c.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

enum { EPOCHS = 10 };

static const char *const models[] = {"", "--model sage", "--model gin --hidden 16"};

/* models[first] at P parts (halo-partition predicts for it), then
 * models[second] (-1: none). */
static void check_parts(int parts, int first, int second) {
  const int which[2] = {first, second};
  char *dir = tr_tmpdir("halo-aggregate");
  char shards[512], json[600], path[2][700], extra[256], dims[128];
  snprintf(shards, sizeof shards, "%s/cora-%d", dir, parts);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(dims, sizeof dims, "1433,16,7 --halo-aggregate auto %s", models[first]);
  partition(CORA, parts, "metis", dims, shards, json);
  for (int w = 0; w < 2 && which[w] >= 0; w++) {
    const int k = which[w];
    metrics m[2];
    for (int mode = 0; mode < 2; mode++) {
      snprintf(path[mode], sizeof path[mode], "%s/model-%d-%s.jsonl", dir, k,
               mode ? "auto" : "post");
      snprintf(extra, sizeof extra, "%s --epochs %d --seed 3 --halo-aggregate %s", models[k],
               EPOCHS, mode ? "auto" : "post");
      train(parts, shards, extra, path[mode]);
      read_metrics(path[mode], &m[mode]);
      cr_assert_eq(m[mode].epochs, EPOCHS);
      for (int e = 0; e < EPOCHS; e++)
        cr_expect_eq(m[mode].halo[e], m[mode].predicted[e],
                     "P=%d %s %s epoch %d: %.0f bytes, %.0f predicted", parts, models[k],
                     mode ? "auto" : "post", e + 1, m[mode].halo[e], m[mode].predicted[e]);
    }
    int at = 0;
    const double worst = worst_loss_difference(&m[0], &m[1], EPOCHS, &at);
    cr_expect(worst <= 1e-5, "P=%d %s: auto's loss is %.3g off post's (relative) at epoch %d",
              parts, models[k], worst, at);
    cr_expect_leq(m[1].halo[0], m[0].halo[0], "P=%d %s: auto moves %.0f bytes, post %.0f", parts,
                  models[k], m[1].halo[0], m[0].halo[0]);
    char *sum = summary_line(path[1]);
    cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0, "P=%d %s: layer bytes off", parts,
                 models[k]);
    cr_expect_eq(tr_json_num(sum, "halo_bytes_fp32_per_epoch"), m[0].halo[0],
                 "P=%d %s: the plain fp32 bytes are post's", parts, models[k]);
    cr_expect_leq(tr_json_num(sum, "halo_rows_exchanged"), tr_json_num(sum, "halo_rows"));
    free(sum);
    if (w == 0) /* the prediction halo-partition printed for this model */
      cr_expect_eq(json_figure(json, "predicted_halo_bytes_per_epoch"), m[1].predicted[0],
                   "P=%d: halo-partition predicts %.0f, halo-train %.0f", parts,
                   json_figure(json, "predicted_halo_bytes_per_epoch"), m[1].predicted[0]);
  }
  cr_expect_lt(json_figure(json, "predicted_halo_rows_per_exchange"),
               json_figure(json, "comm_volume"), "Cora at P=%d: the covers save rows", parts);
  tr_rmdir(dir);
}

/* SAGE (its backward matrix is the mean's transpose) at P = 2; GCN and
 * GIN's sum at P = 4. */
Test(halo_aggregate, equals_post_with_predicted_bytes_p2, .timeout = 300) { check_parts(2, 1, -1); }

Test(halo_aggregate, equals_post_with_predicted_bytes_p4, .timeout = 300) { check_parts(4, 0, 2); }

/* A hand-checked cut: nodes 0..5 in blocks {0, 1, 2} and {3, 4, 5}, with
 * the star 0-3, 0-4, 0-5 across.  Post sends 1 row one way (node 0) and 3
 * the other (3, 4 and 5); the star's centre covers the cut, so auto sends
 * node 0's row to part 1 and part 1's partial sum of 3, 4 and 5 for node 0
 * to part 0: 2 rows for 4. */
Test(halo_aggregate, star_cut_by_hand, .timeout = 120) {
  char *dir = tr_tmpdir("halo-aggregate-star");
  char edges[512], shards[600], json[700], dims[256], path[2][700];
  snprintf(edges, sizeof edges, "%s/star.txt", dir);
  FILE *f = fopen(edges, "w");
  cr_assert(f);
  fputs("0 3\n0 4\n0 5\n1 2\n3 4\n1 0\n", f);
  fclose(f);
  snprintf(shards, sizeof shards, "%s/star-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(dims, sizeof dims,
           "4,3,2 --halo-aggregate auto --synthetic-features 4 --synthetic-classes 2 "
           "--synthetic-split 0.5,0.25,0.25");
  partition(edges, 2, "block", dims, shards, json);
  cr_expect_eq(json_figure(json, "comm_volume"), 4.0);
  cr_expect_eq(json_figure(json, "predicted_halo_rows_per_exchange"), 2.0);
  metrics m[2];
  for (int mode = 0; mode < 2; mode++) {
    snprintf(path[mode], sizeof path[mode], "%s/%s.jsonl", dir, mode ? "auto" : "post");
    train(2, shards, mode ? "--epochs 5 --halo-aggregate auto" : "--epochs 5", path[mode]);
    read_metrics(path[mode], &m[mode]);
    for (int e = 0; e < m[mode].epochs; e++) cr_expect_eq(m[mode].halo[e], m[mode].predicted[e]);
  }
  char *sum = summary_line(path[1]);
  cr_expect_eq(tr_json_num(sum, "halo_rows"), 4.0);
  cr_expect_eq(tr_json_num(sum, "halo_rows_exchanged"), 2.0);
  cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0);
  free(sum);
  cr_expect_eq(2.0 * m[1].halo[0], m[0].halo[0], "auto %.0f bytes, post %.0f", m[1].halo[0],
               m[0].halo[0]);
  int at = 0;
  cr_expect_leq(worst_loss_difference(&m[0], &m[1], 5, &at), 1e-5, "epoch %d", at);
  tr_rmdir(dir);
}

/* The modes compose (docs/train.md, "Communication modes together"), GCN
 * on Cora, 6 epochs each, the pairs at P = 2 and the triple at P = 4:
 *   - auto + int8 against post + int8: close, not equal.  Both round with
 *     keyed draws, but a partial sum is rounded once, as a sum, where post
 *     rounds each of its terms, so the halo inputs differ by up to an int8
 *     step (1/255 of a row's range) per boundary term; over 8 epochs the
 *     training loss stays within 1e-3 relative (measured at P = 2: 8.7e-5), a
 *     bound far above fp32 rounding (1e-7) and far below what a wrong row
 *     would do (a dropped or doubled partial sum moves the loss by 1e-2);
 *   - auto + stale against post + stale: the same messages one epoch late,
 *     just fewer of them, so equal to float rounding (1e-5, as fresh);
 *   - int8 + stale + auto at P = 4: every epoch's bytes equal halo-train's
 *     prediction and halo-partition's, below int8 post's. */
Test(halo_aggregate, composes_with_int8_and_stale_p4, .timeout = 300) {
  enum { E = 6 };
  char *dir = tr_tmpdir("halo-aggregate-compose");
  char shards[2][512], json[600], path[5][700], extra[300];
  snprintf(shards[0], sizeof shards[0], "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards[0]);
  partition(CORA, 2, "metis", "1433,16,7", shards[0], json);
  snprintf(shards[1], sizeof shards[1], "%s/cora-4", dir);
  snprintf(json, sizeof json, "%s.json", shards[1]);
  partition(CORA, 4, "metis",
            "1433,16,7 --halo-aggregate auto --halo-precision int8 --halo-precision-bwd int8 "
            "--halo-stale",
            shards[1], json);
  static const char *const modes[5] = {
      "--halo-aggregate post --halo-precision int8 --halo-precision-bwd int8",
      "--halo-aggregate auto --halo-precision int8 --halo-precision-bwd int8",
      "--halo-aggregate post --halo-stale",
      "--halo-aggregate auto --halo-stale",
      "--halo-aggregate auto --halo-precision int8 --halo-precision-bwd int8 --halo-stale"};
  metrics m[5];
  for (int k = 0; k < 5; k++) {
    snprintf(path[k], sizeof path[k], "%s/mode-%d.jsonl", dir, k);
    snprintf(extra, sizeof extra, "--epochs %d --seed 3 %s", E, modes[k]);
    train(k < 4 ? 2 : 4, shards[k < 4 ? 0 : 1], extra, path[k]);
    read_metrics(path[k], &m[k]);
    cr_assert_eq(m[k].epochs, E, "%s", modes[k]);
    for (int e = 0; e < E; e++)
      cr_expect_eq(m[k].halo[e], m[k].predicted[e], "%s, epoch %d: %.0f bytes, %.0f predicted",
                   modes[k], e + 1, m[k].halo[e], m[k].predicted[e]);
    char *sum = summary_line(path[k]);
    cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0, "%s: layer bytes off", modes[k]);
    free(sum);
  }
  int at = 0;
  double worst = worst_loss_difference(&m[0], &m[1], E, &at);
  cr_log_info("auto + int8 against post + int8: %.3g relative (epoch %d)", worst, at);
  cr_expect(worst <= 1e-3, "auto + int8 is %.3g off post + int8 (relative) at epoch %d", worst, at);
  cr_expect_lt(m[1].halo[0], m[0].halo[0]);
  worst = worst_loss_difference(&m[2], &m[3], E, &at);
  cr_expect(worst <= 1e-5, "auto + stale is %.3g off post + stale (relative) at epoch %d", worst,
            at);
  cr_expect_lt(m[3].halo[0], m[2].halo[0]);
  cr_expect_eq(json_figure(json, "predicted_halo_bytes_per_epoch"), m[4].predicted[0],
               "halo-partition predicts %.0f, halo-train %.0f",
               json_figure(json, "predicted_halo_bytes_per_epoch"), m[4].predicted[0]);
  char *sum = summary_line(path[4]);
  const double fp32 = tr_json_num(sum, "halo_bytes_fp32_per_epoch");
  free(sum);
  /* int8 post moves 0.424 of fp32 plain on Cora (benchmarks.md); the covers less. */
  cr_expect_lt(m[4].halo[0], 0.424 * fp32, "int8 + stale + auto moves %.0f bytes, fp32 plain %.0f",
               m[4].halo[0], fp32);
  cr_log_info("int8 + stale + auto at P=4: %.0f bytes an epoch, fp32 plain %.0f (%.3f)",
              m[4].halo[0], fp32, m[4].halo[0] / fp32);
  char *text = tr_slurp(path[4]);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "\"halo_exchange\": \"stale\""), E - 1, "%s", text);
  free(text);
  tr_rmdir(dir);
}

/* Each refusal is one line naming the flag; a resume in another mode warns. */
Test(halo_aggregate, refusals, .timeout = 300) {
  char *dir = tr_tmpdir("halo-aggregate-refuse");
  char shards[512], json[600], out[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(out, sizeof out, "%s/out.txt", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  /* Flag rules, checked before the shards are read: one rank is enough. */
  const char *bad[] = {"--model gat", "--deterministic", "--gcn-normalize false", "--device cuda"};
  const char *why[] = {"gat's attention", "bit-identical", "covers are built for",
                       "--device cpu only"};
  for (int k = 0; k < 4; k++) {
    int rc = tr_mpirun(1, 120, out, "%s %s --epochs 2 --halo-aggregate auto %s", TRAIN_BIN, shards,
                       bad[k]);
    cr_expect_neq(rc, 0, "%s was accepted", bad[k]);
    char *text = tr_slurp(out);
    cr_assert(text);
    cr_expect_eq(tr_count_lines(text, "error: --halo-aggregate auto: "), 1, "%s: %s", bad[k], text);
    cr_expect_geq(tr_count_lines(text, why[k]), 1, "%s: %s", bad[k], text);
    free(text);
  }
  int rc = tr_run(60, out, "%s --input '%s' --parts 2 --out '%s/x' --halo-aggregate auto",
                  PARTITION_BIN, CORA, dir);
  cr_expect_neq(rc, 0);
  char *text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "--halo-aggregate: it says what --dims predicts for"), 1, "%s",
               text);
  free(text);
  /* The checkpoint records the mode; a resume in the other one warns. */
  char ckpt[700];
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  rc = tr_mpirun(2, 120, out,
                 "%s %s --epochs 2 --quiet --checkpoint %s --checkpoint-every 2 "
                 "--halo-aggregate auto",
                 TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  rc = tr_mpirun(2, 120, out, "%s %s --epochs 3 --quiet --checkpoint %s --resume", TRAIN_BIN,
                 shards, ckpt);
  cr_assert_eq(rc, 0);
  text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "--halo-aggregate auto (this run: post)"), 1, "%s", text);
  free(text);
  tr_rmdir(dir);
}
