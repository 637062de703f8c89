/* The distributed partitioner's clean-up (dist-impl.h): every pair goes to
 * its rows' owners, which sort, fold and count as halo_partition_clean. */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Input pairs per round of the clean-up's exchange: 4M pairs send 8M
 * entries of 16 bytes (128 MB) at most per round. */
enum { CLEAN_ROUND_PAIRS = 1 << 22 };

/* ---- clean-up --------------------------------------------------------- */

/* "Row u has neighbour v": w = v << 1, plus 1 when the pair was (v, u). */
typedef struct entry {
  int64_t row, w;
} entry;

static int compare_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->row != y->row) return (x->row > y->row) - (x->row < y->row);
  return (x->w > y->w) - (x->w < y->w);
}

/* Pairs [lo, hi) of the slice as entries for their rows' owners: counts
 * only (out == NULL), or counts and the entries, by owner, at out + the
 * owner's displacement (at[k] advances). Local. */
static void clean_entries(const dist *d, int64_t lo, int64_t hi, int64_t *counts, entry *out,
                          int64_t *at) {
  const int64_t *pair = d->slice.pair;
  for (int64_t i = lo; i < hi; i++) {
    const int64_t u = pair[2 * i], v = pair[2 * i + 1];
    if (u == v) continue;
    const int a = row_owner(d, u), b = row_owner(d, v);
    if (!out) {
      counts[a]++;
      counts[b]++;
      continue;
    }
    out[at[a]++] = (entry){u, v << 1};
    out[at[b]++] = (entry){v, (u << 1) | 1};
  }
}

/* Checks the slice's pairs and counts its self-loops. Local. */
static halo_status clean_check(dist *d, int64_t *self_loops) {
  halo_status st = HALO_OK;
  const int64_t *pair = d->slice.pair, n = d->slice.nodes;
  *self_loops = 0;
  for (int64_t i = 0; i < d->slice.count; i++) {
    const int64_t u = pair[2 * i], v = pair[2 * i + 1];
    if (u < 0 || u >= n || v < 0 || v >= n)
      HALO_FAIL(HALO_ERR_RANGE, "%s: edge (%" PRId64 ", %" PRId64 ") is outside [0, %" PRId64 ")",
                d->slice.source, u, v, n);
    *self_loops += u == v;
  }
done:
  return st;
}

/* Sorts the received entries by row and neighbour and folds them into the
 * block's CSR, then frees them: a neighbour seen once or more as (u, v) is kept
 * with its repeats counted as duplicates, one seen only as (v, u) is kept
 * as an added reverse edge. report gets this rank's counts. Local. */
static halo_status clean_fold(dist *d, entry *e, int64_t count, halo_clean_report *report) {
  halo_status st = HALO_OK;
  halo_dgraph *g = &d->g;
  qsort(e, (size_t)count, sizeof *e, compare_entry);
  HALO_ALLOC(g->indptr, g->rows + 1, "row offsets");
  int64_t *nbr = (int64_t *)e; /* written behind the entries being read */
  int64_t kept = 0;
  for (int64_t i = 0; i < count;) {
    const int64_t row = e[i].row, v = e[i].w >> 1;
    int64_t forward = 0;
    for (; i < count && e[i].row == row && e[i].w >> 1 == v; i++) forward += (e[i].w & 1) == 0;
    report->duplicates += forward > 1 ? forward - 1 : 0;
    report->reverse_added += forward == 0;
    g->indptr[row - g->begin + 1]++;
    nbr[kept++] = v;
  }
  for (int64_t r = 0; r < g->rows; r++) {
    report->isolated += g->indptr[r + 1] == 0;
    g->indptr[r + 1] += g->indptr[r];
  }
  HALO_ALLOC(g->nbr, kept, "neighbours"); /* the entries' buffer is twice as large */
  memcpy(g->nbr, nbr, (size_t)kept * sizeof *nbr);
  free(e);
done:
  return st;
}

