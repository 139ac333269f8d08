//===- VarlenKernels.cpp - the kernels of a packed-sequences program ------===//
//
// flash.varlen_attention lowers to two kernels (#tile.varlen roles), each one
// tile.varlen_block a block (device library: varlen.cuh, attention_fwd_ws.cuh):
// the plan, one block that checks the offsets and writes the tile map, and the
// forward, one block a (query tile, head) with the map's length as its grid's x.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

KernelOp buildVarlenKernel(OpBuilder &builder, Location loc, StringRef name, VarlenSpecAttr spec,
                           ArrayRef<Type> argTypes, const TilePlan &plan) {
  MLIRContext *ctx = builder.getContext();
  KernelRole role = spec.getRole();
  unsigned want = spec.tensorCount();
  if (argTypes.size() != want || !llvm::all_of(argTypes, [](Type t) { return isa<GlobalTensorType>(t); })) {
    emitError(loc) << "cannot build kernel @" << name << ": " << stringifyKernelRole(spec.getRole()) << " takes "
                   << want << " tensors, got " << argTypes.size() << " arguments";
    return nullptr;
  }
  SmallVector<GridAttr, 3> grid;
  switch (role) {
  case KernelRole::VarlenForward: // (q, k, v, cu_q, cu_k, tile_map, status, out, lse): a block a (tile, query head)
    grid = {KernelBuilder::gridDim(ctx, 5, 0), KernelBuilder::gridDim(ctx, 0, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  case KernelRole::VarlenBackward: // (q, k, v, dout, lse, delta, dq_accum, dk, dv, cu_q, cu_k, key_map, status):
    // a block a (key tile, kv head)
    grid = {KernelBuilder::gridDim(ctx, 11, 0), KernelBuilder::gridDim(ctx, 1, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  case KernelRole::VarlenBwdPrepare: // (out, dout, delta, dq_accum) and
  case KernelRole::VarlenBwdFinish:  // (dq_accum, status, dq): a block a (64 rows, head)
    grid = {KernelBuilder::gridDim(ctx, 0, 0, 64), KernelBuilder::gridDim(ctx, 0, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  default: // (cu_q, cu_k, q, k, map, status): one block
    grid = {KernelBuilder::gridConst(ctx, 1), KernelBuilder::gridConst(ctx, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  }
  return KernelBuilder::libraryBlock<VarlenBlockOp>(builder, loc, name, argTypes, grid, plan, spec);
}

} // namespace flashc
