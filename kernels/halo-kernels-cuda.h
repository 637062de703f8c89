/* Dense operations of the CUDA backend: the twins of kernels/halo-kernels.h.
 *
 * Besides the ops, a few device, memory and stream helpers let plain C code
 * (the runtime) drive the GPU without including a CUDA header.
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
 *   exact       bias_add, relu, relu_backward, leaky_relu, leaky_relu_backward,
 *               axpy, elu_backward, mul, batchnorm, batchnorm_backward,
 *               dropout, dropout_to and csr_dropout (same mask bits), adam,
 *               pack, unpack, quant_pack (the same bytes), quant_unpack,
 *               gemm_rows, max_abs, exact_tn, exact_csr
 *   rounding    colsum and bn_sums (double sums in another order), softmax_xent,
 *               row_normalize, l2_normalize and l2_normalize_backward (a row's
 *               double sum in another order: a norm or a dot product may
 *               round to the next float; rows clamped to 1e-12 are exact),
 *               layernorm and layernorm_backward (a row's mean, variance
 *               and means of d and d·xhat summed in double in another order:
 *               an rstd, an xhat, a Y or a G may round to the next float;
 *               rows of equal values in the forward and rows of one column
 *               in both are exact), gemm (a different summation order), elu
 *               (CUDA's expm1f, within 1 ulp; the CPU's is correctly
 *               rounded, kernels/cpu-activation.c), gelu and gelu_backward (erfc and exp in
 *               double, rounded once to float), the GAT kernels (expf, and fused
 *               multiply-adds)
 * tests/gpu/test-cuda-kernels.c holds the per-op thresholds.
 *
 * This header names no CUDA type, so plain C code (the runtime) can include
 * it without the CUDA toolkit's headers.  All calls are Local.
 */
#ifndef HALO_KERNELS_CUDA_H
#define HALO_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "halo-csr.h"
#include "halo-gat.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "halo-status.h"

/* ---- device, memory and streams ------------------------------------- */

/* Makes device (local_rank mod the number of devices) current for the
 * calling thread, so that ranks on one node spread over its GPUs and, when
 * there are more ranks than GPUs, share them.  *device (may be NULL) gets
 * its number.  Without a device: HALO_ERR_CUDA and one line. Local. */
halo_status halo_cuda_select_device(int local_rank, int *device);

/* The current device's name ("NVIDIA H200"), copied into buf[size]. Local. */
halo_status halo_cuda_device_name(char *buf, size_t size);

/* The current device's PCI location (domain, bus, device) as one number:
 * the same GPU gives the same number in every process of a node, whatever
 * CUDA_VISIBLE_DEVICES makes its index there. Local. */
halo_status halo_cuda_device_location(int *location);

/* Free and total bytes of the current device's memory. Local. */
halo_status halo_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);

/* Allocates `bytes` of device memory, zeroed; `what` names it in the error
 * line.  The zeros are in place on return, so work queued on any stream
 * afterwards sees them (the call waits for its own memset).  halo_cuda_free
 * accepts NULL and *ptr == NULL and sets *ptr = NULL; it waits for work
 * using the memory (cudaFree does). Local. */
halo_status halo_cuda_malloc(void **ptr, size_t bytes, const char *what);
void halo_cuda_free(void **ptr);

/* Pinned (page-locked) host memory, zeroed: what makes host <-> device
 * copies asynchronous, for staging halo rows for MPI. Local. */
halo_status halo_cuda_malloc_host(void **ptr, size_t bytes, const char *what);
void halo_cuda_free_host(void **ptr);

/* Copies `bytes` between any two of host and device memory (the direction
 * is inferred from the addresses, as cudaMemcpyDefault does), ordered on
 * `stream`.  Returns at once between device and pinned memory.  With
 * pageable host memory the call returns once the host side is done with:
 * a download into it is complete, an upload from it has taken its bytes,
 * so the buffer may be reused either way. Local. */
halo_status halo_cuda_memcpy(void *dst, const void *src, size_t bytes, void *stream);

/* A stream that does not synchronise with the legacy default stream. */
halo_status halo_cuda_stream_create(void **stream);
void halo_cuda_stream_destroy(void **stream);

