/* GAT's layer (PyG's GATConv; Veličković et al., ICLR 2018), K heads of F
 * columns:
 *   T = H·W,   src_j,k = a_src[k]·T[j, k],   dst_i,k = a_dst[k]·T[i, k],
 *   α_ij,k = softmax over j ∈ N(i) ∪ {i} of LeakyReLU_0.2(src_j,k + dst_i,k),
 *   out_i,k = Σ_j dropout(α_ij,k) T[j, k],
 *   Z_i = ‖_k out_i,k + b (hidden layers) or mean_k out_i,k + b (output).
 *
 * Forward, the owner of i needs T of its halo rows: T is exchanged (K·F
 * columns), and every rank computes the scores of all its rows, halo rows
 * included, from them.  Backward, the gradient reaching T[j] comes from
 * every i that attends to j, some of them on other ranks.  The graph is
 * symmetric, so those i are row j's columns: the owner of j pulls, for its
 * halo rows i, dZ_i and three scalars per head (the softmax's max and
 * inverse sum, and c_i = dout_i·out_i) through the forward exchange,
 * recomputes α_ij from them (core/halo-gat.h) and sums in ascending global
 * id, as every other aggregation does.  No per-edge value crosses ranks or
 * is stored: the coefficients are recomputed from per-node terms in each
 * pass (docs/models.md, "GAT").
 */
#include "gnn-impl.h"

enum { W = 0, A_SRC = 1, A_DST = 2, B = 3 }; /* the layer's tensors (halo-model.c) */

/* LeakyReLU's negative slope, PyG's default and the paper's. */
static const float SLOPE = 0.2f;

static void plan(const halo_layer_desc *d, int l, int64_t n, int64_t all, gnn_bufs *p) {
  const int64_t k = d->heads;
  gnn_bufs_set(p, GNN_BUF_T, l, all * d->d_mid);
  gnn_bufs_set(p, GNN_BUF_SCORE, l, all * 2 * k);
  gnn_bufs_set(p, GNN_BUF_Z1, l, n * d->d_mid);
  gnn_bufs_set(p, GNN_BUF_NODE, l, all * (d->d_out + 3 * k));
  gnn_bufs_set(p, GNN_BUF_ATT_GRAD, l, 2 * n * d->d_mid);
}

/* The layer's shape and this pass's attention dropout. */
static halo_gat_layer shape_of(const halo_net *g, const layer *ly) {
  const halo_layer_desc *d = ly->desc;
  const float p = g->pass.training ? g->opt.attn_dropout : 0.0f;
  return (halo_gat_layer){.heads = d->heads,
                          .f = d->d_mid / d->heads,
                          .concat = d->concat,
                          .slope = SLOPE,
                          .key = halo_rng_key(g->opt.seed, HALO_RNG_ATTENTION,
                                              (uint64_t)g->pass.epoch, (uint64_t)ly->index),
                          .p = p};
}

static halo_status forward(halo_net *g, layer *ly, const layer_input *in) {
  halo_status st = HALO_OK;
  const halo_gat_layer s = shape_of(g, ly);
  const int64_t n = g->n_owned;
  float *t = fbuf(&ly->t), *score = fbuf(&ly->score);
  const float *a_src = tensor_of(&g->params, ly, A_SRC), *a_dst = tensor_of(&g->params, ly, A_DST);

  /* T's owned rows, then their scores while T's halo rows travel, then the
   * halo rows' scores. */
  gnn_input_mm(g, in, ly->d_in, tensor_of(&g->params, ly, W), ly->d_mid, t);
  HALO_TRY(halo_exchange_begin(g->plan, t, ly->d_mid));
  const halo_model_call owned = {.op = HALO_OP_GAT_SCORES,
                                 .gat_scores = {&s, t, n, a_src, a_dst, score}};
  const halo_model_call halo = {
      .op = HALO_OP_GAT_SCORES,
      .gat_scores = {&s, t + n * ly->d_mid, g->n_all - n, a_src, a_dst, score + n * 2 * s.heads}};
  const halo_model_call attend = {.op = HALO_OP_GAT_ATTEND,
                                  .gat_attend = {&s, &g->adj_fwd.dev, g->global_id.data, t, score,
                                                 fbuf(&ly->z1), fbuf(&ly->z), fbuf(&ly->node)}};
  g->ops->model_kernel(g->be, &owned);
  HALO_TRY(halo_exchange_end(g->plan));
  g->ops->model_kernel(g->be, &halo);
  g->ops->model_kernel(g->be, &attend);
  g->ops->bias_add(g->be, fbuf(&ly->z), n, ly->d_out, tensor_of(&g->params, ly, B));
done:
  return st;
}

static halo_status backward(halo_net *g, layer *ly, const layer_input *in, float **dzp,
                            float **tmpp, int need_dx) {
  halo_status st = HALO_OK;
  const halo_gat_layer s = shape_of(g, ly);
  const int64_t n = g->n_owned;
  float *dz = *dzp, *dt = *tmpp, *node = fbuf(&ly->node), *att = fbuf(&ly->att_grad);

  /* The node terms of the owned rows, then the halo rows' from their
   * owners; then every edge, from the side of the node it reaches. */
  const halo_model_call terms = {.op = HALO_OP_GAT_NODE_TERMS,
                                 .gat_node_terms = {&s, dz, fbuf(&ly->z1), n, node}};
  const halo_model_call back = {
      .op = HALO_OP_GAT_ATTEND_BACKWARD,
      .gat_attend_backward = {&s, &g->adj_fwd.dev, g->global_id.data, fbuf(&ly->t),
                              fbuf(&ly->score), node, tensor_of(&g->params, ly, A_SRC),
                              tensor_of(&g->params, ly, A_DST), dt, att}};
  g->ops->model_kernel(g->be, &terms);
  HALO_TRY(halo_exchange_begin(g->plan, node, halo_gat_node_cols(&s)));
  HALO_TRY(halo_exchange_end(g->plan));
  g->ops->model_kernel(g->be, &back);

  /* dW = Hᵀ·dT; da_src, da_dst: the column sums of their terms; db = Σ dZ. */
  const grad_term t[4] = {gnn_input_term(W, in, dt),
                          {.tensor = A_SRC, .b = att},
                          {.tensor = A_DST, .b = att + n * ly->d_mid},
                          {.tensor = B, .b = dz}};
  HALO_TRY(gnn_layer_grads(g, ly, t, 4));
  if (need_dx) gnn_mm_tb(g, n, ly->d_in, ly->d_mid, dt, tensor_of(&g->params, ly, W), dz);
done:
  return st;
}

const layer_kind gnn_layer_gat = {.name = "gat",
                                  .model_ops = HALO_OP_BIT(GAT_SCORES) | HALO_OP_BIT(GAT_ATTEND) |
                                               HALO_OP_BIT(GAT_NODE_TERMS) |
                                               HALO_OP_BIT(GAT_ATTEND_BACKWARD),
                                  .model_ops_what = "the attention kernels",
                                  .plan = plan,
                                  .forward = forward,
                                  .backward = backward};
