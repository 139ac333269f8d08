//===- Target.cpp - GPU target descriptions and default tile plans --------===//
#include "flashc/Compiler/Target.h"

#include "SaturatingMath.h"

#include "flashc/Compiler/TilePadding.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

namespace {
// sm_80 (A100): 163 KB of dynamic shared memory per block; sm_90a (H100/H200):
// 227 KB. Both: 255 registers per thread, mma.sync m16n8k16.
constexpr TargetDescription kTargets[] = {
    {"sm_80", 166912, 255, 16, 8, 16, Strategy::MmaSyncSm80},
    {"sm_90a", 232448, 255, 16, 8, 16, Strategy::MmaSyncSm80},
};
constexpr int64_t kAddressingRegisters = 40;

int64_t threadsOf(const TilePlan &plan) { return 32 * plan.warps; }

int64_t outputDimOf(ArrayRef<Type> argTypes, size_t weightArg) {
  if (weightArg >= argTypes.size())
    return 0;
  auto type = llvm::dyn_cast<GlobalTensorType>(argTypes[weightArg]);
  if (!type || type.getRank() != 2)
    return 0;
  return type.getShape()[1];
}
} // namespace

const TargetDescription *lookupTarget(llvm::StringRef name) {
  // Exact names only: sm_90 (without `a`) cannot use wgmma, so planning it as
  // sm_90a would emit code NVRTC rejects for it.
  for (const TargetDescription &target : kTargets)
    if (target.name == name)
      return &target;
  return nullptr;
}

std::string knownTargetNames() {
  std::string names;
  for (const TargetDescription &target : kTargets) {
    if (!names.empty())
      names += ", ";
    names += target.name.str();
  }
  return names;
}

std::string unknownTargetMessage(llvm::StringRef arch) {
  std::string message = "no target model for " + arch.str() + " (known: " + knownTargetNames() + ")";
  if (arch == "sm_90")
    message += ": sm_90 without the 'a' cannot use wgmma; give sm_90a for H100/H200, or sm_80";
  else
    message += ": give sm_80, whose code the runtime compiles for every newer device, or add a "
               "target model for " + arch.str() + " (compiler/lib/Transforms/Target.cpp)";
  return message;
}

namespace {
/// The Sᵀ backward (docs/device-library.md): 128 keys on 8 warps x 16 rows,
/// query blocks of 64.
TilePlan transposedBackwardPlan(TilePlan plan, AttentionSpecAttr attention, bool hopper, int64_t d) {
  plan.blockM = 64;
  plan.blockN = d <= 128 ? 128 : 64;
  plan.warps = plan.blockN / 16;
  // Hopper: the 128 key rows are two warpgroups; S^T = K·Q^T and dP^T =
  // V·dO^T are SS wgmma, dV += P^T·dO and dK += dS^T·Q are RS wgmma, dQ
  // by wgmma from dSᵀ in shared memory (docs/design/wgmma-backward.md).
  bool sixteenBit = attention.getElementType().getValue().getIntOrFloatBitWidth() == 16;
  if (hopper && sixteenBit && wgmmaAttentionTakes(attention.getHeadDim(), attention.getValueDim())) {
    plan.strategy = Strategy::WgmmaSm90;
    // D = 64: 128 queries a step (FA3's 128x128) halve the barriers and
    // waits per FLOP; dQ is then 128 rows x 64 columns, one row band a warp.
    if (d == 64)
      plan.blockM = 128;
  }
  return plan;
}
} // namespace

bool isWsBackward(Attribute spec) {
  auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec);
  return attention && (attention.getRole() == KernelRole::AttentionBackward ||
                       attention.getRole() == KernelRole::AttentionBackwardTransposed);
}

bool keyBlocksDiffer(AttentionSpecAttr attention) {
  return attention.getWindowLeft() >= 0 || attention.getWindowRight() >= 0 || attention.getMaskMod();
}

bool takesWsBackward(AttentionSpecAttr attention) {
  // 16-bit, no softcap, no score modifier but one whose derivative is 1 (score_additive: ALiBi, bias tables;
  // the kernel applies it where it recomputes the scores and leaves dS alone; others' derivatives are not in
  // the library's form), dQ by atomics (the deterministic backward's dK/dV-only kernels are other roles).
  // With ALiBi (causal, S = 16k, H200) it took the backward from 7.42 to 6.16 ms at D = 128 against the op-by-op
  // Sᵀ backward, from 4.96 to 4.30 ms at D = 64 against the Sᵀ wgmma one (bench/results/2026-12-02-h200-session20.md).
  // The key split's tile body is the Sᵀ form's (128 key rows on 8 warps):
  // the row form keeps its own plan there.
  Type element = attention.getElementType().getValue();
  int64_t d = attention.getHeadDim(), dv = attention.getValueDim();
  // (The row form takes the role split where that runs: a head dim above 128.)
  return (element.isBF16() || element.isF16()) &&
         attention.getSoftcap().getValueAsDouble() == 0.0 &&
         (!attention.getScoreMod() || attention.getScoreAdditive()) && wsBackwardTakes(d, dv) &&
         (attention.getRole() == KernelRole::AttentionBackwardTransposed ||
          wsBackwardRoleSplitTakes(d, dv));
}

bool wsBackwardTakes(int64_t headDim, int64_t valueDim) {
  // 16-byte rows for the TMA, at most 256 wide. At D = Dv = 64 the key split
  // (128 queries a step) ran 1.10-1.18x the Sᵀ wgmma backward it replaced
  // (kernel lab run 17 against session 13 call 2).
  return headDim >= 8 && headDim <= 256 && headDim % 8 == 0 && valueDim >= 8 &&
         valueDim <= 256 && valueDim % 8 == 0 && std::max(headDim, valueDim) > 32;
}

bool wsBackwardKeySplit(int64_t headDim, int64_t valueDim) {
  // A warpgroup holds dK and dV of its 64 keys: up to D = 192 with Dv <= 128
  // (96 + 64 floats a thread; at D = 192 the scores in halves of 32 queries).
  // The role split runs 64 keys a block and so doubles the dQ reductions per
  // FLOP. Measured on the H200, the key split against it: 1.37-1.48x at
  // D = 128 (kernel lab run 11), 1.18-1.34x at D = 192 / Dv = 128
  // (bench/results/2026-12-02-h200-session21.md, call 1).
  return headDim <= 192 && valueDim <= 128;
}

