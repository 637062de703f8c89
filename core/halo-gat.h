/* GAT's per-row arithmetic, in one place for the CPU kernels
 * (kernels/cpu-gat.c, one row per OpenMP iteration) and their CUDA twins
 * (kernels/cuda-gat.cu, one row per GPU thread): both run these very
 * functions, so they differ only where the compilers do (nvcc's fused
 * multiply-adds).
 *
 * A layer has K heads of F columns.  For the edge i ← j (i attends to j,
 * j ∈ N(i) ∪ {i}) and head k, from the per-node scores
 *   src_j = a_src[k] · T[j, k],   dst_i = a_dst[k] · T[i, k]
 * and the softmax's per-node terms of row i (its max m_i and the inverse
 * r_i = 1/l_i of its sum l_i):
 *   pre_ij = src_j + dst_i,   e_ij = LeakyReLU(pre_ij),
 *   w_ij   = halo_gat_exp(e_ij − m_i),   α_ij = w_ij · r_i,
 * and attention dropout keyed by (key, global id of i, global id of j · K + k).
 * Every rank computes α_ij from the same five floats with the same
 * operations, so the coefficients, and the sums over a row in ascending
 * global id, do not depend on which rank computes them: this is what lets
 * the owner of j recompute the α_ij of its halo rows i in the backward pass
 * instead of receiving them (docs/models.md, "GAT").
 *
 * The loops over a row's heads are elementwise (HALO_GAT_SIMD: the CPU
 * runs them as vectors, one head a lane) and every sum runs in the row's
 * edge order, one accumulator per head or column, so a vector build and a
 * scalar one (and CUDA's one thread a row) compute the same bits.
 */
#ifndef HALO_GAT_H
#define HALO_GAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "halo-rng.h"

/* Heads per layer, at most (the kernels keep a row's per-head terms on the
 * stack). */
#define HALO_GAT_MAX_HEADS 64

/* A loop over heads or columns whose iterations are independent: a vector
 * loop on the CPU (OpenMP's simd, no reduction), a plain one elsewhere. */
#if defined(_OPENMP) && !defined(__CUDACC__)
#define HALO_GAT_SIMD _Pragma("omp simd simdlen(8)")
#else
#define HALO_GAT_SIMD
#endif

/* The row functions, inlined into each of the CPU kernels' clones
 * (kernels/cpu-gat.c), so that each clone's loops use its instructions. */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define HALO_GAT_ROW HALO_HD __attribute__((always_inline))
#else
#define HALO_GAT_ROW HALO_HD
#endif

/* One GAT layer's shape and this pass's attention dropout. */
typedef struct halo_gat_layer {
  int32_t heads, f; /* K heads of F columns: T has K·F */
  int concat;       /* the output is the heads' concatenation (K·F) or their mean (F) */
  float slope;      /* LeakyReLU's negative slope (0.2) */
  uint64_t key;     /* attention dropout: halo_dropout_keep(key, gid_i, gid_j·K + k, p) */
  float p;          /* its rate; 0 keeps everything (evaluation) */
} halo_gat_layer;

/* The row of per-node terms each node keeps (n_all × halo_gat_node_cols):
 * dZ (d_out), then per head the softmax's max m and inverse sum r = 1/l,
 * then c = dout · out, the row's dot product that the softmax's backward
 * needs. */
HALO_HD int32_t halo_gat_out_width(int concat, int32_t K, int32_t F) { return concat ? K * F : F; }
HALO_HD int32_t halo_gat_node_width(int concat, int32_t K, int32_t F) {
  return halo_gat_out_width(concat, K, F) + 3 * K;
}
/* The same for g's K = g->heads and F = g->f. */
HALO_HD int32_t halo_gat_out_cols(const halo_gat_layer *g) {
  return halo_gat_out_width(g->concat, g->heads, g->f);
}
HALO_HD int32_t halo_gat_node_cols(const halo_gat_layer *g) {
  return halo_gat_node_width(g->concat, g->heads, g->f);
}

/* e^x in float, branch-free so that a loop of it vectorises: Cephes'
 * expf (S. Moshier), x = n·ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two
 * parts, so r is exact), e^r by its degree-7 polynomial, 2^n from n's bits.
 * Within 2 ulps of e^x for x in [-87, 88] (tests/kernels/test-gat.c
 * measures it against double exp); 0 below -87 (where e^x < 1.7e-38: the
 * softmax's arguments are <= 0, and so small a weight next to the row
 * max's 1 is lost in any sum), e^88 above 88, NaN for NaN.  Its own
 * formula, not the libm's or CUDA's expf, so that every device computes
 * the same coefficients. */
