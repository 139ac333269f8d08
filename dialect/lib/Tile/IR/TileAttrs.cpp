//===- TileAttrs.cpp - verifiers of the tile attributes -------------------===//
//
// Tile IR is an input: #tile.grid, #tile.attention and #tile.gemm are checked
// against TileLimits.h when parsed (and by the kernel builders before they
// build from a recipe), so that no pass or the emitter meets an extreme value.
//
//===----------------------------------------------------------------------===//
#include "flashc/Dialect/Tile/IR/TileDialect.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"

using namespace mlir;
using namespace mlir::tile;

namespace {

bool isTileElement(Type type) { return type.isBF16() || type.isF16() || type.isF32(); }

bool isAttentionRole(KernelRole role) {
  switch (role) {
  case KernelRole::AttentionForward:
  case KernelRole::AttentionBackwardPreprocess:
  case KernelRole::AttentionBackward:
  case KernelRole::AttentionBackwardKV:
  case KernelRole::AttentionBackwardDQ:
  case KernelRole::AttentionBackwardPostprocess:
  case KernelRole::AttentionBackwardTransposed:
  case KernelRole::AttentionBackwardKVTransposed:
  case KernelRole::AttentionMaskBlocks:
  case KernelRole::AttentionMaskBlocksTransposed:
  case KernelRole::AttentionSegmentPlan:
    return true;
  default:
    return false;
  }
}

LogicalResult checkElementType(function_ref<InFlightDiagnostic()> emitError, StringRef attr,
                               TypeAttr elementType) {
  if (!elementType || !isTileElement(elementType.getValue()))
    return emitError() << "#tile." << attr << " element_type must be bf16, f16 or f32, got "
                       << elementType;
  return success();
}

LogicalResult checkScale(function_ref<InFlightDiagnostic()> emitError, StringRef attr,
                         StringRef name, FloatAttr value) {
  if (!value || !limits::isBoundedScale(value.getValueAsDouble()))
    return emitError() << "#tile." << attr << " " << name << " must be finite and at most "
                       << limits::kMaxScale << " in magnitude, got " << value;
  return success();
}

} // namespace

LogicalResult GridAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t argIndex,
                               int64_t dimIndex, int64_t divisor, int64_t constant) {
  if (argIndex < 0) {
    if (constant < 1 || constant > limits::kMaxInt32)
      return emitError() << "grid constant must be in [1, " << limits::kMaxInt32 << "], got "
                         << constant;
    return success();
  }
  // A kernel has far fewer arguments; the kernel verifier checks the exact count.
  if (argIndex > limits::kMaxInt32)
    return emitError() << "grid argument index " << argIndex << " is out of range";
  if (dimIndex < 0 || dimIndex > 3)
    return emitError() << "grid dimension index must be in [0, 3] (tensors have rank 1 to 4), got "
                       << dimIndex;
  if (divisor < 1 || divisor > limits::kMaxInt32)
    return emitError() << "grid divisor must be in [1, " << limits::kMaxInt32 << "], got "
                       << divisor;
  return success();
}

bool AttentionSpecAttr::computesScores() const {
  switch (getRole()) {
  case KernelRole::AttentionBackwardPreprocess:
  case KernelRole::AttentionBackwardPostprocess:
  case KernelRole::AttentionMaskBlocks:
  case KernelRole::AttentionMaskBlocksTransposed:
  case KernelRole::AttentionSegmentPlan:
    return false; // row dots, a conversion, a mask's block classes or segments: no scores
  default:
    return true;
  }
}

bool AttentionSpecAttr::takesKeyOffset() const { return getKeyOffset() && computesScores(); }

bool AttentionSpecAttr::classifiesMaskBlocks() const {
  return getRole() == KernelRole::AttentionMaskBlocks || getRole() == KernelRole::AttentionMaskBlocksTransposed;
}

