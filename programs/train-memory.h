/* halo-train's memory admission (private to programs/): the check before
 * the model allocates, the measurement of what it took, and the pools of
 * memory that ranks share.
 *
 * A pool is the memory a set of ranks allocates from: its node's RAM, or,
 * with --device cuda, one GPU's memory (ranks on the same PCI location).
 * Predictions and uses are summed over a pool, never over the job, since
 * only the ranks of one pool compete for its bytes.  docs/train.md
 * ("Failures") describes the check and the "memory:" line it leads to.
 */
#ifndef HALO_TRAIN_MEMORY_H
#define HALO_TRAIN_MEMORY_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-net.h"
#include "halo-shard.h"
#include "halo-status.h"

typedef struct train_memory {
  MPI_Comm pool;     /* the ranks sharing this rank's memory (MPI_COMM_NULL before the check) */
  int device;        /* 1: the pool is a GPU's memory, named by pool_id */
  int pool_id;       /* halo_backend_mem_available's id of that memory */
  int64_t predicted; /* Σ over the pool: what the model takes, predicted */
  int64_t base;      /* at the check: the device's free bytes, or this process's resident bytes */
  int64_t used;      /* what the model took, the most measured; -1 when unknown */
} train_memory;

/* The pool whose prediction is tightest (the least predicted per byte
 * used), for rank 0's "memory:" line and the summary's JSON. */
typedef struct train_memory_report {
  int64_t used;      /* -1: a rank could not tell */
  int64_t predicted; /* the same pool's prediction */
  int device;        /* the pool's GPU, or -1: a node's RAM */
  int ranks;         /* ranks in that pool */
} train_memory_report;

/* Refuses, before the model allocates, a part whose model does not fit in
 * what its memory has left: the node's RAM, or with a GPU backend its
 * GPU's memory and, for the host copies besides, the node's RAM.  The ranks
 * that share a memory have their needs summed (halo_net_memory_estimate of
 * shard `s` under options `o`).  The lowest rank that does not fit says so;
 * every rank then returns HALO_ERR_NOMEM.  Fills *m: the pool and the
 * baseline that train_memory_measure compares with.  Collective over
 * `comm`. */
halo_status train_memory_check(train_memory *m, MPI_Comm comm, halo_backend *be,
                               const halo_shard *s, const halo_net_options *o);

/* What the model took of its pool's memory so far, into m->used (the most
 * seen): on a GPU, the free bytes gone since the check, read when every
 * rank of the pool has reached this point; on the host, the pool's ranks'
 * peaks of resident bytes above their baselines, summed.  -1 when a rank
 * cannot tell.  Through the watchdog.  Collective over the pool. */
halo_status train_memory_measure(train_memory *m, halo_backend *be);

/* The tightest pool's figures, on every rank.  Collective over `comm`. */
halo_status train_memory_gather(const train_memory *m, MPI_Comm comm, train_memory_report *out);

/* "cuda device 0000:1b:00": a GPU named by its PCI location, from the pool
 * id halo_backend_mem_available gives it (domain << 13 | bus << 5 |
 * device). Local. */
void train_memory_pool_name(const halo_backend *be, int pool_id, char *out, size_t size);

/* Frees the pool's communicator; accepts a train_memory never checked.
 * Collective over the pool. */
void train_memory_free(train_memory *m);

#endif /* HALO_TRAIN_MEMORY_H */
