/* halo_train's set-up (halo-train.h): the backend, the load, the resume,
 * the memory check and the model, each phase ending in an agreement on
 * status; then the epochs (train-loop.c) and the clean-up.  The memory
 * admission is train-memory.c, the totals train-totals.c; what rank 0
 * prints and writes is the program's (the report hooks).
 */
#include <dirent.h>
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-atomic.h"
#include "halo-backend.h"
#include "halo-checkpoint.h"
#include "halo-memory.h"
#include "halo-model.h"
#include "halo-mpi.h"
#include "halo-net.h"
#include "halo-predict.h"
#include "halo-profile.h"
#include "halo-sample.h"
#include "halo-shard.h"
#include "halo-train.h"
#include "halo-watchdog.h"
#include "train-impl.h"

/* From OpenBLAS; declared here so that the library does not depend on which
 * cblas.h the system puts first on the include path. */
void openblas_set_num_threads(int num_threads);

static int has_file(const char *dir, const char *name) {
  char path[4096];
  struct stat sb;
  return snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
         stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int is_checkpoint_name(const char *base) {
  return strcmp(base, "best.h5") == 0 || strncmp(base, "ckpt-", 5) == 0;
}

static int holds_checkpoint(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d));) found = is_checkpoint_name(e->d_name);
  closedir(d);
  return found;
}

/* What DIR is when it is not a shard folder, said in one line (Local): a
 * shard or checkpoint file, a checkpoint folder, an input graph.  Returns
 * HALO_OK when DIR holds a manifest, or when DIR is not there at all (the
 * manifest's own open says so). */
static halo_status diagnose_dir(const char *dir) {
  halo_status st = HALO_OK;
  struct stat sb;
  if (stat(dir, &sb) != 0) return HALO_OK;
  const char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : dir;
  if (!S_ISDIR(sb.st_mode)) {
    if (is_checkpoint_name(base))
      HALO_FAIL(HALO_ERR_ARG,
                "%s is a checkpoint file, not a shard folder: give the shards' folder as DIR "
                "and this file to --checkpoint (--eval-only evaluates it)",
                dir);
    if (strcmp(base, "manifest.h5") == 0 || strncmp(base, "part-", 5) == 0)
      HALO_FAIL(HALO_ERR_ARG, "%s is a file of a shard folder: give the folder that holds it",
                dir);
    HALO_FAIL(HALO_ERR_ARG, "%s is a file, not a shard folder (halo-partition --out DIR writes one)",
              dir);
  }
  if (has_file(dir, "manifest.h5")) goto done;
  if (has_file(dir, "best.h5") || holds_checkpoint(dir))
    HALO_FAIL(HALO_ERR_ARG,
              "%s is a checkpoint folder, not a shard folder: give the shards' folder as DIR and "
              "this one as --checkpoint",
              dir);
  if (has_file(dir, "edge.csv") || has_file(dir, "edge.csv.gz") ||
      has_file(dir, "raw/edge.csv.gz") || has_file(dir, "num-node-list.csv") ||
      has_file(dir, "num-node-list.csv.gz") || has_file(dir, "raw/num-node-list.csv.gz"))
    HALO_FAIL(HALO_ERR_ARG,
              "%s is an input graph, not a shard folder: partition it first "
              "(halo-partition --input %s --parts P --out SHARDS), then train SHARDS",
              dir, dir);
done:
  return st;
}

/* The grouping of K parts on P < K ranks (halo_shard_group): the halo rows
 * between every pair of parts come from the parts' /halo/recv_ptr, rank r
 * reading parts r, r + P, ..., and one allreduce gives every rank the same
 * matrix, so the same grouping.  A part that cannot be read here counts no
 * rows (a worse grouping at most): halo_shard_read reports it next. */
