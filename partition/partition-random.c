/* Random partitioner: a seeded uniform permutation π of the nodes (Fisher-
 * Yates driven by the counter-based RNG, so the result depends only on the
 * seed and n), cut into P near-equal blocks: part[π(i)] = block of i.  The
 * parts are as balanced as the block partitioner's and blind to structure,
 * which makes it the baseline that shows what METIS saves. */
#include <stdlib.h>

#include "halo-partition.h"
#include "halo-rng.h"

/* Uniform in [0, bound) by rejection, free of modulo bias. */
static uint64_t draw_below(uint64_t key, uint64_t row, uint64_t bound) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  for (uint64_t attempt = 0;; attempt++) {
    uint64_t r = halo_rng_bits(key, row, attempt);
    if (r < limit) return r % bound;
  }
}

halo_status halo_partition_random(halo_graph *g, const halo_partition_options *opt, int32_t *part) {
  halo_status st = HALO_OK;
  int64_t *perm = NULL;
  const int64_t n = g->n;
  if (opt->parts < 1 || opt->parts > n)
    HALO_FAIL(HALO_ERR_ARG, "random: %d parts for %lld nodes; need 1 <= parts <= nodes", opt->parts,
              (long long)n);
  HALO_ALLOC(perm, n, "random permutation");
  uint64_t key = halo_rng_key((uint64_t)opt->seed, HALO_RNG_PARTITION, 0, 0);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)draw_below(key, (uint64_t)i, (uint64_t)i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int64_t i = 0; i < n; i++) part[perm[i]] = halo_partition_block_of(i, n, opt->parts);
done:
  free(perm);
  return st;
}
