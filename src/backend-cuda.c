/* The CUDA backend: buffers in device memory, every slot forwarded to the
 * CUDA twins of kernels/ (halo-kernels-cuda.h) and spmm/ (halo-spmm-cuda.h),
 * all enqueued on one stream of the rank's GPU.
 *
 * Compute slots return nothing, so a failed launch is recorded in the
 * context and the next synchronize reports it (with a kernel fault, which
 * surfaces there anyway): the trainer synchronizes once per step, before the
 * gradient allreduce.  A failure at set-up is agreed on like any other; one
 * in the epoch loop ends the job through MPI_Abort, as every failure there
 * does (a peer may be waiting in an exchange).
 *
 * MPI: with a CUDA-aware MPI the halo exchange hands device buffers to MPI
 * directly; otherwise it stages rows through pinned host buffers from
 * host_alloc, with its copies on a second stream (the copy_* slots) so that
 * they overlap the interior SpMM; halo-exchange.c argues the order.
 * halo_backend_options.mpi overrides what MPI reports (for an MPI that is
 * CUDA-aware without saying so, or to compare; halo-train takes it from
 * HALO_CUDA_AWARE).
 *
 * SpMM: the products the trainer declares at set-up (spmm_prepare) run as
 * cuSPARSE SpMM (generic API, CSR_ALG2: deterministic, made for row-major
 * dense matrices), each matrix with its descriptors and workspace planned
 * once (halo_spmm_cuda_plan_create_device, on the device copy of the
 * matrix: no second copy of its columns or values, unless a block starts at
 * an address cuSPARSE cannot take, see cuda-spmm.cu).  The rest take halo's
 * row kernel: products over row lists, products never declared (the
 * set-up's ÂX), and products whose X or Y is not 16-byte aligned (the
 * boundary rows' view of Y at an odd offset), since cuSPARSE documents no
 * behaviour for those.  halo_backend_options.spmm = HALO_BACKEND_SPMM_ROWS
 * (halo-train: HALO_CUDA_SPMM=rows) sends every product to the row kernel;
 * HALO_BACKEND_SPMM_CUSPARSE, the default, is as described.
 *
 * Deterministic mode (--deterministic): gemm_rows, max_abs and the exact
 * sums run as kernels/cuda-exact.cu, which gives the CPU's bits; the exact
 * sums' results come back through a 1 MiB device buffer and its pinned
 * copy, 2^16 cells at a time, and become the limbs the gradient allreduce
 * adds.  The trainer declares no product then, so every SpMM takes the row
 * kernel, whose rows sum in CSR order.
 *
 * Plain C: no CUDA header is included here.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"
#include "halo-exact.h"
#include "halo-kernels-cuda.h"
#include "halo-mpi.h"
#include "halo-spmm-cuda.h"

/* A product declared by spmm_prepare: rows [0, nrows) of the matrix whose
 * device arrays are indptr and indices, planned for cuSPARSE. */
typedef struct spmm_entry {
  const int64_t *indptr;
  const int32_t *indices;
  int64_t nrows;
  halo_spmm_cuda_plan *plan; /* borrows the matrix's columns and values */
} spmm_entry;

typedef struct cuda_ctx {
  int device;
  int location;        /* the GPU's PCI location: its memory pool among a node's ranks */
  void *stream;        /* cudaStream_t: every compute slot */
  void *copy_stream;   /* cudaStream_t: the staged halo exchange's copies */
  void *copy_event;    /* orders the copy stream after the compute stream */
  void *compute_event; /* orders the compute stream after the copy stream */
  int spmm_rows;       /* HALO_BACKEND_SPMM_ROWS: no cuSPARSE */
  spmm_entry *spmm;    /* size nspmm */
  int nspmm;
  void *blas;        /* cublasHandle_t */
  int mpi_device;    /* 1: MPI takes device pointers */
  halo_status error; /* first failure of a compute slot since the last synchronize */
  /* softmax_xent's device results and their pinned host copies */
  void *scalars;      /* device: double loss, int64_t correct */
  void *host_scalars; /* pinned */
  void *colsum_work;  /* device, HALO_CUDA_COLSUM_WORK_BYTES */
  void *softmax_work; /* device, HALO_CUDA_SOFTMAX_WORK_BYTES: the loss's counters */
  /* The exact sums' results, EXACT_CELLS pairs and a max_abs word, on the
   * device and their pinned host copy. */
  void *exact;
  void *host_exact;
  /* The dense sums' row directions (halo_cuda_exact_row_dirs), a byte a
   * row, grown to the longest call. */
  void *exact_dirs;
  int64_t exact_dirs_rows;
  /* BatchNorm's per-column doubles on the device (the host's arrays of
   * gnn-batchnorm.c, uploaded), grown to the widest call. */
  void *bn_cols;
  size_t bn_cols_bytes;
} cuda_ctx;

/* Cells of one exact-sum launch: its pairs fill 1 MiB. */
enum { EXACT_CELLS = 1 << 16 };
static const size_t EXACT_BYTES = (size_t)EXACT_CELLS * 2 * sizeof(int64_t) + 16;

static cuda_ctx *ctx_of(halo_backend *be) { return be->context; }

/* Keeps the first failure for synchronize. */
static void note(halo_backend *be, halo_status st) {
  cuda_ctx *c = ctx_of(be);
  if (st < 0 && c->error == HALO_OK) c->error = st;
}

/* Waits for the queued work and returns the first failure since the last
 * call: a recorded launch failure, else a fault the stream reports. */