static halo_status group_parts(train_run *r, const char *dir, int32_t *group_of) {
  halo_status st = HALO_OK;
  const int32_t parts = r->manifest->parts;
  int64_t *between = NULL, *row = NULL;
  char path[4096];
  if (parts == r->size || parts > HALO_SHARD_GROUP_GREEDY_MAX_PARTS)
    return halo_shard_group(r->manifest->part_owned, NULL, parts, r->size, group_of);
  between = calloc((size_t)parts * (size_t)parts, sizeof *between);
  row = calloc((size_t)parts, sizeof *row);
  /* Every rank reaches the allreduce below, or none does. */
  st = between && row ? HALO_OK : HALO_ERR_NOMEM;
  if (st != HALO_OK) halo_log_error("out of memory for the halo rows between %d parts", parts);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  for (int32_t p = r->rank; p < parts; p += r->size) {
    halo_log_set_quiet(1);
    halo_status read = halo_shard_path(path, sizeof path, dir, p, parts);
    if (read == HALO_OK) read = halo_shard_read_halo_counts(path, parts, row);
    halo_log_set_quiet(0);
    for (int32_t q = 0; q < parts; q++)
      between[(int64_t)q * parts + p] = read == HALO_OK ? row[q] : 0;
  }
  HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, between, parts * parts, MPI_INT64_T, MPI_SUM, r->comm));
  HALO_TRY(halo_shard_group(r->manifest->part_owned, between, parts, r->size, group_of));
done:
  free(between);
  free(row);
  return st;
}

