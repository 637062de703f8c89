/* Â's interior and boundary rows: contiguous blocks against row-index lists.
 *
 * A format-2 shard numbers its interior rows (no halo neighbour) first, and
 * the model then multiplies Â's two row groups as contiguous blocks, the
 * boundary rows through a view of Â's trailing rows, without index lists.
 * This binary is both the Criterion test and, under `--probe`, the MPI
 * program the test runs with mpirun.  Every rank of the probe builds the same
 * random fixture graph, takes its own part's shard and renumbers its owned
 * rows twice:
 *
 *   interior first   the format-2 order: qualifies for contiguous blocks
 *   boundary first   the same part, boundary rows first: does not qualify
 *
 * and trains three models side by side: interior first (contiguous),
 * interior first with row lists forced (opt.row_lists), boundary first
 * (row lists, because its interior rows are not a prefix).  The test checks:
 *
 *  - each model reports the path expected of its order, and the interior
 *    row count the graph itself gives (every neighbour in the same part);
 *  - the contiguous and the row-list path on the same shard compute the same
 *    losses, gradients, parameters and logits, bit for bit (each row of Â is
 *    the same sum either way);
 *  - the boundary-first shard, a different numbering of the same part, gives
 *    the same to fp32 rounding;
 *  - the first loss and the trained logits equal the dense double-precision
 *    reference; P=1 and P=3 give the same losses;
 *  - on the device-like checked backend, which aborts when a compute slot
 *    gets a pointer outside a device buffer (a wrong view of Â would), the
 *    contiguous model equals the CPU run bit for bit.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-checked.h"
#include "halo-backend.h"
#include "halo-net.h"
#include "train-expect.h"
#include "train-fixture.h"
#include "train-run.h"

#ifndef ROWS_PROBE
#error "ROWS_PROBE must name this test's own binary"
#endif

/* The three models: interior first (contiguous), interior first with row
 * lists, boundary first. */
enum { MODEL_CONTIGUOUS, MODEL_LISTS, MODEL_BOUNDARY_FIRST, MODELS };
static const char *const model_name[MODELS] = {"contiguous", "row lists", "boundary first"};

/* ---- the probe (runs under mpirun) --------------------------------------- */

static int i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Owned row i of the shard has a halo neighbour. */
static int is_boundary(const halo_shard *s, int64_t i) {
  for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
    if (s->indices[k] >= s->n_owned) return 1;
  return 0;
}

/* Maps a split list through new_of and sorts it (the shard keeps them ascending). */
static void renumber_split(int32_t *rows, int64_t n, const int32_t *new_of) {
  for (int64_t i = 0; i < n; i++) rows[i] = new_of[rows[i]];
  qsort(rows, (size_t)n, sizeof *rows, i32_cmp);
}

/* A copy of `s` whose owned rows are renumbered: new row r is old row
 * old_of[r].  Halo rows keep their numbers; send lists keep their order
 * (ascending global id per peer) with renumbered rows. */
