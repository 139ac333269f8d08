//===- OrderBlocks.cpp - the order in which blocks take their tiles -------===//
//
// See the OrderBlocks def in Passes.td. The order is a schedule decision the
// emitter prints (a remap of blockIdx at the top of the kernel); the CPU
// executor visits every block, so it is unaffected.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::flash {
#define GEN_PASS_DEF_ORDERBLOCKS
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::tile;

namespace {

/// The kernels whose grid is a 2-D tiling of one output matrix (x: row
/// blocks, y: column blocks) that re-reads its operands per tile.
bool isTiledGemm(Attribute spec) {
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec);
  if (!gemm)
    return false;
  switch (gemm.getRole()) {
  case KernelRole::Gemm:
  case KernelRole::GatedGemm:
  case KernelRole::GemmSplitK:
    return true;
  default:
    return false;
  }
}

/// Whether the persistent GEMM `kernel` can split its last wave over K (tail_split.cuh): a plain GEMM (not split
/// over K, grouped or batched), cooperative consumers (no ping-pong, nothing resident).
bool takesSplitTail(KernelOp kernel) {
  auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(kernel.getSpecAttr());
  WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  if (!gemm || gemm.getRole() != KernelRole::Gemm || kernel.getStrategy() != Strategy::WgmmaWsSm90 || !schedule ||
      schedule.getPingPong() || !schedule.getResident().empty() || gemm.appliesGatedActGrad())
    return false;
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  auto a = inputs.empty() ? GlobalTensorType() : llvm::dyn_cast<GlobalTensorType>(inputs[0]);
  return a && a.getRank() == 2;
}

/// Gives `kernel` the tail split's workspace: two more arguments, the partial sums (f32 [SMs, block_m ·
/// block_n]) and their flags (i32 [SMs], zeroed), allocated by each program that launches it (one pair a program:
/// the kernel leaves its flags zeroed, so a second launch reuses them).
void addSplitTailWorkspace(KernelOp kernel, ModuleOp module) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  int64_t dyn = ShapedType::kDynamic;
  auto partialsType = GlobalTensorType::get(ctx, {dyn, kernel.getBlockM() * kernel.getBlockN()}, b.getF32Type());
  auto flagsType = GlobalTensorType::get(ctx, {dyn}, b.getI32Type());
  SmallVector<Type> inputs(kernel.getFunctionType().getInputs());
  // Tensors come before i32 scalars (the ABI's order): the workspace goes after the last tensor.
  unsigned at = 0;
  while (at < inputs.size() && llvm::isa<GlobalTensorType>(inputs[at]))
    ++at;
  inputs.insert(inputs.begin() + at, {partialsType, flagsType});
  kernel.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(ctx, inputs, kernel.getFunctionType().getResults())));
  Block &body = kernel.getBody().front();
  body.insertArgument(at, partialsType, kernel.getLoc());
  body.insertArgument(at + 1, flagsType, kernel.getLoc());
  std::string base = kernel.getSymName().str();
  for (auto program : module.getOps<func::FuncOp>()) {
    Value partials, flags;
    program.walk([&](LaunchOp launch) {
      if (launch.getKernel() != kernel.getSymName())
        return;
      if (!partials) {
        OpBuilder builder(launch);
        Value sms = builder.create<SmCountOp>(launch.getLoc(), builder.getIndexType());
        auto p = builder.create<AllocTensorOp>(launch.getLoc(), partialsType, ValueRange{sms});
        p->setAttr("tile.name", builder.getStringAttr(base + "_tail_partials"));
        auto f = builder.create<AllocTensorOp>(launch.getLoc(), flagsType, ValueRange{sms});
        f->setAttr("tile.name", builder.getStringAttr(base + "_tail_flags"));
        f->setAttr("tile.zero_fill", builder.getUnitAttr());
        partials = p;
        flags = f;
      }
      SmallVector<Value> args(launch.getArgs());
      args.insert(args.begin() + at, {partials, flags});
      launch.getArgsMutable().assign(args);
    });
  }
}

