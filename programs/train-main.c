/* halo-train: full-batch GCN training over the shards of one partition run,
 * one MPI rank per part.  This file is the driver: the phases and the
 * agreements between them.  The memory admission is train-memory.c, what
 * rank 0 prints and writes is train-report.c, the flags are
 * halo-train-args.c, the environment variables cli-env.c.
 *
 * Phases (each ends in a collective agreement on status, so that one rank's
 * failure stops every rank instead of leaving them in a collective):
 *   args -> environment -> backend -> load (manifest + own part) ->
 *   resume (checkpoint) -> memory check -> plan/model -> train (checkpoints
 *   saved on the way).
 * Only main() may call MPI_Abort, and only when the agreement itself fails
 * or the watchdog (--timeout) gave up on a peer.
 */
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-env.h"
#include "halo-backend.h"
#include "halo-checkpoint.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-mpi.h"
#include "halo-net.h"
#include "halo-predict.h"
#include "halo-shard.h"
#include "halo-train-args.h"
#include "halo-watchdog.h"
#include "train-memory.h"
#include "train-metrics.h"
#include "train-predict.h"
#include "train-report.h"
#include "train-signals.h"

/* From OpenBLAS; declared here so that the CLI does not depend on which
 * cblas.h the system puts first on the include path. */
void openblas_set_num_threads(int num_threads);

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

typedef struct run {
  MPI_Comm comm;
  int rank, size;
  halo_train_args args;
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
  train_predict predict; /* --predict: the part's ids, labels and splits */
  float *best;           /* --early-stop: the parameters of the best validation epoch */
  char held[2048];       /* an error line held for halo_mpi_agree_first */
  cli_env env;           /* the environment variables (cli-env.c) */
  train_memory memory;
  train_report report;
} run;

static halo_status load(run *r) {
  halo_status st = HALO_OK;
  char path[4096];
  const char *dir = r->args.dir;

  if (snprintf(path, sizeof path, "%s/manifest.h5", dir) >= (int)sizeof path)
    HALO_FAIL(HALO_ERR_ARG, "%s: shard folder path too long", dir);
  /* Every rank reads the manifest, but a fault in it is the same for all:
   * rank 0 reports it, and another rank speaks only if it alone fails.
   * /part (4 bytes per global node, on every rank) stays on disk: nothing
   * here needs it, and each part's digest in the manifest already ties the
   * shard to the assignment /part records (docs/shard-format.md). */
  if (r->rank != 0) halo_log_set_quiet(1);
  st = halo_manifest_read_opts(path, HALO_MANIFEST_NO_PART, &r->manifest);
  if (st == HALO_OK && r->manifest->parts != r->size) {
    halo_log_error(
        "%s: the run has %d parts but %d ranks started (a %d-part run needs "
        "mpirun -np %d)",
        path, r->manifest->parts, r->size, r->manifest->parts, r->manifest->parts);
    st = HALO_ERR_MISMATCH;
  }
  if (st == HALO_OK && (r->manifest->features < 1 || r->manifest->classes < 1)) {
    halo_log_error(
        "%s: the graph has no node %s (a structure-only input); a GCN needs them: partition it "
        "with %s",
        path, r->manifest->features < 1 ? "features" : "labels",
        r->manifest->features < 1 ? "--features FILE or --synthetic-features F"
                                  : "--labels FILE or --synthetic-classes C");
    st = HALO_ERR_ARG;
  }
  halo_log_set_quiet(0);
  int root_status = st;
  HALO_MPI(MPI_Bcast(&root_status, 1, MPI_INT, 0, r->comm));
  if (st < 0 && root_status == HALO_OK)
    halo_log_error("%s: cannot be read on this rank (%s), though rank 0 read it", path,
                   halo_status_str(st));
  HALO_TRY(st);
  /* A fault of the parts is often every rank's (parts of another run, a
   * folder of another partition): the first rank to fail reports it, in
   * run_all's agreement. */
  halo_log_hold(r->held, sizeof r->held);
  HALO_TRY(halo_shard_path(path, sizeof path, dir, r->rank, r->size));
  HALO_TRY(halo_shard_read(path, r->manifest, &r->shard));
  if (r->shard->part != r->rank)
    HALO_FAIL(HALO_ERR_MISMATCH, "%s: holds part %d, not part %d (part files renamed or swapped?)",
              path, (int)r->shard->part, r->rank);
done:
  halo_log_hold(NULL, 0);
  halo_log_set_quiet(0);
  return st;
}

