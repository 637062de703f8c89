/* Graphs from NumPy arrays: node features, labels and edge arrays, and the
 * .npy edge list (--input E.npy, format "npy").
 *
 * An edge array is E x 2 or 2 x E (PyG's edge_index); a 2 x 2 array is
 * read as edge_index, two edges (row 0 sources, row 1 destinations).  Its
 * ids are node ids 0..N-1, kept as they are; N is the largest id + 1, or
 * more (halo_load_options' nodes and min_nodes).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load-impl.h"

/* Fails with "NAME: byte B: ..." for element `e` (in the file's order). */
#define ELEM_FAIL(a, e, code, ...) \
  LOAD_FAIL_BYTE((a)->name, (a)->data_at + (e) * (a)->item, (code), __VA_ARGS__)

/* Element e's (row, column). */
static void position(const load_npy *a, int64_t e, int64_t *r, int64_t *c) {
  if (a->fortran) {
    *r = a->rows ? e % a->rows : 0;
    *c = a->rows ? e / a->rows : 0;
  } else {
    *r = e / a->cols;
    *c = e % a->cols;
  }
}

/* ---- Features ----------------------------------------------------------- */

typedef struct feat_ctx {
  const load_npy *a;
  float *x;
} feat_ctx;

static halo_status put_features(void *ctx, int64_t first, int64_t count, const void *vals) {
  halo_status st = HALO_OK;
  const feat_ctx *f = ctx;
  const load_npy *a = f->a;
  const float *v = vals;
  if (!a->fortran) { /* the common case: rows as they are, checked in one pass */
    int finite = 1;
    for (int64_t k = 0; k < count; k++) finite &= isfinite(v[k]) != 0;
    if (finite) {
      memcpy(f->x + first, v, (size_t)count * sizeof *v);
      return HALO_OK;
    }
  }
  for (int64_t k = 0; k < count; k++) {
    int64_t r, c;
    position(a, first + k, &r, &c);
    if (!isfinite(v[k]))
      ELEM_FAIL(a, first + k, HALO_ERR_RANGE,
                "feature %" PRId64 " of row %" PRId64 " is %s: NaN and Inf are not allowed", c,
                r, isnan(v[k]) ? "NaN" : "Inf (or beyond float32)");
    f->x[(size_t)r * (size_t)a->cols + (size_t)c] = v[k];
  }
done:
  return st;
}

halo_status load_npy_features(halo_graph *g, load_npy *a) {
  halo_status st = HALO_OK;
  float *x = NULL;
  if (a->ndim == 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": a scalar, not an N x F array of features",
              a->name, a->data_at);
  if (a->rows != g->n)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": %" PRId64 " feature rows, but the graph has %" PRId64
              " nodes",
              a->name, a->data_at, a->rows, g->n);
  if (a->cols > INT32_MAX || a->cols == 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": %" PRId64 " features a row", a->name,
              a->data_at, a->cols);
  if ((double)a->rows * (double)a->cols * 4.0 > (double)SIZE_MAX / 2)
    HALO_FAIL(HALO_ERR_NOMEM, "%s: %" PRId64 " x %" PRId64 " features exceed the address space",
              a->name, a->rows, a->cols);
  HALO_ALLOC(x, (size_t)a->rows * (size_t)a->cols, "node features");
  feat_ctx f = {.a = a, .x = x};
  HALO_TRY(load_npy_stream(a, LOAD_NPY_F32, put_features, &f));
  free(g->x);
  g->x = x;
  g->features = (int32_t)a->cols;
  x = NULL;
done:
  free(x);
  return st;
}

/* ---- Labels ------------------------------------------------------------- */

typedef struct label_ctx {
  const load_npy *a;
  int32_t *labels; /* one label a node, or NULL */
  int8_t *targets; /* multi-label rows, or NULL */
  int32_t max_label;
  int64_t max_row; /* the row of max_label's first occurrence (-1: none) */
} label_ctx;

/* Element e (row r, column c; stored at row `at` of l's arrays) of a
 * labels array. */
