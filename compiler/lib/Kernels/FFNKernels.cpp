//===- FFNKernels.cpp - GEMM-family tile kernels for flash.ffn ------------===//
//
// Built from a #tile.gemm recipe:
//   gemm                 C = act(alpha·op(A)·op(B) + bias), grid (row block,
//                        column block, batch), scf.for over K blocks; bias and
//                        activation fused in the epilogue (save_pre: the
//                        pre-activation written too, for the backward;
//                        act_grad: C = alpha·op(A)·op(B) ∘ act'(P) instead,
//                        the backward's dpre = (dy·W2ᵀ) ∘ act'(pre); gated:
//                        dg and du from D = dy·W2ᵀ and the saved g and u).
//   gated_gemm           C = act(A·Bg) ∘ (A·Bu) (save_pre: g and u written too).
//   ffn_fused            y = act(x·W1 + b1)·W2 + b2 back to back: per row block
//                        the hidden tile [Bm x Bn] lives in registers and feeds
//                        the second matmul directly (save_pre: pre and h are
//                        stored too, gated g, u and h).
//   column_sum           db[n] = Σ_m A[m, n] (bias gradients), as a matmul with
//                        a ones tile so it runs on the tensor cores.
//   gemm_split_k         C += op(A)·op(B) over one slice of the contraction per
//                        grid z, atomically into a zeroed f32 C: weight
//                        gradients whose few output tiles would leave SMs idle.
//   convert_f32          C = A (f32 -> C's element type), the split-K epilogue.
//   ffn_activation_grad  dpre = dh ∘ act'(pre) elementwise (gated: dg, du from
//                        dh, g and u): the FFN backward's activation, after
//                        the plain GEMM dh = dy·W2ᵀ.
// A, x, C, y may carry one leading batch dimension (rank 3, grid axis z);
// weights are rank 2.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TilePadding.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

namespace {

struct GemmKernel {
  KernelBuilder &kb;
  GemmSpecAttr spec;
  TilePlan plan;
  int64_t Bm, Bn, Bk;
  Type elem;

  GemmKernel(KernelBuilder &kb, GemmSpecAttr spec, const TilePlan &plan)
      : kb(kb), spec(spec), plan(plan), Bm(plan.blockM), Bn(plan.blockN), Bk(spec.getBlockK()),
        elem(spec.getElementType().getValue()) {}

  static int64_t rankOf(Value v) { return llvm::cast<GlobalTensorType>(v.getType()).getRank(); }

  /// Indices of a rank-2 or batched rank-3 tensor.
  SmallVector<Value> at(Value tensor, Value batch, Value row, Value col) {
    if (rankOf(tensor) == 3)
      return {batch, row, col};
    return {row, col};
  }
  /// Dimension `d` counted from the end (0 = last).
  Value dimFromEnd(Value tensor, int64_t d, StringRef name) {
    return kb.dim(tensor, rankOf(tensor) - 1 - d, name);
  }

  /// alpha·acc + bias, then the activation; `savePre` (a tensor, or null)
  /// receives the value before the activation.
  Value epilogue(Value acc, Value bias, Value col0, Value colLimit, Activation act,
                 function_ref<void(Value)> savePre = nullptr) {
    double alpha = spec.getAlpha().getValueAsDouble();
    if (alpha != 1.0)
      acc = kb.b.create<ScaleOp>(kb.loc, acc.getType(), acc, kb.b.getF64FloatAttr(alpha));
    if (bias)
      acc = kb.b.create<AddBiasOp>(kb.loc, acc.getType(), acc, bias, col0, colLimit);
    if (savePre)
      savePre(acc);
    if (act != Activation::Identity)
      acc = kb.b.create<ActivationOp>(kb.loc, acc.getType(), act, acc);
    return acc;
  }

