/* --halo-sample (BNS-GCN's boundary sampling; docs/train.md).
 *
 *  - The key: a node's draw is a function of (seed, epoch, global id)
 *    alone, keeps about p of the nodes, changes with the epoch, and keeps
 *    every node at p = 1; so on the fixture's shards at P = 2 and 3 each
 *    sender's kept rows to a peer are exactly the rows that peer keeps from
 *    it, in the same order (the messages agree without a message), and a
 *    node kept at one P is kept at the other.
 *  - End to end on the bundled Cora: the bytes measured equal the bytes
 *    predicted every epoch (they change with the epoch's draw) at P = 2
 *    and 3, also with int8 rows, and halo-partition predicts the same
 *    bytes epoch by epoch; p = 1 is the plain run bit for bit; a
 *    --deterministic run repeats bit for bit; the refusals are one line.
 * (Gradients of a sampled epoch against central differences:
 * tests/train/test-layers.c, halo_sample_p3.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-predict.h"
#include "halo-sample.h"
#include "train-cli.h"
#include "train-fixture.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

Test(halo_sample, key_is_keyed_by_seed_epoch_and_id) {
  const uint64_t seed = tr_seed("halo_sample.key", 21);
  enum { N = 200000 };
  const float ps[] = {0.1f, 0.5f, 0.9f};
  for (int k = 0; k < 3; k++) {
    const float p = ps[k];
    const uint64_t key = halo_sample_key(seed, 7), other = halo_sample_key(seed, 8);
    int64_t kept = 0, moved = 0;
    for (int64_t v = 0; v < N; v++) {
      const int a = halo_sample_keep(key, v, p);
      cr_assert_eq(a, halo_sample_keep(halo_sample_key(seed, 7), v, p), "not a pure function");
      kept += a;
      moved += a != halo_sample_keep(other, v, p);
    }
    /* Binomial(N, p): 6 standard deviations. */
    const double sd = sqrt((double)N * p * (1.0 - p));
    cr_expect(fabs((double)kept - (double)N * p) <= 6.0 * sd, "p = %g kept %lld of %d (seed %llu)",
              (double)p, (long long)kept, N, (unsigned long long)seed);
    cr_expect_gt(moved, 0, "p = %g: epochs 7 and 8 drew the same set", (double)p);
    int64_t *ids = malloc(N * sizeof *ids);
    for (int64_t v = 0; v < N; v++) ids[v] = 3 * v + 1;
    int64_t direct = 0;
    for (int64_t v = 0; v < N; v++) direct += halo_sample_keep(key, ids[v], p);
    cr_expect_eq(halo_predict_sample_rows(ids, N, seed, 7, p), direct);
    cr_expect_eq(halo_predict_sample_rows(ids, N, seed, 7, 1.0f), N, "p = 1 keeps every row");
    free(ids);
  }
  cr_expect(halo_sample_keep(halo_sample_key(seed, 1), 5, 1.0f));
  cr_expect_eq(halo_sample_scale(0.5f), 2.0f);
}

/* The kept global ids that part p sends to part q (send list order), or
 * receives from it (halo order), as a list; returns its length. */
static int64_t kept_between(const halo_shard *s, int q, int recv, uint64_t key, float p,
                            int64_t *out) {
  int64_t n = 0;
  if (recv) {
    for (int64_t h = s->recv_ptr[q]; h < s->recv_ptr[q + 1]; h++)
      if (halo_sample_keep(key, s->global_id[s->n_owned + h], p))
        out[n++] = s->global_id[s->n_owned + h];
  } else {
    for (int64_t k = s->send_ptr[q]; k < s->send_ptr[q + 1]; k++)
      if (halo_sample_keep(key, s->global_id[s->send_idx[k]], p))
        out[n++] = s->global_id[s->send_idx[k]];
  }
  return n;
}

