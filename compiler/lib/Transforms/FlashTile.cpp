//===- FlashTile.cpp - fused flash ops -> tile kernels + tile program -----===//
//
// See the FlashTile def in Passes.td and docs/tile-dialect.md ("flash-tile").
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TileKernels.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "TileLowering.h"

#include "flashc/Dialect/Tile/IR/TileLimits.h"

// A spec the flash verifiers accept must give tile attributes the tile
// verifiers accept: one bound for scales on both levels.
static_assert(mlir::flash::kMaxAttentionScale == mlir::tile::limits::kMaxScale,
              "flash.attention's scale bound must be the tile dialect's");

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHTILE
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace flashc;

namespace {

struct FlashTilePass : public mlir::flash::impl::FlashTileBase<FlashTilePass> {
  using FlashTileBase::FlashTileBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const TargetDescription *targetDesc = lookupTarget(target);
    if (!targetDesc) {
      module.emitError() << "flash-tile: unknown target '" << target
                         << "' (known: " << knownTargetNames() << ")";
      return signalPassFailure();
    }
    FfnPlanChoice choice;
    if (ffnPlan == "auto")
      choice = FfnPlanChoice::Auto;
    else if (ffnPlan == "fused")
      choice = FfnPlanChoice::Fused;
    else if (ffnPlan == "two-kernel")
      choice = FfnPlanChoice::TwoKernel;
    else {
      module.emitError() << "flash-tile: ffn-plan must be auto, fused or two-kernel, got '"
                         << ffnPlan << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func->hasAttr(tile::kProgramAttrName) && !func.isExternal() && hasFusedOps(func))
        funcs.push_back(func);
    // A function with fused ops becomes a program of kernel launches, an entry
    // point of the bundle with a signature of its own: a call to it from
    // another function would be left calling what no longer exists.
    SymbolTable symbols(module);
    WalkResult calls = module.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || !llvm::is_contained(funcs, callee))
        return WalkResult::advance();
      call.emitError() << "flash-tile: @" << call->getParentOfType<func::FuncOp>().getSymName() << " calls @"
                       << call.getCallee()
                       << ", a function with fused ops that flashc compiles into a program of its own (an entry "
                          "point of the bundle); programs cannot be called from other functions: inline @"
                       << call.getCallee() << "'s body into the caller, or call each program from the runtime";
      return WalkResult::interrupt();
    });
    if (calls.wasInterrupted())
      return signalPassFailure();
    std::string error;
    std::shared_ptr<const TuningTable> table = loadTuningTable(tuningTable, target, error);
    if (!table) {
      module.emitError() << "flash-tile: " << error;
      return signalPassFailure();
    }
    for (func::FuncOp func : funcs)
      if (failed(lowerForwardFunction(func, symbols, *targetDesc, choice, table.get())))
        return signalPassFailure();
  }
};

} // namespace

namespace flashc {

/// Dynamic-size sources of an attention output [B, Hq, Sq, Dv] / lse
/// [B, Hq, Sq]: batch and query length come from the query.
static SmallVector<std::pair<Value, int64_t>> queryShapedSources(Value q, int64_t rank) {
  SmallVector<std::pair<Value, int64_t>> sources;
  for (int64_t d = 0; d < rank; ++d)
    sources.push_back({q, d < 3 ? d : 3});
  return sources;
}

/// Sources for an FFN tensor [..., M, N]: leading dims and M from x; N is
/// static (weights are static).
static SmallVector<std::pair<Value, int64_t>> rowShapedSources(Value x, int64_t rank) {
  SmallVector<std::pair<Value, int64_t>> sources;
  for (int64_t d = 0; d < rank; ++d)
    sources.push_back({x, d});
  return sources;
}

LogicalResult lowerForwardFunction(func::FuncOp func, SymbolTable &symbols,
                                   const TargetDescription &target, FfnPlanChoice choice,
                                   const TuningTable *tuningTable) {
  MLIRContext *ctx = func.getContext();
  // The training form saves each FFN's activations for the backward.
  bool train = func->hasAttr(kTrainForwardAttrName);
  if (!func.getBody().hasOneBlock())
    return func.emitError("flash-tile: functions with control flow (several blocks) are not "
                          "tiled");
  Block &body = func.getBody().front();
  auto returnOp = llvm::dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!returnOp)
    return func.emitError("flash-tile: the function body must end in func.return");

