//===- LiftScoreOps.cpp - elementwise score ops -> flash.score / flash.mask ===//
//
// The graph spelling of attention modifiers: elementwise arith / math ops on the
// score tensor between the Q·Kᵀ chain and the softmax, whose other operands are
//   - tensor.generate: an index tensor (iota) or a gather, its body a function of
//     the element's (b, h, q, k) that may read outer tensors by tensor.extract;
//   - splat constants (arith.constant dense<c>, tensor.splat of a constant).
// flash-fuse-attention lifts such an expression into the ops it fuses:
//   select(c, x, -inf), c free of the scores -> flash.mask <none> mod { c }
//                                                (the compiler classifies its blocks)
//   x, any other expression of the scores     -> flash.score mod { x }
// Each tensor op becomes its scalar form in the region, a float element type
// f32 (the fused attention computes scores in f32: truncf / extf between them
// vanish); a tensor.generate body is inlined at the element's indices, and the
// outer tensors it reads become the region's operands. The regions are then
// verified as the ops' own (IndexFunction.h, ScoreFunction.h): an op they do not
// take is named in the warning, and the graph is left as it was.
//
//===----------------------------------------------------------------------===//
#include "LiftScoreOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;

namespace flashc {
namespace {

std::string nameOf(Operation *op) { return "'" + op->getName().getStringRef().str() + "'"; }

/// Whether `value` is an attention's scores: flash.scale / flash.mask / flash.score ops up to a flash.matmul.
bool leadsToScores(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<MatmulOp>(op))
      return true;
    if (!isa<ScaleOp, MaskOp, ScoreOp>(op))
      return false;
    value = op->getOperand(0);
  }
  return false;
}

/// A splat constant's scalar (arith.constant dense<c> or tensor.splat of an arith.constant), or null.
TypedAttr splatConstant(Value value) {
  Operation *op = value.getDefiningOp();
  if (auto constant = dyn_cast_or_null<arith::ConstantOp>(op))
    if (auto dense = dyn_cast<SplatElementsAttr>(constant.getValue()))
      return dense.getSplatValue<TypedAttr>();
  if (auto splat = dyn_cast_or_null<tensor::SplatOp>(op))
    if (auto constant = splat.getInput().getDefiningOp<arith::ConstantOp>())
      return constant.getValue();
  return {};
}

bool isMinusInfinity(Value value) {
  auto f = dyn_cast_or_null<FloatAttr>(splatConstant(value));
  return f && f.getValue().isInfinity() && f.getValue().isNegative();
}

/// The expression feeding the softmax: its ops (producers first) and its one scores value.
struct ScoreExpression {
  RankedTensorType type;
  Value scores;
  llvm::SetVector<Operation *> ops;
  std::string whyNot;

  bool sameShape(Type t) const {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.getShape() == type.getShape();
  }

  LogicalResult collect(Value value) {
    Operation *op = value.getDefiningOp();
    if (op && ops.contains(op))
      return success();
    if (value == scores)
      return success();
    if (!op)
      return fail("a tensor argument meets the scores elementwise (read it by index in a tensor.generate: a "
                  "full-size operand is not a modifier)");
    if (leadsToScores(value)) {
      if (scores)
        return fail("two score chains meet in the expression");
      if (value.getType() != type)
        return fail("the scores' type differs from the softmax input's");
      scores = value;
      return success();
    }
    if (splatConstant(value)) {
      ops.insert(op);
      return success();
    }
    if (auto generate = dyn_cast<tensor::GenerateOp>(op)) {
      if (!sameShape(generate.getType()))
        return fail("a tensor.generate of another shape than the scores' (no broadcasts)");
      ops.insert(op);
      return success();
    }
    bool elementwise = isa_and_nonnull<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
                       op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1 &&
                       sameShape(op->getResult(0).getType());
    if (!elementwise)
      return fail(nameOf(op) + " on the scores is not an elementwise arith / math op on tensors of their shape");
    for (Value operand : op->getOperands())
      if (failed(collect(operand)))
        return failure();
    ops.insert(op);
    return success();
  }

  LogicalResult fail(std::string reason) {
    whyNot = std::move(reason);
    return failure();
  }

  /// Whether `value`'s expression reads the scores.
  bool readsScores(Value value, llvm::DenseMap<Value, bool> &memo) const {
    if (value == scores)
      return true;
    auto it = memo.find(value);
    if (it != memo.end())
      return it->second;
    Operation *op = value.getDefiningOp();
    bool reads = false;
    if (op && ops.contains(op) && !isa<tensor::GenerateOp>(op))
      for (Value operand : op->getOperands())
        reads = reads || readsScores(operand, memo);
    memo[value] = reads;
    return reads;
  }
};

