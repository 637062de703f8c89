#include "halo-model.h"

#include <string.h>

#define NAME_(K, name) [HALO_MODEL_##K] = #name,
const char *const halo_model_kind_names[] = {HALO_MODEL_KINDS(NAME_) NULL};
#undef NAME_
#define NKINDS ((int)(sizeof halo_model_kind_names / sizeof halo_model_kind_names[0]) - 1)

const char *halo_model_name(halo_model_kind kind) {
  return (unsigned)kind < (unsigned)NKINDS ? halo_model_kind_names[kind] : "unknown";
}

/* "|gcn|sage|...", shown past its first bar. */
#define BAR_NAME_(K, name) "|" #name
const char *halo_model_names(void) { return HALO_MODEL_KINDS(BAR_NAME_) + 1; }
#undef BAR_NAME_

halo_status halo_model_parse(const char *name, halo_model_kind *out) {
  for (int k = 0; k < NKINDS; k++)
    if (strcmp(name, halo_model_kind_names[k]) == 0) {
      *out = (halo_model_kind)k;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

halo_model_config halo_model_config_of(halo_model_kind kind) {
  return (halo_model_config){
      .kind = kind, .input_dropout = 1, .mlp_hidden = 16, .heads = 8, .output_heads = 1};
}

/* Appends a tensor to layer *ly, at the model's running offset *off. */
static void tensor(halo_layer_desc *ly, int64_t *off, halo_tensor_kind kind, const char *name,
                   int64_t rows, int64_t cols) {
  ly->tensor[ly->ntensors++] =
      (halo_param_tensor){.kind = kind, .name = name, .offset = *off, .rows = rows, .cols = cols};
  *off += rows * cols;
}

/* A BatchNorm site of `cols` columns: gamma and beta, and its running
 * statistics at *run. */
static void bn_site(halo_layer_desc *ly, int site, int64_t cols, int64_t *off, int64_t *run) {
  ly->bn_tensor[site] = ly->ntensors;
  ly->bn_running[site] = *run;
  tensor(ly, off, HALO_TENSOR_SCALE, site == HALO_BN_MLP ? "gamma_1" : "gamma", 1, cols);
  tensor(ly, off, HALO_TENSOR_BIAS, site == HALO_BN_MLP ? "beta_1" : "beta", 1, cols);
  *run += 2 * cols;
}

/* Layer l's parameters, in the order of the flat array (docs/models.md):
 * its kind's (GIN's with BatchNorm: then gamma_1, beta_1), then W_res, then
 * the norm's (`norm`: a hidden layer's), gamma and beta. */
static void layer_tensors(const halo_model_config *c, halo_layer_desc *ly, int norm, int64_t *off,
                          int64_t *run) {
  const int64_t d_in = ly->d_in, d_mid = ly->d_mid, d_out = ly->d_out;
  ly->offset = *off;
  switch (c->kind) {
    case HALO_MODEL_GCN:
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W", d_in, d_out);
      tensor(ly, off, HALO_TENSOR_BIAS, "b", 1, d_out);
      break;
    case HALO_MODEL_SAGE: /* PyG's lin_l (with the bias), then lin_r */
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W_l", d_in, d_out);
      tensor(ly, off, HALO_TENSOR_BIAS, "b", 1, d_out);
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W_r", d_in, d_out);
      break;
    case HALO_MODEL_GIN:
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W_1", d_in, d_mid);
      tensor(ly, off, HALO_TENSOR_BIAS, "b_1", 1, d_mid);
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W_2", d_mid, d_out);
      tensor(ly, off, HALO_TENSOR_BIAS, "b_2", 1, d_out);
      if (c->train_eps) tensor(ly, off, HALO_TENSOR_EPS, "eps", 1, 1);
      break;
    case HALO_MODEL_GAT: /* PyG's lin (no bias), att_src, att_dst, bias */
      tensor(ly, off, HALO_TENSOR_WEIGHT, "W", d_in, d_mid);
      tensor(ly, off, HALO_TENSOR_WEIGHT, "a_src", ly->heads, d_mid / ly->heads);
      tensor(ly, off, HALO_TENSOR_WEIGHT, "a_dst", ly->heads, d_mid / ly->heads);
      tensor(ly, off, HALO_TENSOR_BIAS, "b", 1, d_out);
      break;
  }
  ly->res_tensor = ly->norm_tensor = -1;
  ly->bn_tensor[HALO_BN_MLP] = ly->bn_tensor[HALO_BN_OUT] = -1;
  ly->bn_running[HALO_BN_MLP] = ly->bn_running[HALO_BN_OUT] = -1;
  if (c->kind == HALO_MODEL_GIN && c->norm == HALO_NORM_BATCH)
    bn_site(ly, HALO_BN_MLP, d_mid, off, run);
  if (ly->residual == HALO_RESIDUAL_PROJECT) {
    ly->res_tensor = ly->ntensors;
    tensor(ly, off, HALO_TENSOR_WEIGHT, "W_res", d_in, d_out);
  }
  if (norm == HALO_NORM_BATCH) {
    ly->norm_tensor = ly->ntensors;
    bn_site(ly, HALO_BN_OUT, d_out, off, run);
  } else if (norm) {
    ly->norm_tensor = ly->ntensors;
    tensor(ly, off, HALO_TENSOR_SCALE, "gamma", 1, d_out);
    tensor(ly, off, HALO_TENSOR_BIAS, "beta", 1, d_out);
  }
  ly->count = *off - ly->offset;
}

/* The narrow side (halo-model.h) and GCN's cached first layer (not with a
 * residual, which adds X itself, projected); SAGE's max aggregates first. */
static void layer_comm(const halo_model_config *c, int l, halo_layer_desc *ly,
                       halo_layer_comm *comm) {
  if (c->kind == HALO_MODEL_GAT) { /* T forward; dZ and 3 scalars per head backward */
    ly->shape = HALO_LAYER_TRANSFORM;
    comm->fwd = ly->d_mid;
    comm->bwd = ly->d_out + 3 * ly->heads;
    comm->widest = comm->fwd > comm->bwd ? comm->fwd : comm->bwd;
    return;
  }
  if (c->kind == HALO_MODEL_SAGE && c->sage_max) { /* H forward; ids and dA backward */
    ly->shape = HALO_LAYER_AGGREGATE;
    comm->fwd = comm->widest = ly->d_in;
    comm->bwd = l == 0 ? 0 : 2 * ly->d_in;
    return;
  }
  const int narrow_mid = ly->d_mid < ly->d_in;
  const int32_t w = narrow_mid ? ly->d_mid : ly->d_in;
  if (l == 0 && !c->input_dropout && c->kind == HALO_MODEL_GCN && !c->residual) {
    ly->shape = HALO_LAYER_CACHED;
    comm->setup = comm->widest = ly->d_in;
    return;
  }
  ly->shape = narrow_mid ? HALO_LAYER_TRANSFORM : HALO_LAYER_AGGREGATE;
  comm->fwd = comm->widest = w;
  comm->bwd = (l == 0 && !narrow_mid) ? 0 : w;
  /* ÂX for the evaluation: the aggregation is linear (GCN's Â, SAGE's mean
   * or sum, GIN's sum), so Â·(X·W) = (ÂX)·W, and X is the input itself (no
   * residual); GIN-0 keeps X + AX, its U whole (with a learnt ε the cache
   * would save nothing: (1 + ε)·X·W_1 needs a product of its own).  X
   * crosses once at set-up, in slices no wider than the widest exchange
   * (src/net-input.c), so the exchange buffers stay as they are. */
  if (l == 0 && c->eval_cache && c->input_dropout && !c->residual &&
      (c->kind == HALO_MODEL_GCN || c->kind == HALO_MODEL_SAGE ||
       (c->kind == HALO_MODEL_GIN && !c->train_eps))) {
    ly->eval_cached = 1;
    comm->setup = ly->d_in;
  }
}

halo_status halo_model_describe(const halo_model_config *c, const int32_t *dims, int ndims,
                                halo_model_desc *out) {
  halo_status st = HALO_OK;
  if ((unsigned)c->kind >= (unsigned)NKINDS)
    HALO_FAIL(HALO_ERR_ARG, "model kind %d is not known", (int)c->kind);
  if (ndims < 2 || ndims > HALO_MAX_LAYERS + 1)
    HALO_FAIL(HALO_ERR_ARG, "a model needs 2 to %d widths, got %d", HALO_MAX_LAYERS + 1, ndims);
  for (int i = 0; i < ndims; i++)
    if (dims[i] < 1)
      HALO_FAIL(HALO_ERR_ARG, "width %d of the model is %d; widths must be >= 1", i, dims[i]);
  if (c->kind == HALO_MODEL_GIN && c->mlp_hidden < 1)
    HALO_FAIL(HALO_ERR_ARG, "GIN's MLP width is %d; it must be >= 1", c->mlp_hidden);
  if (c->kind == HALO_MODEL_GAT) {
    if (c->heads < 1 || c->output_heads < 1)
      HALO_FAIL(HALO_ERR_ARG, "GAT has %d heads and %d output heads; each must be >= 1", c->heads,
                c->output_heads);
    for (int i = 1; i + 1 < ndims; i++)
      if (dims[i] % c->heads != 0)
        HALO_FAIL(HALO_ERR_ARG, "GAT's hidden width %d is not a multiple of its %d heads", dims[i],
                  c->heads);
  }

  *out = (halo_model_desc){.config = *c, .kind = c->kind, .layers = ndims - 1};
  memcpy(out->dims, dims, (size_t)ndims * sizeof *dims);
  int64_t off = 0, run = 0;
  for (int l = 0; l < out->layers; l++) {
    halo_layer_desc *ly = &out->layer[l];
    ly->d_in = dims[l];
    ly->d_out = dims[l + 1];
    ly->d_mid = c->kind == HALO_MODEL_GIN ? c->mlp_hidden : ly->d_out;
    ly->heads = 1;
    if (c->kind == HALO_MODEL_GAT) {
      /* Hidden layers concatenate their heads (d_out = K·F'), the output
       * layer averages its own (F' = d_out). */
      const int top = l + 1 == out->layers;
      ly->heads = top ? c->output_heads : c->heads;
      ly->concat = !top;
      ly->d_mid = top ? ly->heads * ly->d_out : ly->d_out;
    }
    ly->residual = !c->residual                     ? HALO_RESIDUAL_NONE
                   : l > 0 && ly->d_in == ly->d_out ? HALO_RESIDUAL_IDENTITY
                                                    : HALO_RESIDUAL_PROJECT;
    layer_tensors(c, ly, l + 1 < out->layers ? c->norm : 0, &off, &run);
    layer_comm(c, l, ly, &out->comm[l]);
    out->shape[l] = ly->shape;
  }
  out->params = off;
  out->running = run;
done:
  return st;
}

halo_model_comm halo_model_comm_of(const halo_model_desc *d) {
  return (halo_model_comm){.layers = d->layers, .layer = d->comm};
}

const char *halo_model_edge_weights_refusal(halo_model_kind kind) {
  switch (kind) {
    case HALO_MODEL_GCN:
    case HALO_MODEL_SAGE:
      return NULL;
    case HALO_MODEL_GIN:
      return "GIN takes no edge weights (PyG's GINConv has no edge_weight)";
    case HALO_MODEL_GAT:
      return "GAT takes no edge weights (PyG's GATConv learns its own coefficients)";
  }
  return "this model takes no edge weights";
}
