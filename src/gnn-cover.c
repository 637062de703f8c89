/* --halo-aggregate auto: each pair of parts' cut crosses as a minimum vertex
 * cover (core/halo-cover.h) instead of every boundary row.
 *
 * The cut between parts p and q is the bipartite graph of the edges (u, v),
 * u owned by p and v by q.  A cover C holds, for every such edge, u or v.
 * For the messages p -> q, a u in C crosses as its row x_u (post-
 * aggregation, today's exchange), and a v in C as p's partial sum
 *     s_v = Σ_{u ∉ C, (u,v) in the cut} a_vu · x_u
 * (pre-aggregation), so that q's row v adds s_v in place of those terms.
 * The same cover serves q -> p with the sides' roles swapped, since the
 * graph is symmetric.  Both parts build the pair's graph in one order (the
 * lower part's nodes on the left, each side and each adjacency list in
 * ascending global id) and so get the same cover without a message.
 *
 * Layout.  p's messages to q are |C| rows: first C ∩ p's nodes (rows), then
 * C ∩ q's nodes (partial sums), each in ascending global id; they land in
 * q's halo rows at q's offset for p, the sum of the covers of the peers
 * before p.  A sender's rows are one sparse product, combine · X, whose row
 * for a covered u is e_u and for a covered v holds the a_vu.  A receiver's
 * matrix A' keeps A's entries for its own rows and for covered senders'
 * rows (renumbered), and replaces the terms of uncovered senders by one
 * entry 1 at the partial sum's row.
 *
 * Every coefficient is the sender's to know: a_vu of Â is
 * 1/sqrt((deg u + 1)(deg v + 1)), of the mean 1/deg v, of its transpose
 * 1/deg u, of GIN's sum 1, and a shard holds the global degree of its halo
 * nodes too.  GAT's coefficients depend on the receiver's row (refused). */
#include <stdlib.h>

#include "gnn-impl.h"
#include "halo-cover.h"

typedef struct keyed {
  int64_t gid;
  int64_t local;
} keyed;

