/* Edge weights end to end (docs/partition.md and docs/models.md, "Edge
 * weights"): the real halo-partition and halo-train binaries.
 *
 *  - A weighted graph checked by hand: one Matrix Market file with a
 *    repeated edge, an edge whose reverse has another weight, one whose
 *    reverse is missing, a self-loop and an isolated node.  Its parts hold
 *    the weights and weighted degrees worked out below, and the GCN and
 *    GraphSAGE matrices built from them equal the dense matrices written
 *    out by hand, in double.  The same graph as a three-column edge list,
 *    as a .npy edge array with --edge-weights and as an OGB folder with an
 *    edge-feat of width 1 gives the same parts' arrays.
 *  - Cora with random weights (an edge-feat of width 1): GCN trains the
 *    same function at P=1 and P=3 (float within 1e-5, bit for bit under
 *    --deterministic) and moves the bytes predicted; --no-edge-weights
 *    trains exactly the unweighted Cora; GIN and GAT refuse the weighted
 *    graph in one line.
 * (Gradients against central differences: test-train-layers, "weighted".)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "halo-net.h"
#include "halo-shard.h"
#include "test-sanitized.h"
#include "train-cli.h"
#include "train-run.h"

#define CORA HALO_DATASETS_DIR "/cora"

/* ---- the hand-checked graph -------------------------------------------- */

/* Input edges (0-based) and weights: (0,1) twice (0.5 + 1.0 = 1.5), (1,0)
 * of 2.5 (mean with 1.5: 2.0), (1,2) of 3 alone (its reverse takes 3), a
 * self-loop (2,2) dropped, (2,3) of 0.25 and (3,2) of 0.75 (mean 0.5).
 * Node 4 has no edge. */
enum { HAND_NODES = 5, HAND_EDGES = 7 };
static const int64_t hand_edge[HAND_EDGES][2] = {{0, 1}, {0, 1}, {1, 0}, {1, 2},
                                                 {2, 2}, {2, 3}, {3, 2}};
static const double hand_weight[HAND_EDGES] = {0.5, 1.0, 2.5, 3.0, 7.0, 0.25, 0.75};

/* The clean graph by hand: w[u][v], and d the weighted degrees. */
static const double W[HAND_NODES][HAND_NODES] = {
    {0, 2.0, 0, 0, 0}, {2.0, 0, 3.0, 0, 0}, {0, 3.0, 0, 0.5, 0}, {0, 0, 0.5, 0, 0}, {0}};
