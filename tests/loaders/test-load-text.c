/* Text inputs as people write them: a drawn graph written as a CSV edge
 * list with a header row, features separated by spaces or tabs, labels
 * with a header, must load equal to the plain files (the oracle: the same
 * arrays written without any of it); header detection's edge cases;
 * every slicing of a header file gives the whole file's rows; the class
 * count's rule and --classes; --nodes with isolated nodes; and binary
 * files named by their first bytes.  Seeded (HALO_TEST_SEED), the seed
 * printed. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "load-impl.h"
#include "loader-test.h"

static uint64_t test_seed(const char *name) {
  const char *env = getenv("HALO_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 10) : 36;
  fprintf(stderr, "%s: seed %llu (set HALO_TEST_SEED to change)\n", name, (unsigned long long)seed);
  return seed;
}

/* A drawn graph: n nodes (ids 0..n-1, each on an edge), m edges, F
 * features of two decimals, labels in [0, C). */
typedef struct drawn {
  int n, m, F, C;
  int *src, *dst;
  float *x;
  int *label;
} drawn;

static drawn draw(uint64_t seed, int n, int m, int F, int C) {
  drawn d = {.n = n, .m = m, .F = F, .C = C};
  d.src = calloc((size_t)m, sizeof *d.src);
  d.dst = calloc((size_t)m, sizeof *d.dst);
  d.x = calloc((size_t)n * (size_t)F, sizeof *d.x);
  d.label = calloc((size_t)n, sizeof *d.label);
  cr_assert(d.src && d.dst && d.x && d.label);
  for (int e = 0; e < m; e++) {
    d.src[e] = e < n ? e : (int)(halo_rng_bits(seed, 1, (uint64_t)e) % (uint64_t)n);
    d.dst[e] = (int)(halo_rng_bits(seed, 2, (uint64_t)e) % (uint64_t)n);
  }
  for (int k = 0; k < n * F; k++)
    d.x[k] = (float)((int64_t)(halo_rng_bits(seed, 3, (uint64_t)k) % 2001) - 1000) / 100.0f;
  for (int v = 0; v < n; v++)
    d.label[v] = v < C ? v : (int)(halo_rng_bits(seed, 4, (uint64_t)v) % (uint64_t)C);
  return d;
}

static void drawn_free(drawn *d) {
  free(d->src);
  free(d->dst);
  free(d->x);
  free(d->label);
}

/* Text into a growing buffer. */
typedef struct text {
  char *s;
  size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  while (t->len + (size_t)k + 1 > t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4096;
    t->s = realloc(t->s, t->cap);
    cr_assert(t->s);
  }
  va_start(ap, fmt);
  vsnprintf(t->s + t->len, (size_t)k + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)k;
}

/* The edge list: `header` (or NULL) then "s<sep>d" lines. */
static const char *write_edges(const char *name, const drawn *d, const char *header,
                               const char *sep) {
  text t = {0};
  put(&t, "%s", "");
  if (header) put(&t, "%s\n", header);
  for (int e = 0; e < d->m; e++) put(&t, "%d%s%d\n", d->src[e], sep, d->dst[e]);
  const char *path = scratch_write(name, t.s);
  free(t.s);
  return path;
}

static const char *write_features(const char *name, const drawn *d, const char *header,
                                  const char *sep) {
  text t = {0};
  put(&t, "%s", "");
  if (header) put(&t, "%s\n", header);
  for (int v = 0; v < d->n; v++)
    for (int f = 0; f < d->F; f++) put(&t, "%.2f%s", d->x[v * d->F + f], f + 1 < d->F ? sep : "\n");
  const char *path = scratch_write(name, t.s);
  free(t.s);
  return path;
}

static const char *write_labels(const char *name, const drawn *d, const char *header) {
  text t = {0};
  put(&t, "%s", "");
  if (header) put(&t, "%s\n", header);
  for (int v = 0; v < d->n; v++) put(&t, "%d\n", d->label[v]);
  const char *path = scratch_write(name, t.s);
  free(t.s);
  return path;
}

