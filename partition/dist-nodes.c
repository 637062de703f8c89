/* The distributed partitioner's node data (dist-impl.h): --features and
 * --labels files, plain by slices or a gzip stream dealt out by rank 0, to
 * the blocks of rows; an OGB folder (its edges, node data and split); and
 * --split DIR's files for each block. */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static halo_status node_stream(dist *d, const char *path, const halo_load_options *opt,
                               int is_labels, void **block, int32_t *width, int32_t *max_label,
                               int64_t *max_line) {
  halo_status st = HALO_OK;
  const int64_t n = d->slice.nodes;
  const int64_t rows = d->begins[d->rank + 1] - d->begins[d->rank];
  node_scatter ns = {.d = d};
  int64_t counts[3] = {0, -1, 0}; /* rows read, largest label, its line */
  int header = 0;
  *block = NULL;
  *width = 1;
  phase_begin(d);
  if (d->rank == 0) st = halo_load_node_width(path, opt, width, &header);
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(width, 1, MPI_INT32_T, 0, d->comm));
  ns.row_bytes = (size_t)*width * halo_load_node_item(is_labels, *width);
  const int64_t message_rows = NODE_MESSAGE_BYTES / (int64_t)ns.row_bytes > 0
                                   ? NODE_MESSAGE_BYTES / (int64_t)ns.row_bytes
                                   : 1;
  phase_begin(d);
  st = halo__dist_admit(
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
    int64_t label_line = 0;
    st = halo_load_node_stream(path, opt, is_labels, n, message_rows, scatter_rows, &ns, &label,
                               &label_line, &d->digest);
    counts[2] = label_line;
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
                     ns.rows + header, ns.rows, halo_load_node_rows_name(is_labels, *width), n);
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
  HALO_MPI(MPI_Bcast(counts, 3, MPI_INT64_T, 0, d->comm));
  *max_label = (int32_t)counts[1];
  *max_line = counts[2];
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

/* The largest label over the ranks' slices, and where its first
 * occurrence is: the lowest max_line among the slices that hold it
 * (INT64_MAX when none does).  Collective. */
static halo_status agree_max_label(dist *d, const halo_node_slice *ns, int32_t *max_label,
                                   int64_t *max_line) {
  halo_status st = HALO_OK;
  HALO_MPI(MPI_Allreduce(&ns->max_label, max_label, 1, MPI_INT32_T, MPI_MAX, d->comm));
  int64_t line = ns->max_label == *max_label && ns->max_line > 0 ? ns->max_line : INT64_MAX;
  HALO_MPI(MPI_Allreduce(&line, max_line, 1, MPI_INT64_T, MPI_MIN, d->comm));
done:
  return st;
}

/* A slice's feature rows to the blocks: as CSR (d->xc, d->x_sparse) when
 * every rank's slice came back CSR, so that a sparse file is never held
 * dense; else dense into *block, a CSR slice expanded first, as before.
 * Collective (agreed). */
static halo_status feature_blocks(dist *d, halo_node_slice *ns, void **block) {
  halo_status st = HALO_OK;
  int csr = ns->indptr != NULL, all = 0;
  HALO_MPI(MPI_Allreduce(&csr, &all, 1, MPI_INT, MPI_MIN, d->comm));
  const halo_csr a = {.rows = ns->rows,
                      .cols = ns->width,
                      .nnz = ns->indptr ? ns->indptr[ns->rows] : 0,
                      .indptr = ns->indptr,
                      .indices = ns->indices,
                      .values = ns->values};
  if (all) {
    HALO_TRY(halo__dist_csr_to_blocks(d, ns->first, &a, &d->xc));
    d->x_sparse = 1;
    goto done;
  }
  phase_begin(d);
  if (csr) {
    st = halo__dist_admit(d->slice.source, "expanding its feature rows",
                          4.0 * (double)ns->rows * (double)ns->width);
    if (st == HALO_OK &&
        !(ns->x = calloc((size_t)(ns->rows > 0 ? ns->rows : 1) * (size_t)ns->width,
                         sizeof *ns->x))) {
      halo_log_error("out of memory expanding the slice's feature rows");
      st = HALO_ERR_NOMEM;
    }
    if (st == HALO_OK) halo_csr_to_dense(&a, ns->x);
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_to_blocks(d, ns->first, ns->rows, ns->x, ns->width, MPI_FLOAT,
                                sizeof(float), block));
done:
  return st;
}

/* A plain-text node-data file: every rank counts its slice's lines, parses
 * them as rows from the lines below it, and the rows go to the ranks of
 * their blocks; the ranks digest the file together into d->digest.
 * Collective (agreed). */
