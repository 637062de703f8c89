/* A test backend that behaves like a device backend without a device.
 *
 * Its buffers are host memory, but it declares them HALO_MEM_DEVICE, so the
 * trainer and the halo exchange take every path a GPU backend takes: uploads
 * and downloads, CSR copies, host staging of the gradient allreduce, and
 * either the staged halo exchange (through host_alloc) or, with
 * `mpi_device`, the in-place exchange of a CUDA-aware MPI.  The arithmetic
 * is the CPU backend's, so results must equal a CPU run's bit for bit.
 *
 * Every allocation is registered, and every compute slot checks that each
 * pointer it gets lies, with its whole extent, inside a registered buffer
 * (device memory), and that the host scalars of softmax_xent and the host
 * side of uploads and downloads do not.  A violation is what would be an
 * illegal address on a GPU: it prints one line and aborts.
 *
 * The copy stream (copy_* slots) is simulated by deferring: copy_download
 * and copy_upload only queue their copy, and the queue runs at the next
 * copy_synchronize or compute_wait_copy, the latest point at which a GPU
 * could have done it.  A caller that forgets a wait (MPI sending host rows
 * before copy_synchronize, the boundary SpMM reading halo rows before
 * compute_wait_copy) then reads stale rows, and its results differ from the
 * CPU's.  spmm_prepare checks that the declared product lies in device
 * memory.
 *
 * HALO_CHECKED_FAIL_DOWNLOAD=RANK:N (HALO_CHECKED_FAIL_UPLOAD,
 * HALO_CHECKED_FAIL_SYNCHRONIZE) makes the N-th download (upload,
 * synchronize) of world rank RANK fail, as a device fault surfacing at a
 * copy or a wait would: the tests use them to check that such a failure is
 * agreed on rather than hanging the peers.  Queued copies count as
 * downloads and uploads, and the copy stream's waits and fences as
 * synchronizes.
 */
#include "backend-checked.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"
#include "halo-exact.h"
#include "halo-quant.h"

typedef struct region {
  const char *base;
  size_t bytes;
} region;

/* A copy queued on the simulated copy stream. */
typedef struct queued_copy {
  void *dst;
  const void *src;
  size_t bytes;
} queued_copy;

/* More copies than one exchange queues between two waits. */
enum { COPY_QUEUE = 8 };

typedef struct checked_ctx {
  int mpi_device;
  region *regions;
  size_t nregions, cap;
  queued_copy queue[COPY_QUEUE];
  int nqueued;
  int64_t uploads, downloads, host_allocs, synchronizes;
  int64_t fail_download;    /* 1-based download number that fails; 0: none */
  int64_t fail_upload;      /* 1-based upload number that fails; 0: none */
  int64_t fail_synchronize; /* 1-based synchronize number that fails; 0: none */
} checked_ctx;

static const halo_backend_ops *const cpu = &halo__backend_cpu_ops;

static checked_ctx *ctx_of(halo_backend *be) { return be->context; }

static void fail(const char *slot, const char *arg, const char *why) {
  fprintf(stderr, "checked backend: %s: %s %s\n", slot, arg, why);
  abort();
}

static const region *find(halo_backend *be, const void *p) {
  checked_ctx *c = ctx_of(be);
  for (size_t i = 0; i < c->nregions; i++) {
    const region *r = &c->regions[i];
    if ((const char *)p >= r->base && (const char *)p <= r->base + r->bytes) return r;
  }
  return NULL;
}

/* [p, p + bytes) must lie inside one device buffer. */
static void device(halo_backend *be, const char *slot, const char *arg, const void *p,
                   size_t bytes) {
  if (bytes == 0) return;
  const region *r = p ? find(be, p) : NULL;
  if (!r) fail(slot, arg, "is not device memory");
  if ((size_t)((const char *)p - r->base) + bytes > r->bytes)
    fail(slot, arg, "runs past the end of its device buffer");
}

static void host(halo_backend *be, const char *slot, const char *arg, const void *p) {
  if (p && find(be, p)) fail(slot, arg, "is device memory where host memory is expected");
}

/* Bytes spanned by a row-major rows × cols block with leading dimension ld. */
static size_t span(int64_t rows, int64_t cols, int64_t ld, size_t elem) {
  return rows > 0 && cols > 0 ? (size_t)((rows - 1) * ld + cols) * elem : 0;
}

static halo_status track(halo_backend *be, void *p, size_t bytes) {
  checked_ctx *c = ctx_of(be);
  if (c->nregions == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    region *grown = realloc(c->regions, cap * sizeof *grown);
    if (!grown) return HALO_ERR_NOMEM;
    c->regions = grown;
    c->cap = cap;
  }
  c->regions[c->nregions++] = (region){.base = p, .bytes = bytes};
  return HALO_OK;
}

