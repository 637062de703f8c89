/* halo-train's report: the header lines, the per-epoch reduction and line,
 * the --metrics JSON lines (through core's halo-json), and the summary.
 * train-report.h has the contracts; docs/train.md shows the output. */
#include "train-report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-memory.h"
#include "halo-model.h"
#include "halo-predict.h"
#include "halo-sha256.h"
#include "halo-watchdog.h"

/* Below this much above the prediction, a use more than twice the
 * prediction is put down to the libraries' fixed costs in the line. */
#define MEMORY_UNMODELLED ((int64_t)64 << 20)

/* The lines halo-train writes to a metrics file start so. */
static int is_metrics_line(const char *line) {
  return strncmp(line, "{\"epoch\": ", 10) == 0 || strncmp(line, "{\"summary\": ", 12) == 0 ||
         strncmp(line, "{\"evaluation\": ", 15) == 0;
}

halo_status train_report_metrics_check(const char *path, int force) {
  halo_status st = HALO_OK;
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  char head[64] = {0};
  struct stat sb;
  /* "-" is standard output, never a file of that name.  A read of a pipe or
   * a device would wait for input that never comes. */
  if (!path || strcmp(path, "-") == 0 || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) goto done;
  FILE *f = fopen(path, "rb");
  if (!f) goto done;
  const size_t got = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  if (got >= sizeof hdf5 && memcmp(head, hdf5, sizeof hdf5) == 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--metrics %s: is an HDF5 file (a shard or a checkpoint?), which the JSON lines "
              "would overwrite; give another name",
              path);
  if (got > 0 && !force && !is_metrics_line(head)) {
    for (size_t i = 0; i < got; i++)
      if (head[i] == '\n' || (unsigned char)head[i] < ' ') head[i] = i < 24 ? '\0' : head[i];
    head[24] = '\0';
    HALO_FAIL(HALO_ERR_EXISTS,
              "--metrics %s: exists and is not a halo metrics file (it starts \"%s\"); give "
              "--force to overwrite it, or another name",
              path, head);
  }
done:
  return st;
}

/* The number after "key": in a metrics line; NAN when absent or null. */
static double line_number(const char *line, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *at = strstr(line, pat);
  if (!at) return NAN;
  char *end = NULL;
  const double v = strtod(at + strlen(pat), &end);
  return end == at + strlen(pat) ? NAN : v;
}

/* The per-epoch key of the selection metric: "val_acc" (k = 0) or
 * "test_acc" (k = 1), or val_f1, test_auc, ... */
static const char *metric_key(const train_report *rep, int k) {
  static char key[2][16];
  snprintf(key[k], sizeof key[k], "%s_%s", k ? "test" : "val", train_metric_name(rep->metric));
  return key[k];
}

/* --resume: rewrites `path` with its epoch lines up to `resumed` alone and
 * notes their totals in rep->prior. */
