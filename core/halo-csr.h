/* The CSR matrix type that the sparse products (spmm/), the backends and the
 * models pass between them.
 *
 * Row r's nonzeros are indices/values[indptr[r] .. indptr[r+1]).  The offsets
 * are absolute, so a view of rows [a, b) of a matrix is the same arrays with
 * indptr + a and rows = b - a (nnz may then stay the whole matrix's).
 */
#ifndef HALO_CSR_H
#define HALO_CSR_H

#include <stdint.h>

/* A CSR matrix. Arrays are borrowed: whoever fills the struct owns them. */
typedef struct halo_csr {
  int64_t rows, cols, nnz;
  int64_t *indptr;  /* size rows+1 */
  int32_t *indices; /* size nnz, in [0, cols) */
  float *values;    /* size nnz; NULL means every value is 1 */
} halo_csr;

/* Frees the three arrays of a matrix whose arrays came from malloc (not of a
 * view, nor of borrowed arrays) and zeroes *a; accepts NULL. Local. */
void halo_csr_free(halo_csr *a);

#endif /* HALO_CSR_H */
