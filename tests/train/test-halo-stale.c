/* --halo-stale (PipeGCN; docs/train.md "Stale exchange").
 *
 * The exchange itself, hand-checked (the probe, under mpirun): every rank
 * builds the same random fixture graph and takes its own part's shard.  At
 * "epoch" t each of two slots exchanges owned rows whose values are a known
 * function v(t, slot, gid, column), so a rank can compute, for each of its
 * halo rows, what every epoch sent it.  The halo rows each exchange leaves
 * must be:
 *
 *   t = 1        v(1), fresh (the slot is seeded);
 *   t = 2        v(1): the slot's rows;
 *   t >= 3       γ·e(t-1) + (1-γ)·v(t-1): last epoch's rows, smoothed
 *                (γ = 0: exactly v(t-1)),
 *
 * where v is the row as it crossed: at a low-bit precision, the receiver
 * packs and unpacks v itself with the same key (the rounding is keyed by
 * epoch, slot and global id, never by who packs).  A fresh exchange between
 * the slots' (the trainer's evaluation) gets v(t) and leaves the slots
 * alone; every stale exchange counts the bytes a fresh one moves; after a
 * drain the next exchange is fresh again.
 *
 * With a cover (mode ".../cover": --halo-aggregate auto's exchange,
 * halo_exchange_begin_cover) each pair's message is r = min(rows each way)
 * combined rows: row j sends Σ_{i ≡ j mod r} w_i · row i of the plain
 * message, w_i = 2^-(i mod 3), keyed by -1 - (global id of its row j).  A
 * receiver computes them itself from the senders' values v, so the same
 * schedule (fresh, slot, t-1, smoothed) is checked for the combined rows:
 * to 1e-5 relative at fp32 (the sums are added in another order), and at a
 * low bit width (γ = 0) to one rounding step of the row (a sum that
 * differs in its last bit may round to the neighbouring code).  The layers read halo rows only
 * through this exchange (gnn_aggregate), so this is the property "the
 * forward of epoch t with stale rows equals a plain forward computed with
 * the previous epoch's boundary rows".
 *
 * End to end (the real halo-partition and halo-train on the bundled Cora):
 * at P=1 (no halo) a stale run equals the plain run bit for bit; at P=3 its
 * first epoch equals the plain run's, its later epochs differ, every
 * epoch's bytes equal the prediction and the JSON says the mode; under
 * --deterministic it repeats bit for bit; refusals are one line and a
 * resume in another mode warns.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend.h"
#include "halo-exchange.h"
#include "halo-kernels.h"
#include "halo-quant.h"
#include "train-cli.h"
#include "train-expect.h"
#include "train-fixture.h"
#include "train-run.h"

#ifndef STALE_PROBE
#error "STALE_PROBE must name this test's own binary"
#endif

#define CORA HALO_DATASETS_DIR "/cora"

enum { COLS = 5, SLOTS = 2, PROBE_EPOCHS = 6 };

/* ---- the probe (runs under mpirun) --------------------------------------- */

/* The value epoch t's exchange of `slot` sends for row gid, column c: a
 * hash of the four, in [-(1+t), 1+t], never the same twice in a row. */
static float row_value(uint64_t seed, int64_t t, int slot, int64_t gid, int c) {
  uint64_t x = seed ^ ((uint64_t)t * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)slot << 48) ^
               ((uint64_t)gid * 0xbf58476d1ce4e5b9ull) ^ ((uint64_t)c << 40);
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  const double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
  return (float)((2.0 * u - 1.0) * (1.0 + (double)t));
}

/* Row gid of epoch t and slot as it arrives at precision prec, into out[COLS]. */
static void row_received(uint64_t seed, int64_t t, int slot, int64_t gid, int prec, float *out) {
  float v[COLS];
  for (int c = 0; c < COLS; c++) v[c] = row_value(seed, t, slot, gid, c);
  if (prec == HALO_PREC_FP32) {
    memcpy(out, v, sizeof v);
    return;
  }
  uint8_t packed[64];
  const int32_t idx = 0;
  halo_cpu_quant_pack(packed, v, COLS, &idx, &gid, 1, prec, halo_quant_key(seed, t, slot, 0));
  halo_cpu_quant_unpack(out, packed, COLS, 1, prec);
}

