/* k-way Fiduccia–Mattheyses refinement of a partition
 * (halo__partition_refine).
 *
 * A pass moves boundary vertices one at a time, always the unlocked one
 * whose move to another part gains the most cut edges (a part it has a
 * neighbour in, with room for its load), at a loss too, each vertex at most
 * once; after the pass the moves past the lowest cut seen are undone.  Moves
 * at a loss let a pass cross a plateau that greedy moves cannot: on a ring
 * lattice cut into runs, shrinking a run costs nothing until its last
 * vertices, which then gain.  Ties go to the entry pushed last, so a pass
 * walks along one front instead of nibbling at all of them.  A pass stops
 * after `patience` moves without a new lowest cut, or once its cut climbs
 * too far above the lowest; passes repeat while one lowers the cut.
 *
 * The queue is a binary max-heap of (gain, push stamp) with lazy deletion:
 * a vertex's entries are stale once its version moves on, and it never
 * holds more than 2 entries a vertex.  O(moves · degree² · log) a pass (a
 * move re-scores its neighbours); sequential and deterministic (no random
 * choice; the order of the queue is total).
 */
#include <stdlib.h>

#include "partition-impl.h"

/* The most passes: each lowers the cut, and the last ones by little. */
#define REFINE_PASSES 16

/* A pass also stops once its cut is this far above its lowest: a 32nd of
 * the cut at the pass's start, at least 100 edges.  Where every move loses
 * (an SBM of 100,000 nodes at 8 parts) a pass otherwise spends its whole
 * patience climbing, 2.2 s instead of 0.4 s; a plateau walk (the ring
 * lattice) stays within it (the same 645 cut edges on the bench's
 * components graph, the same gain on rmat:scale=16). */
#define REFINE_CLIMB_SHARE 32
#define REFINE_CLIMB_MIN 100

typedef struct entry {
  int64_t gain;
  int64_t stamp;   /* push order: later first among equal gains */
  int64_t vertex;
  int64_t version; /* the vertex's version when pushed */
} entry;

/* The queue: entries of vertices that are locked or whose version moved on
 * are stale.  A vertex has at most one live entry, so when the array is
 * full at twice the vertices, dropping the stale ones halves it: the queue
 * never holds more than 2n entries (64 bytes a vertex). */
typedef struct heap {
  entry *items;
  int64_t size, capacity, stamps;
  int64_t n;               /* the vertices */
  const uint8_t *locked;   /* size n */
  const int64_t *version;  /* size n */
} heap;

/* The order is total (stamps are unique), so the entries pop in the same
 * order whatever the array's layout. */
static int above(const entry *a, const entry *b) {
  return a->gain > b->gain || (a->gain == b->gain && a->stamp > b->stamp);
}

/* Moves e down from items[at] to its place below. */
static void sift_down(heap *h, int64_t at, entry e) {
  for (;;) {
    int64_t child = 2 * at + 1;
    if (child >= h->size) break;
    if (child + 1 < h->size && above(&h->items[child + 1], &h->items[child])) child++;
    if (!above(&h->items[child], &e)) break;
    h->items[at] = h->items[child];
    at = child;
  }
  h->items[at] = e;
}

static int stale(const heap *h, const entry *e) {
  return h->locked[e->vertex] || e->version != h->version[e->vertex];
}

/* Drops the stale entries and restores the heap order. */
static void heap_compact(heap *h) {
  int64_t kept = 0;
  for (int64_t i = 0; i < h->size; i++)
    if (!stale(h, &h->items[i])) h->items[kept++] = h->items[i];
  h->size = kept;
  for (int64_t i = kept / 2 - 1; i >= 0; i--) sift_down(h, i, h->items[i]);
}

static halo_status heap_push(heap *h, int64_t gain, int64_t vertex, int64_t version) {
  halo_status st = HALO_OK;
  if (h->size == h->capacity && h->capacity >= 2 * h->n) heap_compact(h);
  if (h->size == h->capacity) {
    const int64_t grown = h->capacity > 0 ? 2 * h->capacity : 1024;
    entry *more = realloc(h->items, (size_t)grown * sizeof *more);
    if (!more)
      HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating the refinement queue (%zu bytes)",
                (size_t)grown * sizeof *more);
    h->items = more;
    h->capacity = grown;
  }
  int64_t at = h->size++;
  const entry e = {.gain = gain, .stamp = h->stamps++, .vertex = vertex, .version = version};
  while (at > 0 && above(&e, &h->items[(at - 1) / 2])) {
    h->items[at] = h->items[(at - 1) / 2];
    at = (at - 1) / 2;
  }
  h->items[at] = e;
done:
  return st;
}

static entry heap_pop(heap *h) {
  const entry top = h->items[0];
  h->size--;
  if (h->size > 0) sift_down(h, 0, h->items[h->size]);
  return top;
}

/* The graph and partition a pass works on, with scratch. */
typedef struct state {
  int64_t n;
  const int64_t *offsets, *indices, *vload;
  int32_t parts;
  const int64_t *cap;
  int64_t *where, *load;
  int64_t *conn;    /* size parts: edges from the vertex at hand into each part, else 0 */
  int32_t *touched; /* size parts: the parts conn counts */
} state;

static int64_t weight(const state *s, int64_t v) { return s->vload ? s->vload[v] : 1; }

/* The best move of v: *to gets the part (-1 when v has no neighbour in a
 * part with room for it), the return value its gain in cut edges.  Ties:
 * the lighter part, then the lower. */