static halo_status load(train_run *r) {
  halo_status st = HALO_OK;
  char path[4096];
  int32_t *group_of = NULL, count = 0;
  halo_shard **mine = NULL;
  const char *dir = r->args.dir;

  if (snprintf(path, sizeof path, "%s/manifest.h5", dir) >= (int)sizeof path)
    HALO_FAIL(HALO_ERR_ARG, "%s: shard folder path too long", dir);
  if (r->rank != 0) halo_log_set_quiet(1);
  st = diagnose_dir(dir);
  halo_log_set_quiet(0);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  /* Every rank reads the manifest, but a fault in it is the same for all:
   * rank 0 reports it, and another rank speaks only if it alone fails.
   * /part (4 bytes per global node, on every rank) stays on disk: nothing
   * here needs it, and each part's digest in the manifest already ties the
   * shard to the assignment /part records (docs/shard-format.md). */
  if (r->rank != 0) halo_log_set_quiet(1);
  st = halo_manifest_read_opts(path, HALO_MANIFEST_NO_PART, &r->manifest);
  if (st == HALO_OK && r->manifest->parts < r->size) {
    halo_log_error(
        "%s: the run has %d parts but %d ranks started (%d parts train on at most %d ranks: "
        "mpirun -np 1 to %d)",
        path, r->manifest->parts, r->size, r->manifest->parts, r->manifest->parts,
        r->manifest->parts);
    st = HALO_ERR_MISMATCH;
  }
  /* --eval-only --checkpoint FILE takes a graph without labels (new nodes
   * to score): the checkpoint gives the class count (unlabelled_as). */
  if (st == HALO_OK &&
      (r->manifest->features < 1 || (r->manifest->classes < 1 && !r->args.eval_file))) {
    halo_log_error(
        "%s: the graph has no node %s (a structure-only input); a GCN needs them: partition it "
        "with %s",
        path, r->manifest->features < 1 ? "features" : "labels",
        r->manifest->features < 1
            ? "--features FILE or --synthetic-features F"
            : "--labels FILE or --synthetic-classes C to train (--eval-only --checkpoint FILE "
              "scores an unlabelled graph)");
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
  /* K parts on P <= K ranks: this rank reads its group's parts and merges
   * them into one shard of a P-part run (halo_shard_merge), so that what
   * follows (the exchange plan, the prediction, the memory estimate) sees
   * one part per rank as before. */
  const int32_t parts = r->manifest->parts;
  HALO_ALLOC(group_of, parts, "the grouping of parts");
  HALO_ALLOC(mine, parts, "this rank's parts");
  HALO_TRY(group_parts(r, dir, group_of));
  for (int32_t p = 0; p < parts; p++) {
    if (group_of[p] != r->rank) continue;
    HALO_TRY(halo_shard_path(path, sizeof path, dir, p, parts));
    HALO_TRY(halo_shard_read(path, r->manifest, &mine[count]));
    /* Counted before the check, so that done: destroys it on a mismatch. */
    const halo_shard *got = mine[count++];
    if (got->part != p)
      HALO_FAIL(HALO_ERR_MISMATCH,
                "%s: holds part %d, not part %d (part files renamed or swapped?)", path,
                (int)got->part, (int)p);
  }
  if (count == 1 && parts == r->size) {
    r->shard = mine[0];
    mine[0] = NULL;
  } else {
    HALO_TRY(halo_shard_merge((const halo_shard *const *)mine, count, group_of, r->size, r->rank,
                              &r->shard));
  }
done:
  for (int32_t i = 0; mine && i < count; i++) halo_shard_destroy(&mine[i]);
  free(mine);
  free(group_of);
  halo_log_hold(NULL, 0);
  halo_log_set_quiet(0);
  return st;
}

/* --resume, on rank 0: the newest valid checkpoint, which must belong to
 * this graph and model and lie within --epochs.  The library's lines name
 * the folder and the files; the flag they came from is set as the log's
 * context around each call. */
static halo_status resume_find(train_run *r) {
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

/* --eval-only --checkpoint FILE, on rank 0: the checkpoint file, whose
 * model settings replace the defaults (a model flag given must agree with
 * it), on any graph of its feature and class counts: no digest check, so
 * that a trained model predicts for new or changed graphs. */
static halo_status eval_file_find(train_run *r) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  halo_train_args *a = &r->args;
  const halo_manifest *m = r->manifest;
  const char *path = a->checkpoint;
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    HALO_FAIL(HALO_ERR_ARG,
              "--eval-only --checkpoint %s: a folder; name one of its files (best.h5, "
              "ckpt-EEEEEEEE.h5), or add --resume to evaluate its newest checkpoint",
              path);
  halo_log_set_context("--checkpoint ");
  HALO_TRY(halo_checkpoint_read(path, c));
  halo_log_set_context(NULL);
  snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s", path);
  if (c->features != m->features || (c->classes != m->classes && m->classes != 0))
    HALO_FAIL(HALO_ERR_MISMATCH,
              "--eval-only --checkpoint %s: a model of %d features and %d classes, but %s has %d "
              "features and %d classes",
              path, c->features, c->classes, a->dir, m->features, m->classes);
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    if (opt->role != HALO_OPTION_MODEL || !a->model_given[i]) continue;
    char was[64], now[64];
    halo_model_option_format(opt, &c->gcn, was, sizeof was);
    halo_model_option_format(opt, &a->gcn, now, sizeof now);
    if (opt->only >= 0 && !halo_model_option_applies(opt, c->gcn.model))
      HALO_FAIL(HALO_ERR_MISMATCH,
                "%s %s: %s is a %s checkpoint, and %s is %s's; an evaluation runs the "
                "checkpoint's model, so leave the flag out",
                opt->flag.name, now, path, c->model, opt->flag.name,
                halo_model_name((halo_model_kind)opt->only));
    if (i == HALO_MOPT_MODEL ? c->gcn.model != a->gcn.model
                             : !halo_model_option_equal(opt, &c->gcn, &a->gcn))
      HALO_FAIL(HALO_ERR_MISMATCH,
                "%s %s: %s is a %s checkpoint with %s %s; an evaluation runs the checkpoint's "
                "model, so leave the flag out",
                opt->flag.name, now, path, c->model, opt->flag.name, was);
  }
  /* The checkpoint's model; this run's training and run settings. */
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    if (opt->role == HALO_OPTION_MODEL && opt->store != HALO_OPTION_NONE)
      halo_model_option_set_number(opt, &a->gcn, halo_model_option_number(opt, &c->gcn));
  }
  a->gcn.model = c->gcn.model;
  snprintf(a->model, sizeof a->model, "%s", c->model);
  /* A model trained without edge weights is evaluated without them, on
   * any graph (a weighted one included): the weights are the graph's, the
   * checkpoint says whether the model used them. */
  if (!c->edge_weighted) a->gcn.no_edge_weights = 1;
  if (a->embeddings && a->embeddings_layer == 0) a->embeddings_layer = a->gcn.layers;
  if (a->embeddings && (a->gcn.layers < 2 || a->embeddings_layer > a->gcn.layers))
    HALO_FAIL(HALO_ERR_ARG,
              "--embeddings%s: %s is a model of %d layer%s (the input of layer 2 to %d)",
              a->embeddings_layer != a->gcn.layers ? "-layer" : "", path, a->gcn.layers,
              a->gcn.layers == 1 ? "" : "s", a->gcn.layers);
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

/* Whether paths x and y name one file: the same inode when both exist,
 * else the same folder (by inode) and the same last name. */
