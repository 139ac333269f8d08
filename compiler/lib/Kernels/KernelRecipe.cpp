//===- KernelRecipe.cpp - can a recipe be built for these arguments? ------===//
//
// The kernel builders (AttentionKernels.cpp, FFNKernels.cpp) index their
// arguments by role and read ranks, element types and static head / output
// dims from them. A tile kernel read from a file carries any recipe and any
// signature, so buildKernel (hence flash-tile, flash-generate-backward and
// flash-plan-memory's rebuilds) checks both here before creating an op.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/TileKernels.h"
#include "flashc/Compiler/TilePadding.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

namespace {

/// The fused FFN's w2 among its arguments: x, w1, [b1,] [w_up,] w2, ...
GlobalTensorType fusedFfnW2(GemmSpecAttr gemm, ArrayRef<Type> argTypes) {
  size_t index = 2 + (gemm.getBias1().getValue() ? 1 : 0) + (gemm.getGated().getValue() ? 1 : 0);
  return llvm::cast<GlobalTensorType>(argTypes[index]);
}

/// What one kernel argument must be.
struct ArgRule {
  const char *name;
  int64_t minRank, maxRank;
  /// Element type: the recipe's unless `f32` (accumulators, lse, D);
  /// `anyElement`: any tile element type (biases).
  bool f32 = false, anyElement = false;
  /// The static size the last dimension must have (a head dim); 0: any.
  int64_t lastDim = 0;
  /// An i32 scalar, not a tensor (the attention's run-time key offset).
  bool scalarI32 = false;
  /// An i32 tensor (a mask modifier's tensor, a block-class table).
  bool i32 = false;
  /// An i32 or f32 tensor (a score modifier's tensor).
  bool i32OrF32 = false;
};

ArgRule tensor4(const char *name, int64_t lastDim, bool f32 = false) {
  return {name, 4, 4, f32, false, lastDim};
}
ArgRule rows3(const char *name) { return {name, 3, 3, true, false, 0}; }
ArgRule matrix(const char *name, int64_t minRank = 2, int64_t maxRank = 3, bool f32 = false) {
  return {name, minRank, maxRank, f32, false, 0};
}
ArgRule bias(const char *name) { return {name, 1, 1, false, true, 0}; }

SmallVector<ArgRule> attentionTensorRules(AttentionSpecAttr spec);

/// The tensors of the role, the mask modifier's tensors (as many as the
/// arguments leave room for: tile.mask checks them against the modifier),
/// its block-class table, then the key offset where the recipe takes one.
SmallVector<ArgRule> attentionRules(AttentionSpecAttr spec, size_t argCount) {
  bool offset = spec.takesKeyOffset();
  SmallVector<ArgRule> rules = attentionTensorRules(spec);
  // The preprocess may also zero the dQ accumulator the main kernel adds into (its fourth argument).
  if (spec.getRole() == KernelRole::AttentionBackwardPreprocess && argCount == 4)
    rules.push_back(tensor4("dq_accum", spec.getHeadDim(), /*f32=*/true));
  bool classifies = spec.classifiesMaskBlocks();
  bool plansSegments = spec.getRole() == KernelRole::AttentionSegmentPlan;
  bool scored = spec.getScoreMod() && spec.computesScores();
  if (plansSegments) {  // q, k, the ids, the plan [rows, 4]
    rules.push_back({"document ids", 1, 1, false, false, 0, false, /*i32=*/true});
    rules.push_back({"segment_plan", 2, 2, false, false, 4, false, /*i32=*/true});
    return rules;
  }
  if ((spec.getMaskMod() || scored) && (spec.computesScores() || classifies)) {
    size_t tail = (spec.getMaskBlocks() || classifies ? 1 : 0) + (spec.getSegments() ? 1 : 0) + (offset ? 1 : 0);
    // (the mask modifier's tensors, then the score modifier's: tile.mask and tile.score check them)
    for (size_t i = rules.size() + tail; i < argCount; ++i)
      rules.push_back({scored ? "modifier tensor" : "mask tensor", 1, 4, false, false, 0, false, /*i32=*/!scored,
                       /*i32OrF32=*/scored});
    if (spec.getMaskBlocks() || classifies)
      rules.push_back({"mask_blocks", 4, 4, false, false, 0, false, /*i32=*/true});
    if (spec.getSegments())
      rules.push_back({"segment_plan", 2, 2, false, false, 4, false, /*i32=*/true});
  }
  if (offset)
    rules.push_back({"key_offset", 0, 0, false, false, 0, /*scalarI32=*/true});
  return rules;
}

SmallVector<ArgRule> attentionTensorRules(AttentionSpecAttr spec) {
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim();
  ArgRule q = tensor4("q", d), k = tensor4("k", d), v = tensor4("v", dv),
          dOut = tensor4("do", dv), lse = rows3("lse"), delta = rows3("delta"),
          dqAccum = tensor4("dq_accum", d, /*f32=*/true), dk = tensor4("dk", d),
          dvOut = tensor4("dv", dv), dq = tensor4("dq", d);
  switch (spec.getRole()) {
  case KernelRole::AttentionForward:
    return {q, k, v, tensor4("out", dv), lse};
  case KernelRole::AttentionBackwardPreprocess:
    return {tensor4("out", dv), dOut, delta};
  case KernelRole::AttentionBackward:
  case KernelRole::AttentionBackwardTransposed:
    return {q, k, v, dOut, lse, delta, dqAccum, dk, dvOut};
  case KernelRole::AttentionBackwardKV:
  case KernelRole::AttentionBackwardKVTransposed:
    return {q, k, v, dOut, lse, delta, dk, dvOut};
  case KernelRole::AttentionBackwardDQ:
    return {q, k, v, dOut, lse, delta, dq};
  case KernelRole::AttentionBackwardPostprocess:
    return {dqAccum, dq};
  case KernelRole::AttentionMaskBlocks:
  case KernelRole::AttentionMaskBlocksTransposed:
  case KernelRole::AttentionSegmentPlan:
    return {q, k};
  default:
    return {};
  }
}

SmallVector<ArgRule> gemmRules(GemmSpecAttr spec) {
  bool b1 = spec.getBias1().getValue(), b2 = spec.getBias2().getValue();
  bool gated = spec.getGated().getValue();
  SmallVector<ArgRule> rules;
  switch (spec.getRole()) {
  case KernelRole::Gemm:
    rules = {matrix("a"), matrix("b")};
    if (b1)
      rules.push_back(bias("bias"));
    if (spec.savesPre() || spec.appliesActGrad())  // written, or read (act_grad: P)
      rules.push_back(matrix(spec.appliesActGrad() ? "p" : "pre"));
    if (spec.appliesGatedActGrad())  // the gated FFN's: P = g and U = u read, C = dg and C_up = du written
      rules.push_back(matrix("p_up"));
    rules.push_back(matrix("c"));
    if (spec.appliesGatedActGrad())
      rules.push_back(matrix("c_up"));
    return rules;
  case KernelRole::GatedGemm:
    // The weights are read as [K, N] tiles at {k0, col0}: rank 2.
    rules = {matrix("a"), matrix("w_gate", 2, 2), matrix("w_up", 2, 2)};
    if (spec.savesPre())
      rules.append({matrix("g"), matrix("u")});
    rules.push_back(matrix("c"));
    return rules;
  case KernelRole::ColumnSum:
    return {matrix("a"), matrix("out", 1, 1)};
  case KernelRole::GemmSplitK:
    return {matrix("a"), matrix("b"), matrix("c", 2, 2, /*f32=*/true)};
  case KernelRole::ConvertF32:
    return {matrix("a", 2, 2, /*f32=*/true), matrix("c", 2, 2)};
  case KernelRole::FfnFused:
    rules = {matrix("x"), matrix("w1", 2, 2)};
    if (b1)
      rules.push_back(bias("b1"));
    if (gated)
      rules.push_back(matrix("w_up", 2, 2));
    rules.push_back(matrix("w2", 2, 2));
    if (b2)
      rules.push_back(bias("b2"));
    rules.push_back(matrix("y"));
    if (spec.savesPre()) {
      rules.push_back(matrix(gated ? "g" : "pre"));
      if (gated)
        rules.push_back(matrix("u"));
      rules.push_back(matrix("h"));
    }
    return rules;
  case KernelRole::FfnActivationGrad:
    rules = {matrix("dh"), matrix(gated ? "g" : "pre")};
    if (gated)
      rules.push_back(matrix("u"));
    rules.push_back(matrix(gated ? "dg" : "dpre"));
    if (gated)
      rules.push_back(matrix("du"));
    return rules;
  default:
    return {};
  }
}

/// The recipe attribute's own invariants (TileAttrs.cpp), for a recipe built
/// in memory rather than parsed.
LogicalResult verifySpec(function_ref<InFlightDiagnostic()> emitError, Attribute spec) {
  if (auto a = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec))
    return AttentionSpecAttr::verify(emitError, a.getRole(), a.getHeadDim(), a.getValueDim(),
                                     a.getScale(), a.getSoftcap(), a.getWindowLeft(),
                                     a.getWindowRight(), a.getElementType(), a.getKeyOffset(),
                                     a.getMaskMod(), a.getMaskBlocks(), a.getScoreMod(), a.getScoreAdditive(),
                                     a.getScoreSeparable(), a.getTopLeft(), a.getSegments());
  if (auto g = llvm::dyn_cast_or_null<GemmSpecAttr>(spec))
    return GemmSpecAttr::verify(emitError, g.getRole(), g.getActivation(), g.getTransposeA(),
                                g.getTransposeB(), g.getBias1(), g.getBias2(), g.getGated(),
                                g.getAccumulate(), g.getAlpha(), g.getBlockK(),
                                g.getElementType(), g.getSavePre(),
                                g.getActGrad());
  return emitError() << "a kernel recipe must be #tile.attention or #tile.gemm, got " << spec;
}

} // namespace

