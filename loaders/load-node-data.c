/* Node data: feature rows, labels and splits from files, or synthesised. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "halo-load.h"
#include "halo-rng.h"
#include "halo-search.h"
#include "load-impl.h"

/* Counts the comma-separated fields of a line. */
static int32_t count_fields(const char *p) {
  int64_t count = 1;
  for (; *p; p++) count += *p == ',';
  return count > INT32_MAX ? INT32_MAX : (int32_t)count;
}

/* One feature row of `width` values into dst. */
static halo_status parse_feature_row(const load_reader *r, const char *line, int32_t width,
                                     float *dst) {
  halo_status st = HALO_OK;
  const char *p = line;
  for (int32_t c = 0; c < width; c++) {
    p = load_skip_blank(p);
    const char *tok = p;
    if (load_scan_f32(&p, &dst[c]) != LOAD_SCAN_OK) LOAD_FAIL_TOKEN(r, tok, "a number");
    if (!isfinite(dst[c]))
      LOAD_FAIL(r, HALO_ERR_RANGE, "feature %d is '%.*s': NaN and Inf are not allowed", c + 1,
                (int)(p - tok), tok);
    p = load_skip_blank(p);
    if (*p == ',' && c + 1 < width) {
      p++;
      continue;
    }
    if (*p == ',' || (*p == '\0' && c + 1 < width))
      LOAD_FAIL(r, HALO_ERR_PARSE, "row has %d values, expected %d as on line 1",
                *p == ',' ? count_fields(line) : c + 1, width);
    if (*p != '\0') LOAD_FAIL(r, HALO_ERR_PARSE, "unexpected '%c' after value %d", *p, c + 1);
  }
done:
  return st;
}

/* A .npy file of node data (load-npy-data.c), its bytes into digest. */
static halo_status npy_node_file(halo_graph *g, const char *path, halo_digest_chunked *digest,
                                 int is_labels) {
  halo_status st = HALO_OK;
  load_npy a = {.fd = -1};
  HALO_TRY(load_npy_open(&a, path, digest));
  HALO_TRY(is_labels ? load_npy_labels(g, &a) : load_npy_features(g, &a));
done:
  load_npy_close(&a);
  return st;
}

halo_status load_features_file(halo_graph *g, const char *path, halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  float *x = NULL;
  const int64_t n = g->n;
  if (load_npy_is_npy(path)) return npy_node_file(g, path, digest, 0);
  HALO_TRY(load_reader_open(&r, path, digest));

  char *line;
  size_t len;
  int got;
  int32_t width = 0;
  int64_t row = 0;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    if (row == 0) {
      width = count_fields(line);
      if ((uint64_t)n * (uint64_t)width > SIZE_MAX / sizeof(float))
        LOAD_FAIL(&r, HALO_ERR_NOMEM, "%lld x %d features exceed the address space", (long long)n,
                  width);
      HALO_ALLOC(x, (size_t)n * (size_t)width, "node features");
    }
    if (row >= n)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH, "more feature rows than the %lld nodes of the graph",
                (long long)n);
    HALO_TRY(parse_feature_row(&r, line, width, x + (size_t)row * (size_t)width));
    row++;
  }
  if (got < 0) HALO_TRY(got);
  if (row != n)
    LOAD_FAIL(&r, HALO_ERR_MISMATCH, "%lld feature rows, but the graph has %lld nodes",
              (long long)row, (long long)n);
  HALO_TRY(load_reader_close(&r));
  free(g->x);
  g->x = x;
  g->features = width;
  x = NULL;
done:
  load_reader_close(&r);
  free(x);
  return st;
}

/* One label token: an integer, an integral float ("3.0"), or "nan" for an
 * unlabelled node (as in ogbn-papers100M), which becomes -1. */
