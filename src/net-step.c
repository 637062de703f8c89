/* The network's step: the forward pass over its layers, the loss, the
 * backward pass, the gradient allreduce and Adam; the evaluation; and the
 * accessors of the parameters, the moments and the logits.
 *
 * The layers run through their kinds' tables (gnn-impl.h; layer-gcn.c,
 * layer-sage.c, layer-gin.c, layer-gat.c), each in the shape its
 * description fixes (halo_model_describe), so that the bytes sent match the
 * prediction exactly.  Between layers the network applies the residual,
 * LayerNorm or BatchNorm, the activation and dropout; after the top one, the loss
 * (softmax cross-entropy, or binary cross-entropy for a multi-label shard).
 * Nothing here allocates: every buffer comes from halo_net_create.
 */
#include "halo-net.h"

#include <string.h>

#include "gnn-impl.h"
#include "halo-clock.h"
#include "halo-exact.h"
#include "halo-quant.h"
#include "halo-rng.h"
#include "halo-sample.h"
#include "halo-watchdog.h"

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
  layer *to = &g->layers[l];
  to->hd_max_valid = 0;
  if (p > 0.0f && g->opt.deterministic && g->pass.training && g->ops->dropout_to_max &&
      dst == fbuf(&to->hd)) {
    /* The exact weight gradient's bound of this input, from this pass. */
    to->hd_max =
        g->ops->dropout_to_max(g->be, dst, src, n, cols, gids(g), dropout_key(g, epoch, l), p);
    to->hd_max_valid = 1;
  } else if (p <= 0.0f) {
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
  /* The evaluation's ÂX, made at set-up, beside X itself (SAGE's own term). */
  if (!train && ly->desc->eval_cached && g->ax.data)
    return g->sparse_in
               ? (layer_input){.sparse = g->s_csr, .sparse_t = g->st_csr, .ax = fbuf(&g->ax)}
               : (layer_input){.dense = fbuf(&g->x), .ax = fbuf(&g->ax)};
  if (g->sparse_in) {
    layer_input in = {.sparse = g->s_csr, .sparse_t = g->st_csr};
    if (p > 0.0f) {
      const uint64_t key = dropout_key(g, epoch, 0);
      g->ops->csr_dropout(g->be, &g->s_csr, 0, gids(g), key, p, fbuf(&g->s_drop));
      in.sparse.values = fbuf(&g->s_drop);
      if (g->st_perm.data) { /* the exact gradient reads S's through the permutation */
        in.t_perm = g->st_perm.data;
      } else {
        g->ops->csr_dropout(g->be, &g->st_csr, 1, gids(g), key, p, fbuf(&g->st_drop));
        in.sparse_t.values = fbuf(&g->st_drop);
      }
    }
    return in;
  }
  /* Multiplied first, X is read in place (the fused dropout masks it as
   * the products read it); aggregated first, it needs the halo rows' room
   * of xd. */
  if (p <= 0.0f && ly->desc->shape == HALO_LAYER_TRANSFORM)
    return (layer_input){.dense = fbuf(&g->x)};
  if (g->x_fused)
    return (layer_input){.dense = fbuf(&g->x), .drop_p = p, .drop_key = dropout_key(g, epoch, 0)};
  dropout_to(g, fbuf(&g->xd), fbuf(&g->x), ly->d_in, epoch, 0, p);
  return (layer_input){.dense = fbuf(&g->xd)};
}

static void activate(halo_net *g, float *z, int64_t n) {
  if (g->opt.activation == HALO_ACT_ELU)
    g->ops->elu(g->be, z, n);
  else if (g->opt.activation == HALO_ACT_LEAKY_RELU)
    g->ops->leaky_relu(g->be, z, n, g->opt.negative_slope);
  else
    g->ops->relu(g->be, z, n);
}

