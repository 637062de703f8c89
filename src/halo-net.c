/* The distributed model: set-up, the forward and backward passes over its
 * layers, the loss, Adam.
 *
 * The layers run through their kinds' tables (gnn-impl.h; layer-gcn.c,
 * layer-sage.c, layer-gin.c), each in the shape its description fixes
 * (halo_model_describe), so that the bytes sent match the prediction
 * exactly.  Between layers the model applies the activation and dropout;
 * after the top one, the softmax cross-entropy.  Every exchange is split:
 * rows with no halo column are multiplied while the messages are in
 * flight, the others after.  When the part numbers its interior rows first
 * (shard format 2), both products run over contiguous rows, the second
 * through a view of the matrix's trailing rows; otherwise through row-index
 * lists.
 *
 * The first layer's input of a cached or transform layer, ÂX or X, is kept
 * as CSR when it is mostly zeros (Cora's X is 1.3% non-zero, its ÂX 4.7%):
 * its products with W (forward) and with dZ or dT (dW, through a transposed
 * copy) are then sparse × dense, through the spmm slot.
 *
 * All buffers are allocated in halo_net_create; the step functions allocate
 * nothing.
 */
#include "halo-net.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gnn-bufs.h"
#include "gnn-impl.h"
#include "halo-exact.h"
#include "halo-mpi.h"
#include "halo-rng.h"
#include "halo-watchdog.h"

/* The first layer's input (X, or the cached ÂX) is kept as CSR when under
 * this fraction of it, over all ranks, is non-zero. */
#define SPARSE_DENSITY 0.10

void halo_net_options_default(halo_net_options *o) {
  *o = (halo_net_options){.layers = 2,
                          .hidden = 16,
                          .lr = 0.01f,
                          .weight_decay = 5e-4f,
                          .weight_decay_all = 0,
                          .dropout = 0.5f,
                          .input_dropout = 0.5f,
                          .heads = 8,
                          .output_heads = 1,
                          .attn_dropout = 0.6f,
                          .seed = 0,
                          .normalize_features = 1,
                          .sparse_features = -1,
                          .row_lists = 0};
}

/* --- small helpers ------------------------------------------------------ */

static halo_status buf_new(halo_net *g, halo_buf *b, size_t bytes) {
  halo_status st = g->ops->buf_alloc(g->be, bytes, b);
  if (st == HALO_OK) {
    g->held += gnn_bufs_backend_bytes((int64_t)bytes);
    if (g->held > g->held_peak) g->held_peak = g->held;
  }
  return st;
}

static void buf_del(halo_net *g, halo_buf *b) {
  if (b->data) {
    g->held -= gnn_bufs_backend_bytes((int64_t)b->bytes);
    g->ops->buf_free(g->be, b);
  }
  *b = (halo_buf){0};
}

/* Allocates plan entry (which, layer): every model buffer is made here. */
static halo_status plan_new(halo_net *g, halo_buf *b, gcn_buf which, int layer) {
  return buf_new(g, b, (size_t)gnn_bufs_bytes(&g->plan_mem, which, layer));
}

/* The same, filled with a copy of the entry's bytes from host memory. */
static halo_status plan_from_host(halo_net *g, halo_buf *b, gcn_buf which, int layer,
                                  const void *src) {
  halo_status st = HALO_OK;
  const size_t bytes = (size_t)gnn_bufs_bytes(&g->plan_mem, which, layer);
  HALO_TRY(buf_new(g, b, bytes));
  if (bytes == 0) goto done;
  if (g->ops->upload)
    HALO_TRY(g->ops->upload(g->be, b, 0, src, bytes));
  else
    memcpy(b->data, src, bytes);
done:
  return st;
}

static halo_status buf_to_host(const halo_net *g, void *dst, const halo_buf *b, size_t bytes) {
  if (bytes == 0) return HALO_OK;
  if (g->ops->download) return g->ops->download(g->be, dst, b, 0, bytes);
  memcpy(dst, b->data, bytes);
  return HALO_OK;
}

static halo_status csr_to_backend(halo_net *g, const halo_csr *host, halo_csr *dev) {
  if (g->ops->csr_upload) return g->ops->csr_upload(g->be, host, dev);
  *dev = *host;
  return HALO_OK;
}

static void csr_release(halo_net *g, halo_csr *host, halo_csr *dev) {
  if (g->ops->csr_free && dev->indptr) g->ops->csr_free(g->be, dev);
  *dev = (halo_csr){0};
  halo_csr_free(host);
  *host = (halo_csr){0};
}

static uint64_t dropout_key(const halo_net *g, int64_t epoch, int l) {
  return halo_rng_key(g->opt.seed, HALO_RNG_DROPOUT, (uint64_t)epoch, (uint64_t)l);
}

static const int64_t *gids(const halo_net *g) { return g->global_id.data; }

/* --- forward ------------------------------------------------------------ */

/* dst = dropout(src) over the owned rows, keyed by (epoch, layer); a copy
 * when p is 0. */
static void dropout_to(halo_net *g, float *dst, const float *src, int32_t cols, int64_t epoch,
                       int l, float p) {
  const int64_t n = g->n_owned;
  if (p <= 0.0f) {
    g->ops->copy(g->be, dst, src, n * cols);
  } else if (g->ops->dropout_to) {
    g->ops->dropout_to(g->be, dst, src, n, cols, gids(g), dropout_key(g, epoch, l), p);
  } else {
    g->ops->copy(g->be, dst, src, n * cols);
    g->ops->dropout(g->be, dst, n, cols, gids(g), dropout_key(g, epoch, l), p);
  }
}

/* The input of layer l this epoch: the previous layer's dropped output,
 * or for the first layer X, dropout(X) (dense, or S with dropped values),
 * or the cached ÂX. */
static layer_input input_of(halo_net *g, int l, int train, int64_t epoch) {
  const layer *ly = &g->layers[l];
  const float p = train ? g->opt.input_dropout : 0.0f;
  if (l > 0) return (layer_input){.dense = fbuf(&ly->hd)};
  if (ly->desc->shape == HALO_LAYER_CACHED)
    return g->sparse_in ? (layer_input){.sparse = g->s_csr, .sparse_t = g->st_csr}
                        : (layer_input){.dense = fbuf(&g->ax)};
  if (g->sparse_in) {
    layer_input in = {.sparse = g->s_csr, .sparse_t = g->st_csr};
    if (p > 0.0f) {
      const uint64_t key = dropout_key(g, epoch, 0);
      g->ops->csr_dropout(g->be, &g->s_csr, 0, gids(g), key, p, fbuf(&g->s_drop));
      g->ops->csr_dropout(g->be, &g->st_csr, 1, gids(g), key, p, fbuf(&g->st_drop));
      in.sparse.values = fbuf(&g->s_drop);
      in.sparse_t.values = fbuf(&g->st_drop);
    }
    return in;
  }
  /* Multiplied first, X is read in place; aggregated first, it needs the
   * halo rows' room of xd. */
  if (p <= 0.0f && ly->desc->shape == HALO_LAYER_TRANSFORM)
    return (layer_input){.dense = fbuf(&g->x)};
  dropout_to(g, fbuf(&g->xd), fbuf(&g->x), ly->d_in, epoch, 0, p);
  return (layer_input){.dense = fbuf(&g->xd)};
}

