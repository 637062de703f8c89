/* Halo exchange over nonblocking point-to-point messages.
 *
 * One MPI_Isend and one MPI_Irecv per neighbour and exchange.  Neighbourhood
 * collectives (MPI_Ineighbor_alltoallv) would do the same work, but Open MPI
 * implements them over the same point-to-point layer, and explicit messages
 * let a backend receive straight into the halo rows.
 *
 * Where the rows travel from and to depends on the backend:
 *   host     send rows are packed into a host buffer; receives land in place;
 *   device   (CUDA-aware MPI) the same, with device pointers, after the pack
 *            has finished on the device;
 *   staged   (device, MPI without device support) packed rows are copied to
 *            a pinned host buffer, receives land in another one and are
 *            copied up to the halo rows at the end.
 * A device backend's interior SpMM is enqueued between begin and end, so it
 * runs on the GPU while end waits for the messages.  The bytes counted are
 * those handed to MPI, the same in every mode.
 *
 * Staged, with a copy stream (the backend's copy_* slots; without them the
 * copies are synchronous download/upload calls in begin and end):
 *
 *   begin   C: wait for the copies of the last exchange   (host_recv free)
 *           compute: pack                     send_buf <- owned rows
 *           copy:    wait for compute         (fence F1, after the pack)
 *           copy:    send_buf -> host_send
 *           MPI_Irecv into host_recv
 *   caller  compute: interior SpMM            (reads owned rows only)
 *   end     C: wait for the copies            (the download is complete)
 *           MPI_Isend from host_send; wait for every message
 *           copy:    host_recv -> halo rows of `rows`
 *           compute: wait for the copies      (fence F2)
 *   caller  compute: boundary SpMM            (reads the halo rows)
 *
 * ("C:" is the host waiting for the copy stream, copy_synchronize.)  Why each
 * access is ordered:
 *   - the download reads send_buf after the pack wrote it: F1;
 *   - MPI reads host_send after the download wrote it: the host waits for
 *     the copy stream in end before MPI_Isend;
 *   - the upload reads host_recv after MPI wrote it: it is queued only after
 *     the host's MPI wait returned;
 *   - the boundary SpMM, and all later compute work, read the halo rows
 *     after the upload wrote them: F2;
 *   - the upload writes halo rows that compute work queued before this
 *     begin may still read (the same buffer in an earlier layer): the copy
 *     stream runs the upload after F1, so after all of that work; work
 *     queued between begin and end reads no halo row (interior rows have
 *     no halo column, and `rows`' halo rows are off limits by contract);
 *   - the next exchange's MPI_Irecv writes host_recv after this upload read
 *     it: the next begin first waits on the host for the copy stream;
 *   - the next download writes host_send after MPI read it: MPI_Waitall in
 *     end returns only when the sends are complete;
 *   - the next pack writes send_buf after this download read it: the host
 *     waited for the download in end, before the next pack is queued.
 * The sends are posted in end rather than begin so that begin returns at
 * once and the interior SpMM is queued while the download runs; nothing
 * is lost, since MPI makes progress on these messages only inside MPI calls
 * of this thread, the first of which is in end anyway.  No call waits for
 * the whole device: the host waits for the copy stream only, so the
 * interior SpMM overlaps the download, the MPI wait and the upload.
 *
 * Failures.  A failure of the pack (reported by copy_wait_compute) or of a
 * copy before the messages is kept, the messages are posted regardless (the
 * peers must not wait for rows that never come), and end reports it after
 * every message completed, as in the other modes; the trainer then agrees
 * on it.  A failed upload, or the fence after it, is returned by end.
 *
 * Stale slots (--halo-stale, host backend).  A slot's exchange k writes the
 * rows its exchange k-1 received into the halo rows, then posts exchange
 * k's messages from and into the slot's own buffers, with the slot's own
 * tag (EXCHANGE_TAG + 1 + slot), and returns; end waits for nothing.
 * Exchange k+1 of the slot waits for them first.  Why it is safe:
 *   - the slot's send buffer is rewritten only after its messages completed
 *     (exchange k+1 waits before it packs), and likewise its receive buffer;
 *   - messages of different slots, and the fresh exchanges between them
 *     (evaluation), never match each other: each has its tag, and one slot
 *     has at most one exchange in flight, so MPI's order on a (pair, tag)
 *     pairs exchange k with exchange k on every rank;
 *   - every rank posts a slot's exchange k in the same epoch, before any
 *     wait of that epoch, so a wait one epoch later never waits for a
 *     message its peer has not posted. */
#include "halo-exchange.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend-impl.h"
#include "halo-clock.h"
#include "halo-kernels.h"
#include "halo-mpi.h"
#include "halo-quant.h"
#include "halo-route.h"
#include "halo-sample.h"
#include "halo-watchdog.h"

/* Every exchange uses one tag: exchanges never overlap, and MPI keeps the
 * order of messages between a pair of ranks on one communicator and tag. */
enum { EXCHANGE_TAG = 7117 };

typedef enum { MODE_HOST, MODE_DEVICE, MODE_STAGED } exchange_mode;

typedef struct peer {
  int rank;
  int64_t send_off, send_rows; /* into the plan's packed send list */
  int64_t recv_off, recv_rows; /* halo rows, relative to n_owned */
} peer;

/* A stale slot.  Its messages carry the rows of the epoch that posted
 * them; the slot's next begin waits for them, and the layer then reads them
 * (smoothed) while that epoch's rows travel. */
typedef struct stale_slot {
  uint8_t *send;         /* send_total × row_max bytes: the packed rows in flight */
  uint8_t *recv;         /* n_halo × row_max bytes: where the peers' rows land */
  float *rows;           /* n_halo × max_cols: the rows the layer reads next */
  MPI_Request *requests; /* size 2·npeers: receives, then sends */
  int32_t cols;          /* the exchange's width; 0 until a fresh exchange seeds the slot */
  int prec;              /* the precision of the messages in flight */
  int pending;           /* messages in flight */
} stale_slot;

