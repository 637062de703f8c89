/* The private pieces of halo_train (train/): the run's state, shared by the
 * set-up (train-run.c) and the epoch loop (train-loop.c), and the parts
 * each of them calls.  Not installed, not included outside train/.
 */
#ifndef HALO_TRAIN_IMPL_H
#define HALO_TRAIN_IMPL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-checkpoint.h"
#include "halo-net.h"
#include "halo-schedule.h"
#include "halo-shard.h"
#include "halo-status.h"
#include "halo-train.h"

/* ---------------------------------------------------------------- */
/* train-memory.c: halo-train's memory admission: the check before
 * the model allocates, the measurement of what it took, and the pools of
 * memory that ranks share.
 *
 * A pool is the memory a set of ranks allocates from: its node's RAM, or,
 * with --device cuda, one GPU's memory (ranks on the same PCI location).
 * Predictions and uses are summed over a pool, never over the job, since
 * only the ranks of one pool compete for its bytes.  docs/train.md
 * ("Failures") describes the check and the "memory:" line it leads to.
 */

typedef struct train_memory {
  MPI_Comm pool;     /* the ranks sharing this rank's memory (MPI_COMM_NULL before the check) */
  int device;        /* 1: the pool is a GPU's memory, named by pool_id */
  int pool_id;       /* halo_backend_mem_available's id of that memory */
  int64_t predicted; /* Σ over the pool: what the model takes, predicted */
  int64_t base;      /* at the check: the device's free bytes, or this process's resident bytes */
  int64_t used;      /* what the model took, the most measured; -1 when unknown */
} train_memory;

/* Refuses, before the model allocates, a part whose model does not fit in
 * what its memory has left: the node's RAM, or with a GPU backend its
 * GPU's memory and, for the host copies besides, the node's RAM.  The ranks
 * that share a memory have their needs summed (halo_net_memory_estimate of
 * shard `s` under options `o`).  The lowest rank that does not fit says so;
 * every rank then returns HALO_ERR_NOMEM.  Fills *m: the pool and the
 * baseline that train_memory_measure compares with.  Collective over
 * `comm`. */
halo_status train_memory_check(train_memory *m, MPI_Comm comm, halo_backend *be,
                               const halo_shard *s, const halo_net_options *o);

/* What the model took of its pool's memory so far, into m->used (the most
 * seen): on a GPU, the free bytes gone since the check, read when every
 * rank of the pool has reached this point; on the host, the pool's ranks'
 * peaks of resident bytes above their baselines, summed.  -1 when a rank
 * cannot tell.  Through the watchdog.  Collective over the pool. */
halo_status train_memory_measure(train_memory *m, halo_backend *be);

/* The tightest pool's figures (halo_train_memory_report), on every rank.  Collective over `comm`.
 */
halo_status train_memory_gather(const train_memory *m, MPI_Comm comm,
                                halo_train_memory_report *out);

/* Frees the pool's communicator; accepts a train_memory never checked.
 * Collective over the pool. */
void train_memory_free(train_memory *m);

/* ---------------------------------------------------------------- */
/* train-predict.c: halo-train --predict FILE.h5: every node's logits,
 * predicted class and split, in one HDF5 file that h5py and h5dump read.
 *
 * The file holds, for N nodes in rows grouped by part (part 0's owned rows
 * first, each part in its shard's row order; /global_id names the node of
 * each row, so `np.argsort(f["global_id"])` puts them in node order):
 *   /global_id  int64 [N]
 *   /logits     float32 [N, classes]: the last layer's output, before softmax
 *   /pred       int32 [N]: the argmax of the row (the lowest column on ties);
 *               multi-label: int8 [N, tasks], 1 where the task's logit > 0
 *   /label      int32 [N]: the node's label, -1 when it has none;
 *               multi-label: int8 [N, tasks], 1, 0 or -1 (missing)
 *   /split      int8 [N]: 0 train, 1 valid, 2 test, -1 none
 *   /original_id int64 [N]: the node's id in the input file, only when the
 *               loader renumbered it (a SNAP edge list's ids)
 * and the root attributes epoch (the parameters' epoch), classes, nodes,
 * multilabel (1, only in a multi-label run), model and params_sha256 (of those parameters).  Each
 * dataset is chunked and Fletcher-32 checksummed, as the shards are.
 *
 * Every rank computes its own rows; rank 0 gathers them part by part (never
 * more than one block of a peer's rows, 2^22 logits with their ids, labels
 * and splits, at a time besides its own) and writes
 * FILE.h5.tmp, flushes it and renames it, so the file appears only whole.
 * docs/train.md ("Predictions") describes it for users.
 */

