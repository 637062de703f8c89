/* Planned CSR × dense products on the GPU (cuSPARSE generic API).
 *
 * Device layout of a plan (I = int32 or int64, chosen once):
 *   offsets    I[rows+1]          A.indptr; its first split+1 entries also
 *                                  serve the interior part, which starts at 0
 *   boundary   I[rows-split+1]    A.indptr[split:] - A.indptr[split], so the
 *                                  boundary part is a CSR of its own whose
 *                                  column and value arrays start at nonzero
 *                                  A.indptr[split] of the shared arrays
 *   indices    I[nnz]
 *   values     float[nnz]         ones when A.values is NULL
 *   workspace  the largest cusparseSpMM_bufferSize over shapes and parts
 *
 * A plan over a device CSR (halo_spmm_cuda_plan_create_device) has the one
 * part HALO_SPMM_ALL, its own offsets rebased to 0 on the device, and
 * borrows the caller's column indices (int32) and values, moved forward to
 * the view's first nonzero; with int64 indices it holds a widened copy of
 * the columns.
 *
 * Alignment.  cuSPARSE 12 vectorises its loads and stores and faults with
 * cudaErrorMisalignedAddress on arrays that are not 16-byte aligned (seen
 * for SpMV's y in Kokkos Kernels #1889 and for index arrays in PyTorch
 * #169419; the documentation promises nothing either way).  Every array a
 * plan hands cuSPARSE is therefore 16-byte aligned: a block of rows that
 * starts mid-array (the boundary part, a row view) gets its own copy of its
 * columns and values when their addresses are not, and a run whose X or
 * part of Y is not aligned goes to the row kernel (as the CUDA backend
 * sends such products there too).  halo-cuda-emu, the CPU emulation the
 * GPU tests also run on, enforces the rule, so a break of it fails CI.
 */
#include <stdlib.h>
#include <string.h>

#include "halo-cuda-launch.cuh"
#include "halo-spmm-cuda.h"

constexpr int kParts = 3;

/* Dense descriptors for one planned shape: X, and Y for each part (their
 * row counts differ).  Outside the anonymous namespace, since the plan,
 * a type of the C header, holds them. */
struct shape_descr {
  halo_spmm_cuda_shape shape;
  cusparseDnMatDescr_t x;
  cusparseDnMatDescr_t y[kParts];
};

namespace {

int64_t part_first_row(int64_t split, halo_spmm_part part) {
  return part == HALO_SPMM_BOUNDARY ? split : 0;
}

/* halo_spmm_cuda_run_rows: a group of L lanes per listed row (L = 32, a
 * warp, or 16 or 8 for matrices at most that wide, so that narrow products
 * such as the class layer's do not leave most lanes idle).  Lane l of a
 * group accumulates columns c0 + l + L·q for q < kColsPerLane, so a group
 * covers L·4 columns per pass over the row's nonzeros and reads each X row
 * in coalesced pieces; wider matrices take several passes.  The nonzero's
 * index and value are the same for all lanes of a group, which the cache
 * broadcasts.  No lane waits for another, so groups may diverge. */
constexpr int kWarp = 32;
constexpr int kColsPerLane = 4;
constexpr int kRowsThreads = 256;

template <typename O, typename I, int L>
__global__ void spmm_rows_kernel(const O *offsets, const I *indices, const float *values,
                                 const float *x, int64_t ldx, int64_t ncols, float beta, float *y,
                                 int64_t ldy, const int32_t *rows, int64_t nrows) {
  const int lane = threadIdx.x % L;
  const int64_t groups = (int64_t)gridDim.x * blockDim.x / L;
  for (int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L; w < nrows; w += groups) {
    const int64_t r = rows ? rows[w] : w;
    const int64_t lo = offsets[r], hi = offsets[r + 1];
    float *yr = y + r * ldy;
    for (int64_t c0 = 0; c0 < ncols; c0 += L * kColsPerLane) {
      float acc[kColsPerLane] = {};
      for (int64_t k = lo; k < hi; k++) {
        const float v = values[k];
        const float *xr = x + (int64_t)indices[k] * ldx + c0 + lane;
#pragma unroll
        for (int q = 0; q < kColsPerLane; q++)
          if (c0 + lane + L * q < ncols) acc[q] += v * xr[L * q];
      }
#pragma unroll
      for (int q = 0; q < kColsPerLane; q++) {
        const int64_t j = c0 + lane + L * q;
        if (j < ncols) yr[j] = beta == 0.0f ? acc[q] : beta * yr[j] + acc[q];
      }
    }
  }
}

/* out[i] = indptr[i] - indptr[0] for i in [0, n): a row view's offsets as a
 * CSR of its own, in cuSPARSE's index width. */
template <typename I>
__global__ void rebase_offsets_kernel(const int64_t *indptr, int64_t n, I *out) {
  const int64_t base = indptr[0];
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = (I)(indptr[i] - base);
}

__global__ void widen_indices_kernel(const int32_t *in, int64_t n, int64_t *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[i];
}

bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

/* Launches spmm_rows_kernel with the narrowest group that covers ncols in
 * one pass of one column per lane, or a warp: groups of `lanes` per row,
 * the grid capped (the kernel's loop strides over the rest). */
template <typename O, typename I>
halo_status launch_rows(const O *offsets, const I *indices, const float *values, const float *x,
                        int64_t ldx, int64_t ncols, float beta, float *y, int64_t ldy,
                        const int32_t *rows, int64_t nrows, cudaStream_t s) {
  const int lanes = ncols <= 8 ? 8 : ncols <= 16 ? 16 : kWarp;
  return halo_cuda_launch(lanes == 8    ? spmm_rows_kernel<O, I, 8>
                          : lanes == 16 ? spmm_rows_kernel<O, I, 16>
                                        : spmm_rows_kernel<O, I, kWarp>,
                          halo_cuda_blocks(nrows, kRowsThreads / lanes), kRowsThreads, s, offsets,
                          indices, values, x, ldx, ncols, beta, y, ldy, rows, nrows);
}

}  // namespace

