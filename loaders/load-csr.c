/* From an unordered stream of (src, dst) pairs to a CSR sorted by row, in
 * place.
 *
 * The pairs are permuted into row order by a cycle-leader counting sort whose
 * only extra memory is the row-offset array the CSR needs anyway; the
 * destinations are then packed into the front of the same buffer, which
 * becomes g->indices.  A grown buffer is a realloc, which glibc serves with
 * mremap for blocks this large, so growth never holds two copies either.
 */
#include <stdlib.h>
#include <string.h>

#include "load-impl.h"

/* Marks a pair as placed during the permutation; ids are below 2^63. */
#define PLACED ((uint64_t)1 << 63)

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

halo_status load_edges_to_csr(load_edges *e, halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, m = e->count;
  int64_t *pair = e->pair;
  int64_t *next = g->indptr; /* size n+1, zeroed by halo_graph_create */

  /* next[v] = first slot of row v. */
  for (int64_t k = 0; k < m; k++) next[pair[2 * k] + 1]++;
  for (int64_t v = 0; v < n; v++) next[v + 1] += next[v];

  /* Cycle leader: take the pair at slot i to the next free slot of its row,
   * bring the pair found there back to i, and repeat until i holds a pair
   * that belongs to it.  Slots below i are placed, so a free slot is >= i. */
  for (int64_t i = 0; i < m; i++) {
    while (!((uint64_t)pair[2 * i + 1] & PLACED)) {
      int64_t j = next[pair[2 * i]]++;
      if (j != i) {
        int64_t src = pair[2 * j], dst = pair[2 * j + 1];
        pair[2 * j] = pair[2 * i];
        pair[2 * j + 1] = (int64_t)((uint64_t)pair[2 * i + 1] | PLACED);
        pair[2 * i] = src;
        pair[2 * i + 1] = dst;
      } else {
        pair[2 * i + 1] = (int64_t)((uint64_t)pair[2 * i + 1] | PLACED);
      }
    }
  }
  /* Now next[v] is the end of row v, i.e. indptr[v+1]. */
  memmove(next + 1, next, (size_t)n * sizeof *next);
  next[0] = 0;

  /* Pack the destinations to the front: slot k reads 2k+1 >= k. */
  for (int64_t k = 0; k < m; k++) pair[k] = (int64_t)((uint64_t)pair[2 * k + 1] & ~PLACED);
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
