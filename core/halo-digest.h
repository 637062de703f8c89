/* A fast, streaming, non-cryptographic 64-bit digest for detecting corrupt or
 * mismatched data (shard contents, input files).  The result depends only on
 * the bytes, not on how they were split into update calls. Local. */
#ifndef HALO_DIGEST_H
#define HALO_DIGEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct halo_digest {
  uint64_t h;
  uint64_t len;
  uint8_t tail[8];
  unsigned ntail;
} halo_digest;

void halo_digest_init(halo_digest *d);
void halo_digest_update(halo_digest *d, const void *data, size_t len);
uint64_t halo_digest_final(const halo_digest *d);

/* One call: digest of a single buffer. */
uint64_t halo_digest_bytes(const void *data, size_t len);

#endif /* HALO_DIGEST_H */