static int prec_of(const char *word) {
  for (int k = 0; halo_precision_names[k]; k++)
    if (strcmp(halo_precision_names[k], word) == 0) return k;
  return -1;
}

/* The cover-like message of the probe: per peer q, r[q] = min(rows each
 * way) combined rows (the top comment).  combine (rows Σ r, over the owned
 * rows) and keys (size Σ r). */
typedef struct probe_cover {
  int64_t *r, *off; /* size parts, parts + 1 */
  halo_csr combine;
  int64_t *keys;
} probe_cover;

static float cover_weight(int64_t i) { return 1.0f / (float)(1 << (i % 3)); }

static void probe_cover_make(const halo_shard *s, probe_cover *c) {
  const int32_t parts = s->parts;
  c->r = fx_xcalloc((size_t)parts, sizeof *c->r);
  c->off = fx_xcalloc((size_t)parts + 1, sizeof *c->off);
  for (int32_t q = 0; q < parts; q++) {
    const int64_t a = s->send_ptr[q + 1] - s->send_ptr[q], b = s->recv_ptr[q + 1] - s->recv_ptr[q];
    c->r[q] = a < b ? a : b;
    c->off[q + 1] = c->off[q] + c->r[q];
  }
  const int64_t rows = c->off[parts], nnz = s->send_ptr[parts];
  c->combine = (halo_csr){.rows = rows, .cols = s->n_owned + s->n_halo, .nnz = nnz};
  c->combine.indptr = fx_xcalloc((size_t)rows + 1, sizeof(int64_t));
  c->combine.indices = fx_xcalloc((size_t)nnz + 1, sizeof(int32_t));
  c->combine.values = fx_xcalloc((size_t)nnz + 1, sizeof(float));
  c->keys = fx_xcalloc((size_t)rows + 1, sizeof *c->keys);
  int64_t k = 0;
  for (int32_t q = 0; q < parts; q++) {
    const int64_t a = s->send_ptr[q + 1] - s->send_ptr[q];
    for (int64_t j = 0; j < c->r[q]; j++) {
      const int64_t row = c->off[q] + j;
      c->keys[row] = -1 - s->global_id[s->send_idx[s->send_ptr[q] + j]];
      for (int64_t i = j; i < a; i += c->r[q]) {
        c->combine.indices[k] = s->send_idx[s->send_ptr[q] + i];
        c->combine.values[k++] = cover_weight(i);
      }
      c->combine.indptr[row + 1] = k;
    }
  }
}

static void probe_cover_free(probe_cover *c) {
  free(c->r);
  free(c->off);
  free(c->combine.indptr);
  free(c->combine.indices);
  free(c->combine.values);
  free(c->keys);
}

/* Combined row j from peer q of epoch t and slot as it arrives, into
 * out[COLS]; *step = the rounding step of that row (0 at fp32). */
static void cover_received(const halo_shard *s, const probe_cover *c, uint64_t seed, int64_t t,
                           int slot, int32_t q, int64_t j, int prec, float *out, float *step) {
  float v[COLS] = {0};
  const int64_t b = s->recv_ptr[q + 1] - s->recv_ptr[q];
  for (int64_t i = j; i < b; i += c->r[q]) {
    const int64_t gid = s->global_id[s->n_owned + s->recv_ptr[q] + i];
    for (int col = 0; col < COLS; col++)
      v[col] += cover_weight(i) * row_value(seed, t, slot, gid, col);
  }
  *step = 0.0f;
  if (prec == HALO_PREC_FP32) {
    memcpy(out, v, sizeof v);
    return;
  }
  float lo = v[0], hi = v[0];
  for (int col = 1; col < COLS; col++) {
    lo = v[col] < lo ? v[col] : lo;
    hi = v[col] > hi ? v[col] : hi;
  }
  const int bits = halo_quant_bits(prec);
  *step = bits ? (hi - lo) / (float)((1 << bits) - 1) : fmaxf(fabsf(lo), fabsf(hi)) / 128.0f;
  uint8_t packed[64];
  const int32_t idx = 0;
  const int64_t key = -1 - s->global_id[s->n_owned + s->recv_ptr[q] + j];
  halo_cpu_quant_pack(packed, v, COLS, &idx, &key, 1, prec, halo_quant_key(seed, t, slot, 0));
  halo_cpu_quant_unpack(out, packed, COLS, 1, prec);
}

