#include "train-fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-rng.h"
#include "halo-sample.h"

void *fx_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "train-fixture: out of memory\n");
    abort();
  }
  return p;
}

typedef struct pair {
  int64_t u, v;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->u != y->u) return (x->u > y->u) - (x->u < y->u);
  return (x->v > y->v) - (x->v < y->v);
}

fx_spec fx_spec_parse(char *const *argv, int32_t parts, uint64_t seed) {
  return (fx_spec){.nodes = atoll(argv[0]),
                   .avg_degree = atoi(argv[1]),
                   .features = atoi(argv[2]),
                   .density = (float)atof(argv[3]),
                   .classes = atoi(argv[4]),
                   .parts = parts,
                   .seed = seed};
}

fx_graph *fx_graph_new(const fx_spec *s) {
  fx_graph *g = fx_xcalloc(1, sizeof *g);
  const int64_t n = s->nodes;
  uint64_t gkey = halo_rng_key(s->seed, HALO_RNG_GRAPH, 1, 0);
  uint64_t fkey = halo_rng_key(s->seed, HALO_RNG_FEATURES, 1, 0);
  uint64_t pkey = halo_rng_key(s->seed, HALO_RNG_PARTITION, 1, 0);
  int64_t draws = n * s->avg_degree / 2;
  pair *e = fx_xcalloc((size_t)(2 * draws), sizeof *e);
  int64_t m = 0;
  for (int64_t k = 0; k < draws; k++) {
    int64_t u = (int64_t)(halo_rng_bits(gkey, (uint64_t)k, 0) % (uint64_t)n);
    int64_t v = (int64_t)(halo_rng_bits(gkey, (uint64_t)k, 1) % (uint64_t)n);
    if (u == v) continue;
    e[m++] = (pair){u, v};
    e[m++] = (pair){v, u};
  }
  qsort(e, (size_t)m, sizeof *e, pair_cmp);
  int64_t w = 0;
  for (int64_t k = 0; k < m; k++)
    if (w == 0 || e[k].u != e[w - 1].u || e[k].v != e[w - 1].v) e[w++] = e[k];
  m = w;

  g->n = n;
  g->m = m;
  g->indptr = fx_xcalloc((size_t)n + 1, sizeof *g->indptr);
  g->indices = fx_xcalloc((size_t)m, sizeof *g->indices);
  for (int64_t k = 0; k < m; k++) {
    g->indptr[e[k].u + 1]++;
    g->indices[k] = e[k].v;
  }
  for (int64_t i = 0; i < n; i++) g->indptr[i + 1] += g->indptr[i];
  free(e);

  g->f = s->features;
  g->c = s->classes;
  g->x = fx_xcalloc((size_t)(n * s->features), sizeof *g->x);
  g->labels = fx_xcalloc((size_t)n, sizeof *g->labels);
  g->split = fx_xcalloc((size_t)n, sizeof *g->split);
  g->part = fx_xcalloc((size_t)n, sizeof *g->part);
  g->parts = s->parts;
  for (int64_t i = 0; i < n; i++) {
    for (int32_t j = 0; j < s->features; j++) {
      double u = halo_rng_uniform_double(fkey, (uint64_t)i, (uint64_t)j);
      if (u < s->density) g->x[i * s->features + j] = (float)(0.25 + 3.0 * u / s->density);
    }
    /* Every 11th node is unlabelled and in no split. */
    uint64_t r = halo_rng_bits(fkey, (uint64_t)i, 1u << 20);
    g->labels[i] = i % 11 == 5 ? -1 : (int32_t)(r % (uint64_t)s->classes);
    g->split[i] = g->labels[i] < 0 ? 0 : (uint8_t)(1 + (r >> 32) % 3);
    g->part[i] = (int32_t)(halo_rng_bits(pkey, (uint64_t)i, 0) % (uint64_t)s->parts);
  }
  return g;
}

void fx_graph_weigh(fx_graph *g, uint64_t seed) {
  const uint64_t key = halo_rng_key(seed, HALO_RNG_GRAPH, 7, 0);
  free(g->w);
  g->w = fx_xcalloc((size_t)(g->m + 1), sizeof *g->w);
  for (int64_t u = 0; u < g->n; u++)
    for (int64_t k = g->indptr[u]; k < g->indptr[u + 1]; k++) {
      const int64_t v = g->indices[k], lo = u < v ? u : v, hi = u < v ? v : u;
      g->w[k] = (double)(1 + halo_rng_bits(key, (uint64_t)lo, (uint32_t)hi) % 24) / 8.0;
    }
}