static int64_t best_move(state *s, int64_t v, int32_t *to) {
  int32_t count = 0;
  for (int64_t e = s->offsets[v]; e < s->offsets[v + 1]; e++) {
    const int32_t q = (int32_t)s->where[s->indices[e]];
    if (s->conn[q]++ == 0) s->touched[count++] = q;
  }
  const int32_t own = (int32_t)s->where[v];
  const int64_t w = weight(s, v);
  int64_t gain = 0;
  *to = -1;
  for (int32_t i = 0; i < count; i++) {
    const int32_t q = s->touched[i];
    if (q == own || s->load[q] + w > s->cap[q]) continue;
    const int64_t g = s->conn[q] - s->conn[own];
    if (*to < 0 || g > gain || (g == gain && (s->load[q] < s->load[*to] ||
                                              (s->load[q] == s->load[*to] && q < *to)))) {
      gain = g;
      *to = q;
    }
  }
  for (int32_t i = 0; i < count; i++) s->conn[s->touched[i]] = 0;
  return gain;
}

/* One pass; *gained gets the cut edges it removed (0: the partition is as
 * it was).  locked, version (size n) and log (size n: the moved vertices)
 * are scratch; from (size n) keeps each moved vertex's old part. */
static halo_status pass(state *s, heap *h, uint8_t *locked, int64_t *version, int64_t *log,
                        int64_t *from, int64_t patience, int64_t climb, int64_t *gained) {
  halo_status st = HALO_OK;
  int64_t moves = 0, best_moves = 0, cut = 0, best_cut = 0, since = 0;
  h->size = 0;
  for (int64_t v = 0; v < s->n; v++) {
    int32_t to;
    locked[v] = 0;
    const int64_t g = best_move(s, v, &to);
    if (to >= 0) HALO_TRY(heap_push(h, g, v, version[v]));
  }
  while (h->size > 0 && since <= patience && cut - best_cut <= climb) {
    const entry e = heap_pop(h);
    const int64_t v = e.vertex;
    if (stale(h, &e)) continue;
    int32_t to;
    const int64_t g = best_move(s, v, &to);
    if (to < 0) continue;
    if (g != e.gain) { /* a part filled up since: queue it at its gain now */
      HALO_TRY(heap_push(h, g, v, ++version[v]));
      continue;
    }
    const int64_t w = weight(s, v);
    from[moves] = s->where[v];
    log[moves++] = v;
    s->load[s->where[v]] -= w;
    s->load[to] += w;
    s->where[v] = to;
    locked[v] = 1;
    cut -= g;
    if (cut < best_cut) {
      best_cut = cut;
      best_moves = moves;
      since = 0;
    } else {
      since++;
    }
    for (int64_t k = s->offsets[v]; k < s->offsets[v + 1]; k++) {
      const int64_t u = s->indices[k];
      if (locked[u]) continue;
      int32_t u_to;
      const int64_t u_gain = best_move(s, u, &u_to);
      version[u]++;
      if (u_to >= 0) HALO_TRY(heap_push(h, u_gain, u, version[u]));
    }
  }
  while (moves > best_moves) {
    const int64_t v = log[--moves];
    const int64_t w = weight(s, v);
    s->load[s->where[v]] -= w;
    s->load[from[moves]] += w;
    s->where[v] = from[moves];
  }
  *gained = -best_cut;
done:
  return st;
}

halo_status halo__partition_refine(int64_t n, const int64_t *offsets, const int64_t *indices,
                                   const int64_t *vload, int32_t parts, const int64_t *cap,
                                   int64_t patience, int64_t *where, int64_t *gained) {
  halo_status st = HALO_OK;
  heap h = {.n = n};
  uint8_t *locked = NULL;
  int64_t *version = NULL, *log = NULL, *from = NULL, *load = NULL, *conn = NULL;
  int32_t *touched = NULL;
  *gained = 0;
  if (n < 2 || parts < 2) goto done;
  HALO_ALLOC(locked, n, "refinement marks");
  HALO_ALLOC(version, n, "refinement versions");
  HALO_ALLOC(log, n, "refinement moves");
  HALO_ALLOC(from, n, "refinement moves");
  HALO_ALLOC(load, parts, "refinement part loads");
  HALO_ALLOC(conn, parts, "refinement part edges");
  HALO_ALLOC(touched, parts, "refinement parts");
  h.locked = locked;
  h.version = version;
  for (int64_t v = 0; v < n; v++) load[where[v]] += vload ? vload[v] : 1;
  state s = {.n = n, .offsets = offsets, .indices = indices, .vload = vload, .parts = parts,
             .cap = cap, .where = where, .load = load, .conn = conn, .touched = touched};
  int64_t cut = 0;
  for (int64_t v = 0; v < n; v++)
    for (int64_t e = offsets[v]; e < offsets[v + 1]; e++) cut += where[v] != where[indices[e]];
  cut /= 2;
  for (int round = 0; round < REFINE_PASSES; round++) {
    int64_t g = 0;
    const int64_t climb = cut / REFINE_CLIMB_SHARE > REFINE_CLIMB_MIN ? cut / REFINE_CLIMB_SHARE
                                                                      : REFINE_CLIMB_MIN;
    HALO_TRY(pass(&s, &h, locked, version, log, from, patience, climb, &g));
    cut -= g;
    *gained += g;
    if (g == 0) break;
  }
done:
  free(touched);
  free(conn);
  free(load);
  free(from);
  free(log);
  free(version);
  free(locked);
  free(h.items);
  return st;
}