LogicalResult AttentionSpecAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        KernelRole role, int64_t headDim, int64_t valueDim,
                                        FloatAttr scale, FloatAttr softcap, int64_t windowLeft,
                                        int64_t windowRight, TypeAttr elementType, bool keyOffset,
                                        FlatSymbolRefAttr maskMod, bool maskBlocks, FlatSymbolRefAttr scoreMod,
                                        bool scoreAdditive, bool scoreSeparable, bool topLeft, bool segments) {
  if (!isAttentionRole(role))
    return emitError() << "#tile.attention role must be an attention kernel, got "
                       << stringifyKernelRole(role) << " (a #tile.gemm role)";
  bool classifies = role == KernelRole::AttentionMaskBlocks || role == KernelRole::AttentionMaskBlocksTransposed;
  if (classifies && !maskMod)
    return emitError() << "#tile.attention role " << stringifyKernelRole(role) << " needs a mask_mod";
  if (maskBlocks && (!maskMod || classifies || role == KernelRole::AttentionBackwardPreprocess ||
                     role == KernelRole::AttentionBackwardPostprocess))
    return emitError() << "#tile.attention mask_blocks needs a mask_mod and a role that computes scores";
  if (scoreMod && (classifies || role == KernelRole::AttentionBackwardPreprocess ||
                   role == KernelRole::AttentionBackwardPostprocess))
    return emitError() << "#tile.attention score_mod needs a role that computes scores";
  if (scoreMod && softcap.getValueAsDouble() != 0)
    return emitError() << "#tile.attention score_mod is not combined with a softcap";
  if (scoreAdditive && !scoreMod)
    return emitError() << "#tile.attention score_additive needs a score_mod";
  if (topLeft && keyOffset)
    return emitError() << "#tile.attention top_left is not combined with key_offset (both place query rows)";
  if (role == KernelRole::AttentionSegmentPlan && (!maskMod || maskBlocks || scoreMod || segments))
    return emitError() << "#tile.attention role attention_segment_plan needs a mask_mod (the document compare) and "
                          "nothing else of the forward";
  if (segments && ((!isSegmentMainRole(role) && !classifies) ||
                   (!maskBlocks && !classifies) || keyOffset || windowLeft != -1 ||
                   (windowRight != 0 && windowRight != -1)))
    return emitError() << "#tile.attention segments needs an attention_forward or a backward's main kernel with "
                          "mask_blocks (a document modifier's table), or the kernel that classifies its blocks, "
                          "under no window or a causal one, without a key_offset";
  if (scoreSeparable && !scoreAdditive)
    return emitError() << "#tile.attention score_separable needs score_additive (s + A(q) + B(k) has derivative 1)";
  for (auto [name, dim] : {std::pair<const char *, int64_t>{"head_dim", headDim},
                           {"value_dim", valueDim}})
    if (dim < 1 || dim > limits::kMaxHeadDim)
      return emitError() << "#tile.attention " << name << " must be in [1, "
                         << limits::kMaxHeadDim << "], got " << dim;
  if (failed(checkScale(emitError, "attention", "scale", scale)) ||
      failed(checkScale(emitError, "attention", "softcap", softcap)))
    return failure();
  if (softcap.getValueAsDouble() < 0)
    return emitError() << "#tile.attention softcap must be >= 0 (0: none), got " << softcap;
  for (auto [name, side] : {std::pair<const char *, int64_t>{"window_left", windowLeft},
                            {"window_right", windowRight}})
    if (side < -1 || side > limits::kMaxWindowSide)
      return emitError() << "#tile.attention " << name << " must be in [-1, "
                         << limits::kMaxWindowSide << "] (-1: unbounded), got " << side;
  return checkElementType(emitError, "attention", elementType);
}

LogicalResult DecodeSpecAttr::verify(function_ref<InFlightDiagnostic()> emitError, KernelRole role,
                                     int64_t headDim, int64_t valueDim, int64_t queries, int64_t group,
                                     int64_t pageSize, bool causal, FloatAttr scale, TypeAttr elementType) {
  const bool append = role == KernelRole::KvAppendCheck || role == KernelRole::KvAppend;
  if (role != KernelRole::DecodeCheck && role != KernelRole::DecodeSplit && role != KernelRole::DecodeCombine &&
      !append)
    return emitError() << "#tile.decode role must be decode_check, decode_split, decode_combine, kv_append_check "
                          "or kv_append, got "
                       << stringifyKernelRole(role);
  if (append) {
    // The append copies 16-byte pieces of rows; T may be dynamic (0).
    for (int64_t dim : {headDim, valueDim})
      if (dim <= 0 || dim % 8 != 0)
        return emitError() << "#tile.decode head dims of an append must be positive multiples of 8, got " << dim;
    if (queries < 0 || group != 1 || causal)
      return emitError() << "#tile.decode of an append takes queries >= 0 (0: dynamic), group 1 and no causal";
  } else {
    for (int64_t dim : {headDim, valueDim})
      if (dim <= 0 || dim % 64 != 0 || dim > 256)
        return emitError() << "#tile.decode head dims must be multiples of 64 up to 256, got " << dim;
    if (queries < 1 || queries > 16)
      return emitError() << "#tile.decode queries must be in [1, 16], got " << queries;
  }
  // 65535 blocks a grid y (kv heads x row groups) bound the group long before this
  if (group < 1 || group > 65535)
    return emitError() << "#tile.decode group must be in [1, 65535], got " << group;
  if (pageSize != 0 && (pageSize < 16 || pageSize > 256 || (pageSize & (pageSize - 1)) != 0))
    return emitError() << "#tile.decode page_size must be 0 or a power of two from 16 to 256, got " << pageSize;
  if (failed(checkScale(emitError, "decode", "scale", scale)))
    return failure();
  if (failed(checkElementType(emitError, "decode", elementType)))
    return failure();
  if (!elementType.getValue().isBF16() && !elementType.getValue().isF16())
    return emitError() << "#tile.decode element_type must be bf16 or f16";
  return success();
}

