/* Many parts on one rank: the grouping of K parts into P groups and the
 * merge of one group's parts into a single shard that reads as part g of a
 * P-part run (halo-shard.h has the contracts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-shard.h"
#include "halo-status.h"

/* The baseline: contiguous runs of parts, group g ending at the prefix
 * closest to (g+1)/groups of the nodes, each group at least one part. */
static void group_contiguous(const int64_t *owned, int32_t parts, int32_t groups,
                             int32_t *group_of) {
  int64_t total = 0;
  for (int32_t p = 0; p < parts; p++) total += owned[p];
  int32_t start = 0;
  int64_t prefix = 0;
  for (int32_t g = 0; g < groups; g++) {
    const int32_t last_end = parts - (groups - 1 - g); /* leave a part for each later group */
    int32_t end = start + 1;
    int64_t sum = prefix + owned[start];
    if (g == groups - 1) {
      end = parts;
    } else {
      const int64_t goal = total * (g + 1) / groups;
      while (end < last_end) {
        const int64_t next = sum + owned[end];
        if (llabs(next - goal) >= llabs(sum - goal)) break;
        sum = next;
        end++;
      }
    }
    for (int32_t p = start; p < end; p++) {
      group_of[p] = g;
      prefix += owned[p];
    }
    start = end;
  }
}

int64_t halo_shard_group_cut(const int64_t *between, int32_t parts, const int32_t *group_of) {
  int64_t cut = 0;
  for (int32_t q = 0; q < parts; q++)
    for (int32_t p = 0; p < parts; p++)
      if (group_of[q] != group_of[p]) cut += between[(int64_t)q * parts + p];
  return cut;
}

/* The nodes of the largest group. */
static int64_t largest_group(const int64_t *owned, int32_t parts, const int32_t *group_of,
                             int64_t *size /* scratch, size parts */) {
  int64_t largest = 0;
  for (int32_t p = 0; p < parts; p++) size[p] = 0;
  for (int32_t p = 0; p < parts; p++) size[group_of[p]] += owned[p];
  for (int32_t p = 0; p < parts; p++)
    if (size[p] > largest) largest = size[p];
  return largest;
}

/* Is merging (a, b) better than merging (c, d)?  Pairs whose union fits
 * under `cap` come first, and among them the most rows exchanged, then the
 * fewest nodes; among pairs that do not fit, the fewest nodes, then the most
 * rows.  Equal pairs keep the first found (lowest a, then lowest b). */
typedef struct merge_pick {
  int32_t a, b;
  int fits;
  int64_t rows, nodes;
} merge_pick;

static int better(const merge_pick *x, const merge_pick *y) {
  if (y->a < 0) return 1;
  if (x->fits != y->fits) return x->fits;
  if (x->fits) {
    if (x->rows != y->rows) return x->rows > y->rows;
    return x->nodes < y->nodes;
  }
  if (x->nodes != y->nodes) return x->nodes < y->nodes;
  return x->rows > y->rows;
}

/* Greedy agglomeration on the quotient graph: every part its own group,
 * then the best pair (better()) merged until `groups` remain.  A group is
 * known by its lowest part, which is also how groups are numbered. */
