//===- ScalarOps.h - one arith / math op in float64 ------------*- C++ -*-===//
//
// The graph evaluator's semantics of the elementwise graph spelling (arith and
// math ops on tensors, tensor.generate bodies): one scalar op at a time, in
// float64, written apart from the compiler's region evaluators so that the
// reference does not share their code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Operation.h"
#include <string>
#include "mlir/Support/LogicalResult.h"

namespace flashc {

/// The value of scalar op `op` (arith or math; an arith.constant, scalar or splat) at `operands`: floats in
/// float64 (extf / truncf exact: the reference computes in float64), integers and index as int64 (wrapping; a
/// division or remainder by 0 gives 0, by -1 the wrapping negation, as in the modifier regions), i1 as 0 / 1.
/// Failure for an op it does not know, or (with `why` set) for an integer operand or result past 2^53, which float64
/// would round.
mlir::FailureOr<double> evaluateScalarOp(mlir::Operation *op, llvm::ArrayRef<double> operands,
                                         std::string *why = nullptr);

} // namespace flashc
