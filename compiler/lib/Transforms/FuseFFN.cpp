//===- FuseFFN.cpp - matmul/[bias]/activation/matmul/[bias] -> ffn --------===//
//
// Plain:  y = act(x·W1 [+ b1]) · W2 [+ b2]
// Gated:  y = (act(x·Wg) ⊙ (x·Wu)) · W2 [+ b2]       (⊙ in either order)
// act is flash.gelu (tanh or erf), flash.silu or flash.relu. Weights are
// rank-2 untransposed matmul rhs operands with static shapes, biases rank-1
// rhs operands of flash.add; every intermediate value has exactly one use.
// The anchor is the second matmul; a following bias add is absorbed into the
// flash.ffn, so a residual add (full-shape rhs) is left alone.
//
//===----------------------------------------------------------------------===//
#include "FusedOpCheck.h"
#include "flashc/Compiler/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::flash {
#define GEN_PASS_DEF_FUSEFFN
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

struct FfnMatch {
  Operation *root = nullptr; // the op whose result the ffn replaces
  Activation activation = Activation::GeluTanh;
  Value input, w1, b1, wUp, w2, b2;
  /// Ops that become dead, consumers before producers (root first).
  SmallVector<Operation *> chain;
};

/// x·W with W a static rank-2, untransposed rhs.
bool isProjection(MatmulOp matmul) {
  return matmul && !matmul.getTransposeA() && !matmul.getTransposeB() &&
         matmul.getRhs().getType().getRank() == 2 &&
         matmul.getRhs().getType().hasStaticShape();
}

/// `value` is a single-use projection result; returns its matmul.
MatmulOp singleUseProjection(Value value) {
  auto matmul = value.getDefiningOp<MatmulOp>();
  if (!value.hasOneUse() || !isProjection(matmul))
    return {};
  return matmul;
}

/// lhs + bias with a rank-1 bias; returns the add.
AddOp biasAdd(Operation *op) {
  auto add = dyn_cast_or_null<AddOp>(op);
  if (!add || add.getRhs().getType().getRank() != 1)
    return {};
  return add;
}

/// Recognizes an activation op; returns its input.
std::optional<Value> matchActivation(Operation *op, Activation &activation) {
  if (auto gelu = dyn_cast_or_null<GeluOp>(op)) {
    activation = gelu.getApproximation() == GeluApproximation::Tanh
                     ? Activation::GeluTanh
                     : Activation::GeluErf;
    return gelu.getInput();
  }
  if (auto silu = dyn_cast_or_null<SiluOp>(op)) {
    activation = Activation::Silu;
    return silu.getInput();
  }
  if (auto relu = dyn_cast_or_null<ReluOp>(op)) {
    activation = Activation::Relu;
    return relu.getInput();
  }
  return std::nullopt;
}

/// act(x·W1 [+ b1]) feeding the second matmul.
bool matchPlainHidden(Value hidden, FfnMatch &match) {
  Operation *activationOp = hidden.getDefiningOp();
  std::optional<Value> preActivation =
      matchActivation(activationOp, match.activation);
  if (!preActivation)
    return false;
  SmallVector<Operation *> ops = {activationOp};
  Value projected = *preActivation;
  Value bias;
  if (AddOp add = biasAdd(projected.getDefiningOp())) {
    if (!projected.hasOneUse())
      return false;
    bias = add.getRhs();
    ops.push_back(add);
    projected = add.getLhs();
  }
  MatmulOp first = singleUseProjection(projected);
  if (!first)
    return false;
  ops.push_back(first);
  match.b1 = bias;
  match.input = first.getLhs();
  match.w1 = first.getRhs();
  match.chain.append(ops);
  return true;
}

/// act(x·Wg) ⊙ (x·Wu) feeding the second matmul, product in either order.
bool matchGatedHidden(Value hidden, FfnMatch &match) {
  auto product = hidden.getDefiningOp<MulOp>();
  if (!product)
    return false;
  for (auto [gate, up] : {std::pair(product.getLhs(), product.getRhs()),
                          std::pair(product.getRhs(), product.getLhs())}) {
    Operation *activationOp = gate.getDefiningOp();
    Activation activation;
    std::optional<Value> preActivation =
        matchActivation(activationOp, activation);
    if (!preActivation || !gate.hasOneUse())
      continue;
    MatmulOp gateProjection = singleUseProjection(*preActivation);
    MatmulOp upProjection = singleUseProjection(up);
    if (!gateProjection || !upProjection ||
        gateProjection.getLhs() != upProjection.getLhs() ||
        gateProjection.getRhs().getType() != upProjection.getRhs().getType())
      continue;
    match.activation = activation;
    match.input = gateProjection.getLhs();
    match.w1 = gateProjection.getRhs();
    match.wUp = upProjection.getRhs();
    match.chain.append({product, activationOp, gateProjection, upProjection});
    return true;
  }
  return false;
}

