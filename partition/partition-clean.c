/* Clean-up: E' = {(u,v), (v,u) : (u,v) ∈ E, u ≠ v}, each once, rows sorted.
 *
 * Done in place in three steps, so that an input which is already simple
 * and symmetric (the usual case) needs no second edge array:
 *   1. sort each row, drop self-loops and repeats, compact to the left;
 *   2. check symmetry in one merge-like sweep (the usual answer is yes);
 *      otherwise count, for each node v, the edges (u, v) whose reverse
 *      (v, u) is missing (binary search in the sorted row v);
 *   3. if any: grow the edge array once, move the rows right to open a gap
 *      at the end of each row, append the missing reverses (they arrive in
 *      ascending u, so the gap is sorted) and merge each row's two runs.
 */
#include <stdlib.h>
#include <string.h>

#include "halo-partition.h"
#include "halo-search.h"

static void sort_row(int64_t *row, int64_t len) {
  int64_t k = 1;
  while (k < len && row[k - 1] <= row[k]) k++;
  if (k >= len) return;
  if (len > 32) {
    qsort(row, (size_t)len, sizeof *row, halo_compare_i64);
    return;
  }
  for (; k < len; k++) {
    int64_t key = row[k], j = k;
    for (; j > 0 && row[j - 1] > key; j--) row[j] = row[j - 1];
    row[j] = key;
  }
}

/* 1 when sorted row[0..len) contains x. */
static int row_has(const int64_t *row, int64_t len, int64_t x) {
  return halo_sorted_has(row, len, x);
}

/* Step 1: sorted, no self-loops, no repeats; returns the new edge count. */
static halo_status make_simple(halo_graph *g, halo_clean_report *rep) {
  halo_status st = HALO_OK;
  int64_t *ptr = g->indptr, *idx = g->indices;
  int64_t kept = 0, start = ptr[0];
  for (int64_t v = 0; v < g->n; v++) {
    int64_t end = ptr[v + 1];
    if (end < start || end > g->m)
      HALO_FAIL(HALO_ERR_RANGE, "%s: indptr[%lld] = %lld is out of order or beyond %lld edges",
                g->source, (long long)(v + 1), (long long)end, (long long)g->m);
    for (int64_t k = start; k < end; k++)
      if (idx[k] < 0 || idx[k] >= g->n)
        HALO_FAIL(HALO_ERR_RANGE, "%s: edge (%lld, %lld) names a node outside [0, %lld)", g->source,
                  (long long)v, (long long)idx[k], (long long)g->n);
    sort_row(idx + start, end - start);
    ptr[v] = kept;
    int64_t prev = -1;
    for (int64_t k = start; k < end; k++) {
      int64_t u = idx[k];
      if (u == v)
        rep->self_loops++;
      else if (u == prev)
        rep->duplicates++;
      else
        idx[kept++] = u;
      prev = u;
    }
    start = end;
  }
  ptr[g->n] = kept;
  g->m = kept;
done:
  return st;
}

/* Step 2, fast path: *symmetric = 1 when the simple graph g (rows sorted) is.
 * Walking u upwards, the entries (u, v) with v > u reach row v in ascending
 * u, so they must consume row v's entries below v in order; one cursor per
 * row replaces a binary search per edge. */
static halo_status check_symmetric(const halo_graph *g, int *symmetric) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, *ptr = g->indptr, *idx = g->indices;
  int64_t *next = NULL;
  int ok = 1;
  HALO_ALLOC(next, n, "clean-up cursors");
  for (int64_t v = 0; v < n; v++) next[v] = ptr[v];
  for (int64_t u = 0; u < n && ok; u++)
    for (int64_t k = ptr[u + 1] - 1; k >= ptr[u] && idx[k] > u; k--) {
      int64_t v = idx[k];
      if (next[v] == ptr[v + 1] || idx[next[v]] != u) {
        ok = 0;
        break;
      }
      next[v]++;
    }
  for (int64_t v = 0; v < n && ok; v++)
    if (next[v] < ptr[v + 1] && idx[next[v]] < v) ok = 0;
  *symmetric = ok;
done:
  free(next);
  return st;
}

/* Step 3: merges row[0..len1) and row[len1..len1+len2), both sorted, using
 * tmp (room for len2) for the second run. */
static void merge_tail(int64_t *row, int64_t len1, int64_t len2, int64_t *tmp) {
  memcpy(tmp, row + len1, (size_t)len2 * sizeof *row);
  int64_t i = len1 - 1, j = len2 - 1, k = len1 + len2 - 1;
  while (j >= 0) {
    if (i >= 0 && row[i] > tmp[j])
      row[k--] = row[i--];
    else
      row[k--] = tmp[j--];
  }
}