static halo_status node_slices(dist *d, const char *path, const halo_load_options *opt,
                               int is_labels, void **block, int32_t *width, int32_t *max_label,
                               int64_t *max_line) {
  halo_status st = HALO_OK;
  halo_node_slice ns = {0};
  int64_t before = 0, total = 0;
  const int64_t n = d->slice.nodes;
  HALO_TRY(halo__dist_lines_before(d, path, &before));
  phase_begin(d);
  st = is_labels ? halo_load_labels_slice(path, opt, d->rank, d->size, before, n, &ns)
                 : halo_load_features_slice(path, opt, d->rank, d->size, before, n, &ns);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_digest_file(d, path, &d->digest));
  HALO_MPI(MPI_Allreduce(&ns.rows, &total, 1, MPI_INT64_T, MPI_SUM, d->comm));
  phase_begin(d);
  if (total != n && d->rank == 0) {
    /* At the file's last line, as halo_load names it: a line a row. */
    halo_log_error("%s:%" PRId64 ": %" PRId64 " %s, but the graph has %" PRId64 " nodes", path,
                   total + ns.header, total, halo_load_node_rows_name(is_labels, ns.width), n);
    st = HALO_ERR_MISMATCH;
  }
  HALO_TRY(phase_end(d, st));
  HALO_TRY(agree_max_label(d, &ns, max_label, max_line));
  *width = ns.width;
  if (ns.targets)
    HALO_TRY(
        halo__dist_to_blocks(d, ns.first, ns.rows, ns.targets, ns.width, MPI_INT8_T, 1, block));
  else if (is_labels)
    HALO_TRY(halo__dist_to_blocks(d, ns.first, ns.rows, ns.labels, 1, MPI_INT32_T, sizeof(int32_t),
                                  block));
  else
    HALO_TRY(feature_blocks(d, &ns, block));
done:
  halo_node_slice_free(&ns);
  return st;
}

/* The class count of the block's labels, whose largest over all blocks is
 * max_label, first at `where` (halo_load_label_where): the labels in use
 * are gathered as a bitmap over the ranks, and halo_load_check_classes
 * rules on them with `classes` (--classes; 0: none) as a sequential read
 * does.  Collective (agreed). */
static halo_status block_classes(dist *d, const char *path, const char *where, int32_t classes,
                                 const int32_t *labels, int32_t max_label, int32_t *out) {
  halo_status st = HALO_OK;
  const int64_t n = d->slice.nodes, rows = d->begins[d->rank + 1] - d->begins[d->rank];
  int64_t distinct = n, words = 0;
  uint64_t *seen = NULL;
  /* As halo_load_label_distinct: past 2n the rule's verdict needs no count. */
  const int counted = max_label >= 0 && (int64_t)max_label + 1 <= 2 * n;
  phase_begin(d);
  if (counted) {
    words = ((int64_t)max_label >> 6) + 1;
    st = halo__dist_admit(path, "counting the labels in use", 8.0 * (double)words);
    if (st == HALO_OK && !HALO_CALLOC(seen, words)) {
      halo_log_error("%s: out of memory counting the labels in use", path);
      st = HALO_ERR_NOMEM;
    }
    for (int64_t v = 0; st == HALO_OK && v < rows; v++)
      if (labels[v] >= 0) seen[labels[v] >> 6] |= 1ull << (labels[v] & 63);
  }
  HALO_TRY(phase_end(d, st));
  if (counted) {
    HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, seen, (int)words, MPI_UINT64_T, MPI_BOR, d->comm));
    distinct = 0;
    for (int64_t w = 0; w < words; w++) distinct += __builtin_popcountll(seen[w]);
  }
  phase_begin(d);
  st = halo_load_check_classes(where, max_label, distinct, classes, out);
  HALO_TRY(phase_end(d, st));
done:
  free(seen);
  return st;
}

/* A .npy node-data file: each rank preads the rows of its block, and the
 * ranks digest the file together into d->digest; *max_line gets 1 + the
 * row of the largest label's first occurrence.  Collective (agreed). */
static halo_status node_npy(dist *d, const char *path, const halo_load_options *opt, int is_labels,
                            void **block, int32_t *width, int32_t *max_label, int64_t *max_line) {
  halo_status st = HALO_OK;
  halo_node_slice ns = {0};
  const int64_t begin = d->begins[d->rank], rows = d->begins[d->rank + 1] - begin;
  phase_begin(d);
  st = halo_load_npy_node_rows(path, opt, is_labels, d->slice.nodes, begin, rows, &ns);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_digest_file(d, path, &d->digest));
  HALO_TRY(agree_max_label(d, &ns, max_label, max_line));
  *width = ns.width;
  *block = ns.targets ? (void *)ns.targets : ns.labels ? (void *)ns.labels : (void *)ns.x;
  ns.targets = NULL;
  ns.labels = NULL;
  ns.x = NULL;
