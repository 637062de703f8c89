/* Checkpoints and resume, end to end on the bundled Cora under mpirun:
 *
 *   - exactness: 100 epochs straight, and 40 epochs then --resume to 100, at
 *     the same P, end with bit-identical parameters, Adam moments and step,
 *     and the same loss in every epoch; the resumed metrics file starts at
 *     epoch 41;
 *   - another P: the epoch-40 checkpoint of the 2-rank run resumed on a
 *     3-part partition follows the straight run's loss to 1e-4 relative;
 *   - --keep: only the newest K checkpoints stay, and no temporary file;
 *   - damage: a checkpoint with a flipped byte or cut short is skipped with
 *     a warning and the next older one resumes; the damaged ones are set
 *     aside, so that --keep keeps the new saves;
 *   - a full disk: a save that cannot be written fails with one line and
 *     leaves nothing behind, and the process still exits cleanly (HDF5 1.10
 *     crashed at exit after a failed close).
 * The reference is the straight run itself, which test-train-cli checks
 * against P=1 and against the paper's accuracy. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "halo-checkpoint.h"
#include "train-run.h"

#define TRAIN_BIN HALO_BINARY_DIR "/bin/halo-train"
#define PARTITION_BIN HALO_BINARY_DIR "/bin/halo-partition"
#define CORA HALO_DATASETS_DIR "/cora"

enum { EPOCHS = 100, STOP = 40, MAX_EPOCHS = 128 };

/* Loss per true epoch number (NAN where absent), and the first epoch seen. */
typedef struct curve {
  double loss[MAX_EPOCHS + 1];
  int first, last, lines;
} curve;

static void read_curve(const char *path, curve *c) {
  char *text = tr_slurp(path);
  cr_assert(text, "no metrics file %s", path);
  for (int e = 0; e <= MAX_EPOCHS; e++) c->loss[e] = NAN;
  c->first = c->last = -1;
  c->lines = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strstr(line, "\"summary\": true")) continue;
    int e = (int)tr_json_num(line, "epoch");
    cr_assert(e >= 1 && e <= MAX_EPOCHS, "%s: epoch %d", path, e);
    cr_assert(c->last < 0 || e == c->last + 1, "%s: epoch %d follows %d", path, e, c->last);
    if (c->first < 0) c->first = e;
    c->last = e;
    c->loss[e] = tr_json_num(line, "loss");
    c->lines++;
  }
  free(text);
}

static void partition(const char *out, int parts) {
  char log[600];
  snprintf(log, sizeof log, "%s.log", out);
  int rc = tr_run(120, log, "%s --input '%s' --parts %d --out '%s' --force", PARTITION_BIN, CORA,
                  parts, out);
  cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
}

/* Runs halo-train; returns its exit status; output goes to LOG. */
static int train(int np, const char *shards, const char *log, const char *extra) {
  return tr_mpirun(np, 300, log, "%s '%s' --threads 1 --quiet --seed %llu %s", TRAIN_BIN, shards,
                   (unsigned long long)tr_seed("checkpoint", 7), extra);
}

static void read_ckpt(const char *dir, int64_t epoch, halo_checkpoint *c) {
  char path[700];
  snprintf(path, sizeof path, "%s/ckpt-%08lld.h5", dir, (long long)epoch);
  halo_status st = halo_checkpoint_read(path, c);
  cr_assert_eq(st, HALO_OK, "%s does not read: %s", path, halo_status_str(st));
}

static int exists(const char *dir, const char *name) {
  char path[700];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return stat(path, &sb) == 0;
}

/* The straight run and the stopped-and-resumed run, shared by the tests. */
typedef struct runs {
  char *dir;
  char shards2[512], shards3[512], straight[512], resumed[512];
  curve full, first, second;
} runs;

