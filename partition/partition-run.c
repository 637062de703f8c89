/* halo-partition's run (halo-partition-run.h): the checks of the outputs
 * and the node data, then load, clean-up, partition and shards, put into
 * place with the JSON and reported; or the distributed run around
 * halo_partition_dist_run. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "halo-dpartition.h"
#include "halo-memory.h"
#include "halo-model-options.h"
#include "halo-mpi.h"
#include "halo-partition-run.h"
#include "halo-predict.h"
#include "halo-sample.h"

/* Progress lines appear for inputs of more than this many edges. */
enum { PROGRESS_EDGES = 1000000 };

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static void timing_start(halo_partition_timing *t) {
  *t = (halo_partition_timing){
      .wall_start = now_s(), .cpu_start = clock_s(CLOCK_PROCESS_CPUTIME_ID), .ranks = 1};
  t->wall_mark = t->wall_start;
  t->cpu_mark = t->cpu_start;
}

/* Charges the time since the last lap to `phase`, and updates the total. */
static void timing_lap(halo_partition_timing *t, int phase) {
  double wall = now_s(), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  t->wall[phase] += wall - t->wall_mark;
  t->cpu[phase] += cpu - t->cpu_mark;
  t->wall[HALO_RUN_TOTAL] = wall - t->wall_start;
  t->cpu[HALO_RUN_TOTAL] = cpu - t->cpu_start;
  t->wall_mark = wall;
  t->cpu_mark = cpu;
}

