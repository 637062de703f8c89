/* CUDA twins of GraphSAGE's max aggregator (kernels/halo-kernels.h,
 * halo_cpu_sage_max and its backward): one GPU thread per output element,
 * visiting its row's columns in the same order (ascending global id) with
 * the same comparisons and additions as the CPU, so the results are the
 * CPU's bit for bit (a max rounds nothing, and the backward only adds).
 */
#include "cuda-kernels.cuh"

namespace {

__global__ void sage_max_kernel(const int64_t *indptr, const int32_t *indices,
                                const int64_t *global_id, const float *x, int64_t cols,
                                int64_t rows, float *out, int32_t *arg) {
  for (int64_t e = thread_index(); e < rows * cols; e += thread_count()) {
    const int64_t i = e / cols, c = e % cols, lo = indptr[i], hi = indptr[i + 1];
    float best = 0.0f; /* PyG's max over no neighbour */
    int32_t who = -1;
    if (lo < hi) {
      best = x[(int64_t)indices[lo] * cols + c];
      who = (int32_t)global_id[indices[lo]];
    }
    for (int64_t k = lo + 1; k < hi; k++) {
      const float v = x[(int64_t)indices[k] * cols + c];
      if (v > best) {
        best = v;
        who = (int32_t)global_id[indices[k]];
      }
    }
    out[e] = best;
    if (arg) arg[e] = who;
  }
}

__global__ void sage_max_backward_kernel(const int64_t *indptr, const int32_t *indices,
                                         const int64_t *global_id, const int32_t *arg,
                                         const float *g, int64_t cols, int64_t rows, float *dx) {
  for (int64_t e = thread_index(); e < rows * cols; e += thread_count()) {
    const int64_t j = e / cols, c = e % cols;
    const int32_t me = (int32_t)global_id[j];
    float d = 0.0f;
    for (int64_t k = indptr[j]; k < indptr[j + 1]; k++) {
      const int64_t i = indices[k];
      if (arg[i * cols + c] == me) d += g[i * cols + c];
    }
    dx[e] = d;
  }
}

}  // namespace

extern "C" halo_status halo_cuda_sage_max(const halo_csr *adj, const int64_t *global_id,
                                          const float *x, int64_t cols, float *out, int32_t *arg,
                                          void *stream) {
  const char *op = "halo_cuda_sage_max";
  if (cols < 0) return halo_cuda_bad_arg(op, "negative size");
  return launch_n(op, sage_max_kernel, adj->rows * cols, stream, adj->indptr, adj->indices,
                  global_id, x, cols, adj->rows, out, arg);
}

extern "C" halo_status halo_cuda_sage_max_backward(const halo_csr *adj, const int64_t *global_id,
                                                   const int32_t *arg, const float *g,
                                                   int64_t cols, float *dx, void *stream) {
  const char *op = "halo_cuda_sage_max_backward";
  if (cols < 0) return halo_cuda_bad_arg(op, "negative size");
  return launch_n(op, sage_max_backward_kernel, adj->rows * cols, stream, adj->indptr,
                  adj->indices, global_id, arg, g, cols, adj->rows, dx);
}
