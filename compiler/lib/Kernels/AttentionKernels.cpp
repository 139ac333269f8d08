//===- AttentionKernels.cpp - attention forward/backward tile kernels -----===//
//
// FlashAttention-2 style kernels built from a #tile.attention recipe:
//   forward                 grid (query block, head, batch): online softmax
//                           over key blocks, output and lse written once;
//   backward_preprocess     D = rowsum(dO ∘ O), and where the program passes
//                           the f32 dQ accumulator (its kernels add into it
//                           atomically) its rows zeroed;
//   backward / backward_kv  grid (key block, kv head, batch): recompute
//                           P = exp(scale·S - lse) block by block, dV += Pᵀ·dO,
//                           dP = dO·Vᵀ, dS = P∘(dP - D), dK += scale·dSᵀ·Q and
//                           (backward only) dQ += scale·dS·K by f32 atomics;
//                           a kv head sums over its query-head group (GQA);
//   backward_dq             deterministic dQ, grid over query blocks;
//   backward_postprocess    dQ accumulator -> dQ in the output dtype.
// Masks: blocks wholly masked are outside the loop bounds; the element mask
// runs only on boundary blocks (scf.if on a computed predicate).
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

#include "flashc/Compiler/TilePadding.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

namespace {

/// Mask geometry shared by every attention kernel. Query row i sits at key
/// position p = i + off: off = Sk - Sq (bottom-right aligned), or the
/// run-time key offset when the recipe takes one.
struct MaskGeometry {
  int64_t left, right; // window sides, -1 = unbounded (causal = [-1, 0])
  int64_t blockM, blockN;
  Value sq, sk, off;
  /// The recipe's mask modifier (a tile.mask_mod), if any. The tile body masks
  /// every block with it and bounds the loops by the window alone: which
  /// blocks it hides whole or in part is the device library's interval
  /// analysis (mask_mod.cuh), not tile IR.
  FlatSymbolRefAttr maskMod;
  /// The kernel's tensors the modifier reads (its arguments after the role's).
  SmallVector<Value> modTensors;
  /// The recipe's score modifier (a tile.score_mod), if any, and the
  /// kernel's tensors it reads (after the mask modifier's).
  FlatSymbolRefAttr scoreMod;
  SmallVector<Value> scoreTensors;

  /// (batch, head, the score modifier's tensors): what tile.score passes.
  SmallVector<Value> scoreArgs(Value batch, Value head) const {
    SmallVector<Value> args = {batch, head};
    args.append(scoreTensors);
    return args;
  }

  /// Key blocks [begin, end) that a query block starting at row0 can see.
  std::pair<Value, Value> keyBlocks(KernelBuilder &kb, Value row0) const {
    Value keyEnd = sk;
    if (right >= 0) {
      Value rowEnd =
          kb.named("row_end", kb.min(kb.named("block_end", kb.add(row0, kb.idx(blockM))), sq));
      Value edge = kb.addConst(kb.named("end_key", kb.add(rowEnd, off)), right);
      keyEnd = kb.named("key_end", kb.max(kb.named("key_end_in_range", kb.min(sk, edge)), kb.idx(0)));
    }
    Value end = kb.named("k_block_end", kb.ceilDiv(keyEnd, kb.idx(blockN)));
    Value begin = kb.idx(0);
    if (left >= 0) {
      Value keyBegin =
          kb.named("key_begin", kb.max(kb.idx(0), kb.sub(kb.named("row_key", kb.add(row0, off)),
                                                          kb.idx(left))));
      begin = kb.named("k_block_begin", kb.floorDiv(keyBegin, kb.idx(blockN)));
    }
    return {begin, end};
  }

  /// Query blocks [begin, end) from which a key block starting at col0 is seen.
  std::pair<Value, Value> queryBlocks(KernelBuilder &kb, Value col0) const {
    Value begin = kb.idx(0);
    if (right >= 0) {
      Value rowBegin =
          kb.named("row_begin", kb.max(kb.idx(0), kb.addConst(kb.named("first_row", kb.sub(col0, off)), -right)));
      begin = kb.named("q_block_begin", kb.floorDiv(rowBegin, kb.idx(blockM)));
    }
    Value rowEnd = sq;
    if (left >= 0) {
      Value last =
          kb.named("last_row",
                   kb.add(kb.named("end_row", kb.sub(kb.named("col_end", kb.add(col0, kb.idx(blockN))), off)),
                          kb.idx(left)));
      rowEnd = kb.named("row_end", kb.max(kb.named("row_end_in_range", kb.min(sq, last)), kb.idx(0)));
    }
    return {begin, kb.named("q_block_end", kb.ceilDiv(rowEnd, kb.idx(blockM)))};
  }

  /// True when block (row0, col0) has an element that must be masked: it
  /// crosses the key tail or a window edge. Interior blocks skip tile.mask.
  Value needsMask(KernelBuilder &kb, Value row0, Value col0) const {
    Value colEnd = kb.named("col_end", kb.add(col0, kb.idx(blockN)));
    Value cond = kb.named("past_keys", kb.gt(colEnd, sk));
    if (right >= 0) {
      // last key of the block beyond the first row's right edge
      Value edge = kb.named("right_edge", kb.addConst(kb.named("row_key", kb.add(row0, off)), right));
      Value lastKey = kb.named("last_key", kb.sub(colEnd, kb.idx(1)));
      cond = kb.orI(cond, kb.named("past_right", kb.gt(lastKey, edge)));
    }
    if (left >= 0) {
      // first key of the block before the last row's left edge
      Value lastRow = kb.named("last_row", kb.add(row0, kb.idx(blockM - 1)));
      Value edge =
          kb.named("left_edge", kb.sub(kb.named("last_row_key", kb.add(lastRow, off)), kb.idx(left)));
      cond = kb.orI(cond, kb.named("before_left", kb.lt(col0, edge)));
    }
    return kb.named("needs_mask", cond);
  }