bool wsBackwardKeySplitTakes(int64_t headDim, int64_t valueDim) {
  return wsBackwardTakes(headDim, valueDim) && wsBackwardKeySplit(headDim, valueDim);
}

bool wsBackwardRoleSplitTakes(int64_t headDim, int64_t valueDim) {
  // A head dim above 128 (D = 129-192 with Dv <= 128 a tuning point: the key
  // split is the hand rule there; at 128 and below the role split has no GPU
  // test any more).
  return wsBackwardTakes(headDim, valueDim) && std::max(headDim, valueDim) > 128;
}

int64_t wsBackwardBlockN(bool keySplit) { return keySplit ? 128 : 64; }

int64_t wsBackwardBlockM(int64_t headDim, int64_t valueDim) {
  return std::max(headDim, valueDim) <= 64 ? 128 : 64;
}

int64_t wsBackwardHeadTile(int64_t headDim, int64_t valueDim, bool keySplit) {
  if (wsBackwardBlockM(headDim, valueDim) == 128)
    return 64;
  if (headDim <= 128)
    return 128;
  // The key split's dK products take N = 192; the role split halves dQ by
  // columns in 64-column products (D = 192 pads to 256 there).
  return keySplit ? 192 : 256;
}

namespace {
/// dQ's TMA boxes: two of 64 rows x 32 f32 columns a consumer warpgroup.
constexpr int64_t kWsDqBoxBytes = 4 * 64 * 32 * 4;
/// The device library's shared-memory limit (AttentionBwdWsPlan's static_assert).
constexpr int64_t kWsSharedLimit = 227 * 1024;

/// AttentionBwdWsPlan::kSmemBytes without dQ's TMA boxes and dSᵀ's buffers
/// (the role split's Pᵀ exchange included).
int64_t wsBackwardBesideDsBytes(int64_t headDim, int64_t valueDim, int64_t stages,
                                int64_t elementBytes, bool keySplit) {
  // AttentionBwdWsPlan: K and V once (the key block), a ring of Q and dO slots
  // (blockM queries), lse and D a slot, mbarriers, 1024 bytes of alignment.
  int64_t d = wsBackwardHeadTile(headDim, valueDim, keySplit), dv = wsForwardValueTile(valueDim);
  int64_t blockN = wsBackwardBlockN(keySplit), blockM = wsBackwardBlockM(headDim, valueDim);
  int64_t tiles = (blockN * (d + dv) + stages * blockM * (d + dv)) * elementBytes;
  int64_t vectors = 2 * stages * blockM * 4;
  int64_t barriers = 1 + 2 * stages;
  return tiles + vectors + 8 * barriers + 1024 + (keySplit ? 0 : 64 * 64 * 4);
}

/// One dSᵀ buffer (16-bit, blockN x blockM).
int64_t wsBackwardDsBufferBytes(int64_t headDim, int64_t valueDim, bool keySplit) {
  return wsBackwardBlockN(keySplit) * wsBackwardBlockM(headDim, valueDim) * 2;
}

/// Whether four dSᵀ buffers (the deferred dQ's reuse distance when both
/// warpgroups' rows of two steps are in flight) fit at 64 queries a step
/// beside everything else, dQ's boxes included.
bool wsBackwardFourDsBuffersFit(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                                bool keySplit) {
  return wsBackwardBlockM(headDim, valueDim) == 64 &&
         wsBackwardBesideDsBytes(headDim, valueDim, stages, elementBytes, keySplit) + kWsDqBoxBytes +
                 4 * wsBackwardDsBufferBytes(headDim, valueDim, keySplit) <=
             kWsSharedLimit;
}

/// AttentionBwdWsPlan::kSmemBytes without dQ's TMA boxes: dSᵀ a ring of
/// 16-bit buffers under the key split (four where the warpgroups take turns
/// and they fit, else two; at D = 192 one, and the spare dQ boxes in a
/// second's place), one plus Pᵀ in f32 under the role split.
int64_t wsBackwardTilesBytes(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                             bool keySplit, bool turns) {
  int64_t buffers =
      !keySplit ? 1
      : turns && wsBackwardFourDsBuffersFit(headDim, valueDim, stages, elementBytes, keySplit) ? 4
                                                                                               : 2;
  return wsBackwardBesideDsBytes(headDim, valueDim, stages, elementBytes, keySplit) +
         buffers * wsBackwardDsBufferBytes(headDim, valueDim, keySplit);
}
} // namespace

bool wsBackwardTurnsTake(int64_t headDim, int64_t valueDim, bool keySplit) {
  return keySplit && wsBackwardHeadTile(headDim, valueDim, keySplit) != 192;
}

bool wsBackwardTakesTurns(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                          bool keySplit) {
  return wsBackwardTurnsTake(headDim, valueDim, keySplit) &&
         wsBackwardFourDsBuffersFit(headDim, valueDim, stages, elementBytes, keySplit);
}

bool wsBackwardDqTma(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                     bool keySplit) {
  // (Only the role split asks, where dSᵀ has one buffer whatever the turns.)
  return keySplit || wsBackwardTilesBytes(headDim, valueDim, stages, elementBytes, keySplit, false) +
                             kWsDqBoxBytes <=
                         kWsSharedLimit;
}

int64_t wsBackwardSharedBytes(int64_t headDim, int64_t valueDim, int64_t stages,
                              int64_t elementBytes, bool keySplit, std::optional<bool> turns) {
  bool takesTurns =
      turns.value_or(wsBackwardTakesTurns(headDim, valueDim, stages, elementBytes, keySplit)) &&
      wsBackwardTurnsTake(headDim, valueDim, keySplit);
  return wsBackwardTilesBytes(headDim, valueDim, stages, elementBytes, keySplit, takesTurns) +
         (wsBackwardDqTma(headDim, valueDim, stages, elementBytes, keySplit) ? kWsDqBoxBytes : 0);
}

bool wsBackwardPlanSplitsKeys(const TilePlan &plan) { return plan.blockN == wsBackwardBlockN(true); }

bool wsBackwardPlanTakes(AttentionSpecAttr attention, const TilePlan &plan) {
  int64_t d = attention.getHeadDim(), dv = attention.getValueDim();
  bool keySplit = wsBackwardPlanSplitsKeys(plan);
  // The key split's tile body is the Sᵀ form's (128 key rows on 8 warps).
  return takesWsBackward(attention) &&
         (keySplit ? wsBackwardKeySplitTakes(d, dv) &&
                         attention.getRole() == KernelRole::AttentionBackwardTransposed
                   : plan.blockN == wsBackwardBlockN(false) && wsBackwardRoleSplitTakes(d, dv)) &&
         plan.blockM == wsBackwardBlockM(d, dv) && plan.warps == plan.blockN / 16 &&
         plan.stages >= 1 && plan.stages <= 4;
}

