/* halo-train --profile (halo-profile.h): the timed ops table, the limits
 * that give each op its floor, and the table. */
#include "halo-profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "halo-backend-impl.h"
#include "halo-model.h"
#include "halo-mpi-check.h"
#include "halo-watchdog.h"

/* The timed ops; a model op (GAT's, SAGE's max) is a row of its own. How an op's floor
 * is found: its streamed bytes at the STREAM triad rate, plus (SpMM, pack)
 * its gathered rows at the random-row-gather rate of its width, or its
 * flops at sgemm's rate, whichever is larger. */
#define PROF_OPS(X)                                                                             \
  X(SPMM, "spmm")                                                                               \
  X(GEMM, "gemm")                                                                               \
  X(GEMM_ROWS, "gemm_rows")                                                                     \
  X(BIAS_ADD, "bias_add")                                                                       \
  X(COLSUM, "colsum") X(RELU, "relu") X(RELU_BACKWARD, "relu_backward") X(ELU, "elu")           \
      X(ELU_BACKWARD, "elu_backward") X(LEAKY_RELU, "leaky_relu")                               \
          X(LEAKY_RELU_BACKWARD, "leaky_relu_bwd") X(GELU, "gelu") X(GELU_BACKWARD, "gelu_bwd") \
              X(DROPOUT, "dropout") X(DROPOUT_TO, "dropout_to") X(CSR_DROPOUT, "csr_dropout")   \
                  X(SOFTMAX_XENT, "loss") X(SIGMOID_BCE, "loss_bce") X(ADAM, "adam") X(ADAMW, "adamw") X(SGD, "sgd") X(SCALE, "scale") \
                      X(COPY, "copy") X(PACK, "pack") X(AXPY, "axpy") X(L2, "l2_normalize")     \
                          X(L2_BACKWARD, "l2_normalize_bwd") X(LAYERNORM, "layernorm")          \
                              X(LAYERNORM_BACKWARD, "layernorm_bwd") X(MUL, "mul")              \
                              X(BN_SUMS, "bn_sums") X(BATCHNORM, "batchnorm")                   \
                              X(BATCHNORM_BACKWARD, "batchnorm_bwd")                            \
                                  X(MAX_ABS, "max_abs") X(EXACT_TN, "exact_tn")                 \
                                      X(EXACT_CSR, "exact_csr") X(GAT_SCORES, "gat_scores")     \
                                          X(GAT_ATTEND, "gat_attend")                           \
                                              X(GAT_NODE_TERMS, "gat_node_terms")               \
                                                  X(GAT_ATTEND_BACKWARD, "gat_attend_bwd") \
                                                      X(SAGE_MAX, "sage_max")                 \
                                                          X(SAGE_MAX_BACKWARD, "sage_max_bwd")

enum {
#define PROF_ENUM(id, name) OP_##id,
  PROF_OPS(PROF_ENUM)
#undef PROF_ENUM
      OP_COUNT
};
static const char *const op_names[] = {
#define PROF_NAME(id, name) name,
    PROF_OPS(PROF_NAME)
#undef PROF_NAME
};

/* The watchdog's phases, as the table groups them. */
enum { PH_FORWARD, PH_BACKWARD, PH_EVAL, PH_OTHER, PH_COUNT };
static const char *const phase_names[] = {"fwd", "bwd", "eval", "step"};
#define LAYER_SLOTS (HALO_MAX_LAYERS + 1) /* layer -1 (none) and 0.. */
#define MAX_WIDTHS 16

typedef struct cell {
  double seconds, calls, stream_bytes, gather_bytes, flops;
  int width;     /* the gathered rows' width (SpMM) */
  int64_t table; /* the rows they are gathered from (SpMM: A's columns) */
} cell;

static struct {
  int on;
  halo_backend *be;
  const halo_backend_ops *real;
  halo_backend_ops timed;
  cell cells[OP_COUNT][PH_COUNT][LAYER_SLOTS];
  double gemm_max_flops; /* the largest GEMM's shape, for the sgemm rate */
  int64_t gemm_m, gemm_n, gemm_k;
} prof;

static double now(void) {
  if (prof.real->synchronize) (void)prof.real->synchronize(prof.be);
  return MPI_Wtime();
}

static void add_rows(int op, double t0, double stream, double gather, double flops, int width,
                     int64_t table) {
  const double dt = now() - t0;
  const char *phase = "";
  int layer = -1;
  halo_watch_get(&phase, &layer);
  int ph = PH_OTHER;
  if (strcmp(phase, "forward") == 0) ph = PH_FORWARD;
  if (strcmp(phase, "backward") == 0) ph = PH_BACKWARD;
  if (strcmp(phase, "evaluation") == 0) ph = PH_EVAL;
  if (layer < -1 || layer >= HALO_MAX_LAYERS) layer = -1;
  cell *c = &prof.cells[op][ph][layer + 1];
  c->seconds += dt;
  c->calls += 1;
  c->stream_bytes += stream;
  c->gather_bytes += gather;
  c->flops += flops;
  if (width > 0) c->width = width, c->table = table;
}

