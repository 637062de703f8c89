/* halo-train --profile: per-op timers on the backend's ops table, and the
 * machine's limits that give each op its floor.
 *
 * halo_profile_install swaps the backend's ops table for a copy whose
 * compute slots time the real op (synchronising a device backend first and
 * after, so that the time is the op's), count its bytes and flops, and add
 * them to a cell keyed by (op, phase, layer); the phase and layer are the
 * watchdog's (halo_watch_layer), which the network sets already.  Without
 * --profile the table is never swapped: the ops cost nothing more.
 *
 * State is per process, like the watchdog's: one backend, one thread
 * calling the ops.
 */
#ifndef HALO_PROFILE_H
#define HALO_PROFILE_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "halo-backend.h"
#include "halo-status.h"

/* Swaps be's ops for the timed ones; before halo_net_create, which copies
 * the table's pointer. Local. */
halo_status halo_profile_install(halo_backend *be);

/* Whether the timed table is installed. Local. */
int halo_profile_on(void);

/* Forgets the cells counted so far (the warm-up epochs'). Local. */
void halo_profile_reset(void);

/* This process's minor page faults so far (getrusage ru_minflt). Local. */
int64_t halo_profile_minflt(void);

/* What the loop measured around the ops, over the profiled epochs. */
typedef struct halo_profile_totals {
  int64_t epochs;          /* profiled (measured) epochs */
  double step_s;           /* halo_net_step's seconds, summed */
  double eval_s;           /* halo_net_evaluate's seconds, summed */
  double comm_s;           /* the MPI waits (exchanges and the allreduce), summed */
  int64_t minflt_first;    /* page faults of the run's first epoch */
  int64_t minflt_profiled; /* of the profiled epochs, summed */
} halo_profile_totals;

/* Measures the machine's limits (STREAM triad and copy, the random-row
 * gather at each width the SpMMs used, sgemm at the largest GEMM shape the
 * step ran) and prints, on rank 0 into `out`, the table per epoch: per op
 * its time (rank 0's and the max over ranks), bytes, flops, floor and
 * ratio; then the sums against the step.  Collective. */
halo_status halo_profile_report(halo_backend *be, MPI_Comm comm, const halo_profile_totals *t,
                                FILE *out);

#endif /* HALO_PROFILE_H */
