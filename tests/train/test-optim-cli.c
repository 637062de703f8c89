/* The optimisers and schedules end to end on the bundled Cora, under
 * --deterministic: SGD with Nesterov momentum, a cosine schedule after a
 * linear warm-up and gradient clipping trains bit for bit alike at P=1 and
 * P=3 (the clipped norm is the same on every rank and at every P), and 10
 * epochs then a resume at another P give the 20 straight epochs' parameters
 * (params_sha256) and losses; the same for AdamW under ReduceLROnPlateau,
 * whose state (rate, best loss, bad evaluations) the checkpoint carries.
 * The metrics' rates are the schedule's closed form. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

static void run(int np, const char *shards, const char *extra, const char *path) {
  char log[700];
  snprintf(log, sizeof log, "%s.log", path);
  int rc = tr_mpirun(np, 300, log, "%s '%s' --deterministic --threads 1 --quiet --metrics '%s' %s",
                     TRAIN_BIN, shards, path, extra);
  cr_assert_eq(rc, 0, "halo-train -np %d %s exited with %d (see %s)", np, extra, rc, log);
}

/* The epoch lines' "KEY": values of a --metrics file, in order; returns how many. */
static int json_series(const char *path, const char *key, double *out, int max) {
  char *text = tr_slurp(path), pattern[64];
  cr_assert(text, "%s: cannot read", path);
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  int n = 0;
  for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
    const char *at = strstr(line, pattern);
    if (strncmp(line, "{\"epoch\": ", 10) == 0 && at) out[n++] = strtod(at + strlen(pattern), NULL);
  }
  free(text);
  return n;
}

static void shards_of(const char *dir, int parts, char *out, size_t size) {
  char log[600];
  snprintf(out, size, "%s/cora-%d", dir, parts);
  snprintf(log, sizeof log, "%s.log", out);
  int rc =
      tr_run(120, log, "%s --input '%s' --parts %d --out '%s'", PARTITION_BIN, CORA, parts, out);
  cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
}

/* Straight at P=1 and P=3; STOP epochs at P=a, resumed to EPOCHS at P=b. */
static void straight_and_resumed(const char *dir, const char *tag, const char *flags, int epochs,
                                 int stop, const char *first_extra, run_report *straight) {
  char p1[512], p3[512], path[700], extra[1024], ckpt[600];
  shards_of(dir, 1, p1, sizeof p1);
  shards_of(dir, 3, p3, sizeof p3);
  run_report at3, first, resumed;
  snprintf(extra, sizeof extra, "--epochs %d %s", epochs, flags);
  snprintf(path, sizeof path, "%s/straight1.jsonl", dir);
  run(1, p1, extra, path);
  read_report(path, straight);
  snprintf(path, sizeof path, "%s/straight3.jsonl", dir);
  run(3, p3, extra, path);
  read_report(path, &at3);
  expect_bit_identical(straight, &at3, "P=3 against P=1");

  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  snprintf(extra, sizeof extra, "--epochs %d %s %s --checkpoint '%s'", stop, flags, first_extra,
           ckpt);
  snprintf(path, sizeof path, "%s/first.jsonl", dir);
  run(3, p3, extra, path);
  read_report(path, &first);
  snprintf(extra, sizeof extra, "--epochs %d %s --checkpoint '%s' --resume", epochs, flags, ckpt);
  snprintf(path, sizeof path, "%s/resumed.jsonl", dir);
  run(1, p1, extra, path);
  read_resumed_report(path, &resumed);
  cr_assert_eq(resumed.m.epochs, epochs - stop, "the resumed run trains epochs %d..%d", stop + 1,
               epochs);
  for (int e = 0; e < stop; e++)
    cr_expect_eq(first.m.loss[e], straight->m.loss[e], "%s epoch %d: loss %.17g, straight %.17g",
                 tag, e + 1, first.m.loss[e], straight->m.loss[e]);
  for (int e = 0; e < epochs - stop; e++)
    cr_expect_eq(resumed.m.loss[e], straight->m.loss[stop + e],
                 "%s epoch %d: loss %.17g resumed, %.17g straight", tag, stop + e + 1,
                 resumed.m.loss[e], straight->m.loss[stop + e]);
  cr_expect_str_eq(resumed.sha, straight->sha,
                   "%s: params_sha256 resumed at P=1 after %d epochs "
                   "at P=3",
                   tag, stop);
  fprintf(stderr, "[optim.%s] P=1, P=3 and %d+%d resumed: params_sha256 %s, final test %.4f\n", tag,
          stop, epochs - stop, straight->sha, straight->m.final_test);
}

