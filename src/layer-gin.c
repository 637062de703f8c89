/* GIN's layer (PyG's GINConv with a 2-layer MLP):
 *   U = (1 + ε)·H + A·H,   Z = ReLU(U·W_1 + b_1)·W_2 + b_2
 * and with --norm batch, Z = ReLU(BN(U·W_1 + b_1))·W_2 + b_2, the MLP of
 * Xu et al. and of PyG's GIN(norm="batch_norm") (gnn-batchnorm.c);
 * with A the adjacency (values 1, no self-loop).  ε is 0 (GIN-0), or a
 * parameter with --gin-train-eps: dε = Σ_i <dU_i, H_i>, an exact sum in
 * deterministic mode like every other gradient.
 *
 * Narrow side: the sum is linear, so when the MLP's width d_mid is below
 * d_in the first linear map goes first: T = H·W_1, exchange T, and
 * Z_1 = (1 + ε)·T + A·T + b_1 (then dε = Σ_i <dZ_1i, T_i>).  Otherwise H is
 * exchanged and aggregated.  A is symmetric, so the backward aggregates
 * with A through the same exchange.  With input dropout the evaluation's
 * first layer of GIN-0 reads U = X + AX, made at set-up (eval_cached), and
 * exchanges nothing.
 */
#include "gnn-impl.h"

enum { W1 = 0, B1 = 1, W2 = 2, B2 = 3, EPS = 4 }; /* the layer's tensors (halo-model.c) */

static void plan(const halo_layer_desc *d, int l, int64_t n, int64_t all, gnn_bufs *p) {
  if (d->shape == HALO_LAYER_TRANSFORM) gnn_bufs_set(p, GNN_BUF_T, l, all * d->d_mid);
  if (d->shape == HALO_LAYER_AGGREGATE) gnn_bufs_set(p, GNN_BUF_AH, l, n * d->d_in);
  gnn_bufs_set(p, GNN_BUF_Z1, l, n * d->d_mid);
}

/* &ε in the parameters, or NULL for GIN-0 (whose tensor EPS, if any, is
 * W_res or LayerNorm's gamma). */
static const float *eps_of(const layer *ly, const halo_buf *flat) {
  const halo_layer_desc *d = ly->desc;
  return d->ntensors > EPS && d->tensor[EPS].kind == HALO_TENSOR_EPS ? tensor_of(flat, ly, EPS)
                                                                     : NULL;
}

static halo_status forward(halo_net *g, layer *ly, const layer_input *in) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned;
  const float *eps = eps_of(ly, &g->params);
  float *z1 = fbuf(&ly->z1);
  if (in->ax) { /* the evaluation's cached U = X + AX (GIN-0: eval_cached), no exchange */
    gnn_mm(g, n, ly->d_mid, ly->d_in, in->ax, tensor_of(&g->params, ly, W1), z1);
  } else if (ly->desc->shape == HALO_LAYER_TRANSFORM) {
    float *t = fbuf(&ly->t);
    gnn_input_mm(g, in, ly->d_in, tensor_of(&g->params, ly, W1), ly->d_mid, t);
    HALO_TRY(gnn_aggregate(g, &g->adj_fwd, t, ly->d_mid, 0.0f, z1));
    g->ops->axpy(g->be, z1, t, n * ly->d_mid, 1.0f, eps);
  } else {
    float *u = fbuf(&ly->ah);
    HALO_TRY(gnn_aggregate(g, &g->adj_fwd, (float *)in->dense, ly->d_in, 0.0f, u));
    g->ops->axpy(g->be, u, in->dense, n * ly->d_in, 1.0f, eps);
    gnn_mm(g, n, ly->d_mid, ly->d_in, u, tensor_of(&g->params, ly, W1), z1);
  }
  g->ops->bias_add(g->be, z1, n, ly->d_mid, tensor_of(&g->params, ly, B1));
  if (ly->desc->bn_tensor[HALO_BN_MLP] >= 0) HALO_TRY(gnn_bn_forward(g, ly, HALO_BN_MLP, z1));
  g->ops->relu(g->be, z1, n * ly->d_mid);
  gnn_mm(g, n, ly->d_out, ly->d_mid, z1, tensor_of(&g->params, ly, W2), fbuf(&ly->z));
  g->ops->bias_add(g->be, fbuf(&ly->z), n, ly->d_out, tensor_of(&g->params, ly, B2));
