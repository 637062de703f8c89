/* A model's options, one table row each: the options struct that halo-train
 * fills and the runtime builds from (halo_net_options), and for each option
 * its CLI flag (kind, range, help: a core/halo-flags.h row), its default,
 * its key (the checkpoint attribute, and the report's name for it), and
 * what a resume does with it.  Every place that needs the options reads
 * this table: halo-train's flags (programs/halo-train-args.c includes the
 * rows), the checkpoint (src/halo-checkpoint.c writes, reads and compares
 * them) and the report (halo_model_option_at).  A new option is one row
 * here, its field in the struct below, and its use in the model.
 */
#ifndef HALO_MODEL_OPTIONS_H
#define HALO_MODEL_OPTIONS_H

#include <stdint.h>

#include "halo-flags.h"
#include "halo-gat.h"
#include "halo-model.h"
#include "halo-quant.h"

/* The activation between layers. */
typedef enum {
  HALO_ACT_RELU = 0,
  HALO_ACT_ELU = 1,
  HALO_ACT_LEAKY_RELU = 2,
  HALO_ACT_GELU = 3
} halo_activation;

/* GraphSAGE's neighbourhood aggregation (--aggr), PyG's SAGEConv(aggr=). */
typedef enum { HALO_AGGR_MEAN = 0, HALO_AGGR_MAX = 1, HALO_AGGR_SUM = 2 } halo_aggr;

typedef struct halo_net_options {
  halo_model_kind model; /* gcn (the default), sage, gin, gat */
  int32_t layers;        /* L >= 1 graph convolutions */
  int32_t hidden;        /* width of every hidden layer (and of GIN's MLPs); GAT: per head */
  halo_activation activation;
  float negative_slope; /* --activation leaky_relu: x < 0 ? slope·x : x, 0 < slope <= 1 */
  int sage_normalize;   /* GraphSAGE: L2-normalise each layer's output rows */
  halo_aggr aggr;       /* GraphSAGE: mean (the default), max or sum over the neighbours */
  int gcn_self_loops;   /* GCN: Â includes I (PyG's add_self_loops; 1) */
  int gcn_normalize;    /* GCN: Â is D^-1/2 · D^-1/2-scaled (PyG's normalize; 1) */
  int gin_train_eps;    /* GIN: learn ε (0: GIN-0) */
  int residual;         /* every layer adds its input (projected by W_res where needed) */
  halo_norm norm;       /* LayerNorm or BatchNorm after every hidden layer (and BatchNorm
                           inside GIN's MLP); each with a learned scale and shift */
  float bn_momentum;    /* BatchNorm: running = (1 - m)·running + m·batch statistic */
  float bn_eps;         /* BatchNorm: added to the variance */
  int32_t heads;        /* GAT: heads of every hidden layer, concatenated */
  int32_t output_heads; /* GAT: heads of the output layer, averaged */
  float attn_dropout;   /* GAT: dropout on the attention coefficients */
  float lr;             /* the learning rate (the schedule's base) */
  float weight_decay;   /* adam, sgd: L2, added to the gradient; adamw: decoupled */
  int optimizer;        /* halo_optimizer */
  float momentum;       /* sgd: momentum (0: none), dampening 0 */
  int nesterov;         /* sgd: Nesterov momentum */
  int lr_schedule;      /* halo_lr_schedule (src/halo-schedule.h) */
  int32_t lr_step_size; /* step: epochs between decays */
  float lr_gamma;       /* step: the decay; plateau: the factor */
  float lr_min;         /* cosine: eta_min; plateau: min_lr */
  int32_t lr_patience;  /* plateau: evaluations without improvement before a decay */
  int32_t warmup_epochs; /* linear warm-up over the first N epochs (0: none) */
  float clip_grad_norm; /* the gradients' global L2 norm is clipped to this (0: off) */
  int weight_decay_all; /* 0: first layer only (the reference); 1: every layer */
  float dropout;        /* on the input of every layer after the first */
  float input_dropout;  /* on the input features; 0 caches Â·X at set-up */
  uint64_t seed;
  int normalize_features; /* shift by the global minimum, divide each row by its sum (0) */
  int sparse_features;    /* the first layer's input, X or the cached ÂX: -1: CSR when
                             under 10% of it is non-zero over all ranks; 0: dense; 1: CSR */
  int no_eval_cache;      /* 1: the evaluation does not keep ÂX (halo_model_config.eval_cache) */
  int deterministic;      /* 1: weight and bias gradients are exact sums over the nodes of all
                             ranks (halo-exact.h), so training is bit-identical for any number
                             of ranks, partition and thread count (halo-train's default); 0
                             (halo_net_options_default's): float sums */
  int no_deterministic;   /* 1: --no-deterministic was given (the float path, spelled out) */
  int halo_precision;     /* halo_precision of the forward exchanges (features) in training */
  int halo_precision_bwd; /* and of the backward ones (gradients); evaluation is always fp32 */
  float halo_sample;      /* training keeps this keyed fraction of the boundary rows each epoch,
                             scaled by 1/p (BNS-GCN; core/halo-sample.h); 1: every row */
  int halo_stale;         /* PipeGCN: training's layer l of epoch t reads the halo rows (forward)
                             and halo gradients (backward) of epoch t-1; the first epoch of a
                             run, and evaluation, exchange fresh rows */
  float halo_stale_momentum; /* with halo_stale: the rows read are gamma·old + (1-gamma)·new
                                (PipeGCN-G/F smoothing); 0: plain stale rows */
  int halo_aggregate;     /* halo_aggregate_mode: post (every needed row), or auto (a minimum
                             vertex cover of each pair's cut: rows or partial sums) */
  int no_edge_weights;    /* 1: a weighted graph's parts train as unweighted (every weight 1);
                             0: GCN and GraphSAGE use the weights the parts hold */
  int row_lists;          /* 0: when Â's interior rows are the prefix [0, n_interior) (format-2
                             shards), multiply them and the boundary rows as two contiguous
                             blocks; 1: always through row-index lists (tests, comparisons) */
  int eval_only;          /* 1: the net only evaluates (--eval-only): a graph without train
                             nodes is accepted (new nodes to score); 0: one is refused */
} halo_net_options;

