/* Private to kernels/cuda-*.cu: what the CUDA twins of the CPU's dense
 * operations (kernels/halo-kernels.h) share.
 *
 * Element-wise kernels use grid-stride loops over int64 indices, so any
 * size runs with a bounded grid; launch_n is their wrappers' whole body.
 * Reductions over rows give one warp to each row (rows are short: a layer's
 * width; launch_warps) and combine partial results in a fixed order where
 * the CPU's answer is deterministic.
 *
 * Where an op must match the CPU bit for bit (dropout, bias, ReLU, AXPY, the
 * ELU backward, the elementwise product, pack/unpack, Adam), the kernel
 * performs the very same float operations in the same order as the CPU
 * code, so no rounding can differ.
 */
#ifndef HALO_CUDA_KERNELS_CUH
#define HALO_CUDA_KERNELS_CUH

#include <math.h>

#include "halo-cuda-launch.cuh"
#include "halo-kernels-cuda.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;

__device__ __forceinline__ int64_t thread_index() {
  return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t thread_count() { return (int64_t)gridDim.x * blockDim.x; }

__device__ __forceinline__ double warp_sum(double x) {
  for (int off = kWarp / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int off = kWarp / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

/* A grid-stride kernel over n items, one thread each: a negative n is the
 * caller's error (one line naming `op`), and 0 launches nothing. */
template <class... P, class... A>
halo_status launch_n(const char *op, void (*kernel)(P...), int64_t n, void *stream, A... args) {
  if (n < 0) return halo_cuda_bad_arg(op, "negative size");
  if (n == 0) return HALO_OK;
  return halo_cuda_launch(kernel, halo_cuda_blocks(n, kThreads), kThreads, (cudaStream_t)stream,
                          args...);
}

/* A kernel with one warp per row over `rows` rows (rows > 0). */
template <class... P, class... A>
halo_status launch_warps(void (*kernel)(P...), int64_t rows, void *stream, A... args) {
  return halo_cuda_launch(kernel, halo_cuda_blocks(rows, kThreads / kWarp), kThreads,
                          (cudaStream_t)stream, args...);
}

}  // namespace

#endif /* HALO_CUDA_KERNELS_CUH */