static halo_status parse_label(const load_reader *r, const char *p, int32_t *label) {
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
  p = load_skip_blank(p);
  if (*p != '\0')
    LOAD_FAIL(r, HALO_ERR_PARSE,
              "expected 1 label per line as on line 1, found %d columns (a file whose first "
              "line has several columns is read as multi-label)",
              count_fields(tok));
  *label = (int32_t)v;
done:
  return st;
}

/* One entry of a multi-label row at *pp: 0 or 1 (also "0.0", "1.0"), or
 * -1 or "nan" for a missing entry (as in OGB's multi-task files), which
 * becomes -1.  Leaves *pp after the token. */
static halo_status parse_target(const load_reader *r, const char **pp, int32_t column,
                                int8_t *out) {
  halo_status st = HALO_OK;
  const char *p = load_skip_blank(*pp), *tok = p;
  float f;
  if (load_scan_f32(&p, &f) != LOAD_SCAN_OK)
    LOAD_FAIL(r, HALO_ERR_PARSE, "task %d: expected 0, 1 or nan (missing), found '%.*s'",
              column + 1, (int)strcspn(tok, ","), tok);
  if (isnan(f) || f == -1.0f) {
    *out = -1;
  } else if (f == 0.0f || f == 1.0f) {
    *out = (int8_t)f;
  } else {
    LOAD_FAIL(r, HALO_ERR_RANGE,
              "task %d is '%.*s': a multi-label entry is 0, 1, or -1/nan for missing", column + 1,
              (int)(p - tok), tok);
  }
  *pp = load_skip_blank(p);
done:
  return st;
}

/* One row of `width` multi-label entries (parse_target). */
static halo_status parse_target_row(const load_reader *r, const char *line, int32_t width,
                                    int8_t *out) {
  halo_status st = HALO_OK;
  const char *p = line;
  for (int32_t c = 0; c < width; c++) {
    HALO_TRY(parse_target(r, &p, c, &out[c]));
    if (*p == ',' && c + 1 < width) {
      p++;
      continue;
    }
    if (*p == ',' || (*p == '\0' && c + 1 < width))
      LOAD_FAIL(r, HALO_ERR_PARSE, "row has %d labels, expected %d as on line 1",
                *p == ',' ? count_fields(line) : c + 1, width);
    if (*p != '\0') LOAD_FAIL(r, HALO_ERR_PARSE, "unexpected '%c' after label %d", *p, c + 1);
  }
done:
  return st;
}

/* The rest of a multi-label file whose first row has `width` columns: one
 * row of `width` entries per node (parse_target). */