/* One exchange at epoch t: slot (-1: fresh) at precision prec.  Returns
 * the bytes it sent. */
static int64_t exchange_once(halo_exchange *x, const halo_shard *s, float *rows, uint64_t seed,
                             int64_t t, int slot, int prec, const probe_cover *cover, int *bad) {
  const int value_slot = slot >= 0 ? slot : 9;
  for (int64_t i = 0; i < s->n_owned; i++)
    for (int c = 0; c < COLS; c++)
      rows[i * COLS + c] = row_value(seed, t, value_slot, s->global_id[i], c);
  for (int64_t i = s->n_owned; i < s->n_owned + s->n_halo; i++)
    for (int c = 0; c < COLS; c++) rows[i * COLS + c] = NAN; /* must be overwritten */
  halo_exchange_set_precision(x, prec, halo_quant_key(seed, t, value_slot, 0));
  halo_exchange_set_stale(x, slot);
  const int64_t sent = halo_exchange_stats_get(x).bytes_sent;
  const halo_status began = cover ? halo_exchange_begin_cover(x, rows, COLS, &cover->combine)
                                  : halo_exchange_begin(x, rows, COLS);
  if (began != HALO_OK || halo_exchange_end(x) != HALO_OK) *bad += 1;
  return halo_exchange_stats_get(x).bytes_sent - sent;
}