TilePlan defaultPlan(const TargetDescription &target, Attribute spec, ArrayRef<Type> argTypes) {
  TilePlan plan;
  plan.strategy = target.strategy;
  plan.stages = 2;
  bool hopper = target.sharedMemoryPerBlock > 200000;
  // Decode kernels (attention_decode.cuh): four consumer warps of 16 keys a 64-key tile, 16 rows a block, a
  // K/V ring of 4 stages (kernel lab, session 22: 3 and 5 stages within 1 % at D = 128), fewer where 64-key
  // tiles of wide heads would not fit (3 at D = Dv = 256).
  if (auto decode = llvm::dyn_cast_or_null<DecodeSpecAttr>(spec)) {
    if (decode.getRole() == KernelRole::KvAppendCheck || decode.getRole() == KernelRole::KvAppend) {
      // kv_append.cuh: 128 threads, 4 new tokens a block
      plan.blockM = 4;
      plan.blockN = 1;
      plan.warps = 4;
      plan.stages = 1;
      return plan;
    }
    plan.blockM = 16;
    plan.blockN = 64;
    plan.warps = 4;
    int64_t stageBytes = 64 * (decode.getHeadDim() + decode.getValueDim()) * 2;
    plan.stages = std::clamp<int64_t>((target.sharedMemoryPerBlock - 1024) / stageBytes, 2, 4);
    return plan;
  }
  // A mixture of experts (docs/design/moe.md): the router and the expert GEMMs the warp-specialised persistent GEMM
  // (two consumer warpgroups on 128-row tiles, a 4-slot ring; 128 columns a tile, the down projection's and the
  // backward GEMMs' 256; the accumulating data gradient 3 slots, beside the tile of C it reads), the routing kernels
  // 8 warps. (The kernel lab's forms: bench/kernel_lab/launch_moe.cu.)
  if (auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(spec)) {
    KernelRole role = moe.getRole();
    bool gemm = moe.isGemm();
    bool narrow = role == KernelRole::MoeRouter || role == KernelRole::MoeUp;
    plan.strategy = gemm ? Strategy::WgmmaWsSm90 : target.strategy;
    plan.blockM = gemm ? 128 : 8;
    plan.blockN = !gemm ? 1 : narrow ? 128 : 256;
    plan.blockK = 64;
    plan.warps = 8;
    plan.stages = !gemm ? 1 : role == KernelRole::MoeDataGradAccumulate ? 3 : 4;
    return plan;
  }
  // Packed sequences (varlen.cuh): the plan one block of 512 threads; the forward the warp-specialised forward's
  // plan for its head dims (its block_m in the spec, which the plan's tile map counts in).
  if (auto varlen = llvm::dyn_cast_or_null<VarlenSpecAttr>(spec)) {
    switch (varlen.getRole()) {
    case KernelRole::VarlenPlan:
    case KernelRole::VarlenKeyPlan:
      plan.blockM = 1;
      plan.blockN = 1;
      plan.warps = 16;
      plan.stages = 1;
      return plan;
    case KernelRole::VarlenBwdPrepare:
    case KernelRole::VarlenBwdFinish: // 64 rows of one head on 4 warps
      plan.blockM = 64;
      plan.blockN = 64;
      plan.warps = 4;
      plan.stages = 1;
      return plan;
    case KernelRole::VarlenBackward: {
      // The warp-specialised backward's plan for the head dims (the dense one's): keys split up to D = 192 (128
      // keys on 8 warps), roles above (64 on 4); the spec's block_m is the key tile.
      bool keySplit = wsBackwardKeySplit(varlen.getHeadDim(), varlen.getValueDim());
      plan.blockM = wsBackwardBlockM(varlen.getHeadDim(), varlen.getValueDim());
      plan.blockN = wsBackwardBlockN(keySplit);
      plan.warps = plan.blockN / 16;
      return plan;
    }
    default:
      break;
    }
    plan.blockM = varlen.getBlockM();
    plan.warps = plan.blockM / 16;
    plan.blockN = wsForwardBlockN(varlen.getHeadDim(), varlen.getValueDim(), target, plan.blockM / 64);
    return plan;
  }
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
    int64_t d = std::max(attention.getHeadDim(), attention.getValueDim());
    switch (attention.getRole()) {
    case KernelRole::AttentionForward:
    case KernelRole::AttentionBackwardDQ: {
      bool sixteenBit = attention.getElementType().getValue().getIntOrFloatBitWidth() == 16;
      bool forward = attention.getRole() == KernelRole::AttentionForward;
      if (hopper && forward && sixteenBit &&
          wsForwardTakes(attention.getHeadDim(), attention.getValueDim())) {
        // The warp-specialised TMA forward (FlashAttention-3 style): a TMA
        // producer warpgroup, a K/V ring, consumer warpgroups of 64 query
        // rows that take turns issuing their GEMMs (measured at D = 128: 0.98-1.04x cuDNN at
        // S >= 4k on the H200, 1.3-1.4x the cp.async wgmma forward;
        // docs/device-library.md). 128 keys a block where O, S and P fit the
        // consumer registers and two K/V stages fit shared memory, else 64.
        // Three consumer warpgroups (192 rows) at head dims <= 64.
        int64_t consumers = wsForwardConsumerWarpgroups(attention.getHeadDim(), attention.getValueDim());
        plan.strategy = Strategy::WgmmaWsSm90;
        plan.blockM = 64 * consumers;
        plan.warps = 4 * consumers;
        plan.blockN = wsForwardBlockN(attention.getHeadDim(), attention.getValueDim(), target, consumers);
        // Two ring stages: as deep as shared memory allows (D = 64: 4, D =
        // 128: 3) measured -1 to +1 % at D = 64 and -10 % at D = 128, S = 16k
        // (bench/results/2026-11-30-h200-session7.md).
        break;
      }
      // (The cp.async wgmma forward the ws kernel replaced, two warpgroups of
      // 64 query rows at D = Dv in {64, 128}, is a point of the tuning space:
      // TuningSpace.cpp.)
      // mma.sync: 32 query rows per warp (two 16-row bands) halve the shared
      // memory traffic per FLOP against 16 rows (measured +10-15% at D = 64).
      if (d <= 64) {
        plan.blockM = 128;
        plan.blockN = 64;
        plan.warps = 4;
      } else if (d <= 128) {
        // D = 96/128 with 32 rows per warp spilled 104-444 bytes in the
        // generated code; 16 rows per warp do not.
        plan.blockM = 64;
        plan.blockN = 64;
        plan.warps = 4;
      } else {
        plan.blockM = 64;
        plan.blockN = 64;
        plan.warps = 4;
      }
      break;
    }
    case KernelRole::AttentionBackward:
    case KernelRole::AttentionBackwardTransposed:
      if (hopper && takesWsBackward(attention)) {
        // The warp-specialised TMA backward (the device library's
        // attention_bwd_ws), 64 queries a step (128 at head dims <= 64).
        // Up to 128 columns: 128 keys on 8 warps, each consumer warpgroup
        // holding dK and dV of its 64 keys (FA3's split). Measured at D = 128
        // on the H200: 0.84-0.86x cuDNN in the kernel lab, against the Sᵀ
        // wgmma backward's 0.75-0.79x (bench/results/2026-12-01-h200-session10.md).
        // Wider: 64 keys, the two consumer warpgroups split by role (Pᵀ and
        // dV, dSᵀ and dK) so each holds one 64 x D accumulator: 4 warps, each
        // consumer warpgroup holding whole tiles (flash-warp-specialize adds
        // the second). At D = 256: 0.90-0.94x cuDNN against the mma.sync
        // form's 0.28x (bench/results/2026-12-01-h200-session9.md).
        plan.strategy = Strategy::WgmmaWsSm90;
        plan.blockM = wsBackwardBlockM(attention.getHeadDim(), attention.getValueDim());
        plan.blockN = wsBackwardBlockN(wsBackwardKeySplit(attention.getHeadDim(), attention.getValueDim()) &&
                                       attention.getRole() == KernelRole::AttentionBackwardTransposed);
        plan.warps = plan.blockN / 16;
        break;
      }
      if (attention.getRole() == KernelRole::AttentionBackwardTransposed)
        return transposedBackwardPlan(plan, attention, hopper, d);
      [[fallthrough]];
    case KernelRole::AttentionBackwardKV:
      // 64 keys x 64 queries on 4 warps: 128 keys spilled 480 bytes at D = 64.
      plan.blockM = 64;
      plan.blockN = 64;
      plan.warps = 4;
      break;
    case KernelRole::AttentionBackwardKVTransposed:
      return transposedBackwardPlan(plan, attention, hopper, d);
    case KernelRole::AttentionMaskBlocks:
    case KernelRole::AttentionMaskBlocksTransposed:
    case KernelRole::AttentionSegmentPlan:
      // A mask modifier's block classes: one 64-row a block, 128 threads
      // taking its column blocks (mask_blocks.cuh). A document modifier's
      // segment plan: one block of the library's 1024 threads reads the ids
      // (segments.cuh; these are its tile body's, which the emitter does not
      // print).
      plan.blockM = 64;
      plan.blockN = 64;
      plan.warps = 4;
      plan.stages = 1;
      break;
    default:
      // Row-wise pre/postprocessing (delta = rowsum(dO O), dQ from its f32
      // accumulator): memory bound, a block's loads issued at once, so small
      // blocks (64 rows on 4 warps: 32 KB of shared memory at D = 128) that
      // many are resident and in different phases. 128 rows on 8 warps (64-69
      // KB, 3 blocks an SM) ran at 3.0-3.3 TB/s on the H200 (session 33).
      plan.blockM = 64;
      plan.blockN = 128;
      plan.warps = 4;
      plan.stages = 1;
      break;
    }
    return plan;
  }
  if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec)) {
    plan.blockK = 32;
    switch (gemm.getRole()) {
    case KernelRole::ColumnSum:
      plan.blockM = 16;
      plan.blockN = 128;
      plan.warps = 1;
      break;
    case KernelRole::FfnActivationGrad:
      // Memory bound, a block's loads issued at once: small blocks (2 chunks
      // of 16 bytes a thread and input), so that many are resident (8 of 128
      // threads an SM, within 64 registers) and in different phases. 128 x 128 blocks of 8 warps (8 chunks a thread, 2
      // blocks an SM) ran at 1.9 TB/s on the H200, eager PyTorch's
      // elementwise kernels at 3.3-3.7 (bench/results/2026-12-01-h200-session14.md).
      plan.blockM = 64;
      plan.blockN = 32;
      plan.warps = 4;
      plan.stages = 1;
      break;
    case KernelRole::FfnFused: {
      plan.blockM = 64;
      plan.blockN = 64;
      plan.warps = 4;
      // The warp-specialised TMA form: x's 128-row block resident, W1
      // columns and W2 rows of a hidden block through the ring, two consumer
      // warpgroups; its tiles are the attention forward's (D = d, Dv = d_out).
      bool gated = gemm.getGated().getValue();
      size_t w2Index = 2 + (gemm.getBias1().getValue() ? 1 : 0) + (gated ? 1 : 0);
      auto x = argTypes.empty() ? GlobalTensorType() : llvm::dyn_cast<GlobalTensorType>(argTypes[0]);
      auto w1 = argTypes.size() > 1 ? llvm::dyn_cast<GlobalTensorType>(argTypes[1]) : GlobalTensorType();
      int64_t outputDim = outputDimOf(argTypes, w2Index);
      if (hopper && x && w1 && w1.getRank() == 2 &&
          wsFfnTakes(w1.getShape()[0], w1.getShape()[1], outputDim, gemm.getElementType().getValue(),
                     gated)) {
        plan.strategy = Strategy::WgmmaWsSm90;
        plan.blockM = 128;
        plan.warps = 8;
        plan.blockN = wsForwardBlockN(w1.getShape()[0], outputDim, target);
      }
      break;
    }
    default:
      plan.blockM = 128;
      plan.blockN = 128;
      plan.warps = 8;
      plan.stages = hopper ? 3 : 2;
      // wgmma: a k16 step per instruction of 64 x 128 per warpgroup, so 64
      // columns of K (one 128-byte swizzled panel row) a stage give each
      // stage four products; 4 stages of 32 KB keep loads three steps ahead.
      // Measured 1.45-1.72x the mma.sync plan on the H200 at the benchmark's
      // two large FFNs (bench/results/2026-11-29-h200-session4.md).
      // (Elementwise kernels keep the mma.sync strategy: they have no product.)
      if (hopper && gemm.getRole() != KernelRole::ConvertF32 &&
          gemm.getRole() != KernelRole::FfnActivationGrad &&
          gemm.getElementType().getValue().getIntOrFloatBitWidth() == 16) {
        plan.strategy = Strategy::WgmmaSm90;
        plan.blockK = 64;
        plan.stages = 4;
        // 128 x 256 halves the A-tile traffic and the issue and barrier
        // overhead per FLOP; 4 stages of 48 KB still fit.
        // (The gated FFN's dg and du: 128, its two read tiles' pieces beside
        // a 4-stage ring.)
        if (gemm.getRole() == KernelRole::Gemm && !gemm.appliesGatedActGrad())
          plan.blockN = 256;
        // The warp-specialised persistent TMA GEMM (gemm_ws.cuh) wherever it
        // takes the kernel (known from its arguments): a producer thread, a
        // 4-slot ring, two consumer warpgroups on 128 x 256 tiles, the
        // epilogue stored by TMA under the next tile. Measured on the H200
        // (bench/results/2026-12-01-h200-session15.md call 3): the FFN step's
        // GPU time 1.08x eager PyTorch at d = 4096 (was 1.00x with the
        // cp.async form above), 0.99x at d = 1024 (0.74x), 0.85x at d = 256
        // (0.74x); docs/design/wgmma-gemm.md has the A/B.
        // The gated up projection too, 128 columns of each weight a tile (one
        // m64n256 product computes both).
        // A form that reads a tile in its epilogue (C += ..., act_grad's P)
        // holds the tile's pieces: 3 stages at 256 columns.
        // Split-K weight gradients too (since session 28): slices of K as
        // units of the persistent grid, each unit's sum added into C from
        // registers; 1.01-1.05x the cp.async split-K at d = 256 on the H200
        // (bench/results/2026-12-03-h200-session28.md call 4).
        if (isWsGemmRole(gemm) && !argTypes.empty() && !wsGemmRefusal(gemm, argTypes)) {
          plan.strategy = Strategy::WgmmaWsSm90;
          plan.blockM = 128;
          plan.warps = 8;
          // (B's column block resident where wsGemmResidentB says: 128
          // columns, a 64 KB slab at K = 256 beside A's slots and the tile
          // buffers.)
          WsGemmForm form = wsGemmFormOf(gemm, argTypes);
          if (form.residentK > 0)
            plan.blockN = 128;
          plan.stages = wsGemmDeepestStages(gemm, plan.blockN, form).value_or(3);
        }
      }
      break;
    }
    return plan;
  }
  return plan;
}

