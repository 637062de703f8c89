/* The distributed multilevel around PT-Scotch, its coarsening: label
 * propagation across the ranks, and the coarse graph it gives, on the
 * ghosts of each rank's block (partition-dcoarsen.h; the projection and
 * refinement of the parts are partition-drefine.c).
 *
 * A cluster is named by a label, the global id of a row, and its weight is
 * kept by the rank whose block holds that row (the label's home).  A round
 * of label propagation sweeps a rank's rows against its neighbours' labels
 * of the round's start (a ghost's from its owner), asks each label's home
 * for room for the weight it would add, and takes back the moves that got
 * none, so that no cluster grows past max_weight however many ranks add to
 * it.  The coarse vertices are numbered by home and cut into blocks of
 * equal load; the coarse edges are sent to the block that holds their
 * first end, merged on each side.  What crosses ranks is values keyed by global
 * ids, routed to the rank that holds them (halo_route, comm/halo-route.h).
 */
#include "partition-dcoarsen.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "halo-mpi.h"
#include "halo-search.h"

/* Rounds of label propagation a level (fewer when a round moves under 1%
 * of the rows). */
#define LP_ROUNDS 5

/* Sorts id[0..n) and drops repeats; the new count. */
static int64_t sort_unique(int64_t *id, int64_t n) {
  qsort(id, (size_t)n, sizeof *id, halo_compare_i64);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (u == 0 || id[i] != id[u - 1]) id[u++] = id[i];
  return u;
}

void halo__ghosts_free(halo__ghosts *gh) {
  free(gh->id);
  free(gh->at);
  halo_route_free(&gh->rt);
  *gh = (halo__ghosts){0};
}

halo_status halo__ghosts_build(MPI_Comm comm, const halo_dgraph *g, halo__ghosts *gh) {
  halo_status st = HALO_OK;
  int ranks = 1;
  int64_t *begins = NULL, far = 0;
  MPI_Comm_size(comm, &ranks);
  *gh = (halo__ghosts){0};
  const int64_t edges = g->indptr[g->rows];
  for (int64_t e = 0; e < edges; e++) far += !halo__in_block(g, g->nbr[e]);
  st = halo__dmemory(
      HALO_CALLOC(begins, ranks + 1) && HALO_CALLOC(gh->id, far) && HALO_CALLOC(gh->at, edges),
      "the coarsening's ghost lists");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo_route_begins(comm, g->begin, g->nodes, "the coarsening", begins));
  for (int64_t e = 0; e < edges; e++)
    if (!halo__in_block(g, g->nbr[e])) gh->id[gh->n++] = g->nbr[e];
  gh->n = sort_unique(gh->id, gh->n);
  {
    int64_t *fit = realloc(gh->id, (size_t)(gh->n ? gh->n : 1) * sizeof *fit);
    if (fit) gh->id = fit; /* the ids of every cross-rank edge, deduplicated */
  }
  for (int64_t e = 0; e < edges; e++) {
    const int64_t v = g->nbr[e];
    gh->at[e] = halo__in_block(g, v) ? v - g->begin : g->rows + halo_lower_bound(gh->id, gh->n, v);
  }
  HALO_TRY(halo_route_build(comm, begins, gh->id, gh->n, "the coarsening", &gh->rt));
done:
  free(begins);
  if (st != HALO_OK) halo__ghosts_free(gh);
  return st;
}

halo_status halo__ghosts_exchange(MPI_Comm comm, halo__ghosts *gh, const int64_t *val,
                                  int64_t *gval) {
  return halo_route_fetch(comm, &gh->rt, val, gval);
}

void halo__wdgraph_free(halo__wdgraph *w) {
  free(w->g.indptr);
  free(w->g.nbr);
  free(w->vwgt);
  free(w->ewgt);
  *w = (halo__wdgraph){0};
}

/* The labels a round of label propagation knows: slot s < rows is the label
 * begin + s (homed here), slot rows + f the f-th of the others, sorted. */
