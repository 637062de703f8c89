/* halo-train: full-batch GCN training over the shards of one partition run,
 * one MPI rank per part.
 *
 * Phases (each ends in a collective agreement on status, so that one rank's
 * failure stops every rank instead of leaving them in a collective):
 *   args -> backend -> load (manifest + own part) -> resume (checkpoint) ->
 *   memory check -> plan/model -> train (checkpoints saved on the way).
 * Only main() may call MPI_Abort, and only when the agreement itself fails
 * or the watchdog (--timeout) gave up on a peer.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-backend.h"
#include "halo-checkpoint.h"
#include "halo-gcn.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-mpi.h"
#include "halo-predict.h"
#include "halo-shard.h"
#include "halo-train-args.h"
#include "halo-watchdog.h"

/* From OpenBLAS; declared here so that the CLI does not depend on which
 * cblas.h the system puts first on the include path. */
void openblas_set_num_threads(int num_threads);

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

/* Per-epoch figures of one rank, reduced over ranks for the report. */
enum { F_STEP_S, F_COMM_S, F_HALO_B, F_ALLRED_B, F_EVAL_S, F_EVAL_HALO_B, F_COUNT };

typedef struct epoch_report {
  double loss;
  double acc[3];
  double sum[F_COUNT], min[F_COUNT], max[F_COUNT];
} epoch_report;

