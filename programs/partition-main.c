/* halo-partition: reads a graph, partitions it and writes one HDF5 shard per
 * part plus a manifest.  A thin CLI: its flags, then one call into
 * halo_partition_run (partition/halo-partition-run.h), which reports;
 * docs/partition.md is its reference. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-env.h"
#include "halo-load.h"
#include "halo-memory.h"
#include "halo-model-options.h"
#include "halo-mpi.h"
#include "halo-partition-run.h"
#include "halo-partition.h"
#include "halo-sample.h"

#ifndef HALO_VERSION
#define HALO_VERSION "unknown"
#endif

/* The flags' target: the library's request, field by field, and the model
 * options that --dims predicts for (converted into rq.model). */
typedef struct cli {
  halo_partition_run_request rq;
  halo_net_options net;
  int help, version;
} cli;

/* ---- the flags' own parsers ------------------------------------------ */

static halo_status parse_format(const halo_flag *row, const char *text, void *target) {
  (void)row;
  halo_log_set_context("--format: ");
  const halo_status st = halo_format_parse(text, &((cli *)target)->rq.format);
  halo_log_set_context(NULL);
  return st;
}

static halo_status parse_method(const halo_flag *row, const char *text, void *target) {
  (void)row;
  if (halo_method_parse(text, &((cli *)target)->rq.opt.method) == HALO_OK) return HALO_OK;
  halo_log_error("--method: unknown method '%s' (metis, scotch, ptscotch, random, block)", text);
  return HALO_ERR_ARG;
}

static halo_status parse_objective(const halo_flag *row, const char *text, void *target) {
  (void)row;
  if (halo_objective_parse(text, &((cli *)target)->rq.opt.objective) == HALO_OK) return HALO_OK;
  halo_log_error("--objective: unknown objective '%s' (cut, vol)", text);
  return HALO_ERR_ARG;
}

static halo_status parse_balance(const halo_flag *row, const char *text, void *target) {
  (void)row;
  if (halo_balance_parse(text, &((cli *)target)->rq.opt.balance) == HALO_OK) return HALO_OK;
  halo_log_error("--balance: unknown balance '%s' (nodes, edges, work)", text);
  return HALO_ERR_ARG;
}

static halo_status parse_order(const halo_flag *row, const char *text, void *target) {
  (void)row;
  if (halo_order_parse(text, &((cli *)target)->rq.opt.order) == HALO_OK) return HALO_OK;
  halo_log_error("--order: unknown order '%s' (community, id)", text);
  return HALO_ERR_ARG;
}

static halo_status parse_features_layout(const halo_flag *row, const char *text, void *target) {
  (void)row;
  if (halo_features_layout_parse(text, &((cli *)target)->rq.opt.features_layout) == HALO_OK)
    return HALO_OK;
  halo_log_error("--features-layout: unknown layout '%s' (auto, sparse, dense)", text);
  return HALO_ERR_ARG;
}

/* "1433,16,7": 2 to HALO_MAX_LAYERS+1 positive widths. */
static halo_status parse_dims(const halo_flag *row, const char *text, void *target) {
  halo_status st = HALO_OK;
  halo_partition_run_request *rq = &((cli *)target)->rq;
  const char *p = text;
  (void)row;
  rq->ndims = 0;
  for (;;) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || *p == '-' || *p == '+')
      HALO_FAIL(HALO_ERR_ARG, "--dims: '%s' is not a comma-separated list of widths", text);
    if (errno == ERANGE || v < 1 || v > INT32_MAX)
      HALO_FAIL(HALO_ERR_ARG, "--dims: width %.*s must be between 1 and %d", (int)(end - p), p,
                INT32_MAX);
    if (rq->ndims == HALO_MAX_LAYERS + 1)
      HALO_FAIL(HALO_ERR_ARG, "--dims: at most %d widths (%d layers)", HALO_MAX_LAYERS + 1,
                HALO_MAX_LAYERS);
    rq->dims[rq->ndims++] = (int32_t)v;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (rq->ndims < 2)
    HALO_FAIL(HALO_ERR_ARG, "--dims: '%s' needs at least 2 widths (input and classes)", text);
done:
  return st;
}

