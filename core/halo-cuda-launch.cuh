/* Private to the CUDA code (kernels/ and spmm/): the one kernel launcher.
 *
 * Every wrapper launched its kernel the same way: a grid sized by its work
 * and capped, the launch on the caller's stream, and the check of the
 * launch.  halo_cuda_launch is that body, written once, and
 * halo_cuda_blocks the grid's size.  A bad configuration is reported by the
 * launch's status; a fault inside the kernel at the next synchronising call.
 */
#ifndef HALO_CUDA_LAUNCH_CUH
#define HALO_CUDA_LAUNCH_CUH

#include <stdint.h>

#include "halo-cuda-check.cuh"

/* Grid-stride kernels never launch more blocks than this; 2^16 blocks of
 * 256 threads keep every multiprocessor of any current GPU busy. */
#define HALO_CUDA_MAX_BLOCKS 65536

/* Blocks for `work` items at `per_block` items a block: at least 1, at most
 * HALO_CUDA_MAX_BLOCKS (the kernels' grid-stride loops cover the rest). */
static inline unsigned halo_cuda_blocks(int64_t work, int64_t per_block) {
  const int64_t b = (work + per_block - 1) / per_block;
  return (unsigned)(b < 1 ? 1 : b > HALO_CUDA_MAX_BLOCKS ? HALO_CUDA_MAX_BLOCKS : b);
}

/* One log line for an argument the caller got wrong, and HALO_ERR_ARG. */
static inline halo_status halo_cuda_bad_arg(const char *op, const char *what) {
  halo_log_error("%s: %s", op, what);
  return HALO_ERR_ARG;
}

/* Launches kernel(args...) on `grid` blocks of `block` threads, queued on
 * `stream`, and returns whether the launch was accepted. */
template <class... P, class... A>
halo_status halo_cuda_launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream,
                             A... args) {
  halo_status st = HALO_OK;
#ifdef HALO_CUDA_EMU
  /* The emulator's launch, as tests/cuda-emu/rewrite.cmake writes the .cu
   * files' own: it rewrites no header. */
  kernel | ::halo_emu::configure(__FILE__, __LINE__, grid, block, 0, stream)(args...);
#else
  /* clang-format reads a .cuh as C++, and would split the launch's >>>. */
  // clang-format off
  kernel<<<grid, block, 0, stream>>>(args...);
  // clang-format on
#endif
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

#endif /* HALO_CUDA_LAUNCH_CUH */
