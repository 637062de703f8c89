/* Matrix Market coordinate files as graphs: entry (i, j) is the edge
 * i-1 -> j-1.  A 'real' or 'integer' file's values are the edge weights
 * (halo_graph.edge_weight), each finite and >= 0, refused at its line
 * otherwise; a file whose every value is exactly 1 is read as an
 * unweighted graph, as before weights were read (docs/partition.md, "Edge
 * weights").  The distributed reader (slices, streams) takes no weights: a
 * value other than 1 there is refused at its line.  A symmetric file
 * stores one triangle; both directions of each off-diagonal entry are
 * kept, with the same weight, so the graph is what the matrix means.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "halo-load.h"
#include "load-impl.h"

enum { MTX_PATTERN = HALO_MTX_PATTERN, MTX_REAL = HALO_MTX_REAL, MTX_INTEGER = HALO_MTX_INTEGER };

typedef halo_mtx_header mtx_header;

/* Splits the banner into its five words; returns how many there were. */
static int banner_words(char *line, char *word[6]) {
  int count = 0;
  char *save = NULL;
  for (char *tok = strtok_r(line, " \t", &save); tok && count < 6;
       tok = strtok_r(NULL, " \t", &save))
    word[count++] = tok;
  return count;
}

static halo_status parse_banner(const load_reader *r, char *line, mtx_header *h) {
  halo_status st = HALO_OK;
  char *word[6] = {0};
  int count = banner_words(line, word);
  if (count < 1 || strcasecmp(word[0], "%%MatrixMarket") != 0)
    LOAD_FAIL(r, HALO_ERR_FORMAT,
              "not a Matrix Market file: expected '%%%%MatrixMarket matrix coordinate ...'");
  if (count != 5 || strcasecmp(word[1], "matrix") != 0)
    LOAD_FAIL(r, HALO_ERR_FORMAT,
              "Matrix Market banner must read '%%%%MatrixMarket matrix coordinate FIELD SYMMETRY'");
  if (strcasecmp(word[2], "coordinate") != 0)
    LOAD_FAIL(r, HALO_ERR_UNSUPPORTED,
              "'%s' Matrix Market files are not supported; a graph needs 'coordinate'", word[2]);
  if (strcasecmp(word[3], "pattern") == 0)
    h->field = MTX_PATTERN;
  else if (strcasecmp(word[3], "real") == 0 || strcasecmp(word[3], "double") == 0)
    h->field = MTX_REAL;
  else if (strcasecmp(word[3], "integer") == 0)
    h->field = MTX_INTEGER;
  else
    LOAD_FAIL(r, HALO_ERR_UNSUPPORTED, "field '%s' is not supported (pattern, real, integer)",
              word[3]);
  if (strcasecmp(word[4], "general") == 0)
    h->symmetric = 0;
  else if (strcasecmp(word[4], "symmetric") == 0)
    h->symmetric = 1;
  else
    LOAD_FAIL(r, HALO_ERR_UNSUPPORTED, "symmetry '%s' is not supported (general, symmetric)",
              word[4]);
done:
  return st;
}

static halo_status parse_size_line(const load_reader *r, const char *p, mtx_header *h) {
  halo_status st = HALO_OK;
  int64_t v[3];
  int count = 0;
  while (*p) {
    const char *tok = p;
    if (count == 3)
      LOAD_FAIL(r, HALO_ERR_PARSE, "size line must be 'ROWS COLS ENTRIES', found more");
    int rc = load_scan_i64(&p, &v[count]);
    if (rc != LOAD_SCAN_OK || *p == ',') LOAD_FAIL_WORD(r, tok, "a size");
    if (v[count] < 0) LOAD_FAIL(r, HALO_ERR_RANGE, "size %lld is negative", (long long)v[count]);
    count++;
    p = load_skip_blank(p);
  }
  if (count != 3)
    LOAD_FAIL(r, HALO_ERR_PARSE, "size line must be 'ROWS COLS ENTRIES', found %d numbers", count);
  h->rows = v[0];
  h->cols = v[1];
  h->nnz = v[2];
  h->size_line = r->line;
  if (h->rows != h->cols)
    LOAD_FAIL(r, HALO_ERR_FORMAT, "matrix is %lld x %lld; a graph needs a square matrix",
              (long long)h->rows, (long long)h->cols);
done:
  return st;
}

