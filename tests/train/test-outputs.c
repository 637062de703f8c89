/* halo-train's outputs for use elsewhere, end to end under mpirun on small
 * seeded graphs (tests/train/train-fixture.c):
 *
 *   --embeddings: every node's input of a layer, against the dense double
 *   reference forward (train-fixture.c, written from PyG's formulas) run
 *   with the checkpoint's tensors, read by name with the HDF5 C API;
 *
 *   --eval-only --checkpoint FILE on a changed graph (other nodes and
 *   edges, the same widths) at another P: the file's model, its logits and
 *   embeddings against the reference on that graph; a graph of another
 *   feature width, a model flag that contradicts the file and a --resume on
 *   another graph are each refused with one line;
 *
 *   checkpoint format 1 (flat /params, /adam_m, /adam_v, as halo wrote them
 *   before the tensors had names), made here from a format-2 file by the
 *   old writer's layout: it evaluates to the same logits bit for bit and
 *   resumes to the same losses.
 */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-cli.h"
#include "train-fixture.h"
#include "train-run.h"

/* An attribute of the root group as a double (integers and floats). */
static double attr_num(hid_t f, const char *name, double fallback) {
  if (H5Aexists(f, name) <= 0) return fallback;
  double v = 0.0;
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  cr_assert_geq(a, 0);
  cr_assert_geq(H5Aread(a, H5T_NATIVE_DOUBLE, &v), 0, "attribute %s", name);
  H5Aclose(a);
  return v;
}

static void attr_str(hid_t f, const char *name, char *out, size_t size) {
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  cr_assert_geq(a, 0, "no attribute %s", name);
  hid_t t = H5Aget_type(a);
  cr_assert(H5Tget_size(t) < size);
  memset(out, 0, size);
  cr_assert_geq(H5Aread(a, t, out), 0);
  H5Tclose(t);
  H5Aclose(a);
}

/* The model a checkpoint records, as the reference describes it. */
static fx_model model_of(hid_t f, int32_t features, int32_t classes) {
  char kind[16];
  attr_str(f, "model", kind, sizeof kind);
  fx_model m = {.layers = (int)attr_num(f, "layers", 0)};
  m.kind = strcmp(kind, "sage") == 0  ? FX_SAGE
           : strcmp(kind, "gin") == 0 ? FX_GIN
           : strcmp(kind, "gat") == 0 ? FX_GAT
                                      : FX_GCN;
  const int32_t hidden = (int32_t)attr_num(f, "hidden", 0);
  m.heads = (int32_t)attr_num(f, "heads", 1);
  m.output_heads = (int32_t)attr_num(f, "output_heads", 1);
  m.mlp_hidden = hidden;
  m.dims[0] = features;
  for (int l = 1; l < m.layers; l++) m.dims[l] = m.kind == FX_GAT ? hidden * m.heads : hidden;
  m.dims[m.layers] = classes;
  m.sage_normalize = (int)attr_num(f, "sage_normalize", 0);
  m.train_eps = (int)attr_num(f, "gin_train_eps", 0);
  m.elu = (int)attr_num(f, "activation", 0) == 1;
  m.residual = (int)attr_num(f, "residual", 0);
  m.layer_norm = (int)attr_num(f, "layer_norm", 0);
  m.normalize = (int)attr_num(f, "normalize_features", 1);
  return m;
}

/* Dataset `name` as doubles, with its element count checked. */
static void read_doubles(hid_t f, const char *name, double *out, int64_t count) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  cr_assert_geq(d, 0, "no dataset %s", name);
  hid_t space = H5Dget_space(d);
  cr_assert_eq((int64_t)H5Sget_simple_extent_npoints(space), count, "%s: %lld values, want %lld",
               name, (long long)H5Sget_simple_extent_npoints(space), (long long)count);
  H5Sclose(space);
  cr_assert_geq(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), 0);
  H5Dclose(d);
}

/* The tensors of layer l in the order of docs/models.md, by the names the
 * checkpoint gives them (docs/train.md, "Checkpoints"); returns how many. */
