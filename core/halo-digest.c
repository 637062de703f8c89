#include "halo-digest.h"

#include <assert.h>
#include <string.h>

#include "halo-rng.h"

static const uint64_t DIGEST_K1 = 0x9fb21c651e98df25ull;
static const uint64_t DIGEST_K2 = 0xc2b2ae3d27d4eb4full;

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t digest_word(uint64_t h, uint64_t w) {
  return rotl64(h ^ (w * DIGEST_K1), 29) * DIGEST_K2;
}

void halo_digest_init(halo_digest *d) { *d = (halo_digest){.h = 0x6a09e667f3bcc908ull}; }

void halo_digest_update(halo_digest *d, const void *data, size_t len) {
  const uint8_t *p = data;
  d->len += len;
  while (d->ntail > 0 && d->ntail < 8 && len > 0) {
    d->tail[d->ntail++] = *p++;
    len--;
  }
  if (d->ntail == 8) {
    uint64_t w;
    memcpy(&w, d->tail, 8);
    d->h = digest_word(d->h, w);
    d->ntail = 0;
  }
  uint64_t h = d->h;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = digest_word(h, w);
  }
  d->h = h;
  memcpy(d->tail + d->ntail, p, len);
  d->ntail += (unsigned)len;
}

uint64_t halo_digest_final(const halo_digest *d) {
  uint64_t h = d->h;
  if (d->ntail) {
    uint64_t w = 0;
    memcpy(&w, d->tail, d->ntail);
    h = digest_word(h, w ^ ((uint64_t)d->ntail << 59));
  }
  return halo_rng_mix(h ^ d->len);
}

uint64_t halo_digest_bytes(const void *data, size_t len) {
  halo_digest d;
  halo_digest_init(&d);
  halo_digest_update(&d, data, len);
  return halo_digest_final(&d);
}

void halo_digest_chunked_init(halo_digest_chunked *d) {
  *d = (halo_digest_chunked){.len = 0};
  halo_digest_init(&d->outer);
  halo_digest_init(&d->chunk);
}

void halo_digest_chunked_add(halo_digest_chunked *d, uint64_t chunk_digest) {
  assert(d->len % HALO_DIGEST_CHUNK == 0);
  halo_digest_update(&d->outer, &chunk_digest, sizeof chunk_digest);
  d->len += HALO_DIGEST_CHUNK;
}

void halo_digest_chunked_update(halo_digest_chunked *d, const void *data, size_t len) {
  const uint8_t *p = data;
  while (len > 0) {
    const size_t open = (size_t)(d->len % HALO_DIGEST_CHUNK);
    const size_t take = len < HALO_DIGEST_CHUNK - open ? len : HALO_DIGEST_CHUNK - open;
    halo_digest_update(&d->chunk, p, take);
    d->len += take;
    p += take;
    len -= take;
    if (d->len % HALO_DIGEST_CHUNK == 0) {
      const uint64_t w = halo_digest_final(&d->chunk);
      halo_digest_update(&d->outer, &w, sizeof w);
      halo_digest_init(&d->chunk);
    }
  }
}

uint64_t halo_digest_chunked_final(const halo_digest_chunked *d) {
  halo_digest outer = d->outer;
  if (d->len % HALO_DIGEST_CHUNK != 0) {
    const uint64_t w = halo_digest_final(&d->chunk);
    halo_digest_update(&outer, &w, sizeof w);
  }
  return halo_rng_mix(halo_digest_final(&outer) ^ d->len);
}
