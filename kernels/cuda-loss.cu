/* CUDA twins of the CPU's losses (kernels/halo-kernels.h): softmax
 * cross-entropy over int32 labels and binary cross-entropy with logits over
 * int8 targets.  Both sum their rows' losses as integers on a fixed grid
 * into the same four counters, so one launcher (loss_launch) runs either
 * kernel, and the loss has the same bits on every run.
 */
#include "cuda-kernels.cuh"

namespace {

/* Masked softmax cross-entropy: one warp per listed row.  A warp finds the
 * row's maximum and its first position (the CPU's argmax), the log-sum-exp
 * (exponentials summed in double), the loss and, when asked, the gradient.
 * As on the CPU, each row's loss is rounded once to a multiple of
 * 2^-kLossGridBits and the integers are added (its high and low 31-bit
 * halves apart, so neither overflows): per block in warp order, then into
 * the workspace's four counters with integer atomics, whose sum has no
 * order.  The loss therefore has the same bits on every run, for any grid,
 * and for any split of the rows among ranks. */
constexpr int kLossGridBits = 30;
constexpr int64_t kLossHalf = ((int64_t)1 << 31) - 1;
struct softmax_counters {
  unsigned long long hi, lo, bad, hits;
};
static_assert(HALO_CUDA_SOFTMAX_WORK_BYTES == sizeof(softmax_counters),
              "HALO_CUDA_SOFTMAX_WORK_BYTES must hold the loss counters");

__global__ void softmax_xent_kernel(const float *z, int64_t cols, const int32_t *labels,
                                    const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                                    softmax_counters *total) {
  __shared__ softmax_counters block[kThreads / kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int64_t warps = thread_count() / kWarp;
  softmax_counters mine = {0, 0, 0, 0};

  for (int64_t w = thread_index() / kWarp; w < nmask; w += warps) {
    const int64_t row = mask[w];
    const float *zr = z + row * cols;
    const int32_t label = labels[row];

    /* Maximum, and the smallest column holding it. */
    float best = -INFINITY;
    int64_t arg = cols;
    for (int64_t j = lane; j < cols; j += kWarp)
      if (zr[j] > best) {
        best = zr[j];
        arg = j;
      }
    const float zmax = warp_max(best);
    int64_t first = best == zmax ? arg : cols;
    for (int off = kWarp / 2; off > 0; off /= 2) {
      const int64_t other = __shfl_xor_sync(0xffffffffu, first, off);
      first = other < first ? other : first;
    }
    /* The CPU's scan starts at column 0 and moves only to a larger value:
     * it stays at 0 when z[0] is NaN or nothing exceeds it (-inf only). */
    if (first == cols || isnan(zr[0])) first = 0;

    double sum = 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) sum += exp((double)zr[j] - (double)zmax);
    sum = warp_sum(sum);
    const double lse = (double)zmax + log(sum);

    /* A label outside [0, cols) makes the loss NaN and adds no gradient,
     * as on the CPU, so that bad data cannot pass unnoticed. */
    if (label < 0 || label >= cols) {
      if (lane == 0) mine.bad++;
      continue;
    }
    if (g) {
      float *gr = g + row * cols;
      for (int64_t j = lane; j < cols; j += kWarp) {
        const double onehot = j == label ? 1.0 : 0.0;
        gr[j] = (float)((exp((double)zr[j] - lse) - onehot) * grad_scale);
      }
    }
    if (lane == 0) {
      /* A loss that is not finite or past 2^32 makes the sum NaN. */
      const double row_loss = lse - (double)zr[label];
      if (row_loss < 0x1p32) {
        const long long units = __double2ll_rn(ldexp(row_loss, kLossGridBits)); /* < 2^62 */
        mine.hi += (unsigned long long)(units >> 31);
        mine.lo += (unsigned long long)(units & kLossHalf);
      } else {
        mine.bad++;
      }
      mine.hits += first == label;
    }
  }

  if (lane == 0) block[warp] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    softmax_counters b = {0, 0, 0, 0};
    for (int i = 0; i < kThreads / kWarp; i++) {
      b.hi += block[i].hi;
      b.lo += block[i].lo;
      b.bad += block[i].bad;
      b.hits += block[i].hits;
    }
    if (b.hi) atomicAdd(&total->hi, b.hi);
    if (b.lo) atomicAdd(&total->lo, b.lo);
    if (b.bad) atomicAdd(&total->bad, b.bad);
    if (b.hits) atomicAdd(&total->hits, b.hits);
  }
}

/* One thread: the loss from its units, rounded once to double (hi·2^31 is
 * exact, and the fused add rounds the sum once, as the CPU's conversion of
 * its __int128 does). */
/* Masked binary cross-entropy with logits (multi-label rows): one warp per
 * listed row, its lanes over the tasks.  Each entry's loss, gradient and hit
 * depend on that entry alone; the row's loss is summed in double across the
 * warp and rounded once to the loss grid, then added as in softmax_xent, so
 * that the loss has the same bits for any grid and any split of the rows.
 * Hits and bad entries are counted per lane and summed across the warp. */
