/* Private to the CUDA backend (kernels/ and spmm/): one check macro per
 * CUDA API, in the style of HALO_TRY.
 *
 * Each evaluates a call once; on failure it logs ONE line naming the source
 * position, the call and the library's own error text, stores a status in
 * the enclosing function's `st` and jumps to its `done:` label, where the
 * function releases what it holds.  Because this is C++, every variable must
 * be declared before the first macro of a function (a goto may not jump over
 * an initialisation).
 */
#ifndef HALO_CUDA_CHECK_CUH
#define HALO_CUDA_CHECK_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

extern "C" {
#include "halo-status.h"
}

#define HALO__CHECK(ok, errtext, call, status)                            \
  do {                                                                    \
    if (!(ok)) {                                                          \
      halo_log_error("%s:%d: %s: %s", __FILE__, __LINE__, call, errtext); \
      st = (status);                                                      \
      goto done;                                                          \
    }                                                                     \
  } while (0)

/* A CUDA runtime call (cudaError_t). */
#define HALO_CUDA(call)                                                                     \
  do {                                                                                      \
    cudaError_t halo__e = (call);                                                           \
    HALO__CHECK(halo__e == cudaSuccess, cudaGetErrorString(halo__e), #call, HALO_ERR_CUDA); \
  } while (0)

/* A cuBLAS call (cublasStatus_t). */
#define HALO_CUBLAS(call)                                                                \
  do {                                                                                   \
    cublasStatus_t halo__e = (call);                                                     \
    HALO__CHECK(halo__e == CUBLAS_STATUS_SUCCESS, cublasGetStatusString(halo__e), #call, \
                HALO_ERR_CUDA);                                                          \
  } while (0)

/* A cuSPARSE call (cusparseStatus_t). */
#define HALO_CUSPARSE(call)                                                                 \
  do {                                                                                      \
    cusparseStatus_t halo__e = (call);                                                      \
    HALO__CHECK(halo__e == CUSPARSE_STATUS_SUCCESS, cusparseGetErrorString(halo__e), #call, \
                HALO_ERR_CUDA);                                                             \
  } while (0)

/* After a kernel launch: a bad configuration is reported here, a fault in
 * the kernel at the next synchronising call. */
#define HALO_CUDA_LAUNCHED() HALO_CUDA(cudaGetLastError())

#endif /* HALO_CUDA_CHECK_CUH */
