/* Exact sums over rows on a fixed-point grid (halo-exact.h).
 *
 * A term t = a·b (two floats, exact in double) scaled by 2^-e is below
 * 2^45 in magnitude and is rounded once to an integer, the same on every
 * thread and rank: the dense sums round it down or up as its row draws
 * (halo_exact_row_up; the tiles below say how), the CSR sums to the
 * nearest, ties to even, by adding 1.5·2^52 (the low bits of the double
 * then hold the integer, with or without FMA contraction: a·b is exact
 * either way).  The integers are summed in int64 runs, the runs in
 * __int128, and those into the limbs.  Integer sums do not depend on their
 * order, so neither does the result.
 */
#include <fenv.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu-parallel.h"
#include "halo-exact.h"

typedef __int128 i128;

enum { BLOCK_TERMS = HALO_EXACT_BLOCK_TERMS };

/* 1.5·2^52: the doubles within 2^51 of it are the integers, so x +
 * ROUNDER, for |x| <= 2^51, holds x rounded to an integer in its low bits. */
static const double ROUNDER = 6755399441055744.0;

int halo_exact_exponent(double bound) {
  if (!(bound > 0.0) || !isfinite(bound)) return 0;
  return ilogb(bound) + 1 - HALO_EXACT_TERM_BITS;
}

int halo_exact_exponent_terms(double bound, int64_t terms) {
  if (!(bound > 0.0) || !isfinite(bound)) return 0;
  int bits = 0;
  while (bits < 63 && (terms >> bits) > 0) bits++;
  /* terms · 2^(HALO_EXACT_TERM_BITS - coarse) <= 2^(bits + 45 - coarse) <= 2^63 */
  const int room = 63 - HALO_EXACT_TERM_BITS;
  const int coarse = bits > room ? bits - room : 0;
  return ilogb(bound) + 1 - HALO_EXACT_TERM_BITS + coarse;
}

/* max over i in [0, n) of |x[i]|'s bits (the sign cleared): they order
 * as |x| does, and every NaN's lie above inf's.  An integer max, which
 * needs SSE4.1 to vectorise: hence the clone. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
uint32_t halo_cpu_max_abs_bits(const float *x, int64_t n) {
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
#pragma omp parallel reduction(max : m) if (n >= HALO_PARALLEL_STREAM)
  {
    int64_t lo = n * omp_get_thread_num() / omp_get_num_threads();
    int64_t hi = n * (omp_get_thread_num() + 1) / omp_get_num_threads();
    m = halo_cpu_max_abs_bits(x + lo, hi - lo);
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

/* The dense sums (halo_cpu_exact_tn) round each term in the direction its
 * row draws (halo_exact_row_up): down to ⌊t⌋ or up to ⌈t⌉.  A thread sums
 * its share of the rows in chunks of CHUNK.  A chunk's rows are packed as
 * doubles, panel by panel of A's and B's columns, A scaled by 2^-e (exact)
 * and B padded with zero columns to whole vectors, the rows that round down
 * first.  A register tile sums its cells' terms in double accumulators
 * that start at ROUNDER = 1.5·2^52, each multiply-add rounding toward −∞
 * or +∞: the doubles of [2^52, 2^53) are the integers, so acc + t rounds
 * to acc + ⌊t⌋ (or acc + ⌈t⌉) exactly, in any order (a product of two
 * doubles that came from floats is exact, so fused or not it rounds once).
 * A chunk has at most CHUNK terms a cell, each below 2^45 in magnitude
 * (halo_exact_exponent), so the accumulator stays in that binade, and its
 * bits less ROUNDER's are the integer, added into the thread's int64 runs,
 * which take RUN_CHUNKS chunks before they are carried into __int128.
 * The AVX-512 and AVX2 tiles round as the mode says, set toward −∞ while
 * they run, and sum the up rows apart with B negated (⌈t⌉ = −⌊−t⌋); the
 * portable loop calls floor and ceil.  One
 * multiply-add a term, against the float GEMM's one a product: half its
 * terms a vector. */
enum {
  CHUNK = 64,       /* rows per chunk: 2^6 terms below 2^45 sum below 2^51 */
  RUN_CHUNKS = 1024, /* 2^11 sums below 2^51 (AVX2: two a chunk) stay below 2^62 */
  PANEL_P = 128,    /* A's columns per panel */
  PANEL_Q = 64,     /* B's columns per panel */
  VEC = 4,          /* doubles per AVX2 vector (and csr_run's) */
  QVEC = 8          /* B's panel is padded to whole 8-double vectors */
};

typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
typedef uint64_t v4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef float v4f __attribute__((vector_size(16), aligned(4), may_alias));
typedef uint32_t u32_alias __attribute__((may_alias)); /* a float's bits */

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }


/* Bytes of one thread's part of the dense workspace: its __int128 sums and
 * int64 runs ((ac + ones) × bc rounded up to whole vectors: with `ones`, a
 * row for the column sums that halo_cpu_exact_tn_ones adds), then its packed A and B
 * panels, its chunk's row positions and its chunk of dropped rows of A
 * (halo_cpu_exact_tn_dropped), in 16-byte multiples, so that the next
 * thread's __int128 stay aligned. */
