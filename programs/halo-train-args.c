#include "halo-train-args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-gat.h"

static const char usage[] =
    "usage: mpirun -np P halo-train DIR [options]\n"
    "  DIR                  shards written by halo-partition (P parts)\n"
    "  --model gcn|sage|gin|gat  model (gcn): GCN, GraphSAGE (mean), GIN, GAT\n"
    "                       (docs/models.md)\n"
    "  --layers N           graph convolutions (2)\n"
    "  --hidden N           hidden width (16), and the width of GIN's MLPs; gat: per\n"
    "                       head (8)\n"
    "  --activation relu|elu  between layers (relu; gat: elu)\n"
    "  --sage-normalize     sage: L2-normalise each layer's output rows\n"
    "  --gin-train-eps      gin: learn epsilon (default: GIN-0, epsilon = 0)\n"
    "  --heads K            gat: attention heads of the hidden layers, concatenated (8)\n"
    "  --output-heads K     gat: attention heads of the output layer, averaged (1)\n"
    "  --attn-dropout X     gat: dropout on the attention coefficients (0.6)\n"
    "  --residual           every layer adds its input (projected where the widths differ)\n"
    "  --norm none|layer    LayerNorm after every hidden layer (none)\n"
    "  --epochs N           training epochs (200)\n"
    "  --lr X               Adam learning rate (0.01; gat: 0.005)\n"
    "  --weight-decay X     L2 weight decay (5e-4): gcn's first layer only, every\n"
    "                       parameter of sage, gin and gat\n"
    "  --weight-decay-all   gcn: apply the weight decay to every layer\n"
    "  --dropout X          dropout of the hidden layers (0.5; gat: 0.6)\n"
    "  --input-dropout X    dropout of the input features (= --dropout); 0 computes\n"
    "                       the first layer's aggregation once at set-up\n"
    "  --no-normalize       keep the input features as they are (default: X - min(X),\n"
    "                       then each row divided by max(row sum, 1))\n"
    "  --seed N             seed of weights and dropout masks (0)\n"
    "  --device cpu|cuda    compute backend (cpu); cuda takes GPU (local rank mod the\n"
    "                       node's GPUs), so several ranks may share one\n"
    "  --tf32               cuda: round GEMM inputs to TF32 (faster, ~1e-3 relative)\n"
    "  --deterministic      bit-identical training for any number of ranks, partition and\n"
    "                       thread count: exact gradient sums (cpu and cuda)\n"
    "  --threads N          threads per rank (cores this rank may use / ranks on the node)\n"
    "  --warmup N           epochs left out of the mean epoch time (5, or fewer on short runs)\n"
    "  --metrics FILE       one JSON object per epoch, then a summary; - writes them to\n"
    "                       stdout, and the report's text to stderr\n"
    "  --force              let --metrics overwrite a file that is not a halo metrics\n"
    "                       file (a resumed run appends to its own)\n"
    "  --checkpoint DIR     save the training state in DIR (one HDF5 file per save)\n"
    "  --checkpoint-every N save after every N epochs and after the last (10)\n"
    "  --keep K             keep the newest K checkpoints (2)\n"
    "  --resume             continue from the newest valid checkpoint in DIR, up to\n"
    "                       --epochs in all (any P, any partition of the same graph)\n"
    "  --resume auto        the same when DIR holds a checkpoint, else start fresh\n"
    "                       (a requeued job's script needs no branch)\n"
    "  --eval-only          with --resume: evaluate the checkpoint, train nothing\n"
    "  --early-stop N       stop after N epochs without a better validation accuracy;\n"
    "                       with --checkpoint, also keep DIR/best.h5\n"
    "  --metric acc|f1|auc  the figure early stopping and the summary's best epoch use:\n"
    "                       accuracy, macro-F1, or ROC-AUC of a binary task (acc);\n"
    "                       multi-label: per-task means, ROC-AUC by default (auc)\n"
    "  --predict FILE.h5    write every node's logits, prediction and split (from the\n"
    "                       final epoch, or the best-validation one with --early-stop)\n"
    "SIGTERM or SIGUSR1 stops every rank after the current epoch, with a checkpoint\n"
    "when --checkpoint is set; the exit status is then 143 or 138.\n"
    "  --timeout SECONDS    abort the job when an exchange or a collective makes no\n"
    "                       progress for this long, naming the ranks waited for (off)\n"
    "  --quiet              print the header and the summary only\n"
    "  --help, -h           this text\n"
    "  --version            the version and the shard format it reads\n";

