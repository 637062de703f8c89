/* Dense operations of the CUDA backend: the twins of kernels/halo-kernels.h.
 *
 * Each halo_cuda_<op> takes the arguments of halo_cpu_<op> in the same order,
 * then the stream to run on (a cudaStream_t passed as `void *`; NULL is the
 * legacy default stream).  Every pointer argument is DEVICE memory unless a
 * comment says otherwise, and sizes are host values.  The calls enqueue work
 * and return without waiting for it; none allocates device memory, so they
 * may run inside the epoch loop.
 *
 * A status reports what the call could check before returning: a bad
 * argument or a failed launch.  A fault inside a kernel surfaces at the next
 * synchronising CUDA call on that stream.
 *
 * Results equal the CPU's within fp32 rounding, per op:
 *   exact       bias_add, relu, relu_backward, dropout (same mask bits),
 *               pack, unpack
 *   rounding    colsum (double sums, as on the CPU), softmax_xent, adam,
 *               row_normalize, gemm (a different summation order)
 * tests/gpu/test-cuda-kernels.c holds the per-op thresholds.
 *
 * This header names no CUDA type, so plain C code (the runtime) can include
 * it without the CUDA toolkit's headers.  All calls are Local.
 */
#ifndef HALO_KERNELS_CUDA_H
#define HALO_KERNELS_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "halo-status.h"

/* ---- cuBLAS handle --------------------------------------------------- */

/* Creates a cuBLAS handle (returned as `void *`) in the default math mode,
 * that is without TF32, so that GEMM matches the CPU within fp32 rounding.
 * The caller destroys it with halo_cuda_blas_destroy. Local. */
halo_status halo_cuda_blas_create(void **blas);

/* Destroys a handle made by halo_cuda_blas_create; accepts NULL and *blas ==
 * NULL, and sets *blas = NULL. Local. */
void halo_cuda_blas_destroy(void **blas);

/* enable != 0 lets cuBLAS round GEMM inputs to TF32 on the tensor cores
 * (about 1e-3 relative error, several times faster); 0 restores full fp32.
 * The setting belongs to the handle. Local. */
halo_status halo_cuda_blas_set_tf32(void *blas, int enable);

/* ---- the twins -------------------------------------------------------- */

/* C = alpha · op(A) · op(B) + beta · C, row-major, through cuBLAS on the
 * handle `blas` (which this call binds to `stream`). */
halo_status halo_cuda_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                           float *c, int64_t ldc, void *blas, void *stream);

/* Y[i, :] += bias[:] for every row. */
halo_status halo_cuda_bias_add(float *y, int64_t rows, int64_t cols, const float *bias,
                               void *stream);

/* grad_bias[:] = Σ_i G[i, :] (overwrites; summed in double per column, in a
 * fixed order, so the result does not change from run to run). */
halo_status halo_cuda_colsum(const float *g, int64_t rows, int64_t cols, float *grad_bias,
                             void *stream);

/* Y = max(X, 0) in place. */
halo_status halo_cuda_relu(float *y, int64_t n, void *stream);

/* G[i] = 0 where Y[i] <= 0, in place. */
halo_status halo_cuda_relu_backward(float *g, const float *y, int64_t n, void *stream);

/* Inverted dropout with the CPU's mask, bit for bit: element (i, j) is kept
 * iff halo_rng_uniform(key, global_id[i], j) >= p.  global_id is a device
 * array of `rows` ids. */
halo_status halo_cuda_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id,
                              uint64_t key, float p, void *stream);

/* Masked softmax cross-entropy, as halo_cpu_softmax_xent.  loss_sum and
 * correct are DEVICE pointers to one double and one int64_t, which the call
 * overwrites (the caller copies them back when it needs them, so that the
 * epoch loop need not wait here).  G may be NULL; otherwise all `rows` rows
 * of G are written. */
halo_status halo_cuda_softmax_xent(const float *z, int64_t rows, int64_t cols,
                                   const int32_t *labels, const int32_t *mask, int64_t nmask,
                                   float grad_scale, float *g, double *loss_sum, int64_t *correct,
                                   void *stream);

/* One Adam step with L2 weight decay, as halo_cpu_adam; t >= 1. */
halo_status halo_cuda_adam(float *w, const float *g, float *m, float *v, int64_t n, float lr,
                           float b1, float b2, float eps, float wd, int64_t t, void *stream);

/* dst[i, :] = src[idx[i], :] for i in [0, n). */
halo_status halo_cuda_pack(float *dst, const float *src, int64_t cols, const int32_t *idx,
                           int64_t n, void *stream);

/* dst[idx[i], :] = src[i, :] for i in [0, n); idx holds no duplicates. */
halo_status halo_cuda_unpack(float *dst, const float *src, int64_t cols, const int32_t *idx,
                             int64_t n, void *stream);

/* Divides each row by its sum (rows summing to 0 are left as they are). */
halo_status halo_cuda_row_normalize(float *x, int64_t rows, int64_t cols, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* HALO_KERNELS_CUDA_H */