static void activate(halo_net *g, float *z, int64_t n) {
  if (g->opt.activation == HALO_ACT_ELU)
    g->ops->elu(g->be, z, n);
  else
    g->ops->relu(g->be, z, n);
}

static void activate_backward(halo_net *g, float *dz, const float *z, int64_t n) {
  if (g->opt.activation == HALO_ACT_ELU)
    g->ops->elu_backward(g->be, dz, z, n);
  else
    g->ops->relu_backward(g->be, dz, z, n);
}

/* --residual: Z += H, or H·W_res (halo-model.h says which). */
static void add_residual(halo_net *g, layer *ly, const layer_input *in) {
  float *z = fbuf(&ly->z);
  if (ly->desc->residual == HALO_RESIDUAL_IDENTITY)
    g->ops->axpy(g->be, z, in->dense, g->n_owned * ly->d_out, 1.0f, NULL);
  else if (ly->desc->residual == HALO_RESIDUAL_PROJECT)
    gnn_input_mm_acc(g, in, ly->d_in, tensor_of(&g->params, ly, ly->desc->res_tensor), ly->d_out, z,
                     fbuf(&g->g1));
}

/* Back through LayerNorm at layer ly's output: dgamma = Σ dY ⊙ xhat and
 * dbeta = Σ dY (tmp holds the products), then dY → dZ in place. */
static halo_status norm_backward(halo_net *g, layer *ly, float *dz, float *tmp) {
  halo_status st = HALO_OK;
  const int k = ly->desc->norm_tensor;
  const int64_t n = g->n_owned;
  g->ops->mul(g->be, tmp, dz, fbuf(&ly->xhat), n * ly->d_out);
  const grad_term t[2] = {{.tensor = k, .b = tmp}, {.tensor = k + 1, .b = dz}};
  HALO_TRY(gnn_layer_grads(g, ly, t, 2));
  g->ops->layernorm_backward(g->be, dz, fbuf(&ly->xhat), fbuf(&ly->rstd),
                             tensor_of(&g->params, ly, k), n, ly->d_out);
done:
  return st;
}

/* Before the layer's own backward: dW_res = Hᵀ·dZ, and with need_dx the
 * residual's share of dH (dZ, or dZ·W_resᵀ) into g2. */
static halo_status residual_backward(halo_net *g, layer *ly, const layer_input *in, const float *dz,
                                     int need_dx) {
  halo_status st = HALO_OK;
  const halo_layer_desc *d = ly->desc;
  const int64_t n = g->n_owned;
  if (d->residual == HALO_RESIDUAL_PROJECT) {
    const grad_term t = gnn_input_term(d->res_tensor, in, dz);
    HALO_TRY(gnn_layer_grads(g, ly, &t, 1));
    if (need_dx)
      gnn_mm_tb(g, n, ly->d_in, ly->d_out, dz, tensor_of(&g->params, ly, d->res_tensor),
                fbuf(&g->g2));
  } else if (d->residual == HALO_RESIDUAL_IDENTITY && need_dx) {
    g->ops->copy(g->be, fbuf(&g->g2), dz, n * ly->d_out);
  }
done:
  return st;
}

static halo_status forward(halo_net *g, int train, int64_t epoch) {
  halo_status st = HALO_OK;
  g->pass.epoch = epoch;
  g->pass.training = train;
  for (int l = 0; l < g->nlayers; l++) {
    layer *ly = &g->layers[l];
    halo_watch_layer(train ? "forward" : "evaluation", l);
    const layer_input in = input_of(g, l, train, epoch);
    if (l == 0) g->in0 = in; /* the backward's */
    const int64_t sent = halo_exchange_stats_get(g->plan).bytes_sent;
    HALO_TRY(ly->kind->forward(g, ly, &in));
    g->layer_bytes[l][0] = halo_exchange_stats_get(g->plan).bytes_sent - sent;
    add_residual(g, ly, &in);
    if (ly->desc->norm_tensor >= 0)
      g->ops->layernorm(g->be, fbuf(&ly->z), g->n_owned, ly->d_out,
                        tensor_of(&g->params, ly, ly->desc->norm_tensor),
                        tensor_of(&g->params, ly, ly->desc->norm_tensor + 1), fbuf(&ly->xhat),
                        fbuf(&ly->rstd));
    if (l + 1 < g->nlayers) {
      layer *next = &g->layers[l + 1];
      float *z = fbuf(&ly->z);
      activate(g, z, g->n_owned * ly->d_out);
      dropout_to(g, fbuf(&next->hd), z, ly->d_out, epoch, l + 1, train ? g->opt.dropout : 0.0f);
    }
  }
done:
  return st;
}

/* --- backward ----------------------------------------------------------- */

/* On entry g0's owned rows hold dLoss/dZ of the top layer. */
static halo_status backward(halo_net *g, int64_t epoch) {
  halo_status st = HALO_OK;
  float *dz = fbuf(&g->g0), *tmp = fbuf(&g->g1);
  for (int l = g->nlayers - 1; l >= 0; l--) {
    layer *ly = &g->layers[l];
    halo_watch_layer("backward", l);
    const layer_input in = l > 0 ? (layer_input){.dense = fbuf(&ly->hd)} : g->in0;
    if (ly->desc->norm_tensor >= 0) HALO_TRY(norm_backward(g, ly, dz, tmp));
    HALO_TRY(residual_backward(g, ly, &in, dz, l > 0));
    const int64_t sent = halo_exchange_stats_get(g->plan).bytes_sent;
    HALO_TRY(ly->kind->backward(g, ly, &in, &dz, &tmp, l > 0));
    g->layer_bytes[l][1] = halo_exchange_stats_get(g->plan).bytes_sent - sent;
    if (l > 0 && ly->desc->residual != HALO_RESIDUAL_NONE)
      g->ops->axpy(g->be, dz, fbuf(&g->g2), g->n_owned * ly->d_in, 1.0f, NULL);
    if (l > 0) {
      /* dz now holds dLoss/dH_l (n × d_in): back through dropout and the
       * activation. */
      const int64_t n = g->n_owned;
      if (g->opt.dropout > 0.0f)
        g->ops->dropout(g->be, dz, n, ly->d_in, gids(g), dropout_key(g, epoch, l), g->opt.dropout);
      activate_backward(g, dz, fbuf(&g->layers[l - 1].z), n * ly->d_in);
    }
  }
done:
  return st;
}

/* --- steps -------------------------------------------------------------- */