/* --resume, on rank 0: the newest valid checkpoint, which must belong to
 * this graph and model and lie within --epochs.  The library's lines name
 * the folder and the files; the flag they came from is set as the log's
 * context around each call. */
static halo_status resume_find(run *r) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  const char *dir = r->args.checkpoint;
  struct stat sb;
  /* A fresh run creates the folder at its first save; a resume reads it. */
  const int found = stat(dir, &sb) == 0;
  if (!found || !S_ISDIR(sb.st_mode))
    HALO_FAIL(HALO_ERR_IO, "--checkpoint %s: cannot open: %s", dir,
              strerror(found ? ENOTDIR : errno));
  halo_log_set_context("--resume: ");
  HALO_TRY(halo_checkpoint_latest(dir, c, r->ckpt_path, sizeof r->ckpt_path));
  HALO_TRY(halo_checkpoint_match(c, r->ckpt_path, r->manifest, r->args.model, &r->args.gcn));
  halo_log_set_context(NULL);
  if (c->epoch > r->args.epochs && !r->args.eval_only)
    HALO_FAIL(HALO_ERR_ARG, "--epochs %lld: %s is already at epoch %lld (--epochs is the total)",
              (long long)r->args.epochs, r->ckpt_path, (long long)c->epoch);
  halo_log_set_context("--checkpoint ");
  HALO_TRY(halo_checkpoint_set_aside_newer(dir, c->epoch));
done:
  halo_log_set_context(NULL);
  return st;
}

/* --checkpoint without --resume, on rank 0: the folder must hold no
 * checkpoint, since keeping the newest --keep would then delete this run's
 * saves in favour of an old run's later epochs.  A missing folder passes. */
static halo_status check_fresh(const char *dir) {
  halo_status st = HALO_OK;
  int64_t newest = -1;
  halo_log_set_context("--checkpoint ");
  HALO_TRY(halo_checkpoint_newest(dir, &newest));
  halo_log_set_context(NULL);
  if (newest >= 0)
    HALO_FAIL(HALO_ERR_EXISTS,
              "--checkpoint %s: already holds checkpoints (the newest of epoch %lld); add --resume "
              "to continue from it, or give another folder",
              dir, (long long)newest);
done:
  halo_log_set_context(NULL);
  return st;
}

/* --resume auto: resume when the folder holds a checkpoint, else start
 * fresh (the first run of a requeued job). Collective. */
