/* The exact sums of kernels/halo-exact.h: the very integers of a term-by-term
 * reference (each term rounded as the header says, summed in __int128),
 * close to a long-double sum, and bitwise the same whatever the order of
 * the rows, their split among "ranks" (limbs summed as MPI_SUM would), the
 * thread count and the vector width. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "halo-exact.h"
#include "halo-kernels.h"
#include "test-random.h"

typedef struct sums {
  int64_t *limbs;
  float *out;
} sums;

static void *work_for(int64_t ac, int64_t bc, int threads) {
  void *w = aligned_alloc(16, (halo_cpu_exact_tn_work(ac, bc, threads) + 15) / 16 * 16);
  cr_assert(w);
  return w;
}

/* The same with room for B's column sums beside the product. */
static void *ones_work_for(int64_t ac, int64_t bc, int threads) {
  void *w = aligned_alloc(16, (halo_cpu_exact_tn_ones_work(ac, bc, threads) + 15) / 16 * 16);
  cr_assert(w);
  return w;
}

/* Aᵀ·B of rows [lo, hi) into limbs (added to acc, as MPI_SUM would). */
static void add_rows(const float *a, const float *b, int64_t lo, int64_t hi, int64_t ac, int64_t bc,
                     int e, int threads, int64_t *acc) {
  int64_t *part = calloc((size_t)(ac * bc * HALO_EXACT_LIMBS), sizeof *part);
  void *w = work_for(ac, bc, threads);
  cr_assert(part);
  halo_cpu_exact_tn(hi - lo, ac, bc, a ? a + lo * ac : NULL, ac, b + lo * bc, bc, e, threads, w,
                    part);
  for (int64_t k = 0; k < ac * bc * HALO_EXACT_LIMBS; k++) acc[k] += part[k];
  free(part);
  free(w);
}

typedef __int128 i128;

/* The sum that a cell's limbs hold. */
static i128 limbs_value(const int64_t *l) {
  const i128 limb = (i128)1 << HALO_EXACT_LIMB_BITS; /* multiplied: l[2] may be negative */
  return ((i128)l[2] * limb + l[1]) * limb + l[0];
}

/* The sums the kernels must give, computed term by term: a·b·2^-e is exact
 * in double, and is rounded down or up as its row draws (the dense sums),
 * or to the nearest, ties to even (nearest: the CSR sums).  A NULL: ones. */
static i128 *reference(const float *a, const float *b, int64_t n, int64_t ac, int64_t bc, int e,
                       int nearest) {
  i128 *ref = calloc((size_t)(ac * bc), sizeof *ref);
  cr_assert(ref);
  const double scale = ldexp(1.0, -e);
  for (int64_t i = 0; i < n; i++) {
    const int up = halo_exact_row_up(b + i * bc, bc);
    for (int64_t p = 0; p < ac; p++)
      for (int64_t q = 0; q < bc; q++) {
        const double t = (a ? (double)a[i * ac + p] : 1.0) * scale * (double)b[i * bc + q];
        ref[p * bc + q] += (i128)(nearest ? nearbyint(t) : up ? ceil(t) : floor(t));
      }
  }
  return ref;
}

static void expect_limbs(const int64_t *limbs, const i128 *ref, int64_t count, const char *what) {
  int64_t bad = 0;
  for (int64_t c = 0; c < count; c++)
    if (limbs_value(limbs + c * HALO_EXACT_LIMBS) != ref[c] && bad++ < 3)
      cr_expect_fail("%s: sum %lld is %.17g units, not %.17g", what, (long long)c,
                     (double)limbs_value(limbs + c * HALO_EXACT_LIMBS), (double)ref[c]);
  cr_expect_eq(bad, 0, "%s: %lld of %lld sums differ", what, (long long)bad, (long long)count);
}

/* halo_cpu_exact_csr at each vector width the CPU has (the portable loop,
 * AVX2, AVX-512) into `sparse`: the reference's integers at every one; and
 * halo_cpu_exact_csr_perm of the values stored in a shuffled order (a
 * fixed permutation of the non-zeros, read back through it): the same. */
