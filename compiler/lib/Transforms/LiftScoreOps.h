//===- LiftScoreOps.h - elementwise score ops -> flash.score / flash.mask -===//
//
// The graph spelling of attention modifiers, lifted into the ops
// flash-fuse-attention fuses (LiftScoreOps.cpp says which spellings).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace flashc {

/// Rewrites the elementwise arith / math ops on the scores between an attention's Q·Kᵀ chain and `softmax`
/// (with tensor.generate and splat constants as their other operands) into a flash.score and / or a flash.mask
/// with regions. Success without a change where there are none (or the softmax is not an attention's); failure
/// with `whyNot` (naming the op that blocks it) where they cannot be lifted, the IR left as it was.
mlir::LogicalResult liftScoreOps(mlir::flash::SoftmaxOp softmax, mlir::RewriterBase &rewriter, std::string &whyNot);

} // namespace flashc
