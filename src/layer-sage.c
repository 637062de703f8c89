/* GraphSAGE's layer (PyG's SAGEConv, root weight on):
 *   Z = agg(H)·W_l + b + H·W_r,   agg(H) = M·H, M = D⁻¹A (--aggr mean, the
 *   mean over the neighbours) or A (--aggr sum), or the element-wise max
 *   over the neighbours (--aggr max); an isolated node aggregates to zero,
 * and with --sage-normalize each row of Z divided by its L2 norm.
 *
 * M is not symmetric: the backward aggregates with Mᵀ = A·D⁻¹, whose entry
 * (j, i) is 1/deg_i.  The graph is symmetric, so the owner of j holds the
 * row of Mᵀ for j over the same columns as M's row j, with the global
 * degrees of its halo nodes: it pulls dZ_i (or dZ_i·W_lᵀ) of its halo rows
 * through the forward exchange and sums them in ascending global id, like
 * every other aggregation (docs/models.md, "the backward of the mean").
 *
 * Narrow side: transform first when d_out < d_in (T = H·W_l, exchange T),
 * else aggregate first (exchange H).  H·W_r is local either way.  With
 * input dropout the evaluation's first layer reads the MX made at set-up
 * (eval_cached) and exchanges nothing.
 *
 * The max is not linear, so it always aggregates first, and keeps each
 * output element's arg-max as a global id (lowest id among ties).  Its
 * backward sends dA = dZ·W_lᵀ to the arg-max: the owner of j pulls, for
 * each halo neighbour i, the arg-max ids of row i and then dA_i through
 * the forward exchange (A is symmetric, so j's row lists every i that j
 * belongs to), and adds dA_i[c] where arg_i[c] is j, in ascending global
 * id of i (docs/models.md, "the max aggregator").
 */
#include "gnn-impl.h"

enum { W_L = 0, B = 1, W_R = 2 }; /* the layer's tensors (halo-model.c) */

static void plan(const halo_layer_desc *d, int l, int64_t n, int64_t all, gnn_bufs *p) {
  if (d->shape == HALO_LAYER_TRANSFORM) gnn_bufs_set(p, GNN_BUF_T, l, all * d->d_mid);
  if (d->shape == HALO_LAYER_AGGREGATE) gnn_bufs_set(p, GNN_BUF_AH, l, n * d->d_in);
  if (p->sage_max && l > 0) gnn_bufs_set(p, GNN_BUF_ARG, l, all * d->d_in); /* int32 */
  if (p->sage_normalize) {
    gnn_bufs_set(p, GNN_BUF_Z1, l, n * d->d_out); /* the normalised rows */
    gnn_bufs_set(p, GNN_BUF_NORM, l, n);
  }
}

/* ah = max over each owned row's neighbours of H (exchanged), with the
 * arg-max ids into ly->arg when the layer has them.  Collective. */
static halo_status max_forward(halo_net *g, layer *ly, float *h) {
  halo_status st = HALO_OK;
  HALO_TRY(halo_exchange_begin(g->plan, h, ly->d_in));
  HALO_TRY(halo_exchange_end(g->plan));
  const halo_model_call call = {.op = HALO_OP_SAGE_MAX,
                                .sage_max = {&g->adj_fwd.dev, g->global_id.data, h, ly->d_in,
                                             fbuf(&ly->ah), ly->arg.data}};
  g->ops->model_kernel(g->be, &call);
done:
  return st;
}

/* dh (n_owned × d_in) = the max's backward of da (n_all rows, the owned
 * ones filled): the halo rows' ids, then their da, cross first.
 * Collective. */
static halo_status max_backward(halo_net *g, layer *ly, float *da, float *dh) {
  halo_status st = HALO_OK;
  /* The ids cross as the bits of floats, at fp32 (a low-bit exchange is
   * refused with --aggr max): the exchange's packs and MPI copy bits and
   * compute nothing, so an id that reads as a denormal or a NaN is kept. */
  HALO_TRY(halo_exchange_begin(g->plan, (float *)ly->arg.data, ly->d_in));
  HALO_TRY(halo_exchange_end(g->plan));
  HALO_TRY(halo_exchange_begin(g->plan, da, ly->d_in));
  HALO_TRY(halo_exchange_end(g->plan));
  const halo_model_call call = {
      .op = HALO_OP_SAGE_MAX_BACKWARD,
      .sage_max_backward = {&g->adj_fwd.dev, g->global_id.data, ly->arg.data, da, ly->d_in, dh}};
  g->ops->model_kernel(g->be, &call);
done:
  return st;
}

