/* CUDA twins of the CPU's dense operations (kernels/halo-kernels.h).
 *
 * One translation unit for all of them keeps nvcc's share of the build
 * small.  Element-wise kernels use grid-stride loops over int64 indices, so
 * any size runs with a bounded grid.  Reductions over rows give one warp to
 * each row (rows are short: a layer's width) and combine partial results in
 * a fixed order where the CPU's answer is deterministic.
 *
 * Where an op must match the CPU bit for bit (dropout, bias, ReLU, AXPY,
 * the ELU backward, the elementwise product, pack/unpack), the kernel performs the very same float
 * operations in the same order as the CPU code, so no rounding can differ.
 */
#include <math.h>

#include "halo-cuda-check.cuh"
#include "halo-gat.h"
#include "halo-kernels-cuda.h"
#include "halo-rng.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
/* Grid-stride kernels never launch more blocks than this; 2^16 blocks of 256
 * threads keep every multiprocessor of any current GPU busy. */
constexpr int64_t kMaxBlocks = 65536;

unsigned blocks_for(int64_t work, int64_t per_block) {
  int64_t b = (work + per_block - 1) / per_block;
  if (b < 1) b = 1;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return (unsigned)b;
}

__device__ __forceinline__ int64_t thread_index() {
  return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t thread_count() { return (int64_t)gridDim.x * blockDim.x; }

/* One log line for an argument the caller got wrong. */
halo_status bad_arg(const char *op, const char *what) {
  halo_log_error("%s: %s", op, what);
  return HALO_ERR_ARG;
}

/* ---- element-wise ------------------------------------------------------- */

__global__ void bias_add_kernel(float *y, int64_t n, int64_t cols, const float *bias) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) y[e] += bias[e % cols];
}

__global__ void relu_kernel(float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) y[e] = y[e] > 0.0f ? y[e] : 0.0f;
}

__global__ void relu_backward_kernel(float *g, const float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    if (y[e] <= 0.0f) g[e] = 0.0f;
}

/* The CPU's `y += a * x` with a = alpha + (p ? *p : 0), each operation
 * rounded once (the _rn intrinsics keep nvcc from fusing them into an FMA,
 * which the C build never does).  Every thread reads *p itself, so a scale
 * in device memory (GIN's ε) needs no copy to the host. */
__global__ void axpy_kernel(float *y, const float *x, int64_t n, float alpha, const float *p) {
  const float a = __fadd_rn(alpha, p ? *p : 0.0f);
  for (int64_t e = thread_index(); e < n; e += thread_count())
    y[e] = __fadd_rn(y[e], __fmul_rn(a, x[e]));
}

/* CUDA's expm1f is within 1 ulp, as glibc's is: the two may round apart. */
__global__ void elu_kernel(float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    y[e] = y[e] > 0.0f ? y[e] : expm1f(y[e]);
}

__global__ void elu_backward_kernel(float *g, const float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    g[e] = __fmul_rn(g[e], y[e] > 0.0f ? 1.0f : __fadd_rn(y[e], 1.0f));
}

/* OUT may be A or B: each thread reads its element before writing it. */
__global__ void mul_kernel(float *out, const float *a, const float *b, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) out[e] = __fmul_rn(a[e], b[e]);
}

__global__ void dropout_kernel(float *y, int64_t n, int64_t cols, const int64_t *global_id,
                               uint64_t key, float p, float scale) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t i = e / cols;
    const int64_t j = e - i * cols;
    y[e] = halo_dropout_apply(y[e], key, (uint64_t)global_id[i], (uint64_t)j, p, scale);
  }
}

__global__ void dropout_to_kernel(float *dst, const float *src, int64_t n, int64_t cols,
                                  const int64_t *global_id, uint64_t key, float p, float scale) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t i = e / cols;
    const int64_t j = e - i * cols;
    dst[e] = halo_dropout_apply(src[e], key, (uint64_t)global_id[i], (uint64_t)j, p, scale);
  }
}