typedef struct run {
  MPI_Comm comm;
  int rank, size;
  halo_train_args args;
  halo_backend *be;
  halo_manifest *manifest;
  halo_shard *shard;
  halo_gcn *model;
  halo_gcn_info info;
  int threads;
  int64_t halo_rows;       /* Σ over parts */
  int64_t predicted_epoch; /* bytes per epoch, Σ over ranks */
  int64_t setup_bytes;     /* Σ over ranks */
  FILE *metrics;
  int64_t start_epoch;  /* epochs done before this run (resume) */
  halo_checkpoint ckpt; /* resume: the state read; then the save buffers (rank 0) */
  char ckpt_path[4096];
  int fatal;       /* failed inside the epoch loop, where peers may wait in an exchange */
  char held[2048]; /* an error line held for halo_mpi_agree_first */
  /* Memory: the ranks that share this rank's memory (its node's RAM, or its
   * GPU), what check_memory predicted the model takes of it, and what it
   * took (measure_memory); -1 when unknown. */
  MPI_Comm pool;
  int device_memory; /* the pool is a GPU's memory: pool_id */
  int pool_id;
  int64_t mem_predicted, mem_base, mem_used;
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
 * this graph and model and lie within --epochs. */
static halo_status resume_find(run *r) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  HALO_TRY(halo_checkpoint_latest(r->args.checkpoint, c, r->ckpt_path, sizeof r->ckpt_path));
  HALO_TRY(halo_checkpoint_match(c, r->ckpt_path, r->manifest, r->args.model, &r->args.gcn));
  if (c->epoch > r->args.epochs)
    HALO_FAIL(HALO_ERR_ARG, "--epochs %lld: %s is already at epoch %lld (--epochs is the total)",
              (long long)r->args.epochs, r->ckpt_path, (long long)c->epoch);
  HALO_TRY(halo_checkpoint_set_aside_newer(r->args.checkpoint, c->epoch));
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

/* "cuda device 0000:1b:00": a GPU named by its PCI location, the pool id
 * halo_backend_mem_available gives it (domain << 13 | bus << 5 | device). */
static void pool_name(const run *r, int pool, char *out, size_t size) {
  snprintf(out, size, "%s device %04x:%02x:%02x", halo_backend_name(r->be), (pool >> 13) & 0xffff,
           (pool >> 5) & 0xff, pool & 0x1f);
}

/* Refuses, before the model allocates, a part whose model does not fit in
 * what its memory has left: the node's RAM, or with --device cuda its GPU's
 * memory and, for the host copies besides, the node's RAM.  The ranks that
 * share a memory (a node's, or those on one GPU) have their needs summed.
 * The lowest rank that does not fit says so.  Keeps the pool and the
 * baseline that measure_memory compares with: the device's free bytes once
 * every rank of the pool has set up its backend, or this process's
 * resident bytes. */
static halo_status check_memory(run *r) {
  halo_status st = HALO_OK;
  MPI_Comm node = MPI_COMM_NULL;
  halo_gcn_input input;
  halo_gcn_memory est = {0};
  int pool = 0;
  r->device_memory = strcmp(halo_backend_name(r->be), "cpu") != 0;
  r->mem_used = -1;
  /* Widths halo_gcn_create refuses fail alike on every rank, and it reports
   * them; a failed collective ends the job. */
  st = halo_gcn_input_layout(r->comm, r->shard, &r->args.gcn, &input);
  if (st == HALO_ERR_MPI) goto done;
  if (st == HALO_OK)
    (void)halo_gcn_memory_estimate(r->shard, &r->args.gcn, r->device_memory, &input, &est);
  st = HALO_OK;
  /* Clamped, so that no sum over the ranks overflows. */
  const int64_t cap = INT64_MAX / 2 / r->size;
  const int64_t backend = est.backend < cap ? est.backend : cap;
  const int64_t host = est.host < cap ? est.host : cap;
  const int64_t need = r->device_memory ? backend : backend + host;
  int64_t host_sum = 0;

  (void)halo_backend_mem_available(r->be, &pool);
  HALO_MPI(MPI_Comm_split_type(r->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  /* Colour 0: memory of unknown size (nothing to check); device d: d + 1. */
  HALO_MPI(MPI_Comm_split(node, pool < 0 ? 0 : pool + 1, 0, &r->pool));
  HALO_MPI(MPI_Allreduce(&need, &r->mem_predicted, 1, MPI_INT64_T, MPI_SUM, r->pool));
  if (r->device_memory) HALO_MPI(MPI_Allreduce(&host, &host_sum, 1, MPI_INT64_T, MPI_SUM, node));
  /* Read after every rank of the pool holds its CUDA context. */
  HALO_MPI(MPI_Barrier(r->pool));
  const int64_t avail = halo_backend_mem_available(r->be, &pool);
  const int64_t host_avail = r->device_memory ? halo_memory_available() : -1;
  r->pool_id = pool;
  if (r->device_memory)
    r->mem_base = avail;
  else
    r->mem_base = halo_memory_peak_reset() == 0 ? halo_memory_resident() : -1;
  const int fits_pool = avail < 0 || r->mem_predicted <= avail;
  const int fits_host = host_avail < 0 || host_sum <= host_avail;
  const int fits = fits_pool && fits_host;
  int mine[2] = {fits ? INT32_MAX : r->rank, !fits}, first = 0, count = 0;
  HALO_MPI(MPI_Allreduce(&mine[0], &first, 1, MPI_INT, MPI_MIN, r->comm));
  HALO_MPI(MPI_Allreduce(&mine[1], &count, 1, MPI_INT, MPI_SUM, r->comm));
  if (count == 0) goto done;
  st = HALO_ERR_NOMEM;
  if (first == r->rank) {
    char b0[32], b1[32], b2[32];
    char where[48] = "memory";
    if (r->device_memory && fits_pool)
      snprintf(where, sizeof where, "node's memory besides their GPUs");
    else if (r->device_memory)
      pool_name(r, pool, where, sizeof where);
    halo_log_error(
        "rank %d needs about %s for its part's model (%s with the other ranks that "
        "share its %s) but %s is available%s; run on more nodes or with more parts",
        r->rank, halo_memory_str(fits_pool ? host : need, b0, sizeof b0),
        halo_memory_str(fits_pool ? host_sum : r->mem_predicted, b1, sizeof b1), where,
        halo_memory_str(fits_pool ? host_avail : avail, b2, sizeof b2),
        count > 1 ? " (other ranks fall short too)" : "");
  }
done:
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  return st;
}

/* What the model took of its pool's memory so far (r->mem_used, the most
 * seen): on a GPU, the free bytes gone since check_memory, read when every
 * rank of the pool has reached this point; on the host, the pool's ranks'
 * peaks of resident bytes above their baselines, summed.  -1 when a rank
 * cannot tell.  Collective. */
static halo_status measure_memory(run *r) {
  halo_status st = HALO_OK;
  int64_t used = -1, low = 0;
  int pool = 0;
  halo_watch_layer("memory measurement", -1);
  if (r->device_memory) {
    HALO_TRY(halo_watch_barrier(r->pool, "the memory measurement"));
    const int64_t free_now = halo_backend_mem_available(r->be, &pool);
    if (free_now >= 0 && r->mem_base >= 0) used = r->mem_base - free_now;
  } else {
    const int64_t peak = halo_memory_peak();
    if (peak >= 0 && r->mem_base >= 0) used = peak - r->mem_base;
  }
  HALO_TRY(halo_watch_allreduce(&used, &low, 1, MPI_INT64_T, MPI_MIN, r->pool,
                                "the memory measurement"));
  /* One device is seen alike by its ranks; the host's processes add up. */
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, &used, 1, MPI_INT64_T,
                                r->device_memory ? MPI_MAX : MPI_SUM, r->pool,
                                "the memory measurement"));
  if (low < 0) used = -1;
  if (used > r->mem_used) r->mem_used = used;
done:
  return st;
}

/* Saves the state after `epoch` (rank 0 writes; weights are replicated).
 * The buffers were allocated before the epoch loop. Collective. */
static halo_status save_checkpoint(run *r, int64_t epoch) {
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
    HALO_TRY(halo_gcn_params_get(r->model, c->params));
    HALO_TRY(halo_gcn_adam_get(r->model, c->adam_m, c->adam_v, &c->adam_t));
    HALO_TRY(halo_checkpoint_save(r->args.checkpoint, c, r->args.keep, r->ckpt_path,
                                  sizeof r->ckpt_path));
  }
done:
  halo_watch_layer("checkpoint", -1);
  return halo_mpi_agree(r->comm, st);
}

