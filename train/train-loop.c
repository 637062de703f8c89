/* halo_train's epoch loop (train-impl.h): the epochs with their reports
 * and checkpoints, --early-stop's best parameters, --predict, and
 * --eval-only's one evaluation.  A failure inside the loop cannot be agreed
 * on (a peer may wait in an exchange): it marks the run fatal, and the
 * program aborts the job. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-checkpoint.h"
#include "halo-mpi.h"
#include "halo-net.h"
#include "halo-profile.h"
#include "halo-watchdog.h"
#include "train-impl.h"

/* Saves the state after `epoch` (rank 0 writes; weights are replicated),
 * as the epoch's checkpoint, or as DIR/NAME when `name` is given (best.h5).
 * The buffers were allocated before the epoch loop. Collective. */
static halo_status save_checkpoint(train_run *r, int64_t epoch, const char *name) {
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
    c->edge_weighted = m->part_edge_weight_digest != NULL && !r->args.gcn.no_edge_weights;
    HALO_TRY(halo_net_params_get(r->model, c->params));
    HALO_TRY(halo_net_adam_get(r->model, c->adam_m, c->adam_v, &c->adam_t));
    c->lr = r->lr;
    c->plateau = r->plateau;
    halo_net_bn_running_get(r->model, c->bn_running);
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
  if (r->rank == 0) r->ops->sync(r->ctx); /* the metrics as durable as it */
done:
  halo_log_set_context(NULL);
  halo_watch_layer("checkpoint", -1);
  return halo_mpi_agree(r->comm, st);
}

/* A failure inside the epoch loop cannot be agreed on: the other ranks may be
 * waiting for this one's halo rows. It marks the run for MPI_Abort in main. */
static halo_status fatal_if(train_run *r, halo_status st) {
  if (st < 0) r->fatal = 1;
  return st;
}

/* --early-stop: after a new best validation epoch, its parameters, and
 * with --checkpoint DIR/best.h5. Collective. */
static halo_status keep_best(train_run *r, int64_t epoch) {
  halo_status st = halo_net_params_get(r->model, r->best);
  HALO_TRY(fatal_if(r, st));
  halo_net_bn_running_get(r->model, r->best + r->info.params);
  if (r->args.checkpoint) HALO_TRY(save_checkpoint(r, epoch, "best.h5"));
done:
  return st;
}

/* --early-stop on a resumed run whose best validation epoch came before
 * the checkpoint (the metrics file said so): its parameters are DIR/best.h5's,
 * which the earlier run kept.  Without that file (an earlier run without
 * --early-stop) the best is forgotten, with a warning, and this run finds
 * its own. Collective. */
static halo_status load_prior_best(train_run *r) {
  halo_status st = HALO_OK;
  halo_train_report *rep = &r->report;
  halo_checkpoint best = {0};
  int found = 0;
  if (r->rank == 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/best.h5", r->args.checkpoint);
    halo_log_set_quiet(1);
    found = access(path, F_OK) == 0 && halo_checkpoint_read(path, &best) == HALO_OK &&
            best.epoch == rep->best_epoch && best.nparams == r->info.params &&
            best.nrunning == r->info.model.running;
    halo_log_set_quiet(0);
    if (found) memcpy(r->best, best.params, (size_t)r->info.params * sizeof *r->best);
    if (found && best.nrunning > 0)
      memcpy(r->best + r->info.params, best.bn_running, (size_t)best.nrunning * sizeof *r->best);
    if (!found)
      halo_log_warn(
          "--early-stop: the best validation epoch so far, %lld, has no %s of its "
          "parameters; counting from this run's epochs instead",
          (long long)rep->best_epoch, path);
  }
  HALO_MPI(MPI_Bcast(&found, 1, MPI_INT, 0, r->comm));
  if (found) {
    HALO_MPI(MPI_Bcast(r->best, (int)(r->info.params + r->info.model.running), MPI_FLOAT, 0,
                       r->comm));
  } else {
    rep->best_epoch = 0;
    rep->best_val = -1.0;
  }
done:
  halo_checkpoint_clear(&best);
  return st;
}

/* --predict and --embeddings, after the summary: from the final
 * parameters, or with --early-stop from the best validation epoch's.
 * Collective. */
