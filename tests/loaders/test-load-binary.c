/* The binary inputs against the CSV folder: gen-binary.py (standard-library
 * Python, seed printed) writes one drawn graph as an OGB CSV folder, an OGB
 * binary folder, .npz archives of both layouts (deflated and stored, C and
 * Fortran order, both byte orders) and an .npy edge list with .npy node
 * data; each must load as the graph the CSV folder gives (structure,
 * features, labels, split).  And every dtype, order and byte order of a
 * .npy against the decimal text the generator wrote beside it, read whole
 * and by row slices. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load-impl.h"
#include "loader-test.h"

#define GENERATOR HALO_SOURCE_DIR "/tests/loaders/gen-binary.py"

static char out_dir[512];

static void generate(void) {
  unsigned seed = (unsigned)time(NULL) % 100000u;
  const char *env = getenv("HALO_TEST_SEED");
  if (env) seed = (unsigned)strtoul(env, NULL, 10);
  cr_log_info("gen-binary.py seed %u (HALO_TEST_SEED=%u repeats it)", seed, seed);
  fprintf(stderr, "gen-binary.py seed %u\n", seed);
  snprintf(out_dir, sizeof out_dir, "%s/gen", scratch_dir());
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "python3 %s %s %u", GENERATOR, out_dir, seed);
  cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

static const char *at(const char *name) {
  static char path[8][1024];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, 1024, "%s/%s", out_dir, name);
  return p;
}

static halo_graph *load(const char *input, const char *split_name) {
  halo_graph *g = NULL;
  const halo_load_options opt = {.split_name = split_name};
  cr_assert_eq(halo_load_opts(input, HALO_FORMAT_AUTO, &opt, &g), HALO_OK, "%s", input);
  return g;
}

enum { SAME_SPLIT = 1, SAME_LABELLED_ONLY = 2 };

/* g against the reference: CSR, features, labels (only of labelled nodes
 * when SAME_LABELLED_ONLY), and the split (SAME_SPLIT). */
static void expect_same(const halo_graph *ref, const halo_graph *g, int how, const char *what) {
  cr_assert_eq(g->n, ref->n, "%s: nodes", what);
  cr_assert_eq(g->m, ref->m, "%s: edges", what);
  for (int64_t v = 0; v <= ref->n; v++) cr_assert_eq(g->indptr[v], ref->indptr[v], "%s", what);
  for (int64_t j = 0; j < ref->m; j++) cr_assert_eq(g->indices[j], ref->indices[j], "%s", what);
  cr_assert_eq(g->features, ref->features, "%s: features", what);
  /* Dense rows of both, whichever storage each has (a CSV and an npz's
   * attr_* may be CSR). */
  float *want = features_dense(ref, 0), *got = features_dense(g, 0);
  for (int64_t k = 0; k < ref->n * ref->features; k++)
    cr_assert_eq(got[k], want[k], "%s: feature %lld", what, (long long)k);
  free(want);
  free(got);
  cr_assert_eq(g->classes, ref->classes, "%s: classes", what);
  for (int64_t v = 0; v < ref->n; v++)
    if (!(how & SAME_LABELLED_ONLY) || ref->labels[v] >= 0)
      cr_assert_eq(g->labels[v], ref->labels[v], "%s: label of %lld", what, (long long)v);
  if (how & SAME_SPLIT) {
    cr_assert(g->split, "%s: no split", what);
    for (int64_t v = 0; v < ref->n; v++)
      cr_assert_eq(g->split[v], ref->split[v], "%s: split of %lld", what, (long long)v);
  }
}

