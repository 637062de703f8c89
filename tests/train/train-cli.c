#include "train-cli.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train-run.h"

void read_metrics(const char *path, metrics *m) {
  char *text = tr_slurp(path);
  cr_assert(text, "no metrics file %s", path);
  memset(m, 0, sizeof *m);
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strstr(line, "\"summary\": true")) {
      m->has_summary = 1;
      m->final_test = tr_json_num(line, "final_test_acc");
      m->setup_bytes = tr_json_num(line, "setup_halo_bytes");
      m->memory_used = tr_json_num(line, "memory_used_bytes");
      m->memory_predicted = tr_json_num(line, "memory_predicted_bytes");
      continue;
    }
    int e = (int)tr_json_num(line, "epoch");
    cr_assert(e == m->epochs + 1 && e <= MAX_EPOCHS, "%s: epoch %d out of order", path, e);
    m->loss[m->epochs] = tr_json_num(line, "loss");
    m->halo[m->epochs] = tr_json_num(line, "halo_bytes");
    m->predicted[m->epochs] = tr_json_num(line, "halo_bytes_predicted");
    m->val_loss[m->epochs] = tr_json_num(line, "val_loss");
    m->eval_halo[m->epochs] = tr_json_num(line, "eval_halo_bytes");
    m->train_acc = tr_json_num(line, "train_acc");
    m->val_acc = tr_json_num(line, "val_acc");
    m->test_acc = tr_json_num(line, "test_acc");
    m->epochs++;
  }
  free(text);
  cr_assert(m->has_summary, "%s has no summary line", path);
}

void partition(const char *input, int parts, const char *method, const char *dims, const char *out,
               const char *json) {
  char log[600];
  snprintf(log, sizeof log, "%s.log", out);
  int rc = tr_run(120, log,
                  "%s --input '%s' --parts %d --method %s --dims %s --out '%s' --json '%s' --force",
                  PARTITION_BIN, input, parts, method, dims, out, json);
  cr_assert_eq(rc, 0, "halo-partition exited with %d (see %s)", rc, log);
}

void train(int np, const char *shards, const char *extra, const char *metrics_path) {
  char log[600];
  snprintf(log, sizeof log, "%s.log", metrics_path);
  int rc = tr_mpirun(np, 300, log, "%s '%s' --threads 1 --quiet --metrics '%s' %s", TRAIN_BIN,
                     shards, metrics_path, extra);
  cr_assert_eq(rc, 0, "halo-train -np %d exited with %d (see %s)", np, rc, log);
}

void expect_memory_bounded(const metrics *m, double unmodelled, const char *tag) {
  const double used = m->memory_used, predicted = m->memory_predicted;
  cr_expect(used > 0 && predicted > 0, "%s: memory used %.0f bytes, predicted %.0f", tag, used,
            predicted);
  cr_expect(used <= 1.05 * predicted + unmodelled,
            "%s: the model took %.0f bytes, over the %.0f predicted (+5%%, +%.0f)", tag, used,
            predicted, unmodelled);
  cr_expect(predicted <= 1.25 * used, "%s: %.0f bytes predicted, %.2f times the %.0f used", tag,
            predicted, predicted / used, used);
}

char *summary_line(const char *path) {
  char *text = tr_slurp(path);
  cr_assert(text, "no %s", path);
  char *line = strstr(text, "\"summary\": true");
  cr_assert(line, "%s has no summary", path);
  while (line > text && line[-1] != '\n') line--;
  char *copy = strdup(line);
  free(text);
  return copy;
}

double json_figure(const char *path, const char *key) {
  char *text = tr_slurp(path);
  cr_assert(text, "no %s", path);
  double v = tr_json_num(text, key);
  free(text);
  cr_assert(!isnan(v), "%s has no %s", path, key);
  return v;
}

double worst_loss_difference(const metrics *a, const metrics *b, int n, int *at) {
  double worst = 0.0;
  *at = 1;
  for (int e = 0; e < n; e++) {
    double rel = fabs(b->loss[e] - a->loss[e]) / fabs(a->loss[e]);
    if (!(rel <= worst)) { /* NaN counts as the worst */
      worst = rel;
      *at = e + 1;
    }
  }
  return worst;
}

void read_params_sha256(const char *path, char sha[65]) {
  char *text = tr_slurp(path);
  cr_assert(text, "no metrics file %s", path);
  const char *key = strstr(text, "\"params_sha256\": \"");
  cr_assert(key, "%s: the summary has no params_sha256", path);
  key += strlen("\"params_sha256\": \"");
  cr_assert(strlen(key) > 64 && key[64] == '"', "%s: params_sha256 is not 64 hex digits", path);
  memcpy(sha, key, 64);
  sha[64] = '\0';
  free(text);
}

void read_report(const char *path, run_report *r) {
  read_metrics(path, &r->m);
  read_params_sha256(path, r->sha);
}

