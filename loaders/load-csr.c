/* From an unordered stream of (src, dst) pairs to a CSR sorted by row, in
 * place.
 *
 * While all ids fit in 32 bits (the node count is known up front, or the ids
 * have been renumbered) an edge is one 64-bit word, src << 32 | dst, the same
 * size as its final entry in g->indices.  The words are sorted by source in
 * place with an MSD radix sort whose only extra memory is a few bucket tables
 * on the stack, and each word is then replaced by its destination, so the
 * buffer becomes g->indices: loading peaks at the final CSR's size.  An edge
 * list whose raw ids go beyond 32 bits widens its buffer to two words per
 * edge and narrows it again once the ids are renumbered.  A buffer grows by realloc, which
 * glibc serves with mremap for blocks this large, so growth never holds two
 * copies either.  Graphs of more than 2^32 nodes are refused (METIS's idx_t
 * is 32-bit as well); the generators, which build their CSR directly, are not
 * limited.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-memory.h"
#include "load-impl.h"

#define NARROW_MAX ((int64_t)1 << 32)

static int64_t words_per_edge(const load_edges *e) { return e->narrow ? 1 : 2; }

halo_status load_edges_reserve(load_edges *e, int64_t cap) {
  halo_status st = HALO_OK;
  if (cap <= e->cap) return HALO_OK;
  const size_t edge_bytes = (size_t)words_per_edge(e) * sizeof(int64_t);
  /* Messages name the file being read, when there is one. */
  const char *path = e->path ? e->path : "", *colon = e->path ? ": " : "";
  if ((uint64_t)cap > SIZE_MAX / edge_bytes)
    HALO_FAIL(HALO_ERR_NOMEM, "%s%sedge buffer of %lld edges exceeds the address space", path,
              colon, (long long)cap);
  int64_t *grown = realloc(e->pair, (size_t)cap * edge_bytes);
  if (!grown)
    HALO_FAIL(HALO_ERR_NOMEM, "%s%sout of memory for %lld edges (%zu bytes)", path, colon,
              (long long)cap, (size_t)cap * edge_bytes);
  e->pair = grown;
  e->cap = cap;
done:
  return st;
}

halo_status load_edges_grow(load_edges *e) {
  return load_edges_reserve(e, e->cap < 4096 ? 4096 : e->cap + e->cap / 2);
}

halo_status load_edges_widen(load_edges *e) {
  halo_status st = HALO_OK;
  int64_t *grown = realloc(e->pair, (size_t)(e->cap > 0 ? e->cap : 1) * 2 * sizeof(int64_t));
  if (!grown)
    HALO_FAIL(HALO_ERR_NOMEM, "%s%sout of memory widening %lld edges to 64-bit ids",
              e->path ? e->path : "", e->path ? ": " : "", (long long)e->count);
  e->pair = grown;
  /* From the back: edge k moves from word k to words 2k, 2k+1, above every
   * narrow word still to be read. */
  for (int64_t k = e->count - 1; k >= 0; k--) {
    uint64_t word = (uint64_t)e->pair[k];
    e->pair[2 * k + 1] = (int64_t)(word & 0xffffffffu);
    e->pair[2 * k] = (int64_t)(word >> 32);
  }
  e->narrow = 0;
done:
  return st;
}

void load_edges_free(load_edges *e) {
  free(e->pair);
  *e = (load_edges){.path = e->path};
}

halo_status load_admit(double need, const char *fmt, ...) {
  const int64_t avail = halo_memory_available();
  if (avail < 0 || need <= (double)avail) return HALO_OK;
  char subject[512], b0[32], b1[32];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(subject, sizeof subject, fmt, ap);
  va_end(ap);
  halo_log_error("%s need about %s, but %s of memory is available", subject,
                 halo_memory_str(need > 9e18 ? INT64_MAX : (int64_t)need, b0, sizeof b0),
                 halo_memory_str(avail, b1, sizeof b1));
  return HALO_ERR_NOMEM;
}

halo_status load_check_memory(const char *path, int64_t line, int64_t n, int64_t edges) {
  /* In double: a size line may declare up to 2^63 - 1 of each. */
  const double need = 8.0 * ((double)n + 1.0) + 8.0 * (double)edges;
  char where[32] = "";
  if (line > 0) snprintf(where, sizeof where, "%lld:", (long long)line);
  return load_admit(need, "%s:%s %lld nodes and up to %lld edges", path, where, (long long)n,
                    (long long)edges);
}

halo_status load_graph_create(const char *path, int64_t n, halo_graph **out) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  int64_t *indptr = NULL;
  char b0[32];
  *out = NULL;
  if (n < 0 || (uint64_t)n >= SIZE_MAX / sizeof *indptr)
    HALO_FAIL(HALO_ERR_NOMEM, "%s: %lld nodes exceed the address space", path, (long long)n);
  /* Allocated here rather than by halo_graph_create, whose message could
   * not say which file asked for the memory. */
  indptr = calloc((size_t)n + 1, sizeof *indptr);
  if (!indptr)
    HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory for the row offsets of %lld nodes (%s)", path,
              (long long)n,
              halo_memory_str((int64_t)(((uint64_t)n + 1) * sizeof *indptr), b0, sizeof b0));
  HALO_TRY(halo_graph_create(0, 0, &g));
  free(g->indptr);
  g->indptr = indptr;
  g->n = n;
  indptr = NULL;
  *out = g;
  g = NULL;
