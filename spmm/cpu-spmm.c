/* Y[r, :] = beta · Y[r, :] + A[r, :] · X on the CPU.
 *
 * Rows are independent, so threads take rows and never share an output.
 * Graph degrees are skewed (a hub may have 10^5 neighbours next to rows with
 * one), so rows are handed out dynamically in small chunks rather than in
 * equal static blocks.
 *
 * Each row is computed in column tiles of at most 4·TILE_VECS floats whose
 * partial sums live in SSE registers, so Y is written exactly once and read
 * only when beta != 0.  Every tile width is a compile-time constant (the
 * widths 16, 32 and 64 that hidden layers use get their own copies), which
 * lets the compiler unroll the feature loop completely.
 *
 * On large graphs the kernel waits on memory: each nonzero gathers one
 * row of X, from anywhere.  It therefore prefetches X rows about
 * PREFETCH_LINES cache lines ahead, across row boundaries, to keep many
 * misses in flight.  On a graph ordered for locality most gathers hit the
 * cache, and then the instructions per nonzero count as much, so the inner
 * loop is specialised until it holds no test it can do without (spmm_shape).
 * (bench/spmm-stream.c measures how close this comes to STREAM.)
 */
#include <stddef.h>
#include <stdint.h>

#include <omp.h>

#include "halo-spmm.h"

/* Accumulator registers per column tile: 8 × 4 floats = 32 columns, which
 * leaves half of the 16 SSE registers for loads and the broadcast value. */
enum { TILE_VECS = 8 };

/* Rows per dynamic-scheduling chunk, at most: large enough that the
 * prefetcher's start-up at each chunk (it begins a distance behind) and the
 * shared counter cost little, small enough that a hub row cannot leave
 * threads idle.  At width 16 on a part of a community-ordered graph,
 * chunks of 32, 128 and 512 rows ran at 15.3, 17.6 and 19.7 GB/s
 * (2026-11-30).  A small product gets chunks of a quarter of its rows per
 * thread, down to MIN_CHUNK, so that every thread has work. */
enum { CHUNK = 256, MIN_CHUNK = 16 };

/* Prefetching: the cache lines to keep in flight per thread, and the most
 * columns of an X row that are prefetched (64 floats: 4 cache lines).  The
 * distance in nonzeros follows: PREFETCH_LINES / (lines per X row), and
 * it runs across row boundaries.  When most gathers hit cache (a graph
 * ordered for locality) only the misses among those lines are in flight, so
 * the distance is set by that case: 64 lines ran 10% faster than 32 at
 * width 64 on a community-ordered graph and no slower on a uniformly random
 * one; 128 was no faster than 64 at widths 16 and 64, and slower on random
 * columns at 64 (docs/benchmarks.md, "SpMM vs STREAM (CPU)"). */
#ifndef HALO_SPMM_PREFETCH_LINES /* a build-time knob for tuning runs */
#define HALO_SPMM_PREFETCH_LINES 64
#endif
enum { PREFETCH_LINES = HALO_SPMM_PREFETCH_LINES, PREFETCH_FLOATS = 64 };

#define SPMM_INLINE static inline __attribute__((always_inline))

/* Four floats operated on as one value: one SSE register, the x86-64
 * baseline (wider GCC vectors are split through memory on that baseline).
 * The _u variant may point at any float. */
typedef float vf4 __attribute__((vector_size(16)));
typedef float vf4_u __attribute__((vector_size(16), aligned(4), may_alias));

/* One call's operands.  Each thread copies them into a local first: Y is
 * stored through a may_alias type, and only a local that nothing points to
 * is known to survive those stores in registers. */
typedef struct spmm_args {
  const int64_t *indptr;
  const int32_t *indices;
  const float *values; /* NULL: every value is 1 */
  const float *x;
  int64_t ldx;
  float *y;
  int64_t ldy;
  float beta;
  const int32_t *rows; /* the row list, NULL: consecutive rows */
} spmm_args;

