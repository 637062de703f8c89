/* The distributed partitioner's parts and their routing (dist-impl.h):
 * part[] from PT-Scotch (or the test hook), the neighbours' parts and
 * degrees, and each part's rows packed into records, routed to the rank
 * that writes it and unpacked there. */
#include "dist-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- partition -------------------------------------------------------- */

/* The test hook (HALO_TEST_PARTS_FILE, programs/cli-env.c): a file of one
 * part per line, node v's on line v + 1, which replaces PT-Scotch's
 * assignment, so that a test can give the distributed writer the
 * sequential one's.  Not a user feature. Local. */
static halo_status import_parts(dist *d, const char *path) {
  halo_status st = HALO_OK;
  FILE *f = fopen(path, "r");
  char buf[64];
  int64_t v = 0;
  const int64_t end = d->g.begin + d->g.rows;
  if (!f) HALO_FAIL(HALO_ERR_IO, "HALO_TEST_PARTS_FILE %s: cannot open: %s", path, strerror(errno));
  for (; v < end && fgets(buf, sizeof buf, f); v++) {
    char *stop = NULL;
    const long p = strtol(buf, &stop, 10);
    if (stop == buf || (*stop != '\n' && *stop != '\0') || p < 0 || p >= d->rq->opt.parts)
      HALO_FAIL(HALO_ERR_PARSE, "%s:%" PRId64 ": not a part in [0, %d)", path, v + 1,
                d->rq->opt.parts);
    if (v >= d->g.begin) d->part[v - d->g.begin] = (int32_t)p;
  }
  if (v < end)
    HALO_FAIL(HALO_ERR_PARSE, "%s: %" PRId64 " lines, but the graph has %" PRId64 " nodes", path, v,
              d->g.nodes);
done:
  if (f) fclose(f);
  return st;
}

/* part[] of the block, from PT-Scotch or the test hook.  Collective
 * (agreed). */
halo_status halo__dist_assign_parts(dist *d) {
  halo_status st = HALO_OK;
  const char *hook = d->rq->parts_file;
  phase_begin(d);
  d->part = calloc((size_t)(d->g.rows > 0 ? d->g.rows : 1), sizeof *d->part);
  if (!d->part) {
    halo_log_error("out of memory allocating the part vector");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  phase_begin(d);
  if (hook)
    st = import_parts(d, hook);
  else
    st = halo_partition_ptscotch(d->comm, &d->g, &d->rq->opt, d->slice.source, d->part);
  HALO_TRY(phase_end(d, st));
done:
  return st;
}

/* The whole part vector on rank 0 (NULL elsewhere), for the manifest and
 * the run id.  Collective (agreed). */
halo_status halo__dist_gather_parts(dist *d, int32_t **all) {
  halo_status st = HALO_OK;
  int *counts = NULL, *displs = NULL;
  *all = NULL;
  phase_begin(d);
  if (d->rank == 0) {
    counts = malloc((size_t)d->size * sizeof *counts);
    displs = malloc((size_t)d->size * sizeof *displs);
    *all = malloc((size_t)d->g.nodes * sizeof **all);
    if (!counts || !displs || !*all) {
      halo_log_error("out of memory allocating the part vector of %" PRId64 " nodes", d->g.nodes);
      st = HALO_ERR_NOMEM;
    }
    for (int k = 0; st == HALO_OK && k < d->size; k++) {
      displs[k] = (int)d->begins[k];
      counts[k] = (int)(d->begins[k + 1] - d->begins[k]);
    }
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Gatherv(d->part, (int)d->g.rows, MPI_INT32_T, *all, counts, displs, MPI_INT32_T, 0,
                       d->comm));
done:
  free(displs);
  free(counts);
  return st;
}

/* ---- neighbours' parts and degrees ------------------------------------ */

/* The neighbours of the block outside it, sorted, once each, and how many
 * each rank owns. Local. */
static halo_status ghost_ids(dist *d, int64_t *counts) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &d->g;
  const int64_t nnz = g->indptr[g->rows], end = g->begin + g->rows;
  int64_t count = 0;
  HALO_ALLOC(d->ghost, nnz, "neighbour ids");
  for (int64_t k = 0; k < nnz; k++)
    if (g->nbr[k] < g->begin || g->nbr[k] >= end) d->ghost[count++] = g->nbr[k];
  qsort(d->ghost, (size_t)count, sizeof *d->ghost, halo_compare_i64);
  d->ghosts = 0;
  for (int64_t i = 0; i < count; i++)
    if (d->ghosts == 0 || d->ghost[i] != d->ghost[d->ghosts - 1])
      d->ghost[d->ghosts++] = d->ghost[i];
  for (int64_t i = 0; i < d->ghosts; i++) counts[row_owner(d, d->ghost[i])]++;
  HALO_ALLOC(d->ghost_part, d->ghosts, "neighbour parts");
  HALO_ALLOC(d->ghost_degree, d->ghosts, "neighbour degrees");
done:
  return st;
}

