/* The number scanners against the C library: floats bit for bit against
 * strtof, integers against hand-checked limits. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "load-impl.h"

/* Scans `text` both ways; the results must agree bit for bit. */
static void expect_like_strtof(const char *text) {
  char *end;
  float want = strtof(text, &end);
  cr_assert_eq(*end, '\0', "reference strtof stopped early on '%s'", text);
  const char *p = text;
  float got = 0;
  cr_assert_eq(load_scan_f32(&p, &got), LOAD_SCAN_OK, "'%s' rejected", text);
  cr_assert_eq(*p, '\0', "'%s' not fully consumed", text);
  uint32_t a, b;
  memcpy(&a, &got, 4);
  memcpy(&b, &want, 4);
  cr_assert(a == b || (isnan(got) && isnan(want)), "'%s': got %.9g (0x%08x), strtof %.9g (0x%08x)",
            text, got, a, want, b);
}

Test(scan, hand_picked_floats) {
  static const char *const CASES[] = {
      "0",
      "-0",
      "+1",
      ".5",
      "5.",
      "0.1",
      "1e-45",
      "1.4e-45",
      "1e-38",
      "1.17549435e-38",
      "3.4028235e38",
      "3.40282357e38",
      "16777217",
      "16777219",
      "33554435",
      "0.30000001192092896",
      "1e22",
      "1e23",
      "123456789012345678901234567890",
      "0.000000000000000000000000000001",
      "0x1p3",
      "nan",
      "-inf",
      "Infinity",
      "1e39",
      "2.5e-3",
      "-0.057943",
      "7e-1",
      "1E5",
      "9007199254740993",
      "0.1000000000000000055511151231257827",
  };
  for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) expect_like_strtof(CASES[k]);
}

Test(scan, random_floats_in_many_spellings) {
  uint64_t seed = 20261130;
  fprintf(stderr, "scan seed %llu\n", (unsigned long long)seed);
  static const char *const FORMATS[] = {"%.9g", "%.6g",  "%.3g", "%.1g",
                                        "%e",   "%.12e", "%f",   "%.10f"};
  char text[512];
  for (uint64_t i = 0; i < 20000; i++) {
    uint32_t bits = (uint32_t)halo_rng_bits(seed, i, 0);
    float f;
    memcpy(&f, &bits, 4);
    if (!isfinite(f)) continue;
    const char *fmt = FORMATS[i % (sizeof FORMATS / sizeof FORMATS[0])];
    snprintf(text, sizeof text, fmt, (double)f);
    expect_like_strtof(text);
    /* The double nearest a random decimal, printed long: exercises the
     * rounding of digits beyond float precision. */
    double d = ldexp((double)(halo_rng_bits(seed, i, 1) >> 11),
                     (int)(halo_rng_bits(seed, i, 2) % 200) - 150);
    snprintf(text, sizeof text, "%.17g", d);
    expect_like_strtof(text);
  }
}

Test(scan, random_decimal_strings) {
  uint64_t seed = 99;
  fprintf(stderr, "scan seed %llu\n", (unsigned long long)seed);
  char text[128];
  for (uint64_t i = 0; i < 20000; i++) {
    int digits = 1 + (int)(halo_rng_bits(seed, i, 0) % 24);
    int point = (int)(halo_rng_bits(seed, i, 1) % (uint64_t)(digits + 1));
    int o = 0;
    if (halo_rng_bits(seed, i, 2) & 1) text[o++] = '-';
    for (int k = 0; k < digits; k++) {
      if (k == point && k > 0) text[o++] = '.';
      text[o++] = (char)('0' + halo_rng_bits(seed, i, 10 + (uint64_t)k) % 10);
    }
    if (halo_rng_bits(seed, i, 3) % 3 == 0)
      o += sprintf(text + o, "e%d", (int)(halo_rng_bits(seed, i, 4) % 80) - 40);
    text[o] = '\0';
    expect_like_strtof(text);
  }
}

Test(scan, tokens_end_at_separators) {
  const char *p = "1.5,2";
  float f;
  cr_assert_eq(load_scan_f32(&p, &f), LOAD_SCAN_OK);
  cr_expect_eq(f, 1.5f);
  cr_expect_eq(*p, ',');
  static const char *const BAD[] = {"", "-", "1.2.3", "1e", "1e+", "abc", "1x", "1..", ",1", "--1"};
  for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
    p = BAD[k];
    cr_expect_eq(load_scan_f32(&p, &f), LOAD_SCAN_BAD, "'%s' accepted", BAD[k]);
  }
}

Test(scan, integers) {
  static const struct {
    const char *text;
    int rc;
    int64_t value;
  } CASES[] = {
      {"0", LOAD_SCAN_OK, 0},
      {"+5", LOAD_SCAN_OK, 5},
      {"-17", LOAD_SCAN_OK, -17},
      {"9223372036854775807", LOAD_SCAN_OK, INT64_MAX},
      {"-9223372036854775808", LOAD_SCAN_OK, INT64_MIN},
      {"9223372036854775808", LOAD_SCAN_RANGE, 0},
      {"-9223372036854775809", LOAD_SCAN_RANGE, 0},
      {"99999999999999999999999", LOAD_SCAN_RANGE, 0},
      {"12a", LOAD_SCAN_BAD, 0},
      {"1.0", LOAD_SCAN_BAD, 0},
      {"", LOAD_SCAN_BAD, 0},
      {"-", LOAD_SCAN_BAD, 0},
      {"nan", LOAD_SCAN_BAD, 0},
  };
  for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
    const char *p = CASES[k].text;
    int64_t v = 0;
    int rc = load_scan_i64(&p, &v);
    cr_expect_eq(rc, CASES[k].rc, "'%s': rc %d", CASES[k].text, rc);
    if (rc == LOAD_SCAN_OK) {
      cr_expect_eq(v, CASES[k].value, "'%s': %lld", CASES[k].text, (long long)v);
      cr_expect_eq(*p, '\0');
    }
  }
}
