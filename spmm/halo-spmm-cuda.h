/* Local sparse × dense products on a GPU, through the cuSPARSE generic API.
 *
 *   Y[r, 0:ncols] = A[r, :] · X[:, 0:ncols] (+ beta · Y[r, 0:ncols])   for r in a part's rows
 *
 * Plan, then run.  halo_spmm_cuda_plan_create uploads A once, creates the
 * cuSPARSE descriptors, asks cusparseSpMM_bufferSize for every planned shape
 * and allocates one workspace that fits them all.  halo_spmm_cuda_run then
 * only binds X and Y and calls cusparseSpMM: it allocates nothing, so it may
 * run in the epoch loop.
 *
 * Interior and boundary rows.  To overlap the multiply with the halo
 * exchange, the caller numbers A's rows so that the interior rows (those
 * with no halo column) come first: rows [0, split) are interior and rows
 * [split, A.rows) are the boundary.  The plan keeps one descriptor for each
 * of the three parts below; each covers a contiguous block of rows and of
 * nonzeros, so no index list is needed on the device.
 *
 * Index width.  cuSPARSE wants row offsets and column indices of one width.
 * The plan stores both as int32 when A.nnz < 2^31 (halving the index
 * traffic), and otherwise as int64 (the columns widened on upload).
 *
 * Any row list.  halo_spmm_cuda_run_rows computes the rows of a device
 * index list (as halo_spmm_cpu does) with halo's own kernel over the plan's
 * device copy of A; it needs neither a workspace nor a planned shape.  Use
 * it where rows cannot be numbered interior-first.
 *
 * Dense matrices are row-major device arrays with a leading dimension in
 * floats.  All calls are Local; runs are asynchronous on the given stream.
 * A plan belongs to one host thread at a time (a run binds X and Y into the
 * plan's descriptors).
 */
#ifndef HALO_SPMM_CUDA_H
#define HALO_SPMM_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "halo-spmm.h"
#include "halo-status.h"

/* Number of CUDA devices this process can use; 0 when there is none, no
 * driver, or the driver is older than the runtime.  Logs nothing. Local. */
int halo_cuda_device_count(void);

/* Why this process has no usable CUDA device: the CUDA runtime's words
 * ("CUDA driver version is insufficient for CUDA runtime version", ...) or
 * "no CUDA device"; NULL when it has one.  A static string.  Logs nothing.
 * Local. */
const char *halo_cuda_device_problem(void);

/* Which rows a run computes. */
typedef enum halo_spmm_part {
  HALO_SPMM_ALL = 0,      /* rows [0, A.rows) in one product */
  HALO_SPMM_INTERIOR = 1, /* rows [0, split) */
  HALO_SPMM_BOUNDARY = 2, /* rows [split, A.rows) */
} halo_spmm_part;

/* A dense shape the plan is sized for: X is A.cols × ncols with leading
 * dimension ldx, Y is A.rows × ncols with leading dimension ldy. */
typedef struct halo_spmm_cuda_shape {
  int64_t ncols, ldx, ldy;
} halo_spmm_cuda_shape;

/* cuSPARSE's algorithm choice for CSR × row-major dense. */
typedef enum halo_spmm_cuda_alg {
  HALO_SPMM_CUDA_ALG_DEFAULT = 0, /* CUSPARSE_SPMM_ALG_DEFAULT */
  HALO_SPMM_CUDA_ALG_CSR1 = 1,    /* CUSPARSE_SPMM_CSR_ALG1 */
  HALO_SPMM_CUDA_ALG_CSR2 = 2,    /* CUSPARSE_SPMM_CSR_ALG2: deterministic */
} halo_spmm_cuda_alg;

typedef struct halo_spmm_cuda_options {
  halo_spmm_cuda_alg alg;
  int force_index64; /* 1: int64 indices even when int32 suffice (tests) */
} halo_spmm_cuda_options;

typedef struct halo_spmm_cuda_plan halo_spmm_cuda_plan;

/* Plans products with the HOST matrix `a` (copied to the device; the caller
 * keeps `a`), interior rows [0, split) with 0 <= split <= a->rows, and the
 * `nshapes` dense shapes in `shapes` (each with ldx, ldy >= ncols >= 1).
 * `options` may be NULL for the defaults.  The upload is ordered on `stream`
 * and finished when this returns. On failure *out is NULL. Local. */
halo_status halo_spmm_cuda_plan_create(const halo_csr *a, int64_t split,
                                       const halo_spmm_cuda_shape *shapes, int nshapes,
                                       const halo_spmm_cuda_options *options, void *stream,
                                       halo_spmm_cuda_plan **out);

/* Releases the plan's device memory and descriptors; accepts NULL and sets
 * *plan = NULL.  Work queued with the plan must have finished. Local. */
void halo_spmm_cuda_plan_destroy(halo_spmm_cuda_plan **plan);

/* Y[r, :] = A[r, :] · X (+ beta · Y[r, :]) for the rows of `part`, with X
 * and Y device arrays of a planned shape (ncols, ldx, ldy); beta is 0 or 1,
 * and with beta 0, Y is not read.  X must not overlap Y.  Enqueued on
 * `stream`.  An unplanned shape fails with HALO_ERR_UNSUPPORTED.  When X or
 * the part's first row of Y is not 16-byte aligned (the boundary part of a
 * Y whose ldy·split floats are not a multiple of 4, say), which cuSPARSE
 * cannot take, the part runs on the row kernel instead. Local. */
