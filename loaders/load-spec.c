/* Synthetic graphs from a spec string, "NAME:key=value,key=value".
 *
 *   sbm   a stochastic block model: `nodes` nodes in `classes` classes; each
 *         node draws avg-degree/2 undirected edges (the fraction by a coin),
 *         each to its own class with probability `homophily`, else to a node
 *         of another class; both directions are stored, so the stored degree
 *         averages `avg-degree`.  Labels, class-dependent features and a
 *         train/valid/test split come with it.
 *   rmat  a recursive-matrix (Kronecker) graph on 2^scale nodes with
 *         edge-factor * 2^scale directed edges, quadrant probabilities
 *         a, b, c and 1-a-b-c (Graph500 defaults, resolved to 1/65536).
 *         Structure only; ids are not permuted, so hubs have small ids.
 *
 * Every random choice is a pure function of (seed, node or edge, draw), so
 * the edges are drawn in parallel straight into the one-word-per-edge buffer
 * that load_edges_to_csr sorts into the CSR in place.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-memory.h"
#include "halo-rng.h"
#include "load-impl.h"

/* ---- Size admission ------------------------------------------------------ */

/* Refuses a graph whose build would not fit in the memory left: about 16
 * bytes per directed edge (the edge words, then the CSR columns) and 32 plus
 * 4 per feature per node, against halo_memory_available().  The spec is
 * checked before anything is allocated, so a typo of a few zeros costs one
 * line instead of the machine. */
static halo_status spec_fits(const char *gen, const char *keys_text, double nodes, double edges,
                             double feat) {
  return load_admit(16.0 * edges + nodes * (32.0 + 4.0 * feat),
                    "%s:%s: about %.0f directed edges and %.0f nodes", gen, keys_text, edges,
                    nodes);
}

/* ---- Key/value parsing --------------------------------------------------- */

typedef enum { KEY_INT, KEY_REAL } key_kind;

typedef struct spec_key {
  const char *name;
  key_kind kind;
  double min, max;
  int required;
  union {
    int64_t *i;
    double *r;
  } out;
  int seen;
} spec_key;

static spec_key *find_key(spec_key *keys, int count, const char *name, size_t len) {
  for (int k = 0; k < count; k++)
    if (strlen(keys[k].name) == len && memcmp(keys[k].name, name, len) == 0) return &keys[k];
  return NULL;
}

/* Parses "k=v,k=v" (the text after "NAME:") against the key table. */
static halo_status parse_keys(const char *gen, const char *text, spec_key *keys, int count) {
  halo_status st = HALO_OK;
  const char *p = text;
  while (*p) {
    const char *item = p;
    const char *comma = strchr(p, ',');
    size_t item_len = comma ? (size_t)(comma - p) : strlen(p);
    p = comma ? comma + 1 : p + item_len;
    const char *eq = memchr(item, '=', item_len);
    if (item_len == 0) HALO_FAIL(HALO_ERR_ARG, "%s: empty item in the spec (stray ',')", gen);
    if (!eq) HALO_FAIL(HALO_ERR_ARG, "%s: '%.*s' is not key=value", gen, (int)item_len, item);
    size_t name_len = (size_t)(eq - item);
    spec_key *key = find_key(keys, count, item, name_len);
    if (!key) {
      char known[256] = "";
      for (int k = 0; k < count; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                 keys[k].name);
      HALO_FAIL(HALO_ERR_ARG, "%s: unknown key '%.*s' (known: %s)", gen, (int)name_len, item,
                known);
    }
    if (key->seen) HALO_FAIL(HALO_ERR_ARG, "%s: key '%s' is given twice", gen, key->name);
    key->seen = 1;

    char value[64];
    size_t value_len = item_len - name_len - 1;
    if (value_len == 0 || value_len >= sizeof value)
      HALO_FAIL(HALO_ERR_ARG, "%s: %s= needs a value", gen, key->name);
    memcpy(value, eq + 1, value_len);
    value[value_len] = '\0';
    char *end;
    errno = 0;
    double v;
    if (key->kind == KEY_INT) {
      long long iv = strtoll(value, &end, 10);
      if (*end != '\0' || errno == ERANGE)
        HALO_FAIL(HALO_ERR_ARG, "%s: %s=%s is not an integer", gen, key->name, value);
      v = (double)iv;
      *key->out.i = iv;
    } else {
      v = strtod(value, &end);
      if (*end != '\0' || !isfinite(v))
        HALO_FAIL(HALO_ERR_ARG, "%s: %s=%s is not a number", gen, key->name, value);
      *key->out.r = v;
    }
    if ((v < key->min || v > key->max) && key->kind == KEY_INT)
      HALO_FAIL(HALO_ERR_RANGE, "%s: %s=%s is out of range [%lld, %lld]", gen, key->name, value,
                (long long)key->min, (long long)key->max);
    if (v < key->min || v > key->max)
      HALO_FAIL(HALO_ERR_RANGE, "%s: %s=%s is out of range [%g, %g]", gen, key->name, value,
                key->min, key->max);
  }
  for (int k = 0; k < count; k++)
    if (keys[k].required && !keys[k].seen)
      HALO_FAIL(HALO_ERR_ARG, "%s: %s= is required", gen, keys[k].name);
done:
  return st;
}