done:
  halo_node_slice_free(&ns);
  return st;
}

/* One node-data file (features or labels, plain or gzip) into this rank's
 * block of rows; opt: the user's options (--features, --labels), or NULL
 * for an OGB folder's file.  Collective (agreed). */
static halo_status node_file(dist *d, const char *path, const halo_load_options *opt,
                             int is_labels) {
  halo_status st = HALO_OK;
  int is_gzip = halo_load_is_gzip(path), any = 0;
  void *block = NULL;
  int32_t width = 1, max_label = -1;
  int64_t max_line = 0;
  int is_npy = halo_load_is_npy(path), npy = 0;
  HALO_MPI(MPI_Allreduce(&is_gzip, &any, 1, MPI_INT, MPI_MAX, d->comm));
  HALO_MPI(MPI_Allreduce(&is_npy, &npy, 1, MPI_INT, MPI_MAX, d->comm));
  if (npy)
    HALO_TRY(node_npy(d, path, opt, is_labels, &block, &width, &max_label, &max_line));
  else if (any)
    HALO_TRY(node_stream(d, path, opt, is_labels, &block, &width, &max_label, &max_line));
  else
    HALO_TRY(node_slices(d, path, opt, is_labels, &block, &width, &max_label, &max_line));
  if (is_labels && width > 1) { /* one binary task a column (ogbn-proteins' 112) */
    d->file_classes = width;
    d->file_multilabel = 1;
    d->targets = block;
  } else if (is_labels) {
    char where[HALO_OGB_PATH + 32];
    halo_load_label_where(where, sizeof where, path, npy, npy ? max_line - 1 : max_line);
    d->labels = block;
    HALO_TRY(block_classes(d, path, where, opt ? opt->classes : 0, d->labels, max_label,
                           &d->file_classes));
    d->has_file_labels = d->file_classes > 0; /* all "nan": no labels, as halo_load has it */
  } else {
    d->file_features = width;
    d->x = block;
  }
done:
  return st;
}