static halo_status resume_auto(run *r) {
  halo_status st = HALO_OK;
  int64_t newest = -1;
  if (r->rank == 0) {
    halo_log_set_context("--checkpoint ");
    st = halo_checkpoint_newest(r->args.checkpoint, &newest);
    halo_log_set_context(NULL);
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  HALO_MPI(MPI_Bcast(&newest, 1, MPI_INT64_T, 0, r->comm));
  if (newest < 0 && r->args.eval_only) {
    if (r->rank == 0)
      halo_log_error("--eval-only --resume auto: %s holds no checkpoint to evaluate",
                     r->args.checkpoint);
    st = HALO_ERR_ARG;
    goto done;
  }
  r->args.resume = newest >= 0;
  if (r->rank == 0 && newest < 0)
    fprintf(stderr, "halo-train: --resume auto: no checkpoint in %s yet; starting at epoch 1\n",
            r->args.checkpoint);
done:
  return st;
}

/* --resume: rank 0 finds the checkpoint; every rank then receives it. */
static halo_status resume_read(run *r) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  HALO_TRY(halo_mpi_agree(r->comm, r->rank == 0 ? resume_find(r) : HALO_OK));
  int64_t head[3] = {c->epoch, c->adam_t, c->nparams};
  HALO_MPI(MPI_Bcast(head, 3, MPI_INT64_T, 0, r->comm));
  if (r->rank != 0) {
    st = halo_checkpoint_alloc(c, head[2]);
    c->epoch = head[0];
    c->adam_t = head[1];
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  float *arrays[3] = {c->params, c->adam_m, c->adam_v};
  for (int k = 0; k < 3; k++)
    HALO_MPI(MPI_Bcast(arrays[k], (int)c->nparams, MPI_FLOAT, 0, r->comm));
done:
  return st;
}

/* Saves the state after `epoch` (rank 0 writes; weights are replicated),
 * as the epoch's checkpoint, or as DIR/NAME when `name` is given (best.h5).
 * The buffers were allocated before the epoch loop. Collective. */
static halo_status save_checkpoint(run *r, int64_t epoch, const char *name) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  if (r->rank == 0) {
    const halo_manifest *m = r->manifest;
    c->epoch = epoch;
    snprintf(c->model, sizeof c->model, "%s", r->args.model);
    c->gcn = r->args.gcn;
    c->source_digest = m->source_digest;
    c->nodes = m->nodes;
    c->edges = m->edges;
    c->features = m->features;
    c->classes = m->classes;
    c->parts = m->parts;
    c->run_id = m->run_id;
    HALO_TRY(halo_net_params_get(r->model, c->params));
    HALO_TRY(halo_net_adam_get(r->model, c->adam_m, c->adam_v, &c->adam_t));
    halo_log_set_context("--checkpoint ");
    if (name) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", r->args.checkpoint, name);
      if (mkdir(r->args.checkpoint, 0777) != 0 && errno != EEXIST)
        HALO_FAIL(HALO_ERR_IO, "%s: cannot create: %s", r->args.checkpoint, strerror(errno));
      HALO_TRY(halo_checkpoint_write(path, c));
    } else {
      HALO_TRY(halo_checkpoint_save(r->args.checkpoint, c, r->args.keep, r->ckpt_path,
                                    sizeof r->ckpt_path));
    }
  }
  if (r->rank == 0) train_report_metrics_sync(&r->report); /* the metrics as durable as it */
done:
  halo_log_set_context(NULL);
  halo_watch_layer("checkpoint", -1);
  return halo_mpi_agree(r->comm, st);
}

/* A failure inside the epoch loop cannot be agreed on: the other ranks may be
 * waiting for this one's halo rows. It marks the run for MPI_Abort in main. */
static halo_status fatal_if(run *r, halo_status st) {
  if (st < 0) r->fatal = 1;
  return st;
}

/* --early-stop: after a new best validation epoch, its parameters, and
 * with --checkpoint DIR/best.h5. Collective. */
static halo_status keep_best(run *r, int64_t epoch) {
  halo_status st = halo_net_params_get(r->model, r->best);
  HALO_TRY(fatal_if(r, st));
  if (r->args.checkpoint) HALO_TRY(save_checkpoint(r, epoch, "best.h5"));
done:
  return st;
}

/* --early-stop on a resumed run whose best validation epoch came before
 * the checkpoint (the metrics file said so): its parameters are DIR/best.h5's,
 * which the earlier run kept.  Without that file (an earlier run without
 * --early-stop) the best is forgotten, with a warning, and this run finds
 * its own. Collective. */
