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
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

int halo_exact_exponent_terms(double bound, int64_t terms) {
  if (!(bound > 0.0) || !isfinite(bound)) return 0;
  int bits = 0;
  while (bits < 63 && (terms >> bits) > 0) bits++;
  const int coarse = bits > 12 ? bits - 12 : 0;
  return ilogb(bound) + 1 - 51 + coarse;
}

/* max over i in [0, n) of |x[i]|'s bits (the sign cleared): they order
 * as |x| does, and every NaN's lie above inf's.  An integer max, which
 * needs SSE4.1 to vectorise: hence the clone. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static uint32_t max_abs_bits(const float *x, int64_t n) {
  uint32_t m = 0;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], sizeof u);
    u &= 0x7fffffffu;
    m = u > m ? u : m;
  }
  return m;
}

float halo_cpu_max_abs(const float *x, int64_t n) {
  uint32_t m = 0;
#pragma omp parallel reduction(max : m) if (n >= (1 << 16))
  {
    int64_t lo = n * omp_get_thread_num() / omp_get_num_threads();
    int64_t hi = n * (omp_get_thread_num() + 1) / omp_get_num_threads();
    m = max_abs_bits(x + lo, hi - lo);
  }
  if (m >= 0x7f800000u) return INFINITY;
  float f;
  memcpy(&f, &m, sizeof f);
  return f;
}

/* Splits v into limbs (l0, l1 in [0, 2^42), l2 the signed rest). */
static void to_limbs(i128 v, int64_t *limb) {
  const i128 mask = ((i128)1 << HALO_EXACT_LIMB_BITS) - 1;
  limb[0] = (int64_t)(v & mask);
  v >>= HALO_EXACT_LIMB_BITS; /* arithmetic: floor division */
  limb[1] = (int64_t)(v & mask);
  limb[2] = (int64_t)(v >> HALO_EXACT_LIMB_BITS);
}

/* to_limbs of an int64, without __int128 arithmetic: the top limb is its
 * sign. */
static inline void to_limbs64(int64_t v, int64_t *limb) {
  const int64_t mask = ((int64_t)1 << HALO_EXACT_LIMB_BITS) - 1;
  limb[0] = v & mask;
  limb[1] = (v >> HALO_EXACT_LIMB_BITS) & mask;
  limb[2] = v >> 63;
}

void halo_exact_limbs(int64_t low, int64_t high, int64_t *limb) {
  to_limbs((i128)high * ((i128)1 << HALO_EXACT_LIMB_BITS) + low, limb);
}

void halo_exact_to_float(const int64_t *acc, int64_t count, int e, float *out) {
  /* (double)v · 2^e rounds as ldexp does, and is much cheaper, where 2^e
   * is a normal double (always, for the exponents of float bounds). */
  const int fast = e >= -1022 && e <= 1023;
  const double scale = fast ? ldexp(1.0, e) : 0.0;
#pragma omp parallel for schedule(static) if (count >= (1 << 16))
  for (int64_t j = 0; j < count; j++) {
    const int64_t *l = acc + j * HALO_EXACT_LIMBS;
    i128 v = l[2];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[1];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[0];
    /* An int64 converts inline; both conversions round correctly. */
    const double d = v == (int64_t)v ? (double)(int64_t)v : (double)v;
    out[j] = (float)(fast ? d * scale : ldexp(d, e));
  }
}

#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "default")))
#endif
void halo_exact_pack(const int64_t *acc, int64_t count, int64_t *out) {
  /* The sum V = l0 + l1·2^42 + l2·2^84 fits an int64, so V mod 2^64, in
   * which l2's multiple of 2^84 vanishes, is V. */
#pragma omp simd
  for (int64_t j = 0; j < count; j++) {
    const int64_t *l = acc + j * HALO_EXACT_LIMBS;
    const uint64_t v = (uint64_t)l[0] + ((uint64_t)l[1] << HALO_EXACT_LIMB_BITS);
    out[j] = (int64_t)v;
  }
}

/* Cloned: AVX-512DQ converts int64 to double in vectors. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "default")))
#endif
static void packed_scaled(const int64_t *v, int64_t count, double scale, float *out) {
#pragma omp simd
  for (int64_t j = 0; j < count; j++) out[j] = (float)((double)v[j] * scale);
}

void halo_exact_packed_to_float(const int64_t *v, int64_t count, int e, float *out) {
  /* (double)v · 2^e rounds as ldexp does where 2^e is a normal double
   * (always, for the exponents of float bounds). */
  if (e >= -1022 && e <= 1023) {
    packed_scaled(v, count, ldexp(1.0, e), out);
    return;
  }
  for (int64_t j = 0; j < count; j++) out[j] = (float)ldexp((double)v[j], e);
}

