//===- KernelMath.cpp - what a kernel recipe computes, in one line --------===//
#include "flashc/Compiler/KernelMath.h"

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::tile;

namespace flashc {
namespace {

/// Six significant digits: enough to recognise 1/sqrt(d), and the same text
/// for the same value on every host (no locale, no hash order).
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string typeName(TypeAttr type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.getValue().print(os);
  return os.str();
}

std::string maskText(AttentionSpecAttr spec) {
  int64_t left = spec.getWindowLeft(), right = spec.getWindowRight();
  std::string mod = spec.getMaskMod() ? ", mask modifier @" + spec.getMaskMod().getValue().str() : "";
  if (left < 0 && right < 0)
    return mod;
  auto side = [](int64_t n) { return n < 0 ? std::string("unbounded") : std::to_string(n); };
  std::string positions = spec.getTopLeft() ? " (top-left: a band mask modifier's)" : "";
  if (left < 0 && right == 0)
    return ", causal" + positions + mod;
  return ", window " + side(left) + " left / " + side(right) + " right" + positions + mod;
}

std::string attentionMath(AttentionSpecAttr spec) {
  std::string scores = "Q·Kᵀ·" + number(spec.getScale().getValueAsDouble());
  double softcap = spec.getSoftcap().getValueAsDouble();
  if (softcap > 0)
    scores = number(softcap) + "·tanh(" + scores + "/" + number(softcap) + ")";
  std::string probs = "softmax(" + scores + maskText(spec) + ")";
  std::string scale = number(spec.getScale().getValueAsDouble());
  std::string where = " where P = " + probs + ", dS = P ∘ (dO·Vᵀ − D)";
  std::string math;
  switch (spec.getRole()) {
  case KernelRole::AttentionForward:
    math = "O = " + probs + "·V, lse = logsumexp of each score row";
    break;
  case KernelRole::AttentionBackwardPreprocess:
    math = "D = rowsum(dO ∘ O)";
    break;
  case KernelRole::AttentionBackward:
    math = "dK = dSᵀ·Q·" + scale + ", dV = Pᵀ·dO, dQ += dS·K·" + scale + "," + where;
    break;
  case KernelRole::AttentionBackwardTransposed:
    math = "dK = dSᵀ·Q·" + scale + ", dV = Pᵀ·dO, dQ += dS·K·" + scale + " (keys as rows)," + where;
    break;
  case KernelRole::AttentionBackwardKV:
    math = "dK = dSᵀ·Q·" + scale + ", dV = Pᵀ·dO," + where;
    break;
  case KernelRole::AttentionBackwardKVTransposed:
    math = "dK = dSᵀ·Q·" + scale + ", dV = Pᵀ·dO (keys as rows)," + where;
    break;
  case KernelRole::AttentionBackwardDQ:
    math = "dQ = dS·K·" + scale + "," + where;
    break;
  case KernelRole::AttentionBackwardPostprocess:
    math = "dQ = the f32 dQ accumulator, converted";
    break;
  default:
    math = stringifyKernelRole(spec.getRole()).str();
    break;
  }
  std::string dims = "head dim " + std::to_string(spec.getHeadDim());
  if (spec.getValueDim() != spec.getHeadDim())
    dims = "head dims " + std::to_string(spec.getHeadDim()) + " (Q, K) / " + std::to_string(spec.getValueDim()) + " (V)";
  return math + " (" + typeName(spec.getElementType()) + ", " + dims + ")";
}

std::string gemmMath(GemmSpecAttr spec) {
  Activation activation = spec.getActivation();
  auto act = [&](const std::string &x) {
    return activation == Activation::Identity ? x : stringifyActivation(activation).str() + "(" + x + ")";
  };
  auto derivative = [&](const std::string &x) {
    return activation == Activation::Identity ? std::string("1")
                                              : stringifyActivation(activation).str() + "'(" + x + ")";
  };
  std::string a = spec.getTransposeA().getValue() ? "Aᵀ" : "A";
  std::string b = spec.getTransposeB().getValue() ? "Bᵀ" : "B";
  double alpha = spec.getAlpha().getValueAsDouble();
  std::string product = (alpha != 1.0 ? number(alpha) + "·" : std::string()) + a + "·" + b;
  bool gated = spec.getGated().getValue();
  std::string b2 = spec.getBias2().getValue() ? " + b2" : "";
  std::string math;
  switch (spec.getRole()) {
  case KernelRole::Gemm:
    if (spec.appliesGatedActGrad()) {
      math = "D = " + product + ", C = (D ∘ U) ∘ " + derivative("P") + ", C_up = D ∘ " + act("P");
      break;
    }
    if (spec.appliesActGrad()) {
      math = "C = " + product + " ∘ " + derivative("P");
      break;
    }
    math = "C " + std::string(spec.getAccumulate().getValue() ? "+= " : "= ") +
           act(product + (spec.getBias1().getValue() ? " + bias" : ""));
    if (spec.savesPre())
      math += ", pre = " + product + (spec.getBias1().getValue() ? " + bias" : "") + " saved";
    break;
  case KernelRole::GatedGemm:
    math = "C = " + act(a + "·Bg") + " ∘ (" + a + "·Bu)";
    if (spec.savesPre())
      math += ", g = " + a + "·Bg and u = " + a + "·Bu saved";
    break;
  case KernelRole::FfnFused:
    math = gated ? "y = (" + act("x·Wg") + " ∘ (x·Wu))·W2" + b2
                 : "y = " + act("x·W1" + std::string(spec.getBias1().getValue() ? " + b1" : "")) + "·W2" + b2;
    math += spec.savesPre() ? (gated ? " (g, u and h saved)" : " (pre and h saved)")
                            : " (hidden tile kept on chip)";
    break;
  case KernelRole::FfnActivationGrad:
    math = gated ? "dg = dh ∘ u ∘ " + derivative("g") + ", du = dh ∘ " + act("g")
                 : "dpre = dh ∘ " + derivative("pre");
    math += ", elementwise";
    break;
  case KernelRole::ColumnSum:
    math = "db[n] = Σ_m A[m, n]";
    break;
  case KernelRole::GemmSplitK:
    math = "C += " + product + " over one slice of the contraction per grid z (f32, atomic)";
    break;
  case KernelRole::ConvertF32:
    math = "C = A (f32), converted";
    break;
  default:
    math = stringifyKernelRole(spec.getRole()).str();
    break;
  }
  return math + " (" + typeName(spec.getElementType()) + ")";
}

} // namespace

std::string describeKernelMath(Attribute spec) {
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec))
    return attentionMath(attention);
  if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec))
    return gemmMath(gemm);
  if (auto decode = llvm::dyn_cast_or_null<DecodeSpecAttr>(spec)) {
    std::string cache = decode.isPaged() ? "a cache of " + std::to_string(decode.getPageSize()) + "-row pages"
                                         : "a contiguous cache";
    std::string what;
    switch (decode.getRole()) {
    case KernelRole::DecodeCheck:
      what = "cache_seqlens and the pages they use checked, the first bad entry -> status";
      break;
    case KernelRole::KvAppendCheck:
      what = "cache_seqlens (each at least the new tokens) and the pages they use checked, the first bad entry -> "
             "status";
      break;
    case KernelRole::KvAppend:
      what = "the new tokens' K and V rows written at cache rows cache_seqlens - T ..";
      break;
    case KernelRole::DecodeSplit:
      what = llvm::formatv("O = softmax(Q·Kᵀ·{0}{1})·V over a split of {2}, {3} tokens x {4} query heads a kv head",
                           decode.getScale().getValueAsDouble(), decode.getCausal() ? ", causal" : "", cache,
                           decode.getQueries(), decode.getGroup())
                 .str();
      break;
    default:
      what = "out, lse = the splits' partials weighted by exp(lse_s - lse)";
      break;
    }
    return what + " (" + typeName(decode.getElementType()) + ", D = " + std::to_string(decode.getHeadDim()) + ")";
  }
  if (auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(spec)) {
    std::string act = stringifyActivation(moe.getActivation()).str();
    std::string what;
    switch (moe.getRole()) {
    case KernelRole::MoeRouter:
      what = "logits = x · router";
      break;
    case KernelRole::MoeSelect:
      what = llvm::formatv("the top {0} of {1}(logits) over {2} experts{3}, a row of each claimed", moe.getTopK(),
                           moe.getSigmoid() ? "sigmoid" : "softmax", moe.getExperts(),
                           moe.getRenormalize() ? ", weights renormalised" : "")
                 .str();
      break;
    case KernelRole::MoePlan:
      what = "each expert's first row (padded to 128) and the row blocks' experts";
      break;
    case KernelRole::MoePermute:
      what = "token rows to their experts' rows, padding zeroed";
      break;
    case KernelRole::MoeUp:
      what = moe.getGated() ? act + "(x_e · w1[e]) ⊙ (x_e · w_up[e]) of each expert's rows"
                            : act + "(x_e · w1[e]) of each expert's rows";
      break;
    case KernelRole::MoeDown:
      what = "hidden_e · w2[e] of each expert's rows";
      break;
    case KernelRole::MoeScatterGrad:
      what = "d_expert_out row = weight x dy[t], d_weights = dy[t] · expert_out row";
      break;
    case KernelRole::MoeDataGrad:
      what = "c = a_e · w[e]ᵀ of each expert's rows";
      break;
    case KernelRole::MoeDataGradAccumulate:
      what = "c += a_e · w[e]ᵀ of each expert's rows";
      break;
    case KernelRole::MoeActivationGrad:
      what = moe.getGated() ? "d_gate = dh ⊙ up ⊙ " + act + "'(gate), d_up = dh ⊙ " + act + "(gate)"
                            : "d_pre = dh ⊙ " + act + "'(pre)";
      break;
    case KernelRole::MoeWeightGrad:
      what = "dw[e] = a_eᵀ · b_e over each expert's rows";
      break;
    case KernelRole::MoeSelectGrad:
      what = llvm::formatv("d_logits through {0}{1}, the choice held fixed", moe.getSigmoid() ? "sigmoid" : "softmax",
                           moe.getRenormalize() ? " and the renormalisation" : "")
                 .str();
      break;
    case KernelRole::MoeGatherGrad:
      what = "dx = sum of each token's rows of dx_perm";
      break;
    default:
      what = "y = sum over each token's experts of weight x row";
      break;
    }
    return what + " (" + typeName(moe.getElementType()) + ")";
  }
  if (auto varlen = llvm::dyn_cast_or_null<VarlenSpecAttr>(spec)) {
    if (varlen.getRole() == KernelRole::VarlenPlan)
      return "cu_seqlens_q / cu_seqlens_k checked (a bad entry -> status), the tile map of " +
             std::to_string(varlen.getBlockM()) + "-row query tiles written";
    std::string mask = varlen.getWindowLeft() < 0 && varlen.getWindowRight() < 0 ? ""
                       : varlen.isCausal()                                       ? ", causal"
                                                                                  : ", windowed";
    return llvm::formatv("O = softmax(Q·Kᵀ·{0}{1}{2})·V of each packed sequence, one {3}-row tile ({4}, D = {5})",
                         varlen.getScale().getValueAsDouble(), mask,
                         varlen.getSoftcap().getValueAsDouble() > 0 ? ", soft-capped" : "", varlen.getBlockM(),
                         typeName(varlen.getElementType()), varlen.getHeadDim())
        .str();
  }
  return "";
}

} // namespace flashc
