/* SHA-256 (FIPS 180-4, section 6.2): a cryptographic digest of a byte stream,
 * for fingerprints that must not collide by accident or by design (model and
 * checkpoint fingerprints compared across runs and machines).  For a fast
 * check of data integrity, halo-digest.h is cheaper.
 *
 * The digest depends only on the bytes, not on how they were split into
 * update calls.  All calls are Local, allocate nothing and cannot fail.
 */
#ifndef HALO_SHA256_H
#define HALO_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Bytes in a digest, and characters in its hex form (without the NUL). */
#define HALO_SHA256_BYTES 32
#define HALO_SHA256_HEX_CHARS 64

/* The running state of one digest.  Callers treat it as opaque; it is a
 * struct so that it can live on the stack. */
typedef struct halo_sha256 {
  uint32_t h[8];     /* Hash value H(i) after the blocks consumed so far. */
  uint64_t len;      /* Message bytes fed so far. */
  uint8_t block[64]; /* A partial block, `nblock` bytes of it used. */
  unsigned nblock;
} halo_sha256;

/* Starts a digest: H(0) of FIPS 180-4 section 5.3.3. */
void halo_sha256_init(halo_sha256 *s);

/* Appends `len` bytes (data may be NULL when len is 0). */
void halo_sha256_update(halo_sha256 *s, const void *data, size_t len);

/* Pads the message, writes its 32-byte digest to `out` and leaves `s` spent:
 * call init again before reusing it. */
void halo_sha256_final(halo_sha256 *s, uint8_t out[HALO_SHA256_BYTES]);

/* One call: the digest of a single buffer. */
void halo_sha256_bytes(const void *data, size_t len, uint8_t out[HALO_SHA256_BYTES]);

/* Writes the digest as 64 lowercase hex digits and a NUL (65 bytes), the form
 * sha256sum prints. */
void halo_sha256_hex(const uint8_t digest[HALO_SHA256_BYTES], char hex[HALO_SHA256_HEX_CHARS + 1]);

#endif /* HALO_SHA256_H */