LogicalResult checkKernelRecipe(function_ref<InFlightDiagnostic()> emitError, Attribute spec,
                                ArrayRef<Type> argTypes) {
  if (failed(verifySpec(emitError, spec)))
    return failure();
  SmallVector<ArgRule> rules;
  Type element;
  std::string role;
  if (auto attention = llvm::dyn_cast<AttentionSpecAttr>(spec)) {
    rules = attentionRules(attention, argTypes.size());
    element = attention.getElementType().getValue();
    role = stringifyKernelRole(attention.getRole()).str();
  } else {
    auto gemm = llvm::cast<GemmSpecAttr>(spec);
    rules = gemmRules(gemm);
    element = gemm.getElementType().getValue();
    role = stringifyKernelRole(gemm.getRole()).str();
    if (gemm.getAccumulate().getValue() &&
        (gemm.getBias1().getValue() || gemm.getActivation() != Activation::Identity ||
         gemm.getAlpha().getValueAsDouble() != 1.0))
      return emitError() << "an accumulating GEMM (C += A·B) takes no bias, activation or alpha";
  }
  if (rules.size() != argTypes.size())
    return emitError() << "kernel recipe '" << role << "' takes " << rules.size()
                       << " arguments, got " << argTypes.size();
  for (auto [index, pair] : llvm::enumerate(llvm::zip(rules, argTypes))) {
    auto [rule, type] = pair;
    auto tensor = llvm::dyn_cast<GlobalTensorType>(type);
    auto describe = [&, &rule = rule]() {
      return emitError() << "kernel recipe '" << role << "': argument " << index << " ("
                         << rule.name << ") ";
    };
    if (rule.scalarI32) {
      if (!type.isSignlessInteger(32))
        return describe() << "must be an i32, got " << type;
      continue;
    }
    if (!tensor)
      return describe() << "must be a !tile.tensor, got " << type;
    if (tensor.getRank() < rule.minRank || tensor.getRank() > rule.maxRank) {
      if (rule.minRank == rule.maxRank)
        return describe() << "must have rank " << rule.minRank << ", got " << tensor;
      return describe() << "must have rank " << rule.minRank << " to " << rule.maxRank << ", got "
                        << tensor;
    }
    Type want = rule.i32 ? IntegerType::get(spec.getContext(), 32)
                : rule.f32 ? Float32Type::get(spec.getContext())
                           : element;
    if (rule.i32OrF32) {
      if (!tensor.getElementType().isSignlessInteger(32) && !tensor.getElementType().isF32())
        return describe() << "must have element type i32 or f32, got " << tensor;
    } else if (!rule.anyElement && tensor.getElementType() != want)
      return describe() << "must have element type " << want << ", got " << tensor;
    int64_t last = tensor.getShape().back();
    if (rule.lastDim && last != rule.lastDim)
      return describe() << "must have a static last dimension of " << rule.lastDim
                        << " (the recipe's head dim), got " << tensor;
  }
  // Tensors a kernel walks on one grid (the activation gradient's operands,
  // the saved activations beside the output they are written with) have one
  // shape: the same rank, static dims equal (a dynamic dim matches any).
  if (auto gemm = llvm::dyn_cast<GemmSpecAttr>(spec)) {
    auto shaped = [&](unsigned i) { return llvm::cast<GlobalTensorType>(argTypes[i]); };
    auto alike = [&](unsigned ref, ArrayRef<unsigned> others) -> LogicalResult {
      for (unsigned i : others) {
        ArrayRef<int64_t> a = shaped(ref).getShape(), b = shaped(i).getShape();
        bool same = a.size() == b.size();
        for (size_t d = 0; same && d < a.size(); ++d)
          same = ShapedType::isDynamic(a[d]) || ShapedType::isDynamic(b[d]) || a[d] == b[d];
        if (!same)
          return emitError() << "kernel recipe '" << role << "': argument " << i << " ("
                             << rules[i].name << ") must have the shape of argument " << ref
                             << " (" << rules[ref].name << "), got " << argTypes[i] << " and "
                             << argTypes[ref];
      }
      return success();
    };
    unsigned n = argTypes.size();
    bool gated = gemm.getGated().getValue();
    SmallVector<unsigned> rest;
    switch (gemm.getRole()) {
    case KernelRole::FfnActivationGrad:
      for (unsigned i = 1; i < n; ++i)
        rest.push_back(i);
      if (failed(alike(0, rest)))
        return failure();
      break;
    case KernelRole::Gemm:
    case KernelRole::GatedGemm: // saved (or read: act_grad's P) before the output C (last)
      if (gemm.savesPre() || gemm.appliesActGrad()) {
        // (the gated act_grad's p, p_up and c beside c_up)
        unsigned alongside = gemm.appliesGatedActGrad() ? 3 : gemm.getRole() == KernelRole::GatedGemm ? 2 : 1;
        for (unsigned i = n - 1 - alongside; i + 1 < n; ++i)
          rest.push_back(i);
        if (failed(alike(n - 1, rest)))
          return failure();
      }
      break;
    case KernelRole::FfnFused: // saved after y, over x's rows
      if (gemm.savesPre()) {
        unsigned count = gated ? 3 : 2;
        for (unsigned i = n - count; i < n; ++i)
          rest.push_back(i);
        if (failed(alike(n - count, ArrayRef<unsigned>(rest).drop_front())))
          return failure();
        if (shaped(n - count).getRank() != shaped(0).getRank())
          return emitError() << "kernel recipe 'ffn_fused': the saved activations must have x's rank, got "
                             << argTypes[n - count] << " and " << argTypes[0];
      }
      break;
    default:
      break;
    }
  }
  // Split-K slices a rank-2 A by rows and a batched A by batch; B is indexed
  // by A's batch, so a batched B needs a batched A.
  if (auto gemm = llvm::dyn_cast<GemmSpecAttr>(spec);
      gemm && gemm.getRole() == KernelRole::GemmSplitK &&
      llvm::cast<GlobalTensorType>(argTypes[1]).getRank() >
          llvm::cast<GlobalTensorType>(argTypes[0]).getRank())
    return emitError() << "kernel recipe 'gemm_split_k': a batched b (rank 3) needs a batched a, got "
                       << argTypes[0] << " and " << argTypes[1];
  // The fused FFN holds the [block_m x d_out] output accumulator in registers:
  // its W2's output dim must be static.
  if (auto gemm = llvm::dyn_cast<GemmSpecAttr>(spec); gemm && gemm.getRole() == KernelRole::FfnFused) {
    auto w2 = fusedFfnW2(gemm, argTypes);
    int64_t dOut = w2.getShape()[1];
    if (ShapedType::isDynamic(dOut) || dOut < 1 || dOut > limits::kMaxTileDim)
      return emitError() << "kernel recipe 'ffn_fused': w2 must have a static output dim in [1, "
                         << limits::kMaxTileDim << "], got " << w2;
  }
  return success();
}