static halo_status load_prior_best(run *r) {
  halo_status st = HALO_OK;
  train_report *rep = &r->report;
  halo_checkpoint best = {0};
  int found = 0;
  if (r->rank == 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/best.h5", r->args.checkpoint);
    halo_log_set_quiet(1);
    found = access(path, F_OK) == 0 && halo_checkpoint_read(path, &best) == HALO_OK &&
            best.epoch == rep->best_epoch && best.nparams == r->info.params;
    halo_log_set_quiet(0);
    if (found) memcpy(r->best, best.params, (size_t)r->info.params * sizeof *r->best);
    if (!found)
      halo_log_warn(
          "--early-stop: the best validation epoch so far, %lld, has no %s of its "
          "parameters; counting from this run's epochs instead",
          (long long)rep->best_epoch, path);
  }
  HALO_MPI(MPI_Bcast(&found, 1, MPI_INT, 0, r->comm));
  if (found) {
    HALO_MPI(MPI_Bcast(r->best, (int)r->info.params, MPI_FLOAT, 0, r->comm));
  } else {
    rep->best_epoch = 0;
    rep->best_val = -1.0;
  }
done:
  halo_checkpoint_clear(&best);
  return st;
}

/* --predict, after the summary: from the final parameters, or with
 * --early-stop from the best validation epoch's. Collective. */
static halo_status write_predictions(run *r, int64_t last_epoch) {
  halo_status st = HALO_OK;
  const train_report *rep = &r->report;
  char sha[65];
  int64_t epoch = last_epoch;
  if (r->best && rep->best_epoch > 0) {
    epoch = rep->best_epoch;
    HALO_TRY(fatal_if(r, halo_net_params_set(r->model, r->best)));
    train_params_sha256(r->best, r->info.params, sha);
  } else {
    float *params = NULL;
    HALO_ALLOC(params, r->info.params, "the parameters' copy");
    st = halo_net_params_get(r->model, params);
    if (st == HALO_OK) train_params_sha256(params, r->info.params, sha);
    free(params);
    HALO_TRY(fatal_if(r, st));
  }
  /* The forward pass of these parameters (collective, with exchanges: a
   * failure there is fatal); the write is agreed on. */
  HALO_TRY(fatal_if(r, halo_net_evaluate(r->model, NULL)));
  HALO_TRY(train_predict_write(&r->predict, r->model, r->comm, r->args.predict, epoch,
                               r->args.model, sha));
  if (r->rank == 0)
    fprintf(train_report_text(rep), "predictions: %s (epoch %lld's parameters)\n", r->args.predict,
            (long long)epoch);
done:
  return st;
}

/* --eval-only: one evaluation of the resumed parameters. Collective. */
static halo_status evaluate_only(run *r) {
  halo_status st = HALO_OK;
  halo_net_stats step = {0}, eval = {0};
  train_epoch e = {0};
  train_report *rep = &r->report;
  halo_watch_where("evaluation", r->start_epoch, -1);
  HALO_TRY(fatal_if(r, halo_net_evaluate(r->model, &eval)));
  HALO_TRY(train_report_reduce(rep, &step, &eval, &e));
  if (rep->metric != TRAIN_METRIC_ACC)
    HALO_TRY(fatal_if(r, train_metric_eval(rep->metric, &r->predict, r->model, r->comm, e.metric)));
  if (r->rank == 0) HALO_TRY(fatal_if(r, train_report_digest(rep, r->model)));
  train_report_evaluation(rep, r->start_epoch, r->ckpt_path, &e);
  if (r->args.predict) HALO_TRY(write_predictions(r, r->start_epoch));
done:
  return st;
}