struct halo_exchange {
  MPI_Comm comm;
  halo_backend *be;
  exchange_mode mode;
  int64_t n_owned, n_halo;
  int32_t max_cols;
  int npeers;
  peer *peers;       /* size npeers */
  peer *cover;       /* size npeers: the cover's layout (halo_exchange_cover_set), or NULL */
  const peer *layout; /* the exchange in flight's: peers or cover */
  int32_t *send_idx; /* backend copy of the shard's send_idx */
  int64_t *send_gid; /* size send_total: the global id of each send row (the rounding's key) */
  halo_buf send_idx_buf;
  int64_t send_total;
  halo_buf send_buf;     /* send_total × max_cols, backend memory */
  float *host_send;      /* send_total × max_cols host staging (MODE_STAGED) */
  float *host_recv;      /* n_halo × max_cols host staging (MODE_STAGED) */
  int copy_stream;       /* MODE_STAGED through the backend's copy_* slots */
  /* Low-bit exchange (host backend): rows travel packed (halo-quant.h). */
  uint8_t *quant_send; /* send_total × quant_row_max bytes, or NULL: not reserved */
  uint8_t *quant_recv; /* n_halo × quant_row_max bytes */
  int64_t quant_row_max;
  /* Boundary sampling (host backend): the rows this epoch's draw keeps,
   * peer by peer in the order of the send and receive lists. */
  int sampling;           /* the next forward exchanges send the kept rows only */
  float sample_scale;     /* 1/p */
  int64_t *halo_gid;      /* n_halo: the global id of each halo row, or NULL: not reserved */
  int32_t *kept_send;     /* send_total: the kept send rows' owned rows */
  int64_t *kept_send_gid; /* send_total: their global ids */
  int32_t *kept_halo;     /* n_halo: the kept halo rows, from 0 */
  int64_t *kept_halo_gid; /* n_halo: their global ids */
  int64_t *kept_count;    /* 4·npeers: sent to, received from, their offsets */
  int64_t kept_total[2];  /* kept rows sent and received in all */
  float *sample_rows;     /* n_halo × max_cols: kept rows in flight */
  int prec;     /* the precision of the next exchanges (halo_precision) */
  uint64_t key; /* their rounding's key */
  /* Stale exchange (--halo-stale; host backend): one slot per layer and
   * direction, whose messages stay in flight until the slot's next
   * exchange, one epoch later. */
  stale_slot *slots; /* size nslots, or NULL: not reserved */
  int nslots;
  float momentum;    /* gamma: the rows read are gamma·old + (1 - gamma)·new */
  int slot_next;     /* the slot of the next begin, or -1: a fresh exchange */
  stale_slot *slot;  /* the slot of the exchange in flight: stale (slot->cols
                        set before the begin) or seeding (set by end) */
  int slot_stale;    /* the exchange in flight read the slot's rows: end waits for nothing */
  MPI_Request *requests; /* size 2·npeers: receives, then sends */
  int *request_peer;     /* size 2·npeers: the rank of each request, for the watchdog */
  /* the exchange in flight */
  float *rows;
  int32_t cols;
  int active;
  halo_status failed; /* a local failure of begin, reported by end */
  halo_exchange_stats stats;
};

/* The backend fills all five copy-stream slots or none (halo-backend-impl.h). */
static int has_copy_stream(const halo_backend_ops *ops) {
  return ops->copy_wait_compute && ops->copy_download && ops->copy_upload &&
         ops->copy_synchronize && ops->compute_wait_copy;
}

static exchange_mode mode_of(halo_backend *be) {
  if (be->ops->space == HALO_MEM_HOST) return MODE_HOST;
  return be->ops->mpi_takes_device && be->ops->mpi_takes_device(be) ? MODE_DEVICE : MODE_STAGED;
}

/* Checks the shard's send and receive lists on their own. Local. */
static halo_status check_lists(const halo_shard *s, int rank, int size) {
  halo_status st = HALO_OK;
  if (s->parts != size)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "part %d comes from a %d-part run but %d ranks run (a %d-part "
              "run needs %d ranks)",
              s->part, s->parts, size, s->parts, s->parts);
  if (s->part != rank) HALO_FAIL(HALO_ERR_MISMATCH, "rank %d was given part %d", rank, s->part);
  if (s->send_ptr[0] != 0 || s->recv_ptr[0] != 0)
    HALO_FAIL(HALO_ERR_CORRUPT, "part %d: send_ptr/recv_ptr do not start at 0", s->part);
  for (int q = 0; q < size; q++) {
    if (s->send_ptr[q + 1] < s->send_ptr[q] || s->recv_ptr[q + 1] < s->recv_ptr[q])
      HALO_FAIL(HALO_ERR_CORRUPT, "part %d: send_ptr/recv_ptr decrease at peer %d", s->part, q);
  }
  if (s->send_ptr[rank + 1] != s->send_ptr[rank] || s->recv_ptr[rank + 1] != s->recv_ptr[rank])
    HALO_FAIL(HALO_ERR_CORRUPT, "part %d lists itself as a peer", s->part);
  if (s->recv_ptr[size] != s->n_halo)
    HALO_FAIL(HALO_ERR_CORRUPT, "part %d: recv_ptr ends at %lld, but the part has %lld halo rows",
              s->part, (long long)s->recv_ptr[size], (long long)s->n_halo);
  for (int64_t k = 0; k < s->send_ptr[size]; k++)
    if (s->send_idx[k] < 0 || s->send_idx[k] >= s->n_owned)
      HALO_FAIL(HALO_ERR_CORRUPT, "part %d: send_idx[%lld] = %d is not an owned row (%lld owned)",
                s->part, (long long)k, s->send_idx[k], (long long)s->n_owned);
  for (int q = 0; q < size; q++)
    for (int64_t h = s->recv_ptr[q]; h < s->recv_ptr[q + 1]; h++)
      if (s->halo_owner[h] != q)
        HALO_FAIL(HALO_ERR_CORRUPT,
                  "part %d: halo row %lld is owned by part %d but sits in "
                  "part %d's receive range",
                  s->part, (long long)h, s->halo_owner[h], q);
done:
  return st;
}

/* Everything after the counts are known; local, so that its failure can be
 * agreed on before anyone exchanges. */

/* The bytes of a plan's buffers: the packed send rows' indices and values
 * (backend memory) and, staged through the host, the send and receive
 * copies. */
typedef struct plan_sizes {
  size_t idx, send, recv;
} plan_sizes;

static plan_sizes sizes_of(int64_t send_total, int64_t n_halo, int32_t max_cols) {
  return (plan_sizes){.idx = (size_t)send_total * sizeof(int32_t),
                      .send = (size_t)send_total * (size_t)max_cols * sizeof(float),
                      .recv = (size_t)n_halo * (size_t)max_cols * sizeof(float)};
}

