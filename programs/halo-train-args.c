/* halo-train's command line: one flag table (core/halo-flags.h), the
 * model's options first (model/halo-model-options.h, one row each), then
 * the run's; the engine parses, checks and prints --help from it.  What is
 * left here is what one flag cannot say alone: the rules between flags and
 * the defaults that depend on the model. */
#include "halo-train-args.h"

#include <stdio.h>
#include <string.h>

#include "halo-flags.h"
#include "halo-model-options.h"
#include "halo-sample.h"

static const char *const devices[] = {"cpu", "cuda", NULL};
/* By value: a train_metric (programs/train-metrics.h). */
static const char *const metrics[] = {"acc", "f1", "auc", NULL};

/* --resume, --resume auto or --resume=auto. */
static halo_status parse_resume(const halo_flag *row, const char *mode, void *target) {
  halo_train_args *a = target;
  (void)row;
  if (mode && *mode && strcmp(mode, "auto") != 0) {
    halo_log_error("--resume=%s: the only value is auto", mode);
    return HALO_ERR_ARG;
  }
  a->resume = 1;
  a->resume_auto = mode && *mode;
  return HALO_OK;
}
static const char *const resume_modes[] = {"auto", NULL};

/* The run's flags, after the model's. */
#define T halo_train_args
#define TRAIN_FLAGS(X)                                                                             \
  X(NO_NORMALIZE,                                                                                  \
    HALO_FLAG_SWITCH_ROW("--no-normalize", T, gcn.normalize_features, 0,                           \
                         "the default since 2026-12-06 (features as stored); kept so\n"           \
                         "that older scripts run"))                                                \
  X(EPOCHS, HALO_FLAG_INT_ROW("--epochs", T, epochs, 0, INT32_MAX, "N", "training epochs (200)"))  \
  X(LR_EPOCHS,                                                                                     \
    HALO_FLAG_INT_ROW("--lr-epochs", T, lr_epochs, 1, INT32_MAX, "N",                              \
                      "cosine: the epochs the schedule spans, warm-up included\n"                  \
                      "(--epochs); give it to a run that stops early"))                            \
  X(DEVICE, HALO_FLAG_WORD_ROW("--device", T, device, devices,                                     \
                               "compute backend (cpu); cuda takes GPU (local rank mod the\n"       \
                               "node's GPUs), so several ranks may share one"))                    \
  X(TF32, HALO_FLAG_SWITCH_ROW("--tf32", T, tf32, 1,                                               \
                               "cuda: round GEMM inputs to TF32 (faster, ~1e-3 relative)"))        \
  X(THREADS, HALO_FLAG_INT_ROW("--threads", T, threads, 1, 4096, "N",                              \
                               "threads per rank (cores this rank may use / ranks on the node)"))  \
  X(WARMUP,                                                                                        \
    HALO_FLAG_INT_ROW("--warmup", T, warmup, 0, INT32_MAX, "N",                                    \
                      "epochs left out of the mean epoch time (5, or fewer on short runs)"))       \
  X(METRICS, HALO_FLAG_STRING_ROW("--metrics", T, metrics, "a file name", "FILE",                  \
                                  "one JSON object per epoch, then a summary; - writes them to\n"  \
                                  "stdout, and the report's text to stderr"))                      \
  X(FORCE, HALO_FLAG_SWITCH_ROW("--force", T, force, 1,                                            \
                                "let --metrics, --predict and --embeddings overwrite an\n"        \
                                "existing file (a resumed run appends to its metrics)"))           \
  X(CHECKPOINT, HALO_FLAG_STRING_ROW("--checkpoint", T, checkpoint, "a folder name", "DIR",        \
                                     "save the training state in DIR (one HDF5 file per save)"))   \
  X(CHECKPOINT_EVERY, HALO_FLAG_INT_ROW("--checkpoint-every", T, checkpoint_every, 1, INT32_MAX,   \
                                        "N", "save after every N epochs and after the last (10)")) \
  X(KEEP,                                                                                          \
    HALO_FLAG_INT_ROW("--keep", T, keep, 1, 1000000, "K", "keep the newest K checkpoints (2)"))    \
  X(RESUME, HALO_FLAG_CALL_ROW("--resume", parse_resume, resume_modes, "",                         \
                               "continue from the newest valid checkpoint in DIR, up to\n"         \
                               "--epochs in all (any P, any partition of the same graph)"))        \
  X(RESUME_AUTO_TEXT,                                                                              \
    HALO_FLAG_TEXT_ROW("  --resume auto        the same when DIR holds a checkpoint, else start "  \
                       "fresh\n                       (a requeued job's script needs no "          \
                       "branch)\n"))                                                               \
  X(EVAL_ONLY,                                                                                     \
    HALO_FLAG_SWITCH_ROW("--eval-only", T, eval_only, 1,                                           \
                         "train nothing: evaluate --checkpoint FILE.h5 (its model, on\n"           \
                         "any graph of its widths, unlabelled or unsplit too), or\n"              \
                         "with --resume DIR's newest"))                                            \
  X(EVAL_EVERY, HALO_FLAG_INT_ROW("--eval-every", T, eval_every, 1, INT32_MAX, "N",                \
                                  "evaluate after every N epochs and after the last (1)"))         \
  X(EARLY_STOP, HALO_FLAG_INT_ROW("--early-stop", T, early_stop, 1, INT32_MAX, "N",                \
                                  "stop after N evaluations without a better validation\n"         \
                                  "figure; with --checkpoint, also keep DIR/best.h5"))             \
  X(METRIC, HALO_FLAG_CHOICE_ROW("--metric", T, metric, metrics,                                   \
                                 "the figure the epoch lines add, and early stopping and the\n"    \
                                 "summary's best epoch use: accuracy, macro-F1, or ROC-AUC\n"      \
                                 "of a binary task (acc);\n"                                       \
                                 "multi-label: per-task means, ROC-AUC by default (auc)"))         \
  X(PREDICT, HALO_FLAG_STRING_ROW("--predict", T, predict, "a file name", "FILE.h5",               \
                                  "write every node's logits, prediction and split (from the\n"    \
                                  "final epoch, or the best-validation one with --early-stop)"))   \
  X(EMBEDDINGS, HALO_FLAG_STRING_ROW("--embeddings", T, embeddings, "a file name", "FILE.h5",      \
                                     "write every node's last hidden representation (the input\n"  \
                                     "of the last layer), from --predict's parameters"))           \
  X(EMBEDDINGS_LAYER,                                                                              \
    HALO_FLAG_INT_ROW("--embeddings-layer", T, embeddings_layer, 2, HALO_MAX_LAYERS, "L",          \
                      "with --embeddings: the input of layer L instead, counting\n"                \
                      "layers from 1 (2 to --layers)"))                                            \
  X(SIGNALS_TEXT,                                                                                  \
    HALO_FLAG_TEXT_ROW("SIGTERM or SIGUSR1 stops every rank after the current epoch, with a "      \
                       "checkpoint\nwhen --checkpoint is set; the exit status is then 143 or "     \
                       "138.\n"))                                                                  \
  X(ALLOW_NONFINITE,                                                                               \
    HALO_FLAG_SWITCH_ROW("--allow-nonfinite", T, allow_nonfinite, 1,                               \
                         "train on after a NaN or infinite loss (default: stop there,\n"          \
                         "exit status 3)"))                                                        \
  X(TIMEOUT, HALO_FLAG_REAL_ROW("--timeout", T, timeout, 0.1, 1e6, HALO_FLAG_CLOSED, "SECONDS",    \
                                "abort the job when an exchange or a collective makes no\n"        \
                                "progress for this long, naming the ranks waited for (off)"))      \
  X(PROFILE, HALO_FLAG_SWITCH_ROW("--profile", T, profile, 1,                                      \
                                  "after the summary, per op of the epoch: time (rank 0, max\n"   \
                                  "over ranks), bytes, flops, floor at this machine's measured\n" \
                                  "limits, ratio; and page faults per epoch (docs/train.md)"))     \
  X(QUIET, HALO_FLAG_SWITCH_ROW("--quiet", T, quiet, 1, "print the header and the summary only"))  \
  X(HELP, HALO_FLAG_STOP_ROW("--help", "-h", T, help, "this text"))                                \
  X(VERSION, HALO_FLAG_STOP_ROW("--version", NULL, T, version,                                     \
                                "the version and the shard format it reads"))

