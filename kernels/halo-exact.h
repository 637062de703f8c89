/* Exact sums over rows: the reductions that make training bit-identical for
 * any number of ranks, any partition and any thread count
 * (docs/reproducibility.md).
 *
 * A float sum depends on its order; these do not.  Each term, a product of
 * two floats (exact in double), is rounded ONCE to a fixed-point grid of
 * spacing 2^e, and the integers are summed exactly: the dense sums round a
 * term down or up as its row draws (halo_exact_row_up), the CSR sums to the
 * nearest, ties to even.  The result is the same
 * integer however the terms are split among threads and ranks and in
 * whatever order they come, so every rank ends with the same bits.  The grid
 * exponent e is agreed by all ranks (halo_exact_exponent of a global bound,
 * one MPI_Allreduce of the maximum), so that a term rounds alike wherever it
 * is computed.
 *
 * A sum travels as HALO_EXACT_LIMBS int64 limbs of HALO_EXACT_LIMB_BITS bits
 * (value = l0 + l1·2^42 + l2·2^84, in units of 2^e): MPI_SUM of the limbs of
 * fewer than 2^21 ranks cannot overflow, and halo_exact_to_float carries
 * them back into one integer.  The gradients use a grid with room for all
 * their terms (halo_exact_exponent_terms) and cross ranks packed, one int64
 * a sum (halo_exact_pack).  Each |term| is below 2^45 units of the
 * bound, so the rounding error of a term is below 2^-45 of the bound
 * (max |a| · max |b| over all ranks), and the dense sums' errors, as often
 * up as down, cancel on average; the integer sum is then rounded to double
 * and that to float.
 */
#ifndef HALO_EXACT_H
#define HALO_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include "halo-kernels.h" /* halo_cpu_isa */
#include "halo-rng.h"

#define HALO_EXACT_LIMBS 3
#define HALO_EXACT_LIMB_BITS 42
/* A term is below 2^HALO_EXACT_TERM_BITS grid units: the dense sums add 64
 * of them in a double's integers (below 2^51; kernels/cpu-exact.c). */
#define HALO_EXACT_TERM_BITS 45
/* Terms per int64 run: 2^11 terms below 2^51 (so also 2^45) each stay below 2^62. */
#define HALO_EXACT_BLOCK_TERMS (1 << 11)

/* Whether the terms of a row of a dense exact sum round up (to the
 * ceiling) rather than down (to the floor): one bit of a hash of the XOR
 * of the bits of the row's bc values of B (all of them, so that rows whose
 * first values agree, as a ReLU's zeros do, still draw apart).  A function
 * of the row's data alone, so a row rounds alike on every rank, thread,
 * vector width and device; and as often up as down, so that the errors of
 * a sum's terms cancel on average instead of adding up. */
HALO_HD int halo_exact_row_up(const float *row, int64_t bc) {
  uint32_t x = 0;
  for (int64_t q = 0; q < bc; q++) {
    uint32_t u;
    memcpy(&u, &row[q], sizeof u);
    x ^= u;
  }
  return (int)(halo_rng_mix(x) & 1u);
}

/* The grid exponent for terms bounded by `bound` (>= |a·b| for every term
 * of every rank): the smallest e with bound < 2^(e+45); 0 for a bound of 0
 * (every term is then 0).  The bound must be finite: no grid holds a NaN or
 * an inf term, which the caller handles apart (src/gnn-ops.c makes the
 * gradient NaN). Local. */
int halo_exact_exponent(double bound);

/* The grid exponent for sums of at most `terms` terms (over every rank)
 * bounded by `bound`, whose total must fit ONE int64 (halo_exact_pack): the
 * exponent of halo_exact_exponent, coarsened by s = max(0, bits(terms) -
 * 18) binary places, so that each |term| is below 2^(45-s) units and
 * terms · 2^(45-s) <= 2^63.  Below 2^18 terms it is halo_exact_exponent's
 * grid itself.  The rounding of a term is then below 2^(s-45) of the
 * bound. Local. */
int halo_exact_exponent_terms(double bound, int64_t terms);

/* max |x[i]| over n floats; 0 for n = 0, and +inf when one is not finite.
 * OpenMP over i. Local. */
float halo_cpu_max_abs(const float *x, int64_t n);

/* The largest of x[0 .. n)'s bits with the sign cleared (0 for n = 0): they
 * order as |x| does, and every NaN's lie above inf's.  One thread, for a
 * kernel that finds its max as it goes (halo_cpu_dropout_to_max). Local. */
uint32_t halo_cpu_max_abs_bits(const float *x, int64_t n);

/* Bytes of the workspace (16-byte aligned) of halo_cpu_exact_tn for an
 * ac × bc result on `threads` threads, and of halo_cpu_exact_csr for bc
 * columns. Local. */
size_t halo_cpu_exact_tn_work(int64_t ac, int64_t bc, int threads);
size_t halo_cpu_exact_csr_work(int64_t bc, int threads);

/* Bytes of the workspace of halo_cpu_exact_tn_ones and the dropped twin
 * with B's column sums beside the product (acc1): one more row of
 * accumulators than halo_cpu_exact_tn_work's. Local. */
size_t halo_cpu_exact_tn_ones_work(int64_t ac, int64_t bc, int threads);

/* Limits halo_cpu_exact_tn's tiles and halo_cpu_exact_csr's loop to
 * vectors of at most `limit` (the default: the widest the CPU has; PLAIN
 * is the portable loop, which the compiler may still vectorise), for tests
 * that run each path on one machine: every path gives the same integers.
 * Returns the width it will use.  Not thread-safe against a running sum. */