void halo_exchange_memory(const halo_shard *s, int32_t max_cols, int staged,
                          int64_t (*page_round)(int64_t bytes), int64_t *backend, int64_t *host) {
  const plan_sizes sz = sizes_of(s->send_ptr[s->parts], s->n_halo, max_cols);
  *backend = page_round((int64_t)sz.idx) + page_round((int64_t)sz.send);
  *host = (staged ? (int64_t)(sz.send + sz.recv) : 0) +
          (int64_t)sizeof(int64_t) * (s->send_ptr[s->parts] > 0 ? s->send_ptr[s->parts] : 1);
}

/* The row of any precision is at most this wide (halo_exchange_precision_reserve). */
static int64_t quant_row_max(int32_t max_cols) {
  const int64_t i8 = halo_quant_row_bytes(HALO_PREC_INT8, max_cols);
  const int64_t f32 = halo_quant_row_bytes(HALO_PREC_FP32, max_cols);
  return i8 > f32 ? i8 : f32;
}

int64_t halo_exchange_precision_memory(const halo_shard *s, int32_t max_cols) {
  const int64_t send = s->send_ptr[s->parts] > 0 ? s->send_ptr[s->parts] : 1;
  const int64_t recv = s->n_halo > 0 ? s->n_halo : 1;
  return (send + recv) * quant_row_max(max_cols);
}

static halo_status plan_build(halo_backend *be, const halo_shard *s, int rank, int size,
                              int32_t max_cols, const int64_t *send_counts,
                              const int64_t *recv_counts, halo_exchange *p) {
  halo_status st = HALO_OK;
  const halo_backend_ops *ops = be->ops;
  p->be = be;
  p->slot_next = -1;
  p->mode = mode_of(be);
  p->copy_stream = p->mode == MODE_STAGED && has_copy_stream(ops);
  p->n_owned = s->n_owned;
  p->n_halo = s->n_halo;
  p->max_cols = max_cols;
  for (int q = 0; q < size; q++)
    if (send_counts[q] > 0 || recv_counts[q] > 0) p->npeers++;
  HALO_ALLOC(p->peers, p->npeers, "the peer list");
  HALO_ALLOC(p->requests, 2 * (size_t)p->npeers, "MPI requests");
  HALO_ALLOC(p->request_peer, 2 * (size_t)p->npeers, "MPI requests");
  for (int q = 0, i = 0; q < size; q++) {
    if (send_counts[q] == 0 && recv_counts[q] == 0) continue;
    p->peers[i++] = (peer){.rank = q,
                           .send_off = s->send_ptr[q],
                           .send_rows = send_counts[q],
                           .recv_off = s->recv_ptr[q],
                           .recv_rows = recv_counts[q]};
  }
  for (int i = 0; i < p->npeers; i++)
    p->request_peer[i] = p->request_peer[p->npeers + i] = p->peers[i].rank;
  p->send_total = s->send_ptr[size];
  /* MPI counts are int: one message carries at most INT_MAX floats. */
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    int64_t rows = q->send_rows > q->recv_rows ? q->send_rows : q->recv_rows;
    if (rows * (int64_t)max_cols > INT_MAX)
      HALO_FAIL(HALO_ERR_LIMIT,
                "part %d exchanges %lld rows of %d floats with part %d: more "
                "than one MPI message holds (INT_MAX elements)",
                rank, (long long)rows, max_cols, q->rank);
  }

  /* The packed send rows live in backend memory; a device backend also
   * needs host copies for MPI. */
  plan_sizes sz = sizes_of(p->send_total, p->n_halo, max_cols);
  size_t idx_bytes = sz.idx, send_bytes = sz.send;
  HALO_TRY(ops->buf_alloc(be, idx_bytes, &p->send_idx_buf));
  HALO_TRY(ops->buf_alloc(be, send_bytes, &p->send_buf));
  p->send_idx = p->send_idx_buf.data;
  HALO_ALLOC(p->send_gid, p->send_total > 0 ? (size_t)p->send_total : 1, "the send rows' ids");
  for (int64_t k = 0; k < p->send_total; k++) p->send_gid[k] = s->global_id[s->send_idx[k]];
  if (p->mode == MODE_HOST) {
    for (int64_t k = 0; k < p->send_total; k++) p->send_idx[k] = s->send_idx[k];
  } else {
    HALO_TRY(ops->upload(be, &p->send_idx_buf, 0, s->send_idx, idx_bytes));
  }
  if (p->mode == MODE_STAGED) {
    size_t recv_bytes = sz.recv;
    HALO_TRY(halo__backend_host_alloc(be, send_bytes, "halo send staging", (void **)&p->host_send));
    HALO_TRY(
        halo__backend_host_alloc(be, recv_bytes, "halo receive staging", (void **)&p->host_recv));
  }
done:
  return st;
}