/* Waits for the work queued on `stream` (NULL: the legacy default stream)
 * and reports a fault of any kernel it ran. Local. */
halo_status halo_cuda_stream_synchronize(void *stream);

/* An event that orders one stream after another (no timing).  Destroy
 * accepts NULL and *event == NULL and sets *event = NULL. Local. */
halo_status halo_cuda_event_create(void **event);
void halo_cuda_event_destroy(void **event);

/* Work queued on `waiter` after this call starts once the work queued on
 * `stream` before it has finished; the host does not wait.  `event` (from
 * halo_cuda_event_create) is recorded on `stream` and may be recorded
 * again at once: the wait keeps the state of this record. Local. */
halo_status halo_cuda_stream_wait(void *waiter, void *stream, void *event);

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
 * fixed order that depends on the shape alone, so the result does not change
 * from run to run or from GPU to GPU).  `work` is a device workspace of
 * HALO_CUDA_COLSUM_WORK_BYTES, which lets the rows be split over the whole
 * GPU; it must not be in use by other work at the same time.  NULL runs one
 * block per 32 columns instead, which is far slower on tall matrices (and
 * rounds differently). */
#define HALO_CUDA_COLSUM_WORK_BYTES ((size_t)128 * 1024 * sizeof(double))
halo_status halo_cuda_colsum(const float *g, int64_t rows, int64_t cols, float *grad_bias,
                             void *work, void *stream);

/* Y = max(X, 0) in place. */
halo_status halo_cuda_relu(float *y, int64_t n, void *stream);

/* G[i] = 0 where Y[i] <= 0, in place. */
halo_status halo_cuda_relu_backward(float *g, const float *y, int64_t n, void *stream);

/* Y += (alpha + (p ? *p : 0)) · X over n floats, as halo_cpu_axpy, bit for
 * bit.  p is a DEVICE pointer (GIN's ε among the parameters) or NULL; the
 * kernel reads *p, so the host never waits for it.  Y and X do not
 * overlap. */
halo_status halo_cuda_axpy(float *y, const float *x, int64_t n, float alpha, const float *p,
                           void *stream);

/* ELU with alpha 1 in place: Y = Y > 0 ? Y : expm1(Y). */
halo_status halo_cuda_elu(float *y, int64_t n, void *stream);

/* G[i] *= Y[i] > 0 ? 1 : Y[i] + 1, in place (Y is the ELU output). */
halo_status halo_cuda_elu_backward(float *g, const float *y, int64_t n, void *stream);

/* LeakyReLU and its backward from the output, as halo_cpu_leaky_relu and
 * halo_cpu_leaky_relu_backward, bit for bit (one rounded product each). */
halo_status halo_cuda_leaky_relu(float *y, int64_t n, float slope, void *stream);
halo_status halo_cuda_leaky_relu_backward(float *g, const float *y, int64_t n, float slope,
                                          void *stream);

/* GELU out of place and its backward from the input, as halo_cpu_gelu_to and
 * halo_cpu_gelu_backward (in double, rounded once; CUDA's erfc and exp are
 * within 2 ulp in double, as glibc's, so a float may round apart). */
halo_status halo_cuda_gelu_to(float *y, const float *x, int64_t n, void *stream);
halo_status halo_cuda_gelu_backward(float *g, const float *x, int64_t n, void *stream);

/* Inverted dropout with the CPU's mask, bit for bit: element (i, j) is kept
 * iff halo_rng_uniform(key, global_id[i], j) >= p.  global_id is a device
 * array of `rows` ids. */
halo_status halo_cuda_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id,
                              uint64_t key, float p, void *stream);

/* DST = dropout(SRC) with the mask of halo_cuda_dropout, in one pass, as
 * halo_cpu_dropout_to, bit for bit (a copy when p <= 0).  DST and SRC
 * (rows × cols each) do not overlap. */
halo_status halo_cuda_dropout_to(float *dst, const float *src, int64_t rows, int64_t cols,
                                 const int64_t *global_id, uint64_t key, float p, void *stream);