/* Σ of node i's edge weights (its degree when unweighted). */
static double fx_degree(const fx_graph *g, int64_t i) {
  if (!g->w) return (double)(g->indptr[i + 1] - g->indptr[i]);
  double d = 0.0;
  for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++) d += g->w[k];
  return d;
}

static double fx_weight(const fx_graph *g, int64_t k) { return g->w ? g->w[k] : 1.0; }

void fx_graph_free(fx_graph *g) {
  if (!g) return;
  free(g->w);
  free(g->indptr);
  free(g->indices);
  free(g->x);
  free(g->labels);
  free(g->split);
  free(g->part);
  free(g);
}

typedef struct halo_key {
  int32_t owner;
  int64_t gid;
} halo_key;

static int halo_key_cmp(const void *a, const void *b) {
  const halo_key *x = a, *y = b;
  if (x->owner != y->owner) return (x->owner > y->owner) - (x->owner < y->owner);
  return (x->gid > y->gid) - (x->gid < y->gid);
}

static int i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

halo_shard *fx_shard_new(const fx_graph *g, int32_t p, uint64_t run_id) {
  halo_shard *s = fx_xcalloc(1, sizeof *s);
  const int64_t n = g->n;
  int64_t *local = fx_xcalloc((size_t)n, sizeof *local);
  for (int64_t i = 0; i < n; i++) local[i] = -1;

  int64_t no = 0;
  for (int64_t i = 0; i < n; i++)
    if (g->part[i] == p) local[i] = no++;
  /* Halo: remote neighbours of owned nodes, by owner part then global id. */
  halo_key *h = fx_xcalloc((size_t)g->m, sizeof *h);
  int64_t nh = 0;
  for (int64_t i = 0; i < n; i++) {
    if (g->part[i] != p) continue;
    for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++) {
      int64_t v = g->indices[k];
      if (g->part[v] != p && local[v] == -1) {
        local[v] = -2; /* seen */
        h[nh++] = (halo_key){g->part[v], v};
      }
    }
  }
  qsort(h, (size_t)nh, sizeof *h, halo_key_cmp);
  for (int64_t k = 0; k < nh; k++) local[h[k].gid] = no + k;

  *s = (halo_shard){.format_version = HALO_SHARD_FORMAT_DENSE,
                    .part = p,
                    .parts = g->parts,
                    .run_id = run_id,
                    .nodes = n,
                    .edges = g->m,
                    .features = g->f,
                    .classes = g->c,
                    .n_owned = no,
                    .n_halo = nh};
  s->global_id = fx_xcalloc((size_t)(no + nh), sizeof(int64_t));
  s->degree = fx_xcalloc((size_t)(no + nh), sizeof(int64_t));
  s->halo_owner = fx_xcalloc((size_t)nh, sizeof(int32_t));
  s->indptr = fx_xcalloc((size_t)no + 1, sizeof(int64_t));
  s->x = fx_xcalloc((size_t)(no * g->f), sizeof(float));
  s->labels = fx_xcalloc((size_t)no, sizeof(int32_t));
  s->train = fx_xcalloc((size_t)no, sizeof(int32_t));
  s->valid = fx_xcalloc((size_t)no, sizeof(int32_t));
  s->test = fx_xcalloc((size_t)no, sizeof(int32_t));
  s->send_ptr = fx_xcalloc((size_t)g->parts + 1, sizeof(int64_t));
  s->recv_ptr = fx_xcalloc((size_t)g->parts + 1, sizeof(int64_t));

  int64_t nnz = 0;
  for (int64_t i = 0; i < n; i++)
    if (g->part[i] == p) nnz += g->indptr[i + 1] - g->indptr[i];
  s->nnz = nnz;
  s->indices = fx_xcalloc((size_t)nnz, sizeof(int32_t));
  if (g->w) {
    s->edge_weight = fx_xcalloc((size_t)nnz + 1, sizeof(float));
    s->weighted_degree = fx_xcalloc((size_t)(no + nh), sizeof(double));
  }

  int64_t r = 0, e = 0;
  for (int64_t i = 0; i < n; i++) {
    if (g->part[i] != p) continue;
    s->global_id[r] = i;
    s->degree[r] = g->indptr[i + 1] - g->indptr[i];
    memcpy(s->x + r * g->f, g->x + i * g->f, (size_t)g->f * sizeof(float));
    s->labels[r] = g->labels[i];
    int32_t *row = s->indices + e;
    int64_t len = 0;
    for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++) row[len++] = (int32_t)local[g->indices[k]];
    if (g->w) { /* columns and weights together, by insertion */
      float *wr = s->edge_weight + e;
      for (int64_t q = 0; q < len; q++) wr[q] = (float)g->w[g->indptr[i] + q];
      for (int64_t q = 1; q < len; q++)
        for (int64_t t = q; t > 0 && row[t - 1] > row[t]; t--) {
          int32_t c = row[t];
          row[t] = row[t - 1];
          row[t - 1] = c;
          float x = wr[t];
          wr[t] = wr[t - 1];
          wr[t - 1] = x;
        }
      s->weighted_degree[r] = fx_degree(g, i);
    } else {
      qsort(row, (size_t)len, sizeof *row, i32_cmp);
    }
    e += len;
    s->indptr[r + 1] = e;
    if (g->split[i] == 1) s->train[s->n_train++] = (int32_t)r;
    if (g->split[i] == 2) s->valid[s->n_valid++] = (int32_t)r;
    if (g->split[i] == 3) s->test[s->n_test++] = (int32_t)r;
    r++;
  }
  for (int64_t k = 0; k < nh; k++) {
    s->global_id[no + k] = h[k].gid;
    s->degree[no + k] = g->indptr[h[k].gid + 1] - g->indptr[h[k].gid];
    if (g->w) s->weighted_degree[no + k] = fx_degree(g, h[k].gid);
    s->halo_owner[k] = h[k].owner;
    s->recv_ptr[h[k].owner + 1]++;
  }
  for (int32_t q = 0; q < g->parts; q++) s->recv_ptr[q + 1] += s->recv_ptr[q];

  /* Send lists: owned rows with a neighbour in part q, ascending. */
  int32_t *send = fx_xcalloc((size_t)(no * g->parts + 1), sizeof(int32_t));
  int64_t ns = 0;
  for (int32_t q = 0; q < g->parts; q++) {
    if (q != p) {
      for (int64_t i = 0; i < n; i++) {
        if (g->part[i] != p) continue;
        int hit = 0;
        for (int64_t k = g->indptr[i]; k < g->indptr[i + 1] && !hit; k++) hit = g->part[g->indices[k]] == q;
        if (hit) send[ns++] = (int32_t)local[i];
      }
    }
    s->send_ptr[q + 1] = ns;
  }
  s->send_idx = send;
  free(h);
  free(local);
  return s;
}

