/* What the network reads from its shard: the aggregation matrices and the
 * split of their rows for the exchange, the first layer's input (X, or ÂX
 * cached at set-up, dense or as CSR), the products declared to the backend,
 * and the memory estimate, which follows the same rules without a backend.
 *
 * Every exchange is split: rows with no halo column are multiplied while
 * the messages are in flight, the others after.  When the part numbers its
 * interior rows first (shard format 2), both products run over contiguous
 * rows, the second through a view of the matrix's trailing rows; otherwise
 * through row-index lists.
 *
 * The first layer's input of a cached or transform layer, ÂX or X, is kept
 * as CSR when it is mostly zeros (Cora's X is 1.3% non-zero, its ÂX 4.7%):
 * its products with W (forward) and with dZ or dT (dW, through a transposed
 * copy) are then sparse × dense, through the spmm slot.
 */
#include "halo-net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gnn-bufs.h"
#include "gnn-impl.h"
#include "halo-mpi.h"

/* The first layer's input (X, or the cached ÂX) is kept as CSR when under
 * this fraction of it, over all ranks, is non-zero. */
#define SPARSE_DENSITY 0.10

/* The rule of decide_sparse: sparse when under SPARSE_DENSITY of all
 * ranks' `count` entries of x differ from `zero`. Collective. */
static halo_status count_sparse(MPI_Comm comm, const halo_net_options *o, const float *x,
                                int64_t count, float zero, int *sparse, int64_t *nonzeros) {
  halo_status st = HALO_OK;
  int64_t local[2] = {0, count}, total[2] = {0, 0}; /* non-zeros, entries */
  for (int64_t i = 0; i < count; i++) local[0] += x[i] != zero;
  if (nonzeros) *nonzeros = local[0];
  if (o->sparse_features >= 0) {
    *sparse = o->sparse_features == 1;
    goto done;
  }
  HALO_MPI(MPI_Allreduce(local, total, 2, MPI_INT64_T, MPI_SUM, comm));
  *sparse = (double)total[0] < SPARSE_DENSITY * (double)total[1];
done:
  return st;
}

/* Whether the first layer's input (X, or ÂX when cached: n × f floats on
 * this rank, host memory) is kept as CSR: as --sparse-features says, or when
 * under SPARSE_DENSITY of it is non-zero over ALL ranks.  One decision for
 * every rank, so that all take the same path and round the same way, and
 * the choice does not depend on the partition. Collective. */
static halo_status decide_sparse(halo_net *g, const float *x, int64_t n, int64_t f, int *sparse) {
  return count_sparse(g->comm, &g->opt, x, n * f, 0.0f, sparse, NULL);
}

/* S = a (taken over: *a is zeroed), and Sᵀ, both uploaded; with
 * `dropout`, room for their dropped values too. Local. */
static halo_status install_sparse_input(halo_net *g, halo_csr *a, int dropout) {
  halo_status st = HALO_OK;
  g->s_host = *a;
  *a = (halo_csr){0};
  HALO_TRY(halo_csr_transpose(&g->s_host, &g->st_host));
  HALO_TRY(gnn_csr_to_backend(g, &g->s_host, &g->s_csr));
  HALO_TRY(gnn_csr_to_backend(g, &g->st_host, &g->st_csr));
  if (dropout && gnn_bufs_st_perm(&g->opt, g->ops->download != NULL, g->s_host.nnz)) {
    HALO_TRY(gnn_plan_new(g, &g->s_drop, GNN_BUF_S_DROP, 0));
    HALO_TRY(gnn_plan_new(g, &g->st_perm, GNN_BUF_ST_PERM, 0));
    HALO_TRY(halo_csr_transpose_perm(&g->s_host, (int32_t *)g->st_perm.data));
  } else if (dropout) {
    HALO_TRY(gnn_plan_new(g, &g->s_drop, GNN_BUF_S_DROP, 0));
    HALO_TRY(gnn_plan_new(g, &g->st_drop, GNN_BUF_ST_DROP, 0));
  }
done:
  return st;
}

/* S = the non-zeros of the host matrix x (n_owned × F) as CSR, and Sᵀ, both
 * uploaded; with `dropout`, room for their dropped values too. Local. */