bool wgmmaAttentionTakes(int64_t headDim, int64_t valueDim) {
  return headDim == valueDim && (headDim == 64 || headDim == 128);
}

bool wsForwardTakes(int64_t headDim, int64_t valueDim) {
  // 16-byte rows for the TMA (multiples of 8), at most 256 wide; D <= 32
  // keeps mma.sync, whose 32-column tiles do not pad it (a 64-column panel
  // would double Q·Kᵀ or more; not measured).
  return headDim > 32 && headDim <= 256 && headDim % 8 == 0 && valueDim >= 8 &&
         valueDim <= 256 && valueDim % 8 == 0;
}

bool wsFfnTakes(int64_t inputDim, int64_t hiddenDim, int64_t outputDim, Type element, bool gated) {
  // 16-byte rows for the TMA (x and W1 rows of d, W1 rows of h, W2 and y rows
  // of d_out); x's 128-row block and the y accumulator fit as Q and O do.
  // Gated FFNs (two hidden products a block) are not in the library's form.
  auto rowsOk = [](int64_t width) { return width >= 8 && width <= 256 && width % 8 == 0; };
  return (element.isBF16() || element.isF16()) && !gated && rowsOk(inputDim) && rowsOk(outputDim) &&
         hiddenDim >= 8 && hiddenDim % 8 == 0 && !ShapedType::isDynamic(hiddenDim);
}

