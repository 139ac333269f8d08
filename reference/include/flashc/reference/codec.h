//===- codec.h - float <-> f16 / bf16 bits, round to nearest even -*- C++ -*-===//
//
// The one host-side codec of flashc's 16-bit element types. Encoding rounds to
// nearest, ties to even (what the GPU's cvt.rn does); overflow goes to ±inf;
// f16 subnormals are produced and read exactly. NaN encodes as a quiet NaN
// (bf16: the canonical 0x7fc0, sign dropped; f16: 0x7e00 with the sign kept).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_CODEC_H
#define FLASHC_REFERENCE_CODEC_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace flashc::reference {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

//===----------------------------------------------------------------------===//
// bfloat16: the upper half of a float
//===----------------------------------------------------------------------===//

/// bf16 bits of `value`, rounded to nearest even on the 16 dropped bits.
inline uint16_t bf16FromFloat(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  // Adding 0x7fff (+1 when the kept lsb is odd) carries into the kept half
  // exactly when the dropped half is above (or at, for odd) one half ulp;
  // a carry out of the mantissa bumps the exponent, up to infinity.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float bf16ToFloat(uint16_t bits) { return floatFromBits(uint32_t(bits) << 16); }

/// `value` rounded to the nearest bf16, as a float. A NaN is returned as is
/// (payload untouched), so rounding never changes which NaN a tensor holds.
inline float roundToBf16(float value) {
  if (std::isnan(value))
    return value;
  return bf16ToFloat(bf16FromFloat(value));
}

//===----------------------------------------------------------------------===//
// IEEE half (f16): 1 sign, 5 exponent (bias 15), 10 mantissa bits
//===----------------------------------------------------------------------===//

/// f16 bits of `value`, rounded to nearest even; above the largest f16 (65504,
/// from 65520 on) ±inf; below half the smallest subnormal (2^-25) ±0.
inline uint16_t f16FromFloat(float value) {
  uint32_t bits = floatBits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t(sign | 0x7e00u);
  int32_t exponent = int32_t((bits >> 23) & 0xffu) - 127 + 15; // f16-biased
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent <= 0) { // f16 subnormal (or zero): units of 2^-24
    if (exponent < -10)
      return uint16_t(sign);
    mantissa |= 0x800000u;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1),
             midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u)))
      ++half; // may become the smallest normal: the encoding carries over
    return uint16_t(sign | half);
  }
  if (exponent >= 31) // also float infinities
    return uint16_t(sign | 0x7c00u);
  uint32_t half = (uint32_t(exponent) << 10) | (mantissa >> 13), rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // a mantissa carry bumps the exponent, up to 0x7c00 = inf
  return uint16_t(sign | half);
}

inline float f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu,
           mantissa = bits & 0x3ffu;
  if (exponent == 0) // ±0 and subnormals: mantissa · 2^-24, exact in float
    return floatFromBits(sign | floatBits(std::ldexp(float(mantissa), -24)));
  if (exponent == 31)
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u));
  return floatFromBits(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

/// `value` rounded to the nearest f16, as a float; a NaN is returned as is.
inline float roundToF16(float value) {
  if (std::isnan(value))
    return value;
  return f16ToFloat(f16FromFloat(value));
}

} // namespace flashc::reference

#endif // FLASHC_REFERENCE_CODEC_H