Test(halo_sample, senders_and_receivers_agree_at_every_p) {
  const uint64_t seed = tr_seed("halo_sample.agree", 22);
  const float p = 0.4f;
  const uint64_t key = halo_sample_key(seed, 3);
  uint8_t *kept_at[2] = {0};
  int64_t nodes = 0;
  for (int32_t parts = 2; parts <= 3; parts++) {
    fx_spec spec = {.nodes = 300,
                    .avg_degree = 4,
                    .features = 2,
                    .density = 1.0f,
                    .classes = 2,
                    .parts = parts,
                    .seed = seed + (uint64_t)parts};
    fx_graph *g = fx_graph_new(&spec);
    nodes = g->n;
    uint8_t *kept = calloc((size_t)g->n, 1);
    halo_shard *s[3] = {0};
    for (int32_t k = 0; k < parts; k++) s[k] = fx_shard_new(g, k, 1);
    int64_t *a = calloc((size_t)g->n, sizeof *a), *b = calloc((size_t)g->n, sizeof *b);
    int64_t crossing = 0;
    for (int32_t from = 0; from < parts; from++)
      for (int32_t to = 0; to < parts; to++) {
        if (from == to) continue;
        const int64_t na = kept_between(s[from], to, 0, key, p, a);
        const int64_t nb = kept_between(s[to], from, 1, key, p, b);
        cr_assert_eq(na, nb, "P=%d: part %d sends %lld kept rows to %d, which keeps %lld", parts,
                     from, (long long)na, to, (long long)nb);
        for (int64_t k = 0; k < na; k++) {
          cr_expect_eq(a[k], b[k], "P=%d %d->%d: row %lld is node %lld, received as %lld", parts,
                       from, to, (long long)k, (long long)a[k], (long long)b[k]);
          kept[a[k]] = 1;
        }
        crossing += s[from]->send_ptr[to + 1] - s[from]->send_ptr[to];
      }
    cr_expect_gt(crossing, 0, "P=%d: no boundary", parts);
    kept_at[parts - 2] = kept;
    free(a);
    free(b);
    for (int32_t k = 0; k < parts; k++) halo_shard_destroy(&s[k]);
    fx_graph_free(g);
  }
  /* Two different partitions of graphs drawn alike: a node kept (crossing)
   * in one is never a dropped boundary node in the other, as the draw is
   * the node's. */
  for (int64_t v = 0; v < nodes; v++)
    if (kept_at[0][v] || kept_at[1][v])
      cr_expect(halo_sample_keep(key, v, p), "node %lld", (long long)v);
  free(kept_at[0]);
  free(kept_at[1]);
}

enum { EPOCHS = 8 };