halo_status halo_exchange_create(MPI_Comm comm, halo_backend *be, const halo_shard *s,
                                 int32_t max_cols, halo_exchange **out) {
  halo_status st = HALO_OK;
  halo_exchange *p = NULL;
  int64_t *send_counts = NULL, *recv_counts = NULL;
  int rank = 0, size = 1;
  *out = NULL;

  HALO_MPI(MPI_Comm_rank(comm, &rank));
  HALO_MPI(MPI_Comm_size(comm, &size));
  st = check_lists(s, rank, size);
  if (st == HALO_OK) {
    send_counts = calloc((size_t)size, sizeof *send_counts);
    recv_counts = calloc((size_t)size, sizeof *recv_counts);
    p = calloc(1, sizeof *p);
    if (!send_counts || !recv_counts || !p) {
      halo_log_error("out of memory allocating the exchange plan");
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(halo_mpi_agree(comm, st));

  /* Every pair must agree on the rows that cross: q's send count to us is
   * our receive count from q. */
  for (int q = 0; q < size; q++) send_counts[q] = s->send_ptr[q + 1] - s->send_ptr[q];
  HALO_TRY(halo_route_swap_counts(comm, send_counts, recv_counts));
  for (int q = 0; q < size && st == HALO_OK; q++) {
    int64_t expect = s->recv_ptr[q + 1] - s->recv_ptr[q];
    if (recv_counts[q] != expect) {
      halo_log_error(
          "part %d expects %lld halo rows from part %d, which sends %lld: the shards "
          "do not come from one partition run",
          rank, (long long)expect, q, (long long)recv_counts[q]);
      st = HALO_ERR_MISMATCH;
    }
  }
  p->comm = comm;
  if (st == HALO_OK) st = plan_build(be, s, rank, size, max_cols, send_counts, recv_counts, p);
  HALO_TRY(halo_mpi_agree(comm, st));
  *out = p;
  p = NULL;
done:
  free(send_counts);
  free(recv_counts);
  halo_exchange_destroy(&p);
  return st;
}

void halo_exchange_destroy(halo_exchange **pp) {
  if (!pp || !*pp) return;
  halo_exchange *p = *pp;
  if (p->be) {
    /* A copy may still read or write the staging buffers. */
    if (p->copy_stream) (void)p->be->ops->copy_synchronize(p->be);
    p->be->ops->buf_free(p->be, &p->send_buf);
    p->be->ops->buf_free(p->be, &p->send_idx_buf);
    halo__backend_host_free(p->be, (void **)&p->host_send);
    halo__backend_host_free(p->be, (void **)&p->host_recv);
  }
  for (int k = 0; k < p->nslots; k++) {
    stale_slot *t = &p->slots[k];
    if (t->pending) {
      /* Only a failed run gets here with messages in flight (a run drains
       * its slots): MPI may still write the buffers, so they are left to
       * the process's exit. */
      for (int i = 0; i < 2 * p->npeers; i++)
        if (t->requests[i] != MPI_REQUEST_NULL) MPI_Request_free(&t->requests[i]);
      free(t->requests);
      continue;
    }
    free(t->send);
    free(t->recv);
    free(t->rows);
    free(t->requests);
  }
  free(p->slots);
  free(p->send_gid);
  free(p->halo_gid);
  free(p->kept_send);
  free(p->kept_send_gid);
  free(p->kept_halo);
  free(p->kept_halo_gid);
  free(p->kept_count);
  free(p->sample_rows);
  free(p->quant_send);
  free(p->quant_recv);
  free(p->requests);
  free(p->request_peer);
  free(p->cover);
  free(p->peers);
  free(p);
  *pp = NULL;
}

/* Keeps the first local failure of an exchange for halo_exchange_end. */
static void keep(halo_exchange *p, halo_status st) {
  if (st < 0 && p->failed == HALO_OK) p->failed = st;
}

static halo_status post_receives(halo_exchange *p, float *recv, int32_t cols) {
  halo_status st = HALO_OK;
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->layout[i];
    int64_t count = q->recv_rows * cols;
    HALO_MPI(MPI_Irecv(recv + q->recv_off * cols, (int)count, MPI_FLOAT, q->rank, EXCHANGE_TAG,
                       p->comm, &p->requests[i]));
    p->stats.bytes_recv += count * (int64_t)sizeof(float);
  }
done:
  return st;
}

static halo_status post_sends(halo_exchange *p, const float *send, int32_t cols) {
  halo_status st = HALO_OK;
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->layout[i];
    int64_t count = q->send_rows * cols;
    HALO_MPI(MPI_Isend(send + q->send_off * cols, (int)count, MPI_FLOAT, q->rank, EXCHANGE_TAG,
                       p->comm, &p->requests[p->npeers + i]));
    p->stats.bytes_sent += count * (int64_t)sizeof(float);
  }
done:
  return st;
}

/* The low-bit exchange: pack with the keyed rounding, send bytes, and
 * (in halo_exchange_end) unpack into the halo rows.  Only on a host
 * backend (halo_exchange_precision_reserve refuses the others). */
static halo_status begin_quant(halo_exchange *p, float *rows, int32_t cols) {
  halo_status st = HALO_OK;
  const int64_t rb = halo_quant_row_bytes(p->prec, cols);
  halo_cpu_quant_pack(p->quant_send, rows, cols, p->send_idx, p->send_gid, p->send_total, p->prec,
                      p->key);
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    HALO_MPI(MPI_Irecv(p->quant_recv + q->recv_off * rb, (int)(q->recv_rows * rb), MPI_BYTE,
                       q->rank, EXCHANGE_TAG, p->comm, &p->requests[i]));
    p->stats.bytes_recv += q->recv_rows * rb;
  }
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    HALO_MPI(MPI_Isend(p->quant_send + q->send_off * rb, (int)(q->send_rows * rb), MPI_BYTE,
                       q->rank, EXCHANGE_TAG, p->comm, &p->requests[p->npeers + i]));
    p->stats.bytes_sent += q->send_rows * rb;
  }
done:
  return st;
}

halo_status halo_exchange_precision_reserve(halo_exchange *p, int lowbit) {
  halo_status st = HALO_OK;
  if (!lowbit || p->quant_send) return HALO_OK;
  if (p->mode != MODE_HOST)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "--halo-precision: a low-bit exchange packs on the host; it runs with --device cpu "
              "only (no CUDA packing yet)");
  /* The widest row of any precision: fp32's 4c, or int8's 8 + c when c < 3. */
  p->quant_row_max = quant_row_max(p->max_cols);
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    int64_t rows = q->send_rows > q->recv_rows ? q->send_rows : q->recv_rows;
    if (rows * p->quant_row_max > INT_MAX)
      HALO_FAIL(HALO_ERR_LIMIT,
                "--halo-precision: %lld packed rows to part %d exceed one MPI message (INT_MAX "
                "bytes)",
                (long long)rows, q->rank);
  }
  HALO_ALLOC(p->quant_send, (size_t)(p->send_total > 0 ? p->send_total : 1) * (size_t)p->quant_row_max,
             "the packed halo send rows");
  HALO_ALLOC(p->quant_recv, (size_t)(p->n_halo > 0 ? p->n_halo : 1) * (size_t)p->quant_row_max,
             "the packed halo receive rows");
done:
  return st;
}

void halo_exchange_set_precision(halo_exchange *p, int prec, uint64_t key) {
  p->prec = p->quant_send ? prec : HALO_PREC_FP32;
  p->key = key;
}

/* --- boundary sampling ---------------------------------------------------- */

/* The sampled exchange's host allocations, in halo_exchange_sample_reserve's
 * order: the halo ids and kept lists, the per-peer counts, the rows. */
static int64_t sample_bytes(int64_t send_total, int64_t n_halo, int npeers, int32_t max_cols) {
  const int64_t send = send_total > 0 ? send_total : 1, halo = n_halo > 0 ? n_halo : 1;
  return halo * (int64_t)(2 * sizeof(int64_t) + sizeof(int32_t)) +
         send * (int64_t)(sizeof(int64_t) + sizeof(int32_t)) +
         4 * (int64_t)(npeers > 0 ? npeers : 1) * (int64_t)sizeof(int64_t) +
         halo * max_cols * (int64_t)sizeof(float);
}