static halo_status build_sparse_input(halo_net *g, const float *x, int dropout) {
  halo_status st = HALO_OK;
  halo_csr a = {0};
  HALO_TRY(halo_csr_from_dense(x, g->n_owned, g->layers[0].d_in, "the input features", &a));
  HALO_TRY(install_sparse_input(g, &a, dropout));
done:
  halo_csr_free(&a);
  return st;
}

/* The least entry of a CSR shard's features on this rank: its least stored
 * value, or 0 when a row leaves an entry out. Local. */
static float csr_local_min(const halo_shard *s) {
  float lo = s->x_nnz < s->n_owned * (int64_t)s->features ? 0.0f : INFINITY;
  for (int64_t k = 0; k < s->x_nnz; k++) lo = fminf(lo, s->x_values[k]);
  return lo;
}

/* A CSR shard's features straight into S, never densified: for a first
 * layer that multiplies X by W first (TRANSFORM), when S is kept sparse
 * (--sparse-features, or the SPARSE_DENSITY rule as decide_sparse has it),
 * and --normalize-features' shift by the global minimum is 0 (no negative
 * entry and some entry left out), so that its row normalisation keeps the
 * zeros zero.  The values are those of the dense path, bit for bit: the
 * same row sums in double in column order (the zeros add nothing), the
 * same division, and zeros dropped.  *taken = 0 (alike on every rank)
 * leaves the features to the dense path. Collective. */
static halo_status setup_features_csr(halo_net *g, const halo_shard *s, int *taken) {
  halo_status st = HALO_OK;
  const int64_t n = s->n_owned, f = s->features;
  halo_csr a = {.rows = n, .cols = f};
  int sparse = 0;
  *taken = 0;
  if (g->opt.normalize_features) {
    float lo = csr_local_min(s), global_lo = 0.0f;
    HALO_MPI(MPI_Allreduce(&lo, &global_lo, 1, MPI_FLOAT, MPI_MIN, g->comm));
    if (global_lo != 0.0f) goto done; /* the shift fills the zeros: dense */
  }
  a.indptr = malloc((size_t)(n + 1) * sizeof *a.indptr);
  a.indices = malloc((size_t)(s->x_nnz ? s->x_nnz : 1) * sizeof *a.indices);
  a.values = malloc((size_t)(s->x_nnz ? s->x_nnz : 1) * sizeof *a.values);
  st = a.indptr && a.indices && a.values ? HALO_OK : HALO_ERR_NOMEM;
  if (st != HALO_OK)
    halo_log_error("out of memory copying the CSR features (%lld non-zeros)", (long long)s->x_nnz);
  HALO_TRY(halo_mpi_agree(g->comm, st));
  a.indptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    double sum = 0.0;
    for (int64_t k = s->x_indptr[i]; k < s->x_indptr[i + 1]; k++) sum += (double)s->x_values[k];
    if (sum < 1.0) sum = 1.0;
    for (int64_t k = s->x_indptr[i]; k < s->x_indptr[i + 1]; k++) {
      const float v =
          g->opt.normalize_features ? (float)((double)s->x_values[k] / sum) : s->x_values[k];
      if (v == 0.0f) continue;
      a.indices[a.nnz] = s->x_indices[k];
      a.values[a.nnz++] = v;
    }
    a.indptr[i + 1] = a.nnz;
  }
  if (g->opt.sparse_features >= 0) {
    sparse = g->opt.sparse_features == 1;
  } else {
    int64_t local[2] = {a.nnz, n * f}, total[2] = {0, 0};
    HALO_MPI(MPI_Allreduce(local, total, 2, MPI_INT64_T, MPI_SUM, g->comm));
    sparse = (double)total[0] < SPARSE_DENSITY * (double)total[1];
  }
  if (!sparse) goto done;
  g->sparse_in = 1;
  gnn_bufs_input in = gnn_plan_input(&g->info.model, g->ops->download != NULL, g->rows, 1, a.nnz);
  in.csr_host = 1;
  gnn_bufs_build(s, &g->opt, &in, &g->plan_mem);
  HALO_TRY(install_sparse_input(g, &a, g->opt.input_dropout > 0.0f));
  *taken = 1;
