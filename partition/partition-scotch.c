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
  int64_t k;              /* nodes kept */
  int64_t edges;          /* directed edges among them */
  int64_t *old_of;        /* size k: node id in g of compact node i; NULL when k = n */
  int64_t *verttab;       /* size k + 1: the compact CSR's offsets; NULL when k = n */
  int64_t *edgetab;       /* size edges: the compact CSR's neighbours; NULL when k = n */
  const int64_t *offsets; /* verttab, or g->indptr when k = n */
  int64_t *indices;       /* edgetab, or g->indices when k = n */
} linked;

/* The nodes of g not dropped (drop[v] == 0), renumbered 0 .. k-1 in
 * ascending id, as a compact CSR of their own (a dropped node is no kept
 * node's neighbour: drop whole components).  new_of (size n) is the
 * caller's scratch. */
static halo_status link_nodes(const halo_graph *g, const uint8_t *drop, int64_t *new_of,
                              linked *out) {
  halo_status st = HALO_OK;
  int64_t k = 0, edges = 0;
  for (int64_t v = 0; v < g->n; v++)
    if (!drop[v]) k++, edges += g->indptr[v + 1] - g->indptr[v];
  *out = (linked){.k = k, .edges = g->m, .offsets = g->indptr, .indices = g->indices};
  if (k == g->n) goto done;
  HALO_ALLOC(out->old_of, k, "Scotch node map");
  HALO_ALLOC(out->verttab, k + 1, "Scotch offsets");
  HALO_ALLOC(out->edgetab, edges, "Scotch edges");
  out->offsets = out->verttab;
  out->indices = out->edgetab;
  out->edges = edges;
  k = 0;
  for (int64_t v = 0; v < g->n; v++) {
    new_of[v] = -1;
    if (drop[v]) continue;
    new_of[v] = k;
    out->old_of[k++] = v;
  }
  edges = 0;
  for (int64_t i = 0; i < k; i++) {
    const int64_t v = out->old_of[i];
    out->verttab[i] = edges;
    for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
      out->edgetab[edges++] = new_of[g->indices[e]];
  }
  out->verttab[k] = edges;
done:
  return st;
}

/* The node of g that compact node i is. */
static int64_t node_of(const linked *nodes, int64_t i) {
  return nodes->old_of ? nodes->old_of[i] : i;
}

static void unlink_nodes(linked *nodes) {
  free(nodes->edgetab);
  free(nodes->verttab);
  free(nodes->old_of);
  *nodes = (linked){0};
}

/* comp[v]: the connected component of v, numbered in the order of their
 * lowest node; *count gets their number.  queue (size n) is scratch. */
static void components(const halo_graph *g, int64_t *comp, int64_t *queue, int64_t *count) {
  int64_t c = 0;
  for (int64_t v = 0; v < g->n; v++) comp[v] = -1;
  for (int64_t s = 0; s < g->n; s++) {
    if (comp[s] >= 0) continue;
    int64_t head = 0, tail = 0;
    comp[s] = c;
    queue[tail++] = s;
    while (head < tail) {
      const int64_t u = queue[head++];
      for (int64_t e = g->indptr[u]; e < g->indptr[u + 1]; e++)
        if (comp[g->indices[e]] < 0) {
          comp[g->indices[e]] = c;
          queue[tail++] = g->indices[e];
        }
    }
    c++;
  }
  *count = c;
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

/* Component order: heavier first, then the lower number. */
static const int64_t *sort_load;
static int heavier_first(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  if (sort_load[x] != sort_load[y]) return sort_load[x] > sort_load[y] ? -1 : 1;
  return (x > y) - (x < y);
}

/* Gives each small component (small[c]), heaviest first, whole to the part
 * with the least load at that moment (load: the parts' loads so far,
 * updated): they cut no edge, so they only even out the balance.
 * chosen[c] gets its part. O(components · log components + small · log P). */
static halo_status place_components(int64_t count, const int64_t *cload, const uint8_t *small,
                                    int64_t *load, int32_t parts, int32_t *chosen) {
  halo_status st = HALO_OK;
  int64_t *order = NULL, m = 0;
  int32_t *heap = NULL;
  HALO_ALLOC(order, count > 0 ? count : 1, "component order");
  HALO_ALLOC(heap, parts, "part heap");
  for (int64_t c = 0; c < count; c++)
    if (small[c]) order[m++] = c;
  sort_load = cload;
  qsort(order, (size_t)m, sizeof *order, heavier_first);
  for (int32_t i = 0; i < parts; i++) heap[i] = i;
  for (int32_t i = parts / 2 - 1; i >= 0; i--) sift_down(heap, parts, i, load);
  for (int64_t i = 0; i < m; i++) {
    chosen[order[i]] = heap[0];
    load[heap[0]] += cload[order[i]];
    sift_down(heap, parts, 0, load);
  }
done:
  free(heap);
  free(order);
  return st;
}

/* SCOTCH_graphPart of the compact graph (nodes, indices) into where[0..k). */
static halo_status scotch_part(const linked *nodes, const SCOTCH_Num *velotab, int32_t targets,
                               SCOTCH_Num *target_load, const halo_partition_options *opt,
                               const char *source, SCOTCH_Num *where) {
  halo_status st = HALO_OK;
  SCOTCH_Graph graph, bound;
  SCOTCH_Strat strat;
  SCOTCH_Context context;
  SCOTCH_Arch arch;
  int graph_on = 0, bound_on = 0, strat_on = 0, context_on = 0, arch_on = 0;
  const int64_t m = nodes->edges;
  int64_t *indices = nodes->indices;
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
      SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATRECURSIVE, (SCOTCH_Num)targets,
                                opt->ufactor / 1000.0) != 0)
    goto failed;
  if (!target_load) {
    if (SCOTCH_graphPart(&bound, (SCOTCH_Num)targets, &strat, where) != 0) goto failed;
  } else {
    /* Parts of unequal size: a complete graph of weighted targets. */
    if (SCOTCH_archInit(&arch) != 0 || !(arch_on = 1) ||
        SCOTCH_archCmpltw(&arch, (SCOTCH_Num)targets, target_load) != 0 ||
        SCOTCH_graphMap(&bound, &arch, &strat, where) != 0)
      goto failed;
  }
  goto done;

