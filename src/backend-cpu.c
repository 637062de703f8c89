/* The CPU backend: every slot forwards to kernels/ (dense) or spmm/ (sparse).
 * Buffers are host memory, so upload/download/csr_upload stay NULL and MPI
 * reads and writes them in place. */
#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"
#include "halo-exact.h"
#include "halo-hostmem.h"
#include "halo-kernels.h"
#include "halo-spmm.h"

/* Large buffers (X, activations: what SpMM gathers from) get 2 MiB-aligned
 * huge pages, which halve the TLB misses of the random row gathers
 * (docs/benchmarks.md, "SpMM vs STREAM"); small ones are cache-line aligned. */
static halo_status cpu_buf_alloc(halo_backend *be, size_t bytes, halo_buf *out) {
  (void)be;
  void *p = halo_hostmem_calloc(bytes ? bytes : 1);
  if (!p) {
    halo_log_error("out of memory allocating a %zu-byte buffer", bytes);
    return HALO_ERR_NOMEM;
  }
  *out = (halo_buf){.data = p, .bytes = bytes, .space = HALO_MEM_HOST};
  return HALO_OK;
}

static void cpu_buf_free(halo_backend *be, halo_buf *buf) {
  (void)be;
  halo_hostmem_free(buf->data);
  *buf = (halo_buf){0};
}

static void cpu_gemm(halo_backend *be, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float beta, float *c, int64_t ldc) {
  (void)be;
  halo_cpu_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_bias_add(halo_backend *be, float *y, int64_t rows, int64_t cols,
                         const float *bias) {
  (void)be;
  halo_cpu_bias_add(y, rows, cols, bias);
}

static void cpu_colsum(halo_backend *be, const float *g, int64_t rows, int64_t cols, float *out) {
  (void)be;
  halo_cpu_colsum(g, rows, cols, out);
}

static void cpu_relu(halo_backend *be, float *y, int64_t n) {
  (void)be;
  halo_cpu_relu(y, n);
}

static void cpu_relu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  (void)be;
  halo_cpu_relu_backward(g, y, n);
}

static void cpu_dropout(halo_backend *be, float *y, int64_t rows, int64_t cols,
                        const int64_t *global_id, uint64_t key, float p) {
  (void)be;
  halo_cpu_dropout(y, rows, cols, global_id, key, p);
}

static void cpu_dropout_to(halo_backend *be, float *dst, const float *src, int64_t rows,
                           int64_t cols, const int64_t *global_id, uint64_t key, float p) {
  (void)be;
  halo_cpu_dropout_to(dst, src, rows, cols, global_id, key, p);
}

static float cpu_dropout_to_max(halo_backend *be, float *dst, const float *src, int64_t rows,
                                int64_t cols, const int64_t *global_id, uint64_t key, float p) {
  (void)be;
  return halo_cpu_dropout_to_max(dst, src, rows, cols, global_id, key, p);
}

static void cpu_softmax_xent(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                             const int32_t *labels, const int32_t *mask, int64_t nmask,
                             float grad_scale, float *g, double *loss_sum, int64_t *correct) {
  (void)be;
  halo_cpu_softmax_xent(z, rows, cols, labels, mask, nmask, grad_scale, g, loss_sum, correct);
}

static void cpu_sigmoid_bce(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                            const int8_t *targets, const int32_t *mask, int64_t nmask,
                            float grad_scale, float *g, double *loss_sum, int64_t *correct) {
  (void)be;
  halo_cpu_sigmoid_bce(z, rows, cols, targets, mask, nmask, grad_scale, g, loss_sum, correct);
}

static void cpu_adam(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                     float lr, float b1, float b2, float eps, float wd, int64_t t) {
  (void)be;
  halo_cpu_adam(w, g, m, v, n, lr, b1, b2, eps, wd, t);
}

