#include <stdlib.h>

#include "partition-impl.h"

halo_status halo__partition_order(const int32_t *part, int64_t n, int32_t parts, int64_t **order,
                                  int64_t **start) {
  halo_status st = HALO_OK;
  int64_t *ord = NULL, *beg = NULL, *next = NULL;
  HALO_ALLOC(beg, (int64_t)parts + 1, "part offsets");
  for (int64_t v = 0; v < n; v++) {
    if (part[v] < 0 || part[v] >= parts)
      HALO_FAIL(HALO_ERR_RANGE, "node %lld is in part %d, outside [0, %d)", (long long)v, part[v],
                parts);
    beg[part[v] + 1]++;
  }
  for (int32_t p = 0; p < parts; p++) beg[p + 1] += beg[p];
  HALO_ALLOC(next, parts, "part cursors");
  HALO_ALLOC(ord, n, "nodes by part");
  for (int32_t p = 0; p < parts; p++) next[p] = beg[p];
  for (int64_t v = 0; v < n; v++) ord[next[part[v]]++] = v;
  *order = ord;
  *start = beg;
  ord = NULL;
  beg = NULL;
done:
  free(next);
  free(ord);
  free(beg);
  return st;
}
