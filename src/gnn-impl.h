/* Private to src/: the model's state, and the layer-kind table that GCN,
 * GraphSAGE, GIN and GAT fill in (layer-gcn.c, layer-sage.c, layer-gin.c,
 * layer-gat.c).
 *
 * A model is a list of layers, a loss (softmax cross-entropy, or binary
 * cross-entropy for a multi-label shard; net-step.c) and an optimiser
 * (halo-optim.h).  What a layer has (its parameters, its
 * shape, its exchanges) is in its description (halo-model.h), which the
 * predictor reads without a graph; how it runs is its kind's table here:
 * its buffers in the plan, its forward and its backward.  Everything
 * between layers (dropout, the activation, the exact gradient sums) is the
 * model's, in net-step.c and gnn-ops.c; its set-up is net-setup.c and
 * net-input.c.
 */
#ifndef HALO_GNN_IMPL_H
#define HALO_GNN_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "gnn-bufs.h"
#include "halo-backend-impl.h"
#include "halo-exchange.h"
#include "halo-model.h"
#include "halo-net.h"
#include "halo-optim.h"

enum { SPLIT_TRAIN = 0, SPLIT_VALID = 1, SPLIT_TEST = 2 };

/* A layer's input as its kind reads it: dense rows (n_all × d_in with halo
 * room, the owned rows filled; ÂX of a cached layer has n_owned rows), or
 * for the first layer a CSR matrix S (n_owned × d_in) with its transpose,
 * holding this epoch's (dropped) values.  With drop_p > 0 (the fused input
 * dropout, gnn_bufs_input_fused) the dense rows are X itself, and the
 * products that read them (gnn_input_mm, gnn_input_mm_acc, gnn_input_term)
 * apply the dropout keyed drop_key, one block of rows at a time through xd:
 * the same values a dropped copy would hold, never written whole. */
typedef struct layer_input {
  const float *dense; /* NULL when sparse */
  halo_csr sparse, sparse_t;
  /* Set when Sᵀ's values were not dropped this epoch (gnn_bufs_st_perm):
   * its non-zero k's value is then sparse.values[t_perm[k]], which only the
   * exact gradient reads (grad_term.a_perm). */
  const int32_t *t_perm;
  float drop_p;
  uint64_t drop_key;
  const float *ax; /* the evaluation's ÂX of layer 0 (halo_layer_desc.eval_cached), or NULL */
} layer_input;

/* How the rows split into interior rows (no halo column) and boundary
 * rows, and whether the interior rows are the prefix [0, n_interior). */
typedef struct row_split {
  int64_t n_interior, n_boundary;
  int contiguous;
} row_split;

/* A layer: its description, its kind, and its buffers (each allocated
 * from the plan entry of the same name when the plan sizes it). */
typedef struct layer {
  const halo_layer_desc *desc;
  const struct layer_kind *kind;
  int index;
  int32_t d_in, d_mid, d_out;
  halo_buf hd;   /* l >= 1: dropout(act(Z_{l-1})), n_all × d_in */
  halo_buf t;    /* transform first: H·W, n_all × d_mid */
  halo_buf ah;   /* aggregate first: the aggregated H, n_owned × d_in */
  halo_buf z1;   /* GIN: the MLP's hidden activations, n_owned × d_mid; GAT: the heads' outputs */
  halo_buf norm; /* GraphSAGE --sage-normalize: the rows' norms, n_owned */
  halo_buf arg;  /* GraphSAGE --aggr max, l >= 1: arg-max global ids, int32, n_all × d_in */
  halo_buf xhat, rstd;            /* --norm layer: LayerNorm's normalised rows and 1/σ;
                                     --norm batch: xhat alone (the output site's) */
  halo_buf xhat1;                 /* --norm batch, GIN: the MLP site's xhat, n_owned × d_mid */
  halo_buf score, node, att_grad; /* GAT: scores, node terms, attention terms (gnn-bufs.h) */
  halo_buf z; /* n_owned × d_out; the activation applied in place below the top */
  int exact_e[HALO_MAX_TENSORS]; /* deterministic: each tensor's grid exponent */
  /* deterministic: max |hd| over the owned rows, from training's dropout
   * pass (dropout_to_max), when hd_max_valid; the bound of the gradient
   * terms whose A is hd, without a pass of max_abs. */
  float hd_max;
  int hd_max_valid;
} layer;

/* A matrix the layers aggregate with, and its view for the exchange's
 * split: its trailing rows when the interior rows are [0, n_interior). */