static void activate_backward(halo_net *g, float *dz, const float *z, int64_t n) {
  if (g->opt.activation == HALO_ACT_ELU)
    g->ops->elu_backward(g->be, dz, z, n);
  else if (g->opt.activation == HALO_ACT_LEAKY_RELU)
    g->ops->leaky_relu_backward(g->be, dz, z, n, g->opt.negative_slope);
  else if (g->opt.activation == HALO_ACT_GELU)
    g->ops->gelu_backward(g->be, dz, z, n); /* z: GELU's input, kept */
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

/* Back through the norm at layer ly's output (BatchNorm: gnn-batchnorm.c).
 * LayerNorm: dgamma = Σ dY ⊙ xhat and
 * dbeta = Σ dY (tmp holds the products), then dY → dZ in place. */
static halo_status norm_backward(halo_net *g, layer *ly, float *dz, float *tmp) {
  halo_status st = HALO_OK;
  const int k = ly->desc->norm_tensor;
  if (g->opt.norm == HALO_NORM_BATCH) return gnn_bn_backward(g, ly, HALO_BN_OUT, dz, tmp);
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
  /* --halo-sample: training's exchanges carry the epoch's kept rows;
   * evaluation uses the full graph. */
  halo_exchange_sample_use(g->plan, train && halo_sample_on(g->opt.halo_sample));
  for (int l = 0; l < g->nlayers; l++) {
    layer *ly = &g->layers[l];
    halo_watch_layer(train ? "forward" : "evaluation", l);
    const layer_input in = input_of(g, l, train, epoch);
    if (l == 0) g->in0 = in; /* the backward's */
    /* Evaluation always exchanges fresh fp32 rows. */
    halo_exchange_set_precision(g->plan, train ? g->opt.halo_precision : HALO_PREC_FP32,
                                halo_quant_key(g->opt.seed, epoch, l, 0));
    /* Training's layer l reads last epoch's halo rows (slot 2l); evaluation fresh ones. */
    halo_exchange_set_stale(g->plan, train ? 2 * l : -1);
    const int64_t sent = halo_exchange_stats_get(g->plan).bytes_sent;
    st = ly->kind->forward(g, ly, &in);
    halo_exchange_set_stale(g->plan, -1); /* a layer without an exchange leaves it set */
    g->layer_bytes[l][0] = halo_exchange_stats_get(g->plan).bytes_sent - sent;
    if (st != HALO_OK) goto done;
    add_residual(g, ly, &in);
    if (ly->desc->norm_tensor >= 0 && g->opt.norm == HALO_NORM_BATCH)
      HALO_TRY(gnn_bn_forward(g, ly, HALO_BN_OUT, fbuf(&ly->z)));
    else if (ly->desc->norm_tensor >= 0)
      g->ops->layernorm(g->be, fbuf(&ly->z), g->n_owned, ly->d_out,
                        tensor_of(&g->params, ly, ly->desc->norm_tensor),
                        tensor_of(&g->params, ly, ly->desc->norm_tensor + 1), fbuf(&ly->xhat),
                        fbuf(&ly->rstd));
    if (l + 1 < g->nlayers) {
      layer *next = &g->layers[l + 1];
      float *z = fbuf(&ly->z);
      const float p = train ? g->opt.dropout : 0.0f;
      if (g->opt.activation == HALO_ACT_GELU) {
        /* GELU's backward needs its input: Z stays, the next layer's input
         * is GELU(Z) with dropout_to's mask (a copy, then dropout). */
        next->hd_max_valid = 0;
        g->ops->gelu_to(g->be, fbuf(&next->hd), z, g->n_owned * ly->d_out);
        if (p > 0.0f)
          g->ops->dropout(g->be, fbuf(&next->hd), g->n_owned, ly->d_out, gids(g),
                          dropout_key(g, epoch, l + 1), p);
      } else {
        activate(g, z, g->n_owned * ly->d_out);
        dropout_to(g, fbuf(&next->hd), z, ly->d_out, epoch, l + 1, p);
      }
    }
  }
done:
  halo_exchange_sample_use(g->plan, 0);
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
    halo_exchange_set_precision(g->plan, g->opt.halo_precision_bwd,
                                halo_quant_key(g->opt.seed, epoch, l, 1));
    halo_exchange_set_stale(g->plan, 2 * l + 1); /* last epoch's halo gradients */
    const int64_t sent = halo_exchange_stats_get(g->plan).bytes_sent;
    g->pass.sampled_back = halo_sample_on(g->opt.halo_sample);
    st = ly->kind->backward(g, ly, &in, &dz, &tmp, l > 0);
    g->pass.sampled_back = 0;
    halo_exchange_set_stale(g->plan, -1);
    g->layer_bytes[l][1] = halo_exchange_stats_get(g->plan).bytes_sent - sent;
    if (st != HALO_OK) goto done;
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

/* Whether training's forward pass computes what evaluation's does, bit for
 * bit (forward: the training flag changes only the dropouts, BatchNorm's
 * statistics, the exchange's precision and staleness, and the sampling). */
static int forward_shareable(const halo_net *g) {
  const halo_net_options *o = &g->opt;
  const int attention = g->info.model.kind == HALO_MODEL_GAT && o->attn_dropout > 0.0f;
  return o->dropout <= 0.0f && o->input_dropout <= 0.0f && !attention &&
         o->norm != HALO_NORM_BATCH && o->halo_precision == HALO_PREC_FP32 && !o->halo_stale &&
         !halo_sample_on(o->halo_sample);
}

void halo_net_share_forward(halo_net *g, int on) { g->shared.share_on = on; }

halo_status halo_net_gradients(halo_net *g, int64_t epoch, halo_net_stats *out) {
  halo_status st = HALO_OK;
  halo_net_stats s = {0};
  double t0 = MPI_Wtime(), c0 = halo_cpu_seconds(), ar = 0.0, ar_cpu = 0.0;
  halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);
  int64_t correct = 0;
  /* The evaluation's forward pass, when it is this one (halo_net_share_forward):
   * its Z, kept inputs and layer_bytes are those this pass would make. */
  const int reuse = g->shared.ready;
  g->shared.ready = 0;

  gnn_sample_epoch(g, epoch);
  if (reuse) {
    g->pass.epoch = epoch;
    g->pass.training = 1;
  } else {
    HALO_TRY(forward(g, 1, epoch));
  }
  const int64_t scored = g->info.global_scored[SPLIT_TRAIN];
  const float scale = scored > 0 ? 1.0f / (float)scored : 0.0f;
  loss_of(g, SPLIT_TRAIN, scale, fbuf(&g->g0), &s.loss_sum, &correct);
  HALO_TRY(backward(g, epoch));

  /* One allreduce of one flat buffer sums every weight gradient. */
  double a0 = MPI_Wtime(), ac0 = halo_cpu_seconds();
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
    s.allreduce_bytes = g->nparams * (int64_t)sizeof(int64_t);
  } else {
    HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, grads, (int)g->nparams, MPI_FLOAT, MPI_SUM, g->comm,
                                  "the gradient allreduce"));
    s.allreduce_bytes = (int64_t)bytes;
  }
  if (g->host_grads) HALO_TRY(g->ops->upload(g->be, &g->grads, 0, g->host_grads, bytes));
  ar = MPI_Wtime() - a0;
  ar_cpu = halo_cpu_seconds() - ac0;

  halo_exchange_stats x1 = halo_exchange_stats_get(g->plan);
  s.halo_bytes = x1.bytes_sent - x0.bytes_sent + (reuse ? g->shared.halo_bytes : 0);
  memcpy(s.layer_bytes, g->layer_bytes, sizeof s.layer_bytes);
  s.comm_seconds = (x1.seconds - x0.seconds) + ar + (reuse ? g->shared.comm_seconds : 0.0);
  s.compute_cpu_seconds = (halo_cpu_seconds() - c0) - (x1.cpu_seconds - x0.cpu_seconds) - ar_cpu +
                          (reuse ? g->shared.compute_cpu_seconds : 0.0);
  s.seconds = MPI_Wtime() - t0 + (reuse ? g->shared.seconds : 0.0);
  s.allreduce_seconds = ar;
  if (out) *out = s;
  if (!reuse) g->shared.seconds = 0.0; /* what halo_net_step adds */