/* The epoch loop, then the final measurement and the summary. Collective. */
static halo_status train(run *r) {
  halo_status st = HALO_OK;
  const halo_train_args *a = &r->args;
  train_report *rep = &r->report;
  train_memory_report mem;

  int64_t last = r->start_epoch;
  int metrics_failed = 0;
  train_report_begin(rep, r->start_epoch + 1, a->epochs, a->warmup);
  if (r->best && rep->best_epoch > 0) HALO_TRY(load_prior_best(r));
  for (int64_t epoch = r->start_epoch + 1; epoch <= a->epochs; epoch++) {
    halo_net_stats step = {0}, eval = {0};
    train_epoch e = {0};
    halo_watch_where("step", epoch, -1);
    halo_watch_fault_stall(r->rank, epoch);
    HALO_TRY(fatal_if(r, halo_net_step(r->model, epoch, &step)));
    HALO_TRY(fatal_if(r, halo_net_evaluate(r->model, &eval)));
    HALO_TRY(train_report_reduce(rep, &step, &eval, &e));
    if (rep->metric != TRAIN_METRIC_ACC)
      HALO_TRY(
          fatal_if(r, train_metric_eval(rep->metric, &r->predict, r->model, r->comm, e.metric)));
    if (epoch == r->start_epoch + 1) HALO_TRY(fatal_if(r, train_memory_measure(&r->memory, r->be)));
    /* The epoch's metrics line first, so that the checkpoint's fsync covers it. */
    train_report_epoch(rep, epoch, &e);
    const int save = a->checkpoint && (epoch % a->checkpoint_every == 0 || epoch == a->epochs);
    if (save) HALO_TRY(save_checkpoint(r, epoch, NULL));
    last = epoch;
    if (r->best && rep->best_epoch == epoch) HALO_TRY(keep_best(r, epoch));
    /* A preemption signal on any rank: every rank stops here, after a
     * checkpoint of this epoch. */
    HALO_TRY(fatal_if(r, train_signals_agree(r->comm, train_report_metrics_failed(rep),
                                             &r->stopped_by, &metrics_failed)));
    if (metrics_failed) {
      st = HALO_ERR_IO; /* rank 0 said why at the failed write */
      goto done;
    }
    if (r->stopped_by && epoch == a->epochs) r->stopped_by = 0; /* finished anyway */
    if (r->stopped_by) {
      if (a->checkpoint && !save) HALO_TRY(save_checkpoint(r, epoch, NULL));
      train_report_stop(rep, epoch, train_signal_name(r->stopped_by));
      if (r->rank == 0)
        halo_log_warn("%s: stopping after epoch %lld%s%s%s", train_signal_name(r->stopped_by),
                      (long long)epoch, a->checkpoint ? "; saved " : " (no --checkpoint to save)",
                      a->checkpoint ? r->ckpt_path : "",
                      a->checkpoint ? "; continue with --resume" : "");
      break;
    }
    /* The reports of every rank agree, so every rank stops here alike. */
    if (a->early_stop && epoch - rep->best_epoch >= a->early_stop && epoch < a->epochs) {
      if (a->checkpoint && !save) HALO_TRY(save_checkpoint(r, epoch, NULL));
      train_report_stop(rep, epoch, "early_stop");
      if (r->rank == 0)
        fprintf(train_report_text(rep),
                "early stop: no better validation %s in the %lld epochs after epoch %lld "
                "(%.4f)\n",
                train_metric_name(rep->metric), (long long)a->early_stop,
                (long long)rep->best_epoch, rep->best_val);
      break;
    }
  }

  halo_watch_where("end", -1, -1);
  halo_watch_fault_stall(r->rank, a->epochs + 1);
  HALO_TRY(fatal_if(r, train_memory_measure(&r->memory, r->be)));
  HALO_TRY(fatal_if(r, train_memory_gather(&r->memory, r->comm, &mem)));
  if (r->rank == 0) HALO_TRY(fatal_if(r, train_report_digest(rep, r->model)));
  train_report_summary(rep, &mem);
  /* A preempted run is not done: its requeued run predicts. */
  if (a->predict && !r->stopped_by) HALO_TRY(write_predictions(r, last));
  if (rep->mismatches) {
    halo_log_error("measured halo bytes differed from the prediction in %lld epochs",
                   (long long)rep->mismatches);
    st = HALO_ERR_MISMATCH;
  }
done:
  return st;
}

/* FNV-1a over the arguments after the program name, each with its end. */
static uint64_t argv_hash(int argc, char **argv) {
  uint64_t h = 14695981039346656037ull;
  for (int i = 1; i < argc; i++)
    for (const char *p = argv[i];; p++) {
      h = (h ^ (unsigned char)*p) * 1099511628211ull;
      if (!*p) break;
    }
  return h;
}