std::optional<std::string> wsGemmRefusal(Attribute spec, ArrayRef<Type> argTypes) {
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
  if (!gemm || !isWsGemmRole(gemm))
    return std::string("it is not a plain, gated or split-K GEMM (#tile.gemm<role = gemm>, gated_gemm or "
                       "gemm_split_k)");
  bool gated = gemm.getRole() == KernelRole::GatedGemm;
  if (gemm.getRole() == KernelRole::GemmSplitK &&
      (!gemm.getTransposeA().getValue() || gemm.getTransposeB().getValue() || gemm.getBias1().getValue() ||
       gemm.getAccumulate().getValue() || gemm.savesPre() || gemm.appliesActGrad()))
    return std::string("its split over K is not a weight gradient's (A [K, M] transposed, B [K, N], nothing but "
                       "the product)");
  Type element = gemm.getElementType().getValue();
  if (!element.isBF16() && !element.isF16())
    return llvm::formatv("its element type is {0}, not bf16 or f16", element).str();
  if (gemm.getAccumulate().getValue() && (gated || gemm.savesPre()))
    return std::string("it accumulates into C and is gated or saves its pre-activation");
  if (gemm.getTransposeA().getValue() && gemm.getTransposeB().getValue())
    return std::string("both A and B are transposed (no wgmma operand pair reads that form)");
  if (gated && (gemm.getTransposeA().getValue() || gemm.getTransposeB().getValue()))
    return std::string("its gated operands are transposed (the form takes x [M, K] and weights [K, N])");
  // a, b, [bias], [pre], c (gated: a, w_gate, w_up, [g, u], c): A, C and the
  // saved tensors of one rank (2, or 3 with a batch dimension first: a token
  // stream [B, S, d]), the weights rank 2.
  auto a = argTypes.empty() ? GlobalTensorType() : llvm::dyn_cast<GlobalTensorType>(argTypes[0]);
  auto b = argTypes.size() < 2 ? GlobalTensorType() : llvm::dyn_cast<GlobalTensorType>(argTypes[1]);
  if (!a || !b || (a.getRank() != 2 && a.getRank() != 3) || b.getRank() != 2)
    return std::string("its operands are not A [(B,) M, K] and a rank-2 B");
  if (a.getRank() == 3 && gemm.getTransposeA().getValue())
    return std::string("its A is batched and transposed (a weight gradient summed over the batch)");
  for (auto [index, type] : llvm::enumerate(argTypes)) {
    auto tensor = llvm::dyn_cast<GlobalTensorType>(type);
    if (!tensor)
      return std::string("it takes scalar arguments");
    if (tensor.getRank() == 1)  // the bias [N]
      continue;
    bool weight = index == 1 || (gated && index == 2);
    if (weight ? tensor.getRank() != 2 : tensor.getRank() != a.getRank())
      return llvm::formatv("its tensors mix ranks {0} and {1}", a.getRank(), tensor.getRank()).str();
    int64_t width = tensor.getShape().back();
    if (ShapedType::isDynamic(width) || width % 8 != 0)
      return llvm::formatv("a tensor's rows are {0} elements wide: TMA maps need a static multiple of 8",
                           ShapedType::isDynamic(width) ? std::string("?") : std::to_string(width))
          .str();
  }
  return std::nullopt;
}

