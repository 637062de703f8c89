#include "halo-model-options.h"

#include <stdio.h>
#include <string.h>

#include "halo-sample.h"

const char *const halo_activation_names[] = {
    [HALO_ACT_RELU] = "relu", [HALO_ACT_ELU] = "elu", [HALO_ACT_LEAKY_RELU] = "leaky_relu",
    [HALO_ACT_GELU] = "gelu", NULL};
const char *const halo_norm_names[] = {
    [HALO_NORM_NONE] = "none", [HALO_NORM_LAYER] = "layer", [HALO_NORM_BATCH] = "batch", NULL};
const char *const halo_optimizer_names[] = {
    [HALO_OPTIMIZER_ADAM] = "adam", [HALO_OPTIMIZER_ADAMW] = "adamw", [HALO_OPTIMIZER_SGD] = "sgd",
    NULL};
const char *const halo_lr_schedule_names[] = {[HALO_LR_CONSTANT] = "constant",
                                              [HALO_LR_STEP] = "step",
                                              [HALO_LR_COSINE] = "cosine",
                                              [HALO_LR_PLATEAU] = "plateau", NULL};
const char *const halo_aggregate_names[] = {[HALO_AGGREGATE_POST] = "post",
                                            [HALO_AGGREGATE_AUTO] = "auto", NULL};
const char *const halo_aggr_names[] = {
    [HALO_AGGR_MEAN] = "mean", [HALO_AGGR_MAX] = "max", [HALO_AGGR_SUM] = "sum", NULL};
const char *const halo_bool_names[] = {"false", "true", NULL};

static const halo_model_option options[] = {
#define HALO__MOPT_ROW(id, row, key, role, store, since, slot, only, def) \
  {row, key, role, store, since, slot, only, def},
    HALO_MODEL_OPTIONS(HALO__MOPT_ROW, halo_net_options, HALO_MODEL_OPTION_FIELD)
#undef HALO__MOPT_ROW
};
_Static_assert(sizeof options / sizeof options[0] == HALO_MOPT_COUNT, "one row per id");

const halo_model_option *halo_model_option_at(int i) {
  return i >= 0 && i < HALO_MOPT_COUNT ? &options[i] : NULL;
}

const halo_model_option *halo_model_option_of_key(const char *key) {
  for (int i = 0; i < HALO_MOPT_COUNT; i++)
    if (strcmp(options[i].key, key) == 0) return &options[i];
  return NULL;
}

static const void *field_of(const halo_model_option *opt, const halo_net_options *o) {
  return (const char *)o + opt->flag.offset;
}

static int is_real(const halo_model_option *opt) { return opt->flag.kind == HALO_FLAG_REAL; }

int64_t halo_model_option_int(const halo_model_option *opt, const halo_net_options *o) {
  const void *p = field_of(opt, o);
  if (is_real(opt)) return (int64_t)halo_model_option_number(opt, o);
  int64_t v = 0;
  if (opt->flag.size == sizeof(int64_t)) {
    memcpy(&v, p, sizeof v);
  } else {
    int32_t w = 0;
    memcpy(&w, p, sizeof w);
    v = w;
  }
  return opt->flag.kind == HALO_FLAG_SWITCH ? v != 0 : v;
}

double halo_model_option_number(const halo_model_option *opt, const halo_net_options *o) {
  const void *p = field_of(opt, o);
  if (!is_real(opt)) return (double)halo_model_option_int(opt, o);
  if (opt->flag.size == sizeof(double)) {
    double d = 0.0;
    memcpy(&d, p, sizeof d);
    return d;
  }
  float f = 0.0f;
  memcpy(&f, p, sizeof f);
  return f;
}

void halo_model_option_set_int(const halo_model_option *opt, halo_net_options *o, int64_t v) {
  void *p = (char *)o + opt->flag.offset;
  if (is_real(opt)) {
    halo_model_option_set_number(opt, o, (double)v);
  } else if (opt->flag.size == sizeof(int64_t)) {
    memcpy(p, &v, sizeof v);
  } else {
    const int32_t w = (int32_t)(opt->flag.kind == HALO_FLAG_SWITCH ? v != 0 : v);
    memcpy(p, &w, sizeof w);
  }
}

void halo_model_option_set_number(const halo_model_option *opt, halo_net_options *o, double v) {
  void *p = (char *)o + opt->flag.offset;
  if (!is_real(opt)) {
    halo_model_option_set_int(opt, o, (int64_t)v);
  } else if (opt->flag.size == sizeof(double)) {
    memcpy(p, &v, sizeof v);
  } else {
    const float f = (float)v;
    memcpy(p, &f, sizeof f);
  }
}

