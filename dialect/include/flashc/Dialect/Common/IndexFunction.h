//===- IndexFunction.h - integer functions of indices in arith ops --------===//
//
// The body of an attention mask modifier (flash.attention's mask_mod region,
// tile.mask_mod): a pure function of the query row q and the key row k (and,
// in the four-index form, the batch b and query head h), all `index`, written
// in arith ops on `index` and `i1`, yielding an i1 (true: key k is visible
// from query q). One block, whose arguments are
//   (q, k) or (b, h, q, k)   index values, FlexAttention's (b, h, q_idx, kv_idx)
//   then t0, t1, ...          one ranked tensor of i32 (rank 1-4) per extra operand
//                             (a per-token document id, a per-head table)
// and whose terminator yields the result.
//
// The ops are those every consumer implements alike: the CPU evaluator here,
// the CUDA emitter (exact values and the interval analysis that classifies
// whole blocks), the Python tracer (flashc.mask_mod):
//   arith.constant (index, i1); on index: addi, subi, muli, divsi, ceildivsi,
//   floordivsi, remsi, minsi, maxsi, cmpi with a signed or equality
//   predicate; andi / ori / xori on i1; select of index or i1 values;
//   tensor.extract of an operand at index positions, then arith.index_cast
//   of the element to index.
// Values are 64-bit signed integers. Division and remainder by 0 give 0, and
// arithmetic wraps on overflow, so every input has a defined result. A read
// outside an operand's shape (any position < 0 or >= its size) gives 0; one at
// an index argument itself never needs to (indexArgumentReads: the operand
// holds the index's range, checked by the verifiers or at launch).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Region.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>

namespace flashc {

/// The argument layout of an index function's block.
struct IndexFunctionLayout {
  unsigned indexArgs = 2;   // 2: (q, k); 4: (b, h, q, k)
  unsigned tensorArgs = 0;  // operands read by tensor.extract, after the indices
  bool hasBatchAndHead() const { return indexArgs == 4; }
};

/// The layout of `body`'s block: its leading index arguments, then the rest.
IndexFunctionLayout indexFunctionLayout(mlir::Region &body);

/// Checks `body` is an index function (the rules above) whose tensor arguments
/// have exactly `operandTypes` (the owner's extra operands); errors name the
/// offending op. `what` names the owner in messages ("mask_mod").
mlir::LogicalResult verifyIndexFunction(mlir::Operation *owner, mlir::Region &body,
                                        mlir::TypeRange operandTypes, llvm::StringRef what);

/// Whether a type may be an index function's operand: a ranked tensor of i32
/// of rank 1 to 4 (static or dynamic sizes).
bool isIndexFunctionOperandType(mlir::Type type);

/// The four indices of a modifier, in their order (b, h, q, k): the batch, the
/// query head, the query row and the key row.
enum class ModifierIndex { Batch = 0, Head = 1, Query = 2, Key = 3 };

/// A read of a modifier's operand at one of the body's index arguments itself
/// (ids[q], slopes[h]) along one of its dimensions. The kernels read a position
/// outside an operand as 0: an operand shorter there than the index's range
/// gives a silently wrong mask or score, so the verifiers refuse it where both
/// sizes are static and the compiled programs check it at launch otherwise.
/// A read at a computed position (ids[q / 64], a clamped distance) is none.
struct IndexArgumentRead {
  mlir::Operation *read;  // the tensor.extract
  unsigned operand;       // which of the body's tensor arguments (0: t0)
  unsigned dim;           // the operand's dimension read at the index
  ModifierIndex index;
};

/// The reads of `body` (an index function, or a score function whose index
/// arguments start at `firstIndex` = 1) at its index arguments, in the body's
/// order (one per read and dimension: a table read twice at q appears twice).
llvm::SmallVector<IndexArgumentRead> indexArgumentReads(mlir::Region &body, unsigned firstIndex);

/// What a verifier or evaluator says of `read` when its operand (`operandText`,
/// e.g. "(tensor<2xf32>)") holds `size` entries along the read dimension and
/// the index ranges over `range`: "reads <what> operand #N <operandText> at the
/// query index q along dimension 0: it holds 40 entries, the query index q
/// ranges over 70".
std::string describeShortTableRead(const IndexArgumentRead &read, llvm::StringRef what,
                                   llvm::StringRef operandText, int64_t size, int64_t range);

/// Where an index function is evaluated: the four indices (a two-index body
/// ignores b and h).
struct IndexPoint {
  int64_t b = 0, h = 0, q = 0, k = 0;
};

/// Reads element `position` of operand `operand` (the caller's tensors);
/// called only for positions inside the operand's shape.
using IndexOperandReader = llvm::function_ref<int64_t(unsigned operand, llvm::ArrayRef<int64_t> position)>;
/// The shape of operand `operand` at run time (dynamic sizes resolved).
using IndexOperandShape = llvm::function_ref<llvm::SmallVector<int64_t, 4>(unsigned operand)>;

/// The i1 an index function yields at `point` (the body must have passed
/// verifyIndexFunction). `shape` and `read` serve tensor.extract; a body that
/// reads no operand needs neither.
bool evaluateIndexPredicate(mlir::Region &body, const IndexPoint &point, IndexOperandShape shape = nullptr,
                            IndexOperandReader read = nullptr);

/// One arith op's value on 64-bit integers (i1 as 0 / 1), with the rules
/// above; shared by the evaluator and its tests. (arith.index_cast passes its
/// operand through: elements are read sign-extended.)
int64_t evaluateIndexOp(mlir::Operation *op, llvm::ArrayRef<int64_t> operands);

/// The text form's name of an index function's op ("add", "lt", "read",
/// ...; "?" for another op).
std::string indexOpName(mlir::Operation *op);

/// The index function's text form, what flashc.mask_mod and
/// flashc/reference/index_program.h read: "v0 = lt k 4096; v1 = le k q;
/// v2 = or v0 v1; yield v2". Arguments are named b, h, q, k (whatever the
/// block's arity) and t0, t1, ... for the operands; a read is
/// "v3 = read t0 q" (one position per dimension). With `oneWord` the spaces
/// are commas (a manifest's meta value is one word).
std::string printIndexProgram(mlir::Region &body, bool oneWord = false);

} // namespace flashc
