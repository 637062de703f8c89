/* GAT's per-edge arithmetic, in one place for the CPU kernels
 * (kernels/cpu-gat.c), their CUDA twins and the backends' tables.
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

#endif /* HALO_GAT_H */
