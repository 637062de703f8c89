/* --halo-precision end to end (docs/train.md): the real halo-partition and
 * halo-train on the bundled Cora at P=2.  In every precision the bytes
 * measured equal the bytes predicted every epoch and layer (the summary's
 * epochs_off_prediction counts both), halo-partition predicts the same,
 * the packed modes move fewer bytes than fp32, a short run's test accuracy
 * stays within a few points of fp32's, a run repeats bit for bit, and the
 * refusals and the resume warning are one line each.  (The packing itself
 * against a double reference: tests/kernels/test-halo-pack.c.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

enum { EPOCHS = 40 };

static const char *const modes[][2] = {
    /* forward, backward */
    {"fp32", "fp32"}, {"bf16", "bf16"}, {"fp16", "fp16"}, {"int8", "int8"},
    {"int4", "int4"}, {"int2", "int2"}, {"int8", "bf16"},
};
#define NMODES ((int)(sizeof modes / sizeof modes[0]))

Test(halo_precision, bytes_predicted_accuracy_and_repeats, .timeout = 600) {
  char *dir = tr_tmpdir("halo-precision");
  char shards[512], json[600], path[700], extra[256], flags[256];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  double fp32_bytes = 0.0, fp32_acc = 0.0;
  for (int k = 0; k < NMODES; k++) {
    snprintf(path, sizeof path, "%s/%s-%s.jsonl", dir, modes[k][0], modes[k][1]);
    snprintf(extra, sizeof extra, "--epochs %d --seed 3 --halo-precision %s --halo-precision-bwd %s",
             EPOCHS, modes[k][0], modes[k][1]);
    train(2, shards, extra, path);
    metrics m;
    read_metrics(path, &m);
    cr_assert_eq(m.epochs, EPOCHS);
    for (int e = 0; e < EPOCHS; e++)
      cr_expect_eq(m.halo[e], m.predicted[e], "%s/%s epoch %d: %.0f bytes, %.0f predicted",
                   modes[k][0], modes[k][1], e + 1, m.halo[e], m.predicted[e]);
    char *sum = summary_line(path);
    cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0,
                 "%s/%s: an epoch's layer bytes are off their prediction", modes[k][0], modes[k][1]);
    if (k == 0) {
      fp32_bytes = m.halo[0];
      fp32_acc = m.final_test;
      cr_expect_eq(tr_json_num(sum, "halo_bytes_fp32_per_epoch"), fp32_bytes);
    } else {
      cr_expect_lt(m.halo[0], fp32_bytes, "%s/%s moves %.0f bytes, fp32 %.0f", modes[k][0],
                   modes[k][1], m.halo[0], fp32_bytes);
      cr_expect_eq(tr_json_num(sum, "halo_bytes_fp32_per_epoch"), fp32_bytes);
      /* A short run: the rounding noise may move a few test nodes. */
      cr_expect(fabs(m.final_test - fp32_acc) <= 0.03, "%s/%s: test accuracy %.3f, fp32 %.3f",
                modes[k][0], modes[k][1], m.final_test, fp32_acc);
    }
    free(sum);
    /* halo-partition predicts the same bytes for the same flags. */
    if (k == 3 || k == NMODES - 1) {
      char pshards[600], pjson[700];
      snprintf(pshards, sizeof pshards, "%s/predict-%d", dir, k);
      snprintf(pjson, sizeof pjson, "%s.json", pshards);
      snprintf(flags, sizeof flags, "1433,16,7 --halo-precision %s --halo-precision-bwd %s",
               modes[k][0], modes[k][1]);
      partition(CORA, 2, "metis", flags, pshards, pjson);
      cr_expect_eq(json_figure(pjson, "predicted_halo_bytes_per_epoch"), m.predicted[0],
                   "%s/%s: halo-partition predicts %.0f, halo-train %.0f", modes[k][0], modes[k][1],
                   json_figure(pjson, "predicted_halo_bytes_per_epoch"), m.predicted[0]);
    }
  }
  /* The keyed rounding repeats bit for bit. */
  run_report a, b;
  snprintf(path, sizeof path, "%s/int8-int8.jsonl", dir);
  read_report(path, &a);
  snprintf(path, sizeof path, "%s/int8-again.jsonl", dir);
  snprintf(extra, sizeof extra, "--epochs %d --seed 3 --halo-precision int8 --halo-precision-bwd int8",
           EPOCHS);
  train(2, shards, extra, path);
  read_report(path, &b);
  expect_bit_identical(&a, &b, "int8 run twice");
  tr_rmdir(dir);
}

/* SAGE and GIN exchange once per direction and layer too: their packed
 * bytes are predicted exactly (a short run: the bytes are the point). */
Test(halo_precision, sage_and_gin_bytes_predicted, .timeout = 300) {
  char *dir = tr_tmpdir("halo-precision-models");
  char shards[512], json[600], path[700], extra[256];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,32,7", shards, json);
  const char *models[] = {"--model sage --hidden 32", "--model gin --hidden 32 --layers 3",
                          "--hidden 32 --layers 3 --residual --norm layer"};
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/model-%d.jsonl", dir, k);
    snprintf(extra, sizeof extra, "%s --epochs 4 --halo-precision int4 --halo-precision-bwd fp16",
             models[k]);
    train(2, shards, extra, path);
    char *sum = summary_line(path);
    cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0, "%s: bytes off the prediction",
                 models[k]);
    cr_expect_lt(tr_json_num(sum, "halo_bytes_predicted_per_epoch"),
                 tr_json_num(sum, "halo_bytes_fp32_per_epoch"), "%s", models[k]);
    free(sum);
  }
  tr_rmdir(dir);
}

/* Refusals are one line naming the flag; a resume in another precision
 * warns, naming the flag and both values. */
Test(halo_precision, refusals_and_resume_warning, .timeout = 300) {
  char *dir = tr_tmpdir("halo-precision-refuse");
  char shards[512], json[600], out[700], ckpt[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(out, sizeof out, "%s/out.txt", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const char *bad[] = {"--halo-precision int3", "--model gat --halo-precision-bwd int8"};
  for (int k = 0; k < 2; k++) {
    int rc = tr_mpirun(2, 120, out, "%s %s --epochs 2 %s", TRAIN_BIN, shards, bad[k]);
    cr_expect_neq(rc, 0, "%s was accepted", bad[k]);
    char *text = tr_slurp(out);
    cr_assert(text);
    cr_expect_geq(tr_count_lines(text, "error: --halo-precision"), 1, "%s: %s", bad[k], text);
    free(text);
  }
  int rc = tr_mpirun(2, 120, out, "%s %s --epochs 2 --quiet --checkpoint %s --checkpoint-every 2",
                     TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  rc = tr_mpirun(2, 120, out, "%s %s --epochs 3 --checkpoint %s --resume --halo-precision int4",
                 TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  char *text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "--halo-precision fp32 (this run: int4)"), 1, "%s", text);
  free(text);
  tr_rmdir(dir);
}
