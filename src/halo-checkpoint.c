#include "halo-checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halo-h5.h"

#define CKPT_FORMAT "halo-checkpoint"
#define CKPT_PREFIX "ckpt-"
#define CKPT_SUFFIX ".h5"
#define CKPT_ASIDE ".damaged"
#define CKPT_MAX_LISTED 4096

halo_status halo_checkpoint_alloc(halo_checkpoint *c, int64_t nparams, int64_t nrunning) {
  halo_status st = HALO_OK;
  c->params = c->adam_m = c->adam_v = c->bn_running = NULL;
  c->nparams = nparams;
  c->nrunning = nrunning;
  HALO_ALLOC(c->params, nparams, "checkpoint parameters");
  HALO_ALLOC(c->adam_m, nparams, "checkpoint Adam moments");
  HALO_ALLOC(c->adam_v, nparams, "checkpoint Adam moments");
  if (nrunning > 0) HALO_ALLOC(c->bn_running, nrunning, "checkpoint BatchNorm statistics");
done:
  if (st != HALO_OK) halo_checkpoint_clear(c);
  return st;
}

void halo_checkpoint_clear(halo_checkpoint *c) {
  free(c->params);
  free(c->adam_m);
  free(c->adam_v);
  free(c->bn_running);
  c->params = c->adam_m = c->adam_v = c->bn_running = NULL;
}

/* The epoch of a file name "ckpt-EEEEEEEE.h5", or -1 for any other name,
 * "ckpt-1.h5" among them: only the names the writer makes are checkpoints,
 * so that the path made from the epoch is the file that was listed. */
static int64_t name_epoch(const char *name) {
  size_t n = strlen(name), pre = strlen(CKPT_PREFIX), suf = strlen(CKPT_SUFFIX);
  if (n <= pre + suf || strncmp(name, CKPT_PREFIX, pre) != 0 ||
      strcmp(name + n - suf, CKPT_SUFFIX) != 0)
    return -1;
  int64_t epoch = 0;
  for (size_t i = pre; i < n - suf; i++) {
    if (name[i] < '0' || name[i] > '9' || epoch > INT64_MAX / 10 - 9) return -1;
    epoch = epoch * 10 + (name[i] - '0');
  }
  char canonical[32];
  int len = snprintf(canonical, sizeof canonical, "%08lld", (long long)epoch);
  if (len != (int)(n - pre - suf) || strncmp(canonical, name + pre, (size_t)len) != 0) return -1;
  return epoch;
}

static int by_epoch_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x < y) - (x > y);
}

/* The epochs of DIR's checkpoints, newest first (at most CKPT_MAX_LISTED). */
static halo_status list_epochs(const char *dir, int64_t *epochs, int *count) {
  halo_status st = HALO_OK;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d) HALO_FAIL(HALO_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
  for (struct dirent *e; (e = readdir(d));) {
    int64_t epoch = name_epoch(e->d_name);
    if (epoch >= 0 && *count < CKPT_MAX_LISTED) epochs[(*count)++] = epoch;
  }
  closedir(d);
  qsort(epochs, (size_t)*count, sizeof *epochs, by_epoch_desc);
done:
  return st;
}

static halo_status epoch_path(char *path, size_t size, const char *dir, int64_t epoch) {
  int n = snprintf(path, size, "%s/" CKPT_PREFIX "%08lld" CKPT_SUFFIX, dir, (long long)epoch);
  if (n < 0 || (size_t)n >= size) {
    halo_log_error("%s: path too long", dir);
    return HALO_ERR_ARG;
  }
  return HALO_OK;
}

/* A numeric attribute of the root group. */
typedef struct ckpt_attr {
  const char *name;
  halo_h5_kind kind;
  void *value;
} ckpt_attr;

enum { CKPT_STATE_ATTRS = 2, CKPT_GRAPH_ATTRS = 8, CKPT_OPTIM_ATTRS = 4 };

/* The checkpoint's own numeric attributes, pointing into *c: the training
 * state, written before the model's options, and the graph's identity,
 * written between the options every checkpoint holds and the later ones.
 * One list serves the writer and the reader, so that they cannot drift
 * apart. */