/* What the file needs of a part beyond the model, copied from the shard
 * before halo-train frees it. */
typedef struct train_predict {
  int64_t n_owned;
  int64_t *global_id;   /* owned rows' global ids */
  int32_t *label;       /* -1: none */
  int32_t tasks;        /* multi-label: tasks a node; 0 when single-label */
  int8_t *targets;      /* multi-label: n_owned × tasks, 1, 0 or -1 (missing) */
  int8_t *split;        /* 0 train, 1 valid, 2 test, -1 none */
  int64_t *original_id; /* the input's ids (SNAP's); NULL when it kept 0..n-1 */
} train_predict;

/* Copies the shard's owned ids, labels and splits. Local. */
halo_status train_predict_init(train_predict *p, const halo_shard *s);

/* Frees the copies; accepts a zeroed struct. Local. */
void train_predict_free(train_predict *p);

/* Writes PATH as above from `model`'s last forward pass, which the caller
 * ran with the parameters of epoch `epoch` (halo_net_evaluate); `model_name` and `params_sha256`
 * become attributes; an existing PATH is replaced only with `replace`
 * (--force).  Every rank returns the same status. Collective. */
halo_status train_predict_write(const train_predict *p, halo_net *model, MPI_Comm comm,
                                const char *path, int64_t epoch, const char *model_name,
                                const char *params_sha256, int replace);

/* --embeddings PATH: the input of layer `layer` (1-based, 2 <= layer <=
 * layers: the output of layer layer-1 after its LayerNorm and activation)
 * of `model`'s last forward pass, one row of its width a node, as
 * /embeddings (float32 [N, width]) beside /global_id (and /original_id),
 * gathered and written as the predictions are; root attributes epoch,
 * width, layer, nodes, model, params_sha256.  Collective. */
halo_status train_embeddings_write(const train_predict *p, halo_net *model, MPI_Comm comm,
                                   const char *path, int layer, int64_t epoch,
                                   const char *model_name, const char *params_sha256, int replace);

/* ---------------------------------------------------------------- */
/* train-metrics.c: halo-train --metric f1|auc: the figures users
 * compare with papers besides accuracy, on the valid and test nodes of
 * every rank, from the logits of the evaluation pass.
 *
 *   f1   macro-F1: the mean over classes of 2·TP / (2·TP + FP + FN), over
 *        the classes that occur among the split's labels or predictions
 *        (scikit-learn's f1_score(average="macro")).  Per-class counts are
 *        integers summed over the ranks, so the figure does not depend on P.
 *   auc  ROC-AUC of a binary task (2 classes): the probability that a
 *        positive node scores above a negative one, ties counting half
 *        (scikit-learn's roc_auc_score), with score z_1 - z_0 (the
 *        log-odds of class 1).  Rank 0 gathers the split's scores and
 *        labels (5 bytes a node), sorts them and broadcasts the figure.
 *        A split without both classes has no AUC: NaN (null in JSON).
 *
 * In a multi-label run (ogbn-proteins' kind) each task is a binary problem:
 *   f1   the mean over tasks of the positive class's F1 (logit > 0
 *        predicts 1; scikit-learn's f1_score(average="macro") on the
 *        indicator matrix), over tasks with a positive label or prediction;
 *   auc  the mean over tasks of each task's ROC-AUC, over the tasks with
 *        both classes among the split's labelled entries (OGB's evaluator
 *        for ogbn-proteins); task t is scored on rank t % P.
 *   Missing entries (-1) count in neither.
 *
 * The per-node labels and splits come from train_predict (train-predict.h),
 * which holds them for --predict too.
 */

/* The figure `m` (f1 or auc) of the valid (out[0]) and test (out[1]) nodes
 * of every rank, from `model`'s last forward pass: the same on every rank.
 * Collective. */
halo_status train_metric_eval(halo_train_metric m, const train_predict *rows, const halo_net *model,
                              MPI_Comm comm, double out[2]);

/* The figures on host arrays of one "rank": for the unit test, which
 * checks them against a direct computation. Local. */
double train_macro_f1(const int64_t *counts, int classes);
double train_roc_auc(const float *score, const int8_t *positive, int64_t n);

/* ---------------------------------------------------------------- */
/* train-signals.c: halo-train's preemption signals: SIGTERM, which
 * SLURM and Kubernetes send before they kill a job, and SIGUSR1, which
 * `sbatch --signal=USR1@T` sends and mpirun forwards to every rank.
 *
 * A caught signal does not stop the rank where it is: the epoch loop asks,
 * after each epoch, whether any rank caught one (one small allreduce), and
 * then every rank stops at that same epoch boundary, saves a checkpoint
 * when --checkpoint is set, closes the metrics file and exits with
 * 128 + the signal's number (143 for SIGTERM, 138 for SIGUSR1).  A second
 * SIGTERM before that ends the process at once, as the default action
 * would (SIGINT keeps its default).  docs/train.md ("Preemption")
 * describes it for users.  halo_train_signals_install (halo-train.h)
 * catches them.
 */