static void mkdirs(const char *dir) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *c = buf + 1; *c; c++) {
    if (*c != '/') continue;
    *c = '\0';
    mkdir(buf, 0755);
    *c = '/';
  }
  mkdir(buf, 0755);
}

int fx_write_shards(const fx_graph *g, const char *dir, uint64_t run_id) {
  int rc = 0;
  char path[1200];
  halo_manifest m = {.format_version = HALO_SHARD_FORMAT_DENSE,
                     .nodes = g->n,
                     .edges = g->m,
                     .features = g->f,
                     .classes = g->c,
                     .parts = g->parts,
                     .seed = 1,
                     .ufactor = 30,
                     .source_digest = run_id ^ 0x5555,
                     .run_id = run_id};
  snprintf(m.method, sizeof m.method, "random");
  snprintf(m.objective, sizeof m.objective, "cut");
  snprintf(m.source, sizeof m.source, "train-fixture");
  m.part = g->part;
  m.part_digest = fx_xcalloc((size_t)g->parts, sizeof(uint64_t));
  m.part_owned = fx_xcalloc((size_t)g->parts, sizeof(int64_t));
  m.part_halo = fx_xcalloc((size_t)g->parts, sizeof(int64_t));
  mkdirs(dir);
  for (int32_t p = 0; p < g->parts && rc == 0; p++) {
    halo_shard *s = fx_shard_new(g, p, run_id);
    m.part_digest[p] = halo_shard_digest(s);
    m.part_owned[p] = s->n_owned;
    m.part_halo[p] = s->n_halo;
    if (g->w) {
      if (!m.part_edge_weight_digest)
        m.part_edge_weight_digest = fx_xcalloc((size_t)g->parts, sizeof(uint64_t));
      m.part_edge_weight_digest[p] = halo_shard_digest_edge_weight(s);
    }
    halo_shard_path(path, sizeof path, dir, p, g->parts);
    remove(path);
    if (halo_shard_write(path, s) != HALO_OK) rc = -1;
    halo_shard_destroy(&s);
  }
  snprintf(path, sizeof path, "%s/manifest.h5", dir);
  remove(path);
  if (rc == 0 && halo_manifest_write(path, &m) != HALO_OK) rc = -1;
  free(m.part_digest);
  free(m.part_owned);
  free(m.part_halo);
  free(m.part_edge_weight_digest);
  return rc;
}

