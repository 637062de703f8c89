/* Routes of one all-to-all (halo-route.h). */
#include "halo-route.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "halo-mpi.h"

halo_status halo_route_swap_counts(MPI_Comm comm, const int64_t *send_counts,
                                   int64_t *recv_counts) {
  halo_status st = HALO_OK;
  HALO_MPI(MPI_Alltoall(send_counts, 1, MPI_INT64_T, recv_counts, 1, MPI_INT64_T, comm));
done:
  return st;
}

halo_status halo_route_begins(MPI_Comm comm, int64_t begin, int64_t nodes, const char *what,
                              int64_t *begins) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  if (MPI_Allgather(&begin, 1, MPI_INT64_T, begins, 1, MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Allgather failed gathering %s's blocks", what);
    return HALO_ERR_MPI;
  }
  begins[ranks] = nodes;
  return HALO_OK;
}

int halo_route_counts_alloc(int ranks, halo_route_counts *x) {
  *x = (halo_route_counts){0};
  if (HALO_CALLOC(x->scount, ranks) && HALO_CALLOC(x->sdispl, ranks) &&
      HALO_CALLOC(x->rcount, ranks) && HALO_CALLOC(x->rdispl, ranks))
    return 1;
  halo_route_counts_free(x);
  return 0;
}

halo_status halo_route_counts_set(halo_route_counts *x, int ranks, const int64_t *send_counts,
                                  const int64_t *recv_counts) {
  x->sent = x->received = 0;
  for (int q = 0; q < ranks; q++) {
    x->sent += send_counts[q];
    x->received += recv_counts[q];
  }
  if (x->sent > INT_MAX || x->received > INT_MAX) return HALO_ERR_LIMIT;
  /* Each count and displacement is at most its total, which fits an int. */
  int64_t sent = 0, received = 0;
  for (int q = 0; q < ranks; q++) {
    x->scount[q] = (int)send_counts[q];
    x->sdispl[q] = (int)sent;
    x->rcount[q] = (int)recv_counts[q];
    x->rdispl[q] = (int)received;
    sent += send_counts[q];
    received += recv_counts[q];
  }
  return HALO_OK;
}

void halo_route_counts_free(halo_route_counts *x) {
  free(x->scount);
  free(x->sdispl);
  free(x->rcount);
  free(x->rdispl);
  *x = (halo_route_counts){0};
}

void halo_route_free(halo_route *rt) {
  free(rt->pos);
  free(rt->row);
  halo_route_counts_free(&rt->x);
  free(rt->sbuf);
  free(rt->rbuf);
  *rt = (halo_route){0};
}

/* Logs the out-of-memory line for the route and fails when ok is 0. */
static halo_status memory(int ok, const char *what) {
  if (ok) return HALO_OK;
  halo_log_error("out of memory allocating %s's routes", what);
  return HALO_ERR_NOMEM;
}

halo_status halo_route_build(MPI_Comm comm, const int64_t *begins, const int64_t *id, int64_t n,
                             const char *what, halo_route *rt) {
  halo_status st = HALO_OK;
  int ranks = 1, rank = 0;
  int64_t *counts = NULL; /* requests to each owner, then from each asker: size 2·ranks */
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  *rt = (halo_route){.what = what, .n = n};
  st = memory(HALO_CALLOC(rt->pos, n) && halo_route_counts_alloc(ranks, &rt->x) &&
                  HALO_CALLOC(rt->sbuf, n) && HALO_CALLOC(counts, 2 * (int64_t)ranks),
              what);
  if (st == HALO_OK && n > INT_MAX) {
    halo_log_error("a rank sends %lld requests; %s's exchange counts are int", (long long)n, what);
    st = HALO_ERR_LIMIT;
  }
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int64_t i = 0; i < n; i++) counts[halo_route_owner(begins, ranks, id[i])]++;
  HALO_TRY(halo_route_swap_counts(comm, counts, counts + ranks));
  st = halo_route_counts_set(&rt->x, ranks, counts, counts + ranks);
  rt->nrecv = rt->x.received;
  if (st != HALO_OK)
    halo_log_error("a rank is sent %lld requests; %s's exchange counts are int",
                   (long long)rt->nrecv, what);
  if (st == HALO_OK) {
    /* Each request's place: its owner's displacement, then the next. */
    int *fill = malloc((size_t)ranks * sizeof *fill);
    st = memory(fill && HALO_CALLOC(rt->row, rt->nrecv) && HALO_CALLOC(rt->rbuf, rt->nrecv), what);
    if (st == HALO_OK) {
      memcpy(fill, rt->x.sdispl, (size_t)ranks * sizeof *fill);
      for (int64_t i = 0; i < n; i++) {
        rt->pos[i] = fill[halo_route_owner(begins, ranks, id[i])]++;
        rt->sbuf[rt->pos[i]] = id[i];
      }
    }
    free(fill);
  }
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_MPI(MPI_Alltoallv(rt->sbuf, rt->x.scount, rt->x.sdispl, MPI_INT64_T, rt->row, rt->x.rcount,
                         rt->x.rdispl, MPI_INT64_T, comm));
  for (int64_t i = 0; i < rt->nrecv; i++) rt->row[i] -= begins[rank];
done:
  free(counts);
  if (st != HALO_OK) halo_route_free(rt);
  return st;
}

halo_status halo_route_push(MPI_Comm comm, halo_route *rt, const int64_t *in, int64_t *got) {
  for (int64_t i = 0; i < rt->n; i++) rt->sbuf[rt->pos[i]] = in[i];
  if (MPI_Alltoallv(rt->sbuf, rt->x.scount, rt->x.sdispl, MPI_INT64_T, got, rt->x.rcount,
                    rt->x.rdispl, MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Alltoallv failed routing %s's values", rt->what);
    return HALO_ERR_MPI;
  }
  return HALO_OK;
}

halo_status halo_route_answer(MPI_Comm comm, halo_route *rt, const int64_t *answer, int64_t *out) {
  if (MPI_Alltoallv(answer, rt->x.rcount, rt->x.rdispl, MPI_INT64_T, rt->sbuf, rt->x.scount,
                    rt->x.sdispl, MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Alltoallv failed answering %s's requests", rt->what);
    return HALO_ERR_MPI;
  }
  for (int64_t i = 0; i < rt->n; i++) out[i] = rt->sbuf[rt->pos[i]];
  return HALO_OK;
}

halo_status halo_route_fetch(MPI_Comm comm, halo_route *rt, const int64_t *val, int64_t *out) {
  for (int64_t j = 0; j < rt->nrecv; j++) rt->rbuf[j] = val[rt->row[j]];
  return halo_route_answer(comm, rt, rt->rbuf, out);
}