static void untrack(halo_backend *be, const void *p) {
  checked_ctx *c = ctx_of(be);
  for (size_t i = 0; i < c->nregions; i++) {
    if (c->regions[i].base == p) {
      c->regions[i] = c->regions[--c->nregions];
      return;
    }
  }
  if (p) fail("free", "pointer", "was never allocated by this backend");
}

static void *dev_alloc(halo_backend *be, size_t bytes) {
  void *p = calloc(bytes ? bytes : 1, 1);
  if (p && track(be, p, bytes) != HALO_OK) {
    free(p);
    p = NULL;
  }
  return p;
}

static void dev_free(halo_backend *be, void *p) {
  untrack(be, p);
  free(p);
}

/* --- memory --------------------------------------------------------------- */

static halo_status ck_buf_alloc(halo_backend *be, size_t bytes, halo_buf *out) {
  void *p = dev_alloc(be, bytes);
  if (!p) return HALO_ERR_NOMEM;
  *out = (halo_buf){.data = p, .bytes = bytes, .space = HALO_MEM_DEVICE};
  return HALO_OK;
}

static void ck_buf_free(halo_backend *be, halo_buf *buf) {
  if (buf->data) dev_free(be, buf->data);
  *buf = (halo_buf){0};
}

/* Counts one event of a kind and fails it when it is the injected one. */
static halo_status count(int64_t *made, int64_t fail_at, const char *kind, const char *var) {
  if (++*made != fail_at) return HALO_OK;
  halo_log_error("checked backend: %s %lld fails (%s)", kind, (long long)*made, var);
  return HALO_ERR_CUDA;
}

static halo_status count_upload(halo_backend *be) {
  checked_ctx *c = ctx_of(be);
  return count(&c->uploads, c->fail_upload, "upload", "HALO_CHECKED_FAIL_UPLOAD");
}

static halo_status count_download(halo_backend *be) {
  checked_ctx *c = ctx_of(be);
  return count(&c->downloads, c->fail_download, "download", "HALO_CHECKED_FAIL_DOWNLOAD");
}

static halo_status count_synchronize(halo_backend *be) {
  checked_ctx *c = ctx_of(be);
  return count(&c->synchronizes, c->fail_synchronize, "synchronize",
               "HALO_CHECKED_FAIL_SYNCHRONIZE");
}

static void check_upload(halo_backend *be, const char *slot, const halo_buf *dst, size_t offset,
                         const void *src, size_t bytes) {
  if (offset + bytes > dst->bytes) fail(slot, "range", "is outside the buffer");
  device(be, slot, "dst", (char *)dst->data + offset, bytes);
  host(be, slot, "src", src);
}

static void check_download(halo_backend *be, const char *slot, const void *dst, const halo_buf *src,
                           size_t offset, size_t bytes) {
  if (offset + bytes > src->bytes) fail(slot, "range", "is outside the buffer");
  device(be, slot, "src", (const char *)src->data + offset, bytes);
  host(be, slot, "dst", dst);
}

static halo_status ck_upload(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                             size_t bytes) {
  check_upload(be, "upload", dst, offset, src, bytes);
  memcpy((char *)dst->data + offset, src, bytes);
  return count_upload(be);
}

static halo_status ck_download(halo_backend *be, void *dst, const halo_buf *src, size_t offset,
                               size_t bytes) {
  check_download(be, "download", dst, src, offset, bytes);
  memcpy(dst, (const char *)src->data + offset, bytes);
  return count_download(be);
}

/* --- the simulated copy stream -------------------------------------------- */

static void enqueue(halo_backend *be, const char *slot, void *dst, const void *src, size_t bytes) {
  checked_ctx *c = ctx_of(be);
  if (c->nqueued == COPY_QUEUE) fail(slot, "copy", "overflows the queue: a wait is missing");
  c->queue[c->nqueued++] = (queued_copy){.dst = dst, .src = src, .bytes = bytes};
}

/* Runs the queued copies, in order, as the copy stream would have. */
static void drain(halo_backend *be) {
  checked_ctx *c = ctx_of(be);
  for (int i = 0; i < c->nqueued; i++) memcpy(c->queue[i].dst, c->queue[i].src, c->queue[i].bytes);
  c->nqueued = 0;
}

/* Compute slots finish on return: the fence has nothing to wait for. */
static halo_status ck_copy_wait_compute(halo_backend *be) { return count_synchronize(be); }

static halo_status ck_copy_download(halo_backend *be, void *dst, const halo_buf *src, size_t offset,
                                    size_t bytes) {
  check_download(be, "copy_download", dst, src, offset, bytes);
  halo_status st = count_download(be);
  if (st == HALO_OK && bytes > 0)
    enqueue(be, "copy_download", dst, (const char *)src->data + offset, bytes);
  return st;
}