static halo_status keep_earlier_epochs(train_report *rep, const char *path, int64_t resumed) {
  halo_status st = HALO_OK;
  char tmp[4200], *line = NULL;
  size_t cap = 0;
  FILE *in = NULL, *out = NULL;
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    HALO_FAIL(HALO_ERR_ARG, "--metrics %s: path is too long", path);
  in = fopen(path, "r");
  if (!in) goto done; /* nothing earlier: a fresh file */
  out = fopen(tmp, "w");
  if (!out) HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot write: %s", tmp, strerror(errno));
  rep->prior.best_val = -1.0;
  ssize_t len = 0;
  int64_t without_metric = 0;
  while ((len = getline(&line, &cap, in)) > 0) {
    /* Whole epoch lines only: a line a full disk cut short is dropped. */
    if (strncmp(line, "{\"epoch\": ", 10) != 0 || line[len - 1] != '\n') continue;
    const double epoch = line_number(line, "epoch");
    if (!(epoch >= 1 && epoch <= (double)resumed)) continue;
    if (fputs(line, out) == EOF)
      HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot write: %s", tmp, strerror(errno));
    const double val = line_number(line, metric_key(rep, 0)),
                 halo = line_number(line, "halo_bytes");
    rep->prior.epochs++;
    if (!isnan(halo)) rep->prior.halo += (int64_t)halo;
    without_metric += isnan(val);
    rep->prior.mismatches += halo != line_number(line, "halo_bytes_predicted");
    rep->prior.final_test = line_number(line, metric_key(rep, 1));
    rep->prior.final_acc = line_number(line, "test_acc");
    if (val > rep->prior.best_val) {
      rep->prior.best_val = val;
      rep->prior.test_at_best = rep->prior.final_test;
      rep->prior.best_epoch = (int64_t)epoch;
    }
  }
  if (without_metric > 0)
    halo_log_warn(
        "--metrics %s: %lld earlier epochs have no %s (another --metric), so the best "
        "epoch is this run's",
        path, (long long)without_metric, metric_key(rep, 0));
  if (fflush(out) != 0 || fsync(fileno(out)) != 0)
    HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot write: %s", tmp, strerror(errno));
  const int closed = fclose(out);
  out = NULL;
  if (closed != 0 || rename(tmp, path) != 0)
    HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot replace it: %s", path, strerror(errno));
done:
  if (out) {
    fclose(out);
    unlink(tmp);
  }
  if (in) fclose(in);
  free(line);
  return st;
}