/* What the inner loop is specialised on.  Every field is a compile-time
 * constant at the calls that matter (the common widths on line-aligned X),
 * so that per nonzero the loop does only its work: an index load, one
 * predictable compare and a prefetch for the nonzero ahead; an index load,
 * a value and ncols/4 loads and multiply-adds for this one.  At width 16
 * that is about 25 instructions.  The version before tested the values
 * pointer and looped over the prefetch width for every nonzero, and
 * reloaded its arguments from memory: about 45, and 1.16-1.27x the time on
 * the community-ordered 1M-row graph (docs/benchmarks.md, 2026-11-30). */
typedef struct spmm_shape {
  int64_t ncols;     /* columns of Y computed */
  int values;        /* A has values (else all ones) */
  int listed;        /* rows come from a list (else consecutive) */
  int64_t pf_floats; /* columns of an X row prefetched: min(ncols, PREFETCH_FLOATS) */
  int64_t pf_lines;  /* cache lines from the row's start: ceil(pf_floats / 16) */
  int pf_tail;       /* X rows may start inside a line: prefetch their last float too */
} spmm_shape;

/* Asks for the cache lines of the first sh.pf_floats columns of the X row
 * at xr: one per 16 floats from its start and, with pf_tail, the line of
 * its last float (a row that is not line-aligned spans one more line).  At
 * width 16 on aligned rows that is one prefetch per nonzero. */
SPMM_INLINE void prefetch_x_row(const float *xr, const spmm_shape sh) {
  for (int64_t l = 0; l < sh.pf_lines; l++) __builtin_prefetch(xr + 16 * l, 0, 3);
  if (sh.pf_tail) __builtin_prefetch(xr + sh.pf_floats - 1, 0, 3);
}

/* The prefetcher's place in a thread's chunk of rows: it runs
 * PREFETCH_LINES / pf_lines nonzeros ahead of the multiply, across row
 * boundaries, so that short rows (a GCN's mean degree is often below the
 * distance) keep as many misses in flight as long ones.  For consecutive
 * rows the chunk's nonzeros are one range and [k, k_end) spans the whole
 * chunk; for a row list it spans one row and the cursor steps to the next. */
typedef struct pf_cursor {
  int64_t k, k_end; /* next nonzero to prefetch, end of the current range */
  int64_t i, i_end; /* next entry of the row list, end of the chunk */
} pf_cursor;

/* Prefetches the X row of the cursor's nonzero and moves it on one. */
SPMM_INLINE void pf_step(const spmm_args *args, pf_cursor *pf, const spmm_shape sh) {
  if (sh.listed) {
    while (pf->k == pf->k_end) {
      if (pf->i == pf->i_end) return;
      const int64_t r = args->rows[pf->i++];
      pf->k = args->indptr[r];
      pf->k_end = args->indptr[r + 1];
    }
  } else if (pf->k == pf->k_end) {
    return;
  }
  prefetch_x_row(args->x + (int64_t)args->indices[pf->k++] * args->ldx, sh);
}

/* Y[r, c0 : c0 + w] (=|+=) Σ_k values[k] · X[indices[k], c0 : c0 + w] over
 * row r's nonzeros [lo, hi), for w = 4·nv + nt columns (nt < 4) whose sums
 * live in registers.  nv and nt are constants at every call, so the loops
 * over them unroll away.  With `prefetch` (the row's first tile), the
 * cursor moves one nonzero on for every nonzero multiplied. */
