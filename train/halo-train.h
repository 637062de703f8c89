/* halo_train: the training driver, the library under halo-train.  It runs
 * one training (or one --eval-only evaluation) over the shards of one
 * partition run, one MPI rank per part, from the parsed flags; the program
 * above it parses the flags, reads the environment, and prints the report
 * through the hooks of halo_train_report_ops.
 *
 * Phases (each ends in a collective agreement on status, so that one rank's
 * failure stops every rank instead of leaving them in a collective):
 *   backend -> load (manifest + own part) -> resume (checkpoint) -> memory
 *   check -> plan/model -> train (checkpoints saved on the way).
 * The library never calls MPI_Abort: when the agreement itself fails, the
 * watchdog (--timeout) gave up on a peer, or the epoch loop failed on this
 * rank, halo_train_run says so (halo_train_result.abort) and the program
 * ends the job.  docs/train.md describes the flags and the output.
 */
#ifndef HALO_TRAIN_H
#define HALO_TRAIN_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-json.h"
#include "halo-net.h"
#include "halo-shard.h"
#include "halo-status.h"

/* The command line of halo-train (programs/halo-train-args.c parses it). */
typedef struct halo_train_args {
  const char *dir; /* shard folder (borrowed from argv) */
  char model[8];   /* "gcn" */
  halo_net_options gcn;
  int64_t epochs;
  int64_t lr_epochs;        /* --lr-epochs: the epochs a cosine schedule spans; 0: --epochs */
  int64_t warmup;           /* epochs left out of mean_epoch_s */
  char device[16];          /* "cpu" or "cuda" */
  int tf32;                 /* cuda: TF32 GEMM */
  int threads;              /* 0: the node's cores divided among its ranks */
  const char *metrics;      /* JSON-lines file, or NULL */
  const char *checkpoint;   /* checkpoint folder, or NULL (borrowed from argv) */
  int64_t checkpoint_every; /* save after every N epochs (and after the last) */
  int keep;                 /* checkpoints kept */
  int resume;               /* start from the newest valid checkpoint */
  int resume_auto;          /* --resume auto: resume only when DIR holds a checkpoint */
  const char *predict;      /* --predict FILE.h5, or NULL (borrowed from argv) */
  const char *embeddings;   /* --embeddings FILE.h5, or NULL (borrowed from argv) */
  int embeddings_layer;     /* --embeddings-layer L: the input of layer L (1-based); 0: the last */
  int64_t early_stop;       /* stop after N epochs without a better val accuracy; 0: off */
  int eval_only;            /* --eval-only: evaluate the resumed parameters, train nothing */
  int eval_file;            /* --eval-only without --resume: --checkpoint names a checkpoint
                               file, whose model runs on any graph of its widths */
  unsigned char model_given[HALO_MOPT_COUNT]; /* the model options given on the command line */
  int force;                /* --force: --metrics and --predict may overwrite a file */
  int64_t eval_every;       /* evaluate after every N epochs and after the last (1) */
  int allow_nonfinite;      /* --allow-nonfinite: train on past a NaN or infinite loss */
  int metric;               /* --metric: a halo_train_metric (train/halo-train.h) */
  int metric_given;         /* 1 when --metric was given (a multi-label run defaults to auc) */
  double timeout;           /* watchdog seconds; 0: off */
  int profile;              /* --profile: the per-op table after the summary */
  int quiet;
  int help;
  int version; /* --version: print it and stop */
} halo_train_args;

/* The settings of the environment that the run needs (the program reads
 * the variables: no library reads the environment). */
typedef struct halo_train_env {
  int cuda_spmm_rows; /* HALO_CUDA_SPMM: 1 for rows, 0 for cusparse or unset */
  int cuda_aware;     /* HALO_CUDA_AWARE: 0 or 1; -1: unset (ask MPI) */
  int stall;          /* HALO_FAULT_STALL set: rank stall_rank stalls at stall_epoch */
  int stall_rank;
  int64_t stall_epoch;
  const char *wait;   /* OpenMP's wait policy in words, for the header ("passive wait"); or NULL */
} halo_train_env;

/* --metric: the figure early stopping and the summary's best epoch use. */
typedef enum {
  HALO_TRAIN_METRIC_ACC,
  HALO_TRAIN_METRIC_F1,
  HALO_TRAIN_METRIC_AUC
} halo_train_metric;

/* "acc", "f1", "auc". Local. */
const char *halo_train_metric_name(halo_train_metric m);

