/* SHA-256 against the FIPS 180-4 example vectors, streaming against one
 * shot, and against sha256sum (coreutils), an implementation independent of
 * ours. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halo-rng.h"
#include "halo-sha256.h"

/* The seed of this run: HALO_TEST_SEED if set, else a fixed default. */
static uint64_t sha_seed(const char *test) {
  const char *env = getenv("HALO_TEST_SEED");
  const uint64_t seed = env ? strtoull(env, NULL, 10) : 20261130u;
  fprintf(stderr, "%s: seed %llu (replay with HALO_TEST_SEED=%llu)\n", test,
          (unsigned long long)seed, (unsigned long long)seed);
  return seed;
}

static void fill_random(uint8_t *buf, size_t n, uint64_t seed, uint64_t stream) {
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)halo_rng_bits(seed, stream, i);
}

static void expect_hex(const void *data, size_t len, const char *want, const char *what) {
  uint8_t digest[HALO_SHA256_BYTES];
  char hex[HALO_SHA256_HEX_CHARS + 1];
  halo_sha256_bytes(data, len, digest);
  halo_sha256_hex(digest, hex);
  cr_expect_str_eq(hex, want, "%s: got %s, want %s", what, hex, want);
}

Test(sha256, fips_180_4_examples) {
  expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
             "\"abc\" (one block)");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  expect_hex(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
             "448-bit message (two blocks)");
  expect_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             "empty message");
  expect_hex(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             "empty message (NULL)");
}

Test(sha256, one_million_a) {
  static const char *WANT = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  enum { N = 1000000 };
  char *buf = malloc(N);
  cr_assert(buf);
  memset(buf, 'a', N);
  expect_hex(buf, N, WANT, "one million 'a' (one shot)");

  /* The same message fed 1000 bytes at a time, which never lines up with the
   * 64-byte blocks except every 16 calls. */
  halo_sha256 s;
  uint8_t digest[HALO_SHA256_BYTES];
  char hex[HALO_SHA256_HEX_CHARS + 1];
  halo_sha256_init(&s);
  for (int i = 0; i < 1000; i++) halo_sha256_update(&s, buf, 1000);
  halo_sha256_final(&s, digest);
  halo_sha256_hex(digest, hex);
  cr_expect_str_eq(hex, WANT, "one million 'a' in 1000-byte pieces: got %s", hex);
  free(buf);
}

/* Every length around the padding boundaries (55, 56, 63, 64 ... bytes)
 * ends up in one of the two final-block cases; streaming in random pieces,
 * empty ones included, must give the one-shot digest. */
Test(sha256, random_pieces_equal_one_shot) {
  const uint64_t seed = sha_seed("sha256.random_pieces_equal_one_shot");
  enum { N = 4099 };
  uint8_t buf[N];
  fill_random(buf, N, seed, 0);
  const size_t lengths[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, N};
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
    const size_t len = lengths[li];
    uint8_t whole[HALO_SHA256_BYTES];
    halo_sha256_bytes(buf, len, whole);
    for (uint64_t trial = 0; trial < 50; trial++) {
      halo_sha256 s;
      halo_sha256_init(&s);
      size_t at = 0;
      for (uint64_t call = 0; at < len; call++) {
        /* Pieces of 0 to 150 bytes: empty, sub-block and multi-block. */
        size_t step = halo_rng_bits(seed, 1 + li * 1000 + trial, call) % 151;
        if (step > len - at) step = len - at;
        halo_sha256_update(&s, buf + at, step);
        at += step;
      }
      uint8_t pieces[HALO_SHA256_BYTES];
      halo_sha256_final(&s, pieces);
      cr_assert_arr_eq(pieces, whole, HALO_SHA256_BYTES, "length %zu, trial %llu", len,
                       (unsigned long long)trial);
    }
  }
}

Test(sha256, matches_sha256sum) {
  const uint64_t seed = sha_seed("sha256.matches_sha256sum");
  enum { N = 100000 };
  uint8_t *buf = malloc(N);
  cr_assert(buf);
  fill_random(buf, N, seed, 7);

  char path[] = "/tmp/halo-test-sha256-XXXXXX";
  const int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed");
  FILE *f = fdopen(fd, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(buf, 1, N, f), (size_t)N);
  cr_assert_eq(fclose(f), 0);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "sha256sum %s", path);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "cannot run sha256sum");
  char line[256] = {0};
  const int got_line = fgets(line, sizeof line, p) != NULL;
  const int rc = pclose(p);
  unlink(path);
  cr_assert(got_line && rc == 0, "sha256sum failed (status %d)", rc);
  /* sha256sum prints "<64 hex digits>  <path>". */
  cr_assert(strlen(line) > HALO_SHA256_HEX_CHARS && line[HALO_SHA256_HEX_CHARS] == ' ',
            "unexpected sha256sum output: %s", line);
  line[HALO_SHA256_HEX_CHARS] = '\0';

  uint8_t digest[HALO_SHA256_BYTES];
  char hex[HALO_SHA256_HEX_CHARS + 1];
  halo_sha256_bytes(buf, N, digest);
  halo_sha256_hex(digest, hex);
  cr_expect_str_eq(hex, line, "halo %s, sha256sum %s", hex, line);
  free(buf);
}
