/* Node data: feature rows, labels and splits from files, or synthesised. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "halo-csr.h"
#include "halo-load.h"
#include "halo-rng.h"
#include "halo-search.h"
#include "load-impl.h"

/* The layout of a node-data file: opt's header mode (NULL: AUTO, as for
 * an OGB folder's files), no comments. */
static halo_status node_layout(const char *path, const halo_load_options *opt, load_text *t) {
  return load_text_layout(path, opt ? opt->header : HALO_HEADER_AUTO, 0, t);
}

/* After a value at *pp: 1 when another follows (its separator skipped), 0
 * at the end of the line, -1 when something else comes (left at *pp). */
static int next_value(const char **pp, char sep) {
  const char *at = *pp, *p = load_skip_blank(at);
  *pp = p;
  if (*p == '\0') return 0;
  if (sep == ',') {
    if (*p != ',') return -1;
    *pp = p + 1;
    return 1;
  }
  return p > at && *p != ',' ? 1 : -1;
}

/* The values of a file's first row, `line`: a blank first row (no values)
 * is refused at its line, since every row must have as many. */
static halo_status first_row_width(const load_reader *r, const char *line, const load_text *t,
                                   int32_t *width) {
  halo_status st = HALO_OK;
  *width = load_text_fields(line, t->sep);
  if (*width < 1)
    LOAD_FAIL(r, HALO_ERR_PARSE, "blank line as the first row: every row needs its values");
done:
  return st;
}

/* "row has N values, expected W as on line L", or what is wrong after
 * value c (0-based) of a row of `width` values whose next_value was `more`. */
static halo_status row_shape(const load_reader *r, const char *line, const char *p, int more,
                             int32_t c, int32_t width, const load_text *t, const char *values) {
  halo_status st = HALO_OK;
  if (more < 0 && *p == ',')
    LOAD_FAIL(r, HALO_ERR_PARSE,
              "unexpected ',' after value %d: line 1 separates values by "
              "spaces or tabs, and a file uses one separator",
              c + 1);
  if (more < 0) LOAD_FAIL(r, HALO_ERR_PARSE, "unexpected '%c' after value %d", *p, c + 1);
  if ((more > 0) != (c + 1 < width))
    LOAD_FAIL(r, HALO_ERR_PARSE, "row has %d %s, expected %d as on line %lld",
              more > 0 ? load_text_fields(line, t->sep) : c + 1, values, width,
              (long long)t->first_row);
done:
  return st;
}

/* One feature row of `width` values into dst. */
static halo_status parse_feature_row(const load_reader *r, const char *line, int32_t width,
                                     const load_text *t, float *dst) {
  halo_status st = HALO_OK;
  const char *p = line;
  for (int32_t c = 0; c < width; c++) {
    p = load_skip_blank(p);
    const char *tok = p;
    if (load_scan_f32(&p, &dst[c]) != LOAD_SCAN_OK) LOAD_FAIL_TOKEN(r, tok, "a number");
    if (!isfinite(dst[c]))
      LOAD_FAIL(r, HALO_ERR_RANGE, "feature %d is '%.*s': NaN and Inf are not allowed", c + 1,
                (int)(p - tok), tok);
    const int more = next_value(&p, t->sep);
    if (more < 0 || (more > 0) != (c + 1 < width))
      HALO_TRY(row_shape(r, line, p, more, c, width, t, "values"));
  }
done:
  return st;
}

/* A row past the graph's n nodes, at its line; `hint`: the file is the
 * user's (--features, --labels), whose graph may be an edge list that
 * names only the nodes of its edges. */
static halo_status too_many_rows(const load_reader *r, const char *what, int64_t n, int hint) {
  halo_status st = HALO_OK;
  LOAD_FAIL(r, HALO_ERR_MISMATCH, "more %s than the %lld nodes of the graph%s", what, (long long)n,
            hint ? " (an edge list names only the nodes of its edges: if row v is node v, give "
                   "--nodes N to keep the ids 0..N-1, isolated nodes included, or give an OGB "
                   "folder)"
                 : "");
done:
  return st;
}

/* Feature rows as they arrive: CSR while the density rule (halo_csr_is_smaller
 * over the whole file's n rows) holds, dense from the row that breaks it on.
 * The non-zeros only grow, so once dense the rows stay dense. */
typedef struct feature_rows {
  int64_t n;        /* rows the file must have */
  int32_t width;    /* F */
  int64_t rows;     /* rows appended */
  int64_t *indptr;  /* CSR: size n+1 */
  int32_t *indices; /* CSR: size cap */
  float *values;    /* CSR: size cap */
  int64_t cap;      /* CSR capacity, entries */
  float *x;         /* dense: size n*F, once the CSR stopped paying */
} feature_rows;

static void feature_rows_free(feature_rows *fr) {
  free(fr->indptr);
  free(fr->indices);
  free(fr->values);
  free(fr->x);
  *fr = (feature_rows){0};
}

/* The rows so far into a dense n x F matrix; the CSR is freed. */
static halo_status feature_rows_to_dense(const load_reader *r, feature_rows *fr) {
  halo_status st = HALO_OK;
  const int64_t n = fr->n, F = fr->width;
  if ((uint64_t)n * (uint64_t)F > SIZE_MAX / sizeof(float))
    LOAD_FAIL(r, HALO_ERR_NOMEM, "%lld x %d features exceed the address space", (long long)n,
              fr->width);
  HALO_ALLOC(fr->x, (size_t)n * (size_t)F, "node features");
  for (int64_t v = 0; v < fr->rows; v++)
    for (int64_t k = fr->indptr[v]; k < fr->indptr[v + 1]; k++)
      fr->x[v * F + fr->indices[k]] = fr->values[k];
  free(fr->indptr);
  free(fr->indices);
  free(fr->values);
  fr->indptr = NULL;
  fr->indices = NULL;
  fr->values = NULL;
  fr->cap = 0;
done:
  return st;
}