bool isWsGemmRole(GemmSpecAttr gemm) {
  return gemm.getRole() == KernelRole::Gemm || gemm.getRole() == KernelRole::GatedGemm ||
         gemm.getRole() == KernelRole::GemmSplitK;
}

int64_t wsGemmTilesRead(GemmSpecAttr gemm) {
  return gemm.appliesGatedActGrad() ? 2 : gemm.getAccumulate().getValue() || gemm.appliesActGrad() ? 1 : 0;
}

bool wsGemmPingPongTakes(GemmSpecAttr gemm) {
  return gemm.getRole() == KernelRole::Gemm || gemm.getRole() == KernelRole::GatedGemm;
}

bool wsGemmPingPong(GemmSpecAttr gemm, ArrayRef<Type> argTypes, std::optional<bool> tableKnob) {
  if (!wsGemmPingPongTakes(gemm))
    return false;
  if (tableKnob)
    return *tableKnob;
  // The fused dpre at short K: at K = 256 four K blocks of products against an
  // epilogue of the derivative's ~10 operations an element; the two
  // warpgroups taking 64-row tiles in turn run one's epilogue under the
  // other's products. Measured on the H200 (d = 256, 128 x 256, 4 stages:
  // bench/results/2026-12-03-h200-session29.md calls 2-3): the kernel 144 ->
  // 129 us, the backward 1.015x in bench_ffn; at long K the lab measured it
  // 2-10 % behind (2026-12-02-h200-session16.md call 8).
  auto a = argTypes.empty() ? GlobalTensorType() : llvm::dyn_cast<GlobalTensorType>(argTypes[0]);
  if (!gemm.appliesActGrad() || !a || a.getRank() < 2)
    return false;
  int64_t k = a.getShape()[a.getRank() - (gemm.getTransposeA().getValue() ? 2 : 1)];
  return !ShapedType::isDynamic(k) && k <= 256;
}

int64_t wsGemmResidentK(GemmSpecAttr gemm, ArrayRef<Type> argTypes) {
  if (gemm.getRole() != KernelRole::Gemm || gemm.appliesGatedActGrad() || gemm.getAccumulate().getValue() ||
      gemm.savesPre() || gemm.getTransposeA().getValue() || wsGemmRefusal(gemm, argTypes))
    return 0;
  auto a = llvm::dyn_cast<GlobalTensorType>(argTypes[0]);
  if (!a || a.getRank() != 2)
    return 0;
  int64_t k = a.getShape()[1];
  return ShapedType::isDynamic(k) || k > kResidentBMaxK ? 0 : (k + 63) / 64 * 64;
}

bool wsGemmResidentB(GemmSpecAttr gemm, ArrayRef<Type> argTypes, std::optional<bool> tableKnob) {
  if (wsGemmResidentK(gemm, argTypes) == 0)
    return false;
  if (tableKnob)
    return *tableKnob;
  // A tuning point, not a hand rule. The fused dpre at d = 256 on the H200
  // (65536 x 1024 x 256, the kernel lab: bench/results/
  // 2026-12-03-h200-session30.md calls 2-3): ahead of the ping-pong form while
  // the epilogue's derivative took ~12 operations (295-299 TFLOP/s against
  // 273), behind it once they were 8 (319 against 329); plain GEMMs 471
  // against 493.
  return false;
}

WsGemmForm wsGemmFormOf(GemmSpecAttr gemm, ArrayRef<Type> argTypes, WsGemmKnobs knobs) {
  if (wsGemmResidentB(gemm, argTypes, knobs.residentB))
    return WsGemmForm{true, wsGemmResidentK(gemm, argTypes)};
  return WsGemmForm{wsGemmPingPong(gemm, argTypes, knobs.pingPong), 0};
}

bool wsGemmPlanTakes(GemmSpecAttr gemm, int64_t blockM, int64_t blockN, int64_t blockK, int64_t warps,
                     int64_t stages, WsGemmForm form) {
  // (The library takes up to 8 stages; #tile.warp_specialized's ring 4.)
  bool gated = gemm.getRole() == KernelRole::GatedGemm;
  bool shape = form.residentK > 0
                   ? (blockN == 128 || blockN == 256) && form.residentK % 64 == 0 && form.residentK <= kResidentBMaxK
                   : (gated ? blockN == 128 : blockN == 128 || blockN == 256) &&
                         (!form.pingPong || wsGemmPingPongTakes(gemm));
  return shape && blockM == 128 && warps == 8 && blockK == 64 && stages >= 2 && stages <= 4 &&
         wsGemmPlanSharedBytes(gemm, blockN, stages, form) <= kWsSharedLimit;
}

std::optional<int64_t> wsGemmDeepestStages(GemmSpecAttr gemm, int64_t blockN, WsGemmForm form) {
  for (int64_t stages : {4, 3, 2})
    if ((form.residentK == 0 || stages <= 3) &&  // (the resident form's points: 3 or 2 slots of A)
        wsGemmPlanTakes(gemm, 128, blockN, 64, 8, stages, form))
      return stages;
  return std::nullopt;
}

bool wsGemmFitPlan(GemmSpecAttr gemm, ArrayRef<Type> argTypes, WsGemmKnobs knobs, bool widthGiven,
                   bool stagesGiven, TilePlan &plan) {
  WsGemmForm form = wsGemmFormOf(gemm, argTypes, knobs);
  if (form.residentK > 0 && !widthGiven && !wsGemmDeepestStages(gemm, plan.blockN, form))
    plan.blockN = 128;  // (B's slab of 256 columns leaves no room for A's slots at K = 256)
  if (!stagesGiven)
    if (std::optional<int64_t> deepest = wsGemmDeepestStages(gemm, plan.blockN, form))
      plan.stages = *deepest;
  return wsGemmPlanTakes(gemm, plan.blockM, plan.blockN, plan.blockK, plan.warps, plan.stages, form);
}