typedef struct slots {
  int64_t rows, begin, nf, *foreign;
} slots;

static inline int64_t label_of(const slots *s, int64_t slot) {
  return slot < s->rows ? s->begin + slot : s->foreign[slot - s->rows];
}

static inline int64_t slot_of(const slots *s, int64_t label) {
  return label >= s->begin && label < s->begin + s->rows
             ? label - s->begin
             : s->rows + halo_lower_bound(s->foreign, s->nf, label);
}

/* Scratch of label propagation, by slot (at most rows + ghosts of them). */
typedef struct lp {
  halo__ghosts *gh; /* the level's, not the lp's */
  int64_t *begins;
  int64_t *gl;            /* each ghost's label */
  int64_t *lslot, *gslot; /* each row's and ghost's slot */
  slots s;
  int64_t *ids; /* every slot's label, for the route */
  int64_t *view, *joined, *conn, *grant, *touched;
  unsigned char *far;   /* conn includes a ghost's edge */
  int64_t *mrow, *mold; /* the round's moves: row, its slot before */
  int64_t *room;        /* the home's room in each of its clusters: rows */
} lp;

static void lp_free(lp *p) {
  free(p->begins);
  free(p->gl);
  free(p->lslot);
  free(p->gslot);
  free(p->s.foreign);
  free(p->ids);
  free(p->view);
  free(p->joined);
  free(p->conn);
  free(p->grant);
  free(p->touched);
  free(p->far);
  free(p->mrow);
  free(p->mold);
  free(p->room);
  *p = (lp){0};
}

/* A hash of a label and a round (splitmix64's finaliser): the order of
 * tied labels, the same on every rank. */
static inline uint64_t mix(int64_t label, int round) {
  uint64_t z = (uint64_t)label * 0x9e3779b97f4a7c15ull + (uint64_t)round * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* One row's move in a sweep: the slot whose label its edges weigh most
 * towards (on a tie the lighter cluster, then the lower label) when it has
 * room by this rank's view, or its own (which it keeps on a tie).  A label
 * that a ghost's edge supports may be changing on the ghost's rank in this
 * very round, so it is taken only in the round's direction (a lower label
 * than the row's on even rounds, a higher on odd): two rows on two ranks
 * then never swap labels. */
static int64_t best_slot(const halo__wdgraph *w, lp *p, int64_t r, int round, int64_t max_weight) {
  const int up = round % 2 == 0;
  const halo_dgraph *g = &w->g;
  const int64_t cur = p->lslot[r], wr = halo__weight_of(w->vwgt, r), mine = label_of(&p->s, cur);
  int64_t nt = 0;
  for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
    const int local = p->gh->at[e] < g->rows;
    const int64_t l = halo__at_edge(g, p->gh, e, p->lslot, p->gslot);
    if (p->conn[l] == 0 && !p->far[l]) p->touched[nt++] = l;
    p->conn[l] += halo__weight_of(w->ewgt, e);
    p->far[l] |= !local;
  }
  int64_t best = cur, best_conn = p->conn[cur];
  for (int64_t i = 0; i < nt; i++) {
    const int64_t l = p->touched[i], label = label_of(&p->s, l);
    if (l == cur || p->view[l] + wr > max_weight) continue;
    if (p->far[l] && (up ? label < mine : label > mine)) continue;
    if (p->conn[l] > best_conn || (p->conn[l] == best_conn && best != cur &&
                                   mix(label, round) < mix(label_of(&p->s, best), round))) {
      best = l;
      best_conn = p->conn[l];
    }
  }
  for (int64_t i = 0; i < nt; i++) p->conn[p->touched[i]] = 0, p->far[p->touched[i]] = 0;
  p->conn[cur] = 0, p->far[cur] = 0;
  return best;
}

/* The round's slots: the labels of the rows and of the ghosts, and the
 * route of every slot's label to its home.  Collective (agreed). */