static halo_status group_greedy(const int64_t *owned, const int64_t *between, int32_t parts,
                                int32_t groups, int64_t cap, int32_t *group_of) {
  halo_status st = HALO_OK;
  int64_t *w = NULL, *size = NULL;
  int32_t *root = NULL;
  HALO_ALLOC(w, (int64_t)parts * parts, "the quotient graph of the parts");
  HALO_ALLOC(size, parts, "the grouping");
  HALO_ALLOC(root, parts, "the grouping");
  for (int32_t a = 0; a < parts; a++) {
    root[a] = a;
    size[a] = owned[a];
    for (int32_t b = 0; b < parts; b++)
      w[(int64_t)a * parts + b] =
          a == b ? 0 : between[(int64_t)a * parts + b] + between[(int64_t)b * parts + a];
  }
  for (int32_t left = parts; left > groups; left--) {
    merge_pick best = {.a = -1};
    for (int32_t a = 0; a < parts; a++) {
      if (root[a] != a) continue;
      for (int32_t b = a + 1; b < parts; b++) {
        if (root[b] != b) continue;
        merge_pick m = {
            .a = a, .b = b, .nodes = size[a] + size[b], .rows = w[(int64_t)a * parts + b]};
        m.fits = m.nodes <= cap;
        if (better(&m, &best)) best = m;
      }
    }
    const int32_t a = best.a, b = best.b;
    size[a] += size[b];
    for (int32_t c = 0; c < parts; c++) {
      if (root[c] == b) root[c] = a;
      w[(int64_t)a * parts + c] += w[(int64_t)b * parts + c];
      w[(int64_t)c * parts + a] = w[(int64_t)a * parts + c];
    }
    w[(int64_t)a * parts + a] = 0;
  }
  int32_t next = 0;
  for (int32_t p = 0; p < parts; p++) {
    if (root[p] == p) size[p] = next++;
    group_of[p] = (int32_t)size[root[p]];
  }
done:
  free(w);
  free(size);
  free(root);
  return st;
}

halo_status halo_shard_group(const int64_t *owned, const int64_t *between, int32_t parts,
                             int32_t groups, int32_t *group_of) {
  halo_status st = HALO_OK;
  int32_t *greedy = NULL;
  int64_t *scratch = NULL;
  if (!owned || !group_of || groups < 1 || parts < groups)
    HALO_FAIL(HALO_ERR_ARG, "halo_shard_group: %d parts cannot make %d groups", parts, groups);
  group_contiguous(owned, parts, groups, group_of);
  if (!between || groups == parts || parts > HALO_SHARD_GROUP_GREEDY_MAX_PARTS) goto done;
  HALO_ALLOC(greedy, parts, "the grouping");
  HALO_ALLOC(scratch, parts, "the grouping");
  const int64_t cap = largest_group(owned, parts, group_of, scratch);
  HALO_TRY(group_greedy(owned, between, parts, groups, cap, greedy));
  if (largest_group(owned, parts, greedy, scratch) <= cap &&
      halo_shard_group_cut(between, parts, greedy) < halo_shard_group_cut(between, parts, group_of))
    memcpy(group_of, greedy, (size_t)parts * sizeof *group_of);
done:
  free(greedy);
  free(scratch);
  return st;
}

/* A global id and where it lands: a merged row, or (for halo candidates)
 * the owner group in `key`. */
typedef struct id_pair {
  int64_t key; /* the owner group for halo rows, 0 for owned rows */
  int64_t gid;
  int64_t row;
} id_pair;

static int cmp_pair(const void *a, const void *b) {
  const id_pair *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->gid != y->gid) return x->gid < y->gid ? -1 : 1;
  return 0;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static const id_pair *find(const id_pair *v, int64_t n, int64_t key, int64_t gid) {
  const id_pair probe = {.key = key, .gid = gid};
  return bsearch(&probe, v, (size_t)n, sizeof *v, cmp_pair);
}

typedef struct weighted_col {
  int32_t col;
  float w;
} weighted_col;

static int cmp_weighted_col(const void *a, const void *b) {
  const weighted_col *x = a, *y = b;
  return (x->col > y->col) - (x->col < y->col);
}