done:
  return st;
}

static halo_status backward(halo_net *g, layer *ly, const layer_input *in, float **dzp,
                            float **tmpp, int need_dx) {
  halo_status st = HALO_OK;
  float *dz = *dzp, *tmp = *tmpp;
  const int64_t n = g->n_owned;
  const float *eps = eps_of(ly, &g->params);
  const float *w1 = tensor_of(&g->params, ly, W1);
  const int train_eps = eps != NULL;

  /* The MLP's second map: dW_2 = R·dZ, db_2 = Σ dZ; dZ_1 = dZ·W_2ᵀ ⊙ R > 0,
   * into tmp (n_all rows of room: the transform exchanges it). */
  const grad_term t2[2] = {{.tensor = W2, .a_dense = fbuf(&ly->z1), .b = dz},
                           {.tensor = B2, .b = dz}};
  HALO_TRY(gnn_layer_grads(g, ly, t2, 2));
  gnn_mm_tb(g, n, ly->d_mid, ly->d_out, dz, tensor_of(&g->params, ly, W2), tmp);
  g->ops->relu_backward(g->be, tmp, fbuf(&ly->z1), n * ly->d_mid);
  /* Back through the MLP's BatchNorm: dZ is spent, so it is the scratch. */
  if (ly->desc->bn_tensor[HALO_BN_MLP] >= 0)
    HALO_TRY(gnn_bn_backward(g, ly, HALO_BN_MLP, tmp, dz));
  float *dz1 = tmp;

  if (ly->desc->shape == HALO_LAYER_TRANSFORM) {
    /* dT = (1 + ε)·dZ_1 + A·dZ_1 (into dz); dW_1 = Hᵀ·dT; dH = dT·W_1ᵀ. */
    float *dt = dz;
    HALO_TRY(gnn_aggregate(g, g->adj_bwd, dz1, ly->d_mid, 0.0f, dt));
    g->ops->axpy(g->be, dt, dz1, n * ly->d_mid, 1.0f, eps);
    const grad_term t1[3] = {gnn_input_term(W1, in, dt),
                             {.tensor = B1, .b = dz1},
                             {.tensor = EPS, .a_dense = fbuf(&ly->t), .b = dz1, .n = n * ly->d_mid}};
    HALO_TRY(gnn_layer_grads(g, ly, t1, 2 + train_eps));
    if (need_dx) {
      gnn_mm_tb(g, n, ly->d_in, ly->d_mid, dt, w1, tmp);
      *dzp = tmp;
      *tmpp = dz;
    }
  } else {
    /* dW_1 = Uᵀ·dZ_1; dU = dZ_1·W_1ᵀ (into dz); dH = (1 + ε)·dU + A·dU. */
    float *du = dz;
    if (need_dx || train_eps) gnn_mm_tb(g, n, ly->d_in, ly->d_mid, dz1, w1, du);
    const grad_term t1[3] = {{.tensor = W1, .a_dense = fbuf(&ly->ah), .b = dz1},
                             {.tensor = B1, .b = dz1},
                             {.tensor = EPS, .a_dense = in->dense, .b = du, .n = n * ly->d_in}};
    HALO_TRY(gnn_layer_grads(g, ly, t1, 2 + train_eps));
    if (need_dx) {
      HALO_TRY(gnn_aggregate(g, g->adj_bwd, du, ly->d_in, 0.0f, tmp));
      g->ops->axpy(g->be, tmp, du, n * ly->d_in, 1.0f, eps);
      *dzp = tmp;
      *tmpp = dz;
    }
  }
done:
  return st;
}

const layer_kind gnn_layer_gin = {
    .name = "gin", .plan = plan, .forward = forward, .backward = backward};