/* One warp per row, the lanes over its nonzeros. */
__global__ void csr_dropout_kernel(const int64_t *indptr, const int32_t *indices,
                                   const float *values, int64_t rows, int transposed,
                                   const int64_t *global_id, uint64_t key, float p, float scale,
                                   float *out) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    for (int64_t k = indptr[r] + lane; k < indptr[r + 1]; k += kWarp) {
      const uint64_t node = transposed ? (uint64_t)global_id[indices[k]] : (uint64_t)global_id[r];
      const uint64_t col = transposed ? (uint64_t)r : (uint64_t)indices[k];
      out[k] = halo_dropout_apply(values ? values[k] : 1.0f, key, node, col, p, scale);
    }
  }
}

/* The CPU's Adam, operation for operation (kernels/cpu-adam.c).  The _rn
 * intrinsics forbid nvcc to contract a multiply and an add into one FMA,
 * which the C build never does either, so every rounding is the CPU's and
 * the result is bit-identical; sqrtf and '/' are IEEE-rounded in CUDA
 * unless fast math is asked for, which this build does not do. */
__global__ void adam_kernel(float *w, const float *g, float *m, float *v, int64_t n, float b1,
                            float b2, float one_minus_b1, float one_minus_b2, float eps, float wd,
                            float step, float bias2_sqrt) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const float gi = __fadd_rn(g[e], __fmul_rn(wd, w[e]));
    const float mi = __fadd_rn(__fmul_rn(b1, m[e]), __fmul_rn(one_minus_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(b2, v[e]), __fmul_rn(__fmul_rn(one_minus_b2, gi), gi));
    m[e] = mi;
    v[e] = vi;
    const float denom = __fadd_rn(__fdiv_rn(sqrtf(vi), bias2_sqrt), eps);
    w[e] = __fsub_rn(w[e], __fdiv_rn(__fmul_rn(step, mi), denom));
  }
}

__global__ void pack_kernel(float *dst, const float *src, int64_t cols, const int32_t *idx,
                            int64_t n) {
  for (int64_t e = thread_index(); e < n * cols; e += thread_count()) {
    const int64_t i = e / cols;
    dst[e] = src[(int64_t)idx[i] * cols + (e - i * cols)];
  }
}

__global__ void unpack_kernel(float *dst, const float *src, int64_t cols, const int32_t *idx,
                              int64_t n) {
  for (int64_t e = thread_index(); e < n * cols; e += thread_count()) {
    const int64_t i = e / cols;
    dst[(int64_t)idx[i] * cols + (e - i * cols)] = src[e];
  }
}

/* ---- reductions --------------------------------------------------------- */

__device__ __forceinline__ double warp_sum(double x) {
  for (int off = kWarp / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int off = kWarp / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

/* Column sums, without a workspace: a block of 32×32 threads owns 32
 * adjacent columns, so each warp reads 128 contiguous bytes of a row; the 32
 * row lanes stride down the rows and are then combined through shared
 * memory in a fixed order.  Only cols/32 blocks run, so this is for small
 * matrices (and callers without a workspace). */
constexpr int kColsumRows = 32;

__global__ void colsum_kernel(const float *g, int64_t rows, int64_t cols, float *out) {
  __shared__ double part[kColsumRows][kWarp + 1];
  const int64_t col = (int64_t)blockIdx.x * kWarp + threadIdx.x;
  double acc = 0.0;
  if (col < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kColsumRows) acc += g[r * cols + col];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    double sum = 0.0;
    for (int r = 0; r < kColsumRows; r++) sum += part[r][threadIdx.x];
    out[col] = (float)sum;
  }
}

/* Column sums with a workspace, in two passes that fill the GPU: the rows
 * are cut into `chunks` equal runs (a number that depends on `rows` alone,
 * so the order of the sums never depends on the device), each block sums 32
 * columns of one run into work[chunk][col], and one thread per column then
 * adds the runs in order.  Columns go in tiles of kColsumTile, so the
 * workspace has a fixed size. */
constexpr int kColsumPartRows = 8;        /* row lanes of a pass-1 block */
constexpr int64_t kColsumChunks = 128;    /* at most, per tile */
constexpr int64_t kColsumChunkRows = 512; /* at least, per chunk */
constexpr int64_t kColsumTile = 1024;     /* columns per tile */
static_assert(HALO_CUDA_COLSUM_WORK_BYTES == kColsumChunks * kColsumTile * sizeof(double),
              "HALO_CUDA_COLSUM_WORK_BYTES must match the kernel's tiling");

__global__ void colsum_part_kernel(const float *g, int64_t rows, int64_t cols, int64_t c0,
                                   int64_t width, int64_t chunk_rows, double *work) {
  __shared__ double part[kColsumPartRows][kWarp + 1];
  const int64_t j = (int64_t)blockIdx.x * kWarp + threadIdx.x; /* column within the tile */
  const int64_t r0 = (int64_t)blockIdx.y * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  double acc = 0.0;
  if (j < width) {
    const float *gc = g + c0 + j;
#pragma unroll 4
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColsumPartRows) acc += gc[r * cols];
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < width) {
    double sum = 0.0;
    for (int y = 0; y < kColsumPartRows; y++) sum += part[y][threadIdx.x];
    work[(int64_t)blockIdx.y * width + j] = sum;
  }
}

