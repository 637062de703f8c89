/* The distributed coarsening and refinement (partition/partition-dcoarsen.h),
 * checked under mpirun against the whole graph, which every rank rebuilds
 * from the seed:
 *
 *   dcoarsen-check SEED NODES CLASSES DEGREE MAX_WEIGHT PARTS
 *
 * Two levels are built (the second from the weighted first).  At each:
 * every row maps to a coarse vertex, and every coarse vertex has members; a
 * coarse vertex weighs the sum of its members, and no more than MAX_WEIGHT
 * unless it has one member; at K > 1 some cluster of the first level has
 * rows of two ranks; the coarse edges are exactly the fine edges between clusters,
 * parallel ones summed, none inside a cluster (compared as sorted triples
 * with the fine graph mapped through the clusters).  The projection gives
 * every row its coarse vertex's part.  The refinement, from a
 * round-robin part vector within the balance and from one with part 0
 * overloaded: no part ends over the bound it started under, the
 * overloaded one ends within it, the cut falls from round robin by a fifth
 * on the input and a tenth on level 1 (and never grows on one rank, where
 * every gain is exact), and a second
 * run gives the same parts.  Prints one line per check on rank 0; exits 1 on the first
 * failure, naming it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition-dcoarsen.h"

static int rank, ranks;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "dcoarsen-check: rank %d: ", rank); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      MPI_Abort(MPI_COMM_WORLD, 1);                       \
    }                                                     \
  } while (0)

static uint64_t state;
static uint64_t next_random(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return state >> 33;
}

/* The whole graph: an SBM-like simple symmetric graph, CSR by node. */
typedef struct whole {
  int64_t n, *indptr, *nbr;
} whole;

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static whole make_graph(uint64_t seed, int64_t n, int64_t classes, int64_t degree) {
  state = seed;
  const int64_t draws = n * degree / 2;
  int64_t *pairs = malloc((size_t)draws * 2 * 2 * sizeof *pairs), m = 0;
  CHECK(pairs, "out of memory");
  for (int64_t k = 0; k < draws; k++) {
    const int64_t u = (int64_t)(next_random() % (uint64_t)n);
    int64_t v = (int64_t)(next_random() % (uint64_t)n);
    /* Mostly inside u's class (u mod classes), the communities to find. */
    if (next_random() % 10 < 8) v = v - v % classes + u % classes, v = v < n ? v : u;
    if (u == v) continue;
    pairs[2 * m] = u, pairs[2 * m + 1] = v, m++;
    pairs[2 * m] = v, pairs[2 * m + 1] = u, m++;
  }
  whole g = {.n = n};
  g.indptr = calloc((size_t)n + 1, sizeof *g.indptr);
  g.nbr = malloc((size_t)(m ? m : 1) * sizeof *g.nbr);
  CHECK(g.indptr && g.nbr, "out of memory");
  for (int64_t k = 0; k < m; k++) g.indptr[pairs[2 * k] + 1]++;
  for (int64_t u = 0; u < n; u++) g.indptr[u + 1] += g.indptr[u];
  int64_t *fill = malloc((size_t)n * sizeof *fill);
  memcpy(fill, g.indptr, (size_t)n * sizeof *fill);
  for (int64_t k = 0; k < m; k++) g.nbr[fill[pairs[2 * k]]++] = pairs[2 * k + 1];
  /* Sort and drop duplicates, in place. */
  int64_t out = 0;
  for (int64_t u = 0; u < n; u++) {
    const int64_t b = g.indptr[u], e = g.indptr[u + 1];
    qsort(g.nbr + b, (size_t)(e - b), sizeof *g.nbr, cmp_i64);
    g.indptr[u] = out;
    for (int64_t i = b; i < e; i++)
      if (i == b || g.nbr[i] != g.nbr[i - 1]) g.nbr[out++] = g.nbr[i];
  }
  g.indptr[n] = out;
  free(fill);
  free(pairs);
  return g;
}

/* This rank's block of rows (blocks of n / ranks, the last takes the rest),
 * the weights NULL. */
static halo__wdgraph block_of(const whole *g) {
  const int64_t per = g->n / ranks, begin = per * rank;
  const int64_t rows = rank == ranks - 1 ? g->n - begin : per;
  halo__wdgraph w = {0};
  w.g = (halo_dgraph){.nodes = g->n, .edges = g->indptr[g->n], .begin = begin, .rows = rows};
  w.g.indptr = malloc((size_t)(rows + 1) * sizeof *w.g.indptr);
  const int64_t e0 = g->indptr[begin], e1 = g->indptr[begin + rows];
  w.g.nbr = malloc((size_t)(e1 - e0 ? e1 - e0 : 1) * sizeof *w.g.nbr);
  CHECK(w.g.indptr && w.g.nbr, "out of memory");
  for (int64_t r = 0; r <= rows; r++) w.g.indptr[r] = g->indptr[begin + r] - e0;
  memcpy(w.g.nbr, g->nbr + e0, (size_t)(e1 - e0) * sizeof *w.g.nbr);
  return w;
}