/* The model's options sit at a->gcn. */
#define TRAIN_OPTION(x) gcn.x

enum {
#define MODEL_ID(id, ...) F_##id,
#define TRAIN_ID(id, row) F_##id,
  HALO_MODEL_OPTIONS(MODEL_ID, T, TRAIN_OPTION) TRAIN_FLAGS(TRAIN_ID) F_COUNT
};

static const halo_flag rows[] = {
#define MODEL_ROW(id, row, ...) row,
#define TRAIN_ROW(id, row) row,
    HALO_MODEL_OPTIONS(MODEL_ROW, T, TRAIN_OPTION) TRAIN_FLAGS(TRAIN_ROW)};
#undef T
_Static_assert(sizeof rows / sizeof rows[0] == F_COUNT, "one row per id");
/* The model's rows come first, so a model option's flag id is its HALO_MOPT index. */
_Static_assert((int)F_DETERMINISTIC == (int)HALO_MOPT_DETERMINISTIC, "the model's rows first");

/* DIR, the one argument that is not a flag. */
static halo_status take_dir(const char *arg, void *target) {
  halo_train_args *a = target;
  if (a->dir) {
    halo_log_error("%s: only one shard folder may be given", arg);
    return HALO_ERR_ARG;
  }
  a->dir = arg;
  return HALO_OK;
}

