/* GAT's per-row arithmetic, in one place for the CPU kernels
 * (kernels/cpu-gat.c, one row per OpenMP iteration) and their CUDA twins
 * (kernels/cuda-gat.cu, one row per GPU thread): both run these very
 * functions, so they differ only where the compilers do (expf, and nvcc's
 * fused multiply-adds).
 *
 * A layer has K heads of F columns.  For the edge i ← j (i attends to j,
 * j ∈ N(i) ∪ {i}) and head k, from the per-node scores
 *   src_j = a_src[k] · T[j, k],   dst_i = a_dst[k] · T[i, k]
 * and the softmax's per-node terms of row i (its max m_i and sum l_i):
 *   pre_ij = src_j + dst_i,   e_ij = LeakyReLU(pre_ij),
 *   α_ij   = exp(e_ij − m_i) / l_i,
 * and attention dropout keyed by (key, global id of i, global id of j · K + k).
 * Every rank computes α_ij from the same five floats with the same
 * operations, so the coefficients, and the sums over a row in ascending
 * global id, do not depend on which rank computes them: this is what lets
 * the owner of j recompute the α_ij of its halo rows i in the backward pass
 * instead of receiving them (docs/models.md, "GAT").
 */
#ifndef HALO_GAT_H
#define HALO_GAT_H

#include <math.h>
#include <stdint.h>

#include "halo-rng.h"

/* Heads per layer, at most (the kernels keep a row's per-head terms on the
 * stack). */
#define HALO_GAT_MAX_HEADS 64

/* One GAT layer's shape and this pass's attention dropout. */
typedef struct halo_gat_layer {
  int32_t heads, f; /* K heads of F columns: T has K·F */
  int concat;       /* the output is the heads' concatenation (K·F) or their mean (F) */
  float slope;      /* LeakyReLU's negative slope (0.2) */
  uint64_t key;     /* attention dropout: halo_dropout_keep(key, gid_i, gid_j·K + k, p) */
  float p;          /* its rate; 0 keeps everything (evaluation) */
} halo_gat_layer;

/* The row of per-node terms each node keeps (n_all × halo_gat_node_cols):
 * dZ (d_out), then per head the softmax's max m and sum l, then c = dout ·
 * out, the row's dot product that the softmax's backward needs. */
HALO_HD int32_t halo_gat_out_cols(const halo_gat_layer *g) {
  return g->concat ? g->heads * g->f : g->f;
}
HALO_HD int32_t halo_gat_node_cols(const halo_gat_layer *g) {
  return halo_gat_out_cols(g) + 3 * g->heads;
}

/* The factor attention dropout puts on edge i ← j of head k (col = gid_j·K
 * + k): 1/(1-p) when kept, 0 when dropped, 1 without dropout (no draw).
 * v times it has the bits of halo_dropout_apply(v, ...) for every v >= 0
 * and the same value (a zero of either sign) for v < 0. */
HALO_HD float halo_gat_keep(const halo_gat_layer *g, float scale, uint64_t gi, uint64_t col) {
  if (g->p <= 0.0f) return 1.0f;
  return halo_dropout_keep(g->key, gi, col, g->p) ? scale : 0.0f;
}

/* Asks the CPU's caches for `bytes` from p (a neighbour's row, read a few
 * loops later); nothing on a GPU. */
HALO_HD void halo_gat_prefetch(const void *p, int64_t bytes) {
#if !defined(__CUDA_ARCH__) && defined(__GNUC__)
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch((const char *)p + b);
#else
  (void)p;
  (void)bytes;
#endif
}

/* LeakyReLU(pre). */
HALO_HD float halo_gat_logit(float pre, float slope) { return pre > 0.0f ? pre : slope * pre; }

/* α from the edge's pre-activation and row i's max and sum. */
HALO_HD float halo_gat_alpha(float pre, float slope, float m, float l) {
  return expf(halo_gat_logit(pre, slope) - m) / l;
}

/* Head k of dLoss/d(out_i): dZ_i's block of the head, or dZ_i / K when the
 * heads are averaged. */
HALO_HD float halo_gat_dout(const halo_gat_layer *g, const float *dz, int32_t k, int32_t f) {
  return g->concat ? dz[k * g->f + f] : dz[f] * (1.0f / (float)g->heads);
}

/* The rows' arrays: A + I over the owned rows (indptr, local columns in
 * ascending global id), the rows' global ids, T (n_all × K·F) and the
 * scores S (n_all × 2K: a_src·T per head, then a_dst·T). */
typedef struct halo_gat_rows {
  const int64_t *indptr;
  const int32_t *indices;
  const int64_t *global_id;
  const float *t, *s;
} halo_gat_rows;

