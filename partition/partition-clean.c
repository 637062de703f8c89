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
 *
 * A weighted graph (g->edge_weight) takes its own path, clean_weighted,
 * with a second copy of the edges: the rule is in docs/partition.md ("Edge
 * weights"):
 *   w'(u,v) = w'(v,u) = (s(u,v) + s(v,u)) / 2 when both directions occur,
 *                     = s(u,v)                when only (u,v) does,
 * s(u,v) the sum of the weights of the input's (u,v) entries (repeats add,
 * as torch_geometric.utils.coalesce(reduce='sum')), self-loops dropped.
 * The sums run in ascending weight, so the result does not depend on the
 * input's order.
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

typedef struct weighted_edge {
  int64_t v;
  float w;
  int8_t reversed; /* 1: the reverse of a (v, u) entry */
} weighted_edge;

static int weighted_edge_cmp(const void *a, const void *b) {
  const weighted_edge *x = a, *y = b;
  if (x->v != y->v) return (x->v > y->v) - (x->v < y->v);
  if (x->reversed != y->reversed) return x->reversed - y->reversed;
  return (x->w > y->w) - (x->w < y->w);
}

/* The weighted clean-up (the rule above): step 1 sums each row's repeats
 * and drops its self-loops; step 2 gives every (u, v) its reverse (v, u),
 * then each row's two entries of one pair, if there are two, become one of
 * their mean. */
static halo_status clean_weighted(halo_graph *g, halo_clean_report *rep) {
  halo_status st = HALO_OK;
  const int64_t n = g->n;
  int64_t *ptr = g->indptr, *idx = g->indices, *count = NULL, *out_idx = NULL;
  float *wt = g->edge_weight, *out_w = NULL;
  weighted_edge *all = NULL;
  int64_t max_len = 0;

  for (int64_t v = 0; v < n; v++) {
    if (ptr[v + 1] < ptr[v] || ptr[v + 1] > g->m)
      HALO_FAIL(HALO_ERR_RANGE, "%s: indptr[%lld] = %lld is out of order or beyond %lld edges",
                g->source, (long long)(v + 1), (long long)ptr[v + 1], (long long)g->m);
    if (ptr[v + 1] - ptr[v] > max_len) max_len = ptr[v + 1] - ptr[v];
    for (int64_t k = ptr[v]; k < ptr[v + 1]; k++)
      if (idx[k] < 0 || idx[k] >= n)
        HALO_FAIL(HALO_ERR_RANGE, "%s: edge (%lld, %lld) names a node outside [0, %lld)", g->source,
                  (long long)v, (long long)idx[k], (long long)n);
  }
  /* Step 1, in place: rows by (v, w), repeats summed, self-loops dropped. */
  HALO_ALLOC(all, max_len > 0 ? max_len : 1, "a weighted row");
  int64_t kept = 0, start = 0;
  for (int64_t u = 0; u < n; u++) {
    const int64_t end = ptr[u + 1], len = end - start;
    for (int64_t k = 0; k < len; k++)
      all[k] = (weighted_edge){.v = idx[start + k], .w = wt[start + k]};
    qsort(all, (size_t)len, sizeof *all, weighted_edge_cmp);
    ptr[u] = kept;
    double sum = 0.0; /* the repeats of idx[kept - 1], in double, rounded once */
    for (int64_t k = 0; k < len; k++) {
      if (all[k].v == u) {
        rep->self_loops++;
      } else if (kept > ptr[u] && idx[kept - 1] == all[k].v) {
        rep->duplicates++;
        sum += all[k].w;
        wt[kept - 1] = (float)sum;
      } else {
        idx[kept] = all[k].v;
        sum = all[k].w;
        wt[kept++] = all[k].w;
      }
    }
    start = end;
  }
  ptr[n] = kept;
  free(all);
  all = NULL;

  /* Step 2: each row gets its own entries and the reverses of the others'. */
  const int64_t m1 = kept;
  HALO_ALLOC(count, n + 1, "clean-up row counts");
  for (int64_t u = 0; u < n; u++) {
    count[u + 1] += ptr[u + 1] - ptr[u];
    for (int64_t k = ptr[u]; k < ptr[u + 1]; k++) count[idx[k] + 1]++;
  }
  for (int64_t v = 0; v < n; v++) count[v + 1] += count[v];
  HALO_ALLOC(all, 2 * m1 > 0 ? 2 * m1 : 1, "the weighted edges and their reverses");
  {
    int64_t *fill = NULL;
    HALO_ALLOC(fill, n, "clean-up fill positions");
    memcpy(fill, count, (size_t)n * sizeof *fill);
    for (int64_t u = 0; u < n; u++)
      for (int64_t k = ptr[u]; k < ptr[u + 1]; k++) {
        all[fill[u]++] = (weighted_edge){.v = idx[k], .w = wt[k]};
        all[fill[idx[k]]++] = (weighted_edge){.v = u, .w = wt[k], .reversed = 1};
      }
    free(fill);
  }
  HALO_ALLOC(out_idx, 2 * m1 > 0 ? 2 * m1 : 1, "the clean edges");
  HALO_ALLOC(out_w, 2 * m1 > 0 ? 2 * m1 : 1, "the clean edge weights");
  int64_t m2 = 0;
  for (int64_t u = 0; u < n; u++) {
    weighted_edge *row = all + count[u];
    const int64_t len = count[u + 1] - count[u];
    qsort(row, (size_t)len, sizeof *row, weighted_edge_cmp);
    ptr[u] = m2;
    for (int64_t k = 0; k < len; k++) {
      if (k + 1 < len && row[k + 1].v == row[k].v) { /* (u, v) and (v, u): their mean */
        out_idx[m2] = row[k].v;
        out_w[m2++] = (float)(((double)row[k].w + (double)row[k + 1].w) / 2.0);
        k++;
      } else {
        rep->reverse_added += row[k].reversed;
        out_idx[m2] = row[k].v;
        out_w[m2++] = row[k].w;
      }
    }
  }
  ptr[n] = m2;
  free(g->indices);
  free(g->edge_weight);
  g->indices = out_idx;
  g->edge_weight = out_w;
  g->m = m2;
  out_idx = NULL;
  out_w = NULL;
done:
  free(all);
  free(count);
  free(out_idx);
  free(out_w);
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

  if (g->edge_weight) {
    HALO_TRY(clean_weighted(g, &rep));
    goto isolated;
  }
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
isolated:
  for (int64_t v = 0; v < g->n; v++) rep.isolated += g->indptr[v + 1] == g->indptr[v];
done:
  if (report) *report = rep;
  return st;
}