static halo_status cuda_synchronize(halo_backend *be) {
  cuda_ctx *c = ctx_of(be);
  halo_status st = halo_cuda_stream_synchronize(c->stream);
  if (c->error < 0) st = c->error;
  c->error = HALO_OK;
  return st;
}

/* --- memory ------------------------------------------------------------- */

static int64_t cuda_mem_available(halo_backend *be, int *pool) {
  size_t free_bytes = 0, total = 0;
  *pool = ctx_of(be)->location;
  if (halo_cuda_mem_info(&free_bytes, &total) != HALO_OK) return -1;
  return (int64_t)free_bytes;
}

static halo_status cuda_buf_alloc(halo_backend *be, size_t bytes, halo_buf *out) {
  (void)be;
  void *p = NULL;
  halo_status st = halo_cuda_malloc(&p, bytes, "a training buffer");
  if (st == HALO_OK) *out = (halo_buf){.data = p, .bytes = bytes, .space = HALO_MEM_DEVICE};
  return st;
}

static void cuda_buf_free(halo_backend *be, halo_buf *buf) {
  (void)be;
  halo_cuda_free(&buf->data);
  *buf = (halo_buf){0};
}

static halo_status check_range(const halo_buf *b, size_t offset, size_t bytes, const char *op) {
  if (offset > b->bytes || bytes > b->bytes - offset) {
    halo_log_error("cuda %s: bytes [%zu, %zu) outside a %zu-byte buffer", op, offset,
                   offset + bytes, b->bytes);
    return HALO_ERR_ARG;
  }
  return HALO_OK;
}

/* Copies complete on return (the contract of the slots), so that the host
 * side may be reused or read at once. */
static halo_status cuda_upload(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                               size_t bytes) {
  halo_status st = HALO_OK;
  if (bytes == 0) return HALO_OK;
  HALO_TRY(check_range(dst, offset, bytes, "upload"));
  HALO_TRY(halo_cuda_memcpy((char *)dst->data + offset, src, bytes, ctx_of(be)->stream));
  HALO_TRY(cuda_synchronize(be));
done:
  return st;
}

static halo_status cuda_download(halo_backend *be, void *dst, const halo_buf *src, size_t offset,
                                 size_t bytes) {
  halo_status st = HALO_OK;
  if (bytes == 0) return HALO_OK;
  HALO_TRY(check_range(src, offset, bytes, "download"));
  HALO_TRY(halo_cuda_memcpy(dst, (const char *)src->data + offset, bytes, ctx_of(be)->stream));
  HALO_TRY(cuda_synchronize(be)); /* also reports a failed launch queued before */
done:
  return st;
}

/* Releases the cuSPARSE plans over `dev` (and over row views of it), which
 * borrow its arrays; queued work must finish first. */
static void spmm_release(halo_backend *be, const halo_csr *dev) {
  cuda_ctx *c = ctx_of(be);
  int kept = 0;
  if (c->nspmm > 0) (void)halo_cuda_stream_synchronize(c->stream);
  for (int i = 0; i < c->nspmm; i++) {
    spmm_entry *e = &c->spmm[i];
    const uintptr_t first = (uintptr_t)dev->indptr, at = (uintptr_t)e->indptr;
    if (at >= first && at <= first + (uintptr_t)dev->rows * sizeof(int64_t))
      halo_spmm_cuda_plan_destroy(&e->plan);
    else
      c->spmm[kept++] = *e;
  }
  c->nspmm = kept;
}

static void cuda_csr_free(halo_backend *be, halo_csr *dev) {
  if (dev->indptr) spmm_release(be, dev);
  halo_cuda_free((void **)&dev->indptr);
  halo_cuda_free((void **)&dev->indices);
  halo_cuda_free((void **)&dev->values);
  *dev = (halo_csr){0};
}

/* A device copy in halo_csr's own layout; values are always stored (ones
 * when the host matrix has none), as the device kernels read them. */
static halo_status cuda_csr_upload(halo_backend *be, const halo_csr *host, halo_csr *out) {
  halo_status st = HALO_OK;
  void *stream = ctx_of(be)->stream;
  float *ones = NULL;
  halo_csr dev = {.rows = host->rows, .cols = host->cols, .nnz = host->nnz};
  const size_t ptr_bytes = (size_t)(host->rows + 1) * sizeof(int64_t);
  const size_t idx_bytes = (size_t)host->nnz * sizeof(int32_t);
  const size_t val_bytes = (size_t)host->nnz * sizeof(float);
  *out = (halo_csr){0};

  HALO_TRY(halo_cuda_malloc((void **)&dev.indptr, ptr_bytes, "a sparse matrix's row offsets"));
  HALO_TRY(halo_cuda_malloc((void **)&dev.indices, idx_bytes, "a sparse matrix's columns"));
  HALO_TRY(halo_cuda_malloc((void **)&dev.values, val_bytes, "a sparse matrix's values"));
  const float *values = host->values;
  if (!values && host->nnz > 0) {
    HALO_ALLOC(ones, host->nnz, "sparse matrix values");
    for (int64_t k = 0; k < host->nnz; k++) ones[k] = 1.0f;
    values = ones;
  }
  HALO_TRY(halo_cuda_memcpy(dev.indptr, host->indptr, ptr_bytes, stream));
  if (host->nnz > 0) {
    HALO_TRY(halo_cuda_memcpy(dev.indices, host->indices, idx_bytes, stream));
    HALO_TRY(halo_cuda_memcpy(dev.values, values, val_bytes, stream));
  }
  HALO_TRY(halo_cuda_stream_synchronize(stream));
  *out = dev;
  dev = (halo_csr){0};
done:
  free(ones);
  cuda_csr_free(be, &dev);
  return st;
}

