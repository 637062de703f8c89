/* halo-train's report: the header lines, the per-epoch line, the --metrics
 * file (its JSON objects are halo_train's, through core's halo-json), and
 * the summary, as the hooks halo_train_run calls on rank 0.
 * train-report.h has the contracts; docs/train.md shows the output. */
#include "train-report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-predict.h"
#include "halo-sample.h"
#include "halo-train.h"

/* Below this much above the prediction, a use more than twice the
 * prediction is put down to the libraries' fixed costs in the line. */
#define MEMORY_UNMODELLED ((int64_t)64 << 20)

/* The lines halo-train writes to a metrics file start so. */
static int is_metrics_line(const char *line) {
  return strncmp(line, "{\"epoch\": ", 10) == 0 || strncmp(line, "{\"summary\": ", 12) == 0 ||
         strncmp(line, "{\"evaluation\": ", 15) == 0;
}

halo_status train_report_metrics_check(const char *path, int force, int resume) {
  halo_status st = HALO_OK;
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  char head[64] = {0};
  struct stat sb;
  /* "-" is standard output, never a file of that name.  A read of a pipe or
   * a device would wait for input that never comes. */
  if (!path || strcmp(path, "-") == 0) goto done;
  /* The folder takes a file (existence is judged below, by content). */
  HALO_TRY(halo_atomic_check_target(path, 1, "--metrics"));
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) goto done;
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
  /* A halo metrics file: a resumed run (or --eval-only) appends to it; a
   * fresh one would overwrite an earlier run's epochs. */
  if (got > 0 && !force && !resume)
    HALO_FAIL(HALO_ERR_EXISTS,
              "--metrics %s: exists (an earlier run's epochs); give --force to overwrite it, "
              "--resume to continue that run, or another name",
              path);
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
static const char *metric_key(const halo_train_report *rep, int k) {
  return halo_train_metric_key(rep->metric, k);
}

/* --resume: rewrites `path` with its epoch lines up to `resumed` alone and
 * notes their totals in rep->prior. */
static halo_status keep_earlier_epochs(halo_train_report *rep, const char *path, int64_t resumed) {
  halo_status st = HALO_OK;
  char tmp[4200] = "", *line = NULL;
  size_t cap = 0;
  FILE *in = NULL, *out = NULL;
  in = fopen(path, "r");
  if (!in) goto done; /* nothing earlier: a fresh file */
  /* The user names this file: its temporary is PATH.tmp.XXXXXX (core/halo-atomic.h). */
  const int fd = halo_atomic_create_file(path, tmp, sizeof tmp);
  if (fd == -ENAMETOOLONG) HALO_FAIL(HALO_ERR_ARG, "--metrics %s: path is too long", path);
  if (fd < 0)
    HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot write next to it: %s", path, strerror(-fd));
  out = fdopen(fd, "w");
  if (!out) {
    close(fd);
    HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot write: %s", tmp, strerror(errno));
  }
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
    /* An epoch that --eval-every skipped has no figures to count. */
    if (strstr(line, "\"evaluated\": false")) {
      rep->prior.mismatches += halo != line_number(line, "halo_bytes_predicted");
      continue;
    }
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
  int err = closed != 0 ? errno : halo_atomic_rename(tmp, path);
  if (err != 0) HALO_FAIL(HALO_ERR_IO, "--metrics %s: cannot replace it: %s", path, strerror(err));
  tmp[0] = '\0'; /* renamed: nothing to remove */
done:
  if (out) fclose(out);
  if (st != HALO_OK && tmp[0]) (void)halo_atomic_remove(tmp, 0);
  if (in) fclose(in);
  free(line);
  return st;
}

/* The `open` hook (halo-train.h): --metrics rep->metrics_path, for a run
 * resumed after epoch `resumed` (> 0), which keeps the file's lines of
 * epochs 1..resumed, drops the rest (an earlier run's summary, epochs
 * trained past its checkpoint), rewriting it through a temporary name, and
 * appends; the summary then covers the whole run.  `resumed` < 0 appends
 * to an existing file as it is (--eval-only). */