static halo_shard *shard_renumbered(const halo_shard *s, const int32_t *old_of,
                                    int64_t n_interior) {
  const int64_t n = s->n_owned, n_all = s->n_owned + s->n_halo, f = s->features;
  halo_shard *t = fx_xcalloc(1, sizeof *t);
  int32_t *new_of = fx_xcalloc((size_t)n, sizeof *new_of);
  for (int64_t r = 0; r < n; r++) new_of[old_of[r]] = (int32_t)r;

  *t = *s;
  t->n_interior = n_interior;
  t->global_id = fx_xcalloc((size_t)n_all, sizeof *t->global_id);
  t->degree = fx_xcalloc((size_t)n_all, sizeof *t->degree);
  t->halo_owner = fx_xcalloc((size_t)s->n_halo, sizeof *t->halo_owner);
  t->indptr = fx_xcalloc((size_t)n + 1, sizeof *t->indptr);
  t->indices = fx_xcalloc((size_t)s->nnz, sizeof *t->indices);
  t->x = fx_xcalloc((size_t)(n * f), sizeof *t->x);
  t->labels = fx_xcalloc((size_t)n, sizeof *t->labels);
  t->train = fx_xcalloc((size_t)s->n_train, sizeof *t->train);
  t->valid = fx_xcalloc((size_t)s->n_valid, sizeof *t->valid);
  t->test = fx_xcalloc((size_t)s->n_test, sizeof *t->test);
  t->send_ptr = fx_xcalloc((size_t)s->parts + 1, sizeof *t->send_ptr);
  t->send_idx = fx_xcalloc((size_t)s->send_ptr[s->parts], sizeof *t->send_idx);
  t->recv_ptr = fx_xcalloc((size_t)s->parts + 1, sizeof *t->recv_ptr);

  for (int64_t r = 0; r < n; r++) {
    const int64_t o = old_of[r];
    t->global_id[r] = s->global_id[o];
    t->degree[r] = s->degree[o];
    memcpy(t->x + r * f, s->x + o * f, (size_t)f * sizeof *t->x);
    t->labels[r] = s->labels[o];
    int32_t *row = t->indices + t->indptr[r];
    const int64_t len = s->indptr[o + 1] - s->indptr[o];
    for (int64_t k = 0; k < len; k++) {
      const int32_t c = s->indices[s->indptr[o] + k];
      row[k] = c < n ? new_of[c] : c;
    }
    qsort(row, (size_t)len, sizeof *row, i32_cmp);
    t->indptr[r + 1] = t->indptr[r] + len;
  }
  for (int64_t h = n; h < n_all; h++) {
    t->global_id[h] = s->global_id[h];
    t->degree[h] = s->degree[h];
  }
  memcpy(t->halo_owner, s->halo_owner, (size_t)s->n_halo * sizeof *t->halo_owner);
  memcpy(t->train, s->train, (size_t)s->n_train * sizeof *t->train);
  memcpy(t->valid, s->valid, (size_t)s->n_valid * sizeof *t->valid);
  memcpy(t->test, s->test, (size_t)s->n_test * sizeof *t->test);
  renumber_split(t->train, s->n_train, new_of);
  renumber_split(t->valid, s->n_valid, new_of);
  renumber_split(t->test, s->n_test, new_of);
  memcpy(t->send_ptr, s->send_ptr, (size_t)(s->parts + 1) * sizeof *t->send_ptr);
  memcpy(t->recv_ptr, s->recv_ptr, (size_t)(s->parts + 1) * sizeof *t->recv_ptr);
  for (int64_t k = 0; k < s->send_ptr[s->parts]; k++) t->send_idx[k] = new_of[s->send_idx[k]];
  free(new_of);
  return t;
}

/* The part with its interior rows first (boundary_first 0) or last. */
static halo_shard *shard_ordered(const halo_shard *s, int boundary_first) {
  const int64_t n = s->n_owned;
  int32_t *old_of = fx_xcalloc((size_t)n, sizeof *old_of);
  int64_t k = 0, interior = 0;
  for (int pass = 0; pass < 2; pass++) {
    const int want_boundary = pass == 0 ? boundary_first : !boundary_first;
    for (int64_t i = 0; i < n; i++)
      if (is_boundary(s, i) == want_boundary) old_of[k++] = (int32_t)i;
  }
  for (int64_t i = 0; i < n; i++) interior += !is_boundary(s, i);
  /* The attribute is a claim about the prefix only: 0 when it is boundary rows. */
  halo_shard *t = shard_renumbered(s, old_of, boundary_first ? 0 : interior);
  free(old_of);
  return t;
}

/* Writes OUT/NAME.txt: line i holds value i of each model's buffer. */
static int write_columns(const char *dir, const char *name, float *const buf[MODELS], int64_t n) {
  FILE *f = tr_fopenf("w", "%s/%s.txt", dir, name);
  if (!f) return -1;
  for (int64_t i = 0; i < n; i++) fprintf(f, "%.9g %.9g %.9g\n", buf[0][i], buf[1][i], buf[2][i]);
  return fclose(f);
}

/* usage: --probe OUT BACKEND nodes degree features density classes hidden
 *                input_dropout epochs seed
 * BACKEND is cpu or checked (the device-like backend, exchange staged).
 * Writes OUT/info-R.txt ("n_owned interior contiguous[0..2]"),
 * OUT/losses.txt (rank 0: "epoch loss[0..2]"), OUT/grads.txt (rank 0: the
 * first step's gradients, "g[0..2]" per parameter), OUT/params.txt (rank 0:
 * after the last step) and OUT/logits-M-R.txt ("gid z..." of model M). */
