/* The backend operations table (private to src/).
 *
 * A backend is a table of function pointers plus its own context, as in
 * ggml's ggml-backend-impl.h.  The trainer allocates every buffer through the
 * table at plan time and calls only table slots in the epoch loop, so a new
 * backend (CUDA) is a new table and nothing else.
 *
 * Slots marked REQUIRED must be set.  OPTIONAL slots may be NULL; the comment
 * says what the caller does then.  An op may decline a case by returning
 * HALO_ERR_UNSUPPORTED where it returns a status; the caller then uses the
 * host path and logs that once.
 *
 * Pointers passed to the compute slots point into buffers allocated by the
 * same backend (so on a device backend they are device pointers); CSR
 * matrices are those returned by csr_upload.  Compute slots are asynchronous
 * with respect to the host on a device backend and complete in order;
 * synchronize waits for them.
 */
#ifndef HALO_BACKEND_IMPL_H
#define HALO_BACKEND_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-gat.h"
#include "halo-spmm.h"
#include "halo-status.h"

/* Where a buffer's bytes live. */
typedef enum { HALO_MEM_HOST = 0, HALO_MEM_DEVICE = 1 } halo_mem_space;

/* A block of memory owned by a backend. */
typedef struct halo_buf {
  void *data; /* host or device pointer, as `space` says */
  size_t bytes;
  halo_mem_space space;
} halo_buf;

/* --- the model ops --------------------------------------------------------
 * Kernels that one model alone uses go through one slot, model_kernel, with
 * an op and its arguments, instead of one slot each: a new model's kernel
 * is a row here, its argument struct, and a case in each backend's
 * model_kernel, and the table does not grow.  The rows: name, and the
 * member of halo_model_call that holds its arguments, a halo_op_<member>.
 * The contracts are those of the CPU kernels named halo_cpu_<member>
 * (kernels/halo-kernels.h).  The arrays are the backend's memory, as for
 * every compute slot; the shape (halo_gat_layer) and the CSR struct from
 * csr_upload are host structs. */
#define HALO_MODEL_OPS(X)           \
  X(GAT_SCORES, gat_scores)         \
  X(GAT_ATTEND, gat_attend)         \
  X(GAT_NODE_TERMS, gat_node_terms) \
  X(GAT_ATTEND_BACKWARD, gat_attend_backward) \
  X(SAGE_MAX, sage_max)                       \
  X(SAGE_MAX_BACKWARD, sage_max_backward)

typedef enum {
#define HALO_MODEL_OP_ENUM(op, member) HALO_OP_##op,
  HALO_MODEL_OPS(HALO_MODEL_OP_ENUM)
#undef HALO_MODEL_OP_ENUM
      HALO_OP_COUNT
} halo_model_op;

/* Op HALO_OP_<op>'s bit in a model_ops mask, and every op's. */
#define HALO_OP_BIT(op) (1u << HALO_OP_##op)
#define HALO_MODEL_OPS_ALL ((uint32_t)((1u << HALO_OP_COUNT) - 1u))

/* GAT's attention (core/halo-gat.h): the per-node scores, the attention
 * forward (softmax and aggregation), the node terms its backward
 * exchanges, and the attention backward. */
typedef struct halo_op_gat_scores {
  const halo_gat_layer *g;
  const float *t; /* rows × K·F */
  int64_t rows;
  const float *a_src, *a_dst; /* K·F each */
  float *s;                   /* rows × 2K */
} halo_op_gat_scores;

typedef struct halo_op_gat_attend {
  const halo_gat_layer *g;
  const halo_csr *adj; /* A + I over the owned rows */
  const int64_t *global_id;
  const float *t, *s;
  float *out, *z, *node;
} halo_op_gat_attend;

typedef struct halo_op_gat_node_terms {
  const halo_gat_layer *g;
  const float *dz, *out;
  int64_t rows;
  float *node;
} halo_op_gat_node_terms;

typedef struct halo_op_gat_attend_backward {
  const halo_gat_layer *g;
  const halo_csr *adj;
  const int64_t *global_id;
  const float *t, *s, *node, *a_src, *a_dst;
  float *dt, *att_grad;
} halo_op_gat_attend_backward;

/* GraphSAGE's max aggregator (halo_cpu_sage_max): out and arg from x over
 * A's rows, and its backward dx from g and the arg-max ids. */
typedef struct halo_op_sage_max {
  const halo_csr *adj; /* A over the owned rows */
  const int64_t *global_id;
  const float *x; /* n_all × cols */
  int64_t cols;
  float *out;   /* n_owned × cols */
  int32_t *arg; /* n_owned × cols, or NULL */
} halo_op_sage_max;

