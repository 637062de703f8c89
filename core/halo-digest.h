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

/* The chunked digest of a byte stream, for input files that several ranks
 * read at once.  The stream is cut every HALO_DIGEST_CHUNK bytes from its
 * start; each chunk's halo_digest_bytes() is one 8-byte word of an outer
 * halo_digest, and the final value also covers the stream's length:
 *
 *   D(s) = mix(halo_digest(d_0 d_1 ... d_{c-1}) ^ |s|),  d_i = halo_digest(s[iC, (i+1)C))
 *
 * Like halo_digest it depends on the bytes alone, not on how they are fed.
 * Unlike it, any run of whole chunks can be digested apart (by another rank,
 * with pread) and given back by halo_digest_chunked_add, so that no rank
 * reads a whole file for it. Local. */
enum { HALO_DIGEST_CHUNK = 256 * 1024 };

typedef struct halo_digest_chunked {
  halo_digest outer; /* over the digests of the whole chunks so far */
  halo_digest chunk; /* the open chunk's bytes (fewer than HALO_DIGEST_CHUNK) */
  uint64_t len;      /* bytes so far */
} halo_digest_chunked;

void halo_digest_chunked_init(halo_digest_chunked *d);
void halo_digest_chunked_update(halo_digest_chunked *d, const void *data, size_t len);
/* Appends a whole chunk by its digest, halo_digest_bytes() of its
 * HALO_DIGEST_CHUNK bytes: the same as halo_digest_chunked_update() with
 * them.  d must be at a chunk boundary (len a multiple of the chunk). */
void halo_digest_chunked_add(halo_digest_chunked *d, uint64_t chunk_digest);
uint64_t halo_digest_chunked_final(const halo_digest_chunked *d);

#endif /* HALO_DIGEST_H */
