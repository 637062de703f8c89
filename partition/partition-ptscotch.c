/* PT-Scotch k-way (SCOTCH_dgraphPart of the int64 library) on a graph
 * distributed by blocks of rows, inside halo's distributed multilevel
 * (partition-dcoarsen.h): halo coarsens the graph without gathering it,
 * PT-Scotch partitions the coarsest level, halo refines the parts on the
 * input.  opt->levels = 0 hands the input to PT-Scotch itself.
 *
 * SCOTCH_Num is int64_t, so PT-Scotch reads the level's own CSR and
 * weights: no copy of the structure is made.  The strategy is PT-Scotch's
 * default mapping strategy for `parts` parts over the communicator's
 * ranks, at imbalance ufactor / 1000, the tolerance METIS and Scotch get;
 * the refinement keeps a part within that bound once it is, and moves
 * vertices out of a part over it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ptscotch.h>

#include "halo-dpartition.h"
#include "halo-mpi.h"
#include "partition-dcoarsen.h"
#include "partition-impl.h"

/* Scotch's threads a rank.  Fixed, because the parts depend on their
 * number; one, because the ranks of a node already share its cores. */
#define HALO_PTSCOTCH_THREADS 1

_Static_assert(sizeof(SCOTCH_Num) == sizeof(int64_t),
               "ptscotch.h is not the int64 build: the graph's arrays are passed as they are");

/* Agrees on a step of scotch_part that may fail on one rank alone (ok is 0
 * there): 1 when it succeeded on every rank; else 0, and *st gets the
 * agreement's status (HALO_ERR_PEER where the step succeeded). Collective. */
static int step_agreed(MPI_Comm comm, int ok, halo_status *st) {
  *st = halo_mpi_agree_within(comm, ok ? HALO_OK : HALO_ERR_SCOTCH);
  return *st == HALO_OK;
}

/* SCOTCH_dgraphPart of w (weights as given) into opt->parts parts.
 * Collective (agreed). */