static halo_status write_predictions(train_run *r, int64_t last_epoch) {
  halo_status st = HALO_OK;
  const halo_train_report *rep = &r->report;
  char sha[65];
  int64_t epoch = last_epoch;
  if (r->best && rep->best_epoch > 0) {
    epoch = rep->best_epoch;
    HALO_TRY(fatal_if(r, halo_net_params_set(r->model, r->best)));
    halo_net_bn_running_set(r->model, r->best + r->info.params);
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
  if (r->args.predict) {
    HALO_TRY(train_predict_write(&r->predict, r->model, r->comm, r->args.predict, epoch,
                                 r->args.model, sha, r->args.force));
    if (r->rank == 0) r->ops->predictions(r->ctx, rep, r->args.predict, epoch);
  }
  if (r->args.embeddings) {
    HALO_TRY(train_embeddings_write(&r->predict, r->model, r->comm, r->args.embeddings,
                                    r->args.embeddings_layer, epoch, r->args.model, sha,
                                    r->args.force));
    if (r->rank == 0)
      r->ops->embeddings(r->ctx, rep, r->args.embeddings, r->args.embeddings_layer, epoch);
  }
done:
  return st;
}

/* --eval-only (train-impl.h): the resumed parameters' one evaluation. */
halo_status train_evaluate_only(train_run *r) {
  halo_status st = HALO_OK;
  halo_net_stats step = {0}, eval = {0};
  halo_train_epoch e = {0};
  halo_train_report *rep = &r->report;
  halo_watch_where("evaluation", r->start_epoch, -1);
  HALO_TRY(fatal_if(r, halo_net_evaluate(r->model, &eval)));
  HALO_TRY(train_totals_reduce(rep, &step, &eval, &e));
  if (rep->metric != HALO_TRAIN_METRIC_ACC)
    HALO_TRY(fatal_if(r, train_metric_eval(rep->metric, &r->predict, r->model, r->comm, e.metric)));
  if (r->rank == 0) HALO_TRY(fatal_if(r, train_totals_digest(rep, r->model)));
  if (r->rank == 0) r->ops->evaluation(r->ctx, rep, r->start_epoch, r->ckpt_path, &e);
  if (r->args.predict || r->args.embeddings) HALO_TRY(write_predictions(r, r->start_epoch));
done:
  return st;
}

/* A loss that is NaN or infinite (the same on every rank: it is reduced)
 * stops the run at that epoch, unless --allow-nonfinite: the parameters
 * are lost already, and every later epoch would only spend time on them.
 * Rank 0 says so in one line. */
static int stop_on_nonfinite(train_run *r, int64_t epoch, double loss) {
  if (isfinite(loss) || r->args.allow_nonfinite) return 0;
  if (r->rank == 0) {
    char last[4300] = "no checkpoint was saved";
    if (r->ckpt_path[0]) snprintf(last, sizeof last, "the newest checkpoint is %s", r->ckpt_path);
    halo_log_error(
        "epoch %lld: the training loss is %s; the learning rate is too high, or the features "
        "are not normalised (try --normalize-features, or a lower --lr than %g); %s "
        "(--allow-nonfinite trains on)",
        (long long)epoch, isnan(loss) ? "NaN" : "infinite", r->args.gcn.lr, last);
  }
  r->nonfinite = 1;
  return 1;
}

/* The epochs (train-impl.h): each one's step, evaluation (every
 * --eval-every epochs and at the last), report and agreement on signals,
 * then the final measurement and the summary. */
halo_status train_epochs(train_run *r) {
  halo_status st = HALO_OK;
  const halo_train_args *a = &r->args;
  halo_train_report *rep = &r->report;
  halo_train_memory_report mem;
  halo_profile_totals prof = {0};

  int64_t last = r->start_epoch;
  int metrics_failed = 0, failed = 0; /* failed: rank 0's metrics write */
  train_totals_begin(rep, r->start_epoch + 1, a->epochs, a->warmup);
  if (r->best && rep->best_epoch > 0) HALO_TRY(load_prior_best(r));
  const double started = MPI_Wtime();
  for (int64_t epoch = r->start_epoch + 1; epoch <= a->epochs; epoch++) {
    halo_net_stats step = {0}, eval = {0};
    halo_train_epoch e = {0};
    const int evaluate = halo_train_evaluates(epoch, a->epochs, a->eval_every);
    halo_watch_where("step", epoch, -1);
    halo_watch_fault_stall(r->rank, epoch);
    /* --profile counts the epochs the mean epoch time counts. */
    const int profiled = a->profile && epoch >= rep->first_epoch + rep->warmup;
    if (profiled && epoch == rep->first_epoch + rep->warmup) halo_profile_reset();
    const int64_t faults = a->profile ? halo_profile_minflt() : 0;
    /* The schedule's rate for this epoch's update (halo-schedule.h); every
     * rank computes the same from the same state. */
    const int64_t span = a->lr_epochs > 0 ? a->lr_epochs : a->epochs;
    r->lr = (float)halo_schedule_lr(&a->gcn, span, epoch, &r->plateau);
    halo_net_set_lr(r->model, r->lr);
    HALO_TRY(fatal_if(r, halo_net_step(r->model, epoch, &step)));
    /* The next epoch's step follows with these parameters: it reuses this
     * evaluation's forward pass where that is its own (halo-net.h). */
    if (evaluate) {
      halo_net_share_forward(r->model, epoch < a->epochs);
      HALO_TRY(fatal_if(r, halo_net_evaluate(r->model, &eval)));
    }
    if (a->profile) {
      const int64_t fault_count = halo_profile_minflt() - faults;
      if (epoch == r->start_epoch + 1) prof.minflt_first = fault_count;
      if (profiled) {
        prof.epochs++;
        prof.step_s += step.seconds;
        prof.eval_s += eval.seconds;
        prof.comm_s += step.comm_seconds + eval.comm_seconds;
        prof.minflt_profiled += fault_count;
      }
    }
    HALO_TRY(train_totals_reduce(rep, &step, &eval, &e));
    HALO_TRY(fatal_if(r, train_totals_sample(rep, r->halo_gid, r->n_halo_gid, epoch)));
    e.evaluated = evaluate;
    e.lr = r->lr;
    e.grad_norm = halo_net_grad_norm(r->model);
    /* ReduceLROnPlateau steps on the reduced validation loss, the same on
     * every rank, after each evaluation past the warm-up. */
    if (evaluate && halo_schedule_plateau_steps(&a->gcn, epoch))
      halo_plateau_step(&r->plateau, &a->gcn, e.eval_loss[1]);
    if (evaluate && rep->metric != HALO_TRAIN_METRIC_ACC)
      HALO_TRY(
          fatal_if(r, train_metric_eval(rep->metric, &r->predict, r->model, r->comm, e.metric)));
    if (epoch == r->start_epoch + 1) HALO_TRY(fatal_if(r, train_memory_measure(&r->memory, r->be)));
    e.wall_s = MPI_Wtime() - started;
    /* The epoch's metrics line first, so that the checkpoint's fsync covers it. */
    train_totals_epoch(rep, epoch, &e);
    if (r->rank == 0) failed = r->ops->epoch(r->ctx, rep, epoch, &e);
    /* Every rank holds the same reduced loss, so every rank stops here;
     * no checkpoint of these parameters is saved. */
    if (stop_on_nonfinite(r, epoch, e.loss)) {
      st = HALO_ERR_RANGE;
      goto done;
    }
    const int save = a->checkpoint && (epoch % a->checkpoint_every == 0 || epoch == a->epochs);
    if (save) HALO_TRY(save_checkpoint(r, epoch, NULL));
    last = epoch;
    if (r->best && rep->best_epoch == epoch) HALO_TRY(keep_best(r, epoch));
    /* A preemption signal on any rank: every rank stops here, after a
     * checkpoint of this epoch. */
    HALO_TRY(fatal_if(r, train_signals_agree(r->comm, failed, &r->stopped_by, &metrics_failed)));
    if (metrics_failed) {
      st = HALO_ERR_IO; /* rank 0 said why at the failed write */
      goto done;
    }
    if (r->stopped_by && epoch == a->epochs) r->stopped_by = 0; /* finished anyway */
    if (r->stopped_by) {
      if (a->checkpoint && !save) HALO_TRY(save_checkpoint(r, epoch, NULL));
      train_totals_stop(rep, epoch, train_signal_name(r->stopped_by));
      if (r->rank == 0)
        halo_log_warn("%s: stopping after epoch %lld%s%s%s", train_signal_name(r->stopped_by),
                      (long long)epoch, a->checkpoint ? "; saved " : " (no --checkpoint to save)",
                      a->checkpoint ? r->ckpt_path : "",
                      a->checkpoint ? "; continue with --resume" : "");
      break;
    }
    /* The reports of every rank agree, so every rank stops here alike.
     * The patience counts evaluations: those after the best epoch's. */
    const int64_t every = a->eval_every > 1 ? a->eval_every : 1;
    if (a->early_stop && evaluate && epoch / every - rep->best_epoch / every >= a->early_stop &&
        epoch < a->epochs) {
      if (a->checkpoint && !save) HALO_TRY(save_checkpoint(r, epoch, NULL));
      train_totals_stop(rep, epoch, "early_stop");
      if (r->rank == 0) r->ops->early_stop(r->ctx, rep, a->early_stop);
      break;
    }
  }

  halo_watch_where("end", -1, -1);
  halo_watch_fault_stall(r->rank, a->epochs + 1);
  /* The last epoch's stale messages (--halo-stale), counted in its bytes. */
  HALO_TRY(fatal_if(r, halo_net_drain(r->model)));
  HALO_TRY(fatal_if(r, train_memory_measure(&r->memory, r->be)));
  HALO_TRY(fatal_if(r, train_memory_gather(&r->memory, r->comm, &mem)));
  if (r->rank == 0) HALO_TRY(fatal_if(r, train_totals_digest(rep, r->model)));
  if (r->rank == 0) r->ops->summary(r->ctx, rep, &mem);
  /* A preempted run is not done: its requeued run predicts.  Before the
   * profile, whose measurements allocate: its failure must not cost the
   * run's outputs. */
  if ((a->predict || a->embeddings) && !r->stopped_by) HALO_TRY(write_predictions(r, last));
  if (a->profile) {
    FILE *out = a->metrics && strcmp(a->metrics, "-") == 0 ? stderr : stdout;
    HALO_TRY(fatal_if(r, halo_profile_report(r->be, r->comm, &prof, out)));
  }
  if (rep->mismatches) {
    halo_log_error("measured halo bytes differed from the prediction in %lld epochs",
                   (long long)rep->mismatches);
    st = HALO_ERR_MISMATCH;
  }
done:
  return st;
}
