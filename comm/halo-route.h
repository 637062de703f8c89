/* Routes: what every rank sends every other in one all-to-all, and the
 * requests keyed by global ids that ranks send to the rank whose block of
 * ids holds them.
 *
 * Two users share it.  The runtime's exchange plan (src/halo-exchange.c)
 * swaps its per-peer row counts with halo_route_swap_counts and checks them
 * against the shards (its messages then go point to point, one per peer,
 * in float rows); the distributed partitioner's coarsening and refinement
 * (partition/partition-dcoarsen.c, partition-drefine.c) route values keyed
 * by global row ids to the rows' owners with a halo_route, whose counts
 * are swapped the same way and turned into MPI_Alltoallv's by
 * halo_route_counts_set.
 * MPI_Alltoallv takes int counts and displacements, so a route whose total
 * in or out of one rank passes INT_MAX fails with HALO_ERR_LIMIT instead of
 * overflowing them.
 *
 * Communicators must have MPI_ERRORS_RETURN set (halo-mpi-check.h).
 */
#ifndef HALO_ROUTE_H
#define HALO_ROUTE_H

#include <mpi.h>
#include <stdint.h>

#include "halo-status.h"

/* recv_counts[q] = send_counts[this rank] on rank q: the counts every rank
 * sends every other, swapped (MPI_Alltoall of int64; both arrays size
 * ranks).  Collective. */
halo_status halo_route_swap_counts(MPI_Comm comm, const int64_t *send_counts, int64_t *recv_counts);

/* The int counts and displacements of one MPI_Alltoallv, in units (an
 * MPI datatype's items), per rank, and the totals each way.  The arrays
 * are the struct's own. */
typedef struct halo_route_counts {
  int *scount, *sdispl;   /* sent to each rank: size ranks */
  int *rcount, *rdispl;   /* received from each rank: size ranks */
  int64_t sent, received; /* the totals */
} halo_route_counts;

/* Allocates x's arrays for `ranks` ranks, zeroed.  Nonzero on success; on
 * failure x holds nothing and the caller logs (its own words for what was
 * being allocated).  Local. */
int halo_route_counts_alloc(int ranks, halo_route_counts *x);

/* Fills x from the int64 counts each way (send_counts[q]: units for rank
 * q; recv_counts[q]: units from rank q, as halo_route_swap_counts gives
 * them), displacements packed in rank order.  x->sent and x->received get
 * the totals either way; HALO_ERR_LIMIT, not logged, when one of them
 * passes INT_MAX (MPI's int counts), so that the caller says which
 * exchange and what to do about it.  Local. */
halo_status halo_route_counts_set(halo_route_counts *x, int ranks, const int64_t *send_counts,
                                  const int64_t *recv_counts);

/* Frees x's arrays and zeroes *x; accepts a zeroed one. Local. */
void halo_route_counts_free(halo_route_counts *x);

/* begins[0..ranks]: where each rank's block of ids starts (this rank's at
 * `begin`), and begins[ranks] = nodes, the ids in all.  `what` names the
 * route's user in the message of a failure ("the coarsening").
 * Collective. */
halo_status halo_route_begins(MPI_Comm comm, int64_t begin, int64_t nodes, const char *what,
                              int64_t *begins);

/* The rank whose block of begins[0..ranks] holds id v. Local; pure. */
static inline int halo_route_owner(const int64_t *begins, int ranks, int64_t v) {
  int lo = 0, hi = ranks - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (begins[mid] <= v)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Requests keyed by global ids (n of them, in any order, repeats allowed),
 * each answered by the rank whose block holds its id: the requests go out
 * grouped by owner, in rank order, and an owner sees the ones it answers
 * grouped by the rank that asked, in rank order too.  The arrays are the
 * route's own. */
typedef struct halo_route {
  const char *what;     /* the user, for messages (borrowed) */
  int64_t n, *pos;      /* request i's place in the send order: size n */
  int64_t nrecv, *row;  /* the requests this rank answers: its local ids, size nrecv */
  halo_route_counts x;  /* requests by owner (sent), by the rank that asked (received) */
  int64_t *sbuf, *rbuf; /* scratch, size n and nrecv */
} halo_route;

/* The route of id[0..n) over the blocks begins[0..ranks] (this rank's block
 * starts at begins[rank]).  `what` (kept, not copied) names the user in
 * messages: "out of memory allocating WHAT's routes", "a rank sends N
 * requests; WHAT's exchange counts are int".  On failure *rt holds nothing.
 * Collective (agreed with halo_mpi_agree_within: a failure on one rank
 * fails all, the others with HALO_ERR_PEER, and the caller's phase agrees
 * on it again). */
halo_status halo_route_build(MPI_Comm comm, const int64_t *begins, const int64_t *id, int64_t n,
                             const char *what, halo_route *rt);

/* got[j] for the j-th request this rank answers (size rt->nrecv): in[i] of
 * request i (size rt->n), from the rank that made it.  Collective. */
halo_status halo_route_push(MPI_Comm comm, halo_route *rt, const int64_t *in, int64_t *got);

/* out[i] for request i (size rt->n): answer[j] of the j-th request its owner
 * answers (size rt->nrecv).  Collective. */
halo_status halo_route_answer(MPI_Comm comm, halo_route *rt, const int64_t *answer, int64_t *out);

/* out[i] = val[local id of request i] on its owner (val: the owner's block;
 * out: size rt->n).  Collective. */
halo_status halo_route_fetch(MPI_Comm comm, halo_route *rt, const int64_t *val, int64_t *out);

/* Frees the route's arrays and zeroes *rt; accepts a zeroed route. Local. */
void halo_route_free(halo_route *rt);

#endif /* HALO_ROUTE_H */
