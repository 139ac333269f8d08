//===- IndexFunction.h - integer functions of indices in arith ops --------===//
//
// The body of an attention mask modifier (flash.attention's mask_mod region,
// tile.mask_mod): a pure function of a query index q and a key index k, both
// `index`, written in arith ops on `index` and `i1`, yielding an i1 (true: key
// k is visible from query q). One block; its terminator yields the result.
//
// The ops are those every consumer implements alike: the CPU evaluator here,
// the CUDA emitter (exact values and the interval analysis that classifies
// whole blocks), the Python tracer (flashc.mask_mod):
//   arith.constant (index, i1); on index: addi, subi, muli, divsi, ceildivsi,
//   floordivsi, remsi, minsi, maxsi, cmpi with a signed or equality
//   predicate; andi / ori / xori on i1; select of index or i1 values.
// Values are 64-bit signed integers. Division and remainder by 0 give 0, and
// arithmetic wraps on overflow, so every input has a defined result.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Region.h"

#include <cstdint>
#include <string>

namespace flashc {

/// Checks `body` is an index function of `numArgs` arguments (the rules
/// above); errors name the offending op. `what` names the owner in messages
/// ("mask_mod").
mlir::LogicalResult verifyIndexFunction(mlir::Operation *owner, mlir::Region &body, unsigned numArgs,
                                        llvm::StringRef what);

/// The i1 an index function yields for these argument values (the body must
/// have passed verifyIndexFunction).
bool evaluateIndexPredicate(mlir::Region &body, llvm::ArrayRef<int64_t> args);

/// One arith op's value on 64-bit integers (i1 as 0 / 1), with the rules
/// above; shared by the evaluator and its tests.
int64_t evaluateIndexOp(mlir::Operation *op, llvm::ArrayRef<int64_t> operands);

/// The index function's text form, what flashc.mask_mod and
/// flashc/reference/index_program.h read: "v0 = lt k 4096; v1 = le k q;
/// v2 = or v0 v1; yield v2" (the first argument is q, the second k). With
/// `oneWord` the spaces are commas (a manifest's meta value is one word).
std::string printIndexProgram(mlir::Region &body, bool oneWord = false);

} // namespace flashc