/* Dropout of a CSR matrix's values (sparse input features), the dense
 * dropout's mask seen through the sparsity pattern, as the CPU backend's
 * csr_dropout (src/backend-cpu.c), bit for bit:
 *   out[k] = values[k] · (halo_rng_uniform(key, node, col) >= p) / (1 - p)
 * for each nonzero k of row r, with (node, col) = (global_id[r], indices[k])
 * or, when `transposed` (the matrix holds Xᵀ), (global_id[indices[k]], r).
 * values NULL means all ones; p >= 1 drops everything.  indptr has rows+1
 * entries; every array is on the device. */
halo_status halo_cuda_csr_dropout(const int64_t *indptr, const int32_t *indices,
                                  const float *values, int64_t rows, int transposed,
                                  const int64_t *global_id, uint64_t key, float p, float *out,
                                  void *stream);

/* Masked softmax cross-entropy, as halo_cpu_softmax_xent, its loss summed
 * on the same fixed-point grid (so that it has the same bits for any grid
 * and any split of the rows).  loss_sum and correct are DEVICE pointers to
 * one double and one int64_t, which the call overwrites (the caller copies
 * them back when it needs them, so that the epoch loop need not wait here).
 * G may be NULL; otherwise all `rows` rows of G are written.  `work` is a
 * device workspace of HALO_CUDA_SOFTMAX_WORK_BYTES for the grid's counters,
 * not in use by other work meanwhile. */
#define HALO_CUDA_SOFTMAX_WORK_BYTES ((size_t)4 * sizeof(uint64_t))
halo_status halo_cuda_softmax_xent(const float *z, int64_t rows, int64_t cols,
                                   const int32_t *labels, const int32_t *mask, int64_t nmask,
                                   float grad_scale, float *g, double *loss_sum, int64_t *correct,
                                   void *work, void *stream);

/* Masked binary cross-entropy with logits over multi-label rows, as
 * halo_cpu_sigmoid_bce, with softmax_xent's conventions: loss_sum and
 * correct are DEVICE pointers, `work` a device workspace of
 * HALO_CUDA_SOFTMAX_WORK_BYTES, targets an int8 device matrix (rows × cols). */
halo_status halo_cuda_sigmoid_bce(const float *z, int64_t rows, int64_t cols, const int8_t *targets,
                                  const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                                  double *loss_sum, int64_t *correct, void *work, void *stream);

/* ---- deterministic ops (kernels/cuda-exact.cu) ----------------------- */

/* C = A · op(B) as halo_cpu_gemm_rows, bit for bit: each element rounds
 * every product and every sum to float in ascending k, so that row i of C
 * depends only on row i of A and on B.  n is at most 2^20. */
halo_status halo_cuda_gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                                int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                                void *stream);

/* *out = the bits of max |x[i]| over n floats, +inf (0x7f800000) when one
 * is not finite, 0 for n = 0: halo_cpu_max_abs's float, as an unsigned
 * (DEVICE) word. */
halo_status halo_cuda_max_abs(const float *x, int64_t n, unsigned *out, void *stream);

/* The exact sums of halo_cpu_exact_tn and halo_cpu_exact_csr (halo-exact.h),
 * the same integers, as one PAIR of int64 per cell (pairs[2c], pairs[2c+1]:
 * the low HALO_EXACT_LIMB_BITS bits and the signed rest of each run, summed
 * apart), which halo_exact_limbs turns into the CPU's limbs.  pairs (DEVICE,
 * 2 · cells int64) is overwritten.  exact_tn takes n < 2^32 rows and at most
 * 2^19 rows of cells (ac), and each row's direction in up (DEVICE, n
 * bytes: halo_cuda_exact_row_dirs of the whole rows of B, also when this
 * call sums some of B's columns). */
halo_status halo_cuda_exact_row_dirs(int64_t n, const float *b, int64_t bc, int64_t ldb,
                                     unsigned char *up, void *stream);
halo_status halo_cuda_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                               const float *b, int64_t ldb, const unsigned char *up, int e,
                               int64_t *pairs, void *stream);
halo_status halo_cuda_exact_csr(const int64_t *indptr, const int32_t *indices,
                                const float *values, int64_t rows, const float *b, int64_t bc,
                                int64_t ldb, int e, int64_t *pairs, void *stream);

