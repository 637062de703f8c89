/* Masked losses and their gradients: softmax cross-entropy (one class a
 * node) and binary cross-entropy with logits (multi-label: one binary task
 * per column).
 *
 * Each masked row is computed in double with the maximum subtracted first,
 * so exp never overflows:  lse = max + log Σ_j exp(z_j - max),
 * loss_i = lse - z[label],  softmax_j = exp(z_j - lse).
 * argmax ties go to the lowest column, as in PyTorch.  The softmax's
 * exponentials are halo's own (row_exp), taken for a block of rows at once
 * (xent_rows), whose loop vectorises; the sum over a row's columns runs in
 * 8 partial sums in a fixed order (sums_add), so that every vector width
 * and block gives the same bits.
 *
 * The loss is summed on a fixed-point grid (LOSS_GRID_BITS): each row's loss is
 * rounded once to a multiple of 2^-30 and the integers are added, so the sum
 * does not depend on the thread count, and the sums of several ranks, all
 * multiples of 2^-30, add exactly in double while they stay below 2^23:
 * the reported loss is then the same for any partition
 * (docs/reproducibility.md).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "cpu-exp.h"
#include "cpu-parallel.h"
#include "halo-kernels.h"

/* The loss grid: 2^LOSS_GRID_BITS steps per unit. */
enum { LOSS_GRID_BITS = 30 };

/* e^x for x <= 0 in double (cpu-exp.h), within 2.4 ulps of e^x over
 * [-708, 0] (measured against expl at 2·10^7 points).  0 below -708 (e^x <
 * 2^-1021, lost beside the row maximum's 1 and below any float), NaN for
 * NaN. */
static inline double row_exp(double x) {
  const double lo = -708.0;
  const double xc = x < lo ? lo : (x > 0.0 ? 0.0 : x);
  double scale, em1;
  halo_exp_split(xc, &scale, &em1);
  const double e = (1.0 + em1) * scale;
  return x < lo ? 0.0 : (x == x ? e : x);
}

/* Exponentials taken together: a block of whole rows, or one row's columns
 * in pieces of this many.  Elements of different rows are independent, so a
 * block of short rows keeps the vector unit busy where one row's polynomial,
 * a chain of dependent multiplies and adds, would leave it waiting. */
enum { FLAT = 512 };

/* x[k] = e^(x[k]) for k < n. */
static inline __attribute__((always_inline)) void flat_exp(double *x, int64_t n) {
#pragma omp simd
  for (int64_t k = 0; k < n; k++) x[k] = row_exp(x[k]);
}

/* x[r·cols + j] = e^(z[rows[r], j] - shift[r]) for the nb rows of a block. */
static inline __attribute__((always_inline)) void block_exp(double *x, const float *z,
                                                            const int32_t *rows, int64_t nb,
                                                            int64_t cols, const double *shift) {
  for (int64_t r = 0; r < nb; r++) {
    const float *restrict zr = z + rows[r] * cols;
    double *restrict xr = x + r * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) xr[j] = (double)zr[j] - shift[r];
  }
  flat_exp(x, nb * cols);
}

/* Σ_j e^(z_j - zmax) over a row: SUMS partial sums, column j in sum
 * j mod SUMS in column order, then added pairwise, an order written out
 * so that every vector width, and every block of rows, adds alike. */
