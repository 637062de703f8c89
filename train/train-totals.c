/* halo_train's totals (train-impl.h): the per-epoch reduction over the
 * ranks, the run's totals every rank keeps alike (so that all of them stop
 * alike), the digest of the parameters, and the --metrics JSON objects
 * (halo-train.h; through core's halo-json, docs/train.md lists the keys).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-json.h"
#include "halo-model.h"
#include "halo-sample.h"
#include "halo-sha256.h"
#include "halo-train.h"
#include "halo-watchdog.h"
#include "train-impl.h"

void train_totals_begin(halo_train_report *rep, int64_t first_epoch, int64_t last_epoch,
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
  rep->evaluations = 0;
  rep->eval_sum = 0.0;
  rep->wall_s = 0.0;
}

int halo_train_evaluates(int64_t epoch, int64_t last, int64_t every) {
  return every <= 1 || epoch % every == 0 || epoch == last;
}

halo_status train_totals_reduce(const halo_train_report *rep, const halo_net_stats *step,
                                const halo_net_stats *eval, halo_train_epoch *out) {
  halo_status st = HALO_OK;
  enum { N = HALO_TRAIN_FIGURES };
  double mine[N] = {[HALO_TRAIN_STEP_S] = step->seconds,
                    [HALO_TRAIN_COMM_S] = step->comm_seconds,
                    [HALO_TRAIN_HALO_B] = (double)step->halo_bytes,
                    [HALO_TRAIN_ALLREDUCE_B] = (double)step->allreduce_bytes,
                    [HALO_TRAIN_EVAL_S] = eval->seconds,
                    [HALO_TRAIN_EVAL_HALO_B] = (double)eval->halo_bytes,
                    [HALO_TRAIN_COMPUTE_CPU] = step->compute_cpu_seconds,
                    [HALO_TRAIN_ALLREDUCE_S] = step->allreduce_seconds};
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
 * exchanged row (a halo row, or a cover's row or partial sum) crosses once
 * per exchange, at that direction's precision. */
static int64_t layer_predicted(const halo_train_report *rep, int l, int d) {
  return halo_predict_layer_bytes(rep->kept_rows, &rep->info->model.comm[l], d,
                                  d ? rep->gcn->halo_precision_bwd : rep->gcn->halo_precision);
}

halo_status train_totals_sample(halo_train_report *rep, const int64_t *gid, int64_t n,
                                int64_t epoch) {
  halo_status st = HALO_OK;
  const halo_net_options *o = rep->gcn;
  if (!halo_sample_on(o->halo_sample)) return HALO_OK;
  int64_t mine = halo_predict_sample_rows(gid, n, o->seed, epoch, o->halo_sample), all = 0;
  HALO_TRY(halo_watch_allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, rep->comm,
                                "the sampled rows' prediction"));
  const halo_model_comm exchanges = halo_model_comm_of(&rep->info->model);
  rep->kept_rows = all;
  rep->predicted_epoch =
      halo_predict_epoch_bytes_at(all, &exchanges, o->halo_precision, o->halo_precision_bwd);
done:
  return st;
}

/* train_totals_epoch: the halo bytes against the prediction, layer by layer. */
void train_totals_epoch(halo_train_report *rep, int64_t epoch, const halo_train_epoch *e) {
  const int64_t halo = (int64_t)e->sum[HALO_TRAIN_HALO_B];
  int layers_off = 0;
  for (int l = 0; l < rep->info->model.layers; l++)
    for (int d = 0; d < 2; d++)
      layers_off |= (int64_t)e->layer_bytes[l][d] != layer_predicted(rep, l, d);
  rep->total_halo += halo;
  rep->mismatches += halo != rep->predicted_epoch || layers_off;
  if (epoch >= rep->first_epoch + rep->warmup) {
    rep->time_sum += e->max[HALO_TRAIN_STEP_S];
    rep->timed++;
  }
  rep->wall_s = e->wall_s;
  if (!e->evaluated) return; /* --eval-every: no figures this epoch */
  rep->evaluations++;
  rep->eval_sum += e->max[HALO_TRAIN_EVAL_S];
  const double val = rep->metric == HALO_TRAIN_METRIC_ACC ? e->acc[1] : e->metric[0],
               test = rep->metric == HALO_TRAIN_METRIC_ACC ? e->acc[2] : e->metric[1];
  if (val > rep->best_val) { /* a NaN (an AUC without both classes) never is */
    rep->best_val = val;
    rep->test_at_best = test;
    rep->best_epoch = epoch;
  }
  rep->final_test = test;
  rep->final_acc = e->acc[2];
}