#define KEY_I(name, var, lo, hi, req) \
  { name, KEY_INT, lo, hi, req, {.i = &(var)}, 0 }
#define KEY_R(name, var, lo, hi, req) \
  { name, KEY_REAL, lo, hi, req, {.r = &(var)}, 0 }

/* ---- Stochastic block model ---------------------------------------------- */

typedef struct sbm {
  int64_t n;
  double half_degree; /* undirected edges drawn per node, on average */
  double homophily;
  uint64_t deg_key, edge_key;
  const int64_t *class_off; /* size classes+1: members of class c are members[class_off[c]..] */
  const int64_t *members;   /* size n: node ids sorted by class */
  const int32_t *cls;       /* size n: class of each node */
} sbm;

static inline int64_t sbm_draws(const sbm *s, int64_t u) {
  if (s->n < 2) return 0; /* a lone node has no one to link to */
  double base = floor(s->half_degree);
  return (int64_t)base +
         (halo_rng_uniform_double(s->deg_key, (uint64_t)u, 0) < s->half_degree - base);
}

/* The j-th neighbour drawn by u (never u itself; n >= 2). */
static inline int64_t sbm_pick(const sbm *s, int64_t u, int64_t j) {
  int32_t c = s->cls[u];
  int64_t off = s->class_off[c], size = s->class_off[c + 1] - off;
  int64_t others = s->n - size;
  int inside = halo_rng_uniform_double(s->edge_key, (uint64_t)u, (uint64_t)(2 * j)) < s->homophily;
  if (size < 2) inside = 0;
  if (others == 0) inside = 1;
  uint64_t draw = halo_rng_bits(s->edge_key, (uint64_t)u, (uint64_t)(2 * j + 1));
  if (inside) {
    /* Uniform over the class without u: the last member stands in for u. */
    int64_t v = s->members[off + (int64_t)(draw % (uint64_t)(size - 1))];
    return v == u ? s->members[off + size - 1] : v;
  }
  /* Uniform over the members of every other class, skipping class c's block. */
  int64_t idx = (int64_t)(draw % (uint64_t)others);
  return s->members[idx < off ? idx : idx + size];
}

/* An sbm spec's keys, checked, and the class tables its edges are drawn
 * from (12 bytes per node: every node's class and the nodes by class). */
typedef struct sbm_spec {
  int64_t nodes, classes, feat, seed;
  double degree, homophily, train, valid, noise, feat_density;
  int32_t *cls;
  int64_t *class_off, *members;
} sbm_spec;

