/* Private to partition/: the distributed multilevel around PT-Scotch
 * (partition-dcoarsen.c).
 *
 * PT-Scotch's own coarsening gathers a large graph on every rank (its
 * distributed matching shrinks a graph with little locality slowly, and the
 * bipartitions of the coarsest level are centralised), so its peak per rank
 * hardly falls with K (docs/scale.md).  halo coarsens first, without that
 * gather: size-constrained label propagation clusters each rank's rows
 * along the edges inside its own block, a cluster becomes one vertex of the
 * coarse graph, and the coarse graph keeps the fine one's blocks (a rank's
 * clusters are rows of its own block).  PT-Scotch partitions the coarsest
 * graph; its parts are projected back level by level (the maps work on
 * each rank), and on the input and the levels small enough to keep a
 * distributed refinement moves boundary vertices to the part most of their
 * edges go to, keeping every part that is within the balance within it.  All of it is
 * deterministic: the same graph, options and K give the same parts. */
#ifndef HALO_PARTITION_DCOARSEN_H
#define HALO_PARTITION_DCOARSEN_H

#include <mpi.h>
#include <stdint.h>

#include "halo-dpartition.h"

/* A distributed graph with weights: vwgt (g.rows) and ewgt (its edges);
 * NULL means weight 1 for each. */
typedef struct halo__wdgraph {
  halo_dgraph g;
  int64_t *vwgt, *ewgt;
} halo__wdgraph;

/* Frees what halo__dcoarsen allocated in *w (not the finest graph's arrays,
 * which the caller owns). Local. */
void halo__wdgraph_free(halo__wdgraph *w);

/* One level: clusters fine's rows by label propagation over the edges of
 * its own block (no cluster heavier than max_weight) and builds *coarse,
 * whose rows on this rank are this rank's clusters; *cluster (size
 * fine->g.rows, new, the caller's to free) maps fine row r to its coarse
 * row.  Parallel
 * edges are merged into one of the sum of their weights, edges inside a
 * cluster dropped.  Collective (agreed: a failure on one rank fails all,
 * the others with HALO_ERR_PEER). */
halo_status halo__dcoarsen(MPI_Comm comm, const halo__wdgraph *fine, int64_t max_weight,
                           halo__wdgraph *coarse, int64_t **cluster);

/* Refines part[0..g.rows) (parts in [0, parts)) in place: rounds of moves
 * of a vertex to the neighbouring part that most of its edge weight goes
 * to, when that gains by the parts of the round's start (neighbours on
 * other ranks may move in the same round, so the cut may rise a little
 * where they do), never taking a part over max_part_weight; a vertex of a
 * part over it may move at a loss, either way, to a part with room.  Moves
 * alternate in direction (to a higher part, then to a lower) so that two
 * ranks never swap a cut edge's ends in one round.  A part over the bound
 * sheds at a loss no more than its excess a round (each rank its share).
 * With `warn`, rank 0 warns when a part is still over max_part_weight at
 * the end. Collective (agreed). */
halo_status halo__drefine(MPI_Comm comm, const halo__wdgraph *w, int32_t parts,
                          int64_t max_part_weight, int warn, int32_t *part);

#endif /* HALO_PARTITION_DCOARSEN_H */
