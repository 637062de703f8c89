/* halo-train's report (private to programs/): what rank 0 prints and
 * writes.  The header lines before training, one line per epoch (unless
 * --quiet), the --metrics JSON lines (one object per epoch, then a summary
 * object), and the summary and "memory:" lines.  docs/train.md ("Output")
 * shows each and lists the JSON keys.
 *
 * Per-epoch figures are reduced over the ranks to min, mean (or sum) and
 * max; warm-up epochs stay out of the mean epoch time.  Every rank keeps the
 * run's totals, so that all of them know whether the halo bytes ever
 * differed from the prediction; only rank 0 prints.
 */
#ifndef HALO_TRAIN_REPORT_H
#define HALO_TRAIN_REPORT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "halo-backend.h"
#include "halo-json.h"
#include "halo-net.h"
#include "halo-shard.h"
#include "halo-status.h"
#include "train-memory.h"
#include "train-metrics.h"

/* Per-epoch figures of one rank, reduced over the ranks. */
enum {
  TRAIN_STEP_S,      /* seconds of the training step */
  TRAIN_COMM_S,      /* seconds of it spent waiting for halo rows */
  TRAIN_HALO_B,      /* halo bytes sent by the step */
  TRAIN_ALLREDUCE_B, /* gradient allreduce bytes */
  TRAIN_EVAL_S,      /* seconds of the evaluation */
  TRAIN_EVAL_HALO_B, /* halo bytes sent by the evaluation */
  TRAIN_FIGURES
};

typedef struct train_epoch {
  double loss;         /* mean over the train nodes */
  double acc[3];       /* train, valid, test */
  double eval_loss[3]; /* their mean losses without dropout; NaN for an empty split */
  double metric[2];    /* --metric f1|auc: of the valid and test nodes (unused for acc) */
  double layer_bytes[HALO_MAX_LAYERS][2]; /* Σ over ranks: each layer's forward and backward */
  double sum[TRAIN_FIGURES], min[TRAIN_FIGURES], max[TRAIN_FIGURES];
} train_epoch;

typedef struct train_report {
  /* The run, set by the driver before train_report_header (borrowed). */
  MPI_Comm comm;
  int rank, ranks, threads;
  int quiet; /* --quiet: no per-epoch lines */
  const halo_manifest *manifest;
  const halo_net_info *info;
  const halo_net_options *gcn;
  const halo_backend *be;
  int64_t halo_rows;       /* Σ over parts */
  int64_t predicted_epoch; /* halo bytes per epoch, Σ over ranks */
  int64_t setup_bytes;     /* halo bytes of the set-up, Σ over ranks */
  /* --metrics, on rank 0: the stream (owned: train_report_metrics_close)
   * and the writer on it. */
  FILE *metrics;
  halo_json json;
  /* Where rank 0 prints the header, epoch and summary lines: stdout, or
   * stderr when the metrics go to stdout (NULL: stdout). Borrowed. */
  FILE *text;
  /* The run's totals, on every rank (train_report_begin, _epoch). */
  int64_t first_epoch; /* the first epoch this run trains */
  int64_t trained;     /* epochs this run trains */
  int64_t warmup;      /* of them, left out of the mean epoch time */
  int64_t timed, total_halo, mismatches;
  double best_val, test_at_best, final_test, time_sum;
  int64_t best_epoch; /* the epoch of best_val (the first of equals); 0 before any */
  /* --metric: the figure that best_val, test_at_best and final_test are of
   * (accuracy, macro-F1 or ROC-AUC), and so the early stopping's. */
  train_metric metric;
  double final_acc; /* the last epoch's test accuracy, whatever the metric */
  /* SHA-256 of the final parameters (train_report_digest), "" until then. */
  char params_sha256[65];
  const char *stopped_by; /* the signal that ended the run early ("SIGTERM"), or NULL */
  const char *metrics_path;
  int metrics_failed; /* a metrics line could not be written */
  /* A resumed run's earlier epochs, kept in the metrics file: the summary
   * adds them to this run's. */
  struct {
    int64_t epochs, halo, mismatches, best_epoch;
    double best_val, test_at_best, final_test, final_acc;
  } prior;
} train_report;

