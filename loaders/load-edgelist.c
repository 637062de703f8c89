/* SNAP edge lists: '#' comments, two whitespace-separated ids per line,
 * or three: the third is the edge's weight (every data line then has
 * one; docs/partition.md, "Edge weights").
 *
 * Ids are arbitrary non-negative 64-bit values; they are renumbered 0..n-1 in
 * increasing order, so a list whose ids are already 0..n-1 keeps them.  When
 * the ids are dense enough (the largest is below 64 times the edge count) a
 * bitmap with per-word ranks renumbers them in (max+1)/4 bytes; otherwise the
 * distinct ids go through a hash set, are sorted, and the set is refilled
 * with each id's position (24 bytes per distinct id at most, on top of the
 * edges).  A renumbered list keeps each node's id of the file in
 * g->original_id (ascending, since the renumbering keeps the order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-load.h"
#include "halo-rng.h"
#include "halo-search.h"
#include "load-impl.h"

/* The values on a line: runs of anything but ',', spaces and tabs,
 * separated by a ',' (blanks around it allowed) or by blanks; an empty
 * one (",,") is left to the parser to name. */
static int count_values(const char *p) {
  int values = 0;
  for (p = load_skip_blank(p); *p;) {
    const char *at = p;
    while (*p && *p != ',' && *p != ' ' && *p != '\t') p++;
    values += p > at;
    p = load_skip_blank(p);
    if (*p == ',') p = load_skip_blank(p + 1);
  }
  return values;
}

/* Parses one data line into (src, dst): two ids separated by a comma, by
 * spaces or by tabs ("0,1", "0 1", "0\t1", "0, 1"); with nodes > 0 (--nodes)
 * each id must lie in [0, nodes).  With weight (a weighted list), a third
 * value is the weight, checked by load_check_weight. */
static halo_status parse_edge_line(const load_reader *r, const char *p, int64_t nodes,
                                   int64_t id[2], float *weight) {
  halo_status st = HALO_OK;
  int cols = 0;
  const int want = weight ? 3 : 2;
  for (;;) {
    p = load_skip_blank(p);
    const char *tok = p;
    if (weight && cols == 2) {
      float w = 0.0f;
      if (load_scan_f32(&p, &w) != LOAD_SCAN_OK) LOAD_FAIL_TOKEN(r, tok, "an edge weight");
      char where[HALO_OGB_PATH + 32], token[64];
      snprintf(where, sizeof where, "%s:%lld", r->path, (long long)(r->line_base + r->line));
      snprintf(token, sizeof token, "%.*s", (int)(p - tok < 60 ? p - tok : 60), tok);
      if (load_check_weight(where, w, token) < 0) {
        st = HALO_ERR_RANGE;
        goto done;
      }
      *weight = w;
      cols++;
      p = load_skip_blank(p);
      if (*p == ',')
        p++;
      else if (*p == '\0')
        break;
      continue;
    }
    int64_t v = 0;
    int rc = load_scan_i64(&p, &v);
    if (rc == LOAD_SCAN_BAD) LOAD_FAIL_TOKEN(r, tok, "a node id");
    if (rc == LOAD_SCAN_RANGE || v < 0)
      LOAD_FAIL(r, HALO_ERR_RANGE, "node id %.*s is out of range (ids must be in [0, 2^63-1])",
                (int)(p - tok), tok);
    if (nodes > 0 && v >= nodes)
      LOAD_FAIL(r, HALO_ERR_RANGE,
                "node id %.*s is out of range [0, %lld) of --nodes %lld (ids are the nodes "
                "0..N-1 with --nodes N)",
                (int)(p - tok), tok, (long long)nodes, (long long)nodes);
    if (cols < 2) id[cols] = v;
    cols++;
    p = load_skip_blank(p);
    if (*p == ',')
      p++;
    else if (*p == '\0')
      break;
  }
  if (cols != want)
    LOAD_FAIL(r, HALO_ERR_PARSE, "expected %s, found %d values",
              weight ? "2 node ids and a weight (as on the first edge line)" : "2 node ids", cols);
done:
  return st;
}

