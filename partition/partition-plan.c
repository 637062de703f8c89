/* Halo plans: one halo_shard per part, in the local numbering of halo-shard.h.
 *
 * For part p with owned set O:
 *   owned rows (HALO_ORDER_COMMUNITY): interior rows (no neighbour outside
 *           O) first, then boundary rows; within each group block by block
 *           (blocks grown greedily in the subgraph induced by O,
 *           halo__partition_blocks), ascending id inside a block.
 *           HALO_ORDER_ID: ascending id.
 *   halo    = {v ∉ O : (u, v) ∈ E, u ∈ O}, grouped by part[v], ascending id;
 *   send[q] = {u ∈ O : some neighbour of u is owned by q}, ascending id.
 * On a symmetric graph send[q] of p is exactly the halo range of q that p
 * owns, in the same order, so peers agree without talking to each other.
 * Only the owned rows move with the order: halo ranges and send lists are
 * defined by global ids, which both sides know, never by local rows.
 *
 * The plan keeps one int32 map global -> local (size n) that is set for the
 * rows of the part being built and reset afterwards, so building all P
 * parts costs O(n + m + H log H) time (a sweep of the map replaces the sort
 * only when it costs less than 16 H), the community order's blocks
 * included (linear in each part's rows and edges), and O(n) scratch beyond
 * one part's arrays and its induced subgraph while the blocks are grown.
 */
#include <stdlib.h>
#include <string.h>

#include "halo-partition.h"
#include "halo-search.h"
#include "partition-impl.h"

enum { LOCAL_NONE = -1, LOCAL_HALO_NEW = -2, LOCAL_HALO_TAKEN = -3 };

struct halo_partition_plan {
  const halo_graph *g;
  const int32_t *part;
  int32_t parts;
  halo_order row_order;
  uint64_t run_id;
  int64_t *order;       /* size n: nodes grouped by part, ascending id within a part */
  int64_t *start;       /* size parts+1: part p owns order[start[p]..start[p+1]) */
  int32_t *local;       /* size n: local row in the part being built, or LOCAL_* */
  int64_t *mark;        /* size parts: last owned row that counted peer q */
  int64_t *cursor;      /* size parts: next halo slot per owner */
  int64_t *send_cursor; /* size parts: next send slot per peer */
};

halo_status halo_partition_plan_create(const halo_graph *g, const int32_t *part, int32_t parts,
                                       halo_order order, uint64_t run_id,
                                       halo_partition_plan **out) {
  halo_status st = HALO_OK;
  halo_partition_plan *plan = NULL;
  *out = NULL;
  if (parts < 1) HALO_FAIL(HALO_ERR_ARG, "halo plan: %d parts", parts);
  if (order != HALO_ORDER_COMMUNITY && order != HALO_ORDER_ID)
    HALO_FAIL(HALO_ERR_ARG, "halo plan: unknown row order %d", (int)order);
  HALO_ALLOC(plan, 1, "halo plan");
  *plan = (halo_partition_plan){
      .g = g, .part = part, .parts = parts, .row_order = order, .run_id = run_id};
  HALO_TRY(halo__partition_order(part, g->n, parts, &plan->order, &plan->start));
  HALO_ALLOC(plan->local, g->n, "halo plan node map");
  HALO_ALLOC(plan->mark, parts, "halo plan marks");
  HALO_ALLOC(plan->cursor, parts, "halo plan cursors");
  HALO_ALLOC(plan->send_cursor, parts, "halo plan cursors");
  for (int64_t v = 0; v < g->n; v++) plan->local[v] = LOCAL_NONE;
  *out = plan;
  plan = NULL;
done:
  halo_partition_plan_destroy(&plan);
  return st;
}

void halo_partition_plan_destroy(halo_partition_plan **plan) {
  if (!plan || !*plan) return;
  free((*plan)->send_cursor);
  free((*plan)->cursor);
  free((*plan)->mark);
  free((*plan)->local);
  free((*plan)->start);
  free((*plan)->order);
  free(*plan);
  *plan = NULL;
}

static int compare_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static void sort_i32(int32_t *row, int64_t len) {
  if (len > 32) {
    qsort(row, (size_t)len, sizeof *row, compare_i32);
    return;
  }
  for (int64_t k = 1; k < len; k++) {
    int32_t key = row[k];
    int64_t j = k;
    for (; j > 0 && row[j - 1] > key; j--) row[j] = row[j - 1];
    row[j] = key;
  }
}