/* *signo = the largest signal number any rank has caught, 0 when none,
 * and *failed = 1 when any rank passed `failed` (a metrics write that
 * failed on rank 0), in the same allreduce. Collective (one MPI_Allreduce
 * through the watchdog). */
halo_status train_signals_agree(MPI_Comm comm, int failed, int *signo, int *any_failed);

/* "SIGTERM" or "SIGUSR1" (or "signal N"); a static string. Local. */
const char *train_signal_name(int signo);

/* ---------------------------------------------------------------- */
/* train-totals.c: the run's totals in halo_train_report, kept alike on
 * every rank, and the digest of the parameters. */

/* Starts the totals for epochs first_epoch..last_epoch, `warmup` of them
 * left out of the mean (fewer on a short resumed run), from rep->prior.
 * Local. */
void train_totals_begin(halo_train_report *rep, int64_t first_epoch, int64_t last_epoch,
                        int64_t warmup);

/* Reduces one epoch's figures of every rank (two small allreduces, through
 * the watchdog) into *out. Collective over rep->comm. */
halo_status train_totals_reduce(const halo_train_report *rep, const halo_net_stats *step,
                                const halo_net_stats *eval, halo_train_epoch *out);

/* Adds epoch `epoch` to the totals: its halo bytes against the prediction,
 * its time after the warm-up, and the best validation figure. Local. */
void train_totals_epoch(halo_train_report *rep, int64_t epoch, const halo_train_epoch *e);

/* --halo-sample: epoch `epoch`'s predicted bytes, from its keyed draw over
 * every part's halo rows (this part's are gid[0..n)): sets rep->kept_rows
 * and rep->predicted_epoch.  Without sampling, nothing. Collective. */
halo_status train_totals_sample(halo_train_report *rep, const int64_t *gid, int64_t n,
                                int64_t epoch);

/* The run stops after `epoch` (`why`: a signal's name, or "early_stop"):
 * the summary covers the epochs trained so far and says why. Local. */
void train_totals_stop(halo_train_report *rep, int64_t epoch, const char *why);

/* The SHA-256 of the model's parameters as float32 bytes, little-endian, in
 * the order of halo_net_params_get, into rep->params_sha256: two runs
 * trained alike have equal digests.  Fails only on a failed copy or
 * allocation. Local. */
halo_status train_totals_digest(halo_train_report *rep, const halo_net *model);

/* The same digest of `nparams` parameters in host memory into hex (65
 * bytes). Local. */
void train_params_sha256(const float *params, int64_t nparams, char *hex);

/* ---------------------------------------------------------------- */
/* train-run.c (the set-up) and train-loop.c (the epochs): one run's state. */
typedef struct train_run {
  MPI_Comm comm;
  int rank, size;
  halo_train_args args; /* the caller's, with metric and resume settled */
  const halo_train_report_ops *ops;
  void *ctx; /* the ops' */
  halo_backend *be;
  halo_manifest *manifest;
  halo_shard *shard;
  halo_net *model;
  halo_net_info info;
  int64_t start_epoch;  /* epochs done before this run (resume) */
  halo_checkpoint ckpt; /* resume: the state read; then the save buffers (rank 0) */
  char ckpt_path[4096];
  int fatal;             /* failed inside the epoch loop, where peers may wait in an exchange */
  int stopped_by;        /* the signal that stopped the epoch loop early, or 0 */
  int nonfinite;         /* the loss turned NaN or infinite (not with --allow-nonfinite) */
  train_predict predict; /* --predict: the part's ids, labels and splits */
  float *best;           /* --early-stop: the parameters of the best validation epoch */
  int64_t *halo_gid;     /* --halo-sample: this part's halo rows' global ids (n_halo), which
                            the prediction draws from each epoch; NULL without sampling */
  int64_t n_halo_gid;
  char held[2048];       /* an error line held for halo_mpi_agree_first */
  train_memory memory;
  halo_train_report report;
  halo_plateau plateau; /* --lr-schedule plateau: its state, the checkpoint's on resume */
  float lr;             /* the learning rate of the last epoch trained */
} train_run;

/* --eval-only: one evaluation of the resumed parameters. Collective. */
halo_status train_evaluate_only(train_run *r);

/* The epoch loop, then the final measurement and the summary. Collective. */
halo_status train_epochs(train_run *r);

#endif /* HALO_TRAIN_IMPL_H */
