/* The GCN's arithmetic against a dense double-precision reference.
 *
 *  - Â and SpMM: every part's normalised adjacency times random features
 *    equals the dense D^-1/2 (A+I) D^-1/2 · X of the whole graph.
 *  - Whole model, forward and backward, at P=1 and P=3 (train-probe under
 *    mpirun): logits equal the reference's, and the allreduced gradients equal
 *    central finite differences of the reference loss in double.  The layer
 *    shapes covered: sparse and dense X multiplied first, X aggregated first
 *    (hidden wider than the input), the cached ÂX (no input dropout) dense
 *    and as CSR, and a hidden-to-hidden layer.
 *  - Volume: the bytes each probe sent equal halo_predict's figure.
 *
 * Every probe run at one P goes into one mpirun (train-probe --cases: under
 * the sanitizers an mpirun costs seconds of start-up and leak check, more
 * than a case): layers/probes_p1 and layers/probes_p3 gather the runs of
 * every group (layers.aggr, layers.models, ...; gather_jobs), run them, then
 * check each.  Every message names the run's group, case and seed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-net.h"
#include "halo-rng.h"
#include "halo-spmm.h"
#include "test-sanitized.h"
#include "train-fixture.h"
#include "train-run.h"

#ifndef TRAIN_PROBE
#error "TRAIN_PROBE must name the train-probe binary"
#endif

Test(layers, adjacency_spmm_matches_dense_reference) {
  uint64_t seed = tr_seed("layers.adjacency_spmm", 11);
  for (int trial = 0; trial < 3; trial++) {
    fx_spec spec = {.nodes = 90 + 37 * trial,
                    .avg_degree = 2 + 3 * trial,
                    .features = 3,
                    .density = 1.0f,
                    .classes = 3,
                    .parts = 1 + 2 * trial,
                    .seed = seed + trial};
    fx_graph *g = fx_graph_new(&spec);
    const int32_t cols = 5 + 16 * trial; /* 5, 21, 37: tails of the kernel's tiles */
    double *x = calloc((size_t)(g->n * cols), sizeof *x),
           *ref = calloc((size_t)(g->n * cols), sizeof *ref);
    uint64_t key = halo_rng_key(seed + trial, HALO_RNG_FEATURES, 9, 0);
    for (int64_t i = 0; i < g->n * cols; i++)
      x[i] = 2.0 * halo_rng_uniform_double(key, (uint64_t)i, 0) - 1.0;
    /* Dense reference: Â built entry by entry from the definition. */
    for (int64_t i = 0; i < g->n; i++) {
      double di = (double)(g->indptr[i + 1] - g->indptr[i]) + 1.0;
      for (int64_t j = 0; j < g->n; j++) {
        int edge = i == j;
        for (int64_t k = g->indptr[i]; k < g->indptr[i + 1] && !edge; k++)
          edge = g->indices[k] == j;
        if (!edge) continue;
        double dj = (double)(g->indptr[j + 1] - g->indptr[j]) + 1.0;
        for (int32_t c = 0; c < cols; c++) ref[i * cols + c] += x[j * cols + c] / sqrt(di * dj);
      }
    }
    for (int32_t p = 0; p < g->parts; p++) {
      halo_shard *s = fx_shard_new(g, p, 1);
      halo_csr a;
      cr_assert_eq(halo_net_adjacency(s, &a), HALO_OK);
      cr_assert_eq(a.rows, s->n_owned);
      cr_assert_eq(a.nnz, s->nnz + s->n_owned, "one self-loop per row");
      int64_t nl = s->n_owned + s->n_halo;
      float *xl = calloc((size_t)(nl * cols), sizeof *xl),
            *y = calloc((size_t)(s->n_owned * cols + 1), sizeof *y);
      for (int64_t r = 0; r < nl; r++)
        for (int32_t c = 0; c < cols; c++) xl[r * cols + c] = (float)x[s->global_id[r] * cols + c];
      halo_spmm_cpu(&a, xl, cols, cols, 0.0f, y, cols, NULL, s->n_owned);
      for (int64_t r = 0; r < s->n_owned; r++)
        for (int32_t c = 0; c < cols; c++) {
          double want = ref[s->global_id[r] * cols + c];
          cr_expect(fabs(y[r * cols + c] - want) <= 1e-5 * (1.0 + fabs(want)),
                    "trial %d part %d row %lld (global %lld) col %d: %g vs %g", trial, p,
                    (long long)r, (long long)s->global_id[r], c, y[r * cols + c], want);
        }
      /* Rows are ordered by global id, whatever the local numbering. */
      for (int64_t r = 0; r < a.rows; r++)
        for (int64_t k = a.indptr[r] + 1; k < a.indptr[r + 1]; k++)
          cr_expect_lt(s->global_id[a.indices[k - 1]], s->global_id[a.indices[k]]);
      free(xl);
      free(y);
      halo_csr_free(&a);
      halo_shard_destroy(&s);
    }
    free(x);
    free(ref);
    fx_graph_free(g);
  }
}