static size_t tn_thread_bytes(int64_t ac, int64_t bc, int64_t ones) {
  const size_t bytes = (size_t)((ac + ones) * bc) * sizeof(i128) +
                       (size_t)((ac + ones) * round_up(bc, QVEC)) * sizeof(int64_t) +
                       (size_t)CHUNK * (PANEL_P + PANEL_Q) * sizeof(double) +
                       (size_t)CHUNK * sizeof(int32_t) + (size_t)(CHUNK * ac) * sizeof(float);
  return (bytes + 15) / 16 * 16;
}

/* Bytes of one thread's CSR accumulators: __int128 sums, then int64 runs. */
static size_t csr_thread_bytes(int64_t cols) {
  const size_t bytes = (size_t)cols * (sizeof(i128) + sizeof(int64_t));
  return (bytes + 15) / 16 * 16;
}

/* The dense workspace: the shared __int128 totals, then each thread's part. */
static size_t tn_work(int64_t ac, int64_t bc, int64_t ones, int threads) {
  return (size_t)((ac + ones) * bc) * sizeof(i128) +
         (size_t)threads * tn_thread_bytes(ac, bc, ones);
}

size_t halo_cpu_exact_tn_work(int64_t ac, int64_t bc, int threads) {
  return tn_work(ac, bc, 0, threads);
}

size_t halo_cpu_exact_tn_ones_work(int64_t ac, int64_t bc, int threads) {
  return tn_work(ac, bc, 1, threads);
}

size_t halo_cpu_exact_csr_work(int64_t bc, int threads) {
  return (size_t)threads * csr_thread_bytes(bc);
}

/* One thread's view of a dense sum. */
typedef struct tn_job {
  int64_t ac, bc, lda, ldb;
  const float *a, *b; /* a NULL: A[i, 0] = 1 */
  double scale;       /* 2^-e */
  int64_t lrun;       /* run's row length: bc rounded up to QVEC */
  int64_t *run;       /* ac × lrun int64 */
  double *apack, *bpack;
  int32_t *pos; /* a chunk row's packed row: the nd rounding down first, then the rest */
  /* A = dropout(a) where drop_p > 0 (halo_cpu_exact_tn_dropped): the mask of
   * the rows' global ids under drop_key, each chunk's rows dropped into adrop. */
  const int64_t *gid;
  uint64_t drop_key;
  float drop_p;
  float *adrop;
  const float *achunk; /* the current chunk's first row of A (dropped or not) */
  /* With `ones`, the column sums of B too, on their own grid (scale
   * ones_scale), as a row ac of the runs and sums past A's. */
  int ones;
  double ones_scale;
} tn_job;

/* The portable path: run += ⌊t⌋ or ⌈t⌉ of every term of rows [i0, i1),
 * one at a time, in the current rounding mode's indifference (floor and
 * ceil are exact). */
static void tn_plain(const tn_job *j, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; i++) {
    const float *bi = j->b + i * j->ldb;
    const int up = halo_exact_row_up(bi, j->bc);
    for (int64_t p = 0; p < j->ac + j->ones; p++) {
      const double ap = p == j->ac ? j->ones_scale
                        : j->a     ? (double)j->achunk[(i - i0) * j->lda + p] * j->scale
                                   : j->scale;
      int64_t *run = j->run + p * j->lrun;
      for (int64_t q = 0; q < j->bc; q++) {
        const double t = ap * (double)bi[q];
        run[q] += (int64_t)(up ? ceil(t) : floor(t));
      }
    }
  }
}

/* Packs rows [i0, i0 + rows)'s columns [p0, p0 + np) of A (scaled) and
 * [q0, q0 + nq) of B (padded to lbq; the rows packed from nd on negated
 * where `negate`), row r into packed row j->pos[r]: read in their order,
 * which the prefetchers follow. */
static inline __attribute__((always_inline)) void tn_pack_a(const tn_job *j, int64_t rows,
                                                             int64_t p0, int64_t np) {
  const double scale = j->scale;
  for (int64_t r = 0; r < rows; r++) {
    double *restrict dst = j->apack + j->pos[r] * np;
    if (!j->a) {
      dst[0] = scale;
      continue;
    }
    const float *restrict src = j->achunk + r * j->lda + p0;
#pragma omp simd
    for (int64_t p = 0; p < np; p++) dst[p] = (double)src[p] * scale;
  }
}

/* dst[0 .. QVEC) = src[0 .. n) · sign as doubles, then zeros (n <= QVEC):
 * a width's masked load, so that a row of B narrower than a vector (a
 * layer's classes) packs without a scalar loop. */
typedef void tn_load8(const float *src, int64_t n, double sign, double *dst);

static inline __attribute__((always_inline)) void tn_pack_b(const tn_job *j, int64_t i0,
                                                             int64_t rows, int64_t nd, int negate,
                                                             int64_t q0, int64_t nq, int64_t lbq,
                                                             tn_load8 *load8) {
  for (int64_t r = 0; r < rows; r++) {
    const float *src = j->b + (i0 + r) * j->ldb + q0;
    double *dst = j->bpack + j->pos[r] * lbq;
    const double sign = negate && j->pos[r] >= nd ? -1.0 : 1.0;
    for (int64_t q = 0; q < lbq; q += QVEC)
      load8(src + q, nq - q < QVEC ? nq - q : QVEC, sign, dst + q);
  }
}