static void sbm_spec_free(sbm_spec *p) {
  free(p->members);
  free(p->class_off);
  free(p->cls);
  p->members = p->class_off = NULL;
  p->cls = NULL;
}

/* Parses and checks the keys; admits `edge_share` of the graph's edges (a
 * slice's) and `node_share` of its node data beside the class tables. */
static halo_status sbm_setup(const char *keys_text, double edge_share, double node_share,
                             sbm_spec *p) {
  halo_status st = HALO_OK;
  int64_t *fill = NULL;
  *p = (sbm_spec){.classes = 8,
                  .feat = 32,
                  .seed = 1,
                  .degree = 10,
                  .homophily = 0.8,
                  .train = 0.1,
                  .valid = 0.1,
                  .noise = 1.0};
  spec_key keys[] = {
      KEY_I("nodes", p->nodes, 1, 4294967296.0, 1),
      KEY_I("classes", p->classes, 1, 1 << 16, 0),
      KEY_R("avg-degree", p->degree, 0, 1e6, 0),
      KEY_R("homophily", p->homophily, 0, 1, 0),
      KEY_I("feat", p->feat, 0, 1 << 20, 0),
      KEY_I("seed", p->seed, 0, 9e18, 0),
      KEY_R("train", p->train, 0, 1, 0),
      KEY_R("valid", p->valid, 0, 1, 0),
      KEY_R("noise", p->noise, 0, 1e6, 0),
      KEY_R("feat-density", p->feat_density, 0, 0.5, 0),
  };
  HALO_TRY(parse_keys("sbm", keys_text, keys, (int)(sizeof keys / sizeof keys[0])));
  if (p->train + p->valid > 1)
    HALO_FAIL(HALO_ERR_RANGE, "sbm: train=%g plus valid=%g exceeds 1", p->train, p->valid);
  if (p->classes > p->nodes)
    HALO_FAIL(HALO_ERR_RANGE, "sbm: classes=%lld exceeds nodes=%lld", (long long)p->classes,
              (long long)p->nodes);
  HALO_TRY(load_admit(
      16.0 * edge_share * (double)p->nodes * p->degree + 12.0 * (double)p->nodes +
          node_share * (double)p->nodes *
              (20.0 + (p->feat_density > 0 ? 16.0 * p->feat_density : 4.0) * (double)p->feat),
      "sbm:%s: about %.0f directed edges and %.0f nodes", keys_text, (double)p->nodes * p->degree,
      (double)p->nodes));

  const int64_t n = p->nodes, classes = p->classes;
  HALO_ALLOC(p->cls, n, "sbm classes");
  HALO_ALLOC(p->class_off, classes + 1, "sbm class offsets");
  HALO_ALLOC(p->members, n, "sbm class members");
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < n; u++)
    p->cls[u] = load_synth_class((uint64_t)p->seed, (int32_t)classes, u);
  for (int64_t u = 0; u < n; u++) p->class_off[p->cls[u] + 1]++;
  for (int64_t c = 0; c < classes; c++) p->class_off[c + 1] += p->class_off[c];
  HALO_ALLOC(fill, classes, "sbm fill positions");
  memcpy(fill, p->class_off, (size_t)classes * sizeof *fill);
  for (int64_t u = 0; u < n; u++) p->members[fill[p->cls[u]]++] = u;
done:
  free(fill);
  if (st != HALO_OK) sbm_spec_free(p);
  return st;
}

static sbm sbm_of(const sbm_spec *p) {
  return (sbm){
      .n = p->nodes,
      .half_degree = p->degree / 2,
      .homophily = p->homophily,
      .deg_key = halo_rng_key((uint64_t)p->seed, HALO_RNG_GRAPH, 1, 0),
      .edge_key = halo_rng_key((uint64_t)p->seed, HALO_RNG_GRAPH, 2, 0),
      .class_off = p->class_off,
      .members = p->members,
      .cls = p->cls,
  };
}

