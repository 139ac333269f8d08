//===- DiagonalBand.h - mask modifiers that are a band of diagonals -------===//
//
// A mask modifier (IndexFunction.h) that only bounds the distance d = q - k of
// a query row from a key row is a sliding window: (q >= k) is FlexAttention's
// causal mask, (q >= k) & (q - k <= 1024) its sliding window. The compiler then
// gives the kernels a window instead of the modifier (the dedicated path:
// loop bounds and element masks in a few integer operations, no interval
// analysis at run time). The positions stay the modifier's: query row q at key
// position q (top-left), whatever Sq and Sk.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Region.h"

#include <cstdint>
#include <optional>

namespace flashc {

/// Keys visible exactly where lo <= q - k <= hi (no bound on a side without
/// a value).
struct DiagonalBand {
  std::optional<int64_t> lo, hi;
};

/// The band an index function is, where it is one by its form: a conjunction
/// (andi) of signed or equality compares (not ne) of terms a·q + b·k + c
/// (constants, q, k, addi, subi, muli by a constant) that each reduce to a
/// bound on q - k, or of |q - k| (the select a traced abs() is) against a
/// constant, reading no operand, batch or head; a compare of constants folds.
/// std::nullopt for anything else (an ori, a division, a read; a band that
/// hides every key), which is sound: such a modifier stays one.
std::optional<DiagonalBand> diagonalBand(mlir::Region &body);

} // namespace flashc
