//===- IndexBounds.h - integer bounds of a modifier region ------*- C++ -*-===//
//
// Interval arithmetic over a mask or score modifier's integer values, from the
// range of its indices (the kernels' b, h, q and k are ints in [0, 2^31)) and
// of its i32 tensors' elements. Where every value fits an int, the region's
// 64-bit arithmetic (IndexFunction.h) gives the same results in 32 bits, which
// the emitters then use (fewer instructions; an int converts to f32 from 32
// bits).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace flashc {

class IndexBounds {
public:
  /// `indices`: the block arguments that are the element's indices.
  IndexBounds(mlir::Block &body, llvm::ArrayRef<mlir::BlockArgument> indices);

  /// [lo, hi] of an integer or index value, when known.
  std::optional<std::pair<int64_t, int64_t>> of(mlir::Value value) const;
  bool fitsInt32(mlir::Value value) const;
  /// Whether every integer and index value of the body (i1 aside) fits an int.
  bool allFitInt32() const { return allFit; }

private:
  llvm::DenseMap<mlir::Value, std::pair<int64_t, int64_t>> bounds;
  bool allFit = true;
};

} // namespace flashc
