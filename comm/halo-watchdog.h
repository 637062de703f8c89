/* The watchdog: waits on MPI requests with a deadline, so that a rank whose
 * peer stalls or dies reports where it is stuck instead of hanging.
 *
 * The waits of the epoch loop (halo exchanges, the gradient allreduce, the
 * status agreements, the memory measurements) go through halo_watch_waitall.  With the watchdog off
 * (the default) that is MPI_Waitall.  With a timeout T it polls the requests
 * with MPI_Testsome; when T seconds pass without all of them completing it
 * logs ONE line,
 *
 *   [rank 1] halo-train: error: watchdog: no progress for 5.0 s in the halo
 *   exchange (phase forward, epoch 12, layer 1); waiting for ranks 0, 3
 *
 * and returns HALO_ERR_TIMEOUT.  The requests are then abandoned: the peers
 * cannot be trusted to finish them, so the caller must not agree on status
 * (halo_mpi_agree returns at once for it) and main ends the job with
 * MPI_Abort.
 *
 * The position (phase, epoch, layer) is set by the code that knows it with
 * halo_watch_where.  State is per process: one communicator, one thread.
 */
#ifndef HALO_WATCHDOG_H
#define HALO_WATCHDOG_H

#include <mpi.h>
#include <stdint.h>

#include "halo-status.h"

typedef struct halo_watch_options {
  double timeout_s; /* > 0: the watchdog's timeout; 0: off */
  /* Test-only fault injection (halo_watch_fault_stall): with `stall` set,
   * rank stall_rank sleeps at the start of epoch stall_epoch. */
  int stall;
  int stall_rank;
  int64_t stall_epoch;
} halo_watch_options;

/* Sets the watchdog up for waits over `comm` (whose size is reported for
 * collectives) with the options *o (copied). Local. */
void halo_watch_init(MPI_Comm comm, const halo_watch_options *o);

/* The configured timeout; 0 when off. Local. */
double halo_watch_timeout(void);

/* Records where this rank is, for the report.  `phase` must be a string
 * literal (it is kept, not copied); epoch or layer < 0 means none. Local. */
void halo_watch_where(const char *phase, int64_t epoch, int layer);

/* Sets the phase and layer, keeping the epoch (for code below the epoch
 * loop that does not know it). Local. */
void halo_watch_layer(const char *phase, int layer);

/* Where halo_watch_layer last said this rank is (--profile's cells). Local. */
void halo_watch_get(const char **phase, int *layer);

/* Waits for `n` requests.  `peers[i]` is the rank that request i waits on,
 * or NULL for a collective over the whole communicator.  `what` names the
 * wait in the report ("the halo exchange").  Returns HALO_OK, HALO_ERR_MPI
 * (logged) or HALO_ERR_TIMEOUT (logged). Local. */
halo_status halo_watch_waitall(int n, MPI_Request *reqs, const int *peers, const char *what);

/* MPI_Allreduce through a nonblocking MPI_Iallreduce and the watchdog; on
 * a communicator of one rank, a copy (the exact path's bounds and sums
 * cross twice a layer, for nothing at P = 1). Collective. */
halo_status halo_watch_allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm, const char *what);

/* MPI_Barrier through a nonblocking MPI_Ibarrier and the watchdog.
 * Collective. */
halo_status halo_watch_barrier(MPI_Comm comm, const char *what);

/* Test-only fault injection.  When halo_watch_init's options ask for a
 * stall of rank `rank` at `epoch` (halo-train takes them from
 * HALO_FAULT_STALL=RANK:EPOCH), says so in one warning line and sleeps for
 * an hour (or until killed), so that its peers' watchdogs fire.  The
 * trainer calls it at the start of each epoch, and with the last epoch + 1
 * after the loop, before the final memory measurement.  Does nothing
 * otherwise.  Not a user feature. Local. */
void halo_watch_fault_stall(int rank, int64_t epoch);

#endif /* HALO_WATCHDOG_H */