  /// `transposed`: the tile is S^T (keys on the rows); row0/col0 are still
  /// the first query and the first key; batch and head (the query head) are
  /// what a modifier sees as b and h.
  Value applyMask(KernelBuilder &kb, Value scores, Value row0, Value col0, Value batch, Value head,
                  bool transposed = false) const {
    auto mask = [&]() -> Value {
      SmallVector<Value> modArgs;
      if (maskMod) {
        modArgs = {batch, head};
        modArgs.append(modTensors);
      }
      return kb.b.create<MaskOp>(kb.loc, scores.getType(), scores, row0, col0, sk, off,
                                 kb.b.getI64IntegerAttr(left), kb.b.getI64IntegerAttr(right),
                                 transposed ? kb.b.getUnitAttr() : UnitAttr(), maskMod, modArgs);
    };
    if (maskMod)
      return mask();
    return kb.ifThenElse(needsMask(kb, row0, col0), scores, mask, "s_masked");
  }
};

struct AttentionKernel {
  KernelBuilder &kb;
  AttentionSpecAttr spec;
  TilePlan plan;
  /// Head dims (the tensors' widths, every load/store limit) and the tile
  /// widths they are padded to (TilePadding.h): the padding columns load as
  /// zeros, add nothing to Q·Kᵀ, P·V or the row dots, and are never stored.
  int64_t D, Dv, Dt, Dvt, Br, Bc;
  double scale;
  double softcap;
  Type elem;

  AttentionKernel(KernelBuilder &kb, AttentionSpecAttr spec, const TilePlan &plan)
      : kb(kb), spec(spec), plan(plan), D(spec.getHeadDim()), Dv(spec.getValueDim()),
        Br(plan.blockM), Bc(plan.blockN), scale(spec.getScale().getValueAsDouble()),
        softcap(spec.getSoftcap().getValueAsDouble()), elem(spec.getElementType().getValue()) {
    Dt = paddedTileWidth(D, elem, plan.strategy);
    Dvt = paddedTileWidth(Dv, elem, plan.strategy);
  }

  /// The modifiers' tensors: `count` arguments after the role's `first`, the
  /// mask modifier's then the score modifier's (`scoreTensorsCount`).
  unsigned modTensorsFirst = 0, modTensorsCount = 0, scoreTensorsCount = 0;

  MaskGeometry geometry(Value q, Value k) {
    MaskGeometry g;
    g.left = spec.getWindowLeft();
    g.right = spec.getWindowRight();
    g.maskMod = spec.getMaskMod();
    g.scoreMod = spec.getScoreMod();
    unsigned maskTensorsCount = modTensorsCount - scoreTensorsCount;
    for (unsigned i = 0; i < maskTensorsCount; ++i)
      g.modTensors.push_back(kb.arg(modTensorsFirst + i));
    for (unsigned i = 0; i < scoreTensorsCount; ++i)
      g.scoreTensors.push_back(kb.arg(modTensorsFirst + maskTensorsCount + i));
    g.blockM = Br;
    g.blockN = Bc;
    g.sq = kb.dim(q, 2, "seq_q");
    g.sk = kb.dim(k, 2, "seq_k");
    if (spec.getTopLeft()) {  // a band modifier's window: query row i at key position i
      g.off = kb.named("key_offset", kb.idx(0));
      return g;
    }
    if (!spec.takesKeyOffset()) {
      g.off = kb.named("key_offset", kb.sub(g.sk, g.sq));
      return g;
    }
    // The run-time offset, clamped to [-Sq - R' - 1, Sk + L' + 1] (L', R':
    // the window sides, 0 when unbounded): past either end every row sees
    // the same keys (all or none), so the clamp changes no result and keeps
    // the bound arithmetic below far from int overflow for any int32 given.
    Value given = kb.named("given_key_offset", kb.toIndex(kb.lastArg()));
    Value lo = kb.named("key_offset_min",
                        kb.sub(kb.idx(-std::max<int64_t>(g.right, 0) - 1), g.sq));
    Value hi = kb.named("key_offset_max", kb.addConst(g.sk, std::max<int64_t>(g.left, 0) + 1));
    g.off = kb.named("clamped_key_offset", kb.max(lo, kb.min(given, hi)));
    return g;
  }

  /// Raw scores S = Q·Kᵀ of one block (f32 register, Br x Bc).
  Value scores(Value qTile, Value kTile) {
    return kb.matmul(qTile, kTile, kb.named("s", kb.fill(kb.regF32(Br, Bc), 0.0)), false, true);
  }

  /// With a softcap or a score modifier the scale is applied inside it; the
  /// softmax ops then use scale 1.
  double softmaxScale() const { return softcap > 0 || spec.getScoreMod() ? 1.0 : scale; }

  /// Where a block's scores sit: its first query and key rows, the query
  /// tile's batch and head, and whether the tile is Sᵀ (keys on the rows).
  struct ScoreBlock {
    Value row0, col0, batch, head;
    bool transposed = false;
  };

