/* Multi-label node classification end to end: an OGB folder whose
 * node-label.csv has several 0/1 columns (one binary task each, as in
 * ogbn-proteins; some entries missing), partitioned by the real
 * halo-partition and trained by halo-train under mpirun.
 *
 * The graph is drawn here (seeded, the seed printed): 8 communities, tasks
 * that are functions of the community, features that are a noisy one-hot
 * of it.  Checks, each against something computed here and not by halo:
 *   - --deterministic at P=1 and P=3 gives the same losses and parameters,
 *     bit for bit;
 *   - the --predict file holds the drawn targets as /label, /pred is
 *     logit > 0, and its test figures recomputed here (mean per-task ROC-AUC
 *     pair by pair, element accuracy, the BCE loss in double) equal those
 *     the run reported for its last epoch;
 *   - the model learns (test AUC well above chance);
 *   - --metric f1 reports the per-task macro-F1 recomputed from the file. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-run.h"

enum { NODES = TR_ML_NODES, TASKS = TR_ML_TASKS, FEATURES = TR_ML_FEATURES, EPOCHS = 60 };

static int8_t targets[NODES][TASKS];

typedef struct predictions {
  int64_t n;
  int64_t gid[NODES];
  float logits[NODES][TASKS];
  int8_t pred[NODES][TASKS], label[NODES][TASKS], split[NODES];
} predictions;

static void read_set(hid_t f, const char *name, hid_t type, int rank, void *out) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  cr_assert_geq(d, 0, "no dataset %s", name);
  hid_t space = H5Dget_space(d);
  cr_assert_eq(H5Sget_simple_extent_ndims(space), rank, "%s: rank %d, expected %d", name,
               H5Sget_simple_extent_ndims(space), rank);
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space, dims, NULL);
  cr_assert_eq(dims[0], NODES, "%s: %llu rows", name, (unsigned long long)dims[0]);
  if (rank == 2) cr_assert_eq(dims[1], TASKS, "%s: %llu columns", name, (unsigned long long)dims[1]);
  H5Sclose(space);
  cr_assert_geq(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), 0, "cannot read %s", name);
  H5Dclose(d);
}

static predictions *read_predictions(const char *path) {
  predictions *p = calloc(1, sizeof *p);
  cr_assert(p);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", path);
  p->n = NODES;
  read_set(f, "/global_id", H5T_NATIVE_INT64, 1, p->gid);
  read_set(f, "/logits", H5T_NATIVE_FLOAT, 2, p->logits);
  read_set(f, "/pred", H5T_NATIVE_INT8, 2, p->pred);
  read_set(f, "/label", H5T_NATIVE_INT8, 2, p->label);
  read_set(f, "/split", H5T_NATIVE_INT8, 1, p->split);
  cr_expect_gt(H5Aexists(f, "multilabel"), 0, "%s: no multilabel attribute", path);
  H5Fclose(f);
  return p;
}

/* Split 2's mean ROC-AUC over the tasks with both classes, pair by pair. */
static double auc_from_file(const predictions *p) {
  double sum = 0.0;
  int scored = 0;
  for (int t = 0; t < TASKS; t++) {
    double wins = 0.0;
    int64_t pos = 0, neg = 0;
    for (int64_t a = 0; a < p->n; a++) {
      if (p->split[a] != 2 || p->label[a][t] < 0) continue;
      if (p->label[a][t] == 0) {
        neg++;
        continue;
      }
      pos++;
      for (int64_t b = 0; b < p->n; b++)
        if (p->split[b] == 2 && p->label[b][t] == 0)
          wins += p->logits[a][t] > p->logits[b][t]    ? 1.0
                  : p->logits[a][t] == p->logits[b][t] ? 0.5
                                                       : 0.0;
    }
    if (pos && neg) {
      sum += wins / ((double)pos * (double)neg);
      scored++;
    }
  }
  return sum / scored;
}

/* Split 2's per-task macro-F1 (positive class, logit > 0 predicts 1). */
static double f1_from_file(const predictions *p) {
  double sum = 0.0;
  int present = 0;
  for (int t = 0; t < TASKS; t++) {
    int64_t tp = 0, fp = 0, fn = 0;
    for (int64_t a = 0; a < p->n; a++) {
      if (p->split[a] != 2 || p->label[a][t] < 0) continue;
      const int pred = p->logits[a][t] > 0.0f, y = p->label[a][t];
      tp += pred && y;
      fp += pred && !y;
      fn += !pred && y;
    }
    if (tp + fp + fn == 0) continue;
    sum += 2.0 * (double)tp / (double)(2 * tp + fp + fn);
    present++;
  }
  return sum / present;
}

/* Split 2's element accuracy and mean BCE over its labelled entries. */
static void test_acc_and_loss(const predictions *p, double *acc, double *loss) {
  int64_t right = 0, entries = 0;
  double sum = 0.0;
  for (int64_t a = 0; a < p->n; a++)
    for (int t = 0; p->split[a] == 2 && t < TASKS; t++) {
      const int y = p->label[a][t];
      if (y < 0) continue;
      const double z = p->logits[a][t];
      /* -y·log σ(z) - (1-y)·log(1 - σ(z)) */
      sum += y ? log1p(exp(-z)) : log1p(exp(z));
      right += (z > 0.0) == (y == 1);
      entries++;
    }
  *acc = (double)right / (double)entries;
  *loss = sum / (double)entries;
}