static halo_status ck_copy_upload(halo_backend *be, halo_buf *dst, size_t offset, const void *src,
                                  size_t bytes) {
  check_upload(be, "copy_upload", dst, offset, src, bytes);
  halo_status st = count_upload(be);
  if (st == HALO_OK && bytes > 0)
    enqueue(be, "copy_upload", (char *)dst->data + offset, src, bytes);
  return st;
}

static halo_status ck_copy_synchronize(halo_backend *be) {
  drain(be);
  return count_synchronize(be);
}

/* The copies must land before the next compute slot, which runs at once. */
static halo_status ck_compute_wait_copy(halo_backend *be) {
  drain(be);
  return count_synchronize(be);
}

static void ck_csr_free(halo_backend *be, halo_csr *dev) {
  if (dev->indptr) dev_free(be, dev->indptr);
  if (dev->indices) dev_free(be, dev->indices);
  if (dev->values) dev_free(be, dev->values);
  *dev = (halo_csr){0};
}

/* Values are always stored, ones when the host has none (as on a GPU). */
static halo_status ck_csr_upload(halo_backend *be, const halo_csr *h, halo_csr *out) {
  halo_csr d = {.rows = h->rows, .cols = h->cols, .nnz = h->nnz};
  d.indptr = dev_alloc(be, (size_t)(h->rows + 1) * sizeof(int64_t));
  d.indices = dev_alloc(be, (size_t)h->nnz * sizeof(int32_t));
  d.values = dev_alloc(be, (size_t)h->nnz * sizeof(float));
  if (!d.indptr || !d.indices || !d.values) {
    ck_csr_free(be, &d);
    return HALO_ERR_NOMEM;
  }
  memcpy(d.indptr, h->indptr, (size_t)(h->rows + 1) * sizeof(int64_t));
  if (h->nnz > 0) memcpy(d.indices, h->indices, (size_t)h->nnz * sizeof(int32_t));
  for (int64_t k = 0; k < h->nnz; k++) d.values[k] = h->values ? h->values[k] : 1.0f;
  *out = d;
  return HALO_OK;
}

static void device_csr(halo_backend *be, const char *slot, const halo_csr *a) {
  device(be, slot, "A.indptr", a->indptr, (size_t)(a->rows + 1) * sizeof(int64_t));
  device(be, slot, "A.indices", a->indices, (size_t)a->nnz * sizeof(int32_t));
  device(be, slot, "A.values", a->values, (size_t)a->nnz * sizeof(float));
}

/* Every slot completes on return, as the CPU's do: only the injected
 * failure is left to report. */
static halo_status ck_synchronize(halo_backend *be) { return count_synchronize(be); }

static int ck_mpi_takes_device(halo_backend *be) { return ctx_of(be)->mpi_device; }

static halo_status ck_host_alloc(halo_backend *be, size_t bytes, void **out) {
  *out = calloc(bytes ? bytes : 1, 1);
  if (!*out) return HALO_ERR_NOMEM;
  ctx_of(be)->host_allocs++;
  return HALO_OK;
}

static void ck_host_free(halo_backend *be, void **p) {
  (void)be;
  free(*p);
  *p = NULL;
}

/* --- compute: check, then the CPU's arithmetic ------------------------------ */

static void ck_gemm(halo_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc) {
  device(be, "gemm", "A", a, ta ? span(k, m, lda, 4) : span(m, k, lda, 4));
  device(be, "gemm", "B", b, tb ? span(n, k, ldb, 4) : span(k, n, ldb, 4));
  device(be, "gemm", "C", c, span(m, n, ldc, 4));
  cpu->gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void ck_bias_add(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *b) {
  device(be, "bias_add", "Y", y, span(rows, cols, cols, 4));
  device(be, "bias_add", "bias", b, (size_t)cols * 4);
  cpu->bias_add(be, y, rows, cols, b);
}

static void ck_colsum(halo_backend *be, const float *g, int64_t rows, int64_t cols, float *out) {
  device(be, "colsum", "G", g, span(rows, cols, cols, 4));
  device(be, "colsum", "out", out, (size_t)cols * 4);
  cpu->colsum(be, g, rows, cols, out);
}

static void ck_relu(halo_backend *be, float *y, int64_t n) {
  device(be, "relu", "Y", y, (size_t)n * 4);
  cpu->relu(be, y, n);
}

static void ck_axpy(halo_backend *be, float *y, const float *x, int64_t n, float alpha,
                    const float *p) {
  device(be, "axpy", "Y", y, (size_t)n * 4);
  device(be, "axpy", "X", x, (size_t)n * 4);
  if (p) device(be, "axpy", "P", p, 4);
  cpu->axpy(be, y, x, n, alpha, p);
}

static void ck_elu(halo_backend *be, float *y, int64_t n) {
  device(be, "elu", "Y", y, (size_t)n * 4);
  cpu->elu(be, y, n);
}

static void ck_elu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  device(be, "elu_backward", "G", g, (size_t)n * 4);
  device(be, "elu_backward", "Y", y, (size_t)n * 4);
  cpu->elu_backward(be, g, y, n);
}