static halo_status forward(halo_net *g, layer *ly, const layer_input *in) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned;
  float *z = fbuf(&ly->z), *scratch = fbuf(&g->g1);
  const float *w_l = tensor_of(&g->params, ly, W_L), *w_r = tensor_of(&g->params, ly, W_R);
  if (in->ax) {
    /* The evaluation's cached MX (eval_cached): Z = X·W_r + (MX)·W_l, no
     * exchange. */
    gnn_input_mm(g, in, ly->d_in, w_r, ly->d_out, z);
    gnn_mm_acc(g, n, ly->d_out, ly->d_in, in->ax, w_l, z, scratch);
  } else if (ly->desc->shape == HALO_LAYER_TRANSFORM) {
    /* Z = H·W_r, then Z += M·(H·W_l) as the aggregation's beta = 1. */
    const float *w[2] = {w_l, w_r};
    float *out[2] = {fbuf(&ly->t), z};
    gnn_input_mm_each(g, in, ly->d_in, 2, w, ly->d_out, out);
    HALO_TRY(gnn_aggregate(g, &g->adj_fwd, fbuf(&ly->t), ly->d_out, 1.0f, z));
  } else {
    if (g->opt.aggr == HALO_AGGR_MAX)
      HALO_TRY(max_forward(g, ly, (float *)in->dense));
    else
      HALO_TRY(gnn_aggregate(g, &g->adj_fwd, (float *)in->dense, ly->d_in, 0.0f, fbuf(&ly->ah)));
    gnn_mm(g, n, ly->d_out, ly->d_in, fbuf(&ly->ah), w_l, z);
    gnn_mm_acc(g, n, ly->d_out, ly->d_in, in->dense, w_r, z, scratch);
  }
  g->ops->bias_add(g->be, z, n, ly->d_out, tensor_of(&g->params, ly, B));
  if (g->opt.sage_normalize) {
    g->ops->l2_normalize(g->be, z, n, ly->d_out, fbuf(&ly->norm));
    g->ops->copy(g->be, fbuf(&ly->z1), z, n * ly->d_out);
  }
done:
  return st;
}

static halo_status backward(halo_net *g, layer *ly, const layer_input *in, float **dzp,
                            float **tmpp, int need_dx) {
  halo_status st = HALO_OK;
  float *dz = *dzp, *tmp = *tmpp;
  const int64_t n = g->n_owned;
  const float *w_l = tensor_of(&g->params, ly, W_L), *w_r = tensor_of(&g->params, ly, W_R);
  if (g->opt.sage_normalize)
    g->ops->l2_normalize_backward(g->be, dz, fbuf(&ly->z1), fbuf(&ly->norm), n, ly->d_out);
  const grad_term bias = {.tensor = B, .b = dz}, root = gnn_input_term(W_R, in, dz);

  if (ly->desc->shape == HALO_LAYER_TRANSFORM) {
    /* dT = Mᵀ·dZ (into t, free after the forward); dW_l = Hᵀ·dT;
     * dH = dT·W_lᵀ + dZ·W_rᵀ. */
    float *dt = fbuf(&ly->t);
    HALO_TRY(gnn_aggregate(g, g->adj_bwd, dz, ly->d_out, 0.0f, dt));
    const grad_term t[3] = {gnn_input_term(W_L, in, dt), bias, root};
    HALO_TRY(gnn_layer_grads(g, ly, t, 3));
    if (need_dx) {
      gnn_mm_tb(g, n, ly->d_in, ly->d_out, dz, w_r, tmp);
      gnn_mm_tb(g, n, ly->d_in, ly->d_out, dt, w_l, dz);
      g->ops->axpy(g->be, dz, tmp, n * ly->d_in, 1.0f, NULL);
    }
  } else {
    /* dW_l = agg(H)ᵀ·dZ; dH = Mᵀ·(dZ·W_lᵀ), or the max's routing of it,
     * (into ah, free after the gradients) + dZ·W_rᵀ. */
    const grad_term t[3] = {{.tensor = W_L, .a_dense = fbuf(&ly->ah), .b = dz}, bias, root};
    HALO_TRY(gnn_layer_grads(g, ly, t, 3));
    if (need_dx) {
      gnn_mm_tb(g, n, ly->d_in, ly->d_out, dz, w_l, tmp);
      if (g->opt.aggr == HALO_AGGR_MAX)
        HALO_TRY(max_backward(g, ly, tmp, fbuf(&ly->ah)));
      else
        HALO_TRY(gnn_aggregate(g, g->adj_bwd, tmp, ly->d_in, 0.0f, fbuf(&ly->ah)));
      gnn_mm_tb(g, n, ly->d_in, ly->d_out, dz, w_r, tmp);
      g->ops->axpy(g->be, tmp, fbuf(&ly->ah), n * ly->d_in, 1.0f, NULL);
      *dzp = tmp;
      *tmpp = dz;
    }
  }
done:
  return st;
}

const layer_kind gnn_layer_sage = {
    .name = "sage", .plan = plan, .forward = forward, .backward = backward};