  /// The scores of a block as the softmax sees them, before the mask:
  /// soft-capped (cap · tanh(scale · s / cap)) or through the score modifier
  /// (@m(scale · s, b, h, i, j)) when the recipe has one, else raw (the
  /// softmax ops scale them). `kept` receives what the backward needs for
  /// scoreGradient: the capped scores, or the raw ones under a modifier.
  Value modifyScores(const MaskGeometry &g, Value s, const ScoreBlock &at, Value *kept) {
    if (softcap > 0) {
      s = kb.b.create<SoftcapOp>(kb.loc, s.getType(), s, kb.b.getF64FloatAttr(scale),
                                 kb.b.getF64FloatAttr(softcap));
      if (kept)
        *kept = s;
    } else if (g.scoreMod) {
      if (kept)
        *kept = s;
      s = kb.b.create<ScoreOp>(kb.nameLoc("s_modified"), s.getType(), s, at.row0, at.col0, g.sq,
                               kb.b.getF64FloatAttr(scale), g.scoreMod, g.scoreArgs(at.batch, at.head),
                               at.transposed ? kb.b.getUnitAttr() : UnitAttr());
    }
    return s;
  }

  /// Scores of block (row0, col0) ready for the softmax: modified
  /// (modifyScores), masked on boundary blocks.
  Value softmaxInput(const MaskGeometry &g, Value qTile, Value kTile, Value row0, Value col0, Value batch,
                     Value head, Value *kept = nullptr) {
    Value s = modifyScores(g, scores(qTile, kTile), {row0, col0, batch, head}, kept);
    return g.applyMask(kb, s, row0, col0, batch, head);
  }

  /// dS of the raw scores, scaled: P∘(dP - D), back through the softcap or
  /// the score modifier when there is one (`kept`: modifyScores'), times
  /// the softmax scale.
  Value scoreGradient(const MaskGeometry &g, Value p, Value dp, Value dRow, Value kept, const ScoreBlock &at) {
    Value ds = kb.b.create<SoftmaxGradOp>(kb.loc, p.getType(), p, dp, dRow);
    if (softcap > 0)
      ds = kb.b.create<SoftcapGradOp>(kb.loc, ds.getType(), ds, kept,
                                      kb.b.getF64FloatAttr(softcap));
    else if (g.scoreMod)
      ds = kb.b.create<ScoreGradOp>(kb.nameLoc("ds_modified"), ds.getType(), ds, kept, at.row0, at.col0,
                                    kb.b.getF64FloatAttr(scale), g.scoreMod, g.scoreArgs(at.batch, at.head),
                                    at.transposed ? kb.b.getUnitAttr() : UnitAttr());
    return kb.b.create<ScaleOp>(kb.loc, ds.getType(), ds, kb.b.getF64FloatAttr(scale));
  }

  // --- forward ------------------------------------------------------------
  void forward() {
    Value q = kb.arg(0), k = kb.arg(1), v = kb.arg(2), out = kb.arg(3), lse = kb.arg(4);
    Value rb = kb.programId(GridAxis::X, "q_block"), h = kb.programId(GridAxis::Y, "head"),
          b = kb.programId(GridAxis::Z, "batch");
    MaskGeometry g = geometry(q, k);
    // GQA / MQA: query head h reads kv head h / (Hq / Hkv).
    Value group = kb.named("group", kb.divu(kb.dim(q, 1, "q_heads"), kb.dim(k, 1, "kv_heads")));
    Value hk = kb.named("kv_head", kb.divu(h, group));
    Value row0 = kb.named("row0", kb.mul(rb, kb.idx(Br)));
    Value zero = kb.idx(0);
    Value qTile = kb.load(q, {b, h, row0, zero}, g.sq, kb.idx(D), Br, Dt);
    double softmaxScale = this->softmaxScale();
    auto [begin, end] = g.keyBlocks(kb, row0);
    SmallVector<Value> state = kb.forLoop(
        begin, end,
        {kb.named("acc_zeros", kb.fill(kb.regF32(Br, Dvt), 0.0)), kb.named("m_init", kb.negInfRow(Br)),
         kb.named("l_zeros", kb.fill(kb.rowVector(Br), 0.0))},
        [&](Value kbIdx, ValueRange carried) -> SmallVector<Value> {
          Value acc = carried[0], m = carried[1], l = carried[2];
          Value col0 = kb.named("col0", kb.mul(kbIdx, kb.idx(Bc)));
          Value kTile = kb.load(k, {b, hk, col0, zero}, g.sk, kb.idx(D), Bc, Dt, plan.stages);
          Value vTile = kb.load(v, {b, hk, col0, zero}, g.sk, kb.idx(Dv), Bc, Dvt, plan.stages);
          Value s = softmaxInput(g, qTile, kTile, row0, col0, b, h);
          Value mNew = kb.b.create<RowMaxOp>(kb.nameLoc("m_new"), m.getType(), s, m);
          Value p =
              kb.b.create<Exp2Op>(kb.nameLoc("p"), s.getType(), s, mNew, kb.b.getF64FloatAttr(softmaxScale));
          Value corr = kb.b.create<SoftmaxCorrectionOp>(kb.nameLoc("corr"), m.getType(), m, mNew,
                                                        kb.b.getF64FloatAttr(softmaxScale));
          Value lNew = kb.b.create<OnlineSumOp>(kb.nameLoc("l_new"), l.getType(), l, corr, p);
          Value rescaled = kb.b.create<RescaleOp>(kb.loc, acc.getType(), acc, corr);
          Value accNew =
              kb.matmul(kb.named("p16", kb.convert(p, elem)), vTile, rescaled, false, false);
          return {accNew, mNew, lNew};
        },
        {"k_block", "acc", "m", "l"});
    Value o = kb.b.create<NormalizeOp>(kb.loc, state[0].getType(), state[0], state[2]);
    kb.store(kb.named("o16", kb.convert(o, elem)), out, {b, h, row0, zero}, g.sq, kb.idx(Dv));
    Value lseRow = kb.b.create<LseOp>(kb.nameLoc("lse_row"), state[1].getType(), state[1], state[2],
                                      kb.b.getF64FloatAttr(softmaxScale));
    kb.storeRows(lseRow, lse, {b, h, row0}, g.sq);
  }