/* --- MPI staging -------------------------------------------------------- */

static int cuda_mpi_takes_device(halo_backend *be) { return ctx_of(be)->mpi_device; }

/* The copy stream.  Copies between device and pinned memory are
 * asynchronous, so these return at once (halo_cuda_memcpy). */

static halo_status cuda_copy_wait_compute(halo_backend *be) {
  cuda_ctx *c = ctx_of(be);
  halo_status st = halo_cuda_stream_wait(c->copy_stream, c->stream, c->copy_event);
  if (c->error < 0) st = c->error; /* a failed launch queued before, as download reports */
  c->error = HALO_OK;
  return st;
}

static halo_status cuda_copy_download(halo_backend *be, void *dst, const halo_buf *src,
                                      size_t offset, size_t bytes) {
  halo_status st = HALO_OK;
  if (bytes == 0) return HALO_OK;
  HALO_TRY(check_range(src, offset, bytes, "copy_download"));
  HALO_TRY(halo_cuda_memcpy(dst, (const char *)src->data + offset, bytes, ctx_of(be)->copy_stream));
done:
  return st;
}

static halo_status cuda_copy_upload(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                                    size_t bytes) {
  halo_status st = HALO_OK;
  if (bytes == 0) return HALO_OK;
  HALO_TRY(check_range(dst, offset, bytes, "copy_upload"));
  HALO_TRY(halo_cuda_memcpy((char *)dst->data + offset, src, bytes, ctx_of(be)->copy_stream));
done:
  return st;
}

/* The host waits for the copy stream only, never for the whole device. */
static halo_status cuda_copy_synchronize(halo_backend *be) {
  return halo_cuda_stream_synchronize(ctx_of(be)->copy_stream);
}

static halo_status cuda_compute_wait_copy(halo_backend *be) {
  cuda_ctx *c = ctx_of(be);
  return halo_cuda_stream_wait(c->stream, c->copy_stream, c->compute_event);
}

static halo_status cuda_host_alloc(halo_backend *be, size_t bytes, void **out) {
  (void)be;
  return halo_cuda_malloc_host(out, bytes, "pinned halo staging");
}

static void cuda_host_free(halo_backend *be, void **p) {
  (void)be;
  halo_cuda_free_host(p);
}

/* --- dense ops ----------------------------------------------------------- */

static void cuda_gemm(halo_backend *be, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                      float beta, float *c, int64_t ldc) {
  cuda_ctx *x = ctx_of(be);
  note(be, halo_cuda_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, x->blas,
                          x->stream));
}

static void cuda_bias_add(halo_backend *be, float *y, int64_t rows, int64_t cols,
                          const float *bias) {
  note(be, halo_cuda_bias_add(y, rows, cols, bias, ctx_of(be)->stream));
}

static void cuda_colsum(halo_backend *be, const float *g, int64_t rows, int64_t cols, float *out) {
  cuda_ctx *c = ctx_of(be);
  note(be, halo_cuda_colsum(g, rows, cols, out, c->colsum_work, c->stream));
}

static void cuda_relu(halo_backend *be, float *y, int64_t n) {
  note(be, halo_cuda_relu(y, n, ctx_of(be)->stream));
}

static void cuda_relu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  note(be, halo_cuda_relu_backward(g, y, n, ctx_of(be)->stream));
}

static void cuda_axpy(halo_backend *be, float *y, const float *x, int64_t n, float alpha,
                      const float *p) {
  note(be, halo_cuda_axpy(y, x, n, alpha, p, ctx_of(be)->stream));
}

static void cuda_elu(halo_backend *be, float *y, int64_t n) {
  note(be, halo_cuda_elu(y, n, ctx_of(be)->stream));
}

static void cuda_elu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  note(be, halo_cuda_elu_backward(g, y, n, ctx_of(be)->stream));
}

static void cuda_leaky_relu(halo_backend *be, float *y, int64_t n, float slope) {
  note(be, halo_cuda_leaky_relu(y, n, slope, ctx_of(be)->stream));
}

static void cuda_gelu_to(halo_backend *be, float *y, const float *x, int64_t n) {
  note(be, halo_cuda_gelu_to(y, x, n, ctx_of(be)->stream));
}

static void cuda_gelu_backward(halo_backend *be, float *g, const float *x, int64_t n) {
  note(be, halo_cuda_gelu_backward(g, x, n, ctx_of(be)->stream));
}

static void cuda_leaky_relu_backward(halo_backend *be, float *g, const float *y, int64_t n,
                                     float slope) {
  note(be, halo_cuda_leaky_relu_backward(g, y, n, slope, ctx_of(be)->stream));
}

static void cuda_l2_normalize(halo_backend *be, float *y, int64_t rows, int64_t cols, float *norm) {
  note(be, halo_cuda_l2_normalize(y, rows, cols, norm, ctx_of(be)->stream));
}

static void cuda_l2_normalize_backward(halo_backend *be, float *g, const float *y,
                                       const float *norm, int64_t rows, int64_t cols) {
  note(be, halo_cuda_l2_normalize_backward(g, y, norm, rows, cols, ctx_of(be)->stream));
}

static void cuda_layernorm(halo_backend *be, float *y, int64_t rows, int64_t cols,
                           const float *gamma, const float *beta, float *xhat, float *rstd) {
  note(be, halo_cuda_layernorm(y, rows, cols, gamma, beta, xhat, rstd, ctx_of(be)->stream));
}

