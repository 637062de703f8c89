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

#include "halo-status.h"

/* A CSR matrix. Arrays are borrowed: whoever fills the struct owns them. */
typedef struct halo_csr {
  int64_t rows, cols, nnz;
  int64_t *indptr;  /* size rows+1 */
  int32_t *indices; /* size nnz, in [0, cols) */
  float *values;    /* size nnz; NULL means every value is 1 */
} halo_csr;

/* The density rule for node features, shared by the loaders, halo-partition's
 * --features-layout auto and the trainer (docs/shard-format.md, "Sparse
 * features"): a matrix of `rows` x `cols` with `nnz` non-zeros is kept as
 * CSR while its bytes, 8 a non-zero (int32 column, float value) and 8 a row
 * (the int64 offset), are fewer than the dense rows' 4·cols each:
 * 8·nnz + 8·rows < 4·cols·rows.  A matrix without rows or columns is dense.
 * Local. */
static inline int halo_csr_is_smaller(int64_t rows, int64_t cols, int64_t nnz) {
  if (rows <= 0 || cols <= 0) return 0;
  /* Halved: 2·nnz + 2·rows < cols·rows, in double past 2^62. */
  const double lhs = 2.0 * (double)nnz + 2.0 * (double)rows, rhs = (double)cols * (double)rows;
  if (rhs < 4e18) return 2 * nnz + 2 * rows < cols * rows;
  return lhs < rhs;
}

/* The non-zeros of the dense rows x (rows x cols, row-major) as a new CSR
 * matrix: *out gets malloc'd arrays (halo_csr_free) and its values.  `what`
 * names the matrix in the one line an allocation failure prints. Local. */
halo_status halo_csr_from_dense(const float *x, int64_t rows, int64_t cols, const char *what,
                                halo_csr *out);

/* Writes a's rows into x (a->rows x a->cols, row-major), zeroes included.
 * Local. */
void halo_csr_to_dense(const halo_csr *a, float *x);

/* Frees the three arrays of a matrix whose arrays came from malloc (not of a
 * view, nor of borrowed arrays) and zeroes *a; accepts NULL. Local. */
void halo_csr_free(halo_csr *a);

#endif /* HALO_CSR_H */