Test(halo_sample, cora_bytes_predicted_every_epoch, .timeout = 300) {
  char *dir = tr_tmpdir("halo-sample");
  char shards[512], json[600], path[700], extra[256];
  double plain_bytes = 0.0;
  for (int np = 2; np <= 3; np++) {
    snprintf(shards, sizeof shards, "%s/cora-%d", dir, np);
    snprintf(json, sizeof json, "%s.json", shards);
    partition(CORA, np, "metis", "1433,16,7", shards, json);
    const char *modes[] = {"", "--halo-precision int8 --halo-precision-bwd bf16"};
    for (int k = 0; k < 2; k++) {
      if (np == 3 && k == 1) break;
      snprintf(path, sizeof path, "%s/p%d-%d.jsonl", dir, np, k);
      snprintf(extra, sizeof extra, "--epochs %d --seed 4 --halo-sample 0.5 %s", EPOCHS, modes[k]);
      train(np, shards, extra, path);
      metrics m;
      read_metrics(path, &m);
      cr_assert_eq(m.epochs, EPOCHS);
      int varied = 0;
      for (int e = 0; e < EPOCHS; e++) {
        cr_expect_eq(m.halo[e], m.predicted[e], "P=%d %s epoch %d: %.0f bytes, %.0f predicted", np,
                     modes[k], e + 1, m.halo[e], m.predicted[e]);
        varied |= m.halo[e] != m.halo[0];
      }
      cr_expect(varied, "P=%d: every epoch moved the same bytes; the draw is the epoch's", np);
      char *sum = summary_line(path);
      cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0, "P=%d %s: layer bytes off", np,
                   modes[k]);
      plain_bytes = tr_json_num(sum, "halo_bytes_fp32_per_epoch");
      if (np == 2 && k == 0) {
        /* halo-partition predicts the same bytes, epoch by epoch. */
        char pshards[600], pjson[700];
        snprintf(pshards, sizeof pshards, "%s/predict", dir);
        snprintf(pjson, sizeof pjson, "%s.json", pshards);
        char flags[128];
        snprintf(flags, sizeof flags, "1433,16,7 --halo-sample 0.5 --train-seed 4 --epochs %d",
                 EPOCHS);
        partition(CORA, 2, "metis", flags, pshards, pjson);
        char *text = tr_slurp(pjson);
        cr_assert(text);
        const char *at = strstr(text, "\"predicted_halo_bytes_sampled\": [");
        cr_assert(at, "%s: no predicted_halo_bytes_sampled", pjson);
        at = strchr(at, '[') + 1;
        for (int e = 0; e < EPOCHS; e++) {
          char *end;
          const double v = strtod(at, &end);
          cr_assert(end != at, "%s: the array ends at epoch %d", pjson, e + 1);
          cr_expect_eq(v, m.predicted[e], "epoch %d: halo-partition predicts %.0f, halo-train %.0f",
                       e + 1, v, m.predicted[e]);
          at = end + (*end == ',');
        }
        free(text);
      }
      cr_expect_lt(m.halo[0], 0.75 * plain_bytes, "P=%d: %.0f bytes of %.0f plain", np, m.halo[0],
                   plain_bytes);
      free(sum);
    }
  }
  tr_rmdir(dir);
}

Test(halo_sample, p1_is_plain_and_deterministic_repeats, .timeout = 300) {
  char *dir = tr_tmpdir("halo-sample-bits");
  char shards[512], json[600], path[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const char *runs[] = {"--deterministic", "--deterministic --halo-sample 1",
                        "--deterministic --halo-sample 0.3", "--deterministic --halo-sample 0.3"};
  run_report r[4];
  for (int k = 0; k < 4; k++) {
    char extra[256];
    snprintf(path, sizeof path, "%s/run-%d.jsonl", dir, k);
    snprintf(extra, sizeof extra, "--epochs %d --seed 5 %s", EPOCHS, runs[k]);
    train(2, shards, extra, path);
    read_report(path, &r[k]);
  }
  expect_bit_identical(&r[0], &r[1], "--halo-sample 1 against no sampling");
  expect_bit_identical(&r[2], &r[3], "--halo-sample 0.3 run twice");
  cr_expect_str_neq(r[0].sha, r[2].sha, "sampling changed nothing");
  tr_rmdir(dir);
}

/* Refusals name the flag in one line; a resume with another p warns. */
Test(halo_sample, refusals_and_resume_warning, .timeout = 300) {
  char *dir = tr_tmpdir("halo-sample-refuse");
  char shards[512], json[600], out[700], ckpt[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(out, sizeof out, "%s/out.txt", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const char *bad[] = {"--halo-sample 0", "--model gat --halo-sample 0.5",
                       "--device cuda --halo-sample 0.5"};
  for (int k = 0; k < 3; k++) {
    int rc = tr_mpirun(2, 120, out, "%s %s --epochs 2 %s", TRAIN_BIN, shards, bad[k]);
    cr_expect_neq(rc, 0, "%s was accepted", bad[k]);
    char *text = tr_slurp(out);
    cr_assert(text);
    cr_expect_geq(tr_count_lines(text, "error: --halo-sample"), 1, "%s: %s", bad[k], text);
    free(text);
  }
  int rc = tr_mpirun(2, 120, out, "%s %s --epochs 2 --quiet --checkpoint %s --checkpoint-every 2",
                     TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  rc = tr_mpirun(2, 120, out, "%s %s --epochs 3 --checkpoint %s --resume --halo-sample 0.5",
                 TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  char *text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "--halo-sample 1 (this run: 0.5)"), 1, "%s", text);
  free(text);
  tr_rmdir(dir);
}
