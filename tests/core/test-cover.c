/* The bipartite minimum vertex cover (core/halo-cover.h) on hand-checked
 * graphs, and against an exhaustive search over every vertex subset on
 * small random graphs (seeded, the seed printed). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "halo-cover.h"
#include "halo-rng.h"

enum { MAX_SIDE = 7 };

/* The cover of the graph with edges (l[k], r[k]), k < m, checked to cover
 * every edge; returns its size. */
static int64_t cover_of(int64_t nl, int64_t nr, const int *l, const int *r, int m, uint8_t *in_l,
                        uint8_t *in_r) {
  int64_t ptr[MAX_SIDE + 2] = {0}, adj[MAX_SIDE * MAX_SIDE + 1], size = -1;
  for (int k = 0; k < m; k++) ptr[l[k] + 1]++;
  for (int64_t i = 0; i < nl; i++) ptr[i + 1] += ptr[i];
  int64_t fill[MAX_SIDE + 1];
  for (int64_t i = 0; i < nl; i++) fill[i] = ptr[i];
  for (int k = 0; k < m; k++) adj[fill[l[k]]++] = r[k];
  const halo_bipartite g = {.nl = nl, .nr = nr, .ptr = ptr, .adj = adj};
  cr_assert_eq(halo_cover_bipartite(&g, in_l, in_r, &size), HALO_OK);
  int64_t count = 0;
  for (int64_t i = 0; i < nl; i++) count += in_l[i];
  for (int64_t j = 0; j < nr; j++) count += in_r[j];
  cr_expect_eq(count, size, "the reported size is the count of covered vertices");
  for (int k = 0; k < m; k++)
    cr_expect(in_l[l[k]] || in_r[r[k]], "edge (%d, %d) is covered", l[k], r[k]);
  return size;
}

Test(cover, star_is_covered_by_its_centre) {
  /* Left 0 joined to rights 0..4: one row covers the five edges. */
  const int l[] = {0, 0, 0, 0, 0}, r[] = {0, 1, 2, 3, 4};
  uint8_t in_l[1], in_r[5];
  cr_expect_eq(cover_of(1, 5, l, r, 5, in_l, in_r), 1);
  cr_expect_eq(in_l[0], 1);
}

Test(cover, reverse_star_is_covered_by_its_right_centre) {
  /* Lefts 0..3 joined to right 0: the receiver's node, pre-aggregated. */
  const int l[] = {0, 1, 2, 3}, r[] = {0, 0, 0, 0};
  uint8_t in_l[4], in_r[1];
  cr_expect_eq(cover_of(4, 1, l, r, 4, in_l, in_r), 1);
  cr_expect_eq(in_r[0], 1);
  for (int i = 0; i < 4; i++) cr_expect_eq(in_l[i], 0);
}

Test(cover, perfect_matching_needs_one_side) {
  /* 0-0, 1-1, 2-2 and the extra edges 0-1, 1-2: a matching of 3, so 3 rows. */
  const int l[] = {0, 0, 1, 1, 2}, r[] = {0, 1, 1, 2, 2};
  uint8_t in_l[3], in_r[3];
  cr_expect_eq(cover_of(3, 3, l, r, 5, in_l, in_r), 3);
}

Test(cover, path_needs_alternating_vertices) {
  /* The path l0 - r0 - l1 - r1 - l2 - r2 (5 edges): its maximum matching
   * l0-r0, l1-r1, l2-r2 has 3 edges, so no 2 vertices cover it. */
  const int l[] = {0, 1, 1, 2, 2}, r[] = {0, 0, 1, 1, 2};
  uint8_t in_l[3], in_r[3];
  cr_expect_eq(cover_of(3, 3, l, r, 5, in_l, in_r), 3);
}

Test(cover, two_stars_share_nothing) {
  /* Left 0 to rights 0, 1, 2; lefts 1, 2, 3 to right 3: the first star by
   * its left centre, the second by its right centre, 2 rows for 6 edges. */
  const int l[] = {0, 0, 0, 1, 2, 3}, r[] = {0, 1, 2, 3, 3, 3};
  uint8_t in_l[4], in_r[4];
  cr_expect_eq(cover_of(4, 4, l, r, 6, in_l, in_r), 2);
  cr_expect_eq(in_l[0], 1);
  cr_expect_eq(in_r[3], 1);
}

Test(cover, no_edges_no_rows) {
  uint8_t in_l[3], in_r[2];
  cr_expect_eq(cover_of(3, 2, NULL, NULL, 0, in_l, in_r), 0);
}

Test(cover, bad_edge_is_refused) {
  const int64_t ptr[] = {0, 1}, adj[] = {5};
  uint8_t in_l[1], in_r[2];
  int64_t size = 0;
  const halo_bipartite g = {.nl = 1, .nr = 2, .ptr = ptr, .adj = adj};
  cr_expect_eq(halo_cover_bipartite(&g, in_l, in_r, &size), HALO_ERR_ARG);
}

/* The smallest cover by trying every subset of the nl + nr vertices. */
static int brute_force(int nl, int nr, const int *l, const int *r, int m) {
  int best = nl + nr;
  for (unsigned mask = 0; mask < (1u << (nl + nr)); mask++) {
    int ok = 1;
    for (int k = 0; k < m && ok; k++) ok = ((mask >> l[k]) & 1u) || ((mask >> (nl + r[k])) & 1u);
    if (ok && __builtin_popcount(mask) < best) best = __builtin_popcount(mask);
  }
  return best;
}

Test(cover, random_graphs_match_the_exhaustive_search) {
  const uint64_t seed = 20261206;
  printf("cover: seed %llu\n", (unsigned long long)seed);
  for (uint64_t t = 0; t < 400; t++) {
    const int nl = 1 + (int)(halo_rng_bits(halo_rng_key(seed, 0, t, 0), 0, 0) % MAX_SIDE);
    const int nr = 1 + (int)(halo_rng_bits(halo_rng_key(seed, 0, t, 0), 1, 0) % MAX_SIDE);
    const double density = (double)(halo_rng_bits(halo_rng_key(seed, 0, t, 0), 2, 0) % 100) / 100.0;
    int l[MAX_SIDE * MAX_SIDE], r[MAX_SIDE * MAX_SIDE], m = 0;
    for (int i = 0; i < nl; i++)
      for (int j = 0; j < nr; j++)
        if ((double)(halo_rng_bits(halo_rng_key(seed, 0, t, 1), (uint64_t)i, (uint64_t)j) % 1000) /
                1000.0 <
            density) {
          l[m] = i;
          r[m] = j;
          m++;
        }
    uint8_t in_l[MAX_SIDE], in_r[MAX_SIDE];
    const int64_t size = cover_of(nl, nr, l, r, m, in_l, in_r);
    cr_expect_eq(size, brute_force(nl, nr, l, r, m), "seed %llu, graph %llu (%d x %d, %d edges)",
                 (unsigned long long)seed, (unsigned long long)t, nl, nr, m);
    cr_expect_leq(size, nl < nr ? nl : nr);
  }
}