static void run_both(runs *r) {
  char log[700], flags[1200];
  r->dir = tr_tmpdir("ckpt");
  cr_assert(r->dir);
  snprintf(r->shards2, sizeof r->shards2, "%s/cora-2", r->dir);
  snprintf(r->straight, sizeof r->straight, "%s/straight", r->dir);
  snprintf(r->resumed, sizeof r->resumed, "%s/resumed", r->dir);
  partition(r->shards2, 2);

  snprintf(log, sizeof log, "%s/straight.log", r->dir);
  snprintf(flags, sizeof flags,
           "--epochs %d --checkpoint '%s' --checkpoint-every 10 --metrics '%s/full.jsonl'", EPOCHS,
           r->straight, r->dir);
  cr_assert_eq(train(2, r->shards2, log, flags), 0, "straight run failed (see %s)", log);

  snprintf(log, sizeof log, "%s/first.log", r->dir);
  snprintf(flags, sizeof flags,
           "--epochs %d --checkpoint '%s' --checkpoint-every 10 --metrics '%s/first.jsonl'", STOP,
           r->resumed, r->dir);
  cr_assert_eq(train(2, r->shards2, log, flags), 0, "first half failed (see %s)", log);

  snprintf(log, sizeof log, "%s/second.log", r->dir);
  snprintf(
      flags, sizeof flags,
      "--epochs %d --checkpoint '%s' --checkpoint-every 10 --resume --metrics '%s/second.jsonl'",
      EPOCHS, r->resumed, r->dir);
  cr_assert_eq(train(2, r->shards2, log, flags), 0, "resumed run failed (see %s)", log);

  char path[700];
  snprintf(path, sizeof path, "%s/full.jsonl", r->dir);
  read_curve(path, &r->full);
  snprintf(path, sizeof path, "%s/first.jsonl", r->dir);
  read_curve(path, &r->first);
  snprintf(path, sizeof path, "%s/second.jsonl", r->dir);
  read_curve(path, &r->second);
}

Test(checkpoint, resume_at_same_p_is_bit_exact, .timeout = 600) {
  runs r;
  run_both(&r);
  cr_expect_eq(r.full.first, 1);
  cr_expect_eq(r.full.last, EPOCHS);
  cr_expect_eq(r.first.last, STOP);
  cr_expect_eq(r.second.first, STOP + 1, "the resumed metrics start at epoch %d", r.second.first);
  cr_expect_eq(r.second.last, EPOCHS);
  int differ = 0;
  for (int e = 1; e <= EPOCHS; e++) {
    double got = e <= STOP ? r.first.loss[e] : r.second.loss[e];
    if (!(got == r.full.loss[e]) && differ++ < 5)
      cr_log_error("epoch %d: loss %.9g resumed, %.9g straight", e, got, r.full.loss[e]);
  }
  cr_expect_eq(differ, 0, "%d epochs differ in loss", differ);

  halo_checkpoint a, b;
  read_ckpt(r.straight, EPOCHS, &a);
  read_ckpt(r.resumed, EPOCHS, &b);
  cr_expect_eq(a.epoch, EPOCHS);
  cr_expect_eq(b.epoch, EPOCHS);
  cr_expect_eq(a.adam_t, EPOCHS, "Adam step %lld after %d epochs", (long long)a.adam_t, EPOCHS);
  cr_expect_eq(b.adam_t, a.adam_t);
  cr_assert_eq(a.nparams, b.nparams);
  cr_expect_eq(a.nparams, 1433 * 16 + 16 + 16 * 7 + 7);
  size_t bytes = (size_t)a.nparams * sizeof(float);
  cr_expect_eq(memcmp(a.params, b.params, bytes), 0, "final weights differ");
  cr_expect_eq(memcmp(a.adam_m, b.adam_m, bytes), 0, "Adam first moments differ");
  cr_expect_eq(memcmp(a.adam_v, b.adam_v, bytes), 0, "Adam second moments differ");
  /* The weights did train: they are not the epoch-10 ones. */
  halo_checkpoint early;
  read_ckpt(r.straight, 90, &early);
  cr_expect_neq(memcmp(a.params, early.params, bytes), 0);
  halo_checkpoint_clear(&early);
  halo_checkpoint_clear(&a);
  halo_checkpoint_clear(&b);

  /* --keep 2 (the default): epochs 90 and 100 only, and nothing half-written. */
  cr_expect(exists(r.straight, "ckpt-00000100.h5") && exists(r.straight, "ckpt-00000090.h5"));
  cr_expect(!exists(r.straight, "ckpt-00000080.h5") && !exists(r.straight, "ckpt-00000010.h5"));
  cr_expect(!exists(r.straight, "ckpt-00000100.h5.tmp"));
  tr_rmdir(r.dir);
}

