/* CUDA twins of GAT's four kernels (kernels/halo-kernels.h, halo_cpu_gat_*):
 * one GPU thread per row, each running core/halo-gat.h's row functions,
 * which the CPU kernels (cpu-gat.c) run too.
 */
#include "cuda-kernels.cuh"
#include "halo-gat.h"

namespace {

/* ---- GAT: one thread per row, core/halo-gat.h's row functions ---------- */

__global__ void gat_scores_kernel(halo_gat_layer g, const float *t, int64_t rows,
                                  const float *a_src, const float *a_dst, float *s) {
  const int64_t kf = (int64_t)g.heads * g.f;
  for (int64_t r = thread_index(); r < rows; r += thread_count())
    halo_gat_scores_row(&g, t + r * kf, a_src, a_dst, s + r * 2 * g.heads);
}

__global__ void gat_attend_kernel(halo_gat_layer g, halo_gat_rows a, int64_t rows, float *out,
                                  float *z, float *node) {
  for (int64_t i = thread_index(); i < rows; i += thread_count())
    halo_gat_attend_row(&g, g.heads, g.f, &a, i, out, z, node);
}

__global__ void gat_node_terms_kernel(halo_gat_layer g, const float *dz, const float *out,
                                      int64_t rows, float *node) {
  for (int64_t i = thread_index(); i < rows; i += thread_count())
    halo_gat_node_terms_row(&g, dz, out, i, node);
}

__global__ void gat_backward_kernel(halo_gat_layer g, halo_gat_rows a, int64_t rows,
                                    const float *node, const float *a_src, const float *a_dst,
                                    float *dt, float *att_grad) {
  for (int64_t j = thread_index(); j < rows; j += thread_count())
    halo_gat_backward_row(&g, g.heads, g.f, &a, node, a_src, a_dst, rows, j, dt, att_grad);
}

/* What every GAT entry point checks first. */
halo_status gat_check(const char *op, const halo_gat_layer *g, int64_t rows) {
  if (rows < 0) return halo_cuda_bad_arg(op, "negative size");
  if (g->heads < 1 || g->heads > HALO_GAT_MAX_HEADS || g->f < 1)
    return halo_cuda_bad_arg(op, "heads must be in [1, HALO_GAT_MAX_HEADS] and their width >= 1");
  return HALO_OK;
}

halo_gat_rows gat_rows(const halo_csr *adj, const int64_t *global_id, const float *t,
                       const float *s) {
  halo_gat_rows a;
  a.indptr = adj->indptr;
  a.indices = adj->indices;
  a.global_id = global_id;
  a.t = t;
  a.s = s;
  return a;
}

}  // namespace

extern "C" halo_status halo_cuda_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows,
                                            const float *a_src, const float *a_dst, float *s,
                                            void *stream) {
  const char *op = "halo_cuda_gat_scores";
  const halo_status st = gat_check(op, g, rows);
  if (st != HALO_OK) return st;
  return launch_n(op, gat_scores_kernel, rows, stream, *g, t, rows, a_src, a_dst, s);
}

extern "C" halo_status halo_cuda_gat_attend(const halo_gat_layer *g, const halo_csr *adj,
                                            const int64_t *global_id, const float *t,
                                            const float *s, float *out, float *z, float *node,
                                            void *stream) {
  const char *op = "halo_cuda_gat_attend";
  const halo_status st = gat_check(op, g, adj->rows);
  if (st != HALO_OK) return st;
  return launch_n(op, gat_attend_kernel, adj->rows, stream, *g, gat_rows(adj, global_id, t, s),
                  adj->rows, out, z, node);
}

extern "C" halo_status halo_cuda_gat_node_terms(const halo_gat_layer *g, const float *dz,
                                                const float *out, int64_t rows, float *node,
                                                void *stream) {
  const char *op = "halo_cuda_gat_node_terms";
  const halo_status st = gat_check(op, g, rows);
  if (st != HALO_OK) return st;
  return launch_n(op, gat_node_terms_kernel, rows, stream, *g, dz, out, rows, node);
}

extern "C" halo_status halo_cuda_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                                     const int64_t *global_id, const float *t,
                                                     const float *s, const float *node,
                                                     const float *a_src, const float *a_dst,
                                                     float *dt, float *att_grad, void *stream) {
  const char *op = "halo_cuda_gat_attend_backward";
  const halo_status st = gat_check(op, g, adj->rows);
  if (st != HALO_OK) return st;
  return launch_n(op, gat_backward_kernel, adj->rows, stream, *g, gat_rows(adj, global_id, t, s),
                  adj->rows, node, a_src, a_dst, dt, att_grad);
}