static void cuda_layernorm_backward(halo_backend *be, float *g, const float *xhat,
                                    const float *rstd, const float *gamma, int64_t rows,
                                    int64_t cols) {
  note(be, halo_cuda_layernorm_backward(g, xhat, rstd, gamma, rows, cols, ctx_of(be)->stream));
}

/* --- BatchNorm -----------------------------------------------------------
 * The slots take per-column host arrays (halo-backend-impl.h): they travel
 * through bn_cols, enqueued on the stream.  An upload from pageable host
 * memory returns once CUDA has staged the source, so the caller may reuse
 * its arrays at once.  bn_cols grows to the widest call (the first epoch's
 * calls, one per width), after the stream has drained, since queued kernels
 * may still read the old one. */
static halo_status bn_cols(cuda_ctx *c, int64_t rows, int64_t cols, int per, double **out) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) {
    halo_log_error("cuda BatchNorm: a negative size (%lld x %lld)", (long long)rows,
                   (long long)cols);
    return HALO_ERR_ARG;
  }
  const size_t bytes = (size_t)(per * cols) * sizeof(double);
  if (bytes > c->bn_cols_bytes) {
    HALO_TRY(halo_cuda_stream_synchronize(c->stream));
    halo_cuda_free(&c->bn_cols);
    c->bn_cols_bytes = 0;
    HALO_TRY(halo_cuda_malloc(&c->bn_cols, bytes, "BatchNorm's column statistics"));
    c->bn_cols_bytes = bytes;
  }
  *out = c->bn_cols;
done:
  return st;
}

/* The sums come back at once (the allreduce needs them), so this slot
 * waits; a failure gives NaN sums and is kept for synchronize. */
static void cuda_bn_sums(halo_backend *be, const float *x, const float *y, int64_t rows,
                         int64_t cols, double *sx, double *sxy) {
  cuda_ctx *c = ctx_of(be);
  halo_status st = HALO_OK;
  double *d = NULL;
  const size_t bytes = (size_t)cols * sizeof(double);
  HALO_TRY(bn_cols(c, rows, cols, 2, &d));
  HALO_TRY(halo_cuda_bn_sums(x, y, rows, cols, d, d + cols, c->colsum_work, c->stream));
  HALO_TRY(halo_cuda_memcpy(sx, d, bytes, c->stream));
  HALO_TRY(halo_cuda_memcpy(sxy, d + cols, bytes, c->stream));
  HALO_TRY(halo_cuda_stream_synchronize(c->stream));
done:
  if (st != HALO_OK)
    for (int64_t k = 0; k < cols; k++) sx[k] = sxy[k] = NAN;
  note(be, st);
}

static void cuda_batchnorm(halo_backend *be, float *y, int64_t rows, int64_t cols,
                           const double *shift, const double *scale, const float *gamma,
                           const float *beta, float *xhat) {
  cuda_ctx *c = ctx_of(be);
  halo_status st = HALO_OK;
  double *d = NULL;
  const size_t bytes = (size_t)cols * sizeof(double);
  HALO_TRY(bn_cols(c, rows, cols, 2, &d));
  HALO_TRY(halo_cuda_memcpy(d, shift, bytes, c->stream));
  HALO_TRY(halo_cuda_memcpy(d + cols, scale, bytes, c->stream));
  HALO_TRY(halo_cuda_batchnorm(y, rows, cols, d, d + cols, gamma, beta, xhat, c->stream));
done:
  note(be, st);
}

static void cuda_batchnorm_backward(halo_backend *be, float *g, const float *xhat, int64_t rows,
                                    int64_t cols, const float *gamma, const double *scale,
                                    const double *a, const double *b) {
  cuda_ctx *c = ctx_of(be);
  halo_status st = HALO_OK;
  double *d = NULL;
  const size_t bytes = (size_t)cols * sizeof(double);
  HALO_TRY(bn_cols(c, rows, cols, 3, &d));
  HALO_TRY(halo_cuda_memcpy(d, scale, bytes, c->stream));
  HALO_TRY(halo_cuda_memcpy(d + cols, a, bytes, c->stream));
  HALO_TRY(halo_cuda_memcpy(d + 2 * cols, b, bytes, c->stream));
  HALO_TRY(halo_cuda_batchnorm_backward(g, xhat, rows, cols, gamma, d, d + cols, d + 2 * cols,
                                        c->stream));
done:
  note(be, st);
}

static void cuda_mul(halo_backend *be, float *out, const float *a, const float *b, int64_t n) {
  note(be, halo_cuda_mul(out, a, b, n, ctx_of(be)->stream));
}