static int probe_main(int argc, char **argv) {
  int rc = 1;
  te_probe p;
  halo_shard *base = NULL, *shard[MODELS] = {NULL};
  halo_backend *be = NULL;
  halo_net *model[MODELS] = {NULL};
  float *buf[MODELS] = {NULL};
  FILE *f = NULL;
  if (te_probe_begin(&argc, &argv, 1, &p) != 0) goto done;
  const char *backend = p.mode;
  base = fx_shard_new(p.graph, p.rank, 41);
  shard[MODEL_CONTIGUOUS] = shard_ordered(base, 0);
  shard[MODEL_LISTS] = shard_ordered(base, 0);
  shard[MODEL_BOUNDARY_FIRST] = shard_ordered(base, 1);
  const halo_status made = strcmp(backend, "checked") == 0
                               ? checked_backend_create(0, &be)
                               : halo_backend_create(&(halo_backend_options){.device = "cpu"}, &be);
  if (made != HALO_OK) goto done;

  halo_net_options o = te_probe_options(&p);
  for (int k = 0; k < MODELS; k++) {
    o.row_lists = k == MODEL_LISTS;
    if (halo_net_create(MPI_COMM_WORLD, be, shard[k], &o, &model[k]) != HALO_OK) goto done;
  }

  halo_net_info info[MODELS];
  for (int k = 0; k < MODELS; k++) halo_net_info_get(model[k], &info[k]);
  if (!(f = tr_fopenf("w", "%s/info-%d.txt", p.out, p.rank))) goto done;
  fprintf(f, "%lld %lld %d %d %d\n", (long long)info[0].n_owned, (long long)info[0].interior_rows,
          info[0].contiguous_rows, info[1].contiguous_rows, info[2].contiguous_rows);
  fclose(f);
  f = NULL;

  const int64_t params = info[0].params, n_owned = info[0].n_owned;
  const int64_t classes = info[0].model.dims[info[0].model.layers];
  const int64_t len = params > n_owned * classes ? params : n_owned * classes;
  for (int k = 0; k < MODELS; k++)
    if (!(buf[k] = malloc((size_t)len * sizeof(float) + 1))) goto done;

  if (p.rank == 0 && !(f = tr_fopenf("w", "%s/losses.txt", p.out))) goto done;
  const double train = (double)info[0].global_count[0];
  for (int64_t epoch = 0; epoch < p.c.epochs; epoch++) {
    double local[MODELS], sum[MODELS];
    for (int k = 0; k < MODELS; k++) {
      halo_net_stats st;
      if (halo_net_gradients(model[k], epoch, &st) != HALO_OK) goto done;
      if (epoch == 0 && halo_net_grads_get(model[k], buf[k]) != HALO_OK) goto done;
      if (halo_net_update(model[k]) != HALO_OK) goto done;
      local[k] = st.loss_sum;
    }
    MPI_Allreduce(local, sum, MODELS, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (f)
      fprintf(f, "%lld %.9g %.9g %.9g\n", (long long)epoch, sum[0] / train, sum[1] / train,
              sum[2] / train);
    if (epoch == 0 && p.rank == 0 && write_columns(p.out, "grads", buf, params) != 0) goto done;
  }
  if (f) fclose(f);
  f = NULL;

  if (p.rank == 0) {
    for (int k = 0; k < MODELS; k++)
      if (halo_net_params_get(model[k], buf[k]) != HALO_OK) goto done;
    if (write_columns(p.out, "params", buf, params) != 0) goto done;
  }
  for (int k = 0; k < MODELS; k++) {
    halo_net_stats st;
    if (halo_net_evaluate(model[k], &st) != HALO_OK) goto done;
    if (halo_net_logits_get(model[k], buf[k]) != HALO_OK) goto done;
    char path[1024];
    snprintf(path, sizeof path, "%s/logits-%d-%d.txt", p.out, k, p.rank);
    if (tr_write_logits(path, shard[k]->global_id, n_owned, classes, 1, &buf[k]) != 0) goto done;
  }
  rc = 0;
done:
  if (f) fclose(f);
  for (int k = 0; k < MODELS; k++) {
    free(buf[k]);
    halo_net_destroy(&model[k]);
    halo_shard_destroy(&shard[k]);
  }
  halo_backend_destroy(&be);
  halo_shard_destroy(&base);
  te_probe_end(&p);
  return rc;
}

/* ---- the test -------------------------------------------------------------- */

typedef struct probe_result {
  int np;
  int64_t nparams;
  int64_t n_owned[4], interior[4];
  int contiguous[4][MODELS];
  double *loss[MODELS];   /* per epoch */
  double *grad[MODELS];   /* the first step's */
  double *param[MODELS];  /* after the last step */
  double *logits[MODELS]; /* n × classes, by global id */
} probe_result;

static void result_free(probe_result *r) {
  for (int k = 0; k < MODELS; k++) {
    free(r->loss[k]);
    free(r->grad[k]);
    free(r->param[k]);
    free(r->logits[k]);
  }
}

static probe_result run_probe(const fx_case *c, int np, const char *backend, uint64_t seed,
                              int64_t nparams) {
  probe_result r = {.np = np, .nparams = nparams};
  char *dir = te_run_probe(ROWS_PROBE, "rows", np, backend, c, seed);
  te_read_columns(dir, "losses", c->epochs, 1, MODELS, r.loss);
  te_read_columns(dir, "grads", nparams, 0, MODELS, r.grad);
  te_read_columns(dir, "params", nparams, 0, MODELS, r.param);
  for (int k = 0; k < MODELS; k++)
    r.logits[k] = calloc((size_t)(c->nodes * c->classes), sizeof(double));
  for (int q = 0; q < np; q++) {
    FILE *f = te_open("%s/info-%d.txt", dir, q);
    long long n_owned, interior;
    cr_assert_eq(fscanf(f, "%lld %lld %d %d %d", &n_owned, &interior, &r.contiguous[q][0],
                        &r.contiguous[q][1], &r.contiguous[q][2]),
                 5);
    r.n_owned[q] = n_owned;
    r.interior[q] = interior;
    fclose(f);
    for (int k = 0; k < MODELS; k++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/logits-%d-%d.txt", dir, k, q);
      const int64_t seen = te_read_logits(path, c, 1, &r.logits[k]);
      cr_assert_eq(seen, r.n_owned[q], "%s: %lld rows, rank %d owns %lld", path, (long long)seen, q,
                   (long long)r.n_owned[q]);
    }
  }
  tr_rmdir(dir);
  return r;
}

/* Compares n values `got` of run `got_name` with `want` of `want_name`:
 * exactly when tol is 0, else within tol · max|want|. */
static void compare(const char *name, int np, const char *what, const char *got_name,
                    const double *got, const char *want_name, const double *want, int64_t n,
                    double tol) {
  const double bound = tol * fx_max_abs(want, n);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const int off = tol == 0.0 ? got[i] != want[i] : fabs(got[i] - want[i]) > bound;
    if (off && bad++ < 5)
      cr_expect_fail("%s P=%d: %s %lld is %.9g (%s), %.9g (%s)", name, np, what, (long long)i,
                     got[i], got_name, want[i], want_name);
  }
  cr_expect_eq(bad, 0, "%s P=%d: %d %s values (%s) off those of %s", name, np, bad, what, got_name,
               want_name);
}

