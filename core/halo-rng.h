/* Counter-based random numbers, identical on the CPU and in CUDA kernels.
 *
 * Every random value is a pure function of a key and a counter, never of a
 * hidden state.  Weights are keyed by (seed, layer, row, column) and dropout
 * masks by (seed, epoch, layer, global node id, column), so a run with one
 * rank and a run with eight draw the very same numbers.
 *
 * The mixing function is SplitMix64's finaliser (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014), applied
 * once per key word.
 */
#ifndef HALO_RNG_H
#define HALO_RNG_H

#include <math.h> /* ceilf */
#include <stdint.h>
#include <string.h> /* memcpy, in device code too */

/* Marks a function callable from host code and from CUDA device code. */
#if defined(__CUDACC__)
#define HALO_HOST_DEVICE __host__ __device__
#else
#define HALO_HOST_DEVICE
#endif

/* Every function of this header: private to each translation unit that
 * includes it, on the host and on the device alike. */
#define HALO_HD static inline HALO_HOST_DEVICE

/* Stream tags, so that the same (seed, a, b) never feeds two purposes. */
enum {
  HALO_RNG_WEIGHTS = 1,
  HALO_RNG_DROPOUT = 2,
  HALO_RNG_GRAPH = 3,
  HALO_RNG_FEATURES = 4,
  HALO_RNG_PARTITION = 5,
  HALO_RNG_ATTENTION = 6, /* GAT's attention dropout: (seed, epoch, layer) */
};

HALO_HD uint64_t halo_rng_mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A key for one purpose: the seed, a stream tag and two coordinates
 * (for dropout: epoch and layer; for weights: layer and 0). */
HALO_HD uint64_t halo_rng_key(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b) {
  return halo_rng_mix(halo_rng_mix(halo_rng_mix(seed ^ (tag << 56)) ^ a) ^ b);
}

/* The column's odd multiplier in halo_rng_bits, for the kernels that hoist
 * the row's half of it out of a loop over columns. */
#define HALO_RNG_COL_MUL 0xd1b54a32d192ed03ull

/* 64 random bits at position (row, col) of a keyed stream. */
HALO_HD uint64_t halo_rng_bits(uint64_t key, uint64_t row, uint64_t col) {
  return halo_rng_mix(halo_rng_mix(key ^ row) ^ (col * HALO_RNG_COL_MUL));
}

/* Uniform float in [0, 1) with 24 random bits. */
HALO_HD float halo_rng_uniform(uint64_t key, uint64_t row, uint64_t col) {
  return (float)(halo_rng_bits(key, row, col) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform double in [0, 1) with 53 random bits. */
HALO_HD double halo_rng_uniform_double(uint64_t key, uint64_t row, uint64_t col) {
  return (double)(halo_rng_bits(key, row, col) >> 11) * (1.0 / 9007199254740992.0);
}

/* Inverted dropout with rate p, in one place for every kernel that applies
 * it (kernels/cpu-dropout.c, kernels/cuda-elementwise.cu): element (node, col)
 * of the keyed stream is kept iff its uniform draw is >= p, and a kept value
 * v becomes v · halo_dropout_scale(p).  Every rank and every device performs
 * these same float operations, which is what makes masks independent of the
 * partition and CPU and GPU results equal bit for bit.
 * key = halo_rng_key(seed, HALO_RNG_DROPOUT, epoch, layer); node is a GLOBAL
 * node id. */

/* 1/(1-p) computed once in float; 0 when p >= 1 (nothing is kept, and
 * 1/(1-p) would be inf or negative). */
HALO_HD float halo_dropout_scale(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }

/* 1 when dropout with rate p keeps element (node, col), else 0.  p <= 0
 * keeps everything and p >= 1 nothing (draws lie in [0, 1)). */
HALO_HD int halo_dropout_keep(uint64_t key, uint64_t node, uint64_t col, float p) {
  return halo_rng_uniform(key, node, col) >= p;
}

/* ceil(p · 2^24): the smallest 24-bit draw (halo_rng_bits >> 40) that
 * dropout with rate p keeps.  draw · 2^-24 and p · 2^24 are exact in
 * float, so `draw >= threshold` holds exactly when halo_dropout_keep does:
 * the same test on integers, for loops that vectorise.  0 for p <= 0. */
HALO_HD uint64_t halo_dropout_threshold(float p) {
  return p <= 0.0f ? 0 : (uint64_t)ceilf(p * 16777216.0f);
}

/* The value v after dropout: v · scale when kept, else +0, with scale =
 * halo_dropout_scale(p) hoisted out of the caller's loop.  It selects with
 * a bit mask, not a branch: the keep test is a coin flip that a CPU's
 * branch predictor loses about half the time, and on 1M × 128 features a
 * branching loop took a quarter of an epoch (docs/benchmarks.md,
 * 2026-11-30).  The bits are those of `keep ? v * scale : 0.0f`. */
HALO_HD float halo_dropout_apply(float v, uint64_t key, uint64_t node, uint64_t col, float p,
                                 float scale) {
  const float kept = v * scale;
  uint32_t bits;
  memcpy(&bits, &kept, sizeof bits);
  bits &= 0u - (uint32_t)halo_dropout_keep(key, node, col, p);
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

#endif /* HALO_RNG_H */
