/* Shared helpers for the CUDA unit tests: seeds, random inputs, device
 * buffers and the relative error against the CPU twin.
 *
 * Every test compares a CUDA op with the CPU op of the same name, which is
 * the oracle, on fresh random inputs (never zeros).  Outputs are poisoned
 * with NaN bytes before the CUDA op runs, so an element it fails to write
 * shows up as an infinite error rather than as a lucky match.
 */
#ifndef HALO_GPU_TEST_H
#define HALO_GPU_TEST_H

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo-rng.h"

/* The run's seed: $HALO_TEST_SEED when set, else the clock.  Each test
 * prints it with its own name, so that a failure can be replayed.  (C
 * linkage: test-cuda-emu.cu is C++ under the emulator.) */
#ifdef __cplusplus
extern "C" {
#endif
uint64_t gpu_test_seed(const char *test);
#ifdef __cplusplus
}
#endif

/* x[i] = lo + (hi - lo) · uniform, from the stream (seed, tag). */
static inline void fill_uniform(float *x, int64_t n, uint64_t seed, uint64_t tag, float lo,
                                float hi) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, tag, 0);
  for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * halo_rng_uniform(key, (uint64_t)i, 0);
}

/* A uniform integer in [0, n). */
static inline int64_t rand_below(uint64_t key, uint64_t i, int64_t n) {
  return (int64_t)(halo_rng_bits(key, i, 1) % (uint64_t)n);
}

/* ‖got − want‖₂ / ‖want‖₂ in double (‖got‖₂ when want is all zeros);
 * INFINITY when got holds a NaN or an infinity. */
static inline double rel_err(const float *got, const float *want, int64_t n) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(got[i])) return INFINITY;
    const double d = (double)got[i] - (double)want[i];
    num += d * d;
    den += (double)want[i] * (double)want[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Device memory that the test fails on rather than returns from. */
static inline void *dev_alloc(size_t bytes) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  cr_assert_eq(e, cudaSuccess, "cudaMalloc(%zu): %s", bytes, cudaGetErrorString(e));
  return p;
}

static inline void *dev_upload(const void *host, size_t bytes) {
  void *p = dev_alloc(bytes);
  cudaError_t e = cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice);
  cr_assert_eq(e, cudaSuccess, "upload: %s", cudaGetErrorString(e));
  return p;
}

/* Copies back after waiting for all queued work, so a fault in a kernel
 * fails the test here with the runtime's message. */
static inline void dev_download(void *host, const void *dev, size_t bytes) {
  cudaError_t e = cudaDeviceSynchronize();
  cr_assert_eq(e, cudaSuccess, "kernel: %s", cudaGetErrorString(e));
  e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
  cr_assert_eq(e, cudaSuccess, "download: %s", cudaGetErrorString(e));
}

/* Fills device memory with 0xff bytes: every float is then a NaN. */
static inline void dev_poison(void *dev, size_t bytes) {
  cudaError_t e = cudaMemset(dev, 0xff, bytes);
  cr_assert_eq(e, cudaSuccess, "poison: %s", cudaGetErrorString(e));
}

static inline void *host_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  cr_assert_not_null(p, "malloc(%zu)", bytes);
  return p;
}

#endif /* HALO_GPU_TEST_H */