LogicalResult checkPlannedTiles(function_ref<InFlightDiagnostic()> emitError, Attribute spec,
                                ArrayRef<Type> argTypes, const TilePlan &plan) {
  if (auto attention = llvm::dyn_cast<AttentionSpecAttr>(spec)) {
    // The head dims set the widths of the f32 tiles: the output, dQ, dK and dV accumulators, [block_m or block_n
    // x a head dim] (the role split's and the forward's are fewer; the bound takes the widest any role makes).
    Type elem = attention.getElementType().getValue();
    int64_t width = std::max(paddedTileWidth(attention.getHeadDim(), elem, plan.strategy),
                             paddedTileWidth(attention.getValueDim(), elem, plan.strategy));
    int64_t rows = std::max(plan.blockM, plan.blockN);
    int64_t bytes = rows * width * 4;  // (below 2^8 * 2^11 * 4: no overflow)
    if (bytes <= limits::kMaxTileBytes)
      return success();
    return emitError() << "the attention kernel's f32 tiles of [" << rows << " x " << width << "] (block_m = "
                       << plan.blockM << ", block_n = " << plan.blockN << ", head dims D = "
                       << attention.getHeadDim() << ", Dv = " << attention.getValueDim() << ") take " << bytes
                       << " bytes, more than a tile holds (" << limits::kMaxTileBytes
                       << "): smaller block sizes or head dims fit";
  }
  auto gemm = llvm::dyn_cast<GemmSpecAttr>(spec);
  if (!gemm || gemm.getRole() != KernelRole::FfnFused)
    return success();
  // (checkKernelRecipe has checked the arguments: w2 is there, its output dim static and in range)
  auto w2 = fusedFfnW2(gemm, argTypes);
  int64_t dOut = w2.getShape()[1];
  int64_t width = paddedTileWidth(dOut, w2.getElementType(), plan.strategy);
  int64_t elementBytes = w2.getElementType().isF32() ? 4 : 2;
  // Both products are below 2^16 * 2^16 * 4: no overflow.
  int64_t accumulator = plan.blockM * width * 4, slab = plan.blockN * width * elementBytes;
  if (accumulator <= limits::kMaxTileBytes && slab <= limits::kMaxTileBytes)
    return success();
  bool accumulatorOver = accumulator > limits::kMaxTileBytes;
  return emitError() << "the fused FFN keeps " << (accumulatorOver ? "its output rows" : "a slab of w2") << ", a ["
                     << (accumulatorOver ? plan.blockM : plan.blockN) << " x " << width << "] "
                     << (accumulatorOver ? "f32 accumulator" : "tile of w2") << " (d_out = " << dOut << ") of "
                     << (accumulatorOver ? accumulator : slab) << " bytes, more than a tile holds ("
                     << limits::kMaxTileBytes
                     << "): a smaller d_out or block size fits, or flash-tile's ffn-plan=two-kernel never needs it";
}