/* The loss of split k's rows (softmax cross-entropy, or binary cross-entropy
 * over the tasks of a multi-label model), its gradient into G when G is
 * not NULL. */
static void loss_of(halo_net *g, int k, float grad_scale, float *grad, double *loss_sum,
                    int64_t *correct) {
  const layer *top = &g->layers[g->nlayers - 1];
  if (g->info.multilabel)
    g->ops->sigmoid_bce(g->be, fbuf(&top->z), g->n_owned, top->d_out, g->labels.data,
                        g->split[k].data, g->split_n[k], grad_scale, grad, loss_sum, correct);
  else
    g->ops->softmax_xent(g->be, fbuf(&top->z), g->n_owned, top->d_out, g->labels.data,
                         g->split[k].data, g->split_n[k], grad_scale, grad, loss_sum, correct);
}

halo_status halo_net_gradients(halo_net *g, int64_t epoch, halo_net_stats *out) {
  halo_status st = HALO_OK;
  halo_net_stats s = {0};
  double t0 = MPI_Wtime(), ar = 0.0;
  halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);
  int64_t correct = 0;

  HALO_TRY(forward(g, 1, epoch));
  const int64_t scored = g->info.global_scored[SPLIT_TRAIN];
  const float scale = scored > 0 ? 1.0f / (float)scored : 0.0f;
  loss_of(g, SPLIT_TRAIN, scale, fbuf(&g->g0), &s.loss_sum, &correct);
  HALO_TRY(backward(g, epoch));

  /* One allreduce of one flat buffer sums every weight gradient. */
  double a0 = MPI_Wtime();
  float *grads = fbuf(&g->grads);
  size_t bytes = (size_t)g->nparams * sizeof(float);
  if (g->ops->synchronize) HALO_TRY(g->ops->synchronize(g->be));
  if (g->host_grads) { /* the exact sums write the host copy themselves */
    if (!g->opt.deterministic)
      HALO_TRY(g->ops->download(g->be, g->host_grads, &g->grads, 0, bytes));
    grads = g->host_grads;
  }
  halo_watch_layer("gradient allreduce", -1);
  if (g->opt.deterministic) {
    HALO_TRY(gnn_exact_allreduce(g));
    s.allreduce_bytes = g->nparams * HALO_EXACT_LIMBS * (int64_t)sizeof(int64_t);
  } else {
    HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, grads, (int)g->nparams, MPI_FLOAT, MPI_SUM, g->comm,
                                  "the gradient allreduce"));
    s.allreduce_bytes = (int64_t)bytes;
  }
  if (g->host_grads) HALO_TRY(g->ops->upload(g->be, &g->grads, 0, g->host_grads, bytes));
  ar = MPI_Wtime() - a0;

  halo_exchange_stats x1 = halo_exchange_stats_get(g->plan);
  s.halo_bytes = x1.bytes_sent - x0.bytes_sent;
  memcpy(s.layer_bytes, g->layer_bytes, sizeof s.layer_bytes);
  s.comm_seconds = (x1.seconds - x0.seconds) + ar;
  s.seconds = MPI_Wtime() - t0;
  if (out) *out = s;
done:
  return st;
}

halo_status halo_net_update(halo_net *g) {
  halo_optim_step(&g->optim, g->be, fbuf(&g->params), fbuf(&g->grads), fbuf(&g->adam_m),
                  fbuf(&g->adam_v));
  return g->ops->synchronize ? g->ops->synchronize(g->be) : HALO_OK;
}

halo_status halo_net_step(halo_net *g, int64_t epoch, halo_net_stats *out) {
  halo_status st = HALO_OK;
  double t0 = MPI_Wtime();
  HALO_TRY(halo_net_gradients(g, epoch, out));
  HALO_TRY(halo_net_update(g));
  if (out) out->seconds = MPI_Wtime() - t0;
done:
  return st;
}

halo_status halo_net_evaluate(halo_net *g, halo_net_stats *out) {
  halo_status st = HALO_OK;
  halo_net_stats s = {0};
  double t0 = MPI_Wtime();
  halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);

  HALO_TRY(forward(g, 0, 0));
  for (int k = 0; k < 3; k++) loss_of(g, k, 0.0f, NULL, &s.eval_loss_sum[k], &s.correct[k]);
  if (g->ops->synchronize) HALO_TRY(g->ops->synchronize(g->be));
  halo_exchange_stats x1 = halo_exchange_stats_get(g->plan);
  s.halo_bytes = x1.bytes_sent - x0.bytes_sent;
  s.comm_seconds = x1.seconds - x0.seconds;
  s.seconds = MPI_Wtime() - t0;
  if (out) *out = s;
done:
  return st;
}

/* --- set-up ------------------------------------------------------------- */

/* Whether the backend has the ops that the model of `o` needs, and if not
 * the first one missing. */
static const char *missing_op(const halo_backend_ops *ops, const halo_net_options *o,
                              int multilabel) {
  if (o->deterministic && !(ops->gemm_rows && ops->max_abs && ops->exact_tn && ops->exact_csr))
    return "the exact sums";
  if (o->activation == HALO_ACT_ELU && !(ops->elu && ops->elu_backward)) return "ELU";
  if (o->model == HALO_MODEL_SAGE && !ops->axpy) return "AXPY";
  if (o->model == HALO_MODEL_SAGE && o->sage_normalize &&
      !(ops->l2_normalize && ops->l2_normalize_backward))
    return "the row normalisation";
  if (o->model == HALO_MODEL_GIN && !ops->axpy) return "AXPY";
  if (o->residual && !ops->axpy) return "AXPY";
  if (o->layer_norm && !(ops->layernorm && ops->layernorm_backward && ops->mul)) return "LayerNorm";
  if (multilabel && !ops->sigmoid_bce) return "the multi-label loss";
  if (o->model == HALO_MODEL_GAT &&
      !(ops->gat_scores && ops->gat_attend && ops->gat_node_terms && ops->gat_attend_backward))
    return "the attention kernels";
  return NULL;
}

/* Checks the options and the shard's shape for this model. Local. */
/* The labelled (row, task) entries of the `n` listed rows of a multi-label
 * shard. */
static int64_t labelled_tasks(const halo_shard *s, const int32_t *rows, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++)
    for (int32_t t = 0; t < s->classes; t++)
      count += s->targets[(int64_t)rows[i] * s->classes + t] >= 0;
  return count;
}

