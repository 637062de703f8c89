/* The rows of --halo-aggregate auto, from the whole graph: for each pair of
 * parts p < q, the bipartite graph of the cut edges (u in p, v in q), and
 * the size of its minimum vertex cover (core/halo-cover.h), which crosses
 * each way.  halo-train builds the same graphs from the shards
 * (src/gnn-cover.c); a cover's size is the maximum matching's whatever the
 * order, so the two counts agree without sharing code, and the tests
 * compare them. */
#include <stdlib.h>

#include "halo-cover.h"
#include "halo-partition.h"

typedef struct cut_edge {
  int32_t p, q; /* p < q */
  int64_t u, v; /* u in p, v in q */
} cut_edge;

static int cut_edge_cmp(const void *a, const void *b) {
  const cut_edge *x = a, *y = b;
  if (x->p != y->p) return (x->p > y->p) - (x->p < y->p);
  if (x->q != y->q) return (x->q > y->q) - (x->q < y->q);
  if (x->u != y->u) return (x->u > y->u) - (x->u < y->u);
  return (x->v > y->v) - (x->v < y->v);
}

halo_status halo_partition_stats_cover(const halo_graph *g, const int32_t *part,
                                       halo_partition_stats *s) {
  halo_status st = HALO_OK;
  cut_edge *e = NULL;
  int64_t *place = NULL, *ptr = NULL, *adj = NULL;
  uint8_t *in_l = NULL, *in_r = NULL;
  int64_t m = 0;
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) m += part[u] < part[g->indices[k]];
  HALO_ALLOC(e, m, "the cut edges");
  HALO_ALLOC(place, g->n, "the cut graphs");
  HALO_ALLOC(ptr, m + 1, "the cut graphs");
  HALO_ALLOC(adj, m, "the cut graphs");
  HALO_ALLOC(in_l, m, "the cut graphs");
  HALO_ALLOC(in_r, m, "the cut graphs");
  if (s->between && !s->cover_between)
    HALO_ALLOC(s->cover_between, (int64_t)s->parts * s->parts, "the matrix of cover rows");
  m = 0;
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
      const int64_t v = g->indices[k];
      if (part[u] < part[v]) e[m++] = (cut_edge){part[u], part[v], u, v};
    }
  qsort(e, (size_t)m, sizeof *e, cut_edge_cmp);
  for (int64_t v = 0; v < g->n; v++) place[v] = -1;

  s->cover_volume = 0;
  for (int64_t a = 0, b; a < m; a = b) {
    for (b = a; b < m && e[b].p == e[a].p && e[b].q == e[a].q; b++) {
    }
    /* Left: the pair's u in ascending id; right: its v, numbered as met. */
    int64_t nl = 0, nr = 0;
    for (int64_t k = a; k < b; k++) {
      if (k == a || e[k].u != e[k - 1].u) ptr[nl++] = k - a;
      if (place[e[k].v] < 0) place[e[k].v] = nr++;
      adj[k - a] = place[e[k].v];
    }
    ptr[nl] = b - a;
    const halo_bipartite pair = {.nl = nl, .nr = nr, .ptr = ptr, .adj = adj};
    int64_t size = 0;
    HALO_TRY(halo_cover_bipartite(&pair, in_l, in_r, &size));
    for (int64_t k = a; k < b; k++) place[e[k].v] = -1;
    s->cover_volume += 2 * size;
    if (s->cover_between) {
      s->cover_between[(int64_t)e[a].p * s->parts + e[a].q] = size;
      s->cover_between[(int64_t)e[a].q * s->parts + e[a].p] = size;
    }
  }
done:
  free(e);
  free(place);
  free(ptr);
  free(adj);
  free(in_l);
  free(in_r);
  return st;
}
