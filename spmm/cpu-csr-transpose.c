/* Aᵀ of a CSR matrix by counting sort on the column index.
 *
 * Scattering the rows of A in increasing order makes the column indices of
 * every row of Aᵀ come out sorted, whatever the order inside A's rows.  The
 * transpose is built once per plan, so it runs on one thread.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-spmm.h"
#include "halo-status.h"

/* Checks that indptr is monotone from 0 to nnz and that every column index
 * is in [0, cols); logs the first fault. */
static halo_status check_csr(const halo_csr *a) {
  if (a->rows < 0 || a->cols < 0 || a->nnz < 0) {
    halo_log_error("halo_csr_transpose: negative shape (%lld x %lld, %lld nonzeros)",
                   (long long)a->rows, (long long)a->cols, (long long)a->nnz);
    return HALO_ERR_ARG;
  }
  if (a->rows > INT32_MAX) {
    halo_log_error("halo_csr_transpose: %lld rows do not fit the int32 column indices of Aᵀ",
                   (long long)a->rows);
    return HALO_ERR_LIMIT;
  }
  if (!a->indptr || (a->nnz > 0 && !a->indices)) {
    halo_log_error("halo_csr_transpose: the matrix has no %s array",
                   a->indptr ? "indices" : "indptr");
    return HALO_ERR_ARG;
  }
  if (a->indptr[0] != 0 || a->indptr[a->rows] != a->nnz) {
    halo_log_error("halo_csr_transpose: indptr runs from %lld to %lld, expected 0 to nnz = %lld",
                   (long long)a->indptr[0], (long long)a->indptr[a->rows], (long long)a->nnz);
    return HALO_ERR_ARG;
  }
  for (int64_t r = 0; r < a->rows; r++) {
    if (a->indptr[r + 1] < a->indptr[r]) {
      halo_log_error("halo_csr_transpose: indptr[%lld] = %lld is less than indptr[%lld] = %lld",
                     (long long)(r + 1), (long long)a->indptr[r + 1], (long long)r,
                     (long long)a->indptr[r]);
      return HALO_ERR_ARG;
    }
  }
  for (int64_t k = 0; k < a->nnz; k++) {
    if (a->indices[k] < 0 || a->indices[k] >= a->cols) {
      halo_log_error("halo_csr_transpose: indices[%lld] = %d is out of range (columns: %lld)",
                     (long long)k, a->indices[k], (long long)a->cols);
      return HALO_ERR_RANGE;
    }
  }
  return HALO_OK;
}

halo_status halo_csr_transpose_perm(const halo_csr *a, int32_t *perm) {
  halo_status st = HALO_OK;
  int64_t *next = NULL; /* where the next entry of each row of Aᵀ goes */
  HALO_TRY(check_csr(a));
  if (a->nnz > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "halo_csr_transpose_perm: %lld non-zeros do not fit int32 positions",
              (long long)a->nnz);
  HALO_ALLOC(next, a->cols + 1, "the transpose's scatter cursors");
  memset(next, 0, (size_t)(a->cols + 1) * sizeof *next);
  /* The same counting sort as halo_csr_transpose: rows of Aᵀ by column,
   * A's rows in order within each. */
  for (int64_t k = 0; k < a->nnz; k++) next[a->indices[k] + 1]++;
  for (int64_t c = 0; c < a->cols; c++) next[c + 1] += next[c];
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t k = a->indptr[r]; k < a->indptr[r + 1]; k++)
      perm[next[a->indices[k]]++] = (int32_t)k;
done:
  free(next);
  return st;
}

halo_status halo_csr_transpose(const halo_csr *a, halo_csr *out) {
  halo_status st = HALO_OK;
  halo_csr t = {.rows = a->cols, .cols = a->rows, .nnz = a->nnz};
  int64_t *next = NULL; /* size cols: where the next entry of each row of Aᵀ goes */

  *out = (halo_csr){0};
  HALO_TRY(check_csr(a));

  HALO_ALLOC(t.indptr, t.rows + 1, "the row offsets of the transpose");
  HALO_ALLOC(t.indices, t.nnz, "the column indices of the transpose");
  if (a->values) HALO_ALLOC(t.values, t.nnz, "the values of the transpose");
  HALO_ALLOC(next, t.rows, "the transpose's scatter cursors");

  for (int64_t k = 0; k < a->nnz; k++) t.indptr[a->indices[k] + 1]++;
  for (int64_t c = 0; c < t.rows; c++) {
    t.indptr[c + 1] += t.indptr[c];
    next[c] = t.indptr[c];
  }
  for (int64_t r = 0; r < a->rows; r++) {
    for (int64_t k = a->indptr[r]; k < a->indptr[r + 1]; k++) {
      const int64_t dst = next[a->indices[k]]++;
      t.indices[dst] = (int32_t)r;
      if (a->values) t.values[dst] = a->values[k];
    }
  }
  *out = t;
  t = (halo_csr){0};

done:
  free(next);
  halo_csr_free(&t);
  return st;
}
