/* The network's set-up and tear-down: the options' defaults, the checks of
 * the options and the shard against the backend, the model's description
 * and initial parameters, every buffer of the plan, halo_net_create and
 * halo_net_destroy.
 *
 * Creation runs in phases, each ended by a status agreement so that every
 * rank stops together: what can fail on one rank alone (setup_local), the
 * exchange plan, the buffers (setup_buffers, which also builds the
 * aggregation, net-input.c), the global split sizes, and the first layer's
 * input (net-input.c).  All buffers are allocated here, from the buffer
 * plan (gnn-bufs.h); the step functions (net-step.c) allocate nothing.
 */
#include "halo-net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gnn-bufs.h"
#include "gnn-impl.h"
#include "halo-exact.h"
#include "halo-mpi.h"
#include "halo-rng.h"

/* The defaults are the model option table's (model/halo-model-options.h),
 * so that the flags, the checkpoint and the network agree on them. */
void halo_net_options_default(halo_net_options *o) { halo_model_options_default(o); }

/* --- small helpers ------------------------------------------------------ */

static halo_status buf_new(halo_net *g, halo_buf *b, size_t bytes) {
  halo_status st = g->ops->buf_alloc(g->be, bytes, b);
  if (st == HALO_OK) {
    g->held += gnn_bufs_backend_bytes((int64_t)bytes);
    if (g->held > g->held_peak) g->held_peak = g->held;
  }
  return st;
}

void gnn_buf_del(halo_net *g, halo_buf *b) {
  if (b->data) {
    g->held -= gnn_bufs_backend_bytes((int64_t)b->bytes);
    g->ops->buf_free(g->be, b);
  }
  *b = (halo_buf){0};
}

/* Allocates plan entry (which, layer): every model buffer is made here. */
halo_status gnn_plan_new(halo_net *g, halo_buf *b, gnn_buf which, int layer) {
  return buf_new(g, b, (size_t)gnn_bufs_bytes(&g->plan_mem, which, layer));
}