static void own_attrs(halo_checkpoint *c, ckpt_attr state[CKPT_STATE_ATTRS],
                      ckpt_attr graph[CKPT_GRAPH_ATTRS]) {
  const ckpt_attr s[CKPT_STATE_ATTRS] = {
      {"epoch", HALO_H5_I64, &c->epoch},
      {"adam_t", HALO_H5_I64, &c->adam_t},
  };
  const ckpt_attr g[CKPT_GRAPH_ATTRS] = {
      {"source_digest", HALO_H5_U64, &c->source_digest},
      {"nodes", HALO_H5_I64, &c->nodes},
      {"edges", HALO_H5_I64, &c->edges},
      {"features", HALO_H5_I32, &c->features},
      {"classes", HALO_H5_I32, &c->classes},
      {"parts", HALO_H5_I32, &c->parts},
      {"run_id", HALO_H5_U64, &c->run_id},
      {"nparams", HALO_H5_I64, &c->nparams},
  };
  memcpy(state, s, sizeof s);
  memcpy(graph, g, sizeof g);
}

/* The schedule's state, written last: a file without them (written
 * before --lr-schedule, or of another schedule) reads the start of the
 * schedule (halo_plateau_init) and the option's --lr. */
static void optim_attrs(halo_checkpoint *c, ckpt_attr out[CKPT_OPTIM_ATTRS]) {
  const ckpt_attr a[CKPT_OPTIM_ATTRS] = {
      {"optim_lr", HALO_H5_F32, &c->lr},
      {"optim_plateau_lr", HALO_H5_F64, &c->plateau.lr},
      {"optim_plateau_best", HALO_H5_F64, &c->plateau.best},
      {"optim_plateau_bad_epochs", HALO_H5_I64, &c->plateau.bad_epochs},
  };
  memcpy(out, a, sizeof a);
}

/* The model options of one SINCE group (model/halo-model-options.h), in
 * their SLOT order, which keeps the layout of the files; returns how many.
 * The options of group 0 are in every checkpoint; those of group 1 came
 * later, and a checkpoint without them reads their defaults. */
static int stored_options(int since, const halo_model_option *out[HALO_MOPT_COUNT]) {
  int n = 0;
  for (int slot = 1; slot <= HALO_MOPT_MAX_SLOT; slot++)
    for (int i = 0; i < HALO_MOPT_COUNT; i++) {
      const halo_model_option *opt = halo_model_option_at(i);
      if (opt->store != HALO_OPTION_NONE && opt->since == since && opt->slot == slot)
        out[n++] = opt;
    }
  return n;
}

static halo_status write_option(hid_t f, const char *path, const halo_model_option *opt,
                                const halo_net_options *o) {
  const int64_t v = halo_model_option_int(opt, o);
  const int32_t i32 = (int32_t)v;
  const float f32 = (float)halo_model_option_number(opt, o);
  const uint64_t u64 = (uint64_t)v;
  switch (opt->store) {
    case HALO_OPTION_I32:
      return halo_h5_attr_write(f, path, opt->key, HALO_H5_I32, &i32);
    case HALO_OPTION_F32:
      return halo_h5_attr_write(f, path, opt->key, HALO_H5_F32, &f32);
    case HALO_OPTION_U64:
      return halo_h5_attr_write(f, path, opt->key, HALO_H5_U64, &u64);
    case HALO_OPTION_NONE:
      break;
  }
  return HALO_OK;
}

/* Reads one option into *o; a later option (SINCE 1) that the file lacks
 * takes its default. */
static halo_status read_option(hid_t f, const char *path, const halo_model_option *opt,
                               halo_net_options *o) {
  halo_status st = HALO_OK;
  int32_t i32 = 0;
  float f32 = 0.0f;
  uint64_t u64 = 0;
  if (opt->since > 0 && H5Aexists(f, opt->key) <= 0) {
    halo_model_option_set_number(opt, o, opt->def);
    goto done;
  }
  switch (opt->store) {
    case HALO_OPTION_I32:
      HALO_TRY(halo_h5_attr_read(f, path, opt->key, HALO_H5_I32, &i32));
      halo_model_option_set_int(opt, o, i32);
      break;
    case HALO_OPTION_F32:
      HALO_TRY(halo_h5_attr_read(f, path, opt->key, HALO_H5_F32, &f32));
      halo_model_option_set_number(opt, o, f32);
      break;
    case HALO_OPTION_U64:
      HALO_TRY(halo_h5_attr_read(f, path, opt->key, HALO_H5_U64, &u64));
      halo_model_option_set_int(opt, o, (int64_t)u64);
      break;
    case HALO_OPTION_NONE:
      break;
  }
done:
  return st;
}