/* Parses "i j [value]" into 0-based (src, dst) and, unless weight is NULL
 * (the distributed reader, which refuses a value other than 1), the value
 * into *weight (1 for a pattern file), setting *not_one when it is not
 * exactly 1. */
static halo_status parse_entry(const load_reader *r, const char *p, const mtx_header *h,
                               int64_t id[2], float *weight, int *not_one) {
  halo_status st = HALO_OK;
  int want = h->field == MTX_PATTERN ? 2 : 3;
  int count = 0;
  while (*p) {
    const char *tok = p;
    int rc;
    if (count < 2) {
      int64_t v = 0;
      rc = load_scan_i64(&p, &v);
      if (rc == LOAD_SCAN_BAD || *p == ',') LOAD_FAIL_WORD(r, tok, "an index");
      int64_t bound = count == 0 ? h->rows : h->cols;
      if (rc == LOAD_SCAN_RANGE || v < 1 || v > bound)
        LOAD_FAIL(r, HALO_ERR_RANGE, "%s index %.*s is out of range [1, %lld] (size line %lld)",
                  count == 0 ? "row" : "column", (int)(p - tok), tok, (long long)bound,
                  (long long)h->size_line);
      id[count] = v - 1;
    } else if (count == 2 && want == 3) {
      int one = 0;
      float value = 1.0f;
      if (h->field == MTX_INTEGER) {
        int64_t v;
        rc = load_scan_i64(&p, &v);
        one = rc == LOAD_SCAN_OK && v == 1;
        value = (float)v;
      } else {
        rc = load_scan_f32(&p, &value);
        /* Exactly 1, not a float that rounds to it ("1.00000001"). */
        one = rc == LOAD_SCAN_OK && value == 1.0f && strtod(tok, NULL) == 1.0;
      }
      if (rc != LOAD_SCAN_OK || *p == ',')
        LOAD_FAIL_WORD(r, tok, h->field == MTX_INTEGER ? "an integer value" : "a real value");
      if (!weight && !one)
        LOAD_FAIL(r, HALO_ERR_UNSUPPORTED,
                  "value %.*s: edge weights are not supported by the distributed partitioner "
                  "(--method ptscotch reads a '%s' file only when every value is 1); use "
                  "--method metis, or write 'pattern' in the banner to use the structure alone",
                  (int)(p - tok), tok, h->field == MTX_INTEGER ? "integer" : "real");
      if (weight) {
        char where[HALO_OGB_PATH + 32];
        snprintf(where, sizeof where, "%s:%lld", r->path, (long long)(r->line_base + r->line));
        char token[64];
        snprintf(token, sizeof token, "%.*s", (int)(p - tok < 60 ? p - tok : 60), tok);
        if (load_check_weight(where, value, token) < 0) {
          st = HALO_ERR_RANGE;
          goto done;
        }
        *weight = value;
        *not_one |= !one;
      }
    } else {
      while (*p && *p != ' ' && *p != '\t') p++;
    }
    count++;
    p = load_skip_blank(p);
  }
  if (count != want)
    LOAD_FAIL(r, HALO_ERR_PARSE, "expected %d columns (%s), found %d", want,
              want == 2 ? "row column" : "row column value", count);
done:
  return st;
}