static void cpu_adamw(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                      float lr, float b1, float b2, float eps, float wd, int64_t t) {
  (void)be;
  halo_cpu_adamw(w, g, m, v, n, lr, b1, b2, eps, wd, t);
}

static void cpu_sgd(halo_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
                    float mu, float wd, int nesterov) {
  (void)be;
  halo_cpu_sgd(w, g, buf, n, lr, mu, wd, nesterov);
}

static void cpu_scale(halo_backend *be, float *x, int64_t n, float s) {
  (void)be;
  halo_cpu_scale(x, n, s);
}

static void cpu_copy(halo_backend *be, float *dst, const float *src, int64_t n) {
  (void)be;
  if (n > 0 && dst != src) memcpy(dst, src, (size_t)n * sizeof(float));
}

static void cpu_pack(halo_backend *be, float *dst, const float *src, int64_t cols,
                     const int32_t *idx, int64_t n) {
  (void)be;
  halo_cpu_pack(dst, src, cols, idx, n);
}

static void cpu_quant_pack(halo_backend *be, uint8_t *dst, const float *src, int64_t cols,
                           const int32_t *idx, const int64_t *gid, int64_t n, int prec,
                           uint64_t key) {
  (void)be;
  halo_cpu_quant_pack(dst, src, cols, idx, gid, n, prec, key);
}

static void cpu_quant_unpack(halo_backend *be, float *dst, const uint8_t *src, int64_t cols,
                             int64_t n, int prec) {
  (void)be;
  halo_cpu_quant_unpack(dst, src, cols, n, prec);
}

static void cpu_spmm(halo_backend *be, const halo_csr *a, const float *x, int64_t ldx,
                     int64_t ncols, float beta, float *y, int64_t ldy, const int32_t *rows,
                     int64_t nrows) {
  (void)be;
  halo_spmm_cpu(a, x, ldx, ncols, beta, y, ldy, rows, nrows);
}

static void cpu_csr_dropout(halo_backend *be, const halo_csr *a, int transposed,
                            const int64_t *global_id, uint64_t key, float p, float *out) {
  (void)be;
  halo_cpu_csr_dropout(a->indptr, a->indices, a->values, a->rows, transposed, global_id, key, p,
                       out);
}

static void cpu_gemm_rows(halo_backend *be, int trans_b, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                          int64_t ldc) {
  (void)be;
  halo_cpu_gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

static float cpu_max_abs(halo_backend *be, const float *x, int64_t n) {
  (void)be;
  return halo_cpu_max_abs(x, n);
}

static void cpu_exact_tn(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                         int64_t lda, const float *b, int64_t ldb, int e, int threads, void *work,
                         int64_t *acc) {
  (void)be;
  halo_cpu_exact_tn(n, ac, bc, a, lda, b, ldb, e, threads, work, acc);
}

static void cpu_exact_tn_dropped(halo_backend *be, int64_t n, int64_t ac, int64_t bc,
                                 const float *x, const int64_t *global_id, uint64_t key, float p,
                                 const float *b, int64_t ldb, int e, int threads, void *work,
                                 int64_t *acc, int e1, int64_t *acc1) {
  (void)be;
  halo_cpu_exact_tn_dropped(n, ac, bc, x, global_id, key, p, b, ldb, e, threads, work, acc, e1,
                            acc1, 1);
}

static void cpu_exact_tn_ones(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                              int64_t lda, const float *b, int64_t ldb, int e, int threads,
                              void *work, int64_t *acc, int e1, int64_t *acc1) {
  (void)be;
  halo_cpu_exact_tn_ones(n, ac, bc, a, lda, b, ldb, e, threads, work, acc, e1, acc1, 1);
}

static void cpu_exact_csr_perm(halo_backend *be, const halo_csr *at, const float *values,
                               const int32_t *perm, const float *b, int64_t bc, int64_t ldb, int e,
                               int threads, void *work, int64_t *acc) {
  (void)be;
  halo_cpu_exact_csr_perm(at->indptr, at->indices, values, perm, at->rows, b, bc, ldb, e, threads,
                          work, acc, 1);
}

static void cpu_exact_csr(halo_backend *be, const halo_csr *at, const float *b, int64_t bc,
                          int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  (void)be;
  halo_cpu_exact_csr(at->indptr, at->indices, at->values, at->rows, b, bc, ldb, e, threads, work,
                     acc);
}

static void cpu_axpy(halo_backend *be, float *y, const float *x, int64_t n, float alpha,
                     const float *p) {
  (void)be;
  halo_cpu_axpy(y, x, n, alpha, p);
}

static void cpu_elu(halo_backend *be, float *y, int64_t n) {
  (void)be;
  halo_cpu_elu(y, n);
}

static void cpu_elu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  (void)be;
  halo_cpu_elu_backward(g, y, n);
}