static halo_status write_attrs(hid_t f, const char *path, const halo_checkpoint *c) {
  halo_status st = HALO_OK;
  int32_t version = HALO_CHECKPOINT_FORMAT_VERSION;
  ckpt_attr state[CKPT_STATE_ATTRS], graph[CKPT_GRAPH_ATTRS];
  const halo_model_option *opts[HALO_MOPT_COUNT];
  own_attrs((halo_checkpoint *)c, state, graph); /* only read here */
  HALO_TRY(halo_h5_attr_write_str(f, path, "format", CKPT_FORMAT));
  HALO_TRY(halo_h5_attr_write(f, path, "format_version", HALO_H5_I32, &version));
  HALO_TRY(halo_h5_attr_write_str(f, path, "model", c->model));
  for (int k = 0; k < CKPT_STATE_ATTRS; k++)
    HALO_TRY(halo_h5_attr_write(f, path, state[k].name, state[k].kind, state[k].value));
  for (int k = 0, n = stored_options(0, opts); k < n; k++)
    HALO_TRY(write_option(f, path, opts[k], &c->gcn));
  for (int k = 0; k < CKPT_GRAPH_ATTRS; k++)
    HALO_TRY(halo_h5_attr_write(f, path, graph[k].name, graph[k].kind, graph[k].value));
  for (int k = 0, n = stored_options(1, opts); k < n; k++)
    HALO_TRY(write_option(f, path, opts[k], &c->gcn));
  ckpt_attr optim[CKPT_OPTIM_ATTRS];
  optim_attrs((halo_checkpoint *)c, optim);
  for (int k = 0; k < CKPT_OPTIM_ATTRS; k++)
    HALO_TRY(halo_h5_attr_write(f, path, optim[k].name, optim[k].kind, optim[k].value));
  if (c->edge_weighted)
    HALO_TRY(halo_h5_attr_write(f, path, "edge_weighted", HALO_H5_I32, &c->edge_weighted));
done:
  return st;
}

/* The three arrays a checkpoint holds, each laid out as the parameters:
 * format 2 names each tensor ROOT/layerL/NAME (L from 0, NAME the
 * description's: model/halo-model.c's layer_tensors, the one table of
 * tensor names); format 1 kept each array flat at /params, /adam_m, /adam_v. */
enum { CKPT_ARRAYS = 3 };
static const char *const array_root[CKPT_ARRAYS] = {"/model", "/optimizer/adam_m",
                                                    "/optimizer/adam_v"};
/* SGD's one array, in adam_m's place. */
static const char *const sgd_root = "/optimizer/sgd_momentum";

/* Whether array k is in a checkpoint of options *o: SGD has no second
 * moment. */
static int array_held(const halo_net_options *o, int k) {
  return !(k == 2 && o->optimizer == HALO_OPTIMIZER_SGD);
}
static const char *const array_flat[CKPT_ARRAYS] = {"/params", "/adam_m", "/adam_v"};

/* The model a checkpoint's settings describe, which must have its
 * parameter count. */
static halo_status describe(const halo_checkpoint *c, const char *path, halo_model_desc *d) {
  halo_status st = HALO_OK;
  /* The widths halo_model_describe would refuse (with a line of its own)
   * are refused here first; the reader checked the layers and heads. */
  const int widths = c->features >= 1 && c->classes >= 1;
  if (!widths || halo_net_describe(&c->gcn, c->features, c->classes, d) != HALO_OK ||
      d->params != c->nparams)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: its settings (%s, %d layers, hidden %d, %d features, %d classes) do not "
              "describe its %lld parameters",
              path, c->model, c->gcn.layers, c->gcn.hidden, c->features, c->classes,
              (long long)c->nparams);
done:
  return st;
}

/* A tensor's dataset name and shape: a weight is rows × cols, every other
 * tensor (biases, LayerNorm's scale and shift, GIN's ε) a vector. */
static int tensor_shape(const halo_param_tensor *t, hsize_t dims[2]) {
  if (t->kind == HALO_TENSOR_WEIGHT) {
    dims[0] = (hsize_t)t->rows;
    dims[1] = (hsize_t)t->cols;
    return 2;
  }
  dims[0] = (hsize_t)(t->rows * t->cols);
  return 1;
}

