/* Low-bit rows for the halo exchange (--halo-precision): the wire format,
 * its size, and the keyed stochastic rounding that packs a row into it and
 * the decoding that unpacks it.  A header of inline functions, like
 * halo-rng.h, so that the CPU packing kernel (kernels/cpu-halo-pack.c) and its
 * CUDA twin (kernels/cuda-halo-pack.cu) perform the same float operations
 * and agree bit for bit.
 *
 * One row of c columns travels as
 *   fp32   c float32                                      4c bytes
 *   bf16   c bfloat16 (the top half of a float32)          2c bytes
 *   fp16   c IEEE binary16 (saturating at ±65504)          2c bytes
 *   intB   float32 scale s, float32 offset m, then c codes of B bits
 *          (B = 8, 4, 2), packed low bits first            8 + ⌈cB/8⌉ bytes
 * with x ≈ m + s·q for a code q in [0, 2^B - 1], m = min of the row and
 * s = (max - min)/(2^B - 1) (s = 0 for a constant row).
 *
 * Rounding is stochastic and unbiased, E[decode(encode(x))] = x (up to the
 * float rounding of the affine map), and keyed: element (gid, col) of an
 * exchange draws u = halo_rng_uniform(key, gid, col) with key =
 * halo_quant_key(seed, epoch, layer, direction), so a run repeats bit for
 * bit and the value a node's row carries does not depend on which rank
 * sends it, hence not on P.  Decoded values are float32, and everything
 * downstream accumulates in float32 (fp16 SpMM overflows: HalfGNN). */
#ifndef HALO_QUANT_H
#define HALO_QUANT_H

#include <float.h>
#include <stdint.h>
#include <string.h>

#include "halo-rng.h"

typedef enum {
  HALO_PREC_FP32 = 0,
  HALO_PREC_BF16 = 1,
  HALO_PREC_FP16 = 2,
  HALO_PREC_INT8 = 3,
  HALO_PREC_INT4 = 4,
  HALO_PREC_INT2 = 5,
} halo_precision;

enum { HALO_PREC_COUNT = 6 };

/* The stream tag of the exchange's rounding (halo-rng.h's list goes on). */
enum { HALO_RNG_HALO = 7 };

/* The --halo-precision words, by value (halo-quant.c). */
extern const char *const halo_precision_names[];

/* Bits per code of an integer precision, 0 for the float ones. */
HALO_HD int halo_quant_bits(int prec) {
  return prec == HALO_PREC_INT8 ? 8 : prec == HALO_PREC_INT4 ? 4 : prec == HALO_PREC_INT2 ? 2 : 0;
}

/* Bytes of one row of `cols` columns on the wire. */
HALO_HD int64_t halo_quant_row_bytes(int prec, int64_t cols) {
  if (prec == HALO_PREC_BF16 || prec == HALO_PREC_FP16) return 2 * cols;
  const int bits = halo_quant_bits(prec);
  if (bits) return 8 + (cols * bits + 7) / 8;
  return 4 * cols;
}

/* The key of one exchange: direction 0 is the forward pass (features),
 * 1 the backward pass (gradients). */
HALO_HD uint64_t halo_quant_key(uint64_t seed, int64_t epoch, int layer, int direction) {
  return halo_rng_key(seed, HALO_RNG_HALO, (uint64_t)epoch, (uint64_t)(2 * layer + direction));
}

HALO_HD uint32_t halo_quant__bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