Test(checkpoint, resume_at_another_p_within_tolerance, .timeout = 600) {
  runs r;
  run_both(&r);
  /* The resumed folder keeps epochs 30 and 40 from the first half until the
   * second half replaces them; take epoch 40 from a fresh 40-epoch run. */
  char log[700], flags[1200], moved[600];
  snprintf(moved, sizeof moved, "%s/at-40", r.dir);
  snprintf(log, sizeof log, "%s/again.log", r.dir);
  snprintf(flags, sizeof flags, "--epochs %d --checkpoint '%s' --checkpoint-every %d", STOP, moved,
           STOP);
  cr_assert_eq(train(2, r.shards2, log, flags), 0, "see %s", log);

  snprintf(r.shards3, sizeof r.shards3, "%s/cora-3", r.dir);
  partition(r.shards3, 3);
  snprintf(log, sizeof log, "%s/p3.log", r.dir);
  snprintf(flags, sizeof flags, "--epochs %d --checkpoint '%s' --resume --metrics '%s/p3.jsonl'",
           EPOCHS, moved, r.dir);
  cr_assert_eq(train(3, r.shards3, log, flags), 0, "resume at P=3 failed (see %s)", log);
  curve p3;
  char path[700];
  snprintf(path, sizeof path, "%s/p3.jsonl", r.dir);
  read_curve(path, &p3);
  cr_expect_eq(p3.first, STOP + 1);
  cr_expect_eq(p3.last, EPOCHS);
  double worst = 0.0;
  for (int e = STOP + 1; e <= EPOCHS; e++) {
    double rel = fabs(p3.loss[e] - r.full.loss[e]) / fabs(r.full.loss[e]);
    if (!(rel <= worst)) worst = rel;
  }
  cr_log_info("resume at P=3: worst relative loss difference %.3g over epochs %d..%d", worst,
              STOP + 1, EPOCHS);
  cr_expect_leq(worst, 1e-4, "loss differs by %.3g relative from the straight 2-rank run", worst);
  tr_rmdir(r.dir);
}