static halo_status check_setup(const halo_shard *s, const halo_net_options *o,
                               const halo_backend_ops *ops) {
  halo_status st = HALO_OK;
  const char *model = halo_model_name(o->model);
  if (o->layers < 1 || o->layers > HALO_MAX_LAYERS)
    HALO_FAIL(HALO_ERR_ARG, "%d layers: a %s model has 1 to %d", o->layers, model, HALO_MAX_LAYERS);
  if ((o->layers > 1 || o->model == HALO_MODEL_GIN) && o->hidden < 1)
    HALO_FAIL(HALO_ERR_ARG, "hidden width %d: must be at least 1", o->hidden);
  const char *missing = missing_op(ops, o, s->multilabel);
  if (missing && o->deterministic && strcmp(missing, "the exact sums") == 0)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "deterministic training needs the exact sums, which the %s backend does not have",
              ops->name);
  if (missing)
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "the %s model as configured needs %s, which the %s backend does not have", model,
              missing, ops->name);
  if (!(o->dropout >= 0.0f && o->dropout < 1.0f) ||
      !(o->input_dropout >= 0.0f && o->input_dropout < 1.0f) ||
      !(o->attn_dropout >= 0.0f && o->attn_dropout < 1.0f))
    HALO_FAIL(HALO_ERR_ARG, "dropout must be in [0, 1)");
  if (o->model == HALO_MODEL_GAT &&
      (o->heads < 1 || o->output_heads < 1 || o->heads > HALO_GAT_MAX_HEADS ||
       o->output_heads > HALO_GAT_MAX_HEADS))
    HALO_FAIL(HALO_ERR_ARG, "GAT has %d heads and %d output heads; each must be in [1, %d]",
              o->heads, o->output_heads, HALO_GAT_MAX_HEADS);
  if (s->features < 1 || !s->x)
    HALO_FAIL(HALO_ERR_ARG, "part %d has no node features; a %s model needs them", s->part, model);
  if (s->classes < 1 || (s->multilabel ? !s->targets : !s->labels))
    HALO_FAIL(HALO_ERR_ARG, "part %d has no labels; a %s model needs them", s->part, model);
  for (int64_t i = 0; i < s->n_owned && !s->multilabel; i++)
    if (s->labels[i] < -1 || s->labels[i] >= s->classes)
      HALO_FAIL(HALO_ERR_RANGE, "part %d: label of row %lld is %d (classes: %d)", s->part,
                (long long)i, s->labels[i], s->classes);
  for (int64_t k = 0; s->multilabel && k < s->n_owned * s->classes; k++)
    if (s->targets[k] < -1 || s->targets[k] > 1)
      HALO_FAIL(HALO_ERR_RANGE, "part %d: task %lld of row %lld is %d (1, 0 or -1 for missing)",
                s->part, (long long)(k % s->classes), (long long)(k / s->classes),
                (int)s->targets[k]);
  for (int k = 0; k < 3; k++) {
    const int32_t *rows = k == 0 ? s->train : k == 1 ? s->valid : s->test;
    int64_t n = k == 0 ? s->n_train : k == 1 ? s->n_valid : s->n_test;
    for (int64_t i = 0; i < n; i++)
      if (rows[i] < 0 || rows[i] >= s->n_owned || (!s->multilabel && s->labels[rows[i]] < 0))
        HALO_FAIL(HALO_ERR_RANGE, "part %d: split entry %lld (row %d) is not a labelled owned row",
                  s->part, (long long)i, rows[i]);
  }
done:
  return st;
}

/* The model of a shard: its widths from the shard's features and classes,
 * and its layers' shapes, parameters and exchanges. Local. */
static halo_status describe(const halo_shard *s, const halo_net_options *o, halo_model_desc *d) {
  int32_t dims[HALO_MAX_LAYERS + 1];
  if (o->layers < 1 || o->layers > HALO_MAX_LAYERS) return HALO_ERR_ARG;
  dims[0] = s->features;
  /* GAT's --hidden is per head: its hidden layers concatenate the heads. */
  const int32_t hidden = o->model == HALO_MODEL_GAT ? o->hidden * o->heads : o->hidden;
  for (int l = 1; l < o->layers; l++) dims[l] = hidden;
  dims[o->layers] = s->classes;
  const halo_model_config c = halo_model_config_of_options(o);
  return halo_model_describe(&c, dims, o->layers + 1, d);
}

/* Initial parameters: Glorot-uniform weights keyed by (seed, layer, tensor,
 * row, column) (tensor 0's key is (seed, layer, 0) for every model, GCN's
 * W), zero biases and ε, unit scales. */
static void init_params(const halo_net_options *o, const halo_model_desc *d, float *p) {
  for (int l = 0; l < d->layers; l++)
    for (int k = 0; k < d->layer[l].ntensors; k++) {
      const halo_param_tensor *t = &d->layer[l].tensor[k];
      float *v = p + t->offset;
      const int64_t count = t->rows * t->cols;
      if (t->kind != HALO_TENSOR_WEIGHT) {
        for (int64_t i = 0; i < count; i++) v[i] = t->kind == HALO_TENSOR_SCALE ? 1.0f : 0.0f;
        continue;
      }
      const uint64_t key = halo_rng_key(o->seed, HALO_RNG_WEIGHTS, (uint64_t)l, (uint64_t)k);
      const double limit = sqrt(6.0 / (double)(t->rows + t->cols));
      for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++)
          v[r * t->cols + c] =
              (float)(limit * (2.0 * halo_rng_uniform_double(key, (uint64_t)r, (uint64_t)c) - 1.0));
    }
}

/* The rule of decide_sparse: sparse when under SPARSE_DENSITY of all
 * ranks' `count` entries of x differ from `zero`. Collective. */
static halo_status count_sparse(MPI_Comm comm, const halo_net_options *o, const float *x,
                                int64_t count, float zero, int *sparse, int64_t *nonzeros) {
  halo_status st = HALO_OK;
  int64_t local[2] = {0, count}, total[2] = {0, 0}; /* non-zeros, entries */
  for (int64_t i = 0; i < count; i++) local[0] += x[i] != zero;
  if (nonzeros) *nonzeros = local[0];
  if (o->sparse_features >= 0) {
    *sparse = o->sparse_features == 1;
    goto done;
  }
  HALO_MPI(MPI_Allreduce(local, total, 2, MPI_INT64_T, MPI_SUM, comm));
  *sparse = (double)total[0] < SPARSE_DENSITY * (double)total[1];
done:
  return st;
}

/* Whether the first layer's input (X, or ÂX when cached: n × f floats on
 * this rank, host memory) is kept as CSR: as --sparse-features says, or when
 * under SPARSE_DENSITY of it is non-zero over ALL ranks.  One decision for
 * every rank, so that all take the same path and round the same way, and
 * the choice does not depend on the partition. Collective. */
static halo_status decide_sparse(halo_net *g, const float *x, int64_t n, int64_t f, int *sparse) {
  return count_sparse(g->comm, &g->opt, x, n * f, 0.0f, sparse, NULL);
}

/* S = the non-zeros of the host matrix x (n_owned × F) as CSR, and Sᵀ, both
 * uploaded; with `dropout`, room for their dropped values too. Local. */