struct halo_spmm_cuda_plan {
  cusparseHandle_t handle;
  cusparseSpMMAlg_t alg;
  int index64;
  int64_t rows, cols, nnz, split;
  int64_t part_rows[kParts], part_nnz[kParts];
  void *offsets, *boundary, *indices; /* device, of the index width */
  float *values;                      /* device */
  int device_view;                    /* from halo_spmm_cuda_plan_create_device */
  int owns_indices, owns_values;      /* 0: borrowed from the caller's CSR */
  void *boundary_indices;             /* aligned copies for the boundary part, or NULL */
  float *boundary_values;
  int64_t first_nz;           /* device view: the view's first nonzero */
  const float *values_base;   /* device view: the caller's values array */
  const float *matrix_values; /* device view: the matrix's own values (creation) */
  int copy_is_matrix;         /* owns_values: the copy holds matrix_values' */
  void *workspace;            /* device */
  size_t workspace_bytes;
  int64_t device_bytes;
  cusparseSpMatDescr_t mat[kParts]; /* NULL for a part without nonzeros */
  shape_descr *shapes;
  int nshapes;
};

extern "C" int halo_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError(); /* clear it: no device is an answer, not a fault */
    return 0;
  }
  return n;
}

extern "C" const char *halo_cuda_device_problem(void) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaGetErrorString(e);
  }
  return n > 0 ? NULL : "no CUDA device";
}

/* Checks the host CSR once, naming the first bad entry. */
static halo_status check_csr(const halo_csr *a, int64_t split) {
  if (a->rows < 0 || a->cols < 0 || a->nnz < 0 || !a->indptr || (a->nnz > 0 && !a->indices)) {
    halo_log_error("halo_spmm_cuda_plan_create: malformed CSR (rows=%lld cols=%lld nnz=%lld)",
                   (long long)a->rows, (long long)a->cols, (long long)a->nnz);
    return HALO_ERR_ARG;
  }
  if (a->cols > INT32_MAX) {
    halo_log_error("halo_spmm_cuda_plan_create: %lld columns exceed int32 column indices",
                   (long long)a->cols);
    return HALO_ERR_LIMIT;
  }
  if (split < 0 || split > a->rows) {
    halo_log_error("halo_spmm_cuda_plan_create: split %lld is not in [0, %lld]", (long long)split,
                   (long long)a->rows);
    return HALO_ERR_ARG;
  }
  if (a->indptr[0] != 0 || a->indptr[a->rows] != a->nnz) {
    halo_log_error(
        "halo_spmm_cuda_plan_create: indptr[0] = %lld and indptr[%lld] = %lld, "
        "expected 0 and nnz = %lld",
        (long long)a->indptr[0], (long long)a->rows, (long long)a->indptr[a->rows],
        (long long)a->nnz);
    return HALO_ERR_ARG;
  }
  for (int64_t r = 0; r < a->rows; r++) {
    if (a->indptr[r + 1] < a->indptr[r]) {
      halo_log_error("halo_spmm_cuda_plan_create: indptr[%lld] = %lld decreases to %lld",
                     (long long)r, (long long)a->indptr[r], (long long)a->indptr[r + 1]);
      return HALO_ERR_ARG;
    }
  }
  for (int64_t k = 0; k < a->nnz; k++) {
    if (a->indices[k] < 0 || a->indices[k] >= a->cols) {
      halo_log_error(
          "halo_spmm_cuda_plan_create: indices[%lld] = %d is out of range "
          "(columns: %lld)",
          (long long)k, a->indices[k], (long long)a->cols);
      return HALO_ERR_RANGE;
    }
  }
  return HALO_OK;
}

/* Creates the dense descriptors of one shape and returns in *bytes the
 * largest workspace cuSPARSE asks for over the parts and both betas that
 * runs take (bufferSize takes the scalars, so its answer may depend on them;
 * the documentation does not say).  Dense descriptors need an address;
 * bufferSize reads no data, so the offsets array (always allocated) stands
 * in until run() binds the caller's X and Y. */