/* The edge of one line, or none (*is_edge = 0) for a blank or '#' line;
 * `nodes` > 0 bounds the ids (--nodes), else a SNAP list's ids are its
 * own.  *columns (0: not known yet) is the first edge line's count, 2 or
 * 3, which every line keeps; a third column is the weight, into *weight.
 * weight NULL (the distributed reader) refuses a third column. */
static halo_status read_edge_weighted(const load_reader *r, const char *line, int64_t nodes,
                                      int *is_edge, int64_t id[2], int *columns, float *weight) {
  halo_status st = HALO_OK;
  const char *p = load_skip_blank(line);
  *is_edge = 0;
  if (*p == '\0' || *p == '#') goto done;
  const int values = count_values(p);
  if (values == 3 && !weight)
    LOAD_FAIL(r, HALO_ERR_UNSUPPORTED,
              "a third column (edge weights) is not supported by the distributed partitioner "
              "(--method ptscotch); use --method metis, or keep the first two columns "
              "(awk '{print $1, $2}') to use the structure alone");
  if (*columns == 0 && (values == 2 || values == 3)) *columns = values;
  if ((values == 2 || values == 3) && values != *columns)
    LOAD_FAIL(r, HALO_ERR_PARSE,
              "%d values, but the first edge line has %d (every line holds 2 node ids, or every "
              "line 2 ids and a weight)",
              values, *columns);
  HALO_TRY(parse_edge_line(r, p, nodes, id, *columns == 3 ? weight : NULL));
  *is_edge = 1;
done:
  return st;
}

static halo_status read_edge(const load_reader *r, const char *line, int64_t nodes, int *is_edge,
                             int64_t id[2]) {
  int columns = 2;
  return read_edge_weighted(r, line, nodes, is_edge, id, &columns, NULL);
}

/* Dense ids: bit x of `bits` says id x occurs; rank[w] counts the ids below
 * word w.  Renumbers in place and returns the node count in *n. */
static halo_status renumber_dense(load_edges *e, int64_t max_id, int64_t *n, int64_t **original) {
  halo_status st = HALO_OK;
  int64_t words = (max_id >> 6) + 1;
  uint64_t *bits = NULL;
  int64_t *rank = NULL;
  HALO_ALLOC(bits, words, "id bitmap");
  for (int64_t j = 0; j < e->count; j++) {
    int64_t id[2];
    load_edges_get(e, j, id);
    for (int c = 0; c < 2; c++) bits[id[c] >> 6] |= 1ull << (id[c] & 63);
  }
  HALO_ALLOC(rank, words, "id ranks");
  int64_t total = 0;
  for (int64_t w = 0; w < words; w++) {
    rank[w] = total;
    total += __builtin_popcountll(bits[w]);
  }
  *n = total;
  if (total == max_id + 1) goto done; /* already 0..n-1 */
  HALO_ALLOC(*original, total, "original node ids");
  for (int64_t w = 0, k = 0; w < words; w++)
    for (uint64_t b = bits[w]; b; b &= b - 1) (*original)[k++] = 64 * w + __builtin_ctzll(b);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < e->count; j++) {
    int64_t id[2];
    load_edges_get(e, j, id);
    for (int c = 0; c < 2; c++) {
      uint64_t below = bits[id[c] >> 6] & ((1ull << (id[c] & 63)) - 1);
      id[c] = rank[id[c] >> 6] + __builtin_popcountll(below);
    }
    load_edges_set(e, j, id);
  }
done:
  free(rank);
  free(bits);
  return st;
}