static void expect_csr_every_width(const int64_t *indptr, const int32_t *indices,
                                   const float *values, int64_t f, const float *b, int64_t bc,
                                   int e, int threads, void *w, int64_t *sparse, const i128 *ref) {
  static const char *const what[] = {"CSR, portable", "CSR, AVX2", "CSR, AVX-512"};
  static const char *const what_perm[] = {"CSR through a permutation, portable",
                                          "CSR through a permutation, AVX2",
                                          "CSR through a permutation, AVX-512"};
  const int64_t nnz = indptr[f];
  int32_t *perm = malloc((size_t)(nnz ? nnz : 1) * sizeof *perm);
  float *shuffled = malloc((size_t)(nnz ? nnz : 1) * sizeof *shuffled);
  cr_assert(perm && shuffled);
  for (int64_t k = 0; k < nnz; k++) perm[k] = (int32_t)k;
  for (int64_t k = nnz - 1; k > 0; k--) { /* Fisher-Yates, seeded by the shape */
    const int64_t j = (int64_t)((uint64_t)(k * 2654435761LL + nnz) % (uint64_t)(k + 1));
    const int32_t t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  for (int64_t k = 0; k < nnz; k++) shuffled[perm[k]] = values ? values[k] : 1.0f;
  int64_t *want = malloc((size_t)(f * bc) * sizeof *want), *got = malloc((size_t)(f * bc) * sizeof *got);
  cr_assert(want && got);
  for (int isa = HALO_CPU_ISA_PLAIN; isa <= HALO_CPU_ISA_AVX512; isa++) {
    if (halo_cpu_exact_limit_isa((halo_cpu_isa)isa) != (halo_cpu_isa)isa) continue;
    memset(sparse, 0, (size_t)(f * bc * HALO_EXACT_LIMBS) * sizeof *sparse);
    halo_cpu_exact_csr(indptr, indices, values, f, b, bc, bc, e, threads, w, sparse);
    expect_limbs(sparse, ref, f * bc, what[isa]);
    memset(sparse, 0, (size_t)(f * bc * HALO_EXACT_LIMBS) * sizeof *sparse);
    halo_cpu_exact_csr_perm(indptr, indices, shuffled, perm, f, b, bc, bc, e, threads, w, sparse,
                            0);
    expect_limbs(sparse, ref, f * bc, what_perm[isa]);
    /* Packed, one int64 a sum: halo_exact_pack of the limbs. */
    halo_exact_pack(sparse, f * bc, want);
    halo_cpu_exact_csr_perm(indptr, indices, shuffled, perm, f, b, bc, bc, e, threads, w, got, 1);
    cr_expect(memcmp(got, want, (size_t)(f * bc) * sizeof *got) == 0,
              "%s: the packed sums are not the limbs' packs", what_perm[isa]);
  }
  halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);
  free(perm);
  free(shuffled);
  free(want);
  free(got);
}

static float *to_float(const int64_t *acc, int64_t count, int e) {
  float *out = malloc((size_t)count * sizeof *out);
  cr_assert(out);
  halo_exact_to_float(acc, count, e, out);
  return out;
}

static void expect_same_bits(const float *x, const float *y, int64_t n, const char *what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&x[i], &y[i], sizeof x[i]) != 0 && bad++ < 3)
      cr_expect_fail("%s: sum %lld is %.9g, not %.9g", what, (long long)i, y[i], x[i]);
  cr_expect_eq(bad, 0, "%s: %lld of %lld sums differ", what, (long long)bad, (long long)n);
}

Test(exact, exponent_bounds_the_terms) {
  const double bounds[] = {1.0, 0.75, 3.0, 1e-30, 7.5e20, 2.0};
  for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
    const int e = halo_exact_exponent(bounds[k]);
    cr_expect_lt(bounds[k], ldexp(1.0, e + 45), "bound %g, e %d", bounds[k], e);
    cr_expect_geq(bounds[k], ldexp(1.0, e + 44), "bound %g, e %d: grid finer than it need be",
                  bounds[k], e);
  }
  cr_expect_eq(halo_exact_exponent(0.0), 0);
}