__global__ void colsum_finish_kernel(const double *work, int64_t chunks, int64_t width,
                                     float *out) {
  const int64_t j = thread_index();
  if (j >= width) return;
  double sum = 0.0;
  for (int64_t c = 0; c < chunks; c++) sum += work[c * width + j];
  out[j] = (float)sum;
}

/* One warp per row: sum in double, then divide when the sum is not zero. */
__global__ void row_normalize_kernel(float *x, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    float *xr = x + r * cols;
    double sum = 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) sum += xr[j];
    sum = warp_sum(sum);
    /* Divided in double and rounded once, as on the CPU. */
    if (sum != 0.0)
      for (int64_t j = lane; j < cols; j += kWarp) xr[j] = (float)((double)xr[j] / sum);
  }
}

/* halo_cpu_l2_normalize's clamp (torch's F.normalize eps): the smallest
 * norm a row is divided by. */
constexpr float kL2Eps = 1e-12f;

/* One warp per row: the sum of squares in double (each square of a float is
 * exact in double, so a fused multiply-add rounds as the CPU's multiply and
 * add do), the norm rounded to float and clamped as on the CPU, then the
 * CPU's float division.  Only the order of the sum differs from the CPU's
 * ascending one. */
__global__ void l2_normalize_kernel(float *y, int64_t rows, int64_t cols, float *norm) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    float *yr = y + r * cols;
    double sq = 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) sq += (double)yr[j] * yr[j];
    sq = warp_sum(sq);
    const float nr = fmaxf((float)sqrt(sq), kL2Eps);
    if (lane == 0) norm[r] = nr;
    for (int64_t j = lane; j < cols; j += kWarp) yr[j] = __fdiv_rn(yr[j], nr);
  }
}

/* One warp per row: the dot product Y·G in double (exact products, as
 * above) unless the norm was clamped, then the CPU's float operations.
 * Each lane reads and writes only its own columns, so no lane can see
 * another's new G. */
__global__ void l2_normalize_backward_kernel(float *g, const float *y, const float *norm,
                                             int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    float *gr = g + r * cols;
    const float *yr = y + r * cols;
    const float nr = norm[r];
    double dot = 0.0;
    if (nr > kL2Eps) { /* the same for the whole warp */
      for (int64_t j = lane; j < cols; j += kWarp) dot += (double)yr[j] * gr[j];
      dot = warp_sum(dot);
    }
    const float d = (float)dot;
    for (int64_t j = lane; j < cols; j += kWarp)
      gr[j] = __fdiv_rn(__fsub_rn(gr[j], __fmul_rn(yr[j], d)), nr);
  }
}

/* halo_cpu_layernorm's eps (torch.nn.LayerNorm's default). */
constexpr double kLnEps = 1e-5;

/* One warp per row: the mean and the biased variance in double, then the
 * CPU's operations on each element (the _rn intrinsics, so nvcc fuses none
 * of them).  Only the order of the two row sums differs from the CPU's
 * ascending one; a row of equal values sums exactly in any order, so its
 * mean is exact, its variance 0, its XHAT 0 and its Y beta, bit for bit.
 * Each lane reads and writes only its own columns. */