done:
  halo_csr_free(&a);
  return st;
}

/* Whether owned row i of the part has a halo column (Â adds only the
 * self-loop, a local column, to the part's rows). */
static int has_halo_column(const halo_shard *s, int64_t i) {
  for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
    if (s->indices[k] >= s->n_owned) return 1;
  return 0;
}

/* How Â's rows split (row_split).  The split is read from the rows
 * themselves, not from the shard's n_interior: when the interior rows are a
 * prefix (format-2 shards, and any part without a boundary row), the two
 * products run over contiguous rows and no row list is built; otherwise
 * (format 1, --order id, or opt.row_lists) over lists. Local. */

row_split gnn_split_of(const halo_shard *s, const halo_net_options *o) {
  row_split r = {0};
  int64_t first_boundary = s->n_owned;
  for (int64_t i = 0; i < s->n_owned; i++) {
    if (!has_halo_column(s, i)) continue;
    if (r.n_boundary++ == 0) first_boundary = i;
  }
  r.n_interior = s->n_owned - r.n_boundary;
  r.contiguous = first_boundary == r.n_interior && !o->row_lists;
  return r;
}

/* The buffer plan's input for shard s: the model, the row split, and the
 * first layer's input layout. */
gnn_bufs_input gnn_plan_input(const halo_model_desc *d, int device, row_split r, int sparse,
                              int64_t nonzeros) {
  return (gnn_bufs_input){.model = d,
                          .device = device,
                          .n_interior = r.contiguous ? 0 : r.n_interior,
                          .n_boundary = r.contiguous ? 0 : r.n_boundary,
                          .contiguous = r.contiguous,
                          .sparse = sparse,
                          .nonzeros = nonzeros};
}

/* Matrix m of `kind` on the backend, with its view of the boundary rows
 * when they are contiguous. Local. */
static halo_status make_matrix(halo_net *g, const halo_shard *s, halo_aggregation kind,
                               const gnn_cover *cover, adj_matrix *m) {
  halo_status st = HALO_OK;
  HALO_TRY(halo_gnn_aggregation(s, kind, &m->host));
  if (cover) HALO_TRY(gnn_cover_matrix(s, cover, kind, &m->host, &m->combine));
  HALO_TRY(gnn_csr_to_backend(g, &m->host, &m->dev));
  if (g->contiguous) {
    /* nnz stays the matrix's: indices and values are the whole arrays. */
    m->boundary = m->dev;
    m->boundary.indptr = m->dev.indptr + g->n_interior;
    m->boundary.rows = g->n_boundary;
  }
done:
  return st;
}

/* The matrix a model aggregates with forward. */
static halo_aggregation aggregation_of(const halo_net_options *o) {
  switch (o->model) {
    case HALO_MODEL_SAGE:
      return o->aggr == HALO_AGGR_MEAN ? HALO_AGG_MEAN : HALO_AGG_SUM;
    case HALO_MODEL_GIN:
      return HALO_AGG_SUM;
    case HALO_MODEL_GAT:
      return HALO_AGG_SELF;
    case HALO_MODEL_GCN:
      break;
  }
  if (o->gcn_normalize) return o->gcn_self_loops ? HALO_AGG_SYM : HALO_AGG_SYM_NOLOOP;
  return o->gcn_self_loops ? HALO_AGG_SELF : HALO_AGG_SUM;
}

/* The model's aggregation (Â, A, or the mean and its transpose) and its
 * interior and boundary rows (gnn_split_of): views of the trailing rows when
 * contiguous, else two row lists. Local. */