static int layer_names(const fx_model *m, int l, const char *names[8], int64_t sizes[8]) {
  const int64_t a = m->dims[l], b = m->dims[l + 1], h = m->mlp_hidden;
  const int top = l + 1 == m->layers;
  const int64_t k = m->kind == FX_GAT ? (top ? m->output_heads : m->heads) : 1;
  const int64_t kf = m->kind == FX_GAT ? (top ? k * b : b) : 0;
  int n = 0;
#define N(s, c) (names[n] = (s), sizes[n] = (c), n++)
  switch (m->kind) {
    case FX_SAGE:
      N("W_l", a * b), N("b", b), N("W_r", a * b);
      break;
    case FX_GIN:
      N("W_1", a * h), N("b_1", h), N("W_2", h * b), N("b_2", b);
      if (m->train_eps) N("eps", 1);
      break;
    case FX_GAT:
      N("W", a * kf), N("a_src", kf), N("a_dst", kf), N("b", b);
      break;
    default:
      N("W", a * b), N("b", b);
  }
  if (m->residual && (l == 0 || a != b)) N("W_res", a * b);
  if (m->layer_norm && !top) N("gamma", b), N("beta", b);
#undef N
  return n;
}

/* The parameters of a format-2 checkpoint's array `root` ("/model" or an
 * Adam moment), in the reference's flat order. */
static double *read_params(hid_t f, const fx_model *m, const char *root) {
  const int64_t total = fx_model_params(m);
  double *p = fx_xcalloc((size_t)total, sizeof *p);
  int64_t off = 0;
  for (int l = 0; l < m->layers; l++) {
    const char *names[8];
    int64_t sizes[8];
    for (int t = 0, nt = layer_names(m, l, names, sizes); t < nt; t++) {
      char name[128];
      snprintf(name, sizeof name, "%s/layer%d/%s", root, l, names[t]);
      read_doubles(f, name, p + off, sizes[t]);
      off += sizes[t];
    }
  }
  cr_assert_eq(off, total);
  return p;
}

/* Rows of dataset `name` (n × width floats) put in node order by /global_id. */
static double *read_by_node(const char *path, const char *name, int64_t n, int32_t width) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", path);
  int64_t *gid = fx_xcalloc((size_t)n, sizeof *gid);
  double *rows = fx_xcalloc((size_t)(n * width), sizeof *rows);
  double *out = fx_xcalloc((size_t)(n * width), sizeof *out);
  hid_t d = H5Dopen2(f, "/global_id", H5P_DEFAULT);
  cr_assert_geq(d, 0);
  hid_t space = H5Dget_space(d);
  cr_assert_eq((int64_t)H5Sget_simple_extent_npoints(space), n, "%s: not one row a node", path);
  H5Sclose(space);
  cr_assert_geq(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, gid), 0);
  H5Dclose(d);
  read_doubles(f, name, rows, n * width);
  for (int64_t r = 0; r < n; r++) {
    cr_assert(gid[r] >= 0 && gid[r] < n);
    memcpy(out + gid[r] * width, rows + r * width, (size_t)width * sizeof *out);
  }
  H5Fclose(f);
  free(gid);
  free(rows);
  return out;
}

/* max |a - b| / max |b| over n values, printed. */
static double compare(const double *a, const double *b, int64_t n, const char *what) {
  double diff = 0.0;
  for (int64_t i = 0; i < n; i++) diff = fmax(diff, fabs(a[i] - b[i]));
  const double rel = diff / fmax(fx_max_abs(b, n), 1e-30);
  fprintf(stderr, "[outputs] %s: max |halo - reference| / max |reference| = %.3g\n", what, rel);
  return rel;
}

/* The file's logits and embeddings (of layer `layer`) against the reference
 * forward on g with the tensors of checkpoint `ckpt`. */