static halo_status label_entry(label_ctx *l, int64_t e, int64_t at, int64_t r, int64_t c,
                               double x) {
  halo_status st = HALO_OK;
  const load_npy *a = l->a;
  if (l->targets) {
    int8_t t = -1;
    if (x == 0 || x == 1)
      t = (int8_t)x;
    else if (!isnan(x) && x != -1)
      ELEM_FAIL(a, e, HALO_ERR_RANGE,
                "task %" PRId64 " of row %" PRId64
                " is %g: a multi-label entry is 0, 1, or -1/NaN (missing)",
                c, r, x);
    l->targets[(size_t)at * (size_t)a->cols + (size_t)c] = t;
    goto done;
  }
  if (isnan(x)) {
    l->labels[at] = -1;
    goto done;
  }
  if (x != floor(x))
    ELEM_FAIL(a, e, HALO_ERR_RANGE, "label of row %" PRId64 " is %g, not an integer", r, x);
  if (x < -1 || x >= INT32_MAX)
    ELEM_FAIL(a, e, HALO_ERR_RANGE,
              "label of row %" PRId64 " is %.0f: out of range (-1 for unlabelled, else 0 or more)",
              r, x);
  l->labels[at] = (int32_t)x;
  if (l->labels[at] > l->max_label) {
    l->max_label = l->labels[at];
    l->max_row = r;
  }
done:
  return st;
}

static halo_status put_labels(void *ctx, int64_t first, int64_t count, const void *vals) {
  halo_status st = HALO_OK;
  label_ctx *l = ctx;
  const double *v = vals;
  for (int64_t k = 0; k < count; k++) {
    int64_t r, c;
    position(l->a, first + k, &r, &c);
    HALO_TRY(label_entry(l, first + k, r, r, c, v[k]));
  }
done:
  return st;
}

/* --classes against an N x T array of T > 1 tasks, at its first byte. */
static halo_status check_tasks(const load_npy *a, int32_t classes) {
  halo_status st = HALO_OK;
  if (a->cols > 1 && classes > 0 && classes != a->cols)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": --classes %" PRId32 ": the array has %" PRId64
              " columns, a multi-label array of %" PRId64
              " tasks (--classes counts the classes of one label a row)",
              a->name, a->data_at, classes, a->cols, a->cols);
done:
  return st;
}

halo_status load_npy_labels(halo_graph *g, load_npy *a, int32_t classes) {
  halo_status st = HALO_OK;
  label_ctx l = {.a = a, .max_label = -1, .max_row = -1};
  int32_t made = 0;
  if (a->ndim == 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": a scalar, not N labels", a->name, a->data_at);
  if (a->rows != g->n)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": %" PRId64 " labels, but the graph has %" PRId64 " nodes",
              a->name, a->data_at, a->rows, g->n);
  HALO_TRY(check_tasks(a, classes));
  if (a->cols > 1) {
    if (a->cols > INT32_MAX)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: %" PRId64 " tasks a row", a->name, a->cols);
    HALO_ALLOC(l.targets, (size_t)a->rows * (size_t)a->cols, "node targets");
  } else {
    HALO_ALLOC(l.labels, a->rows, "node labels");
  }
  HALO_TRY(load_npy_stream(a, LOAD_NPY_F64, put_labels, &l));
  if (l.labels) {
    char where[HALO_OGB_PATH + 320];
    int64_t distinct = 0;
    halo_load_label_where(where, sizeof where, a->name, 1, l.max_row);
    HALO_TRY(halo_load_label_distinct(l.labels, a->rows, l.max_label, &distinct));
    HALO_TRY(halo_load_check_classes(where, l.max_label, distinct, classes, &made));
  }
  free(g->labels);
  free(g->targets);
  g->labels = NULL;
  g->targets = NULL;
  g->multilabel = l.targets != NULL;
  if (l.targets) {
    g->classes = (int32_t)a->cols;
    g->targets = l.targets;
    l.targets = NULL;
  } else {
    g->classes = made;
    if (g->classes > 0) {
      g->labels = l.labels;
      l.labels = NULL;
    }
  }
done:
  free(l.labels);
  free(l.targets);
  return st;
}

/* ---- Edges -------------------------------------------------------------- */

int load_npy_edge_count(const load_npy *a, int64_t *edges) {
  if (a->ndim != 2) return 0;
  if (a->rows == 2) { /* edge_index, 2 x 2 included */
    *edges = a->cols;
    return 1;
  }
  if (a->cols == 2) {
    *edges = a->rows;
    return 1;
  }
  return 0;
}

typedef struct edge_ctx {
  const load_npy *a;
  int64_t n;
  int transposed; /* 2 x E */
  uint64_t *pair;
  int64_t max_id;
} edge_ctx;