/* Flips one byte inside the stored weights (found by their bytes). */
static void flip_weights(const char *path, const float *params) {
  char *file = NULL;
  FILE *f = fopen(path, "rb");
  cr_assert(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  file = malloc((size_t)n);
  cr_assert_eq(fread(file, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  long at = -1;
  for (long i = 0; i + 64 <= n && at < 0; i++)
    if (memcmp(file + i, params, 64) == 0) at = i + 17;
  cr_assert_geq(at, 0, "%s: weights not found in the file", path);
  file[at] ^= 0x04;
  f = fopen(path, "wb");
  cr_assert_eq(fwrite(file, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  free(file);
}

Test(checkpoint, damaged_checkpoints_are_skipped, .timeout = 300) {
  char *dir = tr_tmpdir("ckpt-bad");
  char shards[600], ckpt[600], log[700], flags[1200], path[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  partition(shards, 2);
  snprintf(log, sizeof log, "%s/a.log", dir);
  snprintf(flags, sizeof flags, "--epochs 30 --checkpoint '%s' --checkpoint-every 10 --keep 3",
           ckpt);
  cr_assert_eq(train(2, shards, log, flags), 0, "see %s", log);

  /* Epoch 30: a flipped byte in the weights (Fletcher-32 catches it);
   * epoch 20: cut in half.  Epoch 10 resumes. */
  halo_checkpoint c;
  read_ckpt(ckpt, 30, &c);
  snprintf(path, sizeof path, "%s/ckpt-00000030.h5", ckpt);
  flip_weights(path, c.params);
  halo_checkpoint_clear(&c);
  halo_log_set_quiet(1);
  cr_expect_neq(halo_checkpoint_read(path, &c), HALO_OK,
                "a flipped byte in the weights went unnoticed");
  halo_log_set_quiet(0);
  snprintf(path, sizeof path, "%s/ckpt-00000020.h5", ckpt);
  cr_assert_eq(truncate(path, 1000), 0);

  /* --keep 2 must keep the new save (12) and the one it resumed from (10),
   * not the damaged 30 and 20, which are set aside. */
  snprintf(log, sizeof log, "%s/b.log", dir);
  snprintf(flags, sizeof flags,
           "--epochs 12 --checkpoint '%s' --resume --keep 2 --metrics '%s/b.jsonl'", ckpt, dir);
  int rc = train(2, shards, log, flags);
  char *out = tr_slurp(log);
  cr_assert(out);
  cr_expect_eq(rc, 0, "resume failed:\n%s", out);
  cr_expect_eq(tr_count_lines(out, "ckpt-00000030.h5: skipping"), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "ckpt-00000020.h5: skipping"), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, ": error: "), 0, "%s", out);
  cr_expect_eq(tr_count_lines(out, "resumed from"), 1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "set aside as"), 2, "%s", out);
  free(out);
  const char *kept[] = {"ckpt-00000012.h5", "ckpt-00000010.h5", "ckpt-00000030.h5.damaged",
                        "ckpt-00000020.h5.damaged"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    cr_expect(exists(ckpt, kept[i]), "%s/%s is gone", ckpt, kept[i]);
  cr_expect(!exists(ckpt, "ckpt-00000030.h5") && !exists(ckpt, "ckpt-00000020.h5"),
            "a damaged checkpoint kept its name");
  curve b;
  snprintf(path, sizeof path, "%s/b.jsonl", dir);
  read_curve(path, &b);
  cr_expect_eq(b.first, 11);
  cr_expect_eq(b.last, 12);
  tr_rmdir(dir);
}

/* Settings that may change on resume (lr, weight decay, dropout, seed) are
 * applied with one warning that names each one that changed, the
 * checkpoint's value next to this run's (--weight-decay-all too), and
 * nothing about those that did not. */
Test(checkpoint, resume_names_the_settings_that_changed, .timeout = 300) {
  char *dir = tr_tmpdir("ckpt-settings");
  char shards[600], ckpt[600], log[700], flags[1200];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  partition(shards, 2);
  snprintf(log, sizeof log, "%s/a.log", dir);
  snprintf(flags, sizeof flags, "--epochs 2 --checkpoint '%s'", ckpt);
  cr_assert_eq(train(2, shards, log, flags), 0, "see %s", log);
  snprintf(log, sizeof log, "%s/b.log", dir);
  snprintf(flags, sizeof flags,
           "--epochs 3 --checkpoint '%s' --resume --lr 0.02 --weight-decay-all", ckpt);
  const int rc = train(2, shards, log, flags);
  char *out = tr_slurp(log);
  cr_assert(out);
  cr_expect_eq(rc, 0, "resume failed:\n%s", out);
  cr_expect_eq(tr_count_lines(out,
                              "was written with other settings: --lr 0.01 (this run: 0.02), "
                              "--weight-decay-all off (this run: on); this run's apply"),
               1, "%s", out);
  cr_expect_eq(tr_count_lines(out, "--dropout"), 0, "%s", out);
  free(out);
  tr_rmdir(dir);
}

/* A resume with nothing left to train (--epochs at the checkpoint's epoch)
 * says so, instead of "training epochs 3..2", and the summary, text and
 * JSON, claims no accuracy it never measured; --epochs 0 alike. */
Test(checkpoint, nothing_to_train_measures_nothing, .timeout = 300) {
  char *dir = tr_tmpdir("ckpt-none");
  char shards[600], ckpt[600], log[700], flags[1600], path[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  partition(shards, 2);
  snprintf(log, sizeof log, "%s/a.log", dir);
  snprintf(flags, sizeof flags, "--epochs 2 --checkpoint '%s'", ckpt);
  cr_assert_eq(train(2, shards, log, flags), 0, "see %s", log);
  for (int k = 0; k < 2; k++) {
    snprintf(log, sizeof log, "%s/none-%d.log", dir, k);
    snprintf(path, sizeof path, "%s/none-%d.jsonl", dir, k);
    if (k == 0)
      snprintf(flags, sizeof flags, "--epochs 2 --checkpoint '%s' --resume --metrics '%s'", ckpt,
               path);
    else
      snprintf(flags, sizeof flags, "--epochs 0 --metrics '%s'", path);
    cr_assert_eq(train(2, shards, log, flags), 0, "see %s", log);
    char *out = tr_slurp(log), *json = tr_slurp(path);
    cr_assert(out && json);
    if (k == 0)
      cr_expect_eq(tr_count_lines(out, "(epoch 2, Adam step 2); nothing to train: --epochs 2"), 1,
                   "%s", out);
    cr_expect_eq(tr_count_lines(out, "summary: no epoch trained, so no accuracy was measured"), 1,
                 "%s", out);
    cr_expect_eq(tr_count_lines(out, "final test"), 0, "%s", out);
    cr_expect(strstr(json, "\"final_test_acc\": null") && strstr(json, "\"best_val_acc\": null"),
              "%s", json);
    free(out);
    free(json);
  }
  tr_rmdir(dir);
}

/* A disk that fills up in the middle of a save, as a 1 MiB file size limit
 * (with SIGXFSZ ignored, writes past it fail with EFBIG).  The save runs in
 * a child process that then exits through exit(), so that a crash in an
 * exit handler (HDF5 1.10's, after a failed close) shows as a signal. */
Test(checkpoint, a_save_past_the_disk_space_fails_cleanly, .timeout = 60) {
  char *dir = tr_tmpdir("ckpt-full");
  char ckpt[600];
  snprintf(ckpt, sizeof ckpt, "%s/ck", dir);
  const uint64_t seed = tr_seed("checkpoint-full", 11);
  fflush(NULL);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    /* A 1-layer GCN of 1024 features and 1023 classes: 2^20 - 1 parameters. */
    halo_checkpoint c = {.epoch = 5, .nodes = 10, .edges = 20, .features = 1024, .classes = 1023};
    snprintf(c.model, sizeof c.model, "gcn");
    halo_net_options_default(&c.gcn);
    c.gcn.layers = 1;
    if (halo_checkpoint_alloc(&c, 1024 * 1023 + 1023, 0) != HALO_OK) exit(2); /* 4 MiB an array */
    for (int64_t i = 0; i < c.nparams; i++)
      c.params[i] = c.adam_m[i] = c.adam_v[i] = (float)((seed + (uint64_t)i) % 1000) / 7.0f;
    const struct rlimit limit = {.rlim_cur = 1 << 20, .rlim_max = RLIM_INFINITY};
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR || setrlimit(RLIMIT_FSIZE, &limit) != 0) exit(3);
    halo_status st = halo_checkpoint_save(ckpt, &c, 3, NULL, 0);
    halo_checkpoint_clear(&c);
    exit(st == HALO_ERR_IO ? 0 : 4);
  }
  int status = 0;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_expect(WIFEXITED(status), "the saving process died of signal %d",
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "exit status %d (4: the save did not fail with HALO_ERR_IO)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  cr_expect(!exists(ckpt, "ckpt-00000005.h5"), "a failed save left a checkpoint");
  cr_expect(!exists(ckpt, "ckpt-00000005.h5.tmp"), "a failed save left its temporary file");
  tr_rmdir(dir);
}