static void ck_l2_normalize(halo_backend *be, float *y, int64_t rows, int64_t cols, float *norm) {
  device(be, "l2_normalize", "Y", y, (size_t)(rows * cols) * 4);
  device(be, "l2_normalize", "norm", norm, (size_t)rows * 4);
  cpu->l2_normalize(be, y, rows, cols, norm);
}

static void ck_l2_normalize_backward(halo_backend *be, float *g, const float *y, const float *norm,
                                     int64_t rows, int64_t cols) {
  device(be, "l2_normalize_backward", "G", g, (size_t)(rows * cols) * 4);
  device(be, "l2_normalize_backward", "Y", y, (size_t)(rows * cols) * 4);
  device(be, "l2_normalize_backward", "norm", norm, (size_t)rows * 4);
  cpu->l2_normalize_backward(be, g, y, norm, rows, cols);
}

static void ck_layernorm(halo_backend *be, float *y, int64_t rows, int64_t cols, const float *gamma,
                         const float *beta, float *xhat, float *rstd) {
  device(be, "layernorm", "Y", y, (size_t)(rows * cols) * 4);
  device(be, "layernorm", "gamma", gamma, (size_t)cols * 4);
  device(be, "layernorm", "beta", beta, (size_t)cols * 4);
  device(be, "layernorm", "xhat", xhat, (size_t)(rows * cols) * 4);
  device(be, "layernorm", "rstd", rstd, (size_t)rows * 4);
  cpu->layernorm(be, y, rows, cols, gamma, beta, xhat, rstd);
}

static void ck_layernorm_backward(halo_backend *be, float *g, const float *xhat, const float *rstd,
                                  const float *gamma, int64_t rows, int64_t cols) {
  device(be, "layernorm_backward", "G", g, (size_t)(rows * cols) * 4);
  device(be, "layernorm_backward", "xhat", xhat, (size_t)(rows * cols) * 4);
  device(be, "layernorm_backward", "rstd", rstd, (size_t)rows * 4);
  device(be, "layernorm_backward", "gamma", gamma, (size_t)cols * 4);
  cpu->layernorm_backward(be, g, xhat, rstd, gamma, rows, cols);
}

static void ck_mul(halo_backend *be, float *out, const float *a, const float *b, int64_t n) {
  device(be, "mul", "out", out, (size_t)n * 4);
  device(be, "mul", "A", a, (size_t)n * 4);
  device(be, "mul", "B", b, (size_t)n * 4);
  cpu->mul(be, out, a, b, n);
}

/* The model ops: each case checks its arguments' extents, then the CPU
 * backend runs the call.  GAT: T and the scores span every local row
 * (adj's columns), the heads' outputs, Z, dT and the attention terms the
 * owned rows (adj's rows). */
static void ck_gat_rows(halo_backend *be, const char *op, const halo_gat_layer *g,
                        const halo_csr *adj, const int64_t *gid, const float *t, const float *s,
                        const float *node) {
  const size_t kf = (size_t)g->heads * (size_t)g->f, all = (size_t)adj->cols;
  device_csr(be, op, adj);
  device(be, op, "global_id", gid, all * 8);
  device(be, op, "T", t, all * kf * 4);
  device(be, op, "S", s, all * 2 * (size_t)g->heads * 4);
  device(be, op, "node terms", node, all * (size_t)halo_gat_node_cols(g) * 4);
}

