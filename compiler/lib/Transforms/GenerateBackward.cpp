//===- GenerateBackward.cpp - backward tile programs of fused ops ---------===//
//
// See the GenerateBackward def in Passes.td and docs/tile-dialect.md. Runs on
// the flash level and emits `@<func>_backward` as a tile program directly,
// one kernel sequence per fused op of the function:
//   attention (atomic dQ):     preprocess -> backward -> postprocess
//   attention (deterministic): preprocess -> backward_kv -> backward_dq
//   ffn: dh = dy·W2ᵀ -> the activation's derivative (elementwise) -> dW2,
//        dW1 [, dW_up], dx [, dx += du·W_upᵀ], db2, db1, reading the
//        activations `@<func>_forward_train` saved: the forward function
//        cloned, marked for flash-tile's training form
//   moe: the expert rows' gradients (scatter) -> dh (grouped, Wᵀ) -> the
//        activation's derivative -> dx of the rows (grouped) -> the experts'
//        weight gradients (grouped over K) -> d logits -> d router, dx
//        (gather + the router's part), reading the routing and activations
//        the training forward saved (docs/design/moe.md)
// Functions whose fused ops are independent (every operand a function
// argument used once) are supported; anything else gets a warning and no
// backward, so the forward still compiles.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Pipeline.h"
#include "flashc/Compiler/Tuning.h"
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

/// Weight gradients with fewer 128x128 output tiles than this (about one wave
/// of SMs on the A100/H100/H200) split their contraction (gemm_split_k).
constexpr int64_t kSplitKMaxTiles = 128;

/// Program-argument positions of one fused op's backward.
struct OpSlots {
  Operation *op = nullptr;
  std::string suffix;           // "" for the first op of a kind, else "2", "3", ...
  SmallVector<unsigned> inputs; // attention: q, k, v; ffn: operands in order
  int out = -1, lse = -1;       // attention: saved forward outputs
  SmallVector<unsigned> saved;  // ffn: the training forward's activations
  int cotangent = -1;           // dout / dy
  SmallVector<unsigned> grads;  // one per input
  int keyOffset = -1;           // attention: the run-time key offset (a scalar), if any
  SmallVector<unsigned, 2> maskTensors; // attention: the tensors its mask modifier reads
  SmallVector<unsigned, 2> scoreTensors; // attention: the tensors its score modifier reads
  SmallVector<unsigned, 2> offsets;      // packed sequences: cu_seqlens_q, cu_seqlens_k (no gradient)
};

