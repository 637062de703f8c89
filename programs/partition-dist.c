/* The distributed partitioner (partition-dist.h).
 *
 * Rank r of K owns the block of rows [begins[r], begins[r + 1]) of the node
 * ids, cut to about equal load (row_blocks: a node's edges and a share for
 * the node itself), once the input's edges are read.  The run goes:
 *
 *   load      each rank draws slice r of K of the input (halo_load_spec_slice)
 *   clean     every pair (u, v) goes to u's owner as "u has v" and to v's
 *             owner as "v has u, reversed"; each owner sorts its rows,
 *             drops self-loops and duplicates and counts what it changed,
 *             exactly as halo_partition_clean counts it
 *   partition PT-Scotch on the blocks (halo_partition_ptscotch); part[] is
 *             gathered on rank 0 for the manifest and the run id
 *   write     each rank asks the owners of its rows' neighbours for their
 *             part and degree; then, in rounds of K parts, part p's rows go
 *             to rank p mod K, which draws their node data (a function of
 *             the node id), builds the shard (halo_partition_shard_of_rows)
 *             and writes it; rank 0 writes the manifest
 *
 * Each phase holds its error lines (halo_log_hold) and ends in
 * halo_mpi_agree_first, so that a failure on any rank stops every rank with
 * one line; a step that may fail on one rank alone never stands between
 * two collectives.  MPI's counts are ints: an exchange whose counts
 * exceed them is refused by name (more ranks make them smaller).
 */
#include "partition-dist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "halo-dpartition.h"
#include "halo-load.h"
#include "halo-memory.h"
#include "halo-mpi.h"
#include "halo-rng.h"
#include "halo-search.h"
#include "halo-shard.h"

/* Input pairs per round of the clean-up's exchange: 4M pairs send 8M
 * entries of 16 bytes (128 MB) at most per round. */
enum { CLEAN_ROUND_PAIRS = 1 << 22 };

/* One rank's state. */
typedef struct dist {
  MPI_Comm comm;
  int rank, size;
  char line[1024]; /* the held error line of the current phase */
  const dist_request *rq;
  halo_edge_slice slice;
  halo_node_synth synth; /* node data, when has_synth */
  int has_synth;
  halo_dgraph g;  /* this rank's block of the clean graph */
  int32_t *part;  /* size g.rows */
  int64_t *ghost; /* sorted ids of the neighbours outside the block */
  int64_t *ghost_part, *ghost_degree;
  int64_t ghosts;
  int64_t *original; /* size g.rows: the block's ids in the input, or NULL (ids kept) */
  /* Node data from --features and --labels files, the block's rows. */
  int32_t file_features; /* their width, 0 without --features */
  int32_t file_classes;  /* max label + 1 (or a multi-label file's tasks), 0 without labels */
  int has_file_labels;   /* one label a node, in labels */
  int file_multilabel;   /* rows of file_classes tasks a node, in targets */
  float *x;              /* block rows x file_features */
  int32_t *labels;       /* block rows */
  int8_t *targets;       /* block rows x file_classes, multi-label */
  uint8_t *split;        /* block rows: an OGB folder's split (HALO_SPLIT_*), or NULL */
  halo_ogb_files *ogb;   /* an OGB folder's files, or NULL */
  int64_t *begins;       /* size+1: the first node id of each rank's block (row_blocks) */
  halo_digest_chunked
      digest;             /* rank 0: the digest of the files read so far, in halo_load's order */
  uint64_t data_digest;   /* --features and --labels' digest */
  MPI_Datatype pair_type; /* two int64 (an entry) */
} dist;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t block_begin(int64_t n, int ranks, int r) {
  return (int64_t)r * (n / ranks) + (r < n % ranks ? r : n % ranks);
}

/* The rank whose block of rows holds node v. */
static int row_owner(const dist *d, int64_t v) {
  int lo = 0, hi = d->size - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (d->begins[mid] <= v)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* ---- phases ----------------------------------------------------------- */

static void phase_begin(dist *d) {
  d->line[0] = '\0';
  halo_log_hold(d->line, sizeof d->line);
}

/* Ends a phase: every rank learns whether any failed. */
static halo_status phase_end(dist *d, halo_status local) {
  halo_log_hold(NULL, 0);
  return halo_mpi_agree_first(d->comm, local, d->line);
}

/* The same, where the failure at the smallest place in the input (a
 * line, say) is the one printed. */
static halo_status phase_end_at(dist *d, halo_status local, int64_t where) {
  halo_log_hold(NULL, 0);
  return halo_mpi_agree_earliest(d->comm, local, d->line, where);
}

static void say(const dist *d, const char *what) {
  if (d->rank == 0 && d->rq->phase) d->rq->phase(d->rq->ctx, what);
}

/* Refuses, before allocating, what the machine cannot hold. Local. */
static halo_status admit(const char *source, const char *what, double bytes) {
  halo_status st = HALO_OK;
  const int64_t avail = halo_memory_available();
  char b0[32], b1[32];
  if (avail >= 0 && bytes > (double)avail)
    HALO_FAIL(HALO_ERR_NOMEM,
              "%s: %s needs about %s on this rank, but %s is available (use more "
              "ranks)",
              source, what, halo_memory_str((int64_t)bytes, b0, sizeof b0),
              halo_memory_str(avail, b1, sizeof b1));
done:
  return st;
}

static int compare_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* ---- all-to-all exchanges ---------------------------------------------- */

/* The int counts and displacements of one MPI_Alltoallv, in items. */
typedef struct xfer {
  int *sc, *sd, *rc, *rd;
  int64_t sent, received;
} xfer;

static void xfer_free(xfer *x) {
  free(x->sc);
  free(x->sd);
  free(x->rc);
  free(x->rd);
  *x = (xfer){0};
}

/* Allocates x's arrays. Local. */
static halo_status xfer_alloc(int K, xfer *x) {
  halo_status st = HALO_OK;
  *x = (xfer){0};
  HALO_ALLOC(x->sc, K, "exchange counts");
  HALO_ALLOC(x->sd, K, "exchange counts");
  HALO_ALLOC(x->rc, K, "exchange counts");
  HALO_ALLOC(x->rd, K, "exchange counts");
done:
  return st;
}

/* x's ints from the item counts each way; fails when they pass INT_MAX. Local. */
static halo_status xfer_fill(const dist *d, const int64_t *send_counts, const int64_t *recv_counts,
                             const char *what, const char *remedy, xfer *x) {
  halo_status st = HALO_OK;
  for (int k = 0; k < d->size; k++) {
    if (x->sent + send_counts[k] > INT_MAX || x->received + recv_counts[k] > INT_MAX)
      HALO_FAIL(HALO_ERR_LIMIT,
                "%s: %s moves more than %d MPI items (int64 values, or 512-byte units of "
                "rows) into or out of one rank, MPI's limit; %s",
                d->slice.source, what, INT_MAX, remedy);
    x->sc[k] = (int)send_counts[k];
    x->sd[k] = (int)x->sent;
    x->rc[k] = (int)recv_counts[k];
    x->rd[k] = (int)x->received;
    x->sent += send_counts[k];
    x->received += recv_counts[k];
  }
done:
  return st;
}

/* Swaps the item counts every rank sends every other (send_counts[K]) and
 * turns them into x, checking that they fit MPI's ints.  Collective
 * (agreed). */
static halo_status xfer_plan(dist *d, const int64_t *send_counts, const char *what, xfer *x) {
  /* One rank receives a whole part when the parts are routed: more ranks
   * do not make that smaller, more parts do. */
  const char *remedy = strcmp(what, "routing the parts") == 0
                           ? "use more parts (one rank receives each part whole)"
                           : "use more ranks";
  halo_status st = HALO_OK;
  int64_t *recv_counts = malloc((size_t)d->size * sizeof *recv_counts);
  phase_begin(d);
  st = recv_counts ? xfer_alloc(d->size, x) : HALO_ERR_NOMEM;
  if (!recv_counts) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Alltoall(send_counts, 1, MPI_INT64_T, recv_counts, 1, MPI_INT64_T, d->comm));
  phase_begin(d);
  st = xfer_fill(d, send_counts, recv_counts, what, remedy, x);
  HALO_TRY(phase_end(d, st));
done:
  free(recv_counts);
  return st;
}

/* ---- load ------------------------------------------------------------- */

/* The node count the part vector's gather allows. Local. */
static halo_status nodes_limit(const char *source, int64_t n) {
  halo_status st = HALO_OK;
  if (n > INT_MAX)
    HALO_FAIL(HALO_ERR_LIMIT,
              "%s: %" PRId64
              " nodes: the distributed partitioner gathers the part vector with "
              "MPI's int counts, at most %d nodes so far",
              source, n, INT_MAX);
done:
  return st;
}

/* The request against the input's counts, once the node count is known,
 * and the node data the input and flags imply. Local. */
static halo_status check_input(dist *d) {
  halo_status st = HALO_OK;
  const dist_request *rq = d->rq;
  const halo_edge_slice *s = &d->slice;
  if (s->nodes == 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: holds no nodes (its node count is 0); a graph needs at least one",
              s->source);
  HALO_TRY(nodes_limit(s->source, s->nodes));
  if (!rq->metis_tmp && rq->opt.parts > s->nodes)
    HALO_FAIL(HALO_ERR_ARG, "--parts %d exceeds the %" PRId64 " nodes of %s", rq->opt.parts,
              s->nodes, s->source);
  /* The input's own node data (an sbm's, an OGB folder's) against the
   * flags, as a sequential run checks them (check_node_data). */
  const int32_t F = s->has_node_data ? s->synth.features : d->file_features;
  const int32_t C = s->has_node_data ? s->synth.classes : d->file_classes;
  const int has_split = s->has_node_data || d->split != NULL;
  if (rq->features && F > 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--features %s: %s already has %d features; --features is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              rq->features, s->source, F);
  if (rq->labels && C > 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--labels %s: %s already has labels (%d classes); --labels is for structure-only "
              "inputs (edge lists, Matrix Market, rmat)",
              rq->labels, s->source, C);
  if (rq->synth_features && (F > 0 || C > 0 || has_split))
    HALO_FAIL(HALO_ERR_ARG,
              "--synthetic-features: %s already has node data (%d features, %d classes); "
              "--synthetic-* are for structure-only inputs (edge lists, Matrix Market, rmat)",
              s->source, F, C);
  d->has_synth = s->has_node_data || rq->synth_features > 0;
  d->synth = s->has_node_data ? s->synth
                              : halo_node_synth_default(rq->synth_features, rq->synth_classes,
                                                        (uint64_t)rq->opt.seed);
done:
  return st;
}

/* What the input is to this rank; the ranks must agree on it, since each
 * kind runs other collectives. */
enum { INPUT_SPEC = 0, INPUT_FILE = 1, INPUT_GZIP = 2, INPUT_OGB = 3, INPUT_MTX = 4 };

/* The kind of the input: --format's, else what halo_load_detect_format
 * makes of the path. Local. */
static halo_status input_kind(const dist *d, int *kind) {
  halo_status st = HALO_OK;
  const char *in = d->rq->input;
  struct stat sb;
  *kind = INPUT_SPEC;
  const halo_format f =
      d->rq->format != HALO_FORMAT_AUTO ? d->rq->format : halo_load_detect_format(in);
  if (f == HALO_FORMAT_SPEC || stat(in, &sb) != 0) goto done;
  *kind = f == HALO_FORMAT_OGB    ? INPUT_OGB
          : f == HALO_FORMAT_MTX  ? INPUT_MTX
          : halo_load_is_gzip(in) ? INPUT_GZIP
                                  : INPUT_FILE;
done:
  return st;
}

/* Edges of a gzip stream per block: 64K edges, 1 MB. */
enum { GZIP_BLOCK_EDGES = 1 << 16, TAG_GZIP_BLOCK = 7101, TAG_DIGEST_CHUNKS = 7103 };

/* The edges a rank collects from rank 0's blocks. */
typedef struct gathered {
  dist *d;
  int64_t blocks; /* rank 0: blocks read so far */
  int64_t *pair, count, cap;
  halo_status st; /* a failure to keep them (the rest is still received) */
} gathered;

