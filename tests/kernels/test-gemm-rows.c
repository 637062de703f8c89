/* Row invariance of the products Y = H·W and dH = G·Wᵀ.
 *
 * Each rank multiplies its own rows, so the same row of H meets calls of
 * different heights M, at different offsets, under different thread counts.
 * Training is bit-identical for any number of ranks and threads only if row
 * i of the product depends on row i of A and on B alone.  This test computes
 * each product whole with one thread, then again in consecutive blocks of
 * many heights (as ranks would split it) and with 1 and 2 threads, and
 * compares every row bitwise.
 *
 * cblas_sgemm (called directly: halo_cpu_gemm gives these narrow products
 * to halo_cpu_gemm_rows) is surveyed and its differences printed, but
 * the survey does not fail: OpenBLAS 0.3.21 (core Zen) differs in most
 * shapes, which is why halo_cpu_gemm_rows exists, and whether another
 * OpenBLAS build does is a fact to record, not a fault of halo.  Set
 * HALO_TEST_CBLAS_STRICT=1 to make it fail on any difference.
 * halo_cpu_gemm_rows must pass the same survey, and match bit for bit the
 * plain loop that its header gives as its definition. */
#include <cblas.h>
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "test-random.h"
#include "test-sanitized.h"

/* From OpenBLAS; declared here, as in train/train-run.c, so that the
 * test does not depend on which cblas.h comes first on the include path. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);

/* C (m × n) = A (m × k) · op(B), alpha 1 and beta 0, packed: the calls that
 * src/gnn-ops.c makes for H·W (trans_b 0, B is k × n) and G·Wᵀ (trans_b 1, B
 * is n × k). */
typedef void (*gemm_fn)(int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                        const float *b, float *c);

static void gemm_cblas(int trans_b, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                       float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n,
              (int)k, 1.0f, a, (int)k, b, trans_b ? (int)k : (int)n, 0.0f, c, (int)n);
}

static void gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                      float *c) {
  halo_cpu_gemm_rows(trans_b, m, n, k, a, k, b, trans_b ? k : n, c, n);
}

static void set_threads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

/* Heights of the blocks a product is split into.  Each split starts with one
 * block of `lead` rows, so that the same height also meets rows at offsets
 * that are not multiples of it (or of any kernel's unrolling). */
static const int64_t HEIGHTS[] = {1, 2, 3, 7, 16, 17, 100, 1000, 2708};
static const int64_t LEADS[] = {0, 5}; /* survey_shape prints a lead as +5 */
static const int THREADS[] = {1, 2};
/* Heights under 16 split only the first SMALL_SPAN rows. */
enum { SMALL_SPAN = 300 };

/* What a survey found: rows compared and rows that differ in any bit, and
 * the first difference. */
typedef struct survey {
  int64_t rows, bad_rows, configs, bad_configs;
  char first[512];
} survey;

/* Counts the rows of `got` (rows [r0, r0 + m)) that differ from `ref`, and
 * describes the first differing element. */
static int64_t compare_rows(const float *ref, const float *got, int64_t r0, int64_t m, int64_t n,
                            char *what, size_t what_size) {
  int64_t bad = 0;
  for (int64_t i = 0; i < m; i++) {
    const float *want = ref + (r0 + i) * n, *have = got + i * n;
    if (memcmp(want, have, (size_t)n * sizeof *want) == 0) continue;
    if (bad++ == 0 && what[0] == '\0') {
      int64_t j = 0;
      while (memcmp(&want[j], &have[j], sizeof *want) == 0) j++;
      snprintf(what, what_size, "row %lld col %lld: whole %.9g (%a), block %.9g (%a)",
               (long long)(r0 + i), (long long)j, want[j], want[j], have[j], have[j]);
    }
  }
  return bad;
}

/* Splits the first `span` rows into [0, lead) and then blocks of `height`,
 * and compares every block's product with the rows of `ref`. */
