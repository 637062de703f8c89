/* One part's shard from its rows alone (halo_partition_shard_of_rows).
 *
 * The rows become a small graph of their own: the part's owned nodes and
 * their neighbours, numbered 0 .. n_local-1 in ascending global id, the
 * owned rows with their edges and every other row empty, and a part vector
 * that gives each neighbour its part.  The numbering keeps the order of the
 * global ids, and every order a plan uses (owned rows within a block, halo
 * rows per owner, send lists, CSR columns) is by id, so the plan of this
 * small graph is the whole graph's plan of the part, renumbered.  Only the
 * global ids, the degrees of the halo rows (empty here) and the graph's
 * counts are put back.
 */
#include <stdlib.h>
#include <string.h>

#include "halo-partition.h"
#include "halo-search.h"

/* The part's nodes in ascending id: owned rows and their neighbours, once each. */
static halo_status local_ids(const halo_part_rows *rows, int64_t **out, int64_t *count) {
  halo_status st = HALO_OK;
  const int64_t nnz = rows->indptr[rows->n_owned];
  int64_t *ids = NULL;
  HALO_ALLOC(ids, rows->n_owned + nnz + 1, "part node ids");
  memcpy(ids, rows->id, (size_t)rows->n_owned * sizeof *ids);
  memcpy(ids + rows->n_owned, rows->nbr, (size_t)nnz * sizeof *ids);
  qsort(ids, (size_t)(rows->n_owned + nnz), sizeof *ids, halo_compare_i64);
  int64_t n = 0;
  for (int64_t i = 0; i < rows->n_owned + nnz; i++)
    if (n == 0 || ids[i] != ids[n - 1]) ids[n++] = ids[i];
  *out = ids;
  *count = n;
done:
  return st;
}

/* g's CSR features over its n local rows: the owned rows' (part row r is
 * local row row_of[r], ascending), none for the halo's. */
static halo_status csr_features(const halo_part_rows *rows, const int64_t *row_of, int64_t n,
                                halo_graph *g) {
  halo_status st = HALO_OK;
  int64_t *indptr = NULL;
  int32_t *indices = NULL;
  float *values = NULL;
  const int64_t nnz = rows->x_indptr[rows->n_owned];
  HALO_ALLOC(indptr, n + 1, "CSR feature offsets");
  HALO_ALLOC(indices, nnz, "CSR feature columns");
  HALO_ALLOC(values, nnz, "CSR feature values");
  for (int64_t r = 0; r < rows->n_owned; r++)
    indptr[row_of[r] + 1] = rows->x_indptr[r + 1] - rows->x_indptr[r];
  for (int64_t j = 0; j < n; j++) indptr[j + 1] += indptr[j];
  memcpy(indices, rows->x_indices, (size_t)nnz * sizeof *indices);
  memcpy(values, rows->x_values, (size_t)nnz * sizeof *values);
  st = halo_graph_set_features_csr(g, rows->features, indptr, indices, values);
  indptr = NULL; /* taken over, or freed on failure */
  indices = NULL;
  values = NULL;
done:
  free(values);
  free(indices);
  free(indptr);
  return st;
}

halo_status halo_partition_shard_of_rows(const halo_part_rows *rows, halo_order order,
                                         uint64_t run_id, halo_shard **out) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  halo_partition_plan *plan = NULL;
  halo_shard *s = NULL;
  int64_t *ids = NULL, *degree = NULL, *row_of = NULL, n = 0;
  int32_t *part = NULL;
  const int64_t n_owned = rows->n_owned, nnz = rows->indptr[n_owned];
  const int64_t F = rows->features;
  *out = NULL;

  HALO_TRY(local_ids(rows, &ids, &n));
  HALO_TRY(halo_graph_create(n, nnz, &g));
  HALO_ALLOC(part, n, "part vector");
  HALO_ALLOC(degree, n, "degrees");
  /* Neighbours first (their part and degree), then the owned rows over them. */
  for (int64_t k = 0; k < nnz; k++) {
    int64_t j = halo_lower_bound(ids, n, rows->nbr[k]);
    part[j] = rows->nbr_part[k];
    degree[j] = rows->nbr_degree[k];
  }
  HALO_ALLOC(row_of, n_owned, "owned rows");
  for (int64_t r = 0; r < n_owned; r++) {
    int64_t j = halo_lower_bound(ids, n, rows->id[r]);
    part[j] = rows->part;
    degree[j] = rows->indptr[r + 1] - rows->indptr[r];
    g->indptr[j + 1] = degree[j];
    row_of[r] = j;
  }
  for (int64_t j = 0; j < n; j++) g->indptr[j + 1] += g->indptr[j];
  if (F > 0 && !rows->x_indptr) HALO_ALLOC(g->x, n * F, "features");
  if (rows->labels) HALO_ALLOC(g->labels, n, "labels");
  if (rows->targets) HALO_ALLOC(g->targets, (size_t)n * (size_t)rows->classes, "targets");
  if (rows->split) HALO_ALLOC(g->split, n, "split");
  g->features = rows->features;
  g->classes = rows->classes;
  g->multilabel = rows->targets != NULL;
  const size_t C = (size_t)rows->classes;
  for (int64_t r = 0; r < n_owned; r++) {
    const int64_t j = row_of[r];
    if (g->x) memcpy(g->x + j * F, rows->x + r * F, (size_t)F * sizeof *g->x);
    if (rows->labels) g->labels[j] = rows->labels[r];
    if (rows->targets) memcpy(g->targets + (size_t)j * C, rows->targets + (size_t)r * C, C);
    if (rows->split) g->split[j] = rows->split[r];
  }
  if (F > 0 && rows->x_indptr) HALO_TRY(csr_features(rows, row_of, n, g));
  /* Owned rows ascend in id as their local rows do: the CSR fills in order. */
  for (int64_t r = 0, at = 0; r < n_owned; r++)
    for (int64_t k = rows->indptr[r]; k < rows->indptr[r + 1]; k++)
      g->indices[at++] = halo_lower_bound(ids, n, rows->nbr[k]);

  HALO_TRY(halo_partition_plan_create(g, part, rows->parts, order, run_id, &plan));
  HALO_TRY(halo_partition_plan_shard(plan, rows->part, &s));
  for (int64_t r = 0; r < s->n_owned + s->n_halo; r++) {
    s->degree[r] = degree[s->global_id[r]];
    s->global_id[r] = ids[s->global_id[r]];
  }
  s->nodes = rows->nodes;
  s->edges = rows->edges;
  if (rows->original_id) {
    HALO_ALLOC(s->original_id, s->n_owned, "original ids");
    for (int64_t r = 0; r < s->n_owned; r++)
      s->original_id[r] = rows->original_id[halo_lower_bound(rows->id, n_owned, s->global_id[r])];
  }
  *out = s;
  s = NULL;
done:
  halo_shard_destroy(&s);
  halo_partition_plan_destroy(&plan);
  halo_graph_destroy(&g);
  free(row_of);
  free(degree);
  free(part);
  free(ids);
  return st;
}
