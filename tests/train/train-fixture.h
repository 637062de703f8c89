/* Test fixture of the trainer: small random labelled graphs, split into
 * shards in memory by an independent, deliberately simple implementation of
 * the shard contract (shard/halo-shard.h), and a dense double-precision
 * reference GCN over the whole graph. */
#ifndef TRAIN_FIXTURE_H
#define TRAIN_FIXTURE_H

#include <stddef.h> /* halo-shard.h uses size_t */
#include <stdint.h>

#include "halo-shard.h"

typedef struct fx_spec {
  int64_t nodes;
  int32_t avg_degree;    /* edges drawn per node (before symmetrisation), x2 */
  int32_t features;
  float density;         /* fraction of non-zero features */
  int32_t classes;
  int32_t parts;
  uint64_t seed;
} fx_spec;

/* A symmetric graph without self-loops or duplicates, dense features. */
typedef struct fx_graph {
  int64_t n, m;
  int64_t *indptr;   /* size n+1 */
  int64_t *indices;  /* size m, ascending per row */
  int32_t f, c;
  float *x;          /* n × f */
  int32_t *labels;   /* size n; -1 for unlabelled */
  uint8_t *split;    /* size n: 0 none, 1 train, 2 valid, 3 test */
  int32_t *part;     /* size n: owner part */
  int32_t parts;
  double *w;         /* size m: edge weights, w(u,v) = w(v,u), each a float exactly; NULL:
                        unweighted (fx_graph_weigh sets them) */
} fx_graph;

/* calloc that aborts with a message when memory runs out (tests only). */
void *fx_xcalloc(size_t n, size_t size);

/* The spec of "nodes degree features density classes" (argv[0..4], so
 * FX_SPEC_ARGS words), as the probes take it on their command line. */
enum { FX_SPEC_ARGS = 5 };
fx_spec fx_spec_parse(char *const *argv, int32_t parts, uint64_t seed);

/* Builds the graph of `spec`, with a random part for every node. */
fx_graph *fx_graph_new(const fx_spec *spec);
void fx_graph_free(fx_graph *g);

/* Gives g symmetric edge weights k/8, k in [1, 24], drawn per unordered
 * pair from `seed`: the reference uses them as PyG's edge_weight (GCN's
 * gcn_norm, GraphSAGE's weighted mean), fx_shard_new stores them. */
void fx_graph_weigh(fx_graph *g, uint64_t seed);

/* The shard of part p, as halo-partition would write it. */
halo_shard *fx_shard_new(const fx_graph *g, int32_t p, uint64_t run_id);

/* Writes manifest.h5 and every part to `dir` (created). Returns 0 on success. */
int fx_write_shards(const fx_graph *g, const char *dir, uint64_t run_id);

/* The dense reference model, in double: GCN, GraphSAGE-mean, GIN or GAT,
 * each written from its paper's (PyG's) formula, not from halo's code. */
enum { FX_GCN = 0, FX_SAGE = 1, FX_GIN = 2, FX_GAT = 3 };