/* The per-epoch key of metric `m`: "val_acc" (k = 0) or "test_acc" (k = 1),
 * or val_f1, test_auc, ...; a static string per k. Local. */
const char *halo_train_metric_key(halo_train_metric m, int k);

/* Per-epoch figures of one rank, reduced over the ranks. */
enum {
  HALO_TRAIN_STEP_S,      /* seconds of the training step */
  HALO_TRAIN_COMM_S,      /* seconds of it spent waiting for halo rows */
  HALO_TRAIN_HALO_B,      /* halo bytes sent by the step */
  HALO_TRAIN_ALLREDUCE_B, /* gradient allreduce bytes */
  HALO_TRAIN_EVAL_S,      /* seconds of the evaluation */
  HALO_TRAIN_EVAL_HALO_B, /* halo bytes sent by the evaluation */
  HALO_TRAIN_COMPUTE_CPU, /* CPU seconds of the step outside its MPI waits: the rank's work */
  HALO_TRAIN_ALLREDUCE_S, /* seconds of COMM_S in the gradient allreduce */
  HALO_TRAIN_FIGURES
};

typedef struct halo_train_epoch {
  int evaluated;       /* 0: --eval-every skipped the evaluation, and acc .. metric are unset */
  double wall_s;       /* seconds since the first epoch of this run began (rank 0's clock) */
  double lr;           /* the learning rate of the epoch's update (its schedule's) */
  double grad_norm;    /* --clip-grad-norm: the gradients' L2 norm before clipping */
  double loss;         /* mean over the train nodes */
  double acc[3];       /* train, valid, test */
  double eval_loss[3]; /* their mean losses without dropout; NaN for an empty split */
  double metric[2];    /* --metric f1|auc: of the valid and test nodes (unused for acc) */
  double layer_bytes[HALO_MAX_LAYERS][2]; /* Σ over ranks: each layer's forward and backward */
  double sum[HALO_TRAIN_FIGURES], min[HALO_TRAIN_FIGURES], max[HALO_TRAIN_FIGURES];
} halo_train_epoch;

/* The pool of memory whose prediction is tightest (the least predicted per
 * byte used), for the "memory:" line and the summary's JSON. */
typedef struct halo_train_memory_report {
  int64_t used;      /* -1: a rank could not tell */
  int64_t predicted; /* the same pool's prediction */
  int device;        /* the pool's GPU, or -1: a node's RAM */
  int ranks;         /* ranks in that pool */
} halo_train_memory_report;

/* "cuda device 0000:1b:00": a GPU named by its PCI location, from the pool
 * id halo_backend_mem_available gives it (domain << 13 | bus << 5 |
 * device). Local. */
void halo_train_memory_pool_name(const halo_backend *be, int pool_id, char *out, size_t size);

/* The run as the report sees it: what was set up, and the totals over the
 * epochs.  Per-epoch figures are reduced over the ranks to min, mean (or
 * sum) and max; warm-up epochs stay out of the mean epoch time.  Every rank
 * keeps the run's totals, so that all of them know whether the halo bytes
 * ever differed from the prediction; only rank 0 prints. */
