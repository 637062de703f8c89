/* MPI helpers of halo-train and the distributed halo-partition: collective
 * status agreement and node facts (comm/, below partition/ and the
 * runtime).  HALO_MPI and halo_mpi_error come with this header
 * (halo-mpi-check.h).
 *
 * Failures are collective (docs/train.md, "Failures"): at every phase
 * boundary (load, plan, train) all ranks call halo_mpi_agree with their own
 * status, and all of them stop when any of them failed, so no rank is left
 * waiting in a collective that a failed peer never enters.
 */
#ifndef HALO_MPI_H
#define HALO_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "halo-mpi-check.h"
#include "halo-status.h"

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

/* halo_mpi_agree for the steps inside a phase that its caller agrees on
 * again, with halo_mpi_agree_first (the distributed partitioner's phases:
 * its coarsening, PT-Scotch, the routes).  It does not mark `comm` when the
 * agreement fails, so that the phase's own agreement still meets every
 * rank and the lowest failed rank prints its held line once, with how many
 * others failed.  Collective until an agreement fails. */
halo_status halo_mpi_agree_within(MPI_Comm comm, halo_status local);

/* halo_mpi_agree for a phase whose errors were held (halo_log_hold) into
 * `line`: of the ranks that failed, the lowest prints its line, with how
 * many others failed too, so that a fault every rank meets (parts of
 * another run, say) reads as one line.  Collective until an agreement
 * fails. */
halo_status halo_mpi_agree_first(MPI_Comm comm, halo_status local, const char *line);

/* halo_mpi_agree_first where the failed rank with the smallest `where`
 * prints (the lowest of those with the same): where is the failure's place
 * in the input (a line of a file read in pieces, say), so that the line
 * printed is the one a sequential reader would meet first.  Collective
 * until an agreement fails. */
halo_status halo_mpi_agree_earliest(MPI_Comm comm, halo_status local, const char *line,
                                    int64_t where);

/* MPI_Bcast of `count` floats from `root`, in pieces of at most 2^30, so
 * that a count past MPI's int (a checkpoint's parameters, say) crosses
 * whole. Collective. */
halo_status halo_mpi_bcast_floats(float *buf, int64_t count, int root, MPI_Comm comm);

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

/* What halo-train tells the user at start-up about its ranks, cores and
 * threads. */
typedef enum halo_mpi_advice {
  HALO_MPI_ADVICE_NONE = 0,      /* nothing to say */
  HALO_MPI_ADVICE_FEWER_THREADS, /* a rank runs more threads than it has cores */
  HALO_MPI_ADVICE_OVERSUBSCRIBED /* a node runs more ranks than it has cores */
} halo_mpi_advice;

/* The advice for one rank, of `ranks_on_node` ranks on a node with
 * `node_cores` cores online, running `threads` threads on the
 * `allowed_cores` its affinity mask holds:
 *
 *   OVERSUBSCRIBED  when ranks_on_node > node_cores (the ranks take turns
 *                   on the cores, and every epoch waits for the slowest);
 *   FEWER_THREADS   else when threads > allowed_cores, or when
 *                   ranks_on_node · threads > node_cores;
 *   NONE            otherwise.
 *
 * It never asks for more threads: a rank that has as many threads as cores
 * (one thread on the one core of mpirun's default binding, say) gets NONE
 * even when other cores of the node idle, since 2 threads per rank were
 * measured 2.7x slower than 1 on Cora.  *threads_hint (may be NULL) gets
 * the threads per rank that fit: min(allowed_cores, node_cores /
 * ranks_on_node), at least 1.  Local; pure. */
halo_mpi_advice halo_mpi_advise(int ranks_on_node, long node_cores, int allowed_cores, int threads,
                                int *threads_hint);

/* The start-up advice of the rank that needs it most (the lowest such
 * rank), the same on every rank, with that rank's figures. */
typedef struct halo_mpi_binding {
  halo_mpi_advice advice;
  int rank;          /* the rank the figures are from */
  long node_cores;   /* cores online on its node */
  int node_ranks;    /* ranks on its node */
  int allowed_cores; /* cores its affinity mask holds */
  int threads;       /* threads per rank */
  int threads_hint;  /* threads per rank that fit (halo_mpi_advise) */
} halo_mpi_binding;

/* Finds the advice for `threads` per rank over the ranks of `comm`, with
 * halo_mpi_advise on each rank.  Collective. */
void halo_mpi_check_binding(MPI_Comm comm, int threads, halo_mpi_binding *out);

#endif /* HALO_MPI_H */
