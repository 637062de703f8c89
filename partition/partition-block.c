/* Contiguous block partitioner: part[v] = the block of v among P near-equal
 * ranges of ids.  Good locality only when ids already follow the structure
 * (a banded matrix, a crawl order); a baseline otherwise. */
#include "halo-partition.h"

int32_t halo_partition_block_of(int64_t i, int64_t n, int32_t parts) {
  int64_t base = n / parts, extra = n % parts;
  int64_t big = extra * (base + 1); /* items held by the first `extra` blocks */
  if (i < big) return (int32_t)(i / (base + 1));
  return (int32_t)(extra + (i - big) / base);
}

halo_status halo_partition_block(halo_graph *g, const halo_partition_options *opt, int32_t *part) {
  halo_status st = HALO_OK;
  if (opt->parts < 1 || opt->parts > g->n)
    HALO_FAIL(HALO_ERR_ARG, "block: %d parts for %lld nodes; need 1 <= parts <= nodes", opt->parts,
              (long long)g->n);
  for (int64_t v = 0; v < g->n; v++) part[v] = halo_partition_block_of(v, g->n, opt->parts);
done:
  return st;
}
