#include "halo-memory.h"

#include <stdio.h>
#include <string.h>

/* The first integer of a one-line file, or -1 ("max", missing, unreadable). */
static int64_t read_int_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long long v = -1;
  if (fscanf(f, "%lld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

/* The "KEY: N kB" line of a /proc file, in bytes, or -1. */
static int64_t proc_kib_field(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  const size_t len = strlen(key);
  int64_t kib = -1;
  while (fgets(line, sizeof line, f)) {
    long long v = 0;
    if (strncmp(line, key, len) == 0 && line[len] == ':' &&
        sscanf(line + len + 1, "%lld kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  fclose(f);
  return kib >= 0 ? kib * 1024 : -1;
}

static int64_t meminfo_available(void) { return proc_kib_field("/proc/meminfo", "MemAvailable"); }

int64_t halo_memory_resident(void) { return proc_kib_field("/proc/self/status", "VmRSS"); }

int64_t halo_memory_peak(void) { return proc_kib_field("/proc/self/status", "VmHWM"); }

int halo_memory_peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return -1;
  const int ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* limit - usage of the cgroup, or -1 when there is no limit. */
static int64_t cgroup_room(void) {
  static const char *const files[2][2] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
       "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (int k = 0; k < 2; k++) {
    int64_t limit = read_int_file(files[k][0]);
    int64_t usage = read_int_file(files[k][1]);
    /* v1 reports "no limit" as a number near 2^63. */
    if (limit <= 0 || limit >= ((int64_t)1 << 60)) continue;
    return usage >= 0 && usage < limit ? limit - usage : 0;
  }
  return -1;
}

/* halo_memory_set_available's figure, or -1: measure. */
static int64_t forced_available = -1;

void halo_memory_set_available(int64_t bytes) { forced_available = bytes >= 0 ? bytes : -1; }

int64_t halo_memory_available(void) {
  if (forced_available >= 0) return forced_available;
  int64_t avail = meminfo_available(), room = cgroup_room();
  if (room >= 0 && (avail < 0 || room < avail)) avail = room;
  return avail;
}

const char *halo_memory_str(int64_t bytes, char *buf, size_t size) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%lld B", (long long)bytes);
  else
    snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}
