/* C = A · op(B), computed so that each row of C depends only on that row of
 * A and on B (the contract in halo-kernels.h).
 *
 * Every element is summed in one fixed order, p ascending, each product and
 * each sum rounded to float: acc = acc + a[i, p] · op(B)[p, j].  Vectors run
 * across output columns j, so a lane is one element and the vector width
 * changes nothing but speed; the same holds for the register tile (which
 * rows are computed together), the cache blocks over k and n (a partial sum
 * parked in C and reloaded is the same float), the thread split over rows
 * and the edge tiles.  What would break the contract is a fused
 * multiply-add on one path and not on another, so this file is built with
 * -ffp-contract=off (kernels/CMakeLists.txt) and the AVX clone does not
 * enable FMA: every path rounds the product before the sum.
 */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "halo-kernels.h"

/* On x86-64 the row loop is cloned for AVX and for the baseline (SSE2),
 * chosen at load time.  HALO_GEMM_ROWS_BASELINE builds the baseline alone
 * under another name, for the test that checks that both clones give the
 * same bits (tests/kernels/test-gemm-rows-baseline.c). */
#if defined(HALO_GEMM_ROWS_BASELINE)
#define halo_cpu_gemm_rows halo__cpu_gemm_rows_baseline
#define halo_cpu_gemm_rows_acc halo__cpu_gemm_rows_acc_baseline
#define HALO__GEMM_ROWS_CLONES
#elif defined(__x86_64__)
#define HALO__GEMM_ROWS_CLONES __attribute__((target_clones("avx", "default")))
#else
#define HALO__GEMM_ROWS_CLONES
#endif

/* Eight floats: one AVX register, or two SSE registers in the default
 * clone.  may_alias and aligned(4) let it load from any float address. */
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));

/* The register tile: 6 rows × 2 vectors (16 columns), or 12 rows × 1 vector
 * when the panel is one vector wide (n <= 8).  Either way 12 accumulators,
 * the B vectors and one broadcast fit in the 16 AVX registers. */
enum { VEC = 8, TILE_ROWS = 6, TILE_VECS = 2, NARROW_TILE_ROWS = 12 };

/* A packed panel of op(B): kc rows of the panel's columns rounded up to a
 * multiple of VEC, padded with zeros.  64 KiB, on each thread's stack, so
 * that it stays in L2 while the rows of A stream past it. */
enum { PANEL_FLOATS = 16384, PANEL_COLS = 64 };

/* How many row tiles ahead A is prefetched. */
enum { PREFETCH_TILES = 4 };

/* Each thread gets at least this many multiply-adds (m·n·k / threads), some
 * tens of microseconds of work: below that, waking a thread costs more than
 * it saves. */
static const int64_t THREAD_MIN_WORK = 1 << 20;

/* Rows [0, rows) × vectors [0, vecs) of C (cols valid columns, cols <=
 * VEC·vecs) += A[:, 0:kc] · panel[0:kc, :], or = when `first`.  rows and vecs
 * are constants at every call site, so the loops unroll into registers.
 * When a_ahead is not NULL, the same columns of its first `rows` rows are
 * prefetched, one cache line per step of p. */
static inline __attribute__((always_inline)) void tile(int rows, int vecs, int64_t kc,
                                                       const float *a, int64_t lda,
                                                       const float *panel, int64_t ldp, float *c,
                                                       int64_t ldc, int cols, int first,
                                                       const float *a_ahead) {
  v8 acc[NARROW_TILE_ROWS][TILE_VECS];
  const int full = cols == VEC * vecs;
#pragma GCC unroll 12
  for (int r = 0; r < rows; r++) {
#pragma GCC unroll 2
    for (int v = 0; v < vecs; v++) {
      if (first) {
        acc[r][v] = (v8){0};
      } else if (full) {
        acc[r][v] = *(const v8 *)(c + r * ldc + v * VEC);
      } else {
        /* The edge tile: only the valid columns of C are read. */
        float tmp[VEC] = {0};
        for (int j = v * VEC; j < cols && j < (v + 1) * VEC; j++) tmp[j - v * VEC] = c[r * ldc + j];
        memcpy(&acc[r][v], tmp, sizeof tmp);
      }
    }
  }
  for (int64_t p = 0; p < kc; p++) {
    /* Row p mod 16 at column p: over 16 steps, one line of each of up to 16
     * rows. */
    if (a_ahead && (p & 15) < rows) __builtin_prefetch(a_ahead + (p & 15) * lda + p, 0, 3);
    v8 bv[TILE_VECS];
#pragma GCC unroll 2
    for (int v = 0; v < vecs; v++) bv[v] = *(const v8 *)(panel + p * ldp + v * VEC);
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
      const float ar = a[r * lda + p];
#pragma GCC unroll 2
      for (int v = 0; v < vecs; v++) acc[r][v] = acc[r][v] + ar * bv[v];
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < rows; r++) {
#pragma GCC unroll 2
    for (int v = 0; v < vecs; v++) {
      if (full) {
        *(v8 *)(c + r * ldc + v * VEC) = acc[r][v];
      } else {
        float tmp[VEC];
        memcpy(tmp, &acc[r][v], sizeof tmp);
        for (int j = v * VEC; j < cols && j < (v + 1) * VEC; j++) c[r * ldc + j] = tmp[j - v * VEC];
      }
    }
  }
}

/* tile() with rows and vecs turned into constants: rows <= TILE_ROWS for
 * two vectors, rows <= NARROW_TILE_ROWS for one. */
