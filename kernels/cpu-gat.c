/* GAT's kernels on the CPU (halo-kernels.h): the per-node scores, the
 * attention forward (an SDDMM, the edge softmax and an SpMM with the
 * coefficients as values, fused per row), and its backward, which visits
 * each edge from the side of the node it reaches.
 *
 * Each row is computed by one thread, in its columns' order (ascending
 * global id), with plain loops: no vectorised reduction, whose rounding
 * would depend on the addresses of the rows, and no contraction into fused
 * multiply-adds (-ffp-contract=off), so that a row's result does not depend
 * on the rank, the thread count or the row's place in memory.  Per-edge
 * values are recomputed from per-node terms (halo-gat.h), never stored.
 */
#include <math.h>
#include <stdint.h>

#include "halo-gat.h"
#include "halo-kernels.h"

void halo_cpu_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows, const float *a_src,
                         const float *a_dst, float *s) {
  const int32_t K = g->heads, F = g->f;
#pragma omp parallel for schedule(static) if (rows * K * F >= 1 << 15)
  for (int64_t r = 0; r < rows; r++) {
    const float *tr = t + r * K * F;
    float *sr = s + r * 2 * K;
    for (int32_t k = 0; k < K; k++) {
      float src = 0.0f, dst = 0.0f;
      for (int32_t f = 0; f < F; f++) {
        src += tr[k * F + f] * a_src[k * F + f];
        dst += tr[k * F + f] * a_dst[k * F + f];
      }
      sr[k] = src;
      sr[K + k] = dst;
    }
  }
}

void halo_cpu_gat_attend(const halo_gat_layer *g, const halo_csr *adj, const int64_t *global_id,
                         const float *t, const float *s, float *out, float *z, float *node) {
  const int32_t K = g->heads, F = g->f, ld = halo_gat_node_cols(g), d_out = halo_gat_out_cols(g);
  const float scale = halo_dropout_scale(g->p);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < adj->rows; i++) {
    float m[HALO_GAT_MAX_HEADS], l[HALO_GAT_MAX_HEADS];
    const float *dst = s + i * 2 * K + K;
    const uint64_t gi = (uint64_t)global_id[i];
    for (int32_t k = 0; k < K; k++) {
      m[k] = -INFINITY;
      l[k] = 0.0f;
    }
    for (int64_t e = adj->indptr[i]; e < adj->indptr[i + 1]; e++) {
      const float *src = s + (int64_t)adj->indices[e] * 2 * K;
      for (int32_t k = 0; k < K; k++) m[k] = fmaxf(m[k], halo_gat_logit(src[k] + dst[k], g->slope));
    }
    for (int64_t e = adj->indptr[i]; e < adj->indptr[i + 1]; e++) {
      const float *src = s + (int64_t)adj->indices[e] * 2 * K;
      for (int32_t k = 0; k < K; k++)
        l[k] += expf(halo_gat_logit(src[k] + dst[k], g->slope) - m[k]);
    }
    float *oi = out + i * K * F;
    for (int32_t c = 0; c < K * F; c++) oi[c] = 0.0f;
    for (int64_t e = adj->indptr[i]; e < adj->indptr[i + 1]; e++) {
      const int64_t j = adj->indices[e];
      const float *src = s + j * 2 * K, *tj = t + j * K * F;
      const uint64_t col = (uint64_t)global_id[j] * (uint64_t)K;
      for (int32_t k = 0; k < K; k++) {
        const float a = halo_dropout_apply(halo_gat_alpha(src[k] + dst[k], g->slope, m[k], l[k]),
                                           g->key, gi, col + (uint64_t)k, g->p, scale);
        for (int32_t f = 0; f < F; f++) oi[k * F + f] += a * tj[k * F + f];
      }
    }
    /* Z without its bias: the heads side by side, or their mean. */
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
    float *ni = node + i * ld + d_out;
    for (int32_t k = 0; k < K; k++) {
      ni[k] = m[k];
      ni[K + k] = l[k];
    }
  }
}

