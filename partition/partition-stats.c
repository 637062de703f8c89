/* Partition statistics.
 *   halo[p]  = |{v : part[v] ≠ p, v adjacent to some u with part[u] = p}|
 *   send[p]  = Σ_{u in p} |{part[v] ≠ p : v adjacent to u}|
 *   edge_cut = |{(u,v) : part[u] ≠ part[v]}| / 2  (each undirected edge is stored twice)
 * On a symmetric graph Σ send = Σ halo = H, the rows one exchange moves.
 *
 * halo_partition_stats_create computes them from the graph in one pass;
 * halo_partition_write gets the same figures from the shards it writes
 * (halo_partition_stats_add_shard), which costs no extra pass over the edges. */
#include <stdlib.h>

#include "halo-partition.h"
#include "partition-impl.h"

halo_status halo_partition_stats_alloc(int64_t nodes, int64_t edges, int32_t parts,
                                       halo_partition_stats **out) {
  halo_status st = HALO_OK;
  halo_partition_stats *s = NULL;
  *out = NULL;
  HALO_ALLOC(s, 1, "partition statistics");
  *s = (halo_partition_stats){.nodes = nodes,
                              .edges = edges,
                              .parts = parts,
                              .cover_volume = -1,
                              .work_row_cost = HALO_PARTITION_WORK_ROW_COST};
  HALO_ALLOC(s->owned, parts, "statistics");
  HALO_ALLOC(s->halo, parts, "statistics");
  HALO_ALLOC(s->nnz, parts, "statistics");
  HALO_ALLOC(s->send, parts, "statistics");
  HALO_ALLOC(s->cost, parts, "statistics");
  HALO_ALLOC(s->peers, parts, "statistics");
  if (parts <= HALO_PARTITION_MATRIX_MAX_PARTS)
    HALO_ALLOC(s->between, (int64_t)parts * parts, "the matrix of halo rows between parts");
  *out = s;
  s = NULL;
done:
  halo_partition_stats_destroy(&s);
  return st;
}

void halo_partition_stats_add_shard(halo_partition_stats *s, const halo_shard *shard) {
  const int32_t p = shard->part;
  s->owned[p] = shard->n_owned;
  s->halo[p] = shard->n_halo;
  s->nnz[p] = shard->nnz;
  s->send[p] = shard->send_ptr[shard->parts];
  s->peers[p] = 0;
  for (int32_t q = 0; q < shard->parts; q++) {
    s->peers[p] += shard->recv_ptr[q + 1] > shard->recv_ptr[q];
    if (s->between)
      s->between[(int64_t)q * s->parts + p] = shard->recv_ptr[q + 1] - shard->recv_ptr[q];
  }
  /* Columns past the owned rows are halo rows: edges that leave the part. */
  int64_t cut = 0;
  for (int64_t k = 0; k < shard->nnz; k++) cut += shard->indices[k] >= shard->n_owned;
  s->edge_cut += cut;
}

/* max / mean of v[0..parts); 1 when they sum to 0. */
static double max_over_mean(const int64_t *v, int32_t parts) {
  int64_t max = 0, sum = 0;
  for (int32_t p = 0; p < parts; p++) {
    sum += v[p];
    if (v[p] > max) max = v[p];
  }
  return sum > 0 ? (double)max * parts / (double)sum : 1.0;
}

void halo_partition_stats_finish(halo_partition_stats *s) {
  int64_t max_owned = 0;
  s->comm_volume = 0;
  for (int32_t p = 0; p < s->parts; p++) {
    s->comm_volume += s->halo[p];
    if (s->owned[p] > max_owned) max_owned = s->owned[p];
    s->cost[p] = s->nnz[p] + s->work_row_cost * s->owned[p];
  }
  s->balance_nnz = max_over_mean(s->nnz, s->parts);
  s->balance_halo = max_over_mean(s->halo, s->parts);
  s->balance_send = max_over_mean(s->send, s->parts);
  s->balance_cost = max_over_mean(s->cost, s->parts);
  s->edge_cut /= 2;
  s->replication_factor = (double)(s->nodes + s->comm_volume) / (double)s->nodes;
  s->balance = (double)max_owned / ((double)s->nodes / s->parts);
}

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

  HALO_TRY(halo_partition_stats_alloc(n, g->m, parts, &s));
  HALO_TRY(halo__partition_order(part, n, parts, &order, &start));
  HALO_ALLOC(node_mark, n, "statistics node marks");
  HALO_ALLOC(peer_mark, parts, "statistics part marks");
  HALO_ALLOC(send_mark, parts, "statistics part marks");
  for (int64_t v = 0; v < n; v++) node_mark[v] = -1;
  for (int32_t q = 0; q < parts; q++) {
    peer_mark[q] = -1;
    send_mark[q] = -1;
  }

  for (int32_t p = 0; p < parts; p++) {
    s->owned[p] = start[p + 1] - start[p];
    for (int64_t i = start[p]; i < start[p + 1]; i++) {
      int64_t u = order[i];
      s->nnz[p] += g->indptr[u + 1] - g->indptr[u];
      for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
        int64_t v = g->indices[k];
        int32_t q = part[v];
        if (q == p) continue;
        s->edge_cut++;
        if (node_mark[v] != p) {
          node_mark[v] = p;
          s->halo[p]++;
          if (s->between) s->between[(int64_t)q * parts + p]++;
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
  halo_partition_stats_finish(s);
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
  free((*s)->cover_between);
  free((*s)->owned);
  free((*s)->halo);
  free((*s)->nnz);
  free((*s)->send);
  free((*s)->cost);
  free((*s)->peers);
  free((*s)->between);
  free(*s);
  *s = NULL;
}

halo_status halo_partition_stats_by_ranks(halo_partition_stats *s, const halo_graph *g,
                                          const int32_t *part) {
  halo_status st = HALO_OK;
  int32_t *group_of = NULL;
  int64_t *seen = NULL;
  const int32_t parts = s->parts;
  s->groupings = 0;
  HALO_ALLOC(group_of, parts, "the grouping of parts");
  HALO_ALLOC(seen, parts, "the grouping of parts");
  for (int32_t ranks = parts;; ranks = ranks / 2 + ranks % 2) {
    HALO_TRY(halo_shard_group(s->owned, s->between, parts, ranks, group_of));
    /* Row u crosses once to each other group that holds a neighbour. */
    for (int32_t q = 0; q < parts; q++) seen[q] = -1;
    int64_t rows = 0;
    for (int64_t u = 0; u < g->n; u++) {
      const int32_t home = group_of[part[u]];
      for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
        const int32_t to = group_of[part[g->indices[k]]];
        if (to != home && seen[to] != u) {
          seen[to] = u;
          rows++;
        }
      }
    }
    s->by_ranks[s->groupings] = ranks;
    s->by_ranks_rows[s->groupings] = rows;
    s->groupings++;
    if (ranks == 1) break;
  }
done:
  free(group_of);
  free(seen);
  return st;
}
