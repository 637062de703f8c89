/* GraphSAGE's max aggregator on the CPU (halo-kernels.h): the element-wise
 * max over a row's neighbours with its arg-max, and the backward that sends
 * each output gradient to the neighbour its max came from.
 *
 * The max is exact (no rounding), and ties go to the lowest global id: a
 * row's columns are in ascending global id, so the first of equal values
 * wins.  The backward visits the edges from the side of the node they
 * reach and adds, in its row's order (ascending global id), the gradients
 * whose arg-max is that node: each row is one thread's, so the sums do not
 * depend on the rank, the thread count or the partition.
 */
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_sage_max(const halo_csr *adj, const int64_t *global_id, const float *x,
                       int64_t cols, float *out, int32_t *arg) {
  const int64_t n = adj->rows;
#pragma omp parallel for schedule(dynamic, 256) if (adj->nnz * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t i = 0; i < n; i++) {
    float *o = out + i * cols;
    int32_t *a = arg ? arg + i * cols : NULL;
    const int64_t lo = adj->indptr[i], hi = adj->indptr[i + 1];
    if (lo == hi) { /* PyG's max over no neighbour: 0 */
      for (int64_t c = 0; c < cols; c++) o[c] = 0.0f;
      if (a)
        for (int64_t c = 0; c < cols; c++) a[c] = -1;
      continue;
    }
    const int32_t j0 = adj->indices[lo];
    for (int64_t c = 0; c < cols; c++) o[c] = x[(int64_t)j0 * cols + c];
    if (a)
      for (int64_t c = 0; c < cols; c++) a[c] = (int32_t)global_id[j0];
    for (int64_t k = lo + 1; k < hi; k++) {
      const int32_t j = adj->indices[k];
      const float *xj = x + (int64_t)j * cols;
      for (int64_t c = 0; c < cols; c++)
        if (xj[c] > o[c]) {
          o[c] = xj[c];
          if (a) a[c] = (int32_t)global_id[j];
        }
    }
  }
}

void halo_cpu_sage_max_backward(const halo_csr *adj, const int64_t *global_id, const int32_t *arg,
                                const float *g, int64_t cols, float *dx) {
  const int64_t n = adj->rows;
#pragma omp parallel for schedule(dynamic, 256) if (adj->nnz * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t j = 0; j < n; j++) {
    float *d = dx + j * cols;
    const int32_t me = (int32_t)global_id[j];
    for (int64_t c = 0; c < cols; c++) d[c] = 0.0f;
    for (int64_t k = adj->indptr[j]; k < adj->indptr[j + 1]; k++) {
      const int64_t i = adj->indices[k];
      const int32_t *ai = arg + i * cols;
      const float *gi = g + i * cols;
      for (int64_t c = 0; c < cols; c++)
        if (ai[c] == me) d[c] += gi[c];
    }
  }
}
