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

void halo_partition_cut_by_load(const int64_t *load, int64_t count, int64_t below, int64_t total,
                                int blocks, int64_t *first) {
  int next = 0;
  for (int q = 0; q <= blocks; q++) first[q] = INT64_MAX;
  for (int64_t i = 0; i < count && next < blocks; i++) {
    const __int128 scaled = (__int128)below * blocks / (total > 0 ? total : 1);
    const int block = scaled < blocks - 1 ? (int)scaled : blocks - 1;
    for (; next <= block; next++) first[next] = i;
    below += load[i];
  }
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