  /// acc + Σ op(A)[row0.., k]·op(B)[k, col0..] over K steps [first, last) of Bk
  /// (batch: the batch index of batched A and B, else null).
  Value contract(Value a, Value bMat, Value batch, Value row0, Value col0, Value M, Value N, Value K,
                 Value first, Value last, Value accInit) {
    bool ta = spec.getTransposeA().getValue(), tb = spec.getTransposeB().getValue();
    return kb.forLoop(
        first, last, {accInit}, [&](Value step, ValueRange carried) -> SmallVector<Value> {
          Value k0 = kb.named("k0", kb.mul(step, kb.idx(Bk)));
          Value aTile = ta ? kb.load(a, at(a, batch, k0, row0), K, M, Bk, Bm, plan.stages)
                           : kb.load(a, at(a, batch, row0, k0), M, K, Bm, Bk, plan.stages);
          Value bTile = tb ? kb.load(bMat, at(bMat, batch, col0, k0), N, K, Bn, Bk, plan.stages)
                           : kb.load(bMat, at(bMat, batch, k0, col0), K, N, Bk, Bn, plan.stages);
          return {kb.matmul(aTile, bTile, carried[0], ta, tb)};
        },
        {"k_step", "acc"})[0];
  }

  void gemm() {
    bool ta = spec.getTransposeA().getValue();
    bool hasBias = spec.getBias1().getValue();
    unsigned next = 0;
    Value a = kb.arg(next++), bMat = kb.arg(next++);
    Value bias = hasBias ? kb.arg(next++) : Value();
    Value pre = spec.savesPre() || spec.appliesActGrad() ? kb.arg(next++) : Value();
    Value up = spec.appliesGatedActGrad() ? kb.arg(next++) : Value();
    Value c = kb.arg(next++);
    Value cUp = spec.appliesGatedActGrad() ? kb.arg(next++) : Value();
    Value mb = kb.programId(GridAxis::X, "m_block"), nb = kb.programId(GridAxis::Y, "n_block"),
          batch = kb.programId(GridAxis::Z, "batch");
    Value M = dimFromEnd(c, 1, "M"), N = dimFromEnd(c, 0, "N");
    Value K = ta ? dimFromEnd(a, 1, "K") : dimFromEnd(a, 0, "K");
    Value row0 = kb.named("row0", kb.mul(mb, kb.idx(Bm)));
    Value col0 = kb.named("col0", kb.mul(nb, kb.idx(Bn)));
    Value steps = kb.named("k_steps", kb.ceilDiv(K, kb.idx(Bk)));
    // accumulate: C += op(A)·op(B), starting from the current C tile.
    Value init = kb.named("acc_zeros", kb.fill(kb.regF32(Bm, Bn), 0.0));
    if (spec.getAccumulate().getValue())
      init = kb.named("c_init", kb.convert(kb.load(c, at(c, batch, row0, col0), M, N, Bm, Bn),
                                           kb.b.getF32Type()));
    // Batched A and B with an unbatched C (weight gradients xᵀ·dy over
    // [B, M, *] inputs): the contraction runs over batch and rows.
    bool sumOverBatch = rankOf(a) == 3 && rankOf(c) == 2;
    auto kLoop = [&](Value b, Value accInit) {
      return contract(a, bMat, b, row0, col0, M, N, K, kb.idx(0), steps, accInit);
    };
    Value acc;
    if (sumOverBatch)
      acc = kb.forLoop(
          kb.idx(0), kb.dim(a, 0, "batches"), {init},
          [&](Value b, ValueRange carried) -> SmallVector<Value> { return {kLoop(b, carried[0])}; },
          {"batch_index", "acc_sum"})[0];
    else
      acc = kLoop(batch, init);
    auto storePre = [&](Value value) {
      kb.store(kb.named("pre16", kb.convert(value, elem)), pre, at(pre, batch, row0, col0), M, N);
    };
    Value result;
    if (spec.appliesGatedActGrad()) {
      // The gated FFN's: D = alpha·acc (dh, never rounded), du = D ∘ act(g),
      // dg = (D ∘ act'(g)) ∘ u, g and u read as the training forward saved
      // them (as ffn_activation_grad's gated form, from D instead of a stored dh).
      Type f32 = kb.b.getF32Type();
      Value g = kb.named("g", kb.convert(kb.load(pre, at(pre, batch, row0, col0), M, N, Bm, Bn), f32));
      Value u = kb.named("u", kb.convert(kb.load(up, at(up, batch, row0, col0), M, N, Bm, Bn), f32));
      Value dh = kb.named("dh", epilogue(acc, Value(), col0, N, Activation::Identity));
      Value activated = kb.b.create<ActivationOp>(kb.loc, g.getType(), spec.getActivation(), g);
      Value du = kb.b.create<MulOp>(kb.loc, dh.getType(), dh, activated);
      kb.store(kb.named("du16", kb.convert(du, elem)), cUp, at(cUp, batch, row0, col0), M, N);
      Value dhGrad = kb.b.create<ActivationGradOp>(kb.loc, dh.getType(), spec.getActivation(), dh, g);
      result = kb.b.create<MulOp>(kb.loc, dhGrad.getType(), dhGrad, u);
    } else if (spec.appliesActGrad()) {
      // dpre = alpha·acc ∘ act'(P), P read in the element type as the
      // training forward saved it.
      Value p16 = kb.named("p16", kb.convert(kb.load(pre, at(pre, batch, row0, col0), M, N, Bm, Bn), elem));
      Value scaled = epilogue(acc, Value(), col0, N, Activation::Identity);
      result = kb.b.create<ActivationGradOp>(kb.loc, scaled.getType(), spec.getActivation(), scaled, p16);
    } else {
      result = epilogue(acc, bias, col0, N, spec.getActivation(),
                        pre ? function_ref<void(Value)>(storePre) : nullptr);
    }
    kb.store(kb.named("c16", kb.convert(result, elem)), c, at(c, batch, row0, col0), M, N);
  }

