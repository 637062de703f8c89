/* A graph neural network trained full-batch over the parts of a
 * partitioned graph, one part per rank: GCN (Kipf & Welling; PyG's
 * GCNConv), GraphSAGE (mean aggregation), GIN or GAT (multi-head attention),
 * as halo_net_options.model says.
 *
 *   H_0 = X (row-normalised by default)
 *   Z_l = layer_l(dropout_l(H_l)) (+ the residual) (then LayerNorm, l < L-1),
 *   H_{l+1} = act(Z_l)   (ReLU or ELU, l < L-1)
 *   loss = mean over the GLOBAL train nodes of softmax cross-entropy on
 *          Z_{L-1}, or, on a multi-label shard, binary cross-entropy with
 *          logits over the labelled (node, task) pairs
 *
 * where layer_l aggregates with Â = D^-1/2 (A + I) D^-1/2 (GCN, D the
 * GLOBAL degree + 1), the neighbours' mean (GraphSAGE), a two-layer MLP of
 * their sum plus (1 + ε) times the node's own row (GIN), or attention over
 * A + I (GAT);
 * docs/models.md gives each model's math.  The parameters are trained by
 * Adam.
 *
 * Training is the same function of the data whatever the number of parts:
 * weights come from halo_rng keyed by (seed, layer, tensor, row, column),
 * dropout masks by (seed, epoch, layer, global node id, column), and every
 * row of the aggregation is summed in ascending global id.  Each layer
 * exchanges its narrow side, and a first layer with no input dropout has
 * its aggregation of X computed once, exactly as the model's description
 * says (halo-model.h), from which partition/halo-predict.h counts the
 * bytes.
 */
#ifndef HALO_NET_H
#define HALO_NET_H

#include <mpi.h>
#include <stdint.h>

#include "halo-backend.h"
#include "halo-model-options.h"
#include "halo-model.h"
#include "halo-shard.h"
#include "halo-spmm.h"
#include "halo-status.h"

/* halo_net_options and halo_activation: model/halo-model-options.h (one row per option). */

/* The reference settings: 2 layers, 16 hidden, lr 0.01, weight decay 5e-4 on
 * the first layer, dropout 0.5 on the input and the hidden layer, seed 0,
 * normalised features. Local. */
void halo_net_options_default(halo_net_options *o);

typedef struct halo_net halo_net;

/* What one training step or evaluation did on this rank. */
typedef struct halo_net_stats {
  double loss_sum;         /* Σ cross-entropy over this rank's train nodes (steps only) */
  int64_t correct[3];      /* train, valid, test nodes classified right (evaluation only) */
  double eval_loss_sum[3]; /* Σ cross-entropy over them, without dropout (evaluation only) */
  /* Bytes this rank handed to MPI_Isend in each layer's forward [l][0] and
   * backward [l][1] exchanges (steps only; they sum to halo_bytes). */
  int64_t layer_bytes[HALO_MAX_LAYERS][2];
  int64_t halo_bytes;      /* bytes this rank handed to MPI_Isend in halo exchanges */
  int64_t allreduce_bytes; /* bytes this rank handed to MPI_Allreduce (gradients) */
  double seconds;          /* wall time of the call */
  double comm_seconds;     /* part of it spent in exchanges and the allreduce */
  double allreduce_seconds; /* part of comm_seconds in the gradient allreduce (steps only) */
  /* This process's CPU seconds in the call outside them (steps only): its
   * work, whether or not it had a core to itself (core/halo-clock.h). */
  double compute_cpu_seconds;
} halo_net_stats;

/* Builds the model for this rank's part: the exchange plan, Â, features,
 * parameters (Glorot-uniform weights, zero biases) and every buffer the epoch
 * loop uses.  Without input dropout this is where Â·X is computed, with one
 * exchange.  The shard is only read during the call: the model copies what
 * it needs, and the caller may free the shard as soon as this returns.
 * Every rank returns the same success or failure. Collective. */
halo_status halo_net_create(MPI_Comm comm, halo_backend *be, const halo_shard *s,
                            const halo_net_options *o, halo_net **out);

/* Frees the model; accepts NULL and sets *g = NULL. Local. */
void halo_net_destroy(halo_net **g);

/* Forward and backward pass of training epoch `epoch` (dropout keyed by it)
 * and one MPI_Allreduce that sums the weight gradients of all ranks.  The
 * gradients are then those of the global mean loss.  A failure on one rank
 * (a backend fault, a failed copy) returns before the allreduce that its
 * peers are in: the caller must then end the job (halo-train calls
 * MPI_Abort), not agree on the status. Collective. */
halo_status halo_net_gradients(halo_net *g, int64_t epoch, halo_net_stats *out);

