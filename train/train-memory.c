/* halo-train's memory admission: the check before the model allocates
 * (train_memory_check), the measurement after the first epoch and at the
 * end (train_memory_measure), and the pool whose prediction is tightest for
 * the report (train_memory_gather).  train-impl.h has the contracts. */
#include "train-impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "halo-memory.h"
#include "halo-mpi.h"
#include "halo-watchdog.h"

void halo_train_memory_pool_name(const halo_backend *be, int pool_id, char *out, size_t size) {
  snprintf(out, size, "%s device %04x:%02x:%02x", halo_backend_name(be), (pool_id >> 13) & 0xffff,
           (pool_id >> 5) & 0xff, pool_id & 0x1f);
}

halo_status train_memory_check(train_memory *m, MPI_Comm comm, halo_backend *be,
                               const halo_shard *s, const halo_net_options *o) {
  halo_status st = HALO_OK;
  MPI_Comm node = MPI_COMM_NULL;
  halo_net_input input;
  halo_net_memory est = {0};
  int pool = 0, rank = 0, size = 1;
  *m = (train_memory){.pool = MPI_COMM_NULL, .used = -1, .base = -1};
  m->device = strcmp(halo_backend_name(be), "cpu") != 0;
  HALO_MPI(MPI_Comm_rank(comm, &rank));
  HALO_MPI(MPI_Comm_size(comm, &size));
  /* Widths halo_net_create refuses fail alike on every rank, and it reports
   * them; a failed collective ends the job. */
  st = halo_net_input_layout(comm, s, o, &input);
  if (st == HALO_ERR_MPI) goto done;
  if (st == HALO_OK) (void)halo_net_memory_estimate(s, o, m->device, &input, &est);
  st = HALO_OK;
  /* Clamped, so that no sum over the ranks overflows. */
  const int64_t cap = INT64_MAX / 2 / size;
  const int64_t backend = est.backend < cap ? est.backend : cap;
  const int64_t host = est.host < cap ? est.host : cap;
  const int64_t need = m->device ? backend : backend + host;
  int64_t host_sum = 0;

  (void)halo_backend_mem_available(be, &pool);
  HALO_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  /* Colour 0: memory of unknown size (nothing to check); device d: d + 1. */
  HALO_MPI(MPI_Comm_split(node, pool < 0 ? 0 : pool + 1, 0, &m->pool));
  HALO_MPI(MPI_Allreduce(&need, &m->predicted, 1, MPI_INT64_T, MPI_SUM, m->pool));
  if (m->device) HALO_MPI(MPI_Allreduce(&host, &host_sum, 1, MPI_INT64_T, MPI_SUM, node));
  /* Read after every rank of the pool holds its CUDA context. */
  HALO_MPI(MPI_Barrier(m->pool));
  const int64_t avail = halo_backend_mem_available(be, &pool);
  const int64_t host_avail = m->device ? halo_memory_available() : -1;
  m->pool_id = pool;
  if (m->device)
    m->base = avail;
  else
    m->base = halo_memory_peak_reset() == 0 ? halo_memory_resident() : -1;
  const int fits_pool = avail < 0 || m->predicted <= avail;
  const int fits_host = host_avail < 0 || host_sum <= host_avail;
  const int fits = fits_pool && fits_host;
  int mine[2] = {fits ? INT32_MAX : rank, !fits}, first = 0, count = 0;
  HALO_MPI(MPI_Allreduce(&mine[0], &first, 1, MPI_INT, MPI_MIN, comm));
  HALO_MPI(MPI_Allreduce(&mine[1], &count, 1, MPI_INT, MPI_SUM, comm));
  if (count == 0) goto done;
  st = HALO_ERR_NOMEM;
  if (first == rank) {
    char b0[32], b1[32], b2[32];
    char where[48] = "memory";
    if (m->device && fits_pool)
      snprintf(where, sizeof where, "node's memory besides their GPUs");
    else if (m->device)
      halo_train_memory_pool_name(be, pool, where, sizeof where);
    halo_log_error(
        "rank %d needs about %s for its part's model (%s with the other ranks that "
        "share its %s) but %s is available%s; run on more nodes or with more parts",
        rank, halo_memory_str(fits_pool ? host : need, b0, sizeof b0),
        halo_memory_str(fits_pool ? host_sum : m->predicted, b1, sizeof b1), where,
        halo_memory_str(fits_pool ? host_avail : avail, b2, sizeof b2),
        count > 1 ? " (other ranks fall short too)" : "");
  }
done:
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  return st;
}

halo_status train_memory_measure(train_memory *m, halo_backend *be) {
  halo_status st = HALO_OK;
  int64_t used = -1, low = 0;
  int pool = 0;
  halo_watch_layer("memory measurement", -1);
  if (m->device) {
    HALO_TRY(halo_watch_barrier(m->pool, "the memory measurement"));
    const int64_t free_now = halo_backend_mem_available(be, &pool);
    if (free_now >= 0 && m->base >= 0) used = m->base - free_now;
  } else {
    const int64_t peak = halo_memory_peak();
    if (peak >= 0 && m->base >= 0) used = peak - m->base;
  }
  HALO_TRY(halo_watch_allreduce(&used, &low, 1, MPI_INT64_T, MPI_MIN, m->pool,
                                "the memory measurement"));
  /* One device is seen alike by its ranks; the host's processes add up. */
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, &used, 1, MPI_INT64_T, m->device ? MPI_MAX : MPI_SUM,
                                m->pool, "the memory measurement"));
  if (low < 0) used = -1;
  if (used > m->used) m->used = used;
done:
  return st;
}

halo_status train_memory_gather(const train_memory *m, MPI_Comm comm,
                                halo_train_memory_report *out) {
  halo_status st = HALO_OK;
  int64_t low = 0;
  int ranks = 0, rank = 0;
  struct {
    double ratio;
    int rank;
  } mine = {m->used > 0 ? (double)m->predicted / (double)m->used : HUGE_VAL, 0}, tightest;
  const char *what = "the memory report";
  *out = (halo_train_memory_report){.used = -1, .device = -1};
  halo_watch_layer("memory report", -1);
  HALO_MPI(MPI_Comm_rank(comm, &rank));
  mine.rank = rank;
  HALO_MPI(MPI_Comm_size(m->pool, &ranks));
  HALO_TRY(halo_watch_allreduce(&m->used, &low, 1, MPI_INT64_T, MPI_MIN, comm, what));
  HALO_TRY(halo_watch_allreduce(&mine, &tightest, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm, what));
  /* The tightest rank's figures reach every rank: the others offer the
   * least int64_t, and the maximum keeps the tightest rank's. */
  int64_t figures[4] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
  if (tightest.rank == rank) {
    figures[0] = m->used;
    figures[1] = m->predicted;
    figures[2] = m->device ? m->pool_id : -1;
    figures[3] = ranks;
  }
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, figures, 4, MPI_INT64_T, MPI_MAX, comm, what));
  out->used = low < 0 ? -1 : figures[0];
  out->predicted = figures[1];
  out->device = (int)figures[2];
  out->ranks = (int)figures[3];
done:
  return st;
}

void train_memory_free(train_memory *m) {
  if (m->pool != MPI_COMM_NULL) MPI_Comm_free(&m->pool);
}
