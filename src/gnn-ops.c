/* The operations every layer kind shares (gnn-impl.h): the split-phase
 * aggregation, the row-invariant products, and the weight gradients, as
 * float products or as exact sums (deterministic mode). */
#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gnn-impl.h"
#include "halo-exact.h"
#include "halo-watchdog.h"

const layer_kind *gnn_layer_kind_of(halo_model_kind k) {
  switch (k) {
    case HALO_MODEL_SAGE:
      return &gnn_layer_sage;
    case HALO_MODEL_GIN:
      return &gnn_layer_gin;
    case HALO_MODEL_GAT:
      return &gnn_layer_gat;
    case HALO_MODEL_GCN:
      break;
  }
  return &gnn_layer_gcn;
}

halo_status gnn_aggregate(halo_net *g, const adj_matrix *a, float *x, int32_t cols, float beta,
                          float *y) {
  halo_status st = HALO_OK;
  if (g->pass.sampled_back) return gnn_aggregate_sampled_t(g, a, x, cols, beta, y);
  if (a->combine.indptr)
    HALO_TRY(halo_exchange_begin_cover(g->plan, x, cols, &a->combine));
  else
    HALO_TRY(halo_exchange_begin(g->plan, x, cols));
  if (g->contiguous) {
    g->ops->spmm(g->be, &a->dev, x, cols, cols, beta, y, cols, NULL, g->n_interior);
    HALO_TRY(halo_exchange_end(g->plan));
    g->ops->spmm(g->be, &a->boundary, x, cols, cols, beta, y + g->n_interior * cols, cols, NULL,
                 g->n_boundary);
  } else {
    g->ops->spmm(g->be, &a->dev, x, cols, cols, beta, y, cols, g->interior.data, g->n_interior);
    HALO_TRY(halo_exchange_end(g->plan));
    g->ops->spmm(g->be, &a->dev, x, cols, cols, beta, y, cols, g->boundary.data, g->n_boundary);
  }
done:
  return st;
}