void halo_exact_to_double(const int64_t *acc, int64_t count, int e, double *out) {
  for (int64_t j = 0; j < count; j++) {
    const int64_t *l = acc + j * HALO_EXACT_LIMBS;
    i128 v = l[2];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[1];
    v = v * ((i128)1 << HALO_EXACT_LIMB_BITS) + l[0];
    out[j] = ldexp((double)v, e); /* (double) of an int128 rounds correctly */
  }
}

/* The thread's share [lo, hi) of n items, in `parts` equal runs. */
static void share(int64_t n, int part, int parts, int64_t *lo, int64_t *hi) {
  *lo = n * part / parts;
  *hi = n * (part + 1) / parts;
}

/* The dense kernel works on packed blocks: ROWS rows of A's columns
 * [p0, p0 + PANEL_P) and of B's columns [q0, q0 + PANEL_Q), converted to
 * double (B also scaled by 2^-e, exactly) and padded with zeros to whole
 * tiles.  A register tile is TILE_P columns of A × TILE_Q of B: 8 vectors
 * of 4 int64 accumulators, the 2 B vectors and a broadcast fit the 16 AVX
 * registers.  A tile's sums hold at most ROWS terms, far below the 2^11
 * that an int64 holds. */
enum { ROWS = 128, PANEL_P = 128, PANEL_Q = 64, VEC = 4, TILE_P = 4, TILE_Q = 2 * VEC };

typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
typedef uint64_t v4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef float v4f __attribute__((vector_size(16), aligned(4), may_alias));

/* Bytes of one thread's part of the dense workspace: its __int128 sums,
 * then its packed A and B blocks (16-byte multiples, so that the next
 * thread's __int128 stay aligned). */
static size_t tn_thread_bytes(int64_t cells) {
  return (size_t)cells * sizeof(i128) + (size_t)ROWS * (PANEL_P + PANEL_Q) * sizeof(double);
}

/* Bytes of one thread's CSR accumulators: __int128 sums, then int64 runs. */
static size_t csr_thread_bytes(int64_t cols) {
  const size_t bytes = (size_t)cols * (sizeof(i128) + sizeof(int64_t));
  return (bytes + 15) / 16 * 16;
}

size_t halo_cpu_exact_tn_work(int64_t ac, int64_t bc, int threads) {
  return (size_t)(ac * bc) * sizeof(i128) + (size_t)threads * tn_thread_bytes(ac * bc);
}

size_t halo_cpu_exact_csr_work(int64_t bc, int threads) {
  return (size_t)threads * csr_thread_bytes(bc);
}

/* sum[p · bc + q] += the exact sums over `rows` packed rows of the tiles
 * of A's packed columns [0, np) and B's [0, nq), which are the panel at
 * (p0, q0), in tiles of tp <= TILE_P of A's columns (a constant at each
 * call, so the tile stays in registers).  lap and lbq are the packed row
 * lengths (multiples of TILE_P and TILE_Q).
 *
 * A term t = a·b (|t| <= 2^51) plus ROUNDER has the bits of ROUNDER plus
 * round(t).  Summed as uint64 (wrapping), `rows` such bit patterns exceed
 * the exact sum by rows · ROUNDER's bits modulo 2^64, which is taken off
 * once per tile instead of once per term; the true sum fits an int64, so
 * the wrapped difference is exact.  Every clone computes the same
 * integers: a product of two doubles that came from floats is exact, so a
 * fused multiply-add and a multiply then an add round alike. */
static inline __attribute__((always_inline)) void tn_panel(int tp, int64_t rows, const double *ap,
                                                           int64_t lap, int64_t np,
                                                           const double *bp, int64_t lbq,
                                                           int64_t nq, int64_t p0, int64_t q0,
                                                           int64_t bc, i128 *sum) {
  uint64_t base;
  memcpy(&base, &ROUNDER, sizeof base);
  const uint64_t offset = (uint64_t)rows * base;
  for (int64_t pt = 0; pt < np; pt += tp) {
    for (int64_t qt = 0; qt < nq; qt += TILE_Q) {
      v4u acc[TILE_P][2] = {{{0}}};
      for (int64_t i = 0; i < rows; i++) {
        const v4d b0 = *(const v4d *)(bp + i * lbq + qt);
        const v4d b1 = *(const v4d *)(bp + i * lbq + qt + VEC);
        const double *ai = ap + i * lap + pt;
#pragma GCC unroll 4
        for (int k = 0; k < tp; k++) {
          const v4d a = {ai[k], ai[k], ai[k], ai[k]};
          const v4d t0 = a * b0 + ROUNDER, t1 = a * b1 + ROUNDER;
          v4u u0, u1;
          memcpy(&u0, &t0, sizeof u0);
          memcpy(&u1, &t1, sizeof u1);
          acc[k][0] += u0;
          acc[k][1] += u1;
        }
      }
      for (int k = 0; k < tp && pt + k < np; k++) {
        for (int j = 0; j < TILE_Q && qt + j < nq; j++) {
          const int64_t s = (int64_t)(acc[k][j / VEC][j % VEC] - offset);
          sum[(p0 + pt + k) * bc + q0 + qt + j] += s;
        }
      }
    }
  }
}