/* The model ops: each case unpacks its arguments into its kernel. */
static void cuda_model_kernel(halo_backend *be, const halo_model_call *c) {
  void *stream = ctx_of(be)->stream;
  halo_status st = HALO_ERR_UNSUPPORTED; /* an op past this table's model_ops */
  switch (c->op) {
    case HALO_OP_GAT_SCORES: {
      const halo_op_gat_scores *a = &c->gat_scores;
      st = halo_cuda_gat_scores(a->g, a->t, a->rows, a->a_src, a->a_dst, a->s, stream);
      break;
    }
    case HALO_OP_GAT_ATTEND: {
      const halo_op_gat_attend *a = &c->gat_attend;
      st = halo_cuda_gat_attend(a->g, a->adj, a->global_id, a->t, a->s, a->out, a->z, a->node,
                                stream);
      break;
    }
    case HALO_OP_GAT_NODE_TERMS: {
      const halo_op_gat_node_terms *a = &c->gat_node_terms;
      st = halo_cuda_gat_node_terms(a->g, a->dz, a->out, a->rows, a->node, stream);
      break;
    }
    case HALO_OP_GAT_ATTEND_BACKWARD: {
      const halo_op_gat_attend_backward *a = &c->gat_attend_backward;
      st = halo_cuda_gat_attend_backward(a->g, a->adj, a->global_id, a->t, a->s, a->node, a->a_src,
                                         a->a_dst, a->dt, a->att_grad, stream);
      break;
    }
    case HALO_OP_SAGE_MAX: {
      const halo_op_sage_max *a = &c->sage_max;
      st = halo_cuda_sage_max(a->adj, a->global_id, a->x, a->cols, a->out, a->arg, stream);
      break;
    }
    case HALO_OP_SAGE_MAX_BACKWARD: {
      const halo_op_sage_max_backward *a = &c->sage_max_backward;
      st = halo_cuda_sage_max_backward(a->adj, a->global_id, a->arg, a->g, a->cols, a->dx, stream);
      break;
    }
    case HALO_OP_COUNT:
      break;
  }
  note(be, st);
}

static void cuda_dropout(halo_backend *be, float *y, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p) {
  note(be, halo_cuda_dropout(y, rows, cols, global_id, key, p, ctx_of(be)->stream));
}

static void cuda_dropout_to(halo_backend *be, float *dst, const float *src, int64_t rows,
                            int64_t cols, const int64_t *global_id, uint64_t key, float p) {
  note(be, halo_cuda_dropout_to(dst, src, rows, cols, global_id, key, p, ctx_of(be)->stream));
}

/* The host needs the loss and the count at once, so the loss slots wait
 * for their kernel: once per step and per evaluation.  `launched` is the
 * status of the kernel's launch into c->scalars (loss, then count). */
static void loss_scalars(halo_backend *be, halo_status launched, double *loss_sum,
                         int64_t *correct) {
  halo_status st = launched;
  cuda_ctx *c = ctx_of(be);
  const size_t bytes = sizeof(double) + sizeof(int64_t);
  *loss_sum = 0.0;
  *correct = 0;
  HALO_TRY(st);
  HALO_TRY(halo_cuda_memcpy(c->host_scalars, c->scalars, bytes, c->stream));
  HALO_TRY(halo_cuda_stream_synchronize(c->stream));
  memcpy(loss_sum, c->host_scalars, sizeof(double));
  memcpy(correct, (const char *)c->host_scalars + sizeof(double), sizeof(int64_t));
done:
  note(be, st);
}

static void cuda_softmax_xent(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                              const int32_t *labels, const int32_t *mask, int64_t nmask,
                              float grad_scale, float *g, double *loss_sum, int64_t *correct) {
  cuda_ctx *c = ctx_of(be);
  double *d_loss = c->scalars;
  loss_scalars(be,
               halo_cuda_softmax_xent(z, rows, cols, labels, mask, nmask, grad_scale, g, d_loss,
                                      (int64_t *)(d_loss + 1), c->softmax_work, c->stream),
               loss_sum, correct);
}

static void cuda_sigmoid_bce(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                             const int8_t *targets, const int32_t *mask, int64_t nmask,
                             float grad_scale, float *g, double *loss_sum, int64_t *correct) {
  cuda_ctx *c = ctx_of(be);
  double *d_loss = c->scalars;
  loss_scalars(be,
               halo_cuda_sigmoid_bce(z, rows, cols, targets, mask, nmask, grad_scale, g, d_loss,
                                     (int64_t *)(d_loss + 1), c->softmax_work, c->stream),
               loss_sum, correct);
}

static void cuda_adam(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                      float lr, float b1, float b2, float eps, float wd, int64_t t) {
  note(be, halo_cuda_adam(w, g, m, v, n, lr, b1, b2, eps, wd, t, ctx_of(be)->stream));
}

static void cuda_adamw(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                       float lr, float b1, float b2, float eps, float wd, int64_t t) {
  note(be, halo_cuda_adamw(w, g, m, v, n, lr, b1, b2, eps, wd, t, ctx_of(be)->stream));
}

static void cuda_sgd(halo_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
                     float mu, float wd, int nesterov) {
  note(be, halo_cuda_sgd(w, g, buf, n, lr, mu, wd, nesterov, ctx_of(be)->stream));
}

static void cuda_scale(halo_backend *be, float *x, int64_t n, float s) {
  note(be, halo_cuda_scale(x, n, s, ctx_of(be)->stream));
}

static void cuda_copy(halo_backend *be, float *dst, const float *src, int64_t n) {
  if (n <= 0 || dst == src) return;
  note(be, halo_cuda_memcpy(dst, src, (size_t)n * sizeof(float), ctx_of(be)->stream));
}

static void cuda_pack(halo_backend *be, float *dst, const float *src, int64_t cols,
                      const int32_t *idx, int64_t n) {
  note(be, halo_cuda_pack(dst, src, cols, idx, n, ctx_of(be)->stream));
}

static void cuda_quant_pack(halo_backend *be, uint8_t *dst, const float *src, int64_t cols,
                            const int32_t *idx, const int64_t *gid, int64_t n, int prec,
                            uint64_t key) {
  note(be, halo_cuda_quant_pack(dst, src, cols, idx, gid, n, prec, key, ctx_of(be)->stream));
}

static void cuda_quant_unpack(halo_backend *be, float *dst, const uint8_t *src, int64_t cols,
                              int64_t n, int prec) {
  note(be, halo_cuda_quant_unpack(dst, src, cols, n, prec, ctx_of(be)->stream));
}

