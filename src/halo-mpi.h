/* MPI helpers of the runtime: collective status agreement and node facts.
 *
 * Failures are collective (docs/train.md, "Failures"): at every phase
 * boundary (load, plan, train) all ranks call halo_mpi_agree with their own
 * status, and all of them stop when any of them failed, so no rank is left
 * waiting in a collective that a failed peer never enters.
 */
#ifndef HALO_MPI_H
#define HALO_MPI_H

#include <mpi.h>

#include "halo-status.h"

/* Checks an MPI return code; on failure logs the call and MPI's message,
 * stores HALO_ERR_MPI in `st` and jumps to `done`. Communicators used with it
 * must have MPI_ERRORS_RETURN set. */
#define HALO_MPI(call)                      \
  do {                                      \
    int halo__rc = (call);                  \
    if (halo__rc != MPI_SUCCESS) {          \
      st = halo_mpi_error(halo__rc, #call); \
      goto done;                            \
    }                                       \
  } while (0)

/* Logs "CALL failed: MPI's message" and returns HALO_ERR_MPI. Local. */
halo_status halo_mpi_error(int rc, const char *call);

/* The minimum of every rank's `local` status.  A rank that succeeded but
 * learns that another failed gets HALO_ERR_PEER (and logs nothing: the
 * failed rank already named the cause).  When the allreduce itself fails,
 * HALO_ERR_MPI; when the watchdog (halo-watchdog.h) gives up on it,
 * HALO_ERR_TIMEOUT.  A local HALO_ERR_TIMEOUT or HALO_ERR_MPI is returned at
 * once without a collective: the communicator is no longer trusted and main
 * aborts the job.  Once an agreement on `comm` has failed, later calls
 * return at once too (every rank knows), so phases may nest their
 * agreements; the mark lasts as long as `comm` (a caller that wants to go
 * on after a failure uses a fresh MPI_Comm_dup). Collective until an
 * agreement fails. */
halo_status halo_mpi_agree(MPI_Comm comm, halo_status local);

/* halo_mpi_agree for a phase whose errors were held (halo_log_hold) into
 * `line`: of the ranks that failed, the lowest prints its line, with how
 * many others failed too, so that a fault every rank meets (parts of
 * another run, say) reads as one line.  Collective until an agreement
 * fails. */
halo_status halo_mpi_agree_first(MPI_Comm comm, halo_status local, const char *line);

/* Number of ranks of `comm` on this rank's node (shared-memory domain).
 * Collective. */
int halo_mpi_local_ranks(MPI_Comm comm);

/* This rank's index among the ranks of `comm` on its node: Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK when mpirun sets it and `comm` is
 * MPI_COMM_WORLD or a dup of it (the number follows mpirun's mapping),
 * otherwise the rank in the node's shared-memory communicator.
 * Collective. */
int halo_mpi_local_rank(MPI_Comm comm);

/* 1 when the MPI library says, at build and at run time, that it takes CUDA
 * device pointers (Open MPI's MPIX_Query_cuda_support); 0 otherwise. Local. */
int halo_mpi_cuda_aware(void);

/* Threads each rank should use by default: the cores this rank may run on
 * (halo_mpi_allowed_cores) divided among the ranks on the node, at least 1.
 * Collective. */
int halo_mpi_default_threads(MPI_Comm comm);

/* The cores this process may run on: its affinity mask (a cpuset under
 * Slurm, taskset, or mpirun's binding), else the node's online cores.
 * Local. */
int halo_mpi_allowed_cores(void);

/* How mpirun's binding fits `threads` per rank, the same on every rank
 * except the node's counts, which are the calling rank's. */
typedef struct halo_mpi_binding {
  int shared;      /* 1: a rank has more threads than cores it may run on (they share them) */
  int idle;        /* 1: ranks held to one core each leave cores of their node idle */
  long node_cores; /* cores online on this rank's node */
  int node_ranks;  /* ranks on this rank's node */
} halo_mpi_binding;

/* Finds whether mpirun's binding and `threads` per rank fit, for the
 * program to warn about (Open MPI binds each rank to one core when -np <=
 * 2).  Collective. */
void halo_mpi_check_binding(MPI_Comm comm, int threads, halo_mpi_binding *out);

#endif /* HALO_MPI_H */
