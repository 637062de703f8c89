#include "halo-csr.h"

#include <stdlib.h>
#include <string.h>

halo_status halo_csr_from_dense(const float *x, int64_t rows, int64_t cols, const char *what,
                                halo_csr *out) {
  halo_status st = HALO_OK;
  halo_csr a = {.rows = rows, .cols = cols};
  for (int64_t k = 0; k < rows * cols; k++) a.nnz += x[k] != 0.0f;
  if (!HALO_CALLOC(a.indptr, rows + 1) || !HALO_CALLOC(a.indices, a.nnz) ||
      !HALO_CALLOC(a.values, a.nnz))
    HALO_FAIL(HALO_ERR_NOMEM, "out of memory making %s sparse (%lld non-zeros)", what,
              (long long)a.nnz);
  for (int64_t i = 0, k = 0; i < rows; i++) {
    for (int64_t j = 0; j < cols; j++) {
      if (x[i * cols + j] == 0.0f) continue;
      a.indices[k] = (int32_t)j;
      a.values[k++] = x[i * cols + j];
    }
    a.indptr[i + 1] = k;
  }
  *out = a;
  a = (halo_csr){0};
done:
  halo_csr_free(&a);
  return st;
}

void halo_csr_to_dense(const halo_csr *a, float *x) {
  memset(x, 0, (size_t)(a->rows * a->cols) * sizeof *x);
  for (int64_t i = 0; i < a->rows; i++)
    for (int64_t k = a->indptr[i]; k < a->indptr[i + 1]; k++)
      x[i * a->cols + a->indices[k]] = a->values ? a->values[k] : 1.0f;
}

void halo_csr_free(halo_csr *a) {
  if (!a) return;
  free(a->indptr);
  free(a->indices);
  free(a->values);
  *a = (halo_csr){0};
}
