/* halo-cuda-emu: cuBLAS's SGEMM and cuSPARSE's CSR SpMM.
 *
 * Both check their arguments as the libraries document, and their operands
 * to be device memory large enough for the shapes given, when called; the
 * arithmetic is queued on the handle's stream and reads the operands when
 * it runs.  SGEMM is CBLAS's, with the same column-major arguments.  SpMM
 * is a plain loop in fp32; cuSPARSE's rules that only show on a device are
 * checked when it runs: every array 16-byte aligned (cuSPARSE 12 fails with
 * cudaErrorMisalignedAddress otherwise), and a workspace at least as large
 * as cusparseSpMM_bufferSize said for these arguments. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_v2.h"
#include "cusparse.h"
#include "emu.h"

using namespace halo_emu;

struct cublasContext {
  cudaStream_t stream = nullptr;
};

struct cusparseContext {
  cudaStream_t stream = nullptr;
};

struct cusparseSpMatDescr {
  int64_t rows, cols, nnz;
  void *offsets, *columns, *values;
  cusparseIndexType_t offset_type, column_type;
};

struct cusparseDnMatDescr {
  int64_t rows, cols, ld;
  void *values;
  cusparseOrder_t order;
};

namespace {

int64_t max1(int64_t a) { return a > 1 ? a : 1; }

/* The bytes a column-major r×c operand with leading dimension ld spans. */
size_t span(int64_t r, int64_t c, int64_t ld, size_t elem) {
  return r == 0 || c == 0 ? 0 : (size_t)((c - 1) * ld + r) * elem;
}

bool operand(const void *p, size_t bytes, const char *call, const char *what) {
  if (bytes == 0 || device_range(p, bytes)) return true;
  report("%s: %s (%p, %zu bytes) is not inside one device allocation", call, what, p, bytes);
  return false;
}

size_t index_bytes(cusparseIndexType_t t) { return t == CUSPARSE_INDEX_64I ? 8 : 4; }

int64_t load_index(const void *a, cusparseIndexType_t t, int64_t i) {
  return t == CUSPARSE_INDEX_64I ? ((const int64_t *)a)[i] : ((const int32_t *)a)[i];
}

/* A made-up but honest workspace size: it grows with the rows and doubles
 * when beta is not zero, so a caller that sizes its buffer for one call
 * and runs another is caught. */
size_t spmm_workspace(const cusparseSpMatDescr *a, float beta) {
  return (size_t)(a->rows + 1) * 8 * (beta != 0.0f ? 2 : 1);
}

}  // namespace

