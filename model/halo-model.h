/* A model's description: its kind, its layers' widths and, for each layer,
 * its shape, its parameters and what it exchanges.  halo-train builds its
 * model from it and predicts its traffic from it; halo-partition --dims
 * predicts from it too, so the two predictions are one
 * (halo-predict.h, beside it, counts the bytes).  It needs no graph: only the
 * widths and the options that change what crosses between ranks.
 *
 * Every model kind halo trains aggregates linearly over a node's
 * neighbours, so each layer has a narrow side, and each exchanges it
 * (docs/models.md).  A layer maps width d_in = dims[l] to d_out = dims[l+1]
 * through an aggregated width d_mid: the width its first linear map
 * produces (d_out for GCN and GraphSAGE, the MLP's hidden width for GIN).
 *  - "transform first" when d_mid < d_in: T = H·W is made, and T (d_mid
 *    columns) is exchanged and aggregated;
 *  - "aggregate first" otherwise: H (d_in columns) is exchanged and
 *    aggregated, then multiplied;
 *  - GCN only: without input dropout the first layer's Â·X is computed once
 *    at set-up (one exchange of X, d_in columns) and the layer then
 *    exchanges nothing, forward or backward ("cached");
 *  - backward, a layer exchanges its narrow side again, as gradients,
 *    except the first layer when it aggregated first (no gradient with
 *    respect to X is ever computed, and its weight gradients are local).
 *
 * GraphSAGE's max aggregation (--aggr max) is not linear either, so its
 * layers always aggregate first (H, d_in columns, forward); backward a
 * layer after the first exchanges each halo row's arg-max ids (d_in int32
 * columns, the global id of the neighbour that gave each column's max)
 * and then the gradient rows dZ·W_lᵀ (d_in columns), so that the owner of
 * j routes to j exactly the gradients whose max came from j
 * (docs/models.md, "the max aggregator").
 *
 * GAT's aggregation is not linear in H (its weights come from W·H), so its
 * layers always transform first: T = H·W, K heads of F' columns (d_mid =
 * K·F'), is exchanged forward; backward each halo row brings dZ (d_out
 * columns) and three scalars per head (the softmax's row max and sum, and
 * the row's dot product dZ·out), so that the owner of j computes the
 * gradient of every edge that reaches j without any per-edge traffic
 * (docs/models.md, "GAT").
 */
#ifndef HALO_MODEL_H
#define HALO_MODEL_H

#include <stdint.h>

#include "halo-predict.h"
#include "halo-status.h"

#define HALO_MAX_LAYERS 16
/* Parameter tensors of one layer, at most. */
#define HALO_MAX_TENSORS 12

/* The model kinds, one row each: X(ENUM, name).  The row makes the enum
 * value, `--model`'s word (halo_model_kind_names) and the list of words
 * messages show (halo_model_names), in this order; values are stored in
 * checkpoints, so a new kind goes last. */
#define HALO_MODEL_KINDS(X) \
  X(GCN, gcn)               \
  X(SAGE, sage)             \
  X(GIN, gin)               \
  X(GAT, gat)

typedef enum {
#define HALO_MODEL_ENUM_(K, name) HALO_MODEL_##K,
  HALO_MODEL_KINDS(HALO_MODEL_ENUM_)
#undef HALO_MODEL_ENUM_
} halo_model_kind;

/* What normalises each hidden layer's output (--norm; stored in checkpoints
 * under the key "layer_norm", which older files wrote as 0 or 1). */
typedef enum { HALO_NORM_NONE = 0, HALO_NORM_LAYER = 1, HALO_NORM_BATCH = 2 } halo_norm;

/* How a layer runs, which fixes what it exchanges. */
typedef enum {
  HALO_LAYER_CACHED,    /* GCN layer 0 without input dropout: Z = (ÂX)·W, ÂX made at set-up */
  HALO_LAYER_TRANSFORM, /* d_mid < d_in: T = H·W, exchange T, aggregate T */
  HALO_LAYER_AGGREGATE  /* d_mid >= d_in: exchange H, aggregate H, then multiply */
} halo_layer_shape;

/* What a parameter tensor is, for its initial values and the docs. */
typedef enum {
  HALO_TENSOR_WEIGHT, /* rows × cols, Glorot-uniform */
  HALO_TENSOR_BIAS,   /* cols, zeros */
  HALO_TENSOR_SCALE,  /* cols, ones (LayerNorm's gain) */
  HALO_TENSOR_EPS     /* 1, zero (GIN's ε) */
} halo_tensor_kind;

/* One parameter tensor: rows × cols floats at `offset` in the model's flat
 * parameter array, row-major. */
typedef struct halo_param_tensor {
  halo_tensor_kind kind;
  const char *name; /* "W", "b", "W_r", ... */
  int64_t offset, rows, cols;
} halo_param_tensor;

/* The options that change a model's structure (its parameters, shapes or
 * exchanges). */
