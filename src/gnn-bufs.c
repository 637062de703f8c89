/* The GCN's buffer plan (gnn-bufs.h): the sizes that halo_net_create
 * allocates and halo_net_memory_estimate sums. */
#include "gnn-bufs.h"

#include <string.h>

#include <omp.h>

#include "gnn-impl.h"
#include "halo-exact.h"
#include "halo-exchange.h"
#include "halo-hostmem.h"
#include "halo-sample.h"

int64_t gnn_bufs_backend_bytes(int64_t bytes) {
  const int64_t page = HALO_HOSTMEM_HUGE;
  return bytes >= page ? (bytes + page - 1) / page * page : bytes;
}

static void set(gnn_bufs *p, gnn_buf b, int layer, int64_t bytes, gnn_life life) {
  p->buf[b][layer] = (gnn_bufs_entry){.bytes = bytes, .life = life};
}

void gnn_bufs_set(gnn_bufs *p, gnn_buf b, int layer, int64_t floats) {
  set(p, b, layer, floats * (int64_t)sizeof(float), GNN_LIFE_ALWAYS);
}

static int64_t csr_host_bytes(const gnn_bufs_csr *c);

static void set_csr(gnn_bufs *p, gnn_csr c, int64_t rows, int64_t cols, int64_t nnz, int rows_copy,
                    gnn_life life) {
  p->csr[c] = (gnn_bufs_csr){
      .rows = rows, .cols = cols, .nnz = nnz, .prepared_rows_copy = rows_copy, .life = life};
}

int gnn_bufs_input_fused(const halo_model_desc *d, const halo_net_options *o, int device,
                         int sparse) {
  return !sparse && !device && o->input_dropout > 0.0f &&
         d->layer[0].shape == HALO_LAYER_TRANSFORM &&
         d->layer[0].residual != HALO_RESIDUAL_IDENTITY;
}

int32_t gnn_bufs_ax_slice(const halo_model_desc *d, int64_t f) {
  const halo_model_comm comm = halo_model_comm_of(d);
  const int64_t widest = halo_predict_widest(&comm);
  return (int32_t)(widest < f ? widest : f);
}

int gnn_bufs_st_perm(const halo_net_options *o, int device, int64_t nonzeros) {
  return o->deterministic && !device && o->input_dropout > 0.0f && nonzeros <= INT32_MAX;
}

int64_t gnn_bufs_drop_block(int64_t f, int64_t n) {
  int64_t rows = ((int64_t)1 << 20) / (f > 0 ? f : 1);
  if (rows < 64) rows = 64;
  return rows < n ? rows : (n > 0 ? n : 1);
}