/* Appends one parsed row (`row`, F values). */
static halo_status feature_rows_append(const load_reader *r, feature_rows *fr, const float *row) {
  halo_status st = HALO_OK;
  const int64_t F = fr->width;
  if (fr->x) {
    memcpy(fr->x + fr->rows * F, row, (size_t)F * sizeof *row);
    fr->rows++;
    goto done;
  }
  int64_t nz = 0;
  for (int64_t j = 0; j < F; j++) nz += row[j] != 0.0f;
  int64_t at = fr->indptr[fr->rows];
  if (!halo_csr_is_smaller(fr->n, F, at + nz)) {
    HALO_TRY(feature_rows_to_dense(r, fr));
    HALO_TRY(feature_rows_append(r, fr, row));
    goto done;
  }
  if (at + nz > fr->cap) {
    int64_t cap = fr->cap < 1024 ? 1024 : fr->cap;
    while (cap < at + nz) cap *= 2;
    int32_t *indices = realloc(fr->indices, (size_t)cap * sizeof *indices);
    if (indices) fr->indices = indices;
    float *values = indices ? realloc(fr->values, (size_t)cap * sizeof *values) : NULL;
    if (values) fr->values = values;
    if (!indices || !values)
      LOAD_FAIL(r, HALO_ERR_NOMEM, "out of memory growing the CSR features to %lld entries",
                (long long)cap);
    fr->cap = cap;
  }
  for (int64_t j = 0; j < F; j++)
    if (row[j] != 0.0f) {
      fr->indices[at] = (int32_t)j;
      fr->values[at++] = row[j];
    }
  fr->indptr[++fr->rows] = at;
done:
  return st;
}

/* Whether a row past the graph's nodes gets too_many_rows' hint. */
static int rows_hint(const halo_load_options *opt) { return opt && opt->nodes == 0; }

/* A text file of feature rows (CSV, or separated by spaces or tabs). */
static halo_status text_features_file(halo_graph *g, const char *path, const halo_load_options *opt,
                                      halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_text t;
  feature_rows fr = {.n = g->n};
  float *row_buf = NULL;
  const int64_t n = g->n;
  HALO_TRY(node_layout(path, opt, &t));
  HALO_TRY(load_reader_open(&r, path, digest));

  char *line;
  size_t len;
  int got;
  while ((got = load_text_next(&r, &t, &line, &len)) > 0) {
    if (fr.rows == 0) {
      HALO_TRY(first_row_width(&r, line, &t, &fr.width));
      HALO_ALLOC(row_buf, fr.width, "a feature row");
      HALO_ALLOC(fr.indptr, n + 1, "CSR feature offsets");
    }
    if (fr.rows >= n) HALO_TRY(too_many_rows(&r, "feature rows", n, rows_hint(opt)));
    HALO_TRY(parse_feature_row(&r, line, fr.width, &t, row_buf));
    HALO_TRY(feature_rows_append(&r, &fr, row_buf));
  }
  if (got < 0) HALO_TRY(got);
  if (fr.rows != n)
    LOAD_FAIL(&r, HALO_ERR_MISMATCH, "%lld feature rows, but the graph has %lld nodes",
              (long long)fr.rows, (long long)n);
  HALO_TRY(load_reader_close(&r));
  if (fr.x) {
    halo_graph_features_free(g);
    g->x = fr.x;
    g->features = fr.width;
    fr.x = NULL;
  } else if (fr.indptr) {
    /* Taken over by g; the arrays are trimmed to what they hold. */
    const int64_t nnz = fr.indptr[n];
    int32_t *indices = realloc(fr.indices, (size_t)(nnz ? nnz : 1) * sizeof *indices);
    if (indices) fr.indices = indices;
    float *values = realloc(fr.values, (size_t)(nnz ? nnz : 1) * sizeof *values);
    if (values) fr.values = values;
    if (!fr.indices) HALO_ALLOC(fr.indices, 1, "CSR feature columns");
    if (!fr.values) HALO_ALLOC(fr.values, 1, "CSR feature values");
    st = halo_graph_set_features_csr(g, fr.width, fr.indptr, fr.indices, fr.values);
    fr.indptr = NULL;
    fr.indices = NULL;
    fr.values = NULL;
    HALO_TRY(st);
  } else {
    halo_graph_features_free(g); /* an empty file on an empty graph */
  }
done:
  load_reader_close(&r);
  feature_rows_free(&fr);
  free(row_buf);
  return st;
}

/* One label token: an integer, an integral float ("3.0"), or "nan" for an
 * unlabelled node (as in ogbn-papers100M), which becomes -1. */
static halo_status parse_label(const load_reader *r, const char *p, const load_text *t,
                               int32_t classes, int32_t *label) {
  halo_status st = HALO_OK;
  p = load_skip_blank(p);
  const char *tok = p;
  int64_t v = 0;
  int rc = load_scan_i64(&p, &v);
  if (rc == LOAD_SCAN_BAD) {
    float f;
    p = tok;
    if (load_scan_f32(&p, &f) != LOAD_SCAN_OK) LOAD_FAIL_TOKEN(r, tok, "a class label");
    if (isnan(f)) {
      v = -1;
    } else if (isfinite(f) && f == floorf(f) && fabsf(f) < 2e9f) {
      v = (int64_t)f;
    } else {
      LOAD_FAIL_TOKEN(r, tok, "an integer class label");
    }
  }
  if (rc == LOAD_SCAN_RANGE || v < -1 || v >= INT32_MAX)
    LOAD_FAIL(r, HALO_ERR_RANGE, "label %.*s is out of range (-1 for unlabelled, else 0 or more)",
              (int)(p - tok), tok);
  if (classes > 0 && v >= classes)
    LOAD_FAIL(r, HALO_ERR_RANGE,
              "label %lld is out of range for --classes %d (labels 0..%d, -1 or nan for "
              "unlabelled)",
              (long long)v, classes, classes - 1);
  p = load_skip_blank(p);
  if (*p != '\0')
    LOAD_FAIL(r, HALO_ERR_PARSE,
              "expected 1 label per line as on line %lld, found %d columns (a file whose first "
              "row has several columns is read as multi-label)",
              (long long)t->first_row, load_text_fields(tok, t->sep));
  *label = (int32_t)v;
done:
  return st;
}