failed:
  halo__scotch_error_take(why, sizeof why);
  HALO_FAIL(HALO_ERR_SCOTCH, "Scotch could not partition %s into %d parts: %s", source, opt->parts,
            why);
done:
  if (arch_on) SCOTCH_archExit(&arch);
  if (strat_on) SCOTCH_stratExit(&strat);
  if (bound_on) SCOTCH_graphExit(&bound);
  if (context_on) SCOTCH_contextExit(&context);
  if (graph_on) SCOTCH_graphExit(&graph);
  return st;
}

halo_status halo_partition_scotch(halo_graph *g, const halo_partition_options *opt, int32_t *part) {
  halo_status st = HALO_OK;
  SCOTCH_Num *where = NULL, *velotab = NULL;
  int64_t *comp = NULL, *cload = NULL, *load = NULL;
  uint8_t *drop = NULL, *small = NULL;
  int32_t *chosen = NULL;
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

  /* Connected components first (docs/partition.md, "Scotch and PT-Scotch
   * against METIS"): Scotch's recursive bisection balances every cut, so a
   * graph of one large component and many small ones had the large one cut
   * into K and the small ones spread, 2.2x METIS' cut at K = 4.  Components
   * of at most an eighth of a part's mean load (isolated nodes among them)
   * are left out of Scotch's graph; the others are mapped onto as few parts
   * as their load needs, of weights that fill those parts, and the small
   * components then fill the parts' remaining room, heaviest first, each
   * whole to the lightest part. */
  HALO_ALLOC(where, n, "Scotch part vector");
  HALO_ALLOC(comp, n, "component numbers");
  HALO_ALLOC(drop, n, "component marks");
  int64_t count = 0, total = 0, big = 0;
  components(g, comp, where, &count);
  HALO_ALLOC(cload, count, "component loads");
  HALO_ALLOC(small, count, "component marks");
  HALO_ALLOC(chosen, count, "component parts");
  HALO_ALLOC(load, opt->parts, "part loads");
  const int64_t mean = halo_partition_mean_degree(n, g->m);
  for (int64_t v = 0; v < n; v++) {
    const int64_t l = halo_partition_load(opt->balance, g->indptr[v + 1] - g->indptr[v], mean,
                                          opt->work_row_cost);
    cload[comp[v]] += l;
    total += l;
  }
  for (int64_t c = 0; c < count; c++) {
    small[c] = cload[c] * 8 * opt->parts <= total;
    if (!small[c]) big += cload[c];
  }
  for (int64_t v = 0; v < n; v++) drop[v] = small[comp[v]];
  HALO_TRY(link_nodes(g, drop, where, &nodes));
  /* --balance edges or work: one load a node (halo_partition_load); Scotch's
   * mapping balances a single load. */
  if (nodes.k > 0 && opt->balance != HALO_BALANCE_NODES) {
    HALO_ALLOC(velotab, nodes.k, "Scotch vertex loads");
    for (int64_t i = 0; i < nodes.k; i++)
      velotab[i] = halo_partition_load(opt->balance, nodes.offsets[i + 1] - nodes.offsets[i], mean,
                                       opt->work_row_cost);
  }
  /* The parts the large components need: ceil(big / (total / parts)). */
  int32_t targets = (int32_t)((big * opt->parts + total - 1) / total);
  if (targets < 1) targets = 1;
  if (targets > opt->parts) targets = opt->parts;
  if (nodes.k > 0 && targets == 1) {
    for (int64_t i = 0; i < nodes.k; i++) where[i] = 0;
  } else if (nodes.k > 0) {
    SCOTCH_Num *target_load = NULL;
    if (targets < opt->parts) {
      HALO_ALLOC(target_load, targets, "Scotch target loads");
      const int64_t share = total / opt->parts > 0 ? total / opt->parts : 1;
      for (int32_t q = 0; q < targets; q++) target_load[q] = share;
      const int64_t last = big - (int64_t)(targets - 1) * share;
      target_load[targets - 1] = last > 0 ? last : 1;
    }
    st = scotch_part(&nodes, velotab, targets, target_load, opt, g->source, where);
    free(target_load);
    if (st != HALO_OK) goto done;
  }
  for (int64_t i = 0; i < nodes.k; i++) {
    if (where[i] < 0 || where[i] >= targets)
      HALO_FAIL(HALO_ERR_SCOTCH, "Scotch returned part %lld for node %lld (parts: %d)",
                (long long)where[i], (long long)node_of(&nodes, i), targets);
    const int64_t v = node_of(&nodes, i);
    part[v] = (int32_t)where[i];
    load[where[i]] += halo_partition_load(opt->balance, g->indptr[v + 1] - g->indptr[v], mean,
                                          opt->work_row_cost);
  }
  HALO_TRY(place_components(count, cload, small, load, opt->parts, chosen));
  for (int64_t v = 0; v < n; v++)
    if (small[comp[v]]) part[v] = chosen[comp[v]];

done:
  unlink_nodes(&nodes);
  free(load);
  free(chosen);
  free(small);
  free(cload);
  free(drop);
  free(comp);
  free(velotab);
  free(where);
  return st;
}
