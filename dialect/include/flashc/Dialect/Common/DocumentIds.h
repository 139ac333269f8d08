//===- DocumentIds.h - mask modifiers that compare documents --------------===//
//
// FlexAttention's document mask, `doc[q] == doc[k]`: each token's document id
// read by both positions from one rank-1 tensor. Over ids that never decrease
// (the documents packed one after another) it is packed sequences inside each
// batch's rows, and a forward may take tiles aligned to each document's start
// instead of classifying blocks (the segment form: the device library's
// segments.cuh, which checks the order at run time and falls back).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Region.h"

#include <optional>

namespace flashc {

/// A document compare read off an index function's form.
struct DocumentCompare {
  unsigned operand = 0;  // the ids' tensor argument (0: the first after the indices)
  bool causal = false;   // `& (q >= k)` too: FlexAttention's document_causal, causality in the modifier
};

/// The document compare an index function is, where its body is exactly
/// `t[q] == t[k]` (either order) of a rank-1 i32 tensor, both reads through
/// the same injective casts (index_cast, index_castui, extsi, extui, each
/// alike on both sides) or none, optionally and-ed (either order) with
/// `q >= k` (sge q, k or sle k, q); std::nullopt for anything else (another
/// compare, another conjunction, a read of b or h, two tensors), which is
/// sound: the modifier stays a table's.
std::optional<DocumentCompare> documentCompare(mlir::Region &body);

} // namespace flashc
