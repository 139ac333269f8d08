//===- SaturatingMath.h - overflow-safe size arithmetic --------*- C++ -*-===//
//
// Internal to compiler/lib. Byte and register estimates multiply sizes taken
// from the IR (tile shapes, head dims); a hand-written or fuzzed spec can make
// them wrap around and pass a budget check. These saturate at INT64_MAX
// instead, so an absurd size always compares as too large.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_LIB_SATURATINGMATH_H
#define FLASHC_COMPILER_LIB_SATURATINGMATH_H

#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <limits>

namespace flashc {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

/// a·b for non-negative a, b; kSaturated when it overflows.
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product;
  return llvm::MulOverflow(a, b, product) ? kSaturated : product;
}

/// a + b for non-negative a, b; kSaturated when it overflows.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  return llvm::AddOverflow(a, b, sum) ? kSaturated : sum;
}

/// `value` rounded up to a multiple of `alignment` (> 0), saturating.
inline int64_t saturatingAlignTo(int64_t value, int64_t alignment) {
  int64_t bumped = saturatingAdd(value, alignment - 1);
  return bumped == kSaturated ? kSaturated : bumped / alignment * alignment;
}

} // namespace flashc

#endif // FLASHC_COMPILER_LIB_SATURATINGMATH_H