static halo_node_synth sbm_synth(const sbm_spec *p) {
  return (halo_node_synth){.features = (int32_t)p->feat,
                           .classes = (int32_t)p->classes,
                           .noise = p->noise,
                           .density = p->feat_density,
                           .train = p->train,
                           .valid = p->valid,
                           .seed = (uint64_t)p->seed};
}

static halo_status sbm_generate(const char *spec, const char *keys_text, halo_graph **out) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  load_edges edges = {.narrow = 1};
  sbm_spec p;
  HALO_TRY(sbm_setup(keys_text, 1, 1, &p));
  const int64_t n = p.nodes;
  const sbm s = sbm_of(&p);

  /* Node u's draws fill edge words [2 first[u], 2 first[u+1]): u -> v and
   * v -> u, so every node writes its own slots and no write is shared.
   * first[] lives in g->indptr until the CSR build needs it back. */
  HALO_TRY(halo_graph_create(n, 0, &g));
  int64_t *first = g->indptr;
  for (int64_t u = 0; u < n; u++) first[u + 1] = first[u] + sbm_draws(&s, u);
  HALO_TRY(load_edges_reserve(&edges, 2 * first[n]));
  edges.count = 2 * first[n];
  int64_t *word = edges.pair;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t u = 0; u < n; u++) {
    for (int64_t j = 0; j < first[u + 1] - first[u]; j++) {
      uint64_t v = (uint64_t)sbm_pick(&s, u, j);
      word[2 * (first[u] + j)] = (int64_t)((uint64_t)u << 32 | v);
      word[2 * (first[u] + j) + 1] = (int64_t)(v << 32 | (uint64_t)u);
    }
  }
  memset(first, 0, (size_t)(n + 1) * sizeof *first);
  free(p.members);
  p.members = NULL;
  HALO_TRY(load_edges_to_csr(&edges, g));

  const halo_node_synth synth = sbm_synth(&p);
  HALO_TRY(load_synth_node_data(g, &synth));
  load_set_source(g, spec);
  g->source_digest = halo_digest_bytes(spec, strlen(spec));
  *out = g;
  g = NULL;
done:
  load_edges_free(&edges);
  sbm_spec_free(&p);
  halo_graph_destroy(&g);
  return st;
}

/* Item range [lo, hi) of slice k of K over `total` items. */
static void slice_range(int64_t total, int64_t k, int64_t K, int64_t *lo, int64_t *hi) {
  *lo = (int64_t)((__int128)total * k / K);
  *hi = (int64_t)((__int128)total * (k + 1) / K);
}

static halo_status sbm_slice(const char *keys_text, int64_t k, int64_t K, halo_edge_slice *out) {
  halo_status st = HALO_OK;
  int64_t *first = NULL;
  sbm_spec p;
  HALO_TRY(sbm_setup(keys_text, 1.0 / (double)K, 1.0 / (double)K, &p));
  const sbm s = sbm_of(&p);
  int64_t lo, hi;
  slice_range(p.nodes, k, K, &lo, &hi);
  HALO_ALLOC(first, hi - lo + 1, "sbm draw offsets");
  for (int64_t u = lo; u < hi; u++) first[u - lo + 1] = first[u - lo] + sbm_draws(&s, u);
  out->count = 2 * first[hi - lo];
  HALO_ALLOC(out->pair, 2 * out->count + 1, "sbm slice edges");
  int64_t *pair = out->pair;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t u = lo; u < hi; u++)
    for (int64_t j = 0; j < first[u - lo + 1] - first[u - lo]; j++) {
      int64_t v = sbm_pick(&s, u, j), at = 4 * (first[u - lo] + j);
      pair[at] = u;
      pair[at + 1] = v;
      pair[at + 2] = v;
      pair[at + 3] = u;
    }
  out->nodes = p.nodes;
  out->has_node_data = 1;
  out->synth = sbm_synth(&p);
done:
  free(first);
  sbm_spec_free(&p);
  return st;
}

/* ---- R-MAT ----------------------------------------------------------------- */