void halo_cpu_gat_node_terms(const halo_gat_layer *g, const float *dz, const float *out,
                             int64_t rows, float *node) {
  const int32_t K = g->heads, F = g->f, ld = halo_gat_node_cols(g), d_out = halo_gat_out_cols(g);
#pragma omp parallel for schedule(static) if (rows * K * F >= 1 << 15)
  for (int64_t i = 0; i < rows; i++) {
    const float *dzi = dz + i * d_out, *oi = out + i * K * F;
    float *ni = node + i * ld;
    for (int32_t c = 0; c < d_out; c++) ni[c] = dzi[c];
    for (int32_t k = 0; k < K; k++) {
      float c = 0.0f;
      for (int32_t f = 0; f < F; f++) c += halo_gat_dout(g, dzi, k, f) * oi[k * F + f];
      ni[d_out + 2 * K + k] = c;
    }
  }
}

/* dLoss/d(pre) of the edge i ← j for head k, and the edge's dropped α
 * (*kept), from i's node terms and the two rows of T and scores. */
static inline float edge_grad(const halo_gat_layer *g, float scale, const float *node_i,
                              const float *s_i, const float *s_j, const float *t_j, uint64_t gi,
                              uint64_t gj, int32_t k, float *kept) {
  const int32_t K = g->heads, F = g->f, d_out = halo_gat_out_cols(g);
  const float pre = s_j[k] + s_i[K + k];
  const float a = halo_gat_alpha(pre, g->slope, node_i[d_out + k], node_i[d_out + K + k]);
  const uint64_t col = gj * (uint64_t)K + (uint64_t)k;
  float dot = 0.0f;
  for (int32_t f = 0; f < F; f++) dot += halo_gat_dout(g, node_i, k, f) * t_j[k * F + f];
  *kept = halo_dropout_apply(a, g->key, gi, col, g->p, scale);
  const float da = halo_dropout_apply(dot, g->key, gi, col, g->p, scale);
  const float de = a * (da - node_i[d_out + 2 * K + k]);
  return pre > 0.0f ? de : g->slope * de;
}

void halo_cpu_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                  const int64_t *global_id, const float *t, const float *s,
                                  const float *node, const float *a_src, const float *a_dst,
                                  float *dt, float *att_grad) {
  const int32_t K = g->heads, F = g->f, ld = halo_gat_node_cols(g);
  const int64_t n = adj->rows;
  const float scale = halo_dropout_scale(g->p);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t j = 0; j < n; j++) {
    float ds_src[HALO_GAT_MAX_HEADS], ds_dst[HALO_GAT_MAX_HEADS];
    const float *s_j = s + j * 2 * K, *t_j = t + j * K * F, *node_j = node + j * ld;
    const uint64_t gj = (uint64_t)global_id[j];
    float *dtj = dt + j * K * F;
    for (int32_t c = 0; c < K * F; c++) dtj[c] = 0.0f;
    for (int32_t k = 0; k < K; k++) ds_src[k] = ds_dst[k] = 0.0f;
    /* The graph is symmetric and every row holds its self-loop, so row j
     * lists every i with an edge i ← j, and every i that j attends to. */
    for (int64_t e = adj->indptr[j]; e < adj->indptr[j + 1]; e++) {
      const int64_t i = adj->indices[e];
      const float *s_i = s + i * 2 * K, *t_i = t + i * K * F, *node_i = node + i * ld;
      const uint64_t gi = (uint64_t)global_id[i];
      for (int32_t k = 0; k < K; k++) {
        float kept, unused;
        /* i ← j: out_i reads T_j through α_ij, and src_j feeds pre_ij. */
        ds_src[k] += edge_grad(g, scale, node_i, s_i, s_j, t_j, gi, gj, k, &kept);
        for (int32_t f = 0; f < F; f++) dtj[k * F + f] += kept * halo_gat_dout(g, node_i, k, f);
        /* j ← i: dst_j feeds pre_ji. */
        ds_dst[k] += edge_grad(g, scale, node_j, s_j, s_i, t_i, gj, gi, k, &unused);
      }
    }
    float *gs = att_grad + j * K * F, *gd = att_grad + (n + j) * K * F;
    for (int32_t k = 0; k < K; k++) {
      for (int32_t f = 0; f < F; f++) {
        const int32_t c = k * F + f;
        dtj[c] += ds_src[k] * a_src[c] + ds_dst[k] * a_dst[c];
        gs[c] = ds_src[k] * t_j[c];
        gd[c] = ds_dst[k] * t_j[c];
      }
    }
  }
}