static void add(int op, double t0, double stream, double flops) {
  add_rows(op, t0, stream, 0, flops, 0, 0);
}

/* --- the timed slots ----------------------------------------------------- */

#define F4 ((double)sizeof(float))

static void t_gemm(halo_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  double t0 = now();
  prof.real->gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double flops = 2.0 * (double)m * (double)n * (double)k;
  if (flops > prof.gemm_max_flops) {
    prof.gemm_max_flops = flops;
    prof.gemm_m = m, prof.gemm_n = n, prof.gemm_k = k;
  }
  add(OP_GEMM, t0, F4 * ((double)m * k + (double)k * n + (double)m * n * (beta != 0 ? 2 : 1)),
      flops);
}
static void t_gemm_rows(halo_backend *be, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  double t0 = now();
  prof.real->gemm_rows(be, tb, m, n, k, a, lda, b, ldb, c, ldc);
  add(OP_GEMM_ROWS, t0, F4 * ((double)m * k + (double)k * n + (double)m * n),
      2.0 * (double)m * n * k);
}
static void t_bias_add(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *bias) {
  double t0 = now();
  prof.real->bias_add(be, y, rows, cols, bias);
  add(OP_BIAS_ADD, t0, 2 * F4 * (double)rows * cols, (double)rows * cols);
}
static void t_colsum(halo_backend *be, const float *g, int64_t rows, int64_t cols, float *out) {
  double t0 = now();
  prof.real->colsum(be, g, rows, cols, out);
  add(OP_COLSUM, t0, F4 * (double)rows * cols, (double)rows * cols);
}
static void t_relu(halo_backend *be, float *y, int64_t n) {
  double t0 = now();
  prof.real->relu(be, y, n);
  add(OP_RELU, t0, 2 * F4 * (double)n, 0);
}
static void t_relu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  double t0 = now();
  prof.real->relu_backward(be, g, y, n);
  add(OP_RELU_BACKWARD, t0, 3 * F4 * (double)n, 0);
}
static void t_elu(halo_backend *be, float *y, int64_t n) {
  double t0 = now();
  prof.real->elu(be, y, n);
  add(OP_ELU, t0, 2 * F4 * (double)n, 0);
}
static void t_elu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  double t0 = now();
  prof.real->elu_backward(be, g, y, n);
  add(OP_ELU_BACKWARD, t0, 3 * F4 * (double)n, 0);
}
static void t_leaky_relu(halo_backend *be, float *y, int64_t n, float slope) {
  double t0 = now();
  prof.real->leaky_relu(be, y, n, slope);
  add(OP_LEAKY_RELU, t0, 2 * F4 * (double)n, (double)n);
}
static void t_leaky_relu_backward(halo_backend *be, float *g, const float *y, int64_t n,
                                  float slope) {
  double t0 = now();
  prof.real->leaky_relu_backward(be, g, y, n, slope);
  add(OP_LEAKY_RELU_BACKWARD, t0, 3 * F4 * (double)n, (double)n);
}
static void t_gelu_to(halo_backend *be, float *y, const float *x, int64_t n) {
  double t0 = now();
  prof.real->gelu_to(be, y, x, n);
  add(OP_GELU, t0, 2 * F4 * (double)n, 0);
}
static void t_gelu_backward(halo_backend *be, float *g, const float *x, int64_t n) {
  double t0 = now();
  prof.real->gelu_backward(be, g, x, n);
  add(OP_GELU_BACKWARD, t0, 3 * F4 * (double)n, 0);
}
static void t_dropout(halo_backend *be, float *y, int64_t rows, int64_t cols, const int64_t *gid,
                      uint64_t key, float p) {
  double t0 = now();
  prof.real->dropout(be, y, rows, cols, gid, key, p);
  add(OP_DROPOUT, t0, 2 * F4 * (double)rows * cols + 8.0 * rows, 0);
}
static void t_dropout_to(halo_backend *be, float *dst, const float *src, int64_t rows, int64_t cols,
                         const int64_t *gid, uint64_t key, float p) {
  double t0 = now();
  prof.real->dropout_to(be, dst, src, rows, cols, gid, key, p);
  add(OP_DROPOUT_TO, t0, 2 * F4 * (double)rows * cols + 8.0 * rows, 0);
}
static float t_dropout_to_max(halo_backend *be, float *dst, const float *src, int64_t rows,
                              int64_t cols, const int64_t *gid, uint64_t key, float p) {
  double t0 = now();
  const float m = prof.real->dropout_to_max(be, dst, src, rows, cols, gid, key, p);
  add(OP_DROPOUT_TO, t0, 2 * F4 * (double)rows * cols + 8.0 * rows, 0);
  return m;
}
static void t_csr_dropout(halo_backend *be, const halo_csr *a, int tr, const int64_t *gid,
                          uint64_t key, float p, float *out) {
  double t0 = now();
  prof.real->csr_dropout(be, a, tr, gid, key, p, out);
  add(OP_CSR_DROPOUT, t0, 12.0 * (double)a->nnz + 16.0 * (double)a->rows, 0);
}
static void t_softmax_xent(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                           const int32_t *labels, const int32_t *mask, int64_t nmask, float scale,
                           float *g, double *loss, int64_t *correct) {
  double t0 = now();
  prof.real->softmax_xent(be, z, rows, cols, labels, mask, nmask, scale, g, loss, correct);
  add(OP_SOFTMAX_XENT, t0, F4 * (double)nmask * cols * (g ? 2 : 1) + 8.0 * nmask,
      4.0 * (double)nmask * cols);
}
static void t_sigmoid_bce(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                          const int8_t *targets, const int32_t *mask, int64_t nmask, float scale,
                          float *g, double *loss, int64_t *correct) {
  double t0 = now();
  prof.real->sigmoid_bce(be, z, rows, cols, targets, mask, nmask, scale, g, loss, correct);
  add(OP_SIGMOID_BCE, t0, (F4 * (g ? 2 : 1) + 1) * (double)nmask * cols,
      4.0 * (double)nmask * cols);
}
static void t_adam(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                   float lr, float b1, float b2, float eps, float wd, int64_t t) {
  double t0 = now();
  prof.real->adam(be, w, g, m, v, n, lr, b1, b2, eps, wd, t);
  add(OP_ADAM, t0, 7 * F4 * (double)n, 12.0 * (double)n);
}
static void t_adamw(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                    float lr, float b1, float b2, float eps, float wd, int64_t t) {
  double t0 = now();
  prof.real->adamw(be, w, g, m, v, n, lr, b1, b2, eps, wd, t);
  add(OP_ADAMW, t0, (7 + (wd != 0.0f ? 2 : 0)) * F4 * (double)n, 13.0 * (double)n);
}
static void t_sgd(halo_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
                  float mu, float wd, int nesterov) {
  double t0 = now();
  prof.real->sgd(be, w, g, buf, n, lr, mu, wd, nesterov);
  add(OP_SGD, t0, (3 + (mu != 0.0f ? 2 : 0)) * F4 * (double)n, 6.0 * (double)n);
}
static void t_scale(halo_backend *be, float *x, int64_t n, float s) {
  double t0 = now();
  prof.real->scale(be, x, n, s);
  add(OP_SCALE, t0, 2 * F4 * (double)n, (double)n);
}
static void t_copy(halo_backend *be, float *dst, const float *src, int64_t n) {
  double t0 = now();
  prof.real->copy(be, dst, src, n);
  add(OP_COPY, t0, 2 * F4 * (double)n, 0);
}
static void t_pack(halo_backend *be, float *dst, const float *src, int64_t cols, const int32_t *idx,
                   int64_t n) {
  double t0 = now();
  prof.real->pack(be, dst, src, cols, idx, n);
  add(OP_PACK, t0, 2 * F4 * (double)n * cols + 4.0 * n, 0);
}
static void t_axpy(halo_backend *be, float *y, const float *x, int64_t n, float alpha,
                   const float *p) {
  double t0 = now();
  prof.real->axpy(be, y, x, n, alpha, p);
  add(OP_AXPY, t0, 3 * F4 * (double)n, 2.0 * (double)n);
}
static void t_l2(halo_backend *be, float *y, int64_t rows, int64_t cols, float *norm) {
  double t0 = now();
  prof.real->l2_normalize(be, y, rows, cols, norm);
  add(OP_L2, t0, 3 * F4 * (double)rows * cols, 3.0 * (double)rows * cols);
}
static void t_l2_backward(halo_backend *be, float *g, const float *y, const float *norm,
                          int64_t rows, int64_t cols) {
  double t0 = now();
  prof.real->l2_normalize_backward(be, g, y, norm, rows, cols);
  add(OP_L2_BACKWARD, t0, 3 * F4 * (double)rows * cols, 4.0 * (double)rows * cols);
}
static void t_layernorm(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *gamma,
                        const float *beta, float *xhat, float *rstd) {
  double t0 = now();
  prof.real->layernorm(be, y, rows, cols, gamma, beta, xhat, rstd);
  add(OP_LAYERNORM, t0, 4 * F4 * (double)rows * cols, 6.0 * (double)rows * cols);
}
static void t_layernorm_backward(halo_backend *be, float *g, const float *xhat, const float *rstd,
                                 const float *gamma, int64_t rows, int64_t cols) {
  double t0 = now();
  prof.real->layernorm_backward(be, g, xhat, rstd, gamma, rows, cols);
  add(OP_LAYERNORM_BACKWARD, t0, 3 * F4 * (double)rows * cols, 8.0 * (double)rows * cols);
}
static void t_mul(halo_backend *be, float *out, const float *a, const float *b, int64_t n) {
  double t0 = now();
  prof.real->mul(be, out, a, b, n);
  add(OP_MUL, t0, 3 * F4 * (double)n, (double)n);
}
static void t_bn_sums(halo_backend *be, const float *x, const float *y, int64_t rows,
                      int64_t cols, double *sx, double *sxy) {
  double t0 = now();
  prof.real->bn_sums(be, x, y, rows, cols, sx, sxy);
  add(OP_BN_SUMS, t0, (y ? 2 : 1) * F4 * (double)(rows * cols), 2.0 * (double)(rows * cols));
}
static void t_batchnorm(halo_backend *be, float *y, int64_t rows, int64_t cols,
                        const double *shift, const double *scale, const float *gamma,
                        const float *beta, float *xhat) {
  double t0 = now();
  prof.real->batchnorm(be, y, rows, cols, shift, scale, gamma, beta, xhat);
  add(OP_BATCHNORM, t0, (xhat ? 3 : 2) * F4 * (double)(rows * cols), 4.0 * (double)(rows * cols));
}
static void t_batchnorm_backward(halo_backend *be, float *g, const float *xhat, int64_t rows,
                                 int64_t cols, const float *gamma, const double *scale,
                                 const double *a, const double *b) {
  double t0 = now();
  prof.real->batchnorm_backward(be, g, xhat, rows, cols, gamma, scale, a, b);
  add(OP_BATCHNORM_BACKWARD, t0, 3 * F4 * (double)(rows * cols), 5.0 * (double)(rows * cols));
}
static float t_max_abs(halo_backend *be, const float *x, int64_t n) {
  double t0 = now();
  float r = prof.real->max_abs(be, x, n);
  add(OP_MAX_ABS, t0, F4 * (double)n, 0);
  return r;
}
static void t_exact_tn(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                       int64_t lda, const float *b, int64_t ldb, int e, int threads, void *work,
                       int64_t *acc) {
  double t0 = now();
  prof.real->exact_tn(be, n, ac, bc, a, lda, b, ldb, e, threads, work, acc);
  add(OP_EXACT_TN, t0, F4 * (double)n * (ac + bc), 2.0 * (double)n * ac * bc);
}
static void t_exact_tn_dropped(halo_backend *be, int64_t n, int64_t ac, int64_t bc,
                               const float *x, const int64_t *gid, uint64_t key, float p,
                               const float *b, int64_t ldb, int e, int threads, void *work,
                               int64_t *acc, int e1, int64_t *acc1) {
  double t0 = now();
  prof.real->exact_tn_dropped(be, n, ac, bc, x, gid, key, p, b, ldb, e, threads, work, acc, e1,
                              acc1);
  add(OP_EXACT_TN, t0, F4 * (double)n * (ac + bc), 2.0 * (double)n * (ac + (acc1 != NULL)) * bc);
}
static void t_exact_tn_ones(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                            int64_t lda, const float *b, int64_t ldb, int e, int threads,
                            void *work, int64_t *acc, int e1, int64_t *acc1) {
  double t0 = now();
  prof.real->exact_tn_ones(be, n, ac, bc, a, lda, b, ldb, e, threads, work, acc, e1, acc1);
  add(OP_EXACT_TN, t0, F4 * (double)n * (ac + bc), 2.0 * (double)n * (ac + (acc1 != NULL)) * bc);
}
static void t_exact_csr_perm(halo_backend *be, const halo_csr *at, const float *values,
                             const int32_t *perm, const float *b, int64_t bc, int64_t ldb, int e,
                             int threads, void *work, int64_t *acc) {
  double t0 = now();
  prof.real->exact_csr_perm(be, at, values, perm, b, bc, ldb, e, threads, work, acc);
  add_rows(OP_EXACT_CSR, t0, 12.0 * (double)at->nnz, F4 * (double)at->nnz * bc,
           2.0 * (double)at->nnz * bc, (int)bc, at->cols);
}
static void t_exact_csr(halo_backend *be, const halo_csr *at, const float *b, int64_t bc,
                        int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  double t0 = now();
  prof.real->exact_csr(be, at, b, bc, ldb, e, threads, work, acc);
  add_rows(OP_EXACT_CSR, t0, 8.0 * (double)at->nnz, F4 * (double)at->nnz * bc,
           2.0 * (double)at->nnz * bc, (int)bc, at->cols);
}
static void t_spmm(halo_backend *be, const halo_csr *a, const float *x, int64_t ldx, int64_t ncols,
                   float beta, float *y, int64_t ldy, const int32_t *rows, int64_t nrows) {
  double t0 = now();
  prof.real->spmm(be, a, x, ldx, ncols, beta, y, ldy, rows, nrows);
  /* The non-zeros of the rows computed: all of them, or (a row list) the
   * share of the rows. */
  const double nnz =
      rows ? (double)a->nnz * (double)nrows / (double)(a->rows ? a->rows : 1) : (double)a->nnz;
  const double out_rows = rows ? (double)nrows : (double)a->rows;
  add_rows(OP_SPMM, t0, 8.0 * nnz + 8.0 * out_rows + F4 * out_rows * ncols * (beta != 0 ? 2 : 1),
           F4 * nnz * ncols, 2.0 * nnz * ncols, (int)ncols, a->cols);
}
/* GAT's ops: T's rows of K·F columns gathered once a non-zero (twice
 * backward: T and dT), the scores and per-node rows streamed.  SAGE's max:
 * X's rows gathered once a non-zero (backward: G's and the ids'). */