static halo_status lp_slots(MPI_Comm comm, const halo_dgraph *g, const int64_t *label, lp *p,
                            halo_route *rt) {
  slots *s = &p->s;
  s->nf = 0;
  for (int64_t r = 0; r < g->rows; r++)
    if (!halo__in_block(g, label[r])) s->foreign[s->nf++] = label[r];
  for (int64_t i = 0; i < p->gh->n; i++)
    if (!halo__in_block(g, p->gl[i])) s->foreign[s->nf++] = p->gl[i];
  s->nf = sort_unique(s->foreign, s->nf);
  for (int64_t r = 0; r < g->rows; r++) p->lslot[r] = slot_of(s, label[r]);
  for (int64_t i = 0; i < p->gh->n; i++) p->gslot[i] = slot_of(s, p->gl[i]);
  for (int64_t k = 0; k < g->rows + s->nf; k++) p->ids[k] = label_of(s, k);
  return halo_route_build(comm, p->begins, p->ids, g->rows + s->nf, "the coarsening", rt);
}

/* Label propagation across the ranks: label[r] is the label of row r's
 * cluster, no cluster heavier than max_weight (a row heavier alone stays
 * alone).  A round: every rank sweeps its rows in order against the labels
 * of the round's start (its own rows' as they move), then asks each
 * label's home for room for the weight it added to the cluster; a home
 * gives room in the order of the ranks that ask, out of max_weight less the
 * cluster's weight at the round's start (the rows that left it may still
 * come back), and a rank takes back its latest moves into a cluster until
 * they fit what it was given.  Then the homes learn the clusters' new
 * weights.  Collective (agreed). */