static int64_t split_and_compare(gemm_fn gemm, int trans_b, int64_t span, int64_t n, int64_t k,
                                 const float *a, const float *b, const float *ref, int64_t lead,
                                 int64_t height, float *c, char *what, size_t what_size) {
  int64_t bad = 0;
  for (int64_t r0 = 0; r0 < span;) {
    int64_t m = r0 == 0 && lead > 0 ? lead : height;
    if (m > span - r0) m = span - r0;
    for (int64_t i = 0; i < m * n; i++) c[i] = -1.0f;
    gemm(trans_b, m, n, k, a + r0 * k, b, c);
    bad += compare_rows(ref, c, r0, m, n, what, what_size);
    r0 += m;
  }
  return bad;
}

/* One shape: the whole product with one thread is the reference; every
 * split under every thread count must reproduce it bitwise.  Prints one
 * line for a shape with differences: the splits that differ, per thread
 * count, as HEIGHT or HEIGHT+LEAD, and the first difference. */
static void survey_shape(gemm_fn gemm, const char *name, uint64_t seed, int id, int trans_b,
                         int64_t m_full, int64_t n, int64_t k, survey *s) {
  const uint64_t key = test_key(seed, (uint64_t)id);
  float *a = malloc((size_t)(m_full * k) * sizeof *a);
  float *b = malloc((size_t)(k * n) * sizeof *b);
  float *ref = malloc((size_t)(m_full * n) * sizeof *ref);
  float *c = malloc((size_t)(m_full * n) * sizeof *c);
  cr_assert(a && b && ref && c);
  test_fill(a, m_full * k, key ^ 1, -1.0f, 1.0f);
  test_fill(b, k * n, key ^ 2, -1.0f, 1.0f);
  set_threads(1);
  gemm(trans_b, m_full, n, k, a, b, ref);

  char line[1024] = "", first[384] = "";
  size_t used = 0;
  int64_t shape_bad = 0, shape_rows = 0;
  for (size_t t = 0; t < sizeof THREADS / sizeof THREADS[0]; t++) {
    set_threads(THREADS[t]);
    int listed = 0;
    for (size_t h = 0; h < sizeof HEIGHTS / sizeof HEIGHTS[0]; h++) {
      for (size_t l = 0; l < sizeof LEADS / sizeof LEADS[0]; l++) {
        if (HEIGHTS[h] > m_full || (LEADS[l] > 0 && HEIGHTS[h] >= m_full)) continue;
        /* Blocks of a few rows test the code path as well on fewer rows,
         * and one call per row is slow. */
        const int64_t span = HEIGHTS[h] < 16 && m_full > SMALL_SPAN ? SMALL_SPAN : m_full;
        char what[256] = "";
        const int64_t bad = split_and_compare(gemm, trans_b, span, n, k, a, b, ref, LEADS[l],
                                              HEIGHTS[h], c, what, sizeof what);
        s->configs++;
        s->rows += span;
        shape_rows += span;
        if (bad == 0) continue;
        s->bad_configs++;
        s->bad_rows += bad;
        shape_bad += bad;
        if (first[0] == '\0')
          snprintf(first, sizeof first, "%d thread(s), blocks of %lld after %lld: %s", THREADS[t],
                   (long long)HEIGHTS[h], (long long)LEADS[l], what);
        if (used < sizeof line && listed++ == 0)
          used += (size_t)snprintf(line + used, sizeof line - used,
                                   "%s%d thread(s):", used ? "; " : "", THREADS[t]);
        if (used < sizeof line)
          used += (size_t)snprintf(line + used, sizeof line - used, " %lld%s",
                                   (long long)HEIGHTS[h], LEADS[l] ? "+5" : "");
      }
    }
  }
  if (shape_bad > 0) {
    fprintf(stderr,
            "%s: M %lld K %lld N %lld trans_b %d: %lld of %lld rows differ; splits %s; first %s\n",
            name, (long long)m_full, (long long)k, (long long)n, trans_b, (long long)shape_bad,
            (long long)shape_rows, line, first);
    if (s->first[0] == '\0')
      snprintf(s->first, sizeof s->first, "M %lld K %lld N %lld trans_b %d, %s", (long long)m_full,
               (long long)k, (long long)n, trans_b, first);
  }
  set_threads(1);
  free(a);
  free(b);
  free(ref);
  free(c);
}