typedef struct rmat {
  int scale;
  uint64_t key;
  uint32_t ta, tab, tabc; /* cumulative quadrant thresholds, scaled to 2^16 */
} rmat;

/* Edge e as the word src << 32 | dst: one 16-bit uniform per level picks the
 * quadrant, four levels per 64-bit draw. */
static inline int64_t rmat_edge(const rmat *r, int64_t e) {
  uint64_t src = 0, dst = 0, bits = 0;
  for (int level = 0; level < r->scale; level++) {
    if ((level & 3) == 0) bits = halo_rng_bits(r->key, (uint64_t)e, (uint64_t)level);
    uint32_t x = (uint32_t)(bits & 0xffff);
    bits >>= 16;
    src = src << 1 | (x >= r->tab);
    dst = dst << 1 | ((x >= r->ta && x < r->tab) || x >= r->tabc);
  }
  return (int64_t)(src << 32 | dst);
}

/* An rmat spec's keys, checked: nodes 2^scale, m edges. */
static halo_status rmat_setup(const char *keys_text, double edge_share, rmat *r, int64_t *n,
                              int64_t *m) {
  halo_status st = HALO_OK;
  int64_t scale = 0, factor = 16, seed = 1;
  double a = 0.57, b = 0.19, c = 0.19;
  spec_key keys[] = {
      KEY_I("scale", scale, 1, 32, 1), KEY_I("edge-factor", factor, 1, 1 << 20, 0),
      KEY_I("seed", seed, 0, 9e18, 0), KEY_R("a", a, 0, 1, 0),
      KEY_R("b", b, 0, 1, 0),          KEY_R("c", c, 0, 1, 0),
  };
  HALO_TRY(parse_keys("rmat", keys_text, keys, (int)(sizeof keys / sizeof keys[0])));
  if (a + b + c > 1) HALO_FAIL(HALO_ERR_RANGE, "rmat: a+b+c = %g exceeds 1", a + b + c);
  *n = (int64_t)1 << scale;
  if (factor > (INT64_MAX >> 1) / *n)
    HALO_FAIL(HALO_ERR_RANGE, "rmat: edge-factor=%lld is too large for scale=%lld",
              (long long)factor, (long long)scale);
  *m = factor * *n;
  HALO_TRY(spec_fits("rmat", keys_text, edge_share == 1 ? (double)*n : 0.0, edge_share * (double)*m,
                     0.0));
  *r = (rmat){
      .scale = (int)scale,
      .key = halo_rng_key((uint64_t)seed, HALO_RNG_GRAPH, 3, 0),
      .ta = (uint32_t)lround(a * 65536),
      .tab = (uint32_t)lround((a + b) * 65536),
      .tabc = (uint32_t)lround((a + b + c) * 65536),
  };
done:
  return st;
}

static halo_status rmat_generate(const char *spec, const char *keys_text, halo_graph **out) {
  halo_status st = HALO_OK;
  halo_graph *g = NULL;
  load_edges edges = {.narrow = 1};
  rmat r;
  int64_t n, m;
  HALO_TRY(rmat_setup(keys_text, 1, &r, &n, &m));
  HALO_TRY(halo_graph_create(n, 0, &g));
  HALO_TRY(load_edges_reserve(&edges, m));
  edges.count = m;
  int64_t *word = edges.pair;
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < m; e++) word[e] = rmat_edge(&r, e);
  HALO_TRY(load_edges_to_csr(&edges, g));
  load_set_source(g, spec);
  g->source_digest = halo_digest_bytes(spec, strlen(spec));
  *out = g;
  g = NULL;
done:
  load_edges_free(&edges);
  halo_graph_destroy(&g);
  return st;
}

