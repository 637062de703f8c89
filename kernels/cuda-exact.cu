/* CUDA twins of the deterministic ops: halo_cpu_gemm_rows
 * (kernels/halo-kernels.h) and the exact sums of kernels/halo-exact.h.
 *
 * They give the CPU's bits.  The GEMM rounds every product and every sum to
 * float in ascending k, as halo_cpu_gemm_rows does (__fmul_rn and __fadd_rn:
 * nvcc may not fuse them).  The exact sums round each term a·2^-e·b, exact
 * in double, once to an integer as the CPU does: the dense sums down or up
 * as the row draws (halo_exact_row_up; __double2ll_rd, __double2ll_ru), the
 * CSR sums to the nearest, ties to even (__double2ll_rn); and they add
 * integers, whose sum has no order.  A
 * thread adds at most HALO_EXACT_BLOCK_TERMS terms into one int64 run (each
 * below 2^51, so the run stays below 2^62), then splits the run into its low
 * HALO_EXACT_LIMB_BITS bits and the signed rest and adds each half into the
 * cell's pair with an integer atomic.  Fewer than 2^21 runs per cell keep
 * both halves' sums inside int64; halo_exact_limbs turns a pair into the
 * CPU's limbs.
 */
#include "halo-cuda-launch.cuh"
#include "halo-kernels-cuda.h"

extern "C" {
#include "halo-exact.h"
}

