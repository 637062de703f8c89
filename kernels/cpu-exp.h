/* The exponential that the CPU kernels share (cpu-softmax-xent.c's row_exp,
 * cpu-activation.c's expm1 and exp): x = n·ln 2 + r with |r| <= ln 2 / 2
 * (ln 2 in two parts, fdlibm's, so that n·ln2_hi and the first subtraction
 * are exact), e^r - 1 = r + r²·p(r) with p the Taylor polynomial 1/2! +
 * r/3! + ... + r^10/12! (the remainder, r^13/13! and on, below 2^-52 of
 * e^r - 1), and 2^n from n's bits.  Multiplies and adds only, branch-free,
 * so that a loop of it vectorises; the files that include it are built
 * without contraction (kernels/CMakeLists.txt), so that every vector width
 * rounds alike.  Private to kernels/. */
#ifndef HALO_CPU_EXP_H
#define HALO_CPU_EXP_H

#include <stdint.h>
#include <string.h>

/* 2^n into *scale and e^r - 1 into *em1, for x in [-708, 0] (the caller
 * clamps): e^x = scale·(1 + em1). */
static inline __attribute__((always_inline)) void halo_exp_split(double x, double *scale,
                                                                 double *em1) {
  const double shifter = 6755399441055744.0; /* 1.5·2^52: the sum's low bits hold n */
  const double shifted = x * 1.4426950408889634 + shifter;
  const double n = shifted - shifter;
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double p = 1.0 / 479001600.0; /* 1/12! ... 1/2! */
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  *em1 = r + (r * r) * p;
  int64_t bits, base;
  memcpy(&bits, &shifted, sizeof bits);
  memcpy(&base, &shifter, sizeof base);
  const uint64_t scale_bits = (uint64_t)(bits - base + 1023) << 52; /* 2^n, n in [-1022, 0] */
  memcpy(scale, &scale_bits, sizeof *scale);
}

#endif