halo_status gnn_setup_aggregation(halo_net *g, const halo_shard *s, row_split r) {
  halo_status st = HALO_OK;
  int32_t *in = NULL, *bd = NULL;
  g->n_interior = r.n_interior;
  g->n_boundary = r.n_boundary;
  g->contiguous = r.contiguous;
  const halo_model_kind kind = g->opt.model;
  gnn_cover cover_of = {0}, *cover = NULL;
  int64_t *keys = NULL;
  if (g->opt.halo_aggregate == HALO_AGGREGATE_AUTO) {
    /* The cuts' covers (gnn-cover.c): the exchange's layout, and each
     * matrix's receiver and sender sides. */
    HALO_TRY(gnn_cover_build(s, &cover_of));
    cover = &cover_of;
    const int64_t total = cover->offset[s->parts];
    HALO_ALLOC(keys, total > 0 ? total : 1, "the cover's rounding keys");
    gnn_cover_keys(s, cover, keys);
    HALO_TRY(halo_exchange_cover_set(g->plan, cover->rows, keys));
    g->info.n_halo_exchanged = cover->offset[s->parts];
  }
  const int sage_mean = kind == HALO_MODEL_SAGE && g->opt.aggr == HALO_AGGR_MEAN;
  HALO_TRY(make_matrix(g, s, aggregation_of(&g->opt), cover, &g->adj_fwd));
  g->adj_bwd = &g->adj_fwd; /* symmetric (max reads its columns alone) */
  if (sage_mean) {
    HALO_TRY(make_matrix(g, s, HALO_AGG_MEAN_T, cover, &g->adj_bwd_own));
    g->adj_bwd = &g->adj_bwd_own;
  }
  if (g->contiguous) goto done;

  HALO_ALLOC(in, g->n_interior, "the interior rows");
  HALO_ALLOC(bd, g->n_boundary, "the boundary rows");
  for (int64_t i = 0, ni = 0, nb = 0; i < s->n_owned; i++) {
    if (has_halo_column(s, i))
      bd[nb++] = (int32_t)i;
    else
      in[ni++] = (int32_t)i;
  }
  HALO_TRY(gnn_plan_from_host(g, &g->interior, GNN_BUF_INTERIOR, 0, in));
  HALO_TRY(gnn_plan_from_host(g, &g->boundary, GNN_BUF_BOUNDARY, 0, bd));
done:
  gnn_cover_free(&cover_of);
  free(keys);
  free(in);
  free(bd);
  return st;
}

/* g->ax = ÂX from the normalised host X: X with its halo rows on the
 * backend for the aggregation's one exchange, counted as set-up traffic,
 * then freed. Collective. */
static halo_status aggregate_x(halo_net *g, const float *x, int64_t f, size_t owned_bytes) {
  halo_status st = HALO_OK;
  halo_buf xfull = {0};
  st = gnn_plan_new(g, &xfull, GNN_BUF_X_HALO, 0);
  if (st == HALO_OK) st = gnn_plan_new(g, &g->ax, GNN_BUF_AX, 0);
  if (st == HALO_OK && g->ops->upload)
    st = g->ops->upload(g->be, &xfull, 0, x, owned_bytes);
  else if (st == HALO_OK)
    memcpy(xfull.data, x, owned_bytes);
  /* Agreed before the exchange: a rank that cannot hold or upload X must
   * not leave its peers waiting for its rows. */
  HALO_TRY(halo_mpi_agree(g->comm, st));
  const halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);
  HALO_TRY(gnn_aggregate(g, &g->adj_fwd, fbuf(&xfull), (int32_t)f, 0.0f, fbuf(&g->ax)));
  g->info.setup_halo_bytes = halo_exchange_stats_get(g->plan).bytes_sent - x0.bytes_sent;
done:
  gnn_buf_del(g, &xfull);
  return st;
}

/* g->ax = ÂX (GIN-0: X + AX) from the normalised host X (n × f), slice by slice of
 * gnn_bufs_ax_slice columns: each slice of X into the first n rows of G0
 * (which has room for its halo rows), aggregated (one exchange of the
 * slice's columns) into G1, then into its columns of ÂX: on the CPU in
 * place, on a device through a host copy of ÂX, uploaded at the end.
 * Together the slices move each halo row's f columns once, counted as
 * set-up traffic. Collective. */
