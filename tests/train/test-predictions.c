/* halo-train --predict, --early-stop and --eval-only, end to end on the
 * bundled Cora under mpirun.
 *
 * The predictions file is read with the HDF5 C API and checked against
 * independent sources: its node ids are a permutation of Cora's, its labels
 * and splits are those of the dataset's own node-label.csv.gz and split
 * files, each /pred is the argmax of its /logits row, and the test accuracy
 * recomputed from the file equals the one the run reported.  With
 * --deterministic the logits of P=1 and P=2, put in node order, are the
 * same bits.  --early-stop writes its predictions from the best
 * validation epoch and keeps best.h5; --eval-only --resume of the stopped
 * run's checkpoint reports that epoch's accuracies again. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"
enum { NODES = 2708, CLASSES = 7 };

typedef struct predictions {
  int64_t epoch, n;
  int classes;
  int64_t *gid;
  float *logits; /* n × classes */
  int32_t *pred, *label;
  int8_t *split;
} predictions;

static void read_dataset(hid_t f, const char *name, hid_t type, void *out) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  cr_assert_geq(d, 0, "no dataset %s", name);
  cr_assert_geq(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), 0, "cannot read %s", name);
  H5Dclose(d);
}

static predictions *read_predictions(const char *path) {
  predictions *p = calloc(1, sizeof *p);
  cr_assert(p);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", path);
  hid_t d = H5Dopen2(f, "/logits", H5P_DEFAULT), space = H5Dget_space(d);
  hsize_t dims[2] = {0, 0};
  cr_assert_eq(H5Sget_simple_extent_ndims(space), 2);
  H5Sget_simple_extent_dims(space, dims, NULL);
  H5Sclose(space);
  H5Dclose(d);
  p->n = (int64_t)dims[0];
  p->classes = (int)dims[1];
  p->gid = malloc((size_t)p->n * sizeof *p->gid);
  p->logits = malloc((size_t)p->n * (size_t)p->classes * sizeof *p->logits);
  p->pred = malloc((size_t)p->n * sizeof *p->pred);
  p->label = malloc((size_t)p->n * sizeof *p->label);
  p->split = malloc((size_t)p->n);
  cr_assert(p->gid && p->logits && p->pred && p->label && p->split);
  read_dataset(f, "/global_id", H5T_NATIVE_INT64, p->gid);
  read_dataset(f, "/logits", H5T_NATIVE_FLOAT, p->logits);
  read_dataset(f, "/pred", H5T_NATIVE_INT32, p->pred);
  read_dataset(f, "/label", H5T_NATIVE_INT32, p->label);
  read_dataset(f, "/split", H5T_NATIVE_INT8, p->split);
  hid_t a = H5Aopen(f, "epoch", H5P_DEFAULT);
  cr_assert_geq(a, 0, "%s: no epoch attribute", path);
  H5Aread(a, H5T_NATIVE_INT64, &p->epoch);
  H5Aclose(a);
  H5Fclose(f);
  return p;
}

static void free_predictions(predictions *p) {
  free(p->gid);
  free(p->logits);
  free(p->pred);
  free(p->label);
  free(p->split);
  free(p);
}

/* One integer per line of a gzipped CSV (OGB's label and split files). */
static int read_ints(const char *path, int64_t *out, int max) {
  gzFile z = gzopen(path, "rb");
  cr_assert(z, "cannot open %s", path);
  char line[64];
  int n = 0;
  while (gzgets(z, line, sizeof line) && n < max) out[n++] = strtoll(line, NULL, 10);
  gzclose(z);
  return n;
}