  /// C[f32] += op(A)·op(B) over contraction rows [z·S, (z+1)·S) of a rank-2 A
  /// (S = kSplitKRows), or over batch z of a batched A, then atomically added:
  /// the grid's z axis splits the long contraction of a weight gradient.
  void splitKGemm() {
    bool ta = spec.getTransposeA().getValue();
    Value a = kb.arg(0), bMat = kb.arg(1), c = kb.arg(2);
    Value mb = kb.programId(GridAxis::X, "m_block"), nb = kb.programId(GridAxis::Y, "n_block"),
          slice = kb.programId(GridAxis::Z, "k_slice");
    Value M = dimFromEnd(c, 1, "M"), N = dimFromEnd(c, 0, "N");
    Value K = ta ? dimFromEnd(a, 1, "K") : dimFromEnd(a, 0, "K");
    Value row0 = kb.named("row0", kb.mul(mb, kb.idx(Bm)));
    Value col0 = kb.named("col0", kb.mul(nb, kb.idx(Bn)));
    bool batched = rankOf(a) == 3;
    // Steps of Bk rows: a whole batch, or this slice's ceil(kSplitKRows / Bk) steps. The grid
    // has ceil(K / kSplitKRows) slices, so a slice must cover at least kSplitKRows rows when Bk
    // does not divide it (block_k = 48, 80, ...); trailing slices past K then add zeros.
    const int64_t sliceSteps = llvm::divideCeil(kSplitKRows, Bk);
    Value first = batched ? kb.idx(0) : kb.named("first_step", kb.mul(slice, kb.idx(sliceSteps)));
    Value last = kb.named("k_steps", kb.ceilDiv(K, kb.idx(Bk)));
    if (!batched)
      last = kb.named("last_step", kb.min(last, kb.add(first, kb.idx(sliceSteps))));
    Value batch = batched ? slice : Value();
    Value acc = contract(a, bMat, batch, row0, col0, M, N, K, first, last,
                         kb.named("acc_zeros", kb.fill(kb.regF32(Bm, Bn), 0.0)));
    kb.atomicAdd(acc, c, {row0, col0}, M, N);
  }

  /// C = A for an f32 A (rank 2), in C's element type.
  void convertF32() {
    Value a = kb.arg(0), c = kb.arg(1);
    Value row0 = kb.named("row0", kb.mul(kb.programId(GridAxis::X, "m_block"), kb.idx(Bm)));
    Value col0 = kb.named("col0", kb.mul(kb.programId(GridAxis::Y, "n_block"), kb.idx(Bn)));
    Value M = dimFromEnd(c, 1, "M"), N = dimFromEnd(c, 0, "N");
    Value tile = kb.load(a, {row0, col0}, M, N, Bm, Bn);
    kb.store(kb.named("c16", kb.convert(tile, elem)), c, {row0, col0}, M, N);
  }