/* One optimiser step (--optimizer, src/halo-optim.h) at the rate of the
 * last halo_net_set_lr (--lr until then) with the gradients of the last
 * halo_net_gradients, clipped first to --clip-grad-norm.  The gradients
 * are the same on every rank after their allreduce, so their norm is too
 * (summed in double in a fixed order: with --deterministic it does not
 * depend on P). Local. */
halo_status halo_net_update(halo_net *g);

/* The learning rate of the next updates (the schedule's). Local. */
void halo_net_set_lr(halo_net *g, float lr);

/* The L2 norm of the gradients the last update saw, before clipping; 0
 * before the first, and unless --clip-grad-norm is set. Local. */
double halo_net_grad_norm(const halo_net *g);

/* halo_net_gradients then halo_net_update. Collective. */
halo_status halo_net_step(halo_net *g, int64_t epoch, halo_net_stats *out);

/* Completes the stale exchange's messages still in flight (--halo-stale);
 * the next training step exchanges fresh rows.  Without --halo-stale,
 * nothing.  Collective. */
halo_status halo_net_drain(halo_net *g);

/* Forward pass without dropout; counts correct predictions on this rank's
 * train, valid and test nodes and sums their losses.  Its exchanges are not part of the training
 * step's predicted volume and are reported apart. Collective. */
halo_status halo_net_evaluate(halo_net *g, halo_net_stats *out);

/* With on, the next halo_net_evaluate promises that halo_net_step follows
 * it with no other change to the model: when the model's training forward
 * pass is its evaluation's (no dropout of any kind, no BatchNorm, fp32
 * fresh exchanges, no --halo-sample), that step reuses the evaluation's
 * forward pass instead of running its own, the same computation bit for
 * bit, and the forward's time, halo bytes and communication time are
 * counted in the step (which the epoch's prediction covers), the
 * evaluation reporting its own share: the losses.  Off (the default)
 * every step runs its forward pass; halo_net_evaluate resets it. Local
 * (every rank must agree). */
void halo_net_share_forward(halo_net *g, int on);

/* Model facts. Local. */
typedef struct halo_net_info {
  halo_model_desc model; /* widths, layer shapes and exchanges */
  int64_t params;        /* number of weights and biases */
  int64_t n_owned, n_halo;
  int64_t n_halo_exchanged; /* rows received per training exchange: n_halo, or with
                               --halo-aggregate auto the covers' rows (≤ n_halo) */
  int64_t global_count[3];  /* train, valid, test nodes over all parts */
  int multilabel;           /* 1: the shards' C columns are binary tasks (BCE loss) */
  int64_t global_scored[3]; /* what the loss and the accuracy of each split
                               average over: its nodes, or with multilabel
                               its labelled (node, task) entries */
  int64_t setup_halo_bytes; /* bytes this rank sent at set-up */
  int sparse_features;      /* 1 when the first layer's input (X, or the
                               cached ÂX) is kept as CSR; equal on every rank */
  int64_t interior_rows;    /* owned rows with no halo neighbour */
  int contiguous_rows;      /* 1 when they are rows [0, interior_rows) and Â is
                               multiplied without row-index lists */
  /* The model's backend buffers at the peak of set-up: as its buffer plan
   * says (the plan halo_net_memory_estimate sums), and as it allocated
   * them.  Equal unless a buffer escaped the plan (tests check). */
  int64_t backend_bytes_planned, backend_bytes_peak;
} halo_net_info;

void halo_net_info_get(const halo_net *g, halo_net_info *out);

/* The description of the model that options *o make on a graph of
 * `features` input columns and `classes` outputs (GAT's hidden layers are
 * heads × hidden wide), as halo_net_create describes it; the checkpoints
 * name their tensors from it.  HALO_ERR_ARG for options no model has.
 * Local. */
halo_status halo_net_describe(const halo_net_options *o, int32_t features, int32_t classes,
                              halo_model_desc *d);

/* Parameters and gradients as one flat array: W_0 (d_0 × d_1, row-major),
 * b_0 (d_1), W_1, b_1, ...  Copies to or from host memory. Local. */
halo_status halo_net_params_get(const halo_net *g, float *out);
halo_status halo_net_params_set(halo_net *g, const float *in);
halo_status halo_net_grads_get(const halo_net *g, float *out);

/* The optimiser's state: Adam's and AdamW's first and second moments m and
 * v, or SGD's momentum buffer in m (v then stays zero), nparams each, laid
 * out as the parameters, and the number of steps taken.  Restoring them
 * with the parameters resumes training exactly (checkpoints). Local. */
halo_status halo_net_adam_get(const halo_net *g, float *m, float *v, int64_t *steps);
halo_status halo_net_adam_set(halo_net *g, const float *m, const float *v, int64_t steps);