static halo_status aggregate_x_slices(halo_net *g, const float *x, int64_t f) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned;
  const int64_t w = gnn_bufs_ax_slice(&g->info.model, f);
  const int device = g->ops->upload != NULL;
  const int gin = g->info.model.kind == HALO_MODEL_GIN;
  float *host = NULL; /* a device's host copies: a slice (n × w), then ÂX (n × f) */
  st = gnn_plan_new(g, &g->ax, GNN_BUF_AX, 0);
  if (st == HALO_OK && device && !(host = malloc((size_t)(n * (w + f)) * sizeof *host + 1))) {
    halo_log_error("out of memory for the evaluation's ÂX on the host (%lld floats)",
                   (long long)(n * (w + f)));
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(halo_mpi_agree(g->comm, st));
  float *in = fbuf(&g->g0), *out = fbuf(&g->g1);
  float *ax = device ? host + n * w : fbuf(&g->ax);
  const halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);
  for (int64_t c0 = 0; c0 < f; c0 += w) {
    const int64_t cw = f - c0 < w ? f - c0 : w;
    float *slice = device ? host : in;
    for (int64_t i = 0; i < n; i++) memcpy(slice + i * cw, x + i * f + c0, (size_t)cw * sizeof *x);
    if (device) st = g->ops->upload(g->be, &g->g0, 0, host, (size_t)(n * cw) * sizeof *host);
    /* Agreed before the exchange: a rank that cannot upload its rows must
     * not leave its peers waiting for them. */
    HALO_TRY(halo_mpi_agree(g->comm, st));
    HALO_TRY(gnn_aggregate(g, &g->adj_fwd, in, (int32_t)cw, 0.0f, out));
    if (device)
      st = g->ops->download(g->be, host, &g->g1, 0, (size_t)(n * cw) * sizeof *host);
    HALO_TRY(halo_mpi_agree(g->comm, st));
    const float *agg = device ? host : out;
    if (gin) /* GIN-0's U = AX + X, added as its forward's axpy adds it */
      for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < cw; c++) ax[i * f + c0 + c] = agg[i * cw + c] + x[i * f + c0 + c];
    else
      for (int64_t i = 0; i < n; i++)
        memcpy(ax + i * f + c0, agg + i * cw, (size_t)cw * sizeof *ax);
  }
  g->info.setup_halo_bytes = halo_exchange_stats_get(g->plan).bytes_sent - x0.bytes_sent;
  if (device) st = g->ops->upload(g->be, &g->ax, 0, ax, (size_t)(n * f) * sizeof *ax);
  HALO_TRY(halo_mpi_agree(g->comm, st));
done:
  free(host);
  return st;
}

/* Features: a normalised host copy; ÂX when it is cached (then its host
 * copy is the first layer's input); the first layer's input, X or ÂX,
 * dense or sparse; then the evaluation's ÂX (eval_cached), made while the
 * training buffers are held, as the plan counts it.  Each allocation is
 * agreed on, so that no rank leaves while the others wait in the
 * collectives that follow. Collective. */
