/* GAT's CPU kernels (halo_cpu_gat_*, core/halo-gat.h) against independent
 * references:
 *  - halo_gat_exp against double exp: within 2 ulps on [-87, 88], 0 below,
 *    exactly 1 at 0, NaN for NaN;
 *  - halo_gat_keep_pairs against halo_dropout_keep, element by element;
 *  - the attention forward and backward on random symmetric graphs, with
 *    and without attention dropout, heads concatenated and averaged,
 *    against the layer's math in double, one edge at a time (the softmax
 *    and its backward as docs/models.md writes them);
 *  - the kernels' constant shapes (one head; 8 columns a head) against
 *    the general row functions, bit for bit.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "halo-gat.h"
#include "halo-kernels.h"
#include "test-random.h"

/* |got − want| in units of the float ulp at want (want a normal float). */
static double ulps(float got, double want) {
  int e = 0;
  frexp(want, &e); /* want = m · 2^e, m in [0.5, 1) */
  return fabs((double)got - want) / ldexp(1.0, e - 24);
}

Test(gat, exp_within_two_ulps) {
  double worst = 0.0;
  float at = 0.0f;
  /* Every 2^-14 over [-87, 88], then 2^20 random points. */
  for (float x = -87.0f; x <= 88.0f; x += 1.0f / 16384.0f) {
    const double u = ulps(halo_gat_exp(x), exp((double)x));
    if (u > worst) {
      worst = u;
      at = x;
    }
  }
  const uint64_t key = test_key(test_seed("gat.exp"), 1);
  for (uint64_t i = 0; i < (1u << 20); i++) {
    const float x = -87.0f + 175.0f * halo_rng_uniform(key, i, 0);
    const double u = ulps(halo_gat_exp(x), exp((double)x));
    if (u > worst) {
      worst = u;
      at = x;
    }
  }
  fprintf(stderr, "gat.exp: worst %.3f ulps at x = %.9g\n", worst, (double)at);
  cr_expect_leq(worst, 2.0, "halo_gat_exp(%.9g) is %.3f ulps off", (double)at, worst);
  cr_expect_eq(halo_gat_exp(0.0f), 1.0f);
  cr_expect_eq(halo_gat_exp(-87.5f), 0.0f);
  cr_expect_eq(halo_gat_exp(-INFINITY), 0.0f);
  cr_expect(isnan(halo_gat_exp(NAN)));
}

Test(gat, keep_pairs_draw_as_halo_dropout_keep) {
  const uint64_t seed = test_seed("gat.keep");
  const float rates[] = {0.0f, 1e-8f, 0.1f, 0.5f, 0.6f, 0.999f, 1.0f};
  const int32_t heads[] = {1, 3, 8, 17};
  for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++)
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
      const halo_gat_layer g = {
          .heads = heads[h], .f = 1, .key = test_key(seed, 2 + r), .p = rates[r]};
      const int32_t K = g.heads, per = HALO_GAT_BLOCK / K, n = per * K;
      const float scale = halo_dropout_scale(g.p);
      uint64_t row_key[HALO_GAT_BLOCK], col[HALO_GAT_BLOCK], gi[HALO_GAT_BLOCK];
      float keep[HALO_GAT_BLOCK];
      for (uint64_t block = 0; block < 500; block++) {
        /* `per` edges of K heads, each from a row of its own. */
        for (int32_t q = 0; q < n; q++) {
          const uint64_t e = block * (uint64_t)per + (uint64_t)(q / K);
          gi[q] = halo_rng_bits(g.key, e, 7) >> 20;
          row_key[q] = halo_rng_mix(g.key ^ gi[q]);
          col[q] = (halo_rng_bits(g.key, e, 8) >> 20) * (uint64_t)K + (uint64_t)(q % K);
        }
        halo_gat_keep_pairs(&g, scale, halo_dropout_threshold(g.p), row_key, col, n, keep);
        for (int32_t q = 0; q < n; q++) {
          const float want =
              g.p <= 0.0f ? 1.0f : (halo_dropout_keep(g.key, gi[q], col[q], g.p) ? scale : 0.0f);
          cr_assert_eq(keep[q], want, "p %g, K %d, element (%llu, %llu): %g, want %g", (double)g.p,
                       K, (unsigned long long)gi[q], (unsigned long long)col[q], (double)keep[q],
                       (double)want);
        }
      }
    }
}