void gnn_bufs_build(const halo_shard *s, const halo_net_options *o, const gnn_bufs_input *in,
                    gnn_bufs *p) {
  const halo_model_desc *d = in->model;
  const int64_t n = s->n_owned, all = s->n_owned + s->n_halo, f = s->features;
  const int64_t fl = (int64_t)sizeof(float), i32 = (int64_t)sizeof(int32_t);
  memset(p, 0, sizeof *p);
  p->device = in->device;

  p->sage_normalize = o->sage_normalize;
  p->sage_max = d->config.sage_max;
  /* The aggregation: Â with its self-loops (GCN), A (GIN), the mean M
   * and its transpose (GraphSAGE) or A + I (GAT's edges; halo_net_adjacency).  Interior and
   * boundary rows are multiplied as two blocks, so the device SpMM plans
   * both. */
  const int self = (d->kind == HALO_MODEL_GCN && o->gcn_self_loops) || d->kind == HALO_MODEL_GAT;
  const int64_t adj_nnz = s->nnz + (self ? n : 0);
  /* GAT's kernels read A + I as it is, and SAGE's max reads A's columns:
   * no SpMM plans a copy of their rows. */
  set_csr(p, GNN_CSR_ADJ, n, all, adj_nnz,
          in->contiguous && d->kind != HALO_MODEL_GAT && !d->config.sage_max,
          GNN_LIFE_ALWAYS);
  if (d->kind == HALO_MODEL_SAGE && o->aggr == HALO_AGGR_MEAN)
    set_csr(p, GNN_CSR_ADJ_T, n, all, adj_nnz, in->contiguous, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_GLOBAL_ID, 0, all * (int64_t)sizeof(int64_t), GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_LABELS, 0, s->multilabel ? n * s->classes : n * i32, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_TRAIN, 0, s->n_train * i32, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_VALID, 0, s->n_valid * i32, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_TEST, 0, s->n_test * i32, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_INTERIOR, 0, in->n_interior * i32, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_BOUNDARY, 0, in->n_boundary * i32, GNN_LIFE_ALWAYS);

  /* Each layer's input and output, what its kind keeps, and the backward
   * pair at the widest width. */
  int64_t widest = 0;
  for (int l = 0; l < d->layers; l++) {
    const halo_layer_desc *ly = &d->layer[l];
    if (l > 0) set(p, GNN_BUF_HD, l, all * ly->d_in * fl, GNN_LIFE_ALWAYS);
    gnn_layer_kind_of(d->kind)->plan(ly, l, n, all, p);
    if (ly->norm_tensor >= 0) {
      gnn_bufs_set(p, GNN_BUF_XHAT, l, n * ly->d_out);
      if (d->config.norm == HALO_NORM_LAYER) gnn_bufs_set(p, GNN_BUF_RSTD, l, n);
    }
    if (ly->bn_tensor[HALO_BN_MLP] >= 0) gnn_bufs_set(p, GNN_BUF_XHAT1, l, n * ly->d_mid);
    set(p, GNN_BUF_Z, l, n * ly->d_out * fl, GNN_LIFE_ALWAYS);
    if (l > 0 && ly->d_in > widest) widest = ly->d_in;
    if (ly->d_mid > widest) widest = ly->d_mid;
    if (ly->d_out > widest) widest = ly->d_out;
  }
  set(p, GNN_BUF_G0, 0, all * widest * fl, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_G1, 0, all * widest * fl, GNN_LIFE_ALWAYS);
  if (d->config.residual) set(p, GNN_BUF_G2, 0, n * widest * fl, GNN_LIFE_ALWAYS);
  const int64_t pbytes = d->params * fl;
  set(p, GNN_BUF_PARAMS, 0, pbytes, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_GRADS, 0, pbytes, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_ADAM_M, 0, pbytes, GNN_LIFE_ALWAYS);
  set(p, GNN_BUF_ADAM_V, 0, pbytes, GNN_LIFE_ALWAYS);
  p->host_params = pbytes;
  p->host_checkpoint = 3 * pbytes;
  p->host_grad_staging = in->device ? pbytes : 0;
  p->threads = omp_get_max_threads();
  if (o->deterministic) {
    /* Each parameter's sum in one int64 (gnn_exact_allreduce), after its
     * limbs on a device; the CPU's kernels write the int64s themselves. */
    p->host_exact =
        d->params * (in->device ? HALO_EXACT_LIMBS + 1 : 1) * (int64_t)sizeof(int64_t);
    for (int l = 0; l < d->layers && !in->device; l++) /* a GPU has its own */
      for (int k = 0; k < d->layer[l].ntensors; k++) {
        const halo_param_tensor *t = &d->layer[l].tensor[k];
        /* A weight's sum, with its bias's beside it (gnn_layer_grads pairs
         * them), but for a weight that multiplies a sparse input (layer 0's
         * F rows: the CSR sum's, a few columns a thread, where the dense
         * kernel's would hold F × cols sums a thread); a bias or attention
         * vector alone (no weight of the input is one); a sparse input's.
         * (gnn_layer_grads grows the workspace should a term need more.) */
        const int input = l == 0 && t->rows == f, csr = input && in->sparse;
        const int64_t need[3] = {
            csr ? 0 : (int64_t)halo_cpu_exact_tn_ones_work(t->rows, t->cols, p->threads),
            input ? 0 : (int64_t)halo_cpu_exact_tn_work(1, t->rows * t->cols, p->threads),
            (int64_t)halo_cpu_exact_csr_work(t->cols, p->threads)};
        for (int m = 0; m < 3; m++)
          if (need[m] > p->host_exact_work) p->host_exact_work = need[m];
      }
  }

  /* The first layer's input (setup_features), after the host copy of X. */
  /* A CSR shard's X goes to S without a dense copy: S's own bytes, once. */
  p->host_features = in->csr_host ? (n + 1) * 8 + in->nonzeros * 8 : n * f * fl;
  if (d->shape[0] == HALO_LAYER_CACHED) {
    /* ÂX; while it is made, X with its halo rows; then, when ÂX is kept
     * as CSR, S and Sᵀ, made before ÂX's dense copy is freed. */
    set(p, GNN_BUF_AX, 0, n * f * fl, GNN_LIFE_ALWAYS);
    set(p, GNN_BUF_X_HALO, 0, all * f * fl, GNN_LIFE_EARLY);
    if (in->sparse) {
      set_csr(p, GNN_CSR_S, n, f, in->nonzeros, 0, GNN_LIFE_LATE);
      set_csr(p, GNN_CSR_ST, f, n, in->nonzeros, 0, GNN_LIFE_LATE);
    }
  } else if (in->sparse) {
    set_csr(p, GNN_CSR_S, n, f, in->nonzeros, 0, GNN_LIFE_ALWAYS);
    set_csr(p, GNN_CSR_ST, f, n, in->nonzeros, 0, GNN_LIFE_ALWAYS);
    if (o->input_dropout > 0.0f) {
      set(p, GNN_BUF_S_DROP, 0, in->nonzeros * fl, GNN_LIFE_ALWAYS);
      /* The exact gradient of the CPU reads Sᵀ's values as S's dropped ones,
       * through a permutation: no dropout of Sᵀ (gnn_bufs_st_perm). */
      if (gnn_bufs_st_perm(o, in->device, in->nonzeros))
        set(p, GNN_BUF_ST_PERM, 0, in->nonzeros * i32, GNN_LIFE_ALWAYS);
      else
        set(p, GNN_BUF_ST_DROP, 0, in->nonzeros * fl, GNN_LIFE_ALWAYS);
    }
  } else {
    set(p, GNN_BUF_X, 0, n * f * fl, GNN_LIFE_ALWAYS);
    /* A fused input dropout masks one block of rows at a time. */
    const int64_t xd_rows =
        gnn_bufs_input_fused(d, o, in->device, 0) ? gnn_bufs_drop_block(f, n) : all;
    set(p, GNN_BUF_XD, 0, xd_rows * f * fl, GNN_LIFE_ALWAYS);
  }
  /* The evaluation's ÂX, made at set-up one slice of X's columns at a time
   * through G0 and G1 (gnn_bufs_ax_slice). */
  if (d->layer[0].eval_cached) set(p, GNN_BUF_AX, 0, n * f * fl, GNN_LIFE_ALWAYS);

  const halo_model_comm comm = halo_model_comm_of(d);
  halo_exchange_memory(s, halo_predict_widest(&comm), in->device, gnn_bufs_backend_bytes,
                       &p->exchange_backend, &p->exchange_host);
  if (o->halo_precision || o->halo_precision_bwd) {
    int64_t backend = 0, host = 0;
    halo_exchange_precision_memory(s, halo_predict_widest(&comm), in->device,
                                   gnn_bufs_backend_bytes, &backend, &host);
    p->exchange_backend += backend;
    p->exchange_host += host;
  }
  if (halo_sample_on(o->halo_sample)) p->exchange_host += gnn_sample_memory(s, halo_predict_widest(&comm));
  if (o->halo_stale) /* a slot per layer and direction */
    p->exchange_host += halo_exchange_stale_memory(s, halo_predict_widest(&comm), 2 * o->layers);
  if (o->halo_aggregate == HALO_AGGREGATE_AUTO) {
    /* Each matrix's combine (gnn-cover.c): at most a row per send row and
     * an entry per cut edge, beside the send rows' own entries; A' is no
     * larger than A. */
    int64_t cut = 0;
    for (int64_t k = 0; k < s->nnz; k++) cut += s->indices[k] >= n;
    const gnn_bufs_csr combine = {.rows = s->send_ptr[s->parts],
                                  .nnz = cut + s->send_ptr[s->parts]};
    p->exchange_host += (d->kind == HALO_MODEL_SAGE ? 2 : 1) * csr_host_bytes(&combine);
    /* The exchange's row list and rounding keys: a row and a key per row. */
    p->exchange_host += s->send_ptr[s->parts] * (int64_t)(sizeof(int32_t) + sizeof(int64_t));
  }
}