/* --- deterministic ops ------------------------------------------------------ */

static void cuda_gemm_rows(halo_backend *be, int trans_b, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                           int64_t ldc) {
  note(be, halo_cuda_gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc, ctx_of(be)->stream));
}

/* Copies `bytes` of the exact sums' device results to their host copy and
 * waits: the host needs them at once. */
static halo_status exact_fetch(cuda_ctx *c, const void *dev, size_t bytes) {
  halo_status st = HALO_OK;
  HALO_TRY(halo_cuda_memcpy(c->host_exact, dev, bytes, c->stream));
  HALO_TRY(halo_cuda_stream_synchronize(c->stream));
done:
  return st;
}

/* The host needs the bound at once, so this slot waits; a failure reports
 * +inf (the gradients then become NaN) and is kept for synchronize. */
static float cuda_max_abs(halo_backend *be, const float *x, int64_t n) {
  cuda_ctx *c = ctx_of(be);
  unsigned *word = (unsigned *)((char *)c->exact + EXACT_BYTES - 16);
  halo_status st = halo_cuda_max_abs(x, n, word, c->stream);
  if (st == HALO_OK) st = exact_fetch(c, word, sizeof *word);
  note(be, st);
  float m = INFINITY;
  if (st == HALO_OK) memcpy(&m, c->host_exact, sizeof m);
  return m;
}

/* The pairs of `rows` × `cols` cells just fetched, into the limbs of the
 * cells at (r0, q0) of a result `ld` cells wide. */
static void exact_store(const cuda_ctx *c, int64_t rows, int64_t cols, int64_t r0, int64_t q0,
                        int64_t ld, int64_t *acc) {
  const int64_t *pairs = c->host_exact;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t q = 0; q < cols; q++) {
      const int64_t *pair = pairs + 2 * (r * cols + q);
      halo_exact_limbs(pair[0], pair[1], acc + ((r0 + r) * ld + q0 + q) * HALO_EXACT_LIMBS);
    }
}

/* The device sums EXACT_CELLS cells at a time: blocks of whole rows of
 * cells (p), or of columns when one row is wider; each block's pairs come
 * back and become limbs on the host.  threads and work are the CPU's. */
static void cuda_exact_tn(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                          int64_t lda, const float *b, int64_t ldb, int e, int threads, void *work,
                          int64_t *acc) {
  (void)threads;
  (void)work;
  cuda_ctx *c = ctx_of(be);
  halo_status st = HALO_OK;
  const int64_t qc = bc < EXACT_CELLS ? bc : EXACT_CELLS;
  const int64_t pc = qc > 0 && EXACT_CELLS / qc < ac ? EXACT_CELLS / qc : ac;
  if (n > c->exact_dirs_rows) { /* the rows' directions, from their whole rows of B */
    halo_cuda_free(&c->exact_dirs);
    c->exact_dirs_rows = 0;
    st = halo_cuda_malloc(&c->exact_dirs, (size_t)n, "the exact sums' row directions");
    if (st == HALO_OK) c->exact_dirs_rows = n;
  }
  if (st == HALO_OK) st = halo_cuda_exact_row_dirs(n, b, bc, ldb, c->exact_dirs, c->stream);
  for (int64_t p0 = 0; p0 < ac && st == HALO_OK; p0 += pc)
    for (int64_t q0 = 0; q0 < bc && st == HALO_OK; q0 += qc) {
      const int64_t rows = ac - p0 < pc ? ac - p0 : pc, cols = bc - q0 < qc ? bc - q0 : qc;
      st = halo_cuda_exact_tn(n, rows, cols, a ? a + p0 : NULL, lda, b + q0, ldb, c->exact_dirs, e,
                              c->exact, c->stream);
      if (st == HALO_OK) st = exact_fetch(c, c->exact, (size_t)(2 * rows * cols) * sizeof(int64_t));
      if (st == HALO_OK) exact_store(c, rows, cols, p0, q0, bc, acc);
    }
  note(be, st);
}

static void cuda_exact_csr(halo_backend *be, const halo_csr *at, const float *b, int64_t bc,
                           int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  (void)threads;
  (void)work;
  cuda_ctx *c = ctx_of(be);
  halo_status st = HALO_OK;
  const int64_t qc = bc < EXACT_CELLS ? bc : EXACT_CELLS;
  const int64_t pc = qc > 0 && EXACT_CELLS / qc < at->rows ? EXACT_CELLS / qc : at->rows;
  for (int64_t p0 = 0; p0 < at->rows && st == HALO_OK; p0 += pc)
    for (int64_t q0 = 0; q0 < bc && st == HALO_OK; q0 += qc) {
      const int64_t rows = at->rows - p0 < pc ? at->rows - p0 : pc,
                    cols = bc - q0 < qc ? bc - q0 : qc;
      st = halo_cuda_exact_csr(at->indptr + p0, at->indices, at->values, rows, b + q0, cols, ldb, e,
                               c->exact, c->stream);
      if (st == HALO_OK) st = exact_fetch(c, c->exact, (size_t)(2 * rows * cols) * sizeof(int64_t));
      if (st == HALO_OK) exact_store(c, rows, cols, p0, q0, bc, acc);
    }
  note(be, st);
}

/* --- sparse ops ------------------------------------------------------------ */

static spmm_entry *spmm_find(cuda_ctx *c, const halo_csr *a, int64_t nrows) {
  for (int i = 0; i < c->nspmm; i++) {
    spmm_entry *e = &c->spmm[i];
    if (e->indptr == a->indptr && e->indices == a->indices && e->nrows == nrows) return e;
  }
  return NULL;
}