/* --norm batch: the running statistics (info.model.running floats, laid
 * out as halo_layer_desc.bn_running says: each site's running mean, then
 * its running variance), which every rank holds alike.  Saving them with
 * the parameters and Adam's state resumes training exactly; a model
 * without BatchNorm has none (copies nothing). Local. */
void halo_net_bn_running_get(const halo_net *g, float *out);
void halo_net_bn_running_set(halo_net *g, const float *in);

/* The last layer's output Z (n_owned × classes) of the last forward pass,
 * copied to host memory. Local. */
halo_status halo_net_logits_get(const halo_net *g, float *out);

/* The input of layer l (0-based, 1 <= l < layers) in the last forward pass:
 * the previous layer's output after its LayerNorm and activation, and
 * after its dropout when that pass trained (none in halo_net_evaluate's),
 * n_owned × d_in rows copied to host memory (--embeddings).  The first
 * layer's input, X, is not kept (a cached layer holds ÂX): HALO_ERR_ARG.
 * Local. */
halo_status halo_net_layer_input_get(const halo_net *g, int l, float *out);

/* What halo_net_create and the epochs allocate for one rank's part, at the
 * peak of set-up, from the same rules as the allocations themselves:
 * `backend` bytes in the backend's memory (a GPU's with a device backend)
 * and `host` bytes besides them in the host's (for the CPU backend both are
 * host memory).  The libraries' own buffers (OpenBLAS, MPI, cuSPARSE's
 * workspaces) are not in it.  Local. */
typedef struct halo_net_memory {
  int64_t backend, host;
} halo_net_memory;

/* How halo_net_create will hold the input features X: as CSR or dense (the
 * same decision over all ranks' X; for a cached ÂX, which only the model
 * computes, the estimate bounds both), and this rank's non-zeros of X once
 * normalised.  Fails alike on every rank. Collective. */
typedef struct halo_net_input {
  int sparse;
  int64_t nonzeros;
  int csr_host; /* a CSR shard's features go to S as they are: no dense host copy */
} halo_net_input;

halo_status halo_net_input_layout(MPI_Comm comm, const halo_shard *s, const halo_net_options *o,
                                  halo_net_input *out);

/* `device`: the backend keeps its own copies (a GPU) and stages halo rows
 * through host memory.  Fails only on widths halo_net_create refuses too. */
halo_status halo_net_memory_estimate(const halo_shard *s, const halo_net_options *o, int device,
                                     const halo_net_input *in, halo_net_memory *out);

/* Â restricted to the part's owned rows, over local columns, each row sorted
 * by global id, self-loop included, values 1/sqrt((deg_i+1)(deg_j+1)) from
 * the global degrees.  *out's arrays are new; free them with halo_csr_free.
 * Local. */
halo_status halo_net_adjacency(const halo_shard *s, halo_csr *out);

/* The aggregation matrix of each model over the part's owned rows, rows
 * sorted by global id, from the global degrees deg (self-loops excluded):
 *   HALO_AGG_SYM     Â: the self-loop included, 1/sqrt((deg_i+1)(deg_j+1))
 *   HALO_AGG_SYM_NOLOOP  D^-1/2 A D^-1/2: 1/sqrt(deg_i·deg_j), no self-loop
 *                    (GCN --gcn-add-self-loops false)
 *   HALO_AGG_SUM     A: 1 (GIN; GraphSAGE --aggr sum and max, which reads
 *                    only its columns; GCN --gcn-normalize false)
 *   HALO_AGG_MEAN    D⁻¹A: 1/deg_i (GraphSAGE; an isolated row is empty)
 *   HALO_AGG_MEAN_T  its transpose, over the same entries: 1/deg_j
 *   HALO_AGG_SELF    A + I: 1, the self-loop included (GAT's edges; GCN
 *                    unnormalised with self-loops)
 * Local. */
typedef enum {
  HALO_AGG_SYM,
  HALO_AGG_SUM,
  HALO_AGG_MEAN,
  HALO_AGG_MEAN_T,
  HALO_AGG_SELF,
  HALO_AGG_SYM_NOLOOP
} halo_aggregation;

halo_status halo_gnn_aggregation(const halo_shard *s, halo_aggregation kind, halo_csr *out);

/* A weighted part (s->edge_weight) for GraphSAGE's weighted mean: refuses
 * (HALO_ERR_RANGE, one line naming the node) a node of its rows or
 * columns that has edges whose weights sum to 0, where the mean or its
 * transpose would divide by zero.  halo_gnn_aggregation checks it too;
 * halo-train calls it first, so that one rank's line speaks for all.
 * Local. */
halo_status halo_net_check_weighted_mean(const halo_shard *s);

#endif /* HALO_NET_H */