  // --- backward -----------------------------------------------------------
  void preprocess() {
    Value out = kb.arg(0), dOut = kb.arg(1), delta = kb.arg(2);
    Value rb = kb.programId(GridAxis::X, "q_block"), h = kb.programId(GridAxis::Y, "head"),
          b = kb.programId(GridAxis::Z, "batch");
    Value sq = kb.dim(out, 2, "seq_q");
    Value row0 = kb.named("row0", kb.mul(rb, kb.idx(Br)));
    Value zero = kb.idx(0);
    Value oTile = kb.load(out, {b, h, row0, zero}, sq, kb.idx(Dv), Br, Dvt);
    Value doTile = kb.load(dOut, {b, h, row0, zero}, sq, kb.idx(Dv), Br, Dvt);
    Value d = kb.b.create<RowDotOp>(kb.nameLoc("delta_row"), kb.rowVector(Br), oTile, doTile);
    kb.storeRows(d, delta, {b, h, row0}, sq);
    // dq_accum[b, h, row0.., :] = 0 where the program passes it: the main kernel adds dQ into it.
    if (kb.numArgs() == 4)
      kb.store(kb.named("dq_zeros", kb.fill(kb.regF32(Br, Dt), 0.0)), kb.arg(3), {b, h, row0, zero}, sq,
               kb.idx(D));
  }

  /// What the key-gridded backward kernels share: their arguments, the key
  /// block's coordinates and mask geometry, and its K and V tiles.
  struct KeyBlock {
    Value q, k, v, dOut, lse, delta, dqAccum, dK, dV;
    Value batch, kvHead, col0, zero, kTile, vTile;
    MaskGeometry g;
  };
  /// One query block's contribution, given its head, first row and Q, dO
  /// tiles, to the dK and dV accumulators: returns the new (dK, dV).
  using QueryBlockStep = llvm::function_ref<std::pair<Value, Value>(
      const KeyBlock &, Value head, Value row0, Value qTile, Value doTile, Value dk, Value dv)>;

  /// dK, dV for one key block: loops over the query heads of its GQA group
  /// and the query blocks that see it, `step` adding each block, then stores
  /// them. dQ (with `atomicDq`) is the step's.
  void keyGradientsOverQueryBlocks(bool atomicDq, QueryBlockStep step) {
    KeyBlock kv;
    kv.q = kb.arg(0), kv.k = kb.arg(1), kv.v = kb.arg(2), kv.dOut = kb.arg(3), kv.lse = kb.arg(4),
    kv.delta = kb.arg(5);
    kv.dqAccum = atomicDq ? kb.arg(6) : Value();
    kv.dK = kb.arg(atomicDq ? 7 : 6), kv.dV = kb.arg(atomicDq ? 8 : 7);
    Value kbIdx = kb.programId(GridAxis::X, "k_block");
    kv.kvHead = kb.programId(GridAxis::Y, "kv_head");
    kv.batch = kb.programId(GridAxis::Z, "batch");
    kv.g = geometry(kv.q, kv.k);
    Value group = kb.named("group", kb.divu(kb.dim(kv.q, 1, "q_heads"), kb.dim(kv.k, 1, "kv_heads")));
    kv.col0 = kb.named("col0", kb.mul(kbIdx, kb.idx(Bc)));
    kv.zero = kb.idx(0);
    Value b = kv.batch, zero = kv.zero;
    kv.kTile = kb.load(kv.k, {b, kv.kvHead, kv.col0, zero}, kv.g.sk, kb.idx(D), Bc, Dt);
    kv.vTile = kb.load(kv.v, {b, kv.kvHead, kv.col0, zero}, kv.g.sk, kb.idx(Dv), Bc, Dvt);
    Value begin, end;
    std::tie(begin, end) = kv.g.queryBlocks(kb, kv.col0);
    // GQA: the kv head's gradient sums over the query heads of its group.
    SmallVector<Value> grads = kb.forLoop(
        zero, group,
        {kb.named("dk_zeros", kb.fill(kb.regF32(Bc, Dt), 0.0)),
         kb.named("dv_zeros", kb.fill(kb.regF32(Bc, Dvt), 0.0))},
        [&](Value member, ValueRange outer) -> SmallVector<Value> {
          Value h =
              kb.named("head", kb.add(kb.named("first_head", kb.mul(kv.kvHead, group)), member));
          return kb.forLoop(
              begin, end, outer, [&](Value qb, ValueRange carried) -> SmallVector<Value> {
                Value row0 = kb.named("row0", kb.mul(qb, kb.idx(Br)));
                Value qTile =
                    kb.load(kv.q, {b, h, row0, zero}, kv.g.sq, kb.idx(D), Br, Dt, plan.stages);
                Value doTile =
                    kb.load(kv.dOut, {b, h, row0, zero}, kv.g.sq, kb.idx(Dv), Br, Dvt, plan.stages);
                auto [dk, dv] = step(kv, h, row0, qTile, doTile, carried[0], carried[1]);
                return {dk, dv};
              },
              {"q_block", "dk_acc", "dv_acc"});
        },
        {"member", "dk_sum", "dv_sum"});
    kb.store(kb.named("dk16", kb.convert(grads[0], elem)), kv.dK, {b, kv.kvHead, kv.col0, zero},
             kv.g.sk, kb.idx(D));
    kb.store(kb.named("dv16", kb.convert(grads[1], elem)), kv.dV, {b, kv.kvHead, kv.col0, zero},
             kv.g.sk, kb.idx(Dv));
  }