Test(exact, dense_matches_long_double_and_ignores_order_split_and_threads) {
  const uint64_t seed = test_seed("exact/dense");
  const int64_t n = 5000, ac = 37, bc = 9, count = ac * bc;
  float *a = malloc((size_t)(n * ac) * sizeof *a), *b = malloc((size_t)(n * bc) * sizeof *b);
  float *pa = malloc((size_t)(n * ac) * sizeof *pa), *pb = malloc((size_t)(n * bc) * sizeof *pb);
  cr_assert(a && b && pa && pb);
  test_fill(a, n * ac, test_key(seed, 1), -1.0f, 1.0f);
  test_fill(b, n * bc, test_key(seed, 2), -3.0f, 3.0f);
  /* Magnitudes over many binades, and exact zeros, as activations have. */
  for (int64_t i = 0; i < n * ac; i++)
    a[i] = i % 7 == 0 ? 0.0f : ldexpf(a[i], -(int)test_below(test_key(seed, 3), (uint64_t)i, 20));
  const int e =
      halo_exact_exponent((double)halo_cpu_max_abs(a, n * ac) * halo_cpu_max_abs(b, n * bc));

  int64_t *whole = calloc((size_t)(count * HALO_EXACT_LIMBS), sizeof *whole);
  cr_assert(whole);
  add_rows(a, b, 0, n, ac, bc, e, 1, whole);
  i128 *exact = reference(a, b, n, ac, bc, e, 0);
  expect_limbs(whole, exact, count, "against the term-by-term reference");
  float *ref = to_float(whole, count, e);

  /* Each vector width (the scalar loop, AVX2, AVX-512, where the CPU has
   * them): the same integers. */
  for (int isa = HALO_CPU_ISA_PLAIN; isa <= HALO_CPU_ISA_AVX512; isa++) {
    if (halo_cpu_exact_limit_isa((halo_cpu_isa)isa) != (halo_cpu_isa)isa) continue;
    int64_t *acc = calloc((size_t)(count * HALO_EXACT_LIMBS), sizeof *acc);
    cr_assert(acc);
    add_rows(a, b, 0, n, ac, bc, e, 2, acc);
    expect_limbs(acc, exact, count, isa == 0 ? "scalar" : isa == 1 ? "AVX2" : "AVX-512");
    free(acc);
  }
  halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);

  /* Against long double: within the grid's rounding plus the float's. */
  for (int64_t p = 0; p < ac; p++)
    for (int64_t q = 0; q < bc; q++) {
      long double s = 0.0L;
      for (int64_t i = 0; i < n; i++) s += (long double)a[i * ac + p] * b[i * bc + q];
      const double tol = (double)n * ldexp(1.0, e) + fabs((double)s) * 0x1p-23;
      cr_expect(fabs((double)ref[p * bc + q] - (double)s) <= tol,
                "cell (%lld, %lld): %.9g vs %.12Lg", (long long)p, (long long)q, ref[p * bc + q],
                s);
    }

  /* Threads: 2 and 3. */
  for (int threads = 2; threads <= 3; threads++) {
    int64_t *acc = calloc((size_t)(count * HALO_EXACT_LIMBS), sizeof *acc);
    add_rows(a, b, 0, n, ac, bc, e, threads, acc);
    float *got = to_float(acc, count, e);
    expect_same_bits(ref, got, count, threads == 2 ? "2 threads" : "3 threads");
    free(got);
    free(acc);
  }

  /* A permutation of the rows, split among 7 uneven "ranks". */
  for (int64_t i = 0; i < n; i++) {
    const int64_t from = (i * 2654435761LL + 12345) % n; /* a bijection: n is coprime */
    memcpy(pa + i * ac, a + from * ac, (size_t)ac * sizeof *a);
    memcpy(pb + i * bc, b + from * bc, (size_t)bc * sizeof *b);
  }
  int64_t *acc = calloc((size_t)(count * HALO_EXACT_LIMBS), sizeof *acc);
  const int64_t cuts[] = {0, 1, 2, 400, 401, 2500, 4999, n};
  for (size_t k = 0; k + 1 < sizeof cuts / sizeof cuts[0]; k++)
    add_rows(pa, pb, cuts[k], cuts[k + 1], ac, bc, e, 2, acc);
  float *got = to_float(acc, count, e);
  expect_same_bits(ref, got, count, "permuted rows on 7 ranks");

  free(got);
  free(acc);
  free(ref);
  free(exact);
  free(whole);
  free(a);
  free(b);
  free(pa);
  free(pb);
}