static void tensor_name(char *out, size_t size, const halo_net_options *o, int array, int l,
                        const halo_param_tensor *t) {
  const char *root =
      array == 1 && o->optimizer == HALO_OPTIMIZER_SGD ? sgd_root : array_root[array];
  snprintf(out, size, "%s/layer%d/%s", root, l, t->name);
}

/* The BatchNorm sites' running statistics, /bn_running/layerL/NAME: for
 * each site its mean and its variance, one vector each.  `write`: from
 * c->bn_running into the file; otherwise from the file into `out`
 * (d->running floats). */
static halo_status bn_running_io(hid_t f, const char *path, const halo_model_desc *d, int write,
                                 const float *in, float *out) {
  halo_status st = HALO_OK;
  void *data = NULL;
  static const char *const names[2][2] = {{"mean_1", "var_1"}, {"mean", "var"}};
  for (int l = 0; l < d->layers; l++)
    for (int site = 0; site < 2; site++) {
      const int64_t at = d->layer[l].bn_running[site];
      if (at < 0) continue;
      const int64_t cols = site == HALO_BN_MLP ? d->layer[l].d_mid : d->layer[l].d_out;
      for (int k = 0; k < 2; k++) {
        char name[128];
        hsize_t dims[1] = {(hsize_t)cols};
        snprintf(name, sizeof name, "/bn_running/layer%d/%s", l, names[site][k]);
        if (write) {
          HALO_TRY(halo_h5_write(f, path, name, HALO_H5_F32, 1, dims, in + at + k * cols));
          continue;
        }
        HALO_TRY(halo_h5_read(f, path, name, HALO_H5_F32, 1, dims, 1, &data));
        const float *v = data;
        for (int64_t j = 0; j < cols; j++)
          if (!isfinite(v[j]) || (k == 1 && v[j] < 0.0f))
            HALO_FAIL(HALO_ERR_FORMAT, "%s: %s[%lld] = %g is not a %s", path, name, (long long)j,
                      (double)v[j], k == 1 ? "variance" : "finite mean");
        memcpy(out + at + k * cols, data, (size_t)cols * sizeof(float));
        free(data);
        data = NULL;
      }
    }
done:
  free(data);
  return st;
}

static halo_status write_tensors(hid_t f, const char *path, const halo_checkpoint *c) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  const float *arrays[CKPT_ARRAYS] = {c->params, c->adam_m, c->adam_v};
  HALO_TRY(describe(c, path, &d));
  for (int k = 0; k < CKPT_ARRAYS; k++)
    for (int l = 0; l < d.layers && array_held(&c->gcn, k); l++)
      for (int i = 0; i < d.layer[l].ntensors; i++) {
        const halo_param_tensor *t = &d.layer[l].tensor[i];
        char name[128];
        hsize_t dims[2];
        const int rank = tensor_shape(t, dims);
        tensor_name(name, sizeof name, &c->gcn, k, l, t);
        HALO_TRY(halo_h5_write(f, path, name, HALO_H5_F32, rank, dims, arrays[k] + t->offset));
      }
  if (d.running > 0) {
    if (c->nrunning != d.running || !c->bn_running)
      HALO_FAIL(HALO_ERR_ARG, "%s: %lld BatchNorm statistics given, the model has %lld", path,
                (long long)c->nrunning, (long long)d.running);
    HALO_TRY(bn_running_io(f, path, &d, 1, c->bn_running, NULL));
  }
done:
  return st;
}