HALO_HD float halo_gat_exp(float x) {
  const float lo = -87.0f, hi = 88.0f;
  const float xc = x < lo ? lo : (x > hi ? hi : x);
  /* n = round(xc / ln 2), by adding and removing 1.5·2^23: the sum's low
   * mantissa bits hold n. */
  const float shifted = xc * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  uint32_t bits;
  memcpy(&bits, &shifted, sizeof bits);
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  const uint32_t scale_bits = (bits - 0x4b400000u + 127u) << 23; /* 2^n, n in [-126, 127] */
  float scale;
  memcpy(&scale, &scale_bits, sizeof scale);
  const float e = y * scale;
  return x < lo ? 0.0f : e;
}

/* v times LeakyReLU's slope at pre: v for pre > 0, else slope · v. */
HALO_HD float halo_gat_leaky(float pre, float v, float slope) {
  const float scaled = slope * v;
  return pre > 0.0f ? v : scaled;
}

/* LeakyReLU(pre). */
HALO_HD float halo_gat_logit(float pre, float slope) { return halo_gat_leaky(pre, pre, slope); }

/* The factors attention dropout puts on n (edge, head) pairs: keep[q] =
 * 1/(1-p) (scale) when kept, 0 when dropped, 1 without dropout, for
 * element (gid_i, gid_j·K + k) = col[q] of the row of the keyed stream
 * whose half of the draw is row_key[q] = halo_rng_mix(key ^ gid_i)
 * (hoisted: one mix a row or an edge), with threshold =
 * halo_dropout_threshold(p): halo_dropout_keep's draws and test, one mix a
 * pair. */
HALO_HD void halo_gat_keep_pairs(const halo_gat_layer *g, float scale, uint64_t threshold,
                                 const uint64_t *row_key, const uint64_t *col, int32_t n,
                                 float *keep) {
  if (g->p <= 0.0f) {
    for (int32_t q = 0; q < n; q++) keep[q] = 1.0f;
    return;
  }
  HALO_GAT_SIMD
  for (int32_t q = 0; q < n; q++) {
    const uint64_t draw = halo_rng_mix(row_key[q] ^ (col[q] * HALO_RNG_COL_MUL)) >> 40;
    keep[q] = draw >= threshold ? scale : 0.0f;
  }
}

/* A row's edges are taken a block at a time, HALO_GAT_BLOCK (edge, head)
 * pairs, at least one edge: its exps and draws are one loop over the
 * pairs, a vector loop even with one head.  The block's arrays hold one
 * edge of the most heads. */
#define HALO_GAT_BLOCK 64
#if HALO_GAT_MAX_HEADS > HALO_GAT_BLOCK
#error "a block of HALO_GAT_BLOCK pairs must hold one edge of HALO_GAT_MAX_HEADS heads"
#endif