/* halo_cpu_exact_tn_dropped: the integers of the term-by-term reference of
 * an explicitly dropped copy (halo_cpu_dropout_to, the dense kernels'
 * mask), at each vector width and thread count, with A wider than one
 * packed panel and rows that end inside a chunk; with B's column sums on
 * another grid beside it (and halo_cpu_exact_tn_ones of the copy), those
 * sums' reference integers too. */
Test(exact, dropped_sum_equals_the_sum_of_a_dropped_copy) {
  const uint64_t seed = test_seed("exact/dropped");
  /* 3000 × 131 × 19: past the 2^20 terms that wake a team, B's 19 columns
   * through the two-vector tile, then one vector, masked. */
  const int64_t n = 3000, ac = 131, bc = 19, count = ac * bc;
  float *x = malloc((size_t)(n * ac) * sizeof *x), *xd = malloc((size_t)(n * ac) * sizeof *xd);
  float *b = malloc((size_t)(n * bc) * sizeof *b);
  int64_t *gid = malloc((size_t)n * sizeof *gid);
  int64_t *acc = malloc((size_t)(count * HALO_EXACT_LIMBS) * sizeof *acc);
  int64_t *ones = malloc((size_t)(bc * HALO_EXACT_LIMBS) * sizeof *ones);
  int64_t *want = malloc((size_t)(count + bc) * sizeof *want);
  int64_t *got = malloc((size_t)(count + bc) * sizeof *got);
  cr_assert(x && xd && b && gid && acc && ones && want && got);
  test_fill(x, n * ac, test_key(seed, 1), -2.0f, 2.0f);
  test_fill(b, n * bc, test_key(seed, 2), -1.0f, 1.0f);
  for (int64_t i = 0; i < n; i++) gid[i] = 3 * i + 17; /* global ids, not local rows */
  const uint64_t key = test_key(seed, 3);
  const float ps[] = {0.5f, 0.1f, 0.9f};
  for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
    halo_cpu_dropout_to(xd, x, n, ac, gid, key, ps[k]);
    const int e =
        halo_exact_exponent((double)halo_cpu_max_abs(xd, n * ac) * halo_cpu_max_abs(b, n * bc));
    i128 *ref = reference(xd, b, n, ac, bc, e, 0);
    const int e1 = halo_exact_exponent((double)halo_cpu_max_abs(b, n * bc)); /* not e */
    i128 *ones_ref = reference(NULL, b, n, 1, bc, e1, 0);
    for (int isa = HALO_CPU_ISA_PLAIN; isa <= HALO_CPU_ISA_AVX512; isa++) {
      if (halo_cpu_exact_limit_isa((halo_cpu_isa)isa) != (halo_cpu_isa)isa) continue;
      for (int threads = 1; threads <= 3; threads += 2) {
        void *w = ones_work_for(ac, bc, threads);
        memset(acc, 0x5a, (size_t)(count * HALO_EXACT_LIMBS) * sizeof *acc); /* overwritten */
        halo_cpu_exact_tn_dropped(n, ac, bc, x, gid, key, ps[k], b, bc, e, threads, w, acc, 0,
                                  NULL, 0);
        char what[96];
        snprintf(what, sizeof what, "p %.1f, width %d, %d thread(s)", (double)ps[k], isa, threads);
        expect_limbs(acc, ref, count, what);
        /* With B's column sums riding along, on a grid of their own. */
        memset(acc, 0x5a, (size_t)(count * HALO_EXACT_LIMBS) * sizeof *acc);
        memset(ones, 0x5a, (size_t)(bc * HALO_EXACT_LIMBS) * sizeof *ones);
        halo_cpu_exact_tn_dropped(n, ac, bc, x, gid, key, ps[k], b, bc, e, threads, w, acc, e1,
                                  ones, 0);
        snprintf(what, sizeof what, "p %.1f, width %d, %d thread(s), with the column sums",
                 (double)ps[k], isa, threads);
        expect_limbs(acc, ref, count, what);
        expect_limbs(ones, ones_ref, bc, "the column sums beside it");
        memset(ones, 0x5a, (size_t)(bc * HALO_EXACT_LIMBS) * sizeof *ones);
        halo_cpu_exact_tn_ones(n, ac, bc, xd, ac, b, bc, e, threads, w, acc, e1, ones, 0);
        expect_limbs(acc, ref, count, "the dropped copy, with the column sums");
        expect_limbs(ones, ones_ref, bc, "the column sums beside the dropped copy");
        /* Packed: halo_exact_pack of those limbs, one int64 a sum. */
        halo_exact_pack(acc, count, want);
        halo_exact_pack(ones, bc, want + count);
        halo_cpu_exact_tn_dropped(n, ac, bc, x, gid, key, ps[k], b, bc, e, threads, w, got, e1,
                                  got + count, 1);
        cr_expect(memcmp(got, want, (size_t)(count + bc) * sizeof *got) == 0,
                  "%s: the packed sums are not the limbs' packs", what);
        memset(got, 0x5a, (size_t)(count + bc) * sizeof *got);
        halo_cpu_exact_tn_ones(n, ac, bc, xd, ac, b, bc, e, threads, w, got, e1, got + count, 1);
        cr_expect(memcmp(got, want, (size_t)(count + bc) * sizeof *got) == 0,
                  "%s: halo_cpu_exact_tn_ones's packed sums are not the limbs' packs", what);
        free(w);
      }
    }
    halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);
    free(ref);
    free(ones_ref);
  }
  free(ones);
  free(want);
  free(got);
  free(x);
  free(xd);
  free(b);
  free(gid);
  free(acc);
}