static void gathered_add(gathered *g, const int64_t *pair, int64_t count) {
  if (g->st != HALO_OK) return;
  if (g->count + count > g->cap) {
    const int64_t cap = 2 * (g->count + count);
    int64_t *grown = realloc(g->pair, (size_t)cap * 2 * sizeof *grown);
    if (!grown) {
      halo_log_error("%s: out of memory holding %" PRId64 " edges of the stream", g->d->rq->input,
                     g->count + count);
      g->st = HALO_ERR_NOMEM;
      return;
    }
    g->pair = grown;
    g->cap = cap;
  }
  memcpy(g->pair + 2 * g->count, pair, (size_t)count * 2 * sizeof *pair);
  g->count += count;
}

/* Rank 0's emit(): block b goes to rank b mod K, its own blocks it keeps. */
static halo_status scatter_block(void *ctx, const int64_t *pair, int64_t count) {
  halo_status st = HALO_OK;
  gathered *g = ctx;
  const int to = (int)(g->blocks++ % g->d->size);
  if (to == 0) {
    gathered_add(g, pair, count);
    return g->st;
  }
  HALO_MPI(MPI_Send(pair, (int)(2 * count), MPI_INT64_T, to, TAG_GZIP_BLOCK, g->d->comm));
done:
  return st;
}

/* A gzip stream cannot be cut into byte ranges: rank 0 inflates and parses
 * it (an edge list's for `nodes` NODES_SNAP, Matrix Market's for NODES_MTX,
 * else an OGB edge.csv's of `nodes` nodes, continuing d->digest) and deals
 * its edges out in blocks, round robin; an empty block ends them.
 * Collective (agreed). */
enum { NODES_SNAP = -1, NODES_MTX = -2 }; /* load_gzip's `nodes` for other formats */

static halo_status load_gzip(dist *d, const char *path, int64_t nodes) {
  halo_status st = HALO_OK;
  gathered g = {.d = d};
  uint64_t digest = 0;
  int64_t *block = NULL, mtx_rows = 0;
  /* Every other rank first holds a block's room, or none of them reads. */
  phase_begin(d);
  if (d->rank > 0 && !(block = malloc((size_t)GZIP_BLOCK_EDGES * 2 * sizeof *block))) {
    halo_log_error("out of memory allocating a block of the stream");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  phase_begin(d);
  if (d->rank == 0) {
    halo_mtx_header h = {0};
    if (nodes == NODES_SNAP)
      st = halo_load_edgelist_stream(path, GZIP_BLOCK_EDGES, scatter_block, &g, &digest);
    else if (nodes == NODES_MTX) /* a block of a symmetric file may hold one edge more */
      st = halo_load_mtx_stream(path, GZIP_BLOCK_EDGES - 1, scatter_block, &g, &h, &digest);
    else
      st = halo_load_ogb_edge_stream(path, nodes, GZIP_BLOCK_EDGES, scatter_block, &g, &d->digest);
    mtx_rows = h.rows;
    if (st == HALO_ERR_MPI) goto held;
    for (int to = 1; to < d->size; to++)
      if (MPI_Send(NULL, 0, MPI_INT64_T, to, TAG_GZIP_BLOCK, d->comm) != MPI_SUCCESS) {
        st = halo_mpi_error(MPI_ERR_OTHER, "MPI_Send");
        goto held;
      }
  } else {
    /* Every block is taken, even after gathered_add failed: rank 0 would
     * wait for ever in its send. */
    for (;;) {
      MPI_Status status;
      int items = 0;
      if (MPI_Probe(0, TAG_GZIP_BLOCK, d->comm, &status) != MPI_SUCCESS ||
          MPI_Get_count(&status, MPI_INT64_T, &items) != MPI_SUCCESS) {
        st = halo_mpi_error(MPI_ERR_OTHER, "MPI_Probe");
        goto held;
      }
      if (MPI_Recv(block, items, MPI_INT64_T, 0, TAG_GZIP_BLOCK, d->comm, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS) {
        st = halo_mpi_error(MPI_ERR_OTHER, "MPI_Recv");
        goto held;
      }
      if (items == 0) break;
      gathered_add(&g, block, items / 2);
    }
  }
  if (st == HALO_OK) st = g.st;
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  HALO_MPI(MPI_Bcast(&mtx_rows, 1, MPI_INT64_T, 0, d->comm));
  d->slice = (halo_edge_slice){.nodes = nodes == NODES_SNAP  ? -1
                                        : nodes == NODES_MTX ? mtx_rows
                                                             : nodes,
                               .renumber = nodes == NODES_SNAP,
                               .count = g.count,
                               .pair = g.pair};
  g.pair = NULL;
  snprintf(d->slice.source, sizeof d->slice.source, "%s", d->rq->input);
  d->slice.source_digest = digest;
  goto done;
held:
  halo_log_hold(NULL, 0);
  if (d->line[0]) fprintf(stderr, "%s\n", d->line);
done:
  free(block);
  free(g.pair);
  return st;
}

/* The sum of `mine` over the ranks below this one, and over all (total
 * may be NULL).  Collective. */
static halo_status count_before(dist *d, int64_t mine, int64_t *before, int64_t *total) {
  halo_status st = HALO_OK;
  *before = 0;
  HALO_MPI(MPI_Exscan(&mine, before, 1, MPI_INT64_T, MPI_SUM, d->comm));
  if (d->rank == 0) *before = 0; /* MPI_Exscan leaves rank 0's undefined */
  if (total) HALO_MPI(MPI_Allreduce(&mine, total, 1, MPI_INT64_T, MPI_SUM, d->comm));
done:
  return st;
}

/* The lines of the slices below this rank's of a plain-text file.
 * Collective (agreed). */
static halo_status lines_before(dist *d, const char *path, int64_t *before) {
  halo_status st = HALO_OK;
  int64_t lines = 0;
  *before = 0;
  phase_begin(d);
  st = halo_load_slice_lines(path, d->rank, d->size, &lines);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(count_before(d, lines, before, NULL));
done:
  return st;
}

/* Continues rank 0's *acc with the bytes of a plain file, read by every
 * rank: the file's whole chunks (halo_digest_chunked's, counted from the
 * stream's position) are dealt out in K runs, each rank digests its run
 * with pread, and rank 0 folds them in order as they arrive from rank 1,
 * 2, ..., between the bytes that fill its open chunk and the last partial
 * chunk, which it reads itself.  So no rank reads more than about size/K
 * + 2 chunks of the file, and the digest is the one a sequential read
 * gives.  acc is rank 0's alone.  Collective (agreed). */
static halo_status digest_file(dist *d, const char *path, halo_digest_chunked *acc) {
  halo_status st = HALO_OK;
  uint64_t *run = NULL;
  uint8_t *ends = NULL;   /* rank 0: the head's bytes, then at C the tail's */
  int64_t at[2] = {0, 0}; /* the file's size, the stream's position */
  phase_begin(d);
  if (d->rank == 0) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
      halo_log_error("%s: cannot open: %s", path, strerror(errno));
      st = HALO_ERR_IO;
    }
    at[0] = st == HALO_OK ? (int64_t)sb.st_size : 0;
    at[1] = (int64_t)acc->len;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(at, 2, MPI_INT64_T, 0, d->comm));
  const int64_t size = at[0], C = HALO_DIGEST_CHUNK, open = at[1] % C;
  int64_t head = open == 0 ? 0 : C - open; /* the bytes that fill the open chunk */
  if (head > size) head = size;
  const int64_t whole = (size - head) / C, tail_from = head + whole * C;
  const int64_t first = block_begin(whole, d->size, d->rank);
  const int64_t count = block_begin(whole, d->size, d->rank + 1) - first;
  phase_begin(d);
  /* Rank 0's run is the longest, so its buffer takes every rank's. */
  if (!(run = malloc((size_t)(count > 0 ? count : 1) * sizeof *run)) ||
      (d->rank == 0 && !(ends = malloc(2 * (size_t)C)))) {
    halo_log_error("%s: out of memory for %" PRId64 " chunk digests", path, count);
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) st = halo_load_chunk_digests(path, head + first * C, count, run);
  if (st == HALO_OK && d->rank == 0) st = halo_load_read_at(path, 0, head, ends);
  if (st == HALO_OK && d->rank == 0)
    st = halo_load_read_at(path, tail_from, size - tail_from, ends + C);
  HALO_TRY(phase_end(d, st));
  if (d->rank != 0) {
    if (count > 0) HALO_MPI(MPI_Send(run, (int)count, MPI_UINT64_T, 0, TAG_DIGEST_CHUNKS, d->comm));
    goto done;
  }
  halo_digest_chunked_update(acc, ends, (size_t)head);
  for (int r = 0; r < d->size; r++) {
    const int64_t n = block_begin(whole, d->size, r + 1) - block_begin(whole, d->size, r);
    if (r > 0 && n > 0)
      HALO_MPI(
          MPI_Recv(run, (int)n, MPI_UINT64_T, r, TAG_DIGEST_CHUNKS, d->comm, MPI_STATUS_IGNORE));
    for (int64_t c = 0; c < n; c++) halo_digest_chunked_add(acc, run[c]);
  }
  halo_digest_chunked_update(acc, ends + C, (size_t)(size - tail_from));
done:
  free(ends);
  free(run);
  return st;
}

/* An edge list (`nodes` -1) or an OGB edge.csv of `nodes` nodes: each rank
 * counts its slice's lines, learns how many lie before it, and parses its
 * slice, naming a bad line by its line in the file; then the ranks digest
 * the file together (an edge list's digest, which every rank then has; an
 * OGB file continues d->digest).  Collective (agreed). */
static halo_status load_file(dist *d, const char *path, int64_t nodes) {
  halo_status st = HALO_OK;
  int64_t before = 0;
  uint64_t digest = 0;
  halo_digest_chunked own;
  halo_digest_chunked_init(&own);
  HALO_TRY(lines_before(d, path, &before));
  phase_begin(d);
  st = nodes < 0 ? halo_load_edgelist_slice(path, d->rank, d->size, before, &d->slice)
                 : halo_load_ogb_edge_slice(path, nodes, d->rank, d->size, before, &d->slice);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(digest_file(d, path, nodes < 0 ? &own : &d->digest));
  digest = halo_digest_chunked_final(&own);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  snprintf(d->slice.source, sizeof d->slice.source, "%s", d->rq->input);
  d->slice.source_digest = digest;
done:
  return st;
}

/* A Matrix Market file: plain text by slices, whose entries are counted
 * against the size line's over all ranks (the rank that holds the first
 * entry too many reads its slice again to name its line); a gzip stream as
 * an edge list's.  Ids are the file's rows less one.  Collective (agreed). */
static halo_status load_mtx_file(dist *d) {
  halo_status st = HALO_OK;
  const char *path = d->rq->input;
  int is_gzip = halo_load_is_gzip(path), any = 0;
  halo_mtx_header h = {0};
  int64_t lines = 0, line_base = 0, total_lines = 0, entries = 0, before = 0, total = 0;
  uint64_t digest = 0;
  halo_digest_chunked own;
  halo_digest_chunked_init(&own);
  HALO_MPI(MPI_Allreduce(&is_gzip, &any, 1, MPI_INT, MPI_MAX, d->comm));
  if (any) {
    HALO_TRY(load_gzip(d, path, NODES_MTX));
    goto done;
  }
  phase_begin(d);
  st = halo_load_mtx_header(path, &h);
  if (st == HALO_OK) st = halo_load_slice_lines(path, d->rank, d->size, &lines);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(count_before(d, lines, &line_base, &total_lines));
  /* One phase, so that the failure named is the one a sequential read
   * meets first: each rank's first bad entry, the first entry past the
   * size line's count (the rank whose slice holds it reads it again, with
   * the count as its limit, and meets whichever comes first), or the end
   * of a file of too few entries, at its last line. */
  int64_t where = INT64_MAX;
  phase_begin(d);
  st = halo_load_mtx_slice(path, &h, d->rank, d->size, line_base, -1, &d->slice, &entries, &where);
  halo_status shared = count_before(d, entries, &before, &total);
  if (shared != HALO_OK) st = shared;
  if (shared == HALO_OK && total > h.nnz && before <= h.nnz && before + entries > h.nnz) {
    halo_edge_slice again = {0};
    int64_t kept = 0;
    d->line[0] = '\0';
    st = halo_load_mtx_slice(path, &h, d->rank, d->size, line_base, h.nnz - before, &again, &kept,
                             &where);
    halo_edge_slice_free(&again);
    if (st == HALO_OK) { /* the file changed between the reads */
      halo_log_error("%s: more entries than the %" PRId64 " declared on the size line", path,
                     h.nnz);
      st = HALO_ERR_FORMAT;
    }
  }
  if (shared == HALO_OK && st == HALO_OK && total < h.nnz && d->rank == 0) {
    halo_log_error("%s:%" PRId64 ": file ends after %" PRId64
                   " entries, but the size line (line %" PRId64 ") declares %" PRId64,
                   path, total_lines, total, h.size_line, h.nnz);
    st = HALO_ERR_FORMAT;
    where = total_lines;
  }
  HALO_TRY(phase_end_at(d, st, where));
  HALO_TRY(digest_file(d, path, &own));
  digest = halo_digest_chunked_final(&own);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  d->slice.source_digest = digest;
done:
  return st;
}