halo_status halo_partition_predict(const halo_partition_run_request *c,
                                   const halo_partition_stats *s, halo_partition_prediction *out) {
  halo_status st = HALO_OK;
  if (c->model.train_eps && c->model.kind != HALO_MODEL_GIN)
    HALO_FAIL(HALO_ERR_ARG, "--gin-train-eps: the model is %s, not gin",
              halo_model_name(c->model.kind));
  if ((c->halo_precision || c->halo_precision_bwd) && c->model.kind == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-precision: gat exchanges several blocks per layer (features and "
              "attention scores), which the low-bit rows do not cover; use fp32");
  if (c->halo_stale && c->model.kind == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-stale: gat exchanges two blocks per layer (features, then attention "
              "scores computed from them), which one stale slot per layer does not cover");
  if (c->halo_aggregate == HALO_AGGREGATE_AUTO && c->model.kind == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-aggregate auto: gat's attention weighs each edge by the receiver's row and "
              "the sender's together, so no sender can sum for the receiver; use post");
  if ((c->halo_precision || c->halo_precision_bwd) && c->model.sage_max)
    HALO_FAIL(HALO_ERR_ARG, "--halo-precision: sage --aggr max exchanges arg-max ids, which the "
                            "low-bit rows do not carry; use fp32");
  halo_model_config model = c->model;
  model.mlp_hidden = c->ndims >= 3 ? c->dims[1] : 16;
  model.input_dropout = 1;
  model.eval_cache = 1; /* halo-train's default */
  HALO_TRY(halo_model_describe(&model, c->dims, c->ndims, &out->dropout));
  model.input_dropout = 0;
  HALO_TRY(halo_model_describe(&model, c->dims, c->ndims, &out->no_dropout));
  const halo_model_comm dropout = halo_model_comm_of(&out->dropout);
  const halo_model_comm no_dropout = halo_model_comm_of(&out->no_dropout);
  /* The rows one exchange moves: every halo row, or the cuts' covers. */
  const int64_t rows = c->halo_aggregate == HALO_AGGREGATE_AUTO ? s->cover_volume : s->comm_volume;
  out->rows = rows;
  out->epoch =
      halo_predict_epoch_bytes_at(rows, &dropout, c->halo_precision, c->halo_precision_bwd);
  out->epoch_static =
      halo_predict_epoch_bytes_at(rows, &no_dropout, c->halo_precision, c->halo_precision_bwd);
  out->setup = halo_predict_setup_bytes(rows, &no_dropout);
  out->setup_dropout = halo_predict_setup_bytes(rows, &dropout);
  out->epoch_plain = halo_predict_epoch_bytes(s->comm_volume, &dropout);
  out->cagnet1d = halo_predict_cagnet1d_bytes(s->nodes, s->parts, c->dims, c->ndims);
  out->broadcast1d = halo_predict_broadcast1d_bytes(s->nodes, s->parts, &dropout);
done:
  return st;
}

/* ---- progress -------------------------------------------------------- */

typedef struct progress {
  int on;
  double t0;
} progress;

static void phase(const progress *pg, const char *what) {
  if (pg->on) fprintf(stderr, "halo-partition: [%7.1f s] %s\n", now_s() - pg->t0, what);
}

static void write_progress(void *ctx, int64_t done, int64_t total) {
  const progress *pg = ctx;
  if (!pg->on) return;
  fprintf(stderr, "\rhalo-partition: [%7.1f s] wrote part %" PRId64 " of %" PRId64,
          now_s() - pg->t0, done, total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- checks ---------------------------------------------------------- */

/* 1 when `path` lies somewhere below the folder `folder` (by device and
 * inode), 0 when not, -1 when out of memory.  Walks up from path's folder
 * through "..", to the root (its own parent), so symbolic links and other
 * spellings of the folder are seen through. */
static int inside_folder(const char *path, const struct stat *folder) {
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) + 1 : 0, cap = len + 3 * 256 + 2;
  char *up = malloc(cap);
  int inside = 0;
  if (!up) return -1;
  snprintf(up, cap, "%.*s.", (int)len, path);
  for (int level = 0; level < 256 && !inside; level++) {
    struct stat sb, parent_sb;
    if (stat(up, &sb) != 0) break;
    inside = sb.st_dev == folder->st_dev && sb.st_ino == folder->st_ino;
    strcat(up, "/..");
    if (stat(up, &parent_sb) != 0 ||
        (parent_sb.st_dev == sb.st_dev && parent_sb.st_ino == sb.st_ino))
      break;
  }
  free(up);
  return inside;
}

/* Refuses an output file `path` (of `flag`) that would overwrite what is
 * being read: the input file, a --features or --labels file, or, for a
 * folder input (OGB), a file already inside that folder; and one inside an
 * existing --out DIR, which is moved aside and deleted with the file in it.
 * Files are compared by device and inode, so another spelling of the same
 * path ("./g.txt", a hard link) is caught too.  A file that does not exist
 * yet overwrites nothing, so only DIR is checked for it. */
static halo_status check_not_input(const halo_partition_run_request *c, const char *flag,
                                   const char *path) {
  halo_status st = HALO_OK;
  struct stat out_sb, in_sb;
  int inside = 0;
  if (c->out && !c->write_metis && stat(c->out, &in_sb) == 0 && S_ISDIR(in_sb.st_mode) &&
      (inside = inside_folder(path, &in_sb)) != 0) {
    if (inside < 0) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
    HALO_FAIL(HALO_ERR_ARG, "%s %s: is inside the output folder %s, which is replaced", flag, path,
              c->out);
  }
  if (stat(path, &out_sb) != 0) goto done;
  const char *inputs[3][2] = {
      {"input", c->input}, {"--features", c->features}, {"--labels", c->labels}};
  for (int k = 0; k < 3; k++) {
    const char *in = inputs[k][1];
    if (!in || stat(in, &in_sb) != 0) continue; /* a spec, or the loader's error to report */
    if (in_sb.st_dev == out_sb.st_dev && in_sb.st_ino == out_sb.st_ino)
      HALO_FAIL(HALO_ERR_ARG, "%s %s: is the %s file %s; writing it would destroy it", flag, path,
                inputs[k][0], in);
    if (S_ISDIR(in_sb.st_mode) && (inside = inside_folder(path, &in_sb)) != 0) {
      if (inside < 0) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
      HALO_FAIL(HALO_ERR_ARG,
                "%s %s: is a file inside the input folder %s; writing it could destroy the "
                "dataset",
                flag, path, in);
    }
  }
done:
  return st;
}

/* --out DIR, before halo_outdir_open, which refuses the same without
 * naming the flags: a name ending in "." or "..", which could never be
 * renamed into place, and an existing folder without --force. */
static halo_status check_out(const char *dir, int force) {
  halo_status st = HALO_OK;
  char *name = strdup(dir);
  struct stat sb;
  if (!name) HALO_FAIL(HALO_ERR_NOMEM, "out of memory");
  size_t len = strlen(name);
  while (len > 1 && name[len - 1] == '/') name[--len] = '\0';
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    HALO_FAIL(HALO_ERR_ARG, "--out %s: ends in '%s'; name the output folder itself", dir, base);
  if (!force && lstat(name, &sb) == 0 && S_ISDIR(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS, "output folder %s already exists (pass --force to replace it)",
              name);
done:
  free(name);
  return st;
}

/* An output FILE of `flag` that exists as a regular file, without --force,
 * before halo_outfile_open, which refuses it without naming --force. */
static halo_status check_out_file(const char *flag, const char *path, int force) {
  halo_status st = HALO_OK;
  struct stat sb;
  /* /dev/stdout is a link to a device: never written through, but named. */
  if (strcmp(flag, "--json") == 0 && *path && lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS,
              "--json %s: exists and is not a regular file; not replacing it (--json - writes "
              "the JSON to standard output)",
              path);
  if (!force && *path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
    HALO_FAIL(HALO_ERR_EXISTS, "%s %s: already exists (pass --force to replace it)", flag, path);
done:
  return st;
}

/* --features, --labels and --synthetic-* are for structure-only inputs:
 * given for an input that has node data of its own, they would replace it
 * without a word. */
static halo_status check_node_data(const halo_partition_run_request *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  if (c->features && g->features > 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--features %s: %s already has %d features; --features is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              c->features, g->source, g->features);
  if (c->labels && (g->classes > 0 || g->labels))
    HALO_FAIL(HALO_ERR_ARG,
              "--labels %s: %s already has labels (%d classes); --labels is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              c->labels, g->source, g->classes);
  if (c->synth_features && (g->features > 0 || g->classes > 0 || g->labels || g->split))
    HALO_FAIL(HALO_ERR_ARG,
              "--synthetic-features: %s already has node data (%d features, %d classes); "
              "--synthetic-* are for structure-only inputs (edge lists, Matrix Market, rmat)",
              g->source, g->features, g->classes);
done:
  return st;
}

/* Shards that halo-train will refuse are still written (they partition
 * well, and another tool may read them), with a warning that says why and
 * which flag adds what is missing. */
static void warn_untrainable_counts(const halo_graph *g, int has_split, int64_t train) {
  if (g->features == 0)
    halo_log_warn(
        "%s has no node features: halo-train will refuse these shards (give "
        "--features FILE or --synthetic-features F --synthetic-classes C)",
        g->source);
  if (g->classes == 0)
    halo_log_warn(
        "%s has no labels: halo-train will refuse to train on these shards (give --labels FILE "
        "or --synthetic-features F --synthetic-classes C; halo-train --eval-only --checkpoint "
        "FILE scores them)",
        g->source);
  if (train == 0)
    halo_log_warn(
        "%s has %s: halo-train will refuse to train on these shards (no part has a train "
        "node; give --split DIR or --synthetic-split 0.6,0.2,0.2; halo-train --eval-only "
        "--checkpoint FILE scores them)",
        g->source, has_split ? "no node in the train split" : "no split");
}

/* The same for a graph that holds its split (a sequential run's). */
static void warn_untrainable(const halo_graph *g) {
  int64_t train = 0;
  for (int64_t v = 0; g->split && v < g->n; v++) train += g->split[v] == HALO_SPLIT_TRAIN;
  warn_untrainable_counts(g, g->split != NULL, train);
}

/* The clean-up needs two arrays of n + 1 offsets beside the graph (row
 * shifts and fill positions when it adds reverse edges): refuse up front,
 * with the sizes, rather than be killed half-way by the kernel. */
static halo_status check_clean_memory(const halo_graph *g) {
  halo_status st = HALO_OK;
  const double need = 16.0 * ((double)g->n + 1.0);
  const int64_t avail = halo_memory_available();
  if (avail < 0 || need <= (double)avail) goto done;
  char b0[32], b1[32];
  HALO_FAIL(HALO_ERR_NOMEM,
            "%s: cleaning %lld nodes needs about %s more memory, but %s is available", g->source,
            (long long)g->n, halo_memory_str((int64_t)need, b0, sizeof b0),
            halo_memory_str(avail, b1, sizeof b1));
done:
  return st;
}

/* METIS' idx_t cannot index a graph past its limit; Scotch's int64 build
 * can, so the default method hands such a graph to it, with one line that
 * says why.  The manifest and the summary then name scotch.  A METIS run
 * then checks the seed it was not checked for at parse time. */
static halo_status switch_past_metis_limit(halo_partition_run_request *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t limit = halo_partition_metis_limit();
  if (c->opt.method != HALO_METHOD_METIS || c->opt.parts < 2) goto done;
  if (g->n <= limit && g->m <= limit) {
    if (c->opt.seed > halo_partition_metis_seed_max())
      HALO_FAIL(HALO_ERR_ARG,
                "--seed: %lld is out of range [0, %lld] for METIS (the scotch and random methods "
                "take any seed)",
                (long long)c->opt.seed, (long long)halo_partition_metis_seed_max());
    goto done;
  }
  halo_log_warn(
      "%s: %" PRId64 " nodes and %" PRId64 " directed edges exceed METIS' limit of %" PRId64
      " (its idx_t): partitioning with scotch instead%s",
      g->source, g->n, g->m, limit,
      c->opt.objective == HALO_OBJECTIVE_VOL ? ", for the edge cut (vol is METIS' only)" : "");
  c->opt.method = HALO_METHOD_SCOTCH;
  c->opt.objective = HALO_OBJECTIVE_CUT;
  c->metis_switched = 1;
done:
  return st;
}

/* --dims against the input's widths. */
static halo_status check_dims(const halo_partition_run_request *c, const halo_graph *g) {
  halo_status st = HALO_OK;
  if (c->ndims == 0) goto done;
  if (g->features > 0 && c->dims[0] != g->features)
    HALO_FAIL(HALO_ERR_ARG, "--dims: input width %d does not match the %d features of %s",
              c->dims[0], g->features, g->source);
  if (g->classes > 0 && c->dims[c->ndims - 1] != g->classes)
    HALO_FAIL(HALO_ERR_ARG, "--dims: output width %d does not match the %d classes of %s",
              c->dims[c->ndims - 1], g->classes, g->source);
done:
  return st;
}

/* ---- the run --------------------------------------------------------- */

/* The outputs a run writes, opened before any work, so that an unusable
 * one (an output that is an input, a device or folder where a file goes,
 * an existing one without --force) is refused at once. */
typedef struct outputs {
  halo_outdir *dir;
  halo_outfile *json, *metis;
  int json_stdout; /* --json - puts the JSON alone on stdout; the table then goes to stderr */
} outputs;

static halo_status outputs_open(const halo_partition_run_request *c, outputs *o) {
  halo_status st = HALO_OK;
  o->json_stdout = c->json && strcmp(c->json, "-") == 0;
  if (c->json && !o->json_stdout) HALO_TRY(check_not_input(c, "--json", c->json));
  if (c->write_metis) HALO_TRY(check_not_input(c, "--write-metis", c->write_metis));
  if (!c->write_metis) {
    HALO_TRY(check_out(c->out, c->force));
    HALO_TRY(halo_outdir_open(c->out, c->force, &o->dir));
  }
  if (c->json && !o->json_stdout) {
    HALO_TRY(check_out_file("--json", c->json, c->force));
    HALO_TRY(halo_outfile_open(c->json, "--json", c->force, &o->json));
  }
  if (c->write_metis) {
    HALO_TRY(check_out_file("--write-metis", c->write_metis, c->force));
    HALO_TRY(halo_outfile_open(c->write_metis, "--write-metis", c->force, &o->metis));
  }
done:
  return st;
}

static void outputs_close(outputs *o) {
  halo_outfile_close(&o->json);
  halo_outfile_close(&o->metis);
  halo_outdir_close(&o->dir);
}

/* A finished partition's outputs: the prediction, the JSON, the folder put
 * into place, and the table.  The JSON goes into place before DIR, and is
 * taken back if DIR cannot follow: a failure leaves neither
 * (docs/partition.md, "Errors"). */
/* --halo-sample: each epoch's halo rows that halo-train's keyed draw keeps,
 * over all parts: node v is a halo row of every other part it has a
 * neighbour in, and crosses in epoch e iff halo_sample_keep says so
 * (halo_predict_sample_rows over the ids of those rows). rows[e - 1] for
 * e = 1..c->sample_epochs. Local. */
static halo_status sampled_rows(const halo_partition_run_request *c, const halo_graph *g,
                                const int32_t *part, int64_t *rows) {
  halo_status st = HALO_OK;
  int64_t *seen = NULL, *ids = NULL, n = 0;
  HALO_ALLOC(seen, c->opt.parts, "the sampled prediction");
  HALO_ALLOC(ids, g->indptr[g->n] + 1, "the sampled prediction");
  for (int32_t q = 0; q < c->opt.parts; q++) seen[q] = -1;
  /* One id per (node, other part it neighbours): the halo rows of all parts. */
  for (int64_t v = 0; v < g->n; v++)
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      const int32_t q = part[g->indices[k]];
      if (q == part[v] || seen[q] == v) continue;
      seen[q] = v;
      ids[n++] = v;
    }
  for (int32_t e = 1; e <= c->sample_epochs; e++)
    rows[e - 1] = halo_predict_sample_rows(ids, n, c->sample_seed, e, c->halo_sample);
done:
  free(seen);
  free(ids);
  return st;
}

static halo_status publish(const halo_partition_run_request *c, const halo_graph *g,
                           const halo_clean_report *clean, const halo_partition_stats *stats,
                           const int64_t *sample_rows, uint64_t run_id,
                           const halo_partition_timing *t, outputs *o) {
  halo_status st = HALO_OK;
  halo_partition_prediction pred = {0}, *pr = NULL;
  int json_placed = 0;
  int32_t empty = 0;
  for (int32_t p = 0; p < stats->parts; p++) empty += stats->owned[p] == 0;
  if (empty > 0)
    halo_log_warn("%d of %d parts own no node (%s on %" PRId64 " nodes); their ranks will idle",
                  empty, stats->parts, halo_method_name(c->opt.method), g->n);
  if (c->ndims > 0) {
    HALO_TRY(halo_partition_predict(c, stats, &pred));
    pr = &pred;
    if (sample_rows) {
      const halo_model_comm dropout = halo_model_comm_of(&pred.dropout);
      HALO_ALLOC(pred.sampled, c->sample_epochs, "the sampled prediction");
      for (int32_t e = 0; e < c->sample_epochs; e++)
        pred.sampled[e] = halo_predict_epoch_bytes_at(sample_rows[e], &dropout, c->halo_precision,
                                                      c->halo_precision_bwd);
    }
  }
  if (o->json) {
    HALO_TRY(halo_partition_report_json(halo_outfile_stream(o->json), c, g, clean, stats, pr,
                                        run_id, t));
    /* A signal between the two commits removes the placed JSON too. */
    halo_cleanup_lock();
    st = halo_outfile_commit(o->json);
    if (st == HALO_OK) {
      json_placed = 1;
      st = halo_cleanup_add(c->json, 0);
    }
    halo_cleanup_unlock();
    HALO_TRY(st);
  }
  halo_cleanup_lock();
  st = halo_outdir_commit(o->dir);
  if (st == HALO_OK && json_placed) {
    halo_cleanup_drop(c->json);
    json_placed = 0;
  }
  halo_cleanup_unlock();
  HALO_TRY(st);

  /* Standard output cannot be taken back, so its JSON waits for DIR. */
  if (o->json_stdout) {
    HALO_TRY(halo_partition_report_json(stdout, c, g, clean, stats, pr, run_id, t));
    if (fflush(stdout) != 0 || ferror(stdout))
      HALO_FAIL(HALO_ERR_IO, "--json -: writing to standard output failed: %s", strerror(errno));
  }
  halo_partition_report_table(o->json_stdout ? stderr : stdout, c, g, clean, stats, pr, run_id, t);
  fflush(stdout);
done:
  if (json_placed) {
    unlink(c->json);
    halo_cleanup_drop(c->json);
  }
  free(pred.sampled);
  return st;
}

halo_status halo_partition_run(halo_partition_run_request *c) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  halo_partition_stats *stats = NULL;
  int32_t *part = NULL;
  int64_t *sample_rows = NULL; /* --halo-sample: each epoch's kept halo rows */
  outputs out = {0};
  halo_clean_report clean = {0};
  halo_partition_timing t;
  timing_start(&t);
  progress pg = {.on = 0, .t0 = t.wall_start};
  const int tty = isatty(STDERR_FILENO);

  HALO_TRY(outputs_open(c, &out));
  timing_lap(&t, HALO_RUN_LOAD); /* checking the outputs counts as loading */
  halo_load_options load_opt = {.split_name = c->split_name,
                                .skip_split = c->split || c->synth_split_given,
                                .header = c->header,
                                .nodes = c->nodes,
                                .classes = c->classes,
                                .edge_weights = c->edge_weights};
  /* An npy edge list's nodes are at least the rows of its .npy node data. */
  int64_t rows[2] = {0, 0};
  HALO_TRY(halo_load_npy_rows(c->features, &rows[0]));
  HALO_TRY(halo_load_npy_rows(c->labels, &rows[1]));
  load_opt.min_nodes = rows[0] > rows[1] ? rows[0] : rows[1];
  HALO_TRY(halo_load_opts(c->input, c->format, &load_opt, &g));
  /* Nodes without edges are a graph (docs/partition.md, "Graphs without
   * edges"); no nodes at all is none, whatever the format. */
  if (g->n == 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: holds no nodes (its node count is 0); a graph needs at least one",
              g->source);
  HALO_TRY(check_node_data(c, g));
  if (c->features || c->labels)
    HALO_TRY(halo_load_node_data_opts(g, c->features, c->labels, &load_opt));
  if (c->synth_features)
    HALO_TRY(halo_graph_synthesize_node_data(g, c->synth_features, c->synth_classes,
                                             (uint64_t)c->opt.seed));
  if (c->split) HALO_TRY(halo_load_split(g, c->split));
  if (c->synth_split_given)
    HALO_TRY(halo_graph_synthesize_split(g, c->synth_split, (uint64_t)c->opt.seed));
  HALO_TRY(halo_partition_features_layout(g, c->opt.features_layout));
  c->opt.features_layout = g->x_indptr ? HALO_FEATURES_SPARSE : HALO_FEATURES_DENSE;
  timing_lap(&t, HALO_RUN_LOAD);
  if (!c->write_metis) warn_untrainable(g);
  pg.on = tty && g->m > PROGRESS_EDGES;
  if (pg.on)
    fprintf(stderr, "halo-partition: [%7.1f s] loaded %" PRId64 " nodes, %" PRId64 " edges\n",
            now_s() - pg.t0, g->n, g->m);

  if (!c->write_metis && c->opt.parts > g->n)
    HALO_FAIL(HALO_ERR_ARG, "--parts %d exceeds the %" PRId64 " nodes of %s", c->opt.parts, g->n,
              g->source);
  HALO_TRY(check_dims(c, g));

  phase(&pg, "cleaning (symmetrize, remove duplicates and self-loops)");
  timing_lap(&t, HALO_RUN_LOAD);
  HALO_TRY(check_clean_memory(g));
  HALO_TRY(halo_partition_clean(g, &clean));
  timing_lap(&t, HALO_RUN_CLEAN);

  if (c->write_metis) {
    phase(&pg, "writing the METIS graph");
    HALO_TRY(halo_partition_write_metis_to(g, out.metis));
    printf("wrote %s: %" PRId64 " nodes, %" PRId64 " undirected edges\n", c->write_metis, g->n,
           g->m / 2);
    goto done;
  }

  HALO_TRY(switch_past_metis_limit(c, g));
  if (pg.on) {
    char what[96];
    snprintf(what, sizeof what, "partitioning into %d parts (%s)", c->opt.parts,
             halo_method_name(c->opt.method));
    phase(&pg, what);
  }
  HALO_ALLOC(part, g->n, "part vector");
  HALO_TRY(halo_partition_lookup(c->opt.method)(g, &c->opt, part));
  timing_lap(&t, HALO_RUN_PARTITION);

  uint64_t run_id = halo_partition_run_id(g, &c->opt, part);

  phase(&pg, "writing shards");
  HALO_TRY(halo_partition_write(halo_outdir_tmp(out.dir), g, part, &c->opt, run_id, write_progress,
                                &pg, &stats));
  HALO_TRY(halo_partition_stats_by_ranks(stats, g, part));
  if (c->ndims > 0 && c->halo_aggregate == HALO_AGGREGATE_AUTO)
    HALO_TRY(halo_partition_stats_cover(g, part, stats));
  timing_lap(&t, HALO_RUN_WRITE);
  t.peak_rss_max = t.peak_rss_sum = halo_memory_peak();
  t.block_edges_max = g->m;
  if (c->ndims > 0 && halo_sample_on(c->halo_sample)) {
    HALO_ALLOC(sample_rows, c->sample_epochs, "the sampled prediction");
    HALO_TRY(sampled_rows(c, g, part, sample_rows));
  }
  HALO_TRY(publish(c, g, &clean, stats, sample_rows, run_id, &t, &out));
done:
  outputs_close(&out);
  halo_partition_stats_destroy(&stats);
  free(sample_rows);
  free(part);
  halo_graph_destroy(&g);
  return st;
}

/* ---- the distributed run (--method ptscotch) -------------------------- */

/* What the distributed partitioner refuses, by name, before any work. */
static halo_status check_distributed(const halo_partition_run_request *c) {
  halo_status st = HALO_OK;
  if (c->opt.objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG,
              "--objective %s: PT-Scotch minimises the edge cut only (drop --objective)",
              halo_objective_name(c->opt.objective));
  if (c->halo_aggregate == HALO_AGGREGATE_AUTO)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-aggregate auto: its prediction needs each pair's whole cut, which no rank "
              "of --method ptscotch holds; predict with another method (halo-train counts it)");
  if (c->edge_weights)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "--edge-weights %s: the distributed partitioner (--method ptscotch) reads no edge "
              "weights; use --method metis",
              c->edge_weights);
done:
  return st;
}

static void dist_phase(void *ctx, const char *what) { phase(ctx, what); }

/* mpirun -np K halo-partition --method ptscotch: rank 0 opens the outputs
 * and publishes them, every rank takes part in the partition
 * (halo-dpartition.h).  A failure on any rank stops every rank. */
halo_status halo_partition_run_distributed(halo_partition_run_request *c, MPI_Comm comm) {
  halo_status st = HALO_OK;
  outputs out = {0};
  halo_partition_dist_result dr = {0};
  char line[1024], tmp[4096] = "";
  int rank = 0;
  halo_partition_timing t;
  timing_start(&t);
  progress pg = {.on = 0, .t0 = t.wall_start};
  MPI_Comm_rank(comm, &rank);

  line[0] = '\0';
  halo_log_hold(line, sizeof line);
  st = check_distributed(c);
  if (st == HALO_OK && rank == 0) st = outputs_open(c, &out);
  if (st == HALO_OK && rank == 0)
    snprintf(tmp, sizeof tmp, "%s",
             c->write_metis ? halo_outfile_tmp(out.metis) : halo_outdir_tmp(out.dir));
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(comm, st, line));
  HALO_MPI(MPI_Bcast(tmp, (int)sizeof tmp, MPI_CHAR, 0, comm));
  pg.on = rank == 0 && isatty(STDERR_FILENO);

  const halo_partition_dist_request rq = {
      .input = c->input,
      .format = c->format,
      .opt = c->opt,
      .synth_features = c->synth_features,
      .synth_classes = c->synth_classes,
      .synth_split = c->synth_split_given ? c->synth_split : NULL,
      .features = c->features,
      .labels = c->labels,
      .split_name = c->split_name,
      .split = c->split,
      .header = c->header,
      .nodes = c->nodes,
      .classes = c->classes,
      .dims = c->dims,
      .ndims = c->ndims,
      .tmpdir = c->write_metis ? NULL : tmp,
      .metis_tmp = c->write_metis ? tmp : NULL,
      .metis_name = c->write_metis,
      .parts_file = c->parts_file,
      .clean_round_pairs = c->clean_round,
      .phase = dist_phase,
      .progress = write_progress,
      .ctx = &pg};
  HALO_TRY(halo_partition_dist_run(comm, &rq, &dr));
  static const int phases[HALO_DIST_PHASES] = {HALO_RUN_LOAD, HALO_RUN_CLEAN, HALO_RUN_PARTITION,
                                               HALO_RUN_WRITE};
  for (int i = 0; i < HALO_DIST_PHASES; i++) t.wall[phases[i]] = dr.wall[i];
  timing_lap(&t, HALO_RUN_WRITE);
  t.wall[HALO_RUN_WRITE] = dr.wall[HALO_DIST_WRITE];
  t.ranks = dr.ranks;
  t.peak_rss_max = dr.peak_rss_max;
  t.peak_rss_sum = dr.peak_rss_sum;
  t.block_edges_max = dr.block_edges_max;

  line[0] = '\0';
  halo_log_hold(line, sizeof line);
  if (rank == 0 && c->write_metis) {
    st = halo_outfile_commit(out.metis);
    if (st == HALO_OK)
      printf("wrote %s: %" PRId64 " nodes, %" PRId64 " undirected edges\n", c->write_metis,
             dr.summary.n, dr.summary.m / 2);
  } else if (rank == 0) {
    halo_log_hold(NULL, 0); /* warnings are not held */
    warn_untrainable_counts(&dr.summary, dr.has_split, dr.train);
    halo_log_hold(line, sizeof line);
    st = publish(c, &dr.summary, &dr.clean, dr.stats, NULL, dr.run_id, &t, &out);
  }
  halo_log_hold(NULL, 0);
  HALO_TRY(halo_mpi_agree_first(comm, st, line));
done:
  halo_partition_dist_result_free(&dr);
  outputs_close(&out);
  return st;
}