/* The same, filled with a copy of the entry's bytes from host memory. */
halo_status gnn_plan_from_host(halo_net *g, halo_buf *b, gnn_buf which, int layer,
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

halo_status gnn_buf_to_host(const halo_net *g, void *dst, const halo_buf *b, size_t bytes) {
  if (bytes == 0) return HALO_OK;
  if (g->ops->download) return g->ops->download(g->be, dst, b, 0, bytes);
  memcpy(dst, b->data, bytes);
  return HALO_OK;
}

halo_status gnn_csr_to_backend(halo_net *g, const halo_csr *host, halo_csr *dev) {
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

/* --- set-up ------------------------------------------------------------- */

/* Whether the backend has the ops that the model of `o` needs, and if not
 * the first one missing. */
static const char *missing_op(const halo_backend_ops *ops, const halo_net_options *o,
                              int multilabel) {
  if (o->deterministic && !(ops->gemm_rows && ops->max_abs && ops->exact_tn && ops->exact_csr))
    return "the exact sums";
  if (o->deterministic && !ops->download &&
      !(ops->exact_tn_ones && ops->exact_tn_dropped && ops->exact_csr_perm))
    return "the exact sums"; /* a host backend's packed trio (halo-backend-impl.h) */
  if (o->activation == HALO_ACT_ELU && !(ops->elu && ops->elu_backward)) return "ELU";
  if (o->activation == HALO_ACT_LEAKY_RELU && !(ops->leaky_relu && ops->leaky_relu_backward))
    return "LeakyReLU";
  if (o->activation == HALO_ACT_GELU && !(ops->gelu_to && ops->gelu_backward)) return "GELU";
  if (o->model == HALO_MODEL_SAGE && !ops->axpy) return "AXPY";
  if (o->model == HALO_MODEL_SAGE && o->sage_normalize &&
      !(ops->l2_normalize && ops->l2_normalize_backward))
    return "the row normalisation";
  if (o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MAX &&
      !halo__backend_has_ops(ops, HALO_OP_BIT(SAGE_MAX) | HALO_OP_BIT(SAGE_MAX_BACKWARD)))
    return "the max aggregation (--aggr max)";
  if (o->model == HALO_MODEL_GIN && !ops->axpy) return "AXPY";
  if (o->residual && !ops->axpy) return "AXPY";
  if (o->norm == HALO_NORM_LAYER && !(ops->layernorm && ops->layernorm_backward && ops->mul))
    return "LayerNorm";
  if (o->norm == HALO_NORM_BATCH && !(ops->bn_sums && ops->batchnorm && ops->batchnorm_backward &&
                                      ops->mul))
    return "BatchNorm (--norm batch)";
  if (multilabel && !ops->sigmoid_bce) return "the multi-label loss";
  if (o->optimizer == HALO_OPTIMIZER_ADAMW && !ops->adamw) return "AdamW (--optimizer adamw)";
  if (o->optimizer == HALO_OPTIMIZER_SGD && !ops->sgd) return "SGD (--optimizer sgd)";
  if (o->clip_grad_norm > 0.0f && !ops->scale) return "the gradient scaling (--clip-grad-norm)";
  const layer_kind *kind = gnn_layer_kind_of(o->model);
  if (!halo__backend_has_ops(ops, kind->model_ops)) return kind->model_ops_what;
  return NULL;
}

/* The labelled (row, task) entries of the `n` listed rows of a multi-label
 * shard. */
static int64_t labelled_tasks(const halo_shard *s, const int32_t *rows, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++)
    for (int32_t t = 0; t < s->classes; t++)
      count += s->targets[(int64_t)rows[i] * s->classes + t] >= 0;
  return count;
}

/* Checks the options and the shard's shape for this model. Local. */
static halo_status check_setup(const halo_shard *s, const halo_net_options *o,
                               const halo_backend_ops *ops) {
  halo_status st = HALO_OK;
  const char *model = halo_model_name(o->model);
  if (o->layers < 1 || o->layers > HALO_MAX_LAYERS)
    HALO_FAIL(HALO_ERR_ARG, "%d layers: a %s model has 1 to %d", o->layers, model, HALO_MAX_LAYERS);
  if ((o->layers > 1 || o->model == HALO_MODEL_GIN) && o->hidden < 1)
    HALO_FAIL(HALO_ERR_ARG, "hidden width %d: must be at least 1", o->hidden);
  if (o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MAX) {
    /* The arg-max ids cross ranks as int32, bit for bit. */
    if (s->nodes > INT32_MAX)
      HALO_FAIL(HALO_ERR_LIMIT, "--aggr max: %lld nodes, more than its int32 arg-max ids hold",
                (long long)s->nodes);
    if (o->halo_precision || o->halo_precision_bwd)
      HALO_FAIL(HALO_ERR_ARG, "--aggr max exchanges arg-max ids, which low-bit rows do not "
                              "carry: use --halo-precision fp32");
  }
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
  const char *modes = halo_exchange_modes_refusal(o);
  if (modes) HALO_FAIL(HALO_ERR_ARG, "%s", modes);
  if (o->halo_aggregate == HALO_AGGREGATE_AUTO) {
    const char *why = halo_aggregate_refusal(o);
    if (why) HALO_FAIL(HALO_ERR_ARG, "--halo-aggregate auto: %s", why);
    if (ops->space != HALO_MEM_HOST)
      HALO_FAIL(HALO_ERR_UNSUPPORTED,
                "--halo-aggregate auto: the partial sums are made on the host; it runs with "
                "--device cpu only (no CUDA twin yet)");
  }
  if (s->features < 1 || (!s->x && !s->x_indptr))
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

halo_status halo_net_describe(const halo_net_options *o, int32_t features, int32_t classes,
                              halo_model_desc *d) {
  int32_t dims[HALO_MAX_LAYERS + 1];
  if (o->layers < 1 || o->layers > HALO_MAX_LAYERS) return HALO_ERR_ARG;
  dims[0] = features;
  /* GAT's --hidden is per head: its hidden layers concatenate the heads. */
  const int32_t hidden = o->model == HALO_MODEL_GAT ? o->hidden * o->heads : o->hidden;
  for (int l = 1; l < o->layers; l++) dims[l] = hidden;
  dims[o->layers] = classes;
  const halo_model_config c = halo_model_config_of_options(o);
  return halo_model_describe(&c, dims, o->layers + 1, d);
}

/* The model of a shard: its widths from the shard's features and classes,
 * and its layers' shapes, parameters and exchanges. Local. */
halo_status gnn_describe(const halo_shard *s, const halo_net_options *o, halo_model_desc *d) {
  return halo_net_describe(o, s->features, s->classes, d);
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

/* Everything that can fail on one rank alone, before any collective of the
 * model (the plan has its own agreement). */
static halo_status setup_local(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  const halo_net_options *o = &g->opt;
  halo_net_info *info = &g->info;

  HALO_TRY(check_setup(s, o, g->ops));
  HALO_TRY(gnn_describe(s, o, &info->model));
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
  info->n_halo_exchanged = s->n_halo; /* --halo-aggregate auto: the covers' (net-input.c) */
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
  g->optim.kind = (halo_optimizer)o->optimizer;
  g->optim.momentum = o->momentum;
  g->optim.nesterov = o->nesterov;
  g->optim.clip = o->clip_grad_norm;
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
enum { LAYER_BUFFERS = 13 };
typedef struct layer_buffer {
  halo_buf *buf;
  gnn_buf entry;
} layer_buffer;

static void layer_buffers(layer *ly, layer_buffer out[LAYER_BUFFERS]) {
  const layer_buffer bufs[LAYER_BUFFERS] = {
      {&ly->hd, GNN_BUF_HD},     {&ly->t, GNN_BUF_T},
      {&ly->ah, GNN_BUF_AH},     {&ly->z1, GNN_BUF_Z1},
      {&ly->norm, GNN_BUF_NORM}, {&ly->xhat, GNN_BUF_XHAT},
      {&ly->rstd, GNN_BUF_RSTD}, {&ly->score, GNN_BUF_SCORE},
      {&ly->node, GNN_BUF_NODE}, {&ly->att_grad, GNN_BUF_ATT_GRAD},
      {&ly->xhat1, GNN_BUF_XHAT1}, {&ly->arg, GNN_BUF_ARG},
      {&ly->z, GNN_BUF_Z}};
  memcpy(out, bufs, sizeof bufs);
}

/* --norm batch: the running statistics at torch's start (mean 0, variance
 * 1), and the host arrays of gnn-batchnorm.c (gnn-impl.h). */
static halo_status setup_batchnorm(halo_net *g) {
  halo_status st = HALO_OK;
  const halo_model_desc *d = &g->info.model;
  int64_t widest = 0;
  if (d->running == 0) goto done;
  HALO_ALLOC(g->bn_running, d->running, "BatchNorm's running statistics");
  HALO_ALLOC(g->bn_scale, d->running / 2, "BatchNorm's scales");
  for (int l = 0; l < d->layers; l++)
    for (int site = 0; site < 2; site++) {
      const int64_t at = d->layer[l].bn_running[site];
      if (at < 0) continue;
      const int64_t cols = site == HALO_BN_MLP ? d->layer[l].d_mid : d->layer[l].d_out;
      for (int64_t c = 0; c < cols; c++) g->bn_running[at + cols + c] = 1.0f;
      if (cols > widest) widest = cols;
    }
  HALO_ALLOC(g->bn_col, 4 * widest, "BatchNorm's column sums");
  HALO_ALLOC(g->bn_limbs, 2 * widest * HALO_EXACT_LIMBS, "BatchNorm's exact sums");
done:
  return st;
}

static halo_status setup_buffers(halo_net *g, const halo_shard *s) {
  halo_status st = HALO_OK;
  float *params = NULL;

  const row_split split = gnn_split_of(s, &g->opt);
  const gnn_bufs_input dense =
      gnn_plan_input(&g->info.model, g->ops->download != NULL, split, 0, 0);
  g->rows = split;
  gnn_bufs_build(s, &g->opt, &dense, &g->plan_mem);
  HALO_TRY(gnn_setup_aggregation(g, s, split));
  g->info.interior_rows = g->n_interior;
  g->info.contiguous_rows = g->contiguous;
  HALO_TRY(gnn_plan_from_host(g, &g->global_id, GNN_BUF_GLOBAL_ID, 0, s->global_id));
  HALO_TRY(gnn_plan_from_host(g, &g->labels, GNN_BUF_LABELS, 0,
                              s->multilabel ? (const void *)s->targets : (const void *)s->labels));
  const int32_t *rows[3] = {s->train, s->valid, s->test};
  const int64_t counts[3] = {s->n_train, s->n_valid, s->n_test};
  const gnn_buf split_buf[3] = {GNN_BUF_TRAIN, GNN_BUF_VALID, GNN_BUF_TEST};
  for (int k = 0; k < 3; k++) {
    g->split_n[k] = counts[k];
    HALO_TRY(gnn_plan_from_host(g, &g->split[k], split_buf[k], 0, rows[k]));
  }

  /* Each layer's buffers, as many as its plan entries. */
  for (int l = 0; l < g->nlayers; l++) {
    layer_buffer bufs[LAYER_BUFFERS];
    layer_buffers(&g->layers[l], bufs);
    for (int k = 0; k < LAYER_BUFFERS; k++)
      if (gnn_bufs_bytes(&g->plan_mem, bufs[k].entry, l) > 0)
        HALO_TRY(gnn_plan_new(g, bufs[k].buf, bufs[k].entry, l));
  }
  HALO_TRY(gnn_plan_new(g, &g->g0, GNN_BUF_G0, 0));
  HALO_TRY(gnn_plan_new(g, &g->g1, GNN_BUF_G1, 0));
  if (gnn_bufs_bytes(&g->plan_mem, GNN_BUF_G2, 0) > 0)
    HALO_TRY(gnn_plan_new(g, &g->g2, GNN_BUF_G2, 0));

  size_t pbytes = (size_t)g->nparams * sizeof(float);
  HALO_ALLOC(params, g->nparams, "the parameters");
  init_params(&g->opt, &g->info.model, params);
  HALO_TRY(gnn_plan_from_host(g, &g->params, GNN_BUF_PARAMS, 0, params));
  HALO_TRY(gnn_plan_new(g, &g->grads, GNN_BUF_GRADS, 0));
  HALO_TRY(gnn_plan_new(g, &g->adam_m, GNN_BUF_ADAM_M, 0));
  HALO_TRY(gnn_plan_new(g, &g->adam_v, GNN_BUF_ADAM_V, 0));
  if (g->ops->download) /* pinned on a GPU */
    HALO_TRY(halo__backend_host_alloc(g->be, pbytes, "gradient staging", (void **)&g->host_grads));
  if (g->opt.deterministic) {
    const gnn_bufs *p = &g->plan_mem;
    g->threads = p->threads;
    HALO_ALLOC(g->exact, p->host_exact / (int64_t)sizeof(int64_t), "the exact gradient sums");
    if (p->host_exact_work > 0) { /* none on a GPU */
      g->exact_work_bytes = ((size_t)p->host_exact_work + 15) / 16 * 16;
      g->exact_work = aligned_alloc(16, g->exact_work_bytes);
    }
    if (p->host_exact_work > 0 && !g->exact_work)
      HALO_FAIL(HALO_ERR_NOMEM, "out of memory allocating the exact sums' workspace (%lld bytes)",
                (long long)p->host_exact_work);
  }
  HALO_TRY(setup_batchnorm(g));
done:
  free(params);
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
  HALO_TRY(gnn_resolve_eval_cache(g, s));

  /* The plan's widest exchange, from the same rules as the prediction: the
   * buffers (and the INT_MAX message check) follow what really crosses, not
   * the input width when X never leaves its rank. */
  const halo_model_comm exchanges = halo_model_comm_of(&g->info.model);
  const int32_t max_cols = halo_predict_widest(&exchanges);
  HALO_TRY(halo_exchange_create(comm, be, s, max_cols, &g->plan));

  st = halo_exchange_precision_reserve(g->plan, g->opt.halo_precision != HALO_PREC_FP32 ||
                                                    g->opt.halo_precision_bwd != HALO_PREC_FP32);
  if (st == HALO_OK && g->opt.halo_stale)
    st = halo_exchange_stale_reserve(g->plan, 2 * g->nlayers, g->opt.halo_stale_momentum);
  if (st == HALO_OK) st = setup_buffers(g, s);
  if (st == HALO_OK) st = gnn_sample_setup(g, s, max_cols); /* after the aggregation */
  HALO_TRY(halo_mpi_agree(comm, st));
  if (g->opt.halo_aggregate == HALO_AGGREGATE_AUTO) HALO_TRY(halo_exchange_cover_check(g->plan));

  /* Global split sizes: the loss is a mean over every rank's train nodes
   * (multi-label: over their labelled tasks). */
  int64_t local[7] = {s->n_train, s->n_valid, s->n_test}, global[7];
  const int32_t *rows[3] = {s->train, s->valid, s->test};
  for (int k = 0; k < 3; k++)
    local[3 + k] = s->multilabel ? labelled_tasks(s, rows[k], local[k]) : local[k];
  local[6] = s->n_owned; /* BatchNorm's N */
  HALO_MPI(MPI_Allreduce(local, global, 7, MPI_INT64_T, MPI_SUM, comm));
  g->bn_rows = global[6];
  g->info.multilabel = s->multilabel;
  memcpy(g->info.global_count, global, sizeof g->info.global_count);
  memcpy(g->info.global_scored, global + 3, sizeof g->info.global_scored);
  if (!g->opt.eval_only && (g->info.global_count[0] == 0 || g->info.global_scored[0] == 0)) {
    /* Every rank sees the same sum, so every rank fails here together. */
    if (s->part == 0)
      halo_log_error("no part has a train node: the loss would be 0 and nothing would train");
    st = HALO_ERR_ARG;
    goto done;
  }

  st = gnn_setup_features(g, s);
  if (st == HALO_OK) st = gnn_prepare_products(g);
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
      for (int k = 0; k < LAYER_BUFFERS; k++) gnn_buf_del(g, bufs[k].buf);
    }
    gnn_buf_del(g, &g->g0);
    gnn_buf_del(g, &g->g1);
    gnn_buf_del(g, &g->g2);
    gnn_buf_del(g, &g->params);
    gnn_buf_del(g, &g->grads);
    gnn_buf_del(g, &g->adam_m);
    gnn_buf_del(g, &g->adam_v);
    for (int k = 0; k < 3; k++) gnn_buf_del(g, &g->split[k]);
    gnn_buf_del(g, &g->labels);
    gnn_buf_del(g, &g->global_id);
    gnn_buf_del(g, &g->interior);
    gnn_buf_del(g, &g->boundary);
    gnn_buf_del(g, &g->x);
    gnn_buf_del(g, &g->xd);
    gnn_buf_del(g, &g->s_drop);
    gnn_buf_del(g, &g->st_drop);
    gnn_buf_del(g, &g->st_perm);
    gnn_buf_del(g, &g->ax);
    csr_release(g, &g->s_host, &g->s_csr);
    csr_release(g, &g->st_host, &g->st_csr);
    csr_release(g, &g->adj_fwd.host, &g->adj_fwd.dev);
    csr_release(g, &g->adj_bwd_own.host, &g->adj_bwd_own.dev);
    halo_csr_free(&g->adj_fwd.combine);
    halo_csr_free(&g->adj_bwd_own.combine);
  }
  gnn_sample_free(g);
  halo_exchange_destroy(&g->plan);
  if (g->host_grads) halo__backend_host_free(g->be, (void **)&g->host_grads);
  free(g->exact);
  free(g->exact_work);
  free(g->bn_running);
  free(g->bn_scale);
  free(g->bn_col);
  free(g->bn_limbs);
  free(g);
  *gp = NULL;
}
