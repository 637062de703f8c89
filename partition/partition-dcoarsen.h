/* Private to partition/: the distributed multilevel around PT-Scotch
 * (partition-dcoarsen.c: the ghosts and the coarsening; partition-drefine.c:
 * the projection and the refinement).
 *
 * PT-Scotch's own coarsening gathers a large graph on every rank (its
 * distributed matching shrinks a graph with little locality slowly, and the
 * bipartitions of the coarsest level are centralised), so its peak per rank
 * hardly falls with K (docs/scale.md).  halo coarsens first, without that
 * gather: size-constrained label propagation clusters the rows along
 * their edges, across the ranks, and a cluster becomes one vertex of the
 * coarse graph, whose blocks are cut to equal load.  PT-Scotch
 * partitions the coarsest graph; its parts are projected back level by
 * level, and on the input and the levels small enough to keep a
 * distributed refinement moves boundary vertices to the part most of their
 * edges go to, keeping every part that is within the balance within it.  All of it is
 * deterministic: the same graph, options and K give the same parts. */
#ifndef HALO_PARTITION_DCOARSEN_H
#define HALO_PARTITION_DCOARSEN_H

#include <mpi.h>
#include <stdint.h>

#include "halo-dpartition.h"
#include "halo-route.h"

/* A distributed graph with weights: vwgt (g.rows) and ewgt (its edges);
 * NULL means weight 1 for each. */
typedef struct halo__wdgraph {
  halo_dgraph g;
  int64_t *vwgt, *ewgt;
} halo__wdgraph;

/* The weight of vertex or edge i of weights w (NULL: 1 each). Local. */
static inline int64_t halo__weight_of(const int64_t *w, int64_t i) { return w ? w[i] : 1; }

/* Logs "out of memory allocating WHAT" and returns HALO_ERR_NOMEM when ok is
 * 0; HALO_OK otherwise.  For the allocations of a step, gathered into one
 * status that the ranks then agree on. Local. */
static inline halo_status halo__dmemory(int ok, const char *what) {
  if (ok) return HALO_OK;
  halo_log_error("out of memory allocating %s", what);
  return HALO_ERR_NOMEM;
}

/* 1 when global id v is a row of this rank's block of g. Local. */
static inline int halo__in_block(const halo_dgraph *g, int64_t v) {
  return v >= g->begin && v < g->begin + g->rows;
}

/* The neighbours of a rank's block held by other ranks (its ghosts),
 * sorted and unique (id, size n), and their route to their owners; at[e]
 * (size the block's edges) is where edge e's neighbour is among the
 * block's rows and its ghosts (row r is r, ghost i is rows + i), so that a
 * sweep over the edges finds it without a search.  The coarsening and the
 * refinement both read their neighbours' values through it. */
typedef struct halo__ghosts {
  int64_t n, *id, *at;
  halo_route rt;
} halo__ghosts;

/* The ghosts of this rank's block of g. Collective (agreed). */
halo_status halo__ghosts_build(MPI_Comm comm, const halo_dgraph *g, halo__ghosts *gh);

/* gval[ghost i] for every ghost (size gh->n), from val[row] on its owner
 * (val: the owner's block). Collective. */
halo_status halo__ghosts_exchange(MPI_Comm comm, halo__ghosts *gh, const int64_t *val,
                                  int64_t *gval);

/* Frees the ghosts' arrays and zeroes *gh; accepts a zeroed one. Local. */
void halo__ghosts_free(halo__ghosts *gh);

/* The value of edge e's neighbour: row_val of a row of the block, or
 * ghost_val of a ghost. Local. */
static inline int64_t halo__at_edge(const halo_dgraph *g, const halo__ghosts *gh, int64_t e,
                                    const int64_t *row_val, const int64_t *ghost_val) {
  const int64_t i = gh->at[e];
  return i < g->rows ? row_val[i] : ghost_val[i - g->rows];
}

/* Frees what halo__dcoarsen allocated in *w (not the finest graph's arrays,
 * which the caller owns). Local. */
void halo__wdgraph_free(halo__wdgraph *w);

/* One level: clusters fine's rows by label propagation over all its
 * edges, across the ranks (no cluster heavier than max_weight, unless it is
 * one row heavier alone), and builds *coarse: the clusters (which may
 * gather rows of several ranks) numbered by the rank whose block holds the
 * row that names them, then in that row's order, in blocks of about equal
 * load (1 + the members' fine edges; no block holds more than its share
 * and one vertex).  *cluster (size fine->g.rows,
 * new, the caller's to free) maps fine row r to its coarse vertex (a global
 * id).  Parallel edges are merged into one of the sum of their weights,
 * edges inside a cluster dropped.  Deterministic for a given graph and K.
 * Collective (agreed: a failure on one rank fails all, the others with
 * HALO_ERR_PEER). */
halo_status halo__dcoarsen(MPI_Comm comm, const halo__wdgraph *fine, int64_t max_weight,
                           halo__wdgraph *coarse, int64_t **cluster);

/* part[r] = coarse_part[cluster[r]] for each of the rows fine rows, the
 * coarse part held by the rank whose block of *coarse (only its blocks are
 * read) holds it. Collective (agreed). */
halo_status halo__dproject(MPI_Comm comm, const halo_dgraph *coarse, int64_t rows,
                           const int64_t *cluster, const int32_t *coarse_part, int32_t *part);

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