static void expect_reference(const fx_graph *g, const char *ckpt, const char *pred, const char *emb,
                             int layer, const char *what) {
  hid_t f = H5Fopen(ckpt, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", ckpt);
  cr_expect_eq((int)attr_num(f, "format_version", 0), 2);
  fx_model m = model_of(f, g->f, g->c);
  if (layer == 0) layer = m.layers;
  double *p = read_params(f, &m, "/model");
  H5Fclose(f);
  const int32_t width = m.dims[layer - 1];
  double *z = fx_xcalloc((size_t)(g->n * g->c), sizeof *z);
  double *h = fx_xcalloc((size_t)(g->n * width), sizeof *h);
  fx_model_loss(&m, g, p, z);
  fx_model_embeddings(&m, g, p, layer, h);
  double *hz = read_by_node(pred, "/logits", g->n, g->c);
  double *hh = read_by_node(emb, "/embeddings", g->n, width);
  char label[200];
  snprintf(label, sizeof label, "%s logits", what);
  cr_expect_leq(compare(hz, z, g->n * g->c, label), 1e-4, "%s", label);
  snprintf(label, sizeof label, "%s embeddings (input of layer %d, %d wide)", what, layer, width);
  cr_expect_leq(compare(hh, h, g->n * width, label), 1e-4, "%s", label);
  cr_expect_gt(fx_max_abs(h, g->n * width), 1e-3, "%s: the embeddings are all zero", what);
  free(p);
  free(z);
  free(h);
  free(hz);
  free(hh);
}

static fx_graph *write_graph(const char *dir, int64_t nodes, int32_t features, int32_t classes,
                             int32_t parts, uint64_t seed) {
  const fx_spec spec = {.nodes = nodes,
                        .avg_degree = 3,
                        .features = features,
                        .density = 0.3f,
                        .classes = classes,
                        .parts = parts,
                        .seed = seed};
  fx_graph *g = fx_graph_new(&spec);
  cr_assert_eq(fx_write_shards(g, dir, seed * 7 + 1), 0, "cannot write %s", dir);
  return g;
}

Test(outputs, embeddings_match_the_dense_reference_at_p1_p3, .timeout = 600) {
  const uint64_t seed = tr_seed("outputs.embeddings", 36);
  static const struct {
    int parts, layer;
    const char *flags;
  } cases[] = {
      {1, 0, "--model gcn --hidden 8"},
      {3, 0, "--model gcn --hidden 8"},
      {3, 2, "--model sage --layers 3 --hidden 6 --norm layer --embeddings-layer 2"},
      {3, 0, "--model gin --hidden 5 --gin-train-eps --residual"},
      {3, 0, "--model gat --heads 2 --hidden 3 --output-heads 2"},
  };
  char *dir = tr_tmpdir("outputs-emb");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char shards[600], ck[700], pred[700], emb[700], metrics[700], flags[4096], ckpt[800];
    snprintf(shards, sizeof shards, "%s/g%zu", dir, c);
    snprintf(ck, sizeof ck, "%s/ck%zu", dir, c);
    snprintf(pred, sizeof pred, "%s/p%zu.h5", dir, c);
    snprintf(emb, sizeof emb, "%s/e%zu.h5", dir, c);
    snprintf(metrics, sizeof metrics, "%s/m%zu.jsonl", dir, c);
    fx_graph *g = write_graph(shards, 240, 10, 3, cases[c].parts, seed + c);
    snprintf(flags, sizeof flags,
             "%s --epochs 6 --seed %llu --checkpoint '%s' --predict '%s' --embeddings '%s'",
             cases[c].flags, (unsigned long long)seed, ck, pred, emb);
    train(cases[c].parts, shards, flags, metrics);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000006.h5", ck);
    char what[300];
    snprintf(what, sizeof what, "P=%d %s", cases[c].parts, cases[c].flags);
    expect_reference(g, ckpt, pred, emb, cases[c].layer, what);
    fx_graph_free(g);
  }
  tr_rmdir(dir);
}

/* Runs halo-train expecting a refusal: exit status non-zero and exactly
 * one error line, holding `words`. */