/* What a resume does with an option. */
typedef enum {
  HALO_OPTION_MODEL,    /* it changes the function: a checkpoint of another value is refused */
  HALO_OPTION_TRAINING, /* it may change on resume: the difference is a warning, and this
                           run's value applies */
  HALO_OPTION_RUN       /* how this run computes, not in the checkpoint (--no-eval-cache) */
} halo_option_role;

/* How the checkpoint stores an option's value. */
typedef enum {
  HALO_OPTION_NONE, /* not as a number (the model is its name, "model") */
  HALO_OPTION_I32,
  HALO_OPTION_F32,
  HALO_OPTION_U64
} halo_option_store;

/* The optimiser (--optimizer), as torch.optim's class of the same name. */
typedef enum { HALO_OPTIMIZER_ADAM = 0, HALO_OPTIMIZER_ADAMW = 1, HALO_OPTIMIZER_SGD = 2 } halo_optimizer;

/* The learning-rate schedule (--lr-schedule), by epoch. */
typedef enum {
  HALO_LR_CONSTANT = 0,
  HALO_LR_STEP = 1,    /* torch.optim.lr_scheduler.StepLR */
  HALO_LR_COSINE = 2,  /* CosineAnnealingLR */
  HALO_LR_PLATEAU = 3  /* ReduceLROnPlateau on the validation loss */
} halo_lr_schedule;

/* --halo-aggregate: how a pair of parts' cut crosses.  post: the sender
 * sends every row the receiver aggregates (post-aggregation); auto: a
 * minimum vertex cover of the cut (core/halo-cover.h), each covered
 * sender's node as its row and each covered receiver's node as the
 * sender's partial sum of its neighbours (pre-aggregation). */
typedef enum { HALO_AGGREGATE_POST = 0, HALO_AGGREGATE_AUTO = 1 } halo_aggregate_mode;

/* The --activation, --norm, --optimizer, --lr-schedule, --halo-aggregate
 * and --aggr words, and the words of a boolean that PyG spells as a keyword
 * argument ("false", "true"), by value. */
extern const char *const halo_aggregate_names[];
extern const char *const halo_activation_names[];
extern const char *const halo_norm_names[];
extern const char *const halo_optimizer_names[];
extern const char *const halo_lr_schedule_names[];
extern const char *const halo_aggr_names[];
extern const char *const halo_bool_names[];