/* A random symmetric A + I over n rows, each row's columns in ascending
 * global id (gid: a random permutation), as the layer gives the kernels. */
static halo_csr sym_graph(uint64_t key, int64_t n, int64_t max_deg, const int64_t *gid) {
  char *adj = calloc((size_t)(n * n), 1);
  for (int64_t i = 0; i < n; i++) {
    adj[i * n + i] = 1;
    for (int64_t k = test_below(key, (uint64_t)i, max_deg); k > 0; k--) {
      const int64_t j = test_below(key, (uint64_t)(n + i * max_deg + k), n);
      adj[i * n + j] = adj[j * n + i] = 1;
    }
  }
  halo_csr a = {.rows = n, .cols = n};
  a.indptr = calloc((size_t)n + 1, sizeof *a.indptr);
  int64_t nnz = 0;
  for (int64_t i = 0; i < n * n; i++) nnz += adj[i];
  a.indices = calloc((size_t)nnz, sizeof *a.indices);
  int64_t *by_gid = calloc((size_t)n, sizeof *by_gid); /* local row of each global id */
  for (int64_t i = 0; i < n; i++) by_gid[gid[i]] = i;
  for (int64_t i = 0; i < n; i++) {
    a.indptr[i + 1] = a.indptr[i];
    for (int64_t q = 0; q < n; q++)
      if (adj[i * n + by_gid[q]]) a.indices[a.indptr[i + 1]++] = (int32_t)by_gid[q];
  }
  a.nnz = nnz;
  free(by_gid);
  free(adj);
  return a;
}

/* max |got − want| over max |want|. */
static double rel_err(const float *got, const double *want, int64_t n) {
  double err = 0.0, norm = 0.0;
  for (int64_t i = 0; i < n; i++) {
    err = fmax(err, fabs((double)got[i] - want[i]));
    norm = fmax(norm, fabs(want[i]));
  }
  return norm > 0.0 ? err / norm : err;
}

