/* Locality blocks of a part's rows by greedy graph growing
 * (halo__partition_blocks).
 *
 * A block starts from a seed row and grows one row at a time, always taking
 * the frontier row with the most edges into the block (ties: the row raised
 * last, which keeps growth local).  At block_rows rows it stops and keeps
 * the prefix, of at least half that size, with the fewest cut edges per
 * row: a community of 977 rows becomes one block of 977 instead of 1000
 * rows that steal 23 from a neighbouring community and leave it broken.  The
 * rows given back seed the next block, or else the closed block's best
 * frontier row, so consecutive blocks tend to be neighbours too; when a
 * frontier runs dry (a component used up, isolated rows) growth goes on
 * from the lowest free row.
 *
 * Cost: the frontier is a bucket queue keyed by edges into the block.  A key
 * only rises while its block grows, so each raise appends one entry to its
 * new bucket and leaves the old one stale, to be skipped when popped; every
 * edge is looked at O(1) times per visit of its row, and a row is visited
 * again only when given back, at most once per row placed.  O(owned rows +
 * their inner edges) in all, sequential: the same part gives the same blocks
 * on any machine and thread count.  Scratch: the induced subgraph (int64
 * offsets, int32 columns) and one block's queue entries.
 */
#include <stdlib.h>

#include "partition-impl.h"

/* block[v] >= 0: the block of row v.  block[v] < 0: v is free, with
 * free_key(block[v]) edges into the growing block. */
static inline int32_t free_key(int32_t state) { return -1 - state; }
static inline int32_t free_state(int32_t key) { return -1 - key; }

/* Bucket k is a stack of entries threaded through `next`; an entry for row v
 * is live while v is free with key k. */
typedef struct entry {
  int64_t next; /* the entry below in the same bucket, or -1 */
  int32_t row;
} entry;

typedef struct frontier {
  int64_t *head;  /* size cap+1: top entry of bucket k, or -1 */
  entry *entries; /* size capacity: the growing block's entries, in push order */
  int64_t used, capacity;
  int32_t cap;  /* highest key kept: higher ones only come once the block is full */
  int32_t top;  /* no bucket above top holds a live entry */
  int32_t high; /* highest bucket pushed to since the last clear */
} frontier;

/* One more edge from free row v into the block. */
static halo_status frontier_raise(frontier *f, int32_t *block, int32_t v) {
  halo_status st = HALO_OK;
  const int32_t key = free_key(block[v]) + 1;
  if (key > f->cap) goto done;
  if (f->used == f->capacity) {
    int64_t grown = 2 * f->capacity;
    entry *more = realloc(f->entries, (size_t)grown * sizeof *more);
    if (!more)
      HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating row block frontier (%zu bytes)",
                (size_t)grown * sizeof *more);
    f->entries = more;
    f->capacity = grown;
  }
  block[v] = free_state(key);
  f->entries[f->used] = (entry){.next = f->head[key], .row = v};
  f->head[key] = f->used++;
  if (key > f->top) f->top = key;
  if (key > f->high) f->high = key;
done:
  return st;
}

/* The free row with the most edges into the block, or -1 when none has any;
 * it stays free until the caller places it. */
static int32_t frontier_pop(frontier *f, const int32_t *block) {
  while (f->top > 0) {
    const int64_t e = f->head[f->top];
    if (e < 0) {
      f->top--;
      continue;
    }
    f->head[f->top] = f->entries[e].next;
    const int32_t v = f->entries[e].row;
    if (block[v] == free_state(f->top)) return v;
  }
  return -1;
}

/* Empties the frontier for the next block: keys back to 0. */
static void frontier_clear(frontier *f, int32_t *block) {
  for (int64_t e = 0; e < f->used; e++)
    if (block[f->entries[e].row] < 0) block[f->entries[e].row] = free_state(0);
  for (int32_t k = 1; k <= f->high; k++) f->head[k] = -1;
  f->used = 0;
  f->top = f->high = 0;
}

/* The subgraph induced by owned[0..n_owned) in their numbering, self-loops
 * dropped, in one pass over the rows' edges: the columns array is sized by
 * the rows' degrees, an upper bound (the map lookups are the cost here). */