done:
  free(indptr);
  halo_graph_destroy(&g);
  return st;
}

/* Sorts a row of column ids: insertion sort for short rows, else quicksort
 * with a median-of-three pivot and a three-way partition (hub rows of R-MAT
 * graphs repeat ids a lot), recursing into the smaller side only. */
static void sort_i64(int64_t *a, int64_t len) {
  while (len > 24) {
    int64_t x = a[0], y = a[len / 2], z = a[len - 1];
    int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    /* [0, lt) < pivot, [lt, i) == pivot, (gt, len) > pivot. */
    int64_t lt = 0, i = 0, gt = len - 1;
    while (i <= gt) {
      int64_t v = a[i];
      if (v < pivot) {
        a[i++] = a[lt];
        a[lt++] = v;
      } else if (v > pivot) {
        a[i] = a[gt];
        a[gt--] = v;
      } else {
        i++;
      }
    }
    int64_t right = len - gt - 1;
    if (lt < right) {
      sort_i64(a, lt);
      a += gt + 1;
      len = right;
    } else {
      sort_i64(a + gt + 1, right);
      len = lt;
    }
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

/* In-place MSD radix sort ("American flag sort") of edge words by source
 * id, RADIX_BITS at a time from bit `shift` of the id down.  Each pass moves
 * every edge once, with one write cursor per bucket, so the writes stay in a
 * few thousand cache lines instead of scattering over the whole buffer. */
enum { RADIX_BITS = 10, RADIX = 1 << RADIX_BITS, SMALL_BUCKET = 32 };

static inline uint64_t edge_src(int64_t edge) { return (uint64_t)edge >> 32; }

static inline int edge_digit(int64_t edge, int shift) {
  return (int)((edge_src(edge) >> shift) & (RADIX - 1));
}

static void sort_edges_small(int64_t *edge, int64_t count) {
  for (int64_t i = 1; i < count; i++) {
    int64_t held = edge[i], j = i;
    for (; j > 0 && edge_src(edge[j - 1]) > edge_src(held); j--) edge[j] = edge[j - 1];
    edge[j] = held;
  }
}

/* One pass: permutes the edges so that their digit at `shift` ascends;
 * start[b] is where bucket b begins (start[RADIX] = count). */
static void radix_partition(int64_t *edge, int64_t count, int shift, int64_t start[RADIX + 1]) {
  int64_t head[RADIX], tail[RADIX];
  memset(tail, 0, sizeof tail);
  for (int64_t k = 0; k < count; k++) tail[edge_digit(edge[k], shift)]++;
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
      int64_t held = edge[head[b]];
      int d = edge_digit(held, shift);
      while (d != b) {
        /* Drop the edge into its bucket and carry on with the one it displaces. */
        int64_t displaced = edge[head[d]];
        edge[head[d]++] = held;
        held = displaced;
        d = edge_digit(held, shift);
      }
      edge[head[b]++] = held;
    }
  }
}

static void sort_edges_radix(int64_t *edge, int64_t count, int shift) {
  if (count <= SMALL_BUCKET) {
    sort_edges_small(edge, count);
    return;
  }
  int64_t start[RADIX + 1];
  radix_partition(edge, count, shift, start);
  if (shift == 0) return;
  int next = shift > RADIX_BITS ? shift - RADIX_BITS : 0;
  for (int b = 0; b < RADIX; b++) sort_edges_radix(edge + start[b], start[b + 1] - start[b], next);
}

halo_status load_edges_to_csr(load_edges *e, halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, m = e->count;
  int64_t *indptr = g->indptr; /* size n+1, zeroed by halo_graph_create */

  if (n > NARROW_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "%lld nodes exceed the loaders' limit of 2^32 nodes", (long long)n);
  /* Two words per edge become one (slot k reads 2k and 2k+1 >= k). */
  if (!e->narrow) {
    for (int64_t k = 0; k < m; k++)
      e->pair[k] = (int64_t)((uint64_t)e->pair[2 * k] << 32 | (uint64_t)e->pair[2 * k + 1]);
    e->narrow = 1;
    int64_t *shrunk = m ? realloc(e->pair, (size_t)m * sizeof *shrunk) : NULL;
    if (shrunk) e->pair = shrunk;
  }
  int64_t *edge = e->pair;

  for (int64_t k = 0; k < m; k++) indptr[edge_src(edge[k]) + 1]++;
  for (int64_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];

  /* Sort by source, the top digit first; the top level runs sequentially,
   * its buckets in parallel.  Then each edge becomes its destination. */
  int bits = 1;
  while (bits < 63 && ((int64_t)1 << bits) < n) bits++;
  int shift = bits > RADIX_BITS ? bits - RADIX_BITS : 0;
  int64_t start[RADIX + 1] = {0};
  /* An empty edge list may have no buffer at all: NULL + 0 is undefined. */
  if (m > 0) radix_partition(edge, m, shift, start);
  if (m > 0 && shift > 0) {
    int next = shift > RADIX_BITS ? shift - RADIX_BITS : 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < RADIX; b++)
      sort_edges_radix(edge + start[b], start[b + 1] - start[b], next);
  }
  for (int64_t k = 0; k < m; k++) edge[k] = (int64_t)((uint64_t)edge[k] & 0xffffffffu);

  int64_t *indices = m > 0 ? edge : calloc(1, sizeof *indices);
  if (m == 0) free(edge);
  *e = (load_edges){0};
  free(g->indices);
  g->indices = indices;
  g->m = m;
  if (!indices) HALO_FAIL(HALO_ERR_NOMEM, "out of memory for an empty edge list");
  load_csr_sort_rows(g);