static halo_status put_edges(void *ctx, int64_t first, int64_t count, const void *vals) {
  halo_status st = HALO_OK;
  edge_ctx *e = ctx;
  const load_npy *a = e->a;
  const int64_t *v = vals;
  const int64_t limit = e->n >= 0 ? e->n : (int64_t)1 << 32;
  int64_t r, c;
  position(a, first, &r, &c);
  for (int64_t k = 0; k < count; k++) {
    if (k > 0) { /* the next element's place, without a division */
      if (a->fortran) {
        if (++r == a->rows) r = 0, c++;
      } else if (++c == a->cols) {
        c = 0, r++;
      }
    }
    const int64_t id = v[k];
    if (id < 0 || id >= limit) {
      if (e->n >= 0)
        ELEM_FAIL(a, first + k, HALO_ERR_RANGE,
                  "node id %" PRId64 " (row %" PRId64 ", column %" PRId64
                  ") is out of range [0, %" PRId64 ")",
                  id, r, c, e->n);
      ELEM_FAIL(a, first + k, id < 0 ? HALO_ERR_RANGE : HALO_ERR_LIMIT,
                "node id %" PRId64 " (row %" PRId64 ", column %" PRId64 ") is %s", id, r, c,
                id < 0 ? "negative" : "2^32 or more, beyond the loaders' limit");
    }
    const int64_t edge = e->transposed ? c : r, end = e->transposed ? r : c;
    e->pair[edge] |= (uint64_t)id << (end == 0 ? 32 : 0);
    if (id > e->max_id) e->max_id = id;
  }
done:
  return st;
}

halo_status load_npy_edges(load_npy *a, int64_t n, load_edges *e, int64_t *max_id) {
  halo_status st = HALO_OK;
  int64_t m = 0;
  if (a->kind == 'f' || a->kind == 'b')
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": dtype '%s': node ids must be integers",
              a->name, a->data_at, a->descr);
  if (!load_npy_edge_count(a, &m))
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: byte %" PRId64 ": shape (%" PRId64 ", %" PRId64 ") is not an edge list: "
              "expected E x 2 or 2 x E (edge_index)",
              a->name, a->data_at, a->rows, a->ndim == 2 ? a->cols : 0);
  e->narrow = 1; /* ids below 2^32 */
  HALO_TRY(load_edges_reserve(e, m > 0 ? m : 1));
  memset(e->pair, 0, (size_t)(m > 0 ? m : 1) * sizeof *e->pair);
  edge_ctx c = {.a = a, .n = n, .transposed = a->rows == 2, .pair = (uint64_t *)e->pair,
                .max_id = -1};
  HALO_TRY(load_npy_stream(a, LOAD_NPY_I64, put_edges, &c));
  e->count = m;
  *max_id = c.max_id;
done:
  return st;
}

/* ---- The .npy edge list ------------------------------------------------- */

/* --edge-weights W.npy: E weights (a vector, E x 1 or 1 x E) for the E
 * edges of the edge array, in its order, each checked by
 * load_check_weight at its byte; its bytes continue the digest. */
static halo_status read_npy_weights(const char *path, int64_t m, halo_digest_chunked *digest,
                                    load_weights *w) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  HALO_TRY(load_npy_open(&a, path, digest));
  if ((a.rows != 1 && a.cols != 1) || a.rows * a.cols != m) {
    char shape[64];
    if (a.ndim == 2)
      snprintf(shape, sizeof shape, "(%" PRId64 ", %" PRId64 ")", a.rows, a.cols);
    else
      snprintf(shape, sizeof shape, "(%" PRId64 ",)", a.rows * a.cols);
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: byte %" PRId64 ": shape %s does not hold one weight for each of the %" PRId64
              " edges (expected a vector of %" PRId64 ")",
              path, a.data_at, shape, m, m);
  }
  HALO_ALLOC(w->w, m > 0 ? m : 1, "edge weights");
  w->cap = m > 0 ? m : 1;
  HALO_TRY(load_npy_read_all(&a, LOAD_NPY_F32, w->w));
  w->count = m;
  for (int64_t k = 0; k < m; k++) {
    char where[HALO_OGB_PATH + 64], token[32];
    snprintf(where, sizeof where, "%s: byte %" PRId64, path, a.data_at + k * a.item);
    snprintf(token, sizeof token, "%g", (double)w->w[k]);
    if (load_check_weight(where, w->w[k], token) < 0) {
      st = HALO_ERR_RANGE;
      goto done;
    }
  }
done:
  load_npy_close(&a);
  return st;
}