static halo_status read_targets(load_reader *r, char *line, int64_t n, int32_t width,
                                int8_t **out) {
  halo_status st = HALO_OK;
  int8_t *t = NULL;
  if ((uint64_t)n * (uint64_t)width > SIZE_MAX)
    LOAD_FAIL(r, HALO_ERR_NOMEM, "%lld x %d label entries exceed the address space", (long long)n,
              width);
  HALO_ALLOC(t, (size_t)n * (size_t)width, "node labels (multi-label)");
  int64_t row = 0;
  size_t len;
  int got = 1;
  for (; got > 0; got = load_reader_next(r, &line, &len)) {
    if (row >= n)
      LOAD_FAIL(r, HALO_ERR_MISMATCH, "more label rows than the %lld nodes of the graph",
                (long long)n);
    HALO_TRY(parse_target_row(r, line, width, &t[(size_t)row * (size_t)width]));
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

halo_status load_labels_file(halo_graph *g, const char *path, halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int32_t *labels = NULL;
  int8_t *targets = NULL;
  const int64_t n = g->n;
  if (load_npy_is_npy(path)) return npy_node_file(g, path, digest, 1);
  HALO_TRY(load_reader_open(&r, path, digest));

  char *line;
  size_t len;
  int got = load_reader_next(&r, &line, &len);
  int32_t width = got > 0 ? count_fields(line) : 1;
  if (width > 1) {
    /* Several columns: one binary task each (ogbn-proteins' 112). */
    HALO_TRY(read_targets(&r, line, n, width, &targets));
  } else {
    HALO_ALLOC(labels, n, "node labels");
    int64_t row = 0;
    int32_t max_label = -1;
    for (; got > 0; got = load_reader_next(&r, &line, &len)) {
      if (row >= n)
        LOAD_FAIL(&r, HALO_ERR_MISMATCH, "more labels than the %lld nodes of the graph",
                  (long long)n);
      HALO_TRY(parse_label(&r, line, &labels[row]));
      if (labels[row] > max_label) max_label = labels[row];
      row++;
    }
    if (got < 0) HALO_TRY(got);
    if (row != n)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH, "%lld labels, but the graph has %lld nodes", (long long)row,
                (long long)n);
    width = max_label + 1;
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
                    count_fields(tok));
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
  halo_status st = HALO_OK;
  if (!g) HALO_FAIL(HALO_ERR_ARG, "halo_load_node_data: no graph");
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  if (feat_path) HALO_TRY(load_features_file(g, feat_path, &digest));
  if (label_path) HALO_TRY(load_labels_file(g, label_path, &digest));
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

/* Node u's label, split and feature row (x may be NULL when features = 0). */
static inline void synth_node(const halo_node_synth *s, const float *mean, int64_t u, float *x,
                              int32_t *label, uint8_t *split) {
  const uint64_t noise_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 3, 0);
  const uint64_t split_key = halo_rng_key(s->seed, HALO_RNG_FEATURES, 4, 0);
  const int64_t width = s->features;
  const float noise = (float)s->noise;
  int32_t c = load_synth_class(s->seed, s->classes, u);
  *label = c;
  double r = halo_rng_uniform_double(split_key, (uint64_t)u, 0);
  *split = r < s->train              ? HALO_SPLIT_TRAIN
           : r < s->train + s->valid ? HALO_SPLIT_VALID
                                     : HALO_SPLIT_TEST;
  for (int64_t f = 0; f < width; f++)
    x[f] = mean[c * width + f] + noise * normalish(halo_rng_bits(noise_key, (uint64_t)u, (uint64_t)f));
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

halo_status load_synth_node_data(halo_graph *g, const halo_node_synth *s) {
  halo_status st = HALO_OK;
  const int64_t n = g->n;
  const int64_t width = s->features;
  int32_t *labels = NULL;
  float *x = NULL, *mean = NULL;
  uint8_t *split = NULL;
  HALO_ALLOC(labels, n, "node labels");
  HALO_ALLOC(split, n, "node split");
  if (width > 0) {
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
  free(g->x);
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

/* The comma-separated fields of the file's first line (1 for an empty file). */
static halo_status first_line_fields(const char *path, int32_t *width) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  char *line;
  size_t len;
  HALO_TRY(load_reader_open(&r, path, NULL));
  int got = load_reader_next(&r, &line, &len);
  if (got < 0) HALO_TRY(got);
  *width = got > 0 ? count_fields(line) : 1;
done:
  load_reader_close(&r);
  return st;
}

halo_status halo_load_node_width(const char *path, int32_t *width) {
  return first_line_fields(path, width);
}

const char *halo_load_node_rows_name(int is_labels, int32_t width) {
  return !is_labels ? "feature rows" : width > 1 ? "label rows" : "labels";
}

size_t halo_load_node_item(int is_labels, int32_t width) {
  return !is_labels ? sizeof(float) : width > 1 ? sizeof(int8_t) : sizeof(int32_t);
}

/* One row of a node-data file into row `at` of the block's data: features,
 * a label, or a multi-label row (labels of width > 1). */
static halo_status node_row(const load_reader *r, const char *line, int is_labels, int32_t width,
                            void *data, int64_t at, int32_t *max_label) {
  halo_status st = HALO_OK;
  if (is_labels && width > 1) {
    HALO_TRY(parse_target_row(r, line, width, (int8_t *)data + at * width));
  } else if (is_labels) {
    int32_t *label = (int32_t *)data + at;
    HALO_TRY(parse_label(r, line, label));
    if (*label > *max_label) *max_label = *label;
  } else {
    HALO_TRY(parse_feature_row(r, line, width, (float *)data + at * width));
  }
done:
  return st;
}

halo_status halo_load_node_stream(const char *path, int is_labels, int64_t nodes, int64_t block,
                                  halo_node_emit emit, void *ctx, int32_t *max_label,
                                  halo_digest_chunked *digest) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int32_t width = 1;
  int64_t rows = 0, first = 0;
  void *data = NULL;
  char *line;
  size_t len;
  int got;
  *max_label = -1;
  HALO_TRY(halo_load_node_width(path, &width));
  data = malloc((size_t)block * (size_t)width * halo_load_node_item(is_labels, width));
  if (!data) HALO_FAIL(HALO_ERR_NOMEM, "%s: out of memory allocating a block of rows", path);
  HALO_TRY(load_reader_open(&r, path, digest));
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    if (first + rows >= nodes)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH, "more %s than the %lld nodes of the graph",
                halo_load_node_rows_name(is_labels, width), (long long)nodes);
    HALO_TRY(node_row(&r, line, is_labels, width, data, rows, max_label));
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

/* Reads a slice's rows, features (is_labels 0) or labels. */
static halo_status node_slice(const char *path, int64_t slice, int64_t slices, int64_t line_base,
                              int64_t nodes, int is_labels, halo_node_slice *out) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  int64_t lines = 0, cap = 0;
  char *line;
  size_t len;
  int got;
  *out = (halo_node_slice){.first = line_base, .width = 1, .max_label = -1};
  HALO_TRY(halo_load_node_width(path, &out->width));
  HALO_TRY(halo_load_slice_lines(path, slice, slices, &lines));
  cap = lines;
  void *data = NULL;
  if (is_labels && out->width > 1)
    HALO_ALLOC(out->targets, cap * out->width, "node labels (multi-label)");
  else if (is_labels)
    HALO_ALLOC(out->labels, cap, "node labels");
  else
    HALO_ALLOC(out->x, cap * out->width, "node features");
  data = out->targets ? (void *)out->targets : out->labels ? (void *)out->labels : (void *)out->x;
  HALO_TRY(load_reader_open_slice(&r, path, slice, slices));
  r.line_base = line_base;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    if (line_base + out->rows >= nodes)
      LOAD_FAIL(&r, HALO_ERR_MISMATCH, "more %s than the %lld nodes of the graph",
                halo_load_node_rows_name(is_labels, out->width), (long long)nodes);
    if (out->rows == cap) LOAD_FAIL(&r, HALO_ERR_IO, "the file changed while it was read");
    HALO_TRY(node_row(&r, line, is_labels, out->width, data, out->rows, &out->max_label));
    out->rows++;
  }
  if (got < 0) HALO_TRY(got);
done:
  load_reader_close(&r);
  if (st != HALO_OK) halo_node_slice_free(out);
  return st;
}

halo_status halo_load_features_slice(const char *path, int64_t slice, int64_t slices,
                                     int64_t line_base, int64_t nodes, halo_node_slice *out) {
  return node_slice(path, slice, slices, line_base, nodes, 0, out);
}

halo_status halo_load_labels_slice(const char *path, int64_t slice, int64_t slices,
                                   int64_t line_base, int64_t nodes, halo_node_slice *out) {
  return node_slice(path, slice, slices, line_base, nodes, 1, out);
}

void halo_node_slice_free(halo_node_slice *s) {
  if (!s) return;
  free(s->x);
  free(s->labels);
  free(s->targets);
  s->x = NULL;
  s->labels = NULL;
  s->targets = NULL;
  s->rows = 0;
}
