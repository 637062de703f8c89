/* Partition statistics in one pass over the edges, part by part:
 *   halo[p]  = |{v : part[v] ≠ p, v adjacent to some u with part[u] = p}|
 *   send[p]  = Σ_{u in p} |{part[v] ≠ p : v adjacent to u}|
 *   edge_cut = |{(u,v) : part[u] ≠ part[v]}| / 2  (each undirected edge is stored twice)
 * On a symmetric graph Σ send = Σ halo = H, the rows one exchange moves. */
#include <stdlib.h>

#include "halo-partition.h"
#include "partition-order.h"

halo_status halo_partition_stats_create(const halo_graph *g, const int32_t *part, int32_t parts,
                                        halo_partition_stats **out) {
  halo_status st = HALO_OK;
  halo_partition_stats *s = NULL;
  int64_t *order = NULL, *start = NULL, *send_mark = NULL;
  int32_t *node_mark = NULL, *peer_mark = NULL;
  const int64_t n = g->n;
  *out = NULL;
  if (parts < 1 || parts > n)
    HALO_FAIL(HALO_ERR_ARG, "statistics: %d parts for %lld nodes", parts, (long long)n);

  HALO_ALLOC(s, 1, "partition statistics");
  s->nodes = n;
  s->edges = g->m;
  s->parts = parts;
  HALO_ALLOC(s->owned, parts, "statistics");
  HALO_ALLOC(s->halo, parts, "statistics");
  HALO_ALLOC(s->nnz, parts, "statistics");
  HALO_ALLOC(s->send, parts, "statistics");
  HALO_ALLOC(s->peers, parts, "statistics");
  HALO_TRY(halo__partition_order(part, n, parts, &order, &start));
  HALO_ALLOC(node_mark, n, "statistics node marks");
  HALO_ALLOC(peer_mark, parts, "statistics part marks");
  HALO_ALLOC(send_mark, parts, "statistics part marks");
  for (int64_t v = 0; v < n; v++) node_mark[v] = -1;
  for (int32_t q = 0; q < parts; q++) {
    peer_mark[q] = -1;
    send_mark[q] = -1;
  }

  int64_t cut = 0;
  for (int32_t p = 0; p < parts; p++) {
    s->owned[p] = start[p + 1] - start[p];
    for (int64_t i = start[p]; i < start[p + 1]; i++) {
      int64_t u = order[i];
      s->nnz[p] += g->indptr[u + 1] - g->indptr[u];
      for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
        int64_t v = g->indices[k];
        int32_t q = part[v];
        if (q == p) continue;
        cut++;
        if (node_mark[v] != p) {
          node_mark[v] = p;
          s->halo[p]++;
        }
        if (peer_mark[q] != p) {
          peer_mark[q] = p;
          s->peers[p]++;
        }
        if (send_mark[q] != u) {
          send_mark[q] = u;
          s->send[p]++;
        }
      }
    }
  }
  int64_t max_owned = 0;
  for (int32_t p = 0; p < parts; p++) {
    s->comm_volume += s->halo[p];
    if (s->owned[p] > max_owned) max_owned = s->owned[p];
  }
  s->edge_cut = cut / 2;
  s->replication_factor = (double)(n + s->comm_volume) / (double)n;
  s->balance = (double)max_owned / ((double)n / parts);
  *out = s;
  s = NULL;
done:
  free(send_mark);
  free(peer_mark);
  free(node_mark);
  free(start);
  free(order);
  halo_partition_stats_destroy(&s);
  return st;
}

void halo_partition_stats_destroy(halo_partition_stats **s) {
  if (!s || !*s) return;
  free((*s)->owned);
  free((*s)->halo);
  free((*s)->nnz);
  free((*s)->send);
  free((*s)->peers);
  free(*s);
  *s = NULL;
}
