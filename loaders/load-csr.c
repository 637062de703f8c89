/* From an unordered stream of (src, dst) pairs to a CSR sorted by row, in
 * place.
 *
 * The pairs are sorted into row order in place by an MSD radix sort whose
 * only extra memory is a few bucket tables on the stack; the destinations
 * are then packed into the front of the same buffer, which becomes
 * g->indices.  A grown buffer is a realloc, which glibc serves with
 * mremap for blocks this large, so growth never holds two copies either.
 */
#include <stdlib.h>
#include <string.h>

#include "load-impl.h"

halo_status load_edges_reserve(load_edges *e, int64_t cap) {
  halo_status st = HALO_OK;
  if (cap <= e->cap) return HALO_OK;
  if ((uint64_t)cap > SIZE_MAX / (2 * sizeof(int64_t)))
    HALO_FAIL(HALO_ERR_NOMEM, "edge buffer of %lld edges exceeds the address space", (long long)cap);
  int64_t *grown = realloc(e->pair, (size_t)cap * 2 * sizeof(int64_t));
  if (!grown)
    HALO_FAIL(HALO_ERR_NOMEM, "out of memory for %lld edges (%zu bytes)", (long long)cap,
              (size_t)cap * 2 * sizeof(int64_t));
  e->pair = grown;
  e->cap = cap;
done:
  return st;
}

halo_status load_edges_grow(load_edges *e) {
  return load_edges_reserve(e, e->cap < 4096 ? 4096 : e->cap + e->cap / 2);
}

void load_edges_free(load_edges *e) {
  free(e->pair);
  *e = (load_edges){0};
}

static int cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

static void sort_i64(int64_t *a, int64_t len) {
  if (len > 32) {
    qsort(a, (size_t)len, sizeof *a, cmp_i64);
    return;
  }
  for (int64_t i = 1; i < len; i++) {
    int64_t v = a[i], j = i;
    for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
    a[j] = v;
  }
}

void load_csr_sort_rows(halo_graph *g) {
  const int64_t *indptr = g->indptr;
  int64_t *indices = g->indices;
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t v = 0; v < g->n; v++) sort_i64(indices + indptr[v], indptr[v + 1] - indptr[v]);
}

/* In-place MSD radix sort ("American flag sort") of pairs by source id,
 * RADIX_BITS at a time from bit `shift` down.  Each pass moves every pair
 * once, with one write cursor per bucket, so the writes stay in a few
 * thousand cache lines instead of scattering over the whole buffer. */
enum { RADIX_BITS = 10, RADIX = 1 << RADIX_BITS, SMALL_BUCKET = 32 };

static void sort_pairs_small(int64_t *pair, int64_t count) {
  for (int64_t i = 1; i < count; i++) {
    int64_t src = pair[2 * i], dst = pair[2 * i + 1], j = i;
    for (; j > 0 && pair[2 * (j - 1)] > src; j--) {
      pair[2 * j] = pair[2 * (j - 1)];
      pair[2 * j + 1] = pair[2 * (j - 1) + 1];
    }
    pair[2 * j] = src;
    pair[2 * j + 1] = dst;
  }
}

/* One pass: permutes the pairs so that digit (src >> shift) & (RADIX-1)
 * ascends; start[b] is where bucket b begins (start[RADIX] = count). */
static void radix_partition(int64_t *pair, int64_t count, int shift, int64_t start[RADIX + 1]) {
  int64_t head[RADIX], tail[RADIX];
  memset(tail, 0, sizeof tail);
  for (int64_t k = 0; k < count; k++) tail[((uint64_t)pair[2 * k] >> shift) & (RADIX - 1)]++;
  int64_t sum = 0;
  for (int b = 0; b < RADIX; b++) {
    head[b] = sum;
    start[b] = sum;
    sum += tail[b];
    tail[b] = sum;
  }
  start[RADIX] = count;
  for (int b = 0; b < RADIX; b++) {
    while (head[b] < tail[b]) {
      int64_t src = pair[2 * head[b]], dst = pair[2 * head[b] + 1];
      int d = (int)(((uint64_t)src >> shift) & (RADIX - 1));
      while (d != b) {
        /* Drop the pair into its bucket and carry on with the one it displaces. */
        int64_t at = head[d]++;
        int64_t next_src = pair[2 * at], next_dst = pair[2 * at + 1];
        pair[2 * at] = src;
        pair[2 * at + 1] = dst;
        src = next_src;
        dst = next_dst;
        d = (int)(((uint64_t)src >> shift) & (RADIX - 1));
      }
      pair[2 * head[b]] = src;
      pair[2 * head[b] + 1] = dst;
      head[b]++;
    }
  }
}

static void sort_pairs_radix(int64_t *pair, int64_t count, int shift) {
  if (count <= SMALL_BUCKET) {
    sort_pairs_small(pair, count);
    return;
  }
  int64_t start[RADIX + 1];
  radix_partition(pair, count, shift, start);
  if (shift == 0) return;
  int next = shift > RADIX_BITS ? shift - RADIX_BITS : 0;
  for (int b = 0; b < RADIX; b++) sort_pairs_radix(pair + 2 * start[b], start[b + 1] - start[b], next);
}

halo_status load_edges_to_csr(load_edges *e, halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, m = e->count;
  int64_t *pair = e->pair;
  int64_t *indptr = g->indptr; /* size n+1, zeroed by halo_graph_create */

  for (int64_t k = 0; k < m; k++) indptr[pair[2 * k] + 1]++;
  for (int64_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];

  /* Sort by source: the top digit first, so that ids below 2^shift+RADIX_BITS
   * are covered; then pack the destinations into the front of the buffer
   * (slot k reads 2k+1 >= k) and shrink it into g->indices. */
  int bits = 1;
  while (bits < 63 && ((int64_t)1 << bits) < n) bits++;
  int shift = bits > RADIX_BITS ? bits - RADIX_BITS : 0;
  int64_t start[RADIX + 1];
  radix_partition(pair, m, shift, start);
  if (shift > 0) {
    int next = shift > RADIX_BITS ? shift - RADIX_BITS : 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < RADIX; b++) sort_pairs_radix(pair + 2 * start[b], start[b + 1] - start[b], next);
  }
  for (int64_t k = 0; k < m; k++) pair[k] = pair[2 * k + 1];

  int64_t *indices;
  if (m > 0) {
    indices = realloc(pair, (size_t)m * sizeof *indices);
    if (!indices) indices = pair; /* a failed shrink leaves the block as it was */
  } else {
    free(pair);
    indices = calloc(1, sizeof *indices);
  }
  *e = (load_edges){0};
  free(g->indices);
  g->indices = indices;
  g->m = m;
  if (!indices) HALO_FAIL(HALO_ERR_NOMEM, "out of memory for an empty edge list");
  load_csr_sort_rows(g);
done:
  return st;
}
