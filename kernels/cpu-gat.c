/* GAT's kernels on the CPU (halo-kernels.h): the per-node scores, the
 * attention forward (an SDDMM, the edge softmax and an SpMM with the
 * coefficients as values, fused per row), the node terms, and the
 * attention backward, which visits each edge from the side of the node it
 * reaches.  The rows' arithmetic is core/halo-gat.h's, which the CUDA
 * twins run too.
 *
 * Each row is computed by one thread, in its columns' order (ascending
 * global id), with plain loops: no vectorised reduction, whose rounding
 * would depend on the addresses of the rows, and no contraction into fused
 * multiply-adds (-ffp-contract=off), so that a row's result does not depend
 * on the rank, the thread count or the row's place in memory.  Per-edge
 * values are recomputed from per-node terms, never stored.
 */
#include <stdint.h>

#include "halo-gat.h"
#include "halo-kernels.h"

/* Rows below this many floats of work run on the calling thread alone. */
static const int64_t PARALLEL_MIN = 1 << 15;

static halo_gat_rows rows_of(const halo_csr *adj, const int64_t *global_id, const float *t,
                             const float *s) {
  return (halo_gat_rows){
      .indptr = adj->indptr, .indices = adj->indices, .global_id = global_id, .t = t, .s = s};
}

void halo_cpu_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows, const float *a_src,
                         const float *a_dst, float *s) {
  const int64_t kf = (int64_t)g->heads * g->f;
#pragma omp parallel for schedule(static) if (rows * kf >= PARALLEL_MIN)
  for (int64_t r = 0; r < rows; r++)
    halo_gat_scores_row(g, t + r * kf, a_src, a_dst, s + r * 2 * g->heads);
}

void halo_cpu_gat_attend(const halo_gat_layer *g, const halo_csr *adj, const int64_t *global_id,
                         const float *t, const float *s, float *out, float *z, float *node) {
  const halo_gat_rows a = rows_of(adj, global_id, t, s);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < adj->rows; i++) halo_gat_attend_row(g, &a, i, out, z, node);
}

void halo_cpu_gat_node_terms(const halo_gat_layer *g, const float *dz, const float *out,
                             int64_t rows, float *node) {
#pragma omp parallel for schedule(static) if (rows * g->heads * g->f >= PARALLEL_MIN)
  for (int64_t i = 0; i < rows; i++) halo_gat_node_terms_row(g, dz, out, i, node);
}

void halo_cpu_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                  const int64_t *global_id, const float *t, const float *s,
                                  const float *node, const float *a_src, const float *a_dst,
                                  float *dt, float *att_grad) {
  const halo_gat_rows a = rows_of(adj, global_id, t, s);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t j = 0; j < adj->rows; j++)
    halo_gat_backward_row(g, &a, node, a_src, a_dst, adj->rows, j, dt, att_grad);
}