typedef struct halo_op_sage_max_backward {
  const halo_csr *adj;
  const int64_t *global_id;
  const int32_t *arg; /* n_all × cols */
  const float *g;     /* n_all × cols */
  int64_t cols;
  float *dx; /* n_owned × cols */
} halo_op_sage_max_backward;

/* One model op: `op`, and its arguments in the member the row names. */
typedef struct halo_model_call {
  halo_model_op op;
  union {
#define HALO_MODEL_OP_MEMBER(op, member) halo_op_##member member;
    HALO_MODEL_OPS(HALO_MODEL_OP_MEMBER)
#undef HALO_MODEL_OP_MEMBER
  };
} halo_model_call;

typedef struct halo_backend_ops {
  const char *name;
  /* Where buf_alloc puts buffers.  HALO_MEM_HOST (the zero default): MPI and
   * the host read and write them in place, and upload/download stay NULL. */
  halo_mem_space space;
  /* OPTIONAL. Releases be->context (halo_backend_destroy frees be itself). */
  void (*destroy)(halo_backend *be);
  /* OPTIONAL (NULL: host memory, halo_memory_available()).  Bytes free where
   * buf_alloc allocates, and in *pool an id shared by the ranks of a node
   * that draw on the same memory (the GPU's number); -1 when unknown. */
  int64_t (*mem_available)(halo_backend *be, int *pool);

  /* --- memory --------------------------------------------------------- */
  /* REQUIRED. Allocates `bytes` (zeroed) in the backend's space. */
  halo_status (*buf_alloc)(halo_backend *be, size_t bytes, halo_buf *out);
  /* REQUIRED. Frees a buffer from buf_alloc; accepts an empty buffer. */
  void (*buf_free)(halo_backend *be, halo_buf *buf);
  /* OPTIONAL (NULL: buffers are host memory and are used in place).
   * Host -> buffer and buffer -> host copies, complete on return. */
  halo_status (*upload)(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                        size_t bytes);
  halo_status (*download)(halo_backend *be, void *dst, const halo_buf *src, size_t offset,
                          size_t bytes);
  /* OPTIONAL (NULL: the host CSR is used as it is). Copies a host CSR into
   * the backend; csr_free releases the copy. */
  halo_status (*csr_upload)(halo_backend *be, const halo_csr *host, halo_csr *out);
  void (*csr_free)(halo_backend *be, halo_csr *dev);
  /* OPTIONAL (NULL: every op is complete on return).  Waits for the queued
   * work and returns the first failure of any compute slot since the last
   * call (compute slots return nothing: a device backend records a failed
   * launch or a kernel fault and reports it here). */
  halo_status (*synchronize)(halo_backend *be);

  /* --- MPI staging (device backends) ------------------------------------ */
  /* OPTIONAL (NULL: no).  1 when MPI may be handed this backend's buffers
   * directly (CUDA-aware MPI); the halo exchange then sends and receives in
   * place, after a synchronize.  Otherwise it stages rows through host
   * buffers from host_alloc. */
  int (*mpi_takes_device)(halo_backend *be);
  /* OPTIONAL (NULL: calloc/free).  Zeroed host memory that the backend copies
   * to and from fastest (pinned memory on a GPU).  host_free accepts *p ==
   * NULL.  Callers go through halo__backend_host_alloc/free (below), which
   * take the fallback and always leave *p NULL. */
  halo_status (*host_alloc)(halo_backend *be, size_t bytes, void **out);
  void (*host_free)(halo_backend *be, void **p);

  /* --- the copy stream (device backends) --------------------------------
   * OPTIONAL, all five or none (NULL: the staged halo exchange copies with
   * download and upload, which complete on return, so the copies and the
   * MPI wait cannot overlap compute).  A second queue beside the one the
   * compute slots run on: copies queued on it run while compute work runs.
   * Work on either queue is ordered after the earlier work on the same
   * queue, and after work on the other queue only through the two fences:
   *   copy_wait_compute   copies queued after it start once the compute
   *                       work queued before it has finished; returns (and
   *                       forgets) the first failure of a compute slot
   *                       recorded since the last synchronize, as download
   *                       would have;
   *   compute_wait_copy   compute work queued after it starts once the
   *                       copies queued before it have finished.
   * copy_download/copy_upload queue one copy between a buffer and host
   * memory from host_alloc, and return at once: the host memory must be
   * left alone until copy_synchronize, which waits on the host for every
   * copy queued so far (not for compute work) and returns the first failure
   * among them. */
  halo_status (*copy_wait_compute)(halo_backend *be);
  halo_status (*copy_download)(halo_backend *be, void *dst, const halo_buf *src, size_t offset,
                               size_t bytes);
  halo_status (*copy_upload)(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                             size_t bytes);
  halo_status (*copy_synchronize)(halo_backend *be);
  halo_status (*compute_wait_copy)(halo_backend *be);

  /* --- dense ops (REQUIRED); same contracts as kernels/halo-kernels.h -- */
  void (*gemm)(halo_backend *be, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
               float *c, int64_t ldc);
  void (*bias_add)(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *bias);
  void (*colsum)(halo_backend *be, const float *g, int64_t rows, int64_t cols, float *out);
  void (*relu)(halo_backend *be, float *y, int64_t n);
  void (*relu_backward)(halo_backend *be, float *g, const float *y, int64_t n);
  void (*dropout)(halo_backend *be, float *y, int64_t rows, int64_t cols, const int64_t *global_id,
                  uint64_t key, float p);
  /* OPTIONAL (NULL: copy, then dropout). dst = dropout(src), the mask of
   * `dropout`, in one pass; dst and src do not overlap. */
  void (*dropout_to)(halo_backend *be, float *dst, const float *src, int64_t rows, int64_t cols,
                     const int64_t *global_id, uint64_t key, float p);
  /* OPTIONAL (NULL: dropout_to, then max_abs). dropout_to, returning
   * max |dst| as max_abs reports it, from the same pass: --deterministic's
   * bound of a block of the dropped input. */
  float (*dropout_to_max)(halo_backend *be, float *dst, const float *src, int64_t rows,
                          int64_t cols, const int64_t *global_id, uint64_t key, float p);
  /* loss_sum and correct are host scalars; g may be NULL. */
  void (*softmax_xent)(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                       const int32_t *labels, const int32_t *mask, int64_t nmask, float grad_scale,
                       float *g, double *loss_sum, int64_t *correct);
  /* OPTIONAL (multi-label models only): binary cross-entropy with logits
   * over int8 targets (halo_cpu_sigmoid_bce); host scalars as above. */
  void (*sigmoid_bce)(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                      const int8_t *targets, const int32_t *mask, int64_t nmask, float grad_scale,
                      float *g, double *loss_sum, int64_t *correct);
  void (*adam)(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n, float lr,
               float b1, float b2, float eps, float wd, int64_t t);
  /* OPTIONAL (NULL: --optimizer adamw, --optimizer sgd and --clip-grad-norm
   * are refused, with one line, on a backend without them).  AdamW's and
   * SGD's steps (halo_cpu_adamw, halo_cpu_sgd; buf may be NULL when mu is
   * 0), and x = x·s, which scales the gradients to their clipped norm. */
  void (*adamw)(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n, float lr,
                float b1, float b2, float eps, float wd, int64_t t);
  void (*sgd)(halo_backend *be, float *w, const float *g, float *buf, int64_t n, float lr, float mu,
              float wd, int nesterov);
  void (*scale)(halo_backend *be, float *x, int64_t n, float s);
  void (*copy)(halo_backend *be, float *dst, const float *src, int64_t n);
  /* dst[i, :] = src[idx[i], :]; dst and src are both backend buffers. */
  void (*pack)(halo_backend *be, float *dst, const float *src, int64_t cols, const int32_t *idx,
               int64_t n);
  /* OPTIONAL (NULL: a low-bit exchange, --halo-precision, is refused with
   * one line on this backend).  Low-bit halo rows (core/halo-quant.h), the
   * contracts of halo_cpu_quant_pack and halo_cpu_quant_unpack, the same
   * bytes on every backend; dst, src, idx and gid are the backend's memory. */
  void (*quant_pack)(halo_backend *be, uint8_t *dst, const float *src, int64_t cols,
                     const int32_t *idx, const int64_t *gid, int64_t n, int prec, uint64_t key);
  void (*quant_unpack)(halo_backend *be, float *dst, const uint8_t *src, int64_t cols, int64_t n,
                       int prec);

  /* --- ops of the models past GCN (OPTIONAL: a model that needs one is
   * refused, with one line, on a backend without it) ---------------------
   * y += (alpha + (p ? *p : 0))·x, with p in the backend's memory (GIN's ε);
   * ELU and its backward from the output; rows divided by their L2 norms,
   * the norms kept for the backward (GraphSAGE's normalize). */
  void (*axpy)(halo_backend *be, float *y, const float *x, int64_t n, float alpha, const float *p);
  void (*elu)(halo_backend *be, float *y, int64_t n);
  void (*elu_backward)(halo_backend *be, float *g, const float *y, int64_t n);
  /* LeakyReLU and its backward from the output (halo_cpu_leaky_relu). */
  void (*leaky_relu)(halo_backend *be, float *y, int64_t n, float slope);
  void (*leaky_relu_backward)(halo_backend *be, float *g, const float *y, int64_t n, float slope);
  /* GELU out of place, and its backward from the input (halo_cpu_gelu_to). */
  void (*gelu_to)(halo_backend *be, float *y, const float *x, int64_t n);
  void (*gelu_backward)(halo_backend *be, float *g, const float *x, int64_t n);
  void (*l2_normalize)(halo_backend *be, float *y, int64_t rows, int64_t cols, float *norm);
  void (*l2_normalize_backward)(halo_backend *be, float *g, const float *y, const float *norm,
                                int64_t rows, int64_t cols);
  /* LayerNorm per row (--norm layer) and its backward; an elementwise
   * product (dgamma's terms). */
  void (*layernorm)(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *gamma,
                    const float *beta, float *xhat, float *rstd);
  void (*layernorm_backward)(halo_backend *be, float *g, const float *xhat, const float *rstd,
                             const float *gamma, int64_t rows, int64_t cols);
  void (*mul)(halo_backend *be, float *out, const float *a, const float *b, int64_t n);
  /* BatchNorm (--norm batch): OPTIONAL, the three together, as
   * halo_cpu_bn_sums, halo_cpu_batchnorm and halo_cpu_batchnorm_backward.
   * Their per-column arrays (sx, sxy; shift, scale, a, b) are host memory,
   * bn_sums is complete on return, and the others have read theirs by then
   * (the caller reuses them at once).  A backend without them has the
   * model refused at set-up (net-setup.c). */
  void (*bn_sums)(halo_backend *be, const float *x, const float *y, int64_t rows, int64_t cols,
                  double *sx, double *sxy);
  void (*batchnorm)(halo_backend *be, float *y, int64_t rows, int64_t cols, const double *shift,
                    const double *scale, const float *gamma, const float *beta, float *xhat);
  void (*batchnorm_backward)(halo_backend *be, float *g, const float *xhat, int64_t rows,
                             int64_t cols, const float *gamma, const double *scale,
                             const double *a, const double *b);
  /* The model ops (halo_model_call, above): OPTIONAL, each by its bit of
   * model_ops (NULL / 0: none).  Runs call->op on its arguments and returns
   * at once, as the other compute slots do. */
  uint32_t model_ops;
  void (*model_kernel)(halo_backend *be, const halo_model_call *call);

  /* --- deterministic ops (OPTIONAL: --deterministic needs them all) ------
   * The contracts of halo_cpu_gemm_rows (kernels/halo-kernels.h) and of the
   * exact sums (kernels/halo-exact.h): results that do not depend on how
   * rows are split among ranks and threads, with the CPU's bits (the
   * integers of the exact sums, the floats of gemm_rows).  A and B are the
   * backend's memory; acc is host memory and holds the result on return
   * (the slot waits for it), and so does max_abs's float.  `work` is a host
   * workspace of the size halo-exact.h gives for `threads` on a host
   * backend (a device backend has its own, and gets NULL).  The CPU and
   * CUDA backends have them; a backend without them makes --deterministic
   * refuse to start. */
  void (*gemm_rows)(halo_backend *be, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                    int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);
  float (*max_abs)(halo_backend *be, const float *x, int64_t n);
  void (*exact_tn)(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                   const float *b, int64_t ldb, int e, int threads, void *work, int64_t *acc);
  void (*exact_csr)(halo_backend *be, const halo_csr *at, const float *b, int64_t bc, int64_t ldb,
                    int e, int threads, void *work, int64_t *acc);
  /* A host backend's (the CPU's; --deterministic needs all three of one,
   * and a device backend has none): the exact sums of the gradients written
   * PACKED, one int64 a sum (halo_exact_pack's form, which their grids leave
   * room for), so that the gradients need no pack before their allreduce.
   * exact_tn_ones: exact_tn (A may be NULL) and, where A is not NULL and
   * acc1 is, the column sums of B on the grid e1 into acc1, in one pass
   * over B: a weight's gradient with its bias's.
   * exact_tn_dropped: the same of A = dropout(X) (n × ac, lda ac; the mask
   * of dropout_to) with no dropped copy of X; needed where the input
   * dropout is fused (gnn_bufs_input_fused: the CPU's), whose terms read X
   * itself.
   * exact_csr_perm: exact_csr of `at` with the value of non-zero k read as
   * values[perm[k]] (perm NULL: values[k]): Sᵀ's sum from S's dropped
   * values (halo_csr_transpose_perm). */
  void (*exact_tn_ones)(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                        int64_t lda, const float *b, int64_t ldb, int e, int threads, void *work,
                        int64_t *acc, int e1, int64_t *acc1);
  void (*exact_tn_dropped)(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *x,
                           const int64_t *global_id, uint64_t key, float p, const float *b,
                           int64_t ldb, int e, int threads, void *work, int64_t *acc, int e1,
                           int64_t *acc1);
  void (*exact_csr_perm)(halo_backend *be, const halo_csr *at, const float *values,
                         const int32_t *perm, const float *b, int64_t bc, int64_t ldb, int e,
                         int threads, void *work, int64_t *acc);

  /* --- sparse ops (REQUIRED) -------------------------------------------- */
  /* Y[rows] = A[rows, :] · X (+ beta·Y), as halo_spmm_cpu.  A product that
   * was not declared through spmm_prepare sums each row's terms in CSR
   * order, so that a row's result depends on that row and X alone, not on
   * the matrix's other rows (deterministic mode declares none). */
  void (*spmm)(halo_backend *be, const halo_csr *a, const float *x, int64_t ldx, int64_t ncols,
               float beta, float *y, int64_t ldy, const int32_t *rows, int64_t nrows);
  /* OPTIONAL (NULL: nothing to prepare).  Declares at set-up a product the
   * epoch loop will ask spmm for: rows == NULL, rows [0, nrows) of `a`, and
   * X, Y packed with `ncols` columns (ldx = ldy = ncols).  `a` comes from
   * csr_upload, or is a row view of such a matrix (indptr moved forward,
   * indices and values shared).  A device backend builds its library's
   * descriptors and workspace here, so that the epoch loop allocates
   * nothing; the matrix is known by its indptr and indices, and spmm may
   * pass another values array of the same length (dropped values).
   * Products never declared still run, on the backend's own kernel.  The
   * preparation lives until csr_free of the matrix (a view's: of the matrix it
   * views). Local. */
  halo_status (*spmm_prepare)(halo_backend *be, const halo_csr *a, int64_t nrows, int64_t ncols);
  /* Keyed dropout of a sparse matrix's values, the mask of `dropout` seen
   * through the sparsity pattern:
   *   out[k] = a.values[k] · keep(node, col) / (1 - p)
   * where (node, col) = (global_id[r], indices[k]) for the nonzero k of row r,
   * or (global_id[indices[k]], r) when `transposed` (A holds Xᵀ). */
  void (*csr_dropout)(halo_backend *be, const halo_csr *a, int transposed, const int64_t *global_id,
                      uint64_t key, float p, float *out);
} halo_backend_ops;