  /// The FFN backward's activation, elementwise on [.., M, H] tiles:
  ///   plain: dpre = dh ∘ act'(pre)
  ///   gated: dg = (dh ∘ u) ∘ act'(g), du = dh ∘ act(g)
  /// dh, pre, g and u in the element type (eager PyTorch's dh and saved
  /// tensors are too).
  void activationGrad() {
    bool gated = spec.getGated().getValue();
    unsigned next = 0;
    Value dh = kb.arg(next++), pre = kb.arg(next++);
    Value up = gated ? kb.arg(next++) : Value();
    Value dpreOut = kb.arg(next++);
    Value duOut = gated ? kb.arg(next++) : Value();
    Value mb = kb.programId(GridAxis::X, "m_block"), hb = kb.programId(GridAxis::Y, "h_block"),
          batch = kb.programId(GridAxis::Z, "batch");
    Value M = dimFromEnd(dh, 1, "M"), H = dimFromEnd(dh, 0, "hidden");
    Value row0 = kb.named("row0", kb.mul(mb, kb.idx(Bm)));
    Value h0 = kb.named("h0", kb.mul(hb, kb.idx(Bn)));
    auto load = [&](Value tensor) { return kb.load(tensor, at(tensor, batch, row0, h0), M, H, Bm, Bn); };
    auto store = [&](Value tile, StringRef name, Value tensor) {
      kb.store(kb.named(name, kb.convert(tile, elem)), tensor, at(tensor, batch, row0, h0), M, H);
    };
    Type f32 = kb.b.getF32Type();
    Value dhShared = load(dh), preShared = load(pre), upShared = gated ? load(up) : Value();
    Value dhTile = kb.named("dh", kb.convert(dhShared, f32));
    Activation activation = spec.getActivation();
    if (!gated) {
      Value pre16 = kb.named("pre16", kb.convert(preShared, elem));
      store(kb.b.create<ActivationGradOp>(kb.loc, dhTile.getType(), activation, dhTile, pre16),
            "dpre16", dpreOut);
      return;
    }
    Value g = kb.named("g", kb.convert(preShared, f32));
    Value act = kb.b.create<ActivationOp>(kb.loc, g.getType(), activation, g);
    store(kb.b.create<MulOp>(kb.loc, dhTile.getType(), dhTile, act), "du16", duOut);
    Value dhGrad = kb.b.create<ActivationGradOp>(kb.loc, dhTile.getType(), activation, dhTile, g);
    Value u = kb.named("u", kb.convert(upShared, f32));
    store(kb.b.create<MulOp>(kb.loc, dhGrad.getType(), dhGrad, u), "dg16", dpreOut);
  }

  /// db[n] = Σ_m A[m, n] (A [M, N] or [B, M, N]: also summed over B).
  void columnSum() {
    Value a = kb.arg(0), out = kb.arg(1);
    Value nb = kb.programId(GridAxis::X, "n_block");
    Value M = dimFromEnd(a, 1, "M"), N = dimFromEnd(a, 0, "N");
    Value col0 = kb.named("col0", kb.mul(nb, kb.idx(Bn)));
    // Row 0 of ones[16 x Bk] · A[Bk x Bn] is the column sum of the A tile.
    constexpr int64_t kOnesRows = 16;
    Value ones = kb.named("ones", kb.fill(kb.tile(kOnesRows, Bk, elem, MemorySpace::Register), 1.0));
    Value steps = kb.named("m_steps", kb.ceilDiv(M, kb.idx(Bk)));
    auto rowLoop = [&](Value b, Value init) {
      return kb.forLoop(kb.idx(0), steps, {init},
                        [&](Value step, ValueRange carried) -> SmallVector<Value> {
                          Value m0 = kb.named("m0", kb.mul(step, kb.idx(Bk)));
                          Value tile = kb.load(a, at(a, b, m0, col0), M, N, Bk, Bn, plan.stages);
                          return {kb.matmul(ones, tile, carried[0], false, false)};
                        },
                        {"m_step", "acc"})[0];
    };
    Value zero = kb.named("acc_zeros", kb.fill(kb.regF32(kOnesRows, Bn), 0.0));
    Value acc = rankOf(a) == 3 ? kb.forLoop(
                                     kb.idx(0), kb.dim(a, 0, "batches"), {zero},
                                     [&](Value b, ValueRange carried) -> SmallVector<Value> {
                                       return {rowLoop(b, carried[0])};
                                     },
                                     {"batch_index", "acc_sum"})[0]
                               : rowLoop(Value(), zero);
    kb.store(kb.named("sum16", kb.convert(acc, elem)), out, {col0}, kb.idx(1), N);
  }

