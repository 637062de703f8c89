/* halo-cuda-emu: the runtime API plus what a .cu file's kernels use, for
 * kernels compiled as C++ and run on the CPU (tests/cuda-emu/README.md).
 *
 * A kernel is an ordinary function.  The build rewrites each launch
 *   kernel<<<grid, block, shared, stream>>>(args)
 * into
 *   kernel | ::halo_emu::configure(__FILE__, __LINE__, grid, block, shared, stream)(args)
 * which checks the configuration and the pointer arguments and queues the
 * grid on the stream.  Each thread of a block sees its own threadIdx;
 * __syncthreads and warp shuffles switch between the block's threads
 * (fibers), so a barrier that not every thread reaches is reported rather
 * than hung on. */
#ifndef HALO_CUDA_EMU_RUNTIME_H
#define HALO_CUDA_EMU_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* The real header's typed overloads. */
template <class T>
inline cudaError_t cudaMalloc(T **ptr, size_t bytes) {
  return ::cudaMalloc((void **)ptr, bytes);
}
template <class T>
inline cudaError_t cudaMallocHost(T **ptr, size_t bytes) {
  return ::cudaMallocHost((void **)ptr, bytes);
}

namespace halo_emu {

/* What one emulated thread sees. */
struct thread_ctx {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
extern thread_ctx *current;

void sync_block();
uint64_t shfl_xor(unsigned mask, uint64_t bits, int lane_mask, int width);

struct launch_config {
  const char *file;
  int line;
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};

/* Checks one argument: a pointer must be NULL or point into device memory,
 * aligned for its type; anything else passes.  Returns 0 and reports when
 * it fails. */
int check_pointer(const launch_config &c, int index, const void *p, size_t align);
template <class T>
int check_arg(const launch_config &, int, const T &) {
  return 1;
}
template <class T>
int check_arg(const launch_config &c, int index, T *const &p) {
  return check_pointer(c, index, (const void *)p,
                       alignof(typename std::conditional<std::is_void<T>::value, char, T>::type));
}

/* Queues `grid` on the configured stream; nothing runs until the stream is
 * synchronised with (stream.cc). */
void launch(const launch_config &c, std::function<void()> grid);

template <class... A>
struct launch_args {
  launch_config config;
  std::tuple<A...> args;
};

struct configured {
  launch_config config;
  template <class... A>
  launch_args<A...> operator()(A... args) const {
    return {config, std::tuple<A...>(args...)};
  }
};

inline configured configure(const char *file, int line, dim3 grid, dim3 block, size_t shared = 0,
                            cudaStream_t stream = nullptr) {
  return {{file, line, grid, block, shared, stream}};
}

/* kernel | configure(...)(args): the arguments are converted to the
 * kernel's parameter types now, as a real launch copies them now. */
template <class... P, class... A>
void operator|(void (*kernel)(P...), launch_args<A...> l) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch with the wrong number of arguments");
  auto args = std::apply(
      [](auto &&...a) { return std::tuple<typename std::decay<P>::type...>(a...); }, l.args);
  const launch_config &c = l.config;
  const bool ok = std::apply(
      [&c](const auto &...a) {
        int i = 0, all = 1;
        ((all &= check_arg(c, i++, a)), ...);
        return all != 0;
      },
      args);
  if (!ok) return;
  launch(c, [kernel, args]() { std::apply(kernel, args); });
}

}  // namespace halo_emu

#define threadIdx (::halo_emu::current->thread_idx)
#define blockIdx (::halo_emu::current->block_idx)
#define blockDim (::halo_emu::current->block_dim)
#define gridDim (::halo_emu::current->grid_dim)

inline void __syncthreads() { ::halo_emu::sync_block(); }

template <class T>
inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value,
                "__shfl_xor_sync takes a scalar of at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &value, sizeof value);
  bits = ::halo_emu::shfl_xor(mask, bits, lane_mask, width);
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* Threads of a block switch only at barriers, so a read-modify-write is
 * atomic as written. */
template <class T>
inline T atomicAdd(T *address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}

template <class T>
inline T atomicMax(T *address, T value) {
  const T old = *address;
  if (value > old) *address = value;
  return old;
}

inline unsigned __float_as_uint(float x) {
  unsigned u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* Round to nearest, ties to even: the default rounding mode, which halo
 * changes only while the CPU's dense exact sums run (kernels/cpu-exact.c),
 * on their own threads, and then restores. */
inline long long __double2ll_rn(double x) { return llrint(x); }
/* Toward −∞ and +∞: exact for any double, whatever the mode. */
inline long long __double2ll_rd(double x) { return (long long)floor(x); }
inline long long __double2ll_ru(double x) { return (long long)ceil(x); }

/* The build compiles emulated kernels with -ffp-contract=off, so these are
 * the single IEEE roundings the intrinsics promise. */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }

#endif /* __cplusplus */

#endif /* HALO_CUDA_EMU_RUNTIME_H */