/* Ranks started with other arguments (mpirun's "A : B" form) would train
 * different models and wait for each other forever: the lowest rank whose
 * arguments differ from rank 0's is named, and every rank stops.
 * Collective. */
static halo_status check_same_args(run *r, int argc, char **argv) {
  halo_status st = HALO_OK;
  uint64_t root = argv_hash(argc, argv);
  int mine = INT32_MAX, first = INT32_MAX;
  HALO_MPI(MPI_Bcast(&root, 1, MPI_UINT64_T, 0, r->comm));
  if (root != argv_hash(argc, argv)) mine = r->rank;
  HALO_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, r->comm));
  if (first == INT32_MAX) goto done;
  st = HALO_ERR_ARG;
  if (r->rank == 0)
    halo_log_error(
        "rank %d was started with other arguments than rank 0; every rank of halo-train needs "
        "the same command line",
        first);
done:
  return st;
}

/* Rank 0 prints one warning line when the ranks or threads outnumber the
 * cores (halo_mpi_advise decides; docs/train.md, --threads).  It never
 * asks for more threads.  Collective. */
static void warn_binding(const run *r, int threads) {
  halo_mpi_binding b;
  halo_mpi_check_binding(r->comm, threads, &b);
  if (r->rank != 0) return;
  if (b.advice == HALO_MPI_ADVICE_OVERSUBSCRIBED)
    halo_log_warn(
        "%d ranks share the %ld cores of a node (rank %d's), so they take turns on them and every "
        "epoch will be slow; start at most %ld ranks per node (a hostfile with more slots than "
        "cores, or mpirun --oversubscribe, oversubscribes it)",
        b.node_ranks, b.node_cores, b.rank, b.node_cores);
  else if (b.advice == HALO_MPI_ADVICE_FEWER_THREADS)
    halo_log_warn(
        "%d thread%s per rank, but rank %d may run on %d core%s and its node has %ld cores for %d "
        "rank%s, so threads share cores; give --threads %d",
        b.threads, b.threads == 1 ? "" : "s", b.rank, b.allowed_cores,
        b.allowed_cores == 1 ? "" : "s", b.node_cores, b.node_ranks, b.node_ranks == 1 ? "" : "s",
        b.threads_hint);
}