typedef struct adj_matrix {
  halo_csr host, dev;
  halo_csr boundary; /* view of dev's rows [n_interior, n_owned); never freed */
  /* --halo-aggregate auto (gnn-cover.c): the rows this part sends, as
   * combinations of its owned rows (a host CSR, cover rows × n_all); host
   * and dev are then the receiver's matrix A'.  Empty (rows 0, no indptr)
   * under post. */
  halo_csr combine;
} adj_matrix;

struct halo_net {
  int64_t layer_bytes[HALO_MAX_LAYERS][2]; /* the last step's, as halo_net_stats has them */
  MPI_Comm comm;
  halo_backend *be;
  const halo_backend_ops *ops;
  halo_net_options opt;
  halo_net_info info;
  halo_exchange *plan;
  int nlayers;
  layer layers[HALO_MAX_LAYERS];
  int64_t n_owned, n_all;

  /* The aggregation forward and, when it is not symmetric (GraphSAGE's
   * mean), its transpose for the backward; bwd points at fwd otherwise.
   * Rows split for the exchange: n_interior rows with no halo column,
   * multiplied while the messages travel, and n_boundary rows after, as
   * two contiguous blocks (contiguous) or through the row lists. */
  adj_matrix adj_fwd, adj_bwd_own;
  const adj_matrix *adj_bwd;
  int contiguous;
  halo_buf interior, boundary;
  int64_t n_interior, n_boundary;
  halo_buf global_id; /* int64, n_all */

  /* The first layer's input: X (transform, aggregate) or ÂX (cached), dense
   * or, when sparse_in, as a CSR matrix S (n_owned × F) with its transpose
   * Sᵀ for dW = Sᵀ·dT. */
  int sparse_in;
  halo_buf x;  /* dense X, n_owned × F */
  halo_buf xd; /* dense dropout(X) with halo room, n_all × F */
  int x_fused; /* gnn_bufs_input_fused: xd is one block of rows, masked as read */
  halo_buf ax; /* dense cached ÂX, n_owned × F */
  halo_csr s_host, st_host, s_csr, st_csr; /* S and Sᵀ: host arrays, backend copies */
  halo_buf s_drop, st_drop; /* dropped values of S and Sᵀ (X with input dropout only) */
  halo_buf st_perm;         /* or, for Sᵀ, where its non-zeros are in S (gnn_bufs_st_perm) */

  /* Labels and the three splits. */
  halo_buf labels;
  halo_buf split[3];
  int64_t split_n[3];

  /* Flat parameters, gradients and Adam moments. */
  int64_t nparams;
  halo_buf params, grads, adam_m, adam_v;
  float *host_grads; /* MPI staging for device backends */

  /* Deterministic mode: each parameter's gradient as an exact sum
   * (HALO_EXACT_LIMBS int64 limbs per parameter, laid out as the
   * parameters, then nparams int64: the same sums packed for the
   * allreduce; with a fused input dropout, then one block's limbs of the
   * first layer's largest tensor: dropped_exact_tn), and the accumulators'
   * workspace for `threads` threads. */
  int64_t *exact;
  /* max |dropout(X)| of the first `rows` rows under the mask `key`, kept by
   * the forward's fused input dropout for the backward's bound. */
  struct drop_max {
    uint64_t key;
    int64_t rows;
    float value;
  } drop_max;
  void *exact_work;
  size_t exact_work_bytes; /* its size: the plan's, or more (gnn-ops.c, exact_work_for) */
  int threads;
  halo_optim optim; /* --optimizer, one group per layer */
  double grad_norm; /* the last update's gradient norm (with --clip-grad-norm) */

  /* --norm batch (gnn-batchnorm.c), host memory: the running statistics
   * (info.model.running floats, laid out as halo_layer_desc.bn_running
   * says), each site's 1/sqrt(var + eps) of the last training forward
   * (half as many: a site at running offset r keeps its own at r/2), and
   * the column sums' scratch (4 × the widest site, in double; with
   * --deterministic their limbs).  bn_rows: the owned rows of every rank,
   * N of the statistics. */
  float *bn_running;
  double *bn_scale, *bn_col;
  int64_t *bn_limbs;
  int64_t bn_rows;

  /* Backward ping-pong, n_all × widest; with --residual a third buffer for
   * the residual's share of dH. */
  halo_buf g0, g1, g2;