/// Builds one region (a flash.mask's or a flash.score's) from an expression's tensor ops.
class RegionBuilder {
public:
  RegionBuilder(Block *block, Value scores, unsigned firstIndexArg)
      : b(block, block->end()), block(block), scores(scores), firstIndexArg(firstIndexArg) {}

  SmallVector<Value> tensors;  // the region's operands, in argument order
  std::string whyNot;

  FailureOr<Value> scalar(Value value) {
    if (value == scores)
      return Value(block->getArgument(0));
    if (Value known = built.lookup(value))
      return known;
    FailureOr<Value> result = build(value);
    if (succeeded(result))
      built[value] = *result;
    return result;
  }

private:
  OpBuilder b;
  Block *block;
  Value scores;
  unsigned firstIndexArg;
  llvm::DenseMap<Value, Value> built;

  static Type scalarType(Type type) {
    Type element = getElementTypeOrSelf(type);
    return isa<FloatType>(element) ? Float32Type::get(type.getContext()) : element;
  }

  FailureOr<Value> fail(std::string reason) {
    whyNot = std::move(reason);
    return failure();
  }

  Value tensorArgument(Value tensor) {
    for (auto [i, t] : llvm::enumerate(tensors))
      if (t == tensor)
        return block->getArgument(block->getNumArguments() - tensors.size() + i);
    tensors.push_back(tensor);
    return block->addArgument(tensor.getType(), tensor.getLoc());
  }

  Value constant(TypedAttr attr, Location loc) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      attr = b.getF32FloatAttr(static_cast<float>(f.getValueAsDouble()));
    return b.create<arith::ConstantOp>(loc, attr);
  }

  FailureOr<Value> build(Value value) {
    Operation *op = value.getDefiningOp();
    if (TypedAttr attr = splatConstant(value))
      return constant(attr, op->getLoc());
    if (auto generate = dyn_cast<tensor::GenerateOp>(op))
      return inlineGenerate(generate);
    // An elementwise op: its scalar form on the operands' scalars.
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> s = scalar(operand);
      if (failed(s))
        return failure();
      operands.push_back(*s);
    }
    Type resultType = scalarType(op->getResult(0).getType());
    if (isa<arith::TruncFOp, arith::ExtFOp>(op) && operands[0].getType() == resultType)
      return operands[0];  // between f32 and f32: both sides are the attention's f32 scores
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addTypes(resultType);
    state.addAttributes(op->getAttrs());
    return b.create(state)->getResult(0);
  }

  /// The body of `generate` at the region's indices; outer tensors become the region's operands, outer constants
  /// are copied in.
  FailureOr<Value> inlineGenerate(tensor::GenerateOp generate) {
    Block &body = generate.getBody().front();
    if (body.getNumArguments() != 4)
      return fail("a tensor.generate of rank " + std::to_string(body.getNumArguments()) + " (the scores are rank 4)");
    IRMapping mapping;
    for (unsigned i = 0; i < 4; ++i)
      mapping.map(body.getArgument(i), block->getArgument(firstIndexArg + i));
    Value yielded;
    for (Operation &inner : body) {
      for (Value operand : inner.getOperands()) {
        if (mapping.contains(operand) || generate.getBody().isAncestor(operand.getParentRegion()))
          continue;
        if (isa<RankedTensorType>(operand.getType())) {
          mapping.map(operand, tensorArgument(operand));
        } else if (auto c = operand.getDefiningOp<arith::ConstantOp>()) {
          mapping.map(operand, b.clone(*c)->getResult(0));
        } else {
          return fail("the tensor.generate body reads a value from outside that is neither a tensor nor a constant");
        }
      }
      if (auto yield = dyn_cast<tensor::YieldOp>(inner)) {
        yielded = mapping.lookup(yield.getValue());
        break;
      }
      if (isa<arith::TruncFOp, arith::ExtFOp>(inner) && mapping.lookup(inner.getOperand(0)).getType().isF32()) {
        mapping.map(inner.getResult(0), mapping.lookup(inner.getOperand(0)));  // f32 scores: no rounding
        continue;
      }
      b.clone(inner, mapping);
    }
    if (isa<FloatType>(yielded.getType()) && !yielded.getType().isF32())
      yielded = b.create<arith::ExtFOp>(generate.getLoc(), b.getF32Type(), yielded);
    return yielded;
  }
};

/// Verifies `op` as built; on failure, the first diagnostic's text.
LogicalResult verifyQuietly(Operation *op, std::string &whyNot) {
  std::string first;
  ScopedDiagnosticHandler handler(op->getContext(), [&](Diagnostic &d) {
    if (first.empty())
      first = d.str();
    return success();
  });
  if (succeeded(mlir::verify(op)))
    return success();
  whyNot = first.empty() ? "the lifted region does not verify" : first;
  return failure();
}

} // namespace

