/* The distributed partitioner: `mpirun -np K halo-partition --method
 * ptscotch`.  Every rank reads a slice of the input, the clean-up runs on
 * blocks of rows, PT-Scotch partitions the distributed graph, and each part
 * is written whole by one rank from the rows routed to it; no rank holds the
 * whole graph or all the features (docs/partition.md, "Distributed
 * partitioning").  The run is halo_partition_dist_run (partition/dist-*.c,
 * one file a phase: read, renumber, clean, route, write); its engine is
 * halo_partition_ptscotch.  Unlike halo-partition.h, these calls are
 * collective. */
#ifndef HALO_DPARTITION_H
#define HALO_DPARTITION_H

#include <mpi.h>
#include <stdint.h>

#include "halo-load.h"
#include "halo-partition.h"

/* A clean graph (simple, symmetric) by blocks of rows: the rank of index r
 * holds rows [begin, begin + rows), the blocks in rank order and together
 * [0, nodes).  Neighbours are global ids. */
typedef struct halo_dgraph {
  int64_t nodes, edges; /* of the whole graph */
  int64_t begin, rows;  /* this rank's block */
  int64_t *indptr;      /* size rows + 1, from 0 */
  int64_t *nbr;         /* size indptr[rows]: global ids */
} halo_dgraph;

/* g into opt->parts parts with opt's seed and ufactor (the edge cut only):
 * up to opt->levels levels of halo's distributed coarsening, then
 * SCOTCH_dgraphPart of the coarsest graph, then halo's refinement of the
 * projected parts (partition-dcoarsen.h); part[0..g->rows) gets the parts
 * of this rank's rows.
 * PT-Scotch's random state is seeded with opt->seed on every rank, so the
 * same graph, options and number of ranks give the same parts.  P == 1 does
 * not call PT-Scotch.  A failure on any rank fails every rank: the rank
 * where Scotch failed logs Scotch's reason (HALO_ERR_SCOTCH), the others
 * return HALO_ERR_PEER without a word. Collective. */
halo_status halo_partition_ptscotch(MPI_Comm comm, const halo_dgraph *g,
                                    const halo_partition_options *opt, const char *source,
                                    int32_t *part);

/* What one distributed run is asked to do, the same on every rank.  The
 * strings and arrays are borrowed for the call. */
typedef struct halo_partition_dist_request {
  const char *input;
  halo_format format; /* --format; HALO_FORMAT_AUTO: from the path */
  halo_partition_options opt;
  int32_t synth_features, synth_classes; /* --synthetic-features/classes, 0 when not given */
  const double *synth_split;             /* --synthetic-split's fractions, or NULL */
  const char *features, *labels;         /* --features and --labels files, or NULL */
  const char *split_name;                /* --split-name: an OGB folder's split/NAME, or NULL */
  const char *split;                     /* --split DIR: the split's folder, or NULL */
  halo_header header;                    /* --header: text inputs' header row */
  int64_t nodes;                         /* --nodes: an edge list's ids are 0..nodes-1; 0: none */
  int32_t classes;                       /* --classes: the labels' class count; 0: none */
  const int32_t *dims;                   /* --dims, checked against the input's widths */
  int ndims;                             /* 0: no --dims */
  const char *tmpdir;                    /* the output folder's temporary name (rank 0's) */
  /* --write-metis: the file's temporary name (rank 0's), which rank 0
   * commits; the graph is written there and not partitioned.  NULL:
   * partition into tmpdir. */
  const char *metis_tmp;
  const char *metis_name;    /* --write-metis FILE, for messages */
  const char *parts_file;    /* test hook: node v's part on line v + 1, or NULL */
  int64_t clean_round_pairs; /* test hook: pairs a clean-up round; 0: 4M */
  /* Rank 0 reports phases and the parts written through these (may be NULL). */
  void (*phase)(void *ctx, const char *what);
  halo_progress_fn progress;
  void *ctx;
} halo_partition_dist_request;

/* Phases of halo_partition_dist_result.wall, as halo-partition's. */
enum { HALO_DIST_LOAD, HALO_DIST_CLEAN, HALO_DIST_PARTITION, HALO_DIST_WRITE, HALO_DIST_PHASES };

typedef struct halo_partition_dist_result {
  halo_graph summary;          /* the clean graph's counts, source and digest; no arrays */
  halo_clean_report clean;     /* summed over the ranks */
  halo_partition_stats *stats; /* rank 0 only (NULL elsewhere); owned */
  uint64_t run_id;
  int ranks;
  int has_split;        /* the shards hold a split */
  int64_t train;        /* nodes in the train split, summed over the parts */
  int64_t peak_rss_max; /* the largest rank's peak resident bytes, and the sum */
  int64_t peak_rss_sum;
  int64_t block_edges_max;       /* the most directed edges of the clean graph in one block */
  double wall[HALO_DIST_PHASES]; /* seconds per phase, rank 0's */
} halo_partition_dist_result;

/* Runs the whole distributed partition into rq->tmpdir (the folder is
 * shared by every rank: a shared file system across hosts), or with
 * rq->metis_tmp loads and cleans the graph and writes it there in METIS'
 * format, each rank its own block's lines (no partition, no stats).  A
 * failure on any rank fails every rank; the first rank that failed prints
 * its line.  HALO_ERR_MPI and HALO_ERR_TIMEOUT leave the communicator
 * untrusted (the caller aborts).  comm must have MPI_ERRORS_RETURN set.
 * *out is set even on failure, and freed with
 * halo_partition_dist_result_free.  Collective. */
halo_status halo_partition_dist_run(MPI_Comm comm, const halo_partition_dist_request *rq,
                                    halo_partition_dist_result *out);

/* Frees the statistics; accepts NULL and a zeroed result. Local. */
void halo_partition_dist_result_free(halo_partition_dist_result *r);

#endif /* HALO_DPARTITION_H */