static halo_status induced_subgraph(const halo_graph *g, const int64_t *owned, int64_t n_owned,
                                    const int32_t *local, int64_t **xadj, int32_t **adj) {
  halo_status st = HALO_OK;
  int64_t edges = 0;
  for (int64_t i = 0; i < n_owned; i++) edges += g->indptr[owned[i] + 1] - g->indptr[owned[i]];
  HALO_ALLOC(*xadj, n_owned + 1, "row block subgraph offsets");
  HALO_ALLOC(*adj, edges, "row block subgraph edges");
  int64_t *offset = *xadj, at = 0;
  int32_t *column = *adj;
  for (int64_t i = 0; i < n_owned; i++) {
    for (int64_t k = g->indptr[owned[i]]; k < g->indptr[owned[i] + 1]; k++) {
      const int32_t v = local[g->indices[k]];
      if (v >= 0 && v != i) column[at++] = v;
    }
    offset[i + 1] = at;
  }
done:
  return st;
}

halo_status halo__partition_blocks(const halo_graph *g, const int64_t *owned, int64_t n_owned,
                                   const int32_t *local, int64_t block_rows, int32_t *block) {
  halo_status st = HALO_OK;
  frontier f = {0};
  int64_t *xadj = NULL;
  int32_t *adj = NULL, *grown = NULL, *spare = NULL;
  if (block_rows < 1)
    HALO_FAIL(HALO_ERR_ARG, "row blocks: %lld rows per block; need at least 1",
              (long long)block_rows);
  if (n_owned > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "row blocks: a part of %lld rows; local rows are int32",
              (long long)n_owned);
  for (int64_t i = 0; i < n_owned; i++) block[i] = 0;
  if (n_owned <= block_rows) goto done;

  HALO_TRY(induced_subgraph(g, owned, n_owned, local, &xadj, &adj));
  /* A key counts edges into at most block_rows - 1 other rows. */
  f.cap = (int32_t)(block_rows - 1);
  f.capacity = 1 + (xadj[n_owned] < 4 * block_rows ? xadj[n_owned] : 4 * block_rows);
  HALO_ALLOC(f.head, (int64_t)f.cap + 1, "row block buckets");
  HALO_ALLOC(f.entries, f.capacity, "row block frontier");
  HALO_ALLOC(grown, block_rows, "row block members");
  /* A full block keeps at least min_rows rows and gives back at most
   * block_rows - min_rows <= min_rows, so at most n_owned rows are ever given
   * back. */
  const int64_t min_rows = (block_rows + 1) / 2;
  HALO_ALLOC(spare, n_owned, "row block spare rows");
  for (int32_t k = 0; k <= f.cap; k++) f.head[k] = -1;
  for (int64_t i = 0; i < n_owned; i++) block[i] = free_state(0);

  int32_t current = 0, seed = -1;
  int64_t size = 0, placed = 0, spares = 0, lowest_free = 0;
  int64_t cut = 0, best_size = 0; /* cut: edges from the block to the rest of the part */
  double best_ratio = 0.0;
  while (placed < n_owned) {
    int32_t u = seed >= 0 ? seed : frontier_pop(&f, block);
    seed = -1;
    while (u < 0 && spares > 0)
      if (block[spare[--spares]] < 0) u = spare[spares];
    if (u < 0) { /* every free row below lowest_free is on the spare stack */
      while (block[lowest_free] >= 0) lowest_free++;
      u = (int32_t)lowest_free;
    }
    block[u] = current;
    grown[size++] = u;
    placed++;
    for (int64_t k = xadj[u]; k < xadj[u + 1]; k++) {
      const int32_t v = adj[k];
      if (block[v] == current) {
        cut--;
      } else {
        cut++;
        if (block[v] < 0) HALO_TRY(frontier_raise(&f, block, v));
      }
    }
    /* The larger block on a tie.  Equal fractions give equal doubles, and
     * cut * size could overflow int64 on a graph of 2^40 edges. */
    const double ratio = (double)cut / (double)size;
    if (size >= min_rows && (best_size == 0 || ratio <= best_ratio)) {
      best_ratio = ratio;
      best_size = size;
    }
    if (size < block_rows) continue;

    /* Full: keep the best prefix and give the rest back.  The first row
     * given back seeds the next block, else the best row left on this
     * block's frontier. */
    seed = frontier_pop(&f, block);
    frontier_clear(&f, block);
    if (best_size < size) {
      for (int64_t i = size - 1; i >= best_size; i--) {
        block[grown[i]] = free_state(0);
        spare[spares++] = grown[i];
      }
      placed -= size - best_size;
      seed = -1;
    }
    current++;
    size = cut = best_size = 0;
  }
done:
  free(spare);
  free(grown);
  free(f.entries);
  free(f.head);
  free(adj);
  free(xadj);
  return st;
}