/* One entry of a multi-label row at *pp: 0 or 1 (also "0.0", "1.0"), or
 * -1 or "nan" for a missing entry (as in OGB's multi-task files), which
 * becomes -1.  Leaves *pp after the token. */
static halo_status parse_target(const load_reader *r, const char **pp, int32_t column, char sep,
                                int8_t *out) {
  halo_status st = HALO_OK;
  const char *p = load_skip_blank(*pp), *tok = p;
  float f;
  if (load_scan_f32(&p, &f) != LOAD_SCAN_OK)
    LOAD_FAIL(r, HALO_ERR_PARSE, "task %d: expected 0, 1 or nan (missing), found '%.*s'",
              column + 1, (int)strcspn(tok, sep == ',' ? "," : " \t"), tok);
  if (isnan(f) || f == -1.0f) {
    *out = -1;
  } else if (f == 0.0f || f == 1.0f) {
    *out = (int8_t)f;
  } else {
    LOAD_FAIL(r, HALO_ERR_RANGE,
              "task %d is '%.*s': a multi-label entry is 0, 1, or -1/nan for missing", column + 1,
              (int)(p - tok), tok);
  }
  *pp = p;
done:
  return st;
}

/* One row of `width` multi-label entries (parse_target). */
static halo_status parse_target_row(const load_reader *r, const char *line, int32_t width,
                                    const load_text *t, int8_t *out) {
  halo_status st = HALO_OK;
  const char *p = line;
  for (int32_t c = 0; c < width; c++) {
    HALO_TRY(parse_target(r, &p, c, t->sep, &out[c]));
    const int more = next_value(&p, t->sep);
    if (more < 0 || (more > 0) != (c + 1 < width))
      HALO_TRY(row_shape(r, line, p, more, c, width, t, "labels"));
  }
done:
  return st;
}

/* The rest of a multi-label file whose first row has `width` columns: one
 * row of `width` entries per node (parse_target). */
static halo_status read_targets(load_reader *r, const load_text *text, char *line, int64_t n,
                                int32_t width, int hint, int8_t **out) {
  halo_status st = HALO_OK;
  int8_t *t = NULL;
  if ((uint64_t)n * (uint64_t)width > SIZE_MAX)
    LOAD_FAIL(r, HALO_ERR_NOMEM, "%lld x %d label entries exceed the address space", (long long)n,
              width);
  HALO_ALLOC(t, (size_t)n * (size_t)width, "node labels (multi-label)");
  int64_t row = 0;
  size_t len;
  int got = 1;
  for (; got > 0; got = load_text_next(r, text, &line, &len)) {
    if (row >= n) HALO_TRY(too_many_rows(r, "label rows", n, hint));
    HALO_TRY(parse_target_row(r, line, width, text, &t[(size_t)row * (size_t)width]));
    row++;
  }
  if (got < 0) HALO_TRY(got);
  if (row != n)
    LOAD_FAIL(r, HALO_ERR_MISMATCH, "%lld label rows, but the graph has %lld nodes",
              (long long)row, (long long)n);
  *out = t;
  t = NULL;
done:
  free(t);
  return st;
}

/* A text file of labels: one a line, or rows of binary tasks. */
static halo_status text_labels_file(halo_graph *g, const char *path, const halo_load_options *opt,
                                    halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_text t;
  int32_t *labels = NULL;
  int8_t *targets = NULL;
  const int64_t n = g->n;
  const int32_t classes = opt ? opt->classes : 0;
  HALO_TRY(node_layout(path, opt, &t));
  HALO_TRY(load_reader_open(&r, path, digest));

  char *line;
  size_t len;
  int got = load_text_next(&r, &t, &line, &len);
  int32_t width = got > 0 ? load_text_fields(line, t.sep) : 1;
  if (width > 1) {
    /* Several columns: one binary task each (ogbn-proteins' 112). */
    if (classes > 0 && classes != width)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH,
                "--classes %d: the first row has %d columns, a multi-label file of %d tasks "
                "(--classes counts the classes of one label a row)",
                classes, width, width);
    HALO_TRY(read_targets(&r, &t, line, n, width, rows_hint(opt), &targets));
  } else {
    HALO_ALLOC(labels, n, "node labels");
    int64_t row = 0, max_line = 0, distinct = 0;
    int32_t max_label = -1;
    for (; got > 0; got = load_text_next(&r, &t, &line, &len)) {
      if (row >= n) HALO_TRY(too_many_rows(&r, "labels", n, rows_hint(opt)));
      HALO_TRY(parse_label(&r, line, &t, classes, &labels[row]));
      if (labels[row] > max_label) {
        max_label = labels[row];
        max_line = r.line;
      }
      row++;
    }
    if (got < 0) HALO_TRY(got);
    if (row != n)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH, "%lld labels, but the graph has %lld nodes", (long long)row,
                (long long)n);
    char where[HALO_OGB_PATH + 32];
    halo_load_label_where(where, sizeof where, path, 0, max_line);
    HALO_TRY(halo_load_label_distinct(labels, n, max_label, &distinct));
    HALO_TRY(halo_load_check_classes(where, max_label, distinct, classes, &width));
  }
  HALO_TRY(load_reader_close(&r));
  free(g->labels);
  free(g->targets);
  g->labels = NULL;
  g->targets = NULL;
  g->multilabel = targets != NULL;
  g->classes = width;
  if (targets) {
    g->targets = targets;
    targets = NULL;
  } else if (g->classes > 0) {
    g->labels = labels;
    labels = NULL;
  }