static void ck_model_kernel(halo_backend *be, const halo_model_call *c) {
  switch (c->op) {
    case HALO_OP_GAT_SCORES: {
      const halo_op_gat_scores *a = &c->gat_scores;
      const size_t kf = (size_t)a->g->heads * (size_t)a->g->f;
      device(be, "gat_scores", "T", a->t, (size_t)a->rows * kf * 4);
      device(be, "gat_scores", "a_src", a->a_src, kf * 4);
      device(be, "gat_scores", "a_dst", a->a_dst, kf * 4);
      device(be, "gat_scores", "S", a->s, (size_t)a->rows * 2 * (size_t)a->g->heads * 4);
      break;
    }
    case HALO_OP_GAT_ATTEND: {
      const halo_op_gat_attend *a = &c->gat_attend;
      const size_t kf = (size_t)a->g->heads * (size_t)a->g->f, n = (size_t)a->adj->rows;
      ck_gat_rows(be, "gat_attend", a->g, a->adj, a->global_id, a->t, a->s, a->node);
      device(be, "gat_attend", "out", a->out, n * kf * 4);
      device(be, "gat_attend", "Z", a->z, n * (size_t)halo_gat_out_cols(a->g) * 4);
      break;
    }
    case HALO_OP_GAT_NODE_TERMS: {
      const halo_op_gat_node_terms *a = &c->gat_node_terms;
      const size_t n = (size_t)a->rows;
      device(be, "gat_node_terms", "dZ", a->dz, n * (size_t)halo_gat_out_cols(a->g) * 4);
      device(be, "gat_node_terms", "out", a->out, n * (size_t)a->g->heads * (size_t)a->g->f * 4);
      device(be, "gat_node_terms", "node terms", a->node, n * (size_t)halo_gat_node_cols(a->g) * 4);
      break;
    }
    case HALO_OP_GAT_ATTEND_BACKWARD: {
      const halo_op_gat_attend_backward *a = &c->gat_attend_backward;
      const size_t kf = (size_t)a->g->heads * (size_t)a->g->f, n = (size_t)a->adj->rows;
      ck_gat_rows(be, "gat_attend_backward", a->g, a->adj, a->global_id, a->t, a->s, a->node);
      device(be, "gat_attend_backward", "a_src", a->a_src, kf * 4);
      device(be, "gat_attend_backward", "a_dst", a->a_dst, kf * 4);
      device(be, "gat_attend_backward", "dT", a->dt, n * kf * 4);
      device(be, "gat_attend_backward", "attention terms", a->att_grad, 2 * n * kf * 4);
      break;
    }
    case HALO_OP_SAGE_MAX: {
      const halo_op_sage_max *a = &c->sage_max;
      const size_t n = (size_t)a->adj->rows, all = (size_t)a->adj->cols, w = (size_t)a->cols;
      device_csr(be, "sage_max", a->adj);
      device(be, "sage_max", "global_id", a->global_id, all * 8);
      device(be, "sage_max", "X", a->x, all * w * 4);
      device(be, "sage_max", "out", a->out, n * w * 4);
      if (a->arg) device(be, "sage_max", "arg", a->arg, n * w * 4);
      break;
    }
    case HALO_OP_SAGE_MAX_BACKWARD: {
      const halo_op_sage_max_backward *a = &c->sage_max_backward;
      const size_t n = (size_t)a->adj->rows, all = (size_t)a->adj->cols, w = (size_t)a->cols;
      device_csr(be, "sage_max_backward", a->adj);
      device(be, "sage_max_backward", "global_id", a->global_id, all * 8);
      device(be, "sage_max_backward", "arg", a->arg, all * w * 4);
      device(be, "sage_max_backward", "G", a->g, all * w * 4);
      device(be, "sage_max_backward", "dX", a->dx, n * w * 4);
      break;
    }
    case HALO_OP_COUNT:
      fail("model_kernel", "op", "is not one of HALO_MODEL_OPS");
  }
  cpu->model_kernel(be, c);
}

static void ck_leaky_relu(halo_backend *be, float *y, int64_t n, float slope) {
  device(be, "leaky_relu", "Y", y, (size_t)n * 4);
  cpu->leaky_relu(be, y, n, slope);
}

static void ck_leaky_relu_backward(halo_backend *be, float *g, const float *y, int64_t n,
                                   float slope) {
  device(be, "leaky_relu_backward", "G", g, (size_t)n * 4);
  device(be, "leaky_relu_backward", "Y", y, (size_t)n * 4);
  cpu->leaky_relu_backward(be, g, y, n, slope);
}

static void ck_gelu_to(halo_backend *be, float *y, const float *x, int64_t n) {
  device(be, "gelu_to", "Y", y, (size_t)n * 4);
  device(be, "gelu_to", "X", x, (size_t)n * 4);
  cpu->gelu_to(be, y, x, n);
}

static void ck_gelu_backward(halo_backend *be, float *g, const float *x, int64_t n) {
  device(be, "gelu_backward", "G", g, (size_t)n * 4);
  device(be, "gelu_backward", "X", x, (size_t)n * 4);
  cpu->gelu_backward(be, g, x, n);
}

static void ck_relu_backward(halo_backend *be, float *g, const float *y, int64_t n) {
  device(be, "relu_backward", "G", g, (size_t)n * 4);
  device(be, "relu_backward", "Y", y, (size_t)n * 4);
  cpu->relu_backward(be, g, y, n);
}

