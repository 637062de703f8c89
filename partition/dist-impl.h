/* Private to partition/: the distributed partitioner's shared state and the
 * functions its phases call across files (dist-read.c, dist-nodes.c,
 * dist-renumber.c, dist-clean.c, dist-route.c, dist-write.c, dist-run.c;
 * the run's outline is at the top of dist-run.c).  Every halo__dist_
 * function marked Collective (agreed) ends in an agreement on its status,
 * so every rank returns the same status. */
#ifndef HALO_DIST_IMPL_H
#define HALO_DIST_IMPL_H

#include <mpi.h>
#include <stdint.h>
#include <time.h>

#include "halo-csr.h"
#include "halo-dpartition.h"
#include "halo-load.h"
#include "halo-memory.h"
#include "halo-mpi.h"
#include "halo-rng.h"
#include "halo-route.h"
#include "halo-search.h"
#include "halo-shard.h"

/* One rank's state. */
typedef struct dist {
  MPI_Comm comm;
  int rank, size;
  char line[1024]; /* the held error line of the current phase */
  const halo_partition_dist_request *rq;
  const halo_format_row *row; /* the input's format (dist-read.c) */
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
  int32_t file_classes;  /* the class count (halo_load_check_classes; or a multi-label file's
                            tasks), 0 without labels */
  int has_file_labels;   /* one label a node, in labels */
  int file_multilabel;   /* rows of file_classes tasks a node, in targets */
  float *x;              /* block rows x file_features, when dense; NULL when x_sparse */
  int x_sparse;          /* the rows are carried as CSR in xc, on every rank (a sparse
                            plain-text file: no rank's slice broke the density rule) */
  halo_csr xc;           /* x_sparse: the block's feature rows, rows = block rows, indptr
                            from 0, arrays owned */
  int features_csr;      /* the shards store CSR features (--features-layout, resolved) */
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

/* The int counts and displacements of one MPI_Alltoallv, in items. */
/* An all-to-all's int counts and displacements (comm/halo-route.h). */
typedef halo_route_counts xfer;

/* What this rank wrote: the manifest's per-part columns and the
 * statistics, zero for the parts of other ranks, summed on rank 0. */
typedef struct written {
  uint64_t *digest, *original_digest; /* original_digest: NULL when the ids were kept */
  int64_t train;                      /* train nodes of the parts written */
  int64_t *owned, *halo;
  halo_partition_stats *stats;
} written;

/* ---- small helpers, private to the partitioner's files ---------------- */

/* The loaders' options of the request's text inputs, as a sequential run
 * passes them (--header, --nodes, --classes). */
static inline halo_load_options dist_load_options(const dist *d) {
  return (halo_load_options){
      .header = d->rq->header, .nodes = d->rq->nodes, .classes = d->rq->classes};
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int64_t block_begin(int64_t n, int ranks, int r) {
  return (int64_t)r * (n / ranks) + (r < n % ranks ? r : n % ranks);
}

/* The rank whose block of rows holds node v. */
static inline int row_owner(const dist *d, int64_t v) {
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

static inline void phase_begin(dist *d) {
  d->line[0] = '\0';
  halo_log_hold(d->line, sizeof d->line);
}

/* Ends a phase: every rank learns whether any failed. */
static inline halo_status phase_end(dist *d, halo_status local) {
  halo_log_hold(NULL, 0);
  return halo_mpi_agree_first(d->comm, local, d->line);
}

/* The same, where the failure at the smallest place in the input (a
 * line, say) is the one printed. */
static inline halo_status phase_end_at(dist *d, halo_status local, int64_t where) {
  halo_log_hold(NULL, 0);
  return halo_mpi_agree_earliest(d->comm, local, d->line, where);
}

static inline void say(const dist *d, const char *what) {
  if (d->rank == 0 && d->rq->phase) d->rq->phase(d->rq->ctx, what);
}

/* ---- the records that carry a part's rows to its writer ------------- */

/* A row's record, written by pack_rows (dist-route.c) and read by
 * unpack_rows (dist-write.c): its id, its id in the input (or -1), its
 * degree, its label, split, tasks (eight an item) and feature row (two
 * floats an item; of CSR rows (x_sparse) one item, the row's non-zeros)
 * when they come from files, then (neighbour, part, degree) for each
 * neighbour, then of a CSR row its columns and its values, two an item
 * each (record_csr_items). */
static inline int64_t target_items(const dist *d) {
  return d->file_multilabel ? (d->file_classes + 7) / 8 : 0;
}

static inline int64_t record_x_at(const dist *d) {
  return 3 + d->has_file_labels + (d->split != NULL) + target_items(d);
}

static inline int64_t record_x_items(const dist *d) {
  if (d->file_features == 0) return 0;
  return d->x_sparse ? 1 : (d->file_features + 1) / 2;
}

static inline int64_t record_head(const dist *d) {
  return record_x_at(d) + record_x_items(d);
}

/* The items of a CSR row's nnz columns and values at a record's end. */
static inline int64_t record_csr_items(int64_t nnz) { return 2 * ((nnz + 1) / 2); }

static inline int64_t record_items(const dist *d, int64_t r) {
  const int64_t tail =
      d->x_sparse ? record_csr_items(d->xc.indptr[r + 1] - d->xc.indptr[r]) : 0;
  return record_head(d) + 3 * (d->g.indptr[r + 1] - d->g.indptr[r]) + tail;
}

/* The records a rank sends a writer are padded with -1 to whole units of
 * ROUTE_UNIT items, and MPI counts units: one writer may then receive up to
 * 2^31 units (1 TB) of a part, where int counts of items stopped at 16 GB. */
enum { ROUTE_UNIT = 64 };

static inline int64_t route_units(int64_t items) { return (items + ROUTE_UNIT - 1) / ROUTE_UNIT; }

/* The next record at or after item i: padding (ids are >= 0) runs to the
 * end of its unit. Local. */
static inline int64_t next_record(const int64_t *rec, int64_t i, int64_t items) {
  while (i < items && rec[i] < 0) i = (i / ROUTE_UNIT + 1) * ROUTE_UNIT;
  return i;
}

/* ---- across the phases' files ----------------------------------------- */

/* dist-run.c: memory admission and the all-to-all plans. */
halo_status halo__dist_admit(const char *source, const char *what, double bytes);
void halo__dist_xfer_free(xfer *x);
halo_status halo__dist_xfer_plan(dist *d, const int64_t *send_counts, const char *what, xfer *x);

/* dist-read.c */
halo_status halo__dist_nodes_limit(const char *source, int64_t n);
halo_status halo__dist_lines_before(dist *d, const char *path, int64_t *before);
halo_status halo__dist_digest_file(dist *d, const char *path, halo_digest_chunked *acc);
halo_status halo__dist_load_gzip(dist *d, const char *path, int64_t nodes);
halo_status halo__dist_load_file(dist *d, const char *path, int64_t nodes);
halo_status halo__dist_load_input(dist *d);

/* dist-nodes.c */
halo_status halo__dist_node_files(dist *d);
halo_status halo__dist_load_ogb_folder(dist *d);
halo_status halo__dist_load_npz(dist *d);
halo_status halo__dist_split_dir(dist *d);

/* dist-renumber.c */
halo_status halo__dist_row_blocks(dist *d);
halo_status halo__dist_renumber(dist *d);
halo_status halo__dist_to_blocks(dist *d, int64_t first, int64_t rows, const void *data, int width,
                                 MPI_Datatype type, size_t item, void **out);
halo_status halo__dist_csr_to_blocks(dist *d, int64_t first, const halo_csr *a, halo_csr *out);

/* dist-clean.c */
halo_status halo__dist_clean(dist *d, halo_clean_report *report);

/* dist-route.c */
halo_status halo__dist_assign_parts(dist *d);
halo_status halo__dist_gather_parts(dist *d, int32_t **all);
halo_status halo__dist_ghost_info(dist *d);
halo_status halo__dist_route_and_write(dist *d, uint64_t run_id, written *w);

/* dist-write.c */
halo_status halo__dist_write_part(const dist *d, int32_t p, int64_t **rec, int64_t items,
                                  uint64_t run_id, written *w);
halo_status halo__dist_written_alloc(const dist *d, written *w);
void halo__dist_written_free(written *w);
halo_status halo__dist_write_manifest(dist *d, written *w, const int32_t *all_parts,
                                      const halo_graph *summary, uint64_t run_id);
halo_status halo__dist_write_metis(dist *d);

#endif /* HALO_DIST_IMPL_H */