int64_t halo_exchange_sample_memory(const halo_shard *s, int32_t max_cols) {
  int peers = 0;
  for (int q = 0; q < s->parts; q++)
    peers += s->send_ptr[q + 1] > s->send_ptr[q] || s->recv_ptr[q + 1] > s->recv_ptr[q];
  return sample_bytes(s->send_ptr[s->parts], s->n_halo, peers, max_cols);
}

halo_status halo_exchange_sample_reserve(halo_exchange *p, const halo_shard *s, int on) {
  halo_status st = HALO_OK;
  if (!on || p->halo_gid) return HALO_OK;
  if (p->mode != MODE_HOST)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "--halo-sample: the sampled exchange gathers its rows on the host; it runs with "
              "--device cpu only (no CUDA twin yet)");
  /* Sampled rows travel as bytes: fp32's 4c, or a packed row's at most. */
  const int64_t row_max = quant_row_max(p->max_cols);
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    const int64_t rows = q->send_rows > q->recv_rows ? q->send_rows : q->recv_rows;
    if (rows * row_max > INT_MAX)
      HALO_FAIL(HALO_ERR_LIMIT,
                "--halo-sample: %lld rows to part %d exceed one MPI message (INT_MAX bytes)",
                (long long)rows, q->rank);
  }
  const size_t halo = p->n_halo > 0 ? (size_t)p->n_halo : 1;
  const size_t send = p->send_total > 0 ? (size_t)p->send_total : 1;
  HALO_ALLOC(p->halo_gid, halo, "the halo rows' ids");
  HALO_ALLOC(p->kept_halo_gid, halo, "the sampled halo rows' ids");
  HALO_ALLOC(p->kept_halo, halo, "the sampled halo rows");
  HALO_ALLOC(p->kept_send_gid, send, "the sampled send rows' ids");
  HALO_ALLOC(p->kept_send, send, "the sampled send rows");
  HALO_ALLOC(p->kept_count, 4 * (size_t)(p->npeers > 0 ? p->npeers : 1), "the sampled counts");
  HALO_ALLOC(p->sample_rows, halo * (size_t)p->max_cols, "the sampled halo rows");
  for (int64_t h = 0; h < p->n_halo; h++) p->halo_gid[h] = s->global_id[s->n_owned + h];
  halo_exchange_sample_select(p, 0, 1.0f);
done:
  return st;
}

halo_status halo_exchange_stale_reserve(halo_exchange *p, int nslots, float momentum) {
  halo_status st = HALO_OK;
  if (nslots <= 0 || p->slots) return HALO_OK;
  if (p->mode != MODE_HOST)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "--halo-stale: the stale exchange keeps its rows on the host; it runs with --device "
              "cpu only");
  const int64_t row_max = quant_row_max(p->max_cols);
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    int64_t rows = q->send_rows > q->recv_rows ? q->send_rows : q->recv_rows;
    if (rows * row_max > INT_MAX)
      HALO_FAIL(HALO_ERR_LIMIT, "--halo-stale: %lld rows to part %d exceed one MPI message",
                (long long)rows, q->rank);
  }
  /* Every slot's tag must fit below MPI's smallest guaranteed MPI_TAG_UB. */
  if (EXCHANGE_TAG + nslots >= 32767)
    HALO_FAIL(HALO_ERR_LIMIT, "--halo-stale: %d exchange slots are too many", nslots);
  HALO_ALLOC(p->slots, (size_t)nslots, "the stale exchange slots");
  p->nslots = nslots;
  p->momentum = momentum;
  const size_t send = (size_t)(p->send_total > 0 ? p->send_total : 1),
               halo = (size_t)(p->n_halo > 0 ? p->n_halo : 1);
  for (int k = 0; k < nslots; k++) {
    stale_slot *t = &p->slots[k];
    HALO_ALLOC(t->send, send * (size_t)row_max, "the stale exchange's send rows");
    HALO_ALLOC(t->recv, halo * (size_t)row_max, "the stale exchange's receive rows");
    HALO_ALLOC(t->rows, halo * (size_t)p->max_cols, "the stale halo rows");
    HALO_ALLOC(t->requests, 2 * (size_t)(p->npeers > 0 ? p->npeers : 1), "MPI requests");
    for (int i = 0; i < 2 * p->npeers; i++) t->requests[i] = MPI_REQUEST_NULL;
  }
done:
  return st;
}

void halo_exchange_sample_select(halo_exchange *p, uint64_t key, float prob) {
  if (!p->halo_gid) return;
  int64_t *sent = p->kept_count, *recv = sent + p->npeers;
  int64_t *sent_off = recv + p->npeers, *recv_off = sent_off + p->npeers;
  int64_t ns = 0, nr = 0;
  p->sample_scale = halo_sample_scale(prob);
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    sent_off[i] = ns;
    for (int64_t k = q->send_off; k < q->send_off + q->send_rows; k++)
      if (halo_sample_keep(key, p->send_gid[k], prob)) {
        p->kept_send[ns] = p->send_idx[k];
        p->kept_send_gid[ns++] = p->send_gid[k];
      }
    sent[i] = ns - sent_off[i];
    recv_off[i] = nr;
    for (int64_t h = q->recv_off; h < q->recv_off + q->recv_rows; h++)
      if (halo_sample_keep(key, p->halo_gid[h], prob)) {
        p->kept_halo[nr] = (int32_t)h;
        p->kept_halo_gid[nr++] = p->halo_gid[h];
      }
    recv[i] = nr - recv_off[i];
  }
  p->kept_total[0] = ns;
  p->kept_total[1] = nr;
}

void halo_exchange_sample_use(halo_exchange *p, int on) { p->sampling = on && p->halo_gid; }

/* Posts the receives and sends of a sampled exchange: forward (owner to
 * holder, `rev` 0) the kept send rows, packed in `out`, into `in` by kept
 * halo row; reverse the other way.  Rows of rb bytes. */