/* ---- blocks of rows --------------------------------------------------- */

/* The histogram behind the blocks has ROW_BUCKETS_A_RANK buckets of
 * consecutive ids a rank, ROW_BUCKETS_MAX at most (8 MB summed on every
 * rank), and a node weighs ROW_NODE_LOAD edge ends besides its own (its ids,
 * part, degree and node data: about a quarter of what 21 edges cost on the
 * benchmark's SBM). */
enum { ROW_BUCKETS_A_RANK = 1024, ROW_BUCKETS_MAX = 1 << 20, ROW_NODE_LOAD = 4 };

/* The blocks of rows, d->begins[0..K]: consecutive node ids cut to about
 * equal load, a node's load being its edge ends in the input (before the
 * clean-up) + ROW_NODE_LOAD.  Blocks of n/K ids put a graph whose degrees
 * fall with the id on one rank (R-MAT at K = 8: rank 0 held 42% of the
 * edges, and peaked at 0.92x the memory of K = 1).  Each rank counts the
 * load of its slice's pairs in buckets of ids, the buckets are summed over
 * the ranks, and every rank cuts them alike: node v goes to rank
 * floor(K x (the load of the buckets before v's) / (the total)), so no rank
 * is over its share by more than a bucket.  Collective (agreed). */
static halo_status row_blocks(dist *d) {
  halo_status st = HALO_OK;
  const int K = d->size;
  const int64_t n = d->slice.nodes;
  int64_t buckets = (int64_t)ROW_BUCKETS_A_RANK * K;
  if (buckets > ROW_BUCKETS_MAX) buckets = ROW_BUCKETS_MAX;
  if (buckets > n) buckets = n;
  int64_t *load = NULL;
  phase_begin(d);
  d->begins = calloc((size_t)K + 1, sizeof *d->begins);
  load = calloc((size_t)(buckets > 0 ? buckets : 1), sizeof *load);
  if (!d->begins || !load) {
    halo_log_error("out of memory allocating the blocks of rows");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  if (buckets == 0) goto done; /* no nodes: check_input refuses the input */
#define BUCKET_OF(v) ((int64_t)((__int128)(v)*buckets / n))
#define BUCKET_FIRST(b) ((int64_t)(((__int128)(b)*n + buckets - 1) / buckets))
  for (int64_t i = 0; i < d->slice.count; i++) {
    const int64_t u = d->slice.pair[2 * i], v = d->slice.pair[2 * i + 1];
    if (u == v || u < 0 || v < 0 || u >= n || v >= n) continue; /* clean_check names them */
    load[BUCKET_OF(u)]++;
    load[BUCKET_OF(v)]++;
  }
  HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, load, (int)buckets, MPI_INT64_T, MPI_SUM, d->comm));
  int64_t total = 0;
  for (int64_t b = 0; b < buckets; b++) {
    load[b] += ROW_NODE_LOAD * (BUCKET_FIRST(b + 1) - BUCKET_FIRST(b));
    total += load[b];
  }
  halo_partition_cut_by_load(load, buckets, 0, total, K, d->begins);
  for (int q = 0; q <= K; q++)
    d->begins[q] = d->begins[q] == INT64_MAX ? n : BUCKET_FIRST(d->begins[q]);
#undef BUCKET_OF
#undef BUCKET_FIRST
done:
  free(load);
  return st;
}

/* ---- renumbering an edge list's ids ----------------------------------- */

/* Sorted distinct ids of the slice's pairs. Local. */
static halo_status slice_ids(const dist *d, int64_t **out, int64_t *count, int64_t *max_id) {
  halo_status st = HALO_OK;
  int64_t *ids = NULL, n = 0;
  const int64_t items = 2 * d->slice.count;
  *max_id = -1;
  HALO_ALLOC(ids, items, "node ids");
  memcpy(ids, d->slice.pair, (size_t)items * sizeof *ids);
  qsort(ids, (size_t)items, sizeof *ids, compare_i64);
  for (int64_t i = 0; i < items; i++)
    if (n == 0 || ids[i] != ids[n - 1]) ids[n++] = ids[i];
  if (n > 0) *max_id = ids[n - 1];
  *out = ids;
  *count = n;
done:
  return st;
}

/* The file's ids become 0..n-1 in ascending order, as halo_load numbers
 * them: rank k collects the distinct ids of the k-th of K equal ranges of
 * values, numbers them from the count of the lower ranges, and answers each
 * rank's ids; when the ids were not 0..n-1 already, each rank then gets the
 * file ids of its block of rows (d->original).  Collective (agreed). */
