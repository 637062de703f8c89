/* --norm batch end to end (docs/models.md, "BatchNorm"): the real
 * halo-partition and halo-train on the bundled Cora under mpirun.
 *
 *  - GCN with BatchNorm trains the same function at P=1 and P=4 (METIS):
 *    losses within 1e-5 over every epoch, and the bytes each epoch sends
 *    equal the prediction (BatchNorm's allreduces carry no halo rows).
 *  - GIN with BatchNorm (in its MLP and after its hidden layer): float
 *    within 1e-5 over its first 7 epochs (GIN's curve amplifies rounding,
 *    test-models.c says why); with --deterministic, P=4 (checkpointed
 *    half way) then P=1 (resumed) is P=1 (2 threads) bit for bit: every
 *    loss, the final parameters and the test accuracy, which evaluation
 *    takes with the running statistics.
 * (Gradients and running statistics against the dense double reference:
 * test-train-layers.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

enum { EPOCHS = TEST_SANITIZED ? 20 : 100, DET_EPOCHS = TEST_SANITIZED ? 10 : 20 };

Test(batchnorm, cora_p1_p4_float_deterministic_and_resume, .timeout = 900) {
  char *dir = tr_tmpdir("batchnorm");
  char shards[2][512], json[1100], path[1200], extra[2048], ckpt[1100];
  static const int parts[2] = {1, 4};
  for (int i = 0; i < 2; i++) {
    snprintf(shards[i], sizeof shards[i], "%s/cora-%d", dir, parts[i]);
    snprintf(json, sizeof json, "%s.json", shards[i]);
    partition(CORA, parts[i], "metis", "1433,16,7 --model gcn", shards[i], json);
  }

  /* GCN: float, every epoch. */
  metrics *m = calloc(2, sizeof *m);
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/gcn-%d.jsonl", dir, parts[i]);
    snprintf(extra, sizeof extra, "--hidden 16 --norm batch --epochs %d --seed 3", EPOCHS);
    train(parts[i], shards[i], extra, path);
    read_metrics(path, &m[i]);
    cr_assert_eq(m[i].epochs, EPOCHS);
    for (int e = 0; e < EPOCHS; e++)
      cr_expect_eq(m[i].halo[e], m[i].predicted[e], "gcn P=%d epoch %d: %.0f bytes, %.0f predicted",
                   parts[i], e + 1, m[i].halo[e], m[i].predicted[e]);
  }
  int at = 0;
  double worst = worst_loss_difference(&m[0], &m[1], EPOCHS, &at);
  fprintf(stderr, "[batchnorm] gcn P=4: worst loss difference %.2e (epoch %d)\n", worst, at);
  cr_expect_leq(worst, 1e-5, "gcn --norm batch P=4: loss at epoch %d is %.9g, P=1 has %.9g", at,
                m[1].loss[at - 1], m[0].loss[at - 1]);

  /* GIN: float over 7 epochs. */
  const char *gin = "--model gin --hidden 32 --norm batch --seed 5";
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/gin-%d.jsonl", dir, parts[i]);
    snprintf(extra, sizeof extra, "%s --epochs 7", gin);
    train(parts[i], shards[i], extra, path);
    read_metrics(path, &m[i]);
  }
  worst = worst_loss_difference(&m[0], &m[1], 7, &at);
  fprintf(stderr, "[batchnorm] gin P=4: worst loss difference %.2e (epoch %d)\n", worst, at);
  cr_expect_leq(worst, 1e-5, "gin --norm batch P=4: loss at epoch %d is %.9g, P=1 has %.9g", at,
                m[1].loss[at - 1], m[0].loss[at - 1]);

  /* GIN, --deterministic: the whole run at P=1 on 2 threads; the first
   * half at P=4 on 1 thread each, with checkpoints, and the second half
   * resumed from them at P=1.  Every epoch's loss is the whole run's, bit
   * for bit, and so are the final parameters and, evaluated with the
   * running statistics, the last epoch's test accuracy. */
  run_report whole, first, resumed;
  snprintf(path, sizeof path, "%s/gin-det-1.jsonl", dir);
  snprintf(extra, sizeof extra, "%s --deterministic --epochs %d --threads 2", gin, DET_EPOCHS);
  train(1, shards[0], extra, path);
  read_report(path, &whole);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  snprintf(path, sizeof path, "%s/gin-det-4.jsonl", dir);
  snprintf(extra, sizeof extra, "%s --deterministic --epochs %d --checkpoint '%s'", gin,
           DET_EPOCHS / 2, ckpt);
  train(4, shards[1], extra, path);
  read_report(path, &first);
  snprintf(path, sizeof path, "%s/gin-resumed.jsonl", dir);
  snprintf(extra, sizeof extra, "%s --deterministic --epochs %d --checkpoint '%s' --resume", gin,
           DET_EPOCHS, ckpt);
  train(1, shards[0], extra, path);
  read_resumed_report(path, &resumed);
  cr_assert_eq(first.m.epochs + resumed.m.epochs, DET_EPOCHS);
  for (int e = 0; e < DET_EPOCHS; e++) {
    const double got = e < first.m.epochs ? first.m.loss[e] : resumed.m.loss[e - first.m.epochs];
    cr_expect(memcmp(&got, &whole.m.loss[e], sizeof got) == 0,
              "gin --norm batch --deterministic, %s: epoch %d's loss is %.17g, P=1's %.17g",
              e < first.m.epochs ? "P=4" : "resumed at P=1", e + 1, got, whole.m.loss[e]);
  }
  cr_expect_str_eq(resumed.sha, whole.sha, "gin resumed at P=1: params_sha256 %s, uninterrupted %s",
                   resumed.sha, whole.sha);
  /* The last epoch's test accuracy, evaluated with the running statistics. */
  char *text = tr_slurp(path);
  cr_assert(text);
  double test_acc = -1.0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (!strstr(line, "\"summary\": true")) test_acc = tr_json_num(line, "test_acc");
  free(text);
  cr_expect_eq(test_acc, whole.m.test_acc,
               "gin resumed: test accuracy %.4f (running statistics), uninterrupted %.4f", test_acc,
               whole.m.test_acc);
  free(m);
  tr_rmdir(dir);
}