/* The directions balance: rounding every term down would put a sum of n
 * terms with random fractions about n/2 units low; drawn per row, half up
 * and half down, the errors cancel to about sqrt(n)/2.  Each term's error
 * r - t is exact in double, and so is their sum here.  Column 0 of B is 0
 * in every row (a ReLU's dead unit): the direction must come from more of
 * the row than its first value. */
Test(exact, row_directions_cancel_the_rounding_errors) {
  const uint64_t seed = test_seed("exact/balance");
  const int64_t n = 1 << 16, bc = 4;
  float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)(n * bc) * sizeof *b);
  cr_assert(a && b);
  test_fill(a, n, test_key(seed, 1), 0.5f, 1.0f);
  test_fill(b, n * bc, test_key(seed, 2), -1.0f, 1.0f);
  for (int64_t i = 0; i < n; i++) b[i * bc] = 0.0f;
  /* A grid of 2^-12: every term has fraction bits to round. */
  const int e = -12;
  int64_t limbs[4 * HALO_EXACT_LIMBS];
  void *w = work_for(1, bc, 1);
  halo_cpu_exact_tn(n, 1, bc, a, 1, b, bc, e, 1, w, limbs);
  int64_t ups = 0;
  for (int64_t i = 0; i < n; i++) ups += halo_exact_row_up(b + i * bc, bc);
  cr_expect(llabs(2 * ups - n) < 8 * (int64_t)sqrt((double)n), "%lld of %lld rows round up",
            (long long)ups, (long long)n);
  for (int64_t q = 0; q < bc; q++) {
    /* The terms' sum in units (each below 2^12, with 36 fraction bits):
     * exact in a long double's 64 bits. */
    long double sum = 0.0L;
    for (int64_t i = 0; i < n; i++) sum += (long double)a[i] * b[i * bc + q] * 4096.0L;
    const double off = (double)((long double)limbs_value(limbs + q * HALO_EXACT_LIMBS) - sum);
    cr_expect(fabs(off) < 4.0 * sqrt((double)n), "column %lld: the sum is off by %.1f units",
              (long long)q, off);
  }
  free(w);
  free(a);
  free(b);
}