done:
  load_reader_close(&r);
  free(labels);
  free(targets);
  return st;
}

/* A .npy file of node data (load-npy-data.c), its bytes into digest. */
static halo_status npy_node_file(halo_graph *g, const char *path, const halo_load_options *opt,
                                 halo_digest_chunked *digest, int is_labels) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  HALO_TRY(load_npy_open(&a, path, digest));
  HALO_TRY(is_labels ? load_npy_labels(g, &a, opt ? opt->classes : 0) : load_npy_features(g, &a));
done:
  load_npy_close(&a);
  return st;
}

halo_status load_features_file(halo_graph *g, const char *path, const halo_load_options *opt,
                               halo_digest_chunked *digest) {
  return load_npy_is_npy(path) ? npy_node_file(g, path, opt, digest, 0)
                               : text_features_file(g, path, opt, digest);
}

halo_status load_labels_file(halo_graph *g, const char *path, const halo_load_options *opt,
                             halo_digest_chunked *digest) {
  return load_npy_is_npy(path) ? npy_node_file(g, path, opt, digest, 1)
                               : text_labels_file(g, path, opt, digest);
}

/* Whether node v has a label: a class, or at least one task that is not
 * missing. */
static int has_label(const halo_graph *g, int64_t v) {
  if (g->labels) return g->labels[v] >= 0;
  if (!g->targets) return 1;
  for (int32_t t = 0; t < g->classes; t++)
    if (g->targets[(size_t)v * (size_t)g->classes + (size_t)t] >= 0) return 1;
  return 0;
}

static const char *const SPLIT_NAMES[4] = {"no", "train", "valid", "test"};

/* The split files into split[v - begin] for the nodes v of [begin, begin +
 * rows): every line is parsed and range-checked, the label and repeat
 * checks apply to the nodes of the range.  Labels from g (a whole graph,
 * whose original ids the files may name), else from labels[v - begin] (-1:
 * none), else every node is labelled. */
/* The split files' ids, as the nodes of one range of rows. */
typedef struct split_scan {
  int64_t n, begin, rows;
  const halo_graph *g;     /* a whole graph (labels, original ids), or NULL */
  const int32_t *labels;   /* without g: rows labels (-1: none), or NULL (all labelled) */
  const int64_t *original; /* the rows' input ids (ascending), or NULL: the files name nodes */
  int64_t original_lo, original_hi; /* the input ids this range answers for */
  const char *source;      /* the input, for messages */
  int multilabel;          /* without g: for messages */
} split_scan;

static halo_status scan_splits(const char *const paths[3], halo_digest_chunked *digest,
                               const split_scan *sc, uint8_t *split, int64_t *where) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int file = 0;
  const int64_t n = sc->n, begin = sc->begin, rows = sc->rows;
  const halo_graph *g = sc->g;
  const int32_t *labels = sc->labels;
  const int64_t *original = sc->original;
  for (int s = 0; s < 3; s++) {
    if (!paths[s]) continue;
    const uint8_t which = (uint8_t)(HALO_SPLIT_TRAIN + s);
    file = s;
    HALO_TRY(load_reader_open(&r, paths[s], digest));
    char *line;
    size_t len;
    int got;
    while ((got = load_reader_next(&r, &line, &len)) > 0) {
      const char *p = load_skip_blank(line);
      const char *tok = p;
      int64_t id = 0;
      int rc = load_scan_i64(&p, &id);
      if (rc == LOAD_SCAN_BAD || *p == ',') {
        if (*p == ',')
          LOAD_FAIL(&r, HALO_ERR_PARSE, "expected 1 node id per line, found %d columns",
                    load_text_fields(tok, ','));
        LOAD_FAIL_TOKEN(&r, tok, "a node id");
      }
      if (*load_skip_blank(p) != '\0') LOAD_FAIL(&r, HALO_ERR_PARSE, "expected 1 node id per line");
      const int64_t named = id;
      if (original) {
        /* A renumbered input: the file names the input's ids. */
        if (rc == LOAD_SCAN_OK && (named < sc->original_lo || named >= sc->original_hi)) continue;
        const int64_t *at = rc == LOAD_SCAN_OK ? bsearch(&named, original, (size_t)(g ? n : rows),
                                                         sizeof named, halo_compare_i64)
                                               : NULL;
        if (!at)
          LOAD_FAIL(&r, HALO_ERR_RANGE,
                    "node id %.*s is not a node of %s (no edge names it; ids here are those of "
                    "the input file)",
                    (int)(p - tok), tok, sc->source);
        id = (at - original) + (g ? 0 : begin);
      } else if (rc == LOAD_SCAN_RANGE || id < 0 || id >= n) {
        LOAD_FAIL(&r, HALO_ERR_RANGE, "node id %.*s is out of range [0, %lld)", (int)(p - tok), tok,
                  (long long)n);
      }
      if (id < begin || id >= begin + rows) continue;
      const int labelled = g ? has_label(g, id) : labels ? labels[id - begin] >= 0 : 1;
      if (!labelled)
        LOAD_FAIL(&r, HALO_ERR_RANGE,
                  "node %lld is in the %s split but has no label (-1 or nan in the labels%s)",
                  (long long)named, SPLIT_NAMES[which],
                  (g ? g->multilabel : sc->multilabel) ? ", in every task" : "");
      uint8_t *at = &split[id - begin];
      if (*at == which)
        LOAD_FAIL(&r, HALO_ERR_PARSE, "node %lld is repeated in the %s split", (long long)named,
                  SPLIT_NAMES[which]);
      if (*at != HALO_SPLIT_NONE)
        LOAD_FAIL(&r, HALO_ERR_PARSE, "node %lld is repeated: it is already in the %s split",
                  (long long)named, SPLIT_NAMES[*at]);
      *at = which;
    }
    if (got < 0) HALO_TRY(got);
    HALO_TRY(load_reader_close(&r));
  }