static halo_status renumber(dist *d) {
  halo_status st = HALO_OK;
  const int K = d->size;
  int64_t *mine = NULL, *got = NULL, *range = NULL, *answer = NULL, *number = NULL;
  int64_t *counts = NULL, *back_counts = NULL, mine_count = 0, local_max = -1, max_id = -1;
  int64_t range_count = 0, base = 0, n = 0, total_pairs = 0;
  xfer x = {0}, back = {0};

  phase_begin(d);
  counts = calloc((size_t)K, sizeof *counts);
  back_counts = calloc((size_t)K, sizeof *back_counts);
  st = counts && back_counts ? slice_ids(d, &mine, &mine_count, &local_max) : HALO_ERR_NOMEM;
  if (!counts || !back_counts) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Allreduce(&local_max, &max_id, 1, MPI_INT64_T, MPI_MAX, d->comm));
  HALO_MPI(MPI_Allreduce(&d->slice.count, &total_pairs, 1, MPI_INT64_T, MPI_SUM, d->comm));
  phase_begin(d);
  if (total_pairs == 0) {
    halo_log_error(
        "%s: holds no edges, and hence no nodes (an edge list names its nodes only "
        "through its edges; for a graph without edges give a Matrix Market file 'N N "
        "0')",
        d->slice.source);
    st = HALO_ERR_PARSE;
  }
  HALO_TRY(phase_end(d, st));

  /* Every distinct id to the owner of its range of values. */
  for (int64_t i = 0; i < mine_count; i++)
    counts[halo_partition_block_of(mine[i], max_id + 1, K)]++;
  HALO_TRY(xfer_plan(d, counts, "renumbering the ids", &x));
  phase_begin(d);
  got = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *got);
  range = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *range);
  answer = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *answer);
  number = malloc((size_t)(mine_count > 0 ? mine_count : 1) * sizeof *number);
  if (!got || !range || !answer || !number) {
    halo_log_error("%s: out of memory renumbering the ids", d->slice.source);
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Alltoallv(mine, x.sc, x.sd, MPI_INT64_T, got, x.rc, x.rd, MPI_INT64_T, d->comm));
  memcpy(range, got, (size_t)x.received * sizeof *range);
  qsort(range, (size_t)x.received, sizeof *range, compare_i64);
  for (int64_t i = 0; i < x.received; i++)
    if (range_count == 0 || range[i] != range[range_count - 1]) range[range_count++] = range[i];
  HALO_MPI(MPI_Exscan(&range_count, &base, 1, MPI_INT64_T, MPI_SUM, d->comm));
  if (d->rank == 0) base = 0;
  HALO_MPI(MPI_Allreduce(&range_count, &n, 1, MPI_INT64_T, MPI_SUM, d->comm));
  for (int64_t i = 0; i < x.received; i++)
    answer[i] = base + halo_lower_bound(range, range_count, got[i]);
  HALO_MPI(
      MPI_Alltoallv(answer, x.rc, x.rd, MPI_INT64_T, number, x.sc, x.sd, MPI_INT64_T, d->comm));
  int64_t *pair = d->slice.pair;
  for (int64_t i = 0; i < 2 * d->slice.count; i++)
    pair[i] = number[halo_lower_bound(mine, mine_count, pair[i])];
  d->slice.nodes = n;
  d->slice.renumber = 0;

  phase_begin(d);
  if (n > ((int64_t)1 << 32)) {
    halo_log_error("%s: %" PRId64 " distinct ids exceed the loaders' limit of 2^32 nodes",
                   d->slice.source, n);
    st = HALO_ERR_LIMIT;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(row_blocks(d));
  if (n == max_id + 1) goto done; /* the ids were 0..n-1: kept, no original ids */

  /* The file ids of each rank's block of rows: rank k holds new ids
   * [base, base + range_count), ranks' blocks are [begin_r, begin_r+1). */
  for (int r = 0; r < K; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t a = lo > base ? lo : base, b = hi < base + range_count ? hi : base + range_count;
    back_counts[r] = b > a ? b - a : 0;
  }
  HALO_TRY(xfer_plan(d, back_counts, "renumbering the ids", &back));
  phase_begin(d);
  d->original = malloc((size_t)(back.received > 0 ? back.received : 1) * sizeof *d->original);
  if (!d->original) {
    halo_log_error("%s: out of memory allocating the original ids", d->slice.source);
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  /* The overlaps are consecutive runs of `range`, in rank order, the first
   * at its start: xfer_plan's running displacements are where they begin. */
  HALO_MPI(MPI_Alltoallv(range, back.sc, back.sd, MPI_INT64_T, d->original, back.rc, back.rd,
                         MPI_INT64_T, d->comm));
done:
  xfer_free(&back);
  xfer_free(&x);
  free(number);
  free(answer);
  free(range);
  free(got);
  free(mine);
  free(back_counts);
  free(counts);
  return st;
}

/* ---- node data from files -------------------------------------------- */

/* Rows [first, first + rows) of `width` items of `type` to the ranks whose
 * blocks of node ids hold them, into *out (this rank's block, in order).
 * Collective (agreed). */
static halo_status to_blocks(dist *d, int64_t first, int64_t rows, const void *data, int width,
                             MPI_Datatype type, size_t item, void **out) {
  halo_status st = HALO_OK;
  const int K = d->size;
  int64_t *counts = calloc((size_t)K, sizeof *counts);
  MPI_Datatype row = MPI_DATATYPE_NULL;
  xfer x = {0};
  *out = NULL;
  phase_begin(d);
  if (!counts) {
    halo_log_error("out of memory allocating exchange counts");
    st = HALO_ERR_NOMEM;
  }
  for (int r = 0; st == HALO_OK && r < K; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t a = lo > first ? lo : first, b = hi < first + rows ? hi : first + rows;
    counts[r] = b > a ? b - a : 0;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(xfer_plan(d, counts, "routing the node data", &x));
  phase_begin(d);
  *out = malloc((size_t)(x.received > 0 ? x.received : 1) * (size_t)width * item);
  if (!*out) {
    halo_log_error("out of memory allocating the block's node data");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Type_contiguous(width, type, &row));
  HALO_MPI(MPI_Type_commit(&row));
  /* The overlaps are consecutive runs of the rows, in rank order. */
  HALO_MPI(MPI_Alltoallv(data, x.sc, x.sd, row, *out, x.rc, x.rd, row, d->comm));
done:
  if (st != HALO_OK) {
    free(*out);
    *out = NULL;
  }
  if (row != MPI_DATATYPE_NULL) MPI_Type_free(&row);
  xfer_free(&x);
  free(counts);
  return st;
}

/* Node-data messages of a gzip stream: at most 4 MB of rows each. */
enum { NODE_MESSAGE_BYTES = 4 << 20, TAG_NODE_ROWS = 7102 };

/* Rank 0's emit() of a node-data stream: each run of rows goes to the rank
 * whose block holds it, as (first row, rows' bytes); its own it keeps. */
typedef struct node_scatter {
  dist *d;
  size_t row_bytes;
  char *block;   /* rank 0's block of rows */
  char *message; /* 8 + NODE_MESSAGE_BYTES */
  int64_t rows;  /* rows read so far */
} node_scatter;

static halo_status scatter_rows(void *ctx, int64_t first, int64_t rows, const void *data) {
  halo_status st = HALO_OK;
  node_scatter *ns = ctx;
  const dist *d = ns->d;
  ns->rows += rows;
  for (int r = 0; r < d->size; r++) {
    const int64_t lo = d->begins[r], hi = d->begins[r + 1];
    const int64_t a = lo > first ? lo : first, b = hi < first + rows ? hi : first + rows;
    if (b <= a) continue;
    const char *from = (const char *)data + (size_t)(a - first) * ns->row_bytes;
    const size_t bytes = (size_t)(b - a) * ns->row_bytes;
    if (r == 0) {
      memcpy(ns->block + (size_t)a * ns->row_bytes, from, bytes);
      continue;
    }
    memcpy(ns->message, &a, sizeof a);
    memcpy(ns->message + sizeof a, from, bytes);
    HALO_MPI(MPI_Send(ns->message, (int)(sizeof a + bytes), MPI_BYTE, r, TAG_NODE_ROWS, d->comm));
  }
done:
  return st;
}

/* A gzip node-data file: rank 0 inflates and parses it
 * (halo_load_node_stream, continuing d->digest) and sends each rank the rows
 * of its block; an empty message ends them.  *block gets this rank's rows,
 * *width the file's width, *max_label the largest label.  Collective
 * (agreed). */
static halo_status node_stream(dist *d, const char *path, int is_labels, void **block,
                               int32_t *width, int32_t *max_label) {
  halo_status st = HALO_OK;
  const int64_t n = d->slice.nodes;
  const int64_t rows = d->begins[d->rank + 1] - d->begins[d->rank];
  node_scatter ns = {.d = d};
  int64_t counts[2] = {0, -1}; /* rows read, largest label */
  *block = NULL;
  *width = 1;
  phase_begin(d);
  if (d->rank == 0) st = halo_load_node_width(path, width);
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(width, 1, MPI_INT32_T, 0, d->comm));
  ns.row_bytes = (size_t)*width * halo_load_node_item(is_labels, *width);
  const int64_t message_rows = NODE_MESSAGE_BYTES / (int64_t)ns.row_bytes > 0
                                   ? NODE_MESSAGE_BYTES / (int64_t)ns.row_bytes
                                   : 1;
  phase_begin(d);
  st = admit(
      path, "receiving its rows",
      (double)rows * (double)ns.row_bytes + (double)message_rows * (double)ns.row_bytes + 8.0);
  if (st == HALO_OK) {
    ns.block = malloc((size_t)(rows > 0 ? rows : 1) * ns.row_bytes);
    ns.message = malloc(sizeof(int64_t) + (size_t)message_rows * ns.row_bytes);
    if (!ns.block || !ns.message) {
      halo_log_error("%s: out of memory allocating the block's rows", path);
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(phase_end(d, st));
  phase_begin(d);
  if (d->rank == 0) {
    int32_t label = -1;
    st = halo_load_node_stream(path, is_labels, n, message_rows, scatter_rows, &ns, &label,
                               &d->digest);
    if (st == HALO_ERR_MPI) goto held;
    for (int to = 1; to < d->size; to++)
      if (MPI_Send(NULL, 0, MPI_BYTE, to, TAG_NODE_ROWS, d->comm) != MPI_SUCCESS) {
        st = halo_mpi_error(MPI_ERR_OTHER, "MPI_Send");
        goto held;
      }
    counts[0] = ns.rows;
    counts[1] = label;
    if (st == HALO_OK && ns.rows != n) {
      halo_log_error("%s:%" PRId64 ": %" PRId64 " %s, but the graph has %" PRId64 " nodes", path,
                     ns.rows, ns.rows, halo_load_node_rows_name(is_labels, *width), n);
      st = HALO_ERR_MISMATCH;
    }
  } else {
    const int64_t begin = d->begins[d->rank];
    for (;;) {
      MPI_Status status;
      int bytes = 0;
      int64_t first = 0;
      if (MPI_Probe(0, TAG_NODE_ROWS, d->comm, &status) != MPI_SUCCESS ||
          MPI_Get_count(&status, MPI_BYTE, &bytes) != MPI_SUCCESS ||
          MPI_Recv(ns.message, bytes, MPI_BYTE, 0, TAG_NODE_ROWS, d->comm, MPI_STATUS_IGNORE) !=
              MPI_SUCCESS) {
        st = halo_mpi_error(MPI_ERR_OTHER, "MPI_Recv");
        goto held;
      }
      if (bytes == 0) break;
      memcpy(&first, ns.message, sizeof first);
      memcpy(ns.block + (size_t)(first - begin) * ns.row_bytes, ns.message + sizeof first,
             (size_t)bytes - sizeof first);
    }
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(counts, 2, MPI_INT64_T, 0, d->comm));
  *max_label = (int32_t)counts[1];
  *block = ns.block;
  ns.block = NULL;
  goto done;
held:
  halo_log_hold(NULL, 0);
  if (d->line[0]) fprintf(stderr, "%s\n", d->line);
done:
  free(ns.block);
  free(ns.message);
  return st;
}

/* A plain-text node-data file: every rank counts its slice's lines, parses
 * them as rows from the lines below it, and the rows go to the ranks of
 * their blocks; the ranks digest the file together into d->digest.
 * Collective (agreed). */
static halo_status node_slices(dist *d, const char *path, int is_labels, void **block,
                               int32_t *width, int32_t *max_label) {
  halo_status st = HALO_OK;
  halo_node_slice ns = {0};
  int64_t before = 0, total = 0;
  const int64_t n = d->slice.nodes;
  HALO_TRY(lines_before(d, path, &before));
  phase_begin(d);
  st = is_labels ? halo_load_labels_slice(path, d->rank, d->size, before, n, &ns)
                 : halo_load_features_slice(path, d->rank, d->size, before, n, &ns);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(digest_file(d, path, &d->digest));
  HALO_MPI(MPI_Allreduce(&ns.rows, &total, 1, MPI_INT64_T, MPI_SUM, d->comm));
  phase_begin(d);
  if (total != n && d->rank == 0) {
    /* At the file's last line, as halo_load names it: a line a row. */
    halo_log_error("%s:%" PRId64 ": %" PRId64 " %s, but the graph has %" PRId64 " nodes", path,
                   total, total, halo_load_node_rows_name(is_labels, ns.width), n);
    st = HALO_ERR_MISMATCH;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Allreduce(&ns.max_label, max_label, 1, MPI_INT32_T, MPI_MAX, d->comm));
  *width = ns.width;
  if (ns.targets)
    HALO_TRY(to_blocks(d, ns.first, ns.rows, ns.targets, ns.width, MPI_INT8_T, 1, block));
  else if (is_labels)
    HALO_TRY(to_blocks(d, ns.first, ns.rows, ns.labels, 1, MPI_INT32_T, sizeof(int32_t), block));
  else
    HALO_TRY(to_blocks(d, ns.first, ns.rows, ns.x, ns.width, MPI_FLOAT, sizeof(float), block));
done:
  halo_node_slice_free(&ns);
  return st;
}

/* One node-data file (features or labels, plain or gzip) into this rank's
 * block of rows.  Collective (agreed). */
static halo_status node_file(dist *d, const char *path, int is_labels) {
  halo_status st = HALO_OK;
  int is_gzip = halo_load_is_gzip(path), any = 0;
  void *block = NULL;
  int32_t width = 1, max_label = -1;
  HALO_MPI(MPI_Allreduce(&is_gzip, &any, 1, MPI_INT, MPI_MAX, d->comm));
  if (any)
    HALO_TRY(node_stream(d, path, is_labels, &block, &width, &max_label));
  else
    HALO_TRY(node_slices(d, path, is_labels, &block, &width, &max_label));
  if (is_labels && width > 1) { /* one binary task a column (ogbn-proteins' 112) */
    d->file_classes = width;
    d->file_multilabel = 1;
    d->targets = block;
  } else if (is_labels) {
    d->file_classes = max_label + 1;
    d->has_file_labels = d->file_classes > 0; /* all "nan": no labels, as halo_load has it */
    d->labels = block;
  } else {
    d->file_features = width;
    d->x = block;
  }
done:
  return st;
}

/* --dims against the input's widths, as a sequential run checks them,
 * before any partitioning. Local. */
static halo_status check_dims(const dist *d) {
  halo_status st = HALO_OK;
  const dist_request *rq = d->rq;
  const int32_t F = d->has_synth ? d->synth.features : d->file_features;
  const int32_t C = d->has_synth ? d->synth.classes : d->file_classes;
  if (rq->ndims == 0) goto done;
  if (F > 0 && rq->dims[0] != F)
    HALO_FAIL(HALO_ERR_ARG, "--dims: input width %d does not match the %d features of %s",
              rq->dims[0], F, d->slice.source);
  if (C > 0 && rq->dims[rq->ndims - 1] != C)
    HALO_FAIL(HALO_ERR_ARG, "--dims: output width %d does not match the %d classes of %s",
              rq->dims[rq->ndims - 1], C, d->slice.source);
done:
  return st;
}

/* --features and --labels, and their digest.  Collective (agreed). */
static halo_status node_files(dist *d) {
  halo_status st = HALO_OK;
  const dist_request *rq = d->rq;
  if (!rq->features && !rq->labels) goto done;
  halo_digest_chunked_init(&d->digest);
  if (rq->features) HALO_TRY(node_file(d, rq->features, 0));
  if (rq->labels) HALO_TRY(node_file(d, rq->labels, 1));
  d->data_digest = halo_digest_chunked_final(&d->digest);
  HALO_MPI(MPI_Bcast(&d->data_digest, 1, MPI_UINT64_T, 0, d->comm));
  /* As halo_load_node_data folds them into the graph's digest. */
  d->slice.source_digest = halo_rng_mix(d->slice.source_digest ^ d->data_digest);
done:
  return st;
}

/* Which of the block's nodes are labelled, for the split's checks: the
 * labels (-1: none), for multi-label rows -1 where every task is missing
 * (*owned then holds the array), or NULL: all of them. Local. */
static halo_status block_labelled(const dist *d, int64_t rows, const int32_t **out,
                                  int32_t **owned) {
  halo_status st = HALO_OK;
  *out = d->has_file_labels ? d->labels : NULL;
  *owned = NULL;
  if (!d->file_multilabel) goto done;
  HALO_ALLOC(*owned, rows, "labelled nodes");
  for (int64_t r = 0; r < rows; r++) {
    (*owned)[r] = -1;
    for (int32_t t = 0; t < d->file_classes; t++)
      if (d->targets[r * d->file_classes + t] >= 0) (*owned)[r] = 0;
  }
  *out = *owned;
done:
  return st;
}

/* An OGB folder, in halo_load's order so that rank 0's digest is its:
 * num-node-list, edge.csv's slices (or rank 0's stream of a .gz), node-feat
 * and node-label to the blocks of rows, then the split files, which every
 * rank reads whole for the ids of its block.  Collective (agreed). */
static halo_status load_ogb_folder(dist *d) {
  halo_status st = HALO_OK;
  const dist_request *rq = d->rq;
  const halo_load_options opt = {.split_name = rq->split_name,
                                 .skip_split = rq->synth_split != NULL || rq->split != NULL};
  int64_t n = 0;
  uint64_t digest = 0;
  halo_digest_chunked_init(&d->digest);
  /* Rank 0 finds the files and reads the counts, and every rank takes its
   * word for them: which files there are decides the collectives ahead. */
  phase_begin(d);
  if (!(d->ogb = calloc(1, sizeof *d->ogb))) {
    halo_log_error("out of memory allocating the OGB file names");
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK && d->rank == 0) {
    int64_t edges = 0;
    st = halo_load_ogb_files(rq->input, &opt, d->ogb);
    if (st == HALO_OK) st = halo_load_count(d->ogb->nodes, &d->digest, &n);
    if (st == HALO_OK && d->ogb->edge_count[0])
      st = halo_load_count(d->ogb->edge_count, NULL, &edges); /* checked, as halo_load does */
    if (st == HALO_OK && n > ((int64_t)1 << 32)) {
      halo_log_error("%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", d->ogb->nodes, n);
      st = HALO_ERR_LIMIT;
    }
    if (st == HALO_OK) st = nodes_limit(rq->input, n);
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(d->ogb, (int)sizeof *d->ogb, MPI_BYTE, 0, d->comm));
  HALO_MPI(MPI_Bcast(&n, 1, MPI_INT64_T, 0, d->comm));
  const halo_ogb_files *f = d->ogb;
  int is_gzip = halo_load_is_gzip(f->edges), any = 0;
  HALO_MPI(MPI_Allreduce(&is_gzip, &any, 1, MPI_INT, MPI_MAX, d->comm));
  if (any)
    HALO_TRY(load_gzip(d, f->edges, n));
  else
    HALO_TRY(load_file(d, f->edges, n));
  d->slice.nodes = n;
  HALO_TRY(row_blocks(d)); /* before the node data, which goes to the blocks */
  if (f->features[0]) HALO_TRY(node_file(d, f->features, 0));
  if (f->labels[0]) HALO_TRY(node_file(d, f->labels, 1));
  if (f->has_split) {
    const char *const paths[3] = {f->split[0], f->split[1], f->split[2]};
    const int64_t begin = d->begins[d->rank];
    const int64_t rows = d->begins[d->rank + 1] - begin;
    phase_begin(d);
    st = admit(rq->input, "reading the split", 5.0 * (double)rows);
    if (st == HALO_OK && !(d->split = malloc((size_t)(rows > 0 ? rows : 1)))) {
      halo_log_error("%s: out of memory allocating the block's split", rq->input);
      st = HALO_ERR_NOMEM;
    }
    const int32_t *labelled = NULL;
    int32_t *owned = NULL;
    if (st == HALO_OK) st = block_labelled(d, rows, &labelled, &owned);
    const halo_split_block b = {.nodes = n,
                                .begin = begin,
                                .rows = rows,
                                .labels = labelled,
                                .source = rq->input,
                                .multilabel = d->file_multilabel};
    int64_t where = INT64_MAX;
    if (st == HALO_OK)
      st = halo_load_split_block(paths, &b, d->split, d->rank == 0 ? &d->digest : NULL, &where);
    free(owned);
    HALO_TRY(phase_end_at(d, st, where));
  }
  digest = halo_digest_chunked_final(&d->digest);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  d->slice.source_digest = digest;
done:
  return st;
}

/* --split DIR: every rank reads the three files whole for the nodes of
 * its block (a renumbered input's files name its input ids: each block
 * answers for those from its first input id to the next block's), and rank
 * 0 folds them into the source digest as halo_load_split does, after the
 * node data.  Collective (agreed). */
static halo_status split_dir(dist *d) {
  halo_status st = HALO_OK;
  const dist_request *rq = d->rq;
  const int64_t n = d->slice.nodes, begin = d->begins[d->rank];
  const int64_t rows = d->begins[d->rank + 1] - begin;
  char(*paths)[HALO_OGB_PATH] = NULL;
  int64_t *first = NULL;
  int32_t *owned = NULL;
  halo_digest_chunked digest;
  uint64_t folded = 0;
  halo_digest_chunked_init(&digest);
  phase_begin(d);
  st = admit(rq->split, "reading the split", 5.0 * (double)rows);
  paths = malloc(3 * sizeof *paths);
  first = malloc((size_t)d->size * sizeof *first);
  free(d->split);
  d->split = st == HALO_OK ? malloc((size_t)(rows > 0 ? rows : 1)) : NULL;
  if (st == HALO_OK && (!paths || !first || !d->split)) {
    halo_log_error("out of memory allocating the split");
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) st = halo_load_split_paths(rq->split, paths);
  HALO_TRY(phase_end(d, st));
  const int64_t mine = d->original && rows > 0 ? d->original[0] : INT64_MAX;
  HALO_MPI(MPI_Allgather(&mine, 1, MPI_INT64_T, first, 1, MPI_INT64_T, d->comm));
  const int32_t *labelled = NULL;
  phase_begin(d);
  st = block_labelled(d, rows, &labelled, &owned);
  HALO_TRY(phase_end(d, st));
  halo_split_block b = {.nodes = n,
                        .begin = begin,
                        .rows = rows,
                        .labels = labelled,
                        .multilabel = d->file_multilabel,
                        .original = d->original,
                        .original_lo = d->rank == 0 ? INT64_MIN : mine,
                        .original_hi = INT64_MAX,
                        .source = d->slice.source};
  for (int r = d->rank + 1; r < d->size && b.original_hi == INT64_MAX; r++)
    b.original_hi = first[r];
  if (rows == 0) b.original_lo = b.original_hi; /* an empty block answers for no id */
  phase_begin(d);
  const char *const files[3] = {paths[0], paths[1], paths[2]};
  int64_t where = INT64_MAX;
  st = halo_load_split_block(files, &b, d->split, d->rank == 0 ? &digest : NULL, &where);
  HALO_TRY(phase_end_at(d, st, where));
  folded = halo_digest_chunked_final(&digest);
  HALO_MPI(MPI_Bcast(&folded, 1, MPI_UINT64_T, 0, d->comm));
  d->slice.source_digest = halo_rng_mix(d->slice.source_digest ^ folded);
done:
  free(owned);
  free(first);
  free(paths);
  return st;
}

/* This rank's slice of the input (a spec's, an edge list's renumbered over
 * all slices, or an OGB folder's) and the checks of the request.
 * Collective (agreed). */
static halo_status load_input(dist *d) {
  halo_status st = HALO_OK;
  int kind = INPUT_SPEC, kinds[2] = {0, 0};
  phase_begin(d);
  st = input_kind(d, &kind);
  HALO_TRY(phase_end(d, st));
  const int mine[2] = {kind, -kind};
  HALO_MPI(MPI_Allreduce(mine, kinds, 2, MPI_INT, MPI_MAX, d->comm));
  phase_begin(d);
  if (kinds[0] != -kinds[1]) { /* max != min */
    halo_log_error(
        "%s: is not the same file on every rank (missing, unreadable or another kind on "
        "some); the ranks must see the same files (a shared file system)",
        d->rq->input);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && d->rq->split_name && kind != INPUT_OGB) {
    halo_log_error("--split-name %s: %s is not an OGB folder (--split DIR gives any input a split)",
                   d->rq->split_name, d->rq->input);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && kind == INPUT_SPEC)
    st = halo_load_spec_slice(d->rq->input, d->rank, d->size, &d->slice);
  HALO_TRY(phase_end(d, st));
  if (kind == INPUT_GZIP) {
    HALO_TRY(load_gzip(d, d->rq->input, NODES_SNAP));
    HALO_TRY(renumber(d));
  } else if (kind == INPUT_FILE) {
    HALO_TRY(load_file(d, d->rq->input, -1));
    HALO_TRY(renumber(d));
  } else if (kind == INPUT_OGB) {
    HALO_TRY(load_ogb_folder(d));
  } else if (kind == INPUT_MTX) {
    HALO_TRY(load_mtx_file(d));
  }
  /* renumber and the OGB folder's reader cut them before their node data */
  if (kind == INPUT_SPEC || kind == INPUT_MTX) HALO_TRY(row_blocks(d));
  phase_begin(d);
  st = check_input(d);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(node_files(d));
  if (d->rq->split) HALO_TRY(split_dir(d));
  phase_begin(d);
  st = check_dims(d);
  HALO_TRY(phase_end(d, st));
done:
  return st;
}

/* ---- clean-up --------------------------------------------------------- */

/* "Row u has neighbour v": w = v << 1, plus 1 when the pair was (v, u). */
typedef struct entry {
  int64_t row, w;
} entry;

static int compare_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->row != y->row) return (x->row > y->row) - (x->row < y->row);
  return (x->w > y->w) - (x->w < y->w);
}

/* Pairs [lo, hi) of the slice as entries for their rows' owners: counts
 * only (out == NULL), or counts and the entries, by owner, at out + the
 * owner's displacement (at[k] advances). Local. */
static void clean_entries(const dist *d, int64_t lo, int64_t hi, int64_t *counts, entry *out,
                          int64_t *at) {
  const int64_t *pair = d->slice.pair;
  for (int64_t i = lo; i < hi; i++) {
    const int64_t u = pair[2 * i], v = pair[2 * i + 1];
    if (u == v) continue;
    const int a = row_owner(d, u), b = row_owner(d, v);
    if (!out) {
      counts[a]++;
      counts[b]++;
      continue;
    }
    out[at[a]++] = (entry){u, v << 1};
    out[at[b]++] = (entry){v, (u << 1) | 1};
  }
}

/* Checks the slice's pairs and counts its self-loops. Local. */
static halo_status clean_check(dist *d, int64_t *self_loops) {
  halo_status st = HALO_OK;
  const int64_t *pair = d->slice.pair, n = d->slice.nodes;
  *self_loops = 0;
  for (int64_t i = 0; i < d->slice.count; i++) {
    const int64_t u = pair[2 * i], v = pair[2 * i + 1];
    if (u < 0 || u >= n || v < 0 || v >= n)
      HALO_FAIL(HALO_ERR_RANGE, "%s: edge (%" PRId64 ", %" PRId64 ") is outside [0, %" PRId64 ")",
                d->slice.source, u, v, n);
    *self_loops += u == v;
  }
done:
  return st;
}

/* Sorts the received entries by row and neighbour and folds them into the
 * block's CSR, then frees them: a neighbour seen once or more as (u, v) is kept
 * with its repeats counted as duplicates, one seen only as (v, u) is kept
 * as an added reverse edge. report gets this rank's counts. Local. */
static halo_status clean_fold(dist *d, entry *e, int64_t count, halo_clean_report *report) {
  halo_status st = HALO_OK;
  halo_dgraph *g = &d->g;
  qsort(e, (size_t)count, sizeof *e, compare_entry);
  HALO_ALLOC(g->indptr, g->rows + 1, "row offsets");
  int64_t *nbr = (int64_t *)e; /* written behind the entries being read */
  int64_t kept = 0;
  for (int64_t i = 0; i < count;) {
    const int64_t row = e[i].row, v = e[i].w >> 1;
    int64_t forward = 0;
    for (; i < count && e[i].row == row && e[i].w >> 1 == v; i++) forward += (e[i].w & 1) == 0;
    report->duplicates += forward > 1 ? forward - 1 : 0;
    report->reverse_added += forward == 0;
    g->indptr[row - g->begin + 1]++;
    nbr[kept++] = v;
  }
  for (int64_t r = 0; r < g->rows; r++) {
    report->isolated += g->indptr[r + 1] == 0;
    g->indptr[r + 1] += g->indptr[r];
  }
  HALO_ALLOC(g->nbr, kept, "neighbours"); /* the entries' buffer is twice as large */
  memcpy(g->nbr, nbr, (size_t)kept * sizeof *nbr);
  free(e);
done:
  return st;
}

/* The clean-up, distributed.  Collective (agreed). */
static halo_status clean(dist *d, halo_clean_report *report) {
  halo_status st = HALO_OK;
  const int K = d->size;
  const int64_t n = d->slice.nodes;
  int64_t *counts = NULL, *at = NULL, local[5] = {0}, rounds = 0;
  /* No round is longer than the slice: the send buffer is sized for one. */
  int64_t round_pairs = d->rq->clean_round_pairs > 0 ? d->rq->clean_round_pairs : CLEAN_ROUND_PAIRS;
  if (round_pairs > d->slice.count) round_pairs = d->slice.count > 0 ? d->slice.count : 1;
  entry *recv = NULL, *send = NULL;
  xfer total = {0}, x = {0};
  *report = (halo_clean_report){0};
  d->g = (halo_dgraph){
      .nodes = n, .begin = d->begins[d->rank], .rows = d->begins[d->rank + 1] - d->begins[d->rank]};

  phase_begin(d);
  local[0] = d->slice.count;
  st = clean_check(d, &local[1]);
  if (st == HALO_OK) {
    counts = calloc((size_t)K, sizeof *counts);
    at = calloc((size_t)K, sizeof *at);
    if (!counts || !at) {
      halo_log_error("out of memory allocating exchange counts");
      st = HALO_ERR_NOMEM;
    }
    if (st == HALO_OK) clean_entries(d, 0, d->slice.count, counts, NULL, NULL);
  }
  HALO_TRY(phase_end(d, st));
  /* What every rank will receive, in all rounds: one allocation, admitted. */
  HALO_TRY(xfer_plan(d, counts, "the clean-up", &total));
  phase_begin(d);
  st = admit(
      d->slice.source, "cleaning its rows",
      16.0 * (double)total.received + 8.0 * (double)(d->g.rows + 1) + 16.0 * 2.0 * round_pairs);
  if (st == HALO_OK) {
    recv = malloc((size_t)(total.received > 0 ? total.received : 1) * sizeof *recv);
    send = malloc((size_t)2 * round_pairs * sizeof *send);
    if (!recv || !send) {
      halo_log_error("%s: out of memory allocating the clean-up's buffers", d->slice.source);
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(phase_end(d, st));

  /* Rounds of at most round_pairs pairs a rank; every rank takes part
   * in each round, with nothing to send once its pairs are done. */
  const int64_t mine = (d->slice.count + round_pairs - 1) / round_pairs;
  HALO_MPI(MPI_Allreduce(&mine, &rounds, 1, MPI_INT64_T, MPI_MAX, d->comm));
  int64_t received = 0;
  for (int64_t round = 0; round < rounds; round++) {
    const int64_t lo = round * round_pairs < d->slice.count ? round * round_pairs : d->slice.count;
    const int64_t hi = lo + round_pairs < d->slice.count ? lo + round_pairs : d->slice.count;
    memset(counts, 0, (size_t)K * sizeof *counts);
    clean_entries(d, lo, hi, counts, NULL, NULL);
    HALO_TRY(xfer_plan(d, counts, "the clean-up", &x));
    for (int k = 0; k < K; k++) at[k] = x.sd[k];
    clean_entries(d, lo, hi, counts, send, at);
    for (int k = 0; k < K; k++) x.rd[k] += (int)received; /* fits: total.received did */
    HALO_MPI(
        MPI_Alltoallv(send, x.sc, x.sd, d->pair_type, recv, x.rc, x.rd, d->pair_type, d->comm));
    received += x.received;
    xfer_free(&x);
  }
  halo_edge_slice_free(&d->slice); /* the pairs; the source and node data stay */
  free(send);
  send = NULL;

  phase_begin(d);
  st = clean_fold(d, recv, received, report);
  if (st == HALO_OK) recv = NULL; /* freed: the rows are in d->g */
  HALO_TRY(phase_end(d, st));
  local[2] = report->duplicates;
  local[3] = report->reverse_added;
  local[4] = report->isolated;
  const int64_t kept = d->g.indptr[d->g.rows];
  int64_t sums[5];
  HALO_MPI(MPI_Allreduce(local, sums, 5, MPI_INT64_T, MPI_SUM, d->comm));
  HALO_MPI(MPI_Allreduce(&kept, &d->g.edges, 1, MPI_INT64_T, MPI_SUM, d->comm));
  *report = (halo_clean_report){.input_edges = sums[0],
                                .self_loops = sums[1],
                                .duplicates = sums[2],
                                .reverse_added = sums[3],
                                .isolated = sums[4]};
done:
  xfer_free(&total);
  xfer_free(&x);
  free(send);
  free(recv);
  free(at);
  free(counts);
  return st;
}

/* ---- partition -------------------------------------------------------- */

/* The test hook (HALO_TEST_PARTS_FILE, programs/cli-env.c): a file of one
 * part per line, node v's on line v + 1, which replaces PT-Scotch's
 * assignment, so that a test can give the distributed writer the
 * sequential one's.  Not a user feature. Local. */
static halo_status import_parts(dist *d, const char *path) {
  halo_status st = HALO_OK;
  FILE *f = fopen(path, "r");
  char buf[64];
  int64_t v = 0;
  const int64_t end = d->g.begin + d->g.rows;
  if (!f) HALO_FAIL(HALO_ERR_IO, "HALO_TEST_PARTS_FILE %s: cannot open: %s", path, strerror(errno));
  for (; v < end && fgets(buf, sizeof buf, f); v++) {
    char *stop = NULL;
    const long p = strtol(buf, &stop, 10);
    if (stop == buf || (*stop != '\n' && *stop != '\0') || p < 0 || p >= d->rq->opt.parts)
      HALO_FAIL(HALO_ERR_PARSE, "%s:%" PRId64 ": not a part in [0, %d)", path, v + 1,
                d->rq->opt.parts);
    if (v >= d->g.begin) d->part[v - d->g.begin] = (int32_t)p;
  }
  if (v < end)
    HALO_FAIL(HALO_ERR_PARSE, "%s: %" PRId64 " lines, but the graph has %" PRId64 " nodes", path, v,
              d->g.nodes);
done:
  if (f) fclose(f);
  return st;
}

/* part[] of the block, from PT-Scotch or the test hook.  Collective
 * (agreed). */
static halo_status assign_parts(dist *d) {
  halo_status st = HALO_OK;
  const char *hook = d->rq->parts_file;
  phase_begin(d);
  d->part = calloc((size_t)(d->g.rows > 0 ? d->g.rows : 1), sizeof *d->part);
  if (!d->part) {
    halo_log_error("out of memory allocating the part vector");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  phase_begin(d);
  if (hook)
    st = import_parts(d, hook);
  else
    st = halo_partition_ptscotch(d->comm, &d->g, &d->rq->opt, d->slice.source, d->part);
  HALO_TRY(phase_end(d, st));
done:
  return st;
}

/* The whole part vector on rank 0 (NULL elsewhere), for the manifest and
 * the run id.  Collective (agreed). */
static halo_status gather_parts(dist *d, int32_t **all) {
  halo_status st = HALO_OK;
  int *counts = NULL, *displs = NULL;
  *all = NULL;
  phase_begin(d);
  if (d->rank == 0) {
    counts = malloc((size_t)d->size * sizeof *counts);
    displs = malloc((size_t)d->size * sizeof *displs);
    *all = malloc((size_t)d->g.nodes * sizeof **all);
    if (!counts || !displs || !*all) {
      halo_log_error("out of memory allocating the part vector of %" PRId64 " nodes", d->g.nodes);
      st = HALO_ERR_NOMEM;
    }
    for (int k = 0; st == HALO_OK && k < d->size; k++) {
      displs[k] = (int)d->begins[k];
      counts[k] = (int)(d->begins[k + 1] - d->begins[k]);
    }
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Gatherv(d->part, (int)d->g.rows, MPI_INT32_T, *all, counts, displs, MPI_INT32_T, 0,
                       d->comm));
done:
  free(displs);
  free(counts);
  return st;
}

/* ---- neighbours' parts and degrees ------------------------------------ */

/* The neighbours of the block outside it, sorted, once each, and how many
 * each rank owns. Local. */
static halo_status ghost_ids(dist *d, int64_t *counts) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &d->g;
  const int64_t nnz = g->indptr[g->rows], end = g->begin + g->rows;
  int64_t count = 0;
  HALO_ALLOC(d->ghost, nnz, "neighbour ids");
  for (int64_t k = 0; k < nnz; k++)
    if (g->nbr[k] < g->begin || g->nbr[k] >= end) d->ghost[count++] = g->nbr[k];
  qsort(d->ghost, (size_t)count, sizeof *d->ghost, compare_i64);
  d->ghosts = 0;
  for (int64_t i = 0; i < count; i++)
    if (d->ghosts == 0 || d->ghost[i] != d->ghost[d->ghosts - 1])
      d->ghost[d->ghosts++] = d->ghost[i];
  for (int64_t i = 0; i < d->ghosts; i++) counts[row_owner(d, d->ghost[i])]++;
  HALO_ALLOC(d->ghost_part, d->ghosts, "neighbour parts");
  HALO_ALLOC(d->ghost_degree, d->ghosts, "neighbour degrees");
done:
  return st;
}

/* Each rank asks the owners of its ghosts for their part and degree.
 * Collective (agreed). */
static halo_status ghost_info(dist *d) {
  halo_status st = HALO_OK;
  int64_t *counts = NULL, *asked = NULL, *answer = NULL, *got = NULL;
  xfer x = {0};
  phase_begin(d);
  counts = calloc((size_t)d->size, sizeof *counts);
  st = counts ? ghost_ids(d, counts) : HALO_ERR_NOMEM;
  if (!counts) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_TRY(xfer_plan(d, counts, "the neighbour exchange", &x));
  phase_begin(d);
  asked = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *asked);
  answer = malloc((size_t)(x.received > 0 ? 2 * x.received : 1) * sizeof *answer);
  got = malloc((size_t)(d->ghosts > 0 ? 2 * d->ghosts : 1) * sizeof *got);
  if (!asked || !answer || !got) {
    halo_log_error("out of memory allocating the neighbour exchange");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(
      MPI_Alltoallv(d->ghost, x.sc, x.sd, MPI_INT64_T, asked, x.rc, x.rd, MPI_INT64_T, d->comm));
  for (int64_t i = 0; i < x.received; i++) {
    const int64_t r = asked[i] - d->g.begin;
    answer[2 * i] = d->part[r];
    answer[2 * i + 1] = d->g.indptr[r + 1] - d->g.indptr[r];
  }
  HALO_MPI(MPI_Alltoallv(answer, x.rc, x.rd, d->pair_type, got, x.sc, x.sd, d->pair_type, d->comm));
  for (int64_t i = 0; i < d->ghosts; i++) {
    d->ghost_part[i] = got[2 * i];
    d->ghost_degree[i] = got[2 * i + 1];
  }
done:
  xfer_free(&x);
  free(got);
  free(answer);
  free(asked);
  free(counts);
  return st;
}

/* Neighbour v's part and degree: v is in the block or a ghost. Local. */
static void neighbour(const dist *d, int64_t v, int64_t *part, int64_t *degree) {
  const halo_dgraph *g = &d->g;
  if (v >= g->begin && v < g->begin + g->rows) {
    *part = d->part[v - g->begin];
    *degree = g->indptr[v - g->begin + 1] - g->indptr[v - g->begin];
    return;
  }
  const int64_t lo = halo_lower_bound(d->ghost, d->ghosts, v);
  *part = d->ghost_part[lo];
  *degree = d->ghost_degree[lo];
}

/* ---- parts to their writers ------------------------------------------- */

/* What this rank wrote: the manifest's per-part columns and the
 * statistics, zero for the parts of other ranks, summed on rank 0. */
typedef struct written {
  uint64_t *digest, *original_digest; /* original_digest: NULL when the ids were kept */
  int64_t train;                      /* train nodes of the parts written */
  int64_t *owned, *halo;
  halo_partition_stats *stats;
} written;

/* A row's record: its id, its id in the input (or -1), its degree, its
 * label, split, tasks (eight an item) and feature row (two floats an item)
 * when they come from files, then (neighbour, part, degree) for each
 * neighbour. */
static int64_t target_items(const dist *d) {
  return d->file_multilabel ? (d->file_classes + 7) / 8 : 0;
}

static int64_t record_x_at(const dist *d) {
  return 3 + d->has_file_labels + (d->split != NULL) + target_items(d);
}

static int64_t record_head(const dist *d) {
  return 3 + d->has_file_labels + (d->split != NULL) + target_items(d) + (d->file_features + 1) / 2;
}

static int64_t record_items(const dist *d, int64_t r) {
  return record_head(d) + 3 * (d->g.indptr[r + 1] - d->g.indptr[r]);
}

/* The records a rank sends a writer are padded with -1 to whole units of
 * ROUTE_UNIT items, and MPI counts units: one writer may then receive up to
 * 2^31 units (1 TB) of a part, where int counts of items stopped at 16 GB. */
enum { ROUTE_UNIT = 64 };

static int64_t route_units(int64_t items) { return (items + ROUTE_UNIT - 1) / ROUTE_UNIT; }

/* The next record at or after item i: padding (ids are >= 0) runs to the
 * end of its unit. Local. */
static int64_t next_record(const int64_t *rec, int64_t i, int64_t items) {
  while (i < items && rec[i] < 0) i = (i / ROUTE_UNIT + 1) * ROUTE_UNIT;
  return i;
}

/* The records of the block's rows of parts [first, first + K), by writer
 * rank: counts (out == NULL), or the records at out + at[writer]. Local. */
static void pack_rows(const dist *d, int32_t first, int64_t *counts, int64_t *out, int64_t *at) {
  const halo_dgraph *g = &d->g;
  for (int64_t r = 0; r < g->rows; r++) {
    const int32_t w = d->part[r] - first;
    if (w < 0 || w >= d->size) continue;
    if (!out) {
      counts[w] += record_items(d, r);
      continue;
    }
    int64_t *rec = out + at[w];
    rec[0] = g->begin + r;
    rec[1] = d->original ? d->original[r] : -1;
    rec[2] = g->indptr[r + 1] - g->indptr[r];
    if (d->has_file_labels) rec[3] = d->labels[r];
    if (d->split) rec[3 + d->has_file_labels] = d->split[r];
    if (d->file_multilabel) {
      int64_t *tasks = rec + 3 + d->has_file_labels + (d->split != NULL);
      tasks[target_items(d) - 1] = 0; /* the part of a last item no task fills */
      memcpy(tasks, d->targets + r * d->file_classes, (size_t)d->file_classes);
    }
    if (d->file_features > 0) {
      int64_t *row = rec + record_x_at(d);
      row[(d->file_features + 1) / 2 - 1] = 0; /* the half of a last item no float fills */
      memcpy(row, d->x + r * d->file_features, (size_t)d->file_features * sizeof *d->x);
    }
    for (int64_t k = g->indptr[r], i = record_head(d); k < g->indptr[r + 1]; k++, i += 3) {
      rec[i] = g->nbr[k];
      neighbour(d, g->nbr[k], &rec[i + 1], &rec[i + 2]);
    }
    at[w] += record_items(d, r);
  }
}

/* The part's rows, from the records every rank sent, ascending in id (rank
 * order is id order), and their node data. */
typedef struct part_rows {
  halo_part_rows rows;
  int64_t *id, *indptr, *nbr, *nbr_degree, *original_id;
  int32_t *nbr_part, *labels;
  int8_t *targets;
  float *x;
  uint8_t *split;
} part_rows;

static void part_rows_free(part_rows *p) {
  free(p->original_id);
  free(p->id);
  free(p->indptr);
  free(p->nbr);
  free(p->nbr_degree);
  free(p->nbr_part);
  free(p->labels);
  free(p->targets);
  free(p->x);
  free(p->split);
  *p = (part_rows){0};
}

/* Unpacks `items` record items of part p and draws the rows' node data. Local. */
static halo_status unpack_rows(const dist *d, int32_t p, const int64_t *rec, int64_t items,
                               part_rows *out) {
  halo_status st = HALO_OK;
  int64_t rows = 0, nnz = 0;
  const int64_t head = record_head(d);
  for (int64_t i = next_record(rec, 0, items); i < items;
       i = next_record(rec, i + head + 3 * rec[i + 2], items)) {
    rows++;
    nnz += rec[i + 2];
  }
  const int64_t F = d->has_synth ? d->synth.features : d->file_features;
  HALO_TRY(admit(
      d->slice.source, "writing a part",
      (double)rows * (8.0 * 3 + 4.0 * F + 5.0 + (double)d->file_classes) + 20.0 * (double)nnz));
  HALO_ALLOC(out->id, rows, "part rows");
  HALO_ALLOC(out->indptr, rows + 1, "part rows");
  HALO_ALLOC(out->nbr, nnz, "part rows");
  HALO_ALLOC(out->nbr_part, nnz, "part rows");
  HALO_ALLOC(out->nbr_degree, nnz, "part rows");
  if (d->original) HALO_ALLOC(out->original_id, rows, "original ids");
  if (d->file_features > 0) HALO_ALLOC(out->x, rows * F, "node features");
  if (d->has_file_labels) HALO_ALLOC(out->labels, rows, "node labels");
  if (d->split) HALO_ALLOC(out->split, rows, "node split");
  if (d->file_multilabel) HALO_ALLOC(out->targets, rows * d->file_classes, "node labels");
  const int64_t x_at = record_x_at(d), tasks_at = x_at - target_items(d);
  for (int64_t i = next_record(rec, 0, items), r = 0, k = 0; i < items; r++) {
    const int64_t degree = rec[i + 2];
    out->id[r] = rec[i];
    if (out->original_id) out->original_id[r] = rec[i + 1];
    if (out->labels) out->labels[r] = (int32_t)rec[i + 3];
    if (out->split) out->split[r] = (uint8_t)rec[i + 3 + d->has_file_labels];
    if (out->targets)
      memcpy(out->targets + r * d->file_classes, rec + i + tasks_at, (size_t)d->file_classes);
    if (out->x) memcpy(out->x + r * F, rec + i + x_at, (size_t)F * sizeof *out->x);
    out->indptr[r + 1] = out->indptr[r] + degree;
    for (int64_t j = 0; j < degree; j++, k++) {
      const int64_t *nb = rec + i + head + 3 * j;
      out->nbr[k] = nb[0];
      out->nbr_part[k] = (int32_t)nb[1];
      out->nbr_degree[k] = nb[2];
    }
    i = next_record(rec, i + head + 3 * degree, items);
  }
  if (d->has_synth) {
    /* --split DIR replaces the drawn split, as a sequential run's. */
    uint8_t *drawn = NULL;
    if (F > 0) HALO_ALLOC(out->x, rows * F, "node features");
    HALO_ALLOC(out->labels, rows, "node labels");
    HALO_ALLOC(drawn, rows, "node split");
    st = halo_node_synth_rows(&d->synth, out->id, rows, out->x, out->labels, drawn);
    if (out->split)
      free(drawn);
    else
      out->split = drawn;
    HALO_TRY(st);
  }
  if (d->rq->synth_split) {
    if (!out->split) HALO_ALLOC(out->split, rows, "node split");
    /* As halo_graph_synthesize_split: every node of an unlabelled graph,
     * else the labelled ones. */
    for (int64_t r = 0; r < rows; r++) {
      int labelled = out->labels ? out->labels[r] >= 0 : 1;
      if (out->targets) { /* a multi-label row is labelled when a task is */
        labelled = 0;
        for (int32_t t = 0; t < d->file_classes; t++)
          labelled |= out->targets[r * d->file_classes + t] >= 0;
      }
      out->split[r] =
          labelled ? halo_split_draw(d->rq->synth_split, (uint64_t)d->rq->opt.seed, out->id[r])
                   : HALO_SPLIT_NONE;
    }
  }
  out->rows = (halo_part_rows){.part = p,
                               .parts = d->rq->opt.parts,
                               .nodes = d->g.nodes,
                               .edges = d->g.edges,
                               .n_owned = rows,
                               .id = out->id,
                               .indptr = out->indptr,
                               .nbr = out->nbr,
                               .nbr_part = out->nbr_part,
                               .nbr_degree = out->nbr_degree,
                               .features = (int32_t)F,
                               .classes = d->has_synth ? d->synth.classes : d->file_classes,
                               .x = out->x,
                               .labels = out->labels,
                               .targets = out->targets,
                               .split = out->split,
                               .original_id = out->original_id};
done:
  return st;
}

/* Builds and writes part p from its records, which it frees (*rec = NULL)
 * once they are unpacked: they are as large as the rows, and the shard is
 * built next to those. Local. */
static halo_status write_part(const dist *d, int32_t p, int64_t **rec, int64_t items,
                              uint64_t run_id, written *w) {
  halo_status st = HALO_OK;
  part_rows rows = {0};
  halo_shard *shard = NULL;
  char path[4096];
  HALO_TRY(unpack_rows(d, p, *rec, items, &rows));
  free(*rec);
  *rec = NULL;
  HALO_TRY(halo_partition_shard_of_rows(&rows.rows, d->rq->opt.order, run_id, &shard));
  part_rows_free(&rows);
  HALO_TRY(halo_shard_path(path, sizeof path, d->rq->tmpdir, p, d->rq->opt.parts));
  HALO_TRY(halo_shard_write(path, shard));
  w->digest[p] = halo_shard_digest(shard);
  if (w->original_digest) w->original_digest[p] = halo_shard_digest_original_id(shard);
  w->owned[p] = shard->n_owned;
  w->train += shard->n_train;
  w->halo[p] = shard->n_halo;
  halo_partition_stats_add_shard(w->stats, shard);
done:
  halo_shard_destroy(&shard);
  part_rows_free(&rows);
  return st;
}

/* In rounds of K parts, part first + k goes to rank k, which writes it.
 * Collective (agreed). */
static halo_status route_and_write(dist *d, uint64_t run_id, written *w) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  int64_t *counts = NULL, *at = NULL, *send = NULL, *recv = NULL;
  MPI_Datatype unit = MPI_DATATYPE_NULL;
  xfer x = {0};
  phase_begin(d);
  counts = calloc((size_t)d->size, sizeof *counts);
  at = calloc((size_t)d->size, sizeof *at);
  if (!counts || !at) {
    halo_log_error("out of memory allocating exchange counts");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Type_contiguous(ROUTE_UNIT, MPI_INT64_T, &unit));
  HALO_MPI(MPI_Type_commit(&unit));
  for (int32_t first = 0; first < P; first += d->size) {
    memset(counts, 0, (size_t)d->size * sizeof *counts);
    pack_rows(d, first, counts, NULL, NULL);
    for (int k = 0; k < d->size; k++) counts[k] = route_units(counts[k]);
    HALO_TRY(xfer_plan(d, counts, "routing the parts", &x));
    const int64_t sent = x.sent * ROUTE_UNIT, received = x.received * ROUTE_UNIT;
    phase_begin(d);
    st = admit(d->slice.source, "routing a part", 8.0 * (double)(sent + received));
    if (st == HALO_OK) {
      send = malloc((size_t)(sent > 0 ? sent : 1) * sizeof *send);
      recv = malloc((size_t)(received > 0 ? received : 1) * sizeof *recv);
      if (!send || !recv) {
        halo_log_error("out of memory allocating the rows of a part");
        st = HALO_ERR_NOMEM;
      }
    }
    HALO_TRY(phase_end(d, st));
    for (int k = 0; k < d->size; k++) at[k] = (int64_t)x.sd[k] * ROUTE_UNIT;
    pack_rows(d, first, counts, send, at);
    for (int k = 0; k < d->size; k++) /* pad to the next writer's records */
      for (int64_t i = at[k]; i < ((int64_t)x.sd[k] + x.sc[k]) * ROUTE_UNIT; i++) send[i] = -1;
    HALO_MPI(MPI_Alltoallv(send, x.sc, x.sd, unit, recv, x.rc, x.rd, unit, d->comm));
    free(send);
    send = NULL;
    phase_begin(d);
    const int32_t p = first + d->rank;
    if (p < P) st = write_part(d, p, &recv, received, run_id, w);
    free(recv);
    recv = NULL;
    xfer_free(&x);
    HALO_TRY(phase_end(d, st));
    const int64_t done_parts = first + d->size < P ? first + d->size : P;
    if (d->rank == 0 && d->rq->progress) d->rq->progress(d->rq->ctx, done_parts, P);
  }
done:
  if (unit != MPI_DATATYPE_NULL) MPI_Type_free(&unit);
  xfer_free(&x);
  free(recv);
  free(send);
  free(at);
  free(counts);
  return st;
}

/* ---- manifest and figures --------------------------------------------- */

static void written_free(written *w) {
  free(w->digest);
  free(w->original_digest);
  free(w->owned);
  free(w->halo);
  halo_partition_stats_destroy(&w->stats);
  *w = (written){0};
}

static halo_status written_alloc(const dist *d, written *w) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  HALO_ALLOC(w->digest, P, "part digests");
  if (d->original) HALO_ALLOC(w->original_digest, P, "original id digests");
  HALO_ALLOC(w->owned, P, "part sizes");
  HALO_ALLOC(w->halo, P, "part sizes");
  HALO_TRY(halo_partition_stats_alloc(d->g.nodes, d->g.edges, P, &w->stats));
done:
  return st;
}

/* Sums `count` items of every rank's `buf` into rank 0's, in place. */
static int reduce_sum(const dist *d, void *buf, int64_t count, MPI_Datatype type, MPI_Op op) {
  if (count > INT_MAX) return MPI_ERR_COUNT;
  return MPI_Reduce(d->rank == 0 ? MPI_IN_PLACE : buf, buf, (int)count, type, op, 0, d->comm);
}

/* Every rank's columns and figures summed on rank 0, which writes the
 * manifest.  Collective (agreed). */
static halo_status write_manifest(dist *d, written *w, const int32_t *all_parts,
                                  const halo_graph *summary, uint64_t run_id) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  halo_partition_stats *s = w->stats;
  char path[4096];
  /* Each part's column is set by its one writer: OR is its value. */
  HALO_MPI(reduce_sum(d, w->digest, P, MPI_UINT64_T, MPI_BOR));
  if (w->original_digest) HALO_MPI(reduce_sum(d, w->original_digest, P, MPI_UINT64_T, MPI_BOR));
  HALO_MPI(reduce_sum(d, w->owned, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, w->halo, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->owned, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->halo, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->nnz, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->send, P, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, s->peers, P, MPI_INT32_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, &s->edge_cut, 1, MPI_INT64_T, MPI_SUM));
  HALO_MPI(reduce_sum(d, &w->train, 1, MPI_INT64_T, MPI_SUM));
  if (s->between) HALO_MPI(reduce_sum(d, s->between, (int64_t)P * P, MPI_INT64_T, MPI_SUM));
  phase_begin(d);
  if (d->rank == 0) {
    halo_partition_stats_finish(s);
    halo_manifest m = {.format_version = HALO_SHARD_FORMAT_VERSION,
                       .nodes = summary->n,
                       .edges = summary->m,
                       .features = summary->features,
                       .classes = summary->classes,
                       .multilabel = summary->multilabel,
                       .parts = P,
                       .seed = d->rq->opt.seed,
                       .ufactor = d->rq->opt.ufactor,
                       .source_digest = summary->source_digest,
                       .run_id = run_id,
                       .part = (int32_t *)all_parts, /* the manifest writer only reads it */
                       .part_digest = w->digest,
                       .part_owned = w->owned,
                       .part_halo = w->halo,
                       .part_original_id_digest = w->original_digest};
    snprintf(m.method, sizeof m.method, "%s", halo_method_name(d->rq->opt.method));
    snprintf(m.objective, sizeof m.objective, "%s", halo_objective_name(d->rq->opt.objective));
    snprintf(m.source, sizeof m.source, "%s", summary->source);
    if (snprintf(path, sizeof path, "%s/manifest.h5", d->rq->tmpdir) >= (int)sizeof path) {
      halo_log_error("output path %s/manifest.h5 is too long", d->rq->tmpdir);
      st = HALO_ERR_ARG;
    }
    if (st == HALO_OK) st = halo_manifest_write(path, &m);
  }
  HALO_TRY(phase_end(d, st));
done:
  return st;
}