/* pos[r] = the packed row of row r of a chunk of B (rows × bc, ldb):
 * the rows that round down (halo_exact_row_up) from 0 up, the others from
 * rows - 1 down, without a branch on the direction, which is a coin toss.
 * Returns the rows that round down.  The direction's XOR over the row
 * vectorises here, at the chunk function's width, as the header's loop
 * does not. */
static inline __attribute__((always_inline)) int64_t chunk_positions(const float *b, int64_t ldb,
                                                                      int64_t bc, int64_t rows,
                                                                      int32_t *pos) {
  int32_t nd = 0, top = (int32_t)rows;
  for (int64_t r = 0; r < rows; r++) {
    /* B comes from memory, and the hash leaves few rows in flight: 4 KB ahead. */
    __builtin_prefetch((const char *)(b + r * ldb) + 4096);
    const u32_alias *restrict u = (const u32_alias *)(const void *)(b + r * ldb);
    uint32_t x0 = 0, x1 = 0, x2 = 0, x3 = 0; /* four chains, folded at the end */
    int64_t q = 0;
    for (; q + 4 <= bc; q += 4) {
      x0 ^= u[q];
      x1 ^= u[q + 1];
      x2 ^= u[q + 2];
      x3 ^= u[q + 3];
    }
    for (; q < bc; q++) x0 ^= u[q];
    const int32_t up = (int32_t)(halo_rng_mix(x0 ^ x1 ^ x2 ^ x3) & 1u);
    top -= up;
    pos[r] = nd ^ ((nd ^ top) & -up); /* up ? top : nd */
    nd += 1 - up;
  }
  return nd;
}

/* run += the chunk of rows [i0, i0 + rows) through the tiles of `group`:
 * the rows ordered by direction (nd down, then the rest up), then each
 * panel packed (the up rows' B negated where `negate`) and summed.
 * Inlined into each vector width's chunk function, so that the packing
 * converts with its vectors too. */
typedef void tn_group(int64_t r0, int64_t rmid, int64_t r1, const double *ap, int64_t np,
                      const double *bp, int64_t lbq, int64_t *run, int64_t lrun);

/* A width's column sums of a chunk, each value scaled by `scale`, into
 * `run`, rows at pos, nd down. */
typedef void tn_colsum(const tn_job *j, int64_t i0, int64_t rows, int64_t nd, int64_t *run,
                       double scale);

static inline __attribute__((always_inline)) void tn_chunk(const tn_job *j, int64_t i0,
                                                            int64_t rows, tn_group *group,
                                                            tn_load8 *load8, tn_colsum *colsum,
                                                            int negate) {
  const int64_t nd = chunk_positions(j->b + i0 * j->ldb, j->ldb, j->bc, rows, j->pos);
  if (!j->a) {
    colsum(j, i0, rows, nd, j->run, j->scale);
    return;
  }
  for (int64_t p0 = 0; p0 < j->ac; p0 += PANEL_P) {
    const int64_t np = j->ac - p0 < PANEL_P ? j->ac - p0 : PANEL_P;
    tn_pack_a(j, rows, p0, np);
    for (int64_t q0 = 0; q0 < j->bc; q0 += PANEL_Q) {
      const int64_t nq = j->bc - q0 < PANEL_Q ? j->bc - q0 : PANEL_Q;
      const int64_t lbq = round_up(nq, QVEC);
      tn_pack_b(j, i0, rows, nd, negate, q0, nq, lbq, load8);
      group(0, nd, rows, j->apack, np, j->bpack, lbq, j->run + p0 * j->lrun + q0, j->lrun);
    }
  }
  if (j->ones) /* the rows' directions and B, still in cache, serve the column sums */
    colsum(j, i0, rows, nd, j->run + j->ac * j->lrun, j->ones_scale);
}

#if defined(__x86_64__)
/* The tiles, as in kernels/cpu-gemm.c: TP columns of A × one B vector (8
 * doubles: one AVX-512 vector, two AVX2), full tiles first, then the
 * columns past them in tiles of 4 and 1.  `sign` is +1 for a group that
 * rounds down, -1 for one that rounds up: the run takes its integers with
 * that sign. */
static inline __attribute__((always_inline, target("avx512f"))) void rd_tile512(
    int tp, int64_t r0, int64_t r1, const double *ap, int64_t lap, const double *bp, int64_t lbq,
    int64_t p, int64_t q, int sign, int64_t *run, int64_t lrun) {
  const __m512d base = _mm512_set1_pd(ROUNDER);
  __m512d s[16];
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) s[t] = base;
  for (int64_t r = r0; r < r1; r++) {
    const __m512d bv = _mm512_loadu_pd(bp + r * lbq + q);
    const double *ar = ap + r * lap + p;
#pragma GCC unroll 16
    for (int t = 0; t < tp; t++) s[t] = _mm512_fmadd_pd(_mm512_set1_pd(ar[t]), bv, s[t]);
  }
  const __m512i b = _mm512_castpd_si512(base);
#pragma GCC unroll 16
  for (int t = 0; t < tp; t++) {
    int64_t *cell = run + (p + t) * lrun + q;
    const __m512i v = _mm512_sub_epi64(_mm512_castpd_si512(s[t]), b);
    const __m512i old = _mm512_loadu_si512(cell);
    _mm512_storeu_si512(cell, sign > 0 ? _mm512_add_epi64(old, v) : _mm512_sub_epi64(old, v));
  }
}