/* The file against Cora's own files; returns the test accuracy it implies. */
static double check_against_cora(const predictions *p, const char *what) {
  static int64_t labels[NODES], ids[NODES];
  cr_assert(p->n == NODES && p->classes == CLASSES, "%s: %lld x %d logits", what, (long long)p->n,
            p->classes);
  cr_assert_eq(read_ints(CORA "/node-label.csv.gz", labels, NODES), NODES);
  int8_t want_split[NODES];
  memset(want_split, -1, sizeof want_split);
  static const char *const files[3] = {CORA "/split/train.csv.gz", CORA "/split/valid.csv.gz",
                                       CORA "/split/test.csv.gz"};
  for (int k = 0; k < 3; k++) {
    const int n = read_ints(files[k], ids, NODES);
    for (int i = 0; i < n; i++) want_split[ids[i]] = (int8_t)k;
  }
  static char seen[NODES];
  memset(seen, 0, sizeof seen);
  int64_t test = 0, right = 0;
  for (int r = 0; r < NODES; r++) {
    const int64_t g = p->gid[r];
    cr_assert(g >= 0 && g < NODES && !seen[g], "%s: row %d has node %lld twice or out of range",
              what, r, (long long)g);
    seen[g] = 1;
    cr_expect_eq(p->label[r], labels[g], "%s: node %lld's label", what, (long long)g);
    cr_expect_eq(p->split[r], want_split[g], "%s: node %lld's split", what, (long long)g);
    int best = 0;
    for (int j = 1; j < CLASSES; j++)
      if (p->logits[r * CLASSES + j] > p->logits[r * CLASSES + best]) best = j;
    cr_expect_eq(p->pred[r], best, "%s: node %lld's pred is not its logits' argmax", what,
                 (long long)g);
    if (want_split[g] == 2) {
      test++;
      right += best == labels[g];
    }
  }
  return (double)right / (double)test;
}

/* A number of the summary line of a metrics file. */
static double summary_figure(const char *path, const char *key) {
  char *text = tr_slurp(path);
  cr_assert(text, "no %s", path);
  const char *summary = strstr(text, "\"summary\": true");
  cr_assert(summary, "%s: no summary", path);
  const double v = tr_json_num(summary, key);
  free(text);
  return v;
}

Test(predictions, file_reproduces_the_reported_accuracy_at_any_p, .timeout = 600) {
  char *dir = tr_tmpdir("predict");
  char shards[2][512], json[600], path[2][700], metrics[2][700], flags[1600];
  predictions *p[2];
  for (int k = 0; k < 2; k++) {
    snprintf(shards[k], sizeof shards[k], "%s/cora-%d", dir, k + 1);
    snprintf(json, sizeof json, "%s.json", shards[k]);
    partition(CORA, k + 1, "metis", "1433,16,7", shards[k], json);
    snprintf(path[k], sizeof path[k], "%s/p%d.h5", dir, k + 1);
    snprintf(metrics[k], sizeof metrics[k], "%s/m%d.jsonl", dir, k + 1);
    snprintf(flags, sizeof flags, "--epochs 60 --deterministic --predict '%s'", path[k]);
    train(k + 1, shards[k], flags, metrics[k]);
    p[k] = read_predictions(path[k]);
    cr_expect_eq(p[k]->epoch, 60, "P=%d: the file's epoch is %lld", k + 1, (long long)p[k]->epoch);
    const double acc = check_against_cora(p[k], k ? "P=2" : "P=1");
    const double reported = summary_figure(metrics[k], "final_test_acc");
    fprintf(stderr, "[predictions] P=%d: test accuracy %.6f from the file, %.6f reported\n", k + 1,
            acc, reported);
    cr_expect(fabs(acc - reported) < 5e-7, "P=%d: test accuracy %.6f from the file, %.6f reported",
              k + 1, acc, reported);
  }
  /* In node order, the two files' logits are the same bits. */
  static float by_node[2][NODES][CLASSES];
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < NODES; r++)
      memcpy(by_node[k][p[k]->gid[r]], p[k]->logits + r * CLASSES, sizeof by_node[k][0]);
  cr_expect(memcmp(by_node[0], by_node[1], sizeof by_node[0]) == 0,
            "--deterministic: P=1 and P=2 logits differ");

  /* An existing file is refused before anything is trained. */
  char log[700];
  snprintf(log, sizeof log, "%s/again.log", dir);
  const int rc = tr_mpirun(2, 120, log, "%s '%s' --epochs 5 --quiet --predict '%s'", TRAIN_BIN,
                           shards[1], path[1]);
  char *out = tr_slurp(log);
  cr_expect_neq(rc, 0, "an existing --predict file was not refused");
  cr_expect(out && strstr(out, "already exists"), "no 'already exists' line:\n%s", out);
  free(out);
  free_predictions(p[0]);
  free_predictions(p[1]);
  tr_rmdir(dir);
}