/* "0.6,0.2,0.2": three fractions in [0, 1] summing to at most 1. */
static halo_status parse_fractions(const halo_flag *row, const char *text, void *target) {
  halo_status st = HALO_OK;
  double *frac = ((cli *)target)->rq.synth_split;
  const char *p = text;
  int count = 0;
  (void)row;
  for (;;) {
    char *end = NULL;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || (*end != ',' && *end != '\0') || count == 3 || errno == ERANGE || !(v >= 0) ||
        v > 1)
      HALO_FAIL(HALO_ERR_ARG,
                "--synthetic-split: '%s' is not three fractions TRAIN,VALID,TEST in [0, 1]", text);
    frac[count++] = v;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (count != 3)
    HALO_FAIL(HALO_ERR_ARG,
              "--synthetic-split: '%s' is not three fractions TRAIN,VALID,TEST in [0, 1]", text);
  if (frac[0] + frac[1] + frac[2] > 1.0 + 1e-9)
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-split: %s sums to %g, more than 1", text,
              frac[0] + frac[1] + frac[2]);
done:
  return st;
}

/* ---- the flag table ---------------------------------------------------- */

/* --header's words, in halo_header's order. */
static const char *const header_words[] = {"auto", "yes", "no", NULL};

/* halo-partition's flags, in --help order (docs/partition.md).  X rows are
 * this program's; M rows are the model table's (model/halo-model-options.h:
 * the same flag, range and field, in c->net), with this program's help and,
 * for a choice, the noun its message names. */
