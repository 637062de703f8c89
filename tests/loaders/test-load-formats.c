/* Every loader on small hand-written inputs with hand-checked CSRs, the same
 * inputs in other encodings (gzip, CRLF, BOM, OGB download layouts), random
 * edge lists against an independent renumbering, and the bundled Cora. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-rng.h"
#include "loader-test.h"

#define MM_PATTERN_HEADER "%%MatrixMarket matrix coordinate pattern general\n"

static halo_graph *load_ok(const char *input, halo_format fmt) {
  halo_graph *g = NULL;
  halo_status st = halo_load(input, fmt, &g);
  cr_assert_eq(st, HALO_OK, "%s: %s", input, halo_status_str(st));
  cr_assert_not_null(g);
  return g;
}

/* ogb-tiny: 5 nodes; edges 0-1 3-0 1-2 0-4 4-3 0-2 2-2 3-0 (a duplicate and a
 * self-loop kept as they are), rows sorted by source then destination. */
static const int64_t TINY_INDPTR[] = {0, 3, 4, 5, 7, 8};
static const int64_t TINY_INDICES[] = {1, 2, 4, 2, 2, 0, 0, 3};
static const float TINY_X[] = {0.5f, -1, 2e-3f, 1, 0, 0, -0.25f, 3.5f, 100, 0, 0, 0.1f, 7, 8, 9};
static const int32_t TINY_LABELS[] = {0, 2, -1, 1, 2};
static const uint8_t TINY_SPLIT[] = {HALO_SPLIT_TRAIN, HALO_SPLIT_TRAIN, HALO_SPLIT_NONE,
                                     HALO_SPLIT_VALID, HALO_SPLIT_TEST};

static void expect_tiny(const halo_graph *g) {
  expect_csr(g, 5, TINY_INDPTR, 8, TINY_INDICES);
  cr_assert_eq(g->features, 3);
  for (int k = 0; k < 15; k++) cr_expect_eq(g->x[k], TINY_X[k], "x[%d] = %g", k, g->x[k]);
  cr_assert_eq(g->classes, 3);
  for (int k = 0; k < 5; k++) cr_expect_eq(g->labels[k], TINY_LABELS[k], "label %d", k);
  cr_assert_not_null(g->split);
  for (int k = 0; k < 5; k++) cr_expect_eq(g->split[k], TINY_SPLIT[k], "split %d", k);
}

static const char *const TINY_FILES[] = {
    "num-node-list.csv", "num-edge-list.csv", "edge.csv",        "node-feat.csv",
    "node-label.csv",    "split/train.csv",   "split/valid.csv", "split/test.csv"};
enum { TINY_FILE_COUNT = sizeof TINY_FILES / sizeof TINY_FILES[0] };

/* Copies ogb-tiny into scratch folder `dir`, its split files into `split_dir`
 * (dir/split when NULL), with a BOM and CRLF line ends when asked, and ".gz"
 * appended when asked. */
static void copy_tiny(const char *dir, const char *split_dir, int crlf_bom, int gz) {
  for (int f = 0; f < TINY_FILE_COUNT; f++) {
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/ogb-tiny/%s", LOADER_DATA, TINY_FILES[f]);
    size_t len;
    char *text = read_all(src, &len);
    char *out = malloc(2 * len + 4);
    size_t o = 0;
    if (crlf_bom) o += (size_t)sprintf(out, "\xEF\xBB\xBF");
    for (size_t i = 0; i < len; i++) {
      if (crlf_bom && text[i] == '\n') out[o++] = '\r';
      out[o++] = text[i];
    }
    out[o] = '\0';
    const char *name = TINY_FILES[f];
    if (strncmp(name, "split/", 6) == 0 && split_dir)
      snprintf(dst, sizeof dst, "%s/%s%s", split_dir, name + 6, gz ? ".gz" : "");
    else
      snprintf(dst, sizeof dst, "%s/%s%s", dir, name, gz ? ".gz" : "");
    scratch_write(dst, out);
    free(out);
    free(text);
  }
}

static const char *scratch_sub(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", scratch_dir(), name);
  return path;
}

