/* halo_train_busy_count (train/train-cores.c): the cores that other processes
 * kept busy, from two /proc/stat texts, against a direct count of the
 * random jiffies the texts were written from (seeded, printed). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "halo-train.h"
#include "train-run.h"

enum { CPUS = 12 };

/* A /proc/stat text (leading newline) of `n` cpus' 8 fields each. */
static void write_stat(char *out, size_t size, unsigned long long f[][8], int n) {
  size_t len = (size_t)snprintf(out, size, "\ncpu  1 2 3 4 5 6 7 8 0 0\n");
  for (int c = 0; c < n; c++) {
    len += (size_t)snprintf(out + len, size - len, "cpu%d", c);
    for (int k = 0; k < 8; k++) len += (size_t)snprintf(out + len, size - len, " %llu", f[c][k]);
    len += (size_t)snprintf(out + len, size - len, " 0 0\n");
  }
  snprintf(out + len, size - len, "intr 12345 0 0\nctxt 999\n");
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

Test(cores, busy_cores_are_those_over_half_busy) {
  const uint64_t seed = tr_seed("cores.busy", 36);
  uint64_t s = seed | 1;
  static char before[8192], after[8192];
  for (int round = 0; round < 50; round++) {
    unsigned long long a[CPUS][8], b[CPUS][8];
    int want_all = 0, want_some = 0, cpus[CPUS], some[CPUS / 2];
    for (int c = 0; c < CPUS; c++) {
      unsigned long long busy = 0, total = 0;
      for (int k = 0; k < 8; k++) {
        a[c][k] = next(&s) % 1000000;
        const unsigned long long d = next(&s) % 50;
        b[c][k] = a[c][k] + d;
        total += d;
        if (k != 3 && k != 4) busy += d;
      }
      const int is_busy = 2 * busy > total;
      want_all += is_busy;
      cpus[c] = c;
      if (c % 2) {
        some[c / 2] = c;
        want_some += is_busy;
      }
    }
    write_stat(before, sizeof before, a, CPUS);
    write_stat(after, sizeof after, b, CPUS);
    cr_assert_eq(halo_train_busy_count(before, after, cpus, CPUS), want_all, "round %d", round);
    cr_assert_eq(halo_train_busy_count(before, after, some, CPUS / 2), want_some,
                 "round %d: the odd cpus", round);
  }
  /* cpu1 must not be read from cpu10's or cpu11's line; a cpu the texts
   * lack counts as idle. */
  unsigned long long a[CPUS][8] = {{0}}, b[CPUS][8] = {{0}};
  b[10][0] = b[11][0] = 100; /* cpus 10 and 11 all busy, 1 not at all */
  b[1][3] = 100;
  write_stat(before, sizeof before, a, CPUS);
  write_stat(after, sizeof after, b, CPUS);
  const int one[] = {1}, ten[] = {10, 11}, absent[] = {40};
  cr_expect_eq(halo_train_busy_count(before, after, one, 1), 0);
  cr_expect_eq(halo_train_busy_count(before, after, ten, 2), 2);
  cr_expect_eq(halo_train_busy_count(before, after, absent, 1), 0);
}

/* On this machine: a count within the cores online. */
Test(cores, the_sample_counts_within_the_cores) {
  const int busy = halo_train_busy_cores(20);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cr_expect(busy >= 0 && busy <= online, "%d busy cores of %ld", busy, online);
}
