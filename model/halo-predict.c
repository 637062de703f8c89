#include "halo-predict.h"

#include "halo-sample.h"

int64_t halo_predict_epoch_columns(const halo_model_comm *m) {
  int64_t cols = 0;
  for (int l = 0; l < m->layers; l++) cols += (int64_t)m->layer[l].fwd + m->layer[l].bwd;
  return cols;
}

int32_t halo_predict_widest(const halo_model_comm *m) {
  int32_t widest = 1;
  for (int l = 0; l < m->layers; l++)
    if (m->layer[l].widest > widest) widest = m->layer[l].widest;
  return widest;
}

int64_t halo_predict_epoch_bytes(int64_t halo_rows, const halo_model_comm *m) {
  return halo_rows * halo_predict_epoch_columns(m) * (int64_t)sizeof(float);
}

int64_t halo_predict_layer_bytes(int64_t halo_rows, const halo_layer_comm *c, int d, int prec) {
  const int32_t cols = d ? c->bwd : c->fwd;
  return cols > 0 ? halo_rows * halo_quant_row_bytes(prec, cols) : 0;
}

int64_t halo_predict_epoch_bytes_at(int64_t halo_rows, const halo_model_comm *m, int fwd, int bwd) {
  int64_t bytes = 0;
  for (int l = 0; l < m->layers; l++)
    bytes += halo_predict_layer_bytes(halo_rows, &m->layer[l], 0, fwd) +
             halo_predict_layer_bytes(halo_rows, &m->layer[l], 1, bwd);
  return bytes;
}

int64_t halo_predict_setup_bytes(int64_t halo_rows, const halo_model_comm *m) {
  int64_t cols = 0;
  for (int l = 0; l < m->layers; l++) cols += m->layer[l].setup;
  return halo_rows * cols * (int64_t)sizeof(float);
}

int64_t halo_predict_cagnet1d_bytes(int64_t nodes, int32_t parts, const int32_t *dims, int ndims) {
  int64_t widths = 0;
  for (int l = 0; l + 1 < ndims; l++) widths += (int64_t)dims[l] + dims[l + 1];
  return (int64_t)(parts - 1) * nodes * widths * (int64_t)sizeof(float);
}

int64_t halo_predict_broadcast1d_bytes(int64_t nodes, int32_t parts, const halo_model_comm *m) {
  return (int64_t)(parts - 1) * nodes * halo_predict_epoch_columns(m) * (int64_t)sizeof(float);
}

int64_t halo_predict_sample_rows(const int64_t *gid, int64_t n, uint64_t seed, int64_t epoch,
                                 float p) {
  if (p >= 1.0f) return n;
  const uint64_t key = halo_sample_key(seed, epoch);
  int64_t kept = 0;
  for (int64_t k = 0; k < n; k++) kept += halo_sample_keep(key, gid[k], p);
  return kept;
}