static void t_model_kernel(halo_backend *be, const halo_model_call *call) {
  double t0 = now();
  prof.real->model_kernel(be, call);
  double stream = 0, gather = 0, flops = 0;
  int width = 0;
  int64_t table = 0;
  if (call->op == HALO_OP_GAT_SCORES) {
    const halo_op_gat_scores *o = &call->gat_scores;
    const double kf = (double)o->g->heads * o->g->f;
    stream = F4 * (double)o->rows * (kf + 2.0 * o->g->heads);
    flops = 4.0 * (double)o->rows * kf;
  } else if (call->op == HALO_OP_GAT_ATTEND) {
    const halo_op_gat_attend *o = &call->gat_attend;
    const double kf = (double)o->g->heads * o->g->f, nnz = (double)o->adj->nnz;
    const double rows = (double)o->adj->rows;
    width = (int)kf;
    table = o->adj->cols;
    gather = F4 * nnz * kf;
    stream = 8.0 * nnz + F4 * rows * (2.0 * kf + 4.0 * o->g->heads);
    flops = nnz * (2.0 * kf + 8.0 * o->g->heads);
  } else if (call->op == HALO_OP_GAT_NODE_TERMS) {
    const halo_op_gat_node_terms *o = &call->gat_node_terms;
    stream = 3 * F4 * (double)o->rows * halo_gat_out_cols(o->g);
  } else if (call->op == HALO_OP_GAT_ATTEND_BACKWARD) {
    const halo_op_gat_attend_backward *o = &call->gat_attend_backward;
    const double kf = (double)o->g->heads * o->g->f, nnz = (double)o->adj->nnz;
    width = (int)kf;
    table = o->adj->cols;
    gather = 2 * F4 * nnz * kf;
    stream = 8.0 * nnz + F4 * (double)o->adj->rows * (2.0 * kf + 4.0 * o->g->heads);
    flops = nnz * (4.0 * kf + 12.0 * o->g->heads);
  } else if (call->op == HALO_OP_SAGE_MAX) {
    const halo_op_sage_max *o = &call->sage_max;
    const double nnz = (double)o->adj->nnz, rows = (double)o->adj->rows;
    width = (int)o->cols;
    table = o->adj->cols;
    gather = F4 * nnz * (double)o->cols;
    stream = 4.0 * nnz + F4 * rows * 2.0 * (double)o->cols;
    flops = nnz * (double)o->cols;
  } else if (call->op == HALO_OP_SAGE_MAX_BACKWARD) {
    const halo_op_sage_max_backward *o = &call->sage_max_backward;
    const double nnz = (double)o->adj->nnz, rows = (double)o->adj->rows;
    width = (int)o->cols;
    table = o->adj->cols;
    gather = 2 * F4 * nnz * (double)o->cols;
    stream = 4.0 * nnz + F4 * rows * (double)o->cols;
    flops = 2.0 * nnz * (double)o->cols;
  }
  _Static_assert(OP_SAGE_MAX_BACKWARD - OP_GAT_SCORES + 1 == HALO_OP_COUNT,
                 "a profile row for each model op (PROF_OPS' last rows, in HALO_MODEL_OPS order)");
  add_rows(OP_GAT_SCORES + (int)call->op, t0, stream, gather, flops, width, table);
}