/* Each rank asks the owners of its ghosts for their part and degree.
 * Collective (agreed). */
halo_status halo__dist_ghost_info(dist *d) {
  halo_status st = HALO_OK;
  int64_t *counts = NULL, *asked = NULL, *answer = NULL, *got = NULL;
  xfer x = {0};
  phase_begin(d);
  counts = calloc((size_t)d->size, sizeof *counts);
  st = counts ? ghost_ids(d, counts) : HALO_ERR_NOMEM;
  if (!counts) halo_log_error("out of memory allocating exchange counts");
  HALO_TRY(phase_end(d, st));
  HALO_TRY(halo__dist_xfer_plan(d, counts, "the neighbour exchange", &x));
  phase_begin(d);
  asked = malloc((size_t)(x.received > 0 ? x.received : 1) * sizeof *asked);
  answer = malloc((size_t)(x.received > 0 ? 2 * x.received : 1) * sizeof *answer);
  got = malloc((size_t)(d->ghosts > 0 ? 2 * d->ghosts : 1) * sizeof *got);
  if (!asked || !answer || !got) {
    halo_log_error("out of memory allocating the neighbour exchange");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(
      MPI_Alltoallv(d->ghost, x.scount, x.sdispl, MPI_INT64_T, asked, x.rcount, x.rdispl, MPI_INT64_T, d->comm));
  for (int64_t i = 0; i < x.received; i++) {
    const int64_t r = asked[i] - d->g.begin;
    answer[2 * i] = d->part[r];
    answer[2 * i + 1] = d->g.indptr[r + 1] - d->g.indptr[r];
  }
  HALO_MPI(MPI_Alltoallv(answer, x.rcount, x.rdispl, d->pair_type, got, x.scount, x.sdispl, d->pair_type, d->comm));
  for (int64_t i = 0; i < d->ghosts; i++) {
    d->ghost_part[i] = got[2 * i];
    d->ghost_degree[i] = got[2 * i + 1];
  }
done:
  halo__dist_xfer_free(&x);
  free(got);
  free(answer);
  free(asked);
  free(counts);
  return st;
}

/* Neighbour v's part and degree: v is in the block or a ghost. Local. */
static void neighbour(const dist *d, int64_t v, int64_t *part, int64_t *degree) {
  const halo_dgraph *g = &d->g;
  if (v >= g->begin && v < g->begin + g->rows) {
    *part = d->part[v - g->begin];
    *degree = g->indptr[v - g->begin + 1] - g->indptr[v - g->begin];
    return;
  }
  const int64_t lo = halo_lower_bound(d->ghost, d->ghosts, v);
  *part = d->ghost_part[lo];
  *degree = d->ghost_degree[lo];
}

/* ---- parts to their writers ------------------------------------------- */

/* The records of the block's rows of parts [first, first + K), by writer
 * rank: counts (out == NULL), or the records at out + at[writer]. Local. */
static void pack_rows(const dist *d, int32_t first, int64_t *counts, int64_t *out, int64_t *at) {
  const halo_dgraph *g = &d->g;
  for (int64_t r = 0; r < g->rows; r++) {
    const int32_t w = d->part[r] - first;
    if (w < 0 || w >= d->size) continue;
    if (!out) {
      counts[w] += record_items(d, r);
      continue;
    }
    int64_t *rec = out + at[w];
    rec[0] = g->begin + r;
    rec[1] = d->original ? d->original[r] : -1;
    rec[2] = g->indptr[r + 1] - g->indptr[r];
    if (d->has_file_labels) rec[3] = d->labels[r];
    if (d->split) rec[3 + d->has_file_labels] = d->split[r];
    if (d->file_multilabel) {
      int64_t *tasks = rec + 3 + d->has_file_labels + (d->split != NULL);
      tasks[target_items(d) - 1] = 0; /* the part of a last item no task fills */
      memcpy(tasks, d->targets + r * d->file_classes, (size_t)d->file_classes);
    }
    if (d->x_sparse) {
      const int64_t at = d->xc.indptr[r], nz = d->xc.indptr[r + 1] - at, half = (nz + 1) / 2;
      int64_t *tail = rec + record_head(d) + 3 * (g->indptr[r + 1] - g->indptr[r]);
      rec[record_x_at(d)] = nz;
      if (nz > 0) { /* the halves of last items no column or value fills */
        tail[half - 1] = 0;
        tail[2 * half - 1] = 0;
      }
      memcpy(tail, d->xc.indices + at, (size_t)nz * sizeof *d->xc.indices);
      memcpy(tail + half, d->xc.values + at, (size_t)nz * sizeof *d->xc.values);
    } else if (d->file_features > 0) {
      int64_t *row = rec + record_x_at(d);
      row[(d->file_features + 1) / 2 - 1] = 0; /* the half of a last item no float fills */
      memcpy(row, d->x + r * d->file_features, (size_t)d->file_features * sizeof *d->x);
    }
    for (int64_t k = g->indptr[r], i = record_head(d); k < g->indptr[r + 1]; k++, i += 3) {
      rec[i] = g->nbr[k];
      neighbour(d, g->nbr[k], &rec[i + 1], &rec[i + 2]);
    }
    at[w] += record_items(d, r);
  }
}

/* In rounds of K parts, part first + k goes to rank k, which writes it.
 * Collective (agreed). */
halo_status halo__dist_route_and_write(dist *d, uint64_t run_id, written *w) {
  halo_status st = HALO_OK;
  const int32_t P = d->rq->opt.parts;
  int64_t *counts = NULL, *at = NULL, *send = NULL, *recv = NULL;
  MPI_Datatype unit = MPI_DATATYPE_NULL;
  xfer x = {0};
  phase_begin(d);
  counts = calloc((size_t)d->size, sizeof *counts);
  at = calloc((size_t)d->size, sizeof *at);
  if (!counts || !at) {
    halo_log_error("out of memory allocating exchange counts");
    st = HALO_ERR_NOMEM;
  }
  HALO_TRY(phase_end(d, st));
  HALO_MPI(MPI_Type_contiguous(ROUTE_UNIT, MPI_INT64_T, &unit));
  HALO_MPI(MPI_Type_commit(&unit));
  for (int32_t first = 0; first < P; first += d->size) {
    memset(counts, 0, (size_t)d->size * sizeof *counts);
    pack_rows(d, first, counts, NULL, NULL);
    for (int k = 0; k < d->size; k++) counts[k] = route_units(counts[k]);
    HALO_TRY(halo__dist_xfer_plan(d, counts, "routing the parts", &x));
    const int64_t sent = x.sent * ROUTE_UNIT, received = x.received * ROUTE_UNIT;
    phase_begin(d);
    st = halo__dist_admit(d->slice.source, "routing a part", 8.0 * (double)(sent + received));
    if (st == HALO_OK) {
      send = malloc((size_t)(sent > 0 ? sent : 1) * sizeof *send);
      recv = malloc((size_t)(received > 0 ? received : 1) * sizeof *recv);
      if (!send || !recv) {
        halo_log_error("out of memory allocating the rows of a part");
        st = HALO_ERR_NOMEM;
      }
    }
    HALO_TRY(phase_end(d, st));
    for (int k = 0; k < d->size; k++) at[k] = (int64_t)x.sdispl[k] * ROUTE_UNIT;
    pack_rows(d, first, counts, send, at);
    for (int k = 0; k < d->size; k++) /* pad to the next writer's records */
      for (int64_t i = at[k]; i < ((int64_t)x.sdispl[k] + x.scount[k]) * ROUTE_UNIT; i++) send[i] = -1;
    HALO_MPI(MPI_Alltoallv(send, x.scount, x.sdispl, unit, recv, x.rcount, x.rdispl, unit, d->comm));
    free(send);
    send = NULL;
    phase_begin(d);
    const int32_t p = first + d->rank;
    if (p < P) st = halo__dist_write_part(d, p, &recv, received, run_id, w);
    free(recv);
    recv = NULL;
    halo__dist_xfer_free(&x);
    HALO_TRY(phase_end(d, st));
    const int64_t done_parts = first + d->size < P ? first + d->size : P;
    if (d->rank == 0 && d->rq->progress) d->rq->progress(d->rq->ctx, done_parts, P);
  }
done:
  if (unit != MPI_DATATYPE_NULL) MPI_Type_free(&unit);
  halo__dist_xfer_free(&x);
  free(recv);
  free(send);
  free(at);
  free(counts);
  return st;
}