  // Only fused ops can be tiled: anything else means fusion did not happen.
  for (Operation &op : body) {
    if (llvm::isa<flash::AttentionOp, flash::FfnOp, flash::DecodeAttentionOp, flash::VarlenAttentionOp,
                  flash::KvAppendOp, flash::MoeOp, func::ReturnOp>(op))
      continue;
    // Constants the canonicalizer materialized carry no location: point at
    // the function instead of "<unknown>:0".
    Location where = llvm::isa<UnknownLoc>(op.getLoc()) ? func.getLoc() : op.getLoc();
    // (flashc has run the fusions by now: the op is one they left, e.g. a residual add or a product feeding K)
    return emitError(where) << "flash-tile: '" << op.getName()
                            << "' is outside every fused op, and only fused ops are tiled: the fusion passes "
                               "(flash-fuse-attention, flash-fuse-ffn, flash-fuse-moe) did not take it into one "
                               "(their warnings say what stopped them)";
  }

  for (Operation &op : body)
    if (failed(checkKernelLimits(&op, "flash-tile")))
      return failure();

  // An append writes its caches in place: each must be an argument of the function that nothing else reads (the
  // old contents are gone after the program), and its results stand for that argument.
  llvm::DenseMap<Value, Value> tiedTo;  // an append's result -> the argument it overwrites
  for (auto append : body.getOps<flash::KvAppendOp>()) {
    for (auto [cache, result] : {std::pair<Value, Value>{append.getKeyCache(), append.getNewKeyCache()},
                                 {append.getValueCache(), append.getNewValueCache()}}) {
      const char *what = cache == append.getKeyCache() ? "key" : "value";
      if (!llvm::isa<BlockArgument>(cache))
        return append.emitError() << "flash-tile: the " << what
                                  << " cache of flash.kv_append must be an argument of the function (the program "
                                     "writes it in place)";
      if (!cache.hasOneUse())
        return append.emitError() << "flash-tile: the " << what << " cache (argument "
                                  << llvm::cast<BlockArgument>(cache).getArgNumber()
                                  << ") is read by another op besides flash.kv_append; the program overwrites it in "
                                     "place, so use the append's result instead";
      tiedTo[result] = cache;
    }
  }

  llvm::DenseMap<Value, ValueLabel> labels = labelFusedValues(body);
  llvm::StringSet<> usedNames;
  auto uniqueName = [&](std::string name) {
    std::string candidate = name;
    for (unsigned n = 2; usedNames.contains(candidate); ++n)
      candidate = name + "_" + std::to_string(n);
    usedNames.insert(candidate);
    return candidate;
  };

