/* halo-partition's report (halo-partition-run.h): the statistics as JSON
 * and as the summary table, each to a FILE *. */
#include <inttypes.h>
#include <stdio.h>

#include "halo-json.h"
#include "halo-memory.h"
#include "halo-model-options.h"
#include "halo-partition-run.h"
#include "halo-predict.h"
#include "halo-quant.h"
#include "halo-sample.h"

static const char *const phase_names[HALO_RUN_PHASES] = {"load", "clean", "partition", "write",
                                                         "total"};

/* An array of `n` int64 values as the member `key`. */
static void json_i64_array(halo_json *j, const char *key, const int64_t *a, int32_t n) {
  halo_json_key(j, key);
  halo_json_array_begin(j);
  for (int32_t i = 0; i < n; i++) halo_json_int(j, a[i]);
  halo_json_array_end(j);
}

/* Columns per halo row of one training epoch of model d. */
static int64_t epoch_columns(const halo_model_desc *d) {
  const halo_model_comm comm = halo_model_comm_of(d);
  return halo_predict_epoch_columns(&comm);
}

/* "halo_bytes_between_parts": [q][p] = bytes part q sends part p in one
 * training epoch (input dropout on, as predicted_halo_bytes_per_epoch, which
 * the entries sum to), sender by receiver; beyond
 * HALO_PARTITION_MATRIX_MAX_PARTS parts a note says why it is left out. */
static void json_halo_matrix(halo_json *j, const halo_partition_stats *s,
                             const halo_partition_prediction *pr, int prec, int prec_bwd) {
  if (!s->between) {
    char note[160];
    snprintf(note, sizeof note,
             "%d parts exceed %d: the %d x %d matrix is left out to keep the JSON small",
             (int)s->parts, HALO_PARTITION_MATRIX_MAX_PARTS, (int)s->parts, (int)s->parts);
    halo_json_key_string(j, "halo_bytes_between_parts_omitted", note);
    return;
  }
  const halo_model_comm dropout = halo_model_comm_of(&pr->dropout);
  /* --halo-aggregate auto: each pair's cover crosses. */
  const int64_t *rows = s->cover_between ? s->cover_between : s->between;
  halo_json_key(j, "halo_bytes_between_parts");
  halo_json_array_begin(j);
  for (int32_t q = 0; q < s->parts; q++) {
    halo_json_array_begin(j);
    for (int32_t p = 0; p < s->parts; p++)
      halo_json_int(j, halo_predict_epoch_bytes_at(rows[(int64_t)q * s->parts + p], &dropout, prec,
                                                   prec_bwd));
    halo_json_array_end(j);
  }
  halo_json_array_end(j);
}

/* Whether by_ranks can give bytes: its rows are the plain exchange's, so
 * not under --halo-aggregate auto (covers) or --halo-sample (a draw). */
static int by_ranks_bytes(const halo_partition_run_request *c,
                          const halo_partition_prediction *pr) {
  return pr && c->halo_aggregate != HALO_AGGREGATE_AUTO && !halo_sample_on(c->halo_sample);
}

/* "by_ranks": the parts trained on fewer ranks (halo-train groups them),
 * for P = parts, halved down to 1: the rows one plain exchange moves and,
 * with a prediction of the plain exchange, the bytes of a training epoch,
 * as predicted_halo_bytes_per_epoch is for P = parts.  Absent where the
 * writer did not compute it. */
static void json_by_ranks(halo_json *j, const halo_partition_run_request *c,
                          const halo_partition_stats *s, const halo_partition_prediction *pr) {
  if (s->groupings < 1) return;
  const int bytes = by_ranks_bytes(c, pr);
  halo_json_key(j, "by_ranks");
  halo_json_array_begin(j);
  for (int32_t i = 0; i < s->groupings; i++) {
    halo_json_object_begin(j);
    halo_json_key_int(j, "ranks", s->by_ranks[i]);
    halo_json_key_int(j, "halo_rows", s->by_ranks_rows[i]);
    if (bytes) {
      const halo_model_comm dropout = halo_model_comm_of(&pr->dropout);
      halo_json_key_int(j, "predicted_halo_bytes_per_epoch",
                        halo_predict_epoch_bytes_at(s->by_ranks_rows[i], &dropout,
                                                    c->halo_precision, c->halo_precision_bwd));
    }
    halo_json_object_end(j);
  }
  halo_json_array_end(j);
}

/* num / den, or null when there is no denominator. */
static void json_ratio(halo_json *j, const char *key, int64_t num, int64_t den) {
  if (den > 0)
    halo_json_key_double(j, key, (double)num / (double)den, "%.6g");
  else
    halo_json_key_null(j, key);
}