typedef struct fx_model {
  int layers;
  int32_t dims[8];
  float dropout, input_dropout;
  uint64_t seed;
  int normalize;
  int64_t epoch;       /* keys the dropout masks */
  int kind;            /* FX_GCN (0, the default), FX_SAGE, FX_GIN */
  int32_t mlp_hidden;  /* GIN: the MLP's width */
  int train_eps;       /* GIN: ε is a parameter */
  int sage_normalize;  /* SAGE: L2-normalised output rows */
  int elu;             /* ELU between layers instead of ReLU */
  int gelu;            /* GELU, x·Φ(x), between layers instead */
  double negative_slope; /* > 0: LeakyReLU of this slope between layers instead */
  int residual;        /* Z += H (later layers of equal widths) or H·W_res */
  int layer_norm;      /* LayerNorm (gamma, beta) after every hidden layer */
  int batch_norm;      /* BatchNorm (gamma, beta) after every hidden layer, and in every GIN
                          layer's MLP (gamma_1, beta_1: Linear, BatchNorm, ReLU, Linear) */
  const double *bn_running; /* NULL: BatchNorm as in training, with the mean and biased
                               variance of all n nodes; else as in evaluation, with these
                               (halo's layout: per layer the MLP's site, then the output's;
                               each site its mean, then its variance) */
  double *bn_batch;    /* when not NULL: the training statistics (mean, biased variance)
                          of every site, in that layout */
  int32_t heads;       /* GAT: heads of the hidden layers (dims[l] = heads × per-head width) */
  int32_t output_heads; /* GAT: heads of the output layer, averaged */
  float attn_dropout;  /* GAT: dropout on the attention coefficients */
  float halo_sample;   /* in (0, 1): BNS-GCN's boundary sampling of epoch `epoch`, the
                          graph's parts being g->part; otherwise the whole graph */
  int sage_aggr;       /* SAGE: FX_AGGR_MEAN (0, the default), FX_AGGR_MAX, FX_AGGR_SUM */
  int gcn_no_self_loops; /* GCN: Â without I (PyG's add_self_loops=False) */
  int gcn_no_normalize;  /* GCN: Â = A (+ I), not D^-1/2-scaled (PyG's normalize=False) */
} fx_model;

enum { FX_AGGR_MEAN = 0, FX_AGGR_MAX = 1, FX_AGGR_SUM = 2 };

/* Number of parameters, laid out per layer as docs/models.md lists them:
 * GCN W, b; SAGE W_l, b, W_r; GIN W_1, b_1, W_2, b_2 (, ε); GAT W, a_src,
 * a_dst, b; then W_res, then LayerNorm's gamma and beta. */
int64_t fx_model_params(const fx_model *m);

/* Glorot-uniform weights from halo_rng keyed by (seed, layer, tensor) and
 * (row, col), zero biases and ε. */
void fx_model_init(const fx_model *m, double *params);

/* Forward pass over the whole graph; returns the mean cross-entropy over the
 * train nodes and, when z is not NULL, writes the logits (n × classes). */
double fx_model_loss(const fx_model *m, const fx_graph *g, const double *params, double *z);

/* The input of layer `layer` (1-based, 2 <= layer <= layers: the previous
 * layer's output after its LayerNorm and activation, before dropout) into
 * out (n × dims[layer - 1]): halo-train --embeddings' rows. */
void fx_model_embeddings(const fx_model *m, const fx_graph *g, const double *params, int layer,
                         double *out);

/* A two-layer case of the probes that train a few models side by side: the
 * graph, the model's width and input dropout (the hidden layer's is 0.5),
 * and how many epochs they train. */
typedef struct fx_case {
  int64_t nodes;
  int32_t degree, features;
  float density;
  int32_t classes, hidden;
  float input_dropout;
  int epochs;
} fx_case;

/* A case on the command line: FX_CASE_ARGS words, in the order of fx_case. */
enum { FX_CASE_ARGS = 8 };
#define FX_CASE_FMT "%lld %d %d %g %d %d %g %d"
#define FX_CASE_FMT_ARGS(c)                                                                   \
  (long long)(c)->nodes, (c)->degree, (c)->features, (double)(c)->density, (c)->classes,      \
      (c)->hidden, (double)(c)->input_dropout, (c)->epochs
fx_case fx_case_parse(char *const *argv);

/* The case's graph split into `parts`. */
fx_spec fx_case_spec(const fx_case *c, int32_t parts, uint64_t seed);

/* The case's model, evaluating (no dropout), or training (dropout 0.5, the
 * case's input dropout) at epoch 0. */
fx_model fx_case_model(const fx_case *c, uint64_t seed, int training);

/* |a - b| / |b|, for b far from 0. */
double fx_rel(double a, double b);

/* max |v[i]| over n values (0 when n is 0). */
double fx_max_abs(const double *v, int64_t n);

#endif /* TRAIN_FIXTURE_H */