Test(exact, column_sums_csr_and_dense_sums_equal_their_references) {
  const uint64_t seed = test_seed("exact/csr");
  /* About 30,000 non-zeros: past the size from which halo_cpu_exact_csr
   * runs on several threads. */
  const int64_t n = 12000, f = 50, bc = 21; /* one chunk of 16 columns, then 5 */
  float *x = calloc((size_t)(n * f), sizeof *x), *b = malloc((size_t)(n * bc) * sizeof *b);
  float *ones = malloc((size_t)n * sizeof *ones);
  cr_assert(x && b && ones);
  test_fill(b, n * bc, test_key(seed, 4), -1.0f, 1.0f);
  for (int64_t i = 0; i < n; i++) ones[i] = 1.0f;
  /* A sparse X (about 5% non-zero), and its transpose as CSR (rows =
   * features).  Feature 0 is in every node, so its CSR row of 12,000
   * terms runs past one int64 run of 2^11; the others' fit in one. */
  int64_t nnz = 0;
  for (int64_t i = 0; i < n * f; i++)
    if (i % f == 0 || test_below(test_key(seed, 5), (uint64_t)i, 20) == 0) {
      x[i] = halo_rng_uniform(test_key(seed, 6), (uint64_t)i, 0) + 0.25f;
      nnz++;
    }
  int64_t *indptr = calloc((size_t)f + 1, sizeof *indptr);
  int32_t *indices = malloc((size_t)nnz * sizeof *indices);
  float *values = malloc((size_t)nnz * sizeof *values);
  cr_assert(indptr && indices && values);
  for (int64_t p = 0, k = 0; p < f; p++) {
    for (int64_t i = n - 1; i >= 0; i--) /* descending: the order must not matter */
      if (x[i * f + p] != 0.0f) {
        indices[k] = (int32_t)i;
        values[k++] = x[i * f + p];
      }
    indptr[p + 1] = k;
  }
  const int e =
      halo_exact_exponent((double)halo_cpu_max_abs(x, n * f) * halo_cpu_max_abs(b, n * bc));

  int64_t *dense = calloc((size_t)(f * bc * HALO_EXACT_LIMBS), sizeof *dense);
  int64_t *sparse = calloc((size_t)(f * bc * HALO_EXACT_LIMBS), sizeof *sparse);
  cr_assert(dense && sparse);
  add_rows(x, b, 0, n, f, bc, e, 2, dense);
  void *w = aligned_alloc(16, (halo_cpu_exact_csr_work(bc, 3) + 15) / 16 * 16);
  cr_assert(w);
  i128 *dense_ref = reference(x, b, n, f, bc, e, 0), *csr_ref = reference(x, b, n, f, bc, e, 1);
  expect_limbs(dense, dense_ref, f * bc, "dense");
  /* Each vector width of the CSR sums: 16 columns then 5. */
  expect_csr_every_width(indptr, indices, values, f, b, bc, e, 3, w, sparse, csr_ref);
  /* The two roundings differ by less than a unit a term. */
  for (int64_t c = 0; c < f * bc; c++)
    cr_expect_leq(llabs((long long)(dense_ref[c] - csr_ref[c])), n);
  free(dense_ref);
  free(csr_ref);

  /* Column sums: A NULL against a column of ones. */
  const int eb = halo_exact_exponent(halo_cpu_max_abs(b, n * bc));
  int64_t *cs = calloc((size_t)(bc * HALO_EXACT_LIMBS), sizeof *cs);
  int64_t *cs1 = calloc((size_t)(bc * HALO_EXACT_LIMBS), sizeof *cs1);
  add_rows(ones, b, 0, n, 1, bc, eb, 1, cs1);
  i128 *cs_ref = reference(NULL, b, n, 1, bc, eb, 0);
  /* Each width's column sums (no packing: two accumulators a column). */
  for (int isa = HALO_CPU_ISA_PLAIN; isa <= HALO_CPU_ISA_AVX512; isa++) {
    if (halo_cpu_exact_limit_isa((halo_cpu_isa)isa) != (halo_cpu_isa)isa) continue;
    memset(cs, 0, (size_t)(bc * HALO_EXACT_LIMBS) * sizeof *cs);
    add_rows(NULL, b, 0, n, 1, bc, eb, 2, cs);
    expect_limbs(cs, cs_ref, bc,
                 isa == 0   ? "column sums, scalar"
                 : isa == 1 ? "column sums, AVX2"
                            : "column sums, AVX-512");
  }
  halo_cpu_exact_limit_isa(HALO_CPU_ISA_AVX512);
  cr_expect_arr_eq(cs, cs1, (size_t)(bc * HALO_EXACT_LIMBS) * sizeof *cs);
  free(cs_ref);
  float *colsum = to_float(cs, bc, eb);
  for (int64_t q = 0; q < bc; q++) {
    long double s = 0.0L;
    for (int64_t i = 0; i < n; i++) s += b[i * bc + q];
    cr_expect(fabs((double)colsum[q] - (double)s) <= fabs((double)s) * 0x1p-23 + n * ldexp(1.0, eb),
              "column %lld: %.9g vs %.12Lg", (long long)q, colsum[q], s);
  }

  free(colsum);
  free(cs);
  free(cs1);
  free(w);
  free(dense);
  free(sparse);
  free(indptr);
  free(indices);
  free(values);
  free(x);
  free(b);
  free(ones);
}