/* Restores plan->local to LOCAL_NONE on every node part p may have touched
 * (the slow way, after a failure part-way through). */
static void reset_map(halo_partition_plan *plan, int32_t p) {
  const halo_graph *g = plan->g;
  for (int64_t i = plan->start[p]; i < plan->start[p + 1]; i++) {
    int64_t u = plan->order[i];
    plan->local[u] = LOCAL_NONE;
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++)
      plan->local[g->indices[k]] = LOCAL_NONE;
  }
}

/* Pass 1 over the owned rows' edges: marks the halo nodes, flags the
 * boundary rows (boundary[i] for by_id[i]) and counts, per peer q, the halo
 * rows owned by q (recv_ptr) and the owned rows q needs (send_ptr). */
static halo_status scan_edges(halo_partition_plan *plan, int32_t p, halo_shard *s,
                              uint8_t *boundary) {
  halo_status st = HALO_OK;
  const halo_graph *g = plan->g;
  const int64_t *owned = plan->order + plan->start[p];
  const int32_t *part = plan->part;
  int32_t *local = plan->local;
  int64_t *mark = plan->mark, n_halo = 0;

  HALO_ALLOC(s->recv_ptr, (int64_t)plan->parts + 1, "receive offsets");
  HALO_ALLOC(s->send_ptr, (int64_t)plan->parts + 1, "send offsets");
  for (int32_t q = 0; q < plan->parts; q++) mark[q] = -1;
  for (int64_t r = 0; r < s->n_owned; r++)
    for (int64_t k = g->indptr[owned[r]]; k < g->indptr[owned[r] + 1]; k++) {
      int64_t v = g->indices[k];
      int32_t q = part[v];
      if (q == p) continue;
      boundary[r] = 1;
      if (local[v] == LOCAL_NONE) {
        local[v] = LOCAL_HALO_NEW;
        s->recv_ptr[q + 1]++;
        n_halo++;
      }
      if (mark[q] != r) {
        mark[q] = r;
        s->send_ptr[q + 1]++;
      }
    }
  if (s->n_owned + n_halo > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT,
              "part %d has %lld owned and %lld halo rows; local ids are int32 "
              "(at most %d rows): use more parts",
              p, (long long)s->n_owned, (long long)n_halo, INT32_MAX);
  s->n_halo = n_halo;
  for (int32_t q = 0; q < plan->parts; q++) {
    s->recv_ptr[q + 1] += s->recv_ptr[q];
    s->send_ptr[q + 1] += s->send_ptr[q];
  }
done:
  return st;
}

/* The local order of part p's owned rows: rows[r] is the global id of row
 * r, and plan->local maps it back.  by_id lists the owned nodes in ascending
 * id and boundary[i] flags by_id[i]; the community order is a stable
 * counting sort of by_id on (boundary, block), so ids ascend inside a block. */
static halo_status order_rows(halo_partition_plan *plan, const int64_t *by_id, int64_t n_owned,
                              const uint8_t *boundary, int64_t *rows) {
  halo_status st = HALO_OK;
  int32_t *block = NULL;
  int64_t *next = NULL;
  if (plan->row_order == HALO_ORDER_ID) {
    memcpy(rows, by_id, (size_t)n_owned * sizeof *rows);
  } else {
    HALO_ALLOC(block, n_owned, "row blocks");
    HALO_TRY(halo__partition_blocks(plan->g, by_id, n_owned, plan->local, HALO_PARTITION_BLOCK_ROWS,
                                    block));
    int64_t blocks = 1;
    for (int64_t i = 0; i < n_owned; i++)
      if (block[i] >= blocks) blocks = (int64_t)block[i] + 1;
    /* Key (boundary, block) = boundary · blocks + block; next[] starts as counts. */
    HALO_ALLOC(next, 2 * blocks + 1, "row block offsets");
    for (int64_t i = 0; i < n_owned; i++) next[boundary[i] * blocks + block[i] + 1]++;
    for (int64_t k = 0; k < 2 * blocks; k++) next[k + 1] += next[k];
    for (int64_t i = 0; i < n_owned; i++) rows[next[boundary[i] * blocks + block[i]]++] = by_id[i];
  }
  for (int64_t r = 0; r < n_owned; r++) plan->local[rows[r]] = (int32_t)r;
done:
  free(next);
  free(block);
  return st;
}