/* Interior rows of part q, from the graph: nodes whose neighbours are all in q. */
static int64_t graph_interior(const fx_graph *g, int32_t q) {
  int64_t count = 0;
  for (int64_t i = 0; i < g->n; i++) {
    if (g->part[i] != q) continue;
    int inside = 1;
    for (int64_t k = g->indptr[i]; k < g->indptr[i + 1] && inside; k++)
      inside = g->part[g->indices[k]] == q;
    count += inside;
  }
  return count;
}

/* Runs one case at P=1 and P=3 (CPU), and P=3 on the checked backend, and
 * checks everything in the file comment. */
static void check_case(const char *name, const fx_case *c, uint64_t seed) {
  const fx_model m = fx_case_model(c, seed, 1);
  const int64_t nparams = fx_model_params(&m), nz = c->nodes * c->classes;
  const int nps[2] = {1, 3};
  probe_result r[2];
  for (int t = 0; t < 2; t++) {
    const int np = nps[t];
    r[t] = run_probe(c, np, "cpu", seed, nparams);
    const fx_spec spec = fx_case_spec(c, np, seed);
    fx_graph *g = fx_graph_new(&spec);

    for (int q = 0; q < np; q++) {
      const int64_t interior = graph_interior(g, q);
      const int both = interior > 0 && interior < r[t].n_owned[q];
      cr_log_info("%s P=%d part %d: %lld of %lld rows interior", name, np, q, (long long)interior,
                  (long long)r[t].n_owned[q]);
      cr_expect_eq(r[t].interior[q], interior,
                   "%s P=%d part %d: the model counts %lld interior "
                   "rows, the graph has %lld",
                   name, np, q, (long long)r[t].interior[q], (long long)interior);
      /* At P=3 each part must hold both kinds, or the orders would not differ. */
      if (np > 1)
        cr_assert(both, "%s P=%d part %d: %lld of %lld rows interior: pick another graph", name, np,
                  q, (long long)interior, (long long)r[t].n_owned[q]);
      cr_expect_eq(r[t].contiguous[q][MODEL_CONTIGUOUS], 1,
                   "%s P=%d part %d: interior rows first, but no contiguous blocks", name, np, q);
      cr_expect_eq(r[t].contiguous[q][MODEL_LISTS], 0,
                   "%s P=%d part %d: row_lists set, but contiguous blocks", name, np, q);
      cr_expect_eq(r[t].contiguous[q][MODEL_BOUNDARY_FIRST], !both,
                   "%s P=%d part %d: boundary rows first, contiguous %d", name, np, q,
                   r[t].contiguous[q][MODEL_BOUNDARY_FIRST]);
    }

    /* The same shard through lists: the same numbers, bit for bit; another
     * numbering of the same part changes the order of the sums over rows
     * (dW), so fp32 rounding. */
    const char *c0 = model_name[MODEL_CONTIGUOUS];
    for (int k = MODEL_LISTS; k < MODELS; k++) {
      const double tol = k == MODEL_LISTS ? 0.0 : 1e-5;
      const probe_result *p = &r[t];
      compare(name, np, "loss", model_name[k], p->loss[k], c0, p->loss[0], c->epochs, tol);
      compare(name, np, "gradient", model_name[k], p->grad[k], c0, p->grad[0], nparams, tol);
      compare(name, np, "parameter", model_name[k], p->param[k], c0, p->param[0], nparams,
              10.0 * tol);
      compare(name, np, "logit", model_name[k], p->logits[k], c0, p->logits[0], nz, 10.0 * tol);
    }

    /* The first loss (initial weights, dropout keyed by epoch 0 and global
     * ids) and the trained logits (evaluation: no dropout) against the dense
     * double reference. */
    char what[64];
    snprintf(what, sizeof what, "%s P=%d", name, np);
    te_expect_first_loss(what, c, seed, g, r[t].loss[0][0]);
    te_expect_logits(what, c, seed, g, r[t].param[0], r[t].logits[0]);
    /* The steps moved the parameters, so the comparisons above are of training. */
    double *p0 = calloc((size_t)nparams, sizeof *p0);
    fx_model_init(&m, p0);
    double moved = 0.0;
    for (int64_t i = 0; i < nparams; i++) moved = fmax(moved, fabs(r[t].param[0][i] - p0[i]));
    cr_expect_gt(moved, 1e-3, "%s P=%d: %d steps moved no parameter by more than %g", name, np,
                 c->epochs, moved);
    free(p0);
    fx_graph_free(g);
  }

  /* The same function of the data at P=1 and P=3. */
  for (int e = 0; e < c->epochs; e++)
    cr_expect(fx_rel(r[1].loss[0][e], r[0].loss[0][e]) <= 1e-5,
              "%s epoch %d: loss %.9g at P=3, %.9g at P=1", name, e, r[1].loss[0][e],
              r[0].loss[0][e]);

  /* The device-like backend: every pointer inside a device buffer, and the
   * CPU's numbers. */
  probe_result d = run_probe(c, 3, "checked", seed, nparams);
  cr_expect(memcmp(d.contiguous, r[1].contiguous, sizeof d.contiguous) == 0,
            "%s: the checked backend took other paths than the CPU", name);
  for (int k = 0; k < MODELS; k++) {
    char got[64], want[64];
    snprintf(got, sizeof got, "%s, checked backend", model_name[k]);
    snprintf(want, sizeof want, "%s, CPU", model_name[k]);
    compare(name, 3, "loss", got, d.loss[k], want, r[1].loss[k], c->epochs, 0.0);
    compare(name, 3, "gradient", got, d.grad[k], want, r[1].grad[k], nparams, 0.0);
    compare(name, 3, "logit", got, d.logits[k], want, r[1].logits[k], nz, 0.0);
  }
  result_free(&d);
  result_free(&r[0]);
  result_free(&r[1]);
}

Test(rows, transform_and_aggregate_layers, .timeout = 300) {
  uint64_t seed = tr_seed("rows.transform_aggregate", 29);
  /* Layer 0 transforms (24 -> 6) and layer 1 aggregates (6 -> 8), so both
   * exchange shapes, forward and backward, go through the split; average
   * degree 2 leaves about a quarter of each part's rows interior at P=3. */
  const fx_case tc = {.nodes = 160,
                      .degree = 2,
                      .features = 24,
                      .density = 0.3f,
                      .classes = 8,
                      .hidden = 6,
                      .input_dropout = 0.5f,
                      .epochs = 8};
  check_case("transform-aggregate", &tc, seed);
}

Test(rows, cached_first_layer, .timeout = 300) {
  uint64_t seed = tr_seed("rows.cached", 31);
  /* No input dropout: ÂX is computed once at set-up, through the split. */
  const fx_case cc = {.nodes = 150,
                      .degree = 2,
                      .features = 20,
                      .density = 0.2f,
                      .classes = 4,
                      .hidden = 6,
                      .input_dropout = 0.0f,
                      .epochs = 8};
  check_case("cached", &cc, seed);
}

int main(int argc, char **argv) { return te_main(argc, argv, probe_main); }