enum { SUMS = 8 };
static inline __attribute__((always_inline)) void sums_add(double *part, const double *e,
                                                           int64_t n) {
  int64_t c = 0;
  for (; c + SUMS <= n; c += SUMS)
    for (int k = 0; k < SUMS; k++) part[k] += e[c + k];
  for (int k = 0; c < n; c++, k++) part[k] += e[c];
}
static inline double sums_total(const double *part) {
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

/* The loss's integer sums over some rows. */
typedef struct xent_sums {
  int64_t hi, lo, bad, hits;
} xent_sums;

/* Row zr's maximum, its first column on ties.  Without a branch on the data
 * (a row's order of values is a coin toss): a select per column. */
static inline int64_t row_argmax(const float *restrict zr, int64_t cols, float *best_out) {
  int64_t argmax = 0;
  float best = zr[0];
  for (int64_t j = 1; j < cols; j++) {
    const int more = zr[j] > best;
    argmax = more ? j : argmax;
    best = more ? zr[j] : best;
  }
  *best_out = best;
  return argmax;
}

/* A row's loss into s, given its log-sum-exp; 0 when its label is outside
 * [0, cols) (a fault of the caller's data: it turns the loss into NaN, so
 * that it cannot pass unnoticed, and adds no gradient), else 1. */
static inline int row_loss_add(xent_sums *s, double lse, const float *zr, int64_t cols,
                               int32_t label, int64_t argmax) {
  if (label < 0 || label >= cols) {
    s->bad++;
    return 0;
  }
  /* A loss that is not finite (non-finite logits) or past 2^32 makes the
   * sum NaN, while the row's gradient is still written (NaN shows there,
   * as on the float path). */
  const double row_loss = lse - (double)zr[label];
  if (row_loss < 0x1p32) {
    const int64_t units = llrint(row_loss * 0x1p30); /* LOSS_GRID_BITS; < 2^62 */
    s->hi += units >> 31;
    s->lo += units & (((int64_t)1 << 31) - 1);
  } else {
    s->bad++;
  }
  s->hits += argmax == label;
  return 1;
}

/* g's row from its softmax p: p minus the one-hot label, scaled. */
static inline __attribute__((always_inline)) void row_grad_store(float *restrict gr,
                                                                 const double *restrict p,
                                                                 int64_t cols, int64_t label,
                                                                 float grad_scale) {
#pragma omp simd
  for (int64_t j = 0; j < cols; j++) gr[j] = (float)((p[j] - (double)(j == label)) * grad_scale);
}

/* A row wider than FLAT, alone, FLAT columns at a time: its loss into s,
 * its gradient into gr (when not NULL); x is scratch. */
static inline __attribute__((always_inline)) void wide_row(xent_sums *s, const float *restrict zr,
                                                           int64_t cols, int32_t label,
                                                           float grad_scale, float *restrict gr,
                                                           double *x) {
  float best;
  const int64_t argmax = row_argmax(zr, cols, &best);
  const double zmax = best;
  double part[SUMS] = {0};
  for (int64_t j0 = 0; j0 < cols; j0 += FLAT) { /* FLAT: a multiple of SUMS */
    const int64_t nc = cols - j0 < FLAT ? cols - j0 : FLAT;
#pragma omp simd
    for (int64_t c = 0; c < nc; c++) x[c] = (double)zr[j0 + c] - zmax;
    flat_exp(x, nc);
    sums_add(part, x, nc);
  }
  const double lse = zmax + log(sums_total(part));
  if (!row_loss_add(s, lse, zr, cols, label, argmax) || !gr) return;
  for (int64_t j0 = 0; j0 < cols; j0 += FLAT) {
    const int64_t nc = cols - j0 < FLAT ? cols - j0 : FLAT;
#pragma omp simd
    for (int64_t c = 0; c < nc; c++) x[c] = (double)zr[j0 + c] - lse;
    flat_exp(x, nc);
    row_grad_store(gr + j0, x, nc, (int64_t)label - j0, grad_scale);
  }
}

/* The masked rows mask[m0 .. m1): their losses into *out, their gradients
 * into g (when not NULL).  Rows of at most FLAT columns go in blocks of
 * FLAT / cols, a wider row alone (wide_row); either way each element sees
 * the same operations in the same order.  Cloned, so that the exponentials
 * use the widest vectors the CPU has. */
#if defined(__x86_64__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void xent_rows(const float *z, int64_t cols, const int32_t *labels, const int32_t *mask,
                      int64_t m0, int64_t m1, float grad_scale, float *g, xent_sums *out) {
  xent_sums s = {0, 0, 0, 0};
  double x[FLAT];
  if (cols <= 0) { /* no label lies in [0, cols): every row is a bad one */
    s.bad = m1 - m0;
    *out = s;
    return;
  }
  if (cols > FLAT) {
    for (int64_t m = m0; m < m1; m++) {
      const int64_t i = mask[m];
      wide_row(&s, z + i * cols, cols, labels[i], grad_scale, g ? g + i * cols : NULL, x);
    }
    *out = s;
    return;
  }
  const int64_t per = FLAT / cols; /* rows a block */
  double zmax[FLAT], lse[FLAT];
  int64_t argmax[FLAT];
  int written[FLAT]; /* rows whose label is in range */
  for (int64_t m = m0; m < m1; m += per) {
    const int64_t nb = m1 - m < per ? m1 - m : per;
    for (int64_t r = 0; r < nb; r++) {
      float best;
      argmax[r] = row_argmax(z + mask[m + r] * cols, cols, &best);
      zmax[r] = best;
    }
    block_exp(x, z, mask + m, nb, cols, zmax);
    for (int64_t r = 0; r < nb; r++) {
      const int64_t i = mask[m + r];
      double part[SUMS] = {0};
      sums_add(part, x + r * cols, cols);
      lse[r] = zmax[r] + log(sums_total(part));
      written[r] = row_loss_add(&s, lse[r], z + i * cols, cols, labels[i], argmax[r]);
    }
    if (!g) continue;
    block_exp(x, z, mask + m, nb, cols, lse);
    for (int64_t r = 0; r < nb; r++) {
      const int64_t i = mask[m + r];
      if (written[r]) row_grad_store(g + i * cols, x + r * cols, cols, labels[i], grad_scale);
    }
  }
  *out = s;
}