halo_status halo_profile_install(halo_backend *be) {
  memset(&prof, 0, sizeof prof);
  prof.on = 1;
  prof.be = be;
  prof.real = be->ops;
  prof.timed = *be->ops;
  halo_backend_ops *t = &prof.timed;
#define TIME_SLOT(slot, fn) \
  if (t->slot) t->slot = fn
  TIME_SLOT(gemm, t_gemm);
  TIME_SLOT(gemm_rows, t_gemm_rows);
  TIME_SLOT(bias_add, t_bias_add);
  TIME_SLOT(colsum, t_colsum);
  TIME_SLOT(relu, t_relu);
  TIME_SLOT(relu_backward, t_relu_backward);
  TIME_SLOT(elu, t_elu);
  TIME_SLOT(elu_backward, t_elu_backward);
  TIME_SLOT(leaky_relu, t_leaky_relu);
  TIME_SLOT(leaky_relu_backward, t_leaky_relu_backward);
  TIME_SLOT(gelu_to, t_gelu_to);
  TIME_SLOT(gelu_backward, t_gelu_backward);
  TIME_SLOT(dropout, t_dropout);
  TIME_SLOT(dropout_to, t_dropout_to);
  TIME_SLOT(dropout_to_max, t_dropout_to_max);
  TIME_SLOT(csr_dropout, t_csr_dropout);
  TIME_SLOT(softmax_xent, t_softmax_xent);
  TIME_SLOT(sigmoid_bce, t_sigmoid_bce);
  TIME_SLOT(adam, t_adam);
  TIME_SLOT(adamw, t_adamw);
  TIME_SLOT(sgd, t_sgd);
  TIME_SLOT(scale, t_scale);
  TIME_SLOT(copy, t_copy);
  TIME_SLOT(pack, t_pack);
  TIME_SLOT(axpy, t_axpy);
  TIME_SLOT(l2_normalize, t_l2);
  TIME_SLOT(l2_normalize_backward, t_l2_backward);
  TIME_SLOT(layernorm, t_layernorm);
  TIME_SLOT(layernorm_backward, t_layernorm_backward);
  TIME_SLOT(mul, t_mul);
  TIME_SLOT(bn_sums, t_bn_sums);
  TIME_SLOT(batchnorm, t_batchnorm);
  TIME_SLOT(batchnorm_backward, t_batchnorm_backward);
  TIME_SLOT(max_abs, t_max_abs);
  TIME_SLOT(exact_tn, t_exact_tn);
  TIME_SLOT(exact_csr, t_exact_csr);
  TIME_SLOT(exact_tn_dropped, t_exact_tn_dropped);
  TIME_SLOT(exact_tn_ones, t_exact_tn_ones);
  TIME_SLOT(exact_csr_perm, t_exact_csr_perm);
  TIME_SLOT(spmm, t_spmm);
  TIME_SLOT(model_kernel, t_model_kernel);
#undef TIME_SLOT
  be->ops = &prof.timed;
  return HALO_OK;
}