Test(ogb, tiny_plain) {
  halo_graph *g = load_ok(LOADER_DATA "/ogb-tiny", HALO_FORMAT_AUTO);
  expect_tiny(g);
  cr_expect_str_eq(g->source, LOADER_DATA "/ogb-tiny");
  halo_graph_destroy(&g);
  cr_expect_null(g);
}

Test(ogb, tiny_gzip_crlf_bom_same_graph) {
  copy_tiny("gz", NULL, 1, 1);
  halo_graph *g = load_ok(scratch_sub("gz"), HALO_FORMAT_OGB);
  expect_tiny(g);
  halo_graph_destroy(&g);
}

Test(ogb, digest_covers_the_decompressed_bytes) {
  copy_tiny("plain", NULL, 0, 0);
  copy_tiny("gz", NULL, 0, 1);
  copy_tiny("crlf", NULL, 1, 0);
  halo_graph *a = load_ok(scratch_sub("plain"), HALO_FORMAT_OGB);
  halo_graph *b = load_ok(scratch_sub("gz"), HALO_FORMAT_OGB);
  halo_graph *c = load_ok(scratch_sub("crlf"), HALO_FORMAT_OGB);
  cr_expect_eq(a->source_digest, b->source_digest,
               "gzip must not change the digest of the content");
  cr_expect_neq(a->source_digest, c->source_digest, "other bytes, other digest");
  halo_graph_destroy(&a);
  halo_graph_destroy(&b);
  halo_graph_destroy(&c);
}

Test(ogb, plain_text_named_gz_is_accepted) {
  copy_tiny("fake", NULL, 0, 0);
  /* Plain text under a .gz name (preferred over edge.csv): zlib reads it transparently. */
  size_t len;
  char *text = read_all(LOADER_DATA "/ogb-tiny/edge.csv", &len);
  scratch_write_bytes("fake/edge.csv.gz", text, len);
  free(text);
  halo_graph *g = load_ok(scratch_sub("fake"), HALO_FORMAT_OGB);
  expect_tiny(g);
  halo_graph_destroy(&g);
}

Test(ogb, split_in_one_named_folder_and_raw_layout) {
  /* As OGB downloads unpack: DATASET/raw/... and DATASET/split/time/... */
  copy_tiny("ds/raw", "ds/split/time", 0, 1);
  halo_graph *top = load_ok(scratch_sub("ds"), HALO_FORMAT_AUTO);
  expect_tiny(top);
  halo_graph *raw = load_ok(scratch_sub("ds/raw"), HALO_FORMAT_OGB);
  expect_tiny(raw);
  halo_graph_destroy(&top);
  halo_graph_destroy(&raw);
}

Test(ogb, structure_only_folder) {
  scratch_write("s/num-node-list.csv", "4\n");
  scratch_write("s/edge.csv", "3,0\n0,3"); /* no final newline */
  halo_graph *g = load_ok(scratch_sub("s"), HALO_FORMAT_OGB);
  const int64_t indptr[] = {0, 1, 1, 1, 2}, indices[] = {3, 0};
  expect_csr(g, 4, indptr, 2, indices);
  cr_expect_eq(g->features, 0);
  cr_expect_null(g->x);
  cr_expect_eq(g->classes, 0);
  cr_expect_null(g->labels);
  cr_expect_null(g->split);
  halo_graph_destroy(&g);
}

Test(ogb, all_unlabelled_means_no_classes) {
  scratch_write("u/num-node-list.csv", "2\n");
  scratch_write("u/edge.csv", "0,1\n");
  scratch_write("u/node-label.csv", "nan\nNaN\n");
  halo_graph *g = load_ok(scratch_sub("u"), HALO_FORMAT_OGB);
  cr_expect_eq(g->classes, 0);
  cr_expect_null(g->labels);
  halo_graph_destroy(&g);
}

/* SNAP: ids 7, 42, 10^12, 2^63-1 become 0..3 in increasing order. */
Test(edgelist, sparse_64bit_ids) {
  halo_graph *g = load_ok(LOADER_DATA "/snap-sparse.txt", HALO_FORMAT_AUTO);
  const int64_t indptr[] = {0, 2, 3, 4, 5}, indices[] = {1, 1, 2, 0, 0};
  expect_csr(g, 4, indptr, 5, indices);
  cr_expect_eq(g->features, 0);
  cr_expect_eq(g->classes, 0);
  halo_graph_destroy(&g);
}