/* --- the dense reference model ------------------------------------------ */

/* What a reference tensor starts as. */
enum { REF_WEIGHT, REF_ZERO, REF_ONE };

/* Whether layer l projects its residual (halo-model.h's rule, restated). */
static int ref_projects(const fx_model *m, int l) {
  return m->residual && (l == 0 || m->dims[l] != m->dims[l + 1]);
}

/* GAT layer l's heads K and per-head width F: the hidden layers'
 * concatenated (dims[l+1] = K·F), the output layer's averaged (F = dims[l+1]). */
static void ref_heads(const fx_model *m, int l, int32_t *k, int32_t *f) {
  const int top = l + 1 == m->layers;
  *k = top ? m->output_heads : m->heads;
  *f = top ? m->dims[l + 1] : m->dims[l + 1] / *k;
}

/* Layer l's tensors as (rows, cols, start), in order; returns how many. */
static int ref_tensors(const fx_model *m, int l, int64_t shape[12][3]) {
  const int64_t a = m->dims[l], b = m->dims[l + 1], h = m->mlp_hidden;
  int32_t heads = 1, hf = 1;
  if (m->kind == FX_GAT) ref_heads(m, l, &heads, &hf);
  int k = 0;
#define T(r, c, s) (shape[k][0] = (r), shape[k][1] = (c), shape[k][2] = (s), k++)
  switch (m->kind) {
    case FX_SAGE:
      T(a, b, REF_WEIGHT), T(1, b, REF_ZERO), T(a, b, REF_WEIGHT);
      break;
    case FX_GIN:
      T(a, h, REF_WEIGHT), T(1, h, REF_ZERO), T(h, b, REF_WEIGHT), T(1, b, REF_ZERO);
      if (m->train_eps) T(1, 1, REF_ZERO);
      if (m->batch_norm) T(1, h, REF_ONE), T(1, h, REF_ZERO);
      break;
    case FX_GAT: /* PyG's GATConv: lin (no bias), att_src, att_dst, bias */
      T(a, (int64_t)heads * hf, REF_WEIGHT), T(heads, hf, REF_WEIGHT), T(heads, hf, REF_WEIGHT),
          T(1, b, REF_ZERO);
      break;
    default:
      T(a, b, REF_WEIGHT), T(1, b, REF_ZERO);
  }
  if (ref_projects(m, l)) T(a, b, REF_WEIGHT);
  if ((m->layer_norm || m->batch_norm) && l + 1 < m->layers) T(1, b, REF_ONE), T(1, b, REF_ZERO);
#undef T
  return k;
}

int64_t fx_model_params(const fx_model *m) {
  int64_t n = 0, shape[12][3];
  for (int l = 0; l < m->layers; l++)
    for (int k = 0, nt = ref_tensors(m, l, shape); k < nt; k++) n += shape[k][0] * shape[k][1];
  return n;
}

void fx_model_init(const fx_model *m, double *p) {
  int64_t off = 0, shape[12][3];
  for (int l = 0; l < m->layers; l++)
    for (int k = 0, nt = ref_tensors(m, l, shape); k < nt; k++) {
      const int64_t rows = shape[k][0], cols = shape[k][1];
      uint64_t key = halo_rng_key(m->seed, HALO_RNG_WEIGHTS, (uint64_t)l, (uint64_t)k);
      double limit = sqrt(6.0 / (double)(rows + cols));
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
          p[off++] = shape[k][2] == REF_ONE  ? 1.0
                     : shape[k][2] == REF_ZERO ? 0.0
                                               : (float)(limit * (2.0 * halo_rng_uniform_double(
                                                                         key, (uint64_t)r,
                                                                         (uint64_t)c) -
                                                                  1.0));
    }
}

/* --halo-sample (BNS-GCN): the factor of edge (i, j) in the epoch's graph,
 * j's row as i's part reads it: 1 within a part; across parts 1/p when
 * j's keyed draw keeps it, else 0 (the full graph's normalisation stays). */
static double ref_sample(const fx_model *m, const fx_graph *g, int64_t i, int64_t j) {
  if (!halo_sample_on(m->halo_sample) || g->part[i] == g->part[j]) return 1.0;
  const uint64_t key = halo_sample_key(m->seed, m->epoch);
  return halo_sample_keep(key, j, m->halo_sample) ? 1.0 / (double)m->halo_sample : 0.0;
}

