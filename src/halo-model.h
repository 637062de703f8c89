/* A model's description: its kind, its layers' widths and, for each layer,
 * its shape and what it exchanges.  halo-train builds its model from it and
 * predicts its traffic from it; halo-partition --dims predicts from it too,
 * so the two predictions are one (partition/halo-predict.h counts the
 * bytes).  It needs no graph: only the widths and the options that change
 * what crosses between ranks.
 *
 * GCN (the rules that halo-gcn.c follows, docs/train.md):
 *  - layer l maps width d_in = dims[l] to d_out = dims[l+1] and exchanges its
 *    narrow side: H·W (d_out columns) when d_out < d_in ("transform first"),
 *    else H (d_in columns);
 *  - without input dropout the first layer's Â·X is computed once at set-up
 *    (one exchange of X, d_in columns) and the layer then exchanges nothing,
 *    forward or backward ("cached");
 *  - with input dropout the first layer exchanges its narrow side forward;
 *    backward it exchanges again only when it multiplied by W first (it then
 *    needs Âᵀ·dZ for dW); no gradient with respect to X is ever computed;
 *  - every later layer exchanges its narrow side forward and backward.
 */
#ifndef HALO_MODEL_H
#define HALO_MODEL_H

#include <stdint.h>

#include "halo-predict.h"
#include "halo-status.h"

#define HALO_MAX_LAYERS 16

typedef enum { HALO_MODEL_GCN = 0 } halo_model_kind;

/* How a layer runs, which fixes what it exchanges. */
typedef enum {
  HALO_LAYER_CACHED,    /* layer 0 without input dropout: Z = (ÂX)·W, ÂX made at set-up */
  HALO_LAYER_TRANSFORM, /* d_out < d_in: T = H·W, exchange T, Z = Â·T */
  HALO_LAYER_AGGREGATE  /* d_out >= d_in: exchange H, Z = (Â·H)·W */
} halo_layer_shape;

typedef struct halo_model_desc {
  halo_model_kind kind;
  int layers;                              /* L = ndims - 1 */
  int32_t dims[HALO_MAX_LAYERS + 1];       /* input, hidden..., classes */
  halo_layer_shape shape[HALO_MAX_LAYERS]; /* size layers */
  halo_layer_comm comm[HALO_MAX_LAYERS];   /* size layers */
  int64_t params;                          /* weights and biases */
} halo_model_desc;

/* "gcn" for HALO_MODEL_GCN. Local. */
const char *halo_model_name(halo_model_kind kind);

/* Parses a model name ("gcn"); HALO_ERR_ARG, logging nothing, for any other.
 * Local. */
halo_status halo_model_parse(const char *name, halo_model_kind *out);

/* Describes a model of `kind` with widths dims[0..ndims-1]; `input_dropout`
 * is nonzero when the input features are dropped out every epoch.  Fails
 * with HALO_ERR_ARG, logging why, for fewer than 2 or more than
 * HALO_MAX_LAYERS+1 widths, or a width below 1. Local. */
halo_status halo_model_describe(halo_model_kind kind, const int32_t *dims, int ndims,
                                int input_dropout, halo_model_desc *out);

/* The description's exchanges, for the predictor: a view into *d. Local. */
halo_model_comm halo_model_comm_of(const halo_model_desc *d);

#endif /* HALO_MODEL_H */
