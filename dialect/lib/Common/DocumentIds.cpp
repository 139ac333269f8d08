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

std::optional<unsigned> documentIdsOperand(Region &body) {
  if (!body.hasOneBlock())
    return std::nullopt;
  Block &block = body.front();
  IndexFunctionLayout layout = indexFunctionLayout(body);
  if (layout.tensorArgs == 0)
    return std::nullopt;
  Value q = block.getArgument(layout.indexArgs - 2), k = block.getArgument(layout.indexArgs - 1);
  Operation *yield = block.getTerminator();  // (the owner's yield: one i1)
  if (!yield || yield->getNumOperands() != 1)
    return std::nullopt;
  auto compare = yield->getOperand(0).getDefiningOp<arith::CmpIOp>();
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

} // namespace flashc