  /// dK, dV for one key block; with `atomicDq` also dQ by atomics.
  void keyValueGradients(bool atomicDq) {
    keyGradientsOverQueryBlocks(atomicDq, [&](const KeyBlock &kv, Value h, Value row0, Value qTile,
                                              Value doTile, Value dk, Value dv) {
      const MaskGeometry &g = kv.g;
      Value lseRow = kb.named("lse_row", kb.loadRows(kv.lse, {kv.batch, h, row0}, g.sq, Br));
      Value dRow = kb.named("delta_row", kb.loadRows(kv.delta, {kv.batch, h, row0}, g.sq, Br));
      Value capped;
      Value s = softmaxInput(g, qTile, kv.kTile, row0, kv.col0, kv.batch, h, &capped);
      Value p = kb.b.create<RecomputeProbsOp>(kb.nameLoc("p"), s.getType(), s, lseRow,
                                              kb.b.getF64FloatAttr(softmaxScale()));
      // dV += Pᵀ·dO (P goes through shared memory to be transposed)
      Value pShared = kb.named("p_shared", kb.copyToShared(kb.named("p16", kb.convert(p, elem))));
      Value dvNew = kb.matmul(pShared, doTile, dv, true, false);
      // dP = dO·Vᵀ, dS = P∘(dP - D), scaled once for dK and dQ
      Value dp = kb.matmul(doTile, kv.vTile, kb.named("dp", kb.fill(kb.regF32(Br, Bc), 0.0)),
                           false, true);
      Value ds = scoreGradient(g, p, dp, dRow, capped, {row0, kv.col0, kv.batch, h});
      Value dsShared =
          kb.named("ds_shared", kb.copyToShared(kb.named("ds16", kb.convert(ds, elem))));
      Value dkNew = kb.matmul(dsShared, qTile, dk, true, false);
      if (atomicDq) {
        Value dq = kb.matmul(dsShared, kv.kTile, kb.fill(kb.regF32(Br, Dt), 0.0), false, false);
        kb.atomicAdd(dq, kv.dqAccum, {kv.batch, h, row0, kv.zero}, g.sq, kb.idx(D));
      }
      return std::make_pair(dkNew, dvNew);
    });
  }

  /// The S^T form of keyValueGradients: tiles of S^T = K·Qᵀ [Bc x Br] with
  /// keys on the rows, so Pᵀ and dSᵀ feed dV += Pᵀ·dO and dK += dSᵀ·Q straight
  /// from registers; per-query lse and D are column vectors in shared memory;
  /// only dSᵀ goes through shared memory, for dQ += dS·K.
  void keyValueGradientsTransposed(bool atomicDq) {
    auto columnVector =
        TileType::get(kb.b.getContext(), {Br}, kb.b.getF32Type(), MemorySpace::Shared);
    keyGradientsOverQueryBlocks(atomicDq, [&](const KeyBlock &kv, Value h, Value row0, Value qTile,
                                              Value doTile, Value dk, Value dv) {
      const MaskGeometry &g = kv.g;
      Value lseCol = kb.b.create<LoadRowsOp>(kb.nameLoc("lse_cols"), columnVector, kv.lse,
                                             ValueRange{kv.batch, h, row0}, g.sq);
      Value dCol = kb.b.create<LoadRowsOp>(kb.nameLoc("delta_cols"), columnVector, kv.delta,
                                           ValueRange{kv.batch, h, row0}, g.sq);
      // S^T = K·Qᵀ [Bc x Br]
      Value s = kb.matmul(kv.kTile, qTile, kb.named("st", kb.fill(kb.regF32(Bc, Br), 0.0)), false,
                          true);
      Value capped;
      ScoreBlock at{row0, kv.col0, kv.batch, h, /*transposed=*/true};
      s = modifyScores(g, s, at, &capped);
      s = g.applyMask(kb, s, row0, kv.col0, kv.batch, h, /*transposed=*/true);
      Value p = kb.b.create<RecomputeProbsOp>(kb.nameLoc("p"), s.getType(), s, lseCol,
                                              kb.b.getF64FloatAttr(softmaxScale()));
      // dV += Pᵀ·dO with Pᵀ in registers
      Value dvNew = kb.matmul(kb.named("pt16", kb.convert(p, elem)), doTile, dv, false, false);
      // dPᵀ = V·dOᵀ; dSᵀ = Pᵀ∘(dPᵀ - D[col])
      Value dp = kb.matmul(kv.vTile, doTile, kb.named("dpt", kb.fill(kb.regF32(Bc, Br), 0.0)),
                           false, true);
      Value ds = scoreGradient(g, p, dp, dCol, capped, at);
      Value dsReg = kb.named("dst16", kb.convert(ds, elem));
      // dSᵀ to shared memory for dQ before dK's product, which may
      // then run (wgmma, asynchronously) while dQ reads it.
      Value dsShared = atomicDq ? kb.named("dst_shared", kb.copyToShared(dsReg)) : Value();
      Value dkNew = kb.matmul(dsReg, qTile, dk, false, false);
      if (atomicDq) {
        // dQ = dS·K = (dSᵀ)ᵀ·K: dSᵀ through shared memory.
        Value dq = kb.matmul(dsShared, kv.kTile, kb.fill(kb.regF32(Br, Dt), 0.0), true, false);
        kb.atomicAdd(dq, kv.dqAccum, {kv.batch, h, row0, kv.zero}, g.sq, kb.idx(D));
      }
      return std::make_pair(dkNew, dvNew);
    });
  }