/* MODE is "GAMMA/PRECISION[/cover]", e.g. "0.25/int8". */
static int probe_main(int argc, char **argv) {
  int rc = 1, bad = 0;
  te_probe p;
  halo_shard *s = NULL;
  halo_backend *be = NULL;
  halo_exchange *x = NULL;
  float *rows = NULL, *expect = NULL, got[COLS];
  probe_cover cov = {0};
  char word[16] = "";
  if (te_probe_begin(&argc, &argv, 1, &p) != 0) goto done;
  const char *slash = strchr(p.mode, '/');
  const float gamma = strtof(p.mode, NULL);
  const int covered = strstr(p.mode, "/cover") != NULL;
  if (slash) snprintf(word, sizeof word, "%.*s", (int)strcspn(slash + 1, "/"), slash + 1);
  const int prec = slash ? prec_of(word) : -1;
  if (prec < 0) {
    fprintf(stderr, "--probe: mode %s is not GAMMA/PRECISION\n", p.mode);
    goto done;
  }
  s = fx_shard_new(p.graph, p.rank, 51);
  if (halo_backend_create(&(halo_backend_options){.device = "cpu"}, &be) != HALO_OK) goto done;
  if (halo_exchange_create(MPI_COMM_WORLD, be, s, COLS, &x) != HALO_OK) goto done;
  if (halo_exchange_precision_reserve(x, prec != HALO_PREC_FP32) != HALO_OK) goto done;
  if (halo_exchange_stale_reserve(x, SLOTS, gamma) != HALO_OK) goto done;
  if (covered) {
    probe_cover_make(s, &cov);
    if (halo_exchange_cover_set(x, cov.r, cov.keys) != HALO_OK) goto done;
  }
  const probe_cover *cv = covered ? &cov : NULL;
  const int64_t n_recv = covered ? cov.off[s->parts] : s->n_halo;
  const int64_t n_all = s->n_owned + s->n_halo;
  rows = fx_xcalloc((size_t)n_all * COLS, sizeof *rows);
  expect = fx_xcalloc((size_t)SLOTS * (size_t)(s->n_halo + 1) * COLS, sizeof *expect);
  const int64_t n_sent = covered ? cov.off[s->parts] : s->send_ptr[s->parts];
  const int64_t fresh_bytes = n_sent * halo_quant_row_bytes(prec, COLS);
  const float g = gamma, h = 1.0f - gamma;

  for (int64_t t = 1; t <= PROBE_EPOCHS + 1; t++) {
    /* After the last epoch a drain: the next exchange is fresh again. */
    const int drained = t == PROBE_EPOCHS + 1;
    if (drained && halo_exchange_stale_drain(x) != HALO_OK) bad++;
    for (int slot = 0; slot < SLOTS; slot++) {
      const int64_t sent = exchange_once(x, s, rows, p.seed, t, slot, prec, cv, &bad);
      if (sent != fresh_bytes && bad++ < 5)
        fprintf(stderr, "[rank %d] epoch %lld slot %d sent %lld bytes, a fresh exchange %lld\n",
                p.rank, (long long)t, slot, (long long)sent, (long long)fresh_bytes);
      for (int64_t i = 0; i < n_recv; i++) {
        float *e = expect + ((size_t)slot * (size_t)(s->n_halo + 1) + (size_t)i) * COLS;
        int64_t gid = s->global_id[s->n_owned + i];
        int32_t q = 0;
        float step = 0.0f, step_last = 0.0f;
        if (covered) {
          while (cov.off[q + 1] <= i) q++;
          gid = s->global_id[s->n_owned + s->recv_ptr[q] + (i - cov.off[q])];
        }
        if (t == 1 || drained) {
          if (covered)
            cover_received(s, &cov, p.seed, t, slot, q, i - cov.off[q], prec, e, &step);
          else
            row_received(p.seed, t, slot, gid, prec, e);
        } else if (t >= 3) {
          if (covered)
            cover_received(s, &cov, p.seed, t - 1, slot, q, i - cov.off[q], prec, got, &step_last);
          else
            row_received(p.seed, t - 1, slot, gid, prec, got);
          for (int c = 0; c < COLS; c++) e[c] = gamma > 0.0f ? g * e[c] + h * got[c] : got[c];
          step = step > step_last ? step : step_last;
        } else if (covered) { /* t = 2: the slot's rows, epoch 1's */
          cover_received(s, &cov, p.seed, 1, slot, q, i - cov.off[q], prec, got, &step);
        }
        const float *r = rows + (s->n_owned + i) * COLS;
        for (int c = 0; c < COLS; c++) {
          double tol = gamma > 0.0f ? 1e-6 * (1.0 + fabs((double)e[c])) : 0.0;
          if (covered) tol += 1e-5 * (1.0 + fabs((double)e[c])) + 1.01 * (double)step;
          if (!(fabs((double)r[c] - (double)e[c]) <= tol) && bad++ < 5)
            fprintf(stderr,
                    "[rank %d] epoch %lld slot %d halo row of gid %lld column %d: %.9g, "
                    "expected %.9g\n",
                    p.rank, (long long)t, slot, (long long)gid, c, (double)r[c], (double)e[c]);
        }
      }
    }
    /* Evaluation's fresh exchange between the steps: this epoch's rows. */
    if (exchange_once(x, s, rows, p.seed, t, -1, HALO_PREC_FP32, NULL, &bad) !=
        s->send_ptr[s->parts] * (int64_t)(COLS * sizeof(float)))
      bad++;
    for (int64_t i = 0; i < s->n_halo; i++) {
      const int64_t gid = s->global_id[s->n_owned + i];
      for (int c = 0; c < COLS; c++)
        if (rows[(s->n_owned + i) * COLS + c] != row_value(p.seed, t, 9, gid, c) && bad++ < 5)
          fprintf(stderr, "[rank %d] epoch %lld: the fresh exchange left gid %lld stale\n", p.rank,
                  (long long)t, (long long)gid);
    }
  }
  if (halo_exchange_stale_drain(x) != HALO_OK) bad++;
  int all_bad = 0;
  MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (p.rank == 0)
    fprintf(stderr, "stale probe (seed %llu, mode %s, %d halo rows on rank 0): %d mismatches\n",
            (unsigned long long)p.seed, p.mode, (int)s->n_halo, all_bad);
  rc = all_bad != 0;
done:
  free(rows);
  free(expect);
  probe_cover_free(&cov);
  halo_exchange_destroy(&x);
  halo_backend_destroy(&be);
  halo_shard_destroy(&s);
  te_probe_end(&p);
  return rc;
}

/* ---- the Criterion tests ------------------------------------------------- */

static void check_probe(int np, const char *mode, uint64_t seed) {
  const fx_case c = {.nodes = 90,
                     .degree = 3,
                     .features = 6,
                     .density = 0.5f,
                     .classes = 3,
                     .hidden = 4,
                     .epochs = 1};
  cr_log_info("stale probe: P=%d, mode %s, seed %llu", np, mode, (unsigned long long)seed);
  char *dir = te_run_probe(STALE_PROBE, "halo-stale-probe", np, mode, &c, seed);
  tr_rmdir(dir);
}