__global__ void layernorm_kernel(float *y, int64_t rows, int64_t cols, const float *gamma,
                                 const float *beta, float *xhat, float *rstd) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    float *yr = y + r * cols, *xr = xhat + r * cols;
    double sum = 0.0, sq = 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) sum += yr[j];
    sum = warp_sum(sum);
    const double mean = cols ? sum / (double)cols : 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) {
      const double c = __dsub_rn((double)yr[j], mean);
      sq = __dadd_rn(sq, __dmul_rn(c, c));
    }
    sq = warp_sum(sq);
    const double rs = 1.0 / sqrt((cols ? sq / (double)cols : 0.0) + kLnEps);
    if (lane == 0) rstd[r] = (float)rs;
    for (int64_t j = lane; j < cols; j += kWarp) {
      const float xv = (float)__dmul_rn(__dsub_rn((double)yr[j], mean), rs);
      xr[j] = xv;
      yr[j] = __fadd_rn(__fmul_rn(xv, gamma[j]), beta[j]);
    }
  }
}

/* One warp per row: the sums of d = G·gamma and of d·XHAT in double (each
 * d, a product of two floats, is exact in double), then the CPU's double
 * operations on each element, rounded once to float. */
__global__ void layernorm_backward_kernel(float *g, const float *xhat, const float *rstd,
                                          const float *gamma, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = thread_count() / kWarp;
  for (int64_t r = thread_index() / kWarp; r < rows; r += warps) {
    float *gr = g + r * cols;
    const float *xr = xhat + r * cols;
    double sd = 0.0, sdx = 0.0;
    for (int64_t j = lane; j < cols; j += kWarp) {
      const double d = __dmul_rn((double)gr[j], (double)gamma[j]);
      sd = __dadd_rn(sd, d);
      sdx = __dadd_rn(sdx, __dmul_rn(d, (double)xr[j]));
    }
    sd = warp_sum(sd);
    sdx = warp_sum(sdx);
    const double md = sd / (double)cols, mdx = sdx / (double)cols, rs = (double)rstd[r];
    for (int64_t j = lane; j < cols; j += kWarp) {
      const double d = __dmul_rn((double)gr[j], (double)gamma[j]);
      gr[j] = (float)__dmul_rn(rs, __dsub_rn(__dsub_rn(d, md), __dmul_rn((double)xr[j], mdx)));
    }
  }
}

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
    halo_gat_attend_row(&g, &a, i, out, z, node);
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
    halo_gat_backward_row(&g, &a, node, a_src, a_dst, rows, j, dt, att_grad);
}

