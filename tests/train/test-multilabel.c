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
#include <sys/stat.h>

#include "train-cli.h"
#include "train-run.h"

enum { NODES = 800, TASKS = 6, FEATURES = 8, COMMUNITIES = 8, EPOCHS = 60 };

static int8_t targets[NODES][TASKS];

static uint64_t next(uint64_t *x) {
  *x = *x * 6364136223846793005ull + 1442695040888963407ull;
  return *x >> 33;
}

static void write_file(const char *dir, const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* The OGB folder DIR/graph; fills targets. */
static void draw_graph(const char *dir, uint64_t seed) {
  char folder[600], split[700];
  snprintf(folder, sizeof folder, "%s/graph", dir);
  snprintf(split, sizeof split, "%s/split", folder);
  cr_assert(mkdir(folder, 0755) == 0 && mkdir(split, 0755) == 0);
  uint64_t x = seed;
  int community[NODES];
  for (int u = 0; u < NODES; u++) community[u] = (int)(next(&x) % COMMUNITIES);

  size_t cap = 1 << 20;
  char *edges = malloc(cap), *feat = malloc(cap), *label = malloc(cap), *sets[3];
  cr_assert(edges && feat && label);
  size_t ne = 0, nf = 0, nl = 0, ns[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) cr_assert(sets[k] = malloc(cap / 8));
  for (int u = 0; u < NODES; u++) {
    for (int j = 0; j < 5; j++) {
      int v = (int)(next(&x) % NODES);
      if (next(&x) % 100 < 85) /* mostly inside the community */
        while (community[v] != community[u]) v = (int)(next(&x) % NODES);
      if (v != u) ne += (size_t)snprintf(edges + ne, cap - ne, "%d,%d\n", u, v);
    }
    const int c = community[u];
    for (int f = 0; f < FEATURES; f++) {
      const double noise = (double)(next(&x) % 2001) / 1000.0 - 1.0;
      nf += (size_t)snprintf(feat + nf, cap - nf, "%s%.3f", f ? "," : "",
                             (f == c ? 1.0 : 0.0) + noise);
    }
    feat[nf++] = '\n';
    const int t3 = c % 3 == 0, t4 = (c >= 4) ^ (c & 1), t5 = c % 2 == 0;
    const int value[TASKS] = {c & 1, (c >> 1) & 1, (c >> 2) & 1, t3, t4, t5};
    for (int t = 0; t < TASKS; t++) {
      /* Task 5 is missing for about 30% of the nodes. */
      targets[u][t] = t == 5 && next(&x) % 10 < 3 ? -1 : (int8_t)value[t];
      nl += (size_t)snprintf(label + nl, cap - nl, "%s%s", t ? "," : "",
                             targets[u][t] < 0 ? "nan" : targets[u][t] ? "1" : "0");
    }
    label[nl++] = '\n';
    const int which = (int)(next(&x) % 10) < 6 ? 0 : next(&x) % 2 ? 1 : 2;
    ns[which] += (size_t)snprintf(sets[which] + ns[which], cap / 8 - ns[which], "%d\n", u);
  }
  edges[ne] = feat[nf] = label[nl] = '\0';
  write_file(folder, "edge.csv", edges);
  write_file(folder, "node-feat.csv", feat);
  write_file(folder, "node-label.csv", label);
  char count[32];
  snprintf(count, sizeof count, "%d\n", NODES);
  write_file(folder, "num-node-list.csv", count);
  static const char *const names[3] = {"train.csv", "valid.csv", "test.csv"};
  for (int k = 0; k < 3; k++) {
    sets[k][ns[k]] = '\0';
    write_file(split, names[k], sets[k]);
    free(sets[k]);
  }
  free(edges);
  free(feat);
  free(label);
}

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
  draw_graph(dir, seed);
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
