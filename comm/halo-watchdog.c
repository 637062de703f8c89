#include "halo-watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halo-mpi-check.h"

/* Per process: the trainer has one communicator and waits from one thread. */
static struct {
  MPI_Comm comm;
  double timeout;
  const char *phase;
  int64_t epoch;
  int layer;
  MPI_Comm collective; /* the communicator of the collective being waited for */
  int stall;           /* halo_watch_options' fault injection */
  int stall_rank;
  int64_t stall_epoch;
} watch = {.comm = MPI_COMM_NULL,
           .phase = "set-up",
           .epoch = -1,
           .layer = -1,
           .collective = MPI_COMM_NULL};

void halo_watch_init(MPI_Comm comm, const halo_watch_options *o) {
  watch.comm = comm;
  watch.timeout = o->timeout_s > 0 ? o->timeout_s : 0;
  watch.stall = o->stall;
  watch.stall_rank = o->stall_rank;
  watch.stall_epoch = o->stall_epoch;
}

double halo_watch_timeout(void) { return watch.timeout; }

void halo_watch_where(const char *phase, int64_t epoch, int layer) {
  watch.phase = phase;
  watch.epoch = epoch;
  watch.layer = layer;
}

void halo_watch_layer(const char *phase, int layer) {
  watch.phase = phase;
  watch.layer = layer;
}

void halo_watch_get(const char **phase, int *layer) {
  *phase = watch.phase;
  *layer = watch.layer;
}

/* "ranks 0, 3" from the peers of the requests still pending. */
static void pending_peers(int n, const MPI_Request *reqs, const int *peers, char *out,
                          size_t size) {
  size_t len = 0;
  int listed = 0, last = -1;
  out[0] = '\0';
  for (int i = 0; i < n && len + 16 < size; i++) {
    if (reqs[i] == MPI_REQUEST_NULL || peers[i] == last) continue;
    /* A peer has a send and a receive; name it once. */
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = reqs[j] != MPI_REQUEST_NULL && peers[j] == peers[i];
    if (seen) continue;
    len += (size_t)snprintf(out + len, size - len, "%s%d", listed ? ", " : "", peers[i]);
    listed++;
    last = peers[i];
  }
  if (listed == 0) snprintf(out, size, "no rank (all requests done)");
}

halo_status halo_watch_waitall(int n, MPI_Request *reqs, const int *peers, const char *what) {
  halo_status st = HALO_OK;
  if (watch.timeout <= 0) {
    HALO_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
    goto done;
  }
  double start = MPI_Wtime(), last_progress = start;
  const struct timespec nap = {.tv_sec = 0, .tv_nsec = 20000};
  for (int polls = 0;; polls++) {
    int pending = 0, progressed = 0;
    for (int i = 0; i < n; i++) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      HALO_MPI(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE));
      if (flag) {
        reqs[i] = MPI_REQUEST_NULL;
        progressed = 1;
      } else {
        pending++;
      }
    }
    if (!pending) break;
    double now = MPI_Wtime();
    if (progressed) last_progress = now;
    if (now - last_progress > watch.timeout) {
      char who[256];
      int size = 0;
      if (peers) {
        pending_peers(n, reqs, peers, who, sizeof who);
      } else {
        MPI_Comm_size(watch.collective != MPI_COMM_NULL ? watch.collective : watch.comm, &size);
        snprintf(who, sizeof who, "the other %d ranks (a collective)", size - 1);
      }
      char where[96];
      int k = snprintf(where, sizeof where, "phase %s", watch.phase);
      if (watch.epoch >= 0)
        k += snprintf(where + k, sizeof where - (size_t)k, ", epoch %lld", (long long)watch.epoch);
      if (watch.layer >= 0)
        snprintf(where + k, sizeof where - (size_t)k, ", layer %d", watch.layer);
      HALO_FAIL(HALO_ERR_TIMEOUT, "watchdog: no progress for %.1f s in %s (%s); waiting for %s%s",
                now - last_progress, what, where, peers ? "ranks " : "", who);
    }
    /* Spin briefly for latency, then poll gently: a stalled peer may take
     * minutes, and the cores belong to the ranks that still compute. */
    if (polls > 1000) nanosleep(&nap, NULL);
  }
done:
  return st;
}

halo_status halo_watch_allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm, const char *what) {
  halo_status st = HALO_OK;
  int size = 0;
  HALO_MPI(MPI_Comm_size(comm, &size));
  if (size == 1) { /* nothing to wait for: the reduction of one rank is its own values */
    int bytes = 0;
    MPI_Aint lb = 0, extent = 0; /* a pair type (MPI_DOUBLE_INT) has holes: extent > size */
    HALO_MPI(MPI_Type_size(type, &bytes));
    HALO_MPI(MPI_Type_get_extent(type, &lb, &extent));
    if (send != MPI_IN_PLACE && count > 0)
      memmove((char *)recv + lb, (const char *)send + lb,
              (size_t)((MPI_Aint)(count - 1) * extent + bytes));
    goto done;
  }
  if (watch.timeout <= 0) {
    HALO_MPI(MPI_Allreduce(send, recv, count, type, op, comm));
    goto done;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  HALO_MPI(MPI_Iallreduce(send, recv, count, type, op, comm, &req));
  watch.collective = comm;
  st = halo_watch_waitall(1, &req, NULL, what);
  watch.collective = MPI_COMM_NULL;
done:
  return st;
}

halo_status halo_watch_barrier(MPI_Comm comm, const char *what) {
  halo_status st = HALO_OK;
  if (watch.timeout <= 0) {
    HALO_MPI(MPI_Barrier(comm));
    goto done;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  HALO_MPI(MPI_Ibarrier(comm, &req));
  watch.collective = comm;
  st = halo_watch_waitall(1, &req, NULL, what);
  watch.collective = MPI_COMM_NULL;
done:
  return st;
}

void halo_watch_fault_stall(int rank, int64_t epoch) {
  if (!watch.stall || watch.stall_rank != rank || watch.stall_epoch != epoch) return;
  halo_log_warn("fault hook: stalling at epoch %lld (a test hook)", (long long)epoch);
  const struct timespec hour = {.tv_sec = 3600, .tv_nsec = 0};
  nanosleep(&hour, NULL);
}