/* Doubles the hash set, reinserting its ids. */
static halo_status set_grow(int64_t **set, int64_t *size) {
  halo_status st = HALO_OK;
  int64_t *grown = NULL;
  int64_t grown_size = 2 * *size;
  HALO_ALLOC(grown, grown_size, "id set");
  memset(grown, 0xff, (size_t)grown_size * sizeof *grown);
  for (int64_t s = 0; s < *size; s++) {
    int64_t x = (*set)[s];
    if (x < 0) continue;
    uint64_t h = halo_rng_mix((uint64_t)x) & (uint64_t)(grown_size - 1);
    while (grown[h] >= 0) h = (h + 1) & (uint64_t)(grown_size - 1);
    grown[h] = x;
  }
  free(*set);
  *set = grown;
  *size = grown_size;
done:
  return st;
}

/* Sparse ids: an open-addressing set (empty = -1) at load <= 1/2, copied
 * out and sorted into the list of distinct ids; each id becomes its
 * position in that list. */
static halo_status renumber_sparse(load_edges *e, int64_t *n, int64_t **original) {
  halo_status st = HALO_OK;
  int64_t *set = NULL, *sorted = NULL;
  int64_t size = 1024, used = 0;
  HALO_ALLOC(set, size, "id set");
  memset(set, 0xff, (size_t)size * sizeof *set);
  for (int64_t j = 0; j < e->count; j++) {
    int64_t id[2];
    load_edges_get(e, j, id);
    for (int c = 0; c < 2; c++) {
      if (2 * (used + 1) > size) HALO_TRY(set_grow(&set, &size));
      uint64_t h = halo_rng_mix((uint64_t)id[c]) & (uint64_t)(size - 1);
      while (set[h] >= 0 && set[h] != id[c]) h = (h + 1) & (uint64_t)(size - 1);
      if (set[h] < 0) {
        set[h] = id[c];
        used++;
      }
    }
  }
  /* The distinct ids, sorted: position = new id. */
  int64_t u = 0;
  HALO_ALLOC(sorted, used, "distinct ids");
  for (int64_t s = 0; s < size; s++)
    if (set[s] >= 0) sorted[u++] = set[s];
  qsort(sorted, (size_t)u, sizeof *sorted, halo_compare_i64);
  /* Refill the table with positions into `sorted`, so that renumbering an
   * id costs one probe sequence instead of a binary search. */
  const uint64_t mask = (uint64_t)(size - 1);
  memset(set, 0xff, (size_t)size * sizeof *set);
  for (int64_t r = 0; r < u; r++) {
    uint64_t h = halo_rng_mix((uint64_t)sorted[r]) & mask;
    while (set[h] >= 0) h = (h + 1) & mask;
    set[h] = r;
  }
  const int64_t *table = set, *ids = sorted;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < e->count; j++) {
    int64_t id[2];
    load_edges_get(e, j, id);
    for (int c = 0; c < 2; c++) {
      uint64_t h = halo_rng_mix((uint64_t)id[c]) & mask;
      while (ids[table[h]] != id[c]) h = (h + 1) & mask;
      id[c] = table[h];
    }
    load_edges_set(e, j, id);
  }
  *n = u;
  /* The sorted distinct ids are the original ids, unless they are 0..n-1. */
  if (u == 0 || sorted[u - 1] != u - 1) {
    *original = sorted;
    sorted = NULL;
  }
done:
  free(sorted);
  free(set);
  return st;
}

static halo_status to_csr(load_edges *e, load_weights *w, int weighted, halo_graph *g) {
  return weighted ? load_edges_to_csr_weighted(e, w, g) : load_edges_to_csr(e, g);
}