done:
  if (st != HALO_OK && where) *where = ((int64_t)file << 40) + r.line_base + r.line;
  load_reader_close(&r);
  return st;
}

halo_status load_split_files(halo_graph *g, const char *const paths[3], halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  uint8_t *split = NULL;
  HALO_ALLOC(split, g->n, "node split");
  const split_scan sc = {.n = g->n,
                         .rows = g->n,
                         .g = g,
                         .original = g->original_id,
                         .original_lo = INT64_MIN,
                         .original_hi = INT64_MAX,
                         .source = g->source};
  HALO_TRY(scan_splits(paths, digest, &sc, split, NULL));
  free(g->split);
  g->split = split;
  split = NULL;
done:
  free(split);
  return st;
}

halo_status halo_load_split_block(const char *const paths[3], const halo_split_block *b,
                                  uint8_t *split, halo_digest_chunked *digest, int64_t *where) {
  memset(split, HALO_SPLIT_NONE, (size_t)b->rows);
  const split_scan sc = {.n = b->nodes,
                         .begin = b->begin,
                         .rows = b->rows,
                         .labels = b->labels,
                         .original = b->original,
                         .original_lo = b->original_lo,
                         .original_hi = b->original_hi,
                         .source = b->source,
                         .multilabel = b->multilabel};
  return scan_splits(paths, digest, &sc, split, where);
}

halo_status halo_load_node_data(halo_graph *g, const char *feat_path, const char *label_path) {
  return halo_load_node_data_opts(g, feat_path, label_path, NULL);
}

halo_status halo_load_node_data_opts(halo_graph *g, const char *feat_path, const char *label_path,
                                     const halo_load_options *opt) {
  halo_status st = HALO_OK;
  const halo_load_options none = {0};
  if (!g) HALO_FAIL(HALO_ERR_ARG, "halo_load_node_data: no graph");
  if (!opt) opt = &none;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  if (feat_path) HALO_TRY(load_features_file(g, feat_path, opt, &digest));
  if (label_path) HALO_TRY(load_labels_file(g, label_path, opt, &digest));
  /* The node data is part of what was loaded: fold it into the digest. */
  if (feat_path || label_path)
    g->source_digest = halo_rng_mix(g->source_digest ^ halo_digest_chunked_final(&digest));
done:
  return st;
}

/* ---- Synthetic node data ------------------------------------------------ */

int32_t load_synth_class(uint64_t seed, int32_t classes, int64_t u) {
  uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, 1, 0);
  return (int32_t)(halo_rng_bits(key, (uint64_t)u, 0) % (uint64_t)classes);
}

/* Roughly standard normal: the sum of four 16-bit uniforms, centred and
 * scaled to unit variance (Irwin-Hall), from one 64-bit draw. */
static inline float normalish(uint64_t bits) {
  uint32_t sum = (uint32_t)(bits & 0xffff) + (uint32_t)((bits >> 16) & 0xffff) +
                 (uint32_t)((bits >> 32) & 0xffff) + (uint32_t)(bits >> 48);
  return ((float)sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

/* The class means of s: classes x features values in [-1, 1). */
static halo_status synth_means(const halo_node_synth *s, float **out) {
  halo_status st = HALO_OK;
  const int64_t width = s->features;
  float *mean = NULL;
  *out = NULL;
  if (width == 0) goto done;
  HALO_ALLOC(mean, (size_t)s->classes * (size_t)width, "class means");
  const uint64_t mean_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 2, 0);
  for (int64_t c = 0; c < s->classes; c++)
    for (int64_t f = 0; f < width; f++)
      mean[c * width + f] = 2.0f * halo_rng_uniform(mean_key, (uint64_t)c, (uint64_t)f) - 1.0f;
  *out = mean;
done:
  return st;
}

/* Feature f of node u of class c: the class mean plus noise, or with a
 * density a binary word, 1 with probability density · (1 + mean). */
static inline float synth_value(const halo_node_synth *s, const float *mean, int32_t c, int64_t u,
                                int64_t f, uint64_t noise_key) {
  const float m = mean[c * (int64_t)s->features + f];
  const uint64_t bits = halo_rng_bits(noise_key, (uint64_t)u, (uint64_t)f);
  if (s->density > 0.0)
    return (double)(bits >> 11) * 0x1p-53 < s->density * (1.0 + (double)m) ? 1.0f : 0.0f;
  return m + (float)s->noise * normalish(bits);
}

/* Node u's label, split and feature row (x may be NULL when features = 0). */
static inline void synth_node(const halo_node_synth *s, const float *mean, int64_t u, float *x,
                              int32_t *label, uint8_t *split) {
  const uint64_t noise_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 3, 0);
  const uint64_t split_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 4, 0);
  const int64_t width = s->features;
  int32_t c = load_synth_class(s->seed, s->classes, u);
  *label = c;
  double r = halo_rng_uniform_double(split_key, (uint64_t)u, 0);
  *split = r < s->train              ? HALO_SPLIT_TRAIN
           : r < s->train + s->valid ? HALO_SPLIT_VALID
                                     : HALO_SPLIT_TEST;
  for (int64_t f = 0; x && f < width; f++) x[f] = synth_value(s, mean, c, u, f, noise_key);
}