void read_resumed_report(const char *path, run_report *r) {
  char *text = tr_slurp(path);
  cr_assert(text, "no metrics file %s", path);
  memset(r, 0, sizeof *r);
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strstr(line, "\"summary\": true")) continue;
    cr_assert_lt(r->m.epochs, MAX_EPOCHS, "%s: more than %d epochs", path, MAX_EPOCHS);
    r->m.loss[r->m.epochs++] = tr_json_num(line, "loss");
  }
  free(text);
  read_params_sha256(path, r->sha);
}

void expect_bit_identical(const run_report *a, const run_report *b, const char *what) {
  cr_assert_eq(a->m.epochs, b->m.epochs, "%s: %d epochs, not %d", what, b->m.epochs, a->m.epochs);
  int bad = 0;
  for (int e = 0; e < a->m.epochs; e++)
    if (memcmp(&a->m.loss[e], &b->m.loss[e], sizeof(double)) != 0 && bad++ < 3)
      cr_expect_fail("%s: epoch %d's loss is %.17g, not %.17g", what, e + 1, b->m.loss[e],
                     a->m.loss[e]);
  cr_expect_eq(bad, 0, "%s: %d epochs' losses differ", what, bad);
  cr_expect_str_eq(b->sha, a->sha, "%s: the final parameters differ (params_sha256 %s, not %s)",
                   what, b->sha, a->sha);
  cr_expect_eq(a->m.final_test, b->m.final_test, "%s: final test accuracy %.6f, not %.6f", what,
               b->m.final_test, a->m.final_test);
}

/* ---- a multi-label graph ----------------------------------------------- */

static uint64_t ml_next(uint64_t *x) {
  *x = *x * 6364136223846793005ull + 1442695040888963407ull;
  return *x >> 33;
}

static void ml_write_file(const char *dir, const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

void tr_multilabel_graph(const char *dir, uint64_t seed, int8_t targets[][TR_ML_TASKS]) {
  char folder[600], split[700];
  snprintf(folder, sizeof folder, "%s/graph", dir);
  snprintf(split, sizeof split, "%s/split", folder);
  cr_assert(mkdir(folder, 0755) == 0 && mkdir(split, 0755) == 0);
  uint64_t x = seed;
  int community[TR_ML_NODES];
  for (int u = 0; u < TR_ML_NODES; u++) community[u] = (int)(ml_next(&x) % TR_ML_COMMUNITIES);

  size_t cap = 1 << 20;
  char *edges = malloc(cap), *feat = malloc(cap), *label = malloc(cap), *sets[3];
  cr_assert(edges && feat && label);
  size_t ne = 0, nf = 0, nl = 0, ns[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) cr_assert(sets[k] = malloc(cap / 8));
  for (int u = 0; u < TR_ML_NODES; u++) {
    for (int j = 0; j < 5; j++) {
      int v = (int)(ml_next(&x) % TR_ML_NODES);
      if (ml_next(&x) % 100 < 85) /* mostly inside the community */
        while (community[v] != community[u]) v = (int)(ml_next(&x) % TR_ML_NODES);
      if (v != u) ne += (size_t)snprintf(edges + ne, cap - ne, "%d,%d\n", u, v);
    }
    const int c = community[u];
    for (int f = 0; f < TR_ML_FEATURES; f++) {
      const double noise = (double)(ml_next(&x) % 2001) / 1000.0 - 1.0;
      nf += (size_t)snprintf(feat + nf, cap - nf, "%s%.3f", f ? "," : "",
                             (f == c ? 1.0 : 0.0) + noise);
    }
    feat[nf++] = '\n';
    const int t3 = c % 3 == 0, t4 = (c >= 4) ^ (c & 1), t5 = c % 2 == 0;
    const int value[TR_ML_TASKS] = {c & 1, (c >> 1) & 1, (c >> 2) & 1, t3, t4, t5};
    for (int t = 0; t < TR_ML_TASKS; t++) {
      /* Task 5 is missing for about 30% of the nodes. */
      const int8_t drawn = t == 5 && ml_next(&x) % 10 < 3 ? -1 : (int8_t)value[t];
      nl += (size_t)snprintf(label + nl, cap - nl, "%s%s", t ? "," : "",
                             drawn < 0 ? "nan"
                             : drawn   ? "1"
                                       : "0");
      if (targets) targets[u][t] = drawn;
    }
    label[nl++] = '\n';
    const int which = (int)(ml_next(&x) % 10) < 6 ? 0 : ml_next(&x) % 2 ? 1 : 2;
    ns[which] += (size_t)snprintf(sets[which] + ns[which], cap / 8 - ns[which], "%d\n", u);
  }
  edges[ne] = feat[nf] = label[nl] = '\0';
  ml_write_file(folder, "edge.csv", edges);
  ml_write_file(folder, "node-feat.csv", feat);
  ml_write_file(folder, "node-label.csv", label);
  char count[32];
  snprintf(count, sizeof count, "%d\n", TR_ML_NODES);
  ml_write_file(folder, "num-node-list.csv", count);
  static const char *const names[3] = {"train.csv", "valid.csv", "test.csv"};
  for (int k = 0; k < 3; k++) {
    sets[k][ns[k]] = '\0';
    ml_write_file(split, names[k], sets[k]);
    free(sets[k]);
  }
  free(edges);
  free(feat);
  free(label);
}