Test(predictions, early_stop_predicts_from_the_best_epoch_and_eval_only_repeats_it,
     .timeout = 600) {
  char *dir = tr_tmpdir("early");
  char shards[512], json[600], path[700], metrics[700], ck[700], flags[1600], best[800];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  snprintf(path, sizeof path, "%s/best.h5", dir);
  snprintf(metrics, sizeof metrics, "%s/m.jsonl", dir);
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(flags, sizeof flags, "--epochs 400 --early-stop 15 --checkpoint '%s' --predict '%s'", ck,
           path);
  train(2, shards, flags, metrics);
  const double best_epoch = summary_figure(metrics, "best_val_epoch");
  const double trained = summary_figure(metrics, "epochs");
  const double at_best = summary_figure(metrics, "test_acc_at_best_val");
  fprintf(stderr, "[predictions] early stop: best epoch %.0f, stopped after %.0f\n", best_epoch,
          trained);
  cr_expect_eq(trained, best_epoch + 15, "stopped after %.0f epochs, best %.0f", trained,
               best_epoch);
  predictions *p = read_predictions(path);
  cr_expect_eq((double)p->epoch, best_epoch, "the predictions are of epoch %lld",
               (long long)p->epoch);
  const double acc = check_against_cora(p, "early stop");
  cr_expect(fabs(acc - at_best) < 5e-7, "test accuracy %.6f from the file, %.6f at the best epoch",
            acc, at_best);
  snprintf(best, sizeof best, "%s/best.h5", ck);
  struct stat sb;
  cr_expect_eq(stat(best, &sb), 0, "no %s", best);
  free_predictions(p);

  /* --eval-only of the newest checkpoint (the stop epoch) repeats that
   * epoch's accuracies and writes its predictions. */
  char *text = tr_slurp(metrics);
  cr_assert(text);
  char *last = NULL;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (!strstr(line, "\"summary\"")) last = line;
  cr_assert(last);
  const double val = tr_json_num(last, "val_acc"), test = tr_json_num(last, "test_acc");
  char eval_metrics[700], eval_path[700];
  snprintf(eval_metrics, sizeof eval_metrics, "%s/eval.jsonl", dir);
  snprintf(eval_path, sizeof eval_path, "%s/eval.h5", dir);
  snprintf(flags, sizeof flags, "--eval-only --checkpoint '%s' --resume --predict '%s'", ck,
           eval_path);
  train(2, shards, flags, eval_metrics);
  char *eval = tr_slurp(eval_metrics);
  cr_assert(eval && strstr(eval, "\"evaluation\": true"), "no evaluation line:\n%s", eval);
  cr_expect_eq(tr_json_num(eval, "epoch"), trained);
  cr_expect_eq(tr_json_num(eval, "val_acc"), val, "--eval-only val %.6f, the run's last %.6f",
               tr_json_num(eval, "val_acc"), val);
  cr_expect_eq(tr_json_num(eval, "test_acc"), test, "--eval-only test %.6f, the run's last %.6f",
               tr_json_num(eval, "test_acc"), test);
  p = read_predictions(eval_path);
  cr_expect_eq((double)p->epoch, trained);
  cr_expect(fabs(check_against_cora(p, "eval-only") - test) < 5e-7);
  free_predictions(p);
  free(eval);
  free(text);
  tr_rmdir(dir);
}

/* Macro-F1 of the test split from the file, with per-class precision and
 * recall (classes that occur among the labels or predictions). */
static double f1_from_file(const predictions *p) {
  double sum = 0.0;
  int present = 0;
  for (int c = 0; c < p->classes; c++) {
    int64_t tp = 0, npred = 0, ntrue = 0;
    for (int64_t r = 0; r < p->n; r++) {
      if (p->split[r] != 2) continue;
      npred += p->pred[r] == c;
      ntrue += p->label[r] == c;
      tp += p->pred[r] == c && p->label[r] == c;
    }
    if (npred + ntrue == 0) continue;
    present++;
    const double precision = npred ? (double)tp / (double)npred : 0.0,
                 recall = ntrue ? (double)tp / (double)ntrue : 0.0;
    sum += precision + recall > 0.0 ? 2.0 * precision * recall / (precision + recall) : 0.0;
  }
  return sum / present;
}

/* ROC-AUC of the test split from the file, pair by pair (ties count half). */
static double auc_from_file(const predictions *p) {
  double wins = 0.0;
  int64_t pos = 0, neg = 0;
  for (int64_t a = 0; a < p->n; a++) {
    if (p->split[a] != 2 || p->label[a] != 1) continue;
    pos++;
    const float sa = p->logits[2 * a + 1] - p->logits[2 * a];
    for (int64_t b = 0; b < p->n; b++) {
      if (p->split[b] != 2 || p->label[b] != 0) continue;
      const float sb = p->logits[2 * b + 1] - p->logits[2 * b];
      wins += sa > sb ? 1.0 : sa == sb ? 0.5 : 0.0;
    }
  }
  for (int64_t b = 0; b < p->n; b++) neg += p->split[b] == 2 && p->label[b] == 0;
  return wins / ((double)pos * (double)neg);
}