  /// Deterministic dQ: one block per query block, looping over key blocks.
  void queryGradient() {
    Value q = kb.arg(0), k = kb.arg(1), v = kb.arg(2), dOut = kb.arg(3), lse = kb.arg(4),
          delta = kb.arg(5), dQ = kb.arg(6);
    Value rb = kb.programId(GridAxis::X, "q_block"), h = kb.programId(GridAxis::Y, "head"),
          b = kb.programId(GridAxis::Z, "batch");
    MaskGeometry g = geometry(q, k);
    Value group = kb.named("group", kb.divu(kb.dim(q, 1, "q_heads"), kb.dim(k, 1, "kv_heads")));
    Value hk = kb.named("kv_head", kb.divu(h, group));
    Value row0 = kb.named("row0", kb.mul(rb, kb.idx(Br)));
    Value zero = kb.idx(0);
    Value qTile = kb.load(q, {b, h, row0, zero}, g.sq, kb.idx(D), Br, Dt);
    Value doTile = kb.load(dOut, {b, h, row0, zero}, g.sq, kb.idx(Dv), Br, Dvt);
    Value lseRow = kb.named("lse_row", kb.loadRows(lse, {b, h, row0}, g.sq, Br));
    Value dRow = kb.named("delta_row", kb.loadRows(delta, {b, h, row0}, g.sq, Br));
    auto [begin, end] = g.keyBlocks(kb, row0);
    SmallVector<Value> dq = kb.forLoop(
        begin, end, {kb.named("dq_zeros", kb.fill(kb.regF32(Br, Dt), 0.0))},
        [&](Value kbIdx, ValueRange carried) -> SmallVector<Value> {
          Value col0 = kb.named("col0", kb.mul(kbIdx, kb.idx(Bc)));
          Value kTile = kb.load(k, {b, hk, col0, zero}, g.sk, kb.idx(D), Bc, Dt, plan.stages);
          Value vTile = kb.load(v, {b, hk, col0, zero}, g.sk, kb.idx(Dv), Bc, Dvt, plan.stages);
          Value capped;
          Value s = softmaxInput(g, qTile, kTile, row0, col0, b, h, &capped);
          Value p = kb.b.create<RecomputeProbsOp>(kb.nameLoc("p"), s.getType(), s, lseRow,
                                                  kb.b.getF64FloatAttr(softmaxScale()));
          Value dp =
              kb.matmul(doTile, vTile, kb.named("dp", kb.fill(kb.regF32(Br, Bc), 0.0)), false, true);
          Value ds = scoreGradient(g, p, dp, dRow, capped, {row0, col0, b, h});
          return {kb.matmul(kb.named("ds16", kb.convert(ds, elem)), kTile, carried[0], false, false)};
        },
        {"k_block", "dq"});
    kb.store(kb.named("dq16", kb.convert(dq[0], elem)), dQ, {b, h, row0, zero}, g.sq, kb.idx(D));
  }

  /// The block classes of the modifier (tile.classify_blocks): one 64-row
  /// of the (query, key) plane a block (key rows when `transposed`), one slice
  /// of the table per batch / head where it has them.
  void maskBlocks(bool transposed) {
    Value q = kb.arg(0), k = kb.arg(1);
    Value table = kb.arg(2 + modTensorsCount);
    Value row = kb.programId(GridAxis::X, "row_block"), h = kb.programId(GridAxis::Y, "head"),
          b = kb.programId(GridAxis::Z, "batch");
    SmallVector<Value> modArgs = {b, h};
    for (unsigned i = 0; i < modTensorsCount; ++i)
      modArgs.push_back(kb.arg(2 + i));
    Value sq = kb.dim(q, 2, "seq_q"), sk = kb.dim(k, 2, "seq_k");
    kb.b.create<ClassifyBlocksOp>(kb.loc, spec.getMaskMod(), modArgs, sq, sk, row, table, b, h,
                                  transposed ? kb.b.getUnitAttr() : UnitAttr());
  }

  /// The segment plan of a document modifier (tile.plan_segments): the
  /// kernel's one block reads the ids once.
  void segmentPlan() {
    Value q = kb.arg(0), k = kb.arg(1), ids = kb.arg(2), plan = kb.arg(3);
    Value sq = kb.dim(q, 2, "seq_q"), sk = kb.dim(k, 2, "seq_k");
    kb.b.create<PlanSegmentsOp>(kb.loc, ids, sq, sk, plan);
  }