/* Y (n × cols) = A · X with A the adjacency, values 1 (or the edge
 * weights), no self-loop, each entry by ref_sample's factor; with `mean`,
 * each row divided by its degree (the sum of its weights: PyG's weighted
 * mean Σ w x / Σ w; an isolated row stays 0). */
static void ref_neighbours(const fx_model *m, const fx_graph *g, const double *x, int32_t cols,
                           int mean, double *y) {
  for (int64_t i = 0; i < g->n; i++) {
    const double deg = fx_degree(g, i);
    for (int32_t c = 0; c < cols; c++) y[i * cols + c] = 0.0;
    for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++) {
      const double f = ref_sample(m, g, i, g->indices[k]) * fx_weight(g, k);
      for (int32_t c = 0; c < cols; c++) y[i * cols + c] += f * x[g->indices[k] * cols + c];
    }
    if (mean && deg > 0)
      for (int32_t c = 0; c < cols; c++) y[i * cols + c] /= deg;
  }
}

/* Y (n × cols) = the element-wise max over each row's neighbours (0 for
 * an isolated row), PyG's max aggregation. */
static void ref_neighbours_max(const fx_graph *g, const double *x, int32_t cols, double *y) {
  for (int64_t i = 0; i < g->n; i++)
    for (int32_t c = 0; c < cols; c++) {
      double v = g->indptr[i + 1] > g->indptr[i] ? -INFINITY : 0.0;
      for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++)
        v = fmax(v, x[g->indices[k] * cols + c]);
      y[i * cols + c] = v;
    }
}

/* Y (n × cols) = Â · X, in double: Â = D^-1/2 (A + I) D^-1/2 from the
 * graph (with weights, PyG's gcn_norm: w_ij / sqrt((d_i + 1)(d_j + 1)), d
 * the weighted degree and the self-loop of weight 1), or (PyG's GCNConv
 * flags) without the I, or A (+ I) unscaled; with m->halo_sample, each
 * cross-part entry by the epoch's draw (ref_sample). */
static void ref_aggregate(const fx_model *m, const fx_graph *g, const double *x, int32_t cols,
                          double *y) {
  const double self = m->gcn_no_self_loops ? 0.0 : 1.0;
  for (int64_t i = 0; i < g->n; i++) {
    double di = fx_degree(g, i) + self;
    const double aii = m->gcn_no_normalize || self == 0.0 ? self : self / di;
    for (int32_t c = 0; c < cols; c++) y[i * cols + c] = aii * x[i * cols + c];
    for (int64_t k = g->indptr[i]; k < g->indptr[i + 1]; k++) {
      int64_t j = g->indices[k];
      double dj = fx_degree(g, j) + self;
      double a = ref_sample(m, g, i, j) * fx_weight(g, k) *
                 (m->gcn_no_normalize ? 1.0 : 1.0 / sqrt(di * dj));
      for (int32_t c = 0; c < cols; c++) y[i * cols + c] += a * x[j * cols + c];
    }
  }
}

static void ref_dropout(double *h, int64_t n, int32_t cols, uint64_t key, float p) {
  if (p <= 0.0f) return;
  double scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; i++)
    for (int32_t c = 0; c < cols; c++)
      h[i * cols + c] = halo_rng_uniform(key, (uint64_t)i, (uint64_t)c) >= p ? h[i * cols + c] * scale : 0.0;
}

/* PyG's GATConv, layer l, from input H (n × dims[l]) into S (n × dims[l+1]):
 * T = H·W; e_ij = LeakyReLU_0.2(a_src·T_j + a_dst·T_i) over j ∈ N(i) ∪ {i};
 * α = softmax_j(e), dropped with the mask keyed by (seed, epoch, layer) at
 * (i, j·K + k); out_i = Σ_j α_ij T_j per head; S = the heads concatenated,
 * or their mean, + b.  Returns the parameters it read. */