/* ---- the run ---------------------------------------------------------- */

static void dist_free(dist *d) {
  halo_edge_slice_free(&d->slice);
  free(d->g.indptr);
  free(d->g.nbr);
  free(d->part);
  free(d->ghost);
  free(d->ghost_part);
  free(d->ghost_degree);
  free(d->original);
  free(d->x);
  free(d->labels);
  free(d->targets);
  free(d->split);
  free(d->ogb);
  free(d->begins);
  if (d->pair_type != MPI_DATATYPE_NULL) MPI_Type_free(&d->pair_type);
}

/* Digits of v in base 10. */
static int digits(uint64_t v) {
  int n = 1;
  while (v >= 10) v /= 10, n++;
  return n;
}

/* v in base 10 at p; returns the end. */
static char *put_decimal(char *p, uint64_t v) {
  const int n = digits(v);
  for (int i = n - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
  return p + n;
}

/* Writes len bytes of buf at *offset of fd, advancing *offset; 0 or an
 * errno. */
static int write_at(int fd, const char *buf, size_t len, int64_t *offset) {
  while (len > 0) {
    const ssize_t n = pwrite(fd, buf, len, (off_t)*offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    buf += n;
    len -= (size_t)n;
    *offset += n;
  }
  return 0;
}

/* The clean graph in METIS' format (halo_partition_write_metis_to's bytes)
 * into rq->metis_tmp, which rank 0 created and commits: every rank counts
 * the bytes of its block's lines, learns its offset from the ranks below
 * it (rank 0's lines follow the header), opens the file (on a file system
 * every rank sees, as the output folder's) and writes its lines there with
 * pwrite in 1 MB pieces, then fsyncs and closes it; so no rank holds more
 * than its block, and every rank's data is on disk before rank 0 renames
 * the file.  Each step is agreed on, so a rank that cannot open the file
 * stops every rank instead of leaving them waiting.  Collective
 * (agreed). */
static halo_status write_metis(dist *d) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &d->g;
  const char *name = d->rq->metis_name;
  enum { BUF = 1 << 20, SLACK = 64 }; /* SLACK: room for one number and a separator */
  char *buf = NULL, *p = NULL, header[64];
  int fd = -1, err = 0;
  int64_t bytes = 0, offset = 0, start = 0;
  phase_begin(d);
  const int hlen = snprintf(header, sizeof header, "%lld %lld\n", (long long)g->nodes,
                            (long long)(g->edges / 2));
  if (d->rank == 0) bytes = hlen;
  for (int64_t r = 0; r < g->rows; r++) {
    const int64_t b = g->indptr[r], e = g->indptr[r + 1];
    bytes += 1 + (e > b ? e - b - 1 : 0); /* the separators and the newline */
    for (int64_t k = b; k < e; k++) bytes += digits((uint64_t)g->nbr[k] + 1);
  }
  buf = malloc(BUF + SLACK);
  if (!buf) {
    halo_log_error("out of memory allocating the METIS file buffer");
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) {
    fd = open(d->rq->metis_tmp, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      halo_log_error("%s: cannot open its temporary %s on rank %d: %s", name, d->rq->metis_tmp,
                     d->rank, strerror(errno));
      st = HALO_ERR_IO;
    }
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Exscan(&bytes, &start, 1, MPI_INT64_T, MPI_SUM, d->comm));
  if (d->rank == 0) start = 0;
  offset = start;

  phase_begin(d);
  p = buf;
  if (d->rank == 0) {
    memcpy(p, header, (size_t)hlen);
    p += hlen;
  }
  for (int64_t r = 0; r < g->rows && !err; r++) {
    for (int64_t k = g->indptr[r]; k < g->indptr[r + 1] && !err; k++) {
      if (k > g->indptr[r]) *p++ = ' ';
      p = put_decimal(p, (uint64_t)g->nbr[k] + 1);
      if (p - buf >= BUF) err = write_at(fd, buf, (size_t)(p - buf), &offset), p = buf;
    }
    *p++ = '\n';
    if (p - buf >= BUF && !err) err = write_at(fd, buf, (size_t)(p - buf), &offset), p = buf;
  }
  if (!err && p > buf) err = write_at(fd, buf, (size_t)(p - buf), &offset);
  if (!err && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno;
  fd = -1;
  if (err) {
    halo_log_error("%s: writing rank %d's lines at byte %lld failed: %s", name, d->rank,
                   (long long)offset, strerror(err));
    st = HALO_ERR_IO;
  } else if (offset - start != bytes) {
    halo_log_error("%s: rank %d wrote %lld bytes, %lld counted", name, d->rank,
                   (long long)(offset - start), (long long)bytes);
    st = HALO_ERR_IO;
  }
  HALO_TRY(phase_end(d, st));
done:
  if (fd >= 0) close(fd);
  free(buf);
  return st;
}

halo_status dist_partition(MPI_Comm comm, const dist_request *rq, dist_result *out) {
  halo_status st = HALO_OK;
  dist d = {.comm = comm, .rq = rq, .pair_type = MPI_DATATYPE_NULL};
  written w = {0};
  int32_t *all_parts = NULL;
  char what[128];
  double mark = now_s();
  *out = (dist_result){0};
  MPI_Comm_rank(comm, &d.rank);
  MPI_Comm_size(comm, &d.size);
  out->ranks = d.size;
  HALO_MPI(MPI_Type_contiguous(2, MPI_INT64_T, &d.pair_type));
  HALO_MPI(MPI_Type_commit(&d.pair_type));

  snprintf(what, sizeof what, "loading %d slice%s of the input", d.size, d.size == 1 ? "" : "s");
  say(&d, what);
  HALO_TRY(load_input(&d));
  out->wall[DIST_LOAD] = now_s() - mark;
  mark = now_s();

  say(&d, "cleaning (symmetrize, remove duplicates and self-loops), distributed");
  HALO_TRY(clean(&d, &out->clean));
  const int64_t block_edges = d.g.indptr[d.g.rows];
  HALO_MPI(MPI_Reduce(&block_edges, &out->block_edges_max, 1, MPI_INT64_T, MPI_MAX, 0, comm));
  halo_graph *g = &out->summary;
  g->n = d.g.nodes;
  g->m = d.g.edges;
  g->features = d.has_synth ? d.synth.features : d.file_features;
  g->classes = d.has_synth ? d.synth.classes : d.file_classes;
  g->multilabel = d.file_multilabel;
  snprintf(g->source, sizeof g->source, "%s", d.slice.source);
  g->source_digest = rq->synth_split ? halo_split_digest(d.slice.source_digest, rq->synth_split,
                                                         (uint64_t)rq->opt.seed)
                                     : d.slice.source_digest;
  out->wall[DIST_CLEAN] = now_s() - mark;
  mark = now_s();

  if (rq->metis_tmp) {
    say(&d, "writing the METIS graph");
    HALO_TRY(write_metis(&d));
    out->wall[DIST_WRITE] = now_s() - mark;
    goto figures;
  }

  snprintf(what, sizeof what, "partitioning into %d parts (ptscotch on %d rank%s)", rq->opt.parts,
           d.size, d.size == 1 ? "" : "s");
  say(&d, what);
  HALO_TRY(assign_parts(&d));
  HALO_TRY(gather_parts(&d, &all_parts));
  if (d.rank == 0) out->run_id = halo_partition_run_id(g, &rq->opt, all_parts);
  HALO_MPI(MPI_Bcast(&out->run_id, 1, MPI_UINT64_T, 0, comm));
  out->wall[DIST_PARTITION] = now_s() - mark;
  mark = now_s();

  say(&d, "writing shards");
  HALO_TRY(ghost_info(&d));
  phase_begin(&d);
  st = written_alloc(&d, &w);
  HALO_TRY(phase_end(&d, st));
  HALO_TRY(route_and_write(&d, out->run_id, &w));
  HALO_TRY(write_manifest(&d, &w, all_parts, g, out->run_id));
  out->wall[DIST_WRITE] = now_s() - mark;

figures:;
  const int64_t peak = halo_memory_peak();
  HALO_MPI(MPI_Reduce(&peak, &out->peak_rss_max, 1, MPI_INT64_T, MPI_MAX, 0, comm));
  HALO_MPI(MPI_Reduce(&peak, &out->peak_rss_sum, 1, MPI_INT64_T, MPI_SUM, 0, comm));
  out->has_split = d.has_synth || rq->synth_split != NULL || d.split != NULL;
  out->train = w.train; /* rank 0's is the sum */
  if (d.rank == 0) {
    out->stats = w.stats;
    w.stats = NULL;
  }
done:
  written_free(&w);
  free(all_parts);
  dist_free(&d);
  return st;
}

void dist_result_free(dist_result *r) {
  if (!r) return;
  halo_partition_stats_destroy(&r->stats);
}