#define C cli
#define PARTITION_FLAGS(X, M)                                                                      \
  X(INPUT,                                                                                         \
    HALO_FLAG_STRING_ROW("--input", C, rq.input, NULL, "PATH|SPEC",                                \
                         "OGB folder (CSV or binary), edge list, .mtx[.gz], .npy, .npz,\n"         \
                         "or a spec (sbm:nodes=..,classes=..,avg-degree=..  rmat:scale=..)"))      \
  X(FORMAT, HALO_FLAG_CALL_ROW("--format", parse_format, NULL, "F",                                \
                               "auto (default), ogb, edgelist (or snap), mtx, spec, npy, npz"))    \
  X(FEATURES,                                                                                      \
    HALO_FLAG_STRING_ROW("--features", C, rq.features, NULL, "FILE",                               \
                         "node features for a structure-only input (CSV or .npy, a row a node)"))  \
  X(LABELS, HALO_FLAG_STRING_ROW("--labels", C, rq.labels, NULL, "FILE",                           \
                                 "node labels for a structure-only input: one per line, or\n"      \
                                 "several 0/1 columns (multi-label tasks; nan = missing),\n"       \
                                 "or a .npy array"))                                               \
  X(EDGE_WEIGHTS,                                                                                  \
    HALO_FLAG_STRING_ROW("--edge-weights", C, rq.edge_weights, NULL, "FILE",                       \
                         "a .npy vector of E edge weights for a .npy edge array of E\n"          \
                         "edges, in its order (finite, >= 0; other inputs carry their own:\n"    \
                         "a real/integer .mtx, a third edge-list column, an OGB edge-feat)"))      \
  X(HEADER, HALO_FLAG_CHOICE_ROW("--header", C, rq.header, header_words,                           \
                                 "whether the first line of the edge list, --features and\n"       \
                                 "--labels is a header row (auto, the default: a line with\n"      \
                                 "a name, then a line of numbers)"))                               \
  X(NODES, HALO_FLAG_INT_ROW("--nodes", C, rq.nodes, 1, (int64_t)1 << 32, "N",                     \
                             "an edge list's (or .npy edge array's) ids are the nodes\n"           \
                             "0..N-1, kept as they are (isolated nodes stay; an id >= N\n"         \
                             "is refused)"))                                                       \
  X(CLASSES, HALO_FLAG_INT_ROW("--classes", C, rq.classes, 1, INT32_MAX, "C",                      \
                               "the class count of --labels (a label >= C is refused);\n"          \
                               "without it, labels that leave most classes empty are\n"            \
                               "refused"))                                                         \
  X(SYNTH_FEATURES,                                                                                \
    HALO_FLAG_INT_ROW("--synthetic-features", C, rq.synth_features, 1, INT32_MAX, "F",             \
                      "F random class-dependent features (with --synthetic-classes)"))             \
  X(SYNTH_CLASSES, HALO_FLAG_INT_ROW("--synthetic-classes", C, rq.synth_classes, 1, INT32_MAX,     \
                                     "C", "C random classes and a random 10/10/80 split"))         \
  X(SPLIT,                                                                                         \
    HALO_FLAG_STRING_ROW("--split", C, rq.split, NULL, "DIR",                                      \
                         "the split from DIR/{train,valid,test}.csv[.gz] (one node id per\n"       \
                         "line; an edge list's own ids), replacing the input's own"))              \
  X(SPLIT_NAME, HALO_FLAG_STRING_ROW("--split-name", C, rq.split_name, NULL, "NAME",               \
                                     "an OGB folder's split/NAME, or an .npz's split index"))      \
  X(SYNTH_SPLIT, HALO_FLAG_CALL_ROW("--synthetic-split", parse_fractions, NULL, "T,V,E",           \
                                    "a random split of fractions T, V, E, from --seed"))           \
  X(PARTITION_TEXT, HALO_FLAG_TEXT_ROW("partition\n"))                                             \
  X(PARTS, HALO_FLAG_INT_ROW("--parts", C, rq.opt.parts, 1, INT32_MAX, "P",                        \
                             "number of parts, 1 <= P <= nodes (required)"))                       \
  X(METHOD, HALO_FLAG_CALL_ROW("--method", parse_method, NULL, "M",                                \
                               "metis (default), scotch, ptscotch, random or block; metis\n"       \
                               "switches to scotch, saying so, past its limit of 2^31-1\n"         \
                               "nodes or directed edges; ptscotch is distributed:\n"               \
                               "mpirun -np K halo-partition --method ptscotch ... (each rank\n"    \
                               "reads a slice of the input, any format; DIR on a shared file\n"    \
                               "system)"))                                                         \
  X(SEED, HALO_FLAG_INT_ROW("--seed", C, rq.opt.seed, 0, INT64_MAX, "N",                           \
                            "METIS or Scotch seed / random permutation seed (default 1)"))         \
  X(UFACTOR, HALO_FLAG_INT_ROW("--ufactor", C, rq.opt.ufactor, 1, 1000000, "N",                    \
                               "METIS and Scotch allowed imbalance 1+N/1000 (default 30)"))        \
  X(COARSEN_LEVELS,                                                                                \
    HALO_FLAG_INT_ROW("--coarsen-levels", C, rq.opt.levels, 0, HALO_PTSCOTCH_LEVELS_MAX, "N",      \
                      "ptscotch: up to N levels of halo's distributed coarsening\n"                \
                      "before PT-Scotch (default 8); 0: PT-Scotch's own alone,\n"                  \
                      "more memory a rank, on skewed graphs a better cut"))                        \
  X(OBJECTIVE, HALO_FLAG_CALL_ROW("--objective", parse_objective, NULL, "O",                       \
                                  "METIS objective: cut (default) or vol (Scotch: cut only)"))     \
  X(BALANCE, HALO_FLAG_CALL_ROW("--balance", parse_balance, NULL, "B",                             \
                                "what the parts balance: nodes (default), edges (nodes and\n"      \
                                "non-zeros; METIS: 2 constraints, Scotch: one combined load)\n"    \
                                "or work (each node costs its edges + C, the step model)"))        \
  X(WORK_ROW_COST, HALO_FLAG_INT_ROW("--work-row-cost", C, rq.opt.work_row_cost, 1, 1000000, "C",  \
                                     "--balance work: a node's cost beyond its edges, in\n"        \
                                     "non-zeros (default 4; bench/balance-step.sh fits it)"))      \
  X(ORDER, HALO_FLAG_CALL_ROW("--order", parse_order, NULL, "O",                                   \
                              "local numbering of each part's owned rows: community\n"             \
                              "(default: rows without remote neighbours first, then\n"             \
                              "neighbours together, for SpMM locality) or id (ascending\n"         \
                              "global id, as format 1 had it)"))                                   \
  X(FEATURES_LAYOUT, HALO_FLAG_CALL_ROW("--features-layout", parse_features_layout, NULL, "L",     \
                                        "how the parts store features: auto (default: CSR while\n" \
                                        "8 nnz + 8 n < 4 F n, format 3; else dense, format 2),\n"  \
                                        "sparse (always CSR) or dense (always n x F)"))            \
  X(OUTPUT_TEXT, HALO_FLAG_TEXT_ROW("output\n"))                                                   \
  X(OUT, HALO_FLAG_STRING_ROW("--out", C, rq.out, NULL, "DIR",                                     \
                              "output folder; written as DIR.tmp.<pid>, renamed when complete"))   \
  X(FORCE, HALO_FLAG_SWITCH_ROW("--force", C, rq.force, 1,                                         \
                                "replace an existing DIR written by halo-partition, and an\n"      \
                                "existing --json or --write-metis FILE (regular files only)"))     \
  X(DIMS, HALO_FLAG_CALL_ROW("--dims", parse_dims, NULL, "D0,D1,..",                               \
                             "model widths (input, hidden.., classes): predict halo bytes"))       \
  M(MODEL, "model",                                                                                \
    "the model --dims predicts for (gcn); GIN's MLP width is D1\n"                                 \
    "(16 for one layer), as halo-train's --hidden; GAT's hidden\n"                                 \
    "widths are heads x per-head width (64 for 8 x 8)")                                            \
  M(HEADS, NULL, NULL)                                                                             \
  M(OUTPUT_HEADS, NULL, NULL)                                                                      \
  X(HEADS_TEXT,                                                                                    \
    HALO_FLAG_TEXT_ROW("  --heads K, --output-heads K  with --model gat: the heads of the hidden " \
                       "layers (8)\n                           and of the output layer (1), as "   \
                       "halo-train's\n"))                                                          \
  M(GIN_TRAIN_EPS, NULL,                                                                           \
    "with --model gin: predict for a learned epsilon (no change\n"                                 \
    "in bytes; accepted so the two programs take the same flags)")                                 \
  M(AGGR, NULL,                                                                                    \
    "with --model sage: predict for halo-train --aggr (mean); max\n"                                \
    "aggregates first, and sends ids and gradients backward")                                       \
  M(RESIDUAL, NULL,                                                                                \
    "predict for halo-train --residual (GCN's first layer is then\n"                               \
    "not cached without input dropout)")                                                           \
  M(HALO_PRECISION, NULL,                                                                          \
    "predict for halo-train --halo-precision (fp32): packed rows,\n"                               \
    "their scales and offsets counted")                                                            \
  M(HALO_PRECISION_BWD, NULL, "and for its --halo-precision-bwd (fp32)")                          \
  M(HALO_STALE, NULL,                                                                              \
    "predict for halo-train --halo-stale: the same bytes (the rows\n"                              \
    "move one epoch later); the JSON records the mode")                                            \
  M(HALO_AGGREGATE, NULL,                                                                          \
    "predict for halo-train --halo-aggregate (post); auto counts\n"                                \
    "each pair's minimum vertex cover (not with ptscotch)")                                        \
  M(HALO_SAMPLE, NULL,                                                                             \
    "predict each epoch of halo-train --halo-sample P (1): the\n"                                  \
    "keyed draw's rows of epochs 1..--epochs, in the JSON")                                        \
  X(TRAIN_SEED, HALO_FLAG_INT_ROW("--train-seed", C, rq.sample_seed, 0, INT64_MAX, "N",            \
                                  "with --halo-sample: halo-train's --seed (0), which keys it"))  \
  X(EPOCHS, HALO_FLAG_INT_ROW("--epochs", C, rq.sample_epochs, 1, 1000000, "N",                     \
                              "with --halo-sample: the epochs predicted (10)"))                    \
  X(JSON, HALO_FLAG_STRING_ROW("--json", C, rq.json, NULL, "FILE",                                 \
                               "write the statistics as JSON (FILE.tmp.XXXXXX, renamed);\n"        \
                               "- writes it to stdout, and the table to stderr"))                  \
  X(WRITE_METIS,                                                                                   \
    HALO_FLAG_STRING_ROW("--write-metis", C, rq.write_metis, NULL, "FILE",                         \
                         "write the cleaned graph in METIS format and stop (no --parts,\n"         \
                         "--out or --json; FILE.tmp.XXXXXX, renamed)"))                            \
  X(HELP, HALO_FLAG_STOP_ROW("--help", "-h", C, help, NULL))                                       \
  X(VERSION, HALO_FLAG_STOP_ROW("--version", "-V", C, version, NULL))                              \
  X(HELP_TEXT, HALO_FLAG_TEXT_ROW("  --help, --version\n"))