/* The table, in --help order.  Columns:
 *   ID      the row's name (HALO_MOPT_ID, and the programs' enums);
 *   ROW     its flag, for a struct T whose options are at member path P(x)
 *           (halo_net_options: x itself; halo-train's args: gcn.x);
 *   KEY     the checkpoint attribute and the report's name;
 *   ROLE    what a resume does (halo_option_role);
 *   STORE   how the checkpoint stores it;
 *   SINCE   0: every checkpoint holds it; 1: added later, so an older
 *           checkpoint lacks it and it reads as DEFAULT (a new option is 1);
 *   SLOT    its place among the checkpoint's attributes of its SINCE group,
 *           which fixes the file's layout (a new option: the next number);
 *   ONLY    the model kind it applies to (compared and noted only then), or -1;
 *   DEFAULT its value when not given. */
#define HALO_MODEL_OPTIONS(X, T, P)                                                              \
  X(MODEL,                                                                                       \
    HALO_FLAG_CHOICE_ROW("--model", T, P(model), halo_model_kind_names,                          \
                         "model (gcn): GCN, GraphSAGE (mean), GIN, GAT\n(docs/models.md)"),      \
    "model", HALO_OPTION_MODEL, HALO_OPTION_NONE, 0, 0, -1, HALO_MODEL_GCN)                      \
  X(LAYERS,                                                                                      \
    HALO_FLAG_INT_ROW("--layers", T, P(layers), 1, HALO_MAX_LAYERS, "N",                         \
                      "graph convolutions (2)"),                                                 \
    "layers", HALO_OPTION_MODEL, HALO_OPTION_I32, 0, 1, -1, 2)                                   \
  X(HIDDEN,                                                                                      \
    HALO_FLAG_INT_ROW("--hidden", T, P(hidden), 1, 1 << 20, "N",                                 \
                      "hidden width (16), and the width of GIN's MLPs; gat: per\nhead (8)"),     \
    "hidden", HALO_OPTION_MODEL, HALO_OPTION_I32, 0, 2, -1, 16)                                  \
  X(ACTIVATION,                                                                                  \
    HALO_FLAG_CHOICE_ROW("--activation", T, P(activation), halo_activation_names,                \
                         "between layers: relu, elu, leaky_relu, gelu (relu; gat:\nelu)"),      \
    "activation", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 1, -1, HALO_ACT_RELU)                   \
  X(NEGATIVE_SLOPE,                                                                              \
    HALO_FLAG_REAL_ROW("--negative-slope", T, P(negative_slope), 0.0, 1.0, HALO_FLAG_LO_OPEN,    \
                       "X", "leaky_relu: its slope below 0, in (0, 1] (0.01)"),                  \
    "negative_slope", HALO_OPTION_MODEL, HALO_OPTION_F32, 1, 9, -1, 0.01)                        \
  X(SAGE_NORMALIZE,                                                                              \
    HALO_FLAG_SWITCH_ROW("--sage-normalize", T, P(sage_normalize), 1,                            \
                         "sage: L2-normalise each layer's output rows"),                         \
    "sage_normalize", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 2, -1, 0)                           \
  X(AGGR,                                                                                        \
    HALO_FLAG_CHOICE_ROW("--aggr", T, P(aggr), halo_aggr_names,                                  \
                         "sage: the neighbours' mean, element-wise max or sum (mean)"),          \
    "aggr", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 22, HALO_MODEL_SAGE, HALO_AGGR_MEAN)          \
  X(GCN_ADD_SELF_LOOPS,                                                                          \
    HALO_FLAG_CHOICE_ROW("--gcn-add-self-loops", T, P(gcn_self_loops), halo_bool_names,          \
                         "gcn: Â includes I, PyG's add_self_loops (true; false\n"                \
                         "with --gcn-normalize false)"),                                         \
    "gcn_add_self_loops", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 23, HALO_MODEL_GCN, 1)          \
  X(GCN_NORMALIZE,                                                                               \
    HALO_FLAG_CHOICE_ROW("--gcn-normalize", T, P(gcn_normalize), halo_bool_names,                \
                         "gcn: Â is D^-1/2 (A + I) D^-1/2 (true) or A alone (false),\n"          \
                         "PyG's normalize"),                                                     \
    "gcn_normalize", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 24, HALO_MODEL_GCN, 1)               \
  X(GIN_TRAIN_EPS,                                                                               \
    HALO_FLAG_SWITCH_ROW("--gin-train-eps", T, P(gin_train_eps), 1,                              \
                         "gin: learn epsilon (default: GIN-0, epsilon = 0)"),                    \
    "gin_train_eps", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 3, -1, 0)                            \
  X(HEADS,                                                                                       \
    HALO_FLAG_INT_ROW("--heads", T, P(heads), 1, HALO_GAT_MAX_HEADS, "K",                        \
                      "gat: attention heads of the hidden layers, concatenated (8)"),            \
    "heads", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 6, HALO_MODEL_GAT, 8)                        \
  X(OUTPUT_HEADS,                                                                                \
    HALO_FLAG_INT_ROW("--output-heads", T, P(output_heads), 1, HALO_GAT_MAX_HEADS, "K",          \
                      "gat: attention heads of the output layer, averaged (1)"),                 \
    "output_heads", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 7, HALO_MODEL_GAT, 1)                 \
  X(RESIDUAL,                                                                                    \
    HALO_FLAG_SWITCH_ROW("--residual", T, P(residual), 1,                                        \
                         "every layer adds its input (projected where the widths differ)"),      \
    "residual", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 4, -1, 0)                                 \
  X(NORM,                                                                                        \
    HALO_FLAG_CHOICE_ROW("--norm", T, P(norm), halo_norm_names,                                  \
                         "none, layer (LayerNorm) or batch (BatchNorm, also inside\n"           \
                         "gin's MLP) after every hidden layer (none)"),                          \
    "layer_norm", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 5, -1, HALO_NORM_NONE)                  \
  X(BN_MOMENTUM,                                                                                 \
    HALO_FLAG_REAL_ROW("--bn-momentum", T, P(bn_momentum), 0.0, 1.0, HALO_FLAG_CLOSED, "X",      \
                       "--norm batch: the running statistics' momentum (0.1)"),                  \
    "bn_momentum", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 26, -1, 0.1)                        \
  X(BN_EPS,                                                                                      \
    HALO_FLAG_REAL_ROW("--bn-eps", T, P(bn_eps), 0.0, 1.0, HALO_FLAG_LO_OPEN, "X",               \
                       "--norm batch: added to the variance (1e-5)"),                            \
    "bn_eps", HALO_OPTION_MODEL, HALO_OPTION_F32, 1, 27, -1, 1e-5)                               \
  X(LR,                                                                                          \
    HALO_FLAG_REAL_ROW("--lr", T, P(lr), 0.0, 1e6, HALO_FLAG_LO_OPEN, "X",                       \
                       "learning rate (0.01; gat: 0.005)"),                                     \
    "lr", HALO_OPTION_TRAINING, HALO_OPTION_F32, 0, 4, -1, 0.01)                                 \
  X(WEIGHT_DECAY,                                                                                \
    HALO_FLAG_REAL_ROW("--weight-decay", T, P(weight_decay), 0.0, 1e6, HALO_FLAG_CLOSED, "X",    \
                       "L2 weight decay (5e-4): gcn's first layer only, every\n"                 \
                       "parameter of sage, gin and gat"),                                        \
    "weight_decay", HALO_OPTION_TRAINING, HALO_OPTION_F32, 0, 5, -1, 5e-4)                       \
  X(WEIGHT_DECAY_ALL,                                                                            \
    HALO_FLAG_SWITCH_ROW("--weight-decay-all", T, P(weight_decay_all), 1,                        \
                         "gcn: apply the weight decay to every layer"),                          \
    "weight_decay_all", HALO_OPTION_TRAINING, HALO_OPTION_I32, 0, 6, -1, 0)                      \
  X(OPTIMIZER,                                                                                   \
    HALO_FLAG_CHOICE_ROW("--optimizer", T, P(optimizer), halo_optimizer_names,                   \
                         "adam (default), adamw (decoupled weight decay) or sgd, as\n"           \
                         "torch.optim's Adam, AdamW and SGD"),                                   \
    "optimizer", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 12, -1, HALO_OPTIMIZER_ADAM)          \
  X(MOMENTUM,                                                                                    \
    HALO_FLAG_REAL_ROW("--momentum", T, P(momentum), 0.0, 1.0, HALO_FLAG_HI_OPEN, "X",           \
                       "sgd: momentum, in [0, 1) (0)"),                                          \
    "momentum", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 13, -1, 0)                             \
  X(NESTEROV,                                                                                    \
    HALO_FLAG_SWITCH_ROW("--nesterov", T, P(nesterov), 1,                                        \
                         "sgd: Nesterov momentum (needs --momentum)"),                           \
    "nesterov", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 14, -1, 0)                             \
  X(LR_SCHEDULE,                                                                                 \
    HALO_FLAG_CHOICE_ROW("--lr-schedule", T, P(lr_schedule), halo_lr_schedule_names,             \
                         "the learning rate by epoch: constant (default), step, cosine,\n"       \
                         "plateau (on the validation loss; docs/train.md)"),                     \
    "lr_schedule", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 15, -1, HALO_LR_CONSTANT)           \
  X(LR_STEP_SIZE,                                                                                \
    HALO_FLAG_INT_ROW("--lr-step-size", T, P(lr_step_size), 1, INT32_MAX, "N",                   \
                      "step: multiply the learning rate by --lr-gamma every N\n"                 \
                      "epochs (30)"),                                                            \
    "lr_step_size", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 16, -1, 30)                        \
  X(LR_GAMMA,                                                                                    \
    HALO_FLAG_REAL_ROW("--lr-gamma", T, P(lr_gamma), 0.0, 1.0,                                 \
                       HALO_FLAG_LO_OPEN | HALO_FLAG_HI_OPEN, "X",                               \
                       "step: the decay; plateau: the factor, in (0, 1) (0.1)"),                 \
    "lr_gamma", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 17, -1, 0.1)                           \
  X(LR_MIN,                                                                                      \
    HALO_FLAG_REAL_ROW("--lr-min", T, P(lr_min), 0.0, 1e6, HALO_FLAG_CLOSED, "X",                \
                       "cosine: the final learning rate (eta_min); plateau: the\n"               \
                       "lowest (min_lr) (0)"),                                                   \
    "lr_min", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 18, -1, 0)                               \
  X(LR_PATIENCE,                                                                                 \
    HALO_FLAG_INT_ROW("--lr-patience", T, P(lr_patience), 0, INT32_MAX, "N",                     \
                      "plateau: evaluations without a better validation loss\n"                  \
                      "before a decay (10)"),                                                    \
    "lr_patience", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 19, -1, 10)                         \
  X(WARMUP_EPOCHS,                                                                               \
    HALO_FLAG_INT_ROW("--warmup-epochs", T, P(warmup_epochs), 0, INT32_MAX, "N",                 \
                      "linear learning-rate warm-up over the first N epochs, from\n"             \
                      "lr/N, before the schedule (0; not --warmup)"),                            \
    "warmup_epochs", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 20, -1, 0)                        \
  X(CLIP_GRAD_NORM,                                                                              \
    HALO_FLAG_REAL_ROW("--clip-grad-norm", T, P(clip_grad_norm), 0.0, 1e30, HALO_FLAG_LO_OPEN,   \
                       "X", "scale the gradients down to a global L2 norm of at most X\n"        \
                       "(off)"),                                                                 \
    "clip_grad_norm", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 21, -1, 0)                       \
  X(DROPOUT,                                                                                     \
    HALO_FLAG_REAL_ROW("--dropout", T, P(dropout), 0.0, 1.0, HALO_FLAG_HI_OPEN, "X",             \
                       "dropout of the hidden layers (0.5; gat: 0.6)"),                          \
    "dropout", HALO_OPTION_TRAINING, HALO_OPTION_F32, 0, 7, -1, 0.5)                             \
  X(INPUT_DROPOUT,                                                                               \
    HALO_FLAG_REAL_ROW("--input-dropout", T, P(input_dropout), 0.0, 1.0, HALO_FLAG_HI_OPEN, "X", \
                       "dropout of the input features (= --dropout); 0 computes\n"               \
                       "the first layer's aggregation once at set-up"),                          \
    "input_dropout", HALO_OPTION_TRAINING, HALO_OPTION_F32, 0, 8, -1, 0.5)                       \
  X(ATTN_DROPOUT,                                                                                \
    HALO_FLAG_REAL_ROW("--attn-dropout", T, P(attn_dropout), 0.0, 1.0, HALO_FLAG_HI_OPEN, "X",   \
                       "gat: dropout on the attention coefficients (0.6)"),                      \
    "attn_dropout", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 8, HALO_MODEL_GAT, 0.6)            \
  X(NORMALIZE_FEATURES,                                                                          \
    HALO_FLAG_SWITCH_ROW("--normalize-features", T, P(normalize_features), 1,                    \
                         "X - min(X), then each row divided by max(row sum, 1), as\n"            \
                         "PyG's NormalizeFeatures (default: the features as stored)"),           \
    "normalize_features", HALO_OPTION_MODEL, HALO_OPTION_I32, 0, 3, -1, 0)                       \
  X(SEED,                                                                                        \
    HALO_FLAG_INT_ROW("--seed", T, P(seed), 0, INT64_MAX, "N",                                   \
                      "seed of weights and dropout masks (0)"),                                  \
    "seed", HALO_OPTION_TRAINING, HALO_OPTION_U64, 0, 9, -1, 0)                                  \
  X(DETERMINISTIC,                                                                               \
    HALO_FLAG_SWITCH_ROW("--deterministic", T, P(deterministic), 1,                              \
                         "bit-identical training for any number of ranks, partition and\n"       \
                         "thread count: exact gradient sums, about 1.02-1.13x an epoch's\n"     \
                         "time (the default on cpu; cuda's is float sums for now;\n"            \
                         "docs/reproducibility.md)"),                                             \
    "deterministic", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 36, -1, 0)                       \
  X(NO_DETERMINISTIC,                                                                            \
    HALO_FLAG_SWITCH_ROW("--no-deterministic", T, P(no_deterministic), 1,                        \
                         "float gradient sums, as PyG's: a few percent faster, and the\n"       \
                         "bits depend on P, the partition and the threads"),                     \
    "no_deterministic", HALO_OPTION_RUN, HALO_OPTION_NONE, 0, 0, -1, 0)                         \
  X(NO_EVAL_CACHE,                                                                               \
    HALO_FLAG_SWITCH_ROW("--no-eval-cache", T, P(no_eval_cache), 1,                              \
                         "evaluate the first layer as training does, without the ÂX that\n"     \
                         "gcn, sage and gin-0 keep for it (n x F floats; docs/train.md)"),       \
    "no_eval_cache", HALO_OPTION_RUN, HALO_OPTION_NONE, 0, 0, -1, 0)                            \
  X(HALO_PRECISION,                                                                              \
    HALO_FLAG_CHOICE_ROW("--halo-precision", T, P(halo_precision), halo_precision_names,         \
                         "training's forward halo rows: fp32 (default), bf16, fp16,\n"           \
                         "int8, int4, int2, stochastically rounded (docs/train.md)"),            \
    "halo_precision", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 10, -1, HALO_PREC_FP32)          \
  X(HALO_PRECISION_BWD,                                                                          \
    HALO_FLAG_CHOICE_ROW("--halo-precision-bwd", T, P(halo_precision_bwd), halo_precision_names, \
                         "training's backward halo rows (gradients): the same words"),           \
    "halo_precision_bwd", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 11, -1, HALO_PREC_FP32)     \
  X(NO_EDGE_WEIGHTS,                                                                             \
    HALO_FLAG_SWITCH_ROW("--no-edge-weights", T, P(no_edge_weights), 1,                          \
                         "train on the structure alone when the parts hold edge\n"               \
                         "weights (default: gcn and sage use them; gin and gat refuse\n"         \
                         "a weighted graph without this flag)"),                                 \
    "no_edge_weights", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 29, -1, 0)                         \
  X(HALO_STALE,                                                                                  \
    HALO_FLAG_SWITCH_ROW("--halo-stale", T, P(halo_stale), 1,                                    \
                         "training reads the previous epoch's halo rows and gradients,\n"        \
                         "exchanging this epoch's behind the compute (PipeGCN;\n"                \
                         "docs/train.md)"),                                                      \
    "halo_stale", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 31, -1, 0)                           \
  X(HALO_STALE_MOMENTUM,                                                                         \
    HALO_FLAG_REAL_ROW("--halo-stale-momentum", T, P(halo_stale_momentum), 0.0, 1.0,             \
                       HALO_FLAG_HI_OPEN, "G",                                                   \
                       "with --halo-stale: read G*old + (1-G)*new rows (0: plain)"),             \
    "halo_stale_momentum", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 32, -1, 0)                  \
  X(HALO_SAMPLE,                                                                                 \
    HALO_FLAG_REAL_ROW("--halo-sample", T, P(halo_sample), 0.0, 1.0, HALO_FLAG_LO_OPEN, "P",     \
                       "training keeps a keyed fraction P of the boundary rows each\n"           \
                       "epoch, scaled by 1/P (BNS-GCN); 1 (default) keeps all"),                 \
    "halo_sample", HALO_OPTION_TRAINING, HALO_OPTION_F32, 1, 33, -1, 1.0)                        \
  X(HALO_AGGREGATE,                                                                              \
    HALO_FLAG_CHOICE_ROW("--halo-aggregate", T, P(halo_aggregate), halo_aggregate_names,         \
                         "post (default): send every halo row; auto: a minimum vertex\n"         \
                         "cover of each pair's cut, rows or partial sums (gcn, sage,\n"          \
                         "gin; docs/train.md)"),                                                 \
    "halo_aggregate", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 35, -1, HALO_AGGREGATE_POST)