static const halo_flags table = {
    .rows = rows,
    .nrows = F_COUNT,
    .style = HALO_FLAGS_STYLE_TRAIN,
    .usage_head =
        "usage: mpirun -np P halo-train DIR [options]\n"
        "  DIR                  shards written by halo-partition (P parts)\n",
    .positional = take_dir,
};

const char *halo_train_usage(void) {
  static char usage[8192];
  if (!usage[0]) halo_flags_usage(&table, usage, sizeof usage);
  return usage;
}

halo_status halo_train_args_parse(int argc, char **argv, halo_train_args *a) {
  halo_status st = HALO_OK;
  unsigned char given[F_COUNT];

  *a = (halo_train_args){
      .epochs = 200, .warmup = 5, .checkpoint_every = 10, .keep = 2, .eval_every = 1};
  snprintf(a->device, sizeof a->device, "cpu");
  halo_net_options_default(&a->gcn);
  HALO_TRY(halo_flags_parse(&table, argc, argv, a, given));
  snprintf(a->model, sizeof a->model, "%s", halo_model_name(a->gcn.model));
  if (a->help || a->version) goto done;
  a->metric_given = given[F_METRIC];

  if (!a->dir) HALO_FAIL(HALO_ERR_ARG, "no shard folder given (usage: halo-train DIR [options])");
  if (!a->checkpoint && (a->resume || given[F_CHECKPOINT_EVERY] || given[F_KEEP]))
    HALO_FAIL(HALO_ERR_ARG, "%s needs --checkpoint DIR",
              a->resume                   ? "--resume"
              : given[F_CHECKPOINT_EVERY] ? "--checkpoint-every"
                                          : "--keep");
  if (a->eval_only && !a->checkpoint)
    HALO_FAIL(HALO_ERR_ARG,
              "--eval-only evaluates a checkpoint: give --checkpoint FILE.h5 (or DIR --resume)");
  /* --eval-only --checkpoint FILE: the model is the file's; the flags that
   * name a model are checked against it once it is read (train-run.c). */
  a->eval_file = a->eval_only && !a->resume;
  for (int i = 0; i < HALO_MOPT_COUNT; i++) a->model_given[i] = given[i];
  if (a->eval_only && a->early_stop)
    HALO_FAIL(HALO_ERR_ARG, "--eval-only trains nothing, so --early-stop has nothing to stop");
  if (a->eval_only && a->profile)
    HALO_FAIL(HALO_ERR_ARG, "--eval-only trains nothing, so --profile has no epoch to profile");
  if (a->gcn.deterministic && a->gcn.no_deterministic)
    HALO_FAIL(HALO_ERR_ARG, "--deterministic and --no-deterministic: give one of them");
  if (a->tf32 && strcmp(a->device, "cuda") != 0)
    HALO_FAIL(HALO_ERR_ARG, "--tf32 needs --device cuda");
  if (a->gcn.deterministic && a->tf32)
    HALO_FAIL(HALO_ERR_ARG, "--tf32 and --deterministic: deterministic products round no input");
  /* Bit-identical by default on the CPU (docs/reproducibility.md): the
   * exact sums, unless --no-deterministic, or a flag they cannot run with
   * (--halo-aggregate auto reorders a boundary row's sum), which keeps the
   * float path, as the header says; given explicitly, --deterministic
   * refuses it instead.  On cuda the float path stays the default until a
   * GPU has measured what the exact one costs there. */
  if (!a->gcn.deterministic && !a->gcn.no_deterministic)
    a->gcn.deterministic =
        strcmp(a->device, "cpu") == 0 && a->gcn.halo_aggregate != HALO_AGGREGATE_AUTO;
  if (a->eval_file) goto model_rules_done;
  if (a->gcn.sage_normalize && a->gcn.model != HALO_MODEL_SAGE)
    HALO_FAIL(HALO_ERR_ARG, "--sage-normalize: the model is %s, not sage", a->model);
  if (given[F_AGGR] && a->gcn.model != HALO_MODEL_SAGE)
    HALO_FAIL(HALO_ERR_ARG, "--aggr: the model is %s, not sage", a->model);
  if ((given[F_GCN_ADD_SELF_LOOPS] || given[F_GCN_NORMALIZE]) && a->gcn.model != HALO_MODEL_GCN)
    HALO_FAIL(HALO_ERR_ARG, "%s: the model is %s, not gcn",
              given[F_GCN_ADD_SELF_LOOPS] ? "--gcn-add-self-loops" : "--gcn-normalize", a->model);
  /* PyG's GCNConv adds self-loops only while it normalises (add_self_loops
   * defaults to normalize, and refuses true without it). */
  if (!a->gcn.gcn_normalize && given[F_GCN_ADD_SELF_LOOPS] && a->gcn.gcn_self_loops)
    HALO_FAIL(HALO_ERR_ARG, "--gcn-add-self-loops true needs --gcn-normalize true (PyG's GCNConv "
                            "adds self-loops only while it normalises)");
  if (!a->gcn.gcn_normalize) a->gcn.gcn_self_loops = 0;
  {
    const char *why = halo_exchange_modes_refusal(&a->gcn);
    if (why) HALO_FAIL(HALO_ERR_ARG, "%s", why);
  }
  if (a->gcn.gin_train_eps && a->gcn.model != HALO_MODEL_GIN)
    HALO_FAIL(HALO_ERR_ARG, "--gin-train-eps: the model is %s, not gin", a->model);
  if (a->gcn.weight_decay_all && a->gcn.model != HALO_MODEL_GCN)
    HALO_FAIL(HALO_ERR_ARG, "--weight-decay-all: %s decays every parameter already", a->model);
  if ((given[F_HEADS] || given[F_OUTPUT_HEADS] || given[F_ATTN_DROPOUT]) &&
      a->gcn.model != HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG, "--heads, --output-heads and --attn-dropout are gat's; the model is %s",
              a->model);
  if ((a->gcn.halo_precision || a->gcn.halo_precision_bwd) && a->gcn.model == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-precision: gat exchanges several blocks per layer (features and "
              "attention scores), which the low-bit rows do not cover; use fp32");
  if (halo_sample_on(a->gcn.halo_sample) && a->gcn.model == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-sample: gat's attention softmax over a node's edges has no sampled "
              "backward here (its rows are not one linear aggregation); use 1");
  if (halo_sample_on(a->gcn.halo_sample) && strcmp(a->device, "cuda") == 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-sample: the sampled exchange gathers its rows on the host; it runs with "
              "--device cpu only (no CUDA twin yet)");
  if (a->gcn.halo_stale && a->gcn.model == HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-stale: gat exchanges two blocks per layer (features, then attention "
              "scores computed from them), which one stale slot per layer does not cover");
  if (a->gcn.halo_stale && strcmp(a->device, "cuda") == 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--halo-stale: the stale rows are kept and exchanged on the host; use --device cpu");
  if (given[F_HALO_STALE_MOMENTUM] && !a->gcn.halo_stale)
    HALO_FAIL(HALO_ERR_ARG, "--halo-stale-momentum smooths the stale rows: give --halo-stale too");
  if (a->gcn.model == HALO_MODEL_GAT) {
    /* Veličković et al.'s Cora settings (and PyG's example). */
    if (!given[F_HIDDEN]) a->gcn.hidden = 8;
    if (!given[F_DROPOUT]) a->gcn.dropout = 0.6f;
    if (!given[F_LR]) a->gcn.lr = 0.005f;
    if (!given[F_ACTIVATION]) a->gcn.activation = HALO_ACT_ELU;
  }
  if (a->gcn.optimizer != HALO_OPTIMIZER_SGD && (given[F_MOMENTUM] || given[F_NESTEROV]))
    HALO_FAIL(HALO_ERR_ARG, "%s is sgd's; the optimizer is %s",
              given[F_MOMENTUM] ? "--momentum" : "--nesterov",
              halo_optimizer_names[a->gcn.optimizer]);
  if (a->gcn.nesterov && a->gcn.momentum <= 0.0f)
    HALO_FAIL(HALO_ERR_ARG, "--nesterov needs a --momentum above 0 (as torch.optim.SGD)");
  {
    /* Each schedule's flags, named when given to another schedule. */
    const int sched = a->gcn.lr_schedule;
    const char *stray = given[F_LR_STEP_SIZE] && sched != HALO_LR_STEP ? "--lr-step-size"
                        : given[F_LR_GAMMA] && sched != HALO_LR_STEP && sched != HALO_LR_PLATEAU
                            ? "--lr-gamma"
                        : given[F_LR_MIN] && sched != HALO_LR_COSINE && sched != HALO_LR_PLATEAU
                            ? "--lr-min"
                        : given[F_LR_PATIENCE] && sched != HALO_LR_PLATEAU ? "--lr-patience"
                        : given[F_LR_EPOCHS] && sched != HALO_LR_COSINE    ? "--lr-epochs"
                                                                           : NULL;
    if (stray)
      HALO_FAIL(HALO_ERR_ARG, "%s does not apply to --lr-schedule %s", stray,
                halo_lr_schedule_names[sched]);
  }
  if (a->gcn.lr_schedule == HALO_LR_COSINE &&
      (a->lr_epochs ? a->lr_epochs : a->epochs) <= a->gcn.warmup_epochs && a->epochs > 0)
    HALO_FAIL(HALO_ERR_ARG,
              "--lr-schedule cosine: --warmup-epochs %d leaves no epoch of the %lld it spans "
              "(--lr-epochs, or --epochs)",
              a->gcn.warmup_epochs, (long long)(a->lr_epochs ? a->lr_epochs : a->epochs));
  if ((given[F_BN_MOMENTUM] || given[F_BN_EPS]) && a->gcn.norm != HALO_NORM_BATCH)
    HALO_FAIL(HALO_ERR_ARG, "--%s is --norm batch's; the norm is %s",
              given[F_BN_MOMENTUM] ? "bn-momentum" : "bn-eps", halo_norm_names[a->gcn.norm]);
  if (a->gcn.halo_aggregate == HALO_AGGREGATE_AUTO) {
    const char *why = halo_aggregate_refusal(&a->gcn);
    if (why) HALO_FAIL(HALO_ERR_ARG, "--halo-aggregate auto: %s", why);
    if (strcmp(a->device, "cuda") == 0)
      HALO_FAIL(HALO_ERR_ARG,
                "--halo-aggregate auto: the partial sums are made on the host; it runs with "
                "--device cpu only (no CUDA twin yet)");
  }
  if (given[F_NEGATIVE_SLOPE] && a->gcn.activation != HALO_ACT_LEAKY_RELU)
    HALO_FAIL(HALO_ERR_ARG, "--negative-slope is leaky_relu's; the activation is %s",
              halo_activation_names[a->gcn.activation]);
model_rules_done:
  if (given[F_EMBEDDINGS_LAYER] && !a->embeddings)
    HALO_FAIL(HALO_ERR_ARG, "--embeddings-layer needs --embeddings FILE.h5");
  if (a->embeddings && a->gcn.layers < 2 && !a->eval_file)
    HALO_FAIL(HALO_ERR_ARG,
              "--embeddings: a model of 1 layer has no hidden representation (its input is the "
              "features)");
  /* With --eval-only --checkpoint FILE, 0: the file's last layer. */
  if (a->embeddings && !given[F_EMBEDDINGS_LAYER] && !a->eval_file)
    a->embeddings_layer = a->gcn.layers;
  if (a->embeddings_layer > a->gcn.layers && !a->eval_file)
    HALO_FAIL(HALO_ERR_ARG, "--embeddings-layer %d: the model has %d layers (2 to %d)",
              a->embeddings_layer, a->gcn.layers, a->gcn.layers);
  if (!given[F_INPUT_DROPOUT]) a->gcn.input_dropout = a->gcn.dropout;
  if (!given[F_WARMUP]) a->warmup = a->epochs > 10 ? 5 : a->epochs > 1 ? 1 : 0;
  if (a->warmup >= a->epochs && a->epochs > 0)
    HALO_FAIL(HALO_ERR_ARG, "--warmup %lld: must be less than --epochs %lld", (long long)a->warmup,
              (long long)a->epochs);
done:
  return st;
}
