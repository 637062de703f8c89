/* Boundary sampling (--halo-sample p, BNS-GCN): which halo rows cross in a
 * training epoch.  A header of inline functions, like halo-rng.h, so that
 * the exchange (src/halo-exchange.c) and the predictor
 * (model/halo-predict.c) decide with the same float operations.
 *
 * Node v's row crosses in epoch e iff halo_sample_keep(halo_sample_key(seed,
 * e), v, p): a draw keyed by (seed, epoch, GLOBAL node id) alone.  So the
 * owner that sends and every part that receives agree without a message,
 * and the kept set is the same for every number of parts: a node kept for
 * one receiver is kept for all.  Each receiver's kept boundary set is a
 * Bernoulli(p) sample of its boundary set, as in BNS-GCN; unlike BNS-GCN's
 * code (which draws exactly ⌊p·|B|⌋ rows per receiver, independently per
 * receiver), the count varies from epoch to epoch and the receivers' draws
 * are the same draw.  A kept row is scaled by 1/p (halo_sample_scale), as
 * BNS-GCN scales by the kept ratio, so the aggregation is unbiased. */
#ifndef HALO_SAMPLE_H
#define HALO_SAMPLE_H

#include <stdint.h>

#include "halo-rng.h"

/* The stream tag of the boundary draw (halo-rng.h's and halo-quant.h's
 * lists go on). */
enum { HALO_RNG_HALO_SAMPLE = 8 };

/* Whether --halo-sample p samples at all: 0 < p < 1 (p = 1 is the plain
 * exchange; an options struct left at 0 samples nothing either). */
HALO_HD int halo_sample_on(float p) { return p > 0.0f && p < 1.0f; }

/* The key of epoch `epoch`'s draw. */
HALO_HD uint64_t halo_sample_key(uint64_t seed, int64_t epoch) {
  return halo_rng_key(seed, HALO_RNG_HALO_SAMPLE, (uint64_t)epoch, 0);
}

/* 1 when node `gid`'s row crosses under the draw `key` with rate p; p >= 1
 * keeps every row. */
HALO_HD int halo_sample_keep(uint64_t key, int64_t gid, float p) {
  return p >= 1.0f || halo_rng_uniform(key, (uint64_t)gid, 0) < p;
}

/* The factor of a kept row: 1/p, computed once in float. */
HALO_HD float halo_sample_scale(float p) { return 1.0f / p; }

#endif /* HALO_SAMPLE_H */
