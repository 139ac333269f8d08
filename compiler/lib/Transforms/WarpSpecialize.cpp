//===- WarpSpecialize.cpp - warp roles and pipeline of ws kernels ---------===//
//
// See the WarpSpecialize def in Passes.td. The decisions that make the
// warp-specialised attention forward fast live here, as a typed attribute the
// emitter prints into the kernel's Config: which warpgroup loads and which
// compute, their register budgets, what is streamed through the mbarrier
// ring and how deep it is, and whether the consumers ping-pong (the block
// order is flash-order-blocks').
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/Passes.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::flash {
#define GEN_PASS_DEF_WARPSPECIALIZE
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::tile;

namespace {

struct WarpSpecializePass
    : public mlir::flash::impl::WarpSpecializeBase<WarpSpecializePass> {
  using WarpSpecializeBase::WarpSpecializeBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (KernelOp kernel : getOperation().getOps<KernelOp>()) {
      if (kernel.getStrategy() != Strategy::WgmmaWsSm90)
        continue;
      // What the producer loads once (resident) and streams (ring): the
      // attention forward's query block and K/V blocks, or the fused FFN's
      // row block of x and the W1 columns / W2 rows of each hidden block.
      Builder builder(ctx);
      ArrayAttr resident, ring;
      bool roleSplit = false, pingPongTakes = true;
      // The kernel's tuning-table entry may say whether its consumers ping-pong.
      std::optional<bool> knob, residentKnob;
      if (DictionaryAttr tuning = kernel.getTuningAttr()) {
        if (auto value = tuning.getAs<BoolAttr>(flashc::kTuningPingPongName))
          knob = value.getValue();
        if (auto value = tuning.getAs<BoolAttr>(flashc::kTuningResidentBName))
          residentKnob = value.getValue();
      }
      bool consumersPingPong = knob.value_or(static_cast<bool>(pingPong));
      int64_t consumerWarpgroups = static_cast<int64_t>(kernel.getWarps()) / 4;
      auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(kernel.getSpecAttr());
      auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(kernel.getSpecAttr());
      if (attention && attention.getRole() == KernelRole::AttentionForward) {
        resident = builder.getStrArrayAttr({"q"});
        ring = builder.getStrArrayAttr({"k", "v"});
      } else if (attention && flashc::isWsBackward(attention)) {
        // The backward's key block (K, V) is loaded once; each query block's
        // Q and dO (with its lse and D) stream through the ring.
        resident = builder.getStrArrayAttr({"k", "v"});
        ring = builder.getStrArrayAttr({"q", "dout"});
        // Two consumer warpgroups: by keys (a 128-key block on 8 warps) or
        // by role, each with whole 64-key tiles of 4 warps.
        roleSplit = kernel.getWarps() == 4;
        consumerWarpgroups = 2;
        // The consumers take turns at the exponentials, each step's dQ issued
        // in the next, where the tuning entry says (ping_pong) or, without
        // one, where four dSᵀ buffers fit (wsBackwardTakesTurns: D = 96-128
        // at two stages); elsewhere they meet every step (dSᵀ). Never by the
        // pass option.
        bool keySplit = !roleSplit;
        consumersPingPong = knob.value_or(flashc::wsBackwardTakesTurns(
            attention.getHeadDim(), attention.getValueDim(), static_cast<int64_t>(kernel.getStages()),
            attention.getElementType().getValue().getIntOrFloatBitWidth() / 8, keySplit));
        if (consumersPingPong &&
            !flashc::wsBackwardTurnsTake(attention.getHeadDim(), attention.getValueDim(), keySplit)) {
          kernel.emitError() << "flash-warp-specialize: @" << kernel.getSymName() << ": its tuning entry "
                             << flashc::tuningEntryOf(kernel).value_or("?")
                             << " asks for ping_pong = 1, but the backward's consumers take turns only under the "
                                "key split below D = 192 (this kernel: "
                             << (keySplit ? "D = 192" : "the role split") << ")";
          return signalPassFailure();
        }
      } else if (gemm && gemm.getRole() == KernelRole::FfnFused) {
        resident = builder.getStrArrayAttr({"x"});
        ring = builder.getStrArrayAttr({"w1", "w2"});
      } else if (gemm && flashc::isWsGemmRole(gemm)) {
        // The persistent GEMM: nothing resident, A and B blocks of 64
        // columns of K through the ring (gated: both weights' blocks in one
        // slot; split over K: its unit's slice of K); its consumers take
        // turns where its tuning-table entry says (wsGemmPingPong), never by
        // the pass option.
        resident = builder.getStrArrayAttr({});
        ring = gemm.getRole() == KernelRole::GatedGemm ? builder.getStrArrayAttr({"a", "w_gate", "w_up"})
                                                       : builder.getStrArrayAttr({"a", "b"});
        // At K <= 256 B's column block may stay resident (wsGemmResidentB:
        // the table's knob or the hand rule), A's tiles (all of K) streaming
        // through the ring; its consumers always take the tiles in turn.
        flashc::WsGemmForm form =
            flashc::wsGemmFormOf(gemm, kernel.getFunctionType().getInputs(), {knob, residentKnob});
        consumersPingPong = form.pingPong;
        if (form.residentK > 0) {
          resident = builder.getStrArrayAttr({"b"});
          ring = builder.getStrArrayAttr({"a"});
        }
      } else if (auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(kernel.getSpecAttr());
                 moe && moe.isGemm()) {
        // A mixture of experts' router and expert GEMMs (and their gradients): the persistent GEMM's schedule; an
        // expert GEMM's B blocks are its row block's expert's weight (the grouped form), a weight gradient's A and
        // B blocks its expert's rows (grouped over K).
        resident = builder.getStrArrayAttr({});
        switch (moe.getRole()) {
        case KernelRole::MoeRouter:
          ring = builder.getStrArrayAttr({"x", "router"});
          break;
        case KernelRole::MoeDown:
          ring = builder.getStrArrayAttr({"hidden", "w2"});
          break;
        case KernelRole::MoeUp:
          ring = moe.getGated() ? builder.getStrArrayAttr({"permuted", "w1", "w_up"})
                                : builder.getStrArrayAttr({"permuted", "w1"});
          break;
        case KernelRole::MoeWeightGrad:
          ring = builder.getStrArrayAttr({"a", "b"});
          break;
        default: // the data gradients: a row block of the gradient, its expert's weight
          ring = builder.getStrArrayAttr({"a", "w"});
          break;
        }
        pingPongTakes = false;
      } else {
        kernel.emitError() << "flash-warp-specialize: @" << kernel.getSymName()
                           << " is planned wgmma_ws_sm90 but is none of an attention forward, "
                              "a fused FFN, a plain or gated GEMM or a mixture of experts' GEMM";
        return signalPassFailure();
      }
      auto emitError = [&]() -> InFlightDiagnostic {
        return kernel.emitError() << "flash-warp-specialize: @" << kernel.getSymName() << ": ";
      };
      // Unless the option says, each consumer warpgroup takes what is left
      // beside the producer, up to 240: three share the register file four
      // ways (160 each).
      int64_t consumerBudget =
          consumerRegisters.hasValue()
              ? static_cast<int64_t>(consumerRegisters)
              : std::min<int64_t>(consumerRegisters, tile::limits::maxConsumerRegisters(
                                                         producerRegisters, consumerWarpgroups));
      WarpSpecializedAttr schedule = WarpSpecializedAttr::getChecked(
          emitError, ctx, static_cast<int64_t>(producerRegisters), consumerWarpgroups,
          consumerBudget, resident, ring,
          static_cast<int64_t>(kernel.getStages()), consumersPingPong && pingPongTakes, roleSplit);
      if (!schedule)
        return signalPassFailure();
      // (The pass manager's verifier checks it against the plan.)
      kernel.setScheduleAttr(schedule);
    }
  }
};

} // namespace