/* Format 2's tensors into the three flat arrays (nparams each). */
static halo_status read_tensors(hid_t f, const char *path, halo_checkpoint *c,
                                float *arrays[CKPT_ARRAYS]) {
  halo_status st = HALO_OK;
  halo_model_desc d;
  void *data = NULL;
  HALO_TRY(describe(c, path, &d));
  if (d.running > 0) { /* a BatchNorm model's, which came after format 2 */
    c->nrunning = d.running;
    HALO_ALLOC(c->bn_running, d.running, "checkpoint BatchNorm statistics");
    HALO_TRY(bn_running_io(f, path, &d, 0, NULL, c->bn_running));
  }
  for (int k = 0; k < CKPT_ARRAYS; k++) {
    HALO_ALLOC(arrays[k], c->nparams, "checkpoint arrays");
    for (int l = 0; l < d.layers && array_held(&c->gcn, k); l++)
      for (int i = 0; i < d.layer[l].ntensors; i++) {
        const halo_param_tensor *t = &d.layer[l].tensor[i];
        char name[128];
        hsize_t dims[2];
        const int rank = tensor_shape(t, dims);
        tensor_name(name, sizeof name, &c->gcn, k, l, t);
        HALO_TRY(halo_h5_read(f, path, name, HALO_H5_F32, rank, dims, 1, &data));
        const float *v = data;
        for (int64_t j = 0; j < t->rows * t->cols; j++)
          if (!isfinite(v[j]))
            HALO_FAIL(HALO_ERR_FORMAT, "%s: %s[%lld] is not finite", path, name, (long long)j);
        memcpy(arrays[k] + t->offset, data, (size_t)(t->rows * t->cols) * sizeof(float));
        free(data);
        data = NULL;
      }
  }
done:
  free(data);
  return st;
}

halo_status halo_checkpoint_write(const char *path, const halo_checkpoint *c) {
  halo_status st = HALO_OK;
  char tmp[4200] = "";
  hid_t file = H5I_INVALID_HID;
  halo_h5_quiet();
  /* A checkpoint of the same name (a run resumed from an earlier epoch) is
   * the same state, or an older best.  The file is made as PATH.tmp, which
   * halo_h5_commit flushes and renames over PATH atomically
   * (core/halo-atomic.h): a crash during the save leaves the old one. */
  HALO_TRY(halo_h5_replace(path, tmp, sizeof tmp, &file));
  HALO_TRY(write_attrs(file, path, c));
  HALO_TRY(write_tensors(file, path, c));
done:
  /* Close, flush and rename; on failure the temporary goes, the rest stays. */
  if (tmp[0]) st = halo_h5_commit(st, file, tmp, path);
  return st;
}