enum {
#define FLAG_ID(id, ...) F_##id,
  PARTITION_FLAGS(FLAG_ID, FLAG_ID) F_COUNT
#undef FLAG_ID
};

/* The table, its M rows filled from the model table on first use. */
static const halo_flags *flag_table(void) {
#define OWN_ROW(id, row) row,
#define MODEL_SLOT(id, noun, help) {.kind = HALO_FLAG_TEXT},
  static halo_flag rows[] = {PARTITION_FLAGS(OWN_ROW, MODEL_SLOT)};
#define NO_PICK(id, row)
#define PICK(id, noun, help) {F_##id, HALO_MOPT_##id, noun, help},
  static const struct {
    int row, option;
    const char *noun, *help;
  } picked[] = {PARTITION_FLAGS(NO_PICK, PICK)};
  _Static_assert(sizeof rows / sizeof rows[0] == F_COUNT, "one row per id");
  static const halo_flags table = {
      .rows = rows,
      .nrows = F_COUNT,
      .style = HALO_FLAGS_STYLE_GETOPT,
      .help_column = 27,
      .usage_head =
          "usage: halo-partition --input PATH|SPEC --parts P --out DIR [options]\n"
          "\n"
          "Reads a graph, cleans it (symmetric, no duplicates, no self-loops), partitions\n"
          "it and writes DIR/manifest.h5 and one DIR/part-NNNNN-of-NNNNN.h5 per part.\n"
          "\n"
          "input\n",
  };
  /* The model table's rows point into a halo_net_options and carry
   * halo-train's help; a static initializer cannot move them to c->net or
   * change their help, so they are copied in once, here. */
  static int filled;
  for (size_t k = 0; k < sizeof picked / sizeof picked[0] && !filled; k++) {
    halo_flag *r = &rows[picked[k].row];
    *r = halo_model_option_at(picked[k].option)->flag;
    r->offset += offsetof(cli, net);
    r->noun = picked[k].noun;
    r->help = picked[k].help;
  }
  filled = 1;
  return &table;
}
#undef C

