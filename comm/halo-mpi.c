#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "halo-mpi.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif

#include "halo-watchdog.h"

/* The attribute that marks a communicator on which an agreement failed. */
static int failed_keyval = MPI_KEYVAL_INVALID;

static int agreement_failed(MPI_Comm comm) {
  int found = 0;
  void *value = NULL;
  if (failed_keyval == MPI_KEYVAL_INVALID) return 0;
  return MPI_Comm_get_attr(comm, failed_keyval, &value, &found) == MPI_SUCCESS && found;
}

static void mark_failed(MPI_Comm comm) {
  if (failed_keyval == MPI_KEYVAL_INVALID &&
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &failed_keyval,
                             NULL) != MPI_SUCCESS)
    return;
  (void)MPI_Comm_set_attr(comm, failed_keyval, NULL);
}

/* halo_mpi_agree, marking comm on a failure when `mark` is set. */
static halo_status agree(MPI_Comm comm, halo_status local, int mark) {
  /* After a timeout or an MPI failure the peers cannot be trusted to reach
   * the agreement: do not wait for them (main aborts the job). */
  if (local == HALO_ERR_TIMEOUT || local == HALO_ERR_MPI) return local;
  /* Every rank saw the failed agreement, so every rank returns here
   * without a collective: a caller that agrees again on a status an inner
   * call already agreed on (nested phases) cannot wait for a peer that is
   * on its way out. */
  if (agreement_failed(comm)) return local < 0 ? local : HALO_ERR_PEER;
  int mine = (int)local, all = 0;
  halo_status st =
      halo_watch_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm, "the status agreement");
  if (st != HALO_OK) return st;
  if (all >= 0) return HALO_OK;
  if (mark) mark_failed(comm);
  return local < 0 ? local : HALO_ERR_PEER;
}

halo_status halo_mpi_agree(MPI_Comm comm, halo_status local) { return agree(comm, local, 1); }

halo_status halo_mpi_agree_within(MPI_Comm comm, halo_status local) {
  return agree(comm, local, 0);
}

halo_status halo_mpi_agree_first(MPI_Comm comm, halo_status local, const char *line) {
  return halo_mpi_agree_earliest(comm, local, line, 0);
}

halo_status halo_mpi_agree_earliest(MPI_Comm comm, halo_status local, const char *line,
                                    int64_t where) {
  const int failed = local < 0;
  if (local == HALO_ERR_TIMEOUT || local == HALO_ERR_MPI || agreement_failed(comm)) {
    /* No collective can be trusted: say it here. */
    if (failed && line && line[0]) fprintf(stderr, "%s\n", line);
    return halo_mpi_agree(comm, local);
  }
  int rank = 0, count = 0;
  MPI_Comm_rank(comm, &rank);
  /* A failed rank without a held line logged its own already.  MINLOC
   * keeps the lowest rank of equal places. */
  struct {
    long where;
    int rank;
  } mine = {failed && line && line[0] ? (long)where : LONG_MAX, rank}, first = {LONG_MAX, 0};
  _Static_assert(sizeof(long) == sizeof(int64_t), "MPI_LONG_INT carries an int64_t");
  halo_status st = halo_watch_allreduce(&mine, &first, 1, MPI_LONG_INT, MPI_MINLOC, comm,
                                        "the status agreement");
  if (st == HALO_OK)
    st = halo_watch_allreduce(&failed, &count, 1, MPI_INT, MPI_SUM, comm, "the status agreement");
  if (st != HALO_OK) {
    /* The job is about to be aborted: the cause must not go with it. */
    if (failed && line && line[0]) fprintf(stderr, "%s\n", line);
    return st;
  }
  if (first.where != LONG_MAX && rank == first.rank && line && line[0]) {
    if (count > 1)
      fprintf(stderr, "%s (%d other rank%s failed too)\n", line, count - 1, count > 2 ? "s" : "");
    else
      fprintf(stderr, "%s\n", line);
    fflush(stderr);
  }
  return halo_mpi_agree(comm, local);
}

int halo_mpi_local_ranks(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  int size = 1;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return 1;
  if (MPI_Comm_size(node, &size) != MPI_SUCCESS) size = 1;
  MPI_Comm_free(&node);
  return size > 0 ? size : 1;
}

