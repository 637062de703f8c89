/* Private to the shard module: the in-memory checks shared by the writers
 * (so that a bad shard is never written) and the readers (so that a bad file
 * is never returned).  `path` only names the file in messages.
 */
#ifndef HALO_SHARD_IMPL_H
#define HALO_SHARD_IMPL_H

#include "halo-h5.h"
#include "halo-shard.h"

halo_status halo__shard_check_counts(const halo_shard *s, const char *path);
halo_status halo__shard_check_ptr(const char *path, const char *name, const int64_t *ptr,
                                  int32_t parts, int64_t max_total);
halo_status halo__shard_check_arrays(const halo_shard *s, const char *path);
/* With `with_part`, m->part must be present and agree with /parts/owned;
 * without, m->part is ignored. */
halo_status halo__manifest_check(const halo_manifest *m, const char *path, int with_part);

#endif /* HALO_SHARD_IMPL_H */