int halo_profile_on(void) { return prof.on; }

void halo_profile_reset(void) { memset(prof.cells, 0, sizeof prof.cells); }

int64_t halo_profile_minflt(void) {
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  return (int64_t)u.ru_minflt;
}

/* --- the machine's limits ------------------------------------------------ */

typedef struct limits {
  double triad, copy; /* bytes/s */
  double gemm;        /* flops/s */
  int widths[MAX_WIDTHS];
  int64_t tables[MAX_WIDTHS]; /* floats of the table gathered from */
  double gather[MAX_WIDTHS];  /* gathered bytes/s at widths[i] from tables[i] */
  int nwidths;
} limits;

/* The best of three runs of a[i] = b[i] + s·c[i] (triad) and a[i] = b[i]
 * (copy) over arrays of n floats, with the threads the ops use. */
static void measure_stream(float *a, float *b, float *c, int64_t n, limits *lim) {
  lim->triad = lim->copy = 0;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) a[i] = 0, b[i] = 1.0f, c[i] = 2.0f;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
    double t1 = MPI_Wtime();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) c[i] = a[i];
    double t2 = MPI_Wtime();
    if (3 * F4 * n / (t1 - t0) > lim->triad) lim->triad = 3 * F4 * n / (t1 - t0);
    if (2 * F4 * n / (t2 - t1) > lim->copy) lim->copy = 2 * F4 * n / (t2 - t1);
  }
}