/* The JSON: its keys in docs/partition.md's order. */
halo_status halo_partition_report_json(FILE *f, const halo_partition_run_request *c,
                                       const halo_graph *g, const halo_clean_report *clean,
                                       const halo_partition_stats *s,
                                       const halo_partition_prediction *pr, uint64_t run_id,
                                       const halo_partition_timing *t) {
  halo_json j;
  char hex[32];
  halo_json_init(&j, f, 1);
  halo_json_object_begin(&j);
  halo_json_key_string(&j, "input", g->source);
  snprintf(hex, sizeof hex, "%016" PRIx64, g->source_digest);
  halo_json_key_string(&j, "source_digest", hex);
  halo_json_key_string(&j, "output", c->out);
  snprintf(hex, sizeof hex, "%016" PRIx64, run_id);
  halo_json_key_string(&j, "run_id", hex);
  halo_json_key_int(&j, "nodes", s->nodes);
  halo_json_key_int(&j, "edges", s->edges);
  halo_json_key_int(&j, "features", g->features);
  halo_json_key_int(&j, "classes", g->classes);
  halo_json_key_bool(&j, "multilabel", g->multilabel);
  halo_json_key(&j, "cleanup");
  halo_json_object_begin(&j);
  halo_json_key_int(&j, "input_edges", clean->input_edges);
  halo_json_key_int(&j, "self_loops", clean->self_loops);
  halo_json_key_int(&j, "duplicates", clean->duplicates);
  halo_json_key_int(&j, "reverse_added", clean->reverse_added);
  halo_json_key_int(&j, "isolated", clean->isolated);
  halo_json_object_end(&j);
  halo_json_key_int(&j, "parts", s->parts);
  halo_json_key_string(&j, "method", halo_method_name(c->opt.method));
  halo_json_key_string(&j, "objective", halo_objective_name(c->opt.objective));
  halo_json_key_int(&j, "seed", c->opt.seed);
  halo_json_key_int(&j, "ufactor", c->opt.ufactor);
  if (c->opt.method == HALO_METHOD_PTSCOTCH) halo_json_key_int(&j, "coarsen_levels", c->opt.levels);
  halo_json_key_string(&j, "order", halo_order_name(c->opt.order));
  halo_json_key_int(&j, "edge_cut", s->edge_cut);
  halo_json_key_int(&j, "comm_volume", s->comm_volume);
  json_i64_array(&j, "owned", s->owned, s->parts);
  json_i64_array(&j, "halo", s->halo, s->parts);
  json_i64_array(&j, "local_edges", s->nnz, s->parts);
  json_i64_array(&j, "send", s->send, s->parts);
  json_i64_array(&j, "cost", s->cost, s->parts);
  halo_json_key(&j, "peers");
  halo_json_array_begin(&j);
  for (int32_t p = 0; p < s->parts; p++) halo_json_int(&j, s->peers[p]);
  halo_json_array_end(&j);
  halo_json_key_double(&j, "replication_factor", s->replication_factor, "%.6f");
  halo_json_key_double(&j, "balance", s->balance, "%.6f");
  halo_json_key_string(&j, "balance_by", halo_balance_name(c->opt.balance));
  halo_json_key_int(&j, "work_row_cost", s->work_row_cost);
  halo_json_key_double(&j, "balance_local_edges", s->balance_nnz, "%.6f");
  halo_json_key_double(&j, "balance_halo", s->balance_halo, "%.6f");
  halo_json_key_double(&j, "balance_send", s->balance_send, "%.6f");
  halo_json_key_double(&j, "balance_cost", s->balance_cost, "%.6f");
  if (pr) {
    halo_json_key_string(&j, "model", halo_model_name(c->model.kind));
    halo_json_key(&j, "dims");
    halo_json_array_begin(&j);
    for (int i = 0; i < c->ndims; i++) halo_json_int(&j, c->dims[i]);
    halo_json_array_end(&j);
    halo_json_key_int(&j, "predicted_halo_bytes_per_epoch", pr->epoch);
    halo_json_key_int(&j, "predicted_halo_bytes_per_epoch_static", pr->epoch_static);
    halo_json_key_int(&j, "predicted_setup_halo_bytes", pr->setup);
    halo_json_key_int(&j, "predicted_setup_halo_bytes_dropout", pr->setup_dropout);
    if (pr->sampled) {
      /* halo-train --halo-sample: each epoch's bytes from its keyed draw. */
      halo_json_key_double(&j, "halo_sample", c->halo_sample, "%.9g");
      halo_json_key_int(&j, "train_seed", (int64_t)c->sample_seed);
      halo_json_key(&j, "predicted_halo_bytes_sampled");
      halo_json_array_begin(&j);
      for (int32_t e = 0; e < c->sample_epochs; e++) halo_json_int(&j, pr->sampled[e]);
      halo_json_array_end(&j);
    }
    halo_json_key_int(&j, "cagnet1d_bytes_per_epoch", pr->cagnet1d);
    halo_json_key_int(&j, "broadcast1d_bytes_per_epoch", pr->broadcast1d);
    json_ratio(&j, "cagnet1d_ratio", pr->cagnet1d, pr->epoch);
    json_ratio(&j, "broadcast1d_ratio", pr->broadcast1d, pr->epoch);
    /* The predictions above are at these precisions (halo-train's keys);
     * the CAGNET and 1D ratios compare fp32 baselines with them. */
    halo_json_key_string(&j, "halo_precision", halo_precision_names[c->halo_precision]);
    halo_json_key_string(&j, "halo_precision_bwd", halo_precision_names[c->halo_precision_bwd]);
    /* --halo-stale moves the same rows one epoch later: the same bytes. */
    halo_json_key_string(&j, "halo_exchange", c->halo_stale ? "stale" : "fresh");
    /* --halo-aggregate: the rows one exchange moves (the covers' under
     * auto), and what every halo row as fp32 would move per epoch. */
    halo_json_key_string(&j, "halo_aggregate", halo_aggregate_names[c->halo_aggregate]);
    halo_json_key_int(&j, "predicted_halo_rows_per_exchange", pr->rows);
    halo_json_key_int(&j, "predicted_halo_bytes_per_epoch_fp32_plain", pr->epoch_plain);
    json_halo_matrix(&j, s, pr, c->halo_precision, c->halo_precision_bwd);
  }
  json_by_ranks(&j, c, s, pr);
  halo_json_key_int(&j, "ranks", t->ranks);
  halo_json_key_int(&j, "peak_rss_bytes_max", t->peak_rss_max);
  halo_json_key_int(&j, "peak_rss_bytes_sum", t->peak_rss_sum);
  halo_json_key_int(&j, "block_edges_max", t->block_edges_max);
  for (int kind = 0; kind < 2; kind++) {
    const double *v = kind == 0 ? t->wall : t->cpu;
    halo_json_key(&j, kind == 0 ? "seconds" : "cpu_seconds");
    halo_json_object_begin(&j);
    for (int i = 0; i < HALO_RUN_PHASES; i++)
      halo_json_key_double(&j, phase_names[i], v[i], "%.3f");
    halo_json_object_end(&j);
  }
  halo_json_object_end(&j);
  if (halo_json_status(&j) == HALO_OK) return HALO_OK;
  halo_log_error("--json: internal error: the statistics were written out of order");
  return HALO_ERR_ARG;
}