static halo_status plan_shape(halo_spmm_cuda_plan *p, const halo_spmm_cuda_shape *shape,
                              shape_descr *d, size_t *bytes) {
  halo_status st = HALO_OK;
  const float one = 1.0f, betas[2] = {0.0f, 1.0f};
  *bytes = 0;
  d->shape = *shape;
  HALO_CUSPARSE(cusparseCreateDnMat(&d->x, p->cols, shape->ncols, shape->ldx, p->offsets,
                                    CUDA_R_32F, CUSPARSE_ORDER_ROW));
  for (int part = 0; part < kParts; part++) {
    size_t need = 0;
    if (!p->mat[part]) continue;
    HALO_CUSPARSE(cusparseCreateDnMat(&d->y[part], p->part_rows[part], shape->ncols, shape->ldy,
                                      p->offsets, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    for (int b = 0; b < 2; b++) {
      HALO_CUSPARSE(cusparseSpMM_bufferSize(
          p->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
          p->mat[part], d->x, &betas[b], d->y[part], CUDA_R_32F, p->alg, &need));
      if (need > *bytes) *bytes = need;
    }
  }
done:
  return st;
}

static int shape_valid(const halo_spmm_cuda_shape *sh) {
  return sh->ncols >= 1 && sh->ldx >= sh->ncols && sh->ldy >= sh->ncols;
}

/* dst[i] = src[i] - base for i in [0, n), as int32 or int64. */
static void fill_offsets(void *dst, int index64, const int64_t *src, int64_t n, int64_t base) {
  if (index64) {
    int64_t *d = (int64_t *)dst;
    for (int64_t i = 0; i < n; i++) d[i] = src[i] - base;
  } else {
    int32_t *d = (int32_t *)dst;
    for (int64_t i = 0; i < n; i++) d[i] = (int32_t)(src[i] - base);
  }
}

/* Allocates `bytes` on the device (at least one byte, so that every array
 * has an address) and copies `host` there when it is not NULL. */
static halo_status upload(void **dev, const void *host, size_t bytes, cudaStream_t stream,
                          int64_t *total, const char *what) {
  halo_status st = HALO_OK;
  cudaError_t e = cudaMalloc(dev, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    halo_log_error("halo_spmm_cuda_plan_create: cudaMalloc of %s (%zu bytes): %s", what, bytes,
                   cudaGetErrorString(e));
    *dev = NULL;
    return HALO_ERR_NOMEM;
  }
  *total += (int64_t)bytes;
  if (host && bytes) HALO_CUDA(cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, stream));
done:
  return st;
}

/* *dst = a new device copy of the `bytes` at device address src, ordered
 * on `stream`: an aligned home for a block that starts mid-array. */
static halo_status copy_aligned(void **dst, const void *src, size_t bytes, cudaStream_t stream,
                                int64_t *total, const char *what) {
  halo_status st = HALO_OK;
  HALO_TRY(upload(dst, NULL, bytes, stream, total, what));
  if (bytes) HALO_CUDA(cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
done:
  return st;
}

/* The descriptors of every shape, and one workspace for the largest
 * bufferSize among them, taken here once. */
static halo_status plan_shapes(halo_spmm_cuda_plan *p, const halo_spmm_cuda_shape *shapes,
                               int nshapes, cudaStream_t stream) {
  halo_status st = HALO_OK;
  for (int i = 0; i < nshapes; i++) {
    size_t bytes = 0;
    HALO_TRY(plan_shape(p, &shapes[i], &p->shapes[i], &bytes));
    if (bytes > p->workspace_bytes) p->workspace_bytes = bytes;
  }
  if (p->workspace_bytes > 0)
    HALO_TRY(upload(&p->workspace, NULL, p->workspace_bytes, stream, &p->device_bytes,
                    "SpMM workspace"));
done:
  return st;
}

static void shape_descr_destroy(shape_descr *d) {
  if (d->x) cusparseDestroyDnMat(d->x);
  for (int part = 0; part < kParts; part++)
    if (d->y[part]) cusparseDestroyDnMat(d->y[part]);
  memset(d, 0, sizeof *d);
}

extern "C" void halo_spmm_cuda_plan_destroy(halo_spmm_cuda_plan **plan) {
  if (!plan || !*plan) return;
  halo_spmm_cuda_plan *p = *plan;
  for (int s = 0; s < p->nshapes; s++) shape_descr_destroy(&p->shapes[s]);
  free(p->shapes);
  for (int part = 0; part < kParts; part++)
    if (p->mat[part]) cusparseDestroySpMat(p->mat[part]);
  cudaFree(p->workspace);
  cudaFree(p->boundary_values);
  cudaFree(p->boundary_indices);
  if (p->owns_values) cudaFree(p->values);
  if (p->owns_indices) cudaFree(p->indices);
  cudaFree(p->boundary);
  cudaFree(p->offsets);
  if (p->handle) cusparseDestroy(p->handle);
  free(p);
  *plan = NULL;
}

extern "C" halo_status halo_spmm_cuda_plan_create(const halo_csr *a, int64_t split,
                                                  const halo_spmm_cuda_shape *shapes, int nshapes,
                                                  const halo_spmm_cuda_options *options,
                                                  void *stream, halo_spmm_cuda_plan **out) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  halo_spmm_cuda_plan *p = NULL;
  void *h_offsets = NULL, *h_boundary = NULL, *h_indices = NULL;
  float *h_ones = NULL;
  size_t isz = 0;
  const cudaDataType f32 = CUDA_R_32F;
  cusparseIndexType_t itype;

  if (!out || !a || (nshapes > 0 && !shapes) || nshapes < 0) {
    halo_log_error("halo_spmm_cuda_plan_create: NULL argument");
    return HALO_ERR_ARG;
  }
  *out = NULL;
  HALO_TRY(check_csr(a, split));
  for (int i = 0; i < nshapes; i++)
    if (!shape_valid(&shapes[i]))
      HALO_FAIL(HALO_ERR_ARG,
                "halo_spmm_cuda_plan_create: shape %d (ncols=%lld ldx=%lld ldy=%lld) needs "
                "ldx, ldy >= ncols >= 1",
                i, (long long)shapes[i].ncols, (long long)shapes[i].ldx, (long long)shapes[i].ldy);

  /* calloc, so that destroy() finds NULL in every slot not yet filled. */
  p = (halo_spmm_cuda_plan *)calloc(1, sizeof *p);
  if (p) p->shapes = (shape_descr *)calloc(nshapes ? (size_t)nshapes : 1, sizeof *p->shapes);
  if (!p || !p->shapes)
    HALO_FAIL(HALO_ERR_NOMEM, "halo_spmm_cuda_plan_create: out of host memory for the plan");
  p->nshapes = nshapes;
  p->owns_indices = p->owns_values = 1;
  p->rows = a->rows;
  p->cols = a->cols;
  p->nnz = a->nnz;
  p->split = split;
  p->index64 = (options && options->force_index64) || a->nnz > INT32_MAX || a->rows > INT32_MAX;
  p->alg = CUSPARSE_SPMM_ALG_DEFAULT;
  if (options && options->alg == HALO_SPMM_CUDA_ALG_CSR1) p->alg = CUSPARSE_SPMM_CSR_ALG1;
  if (options && options->alg == HALO_SPMM_CUDA_ALG_CSR2) p->alg = CUSPARSE_SPMM_CSR_ALG2;
  p->part_rows[HALO_SPMM_ALL] = a->rows;
  p->part_rows[HALO_SPMM_INTERIOR] = split;
  p->part_rows[HALO_SPMM_BOUNDARY] = a->rows - split;
  p->part_nnz[HALO_SPMM_ALL] = a->nnz;
  p->part_nnz[HALO_SPMM_INTERIOR] = a->indptr[split];
  p->part_nnz[HALO_SPMM_BOUNDARY] = a->nnz - a->indptr[split];
  itype = p->index64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  isz = p->index64 ? sizeof(int64_t) : sizeof(int32_t);

  /* Host staging in the device's index width. */
  h_offsets = malloc((size_t)(a->rows + 1) * isz);
  h_boundary = malloc((size_t)(a->rows - split + 1) * isz);
  h_indices = p->index64 ? malloc((size_t)(a->nnz ? a->nnz : 1) * isz) : NULL;
  h_ones = a->values ? NULL : (float *)malloc((size_t)(a->nnz ? a->nnz : 1) * sizeof(float));
  if (!h_offsets || !h_boundary || (p->index64 && !h_indices) || (!a->values && !h_ones))
    HALO_FAIL(HALO_ERR_NOMEM, "halo_spmm_cuda_plan_create: out of host memory staging %lld rows",
              (long long)a->rows);
  fill_offsets(h_offsets, p->index64, a->indptr, a->rows + 1, 0);
  fill_offsets(h_boundary, p->index64, a->indptr + split, a->rows - split + 1, a->indptr[split]);
  if (p->index64)
    for (int64_t k = 0; k < a->nnz; k++) ((int64_t *)h_indices)[k] = a->indices[k];
  if (h_ones)
    for (int64_t k = 0; k < a->nnz; k++) h_ones[k] = 1.0f;

  HALO_CUSPARSE(cusparseCreate(&p->handle));
  HALO_CUSPARSE(cusparseSetStream(p->handle, s));
  HALO_TRY(upload(&p->offsets, h_offsets, (size_t)(a->rows + 1) * isz, s, &p->device_bytes,
                  "row offsets"));
  HALO_TRY(upload(&p->boundary, h_boundary, (size_t)(a->rows - split + 1) * isz, s,
                  &p->device_bytes, "boundary row offsets"));
  HALO_TRY(upload(&p->indices, p->index64 ? h_indices : (const void *)a->indices,
                  (size_t)a->nnz * isz, s, &p->device_bytes, "column indices"));
  HALO_TRY(upload((void **)&p->values, a->values ? (const void *)a->values : h_ones,
                  (size_t)a->nnz * sizeof(float), s, &p->device_bytes, "values"));
  /* The host buffers are freed below: wait for the copies out of them. */
  HALO_CUDA(cudaStreamSynchronize(s));

  for (int part = 0; part < kParts; part++) {
    if (p->part_nnz[part] == 0) continue; /* run() handles an empty part itself */
    const int64_t first_nz = part == HALO_SPMM_BOUNDARY ? a->indptr[split] : 0;
    void *offsets = part == HALO_SPMM_BOUNDARY ? p->boundary : p->offsets;
    void *columns = (char *)p->indices + first_nz * (int64_t)isz;
    float *values = p->values + first_nz;
    if (!aligned16(columns) || !aligned16(values)) { /* see Alignment at the top */
      HALO_TRY(copy_aligned(&p->boundary_indices, columns, (size_t)p->part_nnz[part] * isz, s,
                            &p->device_bytes, "boundary column indices"));
      HALO_TRY(copy_aligned((void **)&p->boundary_values, values,
                            (size_t)p->part_nnz[part] * sizeof(float), s, &p->device_bytes,
                            "boundary values"));
      columns = p->boundary_indices;
      values = p->boundary_values;
    }
    HALO_CUSPARSE(cusparseCreateCsr(&p->mat[part], p->part_rows[part], a->cols, p->part_nnz[part],
                                    offsets, columns, values, itype, itype,
                                    CUSPARSE_INDEX_BASE_ZERO, f32));
  }
  HALO_CUDA(cudaStreamSynchronize(s)); /* finished on return, as the header says */

  HALO_TRY(plan_shapes(p, shapes, nshapes, s));

  *out = p;
  p = NULL;
done:
  free(h_ones);
  free(h_indices);
  free(h_boundary);
  free(h_offsets);
  halo_spmm_cuda_plan_destroy(&p);
  return st;
}

/* One part on the row kernel: the part's rows of the plan's offsets point
 * into the plan's columns and values as they are, so the part needs no
 * arrays of its own. */
static halo_status run_part_rows(const halo_spmm_cuda_plan *plan, halo_spmm_part part,
                                 const float *x, int64_t ldx, int64_t ncols, float beta,
                                 float *y_part, int64_t ldy, cudaStream_t s) {
  const int64_t first = part_first_row(plan->split, part);
  if (plan->index64)
    return launch_rows((const int64_t *)plan->offsets + first, (const int64_t *)plan->indices,
                       plan->values, x, ldx, ncols, beta, y_part, ldy, NULL, plan->part_rows[part],
                       s);
  return launch_rows((const int32_t *)plan->offsets + first, (const int32_t *)plan->indices,
                     plan->values, x, ldx, ncols, beta, y_part, ldy, NULL, plan->part_rows[part],
                     s);
}

extern "C" halo_status halo_spmm_cuda_run(halo_spmm_cuda_plan *plan, halo_spmm_part part,
                                          const float *x, int64_t ldx, int64_t ncols, float beta,
                                          float *y, int64_t ldy, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  shape_descr *d = NULL;
  float *y_part = NULL;
  const float one = 1.0f;

  if (!plan || part < HALO_SPMM_ALL || part > HALO_SPMM_BOUNDARY ||
      (plan->device_view && part != HALO_SPMM_ALL)) {
    halo_log_error("halo_spmm_cuda_run: %s", !plan ? "plan is NULL"
                                             : plan->device_view
                                                 ? "a plan over a device CSR has one part, ALL"
                                                 : "unknown part");
    return HALO_ERR_ARG;
  }
  for (int i = 0; i < plan->nshapes && !d; i++) {
    const halo_spmm_cuda_shape *sh = &plan->shapes[i].shape;
    if (sh->ncols == ncols && sh->ldx == ldx && sh->ldy == ldy) d = &plan->shapes[i];
  }
  if (!d) {
    halo_log_error("halo_spmm_cuda_run: shape ncols=%lld ldx=%lld ldy=%lld was not planned",
                   (long long)ncols, (long long)ldx, (long long)ldy);
    return HALO_ERR_UNSUPPORTED;
  }
  if (plan->part_rows[part] == 0) return HALO_OK;
  y_part = y + part_first_row(plan->split, part) * ldy;

  if (!plan->mat[part]) {
    /* No nonzeros: the product is zero, so Y = beta · Y. */
    if (beta == 0.0f)
      HALO_CUDA(cudaMemset2DAsync(y_part, (size_t)ldy * sizeof(float), 0,
                                  (size_t)ncols * sizeof(float), (size_t)plan->part_rows[part], s));
    else if (beta != 1.0f)
      HALO_FAIL(HALO_ERR_UNSUPPORTED, "halo_spmm_cuda_run: beta = %g on a part without nonzeros",
                (double)beta);
    goto done;
  }

  if (!aligned16(x) || !aligned16(y_part)) {
    st = run_part_rows(plan, part, x, ldx, ncols, beta, y_part, ldy, s);
    goto done;
  }

  HALO_CUSPARSE(cusparseSetStream(plan->handle, s));
  HALO_CUSPARSE(cusparseDnMatSetValues(d->x, (void *)x));
  HALO_CUSPARSE(cusparseDnMatSetValues(d->y[part], y_part));
  HALO_CUSPARSE(cusparseSpMM(plan->handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                             CUSPARSE_OPERATION_NON_TRANSPOSE, &one, plan->mat[part], d->x, &beta,
                             d->y[part], CUDA_R_32F, plan->alg, plan->workspace));
done:
  return st;
}

extern "C" halo_status halo_spmm_cuda_plan_add_shape(halo_spmm_cuda_plan *plan,
                                                     const halo_spmm_cuda_shape *shape) {
  halo_status st = HALO_OK;
  shape_descr *grown = NULL, *added = NULL;
  size_t bytes = 0;
  void *workspace = NULL;
  if (!plan || !shape || !shape_valid(shape)) {
    halo_log_error("halo_spmm_cuda_plan_add_shape: %s",
                   plan && shape ? "needs ldx, ldy >= ncols >= 1" : "NULL argument");
    return HALO_ERR_ARG;
  }
  for (int i = 0; i < plan->nshapes; i++) {
    const halo_spmm_cuda_shape *sh = &plan->shapes[i].shape;
    if (sh->ncols == shape->ncols && sh->ldx == shape->ldx && sh->ldy == shape->ldy) return HALO_OK;
  }
  grown = (shape_descr *)realloc(plan->shapes, (size_t)(plan->nshapes + 1) * sizeof *grown);
  if (!grown) HALO_FAIL(HALO_ERR_NOMEM, "halo_spmm_cuda_plan_add_shape: out of host memory");
  plan->shapes = grown;
  memset(&plan->shapes[plan->nshapes], 0, sizeof *grown);
  added = &plan->shapes[plan->nshapes++];
  HALO_TRY(plan_shape(plan, shape, added, &bytes));
  if (bytes > plan->workspace_bytes) {
    /* Queued runs may still use the old workspace. */
    HALO_CUDA(cudaDeviceSynchronize());
    if (cudaMalloc(&workspace, bytes) != cudaSuccess)
      HALO_FAIL(HALO_ERR_NOMEM, "halo_spmm_cuda_plan_add_shape: cudaMalloc of %zu bytes failed",
                bytes);
    cudaFree(plan->workspace);
    plan->device_bytes += (int64_t)bytes - (int64_t)plan->workspace_bytes;
    plan->workspace = workspace;
    plan->workspace_bytes = bytes;
  }
done:
  if (st < 0 && added) {
    /* Not planned after all: a later run must not find it. */
    shape_descr_destroy(added);
    plan->nshapes--;
  }
  return st;
}

extern "C" halo_status halo_spmm_cuda_run_rows(halo_spmm_cuda_plan *plan, const float *x,
                                               int64_t ldx, int64_t ncols, float beta, float *y,
                                               int64_t ldy, const int32_t *rows, int64_t nrows,
                                               void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (!plan || ncols < 1 || ldx < ncols || ldy < ncols || nrows < 0 ||
      (!rows && nrows > plan->rows)) {
    halo_log_error(
        "halo_spmm_cuda_run_rows: bad arguments (ncols=%lld ldx=%lld ldy=%lld "
        "nrows=%lld)",
        (long long)ncols, (long long)ldx, (long long)ldy, (long long)nrows);
    return HALO_ERR_ARG;
  }
  if (nrows == 0) return HALO_OK;
  if (plan->index64)
    return launch_rows((const int64_t *)plan->offsets, (const int64_t *)plan->indices, plan->values,
                       x, ldx, ncols, beta, y, ldy, rows, nrows, s);
  return launch_rows((const int32_t *)plan->offsets, (const int32_t *)plan->indices, plan->values,
                     x, ldx, ncols, beta, y, ldy, rows, nrows, s);
}

extern "C" int64_t halo_spmm_cuda_plan_bytes(const halo_spmm_cuda_plan *plan) {
  return plan ? plan->device_bytes : 0;
}

extern "C" int halo_spmm_cuda_plan_index64(const halo_spmm_cuda_plan *plan) {
  return plan ? plan->index64 : 0;
}

extern "C" halo_status halo_spmm_cuda_csr_rows(const halo_csr *a, const float *x, int64_t ldx,
                                               int64_t ncols, float beta, float *y, int64_t ldy,
                                               const int32_t *rows, int64_t nrows, void *stream) {
  if (!a || !a->indptr || (a->nnz > 0 && (!a->indices || !a->values)) || ncols < 1 || ldx < ncols ||
      ldy < ncols || nrows < 0 || (!rows && nrows > a->rows)) {
    halo_log_error(
        "halo_spmm_cuda_csr_rows: bad arguments (ncols=%lld ldx=%lld ldy=%lld nrows=%lld)",
        (long long)ncols, (long long)ldx, (long long)ldy, (long long)nrows);
    return HALO_ERR_ARG;
  }
  if (nrows == 0) return HALO_OK;
  return launch_rows<int64_t, int32_t>(a->indptr, a->indices, a->values, x, ldx, ncols, beta, y,
                                       ldy, rows, nrows, (cudaStream_t)stream);
}

extern "C" halo_status halo_spmm_cuda_plan_create_device(const halo_csr *a, int64_t nrows,
                                                         const halo_spmm_cuda_shape *shapes,
                                                         int nshapes,
                                                         const halo_spmm_cuda_options *options,
                                                         void *stream, halo_spmm_cuda_plan **out) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  halo_spmm_cuda_plan *p = NULL;
  int64_t ends[2] = {0, 0}; /* indptr[0] and indptr[nrows] */
  size_t isz = 0;
  cusparseIndexType_t itype;

  if (out) *out = NULL;
  if (!out || !a || !a->indptr || nrows < 0 || nrows > a->rows || a->cols < 0 ||
      (nshapes > 0 && !shapes) || nshapes < 0) {
    halo_log_error("halo_spmm_cuda_plan_create_device: bad arguments (nrows=%lld of %lld)",
                   (long long)nrows, a ? (long long)a->rows : -1LL);
    return HALO_ERR_ARG;
  }
  if (a->cols > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT,
              "halo_spmm_cuda_plan_create_device: %lld columns exceed int32 column indices",
              (long long)a->cols);
  for (int i = 0; i < nshapes; i++)
    if (!shape_valid(&shapes[i]))
      HALO_FAIL(HALO_ERR_ARG,
                "halo_spmm_cuda_plan_create_device: shape %d (ncols=%lld ldx=%lld ldy=%lld) needs "
                "ldx, ldy >= ncols >= 1",
                i, (long long)shapes[i].ncols, (long long)shapes[i].ldx, (long long)shapes[i].ldy);

  /* The view's first and last offsets name its nonzeros. */
  HALO_CUDA(cudaMemcpyAsync(&ends[0], a->indptr, sizeof(int64_t), cudaMemcpyDeviceToHost, s));
  HALO_CUDA(
      cudaMemcpyAsync(&ends[1], a->indptr + nrows, sizeof(int64_t), cudaMemcpyDeviceToHost, s));
  HALO_CUDA(cudaStreamSynchronize(s));
  if (ends[0] < 0 || ends[1] < ends[0] || (ends[1] > ends[0] && (!a->indices || !a->values)))
    HALO_FAIL(HALO_ERR_ARG,
              "halo_spmm_cuda_plan_create_device: indptr[0] = %lld, indptr[%lld] = %lld do not "
              "bound a nonzero range",
              (long long)ends[0], (long long)nrows, (long long)ends[1]);

  p = (halo_spmm_cuda_plan *)calloc(1, sizeof *p);
  if (p) p->shapes = (shape_descr *)calloc(nshapes ? (size_t)nshapes : 1, sizeof *p->shapes);
  if (!p || !p->shapes)
    HALO_FAIL(HALO_ERR_NOMEM, "halo_spmm_cuda_plan_create_device: out of host memory");
  p->nshapes = nshapes;
  p->device_view = 1;
  p->rows = nrows;
  p->cols = a->cols;
  p->nnz = ends[1] - ends[0];
  p->split = nrows;
  p->first_nz = ends[0];
  p->part_rows[HALO_SPMM_ALL] = nrows;
  p->part_nnz[HALO_SPMM_ALL] = p->nnz;
  p->index64 = (options && options->force_index64) || p->nnz > INT32_MAX || nrows > INT32_MAX;
  p->alg = CUSPARSE_SPMM_ALG_DEFAULT;
  if (options && options->alg == HALO_SPMM_CUDA_ALG_CSR1) p->alg = CUSPARSE_SPMM_CSR_ALG1;
  if (options && options->alg == HALO_SPMM_CUDA_ALG_CSR2) p->alg = CUSPARSE_SPMM_CSR_ALG2;
  itype = p->index64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  isz = p->index64 ? sizeof(int64_t) : sizeof(int32_t);

  HALO_CUSPARSE(cusparseCreate(&p->handle));
  HALO_CUSPARSE(cusparseSetStream(p->handle, s));
  HALO_TRY(
      upload(&p->offsets, NULL, (size_t)(nrows + 1) * isz, s, &p->device_bytes, "row offsets"));
  if (p->index64)
    HALO_TRY(halo_cuda_launch(rebase_offsets_kernel<int64_t>,
                              halo_cuda_blocks(nrows + 1, kRowsThreads), kRowsThreads, s, a->indptr,
                              nrows + 1, (int64_t *)p->offsets));
  else
    HALO_TRY(halo_cuda_launch(rebase_offsets_kernel<int32_t>,
                              halo_cuda_blocks(nrows + 1, kRowsThreads), kRowsThreads, s, a->indptr,
                              nrows + 1, (int32_t *)p->offsets));
  if (p->index64) {
    p->owns_indices = 1;
    HALO_TRY(upload(&p->indices, NULL, (size_t)p->nnz * isz, s, &p->device_bytes,
                    "widened column indices"));
    if (p->nnz > 0) {
      HALO_TRY(halo_cuda_launch(widen_indices_kernel, halo_cuda_blocks(p->nnz, kRowsThreads),
                                kRowsThreads, s, a->indices + p->first_nz, p->nnz,
                                (int64_t *)p->indices));
    }
  } else {
    p->indices = (void *)(a->indices ? a->indices + p->first_nz : NULL);
  }
  p->values_base = p->matrix_values = a->values;
  p->values = a->values ? (float *)a->values + p->first_nz : NULL;
  /* Each copy is owned before it is filled, so that destroy frees it when
   * the fill fails (copy_aligned leaves NULL when the allocation does). */
  if (p->nnz > 0 && !aligned16(p->indices)) { /* see Alignment at the top */
    const void *columns = p->indices;
    p->owns_indices = 1;
    HALO_TRY(copy_aligned(&p->indices, columns, (size_t)p->nnz * isz, s, &p->device_bytes,
                          "aligned column indices"));
  }
  if (p->nnz > 0 && !aligned16(p->values)) {
    const float *values = p->values;
    p->owns_values = 1;
    HALO_TRY(copy_aligned((void **)&p->values, values, (size_t)p->nnz * sizeof(float), s,
                          &p->device_bytes, "aligned values"));
    p->copy_is_matrix = 1;
  }

  if (p->nnz > 0)
    HALO_CUSPARSE(cusparseCreateCsr(&p->mat[HALO_SPMM_ALL], nrows, a->cols, p->nnz, p->offsets,
                                    p->indices, p->values, itype, itype, CUSPARSE_INDEX_BASE_ZERO,
                                    CUDA_R_32F));
  HALO_TRY(plan_shapes(p, shapes, nshapes, s));
  *out = p;
  p = NULL;
done:
  halo_spmm_cuda_plan_destroy(&p);
  return st;
}