  void postprocess() {
    Value dqAccum = kb.arg(0), dQ = kb.arg(1);
    Value rb = kb.programId(GridAxis::X, "q_block"), h = kb.programId(GridAxis::Y, "head"),
          b = kb.programId(GridAxis::Z, "batch");
    Value sq = kb.dim(dqAccum, 2, "seq_q");
    Value row0 = kb.named("row0", kb.mul(rb, kb.idx(Br)));
    Value zero = kb.idx(0);
    Value acc = kb.load(dqAccum, {b, h, row0, zero}, sq, kb.idx(D), Br, Dt);
    kb.store(kb.named("dq16", kb.convert(acc, elem)), dQ, {b, h, row0, zero}, sq, kb.idx(D));
  }
};

} // namespace

/// Expected argument count per role, so a malformed recipe is an error, not
/// an out-of-range access.
static int64_t attentionArgCount(KernelRole role) {
  switch (role) {
  case KernelRole::AttentionForward:
    return 5;
  case KernelRole::AttentionBackwardPreprocess:
    return 3;
  case KernelRole::AttentionBackward:
  case KernelRole::AttentionBackwardTransposed:
    return 9;
  case KernelRole::AttentionBackwardKV:
  case KernelRole::AttentionBackwardKVTransposed:
    return 8;
  case KernelRole::AttentionBackwardDQ:
    return 7;
  case KernelRole::AttentionBackwardPostprocess:
    return 2;
  case KernelRole::AttentionMaskBlocks:
  case KernelRole::AttentionMaskBlocksTransposed:
    return 2;
  case KernelRole::AttentionSegmentPlan:
    return 4;  // q, k, the ids, the plan
  default:
    return -1;
  }
}

/// The segment plan's kernel: q, k, a rank-1 i32 ids tensor, a [rows, 4] i32
/// plan; one block.
static KernelOp buildSegmentPlanKernel(OpBuilder &builder, Location loc, StringRef name, AttentionSpecAttr spec,
                                       ArrayRef<Type> argTypes, const TilePlan &plan) {
  auto tensorOf = [&](size_t i) { return llvm::dyn_cast<GlobalTensorType>(argTypes[i]); };
  bool fits = argTypes.size() == 4 && tensorOf(0) && tensorOf(0).getRank() == 4 && tensorOf(1) &&
              tensorOf(1).getRank() == 4;
  for (size_t i = 2; fits && i < 4; ++i)
    fits = tensorOf(i) && tensorOf(i).getElementType().isSignlessInteger(32) && tensorOf(i).getRank() == int64_t(i - 1);
  if (!fits) {
    emitError(loc) << "attention kernel recipe 'attention_segment_plan' takes q, k, the document ids (a rank-1 i32 "
                      "!tile.tensor) and the plan (a rank-2 i32 !tile.tensor), got "
                   << argTypes.size() << " arguments";
    return nullptr;
  }
  MLIRContext *ctx = builder.getContext();
  SmallVector<GridAttr, 3> grid(3, GridAttr::get(ctx, -1, 0, 0, 1));
  OpBuilder::InsertionGuard guard(builder);
  KernelBuilder kb(builder, loc, name, argTypes, grid, plan, spec);
  AttentionKernel kernel(kb, spec, plan);
  kernel.segmentPlan();
  kb.finish();
  return kb.kernel;
}