static inline __attribute__((always_inline)) void tile_any(int rows, int vecs, int64_t kc,
                                                           const float *a, int64_t lda,
                                                           const float *panel, int64_t ldp,
                                                           float *c, int64_t ldc, int cols,
                                                           int first, const float *a_ahead) {
#define HALO__TILE(R, V)                                              \
  case R:                                                             \
    tile(R, V, kc, a, lda, panel, ldp, c, ldc, cols, first, a_ahead); \
    break;
  if (vecs == 2) {
    switch (rows) {
      HALO__TILE(1, 2)
      HALO__TILE(2, 2)
      HALO__TILE(3, 2)
      HALO__TILE(4, 2)
      HALO__TILE(5, 2)
      HALO__TILE(6, 2)
    }
  } else {
    switch (rows) {
      HALO__TILE(1, 1)
      HALO__TILE(2, 1)
      HALO__TILE(3, 1)
      HALO__TILE(4, 1)
      HALO__TILE(5, 1)
      HALO__TILE(6, 1)
      HALO__TILE(7, 1)
      HALO__TILE(8, 1)
      HALO__TILE(9, 1)
      HALO__TILE(10, 1)
      HALO__TILE(11, 1)
      HALO__TILE(12, 1)
    }
  }
#undef HALO__TILE
}

/* panel[p, j] = op(B)[p0 + p, j0 + j] for p < kc, j < cols; 0 for cols <=
 * j < ldp. */
static void pack_panel(int trans_b, const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                       int64_t cols, float *panel, int64_t ldp) {
  if (!trans_b) {
    for (int64_t p = 0; p < kc; p++) {
      memcpy(panel + p * ldp, b + (p0 + p) * ldb + j0, (size_t)cols * sizeof *panel);
      for (int64_t j = cols; j < ldp; j++) panel[p * ldp + j] = 0.0f;
    }
    return;
  }
  /* B is n × k: its row j0 + j is column j of the panel; read along it. */
  for (int64_t j = 0; j < cols; j++) {
    const float *bj = b + (j0 + j) * ldb + p0;
    for (int64_t p = 0; p < kc; p++) panel[p * ldp + j] = bj[p];
  }
  for (int64_t p = 0; p < kc; p++)
    for (int64_t j = cols; j < ldp; j++) panel[p * ldp + j] = 0.0f;
}

/* Rows [r0, r1) of C, by one thread: C = A·op(B), or C += A·op(B) when
 * `acc` (the first cache block then reads C as the later ones do).  Every
 * clone does the same arithmetic (no FMA in any). */
HALO__GEMM_ROWS_CLONES static void gemm_rows_range(int trans_b, int64_t r0, int64_t r1, int64_t n,
                                                   int64_t k, const float *a, int64_t lda,
                                                   const float *b, int64_t ldb, float *c,
                                                   int64_t ldc, int acc) {
  float panel[PANEL_FLOATS] __attribute__((aligned(64)));
  for (int64_t j0 = 0; j0 < n; j0 += PANEL_COLS) {
    const int64_t cols = n - j0 < PANEL_COLS ? n - j0 : PANEL_COLS;
    const int64_t ldp = (cols + VEC - 1) / VEC * VEC;
    const int64_t kc_max = PANEL_FLOATS / ldp;
    for (int64_t p0 = 0; p0 < k; p0 += kc_max) {
      const int64_t kc = k - p0 < kc_max ? k - p0 : kc_max;
      pack_panel(trans_b, b, ldb, p0, kc, j0, cols, panel, ldp);
      const int64_t step = ldp == VEC ? NARROW_TILE_ROWS : TILE_ROWS;
      for (int64_t i = r0; i < r1; i += step) {
        const int rows = (int)(r1 - i < step ? r1 - i : step);
        /* Rows a few tiles ahead, whose A the first column tile prefetches
         * while it computes: one tile takes less time than a load from
         * memory. */
        const float *ahead = i + (PREFETCH_TILES + 1) * step <= r1
                                 ? a + (i + PREFETCH_TILES * step) * lda + p0
                                 : NULL;
        for (int64_t jt = 0; jt < ldp; jt += TILE_VECS * VEC) {
          const int vecs = ldp - jt >= TILE_VECS * VEC ? TILE_VECS : 1;
          const int tile_cols = (int)(cols - jt < VEC * vecs ? cols - jt : VEC * vecs);
          tile_any(rows, vecs, kc, a + i * lda + p0, lda, panel + jt, ldp, c + i * ldc + j0 + jt,
                   ldc, tile_cols, p0 == 0 && !acc, jt == 0 ? ahead : NULL);
        }
      }
    }
  }
}

static void gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *c, int64_t ldc, int acc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!acc)
      for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
    return;
  }
  /* Threads take contiguous runs of whole 6-row tiles, so that most tiles
   * stay full; the split only changes which thread computes a row, never
   * how. */
  const int64_t tiles = (m + TILE_ROWS - 1) / TILE_ROWS;
  int64_t threads = omp_get_max_threads();
  if (threads > tiles) threads = tiles;
  if (threads > m * n * k / THREAD_MIN_WORK) threads = m * n * k / THREAD_MIN_WORK;
  if (threads < 1) threads = 1;
#pragma omp parallel num_threads((int)threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t r0 = tiles * t / nt * TILE_ROWS;
    int64_t r1 = tiles * (t + 1) / nt * TILE_ROWS;
    if (r1 > m) r1 = m;
    if (r0 < r1) gemm_rows_range(trans_b, r0, r1, n, k, a, lda, b, ldb, c, ldc, acc);
  }
}

void halo_cpu_gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float *c, int64_t ldc) {
  gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc, 0);
}

void halo_cpu_gemm_rows_acc(int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                            int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  gemm_rows(trans_b, m, n, k, a, lda, b, ldb, c, ldc, 1);
}
