#include "halo-graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "halo-csr.h"

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
  free((*g)->edge_weight);
  halo_graph_features_free(*g);
  free((*g)->labels);
  free((*g)->targets);
  free((*g)->split);
  free((*g)->original_id);
  free(*g);
  *g = NULL;
}

void halo_graph_features_free(halo_graph *g) {
  if (!g) return;
  free(g->x);
  free(g->x_indptr);
  free(g->x_indices);
  free(g->x_values);
  g->x = NULL;
  g->x_indptr = NULL;
  g->x_indices = NULL;
  g->x_values = NULL;
  g->features = 0;
}

halo_status halo_graph_set_features_csr(halo_graph *g, int32_t features, int64_t *indptr,
                                        int32_t *indices, float *values) {
  halo_status st = HALO_OK;
  if (!g || !indptr) HALO_FAIL(HALO_ERR_ARG, "halo_graph_set_features_csr: NULL argument");
  if (features < 1) HALO_FAIL(HALO_ERR_ARG, "CSR features: width %d must be at least 1", features);
  if (indptr[0] != 0)
    HALO_FAIL(HALO_ERR_RANGE, "%s: CSR features: indptr[0] = %lld, expected 0", g->source,
              (long long)indptr[0]);
  for (int64_t v = 0; v < g->n; v++) {
    if (indptr[v + 1] < indptr[v])
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: CSR features: indptr[%lld] = %lld is below indptr[%lld] = %lld", g->source,
                (long long)v + 1, (long long)indptr[v + 1], (long long)v, (long long)indptr[v]);
    if (indptr[v + 1] > indptr[v] && (!indices || !values))
      HALO_FAIL(HALO_ERR_ARG, "halo_graph_set_features_csr: NULL indices or values");
    for (int64_t k = indptr[v]; k < indptr[v + 1]; k++) {
      if (indices[k] < 0 || indices[k] >= features ||
          (k > indptr[v] && indices[k] <= indices[k - 1]))
        HALO_FAIL(HALO_ERR_RANGE,
                  "%s: CSR features: row %lld: column %d is out of range [0, %d) or not ascending",
                  g->source, (long long)v, (int)indices[k], (int)features);
      if (!isfinite(values[k]))
        HALO_FAIL(HALO_ERR_RANGE, "%s: CSR features: row %lld, column %d is not finite", g->source,
                  (long long)v, (int)indices[k]);
    }
  }
  halo_graph_features_free(g);
  g->features = features;
  g->x_indptr = indptr;
  g->x_indices = indices;
  g->x_values = values;
  indptr = NULL;
  indices = NULL;
  values = NULL;
done:
  free(indptr);
  free(indices);
  free(values);
  return st;
}

int64_t halo_graph_features_nnz(const halo_graph *g) {
  if (g->x_indptr) return g->x_indptr[g->n];
  int64_t nnz = 0;
  if (g->x)
    for (int64_t k = 0; k < g->n * (int64_t)g->features; k++) nnz += g->x[k] != 0.0f;
  return nnz;
}

halo_status halo_graph_features_to_dense(halo_graph *g) {
  halo_status st = HALO_OK;
  float *x = NULL;
  if (!g->x_indptr) return HALO_OK;
  const int64_t F = g->features;
  if ((uint64_t)g->n * (uint64_t)F > SIZE_MAX / sizeof(float))
    HALO_FAIL(HALO_ERR_NOMEM, "%lld x %lld features exceed the address space", (long long)g->n,
              (long long)F);
  x = calloc((size_t)g->n * (size_t)F > 0 ? (size_t)g->n * (size_t)F : 1, sizeof *x);
  if (!x)
    HALO_FAIL(HALO_ERR_NOMEM, "out of memory densifying %lld x %lld features", (long long)g->n,
              (long long)F);
  const halo_csr a = {.rows = g->n, .cols = F, .nnz = g->x_indptr[g->n], .indptr = g->x_indptr,
                      .indices = g->x_indices, .values = g->x_values};
  halo_csr_to_dense(&a, x);
  const int32_t width = g->features;
  halo_graph_features_free(g);
  g->features = width;
  g->x = x;
  x = NULL;
done:
  free(x);
  return st;
}

halo_status halo_graph_features_to_csr(halo_graph *g) {
  halo_status st = HALO_OK;
  halo_csr a = {0};
  if (!g->x) return HALO_OK;
  HALO_TRY(halo_csr_from_dense(g->x, g->n, g->features, "the node features", &a));
  const int32_t width = g->features;
  halo_graph_features_free(g);
  g->features = width;
  g->x_indptr = a.indptr;
  g->x_indices = a.indices;
  g->x_values = a.values;
  a = (halo_csr){0};
done:
  halo_csr_free(&a);
  return st;
}
