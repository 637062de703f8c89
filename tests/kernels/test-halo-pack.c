/* The low-bit halo rows (core/halo-quant.h, kernels/cpu-halo-pack.c): the
 * wire sizes, each precision's round-trip error against a double-precision
 * reference of its step, the stochastic rounding's unbiasedness (the mean
 * of many keyed draws), and the keying: the same (key, global id, column)
 * packs the same bytes whichever rank, row order or thread count packs
 * it. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halo-kernels.h"
#include "halo-quant.h"
#include "test-random.h"

enum { ROWS = 257 };

static const int widths[] = {1, 2, 3, 17, 64, 129};
#define NWIDTHS ((int)(sizeof widths / sizeof widths[0]))

Test(halo_pack, row_bytes_by_hand) {
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_FP32, 16), 64);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_BF16, 16), 32);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_FP16, 7), 14);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_INT8, 16), 8 + 16);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_INT4, 7), 8 + 4);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_INT2, 7), 8 + 2);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_INT2, 8), 8 + 2);
  cr_expect_eq(halo_quant_row_bytes(HALO_PREC_INT2, 9), 8 + 3);
}

/* Rows of mixed magnitude: row r spans about 10^(r % 9 - 4), some rows
 * constant, some signed. */
static void fill_rows(float *x, int64_t rows, int64_t cols, uint64_t key) {
  test_fill(x, rows * cols, key, -1.0f, 1.0f);
  for (int64_t r = 0; r < rows; r++) {
    const float mag = powf(10.0f, (float)(r % 9) - 4.0f);
    for (int64_t j = 0; j < cols; j++) {
      float *v = &x[r * cols + j];
      *v = r % 11 == 5 ? 0.25f * mag : r % 3 == 0 ? fabsf(*v) * mag : *v * mag;
    }
  }
}

/* The largest error a precision may make on x in a row spanning [lo, hi]:
 * one step of its grid, computed in double. */
static double step_of(int prec, double x, double lo, double hi) {
  const double a = fabs(x);
  switch (prec) {
  case HALO_PREC_FP32: return 0.0;
  case HALO_PREC_BF16: return a > 0 ? ldexp(1.0, ilogb(a) - 7) : 0.0;
  case HALO_PREC_FP16: return a >= ldexp(1.0, -14) ? ldexp(1.0, ilogb(a) - 10) : ldexp(1.0, -24);
  default: return (hi - lo) / ((1 << halo_quant_bits(prec)) - 1);
  }
}

Test(halo_pack, round_trip_within_one_step) {
  const uint64_t seed = test_seed("halo_pack.round_trip_within_one_step");
  for (int w = 0; w < NWIDTHS; w++) {
    const int64_t cols = widths[w];
    float *x = malloc((size_t)(ROWS * cols) * sizeof *x), *y = malloc((size_t)(ROWS * cols) * sizeof *y);
    uint8_t *wire = malloc((size_t)(ROWS * halo_quant_row_bytes(HALO_PREC_FP32, cols + 8)));
    int32_t *idx = malloc(ROWS * sizeof *idx);
    int64_t *gid = malloc(ROWS * sizeof *gid);
    cr_assert(x && y && wire && idx && gid);
    fill_rows(x, ROWS, cols, test_key(seed, (uint64_t)w));
    for (int64_t i = 0; i < ROWS; i++) {
      idx[i] = (int32_t)((i * 101) % ROWS); /* a permutation: 101 is prime to 257 */
      gid[i] = 3 * idx[i] + 1000;
    }
    for (int prec = 0; prec < HALO_PREC_COUNT; prec++) {
      const uint64_t key = halo_quant_key(seed, 4, 1, prec & 1);
      halo_cpu_quant_pack(wire, x, cols, idx, gid, ROWS, prec, key);
      halo_cpu_quant_unpack(y, wire, cols, ROWS, prec);
      for (int64_t i = 0; i < ROWS; i++) {
        const float *xr = x + (int64_t)idx[i] * cols, *yr = y + i * cols;
        double lo = xr[0], hi = xr[0];
        for (int64_t j = 1; j < cols; j++) {
          lo = fmin(lo, xr[j]);
          hi = fmax(hi, xr[j]);
        }
        for (int64_t j = 0; j < cols; j++) {
          const double step = step_of(prec, xr[j], lo, hi);
          /* The affine map's own float rounding: a few ulps of the row's range. */
          const double slack = 4.0 * FLT_EPSILON * fmax(fabs(lo), fabs(hi));
          const double err = fabs((double)yr[j] - (double)xr[j]);
          cr_assert(err <= step + slack, "%s cols %lld row %lld col %lld: %.9g -> %.9g (step %.3g)",
                    halo_precision_names[prec], (long long)cols, (long long)i, (long long)j, xr[j],
                    yr[j], step);
          if (prec == HALO_PREC_FP32) cr_assert(yr[j] == xr[j]);
        }
      }
    }
    free(x);
    free(y);
    free(wire);
    free(idx);
    free(gid);
  }
}

/* E[decode(encode(x))] = x: the mean over many epochs' keys is within five
 * standard errors (a draw is off by at most one step) of x, for values that
 * sit a third of a step above a grid point, where rounding to nearest
 * would be off by a third of a step. */
