/* The process's CPU clock, beside MPI_Wtime's wall clock.
 *
 * A rank's CPU seconds outside its MPI waits are the work it did, whether
 * or not it had a core to itself: on a machine with fewer cores than ranks
 * the ranks take turns, and wall time measures the scheduler as much as
 * the work (bench/balance-step.sh compares the ranks' work this way). */
#ifndef HALO_CLOCK_H
#define HALO_CLOCK_H

#include <time.h>

/* CPU seconds used by every thread of this process so far, or 0 where the
 * clock is missing. Local. */
static inline double halo_cpu_seconds(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0.0;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif /* HALO_CLOCK_H */