namespace {

constexpr int kTile = 16;     /* the GEMM's tile: kTile × kTile threads */
constexpr int kCellsX = 32;   /* exact sums: output columns per block */
constexpr int kCellsY = 8;    /* exact sums: output rows per block */
constexpr int kTileP = 4;     /* exact_tn: output rows per thread */
constexpr int kTileQ = 2;     /* exact_tn: output columns per thread, kCellsX apart */
constexpr int kThreads = 256; /* max_abs */
constexpr int64_t kMaxBlocks = 65535;
constexpr int64_t kLowMask = ((int64_t)1 << HALO_EXACT_LIMB_BITS) - 1;

unsigned capped(int64_t blocks) {
  return (unsigned)(blocks < 1 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

/* C = A · op(B) in tiles of shared memory.  Each thread owns one element
 * and walks k upwards, one float product and one float sum per step, so
 * the tiling changes which memory a step reads, never its arithmetic. */
template <bool TransB>
__global__ void gemm_rows_kernel(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                 const float *b, int64_t ldb, float *c, int64_t ldc) {
  __shared__ float at[kTile][kTile + 1];
  __shared__ float bt[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = (int64_t)blockIdx.y * kTile + tx;
  for (int64_t r0 = (int64_t)blockIdx.x * kTile; r0 < m; r0 += (int64_t)gridDim.x * kTile) {
    const int64_t row = r0 + ty;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += kTile) {
      const int64_t ka = k0 + tx, kb = k0 + ty;
      at[ty][tx] = row < m && ka < k ? a[row * lda + ka] : 0.0f;
      bt[ty][tx] = kb < k && col < n ? (TransB ? b[col * ldb + kb] : b[kb * ldb + col]) : 0.0f;
      __syncthreads();
      const int steps = k - k0 < kTile ? (int)(k - k0) : kTile;
      for (int q = 0; q < steps; q++) acc = __fadd_rn(acc, __fmul_rn(at[ty][q], bt[q][tx]));
      __syncthreads();
    }
    if (row < m && col < n) c[row * ldc + col] = acc;
  }
}

/* max |x| over a grid-stride loop, a NaN counting as +inf; the maximum of
 * non-negative floats is the maximum of their bits as unsigned integers. */
__global__ void max_abs_kernel(const float *x, int64_t n, unsigned *out) {
  unsigned best = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const float v = fabsf(x[i]);
    const unsigned bits = isnan(v) ? 0x7f800000u : __float_as_uint(v);
    best = bits > best ? bits : best;
  }
  for (int off = 16; off > 0; off /= 2) {
    const unsigned other = __shfl_xor_sync(0xffffffffu, best, off);
    best = other > best ? other : best;
  }
  if (threadIdx.x % 32 == 0 && best != 0) atomicMax(out, best);
}

/* Adds one run into a cell's pair (low bits, signed rest). */
__device__ __forceinline__ void add_run(long long run, long long *pair) {
  atomicAdd((unsigned long long *)&pair[0], (unsigned long long)(run & kLowMask));
  atomicAdd((unsigned long long *)&pair[1], (unsigned long long)(run >> HALO_EXACT_LIMB_BITS));
}

/* Σ_i A[i, p] · B[i, q], in the CPU's register tiles (kernels/cpu-exact.c):
 * a thread owns kTileP × kTileQ cells, rows p0 .. p0 + kTileP of A's
 * columns and the columns q0 + j · kCellsX of B's (so a warp's B loads stay
 * coalesced and its A loads are one broadcast), over a run of rows; each
 * A and B value it loads serves kTileQ or kTileP terms instead of one.  B
 * is scaled by 2^-e, which is exact and gives the same products as the
 * scaled A did.  The runs stride over the grid's z.  A NULL: A[i, 0] = 1,
 * ac = 1. */
/* up[i] = halo_exact_row_up of row i of B (bc values): a thread a row. */
__global__ void row_dirs_kernel(int64_t n, const float *b, int64_t bc, int64_t ldb,
                                unsigned char *up) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    up[i] = (unsigned char)halo_exact_row_up(b + i * ldb, bc);
}

__global__ void exact_tn_kernel(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                                const float *b, int64_t ldb, const unsigned char *dirs,
                                double scale, long long *pairs) {
  const int64_t q0 = (int64_t)blockIdx.x * kCellsX * kTileQ + threadIdx.x;
  const int64_t p0 = ((int64_t)blockIdx.y * kCellsY + threadIdx.y) * kTileP;
  if (p0 >= ac || q0 >= bc) return;
  for (int64_t i0 = (int64_t)blockIdx.z * HALO_EXACT_BLOCK_TERMS; i0 < n;
       i0 += (int64_t)gridDim.z * HALO_EXACT_BLOCK_TERMS) {
    const int64_t i1 = n - i0 < HALO_EXACT_BLOCK_TERMS ? n : i0 + HALO_EXACT_BLOCK_TERMS;
    long long run[kTileP][kTileQ] = {};
    for (int64_t i = i0; i < i1; i++) {
      const bool up = dirs[i] != 0; /* the same load for the whole warp */
      double bq[kTileQ];
#pragma unroll
      for (int j = 0; j < kTileQ; j++) {
        const int64_t q = q0 + j * kCellsX;
        bq[j] = q < bc ? __dmul_rn((double)b[i * ldb + q], scale) : 0.0;
      }
#pragma unroll
      for (int k = 0; k < kTileP; k++) {
        const int64_t p = p0 + k;
        const double ap = p < ac ? (a ? (double)a[i * lda + p] : 1.0) : 0.0;
        if (ap == 0.0) continue;
#pragma unroll
        for (int j = 0; j < kTileQ; j++) {
          const double t = __dmul_rn(ap, bq[j]);
          run[k][j] += up ? __double2ll_ru(t) : __double2ll_rd(t);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kTileP; k++)
#pragma unroll
      for (int j = 0; j < kTileQ; j++) {
        const int64_t p = p0 + k, q = q0 + j * kCellsX;
        if (p < ac && q < bc && run[k][j] != 0) add_run(run[k][j], pairs + 2 * (p * bc + q));
      }
  }
}

/* Σ_{k in row p} values[k] · B[indices[k], q]: a thread per cell, which
 * walks its row in runs and keeps the pair itself. */
__global__ void exact_csr_kernel(const int64_t *indptr, const int32_t *indices, const float *values,
                                 int64_t rows, const float *b, int64_t bc, int64_t ldb,
                                 double scale, long long *pairs) {
  const int64_t q = (int64_t)blockIdx.x * kCellsX + threadIdx.x;
  if (q >= bc) return;
  for (int64_t p = (int64_t)blockIdx.y * kCellsY + threadIdx.y; p < rows;
       p += (int64_t)gridDim.y * kCellsY) {
    long long low = 0, high = 0;
    for (int64_t k0 = indptr[p]; k0 < indptr[p + 1]; k0 += HALO_EXACT_BLOCK_TERMS) {
      const int64_t k1 =
          indptr[p + 1] - k0 < HALO_EXACT_BLOCK_TERMS ? indptr[p + 1] : k0 + HALO_EXACT_BLOCK_TERMS;
      long long run = 0;
      for (int64_t k = k0; k < k1; k++) {
        const double v = __dmul_rn(values ? (double)values[k] : 1.0, scale);
        run += __double2ll_rn(__dmul_rn(v, (double)b[(int64_t)indices[k] * ldb + q]));
      }
      low += run & kLowMask;
      high += run >> HALO_EXACT_LIMB_BITS;
    }
    pairs[2 * (p * bc + q)] = low;
    pairs[2 * (p * bc + q) + 1] = high;
  }
}

}  // namespace

extern "C" halo_status halo_cuda_gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k,
                                           const float *a, int64_t lda, const float *b, int64_t ldb,
                                           float *c, int64_t ldc, void *stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid(capped((m + kTile - 1) / kTile), (unsigned)((n + kTile - 1) / kTile));
  if (m < 0 || n < 0 || k < 0) return halo_cuda_bad_arg("halo_cuda_gemm_rows", "negative size");
  if ((n + kTile - 1) / kTile > kMaxBlocks)
    return halo_cuda_bad_arg("halo_cuda_gemm_rows", "more than 2^20 output columns");
  if (m == 0 || n == 0) return HALO_OK;
  return halo_cuda_launch(trans_b ? gemm_rows_kernel<true> : gemm_rows_kernel<false>, grid, block,
                          (cudaStream_t)stream, m, n, k, a, lda, b, ldb, c, ldc);
}

extern "C" halo_status halo_cuda_max_abs(const float *x, int64_t n, unsigned *out, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  if (n < 0) return halo_cuda_bad_arg("halo_cuda_max_abs", "negative size");
  HALO_CUDA(cudaMemsetAsync(out, 0, sizeof *out, s));
  if (n == 0) goto done;
  HALO_TRY(halo_cuda_launch(max_abs_kernel, capped((n + kThreads - 1) / kThreads), kThreads, s, x,
                            n, out));
done:
  return st;
}

extern "C" halo_status halo_cuda_exact_row_dirs(int64_t n, const float *b, int64_t bc,
                                                int64_t ldb, unsigned char *up, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  if (n < 0 || bc < 0) return halo_cuda_bad_arg("halo_cuda_exact_row_dirs", "negative size");
  if (n == 0) return HALO_OK;
  HALO_TRY(halo_cuda_launch(row_dirs_kernel, capped((n + kThreads - 1) / kThreads), kThreads, s, n,
                            b, bc, ldb, up));
done:
  return st;
}

extern "C" halo_status halo_cuda_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a,
                                          int64_t lda, const float *b, int64_t ldb,
                                          const unsigned char *up, int e, int64_t *pairs,
                                          void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t runs = (n + HALO_EXACT_BLOCK_TERMS - 1) / HALO_EXACT_BLOCK_TERMS;
  const int64_t wide = kCellsX * kTileQ, tall = kCellsY * kTileP; /* cells of a block */
  const dim3 grid((unsigned)((bc + wide - 1) / wide), (unsigned)((ac + tall - 1) / tall),
                  capped(runs));
  if (n < 0 || ac < 0 || bc < 0 || (!a && ac != 1))
    return halo_cuda_bad_arg("halo_cuda_exact_tn",
                             "bad sizes (need n, ac, bc >= 0, and ac = 1 without A)");
  if ((bc + wide - 1) / wide > INT32_MAX || (ac + tall - 1) / tall > kMaxBlocks)
    return halo_cuda_bad_arg("halo_cuda_exact_tn", "more cells than one launch covers");
  if (ac == 0 || bc == 0) return HALO_OK;
  HALO_CUDA(cudaMemsetAsync(pairs, 0, (size_t)(2 * ac * bc) * sizeof *pairs, s));
  if (n == 0) goto done;
  HALO_TRY(halo_cuda_launch(exact_tn_kernel, grid, dim3(kCellsX, kCellsY), s, n, ac, bc, a, lda, b,
                            ldb, up, ldexp(1.0, -e), (long long *)pairs));
done:
  return st;
}

extern "C" halo_status halo_cuda_exact_csr(const int64_t *indptr, const int32_t *indices,
                                           const float *values, int64_t rows, const float *b,
                                           int64_t bc, int64_t ldb, int e, int64_t *pairs,
                                           void *stream) {
  const dim3 grid((unsigned)((bc + kCellsX - 1) / kCellsX), capped((rows + kCellsY - 1) / kCellsY));
  if (rows < 0 || bc < 0) return halo_cuda_bad_arg("halo_cuda_exact_csr", "negative size");
  if ((bc + kCellsX - 1) / kCellsX > INT32_MAX)
    return halo_cuda_bad_arg("halo_cuda_exact_csr", "more columns than one launch covers");
  if (rows == 0 || bc == 0) return HALO_OK;
  return halo_cuda_launch(exact_csr_kernel, grid, dim3(kCellsX, kCellsY), (cudaStream_t)stream,
                          indptr, indices, values, rows, b, bc, ldb, ldexp(1.0, -e),
                          (long long *)pairs);
}