static void print_header(const run *r) {
  const halo_manifest *m = r->manifest;
  const halo_gcn_info *in = &r->info;
  const halo_gcn_options *o = &r->args.gcn;
  const halo_model_desc *d = &in->model;
  const halo_model_comm exchanges = halo_model_comm_of(d);
  char dims[256] = "";
  for (int i = 0, n = 0; i <= d->layers && n < (int)sizeof dims; i++)
    n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%d", i ? "-" : "", d->dims[i]);
  int64_t cagnet = halo_predict_cagnet1d_bytes(m->nodes, m->parts, d->dims, d->layers + 1);
  int64_t bcast = halo_predict_broadcast1d_bytes(m->nodes, m->parts, &exchanges);

  printf(
      "halo-train: graph %s: %lld nodes, %lld edges, %d features, %d classes; "
      "%lld/%lld/%lld train/valid/test\n",
      m->source, (long long)m->nodes, (long long)m->edges, m->features, m->classes,
      (long long)in->global_count[0], (long long)in->global_count[1],
      (long long)in->global_count[2]);
  printf("parts: %d (%s), %lld halo rows in all; %d ranks x %d threads, device %s\n", m->parts,
         m->method, (long long)r->halo_rows, r->size, r->threads, halo_backend_describe(r->be));
  printf(
      "model: gcn %s, %lld parameters, dropout %g (input %g), lr %g, weight decay %g (%s), "
      "seed %llu, features %s%s\n",
      dims, (long long)in->params, o->dropout, o->input_dropout, o->lr, o->weight_decay,
      o->weight_decay_all ? "all layers" : "first layer", (unsigned long long)o->seed,
      in->sparse_features ? "sparse" : "dense", o->normalize_features ? ", row-normalised" : "");
  printf(
      "volume: predicted %.4f MB/epoch halo (%lld floats per halo row), set-up %.4f MB; "
      "CAGNET-1D %.3f MB/epoch (halo/CAGNET = 1/%.0f); 1D broadcast of the same widths "
      "%.3f MB (1/%.0f)\n",
      r->predicted_epoch / 1e6, (long long)halo_predict_epoch_columns(&exchanges),
      r->setup_bytes / 1e6, cagnet / 1e6,
      r->predicted_epoch > 0 ? (double)cagnet / r->predicted_epoch : INFINITY, bcast / 1e6,
      r->predicted_epoch > 0 ? (double)bcast / r->predicted_epoch : INFINITY);
  fflush(stdout);
}