const char *halo_train_usage(void) { return usage; }

static halo_status parse_int(const char *flag, const char *text, int64_t lo, int64_t hi,
                             int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi) {
    halo_log_error("%s %s: expected an integer in [%lld, %lld]", flag, text, (long long)lo,
                   (long long)hi);
    return HALO_ERR_ARG;
  }
  *out = v;
  return HALO_OK;
}

/* Which ends of a range are open. */
enum { CLOSED = 0, LO_OPEN = 1, HI_OPEN = 2 };

/* A finite number in [lo, hi], with the ends `open` names left out, as a
 * float: the range is checked after the rounding to float too, so that
 * --dropout 0.9999999999 (1.0f) is refused here, not by the model on
 * every rank. */
static halo_status parse_real(const char *flag, const char *text, double lo, double hi, int open,
                              float *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  const float f = (float)v;
  if (errno || end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi || f < lo ||
      f > hi || ((open & LO_OPEN) && f <= lo) || ((open & HI_OPEN) && f >= hi)) {
    halo_log_error("%s %s: expected a number in %c%g, %g%c", flag, text, open & LO_OPEN ? '(' : '[',
                   lo, hi, open & HI_OPEN ? ')' : ']');
    return HALO_ERR_ARG;
  }
  *out = f;
  return HALO_OK;
}

static halo_status copy_word(const char *flag, const char *text, const char *const *allowed,
                             char *out, size_t size) {
  for (int i = 0; allowed[i]; i++) {
    if (strcmp(text, allowed[i]) == 0) {
      snprintf(out, size, "%s", text);
      return HALO_OK;
    }
  }
  char choices[256] = "";
  for (int i = 0, n = 0; allowed[i] && n < (int)sizeof choices; i++)
    n += snprintf(choices + n, sizeof choices - (size_t)n, "%s%s",
                  i == 0           ? ""
                  : allowed[i + 1] ? ", "
                                   : " or ",
                  allowed[i]);
  halo_log_error("%s %s: unknown value (expected %s)", flag, text, choices);
  return HALO_ERR_ARG;
}

/* Every flag without a value, then every flag with one. */
static const char *const switches[] = {
    "--quiet",    "--weight-decay-all", "--no-normalize",   "--resume",
    "--tf32",     "--deterministic",    "--sage-normalize", "--gin-train-eps",
    "--residual", "--eval-only",        "--force",          NULL};
static const char *const valued[] = {
    "--model",        "--activation",   "--norm",          "--layers",     "--hidden",
    "--heads",        "--output-heads", "--attn-dropout",  "--epochs",     "--lr",
    "--weight-decay", "--dropout",      "--input-dropout", "--seed",       "--device",
    "--threads",      "--metrics",      "--warmup",        "--checkpoint", "--checkpoint-every",
    "--keep",         "--timeout",      "--predict",       "--early-stop", "--metric", NULL};

static int listed(const char *const *list, const char *flag) {
  for (int k = 0; list[k]; k++)
    if (strcmp(flag, list[k]) == 0) return 1;
  return 0;
}

/* An unknown flag: one line, which names the flags it abbreviates when it
 * is a prefix of some (only whole names are taken, as by halo-partition). */
static halo_status unknown_flag(const char *flag) {
  char could[256] = "";
  size_t used = 0;
  int n = 0;
  static const char *const others[] = {"--help", "--version", NULL};
  const char *const *lists[] = {switches, valued, others};
  for (int l = 0; l < 3 && strlen(flag) > 2; l++) /* a bare "--" abbreviates nothing */
    for (int k = 0; lists[l][k]; k++) {
      if (strncmp(lists[l][k], flag, strlen(flag)) != 0) continue;
      if (used < sizeof could)
        used += (size_t)snprintf(could + used, sizeof could - used, "%s%s", n ? " or " : "",
                                 lists[l][k]);
      n++;
    }
  if (n > 0)
    halo_log_error("%s: %s flag names are not accepted; did you mean %s?", flag,
                   n > 1 ? "ambiguous; abbreviated" : "abbreviated", could);
  else
    halo_log_error("%s: unknown flag (see --help)", flag);
  return HALO_ERR_ARG;
}