halo_status halo_checkpoint_save(const char *dir, const halo_checkpoint *c, int keep,
                                 char *path_out, size_t path_size) {
  halo_status st = HALO_OK;
  char path[4096];
  int64_t *epochs = NULL;
  int count = 0;

  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    HALO_FAIL(HALO_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
  HALO_TRY(epoch_path(path, sizeof path, dir, c->epoch));
  HALO_TRY(halo_checkpoint_write(path, c));
  if (path_out) snprintf(path_out, path_size, "%s", path);
done:
  /* Keep the newest `keep`; a failure here costs disk space, not state. */
  if (st == HALO_OK && keep > 0) {
    epochs = malloc(CKPT_MAX_LISTED * sizeof *epochs);
    if (epochs && list_epochs(dir, epochs, &count) == HALO_OK) {
      for (int i = keep; i < count; i++) {
        if (epoch_path(path, sizeof path, dir, epochs[i]) == HALO_OK && unlink(path) != 0)
          halo_log_warn("%s: cannot remove an old checkpoint: %s", path, strerror(errno));
      }
    }
    free(epochs);
  }
  return st;
}

halo_status halo_checkpoint_newest(const char *dir, int64_t *epoch) {
  halo_status st = HALO_OK;
  int64_t *epochs = NULL;
  int count = 0;
  struct stat sb;
  *epoch = -1;
  if (stat(dir, &sb) != 0 && errno == ENOENT) goto done;
  HALO_ALLOC(epochs, CKPT_MAX_LISTED, "the checkpoint list");
  HALO_TRY(list_epochs(dir, epochs, &count));
  if (count > 0) *epoch = epochs[0];
done:
  free(epochs);
  return st;
}

halo_status halo_checkpoint_read(const char *path, halo_checkpoint *c) {
  halo_status st = HALO_OK;
  hid_t f = H5I_INVALID_HID;
  char format[32], model[sizeof c->model];
  int32_t version = 0;
  halo_net_options *o = &c->gcn;
  ckpt_attr state[CKPT_STATE_ATTRS], graph[CKPT_GRAPH_ATTRS];
  const halo_model_option *opts[HALO_MOPT_COUNT];
  float *arrays[CKPT_ARRAYS] = {NULL, NULL, NULL};

  memset(c, 0, sizeof *c);
  halo_h5_quiet();
  HALO_TRY(halo_h5_open(path, &f));
  /* A shard or a predictions file given for a checkpoint: say so. */
  if (halo_h5_attr_exists(f, path, "format") == 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: not a halo checkpoint (no format attribute)", path);
  HALO_TRY(halo_h5_attr_read_str(f, path, "format", format, sizeof format));
  if (strcmp(format, CKPT_FORMAT) != 0)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: not a halo checkpoint (format '%s')", path, format);
  HALO_TRY(halo_h5_attr_read(f, path, "format_version", HALO_H5_I32, &version));
  if (version < 1 || version > HALO_CHECKPOINT_FORMAT_VERSION)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: checkpoint format_version %d is not supported (this halo reads 1 to %d)", path,
              version, HALO_CHECKPOINT_FORMAT_VERSION);
  HALO_TRY(halo_h5_attr_read_str(f, path, "model", model, sizeof model));
  snprintf(c->model, sizeof c->model, "%s", model);
  own_attrs(c, state, graph);
  for (int k = 0; k < CKPT_STATE_ATTRS; k++)
    HALO_TRY(halo_h5_attr_read(f, path, state[k].name, state[k].kind, state[k].value));
  for (int k = 0, n = stored_options(0, opts); k < n; k++)
    HALO_TRY(read_option(f, path, opts[k], o));
  for (int k = 0; k < CKPT_GRAPH_ATTRS; k++)
    HALO_TRY(halo_h5_attr_read(f, path, graph[k].name, graph[k].kind, graph[k].value));
  for (int k = 0, n = stored_options(1, opts); k < n; k++)
    HALO_TRY(read_option(f, path, opts[k], o));
  ckpt_attr optim[CKPT_OPTIM_ATTRS];
  optim_attrs(c, optim);
  c->lr = o->lr;
  halo_plateau_init(&c->plateau, o);
  for (int k = 0; k < CKPT_OPTIM_ATTRS; k++)
    if (H5Aexists(f, optim[k].name) > 0)
      HALO_TRY(halo_h5_attr_read(f, path, optim[k].name, optim[k].kind, optim[k].value));
  if (!(c->plateau.lr > 0.0) || !isfinite(c->plateau.lr) || isnan(c->plateau.best) ||
      c->plateau.bad_epochs < 0)
    HALO_FAIL(HALO_ERR_FORMAT,
              "%s: inconsistent schedule state (plateau rate %g, best %g, %lld bad epochs)", path,
              c->plateau.lr, c->plateau.best, (long long)c->plateau.bad_epochs);
  if (H5Aexists(f, "edge_weighted") > 0)
    HALO_TRY(halo_h5_attr_read(f, path, "edge_weighted", HALO_H5_I32, &c->edge_weighted));
  /* A choice (the activation) must be one of its words. */
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    if (opt->store == HALO_OPTION_NONE || opt->flag.kind != HALO_FLAG_CHOICE) continue;
    const int64_t v = halo_model_option_int(opt, o);
    int nwords = 0;
    while (opt->flag.words[nwords]) nwords++;
    if (v < 0 || v >= nwords)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: %s %lld is not known", path, opt->key, (long long)v);
  }
  if (strcmp(c->model, "gat") == 0 && (o->heads < 1 || o->output_heads < 1))
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %d heads and %d output heads; each must be >= 1", path,
              o->heads, o->output_heads);
  if (halo_model_parse(c->model, &o->model) != HALO_OK)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: model '%s' is not one this halo trains (%s)", path, c->model,
              halo_model_names());
  if (c->epoch < 0 || c->adam_t < 0 || c->nparams <= 0 || c->nparams > ((int64_t)1 << 40) ||
      o->layers < 1 || o->layers > HALO_MAX_LAYERS || o->hidden < 1)
    HALO_FAIL(
        HALO_ERR_FORMAT,
        "%s: inconsistent checkpoint (epoch %lld, Adam step %lld, %lld parameters, %d layers, "
        "hidden %d)",
        path, (long long)c->epoch, (long long)c->adam_t, (long long)c->nparams, o->layers,
        o->hidden);
  if (version >= 2) {
    HALO_TRY(read_tensors(f, path, c, arrays));
  } else {
    for (int k = 0; k < CKPT_ARRAYS; k++) {
      hsize_t dims[1] = {(hsize_t)c->nparams};
      void *data = NULL;
      HALO_TRY(halo_h5_read(f, path, array_flat[k], HALO_H5_F32, 1, dims, 1, &data));
      arrays[k] = data;
      for (int64_t i = 0; i < c->nparams; i++)
        if (!isfinite(arrays[k][i]))
          HALO_FAIL(HALO_ERR_FORMAT, "%s: %s[%lld] is not finite", path, array_flat[k],
                    (long long)i);
    }
  }
  c->params = arrays[0];
  c->adam_m = arrays[1];
  c->adam_v = arrays[2];
  arrays[0] = arrays[1] = arrays[2] = NULL;