typedef struct weighted_col {
  int32_t col;
  float w;
} weighted_col;

static int compare_weighted_col(const void *a, const void *b) {
  const weighted_col *x = a, *y = b;
  return (x->col > y->col) - (x->col < y->col);
}

/* Local columns of owned row r (its halo rows numbered already), ascending,
 * with their weights when the graph has them (a row's columns are
 * distinct, so the order is total). */
static void fill_row(const halo_partition_plan *plan, halo_shard *s, int64_t r) {
  const halo_graph *g = plan->g;
  const int64_t at = g->indptr[s->global_id[r]];
  const int64_t *row = g->indices + at;
  int32_t *out = s->indices + s->indptr[r];
  const int64_t len = s->indptr[r + 1] - s->indptr[r];
  if (!g->edge_weight) {
    for (int64_t k = 0; k < len; k++) out[k] = plan->local[row[k]];
    sort_i32(out, len);
    return;
  }
  /* The weighted row sorts in place over the part's weight array, as pairs
   * in a scratch of the row's length held in the weights' slot. */
  float *w = s->edge_weight + s->indptr[r];
  weighted_col *pairs = malloc((size_t)(len > 0 ? len : 1) * sizeof *pairs);
  if (!pairs) { /* rare: fall back to an insertion sort of both arrays */
    for (int64_t k = 0; k < len; k++) {
      out[k] = plan->local[row[k]];
      w[k] = g->edge_weight[at + k];
    }
    for (int64_t k = 1; k < len; k++) {
      int32_t c = out[k];
      float x = w[k];
      int64_t j = k;
      for (; j > 0 && out[j - 1] > c; j--) {
        out[j] = out[j - 1];
        w[j] = w[j - 1];
      }
      out[j] = c;
      w[j] = x;
    }
    return;
  }
  for (int64_t k = 0; k < len; k++)
    pairs[k] = (weighted_col){.col = plan->local[row[k]], .w = g->edge_weight[at + k]};
  qsort(pairs, (size_t)len, sizeof *pairs, compare_weighted_col);
  for (int64_t k = 0; k < len; k++) {
    out[k] = pairs[k].col;
    w[k] = pairs[k].w;
  }
  free(pairs);
}

/* Pass 2: places each halo node in its owner's range, in ascending id, and
 * each sent row in its peer's list (ascending id, as the owned nodes are
 * visited in ascending id, whatever their local rows); numbers the halo rows
 * and fills the local CSR of the owned rows rows[0..n_owned).
 *
 * A dense halo is cheaper to collect in id order by sweeping the node map
 * than to gather and sort, and once it is numbered the same pass over the
 * edges also fills the CSR.  A sparse one (many parts, a big graph) is
 * gathered, sorted per owner, and the CSR takes a third pass. */
