//===- GenerateBackward.cpp - backward tile programs of fused ops ---------===//
//
// See the GenerateBackward def in Passes.td and docs/tile-dialect.md. Runs on
// the flash level and emits `@<func>_backward` as a tile program directly:
//   attention (atomic dQ):   preprocess -> backward -> postprocess
//   attention (deterministic): preprocess -> backward_kv -> backward_dq
//   ffn: backward_hidden -> dW2, db2, dW1, db1, dx
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "TileLowering.h"

namespace mlir::flash {
#define GEN_PASS_DEF_GENERATEBACKWARD
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::tile;
using namespace flashc;

namespace {

struct GenerateBackwardPass
    : public mlir::flash::impl::GenerateBackwardBase<GenerateBackwardPass> {
  using GenerateBackwardBase::GenerateBackwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const TargetDescription *targetDesc = lookupTarget(target);
    if (!targetDesc) {
      module.emitError() << "flash-generate-backward: unknown target '" << target
                         << "' (known: " << knownTargetNames() << ")";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func->hasAttr(kProgramAttrName) && !func.isExternal() && hasFusedOps(func))
        funcs.push_back(func);
    SymbolTable symbols(module);
    for (func::FuncOp func : funcs)
      if (failed(generate(func, symbols, *targetDesc)))
        return signalPassFailure();
  }

  LogicalResult generate(func::FuncOp func, SymbolTable &symbols,
                         const TargetDescription &targetDesc) {
    Operation *fused = nullptr;
    unsigned count = 0;
    func.walk([&](Operation *op) {
      if (llvm::isa<flash::AttentionOp, flash::FfnOp>(op)) {
        fused = op;
        ++count;
      }
    });
    if (count != 1)
      return func.emitError() << "flash-generate-backward: @" << func.getSymName() << " holds "
                              << count
                              << " fused ops; the backward is generated for functions with "
                                 "exactly one flash.attention or flash.ffn";
    std::string name = (func.getSymName() + "_backward").str();
    if (symbols.lookup(name))
      return func.emitError() << "flash-generate-backward: @" << name << " already exists";
    ProgramBuilder pb(symbols, targetDesc);
    LogicalResult result = failure();
    if (auto attention = llvm::dyn_cast<flash::AttentionOp>(fused))
      result = attentionBackward(attention, func, name, pb);
    else
      result = ffnBackward(llvm::cast<flash::FfnOp>(fused), func, name, pb);
    if (failed(result)) {
      if (pb.getProgram())
        pb.getProgram().erase();
      return failure();
    }
    symbols.insert(pb.getProgram());
    return success();
  }

  LogicalResult attentionBackward(flash::AttentionOp op, func::FuncOp func, StringRef name,
                                  ProgramBuilder &pb) {
    if (op.hasSoftcap())
      return op.emitError("flash-generate-backward: the backward of a soft-capped "
                          "flash.attention is not supported yet");
    MLIRContext *ctx = op.getContext();
    SmallVector<Type> types;
    for (Value v : {op.getQuery(), op.getKey(), op.getValue(), op.getOutput(), op.getLse(),
                    op.getOutput(), op.getQuery(), op.getKey(), op.getValue()}) {
      auto type = toProgramTensor(op, v.getType(), "attention operand");
      if (failed(type))
        return failure();
      types.push_back(*type);
    }
    // Size symbols: q-shaped tensors [B, Hq, Sq, *], k-shaped [B, Hkv, Sk, *].
    SmallVector<std::string> qDims = {"B", "", "Sq", ""}, kDims = {"B", "", "Sk", ""};
    SmallVector<SmallVector<std::string, 4>> dims;
    for (auto [index, type] : llvm::enumerate(types)) {
      bool keyShaped = index == 1 || index == 2 || index == 7 || index == 8;
      dims.push_back(dimSymbols(type, keyShaped ? kDims : qDims));
    }
    pb.create(func, op.getLoc(), name, types,
              {"q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"}, dims);
    Value q = pb.arg(0), k = pb.arg(1), v = pb.arg(2), out = pb.arg(3), lse = pb.arg(4),
          dOut = pb.arg(5), dQ = pb.arg(6), dK = pb.arg(7), dV = pb.arg(8);
    auto qType = llvm::cast<GlobalTensorType>(q.getType());
    ArrayRef<int64_t> qShape = qType.getShape();
    Type f32 = FloatType::getF32(ctx);
    // D [B, Hq, Sq] and the dQ accumulator [B, Hq, Sq, D], both f32.
    Value delta = pb.alloc(GlobalTensorType::get(ctx, qShape.take_front(3), f32),
                           {{q, 0}, {q, 1}, {q, 2}}, "delta");
    std::string base = func.getSymName().str() + "_attention";
    auto spec = [&](KernelRole role) { return attentionSpec(op, role); };
    if (deterministic) {
      if (failed(pb.launch(op.getLoc(), base + "_bwd_preprocess",
                           spec(KernelRole::AttentionBackwardPreprocess), {out, dOut, delta})) ||
          failed(pb.launch(op.getLoc(), base + "_bwd_kv", spec(KernelRole::AttentionBackwardKV),
                           {q, k, v, dOut, lse, delta, dK, dV})) ||
          failed(pb.launch(op.getLoc(), base + "_bwd_dq", spec(KernelRole::AttentionBackwardDQ),
                           {q, k, v, dOut, lse, delta, dQ})))
        return failure();
      return success();
    }
    Value dqAccum = pb.alloc(GlobalTensorType::get(ctx, qShape, f32),
                             {{q, 0}, {q, 1}, {q, 2}, {q, 3}}, "dq_accum");
    if (failed(pb.launch(op.getLoc(), base + "_bwd_preprocess",
                         spec(KernelRole::AttentionBackwardPreprocess),
                         {out, dOut, delta, dqAccum})) ||
        failed(pb.launch(op.getLoc(), base + "_bwd", spec(KernelRole::AttentionBackward),
                         {q, k, v, dOut, lse, delta, dqAccum, dK, dV})) ||
        failed(pb.launch(op.getLoc(), base + "_bwd_postprocess",
                         spec(KernelRole::AttentionBackwardPostprocess), {dqAccum, dQ})))
      return failure();
    return success();
  }