struct GenerateBackwardPass : public mlir::flash::impl::GenerateBackwardBase<GenerateBackwardPass> {
  using GenerateBackwardBase::GenerateBackwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const TargetDescription *targetDesc = lookupTarget(target);
    if (!targetDesc) {
      module.emitError() << "flash-generate-backward: unknown target '" << target
                         << "' (known: " << knownTargetNames() << ")";
      return signalPassFailure();
    }
    if (!mlir::flash::isBackwardForm(form)) {
      module.emitError() << "flash-generate-backward: unknown form '" << form
                         << "' (expected auto, rows or transposed)";
      return signalPassFailure();
    }
    std::string error;
    table = loadTuningTable(tuningTable, target, error);
    if (!table) {
      module.emitError() << "flash-generate-backward: " << error;
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>()) {
      // Decode attention and the cache append are inference only: a function with one has no backward.
      bool decodes = false;
      func.walk([&](Operation *op) { decodes |= llvm::isa<flash::DecodeAttentionOp, flash::KvAppendOp>(op); });
      if (!func->hasAttr(kProgramAttrName) && !func->hasAttr(kTrainForwardAttrName) &&
          !func.isExternal() && hasFusedOps(func) && !decodes)
        funcs.push_back(func);
    }
    SymbolTable symbols(module);
    for (func::FuncOp func : funcs)
      if (failed(generate(func, symbols, *targetDesc)))
        return signalPassFailure();
  }

  std::shared_ptr<const TuningTable> table;

  /// Whether --backward-form=auto builds the Sᵀ form for the main kernel
  /// recipe `transposedSpec`: the form of the tuning table's entry for its
  /// key, else the target's hand rule.
  bool autoPicksTransposed(const TargetDescription &targetDesc, Attribute transposedSpec) {
    if (std::optional<TuningKey> key = tuningKeyOf(targetDesc, transposedSpec, {}))
      if (const TuningEntry *entry = table->lookup(*key); entry && entry->point.form)
        return *entry->point.form == "transposed";
    return prefersTransposedBackward(targetDesc, transposedSpec);
  }

  /// Whether the FFN backward computes dpre in one GEMM with the derivative
  /// in its epilogue (`actGradSpec` over `argTypes`): where the tuning table's
  /// entry for its key plans it as the warp-specialised GEMM (and that form
  /// takes the kernel and the entry's plan), else the target's hand rule. An
  /// entry pinning another form, or a ws plan the form cannot hold (which
  /// flash-plan-memory would demote to the cp.async form, slower here than the
  /// split one), keeps the split form: dh, then the elementwise derivative.
  bool fusesActivationGrad(const TargetDescription &targetDesc, Attribute actGradSpec, ArrayRef<Type> argTypes) {
    if (std::optional<TuningKey> key = tuningKeyOf(targetDesc, actGradSpec, argTypes))
      if (const TuningEntry *entry = table->lookup(*key); entry && entry->point.strategy) {
        if (*entry->point.strategy != Strategy::WgmmaWsSm90 || wsGemmRefusal(actGradSpec, argTypes))
          return false;
        TilePlan plan = entry->point.applyTo(defaultPlan(targetDesc, actGradSpec, argTypes));
        return wsGemmFitPlan(llvm::cast<tile::GemmSpecAttr>(actGradSpec), argTypes, wsGemmKnobsOf(entry),
                             entry->point.blockN.has_value(), entry->point.stages.has_value(), plan);
      }
    return prefersFusedActivationGrad(targetDesc, actGradSpec, argTypes);
  }

  /// Why the backward of `func` cannot be generated (empty: it can), and the
  /// op to report on.
  std::pair<std::string, Operation *> unsupported(func::FuncOp func, ArrayRef<Operation *> fused) {
    llvm::DenseSet<Value> seen;
    auto returnOp = func.getBody().hasOneBlock()
                        ? llvm::dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator())
                        : nullptr;
    if (!returnOp)
      return {"the function has control flow (several blocks)", func};
    // Structure first (nesting, chaining, shared inputs), then per-op limits.
    for (Operation *op : fused)
      if (op->getParentOp() != func.getOperation())
        return {"a fused op is nested in a region (control flow)", op};
    for (Operation *op : fused) {
      // A modifier's tensors (document ids, slopes, a block layout) get no gradient: they may be shared.
      llvm::DenseSet<Value> modifierOperands;
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
        modifierOperands.insert(attention.getMaskOperands().begin(), attention.getMaskOperands().end());
        modifierOperands.insert(attention.getScoreOperands().begin(), attention.getScoreOperands().end());
      }
      for (Value operand : op->getOperands()) {
        // A scalar (a key offset) may be shared: it has no gradient to sum.
        if (operand.getType().isSignlessInteger(32) && llvm::isa<BlockArgument>(operand))
          continue;
        if (modifierOperands.contains(operand) && llvm::isa<BlockArgument>(operand))
          continue;
        if (!llvm::isa<BlockArgument>(operand))
          return {"an operand of a fused op is computed in the graph (chained fused ops); "
                  "the backward of chained ops is not supported yet",
                  op};
        if (!seen.insert(operand).second)
          return {"a function argument feeds several fused-op operands; summing their "
                  "gradients is not supported yet",
                  op};
      }
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!llvm::isa<func::ReturnOp>(user))
            return {"a fused result feeds other graph ops; the backward of chained ops is "
                    "not supported yet",
                    op};
    }
    bool packed = llvm::any_of(fused, [](Operation *op) { return llvm::isa<flash::VarlenAttentionOp>(op); });
    if (packed && fused.size() > 1)
      return {"packed sequences beside other fused ops: one flash.varlen_attention a function has a backward so far",
              fused.front()};
    for (Operation *op : fused) {
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
        if (!llvm::is_contained(returnOp.getOperands(), attention.getOutput()))
          return {"the attention output is not returned, so there is no gradient to take", op};
      }
      if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op)) {
        if (!llvm::is_contained(returnOp.getOperands(), varlen.getOutput()))
          return {"the attention output is not returned, so there is no gradient to take", op};
        if (varlen.getSoftcap().convertToDouble() != 0.0)
          return {"the packed backward takes no softcap yet", op};
      }
      if (llvm::isa<flash::MoeOp>(op) && !llvm::is_contained(returnOp.getOperands(), op->getResult(0)))
        return {"the mixture of experts' result is not returned, so there is no gradient to take", op};
      if (auto ffn = llvm::dyn_cast<flash::FfnOp>(op)) {
        int64_t rank = ffn.getInput().getType().getRank();
        if (rank != 2 && rank != 3)
          return {"the FFN backward needs an input of rank 2 or 3", op};
        if (!llvm::is_contained(returnOp.getOperands(), ffn.getResult()))
          return {"the FFN result is not returned, so there is no gradient to take", op};
      }
    }
    return {"", nullptr};
  }

  LogicalResult generate(func::FuncOp func, SymbolTable &symbols,
                         const TargetDescription &targetDesc) {
    Block &body = func.getBody().front();
    SmallVector<Operation *> fused;
    func.walk([&](Operation *op) {
      if (llvm::isa<flash::AttentionOp, flash::FfnOp, flash::VarlenAttentionOp, flash::MoeOp>(op))
        fused.push_back(op);
    });
    // Kernel limits first: a spec no kernel can run is an error, not a
    // missing backward.
    for (Operation *op : fused)
      if (failed(checkKernelLimits(op, "flash-generate-backward")))
        return failure();
    auto [reason, culprit] = unsupported(func, fused);
    if (!reason.empty()) {
      culprit->emitWarning() << "flash-generate-backward: no backward for @" << func.getSymName()
                             << ": " << reason;
      return success();
    }
    std::string name = (func.getSymName() + "_backward").str();
    std::string trainName = (func.getSymName() + "_forward_train").str();
    // FFNs and mixtures of experts read what a training forward saved.
    bool savesActivations = llvm::any_of(fused, [](Operation *op) { return llvm::isa<flash::FfnOp, flash::MoeOp>(op); });
    for (const std::string &taken : {name, savesActivations ? trainName : std::string()})
      if (!taken.empty() && symbols.lookup(taken))
        return func.emitError() << "flash-generate-backward: @" << taken << " already exists";

    // Signature: per op its inputs, saved outputs and cotangent; then all
    // gradients, op by op, in input order.
    llvm::DenseMap<Value, ValueLabel> labels = labelFusedValues(body);
    SmallVector<Type> types;
    SmallVector<std::string> names;
    SmallVector<SmallVector<std::string, 4>> dims;
    auto add = [&](Value value, const std::string &prefix) -> FailureOr<unsigned> {
      auto type =
          toProgramTensor(value.getDefiningOp() ? value.getDefiningOp() : func.getOperation(),
                          value.getType(), "backward tensor");
      if (failed(type))
        return failure();
      const ValueLabel &label = labels[value];
      types.push_back(*type);
      names.push_back(prefix + label.name);
      dims.push_back(label.dims);
      return static_cast<unsigned>(types.size() - 1);
    };
    SmallVector<OpSlots, 2> slots;
    // (FFNs and mixtures of experts share one numbering, as their labels do: labelFusedValues.)
    unsigned attentions = 0, denseOps = 0;
    for (Operation *op : fused) {
      OpSlots slot;
      slot.op = op;
      unsigned &count = llvm::isa<flash::AttentionOp, flash::VarlenAttentionOp>(op) ? attentions : denseOps;
      slot.suffix = count ? std::to_string(count + 1) : "";
      ++count;
      SmallVector<Value> inputs;
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op))
        inputs = {attention.getQuery(), attention.getKey(), attention.getValue()};
      else if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op))
        inputs = {varlen.getQuery(), varlen.getKey(), varlen.getValue()};
      else
        inputs.append(op->getOperands().begin(), op->getOperands().end());
      for (Value input : inputs) {
        auto index = add(input, "");
        if (failed(index))
          return failure();
        slot.inputs.push_back(*index);
      }
      // Packed sequences' offsets: inputs without a gradient.
      if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op))
        for (Value offsets : {varlen.getCuSeqlensQ(), varlen.getCuSeqlensK()}) {
          auto index = add(offsets, "");
          if (failed(index))
            return failure();
          slot.offsets.push_back(*index);
        }
      // A mask modifier's tensors: inputs without a gradient.
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op))
        for (Value tensor : attention.getMaskOperands()) {
          auto index = add(tensor, "");
          if (failed(index))
            return failure();
          slot.maskTensors.push_back(*index);
        }
      // A score modifier's tensors: inputs without a gradient, after the mask's.
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op))
        for (Value tensor : attention.getScoreOperands()) {
          auto index = add(tensor, "");
          if (failed(index))
            return failure();
          slot.scoreTensors.push_back(*index);
        }
      Value primal;
      if (llvm::isa<flash::AttentionOp, flash::VarlenAttentionOp>(op)) {
        Value output = op->getResult(0), lseValue = op->getResult(1);
        auto out = add(output, ""), lse = add(lseValue, "");
        if (failed(out) || failed(lse))
          return failure();
        slot.out = *out;
        slot.lse = *lse;
        primal = output;
      } else {
        // flash-tile's scheme (`_2`, `_3`, ...), so both programs name them
        // alike.
        auto unique = [&](const std::string &name) {
          std::string candidate = name;
          for (unsigned n = 2; llvm::is_contained(names, candidate); ++n)
            candidate = name + "_" + std::to_string(n);
          return candidate;
        };
        auto moe = llvm::dyn_cast<flash::MoeOp>(op);
        unsigned first =
            moe ? appendMoeSaved(moe, slot.suffix, labels[moe.getInput()].dims[0], unique, types, names, dims)
                : appendSavedActivations(llvm::cast<flash::FfnOp>(op), slot.suffix,
                                         labels[llvm::cast<flash::FfnOp>(op).getInput()].dims, unique, types, names,
                                         dims);
        for (unsigned i = first; i < types.size(); ++i)
          slot.saved.push_back(i);
        primal = op->getResult(0);
      }
      auto cotangent = add(primal, "d");
      if (failed(cotangent))
        return failure();
      slot.cotangent = *cotangent;
      slots.push_back(slot);
    }
    for (OpSlots &slot : slots) {
      SmallVector<Value> inputs;
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(slot.op))
        inputs = {attention.getQuery(), attention.getKey(), attention.getValue()};
      else if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(slot.op))
        inputs = {varlen.getQuery(), varlen.getKey(), varlen.getValue()};
      else
        inputs.append(slot.op->getOperands().begin(), slot.op->getOperands().end());
      for (Value input : inputs) {
        auto index = add(input, "d");
        if (failed(index))
          return failure();
        slot.grads.push_back(*index);
      }
    }
    // Scalars last (the ABI's order), one per distinct key offset.
    llvm::DenseMap<Value, unsigned> scalarIndex;
    for (OpSlots &slot : slots) {
      auto attention = llvm::dyn_cast<flash::AttentionOp>(slot.op);
      Value offset = attention ? attention.getKeyOffset() : Value();
      if (!offset)
        continue;
      auto [it, fresh] = scalarIndex.try_emplace(offset, types.size());
      if (fresh) {
        types.push_back(offset.getType());
        names.push_back(labels[offset].name);
        dims.push_back({});
      }
      slot.keyOffset = it->second;
    }

    ProgramBuilder pb(symbols, targetDesc);
    pb.create(func, func.getLoc(), name, types, names, dims);
    for (OpSlots &slot : slots) {
      LogicalResult result =
          llvm::isa<flash::AttentionOp>(slot.op)
              ? attentionBackward(llvm::cast<flash::AttentionOp>(slot.op), slot, func, pb)
          : llvm::isa<flash::VarlenAttentionOp>(slot.op)
              ? pb.launchVarlenBackward(llvm::cast<flash::VarlenAttentionOp>(slot.op),
                                        func.getSymName().str() + "_varlen" + slot.suffix, slot.suffix,
                                        pb.arg(slot.inputs[0]), pb.arg(slot.inputs[1]), pb.arg(slot.inputs[2]),
                                        pb.arg(slot.offsets[0]), pb.arg(slot.offsets[1]), pb.arg(slot.out),
                                        pb.arg(slot.lse), pb.arg(slot.cotangent), pb.arg(slot.grads[0]),
                                        pb.arg(slot.grads[1]), pb.arg(slot.grads[2]))
          : llvm::isa<flash::MoeOp>(slot.op)
              ? moeBackward(llvm::cast<flash::MoeOp>(slot.op), slot, func, pb)
              : ffnBackward(llvm::cast<flash::FfnOp>(slot.op), slot, func, pb);
      if (failed(result)) {
        pb.getProgram().erase();
        return failure();
      }
    }
    symbols.insert(pb.getProgram());
    if (savesActivations) {
      // The forward again, for flash-tile to lower in its training form.
      OpBuilder builder(func);
      builder.setInsertionPointAfter(func);
      auto train = llvm::cast<func::FuncOp>(builder.clone(*func));
      train.setSymName(trainName);
      train->setAttr(kTrainForwardAttrName, builder.getUnitAttr());
      symbols.insert(train);
    }
    return success();
  }

  LogicalResult attentionBackward(flash::AttentionOp op, const OpSlots &slot, func::FuncOp func,
                                  ProgramBuilder &pb) {
    MLIRContext *ctx = op.getContext();
    Value q = pb.arg(slot.inputs[0]), k = pb.arg(slot.inputs[1]), v = pb.arg(slot.inputs[2]),
          out = pb.arg(slot.out), lse = pb.arg(slot.lse), dOut = pb.arg(slot.cotangent),
          dQ = pb.arg(slot.grads[0]), dK = pb.arg(slot.grads[1]), dV = pb.arg(slot.grads[2]);
    ArrayRef<int64_t> qShape = llvm::cast<GlobalTensorType>(q.getType()).getShape();
    // The modifiers' tables hold the indices they are read at, checked before any launch.
    SmallVector<Value> maskTables, scoreTables;
    for (unsigned index : slot.maskTensors)
      maskTables.push_back(pb.arg(index));
    for (unsigned index : slot.scoreTensors)
      scoreTables.push_back(pb.arg(index));
    pb.requireTableExtents(op, q, k, maskTables, scoreTables);
    Type f32 = FloatType::getF32(ctx);
    // D [B, Hq, Sq] and the dQ accumulator [B, Hq, Sq, D], both f32.
    Value delta = pb.alloc(GlobalTensorType::get(ctx, qShape.take_front(3), f32),
                           {{q, 0}, {q, 1}, {q, 2}}, "delta" + slot.suffix);
    std::string base = func.getSymName().str() + "_attention" + slot.suffix;
    // (The deterministic pair is never warp-specialised: no block-class table for it to read.)
    auto spec = [&](KernelRole role) { return attentionSpec(op, role, /*blockTable=*/!deterministic); };
    Location loc = op.getLoc();
    // auto: the tuning table's form, else the Sᵀ form where the target runs
    // it faster; the deterministic pair keeps the row form (its Sᵀ kernel has
    // not been measured).
    bool transposed =
        form == "transposed" ||
        (form == "auto" && !deterministic &&
         autoPicksTransposed(pb.getTarget(), spec(KernelRole::AttentionBackwardTransposed)));
    KernelRole kvRole =
        transposed ? KernelRole::AttentionBackwardKVTransposed : KernelRole::AttentionBackwardKV;
    KernelRole mainRole =
        transposed ? KernelRole::AttentionBackwardTransposed : KernelRole::AttentionBackward;
    // The kernels that compute scores take the mask modifier's tensors (and,
    // when it reads any, the table of its block classes, rows of keys: the
    // warp-specialised backward walks it) and the key offset after their own
    // tensors.
    SmallVector<Value> maskTensors;
    for (unsigned index : slot.maskTensors)
      maskTensors.push_back(pb.arg(index));
    // A document modifier's main kernel whose tuning entry asks for it: the segment plan (key tiles aligned to each
    // document's start), launched first (the block-class kernel skips its work where the plan serves), taken after
    // the table.
    bool segments = maskModReadsTensors(op) && !deterministic && takesSegments(op, mainRole, pb.getTarget(), *table);
    Value plan;
    if (segments) {
      FailureOr<Value> p = pb.launchSegmentPlan(op, loc, base + "_bwd_segments", q, k,
                                                maskTensors[*documentSegments(op)], "segment_plan_keys" + slot.suffix);
      if (failed(p))
        return failure();
      plan = *p;
    }
    Value keyTable;
    if (maskModReadsTensors(op) && !deterministic) {
      FailureOr<Value> t = pb.launchMaskBlocks(op, op.getLoc(), base + "_bwd_mask_blocks_keys", q, k, maskTensors,
                                               /*transposed=*/true, "mask_blocks_keys" + slot.suffix, plan);
      if (failed(t))
        return failure();
      keyTable = *t;
    }
    auto masked = [&](SmallVector<Value> args, Value table, Value segmentPlan = Value()) {
      args.append(maskTensors);
      for (unsigned index : slot.scoreTensors)
        args.push_back(pb.arg(index));
      if (table)
        args.push_back(table);
      if (segmentPlan)
        args.push_back(segmentPlan);
      if (slot.keyOffset >= 0)
        args.push_back(pb.arg(slot.keyOffset));
      return args;
    };
    if (deterministic)
      return success(
          succeeded(pb.launch(loc, base + "_bwd_preprocess",
                              spec(KernelRole::AttentionBackwardPreprocess), {out, dOut, delta})) &&
          succeeded(pb.launch(loc, base + "_bwd_kv", spec(kvRole),
                              masked({q, k, v, dOut, lse, delta, dK, dV}, keyTable))) &&
          succeeded(pb.launch(loc, base + "_bwd_dq", spec(KernelRole::AttentionBackwardDQ),
                              masked({q, k, v, dOut, lse, delta, dQ}, Value()))));
    // dq_accum (f32, the main kernel adds dQ into it): the preprocess zeroes
    // it in the pass that reads O and dO (no memset of it before the program).
    Value dqAccum = pb.alloc(GlobalTensorType::get(ctx, qShape, f32),
                             {{q, 0}, {q, 1}, {q, 2}, {q, 3}}, "dq_accum" + slot.suffix);
    dqAccum.getDefiningOp()->setAttr(tile::AllocTensorOp::kZeroedInProgram, UnitAttr::get(ctx));
    return success(
        succeeded(pb.launch(loc, base + "_bwd_preprocess",
                            spec(KernelRole::AttentionBackwardPreprocess), {out, dOut, delta, dqAccum})) &&
        succeeded(pb.launch(loc, base + "_bwd",
                            attentionSpec(op, mainRole, /*blockTable=*/true, segments),
                            masked({q, k, v, dOut, lse, delta, dqAccum, dK, dV}, keyTable, plan))) &&
        succeeded(pb.launch(loc, base + "_bwd_postprocess",
                            spec(KernelRole::AttentionBackwardPostprocess), {dqAccum, dQ})));
  }

  /// dW = Aᵀ·B summed over every row (kernel `name`). With fewer 128x128
  /// output tiles than the GPU has SMs, one block per tile would walk all M
  /// rows alone: split the rows over grid z into a zeroed f32 accumulator
  /// (workspace `accumName`), then convert.
  LogicalResult weightGradient(ProgramBuilder &pb, Location loc, const std::string &name, const std::string &accumName,
                               Type element, Value a, Value b, Value dw) {
    MLIRContext *ctx = element.getContext();
    auto type = llvm::cast<GlobalTensorType>(dw.getType());
    int64_t tiles = llvm::divideCeil(type.getShape()[0], 128) * llvm::divideCeil(type.getShape()[1], 128);
    // Deterministic mode keeps one block per tile: float atomics would make
    // the sum order, and so dW's bits, vary from run to run.
    if (tiles >= kSplitKMaxTiles || deterministic)
      return pb.launch(loc, name,
                       gemmSpec(ctx, KernelRole::Gemm, tile::Activation::Identity, true, false, false, false, element),
                       {a, b, dw});
    Value accum = pb.alloc(GlobalTensorType::get(ctx, type.getShape(), Float32Type::get(ctx)), {}, accumName);
    auto splitK = gemmSpec(ctx, KernelRole::GemmSplitK, tile::Activation::Identity, true, false, false, false, element);
    auto convert =
        gemmSpec(ctx, KernelRole::ConvertF32, tile::Activation::Identity, false, false, false, false, element);
    if (failed(pb.launch(loc, name, splitK, {a, b, accum})))
      return failure();
    return pb.launch(loc, name + "_convert", convert, {accum, dw});
  }

  /// The backward of a mixture of experts (docs/design/moe.md) from what its training forward saved: the expert
  /// rows' gradients and the routing weights' (scatter), dh = d_expert_out W2[e]ᵀ, the activation's derivative,
  /// dx_perm = d_pre W1[e]ᵀ (+ d_up W_up[e]ᵀ), the experts' weight gradients over their rows, d logits through the
  /// gating, then dx = the token's rows of dx_perm + d_logits routerᵀ and d_router = xᵀ d_logits.
  LogicalResult moeBackward(flash::MoeOp op, const OpSlots &slot, func::FuncOp func, ProgramBuilder &pb) {
    MLIRContext *ctx = op.getContext();
    bool gated = op.isGated();
    if (failed(pb.checkMoe(op, "flash-generate-backward")))
      return failure();
    // Operands in flash.moe order: x, router, w1, [w_up], w2.
    Value x = pb.arg(slot.inputs[0]), router = pb.arg(slot.inputs[1]), w1 = pb.arg(slot.inputs[2]);
    Value wUp = gated ? pb.arg(slot.inputs[3]) : Value(), w2 = pb.arg(slot.inputs[gated ? 4 : 3]);
    Value dx = pb.arg(slot.grads[0]), dRouter = pb.arg(slot.grads[1]), dw1 = pb.arg(slot.grads[2]);
    Value dwUp = gated ? pb.arg(slot.grads[3]) : Value(), dw2 = pb.arg(slot.grads[gated ? 4 : 3]);
    Value dy = pb.arg(slot.cotangent);
    MoeSaved saved = MoeSaved::fromArgs(pb.getProgram().getArguments(), slot.saved.front(), gated);
    Type element = op.getInput().getType().getElementType();
    Type f32 = Float32Type::get(ctx);
    int64_t experts = op.getExperts(), d = op.getModelDim(), h = op.getHiddenDim(), dOut = op.getOutputDim();
    // Workspaces sized as the saved ones: [C, *] rows of the permuted layout, [T k] routed rows, [T, E].
    auto rowsOf = [&](Value like, int64_t width, StringRef name) {
      return pb.alloc(GlobalTensorType::get(ctx, {llvm::cast<GlobalTensorType>(like.getType()).getShape()[0], width},
                                            element),
                      {{like, 0}, {like, 1}}, (name + slot.suffix).str());
    };
    Value dExpertOut = rowsOf(saved.expertOut, dOut, "d_expert_out");
    auto routedType = llvm::cast<GlobalTensorType>(saved.weights.getType());
    Value dWeights = pb.alloc(GlobalTensorType::get(ctx, routedType.getShape(), f32), {{saved.weights, 0}},
                              "d_route_weights" + slot.suffix);
    Value dh = rowsOf(saved.hidden, h, "dh");
    Value dPre = rowsOf(saved.hidden, h, gated ? "d_gate" : "d_pre");
    Value dUp = gated ? rowsOf(saved.hidden, h, "d_up") : Value();
    Value dxPerm = rowsOf(saved.permuted, d, "dx_perm");
    auto logitsType = llvm::cast<GlobalTensorType>(saved.logits.getType());
    Value dLogits = pb.alloc(GlobalTensorType::get(ctx, {logitsType.getShape()[0], experts}, element),
                             {{saved.logits, 0}, {saved.logits, 1}}, "d_logits" + slot.suffix);
    std::string base = func.getSymName().str() + "_moe" + slot.suffix;
    Location loc = op.getLoc();
    auto spec = [&](KernelRole role) { return pb.moeSpec(op, role); };
    SmallVector<Value> activationGrad = {saved.logits, saved.pre};
    if (gated)
      activationGrad.push_back(saved.up);
    activationGrad.append({dh, saved.offsets, dPre});
    if (gated)
      activationGrad.push_back(dUp);
    auto gemm = [&](bool ta, bool tb, bool accumulate) {
      return gemmSpec(ctx, KernelRole::Gemm, tile::Activation::Identity, ta, tb, false, false, element, false,
                      accumulate);
    };
    if (failed(pb.launch(loc, base + "_bwd_scatter", spec(KernelRole::MoeScatterGrad),
                         {dy, saved.expertOut, saved.counts, saved.ids, saved.weights, saved.ranks, saved.offsets,
                          dExpertOut, dWeights})) ||
        // dh = d_expert_out · W2[e]ᵀ
        failed(pb.launch(loc, base + "_bwd_dh", spec(KernelRole::MoeDataGrad),
                         {saved.logits, dExpertOut, w2, saved.groups, dh})) ||
        failed(pb.launch(loc, base + "_bwd_act", spec(KernelRole::MoeActivationGrad), activationGrad)) ||
        // dx_perm = d_pre · W1[e]ᵀ (+ d_up · W_up[e]ᵀ)
        failed(pb.launch(loc, base + "_bwd_dx_perm", spec(KernelRole::MoeDataGrad),
                         {saved.logits, dPre, w1, saved.groups, dxPerm})) ||
        (gated && failed(pb.launch(loc, base + "_bwd_dx_perm_up", spec(KernelRole::MoeDataGradAccumulate),
                                   {saved.logits, dUp, wUp, saved.groups, dxPerm}))) ||
        // dW2[e] = hidden_eᵀ · d_expert_out_e, dW1[e] = x_eᵀ · d_pre_e (, dW_up[e] = x_eᵀ · d_up_e)
        failed(pb.launch(loc, base + "_bwd_dw2", spec(KernelRole::MoeWeightGrad),
                         {saved.logits, saved.hidden, dExpertOut, saved.offsets, dw2})) ||
        failed(pb.launch(loc, base + "_bwd_dw1", spec(KernelRole::MoeWeightGrad),
                         {saved.logits, saved.permuted, dPre, saved.offsets, dw1})) ||
        (gated && failed(pb.launch(loc, base + "_bwd_dw_up", spec(KernelRole::MoeWeightGrad),
                                   {saved.logits, saved.permuted, dUp, saved.offsets, dwUp}))) ||
        // The router: d_logits, dx = the token's rows of dx_perm, dx += d_logits · routerᵀ, d_router = xᵀ · d_logits
        failed(pb.launch(loc, base + "_bwd_select", spec(KernelRole::MoeSelectGrad),
                         {saved.logits, saved.ids, saved.weights, dWeights, dLogits})) ||
        failed(pb.launch(loc, base + "_bwd_gather", spec(KernelRole::MoeGatherGrad),
                         {dxPerm, saved.ids, saved.ranks, saved.offsets, dx})) ||
        failed(pb.launch(loc, base + "_bwd_dx_router", gemm(false, true, /*accumulate=*/true), {dLogits, router, dx})) ||
        failed(weightGradient(pb, loc, base + "_bwd_d_router", "d_router_accum" + slot.suffix, element, x, dLogits,
                              dRouter)))
      return failure();
    return success();
  }

  LogicalResult ffnBackward(flash::FfnOp op, const OpSlots &slot, func::FuncOp func,
                            ProgramBuilder &pb) {
    MLIRContext *ctx = op.getContext();
    bool hasB1 = static_cast<bool>(op.getB1()), hasB2 = static_cast<bool>(op.getB2());
    bool gated = op.isGated();
    // Operands in flash.ffn order: x, w1, [b1], [w_up], w2, [b2].
    unsigned next = 0;
    auto input = [&](bool present) -> std::pair<Value, Value> {
      if (!present)
        return {Value(), Value()};
      unsigned i = next++;
      return {pb.arg(slot.inputs[i]), pb.arg(slot.grads[i])};
    };
    auto [x, dx] = input(true);
    auto [w1, dw1] = input(true);
    auto [b1, db1] = input(hasB1);
    auto [wUp, dwUp] = input(gated);
    auto [w2, dw2] = input(true);
    auto [b2, db2] = input(hasB2);
    Value dy = pb.arg(slot.cotangent);

    Type element = op.getInput().getType().getElementType();
    tile::Activation act = toTileActivation(op.getActivation());
    // The training forward's pre (gated: gate and up) and h; dpre (gated:
    // dgate) and du [.., M, H] in the element type.
    auto xType = llvm::cast<GlobalTensorType>(x.getType());
    auto hiddenType = hiddenTensorType(op);
    SmallVector<std::pair<Value, int64_t>> sources;
    for (int64_t d = 0; d < xType.getRank(); ++d)
      sources.push_back({x, d});
    Value pre = pb.arg(slot.saved[0]);
    Value upPre = gated ? pb.arg(slot.saved[1]) : Value();
    Value hidden = pb.arg(slot.saved.back());
    Value dpre = pb.alloc(hiddenType, sources, (gated ? "dgate" : "dpre") + slot.suffix);
    Value du = gated ? pb.alloc(hiddenType, sources, "dup" + slot.suffix) : Value();
    std::string base = func.getSymName().str() + "_ffn" + slot.suffix;
    auto gemm = [&](bool ta, bool tb, bool accumulate = false) {
      return gemmSpec(ctx, KernelRole::Gemm, tile::Activation::Identity, ta, tb, false, false,
                      element, false, accumulate);
    };
    Location loc = op.getLoc();
    auto weightGradient = [&](StringRef name, Value a, Value b, Value dw) {
      return this->weightGradient(pb, loc, base + name.str(), (name.drop_front(5) + "_accum" + slot.suffix).str(),
                                  element, a, b, dw);
    };
    auto splitActivationGrad = [&]() -> LogicalResult {
      Value dh = pb.alloc(hiddenType, sources, "dh" + slot.suffix);
      SmallVector<Value> gradArgs = {dh, pre};
      if (gated)
        gradArgs.push_back(upPre);
      gradArgs.push_back(dpre);
      if (du)
        gradArgs.push_back(du);
      return success(succeeded(pb.launch(loc, base + "_bwd_dh", gemm(false, true), {dy, w2, dh})) &&
                     succeeded(pb.launch(loc, base + "_bwd_act",
                                         gemmSpec(ctx, KernelRole::FfnActivationGrad, act, false, false,
                                                  false, false, element, gated),
                                         gradArgs)));
    };
    // dpre = (dy · W2ᵀ) ∘ act'(pre) as one GEMM with the derivative in its
    // epilogue where the table or target plans it as the warp-specialised
    // GEMM (which loads pre's tile under the product); else dh = dy · W2ᵀ, a
    // plain GEMM at its full rate, then the activation's derivative
    // elementwise (as eager PyTorch: the cp.async GEMM with the derivative in
    // its epilogue ran at 0.5-0.7x a plain GEMM's rate,
    // bench/results/2026-12-01-h200-session14.md).
    // (Gated: D = dy · W2ᵀ, then dg = (D ∘ u) ∘ act'(g) and du = D ∘ act(g)
    // from the saved g and u, two tiles read and two written.)
    auto fusedSpec = gemmSpec(ctx, KernelRole::Gemm, act, false, true, false, false, element,
                              gated, /*accumulate=*/false, /*savePre=*/false, /*actGrad=*/true);
    SmallVector<Value> fusedArgs = {dy, w2, pre};
    if (gated)
      fusedArgs.push_back(upPre);
    fusedArgs.push_back(dpre);
    if (gated)
      fusedArgs.push_back(du);
    SmallVector<Type> fusedTypes;
    for (Value arg : fusedArgs)
      fusedTypes.push_back(arg.getType());
    LogicalResult dpreDone = fusesActivationGrad(pb.getTarget(), fusedSpec, fusedTypes)
                                 ? pb.launch(loc, base + "_bwd_dpre", fusedSpec, fusedArgs)
                                 : splitActivationGrad();
    if (failed(dpreDone) ||
        // dW2 = hᵀ · dy (summed over batch and rows)
        failed(weightGradient("_bwd_dw2", hidden, dy, dw2)) ||
        // dW1 = xᵀ · dpre (gated: xᵀ · dgate)
        failed(weightGradient("_bwd_dw1", x, dpre, dw1)) ||
        // dx = dpre · W1ᵀ
        failed(pb.launch(loc, base + "_bwd_dx", gemm(false, true), {dpre, w1, dx})))
      return failure();
    if (gated && (failed(weightGradient("_bwd_dw_up", x, du, dwUp)) ||
                  // dx += du · W_upᵀ
                  failed(pb.launch(loc, base + "_bwd_dx_up", gemm(false, true, /*accumulate=*/true),
                                   {du, wUp, dx}))))
      return failure();
    auto columnSum = gemmSpec(ctx, KernelRole::ColumnSum, tile::Activation::Identity, false, false,
                              false, false, element);
    if (db2 && failed(pb.launch(loc, base + "_bwd_db2", columnSum, {dy, db2})))
      return failure();
    if (db1 && failed(pb.launch(loc, base + "_bwd_db1", columnSum, {dpre, db1})))
      return failure();
    return success();
  }
};

} // namespace