/* Everything after MPI_Init, returning the agreed status. */
static halo_status run_all(run *r, int argc, char **argv) {
  halo_status st = HALO_OK;

  HALO_TRY(halo_mpi_agree(r->comm, check_same_args(r, argc, argv)));
  /* Every rank parses the same argv; rank 0 alone reports a bad flag. */
  if (r->rank != 0) halo_log_set_quiet(1);
  st = halo_train_args_parse(argc, argv, &r->args);
  /* Rank 0 alone writes the metrics, so it alone checks the file. */
  if (st == HALO_OK && r->rank == 0)
    st = train_report_metrics_check(r->args.metrics, r->args.force);
  halo_log_set_quiet(0);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  if (r->args.help || r->args.version) {
    if (r->rank == 0 && r->args.help) fputs(halo_train_usage(), stdout);
    if (r->rank == 0 && r->args.version)
      printf("halo-train %s (shard format %d)\n", HALO_VERSION, HALO_SHARD_FORMAT_VERSION);
    goto done;
  }

  /* Each rank reads its own environment (mpirun -x passes variables on);
   * the lowest rank with a bad value says so. */
  halo_log_hold(r->held, sizeof r->held);
  st = cli_env_read(&r->env, CLI_ENV_MEMORY | CLI_ENV_CUDA | CLI_ENV_FAULT);
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));
  halo_memory_set_available(r->env.memory_available);
  const halo_watch_options wo = {.timeout_s = r->args.timeout,
                                 .stall = r->env.stall,
                                 .stall_rank = r->env.stall_rank,
                                 .stall_epoch = r->env.stall_epoch};
  halo_watch_init(r->comm, &wo);

  const int threads = r->args.threads > 0 ? r->args.threads : halo_mpi_default_threads(r->comm);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  warn_binding(r, threads);

  const halo_backend_options bo = {
      .device = r->args.device,
      .local_rank = halo_mpi_local_rank(r->comm),
      .tf32 = r->args.tf32,
      .spmm = r->env.cuda_spmm_rows ? HALO_BACKEND_SPMM_ROWS : HALO_BACKEND_SPMM_CUSPARSE,
      .mpi = r->env.cuda_aware < 0    ? HALO_BACKEND_MPI_ASK
             : r->env.cuda_aware == 1 ? HALO_BACKEND_MPI_DEVICE
                                      : HALO_BACKEND_MPI_STAGED};
  /* No GPU, or a build without CUDA: every rank fails alike; one says so. */
  halo_log_hold(r->held, sizeof r->held);
  const char *problem = halo_backend_problem(bo.device);
  if (problem) {
    halo_log_error("--device %s: %s; use --device cpu", bo.device, problem);
    st = HALO_ERR_UNSUPPORTED;
  } else {
    st = halo_backend_create(&bo, &r->be);
  }
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));

  st = load(r);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));
  if (r->args.resume_auto) HALO_TRY(resume_auto(r));
  if (r->args.resume) {
    HALO_TRY(resume_read(r));
  } else if (r->args.checkpoint) {
    st = r->rank == 0 ? check_fresh(r->args.checkpoint) : HALO_OK;
    HALO_TRY(halo_mpi_agree(r->comm, st));
  }
  /* An existing --predict file would only be refused after training. */
  if (r->rank == 0 && r->args.predict && access(r->args.predict, F_OK) == 0) {
    halo_log_error("--predict %s: already exists; remove it or give another name", r->args.predict);
    st = HALO_ERR_EXISTS;
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  st = train_memory_check(&r->memory, r->comm, r->be, r->shard, &r->args.gcn);
  HALO_TRY(halo_mpi_agree(r->comm, st));

  HALO_TRY(halo_net_create(r->comm, r->be, r->shard, &r->args.gcn, &r->model));
  halo_net_info_get(r->model, &r->info);
  /* Multi-label runs (ogbn-proteins) are compared by their mean ROC-AUC. */
  if (r->info.multilabel && !r->args.metric_given) r->args.metric = TRAIN_METRIC_AUC;
  /* --predict and --metric f1|auc need each row's node, label and split. */
  if (r->args.predict || r->args.metric != TRAIN_METRIC_ACC)
    st = train_predict_init(&r->predict, r->shard);
  const int classes = r->info.model.dims[r->info.model.layers];
  if (st == HALO_OK && r->args.metric == TRAIN_METRIC_AUC && classes != 2 && !r->info.multilabel) {
    if (r->rank == 0)
      halo_log_error(
          "--metric auc: ROC-AUC is a binary task's, and this graph has %d classes; "
          "use --metric f1 or acc",
          classes);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && r->args.early_stop) {
    r->best = calloc((size_t)r->info.params, sizeof *r->best);
    if (!r->best) {
      halo_log_error("out of memory for the best epoch's parameters");
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  halo_shard_destroy(&r->shard); /* the model holds what it needs */
  if (r->args.resume) {
    /* Every rank knows both counts: rank 0 alone says so. */
    if (r->ckpt.nparams != r->info.params) {
      if (r->rank == 0)
        halo_log_error(
            "--resume: %s is a checkpoint of another model (%lld parameters; this "
            "model has %lld)",
            r->ckpt_path, (long long)r->ckpt.nparams, (long long)r->info.params);
      st = HALO_ERR_MISMATCH;
      goto done;
    }
    st = halo_net_params_set(r->model, r->ckpt.params);
    if (st == HALO_OK)
      st = halo_net_adam_set(r->model, r->ckpt.adam_m, r->ckpt.adam_v, r->ckpt.adam_t);
    HALO_TRY(halo_mpi_agree(r->comm, st));
    r->start_epoch = r->ckpt.epoch;
  }
  /* The save buffers, allocated before the epoch loop; a resumed run reuses
   * the ones it read. */
  if (r->args.checkpoint && r->rank == 0 && !r->args.resume)
    st = halo_checkpoint_alloc(&r->ckpt, r->info.params);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  int64_t local[2] = {r->info.n_halo, r->info.setup_halo_bytes}, global[2];
  HALO_MPI(MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_SUM, r->comm));
  const halo_model_comm exchanges = halo_model_comm_of(&r->info.model);
  train_report *rep = &r->report;
  rep->comm = r->comm;
  rep->rank = r->rank;
  rep->ranks = r->size;
  rep->threads = threads;
  rep->quiet = r->args.quiet;
  rep->manifest = r->manifest;
  rep->info = &r->info;
  rep->gcn = &r->args.gcn;
  rep->be = r->be;
  rep->halo_rows = global[0];
  rep->setup_bytes = global[1];
  rep->predicted_epoch = halo_predict_epoch_bytes(rep->halo_rows, &exchanges);
  rep->metric = (train_metric)r->args.metric;

  if (r->rank == 0 && r->args.metrics)
    st = train_report_metrics_open(rep, r->args.metrics, r->args.eval_only ? -1 : r->start_epoch);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  /* The earlier epochs rank 0 found in the file: every rank's report (and
   * so its early stopping) must count them alike. */
  HALO_MPI(MPI_Bcast(&rep->prior, (int)sizeof rep->prior, MPI_BYTE, 0, r->comm));
  if (r->rank == 0) {
    train_report_header(rep);
    if (r->args.resume && !r->args.eval_only)
      train_report_resumed(rep, r->ckpt_path, r->start_epoch, r->ckpt.adam_t, r->args.epochs);
  }

  st = r->args.eval_only ? evaluate_only(r) : train(r);
  if (r->fatal) goto done;
  HALO_TRY(halo_mpi_agree(r->comm, st));
done:
  return st;
}

int main(int argc, char **argv) {
  run r = {.comm = MPI_COMM_WORLD, .memory = {.pool = MPI_COMM_NULL}};
  char prefix[64];

  /* OpenMP and OpenBLAS threads run between MPI calls; only the main thread
   * calls MPI. */
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "halo-train: error: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  train_signals_install();
  MPI_Comm_rank(r.comm, &r.rank);
  MPI_Comm_size(r.comm, &r.size);
  snprintf(prefix, sizeof prefix, "[rank %d] halo-train", r.rank);
  halo_log_set_prefix(prefix);

  halo_status st = run_all(&r, argc, argv);

  const halo_status closed = train_report_metrics_close(&r.report, r.args.metrics);
  if (st == HALO_OK) st = closed;
  if (st == HALO_ERR_MPI || st == HALO_ERR_TIMEOUT || r.fatal) {
    /* The agreement itself failed, the watchdog gave up on a peer, or the
     * epoch loop failed on this rank: a peer may be stuck in a collective or
     * an exchange, so only the runtime can end it.  Nothing is freed first:
     * receives may still be posted into the model's buffers, and a late
     * message must not land in freed memory.  MPI_Abort ends the process
     * without running exit handlers. */
    fprintf(stderr, "[rank %d] halo-train: aborting the job (MPI_Abort)\n", r.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  halo_net_destroy(&r.model);
  halo_shard_destroy(&r.shard);
  halo_manifest_destroy(&r.manifest);
  halo_backend_destroy(&r.be);
  halo_checkpoint_clear(&r.ckpt);
  train_predict_free(&r.predict);
  free(r.best);
  train_memory_free(&r.memory); /* collective: not before an abort */
  MPI_Finalize();
  return st < 0 ? 1 : r.stopped_by ? 128 + r.stopped_by : 0;
}