static int same_file(const char *x, const char *y) {
  struct stat sx, sy;
  if (strcmp(x, y) == 0) return 1;
  const int hx = stat(x, &sx) == 0, hy = stat(y, &sy) == 0;
  if (hx || hy) return hx && hy && sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
  const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');
  if (strcmp(bx ? bx + 1 : x, by ? by + 1 : y) != 0) return 0;
  char dx[4096], dy[4096];
  snprintf(dx, sizeof dx, "%.*s", bx ? (int)(bx - x) + 1 : 1, bx ? x : ".");
  snprintf(dy, sizeof dy, "%.*s", by ? (int)(by - y) + 1 : 1, by ? y : ".");
  return stat(dx, &sx) == 0 && stat(dy, &sy) == 0 && sx.st_dev == sy.st_dev &&
         sx.st_ino == sy.st_ino;
}

/* Two outputs (or an output and the --eval-only checkpoint read) that name
 * one file: the second write would replace the first, after the epochs. */
static halo_status check_distinct_outputs(const halo_train_args *a) {
  halo_status st = HALO_OK;
  const struct {
    const char *flag, *path;
  } files[4] = {{"--checkpoint", a->eval_file ? a->checkpoint : NULL},
                {"--predict", a->predict},
                {"--embeddings", a->embeddings},
                {"--metrics", a->metrics && strcmp(a->metrics, "-") != 0 ? a->metrics : NULL}};
  for (int j = 1; j < 4; j++)
    for (int i = 0; i < j && files[j].path; i++)
      if (files[i].path && same_file(files[i].path, files[j].path))
        HALO_FAIL(HALO_ERR_ARG, "%s %s: the same file as %s %s; give each its own name",
                  files[j].flag, files[j].path, files[i].flag, files[i].path);
done:
  return st;
}

halo_status halo_train_check_outputs(const halo_train_args *a) {
  halo_status st = HALO_OK;
  struct stat sb;
  HALO_TRY(check_distinct_outputs(a));
  if (a->predict) HALO_TRY(halo_atomic_check_target(a->predict, a->force, "--predict"));
  if (a->embeddings)
    HALO_TRY(halo_atomic_check_target(a->embeddings, a->force, "--embeddings"));
  /* --eval-only --checkpoint FILE reads FILE: nothing is written there. */
  if (a->checkpoint && !a->eval_file) {
    HALO_TRY(halo_atomic_check_folder(a->checkpoint, "--checkpoint"));
    /* --resume reads the folder, which must be there (--resume auto: or
     * not yet); a fresh run must not mix its saves with an older run's. */
    if (a->resume && !a->resume_auto && stat(a->checkpoint, &sb) != 0)
      HALO_FAIL(HALO_ERR_IO, "--checkpoint %s: cannot open: %s (--resume needs the folder)",
                a->checkpoint, strerror(errno));
    if (!a->resume) HALO_TRY(check_fresh(a->checkpoint));
  }
done:
  return st;
}

/* --resume auto: resume when the folder holds a checkpoint, else start
 * fresh (the first run of a requeued job). Collective. */