/* Plans a declared product for cuSPARSE: a new plan for a new matrix or
 * row count, or one more shape for a planned one. */
static halo_status cuda_spmm_prepare(halo_backend *be, const halo_csr *a, int64_t nrows,
                                     int64_t ncols) {
  halo_status st = HALO_OK;
  cuda_ctx *c = ctx_of(be);
  const halo_spmm_cuda_shape shape = {.ncols = ncols, .ldx = ncols, .ldy = ncols};
  const halo_spmm_cuda_options options = {.alg = HALO_SPMM_CUDA_ALG_CSR2};
  if (c->spmm_rows || nrows == 0) return HALO_OK;
  spmm_entry *e = spmm_find(c, a, nrows);
  if (e) return halo_spmm_cuda_plan_add_shape(e->plan, &shape);
  spmm_entry *grown = realloc(c->spmm, (size_t)(c->nspmm + 1) * sizeof *grown);
  if (!grown) HALO_FAIL(HALO_ERR_NOMEM, "out of memory planning a cuSPARSE product");
  c->spmm = grown;
  e = &c->spmm[c->nspmm];
  *e = (spmm_entry){.indptr = a->indptr, .indices = a->indices, .nrows = nrows};
  HALO_TRY(halo_spmm_cuda_plan_create_device(a, nrows, &shape, 1, &options, c->stream, &e->plan));
  c->nspmm++;
done:
  return st;
}

static int aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

static void cuda_spmm(halo_backend *be, const halo_csr *a, const float *x, int64_t ldx,
                      int64_t ncols, float beta, float *y, int64_t ldy, const int32_t *rows,
                      int64_t nrows) {
  cuda_ctx *c = ctx_of(be);
  spmm_entry *e = rows ? NULL : spmm_find(c, a, nrows);
  if (e && aligned16(x) && aligned16(y) &&
      halo_spmm_cuda_plan_has_shape(e->plan, ncols, ldx, ldy)) {
    halo_status st = halo_spmm_cuda_plan_set_values(e->plan, a->values, c->stream);
    if (st == HALO_OK)
      st = halo_spmm_cuda_run(e->plan, HALO_SPMM_ALL, x, ldx, ncols, beta, y, ldy, c->stream);
    if (st != HALO_ERR_UNSUPPORTED) { /* declined: values the plan cannot borrow aligned */
      note(be, st);
      return;
    }
  }
  note(be, halo_spmm_cuda_csr_rows(a, x, ldx, ncols, beta, y, ldy, rows, nrows, c->stream));
}

static void cuda_csr_dropout(halo_backend *be, const halo_csr *a, int transposed,
                             const int64_t *global_id, uint64_t key, float p, float *out) {
  note(be, halo_cuda_csr_dropout(a->indptr, a->indices, a->values, a->rows, transposed, global_id,
                                 key, p, out, ctx_of(be)->stream));
}

static void cuda_destroy(halo_backend *be) {
  cuda_ctx *c = be->context;
  if (!c) return;
  if (c->stream) (void)halo_cuda_stream_synchronize(c->stream);
  if (c->copy_stream) (void)halo_cuda_stream_synchronize(c->copy_stream);
  for (int i = 0; i < c->nspmm; i++) halo_spmm_cuda_plan_destroy(&c->spmm[i].plan);
  free(c->spmm);
  halo_cuda_free(&c->softmax_work);
  halo_cuda_free(&c->exact);
  halo_cuda_free(&c->exact_dirs);
  halo_cuda_free_host(&c->host_exact);
  halo_cuda_free(&c->colsum_work);
  halo_cuda_free(&c->bn_cols);
  halo_cuda_free(&c->scalars);
  halo_cuda_free_host(&c->host_scalars);
  halo_cuda_blas_destroy(&c->blas);
  halo_cuda_event_destroy(&c->compute_event);
  halo_cuda_event_destroy(&c->copy_event);
  halo_cuda_stream_destroy(&c->copy_stream);
  halo_cuda_stream_destroy(&c->stream);
  free(c);
  be->context = NULL;
}

static const halo_backend_ops cuda_ops = {
    .name = "cuda",
    .space = HALO_MEM_DEVICE,
    .destroy = cuda_destroy,
    .mem_available = cuda_mem_available,
    .buf_alloc = cuda_buf_alloc,
    .buf_free = cuda_buf_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .csr_upload = cuda_csr_upload,
    .csr_free = cuda_csr_free,
    .synchronize = cuda_synchronize,
    .mpi_takes_device = cuda_mpi_takes_device,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_wait_compute = cuda_copy_wait_compute,
    .copy_download = cuda_copy_download,
    .copy_upload = cuda_copy_upload,
    .copy_synchronize = cuda_copy_synchronize,
    .compute_wait_copy = cuda_compute_wait_copy,
    .gemm = cuda_gemm,
    .bias_add = cuda_bias_add,
    .colsum = cuda_colsum,
    .relu = cuda_relu,
    .relu_backward = cuda_relu_backward,
    .axpy = cuda_axpy,
    .elu = cuda_elu,
    .elu_backward = cuda_elu_backward,
    .leaky_relu = cuda_leaky_relu,
    .leaky_relu_backward = cuda_leaky_relu_backward,
    .gelu_to = cuda_gelu_to,
    .gelu_backward = cuda_gelu_backward,
    .l2_normalize = cuda_l2_normalize,
    .l2_normalize_backward = cuda_l2_normalize_backward,
    .layernorm = cuda_layernorm,
    .layernorm_backward = cuda_layernorm_backward,
    .mul = cuda_mul,
    .bn_sums = cuda_bn_sums,
    .batchnorm = cuda_batchnorm,
    .batchnorm_backward = cuda_batchnorm_backward,
    .model_ops = HALO_MODEL_OPS_ALL,
    .model_kernel = cuda_model_kernel,
    .dropout = cuda_dropout,
    .dropout_to = cuda_dropout_to,
    .softmax_xent = cuda_softmax_xent,
    .sigmoid_bce = cuda_sigmoid_bce,
    .adam = cuda_adam,
    .adamw = cuda_adamw,
    .sgd = cuda_sgd,
    .scale = cuda_scale,
    .copy = cuda_copy,
    .pack = cuda_pack,
    .quant_pack = cuda_quant_pack,
    .quant_unpack = cuda_quant_unpack,
    .gemm_rows = cuda_gemm_rows,
    .max_abs = cuda_max_abs,
    .exact_tn = cuda_exact_tn,
    .exact_csr = cuda_exact_csr,
    .spmm = cuda_spmm,
    .spmm_prepare = cuda_spmm_prepare,
    .csr_dropout = cuda_csr_dropout,
};