static halo_status fill_halo_send_csr(halo_partition_plan *plan, int32_t p, halo_shard *s,
                                      const int64_t *rows) {
  halo_status st = HALO_OK;
  const halo_graph *g = plan->g;
  const int64_t *by_id = plan->order + plan->start[p];
  const int32_t *part = plan->part;
  const int64_t n_owned = s->n_owned, n_halo = s->n_halo;
  int32_t *local = plan->local;
  int64_t *mark = plan->mark, *recv_at = plan->cursor, *send_at = plan->send_cursor;

  HALO_ALLOC(s->global_id, n_owned + n_halo, "global ids");
  HALO_ALLOC(s->halo_owner, n_halo, "halo owners");
  HALO_ALLOC(s->send_idx, s->send_ptr[plan->parts], "send lists");
  HALO_ALLOC(s->indptr, n_owned + 1, "local offsets");
  for (int64_t r = 0; r < n_owned; r++)
    s->indptr[r + 1] = s->indptr[r] + g->indptr[rows[r] + 1] - g->indptr[rows[r]];
  s->nnz = s->indptr[n_owned];
  HALO_ALLOC(s->indices, s->nnz, "local columns");
  if (g->edge_weight) HALO_ALLOC(s->edge_weight, s->nnz, "local edge weights");
  memcpy(s->global_id, rows, (size_t)n_owned * sizeof *rows);
  int64_t *halo_id = s->global_id + n_owned;
  for (int32_t q = 0; q < plan->parts; q++) {
    recv_at[q] = s->recv_ptr[q];
    send_at[q] = s->send_ptr[q];
    mark[q] = -1;
  }

  const int sweep = g->n < 16 * n_halo;
  if (sweep)
    for (int64_t v = 0; v < g->n; v++)
      if (local[v] == LOCAL_HALO_NEW) {
        int64_t h = recv_at[part[v]]++;
        halo_id[h] = v;
        local[v] = (int32_t)(n_owned + h);
      }
  for (int64_t i = 0; i < n_owned; i++) {
    const int64_t u = by_id[i], r = local[u];
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
      int64_t v = g->indices[k];
      int32_t q = part[v];
      if (q == p) continue;
      if (!sweep && local[v] == LOCAL_HALO_NEW) {
        local[v] = LOCAL_HALO_TAKEN;
        halo_id[recv_at[q]++] = v;
      }
      if (mark[q] != r) {
        mark[q] = r;
        s->send_idx[send_at[q]++] = (int32_t)r;
      }
    }
    if (sweep) fill_row(plan, s, r);
  }
  if (!sweep) {
    for (int32_t q = 0; q < plan->parts; q++) {
      int64_t len = s->recv_ptr[q + 1] - s->recv_ptr[q];
      if (len > 1) qsort(halo_id + s->recv_ptr[q], (size_t)len, sizeof *halo_id, halo_compare_i64);
    }
    for (int64_t h = 0; h < n_halo; h++) local[halo_id[h]] = (int32_t)(n_owned + h);
    for (int64_t r = 0; r < n_owned; r++) fill_row(plan, s, r);
  }
  for (int64_t h = 0; h < n_halo; h++) s->halo_owner[h] = part[halo_id[h]];

  /* Global degrees of owned and halo rows. */
  HALO_ALLOC(s->degree, n_owned + n_halo, "degrees");
  for (int64_t r = 0; r < n_owned + n_halo; r++) {
    int64_t v = s->global_id[r];
    s->degree[r] = g->indptr[v + 1] - g->indptr[v];
  }
  if (g->edge_weight) {
    HALO_ALLOC(s->weighted_degree, n_owned + n_halo, "weighted degrees");
    for (int64_t r = 0; r < n_owned + n_halo; r++) {
      const int64_t v = s->global_id[r];
      double sum = 0.0;
      for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) sum += g->edge_weight[k];
      s->weighted_degree[r] = sum;
    }
  }
done:
  return st;
}

/* The leading owned rows with no halo column (columns ascend, so the last
 * one decides). */
static int64_t interior_prefix(const halo_shard *s) {
  int64_t r = 0;
  while (r < s->n_owned &&
         (s->indptr[r + 1] == s->indptr[r] || s->indices[s->indptr[r + 1] - 1] < s->n_owned))
    r++;
  return r;
}