static halo_status post_sampled(halo_exchange *p, const uint8_t *out, uint8_t *in, int64_t rb,
                                int rev) {
  halo_status st = HALO_OK;
  const int64_t *sent = p->kept_count, *recv = sent + p->npeers;
  const int64_t *sent_off = recv + p->npeers, *recv_off = sent_off + p->npeers;
  for (int i = 0; i < p->npeers; i++) {
    const int64_t n = rev ? sent[i] : recv[i], off = rev ? sent_off[i] : recv_off[i];
    HALO_MPI(MPI_Irecv(in + off * rb, (int)(n * rb), MPI_BYTE, p->peers[i].rank, EXCHANGE_TAG,
                       p->comm, &p->requests[i]));
    p->stats.bytes_recv += n * rb;
  }
  for (int i = 0; i < p->npeers; i++) {
    const int64_t n = rev ? recv[i] : sent[i], off = rev ? recv_off[i] : sent_off[i];
    HALO_MPI(MPI_Isend(out + off * rb, (int)(n * rb), MPI_BYTE, p->peers[i].rank, EXCHANGE_TAG,
                       p->comm, &p->requests[p->npeers + i]));
    p->stats.bytes_sent += n * rb;
  }
done:
  return st;
}

int64_t halo_exchange_stale_memory(const halo_shard *s, int32_t max_cols, int nslots) {
  const int64_t send = s->send_ptr[s->parts] > 0 ? s->send_ptr[s->parts] : 1;
  const int64_t halo = s->n_halo > 0 ? s->n_halo : 1;
  return (int64_t)nslots *
         ((send + halo) * quant_row_max(max_cols) + halo * max_cols * (int64_t)sizeof(float));
}

void halo_exchange_set_stale(halo_exchange *p, int slot) {
  p->slot_next = p->slots && slot >= 0 && slot < p->nslots ? slot : -1;
}

/* Waits for slot t's messages and folds the rows they carried into the
 * rows the layer reads: halo (the exchanged matrix's halo rows, free until
 * the end of this exchange) holds them unpacked, then t->rows the smoothed
 * rows. */
static halo_status stale_complete(halo_exchange *p, stale_slot *t, float *halo) {
  halo_status st = HALO_OK;
  const int64_t n = p->n_halo * t->cols;
  HALO_TRY(halo_watch_waitall(2 * p->npeers, t->requests, p->request_peer,
                              "the stale halo exchange"));
  t->pending = 0;
  if (t->prec != HALO_PREC_FP32)
    halo_cpu_quant_unpack(halo, t->recv, t->cols, p->n_halo, t->prec);
  else if (n > 0)
    memcpy(halo, t->recv, (size_t)n * sizeof(float));
  if (p->momentum > 0.0f) {
    const float g = p->momentum, h = 1.0f - p->momentum;
    for (int64_t i = 0; i < n; i++) t->rows[i] = g * t->rows[i] + h * halo[i];
  } else if (n > 0) {
    memcpy(t->rows, halo, (size_t)n * sizeof(float));
  }
done:
  return st;
}

/* A stale exchange: the halo rows of `rows` get the slot's rows (the
 * previous epoch's), and this epoch's owned rows leave in messages that
 * the slot's next exchange waits for. */
static halo_status stale_begin(halo_exchange *p, stale_slot *t, float *rows, int32_t cols) {
  halo_status st = HALO_OK;
  const halo_backend_ops *ops = p->be->ops;
  const int slot = (int)(t - p->slots);
  if (cols != t->cols)
    HALO_FAIL(HALO_ERR_ARG, "stale halo slot %d exchanges %d columns, seeded with %d", slot, cols,
              t->cols);
  float *halo = rows + p->n_owned * cols;
  /* Earlier slots' messages move while this one waits (MPI progresses them
   * only inside MPI calls of this thread). */
  for (int k = 0; k < p->nslots; k++) {
    if (!p->slots[k].pending || k == slot) continue;
    int flag = 0;
    HALO_MPI(MPI_Testall(2 * p->npeers, p->slots[k].requests, &flag, MPI_STATUSES_IGNORE));
  }
  const int completed = t->pending;
  if (completed) HALO_TRY(stale_complete(p, t, halo));
  /* With γ = 0 the rows just completed already are t->rows. */
  if ((!completed || p->momentum > 0.0f) && p->n_halo > 0)
    memcpy(halo, t->rows, (size_t)(p->n_halo * cols) * sizeof(float));

  /* This epoch's rows, packed into the slot's own buffer: the next
   * exchange's pack must not overwrite rows still in flight. */
  const int64_t rb = halo_quant_row_bytes(p->prec, cols);
  if (p->prec != HALO_PREC_FP32) {
    halo_cpu_quant_pack(t->send, rows, cols, p->send_idx, p->send_gid, p->send_total, p->prec,
                        p->key);
  } else {
    ops->pack(p->be, (float *)t->send, rows, cols, p->send_idx, p->send_total);
    if (ops->synchronize) HALO_TRY(ops->synchronize(p->be));
  }
  const int tag = EXCHANGE_TAG + 1 + slot;
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    HALO_MPI(MPI_Irecv(t->recv + q->recv_off * rb, (int)(q->recv_rows * rb), MPI_BYTE, q->rank,
                       tag, p->comm, &t->requests[i]));
    p->stats.bytes_recv += q->recv_rows * rb;
  }
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    HALO_MPI(MPI_Isend(t->send + q->send_off * rb, (int)(q->send_rows * rb), MPI_BYTE, q->rank,
                       tag, p->comm, &t->requests[p->npeers + i]));
    p->stats.bytes_sent += q->send_rows * rb;
  }
  t->prec = p->prec;
  t->pending = 1;
done:
  return st;
}

static int64_t kept_sent(const halo_exchange *p) { return p->kept_total[0]; }
static int64_t kept_recv(const halo_exchange *p) { return p->kept_total[1]; }

/* Forward: only the kept send rows, packed (fp32, or at the set
 * precision), into sample_rows or quant_recv; end scatters them. */
static halo_status begin_sampled(halo_exchange *p, float *rows, int32_t cols) {
  if (p->prec != HALO_PREC_FP32) {
    halo_cpu_quant_pack(p->quant_send, rows, cols, p->kept_send, p->kept_send_gid, kept_sent(p),
                        p->prec, p->key);
    return post_sampled(p, p->quant_send, p->quant_recv, halo_quant_row_bytes(p->prec, cols), 0);
  }
  float *send = p->send_buf.data;
  p->be->ops->pack(p->be, send, rows, cols, p->kept_send, kept_sent(p));
  return post_sampled(p, (const uint8_t *)send, (uint8_t *)p->sample_rows,
                      (int64_t)cols * (int64_t)sizeof(float), 0);
}