static halo_status scotch_part(MPI_Comm comm, const halo__wdgraph *w,
                               const halo_partition_options *opt, const char *source,
                               int32_t *part) {
  const halo_dgraph *g = &w->g;
  halo_status st = HALO_OK;
  SCOTCH_Dgraph graph, bound;
  SCOTCH_Strat strat;
  SCOTCH_Context context;
  SCOTCH_Num *where = NULL;
  int graph_on = 0, bound_on = 0, context_on = 0, strat_on = 0, here = 1, ranks = 1;
  char why[HALO__SCOTCH_ERROR_MAX];

  MPI_Comm_size(comm, &ranks);

  /* Every step that may fail on one rank alone is agreed on before the next
   * collective call, so that no rank waits in one that a peer never enters;
   * `here` is 0 once a step failed on this rank. */
  halo__scotch_error_reset();
  where = malloc((size_t)(g->rows > 0 ? g->rows : 1) * sizeof *where);
  here = where != NULL && SCOTCH_dgraphInit(&graph, comm) == 0;
  graph_on = here;
  if (!step_agreed(comm, here, &st)) goto failed;
  here = SCOTCH_dgraphBuild(&graph, 0, (SCOTCH_Num)g->rows, (SCOTCH_Num)g->rows, g->indptr, NULL,
                            w->vwgt, NULL, (SCOTCH_Num)g->indptr[g->rows],
                            (SCOTCH_Num)g->indptr[g->rows], g->nbr, NULL, w->ewgt) == 0;
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
  if (!step_agreed(comm, here, &st)) goto failed;
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
  if (!step_agreed(comm, here, &st)) goto failed;
  here = SCOTCH_dgraphPart(&bound, (SCOTCH_Num)opt->parts, &strat, where) == 0;
  if (!step_agreed(comm, here, &st)) goto failed;
  for (int64_t r = 0; r < g->rows; r++) part[r] = (int32_t)where[r];
  goto done;

failed:
  if (here) goto done; /* HALO_ERR_PEER: the rank that failed says why */
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

/* The multilevel around PT-Scotch (partition-dcoarsen.h): levels of
 * halo's coarsening while the graph has over STOP_PER_PART vertices a part
 * and a level still removes a fifth of them; PT-Scotch on the coarsest; its
 * parts projected back level by level and refined on each level kept and
 * on the input.  No cluster weighs
 * more than a GRAIN-th of a part, so that the coarsest graph can still be
 * balanced.  Measured (docs/scale.md): on a 21M-edge SBM at K = 2 the peak
 * per rank fell from 2357 to 690 MB at the same cut; the coarsest graph
 * had 645 vertices and 367K edges. */
#define STOP_PER_PART 64
#define GRAIN 32

/* Graphs of at most this many vertices go to PT-Scotch as they are: its
 * own multilevel (matching and FM refinement on every level) cuts them
 * better than halo's coarsening, whose refinement is greedy moves alone,
 * and at this size the memory halo's coarsening saves is a few MB.  On
 * Cora at K = 4 the cut was 1.15x METIS' through 2 levels of halo's
 * coarsening to 256 vertices, 0.99x handed over whole (docs/benchmarks.md,
 * "Scotch and PT-Scotch against METIS").  A test hook lowers it:
 * HALO_TEST_PTSCOTCH_DIRECT, a smaller non-negative integer, so that CI
 * coarsens its small graphs. */
#define DIRECT_NODES 65536

static int64_t direct_nodes(void) {
  const char *hook = getenv("HALO_TEST_PTSCOTCH_DIRECT");
  char *end = NULL;
  long long lowered = hook ? strtoll(hook, &end, 10) : -1;
  if (hook && end != hook && *end == '\0' && lowered >= 0 && lowered < DIRECT_NODES)
    return (int64_t)lowered;
  return DIRECT_NODES;
}

halo_status halo_partition_ptscotch(MPI_Comm comm, const halo_dgraph *g,
                                    const halo_partition_options *opt, const char *source,
                                    int32_t *part) {
  halo_status st = HALO_OK;
  halo__wdgraph level[HALO_PTSCOTCH_LEVELS_MAX + 1];
  memset(level, 0, sizeof level);
  int64_t *cluster[HALO_PTSCOTCH_LEVELS_MAX] = {0};
  halo_dgraph blocks[HALO_PTSCOTCH_LEVELS_MAX + 1]; /* each level's blocks, for the maps */
  int32_t *coarse_part = NULL;
  int64_t *vwgt0 = NULL; /* the input's vertex loads under --balance edges or work */
  int levels = 0;
  int64_t kept = 0; /* edges of the levels kept for the refinement */

  if (opt->parts < 1 || opt->parts > g->nodes)
    HALO_FAIL(HALO_ERR_ARG, "PT-Scotch: %d parts for %lld nodes; need 1 <= parts <= nodes",
              opt->parts, (long long)g->nodes);
  if (opt->objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG, "PT-Scotch minimises the edge cut only; objective %s is METIS'",
              halo_objective_name(opt->objective));
  if (opt->levels < 0 || opt->levels > HALO_PTSCOTCH_LEVELS_MAX)
    HALO_FAIL(HALO_ERR_ARG, "PT-Scotch: %d coarsening levels; need 0 to %d", opt->levels,
              HALO_PTSCOTCH_LEVELS_MAX);
  if (opt->parts == 1) {
    for (int64_t r = 0; r < g->rows; r++) part[r] = 0;
    goto done;
  }

  /* level[0] is the input; level[l + 1] is built from level[l], and
   * cluster[l] maps level l's rows to level l + 1's vertices (global ids:
   * a cluster may gather rows of several ranks).  A level's graph is kept for
   * the refinement on the way back while the levels kept hold at most half
   * the input's edges together (16 bytes an edge with its weight: the
   * input's own size), and the coarsest; the others are freed once the
   * next is built.  On a 100,000-node SBM at K = 3 refining those levels
   * took the cut from 1.072x METIS' to 1.046x. */
  level[0] = (halo__wdgraph){.g = *g};
  /* --balance edges or work: each row weighs halo_partition_load, and the
   * grain and the bound below are in that weight (PT-Scotch, like Scotch,
   * balances one load). */
  int64_t total = g->nodes;
  if (opt->balance != HALO_BALANCE_NODES) {
    vwgt0 = malloc((size_t)(g->rows > 0 ? g->rows : 1) * sizeof *vwgt0);
    HALO_TRY(halo_mpi_agree_within(comm, halo__dmemory(vwgt0 != NULL, "the vertex loads")));
    const int64_t mean = halo_partition_mean_degree(g->nodes, g->edges);
    int64_t here = 0;
    for (int64_t r = 0; r < g->rows; r++) {
      vwgt0[r] = halo_partition_load(opt->balance, g->indptr[r + 1] - g->indptr[r], mean,
                                     opt->work_row_cost);
      here += vwgt0[r];
    }
    MPI_Allreduce(&here, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    level[0].vwgt = vwgt0;
  }
  const int64_t direct = direct_nodes();
  const int64_t stop =
      (int64_t)opt->parts * STOP_PER_PART > direct ? (int64_t)opt->parts * STOP_PER_PART : direct;
  const int64_t grain = (total + (int64_t)opt->parts * GRAIN - 1) / ((int64_t)opt->parts * GRAIN);
  while (levels < opt->levels && level[levels].g.nodes > stop) {
    HALO_TRY(halo__dcoarsen(comm, &level[levels], grain, &level[levels + 1], &cluster[levels]));
    levels++;
    blocks[levels] = level[levels].g;
    const int64_t before = level[levels - 1].g.nodes, edges = level[levels - 1].g.edges;
    if (levels > 1 && (kept + edges) * 2 <= g->edges)
      kept += edges; /* global counts: every rank keeps the same levels */
    else if (levels > 1)
      halo__wdgraph_free(&level[levels - 1]); /* blocks keeps its shape, for the map */
    if (level[levels].g.nodes * 5 > before * 4) break;
  }
  const halo__wdgraph *at = &level[levels];
  coarse_part =
      levels == 0 ? part : calloc((size_t)(at->g.rows > 0 ? at->g.rows : 1), sizeof *coarse_part);
  if (!coarse_part) halo_log_error("out of memory allocating the coarse part vector");
  HALO_TRY(halo_mpi_agree_within(comm, coarse_part ? HALO_OK : HALO_ERR_NOMEM));
  HALO_TRY(scotch_part(comm, at, opt, source, coarse_part));
  /* (1 + ufactor/1000) of the mean part, and never under the mean. */
  const int64_t mean_up = (total + opt->parts - 1) / opt->parts;
  const int64_t bound = (total * (1000 + opt->ufactor)) / (1000 * (int64_t)opt->parts);
  const int64_t max_part = bound > mean_up ? bound : mean_up;
  for (int l = levels - 1; l >= 0; l--) {
    halo__wdgraph_free(&level[l + 1]);
    const int64_t rows = l == 0 ? g->rows : blocks[l].rows;
    int32_t *fine = l == 0 ? part : calloc((size_t)(rows > 0 ? rows : 1), sizeof *fine);
    if (!fine) halo_log_error("out of memory allocating a level's part vector");
    st = halo_mpi_agree_within(comm, fine ? HALO_OK : HALO_ERR_NOMEM);
    if (st != HALO_OK) {
      if (fine != part) free(fine);
      goto done;
    }
    st = halo__dproject(comm, &blocks[l + 1], rows, cluster[l], coarse_part, fine);
    free(coarse_part);
    coarse_part = fine;
    if (st != HALO_OK) goto done;
    if (l == 0 || level[l].g.indptr)
      HALO_TRY(halo__drefine(comm, &level[l], opt->parts, max_part, l == 0, fine));
  }
done:
  if (coarse_part != part) free(coarse_part);
  for (int l = 0; l < levels; l++) {
    halo__wdgraph_free(&level[l + 1]);
    free(cluster[l]);
  }
  free(vwgt0);
  return st;
}