static const double D[HAND_NODES] = {2.0, 5.0, 3.5, 0.5, 0.0};

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* A .npy file: header for `descr` and `shape`, then `bytes` of data. */
static void write_npy(const char *path, const char *descr, const char *shape, const void *data,
                      size_t bytes) {
  char header[128];
  int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
  int total = 10 + len + 1, pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  const unsigned short hlen = (unsigned short)(len + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(hlen & 0xff, f);
  fputc(hlen >> 8, f);
  fwrite(header, 1, (size_t)len, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  fwrite(data, 1, bytes, f);
  fclose(f);
}

/* The hand graph in each weighted format under dir; returns nothing, the
 * inputs are DIR/g.mtx, DIR/g.txt, DIR/e.npy + DIR/w.npy, DIR/ogb. */
static void write_hand_inputs(const char *dir) {
  char path[600], text[1024];
  int at = snprintf(text, sizeof text, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n",
                    HAND_NODES, HAND_NODES, HAND_EDGES);
  for (int k = 0; k < HAND_EDGES; k++)
    at += snprintf(text + at, sizeof text - (size_t)at, "%lld %lld %g\n",
                   (long long)hand_edge[k][0] + 1, (long long)hand_edge[k][1] + 1, hand_weight[k]);
  snprintf(path, sizeof path, "%s/g.mtx", dir);
  write_text(path, text);

  at = snprintf(text, sizeof text, "# the hand graph, weighted\n");
  for (int k = 0; k < HAND_EDGES; k++)
    at += snprintf(text + at, sizeof text - (size_t)at, "%lld\t%lld\t%g\n",
                   (long long)hand_edge[k][0], (long long)hand_edge[k][1], hand_weight[k]);
  snprintf(path, sizeof path, "%s/g.txt", dir);
  write_text(path, text);

  float w32[HAND_EDGES];
  for (int k = 0; k < HAND_EDGES; k++) w32[k] = (float)hand_weight[k];
  snprintf(path, sizeof path, "%s/e.npy", dir);
  write_npy(path, "<i8", "(7, 2)", hand_edge, sizeof hand_edge);
  snprintf(path, sizeof path, "%s/w.npy", dir);
  write_npy(path, "<f4", "(7,)", w32, sizeof w32);

  snprintf(path, sizeof path, "%s/ogb", dir);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/ogb/num-node-list.csv", dir);
  write_text(path, "5\n");
  at = 0;
  for (int k = 0; k < HAND_EDGES; k++)
    at += snprintf(text + at, sizeof text - (size_t)at, "%lld,%lld\n", (long long)hand_edge[k][0],
                   (long long)hand_edge[k][1]);
  snprintf(path, sizeof path, "%s/ogb/edge.csv", dir);
  write_text(path, text);
  at = 0;
  for (int k = 0; k < HAND_EDGES; k++)
    at += snprintf(text + at, sizeof text - (size_t)at, "%g\n", hand_weight[k]);
  snprintf(path, sizeof path, "%s/ogb/edge-feat.csv", dir);
  write_text(path, text);
}

/* halo-partition INPUT (extra flags) into OUT with P parts. */
static void partition_hand(const char *input, const char *extra, int parts, const char *out) {
  char log[700];
  snprintf(log, sizeof log, "%s.log", out);
  int rc = tr_run(60, log, "%s --input '%s' %s --parts %d --method random --out '%s' --force",
                  PARTITION_BIN, input, extra, parts, out);
  cr_assert_eq(rc, 0, "halo-partition %s exited with %d (see %s)", input, rc, log);
}

static halo_shard *read_part(const char *dir, int32_t p, int32_t parts, halo_manifest **m) {
  char path[700];
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  if (!*m) cr_assert_eq(halo_manifest_read(path, m), HALO_OK, "%s", path);
  cr_assert((*m)->part_edge_weight_digest, "%s: no edge weights listed", path);
  halo_shard *s = NULL;
  cr_assert_eq(halo_shard_path(path, sizeof path, dir, p, parts), HALO_OK);
  cr_assert_eq(halo_shard_read(path, *m, &s), HALO_OK, "%s", path);
  cr_assert(s->edge_weight && s->weighted_degree, "%s: no weights", path);
  return s;
}

/* The dense matrices by hand, entry (u, v) of kind:
 *   SYM     Â = (W + I) scaled by 1/sqrt((d_u + 1)(d_v + 1))
 *   MEAN    W_uv / d_u (a row of no edge: empty)
 *   MEAN_T  W_uv / d_v */
static double hand_entry(halo_aggregation kind, int64_t u, int64_t v) {
  switch (kind) {
    case HALO_AGG_SYM:
      return (W[u][v] + (u == v)) / sqrt((D[u] + 1.0) * (D[v] + 1.0));
    case HALO_AGG_MEAN:
      return W[u][v] > 0 ? W[u][v] / D[u] : 0.0;
    case HALO_AGG_MEAN_T:
      return W[u][v] > 0 ? W[u][v] / D[v] : 0.0;
    default:
      return NAN;
  }
}

/* Every part's weights, degrees and matrices against the hand values. */
static void check_hand_parts(const char *dir, int32_t parts) {
  halo_manifest *m = NULL;
  for (int32_t p = 0; p < parts; p++) {
    halo_shard *s = read_part(dir, p, parts, &m);
    for (int64_t r = 0; r < s->n_owned + s->n_halo; r++)
      cr_expect_eq(s->weighted_degree[r], D[s->global_id[r]], "%s part %d: d of node %lld is %g",
                   dir, p, (long long)s->global_id[r], s->weighted_degree[r]);
    for (int64_t r = 0; r < s->n_owned; r++)
      for (int64_t k = s->indptr[r]; k < s->indptr[r + 1]; k++) {
        const int64_t u = s->global_id[r], v = s->global_id[s->indices[k]];
        cr_expect_eq((double)s->edge_weight[k], W[u][v], "%s part %d: w(%lld, %lld) is %g", dir,
                     p, (long long)u, (long long)v, (double)s->edge_weight[k]);
      }
    static const halo_aggregation kinds[] = {HALO_AGG_SYM, HALO_AGG_MEAN, HALO_AGG_MEAN_T};
    for (size_t t = 0; t < sizeof kinds / sizeof kinds[0]; t++) {
      halo_csr a;
      cr_assert_eq(halo_gnn_aggregation(s, kinds[t], &a), HALO_OK);
      double dense[HAND_NODES][HAND_NODES] = {{0}};
      for (int64_t r = 0; r < a.rows; r++)
        for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++)
          dense[s->global_id[r]][s->global_id[a.indices[k]]] += a.values[k];
      for (int64_t r = 0; r < s->n_owned; r++)
        for (int64_t v = 0; v < HAND_NODES; v++) {
          const int64_t u = s->global_id[r];
          const double want = hand_entry(kinds[t], u, v);
          cr_expect(fabs(dense[u][v] - want) <= 1e-7 * fabs(want),
                    "%s part %d matrix %zu: entry (%lld, %lld) is %.9g, by hand %.9g", dir, p, t,
                    (long long)u, (long long)v, dense[u][v], want);
        }
      halo_csr_free(&a);
    }
    halo_shard_destroy(&s);
  }
  halo_manifest_destroy(&m);
}

Test(edge_weights, hand_checked_graph_in_every_format, .timeout = 120) {
  char *dir = tr_tmpdir("ew-hand");
  char input[600], out[600], extra[700];
  write_hand_inputs(dir);
  /* The Matrix Market file at P=1 and P=2 (node 4 and a halo). */
  snprintf(input, sizeof input, "%s/g.mtx", dir);
  for (int parts = 1; parts <= 2; parts++) {
    snprintf(out, sizeof out, "%s/mtx-%d", dir, parts);
    partition_hand(input, "--synthetic-features 3 --synthetic-classes 2", parts, out);
    check_hand_parts(out, parts);
  }
  /* The other formats, one part each, against the Matrix Market file's. */
  static const char *const other[][2] = {{"g.txt", "--nodes 5"},
                                         {"e.npy", "--nodes 5 --edge-weights '%s/w.npy'"},
                                         {"ogb", ""}};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    snprintf(input, sizeof input, "%s/%s", dir, other[i][0]);
    snprintf(extra, sizeof extra, other[i][1], dir);
    snprintf(out, sizeof out, "%s/other-%zu", dir, i);
    partition_hand(input, extra, 1, out);
    check_hand_parts(out, 1);
  }
  tr_rmdir(dir);
}

