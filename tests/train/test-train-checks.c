/* halo-train's checks around the epochs, end to end on the bundled Cora
 * under mpirun: the outputs refused before anything is loaded, a loss that
 * turns NaN stopping the run with its own exit status, and --eval-every
 * (the figures of the epochs it evaluates, its early stopping counted in
 * evaluations) compared with a run that evaluates every epoch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

/* Runs halo-train under mpirun -np `np` with each rank's exit status
 * printed ("rank-exit N") and passed on; returns mpirun's status and the output in
 * *text (malloc'd). */
static int run_ranks(int np, const char *shards, const char *flags, const char *log, char **text) {
  const int rc = tr_mpirun(
      np, 120, log, "sh -c '\"$0\" \"$@\"; s=$?; echo \"rank-exit $s\"; exit $s' %s '%s' --threads 1 %s",
      TRAIN_BIN, shards, flags);
  cr_assert_neq(rc, 124, "halo-train %s hung (timeout)", flags);
  *text = tr_slurp(log);
  cr_assert(*text);
  return rc;
}

/* A refused output: every rank exits non-zero, one error line, naming it. */
static void expect_refused(const char *shards, const char *flags, const char *needle,
                           const char *log) {
  char *out = NULL;
  run_ranks(2, shards, flags, log, &out);
  cr_expect_eq(tr_count_lines(out, "rank-exit "), 2, "%s: not every rank finished:\n%s", flags,
               out);
  cr_expect_eq(tr_count_lines(out, "rank-exit 0"), 0, "%s: a rank exited with 0:\n%s", flags, out);
  cr_expect_eq(tr_count_lines(out, ": error: "), 1, "%s: not one error line:\n%s", flags, out);
  cr_expect_geq(tr_count_lines(out, needle), 1, "%s: no line names '%s':\n%s", flags, needle, out);
  free(out);
}