halo_status halo_train_args_parse(int argc, char **argv, halo_train_args *a) {
  halo_status st = HALO_OK;
  static const char *const models[] = {"gcn", "sage", "gin", "gat", NULL};
  static const char *const activations[] = {"relu", "elu", NULL};
  static const char *const norms[] = {"none", "layer", NULL};
  char activation[8] = "relu", norm[8] = "none";
  static const char *const devices[] = {"cpu", "cuda", NULL};
  int input_dropout_set = 0, warmup_set = 0, every_set = 0, keep_set = 0;
  /* The flags whose default depends on the model (gat's: the paper's). */
  int hidden_set = 0, dropout_set = 0, lr_set = 0, activation_set = 0, gat_flag = 0;
  int64_t v = 0;

  *a = (halo_train_args){.epochs = 200, .warmup = 5, .checkpoint_every = 10, .keep = 2};
  snprintf(a->model, sizeof a->model, "gcn");
  snprintf(a->device, sizeof a->device, "cpu");
  halo_net_options_default(&a->gcn);

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0) {
      a->help = 1;
      goto done;
    }
    if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0')
      HALO_FAIL(HALO_ERR_ARG, "%s: unknown flag (flags start with --; see --help)", arg);
    if (strncmp(arg, "--", 2) != 0) {
      if (a->dir) HALO_FAIL(HALO_ERR_ARG, "%s: only one shard folder may be given", arg);
      a->dir = arg;
      continue;
    }
    /* --flag=value or --flag value. */
    char flag[64];
    const char *value = NULL;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof flag) HALO_FAIL(HALO_ERR_ARG, "%s: unknown flag", arg);
    memcpy(flag, arg, len);
    flag[len] = '\0';

    if (strcmp(flag, "--help") == 0 || strcmp(flag, "--version") == 0) {
      if (eq) HALO_FAIL(HALO_ERR_ARG, "%s takes no value", flag);
      a->help = flag[2] == 'h';
      a->version = flag[2] == 'v';
      goto done;
    }
    if (strcmp(flag, "--resume") == 0) { /* --resume, --resume auto or --resume=auto */
      const char *mode = "";
      if (eq)
        mode = eq + 1;
      else if (i + 1 < argc && strcmp(argv[i + 1], "auto") == 0)
        mode = argv[++i];
      if (*mode && strcmp(mode, "auto") != 0)
        HALO_FAIL(HALO_ERR_ARG, "--resume=%s: the only value is auto", mode);
      a->resume = 1;
      a->resume_auto = *mode != '\0';
      continue;
    }
    if (listed(switches, flag)) {
      if (eq) HALO_FAIL(HALO_ERR_ARG, "%s takes no value", flag);
      if (strcmp(flag, "--quiet") == 0) a->quiet = 1;
      if (strcmp(flag, "--weight-decay-all") == 0) a->gcn.weight_decay_all = 1;
      if (strcmp(flag, "--no-normalize") == 0) a->gcn.normalize_features = 0;
      if (strcmp(flag, "--tf32") == 0) a->tf32 = 1;
      if (strcmp(flag, "--deterministic") == 0) a->gcn.deterministic = 1;
      if (strcmp(flag, "--sage-normalize") == 0) a->gcn.sage_normalize = 1;
      if (strcmp(flag, "--gin-train-eps") == 0) a->gcn.gin_train_eps = 1;
      if (strcmp(flag, "--residual") == 0) a->gcn.residual = 1;
      if (strcmp(flag, "--eval-only") == 0) a->eval_only = 1;
      if (strcmp(flag, "--force") == 0) a->force = 1;
      continue;
    }
    if (!listed(valued, flag)) HALO_TRY(unknown_flag(flag));
    if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc) HALO_FAIL(HALO_ERR_ARG, "%s needs a value", flag);
      value = argv[++i];
    }

    if (strcmp(flag, "--model") == 0) {
      HALO_TRY(copy_word(flag, value, models, a->model, sizeof a->model));
      halo_model_parse(a->model, &a->gcn.model);
    } else if (strcmp(flag, "--activation") == 0) {
      HALO_TRY(copy_word(flag, value, activations, activation, sizeof activation));
      a->gcn.activation = strcmp(activation, "elu") == 0 ? HALO_ACT_ELU : HALO_ACT_RELU;
      activation_set = 1;
    } else if (strcmp(flag, "--norm") == 0) {
      HALO_TRY(copy_word(flag, value, norms, norm, sizeof norm));
      a->gcn.layer_norm = strcmp(norm, "layer") == 0;
    } else if (strcmp(flag, "--device") == 0) {
      HALO_TRY(copy_word(flag, value, devices, a->device, sizeof a->device));
    } else if (strcmp(flag, "--layers") == 0) {
      HALO_TRY(parse_int(flag, value, 1, HALO_MAX_LAYERS, &v));
      a->gcn.layers = (int32_t)v;
    } else if (strcmp(flag, "--hidden") == 0) {
      HALO_TRY(parse_int(flag, value, 1, 1 << 20, &v));
      a->gcn.hidden = (int32_t)v;
      hidden_set = 1;
    } else if (strcmp(flag, "--heads") == 0 || strcmp(flag, "--output-heads") == 0) {
      HALO_TRY(parse_int(flag, value, 1, HALO_GAT_MAX_HEADS, &v));
      *(flag[2] == 'h' ? &a->gcn.heads : &a->gcn.output_heads) = (int32_t)v;
      gat_flag = 1;
    } else if (strcmp(flag, "--attn-dropout") == 0) {
      HALO_TRY(parse_real(flag, value, 0.0, 1.0, HI_OPEN, &a->gcn.attn_dropout));
      gat_flag = 1;
    } else if (strcmp(flag, "--epochs") == 0) {
      HALO_TRY(parse_int(flag, value, 0, INT32_MAX, &a->epochs));
    } else if (strcmp(flag, "--warmup") == 0) {
      HALO_TRY(parse_int(flag, value, 0, INT32_MAX, &a->warmup));
      warmup_set = 1;
    } else if (strcmp(flag, "--seed") == 0) {
      HALO_TRY(parse_int(flag, value, 0, INT64_MAX, &v));
      a->gcn.seed = (uint64_t)v;
    } else if (strcmp(flag, "--threads") == 0) {
      HALO_TRY(parse_int(flag, value, 1, 4096, &v));
      a->threads = (int)v;
    } else if (strcmp(flag, "--lr") == 0) {
      HALO_TRY(parse_real(flag, value, 0.0, 1e6, LO_OPEN, &a->gcn.lr));
      lr_set = 1;
    } else if (strcmp(flag, "--weight-decay") == 0) {
      HALO_TRY(parse_real(flag, value, 0.0, 1e6, CLOSED, &a->gcn.weight_decay));
    } else if (strcmp(flag, "--dropout") == 0) {
      HALO_TRY(parse_real(flag, value, 0.0, 1.0, HI_OPEN, &a->gcn.dropout));
      dropout_set = 1;
    } else if (strcmp(flag, "--input-dropout") == 0) {
      HALO_TRY(parse_real(flag, value, 0.0, 1.0, HI_OPEN, &a->gcn.input_dropout));
      input_dropout_set = 1;
    } else if (strcmp(flag, "--checkpoint") == 0) {
      if (!*value) HALO_FAIL(HALO_ERR_ARG, "--checkpoint needs a folder name");
      a->checkpoint = value;
    } else if (strcmp(flag, "--checkpoint-every") == 0) {
      HALO_TRY(parse_int(flag, value, 1, INT32_MAX, &a->checkpoint_every));
      every_set = 1;
    } else if (strcmp(flag, "--keep") == 0) {
      HALO_TRY(parse_int(flag, value, 1, 1000000, &v));
      a->keep = (int)v;
      keep_set = 1;
    } else if (strcmp(flag, "--timeout") == 0) {
      /* Under 0.1 s the watchdog would fire on an ordinary set-up wait. */
      float t = 0.0f;
      HALO_TRY(parse_real(flag, value, 0.1, 1e6, CLOSED, &t));
      a->timeout = t;
    } else if (strcmp(flag, "--metrics") == 0) {
      if (!*value) HALO_FAIL(HALO_ERR_ARG, "--metrics needs a file name");
      a->metrics = value;
    } else if (strcmp(flag, "--predict") == 0) {
      if (!*value) HALO_FAIL(HALO_ERR_ARG, "--predict needs a file name");
      a->predict = value;
    } else if (strcmp(flag, "--early-stop") == 0) {
      HALO_TRY(parse_int(flag, value, 1, INT32_MAX, &a->early_stop));
    } else if (strcmp(flag, "--metric") == 0) {
      static const char *const metrics[] = {"acc", "f1", "auc", NULL};
      char m[8];
      HALO_TRY(copy_word(flag, value, metrics, m, sizeof m));
      a->metric = m[0] == 'f' ? 1 : m[0] == 'a' && m[1] == 'u' ? 2 : 0;
      a->metric_given = 1;
    }
  }
  if (!a->dir) HALO_FAIL(HALO_ERR_ARG, "no shard folder given (usage: halo-train DIR [options])");
  if (!a->checkpoint && (a->resume || every_set || keep_set))
    HALO_FAIL(HALO_ERR_ARG, "%s needs --checkpoint DIR",
              a->resume   ? "--resume"
              : every_set ? "--checkpoint-every"
                          : "--keep");
  if (a->eval_only && !a->resume)
    HALO_FAIL(HALO_ERR_ARG, "--eval-only evaluates a checkpoint: give --checkpoint DIR --resume");
  if (a->eval_only && a->early_stop)
    HALO_FAIL(HALO_ERR_ARG, "--eval-only trains nothing, so --early-stop has nothing to stop");
  if (a->tf32 && strcmp(a->device, "cuda") != 0)
    HALO_FAIL(HALO_ERR_ARG, "--tf32 needs --device cuda");
  if (a->gcn.deterministic && a->tf32)
    HALO_FAIL(HALO_ERR_ARG, "--tf32 and --deterministic: deterministic products round no input");
  if (a->gcn.sage_normalize && a->gcn.model != HALO_MODEL_SAGE)
    HALO_FAIL(HALO_ERR_ARG, "--sage-normalize: the model is %s, not sage", a->model);
  if (a->gcn.gin_train_eps && a->gcn.model != HALO_MODEL_GIN)
    HALO_FAIL(HALO_ERR_ARG, "--gin-train-eps: the model is %s, not gin", a->model);
  if (a->gcn.weight_decay_all && a->gcn.model != HALO_MODEL_GCN)
    HALO_FAIL(HALO_ERR_ARG, "--weight-decay-all: %s decays every parameter already", a->model);
  if (gat_flag && a->gcn.model != HALO_MODEL_GAT)
    HALO_FAIL(HALO_ERR_ARG, "--heads, --output-heads and --attn-dropout are gat's; the model is %s",
              a->model);
  if (a->gcn.model == HALO_MODEL_GAT) {
    /* Veličković et al.'s Cora settings (and PyG's example). */
    if (!hidden_set) a->gcn.hidden = 8;
    if (!dropout_set) a->gcn.dropout = 0.6f;
    if (!lr_set) a->gcn.lr = 0.005f;
    if (!activation_set) a->gcn.activation = HALO_ACT_ELU;
  }
  if (!input_dropout_set) a->gcn.input_dropout = a->gcn.dropout;
  if (!warmup_set) a->warmup = a->epochs > 10 ? 5 : a->epochs > 1 ? 1 : 0;
  if (a->warmup >= a->epochs && a->epochs > 0)
    HALO_FAIL(HALO_ERR_ARG, "--warmup %lld: must be less than --epochs %lld", (long long)a->warmup,
              (long long)a->epochs);
done:
  return st;
}
