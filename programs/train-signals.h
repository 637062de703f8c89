/* halo-train's preemption signals (private to programs/): SIGTERM, which
 * SLURM and Kubernetes send before they kill a job, and SIGUSR1, which
 * `sbatch --signal=USR1@T` sends and mpirun forwards to every rank.
 *
 * A caught signal does not stop the rank where it is: the epoch loop asks,
 * after each epoch, whether any rank caught one (one small allreduce), and
 * then every rank stops at that same epoch boundary, saves a checkpoint
 * when --checkpoint is set, closes the metrics file and exits with
 * 128 + the signal's number (143 for SIGTERM, 138 for SIGUSR1).  A second
 * SIGTERM before that ends the process at once, as the default action
 * would (SIGINT keeps its default).  docs/train.md ("Preemption")
 * describes it for users.
 */
#ifndef HALO_TRAIN_SIGNALS_H
#define HALO_TRAIN_SIGNALS_H

#include <mpi.h>

#include "halo-status.h"

/* Catches SIGTERM and SIGUSR1 from now on. Local. */
void train_signals_install(void);

/* *signo = the largest signal number any rank has caught, 0 when none,
 * and *failed = 1 when any rank passed `failed` (a metrics write that
 * failed on rank 0), in the same allreduce. Collective (one MPI_Allreduce
 * through the watchdog). */
halo_status train_signals_agree(MPI_Comm comm, int failed, int *signo, int *any_failed);

/* "SIGTERM" or "SIGUSR1" (or "signal N"); a static string. Local. */
const char *train_signal_name(int signo);

#endif /* HALO_TRAIN_SIGNALS_H */