void halo_cpu_softmax_xent(const float *z, int64_t rows, int64_t cols, const int32_t *labels,
                           const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                           double *loss_sum, int64_t *correct) {
  _Static_assert(LOSS_GRID_BITS == 30, "xent_rows scales by 2^30");
  /* The loss in grid units, split into high and low 31-bit halves so that
   * neither int64 sum can overflow below 2^32 rows; integer sums, so the
   * threads' shares add up in any order. */
  xent_sums total = {0, 0, 0, 0};

  /* Rows outside the mask get a zero gradient. */
  if (g) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
    for (int64_t i = 0; i < rows; i++) memset(g + i * cols, 0, (size_t)cols * sizeof *g);
  }

#pragma omp parallel if (nmask * cols >= HALO_PARALLEL_HEAVY)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    xent_sums mine;
    xent_rows(z, cols, labels, mask, nmask * t / nt, nmask * (t + 1) / nt, grad_scale, g, &mine);
#pragma omp critical(halo_xent_sums)
    {
      total.hi += mine.hi;
      total.lo += mine.lo;
      total.bad += mine.bad;
      total.hits += mine.hits;
    }
  }
  const __int128 units = (__int128)total.hi * ((__int128)1 << 31) + total.lo;
  *loss_sum = total.bad ? NAN : ldexp((double)units, -LOSS_GRID_BITS);
  *correct = total.hits;
}

/* log(1 + exp(-|z|)) + max(z, 0) - z·y, without overflow for any z. */
static inline double bce_term(double z, double y) {
  return (z > 0.0 ? z : 0.0) - z * y + log1p(exp(-fabs(z)));
}

/* 1 / (1 + exp(-z)), without overflow for any z. */
static inline double sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + exp(-z));
  const double e = exp(z);
  return e / (1.0 + e);
}

void halo_cpu_sigmoid_bce(const float *z, int64_t rows, int64_t cols, const int8_t *targets,
                          const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                          double *loss_sum, int64_t *correct) {
  int64_t loss_hi = 0, loss_lo = 0, bad = 0, hits = 0;
  if (g) {
#pragma omp parallel for schedule(static) if (rows * cols >= HALO_PARALLEL_STREAM)
    for (int64_t i = 0; i < rows; i++) memset(g + i * cols, 0, (size_t)cols * sizeof *g);
  }

#pragma omp parallel for schedule(static) reduction(+ : loss_hi, loss_lo, bad, hits) \
    if (nmask * cols >= HALO_PARALLEL_HEAVY)
  for (int64_t m = 0; m < nmask; m++) {
    const int64_t i = mask[m];
    const float *restrict zr = z + i * cols;
    const int8_t *restrict yr = targets + i * cols;
    float *restrict gr = g ? g + i * cols : NULL;
    double row_loss = 0.0;
    for (int64_t t = 0; t < cols; t++) {
      const int8_t y = yr[t];
      if (y < 0) {
        bad += y != -1; /* only -1 means missing */
        continue;
      }
      if (y > 1) {
        bad++;
        continue;
      }
      const double zt = (double)zr[t];
      row_loss += bce_term(zt, (double)y);
      hits += (zt > 0.0) == (y == 1);
      if (gr) gr[t] = (float)((sigmoid(zt) - (double)y) * grad_scale);
    }
    if (row_loss < 0x1p32) {
      const int64_t units = llrint(ldexp(row_loss, LOSS_GRID_BITS)); /* < 2^62 */
      loss_hi += units >> 31;
      loss_lo += units & (((int64_t)1 << 31) - 1);
    } else {
      bad++;
    }
  }
  const __int128 units = (__int128)loss_hi * ((__int128)1 << 31) + loss_lo;
  *loss_sum = bad ? NAN : ldexp((double)units, -LOSS_GRID_BITS);
  *correct = hits;
}