/* --features and --labels, and their digest.  Collective (agreed). */
halo_status halo__dist_node_files(dist *d) {
  halo_status st = HALO_OK;
  const halo_partition_dist_request *rq = d->rq;
  if (!rq->features && !rq->labels) goto done;
  halo_digest_chunked_init(&d->digest);
  const halo_load_options lo = dist_load_options(d);
  if (rq->features) HALO_TRY(node_file(d, rq->features, &lo, 0));
  if (rq->labels) HALO_TRY(node_file(d, rq->labels, &lo, 1));
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
halo_status halo__dist_load_ogb_folder(dist *d) {
  halo_status st = HALO_OK;
  const halo_partition_dist_request *rq = d->rq;
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
    if (st == HALO_OK && d->ogb->edge_weighted) {
      halo_log_error("%s: edge weights (an edge-feat of width 1) are not supported by the "
                     "distributed partitioner (--method ptscotch); use --method metis",
                     d->ogb->edge_feat);
      st = HALO_ERR_UNSUPPORTED;
    }
    if (st == HALO_OK) st = halo_load_count(d->ogb->nodes, &d->digest, &n);
    if (st == HALO_OK && d->ogb->edge_count[0])
      st = halo_load_count(d->ogb->edge_count, NULL, &edges); /* checked, as halo_load does */
    if (st == HALO_OK && n > ((int64_t)1 << 32)) {
      halo_log_error("%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", d->ogb->nodes, n);
      st = HALO_ERR_LIMIT;
    }
    if (st == HALO_OK) st = halo__dist_nodes_limit(rq->input, n);
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Bcast(d->ogb, (int)sizeof *d->ogb, MPI_BYTE, 0, d->comm));
  HALO_MPI(MPI_Bcast(&n, 1, MPI_INT64_T, 0, d->comm));
  const halo_ogb_files *f = d->ogb;
  int is_gzip = halo_load_is_gzip(f->edges), any = 0;
  HALO_MPI(MPI_Allreduce(&is_gzip, &any, 1, MPI_INT, MPI_MAX, d->comm));
  if (any)
    HALO_TRY(halo__dist_load_gzip(d, f->edges, n));
  else
    HALO_TRY(halo__dist_load_file(d, f->edges, n));
  d->slice.nodes = n;
  HALO_TRY(halo__dist_row_blocks(d)); /* before the node data, which goes to the blocks */
  if (f->features[0]) HALO_TRY(node_file(d, f->features, NULL, 0));
  if (f->labels[0]) HALO_TRY(node_file(d, f->labels, NULL, 1));
  if (f->has_split) {
    const char *const paths[3] = {f->split[0], f->split[1], f->split[2]};
    const int64_t begin = d->begins[d->rank];
    const int64_t rows = d->begins[d->rank + 1] - begin;
    phase_begin(d);
    st = halo__dist_admit(rq->input, "reading the split", 5.0 * (double)rows);
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

/* A heterophilous-graphs .npz of stored members: each rank preads its
 * slice of the edges, then (once the blocks are cut) the rows of its block
 * of node_features, node_labels and the masks of the split; the ranks
 * digest the archive together, as halo_load digests its bytes.
 * Collective (agreed). */
halo_status halo__dist_load_npz(dist *d) {
  halo_status st = HALO_OK;
  const halo_partition_dist_request *rq = d->rq;
  const char *path = rq->input;
  halo_node_slice f = {0}, l = {0};
  int32_t *owned = NULL;
  uint64_t digest = 0;
  halo_digest_chunked own;
  halo_digest_chunked_init(&own);
  phase_begin(d);
  st = d->row->slice(path, NULL, d->rank, d->size, 0, &d->slice);
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_digest_file(d, path, &own));
  digest = halo_digest_chunked_final(&own);
  HALO_MPI(MPI_Bcast(&digest, 1, MPI_UINT64_T, 0, d->comm));
  d->slice.source_digest = digest;
  d->slice.renumber = 0;
  HALO_TRY(halo__dist_nodes_limit(path, d->slice.nodes));
  HALO_TRY(halo__dist_row_blocks(d)); /* before the node data, which goes to the blocks */
  const int64_t begin = d->begins[d->rank], rows = d->begins[d->rank + 1] - begin;
  phase_begin(d);
  st = halo_load_npz_node_rows(path, 0, begin, rows, &f);
  if (st == HALO_OK) st = halo_load_npz_node_rows(path, 1, begin, rows, &l);
  HALO_TRY(phase_end(d, st));
  int32_t max_label = -1;
  int64_t max_line = 0;
  HALO_TRY(agree_max_label(d, &l, &max_label, &max_line));
  d->file_features = f.width;
  d->x = f.x;
  f.x = NULL;
  if (l.targets) { /* N x T: T binary tasks */
    d->file_classes = l.width;
    d->file_multilabel = 1;
    d->targets = l.targets;
    l.targets = NULL;
  } else {
    /* As the sequential read names the member: "G.npz:node_labels.npy". */
    char member[HALO_OGB_PATH + 32], where[HALO_OGB_PATH + 64];
    snprintf(member, sizeof member, "%s:node_labels.npy", path);
    halo_load_label_where(where, sizeof where, member, 1, max_line - 1);
    d->labels = l.labels;
    l.labels = NULL;
    HALO_TRY(block_classes(d, path, where, 0, d->labels, max_label, &d->file_classes));
    d->has_file_labels = d->file_classes > 0;
  }
  if (rq->synth_split || rq->split) goto done; /* another split replaces the masks */
  int has = 0, any = 0;
  const int32_t *labelled = NULL;
  phase_begin(d);
  st = halo__dist_admit(path, "reading the split", 5.0 * (double)rows);
  if (st == HALO_OK && !(d->split = malloc((size_t)(rows > 0 ? rows : 1)))) {
    halo_log_error("%s: out of memory allocating the block's split", path);
    st = HALO_ERR_NOMEM;
  }
  if (st == HALO_OK) st = block_labelled(d, rows, &labelled, &owned);
  if (st == HALO_OK)
    st = halo_load_npz_split_rows(path, rq->split_name, begin, rows, labelled, d->split, &has);
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Allreduce(&has, &any, 1, MPI_INT, MPI_MAX, d->comm));
  if (!any) {
    free(d->split);
    d->split = NULL;
  }
done:
  free(owned);
  halo_node_slice_free(&f);
  halo_node_slice_free(&l);
  return st;
}

/* --split DIR: every rank reads the three files whole for the nodes of
 * its block (a renumbered input's files name its input ids: each block
 * answers for those from its first input id to the next block's), and rank
 * 0 folds them into the source digest as halo_load_split does, after the
 * node data.  Collective (agreed). */
halo_status halo__dist_split_dir(dist *d) {
  halo_status st = HALO_OK;
  const halo_partition_dist_request *rq = d->rq;
  const int64_t n = d->slice.nodes, begin = d->begins[d->rank];
  const int64_t rows = d->begins[d->rank + 1] - begin;
  char(*paths)[HALO_OGB_PATH] = NULL;
  int64_t *first = NULL;
  int32_t *owned = NULL;
  halo_digest_chunked digest;
  uint64_t folded = 0;
  halo_digest_chunked_init(&digest);
  phase_begin(d);
  st = halo__dist_admit(rq->split, "reading the split", 5.0 * (double)rows);
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