done:
  return st;
}

halo_status halo_net_update(halo_net *g) {
  float scale = 1.0f;
  g->shared.ready = 0;
  if (g->optim.clip > 0.0f) {
    /* After the allreduce every rank holds the summed gradients on the
     * host (a device backend staged them through host_grads), so each
     * computes the same norm with no further message. */
    const float *host = g->host_grads ? g->host_grads : fbuf(&g->grads);
    g->grad_norm = halo_optim_grad_norm(host, g->nparams);
    scale = halo_optim_clip_factor(g->grad_norm, g->optim.clip);
  }
  halo_optim_step(&g->optim, g->be, fbuf(&g->params), fbuf(&g->grads), fbuf(&g->adam_m),
                  fbuf(&g->adam_v), scale);
  return g->ops->synchronize ? g->ops->synchronize(g->be) : HALO_OK;
}

void halo_net_set_lr(halo_net *g, float lr) { g->optim.lr = lr; }

double halo_net_grad_norm(const halo_net *g) { return g->grad_norm; }

halo_status halo_net_step(halo_net *g, int64_t epoch, halo_net_stats *out) {
  halo_status st = HALO_OK;
  double t0 = MPI_Wtime();
  HALO_TRY(halo_net_gradients(g, epoch, out));
  const double c1 = halo_cpu_seconds();
  HALO_TRY(halo_net_update(g));
  /* A reused forward pass ran in the evaluation before: its time is the step's. */
  if (out) {
    out->seconds = MPI_Wtime() - t0 + g->shared.seconds;
    out->compute_cpu_seconds += halo_cpu_seconds() - c1;
  }
  g->shared.seconds = 0.0;
done:
  return st;
}