/* The machine's ceiling for a SpMM's gathers (bench/spmm-stream's
 * method): rows of `width` floats picked at random from a table of
 * `floats` floats (the SpMM's X, or 64 MiB of it), every cache line they
 * span loaded once, 32 rows prefetched ahead, nothing computed or stored.
 * The gathered bytes per second, best of two.  A graph whose neighbours
 * lie near each other in memory gathers faster: its ratio may fall below 1. */
enum { GATHER_AHEAD = 32 };
static volatile float gather_sink;

static double measure_gather(const float *table, int64_t floats, const int32_t *idx, int64_t picks,
                             int width) {
  const uint64_t rows = (uint64_t)(floats / width);
  const size_t row_bytes = (size_t)width * sizeof(float);
  double best = 0;
  for (int rep = 0; rep < 2; rep++) {
    float sum = 0;
    double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t k = 0; k < picks; k++) {
      if (k + GATHER_AHEAD < picks) {
        const char *ahead =
            (const char *)table + (((uint64_t)idx[k + GATHER_AHEAD] * rows) >> 31) * row_bytes;
        for (size_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(ahead + off, 0, 3);
      }
      const char *row = (const char *)table + (((uint64_t)idx[k] * rows) >> 31) * row_bytes;
      for (size_t off = 0; off < row_bytes; off += 64) sum += *(const float *)(row + off);
    }
    double dt = MPI_Wtime() - t0;
    gather_sink = sum;
    double r = (double)row_bytes * (double)picks / dt;
    if (r > best) best = r;
  }
  return best;
}

