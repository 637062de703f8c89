/* Private to partition/: shared internals of the partitioner's files. */
#ifndef HALO_PARTITION_IMPL_H
#define HALO_PARTITION_IMPL_H

#include "halo-partition.h"

/* Counting sort of the nodes by part: part p owns
 * order[start[p] .. start[p+1]), in ascending global id.  *order (size n)
 * and *start (size parts+1) are new arrays owned by the caller.  Fails with
 * HALO_ERR_RANGE when some part[v] is outside [0, parts). Local. */
halo_status halo__partition_order(const int32_t *part, int64_t n, int32_t parts, int64_t **order,
                                  int64_t **start);

/* Cuts the subgraph induced by owned[0..n_owned) into blocks of at most
 * block_rows rows for locality (greedy graph growing, partition-blocks.c)
 * and writes block[i] for owned[i]: block ids 0, 1, ... in the order the
 * blocks were grown, every block but the last of at least
 * ceil(block_rows / 2) rows, all zero when n_owned <= block_rows.  local[v]
 * is i for v = owned[i] and negative for every other neighbour of an owned
 * node.  Deterministic; O(n_owned + inner edges) time, scratch of the
 * induced subgraph.  Fails only on out of memory, block_rows < 1 or
 * n_owned > INT32_MAX. Local. */
halo_status halo__partition_blocks(const halo_graph *g, const int64_t *owned, int64_t n_owned,
                                   const int32_t *local, int64_t block_rows, int32_t *block);

/* k-way Fiduccia–Mattheyses refinement (partition-refine.c) of where[0..n)
 * (parts 0..parts-1) on the symmetric graph (offsets, indices), vertex v of
 * load vload[v] (NULL: 1 each): passes of single-vertex moves, at a loss
 * too, each pass kept up to its lowest cut, while a pass lowers the cut.  A
 * move never takes a part q past cap[q] (a part already past it only loses
 * load).  A pass stops after `patience` moves without a new lowest cut, or
 * 1/32 of the cut (at least 100 edges) above it.
 * *gained gets the cut edges removed (>= 0).  Deterministic; O(moves ·
 * degree² · log) a pass; scratch of 25 bytes a vertex and a queue of at
 * most 64.  Fails only on out of memory. Local. */
halo_status halo__partition_refine(int64_t n, const int64_t *offsets, const int64_t *indices,
                                   const int64_t *vload, int32_t parts, const int64_t *cap,
                                   int64_t patience, int64_t *where, int64_t *gained);

/* Scotch's error hooks (partition-scotch-error.c): reset before a run of
 * Scotch calls; after one fails, take copies the first error Scotch reported
 * since the reset into buf ("no reason given" when none) and clears it.
 * Thread-safe. Local. */
#define HALO__SCOTCH_ERROR_MAX 512
void halo__scotch_error_reset(void);
void halo__scotch_error_take(char *buf, size_t size);

#endif /* HALO_PARTITION_IMPL_H */