__device__ __forceinline__ unsigned long long warp_count(unsigned long long x) {
  for (int off = kWarp / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__global__ void sigmoid_bce_kernel(const float *z, int64_t cols, const int8_t *targets,
                                   const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                                   softmax_counters *total) {
  __shared__ softmax_counters block[kThreads / kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int64_t warps = thread_count() / kWarp;
  softmax_counters mine = {0, 0, 0, 0};
  unsigned long long hits = 0, bad = 0;

  for (int64_t w = thread_index() / kWarp; w < nmask; w += warps) {
    const int64_t row = mask[w];
    const float *zr = z + row * cols;
    const int8_t *yr = targets + row * cols;
    double sum = 0.0;
    for (int64_t t = lane; t < cols; t += kWarp) {
      const int y = yr[t];
      if (y < 0 || y > 1) {
        bad += y != -1; /* only -1 means missing */
        continue;
      }
      const double zt = (double)zr[t];
      sum += (zt > 0.0 ? zt : 0.0) - zt * (double)y + log1p(exp(-fabs(zt)));
      hits += (zt > 0.0) == (y == 1);
      if (g) {
        const double sig = zt >= 0.0 ? 1.0 / (1.0 + exp(-zt)) : exp(zt) / (1.0 + exp(zt));
        g[row * cols + t] = (float)((sig - (double)y) * grad_scale);
      }
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      if (sum < 0x1p32) {
        const long long units = __double2ll_rn(ldexp(sum, kLossGridBits)); /* < 2^62 */
        mine.hi += (unsigned long long)(units >> 31);
        mine.lo += (unsigned long long)(units & kLossHalf);
      } else {
        mine.bad++;
      }
    }
  }
  hits = warp_count(hits);
  bad = warp_count(bad);
  if (lane == 0) {
    mine.hits = hits;
    mine.bad += bad;
    block[warp] = mine;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    softmax_counters b = {0, 0, 0, 0};
    for (int i = 0; i < kThreads / kWarp; i++) {
      b.hi += block[i].hi;
      b.lo += block[i].lo;
      b.bad += block[i].bad;
      b.hits += block[i].hits;
    }
    if (b.hi) atomicAdd(&total->hi, b.hi);
    if (b.lo) atomicAdd(&total->lo, b.lo);
    if (b.bad) atomicAdd(&total->bad, b.bad);
    if (b.hits) atomicAdd(&total->hits, b.hits);
  }
}

__global__ void softmax_finish_kernel(const softmax_counters *total, double *loss_sum,
                                      unsigned long long *correct) {
  const long long lo = (long long)total->lo;
  const long long hi = (long long)total->hi + (lo >> 31);
  const double units = fma((double)hi, 0x1p31, (double)(lo & kLossHalf));
  *loss_sum = total->bad ? NAN : ldexp(units, -kLossGridBits);
  *correct = total->hits;
}
/* What both losses do around their kernel: check the sizes, clear the
 * counters and the gradient, run `kernel` with one warp per masked row,
 * then turn the counters into the host-visible loss and hit count. */
template <class T>
halo_status loss_launch(const char *op,
                        void (*kernel)(const float *, int64_t, const T *, const int32_t *, int64_t,
                                       float, float *, softmax_counters *),
                        const float *z, int64_t rows, int64_t cols, const T *targets,
                        const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                        double *loss_sum, int64_t *correct, void *work, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  softmax_counters *total = (softmax_counters *)work;
  if (rows < 0 || cols <= 0 || nmask < 0 || nmask > rows)
    return halo_cuda_bad_arg(op, "bad sizes (need cols > 0, 0 <= nmask <= rows)");
  if (!loss_sum || !correct || !work)
    return halo_cuda_bad_arg(op, "loss_sum, correct and the workspace must be device pointers");
  HALO_CUDA(cudaMemsetAsync(total, 0, sizeof *total, s));
  if (g && rows > 0) HALO_CUDA(cudaMemsetAsync(g, 0, (size_t)(rows * cols) * sizeof *g, s));
  if (nmask > 0)
    HALO_TRY(
        launch_warps(kernel, nmask, stream, z, cols, targets, mask, nmask, grad_scale, g, total));
  HALO_TRY(halo_cuda_launch(softmax_finish_kernel, 1, 1, s, (const softmax_counters *)total,
                            loss_sum, (unsigned long long *)correct));
done:
  return st;
}

}  // namespace

extern "C" halo_status halo_cuda_softmax_xent(const float *z, int64_t rows, int64_t cols,
                                              const int32_t *labels, const int32_t *mask,
                                              int64_t nmask, float grad_scale, float *g,
                                              double *loss_sum, int64_t *correct, void *work,
                                              void *stream) {
  return loss_launch("halo_cuda_softmax_xent", softmax_xent_kernel, z, rows, cols, labels, mask,
                     nmask, grad_scale, g, loss_sum, correct, work, stream);
}

extern "C" halo_status halo_cuda_sigmoid_bce(const float *z, int64_t rows, int64_t cols,
                                             const int8_t *targets, const int32_t *mask,
                                             int64_t nmask, float grad_scale, float *g,
                                             double *loss_sum, int64_t *correct, void *work,
                                             void *stream) {
  return loss_launch("halo_cuda_sigmoid_bce", sigmoid_bce_kernel, z, rows, cols, targets, mask,
                     nmask, grad_scale, g, loss_sum, correct, work, stream);
}