/* Whether MPI takes device pointers: as asked, or as MPI reports. */
static halo_status mpi_choice(halo_backend_mpi mpi, int *device) {
  halo_status st = HALO_OK;
  if (mpi == HALO_BACKEND_MPI_ASK)
    *device = halo_mpi_cuda_aware();
  else if (mpi == HALO_BACKEND_MPI_STAGED || mpi == HALO_BACKEND_MPI_DEVICE)
    *device = mpi == HALO_BACKEND_MPI_DEVICE;
  else
    HALO_FAIL(HALO_ERR_ARG, "MPI mode %d of the CUDA backend is not a halo_backend_mpi", (int)mpi);
done:
  return st;
}

/* *rows = 1 when every product takes the row kernel. */
static halo_status spmm_choice(halo_backend_spmm spmm, int *rows) {
  halo_status st = HALO_OK;
  if (spmm != HALO_BACKEND_SPMM_CUSPARSE && spmm != HALO_BACKEND_SPMM_ROWS)
    HALO_FAIL(HALO_ERR_ARG, "SpMM choice %d of the CUDA backend is not a halo_backend_spmm",
              (int)spmm);
  *rows = spmm == HALO_BACKEND_SPMM_ROWS;
done:
  return st;
}

const char *halo__backend_cuda_problem(void) {
  static char why[192];
  const char *problem = halo_cuda_device_problem();
  if (!problem) return NULL;
  snprintf(why, sizeof why,
           "no usable CUDA device (%s: no GPU, a driver older than CUDA's runtime, or "
           "CUDA_VISIBLE_DEVICES hides them)",
           problem);
  return why;
}

halo_status halo__backend_cuda_init(const halo_backend_options *o, halo_backend *be) {
  halo_status st = HALO_OK;
  cuda_ctx *c = NULL;
  char name[96] = "";
  const char *problem = halo__backend_cuda_problem();
  if (problem) HALO_FAIL(HALO_ERR_UNSUPPORTED, "device cuda: %s", problem);
  HALO_ALLOC(c, 1, "the CUDA backend");
  be->context = c;
  be->ops = &cuda_ops;
  HALO_TRY(halo_cuda_select_device(o->local_rank, &c->device));
  HALO_TRY(halo_cuda_device_location(&c->location));
  HALO_TRY(spmm_choice(o->spmm, &c->spmm_rows));
  HALO_TRY(mpi_choice(o->mpi, &c->mpi_device));
  HALO_TRY(halo_cuda_stream_create(&c->stream));
  HALO_TRY(halo_cuda_stream_create(&c->copy_stream));
  HALO_TRY(halo_cuda_event_create(&c->copy_event));
  HALO_TRY(halo_cuda_event_create(&c->compute_event));
  HALO_TRY(halo_cuda_blas_create(&c->blas));
  HALO_TRY(halo_cuda_blas_set_tf32(c->blas, o->tf32));
  HALO_TRY(halo_cuda_malloc(&c->scalars, sizeof(double) + sizeof(int64_t), "loss scalars"));
  HALO_TRY(
      halo_cuda_malloc_host(&c->host_scalars, sizeof(double) + sizeof(int64_t), "loss scalars"));
  HALO_TRY(halo_cuda_malloc(&c->colsum_work, HALO_CUDA_COLSUM_WORK_BYTES, "colsum workspace"));
  HALO_TRY(halo_cuda_malloc(&c->softmax_work, HALO_CUDA_SOFTMAX_WORK_BYTES, "loss workspace"));
  HALO_TRY(halo_cuda_malloc(&c->exact, EXACT_BYTES, "the exact sums' results"));
  HALO_TRY(halo_cuda_malloc_host(&c->host_exact, EXACT_BYTES, "the exact sums' results"));
  HALO_TRY(halo_cuda_device_name(name, sizeof name));
  /* A long device name may cut the description short: it is only shown. */
  if (snprintf(
          be->description, sizeof be->description, "cuda: %s (device %d)%s, SpMM %s, halo rows %s",
          name, c->device, o->tf32 ? ", TF32 GEMM" : "", c->spmm_rows ? "row kernel" : "cuSPARSE",
          c->mpi_device ? "handed to CUDA-aware MPI" : "staged through pinned host memory") < 0)
    be->description[0] = '\0';
done:
  return st; /* on failure halo_backend_destroy calls cuda_destroy */
}