static halo_status propagate(MPI_Comm comm, const halo__wdgraph *w, halo__ghosts *gh,
                             int64_t max_weight, int64_t *label) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &w->g;
  const int64_t rows = g->rows;
  int ranks = 1;
  lp p = {0};
  halo_route rt = {0};
  int64_t *cw = NULL, *got = NULL; /* the clusters homed here: weights; a route's scratch */
  MPI_Comm_size(comm, &ranks);

  p.gh = gh;
  const int64_t most = 2 * rows + gh->n; /* slots */
  st = halo__dmemory(
      HALO_CALLOC(p.begins, ranks + 1) && HALO_CALLOC(p.gl, gh->n) && HALO_CALLOC(p.lslot, rows) &&
          HALO_CALLOC(p.gslot, gh->n) && HALO_CALLOC(p.s.foreign, rows + gh->n) &&
          HALO_CALLOC(p.ids, most) && HALO_CALLOC(p.view, most) && HALO_CALLOC(p.joined, most) &&
          HALO_CALLOC(p.conn, most) && HALO_CALLOC(p.grant, most) && HALO_CALLOC(p.touched, most) &&
          HALO_CALLOC(p.far, most) && HALO_CALLOC(p.mrow, rows) && HALO_CALLOC(p.mold, rows) &&
          HALO_CALLOC(p.room, rows) && HALO_CALLOC(cw, rows),
      "the coarsening's labels");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo_route_begins(comm, g->begin, g->nodes, "the coarsening", p.begins));
  p.s.rows = rows;
  p.s.begin = g->begin;
  for (int64_t r = 0; r < rows; r++) {
    label[r] = g->begin + r;
    cw[r] = halo__weight_of(w->vwgt, r);
  }
  for (int round = 0; round < LP_ROUNDS; round++) {
    int64_t moves = 0, kept = 0, kept_all = 0;
    HALO_TRY(halo__ghosts_exchange(comm, gh, label, p.gl));
    HALO_TRY(lp_slots(comm, g, label, &p, &rt));
    const int64_t ns = rows + p.s.nf;
    st = halo__dmemory(HALO_CALLOC(got, rt.nrecv), "the coarsening's requests");
    HALO_TRY(halo_mpi_agree_within(comm, st));
    HALO_TRY(halo_route_fetch(comm, &rt, cw, p.view));
    memset(p.joined, 0, (size_t)ns * sizeof *p.joined);
    for (int64_t r = 0; r < rows; r++) {
      const int64_t best = best_slot(w, &p, r, round, max_weight), wr = halo__weight_of(w->vwgt, r);
      if (best == p.lslot[r]) continue;
      p.mrow[moves] = r;
      p.mold[moves++] = p.lslot[r];
      p.view[best] += wr;
      p.joined[best] += wr;
      p.lslot[r] = best;
    }
    /* Room from the homes, in the order of the ranks that ask. */
    HALO_TRY(halo_route_push(comm, &rt, p.joined, got));
    for (int64_t r = 0; r < rows; r++) p.room[r] = max_weight - cw[r];
    for (int64_t j = 0; j < rt.nrecv; j++) {
      int64_t *room = &p.room[rt.row[j]];
      const int64_t give = got[j] <= *room ? got[j] : *room > 0 ? *room : 0;
      *room -= give;
      got[j] = give;
    }
    HALO_TRY(halo_route_answer(comm, &rt, got, p.grant));
    for (int64_t i = moves - 1; i >= 0; i--) {
      const int64_t r = p.mrow[i], s = p.lslot[r];
      if (p.joined[s] <= p.grant[s]) continue;
      p.joined[s] -= halo__weight_of(w->vwgt, r);
      p.lslot[r] = p.mold[i];
      p.mrow[i] = -1;
    }
    /* The homes' weights: what joined less what left. */
    for (int64_t i = 0; i < moves; i++)
      if (p.mrow[i] >= 0) p.joined[p.mold[i]] -= halo__weight_of(w->vwgt, p.mrow[i]), kept++;
    HALO_TRY(halo_route_push(comm, &rt, p.joined, got));
    for (int64_t j = 0; j < rt.nrecv; j++) cw[rt.row[j]] += got[j];
    for (int64_t r = 0; r < rows; r++) label[r] = label_of(&p.s, p.lslot[r]);
    halo_route_free(&rt);
    free(got);
    got = NULL;
    HALO_MPI(MPI_Allreduce(&kept, &kept_all, 1, MPI_INT64_T, MPI_SUM, comm));
    if (kept_all * 100 < g->nodes) break;
  }
done:
  lp_free(&p);
  halo_route_free(&rt);
  free(cw);
  free(got);
  return st;
}

typedef struct wedge {
  int64_t to, w;
} wedge;

static int cmp_wedge(const void *a, const void *b) {
  const int64_t x = ((const wedge *)a)->to, y = ((const wedge *)b)->to;
  return (x > y) - (x < y);
}

/* A coarse edge on its way to the rank whose coarse block holds its first end. */
typedef struct triple {
  int64_t from, to, w;
} triple;

static int cmp_triple(const void *a, const void *b) {
  const triple *x = a, *y = b;
  if (x->from != y->from) return (x->from > y->from) - (x->from < y->from);
  return (x->to > y->to) - (x->to < y->to);
}

/* Cuts the coarse ids [0, nodes), numbered by home (this rank's are
 * [cbegin, cbegin + crows), load[0..crows) their loads), into the blocks
 * cb[0..ranks] of about equal load: coarse vertex c goes to rank
 * floor(ranks × (load of the ids below c) / (total load)).  Collective. */