static int64_t ref_gat(const fx_model *m, int l, const fx_graph *g, const double *h,
                       const double *p, double *s) {
  const int64_t n = g->n;
  const int32_t a = m->dims[l], b = m->dims[l + 1];
  int32_t K, F;
  ref_heads(m, l, &K, &F);
  const int32_t kf = K * F;
  const double *w = p, *att_src = w + (int64_t)a * kf, *att_dst = att_src + kf,
               *bias = att_dst + kf;
  const int concat = l + 1 < m->layers;
  const uint64_t key =
      halo_rng_key(m->seed, HALO_RNG_ATTENTION, (uint64_t)m->epoch, (uint64_t)l);
  const double keep_scale = 1.0f / (1.0f - m->attn_dropout);
  double *t = fx_xcalloc((size_t)(n * kf), sizeof(double));
  double *src = fx_xcalloc((size_t)(n * K), sizeof(double)), *dst = fx_xcalloc((size_t)(n * K), sizeof(double));
  double *e = fx_xcalloc((size_t)(g->m + n), sizeof(double));
  for (int64_t i = 0; i < n; i++)
    for (int32_t c = 0; c < kf; c++) {
      double v = 0.0;
      for (int32_t q = 0; q < a; q++) v += h[i * a + q] * w[(int64_t)q * kf + c];
      t[i * kf + c] = v;
    }
  for (int64_t i = 0; i < n; i++)
    for (int32_t k = 0; k < K; k++)
      for (int32_t f = 0; f < F; f++) {
        src[i * K + k] += t[i * kf + k * F + f] * att_src[k * F + f];
        dst[i * K + k] += t[i * kf + k * F + f] * att_dst[k * F + f];
      }
  for (int64_t i = 0; i < n; i++) {
    const int64_t deg = g->indptr[i + 1] - g->indptr[i];
    for (int32_t c = 0; c < b; c++) s[i * b + c] = bias[c];
    for (int32_t k = 0; k < K; k++) {
      /* The neighbours, then the self-loop (q == deg). */
      double mx = -INFINITY, sum = 0.0;
      for (int64_t q = 0; q <= deg; q++) {
        const int64_t j = q < deg ? g->indices[g->indptr[i] + q] : i;
        const double pre = src[j * K + k] + dst[i * K + k];
        e[q] = pre > 0.0 ? pre : 0.2 * pre;
        mx = fmax(mx, e[q]);
      }
      for (int64_t q = 0; q <= deg; q++) sum += exp(e[q] - mx);
      for (int64_t q = 0; q <= deg; q++) {
        const int64_t j = q < deg ? g->indices[g->indptr[i] + q] : i;
        double alpha = exp(e[q] - mx) / sum;
        if (m->attn_dropout > 0.0f)
          alpha = halo_rng_uniform(key, (uint64_t)i, (uint64_t)j * (uint64_t)K + (uint64_t)k) >=
                          m->attn_dropout
                      ? alpha * keep_scale
                      : 0.0;
        for (int32_t f = 0; f < F; f++) {
          const double v = alpha * t[j * kf + k * F + f];
          if (concat)
            s[i * b + k * F + f] += v;
          else
            s[i * b + f] += v / K;
        }
      }
    }
  }
  free(t);
  free(src);
  free(dst);
  free(e);
  return (int64_t)a * kf + 2 * (int64_t)kf + b;
}

/* torch.nn.BatchNorm1d(cols) on S (n × cols): in training (m->bn_running
 * NULL) with each column's mean and biased variance over all n rows, taken
 * in two passes, which m->bn_batch receives; in evaluation with the
 * running ones.  *run is the site's offset in their layout, advanced. */
static void ref_batchnorm(const fx_model *m, double *s, int64_t n, int32_t cols,
                          const double *gamma, const double *beta, int64_t *run) {
  for (int32_t c = 0; c < cols; c++) {
    double mean = 0.0, var = 0.0;
    if (m->bn_running) {
      mean = m->bn_running[*run + c];
      var = m->bn_running[*run + cols + c];
    } else {
      for (int64_t i = 0; i < n; i++) mean += s[i * cols + c];
      mean /= (double)n;
      for (int64_t i = 0; i < n; i++) var += (s[i * cols + c] - mean) * (s[i * cols + c] - mean);
      var /= (double)n;
      if (m->bn_batch) {
        m->bn_batch[*run + c] = mean;
        m->bn_batch[*run + cols + c] = var;
      }
    }
    for (int64_t i = 0; i < n; i++)
      s[i * cols + c] = (s[i * cols + c] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c];
  }
  *run += 2 * cols;
}

/* The forward pass; with emb_out, the input of layer `emb_layer` (1-based)
 * before its dropout, n × dims[emb_layer - 1]. */