static halo_status report_open(void *ctx, halo_train_report *run, int64_t resumed) {
  train_report *rep = ctx;
  struct stat a, b;
  const char *path = rep->metrics_path;
  const int to_stdout = strcmp(path, "-") == 0;
  if (!to_stdout && resumed != 0 && stat(path, &a) == 0 && S_ISREG(a.st_mode)) {
    if (resumed > 0) {
      const halo_status st = keep_earlier_epochs(run, path, resumed);
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

/* The `sync` hook: fsync of the metrics so far, as of each checkpoint; a
 * no-op for standard output or a pipe. */
static void report_sync(void *ctx) {
  train_report *rep = ctx;
  struct stat sb;
  if (!rep->metrics || rep->metrics == stdout) return;
  if (fflush(rep->metrics) == 0 && fstat(fileno(rep->metrics), &sb) == 0 && S_ISREG(sb.st_mode))
    (void)fsync(fileno(rep->metrics));
}

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
 * stdout (report_open). */
static FILE *text_out(const train_report *rep) { return rep->text ? rep->text : stdout; }

/* "s" unless n is 1: "1 rank", "2 ranks". */
static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

/* The `header` hook: graph, parts, model, predicted volume. */
static void report_header(void *ctx, const halo_train_report *rep) {
  FILE *out = text_out(ctx);
  const halo_manifest *m = rep->manifest;
  const halo_net_info *in = rep->info;
  const halo_net_options *o = rep->gcn;
  const halo_model_desc *d = &in->model;
  const halo_model_comm exchanges = halo_model_comm_of(d);
  const int64_t predicted = rep->predicted_epoch;
  char dims[256] = "";
  for (int i = 0, n = 0; i <= d->layers && n < (int)sizeof dims; i++)
    n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%d", i ? "-" : "", d->dims[i]);
  int64_t cagnet = halo_predict_cagnet1d_bytes(m->nodes, rep->ranks, d->dims, d->layers + 1);
  int64_t bcast = halo_predict_broadcast1d_bytes(m->nodes, rep->ranks, &exchanges);

  fprintf(out,
          "halo-train: graph %s: %lld nodes, %lld edges, %d features, %d %s; "
          "%lld/%lld/%lld train/valid/test\n",
          m->source, (long long)m->nodes, (long long)m->edges, m->features, m->classes,
          m->multilabel ? "binary tasks (multi-label)" : "classes", (long long)in->global_count[0],
          (long long)in->global_count[1], (long long)in->global_count[2]);
  char wait[128] = "", busy[80] = "";
  if (rep->busy_cores > 0)
    snprintf(busy, sizeof busy, "%d of %d core%s busy at start; ", rep->busy_cores, rep->cores,
             plural(rep->cores));
  if (rep->wait || busy[0])
    snprintf(wait, sizeof wait, " (%s%s)", busy, rep->wait ? rep->wait : "");
  /* The sums decide whether the run's bits depend on P: said up front.
   * The modes that change what crosses between parts keep the bits at
   * this P only (docs/reproducibility.md). */
  const int p_bound = o->halo_precision != HALO_PREC_FP32 ||
                      o->halo_precision_bwd != HALO_PREC_FP32 || halo_sample_on(o->halo_sample) ||
                      o->halo_stale;
  /* Float sums: asked for, or kept by a flag the exact ones cannot run
   * with (halo-train-args.c's default). */
  const char *sums = o->deterministic      ? p_bound ? "exact sums (bit-identical at this P)"
                                                     : "exact sums (bit-identical for any P)"
                     : o->no_deterministic ? "float sums"
                     : o->halo_aggregate == HALO_AGGREGATE_AUTO
                         ? "float sums (--halo-aggregate auto reorders them)"
                         : "float sums (cuda's default)";
  fprintf(out,
          "%d part%s on %d rank%s (%s), %lld halo row%s in all; %d rank%s x %d thread%s%s, "
          "device %s, %s\n",
          m->parts, plural(m->parts), rep->ranks, plural(rep->ranks), m->method,
          (long long)rep->halo_rows, plural(rep->halo_rows), rep->ranks,
          plural(rep->ranks), rep->threads, plural(rep->threads), wait,
          halo_backend_describe(rep->be), sums);
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
          o->normalize_features ? ", normalised (--normalize-features)" : ", as stored");
  /* The optimiser and the schedule, when not Adam at a constant rate. */
  if (o->optimizer != HALO_OPTIMIZER_ADAM || o->lr_schedule != HALO_LR_CONSTANT ||
      o->warmup_epochs > 0 || o->clip_grad_norm > 0.0f) {
    char opt[96] = "", sched[128] = "", warm[48] = "", clip[48] = "";
    if (o->optimizer == HALO_OPTIMIZER_SGD)
      snprintf(opt, sizeof opt, "sgd (momentum %g%s)", o->momentum,
               o->nesterov ? ", nesterov" : "");
    else
      snprintf(opt, sizeof opt, "%s", halo_optimizer_names[o->optimizer]);
    if (o->lr_schedule == HALO_LR_STEP)
      snprintf(sched, sizeof sched, "step (x%g every %d epochs)", o->lr_gamma, o->lr_step_size);
    else if (o->lr_schedule == HALO_LR_COSINE)
      snprintf(sched, sizeof sched, "cosine (to %g)", o->lr_min);
    else if (o->lr_schedule == HALO_LR_PLATEAU)
      snprintf(sched, sizeof sched, "plateau (x%g after %d evaluations, at least %g)", o->lr_gamma,
               o->lr_patience, o->lr_min);
    else
      snprintf(sched, sizeof sched, "constant");
    if (o->warmup_epochs > 0)
      snprintf(warm, sizeof warm, ", linear warm-up over %d epochs", o->warmup_epochs);
    if (o->clip_grad_norm > 0.0f)
      snprintf(clip, sizeof clip, ", gradient norm clipped to %g", o->clip_grad_norm);
    fprintf(out, "optimizer: %s, lr schedule %s%s%s\n", opt, sched, warm, clip);
  }
  /* The two 1D baselines' ratios to halo's bytes: n/a when nothing
   * crosses (one part), as the JSON's null. */
  char vs_cagnet[32] = "n/a", vs_bcast[32] = "n/a";
  if (predicted > 0) {
    snprintf(vs_cagnet, sizeof vs_cagnet, "1/%.0f", (double)cagnet / (double)predicted);
    snprintf(vs_bcast, sizeof vs_bcast, "1/%.0f", (double)bcast / (double)predicted);
  }
  fprintf(out,
          "volume: predicted %.4f MB/epoch halo%s (%lld floats per halo row), set-up %.4f MB; "
          "CAGNET-1D %.3f MB/epoch (halo/CAGNET = %s); 1D broadcast of the same widths "
          "%.3f MB (%s)\n",
          predicted / 1e6,
          halo_sample_on(rep->gcn->halo_sample) ? " before sampling (each epoch's draw below)" : "",
          (long long)halo_predict_epoch_columns(&exchanges),
          rep->setup_bytes / 1e6, cagnet / 1e6, vs_cagnet, bcast / 1e6, vs_bcast);
  if (rep->gcn->halo_aggregate == HALO_AGGREGATE_AUTO)
    fprintf(
        out,
        "halo aggregate auto: %lld rows and partial sums per exchange for %lld halo rows "
        "(%.1f%%); fp32 plain rows would move %.4f MB/epoch\n",
        (long long)rep->exchanged_rows, (long long)rep->halo_rows,
        rep->halo_rows > 0 ? 100.0 * (double)rep->exchanged_rows / (double)rep->halo_rows : 100.0,
        halo_predict_epoch_bytes(rep->halo_rows, &exchanges) / 1e6);
  if (rep->gcn->halo_precision || rep->gcn->halo_precision_bwd)
    fprintf(out, "halo rows: forward %s, backward %s (evaluation fp32); fp32 rows would move %.4f MB/epoch\n",
            halo_precision_names[rep->gcn->halo_precision],
            halo_precision_names[rep->gcn->halo_precision_bwd],
            halo_predict_epoch_bytes(rep->halo_rows, &exchanges) / 1e6);
  if (halo_sample_on(o->halo_sample))
    fprintf(out,
            "halo rows: training keeps a keyed %g of the boundary rows each epoch, scaled by 1/%g "
            "(BNS-GCN; evaluation uses them all); each epoch's bytes are predicted from its "
            "draw\n",
            o->halo_sample, o->halo_sample);
  if (rep->gcn->halo_stale)
    fprintf(out,
            "halo exchange: stale (PipeGCN), momentum %g: each epoch after the first reads the "
            "previous epoch's halo rows and gradients; evaluation fresh\n",
            (double)rep->gcn->halo_stale_momentum);
  fflush(out);
}

/* The `resumed` hook: where the run resumes, and what it trains. */
static void report_resumed(void *ctx, const halo_train_report *rep, const char *path, int64_t epoch,
                           int64_t adam_step, int64_t last_epoch) {
  FILE *out = text_out(ctx);
  (void)rep;
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

/* The `epoch` hook: the epoch's line (unless --quiet) and its JSON line. */
static int report_epoch(void *ctx, const halo_train_report *rep, int64_t epoch,
                        const halo_train_epoch *e) {
  train_report *t = ctx;
  FILE *out = text_out(t);
  const int64_t halo = (int64_t)e->sum[HALO_TRAIN_HALO_B];
  if (!rep->quiet) {
    /* The figures of the evaluation, when --eval-every ran one; --metric
     * f1|auc adds its own. */
    char figures[160] = "", extra[64] = "";
    if (e->evaluated && rep->metric != HALO_TRAIN_METRIC_ACC) {
      const char *m = halo_train_metric_name(rep->metric);
      snprintf(extra, sizeof extra, "  val %s %.4f  test %s %.4f", m, e->metric[0], m,
               e->metric[1]);
    }
    if (e->evaluated)
      snprintf(figures, sizeof figures, "  train %.4f  val %.4f  test %.4f%s", e->acc[0], e->acc[1],
               e->acc[2], extra);
    /* A sampled, low-bit or covered exchange: its mode and the fp32 plain bytes. */
    char mode[128] = "";
    const halo_net_options *o = rep->gcn;
    if (halo_sample_on(o->halo_sample) || o->halo_precision || o->halo_precision_bwd ||
        o->halo_aggregate != HALO_AGGREGATE_POST) {
      const halo_model_comm exchanges = halo_model_comm_of(&rep->info->model);
      char sample[32] = "", aggregate[32] = "";
      if (halo_sample_on(o->halo_sample)) snprintf(sample, sizeof sample, "sample %g, ", o->halo_sample);
      if (o->halo_aggregate != HALO_AGGREGATE_POST)
        snprintf(aggregate, sizeof aggregate, "aggregate %s, ", halo_aggregate_names[o->halo_aggregate]);
      snprintf(mode, sizeof mode, "; %s%s%s/%s; fp32 plain %.4f", sample, aggregate,
               halo_precision_names[o->halo_precision], halo_precision_names[o->halo_precision_bwd],
               halo_predict_epoch_bytes(rep->halo_rows, &exchanges) / 1e6);
    }
    fprintf(out,
            "epoch %4lld  loss %.4f  lr %.4g%s  time %.2f ms (compute %.2f, comm %.2f)  eval %.2f ms  wall "
            "%.2f s  halo %.4f MB (predicted %.4f%s)  allreduce %.4f MB%s%s\n",
            (long long)epoch, e->loss, e->lr, figures, 1e3 * e->max[HALO_TRAIN_STEP_S],
            1e3 * (e->max[HALO_TRAIN_STEP_S] - e->sum[HALO_TRAIN_COMM_S] / rep->ranks),
            1e3 * e->sum[HALO_TRAIN_COMM_S] / rep->ranks, 1e3 * e->max[HALO_TRAIN_EVAL_S],
            e->wall_s, halo / 1e6, rep->predicted_epoch / 1e6, mode,
            e->sum[HALO_TRAIN_ALLREDUCE_B] / 1e6,
            /* --halo-stale: whether this epoch read last epoch's rows */
            rep->gcn->halo_stale ? "  rows " : "",
            rep->gcn->halo_stale ? halo_train_exchange_mode(rep, epoch) : "");
    fflush(out);
  }
  if (t->metrics && !t->metrics_failed) {
    halo_train_epoch_json(rep, epoch, e, &t->json);
    /* Whole lines only, at every epoch's end; a failed write is reported
     * here, with its epoch, and stops the run at the epoch's agreement. */
    if (fflush(t->metrics) != 0 || ferror(t->metrics)) {
      halo_log_error("--metrics %s: cannot write epoch %lld: %s", t->metrics_path, (long long)epoch,
                     strerror(errno));
      t->metrics_failed = 1;
    }
  }
  return t->metrics_failed;
}

/* The `evaluation` hook (--eval-only): its line and its one JSON line. */
static void report_evaluation(void *ctx, const halo_train_report *rep, int64_t epoch,
                              const char *path, const halo_train_epoch *e) {
  train_report *t = ctx;
  FILE *out = text_out(t);
  /* A split without a node (new nodes to score, unlabelled or unsplit)
   * has no figure: "-", not an accuracy of 0. */
  static const char *const NAMES[3] = {"train", "val", "test"};
  char acc[3][32], loss[3][32];
  for (int k = 0; k < 3; k++) {
    const int none = rep->info->global_scored[k] == 0;
    snprintf(acc[k], sizeof acc[k], none ? "-" : "%.4f", e->acc[k]);
    snprintf(loss[k], sizeof loss[k], none ? "-" : "%.4f", e->eval_loss[k]);
  }
  fprintf(out, "evaluation of %s (epoch %lld): %s %s  %s %s  %s %s; loss %s %s  %s %s  %s %s",
          path, (long long)epoch, NAMES[0], acc[0], NAMES[1], acc[1], NAMES[2], acc[2], NAMES[0],
          loss[0], NAMES[1], loss[1], NAMES[2], loss[2]);
  if (!rep->info->global_scored[0] && !rep->info->global_scored[1] && !rep->info->global_scored[2])
    fprintf(out, " (no node of the graph is in a split with a label: outputs only)");
  fputc('\n', out);
  fflush(out);
  if (!t->metrics) return;
  halo_train_evaluation_json(rep, epoch, path, e, &t->json);
  fflush(t->metrics);
}

/* The `early_stop` hook. */
static void report_early_stop(void *ctx, const halo_train_report *rep, int64_t patience) {
  fprintf(text_out(ctx),
          "early stop: no better validation %s in the %lld evaluation%s after epoch %lld "
          "(%.4f)\n",
          halo_train_metric_name(rep->metric), (long long)patience, plural(patience),
          (long long)rep->best_epoch, rep->best_val);
}

/* The `predictions` hook. */
static void report_predictions(void *ctx, const halo_train_report *rep, const char *path,
                               int64_t epoch) {
  (void)rep;
  fprintf(text_out(ctx), "predictions: %s (epoch %lld's parameters)\n", path, (long long)epoch);
}

/* The `embeddings` hook. */
static void report_embeddings(void *ctx, const halo_train_report *rep, const char *path, int layer,
                              int64_t epoch) {
  (void)rep;
  fprintf(text_out(ctx), "embeddings: %s (the input of layer %d, epoch %lld's parameters)\n", path,
          layer, (long long)epoch);
}

/* Rank 0's "memory:" line, after the summary. */
static void print_memory(FILE *out, const halo_train_report *rep,
                         const halo_train_memory_report *m) {
  char used[32], predicted[32], where[64];
  if (m->device >= 0)
    halo_train_memory_pool_name(rep->be, m->device, where, sizeof where);
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

/* The `summary` hook: the summary line, the "memory:" line and the summary
 * JSON line. */
static void report_summary(void *ctx, const halo_train_report *rep,
                           const halo_train_memory_report *mem) {
  train_report *t = ctx;
  FILE *out = text_out(t);
  const double mean = halo_train_mean_epoch_s(rep);
  const int64_t epochs = rep->prior.epochs + rep->trained;
  /* The hash of the final parameters, as in the JSON summary: two runs
   * that print the same one trained the same model bit for bit. */
  const char *sha_text = rep->params_sha256;
  if (epochs == 0) {
    fprintf(out,
            "summary: no epoch trained, so no accuracy was measured; halo 0.000 MB in all, set-up "
            "%.4f MB%s%s\n",
            rep->setup_bytes / 1e6, sha_text[0] ? ", params_sha256 " : "", sha_text);
  } else {
    char mean_text[32] = "n/a", runs[64] = "", metric_text[16] = ""; /* n/a: all warm-up */
    char eval_text[32] = "n/a";
    if (rep->metric != HALO_TRAIN_METRIC_ACC)
      snprintf(metric_text, sizeof metric_text, " %s", halo_train_metric_name(rep->metric));
    if (rep->timed > 0) snprintf(mean_text, sizeof mean_text, "%.3f ms", 1e3 * mean);
    if (rep->evaluations > 0)
      snprintf(eval_text, sizeof eval_text, "%.3f ms", 1e3 * rep->eval_sum / rep->evaluations);
    if (rep->prior.epochs > 0)
      snprintf(runs, sizeof runs, " (%lld in this run)", (long long)rep->trained);
    fprintf(
        out,
        "summary: %lld epoch%s%s, best val%s %.4f (test %.4f), final test %.4f, mean epoch %s "
        "(%lld warm-up epoch%s excluded), mean evaluation %s (%lld), wall %.2f s, halo %.3f MB "
        "in all (%s prediction), set-up %.4f MB%s%s\n",
        (long long)epochs, plural(epochs), runs, metric_text,
        rep->best_val < 0 ? 0.0 : rep->best_val, rep->test_at_best, rep->final_test, mean_text,
        (long long)(rep->trained - rep->timed), plural(rep->trained - rep->timed), eval_text,
        (long long)rep->evaluations, rep->wall_s,
        rep->total_halo / 1e6, rep->mismatches ? "DIFFERS FROM the" : "equal to the",
        rep->setup_bytes / 1e6, sha_text[0] ? ", params_sha256 " : "", sha_text);
  }
  if (rep->stopped_by)
    fprintf(out, "stopped: %s after epoch %lld\n", rep->stopped_by,
            (long long)(rep->first_epoch + rep->trained - 1));
  print_memory(out, rep, mem);
  if (t->metrics) halo_train_summary_json(rep, mem, &t->json);
  fflush(out);
}

const halo_train_report_ops train_report_ops = {
    .open = report_open,
    .header = report_header,
    .resumed = report_resumed,
    .epoch = report_epoch,
    .evaluation = report_evaluation,
    .early_stop = report_early_stop,
    .predictions = report_predictions,
    .embeddings = report_embeddings,
    .summary = report_summary,
    .sync = report_sync,
};