/// Whether `hidden` is shaped like an FFN's hidden layer: an activation, or a
/// product with an activation on one side (the near misses worth a warning).
bool looksLikeHidden(Value hidden) {
  Activation ignored;
  Operation *op = hidden.getDefiningOp();
  if (matchActivation(op, ignored))
    return true;
  auto product = dyn_cast_or_null<MulOp>(op);
  return product && llvm::any_of(product->getOperands(), [&](Value side) {
           return matchActivation(side.getDefiningOp(), ignored).has_value();
         });
}

/// The FFN ending at the second matmul `second`, or nullopt. When `second`
/// multiplies an activation (a near miss), `whyNot` says what stopped it.
std::optional<FfnMatch> matchFfn(MatmulOp second, std::string &whyNot) {
  FfnMatch match;
  Value hidden = second.getLhs();
  bool nearMiss = looksLikeHidden(hidden);
  auto fail = [&](const char *reason) -> std::optional<FfnMatch> {
    if (nearMiss)
      whyNot = reason;
    return std::nullopt;
  };
  if (!isProjection(second))
    return fail("W2 must be a static rank-2 matmul rhs, neither operand transposed");
  if (!hidden.hasOneUse())
    return fail("the hidden activation has other users");
  match.chain.push_back(second);
  if (!matchPlainHidden(hidden, match) && !matchGatedHidden(hidden, match))
    return fail(isa_and_nonnull<MulOp>(hidden.getDefiningOp())
                    ? "a gated hidden must be act(x·Wg) ⊙ (x·Wu): single-use projections of the same x "
                      "with static rank-2 weights of one shape"
                    : "the activation's input must be a single-use x·W1 [+ b1] with W1 a static "
                      "rank-2 matmul rhs and b1 rank 1");
  match.w2 = second.getRhs();
  match.root = second;

  // A rank-1 bias added right after the second matmul belongs to the ffn.
  Value result = second.getResult();
  if (result.hasOneUse()) {
    Operation *user = *result.getUsers().begin();
    if (AddOp add = biasAdd(user); add && add.getLhs() == result) {
      match.b2 = add.getRhs();
      match.chain.insert(match.chain.begin(), add);
      match.root = add;
    }
  }
  if (cast<RankedTensorType>(match.input.getType()).getRank() < 2)
    return fail("the input x must have rank 2 or more");
  // flash.ffn's sizes are positive: a static 0 stays a graph (it fused into an op that failed its verifier).
  for (Value v : {match.input, match.w1, match.w2, Value(second.getResult())})
    if (llvm::is_contained(cast<RankedTensorType>(v.getType()).getShape(), 0))
      return fail("a static size of 0 (flash.ffn's sizes are positive; a size that may be 0 at run time is ?)");
  return match;
}

LogicalResult rewriteFfn(FfnMatch &match, RewriterBase &rewriter, std::string &whyNot) {
  // Every operand dominates the root (the second matmul or its bias add).
  rewriter.setInsertionPoint(match.root);
  SmallVector<Location> locations;
  for (Operation *op : match.chain)
    locations.push_back(op->getLoc());
  auto ffn = rewriter.create<FfnOp>(
      rewriter.getFusedLoc(locations), match.root->getResult(0).getType(),
      match.activation, match.input, match.w1, match.b1, match.wUp, match.w2,
      match.b2);
  if (failed(flashc::verifyFused(ffn, whyNot))) {
    rewriter.eraseOp(ffn);
    return failure();
  }
  rewriter.replaceAllUsesWith(match.root->getResult(0), ffn.getResult());
  for (Operation *op : match.chain)
    rewriter.eraseOp(op);
  return success();
}

struct FuseFFNPass : public mlir::flash::impl::FuseFFNBase<FuseFFNPass> {
  void runOnOperation() override {
    // Program order; a rewrite erases only the bias add after its anchor
    // (never a matmul) and ops before it, all already visited.
    SmallVector<MatmulOp> candidates;
    getOperation()->walk([&](MatmulOp op) { candidates.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (MatmulOp candidate : candidates) {
      std::string whyNot;
      std::optional<FfnMatch> match = matchFfn(candidate, whyNot);
      if (match && succeeded(rewriteFfn(*match, rewriter, whyNot)))
        continue;
      if (!whyNot.empty())
        candidate.emitWarning() << "act(...)·W2 not fused into flash.ffn: " << whyNot;
    }
  }
};

} // namespace