halo_status gnn_setup_features(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  const int64_t f = s->features, n = g->n_owned;
  const size_t owned_bytes = (size_t)n * (size_t)f * sizeof(float);
  const layer *l0 = &g->layers[0];
  const int cached = l0->desc->shape == HALO_LAYER_CACHED;
  float *x = NULL;

  if (s->x_indptr && l0->desc->shape == HALO_LAYER_TRANSFORM) {
    int taken = 0;
    HALO_TRY(setup_features_csr(g, s, &taken));
    if (taken) goto done;
  }
  /* Dense from here: a CSR shard is densified on this rank when the first
   * layer aggregates X first or caches ÂX (Â multiplies dense rows), when
   * the input is too dense to stay CSR, or when --normalize-features'
   * shift by a non-zero minimum fills the zeros. */
  x = malloc(owned_bytes ? owned_bytes : 1);
  if (!x) {
    halo_log_error("out of memory copying the features (%zu bytes)", owned_bytes);
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(halo_mpi_agree(g->comm, st));

  halo_shard_features_dense(s, x);
  if (g->opt.normalize_features) {
    /* PyG's NormalizeFeatures: shift by the global minimum so that no
     * feature is negative, then divide each row by max(row sum, 1).  For
     * bag-of-words features (Cora) that is Kipf & Welling's row
     * normalisation. In double, once. */
    float lo = INFINITY, global_lo = 0.0f;
    for (int64_t i = 0; i < n * f; i++) lo = fminf(lo, x[i]);
    HALO_MPI(MPI_Allreduce(&lo, &global_lo, 1, MPI_FLOAT, MPI_MIN, g->comm));
    for (int64_t i = 0; i < n; i++) {
      double sum = 0.0;
      for (int64_t j = 0; j < f; j++) sum += (double)x[i * f + j] - global_lo;
      if (sum < 1.0) sum = 1.0;
      for (int64_t j = 0; j < f; j++)
        x[i * f + j] = (float)(((double)x[i * f + j] - global_lo) / sum);
    }
  }

  if (cached) { /* ÂX, and its host copy in x for the density count and the CSR */
    HALO_TRY(aggregate_x(g, x, f, owned_bytes));
    st = gnn_buf_to_host(g, x, &g->ax, owned_bytes);
    HALO_TRY(halo_mpi_agree(g->comm, st));
  }

  /* Only an input multiplied by W first can be sparse: aggregated first,
   * X is exchanged and multiplied by Â as a dense matrix. */
  if (cached || l0->desc->shape == HALO_LAYER_TRANSFORM)
    HALO_TRY(decide_sparse(g, x, n, f, &g->sparse_in));
  if (g->sparse_in) {
    int64_t nonzeros = 0;
    for (int64_t i = 0; i < n * f; i++) nonzeros += x[i] != 0.0f;
    const gnn_bufs_input in =
        gnn_plan_input(&g->info.model, g->ops->download != NULL, g->rows, 1, nonzeros);
    gnn_bufs_build(s, &g->opt, &in, &g->plan_mem);
    HALO_TRY(build_sparse_input(g, x, !cached && g->opt.input_dropout > 0.0f));
    if (cached) gnn_buf_del(g, &g->ax);
  } else if (!cached) {
    HALO_TRY(gnn_plan_from_host(g, &g->x, GNN_BUF_X, 0, x));
    HALO_TRY(gnn_plan_new(g, &g->xd, GNN_BUF_XD, 0));
    g->x_fused = gnn_bufs_input_fused(&g->info.model, &g->opt, g->ops->download != NULL, 0);
  }
  if (l0->desc->eval_cached) HALO_TRY(aggregate_x_slices(g, x, f));
done:
  free(x);
  return st;
}

/* Declares the sparse products of the epoch loop to a backend that
 * prepares them (cuSPARSE descriptors and workspace on a GPU): the
 * aggregation's interior and boundary blocks at every exchanged width (the
 * forward matrix forward, its transpose backward), and S, Sᵀ at the first
 * layer's aggregated width.  Products over row lists are left to the
 * backend's own kernel, and so is every product in deterministic mode: the
 * backend's kernel sums each row in CSR order (the spmm slot's contract),
 * while a library's may split a row by the matrix's shape. Local. */
halo_status gnn_prepare_products(halo_net *g) {
  halo_status st = HALO_OK;
  const halo_model_desc *d = &g->info.model;
  /* GAT's attention kernels and SAGE's max read the adjacency themselves:
   * no SpMM on it. */
  if (!g->ops->spmm_prepare || d->kind == HALO_MODEL_GAT || d->config.sage_max ||
      g->opt.deterministic)
    return HALO_OK;
  for (int l = 0; l < d->layers && g->contiguous; l++) {
    const int32_t widths[2] = {d->comm[l].fwd, d->comm[l].bwd};
    const adj_matrix *m[2] = {&g->adj_fwd, g->adj_bwd};
    for (int k = 0; k < 2; k++) {
      if (widths[k] < 1) continue;
      HALO_TRY(g->ops->spmm_prepare(g->be, &m[k]->dev, g->n_interior, widths[k]));
      HALO_TRY(g->ops->spmm_prepare(g->be, &m[k]->boundary, g->n_boundary, widths[k]));
    }
  }
  if (g->sparse_in) {
    const layer *l0 = &g->layers[0];
    HALO_TRY(g->ops->spmm_prepare(g->be, &g->s_csr, g->n_owned, l0->d_mid));
    HALO_TRY(g->ops->spmm_prepare(g->be, &g->st_csr, l0->d_in, l0->d_mid));
  }
done:
  return st;
}

/* The options as a run applies them: the evaluation keeps no ÂX when the
 * first layer's input is sparse (it would be a dense n × F copy of what is
 * kept as CSR). */
static halo_net_options applied(const halo_net_options *o, int sparse) {
  halo_net_options a = *o;
  if (sparse) a.no_eval_cache = 1;
  return a;
}

halo_status gnn_resolve_eval_cache(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  if (!g->info.model.layer[0].eval_cached) return HALO_OK;
  halo_net_input in;
  HALO_TRY(halo_net_input_layout(g->comm, s, &g->opt, &in));
  if (in.sparse) {
    g->opt = applied(&g->opt, 1);
    HALO_TRY(gnn_describe(s, &g->opt, &g->info.model));
  }
done:
  return st;
}

/* --- memory estimate ------------------------------------------------------ */

halo_status halo_net_input_layout(MPI_Comm comm, const halo_shard *s, const halo_net_options *o,
                                  halo_net_input *out) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  float lo = 0.0f, local_lo = INFINITY;
  const int64_t count = s->x ? s->n_owned * s->features : 0;
  *out = (halo_net_input){0};
  /* The same failure on every rank: the widths come from the manifest. */
  HALO_TRY(gnn_describe(s, o, &d));
  if (o->normalize_features) { /* normalised, x is 0 exactly where it held the minimum */
    for (int64_t i = 0; i < count; i++) local_lo = fminf(local_lo, s->x[i]);
    if (s->x_indptr) local_lo = csr_local_min(s);
    HALO_MPI(MPI_Allreduce(&local_lo, &lo, 1, MPI_FLOAT, MPI_MIN, comm));
  }
  if (s->x_indptr) {
    /* As count_sparse over the dense rows: the left-out entries are 0. */
    const int64_t entries = s->n_owned * (int64_t)s->features;
    int64_t local[2] = {lo != 0.0f ? entries - s->x_nnz : 0, entries}, total[2] = {0, 0};
    for (int64_t k = 0; k < s->x_nnz; k++) local[0] += s->x_values[k] != lo;
    out->nonzeros = local[0];
    if (o->sparse_features >= 0) {
      out->sparse = o->sparse_features == 1;
    } else {
      HALO_MPI(MPI_Allreduce(local, total, 2, MPI_INT64_T, MPI_SUM, comm));
      out->sparse = (double)total[0] < SPARSE_DENSITY * (double)total[1];
    }
    /* setup_features_csr keeps the shard's CSR and never densifies. */
    out->csr_host = out->sparse && lo == 0.0f && d.shape[0] == HALO_LAYER_TRANSFORM;
  } else {
    HALO_TRY(count_sparse(comm, o, s->x, count, lo, &out->sparse, &out->nonzeros));
  }
  /* Only an input multiplied by W first can be sparse (gnn_setup_features); for
   * a cached ÂX, which only the model computes, the estimate bounds both. */
  out->sparse = out->sparse && d.shape[0] == HALO_LAYER_TRANSFORM;
done:
  return st;
}

