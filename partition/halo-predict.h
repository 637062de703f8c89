/* Predicted halo traffic of a model on a partition, shared by halo-partition
 * (which prints it) and halo-train (which must match it byte for byte).
 *
 * Exchange rules (docs/design, DESIGN.md):
 *  - layer l maps width d_in = dims[l] to d_out = dims[l+1]; it exchanges its
 *    narrow side: H·W (d_out columns) when d_out < d_in, else H (d_in columns);
 *  - without input dropout the first layer's A·X is computed once at set-up
 *    (one exchange of X, d_in columns) and the first layer then exchanges
 *    nothing, forward or backward;
 *  - with input dropout the first layer exchanges its narrow side forward;
 *    backward it exchanges again only when it multiplied by W first (it then
 *    needs Aᵀ·dZ for dW); no gradient with respect to X is ever computed;
 *  - every later layer exchanges its narrow side forward and backward.
 * Every halo row crosses once per exchange, as float32.
 */
#ifndef HALO_PREDICT_H
#define HALO_PREDICT_H

#include <stdint.h>

#include "halo-status.h"

#define HALO_MAX_LAYERS 16

typedef struct halo_widths {
  int layers;                           /* L = ndims - 1 */
  int32_t fwd[HALO_MAX_LAYERS];         /* columns exchanged forward by layer l (0 = none) */
  int32_t bwd[HALO_MAX_LAYERS];         /* columns exchanged backward by layer l (0 = none) */
  int transform_first[HALO_MAX_LAYERS]; /* 1 when layer l multiplies by W before aggregating */
  int32_t setup;                        /* columns exchanged once at set-up (0 = none) */
  int64_t per_epoch;                    /* sum of fwd and bwd: columns per halo row per epoch */
} halo_widths;

/* Fills *out for a model of widths dims[0..ndims-1] (input, hidden..., classes).
 * Fails with HALO_ERR_ARG for fewer than 2 or more than HALO_MAX_LAYERS+1
 * widths, or a width below 1. Local. */
halo_status halo_predict_widths(const int32_t *dims, int ndims, int input_dropout,
                                halo_widths *out);

/* Bytes moved per epoch when the halos of all parts hold `halo_rows` rows in
 * total: halo_rows · per_epoch · 4. Local. */
int64_t halo_predict_epoch_bytes(int64_t halo_rows, const halo_widths *w);

/* Bytes moved once at set-up: halo_rows · setup · 4. Local. */
int64_t halo_predict_setup_bytes(int64_t halo_rows, const halo_widths *w);

/* CAGNET's 1D algorithm as coded (Tripathy et al., SC'20): every layer
 * broadcasts its input forward (d_in) and its output gradient backward
 * (d_out) to all other ranks: (P-1) · n · Σ_l (d_in + d_out) · 4. Local. */
int64_t halo_predict_cagnet1d_bytes(int64_t nodes, int32_t parts, const int32_t *dims, int ndims);

/* A 1D broadcast of halo's own widths: (P-1) · n · per_epoch · 4. Local. */
int64_t halo_predict_broadcast1d_bytes(int64_t nodes, int32_t parts, const halo_widths *w);

#endif /* HALO_PREDICT_H */
