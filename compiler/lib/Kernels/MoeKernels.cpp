//===- MoeKernels.cpp - the kernels of a mixture-of-experts program -------===//
//
// flash.moe lowers to seven kernels (#tile.moe roles), each one tile.moe_block a
// block (device library: moe_routing.cuh and gemm_ws.cuh's grouped form;
// design: docs/design/moe.md). Their grids: the router and the expert GEMMs
// over their output tiles (flash-order-blocks puts them on the persistent
// grid of the warp-specialised GEMM), select and combine a block of 8 warps
// per 8 tokens, the plan one block, the permutation 8 rows a block over the
// permuted rows (it loops over the routed rows and the padding rows).
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

#include "flashc/device/moe_layout.h"  // (the routing kernels' tokens a block: plain C++)

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

KernelOp buildMoeKernel(OpBuilder &builder, Location loc, StringRef name, MoeSpecAttr spec, ArrayRef<Type> argTypes,
                        const TilePlan &plan) {
  MLIRContext *ctx = builder.getContext();
  unsigned want = spec.tensorCount();
  if (argTypes.size() != want || !llvm::all_of(argTypes, [](Type t) { return isa<GlobalTensorType>(t); })) {
    emitError(loc) << "cannot build kernel @" << name << ": " << stringifyKernelRole(spec.getRole()) << " takes "
                   << want << " tensors, got " << argTypes.size() << " arguments";
    return nullptr;
  }
  // The GEMMs' output tiles: the plan's block_m rows (the permuted layout's groups) x block_n columns.
  auto columns = [&](unsigned arg) -> GridAttr {
    int64_t n = cast<GlobalTensorType>(argTypes[arg]).getShape().back();
    return KernelBuilder::gridConst(ctx, ShapedType::isDynamic(n) ? 1 : (n + plan.blockN - 1) / plan.blockN);
  };
  auto rowBlocks = [&](unsigned arg) { return KernelBuilder::gridDim(ctx, arg, 0, plan.blockM); };
  auto tokenBlocks = [&](unsigned arg) { return KernelBuilder::gridDim(ctx, arg, 0, device::kMoeTokensPerBlock); };
  GridAttr one = KernelBuilder::gridConst(ctx, 1);
  SmallVector<GridAttr, 3> grid;
  switch (spec.getRole()) {
  case KernelRole::MoeRouter: // (x, router, logits): tiles of the logits
    grid = {rowBlocks(2), columns(2), one};
    break;
  case KernelRole::MoeUp: // (logits, permuted, w1, [w_up], groups, hidden, [pre | gate, up]): tiles of hidden
    grid = {rowBlocks(spec.getGated() ? 5 : 4), columns(spec.getGated() ? 5 : 4), one};
    break;
  case KernelRole::MoeDown:               // (logits, hidden, w2, groups, expert_out): tiles of expert_out
  case KernelRole::MoeDataGrad:           // (logits, a, w, groups, c): tiles of c
  case KernelRole::MoeDataGradAccumulate: // (logits, a, w, groups, c)
    grid = {rowBlocks(want - 1), columns(want - 1), one};
    break;
  case KernelRole::MoeWeightGrad: { // (logits, a, b, offsets, dw [E, m, n]): E x tiles of [m, n]
    ArrayRef<int64_t> dw = cast<GlobalTensorType>(argTypes[4]).getShape();
    int64_t tiles = dw[0] * ((dw[1] + plan.blockM - 1) / plan.blockM) * ((dw[2] + plan.blockN - 1) / plan.blockN);
    grid = {KernelBuilder::gridConst(ctx, tiles), one, one};
    break;
  }
  case KernelRole::MoeSelect:     // (logits, ...): 8 tokens a block
  case KernelRole::MoeSelectGrad: // (logits, ...)
    grid = {tokenBlocks(0), one, one};
    break;
  case KernelRole::MoeCombine: // (..., y): 8 tokens a block
  case KernelRole::MoePermute: // (x, counts, ids, ranks, offsets, permuted): 8 rows a block (a grid-stride loop)
    grid = {tokenBlocks(5), one, one};
    break;
  case KernelRole::MoeGatherGrad: // (dx_perm, ids, ranks, offsets, dx): 8 tokens a block
    grid = {tokenBlocks(4), one, one};
    break;
  case KernelRole::MoeScatterGrad: // (dy, ...): 8 routed rows a block, a grid-stride loop over routed and padding rows
    grid = {tokenBlocks(0), one, one};
    break;
  case KernelRole::MoeActivationGrad: // a grid-stride loop over the rows in use: a block per 16 rows of pre
    grid = {KernelBuilder::gridDim(ctx, 1, 0, 16), one, one};
    break;
  default: // the plan: one block
    grid = {one, one, one};
    break;
  }
  return KernelBuilder::libraryBlock<MoeBlockOp>(builder, loc, name, argTypes, grid, plan, spec);
}

} // namespace flashc