static halo_graph *load_with(const char *edges, const char *feat, const char *lab,
                             const halo_load_options *opt) {
  halo_graph *g = NULL;
  halo_status st = halo_load_opts(edges, HALO_FORMAT_EDGELIST, opt, &g);
  cr_assert_eq(st, HALO_OK, "%s: %s", edges, halo_status_str(st));
  st = halo_load_node_data_opts(g, feat, lab, opt);
  cr_assert_eq(st, HALO_OK, "%s, %s: %s", feat, lab, halo_status_str(st));
  return g;
}

static void expect_same_graph(const halo_graph *a, const halo_graph *b, const char *what) {
  cr_assert_eq(a->n, b->n, "%s: n", what);
  cr_assert_eq(a->m, b->m, "%s: m", what);
  cr_expect_arr_eq(a->indptr, b->indptr, sizeof(int64_t) * (size_t)(a->n + 1), "%s", what);
  cr_expect_arr_eq(a->indices, b->indices, sizeof(int64_t) * (size_t)a->m, "%s", what);
  cr_assert_eq(a->features, b->features, "%s: features", what);
  if (a->features > 0)
    cr_expect_arr_eq(a->x, b->x, sizeof(float) * (size_t)a->n * (size_t)a->features, "%s", what);
  cr_assert_eq(a->classes, b->classes, "%s: classes", what);
  cr_assert_eq(!a->labels, !b->labels, "%s: labels", what);
  if (a->labels) cr_expect_arr_eq(a->labels, b->labels, sizeof(int32_t) * (size_t)a->n, "%s", what);
}

/* ---- layouts: the same arrays in every way of writing them ------------- */

Test(text, header_csv_and_blank_separated_files_load_as_the_plain_ones) {
  const uint64_t seed = test_seed("text.layouts");
  drawn d = draw(seed, 40, 150, 3, 5);
  halo_graph *want = load_with(write_edges("plain.txt", &d, NULL, " "),
                               write_features("plain-x.csv", &d, NULL, ","),
                               write_labels("plain-y.csv", &d, NULL), NULL);
  cr_assert_eq(want->n, 40);
  cr_assert_eq(want->features, 3);
  cr_assert_eq(want->classes, 5);
  struct {
    const char *what, *edges_header, *edge_sep, *feat_header, *feat_sep, *label_header;
  } ways[] = {
      {"header csv, space features", "src,dst", ",", NULL, " ", NULL},
      {"header csv, headed space features and labels", "src,dst", ",", "a b c", " ", "label"},
      {"names of any kind, tabs", "from\tto", "\t", "f0\tf1\tf2", "\t", "y"},
      {"comma and space", "source, target", ", ", "x,y,z", ", ", "class"},
  };
  for (size_t k = 0; k < sizeof ways / sizeof ways[0]; k++) {
    char name[3][32];
    snprintf(name[0], sizeof name[0], "e%zu.csv", k);
    snprintf(name[1], sizeof name[1], "x%zu.txt%s", k, k == 3 ? ".gz" : "");
    snprintf(name[2], sizeof name[2], "y%zu.csv", k);
    halo_graph *g = load_with(write_edges(name[0], &d, ways[k].edges_header, ways[k].edge_sep),
                              write_features(name[1], &d, ways[k].feat_header, ways[k].feat_sep),
                              write_labels(name[2], &d, ways[k].label_header), NULL);
    expect_same_graph(g, want, ways[k].what);
    cr_expect_neq(g->source_digest, want->source_digest, "the header row is digested");
    halo_graph_destroy(&g);
  }
  halo_graph_destroy(&want);
  drawn_free(&d);
}

/* ---- header detection --------------------------------------------------- */

static int64_t header_of(const char *name, const char *body, halo_header mode, int comments) {
  load_text t;
  halo_status st = load_text_layout(scratch_write(name, body), mode, comments, &t);
  cr_assert_eq(st, HALO_OK, "%s", name);
  return t.header_line;
}