extern "C" {

/* ---- cuBLAS ------------------------------------------------------------------ */

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm_64(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                              const float *alpha, const float *a, int64_t lda, const float *b,
                              int64_t ldb, const float *beta, float *c, int64_t ldc) {
  HALO_EMU_API;
  static const char call[] = "cublasSgemm_64";
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) ||
      (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T) || m < 0 || n < 0 || k < 0 || !alpha ||
      !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  /* op(A) is m×k and op(B) k×n, column-major. */
  const int64_t a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
  const int64_t b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
  if (lda < max1(a_rows) || ldb < max1(b_rows) || ldc < max1(m)) {
    report("%s: m=%lld n=%lld k=%lld with lda=%lld ldb=%lld ldc=%lld", call, (long long)m,
           (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const float al = *alpha, be = *beta;
  if (!operand(c, span(m, n, ldc, 4), call, "C") ||
      (k > 0 && al != 0.0f &&
       (!operand(a, span(a_rows, a_cols, lda, 4), call, "A") ||
        !operand(b, span(b_rows, b_cols, ldb, 4), call, "B"))))
    return CUBLAS_STATUS_INVALID_VALUE;
  enqueue(stream_of(handle->stream), [=] {
    cblas_sgemm(CblasColMajor, transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, (blasint)m, (blasint)n,
                (blasint)k, al, a, (blasint)lda, b, (blasint)ldb, be, c, (blasint)ldc);
  });
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuSPARSE ------------------------------------------------------------------ */

cusparseStatus_t cusparseCreate(cusparseHandle_t *handle) {
  if (!handle) return CUSPARSE_STATUS_INVALID_VALUE;
  *handle = new cusparseContext;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseDestroy(cusparseHandle_t handle) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUSPARSE_STATUS_SUCCESS;
}

const char *cusparseGetErrorString(cusparseStatus_t status) {
  switch (status) {
    case CUSPARSE_STATUS_SUCCESS:
      return "CUSPARSE_STATUS_SUCCESS";
    case CUSPARSE_STATUS_NOT_INITIALIZED:
      return "CUSPARSE_STATUS_NOT_INITIALIZED";
    case CUSPARSE_STATUS_ALLOC_FAILED:
      return "CUSPARSE_STATUS_ALLOC_FAILED";
    case CUSPARSE_STATUS_INVALID_VALUE:
      return "CUSPARSE_STATUS_INVALID_VALUE";
    case CUSPARSE_STATUS_EXECUTION_FAILED:
      return "CUSPARSE_STATUS_EXECUTION_FAILED";
    case CUSPARSE_STATUS_NOT_SUPPORTED:
      return "CUSPARSE_STATUS_NOT_SUPPORTED";
  }
  return "CUSPARSE_STATUS_UNKNOWN";
}

cusparseStatus_t cusparseCreateCsr(cusparseSpMatDescr_t *mat, int64_t rows, int64_t cols,
                                   int64_t nnz, void *offsets, void *columns, void *values,
                                   cusparseIndexType_t offset_type, cusparseIndexType_t column_type,
                                   cusparseIndexBase_t base, cudaDataType value_type) {
  if (!mat || rows < 0 || cols < 0 || nnz < 0 || base != CUSPARSE_INDEX_BASE_ZERO ||
      value_type != CUDA_R_32F ||
      (offset_type != CUSPARSE_INDEX_32I && offset_type != CUSPARSE_INDEX_64I) ||
      (column_type != CUSPARSE_INDEX_32I && column_type != CUSPARSE_INDEX_64I) ||
      (rows > 0 && !offsets) || (nnz > 0 && (!columns || !values)))
    return CUSPARSE_STATUS_INVALID_VALUE;
  *mat =
      new cusparseSpMatDescr{rows, cols, nnz, offsets, columns, values, offset_type, column_type};
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t mat, void *offsets, void *columns,
                                        void *values) {
  if (!mat) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if ((mat->rows > 0 && !offsets) || (mat->nnz > 0 && (!columns || !values)))
    return CUSPARSE_STATUS_INVALID_VALUE;
  mat->offsets = offsets;
  mat->columns = columns;
  mat->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseDestroySpMat(cusparseSpMatDescr_t mat) {
  delete mat;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseCreateDnMat(cusparseDnMatDescr_t *mat, int64_t rows, int64_t cols,
                                     int64_t ld, void *values, cudaDataType value_type,
                                     cusparseOrder_t order) {
  const int64_t need = order == CUSPARSE_ORDER_ROW ? cols : rows;
  if (!mat || rows < 0 || cols < 0 || value_type != CUDA_R_32F ||
      (order != CUSPARSE_ORDER_ROW && order != CUSPARSE_ORDER_COL) || ld < max1(need))
    return CUSPARSE_STATUS_INVALID_VALUE;
  *mat = new cusparseDnMatDescr{rows, cols, ld, values, order};
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseDnMatSetValues(cusparseDnMatDescr_t mat, void *values) {
  if (!mat) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!values) return CUSPARSE_STATUS_INVALID_VALUE;
  mat->values = values;
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseDestroyDnMat(cusparseDnMatDescr_t mat) {
  delete mat;
  return CUSPARSE_STATUS_SUCCESS;
}

/* The checks both calls make: non-transposed CSR times row- or
 * column-major dense, shapes that agree, fp32. */
static cusparseStatus_t spmm_check(cusparseHandle_t handle, cusparseOperation_t op_a,
                                   cusparseOperation_t op_b, const void *alpha,
                                   cusparseSpMatDescr_t a, cusparseDnMatDescr_t b, const void *beta,
                                   cusparseDnMatDescr_t c, cudaDataType compute_type,
                                   cusparseSpMMAlg_t alg, const char *call) {
  if (!handle || !a || !b || !c) return CUSPARSE_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || compute_type != CUDA_R_32F ||
      (alg != CUSPARSE_SPMM_ALG_DEFAULT && alg != CUSPARSE_SPMM_CSR_ALG1 &&
       alg != CUSPARSE_SPMM_CSR_ALG2))
    return CUSPARSE_STATUS_INVALID_VALUE;
  if (op_a != CUSPARSE_OPERATION_NON_TRANSPOSE || op_b != CUSPARSE_OPERATION_NON_TRANSPOSE) {
    report("%s: only non-transposed operands are emulated", call);
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  }
  if (b->rows != a->cols || c->rows != a->rows || c->cols != b->cols || b->order != c->order) {
    report("%s: A is %lldx%lld, B %lldx%lld, C %lldx%lld (orders %d and %d)", call,
           (long long)a->rows, (long long)a->cols, (long long)b->rows, (long long)b->cols,
           (long long)c->rows, (long long)c->cols, (int)b->order, (int)c->order);
    return CUSPARSE_STATUS_INVALID_VALUE;
  }
  return CUSPARSE_STATUS_SUCCESS;
}

cusparseStatus_t cusparseSpMM_bufferSize(cusparseHandle_t handle, cusparseOperation_t op_a,
                                         cusparseOperation_t op_b, const void *alpha,
                                         cusparseSpMatDescr_t a, cusparseDnMatDescr_t b,
                                         const void *beta, cusparseDnMatDescr_t c,
                                         cudaDataType compute_type, cusparseSpMMAlg_t alg,
                                         size_t *bytes) {
  HALO_EMU_API;
  cusparseStatus_t st = spmm_check(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg,
                                   "cusparseSpMM_bufferSize");
  if (st != CUSPARSE_STATUS_SUCCESS) return st;
  if (!bytes) return CUSPARSE_STATUS_INVALID_VALUE;
  *bytes = spmm_workspace(a, *(const float *)beta);
  return CUSPARSE_STATUS_SUCCESS;
}

/* A dense operand: element (i, j) and the bytes it spans. */
static float *dense_at(const cusparseDnMatDescr &m, int64_t i, int64_t j) {
  float *v = (float *)m.values;
  return m.order == CUSPARSE_ORDER_ROW ? v + i * m.ld + j : v + j * m.ld + i;
}
static size_t dense_bytes(const cusparseDnMatDescr &m) {
  return m.order == CUSPARSE_ORDER_ROW ? span(m.cols, m.rows, m.ld, 4)
                                       : span(m.rows, m.cols, m.ld, 4);
}

cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t op_a,
                              cusparseOperation_t op_b, const void *alpha, cusparseSpMatDescr_t a,
                              cusparseDnMatDescr_t b, const void *beta, cusparseDnMatDescr_t c,
                              cudaDataType compute_type, cusparseSpMMAlg_t alg, void *workspace) {
  HALO_EMU_API;
  static const char call[] = "cusparseSpMM";
  cusparseStatus_t st =
      spmm_check(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, call);
  if (st != CUSPARSE_STATUS_SUCCESS) return st;
  const float al = *(const float *)alpha, be = *(const float *)beta;
  const size_t work = spmm_workspace(a, be);
  if (!workspace || !operand(workspace, work, call, "the workspace (smaller than bufferSize)"))
    return CUSPARSE_STATUS_INVALID_VALUE;
  /* The descriptors' state now is what the operation uses. */
  const cusparseSpMatDescr sa = *a;
  const cusparseDnMatDescr sb = *b, sc = *c;
  if (!operand(sa.offsets, (size_t)(sa.rows + 1) * index_bytes(sa.offset_type), call,
               "the row offsets") ||
      !operand(sa.columns, (size_t)sa.nnz * index_bytes(sa.column_type), call, "the columns") ||
      !operand(sa.values, (size_t)sa.nnz * 4, call, "the values") ||
      !operand(sb.values, dense_bytes(sb), call, "B") ||
      !operand(sc.values, dense_bytes(sc), call, "C"))
    return CUSPARSE_STATUS_INVALID_VALUE;
  enqueue(stream_of(handle->stream), [=] {
    const void *arrays[] = {sa.offsets, sa.columns, sa.values, sb.values, sc.values, workspace};
    const char *names[] = {"row offsets", "columns", "values", "B", "C", "workspace"};
    for (int i = 0; i < 6; i++)
      if ((uintptr_t)arrays[i] % 16) {
        fault(cudaErrorMisalignedAddress, "%s: %s at %p is not 16-byte aligned", call, names[i],
              arrays[i]);
        return;
      }
    memset(workspace, 0xa5, work);
    const float *values = (const float *)sa.values;
    for (int64_t i = 0; i < sa.rows; i++) {
      const int64_t k0 = load_index(sa.offsets, sa.offset_type, i);
      const int64_t k1 = load_index(sa.offsets, sa.offset_type, i + 1);
      if (k0 < 0 || k1 < k0 || k1 > sa.nnz) {
        fault(cudaErrorIllegalAddress, "%s: row %lld's offsets %lld..%lld are outside 0..%lld",
              call, (long long)i, (long long)k0, (long long)k1, (long long)sa.nnz);
        return;
      }
      for (int64_t j = 0; j < sc.cols; j++) {
        float acc = 0.0f;
        for (int64_t k = k0; k < k1; k++) {
          const int64_t col = load_index(sa.columns, sa.column_type, k);
          if (col < 0 || col >= sa.cols) {
            fault(cudaErrorIllegalAddress, "%s: column index %lld at %lld is outside 0..%lld", call,
                  (long long)col, (long long)k, (long long)sa.cols - 1);
            return;
          }
          acc += values[k] * *dense_at(sb, col, j);
        }
        float *y = dense_at(sc, i, j);
        /* beta = 0: C is not read, as BLAS promises. */
        *y = be == 0.0f ? al * acc : al * acc + be * *y;
      }
    }
  });
  return CUSPARSE_STATUS_SUCCESS;
}

}  // extern "C"