Test(exact, terms_at_the_bound_and_many_ranks_do_not_overflow) {
  /* 3000 "ranks" each adding 5000 terms at the largest magnitude: 1.5e7
   * terms near 2^45 units, beyond any int64, carried through the limbs. */
  const int64_t n = 5000, ranks = 3000;
  float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
  cr_assert(a && b);
  for (int64_t i = 0; i < n; i++) {
    a[i] = -1.5f;
    b[i] = 1.25f;
  }
  const int e = halo_exact_exponent(1.5 * 1.25);
  int64_t acc[HALO_EXACT_LIMBS] = {0};
  int64_t part[HALO_EXACT_LIMBS];
  void *w = work_for(1, 1, 1);
  halo_cpu_exact_tn(n, 1, 1, a, 1, b, 1, e, 1, w, part);
  for (int64_t r = 0; r < ranks; r++)
    for (int k = 0; k < HALO_EXACT_LIMBS; k++) acc[k] += part[k];
  float out;
  halo_exact_to_float(acc, 1, e, &out);
  cr_expect_eq(out, (float)(-1.875 * (double)n * (double)ranks), "got %.9g", out);
  free(w);
  free(a);
  free(b);
}

/* The gradients' packed path (src/gnn-ops.c): a grid of
 * halo_exact_exponent_terms for N terms in all, each rank's limbs packed
 * into one int64, the int64s summed as MPI_SUM would, then converted:
 * equal to the limbs' sum converted, with every term at the bound and N
 * past 2^18 (a coarser grid) and below it (halo_exact_exponent's own). */
Test(exact, packed_sums_of_all_ranks_equal_the_limbs_sums) {
  cr_expect_eq(halo_exact_exponent_terms(3.0, (1 << 18) - 1), halo_exact_exponent(3.0));
  cr_expect_eq(halo_exact_exponent_terms(3.0, 1 << 18), halo_exact_exponent(3.0) + 1);
  cr_expect_eq(halo_exact_exponent_terms(0.0, 1 << 20), 0);
  const int64_t rows[2] = {4000, 1 << 20}, ranks = 7;
  for (int c = 0; c < 2; c++) {
    const int64_t n = rows[c] / ranks, total = n * ranks;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * 2 * sizeof *b);
    cr_assert(a && b);
    for (int64_t i = 0; i < n; i++) {
      a[i] = -1.5f; /* every term of column 0 at the bound, -1.875 */
      b[2 * i] = 1.25f;
      b[2 * i + 1] = i % 2 ? 0.3f : -0.7f;
    }
    const int e = halo_exact_exponent_terms(1.5 * 1.25, total);
    int64_t part[2 * HALO_EXACT_LIMBS], limbs[2 * HALO_EXACT_LIMBS] = {0}, packed[2], sum[2] = {0};
    void *w = work_for(1, 2, 1);
    halo_cpu_exact_tn(n, 1, 2, a, 1, b, 2, e, 1, w, part);
    halo_exact_pack(part, 2, packed);
    for (int64_t r = 0; r < ranks; r++) {
      for (int k = 0; k < 2 * HALO_EXACT_LIMBS; k++) limbs[k] += part[k];
      for (int k = 0; k < 2; k++) sum[k] += packed[k];
    }
    float from_limbs[2], from_packed[2];
    halo_exact_to_float(limbs, 2, e, from_limbs);
    halo_exact_packed_to_float(sum, 2, e, from_packed);
    expect_same_bits(from_limbs, from_packed, 2, "packed against limbs");
    cr_expect_eq(from_packed[0], (float)(-1.875 * (double)total), "%lld terms: %.9g",
                 (long long)total, from_packed[0]);
    free(w);
    free(a);
    free(b);
  }
}