halo_status load_edgelist(const char *path, const halo_load_options *opt, halo_graph **out) {
  halo_status st = HALO_OK;
  const int64_t nodes = opt->nodes; /* --nodes: the ids are kept, no renumbering */
  load_text t;
  load_reader r = {0};
  load_edges edges = {.narrow = 1, .path = path}; /* widens itself at the first id >= 2^32 */
  load_weights weights = {.path = path};
  int columns = 0; /* 3: a weighted list */
  halo_graph *g = NULL;
  int64_t *original = NULL; /* the input's id of each node, when renumbered */
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  *out = NULL;

  /* An edge list names its nodes only through its edges: an empty one, or
   * one of comments alone, is refused below with that reason. */
  HALO_TRY(load_text_layout(path, opt->header, 1, &t));
  HALO_TRY(load_reader_open_maybe_empty(&r, path, &digest));
  int64_t max_id = -1;
  char *line;
  size_t len;
  int got;
  while ((got = load_text_next(&r, &t, &line, &len)) > 0) {
    int64_t id[2];
    int is_edge = 0;
    float w = 1.0f;
    HALO_TRY(read_edge_weighted(&r, line, nodes, &is_edge, id, &columns, &w));
    if (!is_edge) continue;
    HALO_TRY(load_edges_push(&edges, id[0], id[1]));
    if (columns == 3) HALO_TRY(load_weights_push(&weights, w));
    if (id[0] > max_id) max_id = id[0];
    if (id[1] > max_id) max_id = id[1];
  }
  if (got < 0) HALO_TRY(got);
  HALO_TRY(load_reader_close(&r));

  if (nodes > 0) { /* the ids are the nodes: no renumbering, isolated nodes kept */
    if (nodes > ((int64_t)1 << 32))
      HALO_FAIL(HALO_ERR_LIMIT, "--nodes %lld exceeds the loaders' limit of 2^32 nodes",
                (long long)nodes);
    HALO_TRY(load_check_memory(path, 0, nodes, edges.count));
    HALO_TRY(load_graph_create(path, nodes, &g));
    HALO_TRY(to_csr(&edges, &weights, columns == 3, g));
    goto loaded;
  }
  if (edges.count == 0)
    HALO_FAIL(HALO_ERR_PARSE,
              "%s: holds no edges, and hence no nodes (an edge list names its nodes only through "
              "its edges; for a graph without edges give a Matrix Market file 'N N 0')",
              path);
  int64_t n = 0;
  if (max_id < 64 * edges.count + 1024)
    HALO_TRY(renumber_dense(&edges, max_id, &n, &original));
  else
    HALO_TRY(renumber_sparse(&edges, &n, &original));
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %lld distinct ids exceed the loaders' limit of 2^32 nodes", path,
              (long long)n);
  HALO_TRY(load_graph_create(path, n, &g));
  HALO_TRY(to_csr(&edges, &weights, columns == 3, g));
  g->original_id = original;
  original = NULL;
loaded:
  load_set_source(g, path);
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  free(original);
  load_reader_close(&r);
  load_edges_free(&edges);
  load_weights_free(&weights);
  halo_graph_destroy(&g);
  return st;
}

/* ---- slices (the distributed partitioner) ----------------------------- */

halo_status halo_load_slice_lines(const char *path, int64_t slice, int64_t slices, int64_t *lines) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  char *line;
  size_t len;
  int got;
  *lines = 0;
  HALO_TRY(load_reader_open_slice(&r, path, slice, slices));
  while ((got = load_reader_next(&r, &line, &len)) > 0) (*lines)++;
  if (got < 0) HALO_TRY(got);
done:
  load_reader_close(&r);
  return st;
}

/* One line's edge, or none: read_edge for SNAP lists, load_ogb_edge for
 * OGB's edge.csv (ids in [0, nodes)). */
typedef halo_status (*edge_parser)(const load_reader *r, const char *line, int64_t nodes,
                                   int *is_edge, int64_t id[2]);

static halo_status ogb_edge(const load_reader *r, const char *line, int64_t nodes, int *is_edge,
                            int64_t id[2]) {
  *is_edge = 1;
  return load_ogb_edge(r, line, nodes, id);
}

