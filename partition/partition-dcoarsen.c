/* The distributed multilevel around PT-Scotch: coarsening by label
 * propagation inside each rank's block, and refinement of the projected
 * parts (partition-dcoarsen.h).
 *
 * Clustering looks at the edges of a rank's own block only, so that it
 * needs no communication and a cluster's weight is known exactly where the
 * cluster is: it never exceeds max_weight.  What crosses ranks is one
 * exchange of coarse ids per level (a ghost's coarse vertex) and, in the
 * refinement, one exchange of parts and two small reductions per round.
 */
#include "partition-dcoarsen.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of label propagation a level (fewer when a round moves under 1%
 * of the rows), and of refinement (each an upward and a downward half;
 * fewer when a pair moves nothing).  In a trial on a 100,000-node SBM at
 * K = 2 with smaller clusters (1/512 of a part), 16 rounds took the cut
 * from 1.41x METIS' (1 round) to 1.02x. */
#define LP_ROUNDS 5
#define REFINE_ROUNDS 16

/* The minimum of every rank's status; a rank that did not fail but learns
 * that one did gets HALO_ERR_PEER (the failed rank said why). */
static halo_status agree(MPI_Comm comm, halo_status st) {
  int mine = (int)st, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Allreduce failed agreeing on the coarsening's status");
    return HALO_ERR_MPI;
  }
  if (all >= 0) return HALO_OK;
  return st < 0 ? st : HALO_ERR_PEER;
}

