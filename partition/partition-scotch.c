/* Scotch k-way (SCOTCH_graphPart, the int64 library): the partitioner for
 * graphs past METIS' 32-bit idx_t, and a second opinion below it.
 *
 * SCOTCH_Num is int64_t in the library halo links (CMake pairs the
 * scotch-int64 header with its archive), so Scotch reads the graph's own
 * arrays: no copy of the structure is made, and peak memory is the graph, an
 * int64 part vector (8 bytes a node), 16 bytes a node more when the graph
 * has isolated nodes (the map that leaves them out), and Scotch's workspace.
 *
 * The run is reproducible: a context with Scotch's deterministic option, a
 * random state of its own seeded with the user's seed, and a fixed number of
 * threads (HALO_SCOTCH_THREADS), so the same input and options give the same
 * parts on any machine.  The strategy is Scotch's mapping strategy by
 * recursive bipartitioning (SCOTCH_STRATRECURSIVE) for k parts at imbalance
 * ufactor / 1000, the tolerance METIS gets.  Measured on a 200,000-node SBM
 * into 16 parts (docs/benchmarks.md, "Scotch"): the same cut as the default
 * k-way strategy at a fifth of its time.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scotch.h>

#include "halo-partition.h"
#include "partition-impl.h"

/* Scotch's threads.  Fixed because the parts depend on their number; 2 is
 * what recursive bipartitioning used well on the measured graphs (1 thread:
 * 4.9 s, 2: 3.3 s, 4 on 2 cores: 4.0 s on the 200,000-node SBM). */
#define HALO_SCOTCH_THREADS 2

_Static_assert(sizeof(SCOTCH_Num) == sizeof(int64_t),
               "scotch.h is not the int64 build: the graph's arrays are passed as they are");

/* The nodes that have edges, renumbered 0 .. k-1 in ascending id, with
 * g->indices rewritten in place to the new numbers (isolated nodes are no
 * one's neighbour, so every entry has one).  Scotch's bisection spends its
 * time on isolated nodes as if they were a component each: 51 s instead of
 * 36 s on rmat:scale=17 with its 53,635 isolated nodes.  A graph without
 * isolated nodes is passed as it is (k = n, no map).  new_of (size n) is the
 * caller's scratch. */
typedef struct linked {
  int64_t k;              /* nodes with at least one edge */
  int64_t *old_of;        /* size k: node id in g of compact node i; NULL when k = n */
  int64_t *verttab;       /* size k + 1: the compact CSR's offsets; NULL when k = n */
  const int64_t *offsets; /* verttab, or g->indptr when k = n */
} linked;

static halo_status link_nodes(halo_graph *g, int64_t *new_of, linked *out) {
  halo_status st = HALO_OK;
  int64_t k = 0;
  for (int64_t v = 0; v < g->n; v++) k += g->indptr[v + 1] > g->indptr[v];
  out->k = k;
  out->offsets = g->indptr;
  if (k == g->n) goto done;
  HALO_ALLOC(out->old_of, k, "Scotch node map");
  HALO_ALLOC(out->verttab, k + 1, "Scotch offsets");
  out->offsets = out->verttab;
  k = 0;
  for (int64_t v = 0; v < g->n; v++) {
    new_of[v] = -1;
    if (g->indptr[v + 1] == g->indptr[v]) continue;
    new_of[v] = k;
    out->old_of[k] = v;
    out->verttab[k++] = g->indptr[v];
  }
  out->verttab[k] = g->m;
  for (int64_t e = 0; e < g->m; e++) g->indices[e] = new_of[g->indices[e]];
done:
  return st;
}

/* The node of g that compact node i is. */
static int64_t node_of(const linked *nodes, int64_t i) {
  return nodes->old_of ? nodes->old_of[i] : i;
}

/* Undoes link_nodes' renumbering of g->indices, on success and failure alike. */
static void unlink_nodes(halo_graph *g, linked *nodes) {
  if (nodes->old_of)
    for (int64_t e = 0; e < g->m; e++) g->indices[e] = nodes->old_of[g->indices[e]];
  free(nodes->verttab);
  free(nodes->old_of);
  *nodes = (linked){0};
}

/* Part a holds fewer nodes than part b (the lower index among equals). */
static int lighter(const int64_t *owned, int32_t a, int32_t b) {
  return owned[a] < owned[b] || (owned[a] == owned[b] && a < b);
}

/* Restores the heap order below heap[at] of a min-heap of parts by size. */
static void sift_down(int32_t *heap, int32_t size, int32_t at, const int64_t *owned) {
  for (;;) {
    int32_t least = at, left = 2 * at + 1, right = left + 1;
    if (left < size && lighter(owned, heap[left], heap[least])) least = left;
    if (right < size && lighter(owned, heap[right], heap[least])) least = right;
    if (least == at) return;
    int32_t t = heap[at];
    heap[at] = heap[least];
    heap[least] = t;
    at = least;
  }
}

/* Gives each isolated node (part[v] < 0) to the part that owns the fewest
 * nodes at that moment, in ascending id: isolated nodes cut no edge, so they
 * only even out the balance.  O(n + isolated · log P). */
static halo_status place_isolated(int32_t *part, int64_t n, int32_t parts) {
  halo_status st = HALO_OK;
  int64_t *owned = NULL;
  int32_t *heap = NULL;
  HALO_ALLOC(owned, parts, "part sizes");
  HALO_ALLOC(heap, parts, "part heap");
  for (int64_t v = 0; v < n; v++)
    if (part[v] >= 0) owned[part[v]]++;
  for (int32_t i = 0; i < parts; i++) heap[i] = i;
  for (int32_t i = parts / 2 - 1; i >= 0; i--) sift_down(heap, parts, i, owned);
  for (int64_t v = 0; v < n; v++) {
    if (part[v] >= 0) continue;
    part[v] = heap[0];
    owned[heap[0]]++;
    sift_down(heap, parts, 0, owned);
  }
done:
  free(heap);
  free(owned);
  return st;
}