unsigned DecodeSpecAttr::tensorCount() const {
  unsigned table = isPaged() ? 1 : 0;
  switch (getRole()) {
  case KernelRole::DecodeCheck: // k_cache, cache_seqlens, [block_table], status
    return 3 + table;
  case KernelRole::DecodeSplit: // q, k, v, lens, [table], out, lse, o_part, lse_part, status
    return 9 + table;
  case KernelRole::KvAppendCheck: // key, k_cache, cache_seqlens, [block_table], status
    return 4 + table;
  case KernelRole::KvAppend: // key, value, k_cache, v_cache, cache_seqlens, [block_table], status
    return 6 + table;
  default: // the combine: o_part, lse_part, out, lse, status
    return 5;
  }
}

unsigned VarlenSpecAttr::tensorCount() const {
  switch (getRole()) {
  case KernelRole::VarlenPlan:    // cu_q, cu_k, q, k, map, status
  case KernelRole::VarlenKeyPlan:
    return 6;
  case KernelRole::VarlenForward: // q, k, v, cu_q, cu_k, tile_map, status, out, lse
    return 9;
  case KernelRole::VarlenBwdPrepare: // out, dout, delta, dq_accum
    return 4;
  case KernelRole::VarlenBackward: // q, k, v, dout, lse, delta, dq_accum, dk, dv, cu_q, cu_k, key_map, status
    return 13;
  default: // the finish: dq_accum, status, dq
    return 3;
  }
}

LogicalResult VarlenSpecAttr::verify(function_ref<InFlightDiagnostic()> emitError, KernelRole role, int64_t headDim,
                                     int64_t valueDim, int64_t group, int64_t blockM, int64_t windowLeft,
                                     int64_t windowRight, FloatAttr scale, FloatAttr softcap, TypeAttr elementType) {
  if (role != KernelRole::VarlenPlan && role != KernelRole::VarlenForward && role != KernelRole::VarlenBwdPrepare &&
      role != KernelRole::VarlenKeyPlan && role != KernelRole::VarlenBackward && role != KernelRole::VarlenBwdFinish)
    return emitError() << "#tile.varlen role must be varlen_plan, varlen_forward, varlen_bwd_prepare, "
                          "varlen_key_plan, varlen_backward or varlen_bwd_finish, got "
                       << stringifyKernelRole(role);
  for (int64_t dim : {headDim, valueDim})
    if (dim <= 0 || dim % 8 != 0 || dim > 256)
      return emitError() << "#tile.varlen head dims must be multiples of 8 up to 256, got " << dim;
  if (group < 1 || group > 65535)
    return emitError() << "#tile.varlen group must be in [1, 65535], got " << group;
  if (blockM != 64 && blockM != 128 && blockM != 192)
    return emitError() << "#tile.varlen block_m must be 64, 128 or 192 (the rows of the tile map's tiles), got "
                       << blockM;
  if (windowLeft < -1 || windowRight < -1)
    return emitError() << "#tile.varlen window sides must be >= -1, got " << windowLeft << ", " << windowRight;
  if (failed(checkScale(emitError, "varlen", "scale", scale)))
    return failure();
  if (!softcap || !std::isfinite(softcap.getValueAsDouble()) || softcap.getValueAsDouble() < 0.0)
    return emitError() << "#tile.varlen softcap must be 0 or positive and finite";
  if (failed(checkElementType(emitError, "varlen", elementType)))
    return failure();
  if (!elementType.getValue().isBF16() && !elementType.getValue().isF16())
    return emitError() << "#tile.varlen element_type must be bf16 or f16";
  return success();
}