  // Program signature: inputs, outputs (results), unreturned lse's, then (the
  // training form) each FFN's saved activations; scalars last.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<SmallVector<std::string, 4>> argDims;
  auto addArg = [&](Type type, Value value, const std::string &fallback) {
    argTypes.push_back(type);
    auto it = labels.find(value);
    argNames.push_back(uniqueName(it != labels.end() ? it->second.name : fallback));
    argDims.push_back(it != labels.end() ? it->second.dims : SmallVector<std::string, 4>());
  };
  // i32 arguments (attention key offsets) are scalars: the ABI puts them after
  // every tensor.
  SmallVector<unsigned> scalarArgs;
  llvm::DenseMap<unsigned, unsigned> programIndex;
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    if (type.isSignlessInteger(32)) {
      scalarArgs.push_back(index);
      continue;
    }
    auto tensor = toProgramTensor(func, type, "argument " + std::to_string(index));
    if (failed(tensor))
      return failure();
    programIndex[index] = argTypes.size();
    addArg(*tensor, func.getArgument(index), "input" + std::to_string(index));
  }
  llvm::DenseMap<Value, unsigned> outputIndex;
  llvm::DenseSet<Value> returnedTied;
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    Operation *def = value.getDefiningOp();
    if (!def || !llvm::isa<flash::AttentionOp, flash::FfnOp, flash::DecodeAttentionOp, flash::VarlenAttentionOp,
                           flash::KvAppendOp, flash::MoeOp>(def))
      return returnOp.emitError() << "flash-tile: result " << index
                                  << " must be produced by a fused op of this function";
    if (outputIndex.count(value) || returnedTied.count(value))
      return returnOp.emitError() << "flash-tile: result " << index
                                  << " returns a value already returned";
    if (tiedTo.count(value)) {  // an appended cache: the program's argument itself, written in place
      returnedTied.insert(value);
      continue;
    }
    auto tensor = toProgramTensor(returnOp, value.getType(), "result " + std::to_string(index));
    if (failed(tensor))
      return failure();
    outputIndex[value] = argTypes.size();
    addArg(*tensor, value, "result" + std::to_string(index));
  }
  // One lse output per attention (then per decode attention) whose lse the function does not return.
  SmallVector<std::pair<Operation *, Value>> lses;
  for (auto attention : body.getOps<flash::AttentionOp>())
    lses.push_back({attention, attention.getLse()});
  for (auto decode : body.getOps<flash::DecodeAttentionOp>())
    lses.push_back({decode, decode.getLse()});
  for (auto varlen : body.getOps<flash::VarlenAttentionOp>())
    lses.push_back({varlen, varlen.getLse()});
  for (auto [op, lse] : lses) {
    if (outputIndex.count(lse))
      continue;
    auto tensor = toProgramTensor(op, lse.getType(), "lse");
    if (failed(tensor))
      return failure();
    outputIndex[lse] = argTypes.size();
    addArg(*tensor, lse, "lse");
  }
  // The first saved tensor of each FFN and mixture of experts, in body order (flash-generate-backward's order for
  // its backward's parameters).
  llvm::DenseMap<Operation *, unsigned> savedIndex;
  if (train) {
    unsigned denseOps = 0; // (one numbering for both kinds, as labelFusedValues' and the backward's)
    for (Operation &op : body) {
      if (auto ffn = llvm::dyn_cast<flash::FfnOp>(op)) {
        std::string suffix = denseOps++ ? std::to_string(denseOps) : "";
        savedIndex[ffn] = appendSavedActivations(ffn, suffix, labels[ffn.getInput()].dims, uniqueName, argTypes,
                                                 argNames, argDims);
      } else if (auto moe = llvm::dyn_cast<flash::MoeOp>(op)) {
        std::string suffix = denseOps++ ? std::to_string(denseOps) : "";
        savedIndex[moe] = appendMoeSaved(moe, suffix, labels[moe.getInput()].dims[0], uniqueName, argTypes,
                                         argNames, argDims);
      }
    }
  }
  for (unsigned index : scalarArgs) {
    programIndex[index] = argTypes.size();
    addArg(func.getArgumentTypes()[index], func.getArgument(index), "scalar" + std::to_string(index));
  }

  ProgramBuilder pb(symbols, target);
  std::string name = func.getSymName().str();
  pb.create(func, func.getLoc(), name + ".tile", argTypes, argNames, argDims);
  llvm::DenseMap<Value, Value> mapped;
  for (auto [index, arg] : llvm::enumerate(func.getArguments()))
    mapped[arg] = pb.arg(programIndex[index]);
  unsigned appendCount = 0;
  // Workspace names take their op's suffix (status2, status_append2, ...), as its tensors' labels do.
  llvm::DenseMap<Operation *, std::string> suffixes = attentionSuffixes(body);
  llvm::DenseMap<Operation *, Value> appendStatus;  // an append's checked status
  // The status of the append that made `decode`'s caches with its lengths and table (its check covers the
  // decode's: lengths in [T, capacity], the pages below them), or null.
  auto checkedByAppend = [&](flash::DecodeAttentionOp decode) -> Value {
    auto append = decode.getKeyCache().getDefiningOp<flash::KvAppendOp>();
    if (!append || decode.getKeyCache() != append.getNewKeyCache() ||
        decode.getValueCache() != append.getNewValueCache() || decode.getCacheSeqlens() != append.getCacheSeqlens() ||
        decode.getBlockTable() != append.getBlockTable())
      return Value();
    return appendStatus.lookup(append);
  };
  auto destination = [&](Value result, Value shapeSource) -> Value {
    auto it = outputIndex.find(result);
    if (it != outputIndex.end())
      return pb.arg(it->second);
    auto type = toGlobalTensorType(llvm::cast<RankedTensorType>(result.getType()));
    auto labelIt = labels.find(result);
    return pb.alloc(type,
                    llvm::isa<flash::AttentionOp>(result.getDefiningOp())
                        ? queryShapedSources(shapeSource, type.getRank())
                        : rowShapedSources(shapeSource, type.getRank()),
                    labelIt != labels.end() ? labelIt->second.name : "");
  };

  unsigned attentionCount = 0, ffnCount = 0, moeCount = 0;
  auto cleanup = [&]() {
    pb.getProgram().erase();
    return failure();
  };
  for (Operation &op : body) {
    if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
      Value q = mapped[attention.getQuery()], k = mapped[attention.getKey()],
            v = mapped[attention.getValue()];
      Value out = destination(attention.getOutput(), q);
      Value lse = destination(attention.getLse(), q);
      mapped[attention.getOutput()] = out;
      mapped[attention.getLse()] = lse;
      std::string kernelName =
          name + "_attention" + (attentionCount ? std::to_string(attentionCount) : "") + "_fwd";
      ++attentionCount;
      SmallVector<Value> args = {q, k, v, out, lse};
      // A mask modifier's tensors, then (when it reads any) the table of its
      // block classes, filled by a kernel launched first.
      SmallVector<Value> maskTensors;
      for (Value tensor : attention.getMaskOperands())
        maskTensors.push_back(mapped[tensor]);
      args.append(maskTensors);
      // A score modifier's tensors after them.
      SmallVector<Value> scoreTensors;
      for (Value tensor : attention.getScoreOperands())
        scoreTensors.push_back(mapped[tensor]);
      args.append(scoreTensors);
      // The tables hold the indices they are read at, checked before any of the attention's launches.
      pb.requireTableExtents(attention, q, k, maskTensors, scoreTensors);
      // A document modifier's forward whose tuning entry asks for it: the segment plan, launched first (the
      // block-class kernel skips its work where the plan serves), taken after the table.
      bool segments =
          tuningTable && takesSegments(attention, tile::KernelRole::AttentionForward, target, *tuningTable);
      Value plan;
      if (segments) {
        FailureOr<Value> p = pb.launchSegmentPlan(
            attention, attention.getLoc(), kernelName + "_segments", q, k, maskTensors[*documentSegments(attention)],
            "segment_plan" + (attentionCount > 1 ? std::to_string(attentionCount) : std::string()));
        if (failed(p))
          return cleanup();
        plan = *p;
      }
      if (maskModReadsTensors(attention)) {
        FailureOr<Value> table =
            pb.launchMaskBlocks(attention, attention.getLoc(), kernelName + "_mask_blocks", q, k, maskTensors,
                                /*transposed=*/false,
                                "mask_blocks" + (attentionCount > 1 ? std::to_string(attentionCount) : std::string()),
                                plan);
        if (failed(table))
          return cleanup();
        args.push_back(*table);
      }
      if (plan)
        args.push_back(plan);
      if (attention.getKeyOffset())
        args.push_back(mapped[attention.getKeyOffset()]);
      if (failed(pb.launch(attention.getLoc(), kernelName,
                           attentionSpec(attention, tile::KernelRole::AttentionForward, /*blockTable=*/true, segments),
                           args)))
        return cleanup();
      continue;
    }
    if (auto decode = llvm::dyn_cast<flash::DecodeAttentionOp>(op)) {
      Value q = mapped[decode.getQuery()];
      Value out = destination(decode.getOutput(), q), lse = destination(decode.getLse(), q);
      mapped[decode.getOutput()] = out;
      mapped[decode.getLse()] = lse;
      std::string kernelName = name + "_decode" + (attentionCount ? std::to_string(attentionCount) : "");
      // (its workspaces' names: status, status2, ... as labelFusedValues numbers the arguments)
      std::string suffix = suffixes.lookup(decode);
      ++attentionCount;
      if (failed(pb.launchDecode(decode, kernelName, suffix, q, mapped[decode.getKeyCache()],
                                 mapped[decode.getValueCache()], mapped[decode.getCacheSeqlens()],
                                 decode.getBlockTable() ? mapped[decode.getBlockTable()] : Value(), out, lse,
                                 checkedByAppend(decode))))
        return cleanup();
      continue;
    }
    if (auto append = llvm::dyn_cast<flash::KvAppendOp>(op)) {
      Value kCache = mapped[append.getKeyCache()], vCache = mapped[append.getValueCache()];
      mapped[append.getNewKeyCache()] = kCache;
      mapped[append.getNewValueCache()] = vCache;
      std::string suffix = suffixes.lookup(append);
      std::string kernelName = name + "_kv_append" + (appendCount ? std::to_string(appendCount + 1) : "");
      ++appendCount;
      FailureOr<Value> status =
          pb.launchKvAppend(append, kernelName, suffix, mapped[append.getKey()], mapped[append.getValue()], kCache,
                            vCache, mapped[append.getCacheSeqlens()],
                            append.getBlockTable() ? mapped[append.getBlockTable()] : Value());
      if (failed(status))
        return cleanup();
      appendStatus[append] = *status;
      continue;
    }
    if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op)) {
      Value q = mapped[varlen.getQuery()];
      Value out = destination(varlen.getOutput(), q), lse = destination(varlen.getLse(), q);
      mapped[varlen.getOutput()] = out;
      mapped[varlen.getLse()] = lse;
      std::string kernelName = name + "_varlen" + (attentionCount ? std::to_string(attentionCount) : "");
      std::string suffix = suffixes.lookup(varlen);
      ++attentionCount;
      if (failed(pb.launchVarlen(varlen, kernelName, suffix, q, mapped[varlen.getKey()], mapped[varlen.getValue()],
                                 mapped[varlen.getCuSeqlensQ()], mapped[varlen.getCuSeqlensK()], out, lse)))
        return cleanup();
      continue;
    }
    if (auto moe = llvm::dyn_cast<flash::MoeOp>(op)) {
      Value x = mapped[moe.getInput()];
      Value y = destination(moe.getResult(), x);
      mapped[moe.getResult()] = y;
      std::string sfx = moeCount ? std::to_string(moeCount + 1) : "";
      ++moeCount;
      std::optional<MoeSaved> saved;
      if (train)
        saved = MoeSaved::fromArgs(pb.getProgram().getArguments(), savedIndex[moe], moe.isGated());
      if (failed(pb.launchMoe(moe, name + "_moe" + sfx, sfx, x, mapped[moe.getRouter()], mapped[moe.getW1()],
                              moe.isGated() ? mapped[moe.getWUp()] : Value(), mapped[moe.getW2()], y,
                              saved ? &*saved : nullptr)))
        return cleanup();
      continue;
    }
    auto ffn = llvm::dyn_cast<flash::FfnOp>(op);
    if (!ffn)
      continue;
    int64_t rank = ffn.getInput().getType().getRank();
    if (rank > 3) {
      ffn.emitError() << "flash-tile: flash.ffn input must have rank 2 or 3, got " << rank;
      return cleanup();
    }
    Value x = mapped[ffn.getInput()], w1 = mapped[ffn.getW1()], w2 = mapped[ffn.getW2()];
    Value b1 = ffn.getB1() ? mapped[ffn.getB1()] : Value();
    Value b2 = ffn.getB2() ? mapped[ffn.getB2()] : Value();
    Value wUp = ffn.isGated() ? mapped[ffn.getWUp()] : Value();
    bool gated = static_cast<bool>(wUp);
    Value y = destination(ffn.getResult(), x);
    mapped[ffn.getResult()] = y;
    Type element = ffn.getInput().getType().getElementType();
    tile::Activation act = toTileActivation(ffn.getActivation());
    std::string base = name + "_ffn" + (ffnCount ? std::to_string(ffnCount) : "");
    ++ffnCount;

    // The training form's kernels (save_pre) also write what the backward
    // reads: the fused kernel pre (gated: g, u) and h after y, the up
    // projection pre (gated: g, u) before h.
    auto fusedSpec = gemmSpec(ctx, tile::KernelRole::FfnFused, act, false, false,
                              static_cast<bool>(b1), static_cast<bool>(b2), element, gated,
                              /*accumulate=*/false, /*savePre=*/train);
    unsigned savedCount = gated ? 3 : 2;
    bool fused = choice == FfnPlanChoice::Fused;
    if (choice == FfnPlanChoice::Auto) {
      std::string reason;
      fused = fusedFfnFits(target, ffn.getOutputDim(), element, gated,
                           defaultPlan(target, fusedSpec), reason);
    }
    if (fused) {
      SmallVector<Value> args = {x, w1};
      if (b1)
        args.push_back(b1);
      if (wUp)
        args.push_back(wUp);
      args.push_back(w2);
      if (b2)
        args.push_back(b2);
      args.push_back(y);
      if (train)
        for (unsigned i = 0; i < savedCount; ++i)
          args.push_back(pb.arg(savedIndex[ffn] + i));
      if (failed(pb.launch(ffn.getLoc(), base + "_fused", fusedSpec, args)))
        return cleanup();
      continue;
    }
    // Two GEMMs; the hidden activation h [..., M, H] goes through global
    // memory (the training form: a program tensor, after pre or g and u).
    SmallVector<Value> upArgs = {x, w1};
    if (b1)
      upArgs.push_back(b1);
    if (wUp)
      upArgs.push_back(wUp);
    Value hidden;
    if (train) {
      unsigned first = savedIndex[ffn];
      for (unsigned i = 0; i + 1 < savedCount; ++i)
        upArgs.push_back(pb.arg(first + i));
      hidden = pb.arg(first + savedCount - 1);
    } else {
      hidden = pb.alloc(hiddenTensorType(ffn), rowShapedSources(x, rank), "hidden");
    }
    upArgs.push_back(hidden);
    auto upSpec = gated ? gemmSpec(ctx, tile::KernelRole::GatedGemm, act, false, false, false,
                                   false, element, /*gated=*/true, false, /*savePre=*/train)
                        : gemmSpec(ctx, tile::KernelRole::Gemm, act, false, false,
                                   static_cast<bool>(b1), false, element, false, false,
                                   /*savePre=*/train);
    if (failed(pb.launch(ffn.getLoc(), base + "_up", upSpec, upArgs)))
      return cleanup();
    SmallVector<Value> downArgs = {hidden, w2};
    if (b2)
      downArgs.push_back(b2);
    downArgs.push_back(y);
    if (failed(pb.launch(ffn.getLoc(), base + "_down",
                         gemmSpec(ctx, tile::KernelRole::Gemm, tile::Activation::Identity, false,
                                  false, static_cast<bool>(b2), false, element),
                         downArgs)))
      return cleanup();
  }

  func::FuncOp program = pb.getProgram();
  symbols.erase(func);
  program.setSymName(name);
  symbols.insert(program);
  return success();
}

} // namespace flashc