typedef struct probe_case {
  const char *name;
  int64_t nodes;
  int32_t degree, features;
  float density;
  int32_t classes, layers, hidden;
  float dropout, input_dropout;
  int sparse;
  int expect_sparse;
  const char *model; /* NULL: gcn */
  const char *flags; /* HALO_PROBE_FLAGS; NULL: none */
} probe_case;

/* A GAT case: its heads (hidden is then per head) and attention dropout. */
typedef struct gat_case {
  probe_case c;
  int32_t heads, output_heads;
  float attn_dropout;
} gat_case;

/* Reads every rank's "gid z_0 z_1 ..." lines from DIR/NAME-R.txt and
 * compares them with the reference's z (n × cols), to 1e-5 of its
 * largest value and of each value; returns the rows seen. */
static int64_t check_logits_files(const char *what, const char *dir, const char *name, int np,
                                  const double *z, int64_t n, int32_t cols) {
  double zmax = 0.0;
  int64_t seen = 0;
  for (int64_t i = 0; i < n * cols; i++) zmax = fmax(zmax, fabs(z[i]));
  for (int r = 0; r < np; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%d.txt", dir, name, r);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s: no %s", what, path);
    long long gid;
    while (fscanf(f, "%lld", &gid) == 1) {
      for (int32_t c = 0; c < cols; c++) {
        double v;
        cr_assert_eq(fscanf(f, "%lf", &v), 1, "%s: %s ends inside node %lld", what, path, gid);
        const double want = z[gid * cols + c];
        cr_expect(fabs(v - want) <= 1e-5 * zmax + 1e-5 * fabs(want),
                  "%s P=%d: %s of node %lld class %d is %.9g, reference %.9g", what, np, name, gid,
                  c, v, want);
      }
      seen++;
    }
    fclose(f);
  }
  return seen;
}

/* --norm batch: the running statistics after `epochs` training forwards
 * (the probe's epoch and the next ones, one set of parameters) against
 * torch's recurrence (momentum 0.1, from mean 0 and variance 1, the
 * variance unbiased) over the reference's batch statistics of each epoch;
 * then the evaluation's logits against the reference in evaluation mode
 * (no dropout, BatchNorm with the probe's running statistics). */
static void check_bn_running(const char *what, const fx_model *m, const fx_graph *g,
                             const double *p, int np, const char *dir, int epochs) {
  /* Which entries are variances: each site is its mean, then its variance. */
  int64_t count = 0;
  int is_var[4096];
  for (int l = 0; l < m->layers; l++) {
    const int32_t sites[2] = {m->kind == FX_GIN ? m->mlp_hidden : 0,
                              l + 1 < m->layers ? m->dims[l + 1] : 0};
    for (int k = 0; k < 2; k++)
      for (int32_t c = 0; c < 2 * sites[k]; c++) {
        cr_assert_lt(count, 4096, "%s: more running statistics than 4096", what);
        is_var[count++] = c >= sites[k];
      }
  }
  double *want = calloc((size_t)count, sizeof *want), *batch = calloc((size_t)count, sizeof *batch);
  double *got = calloc((size_t)count, sizeof *got);
  for (int64_t j = 0; j < count; j++) want[j] = is_var[j] ? 1.0 : 0.0;
  for (int e = 0; e < epochs; e++) {
    fx_model t = *m;
    t.epoch = m->epoch + e;
    t.bn_batch = batch;
    fx_model_loss(&t, g, p, NULL);
    const double n = (double)g->n;
    for (int64_t j = 0; j < count; j++)
      want[j] = 0.9 * want[j] + 0.1 * (is_var[j] ? batch[j] * n / (n - 1.0) : batch[j]);
  }
  char path[512];
  snprintf(path, sizeof path, "%s/bn-running.txt", dir);
  FILE *f = fopen(path, "r");
  cr_assert(f, "%s: no %s", what, path);
  double vmax = fx_max_abs(want, count);
  for (int64_t j = 0; j < count; j++) {
    cr_assert_eq(fscanf(f, "%lf", &got[j]), 1, "%s: %s ends at %lld", what, path, (long long)j);
    cr_expect(fabs(got[j] - want[j]) <= 2e-5 * vmax + 2e-5 * fabs(want[j]),
              "%s P=%d: running %s [%lld] is %.9g, reference %.9g", what, np,
              is_var[j] ? "variance" : "mean", (long long)j, got[j], want[j]);
  }
  fclose(f);

  fx_model ev = *m;
  ev.dropout = ev.input_dropout = 0.0f;
  ev.bn_running = got;
  const int32_t cls = m->dims[m->layers];
  double *z = calloc((size_t)(g->n * cls), sizeof *z);
  fx_model_loss(&ev, g, p, z);
  cr_expect_eq(check_logits_files(what, dir, "eval-logits", np, z, g->n, cls), g->n);
  free(z);
  free(want);
  free(batch);
  free(got);
}

