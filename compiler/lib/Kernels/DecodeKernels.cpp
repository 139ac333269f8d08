//===- DecodeKernels.cpp - the kernels of a decode-attention program ------===//
//
// flash.decode_attention lowers to three kernels (#tile.decode roles), each one
// tile.decode_block a block: the table check, the split kernel and the combine
// (device library: attention_decode.cuh; design: docs/design/decode-attention.md).
// flash.kv_append to two: its check and the copy (kv_append.cuh).
// Their grids are the program's sizes: the check one block a sequence, the
// split one block a (split, kv head x row group, sequence) with the split count
// the workspace's dimension 1, the combine one block a (query row, sequence).
//
//===----------------------------------------------------------------------===//
#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

KernelOp buildDecodeKernel(OpBuilder &builder, Location loc, StringRef name, DecodeSpecAttr spec,
                           ArrayRef<Type> argTypes, const TilePlan &plan) {
  MLIRContext *ctx = builder.getContext();
  unsigned table = spec.isPaged() ? 1 : 0, want = spec.tensorCount();
  if (argTypes.size() != want || !llvm::all_of(argTypes, [](Type t) { return isa<GlobalTensorType>(t); })) {
    emitError(loc) << "cannot build kernel @" << name << ": " << stringifyKernelRole(spec.getRole()) << " takes "
                   << want << " tensors, got " << argTypes.size() << " arguments";
    return nullptr;
  }
  SmallVector<GridAttr, 3> grid;
  switch (spec.getRole()) {
  case KernelRole::DecodeCheck: // (k_cache, cache_seqlens, [block_table], status): a block a sequence
    grid = {KernelBuilder::gridDim(ctx, 1, 0), KernelBuilder::gridConst(ctx, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  case KernelRole::DecodeSplit: { // (q, k, v, lens, [table], out, lse, o_part, lse_part, status)
    int64_t queryHeads = cast<GlobalTensorType>(argTypes[0]).getShape()[1];
    int64_t kvHeads = queryHeads / spec.getGroup();
    grid = {KernelBuilder::gridDim(ctx, 7 + table, 1), KernelBuilder::gridConst(ctx, kvHeads * spec.rowGroups()),
            KernelBuilder::gridDim(ctx, 0, 0)};
    break;
  }
  case KernelRole::KvAppendCheck: // (key, k_cache, cache_seqlens, [block_table], status): a block a sequence
    grid = {KernelBuilder::gridDim(ctx, 2, 0), KernelBuilder::gridConst(ctx, 1), KernelBuilder::gridConst(ctx, 1)};
    break;
  case KernelRole::KvAppend: // (key, value, k_cache, v_cache, cache_seqlens, [block_table], status): a block a
    // (4 new tokens, sequence), every kv head (kv_append.cuh)
    grid = {KernelBuilder::gridDim(ctx, 0, 2, 4), KernelBuilder::gridDim(ctx, 0, 0), KernelBuilder::gridConst(ctx, 1)};
    break;
  default: { // (o_part, lse_part, out, lse, status): a block a query row of a sequence
    int64_t rows = cast<GlobalTensorType>(argTypes[0]).getShape()[2];
    grid = {KernelBuilder::gridConst(ctx, rows), KernelBuilder::gridDim(ctx, 2, 0), KernelBuilder::gridConst(ctx, 1)};
    break;
  }
  }
  return KernelBuilder::libraryBlock<DecodeBlockOp>(builder, loc, name, argTypes, grid, plan, spec);
}

} // namespace flashc