static void ck_dropout(halo_backend *be, float *y, int64_t rows, int64_t cols, const int64_t *gid,
                       uint64_t key, float p) {
  device(be, "dropout", "Y", y, span(rows, cols, cols, 4));
  device(be, "dropout", "global_id", gid, (size_t)rows * 8);
  cpu->dropout(be, y, rows, cols, gid, key, p);
}

/* The slot the CUDA backend has: without it the trainer takes copy, then dropout. */
static void ck_dropout_to(halo_backend *be, float *dst, const float *src, int64_t rows,
                          int64_t cols, const int64_t *gid, uint64_t key, float p) {
  device(be, "dropout_to", "dst", dst, span(rows, cols, cols, 4));
  device(be, "dropout_to", "src", src, span(rows, cols, cols, 4));
  device(be, "dropout_to", "global_id", gid, (size_t)rows * 8);
  if (rows > 0 && cols > 0 && dst < src + rows * cols && src < dst + rows * cols)
    fail("dropout_to", "dst", "overlaps src");
  cpu->dropout_to(be, dst, src, rows, cols, gid, key, p);
}

static void ck_softmax_xent(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                            const int32_t *labels, const int32_t *mask, int64_t nmask, float scale,
                            float *g, double *loss, int64_t *correct) {
  device(be, "softmax_xent", "Z", z, span(rows, cols, cols, 4));
  device(be, "softmax_xent", "labels", labels, (size_t)rows * 4);
  device(be, "softmax_xent", "mask", mask, (size_t)nmask * 4);
  if (g) device(be, "softmax_xent", "G", g, span(rows, cols, cols, 4));
  host(be, "softmax_xent", "loss_sum", loss);
  host(be, "softmax_xent", "correct", correct);
  cpu->softmax_xent(be, z, rows, cols, labels, mask, nmask, scale, g, loss, correct);
}

static void ck_sigmoid_bce(halo_backend *be, const float *z, int64_t rows, int64_t cols,
                           const int8_t *targets, const int32_t *mask, int64_t nmask, float scale,
                           float *g, double *loss, int64_t *correct) {
  device(be, "sigmoid_bce", "Z", z, span(rows, cols, cols, 4));
  device(be, "sigmoid_bce", "targets", targets, span(rows, cols, cols, 1));
  device(be, "sigmoid_bce", "mask", mask, (size_t)nmask * 4);
  if (g) device(be, "sigmoid_bce", "G", g, span(rows, cols, cols, 4));
  host(be, "sigmoid_bce", "loss_sum", loss);
  host(be, "sigmoid_bce", "correct", correct);
  cpu->sigmoid_bce(be, z, rows, cols, targets, mask, nmask, scale, g, loss, correct);
}

static void ck_adam(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                    float lr, float b1, float b2, float eps, float wd, int64_t t) {
  device(be, "adam", "W", w, (size_t)n * 4);
  device(be, "adam", "G", g, (size_t)n * 4);
  device(be, "adam", "M", m, (size_t)n * 4);
  device(be, "adam", "V", v, (size_t)n * 4);
  cpu->adam(be, w, g, m, v, n, lr, b1, b2, eps, wd, t);
}

static void ck_adamw(halo_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                     float lr, float b1, float b2, float eps, float wd, int64_t t) {
  device(be, "adamw", "W", w, (size_t)n * 4);
  device(be, "adamw", "G", g, (size_t)n * 4);
  device(be, "adamw", "M", m, (size_t)n * 4);
  device(be, "adamw", "V", v, (size_t)n * 4);
  cpu->adamw(be, w, g, m, v, n, lr, b1, b2, eps, wd, t);
}

static void ck_sgd(halo_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
                   float mu, float wd, int nesterov) {
  device(be, "sgd", "W", w, (size_t)n * 4);
  device(be, "sgd", "G", g, (size_t)n * 4);
  if (mu != 0.0f) device(be, "sgd", "buf", buf, (size_t)n * 4);
  cpu->sgd(be, w, g, buf, n, lr, mu, wd, nesterov);
}

static void ck_scale(halo_backend *be, float *x, int64_t n, float s) {
  device(be, "scale", "X", x, (size_t)n * 4);
  cpu->scale(be, x, n, s);
}

static void ck_copy(halo_backend *be, float *dst, const float *src, int64_t n) {
  device(be, "copy", "dst", dst, (size_t)n * 4);
  device(be, "copy", "src", src, (size_t)n * 4);
  cpu->copy(be, dst, src, n);
}

static void ck_pack(halo_backend *be, float *dst, const float *src, int64_t cols,
                    const int32_t *idx, int64_t n) {
  device(be, "pack", "dst", dst, span(n, cols, cols, 4));
  device(be, "pack", "idx", idx, (size_t)n * 4);
  if (n > 0) device(be, "pack", "src", src, (size_t)cols * 4);
  cpu->pack(be, dst, src, cols, idx, n);
}