static void cpu_leaky_relu(halo_backend *be, float *y, int64_t n, float slope) {
  (void)be;
  halo_cpu_leaky_relu(y, n, slope);
}

static void cpu_leaky_relu_backward(halo_backend *be, float *g, const float *y, int64_t n,
                                    float slope) {
  (void)be;
  halo_cpu_leaky_relu_backward(g, y, n, slope);
}

static void cpu_gelu_to(halo_backend *be, float *y, const float *x, int64_t n) {
  (void)be;
  halo_cpu_gelu_to(y, x, n);
}

static void cpu_gelu_backward(halo_backend *be, float *g, const float *x, int64_t n) {
  (void)be;
  halo_cpu_gelu_backward(g, x, n);
}

static void cpu_l2_normalize(halo_backend *be, float *y, int64_t rows, int64_t cols, float *norm) {
  (void)be;
  halo_cpu_l2_normalize(y, rows, cols, norm);
}

static void cpu_l2_normalize_backward(halo_backend *be, float *g, const float *y, const float *norm,
                                      int64_t rows, int64_t cols) {
  (void)be;
  halo_cpu_l2_normalize_backward(g, y, norm, rows, cols);
}

static void cpu_layernorm(halo_backend *be, float *y, int64_t rows, int64_t cols,
                          const float *gamma, const float *beta, float *xhat, float *rstd) {
  (void)be;
  halo_cpu_layernorm(y, rows, cols, gamma, beta, xhat, rstd);
}

static void cpu_layernorm_backward(halo_backend *be, float *g, const float *xhat, const float *rstd,
                                   const float *gamma, int64_t rows, int64_t cols) {
  (void)be;
  halo_cpu_layernorm_backward(g, xhat, rstd, gamma, rows, cols);
}

static void cpu_bn_sums(halo_backend *be, const float *x, const float *y, int64_t rows,
                        int64_t cols, double *sx, double *sxy) {
  (void)be;
  halo_cpu_bn_sums(x, y, rows, cols, sx, sxy);
}

static void cpu_batchnorm(halo_backend *be, float *y, int64_t rows, int64_t cols,
                          const double *shift, const double *scale, const float *gamma,
                          const float *beta, float *xhat) {
  (void)be;
  halo_cpu_batchnorm(y, rows, cols, shift, scale, gamma, beta, xhat);
}

static void cpu_batchnorm_backward(halo_backend *be, float *g, const float *xhat, int64_t rows,
                                   int64_t cols, const float *gamma, const double *scale,
                                   const double *a, const double *b) {
  (void)be;
  halo_cpu_batchnorm_backward(g, xhat, rows, cols, gamma, scale, a, b);
}

static void cpu_mul(halo_backend *be, float *out, const float *a, const float *b, int64_t n) {
  (void)be;
  halo_cpu_mul(out, a, b, n);
}

