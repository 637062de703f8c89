/* halo-cuda-emu: cuSPARSE's generic CSR SpMM, with the checks the real
 * library makes at run time (16-byte aligned arrays, a large enough
 * workspace) made eagerly (tests/cuda-emu/libs.cc). */
#ifndef HALO_CUDA_EMU_CUSPARSE_H
#define HALO_CUDA_EMU_CUSPARSE_H

#include <stdint.h>

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CUSPARSE_STATUS_SUCCESS = 0,
  CUSPARSE_STATUS_NOT_INITIALIZED = 1,
  CUSPARSE_STATUS_ALLOC_FAILED = 2,
  CUSPARSE_STATUS_INVALID_VALUE = 3,
  CUSPARSE_STATUS_EXECUTION_FAILED = 6,
  CUSPARSE_STATUS_NOT_SUPPORTED = 10
} cusparseStatus_t;

typedef enum {
  CUSPARSE_OPERATION_NON_TRANSPOSE = 0,
  CUSPARSE_OPERATION_TRANSPOSE = 1
} cusparseOperation_t;
typedef enum { CUSPARSE_INDEX_32I = 2, CUSPARSE_INDEX_64I = 3 } cusparseIndexType_t;
typedef enum { CUSPARSE_INDEX_BASE_ZERO = 0, CUSPARSE_INDEX_BASE_ONE = 1 } cusparseIndexBase_t;
typedef enum { CUSPARSE_ORDER_COL = 1, CUSPARSE_ORDER_ROW = 2 } cusparseOrder_t;
typedef enum {
  CUSPARSE_SPMM_ALG_DEFAULT = 0,
  CUSPARSE_SPMM_CSR_ALG1 = 4,
  CUSPARSE_SPMM_CSR_ALG2 = 6
} cusparseSpMMAlg_t;

typedef struct cusparseContext *cusparseHandle_t;
typedef struct cusparseSpMatDescr *cusparseSpMatDescr_t;
typedef struct cusparseDnMatDescr *cusparseDnMatDescr_t;

cusparseStatus_t cusparseCreate(cusparseHandle_t *handle);
cusparseStatus_t cusparseDestroy(cusparseHandle_t handle);
cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream);
const char *cusparseGetErrorString(cusparseStatus_t status);

cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t *mat, int64_t rows, int64_t cols,
                                   int64_t nnz, void *offsets, void *columns, void *values,
                                   cusparseIndexType_t offset_type, cusparseIndexType_t column_type,
                                   cusparseIndexBase_t base, cudaDataType value_type);
cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t mat, void *offsets, void *columns,
                                        void *values);
cusparseStatus_t cusparseDestroySpMat(cusparseSpMatDescr_t mat);
cusparseStatus_t cusparseCreateDnMat(cusparseDnMatDescr_t *mat, int64_t rows, int64_t cols,
                                     int64_t ld, void *values, cudaDataType value_type,
                                     cusparseOrder_t order);
cusparseStatus_t cusparseDnMatSetValues(cusparseDnMatDescr_t mat, void *values);
cusparseStatus_t cusparseDestroyDnMat(cusparseDnMatDescr_t mat);
cusparseStatus_t cusparseSpMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t op_a,
                                         cusparseOperation_t op_b, const void *alpha,
                                         cusparseSpMatDescr_t a, cusparseDnMatDescr_t b,
                                         const void *beta, cusparseDnMatDescr_t c,
                                         cudaDataType compute_type, cusparseSpMMAlg_t alg,
                                         size_t *bytes);
cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t op_a,
                              cusparseOperation_t op_b, const void *alpha, cusparseSpMatDescr_t a,
                              cusparseDnMatDescr_t b, const void *beta, cusparseDnMatDescr_t c,
                              cudaDataType compute_type, cusparseSpMMAlg_t alg, void *workspace);

#ifdef __cplusplus
}
#endif

#endif /* HALO_CUDA_EMU_CUSPARSE_H */