/* The banner, then the size line after any comments; r is left after it. */
static halo_status read_header(load_reader *r, const char *path, mtx_header *h) {
  halo_status st = HALO_OK;
  char *line;
  size_t len;
  int got = load_reader_next(r, &line, &len);
  if (got < 0) HALO_TRY(got);
  HALO_TRY(parse_banner(r, line, h));
  while ((got = load_reader_next(r, &line, &len)) > 0) {
    const char *p = load_skip_blank(line);
    if (*p == '\0' || *p == '%') continue;
    HALO_TRY(parse_size_line(r, p, h));
    if (h->rows > ((int64_t)1 << 32))
      LOAD_FAIL(r, HALO_ERR_LIMIT, "%lld rows exceed the loaders' limit of 2^32 nodes",
                (long long)h->rows);
    goto done;
  }
  if (got < 0) HALO_TRY(got);
  LOAD_FAIL(r, HALO_ERR_FORMAT, "no size line 'ROWS COLS ENTRIES' after the banner");
done:
  (void)path;
  return st;
}

halo_status halo_load_mtx_header(const char *path, halo_mtx_header *h) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  *h = (halo_mtx_header){0};
  HALO_TRY(load_reader_open(&r, path, NULL));
  HALO_TRY(read_header(&r, path, h));
done:
  load_reader_close(&r);
  return st;
}

/* An entry line's edges (two for an off-diagonal entry of a symmetric
 * file), or none for a blank or comment line or one of the header. */
static halo_status mtx_line(const load_reader *r, const char *line, const mtx_header *h,
                            int64_t pair[4], int *edges) {
  halo_status st = HALO_OK;
  const char *p = load_skip_blank(line);
  *edges = 0;
  if (r->line_base + r->line <= h->size_line || *p == '\0' || *p == '%') goto done;
  HALO_TRY(parse_entry(r, p, h, pair, NULL, NULL));
  *edges = 1;
  if (h->symmetric && pair[0] != pair[1]) {
    pair[2] = pair[1];
    pair[3] = pair[0];
    *edges = 2;
  }
done:
  return st;
}

halo_status halo_load_mtx_slice(const char *path, const halo_mtx_header *h, int64_t slice,
                                int64_t slices, int64_t line_base, int64_t limit,
                                halo_edge_slice *out, int64_t *entries, int64_t *where) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_edges edges = {.narrow = 0, .path = path};
  char *line;
  size_t len;
  int got;
  *out = (halo_edge_slice){.nodes = h->rows};
  *entries = 0;
  HALO_TRY(load_reader_open_slice(&r, path, slice, slices));
  r.line_base = line_base;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    int64_t pair[4];
    int count = 0;
    HALO_TRY(mtx_line(&r, line, h, pair, &count));
    if (count == 0) continue;
    if (limit >= 0 && *entries == limit)
      LOAD_FAIL(&r, HALO_ERR_FORMAT,
                "more entries than the %lld declared on the size line (line %lld)",
                (long long)h->nnz, (long long)h->size_line);
    ++*entries;
    for (int e = 0; e < count; e++) HALO_TRY(load_edges_push(&edges, pair[2 * e], pair[2 * e + 1]));
  }
  if (got < 0) HALO_TRY(got);
  snprintf(out->source, sizeof out->source, "%s", path);
  out->count = edges.count;
  out->pair = edges.pair;
  edges.pair = NULL;
done:
  if (st != HALO_OK && where) *where = r.line_base + r.line;
  load_reader_close(&r);
  load_edges_free(&edges);
  return st;
}