static halo_status measure_limits(limits *lim) {
  halo_status st = HALO_OK;
  const int64_t n = (int64_t)1 << 24; /* 64 MiB an array: past any cache */
  float *a = NULL, *b = NULL, *c = NULL;
  HALO_ALLOC(a, n, "--profile's STREAM arrays");
  HALO_ALLOC(b, n, "--profile's STREAM arrays");
  HALO_ALLOC(c, n, "--profile's STREAM arrays");
  measure_stream(a, b, c, n, lim);
  /* The column indices, uniform at random, in a's room (n int32s). */
  int32_t *idx = (int32_t *)a;
  uint64_t state = 0x853C49E6748FEA9Bull;
  for (int64_t i = 0; i < n; i++) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    idx[i] = (int32_t)(state >> 33); /* [0, 2^31) */
  }
  /* The gather table is b and c together's room (128 MiB). */
  for (int i = 0; i < lim->nwidths; i++) {
    const int64_t floats = lim->tables[i] < n ? lim->tables[i] : n;
    lim->gather[i] = measure_gather(b, floats > lim->widths[i] ? floats : lim->widths[i], idx,
                                    n / 4, lim->widths[i]);
  }
  /* sgemm at the largest shape the step ran (its A and B, at most 64 MiB
   * each, out of a, b and c). */
  lim->gemm = 0;
  /* a held the gather's indices: ordinary values again, since bit patterns
   * read as floats (NaN, Inf, subnormals) would slow the multiply. */
  for (int64_t i = 0; i < n; i++) a[i] = 1.0f + (float)(i & 7) * 0.125f;
  int64_t m = prof.gemm_m, nn = prof.gemm_n, k = prof.gemm_k;
  while (m > 1 && (m * k > n || m * nn > n)) m /= 2;
  if (m > 0 && nn > 0 && k > 0 && m * k <= n && k * nn <= n && m * nn <= n) {
    for (int rep = 0; rep < 3; rep++) {
      double t0 = MPI_Wtime();
      prof.real->gemm(prof.be, 0, 0, m, nn, k, 1.0f, a, k, b, nn, 0.0f, c, nn);
      if (prof.real->synchronize) (void)prof.real->synchronize(prof.be);
      double r = 2.0 * m * nn * k / (MPI_Wtime() - t0);
      if (r > lim->gemm) lim->gemm = r;
    }
  }
  prof.gemm_m = m;
done:
  free(a);
  free(b);
  free(c);
  return st;
}

static double gather_rate(const limits *lim, int width, int64_t table) {
  for (int i = 0; i < lim->nwidths; i++)
    if (lim->widths[i] == width && lim->tables[i] == table * width) return lim->gather[i];
  return lim->triad;
}

/* A cell's floor in seconds at the limits. */
static double floor_of(int op, const cell *c, const limits *lim) {
  double bytes = c->stream_bytes / lim->triad;
  if (c->gather_bytes > 0) bytes += c->gather_bytes / gather_rate(lim, c->width, c->table);
  const int dense = op == OP_GEMM || op == OP_GEMM_ROWS || op == OP_EXACT_TN;
  const double flops = dense && lim->gemm > 0 ? c->flops / lim->gemm : 0;
  return bytes > flops ? bytes : flops;
}