/* After the messages: every halo row 0 but the kept ones, scaled by 1/p. */
static void end_sampled(halo_exchange *p) {
  const int64_t cols = p->cols, n = kept_recv(p);
  float *halo = p->rows + p->n_owned * cols;
  if (p->prec != HALO_PREC_FP32)
    halo_cpu_quant_unpack(p->sample_rows, p->quant_recv, p->cols, n, p->prec);
  memset(halo, 0, (size_t)(p->n_halo * cols) * sizeof(float));
  for (int64_t k = 0; k < n; k++) {
    float *dst = halo + (int64_t)p->kept_halo[k] * cols;
    const float *src = p->sample_rows + k * cols;
    for (int64_t j = 0; j < cols; j++) dst[j] = p->sample_scale * src[j];
  }
}

/* The wall and CPU seconds since (t0, c0), into the counters. */
static void stats_add(halo_exchange *p, double t0, double c0) {
  p->stats.seconds += MPI_Wtime() - t0;
  p->stats.cpu_seconds += halo_cpu_seconds() - c0;
}

halo_status halo_exchange_reverse(halo_exchange *p, const float *halo, float *owned, int32_t cols) {
  halo_status st = HALO_OK;
  const double t0 = MPI_Wtime(), c0 = halo_cpu_seconds();
  if (p->active || !p->halo_gid || cols < 1 || cols > p->max_cols)
    HALO_FAIL(HALO_ERR_ARG, "sampled reverse exchange of %d columns (at most %d, one at a time)",
              cols, p->max_cols);
  const int64_t nr = kept_recv(p), ns = kept_sent(p);
  float *in = p->send_buf.data; /* send_total × max_cols: room for every kept send row */
  if (p->prec != HALO_PREC_FP32) {
    halo_cpu_quant_pack(p->quant_recv, halo, cols, p->kept_halo, p->kept_halo_gid, nr, p->prec,
                        p->key);
    HALO_TRY(post_sampled(p, p->quant_recv, p->quant_send, halo_quant_row_bytes(p->prec, cols), 1));
  } else {
    for (int64_t k = 0; k < nr; k++)
      memcpy(p->sample_rows + k * cols, halo + (int64_t)p->kept_halo[k] * cols,
             (size_t)cols * sizeof(float));
    HALO_TRY(post_sampled(p, (const uint8_t *)p->sample_rows, (uint8_t *)in,
                          (int64_t)cols * (int64_t)sizeof(float), 1));
  }
  HALO_TRY(
      halo_watch_waitall(2 * p->npeers, p->requests, p->request_peer, "the sampled halo exchange"));
  if (p->prec != HALO_PREC_FP32) halo_cpu_quant_unpack(in, p->quant_send, cols, ns, p->prec);
  /* In peer order, one row after the other: the same sums on every run. */
  for (int64_t k = 0; k < ns; k++) {
    float *dst = owned + (int64_t)p->kept_send[k] * cols;
    const float *src = in + k * cols;
    for (int64_t j = 0; j < cols; j++) dst[j] += p->sample_scale * src[j];
  }
  p->stats.exchanges++;
done:
  stats_add(p, t0, c0);
  return st;
}

halo_status halo_exchange_stale_drain(halo_exchange *p) {
  halo_status st = HALO_OK;
  const double t0 = MPI_Wtime(), c0 = halo_cpu_seconds();
  for (int k = 0; k < p->nslots; k++) {
    stale_slot *t = &p->slots[k];
    if (t->pending)
      HALO_TRY(halo_watch_waitall(2 * p->npeers, t->requests, p->request_peer,
                                  "the stale halo exchange"));
    t->pending = 0;
    t->cols = 0;
  }
done:
  stats_add(p, t0, c0);
  return st;
}

halo_status halo_exchange_begin(halo_exchange *p, float *rows, int32_t cols) {
  halo_status st = HALO_OK;
  const double t0 = MPI_Wtime(), c0 = halo_cpu_seconds();
  halo_backend *be = p->be;
  const halo_backend_ops *ops = be->ops;
  if (p->active || cols < 1 || cols > p->max_cols)
    HALO_FAIL(HALO_ERR_ARG, "halo exchange of %d columns (at most %d, one at a time)", cols,
              p->max_cols);
  p->layout = p->peers;
  /* A stale slot reads its rows if a fresh exchange seeded it, and is
   * seeded by this fresh exchange (in end) if not. */
  p->slot = p->slot_next >= 0 ? &p->slots[p->slot_next] : NULL;
  p->slot_next = -1;
  p->slot_stale = p->slot && p->slot->cols > 0;
  if (p->slot_stale) {
    HALO_TRY(stale_begin(p, p->slot, rows, cols));
    goto posted;
  }

  /* The packed rows must be complete before MPI reads them.  A failure here
   * (a device fault reported by the copy or the synchronize) is kept for
   * halo_exchange_end: the messages are posted anyway, so that the peers'
   * exchange completes and the failure is agreed on afterwards instead of
   * leaving them waiting for rows that never come. */
  if (p->sampling) {
    HALO_TRY(begin_sampled(p, rows, cols));
    goto posted;
  }
  if (p->prec != HALO_PREC_FP32) {
    HALO_TRY(begin_quant(p, rows, cols));
    goto posted;
  }
  float *send = p->send_buf.data;
  const size_t send_bytes = (size_t)p->send_total * (size_t)cols * sizeof(float);
  if (p->copy_stream) {
    /* The order the comment at the top argues for: host_recv is free once
     * the last exchange's upload is done; the download starts after the
     * pack; the sends wait for it in end. */
    keep(p, ops->copy_synchronize(be));
    ops->pack(be, send, rows, cols, p->send_idx, p->send_total);
    keep(p, ops->copy_wait_compute(be));
    keep(p, ops->copy_download(be, p->host_send, &p->send_buf, 0, send_bytes));
    HALO_TRY(post_receives(p, p->host_recv, cols));
  } else {
    ops->pack(be, send, rows, cols, p->send_idx, p->send_total);
    if (p->mode == MODE_STAGED) {
      keep(p, ops->download(be, p->host_send, &p->send_buf, 0, send_bytes));
      send = p->host_send;
    } else if (ops->synchronize) {
      keep(p, ops->synchronize(be));
    }
    /* Receives first, so that a message never waits for its buffer. */
    HALO_TRY(
        post_receives(p, p->mode == MODE_STAGED ? p->host_recv : rows + p->n_owned * cols, cols));
    HALO_TRY(post_sends(p, send, cols));
  }
posted:
  p->rows = rows;
  p->cols = cols;
  p->active = 1;
done:
  stats_add(p, t0, c0);
  return st;
}

