/* The digest depends on the bytes alone, not on how they are fed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo-digest.h"
#include "halo-rng.h"

Test(digest, split_points_do_not_matter) {
  uint64_t seed = 20261130;
  fprintf(stderr, "test-digest seed %llu\n", (unsigned long long)seed);
  enum { N = 1000 };
  uint8_t buf[N];
  for (int i = 0; i < N; i++) buf[i] = (uint8_t)halo_rng_bits(seed, (uint64_t)i, 0);
  uint64_t whole = halo_digest_bytes(buf, N);
  for (int trial = 0; trial < 200; trial++) {
    halo_digest d;
    halo_digest_init(&d);
    size_t at = 0;
    while (at < N) {
      size_t step = 1 + halo_rng_bits(seed, 1000 + (uint64_t)trial, at) % 23;
      if (step > N - at) step = N - at;
      halo_digest_update(&d, buf + at, step);
      at += step;
    }
    cr_assert_eq(halo_digest_final(&d), whole, "trial %d", trial);
  }
}

Test(digest, one_bit_changes_the_digest) {
  uint8_t buf[64] = {0};
  for (int i = 0; i < 64; i++) buf[i] = (uint8_t)(i * 7 + 1);
  uint64_t base = halo_digest_bytes(buf, sizeof buf);
  for (int bit = 0; bit < 64 * 8; bit++) {
    buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    cr_expect_neq(halo_digest_bytes(buf, sizeof buf), base, "bit %d", bit);
    buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
  /* Length matters too: a zero byte appended is not the same input. */
  cr_expect_neq(halo_digest_bytes(buf, 63), halo_digest_bytes(buf, 64));
}

/* The chunked digest, by its formula: each whole or last chunk's
 * halo_digest_bytes, the words' halo_digest_bytes, mixed with the length. */
static uint64_t chunked_by_formula(const uint8_t *buf, size_t len) {
  const size_t chunks = (len + HALO_DIGEST_CHUNK - 1) / HALO_DIGEST_CHUNK;
  uint64_t *word = calloc(chunks + 1, sizeof *word);
  cr_assert(word);
  for (size_t c = 0; c < chunks; c++) {
    const size_t at = c * HALO_DIGEST_CHUNK;
    const size_t n = len - at < HALO_DIGEST_CHUNK ? len - at : HALO_DIGEST_CHUNK;
    word[c] = halo_digest_bytes(buf + at, n);
  }
  const uint64_t outer = halo_digest_bytes(word, chunks * sizeof *word);
  free(word);
  return halo_rng_mix(outer ^ (uint64_t)len);
}

/* n bytes drawn from the seed (printed under `what`); the caller frees them. */
static uint8_t *random_bytes(const char *what, uint64_t seed, size_t n) {
  fprintf(stderr, "test-digest %s seed %llu\n", what, (unsigned long long)seed);
  uint8_t *buf = malloc(n);
  cr_assert(buf);
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)halo_rng_bits(seed, (uint64_t)i, 0);
  return buf;
}

Test(digest, chunked_matches_its_formula_however_fed) {
  const uint64_t seed = 20261206;
  const size_t N = 3 * HALO_DIGEST_CHUNK + 12345;
  uint8_t *buf = random_bytes("chunked", seed, N);
  const size_t lengths[] = {0,
                            1,
                            7,
                            HALO_DIGEST_CHUNK - 1,
                            HALO_DIGEST_CHUNK,
                            HALO_DIGEST_CHUNK + 1,
                            2 * HALO_DIGEST_CHUNK,
                            N};
  for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
    const size_t len = lengths[k];
    const uint64_t want = chunked_by_formula(buf, len);
    for (int trial = 0; trial < 20; trial++) {
      halo_digest_chunked d;
      halo_digest_chunked_init(&d);
      size_t at = 0;
      while (at < len) {
        size_t step = 1 + halo_rng_bits(seed, 7000 + (uint64_t)trial, at) % (HALO_DIGEST_CHUNK / 3);
        if (step > len - at) step = len - at;
        halo_digest_chunked_update(&d, buf + at, step);
        at += step;
      }
      cr_assert_eq(halo_digest_chunked_final(&d), want, "length %zu, trial %d", len, trial);
    }
  }
  /* Not the plain digest, and the length counts. */
  cr_expect_neq(chunked_by_formula(buf, 100), halo_digest_bytes(buf, 100));
  cr_expect_neq(chunked_by_formula(buf, HALO_DIGEST_CHUNK),
                chunked_by_formula(buf, HALO_DIGEST_CHUNK + 1));
  free(buf);
}

/* A run of whole chunks given by their digests (as other ranks digest
 * them) is the same as their bytes, between a partial head and a tail. */
Test(digest, chunked_add_equals_the_bytes) {
  const size_t N = 5 * HALO_DIGEST_CHUNK + 999;
  uint8_t *buf = random_bytes("chunked-add", 20261207, N);
  const size_t head = HALO_DIGEST_CHUNK - 77; /* the open chunk is filled by bytes */
  halo_digest_chunked d;
  halo_digest_chunked_init(&d);
  halo_digest_chunked_update(&d, buf, head);
  halo_digest_chunked_update(&d, buf + head, 77);
  size_t at = HALO_DIGEST_CHUNK;
  for (; at + HALO_DIGEST_CHUNK <= N; at += HALO_DIGEST_CHUNK)
    halo_digest_chunked_add(&d, halo_digest_bytes(buf + at, HALO_DIGEST_CHUNK));
  halo_digest_chunked_update(&d, buf + at, N - at);
  cr_assert_eq(halo_digest_chunked_final(&d), chunked_by_formula(buf, N));
  free(buf);
}