/* Reduces one epoch's figures over ranks (two small allreduces). */
static halo_status reduce_epoch(run *r, const halo_gcn_stats *step, const halo_gcn_stats *eval,
                                epoch_report *out) {
  halo_status st = HALO_OK;
  double mine[F_COUNT] = {[F_STEP_S] = step->seconds,
                          [F_COMM_S] = step->comm_seconds,
                          [F_HALO_B] = (double)step->halo_bytes,
                          [F_ALLRED_B] = (double)step->allreduce_bytes,
                          [F_EVAL_S] = eval->seconds,
                          [F_EVAL_HALO_B] = (double)eval->halo_bytes};
  double sums[F_COUNT + 4], local[F_COUNT + 4];
  double ext[2 * F_COUNT], lext[2 * F_COUNT];
  for (int k = 0; k < F_COUNT; k++) {
    local[k] = mine[k];
    lext[k] = mine[k];
    lext[F_COUNT + k] = -mine[k];
  }
  local[F_COUNT] = step->loss_sum;
  for (int k = 0; k < 3; k++) local[F_COUNT + 1 + k] = (double)eval->correct[k];
  halo_watch_layer("epoch report", -1);
  HALO_TRY(halo_watch_allreduce(local, sums, F_COUNT + 4, MPI_DOUBLE, MPI_SUM, r->comm,
                                "the epoch report"));
  HALO_TRY(halo_watch_allreduce(lext, ext, 2 * F_COUNT, MPI_DOUBLE, MPI_MAX, r->comm,
                                "the epoch report"));
  for (int k = 0; k < F_COUNT; k++) {
    out->sum[k] = sums[k];
    out->max[k] = ext[k];
    out->min[k] = -ext[F_COUNT + k];
  }
  const int64_t *count = r->info.global_count;
  out->loss = count[0] > 0 ? sums[F_COUNT] / (double)count[0] : 0.0;
  for (int k = 0; k < 3; k++)
    out->acc[k] = count[k] > 0 ? sums[F_COUNT + 1 + k] / (double)count[k] : 0.0;
done:
  return st;
}

static void write_epoch_json(const run *r, int64_t epoch, const epoch_report *e) {
  fprintf(r->metrics,
          "{\"epoch\": %lld, \"loss\": %.9g, \"train_acc\": %.6f, \"val_acc\": %.6f, "
          "\"test_acc\": %.6f, \"epoch_s\": %.9g, \"epoch_s_min\": %.9g, \"epoch_s_max\": %.9g, "
          "\"comm_s\": %.9g, \"comm_s_min\": %.9g, \"comm_s_max\": %.9g, "
          "\"halo_bytes\": %.0f, \"halo_bytes_predicted\": %lld, \"halo_bytes_min\": %.0f, "
          "\"halo_bytes_max\": %.0f, \"allreduce_bytes\": %.0f, \"allreduce_bytes_min\": %.0f, "
          "\"allreduce_bytes_max\": %.0f, \"eval_s\": %.9g, \"eval_halo_bytes\": %.0f, "
          "\"ranks\": %d}\n",
          (long long)epoch, e->loss, e->acc[0], e->acc[1], e->acc[2], e->max[F_STEP_S],
          e->min[F_STEP_S], e->max[F_STEP_S], e->sum[F_COMM_S] / r->size, e->min[F_COMM_S],
          e->max[F_COMM_S], e->sum[F_HALO_B], (long long)r->predicted_epoch, e->min[F_HALO_B],
          e->max[F_HALO_B], e->sum[F_ALLRED_B], e->min[F_ALLRED_B], e->max[F_ALLRED_B],
          e->max[F_EVAL_S], e->sum[F_EVAL_HALO_B], r->size);
}

/* A failure inside the epoch loop cannot be agreed on: the other ranks may be
 * waiting for this one's halo rows. It marks the run for MPI_Abort in main. */
static halo_status fatal_if(run *r, halo_status st) {
  if (st < 0) r->fatal = 1;
  return st;
}

/* The pool whose prediction is tightest (the least predicted per byte
 * used), for rank 0's report. */
typedef struct memory_report {
  int64_t used;      /* -1: a rank could not tell */
  int64_t predicted; /* the same pool's prediction */
  int device;        /* the pool's GPU, or -1: a node's RAM */
  int ranks;         /* ranks in that pool */
} memory_report;

