/* One SGD step, in the order of operations of PyTorch's single-tensor SGD
 * (torch/optim/sgd.py, dampening 0):
 *   d = g + wd·w;  buf = mu·buf + d;  d = nesterov ? d + mu·buf : buf
 *   w = w + (-lr)·d
 * and the scaling that --clip-grad-norm applies to the gradients. */
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_sgd(float *w, const float *g, float *buf, int64_t n, float lr, float mu, float wd,
                  int nesterov) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) {
    float d = wd != 0.0f ? g[i] + wd * w[i] : g[i];
    if (mu != 0.0f) {
      const float b = mu * buf[i] + d;
      buf[i] = b;
      d = nesterov ? d + mu * b : b;
    }
    w[i] = w[i] + -lr * d;
  }
}

void halo_cpu_scale(float *x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) x[i] *= s;
}
