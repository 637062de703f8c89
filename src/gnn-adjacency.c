/* The aggregation matrices over a part's owned rows: GCN's
 * Â = D^-1/2 (A + I) D^-1/2 (or without I, or unnormalised), GIN's A, GraphSAGE's mean D⁻¹A and its
 * transpose A·D⁻¹, GAT's edges A + I.
 *
 * A weighted part (s->edge_weight) gives GCN and GraphSAGE their weighted
 * forms (docs/models.md, "Edge weights"), with d_i = s->weighted_degree[i],
 * the sum of row i's weights in the whole graph:
 *   Â_ij = w_ij / sqrt((d_i + 1)(d_j + 1)),  Â_ii = 1 / (d_i + 1)
 *   (PyG's gcn_norm with edge_weight, self-loops of weight 1);
 *   M_ij = w_ij / d_i, and Mᵀ's entry (j, i) = w_ij / d_i
 *   (the weighted mean: Σ_j w_ij h_j / Σ_j w_ij).
 * GIN and GAT take no weights (halo-train refuses them).
 *
 * Rows are summed in ascending GLOBAL id, whatever the local numbering, so
 * that a row's floating-point sum is the same on every partition of the
 * graph: this is what makes a 1-rank and an 8-rank run agree to rounding of
 * the reductions alone. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "gnn-impl.h"

typedef struct entry {
  int64_t gid;
  int32_t col;
  float w; /* the edge's weight (1 for the self-loop and an unweighted part) */
} entry;

static int entry_cmp(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

float gnn_aggregation_value(halo_aggregation kind, const halo_shard *s, int64_t i, int64_t j) {
  switch (kind) {
    case HALO_AGG_SYM:
      return (float)(1.0 / sqrt(((double)s->degree[i] + 1.0) * ((double)s->degree[j] + 1.0)));
    case HALO_AGG_SYM_NOLOOP: /* an entry means an edge: both degrees are >= 1 */
      return (float)(1.0 / sqrt((double)s->degree[i] * (double)s->degree[j]));
    case HALO_AGG_MEAN:
      return (float)(1.0 / (double)s->degree[i]);
    case HALO_AGG_MEAN_T:
      return (float)(1.0 / (double)s->degree[j]);
    case HALO_AGG_SUM:
    case HALO_AGG_SELF:
      break;
  }
  return 1.0f;
}

/* The value of weighted entry (i, j) of weight w, i owned; i == j is the
 * self-loop (w = 1). */
static float weighted_value(halo_aggregation kind, const halo_shard *s, int64_t i, int64_t j,
                            float w) {
  const double *d = s->weighted_degree;
  switch (kind) {
    case HALO_AGG_SYM:
      return (float)((double)w / sqrt((d[i] + 1.0) * (d[j] + 1.0)));
    case HALO_AGG_SYM_NOLOOP: /* PyG's gcn_norm without self-loops: w / sqrt(d_i d_j), and 0
                                 where a degree is 0 (its inverse root is 0 there) */
      return d[i] > 0.0 && d[j] > 0.0 ? (float)((double)w / sqrt(d[i] * d[j])) : 0.0f;
    case HALO_AGG_MEAN:
      return (float)((double)w / d[i]);
    case HALO_AGG_MEAN_T:
      return (float)((double)w / d[j]);
    case HALO_AGG_SUM:
    case HALO_AGG_SELF:
      break;
  }
  return w; /* the weighted sum (the self-loop's w is 1) */
}

/* The weighted mean divides by d_i (M) or d_j (Mᵀ): a node with edges
 * whose weights sum to 0 is refused, naming it (an isolated node aggregates
 * to zero, as unweighted).  halo-net.h. */
halo_status halo_net_check_weighted_mean(const halo_shard *s) {
  halo_status st = HALO_OK;
  for (int64_t i = 0; i < s->n_owned; i++)
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++) {
      const int64_t j = s->indices[k];
      const int64_t bad = !(s->weighted_degree[i] > 0.0) ? i : !(s->weighted_degree[j] > 0.0) ? j : -1;
      if (bad >= 0)
        HALO_FAIL(HALO_ERR_RANGE,
                  "node %lld%s: the weights of its %lld edge%s sum to 0, so GraphSAGE's weighted "
                  "mean would divide by zero (give one of them a weight > 0, or train with "
                  "--no-edge-weights)",
                  (long long)(bad < s->n_owned && s->original_id ? s->original_id[bad]
                                                                  : s->global_id[bad]),
                  bad < s->n_owned && s->original_id ? " (the input's id)" : "",
                  (long long)s->degree[bad], s->degree[bad] == 1 ? "" : "s");
    }
done:
  return st;
}

halo_status halo_net_adjacency(const halo_shard *s, halo_csr *out) {
  return halo_gnn_aggregation(s, HALO_AGG_SYM, out);
}

halo_status halo_gnn_aggregation(const halo_shard *s, halo_aggregation kind, halo_csr *out) {
  halo_status st = HALO_OK;
  const int64_t n = s->n_owned, cols = s->n_owned + s->n_halo;
  const int self = kind == HALO_AGG_SYM || kind == HALO_AGG_SELF;
  /* Every aggregation of a weighted part uses its weights: the models that
   * take none (GIN, GAT, SAGE's max) are refused on a weighted graph before
   * this, or trained with --no-edge-weights, which drops them. */
  const int weighted = s->edge_weight != NULL;
  halo_csr a = {.rows = n, .cols = cols, .nnz = s->nnz + (self ? n : 0)};
  entry *rows = NULL; /* one row's buffer per thread */
  int64_t max_len = 0;
  const int threads = omp_get_max_threads();

  *out = (halo_csr){0};
  if (weighted && (kind == HALO_AGG_MEAN || kind == HALO_AGG_MEAN_T))
    HALO_TRY(halo_net_check_weighted_mean(s));
  if (cols > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "part %d has %lld local columns, more than int32 indices hold",
              s->part, (long long)cols);
  for (int64_t i = 0; i < n; i++) {
    int64_t len = s->indptr[i + 1] - s->indptr[i] + self;
    if (len > max_len) max_len = len;
  }
  HALO_ALLOC(a.indptr, n + 1, "the rows of the normalised adjacency");
  HALO_ALLOC(a.indices, a.nnz, "the columns of the normalised adjacency");
  HALO_ALLOC(a.values, a.nnz, "the values of the normalised adjacency");
  HALO_ALLOC(rows, max_len * threads, "a row of the adjacency per thread");

  /* Rows are independent, and each is sorted alone: the result does not
   * depend on the thread count. */
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < n; i++) {
    entry *row = rows + max_len * omp_get_thread_num();
    int64_t len = 0;
    if (self) row[len++] = (entry){.gid = s->global_id[i], .col = (int32_t)i, .w = 1.0f};
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
      row[len++] = (entry){.gid = s->global_id[s->indices[k]],
                           .col = s->indices[k],
                           .w = weighted ? s->edge_weight[k] : 1.0f};
    qsort(row, (size_t)len, sizeof *row, entry_cmp);

    int64_t base = s->indptr[i] + (self ? i : 0);
    a.indptr[i + 1] = base + len;
    for (int64_t k = 0; k < len; k++) {
      a.indices[base + k] = row[k].col;
      a.values[base + k] = weighted ? weighted_value(kind, s, i, row[k].col, row[k].w)
                                    : gnn_aggregation_value(kind, s, i, row[k].col);
    }
  }
  *out = a;
  a = (halo_csr){0};
done:
  free(rows);
  free(a.indptr);
  free(a.indices);
  free(a.values);
  return st;
}