Test(text, header_detection_edge_cases) {
  /* A first line of numbers is data, whatever follows. */
  cr_expect_eq(header_of("n1.csv", "1,2\n3,4\n", HALO_HEADER_AUTO, 0), 0);
  cr_expect_eq(header_of("n2.csv", "1e3,nan,-inf\n0,0,0\n", HALO_HEADER_AUTO, 0), 0);
  /* A header of one column (a labels file), and of several. */
  cr_expect_eq(header_of("h1.csv", "label\n3\n1\n", HALO_HEADER_AUTO, 0), 1);
  cr_expect_eq(header_of("h2.csv", "src,dst\n0,1\n", HALO_HEADER_AUTO, 0), 1);
  cr_expect_eq(header_of("h3.csv", ",a,b\n0,1,2\n", HALO_HEADER_AUTO, 0), 1);
  /* One name among numbers is still a header row. */
  cr_expect_eq(header_of("h4.csv", "0,1,label\n0,1,2\n", HALO_HEADER_AUTO, 0), 1);
  /* Not a header when line 2 is no data: line 1 is then a bad row. */
  cr_expect_eq(header_of("b1.csv", "label\n", HALO_HEADER_AUTO, 0), 0);
  cr_expect_eq(header_of("b2.csv", "a,b\nc,d\n1,2\n", HALO_HEADER_AUTO, 0), 0);
  /* An edge list's comments and blank lines come before its header. */
  cr_expect_eq(header_of("c1.txt", "# SNAP\n\n# more\nfrom to\n0 1\n", HALO_HEADER_AUTO, 1), 4);
  cr_expect_eq(header_of("c2.txt", "# SNAP\n0 1\n1 2\n", HALO_HEADER_AUTO, 1), 0);
  /* --header yes takes a header of numbers (pandas' "0,1,2"). */
  cr_expect_eq(header_of("y1.csv", "0,1,2\n5,6,7\n", HALO_HEADER_YES, 0), 1);
  cr_expect_eq(header_of("y2.csv", "0,1,2\n5,6,7\n", HALO_HEADER_NO, 0), 0);
  /* --header no refuses a header row, naming its line. */
  load_text t;
  capture_begin();
  halo_status st =
      load_text_layout(scratch_write("no.csv", "#x\nsrc dst\n0 1\n"), HALO_HEADER_NO, 1, &t);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_PARSE);
  cr_expect(strstr(said, "no.csv:2: has a header row ('src dst')") != NULL, "%s", said);
  /* Loaded: the numeric header skipped with yes, and loaded as data without. */
  halo_graph *g = NULL;
  const halo_load_options yes = {.header = HALO_HEADER_YES};
  cr_assert_eq(
      halo_load_opts(scratch_write("y.txt", "7 8\n0 1\n1 2\n"), HALO_FORMAT_EDGELIST, &yes, &g),
      HALO_OK);
  cr_expect_eq(g->n, 3, "the line '7 8' is the header");
  cr_assert_eq(
      halo_load_node_data_opts(g, scratch_write("yx.csv", "0,1\n1,1\n2,2\n3,3\n"), NULL, &yes),
      HALO_OK);
  cr_expect_eq(g->x[0], 1.0f);
  halo_graph_destroy(&g);
  /* Two lines of words: no header row, a bad line 1. */
  EXPECT_LOAD_ERROR(scratch_write("word.txt", "a b\nc d\n"), HALO_FORMAT_AUTO, HALO_ERR_PARSE,
                    "word.txt:1:", "'a' is not a node id");
}

/* A mixed separator is named at its line. */
Test(text, one_separator_per_file) {
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(scratch_write("s.txt", "0 1\n1 2\n2 0\n"), HALO_FORMAT_EDGELIST, &g),
               HALO_OK);
  capture_begin();
  halo_status st = halo_load_node_data(g, scratch_write("mixed.txt", "1 2\n3 4\n5,6\n"), NULL);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_PARSE);
  cr_expect(strstr(said, "mixed.txt:3: unexpected ',' after value 1") != NULL, "%s", said);
  capture_begin();
  st = halo_load_node_data(g, scratch_write("short.txt", "h1 h2\n1 2\n3\n5 6\n"), NULL);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_PARSE);
  cr_expect(strstr(said, "short.txt:3: row has 1 values, expected 2 as on line 2") != NULL, "%s",
            said);
  halo_graph_destroy(&g);
}