LogicalResult RunIfAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t arg, int64_t dim, int64_t min,
                                int64_t max) {
  if (min < 0 || (max >= 0 && max < min) || max < -1)
    return emitError() << "#tile.run_if needs 0 <= min <= max (max = -1: no upper bound), got [" << min << ", "
                       << max << "]";
  return success();
}

LogicalResult MoeSpecAttr::verify(function_ref<InFlightDiagnostic()> emitError, KernelRole role, int64_t experts,
                                  int64_t topK, bool sigmoid, bool renormalize, Activation activation, bool gated,
                                  TypeAttr elementType, bool train) {
  if (role < KernelRole::MoeRouter || role > KernelRole::MoeGatherGrad)
    return emitError() << "#tile.moe role must be a mixture of experts' (moe_router ... moe_combine, moe_scatter_grad "
                          "... moe_gather_grad), got "
                       << stringifyKernelRole(role);
  if (train && role != KernelRole::MoePlan && role != KernelRole::MoeUp)
    return emitError() << "#tile.moe train applies to moe_plan and moe_up (what a training forward saves), not "
                       << stringifyKernelRole(role);
  // moe_routing.cuh: a warp's lanes hold up to 256 experts' scores and the k chosen ones; the router's logits rows
  // are whole 16-byte pieces (TMA).
  if (experts < 1 || experts > 256 || experts % 8 != 0)
    return emitError() << "#tile.moe experts must be a multiple of 8 from 8 to 256, got " << experts;
  if (topK < 1 || topK > 32 || topK > experts)
    return emitError() << "#tile.moe top_k must be in [1, min(32, experts)], got " << topK;
  if (failed(checkElementType(emitError, "moe", elementType)))
    return failure();
  if (!elementType.getValue().isBF16() && !elementType.getValue().isF16())
    return emitError() << "#tile.moe element_type must be bf16 or f16";
  return success();
}

bool MoeSpecAttr::isGemm() const {
  switch (getRole()) {
  case KernelRole::MoeRouter:
  case KernelRole::MoeUp:
  case KernelRole::MoeDown:
  case KernelRole::MoeDataGrad:
  case KernelRole::MoeDataGradAccumulate:
  case KernelRole::MoeWeightGrad:
    return true;
  default:
    return false;
  }
}

unsigned MoeSpecAttr::tensorCount() const {
  switch (getRole()) {
  case KernelRole::MoeRouter: // x, router, logits
    return 3;
  case KernelRole::MoePlan: // logits (its rows: the token count that sizes groups), counts, offsets, groups,
                            // [saved_counts]
    return getTrain() ? 5 : 4;
  case KernelRole::MoeSelect: // logits, counts, ids, weights, ranks
    return 5;
  case KernelRole::MoeUp: // logits (binds T), permuted, w1, [w_up], groups, hidden, [pre | gate, up]
    return (getGated() ? 6 : 5) + (getTrain() ? (getGated() ? 2 : 1) : 0);
  case KernelRole::MoeDown:               // logits (binds T), hidden, w2, groups, expert_out
  case KernelRole::MoeDataGrad:           // logits, a, w, groups, c
  case KernelRole::MoeDataGradAccumulate: // logits, a, w, groups, c
  case KernelRole::MoeWeightGrad:         // logits, a, b, offsets, dw
  case KernelRole::MoeSelectGrad:         // logits, ids, weights, d_weights, d_logits
  case KernelRole::MoeGatherGrad:         // dx_perm, ids, ranks, offsets, dx
    return 5;
  case KernelRole::MoeScatterGrad: // dy, expert_out, counts, ids, weights, ranks, offsets, d_expert_out, d_weights
    return 9;
  case KernelRole::MoeActivationGrad: // logits, pre, [up], dh, offsets, d_pre, [d_up]
    return getGated() ? 7 : 5;
  default: // permute (x, counts, ids, ranks, offsets, permuted), combine (expert_out, ids, weights, ranks, offsets, y)
    return 6;
  }
}

