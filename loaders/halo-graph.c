#include "halo-graph.h"

#include <stdlib.h>

halo_status halo_graph_create(int64_t n, int64_t m, halo_graph **out) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  *out = NULL;
  if (n < 0 || m < 0)
    HALO_FAIL(HALO_ERR_ARG, "graph size must not be negative (nodes %lld, edges %lld)",
              (long long)n, (long long)m);
  HALO_ALLOC(g, 1, "graph");
  g->n = n;
  g->m = m;
  HALO_ALLOC(g->indptr, n + 1, "graph row offsets");
  HALO_ALLOC(g->indices, m, "graph column indices");
  *out = g;
  g = NULL;
done:
  halo_graph_destroy(&g);
  return st;
}

void halo_graph_destroy(halo_graph **g) {
  if (!g || !*g) return;
  free((*g)->indptr);
  free((*g)->indices);
  free((*g)->x);
  free((*g)->labels);
  free((*g)->targets);
  free((*g)->split);
  free((*g)->original_id);
  free(*g);
  *g = NULL;
}
