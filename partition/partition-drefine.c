/* The distributed multilevel around PT-Scotch, on the way back: the parts
 * of a coarse level projected onto the finer one, and their refinement by
 * moves of boundary vertices (partition-dcoarsen.h).  A vertex's part on
 * another rank is read through the ghosts of the level (halo__ghosts). */
#include "partition-dcoarsen.h"

#include <stdlib.h>

#include "halo-mpi.h"

/* Rounds of refinement (each an upward and a downward half; fewer when a
 * pair moves nothing).  In a trial on a 100,000-node SBM at K = 2 with
 * smaller clusters (1/512 of a part), 16 rounds of refinement took the cut
 * from 1.41x METIS' (1 round) to 1.02x. */
#define REFINE_ROUNDS 16

halo_status halo__dproject(MPI_Comm comm, const halo_dgraph *coarse, int64_t rows,
                           const int64_t *cluster, const int32_t *coarse_part, int32_t *part) {
  halo_status st = HALO_OK;
  int ranks = 1;
  int64_t *begins = NULL, *val = NULL, *out = NULL;
  halo_route rt = {0};
  MPI_Comm_size(comm, &ranks);
  st = halo__dmemory(
      HALO_CALLOC(begins, ranks + 1) && HALO_CALLOC(val, coarse->rows) && HALO_CALLOC(out, rows),
      "the projection of the parts");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo_route_begins(comm, coarse->begin, coarse->nodes, "the coarsening", begins));
  HALO_TRY(halo_route_build(comm, begins, cluster, rows, "the coarsening", &rt));
  for (int64_t k = 0; k < coarse->rows; k++) val[k] = coarse_part[k];
  HALO_TRY(halo_route_fetch(comm, &rt, val, out));
  for (int64_t r = 0; r < rows; r++) part[r] = (int32_t)out[r];
done:
  halo_route_free(&rt);
  free(begins);
  free(val);
  free(out);
  return st;
}

halo_status halo__drefine(MPI_Comm comm, const halo__wdgraph *w, int32_t parts,
                          int64_t max_part_weight, int warn, int32_t *part) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &w->g;
  int ranks = 1, rank = 0;
  int64_t pair_moved = 0;
  int64_t *own = NULL, *gpart = NULL, *pw = NULL, *delta = NULL, *room = NULL, *conn = NULL;
  int64_t *shed = NULL;
  int32_t *touched = NULL;
  halo__ghosts gh = {0};
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);

  HALO_TRY(halo__ghosts_build(comm, g, &gh));
  st = halo__dmemory(HALO_CALLOC(own, g->rows) && HALO_CALLOC(gpart, gh.n) &&
                         HALO_CALLOC(pw, parts) && HALO_CALLOC(delta, parts) &&
                         HALO_CALLOC(room, parts) && HALO_CALLOC(conn, parts) &&
                         HALO_CALLOC(touched, parts) && HALO_CALLOC(shed, parts),
                     "the refinement's part weights");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int64_t r = 0; r < g->rows; r++) delta[part[r]] += halo__weight_of(w->vwgt, r);
  HALO_MPI(MPI_Allreduce(delta, pw, parts, MPI_INT64_T, MPI_SUM, comm));

  for (int round = 0; round < 2 * REFINE_ROUNDS; round++) {
    const int up = round % 2 == 0;
    int64_t moved = 0, moved_all = 0;
    for (int64_t r = 0; r < g->rows; r++) own[r] = part[r];
    HALO_TRY(halo__ghosts_exchange(comm, &gh, own, gpart));
    /* Each rank may fill its share of a part's room this round, and take
     * its share of a part's excess out at a loss (the shares add up to the
     * room and the excess), so that the moves of all ranks together keep
     * every part within the bound and shed no more than the excess. */
    for (int32_t q = 0; q < parts; q++) {
      const int64_t slack = pw[q] < max_part_weight ? max_part_weight - pw[q] : 0;
      const int64_t excess = pw[q] > max_part_weight ? pw[q] - max_part_weight : 0;
      room[q] = slack / ranks + (rank < slack % ranks);
      shed[q] = excess / ranks + (rank < excess % ranks);
      delta[q] = 0;
    }
    for (int64_t r = 0; r < g->rows; r++) {
      const int32_t p = part[r];
      const int64_t wr = halo__weight_of(w->vwgt, r);
      int32_t nt = 0;
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t i = gh.at[e];
        const int32_t q = i < g->rows ? part[i] : (int32_t)gpart[i - g->rows];
        if (conn[q] == 0) touched[nt++] = q;
        conn[q] += halo__weight_of(w->ewgt, e);
      }
      const int over = shed[p] > 0;
      int32_t best = -1;
      int64_t best_gain = 0;
      for (int32_t i = 0; i < nt; i++) {
        const int32_t q = touched[i];
        /* A vertex leaving a part over the bound may go either way. */
        if (q == p || (!over && (up ? q < p : q > p)) || room[q] < wr) continue;
        const int64_t gain = conn[q] - conn[p];
        if ((best < 0 && (gain > 0 || over)) || (best >= 0 && gain > best_gain) ||
            (best >= 0 && gain == best_gain && q < best)) {
          best = q;
          best_gain = gain;
        }
      }
      for (int32_t i = 0; i < nt; i++) conn[touched[i]] = 0;
      conn[p] = 0;
      if (best < 0) continue;
      if (over) shed[p] -= wr;
      part[r] = best;
      delta[p] -= wr;
      delta[best] += wr;
      room[best] -= wr;
      moved++;
    }
    HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, delta, parts, MPI_INT64_T, MPI_SUM, comm));
    for (int32_t q = 0; q < parts; q++) pw[q] += delta[q];
    HALO_MPI(MPI_Allreduce(&moved, &moved_all, 1, MPI_INT64_T, MPI_SUM, comm));
    pair_moved += moved_all;
    if (!up) {
      if (pair_moved == 0) break;
      pair_moved = 0;
    }
  }
  {
    int32_t heaviest = 0;
    for (int32_t q = 1; q < parts; q++)
      if (pw[q] > pw[heaviest]) heaviest = q;
    if (warn && rank == 0 && pw[heaviest] > max_part_weight)
      halo_log_warn(
          "the refined parts are out of balance: part %d weighs %lld, over the bound "
          "%lld",
          heaviest, (long long)pw[heaviest], (long long)max_part_weight);
  }
done:
  halo__ghosts_free(&gh);
  free(own);
  free(gpart);
  free(pw);
  free(delta);
  free(room);
  free(conn);
  free(touched);
  free(shed);
  return st;
}