Test(halo_stale, exchange_reads_last_epochs_rows, .timeout = 300) {
  const uint64_t seed = tr_seed("halo_stale.exchange", 29);
  check_probe(2, "0/fp32", seed);
  check_probe(3, "0.25/fp32", seed + 1);
  check_probe(3, "0/int8", seed + 2);
  check_probe(2, "0.5/int4", seed + 3);
}

/* --halo-aggregate auto's exchange in a stale slot: epoch t reads the
 * combined rows of t-1 (docs/train.md, "Communication modes together"). */
Test(halo_stale, cover_exchange_reads_last_epochs_rows, .timeout = 300) {
  const uint64_t seed = tr_seed("halo_stale.cover", 41);
  check_probe(3, "0.25/fp32/cover", seed);
  check_probe(3, "0/int8/cover", seed + 1);
}

enum { EPOCHS = 12 };

Test(halo_stale, end_to_end_on_cora, .timeout = 600) {
  char *dir = tr_tmpdir("halo-stale");
  char shards[512], json[600], plain[700], stale[700], again[700], extra[256];
  run_report a, b, c;

  /* P=1: no halo row, so nothing is stale. */
  snprintf(shards, sizeof shards, "%s/cora-1", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 1, "metis", "1433,16,7", shards, json);
  snprintf(plain, sizeof plain, "%s/p1-plain.jsonl", dir);
  snprintf(stale, sizeof stale, "%s/p1-stale.jsonl", dir);
  train(1, shards, "--epochs 6 --seed 5", plain);
  train(1, shards, "--epochs 6 --seed 5 --halo-stale --halo-stale-momentum 0.3", stale);
  read_report(plain, &a);
  read_report(stale, &b);
  expect_bit_identical(&a, &b, "P=1, --halo-stale against plain");

  /* P=3: the first epoch is fresh, the later ones stale. */
  snprintf(shards, sizeof shards, "%s/cora-3", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  partition(CORA, 3, "metis", "1433,16,7", shards, json);
  snprintf(plain, sizeof plain, "%s/p3-plain.jsonl", dir);
  snprintf(stale, sizeof stale, "%s/p3-stale.jsonl", dir);
  snprintf(again, sizeof again, "%s/p3-again.jsonl", dir);
  snprintf(extra, sizeof extra, "--epochs %d --seed 5 --deterministic", EPOCHS);
  train(3, shards, extra, plain);
  snprintf(extra, sizeof extra, "--epochs %d --seed 5 --deterministic --halo-stale", EPOCHS);
  train(3, shards, extra, stale);
  train(3, shards, extra, again);
  read_report(plain, &a);
  read_report(stale, &b);
  read_report(again, &c);
  cr_assert_eq(b.m.epochs, EPOCHS);
  cr_expect(memcmp(&a.m.loss[0], &b.m.loss[0], sizeof(double)) == 0,
            "the first epoch exchanges fresh rows: loss %.17g, plain %.17g", b.m.loss[0],
            a.m.loss[0]);
  int differ = 0;
  for (int e = 1; e < EPOCHS; e++) differ += a.m.loss[e] != b.m.loss[e];
  cr_expect_gt(differ, 0, "no later epoch differs from the plain run: nothing was stale");
  /* Stale rows are a small perturbation: the loss stays near the plain one. */
  for (int e = 0; e < EPOCHS; e++)
    cr_expect(fabs(a.m.loss[e] - b.m.loss[e]) < 0.05 * a.m.loss[e],
              "epoch %d: loss %.6f, plain %.6f", e + 1, b.m.loss[e], a.m.loss[e]);
  for (int e = 0; e < EPOCHS; e++)
    cr_expect_eq(b.m.halo[e], b.m.predicted[e], "epoch %d: %.0f bytes, %.0f predicted", e + 1,
                 b.m.halo[e], b.m.predicted[e]);
  cr_expect_eq(b.m.halo[0], a.m.halo[0], "stale moves %.0f bytes an epoch, plain %.0f", b.m.halo[0],
               a.m.halo[0]);
  expect_bit_identical(&b, &c, "--halo-stale --deterministic twice");
  char *sum = summary_line(stale);
  cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0);
  cr_expect(strstr(sum, "\"halo_stale\": true"), "%s", sum);
  free(sum);
  char *text = tr_slurp(stale);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "\"halo_exchange\": \"fresh\""), 1, "%s", text);
  cr_expect_eq(tr_count_lines(text, "\"halo_exchange\": \"stale\""), EPOCHS - 1, "%s", text);
  free(text);

  /* With int8 rows and smoothing: still the predicted bytes every epoch. */
  snprintf(stale, sizeof stale, "%s/p3-int8.jsonl", dir);
  train(3, shards, "--epochs 4 --halo-stale --halo-stale-momentum 0.5 --halo-precision int8",
        stale);
  sum = summary_line(stale);
  cr_expect_eq(tr_json_num(sum, "epochs_off_prediction"), 0.0);
  cr_expect_lt(tr_json_num(sum, "halo_bytes_predicted_per_epoch"),
               tr_json_num(sum, "halo_bytes_fp32_per_epoch"));
  free(sum);

  /* halo-partition records the mode and predicts the same bytes. */
  char pshards[600], pjson[700];
  snprintf(pshards, sizeof pshards, "%s/predict", dir);
  snprintf(pjson, sizeof pjson, "%s.json", pshards);
  partition(CORA, 3, "metis", "1433,16,7 --halo-stale", pshards, pjson);
  cr_expect_eq(json_figure(pjson, "predicted_halo_bytes_per_epoch"), a.m.predicted[0]);
  text = tr_slurp(pjson);
  cr_assert(text);
  cr_expect(strstr(text, "\"halo_exchange\": \"stale\""), "%s", text);
  free(text);
  tr_rmdir(dir);
}