/* One Adam step with L2 weight decay, as halo_cpu_adam; t >= 1. */
halo_status halo_cuda_adam(float *w, const float *g, float *m, float *v, int64_t n, float lr,
                           float b1, float b2, float eps, float wd, int64_t t, void *stream);

/* One AdamW step, as halo_cpu_adamw (the same bits); t >= 1. */
halo_status halo_cuda_adamw(float *w, const float *g, float *m, float *v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd, int64_t t, void *stream);

/* One SGD step, as halo_cpu_sgd (the same bits). */
halo_status halo_cuda_sgd(float *w, const float *g, float *buf, int64_t n, float lr, float mu,
                          float wd, int nesterov, void *stream);

/* x = x · s, as halo_cpu_scale. */
halo_status halo_cuda_scale(float *x, int64_t n, float s, void *stream);

/* dst[i, :] = src[idx[i], :] for i in [0, n). */
halo_status halo_cuda_pack(float *dst, const float *src, int64_t cols, const int32_t *idx,
                           int64_t n, void *stream);

/* dst[idx[i], :] = src[i, :] for i in [0, n); idx holds no duplicates. */
halo_status halo_cuda_unpack(float *dst, const float *src, int64_t cols, const int32_t *idx,
                             int64_t n, void *stream);

/* Low-bit halo rows, as halo_cpu_quant_pack and halo_cpu_quant_unpack
 * (core/halo-quant.h): the same bytes and the same floats.  dst (n rows of
 * halo_quant_row_bytes(prec, cols) bytes), src, idx and gid are device
 * memory; key and prec are host values. */
halo_status halo_cuda_quant_pack(uint8_t *dst, const float *src, int64_t cols, const int32_t *idx,
                                 const int64_t *gid, int64_t n, int prec, uint64_t key,
                                 void *stream);
halo_status halo_cuda_quant_unpack(float *dst, const uint8_t *src, int64_t cols, int64_t n,
                                   int prec, void *stream);

/* Divides each row by its sum (rows summing to 0 are left as they are). */
halo_status halo_cuda_row_normalize(float *x, int64_t rows, int64_t cols, void *stream);

/* Each row divided by its L2 norm, as halo_cpu_l2_normalize:
 *   norm[i] = max(||Y[i, :]||, 1e-12),  Y[i, :] /= norm[i]
 * with the sum of squares in double (one warp per row, so not in the CPU's
 * ascending order).  norm is a device array of `rows` floats, written for
 * every row, even when cols is 0. */
halo_status halo_cuda_l2_normalize(float *y, int64_t rows, int64_t cols, float *norm, void *stream);

/* Its backward in place, as halo_cpu_l2_normalize_backward, from the
 * normalised rows Y and the norms of halo_cuda_l2_normalize:
 *   G[i, :] = (G[i, :] - Y[i, :] · (Y[i, :] · G[i, :])) / norm[i]
 * and G[i, :] / norm[i] alone for a row whose norm was clamped to 1e-12
 * (the dot product in double, one warp per row). */
halo_status halo_cuda_l2_normalize_backward(float *g, const float *y, const float *norm,
                                            int64_t rows, int64_t cols, void *stream);

/* LayerNorm over each row in place, as halo_cpu_layernorm (eps 1e-5):
 *   rstd[i] = 1 / sqrt(var_i + 1e-5),  XHAT[i, :] = (Y[i, :] - mean_i) · rstd[i]
 *   Y[i, :] = XHAT[i, :] · gamma + beta
 * with the row's mean and biased variance in double (one warp per row, so
 * not in the CPU's ascending order).  gamma and beta are device arrays of
 * `cols` floats, XHAT a device rows × cols array and rstd a device array of
 * `rows` floats, written for every row, even when cols is 0. */
halo_status halo_cuda_layernorm(float *y, int64_t rows, int64_t cols, const float *gamma,
                                const float *beta, float *xhat, float *rstd, void *stream);

/* Its backward in place, as halo_cpu_layernorm_backward, from the XHAT and
 * rstd of halo_cuda_layernorm: G holds dLoss/dY on entry and dLoss/dX on
 * return,
 *   d = G · gamma,  G[i, :] = rstd[i] · (d - mean(d) - XHAT[i, :] · mean(d · XHAT[i, :]))
 * with the row means in double (one warp per row). */