/* ---- weighted Cora ----------------------------------------------------- */

/* DIR/cora-w: Cora's files, and an edge-feat.csv of width 1 whose line k
 * weighs edge k: (1 + (mix(seed, k) mod 16)) / 4.  Symmetric pairs of Cora's
 * edge.csv get different weights, so the clean-up's mean is exercised. */
static void write_weighted_cora(const char *dir, uint64_t seed) {
  char cmd[2048];
  int rc = tr_run(30, NULL, "mkdir -p '%s/cora-w' && cp -r " CORA "/*.csv.gz " CORA "/split '%s/cora-w/'", dir, dir);
  cr_assert_eq(rc, 0);
  snprintf(cmd, sizeof cmd, "%s/cora-w/edge.csv.gz", dir);
  gzFile in = gzopen(cmd, "rb");
  cr_assert(in, "cannot read %s", cmd);
  snprintf(cmd, sizeof cmd, "%s/cora-w/edge-feat.csv", dir);
  FILE *out = fopen(cmd, "w");
  cr_assert(out);
  char line[256];
  uint64_t k = 0;
  while (gzgets(in, line, sizeof line)) {
    uint64_t h = (seed + k++) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    fprintf(out, "%g\n", (double)(1 + (h % 16)) / 4.0);
  }
  gzclose(in);
  fclose(out);
}

