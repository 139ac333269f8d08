//===- KernelMath.h - what a kernel recipe computes, in one line -*- C++ -*-===//
//
// The math of a #tile.attention / #tile.gemm recipe as one human-readable line
// ("O = softmax(Q·Kᵀ·0.125, causal)·V, lse = ..."), for the header comment of
// the generated kernels.cu: a reader sees what each kernel computes without
// the spec.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_KERNELMATH_H
#define FLASHC_COMPILER_KERNELMATH_H

#include "mlir/IR/Attributes.h"

#include <string>

namespace flashc {

/// One line (no newline) describing what a kernel built from `spec`
/// computes; "" for a kernel without a recipe.
std::string describeKernelMath(mlir::Attribute spec);

} // namespace flashc

#endif // FLASHC_COMPILER_KERNELMATH_H