  LogicalResult ffnBackward(flash::FfnOp op, func::FuncOp func, StringRef name,
                            ProgramBuilder &pb) {
    if (op.isGated())
      return op.emitError("flash-generate-backward: the backward of the gated flash.ffn form "
                          "is not supported yet");
    if (op.getInput().getType().getRank() != 2)
      return op.emitError() << "flash-generate-backward: the FFN backward needs a rank-2 input "
                               "[M, d] (weight gradients sum over rows), got rank "
                            << op.getInput().getType().getRank();
    MLIRContext *ctx = op.getContext();
    bool hasB1 = static_cast<bool>(op.getB1()), hasB2 = static_cast<bool>(op.getB2());
    SmallVector<Value> inputs = {op.getInput(), op.getW1()};
    SmallVector<std::string> names = {"x", "w1"};
    // x, dy and dx share the row symbol M; weights and biases are static.
    if (hasB1) {
      inputs.push_back(op.getB1());
      names.push_back("b1");
    }
    inputs.push_back(op.getW2());
    names.push_back("w2");
    if (hasB2) {
      inputs.push_back(op.getB2());
      names.push_back("b2");
    }
    inputs.push_back(op.getResult());
    names.push_back("dy");
    // Gradients, in the order of the inputs they belong to.
    SmallVector<Value> grads = {op.getInput(), op.getW1()};
    SmallVector<std::string> gradNames = {"dx", "dw1"};
    if (hasB1) {
      grads.push_back(op.getB1());
      gradNames.push_back("db1");
    }
    grads.push_back(op.getW2());
    gradNames.push_back("dw2");
    if (hasB2) {
      grads.push_back(op.getB2());
      gradNames.push_back("db2");
    }
    SmallVector<Type> types;
    for (Value v : llvm::concat<Value>(inputs, grads)) {
      auto type = toProgramTensor(op, v.getType(), "ffn operand");
      if (failed(type))
        return failure();
      types.push_back(*type);
    }
    names.append(gradNames.begin(), gradNames.end());
    SmallVector<SmallVector<std::string, 4>> dims;
    for (Type type : types)
      dims.push_back(dimSymbols(type, {"M", ""}));
    pb.create(func, op.getLoc(), name, types, names, dims);
    unsigned next = 0;
    Value x = pb.arg(next++), w1 = pb.arg(next++);
    Value b1 = hasB1 ? pb.arg(next++) : Value();
    Value w2 = pb.arg(next++);
    if (hasB2)
      ++next;
    Value dy = pb.arg(next++);
    Value dx = pb.arg(next++), dw1 = pb.arg(next++);
    Value db1 = hasB1 ? pb.arg(next++) : Value();
    Value dw2 = pb.arg(next++);
    Value db2 = hasB2 ? pb.arg(next++) : Value();

    Type element = op.getInput().getType().getElementType();
    tile::Activation act = toTileActivation(op.getActivation());
    // h and dpre [M, H] in the element type.
    auto hiddenType = GlobalTensorType::get(
        ctx, {op.getInput().getType().getShape()[0], op.getHiddenDim()}, element);
    Value hidden = pb.alloc(hiddenType, {{x, 0}, {x, 1}}, "h");
    Value dpre = pb.alloc(hiddenType, {{x, 0}, {x, 1}}, "dpre");
    std::string base = func.getSymName().str() + "_ffn";
    auto gemm = [&](tile::Activation a, bool ta, bool tb, bool bias) {
      return gemmSpec(ctx, KernelRole::Gemm, a, ta, tb, bias, false, element);
    };
    SmallVector<Value> hiddenArgs = {x, w1};
    if (b1)
      hiddenArgs.push_back(b1);
    hiddenArgs.append({w2, dy, hidden, dpre});
    Location loc = op.getLoc();
    if (failed(pb.launch(loc, base + "_bwd_hidden",
                         gemmSpec(ctx, KernelRole::FfnBackwardHidden, act, false, false, hasB1,
                                  false, element),
                         hiddenArgs)) ||
        // dW2 = hᵀ · dy
        failed(pb.launch(loc, base + "_bwd_dw2", gemm(tile::Activation::Identity, true, false, false),
                         {hidden, dy, dw2})) ||
        // dW1 = xᵀ · dpre
        failed(pb.launch(loc, base + "_bwd_dw1", gemm(tile::Activation::Identity, true, false, false),
                         {x, dpre, dw1})) ||
        // dx = dpre · W1ᵀ
        failed(pb.launch(loc, base + "_bwd_dx", gemm(tile::Activation::Identity, false, true, false),
                         {dpre, w1, dx})))
      return failure();
    auto columnSum = gemmSpec(ctx, KernelRole::ColumnSum, tile::Activation::Identity, false,
                              false, false, false, element);
    if (db2 && failed(pb.launch(loc, base + "_bwd_db2", columnSum, {dy, db2})))
      return failure();
    if (db1 && failed(pb.launch(loc, base + "_bwd_db1", columnSum, {dpre, db1})))
      return failure();
    return success();
  }
};

} // namespace
