//===- FuseMoE.cpp - a mixture of experts' graph spelling -> flash.moe ----===//
//
//   logits = flash.matmul x, router                  (router [d, E]: rank 2, static, untransposed)
//   s      = flash.softmax logits | flash.sigmoid logits
//   w, ids = flash.top_k s k = K
//   [w     = flash.normalize w]                      (renormalize)
//   rows   = flash.expert_ffn act x, ids, w1 [up w_up], w2
//   y      = flash.combine rows, w
// becomes  y = flash.moe act x, router, w1 [up w_up], w2 top_k = K gating = softmax | sigmoid [renormalize].
// The anchor is the combine; every intermediate must have that one use. What blocks the rewrite is a warning at the
// combine naming it, so the graph still evaluates and flash-tile says no kernel lowers the unfused ops.
//
//===----------------------------------------------------------------------===//
#include "FusedOpCheck.h"
#include "flashc/Compiler/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FUSEMOE
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

struct MoeMatch {
  MatmulOp router;
  Operation *gate = nullptr; // softmax or sigmoid
  TopKOp topK;
  NormalizeOp normalize; // null: not renormalised
  ExpertFfnOp experts;
};

/// The chain ending at `combine`, or why there is none.
FailureOr<MoeMatch> matchMoe(CombineOp combine, std::string &why) {
  MoeMatch m;
  auto fail = [&](const Twine &reason) -> FailureOr<MoeMatch> {
    why = reason.str();
    return failure();
  };
  m.experts = combine.getRows().getDefiningOp<ExpertFfnOp>();
  if (!m.experts)
    return fail("its rows are not a flash.expert_ffn's");
  Value weights = combine.getWeights();
  if ((m.normalize = weights.getDefiningOp<NormalizeOp>()))
    weights = m.normalize.getInput();
  m.topK = weights.getDefiningOp<TopKOp>();
  if (!m.topK || weights != m.topK.getValues())
    return fail("its weights are not a flash.top_k's values (or their flash.normalize)");
  if (m.experts.getIds() != m.topK.getIndices())
    return fail("the experts' ids are not the indices of the flash.top_k that weighs them");
  Value scores = m.topK.getScores();
  m.gate = scores.getDefiningOp();
  if (!m.gate || !isa<SoftmaxOp, SigmoidOp>(m.gate))
    return fail("flash.top_k does not read a flash.softmax or flash.sigmoid of the router's logits");
  m.router = m.gate->getOperand(0).getDefiningOp<MatmulOp>();
  if (!m.router)
    return fail("the scores are not of a router matmul (flash.matmul x, router)");
  RankedTensorType routerType = m.router.getRhs().getType();
  if (m.router.getTransposeA() || m.router.getTransposeB() || routerType.getRank() != 2 ||
      !routerType.hasStaticShape())
    return fail("the router matmul's router is not a static [d, E] weight, untransposed");
  if (m.router.getLhs() != m.experts.getInput())
    return fail("the router reads another input than the experts");
  RankedTensorType w1Type = m.experts.getW1().getType();
  if (routerType.getDimSize(1) != w1Type.getDimSize(0))
    return fail("the router scores " + Twine(routerType.getDimSize(1)) + " experts, the expert weights hold " +
                Twine(w1Type.getDimSize(0)));
  if (routerType.getDimSize(0) != w1Type.getDimSize(1))
    return fail("the router's width d = " + Twine(routerType.getDimSize(0)) + " is not the experts' d = " +
                Twine(w1Type.getDimSize(1)));
  auto oneUse = [&](Value v, StringRef what) -> bool {
    if (v.hasOneUse())
      return true;
    why = (what + " has another use besides the mixture of experts").str();
    return false;
  };
  if (!oneUse(m.router.getResult(), "the router's logits") || !oneUse(scores, "the router's scores") ||
      !oneUse(m.topK.getValues(), "flash.top_k's values") || !oneUse(m.topK.getIndices(), "flash.top_k's indices") ||
      (m.normalize && !oneUse(m.normalize.getResult(), "the renormalised weights")) ||
      !oneUse(m.experts.getResult(), "the experts' rows"))
    return failure();
  return m;
}

struct FuseMoEPass : public mlir::flash::impl::FuseMoEBase<FuseMoEPass> {
  void runOnOperation() override {
    SmallVector<CombineOp> combines;
    getOperation()->walk([&](CombineOp op) { combines.push_back(op); });
    for (CombineOp combine : combines) {
      std::string why;
      FailureOr<MoeMatch> m = matchMoe(combine, why);
      if (failed(m)) {
        combine.emitWarning() << "flash-fuse-moe: not fused into flash.moe: " << why;
        continue;
      }
      OpBuilder builder(combine);
      ExpertFfnOp experts = m->experts;
      auto moe = builder.create<MoeOp>(
          combine.getLoc(), combine.getResult().getType(), experts.getActivation(), experts.getInput(),
          m->router.getRhs(), experts.getW1(), experts.getWUp(), experts.getW2(), m->topK.getK(),
          isa<SigmoidOp>(m->gate) ? MoeGating::Sigmoid : MoeGating::Softmax, static_cast<bool>(m->normalize));
      if (failed(flashc::verifyFused(moe, why))) {
        moe.erase();
        combine.emitWarning() << "flash-fuse-moe: not fused into flash.moe: " << why;
        continue;
      }
      combine.getResult().replaceAllUsesWith(moe.getResult());
      // Consumers before producers.
      combine.erase();
      experts.erase();
      if (m->normalize)
        m->normalize.erase();
      m->topK.erase();
      m->gate->erase();
      m->router.erase();
    }
  }
};

} // namespace