halo_cpu_isa halo_cpu_exact_limit_isa(halo_cpu_isa limit);

/* acc[p·bc + q] = Σ_i A[i, p] · B[i, q] over rows i in [0, n), on the grid
 * 2^e, each term rounded down, or up where halo_exact_row_up(B[i, ·]): a
 * dense Aᵀ·B.  A is n × ac (leading dimension lda), B n × bc (ldb);
 * A NULL means A[i, 0] = 1 with ac = 1: the column sums of B.  acc holds
 * ac·bc sums of HALO_EXACT_LIMBS limbs each and is overwritten.  The terms
 * must be bounded as halo_exact_exponent(bound) promised.  At most
 * `threads` OpenMP threads, over blocks of rows, with `work` (of
 * halo_cpu_exact_tn_work bytes) for their accumulators. Local. */
void halo_cpu_exact_tn(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                       const float *b, int64_t ldb, int e, int threads, void *work, int64_t *acc);

/* halo_cpu_exact_tn of A = dropout(X) (n × ac, X's rows contiguous), the
 * mask of halo_cpu_dropout_to under `key` and p > 0 for the rows' global
 * ids, without a dropped copy of X: each thread drops its own chunks of
 * rows as it packs them.  The same integers as halo_cpu_exact_tn of the
 * dropped matrix.  `work` as halo_cpu_exact_tn_work(ac, bc, threads), or
 * with acc1 halo_cpu_exact_tn_ones_work's.
 * Local. */
void halo_cpu_exact_tn_dropped(int64_t n, int64_t ac, int64_t bc, const float *x,
                               const int64_t *global_id, uint64_t key, float p, const float *b,
                               int64_t ldb, int e, int threads, void *work, int64_t *acc, int e1,
                               int64_t *acc1, int packed);

/* halo_cpu_exact_tn and, where A is not NULL and acc1 is (NULL: none),
 * the column sums of B into acc1 (bc sums) on their own grid 2^e1, as
 * halo_cpu_exact_tn(n, 1, bc, NULL, ...) would make them, in the same pass:
 * a layer's weight and bias gradients, whose B is the same.  The dropped
 * twin takes them too.  `packed` (here, in the dropped twin and in
 * halo_cpu_exact_csr_perm): each sum as one int64, as halo_exact_pack
 * makes it from the limbs, which the grids of halo_exact_exponent_terms
 * leave room for (the gradients'); 0: the limbs. Local. */
void halo_cpu_exact_tn_ones(int64_t n, int64_t ac, int64_t bc, const float *a, int64_t lda,
                            const float *b, int64_t ldb, int e, int threads, void *work,
                            int64_t *acc, int e1, int64_t *acc1, int packed);

/* acc[p·bc + q] = Σ_{k in row p} values[k] · B[indices[k], q] on the grid
 * 2^e for the rows p in [0, rows) of a CSR matrix (indptr size rows+1,
 * absolute offsets; values NULL means every value is 1), which holds the Aᵀ
 * of a sparse A: the sparse Aᵀ·B.  B has bc columns (ldb).  acc is
 * overwritten.  At most `threads` OpenMP threads over rows, with `work` of
 * halo_cpu_exact_csr_work bytes. Local. */
void halo_cpu_exact_csr(const int64_t *indptr, const int32_t *indices, const float *values,
                        int64_t rows, const float *b, int64_t bc, int64_t ldb, int e, int threads,
                        void *work, int64_t *acc);

/* halo_cpu_exact_csr with the value of non-zero k read as
 * values[perm[k]] (perm NULL: values[k]): the Aᵀ of a sparse A whose
 * values are A's (halo_csr_transpose_perm), such as A's dropout, which
 * then needs no pass over Aᵀ.  The same integers as halo_cpu_exact_csr of
 * the permuted values. Local. */
void halo_cpu_exact_csr_perm(const int64_t *indptr, const int32_t *indices, const float *values,
                             const int32_t *perm, int64_t rows, const float *b, int64_t bc,
                             int64_t ldb, int e, int threads, void *work, int64_t *acc,
                             int packed);

/* limb[0 .. HALO_EXACT_LIMBS) = the limbs of low + high · 2^HALO_EXACT_LIMB_BITS
 * (any int64 values): how a device's sums, kept as such pairs, become the
 * limbs the allreduce adds. Local. */
void halo_exact_limbs(int64_t low, int64_t high, int64_t *limb);

/* out[j] = the float nearest (through double) to the sum that limbs
 * acc[j·HALO_EXACT_LIMBS ..] hold, times 2^e, for j in [0, count): the
 * limbs may be the MPI_SUM of several ranks'. Local. */
void halo_exact_to_float(const int64_t *acc, int64_t count, int e, float *out);

/* out[j] = the sum that limbs acc[j·HALO_EXACT_LIMBS ..] hold, as one
 * int64, for j in [0, count), which must fit (a grid of
 * halo_exact_exponent_terms); out overlaps no limb.  The
 * gradients cross ranks so, as one MPI_SUM of int64: a third of the bytes of
 * the limbs. Local. */
void halo_exact_pack(const int64_t *acc, int64_t count, int64_t *out);

/* out[j] = the float nearest (through double) to v[j] · 2^e: halo_exact_pack's
 * sums, summed over ranks. Local. */
void halo_exact_packed_to_float(const int64_t *v, int64_t count, int e, float *out);

/* The same sums rounded to double once (BatchNorm's statistics). Local. */
void halo_exact_to_double(const int64_t *acc, int64_t count, int e, double *out);

#endif /* HALO_EXACT_H */
