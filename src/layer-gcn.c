/* GCN's layer (PyG's GCNConv): Z = Â·H·W + b, Â = D^-1/2 (A + I) D^-1/2.
 *
 * Each layer takes one of three shapes (halo-model.h):
 *   cached      (layer 0, no input dropout)  Z = (ÂX)·W, ÂX computed once
 *   transform   (d_out < d_in)               T = H·W, exchange T, Z = Â·T
 *   aggregate   (d_out >= d_in)              exchange H, Z = (Â·H)·W
 * and layer 0's evaluation, with input dropout, reads the ÂX made at set-up
 * (eval_cached) as the cached shape does.
 * and the backward pass mirrors it with the same exchange applied to
 * gradients (Âᵀ = Â).  The first layer's input, X or ÂX, may be sparse
 * (layer_input): its products with W and with dZ or dT go through the SpMM.
 */
#include "gnn-impl.h"

enum { W = 0, B = 1 }; /* the layer's tensors (halo-model.c) */

static void plan(const halo_layer_desc *d, int l, int64_t n, int64_t all, gnn_bufs *p) {
  if (d->shape == HALO_LAYER_TRANSFORM) gnn_bufs_set(p, GNN_BUF_T, l, all * d->d_mid);
  if (d->shape == HALO_LAYER_AGGREGATE) gnn_bufs_set(p, GNN_BUF_AH, l, n * d->d_in);
}

static halo_status forward(halo_net *g, layer *ly, const layer_input *in) {
  halo_status st = HALO_OK;
  const float *w = tensor_of(&g->params, ly, W);
  float *z = fbuf(&ly->z);
  switch (in->ax ? HALO_LAYER_CACHED : ly->desc->shape) {
    case HALO_LAYER_CACHED: /* ÂX holds no halo row: Z is local, with no exchange */
      if (in->ax)
        gnn_mm(g, g->n_owned, ly->d_out, ly->d_in, in->ax, w, z);
      else
        gnn_input_mm(g, in, ly->d_in, w, ly->d_out, z);
      break;
    case HALO_LAYER_TRANSFORM:
      gnn_input_mm(g, in, ly->d_in, w, ly->d_out, fbuf(&ly->t));
      HALO_TRY(gnn_aggregate(g, &g->adj_fwd, fbuf(&ly->t), ly->d_out, 0.0f, z));
      break;
    case HALO_LAYER_AGGREGATE:
      HALO_TRY(gnn_aggregate(g, &g->adj_fwd, (float *)in->dense, ly->d_in, 0.0f, fbuf(&ly->ah)));
      gnn_mm(g, g->n_owned, ly->d_out, ly->d_in, fbuf(&ly->ah), w, z);
      break;
  }
  g->ops->bias_add(g->be, z, g->n_owned, ly->d_out, tensor_of(&g->params, ly, B));
done:
  return st;
}

static halo_status backward(halo_net *g, layer *ly, const layer_input *in, float **dzp,
                            float **tmpp, int need_dx) {
  halo_status st = HALO_OK;
  float *dz = *dzp, *tmp = *tmpp;
  const float *w = tensor_of(&g->params, ly, W);
  const int64_t n = g->n_owned;
  const grad_term bias = {.tensor = B, .b = dz};
  switch (ly->desc->shape) {
    case HALO_LAYER_CACHED: { /* dW = (ÂX)ᵀ·dZ, db = Σ dZ, no exchange */
      const grad_term t[2] = {gnn_input_term(W, in, dz), bias};
      HALO_TRY(gnn_layer_grads(g, ly, t, 2));
      break;
    }
    case HALO_LAYER_TRANSFORM: { /* dT = Âᵀ·dZ = Â·dZ; dW = Hᵀ·dT; db = Σ dZ; dH = dT·Wᵀ */
      HALO_TRY(gnn_aggregate(g, g->adj_bwd, dz, ly->d_out, 0.0f, tmp));
      const grad_term t[2] = {gnn_input_term(W, in, tmp), bias};
      HALO_TRY(gnn_layer_grads(g, ly, t, 2));
      if (need_dx) gnn_mm_tb(g, n, ly->d_in, ly->d_out, tmp, w, dz);
      break;
    }
    case HALO_LAYER_AGGREGATE: { /* dW = (ÂH)ᵀ·dZ, db = Σ dZ; dH = Â·(dZ·Wᵀ) */
      const grad_term t[2] = {{.tensor = W, .a_dense = fbuf(&ly->ah), .b = dz}, bias};
      HALO_TRY(gnn_layer_grads(g, ly, t, 2));
      if (need_dx) {
        gnn_mm_tb(g, n, ly->d_in, ly->d_out, dz, w, tmp);
        HALO_TRY(gnn_aggregate(g, g->adj_bwd, tmp, ly->d_in, 0.0f, dz));
      }
      break;
    }
  }
done:
  return st;
}

const layer_kind gnn_layer_gcn = {
    .name = "gcn", .plan = plan, .forward = forward, .backward = backward};