Test(optim, sgd_nesterov_cosine_warmup_clip_is_exact, .timeout = 300) {
  enum { EPOCHS = 20, STOP = 10, WARM = 3 };
  const char *flags =
      "--optimizer sgd --momentum 0.9 --nesterov --lr 0.2 --lr-schedule cosine --lr-min 0.01 "
      "--warmup-epochs 3 --clip-grad-norm 0.3";
  run_report straight;
  char *dir = tr_tmpdir("optim-sgd");
  /* The first half spans the whole schedule: --lr-epochs. */
  straight_and_resumed(dir, "sgd", flags, EPOCHS, STOP, "--lr-epochs 20", &straight);
  char path[700];
  snprintf(path, sizeof path, "%s/straight1.jsonl", dir);
  double lr[EPOCHS], norm[EPOCHS];
  cr_assert_eq(json_series(path, "lr", lr, EPOCHS), EPOCHS);
  cr_assert_eq(json_series(path, "grad_norm", norm, EPOCHS), EPOCHS);
  const double base = 0.2f, lo = 0.01f;
  int clipped = 0;
  for (int e = 1; e <= EPOCHS; e++) {
    const double want =
        e <= WARM ? base * (1.0 / WARM + (1 - 1.0 / WARM) * (e - 1) / WARM)
                  : lo + (base - lo) *
                             (1 + cos(3.141592653589793 * (e - 1 - WARM) / (EPOCHS - WARM))) / 2;
    cr_expect(fabs(lr[e - 1] - (float)want) <= 1e-7 * want, "epoch %d: lr %.9g, want %.9g", e,
              lr[e - 1], want);
    clipped += norm[e - 1] > 0.3;
  }
  cr_expect_gt(clipped, 0, "no epoch's gradient norm was above --clip-grad-norm 0.3");
  fprintf(stderr, "[optim.sgd] %d of %d epochs clipped\n", clipped, EPOCHS);
  tr_rmdir(dir);
}

Test(optim, adamw_plateau_is_exact, .timeout = 300) {
  enum { EPOCHS = 40, STOP = 25 };
  const char *flags =
      "--optimizer adamw --weight-decay 0.01 --lr 0.05 --lr-schedule plateau "
      "--lr-patience 2 --lr-gamma 0.5";
  run_report straight;
  char *dir = tr_tmpdir("optim-plateau");
  straight_and_resumed(dir, "plateau", flags, EPOCHS, STOP, "", &straight);
  char path[700];
  snprintf(path, sizeof path, "%s/straight1.jsonl", dir);
  double lr[EPOCHS];
  cr_assert_eq(json_series(path, "lr", lr, EPOCHS), EPOCHS);
  /* The schedule must have lowered the rate before the stop and after it,
   * so that the resumed run needed the saved state. */
  int before = 0, after = 0;
  for (int e = 1; e < EPOCHS; e++) {
    cr_expect_leq(lr[e], lr[e - 1], "epoch %d: the rate rose", e + 1);
    if (lr[e] < lr[e - 1]) *(e + 1 <= STOP ? &before : &after) += 1;
  }
  cr_expect(before > 0 && after > 0, "the rate fell %d times before epoch %d and %d after", before,
            STOP, after);
  tr_rmdir(dir);
}
