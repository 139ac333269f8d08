//===- ScoreFunction.h - score modifiers: f32 functions of a score --------===//
//
// The body of an attention score modifier (flash.attention's score_mod region,
// tile.score_mod): a pure function of the scaled score s (f32) at query row q
// and key row k (and, in the four-index form, batch b and query head h),
// yielding the score the softmax sees (FlexAttention's score_mod). One block,
// whose arguments are
//   s                         f32, scale · q·k
//   (q, k) or (b, h, q, k)    index values
//   then t0, t1, ...          one ranked tensor of f32 or i32 (rank 1-4) per
//                             extra operand (per-head slopes, a bias table)
// and whose terminator yields one f32.
//
// The ops: everything an index function allows (IndexFunction.h) on index and
// i1, and on f32: arith.constant, addf, subf, mulf, divf, negf, maximumf,
// minimumf, cmpf (ordered: oeq, one, olt, ole, ogt, oge), select; math.tanh,
// exp, log, sqrt, absf; arith.sitofp of an i32 / i64 (an index becomes one by
// arith.index_cast) to f32; tensor.extract of an operand at index positions
// (an f32 element is used as is, an i32 one through arith.index_cast to
// index). A read outside an operand's shape gives 0.
//
// The backward needs d(result)/ds: every consumer derives it by forward-mode
// differentiation over the same ops (s has derivative 1; constants, reads and
// converted indices 0; select and max / min pass the chosen side's).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "flashc/Dialect/Common/IndexFunction.h"

namespace flashc {

/// The argument layout of a score function's block: the score, then indices,
/// then tensors.
struct ScoreFunctionLayout {
  unsigned indexArgs = 2;   // 2: (q, k); 4: (b, h, q, k)
  unsigned tensorArgs = 0;  // operands read by tensor.extract
  bool hasBatchAndHead() const { return indexArgs == 4; }
  /// The block argument of index i of (b, h, q, k) (a two-index body has no b
  /// and h: -1).
  int indexArgument(unsigned i) const { return hasBatchAndHead() ? 1 + i : (i < 2 ? -1 : int(i) - 1); }
};

ScoreFunctionLayout scoreFunctionLayout(mlir::Region &body);

/// Whether a type may be a score function's operand: a ranked tensor of f32 or
/// i32 of rank 1 to 4.
bool isScoreFunctionOperandType(mlir::Type type);

/// Checks `body` is a score function (the rules above) whose tensor arguments
/// have exactly `operandTypes`; errors name the offending op. `what` names the
/// owner in messages ("score_mod").
mlir::LogicalResult verifyScoreFunction(mlir::Operation *owner, mlir::Region &body, mlir::TypeRange operandTypes,
                                        llvm::StringRef what);

/// Reads element `position` of operand `operand` as a double (i32 elements
/// exactly); called only for positions inside the operand's shape.
using ScoreOperandReader = llvm::function_ref<double(unsigned operand, llvm::ArrayRef<int64_t> position)>;

/// A score function's value and its derivative with respect to s.
struct ScoreValue {
  double value = 0, derivative = 0;
};

/// Evaluates a verified score function at score `s` and `point` in double
/// precision (indices as IndexFunction.h's 64-bit integers).
ScoreValue evaluateScore(mlir::Region &body, double s, const IndexPoint &point, IndexOperandShape shape = nullptr,
                         ScoreOperandReader read = nullptr);

/// Whether a verified score function's derivative with respect to s is 1
/// everywhere by its form: s plus terms that do not depend on s (ALiBi, a bias
/// table, a distance penalty). The backward then needs no gradient of the
/// modifier: dS passes through it unchanged.
bool scoreDerivativeIsOne(mlir::Region &body);

/// Whether a verified score function is, by its form, s + A(b, h, q) + B(b, h, k)
/// with finite A and B: s plus a term whose query and key parts add (ALiBi's
/// slope[h] · (k - q), a distance between positions read from i32 tensors).
/// Sums, differences, negations, products with a factor free of q and k, and
/// conversions keep parts apart; any other op of both q and k (a min, a compare,
/// a read at both, a division) joins them. A part that may be infinite — an f32
/// read that is added rather than a factor (a bias table, whose -inf masks), or
/// what exp, log, a division or a square root give — is refused too. The kernels
/// add B per key column and leave A out of the softmax (a constant of its row),
/// adding it to lse instead; the terms are taken from the function itself: with
/// any reference row q' and key k',
///   T(q, k) = T(q', k) + (T(q, k') - T(q', k')),   T(q, k) = score(0, q, k),
/// which an infinite T(q', k') would make NaN.
bool scoreBiasSeparable(mlir::Region &body);

/// The score function's text form, what flashc/reference/score_program.h
/// reads: "v0 = sub k q; v1 = itof v0; v2 = read t0 h; v3 = mulf v2 v1;
/// v4 = addf s v3; yield v4". Arguments are s, b, h, q, k (whatever the
/// block's arity) and t0, t1, ...; f32 constants print as "f:<value>" (exact,
/// %a), index ones as integers. With `oneWord` the spaces are commas.
std::string printScoreProgram(mlir::Region &body, bool oneWord = false);

} // namespace flashc
