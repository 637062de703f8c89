/* The locality blocks of the community row order (halo__partition_blocks),
 * called directly with small block sizes so that the expected blocks can be
 * worked out by hand: disjoint cliques with shuffled ids come out one block
 * per clique, rows with no inner edge fill blocks in index order, and on
 * messy random graphs every block respects the size bounds and a rerun gives
 * the same blocks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "partition-impl.h"
#include "partition-util.h"

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  cr_assert_not_null(p, "out of memory");
  return p;
}

static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A seeded random permutation of 0..n-1 (Fisher-Yates). */
static int64_t *permutation(int64_t n, uint64_t *state) {
  int64_t *perm = xcalloc((size_t)n, sizeof *perm);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(next_random(state) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}

/* The blocks of the part {v : owned_flag[v]} (all nodes when NULL), as
 * halo_partition_plan_shard asks for them: owned in ascending id, local[]
 * its inverse and -1 elsewhere.  Returns block[] indexed by global id (-1
 * for the other nodes) and the number of blocks in *count. */
static int32_t *blocks_of(const halo_graph *g, const uint8_t *owned_flag, int64_t block_rows,
                          int64_t *count) {
  int64_t *owned = xcalloc((size_t)g->n, sizeof *owned), n_owned = 0;
  int32_t *local = xcalloc((size_t)g->n, sizeof *local);
  for (int64_t v = 0; v < g->n; v++) {
    local[v] = -1;
    if (!owned_flag || owned_flag[v]) {
      local[v] = (int32_t)n_owned;
      owned[n_owned++] = v;
    }
  }
  int32_t *block = xcalloc((size_t)n_owned, sizeof *block);
  cr_assert_eq(halo__partition_blocks(g, owned, n_owned, local, block_rows, block), HALO_OK);
  int32_t *by_node = xcalloc((size_t)g->n, sizeof *by_node);
  *count = 0;
  for (int64_t v = 0; v < g->n; v++) by_node[v] = -1;
  for (int64_t i = 0; i < n_owned; i++) {
    cr_assert_geq(block[i], 0, "row %lld: block %d", (long long)i, block[i]);
    by_node[owned[i]] = block[i];
    if (block[i] >= *count) *count = block[i] + 1;
  }
  free(block);
  free(local);
  free(owned);
  return by_node;
}

/* Cliques of the given sizes on ids shuffled by a seeded permutation, plus
 * `foreign` extra nodes, each joined to a few random clique nodes (they are
 * left out of the part: their edges must not count).  clique[v] is v's
 * clique, or -1 for a foreign node. */
static halo_graph *shuffled_cliques(int k, const int64_t *sizes, int64_t foreign, uint64_t *state,
                                    int32_t **clique) {
  int64_t n = foreign, m = 0;
  for (int c = 0; c < k; c++) {
    n += sizes[c];
    m += sizes[c] * (sizes[c] - 1);
  }
  m += 2 * 4 * foreign;
  int64_t *perm = permutation(n, state);
  int64_t *src = xcalloc((size_t)m, sizeof *src), *dst = xcalloc((size_t)m, sizeof *dst);
  *clique = xcalloc((size_t)n, sizeof **clique);
  int64_t first = 0, e = 0;
  for (int c = 0; c < k; c++) {
    for (int64_t a = first; a < first + sizes[c]; a++) {
      (*clique)[perm[a]] = c;
      for (int64_t b = first; b < first + sizes[c]; b++)
        if (a != b) src[e] = perm[a], dst[e++] = perm[b];
    }
    first += sizes[c];
  }
  for (int64_t f = first; f < n; f++) {
    (*clique)[perm[f]] = -1;
    for (int j = 0; j < 4; j++) {
      int64_t other = perm[(int64_t)(next_random(state) % (uint64_t)first)];
      src[e] = perm[f], dst[e++] = other;
      src[e] = other, dst[e++] = perm[f];
    }
  }
  halo_graph *g = pt_graph_from_edges(n, e, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  free(dst);
  free(src);
  free(perm);
  return g;
}

/* Every block is exactly one clique and every clique one block. */
static void expect_one_block_per_clique(const halo_graph *g, const int32_t *clique,
                                        const int32_t *block, int k, int64_t count) {
  cr_assert_eq(count, k, "%lld blocks for %d cliques", (long long)count, k);
  int32_t *clique_of_block = xcalloc((size_t)k, sizeof *clique_of_block);
  int32_t *block_of_clique = xcalloc((size_t)k, sizeof *block_of_clique);
  for (int c = 0; c < k; c++) clique_of_block[c] = block_of_clique[c] = -1;
  for (int64_t v = 0; v < g->n; v++) {
    if (clique[v] < 0) {
      cr_assert_eq(block[v], -1, "foreign node %lld got block %d", (long long)v, block[v]);
      continue;
    }
    if (clique_of_block[block[v]] < 0) clique_of_block[block[v]] = clique[v];
    if (block_of_clique[clique[v]] < 0) block_of_clique[clique[v]] = block[v];
    cr_assert_eq(clique_of_block[block[v]], clique[v],
                 "node %lld of clique %d is in block %d, which holds clique %d", (long long)v,
                 clique[v], block[v], clique_of_block[block[v]]);
    cr_assert_eq(block_of_clique[clique[v]], block[v], "clique %d is split over blocks %d and %d",
                 clique[v], block_of_clique[clique[v]], block[v]);
  }
  free(block_of_clique);
  free(clique_of_block);
}

Test(blocks, cliques_of_block_rows_are_the_blocks) {
  uint64_t state = pt_seed("blocks.cliques_of_block_rows_are_the_blocks", 5);
  const int64_t block_rows = 24;
  int64_t sizes[9];
  for (int64_t foreign = 0; foreign <= 30; foreign += 15) {
    for (int c = 0; c < 9; c++) sizes[c] = block_rows;
    int32_t *clique = NULL;
    halo_graph *g = shuffled_cliques(9, sizes, foreign, &state, &clique);
    uint8_t *owned = xcalloc((size_t)g->n, 1);
    for (int64_t v = 0; v < g->n; v++) owned[v] = clique[v] >= 0;
    int64_t count = 0;
    int32_t *block = blocks_of(g, owned, block_rows, &count);
    expect_one_block_per_clique(g, clique, block, 9, count);
    free(block);
    free(owned);
    free(clique);
    halo_graph_destroy(&g);
  }
}

/* Cliques of more than half a block and at most a block: the growth runs
 * into the next clique, and giving back the rows past the clique leaves one
 * block per clique. */
Test(blocks, smaller_cliques_are_the_blocks) {
  uint64_t state = pt_seed("blocks.smaller_cliques_are_the_blocks", 6);
  const int64_t block_rows = 20;
  for (int round = 0; round < 5; round++) {
    int64_t sizes[12];
    for (int c = 0; c < 12; c++)
      sizes[c] = block_rows / 2 + 1 + (int64_t)(next_random(&state) % (uint64_t)(block_rows / 2));
    int32_t *clique = NULL;
    halo_graph *g = shuffled_cliques(12, sizes, 0, &state, &clique);
    int64_t count = 0;
    int32_t *block = blocks_of(g, NULL, block_rows, &count);
    expect_one_block_per_clique(g, clique, block, 12, count);
    free(block);
    free(clique);
    halo_graph_destroy(&g);
  }
}

/* With no edge inside the part (isolated nodes, or edges that all leave
 * it), the blocks are runs of block_rows rows in index order. */
Test(blocks, no_inner_edges_fill_in_index_order) {
  const int64_t n = 103, block_rows = 10;
  /* Edges only between even and odd ids; the part is the even ids plus
   * isolated node 102. */
  int64_t src[200], dst[200], m = 0;
  for (int64_t v = 0; v + 1 < 102; v += 2) {
    src[m] = v, dst[m++] = v + 1;
    src[m] = v + 1, dst[m++] = v;
  }
  halo_graph *g = pt_graph_from_edges(n, m, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  uint8_t owned[103];
  for (int64_t v = 0; v < n; v++) owned[v] = v % 2 == 0;
  int64_t count = 0;
  int32_t *block = blocks_of(g, owned, block_rows, &count);
  cr_expect_eq(count, 6, "52 rows in blocks of 10: %lld blocks", (long long)count);
  for (int64_t v = 0; v < n; v += 2)
    cr_expect_eq(block[v], (int32_t)(v / 2 / block_rows), "node %lld (row %lld): block %d",
                 (long long)v, (long long)(v / 2), block[v]);
  free(block);
  halo_graph_destroy(&g);
}

/* A part of at most block_rows rows is one block, whatever its edges. */
Test(blocks, small_part_is_one_block) {
  uint64_t seed = pt_seed("blocks.small_part_is_one_block", 7);
  halo_graph *g = pt_graph_random(60, 300, seed);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  for (int64_t block_rows = 60; block_rows <= 61; block_rows++) {
    int64_t count = 0;
    int32_t *block = blocks_of(g, NULL, block_rows, &count);
    cr_expect_eq(count, 1);
    for (int64_t v = 0; v < g->n; v++) cr_expect_eq(block[v], 0, "node %lld", (long long)v);
    free(block);
  }
  halo_graph_destroy(&g);
}

/* Messy random graphs (self-loops, duplicates, isolated nodes before the
 * clean-up; one block size of 1), random parts: block ids are 0..count-1,
 * no block exceeds block_rows, only the last may hold fewer than
 * ceil(block_rows / 2), and a rerun gives the same blocks. */
Test(blocks, random_parts_bounds_and_determinism) {
  uint64_t state = pt_seed("blocks.random_parts_bounds_and_determinism", 8);
  const int64_t sizes[] = {1, 2, 7, 16, 33, 100};
  for (int round = 0; round < 6; round++) {
    const int64_t n = 400 + 300 * round, block_rows = sizes[round];
    halo_graph *g = pt_graph_random(n, 3 * n, next_random(&state));
    cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
    uint8_t *owned = xcalloc((size_t)n, 1);
    int64_t n_owned = 0;
    for (int64_t v = 0; v < n; v++) n_owned += owned[v] = next_random(&state) % 3 != 0;
    int64_t count = 0, again_count = 0;
    int32_t *block = blocks_of(g, owned, block_rows, &count);
    int32_t *again = blocks_of(g, owned, block_rows, &again_count);
    cr_expect_eq(again_count, count);
    int64_t *size = xcalloc((size_t)count, sizeof *size);
    for (int64_t v = 0; v < n; v++) {
      cr_expect_eq(block[v], again[v], "round %d node %lld: block %d, then %d", round, (long long)v,
                   block[v], again[v]);
      if (owned[v]) size[block[v]]++;
    }
    const int64_t min_rows = (block_rows + 1) / 2;
    cr_expect_leq(count, (n_owned + min_rows - 1) / min_rows, "round %d: %lld blocks of %lld rows",
                  round, (long long)count, (long long)n_owned);
    for (int64_t b = 0; b < count; b++) {
      cr_expect_gt(size[b], 0, "round %d: block %lld is empty", round, (long long)b);
      cr_expect_leq(size[b], block_rows, "round %d: block %lld holds %lld rows", round,
                    (long long)b, (long long)size[b]);
      if (b + 1 < count)
        cr_expect_geq(size[b], min_rows, "round %d: block %lld of %lld holds %lld rows", round,
                      (long long)b, (long long)count, (long long)size[b]);
    }
    free(size);
    free(again);
    free(block);
    free(owned);
    halo_graph_destroy(&g);
  }
}

/* A planted partition: communities of block_rows nodes on shuffled ids,
 * each node with about 12 neighbours inside its community and 2 outside.
 * The planted communities keep about 6/7 of the edges inside; the blocks
 * found must keep at least 95% as many (blocks in index order would keep
 * about 1/k of the edges). */
Test(blocks, planted_communities_keep_their_edges) {
  uint64_t state = pt_seed("blocks.planted_communities_keep_their_edges", 9);
  const int64_t block_rows = 200, k = 25, n = block_rows * k;
  int64_t *perm = permutation(n, &state);
  const int64_t m = n * 14;
  int64_t *src = xcalloc((size_t)m, sizeof *src), *dst = xcalloc((size_t)m, sizeof *dst);
  for (int64_t e = 0; e < m; e += 2) {
    int64_t a = (int64_t)(next_random(&state) % (uint64_t)n), b;
    if (e % 14 < 12)
      b = a / block_rows * block_rows + (int64_t)(next_random(&state) % (uint64_t)block_rows);
    else
      b = (int64_t)(next_random(&state) % (uint64_t)n);
    src[e] = perm[a], dst[e] = perm[b];
    src[e + 1] = perm[b], dst[e + 1] = perm[a];
  }
  halo_graph *g = pt_graph_from_edges(n, m, src, dst);
  cr_assert_eq(halo_partition_clean(g, NULL), HALO_OK);
  int64_t count = 0, inside = 0, planted = 0;
  int32_t *block = blocks_of(g, NULL, block_rows, &count);
  int32_t *community = xcalloc((size_t)n, sizeof *community);
  for (int64_t i = 0; i < n; i++) community[perm[i]] = (int32_t)(i / block_rows);
  for (int64_t v = 0; v < n; v++)
    for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
      inside += block[v] == block[g->indices[e]];
      planted += community[v] == community[g->indices[e]];
    }
  const double share = (double)inside / (double)g->m,
               planted_share = (double)planted / (double)g->m;
  fprintf(stderr, "planted: %lld blocks, %.1f%% of edges inside a block (planted %.1f%%)\n",
          (long long)count, 100.0 * share, 100.0 * planted_share);
  cr_expect_geq(share, 0.95 * planted_share,
                "%.1f%% of edges inside a block (planted communities: %.1f%%)", 100.0 * share,
                100.0 * planted_share);
  free(community);
  free(block);
  halo_graph_destroy(&g);
  free(dst);
  free(src);
  free(perm);
}

/* Refused: no rows per block, and a part beyond int32 local rows (checked
 * before anything is read, so the arrays may be tiny). */
Test(blocks, bad_arguments_are_refused) {
  halo_graph *g = pt_graph_from_edges(3, 0, NULL, NULL);
  const int64_t owned[3] = {0, 1, 2};
  const int32_t local[3] = {0, 1, 2};
  int32_t block[3] = {7, 7, 7};
  cr_expect_eq(halo__partition_blocks(g, owned, 3, local, 0, block), HALO_ERR_ARG);
  cr_expect_eq(halo__partition_blocks(g, owned, (int64_t)INT32_MAX + 1, local, 10, block),
               HALO_ERR_LIMIT);
  cr_expect_eq(halo__partition_blocks(g, owned, 3, local, 1, block), HALO_OK);
  for (int i = 0; i < 3; i++) cr_expect_eq(block[i], i, "isolated row %d", i);
  halo_graph_destroy(&g);
}

/* halo_partition_cut_by_load, worked out by hand: loads 1 1 1 1 4 (total
 * 8) into 2 blocks put item 4 alone in block 1 (4 of the 8 before it);
 * into 3, the loads before items 0..4 are 0 1 2 3 4, so blocks 0 0 0 1 1.
 * A run that starts later (below > 0) names its own first items, and the
 * least over two runs is the whole array's cut. */
Test(cut_by_load, hand_checked_cuts_and_runs) {
  const int64_t load[5] = {1, 1, 1, 1, 4};
  int64_t first[4];
  halo_partition_cut_by_load(load, 5, 0, 8, 2, first);
  cr_expect_eq(first[0], 0);
  cr_expect_eq(first[1], 4);
  cr_expect_eq(first[2], INT64_MAX);
  halo_partition_cut_by_load(load, 5, 0, 8, 3, first);
  cr_expect_eq(first[0], 0);
  cr_expect_eq(first[1], 3);
  cr_expect_eq(first[2], INT64_MAX, "no item has 16/3 of the load before it");
  cr_expect_eq(first[3], INT64_MAX);
  /* Items 3 and 4 as a run of their own, after a load of 3. */
  halo_partition_cut_by_load(load + 3, 2, 3, 8, 2, first);
  cr_expect_eq(first[0], 0);
  cr_expect_eq(first[1], 1);
  /* Random loads in two runs: the least of the runs' firsts, offset to
   * whole-array indices, is the cut of the whole array. */
  uint64_t state = 20261206;
  fprintf(stderr, "cut_by_load seed 20261206\n");
  int64_t many[300], total = 0, whole[9], a[9], b[9];
  for (int i = 0; i < 300; i++) total += many[i] = (int64_t)(next_random(&state) % 50);
  halo_partition_cut_by_load(many, 300, 0, total, 8, whole);
  int64_t below = 0;
  for (int i = 0; i < 117; i++) below += many[i];
  halo_partition_cut_by_load(many, 117, 0, total, 8, a);
  halo_partition_cut_by_load(many + 117, 183, below, total, 8, b);
  for (int q = 0; q <= 8; q++) {
    const int64_t from_b = b[q] == INT64_MAX ? INT64_MAX : b[q] + 117;
    cr_expect_eq(whole[q], a[q] < from_b ? a[q] : from_b, "block %d", q);
  }
  /* Each block's load is at most its share and one item. */
  for (int q = 0; q < 8; q++) {
    const int64_t lo = whole[q] == INT64_MAX ? 300 : whole[q];
    const int64_t hi = q + 1 < 8 && whole[q + 1] != INT64_MAX ? whole[q + 1] : 300;
    int64_t sum = 0;
    for (int64_t i = lo; i < hi; i++) sum += many[i];
    cr_expect_leq(sum, total / 8 + 50, "block %d holds %lld of %lld", q, (long long)sum,
                  (long long)total);
  }
}
