/* halo-train's default thread count on a busy node (train-impl.h): the
 * cores of this rank's affinity mask that other processes keep busy,
 * sampled from /proc/stat before the run loads anything. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halo-train.h"

/* Busy and total jiffies of cpu `cpu` in a /proc/stat text; 0 when the
 * text has no line for it. */
static int cpu_jiffies(const char *stat, int cpu, unsigned long long *busy,
                       unsigned long long *total) {
  char head[32];
  snprintf(head, sizeof head, "\ncpu%d ", cpu);
  const char *at = strstr(stat, head);
  if (!at) return 0;
  at += strlen(head);
  /* user nice system idle iowait irq softirq steal: idle and iowait are
   * not busy. */
  unsigned long long v[8] = {0};
  char *end = NULL;
  for (int k = 0; k < 8; k++) {
    v[k] = strtoull(at, &end, 10);
    if (end == at) break;
    at = end;
  }
  *total = 0;
  for (int k = 0; k < 8; k++) *total += v[k];
  *busy = *total - v[3] - v[4];
  return 1;
}

int halo_train_busy_count(const char *before, const char *after, const int *cpus, int ncpus) {
  int busy = 0;
  for (int i = 0; i < ncpus; i++) {
    unsigned long long b0 = 0, t0 = 0, b1 = 0, t1 = 0;
    if (!cpu_jiffies(before, cpus[i], &b0, &t0) || !cpu_jiffies(after, cpus[i], &b1, &t1))
      continue;
    if (t1 <= t0 || b1 < b0) continue;
    busy += 2 * (b1 - b0) > (t1 - t0);
  }
  return busy;
}

/* The whole of /proc/stat into buf (`size` bytes, NUL-terminated, with a
 * leading newline so that every cpu line starts with one); 0 on failure. */
static int read_stat(char *buf, size_t size) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return 0;
  buf[0] = '\n';
  const size_t got = fread(buf + 1, 1, size - 2, f);
  fclose(f);
  buf[got + 1] = '\0';
  return got > 0;
}

int halo_train_busy_cores(int sample_ms) {
  enum { MAX_CPUS = 1024 };
  static char before[1 << 16], after[1 << 16];
  static int cpus[MAX_CPUS];
  cpu_set_t mask;
  int n = 0;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 0;
  for (int c = 0; c < CPU_SETSIZE && n < MAX_CPUS; c++)
    if (CPU_ISSET(c, &mask)) cpus[n++] = c;
  if (!read_stat(before, sizeof before)) return 0;
  const struct timespec nap = {.tv_sec = sample_ms / 1000,
                               .tv_nsec = (long)(sample_ms % 1000) * 1000000L};
  nanosleep(&nap, NULL);
  if (!read_stat(after, sizeof after)) return 0;
  return halo_train_busy_count(before, after, cpus, n);
}