/* All ranks' int64 arrays, concatenated in rank order (a new array). */
static int64_t *gather(const int64_t *mine, int64_t count, int64_t *total) {
  int *counts = malloc((size_t)ranks * sizeof *counts),
      *displs = malloc((size_t)ranks * sizeof *displs);
  const int c = (int)count;
  MPI_Allgather(&c, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  *total = 0;
  for (int q = 0; q < ranks; q++) displs[q] = (int)*total, *total += counts[q];
  int64_t *all = malloc((size_t)(*total ? *total : 1) * sizeof *all);
  CHECK(counts && displs && all, "out of memory");
  MPI_Allgatherv(mine, c, MPI_INT64_T, all, counts, displs, MPI_INT64_T, MPI_COMM_WORLD);
  free(counts);
  free(displs);
  return all;
}

typedef struct triple {
  int64_t a, b, w;
} triple;

static int cmp_triple(const void *x, const void *y) {
  const triple *p = x, *q = y;
  if (p->a != q->a) return (p->a > q->a) - (p->a < q->a);
  if (p->b != q->b) return (p->b > q->b) - (p->b < q->b);
  return (p->w > q->w) - (p->w < q->w);
}

/* A level's whole graph, gathered: the fine edges as triples of global ids,
 * weights. */
static triple *edges_of(const halo__wdgraph *w, int64_t *count) {
  const int64_t m = w->g.indptr[w->g.rows];
  int64_t *mine = malloc((size_t)(m > 0 ? 3 * m : 1) * sizeof *mine);
  CHECK(mine, "out of memory");
  for (int64_t r = 0, k = 0; r < w->g.rows; r++)
    for (int64_t e = w->g.indptr[r]; e < w->g.indptr[r + 1]; e++, k++) {
      mine[3 * k] = w->g.begin + r;
      mine[3 * k + 1] = w->g.nbr[e];
      mine[3 * k + 2] = w->ewgt ? w->ewgt[e] : 1;
    }
  int64_t total = 0;
  int64_t *all = gather(mine, 3 * m, &total);
  free(mine);
  *count = total / 3;
  return (triple *)all;
}

/* Checks coarse against fine through cluster (fine rows -> coarse ids). */
static void check_level(int level, const halo__wdgraph *fine, const halo__wdgraph *coarse,
                        const int64_t *cluster, int64_t max_weight) {
  const int64_t crows = coarse->g.rows;
  int64_t *fw = malloc((size_t)(fine->g.rows ? fine->g.rows : 1) * sizeof *fw);
  int64_t *members = calloc((size_t)(crows ? crows : 1), sizeof *members);
  int64_t *weight = calloc((size_t)(crows ? crows : 1), sizeof *weight);
  int64_t *home = malloc((size_t)(crows ? crows : 1) * sizeof *home);
  unsigned char *spans = calloc((size_t)(crows ? crows : 1), 1);
  CHECK(fw && members && weight && home && spans, "out of memory");
  for (int64_t r = 0; r < fine->g.rows; r++) {
    CHECK(cluster[r] >= 0 && cluster[r] < coarse->g.nodes,
          "level %d: row %lld's cluster %lld is not a coarse vertex (%lld of them)", level,
          (long long)r, (long long)cluster[r], (long long)coarse->g.nodes);
    fw[r] = fine->vwgt ? fine->vwgt[r] : 1;
  }
  /* Each coarse row's members, from every rank's map: their number, their
   * weight, and whether they are rows of more than one rank. */
  int64_t nodes = 0, weights = 0, spanning = 0;
  int64_t *all_cid = gather(cluster, fine->g.rows, &nodes);
  int64_t *all_w = gather(fw, fine->g.rows, &weights);
  CHECK(nodes == fine->g.nodes, "level %d: %lld fine rows gathered, %lld nodes", level,
        (long long)nodes, (long long)fine->g.nodes);
  int64_t *fine_begin = gather(&fine->g.begin, 1, &weights);
  /* A coarse row's load: 1 + its members' fine edges. */
  int64_t *fdeg = malloc((size_t)(fine->g.rows ? fine->g.rows : 1) * sizeof *fdeg), degs = 0;
  CHECK(fdeg, "out of memory");
  for (int64_t r = 0; r < fine->g.rows; r++) fdeg[r] = fine->g.indptr[r + 1] - fine->g.indptr[r];
  int64_t *all_deg = gather(fdeg, fine->g.rows, &degs);
  int64_t load[3] = {0, 0, 0}; /* this block's, the largest row's, the total */
  int64_t *row_load = calloc((size_t)(crows ? crows : 1), sizeof *row_load);
  CHECK(row_load, "out of memory");
  for (int64_t v = 0, q = 0; v < nodes; v++) {
    while (q + 1 < ranks && v >= fine_begin[q + 1]) q++; /* v is a row of rank q */
    const int64_t c = all_cid[v] - coarse->g.begin;
    if (c < 0 || c >= crows) continue;
    if (members[c]++ == 0) home[c] = q;
    spans[c] |= home[c] != q;
    weight[c] += all_w[v];
    row_load[c] += all_deg[v];
  }
  for (int64_t c = 0; c < crows; c++) {
    load[0] += 1 + row_load[c];
    if (1 + row_load[c] > load[1]) load[1] = 1 + row_load[c];
  }
  /* The coarse blocks are cut by load, not left on the labels' homes: no
   * block holds more than its share and one row more. */
  int64_t most = 0;
  MPI_Allreduce(&load[0], &load[2], 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &load[1], 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&load[0], &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(load[0] <= load[2] / ranks + load[1],
        "level %d: a coarse block's load is %lld, over its share %lld and a row's %lld", level,
        (long long)load[0], (long long)(load[2] / ranks), (long long)load[1]);
  if (rank == 0)
    printf("level %d: the largest coarse block's load is %.3fx the mean\n", level,
           (double)most * ranks / (double)load[2]);
  free(row_load);
  free(all_deg);
  free(fdeg);
  for (int64_t c = 0; c < crows; c++) {
    CHECK(members[c] > 0, "level %d: coarse row %lld has no member", level, (long long)c);
    CHECK(coarse->vwgt[c] == weight[c], "level %d: coarse row %lld weighs %lld, its members %lld",
          level, (long long)c, (long long)coarse->vwgt[c], (long long)weight[c]);
    CHECK(members[c] == 1 || weight[c] <= max_weight,
          "level %d: cluster %lld of %lld members weighs %lld > %lld", level, (long long)c,
          (long long)members[c], (long long)weight[c], (long long)max_weight);
    spanning += spans[c];
  }
  MPI_Allreduce(MPI_IN_PLACE, &spanning, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  /* Clusters grow across the ranks' blocks: on this graph, where most
   * edges cross them, some must. */
  CHECK(ranks == 1 || level > 1 || spanning > 0, "level %d: no cluster has rows of two ranks",
        level);
  /* The coarse blocks in rank order, covering [0, coarse nodes). */
  int64_t below = 0, all_rows = 0;
  MPI_Exscan(&coarse->g.rows, &below, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) below = 0;
  MPI_Allreduce(&coarse->g.rows, &all_rows, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(coarse->g.begin == below, "level %d: the coarse block begins at %lld, not %lld", level,
        (long long)coarse->g.begin, (long long)below);
  CHECK(coarse->g.nodes == all_rows, "level %d: %lld coarse nodes, the blocks hold %lld", level,
        (long long)coarse->g.nodes, (long long)all_rows);
  int64_t fine_total = 0, coarse_total = 0;
  /* The fine edges between clusters, mapped and merged, against the coarse
   * edges. */
  triple *f = edges_of(fine, &fine_total), *c = edges_of(coarse, &coarse_total);
  int64_t kept = 0;
  for (int64_t k = 0; k < fine_total; k++) {
    const int64_t a = all_cid[f[k].a], b = all_cid[f[k].b];
    if (a != b) f[kept++] = (triple){a, b, f[k].w};
  }
  qsort(f, (size_t)kept, sizeof *f, cmp_triple);
  int64_t merged = 0;
  for (int64_t k = 0; k < kept; k++) {
    if (merged > 0 && f[merged - 1].a == f[k].a && f[merged - 1].b == f[k].b)
      f[merged - 1].w += f[k].w;
    else
      f[merged++] = f[k];
  }
  qsort(c, (size_t)coarse_total, sizeof *c, cmp_triple);
  CHECK(merged == coarse_total, "level %d: %lld coarse edges, %lld expected", level,
        (long long)coarse_total, (long long)merged);
  CHECK(coarse->g.edges == coarse_total, "level %d: the coarse graph says %lld edges, holds %lld",
        level, (long long)coarse->g.edges, (long long)coarse_total);
  for (int64_t k = 0; k < merged; k++)
    CHECK(f[k].a == c[k].a && f[k].b == c[k].b && f[k].w == c[k].w,
          "level %d: coarse edge %lld is (%lld, %lld, weight %lld), expected (%lld, %lld, %lld)",
          level, (long long)k, (long long)c[k].a, (long long)c[k].b, (long long)c[k].w,
          (long long)f[k].a, (long long)f[k].b, (long long)f[k].w);
  if (rank == 0)
    printf(
        "level %d: %lld nodes, %lld edges -> %lld nodes (%lld with rows of several ranks), "
        "%lld edges: clusters, weights and edges as the fine graph's\n",
        level, (long long)fine->g.nodes, (long long)fine_total, (long long)coarse->g.nodes,
        (long long)spanning, (long long)coarse_total);
  free(fw);
  free(members);
  free(weight);
  free(home);
  free(spans);
  free(all_cid);
  free(all_w);
  free(fine_begin);
  free(f);
  free(c);
}

/* The cut and each part's weight of the whole graph (every rank). */
static int64_t cut_of(const halo__wdgraph *w, const int32_t *part, int32_t parts, int64_t *pw) {
  int64_t *mine = malloc((size_t)(w->g.rows ? w->g.rows : 1) * sizeof *mine), n = 0, cut = 0;
  CHECK(mine, "out of memory");
  for (int64_t r = 0; r < w->g.rows; r++) mine[r] = part[r];
  int64_t *all = gather(mine, w->g.rows, &n);
  for (int32_t p = 0; p < parts; p++) pw[p] = 0;
  for (int64_t r = 0; r < w->g.rows; r++) {
    pw[part[r]] += w->vwgt ? w->vwgt[r] : 1;
    for (int64_t e = w->g.indptr[r]; e < w->g.indptr[r + 1]; e++)
      if (all[w->g.nbr[e]] != part[r]) cut += w->ewgt ? w->ewgt[e] : 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &cut, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, pw, parts, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  free(mine);
  free(all);
  return cut / 2;
}

static void check_refine(const char *what, const halo__wdgraph *w, int32_t parts, int32_t *part,
                         int64_t max_part, int overload, int fall_percent) {
  const int64_t rows = w->g.rows;
  int64_t *before = calloc((size_t)parts, sizeof *before),
          *after = calloc((size_t)parts, sizeof *after);
  int32_t *again = malloc((size_t)(rows ? rows : 1) * sizeof *again);
  CHECK(before && after && again, "out of memory");
  const int64_t cut0 = cut_of(w, part, parts, before);
  memcpy(again, part, (size_t)rows * sizeof *again);
  CHECK(halo__drefine(MPI_COMM_WORLD, w, parts, max_part, 1, part) == HALO_OK, "%s: refine failed",
        what);
  CHECK(halo__drefine(MPI_COMM_WORLD, w, parts, max_part, 1, again) == HALO_OK, "%s: refine failed",
        what);
  CHECK(memcmp(part, again, (size_t)rows * sizeof *part) == 0, "%s: two runs differ", what);
  const int64_t cut1 = cut_of(w, part, parts, after);
  int64_t worst0 = 0, worst1 = 0;
  for (int32_t p = 0; p < parts; p++) {
    CHECK(before[p] > max_part || after[p] <= max_part,
          "%s: part %d went from %lld to %lld, over the bound %lld", what, p, (long long)before[p],
          (long long)after[p], (long long)max_part);
    worst0 = before[p] > worst0 ? before[p] : worst0;
    worst1 = after[p] > worst1 ? after[p] : worst1;
  }
  /* Overloaded part 0 has neighbours in every part with room: it ends
   * within the bound. */
  if (overload)
    CHECK(worst1 <= max_part, "%s: the heaviest part weighs %lld, over the bound %lld", what,
          (long long)worst1, (long long)max_part);
  /* On one rank every gain is exact, so the cut cannot grow; on several a
   * neighbour on another rank may move in the same round, so the test asks
   * only that the refinement cut a round-robin assignment by fall_percent. */
  if (!overload && ranks == 1)
    CHECK(cut1 <= cut0, "%s: the cut grew from %lld to %lld", what, (long long)cut0,
          (long long)cut1);
  if (!overload)
    CHECK(cut1 * 100 <= cut0 * (100 - fall_percent),
          "%s: the cut fell only from %lld to %lld, not by %d%%", what, (long long)cut0,
          (long long)cut1, fall_percent);
  if (rank == 0)
    printf("refine (%s): cut %lld -> %lld, heaviest part %lld -> %lld (bound %lld)\n", what,
           (long long)cut0, (long long)cut1, (long long)worst0, (long long)worst1,
           (long long)max_part);
  free(before);
  free(after);
  free(again);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(argc == 7, "usage: dcoarsen-check SEED NODES CLASSES DEGREE MAX_WEIGHT PARTS");
  const uint64_t seed = strtoull(argv[1], NULL, 10);
  const int64_t n = atoll(argv[2]), classes = atoll(argv[3]), degree = atoll(argv[4]);
  const int64_t max_weight = atoll(argv[5]);
  const int32_t parts = atoi(argv[6]);
  if (rank == 0)
    printf("dcoarsen-check: seed %llu, %lld nodes, %d ranks\n", (unsigned long long)seed,
           (long long)n, ranks);
  whole g = make_graph(seed, n, classes, degree);
  halo__wdgraph fine = block_of(&g), l1 = {0}, l2 = {0};
  int64_t *c1 = NULL, *c2 = NULL;
  CHECK(halo__dcoarsen(MPI_COMM_WORLD, &fine, max_weight, &l1, &c1) == HALO_OK, "level 1 failed");
  check_level(1, &fine, &l1, c1, max_weight);
  CHECK(l1.g.nodes < n, "level 1 did not coarsen");
  {
    /* The projection reads each coarse vertex's part from its rank: a part
     * that is a function of the coarse id, read back through the map. */
    int32_t *cpart = malloc((size_t)(l1.g.rows ? l1.g.rows : 1) * sizeof *cpart);
    int32_t *proj = malloc((size_t)(fine.g.rows ? fine.g.rows : 1) * sizeof *proj);
    CHECK(cpart && proj, "out of memory");
    for (int64_t k = 0; k < l1.g.rows; k++) cpart[k] = (int32_t)((l1.g.begin + k) * 7 % parts);
    CHECK(halo__dproject(MPI_COMM_WORLD, &l1.g, fine.g.rows, c1, cpart, proj) == HALO_OK,
          "the projection failed");
    for (int64_t r = 0; r < fine.g.rows; r++)
      CHECK(proj[r] == (int32_t)(c1[r] * 7 % parts),
            "row %lld projected to part %d, its coarse vertex %lld has part %d", (long long)r,
            proj[r], (long long)c1[r], (int)(c1[r] * 7 % parts));
    if (rank == 0) printf("projection: every row gets its coarse vertex's part\n");
    free(cpart);
    free(proj);
  }
  CHECK(halo__dcoarsen(MPI_COMM_WORLD, &l1, max_weight, &l2, &c2) == HALO_OK, "level 2 failed");
  check_level(2, &l1, &l2, c2, max_weight);

  /* Refinement of a random part vector (within the bound), on the input
   * and on the weighted level 1; then with part 0 overloaded. */
  const int64_t max_part = (n * 1030) / (1000 * parts);
  int32_t *part = malloc((size_t)(fine.g.rows ? fine.g.rows : 1) * sizeof *part);
  int32_t *part1 = malloc((size_t)(l1.g.rows ? l1.g.rows : 1) * sizeof *part1);
  CHECK(part && part1, "out of memory");
  for (int64_t r = 0; r < fine.g.rows; r++) part[r] = (int32_t)((fine.g.begin + r) % parts);
  check_refine("input, round-robin parts", &fine, parts, part, max_part, 0, 20);
  for (int64_t r = 0; r < l1.g.rows; r++) part1[r] = (int32_t)((l1.g.begin + r) % parts);
  /* Level 1's clusters weigh 4 to 7 rows on average: fewer moves fit the
   * bound, and from round robin its cut falls by 17% to 23%. */
  check_refine("level 1, round-robin parts", &l1, parts, part1, max_part, 0, 10);
  for (int64_t r = 0; r < fine.g.rows; r++)
    part[r] = (fine.g.begin + r) % 5 < 2 ? 0 : (int32_t)((fine.g.begin + r) % parts);
  check_refine("input, part 0 overloaded", &fine, parts, part, max_part, 1, 0);

  free(part);
  free(part1);
  free(c1);
  free(c2);
  halo__wdgraph_free(&l1);
  halo__wdgraph_free(&l2);
  halo__wdgraph_free(&fine);
  free(g.indptr);
  free(g.nbr);
  MPI_Finalize();
  return 0;
}