halo_status halo_load_mtx_stream(const char *path, int64_t block,
                                 halo_status (*emit)(void *ctx, const int64_t *pair, int64_t count),
                                 void *ctx, halo_mtx_header *h, uint64_t *digest_out) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int64_t *pair = NULL, count = 0, entries = 0;
  halo_digest_chunked digest;
  char *line;
  size_t len;
  int got;
  halo_digest_chunked_init(&digest);
  *h = (halo_mtx_header){0};
  HALO_ALLOC(pair, 2 * (block + 1), "edge block");
  HALO_TRY(load_reader_open(&r, path, &digest));
  HALO_TRY(read_header(&r, path, h));
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    int edges = 0;
    HALO_TRY(mtx_line(&r, line, h, pair + 2 * count, &edges));
    if (edges == 0) continue;
    if (++entries > h->nnz)
      LOAD_FAIL(&r, HALO_ERR_FORMAT,
                "more entries than the %lld declared on the size line (line %lld)",
                (long long)h->nnz, (long long)h->size_line);
    count += edges;
    if (count >= block) {
      HALO_TRY(emit(ctx, pair, count));
      count = 0;
    }
  }
  if (got < 0) HALO_TRY(got);
  if (entries != h->nnz)
    LOAD_FAIL(&r, HALO_ERR_FORMAT,
              "file ends after %lld entries, but the size line (line %lld) declares %lld",
              (long long)entries, (long long)h->size_line, (long long)h->nnz);
  if (count > 0) HALO_TRY(emit(ctx, pair, count));
  *digest_out = halo_digest_chunked_final(&digest);
done:
  load_reader_close(&r);
  free(pair);
  return st;
}

halo_status load_mtx(const char *path, const halo_load_options *opt, halo_graph **out) {
  (void)opt;
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_edges edges = {.path = path};
  load_weights weights = {.path = path};
  int weighted = 0; /* a value other than 1 has been read */
  halo_graph *g = NULL;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  mtx_header h = {0};
  *out = NULL;

  HALO_TRY(load_reader_open(&r, path, &digest));
  HALO_TRY(read_header(&r, path, &h));
  /* The size line is all the file promises; a symmetric file may store
   * both directions of every entry.  nnz <= 2^62 keeps the product exact. */
  const int64_t reserve = h.nnz > ((int64_t)1 << 62) ? INT64_MAX : h.nnz * (h.symmetric ? 2 : 1);
  HALO_TRY(load_check_memory(path, r.line, h.rows, reserve));
  edges.narrow = 1; /* 0-based ids in [0, rows) fit 32 bits */
  HALO_TRY(load_edges_reserve(&edges, reserve < (1 << 24) ? reserve : (1 << 24)));

  char *line;
  size_t len;
  int got;
  int64_t entries = 0;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    const char *p = load_skip_blank(line);
    if (*p == '\0' || *p == '%') continue;
    int64_t id[2];
    float w = 1.0f;
    HALO_TRY(parse_entry(&r, p, &h, id, &w, &weighted));
    if (++entries > h.nnz)
      LOAD_FAIL(&r, HALO_ERR_FORMAT,
                "more entries than the %lld declared on the size line (line %lld)",
                (long long)h.nnz, (long long)h.size_line);
    HALO_TRY(load_edges_push(&edges, id[0], id[1]));
    if (h.symmetric && id[0] != id[1]) HALO_TRY(load_edges_push(&edges, id[1], id[0]));
    if (h.field != MTX_PATTERN) {
      /* Kept for every entry until the end decides: all ones is unweighted. */
      HALO_TRY(load_weights_push(&weights, w));
      if (h.symmetric && id[0] != id[1]) HALO_TRY(load_weights_push(&weights, w));
    }
  }
  if (got < 0) HALO_TRY(got);
  if (entries != h.nnz)
    LOAD_FAIL(&r, HALO_ERR_FORMAT,
              "file ends after %lld entries, but the size line (line %lld) declares %lld",
              (long long)entries, (long long)h.size_line, (long long)h.nnz);
  HALO_TRY(load_reader_close(&r));

  HALO_TRY(load_graph_create(path, h.rows, &g));
  if (weighted)
    HALO_TRY(load_edges_to_csr_weighted(&edges, &weights, g));
  else
    HALO_TRY(load_edges_to_csr(&edges, g));
  load_set_source(g, path);
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  load_reader_close(&r);
  load_edges_free(&edges);
  load_weights_free(&weights);
  halo_graph_destroy(&g);
  return st;
}