/* What every GAT entry point checks first. */
halo_status gat_check(const char *op, const halo_gat_layer *g, int64_t rows) {
  if (rows < 0) return bad_arg(op, "negative size");
  if (g->heads < 1 || g->heads > HALO_GAT_MAX_HEADS || g->f < 1)
    return bad_arg(op, "heads must be in [1, HALO_GAT_MAX_HEADS] and their width >= 1");
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

/* ---- the C entry points --------------------------------------------------- */

extern "C" halo_status halo_cuda_bias_add(float *y, int64_t rows, int64_t cols, const float *bias,
                                          void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_bias_add", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  bias_add_kernel<<<blocks_for(rows * cols, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      y, rows * cols, cols, bias);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_colsum(const float *g, int64_t rows, int64_t cols,
                                        float *grad_bias, void *work, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t chunks = 0, chunk_rows = 0;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_colsum", "negative size");
  if (cols == 0) return HALO_OK;
  /* rows == 0 still runs: the sums are then zero, and must be written. */
  if (!work) {
    colsum_kernel<<<(unsigned)((cols + kWarp - 1) / kWarp), dim3(kWarp, kColsumRows), 0, s>>>(
        g, rows, cols, grad_bias);
    HALO_CUDA_LAUNCHED();
    goto done;
  }
  chunks = (rows + kColsumChunkRows - 1) / kColsumChunkRows;
  chunks = chunks < 1 ? 1 : chunks > kColsumChunks ? kColsumChunks : chunks;
  chunk_rows = (rows + chunks - 1) / chunks;
  for (int64_t c0 = 0; c0 < cols; c0 += kColsumTile) {
    const int64_t width = cols - c0 < kColsumTile ? cols - c0 : kColsumTile;
    const dim3 grid((unsigned)((width + kWarp - 1) / kWarp), (unsigned)chunks);
    colsum_part_kernel<<<grid, dim3(kWarp, kColsumPartRows), 0, s>>>(g, rows, cols, c0, width,
                                                                     chunk_rows, (double *)work);
    HALO_CUDA_LAUNCHED();
    colsum_finish_kernel<<<blocks_for(width, kThreads), kThreads, 0, s>>>(
        (const double *)work, chunks, width, grad_bias + c0);
    HALO_CUDA_LAUNCHED();
  }
done:
  return st;
}

extern "C" halo_status halo_cuda_relu(float *y, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_relu", "negative size");
  if (n == 0) return HALO_OK;
  relu_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(y, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_relu_backward(float *g, const float *y, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_relu_backward", "negative size");
  if (n == 0) return HALO_OK;
  relu_backward_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(g, y, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_axpy(float *y, const float *x, int64_t n, float alpha,
                                      const float *p, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_axpy", "negative size");
  if (n == 0) return HALO_OK;
  axpy_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(y, x, n, alpha, p);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_elu(float *y, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_elu", "negative size");
  if (n == 0) return HALO_OK;
  elu_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(y, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_elu_backward(float *g, const float *y, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_elu_backward", "negative size");
  if (n == 0) return HALO_OK;
  elu_backward_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(g, y, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_dropout(float *y, int64_t rows, int64_t cols,
                                         const int64_t *global_id, uint64_t key, float p,
                                         void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_dropout", "negative size");
  /* As kernels/cpu-dropout.c: p <= 0 keeps everything, p >= 1 nothing, and
   * the scale is computed once, in float, by the same halo-rng.h helper. */
  if (rows == 0 || cols == 0 || p <= 0.0f) return HALO_OK;
  dropout_kernel<<<blocks_for(rows * cols, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      y, rows * cols, cols, global_id, key, p, halo_dropout_scale(p));
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_dropout_to(float *dst, const float *src, int64_t rows,
                                            int64_t cols, const int64_t *global_id, uint64_t key,
                                            float p, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_dropout_to", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (p <= 0.0f) {
    /* As kernels/cpu-dropout.c: a copy. */
    HALO_CUDA(cudaMemcpyAsync(dst, src, (size_t)(rows * cols) * sizeof *dst,
                              cudaMemcpyDeviceToDevice, s));
    goto done;
  }
  dropout_to_kernel<<<blocks_for(rows * cols, kThreads), kThreads, 0, s>>>(
      dst, src, rows * cols, cols, global_id, key, p, halo_dropout_scale(p));
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_csr_dropout(const int64_t *indptr, const int32_t *indices,
                                             const float *values, int64_t rows, int transposed,
                                             const int64_t *global_id, uint64_t key, float p,
                                             float *out, void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0) return bad_arg("halo_cuda_csr_dropout", "negative size");
  if (rows == 0) return HALO_OK;
  csr_dropout_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0, (cudaStream_t)stream>>>(
      indptr, indices, values, rows, transposed, global_id, key, p, halo_dropout_scale(p), out);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_softmax_xent(const float *z, int64_t rows, int64_t cols,
                                              const int32_t *labels, const int32_t *mask,
                                              int64_t nmask, float grad_scale, float *g,
                                              double *loss_sum, int64_t *correct, void *work,
                                              void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  softmax_counters *total = (softmax_counters *)work;
  if (rows < 0 || cols <= 0 || nmask < 0 || nmask > rows)
    return bad_arg("halo_cuda_softmax_xent", "bad sizes (need cols > 0, 0 <= nmask <= rows)");
  if (!loss_sum || !correct || !work)
    return bad_arg("halo_cuda_softmax_xent",
                   "loss_sum, correct and the workspace must be device pointers");
  HALO_CUDA(cudaMemsetAsync(total, 0, sizeof *total, s));
  if (g && rows > 0) HALO_CUDA(cudaMemsetAsync(g, 0, (size_t)(rows * cols) * sizeof *g, s));
  if (nmask > 0) {
    softmax_xent_kernel<<<blocks_for(nmask, kThreads / kWarp), kThreads, 0, s>>>(
        z, cols, labels, mask, nmask, grad_scale, g, total);
    HALO_CUDA_LAUNCHED();
  }
  softmax_finish_kernel<<<1, 1, 0, s>>>(total, loss_sum, (unsigned long long *)correct);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_sigmoid_bce(const float *z, int64_t rows, int64_t cols,
                                             const int8_t *targets, const int32_t *mask,
                                             int64_t nmask, float grad_scale, float *g,
                                             double *loss_sum, int64_t *correct, void *work,
                                             void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  softmax_counters *total = (softmax_counters *)work;
  if (rows < 0 || cols <= 0 || nmask < 0 || nmask > rows)
    return bad_arg("halo_cuda_sigmoid_bce", "bad sizes (need cols > 0, 0 <= nmask <= rows)");
  if (!loss_sum || !correct || !work)
    return bad_arg("halo_cuda_sigmoid_bce",
                   "loss_sum, correct and the workspace must be device pointers");
  HALO_CUDA(cudaMemsetAsync(total, 0, sizeof *total, s));
  if (g && rows > 0) HALO_CUDA(cudaMemsetAsync(g, 0, (size_t)(rows * cols) * sizeof *g, s));
  if (nmask > 0) {
    sigmoid_bce_kernel<<<blocks_for(nmask, kThreads / kWarp), kThreads, 0, s>>>(
        z, cols, targets, mask, nmask, grad_scale, g, total);
    HALO_CUDA_LAUNCHED();
  }
  softmax_finish_kernel<<<1, 1, 0, s>>>(total, loss_sum, (unsigned long long *)correct);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_adam(float *w, const float *g, float *m, float *v, int64_t n,
                                      float lr, float b1, float b2, float eps, float wd, int64_t t,
                                      void *stream) {
  halo_status st = HALO_OK;
  if (n < 0 || t < 1) return bad_arg("halo_cuda_adam", "need n >= 0 and step t >= 1");
  if (n == 0) return HALO_OK;
  {
    /* The scalars exactly as kernels/cpu-adam.c computes them, in double on
     * the host. */
    const double bias1 = 1.0 - pow((double)b1, (double)t);
    const double bias2 = 1.0 - pow((double)b2, (double)t);
    const float step = (float)((double)lr / bias1);
    const float bias2_sqrt = (float)sqrt(bias2);
    adam_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
        w, g, m, v, n, b1, b2, 1.0f - b1, 1.0f - b2, eps, wd, step, bias2_sqrt);
  }
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_pack(float *dst, const float *src, int64_t cols,
                                      const int32_t *idx, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0 || cols < 0) return bad_arg("halo_cuda_pack", "negative size");
  if (n == 0 || cols == 0) return HALO_OK;
  pack_kernel<<<blocks_for(n * cols, kThreads), kThreads, 0, (cudaStream_t)stream>>>(dst, src, cols,
                                                                                     idx, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_unpack(float *dst, const float *src, int64_t cols,
                                        const int32_t *idx, int64_t n, void *stream) {
  halo_status st = HALO_OK;
  if (n < 0 || cols < 0) return bad_arg("halo_cuda_unpack", "negative size");
  if (n == 0 || cols == 0) return HALO_OK;
  unpack_kernel<<<blocks_for(n * cols, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      dst, src, cols, idx, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_row_normalize(float *x, int64_t rows, int64_t cols, void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_row_normalize", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  row_normalize_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0, (cudaStream_t)stream>>>(
      x, rows, cols);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_l2_normalize(float *y, int64_t rows, int64_t cols, float *norm,
                                              void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_l2_normalize", "negative size");
  if (rows == 0) return HALO_OK;
  if (!norm) return bad_arg("halo_cuda_l2_normalize", "norm must be a device pointer");
  /* cols == 0 still runs: each norm is then the clamp, and must be written. */
  l2_normalize_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0, (cudaStream_t)stream>>>(
      y, rows, cols, norm);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_l2_normalize_backward(float *g, const float *y, const float *norm,
                                                       int64_t rows, int64_t cols, void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_l2_normalize_backward", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (!norm) return bad_arg("halo_cuda_l2_normalize_backward", "norm must be a device pointer");
  l2_normalize_backward_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0,
                                 (cudaStream_t)stream>>>(g, y, norm, rows, cols);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_layernorm(float *y, int64_t rows, int64_t cols, const float *gamma,
                                           const float *beta, float *xhat, float *rstd,
                                           void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_layernorm", "negative size");
  if (rows == 0) return HALO_OK;
  if (!rstd) return bad_arg("halo_cuda_layernorm", "rstd must be a device pointer");
  if (cols > 0 && !xhat) return bad_arg("halo_cuda_layernorm", "xhat must be a device pointer");
  /* cols == 0 still runs: each rstd is then 1/sqrt(eps), and must be written. */
  layernorm_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0, (cudaStream_t)stream>>>(
      y, rows, cols, gamma, beta, xhat, rstd);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_layernorm_backward(float *g, const float *xhat, const float *rstd,
                                                    const float *gamma, int64_t rows, int64_t cols,
                                                    void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return bad_arg("halo_cuda_layernorm_backward", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (!rstd) return bad_arg("halo_cuda_layernorm_backward", "rstd must be a device pointer");
  layernorm_backward_kernel<<<blocks_for(rows, kThreads / kWarp), kThreads, 0,
                              (cudaStream_t)stream>>>(g, xhat, rstd, gamma, rows, cols);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_mul(float *out, const float *a, const float *b, int64_t n,
                                     void *stream) {
  halo_status st = HALO_OK;
  if (n < 0) return bad_arg("halo_cuda_mul", "negative size");
  if (n == 0) return HALO_OK;
  mul_kernel<<<blocks_for(n, kThreads), kThreads, 0, (cudaStream_t)stream>>>(out, a, b, n);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows,
                                            const float *a_src, const float *a_dst, float *s,
                                            void *stream) {
  halo_status st = gat_check("halo_cuda_gat_scores", g, rows);
  if (st != HALO_OK || rows == 0) return st;
  gat_scores_kernel<<<blocks_for(rows, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      *g, t, rows, a_src, a_dst, s);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_gat_attend(const halo_gat_layer *g, const halo_csr *adj,
                                            const int64_t *global_id, const float *t,
                                            const float *s, float *out, float *z, float *node,
                                            void *stream) {
  halo_status st = gat_check("halo_cuda_gat_attend", g, adj->rows);
  if (st != HALO_OK || adj->rows == 0) return st;
  gat_attend_kernel<<<blocks_for(adj->rows, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      *g, gat_rows(adj, global_id, t, s), adj->rows, out, z, node);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_gat_node_terms(const halo_gat_layer *g, const float *dz,
                                                const float *out, int64_t rows, float *node,
                                                void *stream) {
  halo_status st = gat_check("halo_cuda_gat_node_terms", g, rows);
  if (st != HALO_OK || rows == 0) return st;
  gat_node_terms_kernel<<<blocks_for(rows, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      *g, dz, out, rows, node);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}

extern "C" halo_status halo_cuda_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                                     const int64_t *global_id, const float *t,
                                                     const float *s, const float *node,
                                                     const float *a_src, const float *a_dst,
                                                     float *dt, float *att_grad, void *stream) {
  halo_status st = gat_check("halo_cuda_gat_attend_backward", g, adj->rows);
  if (st != HALO_OK || adj->rows == 0) return st;
  gat_backward_kernel<<<blocks_for(adj->rows, kThreads), kThreads, 0, (cudaStream_t)stream>>>(
      *g, gat_rows(adj, global_id, t, s), adj->rows, node, a_src, a_dst, dt, att_grad);
  HALO_CUDA_LAUNCHED();
done:
  return st;
}
