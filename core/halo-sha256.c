/* SHA-256 as specified in FIPS 180-4: functions in section 4.1.2, constants
 * in 4.2.2, padding in 5.1.1, initial hash value in 5.3.3 and the hash
 * computation in 6.2.2.  Words are big-endian (section 3.1), so bytes are
 * assembled explicitly and the code does not depend on the host's order. */
#include "halo-sha256.h"

#include <string.h>

/* K0..K63: the first 32 bits of the fractional parts of the cube roots of
 * the first 64 primes (section 4.2.2). */
static const uint32_t SHA256_K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

/* ROTR^n(x) for 0 < n < 32 (section 3.2). */
static inline uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

/* The six logical functions of section 4.1.2. */
static inline uint32_t ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
static inline uint32_t maj(uint32_t x, uint32_t y, uint32_t z) {
  return (x & y) ^ (x & z) ^ (y & z);
}
static inline uint32_t big_sigma0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
static inline uint32_t big_sigma1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
static inline uint32_t small_sigma0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
static inline uint32_t small_sigma1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

static inline uint32_t load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void store_be32(uint8_t *p, uint32_t x) {
  p[0] = (uint8_t)(x >> 24);
  p[1] = (uint8_t)(x >> 16);
  p[2] = (uint8_t)(x >> 8);
  p[3] = (uint8_t)x;
}

/* One step of section 6.2.2: H(i) from H(i-1) and the 512-bit block M(i). */
static void compress(uint32_t h[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; t++)
    w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];

  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    const uint32_t t1 = hh + big_sigma1(e) + ch(e, f, g) + SHA256_K[t] + w[t];
    const uint32_t t2 = big_sigma0(a) + maj(a, b, c);
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

void halo_sha256_init(halo_sha256 *s) {
  /* The first 32 bits of the fractional parts of the square roots of the
   * first 8 primes (section 5.3.3). */
  static const uint32_t H0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
  memset(s, 0, sizeof *s);
  memcpy(s->h, H0, sizeof H0);
}

void halo_sha256_update(halo_sha256 *s, const void *data, size_t len) {
  if (len == 0) return;
  const uint8_t *p = data;
  s->len += len;
  /* Top up a partial block first, so that whole blocks can then be consumed
   * straight from the caller's buffer without a copy. */
  if (s->nblock > 0) {
    size_t take = 64 - s->nblock;
    if (take > len) take = len;
    memcpy(s->block + s->nblock, p, take);
    s->nblock += (unsigned)take;
    p += take;
    len -= take;
    if (s->nblock < 64) return;
    compress(s->h, s->block);
    s->nblock = 0;
  }
  for (; len >= 64; p += 64, len -= 64) compress(s->h, p);
  if (len > 0) {
    memcpy(s->block, p, len);
    s->nblock = (unsigned)len;
  }
}

void halo_sha256_final(halo_sha256 *s, uint8_t out[HALO_SHA256_BYTES]) {
  /* Section 5.1.1: a 1 bit, zeros up to 448 mod 512 bits, then the message
   * length in bits as a 64-bit big-endian integer.  When fewer than 9 bytes
   * are left in the block the padding spills into one more block. */
  const uint64_t bits = s->len * 8u;
  s->block[s->nblock++] = 0x80;
  if (s->nblock > 56) {
    memset(s->block + s->nblock, 0, 64 - s->nblock);
    compress(s->h, s->block);
    s->nblock = 0;
  }
  memset(s->block + s->nblock, 0, 56 - s->nblock);
  store_be32(s->block + 56, (uint32_t)(bits >> 32));
  store_be32(s->block + 60, (uint32_t)bits);
  compress(s->h, s->block);
  for (int i = 0; i < 8; i++) store_be32(out + 4 * i, s->h[i]);
  /* The state now holds the digest of a padded message; clear it so that a
   * stray update cannot silently extend it. */
  memset(s, 0, sizeof *s);
}

void halo_sha256_bytes(const void *data, size_t len, uint8_t out[HALO_SHA256_BYTES]) {
  halo_sha256 s;
  halo_sha256_init(&s);
  halo_sha256_update(&s, data, len);
  halo_sha256_final(&s, out);
}

void halo_sha256_hex(const uint8_t digest[HALO_SHA256_BYTES], char hex[HALO_SHA256_HEX_CHARS + 1]) {
  static const char DIGITS[] = "0123456789abcdef";
  for (int i = 0; i < HALO_SHA256_BYTES; i++) {
    hex[2 * i] = DIGITS[digest[i] >> 4];
    hex[2 * i + 1] = DIGITS[digest[i] & 0x0f];
  }
  hex[HALO_SHA256_HEX_CHARS] = '\0';
}