struct halo_backend {
  const halo_backend_ops *ops;
  void *context;         /* the backend's own state (a CUDA stream, handles) */
  char description[160]; /* for halo_backend_describe; empty: the name */
};

/* Host staging memory from ops->host_alloc, or calloc; `what` names it in
 * the error line.  halo__backend_host_free accepts *p == NULL and sets it to
 * NULL. Local. */
halo_status halo__backend_host_alloc(halo_backend *be, size_t bytes, const char *what, void **p);
void halo__backend_host_free(halo_backend *be, void **p);

/* Whether the table has model op `op`; every op of the mask `ops_needed`. */
static inline int halo__backend_has_op(const halo_backend_ops *ops, halo_model_op op) {
  return ops->model_kernel && (ops->model_ops >> op & 1u);
}
static inline int halo__backend_has_ops(const halo_backend_ops *ops, uint32_t ops_needed) {
  return (ops->model_kernel ? ops->model_ops & ops_needed : 0) == ops_needed;
}

/* The CPU backend's table (backend-cpu.c). */
extern const halo_backend_ops halo__backend_cpu_ops;

#ifdef HALO_HAVE_CUDA
/* The CUDA backend (backend-cuda.c): selects the device of o->local_rank,
 * creates its stream and library handles, and fills *be.  On failure *be may
 * hold a partial context, which halo_backend_destroy releases. Local. */
halo_status halo__backend_cuda_init(const halo_backend_options *o, halo_backend *be);

/* Why no CUDA device can be used here (halo_backend_problem's sentence), or
 * NULL when one can. Local. */
const char *halo__backend_cuda_problem(void);
#endif

#endif /* HALO_BACKEND_IMPL_H */