/* sum[p · bc + q] += Σ_i A[i, p] · B[i, q] · scale on the grid, over
 * `rows` <= ROWS rows (A NULL: A[i, 0] = 1), through the packed blocks
 * apack and bpack.  Cloned, with tn_panel inlined, so that the packing
 * converts and the tiles multiply with the widest vectors. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void tn_block(int64_t rows, const float *a, int64_t lda, int64_t ac, const float *b,
                     int64_t ldb, int64_t bc, double scale, double *apack, double *bpack,
                     i128 *sum) {
  for (int64_t p0 = 0; p0 < ac; p0 += PANEL_P) {
    const int64_t np = ac - p0 < PANEL_P ? ac - p0 : PANEL_P;
    const int64_t lap = (np + TILE_P - 1) / TILE_P * TILE_P;
    for (int64_t i = 0; i < rows; i++) {
      double *restrict dst = apack + i * lap;
      if (a) {
        const float *restrict src = a + i * lda + p0;
        int64_t p = 0;
        for (; p + VEC <= np; p += VEC)
          *(v4d *)(dst + p) = __builtin_convertvector(*(const v4f *)(src + p), v4d);
        for (; p < np; p++) dst[p] = (double)src[p];
      } else {
        dst[0] = 1.0;
      }
      for (int64_t p = a ? np : 1; p < lap; p++) dst[p] = 0.0;
    }
    for (int64_t q0 = 0; q0 < bc; q0 += PANEL_Q) {
      const int64_t nq = bc - q0 < PANEL_Q ? bc - q0 : PANEL_Q;
      const int64_t lbq = (nq + TILE_Q - 1) / TILE_Q * TILE_Q;
      for (int64_t i = 0; i < rows; i++) {
        const float *restrict src = b + i * ldb + q0;
        double *restrict dst = bpack + i * lbq;
        int64_t q = 0;
        for (; q + VEC <= nq; q += VEC)
          *(v4d *)(dst + q) = __builtin_convertvector(*(const v4f *)(src + q), v4d) * scale;
        for (; q < nq; q++) dst[q] = (double)src[q] * scale;
        for (; q < lbq; q++) dst[q] = 0.0;
      }
      if (np == 1) /* a column sum: no tile rows of padding */
        tn_panel(1, rows, apack, lap, np, bpack, lbq, nq, p0, q0, bc, sum);
      else
        tn_panel(TILE_P, rows, apack, lap, np, bpack, lbq, nq, p0, q0, bc, sum);
    }
  }
}

void halo_cpu_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                       const float *b, int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  const int64_t cells = ac * bc;
  const double scale = ldexp(1.0, -e);
  if (cells == 0) return;
  i128 *total = work;
  memset(total, 0, (size_t)cells * sizeof *total);

  /* Row blocks per thread; each thread keeps its sums for every output
   * cell and adds them to the shared total at the end (integers: the order
   * does not matter). */
#pragma omp parallel num_threads(threads) if (n * cells >= (1 << 16))
  {
    const int parts = omp_get_num_threads(), part = omp_get_thread_num();
    char *mine =
        (char *)work + (size_t)cells * sizeof(i128) + (size_t)part * tn_thread_bytes(cells);
    i128 *sum = (i128 *)mine;
    double *apack = (double *)(mine + (size_t)cells * sizeof(i128));
    double *bpack = apack + ROWS * PANEL_P;
    int64_t lo, hi;
    share(n, part, parts, &lo, &hi);
    memset(sum, 0, (size_t)cells * sizeof *sum);
    for (int64_t i0 = lo; i0 < hi; i0 += ROWS) {
      const int64_t rows = hi - i0 < ROWS ? hi - i0 : ROWS;
      tn_block(rows, a ? a + i0 * lda : NULL, lda, ac, b + i0 * ldb, ldb, bc, scale, apack, bpack,
               sum);
    }
#pragma omp critical(halo_exact_total)
    for (int64_t c = 0; c < cells; c++) total[c] += sum[c];
  }
  for (int64_t c = 0; c < cells; c++) to_limbs(total[c], acc + c * HALO_EXACT_LIMBS);
}

