/* Exact sums over rows on a fixed-point grid (halo-exact.h).
 *
 * A term t = a·b (two floats, exact in double) scaled by 2^-e is at most
 * 2^51 in magnitude, so adding 1.5·2^52 rounds it to an integer (ties to
 * even) in the low bits of the double: one rounding, the same on every
 * thread and rank, with or without FMA contraction (a·b is exact either
 * way).  2^11 such integers fit an int64; blocks of that many are then
 * added into __int128 accumulators, and those into the limbs.  Integer sums
 * do not depend on their order, so neither does the result.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "halo-exact.h"

typedef __int128 i128;

enum { BLOCK_TERMS = HALO_EXACT_BLOCK_TERMS };

/* 1.5·2^52: x + ROUNDER, for |x| <= 2^51, holds round(x) in its low bits. */
static const double ROUNDER = 6755399441055744.0;

static inline int64_t round_term(double x) {
  double t = x + ROUNDER;
  int64_t bits, base;
  memcpy(&bits, &t, sizeof bits);
  memcpy(&base, &ROUNDER, sizeof base);
  return bits - base;
}

int halo_exact_exponent(double bound) {
  if (!(bound > 0.0) || !isfinite(bound)) return 0;
  return ilogb(bound) + 1 - 51;
}

float halo_cpu_max_abs(const float *x, int64_t n) {
  float m = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : m) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; i++) {
    const float v = fabsf(x[i]);
    if (!(v <= m)) m = isnan(v) ? INFINITY : v;
  }
  return m;
}

/* Splits v into limbs (l0, l1 in [0, 2^42), l2 the signed rest). */
static void to_limbs(i128 v, int64_t *limb) {
  const i128 mask = ((i128)1 << HALO_EXACT_LIMB_BITS) - 1;
  limb[0] = (int64_t)(v & mask);
  v >>= HALO_EXACT_LIMB_BITS; /* arithmetic: floor division */
  limb[1] = (int64_t)(v & mask);
  limb[2] = (int64_t)(v >> HALO_EXACT_LIMB_BITS);
}

void halo_exact_limbs(int64_t low, int64_t high, int64_t *limb) {
  to_limbs((i128)high * ((i128)1 << HALO_EXACT_LIMB_BITS) + low, limb);
}

void halo_exact_to_float(const int64_t *acc, int64_t count, int e, float *out) {
#pragma omp parallel for schedule(static) if (count >= (1 << 16))
  for (int64_t j = 0; j < count; j++) {
    const int64_t *l = acc + j * HALO_EXACT_LIMBS;
    i128 v = l[2];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[1];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[0];
    out[j] = (float)ldexp((double)v, e);
  }
}

/* The thread's share [lo, hi) of n items, in `parts` equal runs. */
static void share(int64_t n, int part, int parts, int64_t *lo, int64_t *hi) {
  *lo = n * part / parts;
  *hi = n * (part + 1) / parts;
}

/* Bytes of one thread's accumulators for `cells` sums: its __int128 sums,
 * then its int64 runs, rounded to 16 bytes so that the next thread's
 * __int128 stay aligned. */
static size_t thread_bytes(int64_t cells) {
  const size_t bytes = (size_t)cells * (sizeof(i128) + sizeof(int64_t));
  return (bytes + 15) / 16 * 16;
}

size_t halo_cpu_exact_tn_work(int64_t ac, int64_t bc, int threads) {
  return (size_t)(ac * bc) * sizeof(i128) + (size_t)threads * thread_bytes(ac * bc);
}

size_t halo_cpu_exact_csr_work(int64_t bc, int threads) {
  return (size_t)threads * thread_bytes(bc);
}

void halo_cpu_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                       const float *b, int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  const int64_t cells = ac * bc;
  const double scale = ldexp(1.0, -e);
  if (cells == 0) return;
  i128 *total = work;
  memset(total, 0, (size_t)cells * sizeof *total);

  /* Row blocks per thread; each thread keeps its sums for every output
   * cell, in 2^11-row int64 runs flushed into __int128, and adds them to
   * the shared total at the end (integers: the order does not matter). */
#pragma omp parallel num_threads(threads) if (n * cells >= (1 << 16))
  {
    const int parts = omp_get_num_threads(), part = omp_get_thread_num();
    char *mine = (char *)work + (size_t)cells * sizeof(i128) + (size_t)part * thread_bytes(cells);
    i128 *sum = (i128 *)mine;
    int64_t *run = (int64_t *)(mine + (size_t)cells * sizeof(i128));
    int64_t lo, hi;
    share(n, part, parts, &lo, &hi);
    memset(sum, 0, (size_t)cells * sizeof *sum);
    memset(run, 0, (size_t)cells * sizeof *run);
    for (int64_t i0 = lo; i0 < hi; i0 += BLOCK_TERMS) {
      const int64_t i1 = hi - i0 < BLOCK_TERMS ? hi : i0 + BLOCK_TERMS;
      for (int64_t i = i0; i < i1; i++) {
        const float *restrict bi = b + i * ldb;
        for (int64_t p = 0; p < ac; p++) {
          const double ap = (a ? (double)a[i * lda + p] : 1.0) * scale;
          if (ap == 0.0) continue;
          int64_t *restrict r = run + p * bc;
#pragma omp simd
          for (int64_t q = 0; q < bc; q++) r[q] += round_term(ap * (double)bi[q]);
        }
      }
      for (int64_t c = 0; c < cells; c++) {
        sum[c] += run[c];
        run[c] = 0;
      }
    }
#pragma omp critical(halo_exact_total)
    for (int64_t c = 0; c < cells; c++) total[c] += sum[c];
  }
  for (int64_t c = 0; c < cells; c++) to_limbs(total[c], acc + c * HALO_EXACT_LIMBS);
}

void halo_cpu_exact_csr(const int64_t *indptr, const int32_t *indices, const float *values,
                        int64_t rows, const float *b, int64_t bc, int64_t ldb, int e, int threads,
                        void *work, int64_t *acc) {
  const double scale = ldexp(1.0, -e);
  if (rows == 0 || bc == 0) return;
#pragma omp parallel num_threads(threads) if (indptr[rows] - indptr[0] >= (1 << 14))
  {
    char *mine = (char *)work + (size_t)omp_get_thread_num() * thread_bytes(bc);
    i128 *sum = (i128 *)mine;
    int64_t *run = (int64_t *)(mine + (size_t)bc * sizeof(i128));
#pragma omp for schedule(dynamic, 64)
    for (int64_t p = 0; p < rows; p++) {
      memset(sum, 0, (size_t)bc * sizeof *sum);
      for (int64_t k0 = indptr[p]; k0 < indptr[p + 1]; k0 += BLOCK_TERMS) {
        const int64_t k1 = indptr[p + 1] - k0 < BLOCK_TERMS ? indptr[p + 1] : k0 + BLOCK_TERMS;
        memset(run, 0, (size_t)bc * sizeof *run);
        for (int64_t k = k0; k < k1; k++) {
          const double v = (values ? (double)values[k] : 1.0) * scale;
          const float *restrict bj = b + (int64_t)indices[k] * ldb;
#pragma omp simd
          for (int64_t q = 0; q < bc; q++) run[q] += round_term(v * (double)bj[q]);
        }
        for (int64_t q = 0; q < bc; q++) sum[q] += run[q];
      }
      for (int64_t q = 0; q < bc; q++) to_limbs(sum[q], acc + (p * bc + q) * HALO_EXACT_LIMBS);
    }
  }
}