/* One run of a case in a batch (train-probe --cases): the case at the
 * batch's P with its seed.  `what` names the group, the case and the seed
 * in every message ("layers.aggr sage-max, seed 15"). */
typedef struct probe_job {
  const probe_case *pc;
  const gat_case *gat; /* a GAT case's heads; NULL for the other models */
  int deterministic;   /* HALO_PROBE_DETERMINISTIC */
  uint64_t seed;
  int index; /* the case's index in the batch */
  char what[160];
} probe_job;

enum { PROBE_EPOCH = 3 };

/* Checks what train-probe wrote for `job` at P ranks: logits, gradients,
 * memory, bytes and (BatchNorm) the running statistics. */
static void check_model_probe(const probe_job *job, const tr_batch *batch, int np) {
  const probe_case *pc = job->pc;
  const gat_case *gat = job->gat;
  const char *what = job->what;
  const uint64_t seed = job->seed;
  const int64_t epoch = PROBE_EPOCH;
  const char *dir = tr_batch_dir(batch, job->index);
  const int status = tr_batch_status(batch, job->index);
  if (status != 0) {
    char *logs = tr_batch_logs(batch, job->index, np);
    cr_expect_fail("%s: train-probe at P=%d %s; its output:\n%s", what, np,
                   status < 0 ? "never finished the case" : "failed", logs ? logs : "");
    free(logs);
    return;
  }
  const char *flags = pc->flags ? pc->flags : "";
  const int batch_norm = strchr(flags, 'b') != NULL;

  fx_spec spec = {.nodes = pc->nodes,
                  .avg_degree = pc->degree,
                  .features = pc->features,
                  .density = pc->density,
                  .classes = pc->classes,
                  .parts = np,
                  .seed = seed};
  fx_graph *g = fx_graph_new(&spec);
  if (strchr(flags, 'w')) fx_graph_weigh(g, seed);
  fx_model m = {.layers = pc->layers,
                .dropout = pc->dropout,
                .input_dropout = pc->input_dropout,
                .seed = seed,
                .normalize = 1,
                .epoch = epoch,
                .kind = !pc->model                       ? FX_GCN
                        : strcmp(pc->model, "sage") == 0 ? FX_SAGE
                        : strcmp(pc->model, "gin") == 0  ? FX_GIN
                        : strcmp(pc->model, "gat") == 0  ? FX_GAT
                                                         : FX_GCN,
                .mlp_hidden = pc->hidden,
                .train_eps = strchr(flags, 'e') != NULL,
                .sage_normalize = strchr(flags, 'n') != NULL,
                .elu = strchr(flags, 'u') != NULL,
                .negative_slope = strchr(flags, 'k') ? (double)0.2f : 0.0,
                .gelu = strchr(flags, 'g') != NULL,
                .residual = strchr(flags, 'r') != NULL,
                .layer_norm = strchr(flags, 'l') != NULL,
                .batch_norm = batch_norm,
                .heads = gat ? gat->heads : 0,
                .output_heads = gat ? gat->output_heads : 0,
                .attn_dropout = gat ? gat->attn_dropout : 0.0f,
                .halo_sample = strchr(flags, 's') ? 0.5f : 0.0f,
                .sage_aggr = strchr(flags, 'M')   ? FX_AGGR_MAX
                             : strchr(flags, 'S') ? FX_AGGR_SUM
                                                  : FX_AGGR_MEAN,
                .gcn_no_self_loops = strchr(flags, 'L') != NULL,
                .gcn_no_normalize = strchr(flags, 'N') != NULL};
  m.dims[0] = pc->features;
  for (int l = 1; l < pc->layers; l++) m.dims[l] = pc->hidden * (gat ? gat->heads : 1);
  m.dims[pc->layers] = pc->classes;
  int64_t np_params = fx_model_params(&m);
  double *p = calloc((size_t)np_params, sizeof *p);
  double *z = calloc((size_t)(g->n * pc->classes), sizeof *z);
  fx_model_init(&m, p);
  fx_model_loss(&m, g, p, z);
  if (m.halo_sample > 0.0f && np > 1) {
    /* The sampled epoch's graph is not the whole graph's. */
    fx_model whole = m;
    whole.halo_sample = 0.0f;
    cr_expect_neq(fx_model_loss(&whole, g, p, NULL), fx_model_loss(&m, g, p, NULL),
                  "%s: sampling changed nothing", what);
  }

  /* Forward: every rank's logits, keyed by global id. */
  int64_t seen = 0;
  double zmax = 0.0;
  for (int64_t i = 0; i < g->n * pc->classes; i++) zmax = fmax(zmax, fabs(z[i]));
  for (int r = 0; r < np; r++) {
    char path[512];
    snprintf(path, sizeof path, "%s/logits-%d.txt", dir, r);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s: no %s", what, path);
    long long gid;
    while (fscanf(f, "%lld", &gid) == 1) {
      for (int32_t c = 0; c < pc->classes; c++) {
        double v;
        cr_assert_eq(fscanf(f, "%lf", &v), 1, "%s: %s ends inside node %lld", what, path, gid);
        double want = z[gid * pc->classes + c];
        cr_expect(fabs(v - want) <= 1e-5 * zmax + 1e-5 * fabs(want),
                  "%s P=%d: logit of node %lld class %d is %.9g, reference %.9g", what, np, gid, c,
                  v, want);
      }
      seen++;
    }
    fclose(f);
  }
  cr_expect_eq(seen, g->n, "%s: the ranks reported %lld of %lld nodes", what, (long long)seen,
               (long long)g->n);

  /* Backward: gradients against central differences of the reference. */
  char path[512];
  snprintf(path, sizeof path, "%s/grads.txt", dir);
  FILE *f = fopen(path, "r");
  cr_assert(f, "%s: no %s", what, path);
  double gmax = 0.0, *fd = calloc((size_t)np_params, sizeof *fd),
         *got = calloc((size_t)np_params, sizeof *got);
  for (int64_t k = 0; k < np_params; k++) {
    cr_assert_eq(fscanf(f, "%lf", &got[k]), 1, "%s: %s ends at %lld", what, path, (long long)k);
    double keep = p[k], h = 1e-5;
    p[k] = keep + h;
    double up = fx_model_loss(&m, g, p, NULL);
    p[k] = keep - h;
    double down = fx_model_loss(&m, g, p, NULL);
    p[k] = keep;
    fd[k] = (up - down) / (2.0 * h);
    gmax = fmax(gmax, fabs(fd[k]));
  }
  fclose(f);
  cr_assert_gt(gmax, 0.0, "%s: the reference gradient is zero", what);
  int bad = 0;
  for (int64_t k = 0; k < np_params; k++) {
    if (fabs(got[k] - fd[k]) > 2e-3 * fabs(fd[k]) + 2e-4 * gmax && bad++ < 5)
      cr_expect_fail("%s P=%d: dLoss/dparam[%lld] = %.7g, finite differences %.7g", what, np,
                     (long long)k, got[k], fd[k]);
  }
  cr_expect_eq(bad, 0, "%s P=%d: %d of %lld gradients off", what, np, bad, (long long)np_params);

  /* Memory: every model buffer was sized by the buffer plan that the
   * memory estimate sums, so what it allocated is what the plan says. */
  for (int r = 0; r < np; r++) {
    snprintf(path, sizeof path, "%s/memory-%d.txt", dir, r);
    f = fopen(path, "r");
    cr_assert(f, "%s: no %s", what, path);
    long long planned = -1, held = -2;
    cr_assert_eq(fscanf(f, "%lld %lld", &planned, &held), 2, "%s: %s", what, path);
    fclose(f);
    cr_expect_gt(planned, 0, "%s P=%d rank %d: an empty buffer plan", what, np, r);
    cr_expect_eq(held, planned, "%s P=%d rank %d: allocated %lld backend bytes, planned %lld", what,
                 np, r, held, planned);
  }

  /* Volume: measured == predicted, epoch and set-up. */
  snprintf(path, sizeof path, "%s/bytes.txt", dir);
  f = fopen(path, "r");
  cr_assert(f, "%s: no %s", what, path);
  long long sent, predicted, setup, setup_predicted;
  int sparse = -1;
  cr_assert_eq(
      fscanf(f, "%lld %lld %lld %lld %d", &sent, &predicted, &setup, &setup_predicted, &sparse), 5,
      "%s: %s", what, path);
  fclose(f);
  cr_expect_eq(sent, predicted, "%s P=%d: sent %lld bytes, predicted %lld", what, np, sent,
               predicted);
  cr_expect_eq(setup, setup_predicted, "%s P=%d: set-up sent %lld, predicted %lld", what, np, setup,
               setup_predicted);
  if (np > 1 && pc->input_dropout > 0.0f) cr_expect_gt(sent, 0, "%s: nothing was exchanged", what);
  cr_expect_eq(sparse, pc->expect_sparse, "%s: sparse features %d", what, sparse);
  if (batch_norm) check_bn_running(what, &m, g, p, np, dir, 3);

  free(fd);
  free(got);
  free(p);
  free(z);
  fx_graph_free(g);
}