/* The CSR sum's column tails (a vector of 4, then 3 masked columns) and
 * the dense sum of 7 columns (one padded vector): their references' bits. */
Test(exact, csr_and_dense_tail_columns_equal_their_references) {
  const uint64_t seed = test_seed("exact/csr-tail");
  const int64_t n = 3000, f = 9, bc = 7;
  float *x = calloc((size_t)(n * f), sizeof *x), *b = malloc((size_t)(n * bc) * sizeof *b);
  int64_t *indptr = calloc((size_t)f + 1, sizeof *indptr);
  int32_t *indices = malloc((size_t)(n * f) * sizeof *indices);
  float *values = malloc((size_t)(n * f) * sizeof *values);
  cr_assert(x && b && indptr && indices && values);
  test_fill(b, n * bc, test_key(seed, 1), -2.0f, 2.0f);
  for (int64_t i = 0; i < n * f; i++)
    if (test_below(test_key(seed, 2), (uint64_t)i, 4) == 0)
      x[i] = halo_rng_uniform(test_key(seed, 3), (uint64_t)i, 0) - 0.5f;
  for (int64_t p = 0, k = 0; p < f; p++) {
    for (int64_t i = 0; i < n; i++)
      if (x[i * f + p] != 0.0f) {
        indices[k] = (int32_t)i;
        values[k++] = x[i * f + p];
      }
    indptr[p + 1] = k;
  }
  const int e =
      halo_exact_exponent((double)halo_cpu_max_abs(x, n * f) * halo_cpu_max_abs(b, n * bc));
  int64_t *dense = calloc((size_t)(f * bc * HALO_EXACT_LIMBS), sizeof *dense);
  int64_t *sparse = calloc((size_t)(f * bc * HALO_EXACT_LIMBS), sizeof *sparse);
  void *w = aligned_alloc(16, (halo_cpu_exact_csr_work(bc, 1) + 15) / 16 * 16);
  cr_assert(dense && sparse && w);
  add_rows(x, b, 0, n, f, bc, e, 1, dense);
  i128 *dense_ref = reference(x, b, n, f, bc, e, 0), *csr_ref = reference(x, b, n, f, bc, e, 1);
  expect_limbs(dense, dense_ref, f * bc, "dense");
  expect_csr_every_width(indptr, indices, values, f, b, bc, e, 1, w, sparse, csr_ref);
  free(dense_ref);
  free(csr_ref);
  free(w);
  free(dense);
  free(sparse);
  free(indptr);
  free(indices);
  free(values);
  free(x);
  free(b);
}

/* halo_cpu_max_abs compares bit patterns: against a plain loop over
 * fabsf, with -0, subnormals and a negative maximum, and inf for a NaN or
 * an inf anywhere, on the one-thread and the OpenMP sizes. */
Test(exact, max_abs_matches_a_plain_loop) {
  const uint64_t seed = test_seed("exact/max_abs");
  const int64_t sizes[2] = {1000, 1 << 17};
  cr_expect_eq(halo_cpu_max_abs(NULL, 0), 0.0f);
  for (int s = 0; s < 2; s++) {
    const int64_t n = sizes[s];
    float *x = malloc((size_t)n * sizeof *x);
    cr_assert(x);
    test_fill(x, n, test_key(seed, (uint64_t)s), -3.0f, 3.0f);
    x[n / 3] = -0.0f;
    x[n / 4] = 0x1p-140f; /* subnormal */
    x[n / 2] = -7.5f;     /* the maximum is negative */
    float ref = 0.0f;
    for (int64_t i = 0; i < n; i++) ref = fabsf(x[i]) > ref ? fabsf(x[i]) : ref;
    cr_expect_eq(halo_cpu_max_abs(x, n), ref, "n %lld: %g vs %g", (long long)n,
                 halo_cpu_max_abs(x, n), ref);
    x[n - 1] = NAN;
    cr_expect(isinf(halo_cpu_max_abs(x, n)), "a NaN gives inf");
    x[n - 1] = -INFINITY;
    cr_expect(isinf(halo_cpu_max_abs(x, n)), "-inf gives inf");
    for (int64_t i = 0; i < n; i++) x[i] = -0.0f;
    cr_expect_eq(halo_cpu_max_abs(x, n), 0.0f);
    free(x);
  }
}