Test(checks, outputs_are_refused_before_the_shards_are_read, .timeout = 300) {
  char *dir = tr_tmpdir("outputs");
  char shards[512], missing[512], file[600], flags[1400], needle[1400], log[600], path[600];
  char json[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s/cora-2.json", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  snprintf(file, sizeof file, "%s/a-file", dir);
  FILE *f = fopen(file, "w");
  cr_assert(f);
  fputs("not a folder\n", f);
  fclose(f);
  /* A shard folder that does not exist: a refusal that names the output
   * proves it came before the load. */
  snprintf(missing, sizeof missing, "%s/no-shards", dir);

  expect_refused(missing, "--predict /nonexistent-halo/dir/x.h5",
                 "--predict /nonexistent-halo/dir/x.h5: the folder /nonexistent-halo/dir does not "
                 "exist",
                 log);
  /* A folder under a regular file takes no file, even for root. */
  snprintf(flags, sizeof flags, "--predict '%s/x.h5'", file);
  snprintf(needle, sizeof needle, "--predict %s/x.h5: %s is not a folder", file, file);
  expect_refused(missing, flags, needle, log);
  snprintf(flags, sizeof flags, "--checkpoint '%s/ck'", file);
  snprintf(needle, sizeof needle, "--checkpoint %s/ck: %s is not a folder", file, file);
  expect_refused(missing, flags, needle, log);
  snprintf(flags, sizeof flags, "--metrics '%s/m.jsonl'", file);
  expect_refused(missing, flags, "is not a folder", log);
  /* A folder without write permission (root writes anyway: skipped). */
  if (geteuid() != 0) {
    char locked[600];
    snprintf(locked, sizeof locked, "%s/locked", dir);
    cr_assert_eq(mkdir(locked, 0555), 0);
    snprintf(flags, sizeof flags, "--predict '%s/x.h5'", locked);
    expect_refused(missing, flags, "cannot write in the folder", log);
    chmod(locked, 0755);
  }
  /* Two outputs naming one file (by another spelling too), or an output
   * over the checkpoint --eval-only reads: the second write would replace
   * the first after the epochs, even with --force. */
  snprintf(flags, sizeof flags, "--predict '%s/o.h5' --embeddings '%s/./o.h5' --force", dir, dir);
  snprintf(needle, sizeof needle, "--embeddings %s/./o.h5: the same file as --predict %s/o.h5", dir,
           dir);
  expect_refused(missing, flags, needle, log);
  snprintf(flags, sizeof flags, "--eval-only --checkpoint '%s' --predict '%s' --force", file, file);
  snprintf(needle, sizeof needle, "--predict %s: the same file as --checkpoint %s", file, file);
  expect_refused(missing, flags, needle, log);
  /* An existing file, without --force. */
  snprintf(flags, sizeof flags, "--predict '%s'", file);
  snprintf(needle, sizeof needle, "--predict %s: already exists; give --force", file);
  expect_refused(missing, flags, needle, log);

  /* With --force the run overwrites it; the metrics of that run are then
   * refused to a fresh run, and taken with --force. */
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  snprintf(path, sizeof path, "%s/m.jsonl", dir);
  snprintf(flags, sizeof flags, "--epochs 2 --quiet --predict '%s' --force --metrics '%s'", file,
           path);
  char *out = NULL;
  int rc = run_ranks(2, shards, flags, log, &out);
  cr_expect_eq(rc, 0, "--force:\n%s", out);
  free(out);
  char head[4] = "";
  f = fopen(file, "rb");
  cr_assert(f);
  cr_expect_eq(fread(head, 1, 4, f), 4);
  fclose(f);
  cr_expect_eq(memcmp(head, "\x89" "HDF", 4), 0, "--predict replaced the file with HDF5");
  snprintf(flags, sizeof flags, "--epochs 2 --metrics '%s'", path);
  snprintf(needle, sizeof needle, "--metrics %s: exists (an earlier run's epochs); give --force",
           path);
  expect_refused(shards, flags, needle, log);
  tr_rmdir(dir);
}

Test(checks, a_nonfinite_loss_stops_every_rank_with_status_3, .timeout = 300) {
  char *dir = tr_tmpdir("nonfinite");
  char shards[512], log[600], flags[900], ckpt[600];
  char json[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s/cora-2.json", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  /* Adam's first step moves every weight by about lr: 1e6 overflows the
   * second epoch's logits. */
  snprintf(flags, sizeof flags, "--epochs 30 --lr 1e6 --checkpoint '%s' --checkpoint-every 1",
           ckpt);
  char *out = NULL;
  const int rc = run_ranks(2, shards, flags, log, &out);
  cr_expect_eq(rc, 3, "mpirun's status %d:\n%s", rc, out);
  cr_expect_eq(tr_count_lines(out, "rank-exit 3"), 2, "every rank exits with 3:\n%s", out);
  cr_expect_eq(tr_count_lines(out, ": error: "), 1, "one line:\n%s", out);
  cr_expect_eq(tr_count_lines(out, "the training loss is NaN; the learning rate is too high"), 1,
               "%s", out);
  cr_expect_eq(tr_count_lines(out, "try --normalize-features, or a lower --lr than 1e+06"), 1, "%s",
               out);
  /* It names the checkpoint of the epoch before, whose loss was finite. */
  cr_expect_eq(tr_count_lines(out, "the newest checkpoint is"), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "summary:"), 0, "it stopped, with no summary:\n%s", out);
  const int stopped = tr_count_lines(out, "loss nan");
  cr_expect_eq(stopped, 1, "one epoch line with a NaN loss, then the stop:\n%s", out);
  free(out);
  /* --allow-nonfinite trains on to the end. */
  out = NULL;
  const int on = run_ranks(2, shards, "--epochs 5 --lr 1e6 --allow-nonfinite --quiet", log, &out);
  cr_expect_eq(on, 0, "--allow-nonfinite:\n%s", out);
  cr_expect_eq(tr_count_lines(out, "summary: 5 epochs"), 1, "%s", out);
  free(out);
  tr_rmdir(dir);
}

/* The epoch lines of a --metrics file: loss, val_acc (NAN when the epoch
 * was not evaluated) and whether it was. */
typedef struct curve {
  int epochs;
  double loss[64], val[64], test[64];
  int evaluated[64];
  double evaluations, mean_eval_s, wall_s, best_epoch;
} curve;

static void read_curve(const char *path, curve *c) {
  char *text = tr_slurp(path);
  cr_assert(text, "no %s", path);
  memset(c, 0, sizeof *c);
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strstr(line, "\"summary\": true")) {
      c->evaluations = tr_json_num(line, "evaluations");
      c->mean_eval_s = tr_json_num(line, "mean_eval_s");
      c->wall_s = tr_json_num(line, "wall_s");
      c->best_epoch = tr_json_num(line, "best_val_epoch");
      continue;
    }
    const int e = c->epochs++;
    cr_assert(e < 64 && tr_json_num(line, "epoch") == e + 1, "%s: epoch %d", path, e + 1);
    c->loss[e] = tr_json_num(line, "loss");
    c->val[e] = tr_json_num(line, "val_acc");
    c->test[e] = tr_json_num(line, "test_acc");
    c->evaluated[e] = strstr(line, "\"evaluated\": false") == NULL;
    cr_assert(!isnan(tr_json_num(line, "wall_s")), "%s: epoch %d has no wall_s", path, e + 1);
  }
  free(text);
}