  /// acc_i[Bm x cols] = x[row0, :] · W_i[:, col0 .. col0+cols) over the model
  /// dim, for each weight W_i (the x tile is loaded once per step).
  SmallVector<Value> projectRows(Value x, ArrayRef<Value> weights, Value batch, Value row0,
                                 Value col0, Value M, Value K, Value N, int64_t cols) {
    Value steps = kb.named("k_steps", kb.ceilDiv(K, kb.idx(Bk)));
    SmallVector<Value> inits;
    SmallVector<StringRef> names = {"k_step", "proj"};
    for (size_t i = 0; i < weights.size(); ++i)
      inits.push_back(kb.named(i ? "up_zeros" : "proj_zeros", kb.fill(kb.regF32(Bm, cols), 0.0)));
    if (weights.size() > 1)
      names.push_back("up");
    return kb.forLoop(kb.idx(0), steps, inits,
                      [&](Value step, ValueRange carried) -> SmallVector<Value> {
                        Value k0 = kb.named("k0", kb.mul(step, kb.idx(Bk)));
                        Value xTile = kb.load(x, at(x, batch, row0, k0), M, K, Bm, Bk, plan.stages);
                        SmallVector<Value> next;
                        for (auto [w, acc] : llvm::zip(weights, carried)) {
                          Value wTile = kb.load(w, {k0, col0}, K, N, Bk, cols, plan.stages);
                          next.push_back(kb.matmul(xTile, wTile, acc, false, false));
                        }
                        return next;
                      },
                      weights.size() <= 2 ? ArrayRef<StringRef>(names) : ArrayRef<StringRef>());
  }

  /// Gated GEMM: C = act(A·Bg) ⊙ (A·Bu) (save_pre: g and u written first).
  void gatedGemm() {
    Value a = kb.arg(0), bGate = kb.arg(1), bUp = kb.arg(2);
    Value gateOut = spec.savesPre() ? kb.arg(3) : Value(), upOut = spec.savesPre() ? kb.arg(4) : Value();
    Value c = kb.arg(spec.savesPre() ? 5 : 3);
    Value mb = kb.programId(GridAxis::X, "m_block"), nb = kb.programId(GridAxis::Y, "n_block"),
          batch = kb.programId(GridAxis::Z, "batch");
    Value M = dimFromEnd(c, 1, "M"), N = dimFromEnd(c, 0, "N"), K = dimFromEnd(a, 0, "K");
    Value row0 = kb.named("row0", kb.mul(mb, kb.idx(Bm)));
    Value col0 = kb.named("col0", kb.mul(nb, kb.idx(Bn)));
    SmallVector<Value> acc = projectRows(a, {bGate, bUp}, batch, row0, col0, M, K, N, Bn);
    if (gateOut) {
      kb.store(kb.named("g16", kb.convert(acc[0], elem)), gateOut, at(gateOut, batch, row0, col0), M, N);
      kb.store(kb.named("u16", kb.convert(acc[1], elem)), upOut, at(upOut, batch, row0, col0), M, N);
    }
    Value gate = kb.b.create<ActivationOp>(kb.loc, acc[0].getType(), spec.getActivation(), acc[0]);
    Value hidden = kb.b.create<MulOp>(kb.loc, gate.getType(), gate, acc[1]);
    kb.store(kb.named("hidden16", kb.convert(hidden, elem)), c, at(c, batch, row0, col0), M, N);
  }