typedef struct halo_train_report {
  /* The run, set by halo_train_run before the header (borrowed). */
  MPI_Comm comm;
  int rank, ranks, threads;
  const char *wait; /* OpenMP's wait policy ("passive wait"), or NULL */
  int busy_cores;   /* default threads: rank 0's cores busy at start (0: none, or --threads) */
  int cores;        /* with busy_cores: the cores of rank 0's affinity mask */
  int quiet;        /* --quiet: no per-epoch lines */
  const halo_manifest *manifest;
  const halo_net_info *info;
  const halo_net_options *gcn;
  const halo_backend *be;
  int64_t halo_rows;       /* Σ over parts */
  int64_t exchanged_rows;  /* rows one training exchange moves, Σ over parts: halo_rows, or
                              with --halo-aggregate auto the cuts' covers (≤ halo_rows) */
  int64_t predicted_epoch; /* halo bytes of this epoch, Σ over ranks */
  int64_t kept_rows;       /* the rows each exchange of this epoch moves, Σ over parts: halo_rows,
                              or with --halo-sample the epoch's keyed draw of them */
  int64_t setup_bytes;     /* halo bytes of the set-up, Σ over ranks */
  /* The run's totals, on every rank (halo_train_run keeps them). */
  int64_t first_epoch; /* the first epoch this run trains */
  int64_t trained;     /* epochs this run trains */
  int64_t warmup;      /* of them, left out of the mean epoch time */
  int64_t timed, total_halo, mismatches;
  double best_val, test_at_best, final_test, time_sum;
  int64_t eval_every;   /* --eval-every */
  int64_t evaluations;  /* of this run's epochs, those evaluated */
  double eval_sum;      /* their evaluation seconds (the slowest rank's), summed */
  double wall_s;        /* seconds from the first epoch's start to the last one's end */
  int64_t best_epoch; /* the epoch of best_val (the first of equals); 0 before any */
  /* --metric: the figure that best_val, test_at_best and final_test are of
   * (accuracy, macro-F1 or ROC-AUC), and so the early stopping's. */
  halo_train_metric metric;
  double final_acc; /* the last epoch's test accuracy, whatever the metric */
  /* SHA-256 of the final parameters, "" until then. */
  char params_sha256[65];
  const char *stopped_by; /* the signal that ended the run early ("SIGTERM"), or NULL */
  /* A resumed run's earlier epochs, kept in the metrics file (the `open`
   * hook reads them): the summary adds them to this run's. */
  struct {
    int64_t epochs, halo, mismatches, best_epoch;
    double best_val, test_at_best, final_test, final_acc;
  } prior;
} halo_train_report;

/* The program's report: what rank 0 prints and writes, called on rank 0
 * alone (each hook is Local) at these points of the run, with the
 * program's `ctx`.  Every hook must be set. */
typedef struct halo_train_report_ops {
  /* Before the header: opens the --metrics file, for a run resumed after
   * epoch `resumed` (> 0), or appending (< 0, --eval-only), or fresh (0),
   * and notes a resumed file's earlier epochs in rep->prior.  Its status is
   * agreed on. */
  halo_status (*open)(void *ctx, halo_train_report *rep, int64_t resumed);
  /* The header lines (graph, parts, model, predicted volume). */
  void (*header)(void *ctx, const halo_train_report *rep);
  /* The line of a run resumed from checkpoint `path` of `epoch` (Adam step
   * `adam_step`), training on to `last_epoch`. */
  void (*resumed)(void *ctx, const halo_train_report *rep, const char *path, int64_t epoch,
                  int64_t adam_step, int64_t last_epoch);
  /* Epoch `epoch`'s line and metrics line, after its totals were added.
   * Returns 1 when a metrics line could not be written (this time or
   * before; the hook reported it), which stops the run. */
  int (*epoch)(void *ctx, const halo_train_report *rep, int64_t epoch, const halo_train_epoch *e);
  /* --eval-only: the evaluation of checkpoint `path` (of epoch `epoch`). */
  void (*evaluation)(void *ctx, const halo_train_report *rep, int64_t epoch, const char *path,
                     const halo_train_epoch *e);
  /* --early-stop stopped the run: no better validation figure in
   * `patience` evaluations after rep->best_epoch. */
  void (*early_stop)(void *ctx, const halo_train_report *rep, int64_t patience);
  /* --predict `path` was written from epoch `epoch`'s parameters. */
  void (*predictions)(void *ctx, const halo_train_report *rep, const char *path, int64_t epoch);
  /* --embeddings `path` was written: the input of layer `layer` (from 1),
   * with epoch `epoch`'s parameters. */
  void (*embeddings)(void *ctx, const halo_train_report *rep, const char *path, int layer,
                     int64_t epoch);
  /* The summary lines; `mem` is the tightest pool's. */
  void (*summary)(void *ctx, const halo_train_report *rep, const halo_train_memory_report *mem);
  /* A checkpoint was saved: make the metrics written so far as durable. */
  void (*sync)(void *ctx);
} halo_train_report_ops;

/* How training epoch `epoch` exchanged its halo rows: "stale" (--halo-stale,
 * after the run's first epoch: the previous epoch's rows), else "fresh".
 * Local. */
const char *halo_train_exchange_mode(const halo_train_report *rep, int64_t epoch);

/* The JSON objects of the --metrics lines (docs/train.md lists the keys),
 * onto `j`: one epoch's, the --eval-only evaluation's, and the summary's
 * (with the tightest pool `mem`). Local. */
void halo_train_epoch_json(const halo_train_report *rep, int64_t epoch, const halo_train_epoch *e,
                           halo_json *j);
