/* PT-Scotch k-way (SCOTCH_dgraphPart of the int64 library) on a graph
 * distributed by blocks of rows.
 *
 * SCOTCH_Num is int64_t, so PT-Scotch reads the block's own CSR: no copy of
 * the structure is made.  The strategy is PT-Scotch's default mapping
 * strategy for `parts` parts over the communicator's ranks, at imbalance
 * ufactor / 1000, the tolerance METIS and Scotch get.
 */
#include <stdint.h>
#include <stdlib.h>

#include <ptscotch.h>

#include "halo-dpartition.h"
#include "partition-impl.h"

/* Scotch's threads a rank.  Fixed, because the parts depend on their
 * number; one, because the ranks of a node already share its cores. */
#define HALO_PTSCOTCH_THREADS 1

_Static_assert(sizeof(SCOTCH_Num) == sizeof(int64_t),
               "ptscotch.h is not the int64 build: the graph's arrays are passed as they are");

/* 1 on every rank when `ok` is 1 on every rank. */
static int all_ok(MPI_Comm comm, int ok) {
  int all = 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return 0;
  return all;
}

halo_status halo_partition_ptscotch(MPI_Comm comm, const halo_dgraph *g,
                                    const halo_partition_options *opt, const char *source,
                                    int32_t *part) {
  halo_status st = HALO_OK;
  SCOTCH_Dgraph graph, bound;
  SCOTCH_Strat strat;
  SCOTCH_Context context;
  SCOTCH_Num *where = NULL;
  int graph_on = 0, bound_on = 0, context_on = 0, strat_on = 0, here = 1, ranks = 1;
  char why[HALO__SCOTCH_ERROR_MAX];

  MPI_Comm_size(comm, &ranks);
  if (opt->parts < 1 || opt->parts > g->nodes)
    HALO_FAIL(HALO_ERR_ARG, "PT-Scotch: %d parts for %lld nodes; need 1 <= parts <= nodes",
              opt->parts, (long long)g->nodes);
  if (opt->objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG, "PT-Scotch minimises the edge cut only; objective %s is METIS'",
              halo_objective_name(opt->objective));
  if (opt->parts == 1) {
    for (int64_t r = 0; r < g->rows; r++) part[r] = 0;
    goto done;
  }

  /* Every step that may fail on one rank alone is agreed on before the next
   * collective call, so that no rank waits in one that a peer never enters;
   * `here` is 0 once a step failed on this rank. */
  halo__scotch_error_reset();
  where = malloc((size_t)(g->rows > 0 ? g->rows : 1) * sizeof *where);
  here = where != NULL && SCOTCH_dgraphInit(&graph, comm) == 0;
  graph_on = here;
  if (!all_ok(comm, here)) goto failed;
  here = SCOTCH_dgraphBuild(&graph, 0, (SCOTCH_Num)g->rows, (SCOTCH_Num)g->rows, g->indptr, NULL,
                            NULL, NULL, (SCOTCH_Num)g->indptr[g->rows],
                            (SCOTCH_Num)g->indptr[g->rows], g->nbr, NULL, NULL) == 0;
  /* A context of its own: the deterministic option, a random state seeded
   * with the user's seed, and one thread a rank, so that the parts depend on
   * the graph, the options and K alone (the default state and a thread per
   * core gave other parts on every run). */
  if (here && SCOTCH_contextInit(&context) == 0) {
    context_on = 1;
    here = SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1) == 0 &&
           SCOTCH_contextRandomClone(&context) == 0 &&
           SCOTCH_contextThreadSpawn(&context, HALO_PTSCOTCH_THREADS, NULL) == 0;
    if (here) SCOTCH_contextRandomSeed(&context, (SCOTCH_Num)opt->seed);
  } else {
    here = 0;
  }
  if (!all_ok(comm, here)) goto failed;
  here = SCOTCH_dgraphInit(&bound, comm) == 0;
  bound_on = here;
  here = here && SCOTCH_contextBindDgraph(&context, &graph, &bound) == 0;
  if (here && SCOTCH_stratInit(&strat) == 0) {
    strat_on = 1;
    /* (strategy, flags, processes, parts, imbalance) */
    here = SCOTCH_stratDgraphMapBuild(&strat, SCOTCH_STRATDEFAULT, (SCOTCH_Num)ranks,
                                      (SCOTCH_Num)opt->parts, opt->ufactor / 1000.0) == 0;
  } else {
    here = 0;
  }
  if (!all_ok(comm, here)) goto failed;
  here = SCOTCH_dgraphPart(&bound, (SCOTCH_Num)opt->parts, &strat, where) == 0;
  if (!all_ok(comm, here)) goto failed;
  for (int64_t r = 0; r < g->rows; r++) part[r] = (int32_t)where[r];
  goto done;

failed:
  if (here) {
    st = HALO_ERR_PEER; /* the rank that failed says why */
    goto done;
  }
  if (!where) HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating the PT-Scotch part vector");
  halo__scotch_error_take(why, sizeof why);
  HALO_FAIL(HALO_ERR_SCOTCH, "PT-Scotch could not partition %s into %d parts: %s", source,
            opt->parts, why);
done:
  if (strat_on) SCOTCH_stratExit(&strat);
  if (bound_on) SCOTCH_dgraphExit(&bound);
  if (context_on) SCOTCH_contextExit(&context);
  if (graph_on) SCOTCH_dgraphExit(&graph);
  free(where);
  return st;
}