done:
  for (int k = 0; k < CKPT_ARRAYS; k++) free(arrays[k]);
  if (st != HALO_OK) {
    free(c->bn_running);
    c->bn_running = NULL;
    c->nrunning = 0;
  }
  if (f >= 0) H5Fclose(f);
  return st;
}

halo_status halo_checkpoint_latest(const char *dir, halo_checkpoint *c, char *path,
                                   size_t path_size) {
  halo_status st = HALO_OK;
  int64_t *epochs = NULL;
  int count = 0, skipped = 0;

  memset(c, 0, sizeof *c);
  HALO_ALLOC(epochs, CKPT_MAX_LISTED, "the checkpoint list");
  HALO_TRY(list_epochs(dir, epochs, &count));
  for (int i = 0; i < count; i++) {
    HALO_TRY(epoch_path(path, path_size, dir, epochs[i]));
    /* A damaged checkpoint is skipped with one warning, not an error. */
    halo_log_set_quiet(1);
    halo_status rs = halo_checkpoint_read(path, c);
    halo_log_set_quiet(0);
    if (rs == HALO_OK && c->epoch != epochs[i]) {
      halo_checkpoint_clear(c);
      rs = HALO_ERR_MISMATCH;
    }
    if (rs == HALO_OK) goto done;
    halo_log_warn("%s: skipping a checkpoint that does not read (%s)", path, halo_status_str(rs));
    skipped++;
  }
  HALO_FAIL(HALO_ERR_IO, "%s holds no valid checkpoint (%d found, %d damaged)", dir, count,
            skipped);
done:
  free(epochs);
  return st;
}

halo_status halo_checkpoint_set_aside_newer(const char *dir, int64_t epoch) {
  halo_status st = HALO_OK;
  int64_t *epochs = NULL;
  int count = 0;
  char path[4096], aside[4200];
  HALO_ALLOC(epochs, CKPT_MAX_LISTED, "the checkpoint list");
  HALO_TRY(list_epochs(dir, epochs, &count));
  for (int i = 0; i < count && epochs[i] > epoch; i++) {
    HALO_TRY(epoch_path(path, sizeof path, dir, epochs[i]));
    /* NAME.damaged, or NAME.damaged.K when an earlier resume left one. */
    struct stat sb;
    snprintf(aside, sizeof aside, "%s" CKPT_ASIDE, path);
    for (int k = 1; k < 1000 && lstat(aside, &sb) == 0; k++)
      snprintf(aside, sizeof aside, "%s" CKPT_ASIDE ".%d", path, k);
    /* Failing to rename costs disk space and --keep's count, not the run. */
    if (rename(path, aside) != 0)
      halo_log_warn("%s: damaged, and cannot be set aside as %s: %s", path, aside, strerror(errno));
    else
      halo_log_warn("%s: set aside as %s, so that only checkpoints that read count as kept", path,
                    aside);
  }
done:
  free(epochs);
  return st;
}

/* "sage, 2 layers, hidden 64, elu, normalised rows" for the mismatch line;
 * the features' normalisation by its flag, so that the line says what to
 * add or drop (a checkpoint of a run before 2026-12-06 was normalised
 * unless it was started with --no-normalize). */