int64_t gnn_bufs_bytes(const gnn_bufs *p, gnn_buf b, int layer) { return p->buf[b][layer].bytes; }

/* A CSR matrix's host arrays (int64 offsets, int32 columns, float values). */
static int64_t csr_host_bytes(const gnn_bufs_csr *c) {
  return (c->rows + 1) * (int64_t)sizeof(int64_t) + c->nnz * (int64_t)(sizeof(int32_t) + 4);
}

/* Its device copy (csr_upload: the same three arrays) and the device SpMM's
 * plan (spmm_prepare: int32 row offsets and, for a matrix multiplied in row
 * blocks, 16-byte aligned copies of its columns and values). */
static int64_t csr_device_bytes(const gnn_bufs_csr *c) {
  const int64_t offsets = (c->rows + 1) * (int64_t)sizeof(int64_t);
  const int64_t column = c->nnz * (int64_t)sizeof(int32_t);
  int64_t bytes = gnn_bufs_backend_bytes(offsets) + 2 * gnn_bufs_backend_bytes(column) +
                  gnn_bufs_backend_bytes((c->rows + 1) * (int64_t)sizeof(int32_t));
  if (c->prepared_rows_copy) bytes += 2 * gnn_bufs_backend_bytes(column);
  return bytes;
}

/* Adds the plan's gnn_buf entries to life[ALWAYS, EARLY, LATE]. */
static void buffers_by_life(const gnn_bufs *p, int64_t life[3]) {
  for (int b = 0; b < GNN_BUF_COUNT; b++)
    for (int l = 0; l < HALO_MAX_LAYERS; l++) {
      const gnn_bufs_entry *e = &p->buf[b][l];
      if (e->bytes > 0) life[e->life] += gnn_bufs_backend_bytes(e->bytes);
    }
}