static halo_status rmat_slice(const char *keys_text, int64_t k, int64_t K, halo_edge_slice *out) {
  halo_status st = HALO_OK;
  rmat r;
  int64_t n, m, lo, hi;
  HALO_TRY(rmat_setup(keys_text, 1.0 / (double)K, &r, &n, &m));
  slice_range(m, k, K, &lo, &hi);
  out->count = hi - lo;
  HALO_ALLOC(out->pair, 2 * out->count + 1, "rmat slice edges");
#pragma omp parallel for schedule(static)
  for (int64_t e = lo; e < hi; e++) {
    uint64_t word = (uint64_t)rmat_edge(&r, e);
    out->pair[2 * (e - lo)] = (int64_t)(word >> 32);
    out->pair[2 * (e - lo) + 1] = (int64_t)(word & 0xffffffffu);
  }
  out->nodes = n;
done:
  return st;
}

/* ---- Dispatch ------------------------------------------------------------- */

typedef struct generator {
  const char *name;
  halo_status (*generate)(const char *spec, const char *keys, halo_graph **out);
  halo_status (*slice)(const char *keys, int64_t slice, int64_t slices, halo_edge_slice *out);
} generator;

static const generator GENERATORS[] = {{"sbm", sbm_generate, sbm_slice},
                                       {"rmat", rmat_generate, rmat_slice}};
enum { GENERATOR_COUNT = sizeof GENERATORS / sizeof GENERATORS[0] };

int load_spec_is_spec(const char *input) {
  for (int k = 0; k < GENERATOR_COUNT; k++) {
    size_t len = strlen(GENERATORS[k].name);
    if (strncmp(input, GENERATORS[k].name, len) == 0 && input[len] == ':') return 1;
  }
  return 0;
}

/* The generator `spec` names; logs and fails when none does. */
static halo_status find_generator(const char *spec, const generator **out) {
  halo_status st = HALO_OK;
  const char *colon = strchr(spec, ':');
  size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
  for (int k = 0; k < GENERATOR_COUNT; k++)
    if (strlen(GENERATORS[k].name) == name_len && memcmp(spec, GENERATORS[k].name, name_len) == 0) {
      *out = &GENERATORS[k];
      goto done;
    }
  HALO_FAIL(HALO_ERR_ARG,
            "%.*s: unknown generator (known: sbm, rmat); a spec reads 'sbm:nodes=1000,...'",
            (int)name_len, spec);
done:
  return st;
}

static const char *spec_keys(const char *spec) {
  const char *colon = strchr(spec, ':');
  return colon ? colon + 1 : "";
}

halo_status load_spec(const char *spec, const halo_load_options *opt, halo_graph **out) {
  (void)opt;
  halo_status st = HALO_OK;
  const generator *gen = NULL;
  HALO_TRY(find_generator(spec, &gen));
  HALO_TRY(gen->generate(spec, spec_keys(spec), out));
done:
  return st;
}

halo_status halo_load_spec_slice(const char *spec, int64_t slice, int64_t slices,
                                 halo_edge_slice *out) {
  halo_status st = HALO_OK;
  const generator *gen = NULL;
  *out = (halo_edge_slice){0};
  if (slices < 1 || slice < 0 || slice >= slices)
    HALO_FAIL(HALO_ERR_ARG, "%s: slice %lld of %lld does not exist", spec, (long long)slice,
              (long long)slices);
  if (!load_spec_is_spec(spec))
    HALO_FAIL(HALO_ERR_UNSUPPORTED,
              "%s: the distributed partitioner reads synthetic specs (sbm:..., rmat:...) only "
              "so far",
              spec);
  HALO_TRY(find_generator(spec, &gen));
  HALO_TRY(gen->slice(spec_keys(spec), slice, slices, out));
  snprintf(out->source, sizeof out->source, "%s", spec);
  out->source_digest = halo_digest_bytes(spec, strlen(spec));
done:
  if (st != HALO_OK) halo_edge_slice_free(out);
  return st;
}

void halo_edge_slice_free(halo_edge_slice *s) {
  if (!s) return;
  free(s->pair);
  s->pair = NULL;
  s->count = 0;
}