static halo_status balance_blocks(MPI_Comm comm, int64_t cbegin, int64_t crows, int64_t nodes,
                                  const int64_t *load, int64_t *cb) {
  halo_status st = HALO_OK;
  int ranks = 1;
  int64_t mine = 0, below = 0, total = 0;
  MPI_Comm_size(comm, &ranks);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  for (int64_t i = 0; i < crows; i++) mine += load[i];
  HALO_MPI(MPI_Exscan(&mine, &below, 1, MPI_INT64_T, MPI_SUM, comm));
  if (rank == 0) below = 0;
  HALO_MPI(MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm));
  /* cb[q]: the first id whose rank is q or more, the least over the homes
   * of each home's first. */
  halo_partition_cut_by_load(load, crows, below, total, ranks, cb);
  for (int q = 0; q <= ranks; q++)
    if (cb[q] != INT64_MAX) cb[q] += cbegin;
  HALO_MPI(MPI_Allreduce(MPI_IN_PLACE, cb, ranks + 1, MPI_INT64_T, MPI_MIN, comm));
  for (int q = 0; q <= ranks; q++)
    if (cb[q] > nodes) cb[q] = nodes;
  cb[ranks] = nodes;
done:
  return st;
}

/* Moves the values of the ids [from[rank], from[rank + 1]) (val) to the
 * ranks whose blocks of `to` hold them (out: to's block of this rank).
 * Collective (agreed). */
static halo_status reblock(MPI_Comm comm, const int64_t *from, const int64_t *to,
                           const int64_t *val, int64_t *out) {
  halo_status st = HALO_OK;
  int ranks = 1, rank = 0;
  int *scount = NULL, *sdispl = NULL, *rcount = NULL, *rdispl = NULL;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  st = halo__dmemory(HALO_CALLOC(scount, ranks) && HALO_CALLOC(sdispl, ranks) &&
                         HALO_CALLOC(rcount, ranks) && HALO_CALLOC(rdispl, ranks),
                     "the coarse blocks");
  if (st == HALO_OK &&
      (from[rank + 1] - from[rank] > INT_MAX || to[rank + 1] - to[rank] > INT_MAX)) {
    halo_log_error("a rank holds more than %d coarse vertices; the coarsening's counts are int",
                   INT_MAX);
    st = HALO_ERR_LIMIT;
  }
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int q = 0; q < ranks; q++) {
    /* What this rank's `from` block gives q's `to` block, and takes from q's `from` block. */
    const int64_t s0 = from[rank] > to[q] ? from[rank] : to[q];
    const int64_t s1 = from[rank + 1] < to[q + 1] ? from[rank + 1] : to[q + 1];
    const int64_t r0 = to[rank] > from[q] ? to[rank] : from[q];
    const int64_t r1 = to[rank + 1] < from[q + 1] ? to[rank + 1] : from[q + 1];
    scount[q] = s1 > s0 ? (int)(s1 - s0) : 0;
    sdispl[q] = s1 > s0 ? (int)(s0 - from[rank]) : 0;
    rcount[q] = r1 > r0 ? (int)(r1 - r0) : 0;
    rdispl[q] = r1 > r0 ? (int)(r0 - to[rank]) : 0;
  }
  HALO_MPI(MPI_Alltoallv(val, scount, sdispl, MPI_INT64_T, out, rcount, rdispl, MPI_INT64_T, comm));
done:
  free(scount);
  free(sdispl);
  free(rcount);
  free(rdispl);
  return st;
}

/* The coarse vertices: the labels in use, numbered by home (in rank order,
 * then label order), and cluster[r], row r's coarse id.  The coarse graph
 * is then cut into blocks of about equal load, a vertex's load being 1 +
 * its members' fine edges (balance_blocks: cb[0..ranks]), rather than kept
 * on the homes: labels drift towards high ids in label propagation (a row
 * takes a higher label on every other round), and on a 500,000-node SBM at
 * K = 8 the last rank held 1.7x the memory of the others.  Collective
 * (agreed). */