static halo_status build_sparse_input(halo_net *g, const float *x, int dropout) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned, f = g->layers[0].d_in;
  halo_csr a = {.rows = n, .cols = f};
  for (int64_t i = 0; i < n * f; i++) a.nnz += x[i] != 0.0f;
  HALO_ALLOC(a.indptr, n + 1, "the rows of the sparse input");
  HALO_ALLOC(a.indices, a.nnz, "the columns of the sparse input");
  HALO_ALLOC(a.values, a.nnz, "the values of the sparse input");
  for (int64_t i = 0, k = 0; i < n; i++) {
    for (int64_t j = 0; j < f; j++) {
      if (x[i * f + j] == 0.0f) continue;
      a.indices[k] = (int32_t)j;
      a.values[k++] = x[i * f + j];
    }
    a.indptr[i + 1] = k;
  }
  HALO_TRY(halo_csr_transpose(&a, &g->st_host));
  g->s_host = a;
  a = (halo_csr){0};
  HALO_TRY(csr_to_backend(g, &g->s_host, &g->s_csr));
  HALO_TRY(csr_to_backend(g, &g->st_host, &g->st_csr));
  if (dropout) {
    HALO_TRY(plan_new(g, &g->s_drop, GNN_BUF_S_DROP, 0));
    HALO_TRY(plan_new(g, &g->st_drop, GNN_BUF_ST_DROP, 0));
  }
done:
  halo_csr_free(&a);
  return st;
}

/* Whether owned row i of the part has a halo column (Â adds only the
 * self-loop, a local column, to the part's rows). */
static int has_halo_column(const halo_shard *s, int64_t i) {
  for (int64_t k = s->indptr[i]; k < s->indptr[i + 1]; k++)
    if (s->indices[k] >= s->n_owned) return 1;
  return 0;
}

/* How Â's rows split (row_split).  The split is read from the rows
 * themselves, not from the shard's n_interior: when the interior rows are a
 * prefix (format-2 shards, and any part without a boundary row), the two
 * products run over contiguous rows and no row list is built; otherwise
 * (format 1, --order id, or opt.row_lists) over lists. Local. */

static row_split split_of(const halo_shard *s, const halo_net_options *o) {
  row_split r = {0};
  int64_t first_boundary = s->n_owned;
  for (int64_t i = 0; i < s->n_owned; i++) {
    if (!has_halo_column(s, i)) continue;
    if (r.n_boundary++ == 0) first_boundary = i;
  }
  r.n_interior = s->n_owned - r.n_boundary;
  r.contiguous = first_boundary == r.n_interior && !o->row_lists;
  return r;
}

/* The buffer plan's input for shard s: the model, the row split, and the
 * first layer's input layout. */
static gnn_bufs_input plan_input(const halo_model_desc *d, int device, row_split r, int sparse,
                                 int64_t nonzeros) {
  return (gnn_bufs_input){.model = d,
                          .device = device,
                          .n_interior = r.contiguous ? 0 : r.n_interior,
                          .n_boundary = r.contiguous ? 0 : r.n_boundary,
                          .contiguous = r.contiguous,
                          .sparse = sparse,
                          .nonzeros = nonzeros};
}

/* Matrix m of `kind` on the backend, with its view of the boundary rows
 * when they are contiguous. Local. */
static halo_status make_matrix(halo_net *g, const halo_shard *s, halo_aggregation kind,
                               adj_matrix *m) {
  halo_status st = HALO_OK;
  HALO_TRY(halo_gnn_aggregation(s, kind, &m->host));
  HALO_TRY(csr_to_backend(g, &m->host, &m->dev));
  if (g->contiguous) {
    /* nnz stays the matrix's: indices and values are the whole arrays. */
    m->boundary = m->dev;
    m->boundary.indptr = m->dev.indptr + g->n_interior;
    m->boundary.rows = g->n_boundary;
  }
done:
  return st;
}

/* The model's aggregation (Â, A, or the mean and its transpose) and its
 * interior and boundary rows (split_of): views of the trailing rows when
 * contiguous, else two row lists. Local. */
static halo_status setup_aggregation(halo_net *g, const halo_shard *s, row_split r) {
  halo_status st = HALO_OK;
  int32_t *in = NULL, *bd = NULL;
  g->n_interior = r.n_interior;
  g->n_boundary = r.n_boundary;
  g->contiguous = r.contiguous;
  const halo_model_kind kind = g->opt.model;
  HALO_TRY(make_matrix(g, s,
                       kind == HALO_MODEL_SAGE  ? HALO_AGG_MEAN
                       : kind == HALO_MODEL_GIN ? HALO_AGG_SUM
                       : kind == HALO_MODEL_GAT ? HALO_AGG_SELF
                                                : HALO_AGG_SYM,
                       &g->adj_fwd));
  g->adj_bwd = &g->adj_fwd; /* symmetric */
  if (kind == HALO_MODEL_SAGE) {
    HALO_TRY(make_matrix(g, s, HALO_AGG_MEAN_T, &g->adj_bwd_own));
    g->adj_bwd = &g->adj_bwd_own;
  }
  if (g->contiguous) goto done;

  HALO_ALLOC(in, g->n_interior, "the interior rows");
  HALO_ALLOC(bd, g->n_boundary, "the boundary rows");
  for (int64_t i = 0, ni = 0, nb = 0; i < s->n_owned; i++) {
    if (has_halo_column(s, i))
      bd[nb++] = (int32_t)i;
    else
      in[ni++] = (int32_t)i;
  }
  HALO_TRY(plan_from_host(g, &g->interior, GNN_BUF_INTERIOR, 0, in));
  HALO_TRY(plan_from_host(g, &g->boundary, GNN_BUF_BOUNDARY, 0, bd));
done:
  free(in);
  free(bd);
  return st;
}

/* Features: a normalised host copy; ÂX when it is cached (one exchange of
 * X, counted as set-up traffic); then the first layer's input, X or ÂX,
 * dense or sparse.  The allocations come first and are agreed on, so that
 * no rank leaves while the others wait in the collectives that follow.
 * Collective. */