Test(binary, every_layout_loads_the_csv_graph) {
  generate();
  halo_graph *ref = load(at("csv"), NULL);
  cr_assert(ref->split && ref->labels && ref->features > 0);

  /* Each layout: its path, --split-name, what must match. */
  static const struct {
    const char *input, *split_name;
    int how;
  } LAYOUTS[] = {
      {"ogb-bin", NULL, SAME_SPLIT},
      {"ogb-bin/raw", "time", SAME_SPLIT},
      {"hetero.npz", "1", SAME_SPLIT},
      {"hetero-f.npz", "1", SAME_SPLIT},
      {"hetero-z64.npz", "1", SAME_SPLIT},
      {"shchur.npz", NULL, SAME_LABELLED_ONLY},
      {"shchur-u.npz", NULL, SAME_LABELLED_ONLY}, /* rows unsorted, a column named twice */
      {"shchur-d.npz", NULL, SAME_LABELLED_ONLY},
  };
  halo_graph *g = NULL;
  for (size_t k = 0; k < sizeof LAYOUTS / sizeof LAYOUTS[0]; k++) {
    g = load(at(LAYOUTS[k].input), LAYOUTS[k].split_name);
    expect_same(ref, g, LAYOUTS[k].how, LAYOUTS[k].input);
    halo_graph_destroy(&g);
  }
  g = load(at("shchur.npz"), NULL);
  cr_expect(g->x_indptr && !g->x, "shchur.npz: attr_* stay CSR");
  halo_graph_destroy(&g);
  g = load(at("hetero.npz"), NULL); /* split 0 is another one */
  int differs = 0;
  for (int64_t v = 0; v < ref->n; v++) differs |= g->split[v] != ref->split[v];
  cr_expect(differs, "hetero.npz split 0 is split 1");
  halo_graph_destroy(&g);

  static const char *const EDGES[2] = {"npy/edges.npy", "npy/edges-e2.npy"};
  static const char *const FEAT[2] = {"npy/feat.npy", "npy/feat-f.npy"};
  static const char *const LABELS[2] = {"npy/labels.npy", "npy/labels-i.npy"};
  for (int k = 0; k < 2; k++) {
    g = load(at(EDGES[k]), NULL);
    cr_assert_eq(halo_load_node_data(g, at(FEAT[k]), at(LABELS[k])), HALO_OK);
    expect_same(ref, g, 0, EDGES[k]);
    halo_graph_destroy(&g);
  }
  /* More rows of node data than the largest id + 1: isolated nodes. */
  halo_load_options opt = {.min_nodes = ref->n + 3};
  cr_assert_eq(halo_load_opts(at("npy/edges.npy"), HALO_FORMAT_NPY, &opt, &g), HALO_OK);
  cr_expect_eq(g->n, ref->n + 3);
  cr_expect_eq(g->indptr[g->n], ref->m);
  halo_graph_destroy(&g);
  opt = (halo_load_options){.nodes = ref->n - 1};
  capture_begin();
  cr_expect_eq(halo_load_opts(at("npy/edges.npy"), HALO_FORMAT_NPY, &opt, &g), HALO_ERR_RANGE);
  cr_expect(strstr(capture_end(), "out of range"));
  halo_graph_destroy(&ref);
}

/* Values of NAME.txt: "rows cols", then one value a line, row-major. */
static double *reference(const char *txt, int64_t *rows, int64_t *cols) {
  FILE *f = fopen(txt, "r");
  cr_assert(f, "%s", txt);
  long long r = 0, c = 0;
  cr_assert_eq(fscanf(f, "%lld %lld", &r, &c), 2);
  double *v = malloc((size_t)(r * c) * sizeof *v);
  for (long long k = 0; k < r * c; k++) {
    char word[64];
    cr_assert_eq(fscanf(f, "%63s", word), 1);
    v[k] = strcmp(word, "True") == 0 ? 1 : strcmp(word, "False") == 0 ? 0 : strtod(word, NULL);
  }
  fclose(f);
  *rows = r;
  *cols = c;
  return v;
}

Test(binary, every_dtype_order_and_byte_order) {
  generate();
  DIR *d = opendir(at("dtypes"));
  cr_assert(d);
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".npy") != 0) continue;
    char npy[1024], txt[1024];
    snprintf(npy, sizeof npy, "%s/dtypes/%s", out_dir, e->d_name);
    snprintf(txt, sizeof txt, "%s/dtypes/%.*s.txt", out_dir, (int)(len - 4), e->d_name);
    int64_t rows, cols;
    double *want = reference(txt, &rows, &cols);
    load_npy a;
    cr_assert_eq(load_npy_open(&a, npy, NULL), HALO_OK, "%s", npy);
    cr_assert_eq(a.rows, rows, "%s", npy);
    cr_assert_eq(a.cols, cols, "%s", npy);
    double *all = malloc((size_t)(rows * cols) * sizeof *all);
    double *some = malloc((size_t)(rows * cols) * sizeof *some);
    int64_t *ints = malloc((size_t)(rows * cols) * sizeof *ints);
    cr_assert_eq(load_npy_read_rows(&a, 0, rows, LOAD_NPY_I64, ints), HALO_OK);
    cr_assert_eq(load_npy_read_all(&a, LOAD_NPY_F64, all), HALO_OK);
    for (int64_t k = 0; k < rows * cols; k++) {
      cr_assert_eq(all[k], want[k], "%s: element %lld: %.17g, want %.17g", npy, (long long)k,
                   all[k], want[k]);
      if (a.kind != 'f')
        cr_assert_eq((double)ints[k], want[k], "%s: element %lld as int64", npy, (long long)k);
    }
    /* Rows [r0, r1) by pread, as the distributed partitioner reads them. */
    const int64_t r0 = rows / 3, r1 = rows - rows / 4;
    cr_assert_eq(load_npy_read_rows(&a, r0, r1, LOAD_NPY_F64, some), HALO_OK);
    for (int64_t k = 0; k < (r1 - r0) * cols; k++)
      cr_assert_eq(some[k], want[r0 * cols + k], "%s: slice element %lld", npy, (long long)k);
    load_npy_close(&a);
    free(all);
    free(some);
    free(ints);
    free(want);
    files++;
  }
  closedir(d);
  cr_expect_eq(files, 12 * 4);
}