static halo_status number_clusters(MPI_Comm comm, const halo__wdgraph *fine, const int64_t *begins,
                                   const int64_t *label, int64_t *keys, int64_t nk,
                                   halo__wdgraph *c, int64_t *kid, int64_t *cluster, int64_t *cb) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &fine->g;
  halo_route rt = {0};
  int64_t *kw = NULL, *kd = NULL, *got = NULL, *gotd = NULL, *cindex = NULL, *sum = NULL;
  int64_t *load = NULL, *homes = NULL, crows = 0, cbegin = 0;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  HALO_TRY(halo_route_build(comm, begins, keys, nk, "the coarsening", &rt));
  st = halo__dmemory(HALO_CALLOC(kw, nk) && HALO_CALLOC(kd, nk) && HALO_CALLOC(got, rt.nrecv) &&
                         HALO_CALLOC(gotd, rt.nrecv) && HALO_CALLOC(cindex, g->rows) &&
                         HALO_CALLOC(sum, g->rows) && HALO_CALLOC(load, g->rows) &&
                         HALO_CALLOC(homes, ranks + 1),
                     "the coarse vertices");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int64_t r = 0; r < g->rows; r++) {
    const int64_t k = halo_lower_bound(keys, nk, label[r]);
    kw[k] += halo__weight_of(fine->vwgt, r);
    kd[k] += g->indptr[r + 1] - g->indptr[r];
  }
  HALO_TRY(halo_route_push(comm, &rt, kw, got));
  HALO_TRY(halo_route_push(comm, &rt, kd, gotd));
  for (int64_t r = 0; r < g->rows; r++) cindex[r] = -1, load[r] = 1;
  for (int64_t j = 0; j < rt.nrecv; j++)
    cindex[rt.row[j]] = 0, sum[rt.row[j]] += got[j], load[rt.row[j]] += gotd[j];
  for (int64_t r = 0; r < g->rows; r++)
    if (cindex[r] == 0) sum[crows] = sum[r], load[crows] = load[r], cindex[r] = crows++;
  HALO_MPI(MPI_Exscan(&crows, &cbegin, 1, MPI_INT64_T, MPI_SUM, comm));
  if (rank == 0) cbegin = 0;
  HALO_MPI(MPI_Allreduce(&crows, &c->g.nodes, 1, MPI_INT64_T, MPI_SUM, comm));
  HALO_MPI(MPI_Allgather(&cbegin, 1, MPI_INT64_T, homes, 1, MPI_INT64_T, comm));
  homes[ranks] = c->g.nodes;
  HALO_TRY(balance_blocks(comm, cbegin, crows, c->g.nodes, load, cb));
  c->g.begin = cb[rank];
  c->g.rows = cb[rank + 1] - cb[rank];
  st = halo__dmemory(HALO_CALLOC(c->vwgt, c->g.rows), "the coarse vertices");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(reblock(comm, homes, cb, sum, c->vwgt));
  for (int64_t j = 0; j < rt.nrecv; j++) got[j] = cbegin + cindex[rt.row[j]];
  HALO_TRY(halo_route_answer(comm, &rt, got, kid));
  for (int64_t r = 0; r < g->rows; r++) cluster[r] = kid[halo_lower_bound(keys, nk, label[r])];
done:
  halo_route_free(&rt);
  free(kw);
  free(kd);
  free(got);
  free(gotd);
  free(cindex);
  free(sum);
  free(load);
  free(homes);
  return st;
}

/* The coarse edges: each rank merges its rows' edges by the pair of
 * clusters and sends them to the rank whose coarse block (cb[0..ranks])
 * holds the first; that rank merges what the ranks sent.  keys[0..nk) are
 * the labels of this rank's rows, sorted, kid their coarse ids (ascending
 * with the keys, so the triples go out grouped by rank).  Collective
 * (agreed). */