/* SCOTCH_graphPart of the compact graph (nodes, indices) into where[0..k). */
static halo_status scotch_part(const linked *nodes, int64_t m, int64_t *indices,
                               const SCOTCH_Num *velotab, const halo_partition_options *opt,
                               const char *source, SCOTCH_Num *where) {
  halo_status st = HALO_OK;
  SCOTCH_Graph graph, bound;
  SCOTCH_Strat strat;
  SCOTCH_Context context;
  int graph_on = 0, bound_on = 0, strat_on = 0, context_on = 0;
  char why[HALO__SCOTCH_ERROR_MAX];

  halo__scotch_error_reset();
  if (SCOTCH_graphInit(&graph) != 0 || !(graph_on = 1) ||
      SCOTCH_graphBuild(&graph, 0, (SCOTCH_Num)nodes->k, nodes->offsets, NULL, velotab, NULL,
                        (SCOTCH_Num)m, indices, NULL) != 0)
    goto failed;
  /* Recursive bipartitioning hands each half to a thread with a random
   * state of its own, so the parts depend on the number of threads: it is
   * fixed, not Scotch's default of one per core. */
  if (SCOTCH_contextInit(&context) != 0 || !(context_on = 1) ||
      SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1) != 0 ||
      SCOTCH_contextRandomClone(&context) != 0 ||
      SCOTCH_contextThreadSpawn(&context, HALO_SCOTCH_THREADS, NULL) != 0)
    goto failed;
  SCOTCH_contextRandomSeed(&context, (SCOTCH_Num)opt->seed);
  if (SCOTCH_graphInit(&bound) != 0 || !(bound_on = 1) ||
      SCOTCH_contextBindGraph(&context, &graph, &bound) != 0)
    goto failed;
  if (SCOTCH_stratInit(&strat) != 0 || !(strat_on = 1) ||
      SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATRECURSIVE, (SCOTCH_Num)opt->parts,
                                opt->ufactor / 1000.0) != 0)
    goto failed;
  if (SCOTCH_graphPart(&bound, (SCOTCH_Num)opt->parts, &strat, where) != 0) goto failed;
  goto done;

failed:
  halo__scotch_error_take(why, sizeof why);
  HALO_FAIL(HALO_ERR_SCOTCH, "Scotch could not partition %s into %d parts: %s", source, opt->parts,
            why);
done:
  if (strat_on) SCOTCH_stratExit(&strat);
  if (bound_on) SCOTCH_graphExit(&bound);
  if (context_on) SCOTCH_contextExit(&context);
  if (graph_on) SCOTCH_graphExit(&graph);
  return st;
}

halo_status halo_partition_scotch(halo_graph *g, const halo_partition_options *opt, int32_t *part) {
  halo_status st = HALO_OK;
  SCOTCH_Num *where = NULL, *velotab = NULL;
  linked nodes = {0};
  const int64_t n = g->n;

  if (opt->parts < 1 || opt->parts > n)
    HALO_FAIL(HALO_ERR_ARG, "Scotch: %d parts for %lld nodes; need 1 <= parts <= nodes", opt->parts,
              (long long)n);
  if (opt->seed < 0) HALO_FAIL(HALO_ERR_ARG, "Scotch seed %lld is negative", (long long)opt->seed);
  if (opt->ufactor < 1) HALO_FAIL(HALO_ERR_ARG, "Scotch: ufactor %d must be >= 1", opt->ufactor);
  if (opt->objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG, "Scotch minimises the edge cut only; objective %s is METIS'",
              halo_objective_name(opt->objective));
  if (opt->parts == 1) {
    for (int64_t v = 0; v < n; v++) part[v] = 0;
    goto done;
  }

  HALO_ALLOC(where, n, "Scotch part vector");
  HALO_TRY(link_nodes(g, where, &nodes));
  /* --balance edges or work: one load a node (halo_partition_load); Scotch's
   * mapping balances a single load.  Isolated nodes, left out here, weigh
   * the same under every balance but edges, and are placed by node count. */
  if (nodes.k > 0 && opt->balance != HALO_BALANCE_NODES) {
    const int64_t mean = halo_partition_mean_degree(n, g->m);
    HALO_ALLOC(velotab, nodes.k, "Scotch vertex loads");
    for (int64_t i = 0; i < nodes.k; i++)
      velotab[i] =
          halo_partition_load(opt->balance, nodes.offsets[i + 1] - nodes.offsets[i], mean);
  }
  if (nodes.k > 0)
    HALO_TRY(scotch_part(&nodes, g->m, g->indices, velotab, opt, g->source, where));
  for (int64_t v = 0; v < n; v++) part[v] = -1;
  for (int64_t i = 0; i < nodes.k; i++) {
    if (where[i] < 0 || where[i] >= opt->parts)
      HALO_FAIL(HALO_ERR_SCOTCH, "Scotch returned part %lld for node %lld (parts: %d)",
                (long long)where[i], (long long)node_of(&nodes, i), opt->parts);
    part[node_of(&nodes, i)] = (int32_t)where[i];
  }
  HALO_TRY(place_isolated(part, n, opt->parts));

done:
  unlink_nodes(g, &nodes);
  free(velotab);
  free(where);
  return st;
}