static halo_status setup_features(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  const int64_t f = s->features, n = g->n_owned;
  const size_t owned_bytes = (size_t)n * (size_t)f * sizeof(float);
  const layer *l0 = &g->layers[0];
  const int cached = l0->desc->shape == HALO_LAYER_CACHED;
  float *x = malloc(owned_bytes ? owned_bytes : 1);
  halo_buf xfull = {0};

  if (!x) {
    halo_log_error("out of memory copying the features (%zu bytes)", owned_bytes);
    st = HALO_ERR_NOMEM;
  } else if (cached) {
    st = plan_new(g, &xfull, GNN_BUF_X_HALO, 0);
    if (st == HALO_OK) st = plan_new(g, &g->ax, GNN_BUF_AX, 0);
  }
  HALO_TRY(halo_mpi_agree(g->comm, st));

  memcpy(x, s->x, owned_bytes);
  if (g->opt.normalize_features) {
    /* PyG's NormalizeFeatures: shift by the global minimum so that no
     * feature is negative, then divide each row by max(row sum, 1).  For
     * bag-of-words features (Cora) that is Kipf & Welling's row
     * normalisation. In double, once. */
    float lo = INFINITY, global_lo = 0.0f;
    for (int64_t i = 0; i < n * f; i++) lo = fminf(lo, x[i]);
    HALO_MPI(MPI_Allreduce(&lo, &global_lo, 1, MPI_FLOAT, MPI_MIN, g->comm));
    for (int64_t i = 0; i < n; i++) {
      double sum = 0.0;
      for (int64_t j = 0; j < f; j++) sum += (double)x[i * f + j] - global_lo;
      if (sum < 1.0) sum = 1.0;
      for (int64_t j = 0; j < f; j++)
        x[i * f + j] = (float)(((double)x[i * f + j] - global_lo) / sum);
    }
  }

  if (cached) {
    /* ÂX, then its host copy in x for the density count and the CSR. */
    halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);
    if (g->ops->upload)
      st = g->ops->upload(g->be, &xfull, 0, x, owned_bytes);
    else
      memcpy(xfull.data, x, owned_bytes);
    /* Agreed before the exchange: a rank that cannot upload X must not
     * leave its peers waiting for its rows. */
    HALO_TRY(halo_mpi_agree(g->comm, st));
    HALO_TRY(gnn_aggregate(g, &g->adj_fwd, fbuf(&xfull), (int32_t)f, 0.0f, fbuf(&g->ax)));
    g->info.setup_halo_bytes = halo_exchange_stats_get(g->plan).bytes_sent - x0.bytes_sent;
    buf_del(g, &xfull);
    st = buf_to_host(g, x, &g->ax, owned_bytes);
    HALO_TRY(halo_mpi_agree(g->comm, st));
  }

  /* Only an input multiplied by W first can be sparse: aggregated first,
   * X is exchanged and multiplied by Â as a dense matrix. */
  if (cached || l0->desc->shape == HALO_LAYER_TRANSFORM)
    HALO_TRY(decide_sparse(g, x, n, f, &g->sparse_in));
  if (g->sparse_in) {
    int64_t nonzeros = 0;
    for (int64_t i = 0; i < n * f; i++) nonzeros += x[i] != 0.0f;
    const gnn_bufs_input in =
        plan_input(&g->info.model, g->ops->download != NULL, g->rows, 1, nonzeros);
    gnn_bufs_build(s, &g->opt, &in, &g->plan_mem);
    HALO_TRY(build_sparse_input(g, x, !cached && g->opt.input_dropout > 0.0f));
    buf_del(g, &g->ax);
  } else if (!cached) {
    HALO_TRY(plan_from_host(g, &g->x, GNN_BUF_X, 0, x));
    HALO_TRY(plan_new(g, &g->xd, GNN_BUF_XD, 0));
  }
done:
  buf_del(g, &xfull);
  free(x);
  return st;
}

/* Everything that can fail on one rank alone, before any collective of the
 * model (the plan has its own agreement). */
static halo_status setup_local(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  const halo_net_options *o = &g->opt;
  halo_net_info *info = &g->info;

  HALO_TRY(check_setup(s, o, g->ops));
  HALO_TRY(describe(s, o, &info->model));
  if (o->deterministic) {
    /* MPI_SUM of 42-bit limbs stays exact for fewer than 2^21 ranks. */
    int size = 1;
    HALO_MPI(MPI_Comm_size(g->comm, &size));
    if (size >= 1 << (63 - HALO_EXACT_LIMB_BITS))
      HALO_FAIL(HALO_ERR_LIMIT, "deterministic training sums the gradients of fewer than %d ranks",
                1 << (63 - HALO_EXACT_LIMB_BITS));
  }

  g->nlayers = o->layers;
  g->n_owned = s->n_owned;
  g->n_all = s->n_owned + s->n_halo;
  info->n_owned = s->n_owned;
  info->n_halo = s->n_halo;
  for (int l = 0; l < g->nlayers; l++) {
    layer *ly = &g->layers[l];
    ly->desc = &info->model.layer[l];
    ly->kind = gnn_layer_kind_of(o->model);
    ly->index = l;
    ly->d_in = ly->desc->d_in;
    ly->d_mid = ly->desc->d_mid;
    ly->d_out = ly->desc->d_out;
  }
  g->nparams = info->params = info->model.params;
  /* One group per layer.  GCN's reference decays only the first layer;
   * GraphSAGE's and GIN's (PyG's examples) every parameter, as does
   * --weight-decay-all. */
  halo_optim_init(&g->optim, o->lr);
  for (int l = 0; l < g->nlayers; l++) {
    const halo_layer_desc *d = g->layers[l].desc;
    const int all = o->weight_decay_all || o->model != HALO_MODEL_GCN;
    const float wd = (l == 0 || all) ? o->weight_decay : 0.0f;
    HALO_TRY(halo_optim_add_group(&g->optim, d->offset, d->count, wd));
  }
  if (g->nparams > INT32_MAX)
    HALO_FAIL(HALO_ERR_LIMIT, "the model has %lld parameters, more than one MPI_Allreduce sends",
              (long long)g->nparams);
done:
  return st;
}

/* A layer's buffers and the plan entries they are sized from: one list for
 * setup_buffers, which allocates them, and halo_net_destroy. */
enum { LAYER_BUFFERS = 11 };
typedef struct layer_buffer {
  halo_buf *buf;
  gcn_buf entry;
} layer_buffer;

static void layer_buffers(layer *ly, layer_buffer out[LAYER_BUFFERS]) {
  const layer_buffer bufs[LAYER_BUFFERS] = {
      {&ly->hd, GNN_BUF_HD},     {&ly->t, GNN_BUF_T},
      {&ly->ah, GNN_BUF_AH},     {&ly->z1, GNN_BUF_Z1},
      {&ly->norm, GNN_BUF_NORM}, {&ly->xhat, GNN_BUF_XHAT},
      {&ly->rstd, GNN_BUF_RSTD}, {&ly->score, GNN_BUF_SCORE},
      {&ly->node, GNN_BUF_NODE}, {&ly->att_grad, GNN_BUF_ATT_GRAD},
      {&ly->z, GNN_BUF_Z}};
  memcpy(out, bufs, sizeof bufs);
}