/* Parses the flags and checks the rules between them; *stop is set when
 * the program should stop successfully (--help, --version). */
static halo_status parse_args(int argc, char **argv, cli *c, int *stop) {
  halo_status st = HALO_OK;
  const halo_flags *table = flag_table();
  halo_partition_run_request *rq = &c->rq;
  halo_partition_options *opt = &rq->opt;
  unsigned char given[F_COUNT];
  HALO_TRY(halo_flags_parse(table, argc, argv, c, given));
  *stop = c->help || c->version;
  if (c->help) {
    static char usage[8192];
    halo_flags_usage(table, usage, sizeof usage);
    fputs(usage, stdout);
  } else if (c->version) {
    printf("halo-partition %s (shard format %d)\n", HALO_VERSION, HALO_SHARD_FORMAT_VERSION);
  }
  if (*stop) goto done;
  rq->synth_split_given = given[F_SYNTH_SPLIT];
  const int heads_given = given[F_HEADS] || given[F_OUTPUT_HEADS];
  const int prec_given =
      given[F_HALO_PRECISION] || given[F_HALO_PRECISION_BWD] || given[F_HALO_STALE];
  if (rq->ndims == 0 && given[F_HALO_AGGREGATE])
    HALO_FAIL(HALO_ERR_ARG, "--halo-aggregate: it says what --dims predicts for; give --dims too");
  if (rq->ndims == 0 &&
      (given[F_MODEL] || c->net.gin_train_eps || c->net.residual || heads_given || prec_given ||
       given[F_AGGR]))
    HALO_FAIL(HALO_ERR_ARG, "%s: it says what --dims predicts for; give --dims too",
              given[F_HALO_STALE]    ? "--halo-stale"
              : prec_given           ? "--halo-precision"
              : given[F_MODEL]       ? "--model"
              : given[F_AGGR]        ? "--aggr"
              : c->net.gin_train_eps ? "--gin-train-eps"
              : c->net.residual      ? "--residual"
              : given[F_HEADS]       ? "--heads"
                                     : "--output-heads");
  if (given[F_AGGR] && c->net.model != HALO_MODEL_SAGE)
    HALO_FAIL(HALO_ERR_ARG, "--aggr: the model is %s, not sage", halo_model_name(c->net.model));
  if (heads_given && c->net.model != HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG, "%s: the model is %s, not gat",
              given[F_HEADS] ? "--heads" : "--output-heads", halo_model_name(c->net.model));
  rq->model = halo_model_config_of_options(&c->net);
  rq->halo_precision = c->net.halo_precision;
  rq->halo_precision_bwd = c->net.halo_precision_bwd;
  rq->halo_sample = c->net.halo_sample;
  rq->halo_stale = c->net.halo_stale;
  rq->halo_aggregate = c->net.halo_aggregate;
  if ((given[F_TRAIN_SEED] || given[F_EPOCHS]) && !halo_sample_on(rq->halo_sample))
    HALO_FAIL(HALO_ERR_ARG, "%s: it says which draws --halo-sample predicts; give --halo-sample P < 1",
              given[F_TRAIN_SEED] ? "--train-seed" : "--epochs");
  if (halo_sample_on(rq->halo_sample) && rq->ndims == 0)
    HALO_FAIL(HALO_ERR_ARG, "--halo-sample: it says what --dims predicts for; give --dims too");
  {
    const char *why = halo_exchange_modes_refusal(&c->net);
    if (why) HALO_FAIL(HALO_ERR_ARG, "%s (halo-train refuses it)", why);
    why = c->net.halo_aggregate == HALO_AGGREGATE_AUTO ? halo_aggregate_refusal(&c->net) : NULL;
    if (why) HALO_FAIL(HALO_ERR_ARG, "--halo-aggregate auto: %s", why);
  }
  if (halo_sample_on(rq->halo_sample) && c->net.model == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG, "--halo-sample: halo-train refuses it with gat");
  if (halo_sample_on(rq->halo_sample) && opt->method == HALO_METHOD_PTSCOTCH)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-sample: the sampled prediction is made by the sequential run (the "
              "distributed run holds no whole graph); use another --method");
  if (!rq->input) HALO_FAIL(HALO_ERR_ARG, "--input is required (see --help)");
  if (!*rq->input) HALO_FAIL(HALO_ERR_ARG, "--input: no input path or spec given");
  if (!rq->write_metis) {
    if (!given[F_PARTS]) HALO_FAIL(HALO_ERR_ARG, "--parts is required (see --help)");
    if (!rq->out) HALO_FAIL(HALO_ERR_ARG, "--out is required (see --help)");
  }
  if (given[F_COARSEN_LEVELS] && opt->method != HALO_METHOD_PTSCOTCH)
    HALO_FAIL(HALO_ERR_ARG,
              "--coarsen-levels: only --method ptscotch coarsens before it "
              "partitions; the method is %s",
              halo_method_name(opt->method));
  if (rq->classes && !rq->labels)
    HALO_FAIL(HALO_ERR_ARG, "--classes: it is the class count of --labels FILE; give --labels too");
  if ((rq->synth_features || rq->synth_classes) && (rq->features || rq->labels))
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-* and --features/--labels exclude each other");
  if (rq->write_metis && rq->json)
    HALO_FAIL(HALO_ERR_ARG, "--json: --write-metis writes no statistics; drop one of them");
  if (rq->split && rq->synth_split_given)
    HALO_FAIL(HALO_ERR_ARG, "--split and --synthetic-split exclude each other");
  if (rq->split_name && (rq->split || rq->synth_split_given))
    HALO_FAIL(HALO_ERR_ARG, "--split-name picks an OGB folder's own split; %s replaces it",
              rq->split ? "--split" : "--synthetic-split");
  if (!rq->synth_features != !rq->synth_classes)
    HALO_FAIL(HALO_ERR_ARG, "--synthetic-features and --synthetic-classes go together");
  if (opt->balance != HALO_BALANCE_NODES &&
      (opt->method == HALO_METHOD_RANDOM || opt->method == HALO_METHOD_BLOCK))
    HALO_FAIL(HALO_ERR_ARG,
              "--balance %s: the %s method balances nodes only (use metis, scotch or ptscotch)",
              halo_balance_name(opt->balance), halo_method_name(opt->method));
  if (opt->method == HALO_METHOD_SCOTCH && opt->objective != HALO_OBJECTIVE_CUT)
    HALO_FAIL(HALO_ERR_ARG, "--objective %s: Scotch minimises the edge cut only (drop --objective)",
              halo_objective_name(opt->objective));
  /* METIS takes seeds up to its idx_t's maximum; one part never calls it.
   * The default method is checked after loading, where it may turn out to
   * be Scotch's (switch_past_metis_limit). */
  if (!rq->write_metis && given[F_METHOD] && opt->method == HALO_METHOD_METIS && opt->parts > 1 &&
      opt->seed > halo_partition_metis_seed_max())
    HALO_FAIL(HALO_ERR_ARG,
              "--seed: %lld is out of range [0, %lld] for METIS (the random method takes any "
              "seed)",
              (long long)opt->seed, (long long)halo_partition_metis_seed_max());
done:
  return st;
}

