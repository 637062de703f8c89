/* Boundary sampling (--halo-sample p; BNS-GCN, Wan et al., MLSys'22): each
 * training epoch keeps a keyed fraction p of the boundary nodes
 * (core/halo-sample.h) and drops the rest from that epoch's graph.
 *
 * The epoch's aggregation over owned row i is
 *   Y_i = Σ_{j owned} A_ij X_j + Σ_{j halo, kept} A_ij · (1/p) · X_j,
 * A the model's matrix with its full-graph normalisation (GCN's
 * D^-1/2 (A+I) D^-1/2 from the global degrees, GraphSAGE's 1/deg_i, GIN's
 * 1), as BNS-GCN's code keeps the full graph's in-degrees and divides the
 * kept rows by the kept ratio: an unbiased estimate of the full
 * aggregation.  Forward, the exchange sends the kept rows only and leaves
 * them scaled, the dropped halo rows 0 (halo_exchange_sample_use).
 *
 * The epoch's matrix is no longer symmetric, so its backward is not the
 * forward exchange applied to gradients: dX_j of an owned j is
 *   Σ_{i owned} A_ij dY_i             (here, with dY's halo rows 0)
 * + (1/p) Σ_{parts q} Σ_{i owned by q} A_ij dY_i   (j kept),
 * the second sum made on q from the transpose of its matrix's halo
 * columns (sample_t) and sent back to j's owner, which adds it
 * (halo_exchange_reverse): as in BNS-GCN, only kept rows move, forward and
 * backward.  Host backend only. */
#include <stdlib.h>
#include <string.h>

#include "gnn-impl.h"
#include "halo-sample.h"

/* The entries of shard s's halo columns. */
static int64_t halo_entries(const halo_shard *s) {
  int64_t n = 0;
  for (int64_t k = 0; k < s->indptr[s->n_owned]; k++) n += s->indices[k] >= s->n_owned;
  return n;
}

int64_t gnn_sample_memory(const halo_shard *s, int32_t widest) {
  const int64_t halo = s->n_halo > 0 ? s->n_halo : 1, nnz = halo_entries(s);
  return halo_exchange_sample_memory(s, widest) + (halo + 1) * (int64_t)sizeof(int64_t) +
         (nnz > 0 ? nnz : 1) * (int64_t)(sizeof(int32_t) + sizeof(float)) +
         halo * widest * (int64_t)sizeof(float);
}

/* sample_t = the transpose of a's columns [n_owned, n_owned + n_halo):
 * n_halo rows over the owned columns, each row in ascending owned row. */
static halo_status transpose_halo(const halo_csr *a, int64_t n_owned, int64_t n_halo,
                                  halo_csr *out) {
  halo_status st = HALO_OK;
  halo_csr t = {.rows = n_halo, .cols = n_owned};
  for (int64_t k = 0; k < a->indptr[a->rows]; k++) t.nnz += a->indices[k] >= n_owned;
  HALO_ALLOC(t.indptr, n_halo + 1, "the sampled backward's matrix");
  HALO_ALLOC(t.indices, t.nnz, "the sampled backward's matrix");
  HALO_ALLOC(t.values, t.nnz, "the sampled backward's matrix");
  for (int64_t k = 0; k < a->indptr[a->rows]; k++)
    if (a->indices[k] >= n_owned) t.indptr[a->indices[k] - n_owned + 1]++;
  for (int64_t h = 0; h < n_halo; h++) t.indptr[h + 1] += t.indptr[h];
  {
    int64_t *next = NULL;
    HALO_ALLOC(next, n_halo + 1, "the sampled backward's matrix");
    memcpy(next, t.indptr, (size_t)(n_halo + 1) * sizeof *next);
    for (int64_t i = 0; i < a->rows; i++)
      for (int64_t k = a->indptr[i]; k < a->indptr[i + 1]; k++) {
        if (a->indices[k] < n_owned) continue;
        const int64_t at = next[a->indices[k] - n_owned]++;
        t.indices[at] = (int32_t)i;
        t.values[at] = a->values ? a->values[k] : 1.0f;
      }
    free(next);
  }
  *out = t;
  t = (halo_csr){0};
done:
  halo_csr_free(&t);
  return st;
}

halo_status gnn_sample_setup(halo_net *g, const halo_shard *s, int32_t widest) {
  halo_status st = HALO_OK;
  if (!halo_sample_on(g->opt.halo_sample)) return HALO_OK;
  HALO_TRY(halo_exchange_sample_reserve(g->plan, s, 1));
  HALO_TRY(transpose_halo(&g->adj_fwd.host, g->n_owned, g->n_all - g->n_owned, &g->sample_t));
  HALO_ALLOC(g->sample_halo, (g->n_all - g->n_owned) * (int64_t)widest, "the sampled halo rows");
done:
  return st;
}

void gnn_sample_free(halo_net *g) {
  halo_csr_free(&g->sample_t);
  free(g->sample_halo);
  g->sample_halo = NULL;
}

void gnn_sample_epoch(halo_net *g, int64_t epoch) {
  if (halo_sample_on(g->opt.halo_sample))
    halo_exchange_sample_select(g->plan, halo_sample_key(g->opt.seed, epoch), g->opt.halo_sample);
}

halo_status gnn_aggregate_sampled_t(halo_net *g, const adj_matrix *a, float *x, int32_t cols,
                                    float beta, float *y) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned;
  memset(x + n * cols, 0, (size_t)((g->n_all - n) * cols) * sizeof(float));
  g->ops->spmm(g->be, &a->dev, x, cols, cols, beta, y, cols, NULL, n);
  g->ops->spmm(g->be, &g->sample_t, x, cols, cols, 0.0f, g->sample_halo, cols, NULL, g->n_all - n);
  HALO_TRY(halo_exchange_reverse(g->plan, g->sample_halo, y, cols));
done:
  return st;
}