static halo_status resume_auto(train_run *r) {
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

/* --eval-only evaluates with fresh float32 rows of the whole graph, as
 * every evaluation does: the training-only exchange modes (given, or
 * recorded in the checkpoint) reserve nothing, and a flag given for them
 * says so. */
static void eval_only_drop_training_modes(train_run *r) {
  static const halo_model_option_id modes[] = {
      HALO_MOPT_HALO_STALE, HALO_MOPT_HALO_STALE_MOMENTUM, HALO_MOPT_HALO_SAMPLE,
      HALO_MOPT_HALO_PRECISION, HALO_MOPT_HALO_PRECISION_BWD};
  if (!r->args.eval_only) return;
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (r->args.model_given[modes[i]] && r->rank == 0)
      halo_log_warn("%s: --eval-only evaluates with fresh float32 rows of the whole graph; "
                    "the flag has no effect",
                    halo_model_option_at(modes[i])->flag.name);
  r->args.gcn.halo_stale = 0;
  r->args.gcn.halo_stale_momentum = 0.0f;
  r->args.gcn.halo_sample = 1.0f;
  r->args.gcn.halo_precision = HALO_PREC_FP32;
  r->args.gcn.halo_precision_bwd = HALO_PREC_FP32;
}

/* Edge weights (docs/models.md, "Edge weights"): GCN and GraphSAGE use
 * the weights a weighted graph's parts hold; --no-edge-weights drops them
 * here, so the model sees the unweighted graph; the models that take no
 * weights (halo_model_edge_weights_refusal) refuse a
 * weighted graph without it.  The manifest is every rank's, so rank 0
 * alone speaks. Collective. */
static halo_status edge_weights_apply(train_run *r) {
  halo_status st = HALO_OK;
  const halo_net_options *o = &r->args.gcn;
  const int weighted = r->manifest->part_edge_weight_digest != NULL;
  const char *refusal = halo_model_edge_weights_refusal(o->model);
  /* What else the weights do not reach: max (PyG's max aggregation takes
   * no weights) and the covers' partial sums (built from the unweighted
   * coefficients). */
  if (o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MAX)
    refusal = "sage's --aggr max takes no edge weights (PyG's max aggregation has no edge_weight)";
  if (o->halo_aggregate == HALO_AGGREGATE_AUTO)
    refusal = "--halo-aggregate auto's partial sums are made without the weights; use post";
  if (weighted && !o->no_edge_weights && refusal) {
    if (r->rank == 0)
      halo_log_error("--model %s: the graph of %s is weighted, and %s; add --no-edge-weights to "
                     "train on the structure alone",
                     halo_model_name(o->model), r->args.dir, refusal);
    st = HALO_ERR_UNSUPPORTED;
  }
  if (st == HALO_OK && o->no_edge_weights && r->shard) {
    free(r->shard->edge_weight);
    free(r->shard->weighted_degree);
    r->shard->edge_weight = NULL;
    r->shard->weighted_degree = NULL;
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  /* A node whose weights sum to 0 (the weighted mean divides by the sum):
   * the first rank that finds one speaks. */
  if (o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MEAN && r->shard->edge_weight) {
    char where[4200];
    snprintf(where, sizeof where, "%s: ", r->args.dir);
    halo_log_hold(r->held, sizeof r->held);
    halo_log_set_context(where);
    st = halo_net_check_weighted_mean(r->shard);
    halo_log_set_context(NULL);
    halo_log_hold(NULL, 0);
    HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));
  }
done:
  return st;
}

/* --resume, or --eval-only --checkpoint FILE: rank 0 finds the
 * checkpoint; every rank then receives it (and with FILE its model). */
/* --eval-only --checkpoint FILE on a graph without labels: its nodes are
 * unlabelled nodes of the checkpoint's `classes` classes (-1 each), in no
 * split, so the evaluation writes outputs alone. Local. */
static halo_status unlabelled_as(train_run *r, int32_t classes) {
  halo_status st = HALO_OK;
  halo_shard *s = r->shard;
  int32_t *labels = NULL;
  HALO_ALLOC(labels, s->n_owned > 0 ? s->n_owned : 1, "the unlabelled nodes' labels");
  for (int64_t i = 0; i < s->n_owned; i++) labels[i] = -1;
  free(s->labels);
  s->labels = labels;
  s->classes = classes;
  s->multilabel = 0;
  r->manifest->classes = classes;
done:
  return st;
}