typedef struct halo_model_config {
  halo_model_kind kind;
  int input_dropout;    /* the input features are dropped out every epoch */
  int32_t mlp_hidden;   /* GIN: the MLP's hidden width (>= 1) */
  int train_eps;        /* GIN: ε is a parameter */
  int residual;         /* every layer adds its input: itself, or projected (W_res) */
  int norm;             /* a halo_norm: 1 LayerNorm, 2 BatchNorm after every hidden layer
                           (gamma, beta); 2 also inside each GIN layer's MLP */
  int32_t heads;        /* GAT: attention heads of every hidden layer (>= 1) */
  int32_t output_heads; /* GAT: heads of the output layer, averaged (>= 1) */
  int sage_max;         /* GraphSAGE --aggr max: aggregates first, and sends arg-max ids back */
  int eval_cache;       /* the evaluation's first layer reads ÂX, made at set-up (GCN,
                           GraphSAGE's mean or sum, and GIN-0, whose cache is X + AX, with
                           input dropout, a dense input, no residual:
                           halo_layer_desc.eval_cached) */
} halo_model_config;

/* How a layer adds its input (--residual). */
typedef enum {
  HALO_RESIDUAL_NONE = 0,
  HALO_RESIDUAL_IDENTITY, /* Z += H: layers after the first whose widths are equal */
  HALO_RESIDUAL_PROJECT   /* Z += H·W_res: the first layer, and where the widths differ */
} halo_residual;

typedef struct halo_layer_desc {
  halo_layer_shape shape;
  /* Layer 0 of a model with config.eval_cache that can use it: training
   * runs `shape`, the evaluation multiplies the ÂX made at set-up (one
   * exchange of X, the set-up traffic of a cached layer) and exchanges
   * nothing in this layer. */
  int eval_cached;
  int32_t d_in, d_mid, d_out;
  halo_residual residual;
  int32_t heads;   /* GAT: attention heads (1 for every other model) */
  int concat;      /* GAT: the heads' outputs are concatenated (hidden layers) or averaged */
  int res_tensor;  /* W_res's index in tensor[], or -1 */
  int norm_tensor; /* LayerNorm's or BatchNorm's gamma (then beta) in tensor[], or -1 */
  /* BatchNorm sites: HALO_BN_MLP (GIN: inside the MLP, d_mid columns, after
   * W_1·+b_1, before its ReLU) and HALO_BN_OUT (the layer's output, d_out
   * columns, where LayerNorm goes).  For each, its gamma's index in
   * tensor[] (beta follows) and the offset of its running mean (then its
   * running variance, as many) in the model's running statistics; -1 when
   * the layer has no such site. */
  int bn_tensor[2];
  int64_t bn_running[2];
  int ntensors;
  halo_param_tensor tensor[HALO_MAX_TENSORS];
  int64_t offset, count; /* the layer's parameters: [offset, offset + count) */
} halo_layer_desc;

typedef struct halo_model_desc {
  halo_model_config config;
  halo_model_kind kind;                    /* config.kind */
  int layers;                              /* L = ndims - 1 */
  int32_t dims[HALO_MAX_LAYERS + 1];       /* input, hidden..., classes */
  halo_layer_shape shape[HALO_MAX_LAYERS]; /* size layers (layer[l].shape) */
  halo_layer_desc layer[HALO_MAX_LAYERS];  /* size layers */
  halo_layer_comm comm[HALO_MAX_LAYERS];   /* size layers */
  int64_t params;                          /* every tensor of every layer */
  int64_t running; /* BatchNorm's running statistics: 2 × the columns of every site */
} halo_model_desc;

/* A layer's BatchNorm sites (halo_layer_desc.bn_tensor, bn_running). */
enum { HALO_BN_MLP = 0, HALO_BN_OUT = 1 };

/* The kinds' names, indexed by halo_model_kind, NULL-terminated (the
 * --model flag's words). */
extern const char *const halo_model_kind_names[];

/* NULL when `kind` takes a weighted graph's edge weights (GCN's gcn_norm,
 * GraphSAGE's weighted mean: docs/models.md, "Edge weights"); else why not,
 * for halo-train's one line ("GIN takes no edge weights (PyG's GINConv has
 * no edge_weight)"). Local. */
const char *halo_model_edge_weights_refusal(halo_model_kind kind);

/* "gcn", "sage", "gin", "gat". Local. */
const char *halo_model_name(halo_model_kind kind);

/* Parses a model name; HALO_ERR_ARG, logging nothing, for any other. Local. */
halo_status halo_model_parse(const char *name, halo_model_kind *out);

/* The names halo_model_parse takes, as "gcn|sage|gin|gat". Local. */
const char *halo_model_names(void);

/* A configuration of `kind` with every option at its default. Local. */
halo_model_config halo_model_config_of(halo_model_kind kind);

/* Describes the model `c` with widths dims[0..ndims-1].  Fails with
 * HALO_ERR_ARG, logging why, for fewer than 2 or more than
 * HALO_MAX_LAYERS+1 widths, a width below 1, a GIN without an MLP
 * width, or a GAT hidden width that its heads do not divide. Local. */
halo_status halo_model_describe(const halo_model_config *c, const int32_t *dims, int ndims,
                                halo_model_desc *out);

/* The description's exchanges, for the predictor: a view into *d. Local. */
halo_model_comm halo_model_comm_of(const halo_model_desc *d);

#endif /* HALO_MODEL_H */