LogicalResult GemmSpecAttr::verify(function_ref<InFlightDiagnostic()> emitError, KernelRole role,
                                   Activation activation, BoolAttr transposeA, BoolAttr transposeB,
                                   BoolAttr bias1, BoolAttr bias2, BoolAttr gated,
                                   BoolAttr accumulate, FloatAttr alpha, int64_t blockK,
                                   TypeAttr elementType, BoolAttr savePre, BoolAttr actGrad) {
  if (isAttentionRole(role))
    return emitError() << "#tile.gemm role must be a GEMM-family kernel, got "
                       << stringifyKernelRole(role) << " (a #tile.attention role)";
  if (!transposeA || !transposeB || !bias1 || !bias2 || !gated || !accumulate)
    return emitError() << "#tile.gemm flags must be booleans";
  if (failed(checkScale(emitError, "gemm", "alpha", alpha)))
    return failure();
  if (blockK < 1 || blockK > limits::kMaxBlock)
    return emitError() << "#tile.gemm block_k must be in [1, " << limits::kMaxBlock << "], got "
                       << blockK;
  // The training forward's up projections write their pre-activations; an
  // accumulating GEMM has none to write.
  if (savePre && savePre.getValue() &&
      ((role != KernelRole::Gemm && role != KernelRole::GatedGemm && role != KernelRole::FfnFused) ||
       accumulate.getValue()))
    return emitError() << "#tile.gemm save_pre applies to a gemm, gated_gemm or ffn_fused that does "
                          "not accumulate, got role "
                       << stringifyKernelRole(role);
  // C = alpha·op(A)·op(B) ∘ act'(P): a plain GEMM whose epilogue reads P
  // (gated: P and U, writing C and C_up).
  if (actGrad && actGrad.getValue() &&
      (role != KernelRole::Gemm || bias1.getValue() || bias2.getValue() ||
       accumulate.getValue() || (savePre && savePre.getValue()) || activation == Activation::Identity))
    return emitError() << "#tile.gemm act_grad applies to a gemm with an activation and no bias, "
                          "accumulation or save_pre, got role "
                       << stringifyKernelRole(role) << " with activation " << stringifyActivation(activation);
  return checkElementType(emitError, "gemm", elementType);
}

LogicalResult WarpSpecializedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          int64_t producerRegisters, int64_t consumerWarpgroups,
                                          int64_t consumerRegisters, ArrayAttr resident,
                                          ArrayAttr ring, int64_t ringStages, bool, bool) {
  // setmaxnreg takes multiples of 8 in [24, 256].
  auto budget = [&](StringRef name, int64_t value) -> LogicalResult {
    if (value < 24 || value > 256 || value % 8 != 0)
      return emitError() << "#tile.warp_specialized " << name
                         << " must be a multiple of 8 in [24, 256] (setmaxnreg), got " << value;
    return success();
  };
  if (failed(budget("producer_registers", producerRegisters)) ||
      failed(budget("consumer_registers", consumerRegisters)))
    return failure();
  if (consumerWarpgroups < 1 || consumerWarpgroups > limits::kMaxWarps / 4)
    return emitError() << "#tile.warp_specialized consumer_warpgroups must be in [1, "
                       << limits::kMaxWarps / 4 << "], got " << consumerWarpgroups;
  // setmaxnreg moves registers between the warpgroups of a block; together
  // they keep what the launch gave (limits::registersAtLaunch).
  int64_t warpgroups = 1 + consumerWarpgroups;
  int64_t atLaunch = limits::registersAtLaunch(consumerWarpgroups);
  if (consumerRegisters > limits::maxConsumerRegisters(producerRegisters, consumerWarpgroups))
    return emitError() << "#tile.warp_specialized register budgets " << producerRegisters
                       << " + " << consumerWarpgroups << " x " << consumerRegisters
                       << " exceed the " << warpgroups << " x " << atLaunch
                       << " registers a thread of each warpgroup has at launch (" << 128 * warpgroups
                       << " threads share 65536)";
  if (ringStages < 1 || ringStages > 4)
    return emitError() << "#tile.warp_specialized ring_stages must be in [1, 4], got "
                       << ringStages;
  if (!resident || !ring || ring.empty())
    return emitError() << "#tile.warp_specialized streams no operand through its ring";
  for (ArrayAttr names : {resident, ring})
    for (Attribute name : names)
      if (auto text = llvm::dyn_cast<StringAttr>(name); !text || text.getValue().empty())
        return emitError() << "#tile.warp_specialized operands must be named by non-empty "
                              "strings, got "
                           << name;
  return success();
}

LogicalResult GridOrderAttr::verify(function_ref<InFlightDiagnostic()> emitError, BlockOrder order,
                                    int64_t group) {
  // A persistent GEMM walks its tiles in groups too (the attention forward's
  // persistent grid has group 1).
  bool grouped =
      order == BlockOrder::Grouped || order == BlockOrder::Persistent || order == BlockOrder::HeadGroups;
  if (grouped ? group < 1 || group > 64 : group != 1)
    return emitError() << "#tile.grid_order group must be "
                       << (grouped ? "in [1, 64]" : "1 unless grouped, persistent or head_groups")
                       << ", got " << group;
  return success();
}
