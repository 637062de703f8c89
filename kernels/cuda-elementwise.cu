/* CUDA twins of the CPU's element-wise operations (kernels/halo-kernels.h):
 * bias, ReLU, AXPY, ELU, the elementwise product, dropout (dense and of a
 * CSR matrix's values), Adam, pack and unpack.  Each runs the CPU's float
 * operations in the CPU's order (cuda-kernels.cuh).
 */
#include "cuda-kernels.cuh"
#include "halo-rng.h"

namespace {

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

/* CUDA's expm1f is within 1 ulp; the CPU's is correctly rounded
 * (kernels/cpu-activation.c): the two may round apart. */
__global__ void elu_kernel(float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    y[e] = y[e] > 0.0f ? y[e] : expm1f(y[e]);
}

__global__ void elu_backward_kernel(float *g, const float *y, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    g[e] = __fmul_rn(g[e], y[e] > 0.0f ? 1.0f : __fadd_rn(y[e], 1.0f));
}

__global__ void leaky_relu_kernel(float *y, int64_t n, float slope) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    if (y[e] < 0.0f) y[e] = __fmul_rn(slope, y[e]);
}

__global__ void leaky_relu_backward_kernel(float *g, const float *y, int64_t n, float slope) {
  for (int64_t e = thread_index(); e < n; e += thread_count())
    if (y[e] < 0.0f) g[e] = __fmul_rn(slope, g[e]);
}

/* 1/√2 and 1/√(2π), as the CPU spells them. */
#define HALO_SQRT1_2 0.70710678118654752440
#define HALO_INV_SQRT_2PI 0.39894228040143267794

__global__ void gelu_to_kernel(float *y, const float *x, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const double v = x[e];
    y[e] = (float)__dmul_rn(__dmul_rn(0.5, v), erfc(__dmul_rn(-v, HALO_SQRT1_2)));
  }
}

__global__ void gelu_backward_kernel(float *g, const float *x, int64_t n) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const double v = x[e];
    const double cdf = __dmul_rn(0.5, erfc(__dmul_rn(-v, HALO_SQRT1_2)));
    const double pdf = __dmul_rn(exp(__dmul_rn(__dmul_rn(-0.5, v), v)), HALO_INV_SQRT_2PI);
    g[e] = (float)__dmul_rn((double)g[e], __dadd_rn(cdf, __dmul_rn(v, pdf)));
  }
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

/* The CPU's SGD (kernels/cpu-sgd.c), rounding for rounding as adam_kernel. */
__global__ void sgd_kernel(float *w, const float *g, float *buf, int64_t n, float lr, float mu,
                           float wd, int nesterov) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    float d = wd != 0.0f ? __fadd_rn(g[e], __fmul_rn(wd, w[e])) : g[e];
    if (mu != 0.0f) {
      const float b = __fadd_rn(__fmul_rn(mu, buf[e]), d);
      buf[e] = b;
      d = nesterov ? __fadd_rn(d, __fmul_rn(mu, b)) : b;
    }
    w[e] = __fadd_rn(w[e], __fmul_rn(-lr, d));
  }
}

__global__ void scale_kernel(float *x, int64_t n, float s) {
  for (int64_t e = thread_index(); e < n; e += thread_count()) x[e] = __fmul_rn(x[e], s);
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

}  // namespace

extern "C" halo_status halo_cuda_bias_add(float *y, int64_t rows, int64_t cols, const float *bias,
                                          void *stream) {
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_bias_add", "negative size");
  return launch_n("halo_cuda_bias_add", bias_add_kernel, rows * cols, stream, y, rows * cols, cols,
                  bias);
}

extern "C" halo_status halo_cuda_relu(float *y, int64_t n, void *stream) {
  return launch_n("halo_cuda_relu", relu_kernel, n, stream, y, n);
}

extern "C" halo_status halo_cuda_relu_backward(float *g, const float *y, int64_t n, void *stream) {
  return launch_n("halo_cuda_relu_backward", relu_backward_kernel, n, stream, g, y, n);
}

extern "C" halo_status halo_cuda_axpy(float *y, const float *x, int64_t n, float alpha,
                                      const float *p, void *stream) {
  return launch_n("halo_cuda_axpy", axpy_kernel, n, stream, y, x, n, alpha, p);
}

extern "C" halo_status halo_cuda_elu(float *y, int64_t n, void *stream) {
  return launch_n("halo_cuda_elu", elu_kernel, n, stream, y, n);
}

extern "C" halo_status halo_cuda_elu_backward(float *g, const float *y, int64_t n, void *stream) {
  return launch_n("halo_cuda_elu_backward", elu_backward_kernel, n, stream, g, y, n);
}

extern "C" halo_status halo_cuda_leaky_relu(float *y, int64_t n, float slope, void *stream) {
  return launch_n("halo_cuda_leaky_relu", leaky_relu_kernel, n, stream, y, n, slope);
}

extern "C" halo_status halo_cuda_leaky_relu_backward(float *g, const float *y, int64_t n,
                                                     float slope, void *stream) {
  return launch_n("halo_cuda_leaky_relu_backward", leaky_relu_backward_kernel, n, stream, g, y, n,
                  slope);
}

extern "C" halo_status halo_cuda_gelu_to(float *y, const float *x, int64_t n, void *stream) {
  return launch_n("halo_cuda_gelu_to", gelu_to_kernel, n, stream, y, x, n);
}