static void expect_refusal(int np, const char *log, const char *words, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void expect_refusal(int np, const char *log, const char *words, const char *fmt, ...) {
  char args[3000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  const int rc = tr_mpirun(np, 120, log, "%s %s", TRAIN_BIN, args);
  char *out = tr_slurp(log);
  cr_assert(out);
  cr_expect_neq(rc, 0, "not refused: %s", args);
  cr_expect_eq(tr_count_lines(out, "error:"), 1, "not one error line:\n%s", out);
  cr_expect(strstr(out, words), "no '%s' in:\n%s", words, out);
  free(out);
}

Test(outputs, eval_only_checkpoint_file_runs_on_a_changed_graph, .timeout = 600) {
  const uint64_t seed = tr_seed("outputs.eval-file", 7);
  char *dir = tr_tmpdir("outputs-eval");
  char a[600], b[600], wide[600], ck[700], ckpt[800], metrics[700], flags[4096], pred[700],
      emb[700], log[700];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  snprintf(wide, sizeof wide, "%s/wide", dir);
  snprintf(ck, sizeof ck, "%s/ck", dir);
  fx_graph *ga = write_graph(a, 200, 9, 4, 2, seed);
  /* Graph B: other nodes and edges (a graph of another seed and size), the
   * same widths, at another P. */
  fx_graph *gb = write_graph(b, 310, 9, 4, 3, seed + 1);
  fx_graph *gw = write_graph(wide, 100, 10, 4, 1, seed + 2);
  snprintf(metrics, sizeof metrics, "%s/a.jsonl", dir);
  snprintf(flags, sizeof flags,
           "--model sage --sage-normalize --hidden 12 --layers 3 --epochs 8 --seed %llu "
           "--checkpoint '%s'",
           (unsigned long long)seed, ck);
  train(2, a, flags, metrics);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000008.h5", ck);
  /* No model flag: the model is the file's. */
  snprintf(pred, sizeof pred, "%s/b-pred.h5", dir);
  snprintf(emb, sizeof emb, "%s/b-emb.h5", dir);
  snprintf(metrics, sizeof metrics, "%s/b.jsonl", dir);
  snprintf(flags, sizeof flags,
           "--eval-only --checkpoint '%s' --predict '%s' --embeddings '%s' --hidden 12 --lr 0.5",
           ckpt, pred, emb);
  train(3, b, flags, metrics);
  char *text = tr_slurp(metrics);
  cr_expect(text && strstr(text, "\"evaluation\": true"), "no evaluation line:\n%s", text);
  free(text);
  expect_reference(gb, ckpt, pred, emb, 0, "--eval-only --checkpoint FILE on graph B, P=3");

  snprintf(log, sizeof log, "%s/wide.log", dir);
  expect_refusal(1, log, "a model of 9 features and 4 classes, but",
                 "'%s' --eval-only --checkpoint '%s'", wide, ckpt);
  snprintf(log, sizeof log, "%s/hidden.log", dir);
  expect_refusal(3, log, "--hidden 16: ", "'%s' --eval-only --checkpoint '%s' --hidden 16", b,
                 ckpt);
  text = tr_slurp(log);
  cr_expect(text && strstr(text, "with --hidden 12"), "the checkpoint's value is not named:\n%s",
            text);
  free(text);
  /* A tensor that is not finite: one line naming it. */
  char cmd[4096], nan_ckpt[800];
  snprintf(nan_ckpt, sizeof nan_ckpt, "%s/nan.h5", dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", ckpt, nan_ckpt);
  cr_assert_eq(tr_run(30, NULL, "%s", cmd), 0);
  hid_t f = H5Fopen(nan_ckpt, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  hid_t d = H5Dopen2(f, "/model/layer1/b", H5P_DEFAULT);
  cr_assert_geq(d, 0);
  float b1[12];
  cr_assert_geq(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b1), 0);
  b1[5] = NAN;
  cr_assert_geq(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b1), 0);
  H5Dclose(d);
  H5Fclose(f);
  snprintf(log, sizeof log, "%s/nan.log", dir);
  expect_refusal(3, log, "/model/layer1/b[5] is not finite", "'%s' --eval-only --checkpoint '%s'",
                 b, nan_ckpt);
  snprintf(log, sizeof log, "%s/resume.log", dir);
  expect_refusal(3, log, "a checkpoint of another graph",
                 "'%s' --model sage --sage-normalize --hidden 12 --layers 3 --epochs 9 "
                 "--checkpoint '%s' --resume",
                 b, ck);
  fx_graph_free(ga);
  fx_graph_free(gb);
  fx_graph_free(gw);
  tr_rmdir(dir);
}

/* Inductive scoring: new nodes come without labels and without a split.
 * --eval-only --checkpoint FILE scores a graph whose labels are all -1
 * and whose nodes are in no split (it once refused it: "no part has a
 * train node"), and a structure-only graph without labels at all (classes
 * 0: the checkpoint gives the count); the logits and embeddings are the
 * reference forward's on that graph, the accuracies null, and training on
 * such shards is still refused, naming --eval-only. */
Test(outputs, eval_only_scores_unlabelled_unsplit_graphs, .timeout = 600) {
  const uint64_t seed = tr_seed("outputs.eval-unlabelled", 11);
  char *dir = tr_tmpdir("outputs-unlabelled");
  char a[600], ck[700], ckpt[800], metrics[700], flags[4096], pred[700], emb[700], log[700];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(ck, sizeof ck, "%s/ck", dir);
  fx_graph *ga = write_graph(a, 160, 7, 3, 2, seed);
  snprintf(metrics, sizeof metrics, "%s/a.jsonl", dir);
  snprintf(flags, sizeof flags, "--hidden 8 --epochs 4 --seed %llu --checkpoint '%s'",
           (unsigned long long)seed, ck);
  train(2, a, flags, metrics);
  snprintf(ckpt, sizeof ckpt, "%s/ckpt-00000004.h5", ck);
  /* Graph B, new to the model: its labels dropped, in no split; then its
   * class count dropped too (a structure-only input). */
  fx_graph *gb = fx_graph_new(&(fx_spec){.nodes = 230, .avg_degree = 3, .features = 7,
                                         .density = 0.3f, .classes = 3, .parts = 3,
                                         .seed = seed + 1});
  for (int64_t v = 0; v < gb->n; v++) gb->labels[v] = -1, gb->split[v] = 0;
  static const char *const KIND[2] = {"unsplit", "unlabelled"};
  for (int k = 0; k < 2; k++) {
    char b[700];
    snprintf(b, sizeof b, "%s/b-%s", dir, KIND[k]);
    gb->c = k == 0 ? 3 : 0;
    cr_assert_eq(fx_write_shards(gb, b, seed * 7 + 3), 0, "cannot write %s", b);
    gb->c = 3;
    snprintf(pred, sizeof pred, "%s/%s-pred.h5", dir, KIND[k]);
    snprintf(emb, sizeof emb, "%s/%s-emb.h5", dir, KIND[k]);
    snprintf(metrics, sizeof metrics, "%s/%s.jsonl", dir, KIND[k]);
    snprintf(flags, sizeof flags, "--eval-only --checkpoint '%s' --predict '%s' --embeddings '%s'",
             ckpt, pred, emb);
    train(2, b, flags, metrics);
    char *text = tr_slurp(metrics);
    cr_expect(text && strstr(text, "\"train_acc\": null, \"val_acc\": null, \"test_acc\": null"),
              "%s: accuracies of empty splits are not null:\n%s", KIND[k], text);
    free(text);
    expect_reference(gb, ckpt, pred, emb, 0, KIND[k]);
    if (k == 1) {
      snprintf(log, sizeof log, "%s/train-unlabelled.log", dir);
      expect_refusal(2, log, "--eval-only --checkpoint FILE scores an unlabelled graph",
                     "'%s' --epochs 2", b);
    }
  }
  fx_graph_free(ga);
  fx_graph_free(gb);
  tr_rmdir(dir);
}

/* Rewrites a format-2 checkpoint at `path` as format 1 wrote it: the three
 * arrays flat at /params, /adam_m and /adam_v in the order of the
 * parameters, no /model or /optimizer groups, format_version 1. */
static void make_format_1(const char *path, int32_t features, int32_t classes) {
  static const char *const roots[3] = {"/model", "/optimizer/adam_m", "/optimizer/adam_v"};
  static const char *const flat[3] = {"/params", "/adam_m", "/adam_v"};
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  const fx_model m = model_of(f, features, classes);
  const hsize_t n = (hsize_t)fx_model_params(&m);
  for (int k = 0; k < 3; k++) {
    double *p = read_params(f, &m, roots[k]);
    float *v = fx_xcalloc((size_t)n, sizeof *v);
    for (hsize_t i = 0; i < n; i++) v[i] = (float)p[i];
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, flat[k], H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(d, 0);
    cr_assert_geq(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
    H5Dclose(d);
    H5Sclose(space);
    free(p);
    free(v);
  }
  cr_assert_geq(H5Ldelete(f, "/model", H5P_DEFAULT), 0);
  cr_assert_geq(H5Ldelete(f, "/optimizer", H5P_DEFAULT), 0);
  const int32_t one = 1;
  hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
  cr_assert_geq(H5Awrite(a, H5T_NATIVE_INT32, &one), 0);
  H5Aclose(a);
  H5Fclose(f);
}

Test(outputs, format_1_checkpoints_still_read, .timeout = 600) {
  const uint64_t seed = tr_seed("outputs.format-1", 3);
  char *dir = tr_tmpdir("outputs-v1");
  char shards[600], shards3[600], ck[2][700], metrics[3][700], flags[4096], pred[2][700], cmd[4096];
  snprintf(shards, sizeof shards, "%s/g", dir);
  snprintf(shards3, sizeof shards3, "%s/g3", dir);
  fx_graph *g = write_graph(shards, 200, 8, 3, 2, seed);
  /* The same graph in 3 parts, for the resume at another P. */
  g->parts = 3;
  for (int64_t v = 0; v < g->n; v++) g->part[v] = (int32_t)(v % 3);
  cr_assert_eq(fx_write_shards(g, shards3, seed * 7 + 1), 0);
  for (int k = 0; k < 2; k++) {
    snprintf(ck[k], sizeof ck[k], "%s/ck%d", dir, k + 1);
    snprintf(pred[k], sizeof pred[k], "%s/p%d.h5", dir, k + 1);
  }
  for (int k = 0; k < 3; k++) snprintf(metrics[k], sizeof metrics[k], "%s/m%d.jsonl", dir, k);
  const char *model = "--model gin --gin-train-eps --hidden 6 --deterministic";
  snprintf(flags, sizeof flags, "%s --epochs 4 --seed %llu --checkpoint '%s'", model,
           (unsigned long long)seed, ck[1]);
  train(2, shards, flags, metrics[0]);
  /* ck1: the same checkpoint in format 1. */
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/ckpt-00000004.h5' '%s/'", ck[0], ck[1], ck[0]);
  cr_assert_eq(tr_run(30, NULL, "%s", cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/ckpt-00000004.h5", ck[0]);
  make_format_1(cmd, g->f, g->c);
  float *logits[2];
  for (int k = 0; k < 2; k++) {
    char m[800];
    snprintf(m, sizeof m, "%s.eval%d", metrics[0], k);
    snprintf(flags, sizeof flags, "--eval-only --checkpoint '%s/ckpt-00000004.h5' --predict '%s'",
             ck[k], pred[k]);
    train(3, shards3, flags, m);
    double *z = read_by_node(pred[k], "/logits", g->n, g->c);
    logits[k] = fx_xcalloc((size_t)(g->n * g->c), sizeof(float));
    for (int64_t i = 0; i < g->n * g->c; i++) logits[k][i] = (float)z[i];
    free(z);
  }
  cr_expect(memcmp(logits[0], logits[1], (size_t)(g->n * g->c) * sizeof(float)) == 0,
            "format 1 and format 2 of one checkpoint evaluate to other logits");
  /* Resumed at P=3 from each, to epoch 7: the same losses, bit for bit. */
  run_report r[2];
  for (int k = 0; k < 2; k++) {
    snprintf(flags, sizeof flags, "%s --epochs 7 --seed %llu --checkpoint '%s' --resume", model,
             (unsigned long long)seed, ck[k]);
    train(3, shards3, flags, metrics[k + 1]);
    read_resumed_report(metrics[k + 1], &r[k]);
  }
  fprintf(stderr, "[outputs] format 1 resumed: %d epochs, sha %s\n", r[0].m.epochs, r[0].sha);
  cr_expect_eq(r[0].m.epochs, 3);
  expect_bit_identical(&r[1], &r[0], "resumed from format 1 against format 2");
  free(logits[0]);
  free(logits[1]);
  fx_graph_free(g);
  tr_rmdir(dir);
}
