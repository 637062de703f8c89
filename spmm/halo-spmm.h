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

#include "halo-csr.h"
#include "halo-status.h"

/* The products below accept views of rows [a, b) of a matrix (halo-csr.h);
 * halo_csr_transpose does not. */

/* Y[rows[i], 0:ncols] = A[rows[i], :] · X[:, 0:ncols] (+ beta · Y) for
 * i in [0, nrows); `rows` NULL means rows 0..nrows-1.  X has A.cols rows.
 * beta is 0 or 1. Local. */
void halo_spmm_cpu(const halo_csr *a, const float *x, int64_t ldx, int64_t ncols, float beta,
                   float *y, int64_t ldy, const int32_t *rows, int64_t nrows);

/* Builds Aᵀ as a new CSR whose arrays the caller frees with
 * halo_csr_free() (halo-csr.h). Local. */
halo_status halo_csr_transpose(const halo_csr *a, halo_csr *out);

/* perm[k] = the position in A's arrays of Aᵀ's k-th non-zero, as
 * halo_csr_transpose orders them (nnz ints; nnz <= INT32_MAX): Aᵀ's values
 * are then A's read through perm, so that values computed for A (its
 * dropout) serve Aᵀ without a pass of their own. Local. */
halo_status halo_csr_transpose_perm(const halo_csr *a, int32_t *perm);

#endif /* HALO_SPMM_H */