  /* The buffer plan every allocation is sized from, and the backend bytes
   * the model holds now and held at most. */
  gnn_bufs plan_mem;
  row_split rows;
  int64_t held, held_peak;
  layer_input in0; /* the first layer's input in the last forward pass */
  /* halo_net_share_forward: whether the caller allows it (share_on), and
   * whether the last forward pass (an evaluation's) is the next training
   * step's (ready), with what it cost: its seconds, halo bytes sent,
   * exchange seconds and CPU seconds outside the exchange, which the step
   * that reuses it counts. */
  struct {
    int share_on, ready;
    double seconds, comm_seconds, compute_cpu_seconds;
    int64_t halo_bytes;
  } shared;
  struct {
    int64_t epoch;    /* keys the dropout masks */
    int training;     /* dropout is on */
    int sampled_back; /* a sampled backward pass: aggregations go through
                         gnn_aggregate_sampled_t */
  } pass;             /* the forward pass running, or the last one run */

  /* --halo-sample (net-sample.c): the transpose of adj_fwd's halo columns
   * (n_halo × n_owned, host), and the gradients of the halo rows it makes
   * (n_halo × widest). */
  halo_csr sample_t;
  float *sample_halo;
};

/* --- layer kinds ---------------------------------------------------------- */

typedef struct layer_kind {
  const char *name;
  /* The backend's model ops it runs (HALO_OP_BIT of each; 0: none), and
   * what to call them when a backend lacks one: the model is then refused
   * at set-up (missing_op, net-setup.c). */
  uint32_t model_ops;
  const char *model_ops_what;
  /* Its buffers: sets layer l's entries of the plan (gnn_bufs_set). */
  void (*plan)(const halo_layer_desc *d, int l, int64_t n_owned, int64_t n_all, gnn_bufs *p);
  /* Z = the layer of `in` (bias included), into ly->z.  The backward
   * ping-pong buffers are free for scratch. */
  halo_status (*forward)(halo_net *g, layer *ly, const layer_input *in);
  /* On entry *dz holds dLoss/dZ (n_owned × d_out, n_all rows of room) and
   * *tmp is free; fills the layer's gradients (layer_grads) and, when
   * need_dx, leaves dLoss/dH (n_owned × d_in) in *dz.  May swap the two
   * pointers. */
  halo_status (*backward)(halo_net *g, layer *ly, const layer_input *in, float **dz, float **tmp,
                          int need_dx);
} layer_kind;

extern const layer_kind gnn_layer_gcn, gnn_layer_sage, gnn_layer_gin, gnn_layer_gat;

/* The kind that runs the layers of a model of kind k. */
const layer_kind *gnn_layer_kind_of(halo_model_kind k);

/* --- shared operations (gnn-ops.c) --------------------------------------- */

static inline float *fbuf(const halo_buf *b) { return b->data; }

/* The parameters (or gradients) of tensor k of layer ly. */
static inline float *tensor_of(const halo_buf *flat, const layer *ly, int k) {
  return fbuf(flat) + ly->desc->tensor[k].offset;
}

/* Y = A·X + beta·Y over the owned rows, after exchanging X's halo rows:
 * interior rows while the messages travel, boundary rows after.  X has
 * n_all rows of `cols` floats (packed), Y n_owned rows.  Collective. */
halo_status gnn_aggregate(halo_net *g, const adj_matrix *a, float *x, int32_t cols, float beta,
                          float *y);

/* C (m × n) = A (m × k) · B (k × n), packed; C = A · Bᵀ with B n × k;
 * row by row in a fixed order when deterministic. */