int64_t wsGemmPlanSharedBytes(GemmSpecAttr gemm, int64_t blockN, int64_t stages, WsGemmForm form) {
  int64_t elementBytes = gemm.getElementType().getValue().getIntOrFloatBitWidth() / 8;
  if (form.residentK > 0)
    return wsGemmResidentSharedBytes(blockN, stages, form.residentK, elementBytes);
  return wsGemmSharedBytes(blockN, stages, elementBytes, gemm.getRole() == KernelRole::GatedGemm,
                           wsGemmTilesRead(gemm), gemm.getRole() == KernelRole::GemmSplitK, form.pingPong);
}

int64_t wsGemmResidentSharedBytes(int64_t blockN, int64_t stages, int64_t residentK, int64_t elementBytes) {
  int64_t kBlocks = residentK / 64;
  return kBlocks * blockN * 64 * elementBytes + stages * kBlocks * 64 * 64 * elementBytes +
         2 * 2 * blockN * 64 * elementBytes + 8 * (2 + 2 * stages + 8) + 1024;
}

int64_t wsGemmSharedBytes(int64_t blockN, int64_t stages, int64_t elementBytes, bool gated, int64_t tilesRead,
                          bool splitK, bool pingPong) {
  int64_t tileRows = pingPong ? 64 : 128;  // A's rows a slot (transposed: its columns)
  int64_t slot = tileRows * 64 * elementBytes + 64 * blockN * (gated ? 2 : 1) * elementBytes;
  int64_t pieceBuffers = tilesRead > 0 ? tilesRead * blockN / 64 : splitK ? 0 : 2;  // a consumer warpgroup
  return stages * slot + 2 * pieceBuffers * 64 * 64 * elementBytes +
         8 * (2 * stages + (tilesRead > 0 ? 2 * pieceBuffers : 0)) + 1024;
}

std::optional<WsForwardSizes> wsForwardSizes(Attribute spec, ArrayRef<Type> argTypes) {
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
    if (attention.getRole() != KernelRole::AttentionForward)
      return std::nullopt;
    // (Under a causal mask the wide key block spills 16-20 bytes at D = 80-128, 4 accesses a key block around the
    // element mask's branch: a point the tuner times like any other.) A separable score modifier adds one FFMA an
    // element and nothing that lives across the softmax; a mask modifier of indices alone (no tensors, no block
    // table) is masked column by column there (NVRTC: 8 bytes of spills under prefix-LM's at D = 128).
    bool plainSoftmax = attention.getSoftcap().getValueAsDouble() == 0.0 &&
                        (!attention.getScoreMod() || attention.getScoreSeparable()) && !attention.getMaskBlocks();
    return WsForwardSizes{attention.getHeadDim(), attention.getValueDim(),
                          attention.getElementType().getValue().getIntOrFloatBitWidth() / 8, 2, 3, plainSoftmax};
  }
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
  if (!gemm || gemm.getRole() != KernelRole::FfnFused || argTypes.size() < 2)
    return std::nullopt;
  auto w1 = llvm::dyn_cast<GlobalTensorType>(argTypes[1]);
  size_t w2Index = 2 + (gemm.getBias1().getValue() ? 1 : 0) + (gemm.getGated().getValue() ? 1 : 0);
  if (!w1 || w1.getRank() != 2)
    return std::nullopt;
  return WsForwardSizes{w1.getShape()[0], outputDimOf(argTypes, w2Index),
                        gemm.getElementType().getValue().getIntOrFloatBitWidth() / 8, 1, 2, false};
}

bool wsForwardPlanTakes(const WsForwardSizes &sizes, int64_t blockM, int64_t blockN, int64_t warps,
                        int64_t stages) {
  int64_t consumers = warps / 4;
  return warps % 4 == 0 && consumers >= 2 && consumers <= sizes.maxConsumerWarpgroups &&
         blockM == 64 * consumers &&
         (blockN == 64 || blockN == 128 || (blockN == kWideForwardBlockN && sizes.wideKeys)) && stages >= 1 &&
         stages <= 4 && wsForwardFitsRegisters(sizes.valueDim, blockN, consumers);
}

int64_t wsForwardHeadTile(int64_t headDim) { return (headDim + 63) / 64 * 64; }

int64_t wsForwardValueTile(int64_t valueDim) {
  return valueDim <= 64 ? 64 : valueDim <= 128 ? 128 : 256;
}

int64_t wsConsumerRegisters(int64_t consumerWarpgroups) {
  return std::min<int64_t>(240, tile::limits::maxConsumerRegisters(24, consumerWarpgroups));
}

bool wsForwardFitsRegisters(int64_t valueDim, int64_t blockN, int64_t consumerWarpgroups) {
  // The device library's static_assert: O (Dv / 2 floats a thread), S
  // (blockN / 2) and P (blockN / 4) within 176 of the 240 registers (two
  // consumer warpgroups; 208 with the wide key block, Dv <= 128: ptxas 0
  // spills at D = 128), within all but 32 of the 160 (three).
  if (blockN == kWideForwardBlockN)
    return consumerWarpgroups == 2 && wsForwardValueTile(valueDim) <= 128;
  int64_t budget = consumerWarpgroups == 2 ? 176 : wsConsumerRegisters(consumerWarpgroups) - 32;
  return wsForwardValueTile(valueDim) / 2 + blockN * 3 / 4 <= budget;
}

int64_t wsForwardConsumerWarpgroups(int64_t headDim, int64_t valueDim) {
  // Measured in the kernel lab at D = 64 (bench/results/2026-12-01-kernel_lab-run16.md):
  // +15-16 % non-causal and +8-13 % causal at S >= 4k against two warpgroups,
  // +6 % / -6 % at S = 1k (fewer tiles).
  return std::max(headDim, valueDim) <= 64 ? 3 : 2;
}

int64_t wsForwardBlockN(int64_t headDim, int64_t valueDim, const TargetDescription &target,
                        int64_t consumerWarpgroups) {
  if (wsForwardFitsRegisters(valueDim, 128, consumerWarpgroups) &&
      wsForwardSharedBytes(headDim, valueDim, 128, 2, 2, 2, 64 * consumerWarpgroups) <=
          target.sharedMemoryPerBlock)
    return 128;
  return 64;
}

