#include "halo-model.h"

#include <string.h>

static const char *const names[] = {[HALO_MODEL_GCN] = "gcn"};

const char *halo_model_name(halo_model_kind kind) {
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

halo_status halo_model_parse(const char *name, halo_model_kind *out) {
  for (unsigned k = 0; k < sizeof names / sizeof names[0]; k++)
    if (names[k] && strcmp(name, names[k]) == 0) {
      *out = (halo_model_kind)k;
      return HALO_OK;
    }
  return HALO_ERR_ARG;
}

/* GCN's rules (halo-model.h): the narrow side, and the cached first layer. */
static void describe_gcn(int input_dropout, halo_model_desc *d) {
  for (int l = 0; l < d->layers; l++) {
    const int32_t d_in = d->dims[l], d_out = d->dims[l + 1];
    const int narrow_out = d_out < d_in;
    const int32_t w = narrow_out ? d_out : d_in;
    halo_layer_comm *c = &d->comm[l];
    if (l == 0 && !input_dropout) {
      d->shape[l] = HALO_LAYER_CACHED;
      c->setup = c->widest = d_in;
      continue;
    }
    d->shape[l] = narrow_out ? HALO_LAYER_TRANSFORM : HALO_LAYER_AGGREGATE;
    c->fwd = c->widest = w;
    c->bwd = (l == 0 && !narrow_out) ? 0 : w;
  }
}

halo_status halo_model_describe(halo_model_kind kind, const int32_t *dims, int ndims,
                                int input_dropout, halo_model_desc *out) {
  halo_status st = HALO_OK;
  if (kind != HALO_MODEL_GCN) HALO_FAIL(HALO_ERR_ARG, "model kind %d is not known", (int)kind);
  if (ndims < 2 || ndims > HALO_MAX_LAYERS + 1)
    HALO_FAIL(HALO_ERR_ARG, "a model needs 2 to %d widths, got %d", HALO_MAX_LAYERS + 1, ndims);
  for (int i = 0; i < ndims; i++)
    if (dims[i] < 1)
      HALO_FAIL(HALO_ERR_ARG, "width %d of the model is %d; widths must be >= 1", i, dims[i]);

  *out = (halo_model_desc){.kind = kind, .layers = ndims - 1};
  memcpy(out->dims, dims, (size_t)ndims * sizeof *dims);
  for (int l = 0; l < out->layers; l++)
    out->params += (int64_t)dims[l] * dims[l + 1] + dims[l + 1]; /* W_l, b_l */
  describe_gcn(input_dropout, out);
done:
  return st;
}

halo_model_comm halo_model_comm_of(const halo_model_desc *d) {
  return (halo_model_comm){.layers = d->layers, .layer = d->comm};
}
