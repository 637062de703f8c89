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

typedef struct halo_net_options {
  halo_model_kind model; /* gcn (the default), sage, gin, gat */
  int32_t layers;        /* L >= 1 graph convolutions */
  int32_t hidden;        /* width of every hidden layer (and of GIN's MLPs); GAT: per head */
  halo_activation activation;
  float negative_slope; /* --activation leaky_relu: x < 0 ? slope·x : x, 0 < slope <= 1 */
  int sage_normalize;   /* GraphSAGE: L2-normalise each layer's output rows */
  int gin_train_eps;    /* GIN: learn ε (0: GIN-0) */
  int residual;         /* every layer adds its input (projected by W_res where needed) */
  int layer_norm;       /* LayerNorm (learned scale and shift) after every hidden layer */
  int32_t heads;        /* GAT: heads of every hidden layer, concatenated */
  int32_t output_heads; /* GAT: heads of the output layer, averaged */
  float attn_dropout;   /* GAT: dropout on the attention coefficients */
  float lr;             /* Adam learning rate */
  float weight_decay;   /* L2, added to the gradient as in torch.optim.Adam */
  int weight_decay_all; /* 0: first layer only (the reference); 1: every layer */
  float dropout;        /* on the input of every layer after the first */
  float input_dropout;  /* on the input features; 0 caches Â·X at set-up */
  uint64_t seed;
  int normalize_features; /* shift by the global minimum, divide each row by its sum (0) */
  int sparse_features;    /* the first layer's input, X or the cached ÂX: -1: CSR when
                             under 10% of it is non-zero over all ranks; 0: dense; 1: CSR */
  int deterministic;      /* 1: weight and bias gradients are exact sums over the nodes of all
                             ranks (halo-exact.h), so training is bit-identical for any number
                             of ranks, partition and thread count; CPU backend only */
  int halo_precision;     /* halo_precision of the forward exchanges (features) in training */
  int halo_precision_bwd; /* and of the backward ones (gradients); evaluation is always fp32 */
  int no_edge_weights;    /* 1: a weighted graph's parts train as unweighted (every weight 1);
                             0: GCN and GraphSAGE use the weights the parts hold */
  int row_lists;          /* 0: when Â's interior rows are the prefix [0, n_interior) (format-2
                             shards), multiply them and the boundary rows as two contiguous
                             blocks; 1: always through row-index lists (tests, comparisons) */
} halo_net_options;

/* What a resume does with an option. */
typedef enum {
  HALO_OPTION_MODEL,    /* it changes the function: a checkpoint of another value is refused */
  HALO_OPTION_TRAINING, /* it may change on resume: the difference is a warning, and this
                           run's value applies */
  HALO_OPTION_RUN       /* how this run computes, not in the checkpoint (--deterministic) */
} halo_option_role;

/* How the checkpoint stores an option's value. */
typedef enum {
  HALO_OPTION_NONE, /* not as a number (the model is its name, "model") */
  HALO_OPTION_I32,
  HALO_OPTION_F32,
  HALO_OPTION_U64
} halo_option_store;

/* The --activation and --norm words, by value. */
extern const char *const halo_activation_names[];
extern const char *const halo_norm_names[];

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
    HALO_FLAG_CHOICE_ROW("--norm", T, P(layer_norm), halo_norm_names,                            \
                         "LayerNorm after every hidden layer (none)"),                           \
    "layer_norm", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 5, -1, 0)                               \
  X(LR,                                                                                          \
    HALO_FLAG_REAL_ROW("--lr", T, P(lr), 0.0, 1e6, HALO_FLAG_LO_OPEN, "X",                       \
                       "Adam learning rate (0.01; gat: 0.005)"),                                 \
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
                         "thread count: exact gradient sums (cpu and cuda)"),                    \
    "deterministic", HALO_OPTION_RUN, HALO_OPTION_NONE, 0, 0, -1, 0)                            \
  X(HALO_PRECISION,                                                                              \
    HALO_FLAG_CHOICE_ROW("--halo-precision", T, P(halo_precision), halo_precision_names,         \
                         "training's forward halo rows: fp32 (default), bf16, fp16,\n"           \
                         "int8, int4, int2, stochastically rounded (docs/train.md)"),            \
    "halo_precision", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 10, -1, HALO_PREC_FP32)          \
  X(HALO_PRECISION_BWD,                                                                          \
    HALO_FLAG_CHOICE_ROW("--halo-precision-bwd", T, P(halo_precision_bwd), halo_precision_names, \
                         "training's backward halo rows (gradients): the same words"),           \
    "halo_precision_bwd", HALO_OPTION_TRAINING, HALO_OPTION_I32, 1, 11, -1, HALO_PREC_FP32)   \
  X(NO_EDGE_WEIGHTS,                                                                             \
    HALO_FLAG_SWITCH_ROW("--no-edge-weights", T, P(no_edge_weights), 1,                          \
                         "train on the structure alone when the parts hold edge\n"               \
                         "weights (default: gcn and sage use them; gin and gat refuse\n"         \
                         "a weighted graph without this flag)"),                                 \
    "no_edge_weights", HALO_OPTION_MODEL, HALO_OPTION_I32, 1, 29, -1, 0)

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

/* Whether the option applies to model `kind` (its ONLY column). Local. */
int halo_model_option_applies(const halo_model_option *opt, halo_model_kind kind);

#endif /* HALO_MODEL_OPTIONS_H */
