/* The aggregation matrices over a part's owned rows: GCN's
 * Â = D^-1/2 (A + I) D^-1/2 (or without I, or unnormalised), GIN's A, GraphSAGE's mean D⁻¹A and its
 * transpose A·D⁻¹, GAT's edges A + I.
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

halo_status halo_net_adjacency(const halo_shard *s, halo_csr *out) {
  return halo_gnn_aggregation(s, HALO_AGG_SYM, out);
}

halo_status halo_gnn_aggregation(const halo_shard *s, halo_aggregation kind, halo_csr *out) {
  halo_status st = HALO_OK;
  const int64_t n = s->n_owned, cols = s->n_owned + s->n_halo;
  const int self = kind == HALO_AGG_SYM || kind == HALO_AGG_SELF;
  halo_csr a = {.rows = n, .cols = cols, .nnz = s->nnz + (self ? n : 0)};
  entry *rows = NULL; /* one row's buffer per thread */
  int64_t max_len = 0;
  const int threads = omp_get_max_threads();

  *out = (halo_csr){0};
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
    if (self) row[len++] = (entry){.gid = s->global_id[i], .col = (int32_t)i};
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
      row[len++] = (entry){.gid = s->global_id[s->indices[k]], .col = s->indices[k]};
    qsort(row, (size_t)len, sizeof *row, entry_cmp);

    int64_t base = s->indptr[i] + (self ? i : 0);
    a.indptr[i + 1] = base + len;
    for (int64_t k = 0; k < len; k++) {
      a.indices[base + k] = row[k].col;
      a.values[base + k] = gnn_aggregation_value(kind, s, i, row[k].col);
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