  void fused() {
    bool hasB1 = spec.getBias1().getValue(), hasB2 = spec.getBias2().getValue();
    bool gated = spec.getGated().getValue();
    unsigned next = 0;
    Value x = kb.arg(next++), w1 = kb.arg(next++);
    Value b1 = hasB1 ? kb.arg(next++) : Value();
    Value wUp = gated ? kb.arg(next++) : Value();
    Value w2 = kb.arg(next++);
    Value b2 = hasB2 ? kb.arg(next++) : Value();
    Value y = kb.arg(next++);
    // save_pre: the training forward's pre (gated: g, u) and h, after y.
    SmallVector<Value> saved;
    if (spec.savesPre())
      for (int i = 0, n = gated ? 3 : 2; i < n; ++i)
        saved.push_back(kb.arg(next++));
    int64_t dOut = llvm::cast<GlobalTensorType>(w2.getType()).getShape()[1];
    // The output row block and the W2 slab are d_out padded to the layouts'
    // column multiple wide (TilePadding.h); N = d_out limits every load and
    // store, so the padding columns are zeros and never written.
    int64_t dOutTile = paddedTileWidth(dOut, elem, plan.strategy);
    Value mb = kb.programId(GridAxis::X, "m_block"), batch = kb.programId(GridAxis::Z, "batch");
    Value M = dimFromEnd(x, 1, "M"), d = kb.dim(w1, 0, "d_model"), H = kb.dim(w1, 1, "hidden"),
          N = kb.idx(dOut);
    Value row0 = kb.named("row0", kb.mul(mb, kb.idx(Bm)));
    Value zero = kb.idx(0);
    Value hiddenBlocks = kb.named("hidden_blocks", kb.ceilDiv(H, kb.idx(Bn)));
    SmallVector<Value> out = kb.forLoop(
        zero, hiddenBlocks, {kb.named("y_zeros", kb.fill(kb.regF32(Bm, dOutTile), 0.0))},
        [&](Value hb, ValueRange carried) -> SmallVector<Value> {
          Value h0 = kb.named("h0", kb.mul(hb, kb.idx(Bn)));
          SmallVector<Value> weights = {w1};
          if (wUp)
            weights.push_back(wUp);
          SmallVector<Value> proj = projectRows(x, weights, batch, row0, h0, M, d, H, Bn);
          Value pre = proj[0];
          if (b1)
            pre = kb.b.create<AddBiasOp>(kb.loc, pre.getType(), pre, b1, h0, H);
          auto save = [&](Value tile, StringRef name, Value tensor) {
            kb.store(kb.named(name, kb.convert(tile, elem)), tensor, at(tensor, batch, row0, h0), M, H);
          };
          if (!saved.empty()) {
            save(pre, gated ? "g16" : "pre16", saved[0]);
            if (gated)
              save(proj[1], "u16", saved[1]);
          }
          Value hidden =
              kb.b.create<ActivationOp>(kb.loc, pre.getType(), spec.getActivation(), pre);
          if (wUp)
            hidden = kb.b.create<MulOp>(kb.loc, hidden.getType(), hidden, proj[1]);
          // The hidden tile stays in registers: it is the A operand of W2.
          Value w2Tile = kb.load(w2, {h0, zero}, H, N, Bn, dOutTile, plan.stages);
          Value hidden16 = kb.named("hidden16", kb.convert(hidden, elem));
          if (!saved.empty())
            kb.store(hidden16, saved.back(), at(saved.back(), batch, row0, h0), M, H);
          return {kb.matmul(hidden16, w2Tile, carried[0], false, false)};
        },
        {"h_block", "y_acc"});
    Value result = out[0];
    if (b2)
      result = kb.b.create<AddBiasOp>(kb.loc, result.getType(), result, b2, zero, N);
    kb.store(kb.named("y16", kb.convert(result, elem)), y, at(y, batch, row0, zero), M, N);
  }
};

int64_t gemmArgCount(GemmSpecAttr spec) {
  int64_t b1 = spec.getBias1().getValue() ? 1 : 0, b2 = spec.getBias2().getValue() ? 1 : 0;
  int64_t gated = spec.getGated().getValue() ? 1 : 0;
  switch (spec.getRole()) {
  case KernelRole::Gemm:
    return 3 + b1 + (spec.savesPre() || spec.appliesActGrad() ? 1 : 0) + (spec.appliesGatedActGrad() ? 2 : 0);
  case KernelRole::GatedGemm:
    return 4 + (spec.savesPre() ? 2 : 0);
  case KernelRole::ColumnSum:
  case KernelRole::ConvertF32:
    return 2;
  case KernelRole::GemmSplitK:
    return 3;
  case KernelRole::FfnFused:
    return 4 + b1 + b2 + gated + (spec.savesPre() ? 2 + gated : 0);
  case KernelRole::FfnActivationGrad:
    return 3 + 2 * gated;
  default:
    return -1;
  }
}

} // namespace