Test(halo_pack, keyed_rounding_is_unbiased) {
  const uint64_t seed = test_seed("halo_pack.keyed_rounding_is_unbiased");
  enum { DRAWS = 4000, COLS = 5 };
  /* A row on [0, 1] with values between grid points of every precision. */
  const float x[COLS] = {0.0f, 1.0f, 0.3f + 1.0f / 3.0f / 255.0f, 0.7f + 0.2f / 3.0f, 1.0f / 3.0f};
  int32_t idx[1] = {0};
  int64_t gid[1] = {42};
  for (int prec = 1; prec < HALO_PREC_COUNT; prec++) {
    double mean[COLS] = {0};
    uint8_t wire[64];
    float y[COLS];
    for (int e = 0; e < DRAWS; e++) {
      halo_cpu_quant_pack(wire, x, COLS, idx, gid, 1, prec, halo_quant_key(seed, e, 0, 0));
      halo_cpu_quant_unpack(y, wire, COLS, 1, prec);
      for (int j = 0; j < COLS; j++) mean[j] += y[j] / (double)DRAWS;
    }
    for (int j = 0; j < COLS; j++) {
      const double step = step_of(prec, x[j], 0.0, 1.0);
      const double bound = 5.0 * step / sqrt((double)DRAWS) + 1e-6;
      cr_expect(fabs(mean[j] - x[j]) <= bound, "%s col %d: mean %.9g of %.9g (bound %.3g)",
                halo_precision_names[prec], j, mean[j], x[j], bound);
    }
  }
}

/* The bytes of a row depend on (key, global id, values) only: packing the
 * rows in another order, as another rank would, or on another number of
 * threads gives each row the same bytes; another key gives others. */
Test(halo_pack, keyed_by_global_id_not_by_rank_or_threads) {
  const uint64_t seed = test_seed("halo_pack.keyed_by_global_id_not_by_rank_or_threads");
  enum { N = 4096, COLS = 33 };
  float *x = malloc(N * COLS * sizeof *x);
  int32_t *fwd = malloc(N * sizeof *fwd), *rev = malloc(N * sizeof *rev);
  int64_t *gf = malloc(N * sizeof *gf), *gr = malloc(N * sizeof *gr);
  const int64_t rb = halo_quant_row_bytes(HALO_PREC_FP32, COLS); /* the widest here */
  uint8_t *a = malloc((size_t)(N * rb)), *b = malloc((size_t)(N * rb)), *c = malloc((size_t)(N * rb));
  cr_assert(x && fwd && rev && gf && gr && a && b && c);
  fill_rows(x, N, COLS, test_key(seed, 9));
  for (int i = 0; i < N; i++) {
    fwd[i] = i;
    rev[i] = N - 1 - i;
    gf[i] = 7919LL * i;
    gr[i] = 7919LL * (N - 1 - i);
  }
  for (int prec = 1; prec < HALO_PREC_COUNT; prec++) {
    const int64_t bytes = halo_quant_row_bytes(prec, COLS);
    const uint64_t key = halo_quant_key(seed, 2, 1, 1);
    omp_set_num_threads(1);
    halo_cpu_quant_pack(a, x, COLS, fwd, gf, N, prec, key);
    omp_set_num_threads(2);
    halo_cpu_quant_pack(b, x, COLS, rev, gr, N, prec, key);
    for (int i = 0; i < N; i++)
      cr_assert(memcmp(a + (int64_t)i * bytes, b + (int64_t)(N - 1 - i) * bytes, (size_t)bytes) == 0,
                "%s: row %d packs differently in another order or thread count",
                halo_precision_names[prec], i);
    halo_cpu_quant_pack(c, x, COLS, fwd, gf, N, prec, halo_quant_key(seed, 3, 1, 1));
    cr_expect(memcmp(a, c, (size_t)(N * bytes)) != 0, "%s: another epoch's key rounds the same",
              halo_precision_names[prec]);
  }
  free(x);
  free(fwd);
  free(rev);
  free(gf);
  free(gr);
  free(a);
  free(b);
  free(c);
}

/* Large magnitudes: fp16 saturates at 65504 instead of overflowing, bf16
 * never rounds a finite value to inf. */
Test(halo_pack, no_overflow_to_inf) {
  const float x[4] = {1e6f, -7e4f, 3.3e38f, -FLT_MAX};
  int32_t idx[1] = {0};
  int64_t gid[1] = {5};
  uint8_t wire[64];
  float y[4];
  halo_cpu_quant_pack(wire, x, 2, idx, gid, 1, HALO_PREC_FP16, 99);
  halo_cpu_quant_unpack(y, wire, 2, 1, HALO_PREC_FP16);
  cr_expect(y[0] == 65504.0f && y[1] == -65504.0f, "fp16: %g %g", y[0], y[1]);
  for (uint64_t k = 0; k < 64; k++) {
    halo_cpu_quant_pack(wire, x, 4, idx, gid, 1, HALO_PREC_BF16, k);
    halo_cpu_quant_unpack(y, wire, 4, 1, HALO_PREC_BF16);
    for (int j = 0; j < 4; j++) cr_assert(isfinite(y[j]), "bf16 key %llu col %d: %g", (unsigned long long)k, j, y[j]);
  }
}