/* --metric f1 on Cora and --metric auc on a binary sbm graph, at P=1 and
 * P=3: the summary's final test figure equals the one recomputed from the
 * predictions file, and does not depend on P. */
Test(predictions, f1_and_auc_match_the_predictions_file_at_any_p, .timeout = 600) {
  static const struct {
    const char *input, *dims, *metric;
    double (*from_file)(const predictions *);
  } cases[] = {{CORA, "1433,16,7", "f1", f1_from_file},
               {"sbm:nodes=3000,avg-degree=8,feat=16,classes=2,homophily=0.7,seed=5", "16,16,2",
                "auc", auc_from_file}};
  char *dir = tr_tmpdir("metric");
  for (int c = 0; c < 2; c++) {
    double figure[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
      const int parts = k ? 3 : 1;
      char shards[512], json[600], path[700], metrics[700], flags[900], key[32];
      snprintf(shards, sizeof shards, "%s/%s-%d", dir, cases[c].metric, parts);
      snprintf(json, sizeof json, "%s.json", shards);
      partition(cases[c].input, parts, "metis", cases[c].dims, shards, json);
      snprintf(path, sizeof path, "%s.h5", shards);
      snprintf(metrics, sizeof metrics, "%s.jsonl", shards);
      snprintf(flags, sizeof flags, "--epochs 30 --deterministic --metric %s --predict '%s'",
               cases[c].metric, path);
      train(parts, shards, flags, metrics);
      snprintf(key, sizeof key, "final_test_%s", cases[c].metric);
      figure[k] = summary_figure(metrics, key);
      predictions *p = read_predictions(path);
      const double recomputed = cases[c].from_file(p);
      fprintf(stderr, "[predictions] --metric %s P=%d: %.6f reported, %.6f from the file\n",
              cases[c].metric, parts, figure[k], recomputed);
      cr_expect(fabs(figure[k] - recomputed) < 5e-7,
                "--metric %s P=%d: %.6f reported, %.6f from the file", cases[c].metric, parts,
                figure[k], recomputed);
      free_predictions(p);
    }
    cr_expect_eq(figure[0], figure[1], "--metric %s: %.6f at P=1, %.6f at P=3", cases[c].metric,
                 figure[0], figure[1]);
  }
  tr_rmdir(dir);
}

/* --early-stop across a resume: a run stopped (by --epochs) between its
 * best validation epoch and the early stop, then resumed with its own
 * metrics file, stops at the same epoch as a straight run, with the same
 * best epoch, and predicts from the best epoch's parameters (DIR/best.h5 of
 * the first run): the same logits, bit for bit. */
Test(predictions, early_stop_survives_a_resume, .timeout = 600) {
  char *dir = tr_tmpdir("early-resume");
  char shards[512], json[600], path[2][700], metrics[2][700], ck[2][700], flags[1600];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  for (int k = 0; k < 2; k++) {
    snprintf(path[k], sizeof path[k], "%s/p%d.h5", dir, k);
    snprintf(metrics[k], sizeof metrics[k], "%s/m%d.jsonl", dir, k);
    snprintf(ck[k], sizeof ck[k], "%s/ck%d", dir, k);
  }
  snprintf(flags, sizeof flags,
           "--deterministic --epochs 400 --early-stop 15 --checkpoint '%s' --predict '%s'", ck[0],
           path[0]);
  train(2, shards, flags, metrics[0]);
  const double best = summary_figure(metrics[0], "best_val_epoch"),
               stop = summary_figure(metrics[0], "epochs");
  snprintf(flags, sizeof flags, "--deterministic --epochs %.0f --early-stop 15 --checkpoint '%s'",
           best + 5, ck[1]);
  train(2, shards, flags, metrics[1]);
  snprintf(flags, sizeof flags,
           "--deterministic --epochs 400 --early-stop 15 --checkpoint '%s' --resume --predict '%s'",
           ck[1], path[1]);
  train(2, shards, flags, metrics[1]);
  fprintf(stderr, "[predictions] early stop across a resume at epoch %.0f: best %.0f, stop %.0f\n",
          best + 5, best, stop);
  cr_expect_eq(summary_figure(metrics[1], "epochs"), stop, "resumed: stopped after %.0f, not %.0f",
               summary_figure(metrics[1], "epochs"), stop);
  cr_expect_eq(summary_figure(metrics[1], "best_val_epoch"), best);
  predictions *p[2] = {read_predictions(path[0]), read_predictions(path[1])};
  cr_expect_eq(p[1]->epoch, p[0]->epoch);
  cr_expect(memcmp(p[0]->logits, p[1]->logits, (size_t)p[0]->n * CLASSES * sizeof(float)) == 0,
            "the resumed run's predictions differ from the straight run's");
  free_predictions(p[0]);
  free_predictions(p[1]);
  tr_rmdir(dir);
}

