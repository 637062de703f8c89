/* The cached first layer (no input dropout) with ÂX kept as CSR.
 *
 * This binary is both the Criterion test and, under `--probe`, the MPI
 * program the test runs with mpirun.  Every rank of the probe builds the same
 * random fixture graph, takes its own part's shard, and builds three models
 * that differ only in how ÂX is stored: as CSR (--sparse-features 1), dense
 * (0), and as the density decides (-1).  It then poisons and frees the shard,
 * so that any later read of it shows, trains the first two models side by
 * side and writes what they computed.  The test checks:
 *
 *  - sparse and dense ÂX give the same loss curve, parameters and logits, to
 *    fp32 rounding;
 *  - the trained sparse model's logits equal a dense double-precision
 *    reference forward pass with the same parameters;
 *  - P=1 and P=3 give the same curve (the CSR path is partition-invariant);
 *  - the automatic choice is one decision for all ranks, the one the density
 *    of ÂX over the WHOLE graph dictates, whatever each part's density is.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-backend.h"
#include "halo-net.h"
#include "train-expect.h"
#include "train-fixture.h"
#include "train-run.h"

#ifndef CACHED_PROBE
#error "CACHED_PROBE must name this test's own binary"
#endif

enum { MODEL_SPARSE, MODEL_DENSE, MODEL_AUTO, MODELS };

/* ---- the probe (runs under mpirun) --------------------------------------- */

/* Overwrites every array of the shard before freeing it: a model that
 * still read it would see garbage, not the old values. */
static void shard_poison_and_free(halo_shard **sp) {
  halo_shard *s = *sp;
  const int64_t n_all = s->n_owned + s->n_halo;
  memset(s->global_id, 0xff, (size_t)n_all * sizeof *s->global_id);
  memset(s->degree, 0xff, (size_t)n_all * sizeof *s->degree);
  memset(s->indptr, 0xff, (size_t)(s->n_owned + 1) * sizeof *s->indptr);
  memset(s->indices, 0xff, (size_t)s->nnz * sizeof *s->indices);
  memset(s->x, 0xff, (size_t)(s->n_owned * s->features) * sizeof *s->x);
  memset(s->labels, 0xff, (size_t)s->n_owned * sizeof *s->labels);
  memset(s->train, 0xff, (size_t)s->n_train * sizeof *s->train);
  memset(s->valid, 0xff, (size_t)s->n_valid * sizeof *s->valid);
  memset(s->test, 0xff, (size_t)s->n_test * sizeof *s->test);
  memset(s->send_idx, 0xff, (size_t)s->send_ptr[s->parts] * sizeof *s->send_idx);
  halo_shard_destroy(sp);
}

/* usage: --probe OUT nodes degree features density classes hidden input_dropout
 *                epochs seed (input_dropout 0: the cached first layer)
 * Writes OUT/losses.txt (rank 0: "epoch loss_sparse loss_dense"),
 * OUT/params.txt (rank 0: "p_sparse p_dense" per parameter),
 * OUT/logits-R.txt ("gid z_sparse... z_dense...") and OUT/choice-R.txt
 * ("sparse dense auto" as each model reports it). */