/* Refusals are one line naming the flag; a resume in another mode warns. */
Test(halo_stale, refusals_and_resume_warning, .timeout = 300) {
  char *dir = tr_tmpdir("halo-stale-refuse");
  char shards[512], json[600], out[700], ckpt[700];
  snprintf(shards, sizeof shards, "%s/cora-2", dir);
  snprintf(json, sizeof json, "%s.json", shards);
  snprintf(out, sizeof out, "%s/out.txt", dir);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
  partition(CORA, 2, "metis", "1433,16,7", shards, json);
  const char *bad[][2] = {
      {"--halo-stale --model gat", "error: --halo-stale: gat"},
      {"--halo-stale --device cuda", "error: --halo-stale: "},
      {"--halo-stale-momentum 0.5", "error: --halo-stale-momentum"},
      {"--halo-stale --halo-stale-momentum 1", "--halo-stale-momentum"},
  };
  for (int k = 0; k < 4; k++) {
    int rc = tr_mpirun(2, 120, out, "%s %s --epochs 2 %s", TRAIN_BIN, shards, bad[k][0]);
    cr_expect_neq(rc, 0, "%s was accepted", bad[k][0]);
    char *text = tr_slurp(out);
    cr_assert(text);
    cr_expect_eq(tr_count_lines(text, bad[k][1]), 1, "%s: %s", bad[k][0], text);
    free(text);
  }
  int rc = tr_mpirun(2, 120, out,
                     "%s %s --epochs 2 --quiet --halo-stale --checkpoint %s --checkpoint-every 2",
                     TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  rc = tr_mpirun(2, 120, out, "%s %s --epochs 3 --checkpoint %s --resume", TRAIN_BIN, shards, ckpt);
  cr_assert_eq(rc, 0);
  char *text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(tr_count_lines(text, "--halo-stale on (this run: off)"), 1, "%s", text);
  free(text);
  /* An evaluation exchanges fresh rows: --halo-stale given to it is said to
   * do nothing, once, and the evaluation runs. */
  rc = tr_mpirun(2, 120, out, "%s %s --eval-only --checkpoint %s --resume --halo-stale", TRAIN_BIN,
                 shards, ckpt);
  text = tr_slurp(out);
  cr_assert(text);
  cr_expect_eq(rc, 0, "%s", text);
  cr_expect_eq(tr_count_lines(text, "--halo-stale: --eval-only evaluates with fresh float32 rows"), 1, "%s",
               text);
  free(text);
  tr_rmdir(dir);
}

int main(int argc, char **argv) { return te_main(argc, argv, probe_main); }