struct OrderBlocksPass : public mlir::flash::impl::OrderBlocksBase<OrderBlocksPass> {
  using OrderBlocksBase::OrderBlocksBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (group < 1 || group > 64) {
      getOperation().emitError() << "flash-order-blocks: group must be in [1, 64], got "
                                 << static_cast<int64_t>(group);
      return signalPassFailure();
    }
    for (KernelOp kernel : getOperation().getOps<KernelOp>()) {
      Attribute spec = kernel.getSpecAttr();
      std::optional<GridOrderAttr> order;
      if (isTiledGemm(spec)) {
        // The kernel's tuning-table entry may give its own group.
        int64_t rows = static_cast<int64_t>(group);
        if (DictionaryAttr tuning = kernel.getTuningAttr())
          if (auto knob = tuning.getAs<IntegerAttr>(flashc::kTuningGroupName))
            rows = knob.getInt();
        // The warp-specialised GEMM (gemm_ws.cuh) walks the same groups on a
        // persistent grid; its entry may split the last wave over K where the
        // form takes it (the knob is dropped from the tuning attribute where not).
        bool ws = kernel.getStrategy() == Strategy::WgmmaWsSm90;
        bool splitTail = false;
        if (DictionaryAttr tuning = kernel.getTuningAttr())
          if (auto knob = tuning.getAs<BoolAttr>(flashc::kTuningSplitTailName)) {
            splitTail = knob.getValue() && takesSplitTail(kernel);
            if (!takesSplitTail(kernel)) {
              NamedAttrList fields(tuning);
              fields.erase(flashc::kTuningSplitTailName);
              kernel.setTuningAttr(fields.getDictionary(ctx));
            }
          }
        order = GridOrderAttr::get(ctx, ws ? BlockOrder::Persistent : BlockOrder::Grouped, rows, splitTail);
        GridOrderAttr previous = kernel.getGridOrderAttr();
        if (splitTail && !(previous && previous.getSplitTail()))
          addSplitTailWorkspace(kernel, getOperation());
      } else if (auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(spec);
                 moe && moe.isGemm()) {
        // A mixture of experts' router and expert GEMMs: the persistent GEMM's walk (groups of 8 row blocks; an
        // expert's row blocks are consecutive, so a group shares its weight columns in L2).
        order = GridOrderAttr::get(ctx, BlockOrder::Persistent, 8, false);
      } else if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec);
                 attention && attention.getRole() == KernelRole::AttentionForward) {
        // The warp-specialised forward may loop on a persistent grid (the
        // device library's tile_schedule.cuh); the kernel's tuning-table entry
        // decides before the option.
        // Only its two-warpgroup form loops (three spill): the option passes
        // over the others, a table entry that asks for it with three is
        // refused (other strategies take one tile a block either way).
        bool ws = kernel.getStrategy() == Strategy::WgmmaWsSm90;
        bool twoConsumers = ws && kernel.getWarps() == 8;
        bool loops = persistent && twoConsumers;
        if (DictionaryAttr tuning = kernel.getTuningAttr())
          if (auto knob = tuning.getAs<BoolAttr>(flashc::kTuningPersistentName)) {
            loops = knob.getValue() && ws;
            if (loops && !twoConsumers) {
              kernel.emitError() << "flash-order-blocks: @" << kernel.getSymName()
                                 << "'s tuning entry asks for the persistent grid, which only the "
                                    "warp-specialised forward with two consumer warpgroups takes";
              return signalPassFailure();
            }
          }
        bool causal = attention.getWindowLeft() < 0 && attention.getWindowRight() >= 0;
        if (loops)
          order = GridOrderAttr::get(ctx, BlockOrder::Persistent, 1, false);
        else if (causal)
          // Causal: the last query blocks see the most keys; launching them
          // first balances the tail of the grid.
          order = GridOrderAttr::get(ctx, BlockOrder::LongestFirst, 1, false);
      }
      if (order)
        kernel.setGridOrderAttr(*order);
    }
  }
};

} // namespace
