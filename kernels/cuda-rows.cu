/* CUDA twins of the CPU's row and column reductions (kernels/halo-kernels.h):
 * the column sums (a bias's gradient), the row normalisation of features,
 * GraphSAGE's L2 normalisation, LayerNorm and BatchNorm, with their backwards.  Rows
 * are a layer's width, short: one warp to each (cuda-kernels.cuh).
 */
#include "cuda-kernels.cuh"

namespace {

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

/* BatchNorm's column sums (halo_cuda_bn_sums): colsum_part_kernel's
 * tiling with two sums a column, Σ x and Σ x·y, so a tile is half as wide
 * (the same workspace holds both).  work[chunk][0, width) holds a run's Σ x,
 * work[chunk][width, 2·width) its Σ x·y. */
constexpr int64_t kBnTile = kColsumTile / 2;

__global__ void bn_sums_part_kernel(const float *x, const float *y, int64_t rows, int64_t cols,
                                    int64_t c0, int64_t width, int64_t chunk_rows, double *work) {
  __shared__ double part[2][kColsumPartRows][kWarp + 1];
  const int64_t j = (int64_t)blockIdx.x * kWarp + threadIdx.x; /* column within the tile */
  const int64_t r0 = (int64_t)blockIdx.y * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  double sx = 0.0, sxy = 0.0;
  if (j < width) {
    const float *xc = x + c0 + j, *yc = (y ? y : x) + c0 + j;
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColsumPartRows) {
      const double v = xc[r * cols];
      sx += v;
      /* A product of two floats is exact in double: fused or not, the
       * same bits. */
      sxy += v * (double)yc[r * cols];
    }
  }
  part[0][threadIdx.y][threadIdx.x] = sx;
  part[1][threadIdx.y][threadIdx.x] = sxy;
  __syncthreads();
  if (threadIdx.y == 0 && j < width) {
    double a = 0.0, b = 0.0;
    for (int k = 0; k < kColsumPartRows; k++) {
      a += part[0][k][threadIdx.x];
      b += part[1][k][threadIdx.x];
    }
    double *w = work + (int64_t)blockIdx.y * 2 * width;
    w[j] = a;
    w[width + j] = b;
  }
}

__global__ void bn_sums_finish_kernel(const double *work, int64_t chunks, int64_t width,
                                      double *sx, double *sxy) {
  const int64_t j = thread_index();
  if (j >= width) return;
  double a = 0.0, b = 0.0;
  for (int64_t c = 0; c < chunks; c++) {
    a += work[c * 2 * width + j];
    b += work[c * 2 * width + width + j];
  }
  sx[j] = a;
  sxy[j] = b;
}

/* halo_cpu_batchnorm's operations one by one, rounded as the CPU rounds
 * them (no fused multiply-add). */
__global__ void batchnorm_kernel(float *y, int64_t rows, int64_t cols, const double *shift,
                                 const double *scale, const float *gamma, const float *beta,
                                 float *xhat) {
  const int64_t n = rows * cols;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t c = i % cols;
    const double h = __dmul_rn(__dsub_rn((double)y[i], shift[c]), scale[c]);
    if (xhat) xhat[i] = (float)h;
    y[i] = (float)__dadd_rn(__dmul_rn((double)gamma[c], h), (double)beta[c]);
  }
}

__global__ void batchnorm_backward_kernel(float *g, const float *xhat, int64_t rows, int64_t cols,
                                          const float *gamma, const double *scale,
                                          const double *a, const double *b) {
  const int64_t n = rows * cols;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t c = i % cols;
    const double d = __dsub_rn(__dsub_rn((double)g[i], a[c]), __dmul_rn((double)xhat[i], b[c]));
    g[i] = (float)__dmul_rn(__dmul_rn((double)gamma[c], scale[c]), d);
  }
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

}  // namespace

extern "C" halo_status halo_cuda_colsum(const float *g, int64_t rows, int64_t cols,
                                        float *grad_bias, void *work, void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t chunks = 0, chunk_rows = 0;
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_colsum", "negative size");
  if (cols == 0) return HALO_OK;
  /* rows == 0 still runs: the sums are then zero, and must be written. */
  if (!work)
    return halo_cuda_launch(colsum_kernel, (unsigned)((cols + kWarp - 1) / kWarp),
                            dim3(kWarp, kColsumRows), s, g, rows, cols, grad_bias);
  chunks = (rows + kColsumChunkRows - 1) / kColsumChunkRows;
  chunks = chunks < 1 ? 1 : chunks > kColsumChunks ? kColsumChunks : chunks;
  chunk_rows = (rows + chunks - 1) / chunks;
  for (int64_t c0 = 0; c0 < cols; c0 += kColsumTile) {
    const int64_t width = cols - c0 < kColsumTile ? cols - c0 : kColsumTile;
    const dim3 grid((unsigned)((width + kWarp - 1) / kWarp), (unsigned)chunks);
    HALO_TRY(halo_cuda_launch(colsum_part_kernel, grid, dim3(kWarp, kColsumPartRows), s, g, rows,
                              cols, c0, width, chunk_rows, (double *)work));
    HALO_TRY(halo_cuda_launch(colsum_finish_kernel, halo_cuda_blocks(width, kThreads), kThreads, s,
                              (const double *)work, chunks, width, grad_bias + c0));
  }
done:
  return st;
}