LogicalResult checkTilePlan(function_ref<InFlightDiagnostic()> emitError, Attribute spec,
                            const TilePlan &plan) {
  auto out = [&](const char *name, int64_t value, int64_t hi) {
    return emitError() << "tile plan " << name << " = " << value << " must be in [1, " << hi << "]";
  };
  if (plan.blockM < 1 || plan.blockM > limits::kMaxBlock)
    return out("block_m", plan.blockM, limits::kMaxBlock);
  if (plan.blockN < 1 || plan.blockN > limits::kMaxBlock)
    return out("block_n", plan.blockN, limits::kMaxBlock);
  if (llvm::isa_and_nonnull<GemmSpecAttr>(spec) &&
      (plan.blockK < 1 || plan.blockK > limits::kMaxBlock))
    return out("block_k", plan.blockK, limits::kMaxBlock);
  if (plan.stages < 1 || plan.stages > limits::kMaxStages)
    return out("stages", plan.stages, limits::kMaxStages);
  if (!limits::isWarpCount(plan.warps, plan.strategy == Strategy::WgmmaWsSm90))
    return emitError() << "tile plan warps = " << plan.warps << " must be a power of two in [1, "
                       << limits::kMaxWarps << "] (or whole warpgroups under wgmma_ws_sm90)";
  return success();
}

} // namespace flashc