static int64_t peak(const int64_t life[3]) {
  return life[GNN_LIFE_ALWAYS] +
         (life[GNN_LIFE_EARLY] > life[GNN_LIFE_LATE] ? life[GNN_LIFE_EARLY] : life[GNN_LIFE_LATE]);
}

int64_t gnn_bufs_buffer_peak(const gnn_bufs *p) {
  int64_t life[3] = {0, 0, 0};
  buffers_by_life(p, life);
  return peak(life);
}

halo_net_memory gnn_bufs_total(const gnn_bufs *p) {
  int64_t life[3] = {0, 0, 0}, host = 0;
  buffers_by_life(p, life);
  for (int c = 0; c < GNN_CSR_COUNT; c++) {
    const gnn_bufs_csr *m = &p->csr[c];
    if (m->rows == 0) continue;
    /* On the CPU backend the host arrays are the backend's; on a device they
     * stay on the host next to its copy. */
    if (p->device) {
      host += csr_host_bytes(m);
      life[m->life] += csr_device_bytes(m);
    } else {
      life[m->life] += csr_host_bytes(m);
    }
  }
  host += p->host_features + p->host_params + p->host_checkpoint + p->host_grad_staging;
  host += p->host_exact + p->host_exact_work;
  host += p->exchange_host;
  return (halo_net_memory){.backend = peak(life) + p->exchange_backend, .host = host};
}
