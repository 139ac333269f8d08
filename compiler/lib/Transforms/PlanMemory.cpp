//===- PlanMemory.cpp - block sizes, stages and shared-memory layout -------===//
//
// See the PlanMemory def in Passes.td and docs/tile-dialect.md.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TileKernels.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "SaturatingMath.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::flash {
#define GEN_PASS_DEF_PLANMEMORY
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::tile;
using namespace flashc;

namespace {

constexpr int64_t kSharedAlignment = 128;

bool samePlan(const TilePlan &a, const TilePlan &b, bool isGemm) {
  return a.blockM == b.blockM && a.blockN == b.blockN && a.warps == b.warps &&
         a.stages == b.stages && a.strategy == b.strategy && (!isGemm || a.blockK == b.blockK);
}

struct PlanMemoryPass : public mlir::flash::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const TargetDescription *targetDesc = lookupTarget(target);
    if (!targetDesc) {
      module.emitError() << "flash-plan-memory: unknown target '" << target
                         << "' (known: " << knownTargetNames() << ")";
      return signalPassFailure();
    }
    for (auto [flag, value] : {std::pair<const char *, int64_t>{"block-m", blockM},
                               {"block-n", blockN},
                               {"block-k", blockK},
                               {"warps", warps},
                               {"stages", stages}})
      if (value < 0) {
        module.emitError() << "flash-plan-memory: " << flag << " must be >= 0 (0: target "
                           << "default), got " << value;
        return signalPassFailure();
      }
    std::string error;
    table = loadTuningTable(tuningTable, target, error);
    if (!table) {
      module.emitError() << "flash-plan-memory: " << error;
      return signalPassFailure();
    }
    splitByKeyLength(module, *targetDesc);
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    for (KernelOp kernel : kernels)
      if (failed(planKernel(kernel, *targetDesc)))
        return signalPassFailure();
  }

  std::shared_ptr<const TuningTable> table;

  /// An attention forward whose key has a table entry bounded by key length (`d<D>@s<=N`) becomes two kernels:
  /// a clone `<name>_keys_le_N` planned by that entry, which runs at key lengths up to N, and the kernel itself,
  /// planned as before (the key's other entry or the hand rule), which runs at the longer ones (#tile.run_if on k's
  /// length; each launch of it is doubled, only one of the pair doing anything at a given length).
  void splitByKeyLength(ModuleOp module, const TargetDescription &targetDesc) {
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    SymbolTable symbols(module);
    for (KernelOp kernel : kernels) {
      auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(kernel.getSpecAttr());
      if (!attention || attention.getRole() != KernelRole::AttentionForward || kernel.getRunIfAttr())
        continue;
      std::optional<TuningKey> key = tuningKeyOf(targetDesc, attention, kernel.getFunctionType().getInputs());
      const TuningEntry *bounded = key ? table->lookupBounded(*key) : nullptr;
      if (!bounded)
        continue;
      int64_t bound = *bounded->keysAtMost;
      MLIRContext *ctx = kernel.getContext();
      constexpr int64_t kKeys = 1, kKeyRows = 2; // k [B, Hkv, Sk, D]
      OpBuilder builder(kernel);
      builder.setInsertionPointAfter(kernel);
      auto shortKeys = llvm::cast<KernelOp>(builder.clone(*kernel));
      std::string oldName = kernel.getSymName().str();
      shortKeys.setSymName(oldName + "_keys_le_" + std::to_string(bound));
      symbols.insert(shortKeys); // renames on collision
      shortKeys.setRunIfAttr(RunIfAttr::get(ctx, kKeys, kKeyRows, 0, bound));
      kernel.setRunIfAttr(RunIfAttr::get(ctx, kKeys, kKeyRows, bound + 1, -1));
      SmallVector<LaunchOp> launches;
      module.walk([&](LaunchOp launch) {
        if (launch.getKernel() == oldName)
          launches.push_back(launch);
      });
      for (LaunchOp launch : launches) {
        OpBuilder at(launch);
        auto twin = llvm::cast<LaunchOp>(at.clone(*launch));
        twin.setKernel(shortKeys.getSymName());
      }
    }
  }

  /// The table entry for `kernel`, if one applies: an attention_backward
  /// entry that names a form applies to that form's kernel only (the other
  /// form was forced with --backward-form). Fails when the entry's strategy
  /// is not one of the kernel's tuning space.
  FailureOr<const TuningEntry *> tableEntry(KernelOp kernel, const TargetDescription &targetDesc) {
    Attribute spec = kernel.getSpecAttr();
    ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
    std::optional<TuningKey> key = tuningKeyOf(targetDesc, spec, inputs);
    // (The short-keys kernel of an op split by key length: its bounded entry.)
    RunIfAttr runIf = kernel.getRunIfAttr();
    bool shortKeys = runIf && runIf.getMax() >= 0;
    const TuningEntry *entry = !key ? nullptr : shortKeys ? table->lookupBounded(*key) : table->lookup(*key);
    if (!entry)
      return static_cast<const TuningEntry *>(nullptr);
    if (entry->point.form) {
      auto attention = llvm::cast<AttentionSpecAttr>(spec);
      bool transposed = attention.getRole() == KernelRole::AttentionBackwardTransposed;
      if (*entry->point.form != (transposed ? "transposed" : "rows"))
        return static_cast<const TuningEntry *>(nullptr);
    }
    if (entry->point.strategy) {
      std::vector<TuningPoint> space = tuningSpace(targetDesc, spec, inputs);
      if (llvm::none_of(space, [&](const TuningPoint &p) { return p.strategy == entry->point.strategy; })) {
        InFlightDiagnostic error = kernel.emitError()
                                   << "flash-plan-memory: tuning table entry " << entry->name()
                                   << " asks for strategy " << stringifyStrategy(*entry->point.strategy)
                                   << ", which is not in the tuning space of @" << kernel.getSymName()
                                   << " (" << key->str() << ")";
        // Why the warp-specialised GEMM does not take a GEMM-family kernel.
        auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
        if (gemm && *entry->point.strategy == Strategy::WgmmaWsSm90 && isWsGemmRole(gemm))
          if (std::optional<std::string> refusal = wsGemmRefusal(spec, inputs))
            error << ": the warp-specialised GEMM does not take it, " << *refusal;
        return error;
      }
    }
    return entry;
  }

  /// `key` with a key-length bound in its shape (`d64@s<=4096`), as a bounded entry spells it.
  static TuningKey boundedKey(TuningKey key, std::optional<int64_t> keysAtMost) {
    if (keysAtMost)
      key.shape += "@s<=" + std::to_string(*keysAtMost);
    return key;
  }

  /// The kernel's `tuning` attribute: the entry's name and key, and the
  /// schedule knobs flash-warp-specialize and flash-order-blocks read (the
  /// resident-B knob only where that form takes the kernel: a wildcard entry's
  /// knob would otherwise name a form the kernel does not have).
  static DictionaryAttr tuningAttr(MLIRContext *ctx, const TuningEntry &entry, const TuningKey &key,
                                   bool residentTakes) {
    Builder b(ctx);
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr(kTuningEntryName, b.getStringAttr(entry.name())),
        b.getNamedAttr(kTuningKeyName, b.getStringAttr(boundedKey(key, entry.keysAtMost).str()))};
    if (entry.point.pingPong)
      fields.push_back(b.getNamedAttr(kTuningPingPongName, b.getBoolAttr(*entry.point.pingPong)));
    if (entry.point.group)
      fields.push_back(b.getNamedAttr(kTuningGroupName, b.getI64IntegerAttr(*entry.point.group)));
    if (entry.point.persistent)
      fields.push_back(b.getNamedAttr(kTuningPersistentName, b.getBoolAttr(*entry.point.persistent)));
    if (entry.point.residentB && residentTakes)
      fields.push_back(b.getNamedAttr(kTuningResidentBName, b.getBoolAttr(*entry.point.residentB)));
    return b.getDictionaryAttr(fields);
  }

  /// Row-band check: register tiles are split over warps in 16-row bands.
  LogicalResult checkPlan(KernelOp kernel, const TilePlan &plan, const TuningEntry *entry) {
    auto reject = [&](const llvm::Twine &why) {
      InFlightDiagnostic diag = kernel.emitError() << "flash-plan-memory: plan for @"
                                                   << kernel.getSymName() << " is invalid: " << why;
      // (checkTilePlan appends its own reason to an empty one: the entry is named in a note there.)
      if (entry && !why.str().empty())
        diag << " (the plan of tuning table entry " << entry->name() << ")";
      else if (entry)
        diag.attachNote() << "the plan of tuning table entry " << entry->name();
      return diag;
    };
    auto bands = [&](int64_t rows, const char *what) -> LogicalResult {
      if (rows % (16 * plan.warps) != 0)
        return reject(llvm::formatv("{0} = {1} does not split into 16-row bands over {2} warps "
                                    "(needs a multiple of {3})",
                                    what, rows, plan.warps, 16 * plan.warps));
      return success();
    };
    Attribute spec = kernel.getSpecAttr();
    // Ranges first (block sizes from options or a hand-edited kernel).
    if (failed(checkTilePlan([&] { return reject(""); }, spec, plan)))
      return failure();
    if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
      if (plan.blockN % 16 != 0)
        return reject(llvm::formatv("block_n = {0} must be a multiple of 16 (mma k)", plan.blockN));
      KernelRole role = attention.getRole();
      // S^T kernels distribute key rows over the warps (query-row tiles such
      // as dQ use the emitter's 2-D warp layout); the others query rows.
      bool keyRows = role == KernelRole::AttentionBackwardTransposed ||
                     role == KernelRole::AttentionBackwardKVTransposed;
      if (!keyRows && failed(bands(plan.blockM, "block_m")))
        return failure();
      if ((keyRows || role == KernelRole::AttentionBackward ||
           role == KernelRole::AttentionBackwardKV) &&
          failed(bands(plan.blockN, "block_n")))
        return failure();
      if (keyRows && plan.blockM % 16 != 0)
        return reject(llvm::formatv("block_m = {0} must be a multiple of 16 (mma k)", plan.blockM));
      // The S^T kernels' query-row tiles (dQ) split the warps into column
      // groups of blockM / 16 bands: the bands must divide the warps evenly
      // (or cover them), else leftover warps would add some columns twice.
      int64_t bandRows = 16 * plan.warps;
      if (keyRows && plan.blockM % bandRows != 0 && bandRows % plan.blockM != 0)
        return reject(llvm::formatv("block_m = {0} must divide or be a multiple of 16 x warps = {1} "
                                    "(dQ's warp groups)",
                                    plan.blockM, bandRows));
      return success();
    }
    if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec)) {
      if (plan.blockK % 16 != 0)
        return reject(llvm::formatv("block_k = {0} must be a multiple of 16 (mma k)", plan.blockK));
      if (plan.blockN % 16 != 0)
        return reject(llvm::formatv("block_n = {0} must be a multiple of 16", plan.blockN));
      if (gemm.getRole() == KernelRole::ColumnSum)
        return plan.warps == 1 ? success() : reject("column sums run with one warp");
      return bands(plan.blockM, "block_m");
    }
    return success();
  }

  LogicalResult planKernel(KernelOp kernel, const TargetDescription &targetDesc) {
    Attribute spec = kernel.getSpecAttr();
    // A decode, packed-sequences or mixture-of-experts kernel is one library block whose plan is the device
    // library's (attention_decode.cuh, varlen.cuh, moe_routing.cuh and gemm_ws.cuh).
    if (llvm::isa_and_nonnull<DecodeSpecAttr, VarlenSpecAttr, MoeSpecAttr>(spec))
      return success();
    // A kernel read from a file may carry any recipe and signature: both are
    // checked before anything is planned or rebuilt from them.
    if (spec && failed(checkKernelRecipe(
                    [&] {
                      return kernel.emitError() << "flash-plan-memory: @" << kernel.getSymName()
                                                << " cannot be planned: ";
                    },
                    spec, kernel.getFunctionType().getInputs())))
      return failure();
    TilePlan current = planOf(kernel);
    TilePlan plan = current;
    bool isGemm = llvm::isa_and_nonnull<GemmSpecAttr>(spec);
    bool overridden = blockM || blockN || blockK || warps || stages;
    const TuningEntry *entry = nullptr;
    if (spec) {
      FailureOr<const TuningEntry *> found = tableEntry(kernel, targetDesc);
      if (failed(found))
        return failure();
      entry = *found;
      plan = defaultPlan(targetDesc, spec, kernel.getFunctionType().getInputs());
      if (entry)
        plan = entry->point.applyTo(plan);
      bool columnSum = isGemm && llvm::cast<GemmSpecAttr>(spec).getRole() == KernelRole::ColumnSum;
      if (blockM && !columnSum)
        plan.blockM = blockM;
      if (blockN)
        plan.blockN = blockN;
      if (blockK)
        plan.blockK = blockK;
      if (warps && !columnSum)
        plan.warps = warps;
      if (stages)
        plan.stages = stages;
    } else if (overridden) {
      // Hand-written kernels cannot be rebuilt: keep their sizes, say so.
      kernel.emitWarning() << "flash-plan-memory: @" << kernel.getSymName()
                           << " has no recipe (spec); block-size options do not apply to it";
    }
    // What the entry, or the hand rule where the entry leaves it out, asks
    // (the fallbacks below may plan another strategy: refused for an entry).
    Strategy askedStrategy = plan.strategy;
    // wgmma needs whole warpgroups of 16-row bands (64 rows per 4 warps); a
    // block-size override that breaks that shape falls back to mma.sync. The
    // rows of the Sᵀ backward's tiles are its keys (blockN).
    auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec);
    bool keyRows = attention && (attention.getRole() == KernelRole::AttentionBackwardTransposed ||
                                 attention.getRole() == KernelRole::AttentionBackwardKVTransposed);
    int64_t tileRows = keyRows ? plan.blockN : plan.blockM;
    // The library's wgmma forms are two warpgroups of 64 rows (128 rows, 8
    // warps); the S^T kernels' other dimension (queries) is an N of 64 or 128.
    // Its GEMM forms also take one warpgroup (64 rows, 4 warps): smaller
    // blocks, several an SM, for short contractions (a tuning point).
    bool wgmmaShape = (plan.warps == 8 && tileRows == 128 &&
                       (!keyRows || plan.blockM == 64 || plan.blockM == 128)) ||
                      (isGemm && plan.warps == 4 && plan.blockM == 64);
    // The warp-specialised forward (the device library's attention_fwd_ws)
    // is 64 query rows a consumer warpgroup of 4 warps (2 or 3 of them), 64
    // or 128 keys a block whose O, S and P fit its registers, a K/V ring of
    // 1-4 stages (wsForwardPlanTakes); an override
    // outside that keeps the wgmma form where it takes the head dims, else
    // mma.sync.
    // The fused FFN's ws form has the same shape rules (its d_out is Dv).
    std::optional<WsForwardSizes> ws = wsForwardSizes(spec, kernel.getFunctionType().getInputs());
    // The warp-specialised backward (attention_bwd_ws) is 64 queries a step
    // (128 at head dims <= 64) over its key block: 128 keys on 8 warps (key
    // split, up to D = 192 with Dv <= 128) or 64 keys on tiles of 4 warps
    // (role split), as the plan says (wsBackwardPlanTakes), a Q/dO ring of 1-4
    // stages; an override outside that is planned as mma.sync.
    // The warp-specialised persistent GEMM (gemm_ws.cuh): 128 x 128 or 256
    // tiles on two consumer warpgroups, 2-4 stages of 64 columns of K
    // (wsGemmPlanTakes); a block-size override outside that keeps the cp.async
    // wgmma form. (Only kernels it takes get it: the hand rule asks
    // wsGemmRefusal, a table entry is checked against the tuning space.)
    auto gemmSpec = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
    bool wsGemmRole = gemmSpec && isWsGemmRole(gemmSpec);
    if (plan.strategy == Strategy::WgmmaWsSm90 && wsGemmRole) {
      // (Ping-pong's 64-row A tiles leave room for a deeper ring.)
      if (!wsGemmFitPlan(gemmSpec, kernel.getFunctionType().getInputs(), wsGemmKnobsOf(entry),
                         blockN || (entry && entry->point.blockN), stages || (entry && entry->point.stages), plan))
        plan.strategy = Strategy::WgmmaSm90;
    } else if (plan.strategy == Strategy::WgmmaWsSm90 && isWsBackward(spec)) {
      // (isWsBackward: an attention recipe.)
      if (!wsBackwardPlanTakes(attention, plan))
        plan.strategy = Strategy::MmaSyncSm80;
    } else if (plan.strategy == Strategy::WgmmaWsSm90 &&
               !(ws && wsForwardPlanTakes(*ws, plan.blockM, plan.blockN, plan.warps, plan.stages)))
      plan.strategy = attention && wgmmaAttentionTakes(attention.getHeadDim(), attention.getValueDim())
                          ? Strategy::WgmmaSm90
                          : Strategy::MmaSyncSm80;
    if (plan.strategy == Strategy::WgmmaSm90 && !wgmmaShape)
      plan.strategy = Strategy::MmaSyncSm80;
    if (failed(checkPlan(kernel, plan, entry)))
      return failure();
    // A table entry is a measured plan: one that does not take its strategy's
    // shape (its own or, where it names none, the hand rule's) is the table's
    // mistake (an entry too general for this kernel), never planned as
    // something else silently; nor is a knob of the warp-specialised
    // schedules that it turns on dropped on a kernel planned otherwise.
    if (entry && !overridden && plan.strategy != askedStrategy)
      return kernel.emitError() << "flash-plan-memory: tuning table entry " << entry->name()
                                << " gives @" << kernel.getSymName() << " strategy "
                                << stringifyStrategy(askedStrategy)
                                << (entry->point.strategy ? "" : " (the hand rule's: the entry names none)")
                                << " with block_m = " << plan.blockM << ", block_n = " << plan.blockN
                                << ", warps = " << plan.warps << ", stages = " << plan.stages
                                << ", a shape that strategy does not take; give the entry a "
                                   "key that does not match this kernel, or a plan that strategy takes";
    if (entry && !overridden && plan.strategy != Strategy::WgmmaWsSm90)
      for (auto [name, set] : {std::pair<llvm::StringRef, bool>{"ping_pong", entry->point.pingPong.value_or(false)},
                               {"persistent", entry->point.persistent.value_or(false)},
                               {"resident_b", entry->point.residentB.value_or(false)},
                               {"segments", entry->point.segments.value_or(false)}})
        if (set)
          return kernel.emitError() << "flash-plan-memory: tuning table entry " << entry->name() << " sets "
                                    << name << " = 1, a knob of the warp-specialised kernels (wgmma_ws_sm90), but @"
                                    << kernel.getSymName() << " is planned " << stringifyStrategy(plan.strategy)
                                    << ", which does not read it; drop the field or give the entry "
                                       "strategy=wgmma_ws_sm90";
    if (spec && !samePlan(plan, current, isGemm)) {
      kernel = rebuildKernel(kernel, plan);
      if (!kernel)
        return failure();
    }
    // A default pipeline depth that does not fit is lowered stage by stage;
    // an explicit request (an option, a table entry) is checked as given.
    // (The warp-specialised forward lays out its own ring: checked below.)
    bool explicitStages = stages || (entry && entry->point.stages);
    while (spec && !explicitStages && plan.stages > 1 && plan.strategy != Strategy::WgmmaWsSm90 &&
           layOut(kernel) > targetDesc.sharedMemoryPerBlock) {
      --plan.stages;
      kernel = rebuildKernel(kernel, plan);
      if (!kernel)
        return failure();
    }
    if (entry) {
      auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
      bool residentTakes = gemm && wsGemmResidentK(gemm, kernel.getFunctionType().getInputs()) > 0;
      kernel.setTuningAttr(tuningAttr(kernel.getContext(), *entry,
                                      *tuningKeyOf(targetDesc, spec, kernel.getFunctionType().getInputs()),
                                      residentTakes));
    }
    return layOutSharedMemory(kernel, plan, targetDesc, entry);
  }

  /// Bytes of shared memory `kernel` needs with the layout below.
  static int64_t layOut(KernelOp kernel) {
    int64_t offset = 0;
    kernel.walk([&](Operation *op) {
      if (!llvm::isa<LoadOp, CopyOp>(op))
        return;
      offset = saturatingAdd(saturatingAlignTo(offset, kSharedAlignment), sharedBytes(op));
    });
    return offset;
  }

  /// Bytes of one shared tile times its buffers, saturating: huge tile
  /// shapes must fail the budget check, not wrap around below it.
  static int64_t sharedBytes(Operation *op) {
    auto type = llvm::cast<TileType>(op->getResult(0).getType());
    int64_t buffers = 1;
    if (auto load = llvm::dyn_cast<LoadOp>(op))
      if (auto attr = load.getBuffersAttr())
        buffers = std::max<int64_t>(attr.getInt(), 0);
    int64_t bytes = type.getElementType().isF32() ? 4 : 2;
    for (int64_t size : type.getShape())
      bytes = saturatingMul(bytes, std::max<int64_t>(size, 0));
    return saturatingMul(bytes, buffers);
  }

  /// What a shared-memory overflow of `kernel` comes from in the user's
  /// spec, and what to change: the kernel may be one the user never wrote
  /// (a backward kernel, a fused FFN).
  std::string overflowHint(KernelOp kernel, const TargetDescription &targetDesc,
                           const TuningEntry *entry) {
    // An option overrides only the fields it names: the others may come from an entry (a built-in one too).
    if ((blockM || blockN || stages) && !(blockM && blockN && stages) && entry)
      return "the options set some of its fields and tuning table entry " + entry->name() +
             " the others: lower the block-m, block-n or stages options of flash-plan-memory, or plan it from the "
             "hand rules with tuning-table=none";
    if (blockM || blockN || stages)
      return "lower the block-m, block-n or stages options of flash-plan-memory";
    if (entry)
      return "the plan is tuning table entry " + entry->name() +
             "'s: lower its block sizes or stages, or give it a key that does not match this kernel";
    Attribute spec = kernel.getSpecAttr();
    if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec)) {
      bool forward = attention.getRole() == KernelRole::AttentionForward;
      return llvm::formatv("this is {0} kernel ({1}) generated for the flash.attention at this "
                           "location, whose head dims D = {2}, Dv = {3} set its tile widths: "
                           "use smaller head dims for {4}",
                           forward ? "the forward" : "a backward",
                           stringifyKernelRole(attention.getRole()), attention.getHeadDim(),
                           attention.getValueDim(), targetDesc.name)
          .str();
    }
    if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec)) {
      if (gemm.getRole() == KernelRole::FfnFused)
        return "this is the fused kernel of the flash.ffn at this location, which keeps a "
               "[block_n x d_out] slab of w2 in shared memory: a smaller d_out fits, or "
               "flash-tile's ffn-plan=two-kernel never needs the slab";
      return llvm::formatv("this is a {0} kernel generated for the flash.ffn at this location; "
                           "its tiles do not depend on the spec's sizes: lower the block sizes",
                           stringifyKernelRole(gemm.getRole()))
          .str();
    }
    return "the kernel has no recipe (spec): shrink its shared tiles or their buffers";
  }

  /// Gives every shared tile its own 128-byte aligned region (`buffers`
  /// copies for pipelined loads) and checks the total against the target.
  LogicalResult layOutSharedMemory(KernelOp kernel, const TilePlan &plan,
                                   const TargetDescription &targetDesc, const TuningEntry *entry) {
    Builder builder(kernel.getContext());
    int64_t offset = 0;
    kernel.walk([&](Operation *op) {
      if (!llvm::isa<LoadOp, CopyOp>(op))
        return;
      offset = saturatingAlignTo(offset, kSharedAlignment);
      op->setAttr("smem_offset", builder.getI64IntegerAttr(offset));
      offset = saturatingAdd(offset, sharedBytes(op));
    });
    // The warp-specialised forward lays out its own shared memory (TMA ring
    // and mbarriers); the tile body's tiles only describe what it computes.
    if (std::optional<WsForwardSizes> ws = wsForwardSizes(kernel.getSpecAttr(), kernel.getFunctionType().getInputs());
        ws && plan.strategy == Strategy::WgmmaWsSm90)
      offset = wsForwardSharedBytes(ws->headDim, ws->valueDim, plan.blockN, plan.stages,
                                    ws->elementBytes, ws->residentBarriers, plan.blockM);
    if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(kernel.getSpecAttr());
        gemm && isWsGemmRole(gemm) && plan.strategy == Strategy::WgmmaWsSm90)
      offset = wsGemmPlanSharedBytes(gemm, plan.blockN, plan.stages,
                                     wsGemmFormOf(gemm, kernel.getFunctionType().getInputs(), wsGemmKnobsOf(entry)));
    if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(kernel.getSpecAttr());
        attention && isWsBackward(attention) && plan.strategy == Strategy::WgmmaWsSm90)
      offset = wsBackwardSharedBytes(attention.getHeadDim(), attention.getValueDim(), plan.stages,
                                     attention.getElementType().getValue().getIntOrFloatBitWidth() / 8,
                                     wsBackwardPlanSplitsKeys(plan),
                                     entry ? entry->point.pingPong : std::nullopt);
    kernel.setSmemBytesAttr(builder.getI64IntegerAttr(offset));
    if (offset > targetDesc.sharedMemoryPerBlock)
      return kernel.emitError() << "flash-plan-memory: @" << kernel.getSymName() << " needs "
                                << offset
                                << " bytes of shared memory with block_m = " << plan.blockM
                                << ", block_n = " << plan.blockN << ", stages = " << plan.stages
                                << " but " << targetDesc.name << " allows "
                                << targetDesc.sharedMemoryPerBlock << " per block: it overflows by "
                                << offset - targetDesc.sharedMemoryPerBlock << " bytes; "
                                << overflowHint(kernel, targetDesc, entry);
    int64_t registers = estimateRegistersPerThread(kernel.getSpecAttr(), plan,
                                                   kernel.getFunctionType().getInputs());
    if (kernel.getSpecAttr() && registers > targetDesc.registersPerThread)
      kernel.emitWarning() << "flash-plan-memory: @" << kernel.getSymName() << " needs ~"
                           << registers << " registers per thread (limit "
                           << targetDesc.registersPerThread << "); expect spills";
    return success();
  }
};

} // namespace