int64_t wsForwardSharedBytes(int64_t headDim, int64_t valueDim, int64_t blockN, int64_t stages,
                             int64_t elementBytes, int64_t residentBarriers, int64_t blockM) {
  // Q's region doubles as the O staging of the epilogue; tiles are padded.
  int64_t d = wsForwardHeadTile(headDim), dv = wsForwardValueTile(valueDim);
  int64_t q = blockM * std::max(d, dv) * elementBytes;
  int64_t slots = stages * blockN * (d + dv) * elementBytes;
  int64_t barriers = residentBarriers + 4 * stages;
  return q + slots + 8 * barriers + 1024;
}

bool prefersFusedActivationGrad(const TargetDescription &target, Attribute actGradSpec, ArrayRef<Type> argTypes) {
  // bench/results/2026-12-02-h200-session16.md call 2 (kernel lab, GELU):
  // 1.19x / 1.15x / 1.05x eager's mm + gelu_backward at d = 256 / 1024 / 4096;
  // the session-14 cp.async form with the derivative ran at 0.5-0.7x a plain
  // GEMM's rate (2026-12-01-h200-session14.md).
  // Not the gated FFN's (dg and du in the epilogue): at d = 4096, h = 11008
  // its 128 x 128 GEMM ran 2678 us against the plain dh's 2096 at 128 x 256
  // plus the elementwise kernel's 460 (bench/results/2026-12-03-h200-session29.md
  // call 5); a tuning-table entry (key ...-grad-gated) plans it.
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(actGradSpec);
  if (gemm && gemm.appliesGatedActGrad())
    return false;
  return defaultPlan(target, actGradSpec, argTypes).strategy == Strategy::WgmmaWsSm90;
}

bool prefersTransposedBackward(const TargetDescription &target, Attribute spec) {
  auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec);
  if (!attention)
    return false;
  // Every wgmma plan (D = 64/128, 16-bit): on the H200 at S = 4k/16k the Sᵀ
  // backward ran 254-302 TFLOP/s (D = 128) and 235-271 (D = 64) against the
  // row form's 188-218 (bench/results/2026-11-29-h200-session3.md); and the
  // warp-specialised backward's key split, which needs the Sᵀ form.
  TilePlan plan = defaultPlan(target, spec);
  return plan.strategy == Strategy::WgmmaSm90 ||
         (plan.strategy == Strategy::WgmmaWsSm90 &&
          wsBackwardKeySplit(attention.getHeadDim(), attention.getValueDim()));
}

int64_t estimateRegistersPerThread(Attribute spec, const TilePlan &plan, ArrayRef<Type> argTypes) {
  // Saturating: head dims and widths come from the IR and may be absurd.
  auto mul = saturatingMul;
  auto add = saturatingAdd;
  int64_t values = 0;
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
    // Tiles are the head dims padded to the layouts' multiple wide.
    Type element = attention.getElementType().getValue();
    int64_t d = paddedTileWidth(attention.getHeadDim(), element, plan.strategy),
            dv = paddedTileWidth(attention.getValueDim(), element, plan.strategy);
    switch (attention.getRole()) {
    case KernelRole::AttentionForward:
      // acc [Br x Dv] + scores and probabilities [Br x Bc]
      values = add(mul(plan.blockM, dv), mul(plan.blockM, plan.blockN) * 3 / 2);
      break;
    case KernelRole::AttentionBackward:
    case KernelRole::AttentionBackwardKV:
    case KernelRole::AttentionBackwardTransposed:
    case KernelRole::AttentionBackwardKVTransposed:
      // dK [Bc x D] + dV [Bc x Dv] + S/P and dP/dS [Br x Bc]; the ws form's
      // warpgroups hold one of dK, dV each.
      values = add(mul(plan.blockN, plan.strategy == Strategy::WgmmaWsSm90 ? std::max(d, dv) : add(d, dv)),
                   2 * plan.blockM * plan.blockN);
      break;
    case KernelRole::AttentionBackwardDQ:
      values = add(mul(plan.blockM, d), 2 * plan.blockM * plan.blockN);
      break;
    default:
      values = mul(plan.blockM, std::max(d, dv));
      break;
    }
  } else if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec)) {
    switch (gemm.getRole()) {
    case KernelRole::FfnFused: {
      bool gated = gemm.getGated().getValue();
      size_t w2Index = 2 + (gemm.getBias1().getValue() ? 1 : 0) + (gated ? 1 : 0);
      int64_t outputDim = paddedTileWidth(outputDimOf(argTypes, w2Index),
                                          gemm.getElementType().getValue(), plan.strategy);
      values = add(mul(plan.blockM, outputDim),
                   plan.blockM * plan.blockN * (gated ? 5 : 3) / 2);
      break;
    }
    default:
      values = plan.blockM * plan.blockN;
      break;
    }
  }
  return add(values / threadsOf(plan), kAddressingRegisters);
}

bool fusedFfnFits(const TargetDescription &target, int64_t outputDim, Type element, bool gated,
                  const TilePlan &plan, std::string &reason) {
  // Registers: the [Bm x d_out] f32 output accumulator and the [Bm x Bn]
  // hidden tile (f32 and its converted copy; gated: plus the up projection)
  // spread over the block. The output tiles are d_out padded to the layouts'
  // column multiple wide (TilePadding.h): that is what they cost.
  int64_t elementBytes = element.isF32() ? 4 : 2;
  outputDim = paddedTileWidth(outputDim, element, plan.strategy);
  int64_t hiddenTiles = plan.blockM * plan.blockN * (gated ? 5 : 3) / 2;
  int64_t registers = saturatingAdd(
      saturatingAdd(saturatingMul(plan.blockM, outputDim), hiddenTiles) / threadsOf(plan),
      kAddressingRegisters);
  if (registers > target.registersPerThread) {
    reason = llvm::formatv("the [{0} x {1}] output accumulator needs ~{2} registers per thread "
                           "(limit {3})",
                           plan.blockM, outputDim, registers, target.registersPerThread);
    return false;
  }
  // Shared memory: x and W1 tiles per stage plus the W2 slab [Bn x d_out].
  int64_t shared = saturatingMul(
      plan.stages * elementBytes,
      saturatingAdd(plan.blockM * plan.blockK + plan.blockK * plan.blockN * (gated ? 2 : 1),
                    saturatingMul(plan.blockN, outputDim)));
  if (shared > target.sharedMemoryPerBlock) {
    reason = llvm::formatv("needs {0} bytes of shared memory (limit {1})", shared,
                           target.sharedMemoryPerBlock);
    return false;
  }
  return true;
}

} // namespace flashc