/* run[q] += the bits of v_k · B[indices[k], q] + ROUNDER, as uint64, for
 * k in [k0, k1) and q in [0, bc): the same sums of bit patterns as
 * tn_panel's, which the caller takes the rounder's bits off.  Whole chunks
 * of CSR_CHUNK columns are summed in registers over all k. */
enum { CSR_CHUNK = 4 * VEC };

#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void csr_run(int64_t k0, int64_t k1, const int32_t *indices, const float *values,
                    double scale, const float *b, int64_t bc, int64_t ldb, uint64_t *run) {
  int64_t q0 = 0;
  for (; q0 + CSR_CHUNK <= bc; q0 += CSR_CHUNK) {
    v4u acc[CSR_CHUNK / VEC] = {{0}};
    for (int64_t k = k0; k < k1; k++) {
      const double v = (values ? (double)values[k] : 1.0) * scale;
      const v4d vv = {v, v, v, v};
      const float *bj = b + (int64_t)indices[k] * ldb + q0;
#pragma GCC unroll 4
      for (int j = 0; j < CSR_CHUNK / VEC; j++) {
        const v4d t = vv * __builtin_convertvector(*(const v4f *)(bj + j * VEC), v4d) + ROUNDER;
        v4u u;
        memcpy(&u, &t, sizeof u);
        acc[j] += u;
      }
    }
    for (int j = 0; j < CSR_CHUNK; j++) run[q0 + j] += acc[j / VEC][j % VEC];
  }
  if (q0 == bc) return;
  for (int64_t k = k0; k < k1; k++) {
    const double v = (values ? (double)values[k] : 1.0) * scale;
    const float *restrict bj = b + (int64_t)indices[k] * ldb;
    uint64_t *restrict r = run;
#pragma omp simd
    for (int64_t q = q0; q < bc; q++) {
      const double t = v * (double)bj[q] + ROUNDER;
      uint64_t u;
      memcpy(&u, &t, sizeof u);
      r[q] += u;
    }
  }
}

#if defined(__x86_64__)
/* csr_run with AVX2 and FMA intrinsics: GCC 12 splits the clone's
 * float-to-double conversion of an unaligned vector into halves and
 * shuffles, three times the instructions of one vcvtps2pd.  The same
 * integers as csr_run: one rounding of the exact product plus ROUNDER,
 * fused or not. */
__attribute__((target("avx2,fma"))) static void csr_run_avx2(int64_t k0, int64_t k1,
                                                           const int32_t *indices,
                                                           const float *values, double scale,
                                                           const float *b, int64_t bc,
                                                           int64_t ldb, uint64_t *run) {
  const __m256d rounder = _mm256_set1_pd(ROUNDER);
  int64_t q0 = 0;
  for (; q0 + CSR_CHUNK <= bc; q0 += CSR_CHUNK) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t k = k0; k < k1; k++) {
      const __m256d v = _mm256_set1_pd((values ? (double)values[k] : 1.0) * scale);
      const float *bj = b + (int64_t)indices[k] * ldb + q0;
      const __m256d t0 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bj)), rounder);
      const __m256d t1 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bj + 4)), rounder);
      const __m256d t2 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bj + 8)), rounder);
      const __m256d t3 = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bj + 12)), rounder);
      acc0 = _mm256_add_epi64(acc0, _mm256_castpd_si256(t0));
      acc1 = _mm256_add_epi64(acc1, _mm256_castpd_si256(t1));
      acc2 = _mm256_add_epi64(acc2, _mm256_castpd_si256(t2));
      acc3 = _mm256_add_epi64(acc3, _mm256_castpd_si256(t3));
    }
    __m256i *r = (__m256i *)(run + q0);
    _mm256_storeu_si256(r, _mm256_add_epi64(_mm256_loadu_si256(r), acc0));
    _mm256_storeu_si256(r + 1, _mm256_add_epi64(_mm256_loadu_si256(r + 1), acc1));
    _mm256_storeu_si256(r + 2, _mm256_add_epi64(_mm256_loadu_si256(r + 2), acc2));
    _mm256_storeu_si256(r + 3, _mm256_add_epi64(_mm256_loadu_si256(r + 3), acc3));
  }
  for (; q0 + VEC <= bc; q0 += VEC) {
    __m256i acc = _mm256_setzero_si256();
    for (int64_t k = k0; k < k1; k++) {
      const __m256d v = _mm256_set1_pd((values ? (double)values[k] : 1.0) * scale);
      const float *bj = b + (int64_t)indices[k] * ldb + q0;
      const __m256d t = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(bj)), rounder);
      acc = _mm256_add_epi64(acc, _mm256_castpd_si256(t));
    }
    __m256i *r = (__m256i *)(run + q0);
    _mm256_storeu_si256(r, _mm256_add_epi64(_mm256_loadu_si256(r), acc));
  }
  if (q0 == bc) return;
  /* The last 1 to 3 columns through a masked load (the masked lanes are
   * not read, and their zeros are not stored). */
  const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32((int)(bc - q0)), _mm_setr_epi32(0, 1, 2, 3));
  __m256i acc = _mm256_setzero_si256();
  for (int64_t k = k0; k < k1; k++) {
    const __m256d v = _mm256_set1_pd((values ? (double)values[k] : 1.0) * scale);
    const float *bj = b + (int64_t)indices[k] * ldb + q0;
    const __m256d t = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_maskload_ps(bj, mask)), rounder);
    acc = _mm256_add_epi64(acc, _mm256_castpd_si256(t));
  }
  uint64_t tail[VEC];
  _mm256_storeu_si256((__m256i *)tail, acc);
  for (int64_t q = q0; q < bc; q++) run[q] += tail[q - q0];
}
#endif