Test(edge_weights, cora_p1_p3_deterministic_bytes_and_refusals, .timeout = 600) {
  const uint64_t seed = tr_seed("edge_weights.cora", 40);
  char *dir = tr_tmpdir("ew-cora");
  char weighted[600], plain[600], shards[3][1024], json[1100], metrics_path[1100], log[1100];
  write_weighted_cora(dir, seed);
  snprintf(weighted, sizeof weighted, "%s/cora-w", dir);
  snprintf(plain, sizeof plain, "%s", CORA);
  /* Weighted at P=1 and P=3; Cora itself at P=1. */
  const char *const inputs[3] = {weighted, weighted, plain};
  const int parts[3] = {1, 3, 1};
  for (int i = 0; i < 3; i++) {
    snprintf(shards[i], sizeof shards[i], "%s/s-%d", dir, i);
    snprintf(json, sizeof json, "%s.json", shards[i]);
    partition(inputs[i], parts[i], "metis", "1433,16,7", shards[i], json);
  }
  enum { EPOCHS = TEST_SANITIZED ? 10 : 20 };
  /* GCN: float P=1 against P=3 and the bytes, then bit for bit under
   * --deterministic (GraphSAGE's weighted mean against the reference, float
   * and exact sums: test-train-layers). */
  char extra[256];
  metrics flt[2];
  for (int i = 0; i < 2; i++) {
    snprintf(metrics_path, sizeof metrics_path, "%s/f-%d.jsonl", dir, i);
    snprintf(extra, sizeof extra, "--model gcn --epochs %d", EPOCHS);
    train(parts[i], shards[i], extra, metrics_path);
    read_metrics(metrics_path, &flt[i]);
    for (int e = 0; e < flt[i].epochs; e++)
      cr_expect_eq(flt[i].halo[e], flt[i].predicted[e], "P=%d epoch %d: %g bytes, predicted %g",
                   parts[i], e + 1, flt[i].halo[e], flt[i].predicted[e]);
  }
  int at = 0;
  const double worst = worst_loss_difference(&flt[0], &flt[1], EPOCHS, &at);
  cr_expect(worst <= 1e-5, "gcn: P=1 and P=3 losses differ by %.3g (relative) at epoch %d", worst,
            at);
  cr_expect_gt(flt[1].halo[0], 0.0, "gcn: nothing was exchanged at P=3");
  run_report det[2];
  for (int i = 0; i < 2; i++) {
    snprintf(metrics_path, sizeof metrics_path, "%s/d-%d.jsonl", dir, i);
    snprintf(extra, sizeof extra, "--model gcn --epochs %d --deterministic", EPOCHS);
    train(parts[i], shards[i], extra, metrics_path);
    read_report(metrics_path, &det[i]);
  }
  expect_bit_identical(&det[0], &det[1], "weighted gcn, P=1 and P=3");

  /* --no-edge-weights (at P=3) trains the unweighted Cora (at P=1), bit for
   * bit; the weights did change the function. */
  run_report off, unweighted;
  snprintf(extra, sizeof extra, "--model gcn --epochs %d --deterministic", EPOCHS);
  snprintf(metrics_path, sizeof metrics_path, "%s/u.jsonl", dir);
  train(1, shards[2], extra, metrics_path);
  read_report(metrics_path, &unweighted);
  snprintf(extra, sizeof extra, "--model gcn --epochs %d --deterministic --no-edge-weights",
           EPOCHS);
  snprintf(metrics_path, sizeof metrics_path, "%s/o.jsonl", dir);
  train(3, shards[1], extra, metrics_path);
  read_report(metrics_path, &off);
  expect_bit_identical(&unweighted, &off, "--no-edge-weights against unweighted Cora");
  cr_expect(strcmp(det[0].sha, unweighted.sha) != 0, "gcn: the weights changed nothing");

  /* GIN and GAT: one line, a non-zero exit on every rank. */
  static const char *const refused[][2] = {{"gin", "GIN takes no edge weights"},
                                           {"gat", "GAT takes no edge weights"}};
  for (size_t i = 0; i < 2; i++) {
    snprintf(log, sizeof log, "%s/refused-%zu.log", dir, i);
    int rc = tr_mpirun(i == 0 ? 3 : 1, 60, log, "%s '%s' --quiet --epochs 2 --model %s", TRAIN_BIN, shards[1],
                       refused[i][0]);
    cr_expect_neq(rc, 0, "--model %s on weighted parts exited 0", refused[i][0]);
    char *text = tr_slurp(log);
    cr_assert(text);
    cr_expect_eq(tr_count_lines(text, "error:"), 1, "--model %s: not one line:\n%s", refused[i][0],
                 text);
    cr_expect_eq(tr_count_lines(text, refused[i][1]), 1, "--model %s:\n%s", refused[i][0], text);
    free(text);
  }
  tr_rmdir(dir);
}