/* The largest SLOT a row may take: the checkpoint visits 1..this.  Slots
 * are reserved in ranges by area, so a group may have holes. */
enum { HALO_MOPT_MAX_SLOT = 64 };

/* The member path of an option in halo_net_options itself. */
#define HALO_MODEL_OPTION_FIELD(x) x

/* One option: its flag row points into halo_net_options. */
typedef struct halo_model_option {
  halo_flag flag;
  const char *key;
  halo_option_role role;
  halo_option_store store;
  int since, slot;
  int only; /* a halo_model_kind, or -1 */
  double def;
} halo_model_option;

/* The rows' indices: HALO_MOPT_LAYERS, ... */
typedef enum {
#define HALO__MOPT_ID(id, ...) HALO_MOPT_##id,
  HALO_MODEL_OPTIONS(HALO__MOPT_ID, halo_net_options, HALO_MODEL_OPTION_FIELD)
#undef HALO__MOPT_ID
      HALO_MOPT_COUNT
} halo_model_option_id;

/* The table's row i (0 <= i < HALO_MOPT_COUNT), for iterating. Local. */
const halo_model_option *halo_model_option_at(int i);

/* The row of a checkpoint attribute or report key, or NULL. Local. */
const halo_model_option *halo_model_option_of_key(const char *key);