/* Steps 2 (slow path) and 3: adds (v, u) for every (u, v) whose reverse is
 * missing; rows stay sorted. */
static halo_status add_missing_reverses(halo_graph *g, halo_clean_report *rep) {
  halo_status st = HALO_OK;
  int64_t *shift = NULL, *fill = NULL, *tmp = NULL;
  const int64_t n = g->n, m1 = g->m;
  int64_t *ptr = g->indptr;

  /* shift[v + 1] counts the reverses row v is missing. */
  HALO_ALLOC(shift, n + 1, "clean-up row shifts");
  for (int64_t u = 0; u < n; u++)
    for (int64_t k = ptr[u]; k < ptr[u + 1]; k++) {
      int64_t v = g->indices[k];
      if (!row_has(g->indices + ptr[v], ptr[v + 1] - ptr[v], u)) shift[v + 1]++;
    }
  int64_t missing = 0, max_missing = 0;
  for (int64_t v = 0; v < n; v++) {
    if (shift[v + 1] > max_missing) max_missing = shift[v + 1];
    missing += shift[v + 1];
    shift[v + 1] = missing; /* now: entries added to rows before v + 1 */
  }
  rep->reverse_added = missing;

  int64_t *idx = realloc(g->indices, (size_t)(m1 + missing) * sizeof *idx);
  if (!idx)
    HALO_FAIL(HALO_ERR_NOMEM, "out of memory symmetrizing %s (%lld more edges)", g->source,
              (long long)missing);
  g->indices = idx;
  HALO_ALLOC(fill, n, "clean-up fill positions");
  HALO_ALLOC(tmp, max_missing, "clean-up merge buffer");
  /* Rows move right by shift[v]; walking down never overwrites a row not yet moved. */
  for (int64_t v = n - 1; v >= 0; v--) {
    int64_t len = ptr[v + 1] - ptr[v];
    memmove(idx + ptr[v] + shift[v], idx + ptr[v], (size_t)len * sizeof *idx);
    fill[v] = ptr[v + 1] + shift[v];
  }
  /* Searches read only the original part of each row; appends go past it. */
  for (int64_t u = 0; u < n; u++) {
    const int64_t *row_u = idx + ptr[u] + shift[u];
    for (int64_t k = 0; k < ptr[u + 1] - ptr[u]; k++) {
      int64_t v = row_u[k];
      if (!row_has(idx + ptr[v] + shift[v], ptr[v + 1] - ptr[v], u)) idx[fill[v]++] = u;
    }
  }
  for (int64_t v = 0; v < n; v++) {
    int64_t len1 = ptr[v + 1] - ptr[v], len2 = shift[v + 1] - shift[v];
    if (len2 > 0 && len1 > 0) merge_tail(idx + ptr[v] + shift[v], len1, len2, tmp);
  }
  for (int64_t v = 1; v <= n; v++) ptr[v] += shift[v];
  g->m = m1 + missing;
done:
  free(tmp);
  free(fill);
  free(shift);
  return st;
}

halo_status halo_partition_clean(halo_graph *g, halo_clean_report *report) {
  halo_status st = HALO_OK;
  halo_clean_report rep = {.input_edges = g ? g->m : 0};
  if (!g || g->n < 0 || g->m < 0 || !g->indptr || (g->m > 0 && !g->indices))
    HALO_FAIL(HALO_ERR_ARG, "halo_partition_clean: not a valid graph");
  if (g->indptr[0] != 0 || g->indptr[g->n] != g->m)
    HALO_FAIL(HALO_ERR_RANGE, "%s: indptr runs from %lld to %lld, expected 0 to %lld edges",
              g->source, (long long)g->indptr[0], (long long)g->indptr[g->n], (long long)g->m);

  HALO_TRY(make_simple(g, &rep));
  int symmetric = 0;
  HALO_TRY(check_symmetric(g, &symmetric));
  if (!symmetric) {
    HALO_TRY(add_missing_reverses(g, &rep));
  } else if (g->m > 0 && g->m < rep.input_edges) {
    /* Give back what step 1 removed. */
    int64_t *small = realloc(g->indices, (size_t)g->m * sizeof *small);
    if (small) g->indices = small;
  }
  for (int64_t v = 0; v < g->n; v++) rep.isolated += g->indptr[v + 1] == g->indptr[v];
done:
  if (report) *report = rep;
  return st;
}