LogicalResult liftScoreOps(SoftmaxOp softmax, RewriterBase &rewriter, std::string &whyNot) {
  Value root = softmax.getInput();
  Operation *rootOp = root.getDefiningOp();
  // Only an attention's softmax (P·V its one user), over an expression of arith / math ops.
  auto rootType = dyn_cast<RankedTensorType>(root.getType());
  if (!rootOp || !rootType || !isa_and_nonnull<arith::ArithDialect, math::MathDialect>(rootOp->getDialect()) ||
      !softmax->hasOneUse() || !isa<MatmulOp>(*softmax->getUsers().begin()))
    return success();
  ScoreExpression expression{rootType};
  if (failed(expression.collect(root))) {
    whyNot = expression.whyNot;
    return failure();
  }
  if (!expression.scores)
    return success();  // no attention scores in it

  // select(c, x, -inf) with c free of the scores: the mask is c, the score expression x.
  Value maskValue, scoreValue = root;
  llvm::DenseMap<Value, bool> memo;
  if (auto select = dyn_cast<arith::SelectOp>(rootOp);
      select && isMinusInfinity(select.getFalseValue()) && !expression.readsScores(select.getCondition(), memo)) {
    maskValue = select.getCondition();
    scoreValue = select.getTrueValue();
  }

  MLIRContext *ctx = softmax.getContext();
  Location loc = rootOp->getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(softmax);
  Value current = expression.scores;
  IndexType index = rewriter.getIndexType();
  SmallVector<Operation *> created;
  auto undo = [&](std::string reason) {
    for (Operation *op : llvm::reverse(created))
      rewriter.eraseOp(op);
    whyNot = std::move(reason);
    return failure();
  };
  if (scoreValue != expression.scores) {
    auto score = rewriter.create<ScoreOp>(loc, expression.type, current, ValueRange());
    created.push_back(score);
    Block *block = new Block();
    score.getScoreMod().push_back(block);
    block->addArgument(rewriter.getF32Type(), loc);
    for (int i = 0; i < 4; ++i)
      block->addArgument(index, loc);
    RegionBuilder builder(block, expression.scores, /*firstIndexArg=*/1);
    FailureOr<Value> result = builder.scalar(scoreValue);
    if (failed(result))
      return undo(builder.whyNot);
    OpBuilder::atBlockEnd(block).create<YieldOp>(loc, *result);
    score.getScoreOperandsMutable().assign(builder.tensors);
    if (failed(verifyQuietly(score, whyNot)))
      return undo(whyNot);
    current = score.getResult();
  }
  // A mask on the scores before the expression (causal, a window) and no score op between: one flash.mask with
  // both (the attention takes one).
  MaskOp before;
  if (auto m = current.getDefiningOp<MaskOp>(); maskValue && m && !m.hasMaskMod() && current == expression.scores)
    before = m;
  if (maskValue) {
    auto mask = rewriter.create<MaskOp>(loc, expression.type, before ? before.getInput() : current,
                                        before ? before.getMask() : MaskAttr::get(ctx, MaskKind::None), ValueRange());
    created.push_back(mask);
    Block *block = new Block();
    mask.getMaskMod().push_back(block);
    for (int i = 0; i < 4; ++i)
      block->addArgument(index, loc);
    RegionBuilder builder(block, Value(), /*firstIndexArg=*/0);
    FailureOr<Value> result = builder.scalar(maskValue);
    if (failed(result))
      return undo(builder.whyNot);
    OpBuilder::atBlockEnd(block).create<YieldOp>(loc, *result);
    mask.getMaskOperandsMutable().assign(builder.tensors);
    if (failed(verifyQuietly(mask, whyNot)))
      return undo(whyNot);
    current = mask.getResult();
  }
  rewriter.modifyOpInPlace(softmax, [&] { softmax.getInputMutable().assign(current); });
  // The expression's ops, then what only they used (the tensor.dim sizes of its generates and splats, which
  // would hold a second use of the scores and stop the fusion).
  llvm::SmallPtrSet<Operation *, 16> erased;
  SmallVector<Operation *> dead(expression.ops.begin(), expression.ops.end());  // consumers popped first
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    if (erased.contains(op) || !op->use_empty() || !isMemoryEffectFree(op))
      continue;
    SmallVector<Operation *> producers;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp(); producer && !isa<MatmulOp, ScaleOp, MaskOp, ScoreOp>(producer))
        producers.push_back(producer);
    erased.insert(op);
    rewriter.eraseOp(op);
    dead.append(producers.begin(), producers.end());
  }
  if (before && before->use_empty())
    rewriter.eraseOp(before);
  return success();
}

} // namespace flashc
