//===- DocumentIds.cpp - mask modifiers that compare documents ------------===//
#include "flashc/Dialect/Common/DocumentIds.h"

#include "flashc/Dialect/Common/IndexFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace flashc {

namespace {

/// The read under `value`'s injective casts, and the casts, outermost first.
tensor::ExtractOp readUnderCasts(Value value, SmallVectorImpl<Operation *> &casts) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp>(def))
      return dyn_cast<tensor::ExtractOp>(def);
    casts.push_back(def);
    value = def->getOperand(0);
  }
  return nullptr;
}

bool sameCasts(ArrayRef<Operation *> a, ArrayRef<Operation *> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (x->getName() != y->getName() || x->getResultTypes() != y->getResultTypes())
      return false;
  return true;
}

} // namespace

namespace {

/// The ids' tensor argument of `value` = t[q] == t[k] (either order), or none.
std::optional<unsigned> sameDocument(Value value, Block &block, const IndexFunctionLayout &layout) {
  Value q = block.getArgument(layout.indexArgs - 2), k = block.getArgument(layout.indexArgs - 1);
  auto compare = value.getDefiningOp<arith::CmpIOp>();
  if (!compare || compare.getPredicate() != arith::CmpIPredicate::eq)
    return std::nullopt;
  SmallVector<Operation *> lhsCasts, rhsCasts;
  tensor::ExtractOp lhs = readUnderCasts(compare.getLhs(), lhsCasts);
  tensor::ExtractOp rhs = readUnderCasts(compare.getRhs(), rhsCasts);
  if (!lhs || !rhs || lhs.getTensor() != rhs.getTensor() || !sameCasts(lhsCasts, rhsCasts) ||
      lhs.getIndices().size() != 1 || rhs.getIndices().size() != 1)
    return std::nullopt;
  auto ids = dyn_cast<BlockArgument>(lhs.getTensor());
  if (!ids || ids.getOwner() != &block || ids.getArgNumber() < layout.indexArgs)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(ids.getType());
  if (!type || type.getRank() != 1 || !type.getElementType().isSignlessInteger(32))
    return std::nullopt;
  Value a = lhs.getIndices()[0], b = rhs.getIndices()[0];
  if (!((a == q && b == k) || (a == k && b == q)))
    return std::nullopt;
  return ids.getArgNumber() - layout.indexArgs;
}

/// Whether `value` is q >= k (sge q, k or sle k, q) of the body's own indices.
bool causal(Value value, Block &block, const IndexFunctionLayout &layout) {
  Value q = block.getArgument(layout.indexArgs - 2), k = block.getArgument(layout.indexArgs - 1);
  auto compare = value.getDefiningOp<arith::CmpIOp>();
  if (!compare)
    return false;
  using P = arith::CmpIPredicate;
  return (compare.getPredicate() == P::sge && compare.getLhs() == q && compare.getRhs() == k) ||
         (compare.getPredicate() == P::sle && compare.getLhs() == k && compare.getRhs() == q);
}

} // namespace

std::optional<DocumentCompare> documentCompare(Region &body) {
  if (!body.hasOneBlock())
    return std::nullopt;
  Block &block = body.front();
  IndexFunctionLayout layout = indexFunctionLayout(body);
  if (layout.tensorArgs == 0)
    return std::nullopt;
  Operation *yield = block.getTerminator();  // (the owner's yield: one i1)
  if (!yield || yield->getNumOperands() != 1)
    return std::nullopt;
  Value visible = yield->getOperand(0);
  if (std::optional<unsigned> ids = sameDocument(visible, block, layout))
    return DocumentCompare{*ids, false};
  auto both = visible.getDefiningOp<arith::AndIOp>();
  if (!both)
    return std::nullopt;
  for (auto [a, b] : {std::pair{both.getLhs(), both.getRhs()}, std::pair{both.getRhs(), both.getLhs()}})
    if (std::optional<unsigned> ids = sameDocument(a, block, layout); ids && causal(b, block, layout))
      return DocumentCompare{*ids, true};
  return std::nullopt;
}

} // namespace flashc