/* Non-zero features of node u. */
static int64_t synth_row_nnz(const halo_node_synth *s, const float *mean, int64_t u) {
  const uint64_t noise_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 3, 0);
  const int32_t c = load_synth_class(s->seed, s->classes, u);
  int64_t nz = 0;
  for (int64_t f = 0; f < s->features; f++) nz += synth_value(s, mean, c, u, f, noise_key) != 0.0f;
  return nz;
}

halo_status halo_node_synth_nnz(const halo_node_synth *s, int64_t first, int64_t count,
                                int64_t *nnz) {
  halo_status st = HALO_OK;
  float *mean = NULL;
  int64_t total = 0;
  HALO_TRY(synth_means(s, &mean));
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t i = 0; i < count; i++) total += s->features ? synth_row_nnz(s, mean, first + i) : 0;
  *nnz = total;
done:
  free(mean);
  return st;
}

/* A bag of words straight into g's CSR: the rows' non-zeros counted, then
 * drawn into place, never an n x F matrix. */
static halo_status synth_csr(halo_graph *g, const halo_node_synth *s, const float *mean) {
  halo_status st = HALO_OK;
  const int64_t n = g->n, F = s->features;
  const uint64_t noise_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 3, 0);
  int64_t *indptr = NULL;
  int32_t *indices = NULL;
  float *values = NULL;
  HALO_ALLOC(indptr, n + 1, "CSR feature offsets");
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++) indptr[u + 1] = synth_row_nnz(s, mean, u);
  for (int64_t u = 0; u < n; u++) indptr[u + 1] += indptr[u];
  HALO_ALLOC(indices, indptr[n], "CSR feature columns");
  HALO_ALLOC(values, indptr[n], "CSR feature values");
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++) {
    const int32_t c = load_synth_class(s->seed, s->classes, u);
    int64_t at = indptr[u];
    for (int64_t f = 0; f < F; f++)
      if (synth_value(s, mean, c, u, f, noise_key) != 0.0f) {
        indices[at] = (int32_t)f;
        values[at++] = 1.0f;
      }
  }
  st = halo_graph_set_features_csr(g, (int32_t)F, indptr, indices, values);
  indptr = NULL;
  indices = NULL;
  values = NULL;
done:
  free(indptr);
  free(indices);
  free(values);
  return st;
}

halo_node_synth halo_node_synth_default(int32_t features, int32_t classes, uint64_t seed) {
  return (halo_node_synth){.features = features,
                           .classes = classes,
                           .noise = 1.0,
                           .train = 0.1,
                           .valid = 0.1,
                           .seed = seed};
}

halo_status halo_node_synth_rows(const halo_node_synth *s, const int64_t *ids, int64_t count,
                                 float *x, int32_t *labels, uint8_t *split) {
  halo_status st = HALO_OK;
  float *mean = NULL;
  HALO_TRY(synth_means(s, &mean));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; i++)
    synth_node(s, mean, ids[i], x ? x + i * s->features : NULL, &labels[i], &split[i]);
done:
  free(mean);
  return st;
}

halo_status halo_node_synth_rows_csr(const halo_node_synth *s, const int64_t *ids, int64_t count,
                                     int64_t **indptr, int32_t **indices, float **values) {
  halo_status st = HALO_OK;
  const int64_t F = s->features;
  const uint64_t noise_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 3, 0);
  float *mean = NULL;
  *indptr = NULL;
  *indices = NULL;
  *values = NULL;
  HALO_TRY(synth_means(s, &mean));
  HALO_ALLOC(*indptr, count + 1, "CSR feature offsets");
  int64_t *ptr = *indptr;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; i++) ptr[i + 1] = F ? synth_row_nnz(s, mean, ids[i]) : 0;
  for (int64_t i = 0; i < count; i++) ptr[i + 1] += ptr[i];
  HALO_ALLOC(*indices, ptr[count], "CSR feature columns");
  HALO_ALLOC(*values, ptr[count], "CSR feature values");
  int32_t *col = *indices;
  float *val = *values;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; i++) {
    const int32_t c = load_synth_class(s->seed, s->classes, ids[i]);
    int64_t at = ptr[i];
    for (int64_t f = 0; f < F; f++) {
      const float v = synth_value(s, mean, c, ids[i], f, noise_key);
      if (v == 0.0f) continue;
      col[at] = (int32_t)f;
      val[at++] = v;
    }
  }
done:
  if (st != HALO_OK) {
    free(*indptr);
    free(*indices);
    free(*values);
    *indptr = NULL;
    *indices = NULL;
    *values = NULL;
  }
  free(mean);
  return st;
}

halo_status load_synth_node_data(halo_graph *g, const halo_node_synth *s) {
  halo_status st = HALO_OK;
  const int64_t n = g->n;
  const int64_t width = s->features;
  int32_t *labels = NULL;
  float *x = NULL, *mean = NULL;
  uint8_t *split = NULL;
  HALO_ALLOC(labels, n, "node labels");
  HALO_ALLOC(split, n, "node split");
  if (width > 0 && s->density <= 0.0) {
    if ((uint64_t)n * (uint64_t)width > SIZE_MAX / sizeof(float))
      HALO_FAIL(HALO_ERR_NOMEM, "%lld x %lld features exceed the address space", (long long)n,
                (long long)width);
    HALO_ALLOC(x, (size_t)n * (size_t)width, "node features");
  }
  HALO_TRY(synth_means(s, &mean));

#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++)
    synth_node(s, mean, u, x ? x + u * width : NULL, &labels[u], &split[u]);

  free(g->labels);
  free(g->targets);
  halo_graph_features_free(g);
  if (width > 0 && s->density > 0.0) HALO_TRY(synth_csr(g, s, mean));
  free(g->split);
  g->targets = NULL;
  g->multilabel = 0;
  g->labels = labels;
  g->x = x;
  g->split = split;
  g->classes = s->classes;
  g->features = (int32_t)width;
  labels = NULL;
  x = NULL;
  split = NULL;
done:
  free(mean);
  free(split);
  free(x);
  free(labels);
  return st;
}