/* The widest csr_run this CPU runs. */
static void csr_run_any(int64_t k0, int64_t k1, const int32_t *indices, const float *values,
                        double scale, const float *b, int64_t bc, int64_t ldb, uint64_t *run,
                        int avx2) {
#if defined(__x86_64__)
  if (avx2) {
    csr_run_avx2(k0, k1, indices, values, scale, b, bc, ldb, run);
    return;
  }
#endif
  (void)avx2;
  csr_run(k0, k1, indices, values, scale, b, bc, ldb, run);
}

void halo_cpu_exact_csr(const int64_t *indptr, const int32_t *indices, const float *values,
                        int64_t rows, const float *b, int64_t bc, int64_t ldb, int e, int threads,
                        void *work, int64_t *acc) {
  const double scale = ldexp(1.0, -e);
  uint64_t base;
  memcpy(&base, &ROUNDER, sizeof base);
  if (rows == 0 || bc == 0) return;
#if defined(__x86_64__)
  const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  const int avx2 = 0;
#endif
#pragma omp parallel num_threads(threads) if (indptr[rows] - indptr[0] >= (1 << 14))
  {
    char *mine = (char *)work + (size_t)omp_get_thread_num() * csr_thread_bytes(bc);
    i128 *sum = (i128 *)mine;
    uint64_t *run = (uint64_t *)(mine + (size_t)bc * sizeof(i128));
#pragma omp for schedule(dynamic, 64)
    for (int64_t p = 0; p < rows; p++) {
      if (indptr[p + 1] - indptr[p] <= BLOCK_TERMS) { /* one run: no __int128 */
        const uint64_t offset = (uint64_t)(indptr[p + 1] - indptr[p]) * base;
        memset(run, 0, (size_t)bc * sizeof *run);
        csr_run_any(indptr[p], indptr[p + 1], indices, values, scale, b, bc, ldb, run, avx2);
        for (int64_t q = 0; q < bc; q++)
          to_limbs64((int64_t)(run[q] - offset), acc + (p * bc + q) * HALO_EXACT_LIMBS);
        continue;
      }
      memset(sum, 0, (size_t)bc * sizeof *sum);
      for (int64_t k0 = indptr[p]; k0 < indptr[p + 1]; k0 += BLOCK_TERMS) {
        const int64_t k1 = indptr[p + 1] - k0 < BLOCK_TERMS ? indptr[p + 1] : k0 + BLOCK_TERMS;
        const uint64_t offset = (uint64_t)(k1 - k0) * base;
        memset(run, 0, (size_t)bc * sizeof *run);
        csr_run_any(k0, k1, indices, values, scale, b, bc, ldb, run, avx2);
        for (int64_t q = 0; q < bc; q++) sum[q] += (int64_t)(run[q] - offset);
      }
      for (int64_t q = 0; q < bc; q++) to_limbs(sum[q], acc + (p * bc + q) * HALO_EXACT_LIMBS);
    }
  }
}