SPMM_INLINE void row_tile(const spmm_args *args, int64_t r, int64_t lo, int64_t hi, int64_t c0,
                          pf_cursor *pf, const spmm_shape sh, const int prefetch, const int nv,
                          const int nt) {
  const int32_t *restrict indices = args->indices;
  const float *restrict values = args->values;
  const int64_t ldx = args->ldx;
  const float *x = args->x + c0;
  float *yr = args->y + r * args->ldy + c0;
  vf4 acc[TILE_VECS] = {{0}};
  float tail[3] = {0};

  for (int64_t k = lo; k < hi; k++) {
    if (prefetch) pf_step(args, pf, sh);
    const float *xr = x + (int64_t)indices[k] * ldx;
    const vf4_u *xv = (const vf4_u *)xr;
    if (sh.values) {
      const float v = values[k];
#pragma GCC unroll 8
      for (int j = 0; j < nv; j++) acc[j] += v * xv[j];
#pragma GCC unroll 3
      for (int j = 0; j < nt; j++) tail[j] += v * xr[4 * nv + j];
    } else {
#pragma GCC unroll 8
      for (int j = 0; j < nv; j++) acc[j] += xv[j];
#pragma GCC unroll 3
      for (int j = 0; j < nt; j++) tail[j] += xr[4 * nv + j];
    }
  }

  vf4_u *out = (vf4_u *)yr;
  const float beta = args->beta;
  if (beta == 0.0f) {
    /* Y is never read: it may hold anything, NaN included. */
#pragma GCC unroll 8
    for (int j = 0; j < nv; j++) out[j] = acc[j];
#pragma GCC unroll 3
    for (int j = 0; j < nt; j++) yr[4 * nv + j] = tail[j];
  } else {
#pragma GCC unroll 8
    for (int j = 0; j < nv; j++) out[j] = beta * out[j] + acc[j];
#pragma GCC unroll 3
    for (int j = 0; j < nt; j++) yr[4 * nv + j] = beta * yr[4 * nv + j] + tail[j];
  }
}

/* One case of the switch below: a last tile of w < 4·TILE_VECS columns,
 * which prefetches when it is also the first. */
#define SPMM_LAST_TILE(w)                                             \
  case w:                                                             \
    row_tile(args, r, lo, hi, c0, pf, sh, c0 == 0, (w) / 4, (w) % 4); \
    break;

/* Y[r, :] for one row.  Inlined with a constant width for the common
 * widths, where the tile loop and the switch fold away.  Only the first
 * column tile prefetches (up to PREFETCH_FLOATS columns): later tiles find
 * the rows in L1/L2 or behind the hardware's line prefetcher; prefetching
 * them as well measured no faster at width 130. */
SPMM_INLINE void spmm_row(const spmm_args *args, int64_t r, pf_cursor *pf, const spmm_shape sh) {
  const int64_t lo = args->indptr[r];
  const int64_t hi = args->indptr[r + 1];
  const int64_t ncols = sh.ncols;
  int64_t c0 = 0;
  if (ncols >= 4 * TILE_VECS) {
    row_tile(args, r, lo, hi, 0, pf, sh, 1, TILE_VECS, 0);
    for (c0 = 4 * TILE_VECS; c0 + 4 * TILE_VECS <= ncols; c0 += 4 * TILE_VECS)
      row_tile(args, r, lo, hi, c0, pf, sh, 0, TILE_VECS, 0);
  }
  _Static_assert(TILE_VECS == 8, "the switch lists every width below 4 * TILE_VECS");
  switch (ncols - c0) {
    /* clang-format off */
    SPMM_LAST_TILE(1) SPMM_LAST_TILE(2) SPMM_LAST_TILE(3) SPMM_LAST_TILE(4)
    SPMM_LAST_TILE(5) SPMM_LAST_TILE(6) SPMM_LAST_TILE(7) SPMM_LAST_TILE(8)
    SPMM_LAST_TILE(9) SPMM_LAST_TILE(10) SPMM_LAST_TILE(11) SPMM_LAST_TILE(12)
    SPMM_LAST_TILE(13) SPMM_LAST_TILE(14) SPMM_LAST_TILE(15) SPMM_LAST_TILE(16)
    SPMM_LAST_TILE(17) SPMM_LAST_TILE(18) SPMM_LAST_TILE(19) SPMM_LAST_TILE(20)
    SPMM_LAST_TILE(21) SPMM_LAST_TILE(22) SPMM_LAST_TILE(23) SPMM_LAST_TILE(24)
    SPMM_LAST_TILE(25) SPMM_LAST_TILE(26) SPMM_LAST_TILE(27) SPMM_LAST_TILE(28)
    SPMM_LAST_TILE(29) SPMM_LAST_TILE(30) SPMM_LAST_TILE(31)
    default:
      break;
    /* clang-format on */
  }
}