KernelOp buildGemmKernel(OpBuilder &builder, Location loc, StringRef name, GemmSpecAttr spec,
                         ArrayRef<Type> argTypes, const TilePlan &plan) {
  int64_t want = gemmArgCount(spec);
  if (want < 0 || static_cast<int64_t>(argTypes.size()) != want) {
    emitError(loc) << "GEMM kernel recipe '" << stringifyKernelRole(spec.getRole()) << "' takes "
                   << want << " tensor arguments, got " << argTypes.size();
    return nullptr;
  }
  if (spec.getBlockK() < 1) {
    emitError(loc) << "GEMM block_k must be positive";
    return nullptr;
  }
  if (spec.getAccumulate().getValue() &&
      (spec.getBias1().getValue() || spec.getActivation() != Activation::Identity ||
       spec.getAlpha().getValueAsDouble() != 1.0)) {
    emitError(loc) << "an accumulating GEMM (C += A·B) takes no bias, activation or alpha";
    return nullptr;
  }
  MLIRContext *ctx = builder.getContext();
  // Output tensor whose trailing dims the grid walks, and which grid axes.
  auto rank = [&](unsigned i) { return llvm::cast<GlobalTensorType>(argTypes[i]).getRank(); };
  SmallVector<GridAttr, 3> grid;
  switch (spec.getRole()) {
  case KernelRole::Gemm:
  case KernelRole::GatedGemm:
  case KernelRole::FfnFused: {
    // The output C / y: last, or before a fused FFN's saved activations.
    unsigned out = argTypes.size() - 1 -
                   (spec.getRole() == KernelRole::FfnFused && spec.savesPre()
                        ? (spec.getGated().getValue() ? 3 : 2)
                        : 0);
    int64_t r = rank(out);
    grid.push_back(KernelBuilder::gridDim(ctx, out, r - 2, plan.blockM));
    grid.push_back(spec.getRole() != KernelRole::FfnFused
                       ? KernelBuilder::gridDim(ctx, out, r - 1, plan.blockN)
                       : KernelBuilder::gridConst(ctx, 1));
    grid.push_back(r == 3 ? KernelBuilder::gridDim(ctx, out, 0) : KernelBuilder::gridConst(ctx, 1));
    break;
  }
  case KernelRole::FfnActivationGrad: {
    unsigned dpreOut = argTypes.size() - (spec.getGated().getValue() ? 2 : 1);
    int64_t r = rank(dpreOut);
    grid.push_back(KernelBuilder::gridDim(ctx, dpreOut, r - 2, plan.blockM));
    grid.push_back(KernelBuilder::gridDim(ctx, dpreOut, r - 1, plan.blockN));
    grid.push_back(r == 3 ? KernelBuilder::gridDim(ctx, dpreOut, 0)
                          : KernelBuilder::gridConst(ctx, 1));
    break;
  }
  case KernelRole::ColumnSum:
    grid.push_back(KernelBuilder::gridDim(ctx, 1, 0, plan.blockN));
    grid.push_back(KernelBuilder::gridConst(ctx, 1));
    grid.push_back(KernelBuilder::gridConst(ctx, 1));
    break;
  case KernelRole::GemmSplitK: {
    // Output tiles of C [M, N]; z: slices of A's contraction rows (transposed
    // A [K, M] or [B, K, M]: one slice per batch when batched).
    grid.push_back(KernelBuilder::gridDim(ctx, 2, 0, plan.blockM));
    grid.push_back(KernelBuilder::gridDim(ctx, 2, 1, plan.blockN));
    bool batched = rank(0) == 3;
    int64_t kDim = batched ? 0 : (spec.getTransposeA().getValue() ? 0 : 1);
    grid.push_back(KernelBuilder::gridDim(ctx, 0, kDim, batched ? 1 : kSplitKRows));
    break;
  }
  case KernelRole::ConvertF32:
    grid.push_back(KernelBuilder::gridDim(ctx, 1, 0, plan.blockM));
    grid.push_back(KernelBuilder::gridDim(ctx, 1, 1, plan.blockN));
    grid.push_back(KernelBuilder::gridConst(ctx, 1));
    break;
  default:
    break;
  }
  OpBuilder::InsertionGuard guard(builder);
  KernelBuilder kb(builder, loc, name, argTypes, grid, plan, spec);
  GemmKernel kernel(kb, spec, plan);
  switch (spec.getRole()) {
  case KernelRole::Gemm:
    kernel.gemm();
    break;
  case KernelRole::GatedGemm:
    kernel.gatedGemm();
    break;
  case KernelRole::ColumnSum:
    kernel.columnSum();
    break;
  case KernelRole::GemmSplitK:
    kernel.splitKGemm();
    break;
  case KernelRole::ConvertF32:
    kernel.convertF32();
    break;
  case KernelRole::FfnFused:
    kernel.fused();
    break;
  case KernelRole::FfnActivationGrad:
    kernel.activationGrad();
    break;
  default:
    break;
  }
  kb.finish();
  return kb.kernel;
}

} // namespace flashc