/* The world size mpirun gave this process (1 without mpirun), from Open
 * MPI's variables, before MPI is started: only --method ptscotch starts it. */
static int launched_ranks(int *rank) {
  const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
  *rank = r ? atoi(r) : 0;
  return size ? atoi(size) : 1;
}

/* --method ptscotch: MPI around the distributed run.  An MPI failure or a
 * watchdog timeout leaves the communicator untrusted: the job is aborted. */
static halo_status main_distributed(int *argc, char ***argv, halo_partition_run_request *rq) {
  halo_status st = HALO_OK;
  MPI_Comm comm = MPI_COMM_NULL;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    halo_log_error("MPI_Init failed");
    return HALO_ERR_MPI;
  }
  HALO_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  HALO_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  st = halo_partition_run_distributed(rq, comm);
done:
  if (st == HALO_ERR_MPI || st == HALO_ERR_TIMEOUT) {
    halo_cleanup_lock();
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  /* Every temporary is gone or committed: a SIGTERM from mpirun, sent once
   * a failed peer has exited, now waits for this exit instead of reporting
   * a stop that is not one. */
  halo_cleanup_lock();
  MPI_Finalize();
  return st;
}

int main(int argc, char **argv) {
  halo_log_set_prefix("halo-partition");
  cli c = {.rq = {.format = HALO_FORMAT_AUTO, .opt = HALO_PARTITION_OPTIONS_INIT, .sample_epochs = 10}};
  halo_model_options_default(&c.net);
  int stop = 0;
  cli_env env;
  /* First, before any thread: SIGINT and SIGTERM remove the temporaries
   * and exit with 128 + signal (docs/partition.md, "Stopping it"). */
  halo_status st = halo_cleanup_on_signals("halo-partition");
  int rank = 0;
  const int ranks = launched_ranks(&rank);
  /* Every rank reads the same flags and environment and meets the same
   * error in them: rank 0 alone says so. */
  if (rank != 0) halo_log_set_quiet(1);
  if (st == HALO_OK) st = parse_args(argc, argv, &c, &stop);
  if (st == HALO_OK && !stop) st = cli_env_read(&env, CLI_ENV_MEMORY | CLI_ENV_TEST_PARTS);
  halo_log_set_quiet(0);
  if (st == HALO_OK && !stop && ranks > 1 && c.rq.opt.method != HALO_METHOD_PTSCOTCH) {
    /* K copies of a sequential run would race for one folder: one says so. */
    if (rank == 0)
      halo_log_error(
          "mpirun started %d copies of halo-partition: only --method ptscotch runs "
          "on several ranks (--method %s runs in one process)",
          ranks, halo_method_name(c.rq.opt.method));
    st = HALO_ERR_ARG;
  }
  if (st == HALO_OK && !stop) {
    halo_memory_set_available(env.memory_available);
    c.rq.parts_file = env.test_parts_file;
    c.rq.clean_round = env.test_clean_round;
    st = c.rq.opt.method == HALO_METHOD_PTSCOTCH ? main_distributed(&argc, &argv, &c.rq)
                                                 : halo_partition_run(&c.rq);
  }
  /* A signal being handled now finishes its cleanup and exit first. */
  halo_cleanup_lock();
  return st == HALO_OK ? 0 : 1;
}
