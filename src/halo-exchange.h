/* Halo exchange: owners send their boundary rows to the parts that hold them
 * as halo rows, split into begin and end so that work on interior rows
 * overlaps the messages (as PETSc's PetscSFBcastBegin/End).
 *
 * A matrix exchanged here has n_owned + n_halo rows of `cols` floats, packed
 * (leading dimension = cols), in the shard's local numbering: owned rows
 * first, then the halo rows grouped by owner part.  Part q's rows for us
 * arrive in the contiguous range n_owned + recv_ptr[q] .. n_owned +
 * recv_ptr[q+1] - 1, so on a host backend they are received in place and
 * never unpacked.
 *
 * The forward direction (owner -> holder) is the only one GCN needs: its
 * normalised adjacency is symmetric, so the backward pass applies the same
 * exchange to gradients.  --halo-sample's epoch graph is not symmetric, and
 * its backward sends the other way (halo_exchange_reverse).
 */
#ifndef HALO_EXCHANGE_H
#define HALO_EXCHANGE_H

#include <mpi.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-csr.h"
#include "halo-shard.h"
#include "halo-status.h"

typedef struct halo_exchange halo_exchange;

/* Builds the plan of this rank's part: checks that the shard is part `rank`
 * of `size`, that its send and receive lists are well formed and that every
 * pair of parts agrees on how many rows cross between them, and sizes the
 * staging buffers for exchanges of up to max_cols columns.  The shard is
 * only read during the call.  Every rank returns the same success
 * or failure. Collective. */
halo_status halo_exchange_create(MPI_Comm comm, halo_backend *be, const halo_shard *s,
                                 int32_t max_cols, halo_exchange **out);

/* Frees the plan; accepts NULL and sets *p = NULL. Local. */
void halo_exchange_destroy(halo_exchange **p);

/* What halo_exchange_create allocates for shard s and exchanges of up to
 * max_cols columns, from the same sizes as the allocations: *backend bytes
 * of backend buffers (the packed send rows and their indices, each counted
 * as the backend hands it out through `page_round`), and *host bytes of
 * host staging, which a device backend needs unless MPI reads its memory
 * (`staged`), and the send rows' global ids. Local. */
void halo_exchange_memory(const halo_shard *s, int32_t max_cols, int staged,
                          int64_t (*page_round)(int64_t bytes), int64_t *backend, int64_t *host);

/* Starts sending the owned rows of `rows` (a backend buffer of
 * (n_owned + n_halo) × cols floats) that peers hold as halo, and receiving
 * this part's halo rows into the same matrix.  Owned rows must not change,
 * and halo rows must not be read, until halo_exchange_end.  One exchange at a
 * time. Collective over the neighbours. */
halo_status halo_exchange_begin(halo_exchange *p, float *rows, int32_t cols);

/* Waits for the exchange begun last; the halo rows are then valid.  A local
 * failure of halo_exchange_begin after its argument check (the backend could
 * not complete the packed rows) is returned here, once every message of the
 * exchange has completed, so that no peer is left waiting. Collective over
 * the neighbours. */
halo_status halo_exchange_end(halo_exchange *p);

/* Low-bit rows (--halo-precision; core/halo-quant.h).  With lowbit set,
 * allocates the packed staging that halo_exchange_set_precision needs: on a
 * host backend only (HALO_ERR_UNSUPPORTED, logged, on a device one), once,
 * at plan time.  Local. */
halo_status halo_exchange_precision_reserve(halo_exchange *p, int lowbit);

/* The host bytes halo_exchange_precision_reserve allocates for shard s and
 * exchanges of up to max_cols columns. Local. */
int64_t halo_exchange_precision_memory(const halo_shard *s, int32_t max_cols);

/* The precision (halo_precision) and rounding key (halo_quant_key) of the
 * exchanges begun from now on; without a reservation, fp32.  A packed row
 * crosses as halo_quant_row_bytes(prec, cols) bytes, which is what the
 * counters count.  Local. */
void halo_exchange_set_precision(halo_exchange *p, int prec, uint64_t key);

/* Boundary sampling (--halo-sample p, core/halo-sample.h).  With `on`,
 * allocates the kept-row lists (with shard s's halo rows' global ids) and
 * the staging of the sampled exchanges:
 * on a host backend only (HALO_ERR_UNSUPPORTED, logged, on a device one),
 * once, at plan time.  Local. */
halo_status halo_exchange_sample_reserve(halo_exchange *p, const halo_shard *s, int on);

/* The host bytes halo_exchange_sample_reserve allocates for shard s and
 * exchanges of up to max_cols columns. Local. */
int64_t halo_exchange_sample_memory(const halo_shard *s, int32_t max_cols);

