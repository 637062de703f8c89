/* CUDA twins of the low-bit halo rows' packing and unpacking
 * (kernels/cpu-halo-pack.c): the per-row arithmetic is core/halo-quant.h's,
 * the very functions the CPU runs, so the packed bytes and the decoded floats
 * are the CPU's bit for bit (the header keeps nvcc from fusing a multiply
 * and an add, the one place where the two compilers could round apart).
 *
 * One thread per row: a row's integer codes share bytes (two int4 or four
 * int2 codes a byte) and its scale needs the row's minimum and maximum
 * first, which one thread gets by the CPU's own scan, so ties between +0
 * and -0 and NaNs end the same way.  A row is a layer's width (tens to a few
 * hundred columns) and the exchange's rows are few next to the SpMM's work,
 * so this is not where an epoch's time goes.
 */
#include "cuda-kernels.cuh"
#include "halo-quant.h"

namespace {

__global__ void quant_pack_kernel(uint8_t *dst, const float *src, int64_t cols, const int32_t *idx,
                                  const int64_t *gid, int64_t n, int prec, uint64_t key,
                                  int64_t row_bytes) {
  for (int64_t i = thread_index(); i < n; i += thread_count())
    halo_quant_pack_row(dst + i * row_bytes, src + (int64_t)idx[i] * cols, cols, prec, key, gid[i]);
}

__global__ void quant_unpack_kernel(float *dst, const uint8_t *src, int64_t cols, int64_t n,
                                    int prec, int64_t row_bytes) {
  for (int64_t i = thread_index(); i < n; i += thread_count())
    halo_quant_unpack_row(dst + i * cols, src + i * row_bytes, cols, prec);
}

int bad_precision(int prec) { return prec < 0 || prec >= HALO_PREC_COUNT; }

}  // namespace

extern "C" halo_status halo_cuda_quant_pack(uint8_t *dst, const float *src, int64_t cols,
                                            const int32_t *idx, const int64_t *gid, int64_t n,
                                            int prec, uint64_t key, void *stream) {
  if (n < 0 || cols < 1 || bad_precision(prec))
    return halo_cuda_bad_arg("halo_cuda_quant_pack", "need n >= 0, cols >= 1 and a precision");
  return launch_n("halo_cuda_quant_pack", quant_pack_kernel, n, stream, dst, src, cols, idx, gid, n,
                  prec, key, halo_quant_row_bytes(prec, cols));
}

extern "C" halo_status halo_cuda_quant_unpack(float *dst, const uint8_t *src, int64_t cols,
                                              int64_t n, int prec, void *stream) {
  if (n < 0 || cols < 1 || bad_precision(prec))
    return halo_cuda_bad_arg("halo_cuda_quant_unpack", "need n >= 0, cols >= 1 and a precision");
  return launch_n("halo_cuda_quant_unpack", quant_unpack_kernel, n, stream, dst, src, cols, n, prec,
                  halo_quant_row_bytes(prec, cols));
}
