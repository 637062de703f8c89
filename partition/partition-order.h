/* Private to partition/: nodes grouped by part. */
#ifndef HALO_PARTITION_ORDER_H
#define HALO_PARTITION_ORDER_H

#include "halo-partition.h"

/* Counting sort of the nodes by part: part p owns
 * order[start[p] .. start[p+1]), in ascending global id.  *order (size n)
 * and *start (size parts+1) are new arrays owned by the caller.  Fails with
 * HALO_ERR_RANGE when some part[v] is outside [0, parts). Local. */
halo_status halo__partition_order(const int32_t *part, int64_t n, int32_t parts, int64_t **order,
                                  int64_t **start);

#endif /* HALO_PARTITION_ORDER_H */