/* --metrics must not overwrite the run's data: a regular FILE that exists
 * and is HDF5 (a part, the manifest, a checkpoint) is refused, with one line
 * naming the flag, and so is any other file that is not empty and not a
 * halo metrics file, unless `force` (--force).  Metrics next to the shards
 * are fine, and so is /dev/stdout or a pipe, which are not read.  NULL
 * passes. Local. */
halo_status train_report_metrics_check(const char *path, int force);

/* Opens `path` for the JSON lines (rank 0 only calls it), or fails with
 * HALO_ERR_IO and one line naming --metrics.  A run resumed after epoch
 * `resumed` (> 0) keeps the file's lines of epochs 1..resumed, drops the
 * rest (an earlier run's summary, epochs trained past its checkpoint),
 * rewriting it through a temporary name, and appends; the summary then
 * covers the whole run.  `resumed` < 0 appends to an existing file as it
 * is (--eval-only). Local. */
halo_status train_report_metrics_open(train_report *rep, const char *path, int64_t resumed);

/* Makes the metrics written so far durable (fsync), as each checkpoint is;
 * a no-op for standard output or a pipe. Local. */
void train_report_metrics_sync(train_report *rep);

/* 1 when a metrics line could not be written (the error was reported, with
 * the epoch and errno's words, when it happened). Local. */
int train_report_metrics_failed(const train_report *rep);

/* Closes the metrics stream, if open; HALO_ERR_IO and one line naming
 * --metrics `path` when the writes failed. Local. */
halo_status train_report_metrics_close(train_report *rep, const char *path);

/* Rank 0: the header lines (graph, parts, model, predicted volume). Local. */
void train_report_header(const train_report *rep);

/* Rank 0: the line of a run resumed from checkpoint `path` of `epoch` (Adam
 * step `adam_step`), training on to `last_epoch`. Local. */
void train_report_resumed(const train_report *rep, const char *path, int64_t epoch,
                          int64_t adam_step, int64_t last_epoch);

/* Starts the totals for epochs first_epoch..last_epoch, `warmup` of them
 * left out of the mean (fewer on a short resumed run). Local. */
void train_report_begin(train_report *rep, int64_t first_epoch, int64_t last_epoch, int64_t warmup);

/* Reduces one epoch's figures of every rank (two small allreduces, through
 * the watchdog) into *out. Collective over rep->comm. */
halo_status train_report_reduce(const train_report *rep, const halo_net_stats *step,
                                const halo_net_stats *eval, train_epoch *out);

/* Where rank 0's human-readable lines go: stdout, or stderr when the
 * metrics go to stdout. Local. */
FILE *train_report_text(const train_report *rep);

/* --eval-only: rank 0 prints the evaluation of checkpoint `path` (of epoch
 * `epoch`) and writes it as the metrics file's one line. Local. */
void train_report_evaluation(train_report *rep, int64_t epoch, const char *path,
                             const train_epoch *e);

/* The run stops after `epoch` (a signal named `why` asked it to): the
 * summary covers the epochs trained so far and says why. Local. */
void train_report_stop(train_report *rep, int64_t epoch, const char *why);

/* Adds epoch `epoch` to the totals; on rank 0 prints its line and writes its
 * JSON line. Local. */
void train_report_epoch(train_report *rep, int64_t epoch, const train_epoch *e);

/* The SHA-256 of the model's parameters as float32 bytes, little-endian, in
 * the order of halo_net_params_get, into rep->params_sha256: two runs
 * trained alike have equal digests.  Fails only on a failed copy or
 * allocation. Local. */
halo_status train_report_digest(train_report *rep, const halo_net *model);

/* The same digest of `nparams` parameters in host memory into hex (65
 * bytes). Local. */
void train_params_sha256(const float *params, int64_t nparams, char *hex);

/* Rank 0: the summary line, the "memory:" line and the summary JSON line;
 * `mem` is the tightest pool's (train_memory_gather). Local. */

void train_report_summary(train_report *rep, const train_memory_report *mem);

#endif /* HALO_TRAIN_REPORT_H */
