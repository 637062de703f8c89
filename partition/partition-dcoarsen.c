/* The distributed multilevel around PT-Scotch: coarsening by label
 * propagation across the ranks, and refinement of the projected parts
 * (partition-dcoarsen.h).
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
 * ids, routed to the rank that holds them (struct route).
 */
#include "partition-dcoarsen.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of label propagation a level (fewer when a round moves under 1%
 * of the rows), and of refinement (each an upward and a downward half;
 * fewer when a pair moves nothing).  In a trial on a 100,000-node SBM at
 * K = 2 with smaller clusters (1/512 of a part), 16 rounds of refinement
 * took the cut from 1.41x METIS' (1 round) to 1.02x. */
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

/* Sorts id[0..n) and drops repeats; the new count. */
static int64_t sort_unique(int64_t *id, int64_t n) {
  qsort(id, (size_t)n, sizeof *id, cmp_i64);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (u == 0 || id[i] != id[u - 1]) id[u++] = id[i];
  return u;
}

/* The index of v in sorted id[0..n) (v must be there). */
static inline int64_t index_of(const int64_t *id, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (id[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* begins[0..ranks]: where each rank's block of g starts, and g's nodes.
 * Collective. */
static halo_status begins_of(MPI_Comm comm, const halo_dgraph *g, int ranks, int64_t *begins) {
  if (MPI_Allgather(&g->begin, 1, MPI_INT64_T, begins, 1, MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Allgather failed gathering the coarsening's blocks");
    return HALO_ERR_MPI;
  }
  begins[ranks] = g->nodes;
  return HALO_OK;
}

/* The rank whose block holds v. */
static inline int owner_of(const int64_t *begins, int ranks, int64_t v) {
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

/* Requests keyed by global row ids (n of them, in any order, repeats
 * allowed), each answered by the rank whose block holds its row: the
 * requests go out grouped by owner, in rank order, and an owner sees the
 * ones it answers grouped by the rank that asked, in rank order too. */
typedef struct route {
  int64_t n, *pos;      /* request i's place in the send order */
  int *scount, *sdispl; /* requests by owner */
  int64_t nrecv, *row;  /* the requests this rank answers: its local rows */
  int *rcount, *rdispl; /* ... by the rank that asked */
  int64_t *sbuf, *rbuf; /* scratch, n and nrecv */
} route;

static void route_free(route *rt) {
  free(rt->pos);
  free(rt->scount);
  free(rt->sdispl);
  free(rt->row);
  free(rt->rcount);
  free(rt->rdispl);
  free(rt->sbuf);
  free(rt->rbuf);
  *rt = (route){0};
}

/* The route of id[0..n) over the blocks begins[0..ranks] (this rank's block
 * starts at begins[rank]).  Collective (agreed). */
static halo_status route_build(MPI_Comm comm, const int64_t *begins, const int64_t *id, int64_t n,
                               route *rt) {
  halo_status st = HALO_OK;
  int ranks = 1, rank = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  *rt = (route){.n = n};
  st = memory(NEW(rt->pos, n) && NEW(rt->scount, ranks) && NEW(rt->sdispl, ranks) &&
                  NEW(rt->rcount, ranks) && NEW(rt->rdispl, ranks) && NEW(rt->sbuf, n),
              "the coarsening's routes");
  if (st == HALO_OK && n > INT_MAX) {
    halo_log_error("a rank sends %lld requests; the coarsening's exchange counts are int",
                   (long long)n);
    st = HALO_ERR_LIMIT;
  }
  AGREE(st);
  for (int64_t i = 0; i < n; i++) rt->scount[owner_of(begins, ranks, id[i])]++;
  for (int q = 1; q < ranks; q++) rt->sdispl[q] = rt->sdispl[q - 1] + rt->scount[q - 1];
  {
    int *fill = rt->rdispl; /* scratch until the receive counts are known */
    memcpy(fill, rt->sdispl, (size_t)ranks * sizeof *fill);
    for (int64_t i = 0; i < n; i++) {
      rt->pos[i] = fill[owner_of(begins, ranks, id[i])]++;
      rt->sbuf[rt->pos[i]] = id[i];
    }
  }
  TRY_MPI(MPI_Alltoall(rt->scount, 1, MPI_INT, rt->rcount, 1, MPI_INT, comm));
  for (int q = 0; q < ranks; q++) rt->nrecv += rt->rcount[q];
  if (rt->nrecv > INT_MAX) {
    halo_log_error("a rank is sent %lld requests; the coarsening's exchange counts are int",
                   (long long)rt->nrecv);
    st = HALO_ERR_LIMIT;
  }
  if (st == HALO_OK) {
    rt->rdispl[0] = 0;
    for (int q = 1; q < ranks; q++) rt->rdispl[q] = rt->rdispl[q - 1] + rt->rcount[q - 1];
    st = memory(NEW(rt->row, rt->nrecv) && NEW(rt->rbuf, rt->nrecv), "the coarsening's routes");
  }
  AGREE(st);
  TRY_MPI(MPI_Alltoallv(rt->sbuf, rt->scount, rt->sdispl, MPI_INT64_T, rt->row, rt->rcount,
                        rt->rdispl, MPI_INT64_T, comm));
  for (int64_t i = 0; i < rt->nrecv; i++) rt->row[i] -= begins[rank];
done:
  if (st != HALO_OK) route_free(rt);
  return st;
}

/* got[j] for the j-th request this rank answers: in[i] of request i, from
 * the rank that made it. Collective. */
static halo_status route_push(MPI_Comm comm, route *rt, const int64_t *in, int64_t *got) {
  for (int64_t i = 0; i < rt->n; i++) rt->sbuf[rt->pos[i]] = in[i];
  if (MPI_Alltoallv(rt->sbuf, rt->scount, rt->sdispl, MPI_INT64_T, got, rt->rcount, rt->rdispl,
                    MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Alltoallv failed routing the coarsening's values");
    return HALO_ERR_MPI;
  }
  return HALO_OK;
}

/* out[i] for request i: answer[j] of the j-th request its owner answers.
 * Collective. */
static halo_status route_answer(MPI_Comm comm, route *rt, const int64_t *answer, int64_t *out) {
  if (MPI_Alltoallv(answer, rt->rcount, rt->rdispl, MPI_INT64_T, rt->sbuf, rt->scount, rt->sdispl,
                    MPI_INT64_T, comm) != MPI_SUCCESS) {
    halo_log_error("MPI_Alltoallv failed answering the coarsening's requests");
    return HALO_ERR_MPI;
  }
  for (int64_t i = 0; i < rt->n; i++) out[i] = rt->sbuf[rt->pos[i]];
  return HALO_OK;
}

/* out[i] = val[local row of request i] on its owner. Collective. */
static halo_status route_fetch(MPI_Comm comm, route *rt, const int64_t *val, int64_t *out) {
  for (int64_t j = 0; j < rt->nrecv; j++) rt->rbuf[j] = val[rt->row[j]];
  return route_answer(comm, rt, rt->rbuf, out);
}

/* The neighbours of a rank's block held by other ranks (its ghosts),
 * sorted and unique, and their route; at[e] is where edge e's neighbour is
 * among the block's rows and its ghosts (row r is r, ghost i is rows + i),
 * so that a sweep over the edges finds it without a search. */
typedef struct ghosts {
  int64_t n, *id, *at;
  route rt;
} ghosts;

static void ghosts_free(ghosts *gh) {
  free(gh->id);
  free(gh->at);
  route_free(&gh->rt);
  *gh = (ghosts){0};
}

static inline int in_block(const halo_dgraph *g, int64_t v) {
  return v >= g->begin && v < g->begin + g->rows;
}

/* The value of edge e's neighbour: of a row of the block, or of a ghost. */
static inline int64_t at_edge(const halo_dgraph *g, const ghosts *gh, int64_t e,
                              const int64_t *row_val, const int64_t *ghost_val) {
  const int64_t i = gh->at[e];
  return i < g->rows ? row_val[i] : ghost_val[i - g->rows];
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
  st = memory(NEW(begins, ranks + 1) && NEW(gh->id, far) && NEW(gh->at, edges),
              "the coarsening's ghost lists");
  AGREE(st);
  HALO_TRY(begins_of(comm, g, ranks, begins));
  for (int64_t e = 0; e < edges; e++)
    if (!in_block(g, g->nbr[e])) gh->id[gh->n++] = g->nbr[e];
  gh->n = sort_unique(gh->id, gh->n);
  {
    int64_t *fit = realloc(gh->id, (size_t)(gh->n ? gh->n : 1) * sizeof *fit);
    if (fit) gh->id = fit; /* the ids of every cross-rank edge, deduplicated */
  }
  for (int64_t e = 0; e < edges; e++) {
    const int64_t v = g->nbr[e];
    gh->at[e] = in_block(g, v) ? v - g->begin : g->rows + index_of(gh->id, gh->n, v);
  }
  HALO_TRY(route_build(comm, begins, gh->id, gh->n, &gh->rt));
done:
  free(begins);
  if (st != HALO_OK) ghosts_free(gh);
  return st;
}

/* gval[ghost i] for every ghost, from val[row] on its owner. Collective. */
static halo_status ghosts_exchange(MPI_Comm comm, ghosts *gh, const int64_t *val, int64_t *gval) {
  return route_fetch(comm, &gh->rt, val, gval);
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
             : s->rows + index_of(s->foreign, s->nf, label);
}

/* Scratch of label propagation, by slot (at most rows + ghosts of them). */
typedef struct lp {
  ghosts *gh; /* the level's, not the lp's */
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
  const int64_t cur = p->lslot[r], wr = weight_of(w->vwgt, r), mine = label_of(&p->s, cur);
  int64_t nt = 0;
  for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
    const int local = p->gh->at[e] < g->rows;
    const int64_t l = at_edge(g, p->gh, e, p->lslot, p->gslot);
    if (p->conn[l] == 0 && !p->far[l]) p->touched[nt++] = l;
    p->conn[l] += weight_of(w->ewgt, e);
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
                            route *rt) {
  slots *s = &p->s;
  s->nf = 0;
  for (int64_t r = 0; r < g->rows; r++)
    if (!in_block(g, label[r])) s->foreign[s->nf++] = label[r];
  for (int64_t i = 0; i < p->gh->n; i++)
    if (!in_block(g, p->gl[i])) s->foreign[s->nf++] = p->gl[i];
  s->nf = sort_unique(s->foreign, s->nf);
  for (int64_t r = 0; r < g->rows; r++) p->lslot[r] = slot_of(s, label[r]);
  for (int64_t i = 0; i < p->gh->n; i++) p->gslot[i] = slot_of(s, p->gl[i]);
  for (int64_t k = 0; k < g->rows + s->nf; k++) p->ids[k] = label_of(s, k);
  return route_build(comm, p->begins, p->ids, g->rows + s->nf, rt);
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
static halo_status propagate(MPI_Comm comm, const halo__wdgraph *w, ghosts *gh, int64_t max_weight,
                             int64_t *label) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &w->g;
  const int64_t rows = g->rows;
  int ranks = 1;
  lp p = {0};
  route rt = {0};
  int64_t *cw = NULL, *got = NULL; /* the clusters homed here: weights; a route's scratch */
  MPI_Comm_size(comm, &ranks);

  p.gh = gh;
  const int64_t most = 2 * rows + gh->n; /* slots */
  st = memory(NEW(p.begins, ranks + 1) && NEW(p.gl, gh->n) && NEW(p.lslot, rows) &&
                  NEW(p.gslot, gh->n) && NEW(p.s.foreign, rows + gh->n) && NEW(p.ids, most) &&
                  NEW(p.view, most) && NEW(p.joined, most) && NEW(p.conn, most) &&
                  NEW(p.grant, most) && NEW(p.touched, most) && NEW(p.far, most) &&
                  NEW(p.mrow, rows) && NEW(p.mold, rows) && NEW(p.room, rows) && NEW(cw, rows),
              "the coarsening's labels");
  AGREE(st);
  HALO_TRY(begins_of(comm, g, ranks, p.begins));
  p.s.rows = rows;
  p.s.begin = g->begin;
  for (int64_t r = 0; r < rows; r++) {
    label[r] = g->begin + r;
    cw[r] = weight_of(w->vwgt, r);
  }
  for (int round = 0; round < LP_ROUNDS; round++) {
    int64_t moves = 0, kept = 0, kept_all = 0;
    HALO_TRY(ghosts_exchange(comm, gh, label, p.gl));
    HALO_TRY(lp_slots(comm, g, label, &p, &rt));
    const int64_t ns = rows + p.s.nf;
    st = memory(NEW(got, rt.nrecv) != NULL, "the coarsening's requests");
    AGREE(st);
    HALO_TRY(route_fetch(comm, &rt, cw, p.view));
    memset(p.joined, 0, (size_t)ns * sizeof *p.joined);
    for (int64_t r = 0; r < rows; r++) {
      const int64_t best = best_slot(w, &p, r, round, max_weight), wr = weight_of(w->vwgt, r);
      if (best == p.lslot[r]) continue;
      p.mrow[moves] = r;
      p.mold[moves++] = p.lslot[r];
      p.view[best] += wr;
      p.joined[best] += wr;
      p.lslot[r] = best;
    }
    /* Room from the homes, in the order of the ranks that ask. */
    HALO_TRY(route_push(comm, &rt, p.joined, got));
    for (int64_t r = 0; r < rows; r++) p.room[r] = max_weight - cw[r];
    for (int64_t j = 0; j < rt.nrecv; j++) {
      int64_t *room = &p.room[rt.row[j]];
      const int64_t give = got[j] <= *room ? got[j] : *room > 0 ? *room : 0;
      *room -= give;
      got[j] = give;
    }
    HALO_TRY(route_answer(comm, &rt, got, p.grant));
    for (int64_t i = moves - 1; i >= 0; i--) {
      const int64_t r = p.mrow[i], s = p.lslot[r];
      if (p.joined[s] <= p.grant[s]) continue;
      p.joined[s] -= weight_of(w->vwgt, r);
      p.lslot[r] = p.mold[i];
      p.mrow[i] = -1;
    }
    /* The homes' weights: what joined less what left. */
    for (int64_t i = 0; i < moves; i++)
      if (p.mrow[i] >= 0) p.joined[p.mold[i]] -= weight_of(w->vwgt, p.mrow[i]), kept++;
    HALO_TRY(route_push(comm, &rt, p.joined, got));
    for (int64_t j = 0; j < rt.nrecv; j++) cw[rt.row[j]] += got[j];
    for (int64_t r = 0; r < rows; r++) label[r] = label_of(&p.s, p.lslot[r]);
    route_free(&rt);
    free(got);
    got = NULL;
    TRY_MPI(MPI_Allreduce(&kept, &kept_all, 1, MPI_INT64_T, MPI_SUM, comm));
    if (kept_all * 100 < g->nodes) break;
  }
done:
  lp_free(&p);
  route_free(&rt);
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
  TRY_MPI(MPI_Exscan(&mine, &below, 1, MPI_INT64_T, MPI_SUM, comm));
  if (rank == 0) below = 0;
  TRY_MPI(MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, comm));
  /* cb[q]: the first id whose rank is q or more, the least over the homes
   * of each home's first. */
  halo_partition_cut_by_load(load, crows, below, total, ranks, cb);
  for (int q = 0; q <= ranks; q++)
    if (cb[q] != INT64_MAX) cb[q] += cbegin;
  TRY_MPI(MPI_Allreduce(MPI_IN_PLACE, cb, ranks + 1, MPI_INT64_T, MPI_MIN, comm));
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
  st = memory(NEW(scount, ranks) && NEW(sdispl, ranks) && NEW(rcount, ranks) && NEW(rdispl, ranks),
              "the coarse blocks");
  if (st == HALO_OK &&
      (from[rank + 1] - from[rank] > INT_MAX || to[rank + 1] - to[rank] > INT_MAX)) {
    halo_log_error("a rank holds more than %d coarse vertices; the coarsening's counts are int",
                   INT_MAX);
    st = HALO_ERR_LIMIT;
  }
  AGREE(st);
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
  TRY_MPI(MPI_Alltoallv(val, scount, sdispl, MPI_INT64_T, out, rcount, rdispl, MPI_INT64_T, comm));
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
  route rt = {0};
  int64_t *kw = NULL, *kd = NULL, *got = NULL, *gotd = NULL, *cindex = NULL, *sum = NULL;
  int64_t *load = NULL, *homes = NULL, crows = 0, cbegin = 0;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  HALO_TRY(route_build(comm, begins, keys, nk, &rt));
  st = memory(NEW(kw, nk) && NEW(kd, nk) && NEW(got, rt.nrecv) && NEW(gotd, rt.nrecv) &&
                  NEW(cindex, g->rows) && NEW(sum, g->rows) && NEW(load, g->rows) &&
                  NEW(homes, ranks + 1),
              "the coarse vertices");
  AGREE(st);
  for (int64_t r = 0; r < g->rows; r++) {
    const int64_t k = index_of(keys, nk, label[r]);
    kw[k] += weight_of(fine->vwgt, r);
    kd[k] += g->indptr[r + 1] - g->indptr[r];
  }
  HALO_TRY(route_push(comm, &rt, kw, got));
  HALO_TRY(route_push(comm, &rt, kd, gotd));
  for (int64_t r = 0; r < g->rows; r++) cindex[r] = -1, load[r] = 1;
  for (int64_t j = 0; j < rt.nrecv; j++)
    cindex[rt.row[j]] = 0, sum[rt.row[j]] += got[j], load[rt.row[j]] += gotd[j];
  for (int64_t r = 0; r < g->rows; r++)
    if (cindex[r] == 0) sum[crows] = sum[r], load[crows] = load[r], cindex[r] = crows++;
  TRY_MPI(MPI_Exscan(&crows, &cbegin, 1, MPI_INT64_T, MPI_SUM, comm));
  if (rank == 0) cbegin = 0;
  TRY_MPI(MPI_Allreduce(&crows, &c->g.nodes, 1, MPI_INT64_T, MPI_SUM, comm));
  TRY_MPI(MPI_Allgather(&cbegin, 1, MPI_INT64_T, homes, 1, MPI_INT64_T, comm));
  homes[ranks] = c->g.nodes;
  HALO_TRY(balance_blocks(comm, cbegin, crows, c->g.nodes, load, cb));
  c->g.begin = cb[rank];
  c->g.rows = cb[rank + 1] - cb[rank];
  st = memory(NEW(c->vwgt, c->g.rows) != NULL, "the coarse vertices");
  AGREE(st);
  HALO_TRY(reblock(comm, homes, cb, sum, c->vwgt));
  for (int64_t j = 0; j < rt.nrecv; j++) got[j] = cbegin + cindex[rt.row[j]];
  HALO_TRY(route_answer(comm, &rt, got, kid));
  for (int64_t r = 0; r < g->rows; r++) cluster[r] = kid[index_of(keys, nk, label[r])];
done:
  route_free(&rt);
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
static halo_status contract_edges(MPI_Comm comm, const halo__wdgraph *fine, ghosts *gh,
                                  const int64_t *cb, const int64_t *label, const int64_t *keys,
                                  const int64_t *kid, int64_t nk, const int64_t *cluster,
                                  halo__wdgraph *c) {
  halo_status st = HALO_OK;
  const halo_dgraph *g = &fine->g;
  const int64_t rows = g->rows, edges = g->indptr[rows];
  int ranks = 1;
  int64_t *gcid = NULL, *kstart = NULL, *member = NULL, widest = 0, nt = 0, nr = 0, cedges = 0;
  int *scount = NULL, *sdispl = NULL, *rcount = NULL, *rdispl = NULL;
  wedge *buf = NULL;
  triple *t = NULL, *in = NULL;
  MPI_Datatype three = MPI_DATATYPE_NULL;
  MPI_Comm_size(comm, &ranks);

  st = memory(NEW(gcid, gh->n) && NEW(kstart, nk + 1) && NEW(member, rows) && NEW(scount, ranks) &&
                  NEW(sdispl, ranks) && NEW(rcount, ranks) && NEW(rdispl, ranks),
              "the coarse graph");
  AGREE(st);
  HALO_TRY(ghosts_exchange(comm, gh, cluster, gcid));
  /* The rows of each key (counting sort); then each key's edges to other
   * clusters, merged by coarse neighbour, in key order: grouped by home. */
  for (int64_t r = 0; r < rows; r++) {
    const int64_t k = index_of(keys, nk, label[r]);
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
    st = memory(fill && !order, "the coarse graph");
    free(fill);
    free(order);
  }
  /* The triples' untouched pages cost nothing: a rank sends at most one a
   * fine edge. */
  if (st == HALO_OK)
    st = memory(NEW(buf, widest) && (t = malloc((size_t)(edges ? edges : 1) * sizeof *t)) != NULL,
                "the coarse graph");
  AGREE(st);
  for (int64_t k = 0; k < nk; k++) {
    const int64_t self = kid[k];
    int64_t n = 0;
    for (int64_t i = kstart[k]; i < kstart[k + 1]; i++) {
      const int64_t r = member[i];
      for (int64_t e = g->indptr[r]; e < g->indptr[r + 1]; e++) {
        const int64_t to = at_edge(g, gh, e, cluster, gcid);
        if (to != self) buf[n++] = (wedge){to, weight_of(fine->ewgt, e)};
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
    scount[owner_of(cb, ranks, self)] += (int)(nt - first);
  }
  free(buf);
  buf = NULL;
  if (nt > INT_MAX) {
    halo_log_error("a rank sends %lld coarse edges; the coarsening's exchange counts are int",
                   (long long)nt);
    st = HALO_ERR_LIMIT;
  }
  AGREE(st);
  TRY_MPI(MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, comm));
  for (int q = 0; q < ranks; q++) nr += rcount[q];
  if (nr > INT_MAX) {
    halo_log_error("a rank is sent %lld coarse edges; the coarsening's exchange counts are int",
                   (long long)nr);
    st = HALO_ERR_LIMIT;
  }
  if (st == HALO_OK) {
    for (int q = 1; q < ranks; q++) {
      sdispl[q] = sdispl[q - 1] + scount[q - 1];
      rdispl[q] = rdispl[q - 1] + rcount[q - 1];
    }
    st = memory((in = malloc((size_t)(nr ? nr : 1) * sizeof *in)) != NULL, "the coarse graph");
  }
  AGREE(st);
  TRY_MPI(MPI_Type_contiguous(3, MPI_INT64_T, &three));
  TRY_MPI(MPI_Type_commit(&three));
  TRY_MPI(MPI_Alltoallv(t, scount, sdispl, three, in, rcount, rdispl, three, comm));
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
  st = memory(NEW(c->g.indptr, c->g.rows + 1) && NEW(c->g.nbr, cedges) && NEW(c->ewgt, cedges),
              "the coarse graph");
  AGREE(st);
  for (int64_t i = 0; i < cedges; i++) {
    c->g.indptr[in[i].from - c->g.begin + 1]++;
    c->g.nbr[i] = in[i].to;
    c->ewgt[i] = in[i].w;
  }
  for (int64_t k = 0; k < c->g.rows; k++) c->g.indptr[k + 1] += c->g.indptr[k];
  TRY_MPI(MPI_Allreduce(&cedges, &c->g.edges, 1, MPI_INT64_T, MPI_SUM, comm));
done:
  if (three != MPI_DATATYPE_NULL) MPI_Type_free(&three);
  free(gcid);
  free(kstart);
  free(member);
  free(scount);
  free(sdispl);
  free(rcount);
  free(rdispl);
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
  ghosts gh = {0};
  halo__wdgraph c = {0};
  MPI_Comm_size(comm, &ranks);

  *cluster_out = NULL;
  st = memory(NEW(label, g->rows) && NEW(keys, g->rows) && NEW(kid, g->rows) &&
                  NEW(cluster, g->rows) && NEW(begins, ranks + 1) && NEW(cb, ranks + 1),
              "the coarsening's labels");
  AGREE(st);
  HALO_TRY(begins_of(comm, g, ranks, begins));
  HALO_TRY(ghosts_build(comm, g, &gh));
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
  ghosts_free(&gh);
  halo__wdgraph_free(&c);
  free(label);
  free(keys);
  free(kid);
  free(cluster);
  free(begins);
  free(cb);
  return st;
}

halo_status halo__dproject(MPI_Comm comm, const halo_dgraph *coarse, int64_t rows,
                           const int64_t *cluster, const int32_t *coarse_part, int32_t *part) {
  halo_status st = HALO_OK;
  int ranks = 1;
  int64_t *begins = NULL, *val = NULL, *out = NULL;
  route rt = {0};
  MPI_Comm_size(comm, &ranks);
  st = memory(NEW(begins, ranks + 1) && NEW(val, coarse->rows) && NEW(out, rows),
              "the projection of the parts");
  AGREE(st);
  HALO_TRY(begins_of(comm, coarse, ranks, begins));
  HALO_TRY(route_build(comm, begins, cluster, rows, &rt));
  for (int64_t k = 0; k < coarse->rows; k++) val[k] = coarse_part[k];
  HALO_TRY(route_fetch(comm, &rt, val, out));
  for (int64_t r = 0; r < rows; r++) part[r] = (int32_t)out[r];
done:
  route_free(&rt);
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
        const int64_t i = gh.at[e];
        const int32_t q = i < g->rows ? part[i] : (int32_t)gpart[i - g->rows];
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