#define TRY_MPI(call)                                       \
  do {                                                      \
    if ((call) != MPI_SUCCESS) {                            \
      halo_log_error("%s failed in the coarsening", #call); \
      st = HALO_ERR_MPI;                                    \
      goto done;                                            \
    }                                                       \
  } while (0)

/* calloc of count elements (at least one): non-NULL on success. */
#define NEW(ptr, count) ((ptr) = calloc((size_t)((count) > 0 ? (count) : 1), sizeof *(ptr)))

/* Agrees on st; on a failure anywhere, jumps to done. */
#define AGREE(st)                                         \
  do {                                                    \
    if (((st) = agree(comm, (st))) != HALO_OK) goto done; \
  } while (0)

/* Logs the out-of-memory line for `what` and fails st when ok is 0. */
static halo_status memory(int ok, const char *what) {
  if (ok) return HALO_OK;
  halo_log_error("out of memory allocating %s", what);
  return HALO_ERR_NOMEM;
}

static inline int64_t weight_of(const int64_t *w, int64_t i) { return w ? w[i] : 1; }

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The neighbours of a rank's block held by other ranks (its ghosts), and
 * the plan that brings a value of each from its owner: ids sorted, so the
 * ghosts of one owner are contiguous and in the order the owner sends. */
typedef struct ghosts {
  int64_t n, *id;             /* sorted, unique */
  int *rcount, *rdispl;       /* ghosts by owner */
  int64_t nsend, *srow, *buf; /* rows other ranks asked for, grouped by rank; scratch */
  int *scount, *sdispl;
} ghosts;

static void ghosts_free(ghosts *gh) {
  free(gh->id);
  free(gh->rcount);
  free(gh->rdispl);
  free(gh->srow);
  free(gh->buf);
  free(gh->scount);
  free(gh->sdispl);
  *gh = (ghosts){0};
}

static inline int in_block(const halo_dgraph *g, int64_t v) {
  return v >= g->begin && v < g->begin + g->rows;
}

/* The index of ghost v (which must be one). */
static inline int64_t ghost_index(const ghosts *gh, int64_t v) {
  int64_t lo = 0, hi = gh->n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (gh->id[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Collective (agreed). */
static halo_status ghosts_build(MPI_Comm comm, const halo_dgraph *g, ghosts *gh) {
  halo_status st = HALO_OK;
  int ranks = 1;
  int64_t *begins = NULL, far = 0;
  MPI_Comm_size(comm, &ranks);
  *gh = (ghosts){0};
  const int64_t edges = g->indptr[g->rows];
  for (int64_t e = 0; e < edges; e++) far += !in_block(g, g->nbr[e]);
  st = memory(NEW(begins, ranks + 1) && NEW(gh->id, far) && NEW(gh->rcount, ranks) &&
                  NEW(gh->rdispl, ranks) && NEW(gh->scount, ranks) && NEW(gh->sdispl, ranks),
              "the coarsening's ghost lists");
  AGREE(st);
  TRY_MPI(MPI_Allgather(&g->begin, 1, MPI_INT64_T, begins, 1, MPI_INT64_T, comm));
  begins[ranks] = g->nodes;
  for (int64_t e = 0; e < edges; e++)
    if (!in_block(g, g->nbr[e])) gh->id[gh->n++] = g->nbr[e];
  qsort(gh->id, (size_t)gh->n, sizeof *gh->id, cmp_i64);
  {
    int64_t u = 0;
    for (int64_t i = 0; i < gh->n; i++)
      if (u == 0 || gh->id[i] != gh->id[u - 1]) gh->id[u++] = gh->id[i];
    gh->n = u;
    int64_t *fit = realloc(gh->id, (size_t)(u ? u : 1) * sizeof *fit);
    if (fit) gh->id = fit; /* the ids of every cross-rank edge, deduplicated */
  }
  if (gh->n > INT_MAX) {
    halo_log_error("a block has %lld ghosts; the coarsening's exchange counts are int",
                   (long long)gh->n);
    st = HALO_ERR_LIMIT;
  }
  for (int64_t i = 0, q = 0; i < gh->n && st == HALO_OK; i++) {
    while (gh->id[i] >= begins[q + 1]) q++;
    gh->rcount[q]++;
  }
  AGREE(st);
  TRY_MPI(MPI_Alltoall(gh->rcount, 1, MPI_INT, gh->scount, 1, MPI_INT, comm));
  for (int q = 0; q < ranks; q++) gh->nsend += gh->scount[q];
  if (gh->nsend <= INT_MAX)
    for (int q = 0; q < ranks; q++) {
      gh->rdispl[q] = q ? gh->rdispl[q - 1] + gh->rcount[q - 1] : 0;
      gh->sdispl[q] = q ? gh->sdispl[q - 1] + gh->scount[q - 1] : 0;
    }
  if (gh->nsend > INT_MAX) {
    halo_log_error("a block is asked for %lld rows; the coarsening's exchange counts are int",
                   (long long)gh->nsend);
    st = HALO_ERR_LIMIT;
  }
  if (st == HALO_OK) {
    gh->srow = calloc((size_t)(gh->nsend ? gh->nsend : 1), sizeof *gh->srow);
    gh->buf = calloc((size_t)(gh->nsend ? gh->nsend : 1), sizeof *gh->buf);
    if (!gh->srow || !gh->buf) {
      halo_log_error("out of memory allocating the coarsening's send lists");
      st = HALO_ERR_NOMEM;
    }
  }
  AGREE(st);
  TRY_MPI(MPI_Alltoallv(gh->id, gh->rcount, gh->rdispl, MPI_INT64_T, gh->srow, gh->scount,
                        gh->sdispl, MPI_INT64_T, comm));
  for (int64_t i = 0; i < gh->nsend; i++) gh->srow[i] -= g->begin;
done:
  free(begins);
  if (st != HALO_OK) ghosts_free(gh);
  return st;
}

/* value[ghost i] for every ghost, from val[row] on its owner. Collective. */
static halo_status ghosts_exchange(MPI_Comm comm, ghosts *gh, const int64_t *val, int64_t *gval) {
  for (int64_t i = 0; i < gh->nsend; i++) gh->buf[i] = val[gh->srow[i]];
  if (MPI_Alltoallv(gh->buf, gh->scount, gh->sdispl, MPI_INT64_T, gval, gh->rcount, gh->rdispl,
                    MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Alltoallv failed exchanging the coarsening's ghost values");
    return HALO_ERR_MPI;
  }
  return HALO_OK;
}

void halo__wdgraph_free(halo__wdgraph *w) {
  free(w->g.indptr);
  free(w->g.nbr);
  free(w->vwgt);
  free(w->ewgt);
  *w = (halo__wdgraph){0};
}

/* Label propagation over the edges inside the block: label[r] is a row of
 * the block, each cluster at most max_weight.  Rows are visited in order;
 * a row joins the cluster its block-internal edges weigh most towards (on
 * a tie the lighter cluster, then the lower label) when it has room, and
 * stays on a tie with its own.
 * Local. */
static void propagate(const halo__wdgraph *w, int64_t max_weight, int64_t *label, int64_t *cw,
                      int64_t *conn, int64_t *touched) {
  const halo_dgraph *g = &w->g;
  for (int64_t r = 0; r < g->rows; r++) {
    label[r] = r;
    cw[r] = weight_of(w->vwgt, r);
    conn[r] = 0;
  }
  for (int round = 0; round < LP_ROUNDS; round++) {
    int64_t moved = 0;
    for (int64_t r = 0; r < g->rows; r++) {
      const int64_t cur = label[r], wr = weight_of(w->vwgt, r);
      int64_t nt = 0;
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t v = g->nbr[e];
        if (!in_block(g, v)) continue;
        const int64_t l = label[v - g->begin];
        if (conn[l] == 0) touched[nt++] = l;
        conn[l] += weight_of(w->ewgt, e);
      }
      int64_t best = cur, best_conn = conn[cur];
      for (int64_t i = 0; i < nt; i++) {
        const int64_t l = touched[i];
        if (l == cur || cw[l] + wr > max_weight) continue;
        if (conn[l] > best_conn || (conn[l] == best_conn && best != cur &&
                                    (cw[l] < cw[best] || (cw[l] == cw[best] && l < best)))) {
          best = l;
          best_conn = conn[l];
        }
      }
      for (int64_t i = 0; i < nt; i++) conn[touched[i]] = 0;
      if (best != cur) {
        cw[cur] -= wr;
        cw[best] += wr;
        label[r] = best;
        moved++;
      }
    }
    if (moved * 100 < g->rows) break;
  }
}

typedef struct wedge {
  int64_t to, w;
} wedge;

static int cmp_wedge(const void *a, const void *b) {
  const int64_t x = ((const wedge *)a)->to, y = ((const wedge *)b)->to;
  return (x > y) - (x < y);
}

halo_status halo__dcoarsen(MPI_Comm comm, const halo__wdgraph *fine, int64_t max_weight,
                           halo__wdgraph *coarse, int64_t **cluster_out) {
  halo_status st = HALO_OK;
  int64_t *cluster = NULL;
  const halo_dgraph *g = &fine->g;
  const int64_t rows = g->rows, edges = g->indptr[rows];
  int64_t *label = NULL, *cw = NULL, *conn = NULL, *touched = NULL, *gcid = NULL;
  int64_t *mstart = NULL, *member = NULL;
  wedge *buf = NULL;
  ghosts gh = {0};
  halo__wdgraph c = {0};
  int64_t crows = 0, cbegin = 0, cnodes = 0, cedges = 0;

  *cluster_out = NULL;
  st = memory(NEW(label, rows) && NEW(cw, rows) && NEW(conn, rows) && NEW(touched, rows) &&
                  NEW(cluster, rows),
              "the coarsening's labels");
  AGREE(st);
  propagate(fine, max_weight, label, cw, conn, touched);

  /* Clusters numbered in the order of their first row; conn is reused as
   * label -> cluster. */
  for (int64_t r = 0; r < rows; r++) conn[r] = -1;
  for (int64_t r = 0; r < rows; r++) {
    if (conn[label[r]] < 0) conn[label[r]] = crows++;
    cluster[r] = conn[label[r]];
  }
  TRY_MPI(MPI_Exscan(&crows, &cbegin, 1, MPI_INT64_T, MPI_SUM, comm));
  {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) cbegin = 0;
  }
  TRY_MPI(MPI_Allreduce(&crows, &cnodes, 1, MPI_INT64_T, MPI_SUM, comm));

  /* Each ghost's coarse id, from its owner. */
  HALO_TRY(ghosts_build(comm, g, &gh));
  for (int64_t r = 0; r < rows; r++) label[r] = cbegin + cluster[r];
  st = memory(NEW(gcid, gh.n) != NULL, "the ghosts' coarse ids");
  AGREE(st);
  HALO_TRY(ghosts_exchange(comm, &gh, label, gcid));

  /* The members of each cluster (counting sort), then each cluster's edges:
   * its members' edges to other clusters, merged by coarse neighbour. */
  /* The edge arrays' untouched pages cost nothing: the edges a cluster
   * keeps are fewer than its members', and the arrays shrink to them below. */
  int64_t widest = 0;
  if (NEW(mstart, crows + 1) && NEW(member, rows) && NEW(c.g.indptr, crows + 1) &&
      NEW(c.vwgt, crows) && NEW(c.g.nbr, edges) && NEW(c.ewgt, edges)) {
    memset(touched, 0, (size_t)crows * sizeof *touched);
    for (int64_t r = 0; r < rows; r++) {
      mstart[cluster[r] + 1]++;
      touched[cluster[r]] += g->indptr[r + 1] - g->indptr[r];
    }
    for (int64_t k = 0; k < crows; k++) {
      mstart[k + 1] += mstart[k];
      if (touched[k] > widest) widest = touched[k];
    }
    NEW(buf, widest);
  }
  st = memory(buf != NULL, "the coarse graph");
  AGREE(st);
  for (int64_t k = 0; k < crows; k++) conn[k] = mstart[k];
  for (int64_t r = 0; r < rows; r++) member[conn[cluster[r]]++] = r;
  for (int64_t k = 0; k < crows; k++) {
    const int64_t self = cbegin + k;
    int64_t n = 0;
    for (int64_t i = mstart[k]; i < mstart[k + 1]; i++) {
      const int64_t r = member[i];
      c.vwgt[k] += weight_of(fine->vwgt, r);
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t v = g->nbr[e];
        const int64_t to =
            in_block(g, v) ? cbegin + cluster[v - g->begin] : gcid[ghost_index(&gh, v)];
        if (to != self) buf[n++] = (wedge){to, weight_of(fine->ewgt, e)};
      }
    }
    qsort(buf, (size_t)n, sizeof *buf, cmp_wedge);
    for (int64_t i = 0; i < n; i++) {
      if (i > 0 && buf[i].to == buf[i - 1].to) {
        c.ewgt[cedges - 1] += buf[i].w;
        continue;
      }
      c.g.nbr[cedges] = buf[i].to;
      c.ewgt[cedges++] = buf[i].w;
    }
    c.g.indptr[k + 1] = cedges;
  }
  {
    int64_t *nbr = realloc(c.g.nbr, (size_t)(cedges ? cedges : 1) * sizeof *nbr);
    int64_t *ew = realloc(c.ewgt, (size_t)(cedges ? cedges : 1) * sizeof *ew);
    if (nbr) c.g.nbr = nbr;
    if (ew) c.ewgt = ew;
  }
  c.g.nodes = cnodes;
  c.g.begin = cbegin;
  c.g.rows = crows;
  TRY_MPI(MPI_Allreduce(&cedges, &c.g.edges, 1, MPI_INT64_T, MPI_SUM, comm));
  *coarse = c;
  c = (halo__wdgraph){0};
  *cluster_out = cluster;
  cluster = NULL;

done:
  halo__wdgraph_free(&c);
  ghosts_free(&gh);
  free(label);
  free(cw);
  free(conn);
  free(touched);
  free(gcid);
  free(mstart);
  free(member);
  free(buf);
  free(cluster);
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
  ghosts gh = {0};
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);

  HALO_TRY(ghosts_build(comm, g, &gh));
  st = memory(NEW(own, g->rows) && NEW(gpart, gh.n) && NEW(pw, parts) && NEW(delta, parts) &&
                  NEW(room, parts) && NEW(conn, parts) && NEW(touched, parts) && NEW(shed, parts),
              "the refinement's part weights");
  AGREE(st);
  for (int64_t r = 0; r < g->rows; r++) delta[part[r]] += weight_of(w->vwgt, r);
  TRY_MPI(MPI_Allreduce(delta, pw, parts, MPI_INT64_T, MPI_SUM, comm));

  for (int round = 0; round < 2 * REFINE_ROUNDS; round++) {
    const int up = round % 2 == 0;
    int64_t moved = 0, moved_all = 0;
    for (int64_t r = 0; r < g->rows; r++) own[r] = part[r];
    HALO_TRY(ghosts_exchange(comm, &gh, own, gpart));
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
      const int64_t wr = weight_of(w->vwgt, r);
      int32_t nt = 0;
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t v = g->nbr[e];
        const int32_t q = in_block(g, v) ? part[v - g->begin] : (int32_t)gpart[ghost_index(&gh, v)];
        if (conn[q] == 0) touched[nt++] = q;
        conn[q] += weight_of(w->ewgt, e);
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
    TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, delta, parts, MPI_INT64_T, MPI_SUM, comm));
    for (int32_t q = 0; q < parts; q++) pw[q] += delta[q];
    TRY_MPI(MPI_Allreduce(&moved, &moved_all, 1, MPI_INT64_T, MPI_SUM, comm));
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
  ghosts_free(&gh);
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