/* The edges of a block from e of a row that ends at e1, for K heads. */
HALO_HD int32_t halo_gat_block_edges(int64_t e, int64_t e1, int32_t K) {
  const int64_t per = K < HALO_GAT_BLOCK ? HALO_GAT_BLOCK / K : 1;
  return (int32_t)(e1 - e < per ? e1 - e : per);
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

/* Head k of dLoss/d(out_i) is dz[k·stride + f] · mul: dZ_i's block of the
 * head (stride F, mul 1), or dZ_i / K when the heads are averaged (stride
 * 0, mul 1/K). */
HALO_HD int32_t halo_gat_dout_stride_of(int concat, int32_t F) { return concat ? F : 0; }
HALO_HD float halo_gat_dout_mul_of(int concat, int32_t K) {
  return concat ? 1.0f : 1.0f / (float)K;
}
HALO_HD int32_t halo_gat_dout_stride(const halo_gat_layer *g) {
  return halo_gat_dout_stride_of(g->concat, g->f);
}
HALO_HD float halo_gat_dout_mul(const halo_gat_layer *g) {
  return halo_gat_dout_mul_of(g->concat, g->heads);
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

/* The two attention rows below take the layer's shape, K = g->heads and F =
 * g->f, as arguments of their own, so that a caller may give them as
 * constants: the CPU kernels run the common shapes so (kernels/cpu-gat.c),
 * and the loops over heads and columns then compile to fixed trips.  The
 * arithmetic of each value, and so its bits, stays the same.
 *
 * Owned row i forward: out_i,k = r_i,k · Σ_j w_ij,k keep_ij,k T[j, k]
 * (K·F), Z_i without its bias (the heads side by side, or their mean), and
 * the softmax's max and inverse sum per head in node_i's columns d_out..
 * and d_out + K.. .  One exp per edge and head: the weights are summed and
 * applied in the same pass, and the row is scaled by 1/l at the end. */
HALO_GAT_ROW void halo_gat_attend_row(const halo_gat_layer *g, int32_t K, int32_t F,
                                      const halo_gat_rows *a, int64_t i, float *out, float *z,
                                      float *node) {
  const int32_t d_out = halo_gat_out_width(g->concat, K, F);
  const float scale = halo_dropout_scale(g->p), slope = g->slope;
  const uint64_t threshold = halo_dropout_threshold(g->p);
  float m[HALO_GAT_MAX_HEADS], l[HALO_GAT_MAX_HEADS];
  /* A block's pairs: pre-activation, its head's max, weight, dropout. */
  float pre[HALO_GAT_BLOCK], mx[HALO_GAT_BLOCK], w[HALO_GAT_BLOCK], keep[HALO_GAT_BLOCK];
  uint64_t row_key[HALO_GAT_BLOCK], col[HALO_GAT_BLOCK];
  const float *dst = a->s + i * 2 * K + K;
  const uint64_t key_i = halo_rng_mix(g->key ^ (uint64_t)a->global_id[i]);
  const int64_t e0 = a->indptr[i], e1 = a->indptr[i + 1];
  for (int32_t k = 0; k < K; k++) {
    m[k] = -INFINITY;
    l[k] = 0.0f;
  }
  for (int64_t e = e0; e < e1; e++) {
    const int64_t j = a->indices[e];
    const float *src = a->s + j * 2 * K;
    halo_gat_prefetch(a->t + j * K * F, (int64_t)K * F * 4); /* for the second pass */
    halo_gat_prefetch(a->global_id + j, 8);                  /* its dropout's column */
    if (e + 4 < e1) halo_gat_prefetch(a->s + (int64_t)a->indices[e + 4] * 2 * K, K * 8);
    HALO_GAT_SIMD
    for (int32_t k = 0; k < K; k++) {
      const float v = halo_gat_logit(src[k] + dst[k], slope);
      m[k] = v > m[k] ? v : m[k];
    }
  }
  float *oi = out + i * K * F;
  for (int32_t c = 0; c < K * F; c++) oi[c] = 0.0f;
  for (int64_t e = e0; e < e1;) {
    const int32_t nb = halo_gat_block_edges(e, e1, K), nq = nb * K;
    for (int32_t b = 0; b < nb; b++) {
      const int64_t j = a->indices[e + b];
      const float *src = a->s + j * 2 * K;
      const uint64_t gj = (uint64_t)a->global_id[j] * (uint64_t)K;
      const int32_t q0 = b * K;
      HALO_GAT_SIMD
      for (int32_t k = 0; k < K; k++) {
        pre[q0 + k] = src[k] + dst[k];
        mx[q0 + k] = m[k];
        row_key[q0 + k] = key_i;
        col[q0 + k] = gj + (uint64_t)k;
      }
    }
    HALO_GAT_SIMD
    for (int32_t q = 0; q < nq; q++) w[q] = halo_gat_exp(halo_gat_logit(pre[q], slope) - mx[q]);
    halo_gat_keep_pairs(g, scale, threshold, row_key, col, nq, keep);
    for (int32_t b = 0; b < nb; b++) {
      const float *tj = a->t + (int64_t)a->indices[e + b] * K * F;
      for (int32_t k = 0; k < K; k++) {
        const float wk = w[b * K + k] * keep[b * K + k];
        l[k] += w[b * K + k];
        HALO_GAT_SIMD
        for (int32_t f = 0; f < F; f++) oi[k * F + f] += wk * tj[k * F + f];
      }
    }
    e += nb;
  }
  for (int32_t k = 0; k < K; k++) {
    l[k] = 1.0f / l[k]; /* r = 1/l from here on */
    const float r = l[k];
    HALO_GAT_SIMD
    for (int32_t f = 0; f < F; f++) oi[k * F + f] *= r;
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
  float *ni = node + i * halo_gat_node_width(g->concat, K, F) + d_out;
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
  const int32_t stride = halo_gat_dout_stride(g);
  const float mul = halo_gat_dout_mul(g);
  const float *dzi = dz + i * d_out, *oi = out + i * K * F;
  float *ni = node + i * halo_gat_node_cols(g);
  for (int32_t c = 0; c < d_out; c++) ni[c] = dzi[c];
  for (int32_t k = 0; k < K; k++) {
    float c = 0.0f;
    for (int32_t f = 0; f < F; f++) c += dzi[k * stride + f] * mul * oi[k * F + f];
    ni[d_out + 2 * K + k] = c;
  }
}

/* Owned row j backward, from the node terms of j and of its neighbours (the
 * graph is symmetric and every row holds its self-loop, so row j lists
 * every i with an edge i ← j, and every i that j attends to):
 *   dT[j] = Σ_i α'_ij dout_i + dsrc_j·a_src + ddst_j·a_dst   (n_owned × K·F)
 * and the attention vectors' terms, dsrc_j,k·T[j, k] in att_grad's row j
 * and ddst_j,k·T[j, k] in its row n + j.
 *
 * With δ_ij = LeakyReLU'(pre_ij) and keep_ij the dropout's factor, the
 * softmax's backward dpre_ij = δ_ij α_ij (keep_ij dout_i·T_j − c_i) sums
 * over the edges of row j into
 *   dsrc_j = T_j · Σ_i δ_ij α_ij keep_ij dout_i − Σ_i δ_ij α_ij c_i       (i ← j)
 *   ddst_j = dout_j · Σ_i δ_ji α_ji keep_ji T_i − c_j Σ_i δ_ji α_ji       (j ← i)
 * so each edge adds rows (vector operations) instead of taking two dot
 * products, and the two dot products are taken once a row at the end.
 * att_grad's rows j and n + j hold the two sums of rows until then. */
HALO_GAT_ROW void halo_gat_backward_row(const halo_gat_layer *g, int32_t K, int32_t F,
                                        const halo_gat_rows *a, const float *node,
                                        const float *a_src, const float *a_dst, int64_t n,
                                        int64_t j, float *dt, float *att_grad) {
  const int32_t d_out = halo_gat_out_width(g->concat, K, F);
  const int32_t ld = halo_gat_node_width(g->concat, K, F);
  const int32_t stride = halo_gat_dout_stride_of(g->concat, F);
  const float mul = halo_gat_dout_mul_of(g->concat, K), slope = g->slope;
  const float scale = halo_dropout_scale(g->p);
  const uint64_t threshold = halo_dropout_threshold(g->p);
  /* Per head, the sums of δ·α·c of both directions (c_j applied at the
   * end); per pair of a block, i ← j's inputs (pre-activation, i's max,
   * 1/l and c, the draw's row half and column), j ← i's, and the outputs:
   * the coefficients of dout_i into dT_j and into the dsrc sum, of T_i
   * into the ddst sum, and the two terms of the c sums. */
  float c_src[HALO_GAT_MAX_HEADS], c_dst[HALO_GAT_MAX_HEADS];
  float pre_in[HALO_GAT_BLOCK], m_in[HALO_GAT_BLOCK], r_in[HALO_GAT_BLOCK], c_in[HALO_GAT_BLOCK],
      pre_out[HALO_GAT_BLOCK], m_out[HALO_GAT_BLOCK], r_out[HALO_GAT_BLOCK],
      keep_in[HALO_GAT_BLOCK], keep_out[HALO_GAT_BLOCK], kept[HALO_GAT_BLOCK],
      to_src[HALO_GAT_BLOCK], to_dst[HALO_GAT_BLOCK], dc_src[HALO_GAT_BLOCK],
      dc_dst[HALO_GAT_BLOCK];
  uint64_t key_in[HALO_GAT_BLOCK], col_in[HALO_GAT_BLOCK], key_out[HALO_GAT_BLOCK],
      col_out[HALO_GAT_BLOCK];
  const float *s_j = a->s + j * 2 * K, *t_j = a->t + j * K * F, *node_j = node + j * ld;
  const uint64_t gj = (uint64_t)a->global_id[j];
  const uint64_t key_j = halo_rng_mix(g->key ^ gj);
  const int64_t e1 = a->indptr[j + 1];
  float *dtj = dt + j * K * F, *gs = att_grad + j * K * F, *gd = att_grad + (n + j) * K * F;
  for (int32_t c = 0; c < K * F; c++) dtj[c] = gs[c] = gd[c] = 0.0f;
  for (int32_t k = 0; k < K; k++) c_src[k] = c_dst[k] = 0.0f;
  for (int64_t e = a->indptr[j]; e < e1;) {
    const int32_t nb = halo_gat_block_edges(e, e1, K), nq = nb * K;
    /* i ← j: out_i reads T_j through α_ij, and src_j feeds pre_ij; j ← i:
     * dst_j feeds pre_ji. */
    for (int32_t b = 0; b < nb; b++) {
      if (e + b + 2 < e1) { /* the rows two edges on: their gathers miss cache */
        const int64_t ahead = a->indices[e + b + 2];
        halo_gat_prefetch(node + ahead * ld, (int64_t)ld * 4);
        halo_gat_prefetch(a->t + ahead * K * F, (int64_t)K * F * 4);
        halo_gat_prefetch(a->s + ahead * 2 * K, (int64_t)K * 8);
        halo_gat_prefetch(a->global_id + ahead, 8);
      }
      const int64_t i = a->indices[e + b];
      const float *s_i = a->s + i * 2 * K, *node_i = node + i * ld;
      const uint64_t gi = (uint64_t)a->global_id[i];
      const uint64_t key_i = g->p > 0.0f ? halo_rng_mix(g->key ^ gi) : 0;
      const int32_t q0 = b * K;
      HALO_GAT_SIMD
      for (int32_t k = 0; k < K; k++) {
        pre_in[q0 + k] = s_j[k] + s_i[K + k];
        m_in[q0 + k] = node_i[d_out + k];
        r_in[q0 + k] = node_i[d_out + K + k];
        c_in[q0 + k] = node_i[d_out + 2 * K + k];
        key_in[q0 + k] = key_i;
        col_in[q0 + k] = gj * (uint64_t)K + (uint64_t)k;
        pre_out[q0 + k] = s_i[k] + s_j[K + k];
        m_out[q0 + k] = node_j[d_out + k];
        r_out[q0 + k] = node_j[d_out + K + k];
        key_out[q0 + k] = key_j;
        col_out[q0 + k] = gi * (uint64_t)K + (uint64_t)k;
      }
    }
    halo_gat_keep_pairs(g, scale, threshold, key_in, col_in, nq, keep_in);
    halo_gat_keep_pairs(g, scale, threshold, key_out, col_out, nq, keep_out);
    HALO_GAT_SIMD
    for (int32_t q = 0; q < nq; q++) {
      const float alpha_in = halo_gat_exp(halo_gat_logit(pre_in[q], slope) - m_in[q]) * r_in[q];
      const float delta_in = halo_gat_leaky(pre_in[q], alpha_in, slope);
      kept[q] = alpha_in * keep_in[q];
      to_src[q] = delta_in * keep_in[q];
      dc_src[q] = delta_in * c_in[q];
      const float alpha_out = halo_gat_exp(halo_gat_logit(pre_out[q], slope) - m_out[q]) * r_out[q];
      const float delta_out = halo_gat_leaky(pre_out[q], alpha_out, slope);
      to_dst[q] = delta_out * keep_out[q];
      dc_dst[q] = delta_out;
    }
    for (int32_t b = 0; b < nb; b++) {
      const int64_t i = a->indices[e + b];
      const float *t_i = a->t + i * K * F, *node_i = node + i * ld;
      for (int32_t k = 0; k < K; k++) {
        const int32_t q = b * K + k;
        const float *dout_i = node_i + k * stride;
        const float kk = kept[q], ks = to_src[q], kd = to_dst[q];
        c_src[k] += dc_src[q];
        c_dst[k] += dc_dst[q];
        HALO_GAT_SIMD
        for (int32_t f = 0; f < F; f++) {
          const float d = dout_i[f] * mul;
          dtj[k * F + f] += kk * d;
          gs[k * F + f] += ks * d;
          gd[k * F + f] += kd * t_i[k * F + f];
        }
      }
    }
    e += nb;
  }
  for (int32_t k = 0; k < K; k++) {
    float dsrc = 0.0f, ddst = 0.0f;
    for (int32_t f = 0; f < F; f++) {
      dsrc += t_j[k * F + f] * gs[k * F + f];
      ddst += node_j[k * stride + f] * mul * gd[k * F + f];
    }
    dsrc -= c_src[k];
    ddst -= c_dst[k] * node_j[d_out + 2 * K + k];
    for (int32_t f = 0; f < F; f++) {
      const int32_t c = k * F + f;
      dtj[c] += dsrc * a_src[c] + ddst * a_dst[c];
      gs[c] = dsrc * t_j[c];
      gd[c] = ddst * t_j[c];
    }
  }
}

#endif /* HALO_GAT_H */