/* Collective. */
static halo_status gather_memory(const run *r, memory_report *out) {
  halo_status st = HALO_OK;
  int64_t low = 0;
  int ranks = 0;
  struct {
    double ratio;
    int rank;
  } mine = {r->mem_used > 0 ? (double)r->mem_predicted / (double)r->mem_used : HUGE_VAL, r->rank},
    tightest;
  const char *what = "the memory report";
  *out = (memory_report){.used = -1, .device = -1};
  halo_watch_layer("memory report", -1);
  HALO_MPI(MPI_Comm_size(r->pool, &ranks));
  HALO_TRY(halo_watch_allreduce(&r->mem_used, &low, 1, MPI_INT64_T, MPI_MIN, r->comm, what));
  HALO_TRY(halo_watch_allreduce(&mine, &tightest, 1, MPI_DOUBLE_INT, MPI_MINLOC, r->comm, what));
  /* The tightest rank's figures reach every rank: the others offer the
   * least int64_t, and the maximum keeps the tightest rank's. */
  int64_t figures[4] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
  if (tightest.rank == r->rank) {
    figures[0] = r->mem_used;
    figures[1] = r->mem_predicted;
    figures[2] = r->device_memory ? r->pool_id : -1;
    figures[3] = ranks;
  }
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, figures, 4, MPI_INT64_T, MPI_MAX, r->comm, what));
  out->used = low < 0 ? -1 : figures[0];
  out->predicted = figures[1];
  out->device = (int)figures[2];
  out->ranks = (int)figures[3];
done:
  return st;
}

/* Below this much above the prediction, a use more than twice the
 * prediction is put down to the libraries' fixed costs in the line. */
#define MEMORY_UNMODELLED ((int64_t)64 << 20)

/* Rank 0's "memory:" line, after the summary. */
static void print_memory(const run *r, const memory_report *m) {
  char used[32], predicted[32], where[64];
  if (m->device >= 0)
    pool_name(r, m->device, where, sizeof where);
  else
    snprintf(where, sizeof where, "the node's RAM at the peak");
  if (m->device >= 0) strncat(where, " while training", sizeof where - strlen(where) - 1);
  halo_memory_str(m->predicted, predicted, sizeof predicted);
  if (m->used < 0) {
    printf("memory: predicted %s for the model (%d ranks sharing %s); use not measurable here\n",
           predicted, m->ranks, m->device >= 0 ? "a GPU" : "a node");
    return;
  }
  /* Libraries' own buffers (MPI, OpenBLAS, CUDA's) are not in the estimate:
   * a few MB a rank, which decide the ratio of a small model. */
  const int fixed_costs = m->used > 2 * m->predicted && m->used - m->predicted < MEMORY_UNMODELLED;
  printf("memory: the model took %s of %s (%d rank%s), predicted %s (%.2fx)%s\n",
         halo_memory_str(m->used, used, sizeof used), where, m->ranks, m->ranks > 1 ? "s" : "",
         predicted, m->used > 0 ? (double)m->predicted / (double)m->used : 0.0,
         fixed_costs ? "; most of it is the libraries' own buffers, which the estimate leaves out"
                     : "");
}