halo_status halo_shard_merge(const halo_shard *const *in, int32_t count, const int32_t *group_of,
                             int32_t groups, int32_t group, halo_shard **out) {
  halo_status st = HALO_OK;
  halo_shard *s = NULL;
  id_pair *owned = NULL, *halo = NULL, *send = NULL;
  int64_t **map = NULL;
  weighted_col *wrow = NULL; /* a weighted row, sorted by merged column */
  if (!in || count < 1 || !group_of || !out || group < 0 || group >= groups)
    HALO_FAIL(HALO_ERR_ARG, "halo_shard_merge: bad argument");
  const halo_shard *f = in[0];
  const int32_t parts = f->parts;
  HALO_ALLOC(s, 1, "the merged shard");
  s->format_version = f->format_version;
  s->part = group;
  s->parts = groups;
  s->run_id = f->run_id;
  s->nodes = f->nodes;
  s->edges = f->edges;
  s->features = f->features;
  s->classes = f->classes;
  s->multilabel = f->multilabel;
  int64_t n_owned = 0, nnz = 0, x_nnz = 0, cand = 0, n_send = 0;
  int has_original = f->original_id != NULL;
  const int weighted = f->edge_weight != NULL;
  int64_t max_len = 0;
  for (int32_t i = 0; i < count; i++) {
    const halo_shard *p = in[i];
    if (group_of[p->part] != group || (i > 0 && in[i - 1]->part >= p->part) ||
        p->parts != parts || p->run_id != f->run_id ||
        (p->x_indptr != NULL) != (f->x_indptr != NULL) ||
        (p->original_id != NULL) != has_original || (p->edge_weight != NULL) != weighted)
      HALO_FAIL(HALO_ERR_MISMATCH, "part %d does not belong with part %d in group %d", p->part,
                f->part, group);
    n_owned += p->n_owned;
    nnz += p->nnz;
    x_nnz += p->x_nnz;
    cand += p->n_halo;
    n_send += p->send_ptr[parts];
  }
  if (n_owned + cand > INT32_MAX)
    HALO_FAIL(HALO_ERR_ARG, "group %d: %lld rows do not fit 32-bit column ids", group,
              (long long)(n_owned + cand));

  /* Owned rows: each part's in turn, so row r of part i is off_i + r. */
  HALO_ALLOC(owned, n_owned, "the merged owned ids");
  HALO_ALLOC(halo, cand, "the merged halo ids");
  for (int32_t i = 0, off = 0; i < count; off += (int32_t)in[i]->n_owned, i++)
    for (int64_t r = 0; r < in[i]->n_owned; r++)
      owned[off + r] = (id_pair){.gid = in[i]->global_id[r], .row = off + r};
  qsort(owned, (size_t)n_owned, sizeof *owned, cmp_pair);
  /* Halo rows: those owned outside the group, once each, by owner group
   * then global id, the order a P-part shard keeps. */
  int64_t n_halo = 0;
  for (int32_t i = 0; i < count; i++)
    for (int64_t h = 0; h < in[i]->n_halo; h++) {
      const int32_t q = group_of[in[i]->halo_owner[h]];
      if (q != group)
        halo[n_halo++] = (id_pair){.key = q, .gid = in[i]->global_id[in[i]->n_owned + h]};
    }
  qsort(halo, (size_t)n_halo, sizeof *halo, cmp_pair);
  int64_t uniq = 0;
  for (int64_t k = 0; k < n_halo; k++)
    if (uniq == 0 || cmp_pair(&halo[uniq - 1], &halo[k]) != 0) halo[uniq++] = halo[k];
  n_halo = uniq;
  for (int64_t k = 0; k < n_halo; k++) halo[k].row = n_owned + k;
  s->n_owned = n_owned;
  s->n_halo = n_halo;
  s->nnz = nnz;
  s->x_nnz = x_nnz;

  HALO_ALLOC(s->global_id, n_owned + n_halo, "the merged global ids");
  HALO_ALLOC(s->halo_owner, n_halo, "the merged halo owners");
  HALO_ALLOC(s->degree, n_owned + n_halo, "the merged degrees");
  if (weighted) HALO_ALLOC(s->weighted_degree, n_owned + n_halo, "the merged weighted degrees");
  HALO_ALLOC(s->recv_ptr, groups + 1, "the merged receive offsets");
  for (int64_t k = 0; k < n_halo; k++) {
    s->global_id[n_owned + k] = halo[k].gid;
    s->halo_owner[k] = (int32_t)halo[k].key;
    s->recv_ptr[halo[k].key + 1]++;
  }
  for (int32_t q = 0; q < groups; q++) s->recv_ptr[q + 1] += s->recv_ptr[q];

  /* Each part's local column to the merged one. */
  HALO_ALLOC(map, count, "the column maps");
  for (int32_t i = 0, off = 0; i < count; off += (int32_t)in[i]->n_owned, i++) {
    const halo_shard *p = in[i];
    HALO_ALLOC(map[i], p->n_owned + p->n_halo, "a column map");
    for (int64_t r = 0; r < p->n_owned; r++) {
      map[i][r] = off + r;
      s->global_id[off + r] = p->global_id[r];
      s->degree[off + r] = p->degree[r];
      if (weighted) s->weighted_degree[off + r] = p->weighted_degree[r];
    }
    for (int64_t h = 0; h < p->n_halo; h++) {
      const int64_t gid = p->global_id[p->n_owned + h];
      const int32_t q = group_of[p->halo_owner[h]];
      const id_pair *e = q == group ? find(owned, n_owned, 0, gid) : find(halo, n_halo, q, gid);
      if (!e)
        HALO_FAIL(HALO_ERR_CORRUPT, "part %d: halo node %lld is not owned by part %d", p->part,
                  (long long)gid, p->halo_owner[h]);
      map[i][p->n_owned + h] = e->row;
      s->degree[e->row] = p->degree[p->n_owned + h];
      if (weighted) s->weighted_degree[e->row] = p->weighted_degree[p->n_owned + h];
    }
  }

  /* The adjacency, each row's columns ascending as the format wants. */
  HALO_ALLOC(s->indptr, n_owned + 1, "the merged row offsets");
  HALO_ALLOC(s->indices, nnz, "the merged column ids");
  if (weighted) {
    HALO_ALLOC(s->edge_weight, nnz, "the merged edge weights");
    for (int32_t i = 0; i < count; i++)
      for (int64_t r = 0; r < in[i]->n_owned; r++)
        if (in[i]->indptr[r + 1] - in[i]->indptr[r] > max_len)
          max_len = in[i]->indptr[r + 1] - in[i]->indptr[r];
    HALO_ALLOC(wrow, max_len, "a merged weighted row");
  }
  int64_t row = 0, at = 0;
  for (int32_t i = 0; i < count; i++) {
    const halo_shard *p = in[i];
    for (int64_t r = 0; r < p->n_owned; r++, row++) {
      const int64_t begin = at;
      if (weighted) {
        /* Columns and weights move together; a row's columns are distinct. */
        int64_t len = 0;
        for (int64_t e = p->indptr[r]; e < p->indptr[r + 1]; e++)
          wrow[len++] = (weighted_col){(int32_t)map[i][p->indices[e]], p->edge_weight[e]};
        qsort(wrow, (size_t)len, sizeof *wrow, cmp_weighted_col);
        for (int64_t k = 0; k < len; k++, at++) {
          s->indices[at] = wrow[k].col;
          s->edge_weight[at] = wrow[k].w;
        }
      } else {
        for (int64_t e = p->indptr[r]; e < p->indptr[r + 1]; e++)
          s->indices[at++] = (int32_t)map[i][p->indices[e]];
        qsort(s->indices + begin, (size_t)(at - begin), sizeof *s->indices, cmp_i32);
      }
      s->indptr[row + 1] = at;
    }
  }
  /* Rows without a halo column, from the top: a prefix the overlap can use. */
  for (row = 0; row < n_owned; row++) {
    const int64_t last = s->indptr[row + 1] - 1;
    if (last >= s->indptr[row] && s->indices[last] >= n_owned) break;
  }
  s->n_interior = row;

  /* Node data, part after part. */
  const int64_t fc = f->features, cc = f->classes;
  if (f->x) HALO_ALLOC(s->x, n_owned * fc, "the merged features");
  if (f->x_indptr) {
    HALO_ALLOC(s->x_indptr, n_owned + 1, "the merged feature offsets");
    HALO_ALLOC(s->x_indices, x_nnz, "the merged feature columns");
    HALO_ALLOC(s->x_values, x_nnz, "the merged feature values");
  }
  if (f->labels) HALO_ALLOC(s->labels, n_owned, "the merged labels");
  if (f->targets) HALO_ALLOC(s->targets, n_owned * cc, "the merged targets");
  if (has_original) HALO_ALLOC(s->original_id, n_owned, "the merged original ids");
  int64_t xat = 0;
  for (int32_t i = 0, off = 0; i < count; off += (int32_t)in[i]->n_owned, i++) {
    const halo_shard *p = in[i];
    if (s->x && p->x) memcpy(s->x + off * fc, p->x, (size_t)(p->n_owned * fc) * sizeof *s->x);
    if (s->x_indptr) {
      for (int64_t r = 0; r < p->n_owned; r++) s->x_indptr[off + r + 1] = xat + p->x_indptr[r + 1];
      memcpy(s->x_indices + xat, p->x_indices, (size_t)p->x_nnz * sizeof *s->x_indices);
      memcpy(s->x_values + xat, p->x_values, (size_t)p->x_nnz * sizeof *s->x_values);
      xat += p->x_nnz;
    }
    if (s->labels && p->labels)
      memcpy(s->labels + off, p->labels, (size_t)p->n_owned * sizeof *s->labels);
    if (s->targets && p->targets)
      memcpy(s->targets + off * cc, p->targets, (size_t)(p->n_owned * cc) * sizeof *s->targets);
    if (has_original)
      memcpy(s->original_id + off, p->original_id, (size_t)p->n_owned * sizeof *s->original_id);
  }
  /* The splits: owned rows ascending within a part, parts in row order. */
  for (int32_t i = 0; i < count; i++) {
    s->n_train += in[i]->n_train;
    s->n_valid += in[i]->n_valid;
    s->n_test += in[i]->n_test;
  }
  HALO_ALLOC(s->train, s->n_train, "the merged train rows");
  HALO_ALLOC(s->valid, s->n_valid, "the merged validation rows");
  HALO_ALLOC(s->test, s->n_test, "the merged test rows");
  for (int32_t i = 0, off = 0, a = 0, b = 0, c = 0; i < count;
       off += (int32_t)in[i]->n_owned, i++) {
    for (int64_t k = 0; k < in[i]->n_train; k++) s->train[a++] = off + in[i]->train[k];
    for (int64_t k = 0; k < in[i]->n_valid; k++) s->valid[b++] = off + in[i]->valid[k];
    for (int64_t k = 0; k < in[i]->n_test; k++) s->test[c++] = off + in[i]->test[k];
  }

  /* Send lists: to group q, the rows any part here sends to any part of q,
   * once each, ascending global id, as q's halo range from here expects. */
  HALO_ALLOC(s->send_ptr, groups + 1, "the merged send offsets");
  HALO_ALLOC(s->send_idx, n_send, "the merged send rows");
  HALO_ALLOC(send, n_send, "the send candidates");
  int64_t sent = 0;
  for (int32_t q = 0; q < groups; q++) {
    int64_t n = 0;
    for (int32_t i = 0, off = 0; q != group && i < count; off += (int32_t)in[i]->n_owned, i++)
      for (int32_t r = 0; r < parts; r++) {
        if (group_of[r] != q) continue;
        for (int64_t k = in[i]->send_ptr[r]; k < in[i]->send_ptr[r + 1]; k++) {
          const int32_t local = in[i]->send_idx[k];
          send[n++] = (id_pair){.gid = in[i]->global_id[local], .row = off + local};
        }
      }
    qsort(send, (size_t)n, sizeof *send, cmp_pair);
    for (int64_t k = 0; k < n; k++)
      if (k == 0 || send[k].gid != send[k - 1].gid) s->send_idx[sent++] = (int32_t)send[k].row;
    s->send_ptr[q + 1] = sent;
  }
  *out = s;
  s = NULL;
done:
  if (map)
    for (int32_t i = 0; i < count; i++) free(map[i]);
  free(map);
  free(wrow);
  free(send);
  free(halo);
  free(owned);
  halo_shard_destroy(&s);
  return st;
}
