/* Predicted halo traffic of a model on a partition, shared by halo-partition
 * (which prints it) and halo-train (which must match it byte for byte).
 *
 * The predictor knows no model: it reads a model's description of what each
 * layer exchanges (halo-model.h, beside it, builds it for each model kind and
 * documents the rules).  Every halo row crosses once per exchange, as
 * float32, so an exchange of c columns over a partition whose halos hold R
 * rows in total moves R · c · 4 bytes.
 */
#ifndef HALO_PREDICT_H
#define HALO_PREDICT_H

#include <stdint.h>

#include "halo-quant.h"

/* What one layer exchanges per halo row, in float32 columns, summed over
 * the layer's exchanges of each kind (0 = none). */
typedef struct halo_layer_comm {
  int32_t setup;  /* once, while the model is set up */
  int32_t fwd;    /* every training epoch, in the forward pass */
  int32_t bwd;    /* every training epoch, in the backward pass */
  int32_t widest; /* columns of the layer's widest single exchange */
} halo_layer_comm;

/* A model's exchanges: one entry per layer, borrowed. */
typedef struct halo_model_comm {
  int layers;
  const halo_layer_comm *layer; /* size layers */
} halo_model_comm;

/* Columns per halo row of one training epoch: Σ_l fwd + bwd. Local. */
int64_t halo_predict_epoch_columns(const halo_model_comm *m);

/* Columns of the widest single exchange, set-up included; at least 1. Local. */
int32_t halo_predict_widest(const halo_model_comm *m);

/* Bytes moved per training epoch when the halos of all parts hold
 * `halo_rows` rows in total: halo_rows · epoch_columns · 4. Local. */
int64_t halo_predict_epoch_bytes(int64_t halo_rows, const halo_model_comm *m);

/* Bytes moved once at set-up: halo_rows · Σ_l setup · 4. Local. */
int64_t halo_predict_setup_bytes(int64_t halo_rows, const halo_model_comm *m);

/* Layer l's bytes per training epoch in direction d (0: forward, 1:
 * backward) when its rows cross at precision prec (halo-quant.h):
 * halo_rows · halo_quant_row_bytes(prec, columns), the scale and offset
 * of an integer row counted.  Exact for a layer whose direction is one
 * exchange (every model but GAT, which refuses a low-bit exchange); fp32
 * gives halo_rows · columns · 4 for any layer. Local. */
int64_t halo_predict_layer_bytes(int64_t halo_rows, const halo_layer_comm *c, int d, int prec);

/* Both exchange modes: a stale exchange (--halo-stale) moves the same rows
 * as a fresh one, one epoch later, so every prediction here holds for it:
 * each training epoch posts one exchange per layer and direction, counted
 * in the epoch that posts it. */

/* Σ_l of halo_predict_layer_bytes over both directions, the forward
 * exchanges at fwd and the backward ones at bwd. Local. */
int64_t halo_predict_epoch_bytes_at(int64_t halo_rows, const halo_model_comm *m, int fwd, int bwd);

/* --halo-sample p: of the n halo rows whose nodes have global ids gid[],
 * those that cross in training epoch `epoch` under seed `seed`
 * (core/halo-sample.h's keyed draw; all n when p >= 1).  Every exchange of
 * a sampled epoch moves these rows and no others, forward and backward, so
 * the epoch's bytes are halo_predict_epoch_bytes_at of their sum over the
 * parts. Local. */
int64_t halo_predict_sample_rows(const int64_t *gid, int64_t n, uint64_t seed, int64_t epoch,
                                 float p);

/* CAGNET's 1D algorithm as coded (Tripathy et al., SC'20): every layer
 * broadcasts its input forward (d_in) and its output gradient backward
 * (d_out) to all other ranks: (P-1) · n · Σ_l (d_in + d_out) · 4, for the
 * widths dims[0..ndims-1]. Local. */
int64_t halo_predict_cagnet1d_bytes(int64_t nodes, int32_t parts, const int32_t *dims, int ndims);

/* A 1D broadcast of the model's own exchanges: (P-1) · n · epoch_columns · 4.
 * Local. */
int64_t halo_predict_broadcast1d_bytes(int64_t nodes, int32_t parts, const halo_model_comm *m);

#endif /* HALO_PREDICT_H */