/* Edge lists separated by commas, and a third column read as the weight. */
Test(text, edge_list_separators) {
  halo_graph *a = NULL, *b = NULL;
  cr_assert_eq(halo_load(scratch_write("sp.txt", "# x\n0 1\n1 2\n"), HALO_FORMAT_EDGELIST, &a),
               HALO_OK);
  cr_assert_eq(halo_load(scratch_write("co.txt", "# x\n0,1\n1 ,\t2\n"), HALO_FORMAT_EDGELIST, &b),
               HALO_OK);
  expect_same_graph(a, b, "commas");
  halo_graph_destroy(&a);
  halo_graph_destroy(&b);
  /* A third value is a weight, whatever the separators. */
  cr_assert_eq(halo_load(scratch_write("c2.txt", "0 1,2\n"), HALO_FORMAT_EDGELIST, &a), HALO_OK);
  cr_assert(a->edge_weight);
  cr_expect_eq(a->edge_weight[0], 2.0f);
  halo_graph_destroy(&a);
  EXPECT_LOAD_ERROR(scratch_write("c3.txt", "0,,1\n"), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "c3.txt:1:", "missing value where a node id was expected");
  EXPECT_LOAD_ERROR(scratch_write("c4.txt", "0;1\n"), HALO_FORMAT_EDGELIST, HALO_ERR_PARSE,
                    "c4.txt:1:", "'0;1' is not a node id");
}

/* ---- the slices of a header file ----------------------------------------- */

Test(text, every_slicing_of_header_files_gives_the_whole_files_rows) {
  const uint64_t seed = test_seed("text.slices");
  drawn d = draw(seed, 60, 200, 4, 6);
  const char *edges = write_edges("sl.csv", &d, "src,dst", ",");
  const char *feat = write_features("sl-x.txt", &d, "a b c d", " ");
  const char *lab = write_labels("sl-y.csv", &d, "label");
  halo_graph *g = load_with(edges, feat, lab, NULL);
  for (int64_t K = 1; K <= 7; K++) {
    int64_t base[3] = {0, 0, 0}, rows = 0, labels = 0, pairs = 0;
    int32_t max_label = -1;
    for (int64_t k = 0; k < K; k++) {
      const char *paths[3] = {edges, feat, lab};
      int64_t lines[3];
      for (int f = 0; f < 3; f++)
        cr_assert_eq(halo_load_slice_lines(paths[f], k, K, &lines[f]), HALO_OK);
      halo_edge_slice es;
      const halo_load_options none = {0};
      cr_assert_eq(halo_load_edgelist_slice(edges, &none, k, K, base[0], &es), HALO_OK);
      for (int64_t e = 0; e < es.count; e++, pairs++) {
        cr_expect_eq(es.pair[2 * e], d.src[pairs], "K %lld: edge %lld", (long long)K,
                     (long long)pairs);
        cr_expect_eq(es.pair[2 * e + 1], d.dst[pairs]);
      }
      halo_edge_slice_free(&es);
      halo_node_slice ns;
      cr_assert_eq(halo_load_features_slice(feat, NULL, k, K, base[1], g->n, &ns), HALO_OK);
      cr_expect_eq(ns.first, rows, "K %lld slice %lld: its first row", (long long)K, (long long)k);
      cr_assert_eq(ns.width, 4);
      cr_assert_not_null(ns.x, "two-decimal rows break the density rule: dense");
      cr_expect_arr_eq(ns.x, g->x + ns.first * 4, sizeof(float) * 4 * (size_t)ns.rows);
      rows += ns.rows;
      halo_node_slice_free(&ns);
      cr_assert_eq(halo_load_labels_slice(lab, NULL, k, K, base[2], g->n, &ns), HALO_OK);
      cr_expect_eq(ns.first, labels);
      cr_expect_arr_eq(ns.labels, g->labels + ns.first, sizeof(int32_t) * (size_t)ns.rows);
      if (ns.max_label > max_label) max_label = ns.max_label;
      labels += ns.rows;
      halo_node_slice_free(&ns);
      for (int f = 0; f < 3; f++) base[f] += lines[f];
    }
    cr_expect_eq(pairs, d.m, "K %lld: every edge once", (long long)K);
    cr_expect_eq(rows, g->n, "K %lld: every row once, the header none", (long long)K);
    cr_expect_eq(labels, g->n);
    cr_expect_eq(max_label + 1, g->classes);
  }
  halo_graph_destroy(&g);
  drawn_free(&d);
}

/* A sparse file's slices come back as CSR (#36: the distributed
 * partitioner carries them so, never dense), with the file's rows: every
 * slicing, against the drawn matrix. */
