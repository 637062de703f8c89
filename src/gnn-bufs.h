/* Private to the GCN: its buffer plan, the one table of what the model
 * allocates.  halo_net_create sizes every buffer from it, and
 * halo_net_memory_estimate sums it, so the estimate cannot drift from the
 * allocations: a buffer the model allocates without a plan entry fails
 * gnn_bufs_take, and the tests compare the plan's peak with the bytes the
 * backend really handed out (halo_net_info.backend_bytes_*).
 *
 * Sizes are in bytes.  An entry lives in the backend's memory (a GPU's with a
 * device backend; the host's for the CPU backend) or in the host's besides.
 * Backend buffers of 2 MiB or more are counted in whole 2 MiB pages, as both
 * backends hand them out (halo_hostmem, and a GPU's allocator).
 */
#ifndef HALO_GNN_BUFS_H
#define HALO_GNN_BUFS_H

#include <stdint.h>

#include "halo-model.h"
#include "halo-net.h"
#include "halo-shard.h"

/* The model's buffers.  Per-layer entries are indexed by layer as well. */
typedef enum {
  /* Backend memory, one buf_alloc each. */
  GNN_BUF_GLOBAL_ID, /* int64, n_all */
  GNN_BUF_LABELS,    /* int32, n_owned; multi-label: int8 targets, n_owned × classes */
  GNN_BUF_TRAIN,     /* int32 rows of the three splits */
  GNN_BUF_VALID,
  GNN_BUF_TEST,
  GNN_BUF_INTERIOR, /* int32 row lists of Â's interior and boundary rows */
  GNN_BUF_BOUNDARY, /* (only when they are not contiguous) */
  GNN_BUF_G0,       /* backward ping-pong, n_all × widest */
  GNN_BUF_G1,
  GNN_BUF_G2,     /* --residual: the residual's share of dH, n_owned × widest */
  GNN_BUF_PARAMS, /* flat parameters, gradients, Adam's moments */
  GNN_BUF_GRADS,
  GNN_BUF_ADAM_M,
  GNN_BUF_ADAM_V,
  GNN_BUF_X,       /* dense X, n_owned × F (transform or aggregate layer 0) */
  GNN_BUF_XD,      /* dense dropout(X) with halo rows, n_all × F (fused: a block of rows) */
  GNN_BUF_S_DROP,  /* dropped values of S and Sᵀ (sparse X with input dropout) */
  GNN_BUF_ST_DROP, /* */
  GNN_BUF_ST_PERM, /* instead of Sᵀ's, under --deterministic on the CPU: where each
                      of Sᵀ's non-zeros is in S (halo_csr_transpose_perm), int32 */
  GNN_BUF_AX,      /* the cached ÂX (or the evaluation's: eval_cached), n_owned × F */
  GNN_BUF_X_HALO,  /* X with halo rows while ÂX is made (set-up only) */
  GNN_BUF_HD,      /* per layer l >= 1: dropout(act(Z_{l-1})), n_all × d_in */
  GNN_BUF_T,       /* per layer, transform first: H·W, n_all × d_mid */
  GNN_BUF_AH,      /* per layer, aggregate first: the aggregated H, n_owned × d_in */
  GNN_BUF_Z1,      /* per layer, GIN: the MLP's hidden rows; SAGE normalised: Z's copy;
                      GAT: the heads' outputs before the bias, n_owned × d_mid */
  GNN_BUF_NORM,    /* per layer, SAGE normalised: the rows' norms, n_owned */
  GNN_BUF_XHAT,    /* per hidden layer, --norm layer or batch: xhat, n_owned × d_out */
  GNN_BUF_RSTD,    /* and its 1/σ per row, n_owned; --norm batch: the output's xhat alone */
  GNN_BUF_XHAT1, /* per layer, GIN with --norm batch: the MLP's BatchNorm xhat, n_owned × d_mid */
  GNN_BUF_SCORE, /* per layer, GAT: each row's per-head scores a_src·T, a_dst·T, n_all × 2K */
  GNN_BUF_NODE,  /* per layer, GAT: dZ, row max, row sum, dZ·out per row, n_all × (d_out + 3K) */
  GNN_BUF_ATT_GRAD, /* per layer, GAT: dscore ⊙ T for a_src and a_dst, n_owned × 2·d_mid */
  GNN_BUF_ARG,      /* per layer l >= 1, SAGE --aggr max: each column's arg-max global id,
                       int32, n_all × d_in (the halo rows filled by the backward) */
  GNN_BUF_Z,        /* per layer: n_owned × d_out */
  GNN_BUF_COUNT
} gnn_buf;

/* The model's sparse matrices: on the host always, and copied to a device
 * backend (csr_upload), where the SpMM plan adds its own arrays. */
typedef enum { GNN_CSR_ADJ, GNN_CSR_ADJ_T, GNN_CSR_S, GNN_CSR_ST, GNN_CSR_COUNT } gnn_csr;

/* When an entry is alive.  The peak is Σ ALWAYS + max(Σ EARLY, Σ LATE):
 * EARLY buffers are freed before the LATE ones are made. */
