/* Seeded random inputs for the kernel and SpMM tests.
 *
 * Every test draws its inputs from halo_rng keyed by one seed, printed at the
 * start, so a failure can be replayed with HALO_TEST_SEED=<seed>.
 */
#ifndef HALO_TEST_RANDOM_H
#define HALO_TEST_RANDOM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo-rng.h"

/* The seed of this run: HALO_TEST_SEED if set, else a fixed default. */
static inline uint64_t test_seed(const char *test) {
  const char *env = getenv("HALO_TEST_SEED");
  const uint64_t seed = env ? strtoull(env, NULL, 10) : 20261130u;
  fprintf(stderr, "%s: seed %llu (replay with HALO_TEST_SEED=%llu)\n", test,
          (unsigned long long)seed, (unsigned long long)seed);
  return seed;
}

/* A key for one input of one test. */
static inline uint64_t test_key(uint64_t seed, uint64_t input) {
  return halo_rng_key(seed, HALO_RNG_FEATURES, input, 0x7e57);
}

/* a[i] = uniform in [lo, hi), drawn at (key, i). */
static inline void test_fill(float *a, int64_t n, uint64_t key, float lo, float hi) {
  for (int64_t i = 0; i < n; i++) a[i] = lo + (hi - lo) * halo_rng_uniform(key, (uint64_t)i, 0);
}

/* An integer uniform in [0, n), drawn at (key, i). */
static inline int64_t test_below(uint64_t key, uint64_t i, int64_t n) {
  return (int64_t)(halo_rng_bits(key, i, 1) % (uint64_t)n);
}

#endif /* HALO_TEST_RANDOM_H */