Test(text, the_slices_of_a_sparse_file_are_csr) {
  const uint64_t seed = test_seed("text.sparse-slices");
  enum { N = 97, F = 61 };
  static float x[N][F];
  char *text = malloc((size_t)N * F * 8 + 1), *at = text;
  cr_assert_not_null(text);
  for (int v = 0; v < N; v++)
    for (int j = 0; j < F; j++) {
      const uint64_t bits = halo_rng_bits(seed, (uint64_t)v, (uint64_t)j);
      x[v][j] = bits % 23 == 0 ? (float)(1 + (bits >> 32) % 7) * 0.5f : 0.0f;
      at += sprintf(at, j + 1 < F ? "%g," : "%g\n", (double)x[v][j]);
    }
  const char *feat = scratch_write("sparse-x.csv", text);
  free(text);
  for (int64_t K = 1; K <= 5; K++) {
    int64_t base = 0, rows = 0;
    for (int64_t k = 0; k < K; k++) {
      int64_t lines = 0;
      halo_node_slice ns;
      cr_assert_eq(halo_load_slice_lines(feat, k, K, &lines), HALO_OK);
      cr_assert_eq(halo_load_features_slice(feat, NULL, k, K, base, N, &ns), HALO_OK);
      cr_assert_eq(ns.width, F);
      cr_assert_null(ns.x, "K %lld slice %lld: a sparse slice is not held dense", (long long)K,
                     (long long)k);
      cr_assert_not_null(ns.indptr);
      cr_expect_eq(ns.indptr[0], 0);
      for (int64_t r = 0; r < ns.rows; r++) {
        float row[F] = {0};
        for (int64_t e = ns.indptr[r]; e < ns.indptr[r + 1]; e++) {
          cr_assert(ns.indices[e] >= 0 && ns.indices[e] < F);
          cr_expect(e == ns.indptr[r] || ns.indices[e] > ns.indices[e - 1], "ascending");
          cr_expect_neq(ns.values[e], 0.0f);
          row[ns.indices[e]] = ns.values[e];
        }
        cr_expect_arr_eq(row, x[ns.first + r], sizeof row, "K %lld: row %lld", (long long)K,
                         (long long)(ns.first + r));
      }
      rows += ns.rows;
      base += lines;
      halo_node_slice_free(&ns);
    }
    cr_expect_eq(rows, N, "K %lld: every row once", (long long)K);
  }
}

/* ---- the class count ------------------------------------------------------ */

Test(text, the_class_rule) {
  int32_t c = 0;
  /* Labels 0..3 and a stray 99: refused, the hint names --classes. */
  capture_begin();
  halo_status st = halo_load_check_classes("f.csv:3", 99, 5, 0, &c);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_RANGE);
  cr_expect(strstr(said, "f.csv:3: label 99 makes 100 classes") != NULL, "%s", said);
  cr_expect(strstr(said, "--classes 100") != NULL, "%s", said);
  /* A few unused classes pass: 47 classes, 30 in use. */
  cr_expect_eq(halo_load_check_classes("w", 46, 30, 0, &c), HALO_OK);
  cr_expect_eq(c, 47);
  /* Half of them used passes, fewer does not. */
  cr_expect_eq(halo_load_check_classes("w", 19, 10, 0, &c), HALO_OK);
  capture_begin();
  cr_expect_eq(halo_load_check_classes("w", 20, 10, 0, &c), HALO_ERR_RANGE);
  capture_end();
  /* Below 8, anything goes: labels {0, 7} make 8 classes. */
  cr_expect_eq(halo_load_check_classes("w", 7, 2, 0, &c), HALO_OK);
  cr_expect_eq(c, 8);
  /* --classes: the count, whatever is used; a label >= C refused. */
  cr_expect_eq(halo_load_check_classes("w", 99, 5, 100, &c), HALO_OK);
  cr_expect_eq(c, 100);
  cr_expect_eq(halo_load_check_classes("w", -1, 0, 4, &c), HALO_OK);
  cr_expect_eq(c, 4);
  capture_begin();
  cr_expect_eq(halo_load_check_classes("w:9", 4, 5, 4, &c), HALO_ERR_RANGE);
  said = capture_end();
  cr_expect(strstr(said, "w:9: label 4 is out of range for --classes 4") != NULL, "%s", said);
  /* No labels at all: none. */
  cr_expect_eq(halo_load_check_classes("w", -1, 0, 0, &c), HALO_OK);
  cr_expect_eq(c, 0);
}