halo_status load_npy_edgelist(const char *path, const halo_load_options *opt, halo_graph **out) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  load_edges e = {0};
  load_weights w = {.path = opt->edge_weights};
  halo_graph *g = NULL;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  *out = NULL;
  HALO_TRY(load_npy_open(&a, path, &digest));
  int64_t m = 0, max_id = -1;
  if (load_npy_edge_count(&a, &m)) HALO_TRY(load_check_memory(path, 0, 0, m));
  e.path = path;
  HALO_TRY(load_npy_edges(&a, opt->nodes > 0 ? opt->nodes : -1, &e, &max_id));
  int64_t n = opt->nodes > 0 ? opt->nodes : max_id + 1;
  if (opt->nodes <= 0 && opt->min_nodes > n) n = opt->min_nodes;
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " nodes exceed the loaders' limit of 2^32", path, n);
  if (opt->max_nodes > 0 && n > opt->max_nodes)
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %" PRId64 " nodes exceed the limit of %" PRId64, path, n,
              opt->max_nodes);
  /* The row offsets of N nodes, which one large id can make most of the graph. */
  HALO_TRY(load_check_memory(path, 0, n, e.count));
  HALO_TRY(load_graph_create(path, n, &g));
  if (opt->edge_weights) {
    HALO_TRY(read_npy_weights(opt->edge_weights, e.count, &digest, &w));
    HALO_TRY(load_edges_to_csr_weighted(&e, &w, g));
  } else {
    HALO_TRY(load_edges_to_csr(&e, g));
  }
  load_set_source(g, path);
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  load_npy_close(&a);
  load_edges_free(&e);
  load_weights_free(&w);
  halo_graph_destroy(&g);
  return st;
}

halo_status halo_load_npy_rows(const char *path, int64_t *rows) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  *rows = 0;
  if (!path || !load_npy_is_npy(path)) goto done;
  HALO_TRY(load_npy_open(&a, path, NULL));
  *rows = a.rows;
done:
  load_npy_close(&a);
  return st;
}

/* ---- Slices (the distributed partitioner) ------------------------------ */

/* Elements [e0, e0 + count) in the file's order, by pread, as int64. */
halo_status load_npy_read_elements(load_npy *a, int64_t e0, int64_t count, int64_t *out) {
  halo_status st = HALO_OK;
  unsigned char *raw = NULL;
  enum { BLOCK = 1 << 16 };
  HALO_ALLOC(raw, (size_t)BLOCK * 8, "npy block");
  for (int64_t k = 0; k < count; k += BLOCK) {
    const int64_t c = count - k < BLOCK ? count - k : BLOCK;
    HALO_TRY(load_src_pread(&a->src, a->data_at + (e0 + k) * a->item, (size_t)c * (size_t)a->item,
                            raw));
    load_npy_convert(a, raw, c, LOAD_NPY_I64, out + k);
  }
done:
  free(raw);
  return st;
}

halo_status load_npy_edge_slice(load_npy *ap, int64_t n, int64_t slice, int64_t slices,
                                halo_edge_slice *out) {
  halo_status st = HALO_OK;
  int64_t *run = NULL;
  load_npy *a = ap;
  const char *path = a->name;
  const int64_t limit = n >= 0 ? n : (int64_t)1 << 32;
  int64_t m = 0;
  if (a->kind == 'f' || a->kind == 'b')
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": dtype '%s': node ids must be integers",
              path, a->data_at, a->descr);
  if (!load_npy_edge_count(a, &m))
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: byte %" PRId64 ": shape (%" PRId64 ", %" PRId64 ") is not an edge list: "
              "expected E x 2 or 2 x E (edge_index)",
              path, a->data_at, a->rows, a->ndim == 2 ? a->cols : 0);
  const int64_t lo = (int64_t)((double)m * (double)slice / (double)slices);
  const int64_t hi = slice + 1 == slices ? m : (int64_t)((double)m * (double)(slice + 1) / (double)slices);
  const int64_t count = hi - lo;
  HALO_ALLOC(out->pair, (size_t)(2 * count + 1), "edge slice");
  /* E x 2 in C order (or 2 x E in Fortran order) holds each edge's ids
   * side by side; the other two hold a run of sources, then of
   * destinations. */
  const int pairs = (a->rows == 2) == (a->fortran != 0);
  if (pairs) {
    HALO_TRY(load_npy_read_elements(a, 2 * lo, 2 * count, out->pair));
  } else {
    HALO_ALLOC(run, (size_t)count + 1, "edge slice");
    for (int end = 0; end < 2; end++) {
      HALO_TRY(load_npy_read_elements(a, end * m + lo, count, run));
      for (int64_t k = 0; k < count; k++) out->pair[2 * k + end] = run[k];
    }
  }
  for (int64_t k = 0; k < 2 * count; k++) {
    const int64_t id = out->pair[k], edge = lo + k / 2, end = k % 2;
    if (id >= 0 && id < limit) continue;
    const int64_t e = pairs ? 2 * edge + end : end * m + edge;
    if (n >= 0)
      HALO_FAIL(HALO_ERR_RANGE,
                "%s: byte %" PRId64 ": node id %" PRId64 " (edge %" PRId64
                ") is out of range [0, %" PRId64 ")",
                path, a->data_at + e * a->item, id, edge, n);
    HALO_FAIL(id < 0 ? HALO_ERR_RANGE : HALO_ERR_LIMIT,
              "%s: byte %" PRId64 ": node id %" PRId64 " (edge %" PRId64 ") is %s", path,
              a->data_at + e * a->item, id, edge,
              id < 0 ? "negative" : "2^32 or more, beyond the loaders' limit");
  }
  out->count = count;
