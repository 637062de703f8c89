/* Memory admission: before a large allocation (a rank's model, a synthetic
 * graph) the caller estimates the bytes it needs and compares them with what
 * the machine and its cgroup still have, so that a request too large is
 * refused with a number instead of dying in the kernel's OOM killer.
 */
#ifndef HALO_MEMORY_H
#define HALO_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/* Bytes this process can still allocate: MemAvailable of /proc/meminfo,
 * lowered to the cgroup's limit minus its usage when a limit is set (cgroup
 * v2 memory.max/memory.current, or v1 memory.limit_in_bytes/usage_in_bytes),
 * or the figure halo_memory_set_available set.  -1 when unknown. Local. */
int64_t halo_memory_available(void);

/* Makes halo_memory_available report `bytes` (>= 0) instead of measuring,
 * for the whole process, so that tests can check the admissions (the
 * programs take it from HALO_MEMORY_AVAILABLE, docs/train.md
 * "Environment"); -1 measures again.  Set it before any thread runs.
 * Local. */
void halo_memory_set_available(int64_t bytes);

/* Bytes of this process resident now (VmRSS), and at most since it started
 * or since the last halo_memory_peak_reset (VmHWM); -1 when unknown. Local. */
int64_t halo_memory_resident(void);
int64_t halo_memory_peak(void);

/* Sets the peak to what is resident now (Linux's /proc/self/clear_refs, 5).
 * 0, or -1 where the kernel does not offer it. Local. */
int halo_memory_peak_reset(void);

/* "1.5 GB", "12.0 MB", "512 B": `bytes` in decimal units, for messages.
 * Returns buf. Local. */
const char *halo_memory_str(int64_t bytes, char *buf, size_t size);

#endif /* HALO_MEMORY_H */