void halo_model_options_default(halo_net_options *o) {
  *o = (halo_net_options){.sparse_features = -1, .row_lists = 0};
  for (int i = 0; i < HALO_MOPT_COUNT; i++)
    halo_model_option_set_number(&options[i], o, options[i].def);
}

int halo_model_option_equal(const halo_model_option *opt, const halo_net_options *a,
                            const halo_net_options *b) {
  if (is_real(opt)) return halo_model_option_number(opt, a) == halo_model_option_number(opt, b);
  return halo_model_option_int(opt, a) == halo_model_option_int(opt, b);
}

void halo_model_option_format(const halo_model_option *opt, const halo_net_options *o, char *out,
                              size_t size) {
  const int64_t v = halo_model_option_int(opt, o);
  int nwords = 0;
  switch (opt->flag.kind) {
    case HALO_FLAG_REAL:
      snprintf(out, size, "%g", halo_model_option_number(opt, o));
      break;
    case HALO_FLAG_SWITCH:
      snprintf(out, size, "%s", v == (opt->flag.ilo != 0) ? "on" : "off");
      break;
    case HALO_FLAG_CHOICE:
      while (opt->flag.words[nwords]) nwords++;
      if (v >= 0 && v < nwords)
        snprintf(out, size, "%s", opt->flag.words[v]);
      else
        snprintf(out, size, "%lld", (long long)v);
      break;
    default:
      /* A U64 store (the seed) prints in full, as unsigned. */
      if (opt->store == HALO_OPTION_U64)
        snprintf(out, size, "%llu", (unsigned long long)v);
      else
        snprintf(out, size, "%lld", (long long)v);
      break;
  }
}

int halo_model_option_applies(const halo_model_option *opt, halo_model_kind kind) {
  return opt->only < 0 || opt->only == (int)kind;
}

halo_model_config halo_model_config_of_options(const halo_net_options *o) {
  return (halo_model_config){.kind = o->model,
                             .input_dropout = o->input_dropout > 0.0f,
                             .mlp_hidden = o->hidden,
                             .train_eps = o->gin_train_eps,
                             .residual = o->residual,
                             .norm = (int)o->norm,
                             .heads = o->heads,
                             .output_heads = o->output_heads,
                             .sage_max = o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MAX,
                             .eval_cache = !o->no_eval_cache};
}

const char *halo_aggregate_refusal(const halo_net_options *o) {
  if (o->model == HALO_MODEL_GAT)
    return "gat's attention weighs each edge by the receiver's row and the sender's together, "
           "so no sender can sum for the receiver; use post";
  if (o->deterministic)
    return "a partial sum changes the order of each boundary row's sum, so training would not "
           "be bit-identical to post or across partitions; drop --deterministic";
  if (o->aggr != HALO_AGGR_MEAN || !o->gcn_self_loops || !o->gcn_normalize)
    return "the covers are built for GCN's normalised adjacency, SAGE's mean and GIN's sum; "
           "drop --aggr and the --gcn-* flags, or use post";
  return NULL;
}

const char *halo_exchange_modes_refusal(const halo_net_options *o) {
  const int sample = halo_sample_on(o->halo_sample);
  const int lowbit = o->halo_precision != HALO_PREC_FP32 || o->halo_precision_bwd != HALO_PREC_FP32;
  if (o->halo_stale && sample)
    return "--halo-stale with --halo-sample: a stale slot holds every boundary row of the last "
           "epoch, a sampled epoch keeps only its draw; use one of them";
  if (o->halo_aggregate == HALO_AGGREGATE_AUTO && sample)
    return "--halo-aggregate auto with --halo-sample: an epoch's draw changes which rows the "
           "covers need; use one of them";
  if (o->model == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MAX && (o->halo_stale || sample || lowbit))
    return o->halo_stale ? "--aggr max with --halo-stale: max's backward exchanges arg-max ids "
                           "and then gradients, which stale slots do not carry"
           : sample      ? "--aggr max with --halo-sample: max's backward exchanges arg-max ids "
                           "and then gradients, which the sampled exchange does not carry"
                         : "--halo-precision: sage --aggr max exchanges arg-max ids, which the "
                           "low-bit rows do not carry; use fp32";
  return NULL;
}
