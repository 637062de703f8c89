/* König's minimum vertex cover through Hopcroft–Karp (halo-cover.h).
 *
 * Each phase layers the left vertices by a breadth-first search from the
 * free ones, then looks for vertex-disjoint shortest augmenting paths by a
 * depth-first search along the layers.  The search keeps an explicit stack
 * (a cut graph may hold millions of vertices: no recursion), and each left
 * vertex's next untried edge, so a phase costs O(E).  O(E √V) in all. */
#include "halo-cover.h"

#include <stdlib.h>

enum { UNSEEN = -1 };

typedef struct matching {
  int64_t *left, *right; /* the partner of each vertex, or -1 */
  int64_t *dist;         /* the BFS layer of each left vertex, or INT64_MAX */
  int64_t *next;         /* each left vertex's next untried edge in this phase */
  int64_t *stack, *queue;
} matching;

/* The BFS of a phase: 1 when some free right vertex is reachable. */
static int layer(const halo_bipartite *g, matching *m) {
  int64_t head = 0, tail = 0;
  int found = 0;
  for (int64_t i = 0; i < g->nl; i++) {
    m->dist[i] = m->left[i] < 0 ? 0 : INT64_MAX;
    if (m->left[i] < 0) m->queue[tail++] = i;
  }
  while (head < tail) {
    const int64_t x = m->queue[head++];
    for (int64_t k = g->ptr[x]; k < g->ptr[x + 1]; k++) {
      const int64_t w = m->right[g->adj[k]];
      if (w < 0) {
        found = 1;
      } else if (m->dist[w] == INT64_MAX) {
        m->dist[w] = m->dist[x] + 1;
        m->queue[tail++] = w;
      }
    }
  }
  return found;
}

/* One augmenting path from free left vertex `root` along the layers, taken
 * when found: 1 if so. */
static int augment(const halo_bipartite *g, matching *m, int64_t root) {
  int64_t top = 0;
  m->stack[top++] = root;
  while (top > 0) {
    const int64_t x = m->stack[top - 1];
    if (m->next[x] == g->ptr[x + 1]) { /* a dead end for this phase */
      m->dist[x] = INT64_MAX;
      if (--top > 0) m->next[m->stack[top - 1]]++;
      continue;
    }
    const int64_t v = g->adj[m->next[x]], w = m->right[v];
    if (w < 0) { /* free: flip the path; each stack entry's edge is at its next */
      for (int64_t k = top - 1; k >= 0; k--) {
        const int64_t y = m->stack[k], u = g->adj[m->next[y]];
        m->left[y] = u;
        m->right[u] = y;
      }
      return 1;
    }
    if (m->dist[w] != INT64_MAX && m->dist[w] == m->dist[x] + 1)
      m->stack[top++] = w;
    else
      m->next[x]++;
  }
  return 0;
}

halo_status halo_cover_bipartite(const halo_bipartite *g, uint8_t *in_left, uint8_t *in_right,
                                 int64_t *size) {
  halo_status st = HALO_OK;
  matching m = {0};
  const int64_t nl = g->nl > 0 ? g->nl : 1, nr = g->nr > 0 ? g->nr : 1;
  *size = 0;
  for (int64_t k = 0; k < g->ptr[g->nl]; k++)
    if (g->adj[k] < 0 || g->adj[k] >= g->nr)
      HALO_FAIL(HALO_ERR_ARG, "bipartite cover: edge %lld reaches right vertex %lld of %lld",
                (long long)k, (long long)g->adj[k], (long long)g->nr);
  HALO_ALLOC(m.left, nl, "the cover's matching");
  HALO_ALLOC(m.right, nr, "the cover's matching");
  HALO_ALLOC(m.dist, nl, "the cover's layers");
  HALO_ALLOC(m.next, nl, "the cover's search");
  HALO_ALLOC(m.stack, nl, "the cover's search");
  HALO_ALLOC(m.queue, nl, "the cover's search");
  for (int64_t i = 0; i < g->nl; i++) m.left[i] = UNSEEN;
  for (int64_t j = 0; j < g->nr; j++) m.right[j] = UNSEEN;

  while (layer(g, &m)) {
    for (int64_t i = 0; i < g->nl; i++) m.next[i] = g->ptr[i];
    for (int64_t i = 0; i < g->nl; i++)
      if (m.left[i] < 0) *size += augment(g, &m, i);
  }

  /* König: Z from the free left vertices, out along any edge, back along
   * the matching.  Every right vertex reached is matched (else the path
   * would augment). */
  int64_t head = 0, tail = 0;
  for (int64_t i = 0; i < g->nl; i++) {
    in_left[i] = 1; /* L \ Z: cleared when reached */
    if (m.left[i] < 0) {
      in_left[i] = 0;
      m.queue[tail++] = i;
    }
  }
  for (int64_t j = 0; j < g->nr; j++) in_right[j] = 0; /* R ∩ Z: set when reached */
  while (head < tail) {
    const int64_t x = m.queue[head++];
    for (int64_t k = g->ptr[x]; k < g->ptr[x + 1]; k++) {
      const int64_t v = g->adj[k];
      if (in_right[v]) continue;
      in_right[v] = 1;
      const int64_t w = m.right[v];
      if (w >= 0 && in_left[w]) {
        in_left[w] = 0;
        m.queue[tail++] = w;
      }
    }
  }
done:
  free(m.left);
  free(m.right);
  free(m.dist);
  free(m.next);
  free(m.stack);
  free(m.queue);
  return st;
}