extern "C" halo_status halo_cuda_bn_sums(const float *x, const float *y, int64_t rows,
                                         int64_t cols, double *sx, double *sxy, void *work,
                                         void *stream) {
  halo_status st = HALO_OK;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t chunks = 0, chunk_rows = 0;
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_bn_sums", "negative size");
  if (!work) return halo_cuda_bad_arg("halo_cuda_bn_sums", "no workspace");
  if (cols == 0) return HALO_OK;
  /* rows == 0 still runs: the sums are then zero, and must be written. */
  chunks = (rows + kColsumChunkRows - 1) / kColsumChunkRows;
  chunks = chunks < 1 ? 1 : chunks > kColsumChunks ? kColsumChunks : chunks;
  chunk_rows = (rows + chunks - 1) / chunks;
  for (int64_t c0 = 0; c0 < cols; c0 += kBnTile) {
    const int64_t width = cols - c0 < kBnTile ? cols - c0 : kBnTile;
    const dim3 grid((unsigned)((width + kWarp - 1) / kWarp), (unsigned)chunks);
    HALO_TRY(halo_cuda_launch(bn_sums_part_kernel, grid, dim3(kWarp, kColsumPartRows), s, x, y,
                              rows, cols, c0, width, chunk_rows, (double *)work));
    HALO_TRY(halo_cuda_launch(bn_sums_finish_kernel, halo_cuda_blocks(width, kThreads), kThreads,
                              s, (const double *)work, chunks, width, sx + c0, sxy + c0));
  }
done:
  return st;
}

extern "C" halo_status halo_cuda_batchnorm(float *y, int64_t rows, int64_t cols,
                                           const double *shift, const double *scale,
                                           const float *gamma, const float *beta, float *xhat,
                                           void *stream) {
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_batchnorm", "negative size");
  return launch_n("halo_cuda_batchnorm", batchnorm_kernel, rows * cols, stream, y, rows, cols,
                  shift, scale, gamma, beta, xhat);
}

extern "C" halo_status halo_cuda_batchnorm_backward(float *g, const float *xhat, int64_t rows,
                                                    int64_t cols, const float *gamma,
                                                    const double *scale, const double *a,
                                                    const double *b, void *stream) {
  if (rows < 0 || cols < 0)
    return halo_cuda_bad_arg("halo_cuda_batchnorm_backward", "negative size");
  return launch_n("halo_cuda_batchnorm_backward", batchnorm_backward_kernel, rows * cols, stream,
                  g, xhat, rows, cols, gamma, scale, a, b);
}

extern "C" halo_status halo_cuda_row_normalize(float *x, int64_t rows, int64_t cols, void *stream) {
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_row_normalize", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  return launch_warps(row_normalize_kernel, rows, stream, x, rows, cols);
}

extern "C" halo_status halo_cuda_l2_normalize(float *y, int64_t rows, int64_t cols, float *norm,
                                              void *stream) {
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_l2_normalize", "negative size");
  if (rows == 0) return HALO_OK;
  if (!norm) return halo_cuda_bad_arg("halo_cuda_l2_normalize", "norm must be a device pointer");
  /* cols == 0 still runs: each norm is then the clamp, and must be written. */
  return launch_warps(l2_normalize_kernel, rows, stream, y, rows, cols, norm);
}

extern "C" halo_status halo_cuda_l2_normalize_backward(float *g, const float *y, const float *norm,
                                                       int64_t rows, int64_t cols, void *stream) {
  const char *op = "halo_cuda_l2_normalize_backward";
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg(op, "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (!norm) return halo_cuda_bad_arg(op, "norm must be a device pointer");
  return launch_warps(l2_normalize_backward_kernel, rows, stream, g, y, norm, rows, cols);
}

extern "C" halo_status halo_cuda_layernorm(float *y, int64_t rows, int64_t cols, const float *gamma,
                                           const float *beta, float *xhat, float *rstd,
                                           void *stream) {
  const char *op = "halo_cuda_layernorm";
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg(op, "negative size");
  if (rows == 0) return HALO_OK;
  if (!rstd) return halo_cuda_bad_arg(op, "rstd must be a device pointer");
  if (cols > 0 && !xhat) return halo_cuda_bad_arg(op, "xhat must be a device pointer");
  /* cols == 0 still runs: each rstd is then 1/sqrt(eps), and must be written. */
  return launch_warps(layernorm_kernel, rows, stream, y, rows, cols, gamma, beta, xhat, rstd);
}

extern "C" halo_status halo_cuda_layernorm_backward(float *g, const float *xhat, const float *rstd,
                                                    const float *gamma, int64_t rows, int64_t cols,
                                                    void *stream) {
  const char *op = "halo_cuda_layernorm_backward";
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg(op, "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (!rstd) return halo_cuda_bad_arg(op, "rstd must be a device pointer");
  return launch_warps(layernorm_backward_kernel, rows, stream, g, xhat, rstd, gamma, rows, cols);
}