/* The model ops: each case unpacks its arguments into its kernel. */
static void cpu_model_kernel(halo_backend *be, const halo_model_call *c) {
  (void)be;
  switch (c->op) {
    case HALO_OP_GAT_SCORES: {
      const halo_op_gat_scores *a = &c->gat_scores;
      halo_cpu_gat_scores(a->g, a->t, a->rows, a->a_src, a->a_dst, a->s);
      break;
    }
    case HALO_OP_GAT_ATTEND: {
      const halo_op_gat_attend *a = &c->gat_attend;
      halo_cpu_gat_attend(a->g, a->adj, a->global_id, a->t, a->s, a->out, a->z, a->node);
      break;
    }
    case HALO_OP_GAT_NODE_TERMS: {
      const halo_op_gat_node_terms *a = &c->gat_node_terms;
      halo_cpu_gat_node_terms(a->g, a->dz, a->out, a->rows, a->node);
      break;
    }
    case HALO_OP_GAT_ATTEND_BACKWARD: {
      const halo_op_gat_attend_backward *a = &c->gat_attend_backward;
      halo_cpu_gat_attend_backward(a->g, a->adj, a->global_id, a->t, a->s, a->node, a->a_src,
                                   a->a_dst, a->dt, a->att_grad);
      break;
    }
    case HALO_OP_SAGE_MAX: {
      const halo_op_sage_max *a = &c->sage_max;
      halo_cpu_sage_max(a->adj, a->global_id, a->x, a->cols, a->out, a->arg);
      break;
    }
    case HALO_OP_SAGE_MAX_BACKWARD: {
      const halo_op_sage_max_backward *a = &c->sage_max_backward;
      halo_cpu_sage_max_backward(a->adj, a->global_id, a->arg, a->g, a->cols, a->dx);
      break;
    }
    case HALO_OP_COUNT:
      break;
  }
}

const halo_backend_ops halo__backend_cpu_ops = {
    .name = "cpu",
    .buf_alloc = cpu_buf_alloc,
    .buf_free = cpu_buf_free,
    .gemm = cpu_gemm,
    .gemm_rows = cpu_gemm_rows,
    .max_abs = cpu_max_abs,
    .exact_tn = cpu_exact_tn,
    .exact_csr = cpu_exact_csr,
    .exact_tn_dropped = cpu_exact_tn_dropped,
    .exact_tn_ones = cpu_exact_tn_ones,
    .exact_csr_perm = cpu_exact_csr_perm,
    .bias_add = cpu_bias_add,
    .colsum = cpu_colsum,
    .relu = cpu_relu,
    .relu_backward = cpu_relu_backward,
    .axpy = cpu_axpy,
    .elu = cpu_elu,
    .elu_backward = cpu_elu_backward,
    .leaky_relu = cpu_leaky_relu,
    .leaky_relu_backward = cpu_leaky_relu_backward,
    .gelu_to = cpu_gelu_to,
    .gelu_backward = cpu_gelu_backward,
    .l2_normalize = cpu_l2_normalize,
    .l2_normalize_backward = cpu_l2_normalize_backward,
    .layernorm = cpu_layernorm,
    .layernorm_backward = cpu_layernorm_backward,
    .mul = cpu_mul,
    .bn_sums = cpu_bn_sums,
    .batchnorm = cpu_batchnorm,
    .batchnorm_backward = cpu_batchnorm_backward,
    .model_ops = HALO_MODEL_OPS_ALL,
    .model_kernel = cpu_model_kernel,
    .dropout = cpu_dropout,
    .dropout_to = cpu_dropout_to,
    .dropout_to_max = cpu_dropout_to_max,
    .softmax_xent = cpu_softmax_xent,
    .sigmoid_bce = cpu_sigmoid_bce,
    .adam = cpu_adam,
    .adamw = cpu_adamw,
    .sgd = cpu_sgd,
    .scale = cpu_scale,
    .copy = cpu_copy,
    .pack = cpu_pack,
    .quant_pack = cpu_quant_pack,
    .quant_unpack = cpu_quant_unpack,
    .spmm = cpu_spmm,
    .csr_dropout = cpu_csr_dropout,
};