extern "C" halo_status halo_spmm_cuda_plan_set_values(halo_spmm_cuda_plan *plan,
                                                      const float *values, void *stream) {
  halo_status st = HALO_OK;
  if (!plan || !plan->device_view || (!values && plan->nnz > 0)) {
    halo_log_error("halo_spmm_cuda_plan_set_values: %s",
                   !plan                ? "plan is NULL"
                   : !plan->device_view ? "only a plan over a device CSR borrows its values"
                                        : "values is NULL");
    return HALO_ERR_ARG;
  }
  if (plan->owns_values) {
    /* An aligned copy.  Another array's contents may have changed since the
     * last call even when its address did not (the trainer rewrites one
     * dropout buffer every epoch), so the copy is refreshed on every call,
     * except from the matrix's own values, which do not change. */
    if (values == plan->matrix_values && plan->copy_is_matrix) return HALO_OK;
    plan->values_base = values;
    plan->copy_is_matrix = 0; /* until the copy below is queued */
    if (plan->nnz > 0)
      HALO_CUDA(cudaMemcpyAsync(plan->values, values + plan->first_nz,
                                (size_t)plan->nnz * sizeof(float), cudaMemcpyDeviceToDevice,
                                (cudaStream_t)stream));
    plan->copy_is_matrix = values == plan->matrix_values;
    goto done;
  }
  if (values == plan->values_base) return HALO_OK; /* borrowed: runs read it as it is now */
  /* Borrowing needs no copy only while the view's part of the new array is
   * aligned (see Alignment at the top); a copy would allocate here. */
  if (plan->nnz > 0 && !aligned16(values + plan->first_nz)) return HALO_ERR_UNSUPPORTED;
  plan->values_base = values;
  plan->values = (float *)values + plan->first_nz;
  if (plan->mat[HALO_SPMM_ALL])
    HALO_CUSPARSE(cusparseCsrSetPointers(plan->mat[HALO_SPMM_ALL], plan->offsets, plan->indices,
                                         plan->values));
done:
  return st;
}

extern "C" int halo_spmm_cuda_plan_has_shape(const halo_spmm_cuda_plan *plan, int64_t ncols,
                                             int64_t ldx, int64_t ldy) {
  if (!plan) return 0;
  for (int i = 0; i < plan->nshapes; i++) {
    const halo_spmm_cuda_shape *sh = &plan->shapes[i].shape;
    if (sh->ncols == ncols && sh->ldx == ldx && sh->ldy == ldy) return 1;
  }
  return 0;
}
