#include "train-cli.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