Test(text, label_files_under_the_rule) {
  halo_graph *g = NULL;
  cr_assert_eq(
      halo_load(scratch_write("r.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n"), HALO_FORMAT_EDGELIST, &g),
      HALO_OK);
  const char *stray = scratch_write("stray.csv", "label\n0\n1\n99\n2\n3\n99\n");
  capture_begin();
  halo_status st = halo_load_node_data(g, NULL, stray);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_RANGE);
  cr_expect(strstr(said, "stray.csv:4: label 99 makes 100 classes, but at most 6 distinct") != NULL,
            "%s", said);
  const halo_load_options c100 = {.classes = 100}, c4 = {.classes = 4}, c3 = {.classes = 3};
  cr_assert_eq(halo_load_node_data_opts(g, NULL, stray, &c100), HALO_OK);
  cr_expect_eq(g->classes, 100);
  capture_begin();
  st = halo_load_node_data_opts(g, NULL, stray, &c4);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_RANGE);
  cr_expect(strstr(said, "stray.csv:4: label 99 is out of range for --classes 4") != NULL, "%s",
            said);
  /* Multi-label rows are exempt; --classes must be their width. */
  const char *multi = scratch_write("multi.csv", "0,1,1\n1,0,nan\n0,0,0\n1,1,1\n0,1,0\n0,0,1\n");
  cr_assert_eq(halo_load_node_data(g, NULL, multi), HALO_OK);
  cr_expect_eq(g->classes, 3);
  cr_expect(g->multilabel);
  cr_assert_eq(halo_load_node_data_opts(g, NULL, multi, &c3), HALO_OK);
  capture_begin();
  st = halo_load_node_data_opts(g, NULL, multi, &c4);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_MISMATCH);
  cr_expect(strstr(said, "--classes 4: the first row has 3 columns") != NULL, "%s", said);
  halo_graph_destroy(&g);
}

/* ---- --nodes ---------------------------------------------------------------- */

Test(text, nodes_keeps_isolated_nodes_at_the_end) {
  const char *edges = scratch_write("iso.csv", "src,dst\n0,1\n2,3\n3,1\n");
  const char *feat = scratch_write("iso-x.csv", "1\n2\n3\n4\n5\n6\n");
  halo_graph *g = NULL;
  /* Without --nodes: 4 nodes, and 6 rows are refused with the hint. */
  cr_assert_eq(halo_load(edges, HALO_FORMAT_AUTO, &g), HALO_OK);
  cr_expect_eq(g->n, 4);
  capture_begin();
  const halo_load_options none = {0};
  halo_status st = halo_load_node_data_opts(g, feat, NULL, &none);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_MISMATCH);
  cr_expect(strstr(said, "iso-x.csv:5: more feature rows than the 4 nodes") != NULL, "%s", said);
  cr_expect(strstr(said, "--nodes N") != NULL && strstr(said, "OGB folder") != NULL, "%s", said);
  halo_graph_destroy(&g);
  /* With --nodes 6: nodes 4 and 5 stay, without edges. */
  const halo_load_options six = {.nodes = 6};
  cr_assert_eq(halo_load_opts(edges, HALO_FORMAT_AUTO, &six, &g), HALO_OK);
  cr_expect_eq(g->n, 6);
  cr_expect_null(g->original_id, "the ids are kept");
  const int64_t indptr[] = {0, 1, 1, 2, 3, 3, 3}, indices[] = {1, 3, 1};
  expect_csr(g, 6, indptr, 3, indices);
  cr_assert_eq(halo_load_node_data_opts(g, feat, NULL, &six), HALO_OK);
  cr_expect_eq(g->x[5], 6.0f);
  halo_graph_destroy(&g);
  /* An id >= N at its line; an empty list is N isolated nodes. */
  const halo_load_options three = {.nodes = 3};
  capture_begin();
  st = halo_load_opts(edges, HALO_FORMAT_AUTO, &three, &g);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_RANGE);
  cr_expect(strstr(said, "iso.csv:3: node id 3 is out of range [0, 3) of --nodes 3") != NULL, "%s",
            said);
  cr_assert_eq(
      halo_load_opts(scratch_write("none.txt", "# nothing\n"), HALO_FORMAT_AUTO, &three, &g),
      HALO_OK);
  cr_expect_eq(g->n, 3);
  cr_expect_eq(g->m, 0);
  halo_graph_destroy(&g);
  /* --nodes is an edge list's. */
  capture_begin();
  st = halo_load_opts(LOADER_DATA "/general.mtx", HALO_FORMAT_AUTO, &three, &g);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_ARG);
  cr_expect(strstr(said, "is not an edge list") != NULL, "%s", said);
}

