//===- TuningSpace.cpp - the tuning space of each kernel kind -------------===//
//
// Part of the target model (Target.cpp holds the hand rules): for each
// tunable kernel kind, the key its table entries are found by and the points
// `python -m flashc.tune` times. A point leaves out what cannot compile or
// was measured far behind (each kind's comment says which and where); the
// shared-memory fit of the GEMM-family kernels is checked by compiling, so
// their spaces may hold points a given shape rejects (the tuner skips those).
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Tuning.h"

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

namespace {

constexpr llvm::StringLiteral kKinds[] = {"attention_forward", "attention_backward", "gemm",
                                          "gated_gemm", "gemm_split_k", "ffn_fused"};

bool isHopper(const TargetDescription &target) { return target.sharedMemoryPerBlock > 200000; }

std::string dtypeName(Type element) {
  if (element.isBF16())
    return "bf16";
  if (element.isF16())
    return "f16";
  return "f32";
}

std::string sizeText(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

GlobalTensorType tensorArg(ArrayRef<Type> argTypes, size_t index) {
  return index < argTypes.size() ? llvm::dyn_cast<GlobalTensorType>(argTypes[index])
                                 : GlobalTensorType();
}

/// The last two sizes of a GEMM operand, (rows, columns) of op(X).
std::optional<std::pair<int64_t, int64_t>> operandShape(GlobalTensorType type, bool transposed) {
  if (!type || type.getRank() < 2)
    return std::nullopt;
  int64_t rows = type.getShape()[type.getRank() - 2], cols = type.getShape()[type.getRank() - 1];
  return transposed ? std::pair{cols, rows} : std::pair{rows, cols};
}

/// d<d>h<h>o<d_out> of the fused FFN: x [.., d],
/// W1 [d, h] (argument 1), W2 [h, d_out] after the optional b1 and W_up.
std::optional<std::string> ffnShape(GemmSpecAttr gemm, ArrayRef<Type> argTypes) {
  size_t w2Index = 2 + (gemm.getBias1().getValue() ? 1 : 0) + (gemm.getGated().getValue() ? 1 : 0);
  GlobalTensorType w1 = tensorArg(argTypes, 1), w2 = tensorArg(argTypes, w2Index);
  if (!w1 || !w2 || w1.getRank() != 2 || w2.getRank() != 2)
    return std::nullopt;
  return "d" + sizeText(w1.getShape()[0]) + "h" + sizeText(w1.getShape()[1]) + "o" +
         sizeText(w2.getShape()[1]);
}

std::string maskClass(AttentionSpecAttr attention) {
  int64_t left = attention.getWindowLeft(), right = attention.getWindowRight();
  std::string mask = left < 0 && right < 0 ? "none" : left < 0 && right == 0 ? "causal" : "window";
  if (attention.getSoftcap().getValueAsDouble() != 0.0)
    mask += "+softcap";
  // A mask modifier: its own entries (its element mask costs more), those of one that reads tensors apart again
  // (its block-class table, the segment form; the wide key block is not theirs).
  if (attention.getMaskMod())
    mask += attention.getMaskBlocks() ? "+mod" : "+indexmod";
  if (attention.getScoreMod()) // (a function of every score: its own entries too)
    mask += "+score";
  return mask;
}

AttentionSpecAttr withRole(AttentionSpecAttr attention, KernelRole role) {
  // (the block-class table and the score modifier belong to the roles that compute scores)
  bool scores = role != KernelRole::AttentionBackwardPreprocess && role != KernelRole::AttentionBackwardPostprocess &&
                role != KernelRole::AttentionMaskBlocks && role != KernelRole::AttentionMaskBlocksTransposed;
  return AttentionSpecAttr::get(attention.getContext(), role, attention.getHeadDim(),
                                attention.getValueDim(), attention.getScale(),
                                attention.getSoftcap(), attention.getWindowLeft(),
                                attention.getWindowRight(), attention.getElementType(),
                                attention.getKeyOffset(), attention.getMaskMod(),
                                attention.getMaskBlocks() && scores,
                                scores ? attention.getScoreMod() : FlatSymbolRefAttr(),
                                scores && attention.getScoreAdditive(), scores && attention.getScoreSeparable(),
                                attention.getTopLeft(),
                                attention.getSegments() && AttentionSpecAttr::isSegmentMainRole(role));
}

TuningPoint pointFrom(const TilePlan &plan, bool gemmFamily) {
  TuningPoint point;
  point.strategy = plan.strategy;
  point.blockM = plan.blockM;
  point.blockN = plan.blockN;
  if (gemmFamily)
    point.blockK = plan.blockK;
  point.warps = plan.warps;
  point.stages = plan.stages;
  return point;
}

/// The cp.async wgmma attention kernels' plan (forward, and the Sᵀ backward at
/// D = 64): 128 x 128 on 8 warps, 2 stages.
TilePlan cpAsyncWgmmaPlan() {
  TilePlan plan;
  plan.strategy = Strategy::WgmmaSm90;
  plan.blockM = 128;
  plan.blockN = 128;
  plan.warps = 8;
  plan.stages = 2;
  return plan;
}

/// The warp-specialised forward's points (the attention forward, the fused
/// FFN: D / d and Dv / d_out): 128 or 64 keys (hidden columns) a block where
/// O, S and P fit the consumers' registers, a ring of 2 or 3 stages that fits
/// shared memory (deeper measured no gain, bench/results/2026-11-30-h200-session7.md
/// call 1), the consumers ping-ponging or not (ping-pong measured +8-21 % at
/// D = 128); for the attention forward at head dims <= 64, three consumer
/// warpgroups (192 rows, the default there) before two. (Three warpgroups run
/// only where they were measured: the attention forward at head dims <= 64.)
/// With `wideKeys` (an attention forward whose softmax holds nothing else,
/// WsForwardSizes::wideKeys) the two-warpgroup points take the wide key block
/// too (kWideForwardBlockN, last).
void addWsForwardPoints(std::vector<TuningPoint> &points, const TargetDescription &target,
                        int64_t headDim, int64_t valueDim, int64_t elementBytes, bool gemmFamily,
                        bool wideKeys) {
  bool three = !gemmFamily && wsForwardConsumerWarpgroups(headDim, valueDim) == 3;
  for (int64_t consumers : three ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2}) {
    for (int64_t blockN : {int64_t(128), int64_t(64), kWideForwardBlockN}) {
      if (blockN == kWideForwardBlockN && !wideKeys)
        continue;
      if (!wsForwardFitsRegisters(valueDim, blockN, consumers))
        continue;
      for (int64_t stages : {2, 3}) {
        if (wsForwardSharedBytes(headDim, valueDim, blockN, stages, elementBytes,
                                 gemmFamily ? 1 : 2, 64 * consumers) >
            target.sharedMemoryPerBlock)
          continue;
        for (bool pingPong : {true, false}) {
          TilePlan plan;
          plan.strategy = Strategy::WgmmaWsSm90;
          plan.blockM = 64 * consumers;
          plan.blockN = blockN;
          plan.blockK = 32;
          plan.warps = 4 * consumers;
          plan.stages = stages;
          TuningPoint point = pointFrom(plan, gemmFamily);
          point.pingPong = pingPong;
          points.push_back(point);
        }
      }
    }
  }
}

/// attention_forward. sm_90a, 16-bit: the warp-specialised TMA kernel's points
/// (each with and without the persistent grid) and, at D = Dv in {64, 128},
/// the cp.async wgmma forward it replaced as the default (1.25-1.41x behind at
/// S >= 4k, ahead in one do_bench row: D = 128, S = 1k, non-causal;
/// bench/results/2026-11-30-h200-session5.md call 6).
/// mma.sync only where neither takes the head dims (it ran 0.35-0.6x the ws
/// kernel at D = 80 / 96 / 256, docs/device-library.md): 128 or 64 query rows
/// at D <= 64, 64 above (128 rows spilled at D = 96 / 128).
std::vector<TuningPoint> attentionForwardSpace(const TargetDescription &target,
                                               AttentionSpecAttr attention) {
  std::vector<TuningPoint> points;
  int64_t d = attention.getHeadDim(), dv = attention.getValueDim();
  int64_t bits = attention.getElementType().getValue().getIntOrFloatBitWidth();
  bool hopper16 = isHopper(target) && bits == 16;
  if (hopper16 && wsForwardTakes(d, dv)) {
    std::optional<WsForwardSizes> sizes = wsForwardSizes(attention, {});
    addWsForwardPoints(points, target, d, dv, bits / 8, /*gemmFamily=*/false, sizes && sizes->wideKeys);
    // Each two-warpgroup point on the persistent grid too (flash-order-blocks),
    // after the hand rule's grid (three warpgroups spill on it).
    size_t ws = points.size();
    for (size_t i = 0; i < ws; ++i) {
      points[i].persistent = false;
      if (points[i].warps != 8)
        continue;
      TuningPoint persistent = points[i];
      persistent.persistent = true;
      points.push_back(persistent);
    }
  }
  if (hopper16 && wgmmaAttentionTakes(d, dv))
    points.push_back(pointFrom(cpAsyncWgmmaPlan(), false));
  if (points.empty()) {
    for (int64_t blockM : {128, 64}) {
      if (blockM == 128 && std::max(d, dv) > 64)
        continue;
      TilePlan plan;
      plan.blockM = blockM;
      plan.blockN = 64;
      plan.warps = 4;
      plan.stages = 2;
      points.push_back(pointFrom(plan, false));
    }
  }
  return points;
}

/// attention_backward (the main kernel: dK, dV, dQ by atomics). On sm_90a,
/// 16-bit heads with one dim above 64 (no softcap): the warp-specialised
/// backward with a Q / dO ring of 1-4 stages that fits shared memory -- its
/// key split (128 keys on 8 warps, the Sᵀ form's kernel) up to D = 192 with
/// Dv <= 128, its role split (64 x 64 on 4 warps, either form) above (and as a
/// point at D = 129-192); the key split ran 1.1x the Sᵀ wgmma form at D = 128
/// (bench/results/2026-12-01-h200-session10.md) and 1.18-1.34x the role split
/// at D = 192 / Dv = 128 (session 21), the role split 2.9-3.4x the mma.sync
/// forms at D = 256 (session 9), and the key split's space keeps the row form
/// as a point. Each warp-specialised point comes with its grid in groups of 1,
/// 4 and 8 (head, batch) pairs (`group`, flash-order-blocks; the hand rule: 4
/// where a window or mask modifier makes key blocks differ in work, else 1),
/// each key-split stage count below D = 192 also with its consumers' other
/// form at the hand rule's group (`ping_pong`: taking turns or meeting).
/// Otherwise both forms: the Sᵀ form at its plan (wgmma: query blocks of 64
/// or 128; mma.sync elsewhere) and the row form (64 x 64 on 4 warps).
std::vector<TuningPoint> attentionBackwardSpace(const TargetDescription &target,
                                                AttentionSpecAttr attention) {
  std::vector<TuningPoint> points;
  AttentionSpecAttr transposedSpec = withRole(attention, KernelRole::AttentionBackwardTransposed);
  if (isHopper(target) && takesWsBackward(transposedSpec)) {
    int64_t d = attention.getHeadDim(), dv = attention.getValueDim();
    int64_t bytes = attention.getElementType().getValue().getIntOrFloatBitWidth() / 8;
    bool keySplit = wsBackwardKeySplit(d, dv);
    // The hand rule's split first; at D = 129-192 / Dv <= 128 also the role
    // split the key split replaced there (session 21: 0.75-0.85x its speed).
    // The grid in groups of (head, batch) pairs (flash-order-blocks), the
    // hand rule's first: 4 where key blocks differ in work, else 1.
    int64_t handGroup = keyBlocksDiffer(attention) ? kWsBackwardHeadGroups : 1;
    llvm::SmallVector<bool, 2> splits = {keySplit};
    if (keySplit && wsBackwardRoleSplitTakes(d, dv))
      splits.push_back(false);
    for (bool split : splits)
      for (int64_t stages : {1, 2, 3, 4}) {
        if (wsBackwardSharedBytes(d, dv, stages, bytes, split) > target.sharedMemoryPerBlock)
          continue;
        TilePlan plan;
        plan.strategy = Strategy::WgmmaWsSm90;
        plan.blockM = wsBackwardBlockM(d, dv);
        plan.blockN = wsBackwardBlockN(split);
        plan.warps = plan.blockN / 16;
        plan.stages = stages;
        TuningPoint point = pointFrom(plan, false);
        if (split)
          point.form = "transposed";
        point.group = handGroup;
        points.push_back(point);
        for (int64_t heads : kWsBackwardHeadGroupChoices)
          if (heads != handGroup) {
            point.group = heads;
            points.push_back(point);
          }
        // The consumers' other form at the hand rule's group: taking turns
        // with two dSᵀ buffers where four do not fit (three stages, D <= 64),
        // meeting every step where they do (the form turns replaced there:
        // 2.6-3.7 % slower at D = 128, session 41).
        if (split && wsBackwardTurnsTake(d, dv, split)) {
          point.group = handGroup;
          point.pingPong = !wsBackwardTakesTurns(d, dv, stages, bytes, split);
          if (wsBackwardSharedBytes(d, dv, stages, bytes, split, point.pingPong) <=
              target.sharedMemoryPerBlock)
            points.push_back(point);
        }
      }
    if (keySplit) {
      TuningPoint rows =
          pointFrom(defaultPlan(target, withRole(attention, KernelRole::AttentionBackward)), false);
      rows.form = "rows";
      if (rows.strategy == Strategy::WgmmaWsSm90)  // the role split, which serves either form
        rows.group = handGroup;
      points.push_back(rows);
    }
    // D = Dv = 64: the Sᵀ wgmma backward the key split replaced as the default
    // (0.87-0.91x its speed at S >= 4k, session 13).
    if (wgmmaAttentionTakes(d, dv) && wsBackwardBlockM(d, dv) == 128) {
      TuningPoint point = pointFrom(cpAsyncWgmmaPlan(), false);
      point.form = "transposed";
      points.push_back(point);
    }
    return points;
  }
  TilePlan transposed =
      defaultPlan(target, withRole(attention, KernelRole::AttentionBackwardTransposed));
  llvm::SmallVector<int64_t, 2> queryBlocks = {transposed.blockM};
  if (transposed.strategy == Strategy::WgmmaSm90)
    queryBlocks = {transposed.blockM, transposed.blockM == 64 ? 128 : 64};
  for (int64_t blockM : queryBlocks) {
    TilePlan plan = transposed;
    plan.blockM = blockM;
    TuningPoint point = pointFrom(plan, false);
    point.form = "transposed";
    points.push_back(point);
  }
  TuningPoint rows =
      pointFrom(defaultPlan(target, withRole(attention, KernelRole::AttentionBackward)), false);
  rows.form = "rows";
  // The hand rule first: the form --backward-form=auto picks.
  if (prefersTransposedBackward(target, withRole(attention, KernelRole::AttentionBackwardTransposed)))
    points.push_back(rows);
  else
    points.insert(points.begin(), rows);
  return points;
}

/// The GEMM kernels. sm_90a, 16-bit: wgmma on two warpgroups, 64 columns of
/// K a stage; plain and split-K GEMMs 256 or 128 columns wide (128 x 256
/// measured 1.00-1.32x over 128 x 128 with the overlapped products,
/// docs/design/wgmma-gemm.md) with 4 or 3 stages, the backward hidden
/// kernel (one accumulator, pre-activation tiles in its epilogue) 128 or 256
/// wide (gated: 128 or 64) with 4 or 3, the gated GEMM (two accumulators)
/// 128 wide with 3 or 2; tiles in groups of 8, 4 or 16 row blocks; and each
/// width as blocks of one warpgroup (64 rows, 4 warps) with 2 or 3 stages.
/// Elsewhere mma.sync, 128 x 128 on 8 warps, 2 or 3 stages.
std::vector<TuningPoint> gemmSpace(const TargetDescription &target, GemmSpecAttr gemm,
                                   ArrayRef<Type> argTypes) {
  std::vector<TuningPoint> points;
  bool wgmma = isHopper(target) && gemm.getElementType().getValue().getIntOrFloatBitWidth() == 16;
  bool wide = gemm.getRole() == KernelRole::Gemm || gemm.getRole() == KernelRole::GemmSplitK;
  llvm::SmallVector<int64_t, 2> widths = wgmma && wide ? llvm::SmallVector<int64_t, 2>{256, 128}
                                                       : llvm::SmallVector<int64_t, 2>{128};
  // (4 stages of the wider accumulators' kernels do not fit: the hand rule's
  // 4 is lowered to 3 by flash-plan-memory.)
  llvm::SmallVector<int64_t, 2> depths = !wgmma ? llvm::SmallVector<int64_t, 2>{2, 3}
                                         : wide ? llvm::SmallVector<int64_t, 2>{4, 3}
                                                : llvm::SmallVector<int64_t, 2>{3, 2};
  // (The cp.async wgmma form's points; the warp-specialised form's, the hand
  // rule where it takes the kernel, come first below.)
  TilePlan hand = defaultPlan(target, gemm);
  // The hand rule's values first (split-K GEMMs are 128 wide; mma.sync on
  // sm_90a takes 3 stages).
  auto handFirst = [](llvm::SmallVector<int64_t, 2> &values, int64_t hand) {
    auto it = llvm::find(values, hand);
    if (it != values.end())
      std::rotate(values.begin(), it, it + 1);
  };
  handFirst(widths, hand.blockN);
  handFirst(depths, hand.stages);
  for (int64_t width : widths)
    for (int64_t stages : depths)
      for (int64_t group : {8, 4, 16}) {
        TilePlan plan = hand;
        plan.blockN = width;
        plan.stages = stages;
        TuningPoint point = pointFrom(plan, true);
        point.group = group;
        points.push_back(point);
      }
  // wgmma: blocks of one warpgroup (64 rows, 4 warps) with 2 or 3 stages, so
  // that several share an SM: short contractions (the d = 256 FFN's K = 256
  // kernels measured 0.86-0.95x the hand rule's time with them,
  // bench/results/2026-12-01-h200-session11.md call 5).
  if (wgmma)
    for (int64_t width : widths)
      for (int64_t stages : {2, 3}) {
        TilePlan plan = hand;
        plan.blockM = 64;
        plan.warps = 4;
        plan.blockN = width;
        plan.stages = stages;
        TuningPoint point = pointFrom(plan, true);
        point.group = 8;
        points.push_back(point);
      }
  // The warp-specialised persistent GEMM (gemm_ws.cuh) where it takes the
  // kernel, the hand rule's point first: 256 or 128 columns, 4 or 3 stages,
  // groups of 8 or 16 row blocks (0.95-1.02x cuBLAS on the FFN's shapes in
  // the kernel lab, bench/results/2026-12-01-h200-session15.md call 2); its
  // plain and gated forms also with the consumers ping-ponging, groups of 8
  // (in the lab +11 % for the fused dpre and +17 % for C += at K = 256,
  // 5-12 % behind at long K, bench/results/2026-12-02-h200-session16.md
  // call 8).
  // The persistent GEMM's plans: two consumer warpgroups, 64 columns of K a step.
  auto wsGemmPlan = [&](int64_t width, int64_t stages) {
    TilePlan plan = hand;
    plan.strategy = Strategy::WgmmaWsSm90;
    plan.blockM = 128;
    plan.warps = 8;
    plan.blockK = 64;
    plan.blockN = width;
    plan.stages = stages;
    return plan;
  };
  std::vector<TuningPoint> ws;
  bool gated = gemm.getRole() == KernelRole::GatedGemm;
  llvm::SmallVector<int64_t, 2> wsWidths = gated ? llvm::SmallVector<int64_t, 2>{128}
                                                 : llvm::SmallVector<int64_t, 2>{256, 128};
  handFirst(wsWidths, hand.blockN);  // (split-K's hand rule: 128 wide)
  bool pingPongTakes = wsGemmPingPongTakes(gemm);
  llvm::SmallVector<bool, 2> pingPongs = pingPongTakes ? llvm::SmallVector<bool, 2>{false, true}
                                                       : llvm::SmallVector<bool, 2>{false};
  if (wgmma && !wsGemmRefusal(gemm, argTypes))
    for (bool pingPong : pingPongs)
      for (int64_t width : wsWidths)
        for (int64_t stages : {4, 3})
          for (int64_t group : {8, 16}) {
            if (pingPong && group != 8)
              continue;
            TilePlan plan = wsGemmPlan(width, stages);
            // (A tile read in the epilogue takes its shared memory from the ring.)
            if (!wsGemmPlanTakes(gemm, plan.blockM, width, 64, plan.warps, stages, {pingPong, 0}))
              continue;
            TuningPoint point = pointFrom(plan, true);
            point.group = group;
            if (pingPongTakes)
              point.pingPong = pingPong;
            ws.push_back(point);
          }
  // At K <= 256 the resident-B form (gemm_resident_b.cuh: B's column block
  // kept over a block's run of 64-row tiles, the consumers taking them in
  // turn): 128 or 256 columns where B's slab fits, 3 or 2 slots of A
  // (the fused dpre at d = 256: 0.97x the ping-pong hand rule in the lab,
  // plain GEMMs 0.95x gemm_ws; session 30 calls 2-3). The other ws points
  // name the form off.
  int64_t residentK = wgmma ? wsGemmResidentK(gemm, argTypes) : 0;
  if (residentK > 0) {
    for (TuningPoint &point : ws)
      point.residentB = false;
    std::vector<TuningPoint> resident;
    for (int64_t width : {128, 256})
      for (int64_t stages : {3, 2}) {
        TilePlan plan = wsGemmPlan(width, stages);
        if (!wsGemmPlanTakes(gemm, plan.blockM, width, 64, plan.warps, stages, {true, residentK}))
          continue;
        TuningPoint point = pointFrom(plan, true);
        point.group = 8;  // (unused: a block's run is contiguous in column-block-major order)
        point.pingPong = true;
        point.residentB = true;
        resident.push_back(point);
      }
    bool handResident = wsGemmResidentB(gemm, argTypes, std::nullopt);
    ws.insert(handResident ? ws.begin() : ws.end(), resident.begin(), resident.end());
  }
  points.insert(points.begin(), ws.begin(), ws.end());
  return points;
}

/// ffn_fused. sm_90a, 16-bit, not gated, d and d_out up to 256: the
/// warp-specialised TMA kernel's points and the mma.sync fused kernel it
/// replaced as the default (2.9x behind at d = 256, h = 1024 in Nsight
/// Compute, bench/results/2026-11-30-h200-session7.md call 2; not measured at
/// other widths). Elsewhere the mma.sync kernel (64 x 64, 4 warps).
std::vector<TuningPoint> ffnFusedSpace(const TargetDescription &target, GemmSpecAttr gemm,
                                       ArrayRef<Type> argTypes) {
  std::vector<TuningPoint> points;
  TilePlan hand = defaultPlan(target, gemm, argTypes);
  std::optional<WsForwardSizes> ws = wsForwardSizes(gemm, argTypes);
  if (hand.strategy == Strategy::WgmmaWsSm90 && ws)
    addWsForwardPoints(points, target, ws->headDim, ws->valueDim, ws->elementBytes,
                       /*gemmFamily=*/true, /*wideKeys=*/false);
  TilePlan mma = defaultPlan(target, gemm);  // without the sizes: the mma.sync kernel
  points.push_back(pointFrom(mma, true));
  return points;
}

} // namespace