void gnn_mm(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
            float *c) {
  if (g->opt.deterministic)
    g->ops->gemm_rows(g->be, 0, m, n, k, a, k, b, n, c, n);
  else
    g->ops->gemm(g->be, 0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

void gnn_mm_tb(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
               float *c) {
  if (g->opt.deterministic)
    g->ops->gemm_rows(g->be, 1, m, n, k, a, k, b, k, c, n);
  else
    g->ops->gemm(g->be, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
}

void gnn_mm_acc(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                float *c, float *scratch) {
  if (g->opt.deterministic) {
    g->ops->gemm_rows(g->be, 0, m, n, k, a, k, b, n, scratch, n);
    g->ops->axpy(g->be, c, scratch, m * n, 1.0f, NULL);
  } else {
    g->ops->gemm(g->be, 0, 0, m, n, k, 1.0f, a, k, b, n, 1.0f, c, n);
  }
}

/* The fused input dropout (layer_input): rows [r0, r0 + rows) of dropout(X)
 * into xd, with the mask of the whole matrix (keyed by global row id). */
static const float *dropped_rows(halo_net *g, const float *x, int32_t d_in, int64_t r0,
                                 int64_t rows, float p, uint64_t key) {
  float *xd = fbuf(&g->xd);
  const int64_t *gid = (const int64_t *)g->global_id.data + r0;
  if (g->ops->dropout_to) {
    g->ops->dropout_to(g->be, xd, x + r0 * d_in, rows, d_in, gid, key, p);
  } else {
    g->ops->copy(g->be, xd, x + r0 * d_in, rows * d_in);
    g->ops->dropout(g->be, xd, rows, d_in, gid, key, p);
  }
  return xd;
}

/* dropped_rows for the forward products; under --deterministic it also
 * keeps max |dropout(X)| of the rows so far under the mask's key, which the
 * backward's gradient bound then reads instead of masking X once more
 * (dropped_max_abs). */
static const float *forward_dropped_rows(halo_net *g, const layer_input *in, int32_t d_in,
                                         int64_t r0, int64_t rows) {
  /* A second pass over the same rows (a residual's projection) finds the
   * max complete and leaves it. */
  const int complete = g->drop_max.key == in->drop_key && g->drop_max.rows == g->n_owned;
  const int track = g->opt.deterministic && !complete;
  if (track && r0 == 0) g->drop_max = (struct drop_max){.key = in->drop_key};
  const int measure = track && g->drop_max.key == in->drop_key && g->drop_max.rows == r0;
  const float *xd;
  float m = 0.0f;
  if (measure && g->ops->dropout_to_max) { /* the max from the dropout's own pass */
    float *buf = fbuf(&g->xd);
    m = g->ops->dropout_to_max(g->be, buf, in->dense + r0 * d_in, rows, d_in,
                               (const int64_t *)g->global_id.data + r0, in->drop_key, in->drop_p);
    xd = buf;
  } else {
    xd = dropped_rows(g, in->dense, d_in, r0, rows, in->drop_p, in->drop_key);
    if (measure) m = g->ops->max_abs(g->be, xd, rows * d_in);
  }
  if (measure) {
    if (!(m <= g->drop_max.value)) g->drop_max.value = m; /* inf (and NaN, as inf) kept */
    g->drop_max.rows += rows;
  }
  return xd;
}

void gnn_input_mm_each(halo_net *g, const layer_input *in, int32_t d_in, int count,
                       const float *const *w, int32_t cols, float *const *out) {
  if (in->dense && in->drop_p > 0.0f) {
    const int64_t n = g->n_owned, block = gnn_bufs_drop_block(d_in, n);
    for (int64_t r0 = 0; r0 < n; r0 += block) {
      const int64_t rows = n - r0 < block ? n - r0 : block;
      const float *xd = forward_dropped_rows(g, in, d_in, r0, rows);
      for (int k = 0; k < count; k++) gnn_mm(g, rows, cols, d_in, xd, w[k], out[k] + r0 * cols);
    }
  } else if (in->dense) {
    for (int k = 0; k < count; k++) gnn_mm(g, g->n_owned, cols, d_in, in->dense, w[k], out[k]);
  } else {
    for (int k = 0; k < count; k++)
      g->ops->spmm(g->be, &in->sparse, w[k], cols, cols, 0.0f, out[k], cols, NULL, g->n_owned);
  }
}

void gnn_input_mm(halo_net *g, const layer_input *in, int32_t d_in, const float *w, int32_t cols,
                  float *out) {
  gnn_input_mm_each(g, in, d_in, 1, &w, cols, &out);
}

void gnn_input_mm_acc(halo_net *g, const layer_input *in, int32_t d_in, const float *w,
                      int32_t cols, float *out, float *scratch) {
  if (in->dense && in->drop_p > 0.0f) {
    const int64_t n = g->n_owned, block = gnn_bufs_drop_block(d_in, n);
    for (int64_t r0 = 0; r0 < n; r0 += block) {
      const int64_t rows = n - r0 < block ? n - r0 : block;
      gnn_mm_acc(g, rows, cols, d_in, forward_dropped_rows(g, in, d_in, r0, rows), w,
                 out + r0 * cols, scratch + r0 * cols);
    }
  } else if (in->dense) {
    gnn_mm_acc(g, g->n_owned, cols, d_in, in->dense, w, out, scratch);
  } else {
    g->ops->spmm(g->be, &in->sparse, w, cols, cols, 1.0f, out, cols, NULL, g->n_owned);
  }
}

/* exact_e of a tensor whose gradient bounds are not finite. */
#define EXACT_NOT_FINITE INT_MIN

/* The columns of a term's B: the tensor's, or all its entries for a column
 * sum. */
static int64_t b_cols(const grad_term *t, const halo_param_tensor *p) {
  return t->a_dense || t->a_sparse_t ? p->cols : p->rows * p->cols;
}

/* Whether terms a and b read the same dropped rows (SAGE's two weights of
 * one input): the float path then draws each block's mask once for both
 * (the exact one drops X inside each term's own pass). */
static int same_dropped_rows(const layer *ly, const grad_term *a, const grad_term *b,
                             int64_t n_owned) {
  return a->a_dense && a->drop_p > 0.0f && b->a_dense == a->a_dense && b->drop_p == a->drop_p &&
         b->drop_key == a->drop_key && (a->n ? a->n : n_owned) == (b->n ? b->n : n_owned) &&
         ly->desc->tensor[a->tensor].rows == ly->desc->tensor[b->tensor].rows;
}

/* The terms of `group` (count of them, the same dropped rows and d_in
 * columns): each tensor's Xᵀ·B summed block by block, one mask a block. */
static void float_dropped_grads(halo_net *g, layer *ly, const grad_term *t, const int *group,
                                int count) {
  const grad_term *first = &t[group[0]];
  const int64_t d_in = ly->desc->tensor[first->tensor].rows;
  const int64_t n = first->n ? first->n : g->n_owned;
  for (int64_t r0 = 0, block = gnn_bufs_drop_block(d_in, n); r0 < n; r0 += block) {
    const int64_t rows = n - r0 < block ? n - r0 : block;
    const float *a =
        dropped_rows(g, first->a_dense, d_in, r0, rows, first->drop_p, first->drop_key);
    for (int j = 0; j < count; j++) {
      const halo_param_tensor *p = &ly->desc->tensor[t[group[j]].tensor];
      g->ops->gemm(g->be, 1, 0, p->rows, p->cols, rows, 1.0f, a, p->rows,
                   t[group[j]].b + r0 * p->cols, p->cols, r0 > 0 ? 1.0f : 0.0f,
                   tensor_of(&g->grads, ly, t[group[j]].tensor), p->cols);
    }
  }
}

/* The float path: each term through the backend's products. */
static void float_grads(halo_net *g, layer *ly, const grad_term *t, int nterms) {
  assert(nterms <= HALO_MAX_TENSORS); /* one term a tensor */
  int done[HALO_MAX_TENSORS] = {0};
  for (int k = 0; k < nterms; k++) {
    if (done[k]) continue;
    const halo_param_tensor *p = &ly->desc->tensor[t[k].tensor];
    const int64_t n = t[k].n ? t[k].n : g->n_owned;
    float *out = tensor_of(&g->grads, ly, t[k].tensor);
    assert(!t[k].a_perm); /* only the exact sums read Sᵀ through S (gnn_bufs_st_perm) */
    if (t[k].a_sparse_t) {
      g->ops->spmm(g->be, t[k].a_sparse_t, t[k].b, p->cols, p->cols, 0.0f, out, p->cols, NULL,
                   p->rows);
    } else if (t[k].a_dense && t[k].drop_p > 0.0f && n > 0) { /* Xᵀ·B block by block */
      int group[HALO_MAX_TENSORS] = {0}, count = 0;
      for (int j = k; j < nterms; j++)
        if (j == k || same_dropped_rows(ly, &t[k], &t[j], g->n_owned)) {
          group[count++] = j;
          done[j] = 1;
        }
      float_dropped_grads(g, ly, t, group, count);
    } else if (t[k].a_dense) { /* also a rank without rows: k = 0 and beta 0 write zeros */
      g->ops->gemm(g->be, 1, 0, p->rows, p->cols, n, 1.0f, t[k].a_dense, p->rows, t[k].b, p->cols,
                   0.0f, out, p->cols);
    } else {
      g->ops->colsum(g->be, t[k].b, n, b_cols(&t[k], p), out);
    }
  }
}

/* The fused input dropout under --deterministic (gnn_bufs_input_fused):
 * max |dropout(X)| and the exact (dropout(X))ᵀ·B, one block of dropped rows
 * at a time through xd, never the whole dropped copy.  An exact sum is the
 * same integer however its terms are split, so the blocks' limbs add up to
 * the limbs of the whole product, bit for bit. */
static float dropped_max_abs(halo_net *g, const grad_term *t, int32_t d_in, int64_t n) {
  if (g->drop_max.key == t->drop_key && g->drop_max.rows == n) /* the forward's */
    return g->drop_max.value;
  float m = 0.0f;
  for (int64_t r0 = 0, block = gnn_bufs_drop_block(d_in, n); r0 < n; r0 += block) {
    const int64_t rows = n - r0 < block ? n - r0 : block;
    const float *a = dropped_rows(g, t->a_dense, d_in, r0, rows, t->drop_p, t->drop_key);
    const float b = g->ops->max_abs(g->be, a, rows * d_in);
    if (!(b <= m)) m = b; /* an inf (a NaN is reported as inf) is kept */
  }
  return m;
}

/* max |A| over n rows of `cols`: the training forward's own where A is the
 * layer's dropped input (layer.hd_max), else a pass of max_abs. */
static float dense_max_abs(halo_net *g, const layer *ly, const float *a, int64_t n, int64_t cols) {
  if (ly->hd_max_valid && a == ly->hd.data && n == g->n_owned) return ly->hd_max;
  return g->ops->max_abs(g->be, a, n * cols);
}

/* A term's exact sum on its grid, into its limbs; with a bias riding along
 * (ones: B's column sums on their own grid), or none (ones.limbs NULL). */
typedef struct exact_out {
  int e;
  int64_t *limbs;
} exact_out;

/* The exact (dropout(X))ᵀ·B of each term of `group` (count of them, the
 * same dropped rows: same_dropped_rows), term group[j] into out[j] and its
 * bias into ones[j]: each in one pass, whose threads drop their own rows
 * (the backend's exact_tn_dropped: the fused input dropout is the CPU's,
 * gnn_bufs_input_fused). */
static void dropped_exact_tn(halo_net *g, layer *ly, const grad_term *t, const int *group,
                             int count, const exact_out *out, const exact_out *ones) {
  const grad_term *first = &t[group[0]];
  const int64_t n = first->n ? first->n : g->n_owned;
  assert(g->ops->exact_tn_dropped);
  for (int j = 0; j < count; j++) {
    const halo_param_tensor *p = &ly->desc->tensor[t[group[j]].tensor];
    g->ops->exact_tn_dropped(g->be, n, p->rows, p->cols, first->a_dense,
                             (const int64_t *)g->global_id.data, first->drop_key, first->drop_p,
                             t[group[j]].b, p->cols, out[j].e, g->threads, g->exact_work,
                             out[j].limbs, ones[j].e, ones[j].limbs);
  }
}

/* partner[k] = the term that is the column sums of term k's B over the same
 * rows (its bias, summed in k's pass over B: exact_tn_ones), or -1; such a
 * term is then no term of its own (riding[j]). */
static void pair_biases(const halo_net *g, const layer *ly, const grad_term *t, int nterms,
                        int *partner, int *riding) {
  for (int k = 0; k < nterms; k++) partner[k] = -1, riding[k] = 0;
  for (int k = 0; k < nterms; k++) {
    if (!t[k].a_dense || g->ops->download) continue; /* a host backend's trio (exact_packed) */
    const halo_param_tensor *p = &ly->desc->tensor[t[k].tensor];
    const int64_t n = t[k].n ? t[k].n : g->n_owned;
    for (int j = 0; j < nterms; j++) {
      const halo_param_tensor *q = &ly->desc->tensor[t[j].tensor];
      if (riding[j] || t[j].a_dense || t[j].a_sparse_t || t[j].b != t[k].b ||
          (t[j].n ? t[j].n : g->n_owned) != n || q->rows * q->cols != p->cols)
        continue;
      partner[k] = j;
      riding[j] = 1;
      break;
    }
  }
}

/* The grid of term k of nterms from the allreduced bounds `global`
 * (max |A| and max |B| of each term, then its terms per owned row): room
 * for every rank's terms in one int64 (gnn_exact_allreduce), at most
 * N × per_row of them, N the owned rows of all ranks. */
static int term_exponent(int k, int nterms, const float *global, int64_t all_rows) {
  const int64_t terms = all_rows * (int64_t)global[2 * nterms + k];
  return halo_exact_exponent_terms((double)global[2 * k] * (double)global[2 * k + 1], terms);
}

/* Whether the backend writes the gradients' sums packed, one int64 each: a
 * host backend's trio (exact_tn_ones, exact_tn_dropped, exact_csr_perm,
 * which set-up requires of one), where a device's limbs are packed by
 * gnn_exact_allreduce.  gnn_bufs sizes `exact` so. */
static int exact_packed(const halo_net *g) { return g->ops->download == NULL; }

/* Where tensor `tensor` of layer ly keeps its exact sums: its packed int64s
 * or its limbs. */
static int64_t *exact_sums(const halo_net *g, const layer *ly, int tensor) {
  const int64_t offset = ly->desc->tensor[tensor].offset;
  return exact_packed(g) ? g->exact + offset : g->exact + offset * HALO_EXACT_LIMBS;
}

/* The host workspace of an exact sum that needs `need` bytes: the plan's
 * (gnn_bufs sizes it for every term it foresees), grown here should a term
 * ever need more, rather than overrun. */
static halo_status exact_work_for(halo_net *g, size_t need) {
  halo_status st = HALO_OK;
  if (need <= g->exact_work_bytes) goto done;
  need = (need + 15) / 16 * 16;
  void *w = aligned_alloc(16, need);
  if (!w)
    HALO_FAIL(HALO_ERR_NOMEM, "out of memory growing the exact sums' workspace to %zu bytes", need);
  free(g->exact_work);
  g->exact_work = w;
  g->exact_work_bytes = need;
done:
  return st;
}

halo_status gnn_layer_grads(halo_net *g, layer *ly, const grad_term *t, int nterms) {
  halo_status st = HALO_OK;
  enum { MAX_TERMS = HALO_MAX_TENSORS };
  float local[3 * MAX_TERMS] = {0}, global[3 * MAX_TERMS] = {0};
  const halo_backend_ops *ops = g->ops;
  if (!g->opt.deterministic) {
    float_grads(g, ly, t, nterms);
    goto done;
  }
  if (nterms > MAX_TERMS) HALO_FAIL(HALO_ERR_LIMIT, "%d gradient terms in one layer", nterms);

  /* Bounds: max |A| (1 for a column sum) and max |B| of each term, and
   * its terms per owned row (GIN's ε sums n × d products), which the MAX
   * gives every rank alike, also a rank without rows (an integer below
   * 2^24, exact as a float). */
  for (int k = 0; k < nterms; k++) {
    const int64_t per_row = t[k].n && g->n_owned > 0 ? (t[k].n + g->n_owned - 1) / g->n_owned : 1;
    local[2 * nterms + k] = (float)per_row;
  }
  for (int k = 0; k < nterms; k++) {
    const halo_param_tensor *p = &ly->desc->tensor[t[k].tensor];
    const int64_t n = t[k].n ? t[k].n : g->n_owned;
    /* Sᵀ through the permutation holds S's values: the same max. */
    local[2 * k] = t[k].a_sparse_t       ? ops->max_abs(g->be,
                                                        t[k].a_perm ? t[k].a_values
                                                                    : t[k].a_sparse_t->values,
                                                        t[k].a_sparse_t->nnz)
                   : t[k].drop_p > 0.0f  ? dropped_max_abs(g, &t[k], p->rows, n)
                   : t[k].a_dense        ? dense_max_abs(g, ly, t[k].a_dense, n, p->rows)
                                         : 1.0f;
    local[2 * k + 1] =
        k > 0 && t[k].b == t[k - 1].b ? local[2 * k - 1]
                                      : ops->max_abs(g->be, t[k].b, n * b_cols(&t[k], p));
  }
  HALO_TRY(halo_watch_allreduce(local, global, 3 * nterms, MPI_FLOAT, MPI_MAX, g->comm,
                                "the gradient bounds"));
  int finite = 1;
  for (int k = 0; k < nterms; k++)
    finite = finite && isfinite((double)global[2 * k] * (double)global[2 * k + 1]);

  int done[MAX_TERMS] = {0}, partner[MAX_TERMS], riding[MAX_TERMS];
  pair_biases(g, ly, t, nterms, partner, riding);
  for (int k = 0; k < nterms; k++) {
    if (done[k] || (finite && riding[k])) continue;
    const halo_param_tensor *p = &ly->desc->tensor[t[k].tensor];
    const int64_t n = t[k].n ? t[k].n : g->n_owned;
    int64_t *limbs = exact_sums(g, ly, t[k].tensor);
    const int packed = exact_packed(g);
    if (!finite) {
      /* A NaN or inf on some rank (max_abs reports NaN as inf): no grid can
       * hold it, so the layer's gradients become NaN on every rank, as on
       * the float path, instead of a finite garbage step.  The limbs are
       * still allreduced, so the collectives match. */
      ly->exact_e[t[k].tensor] = EXACT_NOT_FINITE;
      memset(limbs, 0,
             (size_t)(p->rows * p->cols * (packed ? 1 : HALO_EXACT_LIMBS)) * sizeof(int64_t));
      continue;
    }
    const int e = term_exponent(k, nterms, global, g->bn_rows);
    ly->exact_e[t[k].tensor] = e;
    exact_out ones = {0}; /* term k's bias, when it rides along */
    if (partner[k] >= 0) {
      const int j = partner[k];
      ones.e = ly->exact_e[t[j].tensor] = term_exponent(j, nterms, global, g->bn_rows);
      ones.limbs = exact_sums(g, ly, t[j].tensor);
    }
    /* The CPU's kernels take a host workspace (a device has its own). */
    if (packed)
      HALO_TRY(exact_work_for(
          g, t[k].a_sparse_t ? halo_cpu_exact_csr_work(p->cols, g->threads)
                             : halo_cpu_exact_tn_ones_work(t[k].a_dense ? p->rows : 1,
                                                           b_cols(&t[k], p), g->threads)));
    if (t[k].a_sparse_t && packed) { /* Sᵀ's own values, or S's through the permutation */
      ops->exact_csr_perm(g->be, t[k].a_sparse_t,
                          t[k].a_perm ? t[k].a_values : t[k].a_sparse_t->values, t[k].a_perm,
                          t[k].b, p->cols, p->cols, e, g->threads, g->exact_work, limbs);
    } else if (t[k].a_sparse_t) {
      assert(!t[k].a_perm); /* gnn_bufs_st_perm: the CPU's */
      ops->exact_csr(g->be, t[k].a_sparse_t, t[k].b, p->cols, p->cols, e, g->threads,
                     g->exact_work, limbs);
    } else if (t[k].drop_p > 0.0f) {
      /* With the other terms of the same dropped rows (SAGE's two weights). */
      int group[MAX_TERMS] = {0}, count = 0;
      exact_out out[MAX_TERMS], bias[MAX_TERMS];
      for (int j = k; j < nterms; j++) {
        if (j != k && !same_dropped_rows(ly, &t[k], &t[j], g->n_owned)) continue;
        group[count] = j;
        out[count].e = ly->exact_e[t[j].tensor] = term_exponent(j, nterms, global, g->bn_rows);
        out[count].limbs = exact_sums(g, ly, t[j].tensor);
        bias[count] = (exact_out){0};
        if (partner[j] >= 0) {
          const int b = partner[j];
          bias[count].e = ly->exact_e[t[b].tensor] = term_exponent(b, nterms, global, g->bn_rows);
          bias[count].limbs = exact_sums(g, ly, t[b].tensor);
        }
        count++;
        done[j] = 1;
      }
      dropped_exact_tn(g, ly, t, group, count, out, bias);
    } else if (packed) { /* with term k's bias, if one rides along */
      ops->exact_tn_ones(g->be, n, t[k].a_dense ? p->rows : 1, b_cols(&t[k], p), t[k].a_dense,
                         t[k].a_dense ? p->rows : 1, t[k].b, b_cols(&t[k], p), e, g->threads,
                         g->exact_work, limbs, ones.e, ones.limbs);
    } else {
      assert(!ones.limbs); /* pair_biases pairs only with exact_tn_ones */
      ops->exact_tn(g->be, n, t[k].a_dense ? p->rows : 1, b_cols(&t[k], p), t[k].a_dense,
                    t[k].a_dense ? p->rows : 1, t[k].b, b_cols(&t[k], p), e, g->threads,
                    g->exact_work, limbs);
    }
  }
done:
  return st;
}

halo_status gnn_exact_allreduce(halo_net *g) {
  halo_status st = HALO_OK;
  const int64_t count = g->nparams;
  if (count > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "%lld gradient sums are more than one MPI_Allreduce sends",
              (long long)count);
  /* Each sum as one int64 (its grid leaves room for every rank's terms):
   * written so by the CPU's kernels, packed here from a device's limbs; an
   * exact MPI_SUM of 8 bytes a parameter, in any order of the ranks. */
  int64_t *sums = exact_packed(g) ? g->exact : g->exact + count * HALO_EXACT_LIMBS;
  if (!exact_packed(g)) halo_exact_pack(g->exact, count, sums);
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, sums, (int)count, MPI_INT64_T, MPI_SUM, g->comm,
                                "the gradient allreduce"));
  float *grads = g->host_grads ? g->host_grads : fbuf(&g->grads); /* uploaded by the caller */
  for (int l = 0; l < g->nlayers; l++) {
    const layer *ly = &g->layers[l];
    const halo_layer_desc *d = ly->desc;
    int finite = 1;
    for (int k = 0; k < d->ntensors; k++) finite = finite && ly->exact_e[k] != EXACT_NOT_FINITE;
    if (!finite) {
      for (int64_t k = 0; k < d->count; k++) grads[d->offset + k] = NAN;
      continue;
    }
    for (int k = 0; k < d->ntensors; k++) {
      const halo_param_tensor *p = &d->tensor[k];
      halo_exact_packed_to_float(sums + p->offset, p->rows * p->cols, ly->exact_e[k],
                                 grads + p->offset);
    }
  }
done:
  return st;
}
