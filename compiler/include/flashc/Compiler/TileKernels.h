//===- TileKernels.h - builders of tile kernels ---------------*- C++ -*-===//
//
// Every generated tile.kernel is built by one function here from a recipe
// (#tile.attention / #tile.gemm, kept in the kernel's `spec` attribute) and a
// TilePlan (block sizes, warps, stages). flash-tile and
// flash-generate-backward build kernels; flash-plan-memory rebuilds them at
// the block sizes it chooses. docs/tile-dialect.md describes each kernel.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TILEKERNELS_H
#define FLASHC_COMPILER_TILEKERNELS_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace flashc {

/// Block-level decisions of one kernel. For attention, blockM = Br (query
/// rows), blockN = Bc (key rows). For GEMMs, blockM x blockN is the output
/// tile and blockK the contraction step.
struct TilePlan {
  int64_t blockM = 64;
  int64_t blockN = 64;
  int64_t blockK = 32;
  int64_t warps = 4;
  int64_t stages = 2;
  mlir::tile::Strategy strategy = mlir::tile::Strategy::MmaSyncSm80;
};

/// The plan a built kernel carries (its attributes).
TilePlan planOf(mlir::tile::KernelOp kernel);

/// Converts a ranked tensor type of the graph into the kernel-argument type.
mlir::tile::GlobalTensorType toGlobalTensorType(mlir::RankedTensorType type);

/// Builds the kernel `name` at the builder's insertion point (module level)
/// from `spec` (an AttentionSpecAttr or GemmSpecAttr) for the argument types
/// `argTypes`, following `plan`. Returns null and reports on `loc` when the
/// recipe cannot be built (e.g. a plan whose blocks do not divide over warps).
mlir::tile::KernelOp buildKernel(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                                 mlir::Attribute spec, llvm::ArrayRef<mlir::Type> argTypes,
                                 const TilePlan &plan);

/// Replaces `kernel` by the same recipe built with `plan`; returns the new
/// kernel (same symbol name) or null after reporting an error.
mlir::tile::KernelOp rebuildKernel(mlir::tile::KernelOp kernel, const TilePlan &plan);

} // namespace flashc

#endif // FLASHC_COMPILER_TILEKERNELS_H