halo_status halo_profile_report(halo_backend *be, MPI_Comm comm, const halo_profile_totals *t,
                                FILE *out) {
  halo_status st = HALO_OK;
  int rank = 0;
  limits lim = {0};
  enum { NCELLS = OP_COUNT * PH_COUNT * LAYER_SLOTS };
  double *mine = NULL, *most = NULL;
  (void)be;
  HALO_MPI(MPI_Comm_rank(comm, &rank));
  if (t->epochs == 0) { /* the same on every rank: epochs are collective */
    if (rank == 0)
      fprintf(out, "profile: no epoch was profiled (the run trained no epoch past its warm-up)\n");
    goto done;
  }
  HALO_ALLOC(mine, NCELLS + 4, "--profile's table");
  HALO_ALLOC(most, NCELLS + 4, "--profile's table");
  const cell *cells = &prof.cells[0][0][0];
  for (int i = 0; i < NCELLS; i++) mine[i] = cells[i].seconds;
  mine[NCELLS] = t->step_s;
  mine[NCELLS + 1] = t->eval_s;
  mine[NCELLS + 2] = t->comm_s;
  mine[NCELLS + 3] = (double)t->minflt_profiled;
  HALO_MPI(MPI_Reduce(mine, most, NCELLS + 4, MPI_DOUBLE, MPI_MAX, 0, comm));

  /* The widths the SpMMs and packs gathered at, then the limits (every
   * rank measures; rank 0's go in the table). */
  for (int i = 0; i < NCELLS; i++) {
    const int w = cells[i].width;
    const int64_t floats = cells[i].table * w;
    int seen = 0;
    for (int j = 0; j < lim.nwidths; j++) seen |= lim.widths[j] == w && lim.tables[j] == floats;
    if (w > 0 && !seen && lim.nwidths < MAX_WIDTHS) {
      lim.widths[lim.nwidths] = w;
      lim.tables[lim.nwidths++] = floats;
    }
  }
  HALO_MPI(MPI_Barrier(comm));
  HALO_TRY(measure_limits(&lim));
  if (rank != 0) goto done;

  const double e = t->epochs > 0 ? (double)t->epochs : 1.0;
  fprintf(out,
          "profile: %lld epochs after the warm-up, per epoch; limits: triad %.1f GB/s, "
          "copy %.1f GB/s, sgemm %.1f GFLOP/s (%lldx%lldx%lld)",
          (long long)t->epochs, lim.triad / 1e9, lim.copy / 1e9, lim.gemm / 1e9,
          (long long)prof.gemm_m, (long long)prof.gemm_n, (long long)prof.gemm_k);
  for (int i = 0; i < lim.nwidths; i++)
    fprintf(out, "%s gather %d of %.0f MB %.1f GB/s", i ? "," : ";", lim.widths[i],
            F4 * (double)lim.tables[i] / 1e6, lim.gather[i] / 1e9);
  fprintf(out, "\n%-16s %-5s %5s %7s %10s %10s %9s %9s %9s %6s\n", "op", "phase", "layer", "calls",
          "ms(rank0)", "ms(max)", "MB", "MFLOP", "floor ms", "ratio");
  double packed = 0, sum = 0, sum_max = 0, sum_floor = 0, sum_step = 0, floor_step = 0;
  for (int op = 0; op < OP_COUNT; op++)
    for (int ph = 0; ph < PH_COUNT; ph++)
      for (int l = 0; l < LAYER_SLOTS; l++) {
        const cell *c = &prof.cells[op][ph][l];
        const double mx = most[(op * PH_COUNT + ph) * LAYER_SLOTS + l];
        if (c->calls == 0 && mx == 0) continue;
        const double fl = floor_of(op, c, &lim);
        char layer[8] = "-";
        if (l > 0) snprintf(layer, sizeof layer, "%d", l - 1);
        fprintf(out, "%-16s %-5s %5s %7.0f %10.3f %10.3f %9.1f %9.1f %9.3f %6.2f\n", op_names[op],
                phase_names[ph], layer, c->calls / e, 1e3 * c->seconds / e, 1e3 * mx / e,
                (c->stream_bytes + c->gather_bytes) / e / 1e6, c->flops / e / 1e6, 1e3 * fl / e,
                fl > 0 ? c->seconds / fl : 0.0);
        sum += c->seconds;
        if (op == OP_PACK) packed += c->seconds;
        sum_max += mx;
        sum_floor += fl;
        if (ph != PH_EVAL) sum_step += c->seconds, floor_step += fl;
      }
  /* The exchanges' seconds hold their packs, a row of their own. */
  const double comm_s = t->comm_s - packed, measured = t->step_s + t->eval_s;
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10.3f\n", "mpi waits", "-", "-", "-", 1e3 * comm_s / e,
          1e3 * most[NCELLS + 2] / e);
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10s\n", "untimed", "-", "-", "-",
          1e3 * (measured - sum - comm_s) / e, "");
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10.3f %9s %9s %9.3f %6.2f\n", "ops", "all", "-", "-",
          1e3 * sum / e, 1e3 * sum_max / e, "", "", 1e3 * sum_floor / e,
          sum_floor > 0 ? sum / sum_floor : 0.0);
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10.3f %9s %9s %9.3f %6.2f\n", "step+eval", "all", "-",
          "-", 1e3 * measured / e, 1e3 * (most[NCELLS] + most[NCELLS + 1]) / e, "", "",
          1e3 * sum_floor / e, sum_floor > 0 ? measured / sum_floor : 0.0);
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10.3f %9s %9s %9.3f %6.2f\n", "step", "train", "-", "-",
          1e3 * t->step_s / e, 1e3 * most[NCELLS] / e, "", "", 1e3 * floor_step / e,
          floor_step > 0 ? t->step_s / floor_step : 0.0);
  fprintf(out, "%-16s %-5s %5s %7s %10.3f %10.3f\n", "eval", "eval", "-", "-", 1e3 * t->eval_s / e,
          1e3 * most[NCELLS + 1] / e);
  fprintf(out,
          "page faults: %lld in the first epoch; %.0f per profiled epoch (rank 0), %.0f (max)\n",
          (long long)t->minflt_first, (double)t->minflt_profiled / e, most[NCELLS + 3] / e);
  fflush(out);
done:
  free(mine);
  free(most);
  return st;
}
