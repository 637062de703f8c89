/* The distributed partitioner's reading phase (dist-impl.h): which input
 * it is, by the loaders' format table, and each rank's slice of it: an
 * edge list or an OGB edge.csv by slices of lines, a gzip stream dealt out
 * by rank 0, a Matrix Market file checked against its size line over all
 * ranks, and the digest of a plain file read by every rank. */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- load ------------------------------------------------------------- */

/* The node count the part vector's gather allows. Local. */
halo_status halo__dist_nodes_limit(const char *source, int64_t n) {
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
  const halo_partition_dist_request *rq = d->rq;
  const halo_edge_slice *s = &d->slice;
  if (s->nodes == 0)
    HALO_FAIL(HALO_ERR_ARG, "%s: holds no nodes (its node count is 0); a graph needs at least one",
              s->source);
  HALO_TRY(halo__dist_nodes_limit(s->source, s->nodes));
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

/* What the input is to this rank, by its format's row (halo-load.h, "The
 * format table"): how the row says it is read by slices, and for a file of
 * lines whether it is gzip; a path that names no file goes to the spec
 * reader, which names it.  The ranks must agree on it, since each kind
 * runs other collectives. */
enum {
  INPUT_SPEC = 0,
  INPUT_FILE = 1,
  INPUT_GZIP = 2,
  INPUT_OGB = 3,
  INPUT_MTX = 4,
  INPUT_NPY = 5,
  INPUT_NPZ = 6,
  INPUTS = 8
};

/* The kind of the input (*code: the kind and the format, which the ranks
 * compare): --format's, else what halo_load_detect_format makes of the
 * path.  A format the table does not read by slices is refused here, by
 * name. Local. */
static halo_status input_kind(dist *d, int *code) {
  halo_status st = HALO_OK;
  const char *in = d->rq->input;
  struct stat sb;
  int kind = INPUT_SPEC;
  const halo_format f =
      d->rq->format != HALO_FORMAT_AUTO ? d->rq->format : halo_load_detect_format(in);
  d->row = halo_format_row_of(f);
  if (!d->row) HALO_FAIL(HALO_ERR_ARG, "halo_load: invalid format %d", (int)f);
  HALO_TRY(halo_load_check_nodes(d->row, in, d->rq->nodes));
  if (d->row->slicing == HALO_SLICING_SPEC || stat(in, &sb) != 0) goto done;
  switch (d->row->slicing) {
    case HALO_SLICING_LINES:
      kind = halo_load_is_gzip(in) ? INPUT_GZIP : INPUT_FILE;
      break;
    case HALO_SLICING_MTX:
      kind = INPUT_MTX;
      break;
    case HALO_SLICING_FOLDER:
      kind = INPUT_OGB;
      break;
    case HALO_SLICING_NPY:
      kind = INPUT_NPY;
      break;
    case HALO_SLICING_NPZ:
      kind = INPUT_NPZ;
      break;
    default:
      HALO_FAIL(HALO_ERR_ARG,
                "%s: the %s format cannot be read by slices, so --method ptscotch cannot "
                "partition it (use another --method)",
                in, d->row->name);
  }
done:
  *code = kind + INPUTS * (int)f;
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
 * it (a file of lines' by its row's stream for `nodes` NODES_SNAP, Matrix Market's for NODES_MTX,
 * else an OGB edge.csv's of `nodes` nodes, continuing d->digest) and deals
 * its edges out in blocks, round robin; an empty block ends them.
 * Collective (agreed). */
enum { NODES_SNAP = -1, NODES_MTX = -2 }; /* load_gzip's `nodes` for other formats */

halo_status halo__dist_load_gzip(dist *d, const char *path, int64_t nodes) {
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
    const halo_load_options lo = dist_load_options(d);
    if (nodes == NODES_SNAP)
      st = d->row->stream(path, &lo, GZIP_BLOCK_EDGES, scatter_block, &g, &digest);
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
  /* An edge list's ids are renumbered over the ranks, unless --nodes kept them. */
  const int64_t kept = d->rq->nodes > 0 ? d->rq->nodes : -1;
  d->slice = (halo_edge_slice){.nodes = nodes == NODES_SNAP  ? kept
                                        : nodes == NODES_MTX ? mtx_rows
                                                             : nodes,
                               .renumber = nodes == NODES_SNAP && kept < 0,
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
halo_status halo__dist_lines_before(dist *d, const char *path, int64_t *before) {
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
halo_status halo__dist_digest_file(dist *d, const char *path, halo_digest_chunked *acc) {
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

/* A file of lines by its row's slice (`nodes` -1: an edge list) or an OGB
 * edge.csv of `nodes` nodes: each rank counts its slice's lines, learns how many lie before it, and
 * parses its slice, naming a bad line by its line in the file; then the ranks digest the file
 * together (an edge list's digest, which every rank then has; an OGB file continues d->digest).
 * Collective (agreed). */
halo_status halo__dist_load_file(dist *d, const char *path, int64_t nodes) {
  halo_status st = HALO_OK;
  int64_t before = 0;
  uint64_t digest = 0;
  halo_digest_chunked own;
  halo_digest_chunked_init(&own);
  const halo_load_options lo = dist_load_options(d);
  HALO_TRY(halo__dist_lines_before(d, path, &before));
  phase_begin(d);
  st = nodes < 0 ? d->row->slice(path, &lo, d->rank, d->size, before, &d->slice)
                 : halo_load_ogb_edge_slice(path, nodes, d->rank, d->size, before, &d->slice);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_digest_file(d, path, nodes < 0 ? &own : &d->digest));
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
    HALO_TRY(halo__dist_load_gzip(d, path, NODES_MTX));
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
  HALO_TRY(halo__dist_digest_file(d, path, &own));
  digest = halo_digest_chunked_final(&own);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  d->slice.source_digest = digest;
done:
  return st;
}

/* A .npy edge array: each rank preads its edges, the node count is
 * --nodes, else the largest id + 1 over the ranks or the rows of .npy
 * --features and --labels when more (as halo-partition's sequential run
 * counts them), and the ranks digest the file together.  Collective
 * (agreed). */
static halo_status load_npy_file(dist *d) {
  halo_status st = HALO_OK;
  const char *path = d->rq->input;
  const halo_load_options lo = dist_load_options(d);
  int64_t most[3] = {-1, 0, 0}, all[3] = {0, 0, 0};
  halo_digest_chunked own;
  halo_digest_chunked_init(&own);
  phase_begin(d);
  st = d->row->slice(path, &lo, d->rank, d->size, 0, &d->slice);
  for (int64_t k = 0; st == HALO_OK && k < 2 * d->slice.count; k++)
    if (d->slice.pair[k] > most[0]) most[0] = d->slice.pair[k];
  if (st == HALO_OK) st = halo_load_npy_rows(d->rq->features, &most[1]);
  if (st == HALO_OK) st = halo_load_npy_rows(d->rq->labels, &most[2]);
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Allreduce(most, all, 3, MPI_INT64_T, MPI_MAX, d->comm));
  int64_t n = all[0] + 1;
  if (all[1] > n) n = all[1];
  if (all[2] > n) n = all[2];
  d->slice.nodes = lo.nodes > 0 ? lo.nodes : n;
  d->slice.renumber = 0;
  HALO_TRY(halo__dist_digest_file(d, path, &own));
  uint64_t digest = halo_digest_chunked_final(&own);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  snprintf(d->slice.source, sizeof d->slice.source, "%s", path);
  d->slice.source_digest = digest;
done:
  return st;
}

/* --dims against the input's widths, as a sequential run checks them,
 * before any partitioning. Local. */
static halo_status check_dims(const dist *d) {
  halo_status st = HALO_OK;
  const halo_partition_dist_request *rq = d->rq;
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

/* This rank's slice of the input (a spec's, an edge list's renumbered over
 * all slices, or an OGB folder's) and the checks of the request.
 * Collective (agreed). */
halo_status halo__dist_load_input(dist *d) {
  halo_status st = HALO_OK;
  int code = INPUT_SPEC, kinds[2] = {0, 0};
  phase_begin(d);
  st = input_kind(d, &code);
  HALO_TRY(phase_end(d, st));
  const int mine[2] = {code, -code}, kind = code % INPUTS;
  HALO_MPI(MPI_Allreduce(mine, kinds, 2, MPI_INT, MPI_MAX, d->comm));
  phase_begin(d);
  if (kinds[0] != -kinds[1]) { /* max != min */
    halo_log_error(
        "%s: is not the same file on every rank (missing, unreadable or another kind on "
        "some); the ranks must see the same files (a shared file system)",
        d->rq->input);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && d->rq->split_name && kind != INPUT_OGB && kind != INPUT_NPZ) {
    halo_log_error("--split-name %s: %s is not an OGB folder (--split DIR gives any input a split)",
                   d->rq->split_name, d->rq->input);
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && kind == INPUT_SPEC)
    st = halo_load_spec_slice(d->rq->input, d->rank, d->size, &d->slice);
  HALO_TRY(phase_end(d, st));
  if (kind == INPUT_GZIP || kind == INPUT_FILE) {
    if (kind == INPUT_GZIP)
      HALO_TRY(halo__dist_load_gzip(d, d->rq->input, NODES_SNAP));
    else
      HALO_TRY(halo__dist_load_file(d, d->rq->input, -1));
    if (d->slice.renumber)
      HALO_TRY(halo__dist_renumber(d));
    else /* --nodes: the ids are the nodes */
      HALO_TRY(halo__dist_row_blocks(d));
  } else if (kind == INPUT_OGB) {
    HALO_TRY(halo__dist_load_ogb_folder(d));
  } else if (kind == INPUT_MTX) {
    HALO_TRY(load_mtx_file(d));
  } else if (kind == INPUT_NPY) {
    HALO_TRY(load_npy_file(d));
  } else if (kind == INPUT_NPZ) {
    HALO_TRY(halo__dist_load_npz(d));
  }
  /* renumber and the OGB folder's reader cut them before their node data */
  if (kind == INPUT_SPEC || kind == INPUT_MTX || kind == INPUT_NPY)
    HALO_TRY(halo__dist_row_blocks(d));
  phase_begin(d);
  st = check_input(d);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_node_files(d));
  if (d->rq->split) HALO_TRY(halo__dist_split_dir(d));
  phase_begin(d);
  st = check_dims(d);
  HALO_TRY(phase_end(d, st));
done:
  return st;
}