int halo_mpi_local_rank(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  /* Split even when the variable is set: the call is collective either way. */
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    if (MPI_Comm_rank(node, &rank) != MPI_SUCCESS) rank = 0;
    MPI_Comm_free(&node);
  }
  /* Open MPI's number is about MPI_COMM_WORLD: use it for that or a dup. */
  int same = MPI_UNEQUAL;
  if (MPI_Comm_compare(comm, MPI_COMM_WORLD, &same) != MPI_SUCCESS) same = MPI_UNEQUAL;
  const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (env && *env && (same == MPI_IDENT || same == MPI_CONGRUENT)) {
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 0 && v < 1 << 20) rank = (int)v;
  }
  return rank;
}

int halo_mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

int halo_mpi_allowed_cores(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
    cores = CPU_COUNT(&allowed);
  return cores > 0 ? (int)cores : 1;
}

int halo_mpi_default_threads(MPI_Comm comm) {
  const int threads = halo_mpi_allowed_cores() / halo_mpi_local_ranks(comm);
  return threads > 0 ? threads : 1;
}

halo_mpi_advice halo_mpi_advise(int ranks_on_node, long node_cores, int allowed_cores, int threads,
                                int *threads_hint) {
  if (ranks_on_node < 1) ranks_on_node = 1;
  if (node_cores < 1) node_cores = 1;
  if (allowed_cores < 1) allowed_cores = 1;
  long fit = node_cores / ranks_on_node;
  if (fit > allowed_cores) fit = allowed_cores;
  if (fit < 1) fit = 1;
  if (threads_hint) *threads_hint = (int)fit;
  if (ranks_on_node > node_cores) return HALO_MPI_ADVICE_OVERSUBSCRIBED;
  if (threads > allowed_cores || (long)ranks_on_node * threads > node_cores)
    return HALO_MPI_ADVICE_FEWER_THREADS;
  return HALO_MPI_ADVICE_NONE;
}

void halo_mpi_check_binding(MPI_Comm comm, int threads, halo_mpi_binding *out) {
  halo_mpi_binding mine = {.threads = threads,
                           .allowed_cores = halo_mpi_allowed_cores(),
                           .node_cores = sysconf(_SC_NPROCESSORS_ONLN),
                           .node_ranks = halo_mpi_local_ranks(comm)};
  if (MPI_Comm_rank(comm, &mine.rank) != MPI_SUCCESS) mine.rank = 0;
  mine.advice = halo_mpi_advise(mine.node_ranks, mine.node_cores, mine.allowed_cores, threads,
                                &mine.threads_hint);
  /* The strongest advice, from the lowest rank that has it (MAXLOC keeps
   * the lowest index of equal values); that rank's figures go to all. */
  int key[2] = {(int)mine.advice, mine.rank}, best[2] = {key[0], key[1]};
  if (MPI_Allreduce(key, best, 1, MPI_2INT, MPI_MAXLOC, comm) != MPI_SUCCESS) {
    *out = mine;
    return;
  }
  const int root = best[1];
  long figures[7] = {mine.advice,        mine.rank,    mine.node_cores,  mine.node_ranks,
                     mine.allowed_cores, mine.threads, mine.threads_hint};
  if (MPI_Bcast(figures, 7, MPI_LONG, root, comm) != MPI_SUCCESS) {
    *out = mine;
    return;
  }
  *out = (halo_mpi_binding){.advice = (halo_mpi_advice)figures[0],
                            .rank = (int)figures[1],
                            .node_cores = figures[2],
                            .node_ranks = (int)figures[3],
                            .allowed_cores = (int)figures[4],
                            .threads = (int)figures[5],
                            .threads_hint = (int)figures[6]};
}

halo_status halo_mpi_bcast_floats(float *buf, int64_t count, int root, MPI_Comm comm) {
  halo_status st = HALO_OK;
  const int64_t piece = (int64_t)1 << 30;
  for (int64_t at = 0; at < count; at += piece) {
    const int n = (int)(count - at < piece ? count - at : piece);
    HALO_MPI(MPI_Bcast(buf + at, n, MPI_FLOAT, root, comm));
  }
done:
  return st;
}
