/* Local sparse × dense products on the CPU (OpenMP over rows, vectorised
 * along the feature dimension).
 *
 *   Y[r, :] = beta · Y[r, :] + Σ_k A.values[k] · X[A.indices[k], :]   for r in rows
 *
 * Dense matrices are row-major with an explicit leading dimension (in floats).
 */
#ifndef HALO_SPMM_H
#define HALO_SPMM_H

#include <stdint.h>

#include "halo-status.h"

/* A CSR matrix. Arrays are borrowed: whoever fills the struct owns them. */
/* Row r's nonzeros are indices/values[indptr[r] .. indptr[r+1]).  The
 * offsets are absolute, so a view of rows [a, b) of a matrix is the same
 * arrays with indptr + a and rows = b - a (nnz may then stay the whole
 * matrix's); the products below accept such views, halo_csr_transpose
 * does not. */
typedef struct halo_csr {
  int64_t rows, cols, nnz;
  int64_t *indptr;  /* size rows+1 */
  int32_t *indices; /* size nnz, in [0, cols) */
  float *values;    /* size nnz; NULL means every value is 1 */
} halo_csr;

/* Y[rows[i], 0:ncols] = A[rows[i], :] · X[:, 0:ncols] (+ beta · Y) for
 * i in [0, nrows); `rows` NULL means rows 0..nrows-1.  X has A.cols rows.
 * beta is 0 or 1. Local. */
void halo_spmm_cpu(const halo_csr *a, const float *x, int64_t ldx, int64_t ncols, float beta,
                   float *y, int64_t ldy, const int32_t *rows, int64_t nrows);

/* Builds Aᵀ as a new CSR whose arrays the caller frees with
 * halo_csr_free(). Local. */
halo_status halo_csr_transpose(const halo_csr *a, halo_csr *out);

/* Frees arrays allocated by halo_csr_transpose (not borrowed ones). */
void halo_csr_free(halo_csr *a);

#endif /* HALO_SPMM_H */