/* Row r's scores: s[k] = a_src[k]·T[r, k], s[K + k] = a_dst[k]·T[r, k]. */
HALO_HD void halo_gat_scores_row(const halo_gat_layer *g, const float *t, const float *a_src,
                                 const float *a_dst, float *s) {
  const int32_t K = g->heads, F = g->f;
  for (int32_t k = 0; k < K; k++) {
    float src = 0.0f, dst = 0.0f;
    for (int32_t f = 0; f < F; f++) {
      src += t[k * F + f] * a_src[k * F + f];
      dst += t[k * F + f] * a_dst[k * F + f];
    }
    s[k] = src;
    s[K + k] = dst;
  }
}

/* Owned row i forward: out_i,k = Σ_j α'_ij T[j, k] (K·F), Z_i without its
 * bias (the heads side by side, or their mean), and the softmax's max and
 * sum per head in node_i's columns d_out.. and d_out + K.. . */
HALO_HD void halo_gat_attend_row(const halo_gat_layer *g, const halo_gat_rows *a, int64_t i,
                                 float *out, float *z, float *node) {
  const int32_t K = g->heads, F = g->f, d_out = halo_gat_out_cols(g);
  const float scale = halo_dropout_scale(g->p);
  float m[HALO_GAT_MAX_HEADS], l[HALO_GAT_MAX_HEADS];
  const float *dst = a->s + i * 2 * K + K;
  const uint64_t gi = (uint64_t)a->global_id[i];
  for (int32_t k = 0; k < K; k++) {
    m[k] = -INFINITY;
    l[k] = 0.0f;
  }
  for (int64_t e = a->indptr[i]; e < a->indptr[i + 1]; e++) {
    const int64_t j = a->indices[e];
    const float *src = a->s + j * 2 * K;
    halo_gat_prefetch(a->t + j * K * F, (int64_t)K * F * 4); /* for the third pass */
    if (e + 4 < a->indptr[i + 1]) halo_gat_prefetch(a->s + (int64_t)a->indices[e + 4] * 2 * K, K * 8);
    for (int32_t k = 0; k < K; k++) m[k] = fmaxf(m[k], halo_gat_logit(src[k] + dst[k], g->slope));
  }
  for (int64_t e = a->indptr[i]; e < a->indptr[i + 1]; e++) {
    const float *src = a->s + (int64_t)a->indices[e] * 2 * K;
    for (int32_t k = 0; k < K; k++) l[k] += expf(halo_gat_logit(src[k] + dst[k], g->slope) - m[k]);
  }
  float *oi = out + i * K * F;
  for (int32_t c = 0; c < K * F; c++) oi[c] = 0.0f;
  for (int64_t e = a->indptr[i]; e < a->indptr[i + 1]; e++) {
    const int64_t j = a->indices[e];
    const float *src = a->s + j * 2 * K, *tj = a->t + j * K * F;
    const uint64_t col = (uint64_t)a->global_id[j] * (uint64_t)K;
    for (int32_t k = 0; k < K; k++) {
      const float alpha = halo_gat_alpha(src[k] + dst[k], g->slope, m[k], l[k]) *
                          halo_gat_keep(g, scale, gi, col + (uint64_t)k);
      for (int32_t f = 0; f < F; f++) oi[k * F + f] += alpha * tj[k * F + f];
    }
  }
  float *zi = z + i * d_out;
  if (g->concat) {
    for (int32_t c = 0; c < K * F; c++) zi[c] = oi[c];
  } else {
    for (int32_t f = 0; f < F; f++) {
      float sum = 0.0f;
      for (int32_t k = 0; k < K; k++) sum += oi[k * F + f];
      zi[f] = sum * (1.0f / (float)K);
    }
  }
  float *ni = node + i * halo_gat_node_cols(g) + d_out;
  for (int32_t k = 0; k < K; k++) {
    ni[k] = m[k];
    ni[K + k] = l[k];
  }
}

/* Row i's node terms: dZ_i in its first d_out columns, and per head
 * c_i,k = dout_i,k · out_i,k (the softmax backward's Σ_j α_ij dα_ij). */
HALO_HD void halo_gat_node_terms_row(const halo_gat_layer *g, const float *dz, const float *out,
                                     int64_t i, float *node) {
  const int32_t K = g->heads, F = g->f, d_out = halo_gat_out_cols(g);
  const float *dzi = dz + i * d_out, *oi = out + i * K * F;
  float *ni = node + i * halo_gat_node_cols(g);
  for (int32_t c = 0; c < d_out; c++) ni[c] = dzi[c];
  for (int32_t k = 0; k < K; k++) {
    float c = 0.0f;
    for (int32_t f = 0; f < F; f++) c += halo_gat_dout(g, dzi, k, f) * oi[k * F + f];
    ni[d_out + 2 * K + k] = c;
  }
}