static void ck_quant_pack(halo_backend *be, uint8_t *dst, const float *src, int64_t cols,
                          const int32_t *idx, const int64_t *gid, int64_t n, int prec,
                          uint64_t key) {
  device(be, "quant_pack", "dst", dst, (size_t)(n * halo_quant_row_bytes(prec, cols)));
  device(be, "quant_pack", "idx", idx, (size_t)n * 4);
  device(be, "quant_pack", "gid", gid, (size_t)n * 8);
  if (n > 0) device(be, "quant_pack", "src", src, (size_t)cols * 4);
  cpu->quant_pack(be, dst, src, cols, idx, gid, n, prec, key);
}

static void ck_quant_unpack(halo_backend *be, float *dst, const uint8_t *src, int64_t cols,
                            int64_t n, int prec) {
  device(be, "quant_unpack", "dst", dst, span(n, cols, cols, 4));
  device(be, "quant_unpack", "src", src, (size_t)(n * halo_quant_row_bytes(prec, cols)));
  cpu->quant_unpack(be, dst, src, cols, n, prec);
}

static void ck_spmm(halo_backend *be, const halo_csr *a, const float *x, int64_t ldx, int64_t ncols,
                    float beta, float *y, int64_t ldy, const int32_t *rows, int64_t nrows) {
  device_csr(be, "spmm", a);
  device(be, "spmm", "X", x, span(a->cols, ncols, ldx, 4));
  device(be, "spmm", "Y", y, span(rows ? a->rows : nrows, ncols, ldy, 4));
  if (rows) device(be, "spmm", "rows", rows, (size_t)nrows * 4);
  cpu->spmm(be, a, x, ldx, ncols, beta, y, ldy, rows, nrows);
}

/* The deterministic slots, as a device backend has them: operands in
 * device memory, results in host memory, and a host workspace of their own
 * (the trainer hands a device backend none). */