halo_status halo_net_drain(halo_net *g) { return halo_exchange_stale_drain(g->plan); }

halo_status halo_net_evaluate(halo_net *g, halo_net_stats *out) {
  halo_status st = HALO_OK;
  halo_net_stats s = {0};
  double t0 = MPI_Wtime();
  halo_exchange_stats x0 = halo_exchange_stats_get(g->plan);

  const double c0 = halo_cpu_seconds();
  const int share = g->shared.share_on && forward_shareable(g);
  g->shared.share_on = 0; /* a promise for this evaluation alone */
  g->shared.ready = 0;
  HALO_TRY(forward(g, 0, 0));
  if (share) {
    /* The next step's forward pass: its cost moves there. */
    if (g->ops->synchronize) HALO_TRY(g->ops->synchronize(g->be));
    const halo_exchange_stats xf = halo_exchange_stats_get(g->plan);
    g->shared.ready = 1;
    g->shared.seconds = MPI_Wtime() - t0;
    g->shared.halo_bytes = xf.bytes_sent - x0.bytes_sent;
    g->shared.comm_seconds = xf.seconds - x0.seconds;
    g->shared.compute_cpu_seconds = (halo_cpu_seconds() - c0) - (xf.cpu_seconds - x0.cpu_seconds);
    t0 += g->shared.seconds;
    x0 = xf;
  }
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

/* --- accessors ---------------------------------------------------------- */

void halo_net_info_get(const halo_net *g, halo_net_info *out) { *out = g->info; }

halo_status halo_net_params_get(const halo_net *g, float *out) {
  return gnn_buf_to_host(g, out, &g->params, (size_t)g->nparams * sizeof(float));
}

halo_status halo_net_grads_get(const halo_net *g, float *out) {
  return gnn_buf_to_host(g, out, &g->grads, (size_t)g->nparams * sizeof(float));
}

halo_status halo_net_params_set(halo_net *g, const float *in) {
  size_t bytes = (size_t)g->nparams * sizeof(float);
  g->shared.ready = 0;
  if (g->ops->upload) return g->ops->upload(g->be, &g->params, 0, in, bytes);
  memcpy(g->params.data, in, bytes);
  return HALO_OK;
}

halo_status halo_net_adam_get(const halo_net *g, float *m, float *v, int64_t *steps) {
  halo_status st = HALO_OK;
  size_t bytes = (size_t)g->nparams * sizeof(float);
  HALO_TRY(gnn_buf_to_host(g, m, &g->adam_m, bytes));
  HALO_TRY(gnn_buf_to_host(g, v, &g->adam_v, bytes));
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

void halo_net_bn_running_get(const halo_net *g, float *out) {
  if (g->info.model.running > 0)
    memcpy(out, g->bn_running, (size_t)g->info.model.running * sizeof *out);
}

void halo_net_bn_running_set(halo_net *g, const float *in) {
  g->shared.ready = 0;
  if (g->info.model.running > 0)
    memcpy(g->bn_running, in, (size_t)g->info.model.running * sizeof *in);
}

halo_status halo_net_layer_input_get(const halo_net *g, int l, float *out) {
  if (l < 1 || l >= g->nlayers) {
    halo_log_error("layer %d has no kept input (layers 1 to %d do)", l, g->nlayers - 1);
    return HALO_ERR_ARG;
  }
  const layer *ly = &g->layers[l];
  return gnn_buf_to_host(g, out, &ly->hd, (size_t)g->n_owned * (size_t)ly->d_in * sizeof(float));
}

halo_status halo_net_logits_get(const halo_net *g, float *out) {
  const layer *top = &g->layers[g->nlayers - 1];
  return gnn_buf_to_host(g, out, &top->z, (size_t)g->n_owned * (size_t)top->d_out * sizeof(float));
}