static double ref_forward(const fx_model *m, const fx_graph *g, const double *p, double *z_out,
                          int emb_layer, double *emb_out) {
  const int64_t n = g->n;
  int32_t widest = 0;
  for (int l = 0; l <= m->layers; l++)
    if (m->dims[l] > widest) widest = m->dims[l];
  double *h = fx_xcalloc((size_t)(n * widest), sizeof(double));
  double *ah = fx_xcalloc((size_t)(n * widest), sizeof(double));
  /* PyG's NormalizeFeatures: x - min(x), rows divided by max(sum, 1).  The
   * runtime does this in double and rounds to float once. */
  double lo = INFINITY;
  for (int64_t i = 0; i < n * g->f; i++) lo = fmin(lo, g->x[i]);
  for (int64_t i = 0; i < n; i++) {
    double sum = 0.0;
    for (int32_t j = 0; j < g->f; j++) sum += g->x[i * g->f + j] - lo;
    sum = fmax(sum, 1.0);
    for (int32_t j = 0; j < g->f; j++) {
      double v = g->x[i * g->f + j];
      h[i * g->f + j] = m->normalize ? (double)(float)((v - lo) / sum) : v;
    }
  }
  int64_t off = 0, run = 0;
  for (int l = 0; l < m->layers; l++) {
    int32_t a = m->dims[l], b = m->dims[l + 1];
    float pl = l == 0 ? m->input_dropout : m->dropout;
    if (emb_out && l == emb_layer - 1) memcpy(emb_out, h, (size_t)(n * a) * sizeof(double));
    ref_dropout(h, n, a, halo_rng_key(m->seed, HALO_RNG_DROPOUT, (uint64_t)m->epoch, (uint64_t)l), pl);
    double *s = fx_xcalloc((size_t)(n * b), sizeof(double));
    if (m->kind == FX_GCN) {
      ref_aggregate(m, g, h, a, ah);
      const double *w = p + off, *bias = p + off + (int64_t)a * b;
      off += (int64_t)a * b + b;
      for (int64_t i = 0; i < n; i++)
        for (int32_t c = 0; c < b; c++) {
          double v = bias[c];
          for (int32_t k = 0; k < a; k++) v += ah[i * a + k] * w[k * b + c];
          s[i * b + c] = v;
        }
    } else if (m->kind == FX_SAGE) {
      /* PyG's SAGEConv: lin_l(agg_j h_j) + lin_r(h_i), then normalize. */
      if (m->sage_aggr == FX_AGGR_MAX)
        ref_neighbours_max(g, h, a, ah);
      else
        ref_neighbours(m, g, h, a, m->sage_aggr == FX_AGGR_MEAN, ah);
      const double *wl = p + off, *bias = wl + (int64_t)a * b, *wr = bias + b;
      off += 2 * (int64_t)a * b + b;
      for (int64_t i = 0; i < n; i++) {
        double sq = 0.0;
        for (int32_t c = 0; c < b; c++) {
          double v = bias[c];
          for (int32_t k = 0; k < a; k++) v += ah[i * a + k] * wl[k * b + c] + h[i * a + k] * wr[k * b + c];
          s[i * b + c] = v;
          sq += v * v;
        }
        const double norm = fmax(sqrt(sq), 1e-12);
        if (m->sage_normalize)
          for (int32_t c = 0; c < b; c++) s[i * b + c] /= norm;
      }
    } else if (m->kind == FX_GAT) {
      off += ref_gat(m, l, g, h, p + off, s);
    } else {
      /* PyG's GINConv: MLP((1 + eps) h_i + sum_j h_j), MLP = Lin, ReLU, Lin. */
      const int32_t hid = m->mlp_hidden;
      const double *w1 = p + off, *b1 = w1 + (int64_t)a * hid, *w2 = b1 + hid,
                   *b2 = w2 + (int64_t)hid * b;
      const double eps = m->train_eps ? b2[b] : 0.0;
      off += (int64_t)a * hid + hid + (int64_t)hid * b + b + (m->train_eps ? 1 : 0);
      ref_neighbours(m, g, h, a, 0, ah);
      /* The MLP's first map over all rows (BatchNorm needs them all). */
      double *r = fx_xcalloc((size_t)(n * hid), sizeof(double));
      for (int64_t i = 0; i < n; i++)
        for (int32_t q = 0; q < hid; q++) {
          double v = b1[q];
          for (int32_t k = 0; k < a; k++) v += ((1.0 + eps) * h[i * a + k] + ah[i * a + k]) * w1[k * hid + q];
          r[i * hid + q] = v;
        }
      if (m->batch_norm) {
        ref_batchnorm(m, r, n, hid, p + off, p + off + hid, &run);
        off += 2 * (int64_t)hid;
      }
      for (int64_t i = 0; i < n * hid; i++) r[i] = r[i] > 0.0 ? r[i] : 0.0;
      for (int64_t i = 0; i < n; i++)
        for (int32_t c = 0; c < b; c++) {
          double v = b2[c];
          for (int32_t q = 0; q < hid; q++) v += r[i * hid + q] * w2[q * b + c];
          s[i * b + c] = v;
        }
      free(r);
    }
    /* The residual: H itself, or H·W_res. */
    if (m->residual) {
      const double *wres = p + off;
      const int project = ref_projects(m, l);
      for (int64_t i = 0; i < n; i++)
        for (int32_t c = 0; c < b; c++) {
          double v = 0.0;
          if (project)
            for (int32_t k = 0; k < a; k++) v += h[i * a + k] * wres[k * b + c];
          else
            v = h[i * a + c];
          s[i * b + c] += v;
        }
      if (project) off += (int64_t)a * b;
    }
    if (m->batch_norm && l + 1 < m->layers) {
      ref_batchnorm(m, s, n, b, p + off, p + off + b, &run);
      off += 2 * (int64_t)b;
    }
    /* torch.nn.LayerNorm(b): biased variance, eps 1e-5. */
    if (m->layer_norm && l + 1 < m->layers) {
      const double *gamma = p + off, *beta = gamma + b;
      off += 2 * (int64_t)b;
      for (int64_t i = 0; i < n; i++) {
        double mean = 0.0, var = 0.0;
        for (int32_t c = 0; c < b; c++) mean += s[i * b + c] / b;
        for (int32_t c = 0; c < b; c++) var += (s[i * b + c] - mean) * (s[i * b + c] - mean) / b;
        for (int32_t c = 0; c < b; c++)
          s[i * b + c] = (s[i * b + c] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c];
      }
    }
    for (int64_t i = 0; i < n * b; i++) {
      const double v = s[i];
      h[i] = l + 1 == m->layers      ? v
             : m->gelu               ? 0.5 * v * erfc(-v / sqrt(2.0))
             : v > 0.0               ? v
             : m->elu                ? expm1(v)
             : m->negative_slope > 0 ? m->negative_slope * v
                                     : 0.0;
    }
    free(s);
  }
  const int32_t cls = m->dims[m->layers];
  double loss = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    if (z_out)
      for (int32_t c = 0; c < cls; c++) z_out[i * cls + c] = h[i * cls + c];
    if (g->split[i] != 1) continue;
    double mx = h[i * cls];
    for (int32_t c = 1; c < cls; c++) mx = fmax(mx, h[i * cls + c]);
    double s = 0.0;
    for (int32_t c = 0; c < cls; c++) s += exp(h[i * cls + c] - mx);
    loss += -(h[i * cls + g->labels[i]] - mx - log(s));
    count++;
  }
  free(h);
  free(ah);
  return count ? loss / (double)count : 0.0;
}