done:
  free(run);
  return st;
}

halo_status halo_load_npy_edge_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  const int64_t n = opt && opt->nodes > 0 ? opt->nodes : -1;
  (void)line_base;
  *out = (halo_edge_slice){.nodes = n};
  snprintf(out->source, sizeof out->source, "%s", path);
  HALO_TRY(load_npy_open(&a, path, NULL));
  HALO_TRY(load_npy_edge_slice(&a, n, slice, slices, out));
done:
  load_npy_close(&a);
  return st;
}

halo_status load_npy_node_rows(load_npy *ap, int is_labels, int32_t classes, int64_t nodes,
                               int64_t first, int64_t rows, halo_node_slice *out) {
  halo_status st = HALO_OK;
  load_npy *a = ap;
  const char *path = a->name;
  double *v = NULL;
  *out = (halo_node_slice){.first = first, .rows = rows, .max_label = -1};
  if (a->ndim == 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: byte %" PRId64 ": a scalar, not rows of node data", path,
              a->data_at);
  if (a->rows != nodes)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s: byte %" PRId64 ": %" PRId64 " %s, but the graph has %" PRId64 " nodes", path,
              a->data_at, a->rows, is_labels ? "labels" : "feature rows", nodes);
  if (a->cols == 0 || a->cols > INT32_MAX)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %" PRId64 " columns", path, a->cols);
  if (is_labels) HALO_TRY(check_tasks(a, classes));
  const int64_t cols = a->cols;
  out->width = (int32_t)cols;
  HALO_ALLOC(v, (size_t)(rows * cols + 1), "npy rows");
  HALO_TRY(load_npy_read_rows(a, first, first + rows, LOAD_NPY_F64, v));
  if (!is_labels) {
    HALO_ALLOC(out->x, (size_t)(rows * cols + 1), "feature rows");
    for (int64_t k = 0; k < rows * cols; k++) {
      const int64_t r = first + k / cols, c = k % cols;
      const int64_t e = a->fortran ? c * a->rows + r : r * cols + c;
      const float x = (float)v[k];
      if (!isfinite(x))
        ELEM_FAIL(a, e, HALO_ERR_RANGE,
                  "feature %" PRId64 " of row %" PRId64 " is %s: NaN and Inf are not allowed", c, r,
                  isnan(x) ? "NaN" : "Inf (or beyond float32)");
      out->x[k] = x;
    }
    goto done;
  }
  label_ctx l = {.a = a, .max_label = -1, .max_row = -1};
  if (cols > 1)
    HALO_ALLOC(l.targets, (size_t)(rows * cols + 1), "node targets");
  else
    HALO_ALLOC(l.labels, (size_t)rows + 1, "node labels");
  out->targets = l.targets;
  out->labels = l.labels;
  for (int64_t k = 0; k < rows * cols; k++) {
    const int64_t r = first + k / cols, c = k % cols;
    const int64_t e = a->fortran ? c * a->rows + r : r * cols + c;
    HALO_TRY(label_entry(&l, e, k / cols, r, c, v[k]));
  }
  out->max_label = l.max_label;
  out->max_line = l.max_row + 1;
done:
  if (st != HALO_OK) halo_node_slice_free(out);
  free(v);
  return st;
}

halo_status halo_load_npy_node_rows(const char *path, const halo_load_options *opt, int is_labels,
                                    int64_t nodes, int64_t first, int64_t rows,
                                    halo_node_slice *out) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  *out = (halo_node_slice){.first = first, .rows = rows, .max_label = -1};
  HALO_TRY(load_npy_open(&a, path, NULL));
  HALO_TRY(load_npy_node_rows(&a, is_labels, opt ? opt->classes : 0, nodes, first, rows, out));
done:
  load_npy_close(&a);
  return st;
}