/* rd_tile512 over two B vectors (16 columns) at once: TP <= 8 columns of A
 * × 16 of B, 16 accumulators, each of A's values broadcast once for two
 * multiply-adds (10 loads for 16 of them, against 17 for one vector). */
static inline __attribute__((always_inline, target("avx512f"))) void rd_tile512x2(
    int tp, int64_t r0, int64_t r1, const double *ap, int64_t lap, const double *bp, int64_t lbq,
    int64_t p, int64_t q, int sign, int64_t *run, int64_t lrun) {
  const __m512d base = _mm512_set1_pd(ROUNDER);
  __m512d s0[8], s1[8];
#pragma GCC unroll 8
  for (int t = 0; t < tp; t++) s0[t] = s1[t] = base;
  for (int64_t r = r0; r < r1; r++) {
    const __m512d b0 = _mm512_loadu_pd(bp + r * lbq + q);
    const __m512d b1 = _mm512_loadu_pd(bp + r * lbq + q + QVEC);
    const double *ar = ap + r * lap + p;
#pragma GCC unroll 8
    for (int t = 0; t < tp; t++) {
      const __m512d x = _mm512_set1_pd(ar[t]);
      s0[t] = _mm512_fmadd_pd(x, b0, s0[t]);
      s1[t] = _mm512_fmadd_pd(x, b1, s1[t]);
    }
  }
  const __m512i b = _mm512_castpd_si512(base);
#pragma GCC unroll 8
  for (int t = 0; t < tp; t++) {
    int64_t *cell = run + (p + t) * lrun + q;
    const __m512i v0 = _mm512_sub_epi64(_mm512_castpd_si512(s0[t]), b);
    const __m512i v1 = _mm512_sub_epi64(_mm512_castpd_si512(s1[t]), b);
    const __m512i o0 = _mm512_loadu_si512(cell), o1 = _mm512_loadu_si512(cell + QVEC);
    _mm512_storeu_si512(cell, sign > 0 ? _mm512_add_epi64(o0, v0) : _mm512_sub_epi64(o0, v0));
    _mm512_storeu_si512(cell + QVEC,
                        sign > 0 ? _mm512_add_epi64(o1, v1) : _mm512_sub_epi64(o1, v1));
  }
}