void gnn_mm(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
void gnn_mm_tb(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
               float *c);

/* C += A·B (m × n), through `scratch` (m × n) when deterministic. */
void gnn_mm_acc(halo_net *g, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                float *c, float *scratch);

/* out (n_owned × cols) = H·W for the layer input `in` (d_in columns) and W
 * (d_in × cols): a GEMM, or the SpMM of a sparse input. */
void gnn_input_mm(halo_net *g, const layer_input *in, int32_t d_in, const float *w, int32_t cols,
                  float *out);

/* out[k] = H·w[k] for k < count, as gnn_input_mm does each (the same bits),
 * with the input dropout's mask drawn once a block for all of them. */
void gnn_input_mm_each(halo_net *g, const layer_input *in, int32_t d_in, int count,
                       const float *const *w, int32_t cols, float *const *out);

/* out += H·W, as gnn_input_mm, through `scratch` (n_owned × cols) when
 * deterministic. */
void gnn_input_mm_acc(halo_net *g, const layer_input *in, int32_t d_in, const float *w,
                      int32_t cols, float *out, float *scratch);

/* One gradient of a layer: tensor `tensor` = Aᵀ·B summed over n rows, A
 * with the tensor's rows as columns (dense, or the CSR of Aᵀ), B with its
 * columns; no A (both NULL): the column sums of B, which has as many
 * columns as the tensor has entries (a bias; GAT's attention vectors).  n 0
 * means the owned rows. */
typedef struct grad_term {
  int tensor;
  const float *a_dense;
  const halo_csr *a_sparse_t;
  const int32_t *a_perm; /* a_sparse_t's values are a_values[a_perm[k]] (layer_input.t_perm) */
  const float *a_values;
  const float *b;
  int64_t n;
  float drop_p;      /* a_dense is X under the fused input dropout (layer_input) */
  uint64_t drop_key; /* (gnn_bufs_input_fused) */
} grad_term;

/* Writes every term's gradient: through the backend's products, or,
 * deterministic, as exact sums into the tensors' limbs on grids agreed by
 * every rank (one MPI_Allreduce of the bounds).  Every tensor of the layer
 * must get exactly one term.  Collective when deterministic. */
halo_status gnn_layer_grads(halo_net *g, layer *ly, const grad_term *t, int nterms);

/* The layer input's gradient terms' A: its dense rows, or Sᵀ. */
static inline grad_term gnn_input_term(int tensor, const layer_input *in, const float *b) {
  return (grad_term){.tensor = tensor,
                     .a_dense = in->dense,
                     .a_sparse_t = in->dense ? NULL : &in->sparse_t,
                     .a_perm = in->dense ? NULL : in->t_perm,
                     .a_values = in->dense ? NULL : in->sparse.values,
                     .b = b,
                     .drop_p = in->drop_p,
                     .drop_key = in->drop_key};
}

/* Deterministic mode: sums every rank's limbs and writes the gradients.
 * Collective. */
halo_status gnn_exact_allreduce(halo_net *g);

/* --- boundary sampling (net-sample.c) -------------------------------------- */

/* With --halo-sample p < 1: reserves the exchange's sampled rows and builds
 * sample_t and sample_halo for exchanges of up to `widest` columns.
 * Local. */
halo_status gnn_sample_setup(halo_net *g, const halo_shard *s, int32_t widest);
void gnn_sample_free(halo_net *g);
/* The host bytes gnn_sample_setup allocates. Local. */
int64_t gnn_sample_memory(const halo_shard *s, int32_t widest);
/* Draws epoch `epoch`'s kept boundary rows (no-op without sampling). Local. */
void gnn_sample_epoch(halo_net *g, int64_t epoch);
/* Y = Aᵀ·X of the epoch's sampled matrix (+ beta·Y), the backward of a
 * sampled gnn_aggregate with A = a's transpose: the owned rows of X through
 * `a`, the halo rows' share through sample_t and the reverse exchange.
 * X's halo rows are overwritten. Collective over the neighbours. */
halo_status gnn_aggregate_sampled_t(halo_net *g, const adj_matrix *a, float *x, int32_t cols,
                                    float beta, float *y);
/* --- BatchNorm (gnn-batchnorm.c) ------------------------------------------ */

/* Z (n_owned × the site's columns) through BatchNorm site `site`
 * (HALO_BN_MLP or HALO_BN_OUT) of layer ly, in place.  Training
 * (g->pass.training): with the mean and biased variance of every rank's
 * owned rows, their column sums crossing ranks in one allreduce (double;
 * with --deterministic exact sums, after one allreduce of their bounds),
 * and the running statistics updated (unbiased variance, as torch);
 * xhat kept for the backward.  Evaluation: with the running statistics.
 * Collective in training, local in evaluation. */
halo_status gnn_bn_forward(halo_net *g, layer *ly, int site, float *z);

/* Back through the site of the last training forward: gamma's and beta's
 * gradients (tmp, n_owned × the site's columns, is scratch), then
 * dLoss/dY → dLoss/dZ in place, whose two column sums cross ranks in one
 * allreduce as the forward's do. Collective. */
halo_status gnn_bn_backward(halo_net *g, layer *ly, int site, float *dy, float *tmp);
/* --- --halo-aggregate auto (gnn-cover.c) ---------------------------------- */

/* This part's minimum vertex covers of its cuts, one per peer q: the owned
 * rows in q's cover (mine, local ids) and the halo rows in it (theirs),
 * each in ascending global id; rows[q] = their sum, the rows that cross
 * each way between this part and q; offset[q] = Σ_{q' < q} rows[q']. */
typedef struct gnn_cover {
  int64_t *rows;       /* size parts */
  int64_t *offset;     /* size parts + 1 */
  int64_t *mine_ptr;   /* size parts + 1 */
  int32_t *mine;       /* size mine_ptr[parts] */
  int64_t *theirs_ptr; /* size parts + 1 */
  int32_t *theirs;     /* size theirs_ptr[parts] */
} gnn_cover;

/* The covers of shard s's cuts, each pair's graph in the order both parts
 * build alike (gnn-cover.c). Local. */
halo_status gnn_cover_build(const halo_shard *s, gnn_cover *c);
void gnn_cover_free(gnn_cover *c);

/* keys[r] (size c->offset[parts]) = the id that keys the low-bit rounding
 * of the r-th row this part sends (halo_exchange_cover_set): a covered
 * owned node's global id, as its plain row is keyed, and for a partial sum
 * for node v, gnn_cover_sum_key(global id of v, this part), which no row's
 * key equals.
 * Local. */
void gnn_cover_keys(const halo_shard *s, const gnn_cover *c, int64_t *keys);

/* The rounding id of the partial sum that part `sender` makes for global
 * node gid: negative (the top bit set), so its draw never repeats the draw
 * of a row (whose ids are ≥ 0), in particular not that of node gid's own
 * row crossing the other way; and the sender's part in the low 16 bits, so
 * that the partial sums several parts send for one node round with draws
 * of their own, whose errors do not add up in step at that node's row
 * (global ids below 2^47, parts below 2^16; past that the ids only alias,
 * which correlates draws and breaks nothing). */
static inline int64_t gnn_cover_sum_key(int64_t gid, int32_t sender) {
  return (int64_t)(((uint64_t)gid << 16) ^ (uint64_t)(uint16_t)sender ^ (1ull << 63));
}

/* Rewrites *a, the host matrix of `kind` on shard s, as the receiver's A'
 * of cover c, and makes the sender's *combine (cover rows × n_all, over
 * the owned rows): A'·X' after an exchange of combine·X equals A·X after
 * the plain exchange, to rounding. Local. */
halo_status gnn_cover_matrix(const halo_shard *s, const gnn_cover *c, halo_aggregation kind,
                             halo_csr *a, halo_csr *combine);

/* Entry (i, j) of the aggregation `kind` on shard s, i and j local rows
 * (owned or halo), from the global degrees (gnn-adjacency.c). Local. */
float gnn_aggregation_value(halo_aggregation kind, const halo_shard *s, int64_t i, int64_t j);

/* --- set-up shared by net-setup.c and net-input.c -------------------------- */

/* Allocates plan entry (which, layer) on the backend, counting its bytes
 * (every model buffer is made here); gnn_plan_from_host fills it with a
 * copy of the entry's bytes from host memory. Local. */
halo_status gnn_plan_new(halo_net *g, halo_buf *b, gnn_buf which, int layer);
halo_status gnn_plan_from_host(halo_net *g, halo_buf *b, gnn_buf which, int layer, const void *src);
/* Frees a buffer from gnn_plan_new (accepts an empty one) and empties *b. */
void gnn_buf_del(halo_net *g, halo_buf *b);
/* Copies `bytes` of b into host memory, complete on return. Local. */
halo_status gnn_buf_to_host(const halo_net *g, void *dst, const halo_buf *b, size_t bytes);
/* A host CSR's copy on the backend (the host CSR itself on a host backend). */
halo_status gnn_csr_to_backend(halo_net *g, const halo_csr *host, halo_csr *dev);

/* The model of a shard: its widths from the shard's features and classes,
 * and its layers' shapes, parameters and exchanges. Local. */
halo_status gnn_describe(const halo_shard *s, const halo_net_options *o, halo_model_desc *d);

/* How the shard's rows split into interior and boundary rows. Local. */
row_split gnn_split_of(const halo_shard *s, const halo_net_options *o);
/* The buffer plan's input: the model, the row split, the first layer's
 * input layout. */
gnn_bufs_input gnn_plan_input(const halo_model_desc *d, int device, row_split r, int sparse,
                              int64_t nonzeros);
/* The aggregation matrices on the backend and their row split. Local. */
halo_status gnn_setup_aggregation(halo_net *g, const halo_shard *s, row_split r);
/* The first layer's input, X or ÂX, dense or sparse. Collective. */
halo_status gnn_setup_features(halo_net *g, const halo_shard *s);
/* Turns the evaluation's ÂX (halo_layer_desc.eval_cached) off where the
 * first layer's input will be sparse (halo_net_input_layout), and describes
 * the model again: before the plan and the exchange are sized. Collective. */
halo_status gnn_resolve_eval_cache(halo_net *g, const halo_shard *s);
/* Declares the epoch loop's sparse products to the backend. Local. */
halo_status gnn_prepare_products(halo_net *g);

#endif /* HALO_GNN_IMPL_H */
