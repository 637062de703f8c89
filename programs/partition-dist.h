/* The distributed partitioner: `mpirun -np K halo-partition --method
 * ptscotch`.  Every rank reads a slice of the input, the clean-up runs on
 * blocks of rows, PT-Scotch partitions the distributed graph, and each part
 * is written whole by one rank from the rows routed to it; no rank holds the
 * whole graph or all the features (docs/partition.md, "Distributed
 * partitioning").  partition-main.c opens the output folder and writes the
 * table and JSON on rank 0, as for a sequential run. */
#ifndef PARTITION_DIST_H
#define PARTITION_DIST_H

#include <mpi.h>
#include <stdint.h>

#include "halo-graph.h"
#include "halo-load.h"
#include "halo-partition.h"

/* What one run is asked to do, the same on every rank. */
typedef struct dist_request {
  const char *input;
  halo_format format; /* --format; HALO_FORMAT_AUTO: from the path */
  halo_partition_options opt;
  int32_t synth_features, synth_classes; /* --synthetic-features/classes, 0 when not given */
  const double *synth_split;             /* --synthetic-split's fractions, or NULL */
  const char *features, *labels;         /* --features and --labels files, or NULL */
  const char *split_name;                /* --split-name: an OGB folder's split/NAME, or NULL */
  const char *split;                     /* --split DIR: the split's folder, or NULL */
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
} dist_request;

/* Phases of dist_result.wall, as halo-partition's. */
enum { DIST_LOAD, DIST_CLEAN, DIST_PARTITION, DIST_WRITE, DIST_PHASES };

typedef struct dist_result {
  halo_graph summary;          /* the clean graph's counts, source and digest; no arrays */
  halo_clean_report clean;     /* summed over the ranks */
  halo_partition_stats *stats; /* rank 0 only (NULL elsewhere) */
  uint64_t run_id;
  int ranks;
  int has_split;        /* the shards hold a split */
  int64_t train;        /* nodes in the train split, summed over the parts */
  int64_t peak_rss_max; /* the largest rank's peak resident bytes, and the sum */
  int64_t peak_rss_sum;
  int64_t block_edges_max;  /* the most directed edges of the clean graph in one rank's block */
  double wall[DIST_PHASES]; /* seconds per phase, rank 0's */
} dist_result;

/* Runs the whole distributed partition into rq->tmpdir (the folder is
 * shared by every rank: a shared file system across hosts), or with
 * rq->metis_tmp loads and cleans the graph and writes it there in METIS'
 * format, each rank its own block's lines (no partition, no stats).  A failure on
 * any rank fails every rank; the first rank that failed prints its line.
 * HALO_ERR_MPI and HALO_ERR_TIMEOUT leave the communicator untrusted (the
 * caller aborts).  Collective. */
halo_status dist_partition(MPI_Comm comm, const dist_request *rq, dist_result *out);

/* Frees the statistics; accepts a zeroed result. Local. */
void dist_result_free(dist_result *r);

#endif /* PARTITION_DIST_H */