static halo_status contract_edges(MPI_Comm comm, const halo__wdgraph *fine, halo__ghosts *gh,
                                  const int64_t *cb, const int64_t *label, const int64_t *keys,
                                  const int64_t *kid, int64_t nk, const int64_t *cluster,
                                  halo__wdgraph *c) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &fine->g;
  const int64_t rows = g->rows, edges = g->indptr[rows];
  int ranks = 1;
  int64_t *gcid = NULL, *kstart = NULL, *member = NULL, widest = 0, nt = 0, nr = 0, cedges = 0;
  int64_t *counts = NULL; /* triples to each rank, then from each: size 2·ranks */
  halo_route_counts x = {0};
  wedge *buf = NULL;
  triple *t = NULL, *in = NULL;
  MPI_Datatype three = MPI_DATATYPE_NULL;
  MPI_Comm_size(comm, &ranks);

  st = halo__dmemory(HALO_CALLOC(gcid, gh->n) && HALO_CALLOC(kstart, nk + 1) &&
                         HALO_CALLOC(member, rows) && HALO_CALLOC(counts, 2 * (int64_t)ranks) &&
                         halo_route_counts_alloc(ranks, &x),
                     "the coarse graph");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo__ghosts_exchange(comm, gh, cluster, gcid));
  /* The rows of each key (counting sort); then each key's edges to other
   * clusters, merged by coarse neighbour, in key order: grouped by home. */
  for (int64_t r = 0; r < rows; r++) {
    const int64_t k = halo_lower_bound(keys, nk, label[r]);
    member[r] = k; /* for now: the row's key */
    kstart[k + 1] += g->indptr[r + 1] - g->indptr[r];
  }
  for (int64_t k = 0; k < nk; k++) widest = kstart[k + 1] > widest ? kstart[k + 1] : widest;
  memset(kstart, 0, (size_t)(nk + 1) * sizeof *kstart);
  for (int64_t r = 0; r < rows; r++) kstart[member[r] + 1]++;
  for (int64_t k = 0; k < nk; k++) kstart[k + 1] += kstart[k];
  {
    int64_t *fill = malloc((size_t)(nk ? nk : 1) * sizeof *fill);
    int64_t *order = malloc((size_t)(rows ? rows : 1) * sizeof *order);
    if (fill && order) {
      memcpy(fill, kstart, (size_t)(nk ? nk : 1) * sizeof *fill);
      for (int64_t r = 0; r < rows; r++) order[fill[member[r]]++] = r;
      free(member);
      member = order;
      order = NULL;
    }
    st = halo__dmemory(fill && !order, "the coarse graph");
    free(fill);
    free(order);
  }
  /* The triples' untouched pages cost nothing: a rank sends at most one a
   * fine edge. */
  if (st == HALO_OK)
    st = halo__dmemory(
        HALO_CALLOC(buf, widest) && (t = malloc((size_t)(edges ? edges : 1) * sizeof *t)) != NULL,
        "the coarse graph");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int64_t k = 0; k < nk; k++) {
    const int64_t self = kid[k];
    int64_t n = 0;
    for (int64_t i = kstart[k]; i < kstart[k + 1]; i++) {
      const int64_t r = member[i];
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t to = halo__at_edge(g, gh, e, cluster, gcid);
        if (to != self) buf[n++] = (wedge){to, halo__weight_of(fine->ewgt, e)};
      }
    }
    qsort(buf, (size_t)n, sizeof *buf, cmp_wedge);
    const int64_t first = nt;
    for (int64_t i = 0; i < n; i++) {
      if (nt > first && buf[i].to == t[nt - 1].to)
        t[nt - 1].w += buf[i].w;
      else
        t[nt++] = (triple){self, buf[i].to, buf[i].w};
    }
    counts[halo_route_owner(cb, ranks, self)] += nt - first;
  }
  free(buf);
  buf = NULL;
  if (nt > INT_MAX) {
    halo_log_error("a rank sends %lld coarse edges; the coarsening's exchange counts are int",
                   (long long)nt);
    st = HALO_ERR_LIMIT;
  }
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo_route_swap_counts(comm, counts, counts + ranks));
  /* What this rank sends fits an int (agreed above): a failure is what it
   * is sent. */
  st = halo_route_counts_set(&x, ranks, counts, counts + ranks);
  nr = x.received;
  if (st != HALO_OK)
    halo_log_error("a rank is sent %lld coarse edges; the coarsening's exchange counts are int",
                   (long long)nr);
  if (st == HALO_OK) {
    st = halo__dmemory((in = malloc((size_t)(nr ? nr : 1) * sizeof *in)) != NULL,
                       "the coarse graph");
  }
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_MPI(MPI_Type_contiguous(3, MPI_INT64_T, &three));
  HALO_MPI(MPI_Type_commit(&three));
  HALO_MPI(MPI_Alltoallv(t, x.scount, x.sdispl, three, in, x.rcount, x.rdispl, three, comm));
  free(t);
  t = NULL;
  /* The block's edges, merged across the ranks that sent them. */
  qsort(in, (size_t)nr, sizeof *in, cmp_triple);
  for (int64_t i = 0; i < nr; i++) {
    if (cedges > 0 && in[i].from == in[cedges - 1].from && in[i].to == in[cedges - 1].to)
      in[cedges - 1].w += in[i].w;
    else
      in[cedges++] = in[i];
  }
  st = halo__dmemory(HALO_CALLOC(c->g.indptr, c->g.rows + 1) && HALO_CALLOC(c->g.nbr, cedges) &&
                         HALO_CALLOC(c->ewgt, cedges),
                     "the coarse graph");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  for (int64_t i = 0; i < cedges; i++) {
    c->g.indptr[in[i].from - c->g.begin + 1]++;
    c->g.nbr[i] = in[i].to;
    c->ewgt[i] = in[i].w;
  }
  for (int64_t k = 0; k < c->g.rows; k++) c->g.indptr[k + 1] += c->g.indptr[k];
  HALO_MPI(MPI_Allreduce(&cedges, &c->g.edges, 1, MPI_INT64_T, MPI_SUM, comm));