halo_status halo_graph_synthesize_node_data(halo_graph *g, int32_t features, int32_t classes,
                                            uint64_t seed) {
  halo_status st = HALO_OK;
  if (!g) HALO_FAIL(HALO_ERR_ARG, "halo_graph_synthesize_node_data: no graph");
  if (features < 1)
    HALO_FAIL(HALO_ERR_ARG, "synthetic features: width %d must be at least 1", features);
  if (classes < 1)
    HALO_FAIL(HALO_ERR_ARG, "synthetic labels: %d classes, need at least 1", classes);
  const halo_node_synth s = halo_node_synth_default(features, classes, seed);
  HALO_TRY(load_synth_node_data(g, &s));
done:
  return st;
}

uint8_t halo_split_draw(const double frac[3], uint64_t seed, int64_t u) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_FEATURES, 5, 0);
  const double r = halo_rng_uniform_double(key, (uint64_t)u, 0);
  return r < frac[0]                     ? HALO_SPLIT_TRAIN
         : r < frac[0] + frac[1]           ? HALO_SPLIT_VALID
         : r < frac[0] + frac[1] + frac[2] ? HALO_SPLIT_TEST
                                           : HALO_SPLIT_NONE;
}

uint64_t halo_split_digest(uint64_t source_digest, const double frac[3], uint64_t seed) {
  /* Different fractions are a different input to the run id. */
  halo_digest d;
  halo_digest_init(&d);
  halo_digest_update(&d, "synthetic split", 15);
  halo_digest_update(&d, frac, 3 * sizeof *frac);
  halo_digest_update(&d, &seed, sizeof seed);
  return halo_rng_mix(source_digest ^ halo_digest_final(&d));
}

halo_status halo_graph_synthesize_split(halo_graph *g, const double frac[3], uint64_t seed) {
  halo_status st = HALO_OK;
  uint8_t *split = NULL;
  const int64_t n = g->n;
  HALO_ALLOC(split, n, "node split");
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++)
    split[u] = has_label(g, u) ? halo_split_draw(frac, seed, u) : HALO_SPLIT_NONE;
  free(g->split);
  g->split = split;
  split = NULL;
  g->source_digest = halo_split_digest(g->source_digest, frac, seed);
done:
  free(split);
  return st;
}

/* ---- Node data by slices ----------------------------------------------- */

/* The values of the file's first row (1 for an empty file), past its
 * header row. */
halo_status halo_load_node_width(const char *path, const halo_load_options *opt, int32_t *width,
                                 int *header) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_text t;
  char *line;
  size_t len;
  HALO_TRY(node_layout(path, opt, &t));
  HALO_TRY(load_reader_open(&r, path, NULL));
  int got = load_text_next(&r, &t, &line, &len);
  if (got < 0) HALO_TRY(got);
  *width = 1;
  if (got > 0) HALO_TRY(first_row_width(&r, line, &t, width));
  if (header) *header = t.header_line > 0;
done:
  load_reader_close(&r);
  return st;
}

const char *halo_load_node_rows_name(int is_labels, int32_t width) {
  return !is_labels ? "feature rows" : width > 1 ? "label rows" : "labels";
}

size_t halo_load_node_item(int is_labels, int32_t width) {
  return !is_labels ? sizeof(float) : width > 1 ? sizeof(int8_t) : sizeof(int32_t);
}

/* One row of a node-data file into row `at` of the block's data: features,
 * a label, or a multi-label row (labels of width > 1); a new largest label
 * goes to *max_label, its line to *max_line. */
static halo_status node_row(const load_reader *r, const load_text *t, const char *line,
                            int is_labels, int32_t classes, int32_t width, void *data, int64_t at,
                            int32_t *max_label, int64_t *max_line) {
  halo_status st = HALO_OK;
  if (is_labels && width > 1) {
    HALO_TRY(parse_target_row(r, line, width, t, (int8_t *)data + at * width));
  } else if (is_labels) {
    int32_t *label = (int32_t *)data + at;
    HALO_TRY(parse_label(r, line, t, classes, label));
    if (*label > *max_label) {
      *max_label = *label;
      *max_line = r->line_base + r->line;
    }
  } else {
    HALO_TRY(parse_feature_row(r, line, width, t, (float *)data + at * width));
  }
done:
  return st;
}

/* --classes against a multi-label file's width, at its first row. */
static halo_status check_tasks(const char *path, const load_text *t, int is_labels, int32_t width,
                               int32_t classes) {
  halo_status st = HALO_OK;
  if (is_labels && width > 1 && classes > 0 && classes != width)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s:%lld: --classes %d: the first row has %d columns, a multi-label file of %d "
              "tasks (--classes counts the classes of one label a row)",
              path, (long long)t->first_row, classes, width, width);
done:
  return st;
}

halo_status halo_load_node_stream(const char *path, const halo_load_options *opt, int is_labels,
                                  int64_t nodes, int64_t block, halo_node_emit emit, void *ctx,
                                  int32_t *max_label, int64_t *max_line,
                                  halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_text t;
  int32_t width = 1;
  const int32_t classes = opt ? opt->classes : 0;
  int64_t rows = 0, first = 0;
  void *data = NULL;
  char *line;
  size_t len;
  int got;
  *max_label = -1;
  *max_line = 0;
  HALO_TRY(node_layout(path, opt, &t));
  HALO_TRY(halo_load_node_width(path, opt, &width, NULL));
  HALO_TRY(check_tasks(path, &t, is_labels, width, classes));
  data = malloc((size_t)block * (size_t)width * halo_load_node_item(is_labels, width));
  if (!data) HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory allocating a block of rows", path);
  HALO_TRY(load_reader_open(&r, path, digest));
  while ((got = load_text_next(&r, &t, &line, &len)) > 0) {
    if (first + rows >= nodes)
      HALO_TRY(
          too_many_rows(&r, halo_load_node_rows_name(is_labels, width), nodes, rows_hint(opt)));
    HALO_TRY(node_row(&r, &t, line, is_labels, classes, width, data, rows, max_label, max_line));
    if (++rows == block) {
      HALO_TRY(emit(ctx, first, rows, data));
      first += rows;
      rows = 0;
    }
  }
  if (got < 0) HALO_TRY(got);
  if (rows > 0) HALO_TRY(emit(ctx, first, rows, data));
done:
  load_reader_close(&r);
  free(data);
  return st;
}