/* The last epoch line of a metrics file. */
static char *last_epoch_line(const char *path) {
  char *text = tr_slurp(path);
  cr_assert(text, "no %s", path);
  char *line = NULL;
  for (char *at = text; (at = strstr(at, "{\"epoch\": ")); at++) line = at;
  cr_assert(line, "%s: no epoch line", path);
  char *end = strchr(line, '\n');
  if (end) *end = '\0';
  line = strdup(line);
  free(text);
  return line;
}

Test(multilabel, trains_alike_at_any_p_and_reports_what_the_file_holds, .timeout = 600) {
  const uint64_t seed = tr_seed("multilabel", 21);
  char *dir = tr_tmpdir("multilabel");
  tr_multilabel_graph(dir, seed, targets);
  char graph[600], dims[64];
  snprintf(graph, sizeof graph, "%s/graph", dir);
  snprintf(dims, sizeof dims, "%d,16,%d", FEATURES, TASKS);
  run_report run[2];
  predictions *p[2];
  for (int k = 0; k < 2; k++) {
    const int parts = k ? 3 : 1;
    char shards[700], json[800], path[800], metrics[800], flags[1200];
    snprintf(shards, sizeof shards, "%s/shards-%d", dir, parts);
    snprintf(json, sizeof json, "%s.json", shards);
    partition(graph, parts, "metis", dims, shards, json);
    snprintf(path, sizeof path, "%s.h5", shards);
    snprintf(metrics, sizeof metrics, "%s.jsonl", shards);
    snprintf(flags, sizeof flags, "--epochs %d --lr 0.05 --deterministic --predict '%s'", EPOCHS,
             path);
    train(parts, shards, flags, metrics);
    read_report(metrics, &run[k]);
    p[k] = read_predictions(path);

    /* The file against what was drawn. */
    for (int64_t r = 0; r < NODES; r++) {
      const int64_t u = p[k]->gid[r];
      cr_assert(u >= 0 && u < NODES);
      for (int t = 0; t < TASKS; t++) {
        cr_expect_eq(p[k]->label[r][t], targets[u][t], "P=%d node %lld task %d: label %d, drawn %d",
                     parts, (long long)u, t, p[k]->label[r][t], targets[u][t]);
        cr_expect_eq(p[k]->pred[r][t], p[k]->logits[r][t] > 0.0f, "P=%d node %lld task %d: pred",
                     parts, (long long)u, t);
      }
    }
    /* The run's last epoch against the file. */
    char *line = last_epoch_line(metrics);
    const double auc = auc_from_file(p[k]), reported_auc = tr_json_num(line, "test_auc");
    double acc, loss;
    test_acc_and_loss(p[k], &acc, &loss);
    const double reported_acc = tr_json_num(line, "test_acc");
    const double reported_loss = tr_json_num(line, "test_loss");
    fprintf(stderr,
            "[multilabel] P=%d: test auc %.9f (file %.9f), acc %.9f (file %.9f), loss %.9f "
            "(file %.9f)\n",
            parts, reported_auc, auc, reported_acc, acc, reported_loss, loss);
    cr_expect(fabs(auc - reported_auc) < 1e-12, "P=%d: test AUC %.12f reported, %.12f from the file",
              parts, reported_auc, auc);
    cr_expect(fabs(acc - reported_acc) < 1e-12, "P=%d: test acc %.12f reported, %.12f from the file",
              parts, reported_acc, acc);
    cr_expect(fabs(loss - reported_loss) < 1e-6 * loss,
              "P=%d: test loss %.9f reported, %.9f from the file", parts, reported_loss, loss);
    cr_expect_gt(auc, 0.85, "P=%d: test AUC %.3f: the model did not learn the tasks", parts, auc);
    free(line);
  }
  expect_bit_identical(&run[0], &run[1], "multi-label P=1 vs P=3");
  free(p[0]);
  free(p[1]);

  /* --metric f1: the summary's figure is the file's per-task macro-F1. */
  char shards[700], path[800], metrics[800], flags[1200];
  snprintf(shards, sizeof shards, "%s/shards-3", dir);
  snprintf(path, sizeof path, "%s/f1.h5", dir);
  snprintf(metrics, sizeof metrics, "%s/f1.jsonl", dir);
  snprintf(flags, sizeof flags, "--epochs 20 --lr 0.05 --metric f1 --predict '%s'", path);
  train(3, shards, flags, metrics);
  predictions *f = read_predictions(path);
  char *line = last_epoch_line(metrics);
  const double f1 = f1_from_file(f), reported = tr_json_num(line, "test_f1");
  fprintf(stderr, "[multilabel] --metric f1 P=3: %.9f reported, %.9f from the file\n", reported, f1);
  cr_expect(fabs(f1 - reported) < 1e-12, "--metric f1: %.12f reported, %.12f from the file",
            reported, f1);
  free(line);
  free(f);
  tr_rmdir(dir);
}