void halo_train_evaluation_json(const halo_train_report *rep, int64_t epoch, const char *path,
                                const halo_train_epoch *e, halo_json *j);
void halo_train_summary_json(const halo_train_report *rep, const halo_train_memory_report *mem,
                             halo_json *j);

/* The mean epoch time of the timed epochs; 0 when none was. Local. */
double halo_train_mean_epoch_s(const halo_train_report *rep);

/* Whether epoch `epoch` of a run of `last` epochs is evaluated under
 * --eval-every `every`: each multiple of it, and the last. Local. */
int halo_train_evaluates(int64_t epoch, int64_t last, int64_t every);

/* Checks, before anything is loaded, the outputs that `a` names: --predict
 * (its folder takes a file; an existing file only with --force) and
 * --checkpoint (the folder, or its parent, takes a file; without --resume
 * it holds no checkpoint yet).  --metrics is the program's (its report
 * writes it).  One error line naming the flag.  Local: rank 0 checks, and
 * halo_train_run agrees on it over the ranks. */
halo_status halo_train_check_outputs(const halo_train_args *a);

/* train-cores.c: the default thread count on a busy node.  With
 * --threads unset, a rank runs one thread per core it may use (divided
 * among the node's ranks); a core that another process keeps busy halves
 * the speed of the thread on it, and every OpenMP region and GEMM then
 * waits for that thread (with a CPU hog on one of 2 cores: Cora at 1.9 ms
 * an epoch with two passive threads against 1.2 with one; an sbm graph
 * with hidden 256 at 311-612 ms against 222-361; docs/benchmarks.md,
 * "A busy node").  So the default leaves out the cores that were busy at
 * start-up: more than half of their time went to other processes over a
 * short sample of /proc/stat. */

/* The cores among this process's affinity mask that were busy more than
 * half of `sample_ms` milliseconds (sleeping meanwhile); 0 when /proc/stat
 * cannot be read. Local. */
int halo_train_busy_cores(int sample_ms);

/* The count itself, for the unit test: among cpus[0..ncpus), those whose
 * busy jiffies (all but idle and iowait) grew by more than half their
 * total between the /proc/stat texts `before` and `after` (each with a
 * newline before its first line).  A cpu without a line in both counts as
 * idle. Local. */
int halo_train_busy_count(const char *before, const char *after, const int *cpus, int ncpus);

/* The exit status of a run that a NaN or infinite loss stopped (the others:
 * 0, 1 for an error, 128 + a signal; docs/reliability.md, "Exit codes"). */
#define HALO_TRAIN_EXIT_NONFINITE 3

/* How halo_train_run ended, beyond its status. */
typedef struct halo_train_result {
  /* 1: the agreement itself failed, the watchdog gave up on a peer, or the
   * epoch loop failed on this rank.  A peer may be stuck in a collective or
   * an exchange, so only the runtime can end it: the caller must call
   * MPI_Abort.  Nothing was freed: receives may still be posted into the
   * model's buffers, and a late message must not land in freed memory. */
  int abort;
  int stopped_by; /* the signal that stopped the epoch loop early, or 0 */
  int nonfinite;  /* the loss turned NaN or infinite: exit HALO_TRAIN_EXIT_NONFINITE */
} halo_train_result;

/* Catches SIGTERM and SIGUSR1 from now on: a caught signal stops every rank
 * at the next epoch boundary, after a checkpoint when --checkpoint is set
 * (halo_train_result.stopped_by; the program exits with 128 + it).  A
 * second SIGTERM before that ends the process at once.  docs/train.md
 * ("Preemption"). Local. */
void halo_train_signals_install(void);

/* Ranks started with other arguments (mpirun's "A : B" form) would train
 * different models and wait for each other forever: the lowest rank whose
 * arguments (argv after the program name) differ from rank 0's is named,
 * and every rank returns HALO_ERR_ARG. Collective over `comm`. */
halo_status halo_train_check_same_args(MPI_Comm comm, int argc, char **argv);

/* Runs the training `args` describe (parsed alike on every rank; copied),
 * on the environment's settings `env`, printing through
 * `ops` with `ctx` on rank 0, and returns the agreed status.  On return,
 * unless out->abort, everything it allocated is freed (collective).
 * Collective over `comm`. */
halo_status halo_train_run(MPI_Comm comm, const halo_train_args *args, const halo_train_env *env,
                           const halo_train_report_ops *ops, void *ctx, halo_train_result *out);

#endif /* HALO_TRAIN_H */