halo_status halo_cuda_layernorm_backward(float *g, const float *xhat, const float *rstd,
                                         const float *gamma, int64_t rows, int64_t cols,
                                         void *stream);

/* BatchNorm's column sums, as halo_cpu_bn_sums: SX[c] = Σ_i X[i, c] and
 * SXY[c] = Σ_i X[i, c]·Y[i, c] (Y NULL: Y = X), device arrays of `cols`
 * doubles, overwritten (zeros when rows is 0).  Summed in double in
 * colsum's fixed order (it depends on the shape alone), not the CPU's
 * ascending one: a sum may differ from the CPU's in its last bits.  `work`
 * is a device workspace of HALO_CUDA_COLSUM_WORK_BYTES, not in use by other
 * work at the same time. */
halo_status halo_cuda_bn_sums(const float *x, const float *y, int64_t rows, int64_t cols,
                              double *sx, double *sxy, void *work, void *stream);

/* BatchNorm's normalisation in place, as halo_cpu_batchnorm, bit for bit:
 *   XHAT[i, c] = (Y[i, c] - shift[c])·scale[c],  Y[i, c] = gamma[c]·XHAT + beta[c]
 * in double, rounded once to float.  shift and scale are device arrays of
 * `cols` doubles, gamma and beta of `cols` floats; XHAT may be NULL (the
 * evaluation's pass keeps none). */
halo_status halo_cuda_batchnorm(float *y, int64_t rows, int64_t cols, const double *shift,
                                const double *scale, const float *gamma, const float *beta,
                                float *xhat, void *stream);

/* Its backward in place, as halo_cpu_batchnorm_backward, bit for bit:
 *   G[i, c] = gamma[c]·scale[c]·(G[i, c] - a[c] - XHAT[i, c]·b[c])
 * with a and b the global column means of halo_cpu_bn_sums's sums (device
 * arrays of `cols` doubles, as scale). */
halo_status halo_cuda_batchnorm_backward(float *g, const float *xhat, int64_t rows, int64_t cols,
                                         const float *gamma, const double *scale, const double *a,
                                         const double *b, void *stream);

/* OUT[i] = A[i] · B[i] over n floats, as halo_cpu_mul, bit for bit (OUT may
 * be A or B). */
halo_status halo_cuda_mul(float *out, const float *a, const float *b, int64_t n, void *stream);

/* GAT's four kernels, as halo_cpu_gat_* (kernels/halo-kernels.h), one GPU
 * thread per row running core/halo-gat.h's row functions, which the CPU
 * runs too: the results differ only by CUDA's expf and nvcc's fused
 * multiply-adds.  `g` is host memory (passed by value); adj's arrays, like
 * every other pointer, are device memory. */
halo_status halo_cuda_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows,
                                 const float *a_src, const float *a_dst, float *s, void *stream);
halo_status halo_cuda_gat_attend(const halo_gat_layer *g, const halo_csr *adj,
                                 const int64_t *global_id, const float *t, const float *s,
                                 float *out, float *z, float *node, void *stream);
halo_status halo_cuda_gat_node_terms(const halo_gat_layer *g, const float *dz, const float *out,
                                     int64_t rows, float *node, void *stream);
halo_status halo_cuda_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                          const int64_t *global_id, const float *t, const float *s,
                                          const float *node, const float *a_src, const float *a_dst,
                                          float *dt, float *att_grad, void *stream);

/* GraphSAGE's max aggregator and its backward, as halo_cpu_sage_max and
 * halo_cpu_sage_max_backward, bit for bit: one thread per output element,
 * its row's columns in the CPU's order.  adj's arrays, like every other
 * pointer, are device memory; arg may be NULL. */
halo_status halo_cuda_sage_max(const halo_csr *adj, const int64_t *global_id, const float *x,
                               int64_t cols, float *out, int32_t *arg, void *stream);
halo_status halo_cuda_sage_max_backward(const halo_csr *adj, const int64_t *global_id,
                                        const int32_t *arg, const float *g, int64_t cols,
                                        float *dx, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* HALO_KERNELS_CUDA_H */