#undef SPMM_LAST_TILE

/* Y for the rows of list entries [i0, i1). */
SPMM_INLINE void spmm_chunk(const spmm_args *shared, int64_t i0, int64_t i1, const spmm_shape sh) {
  const spmm_args args = *shared;
  pf_cursor pf =
      sh.listed ? (pf_cursor){0, 0, i0, i1} : (pf_cursor){args.indptr[i0], args.indptr[i1], i1, i1};
  for (int64_t n = 0; n < PREFETCH_LINES / sh.pf_lines; n++) pf_step(&args, &pf, sh);
  for (int64_t i = i0; i < i1; i++) spmm_row(&args, sh.listed ? args.rows[i] : i, &pf, sh);
}

SPMM_INLINE spmm_shape with_operands(spmm_shape sh, int values, int listed) {
  sh.values = values;
  sh.listed = listed;
  return sh;
}

/* spmm_chunk with `values` and `listed` set from the operands, as
 * constants: each branch inlines its own copy. */
SPMM_INLINE void spmm_chunk_for(const spmm_args *args, int64_t i0, int64_t i1, spmm_shape sh) {
  if (args->values && args->rows) {
    spmm_chunk(args, i0, i1, with_operands(sh, 1, 1));
  } else if (args->values) {
    spmm_chunk(args, i0, i1, with_operands(sh, 1, 0));
  } else if (args->rows) {
    spmm_chunk(args, i0, i1, with_operands(sh, 0, 1));
  } else {
    spmm_chunk(args, i0, i1, with_operands(sh, 0, 0));
  }
}

void halo_spmm_cpu(const halo_csr *a, const float *x, int64_t ldx, int64_t ncols, float beta,
                   float *y, int64_t ldy, const int32_t *rows, int64_t nrows) {
  if (nrows <= 0 || ncols <= 0) return;
  const spmm_args args = {
      .indptr = a->indptr,
      .indices = a->indices,
      .values = a->values,
      .x = x,
      .ldx = ldx,
      .y = y,
      .ldy = ldy,
      .beta = beta,
      .rows = rows,
  };
  const int64_t pf_floats = ncols < PREFETCH_FLOATS ? ncols : PREFETCH_FLOATS;
  const int aligned = (uintptr_t)x % 64 == 0 && ldx % 16 == 0;
  const spmm_shape any = {.ncols = ncols,
                          .pf_floats = pf_floats,
                          .pf_lines = (pf_floats + 15) / 16,
                          .pf_tail = !aligned || pf_floats % 16 != 0};
  int64_t chunk = nrows / (4 * (int64_t)omp_get_max_threads());
  chunk = chunk > CHUNK ? CHUNK : chunk < MIN_CHUNK ? MIN_CHUNK : chunk;
  const int64_t nchunks = (nrows + chunk - 1) / chunk;
  /* The choice sits inside the loop so that each case is its own copy of
   * spmm_chunk with constant shape; it goes the same way for every chunk.
   * The hidden widths on line-aligned X rows get their own copies. */
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < nchunks; c++) {
    const int64_t i0 = c * chunk;
    const int64_t i1 = i0 + chunk < nrows ? i0 + chunk : nrows;
    if (aligned && ncols == 16) {
      spmm_chunk_for(&args, i0, i1, (spmm_shape){.ncols = 16, .pf_floats = 16, .pf_lines = 1});
    } else if (aligned && ncols == 32) {
      spmm_chunk_for(&args, i0, i1, (spmm_shape){.ncols = 32, .pf_floats = 32, .pf_lines = 2});
    } else if (aligned && ncols == 64) {
      spmm_chunk_for(&args, i0, i1, (spmm_shape){.ncols = 64, .pf_floats = 64, .pf_lines = 4});
    } else {
      spmm_chunk_for(&args, i0, i1, any);
    }
  }
}