halo_status train_report_metrics_open(train_report *rep, const char *path, int64_t resumed) {
  struct stat a, b;
  const int to_stdout = strcmp(path, "-") == 0;
  rep->metrics_path = path;
  if (!to_stdout && resumed != 0 && stat(path, &a) == 0 && S_ISREG(a.st_mode)) {
    if (resumed > 0) {
      const halo_status st = keep_earlier_epochs(rep, path, resumed);
      if (st != HALO_OK) return st;
    }
    rep->metrics = fopen(path, "a");
  } else {
    rep->metrics = to_stdout ? stdout : fopen(path, "w");
  }
  if (!rep->metrics) {
    halo_log_error("--metrics %s: cannot open for writing: %s", path, strerror(errno));
    return HALO_ERR_IO;
  }
  /* JSON lines on stdout ("-", or a name for it such as /dev/stdout) would
   * be interleaved with the report's text: the text goes to stderr then. */
  rep->text = stdout;
  if (rep->metrics == stdout ||
      (fstat(fileno(rep->metrics), &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 &&
       a.st_dev == b.st_dev && a.st_ino == b.st_ino))
    rep->text = stderr;
  /* One line per object: the per-epoch lines, then the summary. */
  halo_json_init(&rep->json, rep->metrics, 0);
  return HALO_OK;
}

void train_report_metrics_sync(train_report *rep) {
  struct stat sb;
  if (!rep->metrics || rep->metrics == stdout) return;
  if (fflush(rep->metrics) == 0 && fstat(fileno(rep->metrics), &sb) == 0 && S_ISREG(sb.st_mode))
    (void)fsync(fileno(rep->metrics));
}

int train_report_metrics_failed(const train_report *rep) { return rep->metrics_failed; }

halo_status train_report_metrics_close(train_report *rep, const char *path) {
  halo_status st = HALO_OK;
  if (!rep->metrics) return HALO_OK;
  if (halo_json_status(&rep->json) != HALO_OK) {
    halo_log_error("--metrics %s: internal error: a JSON line was written out of order", path);
    st = HALO_ERR_ARG;
  }
  /* stdout stays open for the C library to close; its errors count all the same. */
  const int failed =
      rep->metrics == stdout ? fflush(stdout) != 0 || ferror(stdout) : fclose(rep->metrics) != 0;
  if (failed) {
    halo_log_error("--metrics %s: write failed: %s", path, strerror(errno));
    if (st == HALO_OK) st = HALO_ERR_IO;
  }
  rep->metrics = NULL;
  return st;
}

/* Where the report's text goes: stdout, or stderr when --metrics has
 * stdout (train_report_metrics_open). */
static FILE *text_out(const train_report *rep) { return rep->text ? rep->text : stdout; }

FILE *train_report_text(const train_report *rep) { return text_out(rep); }

/* "s" unless n is 1: "1 rank", "2 ranks". */
static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

void train_report_header(const train_report *rep) {
  FILE *out = text_out(rep);
  const halo_manifest *m = rep->manifest;
  const halo_net_info *in = rep->info;
  const halo_net_options *o = rep->gcn;
  const halo_model_desc *d = &in->model;
  const halo_model_comm exchanges = halo_model_comm_of(d);
  const int64_t predicted = rep->predicted_epoch;
  char dims[256] = "";
  for (int i = 0, n = 0; i <= d->layers && n < (int)sizeof dims; i++)
    n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%d", i ? "-" : "", d->dims[i]);
  int64_t cagnet = halo_predict_cagnet1d_bytes(m->nodes, m->parts, d->dims, d->layers + 1);
  int64_t bcast = halo_predict_broadcast1d_bytes(m->nodes, m->parts, &exchanges);

  fprintf(out,
          "halo-train: graph %s: %lld nodes, %lld edges, %d features, %d %s; "
          "%lld/%lld/%lld train/valid/test\n",
          m->source, (long long)m->nodes, (long long)m->edges, m->features, m->classes,
          m->multilabel ? "binary tasks (multi-label)" : "classes",
          (long long)in->global_count[0], (long long)in->global_count[1],
          (long long)in->global_count[2]);
  fprintf(out, "parts: %d (%s), %lld halo row%s in all; %d rank%s x %d thread%s, device %s\n",
          m->parts, m->method, (long long)rep->halo_rows, plural(rep->halo_rows), rep->ranks,
          plural(rep->ranks), rep->threads, plural(rep->threads), halo_backend_describe(rep->be));
  char heads[96] = "";
  if (o->model == HALO_MODEL_GAT)
    snprintf(heads, sizeof heads, " (%d heads, %d output heads, attention dropout %g)", o->heads,
             o->output_heads, o->attn_dropout);
  /* GCN's reference decays its first layer only; the other models every
   * parameter (halo_net_create's optimiser groups). */
  const int decay_all = o->weight_decay_all || o->model != HALO_MODEL_GCN;
  fprintf(out,
          "model: %s %s%s, %lld parameters, dropout %g (input %g), lr %g, weight decay %g (%s), "
          "seed %llu, features %s%s\n",
          halo_model_name(o->model), dims, heads, (long long)in->params, o->dropout,
          o->input_dropout, o->lr, o->weight_decay, decay_all ? "all layers" : "first layer",
          (unsigned long long)o->seed, in->sparse_features ? "sparse" : "dense",
          o->normalize_features ? ", row-normalised" : "");
  /* The two 1D baselines' ratios to halo's bytes: n/a when nothing
   * crosses (one part), as the JSON's null. */
  char vs_cagnet[32] = "n/a", vs_bcast[32] = "n/a";
  if (predicted > 0) {
    snprintf(vs_cagnet, sizeof vs_cagnet, "1/%.0f", (double)cagnet / (double)predicted);
    snprintf(vs_bcast, sizeof vs_bcast, "1/%.0f", (double)bcast / (double)predicted);
  }
  fprintf(out,
          "volume: predicted %.4f MB/epoch halo (%lld floats per halo row), set-up %.4f MB; "
          "CAGNET-1D %.3f MB/epoch (halo/CAGNET = %s); 1D broadcast of the same widths "
          "%.3f MB (%s)\n",
          predicted / 1e6, (long long)halo_predict_epoch_columns(&exchanges),
          rep->setup_bytes / 1e6, cagnet / 1e6, vs_cagnet, bcast / 1e6, vs_bcast);
  fflush(out);
}

void train_report_resumed(const train_report *rep, const char *path, int64_t epoch,
                          int64_t adam_step, int64_t last_epoch) {
  FILE *out = text_out(rep);
  if (epoch >= last_epoch)
    fprintf(out,
            "resumed from %s (epoch %lld, Adam step %lld); nothing to train: --epochs %lld is "
            "not past it\n",
            path, (long long)epoch, (long long)adam_step, (long long)last_epoch);
  else
    fprintf(out, "resumed from %s (epoch %lld, Adam step %lld); training epochs %lld..%lld\n", path,
            (long long)epoch, (long long)adam_step, (long long)epoch + 1, (long long)last_epoch);
  fflush(out);
}

void train_report_begin(train_report *rep, int64_t first_epoch, int64_t last_epoch,
                        int64_t warmup) {
  const int64_t trained = last_epoch - first_epoch + 1;
  rep->first_epoch = first_epoch;
  rep->trained = trained;
  /* A resumed run shorter than the warm-up still times most of its epochs. */
  rep->warmup = warmup < trained ? warmup : trained > 10 ? 5 : trained > 1 ? 1 : 0;
  rep->timed = 0;
  rep->total_halo = rep->prior.halo;
  rep->mismatches = rep->prior.mismatches;
  rep->best_epoch = rep->prior.best_epoch;
  rep->best_val = rep->prior.epochs > 0 ? rep->prior.best_val : -1.0;
  rep->test_at_best = rep->prior.test_at_best;
  rep->final_test = rep->prior.final_test;
  rep->final_acc = rep->prior.final_acc;
  rep->time_sum = 0.0;
}

halo_status train_report_reduce(const train_report *rep, const halo_net_stats *step,
                                const halo_net_stats *eval, train_epoch *out) {
  halo_status st = HALO_OK;
  enum { N = TRAIN_FIGURES };
  double mine[N] = {[TRAIN_STEP_S] = step->seconds,
                    [TRAIN_COMM_S] = step->comm_seconds,
                    [TRAIN_HALO_B] = (double)step->halo_bytes,
                    [TRAIN_ALLREDUCE_B] = (double)step->allreduce_bytes,
                    [TRAIN_EVAL_S] = eval->seconds,
                    [TRAIN_EVAL_HALO_B] = (double)eval->halo_bytes};
  /* Sums of the figures, the loss, the three correct counts and the three
   * evaluation losses; maxima of the figures and of their negations (the
   * minima).  Each rank's losses are multiples of 2^-30 (the loss grid), so
   * their double sum does not depend on P. */
  enum { L = 2 * HALO_MAX_LAYERS };
  double sums[N + 7 + L], local[N + 7 + L];
  double ext[2 * N], lext[2 * N];
  for (int k = 0; k < N; k++) {
    local[k] = mine[k];
    lext[k] = mine[k];
    lext[N + k] = -mine[k];
  }
  local[N] = step->loss_sum;
  for (int k = 0; k < 3; k++) {
    local[N + 1 + k] = (double)eval->correct[k];
    local[N + 4 + k] = eval->eval_loss_sum[k];
  }
  for (int l = 0; l < HALO_MAX_LAYERS; l++)
    for (int d = 0; d < 2; d++) local[N + 7 + 2 * l + d] = (double)step->layer_bytes[l][d];
  halo_watch_layer("epoch report", -1);
  HALO_TRY(halo_watch_allreduce(local, sums, N + 7 + L, MPI_DOUBLE, MPI_SUM, rep->comm,
                                "the epoch report"));
  HALO_TRY(
      halo_watch_allreduce(lext, ext, 2 * N, MPI_DOUBLE, MPI_MAX, rep->comm, "the epoch report"));
  for (int k = 0; k < N; k++) {
    out->sum[k] = sums[k];
    out->max[k] = ext[k];
    out->min[k] = -ext[N + k];
  }
  const int64_t *count = rep->info->global_scored; /* nodes, or labelled tasks */
  out->loss = count[0] > 0 ? sums[N] / (double)count[0] : 0.0;
  for (int k = 0; k < 3; k++) {
    out->acc[k] = count[k] > 0 ? sums[N + 1 + k] / (double)count[k] : 0.0;
    out->eval_loss[k] = count[k] > 0 ? sums[N + 4 + k] / (double)count[k] : NAN;
  }
  for (int l = 0; l < HALO_MAX_LAYERS; l++)
    for (int d = 0; d < 2; d++) out->layer_bytes[l][d] = sums[N + 7 + 2 * l + d];
done:
  return st;
}

/* Layer l's predicted bytes per epoch, forward (d = 0) or backward: every
 * halo row crosses once per column of the layer's exchanges. */
static int64_t layer_predicted(const train_report *rep, int l, int d) {
  const halo_layer_comm *c = &rep->info->model.comm[l];
  return rep->halo_rows * (int64_t)(d ? c->bwd : c->fwd) * (int64_t)sizeof(float);
}

/* One --metrics line per epoch; docs/train.md lists the keys. */
static void epoch_json(train_report *rep, int64_t epoch, const train_epoch *e) {
  halo_json *j = &rep->json;
  halo_json_object_begin(j);
  halo_json_key_int(j, "epoch", epoch);
  halo_json_key_double(j, "loss", e->loss, "%.17g");
  /* 17 digits: a resumed run reads its earlier best back exactly. */
  halo_json_key_double(j, "train_acc", e->acc[0], "%.17g");
  halo_json_key_double(j, "val_acc", e->acc[1], "%.17g");
  halo_json_key_double(j, "test_acc", e->acc[2], "%.17g");
  halo_json_key_double(j, "val_loss", e->eval_loss[1], "%.17g");
  halo_json_key_double(j, "test_loss", e->eval_loss[2], "%.17g");
  if (rep->metric != TRAIN_METRIC_ACC) {
    halo_json_key_double(j, metric_key(rep, 0), e->metric[0], "%.17g");
    halo_json_key_double(j, metric_key(rep, 1), e->metric[1], "%.17g");
  }
  halo_json_key_double(j, "epoch_s", e->max[TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "epoch_s_min", e->min[TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "epoch_s_max", e->max[TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "comm_s", e->sum[TRAIN_COMM_S] / rep->ranks, "%.9g");
  halo_json_key_double(j, "comm_s_min", e->min[TRAIN_COMM_S], "%.9g");
  halo_json_key_double(j, "comm_s_max", e->max[TRAIN_COMM_S], "%.9g");
  halo_json_key_double(j, "halo_bytes", e->sum[TRAIN_HALO_B], "%.0f");
  halo_json_key_int(j, "halo_bytes_predicted", rep->predicted_epoch);
  /* Per layer, [forward, backward], measured and predicted. */
  for (int pred = 0; pred < 2; pred++) {
    halo_json_key(j, pred ? "layer_halo_bytes_predicted" : "layer_halo_bytes");
    halo_json_array_begin(j);
    for (int l = 0; l < rep->info->model.layers; l++) {
      halo_json_array_begin(j);
      for (int d = 0; d < 2; d++)
        halo_json_int(j, pred ? layer_predicted(rep, l, d) : (int64_t)e->layer_bytes[l][d]);
      halo_json_array_end(j);
    }
    halo_json_array_end(j);
  }
  halo_json_key_double(j, "halo_bytes_min", e->min[TRAIN_HALO_B], "%.0f");
  halo_json_key_double(j, "halo_bytes_max", e->max[TRAIN_HALO_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes", e->sum[TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes_min", e->min[TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes_max", e->max[TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "eval_s", e->max[TRAIN_EVAL_S], "%.9g");
  halo_json_key_double(j, "eval_halo_bytes", e->sum[TRAIN_EVAL_HALO_B], "%.0f");
  halo_json_key_int(j, "ranks", rep->ranks);
  halo_json_object_end(j);
}

void train_report_epoch(train_report *rep, int64_t epoch, const train_epoch *e) {
  FILE *out = text_out(rep);
  const int64_t halo = (int64_t)e->sum[TRAIN_HALO_B];
  int layers_off = 0;
  for (int l = 0; l < rep->info->model.layers; l++)
    for (int d = 0; d < 2; d++)
      layers_off |= (int64_t)e->layer_bytes[l][d] != layer_predicted(rep, l, d);
  rep->total_halo += halo;
  rep->mismatches += halo != rep->predicted_epoch || layers_off;
  if (epoch >= rep->first_epoch + rep->warmup) {
    rep->time_sum += e->max[TRAIN_STEP_S];
    rep->timed++;
  }
  const double val = rep->metric == TRAIN_METRIC_ACC ? e->acc[1] : e->metric[0],
               test = rep->metric == TRAIN_METRIC_ACC ? e->acc[2] : e->metric[1];
  if (val > rep->best_val) { /* a NaN (an AUC without both classes) never is */
    rep->best_val = val;
    rep->test_at_best = test;
    rep->best_epoch = epoch;
  }
  rep->final_test = test;
  rep->final_acc = e->acc[2];
  if (rep->rank != 0) return;
  if (!rep->quiet) {
    fprintf(out,
            "epoch %4lld  loss %.4f  train %.4f  val %.4f  test %.4f  time %.2f ms (compute "
            "%.2f, comm %.2f)  halo %.4f MB (predicted %.4f)  allreduce %.4f MB\n",
            (long long)epoch, e->loss, e->acc[0], e->acc[1], e->acc[2], 1e3 * e->max[TRAIN_STEP_S],
            1e3 * (e->max[TRAIN_STEP_S] - e->sum[TRAIN_COMM_S] / rep->ranks),
            1e3 * e->sum[TRAIN_COMM_S] / rep->ranks, halo / 1e6, rep->predicted_epoch / 1e6,
            e->sum[TRAIN_ALLREDUCE_B] / 1e6);
    fflush(out);
  }
  if (rep->metrics && !rep->metrics_failed) {
    epoch_json(rep, epoch, e);
    /* Whole lines only, at every epoch's end; a failed write is reported
     * here, with its epoch, and stops the run at the epoch's agreement. */
    if (fflush(rep->metrics) != 0 || ferror(rep->metrics)) {
      halo_log_error("--metrics %s: cannot write epoch %lld: %s", rep->metrics_path,
                     (long long)epoch, strerror(errno));
      rep->metrics_failed = 1;
    }
  }
}

void train_report_evaluation(train_report *rep, int64_t epoch, const char *path,
                             const train_epoch *e) {
  if (rep->rank != 0) return;
  FILE *out = text_out(rep);
  fprintf(out,
          "evaluation of %s (epoch %lld): train %.4f  val %.4f  test %.4f; loss train %.4f  val "
          "%.4f  test %.4f\n",
          path, (long long)epoch, e->acc[0], e->acc[1], e->acc[2], e->eval_loss[0], e->eval_loss[1],
          e->eval_loss[2]);
  fflush(out);
  if (!rep->metrics) return;
  halo_json *j = &rep->json;
  halo_json_object_begin(j);
  halo_json_key_bool(j, "evaluation", 1);
  halo_json_key_string(j, "checkpoint", path);
  halo_json_key_int(j, "epoch", epoch);
  halo_json_key_double(j, "train_acc", e->acc[0], "%.6f");
  halo_json_key_double(j, "val_acc", e->acc[1], "%.6f");
  halo_json_key_double(j, "test_acc", e->acc[2], "%.6f");
  halo_json_key_double(j, "train_loss", e->eval_loss[0], "%.17g");
  halo_json_key_double(j, "val_loss", e->eval_loss[1], "%.17g");
  halo_json_key_double(j, "test_loss", e->eval_loss[2], "%.17g");
  if (rep->metric != TRAIN_METRIC_ACC) {
    halo_json_key_double(j, metric_key(rep, 0), e->metric[0], "%.6f");
    halo_json_key_double(j, metric_key(rep, 1), e->metric[1], "%.6f");
  }
  halo_json_key_double(j, "eval_halo_bytes", e->sum[TRAIN_EVAL_HALO_B], "%.0f");
  halo_json_key_string(j, "params_sha256", rep->params_sha256);
  halo_json_key_int(j, "ranks", rep->ranks);
  halo_json_object_end(j);
  fflush(rep->metrics);
}

void train_report_stop(train_report *rep, int64_t epoch, const char *why) {
  rep->trained = epoch - rep->first_epoch + 1;
  rep->stopped_by = why;
}

/* Rank 0's "memory:" line, after the summary. */
static void print_memory(const train_report *rep, const train_memory_report *m) {
  FILE *out = text_out(rep);
  char used[32], predicted[32], where[64];
  if (m->device >= 0)
    train_memory_pool_name(rep->be, m->device, where, sizeof where);
  else
    snprintf(where, sizeof where, "the node's RAM at the peak");
  if (m->device >= 0) strncat(where, " while training", sizeof where - strlen(where) - 1);
  halo_memory_str(m->predicted, predicted, sizeof predicted);
  if (m->used < 0) {
    fprintf(out,
            "memory: predicted %s for the model (%d ranks sharing %s); use not measurable here\n",
            predicted, m->ranks, m->device >= 0 ? "a GPU" : "a node");
    return;
  }
  /* Libraries' own buffers (MPI, OpenBLAS, CUDA's) are not in the estimate:
   * a few MB a rank, which decide the ratio of a small model. */
  const int fixed_costs = m->used > 2 * m->predicted && m->used - m->predicted < MEMORY_UNMODELLED;
  fprintf(out, "memory: the model took %s of %s (%d rank%s), predicted %s (%.2fx)%s\n",
          halo_memory_str(m->used, used, sizeof used), where, m->ranks, m->ranks > 1 ? "s" : "",
          predicted, m->used > 0 ? (double)m->predicted / (double)m->used : 0.0,
          fixed_costs ? "; most of it is the libraries' own buffers, which the estimate leaves out"
                      : "");
}

/* The --metrics summary line; docs/train.md lists the keys. */
static void summary_json(train_report *rep, const train_memory_report *mem, double mean) {
  halo_json *j = &rep->json;
  halo_json_object_begin(j);
  halo_json_key_bool(j, "summary", 1);
  /* A resumed run's summary covers the earlier epochs its file keeps. */
  halo_json_key_int(j, "epochs", rep->prior.epochs + rep->trained);
  halo_json_key_int(j, "epochs_this_run", rep->trained);
  /* A run that trained no epoch evaluated nothing: null (a NaN), not 0. */
  const int measured = rep->prior.epochs + rep->trained > 0;
  const char *m = train_metric_name(rep->metric);
  char key[3][40];
  snprintf(key[0], sizeof key[0], "best_val_%s", m);
  snprintf(key[1], sizeof key[1], "test_%s_at_best_val", m);
  snprintf(key[2], sizeof key[2], "final_test_%s", m);
  halo_json_key_string(j, "metric", m);
  /* best_val < 0: no epoch had a figure (an AUC of splits without both classes). */
  halo_json_key_double(j, key[0], measured && rep->best_val >= 0 ? rep->best_val : NAN, "%.6f");
  halo_json_key_double(j, key[1], measured && rep->best_val >= 0 ? rep->test_at_best : NAN, "%.6f");
  if (measured && rep->best_epoch > 0)
    halo_json_key_int(j, "best_val_epoch", rep->best_epoch);
  else
    halo_json_key_null(j, "best_val_epoch");
  halo_json_key_double(j, key[2], measured ? rep->final_test : NAN, "%.6f");
  if (rep->metric != TRAIN_METRIC_ACC)
    halo_json_key_double(j, "final_test_acc", measured ? rep->final_acc : NAN, "%.6f");
  halo_json_key_double(j, "mean_epoch_s", rep->timed > 0 ? mean : NAN, "%.9g");
  halo_json_key_int(j, "warmup_epochs", rep->trained - rep->timed);
  halo_json_key_int(j, "total_halo_bytes", rep->total_halo);
  halo_json_key_int(j, "setup_halo_bytes", rep->setup_bytes);
  halo_json_key_int(j, "halo_bytes_predicted_per_epoch", rep->predicted_epoch);
  halo_json_key_int(j, "epochs_off_prediction", rep->mismatches);
  halo_json_key_int(j, "params", rep->info->params);
  halo_json_key_string(j, "params_sha256", rep->params_sha256);
  halo_json_key_int(j, "threads", rep->threads);
  halo_json_key_int(j, "ranks", rep->ranks);
  halo_json_key_string(j, "device", halo_backend_name(rep->be));
  halo_json_key_int(j, "memory_used_bytes", mem->used);
  halo_json_key_int(j, "memory_predicted_bytes", mem->predicted);
  halo_json_key_string(j, "memory_pool", mem->device >= 0 ? "device" : "host");
  halo_json_key_int(j, "memory_pool_ranks", mem->ranks);
  if (rep->stopped_by)
    halo_json_key_string(j, "stopped_by", rep->stopped_by);
  else
    halo_json_key_null(j, "stopped_by");
  halo_json_object_end(j);
}

void train_params_sha256(const float *params, int64_t nparams, char *hex) {
  uint8_t digest[HALO_SHA256_BYTES];
  /* float32 little-endian: the bytes as they are in memory on the x86_64
   * and arm64 hosts halo runs on. */
  _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "params_sha256 hashes float32 LE");
  halo_sha256_bytes(params, (size_t)nparams * sizeof *params, digest);
  halo_sha256_hex(digest, hex);
}

halo_status train_report_digest(train_report *rep, const halo_net *model) {
  halo_status st = HALO_OK;
  float *params = NULL;
  HALO_ALLOC(params, rep->info->params, "the final parameters' copy");
  HALO_TRY(halo_net_params_get(model, params));
  train_params_sha256(params, rep->info->params, rep->params_sha256);
done:
  free(params);
  return st;
}

void train_report_summary(train_report *rep, const train_memory_report *mem) {
  if (rep->rank != 0) return;
  FILE *out = text_out(rep);
  const double mean = rep->timed > 0 ? rep->time_sum / (double)rep->timed : 0.0;
  const int64_t epochs = rep->prior.epochs + rep->trained;
  if (epochs == 0) {
    fprintf(out,
            "summary: no epoch trained, so no accuracy was measured; halo 0.000 MB in all, set-up "
            "%.4f MB\n",
            rep->setup_bytes / 1e6);
  } else {
    char mean_text[32] = "n/a", runs[64] = "", metric_text[16] = ""; /* n/a: all warm-up */
    if (rep->metric != TRAIN_METRIC_ACC)
      snprintf(metric_text, sizeof metric_text, " %s", train_metric_name(rep->metric));
    if (rep->timed > 0) snprintf(mean_text, sizeof mean_text, "%.3f ms", 1e3 * mean);
    if (rep->prior.epochs > 0)
      snprintf(runs, sizeof runs, " (%lld in this run)", (long long)rep->trained);
    fprintf(
        out,
        "summary: %lld epoch%s%s, best val%s %.4f (test %.4f), final test %.4f, mean epoch %s "
        "(%lld warm-up epoch%s excluded), halo %.3f MB in all (%s prediction), set-up %.4f MB\n",
        (long long)epochs, plural(epochs), runs, metric_text,
        rep->best_val < 0 ? 0.0 : rep->best_val, rep->test_at_best, rep->final_test, mean_text,
        (long long)(rep->trained - rep->timed), plural(rep->trained - rep->timed),
        rep->total_halo / 1e6, rep->mismatches ? "DIFFERS FROM the" : "equal to the",
        rep->setup_bytes / 1e6);
  }
  if (rep->stopped_by)
    fprintf(out, "stopped: %s after epoch %lld\n", rep->stopped_by,
            (long long)(rep->first_epoch + rep->trained - 1));
  print_memory(rep, mem);
  if (rep->metrics) summary_json(rep, mem, mean);
  fflush(out);
}