/* "1.23 MB" (decimal units, as every halo output counts bytes: kB, MB, GB = 10^3, 10^6,
 * 10^9; docs/architecture.md, "Units"). */
static const char *human_bytes(char *buf, size_t size, int64_t bytes) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    u++;
  }
  snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

static int digits(int64_t x) {
  int d = 1;
  while (x >= 10) {
    x /= 10;
    d++;
  }
  return d;
}

/* The table goes to `out`: stdout, or stderr when stdout carries the JSON
 * (--json -). */
void halo_partition_report_table(FILE *out, const halo_partition_run_request *c,
                                 const halo_graph *g, const halo_clean_report *clean,
                                 const halo_partition_stats *s, const halo_partition_prediction *pr,
                                 uint64_t run_id, const halo_partition_timing *t) {
  char b1[32], b2[32];
  fprintf(out, "input        %s\n", g->source);
  fprintf(out,
          "graph        %" PRId64 " nodes, %" PRId64 " directed edges (%" PRId64
          " undirected), %d features, %d %s\n",
          s->nodes, s->edges, s->edges / 2, g->features, g->classes,
          g->multilabel ? "binary tasks (multi-label)" : "classes");
  fprintf(out,
          "clean-up     %" PRId64 " input edges: %" PRId64 " self-loops and %" PRId64
          " duplicates removed, %" PRId64 " reverse edges added, %" PRId64 " isolated nodes\n",
          clean->input_edges, clean->self_loops, clean->duplicates, clean->reverse_added,
          clean->isolated);
  if (g->edge_weight) { /* the clean graph's, stored in the parts */
    float lo = g->m > 0 ? g->edge_weight[0] : 0.0f, hi = lo;
    for (int64_t k = 1; k < g->m; k++) {
      if (g->edge_weight[k] < lo) lo = g->edge_weight[k];
      if (g->edge_weight[k] > hi) hi = g->edge_weight[k];
    }
    fprintf(out,
            "edge weights from %g to %g (repeats summed, a pair's two directions averaged), "
            "stored in the parts\n",
            (double)lo, (double)hi);
  }
  if (c->opt.method == HALO_METHOD_METIS)
    fprintf(out, "method       metis k-way, objective %s, ufactor %d, seed %" PRId64 "\n",
            halo_objective_name(c->opt.objective), c->opt.ufactor, c->opt.seed);
  else if (c->opt.method == HALO_METHOD_SCOTCH)
    fprintf(out, "method       scotch k-way, objective cut, ufactor %d, seed %" PRId64 "%s\n",
            c->opt.ufactor, c->opt.seed, c->metis_switched ? " (past METIS' limit)" : "");
  else if (c->opt.method == HALO_METHOD_PTSCOTCH)
    fprintf(out,
            "method       ptscotch k-way on %d rank%s, objective cut, ufactor %d, seed %" PRId64
            ", coarsening levels %d%s\n",
            t->ranks, t->ranks == 1 ? "" : "s", c->opt.ufactor, c->opt.seed, c->opt.levels,
            c->parts_file ? " (parts imported: HALO_TEST_PARTS_FILE)" : "");
  else if (c->opt.method == HALO_METHOD_RANDOM)
    fprintf(out, "method       random, seed %" PRId64 "\n", c->opt.seed);
  else
    fprintf(out, "method       block\n");
  if (c->opt.order == HALO_ORDER_COMMUNITY)
    fprintf(out, "row order    community: interior rows first, greedy blocks of at most %d rows\n",
            HALO_PARTITION_BLOCK_ROWS);
  else
    fprintf(out, "row order    id: ascending global id\n");
  fprintf(out, "\n");

  int64_t total_nnz = 0, total_send = 0, total_cost = 0, widest = s->edges;
  for (int32_t p = 0; p < s->parts; p++) {
    total_nnz += s->nnz[p];
    total_send += s->send[p];
    total_cost += s->cost[p];
  }
  if (total_cost > widest) widest = total_cost;
  int w = digits(widest) + 2;
  if (w < 8) w = 8;
  int wp = digits(s->parts) > 5 ? digits(s->parts) : 5;
  fprintf(out, "%*s%*s%*s%*s%*s%*s%*s\n", wp, "part", w, "owned", w, "halo", w, "edges", w, "send",
          7, "peers", w, "cost");
  for (int32_t p = 0; p < s->parts; p++)
    fprintf(out, "%*d%*" PRId64 "%*" PRId64 "%*" PRId64 "%*" PRId64 "%*d%*" PRId64 "\n", wp, p, w,
            s->owned[p], w, s->halo[p], w, s->nnz[p], w, s->send[p], 7, s->peers[p], w, s->cost[p]);
  fprintf(out, "%*s%*" PRId64 "%*" PRId64 "%*" PRId64 "%*" PRId64 "%*s%*" PRId64 "\n", wp, "total",
          w, s->nodes, w, s->comm_volume, w, total_nnz, w, total_send, 7, "", w, total_cost);
  /* ratio: max / mean of each column */
  fprintf(out, "%*s%*.3f%*.3f%*.3f%*.3f%*s%*.3f\n\n", wp, "ratio", w, s->balance, w,
          s->balance_halo, w, s->balance_nnz, w, s->balance_send, 7, "", w, s->balance_cost);

  fprintf(out, "edge cut            %" PRId64 " of %" PRId64 " undirected edges (%.2f%%)\n",
          s->edge_cut, s->edges / 2,
          s->edges ? 100.0 * (double)s->edge_cut / (double)(s->edges / 2) : 0.0);
  fprintf(out, "comm volume         %" PRId64 " halo rows per exchange (sum of halo counts)\n",
          s->comm_volume);
  fprintf(out, "replication factor  %.4f ((nodes + halo) / nodes)\n", s->replication_factor);
  fprintf(out, "balance             %.4f (max owned / mean owned; --balance %s)\n", s->balance,
          halo_balance_name(c->opt.balance));
  fprintf(out, "edges balance       %.4f (max local edges / mean)\n", s->balance_nnz);
  fprintf(out, "cost balance        %.4f (max / mean of the step cost: edges + %d per owned row)\n",
          s->balance_cost, (int)s->work_row_cost);
  if (pr) {
    fprintf(out, "\npredicted halo traffic for %s, dims ", halo_model_name(c->model.kind));
    for (int i = 0; i < c->ndims; i++) fprintf(out, "%s%d", i ? "," : "", c->dims[i]);
    fprintf(out, " (float32)\n");
    if (c->halo_aggregate == HALO_AGGREGATE_AUTO)
      fprintf(out,
              "  --halo-aggregate auto: %" PRId64 " rows and partial sums per exchange for %" PRId64
              " halo rows (%.1f%%); plain fp32 %s per epoch\n",
              pr->rows, s->comm_volume,
              s->comm_volume > 0 ? 100.0 * (double)pr->rows / (double)s->comm_volume : 100.0,
              human_bytes(b1, sizeof b1, pr->epoch_plain));
    fprintf(out,
            "  per epoch, input dropout (training default)  %14" PRId64 " B  %12s  (%" PRId64
            " columns per halo row)",
            pr->epoch, human_bytes(b1, sizeof b1, pr->epoch), epoch_columns(&pr->dropout));
    if (pr->setup_dropout > 0) /* the evaluation's ÂX, of a dense input */
      fprintf(out, " + %s once at set-up for a dense input's evaluation",
              human_bytes(b2, sizeof b2, pr->setup_dropout));
    fprintf(out, "\n");
    fprintf(out,
            "  per epoch, no input dropout (static layer 1) %14" PRId64
            " B  %12s  + %s once at "
            "set-up\n",
            pr->epoch_static, human_bytes(b1, sizeof b1, pr->epoch_static),
            human_bytes(b2, sizeof b2, pr->setup));
    fprintf(out, "  CAGNET 1D per epoch                          %14" PRId64 " B  %12s",
            pr->cagnet1d, human_bytes(b1, sizeof b1, pr->cagnet1d));
    if (pr->epoch > 0)
      fprintf(out, "  %.1fx halo's\n", (double)pr->cagnet1d / (double)pr->epoch);
    else
      fprintf(out, "  -\n");
    fprintf(out, "  1D broadcast of halo's widths                %14" PRId64 " B  %12s",
            pr->broadcast1d, human_bytes(b1, sizeof b1, pr->broadcast1d));
    if (pr->epoch > 0)
      fprintf(out, "  %.1fx halo's\n", (double)pr->broadcast1d / (double)pr->epoch);
    else
      fprintf(out, "  -\n");
  }
  if (s->groupings > 1) {
    fprintf(out, "\non fewer ranks      halo-train -np P groups the %d parts (docs/train.md)%s\n",
            (int)s->parts,
            pr && !by_ranks_bytes(c, pr) ? "; rows of the plain exchange, bytes left out" : "");
    for (int32_t i = 0; i < s->groupings; i++) {
      fprintf(out, "  P = %-6d %12" PRId64 " halo rows per exchange", s->by_ranks[i],
              s->by_ranks_rows[i]);
      if (by_ranks_bytes(c, pr)) {
        const halo_model_comm dropout = halo_model_comm_of(&pr->dropout);
        const int64_t bytes = halo_predict_epoch_bytes_at(s->by_ranks_rows[i], &dropout,
                                                          c->halo_precision, c->halo_precision_bwd);
        fprintf(out, "  %12s per epoch", human_bytes(b1, sizeof b1, bytes));
      }
      fprintf(out, "\n");
    }
  }
  fprintf(out, "\noutput              %s (manifest.h5 + %d part%s), run id %016" PRIx64 "\n",
          c->out, s->parts, s->parts == 1 ? "" : "s", run_id);
  fprintf(out,
          "time                %.2f s wall, %.2f s cpu (wall: load %.2f, clean %.2f, partition "
          "%.2f, write %.2f)\n",
          t->wall[HALO_RUN_TOTAL], t->cpu[HALO_RUN_TOTAL], t->wall[HALO_RUN_LOAD],
          t->wall[HALO_RUN_CLEAN], t->wall[HALO_RUN_PARTITION], t->wall[HALO_RUN_WRITE]);
  char m1[32], m2[32];
  if (t->ranks > 1)
    fprintf(out,
            "memory              peak RSS %s on the largest of %d ranks, %s summed; the largest "
            "block of rows holds %" PRId64 " edges (%.2fx the mean)\n",
            halo_memory_str(t->peak_rss_max, m1, sizeof m1), t->ranks,
            halo_memory_str(t->peak_rss_sum, m2, sizeof m2), t->block_edges_max,
            s->edges > 0 ? (double)t->block_edges_max * t->ranks / (double)s->edges : 1.0);
  else
    fprintf(out, "memory              peak RSS %s\n",
            halo_memory_str(t->peak_rss_max, m1, sizeof m1));
}