double fx_model_loss(const fx_model *m, const fx_graph *g, const double *p, double *z_out) {
  return ref_forward(m, g, p, z_out, 0, NULL);
}

void fx_model_embeddings(const fx_model *m, const fx_graph *g, const double *p, int layer,
                         double *out) {
  ref_forward(m, g, p, NULL, layer, out);
}

/* --- the probes' cases --------------------------------------------------- */

fx_case fx_case_parse(char *const *argv) {
  const fx_spec s = fx_spec_parse(argv, 1, 0);
  return (fx_case){.nodes = s.nodes,
                   .degree = s.avg_degree,
                   .features = s.features,
                   .density = s.density,
                   .classes = s.classes,
                   .hidden = atoi(argv[FX_SPEC_ARGS]),
                   .input_dropout = (float)atof(argv[FX_SPEC_ARGS + 1]),
                   .epochs = atoi(argv[FX_SPEC_ARGS + 2])};
}

fx_spec fx_case_spec(const fx_case *c, int32_t parts, uint64_t seed) {
  return (fx_spec){.nodes = c->nodes, .avg_degree = c->degree, .features = c->features,
                   .density = c->density, .classes = c->classes, .parts = parts, .seed = seed};
}

fx_model fx_case_model(const fx_case *c, uint64_t seed, int training) {
  return (fx_model){.layers = 2, .dims = {c->features, c->hidden, c->classes},
                    .dropout = training ? 0.5f : 0.0f,
                    .input_dropout = training ? c->input_dropout : 0.0f, .seed = seed,
                    .normalize = 1};
}

double fx_rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

double fx_max_abs(const double *v, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
  return m;
}