/* Every option at its DEFAULT; the fields without a row (sparse_features
 * -1, row_lists 0) as halo_net_options_default sets them. Local. */
void halo_model_options_default(halo_net_options *o);

/* An option's value in *o, by the row's field: as an integer (INT, SWITCH
 * and CHOICE rows; a SWITCH as 0 or 1) or as a number (every row). Local. */
int64_t halo_model_option_int(const halo_model_option *opt, const halo_net_options *o);
double halo_model_option_number(const halo_model_option *opt, const halo_net_options *o);

/* Sets an option's field from an integer or a number. Local. */
void halo_model_option_set_int(const halo_model_option *opt, halo_net_options *o, int64_t v);
void halo_model_option_set_number(const halo_model_option *opt, halo_net_options *o, double v);

/* Whether a and b hold the same value of the option (SWITCHes by truth). Local. */
int halo_model_option_equal(const halo_model_option *opt, const halo_net_options *a,
                            const halo_net_options *b);

/* The value as text: a CHOICE's word ("elu"), a SWITCH's "on" or "off" (the
 * flag given or not), a number with %g, an integer in full. Local. */
void halo_model_option_format(const halo_model_option *opt, const halo_net_options *o, char *out,
                              size_t size);

/* The model that options *o describe, for halo_model_describe: the
 * options the description reads (the kind, GIN's MLP width = hidden, ε,
 * residual, LayerNorm, GAT's heads, and whether the input is dropped out).
 * Local. */
halo_model_config halo_model_config_of_options(const halo_net_options *o);

/* Why --halo-aggregate auto cannot run with options *o (GAT's attention,
 * --deterministic, an aggregation the covers are not built for), as the
 * rest of one line, or NULL when it can.  Low-bit rows and stale slots
 * compose with it. Local. */
const char *halo_aggregate_refusal(const halo_net_options *o);

/* Why this run's exchange modes cannot go together (--halo-stale,
 * --halo-sample, --halo-aggregate auto, --halo-precision, and sage's
 * --aggr max, whose backward exchanges arg-max ids), as one line that
 * names the flags, or NULL.  halo-train checks it when it parses its flags
 * and again at set-up (an --eval-only checkpoint's model is known only
 * then); halo-partition before it predicts. */
const char *halo_exchange_modes_refusal(const halo_net_options *o);

/* Whether the option applies to model `kind` (its ONLY column). Local. */
int halo_model_option_applies(const halo_model_option *opt, halo_model_kind kind);

#endif /* HALO_MODEL_OPTIONS_H */