done:
  return st;
}

/* ---- weighted edges ---------------------------------------------------- */

halo_status load_weights_push(load_weights *w, float value) {
  halo_status st = HALO_OK;
  if (w->count == w->cap) {
    int64_t cap = w->cap < 4096 ? 4096 : w->cap + w->cap / 2;
    float *grown = realloc(w->w, (size_t)cap * sizeof *grown);
    if (!grown)
      HALO_FAIL(HALO_ERR_NOMEM, "%s%sout of memory for %lld edge weights", w->path ? w->path : "",
                w->path ? ": " : "", (long long)cap);
    w->w = grown;
    w->cap = cap;
  }
  w->w[w->count++] = value;
done:
  return st;
}

void load_weights_free(load_weights *w) {
  free(w->w);
  *w = (load_weights){.path = w->path};
}

halo_status load_check_weight(const char *where, float value, const char *token) {
  const char *what = NULL;
  if (isnan(value))
    what = "NaN";
  else if (isinf(value))
    what = "infinite";
  else if (value < 0.0f)
    what = "negative";
  if (!what) return HALO_OK;
  halo_log_error("%s: edge weight %s is %s (weights must be finite and >= 0)", where, token, what);
  return HALO_ERR_RANGE;
}

typedef struct weighted_entry {
  int64_t dst;
  float w;
} weighted_entry;

static int weighted_entry_cmp(const void *a, const void *b) {
  const weighted_entry *x = a, *y = b;
  if (x->dst != y->dst) return (x->dst > y->dst) - (x->dst < y->dst);
  return (x->w > y->w) - (x->w < y->w);
}

halo_status load_edges_to_csr_weighted(load_edges *e, load_weights *w, halo_graph *g) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, m = e->count;
  int64_t *indptr = g->indptr, *cursor = NULL, *indices = NULL;
  float *weight = NULL;
  weighted_entry *row = NULL;
  int64_t max_len = 0;

  if (w->count != m)
    HALO_FAIL(HALO_ERR_ARG, "load_edges_to_csr_weighted: %lld weights for %lld edges",
              (long long)w->count, (long long)m);
  if (n > NARROW_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "%lld nodes exceed the loaders' limit of 2^32 nodes", (long long)n);
  for (int64_t k = 0; k < m; k++) {
    int64_t id[2];
    load_edges_get(e, k, id);
    indptr[id[0] + 1]++;
  }
  for (int64_t v = 0; v < n; v++) {
    if (indptr[v + 1] > max_len) max_len = indptr[v + 1];
    indptr[v + 1] += indptr[v];
  }
  HALO_ALLOC(cursor, n + 1, "edge cursors");
  HALO_ALLOC(indices, m > 0 ? m : 1, "edge destinations");
  HALO_ALLOC(weight, m > 0 ? m : 1, "edge weights");
  HALO_ALLOC(row, max_len > 0 ? max_len : 1, "a row of weighted edges");
  memcpy(cursor, indptr, (size_t)(n + 1) * sizeof *cursor);
  for (int64_t k = 0; k < m; k++) {
    int64_t id[2];
    load_edges_get(e, k, id);
    int64_t at = cursor[id[0]]++;
    indices[at] = id[1];
    weight[at] = w->w[k];
  }
  for (int64_t v = 0; v < n; v++) {
    const int64_t b = indptr[v], len = indptr[v + 1] - b;
    for (int64_t k = 0; k < len; k++) row[k] = (weighted_entry){indices[b + k], weight[b + k]};
    qsort(row, (size_t)len, sizeof *row, weighted_entry_cmp);
    for (int64_t k = 0; k < len; k++) {
      indices[b + k] = row[k].dst;
      weight[b + k] = row[k].w;
    }
  }
  load_edges_free(e);
  load_weights_free(w);
  free(g->indices);
  free(g->edge_weight);
  g->indices = indices;
  g->edge_weight = weight;
  g->m = m;
  indices = NULL;
  weight = NULL;
done:
  free(row);
  free(cursor);
  free(indices);
  free(weight);
  return st;
}