halo_status halo_net_memory_estimate(const halo_shard *s, const halo_net_options *o, int device,
                                     const halo_net_input *in, halo_net_memory *out) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  gnn_bufs plan;
  *out = (halo_net_memory){0};
  const halo_net_options a = applied(o, in->sparse);
  o = &a;
  HALO_TRY(gnn_describe(s, o, &d));
  int sparse = in->sparse;
  int64_t nonzeros = in->nonzeros;
  if (d.shape[0] == HALO_LAYER_CACHED) {
    /* ÂX is only known once made: when it may be kept as CSR (forced, or
     * under SPARSE_DENSITY non-zero over all ranks, which bounds this rank's
     * share but for uneven parts), plan for S and Sᵀ at the bound. */
    const int64_t entries = s->n_owned * (int64_t)s->features;
    sparse = o->sparse_features != 0;
    nonzeros = o->sparse_features == 1 ? entries : (int64_t)(SPARSE_DENSITY * (double)entries);
  }
  gnn_bufs_input pi = gnn_plan_input(&d, device, gnn_split_of(s, o), sparse, nonzeros);
  pi.csr_host = in->csr_host && sparse;
  gnn_bufs_build(s, o, &pi, &plan);
  *out = gnn_bufs_total(&plan);
done:
  return st;
}
