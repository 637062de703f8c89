/* GEMM through cuBLAS, row-major.
 *
 * cuBLAS is column-major.  A row-major m×n matrix C with leading dimension
 * ldc is, read column-major, the n×m matrix Cᵀ with the same ld.  So
 *   C = op(A)·op(B)   is computed as   Cᵀ = op(B)ᵀ·op(A)ᵀ,
 * which is one column-major GEMM with the operands swapped and m and n
 * exchanged, and no copy or transpose of any matrix.
 */
#include "halo-cuda-check.cuh"
#include "halo-kernels-cuda.h"

extern "C" halo_status halo_cuda_blas_create(void **blas) {
  halo_status st = HALO_OK;
  cublasHandle_t handle = NULL;
  if (!blas) {
    halo_log_error("halo_cuda_blas_create: blas is NULL");
    return HALO_ERR_ARG;
  }
  *blas = NULL;
  HALO_CUBLAS(cublasCreate(&handle));
  /* The default mode keeps fp32 GEMMs in fp32 (no TF32), which is what
   * makes results match the CPU within fp32 rounding. */
  HALO_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  *blas = handle;
  handle = NULL;
done:
  if (handle) cublasDestroy(handle);
  return st;
}

extern "C" void halo_cuda_blas_destroy(void **blas) {
  if (!blas || !*blas) return;
  cublasDestroy((cublasHandle_t)*blas);
  *blas = NULL;
}

extern "C" halo_status halo_cuda_blas_set_tf32(void *blas, int enable) {
  halo_status st = HALO_OK;
  if (!blas) {
    halo_log_error("halo_cuda_blas_set_tf32: blas is NULL");
    return HALO_ERR_ARG;
  }
  HALO_CUBLAS(cublasSetMathMode((cublasHandle_t)blas,
                                enable ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
done:
  return st;
}

extern "C" halo_status halo_cuda_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                      float alpha, const float *a, int64_t lda, const float *b,
                                      int64_t ldb, float beta, float *c, int64_t ldc, void *blas,
                                      void *stream) {
  halo_status st = HALO_OK;
  cublasHandle_t handle = (cublasHandle_t)blas;
  /* Row-major leading dimensions: op(A) is m×k, so A is stored m×k (lda >= k)
   * or, transposed, k×m (lda >= m); likewise B and C. */
  const int64_t a_width = trans_a ? m : k;
  const int64_t b_width = trans_b ? k : n;
  if (!handle || m < 0 || n < 0 || k < 0 || lda < (a_width > 1 ? a_width : 1) ||
      ldb < (b_width > 1 ? b_width : 1) || ldc < (n > 1 ? n : 1)) {
    halo_log_error(
        "halo_cuda_gemm: bad arguments (m=%lld n=%lld k=%lld lda=%lld ldb=%lld "
        "ldc=%lld, handle %s)",
        (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc,
        handle ? "set" : "NULL");
    return HALO_ERR_ARG;
  }
  if (m == 0 || n == 0) return HALO_OK;
  HALO_CUBLAS(cublasSetStream(handle, (cudaStream_t)stream));
  HALO_CUBLAS(cublasSgemm_64(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                             trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                             &beta, c, ldc));
done:
  return st;
}