static void attention_case(uint64_t seed, int64_t n, int32_t heads, int32_t f, int concat,
                           float p) {
  const int32_t K = heads, F = f, kf = K * F;
  const halo_gat_layer g = {.heads = K,
                            .f = F,
                            .concat = concat,
                            .slope = 0.2f,
                            .key = halo_rng_key(seed, HALO_RNG_ATTENTION, 2, 1),
                            .p = p};
  const int32_t d_out = halo_gat_out_cols(&g), ld = halo_gat_node_cols(&g);
  int64_t *gid = calloc((size_t)n, sizeof *gid);
  for (int64_t i = 0; i < n; i++) gid[i] = i;
  const uint64_t key = test_key(seed, 10);
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    const int64_t j = test_below(key, (uint64_t)(5000 + i), i + 1), t = gid[i];
    gid[i] = gid[j];
    gid[j] = t;
  }
  const halo_csr a = sym_graph(test_key(seed, 11), n, 12, gid);
  float *t = calloc((size_t)(n * kf), 4), *as = calloc((size_t)kf, 4), *ad = calloc((size_t)kf, 4);
  float *dz = calloc((size_t)(n * d_out), 4), *s = calloc((size_t)(n * 2 * K), 4);
  float *out = calloc((size_t)(n * kf), 4), *z = calloc((size_t)(n * d_out), 4);
  float *node = calloc((size_t)(n * ld), 4), *dt = calloc((size_t)(n * kf), 4);
  float *att = calloc((size_t)(2 * n * kf), 4);
  test_fill(t, n * kf, test_key(seed, 12), -1.0f, 1.0f);
  test_fill(as, kf, test_key(seed, 13), -1.0f, 1.0f);
  test_fill(ad, kf, test_key(seed, 14), -1.0f, 1.0f);
  test_fill(dz, n * d_out, test_key(seed, 15), -1.0f, 1.0f);

  halo_cpu_gat_scores(&g, t, n, as, ad, s);
  halo_cpu_gat_attend(&g, &a, gid, t, s, out, z, node);
  halo_cpu_gat_node_terms(&g, dz, out, n, node);
  halo_cpu_gat_attend_backward(&g, &a, gid, t, s, node, as, ad, dt, att);

  /* The reference, in double: scores, α and its dropout per edge, the
   * outputs, then the softmax's backward edge by edge. */
  double *src = calloc((size_t)(n * K), 8), *dst = calloc((size_t)(n * K), 8);
  double *rout = calloc((size_t)(n * kf), 8), *rz = calloc((size_t)(n * d_out), 8);
  double *rdt = calloc((size_t)(n * kf), 8), *ratt = calloc((size_t)(2 * n * kf), 8);
  double *dsrc = calloc((size_t)(n * K), 8), *ddst = calloc((size_t)(n * K), 8);
  double *alpha = calloc((size_t)a.nnz, 8), *keep = calloc((size_t)a.nnz, 8);
  const double scale = halo_dropout_scale(p);
  for (int64_t r = 0; r < n; r++)
    for (int32_t k = 0; k < K; k++)
      for (int32_t c = k * F; c < (k + 1) * F; c++) {
        src[r * K + k] += (double)t[r * kf + c] * as[c];
        dst[r * K + k] += (double)t[r * kf + c] * ad[c];
      }
  for (int32_t k = 0; k < K; k++) {
    for (int64_t i = 0; i < n; i++) {
      double m = -INFINITY, l = 0.0, c = 0.0;
      for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; e++) {
        const double pre = src[a.indices[e] * K + k] + dst[i * K + k];
        alpha[e] = pre > 0.0 ? pre : 0.2 * pre; /* the logit, for now */
        m = fmax(m, alpha[e]);
      }
      for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; e++) l += exp(alpha[e] - m);
      for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; e++) {
        const int64_t j = a.indices[e];
        alpha[e] = exp(alpha[e] - m) / l;
        keep[e] = p <= 0.0f ? 1.0
                            : (halo_dropout_keep(g.key, (uint64_t)gid[i],
                                                 (uint64_t)gid[j] * (uint64_t)K + (uint64_t)k, p)
                                   ? scale
                                   : 0.0);
        for (int32_t q = 0; q < F; q++)
          rout[i * kf + k * F + q] += alpha[e] * keep[e] * t[j * kf + k * F + q];
      }
      /* dout_i = dZ_i's block, or dZ_i / K; c_i = Σ_j α keep dout_i·T_j. */
      double dout[4096];
      cr_assert_leq(F, 4096);
      for (int32_t q = 0; q < F; q++)
        dout[q] = concat ? dz[i * d_out + k * F + q] : dz[i * d_out + q] / (double)K;
      for (int32_t q = 0; q < F; q++) c += dout[q] * rout[i * kf + k * F + q];
      for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; e++) {
        const int64_t j = a.indices[e];
        double dot = 0.0;
        for (int32_t q = 0; q < F; q++) {
          dot += dout[q] * t[j * kf + k * F + q];
          rdt[j * kf + k * F + q] += alpha[e] * keep[e] * dout[q];
        }
        const double pre = src[j * K + k] + dst[i * K + k];
        const double de = alpha[e] * (keep[e] * dot - c), dpre = pre > 0.0 ? de : 0.2 * de;
        dsrc[j * K + k] += dpre;
        ddst[i * K + k] += dpre;
      }
    }
  }
  for (int64_t i = 0; i < n; i++)
    for (int32_t q = 0; q < d_out; q++) {
      double sum = 0.0;
      for (int32_t k = 0; k < (concat ? 1 : K); k++) sum += rout[i * kf + (concat ? q : k * F + q)];
      rz[i * d_out + q] = concat ? sum : sum / K;
    }
  for (int64_t j = 0; j < n; j++)
    for (int32_t c = 0; c < kf; c++) {
      const int32_t k = c / F;
      rdt[j * kf + c] += dsrc[j * K + k] * as[c] + ddst[j * K + k] * ad[c];
      ratt[j * kf + c] = dsrc[j * K + k] * t[j * kf + c];
      ratt[(n + j) * kf + c] = ddst[j * K + k] * t[j * kf + c];
    }
  const double eo = rel_err(out, rout, n * kf), ez = rel_err(z, rz, n * d_out),
               ed = rel_err(dt, rdt, n * kf), ea = rel_err(att, ratt, 2 * n * kf);
  fprintf(stderr,
          "gat.attention n %lld, %lld edges, K %d F %d %s p %g: rel err out %.2e, Z %.2e, dT "
          "%.2e, attention terms %.2e\n",
          (long long)n, (long long)a.nnz, K, F, concat ? "concat" : "mean", (double)p, eo, ez, ed,
          ea);
  const double tol = 1e-5;
  cr_expect_leq(eo, tol, "out: %g", eo);
  cr_expect_leq(ez, tol, "Z: %g", ez);
  cr_expect_leq(ed, tol, "dT: %g", ed);
  cr_expect_leq(ea, tol, "attention terms: %g", ea);

  void *all[] = {gid, a.indptr, a.indices, t,    as, ad,  dz,   s,    out,  z,     node, dt,
                 att, src,      dst,       rout, rz, rdt, ratt, dsrc, ddst, alpha, keep};
  for (size_t q = 0; q < sizeof all / sizeof all[0]; q++) free(all[q]);
}

