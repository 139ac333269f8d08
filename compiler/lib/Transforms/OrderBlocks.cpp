//===- OrderBlocks.cpp - the order in which blocks take their tiles -------===//
//
// See the OrderBlocks def in Passes.td. The order is a schedule decision the
// emitter prints (a remap of blockIdx at the top of the kernel); the CPU
// executor visits every block, so it is unaffected.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

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

struct OrderBlocksPass : public mlir::flash::impl::OrderBlocksBase<OrderBlocksPass> {
  using OrderBlocksBase::OrderBlocksBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (group < 1 || group > 64) {
      getOperation().emitError() << "flash-order-blocks: group must be in [1, 64], got "
                                 << static_cast<int64_t>(group);
      return signalPassFailure();
    }
    if (headGroups < 1 || headGroups > 64) {
      getOperation().emitError() << "flash-order-blocks: head-groups must be in [1, 64], got "
                                 << static_cast<int64_t>(headGroups);
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
        // persistent grid.
        order = GridOrderAttr::get(ctx,
                                   kernel.getStrategy() == Strategy::WgmmaWsSm90 ? BlockOrder::Persistent
                                                                                 : BlockOrder::Grouped,
                                   rows);
      } else if (auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(spec);
                 moe && moe.isGemm()) {
        // A mixture of experts' router and expert GEMMs: the persistent GEMM's walk (groups of 8 row blocks; an
        // expert's row blocks are consecutive, so a group shares its weight columns in L2).
        order = GridOrderAttr::get(ctx, BlockOrder::Persistent, 8);
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
        bool loops = persistent && twoConsumers && !attention.getSegments();  // (a segment kernel: a tile a block)
        if (DictionaryAttr tuning = kernel.getTuningAttr())
          if (auto knob = tuning.getAs<BoolAttr>(flashc::kTuningPersistentName)) {
            loops = knob.getValue() && ws;
            if (loops && attention.getSegments()) {
              kernel.emitError() << "flash-order-blocks: @" << kernel.getSymName()
                                 << "'s tuning entry asks for the persistent grid, which the segment form (a "
                                    "document mask's tiles, one a block) does not take; give the key segments=0";
              return signalPassFailure();
            }
            if (loops && !twoConsumers) {
              kernel.emitError() << "flash-order-blocks: @" << kernel.getSymName()
                                 << "'s tuning entry asks for the persistent grid, which only the "
                                    "warp-specialised forward with two consumer warpgroups takes";
              return signalPassFailure();
            }
          }
        bool causal = attention.getWindowLeft() < 0 && attention.getWindowRight() >= 0;
        if (loops)
          order = GridOrderAttr::get(ctx, BlockOrder::Persistent, 1);
        else if (causal)
          // Causal: the last query blocks see the most keys; launching them
          // first balances the tail of the grid.
          order = GridOrderAttr::get(ctx, BlockOrder::LongestFirst, 1);
      } else if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec);
                 attention && flashc::isWsBackward(spec)) {
        // The warp-specialised backward: its key blocks differ in work under
        // causal, prefix-LM and document masks (block 0 the longest). In the
        // launch order the last head's longest blocks start last; in groups of
        // 4 heads, block 0 of four heads starts first. (Without a mask every
        // key block walks every query: the launch order, whose blocks in
        // flight share one head's Q and dO in L2.) H200, main kernel
        // time at 16k tokens (session 35 call 4): prefix-LM -2.9 %, documents
        // -1.7 %, ALiBi -0.8 %; bench_attention D = 128 causal S = 4k +3.7 %
        // TFLOP/s, 1k +0.7, 16k -0.8. 8 heads a group took documents -5 % but
        // read -22 % at S = 1k (docs/design/wgmma-backward.md, step 12).
        // The kernel's tuning-table entry may give its own group (1: the
        // launch order), measured per key by flashc.tune.
        bool ws = kernel.getStrategy() == Strategy::WgmmaWsSm90;
        int64_t heads = flashc::keyBlocksDiffer(attention) ? static_cast<int64_t>(headGroups) : 1;
        if (DictionaryAttr tuning = kernel.getTuningAttr())
          if (auto knob = tuning.getAs<IntegerAttr>(flashc::kTuningGroupName)) {
            heads = knob.getInt();
            if (heads > 1 && !ws) {
              kernel.emitError() << "flash-order-blocks: @" << kernel.getSymName()
                                 << "'s tuning entry asks for head groups (group = " << heads
                                 << "), which only the warp-specialised backward takes";
              return signalPassFailure();
            }
          }
        if (ws && heads > 1)
          order = GridOrderAttr::get(ctx, BlockOrder::HeadGroups, heads);
      }
      if (order)
        kernel.setGridOrderAttr(*order);
    }
  }
};

} // namespace
