/* The distributed partitioner's engine: PT-Scotch k-way on a graph whose
 * rows are spread over the ranks of a communicator (mpirun -np K
 * halo-partition --method ptscotch; programs/partition-dist.c is the rest of
 * that path).  Unlike halo-partition.h, these calls are collective. */
#ifndef HALO_DPARTITION_H
#define HALO_DPARTITION_H

#include <mpi.h>
#include <stdint.h>

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

#endif /* HALO_DPARTITION_H */