static halo_status setup_buffers(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  float *params = NULL;

  const row_split split = split_of(s, &g->opt);
  const gnn_bufs_input dense = plan_input(&g->info.model, g->ops->download != NULL, split, 0, 0);
  g->rows = split;
  gnn_bufs_build(s, &g->opt, &dense, &g->plan_mem);
  HALO_TRY(setup_aggregation(g, s, split));
  g->info.interior_rows = g->n_interior;
  g->info.contiguous_rows = g->contiguous;
  HALO_TRY(plan_from_host(g, &g->global_id, GNN_BUF_GLOBAL_ID, 0, s->global_id));
  HALO_TRY(plan_from_host(g, &g->labels, GNN_BUF_LABELS, 0,
                          s->multilabel ? (const void *)s->targets : (const void *)s->labels));
  const int32_t *rows[3] = {s->train, s->valid, s->test};
  const int64_t counts[3] = {s->n_train, s->n_valid, s->n_test};
  const gcn_buf split_buf[3] = {GNN_BUF_TRAIN, GNN_BUF_VALID, GNN_BUF_TEST};
  for (int k = 0; k < 3; k++) {
    g->split_n[k] = counts[k];
    HALO_TRY(plan_from_host(g, &g->split[k], split_buf[k], 0, rows[k]));
  }

  /* Each layer's buffers, as many as its plan entries. */
  for (int l = 0; l < g->nlayers; l++) {
    layer_buffer bufs[LAYER_BUFFERS];
    layer_buffers(&g->layers[l], bufs);
    for (int k = 0; k < LAYER_BUFFERS; k++)
      if (gnn_bufs_bytes(&g->plan_mem, bufs[k].entry, l) > 0)
        HALO_TRY(plan_new(g, bufs[k].buf, bufs[k].entry, l));
  }
  HALO_TRY(plan_new(g, &g->g0, GNN_BUF_G0, 0));
  HALO_TRY(plan_new(g, &g->g1, GNN_BUF_G1, 0));
  if (gnn_bufs_bytes(&g->plan_mem, GNN_BUF_G2, 0) > 0) HALO_TRY(plan_new(g, &g->g2, GNN_BUF_G2, 0));

  size_t pbytes = (size_t)g->nparams * sizeof(float);
  HALO_ALLOC(params, g->nparams, "the parameters");
  init_params(&g->opt, &g->info.model, params);
  HALO_TRY(plan_from_host(g, &g->params, GNN_BUF_PARAMS, 0, params));
  HALO_TRY(plan_new(g, &g->grads, GNN_BUF_GRADS, 0));
  HALO_TRY(plan_new(g, &g->adam_m, GNN_BUF_ADAM_M, 0));
  HALO_TRY(plan_new(g, &g->adam_v, GNN_BUF_ADAM_V, 0));
  if (g->ops->download) /* pinned on a GPU */
    HALO_TRY(halo__backend_host_alloc(g->be, pbytes, "gradient staging", (void **)&g->host_grads));
  if (g->opt.deterministic) {
    const gnn_bufs *p = &g->plan_mem;
    g->threads = p->threads;
    HALO_ALLOC(g->exact, p->host_exact / (int64_t)sizeof(int64_t), "the exact gradient sums");
    if (p->host_exact_work > 0) /* none on a GPU */
      g->exact_work = aligned_alloc(16, ((size_t)p->host_exact_work + 15) / 16 * 16);
    if (p->host_exact_work > 0 && !g->exact_work)
      HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating the exact sums' workspace (%lld bytes)",
                (long long)p->host_exact_work);
  }
done:
  free(params);
  return st;
}

/* Declares the sparse products of the epoch loop to a backend that
 * prepares them (cuSPARSE descriptors and workspace on a GPU): the
 * aggregation's interior and boundary blocks at every exchanged width (the
 * forward matrix forward, its transpose backward), and S, Sᵀ at the first
 * layer's aggregated width.  Products over row lists are left to the
 * backend's own kernel, and so is every product in deterministic mode: the
 * backend's kernel sums each row in CSR order (the spmm slot's contract),
 * while a library's may split a row by the matrix's shape. Local. */
static halo_status prepare_products(halo_net *g) {
  halo_status st = HALO_OK;
  const halo_model_desc *d = &g->info.model;
  /* GAT's attention kernels read the adjacency themselves: no SpMM on it. */
  if (!g->ops->spmm_prepare || d->kind == HALO_MODEL_GAT || g->opt.deterministic) return HALO_OK;
  for (int l = 0; l < d->layers && g->contiguous; l++) {
    const int32_t widths[2] = {d->comm[l].fwd, d->comm[l].bwd};
    const adj_matrix *m[2] = {&g->adj_fwd, g->adj_bwd};
    for (int k = 0; k < 2; k++) {
      if (widths[k] < 1) continue;
      HALO_TRY(g->ops->spmm_prepare(g->be, &m[k]->dev, g->n_interior, widths[k]));
      HALO_TRY(g->ops->spmm_prepare(g->be, &m[k]->boundary, g->n_boundary, widths[k]));
    }
  }
  if (g->sparse_in) {
    const layer *l0 = &g->layers[0];
    HALO_TRY(g->ops->spmm_prepare(g->be, &g->s_csr, g->n_owned, l0->d_mid));
    HALO_TRY(g->ops->spmm_prepare(g->be, &g->st_csr, l0->d_in, l0->d_mid));
  }
done:
  return st;
}

/* --- memory estimate ------------------------------------------------------ */

halo_status halo_net_input_layout(MPI_Comm comm, const halo_shard *s, const halo_net_options *o,
                                  halo_net_input *out) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  float lo = 0.0f, local_lo = INFINITY;
  const int64_t count = s->x ? s->n_owned * s->features : 0;
  *out = (halo_net_input){0};
  /* The same failure on every rank: the widths come from the manifest. */
  HALO_TRY(describe(s, o, &d));
  if (o->normalize_features) { /* normalised, x is 0 exactly where it held the minimum */
    for (int64_t i = 0; i < count; i++) local_lo = fminf(local_lo, s->x[i]);
    HALO_MPI(MPI_Allreduce(&local_lo, &lo, 1, MPI_FLOAT, MPI_MIN, comm));
  }
  HALO_TRY(count_sparse(comm, o, s->x, count, lo, &out->sparse, &out->nonzeros));
  /* Only an input multiplied by W first can be sparse (setup_features); for
   * a cached ÂX, which only the model computes, the estimate bounds both. */
  out->sparse = out->sparse && d.shape[0] == HALO_LAYER_TRANSFORM;
done:
  return st;
}

halo_status halo_net_memory_estimate(const halo_shard *s, const halo_net_options *o, int device,
                                     const halo_net_input *in, halo_net_memory *out) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  gnn_bufs plan;
  *out = (halo_net_memory){0};
  HALO_TRY(describe(s, o, &d));
  int sparse = in->sparse;
  int64_t nonzeros = in->nonzeros;
  if (d.shape[0] == HALO_LAYER_CACHED) {
    /* ÂX is only known once made: when it may be kept as CSR (forced, or
     * under SPARSE_DENSITY non-zero over all ranks, which bounds this rank's
     * share but for uneven parts), plan for S and Sᵀ at the bound. */
    const int64_t entries = s->n_owned * (int64_t)s->features;
    sparse = o->sparse_features != 0;
    nonzeros = o->sparse_features == 1 ? entries : (int64_t)(SPARSE_DENSITY * (double)entries);
  }
  const gnn_bufs_input pi = plan_input(&d, device, split_of(s, o), sparse, nonzeros);
  gnn_bufs_build(s, o, &pi, &plan);
  *out = gnn_bufs_total(&plan);