KernelOp buildAttentionKernel(OpBuilder &builder, Location loc, StringRef name,
                              AttentionSpecAttr spec, ArrayRef<Type> argTypes,
                              const TilePlan &plan) {
  KernelRole role = spec.getRole();
  if (role == KernelRole::AttentionSegmentPlan)
    return buildSegmentPlanKernel(builder, loc, name, spec, argTypes, plan);
  // The role's tensors, the modifier's tensors, its block-class table (and a
  // document modifier's segment plan), then the key offset (an i32) where the
  // recipe takes one.
  bool keyOffset = spec.takesKeyOffset();
  ArrayRef<Type> tensorTypes = argTypes.drop_back(keyOffset && !argTypes.empty() ? 1 : 0);
  int64_t want = attentionArgCount(role);
  // (the preprocess that also zeroes dq_accum: out, dout, delta, dq_accum)
  if (role == KernelRole::AttentionBackwardPreprocess && tensorTypes.size() == 4)
    want = 4;
  bool classifies = spec.classifiesMaskBlocks();
  bool readsTable = spec.getMaskBlocks() || classifies;
  int64_t tail = (readsTable ? 1 : 0) + (spec.getSegments() ? 1 : 0);  // the table, the segment plan
  int64_t modTensors = static_cast<int64_t>(tensorTypes.size()) - want - tail;
  bool scored = spec.getScoreMod() && spec.computesScores();
  bool modded = (spec.getMaskMod() && (spec.computesScores() || classifies)) || scored;
  // How many of them the score modifier reads (its tensor arguments): the rest are the mask modifier's.
  int64_t scoreTensors = 0;
  if (scored) {
    Operation *scope = builder.getInsertionBlock() ? builder.getInsertionBlock()->getParentOp() : nullptr;
    auto scoreMod = scope ? SymbolTable::lookupNearestSymbolFrom<ScoreModOp>(scope, spec.getScoreMod()) : nullptr;
    if (!scoreMod) {
      emitError(loc) << "attention kernel recipe '" << stringifyKernelRole(role) << "' names score modifier "
                     << spec.getScoreMod() << ", which the module does not hold (tile.score_mod)";
      return nullptr;
    }
    scoreTensors = static_cast<int64_t>(scoreMod.getBody().front().getNumArguments()) - 5;
  }
  if (want < 0 || modTensors < scoreTensors || (!modded && modTensors != 0) ||
      (!spec.getMaskMod() && modTensors != scoreTensors)) {
    emitError(loc) << "attention kernel recipe '" << stringifyKernelRole(role) << "' takes " << want
                   << " tensor arguments" << (modded ? " (then its modifiers' tensors)" : "")
                   << (readsTable ? " and a block-class table" : "")
                   << (spec.getSegments() ? " and a segment plan" : "") << (keyOffset ? " and a key offset" : "")
                   << ", got " << argTypes.size() << " arguments";
    return nullptr;
  }
  if (keyOffset && !argTypes.back().isSignlessInteger(32)) {
    emitError(loc) << "attention kernel recipe '" << stringifyKernelRole(role)
                   << "' takes the key offset (an i32) last, got " << argTypes.back();
    return nullptr;
  }
  for (Type type : tensorTypes.take_front(want)) {
    auto tensor = llvm::dyn_cast<GlobalTensorType>(type);
    if (!tensor || tensor.getRank() < 2) {
      emitError(loc) << "attention kernels take !tile.tensor arguments, got " << type;
      return nullptr;
    }
  }
  for (auto [i, type] : llvm::enumerate(tensorTypes.drop_front(want))) {
    auto tensor = llvm::dyn_cast<GlobalTensorType>(type);
    int64_t fromScore = static_cast<int64_t>(i) - (modTensors - scoreTensors);
    bool scoreTensor = fromScore >= 0 && fromScore < scoreTensors;
    bool fits = tensor && (tensor.getElementType().isSignlessInteger(32) ||
                           (scoreTensor && tensor.getElementType().isF32()));
    size_t fromEnd = tensorTypes.size() - want - i;  // 1: the last tensor
    bool isPlan = spec.getSegments() && fromEnd == 1;
    bool isTable = readsTable && fromEnd == (spec.getSegments() ? 2u : 1u);
    if (!fits || (isTable && tensor.getRank() != 4) || (isPlan && tensor.getRank() != 2)) {
      emitError(loc) << "attention kernels take a mask modifier's tensors, block-class table (rank 4) and segment "
                        "plan (rank 2) as i32 !tile.tensor arguments and a score modifier's as i32 or f32, got "
                     << type;
      return nullptr;
    }
  }
  MLIRContext *ctx = builder.getContext();
  // Grid axis x walks query blocks (key blocks for the dK/dV kernels).
  SmallVector<GridAttr, 3> grid;
  bool overKeys = role == KernelRole::AttentionBackward ||
                  role == KernelRole::AttentionBackwardKV ||
                  role == KernelRole::AttentionBackwardTransposed ||
                  role == KernelRole::AttentionBackwardKVTransposed;
  unsigned gridArg = overKeys ? 1 : 0;
  int64_t rowBlock = overKeys ? plan.blockN : plan.blockM;
  if (classifies) {
    // One block per 64-row of the plane (key rows when transposed); a table
    // slice per head / batch only where the table has them.
    // (the table, or before a document modifier's segment plan, which the kernel only reads to skip its work)
    auto table = llvm::cast<GlobalTensorType>(tensorTypes[tensorTypes.size() - 1 - (spec.getSegments() ? 1 : 0)]);
    bool transposed = role == KernelRole::AttentionMaskBlocksTransposed;
    grid.push_back(KernelBuilder::gridDim(ctx, transposed ? 1 : 0, 2, 64));
    grid.push_back(table.getShape()[1] == 1 ? GridAttr::get(ctx, -1, 0, 0, 1) : KernelBuilder::gridDim(ctx, 0, 1));
    grid.push_back(table.getShape()[0] == 1 ? GridAttr::get(ctx, -1, 0, 0, 1) : KernelBuilder::gridDim(ctx, 0, 0));
  } else {
    grid.push_back(KernelBuilder::gridDim(ctx, gridArg, 2, rowBlock));
    grid.push_back(KernelBuilder::gridDim(ctx, gridArg, 1));
    grid.push_back(KernelBuilder::gridDim(ctx, gridArg, 0));
  }

  OpBuilder::InsertionGuard guard(builder);
  KernelBuilder kb(builder, loc, name, argTypes, grid, plan, spec);
  AttentionKernel kernel(kb, spec, plan);
  kernel.modTensorsFirst = static_cast<unsigned>(classifies ? 2 : want);
  kernel.modTensorsCount = static_cast<unsigned>(modTensors);
  kernel.scoreTensorsCount = static_cast<unsigned>(scoreTensors);
  switch (role) {
  case KernelRole::AttentionForward:
    kernel.forward();
    break;
  case KernelRole::AttentionBackwardPreprocess:
    kernel.preprocess();
    break;
  case KernelRole::AttentionBackward:
    kernel.keyValueGradients(/*atomicDq=*/true);
    break;
  case KernelRole::AttentionBackwardKV:
    kernel.keyValueGradients(/*atomicDq=*/false);
    break;
  case KernelRole::AttentionBackwardTransposed:
    kernel.keyValueGradientsTransposed(/*atomicDq=*/true);
    break;
  case KernelRole::AttentionBackwardKVTransposed:
    kernel.keyValueGradientsTransposed(/*atomicDq=*/false);
    break;
  case KernelRole::AttentionBackwardDQ:
    kernel.queryGradient();
    break;
  case KernelRole::AttentionBackwardPostprocess:
    kernel.postprocess();
    break;
  case KernelRole::AttentionMaskBlocks:
  case KernelRole::AttentionMaskBlocksTransposed:
    kernel.maskBlocks(role == KernelRole::AttentionMaskBlocksTransposed);
    break;
  default:
    break;
  }
  kb.finish();
  return kb.kernel;
}

} // namespace flashc