static halo_status edge_slice(const char *path, edge_parser parse, const load_text *t,
                              int64_t nodes, int64_t slice, int64_t slices, int64_t line_base,
                              halo_edge_slice *out) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  load_edges edges = {.narrow = 0, .path = path}; /* pairs as halo_edge_slice holds them */
  char *line;
  size_t len;
  int got;
  *out = (halo_edge_slice){.nodes = nodes, .renumber = nodes < 0};
  HALO_TRY(load_reader_open_slice(&r, path, slice, slices));
  r.line_base = line_base;
  while ((got = load_text_next(&r, t, &line, &len)) > 0) {
    int64_t id[2];
    int is_edge = 0;
    HALO_TRY(parse(&r, line, nodes, &is_edge, id));
    if (is_edge) HALO_TRY(load_edges_push(&edges, id[0], id[1]));
  }
  if (got < 0) HALO_TRY(got);
  snprintf(out->source, sizeof out->source, "%s", path);
  out->count = edges.count;
  out->pair = edges.pair;
  edges.pair = NULL;
done:
  load_reader_close(&r);
  load_edges_free(&edges);
  return st;
}

/* An OGB file's layout: commas, no header row (as OGB writes it). */
static const load_text OGB_TEXT = {.sep = ','};

halo_status halo_load_edgelist_slice(const char *path, const halo_load_options *opt, int64_t slice,
                                     int64_t slices, int64_t line_base, halo_edge_slice *out) {
  halo_status st = HALO_OK;
  load_text t;
  *out = (halo_edge_slice){.nodes = -1};
  HALO_TRY(load_text_layout(path, opt->header, 1, &t));
  HALO_TRY(edge_slice(path, read_edge, &t, opt->nodes > 0 ? opt->nodes : -1, slice, slices,
                      line_base, out));
done:
  return st;
}

halo_status halo_load_ogb_edge_slice(const char *path, int64_t nodes, int64_t slice, int64_t slices,
                                     int64_t line_base, halo_edge_slice *out) {
  return edge_slice(path, ogb_edge, &OGB_TEXT, nodes, slice, slices, line_base, out);
}

static halo_status edge_stream(const char *path, edge_parser parse, const load_text *t,
                               int64_t nodes, int64_t block,
                               halo_status (*emit)(void *ctx, const int64_t *pair, int64_t count),
                               void *ctx, halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int64_t *pair = NULL, count = 0;
  char *line;
  size_t len;
  int got;
  HALO_ALLOC(pair, 2 * block, "edge block");
  HALO_TRY(load_reader_open_maybe_empty(&r, path, digest));
  while ((got = load_text_next(&r, t, &line, &len)) > 0) {
    int is_edge = 0;
    HALO_TRY(parse(&r, line, nodes, &is_edge, pair + 2 * count));
    if (is_edge && ++count == block) {
      HALO_TRY(emit(ctx, pair, count));
      count = 0;
    }
  }
  if (got < 0) HALO_TRY(got);
  if (count > 0) HALO_TRY(emit(ctx, pair, count));
done:
  load_reader_close(&r);
  free(pair);
  return st;
}

halo_status halo_load_edgelist_stream(const char *path, const halo_load_options *opt, int64_t block,
                                      halo_status (*emit)(void *ctx, const int64_t *pair,
                                                          int64_t count),
                                      void *ctx, uint64_t *digest_out) {
  halo_status st = HALO_OK;
  halo_digest_chunked digest;
  load_text t;
  halo_digest_chunked_init(&digest);
  HALO_TRY(load_text_layout(path, opt->header, 1, &t));
  HALO_TRY(edge_stream(path, read_edge, &t, opt->nodes > 0 ? opt->nodes : -1, block, emit, ctx,
                       &digest));
  *digest_out = halo_digest_chunked_final(&digest);
done:
  return st;
}

halo_status halo_load_ogb_edge_stream(const char *path, int64_t nodes, int64_t block,
                                      halo_status (*emit)(void *ctx, const int64_t *pair,
                                                          int64_t count),
                                      void *ctx, halo_digest_chunked *digest) {
  return edge_stream(path, ogb_edge, &OGB_TEXT, nodes, block, emit, ctx, digest);
}

int halo_load_is_gzip(const char *path) {
  unsigned char magic[2] = {0, 0};
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  const size_t got = fread(magic, 1, 2, f);
  fclose(f);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}