void train_totals_stop(halo_train_report *rep, int64_t epoch, const char *why) {
  rep->trained = epoch - rep->first_epoch + 1;
  rep->stopped_by = why;
}

double halo_train_mean_epoch_s(const halo_train_report *rep) {
  return rep->timed > 0 ? rep->time_sum / (double)rep->timed : 0.0;
}

const char *halo_train_metric_key(halo_train_metric m, int k) {
  static char key[2][16];
  snprintf(key[k], sizeof key[k], "%s_%s", k ? "test" : "val", halo_train_metric_name(m));
  return key[k];
}

/* One --metrics line per epoch; docs/train.md lists the keys. */
const char *halo_train_exchange_mode(const halo_train_report *rep, int64_t epoch) {
  return rep->gcn->halo_stale && epoch > rep->first_epoch ? "stale" : "fresh";
}

void halo_train_epoch_json(const halo_train_report *rep, int64_t epoch, const halo_train_epoch *e,
                           halo_json *j) {
  halo_json_object_begin(j);
  halo_json_key_int(j, "epoch", epoch);
  halo_json_key_double(j, "loss", e->loss, "%.17g");
  halo_json_key_double(j, "lr", e->lr, "%.9g");
  if (rep->gcn->clip_grad_norm > 0.0f) halo_json_key_double(j, "grad_norm", e->grad_norm, "%.9g");
  /* An epoch --eval-every skipped says so and has no figures. */
  if (!e->evaluated) halo_json_key_bool(j, "evaluated", 0);
  /* 17 digits: a resumed run reads its earlier best back exactly. */
  if (e->evaluated) {
    halo_json_key_double(j, "train_acc", e->acc[0], "%.17g");
    halo_json_key_double(j, "val_acc", e->acc[1], "%.17g");
    halo_json_key_double(j, "test_acc", e->acc[2], "%.17g");
    halo_json_key_double(j, "val_loss", e->eval_loss[1], "%.17g");
    halo_json_key_double(j, "test_loss", e->eval_loss[2], "%.17g");
  }
  if (e->evaluated && rep->metric != HALO_TRAIN_METRIC_ACC) {
    halo_json_key_double(j, halo_train_metric_key(rep->metric, 0), e->metric[0], "%.17g");
    halo_json_key_double(j, halo_train_metric_key(rep->metric, 1), e->metric[1], "%.17g");
  }
  halo_json_key_double(j, "epoch_s", e->max[HALO_TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "epoch_s_min", e->min[HALO_TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "epoch_s_max", e->max[HALO_TRAIN_STEP_S], "%.9g");
  halo_json_key_double(j, "comm_s", e->sum[HALO_TRAIN_COMM_S] / rep->ranks, "%.9g");
  halo_json_key_double(j, "comm_s_min", e->min[HALO_TRAIN_COMM_S], "%.9g");
  halo_json_key_double(j, "comm_s_max", e->max[HALO_TRAIN_COMM_S], "%.9g");
  /* The gradient allreduce's part of comm_s (no mode overlaps it): a rank
   * that reaches it first waits there for the others, and on a shared link
   * behind their halo rows.  comm_s - allreduce_s is the exchanges' part. */
  halo_json_key_double(j, "allreduce_s", e->sum[HALO_TRAIN_ALLREDUCE_S] / rep->ranks, "%.9g");
  /* The ranks' work, in CPU seconds: its max / mean is the step's
   * imbalance even where ranks share cores (bench/balance-step.sh). */
  halo_json_key_double(j, "compute_cpu_s", e->sum[HALO_TRAIN_COMPUTE_CPU] / rep->ranks, "%.9g");
  halo_json_key_double(j, "compute_cpu_s_min", e->min[HALO_TRAIN_COMPUTE_CPU], "%.9g");
  halo_json_key_double(j, "compute_cpu_s_max", e->max[HALO_TRAIN_COMPUTE_CPU], "%.9g");
  halo_json_key_double(j, "halo_bytes", e->sum[HALO_TRAIN_HALO_B], "%.0f");
  halo_json_key_int(j, "halo_bytes_predicted", rep->predicted_epoch);
  /* The modes, and what a plain fp32 exchange of every halo row would have
   * moved: the saving is one division. */
  halo_json_key_double(j, "halo_sample", rep->gcn->halo_sample, "%.9g");
  halo_json_key_string(j, "halo_aggregate", halo_aggregate_names[rep->gcn->halo_aggregate]);
  halo_json_key_int(j, "halo_rows_sent", rep->kept_rows);
  {
    const halo_model_comm exchanges = halo_model_comm_of(&rep->info->model);
    halo_json_key_int(j, "halo_bytes_fp32_plain",
                      halo_predict_epoch_bytes(rep->halo_rows, &exchanges));
  }
  halo_json_key_string(j, "halo_exchange", halo_train_exchange_mode(rep, epoch));
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
  halo_json_key_double(j, "halo_bytes_min", e->min[HALO_TRAIN_HALO_B], "%.0f");
  halo_json_key_double(j, "halo_bytes_max", e->max[HALO_TRAIN_HALO_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes", e->sum[HALO_TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes_min", e->min[HALO_TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "allreduce_bytes_max", e->max[HALO_TRAIN_ALLREDUCE_B], "%.0f");
  halo_json_key_double(j, "eval_s", e->max[HALO_TRAIN_EVAL_S], "%.9g");
  halo_json_key_double(j, "eval_halo_bytes", e->sum[HALO_TRAIN_EVAL_HALO_B], "%.0f");
  halo_json_key_double(j, "wall_s", e->wall_s, "%.9g");
  halo_json_key_int(j, "ranks", rep->ranks);
  halo_json_object_end(j);
}

void halo_train_evaluation_json(const halo_train_report *rep, int64_t epoch, const char *path,
                                const halo_train_epoch *e, halo_json *j) {
  halo_json_object_begin(j);
  halo_json_key_bool(j, "evaluation", 1);
  halo_json_key_string(j, "checkpoint", path);
  halo_json_key_int(j, "epoch", epoch);
  /* A split without a node has no accuracy (null), as its loss. */
  const int64_t *scored = rep->info->global_scored;
  halo_json_key_double(j, "train_acc", scored[0] ? e->acc[0] : NAN, "%.6f");
  halo_json_key_double(j, "val_acc", scored[1] ? e->acc[1] : NAN, "%.6f");
  halo_json_key_double(j, "test_acc", scored[2] ? e->acc[2] : NAN, "%.6f");
  halo_json_key_double(j, "train_loss", e->eval_loss[0], "%.17g");
  halo_json_key_double(j, "val_loss", e->eval_loss[1], "%.17g");
  halo_json_key_double(j, "test_loss", e->eval_loss[2], "%.17g");
  if (rep->metric != HALO_TRAIN_METRIC_ACC) {
    halo_json_key_double(j, halo_train_metric_key(rep->metric, 0), e->metric[0], "%.6f");
    halo_json_key_double(j, halo_train_metric_key(rep->metric, 1), e->metric[1], "%.6f");
  }
  halo_json_key_double(j, "eval_halo_bytes", e->sum[HALO_TRAIN_EVAL_HALO_B], "%.0f");
  halo_json_key_string(j, "params_sha256", rep->params_sha256);
  halo_json_key_int(j, "ranks", rep->ranks);
  halo_json_object_end(j);
}

/* The --metrics summary line; docs/train.md lists the keys. */
void halo_train_summary_json(const halo_train_report *rep, const halo_train_memory_report *mem,
                             halo_json *j) {
  const double mean = halo_train_mean_epoch_s(rep);
  halo_json_object_begin(j);
  halo_json_key_bool(j, "summary", 1);
  /* A resumed run's summary covers the earlier epochs its file keeps. */
  halo_json_key_int(j, "epochs", rep->prior.epochs + rep->trained);
  halo_json_key_int(j, "epochs_this_run", rep->trained);
  /* A run that trained no epoch evaluated nothing: null (a NaN), not 0. */
  const int measured = rep->prior.epochs + rep->trained > 0;
  const char *m = halo_train_metric_name(rep->metric);
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
  if (rep->metric != HALO_TRAIN_METRIC_ACC)
    halo_json_key_double(j, "final_test_acc", measured ? rep->final_acc : NAN, "%.6f");
  halo_json_key_double(j, "mean_epoch_s", rep->timed > 0 ? mean : NAN, "%.9g");
  halo_json_key_int(j, "warmup_epochs", rep->trained - rep->timed);
  halo_json_key_int(j, "eval_every", rep->eval_every);
  halo_json_key_int(j, "evaluations", rep->evaluations);
  halo_json_key_double(j, "mean_eval_s",
                       rep->evaluations > 0 ? rep->eval_sum / (double)rep->evaluations : NAN,
                       "%.9g");
  halo_json_key_double(j, "wall_s", rep->wall_s, "%.9g");
  halo_json_key_int(j, "total_halo_bytes", rep->total_halo);
  halo_json_key_int(j, "setup_halo_bytes", rep->setup_bytes);
  halo_json_key_int(j, "halo_bytes_predicted_per_epoch", rep->predicted_epoch);
  halo_json_key_int(j, "epochs_off_prediction", rep->mismatches);
  /* The exchange's mode, and what fp32 rows would have moved: the saving
   * is one division. */
  halo_json_key_string(j, "halo_precision", halo_precision_names[rep->gcn->halo_precision]);
  halo_json_key_string(j, "halo_precision_bwd", halo_precision_names[rep->gcn->halo_precision_bwd]);
  halo_json_key_double(j, "halo_sample", rep->gcn->halo_sample, "%.9g");
  halo_json_key_bool(j, "halo_stale", rep->gcn->halo_stale);
  halo_json_key_double(j, "halo_stale_momentum", rep->gcn->halo_stale_momentum, "%.9g");
  halo_json_key_string(j, "halo_aggregate", halo_aggregate_names[rep->gcn->halo_aggregate]);
  halo_json_key_int(j, "halo_rows", rep->halo_rows);
  halo_json_key_int(j, "halo_rows_exchanged", rep->exchanged_rows);
  {
    const halo_model_comm exchanges = halo_model_comm_of(&rep->info->model);
    halo_json_key_int(j, "halo_bytes_fp32_per_epoch",
                      halo_predict_epoch_bytes(rep->halo_rows, &exchanges));
  }
  halo_json_key_int(j, "params", rep->info->params);
  halo_json_key_string(j, "params_sha256", rep->params_sha256);
  halo_json_key_bool(j, "deterministic", rep->gcn->deterministic);
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

halo_status train_totals_digest(halo_train_report *rep, const halo_net *model) {
  halo_status st = HALO_OK;
  float *params = NULL;
  HALO_ALLOC(params, rep->info->params, "the final parameters' copy");
  HALO_TRY(halo_net_params_get(model, params));
  train_params_sha256(params, rep->info->params, rep->params_sha256);
done:
  free(params);
  return st;
}