static const probe_case cases[] = {
    /* X (sparse) · W first: 24 -> 6 -> 4. */
    {"sparse-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, NULL, NULL},
    /* The same with dense X. */
    {"dense-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 0, 0, NULL, NULL},
    /* Â·X first (hidden wider than the input), hidden -> hidden, then 12 -> 3. */
    {"aggregate-first", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, NULL, NULL},
    /* No input dropout: ÂX cached at set-up, dense (mostly non-zero). */
    {"cached-ax", 60, 4, 10, 0.5f, 3, 2, 7, 0.5f, 0.0f, -1, 0, NULL, NULL},
    /* The same, ÂX about 7% non-zero: kept as CSR by the density rule.  Wide
     * enough that no row of ÂX is all zeros, which would put Z_0 = b_0 = 0
     * on ReLU's kink and the finite differences of b_0 astride it. */
    {"cached-sparse-ax", 90, 3, 256, 0.01f, 3, 2, 7, 0.5f, 0.0f, -1, 1, NULL, NULL},
    /* A dense ÂX kept as CSR because --sparse-features 1 says so. */
    {"cached-forced-csr", 60, 4, 10, 0.5f, 3, 2, 7, 0.5f, 0.0f, 1, 1, NULL, NULL},
    /* GCN with ELU between its layers. */
    {"gcn-elu", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gcn", "u"},
    /* GCN with LeakyReLU (slope 0.2) between its layers. */
    {"gcn-leaky-relu", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gcn", "k"},
    /* GCN with GELU, whose backward reads the kept Z, transform first. */
    {"gcn-gelu", 70, 4, 24, 0.15f, 4, 3, 6, 0.5f, 0.5f, 1, 1, "gcn", "g"},
};

/* GraphSAGE and GIN in both shapes, each option on in some case. */
static const probe_case model_cases[] = {
    /* X (sparse) · W_l first: 24 -> 6 -> 4, the mean's transpose backward. */
    {"sage-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "sage", NULL},
    /* The mean of H first (hidden wider than the input), rows normalised, ELU. */
    {"sage-aggregate-normalize", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "nu"},
    /* No input dropout: SAGE does not cache (dense X, transform first). */
    {"sage-no-input-dropout", 60, 4, 10, 0.5f, 3, 2, 7, 0.5f, 0.0f, 0, 0, "sage", "n"},
    /* GIN: W_1 first (6 < 24) with a learned ε, sparse X. */
    {"gin-transform-eps", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "gin", "e"},
    /* GIN-0 aggregating H first (5 <= 12), three layers. */
    {"gin-aggregate", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gin", NULL},
    /* The same with ε learned and ELU. */
    {"gin-aggregate-eps-elu", 64, 5, 5, 0.9f, 3, 2, 12, 0.3f, 0.4f, -1, 0, "gin", "eu"},
    /* Residuals (projected in layers 0 and 2, the identity in layer 1) and
     * LayerNorm after both hidden layers, on each model; sparse X for GCN.
     * LayerNorm maps a constant row (a node whose inputs were all dropped,
     * with the zero initial bias) to exactly 0 with a gain of
     * 1/sqrt(1e-5) = 316: onto ReLU's kink, where central differences
     * straddle it.  So these cases use ELU (smooth at 0) and no hidden
     * dropout. */
    {"gcn-residual-norm", 70, 4, 24, 0.15f, 4, 3, 6, 0.0f, 0.5f, 1, 1, "gcn", "rlu"},
    {"sage-residual-norm", 64, 5, 5, 0.9f, 3, 3, 12, 0.0f, 0.4f, -1, 0, "sage", "rlu"},
    {"gin-residual-norm-eps", 64, 5, 5, 0.9f, 3, 3, 12, 0.0f, 0.4f, -1, 0, "gin", "rleu"},
    /* GIN-0 with them: its tensor after b_2 is W_res or gamma, not ε. */
    {"gin0-residual-norm", 70, 4, 24, 0.15f, 4, 3, 6, 0.0f, 0.5f, 1, 1, "gin", "rlu"},
    {"gin0-norm", 64, 5, 5, 0.9f, 3, 3, 12, 0.0f, 0.4f, -1, 0, "gin", "lu"},
    /* Residuals alone, with dropout (ELU too: a node whose inputs were all
     * dropped has Z = b = 0 at first, on ReLU's kink). */
    {"gcn-residual", 70, 4, 24, 0.15f, 4, 3, 6, 0.5f, 0.5f, 1, 1, "gcn", "ru"},
    /* SAGE aggregating first with LeakyReLU (slope 0.2), three layers. */
    {"sage-leaky-relu", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "k"},
    /* GELU after LayerNorm with residuals (Z is LayerNorm's output, kept). */
    {"gin-residual-norm-gelu", 64, 5, 5, 0.9f, 3, 3, 12, 0.0f, 0.4f, -1, 0, "gin", "rlg"},
    /* BatchNorm (--norm batch) after the hidden layers, statistics over
     * every rank's rows (the same code for every layer kind): GCN with
     * sparse X multiplied first, three layers with dropout; GIN with BatchNorm inside
     * each layer's MLP too, aggregating first (three layers) and
     * transforming first with a learned ε and residuals.  Each also checks
     * the running statistics after 3 epochs and the evaluation's logits.
     * BatchNorm centres every column on 0, so some of its outputs sit
     * within a finite difference's reach of ReLU's kink: the three-layer
     * GIN uses ELU between its layers (its MLP's ReLU stays). */
    {"gcn-batchnorm", 70, 4, 24, 0.15f, 4, 3, 6, 0.5f, 0.5f, 1, 1, "gcn", "b"},
    {"gin-batchnorm", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gin", "bu"},
    {"gin-batchnorm-eps-residual", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "gin", "erb"},
};

/* --halo-sample 0.5 (flag s): the epoch's sampled graph (BNS-GCN: kept
 * boundary rows scaled by 2, dropped ones gone, the full graph's
 * normalisation) against the reference's, forward and backward, in both
 * shapes of each model. */
static const probe_case sample_cases[] = {
    {"gcn-transform-sampled", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "gcn", "s"},
    {"gcn-aggregate-sampled", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gcn", "s"},
    /* ELU: a node whose neighbours were all dropped, and its own row too,
     * has Z = b = 0 at first, on ReLU's kink (see model_cases). */
    {"sage-transform-sampled", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "sage", "su"},
    {"sage-aggregate-sampled", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "sn"},
    {"gin-aggregate-sampled", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gin", "se"},
};

/* GAT: multi-head hidden layers (concatenated) and both output modes
 * (one head; several, averaged), attention dropout on. */
static const gat_case gat_cases[] = {
    /* Sparse X · W first, 4 heads of 3, one output head, ELU. */
    {{"gat-sparse", 64, 5, 24, 0.15f, 4, 2, 3, 0.5f, 0.5f, 1, 1, "gat", "u"}, 4, 1, 0.5f},
    /* Dense X, three layers of 2 heads of 2, 3 output heads averaged. */
    {{"gat-mean-heads", 60, 4, 10, 0.5f, 3, 3, 2, 0.3f, 0.4f, 0, 0, "gat", "u"}, 2, 3, 0.3f},
    /* Residuals and LayerNorm (ELU, no hidden dropout: see model_cases). */
    {{"gat-residual-norm", 64, 5, 12, 0.5f, 3, 3, 3, 0.0f, 0.4f, 0, 0, "gat", "rlu"}, 2, 2, 0.4f},
    /* No dropout of any kind, ReLU. */
    {{"gat-no-dropout", 50, 4, 8, 0.5f, 3, 2, 4, 0.0f, 0.0f, 0, 0, "gat", NULL}, 3, 1, 0.0f},
};

/* SAGE's max and sum aggregators and GCN's PyG flags (--aggr,
 * --gcn-add-self-loops false, --gcn-normalize false), against the dense
 * double reference with the same aggregation.  Max always aggregates
 * first, whatever the widths: its backward brings the halo rows' arg-max
 * ids and gradients, whose bytes the prediction counts. */
static const probe_case aggr_cases[] = {
    /* Max over H, three layers (5 -> 12 -> 12 -> 3), ReLU. */
    {"sage-max", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "M"},
    /* Max where the mean would transform first (24 -> 6 -> 4): it still
     * aggregates first, dense X; rows normalised, ELU. */
    {"sage-max-narrow-normalize", 70, 4, 24, 0.5f, 4, 3, 6, 0.3f, 0.5f, -1, 0, "sage", "Mnu"},
    /* Sum, transform first (sparse X) and aggregate first (LeakyReLU). */
    {"sage-sum-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "sage", "S"},
    {"sage-sum-aggregate", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "Sk"},
    /* GCN without self-loops, aggregate first; and cached (no input dropout). */
    {"gcn-no-self-loops", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gcn", "L"},
    {"gcn-no-self-loops-cached", 60, 4, 10, 0.5f, 3, 2, 7, 0.5f, 0.0f, -1, 0, "gcn", "L"},
    /* GCN with A alone (PyG's normalize=False), transform first, sparse X. */
    {"gcn-unnormalized", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "gcn", "LN"},
};

/* Edge weights (flag w, fx_graph_weigh): GCN's gcn_norm with weights in
 * each layer shape, and GraphSAGE's weighted mean and its transpose. */
static const probe_case weighted_cases[] = {
    /* X (sparse) · W first, then Â_w · T: 24 -> 6 -> 4. */
    {"gcn-weighted-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "gcn", "w"},
    /* Â_w · H first (hidden wider than the input), three layers. */
    {"gcn-weighted-aggregate", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "gcn", "w"},
    /* No input dropout: Â_w X cached at set-up. */
    {"gcn-weighted-cached", 60, 4, 10, 0.5f, 3, 2, 7, 0.5f, 0.0f, -1, 0, "gcn", "w"},
    /* The weighted mean, transform first and aggregate first (ELU). */
    {"sage-weighted-transform", 70, 4, 24, 0.15f, 4, 2, 6, 0.5f, 0.5f, 1, 1, "sage", "w"},
    {"sage-weighted-aggregate", 64, 5, 5, 0.9f, 3, 3, 12, 0.3f, 0.4f, -1, 0, "sage", "wu"},
};

#define NCASES(a) (sizeof a / sizeof a[0])

enum { MAX_JOBS = 256 };

/* Appends one run of `pc` (`gat`: its heads, NULL but for GAT) to the
 * batch. */
static void add_job(tr_batch *batch, probe_job *jobs, int *n, const char *group,
                    const probe_case *pc, const gat_case *gat, int deterministic, uint64_t seed) {
  cr_assert_lt(*n, MAX_JOBS);
  probe_job *job = &jobs[(*n)++];
  *job = (probe_job){.pc = pc, .gat = gat, .deterministic = deterministic, .seed = seed};
  snprintf(job->what, sizeof job->what, "%s %s, seed %llu", group, pc->name,
           (unsigned long long)seed);
  const char *flags = pc->flags ? pc->flags : "";
  char settings[256], heads[64] = "";
  if (gat)
    snprintf(heads, sizeof heads, " HALO_PROBE_GAT=\"%d %d %g\"", gat->heads, gat->output_heads,
             (double)gat->attn_dropout);
  snprintf(settings, sizeof settings,
           "HALO_PROBE_MODEL=%s HALO_PROBE_FLAGS=%s HALO_PROBE_DETERMINISTIC=%d%s%s",
           pc->model ? pc->model : "gcn", flags, deterministic,
           strchr(flags, 'b') ? " HALO_PROBE_BN_EPOCHS=3" : "", heads);
  job->index =
      tr_batch_add(batch, settings, "%lld %d %d %g %d %d %d %g %g %d %llu %llu %d",
                   (long long)pc->nodes, pc->degree, pc->features, pc->density, pc->classes,
                   pc->layers, pc->hidden, pc->dropout, pc->input_dropout, pc->sparse,
                   (unsigned long long)seed, (unsigned long long)seed, PROBE_EPOCH);
  cr_assert_geq(job->index, 0, "%s: cannot write the batch's case file", job->what);
}

/* Under the sanitizers a probe costs seconds, and P=3 reaches every line
 * that P=1 does (and the exchanges besides), so the sanitized build runs
 * the model probes at P=3 only, and of the deterministic ones, those that
 * cover every layer kind and option. */
static const size_t sanitized_deterministic[] = {
    1, /* sage-aggregate-normalize */
    3, /* gin-transform-eps */
    6, /* gcn-residual-norm */
    7, /* sage-residual-norm */
    8, /* gin-residual-norm-eps */
    16, /* gin-batchnorm-eps-residual */
};

/* Every probe run at P=np, group by group; each group draws its seeds
 * (tr_seed, printed) and case i of a group runs with seed + i.  Returns
 * the number of runs. */
static int gather_jobs(tr_batch *b, probe_job *jobs, int np) {
  int n = 0;
  /* Sanitized, the P=1 batch leaves out what P=3 covers: say so once. */
  const int note = TEST_SANITIZED && np == 1;

  /* SAGE's max and sum and GCN's PyG flags, float and deterministic. */
  uint64_t seed = tr_seed("layers.aggr", 12);
  if (note) test_sanitized_note("layers.aggr", "P=3 alone");
  if (!TEST_SANITIZED || np == 3)
    for (size_t i = 0; i < NCASES(aggr_cases); i++)
      add_job(b, jobs, &n, "layers.aggr", &aggr_cases[i], NULL, 0, seed + i);
  seed = tr_seed("layers.aggr_deterministic", 13);
  if (note) test_sanitized_note("layers.aggr_deterministic", "P=3 alone");
  if (!TEST_SANITIZED || np == 3)
    for (size_t i = 0; i < NCASES(aggr_cases); i++)
      add_job(b, jobs, &n, "layers.aggr_deterministic", &aggr_cases[i], NULL, 1, seed + i);

  /* GAT, float at both P, deterministic (sanitized: P=3 alone). */
  seed = tr_seed("layers.gat", 10);
  for (size_t i = 0; i < NCASES(gat_cases); i++)
    add_job(b, jobs, &n, "layers.gat", &gat_cases[i].c, &gat_cases[i], 0, seed + i);
  seed = tr_seed("layers.gat_deterministic", 11);
  if (note) test_sanitized_note("layers.gat_deterministic", "P=3 alone");
  if (!TEST_SANITIZED || np == 3)
    for (size_t i = 0; i < NCASES(gat_cases); i++)
      add_job(b, jobs, &n, "layers.gat_deterministic", &gat_cases[i].c, &gat_cases[i], 1, seed + i);

  /* GraphSAGE, GIN and GCN with every option, float and deterministic. */
  seed = tr_seed("layers.models", 8);
  if (note) test_sanitized_note("layers.models", "P=3 alone");
  if (!TEST_SANITIZED || np == 3)
    for (size_t i = 0; i < NCASES(model_cases); i++)
      add_job(b, jobs, &n, "layers.models", &model_cases[i], NULL, 0, seed + i);
  seed = tr_seed("layers.models_deterministic", 9);
  if (TEST_SANITIZED) {
    if (note)
      test_sanitized_note("layers.models_deterministic",
                          "P=3 alone, on the cases that cover every layer kind and option");
    for (size_t k = 0; np == 3 && k < NCASES(sanitized_deterministic); k++) {
      const size_t i = sanitized_deterministic[k];
      add_job(b, jobs, &n, "layers.models_deterministic", &model_cases[i], NULL, 1, seed + i);
    }
  } else {
    for (size_t i = 0; i < NCASES(model_cases); i++)
      add_job(b, jobs, &n, "layers.models_deterministic", &model_cases[i], NULL, 1, seed + i);
  }

  /* --halo-sample at P=3 alone: the parts exchange, so the draw matters
   * (at P=1 there is no boundary); float and deterministic. */
  seed = tr_seed("layers.halo_sample", 12);
  for (size_t i = 0; np == 3 && i < NCASES(sample_cases); i++)
    add_job(b, jobs, &n, "layers.halo_sample", &sample_cases[i], NULL, 0, seed + i);
  for (size_t i = 0; np == 3 && i < NCASES(sample_cases); i += 3)
    add_job(b, jobs, &n, "layers.halo_sample", &sample_cases[i], NULL, 1, seed + i);

  /* GCN's layer shapes: P=1 (sanitized: the first shape alone, P=3 runs
   * every shape), P=3, and deterministic at both (sanitized: P=3 alone). */
  if (np == 1) {
    seed = tr_seed("layers.model_p1", 5);
    if (note) test_sanitized_note("layers.model_p1", "the first shape alone");
    const size_t shapes = TEST_SANITIZED ? 1 : NCASES(cases);
    for (size_t i = 0; i < shapes; i++)
      add_job(b, jobs, &n, "layers.model_p1", &cases[i], NULL, 0, seed + i);
  } else {
    seed = tr_seed("layers.model_p3", 6);
    for (size_t i = 0; i < NCASES(cases); i++)
      add_job(b, jobs, &n, "layers.model_p3", &cases[i], NULL, 0, seed + i);
  }
  seed = tr_seed("layers.deterministic", 7);
  if (note) test_sanitized_note("layers.deterministic", "P=3 alone");
  if (!TEST_SANITIZED || np == 3)
    for (size_t i = 0; i < NCASES(cases); i++)
      add_job(b, jobs, &n, "layers.deterministic", &cases[i], NULL, 1, seed + i);

  /* Weighted GCN and GraphSAGE (the weights move no byte): every case at
   * P=3, the first three at P=1 too, and the exact sums on the two
   * transform-first cases at P=3 (test-train-edge-weights checks the bit
   * identity across P end to end). */
  seed = tr_seed("layers.weighted", 4040);
  for (size_t i = 0; i < NCASES(weighted_cases); i++)
    if (np == 3 || i < 3)
      add_job(b, jobs, &n, "layers.weighted", &weighted_cases[i], NULL, 0, seed + i);
  if (np == 3) {
    add_job(b, jobs, &n, "layers.weighted", &weighted_cases[0], NULL, 1, seed);
    add_job(b, jobs, &n, "layers.weighted", &weighted_cases[3], NULL, 1, seed + 3);
  }
  return n;
}

/* Every probe run at P=np in one mpirun (train-probe --cases: under the
 * sanitizers each mpirun costs seconds of start-up and exit), then each
 * run's outputs checked against the reference in turn. */
static void run_and_check(int np) {
  tr_batch *b = tr_batch_new(np == 1 ? "probes-p1" : "probes-p3");
  probe_job *jobs = calloc(MAX_JOBS, sizeof *jobs);
  cr_assert(b && jobs, "cannot make the P=%d batch's folder", np);
  const int n = gather_jobs(b, jobs, np);
  const int rc = tr_batch_run(b, TRAIN_PROBE, np, 20, 540);
  cr_expect_eq(rc, 0, "train-probe --cases (%d runs at P=%d) exited with %d", n, np, rc);
  for (int k = 0; k < n; k++) check_model_probe(&jobs[k], b, np);
  free(jobs);
  tr_batch_free(&b);
}

Test(layers, probes_p1, .timeout = 600) { run_and_check(1); }

Test(layers, probes_p3, .timeout = 600) { run_and_check(3); }
