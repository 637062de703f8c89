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