static halo_status train(run *r) {
  halo_status st = HALO_OK;
  const halo_train_args *a = &r->args;
  double best_val = -1.0, test_at_best = 0.0, final_test = 0.0, time_sum = 0.0;
  int64_t timed = 0, total_halo = 0, mismatches = 0;
  /* A resumed run shorter than the warm-up still times most of its epochs. */
  int64_t trained = a->epochs - r->start_epoch;
  int64_t warmup = a->warmup < trained ? a->warmup : trained > 10 ? 5 : trained > 1 ? 1 : 0;

  for (int64_t epoch = r->start_epoch + 1; epoch <= a->epochs; epoch++) {
    halo_gcn_stats step = {0}, eval = {0};
    epoch_report e = {0};
    halo_watch_where("step", epoch, -1);
    halo_watch_fault_stall(r->rank, epoch);
    HALO_TRY(fatal_if(r, halo_gcn_step(r->model, epoch, &step)));
    HALO_TRY(fatal_if(r, halo_gcn_evaluate(r->model, &eval)));
    HALO_TRY(reduce_epoch(r, &step, &eval, &e));
    if (epoch == r->start_epoch + 1) HALO_TRY(fatal_if(r, measure_memory(r)));

    int64_t halo = (int64_t)e.sum[F_HALO_B];
    total_halo += halo;
    mismatches += halo != r->predicted_epoch;
    if (epoch > r->start_epoch + warmup) {
      time_sum += e.max[F_STEP_S];
      timed++;
    }
    if (e.acc[1] > best_val) {
      best_val = e.acc[1];
      test_at_best = e.acc[2];
    }
    final_test = e.acc[2];
    if (a->checkpoint && (epoch % a->checkpoint_every == 0 || epoch == a->epochs))
      HALO_TRY(save_checkpoint(r, epoch));
    if (r->rank != 0) continue;
    if (!a->quiet) {
      printf(
          "epoch %4lld  loss %.4f  train %.4f  val %.4f  test %.4f  time %.2f ms (compute "
          "%.2f, comm %.2f)  halo %.4f MB (predicted %.4f)  allreduce %.4f MB\n",
          (long long)epoch, e.loss, e.acc[0], e.acc[1], e.acc[2], 1e3 * e.max[F_STEP_S],
          1e3 * (e.max[F_STEP_S] - e.sum[F_COMM_S] / r->size), 1e3 * e.sum[F_COMM_S] / r->size,
          halo / 1e6, r->predicted_epoch / 1e6, e.sum[F_ALLRED_B] / 1e6);
      fflush(stdout);
    }
    if (r->metrics) write_epoch_json(r, epoch, &e);
  }

  double mean = timed > 0 ? time_sum / (double)timed : 0.0;
  memory_report mem;
  halo_watch_where("end", -1, -1);
  halo_watch_fault_stall(r->rank, a->epochs + 1);
  HALO_TRY(fatal_if(r, measure_memory(r)));
  HALO_TRY(fatal_if(r, gather_memory(r, &mem)));
  if (r->rank == 0) {
    printf(
        "summary: %lld epochs, best val %.4f (test %.4f), final test %.4f, mean epoch %.3f ms "
        "(%lld warm-up epochs excluded), halo %.3f MB in all (%s prediction), set-up %.4f MB\n",
        (long long)trained, best_val < 0 ? 0.0 : best_val, test_at_best, final_test, 1e3 * mean,
        (long long)(trained - timed), total_halo / 1e6,
        mismatches ? "DIFFERS FROM the" : "equal to the", r->setup_bytes / 1e6);
    print_memory(r, &mem);
    if (r->metrics)
      fprintf(r->metrics,
              "{\"summary\": true, \"epochs\": %lld, \"best_val_acc\": %.6f, "
              "\"test_acc_at_best_val\": %.6f, \"final_test_acc\": %.6f, \"mean_epoch_s\": %.9g, "
              "\"warmup_epochs\": %lld, \"total_halo_bytes\": %lld, \"setup_halo_bytes\": %lld, "
              "\"halo_bytes_predicted_per_epoch\": %lld, \"epochs_off_prediction\": %lld, "
              "\"params\": %lld, \"threads\": %d, \"ranks\": %d, \"device\": \"%s\", "
              "\"memory_used_bytes\": %lld, \"memory_predicted_bytes\": %lld, "
              "\"memory_pool\": \"%s\", \"memory_pool_ranks\": %d}\n",
              (long long)trained, best_val < 0 ? 0.0 : best_val, test_at_best, final_test, mean,
              (long long)(trained - timed), (long long)total_halo, (long long)r->setup_bytes,
              (long long)r->predicted_epoch, (long long)mismatches, (long long)r->info.params,
              r->threads, r->size, halo_backend_name(r->be), (long long)mem.used,
              (long long)mem.predicted, mem.device >= 0 ? "device" : "host", mem.ranks);
    fflush(stdout);
  }
  if (mismatches) {
    halo_log_error("measured halo bytes differed from the prediction in %lld epochs",
                   (long long)mismatches);
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

/* --metrics must not overwrite the run's data: a regular FILE that exists
 * and is HDF5 (a part, the manifest, a checkpoint) is refused.  Metrics
 * next to the shards are fine, and so is /dev/stdout or a pipe, which are
 * not read (a read would wait for input that never comes). Local. */
static halo_status check_metrics_path(const halo_train_args *a) {
  halo_status st = HALO_OK;
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {0};
  struct stat sb;
  if (!a->metrics || stat(a->metrics, &sb) != 0 || !S_ISREG(sb.st_mode)) goto done;
  FILE *f = fopen(a->metrics, "rb");
  if (!f) goto done;
  const size_t got = fread(head, 1, sizeof head, f);
  fclose(f);
  if (got == sizeof head && memcmp(head, hdf5, sizeof head) == 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--metrics %s: is an HDF5 file (a shard or a checkpoint?), which the JSON lines "
              "would overwrite; give another name",
              a->metrics);
done:
  return st;
}

/* Everything after MPI_Init, returning the agreed status. */
static halo_status run_all(run *r, int argc, char **argv) {
  halo_status st = HALO_OK;

  HALO_TRY(halo_mpi_agree(r->comm, check_same_args(r, argc, argv)));
  /* Every rank parses the same argv; rank 0 alone reports a bad flag. */
  if (r->rank != 0) halo_log_set_quiet(1);
  st = halo_train_args_parse(argc, argv, &r->args);
  if (st == HALO_OK) st = check_metrics_path(&r->args);
  halo_log_set_quiet(0);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  halo_watch_init(r->comm, r->args.timeout);
  if (r->args.help || r->args.version) {
    if (r->rank == 0 && r->args.help) fputs(halo_train_usage(), stdout);
    if (r->rank == 0 && r->args.version)
      printf("halo-train %s (shard format %d)\n", HALO_VERSION, HALO_SHARD_FORMAT_VERSION);
    goto done;
  }

  r->threads = r->args.threads > 0 ? r->args.threads : halo_mpi_default_threads(r->comm);
  omp_set_num_threads(r->threads);
  openblas_set_num_threads(r->threads);
  halo_mpi_check_binding(r->comm, r->threads);

  halo_backend_options bo = {
      .device = r->args.device, .local_rank = halo_mpi_local_rank(r->comm), .tf32 = r->args.tf32};
  /* No GPU, or a build without CUDA: every rank fails alike; one says so. */
  halo_log_hold(r->held, sizeof r->held);
  st = halo_backend_create(&bo, &r->be);
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));

  st = load(r);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));
  if (r->args.resume) {
    HALO_TRY(resume_read(r));
  } else if (r->args.checkpoint) {
    st = r->rank == 0 ? halo_checkpoint_check_fresh(r->args.checkpoint) : HALO_OK;
    HALO_TRY(halo_mpi_agree(r->comm, st));
  }
  st = check_memory(r);
  HALO_TRY(halo_mpi_agree(r->comm, st));

  HALO_TRY(halo_gcn_create(r->comm, r->be, r->shard, &r->args.gcn, &r->model));
  halo_gcn_info_get(r->model, &r->info);
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
    st = halo_gcn_params_set(r->model, r->ckpt.params);
    if (st == HALO_OK)
      st = halo_gcn_adam_set(r->model, r->ckpt.adam_m, r->ckpt.adam_v, r->ckpt.adam_t);
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
  r->halo_rows = global[0];
  r->setup_bytes = global[1];
  const halo_model_comm exchanges = halo_model_comm_of(&r->info.model);
  r->predicted_epoch = halo_predict_epoch_bytes(r->halo_rows, &exchanges);

  if (r->rank == 0 && r->args.metrics) {
    r->metrics = fopen(r->args.metrics, "w");
    if (!r->metrics) {
      halo_log_error("--metrics %s: cannot open for writing", r->args.metrics);
      st = HALO_ERR_IO;
    }
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  if (r->rank == 0) {
    print_header(r);
    if (r->args.resume)
      printf("resumed from %s (epoch %lld, Adam step %lld); training epochs %lld..%lld\n",
             r->ckpt_path, (long long)r->start_epoch, (long long)r->ckpt.adam_t,
             (long long)r->start_epoch + 1, (long long)r->args.epochs);
    fflush(stdout);
  }

  st = train(r);
  if (r->fatal) goto done;
  HALO_TRY(halo_mpi_agree(r->comm, st));
done:
  return st;
}

int main(int argc, char **argv) {
  run r = {.comm = MPI_COMM_WORLD, .pool = MPI_COMM_NULL};
  char prefix[64];

  /* OpenMP and OpenBLAS threads run between MPI calls; only the main thread
   * calls MPI. */
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "halo-train: error: MPI_Init_thread failed\n");
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(r.comm, &r.rank);
  MPI_Comm_size(r.comm, &r.size);
  snprintf(prefix, sizeof prefix, "[rank %d] halo-train", r.rank);
  halo_log_set_prefix(prefix);

  halo_status st = run_all(&r, argc, argv);

  if (r.metrics && fclose(r.metrics) != 0) {
    halo_log_error("--metrics %s: write failed", r.args.metrics);
    if (st == HALO_OK) st = HALO_ERR_IO;
  }
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
  halo_gcn_destroy(&r.model);
  halo_shard_destroy(&r.shard);
  halo_manifest_destroy(&r.manifest);
  halo_backend_destroy(&r.be);
  halo_checkpoint_clear(&r.ckpt);
  if (r.pool != MPI_COMM_NULL) MPI_Comm_free(&r.pool); /* collective: not before an abort */
  MPI_Finalize();
  return st < 0 ? 1 : 0;
}