/* The clean-up, distributed.  Collective (agreed). */
halo_status halo__dist_clean(dist *d, halo_clean_report *report) {
  halo_status st = HALO_OK;
  const int K = d->size;
  const int64_t n = d->slice.nodes;
  int64_t *counts = NULL, *at = NULL, local[5] = {0}, rounds = 0;
  /* No round is longer than the slice: the send buffer is sized for one. */
  int64_t round_pairs = d->rq->clean_round_pairs > 0 ? d->rq->clean_round_pairs : CLEAN_ROUND_PAIRS;
  if (round_pairs > d->slice.count) round_pairs = d->slice.count > 0 ? d->slice.count : 1;
  entry *recv = NULL, *send = NULL;
  xfer total = {0}, x = {0};
  *report = (halo_clean_report){0};
  d->g = (halo_dgraph){
      .nodes = n, .begin = d->begins[d->rank], .rows = d->begins[d->rank + 1] - d->begins[d->rank]};

  phase_begin(d);
  local[0] = d->slice.count;
  st = clean_check(d, &local[1]);
  if (st == HALO_OK) {
    counts = calloc((size_t)K, sizeof *counts);
    at = calloc((size_t)K, sizeof *at);
    if (!counts || !at) {
      halo_log_error("out of memory allocating exchange counts");
      st = HALO_ERR_NOMEM;
    }
    if (st == HALO_OK) clean_entries(d, 0, d->slice.count, counts, NULL, NULL);
  }
  HALO_TRY(phase_end(d, st));
  /* What every rank will receive, in all rounds: one allocation, admitted. */
  HALO_TRY(halo__dist_xfer_plan(d, counts, "the clean-up", &total));
  phase_begin(d);
  st = halo__dist_admit(
      d->slice.source, "cleaning its rows",
      16.0 * (double)total.received + 8.0 * (double)(d->g.rows + 1) + 16.0 * 2.0 * round_pairs);
  if (st == HALO_OK) {
    recv = malloc((size_t)(total.received > 0 ? total.received : 1) * sizeof *recv);
    send = malloc((size_t)2 * round_pairs * sizeof *send);
    if (!recv || !send) {
      halo_log_error("%s: out of memory allocating the clean-up's buffers", d->slice.source);
      st = HALO_ERR_NOMEM;
    }
  }
  HALO_TRY(phase_end(d, st));

  /* Rounds of at most round_pairs pairs a rank; every rank takes part
   * in each round, with nothing to send once its pairs are done. */
  const int64_t mine = (d->slice.count + round_pairs - 1) / round_pairs;
  HALO_MPI(MPI_Allreduce(&mine, &rounds, 1, MPI_INT64_T, MPI_MAX, d->comm));
  int64_t received = 0;
  for (int64_t round = 0; round < rounds; round++) {
    const int64_t lo = round * round_pairs < d->slice.count ? round * round_pairs : d->slice.count;
    const int64_t hi = lo + round_pairs < d->slice.count ? lo + round_pairs : d->slice.count;
    memset(counts, 0, (size_t)K * sizeof *counts);
    clean_entries(d, lo, hi, counts, NULL, NULL);
    HALO_TRY(halo__dist_xfer_plan(d, counts, "the clean-up", &x));
    for (int k = 0; k < K; k++) at[k] = x.sdispl[k];
    clean_entries(d, lo, hi, counts, send, at);
    for (int k = 0; k < K; k++) x.rdispl[k] += (int)received; /* fits: total.received did */
    HALO_MPI(
        MPI_Alltoallv(send, x.scount, x.sdispl, d->pair_type, recv, x.rcount, x.rdispl, d->pair_type, d->comm));
    received += x.received;
    halo__dist_xfer_free(&x);
  }
  halo_edge_slice_free(&d->slice); /* the pairs; the source and node data stay */
  free(send);
  send = NULL;

  phase_begin(d);
  st = clean_fold(d, recv, received, report);
  if (st == HALO_OK) recv = NULL; /* freed: the rows are in d->g */
  HALO_TRY(phase_end(d, st));
  local[2] = report->duplicates;
  local[3] = report->reverse_added;
  local[4] = report->isolated;
  const int64_t kept = d->g.indptr[d->g.rows];
  int64_t sums[5];
  HALO_MPI(MPI_Allreduce(local, sums, 5, MPI_INT64_T, MPI_SUM, d->comm));
  HALO_MPI(MPI_Allreduce(&kept, &d->g.edges, 1, MPI_INT64_T, MPI_SUM, d->comm));
  *report = (halo_clean_report){.input_edges = sums[0],
                                .self_loops = sums[1],
                                .duplicates = sums[2],
                                .reverse_added = sums[3],
                                .isolated = sums[4]};
done:
  halo__dist_xfer_free(&total);
  halo__dist_xfer_free(&x);
  free(send);
  free(recv);
  free(at);
  free(counts);
  return st;
}
