#include "halo-predict.h"

halo_status halo_predict_widths(const int32_t *dims, int ndims, int input_dropout,
                                halo_widths *out) {
  halo_status st = HALO_OK;
  if (ndims < 2 || ndims > HALO_MAX_LAYERS + 1)
    HALO_FAIL(HALO_ERR_ARG, "a model needs 2 to %d widths, got %d", HALO_MAX_LAYERS + 1, ndims);
  for (int i = 0; i < ndims; i++)
    if (dims[i] < 1)
      HALO_FAIL(HALO_ERR_ARG, "width %d of the model is %d; widths must be >= 1", i, dims[i]);

  *out = (halo_widths){.layers = ndims - 1};
  for (int l = 0; l < out->layers; l++) {
    int32_t d_in = dims[l], d_out = dims[l + 1];
    int narrow_out = d_out < d_in;
    int32_t w = narrow_out ? d_out : d_in;
    out->transform_first[l] = narrow_out;
    if (l == 0 && !input_dropout) {
      out->setup = d_in;
      continue;
    }
    out->fwd[l] = w;
    out->bwd[l] = (l == 0 && !narrow_out) ? 0 : w;
    out->per_epoch += out->fwd[l] + out->bwd[l];
  }
done:
  return st;
}

int64_t halo_predict_epoch_bytes(int64_t halo_rows, const halo_widths *w) {
  return halo_rows * w->per_epoch * (int64_t)sizeof(float);
}

int64_t halo_predict_setup_bytes(int64_t halo_rows, const halo_widths *w) {
  return halo_rows * (int64_t)w->setup * (int64_t)sizeof(float);
}

int64_t halo_predict_cagnet1d_bytes(int64_t nodes, int32_t parts, const int32_t *dims, int ndims) {
  int64_t widths = 0;
  for (int l = 0; l + 1 < ndims; l++) widths += (int64_t)dims[l] + dims[l + 1];
  return (int64_t)(parts - 1) * nodes * widths * (int64_t)sizeof(float);
}

int64_t halo_predict_broadcast1d_bytes(int64_t nodes, int32_t parts, const halo_widths *w) {
  return (int64_t)(parts - 1) * nodes * w->per_epoch * (int64_t)sizeof(float);
}