done:
  if (three != MPI_DATATYPE_NULL) MPI_Type_free(&three);
  free(gcid);
  free(kstart);
  free(member);
  free(counts);
  halo_route_counts_free(&x);
  free(buf);
  free(t);
  free(in);
  return st;
}

halo_status halo__dcoarsen(MPI_Comm comm, const halo__wdgraph *fine, int64_t max_weight,
                           halo__wdgraph *coarse, int64_t **cluster_out) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &fine->g;
  int ranks = 1;
  int64_t *label = NULL, *keys = NULL, *kid = NULL, *cluster = NULL, *begins = NULL, *cb = NULL;
  int64_t nk = 0;
  halo__ghosts gh = {0};
  halo__wdgraph c = {0};
  MPI_Comm_size(comm, &ranks);

  *cluster_out = NULL;
  st = halo__dmemory(HALO_CALLOC(label, g->rows) && HALO_CALLOC(keys, g->rows) &&
                         HALO_CALLOC(kid, g->rows) && HALO_CALLOC(cluster, g->rows) &&
                         HALO_CALLOC(begins, ranks + 1) && HALO_CALLOC(cb, ranks + 1),
                     "the coarsening's labels");
  HALO_TRY(halo_mpi_agree_within(comm, st));
  HALO_TRY(halo_route_begins(comm, g->begin, g->nodes, "the coarsening", begins));
  HALO_TRY(halo__ghosts_build(comm, g, &gh));
  HALO_TRY(propagate(comm, fine, &gh, max_weight, label));
  memcpy(keys, label, (size_t)g->rows * sizeof *keys);
  nk = sort_unique(keys, g->rows);
  HALO_TRY(number_clusters(comm, fine, begins, label, keys, nk, &c, kid, cluster, cb));
  HALO_TRY(contract_edges(comm, fine, &gh, cb, label, keys, kid, nk, cluster, &c));
  *coarse = c;
  c = (halo__wdgraph){0};
  *cluster_out = cluster;
  cluster = NULL;
done:
  halo__ghosts_free(&gh);
  halo__wdgraph_free(&c);
  free(label);
  free(keys);
  free(kid);
  free(cluster);
  free(begins);
  free(cb);
  return st;
}