static inline __attribute__((always_inline, target("avx512f"))) void rd_group512(
    int64_t r0, int64_t rmid, int64_t r1, const double *ap, int64_t np, const double *bp,
    int64_t lbq, int64_t *run, int64_t lrun) {
  int64_t q = 0;
  for (; q + 2 * QVEC <= lbq; q += 2 * QVEC)
    for (int sign = 1, g = 0; g < 2; g++, sign = -1) {
      const int64_t lo = g ? rmid : r0, hi = g ? r1 : rmid;
      if (lo == hi) continue;
      int64_t p = 0;
      for (; p + 8 <= np; p += 8) rd_tile512x2(8, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
      for (; p + 4 <= np; p += 4) rd_tile512x2(4, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
      for (; p < np; p++) rd_tile512x2(1, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
    }
  for (; q < lbq; q += QVEC)
    for (int sign = 1, g = 0; g < 2; g++, sign = -1) {
      const int64_t lo = g ? rmid : r0, hi = g ? r1 : rmid;
      if (lo == hi) continue;
      int64_t p = 0;
      for (; p + 16 <= np; p += 16) rd_tile512(16, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
      for (; p + 4 <= np; p += 4) rd_tile512(4, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
      for (; p < np; p++) rd_tile512(1, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
    }
}

static inline __attribute__((always_inline, target("avx512f"))) __m512d ld8_512(const float *src,
                                                                             int64_t n) {
  const __mmask16 m = (__mmask16)((1u << n) - 1u);
  return _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(m, src)));
}

static inline __attribute__((always_inline, target("avx512f"))) void load8_512(const float *src,
                                                                             int64_t n,
                                                                             double sign,
                                                                             double *dst) {
  _mm512_storeu_pd(dst, _mm512_mul_pd(ld8_512(src, n), _mm512_set1_pd(sign)));
}

/* The column sums without packing or tiles: for each vector of columns,
 * two accumulators from ROUNDER, one a direction; a row's values (scaled
 * by 2^-e, negated for up) go into the one its direction draws and 0 into
 * the other, which changes nothing; the up sums are subtracted. */
static inline __attribute__((always_inline, target("avx512f"))) void colsum512(
    const tn_job *j, int64_t i0, int64_t rows, int64_t nd, int64_t *run, double scale) {
  const __m512d base = _mm512_set1_pd(ROUNDER);
  for (int64_t q = 0; q < j->bc; q += QVEC) {
    const int64_t n = j->bc - q < QVEC ? j->bc - q : QVEC;
    __m512d down = base, up = base;
    for (int64_t r = 0; r < rows; r++) {
      const __m512d v = ld8_512(j->b + (i0 + r) * j->ldb + q, n);
      const int is_up = j->pos[r] >= nd;
      down = _mm512_fmadd_pd(v, _mm512_set1_pd(is_up ? 0.0 : scale), down);
      up = _mm512_fmadd_pd(v, _mm512_set1_pd(is_up ? -scale : 0.0), up);
    }
    int64_t *cell = run + q;
    const __m512i sum = _mm512_sub_epi64(_mm512_castpd_si512(down), _mm512_castpd_si512(up));
    _mm512_storeu_si512(cell, _mm512_add_epi64(_mm512_loadu_si512(cell), sum));
  }
}

static inline __attribute__((always_inline, target("avx2,fma"))) void rd_tile256(
    int tp, int64_t r0, int64_t r1, const double *ap, int64_t lap, const double *bp, int64_t lbq,
    int64_t p, int64_t q, int sign, int64_t *run, int64_t lrun) {
  const __m256d base = _mm256_set1_pd(ROUNDER);
  __m256d s0[4], s1[4];
#pragma GCC unroll 4
  for (int t = 0; t < tp; t++) s0[t] = s1[t] = base;
  for (int64_t r = r0; r < r1; r++) {
    const __m256d b0 = _mm256_loadu_pd(bp + r * lbq + q);
    const __m256d b1 = _mm256_loadu_pd(bp + r * lbq + q + VEC);
    const double *ar = ap + r * lap + p;
#pragma GCC unroll 4
    for (int t = 0; t < tp; t++) {
      const __m256d x = _mm256_broadcast_sd(ar + t);
      s0[t] = _mm256_fmadd_pd(x, b0, s0[t]);
      s1[t] = _mm256_fmadd_pd(x, b1, s1[t]);
    }
  }
  const __m256i b = _mm256_castpd_si256(base);
#pragma GCC unroll 4
  for (int t = 0; t < tp; t++) {
    __m256i *cell = (__m256i *)(run + (p + t) * lrun + q);
    const __m256i v0 = _mm256_sub_epi64(_mm256_castpd_si256(s0[t]), b);
    const __m256i v1 = _mm256_sub_epi64(_mm256_castpd_si256(s1[t]), b);
    const __m256i o0 = _mm256_loadu_si256(cell), o1 = _mm256_loadu_si256(cell + 1);
    _mm256_storeu_si256(cell, sign > 0 ? _mm256_add_epi64(o0, v0) : _mm256_sub_epi64(o0, v0));
    _mm256_storeu_si256(cell + 1, sign > 0 ? _mm256_add_epi64(o1, v1) : _mm256_sub_epi64(o1, v1));
  }
}

/* AVX2 rounds as the mode says (toward −∞, set by tn_share): the up
 * group, B negated, is summed apart and subtracted. */
static inline __attribute__((always_inline, target("avx2,fma"))) void rd_group256(
    int64_t r0, int64_t rmid, int64_t r1, const double *ap, int64_t np, const double *bp,
    int64_t lbq, int64_t *run, int64_t lrun) {
  for (int64_t q = 0; q < lbq; q += QVEC)
    for (int sign = 1, g = 0; g < 2; g++, sign = -1) {
      const int64_t lo = g ? rmid : r0, hi = g ? r1 : rmid;
      if (lo == hi) continue;
      int64_t p = 0;
      for (; p + 4 <= np; p += 4) rd_tile256(4, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
      for (; p < np; p++) rd_tile256(1, lo, hi, ap, np, bp, lbq, p, q, sign, run, lrun);
    }
}

static inline __attribute__((always_inline, target("avx2,fma"))) void ld8_256(const float *src,
                                                                            int64_t n,
                                                                            __m256d *lo,
                                                                            __m256d *hi) {
  static const int32_t ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const __m256 v = _mm256_maskload_ps(src, _mm256_loadu_si256((const __m256i *)(ramp + 8 - n)));
  *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

static inline __attribute__((always_inline, target("avx2,fma"))) void load8_256(const float *src,
                                                                              int64_t n,
                                                                              double sign,
                                                                              double *dst) {
  __m256d lo, hi;
  ld8_256(src, n, &lo, &hi);
  const __m256d s = _mm256_set1_pd(sign);
  _mm256_storeu_pd(dst, _mm256_mul_pd(lo, s));
  _mm256_storeu_pd(dst + VEC, _mm256_mul_pd(hi, s));
}

static inline __attribute__((always_inline, target("avx2,fma"))) void colsum256(
    const tn_job *j, int64_t i0, int64_t rows, int64_t nd, int64_t *run, double scale) {
  const __m256d base = _mm256_set1_pd(ROUNDER);
  for (int64_t q = 0; q < j->bc; q += QVEC) {
    const int64_t n = j->bc - q < QVEC ? j->bc - q : QVEC;
    __m256d down0 = base, down1 = base, up0 = base, up1 = base;
    for (int64_t r = 0; r < rows; r++) {
      __m256d lo, hi;
      ld8_256(j->b + (i0 + r) * j->ldb + q, n, &lo, &hi);
      const int is_up = j->pos[r] >= nd;
      const __m256d sd = _mm256_set1_pd(is_up ? 0.0 : scale);
      const __m256d su = _mm256_set1_pd(is_up ? -scale : 0.0);
      down0 = _mm256_fmadd_pd(lo, sd, down0);
      down1 = _mm256_fmadd_pd(hi, sd, down1);
      up0 = _mm256_fmadd_pd(lo, su, up0);
      up1 = _mm256_fmadd_pd(hi, su, up1);
    }
    __m256i *cell = (__m256i *)(run + q);
    const __m256i s0 = _mm256_sub_epi64(_mm256_castpd_si256(down0), _mm256_castpd_si256(up0));
    const __m256i s1 = _mm256_sub_epi64(_mm256_castpd_si256(down1), _mm256_castpd_si256(up1));
    _mm256_storeu_si256(cell, _mm256_add_epi64(_mm256_loadu_si256(cell), s0));
    _mm256_storeu_si256(cell + 1, _mm256_add_epi64(_mm256_loadu_si256(cell + 1), s1));
  }
}

/* The chunk at each vector width: not inlined into tn_share, whose call
 * to fesetround must come first. */
__attribute__((target("avx512f"), noinline)) static void tn_chunk512(const tn_job *j, int64_t i0,
                                                                     int64_t rows) {
  tn_chunk(j, i0, rows, rd_group512, load8_512, colsum512, 1);
}

__attribute__((target("avx2,fma"), noinline)) static void tn_chunk256(const tn_job *j, int64_t i0,
                                                                      int64_t rows) {
  tn_chunk(j, i0, rows, rd_group256, load8_256, colsum256, 1);
}
#endif

typedef void tn_chunk_fn(const tn_job *j, int64_t i0, int64_t rows);

static halo_cpu_isa tn_isa_limit = HALO_CPU_ISA_AVX512; /* halo_cpu_exact_limit_isa */

static tn_chunk_fn *tn_pick(halo_cpu_isa *isa) {
#if defined(__x86_64__)
  if (tn_isa_limit >= HALO_CPU_ISA_AVX512 && __builtin_cpu_supports("avx512f")) {
    *isa = HALO_CPU_ISA_AVX512;
    return tn_chunk512;
  }
  if (tn_isa_limit >= HALO_CPU_ISA_AVX2 && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma")) {
    *isa = HALO_CPU_ISA_AVX2;
    return tn_chunk256;
  }
#endif
  *isa = HALO_CPU_ISA_PLAIN;
  return NULL;
}

halo_cpu_isa halo_cpu_exact_limit_isa(halo_cpu_isa limit) {
  tn_isa_limit = limit;
  halo_cpu_isa isa;
  tn_pick(&isa);
  return isa;
}

/* sum += the exact sums of rows [lo, hi), with the thread rounding toward
 * −∞ while its tiles run (the portable path rounds by floor and ceil). */
static void tn_share(tn_job *j, int64_t lo, int64_t hi, i128 *sum) {
  halo_cpu_isa isa;
  tn_chunk_fn *chunk = tn_pick(&isa);
  const int64_t nrows = j->ac + j->ones, cells = nrows * j->lrun;
  memset(j->run, 0, (size_t)cells * sizeof *j->run);
  int64_t chunks = 0;
  const int mode = fegetround();
  if (chunk) fesetround(FE_DOWNWARD);
  for (int64_t i0 = lo; i0 < hi; i0 += CHUNK) {
    const int64_t rows = hi - i0 < CHUNK ? hi - i0 : CHUNK;
    if (j->drop_p > 0.0f) { /* this chunk of dropout(A), in the thread's own rows */
      /* The dropout's x · 1/(1-p) rounds to the nearest, as everywhere. */
      if (chunk) fesetround(mode);
      halo_cpu_dropout_block(j->adrop, j->a + i0 * j->lda, rows, j->ac, j->gid + i0, j->drop_key,
                             j->drop_p);
      if (chunk) fesetround(FE_DOWNWARD);
      j->achunk = j->adrop;
    } else {
      j->achunk = j->a ? j->a + i0 * j->lda : NULL;
    }
    if (chunk)
      chunk(j, i0, rows);
    else
      tn_plain(j, i0, i0 + rows);
    if (++chunks == RUN_CHUNKS || i0 + rows >= hi) { /* carry the runs */
      for (int64_t p = 0; p < nrows; p++)
        for (int64_t q = 0; q < j->bc; q++) sum[p * j->bc + q] += j->run[p * j->lrun + q];
      memset(j->run, 0, (size_t)cells * sizeof *j->run);
      chunks = 0;
    }
  }
  if (chunk) fesetround(mode);
}

/* Writes sum v as the cell's limbs, or `packed`, as one int64 (which it
 * fits: halo_exact_exponent_terms's grid). */
static inline void emit(i128 v, int packed, int64_t *cell) {
  if (packed)
    *cell = (int64_t)v;
  else
    to_limbs(v, cell);
}

/* halo_cpu_exact_tn and its twins: `proto` says what to sum; with acc1,
 * B's column sums too, on the grid e1; `packed`: one int64 a sum. */
static void exact_tn_run(const tn_job *proto, int64_t n, int e, int threads, void *work,
                         int64_t *acc, int e1, int64_t *acc1, int packed) {
  const int64_t ac = proto->ac, bc = proto->bc, ones = acc1 != NULL;
  const int64_t cells = (ac + ones) * bc;
  if (ac * bc == 0) return;
  i128 *total = work;
  memset(total, 0, (size_t)cells * sizeof *total);

  /* Row blocks per thread; each thread keeps its sums for every output
   * cell and adds them to the shared total at the end (integers: the order
   * does not matter).  Below 2^20 terms (a few tens of microseconds) one
   * thread: waking the others would cost as much. */
#pragma omp parallel num_threads(threads) if (n * cells >= (1 << 20))
  {
    const int parts = omp_get_num_threads(), part = omp_get_thread_num();
    /* The layout of tn_work: the totals (cells), then each thread's part. */
    char *mine = (char *)work + (size_t)cells * sizeof(i128) +
                 (size_t)part * tn_thread_bytes(ac, bc, ones);
    i128 *sum = (i128 *)mine;
    tn_job j = *proto;
    j.scale = ldexp(1.0, -e);
    j.ones = (int)ones;
    j.ones_scale = ldexp(1.0, -e1);
    j.lrun = round_up(bc, QVEC);
    j.run = (int64_t *)(mine + (size_t)cells * sizeof(i128));
    j.apack = (double *)(j.run + (ac + ones) * j.lrun);
    j.bpack = j.apack + CHUNK * PANEL_P;
    j.pos = (int32_t *)(j.bpack + CHUNK * PANEL_Q);
    j.adrop = (float *)(j.pos + CHUNK);
    int64_t lo, hi;
    share(n, part, parts, &lo, &hi);
    memset(sum, 0, (size_t)cells * sizeof *sum);
    tn_share(&j, lo, hi, sum);
#pragma omp critical(halo_exact_total)
    for (int64_t c = 0; c < cells; c++) total[c] += sum[c];
  }
  const int64_t width = packed ? 1 : HALO_EXACT_LIMBS;
  for (int64_t c = 0; c < ac * bc; c++) emit(total[c], packed, acc + c * width);
  for (int64_t c = ac * bc; c < cells; c++) emit(total[c], packed, acc1 + (c - ac * bc) * width);
}

void halo_cpu_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                       const float *b, int64_t ldb, int e, int threads, void *work, int64_t *acc) {
  halo_cpu_exact_tn_ones(n, ac, bc, a, lda, b, ldb, e, threads, work, acc, 0, NULL, 0);
}

void halo_cpu_exact_tn_ones(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                            const float *b, int64_t ldb, int e, int threads, void *work,
                            int64_t *acc, int e1, int64_t *acc1, int packed) {
  const tn_job j = {.ac = ac, .bc = bc, .lda = lda, .ldb = ldb, .a = a, .b = b};
  exact_tn_run(&j, n, e, threads, work, acc, e1, a ? acc1 : NULL, packed);
}

void halo_cpu_exact_tn_dropped(int64_t n, int64_t ac, int64_t bc, const float *x,
                               const int64_t *global_id, uint64_t key, float p, const float *b,
                               int64_t ldb, int e, int threads, void *work, int64_t *acc, int e1,
                               int64_t *acc1, int packed) {
  const tn_job j = {.ac = ac, .bc = bc, .lda = ac, .ldb = ldb, .a = x, .b = b,
                    .gid = global_id, .drop_key = key, .drop_p = p};
  exact_tn_run(&j, n, e, threads, work, acc, e1, acc1, packed);
}

/* run[q] += the bits of v_k · B[indices[k], q] + ROUNDER, as uint64, for
 * k in [k0, k1) and q in [0, bc): the same sums of bit patterns as
 * tn_panel's, which the caller takes the rounder's bits off.  Whole chunks
 * of CSR_CHUNK columns are summed in registers over all k. */
enum { CSR_CHUNK = 4 * VEC };

/* The value of non-zero k, read through perm where there is one
 * (halo_cpu_exact_csr_perm), as a double. */
static inline __attribute__((always_inline)) double csr_value(const float *values,
                                                               const int32_t *perm, int64_t k) {
  return values ? (double)values[perm ? perm[k] : k] : 1.0;
}

#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void csr_run(int64_t k0, int64_t k1, const int32_t *indices, const float *values,
                    const int32_t *perm, double scale, const float *b, int64_t bc, int64_t ldb, uint64_t *run) {
  int64_t q0 = 0;
  for (; q0 + CSR_CHUNK <= bc; q0 += CSR_CHUNK) {
    v4u acc[CSR_CHUNK / VEC] = {{0}};
    for (int64_t k = k0; k < k1; k++) {
      const double v = csr_value(values, perm, k) * scale;
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
    const double v = csr_value(values, perm, k) * scale;
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
                                                           const float *values,
                                                           const int32_t *perm, double scale,
                                                           const float *b, int64_t bc,
                                                           int64_t ldb, uint64_t *run) {
  const __m256d rounder = _mm256_set1_pd(ROUNDER);
  int64_t q0 = 0;
  for (; q0 + CSR_CHUNK <= bc; q0 += CSR_CHUNK) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t k = k0; k < k1; k++) {
      const __m256d v = _mm256_set1_pd(csr_value(values, perm, k) * scale);
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
      const __m256d v = _mm256_set1_pd(csr_value(values, perm, k) * scale);
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
    const __m256d v = _mm256_set1_pd(csr_value(values, perm, k) * scale);
    const float *bj = b + (int64_t)indices[k] * ldb + q0;
    const __m256d t = _mm256_fmadd_pd(v, _mm256_cvtps_pd(_mm_maskload_ps(bj, mask)), rounder);
    acc = _mm256_add_epi64(acc, _mm256_castpd_si256(t));
  }
  uint64_t tail[VEC];
  _mm256_storeu_si256((__m256i *)tail, acc);
  for (int64_t q = q0; q < bc; q++) run[q] += tail[q - q0];
}

/* csr_run at AVX-512's width: two vectors of 8 columns a non-zero, then
 * one, then the last 1 to 7 through a masked load; the same integers. */
__attribute__((target("avx512f"))) static void csr_run_avx512(int64_t k0, int64_t k1,
                                                            const int32_t *indices,
                                                            const float *values,
                                                           const int32_t *perm, double scale,
                                                            const float *b, int64_t bc,
                                                            int64_t ldb, uint64_t *run) {
  const __m512d rounder = _mm512_set1_pd(ROUNDER);
  int64_t q0 = 0;
  for (; q0 + 2 * QVEC <= bc; q0 += 2 * QVEC) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
    for (int64_t k = k0; k < k1; k++) {
      const __m512d v = _mm512_set1_pd(csr_value(values, perm, k) * scale);
      const float *bj = b + (int64_t)indices[k] * ldb + q0;
      const __m512d t0 = _mm512_fmadd_pd(v, _mm512_cvtps_pd(_mm256_loadu_ps(bj)), rounder);
      const __m512d t1 = _mm512_fmadd_pd(v, _mm512_cvtps_pd(_mm256_loadu_ps(bj + QVEC)), rounder);
      acc0 = _mm512_add_epi64(acc0, _mm512_castpd_si512(t0));
      acc1 = _mm512_add_epi64(acc1, _mm512_castpd_si512(t1));
    }
    uint64_t *r = run + q0;
    _mm512_storeu_si512(r, _mm512_add_epi64(_mm512_loadu_si512(r), acc0));
    _mm512_storeu_si512(r + QVEC, _mm512_add_epi64(_mm512_loadu_si512(r + QVEC), acc1));
  }
  for (; q0 < bc; q0 += QVEC) {
    const int64_t n = bc - q0 < QVEC ? bc - q0 : QVEC;
    __m512i acc = _mm512_setzero_si512();
    for (int64_t k = k0; k < k1; k++) {
      const __m512d v = _mm512_set1_pd(csr_value(values, perm, k) * scale);
      const __m512d t = _mm512_fmadd_pd(v, ld8_512(b + (int64_t)indices[k] * ldb + q0, n), rounder);
      acc = _mm512_add_epi64(acc, _mm512_castpd_si512(t));
    }
    const __mmask8 m = (__mmask8)((1u << n) - 1u);
    uint64_t *r = run + q0;
    _mm512_mask_storeu_epi64(r, m, _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, r), acc));
  }
}
#endif

/* The widest csr_run this CPU runs. */
static void csr_run_any(int64_t k0, int64_t k1, const int32_t *indices, const float *values,
                        const int32_t *perm, double scale, const float *b, int64_t bc, int64_t ldb, uint64_t *run,
                        halo_cpu_isa isa) {
#if defined(__x86_64__)
  if (isa == HALO_CPU_ISA_AVX512) {
    csr_run_avx512(k0, k1, indices, values, perm, scale, b, bc, ldb, run);
    return;
  }
  if (isa == HALO_CPU_ISA_AVX2) {
    csr_run_avx2(k0, k1, indices, values, perm, scale, b, bc, ldb, run);
    return;
  }
#endif
  (void)isa;
  csr_run(k0, k1, indices, values, perm, scale, b, bc, ldb, run);
}

void halo_cpu_exact_csr_perm(const int64_t *indptr, const int32_t *indices, const float *values,
                             const int32_t *perm, int64_t rows, const float *b, int64_t bc,
                             int64_t ldb, int e, int threads, void *work, int64_t *acc,
                             int packed) {
  const double scale = ldexp(1.0, -e);
  uint64_t base;
  memcpy(&base, &ROUNDER, sizeof base);
  if (rows == 0 || bc == 0) return;
  halo_cpu_isa isa;
  tn_pick(&isa); /* the dense sums' width, halo_cpu_exact_limit_isa's too */
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
        csr_run_any(indptr[p], indptr[p + 1], indices, values, perm, scale, b, bc, ldb, run, isa);
        if (packed)
          for (int64_t q = 0; q < bc; q++) acc[p * bc + q] = (int64_t)(run[q] - offset);
        else
          for (int64_t q = 0; q < bc; q++)
            to_limbs64((int64_t)(run[q] - offset), acc + (p * bc + q) * HALO_EXACT_LIMBS);
        continue;
      }
      memset(sum, 0, (size_t)bc * sizeof *sum);
      for (int64_t k0 = indptr[p]; k0 < indptr[p + 1]; k0 += BLOCK_TERMS) {
        const int64_t k1 = indptr[p + 1] - k0 < BLOCK_TERMS ? indptr[p + 1] : k0 + BLOCK_TERMS;
        const uint64_t offset = (uint64_t)(k1 - k0) * base;
        memset(run, 0, (size_t)bc * sizeof *run);
        csr_run_any(k0, k1, indices, values, perm, scale, b, bc, ldb, run, isa);
        for (int64_t q = 0; q < bc; q++) sum[q] += (int64_t)(run[q] - offset);
      }
      for (int64_t q = 0; q < bc; q++)
        emit(sum[q], packed, acc + (p * bc + q) * (packed ? 1 : HALO_EXACT_LIMBS));
    }
  }
}

void halo_cpu_exact_csr(const int64_t *indptr, const int32_t *indices, const float *values,
                        int64_t rows, const float *b, int64_t bc, int64_t ldb, int e, int threads,
                        void *work, int64_t *acc) {
  halo_cpu_exact_csr_perm(indptr, indices, values, NULL, rows, b, bc, ldb, e, threads, work, acc,
                          0);
}