/* dLoss/d(pre) of the edge i ← j for head k, and the edge's dropped α in
 * *kept, from i's node terms and scores and j's scores and row of T. */
HALO_HD float halo_gat_edge_grad(const halo_gat_layer *g, float scale, const float *node_i,
                                 const float *s_i, const float *s_j, const float *t_j, uint64_t gi,
                                 uint64_t gj, int32_t k, float *kept) {
  const int32_t K = g->heads, F = g->f, d_out = halo_gat_out_cols(g);
  const float pre = s_j[k] + s_i[K + k];
  const float alpha = halo_gat_alpha(pre, g->slope, node_i[d_out + k], node_i[d_out + K + k]);
  const uint64_t col = gj * (uint64_t)K + (uint64_t)k;
  float dot = 0.0f;
  for (int32_t f = 0; f < F; f++) dot += halo_gat_dout(g, node_i, k, f) * t_j[k * F + f];
  const float keep = halo_gat_keep(g, scale, gi, col);
  *kept = alpha * keep;
  const float da = dot * keep;
  const float de = alpha * (da - node_i[d_out + 2 * K + k]);
  return pre > 0.0f ? de : g->slope * de;
}

/* Owned row j backward, from the node terms of j and of its neighbours (the
 * graph is symmetric and every row holds its self-loop, so row j lists
 * every i with an edge i ← j, and every i that j attends to):
 *   dT[j] = Σ_i α'_ij dout_i + dsrc_j·a_src + ddst_j·a_dst   (n_owned × K·F)
 * and the attention vectors' terms, dsrc_j,k·T[j, k] in att_grad's row j
 * and ddst_j,k·T[j, k] in its row n + j. */
HALO_HD void halo_gat_backward_row(const halo_gat_layer *g, const halo_gat_rows *a,
                                   const float *node, const float *a_src, const float *a_dst,
                                   int64_t n, int64_t j, float *dt, float *att_grad) {
  const int32_t K = g->heads, F = g->f, ld = halo_gat_node_cols(g);
  const float scale = halo_dropout_scale(g->p);
  float ds_src[HALO_GAT_MAX_HEADS], ds_dst[HALO_GAT_MAX_HEADS];
  const float *s_j = a->s + j * 2 * K, *t_j = a->t + j * K * F, *node_j = node + j * ld;
  const uint64_t gj = (uint64_t)a->global_id[j];
  float *dtj = dt + j * K * F;
  for (int32_t c = 0; c < K * F; c++) dtj[c] = 0.0f;
  for (int32_t k = 0; k < K; k++) ds_src[k] = ds_dst[k] = 0.0f;
  for (int64_t e = a->indptr[j]; e < a->indptr[j + 1]; e++) {
    if (e + 2 < a->indptr[j + 1]) { /* the rows two edges on: their gathers miss cache */
      const int64_t ahead = a->indices[e + 2];
      halo_gat_prefetch(node + ahead * ld, (int64_t)ld * 4);
      halo_gat_prefetch(a->t + ahead * K * F, (int64_t)K * F * 4);
      halo_gat_prefetch(a->s + ahead * 2 * K, (int64_t)K * 8);
    }
    const int64_t i = a->indices[e];
    const float *s_i = a->s + i * 2 * K, *t_i = a->t + i * K * F, *node_i = node + i * ld;
    const uint64_t gi = (uint64_t)a->global_id[i];
    for (int32_t k = 0; k < K; k++) {
      float kept, unused;
      /* i ← j: out_i reads T_j through α_ij, and src_j feeds pre_ij. */
      ds_src[k] += halo_gat_edge_grad(g, scale, node_i, s_i, s_j, t_j, gi, gj, k, &kept);
      for (int32_t f = 0; f < F; f++) dtj[k * F + f] += kept * halo_gat_dout(g, node_i, k, f);
      /* j ← i: dst_j feeds pre_ji. */
      ds_dst[k] += halo_gat_edge_grad(g, scale, node_j, s_j, s_i, t_i, gj, gi, k, &unused);
    }
  }
  float *gs = att_grad + j * K * F, *gd = att_grad + (n + j) * K * F;
  for (int32_t k = 0; k < K; k++)
    for (int32_t f = 0; f < F; f++) {
      const int32_t c = k * F + f;
      dtj[c] += ds_src[k] * a_src[c] + ds_dst[k] * a_dst[c];
      gs[c] = ds_src[k] * t_j[c];
      gd[c] = ds_dst[k] * t_j[c];
    }
}

#endif /* HALO_GAT_H */