Test(checks, eval_every_evaluates_the_multiples_and_the_last_epoch, .timeout = 600) {
  char *dir = tr_tmpdir("eval-every");
  char shards[512], log[600], flags[900], every[600], each[600];
  char json[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s/cora-2.json", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  snprintf(each, sizeof each, "%s/each.jsonl", dir);
  snprintf(every, sizeof every, "%s/every.jsonl", dir);
  train(2, shards, "--epochs 40", each);
  snprintf(flags, sizeof flags, "--epochs 40 --metrics '%s' --eval-every 7 --metric f1", every);
  char *out = NULL;
  int rc = run_ranks(2, shards, flags, log, &out);
  cr_assert_eq(rc, 0, "%s", out);
  curve a, b;
  read_curve(each, &a);
  read_curve(every, &b);
  cr_assert_eq(a.epochs, 40);
  cr_assert_eq(b.epochs, 40);
  /* The evaluation changes nothing of the training, so the losses agree bit
   * for bit, and so do the figures of the epochs evaluated: 7, 14, .., 35,
   * and 40, the last. */
  for (int e = 0; e < 40; e++) {
    const int want = (e + 1) % 7 == 0 || e + 1 == 40;
    cr_expect_eq(a.loss[e], b.loss[e], "epoch %d: loss %.17g, %.17g with --eval-every 7", e + 1,
                 a.loss[e], b.loss[e]);
    cr_expect_eq(b.evaluated[e], want, "epoch %d evaluated: %d", e + 1, b.evaluated[e]);
    if (want) cr_expect_eq(a.val[e], b.val[e], "epoch %d: val_acc", e + 1);
    if (!want) cr_expect(isnan(b.val[e]), "epoch %d has a val_acc", e + 1);
  }
  cr_expect_eq(b.evaluations, 6);
  cr_expect_eq(a.evaluations, 40);
  cr_expect(b.mean_eval_s > 0 && b.wall_s > 0, "mean_eval_s %g, wall_s %g", b.mean_eval_s,
            b.wall_s);
  /* The epoch lines show the evaluation and wall times, and --metric's
   * figure on the evaluated ones. */
  cr_expect_eq(tr_count_lines(out, "  test f1 "), 6, "%s", out);
  cr_expect_eq(tr_count_lines(out, " ms  wall "), 40, "%s", out);
  cr_expect_eq(tr_count_lines(out, "mean evaluation "), 1, "%s", out);
  free(out);

  /* --early-stop 2 --eval-every 5: the patience counts evaluations, so the
   * run stops at the second evaluation after the best of the multiples of
   * 5, found in the run that evaluated every epoch; --predict then writes
   * the best epoch's parameters. */
  int best = 0, stop = 40;
  double best_val = -1.0;
  for (int e = 5; e <= 40; e += 5) {
    if (a.val[e - 1] > best_val) {
      best_val = a.val[e - 1];
      best = e;
    }
    if ((e - best) / 5 >= 2 && e < 40) {
      stop = e;
      break;
    }
  }
  fprintf(stderr, "[checks.eval_every] best of the multiples of 5: epoch %d (%.4f), stop at %d\n",
          best, best_val, stop);
  snprintf(every, sizeof every, "%s/stop.jsonl", dir);
  snprintf(flags, sizeof flags,
           "--epochs 40 --metrics '%s' --eval-every 5 --early-stop 2 --predict '%s/p.h5'", every,
           dir);
  out = NULL;
  rc = run_ranks(2, shards, flags, log, &out);
  cr_assert_eq(rc, 0, "%s", out);
  read_curve(every, &b);
  cr_expect_eq(b.epochs, stop, "stopped after epoch %d, expected %d", b.epochs, stop);
  cr_expect_eq(b.best_epoch, best);
  char needle[96];
  snprintf(needle, sizeof needle, "(epoch %d's parameters)", best);
  cr_expect_eq(tr_count_lines(out, needle), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "in the 2 evaluations after epoch"), 1, "%s", out);
  free(out);
  tr_rmdir(dir);
}

/* A checkpoint records the features' normalisation (normalize_features, in
 * every checkpoint since the first format): one of a run before the default
 * changed, which normalised, looks like one of --normalize-features, and a
 * resume without the flag is refused with a line that names it. */
Test(checks, a_normalised_checkpoint_resumes_only_normalised, .timeout = 300) {
  char *dir = tr_tmpdir("normalised");
  char shards[512], json[600], log[600], flags[900], ckpt[600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s/cora-2.json", dir);
  snprintf(log, sizeof log, "%s/run.log", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  snprintf(flags, sizeof flags, "--epochs 3 --quiet --normalize-features --checkpoint '%s'", ckpt);
  char *out = NULL;
  cr_assert_eq(run_ranks(2, shards, flags, log, &out), 0, "%s", out);
  free(out);
  snprintf(flags, sizeof flags, "--epochs 5 --quiet --checkpoint '%s' --resume", ckpt);
  run_ranks(2, shards, flags, log, &out);
  cr_expect_eq(tr_count_lines(out, "rank-exit 1"), 2, "%s", out);
  cr_expect_eq(tr_count_lines(out, "is a checkpoint of another model (gcn, 2 layers, hidden 16, "
                                   "--normalize-features; this run: gcn, 2 layers, hidden 16)"),
               1, "%s", out);
  free(out);
  snprintf(flags, sizeof flags,
           "--epochs 5 --quiet --checkpoint '%s' --resume --normalize-features", ckpt);
  cr_expect_eq(run_ranks(2, shards, flags, log, &out), 0, "%s", out);
  cr_expect_eq(tr_count_lines(out, "(epoch 3, Adam step 3); training epochs 4..5"), 1, "%s", out);
  free(out);
  tr_rmdir(dir);
}