halo_status halo_spmm_cuda_run(halo_spmm_cuda_plan *plan, halo_spmm_part part, const float *x,
                               int64_t ldx, int64_t ncols, float beta, float *y, int64_t ldy,
                               void *stream);

/* Y[rows[i], :] = A[rows[i], :] · X (+ beta · Y[rows[i], :]) for i in
 * [0, nrows), with `rows` a DEVICE array of distinct row numbers, or NULL
 * for rows 0..nrows-1; any ncols >= 1 and ldx, ldy >= ncols; beta is 0 or 1
 * (with 0, Y is not read).  One warp per row (a half or a quarter warp when
 * ncols <= 16 or <= 8), the columns spread over the lanes; rounding differs
 * from cuSPARSE's and the CPU's by the summation order only.  Enqueued on
 * `stream`. Local. */
halo_status halo_spmm_cuda_run_rows(halo_spmm_cuda_plan *plan, const float *x, int64_t ldx,
                                    int64_t ncols, float beta, float *y, int64_t ldy,
                                    const int32_t *rows, int64_t nrows, void *stream);

/* halo_spmm_cuda_run_rows for a matrix that is already on the device, in
 * halo_csr's own layout (int64 indptr, int32 indices, float values; values
 * may not be NULL when nnz > 0), without a plan: the runtime's CUDA backend
 * uses it for matrices whose values change every epoch (dropout of sparse
 * features).  Every pointer, `a`'s arrays included, is device memory except
 * `a` itself.  Enqueued on `stream`. Local. */
halo_status halo_spmm_cuda_csr_rows(const halo_csr *a, const float *x, int64_t ldx, int64_t ncols,
                                    float beta, float *y, int64_t ldy, const int32_t *rows,
                                    int64_t nrows, void *stream);

/* Plans products over rows [0, nrows) of a matrix already on the DEVICE, in
 * halo_csr's layout (int64 indptr, int32 indices, float values), which may
 * be a row view (indptr moved forward, indices and values shared, so
 * indptr[0] > 0).  The plan builds its own row offsets rebased to 0 (int32
 * when the view's nonzeros allow, as above) and BORROWS `a`'s column
 * indices (int32 plans) and values, which must outlive it, unless the
 * view's part of them is not 16-byte aligned: it then keeps a copy.  Runs take
 * the one part HALO_SPMM_ALL, and halo_spmm_cuda_run_rows works too.
 * Reads indptr[0] and indptr[nrows] back, so it waits for `stream`.  For
 * set-up time.  On failure *out is NULL. Local. */
halo_status halo_spmm_cuda_plan_create_device(const halo_csr *a, int64_t nrows,
                                              const halo_spmm_cuda_shape *shapes, int nshapes,
                                              const halo_spmm_cuda_options *options, void *stream,
                                              halo_spmm_cuda_plan **out);

/* Rebinds a device-CSR plan to another values array of the same matrix
 * (`values` as the caller's CSR holds it, before the view's offset), such
 * as dropped-out values: later runs read it.  The sparsity pattern, and so
 * the workspace, is unchanged, and nothing is allocated, so it may run in
 * the epoch loop.  A plan that keeps an aligned copy of a view's values
 * (see cuda-spmm.cu) refreshes the copy on `stream` at every call, since an
 * array rewritten in place keeps its address (the matrix's own values,
 * which do not change, are copied only when they come back); call it after
 * the values are written and before the run.  Otherwise nothing is queued
 * and work already queued keeps the old array; a plan that borrows declines
 * (HALO_ERR_UNSUPPORTED, no line logged, the plan unchanged) an array whose
 * part from the view's first nonzero is not 16-byte aligned, and the caller
 * then takes halo_spmm_cuda_csr_rows. Local. */
halo_status halo_spmm_cuda_plan_set_values(halo_spmm_cuda_plan *plan, const float *values,
                                           void *stream);

/* 1 when `plan` was sized for the shape (ncols, ldx, ldy). Local. */
int halo_spmm_cuda_plan_has_shape(const halo_spmm_cuda_plan *plan, int64_t ncols, int64_t ldx,
                                  int64_t ldy);

/* Adds a dense shape to a plan after its creation, growing the workspace
 * when cuSPARSE asks for more.  For set-up time, not the epoch loop: it may
 * allocate device memory, and it waits for all work queued on the device.
 * A shape already planned is accepted as it is. Local. */
halo_status halo_spmm_cuda_plan_add_shape(halo_spmm_cuda_plan *plan,
                                          const halo_spmm_cuda_shape *shape);

/* Bytes of device memory the plan holds (matrix, offsets, workspace). Local. */
int64_t halo_spmm_cuda_plan_bytes(const halo_spmm_cuda_plan *plan);

/* 1 when the plan stores int64 indices, 0 for int32. Local. */
int halo_spmm_cuda_plan_index64(const halo_spmm_cuda_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* HALO_SPMM_CUDA_H */