/* Every K and N of halo's layers, both products, at the height of Cora
 * (2708 rows), plus one taller product; with `few`, both products of the
 * FEW_KN shapes alone at 2708 rows. */
static const int64_t KS[] = {1433, 500, 128, 64, 16, 7};
static const int64_t NS[] = {16, 64, 7, 8, 128};
/* Between them these reach every path of halo_cpu_gemm_rows: k over more
 * than one cache block (1433 at 16 columns, 500 at 128), n over two panels
 * (128), one full panel (64), the narrow 12-row tile (n 7), two threads and
 * one (m·n·k under 2^21).  The shapes they leave out are the same paths
 * again at other sizes. */
static const int64_t FEW_KN[][2] = {{1433, 16}, {500, 128}, {64, 64}, {16, 7}};

static survey survey_all(gemm_fn gemm, const char *name, uint64_t seed, int few) {
  survey s = {0};
  int id = 0;
  for (int trans_b = 0; trans_b < 2; trans_b++)
    for (size_t ki = 0; ki < sizeof KS / sizeof KS[0]; ki++)
      for (size_t ni = 0; ni < sizeof NS / sizeof NS[0]; ni++) {
        int wanted = !few;
        for (size_t f = 0; f < sizeof FEW_KN / sizeof FEW_KN[0]; f++)
          wanted |= FEW_KN[f][0] == KS[ki] && FEW_KN[f][1] == NS[ni];
        /* The id counts every shape, so that a shape's inputs are the same
         * with and without `few`. */
        const int shape = id++;
        if (wanted) survey_shape(gemm, name, seed, shape, trans_b, 2708, NS[ni], KS[ki], &s);
      }
  for (int trans_b = 0; trans_b < 2 && !few; trans_b++)
    survey_shape(gemm, name, seed, id++, trans_b, 20000, 64, 128, &s);
  fprintf(stderr, "%s: %lld of %lld splits differ (%lld of %lld rows)%s%s\n", name,
          (long long)s.bad_configs, (long long)s.configs, (long long)s.bad_rows, (long long)s.rows,
          s.bad_configs ? "; first: " : "", s.first);
  return s;
}

Test(gemm_rows, cblas_survey, .timeout = 600) {
#ifdef __SANITIZE_ADDRESS__
  /* A record of OpenBLAS, not a check of halo (it fails only with
   * HALO_TEST_CBLAS_STRICT): the build without sanitizers prints it. */
  cr_skip_test("the cblas survey runs in the build without sanitizers");
#endif
  const uint64_t seed = test_seed("gemm_rows.cblas_survey");
  fprintf(stderr, "OpenBLAS core %s, config %s\n", openblas_get_corename(), openblas_get_config());
  const survey s = survey_all(gemm_cblas, "cblas_sgemm", seed, 0);
  fprintf(stderr, "cblas_sgemm is %srow-invariant on the shapes surveyed\n",
          s.bad_configs ? "NOT " : "");
  const char *strict = getenv("HALO_TEST_CBLAS_STRICT");
  if (strict && strcmp(strict, "0") != 0)
    cr_expect_eq(s.bad_configs, 0, "cblas_sgemm is not row-invariant: %s", s.first);
}

Test(gemm_rows, halo_kernel_survey, .timeout = 600) {
  const uint64_t seed = test_seed("gemm_rows.halo_kernel_survey");
  if (TEST_SANITIZED)
    test_sanitized_note("gemm_rows.halo_kernel_survey",
                        "4 of the 30 (K, N) shapes at 2708 rows (K 1433 N 16, K 500 N 128, "
                        "K 64 N 64, K 16 N 7), both products, every split and thread count; "
                        "not the other 26 shapes nor the 20000-row product");
  const survey s = survey_all(gemm_rows, "halo_cpu_gemm_rows", seed, TEST_SANITIZED);
  cr_assert_eq(s.bad_configs, 0, "halo_cpu_gemm_rows is not row-invariant: %s", s.first);
}