/* Features, labels, split and input ids of the owned rows. */
static halo_status build_node_data(const halo_graph *g, halo_shard *s) {
  halo_status st = HALO_OK;
  const int64_t n_owned = s->n_owned;
  if (g->original_id) {
    HALO_ALLOC(s->original_id, n_owned, "original ids");
    for (int64_t r = 0; r < n_owned; r++) s->original_id[r] = g->original_id[s->global_id[r]];
  }
  if (g->x_indptr) {
    /* CSR features stay CSR: the owned rows' non-zeros, in row order. */
    int64_t nnz = 0;
    for (int64_t r = 0; r < n_owned; r++)
      nnz += g->x_indptr[s->global_id[r] + 1] - g->x_indptr[s->global_id[r]];
    HALO_ALLOC(s->x_indptr, n_owned + 1, "CSR feature offsets");
    HALO_ALLOC(s->x_indices, nnz, "CSR feature columns");
    HALO_ALLOC(s->x_values, nnz, "CSR feature values");
    s->x_nnz = nnz;
    for (int64_t r = 0; r < n_owned; r++) {
      const int64_t v = s->global_id[r], at = s->x_indptr[r];
      const int64_t len = g->x_indptr[v + 1] - g->x_indptr[v];
      memcpy(s->x_indices + at, g->x_indices + g->x_indptr[v], (size_t)len * sizeof *s->x_indices);
      memcpy(s->x_values + at, g->x_values + g->x_indptr[v], (size_t)len * sizeof *s->x_values);
      s->x_indptr[r + 1] = at + len;
    }
  } else if (g->features > 0) {
    const size_t row_bytes = (size_t)g->features * sizeof(float);
    HALO_ALLOC(s->x, n_owned * g->features, "features");
    for (int64_t r = 0; r < n_owned; r++)
      memcpy(s->x + r * g->features, g->x + s->global_id[r] * g->features, row_bytes);
  }
  if (g->multilabel) {
    const size_t row = (size_t)g->classes;
    HALO_ALLOC(s->targets, (size_t)n_owned * row, "multi-label targets");
    for (int64_t r = 0; r < n_owned; r++)
      memcpy(s->targets + (size_t)r * row, g->targets + (size_t)s->global_id[r] * row, row);
  } else if (g->classes > 0) {
    HALO_ALLOC(s->labels, n_owned, "labels");
    for (int64_t r = 0; r < n_owned; r++) s->labels[r] = g->labels[s->global_id[r]];
  }
  int64_t count[4] = {0};
  if (g->split)
    for (int64_t r = 0; r < n_owned; r++) count[g->split[s->global_id[r]] & 3]++;
  s->n_train = count[HALO_SPLIT_TRAIN];
  s->n_valid = count[HALO_SPLIT_VALID];
  s->n_test = count[HALO_SPLIT_TEST];
  HALO_ALLOC(s->train, s->n_train, "train rows");
  HALO_ALLOC(s->valid, s->n_valid, "valid rows");
  HALO_ALLOC(s->test, s->n_test, "test rows");
  int32_t *lists[4] = {NULL, s->train, s->valid, s->test};
  int64_t fill[4] = {0};
  if (g->split)
    for (int64_t r = 0; r < n_owned; r++) {
      int which = g->split[s->global_id[r]];
      if (which >= HALO_SPLIT_TRAIN && which <= HALO_SPLIT_TEST)
        lists[which][fill[which]++] = (int32_t)r;
    }
done:
  return st;
}

halo_status halo_partition_plan_shard(halo_partition_plan *plan, int32_t p, halo_shard **out) {
  halo_status st = HALO_OK;
  halo_shard *s = NULL;
  const halo_graph *g = plan->g;
  int64_t *rows = NULL;
  uint8_t *boundary = NULL;
  int touched = 0;
  *out = NULL;
  if (p < 0 || p >= plan->parts)
    HALO_FAIL(HALO_ERR_ARG, "halo plan: part %d outside [0, %d)", p, plan->parts);
  int64_t n_owned = plan->start[p + 1] - plan->start[p];
  if (n_owned > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "part %d owns %lld nodes; local ids are int32: use more parts", p,
              (long long)n_owned);
  HALO_ALLOC(s, 1, "shard");
  *s = (halo_shard){
      .format_version = halo_shard_format_for(g->x_indptr != NULL),
      .part = p,
      .parts = plan->parts,
      .run_id = plan->run_id,
      .nodes = g->n,
      .edges = g->m,
      .features = g->features,
      .classes = g->classes,
      .multilabel = g->multilabel,
      .n_owned = n_owned,
  };
  const int64_t *by_id = plan->order + plan->start[p];
  HALO_ALLOC(rows, n_owned, "owned rows");
  HALO_ALLOC(boundary, n_owned, "boundary flags");
  touched = 1;
  for (int64_t i = 0; i < n_owned; i++) plan->local[by_id[i]] = (int32_t)i;
  HALO_TRY(scan_edges(plan, p, s, boundary));
  HALO_TRY(order_rows(plan, by_id, n_owned, boundary, rows));
  HALO_TRY(fill_halo_send_csr(plan, p, s, rows));
  s->n_interior = interior_prefix(s);
  HALO_TRY(build_node_data(g, s));
  /* Every node this part touched is one of its rows: reset just those. */
  for (int64_t r = 0; r < s->n_owned + s->n_halo; r++) plan->local[s->global_id[r]] = LOCAL_NONE;
  touched = 0;
  *out = s;
  s = NULL;
done:
  if (touched) reset_map(plan, p);
  halo_shard_destroy(&s);
  free(boundary);
  free(rows);
  return st;
}