typedef enum { GNN_LIFE_ALWAYS, GNN_LIFE_EARLY, GNN_LIFE_LATE } gnn_life;

typedef struct gnn_bufs_entry {
  int64_t bytes; /* 0: not allocated */
  gnn_life life;
} gnn_bufs_entry;

typedef struct gnn_bufs_csr {
  int64_t rows, cols, nnz; /* rows 0: not made */
  int prepared_rows_copy;  /* the device SpMM keeps aligned copies of the matrix's rows */
  gnn_life life;
} gnn_bufs_csr;

typedef struct gnn_bufs {
  int device;         /* the backend keeps its own copies and stages halo rows on the host */
  int sage_normalize; /* the options a layer kind's plan reads */
  int sage_max;
  gnn_bufs_entry buf[GNN_BUF_COUNT][HALO_MAX_LAYERS];
  gnn_bufs_csr csr[GNN_CSR_COUNT];
  /* Host memory besides: the set-up copy of X, the set-up parameter array,
   * halo-train's checkpoint buffers (params and Adam's moments), and on a
   * device the pinned gradient staging. */
  int64_t host_features, host_params, host_checkpoint, host_grad_staging;
  /* Deterministic mode (halo-exact.h): the gradients' limbs (host_exact)
   * and the exact sums' workspace for `threads` threads. */
  int64_t host_exact, host_exact_work;
  int threads;
  /* The exchange plan's buffers (halo_exchange_memory). */
  int64_t exchange_backend, exchange_host;
} gnn_bufs;

/* What the plan depends on, beyond the shard and the options. */
typedef struct gnn_bufs_input {
  const halo_model_desc *model;
  int device;
  int64_t n_interior, n_boundary; /* Â's row lists' lengths; 0 and 0 when contiguous */
  int contiguous;                 /* Â is multiplied in two row blocks (no lists) */
  int sparse;                     /* the first layer's input is CSR */
  int64_t nonzeros;               /* its non-zeros (X's, or ÂX's) */
  int csr_host;                   /* X comes as CSR from the shard: no dense host copy */
} gnn_bufs_input;

/* Fills *p for shard s and options o. Local. */
void gnn_bufs_build(const halo_shard *s, const halo_net_options *o, const gnn_bufs_input *in,
                    gnn_bufs *p);

/* Sets entry (b, layer) to `floats` floats, alive always: how a layer
 * kind plans its buffers. Local. */
void gnn_bufs_set(gnn_bufs *p, gnn_buf b, int layer, int64_t floats);

/* Whether the first layer applies the input dropout while its products
 * read X (gnn_input_mm, gnn_input_term): a dense X multiplied by W first
 * (no identity residual reads it whole), on a host backend, with input
 * dropout (under --deterministic too: the exact sums read the blocks).  Then xd is one block of rows, masked from X
 * just before each product reads it, instead of a dropped copy of X.
 * Local. */
int gnn_bufs_input_fused(const halo_model_desc *d, const halo_net_options *o, int device,
                         int sparse);

/* The rows of one such block for F features and n owned rows: about 4 MiB
 * of floats (within the last-level cache; smaller blocks mean more GEMM
 * calls, each a synchronisation of the BLAS threads, which a loaded node
 * makes dear), at least 64 rows, at most n. Local. */
int64_t gnn_bufs_drop_block(int64_t f, int64_t n);

/* Whether a sparse X under input dropout keeps, instead of Sᵀ's dropped
 * values, the permutation that reads them from S's (GNN_BUF_ST_PERM): the
 * exact sums of the CPU (--deterministic) read Sᵀ so, and skip its
 * dropout; the float path's SpMM and a device read Sᵀ's own values. Local. */
int gnn_bufs_st_perm(const halo_net_options *o, int device, int64_t nonzeros);

/* The columns of X per slice while the evaluation's ÂX is made
 * (halo_layer_desc.eval_cached): the widest exchange the model makes, at
 * most f, so that the exchange buffers need no room for X's width, and
 * the backward's G0 (the slice with its halo rows) and G1 (its aggregate),
 * idle at set-up, hold a slice. */
int32_t gnn_bufs_ax_slice(const halo_model_desc *d, int64_t f);

/* Bytes of entry (b, layer); layer is 0 for the model-wide entries. Local. */
int64_t gnn_bufs_bytes(const gnn_bufs *p, gnn_buf b, int layer);

/* The plan's totals at the peak of set-up, 2 MiB pages counted whole in the
 * backend's memory. Local. */
halo_net_memory gnn_bufs_total(const gnn_bufs *p);

/* The peak of the plan's backend buffers alone (its gnn_buf entries, not
 * the CSR matrices nor the exchange plan), which the model's own count of
 * what it allocated must equal. Local. */
int64_t gnn_bufs_buffer_peak(const gnn_bufs *p);

/* `bytes` as the backend hands them out: 2 MiB pages counted whole from
 * 2 MiB on. Local. */
int64_t gnn_bufs_backend_bytes(int64_t bytes);

#endif /* HALO_GNN_BUFS_H */