llvm::ArrayRef<llvm::StringLiteral> tunableKinds() { return kKinds; }

std::optional<TuningKey> tuningKeyOf(const TargetDescription &target, Attribute spec,
                                     ArrayRef<Type> argTypes) {
  TuningKey key;
  key.arch = target.name.str();
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
    switch (attention.getRole()) {
    case KernelRole::AttentionForward:
      key.kind = "attention_forward";
      break;
    case KernelRole::AttentionBackward:
    case KernelRole::AttentionBackwardTransposed:
      key.kind = "attention_backward";
      break;
    default:
      return std::nullopt;
    }
    key.dtype = dtypeName(attention.getElementType().getValue());
    key.shape = "d" + std::to_string(attention.getHeadDim());
    if (attention.getValueDim() != attention.getHeadDim())
      key.shape += "v" + std::to_string(attention.getValueDim());
    key.mask = maskClass(attention);
    return key;
  }
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
  if (!gemm)
    return std::nullopt;
  key.dtype = dtypeName(gemm.getElementType().getValue());
  key.mask = "-";
  switch (gemm.getRole()) {
  case KernelRole::FfnFused: {
    key.kind = "ffn_fused";
    std::optional<std::string> shape = ffnShape(gemm, argTypes);
    if (!shape)
      return std::nullopt;
    // -save: the training forward's kernel (it also stores pre and h), planned
    // apart from the inference one.
    key.shape = *shape + (gemm.savesPre() ? "-save" : "");
    return key;
  }
  case KernelRole::Gemm:
  case KernelRole::GatedGemm:
  case KernelRole::GemmSplitK: {
    key.kind = gemm.getRole() == KernelRole::Gemm        ? "gemm"
               : gemm.getRole() == KernelRole::GatedGemm ? "gated_gemm"
                                                         : "gemm_split_k";
    bool ta = gemm.getTransposeA().getValue(), tb = gemm.getTransposeB().getValue();
    auto a = operandShape(tensorArg(argTypes, 0), ta), b = operandShape(tensorArg(argTypes, 1), tb);
    if (!a || !b)
      return std::nullopt;
    key.shape = "m" + sizeText(a->first) + "n" + sizeText(b->second) + "k" + sizeText(a->second) +
                (ta ? "-ta" : "") + (tb ? "-tb" : "") +
                (gemm.getAccumulate().getValue() ? "-acc" : "") + (gemm.savesPre() ? "-save" : "") +
                (gemm.appliesActGrad() ? "-grad" : "") + (gemm.appliesGatedActGrad() ? "-gated" : "");
    return key;
  }
  default:
    return std::nullopt;
  }
}

std::vector<TuningPoint> tuningSpace(const TargetDescription &target, Attribute spec,
                                     ArrayRef<Type> argTypes) {
  if (!tuningKeyOf(target, spec, argTypes))
    return {};
  if (auto attention = llvm::dyn_cast<AttentionSpecAttr>(spec))
    return attention.getRole() == KernelRole::AttentionForward
               ? attentionForwardSpace(target, attention)
               : attentionBackwardSpace(target, attention);
  auto gemm = llvm::cast<GemmSpecAttr>(spec);
  if (gemm.getRole() == KernelRole::FfnFused)
    return ffnFusedSpace(target, gemm, argTypes);
  return gemmSpace(target, gemm, argTypes);
}

} // namespace flashc