/* The definition in halo-kernels.h, one element at a time, from `acc`
 * (0, or C's value for halo_cpu_gemm_rows_acc).  This file is built with
 * -ffp-contract=off, so the product is rounded before the sum. */
static float reference_element(int trans_b, int64_t k, const float *a_row, const float *b,
                               int64_t ldb, int64_t j, float acc) {
  for (int64_t p = 0; p < k; p++) {
    const float prod = a_row[p] * (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
    acc = acc + prod;
  }
  return acc;
}

/* Every width from 1 to 40 (each edge tile), heights around the register
 * tile, k across the cache blocks, padded leading dimensions, with 1 and 2
 * threads, overwriting C and adding to it (halo_cpu_gemm_rows_acc): C
 * equals the definition bit for bit and the padding of C is not touched. */
Test(gemm_rows, matches_definition_bitwise, .timeout = 600) {
  const uint64_t seed = test_seed("gemm_rows.matches_definition_bitwise");
  static const int64_t MS[] = {1, 5, 6, 7, 13, 50};
  static const int64_t KS[] = {0, 1, 3, 64, 257, 2100};
  int id = 0;
  for (int t = 0; t < 4; t++) {
    const int add = t >= 2; /* halo_cpu_gemm_rows_acc */
    set_threads(THREADS[t % 2]);
    for (int trans_b = 0; trans_b < 2; trans_b++)
      for (size_t mi = 0; mi < sizeof MS / sizeof MS[0]; mi++)
        for (size_t ki = 0; ki < sizeof KS / sizeof KS[0]; ki++)
          for (int64_t n = 1; n <= 40; n += (n < 20 ? 1 : 7)) {
            const int64_t m = MS[mi], k = KS[ki];
            const int64_t lda = k + 3, ldb = (trans_b ? k : n) + 2, ldc = n + 5;
            const int64_t b_rows = trans_b ? n : k;
            const uint64_t key = test_key(seed, (uint64_t)id++);
            float *a = malloc((size_t)(m * lda + 1) * sizeof *a);
            float *b = malloc((size_t)(b_rows * ldb + 1) * sizeof *b);
            float *c = malloc((size_t)(m * ldc) * sizeof *c);
            float *c0 = malloc((size_t)(m * ldc) * sizeof *c0);
            cr_assert(a && b && c && c0);
            test_fill(a, m * lda, key ^ 1, -1.0f, 1.0f);
            test_fill(b, b_rows * ldb, key ^ 2, -1.0f, 1.0f);
            test_fill(c0, m * ldc, key ^ 3, -1.0f, 1.0f);
            memcpy(c, c0, (size_t)(m * ldc) * sizeof *c);
            if (add) {
              halo_cpu_gemm_rows_acc(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
            } else {
              for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) c[i * ldc + j] = NAN;
              halo_cpu_gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
            }
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < ldc; j++) {
                const float from = add ? c0[i * ldc + j] : 0.0f;
                const float want = j < n
                                       ? reference_element(trans_b, k, a + i * lda, b, ldb, j, from)
                                       : c0[i * ldc + j];
                cr_assert(memcmp(&c[i * ldc + j], &want, sizeof want) == 0,
                          "%d thread(s), %s, trans_b %d, m %lld n %lld k %lld: C[%lld, %lld] = "
                          "%a, want %a%s",
                          THREADS[t % 2], add ? "C +=" : "C =", trans_b, (long long)m, (long long)n,
                          (long long)k, (long long)i, (long long)j, c[i * ldc + j], want,
                          j < n ? "" : " (padding changed)");
              }
            free(a);
            free(b);
            free(c);
            free(c0);
          }
  }
  set_threads(1);
}