done:
  return st;
}

halo_status halo_net_create(MPI_Comm comm, halo_backend *be, const halo_shard *s,
                            const halo_net_options *o, halo_net **out) {
  halo_status st = HALO_OK;
  halo_net *g = NULL;
  *out = NULL;

  g = calloc(1, sizeof *g);
  if (!g) {
    halo_log_error("out of memory allocating the model");
    st = HALO_ERR_NOMEM;
  } else {
    g->comm = comm;
    g->be = be;
    g->ops = be->ops;
    g->opt = *o;
    st = setup_local(g, s);
  }
  HALO_TRY(halo_mpi_agree(comm, st));

  /* The plan's widest exchange, from the same rules as the prediction: the
   * buffers (and the INT_MAX message check) follow what really crosses, not
   * the input width when X never leaves its rank. */
  const halo_model_comm exchanges = halo_model_comm_of(&g->info.model);
  const int32_t max_cols = halo_predict_widest(&exchanges);
  HALO_TRY(halo_exchange_create(comm, be, s, max_cols, &g->plan));

  st = setup_buffers(g, s);
  HALO_TRY(halo_mpi_agree(comm, st));

  /* Global split sizes: the loss is a mean over every rank's train nodes
   * (multi-label: over their labelled tasks). */
  int64_t local[6] = {s->n_train, s->n_valid, s->n_test}, global[6];
  const int32_t *rows[3] = {s->train, s->valid, s->test};
  for (int k = 0; k < 3; k++)
    local[3 + k] = s->multilabel ? labelled_tasks(s, rows[k], local[k]) : local[k];
  HALO_MPI(MPI_Allreduce(local, global, 6, MPI_INT64_T, MPI_SUM, comm));
  g->info.multilabel = s->multilabel;
  memcpy(g->info.global_count, global, sizeof g->info.global_count);
  memcpy(g->info.global_scored, global + 3, sizeof g->info.global_scored);
  if (g->info.global_count[0] == 0 || g->info.global_scored[0] == 0) {
    /* Every rank sees the same sum, so every rank fails here together. */
    if (s->part == 0)
      halo_log_error("no part has a train node: the loss would be 0 and nothing would train");
    st = HALO_ERR_ARG;
    goto done;
  }

  st = setup_features(g, s);
  if (st == HALO_OK) st = prepare_products(g);
  HALO_TRY(halo_mpi_agree(comm, st));
  g->info.sparse_features = g->sparse_in;
  g->info.backend_bytes_planned = gnn_bufs_buffer_peak(&g->plan_mem);
  g->info.backend_bytes_peak = g->held_peak;
  *out = g;
  g = NULL;
done:
  halo_net_destroy(&g);
  return st;
}

void halo_net_destroy(halo_net **gp) {
  if (!gp || !*gp) return;
  halo_net *g = *gp;
  if (g->ops) {
    for (int l = 0; l < g->nlayers; l++) {
      layer *ly = &g->layers[l];
      layer_buffer bufs[LAYER_BUFFERS];
      layer_buffers(ly, bufs);
      for (int k = 0; k < LAYER_BUFFERS; k++) buf_del(g, bufs[k].buf);
    }
    buf_del(g, &g->g0);
    buf_del(g, &g->g1);
    buf_del(g, &g->g2);
    buf_del(g, &g->params);
    buf_del(g, &g->grads);
    buf_del(g, &g->adam_m);
    buf_del(g, &g->adam_v);
    for (int k = 0; k < 3; k++) buf_del(g, &g->split[k]);
    buf_del(g, &g->labels);
    buf_del(g, &g->global_id);
    buf_del(g, &g->interior);
    buf_del(g, &g->boundary);
    buf_del(g, &g->x);
    buf_del(g, &g->xd);
    buf_del(g, &g->s_drop);
    buf_del(g, &g->st_drop);
    buf_del(g, &g->ax);
    csr_release(g, &g->s_host, &g->s_csr);
    csr_release(g, &g->st_host, &g->st_csr);
    csr_release(g, &g->adj_fwd.host, &g->adj_fwd.dev);
    csr_release(g, &g->adj_bwd_own.host, &g->adj_bwd_own.dev);
  }
  halo_exchange_destroy(&g->plan);
  if (g->host_grads) halo__backend_host_free(g->be, (void **)&g->host_grads);
  free(g->exact);
  free(g->exact_work);
  free(g);
  *gp = NULL;
}

/* --- accessors ---------------------------------------------------------- */

void halo_net_info_get(const halo_net *g, halo_net_info *out) { *out = g->info; }

halo_status halo_net_params_get(const halo_net *g, float *out) {
  return buf_to_host(g, out, &g->params, (size_t)g->nparams * sizeof(float));
}

halo_status halo_net_grads_get(const halo_net *g, float *out) {
  return buf_to_host(g, out, &g->grads, (size_t)g->nparams * sizeof(float));
}

halo_status halo_net_params_set(halo_net *g, const float *in) {
  size_t bytes = (size_t)g->nparams * sizeof(float);
  if (g->ops->upload) return g->ops->upload(g->be, &g->params, 0, in, bytes);
  memcpy(g->params.data, in, bytes);
  return HALO_OK;
}

halo_status halo_net_adam_get(const halo_net *g, float *m, float *v, int64_t *steps) {
  halo_status st = HALO_OK;
  size_t bytes = (size_t)g->nparams * sizeof(float);
  HALO_TRY(buf_to_host(g, m, &g->adam_m, bytes));
  HALO_TRY(buf_to_host(g, v, &g->adam_v, bytes));
  *steps = g->optim.steps;
done:
  return st;
}

halo_status halo_net_adam_set(halo_net *g, const float *m, const float *v, int64_t steps) {
  halo_status st = HALO_OK;
  size_t bytes = (size_t)g->nparams * sizeof(float);
  if (steps < 0) HALO_FAIL(HALO_ERR_ARG, "Adam step count %lld is negative", (long long)steps);
  if (g->ops->upload) {
    HALO_TRY(g->ops->upload(g->be, &g->adam_m, 0, m, bytes));
    HALO_TRY(g->ops->upload(g->be, &g->adam_v, 0, v, bytes));
  } else {
    memcpy(g->adam_m.data, m, bytes);
    memcpy(g->adam_v.data, v, bytes);
  }
  g->optim.steps = steps;
done:
  return st;
}

halo_status halo_net_logits_get(const halo_net *g, float *out) {
  const layer *top = &g->layers[g->nlayers - 1];
  return buf_to_host(g, out, &top->z, (size_t)g->n_owned * (size_t)top->d_out * sizeof(float));
}