/* A SNAP edge list of scattered ids: the predictions carry each node's id
 * in the file (/original_id), which must be the id that ranks global_id-th
 * among the file's distinct ids (the loader's ascending renumbering). */
Test(predictions, snap_ids_come_back_as_original_ids, .timeout = 300) {
  const uint64_t seed = tr_seed("predictions.snap", 11);
  char *dir = tr_tmpdir("snap-ids");
  char edges[600], shards[600], path[700], metrics[700], log[700], flags[900];
  enum { IDS = 300 };
  int64_t ids[IDS];
  /* Distinct ids spread over [0, 10^9), in random order in the file. */
  uint64_t x = seed * 2654435761u + 1;
  for (int i = 0; i < IDS; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = (int64_t)(x >> 34) * IDS + i; /* distinct by construction */
  }
  snprintf(edges, sizeof edges, "%s/g.txt", dir);
  FILE *f = fopen(edges, "w");
  cr_assert(f);
  fprintf(f, "# a test graph\n");
  for (int i = 0; i < IDS; i++)
    for (int k = 1; k <= 3; k++)
      fprintf(f, "%lld\t%lld\n", (long long)ids[i], (long long)ids[(i * 7 + k * 13) % IDS]);
  fclose(f);
  snprintf(shards, sizeof shards, "%s/g-2", dir);
  snprintf(log, sizeof log, "%s/partition.log", dir);
  cr_assert_eq(tr_run(120, log,
                      "%s --input '%s' --parts 2 --out '%s' --synthetic-features 8 "
                      "--synthetic-classes 3",
                      PARTITION_BIN, edges, shards),
               0, "halo-partition failed (see %s)", log);
  snprintf(path, sizeof path, "%s/p.h5", dir);
  snprintf(metrics, sizeof metrics, "%s/m.jsonl", dir);
  snprintf(flags, sizeof flags, "--epochs 3 --predict '%s'", path);
  train(2, shards, flags, metrics);

  /* The loader's order: the distinct ids, ascending. */
  int64_t sorted[IDS];
  memcpy(sorted, ids, sizeof sorted);
  for (int i = 1; i < IDS; i++)
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      const int64_t t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  predictions *p = read_predictions(path);
  cr_assert_eq(p->n, IDS);
  int64_t *orig = malloc(IDS * sizeof *orig);
  cr_assert(orig);
  hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(h, 0);
  read_dataset(h, "/original_id", H5T_NATIVE_INT64, orig);
  H5Fclose(h);
  for (int r = 0; r < IDS; r++)
    cr_expect_eq(orig[r], sorted[p->gid[r]], "row %d: node %lld has original id %lld, not %lld", r,
                 (long long)p->gid[r], (long long)orig[r], (long long)sorted[p->gid[r]]);
  free(orig);
  free_predictions(p);

  /* Cora's ids are its own: no /original_id. */
  char cora[600], json[700];
  snprintf(cora, sizeof cora, "%s/cora-1", dir);
  snprintf(json, sizeof json, "%s.json", cora);
  partition(CORA, 1, "metis", "1433,16,7", cora, json);
  snprintf(path, sizeof path, "%s/cora.h5", dir);
  snprintf(metrics, sizeof metrics, "%s/cora.jsonl", dir); /* a fresh run's own */
  snprintf(flags, sizeof flags, "--epochs 1 --predict '%s'", path);
  train(1, cora, flags, metrics);
  h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(h, 0);
  cr_expect_eq(H5Lexists(h, "/original_id", H5P_DEFAULT), 0,
               "Cora's predictions have original ids");
  H5Fclose(h);
  tr_rmdir(dir);
}