static void describe_model(const char *model, const halo_net_options *o, char *out, size_t size) {
  char heads[48] = "";
  if (strcmp(model, "gat") == 0)
    snprintf(heads, sizeof heads, ", %d heads, %d output heads", o->heads, o->output_heads);
  char act[48] = "";
  if (o->activation == HALO_ACT_ELU)
    snprintf(act, sizeof act, ", elu");
  else if (o->activation == HALO_ACT_LEAKY_RELU)
    snprintf(act, sizeof act, ", leaky_relu %g", (double)o->negative_slope);
  else if (o->activation == HALO_ACT_GELU)
    snprintf(act, sizeof act, ", gelu");
  char agg[64] = "";
  if (strcmp(model, "sage") == 0 && o->aggr != HALO_AGGR_MEAN)
    snprintf(agg, sizeof agg, ", --aggr %s", halo_aggr_names[o->aggr]);
  if (strcmp(model, "gcn") == 0 && !o->gcn_self_loops)
    snprintf(agg, sizeof agg, ", no self-loops");
  if (strcmp(model, "gcn") == 0 && !o->gcn_normalize)
    snprintf(agg + strlen(agg), sizeof agg - strlen(agg), ", unnormalised");
  snprintf(out, size, "%s, %d layers, hidden %d%s%s%s%s%s%s%s%s%s", model, o->layers, o->hidden,
           heads, act, agg, o->sage_normalize ? ", normalised rows" : "",
           o->gin_train_eps ? ", learned eps" : "", o->residual ? ", residual" : "",
           o->norm == HALO_NORM_LAYER   ? ", layer norm"
           : o->norm == HALO_NORM_BATCH ? ", batch norm"
                                        : "",
           o->normalize_features ? ", --normalize-features" : "",
           o->no_edge_weights ? ", --no-edge-weights" : "");
}

/* Appends ", " (after the first) and one formatted setting to buf. */
static void note_setting(char *buf, size_t size, size_t *len, const char *fmt, ...) {
  if (*len + 2 >= size) return;
  if (*len) *len += (size_t)snprintf(buf + *len, size - *len, ", ");
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(buf + *len, size - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

halo_status halo_checkpoint_match(const halo_checkpoint *c, const char *path,
                                  const halo_manifest *m, const char *model,
                                  const halo_net_options *o) {
  halo_status st = HALO_OK;
  const halo_net_options *k = &c->gcn;
  if (c->source_digest != m->source_digest || c->nodes != m->nodes || c->edges != m->edges ||
      c->features != m->features || c->classes != m->classes)
    HALO_FAIL(HALO_ERR_MISMATCH,
              "%s is a checkpoint of another graph (%lld nodes, %lld edges, %d features, "
              "%d classes, digest %016llx; this graph: %lld, %lld, %d, %d, %016llx)",
              path, (long long)c->nodes, (long long)c->edges, c->features, c->classes,
              (unsigned long long)c->source_digest, (long long)m->nodes, (long long)m->edges,
              m->features, m->classes, (unsigned long long)m->source_digest);
  /* The options of this run's model: a gat's heads count, a gcn's do not. */
  halo_model_kind kind = HALO_MODEL_GCN;
  const int known = halo_model_parse(model, &kind) == HALO_OK;
  int other = strcmp(c->model, model) != 0;
  for (int i = 0; i < HALO_MOPT_COUNT && !other; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    if (opt->role == HALO_OPTION_MODEL && opt->store != HALO_OPTION_NONE &&
        (opt->only < 0 || (known && halo_model_option_applies(opt, kind))))
      other = !halo_model_option_equal(opt, k, o);
  }
  if (other) {
    char was[224], now[224];
    describe_model(c->model, k, was, sizeof was);
    describe_model(model, o, now, sizeof now);
    HALO_FAIL(HALO_ERR_MISMATCH, "%s is a checkpoint of another model (%s; this run: %s)", path,
              was, now);
  }
  /* The training settings may change on resume: each one that does is
   * named, by its flag (the table's, so that this library spells no flag
   * itself), with the checkpoint's value and this run's. */
  char differ[512] = "";
  size_t len = 0;
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    if (opt->role != HALO_OPTION_TRAINING || opt->store == HALO_OPTION_NONE ||
        (opt->only >= 0 && !(known && halo_model_option_applies(opt, kind))) ||
        halo_model_option_equal(opt, k, o))
      continue;
    char was[64], now[64];
    halo_model_option_format(opt, k, was, sizeof was);
    halo_model_option_format(opt, o, now, sizeof now);
    note_setting(differ, sizeof differ, &len, "%s %s (this run: %s)", opt->flag.name, was, now);
  }
  if (len) halo_log_warn("%s was written with other settings: %s; this run's apply", path, differ);
done:
  return st;
}