static halo_status resume_read(train_run *r) {
  halo_status st = HALO_OK;
  halo_checkpoint *c = &r->ckpt;
  if (r->rank == 0) st = r->args.eval_file ? eval_file_find(r) : resume_find(r);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  if (r->args.eval_file) {
    HALO_MPI(MPI_Bcast(&r->args.gcn, (int)sizeof r->args.gcn, MPI_BYTE, 0, r->comm));
    HALO_MPI(MPI_Bcast(r->args.model, (int)sizeof r->args.model, MPI_CHAR, 0, r->comm));
    HALO_MPI(MPI_Bcast(&r->args.embeddings_layer, 1, MPI_INT, 0, r->comm));
    HALO_MPI(MPI_Bcast(&c->classes, 1, MPI_INT32_T, 0, r->comm));
    if (r->manifest->classes == 0) HALO_TRY(halo_mpi_agree(r->comm, unlabelled_as(r, c->classes)));
  }
  int64_t head[4] = {c->epoch, c->adam_t, c->nparams, c->nrunning};
  HALO_MPI(MPI_Bcast(head, 4, MPI_INT64_T, 0, r->comm));
  if (r->rank != 0) {
    st = halo_checkpoint_alloc(c, head[2], head[3]);
    c->epoch = head[0];
    c->adam_t = head[1];
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  float *arrays[3] = {c->params, c->adam_m, c->adam_v};
  for (int k = 0; k < 3; k++) HALO_TRY(halo_mpi_bcast_floats(arrays[k], c->nparams, 0, r->comm));
  /* The checkpoint's settings and schedule state, which the resume reads on
   * every rank (resume_optimizer). */
  HALO_MPI(MPI_Bcast(&c->gcn, (int)sizeof c->gcn, MPI_BYTE, 0, r->comm));
  HALO_MPI(MPI_Bcast(&c->plateau, (int)sizeof c->plateau, MPI_BYTE, 0, r->comm));
  HALO_MPI(MPI_Bcast(&c->lr, 1, MPI_FLOAT, 0, r->comm));
  if (c->nrunning > 0) HALO_TRY(halo_mpi_bcast_floats(c->bn_running, c->nrunning, 0, r->comm));
done:
  return st;
}

/* A resumed run's optimiser: the checkpoint's state, unless this run
 * changes what it means.  Adam and AdamW share their moments; SGD's
 * momentum buffer is not Adam's first moment, so a change between the two
 * families starts the optimiser afresh (zero state, step 0), as torch would
 * with a new optimiser.  The plateau schedule continues from its state
 * unless this run changes the schedule or the --lr it reduces.  Rank 0
 * says what started afresh. Local. */
static halo_status resume_optimizer(train_run *r) {
  halo_checkpoint *c = &r->ckpt;
  const halo_net_options *was = &c->gcn, *now = &r->args.gcn;
  const int was_sgd = was->optimizer == HALO_OPTIMIZER_SGD;
  const int now_sgd = now->optimizer == HALO_OPTIMIZER_SGD;
  if (was_sgd != now_sgd && !r->args.eval_only) {
    memset(c->adam_m, 0, (size_t)c->nparams * sizeof *c->adam_m);
    memset(c->adam_v, 0, (size_t)c->nparams * sizeof *c->adam_v);
    c->adam_t = 0;
    if (r->rank == 0)
      halo_log_warn("--optimizer %s: %s holds %s's state, so the optimiser starts afresh",
                    halo_optimizer_names[now->optimizer], r->ckpt_path,
                    halo_optimizer_names[was->optimizer]);
  }
  if (now->lr_schedule == HALO_LR_PLATEAU && was->lr_schedule == HALO_LR_PLATEAU &&
      was->lr == now->lr)
    r->plateau = c->plateau;
  return halo_net_adam_set(r->model, c->adam_m, c->adam_v, c->adam_t);
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

halo_status halo_train_check_same_args(MPI_Comm comm, int argc, char **argv) {
  halo_status st = HALO_OK;
  uint64_t root = argv_hash(argc, argv);
  int rank = 0, mine = INT32_MAX, first = INT32_MAX;
  HALO_MPI(MPI_Comm_rank(comm, &rank));
  HALO_MPI(MPI_Bcast(&root, 1, MPI_UINT64_T, 0, comm));
  if (root != argv_hash(argc, argv)) mine = rank;
  HALO_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == INT32_MAX) goto done;
  st = HALO_ERR_ARG;
  if (rank == 0)
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
static void warn_binding(const train_run *r, int threads) {
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

/* Everything from the watchdog to the end of the epochs, returning the
 * agreed status. */
static halo_status run_all(train_run *r, const halo_train_env *env) {
  halo_status st = HALO_OK;

  const halo_watch_options wo = {.timeout_s = r->args.timeout,
                                 .stall = env->stall,
                                 .stall_rank = env->stall_rank,
                                 .stall_epoch = env->stall_epoch};
  halo_watch_init(r->comm, &wo);

  /* The outputs first, so that a bad name fails in seconds, before the
   * shards are read: rank 0 checks, every rank agrees. */
  HALO_TRY(halo_mpi_agree(r->comm, r->rank == 0 ? halo_train_check_outputs(&r->args) : HALO_OK));

  /* The default leaves out the cores other processes keep busy
   * (train-cores.c), sampled while every rank sleeps: after an agreement,
   * before anything is loaded. */
  int threads = r->args.threads;
  if (threads <= 0) {
    threads = halo_mpi_default_threads(r->comm);
    const int busy = threads > 1 ? halo_train_busy_cores(100) : 0;
    const int cores = halo_mpi_allowed_cores(), ranks = halo_mpi_local_ranks(r->comm);
    if (busy > 0) {
      const int fit = (cores - busy) / (ranks > 0 ? ranks : 1);
      r->report.busy_cores = busy;
      r->report.cores = cores;
      threads = fit > 1 ? (fit < threads ? fit : threads) : 1;
    }
  }
  /* OpenBLAS on one thread a call: halo_cpu_gemm splits CBLAS's products
   * over the OpenMP team, the only pool (kernels/cpu-gemm.c).  First: an
   * OpenMP build of OpenBLAS sets the team's size with it too. */
  openblas_set_num_threads(1);
  omp_set_num_threads(threads);
  warn_binding(r, threads);

  const halo_backend_options bo = {
      .device = r->args.device,
      .local_rank = halo_mpi_local_rank(r->comm),
      .tf32 = r->args.tf32,
      .spmm = env->cuda_spmm_rows ? HALO_BACKEND_SPMM_ROWS : HALO_BACKEND_SPMM_CUSPARSE,
      .mpi = env->cuda_aware < 0    ? HALO_BACKEND_MPI_ASK
             : env->cuda_aware == 1 ? HALO_BACKEND_MPI_DEVICE
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

  /* --profile times the ops of the table halo_net_create takes. */
  if (r->args.profile) HALO_TRY(halo_profile_install(r->be));

  st = load(r);
  HALO_TRY(halo_mpi_agree_first(r->comm, st, r->held));
  if (r->args.resume_auto) HALO_TRY(resume_auto(r));
  if (r->args.resume || r->args.eval_file) HALO_TRY(resume_read(r));
  eval_only_drop_training_modes(r);
  HALO_TRY(edge_weights_apply(r));
  st = train_memory_check(&r->memory, r->comm, r->be, r->shard, &r->args.gcn);
  HALO_TRY(halo_mpi_agree(r->comm, st));

  r->args.gcn.eval_only = r->args.eval_only; /* new nodes to score need no train node */
  HALO_TRY(halo_net_create(r->comm, r->be, r->shard, &r->args.gcn, &r->model));
  halo_net_info_get(r->model, &r->info);
  halo_plateau_init(&r->plateau, &r->args.gcn);
  r->lr = r->args.gcn.lr;
  /* Multi-label runs (ogbn-proteins) are compared by their mean ROC-AUC. */
  if (r->info.multilabel && !r->args.metric_given) r->args.metric = HALO_TRAIN_METRIC_AUC;
  /* --predict, --embeddings and --metric f1|auc need each row's node (and
   * label and split). */
  if (r->args.predict || r->args.embeddings || r->args.metric != HALO_TRAIN_METRIC_ACC)
    st = train_predict_init(&r->predict, r->shard);
  const int classes = r->info.model.dims[r->info.model.layers];
  if (st == HALO_OK && r->args.metric == HALO_TRAIN_METRIC_AUC && classes != 2 &&
      !r->info.multilabel) {
    if (r->rank == 0)
      halo_log_error(
          "--metric auc: ROC-AUC is a binary task's, and this graph has %d classes; "
          "use --metric f1 or acc",
          classes);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && r->args.early_stop) {
    /* The parameters, then BatchNorm's running statistics. */
    r->best = calloc((size_t)(r->info.params + r->info.model.running), sizeof *r->best);
    if (!r->best) {
      halo_log_error("out of memory for the best epoch's parameters");
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  /* --halo-sample: the prediction draws from the halo rows' ids each epoch. */
  if (halo_sample_on(r->args.gcn.halo_sample) && !r->args.eval_only) {
    st = HALO_CALLOC(r->halo_gid, r->shard->n_halo) ? HALO_OK : HALO_ERR_NOMEM;
    if (st == HALO_OK)
      memcpy(r->halo_gid, r->shard->global_id + r->shard->n_owned,
             (size_t)r->shard->n_halo * sizeof(int64_t));
    else
      halo_log_error("out of memory keeping the halo rows' ids");
    r->n_halo_gid = r->shard->n_halo;
  }
  HALO_TRY(halo_mpi_agree(r->comm, st));
  halo_shard_destroy(&r->shard); /* the model holds what it needs */
  if (r->args.resume || r->args.eval_file) {
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
    if (r->ckpt.nrunning != r->info.model.running) {
      /* The options agree (the description was compared), so only a
       * damaged file gets here. */
      if (r->rank == 0)
        halo_log_error("--resume: %s holds %lld BatchNorm statistics; this model has %lld",
                       r->ckpt_path, (long long)r->ckpt.nrunning,
                       (long long)r->info.model.running);
      st = HALO_ERR_MISMATCH;
      goto done;
    }
    st = halo_net_params_set(r->model, r->ckpt.params);
    if (st == HALO_OK) st = resume_optimizer(r);
    if (st == HALO_OK) halo_net_bn_running_set(r->model, r->ckpt.bn_running);
    HALO_TRY(halo_mpi_agree(r->comm, st));
    r->start_epoch = r->ckpt.epoch;
  }
  /* The save buffers, allocated before the epoch loop; a resumed run reuses
   * the ones it read, and an evaluation of a checkpoint file saves nothing
   * (its --checkpoint is the file read, whose arrays these would replace). */
  if (r->args.checkpoint && r->rank == 0 && !r->args.resume && !r->args.eval_file)
    st = halo_checkpoint_alloc(&r->ckpt, r->info.params, r->info.model.running);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  int64_t local[3] = {r->info.n_halo, r->info.setup_halo_bytes, r->info.n_halo_exchanged},
          global[3];
  HALO_MPI(MPI_Allreduce(local, global, 3, MPI_INT64_T, MPI_SUM, r->comm));
  const halo_model_comm exchanges = halo_model_comm_of(&r->info.model);
  halo_train_report *rep = &r->report;
  rep->comm = r->comm;
  rep->rank = r->rank;
  rep->ranks = r->size;
  rep->threads = threads;
  rep->wait = env->wait;
  rep->quiet = r->args.quiet;
  rep->manifest = r->manifest;
  rep->info = &r->info;
  rep->gcn = &r->args.gcn;
  rep->be = r->be;
  rep->halo_rows = global[0];
  rep->setup_bytes = global[1];
  rep->exchanged_rows = global[2];
  rep->kept_rows = rep->exchanged_rows;
  rep->predicted_epoch = halo_predict_epoch_bytes_at(rep->exchanged_rows, &exchanges,
                                                     r->args.gcn.halo_precision,
                                                     r->args.gcn.halo_precision_bwd);
  rep->metric = (halo_train_metric)r->args.metric;
  rep->eval_every = r->args.eval_every;

  if (r->rank == 0 && r->args.metrics)
    st = r->ops->open(r->ctx, rep, r->args.eval_only ? -1 : r->start_epoch);
  HALO_TRY(halo_mpi_agree(r->comm, st));
  /* The earlier epochs rank 0 found in the file: every rank's report (and
   * so its early stopping) must count them alike. */
  HALO_MPI(MPI_Bcast(&rep->prior, (int)sizeof rep->prior, MPI_BYTE, 0, r->comm));
  if (r->rank == 0) {
    r->ops->header(r->ctx, rep);
    if (r->args.resume && !r->args.eval_only)
      r->ops->resumed(r->ctx, rep, r->ckpt_path, r->start_epoch, r->ckpt.adam_t, r->args.epochs);
  }

  st = r->args.eval_only ? train_evaluate_only(r) : train_epochs(r);
  if (r->fatal) goto done;
  HALO_TRY(halo_mpi_agree(r->comm, st));
done:
  return st;
}

halo_status halo_train_run(MPI_Comm comm, const halo_train_args *args, const halo_train_env *env,
                           const halo_train_report_ops *ops, void *ctx, halo_train_result *out) {
  train_run r = {.comm = comm, .args = *args, .ops = ops, .ctx = ctx};
  r.memory.pool = MPI_COMM_NULL;
  MPI_Comm_rank(comm, &r.rank);
  MPI_Comm_size(comm, &r.size);

  const halo_status st = run_all(&r, env);
  *out = (halo_train_result){.stopped_by = r.stopped_by, .nonfinite = r.nonfinite};
  if (st == HALO_ERR_MPI || st == HALO_ERR_TIMEOUT || r.fatal) {
    /* The caller aborts the job; nothing may be freed before (halo-train.h). */
    out->abort = 1;
    return st;
  }
  halo_net_destroy(&r.model);
  halo_shard_destroy(&r.shard);
  halo_manifest_destroy(&r.manifest);
  halo_backend_destroy(&r.be);
  halo_checkpoint_clear(&r.ckpt);
  train_predict_free(&r.predict);
  free(r.best);
  free(r.halo_gid);
  train_memory_free(&r.memory); /* collective: not before an abort */
  return st;
}