Test(gat, attention_matches_double_reference) {
  const uint64_t seed = test_seed("gat.attention");
  attention_case(seed, 300, 4, 3, 1, 0.5f);       /* hidden: concatenated, attention dropout */
  attention_case(seed + 1, 300, 3, 5, 0, 0.0f);   /* output: averaged, no dropout */
  attention_case(seed + 2, 200, 8, 8, 1, 0.6f);   /* the paper's hidden layer */
  attention_case(seed + 3, 500, 1, 7, 0, 0.6f);   /* the paper's output layer */
  attention_case(seed + 4, 150, 17, 16, 1, 0.3f); /* heads and widths past a vector */
}

/* The kernels run the common shapes (one head; 8 columns a head) through
 * the row functions with K or F as constants (kernels/cpu-gat.c): the same
 * arithmetic, so the same bits as the rows with both taken from the layer,
 * called here one by one (this file is built without contraction). */
static void shape_case(uint64_t seed, int64_t n, int32_t heads, int32_t f, int concat, float p) {
  const int32_t K = heads, F = f, kf = K * F;
  const halo_gat_layer g = {.heads = K, .f = F, .concat = concat, .slope = 0.2f,
                            .key = halo_rng_key(seed, HALO_RNG_ATTENTION, 1, 1), .p = p};
  const int32_t d_out = halo_gat_out_cols(&g), ld = halo_gat_node_cols(&g);
  int64_t *gid = calloc((size_t)n, sizeof *gid);
  for (int64_t i = 0; i < n; i++) gid[i] = n - 1 - i; /* a permutation, not the identity */
  const halo_csr a = sym_graph(test_key(seed, 21), n, 40, gid);
  const halo_gat_rows rows = {.indptr = a.indptr, .indices = a.indices, .global_id = gid};
  float *t = calloc((size_t)(n * kf), 4), *as = calloc((size_t)kf, 4), *ad = calloc((size_t)kf, 4);
  float *dz = calloc((size_t)(n * d_out), 4), *s = calloc((size_t)(n * 2 * K), 4);
  test_fill(t, n * kf, test_key(seed, 22), -2.0f, 2.0f);
  test_fill(as, kf, test_key(seed, 23), -1.0f, 1.0f);
  test_fill(ad, kf, test_key(seed, 24), -1.0f, 1.0f);
  test_fill(dz, n * d_out, test_key(seed, 25), -1.0f, 1.0f);
  halo_cpu_gat_scores(&g, t, n, as, ad, s);
  float *out[2], *z[2], *node[2], *dt[2], *att[2];
  for (int v = 0; v < 2; v++) {
    out[v] = calloc((size_t)(n * kf), 4);
    z[v] = calloc((size_t)(n * d_out), 4);
    node[v] = calloc((size_t)(n * ld), 4);
    dt[v] = calloc((size_t)(n * kf), 4);
    att[v] = calloc((size_t)(2 * n * kf), 4);
  }
  halo_gat_rows r = rows;
  r.t = t;
  r.s = s;
  halo_cpu_gat_attend(&g, &a, gid, t, s, out[0], z[0], node[0]);
  halo_cpu_gat_node_terms(&g, dz, out[0], n, node[0]);
  halo_cpu_gat_attend_backward(&g, &a, gid, t, s, node[0], as, ad, dt[0], att[0]);
  for (int64_t i = 0; i < n; i++)
    halo_gat_attend_row(&g, g.heads, g.f, &r, i, out[1], z[1], node[1]);
  for (int64_t i = 0; i < n; i++) halo_gat_node_terms_row(&g, dz, out[1], i, node[1]);
  for (int64_t j = 0; j < n; j++)
    halo_gat_backward_row(&g, g.heads, g.f, &r, node[1], as, ad, n, j, dt[1], att[1]);
  fprintf(stderr, "gat.shapes K %d F %d %s p %g, %lld edges: the kernels against the rows\n", K, F,
          concat ? "concat" : "mean", (double)p, (long long)a.nnz);
  cr_expect(!memcmp(out[0], out[1], (size_t)(n * kf) * 4), "out differs (K %d F %d)", K, F);
  cr_expect(!memcmp(z[0], z[1], (size_t)(n * d_out) * 4), "Z differs (K %d F %d)", K, F);
  cr_expect(!memcmp(node[0], node[1], (size_t)(n * ld) * 4), "node terms differ (K %d F %d)", K, F);
  cr_expect(!memcmp(dt[0], dt[1], (size_t)(n * kf) * 4), "dT differs (K %d F %d)", K, F);
  cr_expect(!memcmp(att[0], att[1], (size_t)(2 * n * kf) * 4), "attention terms differ (K %d F %d)",
            K, F);
  for (int v = 0; v < 2; v++) {
    void *mine[] = {out[v], z[v], node[v], dt[v], att[v]};
    for (size_t q = 0; q < sizeof mine / sizeof mine[0]; q++) free(mine[q]);
  }
  void *all[] = {gid, a.indptr, a.indices, t, as, ad, dz, s};
  for (size_t q = 0; q < sizeof all / sizeof all[0]; q++) free(all[q]);
}

Test(gat, common_shapes_same_bits_as_the_rows) {
  const uint64_t seed = test_seed("gat.shapes");
  shape_case(seed, 400, 1, 7, 0, 0.6f);     /* one head: the output layer, averaged */
  shape_case(seed + 1, 300, 1, 40, 1, 0.0f); /* one head, wide, concatenated, evaluation */
  shape_case(seed + 2, 300, 8, 8, 1, 0.6f);  /* 8 columns a head: the hidden layer */
  shape_case(seed + 3, 200, 3, 8, 0, 0.5f);  /* 8 columns, averaged */
  shape_case(seed + 4, 200, 4, 5, 1, 0.5f);  /* the general rows */
}