static void ck_gemm_rows(halo_backend *be, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  device(be, "gemm_rows", "A", a, span(m, k, lda, 4));
  device(be, "gemm_rows", "B", b, tb ? span(n, k, ldb, 4) : span(k, n, ldb, 4));
  device(be, "gemm_rows", "C", c, span(m, n, ldc, 4));
  cpu->gemm_rows(be, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

static float ck_max_abs(halo_backend *be, const float *x, int64_t n) {
  device(be, "max_abs", "X", x, (size_t)n * 4);
  return cpu->max_abs(be, x, n);
}

static void *exact_work(const char *slot, size_t bytes) {
  void *work = aligned_alloc(16, (bytes + 15) / 16 * 16 + 16);
  if (!work) fail(slot, "workspace", "could not be allocated");
  return work;
}

static void ck_exact_tn(halo_backend *be, int64_t n, int64_t ac, int64_t bc, const float *a,
                        int64_t lda, const float *b, int64_t ldb, int e, int threads, void *work,
                        int64_t *acc) {
  if (work) fail("exact_tn", "work", "is given to a device backend");
  if (a) device(be, "exact_tn", "A", a, span(n, ac, lda, 4));
  device(be, "exact_tn", "B", b, span(n, bc, ldb, 4));
  host(be, "exact_tn", "acc", acc);
  work = exact_work("exact_tn", halo_cpu_exact_tn_work(ac, bc, threads));
  cpu->exact_tn(be, n, ac, bc, a, lda, b, ldb, e, threads, work, acc);
  free(work);
}

static void ck_exact_csr(halo_backend *be, const halo_csr *at, const float *b, int64_t bc,
                         int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  if (work) fail("exact_csr", "work", "is given to a device backend");
  device_csr(be, "exact_csr", at);
  device(be, "exact_csr", "B", b, span(at->cols, bc, ldb, 4));
  host(be, "exact_csr", "acc", acc);
  work = exact_work("exact_csr", halo_cpu_exact_csr_work(bc, threads));
  cpu->exact_csr(be, at, b, bc, ldb, e, threads, work, acc);
  free(work);
}

/* A declared product must lie in device memory, rows [0, nrows) of A. */
static halo_status ck_spmm_prepare(halo_backend *be, const halo_csr *a, int64_t nrows,
                                   int64_t ncols) {
  device_csr(be, "spmm_prepare", a);
  if (nrows < 0 || nrows > a->rows || ncols < 1)
    fail("spmm_prepare", "shape", "is not rows [0, nrows) of A times ncols >= 1 columns");
  return HALO_OK;
}

static void ck_csr_dropout(halo_backend *be, const halo_csr *a, int transposed, const int64_t *gid,
                           uint64_t key, float p, float *out) {
  device_csr(be, "csr_dropout", a);
  device(be, "csr_dropout", "global_id", gid, 8);
  device(be, "csr_dropout", "out", out, (size_t)a->nnz * 4);
  cpu->csr_dropout(be, a, transposed, gid, key, p, out);
}

static void ck_destroy(halo_backend *be) {
  checked_ctx *c = ctx_of(be);
  if (c && c->nregions > 0)
    fprintf(stderr, "checked backend: %zu device buffers were never freed\n", c->nregions);
  if (c && c->nqueued > 0)
    fprintf(stderr, "checked backend: %d queued copies were never waited for\n", c->nqueued);
  if (c) free(c->regions);
  free(c);
  be->context = NULL;
}

static const halo_backend_ops checked_ops = {
    .name = "checked",
    .space = HALO_MEM_DEVICE,
    .destroy = ck_destroy,
    .buf_alloc = ck_buf_alloc,
    .buf_free = ck_buf_free,
    .upload = ck_upload,
    .download = ck_download,
    .csr_upload = ck_csr_upload,
    .csr_free = ck_csr_free,
    .synchronize = ck_synchronize,
    .mpi_takes_device = ck_mpi_takes_device,
    .host_alloc = ck_host_alloc,
    .host_free = ck_host_free,
    .copy_wait_compute = ck_copy_wait_compute,
    .copy_download = ck_copy_download,
    .copy_upload = ck_copy_upload,
    .copy_synchronize = ck_copy_synchronize,
    .compute_wait_copy = ck_compute_wait_copy,
    .gemm = ck_gemm,
    .bias_add = ck_bias_add,
    .colsum = ck_colsum,
    .relu = ck_relu,
    .relu_backward = ck_relu_backward,
    .axpy = ck_axpy,
    .elu = ck_elu,
    .elu_backward = ck_elu_backward,
    .leaky_relu = ck_leaky_relu,
    .leaky_relu_backward = ck_leaky_relu_backward,
    .gelu_to = ck_gelu_to,
    .gelu_backward = ck_gelu_backward,
    .l2_normalize = ck_l2_normalize,
    .l2_normalize_backward = ck_l2_normalize_backward,
    .layernorm = ck_layernorm,
    .layernorm_backward = ck_layernorm_backward,
    .mul = ck_mul,
    .model_ops = HALO_MODEL_OPS_ALL,
    .model_kernel = ck_model_kernel,
    .dropout = ck_dropout,
    .dropout_to = ck_dropout_to,
    .softmax_xent = ck_softmax_xent,
    .sigmoid_bce = ck_sigmoid_bce,
    .adam = ck_adam,
    .adamw = ck_adamw,
    .sgd = ck_sgd,
    .scale = ck_scale,
    .copy = ck_copy,
    .pack = ck_pack,
    .quant_pack = ck_quant_pack,
    .quant_unpack = ck_quant_unpack,
    .gemm_rows = ck_gemm_rows,
    .max_abs = ck_max_abs,
    .exact_tn = ck_exact_tn,
    .exact_csr = ck_exact_csr,
    .spmm = ck_spmm,
    .spmm_prepare = ck_spmm_prepare,
    .csr_dropout = ck_csr_dropout,
};

/* N of the environment variable `name` = "RANK:N" on world rank RANK; 0 otherwise. */
static int64_t nth_failure(const char *name, int rank) {
  const char *spec = getenv(name);
  int fail_rank = -1;
  long long nth = 0;
  if (spec && sscanf(spec, "%d:%lld", &fail_rank, &nth) == 2 && fail_rank == rank) return nth;
  return 0;
}

halo_status checked_backend_create(int mpi_device, halo_backend **out) {
  halo_backend *be = calloc(1, sizeof *be);
  checked_ctx *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!be || !c) {
    free(be);
    free(c);
    return HALO_ERR_NOMEM;
  }
  c->mpi_device = mpi_device;
  int rank = 0, mpi = 0;
  if (MPI_Initialized(&mpi) == MPI_SUCCESS && mpi) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  c->fail_download = nth_failure("HALO_CHECKED_FAIL_DOWNLOAD", rank);
  c->fail_upload = nth_failure("HALO_CHECKED_FAIL_UPLOAD", rank);
  c->fail_synchronize = nth_failure("HALO_CHECKED_FAIL_SYNCHRONIZE", rank);
  be->ops = &checked_ops;
  be->context = c;
  *out = be;
  return HALO_OK;
}

void checked_backend_counts(const halo_backend *be, int64_t *uploads, int64_t *downloads,
                            int64_t *host_allocs, int64_t *synchronizes) {
  const checked_ctx *c = be->context;
  *uploads = c->uploads;
  *downloads = c->downloads;
  *host_allocs = c->host_allocs;
  *synchronizes = c->synchronizes;
}