extern "C" halo_status halo_cuda_gelu_backward(float *g, const float *x, int64_t n, void *stream) {
  return launch_n("halo_cuda_gelu_backward", gelu_backward_kernel, n, stream, g, x, n);
}

extern "C" halo_status halo_cuda_mul(float *out, const float *a, const float *b, int64_t n,
                                     void *stream) {
  return launch_n("halo_cuda_mul", mul_kernel, n, stream, out, a, b, n);
}

extern "C" halo_status halo_cuda_dropout(float *y, int64_t rows, int64_t cols,
                                         const int64_t *global_id, uint64_t key, float p,
                                         void *stream) {
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_dropout", "negative size");
  /* As kernels/cpu-dropout.c: p <= 0 keeps everything, p >= 1 nothing, and
   * the scale is computed once, in float, by the same halo-rng.h helper. */
  if (p <= 0.0f) return HALO_OK;
  return launch_n("halo_cuda_dropout", dropout_kernel, rows * cols, stream, y, rows * cols, cols,
                  global_id, key, p, halo_dropout_scale(p));
}

extern "C" halo_status halo_cuda_dropout_to(float *dst, const float *src, int64_t rows,
                                            int64_t cols, const int64_t *global_id, uint64_t key,
                                            float p, void *stream) {
  halo_status st = HALO_OK;
  if (rows < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_dropout_to", "negative size");
  if (rows == 0 || cols == 0) return HALO_OK;
  if (p > 0.0f)
    return launch_n("halo_cuda_dropout_to", dropout_to_kernel, rows * cols, stream, dst, src,
                    rows * cols, cols, global_id, key, p, halo_dropout_scale(p));
  /* As kernels/cpu-dropout.c: a copy. */
  HALO_CUDA(cudaMemcpyAsync(dst, src, (size_t)(rows * cols) * sizeof *dst, cudaMemcpyDeviceToDevice,
                            (cudaStream_t)stream));
done:
  return st;
}

extern "C" halo_status halo_cuda_csr_dropout(const int64_t *indptr, const int32_t *indices,
                                             const float *values, int64_t rows, int transposed,
                                             const int64_t *global_id, uint64_t key, float p,
                                             float *out, void *stream) {
  if (rows < 0) return halo_cuda_bad_arg("halo_cuda_csr_dropout", "negative size");
  if (rows == 0) return HALO_OK;
  return launch_warps(csr_dropout_kernel, rows, stream, indptr, indices, values, rows, transposed,
                      global_id, key, p, halo_dropout_scale(p), out);
}

extern "C" halo_status halo_cuda_adam(float *w, const float *g, float *m, float *v, int64_t n,
                                      float lr, float b1, float b2, float eps, float wd, int64_t t,
                                      void *stream) {
  if (n < 0 || t < 1) return halo_cuda_bad_arg("halo_cuda_adam", "need n >= 0 and step t >= 1");
  /* The scalars exactly as kernels/cpu-adam.c computes them, in double on
   * the host. */
  const double bias1 = 1.0 - pow((double)b1, (double)t);
  const double bias2 = 1.0 - pow((double)b2, (double)t);
  const float step = (float)((double)lr / bias1);
  const float bias2_sqrt = (float)sqrt(bias2);
  return launch_n("halo_cuda_adam", adam_kernel, n, stream, w, g, m, v, n, b1, b2, 1.0f - b1,
                  1.0f - b2, eps, wd, step, bias2_sqrt);
}

extern "C" halo_status halo_cuda_scale(float *x, int64_t n, float s, void *stream) {
  if (n < 0) return halo_cuda_bad_arg("halo_cuda_scale", "negative size");
  return launch_n("halo_cuda_scale", scale_kernel, n, stream, x, n, s);
}

extern "C" halo_status halo_cuda_adamw(float *w, const float *g, float *m, float *v, int64_t n,
                                       float lr, float b1, float b2, float eps, float wd, int64_t t,
                                       void *stream) {
  if (n < 0 || t < 1) return halo_cuda_bad_arg("halo_cuda_adamw", "need n >= 0 and step t >= 1");
  if (wd != 0.0f) {
    const halo_status st = halo_cuda_scale(w, n, (float)(1.0 - (double)lr * (double)wd), stream);
    if (st != HALO_OK) return st;
  }
  return halo_cuda_adam(w, g, m, v, n, lr, b1, b2, eps, 0.0f, t, stream);
}

extern "C" halo_status halo_cuda_sgd(float *w, const float *g, float *buf, int64_t n, float lr,
                                     float mu, float wd, int nesterov, void *stream) {
  if (n < 0) return halo_cuda_bad_arg("halo_cuda_sgd", "negative size");
  return launch_n("halo_cuda_sgd", sgd_kernel, n, stream, w, g, buf, n, lr, mu, wd, nesterov);
}

extern "C" halo_status halo_cuda_pack(float *dst, const float *src, int64_t cols,
                                      const int32_t *idx, int64_t n, void *stream) {
  if (n < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_pack", "negative size");
  return launch_n("halo_cuda_pack", pack_kernel, n * cols, stream, dst, src, cols, idx, n);
}

extern "C" halo_status halo_cuda_unpack(float *dst, const float *src, int64_t cols,
                                        const int32_t *idx, int64_t n, void *stream) {
  if (n < 0 || cols < 0) return halo_cuda_bad_arg("halo_cuda_unpack", "negative size");
  return launch_n("halo_cuda_unpack", unpack_kernel, n * cols, stream, dst, src, cols, idx, n);
}