/* Ids 10, 20, 30 become 0, 1, 2; the self-loop 10-10 stays. */
Test(edgelist, dense_ids_with_gap) {
  halo_graph *g = load_ok(LOADER_DATA "/snap-dense.txt", HALO_FORMAT_EDGELIST);
  const int64_t indptr[] = {0, 2, 3, 4}, indices[] = {0, 1, 2, 0};
  expect_csr(g, 3, indptr, 4, indices);
  halo_graph_destroy(&g);
}

/* The buffer starts with 32-bit ids and widens at 2^32, keeping what it held. */
Test(edgelist, ids_cross_32_bits_midway) {
  const char *path = scratch_write("cross.txt", "5 6\n6 7\n7 5\n4294967296 5\n");
  halo_graph *g = load_ok(path, HALO_FORMAT_EDGELIST);
  const int64_t indptr[] = {0, 1, 2, 3, 4}, indices[] = {1, 2, 0, 0};
  expect_csr(g, 4, indptr, 4, indices);
  halo_graph_destroy(&g);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Random lists, with ids drawn from a small range (bitmap path) and from the
 * whole 63-bit range (hash path), against a reference renumbering by sorting. */
static void random_edgelist(uint64_t seed, uint64_t id_range, int M, int POOL) {
  fprintf(stderr, "random edge list: seed %llu, id range %llu, %d edges over %d ids\n",
          (unsigned long long)seed, (unsigned long long)id_range, M, POOL);
  uint64_t *pool = malloc(sizeof(uint64_t) * (size_t)POOL);
  for (int k = 0; k < POOL; k++) pool[k] = halo_rng_bits(seed, 1, (uint64_t)k) % id_range;
  int64_t(*pairs)[2] = malloc(sizeof(int64_t[2]) * (size_t)M);
  uint64_t *ids = malloc(sizeof(uint64_t) * 2 * (size_t)M);
  const size_t cap = (size_t)M * 48 + 64;
  char *text = malloc(cap);
  cr_assert(pool && pairs && ids && text);
  size_t o = (size_t)snprintf(text, cap, "# random\n");
  for (int e = 0; e < M; e++) {
    uint64_t s = pool[halo_rng_bits(seed, 2, (uint64_t)e) % POOL],
             d = pool[halo_rng_bits(seed, 3, (uint64_t)e) % POOL];
    ids[2 * e] = s;
    ids[2 * e + 1] = d;
    pairs[e][0] = (int64_t)s;
    pairs[e][1] = (int64_t)d;
    o += (size_t)snprintf(text + o, cap - o, e % 3 ? "%llu\t%llu\n" : "  %llu   %llu  \n",
                          (unsigned long long)s, (unsigned long long)d);
  }
  const char *path = scratch_write("random.txt", text);

  qsort(ids, 2 * (size_t)M, sizeof *ids, cmp_u64);
  int64_t n = 0;
  for (int k = 0; k < 2 * M; k++)
    if (k == 0 || ids[k] != ids[k - 1]) ids[n++] = ids[k];
  for (int e = 0; e < M; e++)
    for (int c = 0; c < 2; c++) {
      uint64_t key = (uint64_t)pairs[e][c];
      uint64_t *at = bsearch(&key, ids, (size_t)n, sizeof *ids, cmp_u64);
      pairs[e][c] = at - ids;
    }
  qsort(pairs, (size_t)M, sizeof *pairs, cmp_pair);
  int64_t *indptr = calloc((size_t)n + 1, sizeof *indptr),
          *indices = malloc(sizeof(int64_t) * (size_t)M);
  for (int e = 0; e < M; e++) {
    indptr[pairs[e][0] + 1]++;
    indices[e] = pairs[e][1];
  }
  for (int64_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];

  halo_graph *g = load_ok(path, HALO_FORMAT_EDGELIST);
  expect_csr(g, n, indptr, M, indices);
  halo_graph_destroy(&g);
  free(indptr);
  free(indices);
  free(text);
  free(ids);
  free(pairs);
  free(pool);
}

Test(edgelist, random_dense_ids) { random_edgelist(20261130, 5000, 3000, 700); }
Test(edgelist, random_sparse_ids) { random_edgelist(77, (uint64_t)INT64_MAX, 3000, 700); }
/* Long rows full of repeated ids, for the quicksort of each row. */
Test(edgelist, random_long_rows) { random_edgelist(55, 1000, 20000, 40); }
/* Enough nodes (2^17) for the radix sort to recurse, and for the hash set to grow. */
Test(edgelist, random_large) {
  random_edgelist(4242, 1u << 20, 300000, 100000);
  random_edgelist(4343, (uint64_t)INT64_MAX, 300000, 150000);
  random_edgelist(4444, (uint64_t)1 << 33, 300000, 150000);
}

/* Every value 1 ("1", "1.0", "1e0", "10e-1", "1.000"): no weights, read as
 * the graph of the same entries in a pattern file. */
Test(mtx, real_general) {
  halo_graph *g = load_ok(LOADER_DATA "/general.mtx", HALO_FORMAT_AUTO);
  const int64_t indptr[] = {0, 2, 3, 4, 5}, indices[] = {1, 3, 2, 2, 0};
  expect_csr(g, 4, indptr, 5, indices);
  halo_graph_destroy(&g);
  g = load_ok(scratch_write("pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                           "4 4 5\n1 2\n2 3\n4 1\n3 3\n1 4\n"),
              HALO_FORMAT_AUTO);
  expect_csr(g, 4, indptr, 5, indices);
  halo_graph_destroy(&g);
}

/* Symmetric: (2,1) (3,1) (3,3) stand for 1-0, 0-1, 2-0, 0-2 and the loop 2-2. */
Test(mtx, pattern_symmetric_stores_both_directions) {
  halo_graph *g = load_ok(LOADER_DATA "/symmetric.mtx", HALO_FORMAT_MTX);
  const int64_t indptr[] = {0, 2, 3, 5}, indices[] = {1, 2, 0, 0, 2};
  expect_csr(g, 3, indptr, 5, indices);
  halo_graph_destroy(&g);
}

Test(mtx, integer_general_and_gzip) {
  halo_graph *g = load_ok(LOADER_DATA "/integer.mtx", HALO_FORMAT_AUTO);
  const int64_t indptr[] = {0, 1, 1, 2}, indices[] = {2, 1};
  expect_csr(g, 3, indptr, 2, indices);
  halo_graph_destroy(&g);
  size_t len;
  char *text = read_all(LOADER_DATA "/integer.mtx", &len);
  const char *path = scratch_write("integer.mtx.gz", text);
  free(text);
  g = load_ok(path, HALO_FORMAT_AUTO);
  expect_csr(g, 3, indptr, 2, indices);
  halo_graph_destroy(&g);
}

/* A graph with nodes and no edges loads in every format that states its
 * node count (docs/partition.md, "Graphs without edges"): n rows, every
 * offset 0.  The edge list, which has no count, is refused in
 * test-load-bad. */
static void expect_no_edges(const char *input, halo_format fmt, int64_t n) {
  halo_graph *g = load_ok(input, fmt);
  cr_expect_eq(g->n, n, "%s: %lld nodes, expected %lld", input, (long long)g->n, (long long)n);
  cr_expect_eq(g->m, 0, "%s: %lld edges, expected none", input, (long long)g->m);
  for (int64_t i = 0; i <= g->n && i <= n; i++)
    cr_expect_eq(g->indptr[i], 0, "%s: indptr[%lld] = %lld", input, (long long)i,
                 (long long)g->indptr[i]);
  halo_graph_destroy(&g);
}

Test(format, graphs_without_edges_keep_their_nodes) {
  expect_no_edges(scratch_write("none.mtx", MM_PATTERN_HEADER "% no entries\n7 7 0\n"),
                  HALO_FORMAT_AUTO, 7);
  expect_no_edges(scratch_write("none.mtx.gz", MM_PATTERN_HEADER "3 3 0\n"), HALO_FORMAT_AUTO, 3);
  scratch_write("none-ogb/num-node-list.csv", "6\n");
  scratch_write("none-ogb/edge.csv", "");
  expect_no_edges(scratch_sub("none-ogb"), HALO_FORMAT_AUTO, 6);
  scratch_write("none-gz/num-node-list.csv", "4\n");
  scratch_write("none-gz/edge.csv.gz", ""); /* a gzip stream of no bytes */
  expect_no_edges(scratch_sub("none-gz"), HALO_FORMAT_OGB, 4);
  expect_no_edges("sbm:nodes=9,classes=3,avg-degree=0,feat=2,seed=5", HALO_FORMAT_AUTO, 9);
}

Test(format, names) {
  halo_format f;
  cr_expect_eq(halo_format_parse("auto", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_AUTO);
  cr_expect_eq(halo_format_parse("ogb", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_OGB);
  cr_expect_eq(halo_format_parse("snap", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_EDGELIST);
  cr_expect_eq(halo_format_parse("edgelist", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_EDGELIST);
  cr_expect_eq(halo_format_parse("mtx", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_MTX);
  cr_expect_eq(halo_format_parse("spec", &f), HALO_OK);
  cr_expect_eq(f, HALO_FORMAT_SPEC);
}

/* The format table: a row for every format, found by its name, with a
 * reader, and the slice and stream readers its slicing needs. */
Test(format, table) {
  cr_expect_null(halo_format_row_of(HALO_FORMAT_AUTO));
  int fallbacks = 0;
  for (halo_format f = HALO_FORMAT_OGB; f <= HALO_FORMAT_SPEC; f++) {
    const halo_format_row *r = halo_format_row_of(f);
    halo_format parsed = HALO_FORMAT_AUTO;
    cr_assert_not_null(r, "format %d has no row", (int)f);
    cr_expect_eq(r->format, f);
    cr_expect_eq(halo_format_parse(r->name, &parsed), HALO_OK);
    cr_expect_eq(parsed, f);
    cr_expect_not_null(r->load);
    cr_expect_neq(r->slicing, HALO_SLICING_NONE, "%s: every format today is read by slices",
                  r->name);
    if (r->slicing == HALO_SLICING_LINES) cr_expect(r->slice && r->stream, "%s", r->name);
    fallbacks += r->guess_order == 0;
    cr_expect_eq(r->guess == NULL, r->guess_order == 0, "%s", r->name);
  }
  cr_expect_eq(fallbacks, 1);
  cr_expect_eq(halo_load_detect_format(LOADER_DATA "/general.mtx"), HALO_FORMAT_MTX);
  cr_expect_eq(halo_load_detect_format(LOADER_DATA "/ogb-tiny"), HALO_FORMAT_OGB);
  cr_expect_eq(halo_load_detect_format("sbm:nodes=9,classes=3"), HALO_FORMAT_SPEC);
  cr_expect_eq(halo_load_detect_format(LOADER_DATA "/snap-dense.txt"), HALO_FORMAT_EDGELIST);
}

/* Node data for a structure-only graph, from files and synthesised. */
Test(node_data, from_files) {
  halo_graph *g = load_ok(LOADER_DATA "/snap-dense.txt", HALO_FORMAT_EDGELIST);
  uint64_t before = g->source_digest;
  const char *feat = scratch_write("feat.csv.gz", "1,2\n3,4.5\n-6,7e-1\n");
  const char *label = scratch_write("label.csv", "1\n0\n3\n");
  cr_assert_eq(halo_load_node_data(g, feat, label), HALO_OK);
  const float x[] = {1, 2, 3, 4.5f, -6, 0.7f};
  cr_assert_eq(g->features, 2);
  for (int k = 0; k < 6; k++) cr_expect_eq(g->x[k], x[k], "x[%d]", k);
  cr_assert_eq(g->classes, 4);
  cr_expect_eq(g->labels[0], 1);
  cr_expect_eq(g->labels[1], 0);
  cr_expect_eq(g->labels[2], 3);
  cr_expect_neq(g->source_digest, before, "node data is part of the input");
  /* Labels alone, replacing the previous ones. */
  cr_assert_eq(halo_load_node_data(g, NULL, scratch_write("l2.csv", "0\n0\n1\n")), HALO_OK);
  cr_expect_eq(g->classes, 2);
  cr_expect_eq(g->features, 2);
  halo_graph_destroy(&g);
}

Test(node_data, synthesized) {
  halo_graph *g = load_ok(LOADER_DATA "/general.mtx", HALO_FORMAT_MTX);
  cr_assert_eq(halo_graph_synthesize_node_data(g, 5, 3, 42), HALO_OK);
  cr_assert_eq(g->features, 5);
  cr_assert_eq(g->classes, 3);
  cr_assert_not_null(g->split);
  for (int64_t v = 0; v < g->n; v++) {
    cr_expect(g->labels[v] >= 0 && g->labels[v] < 3);
    cr_expect(g->split[v] >= HALO_SPLIT_TRAIN && g->split[v] <= HALO_SPLIT_TEST);
    for (int f = 0; f < 5; f++) cr_expect(isfinite(g->x[v * 5 + f]));
  }
  halo_graph *h = load_ok(LOADER_DATA "/general.mtx", HALO_FORMAT_MTX);
  cr_assert_eq(halo_graph_synthesize_node_data(h, 5, 3, 42), HALO_OK);
  cr_expect_arr_eq(g->x, h->x, sizeof(float) * 5 * (size_t)g->n, "same seed, same features");
  cr_expect_arr_eq(g->labels, h->labels, sizeof(int32_t) * (size_t)g->n);
  halo_graph_destroy(&h);
  halo_graph_destroy(&g);
}

/* The bundled Cora, against the counts in datasets/cora/README.md. */
Test(cora, counts_match_the_readme) {
  halo_graph *g = load_ok(HALO_DATASETS_DIR "/cora", HALO_FORMAT_AUTO);
  cr_assert_eq(g->n, 2708);
  cr_assert_eq(g->m, 10556);
  cr_assert_eq(g->features, 1433);
  cr_assert_eq(g->classes, 7);
  expect_csr_valid(g);

  /* 1.3% non-zero: the density rule keeps Cora's bag of words as CSR. */
  cr_assert_not_null(g->x_indptr, "Cora's features are read as CSR");
  cr_assert_null(g->x);
  int64_t nonzeros = g->x_indptr[g->n], ones = 0;
  for (int64_t k = 0; k < nonzeros; k++) ones += g->x_values[k] == 1;
  cr_expect_eq(nonzeros, 49216);
  cr_expect_eq(ones, 49216, "features are binary");

  const int64_t class_count[7] = {351, 217, 418, 818, 426, 298, 180};
  int64_t counts[7] = {0}, split[4] = {0};
  for (int64_t v = 0; v < g->n; v++) {
    cr_assert(g->labels[v] >= 0 && g->labels[v] < 7);
    counts[g->labels[v]]++;
    split[g->split[v]]++;
  }
  for (int c = 0; c < 7; c++) cr_expect_eq(counts[c], class_count[c], "class %d", c);
  cr_expect_eq(split[HALO_SPLIT_TRAIN], 140);
  cr_expect_eq(split[HALO_SPLIT_VALID], 500);
  cr_expect_eq(split[HALO_SPLIT_TEST], 1000);
  for (int64_t v = 0; v < 140; v++) cr_expect_eq(g->split[v], HALO_SPLIT_TRAIN);
  for (int64_t v = 1708; v < 2708; v++) cr_expect_eq(g->split[v], HALO_SPLIT_TEST);

  /* Symmetric, no self-loops, max degree 168, no isolated node. */
  int64_t max_degree = 0;
  for (int64_t v = 0; v < g->n; v++) {
    int64_t d = g->indptr[v + 1] - g->indptr[v];
    cr_expect_gt(d, 0, "node %lld isolated", (long long)v);
    if (d > max_degree) max_degree = d;
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      int64_t u = g->indices[k];
      cr_expect_neq(u, v);
      const int64_t *row = g->indices + g->indptr[u];
      int found = 0;
      for (int64_t j = 0; j < g->indptr[u + 1] - g->indptr[u]; j++) found |= row[j] == v;
      cr_expect(found, "edge %lld-%lld has no reverse", (long long)v, (long long)u);
    }
  }
  cr_expect_eq(max_degree, 168);
  cr_expect_eq(g->indices[0], 633, "first edge of edge.csv.gz is 0,633");
  halo_graph_destroy(&g);
}
