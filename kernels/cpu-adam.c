/* One Adam step with L2 weight decay, in the order of operations of
 * PyTorch's single-tensor Adam (torch/optim/adam.py):
 *   g' = g + wd·w;  m = b1·m + (1-b1)·g';  v = b2·v + (1-b2)·g'²
 *   w -= (lr / (1-b1^t)) · m / (sqrt(v) / sqrt(1-b2^t) + eps)
 * The bias corrections are computed in double (Python floats there). */
#include <math.h>
#include <stdint.h>

#include "cpu-parallel.h"
#include "halo-kernels.h"

void halo_cpu_adam(float *w, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                   float b2, float eps, float wd, int64_t t) {
  const double bias1 = 1.0 - pow((double)b1, (double)t);
  const double bias2 = 1.0 - pow((double)b2, (double)t);
  const float step = (float)((double)lr / bias1);
  const float bias2_sqrt = (float)sqrt(bias2);
  const float one_minus_b1 = 1.0f - b1;
  const float one_minus_b2 = 1.0f - b2;

#pragma omp parallel for simd schedule(static) if (parallel : n >= HALO_PARALLEL_STREAM)
  for (int64_t i = 0; i < n; i++) {
    const float gi = g[i] + wd * w[i];
    m[i] = b1 * m[i] + one_minus_b1 * gi;
    v[i] = b2 * v[i] + one_minus_b2 * gi * gi;
    const float denom = sqrtf(v[i]) / bias2_sqrt + eps;
    w[i] -= step * m[i] / denom;
  }
}

/* AdamW: torch's _single_tensor_adam with decoupled decay multiplies the
 * parameter by the Python float 1 - lr·wd (a double, rounded to the
 * tensor's float), then takes Adam's step without the L2 term. */
void halo_cpu_adamw(float *w, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                    float b2, float eps, float wd, int64_t t) {
  if (wd != 0.0f) halo_cpu_scale(w, n, (float)(1.0 - (double)lr * (double)wd));
  halo_cpu_adam(w, g, m, v, n, lr, b1, b2, eps, 0.0f, t);
}