static int keyed_cmp(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

static int i64_cmp(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void gnn_cover_free(gnn_cover *c) {
  free(c->rows);
  free(c->offset);
  free(c->mine_ptr);
  free(c->mine);
  free(c->theirs_ptr);
  free(c->theirs);
  *c = (gnn_cover){0};
}

/* The pair (this part, q)'s bipartite graph and its cover: mine and theirs
 * appended for peer q. Local. */
typedef struct pair_work {
  int64_t *pos;       /* size n_owned + n_halo: a node's place on its side, or -1 */
  keyed *v;           /* size n_halo: the peer's nodes by global id */
  int64_t *ptr, *adj; /* the left side's CSR */
  int64_t *edge_l, *edge_r;
  uint8_t *in_l, *in_r;
} pair_work;

static halo_status cover_pair(const halo_shard *s, int32_t q, pair_work *w, gnn_cover *c) {
  halo_status st = HALO_OK;
  const int64_t n = s->n_owned;
  const int32_t *u = s->send_idx + s->send_ptr[q];
  const int64_t nu = s->send_ptr[q + 1] - s->send_ptr[q];
  const int64_t h0 = s->recv_ptr[q], nv = s->recv_ptr[q + 1] - s->recv_ptr[q];
  for (int64_t j = 0; j < nv; j++) w->v[j] = (keyed){s->global_id[n + h0 + j], n + h0 + j};
  qsort(w->v, (size_t)nv, sizeof *w->v, keyed_cmp);
  for (int64_t i = 0; i < nu; i++) w->pos[u[i]] = i; /* send lists ascend in global id */
  for (int64_t j = 0; j < nv; j++) w->pos[w->v[j].local] = j;

  /* The edges (place of u, place of v), and the left side's lists. */
  const int lower = s->part < q;
  const int64_t nl = lower ? nu : nv, nr = lower ? nv : nu;
  int64_t m = 0;
  for (int64_t i = 0; i < nu; i++)
    for (int64_t k = s->indptr[u[i]]; k < s->indptr[u[i] + 1]; k++) {
      const int32_t col = s->indices[k];
      if (col < n || s->halo_owner[col - n] != q) continue;
      w->edge_l[m] = lower ? i : w->pos[col];
      w->edge_r[m] = lower ? w->pos[col] : i;
      m++;
    }
  for (int64_t i = 0; i <= nl; i++) w->ptr[i] = 0;
  for (int64_t e = 0; e < m; e++) w->ptr[w->edge_l[e] + 1]++;
  for (int64_t i = 0; i < nl; i++) w->ptr[i + 1] += w->ptr[i];
  for (int64_t e = 0; e < m; e++) w->adj[w->ptr[w->edge_l[e]]++] = w->edge_r[e];
  for (int64_t i = nl; i > 0; i--) w->ptr[i] = w->ptr[i - 1];
  w->ptr[0] = 0;
  for (int64_t i = 0; i < nl; i++)
    qsort(w->adj + w->ptr[i], (size_t)(w->ptr[i + 1] - w->ptr[i]), sizeof *w->adj, i64_cmp);

  const halo_bipartite g = {.nl = nl, .nr = nr, .ptr = w->ptr, .adj = w->adj};
  int64_t size = 0;
  HALO_TRY(halo_cover_bipartite(&g, w->in_l, w->in_r, &size));
  const uint8_t *in_u = lower ? w->in_l : w->in_r, *in_v = lower ? w->in_r : w->in_l;
  int64_t k = c->mine_ptr[q];
  for (int64_t i = 0; i < nu; i++)
    if (in_u[i]) c->mine[k++] = u[i];
  c->mine_ptr[q + 1] = k;
  k = c->theirs_ptr[q];
  for (int64_t j = 0; j < nv; j++)
    if (in_v[j]) c->theirs[k++] = (int32_t)w->v[j].local;
  c->theirs_ptr[q + 1] = k;
  c->rows[q] = size;
  for (int64_t i = 0; i < nu; i++) w->pos[u[i]] = -1;
done:
  return st;
}

halo_status gnn_cover_build(const halo_shard *s, gnn_cover *c) {
  halo_status st = HALO_OK;
  pair_work w = {0};
  const int32_t parts = s->parts;
  const int64_t n = s->n_owned, nh = s->n_halo, sends = s->send_ptr[parts];
  int64_t edges = 0, side = 1;
  *c = (gnn_cover){0};
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++) edges += s->indices[k] >= n;
  for (int32_t q = 0; q < parts; q++) {
    const int64_t a = s->send_ptr[q + 1] - s->send_ptr[q], b = s->recv_ptr[q + 1] - s->recv_ptr[q];
    if (a + 1 > side) side = a + 1;
    if (b + 1 > side) side = b + 1;
  }
  HALO_ALLOC(c->rows, parts, "the cut covers");
  HALO_ALLOC(c->offset, parts + 1, "the cut covers");
  HALO_ALLOC(c->mine_ptr, parts + 1, "the cut covers");
  HALO_ALLOC(c->theirs_ptr, parts + 1, "the cut covers");
  HALO_ALLOC(c->mine, sends, "the cut covers");
  HALO_ALLOC(c->theirs, nh, "the cut covers");
  HALO_ALLOC(w.pos, n + nh, "the cut graphs");
  HALO_ALLOC(w.v, nh, "the cut graphs");
  HALO_ALLOC(w.ptr, side + 1, "the cut graphs");
  HALO_ALLOC(w.adj, edges, "the cut graphs");
  HALO_ALLOC(w.edge_l, edges, "the cut graphs");
  HALO_ALLOC(w.edge_r, edges, "the cut graphs");
  HALO_ALLOC(w.in_l, side, "the cut graphs");
  HALO_ALLOC(w.in_r, side, "the cut graphs");
  for (int64_t i = 0; i < n + nh; i++) w.pos[i] = -1;
  for (int32_t q = 0; q < parts; q++) {
    c->mine_ptr[q + 1] = c->mine_ptr[q];
    c->theirs_ptr[q + 1] = c->theirs_ptr[q];
    if (q != s->part && s->send_ptr[q + 1] > s->send_ptr[q]) HALO_TRY(cover_pair(s, q, &w, c));
    c->offset[q + 1] = c->offset[q] + c->rows[q];
  }
done:
  free(w.pos);
  free(w.v);
  free(w.ptr);
  free(w.adj);
  free(w.edge_l);
  free(w.edge_r);
  free(w.in_l);
  free(w.in_r);
  if (st != HALO_OK) gnn_cover_free(c);
  return st;
}

void gnn_cover_keys(const halo_shard *s, const gnn_cover *c, int64_t *keys) {
  int64_t r = 0;
  for (int32_t q = 0; q < s->parts; q++) {
    for (int64_t k = c->mine_ptr[q]; k < c->mine_ptr[q + 1]; k++)
      keys[r++] = s->global_id[c->mine[k]];
    for (int64_t k = c->theirs_ptr[q]; k < c->theirs_ptr[q + 1]; k++)
      keys[r++] = gnn_cover_sum_key(s->global_id[c->theirs[k]], s->part);
  }
}

/* The place of owned row v in the sorted list mine[lo, hi) by global id, or -1. */
static int64_t find_mine(const halo_shard *s, const int32_t *mine, int64_t lo, int64_t hi,
                         int64_t v) {
  const int64_t gid = s->global_id[v];
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const int64_t g = s->global_id[mine[mid]];
    if (g == gid) return mid;
    if (g < gid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

halo_status gnn_cover_matrix(const halo_shard *s, const gnn_cover *c, halo_aggregation kind,
                             halo_csr *a, halo_csr *combine) {
  halo_status st = HALO_OK;
  const int32_t parts = s->parts;
  const int64_t n = s->n_owned, nh = s->n_halo;
  halo_csr out = {.rows = a->rows, .cols = a->cols}, cb = {.cols = a->cols};
  int64_t *tpos = NULL, *last = NULL, *hptr = NULL, *mark = NULL;
  keyed *hadj = NULL;
  *combine = (halo_csr){0};

  /* The receiver's side: A'. */
  HALO_ALLOC(tpos, nh, "the covered matrix");
  HALO_ALLOC(last, parts, "the covered matrix");
  HALO_ALLOC(out.indptr, a->rows + 1, "the covered matrix");
  HALO_ALLOC(out.indices, a->nnz, "the covered matrix");
  HALO_ALLOC(out.values, a->nnz, "the covered matrix");
  for (int64_t h = 0; h < nh; h++) tpos[h] = -1;
  for (int32_t q = 0; q < parts; q++) {
    last[q] = -1;
    for (int64_t k = c->theirs_ptr[q]; k < c->theirs_ptr[q + 1]; k++)
      tpos[c->theirs[k] - n] = c->offset[q] + (k - c->theirs_ptr[q]);
  }
  int64_t nnz = 0;
  for (int64_t v = 0; v < a->rows; v++) {
    for (int64_t k = a->indptr[v]; k < a->indptr[v + 1]; k++) {
      const int32_t col = a->indices[k];
      const float val = a->values ? a->values[k] : 1.0f;
      if (col < n) {
        out.indices[nnz] = col;
        out.values[nnz++] = val;
        continue;
      }
      if (tpos[col - n] >= 0) { /* the sender's row crosses */
        out.indices[nnz] = (int32_t)(n + tpos[col - n]);
        out.values[nnz++] = val;
        continue;
      }
      const int32_t q = s->halo_owner[col - n];
      if (last[q] == v) continue; /* this row's partial sum from q is in already */
      const int64_t at = find_mine(s, c->mine, c->mine_ptr[q], c->mine_ptr[q + 1], v);
      if (at < 0)
        HALO_FAIL(HALO_ERR_CORRUPT, "part %d: the cover with part %d misses an edge of row %lld",
                  s->part, q, (long long)s->global_id[v]);
      last[q] = v;
      const int64_t theirs = c->theirs_ptr[q + 1] - c->theirs_ptr[q];
      out.indices[nnz] = (int32_t)(n + c->offset[q] + theirs + (at - c->mine_ptr[q]));
      out.values[nnz++] = 1.0f;
    }
    out.indptr[v + 1] = nnz;
  }
  out.nnz = nnz;

  /* The sender's side: each halo node's owned neighbours, by global id. */
  HALO_ALLOC(hptr, nh + 1, "the partial sums");
  HALO_ALLOC(hadj, s->nnz, "the partial sums");
  HALO_ALLOC(mark, n, "the partial sums");
  for (int64_t i = 0; i < n; i++) {
    mark[i] = -1;
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
      if (s->indices[k] >= n) hptr[s->indices[k] - n + 1]++;
  }
  for (int64_t h = 0; h < nh; h++) hptr[h + 1] += hptr[h];
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
      if (s->indices[k] >= n) hadj[hptr[s->indices[k] - n]++] = (keyed){s->global_id[i], i};
  for (int64_t h = nh; h > 0; h--) hptr[h] = hptr[h - 1];
  hptr[0] = 0;
  for (int64_t h = 0; h < nh; h++)
    qsort(hadj + hptr[h], (size_t)(hptr[h + 1] - hptr[h]), sizeof *hadj, keyed_cmp);

  /* combine: rows of the cover in the layout of the top comment. */
  cb.rows = c->offset[parts];
  int64_t cnnz = 0;
  for (int32_t q = 0; q < parts; q++) {
    cnnz += c->mine_ptr[q + 1] - c->mine_ptr[q];
    for (int64_t k = c->theirs_ptr[q]; k < c->theirs_ptr[q + 1]; k++)
      cnnz += hptr[c->theirs[k] - n + 1] - hptr[c->theirs[k] - n];
  }
  HALO_ALLOC(cb.indptr, cb.rows + 1, "the partial sums");
  HALO_ALLOC(cb.indices, cnnz, "the partial sums");
  HALO_ALLOC(cb.values, cnnz, "the partial sums");
  int64_t r = 0;
  cnnz = 0;
  for (int32_t q = 0; q < parts; q++) {
    for (int64_t k = c->mine_ptr[q]; k < c->mine_ptr[q + 1]; k++) {
      mark[c->mine[k]] = q;
      cb.indices[cnnz] = c->mine[k];
      cb.values[cnnz++] = 1.0f;
      cb.indptr[++r] = cnnz;
    }
    for (int64_t k = c->theirs_ptr[q]; k < c->theirs_ptr[q + 1]; k++) {
      const int64_t v = c->theirs[k];
      for (int64_t e = hptr[v - n]; e < hptr[v - n + 1]; e++) {
        const int64_t u = hadj[e].local;
        if (mark[u] == q) continue; /* u's row crosses: v adds it itself */
        cb.indices[cnnz] = (int32_t)u;
        cb.values[cnnz++] = gnn_aggregation_value(kind, s, v, u);
      }
      cb.indptr[++r] = cnnz;
    }
  }
  cb.nnz = cnnz;
  halo_csr_free(a);
  *a = out;
  out = (halo_csr){0};
  *combine = cb;
  cb = (halo_csr){0};
done:
  free(tpos);
  free(last);
  free(hptr);
  free(hadj);
  free(mark);
  halo_csr_free(&out);
  halo_csr_free(&cb);
  return st;
}