HALO_HD float halo_quant__float_of(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* a·b + c rounded twice, as the CPU computes it: nvcc would fuse the two
 * into one fused multiply-add by default, and a code or a decoded value
 * would then depend on where the row was packed (kernels/cuda-halo-pack.cu
 * runs this header on the GPU). */
HALO_HD double halo_quant__madd(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

HALO_HD float halo_quant__fmadd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

/* bfloat16, stochastically: adding 16 random bits below the kept half and
 * truncating rounds the magnitude up with probability equal to the dropped
 * fraction.  Non-finite values truncate; a finite value never becomes inf. */
HALO_HD uint16_t halo_quant_bf16(float x, float u) {
  const uint32_t b = halo_quant__bits_of(x);
  if ((b & 0x7f800000u) == 0x7f800000u) return (uint16_t)(b >> 16 | ((b & 0xffffu) ? 0x40u : 0u));
  const uint32_t up = b + (uint32_t)(u * 65536.0f);
  if ((up & 0x7f800000u) == 0x7f800000u) return (uint16_t)(b >> 16);
  return (uint16_t)(up >> 16);
}

HALO_HD float halo_quant_bf16_value(uint16_t h) { return halo_quant__float_of((uint32_t)h << 16); }

/* binary16 → float32, exactly. */
HALO_HD float halo_quant_fp16_value(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ffu;
  float mag;
  if (exp == 0)
    mag = (float)man * (1.0f / 16777216.0f); /* subnormal: man · 2^-24 */
  else if (exp == 31)
    mag = halo_quant__float_of(man ? 0x7fc00000u : 0x7f800000u);
  else
    mag = halo_quant__float_of((uint32_t)(exp - 15 + 127) << 23 | man << 13);
  return halo_quant__float_of(halo_quant__bits_of(mag) | sign);
}

/* The binary16 code of the largest magnitude not above |x|'s (|x| finite,
 * below 65504 + 32). */
HALO_HD uint16_t halo_quant__fp16_down(float a) {
  if (a < 6.103515625e-05f) return (uint16_t)(a * 16777216.0f); /* subnormal steps of 2^-24 */
  const uint32_t b = halo_quant__bits_of(a);
  const int exp = (int)(b >> 23) - 127 + 15;
  return (uint16_t)((uint32_t)exp << 10 | (b & 0x7fffffu) >> 13);
}

/* binary16, stochastically: |x| rounds to one of the two codes around it,
 * the upper with probability equal to its distance from the lower over the
 * step.  Magnitudes beyond 65504 saturate there (a gradient or a feature
 * that large is already trouble; inf would poison the SpMM). */
HALO_HD uint16_t halo_quant_fp16(float x, float u) {
  const uint32_t b = halo_quant__bits_of(x);
  const uint16_t sign = (uint16_t)(b >> 16 & 0x8000u);
  if (x != x) return 0x7e00u;
  float a = halo_quant__float_of(b & 0x7fffffffu);
  if (a >= 65504.0f) return (uint16_t)(sign | 0x7bffu);
  const uint16_t lo = halo_quant__fp16_down(a);
  if (lo >= 0x7bffu) return (uint16_t)(sign | lo);
  const float vlo = halo_quant_fp16_value(lo), vhi = halo_quant_fp16_value((uint16_t)(lo + 1));
  const uint16_t code = (a - vlo) > u * (vhi - vlo) ? (uint16_t)(lo + 1) : lo;
  return (uint16_t)(sign | code);
}

/* Packs one row x[0..cols) into `out` (halo_quant_row_bytes bytes), drawing
 * element j's rounding from (key, gid, j). */
HALO_HD void halo_quant_pack_row(uint8_t *out, const float *x, int64_t cols, int prec,
                                 uint64_t key, int64_t gid) {
  if (prec == HALO_PREC_FP32) {
    memcpy(out, x, (size_t)cols * sizeof(float));
    return;
  }
  if (prec == HALO_PREC_BF16 || prec == HALO_PREC_FP16) {
    for (int64_t j = 0; j < cols; j++) {
      const float u = halo_rng_uniform(key, (uint64_t)gid, (uint64_t)j);
      const uint16_t h = prec == HALO_PREC_BF16 ? halo_quant_bf16(x[j], u) : halo_quant_fp16(x[j], u);
      out[2 * j] = (uint8_t)(h & 0xffu);
      out[2 * j + 1] = (uint8_t)(h >> 8);
    }
    return;
  }
  const int bits = halo_quant_bits(prec);
  const int32_t top = (1 << bits) - 1;
  float lo = x[0], hi = x[0];
  for (int64_t j = 1; j < cols; j++) {
    lo = x[j] < lo ? x[j] : lo;
    hi = x[j] > hi ? x[j] : hi;
  }
  /* The range in double: hi - lo of two finite floats may pass FLT_MAX,
   * and an infinite scale would decode every column as inf * 0 = NaN. */
  const double range = (double)hi - (double)lo;
  const double scale_d = range > 0.0 ? range / (double)top : 0.0;
  const float scale = scale_d > (double)FLT_MAX ? FLT_MAX : (float)scale_d;
  const double inv = scale > 0.0f ? 1.0 / (double)scale : 0.0;
  memcpy(out, &scale, sizeof scale);
  memcpy(out + 4, &lo, sizeof lo);
  uint8_t *codes = out + 8;
  memset(codes, 0, (size_t)((cols * bits + 7) / 8));
  for (int64_t j = 0; j < cols; j++) {
    const float u = halo_rng_uniform(key, (uint64_t)gid, (uint64_t)j);
    const double t = halo_quant__madd((double)x[j] - (double)lo, inv, (double)u);
    int32_t q = t > 0.0 ? (t < (double)top ? (int32_t)t : top) : 0; /* floor, within 0..top */
    const int64_t bit = j * bits;
    codes[bit >> 3] |= (uint8_t)(q << (bit & 7));
  }
}

/* Unpacks one row of `cols` columns from `in` into x. */
HALO_HD void halo_quant_unpack_row(float *x, const uint8_t *in, int64_t cols, int prec) {
  if (prec == HALO_PREC_FP32) {
    memcpy(x, in, (size_t)cols * sizeof(float));
    return;
  }
  if (prec == HALO_PREC_BF16 || prec == HALO_PREC_FP16) {
    for (int64_t j = 0; j < cols; j++) {
      const uint16_t h = (uint16_t)(in[2 * j] | in[2 * j + 1] << 8);
      x[j] = prec == HALO_PREC_BF16 ? halo_quant_bf16_value(h) : halo_quant_fp16_value(h);
    }
    return;
  }
  const int bits = halo_quant_bits(prec);
  const uint32_t mask = (1u << bits) - 1u;
  float scale, lo;
  memcpy(&scale, in, sizeof scale);
  memcpy(&lo, in + 4, sizeof lo);
  const uint8_t *codes = in + 8;
  for (int64_t j = 0; j < cols; j++) {
    const int64_t bit = j * bits;
    const uint32_t q = (uint32_t)(codes[bit >> 3] >> (bit & 7)) & mask;
    x[j] = halo_quant__fmadd(scale, (float)q, lo);
  }
}

#endif /* HALO_QUANT_H */