halo_status halo_exchange_end(halo_exchange *p) {
  halo_status st = HALO_OK;
  const double t0 = MPI_Wtime(), c0 = halo_cpu_seconds();
  halo_backend *be = p->be;
  const halo_backend_ops *ops = be->ops;
  if (!p->active) HALO_FAIL(HALO_ERR_ARG, "halo_exchange_end without a matching begin");
  p->active = 0;
  if (p->slot_stale) { /* the halo rows were written in begin */
    p->slot_stale = 0;
    p->slot = NULL;
    p->stats.exchanges++;
    goto done;
  }
  if (p->copy_stream) {
    keep(p, ops->copy_synchronize(be)); /* host_send holds the packed rows */
    HALO_TRY(post_sends(p, p->host_send, p->cols));
  }
  HALO_TRY(halo_watch_waitall(2 * p->npeers, p->requests, p->request_peer, "the halo exchange"));
  if (p->failed < 0) {
    st = p->failed;
    p->failed = HALO_OK;
    goto done;
  }
  if (p->sampling) {
    end_sampled(p);
  } else if (p->prec != HALO_PREC_FP32) {
    halo_cpu_quant_unpack(p->rows + p->n_owned * p->cols, p->quant_recv, p->cols, p->n_halo,
                          p->prec);
  } else if (p->mode == MODE_STAGED) {
    halo_buf dst = {.data = p->rows,
                    .bytes = (size_t)(p->n_owned + p->n_halo) * p->cols * sizeof(float),
                    .space = HALO_MEM_DEVICE};
    size_t off = (size_t)p->n_owned * (size_t)p->cols * sizeof(float);
    size_t bytes = (size_t)p->n_halo * (size_t)p->cols * sizeof(float);
    if (p->copy_stream) {
      HALO_TRY(ops->copy_upload(be, &dst, off, p->host_recv, bytes));
      HALO_TRY(ops->compute_wait_copy(be));
    } else {
      HALO_TRY(ops->upload(be, &dst, off, p->host_recv, bytes));
    }
  }
  if (p->slot) { /* a fresh exchange seeds its stale slot with the rows it received */
    p->slot->cols = p->cols;
    if (p->n_halo > 0)
      memcpy(p->slot->rows, p->rows + p->n_owned * p->cols,
             (size_t)(p->n_halo * p->cols) * sizeof(float));
    p->slot = NULL;
  }
  p->stats.exchanges++;
done:
  stats_add(p, t0, c0);
  return st;
}

halo_status halo_exchange_cover_set(halo_exchange *p, const int64_t *rows) {
  halo_status st = HALO_OK;
  if (p->mode != MODE_HOST)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "--halo-aggregate auto: the partial sums are made on the host; it runs with "
              "--device cpu only (no CUDA twin yet)");
  HALO_ALLOC(p->cover, p->npeers > 0 ? p->npeers : 1, "the cover's layout");
  int64_t off = 0;
  for (int i = 0; i < p->npeers; i++) {
    const peer *q = &p->peers[i];
    const int64_t r = rows[q->rank];
    if (r < 1 || r > q->send_rows || r > q->recv_rows)
      HALO_FAIL(HALO_ERR_ARG,
                "the cover with part %d has %lld rows (plain: %lld sent, %lld received)", q->rank,
                (long long)r, (long long)q->send_rows, (long long)q->recv_rows);
    p->cover[i] =
        (peer){.rank = q->rank, .send_off = off, .send_rows = r, .recv_off = off, .recv_rows = r};
    off += r;
  }
done:
  if (st != HALO_OK) {
    free(p->cover);
    p->cover = NULL;
  }
  return st;
}

halo_status halo_exchange_cover_check(halo_exchange *p) {
  halo_status st = HALO_OK;
  int64_t *send = NULL, *recv = NULL;
  int rank = 0, size = 1;
  HALO_MPI(MPI_Comm_rank(p->comm, &rank));
  HALO_MPI(MPI_Comm_size(p->comm, &size));
  send = calloc((size_t)size, sizeof *send);
  recv = calloc((size_t)size, sizeof *recv);
  if (!send || !recv) {
    halo_log_error("out of memory checking the covers");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(halo_mpi_agree(p->comm, st));
  for (int i = 0; i < p->npeers && p->cover; i++) send[p->cover[i].rank] = p->cover[i].send_rows;
  HALO_TRY(halo_route_swap_counts(p->comm, send, recv));
  for (int i = 0; i < p->npeers && st == HALO_OK; i++)
    if (!p->cover || recv[p->cover[i].rank] != p->cover[i].recv_rows) {
      halo_log_error(
          "part %d expects %lld cover rows from part %d, which sends %lld: the two "
          "built different cuts",
          rank, (long long)(p->cover ? p->cover[i].recv_rows : 0), p->peers[i].rank,
          (long long)recv[p->peers[i].rank]);
      st = HALO_ERR_MISMATCH;
    }
  HALO_TRY(halo_mpi_agree(p->comm, st));
done:
  free(send);
  free(recv);
  return st;
}

halo_status halo_exchange_begin_cover(halo_exchange *p, float *rows, int32_t cols,
                                      const halo_csr *combine) {
  halo_status st = HALO_OK;
  const double t0 = MPI_Wtime(), c0 = halo_cpu_seconds();
  if (p->active || cols < 1 || cols > p->max_cols || !p->cover || p->prec != HALO_PREC_FP32)
    HALO_FAIL(HALO_ERR_ARG,
              "cover exchange of %d columns (at most %d, one at a time, fp32, after "
              "halo_exchange_cover_set)",
              cols, p->max_cols);
  p->be->ops->spmm(p->be, combine, rows, cols, cols, 0.0f, p->send_buf.data, cols, NULL,
                   combine->rows);
  p->layout = p->cover;
  HALO_TRY(post_receives(p, rows + p->n_owned * cols, cols));
  HALO_TRY(post_sends(p, p->send_buf.data, cols));
  p->rows = rows;
  p->cols = cols;
  p->active = 1;
done:
  stats_add(p, t0, c0);
  return st;
}

halo_exchange_stats halo_exchange_stats_get(const halo_exchange *p) { return p->stats; }

int halo_exchange_peers(const halo_exchange *p) { return p->npeers; }
