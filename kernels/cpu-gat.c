/* GAT's kernels on the CPU (halo-kernels.h): the per-node scores, the
 * attention forward (an SDDMM, the edge softmax and an SpMM with the
 * coefficients as values, fused per row), the node terms, and the
 * attention backward, which visits each edge from the side of the node it
 * reaches.  The rows' arithmetic is core/halo-gat.h's, which the CUDA
 * twins run too.
 *
 * Each row is computed by one thread, in its columns' order (ascending
 * global id).  The loops over a row's heads and columns run as vectors
 * (one head or column a lane: elementwise operations, whose bits do not
 * depend on the vector width), the sums over a row's edges one accumulator
 * a lane, in edge order, and nothing is contracted into fused
 * multiply-adds (-ffp-contract=off), so that a row's result does not
 * depend on the rank, the thread count, the row's place in memory or
 * which of the clones below runs.  Per-edge values are recomputed from
 * per-node terms, never stored.
 */
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-gat.h"
#include "halo-kernels.h"

static halo_gat_rows rows_of(const halo_csr *adj, const int64_t *global_id, const float *t,
                             const float *s) {
  return (halo_gat_rows){
      .indptr = adj->indptr, .indices = adj->indices, .global_id = global_id, .t = t, .s = s};
}

void halo_cpu_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows, const float *a_src,
                         const float *a_dst, float *s) {
  const int64_t kf = (int64_t)g->heads * g->f;
#pragma omp parallel for schedule(static) if (rows * kf >= HALO_PARALLEL_HEAVY)
  for (int64_t r = 0; r < rows; r++)
    halo_gat_scores_row(g, t + r * kf, a_src, a_dst, s + r * 2 * g->heads);
}

/* Rows a task of the attention kernels takes; rows differ in length, so
 * the tasks are handed out dynamically. */
enum { ROW_BLOCK = 128 };

/* The attention forward and backward of rows [i0, i1), cloned for the
 * vector widths of x86-64-v4 (AVX-512, whose 64-bit products vectorise the
 * dropout's draws) and v3 (AVX2, FMA unused): the row functions are
 * inlined into each clone, and into each clone once for each of the
 * common shapes, where K or F is a constant: one head (GAT's output
 * layer), 8 columns a head (PyG's GAT examples' hidden layer, halo's
 * default), or any.  With a constant, a row's loops over heads and
 * columns are fixed trips: no loop set-up, remainder or per-head
 * branches, which at 8 columns cost more than the arithmetic (with the
 * memcpy calls gone too, the output layer's attention took 0.48-0.55 of
 * its time in training, the hidden layer's 0.75-0.79; docs/benchmarks.md).
 * The same row functions, so the same bits. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void
attend_rows(const halo_gat_layer *g, const halo_gat_rows *a, int64_t i0, int64_t i1, float *out,
            float *z, float *node) {
  if (g->heads == 1)
    for (int64_t i = i0; i < i1; i++) halo_gat_attend_row(g, 1, g->f, a, i, out, z, node);
  else if (g->f == 8)
    for (int64_t i = i0; i < i1; i++) halo_gat_attend_row(g, g->heads, 8, a, i, out, z, node);
  else
    for (int64_t i = i0; i < i1; i++) halo_gat_attend_row(g, g->heads, g->f, a, i, out, z, node);
}

#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void
backward_rows(const halo_gat_layer *g, const halo_gat_rows *a, const float *node,
              const float *a_src, const float *a_dst, int64_t n, int64_t j0, int64_t j1, float *dt,
              float *att_grad) {
  const int32_t K = g->heads, F = g->f;
  if (K == 1)
    for (int64_t j = j0; j < j1; j++)
      halo_gat_backward_row(g, 1, F, a, node, a_src, a_dst, n, j, dt, att_grad);
  else if (F == 8)
    for (int64_t j = j0; j < j1; j++)
      halo_gat_backward_row(g, K, 8, a, node, a_src, a_dst, n, j, dt, att_grad);
  else
    for (int64_t j = j0; j < j1; j++)
      halo_gat_backward_row(g, K, F, a, node, a_src, a_dst, n, j, dt, att_grad);
}

void halo_cpu_gat_attend(const halo_gat_layer *g, const halo_csr *adj, const int64_t *global_id,
                         const float *t, const float *s, float *out, float *z, float *node) {
  const halo_gat_rows a = rows_of(adj, global_id, t, s);
  const int64_t rows = adj->rows, blocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
#pragma omp parallel for schedule(dynamic, 2)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t i0 = b * ROW_BLOCK, i1 = i0 + ROW_BLOCK < rows ? i0 + ROW_BLOCK : rows;
    attend_rows(g, &a, i0, i1, out, z, node);
  }
}

void halo_cpu_gat_node_terms(const halo_gat_layer *g, const float *dz, const float *out,
                             int64_t rows, float *node) {
#pragma omp parallel for schedule(static) if (rows * g->heads * g->f >= HALO_PARALLEL_HEAVY)
  for (int64_t i = 0; i < rows; i++) halo_gat_node_terms_row(g, dz, out, i, node);
}

void halo_cpu_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                  const int64_t *global_id, const float *t, const float *s,
                                  const float *node, const float *a_src, const float *a_dst,
                                  float *dt, float *att_grad) {
  const halo_gat_rows a = rows_of(adj, global_id, t, s);
  const int64_t rows = adj->rows, blocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
#pragma omp parallel for schedule(dynamic, 2)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t j0 = b * ROW_BLOCK, j1 = j0 + ROW_BLOCK < rows ? j0 + ROW_BLOCK : rows;
    backward_rows(g, &a, node, a_src, a_dst, rows, j0, j1, dt, att_grad);
  }
}