static int has_negative_zero(const float *row, int32_t width) {
  for (int32_t j = 0; j < width; j++)
    if (row[j] == 0.0f && signbit(row[j])) return 1;
  return 0;
}

/* Reads a slice's rows, features (is_labels 0) or labels. */
static halo_status node_slice(const char *path, const halo_load_options *opt, int64_t slice,
                              int64_t slices, int64_t line_base, int64_t nodes, int is_labels,
                              halo_node_slice *out) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_text t;
  int64_t lines = 0, cap = 0;
  const int32_t classes = opt ? opt->classes : 0;
  feature_rows fr = {0};
  float *row_buf = NULL;
  char *line;
  size_t len;
  int got;
  *out = (halo_node_slice){.first = line_base, .width = 1, .max_label = -1};
  HALO_TRY(node_layout(path, opt, &t));
  /* Row v is on the line after v + header lines: a header row is line 1. */
  out->header = t.header_line > 0;
  if (line_base >= t.header_line && t.header_line > 0) out->first = line_base - 1;
  HALO_TRY(halo_load_node_width(path, opt, &out->width, NULL));
  HALO_TRY(check_tasks(path, &t, is_labels, out->width, classes));
  HALO_TRY(halo_load_slice_lines(path, slice, slices, &lines));
  cap = lines;
  void *data = NULL;
  if (is_labels && out->width > 1) {
    HALO_ALLOC(out->targets, cap * out->width, "node labels (multi-label)");
  } else if (is_labels) {
    HALO_ALLOC(out->labels, cap, "node labels");
  } else {
    /* Features grow as CSR over the slice's lines, as the sequential
     * reader's over the file's (feature_rows), one row parsed at a time. */
    fr = (feature_rows){.n = cap, .width = out->width};
    HALO_ALLOC(fr.indptr, cap + 1, "CSR feature offsets");
    HALO_ALLOC(row_buf, out->width > 0 ? out->width : 1, "a feature row");
  }
  data = out->targets ? (void *)out->targets : (void *)out->labels;
  HALO_TRY(load_reader_open_slice(&r, path, slice, slices));
  r.line_base = line_base;
  while ((got = load_text_next(&r, &t, &line, &len)) > 0) {
    if (out->first + out->rows >= nodes)
      HALO_TRY(too_many_rows(&r, halo_load_node_rows_name(is_labels, out->width), nodes,
                             rows_hint(opt)));
    if (out->rows == cap) LOAD_FAIL(&r, HALO_ERR_IO, "the file changed while it was read");
    if (is_labels) {
      HALO_TRY(node_row(&r, &t, line, is_labels, classes, out->width, data, out->rows,
                        &out->max_label, &out->max_line));
    } else {
      HALO_TRY(parse_feature_row(&r, line, out->width, &t, row_buf));
      /* A -0 goes dense from its row on, so that the slice holds it as the
       * dense reader of a slice did (CSR drops it): the rows before have
       * none, and a run that routes them dense writes what it wrote. */
      if (!fr.x && has_negative_zero(row_buf, out->width))
        HALO_TRY(feature_rows_to_dense(&r, &fr));
      HALO_TRY(feature_rows_append(&r, &fr, row_buf));
    }
    out->rows++;
  }
  if (got < 0) HALO_TRY(got);
  if (!is_labels && fr.x) {
    out->x = fr.x;
    fr.x = NULL;
  } else if (!is_labels) {
    const int64_t nnz = fr.indptr[out->rows];
    out->indptr = fr.indptr;
    out->indices = fr.indices;
    out->values = fr.values;
    fr = (feature_rows){0};
    /* Trimmed to what they hold; a slice without non-zeros gets one item. */
    int32_t *indices = realloc(out->indices, (size_t)(nnz ? nnz : 1) * sizeof *indices);
    if (indices) out->indices = indices;
    float *values = realloc(out->values, (size_t)(nnz ? nnz : 1) * sizeof *values);
    if (values) out->values = values;
    if (!out->indices) HALO_ALLOC(out->indices, 1, "CSR feature columns");
    if (!out->values) HALO_ALLOC(out->values, 1, "CSR feature values");
  }
done:
  load_reader_close(&r);
  feature_rows_free(&fr);
  free(row_buf);
  if (st != HALO_OK) halo_node_slice_free(out);
  return st;
}

halo_status halo_load_features_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, int64_t nodes,
                                     halo_node_slice *out) {
  return node_slice(path, opt, slice, slices, line_base, nodes, 0, out);
}

halo_status halo_load_labels_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                   int64_t slices, int64_t line_base, int64_t nodes,
                                   halo_node_slice *out) {
  return node_slice(path, opt, slice, slices, line_base, nodes, 1, out);
}

void halo_node_slice_free(halo_node_slice *s) {
  if (!s) return;
  free(s->x);
  free(s->indptr);
  free(s->indices);
  free(s->values);
  free(s->labels);
  free(s->targets);
  s->x = NULL;
  s->indptr = NULL;
  s->indices = NULL;
  s->values = NULL;
  s->labels = NULL;
  s->targets = NULL;
  s->rows = 0;
}