static int probe_main(int argc, char **argv) {
  int rc = 1;
  te_probe p;
  halo_shard *shard = NULL;
  halo_backend *be = NULL;
  halo_net *model[MODELS] = {NULL};
  int64_t *gid = NULL;
  float *buf[2] = {NULL};
  FILE *f = NULL;
  if (te_probe_begin(&argc, &argv, 0, &p) != 0) goto done;
  shard = fx_shard_new(p.graph, p.rank, 31);
  if (halo_backend_create(&(halo_backend_options){.device = "cpu"}, &be) != HALO_OK) goto done;

  halo_net_options o = te_probe_options(&p);
  const int choice[MODELS] = {1, 0, -1};
  for (int k = 0; k < MODELS; k++) {
    o.sparse_features = choice[k];
    if (halo_net_create(MPI_COMM_WORLD, be, shard, &o, &model[k]) != HALO_OK) goto done;
  }
  /* The models must not need the shard any more. */
  const int64_t n_owned = shard->n_owned;
  gid = malloc((size_t)n_owned * sizeof *gid + 1);
  if (!gid) goto done;
  memcpy(gid, shard->global_id, (size_t)n_owned * sizeof *gid);
  shard_poison_and_free(&shard);

  halo_net_info info[MODELS];
  for (int k = 0; k < MODELS; k++) halo_net_info_get(model[k], &info[k]);
  if (!(f = tr_fopenf("w", "%s/choice-%d.txt", p.out, p.rank))) goto done;
  fprintf(f, "%d %d %d\n", info[0].sparse_features, info[1].sparse_features,
          info[2].sparse_features);
  fclose(f);
  f = NULL;

  if (p.rank == 0 && !(f = tr_fopenf("w", "%s/losses.txt", p.out))) goto done;
  const double train = (double)info[0].global_count[0];
  for (int64_t epoch = 0; epoch < p.c.epochs; epoch++) {
    double local[2], sum[2];
    for (int k = 0; k < 2; k++) {
      halo_net_stats st;
      if (halo_net_step(model[k], epoch, &st) != HALO_OK) goto done;
      local[k] = st.loss_sum;
    }
    MPI_Allreduce(local, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (f) fprintf(f, "%lld %.9g %.9g\n", (long long)epoch, sum[0] / train, sum[1] / train);
  }
  if (f) fclose(f);
  f = NULL;

  const int64_t params = info[0].params, classes = info[0].model.dims[info[0].model.layers];
  const int64_t len = params > n_owned * classes ? params : n_owned * classes;
  for (int k = 0; k < 2; k++)
    if (!(buf[k] = malloc((size_t)len * sizeof(float) + 1))) goto done;
  if (p.rank == 0) {
    for (int k = 0; k < 2; k++)
      if (halo_net_params_get(model[k], buf[k]) != HALO_OK) goto done;
    if (!(f = tr_fopenf("w", "%s/params.txt", p.out))) goto done;
    for (int64_t i = 0; i < params; i++) fprintf(f, "%.9g %.9g\n", buf[0][i], buf[1][i]);
    fclose(f);
    f = NULL;
  }
  for (int k = 0; k < 2; k++) {
    halo_net_stats st;
    if (halo_net_evaluate(model[k], &st) != HALO_OK) goto done;
    if (halo_net_logits_get(model[k], buf[k]) != HALO_OK) goto done;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/logits-%d.txt", p.out, p.rank);
  if (tr_write_logits(path, gid, n_owned, classes, 2, buf) != 0) goto done;
  rc = 0;
done:
  if (f) fclose(f);
  free(buf[0]);
  free(buf[1]);
  free(gid);
  for (int k = 0; k < MODELS; k++) halo_net_destroy(&model[k]);
  halo_backend_destroy(&be);
  halo_shard_destroy(&shard);
  te_probe_end(&p);
  return rc;
}

/* ---- the test -------------------------------------------------------------- */

/* Non-zeros of ÂX for the nodes with part[i] == part (all when part < 0),
 * from the graph's pattern: row i of ÂX is non-zero where row i of X or the
 * row of a neighbour is (the features and Â are non-negative). */
static void ax_nonzeros(const fx_graph *g, int32_t part, int64_t *nnz, int64_t *size) {
  *nnz = *size = 0;
  for (int64_t i = 0; i < g->n; i++) {
    if (part >= 0 && g->part[i] != part) continue;
    *size += g->f;
    for (int32_t j = 0; j < g->f; j++) {
      int nz = g->x[i * g->f + j] != 0.0f;
      for (int64_t k = g->indptr[i]; k < g->indptr[i + 1] && !nz; k++)
        nz = g->x[g->indices[k] * g->f + j] != 0.0f;
      *nnz += nz;
    }
  }
}

typedef struct probe_result {
  int epochs;
  double *loss[2]; /* per epoch: sparse, dense */
  int64_t nparams;
  double *param[2];  /* after the last step */
  double *logits[2]; /* n × classes, by global id */
  int choice[8][MODELS];
} probe_result;

static void result_free(probe_result *r) {
  for (int k = 0; k < 2; k++) {
    free(r->loss[k]);
    free(r->param[k]);
    free(r->logits[k]);
  }
}

static probe_result run_probe(const fx_case *c, int np, uint64_t seed, int64_t nparams) {
  probe_result r = {.epochs = c->epochs, .nparams = nparams};
  char *dir = te_run_probe(CACHED_PROBE, "cached", np, NULL, c, seed);
  te_read_columns(dir, "losses", c->epochs, 1, 2, r.loss);
  te_read_columns(dir, "params", nparams, 0, 2, r.param);
  for (int k = 0; k < 2; k++) r.logits[k] = calloc((size_t)(c->nodes * c->classes), sizeof(double));
  int64_t seen = 0;
  for (int q = 0; q < np; q++) {
    FILE *f = te_open("%s/choice-%d.txt", dir, q);
    cr_assert_eq(fscanf(f, "%d %d %d", &r.choice[q][0], &r.choice[q][1], &r.choice[q][2]), 3);
    fclose(f);
    char path[1024];
    snprintf(path, sizeof path, "%s/logits-%d.txt", dir, q);
    seen += te_read_logits(path, c, 2, r.logits);
  }
  cr_assert_eq(seen, c->nodes, "the ranks reported %lld of %lld nodes", (long long)seen,
               (long long)c->nodes);
  tr_rmdir(dir);
  return r;
}

/* Runs one case at P=1 and P=3 and checks everything in the file comment.
 * expect_auto: 1 when the whole graph's ÂX is sparse enough for CSR.
 * split_at_p3: at P=3 some part's own ÂX should be on the other side of 10%
 * from the graph's: 0 no, 1 logged if not, 2 required (a known input). */
static void check_case(const char *name, const fx_case *c, uint64_t seed, int expect_auto,
                       int split_at_p3) {
  cr_assert_eq(c->input_dropout, 0.0f, "%s: the cached first layer has no input dropout", name);
  const fx_model m = fx_case_model(c, seed, 0);
  const int64_t nparams = fx_model_params(&m);
  const int nps[2] = {1, 3};
  probe_result r[2];
  for (int t = 0; t < 2; t++) {
    const int np = nps[t];
    r[t] = run_probe(c, np, seed, nparams);
    const fx_spec spec = fx_case_spec(c, np, seed);
    fx_graph *g = fx_graph_new(&spec);

    /* One decision, from the whole graph's density; each part's own density
     * is logged to show where a per-rank choice would have differed. */
    int64_t nnz, size, other_side = 0;
    ax_nonzeros(g, -1, &nnz, &size);
    cr_log_info("%s P=%d: ÂX %.4f dense over the graph", name, np, (double)nnz / (double)size);
    for (int q = 0; q < np; q++) {
      int64_t pn, ps;
      ax_nonzeros(g, q, &pn, &ps);
      cr_log_info("%s P=%d: part %d's ÂX is %.4f dense", name, np, q, (double)pn / (double)ps);
      other_side += ((double)pn < 0.10 * (double)ps) != expect_auto;
      cr_expect_eq(r[t].choice[q][MODEL_SPARSE], 1,
                   "%s P=%d rank %d: --sparse-features 1 "
                   "did not keep ÂX as CSR",
                   name, np, q);
      cr_expect_eq(r[t].choice[q][MODEL_DENSE], 0,
                   "%s P=%d rank %d: --sparse-features 0 "
                   "kept ÂX as CSR",
                   name, np, q);
      cr_expect_eq(r[t].choice[q][MODEL_AUTO], expect_auto,
                   "%s P=%d rank %d: automatic "
                   "choice %d, the graph's density says %d",
                   name, np, q, r[t].choice[q][MODEL_AUTO], expect_auto);
    }
    cr_expect_eq((double)nnz < 0.10 * (double)size, expect_auto,
                 "%s: the case's density is not on the side it was chosen for", name);
    /* Otherwise a per-rank choice would pass too: another seed may lose the
     * split, so only the default seed's input must have it. */
    if (np == 3 && split_at_p3 && other_side == 0) {
      cr_log_info(
          "%s P=3: no part's own density disagrees with the graph's, so the single "
          "decision is not tested (seed %llu)",
          name, (unsigned long long)seed);
      cr_expect_neq(split_at_p3, 2, "%s P=3: the default seed's input lost its split", name);
    }

    /* Sparse against dense ÂX: the same training, to fp32 rounding. */
    for (int e = 0; e < c->epochs; e++)
      cr_expect(fx_rel(r[t].loss[0][e], r[t].loss[1][e]) <= 1e-5,
                "%s P=%d epoch %d: loss %.9g with CSR ÂX, %.9g dense", name, np, e, r[t].loss[0][e],
                r[t].loss[1][e]);
    const double pmax = fx_max_abs(r[t].param[1], nparams);
    for (int64_t i = 0; i < nparams; i++)
      cr_expect(fabs(r[t].param[0][i] - r[t].param[1][i]) <= 1e-4 * pmax,
                "%s P=%d: parameter %lld is %.9g with CSR ÂX, %.9g dense", name, np, (long long)i,
                r[t].param[0][i], r[t].param[1][i]);

    /* The first step's loss (initial weights, the hidden layer's dropout
     * keyed by epoch 0 and the global ids, the train labels) against the
     * reference: after the shard was freed, the models still hold all of it.
     * Then the logits, sparse and dense, of the trained CSR model's
     * parameters against the reference's with them (evaluation: no dropout). */
    for (int k = 0; k < 2; k++) {
      char what[128];
      snprintf(what, sizeof what, "%s P=%d (%s ÂX)", name, np, k ? "dense" : "CSR");
      te_expect_first_loss(what, c, seed, g, r[t].loss[k][0]);
      te_expect_logits(what, c, seed, g, r[t].param[0], r[t].logits[k]);
    }
    fx_graph_free(g);
  }

  /* The CSR path is the same function at P=1 and P=3. */
  for (int e = 0; e < c->epochs; e++)
    cr_expect(fx_rel(r[1].loss[0][e], r[0].loss[0][e]) <= 1e-5,
              "%s epoch %d: loss %.9g at P=3, %.9g at P=1", name, e, r[1].loss[0][e],
              r[0].loss[0][e]);
  cr_expect(r[0].loss[0][c->epochs - 1] < r[0].loss[0][0],
            "%s: the loss did not fall (%.6g -> %.6g)", name, r[0].loss[0][0],
            r[0].loss[0][c->epochs - 1]);
  result_free(&r[0]);
  result_free(&r[1]);
}

Test(cached, sparse_ax_matches_dense_and_reference, .timeout = 300) {
  uint64_t seed = tr_seed("cached.sparse_ax", 17);
  /* Sparse X (3%) on a low-degree graph: ÂX just under 10% over the graph,
   * so that the automatic choice keeps it as CSR, while at P=3 one part alone
   * is over 10% with the default seed (0.087, 0.100, 0.097: see the log). */
  const fx_case sparse = {.nodes = 150,
                          .degree = 2,
                          .features = 48,
                          .density = 0.03f,
                          .classes = 4,
                          .hidden = 8,
                          .epochs = 30};
  check_case("sparse-ax", &sparse, seed, 1, seed == 17 ? 2 : 1);
}

Test(cached, dense_ax_stays_dense, .timeout = 300) {
  uint64_t seed = tr_seed("cached.dense_ax", 23);
  /* 10% of X, degree ~8: ÂX is mostly non-zero, the automatic choice dense. */
  const fx_case dense = {.nodes = 120,
                         .degree = 4,
                         .features = 20,
                         .density = 0.10f,
                         .classes = 3,
                         .hidden = 6,
                         .epochs = 20};
  check_case("dense-ax", &dense, seed, 0, 0);
}

int main(int argc, char **argv) { return te_main(argc, argv, probe_main); }