/* ---- binary files where text is expected --------------------------------- */

/* A zip's local header naming its first member. */
static size_t zip_head(unsigned char *b, const char *member) {
  memset(b, 0, 30);
  memcpy(b, "PK\x03\x04", 4);
  const size_t len = strlen(member);
  b[26] = (unsigned char)len;
  memcpy(b + 30, member, len);
  memcpy(b + 30 + len, "\x80\x02}q\x00.", 6);
  return 30 + len + 6;
}

Test(text, binary_files_are_named) {
  unsigned char b[128];
  struct {
    const char *name;
    const void *bytes;
    size_t len;
    load_file_kind kind;
    const char *said;
  } files[] = {
      {"a.npy", "\x93NUMPY\x01\x00v\x00{'descr': '<f4'", 24, LOAD_FILE_NPY, "a NumPy .npy file"},
      {"b.pkl", "\x80\x04\x95\x10\x00\x00\x00", 7, LOAD_FILE_PICKLE, "a Python pickle"},
      {"c.pt", "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15, LOAD_FILE_TORCH,
       "a PyTorch file (torch.save)"},
      {"d.h5", "\x89HDF\r\n\x1a\n\x00\x00", 10, LOAD_FILE_HDF5, "an HDF5 file"},
      {"e.parquet", "PAR1\x15\x04", 6, LOAD_FILE_PARQUET, "a Parquet file"},
      {"f.bin", "\x3f\xa1\xb4\x46\xf0\x4f\x2e\xdd\x01", 9, LOAD_FILE_DGL, "a DGL graph file"},
  };
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    const char *path = scratch_write_bytes(files[k].name, files[k].bytes, files[k].len);
    cr_expect_eq(load_sniff(path), files[k].kind, "%s", files[k].name);
    EXPECT_LOAD_ERROR(path, HALO_FORMAT_EDGELIST, HALO_ERR_FORMAT, files[k].name, "looks like",
                      files[k].said, "not a text file");
  }
  const char *npz = scratch_write_bytes("g.npz", b, zip_head(b, "x.npy"));
  cr_expect_eq(load_sniff(npz), LOAD_FILE_NPZ);
  EXPECT_LOAD_ERROR(npz, HALO_FORMAT_EDGELIST, HALO_ERR_FORMAT, "g.npz: looks like a NumPy .npz");
  const char *pt = scratch_write_bytes("h.pt", b, zip_head(b, "archive/data.pkl"));
  cr_expect_eq(load_sniff(pt), LOAD_FILE_TORCH);
  cr_expect_eq(load_sniff(scratch_write_bytes("i.zip", b, zip_head(b, "graph.txt"))),
               LOAD_FILE_ZIP);
  cr_expect_eq(load_sniff(scratch_write("j.txt", "0 1\n")), LOAD_FILE_TEXT);
  cr_expect_eq(load_sniff(scratch_write("k.txt.gz", "0 1\n")), LOAD_FILE_GZIP);
  /* Node-data files and slices too. */
  halo_graph *g = NULL;
  cr_assert_eq(halo_load(scratch_write("t.txt", "0 1\n"), HALO_FORMAT_EDGELIST, &g), HALO_OK);
  capture_begin();
  halo_status st = halo_load_node_data(g, NULL, pt);
  const char *said = capture_end();
  cr_expect_eq(st, HALO_ERR_FORMAT);
  cr_expect(strstr(said, "h.pt: looks like a PyTorch file") != NULL, "%s", said);
  cr_expect(strstr(said, "convert it with scripts/halo-import") != NULL, "%s", said);
  halo_graph_destroy(&g);
  halo_node_slice ns;
  capture_begin();
  st = halo_load_features_slice(npz, NULL, 0, 2, 0, 10, &ns);
  said = capture_end();
  cr_expect_eq(st, HALO_ERR_FORMAT);
  cr_expect(strstr(said, "looks like a NumPy .npz archive") != NULL, "%s", said);
}