/* Draws the rows that cross while sampling is on: node v's row crosses iff
 * halo_sample_keep(key, v, prob), on the sender's side from its send list
 * and on the receiver's side from its halo rows, so both agree without a
 * message.  Needs the reservation. Local. */
void halo_exchange_sample_select(halo_exchange *p, uint64_t key, float prob);

/* Whether the exchanges begun from now on sample (needs the reservation):
 * only the drawn rows cross, and halo_exchange_end leaves each drawn halo
 * row scaled by 1/prob and every other halo row 0, the epoch's graph
 * without the dropped boundary nodes' edges.  Local. */
void halo_exchange_sample_use(halo_exchange *p, int on);

/* The sampled backward exchange, the transpose of a sampled forward one:
 * each part sends the drawn rows of `halo` (n_halo × cols, halo rows in
 * the plan's order: the gradients of its halo rows) back to their owners,
 * which add 1/prob times each into the node's row of `owned` (n_owned ×
 * cols), peers in rank order.  Only the drawn rows cross, at the precision
 * set last.  Needs the reservation and a selection. Collective over the
 * neighbours. */
halo_status halo_exchange_reverse(halo_exchange *p, const float *halo, float *owned, int32_t cols);
/* Stale exchange (--halo-stale; PipeGCN, Wan et al., ICLR 2022).  Reserves
 * nslots slots, each for one exchange of up to max_cols columns at any
 * precision, on a host backend only (HALO_ERR_UNSUPPORTED, logged, on a
 * device one), once, at plan time.  The trainer gives each layer and
 * direction its slot.  Local. */
halo_status halo_exchange_stale_reserve(halo_exchange *p, int nslots, float momentum);

/* The host bytes halo_exchange_stale_reserve allocates for shard s. Local. */
int64_t halo_exchange_stale_memory(const halo_shard *s, int32_t max_cols, int nslots);

/* The slot of the next halo_exchange_begin (one exchange only; -1 or no
 * reservation: a fresh exchange).  A slot's first exchange is fresh and
 * keeps the halo rows it received.  Each later one writes the slot's rows
 * into the halo rows at once, then sends this call's owned rows (at the
 * precision set, counted as a fresh exchange counts them) in messages that
 * stay in flight until the slot's next exchange: that one waits for them
 * and makes them the slot's rows, smoothed as
 *   slot rows = γ·slot rows + (1 - γ)·received rows    (γ = momentum; 0: the received rows).
 * So the k-th exchange of a slot reads the rows sent by its (k-1)-th, and
 * halo_exchange_end of a stale exchange waits for nothing.  Every rank
 * must give its slots in the same order.  Local. */
void halo_exchange_set_stale(halo_exchange *p, int slot);

/* Completes every slot's messages in flight and discards them; each
 * slot's next exchange is fresh again.  Collective over the neighbours. */
halo_status halo_exchange_stale_drain(halo_exchange *p);
/* --halo-aggregate auto (src/gnn-cover.c): the layout of a cover's
 * exchange, rows[q] rows each way with part q (size: the communicator's),
 * packed in rank order on both sides; each must be at least 1 and at most
 * the plain exchange's rows either way.  HALO_ERR_UNSUPPORTED, logged, on
 * a device backend.  Local. */
halo_status halo_exchange_cover_set(halo_exchange *p, const int64_t *rows);

/* Checks that every peer sends as many cover rows as this part expects
 * (both built the pair's cut alike); every rank returns the same success
 * or failure. Collective. */
halo_status halo_exchange_cover_check(halo_exchange *p);

/* halo_exchange_begin for a cover: the rows sent are combine · rows (a
 * host CSR over the owned rows, one row per row sent, in the layout of
 * halo_exchange_cover_set), and the rows received land at n_owned + the
 * layout's offsets; end as for halo_exchange_begin.  fp32 rows only.
 * Collective over the neighbours. */
halo_status halo_exchange_begin_cover(halo_exchange *p, float *rows, int32_t cols,
                                      const halo_csr *combine);

/* Counters, cumulative since creation. Local. */
typedef struct halo_exchange_stats {
  int64_t exchanges;  /* begin/end pairs completed */
  int64_t bytes_sent; /* bytes handed to MPI_Isend */
  int64_t bytes_recv; /* bytes posted with MPI_Irecv */
  double seconds;     /* wall time inside begin and end */
  double cpu_seconds; /* this process's CPU time there (waits spin) */
} halo_exchange_stats;

halo_exchange_stats halo_exchange_stats_get(const halo_exchange *p);

/* Number of peers this part exchanges with. Local. */
int halo_exchange_peers(const halo_exchange *p);

#endif /* HALO_EXCHANGE_H */
